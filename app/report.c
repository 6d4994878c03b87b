/* report.c: text and JSON reports from counter snapshots. */
#include "report.h"

#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "scenario.h"

void report_json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* A port as the summary shows it: device counters for device ports, the
 * packets decapsulated (rx) and encapsulated (tx) for tunnel ports. */
struct report_port {
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped, send_calls;
};

static void report_port_view(const struct dp_port_stats *ps, struct report_port *v)
{
    v->rx_packets = ps->n[DP_PORT_RX_PACKETS] + ps->n[DP_PORT_TNL_RX];
    v->rx_bytes = ps->n[DP_PORT_RX_BYTES] + ps->n[DP_PORT_TNL_RX_BYTES];
    v->tx_packets = ps->tx.n[TXQ_STAT_PACKETS] + ps->n[DP_PORT_TNL_TX];
    v->tx_bytes = ps->tx.n[TXQ_STAT_BYTES] + ps->n[DP_PORT_TNL_TX_BYTES];
    v->send_calls = ps->tx.n[TXQ_STAT_SEND_CALLS];
    v->tx_dropped = 0;
    for (int r = 0; r < DROP_N_REASONS; r++)
        v->tx_dropped += ps->tx.dropped[r];
}

static uint64_t report_layers_sum(const struct csum_stats *cs, enum csum_stat base)
{
    uint64_t t = 0;
    for (int l = 0; l < CSUM_L_N; l++)
        t += cs->n[base + l];
    return t;
}

static void report_json_layers(FILE *out, const char *name, const struct csum_stats *cs,
                               enum csum_stat base)
{
    fprintf(out,
            "\"%s\": {\"outer_ip\": %" PRIu64 ", \"outer_l4\": %" PRIu64
            ", \"inner_ip\": %" PRIu64 ", \"inner_l4\": %" PRIu64 "}",
            name, cs->n[base + CSUM_L_OUTER_IP], cs->n[base + CSUM_L_OUTER_L4],
            cs->n[base + CSUM_L_INNER_IP], cs->n[base + CSUM_L_INNER_L4]);
}

static void report_csum_json(FILE *out, const struct csum_stats *cs)
{
    fprintf(out, "{");
    report_json_layers(out, "sw", cs, CSUM_STAT_SW);
    fprintf(out, ", \"sw_total\": %" PRIu64 ", ", report_layers_sum(cs, CSUM_STAT_SW));
    report_json_layers(out, "offloaded", cs, CSUM_STAT_OFFLOADED);
    fprintf(out, ", \"offloaded_total\": %" PRIu64 ", \"guest_partial\": %" PRIu64 ", ",
            report_layers_sum(cs, CSUM_STAT_OFFLOADED), cs->n[CSUM_STAT_GUEST_PARTIAL]);
    report_json_layers(out, "rx_bad", cs, CSUM_STAT_RX_BAD);
    fprintf(out,
            ", \"rx_partial\": %" PRIu64 ", \"sw_verified\": %" PRIu64
            ", \"sw_verify_failed\": %" PRIu64 ", \"bad_forwarded\": %" PRIu64 "}",
            cs->n[CSUM_STAT_RX_PARTIAL], cs->n[CSUM_STAT_SW_VERIFIED],
            cs->n[CSUM_STAT_SW_VERIFY_FAILED], cs->n[CSUM_STAT_BAD_FORWARDED]);
}

/* The flow-cache counters the summary shows, in its order. */
static const enum fcache_stat report_fcache_keys[] = {
    FCACHE_STAT_LOOKUPS, FCACHE_STAT_EMC_HITS, FCACHE_STAT_SMC_HITS,
    FCACHE_STAT_MEGAFLOW_HITS, FCACHE_STAT_SIMPLE_HITS, FCACHE_STAT_DIRECT,
    FCACHE_STAT_UPCALLS, FCACHE_STAT_UPCALL_MISSES, FCACHE_STAT_SUBTABLE_LOOKUPS,
};
static const enum fcache_stat report_fcache_keys2[] = {
    FCACHE_STAT_MEGAFLOWS_INSTALLED, FCACHE_STAT_MEGAFLOWS_EVICTED,
    FCACHE_STAT_MEGAFLOWS_FLUSHED, FCACHE_STAT_MEGAFLOWS_REVALIDATED,
    FCACHE_STAT_RULE_CHANGES, FCACHE_STAT_EMC_INSERTS, FCACHE_STAT_SMC_INSERTS,
    FCACHE_STAT_MEGAFLOWS, FCACHE_STAT_SUBTABLES,
};

