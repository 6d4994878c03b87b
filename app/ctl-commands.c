/* ctl-commands.c: the control socket's commands over a running datapath. */
#include "ctl-commands.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "flow.h"
#include "report.h"
#include "rules.h"
#include "util.h"

struct ctl_commands {
    struct control *c;
    struct pmd_stats *base; /* [PMD_MAX]: the pmd-stats-clear baseline */
    bool base_set;
};

struct ctl_commands *ctl_commands_create(void)
{
    struct ctl_commands *cc = calloc(1, sizeof *cc);
    if (cc)
        cc->base = calloc(PMD_MAX, sizeof *cc->base);
    if (!cc || !cc->base) {
        free(cc);
        return NULL;
    }
    return cc;
}

void ctl_commands_attach(struct ctl_commands *cc, struct control *c)
{
    cc->c = c;
}

void ctl_commands_destroy(struct ctl_commands *cc)
{
    if (!cc)
        return;
    free(cc->base);
    free(cc);
}

/* ---- helpers ------------------------------------------------------------- */

/* Runs fn(out, aux) on a memory stream and answers what it wrote: as text,
 * or (json) as the JSON document it wrote. */
static void cc_capture(struct ctl_answer *ans, bool json, void (*fn)(FILE *, void *), void *aux)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        ctl_answer_error(ans, "out of memory");
        return;
    }
    fn(f, aux);
    if (fclose(f) || !buf) {
        free(buf);
        ctl_answer_error(ans, "out of memory");
        return;
    }
    if (json) {
        json_error_t jerr;
        json_t *doc = json_loadb(buf, len, 0, &jerr);
        if (!doc)
            ctl_answer_error(ans, "internal error: bad JSON (%s)", jerr.text);
        else
            ctl_answer_set_json(ans, doc);
    } else {
        ctl_answer_printf(ans, "%s", buf);
    }
    free(buf);
}

static const char *cc_port_name(void *aux, uint16_t port)
{
    const struct dp *dp = aux;
    if (port >= dp_n_ports(dp))
        return NULL;
    struct dp_port_info pi;
    dp_port_get(dp, port, &pi);
    return pi.name;
}

/* The sum of the PMDs' published snapshots, with the devices' contract
 * drops (what the final summary of a run shows). NULL if out of memory. */
static struct dp_stats *cc_totals(struct control *c)
{
    struct pmd_runtime *rt = control_rt(c);
    struct dp_stats *tot = calloc(1, sizeof *tot);
    struct pmd_stats *snap = malloc(sizeof *snap);
    if (!tot || !snap) {
        free(tot);
        free(snap);
        return NULL;
    }
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
        pmd_runtime_snapshot(rt, i, snap);
        dp_stats_add(tot, &snap->dp);
    }
    dp_stats_finish(control_dp(c), tot);
    free(snap);
    return tot;
}

/* The PMDs in a bit set, for messages and JSON. */
static void cc_pmd_list(uint32_t set, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < PMD_MAX && used < size; i++)
        if (set >> i & 1)
            used += (size_t)snprintf(buf + used, size - used, "%s%u", used ? "," : "", i);
}

static json_t *cc_pmd_json(uint32_t set)
{
    json_t *a = json_array();
    for (unsigned i = 0; a && i < PMD_MAX; i++)
        if (set >> i & 1)
            json_array_append_new(a, json_integer(i));
    return a;
}

/* The answer of a change: a line of text (with a note on lagging PMDs) or
 * {"result": text, "lagging": [PMD...]}. */
