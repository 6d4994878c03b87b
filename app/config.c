/* config.c: the INI config file -> ports, datapath knobs and rules.
 *
 * libinih does the "key = value" syntax. We feed it through our own line
 * reader (ini_parse_stream), which
 *   - rejects lines longer than CONFIG_MAX_LINE instead of letting inih
 *     split them (which would also shift every later line number),
 *   - counts lines, so the handler knows where it is,
 *   - drops leading blanks, so an indented line is an ordinary line and
 *     never an inih "continuation" of the previous value,
 *   - sees the "[section]" headers, so an empty section is still checked
 *     and errors point at the header line.
 * The first error wins: once one is recorded, the reader reports end of
 * file and inih stops. */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keepalive.h"
#include "rules.h"
#include "util.h"
#include "tunnel.h"

#define CONFIG_ERR_MAX 512

enum config_section { SECT_NONE, SECT_DATAPATH, SECT_PORT, SECT_RULES, SECT_CHANGE, SECT_EXT };

/* State of one config_load(). */
struct config_ctx {
    struct config *cfg;
    const struct config_ext *ext; /* NULL: the plain config format */
    FILE *f;
    char *line;       /* getline() buffer */
    size_t line_cap;
    int lineno;       /* of the line last handed to inih */

    enum config_section sect;
    struct config_port *port; /* the current [port NAME] */
    char knobs_seen[32][32];  /* [datapath] keys already given */
    size_t n_knobs_seen;
    int port_type_line;       /* line of the current port's 'type', 0: none yet */
    bool port_caps_given, port_retries_given;
    bool change_time_given;   /* of the current [change NAME] */

    /* Where each cfg->rules[i] comes from: NULL = the config itself, else
     * the (owned) path of an included flows file. */
    char **rule_src;
    char **includes; /* owned paths of included files */
    size_t n_includes;
    size_t rules_cap, rule_src_cap;

    bool failed;
    int err_line;     /* 0: not tied to a line */
    const char *err_file; /* NULL: cfg->path */
    char err[CONFIG_ERR_MAX];
};

