/* exp.h: experiments and sweeps: many simulations of variations of a
 * scenario, gathered into one table, plotted and put on one report page.
 *
 * A point is one simulation: a scenario file with --set overrides
 * (scenario.h), run by sim_run(), its figures read from the results'
 * measurement window (rates, cache hit shares, latency) and from the
 * whole run (checksums by place per packet the datapath received, send
 * calls). A table holds the points of
 * an experiment with their parameter values as text. The outputs, into a
 * directory: data.csv and data.json (every point, every figure), one
 * gnuplot script per plot with its data inline (NAME.gp) rendered as
 * NAME.svg and NAME.png, and index.html with the tables, the plots, the
 * scenario texts and the profile: a page readable from the file system,
 * without a server or scripts. */
#ifndef FS_EXP_H
#define FS_EXP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXP_PARAMS_MAX 6
#define EXP_PARAM_LEN 64
#define EXP_CDF_POINTS 56

/* The figures of a point: X(ENUM, "column name", "unit", "what"). */
#define EXP_METRICS(X)                                                                     \
    X(OFFERED_MPPS, "offered_mpps", "Mpps", "offered in the window")                       \
    X(MPPS, "mpps", "Mpps", "delivered in the window")                                     \
    X(GBPS, "gbps", "Gb/s", "delivered in the window, on the wire")                        \
    X(RX_MISSED, "rx_missed_share", "", "offered packets missed by full rx rings")         \
    X(EMC, "emc_share", "", "lookups answered by the EMC")                                 \
    X(SMC, "smc_share", "", "lookups answered by the SMC")                                 \
    X(MEGAFLOW, "megaflow_share", "", "lookups answered by the megaflow classifier")       \
    X(UPCALL, "upcall_share", "", "lookups that went to the rule table")                   \
    X(SUBTABLES, "subtables", "", "megaflow subtables at the end of the run")              \
    X(CS_GUEST, "csum_guest_sender", "per packet", "checksums the sending guests computed") \
    X(CS_EAGER, "csum_host_rx", "per packet", "checksums the host completed at vhost rx")   \
    X(CS_EGRESS, "csum_host_egress", "per packet", "checksums the host completed at egress") \
    X(CS_NIC, "csum_nic", "per packet", "checksums left to NIC offload")                   \
    X(CS_LEFT, "csum_left_to_guest", "per packet", "checksums left to the receiving guest") \
    X(CS_VERIFIED, "csum_verified", "per packet", "checksums the host verified")           \
    X(CS_BYTES, "csum_sw_bytes", "per packet", "bytes the host summed (both)")             \
    X(SENDS, "send_calls", "", "send calls over the run")                                  \
    X(PKTS_PER_SEND, "pkts_per_send", "", "packets per send call")                         \
    X(LAT_P50, "latency_p50_us", "us", "median latency")                                   \
    X(LAT_P99, "latency_p99_us", "us", "99th percentile latency")                          \
    X(LAT_P999, "latency_p99_9_us", "us", "99.9th percentile latency")                     \
    X(LAT_MAX, "latency_max_us", "us", "largest latency")                                  \
    X(PMD_MIN, "pmd_mpps_min", "Mpps", "the least loaded PMD's rate")                      \
    X(PMD_MAX, "pmd_mpps_max", "Mpps", "the most loaded PMD's rate")                       \
    X(BALANCE, "pmd_balance", "", "least / most loaded PMD")                               \
    X(BUSY, "busy_share", "", "mean PMD busy share")                                       \
    X(REL, "relative", "", "relative to the experiment's baseline")

enum exp_metric {
#define EXP_M_ENUM_(e, name, unit, desc) EXP_M_##e,
    EXP_METRICS(EXP_M_ENUM_)
#undef EXP_M_ENUM_
    EXP_M_N
};

const char *exp_metric_name(enum exp_metric m);
const char *exp_metric_unit(enum exp_metric m);
const char *exp_metric_desc(enum exp_metric m);

/* The steady-state check of a point (exp_check_steady()): the point is
 * rerun over the first half of its window only, and its figures over the
 * half compared with those over the whole window. Since the whole is the
 * mean of its halves, half - whole is half of (first half - second half).
 * Steady: the delivered share of the offered packets within
 * EXP_STEADY_RATE_TOL (relative) and the EMC and SMC hit shares within
 * EXP_STEADY_SHARE_TOL (absolute). */
#define EXP_STEADY_RATE_TOL 0.025
#define EXP_STEADY_SHARE_TOL 0.02

enum exp_steady { EXP_STEADY_UNCHECKED = -1, EXP_STEADY_NO = 0, EXP_STEADY_YES = 1 };

struct exp_point {
    char param[EXP_PARAMS_MAX][EXP_PARAM_LEN];
    double m[EXP_M_N];
    int steady;                              /* enum exp_steady */
    double half_delivered, half_emc, half_smc; /* over the first half of the
                                              * window: delivered / offered,
                                              * EMC and SMC hit shares */
    unsigned n_cdf;                          /* latency CDF: value, share */
    double cdf_us[EXP_CDF_POINTS], cdf_p[EXP_CDF_POINTS];
};