static void report_fcache_json(FILE *out, const struct fcache_stats *s)
{
    const uint64_t *n = s->n;
    fprintf(out, "{");
    for (size_t i = 0; i < sizeof report_fcache_keys / sizeof report_fcache_keys[0]; i++)
        fprintf(out, "%s\"%s\": %" PRIu64, i ? ", " : "",
                fcache_stat_name(report_fcache_keys[i]), n[report_fcache_keys[i]]);
    fprintf(out, ", \"subtable_lookups_per_megaflow_hit\": %.3f",
            n[FCACHE_STAT_MEGAFLOW_HITS] ? (double)n[FCACHE_STAT_SUBTABLE_LOOKUPS] /
                                               (double)n[FCACHE_STAT_MEGAFLOW_HITS]
                                         : 0.0);
    for (size_t i = 0; i < sizeof report_fcache_keys2 / sizeof report_fcache_keys2[0]; i++)
        fprintf(out, ", \"%s\": %" PRIu64, fcache_stat_name(report_fcache_keys2[i]),
                n[report_fcache_keys2[i]]);
    fprintf(out, "}");
}

void report_drops(FILE *out, bool json, const struct dp_stats *s)
{
    uint64_t total = 0;
    for (int r = 0; r < DROP_N_REASONS; r++)
        total += s->drops[r];
    if (json) {
        fprintf(out, "{\"total\": %" PRIu64 ", \"drops\": {", total);
        for (int r = 0; r < DROP_N_REASONS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                    drop_reason_name((enum drop_reason)r), s->drops[r]);
        fprintf(out, "}, \"parse_errors\": {");
        for (int r = 1; r < PARSE_N_RESULTS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r > 1 ? ", " : "",
                    parse_result_name((enum parse_result)r), s->parse[r]);
        fprintf(out, "}}\n");
        return;
    }
    fprintf(out, "drops:%s\n", total ? "" : " none");
    for (int r = 0; r < DROP_N_REASONS; r++)
        if (s->drops[r])
            fprintf(out, "  %-24s %10" PRIu64 "  %s\n", drop_reason_name((enum drop_reason)r),
                    s->drops[r], drop_reason_desc((enum drop_reason)r));
    for (int r = 1; r < PARSE_N_RESULTS; r++) {
        char name[64];
        if (!s->parse[r])
            continue;
        snprintf(name, sizeof name, "parse_error/%s", parse_result_name((enum parse_result)r));
        fprintf(out, "  %-24s %10" PRIu64 "  %s\n", name, s->parse[r],
                parse_result_desc((enum parse_result)r));
    }
}