static void ctx_fail(struct config_ctx *c, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the error unless one is already recorded (the first one wins). */
static void ctx_fail(struct config_ctx *c, int line, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = true;
    c->err_line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* [datapath]                                                               */

/* The application's own [datapath] keys; every other key is the
 * datapath's (dp_knobs_set). */
enum config_app_knob {
    CK_REPLAY_ITERATION,
    CK_PMD_CORES,
    CK_PMD_RXQ_AFFINITY,
    CK_PMD_PRIORITY,
    CK_KEEPALIVE,
    CK_KEEPALIVE_INTERVAL,
    CK_CTL_SOCKET,
    CK_N
};
static const char *const config_app_knob_names[CK_N] = {
    [CK_REPLAY_ITERATION] = "replay-iteration-ns",
    [CK_PMD_CORES] = "pmd-cores",
    [CK_PMD_RXQ_AFFINITY] = "pmd-rxq-affinity",
    [CK_PMD_PRIORITY] = "pmd-priority",
    [CK_KEEPALIVE] = "keepalive",
    [CK_KEEPALIVE_INTERVAL] = "keepalive-interval",
    [CK_CTL_SOCKET] = "ctl-socket",
};

/* A text knob checked by its user (pmd.h) when it starts. */
static int config_text_knob(struct config_ctx *c, const char *name, const char *value,
                            char *dst, size_t size, int *line)
{
    if (!*value || strlen(value) >= size) {
        ctx_fail(c, c->lineno, "bad value '%s' for '%s' (1..%zu characters)", value, name,
                 size - 1);
        return 0;
    }
    strcpy(dst, value);
    *line = c->lineno;
    return 1;
}

static int config_knob(struct config_ctx *c, const char *name, const char *value)
{
    struct config *cfg = c->cfg;
    /* Duplicates: the names seen so far in this file. */
    for (size_t i = 0; i < c->n_knobs_seen; i++) {
        if (!strcmp(c->knobs_seen[i], name)) {
            ctx_fail(c, c->lineno, "duplicate knob '%s'", name);
            return 0;
        }
    }
    int app = -1;
    for (int i = 0; i < CK_N; i++)
        if (!strcmp(name, config_app_knob_names[i]))
            app = i;
    int ok = 1;
    if (app == CK_REPLAY_ITERATION) {
        unsigned long v;
        if (!fs_parse_uint(value, 0, 1000000000, &v)) {
            ctx_fail(c, c->lineno, "bad value '%s' for '%s' (expected 0..1000000000)", value,
                     name);
            return 0;
        }
        cfg->replay_iteration_ns = (uint32_t)v;
    } else if (app == CK_PMD_CORES) {
        ok = config_text_knob(c, name, value, cfg->pmd_cores, sizeof cfg->pmd_cores,
                              &cfg->pmd_cores_line);
    } else if (app == CK_PMD_RXQ_AFFINITY) {
        ok = config_text_knob(c, name, value, cfg->pmd_rxq_affinity,
                              sizeof cfg->pmd_rxq_affinity, &cfg->pmd_rxq_affinity_line);
    } else if (app == CK_PMD_PRIORITY) {
        unsigned long v;
        bool neg = value[0] == '-';
        if (!fs_parse_uint(value + neg, 0, neg ? 20 : 19, &v)) {
            ctx_fail(c, c->lineno, "bad value '%s' for '%s' (expected a nice value, -20..19)",
                     value, name);
            return 0;
        }
        cfg->pmd_priority = neg ? -(int)v : (int)v;
        cfg->pmd_priority_set = true;
    } else if (app == CK_KEEPALIVE) {
        if (strcmp(value, "on") && strcmp(value, "off")) {
            ctx_fail(c, c->lineno, "bad value '%s' for '%s' (expected on or off)", value,
                     name);
            return 0;
        }
        cfg->keepalive = !strcmp(value, "on");
    } else if (app == CK_KEEPALIVE_INTERVAL) {
        unsigned long v;
        if (!fs_parse_uint(value, KA_INTERVAL_MIN_MS, KA_INTERVAL_MAX_MS, &v)) {
            ctx_fail(c, c->lineno, "bad value '%s' for '%s' (expected ms, %d..%d)", value, name,
                     KA_INTERVAL_MIN_MS, KA_INTERVAL_MAX_MS);
            return 0;
        }
        cfg->keepalive_interval_ms = (uint32_t)v;
    } else if (app == CK_CTL_SOCKET) {
        ok = config_text_knob(c, name, value, cfg->ctl_socket, sizeof cfg->ctl_socket,
                              &cfg->ctl_socket_line);
    } else {
        char why[256];
        int rc = dp_knobs_set(&cfg->knobs, name, value, why, sizeof why);
        if (rc < 0) {
            ctx_fail(c, c->lineno, "%s", why);
            return 0;
        }
        if (rc > 0) {
            char known[512];
            dp_knobs_names(known, sizeof known);
            for (int i = 0; i < CK_N; i++) {
                size_t used = strlen(known);
                snprintf(known + used, sizeof known - used, ", %s", config_app_knob_names[i]);
            }
            ctx_fail(c, c->lineno, "unknown knob '%s' (known: %s)", name, known);
            return 0;
        }
    }
    if (ok && c->n_knobs_seen < sizeof c->knobs_seen / sizeof c->knobs_seen[0])
        snprintf(c->knobs_seen[c->n_knobs_seen++], sizeof c->knobs_seen[0], "%s", name);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* [port NAME]                                                              */

#define PORT_TX_RETRIES_MAX 32

static bool config_port_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= NETDEV_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
            return false;
    }
    return true;
}

static bool config_is_number(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int config_port_key(struct config_ctx *c, const char *name, const char *value)
{
    struct config_port *p = c->port;
    if (!strcmp(name, "type")) {
        if (c->port_type_line) {
            ctx_fail(c, c->lineno, "duplicate key 'type' (first at line %d)",
                     c->port_type_line);
            return 0;
        }
        if (!strcmp(value, "dpdk") && !netdev_type_known(value)) {
            ctx_fail(c, c->lineno, "port type 'dpdk' needs 'flowswitch run --backend=dpdk'%s",
#ifdef HAVE_DPDK
                     ""
#else
                     " and a build with libdpdk"
#endif
            );
            return 0;
        }
        /* vxlan ports are the core's own (no device): see tunnel.h. */
        bool ext_type = false;
        for (size_t i = 0; c->ext && c->ext->port_types && c->ext->port_types[i]; i++)
            ext_type |= !strcmp(value, c->ext->port_types[i]);
        if (strlen(value) >= sizeof p->type ||
            (strcmp(value, "vxlan") && !ext_type && !netdev_type_known(value))) {
            char types[256];
            if (c->ext && c->ext->port_types) {
                types[0] = '\0';
                for (size_t i = 0; c->ext->port_types[i]; i++) {
                    size_t used = strlen(types);
                    snprintf(types + used, sizeof types - used, "%s%s", i ? ", " : "",
                             c->ext->port_types[i]);
                }
            } else {
                netdev_types(types, sizeof types);
            }
            ctx_fail(c, c->lineno, "unknown port type '%s' (known: %s%svxlan)", value, types,
                     types[0] ? ", " : "");
            return 0;
        }
        strcpy(p->type, value);
        c->port_type_line = c->lineno;
        return 1;
    }
    if (!strcmp(name, "caps")) {
        char e[256] = "";
        if (c->port_caps_given) {
            ctx_fail(c, c->lineno, "duplicate key 'caps'");
            return 0;
        }
        if (netdev_caps_parse(value, &p->caps, e, sizeof e)) {
            ctx_fail(c, c->lineno, "caps: %s", e);
            return 0;
        }
        c->port_caps_given = true;
        p->caps_set = true;
        return 1;
    }
    if (!strcmp(name, "emc-insert-inv-prob")) {
        unsigned long v;
        if (p->emc_insert_inv_prob >= 0) {
            ctx_fail(c, c->lineno, "duplicate key 'emc-insert-inv-prob'");
            return 0;
        }
        if (!fs_parse_uint(value, 0, 1000000000, &v)) {
            ctx_fail(c, c->lineno,
                     "bad value '%s' for 'emc-insert-inv-prob' (expected 0..1000000000)", value);
            return 0;
        }
        p->emc_insert_inv_prob = (int64_t)v;
        return 1;
    }
    if (!strcmp(name, "tx-retries")) {
        unsigned long v;
        if (c->port_retries_given) {
            ctx_fail(c, c->lineno, "duplicate key 'tx-retries'");
            return 0;
        }
        if (!fs_parse_uint(value, 0, PORT_TX_RETRIES_MAX, &v)) {
            ctx_fail(c, c->lineno, "bad value '%s' for 'tx-retries' (expected 0..%d)",
                     value, PORT_TX_RETRIES_MAX);
            return 0;
        }
        c->port_retries_given = true;
        p->tx_retries = (int)v;
        return 1;
    }

    /* A backend option: kept in file order, validated by the backend. */
    struct netdev_opt *opts = realloc(p->opts, (p->n_opts + 1) * sizeof *opts);
    if (!opts) {
        ctx_fail(c, c->lineno, "out of memory");
        return 0;
    }
    p->opts = opts;
    char *k = strdup(name), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        ctx_fail(c, c->lineno, "out of memory");
        return 0;
    }
    opts[p->n_opts].key = k;
    opts[p->n_opts].value = v;
    opts[p->n_opts].line = c->lineno;
    p->n_opts++;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* [rules]                                                                  */

/* Appends a copy of text (written at line) to a list of *n rules with room
 * for *cap. Returns 0, or -1 when out of memory (the list unchanged). */
static int config_rule_push(struct dp_rule_src **list, size_t *n, size_t *cap,
                            const char *text, int line)
{
    if (fs_grow((void **)list, cap, *n + 1, sizeof **list, 16))
        return -1;
    char *t = strdup(text);
    if (!t)
        return -1;
    (*list)[*n] = (struct dp_rule_src){t, line};
    (*n)++;
    return 0;
}

static int config_add_rule(struct config_ctx *c, const char *text, int line, char *src)
{
    struct config *cfg = c->cfg;
    if (fs_grow((void **)&c->rule_src, &c->rule_src_cap, cfg->n_rules + 1,
                sizeof *c->rule_src, 16))
        return -1;
    c->rule_src[cfg->n_rules] = src;
    return config_rule_push(&cfg->rules, &cfg->n_rules, &c->rules_cap, text, line);
}

static bool config_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v';
}

/* Reads a flows file: one rule per line, blank lines and #-comments
 * skipped; calls add(aux, text, line) for each rule. Returns 0, an errno
 * value, or -1 if add failed. */
static int config_flows_read(const char *path, int (*add)(void *, const char *, int),
                             void *aux)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errno;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        char *s = line, *e = line + n;
        while (s < e && config_blank(*s))
            s++;
        while (e > s && config_blank(e[-1]))
            e--;
        *e = '\0';
        if (*s && *s != '#' && add(aux, s, lineno))
            rc = -1;
    }
    if (rc == 0 && ferror(f))
        rc = errno ? errno : EIO;
    free(line);
    fclose(f);
    return rc;
}

