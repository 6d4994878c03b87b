/* scenario.c: simulation scenarios: the config format extended with
 * [sim] and [traffic NAME] sections and model port types. */
#include "scenario.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "rules.h"
#include "tunnel.h"
#include "util.h"

#define SC_MAX_STREAMS 256
#define SC_DEFAULT_RING 1024u
#define SC_DEFAULT_VRING 256u

/* What the [sim] section and the --set sim.* overrides set, with the
 * lines of the keys checked against others once everything is read (0:
 * not in the file). */
struct sc_sim {
    double duration_s;
    bool duration_set;
    double warmup_s;
    double warmup_ppf;      /* warmup-packets-per-flow, 0: none */
    uint64_t seed;
    unsigned pmds;
    bool allow_overload;
    int duration_line, warmup_line, warmup_ppf_line, profile_line;
};

/* The loading context: what the config extension's callbacks fill, and
 * the --set arguments (to name the one that gave a value at fault). */
struct sc_ctx {
    struct scenario *sc;
    struct sc_sim sim;
    enum { SC_SECT_SIM, SC_SECT_TRAFFIC } sect;
    bool sim_seen;
    int sim_line;
    /* The keys of the section being read, with their lines: a key given
     * twice is refused (naming both lines), not silently overridden. */
    struct sc_seen {
        char key[32];
        int line;
    } seen[64];
    size_t n_seen;
    const char *const *sets;
    size_t n_sets;
};

/* The last --set argument that gave SECTION[.NAME].KEY, or NULL. */
static const char *sc_set_of(const struct sc_ctx *c, const char *sect, const char *name,
                             const char *key)
{
    char prefix[256];
    int n = snprintf(prefix, sizeof prefix, "%s.%s%s%s=", sect, name ? name : "",
                     name ? "." : "", key);
    for (size_t i = c->n_sets; n > 0 && (size_t)n < sizeof prefix && i-- > 0;)
        if (!strncmp(c->sets[i], prefix, (size_t)n))
            return c->sets[i];
    return NULL;
}

/* Where the value of SECTION[.NAME].KEY came from, for an error about it:
 * "--set ARG" if a --set gave it, else "file:line" (line: where the file
 * gives it). */
static const char *sc_at(const struct sc_ctx *c, const char *sect, const char *name,
                         const char *key, int line, char *buf, size_t size)
{
    const char *set = sc_set_of(c, sect, name, key);
    if (set)
        snprintf(buf, size, "--set %s", set);
    else
        snprintf(buf, size, "%s:%d", c->sc->cfg.path, line);
    return buf;
}

/* ---- values ---------------------------------------------------------------- */

static int sc_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static int sc_bool(const char *s, bool *out)
{
    if (!strcmp(s, "true") || !strcmp(s, "on") || !strcmp(s, "yes") || !strcmp(s, "1"))
        *out = true;
    else if (!strcmp(s, "false") || !strcmp(s, "off") || !strcmp(s, "no") || !strcmp(s, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

/* A rate in bits/s: "10G", "25G", "100M", "1000000000". */
static int sc_rate(const char *s, uint64_t *bps)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    double mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1e3, end++;
    else if (*end == 'M')
        mult = 1e6, end++;
    else if (*end == 'G')
        mult = 1e9, end++;
    if (*end || v * mult > 1e13 || v * mult < 1e3)
        return -1;
    *bps = (uint64_t)llround(v * mult);
    return 0;
}

/* ---- [sim] ----------------------------------------------------------------- */

/* A [sim] key read from line 'line' (0: a --set). */
static int sc_sim_key(struct sc_sim *s, struct scenario *sc, const char *k, const char *v,
                      int line, char *err, size_t errlen)
{
    unsigned long long u;
    if (!strcmp(k, "duration")) {
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !(d > 0) || d > 3600) {
            fs_errf(err, errlen, "bad value '%s' for 'duration' (seconds, > 0 and <= 3600)", v);
            return -1;
        }
        s->duration_s = d;
        s->duration_set = true;
        s->duration_line = line;
    } else if (!strcmp(k, "warmup")) {
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !(d >= 0) || d > 3600) {
            fs_errf(err, errlen, "bad value '%s' for 'warmup' (seconds, >= 0, below duration)",
                    v);
            return -1;
        }
        s->warmup_s = d;
        s->warmup_line = line;
    } else if (!strcmp(k, "warmup-packets-per-flow")) {
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !(d >= 0) || d > 1e6) {
            fs_errf(err, errlen,
                    "bad value '%s' for 'warmup-packets-per-flow' (packets, 0..1000000)", v);
            return -1;
        }
        s->warmup_ppf = d;
        s->warmup_ppf_line = line;
    } else if (!strcmp(k, "seed")) {
        if (sc_uint(v, UINT64_MAX, &u)) {
            fs_errf(err, errlen, "bad value '%s' for 'seed' (a non-negative integer)", v);
            return -1;
        }
        s->seed = u;
    } else if (!strcmp(k, "pmds")) {
        if (sc_uint(v, 64, &u) || u < 1) {
            fs_errf(err, errlen, "bad value '%s' for 'pmds' (1..64)", v);
            return -1;
        }
        s->pmds = (unsigned)u;
    } else if (!strcmp(k, "profile")) {
        if (!*v || strlen(v) >= sizeof sc->profile) {
            fs_errf(err, errlen, "bad value '%s' for 'profile' (default or a path)", v);
            return -1;
        }
        snprintf(sc->profile, sizeof sc->profile, "%s", v);
        s->profile_line = line;
    } else if (!strcmp(k, "allow-overload")) {
        if (sc_bool(v, &s->allow_overload)) {
            fs_errf(err, errlen, "bad value '%s' for 'allow-overload' (true or false)", v);
            return -1;
        }
    } else {
        fs_errf(err, errlen,
                "unknown key '%s' in [sim] (known: duration, warmup, "
                "warmup-packets-per-flow, seed, pmds, profile, allow-overload)",
                k);
        return -1;
    }
    return 0;
}

