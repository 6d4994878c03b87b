/* calibrate.h: measuring a cost profile's per-event costs on this machine.
 *
 * The cost model (profile.h) charges a poll sum_e count_e x cost_e, the
 * counts coming from the core's counters (engine.h: sim_poll_counts()).
 * Calibration runs the real core on dummy ports, one poll at a time,
 * times each dp_pmd_poll() with the caller's cycle counter, and counts
 * each poll's events with that same function. A catalogue of workloads
 * (below) varies what the core does so that each event's count moves
 * independently of the others: burst sizes (rx and send calls against
 * packets), flow counts and cache knobs (EMC, SMC, classifier, the
 * direct path, upcalls), rule sets of 1 to 16 masks (subtables probed),
 * checksums completed and verified at three frame sizes (per packet
 * against per byte), VXLAN push and pop, action lists, drops, truncated
 * frames (received but never parsed), idle polls.
 *
 * Measurement. Each workload runs 'repeats' times on a fresh datapath
 * (same seed: the same events each time): warm-up polls, then 'polls'
 * timed polls. Between polls, untimed, the harness writes the next burst
 * of frames from a traffic model (sim/traffic.h) into pool buffers,
 * marks them as the workload's device would (a guest's PARTIAL checksum,
 * a NIC's GOOD verdicts, a truncated capture), injects them, and collects
 * and frees what the ports sent. Within a run, a poll that took more than
 * 3 times the run's median poll is left out with its events (another
 * thread's time slice or an interrupt on a shared machine: no event
 * explains it; the polls of a workload are alike by design). A row is a
 * workload's events per poll and the median over its runs of cycles per
 * poll.
 *
 * Estimator. The costs c >= 0 (cycles) minimise the sum over rows of
 * ((counts . c - y) / y)^2, y a row's median cycles per poll: least
 * squares on the relative error, so an idle poll of 100 cycles weighs as
 * much as a burst of 32 packets of 20 000; solved by non-negative least
 * squares (nnls.h). Events whose counts are exactly collinear over the
 * catalogue (every upcall installs one megaflow) cannot be told apart:
 * their common cost goes to one of them and the report names the pair.
 * Events no workload produces (the NIC driver costs: dummy ports have no
 * driver) get 0 and are reported as not exercised.
 *
 * No globals; one thread (the caller's); the caller pins it. */
#ifndef SIM_CALIBRATE_H
#define SIM_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.h"

/* What the harness reads time with. */
struct sim_calib_clock {
    uint64_t (*cycles)(void); /* the cycle counter, e.g. the TSC */
    void (*loop)(void);       /* what a PMD loop iteration does beside the
                               * poll (reading its clock), timed with it;
                               * NULL: nothing */
};

struct sim_calib_opts {
    unsigned repeats;         /* runs per workload, >= 1 (the median is kept) */
    unsigned polls;           /* timed polls per run, >= 1 */
    unsigned warm_polls;      /* untimed polls before them */
    const char *only;         /* measure only the workloads whose name starts
                               * with this (NULL: all); for looking at one
                               * workload, not for a profile */
    bool quick;               /* a reduced catalogue (one burst size and
                               * frame size per workload) */
    /* Called before each workload (NULL: never). */
    void (*progress)(void *aux, size_t done, size_t total, const char *name);
    void *aux;
};

/* Runs per workload a row keeps for the bootstrap (more are measured but
 * only the first ones resampled). */
#define SIM_CALIB_MAX_RUNS 32

/* One measured workload. */
struct sim_calib_row {
    char name[64];
    const char *isolates;        /* the costs it is there for */
    unsigned burst, frame;       /* packets per poll, frame bytes (0: mixed) */
    double counts[SIM_COST_N];   /* events per poll */
    double cycles;               /* median cycles per poll over the runs */
    double cycles_min, cycles_max;
    /* Each run's cycles per poll, in the order measured: run k of every
     * row is round k (the rounds sim_calib_bootstrap() resamples). */
    double run_cycles[SIM_CALIB_MAX_RUNS];
    unsigned n_runs;
    unsigned polls_discarded;    /* over all runs (see below) */
    double fitted;               /* counts . cost_cycles */
};

struct sim_calib {
    struct sim_calib_row *rows;
    size_t n_rows;
    double cost_cycles[SIM_COST_N];
    /* Per event: -1 identified; -2 never counted by any workload; else
     * the event whose counts it always equals up to a factor (its cost
     * then carries both). */
    int twin[SIM_COST_N];
    double rms_rel_err, max_rel_err; /* of fitted against measured rows */
    /* Per event, half the 5-95% bootstrap interval of its cost (cycles);
     * -1 before sim_calib_bootstrap() or with fewer than 2 rounds. */
    double uncertainty_cycles[SIM_COST_N];
};

/* Measures every workload and fits the costs. Returns 0 with *out filled
 * (free with sim_calib_free), or -1 with the reason in err. The dummy
 * backend must be registered. */
int sim_calibrate(const struct sim_calib_clock *clk, const struct sim_calib_opts *opts,
                  struct sim_calib *out, char *err, size_t errlen);

/* Refits the costs to out->rows (after a caller changed a row's cycles or
 * counts): fills cost_cycles, twin, fitted and the errors. Returns 0, or
 * -1 (no memory). */
int sim_calib_fit(struct sim_calib *c);

/* The uncertainty of each fitted cost: 'replicates' refits to rows whose
 * cycles are the median of rounds drawn with replacement (the same draw
 * for every row: a round's runs were measured at about the same time and
 * share its disturbances), seeded by 'seed'; uncertainty_cycles[e] is
 * half the distance between the 5th and 95th percentiles of event e's
 * refitted costs. cost_cycles stays the fit to the medians of all runs.
 * Returns 0, or -1 (no memory). */
int sim_calib_bootstrap(struct sim_calib *c, unsigned replicates, uint64_t seed);

void sim_calib_free(struct sim_calib *c);

/* ---- a device's own cost ------------------------------------------------------ */

/* Dummy ports cost little (an in-memory queue); a real device's driver
 * costs more per packet (descriptors, buffer allocation and release, a
 * copy for net_pcap). sim_calib_device() times polls that receive a burst
 * from rx queue 0 of 'rx' and send it at once on tx queue 0 of 'tx' (no
 * datapath), with the outlier rule above and the median of the runs, and
 * gives the cycles per packet moved; polls that received nothing are left
 * out. refill and drain, when set, run untimed around each poll (a device
 * that needs packets fed or collected). The NIC costs of a profile are
 * the difference between a real pair and the dummy pair
 * (sim_calib_dummy_io()), measured alike. */
struct sim_calib_dev {
    struct netdev *rx, *tx;
    void (*refill)(void *aux, struct netdev *rx, uint64_t now);
    void (*drain)(void *aux, struct netdev *tx);
    void *aux;
};

int sim_calib_device(const struct sim_calib_clock *clk, const struct sim_calib_opts *opts,
                     const struct sim_calib_dev *dev, double *cycles_per_packet, char *err,
                     size_t errlen);

/* sim_calib_device() on two dummy ports, refilled with bursts of 32
 * 64-byte frames and drained, as the core calibration's are. */
int sim_calib_dummy_io(const struct sim_calib_clock *clk, const struct sim_calib_opts *opts,
                       double *cycles_per_packet, char *err, size_t errlen);

/* The estimator in one sentence, for reports and profiles. */
extern const char sim_calib_estimator[];

#endif