struct config_include_ctx {
    struct config_ctx *c;
    char *path;
};

static int config_include_rule(void *aux, const char *text, int line)
{
    struct config_include_ctx *ic = aux;
    return config_add_rule(ic->c, text, line, ic->path);
}

/* "include = PATH": one rule per line, blank lines and #-comments skipped.
 * The rules are validated with the others once every port is known. */
static int config_include(struct config_ctx *c, const char *value)
{
    const char *dir = c->cfg->dir;
    bool as_is = value[0] == '/' || !strcmp(dir, ".");
    size_t len = (as_is ? 0 : strlen(dir) + 1) + strlen(value) + 1;
    char *path = malloc(len);
    char **incs = realloc(c->includes, (c->n_includes + 1) * sizeof *incs);
    if (incs)
        c->includes = incs;
    if (!path || !incs) {
        free(path);
        ctx_fail(c, c->lineno, "out of memory");
        return 0;
    }
    if (as_is)
        snprintf(path, len, "%s", value);
    else
        snprintf(path, len, "%s/%s", dir, value);
    c->includes[c->n_includes++] = path;

    struct config_include_ctx ic = {c, path};
    int rc = config_flows_read(path, config_include_rule, &ic);
    if (rc > 0)
        ctx_fail(c, c->lineno, "include: %s: %s", path, strerror(rc));
    else if (rc < 0)
        ctx_fail(c, c->lineno, "out of memory");
    return rc == 0;
}