void report_summary(FILE *out, bool json, const struct dp *dp, const struct dp_stats *s,
                    const char *cfg_path, uint64_t changes_applied)
{
    struct dp_totals t;
    unsigned n_ports = dp_n_ports(dp);
    dp_stats_totals(s, n_ports, &t);
    bool conserved = t.rx + t.copies == t.tx + t.dropped + t.queued;
    const struct csum_stats *cs = &s->csum;

    if (json) {
        fprintf(out, "{\n  \"flowswitch\": \"%s\",\n  \"config\": ", FS_VERSION);
        report_json_str(out, cfg_path ? cfg_path : "");
        fprintf(out, ",\n  \"ports\": [");
        for (unsigned p = 0; p < n_ports; p++) {
            struct dp_port_info port;
            struct report_port v;
            struct netdev_stats ns;
            char caps[256];
            dp_port_get(dp, p, &port);
            report_port_view(&s->ports[p], &v);
            netdev_caps_format(&port.caps, caps, sizeof caps);
            if (port.dev)
                netdev_get_stats(port.dev, &ns);
            else
                memset(&ns, 0, sizeof ns);
            fprintf(out,
                    "%s\n    {\"name\": \"%s\", \"port_no\": %u, \"type\": \"%s\", "
                    "\"caps\": \"%s\", \"rx_packets\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
                    ", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64
                    ", \"tx_dropped\": %" PRIu64 ", \"send_calls\": %" PRIu64
                    ", \"backend\": {\"rx_dropped\": %" PRIu64 ", \"rx_errors\": %" PRIu64
                    ", \"tx_errors\": %" PRIu64 ", \"rx_csum_good\": %" PRIu64
                    ", \"rx_csum_bad\": %" PRIu64 ", \"tx_offload_contract\": %" PRIu64 "}",
                    p ? "," : "", port.name, port.port_no, port.type, caps, v.rx_packets,
                    v.rx_bytes, v.tx_packets, v.tx_bytes, v.tx_dropped, v.send_calls,
                    ns.rx_dropped, ns.rx_errors, ns.tx_errors, ns.rx_csum_good,
                    ns.rx_csum_bad, ns.tx_offload_contract);
            const char *e = port.dev ? netdev_rx_error(port.dev) : NULL;
            if (e) {
                fprintf(out, ", \"rx_error\": ");
                report_json_str(out, e);
            }
            fprintf(out, "}");
        }
        fprintf(out, "\n  ],\n  \"drops\": {");
        for (int r = 0; r < DROP_N_REASONS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                    drop_reason_name((enum drop_reason)r), s->drops[r]);
        fprintf(out, "},\n  \"parse\": {");
        for (int r = 0; r < PARSE_N_RESULTS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                    parse_result_name((enum parse_result)r), s->parse[r]);
        fprintf(out, "},\n  \"csum\": ");
        report_csum_json(out, cs);
        fprintf(out, ",\n  \"fcache\": ");
        report_fcache_json(out, &s->fcache);
        fprintf(out,
                ",\n  \"totals\": {\"rx\": %" PRIu64 ", \"tx\": %" PRIu64
                ", \"copies\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"queued\": %" PRIu64
                "},\n  \"headroom_grown\": %" PRIu64 ",\n  \"changes_applied\": %" PRIu64
                ",\n  \"conservation\": %s\n}\n",
                t.rx, t.tx, t.copies, t.dropped, t.queued, s->n[DP_STAT_HEADROOM_GROWN],
                changes_applied, conserved ? "true" : "false");
        return;
    }

    fprintf(out, "%-12s %-6s %10s %12s %10s %12s %8s %6s  %s\n", "port", "type",
            "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "tx_drop", "sends", "caps");
    for (unsigned p = 0; p < n_ports; p++) {
        struct dp_port_info port;
        struct report_port v;
        char caps[256];
        dp_port_get(dp, p, &port);
        report_port_view(&s->ports[p], &v);
        netdev_caps_format(&port.caps, caps, sizeof caps);
        fprintf(out,
                "%-12s %-6s %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %12" PRIu64
                " %8" PRIu64 " %6" PRIu64 "  %s\n",
                port.name, port.type, v.rx_packets, v.rx_bytes, v.tx_packets, v.tx_bytes,
                v.tx_dropped, v.send_calls, caps);
    }
    report_drops(out, false, s);
    const uint64_t *f = s->fcache.n;
    fprintf(out,
            "flow caches: %" PRIu64 " lookups: emc %" PRIu64 ", smc %" PRIu64
            ", megaflow %" PRIu64 ", simple %" PRIu64 ", upcalls %" PRIu64 " (%" PRIu64
            " without a rule); %" PRIu64 " megaflows installed, %" PRIu64 " evicted, %" PRIu64
            " flushed; %" PRIu64 " direct (past the EMC/SMC)\n",
            f[FCACHE_STAT_LOOKUPS], f[FCACHE_STAT_EMC_HITS], f[FCACHE_STAT_SMC_HITS],
            f[FCACHE_STAT_MEGAFLOW_HITS], f[FCACHE_STAT_SIMPLE_HITS], f[FCACHE_STAT_UPCALLS],
            f[FCACHE_STAT_UPCALL_MISSES],
            f[FCACHE_STAT_MEGAFLOWS_INSTALLED], f[FCACHE_STAT_MEGAFLOWS_EVICTED],
            f[FCACHE_STAT_MEGAFLOWS_FLUSHED], f[FCACHE_STAT_DIRECT]);
    fprintf(out,
            "checksums: %" PRIu64 " computed in software, %" PRIu64
            " offloaded to ports, %" PRIu64 " passed partial to guests, %" PRIu64
            " bad forwarded\n",
            report_layers_sum(cs, CSUM_STAT_SW), report_layers_sum(cs, CSUM_STAT_OFFLOADED),
            cs->n[CSUM_STAT_GUEST_PARTIAL], cs->n[CSUM_STAT_BAD_FORWARDED]);
    fprintf(out,
            "totals: rx %" PRIu64 " + copies %" PRIu64 " = tx %" PRIu64 " + dropped %" PRIu64
            " + queued %" PRIu64 " (%s)\n",
            t.rx, t.copies, t.tx, t.dropped, t.queued,
            conserved ? "conserved" : "NOT CONSERVED");
}

static double report_ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

void report_pmd(FILE *out, bool json, const struct report_pmd *p, unsigned n_ports)
{
    const struct dp_stats *d = p->d;
    struct dp_totals t;
    dp_stats_totals(d, n_ports, &t);
    uint64_t send_calls = 0;
    for (unsigned i = 0; i < n_ports && i < DP_MAX_PORTS; i++)
        send_calls += d->ports[i].tx.n[TXQ_STAT_SEND_CALLS];
    uint64_t iterations = p->busy_iterations + p->idle_iterations;
    uint64_t used = p->busy_cycles + p->idle_cycles;
    double total_cycles = p->secs * 1e9 * p->cycles_per_ns;
    double mpps = p->secs > 0 ? (double)t.rx / p->secs / 1e6 : 0.0;
    double cpp = report_ratio(p->busy_cycles, t.rx);
    const struct csum_stats *cs = &d->csum;
    uint64_t csum_sw = report_layers_sum(cs, CSUM_STAT_SW);
    uint64_t csum_off = report_layers_sum(cs, CSUM_STAT_OFFLOADED);
    const uint64_t *f = d->fcache.n;
    if (json) {
        fprintf(out,
                "{\"pmd\": %u, \"core\": %d, \"rxqs\": %u, \"interval_s\": %.3f, "
                "\"iterations\": %" PRIu64 ", \"busy_iterations\": %" PRIu64
                ", \"idle_iterations\": %" PRIu64 ", \"busy_cycles\": %" PRIu64
                ", \"idle_cycles\": %" PRIu64 ", \"rx_packets\": %" PRIu64
                ", \"tx_packets\": %" PRIu64 ", \"copies\": %" PRIu64 ", \"dropped\": %" PRIu64
                ", \"send_calls\": %" PRIu64 ", \"mpps\": %.3f, \"cycles_per_packet\": %.1f"
                ", \"pkts_per_busy_iteration\": %.2f, \"pkts_per_send\": %.2f"
                ", \"csum_sw\": %" PRIu64 ", \"csum_offloaded\": %" PRIu64
                ", \"csum_guest_partial\": %" PRIu64 ", \"emc_hits\": %" PRIu64
                ", \"smc_hits\": %" PRIu64 ", \"megaflow_hits\": %" PRIu64
                ", \"simple_hits\": %" PRIu64 ", \"direct\": %" PRIu64
                ", \"upcalls\": %" PRIu64 ", \"drops\": {",
                p->index, p->core, p->n_rxqs, p->secs, iterations, p->busy_iterations,
                p->idle_iterations, p->busy_cycles, p->idle_cycles, t.rx, t.tx, t.copies,
                t.dropped, send_calls, mpps, cpp, report_ratio(t.rx, p->busy_iterations),
                report_ratio(t.tx, send_calls), csum_sw, csum_off,
                cs->n[CSUM_STAT_GUEST_PARTIAL], f[FCACHE_STAT_EMC_HITS],
                f[FCACHE_STAT_SMC_HITS], f[FCACHE_STAT_MEGAFLOW_HITS],
                f[FCACHE_STAT_SIMPLE_HITS], f[FCACHE_STAT_DIRECT], f[FCACHE_STAT_UPCALLS]);
        for (int r = 0; r < DROP_N_REASONS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                    drop_reason_name((enum drop_reason)r), d->drops[r]);
        fprintf(out, "}}");
        return;
    }
    if (p->core >= 0)
        fprintf(out, "pmd thread pmd%u core %d (%u rx queues):\n", p->index, p->core,
                p->n_rxqs);
    else
        fprintf(out, "pmd thread pmd%u unpinned (%u rx queues):\n", p->index, p->n_rxqs);
    fprintf(out, "  Measurement duration: %.3f s\n", p->secs);
    fprintf(out, "  Iterations:         %14" PRIu64 "  (%.2f us/it)\n", iterations,
            iterations ? p->secs * 1e6 / (double)iterations : 0.0);
    fprintf(out, "  - Used TSC cycles:  %14" PRIu64 "  (%5.1f %% of total cycles)\n", used,
            total_cycles > 0 ? 100.0 * (double)used / total_cycles : 0.0);
    fprintf(out, "  - idle iterations:  %14" PRIu64 "  (%5.1f %% of used cycles)\n",
            p->idle_iterations, 100.0 * report_ratio(p->idle_cycles, used));
    fprintf(out, "  - busy iterations:  %14" PRIu64 "  (%5.1f %% of used cycles)\n",
            p->busy_iterations, 100.0 * report_ratio(p->busy_cycles, used));
    fprintf(out, "  Rx packets:         %14" PRIu64 "  (%.3f Mpps, %.0f cycles/pkt)\n", t.rx,
            mpps, cpp);
    fprintf(out, "  - per busy iteration: %12.1f\n", report_ratio(t.rx, p->busy_iterations));
    fprintf(out, "  Tx packets:         %14" PRIu64 "  (%.1f pkts/send, %" PRIu64 " sends)\n",
            t.tx, report_ratio(t.tx, send_calls), send_calls);
    fprintf(out, "  Cache hits: emc %" PRIu64 ", smc %" PRIu64 ", megaflow %" PRIu64
                 " (direct %" PRIu64 "), simple %" PRIu64 ", upcalls %" PRIu64 "\n",
            f[FCACHE_STAT_EMC_HITS], f[FCACHE_STAT_SMC_HITS], f[FCACHE_STAT_MEGAFLOW_HITS],
            f[FCACHE_STAT_DIRECT], f[FCACHE_STAT_SIMPLE_HITS], f[FCACHE_STAT_UPCALLS]);
    fprintf(out, "  Copies:             %14" PRIu64 "\n", t.copies);
    fprintf(out, "  Dropped:            %14" PRIu64 "\n", t.dropped);
    for (int r = 0; r < DROP_N_REASONS; r++)
        if (d->drops[r])
            fprintf(out, "  - %-18s %12" PRIu64 "\n", drop_reason_name((enum drop_reason)r),
                    d->drops[r]);
    fprintf(out, "  Checksums: sw %" PRIu64 ", offloaded %" PRIu64 ", guest-partial %" PRIu64
                 "\n",
            csum_sw, csum_off, cs->n[CSUM_STAT_GUEST_PARTIAL]);
}

/* ---- simulations ------------------------------------------------------------ */

static double report_per_s(uint64_t n, uint64_t ns)
{
    return ns ? (double)n * 1e9 / (double)ns : 0.0;
}

/* The measurement window (engine.h): rates over [start, end), the change
 * of the counters. */
static json_t *report_sim_window_json(const struct scenario *sc, const struct sim_results *r)
{
    const struct sim_window *w = &r->window;
    uint64_t span = w->end_ns - w->start_ns;
    json_t *ports = json_array();
    for (size_t i = 0; i < r->n_ports; i++)
        json_array_append_new(
            ports, json_pack("{s:s, s:I, s:f, s:I, s:f, s:f, s:f, s:I}", "name",
                             sc->sim.ports[i].name, "offered", (json_int_t)w->port_offered[i],
                             "offered_mpps", report_per_s(w->port_offered[i], span) / 1e6,
                             "delivered", (json_int_t)w->port_delivered[i], "delivered_mpps",
                             report_per_s(w->port_delivered[i], span) / 1e6,
                             "delivered_wire_gbps",
                             report_per_s(w->port_delivered_wire_bytes[i] * 8, span) / 1e9,
                             "delivered_frame_gbps",
                             report_per_s((w->port_delivered_bytes[i] + 4 * w->port_delivered[i]) *
                                              8,
                                          span) /
                                 1e9,
                             "rx_missed", (json_int_t)w->port_rx_missed[i]));
    json_t *pmds = json_array();
    for (size_t i = 0; i < r->n_pmds; i++) {
        const struct sim_pmd_result *p = &r->pmds[i];
        json_array_append_new(
            pmds, json_pack("{s:I, s:I, s:f, s:f}", "polls", (json_int_t)p->window.polls,
                            "rx_packets", (json_int_t)p->window.rx_packets, "mpps",
                            report_per_s(p->window.rx_packets, span) / 1e6, "busy_share",
                            span ? (double)p->window.busy_ns / (double)span : 0.0));
    }
    /* Conservation over the window: what came in (offered, copies) and
     * what was in flight at its start is delivered, dropped or in flight
     * at its end. */
    uint64_t dropped = w->sim_dropped + w->dp_dropped, copies = w->dp.n[DP_STAT_COPIES];
    bool conserved = w->offered + copies + w->in_flight_start ==
                     w->delivered + dropped + w->in_flight_end;
    json_t *fc = json_object();
    for (int k = 0; k < FCACHE_N_STATS; k++)
        json_object_set_new(fc, fcache_stat_name((enum fcache_stat)k),
                            json_integer((json_int_t)w->dp.fcache.n[k]));
    const struct csum_stats *cs = &w->dp.csum;
    json_t *costs = json_object();
    for (int k = 0; k < SIM_COST_N; k++)
        json_object_set_new(costs, sim_cost_name((enum sim_cost)k),
                            json_integer((json_int_t)w->cost_counts[k]));
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:f, s:f, s:o, s:o, s:o, "
                     "s:{s:I, s:I, s:I, s:I, s:I}, s:o}",
                     "start_ns", (json_int_t)w->start_ns, "end_ns", (json_int_t)w->end_ns,
                     "offered", (json_int_t)w->offered, "delivered", (json_int_t)w->delivered,
                     "copies", (json_int_t)copies, "dropped", (json_int_t)dropped,
                     "in_flight_start", (json_int_t)w->in_flight_start, "in_flight_end",
                     (json_int_t)w->in_flight_end, "conservation", conserved,
                     "offered_mpps", report_per_s(w->offered, span) / 1e6, "delivered_mpps",
                     report_per_s(w->delivered, span) / 1e6, "ports", ports, "pmd", pmds,
                     "fcache", fc, "csum", "host_sw",
                     (json_int_t)report_layers_sum(cs, CSUM_STAT_SW), "host_sw_bytes",
                     (json_int_t)cs->n[CSUM_STAT_SW_BYTES], "host_verified",
                     (json_int_t)cs->n[CSUM_STAT_SW_VERIFIED], "nic",
                     (json_int_t)report_layers_sum(cs, CSUM_STAT_OFFLOADED), "left_to_guest",
                     (json_int_t)cs->n[CSUM_STAT_GUEST_PARTIAL], "cost_events", costs);
}

