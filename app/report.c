/* report.c: text and JSON reports from counter snapshots. */
#include "report.h"

#include <inttypes.h>
#include <string.h>

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
    fprintf(out, "drops:%s\n", t.dropped ? "" : " none");
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