static int config_rules_key(struct config_ctx *c, const char *name, const char *value)
{
    if (!strcmp(name, "rule")) {
        if (config_add_rule(c, value, c->lineno, NULL)) {
            ctx_fail(c, c->lineno, "out of memory");
            return 0;
        }
        return 1;
    }
    if (!strcmp(name, "include"))
        return config_include(c, value);
    ctx_fail(c, c->lineno, "unknown key '%s' in [rules] (expected 'rule' or 'include')",
             name);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* [change NAME]                                                            */

/* "SECONDS[.FRACTION]" with at most 9 fraction digits, into ns. */
static bool config_parse_seconds(const char *s, uint64_t *ns)
{
    unsigned long whole;
    char buf[32];
    const char *dot = strchr(s, '.');
    size_t wl = dot ? (size_t)(dot - s) : strlen(s);
    if (wl == 0 || wl >= sizeof buf)
        return false;
    memcpy(buf, s, wl);
    buf[wl] = '\0';
    if (!fs_parse_uint(buf, 0, 1000000000ul, &whole))
        return false;
    uint64_t frac = 0;
    if (dot) {
        const char *f = dot + 1;
        size_t fl = strlen(f);
        if (fl == 0 || fl > 9)
            return false;
        for (size_t i = 0; i < 9; i++) {
            if (i < fl && (f[i] < '0' || f[i] > '9'))
                return false;
            frac = frac * 10 + (i < fl ? (uint64_t)(f[i] - '0') : 0);
        }
    }
    *ns = (uint64_t)whole * 1000000000ull + frac;
    return true;
}

static int config_change_rule(struct config_ctx *c, struct dp_rule_src **list,
                              size_t *n, const char *value)
{
    struct dp_rule_src *l = realloc(*list, (*n + 1) * sizeof *l);
    char *t = strdup(value);
    if (l)
        *list = l;
    if (!l || !t) {
        free(t);
        ctx_fail(c, c->lineno, "out of memory");
        return 0;
    }
    l[*n].text = t;
    l[*n].line = c->lineno;
    (*n)++;
    return 1;
}

static int config_change_key(struct config_ctx *c, const char *name, const char *value)
{
    struct sim_change *ch = &c->cfg->changes[c->cfg->n_changes - 1];
    if (!strcmp(name, "time")) {
        if (c->change_time_given) {
            ctx_fail(c, c->lineno, "duplicate key 'time'");
            return 0;
        }
        if (!config_parse_seconds(value, &ch->time_ns)) {
            ctx_fail(c, c->lineno, "bad value '%s' for 'time' (expected seconds, e.g. 1.5)",
                     value);
            return 0;
        }
        if (c->cfg->n_changes > 1 && ch->time_ns < ch[-1].time_ns) {
            ctx_fail(c, c->lineno, "change '%s' is earlier than the change before it",
                     ch->name);
            return 0;
        }
        c->change_time_given = true;
        return 1;
    }
    if (!strcmp(name, "add"))
        return config_change_rule(c, &ch->add, &ch->n_add, value);
    if (!strcmp(name, "delete"))
        return config_change_rule(c, &ch->del, &ch->n_del, value);
    if (!strcmp(name, "clear")) {
        if (strcmp(value, "true") && strcmp(value, "false")) {
            ctx_fail(c, c->lineno, "bad value '%s' for 'clear' (expected true or false)",
                     value);
            return 0;
        }
        ch->clear = !strcmp(value, "true");
        return 1;
    }
    if (!strcmp(name, "tx-flush-interval")) {
        unsigned long v;
        if (!fs_parse_uint(value, 0, 1000000, &v)) {
            ctx_fail(c, c->lineno,
                     "bad value '%s' for 'tx-flush-interval' (expected 0..1000000)", value);
            return 0;
        }
        ch->tx_flush_interval_us = (int64_t)v;
        return 1;
    }
    ctx_fail(c, c->lineno,
             "unknown key '%s' in a change (known: time, add, delete, clear, "
             "tx-flush-interval)", name);
    return 0;
}

static void config_change_begin(struct config_ctx *c, const char *name)
{
    struct config *cfg = c->cfg;
    if (!config_port_name_ok(name)) {
        ctx_fail(c, c->lineno, "bad change name '%s' (1..%d characters of A-Z a-z 0-9 _ . -)",
                 name, NETDEV_NAME_MAX - 1);
        return;
    }
    struct sim_change *l = realloc(cfg->changes, (cfg->n_changes + 1) * sizeof *l);
    if (!l) {
        ctx_fail(c, c->lineno, "out of memory");
        return;
    }
    cfg->changes = l;
    struct sim_change *ch = &l[cfg->n_changes++];
    memset(ch, 0, sizeof *ch);
    strcpy(ch->name, name);
    ch->line = c->lineno;
    ch->tx_flush_interval_us = -1;
    c->sect = SECT_CHANGE;
    c->change_time_given = false;
}

/* ------------------------------------------------------------------------ */
/* Sections and the inih plumbing                                           */

/* Checks what a finished section must have. */
static void config_section_end(struct config_ctx *c)
{
    if (c->sect == SECT_PORT && !c->port_type_line)
        ctx_fail(c, c->port->line, "port '%s' has no 'type'", c->port->name);
    if (c->sect == SECT_CHANGE && !c->change_time_given)
        ctx_fail(c, c->cfg->changes[c->cfg->n_changes - 1].line, "change '%s' has no 'time'",
                 c->cfg->changes[c->cfg->n_changes - 1].name);
}

/* A "[...]" header; 'raw' is the text between the brackets. */
static void config_section_begin(struct config_ctx *c, char *raw)
{
    struct config *cfg = c->cfg;
    config_section_end(c);
    if (c->failed)
        return;

    char *s = raw, *e = raw + strlen(raw);
    while (config_blank(*s))
        s++;
    while (e > s && config_blank(e[-1]))
        e--;
    *e = '\0';

    c->port = NULL;
    if (!strcmp(s, "datapath")) {
        c->sect = SECT_DATAPATH;
        return;
    }
    if (!strcmp(s, "rules")) {
        c->sect = SECT_RULES;
        return;
    }
    if (!strncmp(s, "change", 6) && (!s[6] || config_blank(s[6]))) {
        const char *cname = s + 6;
        while (config_blank(*cname))
            cname++;
        config_change_begin(c, cname);
        return;
    }
    for (size_t i = 0; c->ext && c->ext->sections[i]; i++) {
        const char *type = c->ext->sections[i];
        size_t n = strlen(type);
        if (strncmp(s, type, n) || (s[n] && !config_blank(s[n])))
            continue;
        const char *ename = s + n;
        while (config_blank(*ename))
            ename++;
        char why[CONFIG_ERR_MAX - 64] = "";
        if (c->ext->section(c->ext->aux, type, ename, c->lineno, why, sizeof why)) {
            ctx_fail(c, c->lineno, "%s", why);
            return;
        }
        c->sect = SECT_EXT;
        return;
    }
    if (strncmp(s, "port", 4) || (s[4] && !config_blank(s[4]))) {
        char more[128] = "";
        for (size_t i = 0; c->ext && c->ext->sections[i]; i++) {
            size_t used = strlen(more);
            snprintf(more + used, sizeof more - used, ", [%s%s]", c->ext->sections[i],
                     c->ext->named[i] ? " NAME" : "");
        }
        ctx_fail(c, c->lineno, "unknown section '[%s]' (expected [datapath], [port NAME], "
                 "[rules]%s or [change NAME])", s, more);
        return;
    }
    char *name = s + 4;
    while (config_blank(*name))
        name++;
    if (!*name) {
        ctx_fail(c, c->lineno, "port section without a name (expected [port NAME])");
        return;
    }
    if (!config_port_name_ok(name)) {
        ctx_fail(c, c->lineno, "bad port name '%s' (1..%d characters of A-Z a-z 0-9 _ . -)",
                 name, NETDEV_NAME_MAX - 1);
        return;
    }
    if (config_is_number(name)) {
        ctx_fail(c, c->lineno, "bad port name '%s' (a number would be ambiguous in rules)",
                 name);
        return;
    }
    int dup = config_port_index(cfg, name);
    if (dup >= 0) {
        ctx_fail(c, c->lineno, "duplicate port '%s' (first at line %d)", name,
                 cfg->ports[dup].line);
        return;
    }
    if (cfg->n_ports >= CONFIG_MAX_PORTS) {
        ctx_fail(c, c->lineno, "too many ports (max %d)", CONFIG_MAX_PORTS);
        return;
    }
    struct config_port *p = &cfg->ports[cfg->n_ports++];
    memset(p, 0, sizeof *p);
    strcpy(p->name, name);
    p->line = c->lineno;
    p->tx_retries = -1;
    p->emc_insert_inv_prob = -1;
    c->sect = SECT_PORT;
    c->port = p;
    c->port_type_line = 0;
    c->port_caps_given = false;
    c->port_retries_given = false;
}

/* The ini_reader: one line per call, as described at the top. */
static char *config_reader(char *str, int num, void *stream)
{
    struct config_ctx *c = stream;
    if (c->failed || num <= 0)
        return NULL;
    ssize_t n = getline(&c->line, &c->line_cap, c->f);
    if (n < 0) {
        if (ferror(c->f))
            ctx_fail(c, 0, "%s: %s", c->cfg->path, strerror(errno));
        return NULL;
    }
    c->lineno++;
    char *s = c->line, *e = c->line + n;
    if (e > s && e[-1] == '\n')
        e--;
    if (e > s && e[-1] == '\r')
        e--;
    *e = '\0';
    if (c->lineno == 1 && e - s >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
        s += 3;
    if (e - s > CONFIG_MAX_LINE) {
        ctx_fail(c, c->lineno, "line too long (max %d characters)", CONFIG_MAX_LINE);
        return NULL;
    }
    while (config_blank(*s))
        s++;

    if (*s == '[') {
        char *close = strchr(s, ']');
        if (!close) {
            ctx_fail(c, c->lineno, "missing ']' in section header");
            return NULL;
        }
        char *rest = close + 1;
        while (config_blank(*rest))
            rest++;
        if (*rest && *rest != ';' && *rest != '#') {
            ctx_fail(c, c->lineno, "unexpected text after ']'");
            return NULL;
        }
        /* Name the section ourselves; inih still sees the header. */
        size_t len = (size_t)(close - s - 1);
        char raw[CONFIG_MAX_LINE + 1];
        memcpy(raw, s + 1, len);
        raw[len] = '\0';
        config_section_begin(c, raw);
        if (c->failed)
            return NULL;
    }

    size_t len = strlen(s);
    if (len > (size_t)num - 1)
        len = (size_t)num - 1; /* cannot happen: num is INI_MAX_LINE */
    memcpy(str, s, len);
    str[len] = '\0';
    return str;
}

static int config_handler(void *user, const char *section, const char *name,
                          const char *value)
{
    struct config_ctx *c = user;
    (void)section; /* tracked by config_reader */
    if (c->failed)
        return 0;
    switch (c->sect) {
    case SECT_NONE:
        ctx_fail(c, c->lineno, "key '%s' outside of a section", name);
        return 0;
    case SECT_DATAPATH:
        return config_knob(c, name, value);
    case SECT_PORT:
        return config_port_key(c, name, value);
    case SECT_RULES:
        return config_rules_key(c, name, value);
    case SECT_CHANGE:
        return config_change_key(c, name, value);
    case SECT_EXT: {
        char why[CONFIG_ERR_MAX - 64] = "";
        if (c->ext->key(c->ext->aux, name, value, c->lineno, why, sizeof why)) {
            ctx_fail(c, c->lineno, "%s", why);
            return 0;
        }
        return 1;
    }
    }
    return 0;
}

/* Every output of 'acts' to a vxlan port goes to one that can encapsulate
 * (tnl_encap_missing()). Returns 0, or -1 with the reason in err. */
static int config_check_tunnel_outputs(const struct config *cfg,
                                       const struct action_list *acts, char *err,
                                       size_t errlen)
{
    for (unsigned i = 0; acts && i < acts->n; i++) {
        const struct action *a = &acts->a[i];
        if (a->type != ACT_OUTPUT || a->u.port >= cfg->n_ports)
            continue;
        const struct config_port *cp = &cfg->ports[a->u.port];
        if (strcmp(cp->type, "vxlan"))
            continue;
        struct netdev_args args = {.opts = cp->opts, .n_opts = cp->n_opts};
        const char *opt = tnl_encap_missing(&args);
        if (opt) {
            fs_errf(err, errlen, "output to tunnel port '%s' needs its option '%s' to "
                                 "encapsulate", cp->name, opt);
            return -1;
        }
    }
    return 0;
}

/* Parses every rule once, now that every port is known. */
static void config_check_rules(struct config_ctx *c)
{
    struct config *cfg = c->cfg;
    for (size_t i = 0; i < cfg->n_rules && !c->failed; i++) {
        struct rule *r;
        char e[CONFIG_ERR_MAX - 64];
        if (rule_parse(cfg->rules[i].text, config_rule_port_lookup, cfg, &r, e, sizeof e)) {
            ctx_fail(c, cfg->rules[i].line, "rule: %s", e);
            c->err_file = c->rule_src[i];
        } else {
            if (config_check_tunnel_outputs(cfg, r->actions, e, sizeof e)) {
                ctx_fail(c, cfg->rules[i].line, "rule: %s", e);
                c->err_file = c->rule_src[i];
            }
            rule_free(r);
        }
    }
    for (size_t i = 0; i < cfg->n_changes && !c->failed; i++) {
        const struct sim_change *ch = &cfg->changes[i];
        for (int pass = 0; pass < 2; pass++) {
            const struct dp_rule_src *l = pass ? ch->add : ch->del;
            size_t n = pass ? ch->n_add : ch->n_del;
            for (size_t k = 0; k < n && !c->failed; k++) {
                struct rule *r;
                char e[CONFIG_ERR_MAX - 64];
                if (rule_parse(l[k].text, config_rule_port_lookup, cfg, &r, e, sizeof e)) {
                    ctx_fail(c, l[k].line, "%s: %s", pass ? "add" : "delete", e);
                } else {
                    if (pass && config_check_tunnel_outputs(cfg, r->actions, e, sizeof e))
                        ctx_fail(c, l[k].line, "add: %s", e);
                    rule_free(r);
                }
            }
        }
    }
}

static char *config_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

static void config_init(struct config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    dp_knobs_default(&cfg->knobs);
    cfg->keepalive_interval_ms = KA_INTERVAL_DEFAULT_MS;
}

int config_load(const char *path, struct config *cfg, char *err, size_t errlen)
{
    return config_load_ext(path, cfg, NULL, err, errlen);
}

int config_load_ext(const char *path, struct config *cfg, const struct config_ext *ext,
                    char *err, size_t errlen)
{
    struct config_ctx *c = calloc(1, sizeof *c);
    config_init(cfg);
    if (err && errlen)
        err[0] = '\0';
    if (!c) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    c->cfg = cfg;
    c->ext = ext;
    cfg->path = strdup(path);
    cfg->dir = config_dirname(path);
    if (!cfg->path || !cfg->dir) {
        ctx_fail(c, 0, "%s: out of memory", path);
    } else if (!(c->f = fopen(path, "r"))) {
        ctx_fail(c, 0, "%s: %s", path, strerror(errno));
    } else {
        int rc = ini_parse_stream(config_reader, c, config_handler, c);
        if (!c->failed)
            config_section_end(c);
        /* inih's own error (a line that is neither a header, a comment
         * nor "key = value") wins if it comes first. */
        if (rc > 0 && (!c->failed || rc < c->err_line)) {
            c->failed = false;
            c->err_file = NULL;
            ctx_fail(c, rc, "syntax error: expected '[section]' or 'key = value'");
        } else if (rc < 0 && !c->failed) {
            ctx_fail(c, 0, "%s: out of memory", path);
        }
        if (!c->failed)
            config_check_rules(c);
        fclose(c->f);
    }

    int ret = 0;
    if (c->failed) {
        if (err && errlen) {
            const char *file = c->err_file ? c->err_file : path;
            if (c->err_line > 0)
                snprintf(err, errlen, "%s:%d: %s", file, c->err_line, c->err);
            else
                snprintf(err, errlen, "%s", c->err);
        }
        config_free(cfg);
        ret = -1;
    }
    for (size_t i = 0; i < c->n_includes; i++)
        free(c->includes[i]);
    free(c->includes);
    free(c->rule_src);
    free(c->line);
    free(c);
    return ret;
}

void config_free(struct config *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->dir);
    for (size_t i = 0; i < cfg->n_ports && i < CONFIG_MAX_PORTS; i++) {
        struct config_port *p = &cfg->ports[i];
        for (size_t j = 0; j < p->n_opts; j++) {
            free((char *)p->opts[j].key);
            free((char *)p->opts[j].value);
        }
        free(p->opts);
    }
    for (size_t i = 0; i < cfg->n_rules; i++)
        free((char *)cfg->rules[i].text);
    free(cfg->rules);
    for (size_t i = 0; i < cfg->n_changes; i++) {
        struct sim_change *ch = &cfg->changes[i];
        for (size_t k = 0; k < ch->n_add; k++)
            free((char *)ch->add[k].text);
        for (size_t k = 0; k < ch->n_del; k++)
            free((char *)ch->del[k].text);
        free(ch->add);
        free(ch->del);
    }
    free(cfg->changes);
    config_init(cfg);
}

int config_port_index(const struct config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n_ports; i++)
        if (!strcmp(cfg->ports[i].name, name))
            return (int)i;
    return -1;
}