static void cc_changed(struct control *c, struct ctl_answer *ans, bool json, control_lag lag,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void cc_changed(struct control *c, struct ctl_answer *ans, bool json, control_lag lag,
                       const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (json) {
        ctl_answer_set_json(ans, json_pack("{s:s, s:o}", "result", text, "lagging",
                                           cc_pmd_json(lag)));
        return;
    }
    ctl_answer_printf(ans, "%s\n", text);
    if (lag) {
        char l[128];
        cc_pmd_list(lag, l, sizeof l);
        ctl_answer_printf(ans,
                          "note: pmd %s did not take the change within %u ms (stalled?); it "
                          "will at its next poll\n",
                          l, control_wait_ms(c));
    }
}

/* ---- stats, pmd-stats, drops --------------------------------------------- */

struct cc_summary {
    struct control *c;
    const struct dp_stats *s;
    bool json;
};

static void cc_write_summary(FILE *f, void *aux)
{
    const struct cc_summary *x = aux;
    report_summary(f, x->json, control_dp(x->c), x->s, control_config(x->c)->path, 0);
}

static void cc_write_drops(FILE *f, void *aux)
{
    const struct cc_summary *x = aux;
    report_drops(f, x->json, x->s);
}

/* Answers what 'write' makes of the totals (cc_totals()). */
static void cc_answer_totals(struct ctl_commands *cc, bool json, struct ctl_answer *ans,
                             void (*write)(FILE *, void *))
{
    struct dp_stats *tot = cc_totals(cc->c);
    if (!tot) {
        ctl_answer_error(ans, "out of memory");
        return;
    }
    struct cc_summary x = {cc->c, tot, json};
    cc_capture(ans, json, write, &x);
    free(tot);
}

static void cmd_stats(struct ctl_commands *cc, int argc, char **argv, bool json,
                      struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    cc_answer_totals(cc, json, ans, cc_write_summary);
}

static void cmd_drops(struct ctl_commands *cc, int argc, char **argv, bool json,
                      struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    cc_answer_totals(cc, json, ans, cc_write_drops);
}

struct cc_pmds {
    struct ctl_commands *cc;
    bool json;
};

static void cc_write_pmd_stats(FILE *f, void *aux)
{
    const struct cc_pmds *x = aux;
    struct pmd_runtime *rt = control_rt(x->cc->c);
    struct pmd_stats *cur = malloc(sizeof *cur);
    if (!cur)
        return;
    if (x->json)
        fprintf(f, "{\"since_clear\": %s, \"pmds\": [", x->cc->base_set ? "true" : "false");
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
        pmd_runtime_snapshot(rt, i, cur);
        if (x->json && i)
            fprintf(f, ", ");
        pmd_runtime_report(rt, i, cur, x->cc->base_set ? &x->cc->base[i] : NULL, f, x->json);
    }
    if (x->json)
        fprintf(f, "]}\n");
    free(cur);
}

static void cmd_pmd_stats(struct ctl_commands *cc, int argc, char **argv, bool json,
                          struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    struct cc_pmds x = {cc, json};
    cc_capture(ans, json, cc_write_pmd_stats, &x);
}

static void cmd_pmd_stats_clear(struct ctl_commands *cc, int argc, char **argv, bool json,
                                struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    struct pmd_runtime *rt = control_rt(cc->c);
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++)
        pmd_runtime_snapshot(rt, i, &cc->base[i]);
    cc->base_set = true;
    cc_changed(cc->c, ans, json, 0, "pmd-stats cleared for %u PMDs", pmd_runtime_n_pmds(rt));
}

/* ---- port-show ----------------------------------------------------------- */

