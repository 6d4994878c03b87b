/* report.h: the text and JSON reports of the flowswitch command.
 *
 * Every report is produced from a counter snapshot (struct dp_stats, or
 * the difference of two) and the ports' descriptions; nothing here reads a
 * PMD's live counters. */
#ifndef FS_REPORT_H
#define FS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dp.h"

/* Writes s as a JSON string literal (quotes and escapes). */
void report_json_str(FILE *out, const char *s);

/* The per-port and per-drop-reason summary of a finished run (replay, run,
 * sim): ports, drops, parse results, checksums, flow caches, totals and
 * whether conservation holds; changes_applied counts a replay's [change]
 * sections. */
void report_summary(FILE *out, bool json, const struct dp *dp, const struct dp_stats *s,
                    const char *cfg_path, uint64_t changes_applied);

/* The drops of a snapshot by reason, and the parse errors behind
 * parse_error: text lines (the non-zero ones, as the summary shows them),
 * or one JSON object {"total": N, "drops": {...}, "parse_errors": {...}}
 * with every reason. */
void report_drops(FILE *out, bool json, const struct dp_stats *s);

/* What one PMD did over an interval, for report_pmd(). */
struct report_pmd {
    unsigned index;
    int core;                 /* -1: not pinned */
    unsigned n_rxqs;
    double secs;              /* the interval */
    double cycles_per_ns;     /* of the cycle counter */
    uint64_t busy_iterations, idle_iterations;
    uint64_t busy_cycles, idle_cycles;
    const struct dp_stats *d; /* the counters' change over the interval */
};

/* One PMD's statistics in the style of ovs-appctl dpif-netdev/pmd-perf-show,
 * or as one JSON object (the caller writes the enclosing list). */
void report_pmd(FILE *out, bool json, const struct report_pmd *p, unsigned n_ports);

struct scenario;
struct sim_results;

/* The report of a simulation: per port (offered, forwarded, rates, drops,
 * send calls and batch sizes, what its sink verified), per PMD (load,
 * busy share), drops by reason, cache hits per stage, checksums by place
 * (host software, NIC, left to guests), latency percentiles and the
 * conservation of packets. Deterministic: no wall-clock figure. */
void report_sim(FILE *out, bool json, const struct scenario *sc,
                const struct sim_results *res);

#endif