/* ---- [traffic NAME] ---------------------------------------------------------- */

static int sc_name_set(char *dst, const char *v, const char *what, char *err, size_t errlen)
{
    if (!*v || strlen(v) >= NETDEV_NAME_MAX) {
        fs_errf(err, errlen, "bad value '%s' for '%s' (a port name)", v, what);
        return -1;
    }
    strcpy(dst, v);
    return 0;
}

/* A key of stream i read from line 'line' (0: a --set). */
static int sc_traffic_key(struct scenario *sc, size_t i, const char *k, const char *v, int line,
                          char *err, size_t errlen)
{
    struct scenario_stream_keys *sk = &sc->keys[i];
    if (!strcmp(k, "port")) {
        sk->port_line = line;
        return sc_name_set(sk->port, v, k, err, errlen);
    }
    if (!strcmp(k, "expect-port")) {
        sk->expect_port_line = line;
        return sc_name_set(sk->expect_port, v, k, err, errlen);
    }
    if (!strcmp(k, "rate"))
        sk->rate_line = line;
    if (!strcmp(k, "expect")) {
        if (strlen(v) >= sizeof sk->expect) {
            fs_errf(err, errlen, "'expect' is too long");
            return -1;
        }
        strcpy(sk->expect, v);
        sk->expect_line = line;
        return 0;
    }
    char why[256];
    if (sim_traffic_cfg_set(&sc->streams[i].traffic, k, v, why, sizeof why)) {
        fs_errf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

static int sc_add_stream(struct scenario *sc, const char *name, int line, char *err,
                         size_t errlen)
{
    if (!*name || strlen(name) >= NETDEV_NAME_MAX) {
        fs_errf(err, errlen, "traffic section needs a name of 1..%d characters ([traffic NAME])",
                NETDEV_NAME_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < sc->n_streams; i++)
        if (!strcmp(sc->streams[i].name, name)) {
            fs_errf(err, errlen, "duplicate traffic '%s'", name);
            return -1;
        }
    if (sc->n_streams >= SC_MAX_STREAMS) {
        fs_errf(err, errlen, "more than %d traffic sections", SC_MAX_STREAMS);
        return -1;
    }
    size_t n = sc->n_streams + 1;
    struct sim_stream_cfg *st = realloc(sc->streams, n * sizeof *st);
    if (st)
        sc->streams = st;
    struct scenario_stream_keys *sk = realloc(sc->keys, n * sizeof *sk);
    if (sk)
        sc->keys = sk;
    if (!st || !sk) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    struct sim_stream_cfg *s = &sc->streams[sc->n_streams];
    memset(s, 0, sizeof *s);
    strcpy(s->name, name);
    s->line = line;
    sim_traffic_cfg_default(&s->traffic);
    memset(&sc->keys[sc->n_streams], 0, sizeof *sk);
    sc->n_streams = n;
    return 0;
}

/* ---- the config extension ----------------------------------------------------- */

static const char *const sc_sections[] = {"sim", "traffic", NULL};
static const bool sc_named[] = {false, true};
static const char *const sc_port_types[] = {"nic", "vm", NULL};

static int sc_section(void *aux, const char *type, const char *name, int line, char *err,
                      size_t errlen)
{
    struct sc_ctx *c = aux;
    if (!strcmp(type, "sim")) {
        if (*name) {
            fs_errf(err, errlen, "[sim] takes no name");
            return -1;
        }
        if (c->sim_seen) {
            fs_errf(err, errlen, "duplicate section [sim]");
            return -1;
        }
        c->sim_seen = true;
        c->sim_line = line;
        c->n_seen = 0;
        c->sect = SC_SECT_SIM;
        return 0;
    }
    c->sect = SC_SECT_TRAFFIC;
    c->n_seen = 0;
    return sc_add_stream(c->sc, name, line, err, errlen);
}

static int sc_key(void *aux, const char *name, const char *value, int line, char *err,
                  size_t errlen)
{
    struct sc_ctx *c = aux;
    for (size_t i = 0; i < c->n_seen; i++)
        if (!strcmp(c->seen[i].key, name)) {
            fs_errf(err, errlen, "duplicate key '%s' (first at line %d)", name, c->seen[i].line);
            return -1;
        }
    if (c->n_seen < sizeof c->seen / sizeof c->seen[0] && strlen(name) < sizeof c->seen[0].key) {
        strcpy(c->seen[c->n_seen].key, name);
        c->seen[c->n_seen++].line = line;
    }
    if (c->sect == SC_SECT_SIM)
        return sc_sim_key(&c->sim, c->sc, name, value, line, err, errlen);
    return sc_traffic_key(c->sc, c->sc->n_streams - 1, name, value, line, err, errlen);
}

/* ---- ports ------------------------------------------------------------------------ */

/* The line of port option 'key' (the port's line if it is not given). */
static int sc_opt_line(const struct config_port *cp, const char *key)
{
    for (size_t i = 0; i < cp->n_opts; i++)
        if (!strcmp(cp->opts[i].key, key))
            return cp->opts[i].line ? cp->opts[i].line : cp->line;
    return cp->line;
}

/* Where port option 'key' of cp was given (sc_at()). */
static const char *sc_port_at(const struct sc_ctx *c, const struct config_port *cp,
                              const char *key, char *buf, size_t size)
{
    return sc_at(c, "port", cp->name, key, sc_opt_line(cp, key), buf, size);
}

static int sc_port_uint(const struct sc_ctx *c, const struct config_port *cp,
                        const struct netdev_args *a, const char *key, unsigned long min,
                        unsigned long max, unsigned long *out, char *err, size_t errlen)
{
    char why[256], at[1100];
    if (netdev_opt_uint(a, key, min, max, out, why, sizeof why)) {
        fs_errf(err, errlen, "%s: port %s: %s", sc_port_at(c, cp, key, at, sizeof at),
                cp->name, why);
        return -1;
    }
    return 0;
}

static int sc_port(const struct sc_ctx *c, size_t i, char *err, size_t errlen)
{
    struct scenario *sc = c->sc;
    const struct config *cfg = &sc->cfg;
    const struct config_port *cp = &cfg->ports[i];
    struct sim_port_cfg *p = &sc->ports[i];
    struct netdev_args a = {.opts = cp->opts, .n_opts = cp->n_opts};
    char why[256], at[1100];
    memset(p, 0, sizeof *p);
    p->forward = -1;
    snprintf(p->name, sizeof p->name, "%s", cp->name);
    p->line = cp->line;
    p->tx_retries = cp->tx_retries;
    p->emc_insert_inv_prob = cp->emc_insert_inv_prob;
    if (!strcmp(cp->type, "vxlan")) {
        p->model = SIM_PORT_TUNNEL;
        p->tnl_args = a;
        return 0;
    }
    bool nic = !strcmp(cp->type, "nic");
    static const char *const nic_keys[] = {"rate", "rxqs", "txqs", "rx-ring", "tx-ring",
                                           "capture", NULL};
    static const char *const vm_keys[] = {"rxqs", "txqs", "vring", "guest-rate", "send-cost",
                                          "capture", "forward", "host-csum", "packet-cost",
                                          NULL};
    /* One option at a time, to name where the unknown one was given; an
     * option given twice names both lines. */
    for (size_t k = 0; k < cp->n_opts; k++) {
        for (size_t j = 0; j < k; j++)
            if (!strcmp(cp->opts[j].key, cp->opts[k].key) && cp->opts[k].line) {
                fs_errf(err, errlen, "%s:%d: port %s: duplicate key '%s' (first at line %d)",
                        cfg->path, cp->opts[k].line, cp->name, cp->opts[k].key,
                        cp->opts[j].line);
                return -1;
            }
        struct netdev_args one = {.opts = &cp->opts[k], .n_opts = 1};
        if (netdev_opt_check(&one, nic ? nic_keys : vm_keys, why, sizeof why)) {
            fs_errf(err, errlen, "%s: port %s (%s): %s",
                    sc_port_at(c, cp, cp->opts[k].key, at, sizeof at), cp->name, cp->type, why);
            return -1;
        }
    }
    unsigned long rxqs = 1, txqs = 0, rx_ring, tx_ring, v;
    rx_ring = tx_ring = nic ? SC_DEFAULT_RING : SC_DEFAULT_VRING;
    /* A VM model delivers into one queue (no RSS of its own). */
    if (sc_port_uint(c, cp, &a, "rxqs", 1, nic ? NETDEV_MAX_QUEUES : 1, &rxqs, err, errlen) ||
        sc_port_uint(c, cp, &a, "txqs", 0, NETDEV_MAX_QUEUES, &txqs, err, errlen))
        return -1;
    if (nic) {
        if (sc_port_uint(c, cp, &a, "rx-ring", 1, 65536, &rx_ring, err, errlen) ||
            sc_port_uint(c, cp, &a, "tx-ring", 1, 65536, &tx_ring, err, errlen))
            return -1;
        const char *rate = netdev_opt_get(&a, "rate");
        if (!rate || sc_rate(rate, &p->line_bps)) {
            fs_errf(err, errlen, "%s: port %s: %s 'rate' (the line rate: e.g. 10G, 25G, "
                    "100M; 1K to 10000G bits/s)", sc_port_at(c, cp, "rate", at, sizeof at),
                    cp->name, rate ? "bad" : "a nic needs");
            return -1;
        }
        if (cp->caps.flags & NETDEV_TX_GUEST_CSUM) {
            fs_errf(err, errlen, "%s: port %s: guest-csum is a vm's, not a nic's",
                    sc_port_at(c, cp, "caps", at, sizeof at), cp->name);
            return -1;
        }
        p->model = SIM_PORT_NIC;
        p->rx_csum = cp->caps.flags & (NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM);
        p->tx_caps = cp->caps.flags & (NETDEV_TX_IP_CSUM | NETDEV_TX_L4_CSUM |
                                       NETDEV_TX_OUTER_IP_CSUM | NETDEV_TX_OUTER_UDP_CSUM);
    } else {
        if (sc_port_uint(c, cp, &a, "vring", 1, 65536, &rx_ring, err, errlen))
            return -1;
        tx_ring = rx_ring;
        unsigned long rate = 0, cost = 0, pcost = 0;
        if (sc_port_uint(c, cp, &a, "guest-rate", 0, 1000000000000ul, &rate, err, errlen) ||
            sc_port_uint(c, cp, &a, "send-cost", 0, 1000000, &cost, err, errlen) ||
            sc_port_uint(c, cp, &a, "packet-cost", 0, 1000000, &pcost, err, errlen))
            return -1;
        p->packet_cost_ns = (double)pcost;
        if (cp->caps.flags & ~NETDEV_TX_GUEST_CSUM) {
            fs_errf(err, errlen, "%s: port %s: a vm's only capability is guest-csum",
                    sc_port_at(c, cp, "caps", at, sizeof at), cp->name);
            return -1;
        }
        p->model = SIM_PORT_VM;
        const char *fwd = netdev_opt_get(&a, "forward");
        if (fwd) {
            int to = config_port_index(cfg, fwd);
            if (to < 0 || strcmp(cfg->ports[to].type, "vm")) {
                fs_errf(err, errlen, "%s: port %s: forward = %s: not a vm port",
                        sc_port_at(c, cp, "forward", at, sizeof at), cp->name, fwd);
                return -1;
            }
            p->forward = to;
        }
        p->guest_csum = cp->caps.flags & NETDEV_TX_GUEST_CSUM;
        const char *hc = netdev_opt_get(&a, "host-csum");
        if (hc && strcmp(hc, "lazy") && strcmp(hc, "eager")) {
            fs_errf(err, errlen, "%s: port %s: bad value '%s' for 'host-csum' (lazy or eager)",
                    sc_port_at(c, cp, "host-csum", at, sizeof at), cp->name, hc);
            return -1;
        }
        p->eager_csum = hc && !strcmp(hc, "eager");
        p->guest_pps = rate;
        p->send_cost_ns = (double)cost;
    }
    if (netdev_opt_bool(&a, "capture", &p->capture, why, sizeof why)) {
        fs_errf(err, errlen, "%s: port %s: %s", sc_port_at(c, cp, "capture", at, sizeof at),
                cp->name, why);
        return -1;
    }
    (void)v;
    p->rxqs = (unsigned)rxqs;
    p->txqs = (unsigned)txqs;
    p->rx_ring = (unsigned)rx_ring;
    p->tx_ring = (unsigned)tx_ring;
    return 0;
}

/* ---- expectations ------------------------------------------------------------------ */

/* The encapsulation a tunnel port pushes, from its options. */
static int sc_encap(const struct scenario *sc, int port, struct sim_vxlan_encap *e, char *err,
                    size_t errlen)
{
    const struct config_port *cp = &sc->cfg.ports[port];
    struct netdev_args a = {.opts = cp->opts, .n_opts = cp->n_opts};
    struct tnl_cfg t;
    if (strcmp(cp->type, "vxlan")) {
        fs_errf(err, errlen, "output to '%s', which is not a vxlan port", cp->name);
        return -1;
    }
    if (tnl_cfg_parse(&t, &a, config_rule_port_lookup, (void *)&sc->cfg, port, err, errlen))
        return -1;
    memset(e, 0, sizeof *e);
    e->ipv6 = t.ipv6;
    memcpy(e->src_mac, t.src_mac, 6);
    memcpy(e->dst_mac, t.dst_mac, 6);
    memcpy(e->src_ip, t.local_ip, 16);
    memcpy(e->dst_ip, t.remote_ip, 16);
    e->vni = t.vni;
    e->dst_port = t.dst_port;
    e->ttl = t.ttl;
    e->tos = t.tos;
    e->df = t.df;
    return 0;
}

/* Parses 'expect' (actions syntax, plus vxlan_decap) into a transform
 * chain, with the rules' own action parser. */
static int sc_expect(const struct scenario *sc, const char *text, struct sim_expect *x,
                     char *err, size_t errlen)
{
    char buf[512], acts[300];
    size_t n = 0;
    acts[0] = '\0';
    memset(x, 0, sizeof *x);
    /* vxlan_decap is no action: it comes first (the packet is popped
     * before the rules see it). */
    const char *rest = text;
    if (!strncmp(rest, "vxlan_decap", 11) && (rest[11] == '\0' || rest[11] == ',')) {
        x->xf[x->n++].kind = SIM_XF_VXLAN_DECAP;
        rest += rest[11] ? 12 : 11;
    }
    if (!*rest)
        return 0;
    /* vxlan_encap:PORT is output:PORT to a tunnel port. */
    for (const char *s = rest; *s && n + 8 < sizeof acts;) {
        if (!strncmp(s, "vxlan_encap:", 12)) {
            memcpy(acts + n, "output:", 7);
            n += 7;
            s += 12;
        } else {
            acts[n++] = *s++;
        }
    }
    acts[n] = '\0';
    if (strstr(acts, "vxlan_decap")) {
        fs_errf(err, errlen, "vxlan_decap must come first in 'expect'");
        return -1;
    }
    /* The action parser keeps rewrites only in a list that outputs: give
     * it an output (port 0) when the expectation has none, and skip it. */
    bool sentinel = !strstr(acts, "output:");
    if (sentinel && n + 10 < sizeof acts)
        strcat(acts, ",output:0");
    /* It also checks prerequisites (dec_ttl needs ip or ipv6): try no
     * match, then IPv4, then IPv6; the first error is reported. */
    static const char *const matches[] = {"", "ip ", "ipv6 "};
    struct rule *r = NULL;
    char why[256], first[256] = "";
    for (size_t m = 0; m < sizeof matches / sizeof matches[0] && !r; m++) {
        snprintf(buf, sizeof buf, "%sactions=%s", matches[m], acts);
        if (rule_parse(buf, config_rule_port_lookup, (void *)&sc->cfg, &r, why, sizeof why)) {
            r = NULL;
            if (!first[0])
                snprintf(first, sizeof first, "%s", why);
        }
    }
    if (!r) {
        fs_errf(err, errlen, "expect: %s", first);
        return -1;
    }
    int rc = 0;
    const struct action_list *l = r->actions;
    for (unsigned i = 0; rc == 0 && l && i < l->n; i++) {
        const struct action *a = &l->a[i];
        if (x->n >= SIM_XFORM_MAX) {
            fs_errf(err, errlen, "expect: more than %d transforms", SIM_XFORM_MAX);
            rc = -1;
            break;
        }
        struct sim_xform *f = &x->xf[x->n];
        switch (a->type) {
        case ACT_SET_DL_SRC:
        case ACT_SET_DL_DST:
            f->kind = a->type == ACT_SET_DL_SRC ? SIM_XF_MOD_DL_SRC : SIM_XF_MOD_DL_DST;
            memcpy(f->mac, a->u.mac, 6);
            x->n++;
            break;
        case ACT_DEC_TTL:
            f->kind = SIM_XF_DEC_TTL;
            x->n++;
            break;
        case ACT_POP_VLAN:
            f->kind = SIM_XF_POP_VLAN;
            x->n++;
            break;
        case ACT_PUSH_VLAN:
            f->kind = SIM_XF_PUSH_VLAN;
            f->tpid = a->u.u16;
            x->n++;
            break;
        case ACT_SET_VLAN_VID:
        case ACT_SET_VLAN_PCP:
            if (!x->n || x->xf[x->n - 1].kind != SIM_XF_PUSH_VLAN) {
                fs_errf(err, errlen, "expect: mod_vlan_vid/mod_vlan_pcp only after push_vlan");
                rc = -1;
            } else if (a->type == ACT_SET_VLAN_VID) {
                struct sim_xform *pv = &x->xf[x->n - 1];
                pv->tci = (uint16_t)((pv->tci & 0xf000) | (a->u.u16 & 0x0fff));
            } else {
                struct sim_xform *pv = &x->xf[x->n - 1];
                pv->tci = (uint16_t)((pv->tci & 0x0fff) | ((unsigned)a->u.u8 << 13));
            }
            break;
        case ACT_OUTPUT:
            if (sentinel && i + 1 == l->n)
                break;
            f->kind = SIM_XF_VXLAN_ENCAP;
            if (sc_encap(sc, a->u.port, &f->encap, why, sizeof why)) {
                fs_errf(err, errlen, "expect: %s", why);
                rc = -1;
            } else {
                x->n++;
            }
            break;
        default:
            fs_errf(err, errlen, "expect: only mod_dl_src, mod_dl_dst, dec_ttl, push_vlan, "
                    "mod_vlan_vid, mod_vlan_pcp, pop_vlan, vxlan_encap:PORT and vxlan_decap");
            rc = -1;
        }
    }
    rule_free(r);
    return rc;
}

/* ---- --set ------------------------------------------------------------------------- */

static int sc_set(struct scenario *sc, struct sc_ctx *c, const char *set, char *err,
                  size_t errlen)
{
    char buf[1024], why[512];
    if (snprintf(buf, sizeof buf, "%s", set) >= (int)sizeof buf) {
        fs_errf(err, errlen, "--set %.40s...: too long", set);
        return -1;
    }
    char *eq = strchr(buf, '=');
    char *dot = strchr(buf, '.');
    if (!eq || !dot || dot > eq) {
        fs_errf(err, errlen, "--set %s: expected SECTION.KEY=VALUE (sim.KEY, datapath.KEY, "
                "port.NAME.KEY, traffic.NAME.KEY)", set);
        return -1;
    }
    *eq = *dot = '\0';
    const char *sect = buf, *key = dot + 1, *value = eq + 1;
    int rc = -1;
    why[0] = '\0';
    if (!strcmp(sect, "sim")) {
        rc = sc_sim_key(&c->sim, sc, key, value, 0, why, sizeof why);
    } else if (!strcmp(sect, "datapath")) {
        rc = dp_knobs_set(&sc->cfg.knobs, key, value, why, sizeof why);
        if (rc > 0) {
            fs_errf(why, sizeof why, "unknown knob '%.64s'", key);
            rc = -1;
        } else if (rc == 0) {
            rc = dp_knobs_check(NULL, &sc->cfg.knobs, why, sizeof why);
        }
    } else if (!strcmp(sect, "port") || !strcmp(sect, "traffic")) {
        char *d2 = strchr(key, '.');
        if (!d2) {
            fs_errf(why, sizeof why, "expected %.16s.NAME.KEY", sect);
        } else {
            *d2 = '\0';
            const char *name = key, *k = d2 + 1;
            if (!strcmp(sect, "port")) {
                rc = config_port_set(&sc->cfg, name, k, value, why, sizeof why);
            } else {
                size_t i = 0;
                while (i < sc->n_streams && strcmp(sc->streams[i].name, name))
                    i++;
                if (i == sc->n_streams)
                    fs_errf(why, sizeof why, "no traffic '%.64s'", name);
                else
                    rc = sc_traffic_key(sc, i, k, value, 0, why, sizeof why);
            }
        }
    } else {
        fs_errf(why, sizeof why, "unknown section '%.64s' (sim, datapath, port, traffic)", sect);
    }
    if (rc)
        fs_errf(err, errlen, "--set %s: %s", set, why);
    return rc ? -1 : 0;
}

/* ---- load -------------------------------------------------------------------------- */

/* The port key 'what' of stream i names, given at line (sc_at()). */
static int sc_port_of(const struct sc_ctx *c, size_t i, const char *what, const char *name,
                      int line, char *err, size_t errlen)
{
    const struct scenario *sc = c->sc;
    int p = config_port_index(&sc->cfg, name);
    if (p < 0) {
        char at[1100];
        fs_errf(err, errlen, "%s: traffic %s: %s '%s': no such port",
                sc_at(c, "traffic", sc->streams[i].name, what, line, at, sizeof at),
                sc->streams[i].name, what, name);
        return -1;
    }
    return p;
}

/* Refuses traffic offered to a nic above its line rate (unless
 * allow-overload), naming the 'rate' of the stream that takes the port's
 * sum over it: that line is the one to lower. */
static int sc_check_rates(const struct sc_ctx *c, char *err, size_t errlen)
{
    const struct scenario *sc = c->sc;
    for (size_t p = 0; p < sc->cfg.n_ports; p++) {
        if (sc->ports[p].model != SIM_PORT_NIC)
            continue;
        double line = (double)sc->ports[p].line_bps, bps = 0;
        for (size_t i = 0; i < sc->n_streams; i++) {
            if (sc->streams[i].port != p)
                continue;
            bps += sim_traffic_cfg_wire_bps(&sc->streams[i].traffic, sc->ports[p].line_bps);
            if (bps <= line * (1 + 1e-9))
                continue;
            char at[1100];
            const struct sim_stream_cfg *st = &sc->streams[i];
            int l = sc->keys[i].rate_line ? sc->keys[i].rate_line : st->line;
            fs_errf(err, errlen,
                    "%s: traffic %s: the traffic offered to port %s (%.3f Gb/s on the wire) "
                    "is above its line rate (%.3f Gb/s); lower a rate or set allow-overload",
                    sc_at(c, "traffic", st->name, "rate", l, at, sizeof at), st->name,
                    sc->cfg.ports[p].name, bps / 1e9, line / 1e9);
            return -1;
        }
    }
    return 0;
}

/* warmup-packets-per-flow = N: the warm-up lasts at least until every
 * stream has offered N packets per flow on average (N x flows / its
 * packet rate), and the duration grows by what the warm-up grew, so the
 * measurement window keeps its length. A run longer than an hour is
 * refused where N was given. */
static int sc_warmup_ppf(struct scenario *sc, struct sc_ctx *c, char *err, size_t errlen)
{
    struct sc_sim *sim = &c->sim;
    if (!(sim->warmup_ppf > 0))
        return 0;
    double need = 0;
    for (size_t i = 0; i < sc->n_streams; i++) {
        const struct sim_stream_cfg *st = &sc->streams[i];
        double pps = sim_traffic_cfg_pps(&st->traffic, sc->ports[st->port].line_bps);
        if (pps > 0)
            need = fmax(need, sim->warmup_ppf * (double)st->traffic.flows / pps);
    }
    if (need <= sim->warmup_s)
        return 0;
    double grow = need - sim->warmup_s;
    if (sim->duration_s + grow > 3600) {
        char at[1100];
        fs_errf(err, errlen,
                "%s: [sim] warmup-packets-per-flow = %g needs a warm-up of %g s (a run "
                "above 3600 s)",
                sc_at(c, "sim", NULL, "warmup-packets-per-flow", sim->warmup_ppf_line, at,
                      sizeof at),
                sim->warmup_ppf, need);
        return -1;
    }
    sim->warmup_s = need;
    sim->duration_s += grow;
    return 0;
}

static int sc_finish(struct scenario *sc, struct sc_ctx *c, char *err, size_t errlen)
{
    struct config *cfg = &sc->cfg;
    struct sim_cfg *s = &sc->sim;
    char at[1100];
    if (!c->sim_seen) {
        fs_errf(err, errlen, "%s: a scenario needs [sim] with 'duration'", cfg->path);
        return -1;
    }
    if (!c->sim.duration_set) {
        fs_errf(err, errlen, "%s:%d: [sim] needs 'duration'", cfg->path, c->sim_line);
        return -1;
    }
    for (size_t i = 0; i < cfg->n_ports; i++) {
        if (strcmp(cfg->ports[i].type, "nic") && strcmp(cfg->ports[i].type, "vm") &&
            strcmp(cfg->ports[i].type, "vxlan")) {
            fs_errf(err, errlen, "%s:%d: port %s: a scenario's ports are nic, vm or vxlan",
                    cfg->path, cfg->ports[i].line, cfg->ports[i].name);
            return -1;
        }
    }
    sc->ports = calloc(cfg->n_ports ? cfg->n_ports : 1, sizeof *sc->ports);
    if (!sc->ports) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < cfg->n_ports; i++)
        if (sc_port(c, i, err, errlen))
            return -1;
    for (size_t i = 0; i < sc->n_streams; i++) {
        struct sim_stream_cfg *st = &sc->streams[i];
        const struct scenario_stream_keys *sk = &sc->keys[i];
        char why[512];
        if (!sk->port[0]) {
            fs_errf(err, errlen, "%s:%d: traffic %s has no 'port'", cfg->path, st->line, st->name);
            return -1;
        }
        int p = sc_port_of(c, i, "port", sk->port, sk->port_line, err, errlen);
        if (p < 0)
            return -1;
        if (sc->ports[p].model == SIM_PORT_TUNNEL) {
            fs_errf(err, errlen, "%s: traffic %s: port %s is a tunnel (no device)",
                    sc_at(c, "traffic", st->name, "port", sk->port_line, at, sizeof at),
                    st->name, sk->port);
            return -1;
        }
        st->port = (unsigned)p;
        st->expect_port = -1;
        if (sk->expect_port[0]) {
            st->expect_port = sc_port_of(c, i, "expect-port", sk->expect_port,
                                         sk->expect_port_line, err, errlen);
            if (st->expect_port < 0)
                return -1;
        }
        if (sk->expect[0] && sc_expect(sc, sk->expect, &st->expect, why, sizeof why)) {
            fs_errf(err, errlen, "%s: traffic %s: %s",
                    sc_at(c, "traffic", st->name, "expect", sk->expect_line, at, sizeof at),
                    st->name, why);
            return -1;
        }
        if (sim_traffic_cfg_validate(&st->traffic, why, sizeof why)) {
            fs_errf(err, errlen, "%s:%d: traffic %s: %s", cfg->path, st->line, st->name, why);
            return -1;
        }
    }
    if (!c->sim.allow_overload && sc_check_rates(c, err, errlen))
        return -1;
    if (!strcmp(sc->profile, "default")) {
        sim_profile_default(&s->profile);
    } else {
        /* A profile from the file is relative to the file; one from a
         * --set to the working directory, as any path on a command line. */
        const char *dir = sc_set_of(c, "sim", NULL, "profile") ? "" : cfg->dir;
        char path[4096], why[512];
        if (netdev_path(dir, sc->profile, path, sizeof path) ||
            sim_profile_load(path, &s->profile, why, sizeof why)) {
            fs_errf(err, errlen, "%s: profile: %s",
                    sc_at(c, "sim", NULL, "profile", c->sim.profile_line, at, sizeof at), why);
            return -1;
        }
        snprintf(sc->profile, sizeof sc->profile, "%s", path);
    }
    if (sc_warmup_ppf(sc, c, err, errlen))
        return -1;
    s->seed = c->sim.seed;
    s->n_pmds = c->sim.pmds;
    s->duration_ns = (uint64_t)llround(c->sim.duration_s * 1e9);
    s->warmup_ns = (uint64_t)llround(c->sim.warmup_s * 1e9);
    if (s->warmup_ns >= s->duration_ns) {
        /* Named where the warm-up was given, unless only the duration
         * came from a --set: then that --set made the pair wrong. */
        const char *dset = sc_set_of(c, "sim", NULL, "duration");
        if (dset && !sc_set_of(c, "sim", NULL, "warmup"))
            snprintf(at, sizeof at, "--set %s", dset);
        else
            sc_at(c, "sim", NULL, "warmup", c->sim.warmup_line, at, sizeof at);
        fs_errf(err, errlen, "%s: [sim] warmup (%g s) must be below duration (%g s)", at,
                c->sim.warmup_s, c->sim.duration_s);
        return -1;
    }
    s->allow_overload = c->sim.allow_overload;
    s->knobs = cfg->knobs;
    s->ports = sc->ports;
    s->n_ports = cfg->n_ports;
    s->streams = sc->streams;
    s->n_streams = sc->n_streams;
    s->rules = cfg->rules;
    s->n_rules = cfg->n_rules;
    s->origin = cfg->path;
    return 0;
}

int scenario_load(const char *path, const char *const *sets, size_t n_sets,
                  struct scenario *sc, char *err, size_t errlen)
{
    memset(sc, 0, sizeof *sc);
    snprintf(sc->profile, sizeof sc->profile, "default");
    struct sc_ctx c = {.sc = sc, .sim = {.seed = 1, .pmds = 1}, .sets = sets, .n_sets = n_sets};
    struct config_ext ext = {
        .sections = sc_sections,
        .named = sc_named,
        .port_types = sc_port_types,
        .section = sc_section,
        .key = sc_key,
        .aux = &c,
    };
    int rc = config_load_ext(path, &sc->cfg, &ext, err, errlen);
    /* The file's knobs as the engine's datapath will take them; each
     * --set datapath.KEY is checked as it is applied. */
    char why[512];
    if (rc == 0 && dp_knobs_check(NULL, &sc->cfg.knobs, why, sizeof why)) {
        fs_errf(err, errlen, "%s: [datapath]: %s", sc->cfg.path, why);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n_sets; i++)
        rc = sc_set(sc, &c, sets[i], err, errlen);
    if (rc == 0)
        rc = sc_finish(sc, &c, err, errlen);
    if (rc)
        scenario_free(sc);
    return rc;
}

void scenario_free(struct scenario *sc)
{
    config_free(&sc->cfg);
    free(sc->ports);
    free(sc->streams);
    free(sc->keys);
    memset(sc, 0, sizeof *sc);
}