static void cmd_port_show(struct ctl_commands *cc, int argc, char **argv, bool json,
                          struct ctl_answer *ans)
{
    struct dp *dp = control_dp(cc->c);
    struct pmd_runtime *rt = control_rt(cc->c);
    int only = -1;
    if (argc > 1 && (only = dp_port_lookup(dp, argv[1])) < 0) {
        ctl_answer_error(ans, "port-show: no port '%s'", argv[1]);
        return;
    }
    struct dp_stats *tot = cc_totals(cc->c);
    json_t *list = json ? json_array() : NULL;
    if (!tot || (json && !list)) {
        free(tot);
        json_decref(list);
        ctl_answer_error(ans, "out of memory");
        return;
    }
    for (unsigned p = 0; p < dp_n_ports(dp); p++) {
        if (only >= 0 && p != (unsigned)only)
            continue;
        struct dp_port_info pi;
        dp_port_get(dp, p, &pi);
        char caps[256], pmds[128] = "";
        netdev_caps_format(&pi.caps, caps, sizeof caps);
        uint32_t rx_pmds = 0;
        for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
            const struct dp_pmd *dpp = pmd_runtime_pmds(rt)[i];
            for (unsigned k = 0; k < dp_pmd_n_rxqs(dpp); k++) {
                uint16_t port, qid;
                dp_pmd_get_rxq(dpp, k, &port, &qid);
                if (port == p)
                    rx_pmds |= 1u << i;
            }
        }
        cc_pmd_list(rx_pmds, pmds, sizeof pmds);
        const struct dp_port_stats *ps = &tot->ports[p];
        uint64_t rx = ps->n[DP_PORT_RX_PACKETS] + ps->n[DP_PORT_TNL_RX];
        uint64_t rx_bytes = ps->n[DP_PORT_RX_BYTES] + ps->n[DP_PORT_TNL_RX_BYTES];
        uint64_t tx = ps->tx.n[TXQ_STAT_PACKETS] + ps->n[DP_PORT_TNL_TX];
        uint64_t tx_bytes = ps->tx.n[TXQ_STAT_BYTES] + ps->n[DP_PORT_TNL_TX_BYTES];
        uint64_t tx_dropped = 0;
        for (int r = 0; r < DROP_N_REASONS; r++)
            tx_dropped += ps->tx.dropped[r];
        struct netdev_stats ns;
        memset(&ns, 0, sizeof ns);
        if (pi.dev)
            netdev_get_stats(pi.dev, &ns);
        unsigned nrx = pi.dev ? netdev_n_rxq(pi.dev) : 0, ntx = pi.dev ? netdev_n_txq(pi.dev) : 0;
        bool link = pi.dev ? netdev_link_up(pi.dev) : true;
        if (json) {
            json_t *o = json_pack(
                "{s:s, s:I, s:s, s:s, s:b, s:I, s:I, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I},"
                " s:o}",
                "name", pi.name, "port_no", (json_int_t)p, "type", pi.type, "caps", caps,
                "link_up", link, "rxqs", (json_int_t)nrx, "txqs", (json_int_t)ntx, "rx_pmds",
                cc_pmd_json(rx_pmds), "datapath", "rx_packets", (json_int_t)rx, "rx_bytes",
                (json_int_t)rx_bytes, "tx_packets", (json_int_t)tx, "tx_bytes",
                (json_int_t)tx_bytes, "tx_dropped", (json_int_t)tx_dropped, "send_calls",
                (json_int_t)ps->tx.n[TXQ_STAT_SEND_CALLS], "device",
                pi.dev ? json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "rx_packets",
                                   (json_int_t)ns.rx_packets, "rx_bytes",
                                   (json_int_t)ns.rx_bytes, "rx_dropped",
                                   (json_int_t)ns.rx_dropped, "rx_errors",
                                   (json_int_t)ns.rx_errors, "tx_packets",
                                   (json_int_t)ns.tx_packets, "tx_bytes",
                                   (json_int_t)ns.tx_bytes, "tx_dropped",
                                   (json_int_t)ns.tx_dropped, "tx_errors",
                                   (json_int_t)ns.tx_errors, "tx_offload_contract",
                                   (json_int_t)ns.tx_offload_contract)
                       : json_null());
            json_array_append_new(list, o);
            continue;
        }
        ctl_answer_printf(ans, "port %s (%u): type %s, caps %s, link %s", pi.name, p, pi.type,
                          caps, link ? "up" : "down");
        if (pi.tunnel)
            ctl_answer_printf(ans, ", tunnel\n");
        else
            ctl_answer_printf(ans, ", %u rx queues (pmd %s), %u tx queues\n", nrx,
                              pmds[0] ? pmds : "none", ntx);
        ctl_answer_printf(ans,
                          "  datapath: rx %" PRIu64 " packets %" PRIu64 " bytes; tx %" PRIu64
                          " packets %" PRIu64 " bytes, %" PRIu64 " dropped, %" PRIu64 " sends\n",
                          rx, rx_bytes, tx, tx_bytes, tx_dropped,
                          ps->tx.n[TXQ_STAT_SEND_CALLS]);
        if (pi.dev)
            ctl_answer_printf(ans,
                              "  device:   rx %" PRIu64 " packets, %" PRIu64 " dropped, %" PRIu64
                              " errors; tx %" PRIu64 " packets, %" PRIu64 " errors, %" PRIu64
                              " offload_contract\n",
                              ns.rx_packets, ns.rx_dropped, ns.rx_errors, ns.tx_packets,
                              ns.tx_errors, ns.tx_offload_contract);
    }
    if (json)
        ctl_answer_set_json(ans, json_pack("{s:o}", "ports", list));
    free(tot);
}