static json_t *report_sim_json(const struct scenario *sc, const struct sim_results *r)
{
    const struct sim_cfg *c = &sc->sim;
    const struct dp_stats *d = r->dp;
    json_t *doc = json_object();
    json_object_set_new(doc, "flowswitch", json_string(FS_VERSION));
    json_object_set_new(doc, "scenario", json_string(c->origin));
    json_object_set_new(doc, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(doc, "pmds", json_integer(c->n_pmds));
    json_object_set_new(doc, "duration_ns", json_integer((json_int_t)c->duration_ns));
    json_object_set_new(doc, "end_ns", json_integer((json_int_t)r->end_ns));
    json_object_set_new(doc, "events", json_integer((json_int_t)r->events));
    json_object_set_new(doc, "profile", json_pack("{s:s, s:f}", "cpu", c->profile.cpu, "ghz",
                                                  c->profile.ghz));
    json_t *ports = json_array();
    for (size_t i = 0; i < r->n_ports; i++) {
        const struct sim_port_cfg *pc = &c->ports[i];
        const struct sim_port_result *p = &r->ports[i];
        json_t *drops = json_object();
        for (int k = 0; k < SIM_DROP_N; k++)
            json_object_set_new(drops, sim_drop_name((enum sim_drop)k),
                                json_integer((json_int_t)p->drops[k]));
        json_t *viol = json_object();
        for (int k = 0; k < SIM_VERIFY_N; k++)
            if (p->verify.violations[k])
                json_object_set_new(viol, sim_verify_reason_name((enum sim_verify_reason)k),
                                    json_integer((json_int_t)p->verify.violations[k]));
        json_array_append_new(
            ports,
            json_pack("{s:s, s:s, s:I, s:I, s:f, s:o, s:I, s:I, s:f, s:f, s:f, s:f, s:I, s:f, s:I, "
                      "s:I, s:{s:I, s:I, s:I, s:I, s:o}}",
                      "name", pc->name, "model", sim_port_model_name(pc->model), "offered",
                      (json_int_t)p->offered, "offered_bytes", (json_int_t)p->offered_bytes,
                      "offered_mpps", report_per_s(p->offered, c->duration_ns) / 1e6, "drops",
                      drops, "delivered", (json_int_t)p->delivered, "delivered_bytes",
                      (json_int_t)p->delivered_bytes, "delivered_mpps",
                      report_per_s(p->delivered, r->end_ns) / 1e6, "delivered_wire_gbps",
                      report_per_s(p->delivered_wire_bytes * 8, r->end_ns) / 1e9,
                      "delivered_frame_gbps",
                      report_per_s((p->delivered_bytes + 4 * p->delivered) * 8, r->end_ns) / 1e9,
                      "line_gbps",
                      pc->model == SIM_PORT_NIC ? (double)pc->line_bps / 1e9 : 0.0, "send_calls",
                      (json_int_t)p->send_calls, "pkts_per_send",
                      p->send_calls ? (double)p->delivered / (double)p->send_calls : 0.0,
                      "guest_completed", (json_int_t)p->guest_completed, "guest_forwarded",
                      (json_int_t)p->forwarded, "verify", "frames",
                      (json_int_t)p->verify.frames, "ok", (json_int_t)p->verify.ok, "untagged",
                      (json_int_t)p->verify.untagged, "bad_csum_expected",
                      (json_int_t)p->verify.bad_csum_expected, "violations", viol));
    }
    uint64_t eager = 0, guest = 0;
    for (size_t i = 0; i < r->n_ports; i++) {
        const struct sim_port_result *p = &r->ports[i];
        json_t *pj = json_array_get(ports, i);
        json_object_set_new(pj, "guest_computed", json_integer((json_int_t)p->guest_computed));
        json_object_set_new(pj, "host_eager_csum", json_integer((json_int_t)p->eager_csum));
        eager += p->eager_csum;
        guest += p->guest_computed;
    }
    json_object_set_new(doc, "ports", ports);
    json_t *pmds = json_array();
    for (size_t i = 0; i < r->n_pmds; i++) {
        const struct sim_pmd_result *p = &r->pmds[i];
        uint64_t busy_polls = p->polls - p->idle_polls;
        json_array_append_new(
            pmds, json_pack("{s:I, s:I, s:I, s:I, s:f, s:I, s:f, s:I, s:f, s:f}", "rxqs",
                            (json_int_t)p->rxqs, "polls", (json_int_t)p->polls, "idle_polls",
                            (json_int_t)p->idle_polls, "rx_packets", (json_int_t)p->rx_packets,
                            "mpps", report_per_s(p->rx_packets, r->end_ns) / 1e6, "busy_ns",
                            (json_int_t)p->busy_ns, "charged_ns", p->charged_ns,
                            "empty_poll_ns", (json_int_t)p->empty_poll_ns, "busy_share",
                            r->end_ns ? (double)p->busy_ns / (double)r->end_ns : 0.0,
                            "pkts_per_busy_poll",
                            busy_polls ? (double)p->rx_packets / (double)busy_polls : 0.0));
    }
    json_object_set_new(doc, "pmd", pmds);
    json_t *drops = json_object();
    for (int k = 0; k < DROP_N_REASONS; k++)
        if (d->drops[k])
            json_object_set_new(drops, drop_reason_name((enum drop_reason)k),
                                json_integer((json_int_t)d->drops[k]));
    for (int k = 0; k < SIM_DROP_N; k++)
        if (r->drops[k])
            json_object_set_new(drops, sim_drop_name((enum sim_drop)k),
                                json_integer((json_int_t)r->drops[k]));
    json_object_set_new(doc, "drops", drops);
    json_t *fc = json_object();
    for (int k = 0; k < FCACHE_N_STATS; k++)
        json_object_set_new(fc, fcache_stat_name((enum fcache_stat)k),
                            json_integer((json_int_t)d->fcache.n[k]));
    json_object_set_new(doc, "fcache", fc);
    const struct csum_stats *cs = &d->csum;
    json_object_set_new(
        doc, "csum",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "host_sw",
                  (json_int_t)report_layers_sum(cs, CSUM_STAT_SW), "host_sw_bytes",
                  (json_int_t)cs->n[CSUM_STAT_SW_BYTES], "host_verified",
                  (json_int_t)cs->n[CSUM_STAT_SW_VERIFIED], "nic",
                  (json_int_t)report_layers_sum(cs, CSUM_STAT_OFFLOADED), "left_to_guest",
                  (json_int_t)cs->n[CSUM_STAT_GUEST_PARTIAL], "bad_forwarded",
                  (json_int_t)cs->n[CSUM_STAT_BAD_FORWARDED]));
    json_object_set_new(json_object_get(doc, "csum"), "host_eager",
                        json_integer((json_int_t)eager));
    json_object_set_new(json_object_get(doc, "csum"), "guest_sender",
                        json_integer((json_int_t)guest));
    const struct sim_hist *h = &r->latency;
    json_object_set_new(
        doc, "latency_ns",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "count", (json_int_t)h->count, "min",
                  (json_int_t)(h->count ? h->min : 0), "p50",
                  (json_int_t)sim_hist_percentile(h, 50), "p99",
                  (json_int_t)sim_hist_percentile(h, 99), "p99_9",
                  (json_int_t)sim_hist_percentile(h, 99.9), "max", (json_int_t)h->max, "mean",
                  sim_hist_mean(h)));
    json_t *costs = json_object();
    for (int k = 0; k < SIM_COST_N; k++)
        json_object_set_new(costs, sim_cost_name((enum sim_cost)k),
                            json_integer((json_int_t)r->cost_counts[k]));
    json_object_set_new(doc, "cost_events", costs);
    json_object_set_new(doc, "window", report_sim_window_json(sc, r));
    json_t *viol = json_array();
    for (size_t i = 0; i < r->n_violations; i++) {
        const struct sim_verify_violation *v = &r->violations[i];
        json_array_append_new(
            viol, json_pack("{s:s, s:b, s:i, s:I, s:I, s:s}", "reason",
                            sim_verify_reason_name((enum sim_verify_reason)v->reason), "tagged",
                            v->tagged, "stream", v->model_id, "flow", (json_int_t)v->flow_id,
                            "seq", (json_int_t)v->seq, "detail", v->detail));
    }
    json_object_set_new(doc, "violations", viol);
    bool conserved = r->offered + r->copies == r->delivered + r->dropped + r->in_flight;
    json_object_set_new(doc, "totals",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:b}", "offered",
                                  (json_int_t)r->offered, "copies", (json_int_t)r->copies,
                                  "delivered", (json_int_t)r->delivered, "dropped",
                                  (json_int_t)r->dropped, "in_flight", (json_int_t)r->in_flight,
                                  "conservation", conserved));
    return doc;
}