struct exp_table {
    unsigned n_params;
    const char *param_name[EXP_PARAMS_MAX];
    struct exp_point *points;
    size_t n_points, cap;
};

/* A new point at the end of t (parameters empty, figures 0), or NULL if
 * out of memory. */
struct exp_point *exp_table_add(struct exp_table *t);
void exp_table_free(struct exp_table *t);

/* The first point whose parameters equal vals[0..n) (NULL: any), or NULL. */
const struct exp_point *exp_table_find(const struct exp_table *t, const char *const *vals,
                                       unsigned n);

/* Runs scenario 'path' with the overrides sets[0..n) and fills pt's
 * figures. Returns 0, or -1 with the reason in err (the scenario's error,
 * or a run that lost a packet or found a violation). */
int exp_run_point(const char *path, const char *const *sets, size_t n_sets,
                  struct exp_point *pt, char *err, size_t errlen);

/* Reruns the point (the same scenario and sets) over the first half of
 * its measurement window and sets pt->steady and pt->half_* (above).
 * Returns 0, or -1 with the reason in err. */
int exp_check_steady(const char *path, const char *const *sets, size_t n_sets,
                     struct exp_point *pt, char *err, size_t errlen);

/* ---- plots and the report --------------------------------------------------- */

enum exp_plot_kind {
    EXP_PLOT_LINES, /* y against a numeric x, one line per series */
    EXP_PLOT_BARS,  /* clustered bars: x categories, one bar per series */
    EXP_PLOT_CDF,   /* latency CDFs, one per series */
};

/* A published figure drawn beside ours: at x (LINES), at the category
 * named 'cat' (BARS). */
struct exp_ref {
    double x;
    const char *cat;
    double y;
};

/* Optional parameter references in a plot are 1-based (EXP_P(k) for
 * parameter k), so that 0, a field left out, means none. */
#define EXP_P(k) ((k) + 1)

struct exp_plot {
    const char *file;            /* NAME of NAME.gp, NAME.svg, NAME.png */
    const char *title, *xlabel, *ylabel;
    enum exp_plot_kind kind;
    int x_param;                 /* the parameter on x (unused by CDF) */
    int x2;                      /* BARS: EXP_P(k) joins parameter k to the
                                  * category ("x / k"), 0: none */
    int series[2];               /* EXP_P(k): the parameters naming the
                                  * series, 0: none */
    enum exp_metric metric;      /* y (unused by CDF) */
    /* When set, the series are these figures instead (one line or bar per
     * figure, named by what it is), the series[] unused. */
    const enum exp_metric *metrics;
    size_t n_metrics;
    double y_scale;              /* y = metric x y_scale (0: 1) */
    bool logx, logy;
    /* Only the points whose parameter i is where[i] (NULL: any). */
    const char *where[EXP_PARAMS_MAX];
    const struct exp_ref *refs;  /* published figures, NULL: none */
    size_t n_refs;
    const char *ref_title;       /* their legend */
    double vline;                /* a vertical marker at this x (0: none) */
    const char *vline_label;
    const char *caption;         /* under the plot on the page */
    const char *series_title;    /* the legend of a plot without series
                                  * (NULL: the metric's description) */
};

/* A published figure against this run's: the page's table "Published
 * figures against this run" and data.json's "published". */
#define EXP_PUB_OFF 0.25 /* |ours / published - 1| above this needs a reason */

struct exp_pub {
    char what[200];              /* the figure, e.g. "PVP gain, 10 flows" */
    char source[300];            /* where it was published */
    char unit[16];
    double published, ours;
    char reason[700];            /* why ours is off by more than EXP_PUB_OFF */
};

struct exp_text {
    const char *name;
    const char *text;
};

struct exp_report {
    const char *name;            /* the experiment or "sweep" */
    const char *title;
    const char *summary;         /* what it shows, one paragraph (plain text) */
    const char *reading;         /* how to read it (plain text), NULL: none */
    const struct exp_text *refs; /* published sources: name = citation, text = URL */
    size_t n_refs;
    const char *findings;        /* what this run found (plain text), NULL: none */
    const struct exp_pub *pubs;  /* published figures against ours */
    size_t n_pubs;
    const char *rel_desc;        /* what "relative" is on this page (NULL: the
                                  * metric's description) */
    const struct exp_table *table;
    const enum exp_metric *columns; /* the figures the page's table shows */
    size_t n_columns;
    const struct exp_plot *plots;
    size_t n_plots;
    const struct exp_text *scenarios; /* name, text */
    size_t n_scenarios;
    const char *profile_text;    /* the cost profile (JSON) */
    const char *command;         /* the command line */
};

/* Writes data.csv, data.json, the plots (gnuplot, SVG and PNG) and
 * index.html into dir (created if missing). Returns 0, or -1 with the
 * reason in err (gnuplot missing or failing, a file that cannot be
 * written). */
int exp_write_report(const struct exp_report *r, const char *dir, char *err, size_t errlen);

/* Reads a whole file into a new NUL-terminated string (free it), or NULL. */
char *exp_read_file(const char *path);

#endif