/* ---- rules --------------------------------------------------------------- */

static void cmd_rule_show(struct ctl_commands *cc, int argc, char **argv, bool json,
                          struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    struct dp *dp = control_dp(cc->c);
    const struct rule_table *t = dp_rules(dp);
    size_t n = rule_table_count(t);
    json_t *list = json ? json_array() : NULL;
    if (!json)
        ctl_answer_printf(ans, "%zu rules, in lookup order (priority, rule):\n", n);
    for (size_t i = 0; i < n; i++) {
        const struct rule *r = rule_table_at(t, i);
        char acts[1024];
        action_list_format(r->actions, cc_port_name, dp, acts, sizeof acts);
        if (json)
            json_array_append_new(list, json_pack("{s:i, s:s, s:s}", "priority", r->priority,
                                                  "rule", r->text, "actions", acts));
        else
            ctl_answer_printf(ans, "  %5d  %s\n", r->priority, r->text);
    }
    if (json)
        ctl_answer_set_json(ans, list ? json_pack("{s:I, s:o}", "count", (json_int_t)n,
                                                  "rules", list)
                                      : NULL);
}

/* Parses text against the running ports; on failure answers "CMD: reason". */
static struct rule *cc_rule_parse(struct dp *dp, const char *cmd, const char *text,
                                  struct ctl_answer *ans)
{
    struct rule *r;
    char why[256];
    if (rule_parse(text, dp_port_lookup, dp, &r, why, sizeof why)) {
        ctl_answer_error(ans, "%s: %s", cmd, why);
        return NULL;
    }
    return r;
}

static void cmd_rule_add(struct ctl_commands *cc, int argc, char **argv, bool json,
                         struct ctl_answer *ans)
{
    (void)argc;
    struct dp *dp = control_dp(cc->c);
    struct rule *r = cc_rule_parse(dp, "rule-add", argv[1], ans);
    if (!r)
        return;
    rule_free(r);
    struct dp_rule_src src = {.text = argv[1], .line = 0};
    struct dp_rule_edit e = {.add = &src, .n_add = 1};
    control_lag lag;
    char err[512];
    if (control_rules_apply(cc->c, &e, "rule-add", &lag, err, sizeof err)) {
        ctl_answer_error(ans, "%s", err);
        return;
    }
    cc_changed(cc->c, ans, json, lag, "rule added (%zu rules)", rule_table_count(dp_rules(dp)));
}

static void cmd_rule_del(struct ctl_commands *cc, int argc, char **argv, bool json,
                         struct ctl_answer *ans)
{
    (void)argc;
    struct dp *dp = control_dp(cc->c);
    /* A match alone: the parser wants actions, which a strict delete ignores. */
    char *text = NULL;
    if (strstr(argv[1], "actions=")) {
        text = strdup(argv[1]);
    } else {
        size_t n = strlen(argv[1]) + sizeof " actions=drop";
        text = malloc(n);
        if (text)
            snprintf(text, n, "%s actions=drop", argv[1]);
    }
    if (!text) {
        ctl_answer_error(ans, "out of memory");
        return;
    }
    struct rule *r = cc_rule_parse(dp, "rule-del", text, ans);
    if (!r) {
        free(text);
        return;
    }
    /* A copy of the table tells whether a rule matches strictly, so that
     * nothing is published for a delete that deletes nothing. */
    struct rule_table *probe = rule_table_clone(dp_rules(dp));
    unsigned hits = probe ? rule_table_delete_strict(probe, r) : 0;
    rule_table_destroy(probe);
    rule_free(r);
    if (!probe) {
        free(text);
        ctl_answer_error(ans, "out of memory");
        return;
    }
    if (!hits) {
        free(text);
        ctl_answer_error(ans, "rule-del: no rule has exactly this priority and match "
                              "(rule-show lists them)");
        return;
    }
    struct dp_rule_src src = {.text = text, .line = 0};
    struct dp_rule_edit e = {.del = &src, .n_del = 1};
    control_lag lag;
    char err[512];
    int rc = control_rules_apply(cc->c, &e, "rule-del", &lag, err, sizeof err);
    free(text);
    if (rc) {
        ctl_answer_error(ans, "%s", err);
        return;
    }
    cc_changed(cc->c, ans, json, lag, "%u rule%s deleted (%zu rules)", hits, hits == 1 ? "" : "s",
               rule_table_count(dp_rules(dp)));
}