void report_sim(FILE *out, bool json, const struct scenario *sc,
                const struct sim_results *r)
{
    if (json) {
        json_t *doc = report_sim_json(sc, r);
        json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        fputc('\n', out);
        json_decref(doc);
        return;
    }
    const struct sim_cfg *c = &sc->sim;
    const struct dp_stats *d = r->dp;
    fprintf(out, "%s: seed %" PRIu64 ", %u PMD%s, %.3f ms of traffic, profile %s (%.2f GHz)\n",
            c->origin, c->seed, c->n_pmds, c->n_pmds == 1 ? "" : "s",
            (double)c->duration_ns / 1e6, c->profile.cpu, c->profile.ghz);
    fprintf(out, "virtual time %.3f ms, %" PRIu64 " events\n", (double)r->end_ns / 1e6,
            r->events);
    fprintf(out, "%-10s %-5s %10s %8s %10s %9s %9s %8s %9s %7s %s\n", "port", "model",
            "offered", "Mpps", "delivered", "Mpps", "wireGb/s", "missed", "sends", "pkt/snd",
            "sink");
    for (size_t i = 0; i < r->n_ports; i++) {
        const struct sim_port_cfg *pc = &c->ports[i];
        const struct sim_port_result *p = &r->ports[i];
        uint64_t bad = 0;
        for (int k = 0; k < SIM_VERIFY_N; k++)
            bad += p->verify.violations[k];
        char sink[64];
        if (pc->model == SIM_PORT_VM && pc->forward >= 0)
            snprintf(sink, sizeof sink, "guest forwarded %" PRIu64 " to %s", p->forwarded,
                     c->ports[pc->forward].name);
        else if (p->verify.frames)
            snprintf(sink, sizeof sink, "%" PRIu64 " ok, %" PRIu64 " violations",
                     p->verify.ok, bad);
        else
            snprintf(sink, sizeof sink, "-");
        fprintf(out,
                "%-10s %-5s %10" PRIu64 " %8.3f %10" PRIu64 " %9.3f %9.3f %8" PRIu64
                " %9" PRIu64 " %7.1f %s\n",
                pc->name, sim_port_model_name(pc->model), p->offered,
                report_per_s(p->offered, c->duration_ns) / 1e6, p->delivered,
                report_per_s(p->delivered, r->end_ns) / 1e6,
                report_per_s(p->delivered_wire_bytes * 8, r->end_ns) / 1e9,
                p->drops[SIM_DROP_RX_MISSED], p->send_calls,
                p->send_calls ? (double)p->delivered / (double)p->send_calls : 0.0, sink);
    }
    for (size_t i = 0; i < r->n_pmds; i++) {
        const struct sim_pmd_result *p = &r->pmds[i];
        uint64_t busy_polls = p->polls - p->idle_polls;
        fprintf(out,
                "pmd%zu: %u rx queues, %" PRIu64 " packets (%.3f Mpps), busy %.1f%% (time in "
                "polls), %.1f packets per busy poll\n",
                i, p->rxqs, p->rx_packets, report_per_s(p->rx_packets, r->end_ns) / 1e6,
                r->end_ns ? 100.0 * (double)p->busy_ns / (double)r->end_ns : 0.0,
                busy_polls ? (double)p->rx_packets / (double)busy_polls : 0.0);
    }
    fprintf(out, "drops:%s\n", r->dropped ? "" : " none");
    for (int k = 0; k < DROP_N_REASONS; k++)
        if (d->drops[k])
            fprintf(out, "  %-24s %10" PRIu64 "  %s\n", drop_reason_name((enum drop_reason)k),
                    d->drops[k], drop_reason_desc((enum drop_reason)k));
    for (int k = 0; k < SIM_DROP_N; k++)
        if (r->drops[k])
            fprintf(out, "  %-24s %10" PRIu64 "  %s\n", sim_drop_name((enum sim_drop)k),
                    r->drops[k], sim_drop_desc((enum sim_drop)k));
    const uint64_t *f = d->fcache.n;
    fprintf(out,
            "flow caches: %" PRIu64 " lookups: emc %" PRIu64 ", smc %" PRIu64 ", megaflow %" PRIu64
            ", simple %" PRIu64 ", upcalls %" PRIu64 "; %" PRIu64 " megaflows installed, %" PRIu64
            " direct\n",
            f[FCACHE_STAT_LOOKUPS], f[FCACHE_STAT_EMC_HITS], f[FCACHE_STAT_SMC_HITS],
            f[FCACHE_STAT_MEGAFLOW_HITS], f[FCACHE_STAT_SIMPLE_HITS], f[FCACHE_STAT_UPCALLS],
            f[FCACHE_STAT_MEGAFLOWS_INSTALLED], f[FCACHE_STAT_DIRECT]);
    const struct csum_stats *cs = &d->csum;
    fprintf(out,
            "checksums: %" PRIu64 " in host software (%" PRIu64 " bytes), %" PRIu64
            " by NICs, %" PRIu64 " left to guests, %" PRIu64 " verified in software\n",
            report_layers_sum(cs, CSUM_STAT_SW), cs->n[CSUM_STAT_SW_BYTES],
            report_layers_sum(cs, CSUM_STAT_OFFLOADED), cs->n[CSUM_STAT_GUEST_PARTIAL],
            cs->n[CSUM_STAT_SW_VERIFIED]);
    const struct sim_window *w = &r->window;
    if (c->warmup_ns) {
        uint64_t span = w->end_ns - w->start_ns;
        const uint64_t *wf = w->dp.fcache.n;
        fprintf(out,
                "window %.3f-%.3f ms: offered %.3f Mpps, delivered %.3f Mpps; lookups %" PRIu64
                ": emc %" PRIu64 ", smc %" PRIu64 ", megaflow %" PRIu64 ", upcalls %" PRIu64 "\n",
                (double)w->start_ns / 1e6, (double)w->end_ns / 1e6,
                report_per_s(w->offered, span) / 1e6, report_per_s(w->delivered, span) / 1e6,
                wf[FCACHE_STAT_LOOKUPS], wf[FCACHE_STAT_EMC_HITS], wf[FCACHE_STAT_SMC_HITS],
                wf[FCACHE_STAT_MEGAFLOW_HITS], wf[FCACHE_STAT_UPCALLS]);
    }
    const struct sim_hist *h = &r->latency;
    if (h->count)
        fprintf(out,
                "latency (ns): p50 %" PRIu64 ", p99 %" PRIu64 ", p99.9 %" PRIu64 ", max %" PRIu64
                " (%" PRIu64 " packets)\n",
                sim_hist_percentile(h, 50), sim_hist_percentile(h, 99),
                sim_hist_percentile(h, 99.9), h->max, h->count);
    for (size_t i = 0; i < r->n_violations; i++) {
        const struct sim_verify_violation *v = &r->violations[i];
        fprintf(out, "violation: %s", sim_verify_reason_name((enum sim_verify_reason)v->reason));
        if (v->tagged)
            fprintf(out, " (stream %u flow %" PRIu64 " seq %" PRIu64 ")", v->model_id, v->flow_id,
                    v->seq);
        fprintf(out, ": %s\n", v->detail);
    }
    bool conserved = r->offered + r->copies == r->delivered + r->dropped + r->in_flight;
    fprintf(out,
            "totals: offered %" PRIu64 " + copies %" PRIu64 " = delivered %" PRIu64
            " + dropped %" PRIu64 " + in flight %" PRIu64 " (%s)\n",
            r->offered, r->copies, r->delivered, r->dropped, r->in_flight,
            conserved ? "conserved" : "NOT CONSERVED");
}