int config_rule_port_lookup(void *aux, const char *name)
{
    const struct config *cfg = aux;
    int i = config_port_index(cfg, name);
    if (i >= 0)
        return i;
    /* A port number: only one that exists. */
    unsigned long n;
    if (fs_parse_uint(name, 0, CONFIG_MAX_PORTS, &n) && n < cfg->n_ports)
        return (int)n;
    return -1;
}

int config_dp_create(const struct config *cfg, const char *out_dir, struct dp **out,
                     char *err, size_t errlen)
{
    struct dp *dp;
    char why[512];
    if (dp_create(&cfg->knobs, &dp, why, sizeof why)) {
        fs_errf(err, errlen, "%s: [datapath]: %s", cfg->path, why);
        return -1;
    }
    for (size_t i = 0; i < cfg->n_ports; i++) {
        const struct config_port *cp = &cfg->ports[i];
        struct dp_port_params pp = {
            .name = cp->name,
            .type = cp->type,
            .args = {
                .opts = cp->opts,
                .n_opts = cp->n_opts,
                .base_dir = cfg->dir,
                .out_dir = out_dir ? out_dir : cfg->dir,
                .caps_set = cp->caps_set,
                .caps = cp->caps,
            },
            .tx_retries = cp->tx_retries,
            .emc_insert_inv_prob = cp->emc_insert_inv_prob,
        };
        if (dp_port_add(dp, &pp, why, sizeof why) < 0) {
            fs_errf(err, errlen, "%s:%d: port %s: %s", cfg->path, cp->line, cp->name, why);
            dp_destroy(dp);
            return -1;
        }
    }
    struct dp_rule_edit e = {.clear = true, .add = cfg->rules, .n_add = cfg->n_rules};
    if (dp_rules_apply(dp, &e, cfg->path, err, errlen)) {
        dp_destroy(dp);
        return -1;
    }
    *out = dp;
    return 0;
}