static void cmd_rule_load(struct ctl_commands *cc, int argc, char **argv, bool json,
                          struct ctl_answer *ans)
{
    struct dp *dp = control_dp(cc->c);
    bool add = false;
    const char *path = argv[1];
    if (argc == 3) {
        if (strcmp(argv[1], "--add")) {
            ctl_answer_error(ans, "rule-load: unknown option '%s' (usage: rule-load [--add] "
                                  "FILE)", argv[1]);
            return;
        }
        add = true;
        path = argv[2];
    }
    struct config_rules rules;
    char err[1024];
    if (config_rules_read(path, &rules, err, sizeof err)) {
        ctl_answer_error(ans, "rule-load: %s", err);
        return;
    }
    struct dp_rule_edit e = {.clear = !add, .add = rules.rules, .n_add = rules.n};
    control_lag lag;
    if (control_rules_apply(cc->c, &e, path, &lag, err, sizeof err)) {
        ctl_answer_error(ans, "%s (nothing changed)", err);
    } else {
        cc_changed(cc->c, ans, json, lag, "%zu rules %s from %s (%zu rules)", rules.n,
                   add ? "added" : "loaded", path, rule_table_count(dp_rules(dp)));
    }
    config_rules_free(&rules);
}

/* ---- megaflows and caches ------------------------------------------------ */

/* The PMDs that did not answer a request, as a message. */
static void cc_unanswered(struct control *c, const bool answered[PMD_MAX], char *buf,
                          size_t size)
{
    uint32_t set = 0;
    for (unsigned i = 0; i < pmd_runtime_n_pmds(control_rt(c)); i++)
        set |= (uint32_t)!answered[i] << i;
    char l[128];
    cc_pmd_list(set, l, sizeof l);
    snprintf(buf, size, "pmd %s did not answer within %u ms (stalled?); it will when it "
                        "resumes", l, control_wait_ms(c));
}

static void cmd_megaflow_show(struct ctl_commands *cc, int argc, char **argv, bool json,
                              struct ctl_answer *ans)
{
    struct control *c = cc->c;
    struct dp *dp = control_dp(c);
    struct pmd_runtime *rt = control_rt(c);
    long only = -1;
    if (argc > 1) {
        unsigned long i;
        if (!fs_parse_uint(argv[1], 0, pmd_runtime_n_pmds(rt) - 1, &i)) {
            ctl_answer_error(ans, "megaflow-show: no PMD '%s' (0..%u)", argv[1],
                             pmd_runtime_n_pmds(rt) - 1);
            return;
        }
        only = (long)i;
    }
    bool answered[PMD_MAX];
    unsigned missing = control_request(c, DP_PMD_REQ_MEGAFLOW_DUMP, answered);
    json_t *pmds = json ? json_array() : NULL;
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
        struct dp_megaflow_dump *d = answered[i] ? pmd_runtime_take_dump(rt, i) : NULL;
        if (only >= 0 && i != (unsigned)only) {
            dp_megaflow_dump_free(d);
            continue;
        }
        json_t *flows = json ? json_array() : NULL;
        if (!json) {
            if (!answered[i])
                ctl_answer_printf(ans, "pmd%u: no answer\n", i);
            else if (!d || d->nomem)
                ctl_answer_printf(ans, "pmd%u: out of memory for the dump\n", i);
            else
                ctl_answer_printf(ans, "pmd%u: %zu megaflows\n", i, d->n);
        }
        for (size_t k = 0; d && k < d->n; k++) {
            const struct dp_megaflow *m = &d->flows[k];
            char match[1024], acts[1024];
            flow_format_masked(&m->key, &m->mask, match, sizeof match);
            action_list_format(m->actions, cc_port_name, dp, acts, sizeof acts);
            const char *port = cc_port_name(dp, (uint16_t)m->key.in_port);
            if (json)
                json_array_append_new(flows, json_pack("{s:s, s:s, s:s}", "in_port",
                                                       port ? port : "?", "match", match,
                                                       "actions", acts));
            else
                ctl_answer_printf(ans, "  [%s] %s actions=%s\n", port ? port : "?", match, acts);
        }
        if (json)
            json_array_append_new(pmds, json_pack("{s:I, s:b, s:o}", "pmd", (json_int_t)i,
                                                  "answered", answered[i], "megaflows", flows));
        dp_megaflow_dump_free(d);
    }
    if (missing) {
        char why[256];
        cc_unanswered(c, answered, why, sizeof why);
        if (!json)
            ctl_answer_printf(ans, "note: %s\n", why);
    }
    if (json)
        ctl_answer_set_json(ans, json_pack("{s:o}", "pmds", pmds));
}

