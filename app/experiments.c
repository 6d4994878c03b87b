/* experiments.c: `flowswitch sim experiment NAME`, the seed experiments.
 *
 *   flowswitch sim experiment NAME [--out-dir DIR] [--quick]
 *                             [--profile PROFILE.json|default]
 *   flowswitch sim experiment list
 *
 * Each experiment simulates variations of the scenarios it carries
 * (sim/experiments/NAME.ini, embedded in the binary and written to
 * DIR/scenarios/), with the reference cost profile (sim/profiles/
 * reference.json, also embedded; --profile another), and writes its table,
 * plots and page (exp.h) into DIR (default ./NAME). --quick runs the
 * reduced set of points the tests use. Each reproduces the shape of a
 * published OVS-DPDK result, cited on its page with the figure beside
 * ours. */
#include "experiments.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "embedded.h"
#include "exp.h"
#include "jobs.h"
#include "sys.h"
#include "util.h"

#define EX_EXIT_OK 0
#define EX_EXIT_USAGE 1
#define EX_EXIT_FAILED 2
#define EX_MAX_SETS 8

struct ex_ctx {
    const char *dir;
    char scen_dir[4096];
    char profile_set[8200];
    char *profile_text;
    bool quick;
    struct exp_table t;
    struct jobs_points q;       /* the points ex_run() queued, run by ex_flush() */
    unsigned n_jobs;
    struct exp_text scen[4];
    size_t n_scen;
    char findings[4096];
    bool steady;                 /* check each point's steady state */
    const char *profile_override; /* a sim.profile=... for the next points */
    struct exp_pub pubs[12];     /* published figures against ours */
    size_t n_pubs;
};

/* Adds a published figure against ours; 'reason' (printf) says, with
 * numbers, why they differ where they do by more than EXP_PUB_OFF. */
static void __attribute__((format(printf, 7, 8)))
ex_pub(struct ex_ctx *c, const char *what, const char *source, const char *unit,
       double published, double ours, const char *reason, ...)
{
    if (c->n_pubs >= sizeof c->pubs / sizeof c->pubs[0])
        return;
    struct exp_pub *p = &c->pubs[c->n_pubs++];
    snprintf(p->what, sizeof p->what, "%s", what);
    snprintf(p->source, sizeof p->source, "%s", source);
    snprintf(p->unit, sizeof p->unit, "%s", unit);
    p->published = published;
    p->ours = ours;
    va_list ap;
    va_start(ap, reason);
    vsnprintf(p->reason, sizeof p->reason, reason, ap);
    va_end(ap);
}

/* Writes the embedded profile 'name' into DIR and returns the
 * sim.profile=PATH setting for it in buf, or NULL (err says why). */