struct rule_table *config_rule_table(const struct config *cfg, char *err, size_t errlen)
{
    struct rule_table *t = rule_table_create();
    if (!t) {
        fs_errf(err, errlen, "flowswitch: out of memory");
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_rules; i++) {
        struct rule *r;
        char why[256];
        if (rule_parse(cfg->rules[i].text, config_rule_port_lookup, (void *)cfg, &r, why,
                       sizeof why)) {
            fs_errf(err, errlen, "%s:%d: rule: %s", cfg->path, cfg->rules[i].line, why);
            rule_table_destroy(t);
            return NULL;
        }
        r->line = cfg->rules[i].line;
        if (rule_table_add(t, r)) {
            rule_free(r);
            rule_table_destroy(t);
            fs_errf(err, errlen, "flowswitch: out of memory");
            return NULL;
        }
    }
    return t;
}

static int config_rules_add(void *aux, const char *text, int line)
{
    struct config_rules *r = aux;
    return config_rule_push(&r->rules, &r->n, &r->cap, text, line);
}

int config_rules_read(const char *path, struct config_rules *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = config_flows_read(path, config_rules_add, out);
    if (rc) {
        fs_errf(err, errlen, "%s: %s", path, rc > 0 ? strerror(rc) : "out of memory");
        config_rules_free(out);
        return -1;
    }
    return 0;
}