static void cmd_megaflow_flush(struct ctl_commands *cc, int argc, char **argv, bool json,
                               struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    bool answered[PMD_MAX];
    unsigned missing = control_request(cc->c, DP_PMD_REQ_MEGAFLOW_FLUSH, answered);
    if (missing) {
        char why[256];
        cc_unanswered(cc->c, answered, why, sizeof why);
        ctl_answer_error(ans, "megaflow-flush: %s", why);
        return;
    }
    cc_changed(cc->c, ans, json, 0, "megaflows flushed on %u PMDs",
               pmd_runtime_n_pmds(control_rt(cc->c)));
}

static double cc_rate(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

static void cmd_cache_show(struct ctl_commands *cc, int argc, char **argv, bool json,
                           struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    struct pmd_runtime *rt = control_rt(cc->c);
    const struct dp_knobs *k = dp_get_knobs(control_dp(cc->c));
    struct pmd_stats *s = malloc(sizeof *s);
    json_t *list = json ? json_array() : NULL;
    if (!s || (json && !list)) {
        free(s);
        json_decref(list);
        ctl_answer_error(ans, "out of memory");
        return;
    }
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
        pmd_runtime_snapshot(rt, i, s);
        const uint64_t *f = s->dp.fcache.n;
        uint64_t look = f[FCACHE_STAT_LOOKUPS];
        if (json) {
            json_array_append_new(
                list,
                json_pack("{s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I, s:f}, s:{s:b, s:I, s:I, s:I,"
                          " s:f}, s:{s:I, s:I, s:I, s:I, s:I, s:f}, s:{s:I, s:I, s:f},"
                          " s:I}",
                          "pmd", (json_int_t)i, "lookups", (json_int_t)look, "emc", "entries",
                          (json_int_t)k->emc_entries, "ways", (json_int_t)k->emc_ways,
                          "insert_inv_prob", (json_int_t)k->emc_insert_inv_prob, "bytes",
                          (json_int_t)s->mem.emc, "hits", (json_int_t)f[FCACHE_STAT_EMC_HITS],
                          "hit_rate", cc_rate(f[FCACHE_STAT_EMC_HITS], look), "smc",
                          "enabled", s->mem.smc != 0, "entries", (json_int_t)k->smc_entries,
                          "bytes", (json_int_t)s->mem.smc, "hits",
                          (json_int_t)f[FCACHE_STAT_SMC_HITS], "hit_rate",
                          cc_rate(f[FCACHE_STAT_SMC_HITS], look), "megaflows", "count",
                          (json_int_t)f[FCACHE_STAT_MEGAFLOWS], "max",
                          (json_int_t)k->megaflow_max, "subtables",
                          (json_int_t)f[FCACHE_STAT_SUBTABLES], "bytes",
                          (json_int_t)(s->mem.megaflows_touched + s->mem.classifier), "hits",
                          (json_int_t)f[FCACHE_STAT_MEGAFLOW_HITS], "hit_rate",
                          cc_rate(f[FCACHE_STAT_MEGAFLOW_HITS], look), "upcalls", "count",
                          (json_int_t)f[FCACHE_STAT_UPCALLS], "no_rule",
                          (json_int_t)f[FCACHE_STAT_UPCALL_MISSES], "rate",
                          cc_rate(f[FCACHE_STAT_UPCALLS], look), "memory_bytes",
                          (json_int_t)s->mem.total));
            continue;
        }
        ctl_answer_printf(ans, "pmd%u: %" PRIu64 " lookups, %.1f MiB\n", i, look,
                          (double)s->mem.total / (1 << 20));
        ctl_answer_printf(ans,
                          "  emc:       %u entries x %u ways, insert 1/%u, %.1f MiB; hits %" PRIu64
                          " (%.1f%%)\n",
                          k->emc_entries, k->emc_ways, k->emc_insert_inv_prob,
                          (double)s->mem.emc / (1 << 20), f[FCACHE_STAT_EMC_HITS],
                          100 * cc_rate(f[FCACHE_STAT_EMC_HITS], look));
        ctl_answer_printf(ans,
                          "  smc:       %s, %u entries, %.1f MiB; hits %" PRIu64 " (%.1f%%)\n",
                          s->mem.smc ? "on" : "off", k->smc_entries,
                          (double)s->mem.smc / (1 << 20), f[FCACHE_STAT_SMC_HITS],
                          100 * cc_rate(f[FCACHE_STAT_SMC_HITS], look));
        ctl_answer_printf(ans,
                          "  megaflows: %" PRIu64 " of %u, %" PRIu64 " subtables; hits %" PRIu64
                          " (%.1f%%)\n",
                          f[FCACHE_STAT_MEGAFLOWS], k->megaflow_max, f[FCACHE_STAT_SUBTABLES],
                          f[FCACHE_STAT_MEGAFLOW_HITS],
                          100 * cc_rate(f[FCACHE_STAT_MEGAFLOW_HITS], look));
        ctl_answer_printf(ans, "  upcalls:   %" PRIu64 " (%.1f%%), %" PRIu64 " without a rule\n",
                          f[FCACHE_STAT_UPCALLS], 100 * cc_rate(f[FCACHE_STAT_UPCALLS], look),
                          f[FCACHE_STAT_UPCALL_MISSES]);
    }
    if (json)
        ctl_answer_set_json(ans, json_pack("{s:o}", "pmds", list));
    free(s);
}