static const char *ex_profile(struct ex_ctx *c, const char *name, char *buf, size_t size,
                              char *err, size_t errlen)
{
    const char *text = fs_embedded(name);
    char path[4300];
    if (!text) {
        fs_errf(err, errlen, "%s: not built into this binary", name);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", c->dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        fs_errf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *abs = realpath(path, NULL);
    snprintf(buf, size, "sim.profile=%s", abs ? abs : path);
    free(abs);
    return buf;
}

/* Writes embedded scenario 'name' into DIR/scenarios and lists it for the
 * page. */
static int ex_scenario(struct ex_ctx *c, const char *name, char *err, size_t errlen)
{
    const char *text = fs_embedded(name);
    char path[4300];
    if (!text) {
        fs_errf(err, errlen, "%s: not built into this binary", name);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", c->scen_dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        fs_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (c->n_scen < sizeof c->scen / sizeof c->scen[0])
        c->scen[c->n_scen++] = (struct exp_text){name, text};
    return 0;
}

/* One point: scenario 'scen' with sets, its parameters vals; queued
 * (ex_flush() runs it, with its steady-state check if c->steady). */
static int ex_run(struct ex_ctx *c, const char *scen, const char *const *vals,
                  const char *const *sets, size_t n_sets, char *err, size_t errlen)
{
    const char *all[EX_MAX_SETS + 1];
    char path[4300];
    if (n_sets > EX_MAX_SETS) {
        fs_errf(err, errlen, "too many settings");
        return -1;
    }
    for (size_t i = 0; i < n_sets; i++)
        all[i] = sets[i];
    all[n_sets] = c->profile_override ? c->profile_override : c->profile_set;
    snprintf(path, sizeof path, "%s/%s", c->scen_dir, scen);
    struct exp_point *pt = exp_table_add(&c->t);
    if (!pt) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned k = 0; k < c->t.n_params; k++)
        snprintf(pt->param[k], sizeof pt->param[k], "%s", vals[k]);
    if (jobs_points_add(&c->q, c->t.n_points - 1, path, all, n_sets + 1, c->steady)) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Runs the points ex_run() queued (c->n_jobs at a time, jobs.h): their
 * figures are in the table after it. */
static int ex_flush(struct ex_ctx *c, char *err, size_t errlen)
{
    c->q.t = &c->t;
    return jobs_points_run(&c->q, c->n_jobs, err, errlen);
}

static double ex_get(const struct ex_ctx *c, const char *const *vals, enum exp_metric m)
{
    const struct exp_point *p = exp_table_find(&c->t, vals, c->t.n_params);
    return p ? p->m[m] : NAN;
}

/* ---- checksum-placement -------------------------------------------------------------- */

enum { CP_TOPO, CP_PLACE, CP_FRAME };

static const enum exp_metric cp_places[] = {EXP_M_CS_GUEST, EXP_M_CS_EAGER, EXP_M_CS_EGRESS,
                                            EXP_M_CS_NIC, EXP_M_CS_LEFT};
static const struct exp_ref cp_refs[] = {{.cat = "NIC-to-NIC", .y = 13.055 / 13.581}};
static const enum exp_metric cp_cols[] = {EXP_M_MPPS, EXP_M_REL, EXP_M_CS_GUEST,
                                          EXP_M_CS_EAGER, EXP_M_CS_EGRESS, EXP_M_CS_NIC,
                                          EXP_M_CS_LEFT, EXP_M_CS_BYTES};
static const struct exp_plot cp_plots[] = {
    {.file = "checksums", .title = "Checksums computed per packet, by place (64-byte frames)",
     .xlabel = "traffic / placement", .ylabel = "checksums per packet",
     .kind = EXP_PLOT_BARS, .x_param = CP_TOPO, .x2 = EXP_P(CP_PLACE), .metrics = cp_places,
     .n_metrics = 5, .where = {[CP_FRAME] = "64"},
     .caption = "Where each packet's checksum is computed: by the sending guest, by the "
                "host at vhost rx (eager), by the host at egress (lazy), by the NIC, or left "
                "to the receiving guest (NEEDS_CSUM)."},
    {.file = "throughput", .title = "Capacity of one PMD by checksum placement (64 B)",
     .xlabel = "traffic", .ylabel = "Mpps", .kind = EXP_PLOT_BARS, .x_param = CP_TOPO,
     .series = {EXP_P(CP_PLACE)}, .metric = EXP_M_MPPS, .where = {[CP_FRAME] = "64"},
     .caption = "Packets per second one PMD forwards (offered above its capacity)."},
    {.file = "relative", .title = "Capacity relative to the lazy placement (64 B)",
     .xlabel = "traffic", .ylabel = "capacity / lazy placement's", .kind = EXP_PLOT_BARS,
     .x_param = CP_TOPO, .series = {EXP_P(CP_PLACE)}, .metric = EXP_M_REL,
     .where = {[CP_FRAME] = "64"}, .refs = cp_refs, .n_refs = 1,
     .ref_title = "OVS v1 eager sum at send, phy-phy 64 B: 13.055/13.581",
     .caption = "Each placement's capacity over the lazy placement's; the diamond is OVS's "
                "first (eager) design in phy-phy, 3.9% below its baseline."},
    {.file = "throughput-1518", .title = "Capacity of one PMD by checksum placement (1518 B)",
     .xlabel = "traffic", .ylabel = "Mpps", .kind = EXP_PLOT_BARS, .x_param = CP_TOPO,
     .series = {EXP_P(CP_PLACE)}, .metric = EXP_M_MPPS, .where = {[CP_FRAME] = "1518"},
     .caption = "The same at 1518-byte frames, where a sum costs more."},
};
static const struct exp_text cp_ref_texts[] = {
    {"Gao Zhenyu, \"[PATCH v1] netdev-dpdk: Implement TCP/UDP TX cksum in ovs-dpdk side\", "
     "ovs-dev, August 2017: Ciara Loftus's test of the eager design (64 B, phy-phy with one "
     "port1 -> port2 rule) found 13.581 -> 13.055 Mpps (-3.9%); the author moved the sum to "
     "vhost rx (patchwork 802070)",
     "https://mail.openvswitch.org/pipermail/ovs-dev/2017-August/337477.html"},
};

static int ex_checksum_placement(struct ex_ctx *c, char *err,
                                 size_t errlen)
{
    static const char *const names[] = {"traffic", "placement", "frame"};
    static const struct {
        const char *topo, *scen;
        const char *sets[4][2]; /* guest, eager, lazy, nic: NULL first = n/a */
        bool has[4];
    } topos[] = {
        {"VM-to-NIC", "csum-vm-nic.ini",
         {{"port.vm0.caps=none"}, {"port.vm0.host-csum=eager"}, {NULL},
          {"port.p0.caps=tx-ip-csum,tx-l4-csum"}},
         {true, true, true, true}},
        {"VM-to-VM", "csum-vm-vm.ini",
         {{"port.vm0.caps=none", "port.vm1.caps=none"}, {"port.vm0.host-csum=eager"}, {NULL},
          {NULL}},
         {true, true, true, false}},
        {"NIC-to-NIC", "csum-nic-nic.ini",
         {{NULL}, {NULL}, {NULL}, {"port.p1.caps=tx-ip-csum,tx-l4-csum"}},
         {false, false, true, true}},
    };
    static const char *const places[] = {"guest", "eager (vhost rx)", "lazy (egress)",
                                         "NIC offload"};
    static const char *const frames[] = {"64", "1518"};
    c->t.n_params = 3;
    for (unsigned k = 0; k < 3; k++)
        c->t.param_name[k] = names[k];
    for (size_t i = 0; i < 3; i++)
        if (ex_scenario(c, topos[i].scen, err, errlen))
            return -1;
    for (size_t fi = 0; fi < (c->quick ? 1 : 2); fi++) {
        char fs[64];
        snprintf(fs, sizeof fs, "traffic.t0.frame-size=%s", frames[fi]);
        for (size_t i = 0; i < 3; i++) {
            for (int pl = 0; pl < 4; pl++) {
                if (!topos[i].has[pl])
                    continue;
                const char *sets[4] = {fs};
                size_t n = 1;
                for (int k = 0; k < 2; k++)
                    if (topos[i].sets[pl][k])
                        sets[n++] = topos[i].sets[pl][k];
                const char *vals[] = {topos[i].topo, places[pl], frames[fi]};
                if (ex_run(c, topos[i].scen, vals, sets, n, err, errlen))
                    return -1;
            }
        }
    }
    if (ex_flush(c, err, errlen))
        return -1;
    for (size_t i = 0; i < c->t.n_points; i++) {
        struct exp_point *p = &c->t.points[i];
        const char *base[] = {p->param[CP_TOPO], places[2], p->param[CP_FRAME]};
        p->m[EXP_M_REL] = p->m[EXP_M_MPPS] / ex_get(c, base, EXP_M_MPPS);
    }
    const char *nn_nic[] = {"NIC-to-NIC", places[3], "64"};
    ex_pub(c, "phy-phy 64 B: capacity with the checksum placement's code / without",
           "Gao Zhenyu, \"[PATCH v1] netdev-dpdk: Implement TCP/UDP TX cksum in ovs-dpdk "
           "side\", ovs-dev, August 2017 (Ciara Loftus's test: 13.055 / 13.581 Mpps)",
           "", 13.055 / 13.581, ex_get(c, nn_nic, EXP_M_REL),
           "the lazy placement tests one batch flag, not each packet");
    const char *vv_lazy[] = {"VM-to-VM", places[2], "64"};
    const char *vv_eager[] = {"VM-to-VM", places[1], "64"};
    const char *vn_nic[] = {"VM-to-NIC", places[3], "64"};
    const char *vn_eager[] = {"VM-to-NIC", places[1], "64"};
    snprintf(c->findings, sizeof c->findings,
             "VM-to-VM, 64 B: the lazy placement computes %.3g checksums per packet in the "
             "host and leaves %.3g per packet to the receiving guest; the eager one computes "
             "%.3g per packet at vhost rx and forwards %.1f%% %s than lazy. VM-to-NIC with "
             "NIC offload: lazy leaves %.3g per packet to the NIC, eager computes %.3g per "
             "packet itself (%.1f%% %s). NIC-to-NIC: nothing to compute in any placement "
             "(OVS's eager design still paid a per-packet test there: 3.9%%).",
             ex_get(c, vv_lazy, EXP_M_CS_EGRESS), ex_get(c, vv_lazy, EXP_M_CS_LEFT),
             ex_get(c, vv_eager, EXP_M_CS_EAGER),
             fabs(100 * (1 - ex_get(c, vv_eager, EXP_M_REL))),
             ex_get(c, vv_eager, EXP_M_REL) < 1 ? "less" : "more",
             ex_get(c, vn_nic, EXP_M_CS_NIC), ex_get(c, vn_eager, EXP_M_CS_EAGER),
             fabs(100 * (1 - ex_get(c, vn_eager, EXP_M_MPPS) / ex_get(c, vn_nic, EXP_M_MPPS))),
             ex_get(c, vn_eager, EXP_M_MPPS) < ex_get(c, vn_nic, EXP_M_MPPS) ? "slower"
                                                                             : "faster");
    return 0;
}

/* ---- rx-verdicts ------------------------------------------------------------------------ */

enum { RV_VERDICT, RV_FRAME, RV_PROFILE };

#define RV_SRC "Sugesh Chandran, \"[PATCH v2] tunneling: Improving tunneling performance " \
               "using DPDK Rx checksum offloading feature\", ovs-dev, 2016"
#define RV_REF "reference"
#define RV_ALT "xeon-vm-2.6ghz"
static const struct exp_ref rv_refs[] = {
    {.cat = "64", .y = 7.4}, {.cat = "128", .y = 9.5}, {.cat = "imix", .y = 11.0}};
static const enum exp_metric rv_cols[] = {EXP_M_OFFERED_MPPS, EXP_M_MPPS, EXP_M_GBPS,
                                          EXP_M_REL, EXP_M_CS_VERIFIED, EXP_M_CS_BYTES,
                                          EXP_M_RX_MISSED};
static const struct exp_plot rv_plots[] = {
    {.file = "throughput", .title = "VXLAN decapsulation: capacity by rx checksum verdicts",
     .xlabel = "inner frame size (bytes)", .ylabel = "Mpps", .kind = EXP_PLOT_BARS,
     .x_param = RV_FRAME, .series = {EXP_P(RV_VERDICT)}, .metric = EXP_M_MPPS,
     .where = {[RV_PROFILE] = RV_REF},
     .caption = "Packets per second decapsulated and forwarded, offered at the 25G line "
                "rate: small frames and IMIX are above what one PMD takes, the largest "
                "line-limited."},
    {.file = "gain", .title = "Gain of GOOD verdicts over UNKNOWN",
     .xlabel = "inner frame size (bytes)", .ylabel = "gain (%)", .kind = EXP_PLOT_BARS,
     .x_param = RV_FRAME, .series = {EXP_P(RV_PROFILE)}, .metric = EXP_M_REL,
     .where = {[RV_VERDICT] = "GOOD"}, .refs = rv_refs, .n_refs = 3,
     .ref_title = "OVS PHY-VXLAN-PHY with rx checksum offload: +7.4% (64 B), +9.5% (128 B), "
                  "+11.0% (mix)",
     .caption = "The capacity gained when the NIC vouches for the outer checksums, under "
                "the reference profile and a second one calibrated independently; the "
                "diamonds are OVS's measurements."},
    {.file = "verified", .title = "Checksums verified in software per packet",
     .xlabel = "inner frame size (bytes)", .ylabel = "checksums per packet",
     .kind = EXP_PLOT_BARS, .x_param = RV_FRAME, .series = {EXP_P(RV_VERDICT)},
     .metric = EXP_M_CS_VERIFIED, .where = {[RV_PROFILE] = RV_REF},
     .caption = "UNKNOWN verdicts: the outer IPv4 and UDP checksums, two per packet; GOOD: "
                "none."},
};
static const struct exp_text rv_ref_texts[] = {
    {RV_SRC " (merged January 2017 as \"netdev-dpdk: Enable Rx checksum offloading feature "
     "on DPDK physical ports\"): PHY-VXLAN-PHY +7.4% at 64 B, +9.5% at 128 B and +11.0% "
     "with mixed sizes; larger frames line-limited",
     NULL},
};

/* The verdict pairs of one profile over the frames fr[0..nf). */
static int rv_points(struct ex_ctx *c, const char *prof, const char *const *fr, size_t nf,
                     char *err, size_t errlen)
{
    for (size_t i = 0; i < nf; i++) {
        char fs[64];
        snprintf(fs, sizeof fs, "traffic.tenant.frame-size=%s", fr[i]);
        for (int good = 0; good < 2; good++) {
            const char *sets[] = {fs, good ? "port.p0.caps=rx-csum" : "port.p0.caps=none"};
            const char *vals[] = {good ? "GOOD" : "UNKNOWN", fr[i], prof};
            if (ex_run(c, "rx-verdicts.ini", vals, sets, 2, err, errlen))
                return -1;
        }
    }
    return 0;
}

static double rv_gain(const struct ex_ctx *c, const char *frame, const char *prof)
{
    return ex_get(c, (const char *[]){"GOOD", frame, prof}, EXP_M_REL);
}

static int ex_rx_verdicts(struct ex_ctx *c, char *err, size_t errlen)
{
    static const char *const names[] = {"verdicts", "frame", "profile"};
    static const char *const frames[] = {"64", "128", "256", "512", "1024", "1500", "imix"};
    static const char *const quick_frames[] = {"64", "128", "512"};
    c->t.n_params = 3;
    for (unsigned k = 0; k < 3; k++)
        c->t.param_name[k] = names[k];
    char alt[8300];
    if (ex_scenario(c, "rx-verdicts.ini", err, errlen) ||
        !ex_profile(c, RV_ALT ".json", alt, sizeof alt, err, errlen) ||
        rv_points(c, RV_REF, c->quick ? quick_frames : frames, c->quick ? 3 : 7, err, errlen))
        return -1;
    c->profile_override = alt;
    int rc = rv_points(c, RV_ALT, c->quick ? quick_frames : frames, c->quick ? 2 : 7, err,
                       errlen);
    c->profile_override = NULL;
    if (rc || ex_flush(c, err, errlen))
        return -1;
    for (size_t i = 0; i < c->t.n_points; i++) {
        struct exp_point *p = &c->t.points[i];
        const char *base[] = {"UNKNOWN", p->param[RV_FRAME], p->param[RV_PROFILE]};
        p->m[EXP_M_REL] = 100 * (p->m[EXP_M_MPPS] / ex_get(c, base, EXP_M_MPPS) - 1);
    }
    const char *g64[] = {"GOOD", "64", RV_REF}, *u64[] = {"UNKNOWN", "64", RV_REF};
    static const struct { const char *frame, *what; double pub; } pubs[] = {
        {"64", "PHY-VXLAN-PHY gain of GOOD verdicts, 64 B", 7.4},
        {"128", "PHY-VXLAN-PHY gain of GOOD verdicts, 128 B", 9.5},
        {"imix", "PHY-VXLAN-PHY gain of GOOD verdicts, IMIX (OVS: mixed sizes)", 11.0},
    };
    for (size_t i = 0; i < (c->quick ? 2 : 3); i++) {
        const char *u[] = {"UNKNOWN", pubs[i].frame, RV_REF}, *g[] = {"GOOD", pubs[i].frame,
                                                                        RV_REF};
        ex_pub(c, pubs[i].what, RV_SRC, "%", pubs[i].pub, rv_gain(c, pubs[i].frame, RV_REF),
               "offered %.3g Mpps (the 25G line), UNKNOWN forwards %.3g verifying %.3g "
               "checksums (%.3g bytes) a packet, GOOD %.3g: verification is %.3g%% of "
               "UNKNOWN's cost per packet under the reference profile (the gain is that cost "
               "over the rest, capped by the line); the %s profile, calibrated on another "
               "machine, gives %+.1f%%",
               ex_get(c, u, EXP_M_OFFERED_MPPS), ex_get(c, u, EXP_M_MPPS),
               ex_get(c, u, EXP_M_CS_VERIFIED), ex_get(c, u, EXP_M_CS_BYTES),
               ex_get(c, g, EXP_M_MPPS),
               100 * (1 - ex_get(c, u, EXP_M_MPPS) / ex_get(c, g, EXP_M_MPPS)), RV_ALT,
               rv_gain(c, pubs[i].frame, RV_ALT));
    }
    snprintf(c->findings, sizeof c->findings,
             "GOOD verdicts: %.3g checksums verified per packet (UNKNOWN: %.3g); capacity "
             "%+.1f%% at 64 B (OVS: +7.4%%), %+.1f%% at 128 B (OVS: +9.5%%) with the "
             "reference profile; %+.1f%% and %+.1f%% with the %s profile calibrated on "
             "another machine. The gain vanishes once the line, not the PMD, is the limit.",
             ex_get(c, g64, EXP_M_CS_VERIFIED), ex_get(c, u64, EXP_M_CS_VERIFIED),
             rv_gain(c, "64", RV_REF), rv_gain(c, "128", RV_REF), rv_gain(c, "64", RV_ALT),
             rv_gain(c, "128", RV_ALT), RV_ALT);
    return 0;
}

/* ---- cache-hierarchy ------------------------------------------------------------------- */

enum { CH_SUB, CH_POP, CH_MODE, CH_FLOWS };

static const enum exp_metric ch_hits[] = {EXP_M_EMC, EXP_M_SMC, EXP_M_MEGAFLOW, EXP_M_UPCALL};
static const enum exp_metric ch_cols[] = {EXP_M_MPPS, EXP_M_EMC, EXP_M_SMC, EXP_M_MEGAFLOW,
                                          EXP_M_UPCALL, EXP_M_SUBTABLES, EXP_M_RX_MISSED};
#define CH_MODES {"EMC only", "EMC+SMC", "classifier only"}
static const struct exp_plot ch_plots[] = {
    {.file = "throughput-uniform-1", .title = "Capacity vs flows: uniform, 1 subtable",
     .xlabel = "flows", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = CH_FLOWS,
     .series = {EXP_P(CH_MODE)}, .metric = EXP_M_MPPS, .logx = true,
     .where = {[CH_SUB] = "1", [CH_POP] = "uniform"}, .vline = 8192,
     .vline_label = "EMC entries (8192)",
     .caption = "One PMD's capacity by cache configuration; uniform popularity, one L3 "
                "rule (one subtable)."},
    {.file = "hits-uniform", .title = "Lookups answered per stage (EMC+SMC, uniform, 1 subtable)",
     .xlabel = "flows", .ylabel = "share of lookups", .kind = EXP_PLOT_LINES,
     .x_param = CH_FLOWS, .metrics = ch_hits, .n_metrics = 4, .logx = true,
     .where = {[CH_SUB] = "1", [CH_POP] = "uniform", [CH_MODE] = "EMC+SMC"}, .vline = 8192,
     .vline_label = "EMC entries (8192)",
     .caption = "Past the EMC's 8192 entries the SMC answers; OVS's SMC patch: \"EMC can "
                "store 8k flows while SMC can store 1M flows\"."},
    {.file = "emc-hits", .title = "EMC hit share vs flows (EMC only, 1 subtable)",
     .xlabel = "flows", .ylabel = "share of lookups", .kind = EXP_PLOT_LINES,
     .x_param = CH_FLOWS, .series = {EXP_P(CH_POP)}, .metric = EXP_M_EMC, .logx = true,
     .where = {[CH_SUB] = "1", [CH_MODE] = "EMC only"}, .vline = 8192,
     .vline_label = "EMC entries (8192)",
     .caption = "The EMC's hit share falls once the flows outnumber its entries."},
    {.file = "throughput-zipf-1", .title = "Capacity vs flows: Zipf, 1 subtable",
     .xlabel = "flows", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = CH_FLOWS,
     .series = {EXP_P(CH_MODE)}, .metric = EXP_M_MPPS, .logx = true,
     .where = {[CH_SUB] = "1", [CH_POP] = "zipf"}, .vline = 8192,
     .vline_label = "EMC entries (8192)",
     .caption = "The same with Zipf popularity (exponent 1): the popular flows stay in the "
                "EMC."},
    {.file = "throughput-uniform-17", .title = "Capacity vs flows: uniform, 17 subtables",
     .xlabel = "flows", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = CH_FLOWS,
     .series = {EXP_P(CH_MODE)}, .metric = EXP_M_MPPS, .logx = true,
     .where = {[CH_SUB] = "17", [CH_POP] = "uniform"}, .vline = 8192,
     .vline_label = "EMC entries (8192)",
     .caption = "Rules of 16 masks (17 subtables): a classifier lookup probes several."},
    {.file = "throughput-zipf-17", .title = "Capacity vs flows: Zipf, 17 subtables",
     .xlabel = "flows", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = CH_FLOWS,
     .series = {EXP_P(CH_MODE)}, .metric = EXP_M_MPPS, .logx = true,
     .where = {[CH_SUB] = "17", [CH_POP] = "zipf"}, .vline = 8192,
     .vline_label = "EMC entries (8192)", .caption = "Zipf, 17 subtables."},
    {.file = "hits-zipf", .title = "Lookups answered per stage (EMC+SMC, Zipf, 1 subtable)",
     .xlabel = "flows", .ylabel = "share of lookups", .kind = EXP_PLOT_LINES,
     .x_param = CH_FLOWS, .metrics = ch_hits, .n_metrics = 4, .logx = true,
     .where = {[CH_SUB] = "1", [CH_POP] = "zipf", [CH_MODE] = "EMC+SMC"}, .vline = 8192,
     .vline_label = "EMC entries (8192)", .caption = "The same with Zipf popularity."},
    {.file = "emc-insertion", .title = "EMC only: capacity by insertion probability (uniform)",
     .xlabel = "flows", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = CH_FLOWS,
     .series = {EXP_P(CH_MODE)}, .metric = EXP_M_MPPS, .logx = true,
     .where = {[CH_SUB] = "1", [CH_POP] = "uniform (insertion)"}, .vline = 8192,
     .vline_label = "EMC entries (8192)",
     .caption = "EMC insertion 1 in 1, 10 and 100 (OVS's default) in front of the classifier: "
                "fewer insertions thrash the EMC less once the flows outnumber its entries; "
                "what an insertion costs is the profile's."},
};
static const struct exp_text ch_ref_texts[] = {
    {"Yipeng Wang, \"[ovs-dev,v5,1/2] dpif-netdev: Add SMC cache after EMC cache\", "
     "ovs-dev, 10 July 2018: \"With same memory space, EMC can store 8k flows while SMC can "
     "store 1M flows. It is generally beneficial to turn on SMC but turn off EMC when "
     "traffic flow count is much larger than EMC size.\"",
     "http://patchwork.ozlabs.org/patch/942114/"},
    {"Open vSwitch documentation, DPDK Bridges: EMC insertion probability and SMC", NULL},
};

/* One point: rule set 'sub' (0: one subtable, 1: 17), popularity 'pop'
 * (zipf or uniform...), the stage settings mode_sets, 'flows' flows. The
 * warm-up reaches the caches' steady state: every flow seen about 3 times,
 * an EMC-sized population 3 x inv times (EMC insertion 1 in inv), at some
 * 10 Mpps (a PMD that pays for its EMC and SMC insertions); the window is
 * 5 ms. */
static int ch_point(struct ex_ctx *c, int sub, const char *pop, const char *mode,
                    const char *const mode_sets[2], unsigned inv, unsigned long flows,
                    char *err, size_t errlen)
{
    double n = (double)flows;
    double w = fmax(0.002, fmax(3.0 * inv * fmin(n, 10000), 3 * n) / 1e7);
    char f[64], ws[64], ds[64], fv[32];
    snprintf(f, sizeof f, "traffic.t0.flows=%lu", flows);
    snprintf(ws, sizeof ws, "sim.warmup=%.6f", w);
    snprintf(ds, sizeof ds, "sim.duration=%.6f", w + 0.005);
    const char *sets[6] = {f, ws, ds, strcmp(pop, "zipf") ? "traffic.t0.popularity=uniform"
                                                          : "traffic.t0.popularity=zipf:1.0"};
    size_t ns = 4;
    for (int k = 0; k < 2; k++)
        if (mode_sets[k])
            sets[ns++] = mode_sets[k];
    snprintf(fv, sizeof fv, "%lu", flows);
    const char *vals[] = {sub ? "17" : "1", pop, mode, fv};
    return ex_run(c, sub ? "cache-16.ini" : "cache-1.ini", vals, sets, ns, err, errlen);
}

static int ex_cache_hierarchy(struct ex_ctx *c, char *err,
                              size_t errlen)
{
    static const char *const names[] = {"subtables", "popularity", "stages", "flows"};
    static const char *const modes[] = CH_MODES;
    static const char *const mode_sets[3][2] = {
        {"datapath.smc=off"}, {NULL}, {"datapath.emc-insert-inv-prob=0", "datapath.smc=off"}};
    static const unsigned long flows[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    static const unsigned long quick_flows[] = {1000, 100000};
    c->t.n_params = 4;
    for (unsigned k = 0; k < 4; k++)
        c->t.param_name[k] = names[k];
    c->steady = true;
    if (ex_scenario(c, "cache-1.ini", err, errlen) || ex_scenario(c, "cache-16.ini", err, errlen))
        return -1;
    const unsigned long *fl = c->quick ? quick_flows : flows;
    size_t nfl = c->quick ? 2 : 7;
    for (int sub = 0; sub < 2; sub++)
        for (int pop = 0; pop < (c->quick ? 1 : 2); pop++)
            for (int m = 0; m < 3; m++)
                for (size_t i = 0; i < nfl; i++)
                    if (ch_point(c, sub, pop ? "zipf" : "uniform", modes[m], mode_sets[m], 10,
                                 fl[i], err, errlen))
                        return -1;
    /* EMC insertion 1/1, 1/10 (the runs above), 1/100 (OVS's default). */
    static const unsigned inv[] = {1, 10, 100};
    for (size_t k = 0; !c->quick && k < 3; k++) {
        char ins[64], mode[64];
        snprintf(ins, sizeof ins, "datapath.emc-insert-inv-prob=%u", inv[k]);
        snprintf(mode, sizeof mode, "EMC only, insertion 1/%u", inv[k]);
        const char *sets[2] = {"datapath.smc=off", ins};
        for (size_t i = 3; i < 6; i++)
            if (ch_point(c, 0, "uniform (insertion)", mode, sets, inv[k], flows[i], err, errlen))
                return -1;
    }
    if (ex_flush(c, err, errlen))
        return -1;
    const char *a[] = {"1", "uniform", "EMC only", c->quick ? "1000" : "1000"};
    const char *b[] = {"1", "uniform", "EMC only", "100000"};
    const char *s1[] = {"1", "uniform", "EMC+SMC", "100000"};
    snprintf(c->findings, sizeof c->findings,
             "EMC only, uniform, one subtable: the EMC answers %.1f%% of lookups at 1000 flows "
             "and %.1f%% at 100000 (8192 entries). With the SMC behind it, at 100000 flows "
             "the SMC answers %.1f%% and one PMD forwards %.3g Mpps against %.3g with the "
             "EMC alone: the shape that made OVS add the SMC.",
             100 * ex_get(c, a, EXP_M_EMC), 100 * ex_get(c, b, EXP_M_EMC),
             100 * ex_get(c, s1, EXP_M_SMC), ex_get(c, s1, EXP_M_MPPS),
             ex_get(c, b, EXP_M_MPPS));
    return 0;
}

/* ---- tx-batching ----------------------------------------------------------------------- */

enum { TB_MODE, TB_FLOWS, TB_LOAD, TB_PATH };

static const struct exp_ref tb_refs[] = {{.x = 10, .y = 33.7}, {.x = 1000, .y = 73}};
static const enum exp_metric tb_cols[] = {EXP_M_OFFERED_MPPS, EXP_M_MPPS, EXP_M_REL,
                                          EXP_M_SENDS, EXP_M_PKTS_PER_SEND, EXP_M_BUSY,
                                          EXP_M_LAT_P50, EXP_M_LAT_P99, EXP_M_LAT_P999};
static const struct exp_plot tb_plots[] = {
    {.file = "throughput", .title = "Capacity vs flows at overload, by output batching",
     .xlabel = "flows", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = TB_FLOWS,
     .series = {EXP_P(TB_MODE)}, .metric = EXP_M_MPPS, .logx = true,
     .where = {[TB_LOAD] = "40", [TB_PATH] = "PVP"},
     .caption = "One PMD forwarding phy-VM-phy (a 250 ns kick per send call to the VM, "
                "100 ns per packet through each vhost port), offered 40 Mpps."},
    {.file = "gain", .title = "Gain over unbatched sends at overload",
     .xlabel = "flows", .ylabel = "gain (%)", .kind = EXP_PLOT_LINES, .x_param = TB_FLOWS,
     .series = {EXP_P(TB_MODE)}, .metric = EXP_M_REL, .y_scale = 100, .logx = true,
     .where = {[TB_LOAD] = "40", [TB_PATH] = "PVP"}, .refs = tb_refs, .n_refs = 2,
     .ref_title = "OVS output batching, PVP: +33.7% (10 flows), +73% (1000 flows)",
     .caption = "Capacity over the unbatched mode's (each rx batch grouped per megaflow, "
                "each group sent on its own, as OVS 2.8); the diamonds are OVS's gains from "
                "output batching."},
    {.file = "batch-size", .title = "Packets per send call (PVP)",
     .xlabel = "flows / offered Mpps", .ylabel = "packets per send call",
     .kind = EXP_PLOT_BARS, .x_param = TB_FLOWS, .x2 = EXP_P(TB_LOAD),
     .series = {EXP_P(TB_MODE)}, .metric = EXP_M_PKTS_PER_SEND, .where = {[TB_PATH] = "PVP"},
     .caption = "Batch sizes: unbatched sends one megaflow's packets of an rx batch per "
                "call, interval 0 an rx batch, 50 us gathers across rx batches."},
    {.file = "latency-p99", .title = "99th percentile latency vs offered load (10 flows)",
     .xlabel = "offered load (Mpps)", .ylabel = "latency (us)", .kind = EXP_PLOT_LINES,
     .x_param = TB_LOAD, .series = {EXP_P(TB_MODE)}, .metric = EXP_M_LAT_P99, .logx = true,
     .where = {[TB_FLOWS] = "10", [TB_PATH] = "PVP"},
     .caption = "A 50 us flush interval holds packets up to 50 us at low load (OVS: +20-30 "
                "us ping round trip); at overload the rx ring dominates."},
    {.file = "latency-cdf", .title = "Latency CDF at 1 Mpps, 10 flows",
     .kind = EXP_PLOT_CDF, .series = {EXP_P(TB_MODE)},
     .where = {[TB_FLOWS] = "10", [TB_LOAD] = "1", [TB_PATH] = "PVP"},
     .caption = "Distribution of latency (arrival to departure, virtual time) per mode."},
};
#define TB_SRC_BATCH "Ilya Maximets, \"[ovs-dev,v6,0/7] Output packet batching.\", ovs-dev, " \
                     "1 December 2017"
#define TB_SRC_TIME "\"Test results for time-based batching\" (tx-flush-interval), ovs-dev, " \
                    "September 2017"
static const struct exp_text tb_ref_texts[] = {
    {TB_SRC_BATCH ": batching per output port flushed after each rx batch; PVP +33.7% at "
     "10 flows and +73% at 1000 flows; P2P with one flow about -1.7%",
     "http://patchwork.ozlabs.org/cover/843551/"},
    {TB_SRC_TIME ": 50 us: +7.5% at 8 flows, ~1% lost from 50k flows, +20-30 us ping RTT",
     "https://mail.openvswitch.org/pipermail/ovs-dev/2017-September/338247.html"},
};

static const char *const tb_modes[] = {"off", "interval 0", "interval 50 us"};
static const char *const tb_mode_sets[] = {"datapath.tx-batching=off", NULL,
                                           "datapath.tx-flush-interval=50"};

/* The PVP points: modes x flows x offered loads. */
static int tb_pvp(struct ex_ctx *c, char *err, size_t errlen)
{
    static const char *const flows[] = {"1", "10", "100", "1000"};
    static const char *const loads[] = {"1", "3", "40"};
    for (size_t li = c->quick ? 2 : 0; li < 3; li++) {
        for (size_t fi = 0; fi < 4; fi++) {
            if (c->quick && fi != 1 && fi != 3)
                continue;
            for (int m = 0; m < 3; m++) {
                char f[64], l[64];
                snprintf(f, sizeof f, "traffic.t0.flows=%s", flows[fi]);
                snprintf(l, sizeof l, "traffic.t0.rate=%smpps", loads[li]);
                const char *sets[3] = {f, l, tb_mode_sets[m]};
                const char *vals[] = {tb_modes[m], flows[fi], loads[li], "PVP"};
                if (ex_run(c, "tx-batching.ini", vals, sets, tb_mode_sets[m] ? 3 : 2, err,
                           errlen))
                    return -1;
            }
        }
    }
    return 0;
}

/* The published figures against this run (findings and the page's table). */
static void tb_compare(struct ex_ctx *c)
{
    const char *off10[] = {"off", "10", "40", "PVP"}, *on10[] = {"interval 0", "10", "40", "PVP"};
    const char *on1k[] = {"interval 0", "1000", "40", "PVP"};
    const char *off1k[] = {"off", "1000", "40", "PVP"};
    const char *p2p[] = {"interval 0", "1", NULL, "P2P"};
    double g10 = 100 * ex_get(c, on10, EXP_M_REL), g1k = 100 * ex_get(c, on1k, EXP_M_REL);
    double calls_off = 1 / ex_get(c, off1k, EXP_M_PKTS_PER_SEND);
    double calls_on = 1 / ex_get(c, on1k, EXP_M_PKTS_PER_SEND);
    ex_pub(c, "PVP gain of output batching, 10 flows, overload", TB_SRC_BATCH, "%", 33.7, g10,
           "unbatched sends %.3g calls per packet, batched %.3g; each call costs 250 ns (the "
           "scenario's kick), so the gain is set by that stand-in cost and the calls saved",
           1 / ex_get(c, off10, EXP_M_PKTS_PER_SEND), 1 / ex_get(c, on10, EXP_M_PKTS_PER_SEND));
    ex_pub(c, "PVP gain of output batching, 1000 flows, overload", TB_SRC_BATCH, "%", 73, g1k,
           "a batch of 32 over the 32 megaflows holds %.1f groups on average (32 x (1 - "
           "(31/32)^32) = 20.4): %.3g send calls per packet unbatched against %.3g; OVS's "
           "1000 flows also cost EMC misses the megaflow count here does not",
           32 * (1 - pow(31.0 / 32, 32)), calls_off, calls_on);
    ex_pub(c, "P2P one flow: batched / unbatched - 1", TB_SRC_BATCH, "%", -1.7,
           100 * ex_get(c, p2p, EXP_M_REL),
           "one flow makes one group per rx batch either way (%.3g packets per send call "
           "batched); the cost model charges the per-port queue nothing beyond the send, so "
           "the ~1.7%% OVS lost to its bookkeeping does not appear",
           ex_get(c, p2p, EXP_M_PKTS_PER_SEND));
    if (c->quick)
        return;
    const char *i50[] = {"interval 50 us", "10", "40", "PVP"};
    const char *l0[] = {"interval 0", "10", "1", "PVP"}, *l50[] = {"interval 50 us", "10", "1", "PVP"};
    double t50 = 100 * (ex_get(c, i50, EXP_M_MPPS) / ex_get(c, on10, EXP_M_MPPS) - 1);
    ex_pub(c, "tx-flush-interval 50 us over 0, throughput, 10 flows (OVS: 8)", TB_SRC_TIME, "%",
           7.5, t50,
           "at overload an rx batch is full (%.3g packets per send at interval 0, %.3g at "
           "50 us): the interval has few calls left to save on this path",
           ex_get(c, on10, EXP_M_PKTS_PER_SEND), ex_get(c, i50, EXP_M_PKTS_PER_SEND));
    double dl = 2 * (ex_get(c, l50, EXP_M_LAT_P50) - ex_get(c, l0, EXP_M_LAT_P50));
    ex_pub(c, "tx-flush-interval 50 us over 0, added round trip at low load (twice the "
              "one-way median, 1 Mpps)", TB_SRC_TIME, "us", 25, dl,
           "the one-way median is %.3g us at 50 us against %.3g at 0: a send call carries "
           "%.3g packets at 50 us (%.3g at 0), because flowswitch flushes every output "
           "queue on an idle poll and at 1 Mpps the PMD idles between packets; OVS held "
           "each packet up to the interval in both directions",
           ex_get(c, l50, EXP_M_LAT_P50), ex_get(c, l0, EXP_M_LAT_P50),
           ex_get(c, l50, EXP_M_PKTS_PER_SEND), ex_get(c, l0, EXP_M_PKTS_PER_SEND));
}

static int ex_tx_batching(struct ex_ctx *c, char *err, size_t errlen)
{
    static const char *const names[] = {"batching", "flows", "offered_mpps", "path"};
    c->t.n_params = 4;
    for (unsigned k = 0; k < 4; k++)
        c->t.param_name[k] = names[k];
    c->steady = true;
    if (ex_scenario(c, "tx-batching.ini", err, errlen) ||
        ex_scenario(c, "tx-batching-p2p.ini", err, errlen) || tb_pvp(c, err, errlen))
        return -1;
    for (int m = 0; m < 2; m++) {
        const char *sets[1] = {tb_mode_sets[m]};
        const char *vals[] = {tb_modes[m], "1", "37.2", "P2P"};
        if (ex_run(c, "tx-batching-p2p.ini", vals, sets, m ? 0 : 1, err, errlen))
            return -1;
    }
    if (ex_flush(c, err, errlen))
        return -1;
    for (size_t i = 0; i < c->t.n_points; i++) {
        struct exp_point *p = &c->t.points[i];
        const char *base[] = {"off", p->param[TB_FLOWS], p->param[TB_LOAD], p->param[TB_PATH]};
        p->m[EXP_M_REL] = p->m[EXP_M_MPPS] / ex_get(c, base, EXP_M_MPPS) - 1;
    }
    tb_compare(c);
    const char *off[] = {"off", "1000", "40", "PVP"}, *on[] = {"interval 0", "1000", "40", "PVP"};
    snprintf(c->findings, sizeof c->findings,
             "At overload with 1000 flows, a send call carries %.3g packets unbatched (each "
             "rx batch grouped per megaflow, as OVS 2.8) and %.3g with interval 0: %.2fx fewer "
             "calls per packet, and batching gains %+.1f%% (OVS: +73%%); at 10 flows %+.1f%% "
             "(OVS: +33.7%%).",
             ex_get(c, off, EXP_M_PKTS_PER_SEND), ex_get(c, on, EXP_M_PKTS_PER_SEND),
             ex_get(c, on, EXP_M_PKTS_PER_SEND) / ex_get(c, off, EXP_M_PKTS_PER_SEND),
             100 * ex_get(c, on, EXP_M_REL), c->pubs[0].ours);
    return 0;
}

/* ---- pmd-scaling ------------------------------------------------------------------------ */

static const enum exp_metric ps_rates[] = {EXP_M_PMD_MIN, EXP_M_PMD_MAX};
static const enum exp_metric ps_cols[] = {EXP_M_OFFERED_MPPS, EXP_M_MPPS, EXP_M_REL,
                                          EXP_M_PMD_MIN, EXP_M_PMD_MAX, EXP_M_BALANCE,
                                          EXP_M_BUSY, EXP_M_RX_MISSED};
static const struct exp_plot ps_plots[] = {
    {.file = "throughput", .title = "Throughput vs PMDs (4 NICs x 16 rx queues, RSS)",
     .xlabel = "PMDs", .ylabel = "Mpps", .kind = EXP_PLOT_LINES, .x_param = 0,
     .metric = EXP_M_MPPS, .logx = true,
     .caption = "Delivered packets per second; 149 Mpps is the four NICs' line rate."},
    {.file = "speedup", .title = "Speed-up over one PMD", .xlabel = "PMDs",
     .ylabel = "throughput / one PMD's", .kind = EXP_PLOT_LINES, .x_param = 0,
     .metric = EXP_M_REL, .logx = true, .logy = true,
     .caption = "Linear until the line rate.",
     .series_title = "throughput / one PMD's"},
    {.file = "balance", .title = "Per-PMD rates", .xlabel = "PMDs", .ylabel = "Mpps",
     .kind = EXP_PLOT_LINES, .x_param = 0, .metrics = ps_rates, .n_metrics = 2,
     .logx = true,
     .caption = "The least and the most loaded PMD: RSS and the round-robin queue "
                "assignment keep them close."},
};
static const struct exp_text ps_ref_texts[] = {
    {"Open vSwitch documentation, PMD Threads (Documentation/topics/dpdk/pmd.rst): rx "
     "queues are assigned to PMDs round-robin (or by load); no figure to compare: the "
     "plots have no reference point",
     NULL},
};

static int ex_pmd_scaling(struct ex_ctx *c, char *err, size_t errlen)
{
    static const char *const pmds[] = {"1", "2", "4", "8", "16"};
    c->t.n_params = 1;
    c->t.param_name[0] = "pmds";
    if (ex_scenario(c, "pmd-scaling.ini", err, errlen))
        return -1;
    for (size_t i = 0; i < (c->quick ? 2 : 5); i++) {
        char s[64];
        snprintf(s, sizeof s, "sim.pmds=%s", pmds[i]);
        const char *sets[] = {s};
        const char *vals[] = {pmds[i]};
        if (ex_run(c, "pmd-scaling.ini", vals, sets, 1, err, errlen))
            return -1;
    }
    if (ex_flush(c, err, errlen))
        return -1;
    double one = c->t.points[0].m[EXP_M_MPPS];
    for (size_t i = 0; i < c->t.n_points; i++)
        c->t.points[i].m[EXP_M_REL] = c->t.points[i].m[EXP_M_MPPS] / one;
    const struct exp_point *last = &c->t.points[c->t.n_points - 1];
    snprintf(c->findings, sizeof c->findings,
             "2 PMDs forward %.3fx what 1 forwards; with %s PMDs %.3g of %.3g Mpps offered "
             "(per PMD %.3g to %.3g Mpps, balance %.3f).",
             c->t.points[1].m[EXP_M_REL], last->param[0], last->m[EXP_M_MPPS],
             last->m[EXP_M_OFFERED_MPPS], last->m[EXP_M_PMD_MIN], last->m[EXP_M_PMD_MAX],
             last->m[EXP_M_BALANCE]);
    return 0;
}

/* ---- the command ------------------------------------------------------------------------ */

/* An experiment: its points (run), then what its page says and shows. */
static const struct ex_def {
    const char *name;
    const char *what;
    int (*run)(struct ex_ctx *, char *, size_t);
    const char *title, *summary, *reading;
    const struct exp_text *refs;
    size_t n_refs;
    const struct exp_plot *plots;
    size_t n_plots, n_quick_plots; /* the quick run's are the first */
    const enum exp_metric *cols;
    size_t n_cols;
} ex_list[] = {
    {"checksum-placement", "guest / eager at vhost rx / lazy at egress / NIC offload, for "
     "VM-to-NIC, VM-to-VM and NIC-to-NIC", ex_checksum_placement,
     "checksum-placement: where TCP/UDP checksums are computed",
     "Guests with checksum offload send TCP and UDP packets with only the pseudo-header "
     "sum in the checksum field (NEEDS_CSUM). Someone must complete it, or not: the guest "
     "itself (no offload), the host as it takes the packet from the vring (eager, OVS's "
     "second design), the host at egress only if the egress cannot (lazy, flowswitch's "
     "design and OVS 3.2's), or the NIC. Three kinds of traffic: VM to NIC, VM to VM, NIC "
     "to NIC; 64- and 1518-byte frames, half TCP, half UDP; one PMD; NICs of 25G (NIC to "
     "NIC offered at their line rate), guests offering above what the PMD takes; each vhost "
     "port costs the host 100 ns a packet (the scenarios' packet-cost, a stand-in until the "
     "cost profile has vhost events).",
     "The first plot counts the checksums each place computes per packet; the others give "
     "one PMD's capacity and its ratio to the lazy placement. Lazy never computes more "
     "than eager: it computes nothing VM to VM (the receiving guest accepts NEEDS_CSUM) "
     "and leaves the work to the NIC when the NIC offers it.",
     cp_ref_texts, 1, cp_plots, sizeof cp_plots / sizeof cp_plots[0], 3,
     cp_cols, sizeof cp_cols / sizeof cp_cols[0]},
    {"rx-verdicts", "VXLAN decap with NIC verdicts UNKNOWN vs GOOD, 64..1500 B and IMIX",
     ex_rx_verdicts,
     "rx-verdicts: VXLAN decapsulation with and without NIC checksum verdicts",
     "A gateway decapsulates VXLAN (outer UDP checksum present) and forwards the inner "
     "frames. Without rx checksum verdicts from the NIC (UNKNOWN) the host verifies the "
     "outer IPv4 header and UDP checksums of every packet in software; with them (GOOD) "
     "it verifies nothing. Inner frames of 64 to 1500 bytes and IMIX (7:4:1 of 64, 594, "
     "1518), offered at the 25G line rate to one PMD; every point under the reference "
     "profile and under xeon-vm-2.6ghz, calibrated independently on another machine (the "
     "gain's sensitivity to the profile).",
     "The gain is largest where the PMD, not the line, limits the rate, and grows with "
     "the bytes each verification sums until the line takes over: the shape of OVS's "
     "measurements with DPDK's rx checksum offload.",
     rv_ref_texts, 1, rv_plots, sizeof rv_plots / sizeof rv_plots[0], 3,
     rv_cols, sizeof rv_cols / sizeof rv_cols[0]},
    {"cache-hierarchy", "EMC only / EMC+SMC / classifier only, 1 to 1M flows, uniform and "
     "Zipf, 1 and 17 subtables", ex_cache_hierarchy,
     "cache-hierarchy: EMC, SMC and megaflow classifier from 1 to 1M flows",
     "64-byte UDP flows through one PMD, offered above its capacity, looked up by three "
     "cache configurations: the EMC alone in front of the classifier (8192 entries, 2 "
     "ways, insertion 1 in 10), the EMC and the SMC (2^21 entries, the default), and the "
     "classifier alone. Flows from 1 to 1M, uniform or Zipf (exponent 1); one L3 rule "
     "(one subtable) or 16 rules of distinct masks and a last one that between them give 17 "
     "megaflow masks (17 subtables, counted per point). Every port goes through "
     "the caches (direct-subtables = 0), as OVS looks up.",
     "Capacity plots use a log scale for flows; the dashed line marks the EMC's 8192 "
     "entries. Hit-share plots show which stage answers. The measurement window starts "
     "after a warm-up long enough for each cache's steady state.",
     ch_ref_texts, 2, ch_plots, sizeof ch_plots / sizeof ch_plots[0], 3,
     ch_cols, sizeof ch_cols / sizeof ch_cols[0]},
    {"tx-batching", "batching off / interval 0 / 50 us vs flows and offered load", ex_tx_batching,
     "tx-batching: output batching off, per rx batch, or over 50 us",
     "Phy-VM-phy through one PMD: a NIC feeds a VM whose guest sends every packet back "
     "through a second vhost port to another NIC; each vhost port costs the host 100 ns a "
     "packet, the guest-bound one 250 ns a send call (a kick). 32 rules on the UDP "
     "destination port, each its own action list, all to the VM. Output batching is off "
     "(each rx batch grouped per megaflow and each group executed and sent on its own, as "
     "OVS 2.8 did), per rx batch (interval 0, the default) or over 50 us "
     "(tx-flush-interval = 50). Flows 1, 10, 100 and 1000, Poisson arrivals; offered 1, 3 "
     "and 40 Mpps (the last above capacity). And phy-phy with one flow at the 25G line "
     "rate, off against interval 0: the single-flow regression.",
     "Throughput and gain at overload (log scale for flows), packets per send call, and "
     "latency in virtual time: percentiles against the offered load and the CDF at 1 Mpps.",
     tb_ref_texts, 2, tb_plots, sizeof tb_plots / sizeof tb_plots[0], 3,
     tb_cols, sizeof tb_cols / sizeof tb_cols[0]},
    {"pmd-scaling", "1 to 16 PMDs with RSS over 4 NICs", ex_pmd_scaling,
     "pmd-scaling: 1 to 16 PMDs, RSS over 4 NICs",
     "Four 25G NICs of 16 rx queues each receive 10k flows of 64-byte UDP apiece at line "
     "rate (149 Mpps in all); RSS (Toeplitz, the standard key) spreads each NIC's flows "
     "over its queues, and the 64 queues are dealt round-robin to 1, 2, 4, 8 and 16 PMDs, "
     "as flowswitch run assigns them. Every PMD runs on its own virtual core: the "
     "simulator plans for more cores than the machine has.",
     "Throughput grows with the PMDs in proportion until the line rate caps it; the "
     "balance (least over most loaded PMD) shows how evenly RSS and the assignment spread "
     "the load.",
     ps_ref_texts, 1, ps_plots, sizeof ps_plots / sizeof ps_plots[0], 3,
     ps_cols, sizeof ps_cols / sizeof ps_cols[0]},
};

#define EX_N (sizeof ex_list / sizeof ex_list[0])

static void ex_usage(FILE *out)
{
    fprintf(out,
            "usage: flowswitch sim experiment NAME [--out-dir DIR] [--quick] [--jobs N]\n"
            "                                 [--profile PROFILE.json|default]\n"
            "       flowswitch sim experiment list\n"
            "Runs one of the seed experiments (simulations of the scenarios it carries) and\n"
            "writes its table (data.csv, data.json), plots (gnuplot: SVG and PNG) and\n"
            "index.html into DIR (default ./NAME). --quick: the reduced set of points the\n"
            "tests use. --profile: the cost profile (default: the reference profile built\n"
            "into flowswitch, sim/profiles/reference.json). --jobs: N points at a time in\n"
            "child processes (default: the online CPUs), the same page whatever N.\n"
            "Experiments:\n");
    for (size_t i = 0; i < EX_N; i++)
        fprintf(out, "  %-19s %s\n", ex_list[i].name, ex_list[i].what);
}

int fs_cmd_sim_experiment(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out-dir", required_argument, NULL, 'o'}, {"quick", no_argument, NULL, 'q'},
        {"profile", required_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'},
        {"jobs", required_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    const char *out_dir = NULL, *profile = NULL;
    bool quick = false;
    unsigned n_jobs = jobs_default();
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out_dir = optarg;
            break;
        case 'q':
            quick = true;
            break;
        case 'p':
            profile = optarg;
            break;
        case 'j':
            if (jobs_parse(optarg, &n_jobs)) {
                fprintf(stderr, "flowswitch sim experiment: bad --jobs '%s' (1..1024)\n",
                        optarg);
                return EX_EXIT_USAGE;
            }
            break;
        case 'h':
            ex_usage(stdout);
            return EX_EXIT_OK;
        default:
            fprintf(stderr, "flowswitch sim experiment: try 'flowswitch sim experiment "
                            "--help'\n");
            return EX_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "flowswitch sim experiment: expected one NAME (or list)\n");
        return EX_EXIT_USAGE;
    }
    const char *name = argv[optind];
    if (!strcmp(name, "list")) {
        for (size_t i = 0; i < EX_N; i++)
            printf("%-19s %s\n", ex_list[i].name, ex_list[i].what);
        return EX_EXIT_OK;
    }
    size_t which = EX_N;
    for (size_t i = 0; i < EX_N; i++)
        if (!strcmp(ex_list[i].name, name))
            which = i;
    if (which == EX_N) {
        fprintf(stderr, "flowswitch sim experiment: unknown experiment '%s' (known:", name);
        for (size_t i = 0; i < EX_N; i++)
            fprintf(stderr, " %s", ex_list[i].name);
        fprintf(stderr, ")\n");
        return EX_EXIT_USAGE;
    }
    struct ex_ctx c;
    memset(&c, 0, sizeof c);
    c.quick = quick;
    c.n_jobs = n_jobs;
    c.dir = out_dir ? out_dir : name;
    char err[2048], ppath[4096];
    snprintf(c.scen_dir, sizeof c.scen_dir, "%s/scenarios", c.dir);
    int rc = fs_mkdir_p(c.scen_dir);
    if (rc) {
        fprintf(stderr, "flowswitch sim experiment: %s: %s\n", c.scen_dir, strerror(-rc));
        return EX_EXIT_USAGE;
    }
    /* The profile: a file, the built-in default, or the reference one. */
    if (profile && !strcmp(profile, "default")) {
        snprintf(c.profile_set, sizeof c.profile_set, "sim.profile=default");
    } else {
        const char *text = profile ? NULL : fs_embedded("reference.json");
        char *owned = profile ? exp_read_file(profile) : NULL;
        if (!text && !owned) {
            fprintf(stderr, "flowswitch sim experiment: %s: %s\n",
                    profile ? profile : "reference.json",
                    profile ? strerror(errno) : "not built into this binary");
            return EX_EXIT_USAGE;
        }
        snprintf(ppath, sizeof ppath, "%s/profile.json", c.dir);
        FILE *f = fopen(ppath, "w");
        if (!f || fputs(owned ? owned : text, f) < 0 || fclose(f)) {
            fprintf(stderr, "flowswitch sim experiment: %s: %s\n", ppath, strerror(errno));
            free(owned);
            return EX_EXIT_FAILED;
        }
        c.profile_text = owned ? owned : strdup(text);
        char *abs = realpath(ppath, NULL);
        snprintf(c.profile_set, sizeof c.profile_set, "sim.profile=%s", abs ? abs : ppath);
        free(abs);
    }
    netdev_dummy_register();
    const struct ex_def *def = &ex_list[which];
    struct exp_report r = {
        .name = name,
        .title = def->title,
        .summary = def->summary,
        .reading = def->reading,
        .refs = def->refs,
        .n_refs = def->n_refs,
        .plots = def->plots,
        .n_plots = quick ? def->n_quick_plots : def->n_plots,
        .columns = def->cols,
        .n_columns = def->n_cols,
    };
    rc = def->run(&c, err, sizeof err);
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r%100s\r", "");
    char cmd[2048];
    jobs_command("flowswitch sim", argc, argv, cmd, sizeof cmd);
    if (rc == 0) {
        r.table = &c.t;
        r.findings = c.findings;
        r.pubs = c.pubs;
        r.n_pubs = c.n_pubs;
        r.scenarios = c.scen;
        r.n_scenarios = c.n_scen;
        r.profile_text = c.profile_text;
        r.command = cmd;
        rc = exp_write_report(&r, c.dir, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "flowswitch sim experiment %s: %s\n", name, err);
    } else {
        printf("%s: %zu simulations; %s\n", name, c.t.n_points, c.findings);
        printf("report: %s/index.html\n", c.dir);
    }
    exp_table_free(&c.t);
    jobs_points_free(&c.q);
    free(c.profile_text);
    return rc ? EX_EXIT_FAILED : EX_EXIT_OK;
}