void config_rules_free(struct config_rules *r)
{
    for (size_t i = 0; i < r->n; i++)
        free((char *)r->rules[i].text);
    free(r->rules);
    memset(r, 0, sizeof *r);
}

int config_port_set(struct config *cfg, const char *port, const char *key, const char *value,
                    char *err, size_t errlen)
{
    int i = config_port_index(cfg, port);
    if (i < 0) {
        fs_errf(err, errlen, "no port '%s'", port);
        return -1;
    }
    struct config_port *p = &cfg->ports[i];
    unsigned long v;
    if (!strcmp(key, "type")) {
        fs_errf(err, errlen, "a port's type cannot be overridden");
        return -1;
    }
    if (!strcmp(key, "caps")) {
        char why[256];
        if (netdev_caps_parse(value, &p->caps, why, sizeof why)) {
            fs_errf(err, errlen, "caps: %s", why);
            return -1;
        }
        p->caps_set = true;
        return 0;
    }
    if (!strcmp(key, "tx-retries") || !strcmp(key, "emc-insert-inv-prob")) {
        bool retries = key[0] == 't';
        unsigned long max = retries ? PORT_TX_RETRIES_MAX : 1000000000;
        if (!fs_parse_uint(value, 0, max, &v)) {
            fs_errf(err, errlen, "bad value '%s' for '%s' (expected 0..%lu)", value, key, max);
            return -1;
        }
        if (retries)
            p->tx_retries = (int)v;
        else
            p->emc_insert_inv_prob = (int64_t)v;
        return 0;
    }
    char *nv = strdup(value);
    if (!nv) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < p->n_opts; k++) {
        if (!strcmp(p->opts[k].key, key)) {
            free((char *)p->opts[k].value);
            p->opts[k].value = nv;
            p->opts[k].line = 0;
            return 0;
        }
    }
    struct netdev_opt *opts = realloc(p->opts, (p->n_opts + 1) * sizeof *opts);
    char *nk = strdup(key);
    if (!opts || !nk) {
        free(nv);
        free(nk);
        if (opts)
            p->opts = opts;
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    p->opts = opts;
    opts[p->n_opts++] = (struct netdev_opt){nk, nv, 0};
    return 0;
}