/* ---- set, health --------------------------------------------------------- */

static void cmd_set(struct ctl_commands *cc, int argc, char **argv, bool json,
                    struct ctl_answer *ans)
{
    (void)argc;
    char *eq = strchr(argv[1], '=');
    if (!eq || eq == argv[1]) {
        ctl_answer_error(ans, "set: expected KNOB=VALUE, not '%s'", argv[1]);
        return;
    }
    *eq = '\0';
    const char *name = argv[1], *value = eq + 1;
    control_lag lag;
    char err[512], now[64];
    if (control_knob_set(cc->c, name, value, &lag, err, sizeof err)) {
        ctl_answer_error(ans, "set: %s", err);
        return;
    }
    if (control_knob_get(cc->c, name, now, sizeof now))
        snprintf(now, sizeof now, "%s", value);
    cc_changed(cc->c, ans, json, lag, "%s = %s", name, now);
}

static void cmd_health(struct ctl_commands *cc, int argc, char **argv, bool json,
                       struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    struct control *c = cc->c;
    struct ka *ka = control_ka(c);
    unsigned n = pmd_runtime_n_pmds(control_rt(c));
    bool on = control_keepalive(c);
    uint32_t interval = ka ? ka_interval_ms(ka) : 0;
    struct ka_status st[PMD_MAX];
    if (on)
        ka_get_status(ka, st, n);
    if (json) {
        json_t *doc = on ? ka_status_json(st, n, interval)
                         : json_pack("{s:{s:I, s:[]}}", "keepalive", "interval_ms",
                                     (json_int_t)interval, "pmds");
        json_t *k = doc ? json_object_get(doc, "keepalive") : NULL;
        if (k)
            json_object_set_new(k, "enabled", json_boolean(on));
        ctl_answer_set_json(ans, doc);
        return;
    }
    if (!on) {
        ctl_answer_printf(ans, "keep-alive: off (flowswitch ctl set keep-alive=on)\n");
        return;
    }
    ctl_answer_printf(ans, "keep-alive: on, interval %u ms\n", (unsigned)interval);
    for (unsigned i = 0; i < n; i++) {
        if (st[i].state == KA_IDLE) {
            ctl_answer_printf(ans, "  pmd%u: IDLE (no rx queues)\n", i);
            continue;
        }
        ctl_answer_printf(ans,
                          "  pmd%u tid %d: %s (heartbeat %" PRIu64 ", silent %" PRIu64
                          " ms, %" PRIu64 " stalls)\n",
                          i, st[i].tid, ka_state_name(st[i].state), st[i].beat,
                          st[i].silent_ns / 1000000, st[i].stalls);
    }
}

