/* pmd.h: the PMD thread runtime.
 *
 * One polling thread per configured PMD, each owning a struct dp_pmd (its
 * own output batches, caches and counters) and a set of rx queues:
 *  - queues named in the affinity list go to the PMD given there (a PMD
 *    with pinned queues is isolated: it gets no others, as in OVS);
 *  - the other queues are dealt round-robin, in port then queue order, to
 *    the PMDs without pinned queues (to all PMDs if every one has some);
 *  - PMD i transmits on tx queue i of a port that has at least as many tx
 *    queues as there are PMDs; otherwise on queue i % n_txq, and the PMDs
 *    sharing a queue are serialised by a per-queue mutex (a locking proxy
 *    netdev in front of the port: ports with enough queues pay nothing).
 * The poll loop reads the monotonic clock once per iteration, counts
 * busy/idle iterations and their cycles (fs_cycles()), and publishes a
 * stats snapshot every 100 ms for the control thread. On stop each PMD
 * flushes every output queue before its thread exits. The main thread only
 * controls and reads snapshots; after pmd_runtime_stop() every counter of
 * every dp_pmd may be read directly. */
#ifndef FS_PMD_H
#define FS_PMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dp.h"
#include "sys.h"

#define PMD_MAX 32
#define PMD_MAX_AFFINITY 256

/* Cache line of the target: the per-PMD layout is padded to it. */
#define PMD_CACHE_LINE FS_CACHE_LINE

struct pmd_config {
    unsigned n_pmds;     /* 1..PMD_MAX */
    int cores[PMD_MAX];  /* CPU to pin PMD i to, -1: not pinned */
    bool priority_set;   /* set the PMD threads' nice value to 'priority' */
    int priority;        /* -20..19; a value the system refuses is reported
                          * and the PMD runs at the default */
    struct dp_rxq_pin affinity[PMD_MAX_AFFINITY]; /* pmd: the PMD index */
    unsigned n_affinity;
    uint32_t idle_sleep_us; /* 0: busy poll; else sleep this long when idle */
    /* Called at the start / end of every PMD thread (NULL: none), e.g. to
     * register the thread with DPDK. */
    int (*thread_start)(void);
    void (*thread_stop)(void);
};

void pmd_config_default(struct pmd_config *c);

/* Parses a CPU list "1,2" or "1-3,5" into c->cores / c->n_pmds. Returns 0
 * or -1 with the reason in err. */
int pmd_config_parse_cores(struct pmd_config *c, const char *s, char *err,
                           size_t errlen);

/* Parses "PORT:QID:PMD[,...]" (PORT a port name of dp; PMD the core given
 * in the cores list, or the PMD index when PMDs are not pinned) into
 * c->affinity. Call after the cores are set. Returns 0 or -1. */
int pmd_config_parse_affinity(struct pmd_config *c, const struct dp *dp,
                              const char *s, char *err, size_t errlen);

/* What a PMD publishes for the control thread (and what the final report
 * reads): its loop's own counters and a snapshot of its datapath counters.
 * Cycles are ticks of fs_cycles(). */
struct pmd_stats {
    uint64_t busy_iterations, idle_iterations;
    uint64_t busy_cycles, idle_cycles;
    uint64_t time_ns;     /* monotonic time of the snapshot */
    struct dp_stats dp;
    struct fcache_memory mem; /* the PMD's flow caches */
};

struct pmd_runtime;

/* Builds the PMDs of dp (dp_pmd_create each), assigns rx and tx queues.
 * Returns 0 or -1 with the reason in err. */
int pmd_runtime_create(struct dp *dp, const struct pmd_config *cfg,
                       struct pmd_runtime **out, char *err, size_t errlen);

/* Starts one thread per PMD that has rx queues, named "pmd-N", pinned
 * and prioritised as configured. Returns 0 or -1. */
int pmd_runtime_start(struct pmd_runtime *rt, char *err, size_t errlen);

/* True if PMD i has a thread (it has rx queues and the runtime runs). */
bool pmd_runtime_running(const struct pmd_runtime *rt, unsigned i);

/* Asks every PMD to stop, waits for them (each flushes its queues), and
 * takes a final snapshot. Safe to call twice. */
void pmd_runtime_stop(struct pmd_runtime *rt);