/* ---- the table ----------------------------------------------------------- */

typedef void cc_fn(struct ctl_commands *cc, int argc, char **argv, bool json,
                   struct ctl_answer *ans);

static void cc_locked(void *aux, int argc, char *argv[], bool json, struct ctl_answer *ans);

/* The commands: name, arguments (min, max), usage, help, implementation. */
#define CC_COMMANDS(X)                                                                   \
    X("stats", 0, 0, "", "totals: ports, drops, caches, conservation", cmd_stats)         \
    X("pmd-stats", 0, 0, "", "per PMD, since start or pmd-stats-clear", cmd_pmd_stats)    \
    X("pmd-stats-clear", 0, 0, "", "start pmd-stats afresh (nothing else is reset)",      \
      cmd_pmd_stats_clear)                                                               \
    X("port-show", 0, 1, "[PORT]", "ports: queues, PMDs, counters", cmd_port_show)        \
    X("drops", 0, 0, "", "drops by reason", cmd_drops)                                    \
    X("rule-show", 0, 0, "", "the rules in lookup order", cmd_rule_show)                  \
    X("rule-add", 1, 1, "'MATCH actions=...'",                                            \
      "add a rule (same priority and match: replace)", cmd_rule_add)                     \
    X("rule-del", 1, 1, "'MATCH'", "delete the rule with exactly this priority and match", \
      cmd_rule_del)                                                                      \
    X("rule-load", 1, 2, "[--add] FILE",                                                  \
      "replace every rule by FILE's (--add: add them), all or nothing", cmd_rule_load)    \
    X("megaflow-show", 0, 1, "[PMD]", "the megaflows of every PMD (or one)",              \
      cmd_megaflow_show)                                                                 \
    X("megaflow-flush", 0, 0, "", "empty every PMD's megaflows, EMC and SMC",             \
      cmd_megaflow_flush)                                                                \
    X("cache-show", 0, 0, "", "per PMD: cache sizes, memory, hit rates", cmd_cache_show)  \
    X("set", 1, 1, "KNOB=VALUE",                                                          \
      "tx-flush-interval, tx-retries, bad-csum, emc-insert-inv-prob, smc, keep-alive, "  \
      "keepalive-interval",                                                              \
      cmd_set)                                                                           \
    X("health", 0, 0, "", "keep-alive state of every PMD", cmd_health)

#define CC_ROW(name, min, max, usage, help, fn) {name, min, max, usage, help, cc_locked},
static const struct ctl_command cc_table[] = {CC_COMMANDS(CC_ROW)};
#undef CC_ROW
#define CC_FN(name, min, max, usage, help, fn) fn,
static cc_fn *const cc_fns[] = {CC_COMMANDS(CC_FN)};
#undef CC_FN
#define CC_N (sizeof cc_table / sizeof cc_table[0])

/* Every command: the implementation named by argv[0], under the control
 * mutex. */
static void cc_locked(void *aux, int argc, char *argv[], bool json, struct ctl_answer *ans)
{
    struct ctl_commands *cc = aux;
    for (size_t i = 0; i < CC_N; i++) {
        if (strcmp(cc_table[i].name, argv[0]))
            continue;
        control_lock(cc->c);
        cc_fns[i](cc, argc, argv, json, ans);
        control_unlock(cc->c);
        return;
    }
    ctl_answer_error(ans, "unknown command '%s'", argv[0]);
}

const struct ctl_command *ctl_commands_table(size_t *n)
{
    *n = CC_N;
    return cc_table;
}