/* Destroys the PMDs (after stop). NULL is ignored. */
void pmd_runtime_destroy(struct pmd_runtime *rt);

unsigned pmd_runtime_n_pmds(const struct pmd_runtime *rt);

/* How long an idle PMD sleeps per iteration (pmd_config.idle_sleep_us). */
uint32_t pmd_runtime_idle_sleep_us(const struct pmd_runtime *rt);

/* The dp_pmd of every PMD, for dp_stats_collect() (read them only after
 * pmd_runtime_stop). */
struct dp_pmd *const *pmd_runtime_pmds(const struct pmd_runtime *rt);

/* Copies the latest published snapshot of PMD i (a large struct: keep it
 * off small stacks). */
void pmd_runtime_snapshot(struct pmd_runtime *rt, unsigned i, struct pmd_stats *st);

/* Prints per-PMD statistics since 'prev' (NULL: since start; an array of
 * n_pmds snapshots, updated to the current ones), in the style of
 * ovs-appctl dpif-netdev/pmd-perf-show, or as one JSON object per line. */
void pmd_runtime_print_stats(struct pmd_runtime *rt, struct pmd_stats *prev,
                             FILE *out, bool json);

/* ---- keep-alive (keepalive.h) ---- */

struct ka;

/* Gives PMD i the heartbeat slot i of ka (NULL: none) and marks the PMDs
 * without rx queues IDLE there. Before pmd_runtime_start(). */
void pmd_runtime_set_keepalive(struct pmd_runtime *rt, struct ka *ka);

/* Makes every PMD beat its heartbeat once per poll iteration (on) or not
 * (off), from its next iteration; any thread. A PMD runs its poll loop
 * specialised for keep-alive on or off, so off costs the loop nothing. It
 * beats before its idle sleep, so an idle PMD is silent for at most one
 * idle sleep and one poll (control_ka_interval_check()). */
void pmd_runtime_keepalive(struct pmd_runtime *rt, bool on);

/* Test hook: PMD i stops polling (and beating) until released, as a PMD
 * stuck in a device call would. */
void pmd_runtime_test_stall(struct pmd_runtime *rt, unsigned i, bool stall);

/* Runs n iterations of PMD i's poll loop (keep-alive as set) on the
 * calling thread, without publishing: for a PMD that is not started, to
 * count the loop's instructions (bench/bench_keepalive.c). */
void pmd_runtime_iterate(struct pmd_runtime *rt, unsigned i, uint64_t n);

/* ---- requests served at the PMDs' quiescent point (dp.h) ---- */

/* Posts req to every PMD (a PMD with no thread is served here) and waits
 * up to timeout_ms for their answers; answered[i] says which came. Returns
 * how many did not answer: a stalled PMD keeps its request and serves it
 * when it resumes; the next call waits for that first. Control side only,
 * one thread at a time. */
unsigned pmd_runtime_request(struct pmd_runtime *rt, enum dp_pmd_request req,
                             unsigned timeout_ms, bool answered[PMD_MAX]);

/* Makes the PMDs that have no thread take pending rule and knob changes
 * (dp_pmd_sync()), so that replaced tables can be freed. Control side. */
void pmd_runtime_sync_idle(struct pmd_runtime *rt);

/* Bit i set: PMD i has not taken the rule table or knob set published
 * last (dp_pmd_current()). Control side. */
uint32_t pmd_runtime_lagging(const struct pmd_runtime *rt);

/* After a DUMP request PMD i answered: its megaflows (free with
 * dp_megaflow_dump_free()), NULL if none. */
struct dp_megaflow_dump *pmd_runtime_take_dump(struct pmd_runtime *rt, unsigned i);

/* Writes PMD i's statistics between the snapshots base (NULL: since the
 * runtime started) and cur, as one text block or one JSON object
 * (report_pmd()). */
void pmd_runtime_report(struct pmd_runtime *rt, unsigned i, const struct pmd_stats *cur,
                        const struct pmd_stats *base, FILE *out, bool json);

/* Prints the rx queue and tx queue assignment. */
void pmd_runtime_print_assignment(const struct pmd_runtime *rt, FILE *out);

/* `flowswitch run`: see app/run.c. */
int fs_cmd_run(int argc, char **argv);

#endif
