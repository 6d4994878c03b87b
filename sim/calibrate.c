/* calibrate.c: the calibration workloads, the timed poll loop and the
 * fit (see calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dummy/netdev-dummy.h"
#include "dp.h"
#include "netdev.h"
#include "engine.h"
#include "nnls.h"
#include "offload.h"
#include "pool.h"
#include "rng.h"
#include "traffic.h"
#include "util.h"

const char sim_calib_estimator[] =
    "costs c >= 0 (cycles) minimising sum over workloads of ((counts . c - y) / y)^2, "
    "y = the median over runs of cycles per poll, counts = events per poll "
    "(non-negative least squares, Lawson-Hanson)";

/* Virtual time between two polls, ns (what the flush interval sees). */
#define CAL_STEP_NS 1000u
#define CAL_MAX_RULES 40
#define CAL_MAX_SIZES 3
#define CAL_BOOTSTRAP 400 /* replicates: the 5% tails hold 20 refits each */

enum cal_topo {
    CAL_PHY,   /* p0 -> rules -> p1 / p2 */
    CAL_DECAP, /* VXLAN on p0, popped by vx0 (underlay p0), then the rules */
    CAL_ENCAP, /* p0 -> output:vx0, pushed onto p1 */
};

/* How the harness marks a packet before injecting it, as a device would. */
enum {
    CAL_F_GUEST = 1 << 0, /* a guest with checksum offload: L4 PARTIAL */
    CAL_F_GOOD = 1 << 1,  /* a NIC's rx verdicts: every checksum GOOD */
    CAL_F_TRUNC = 1 << 2, /* captured short: dropped before parsing */
    CAL_F_IDLE = 1 << 3,  /* no packet at all */
    CAL_F_CSUM = 1 << 4,  /* vx0 with csum = true (encap) */
};

struct cal_workload {
    const char *name;
    const char *isolates;
    enum cal_topo topo;
    unsigned flags;
    const char *knobs;   /* "k=v k=v" datapath knobs */
    const char *rules;   /* ';'-separated, ports p0 p1 p2 vx0 */
    const char *traffic; /* "k=v k=v" traffic model keys */
    unsigned bursts[4];  /* 0-terminated; the quick catalogue takes the last */
    unsigned sizes[CAL_MAX_SIZES]; /* frame sizes (0-terminated, none: the traffic's) */
    unsigned warm_packets; /* at least this many packets before timing (the
                            * caches of a large flow population fill slowly) */
};

#define CAL_L3 "priority=10,in_port=p0,ip,nw_dst=10.0.0.0/8 actions=output:p1"
#define CAL_NOCACHE "direct-subtables=0 emc-insert-inv-prob=0 smc=off"
/* Rules of distinct masks: rule i matches the packets whose i-th pair
 * of address bits (source, then destination) is zero, a quarter of what
 * the rules above it left. The megaflow of a packet that matches rule i
 * masks the pairs of rules 0..i: one subtable per rule, holding a
 * geometric share of the traffic, so a hit probes more subtables the more
 * rules there are (and a miss probes them all). */
#define CAL_MASKS16                                                                        \
    "priority=100,ip,nw_src=0.0.0.0/0.0.0.3 actions=output:p1;"                            \
    "priority=99,ip,nw_src=0.0.0.0/0.0.0.12 actions=output:p1;"                            \
    "priority=98,ip,nw_src=0.0.0.0/0.0.0.48 actions=output:p1;"                            \
    "priority=97,ip,nw_src=0.0.0.0/0.0.0.192 actions=output:p1;"                           \
    "priority=96,ip,nw_src=0.0.0.0/0.0.3.0 actions=output:p1;"                             \
    "priority=95,ip,nw_src=0.0.0.0/0.0.12.0 actions=output:p1;"                            \
    "priority=94,ip,nw_src=0.0.0.0/0.0.48.0 actions=output:p1;"                            \
    "priority=93,ip,nw_src=0.0.0.0/0.0.192.0 actions=output:p1;"                           \
    "priority=92,ip,nw_dst=0.0.0.0/0.0.0.3 actions=output:p1;"                             \
    "priority=91,ip,nw_dst=0.0.0.0/0.0.0.12 actions=output:p1;"                            \
    "priority=90,ip,nw_dst=0.0.0.0/0.0.0.48 actions=output:p1;"                            \
    "priority=89,ip,nw_dst=0.0.0.0/0.0.0.192 actions=output:p1;"                           \
    "priority=88,ip,nw_dst=0.0.0.0/0.0.3.0 actions=output:p1;"                             \
    "priority=87,ip,nw_dst=0.0.0.0/0.0.12.0 actions=output:p1;"                            \
    "priority=86,ip,nw_dst=0.0.0.0/0.0.48.0 actions=output:p1;"                            \
    "priority=85,ip,nw_dst=0.0.0.0/0.0.192.0 actions=output:p1;"                           \
    "priority=1,ip actions=output:p1"
/* Host routes to 10.1.0.0-15: a flow to one of them matches its own rule,
 * whose whole nw_dst is in the megaflow's mask, so 16 destinations need 16
 * megaflows (however minimal the masks are made). */
#define CAL_HOSTS16                                                                        \
    "priority=20,ip,nw_dst=10.1.0.0 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.1 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.2 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.3 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.4 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.5 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.6 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.7 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.8 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.9 actions=output:p1;"                                    \
    "priority=20,ip,nw_dst=10.1.0.10 actions=output:p1;"                                   \
    "priority=20,ip,nw_dst=10.1.0.11 actions=output:p1;"                                   \
    "priority=20,ip,nw_dst=10.1.0.12 actions=output:p1;"                                   \
    "priority=20,ip,nw_dst=10.1.0.13 actions=output:p1;"                                   \
    "priority=20,ip,nw_dst=10.1.0.14 actions=output:p1;"                                   \
    "priority=20,ip,nw_dst=10.1.0.15 actions=output:p1;"
#define CAL_MASKS4                                                                         \
    "priority=100,ip,nw_src=0.0.0.0/0.0.0.3 actions=output:p1;"                            \
    "priority=99,ip,nw_src=0.0.0.0/0.0.0.12 actions=output:p1;"                            \
    "priority=98,ip,nw_src=0.0.0.0/0.0.0.48 actions=output:p1;"                            \
    "priority=97,ip,nw_src=0.0.0.0/0.0.0.192 actions=output:p1;"                           \
    "priority=1,ip actions=output:p1"

static const struct cal_workload cal_catalogue[] = {
    {"idle", "poll_iteration", CAL_PHY, CAL_F_IDLE, "", CAL_L3, "", {1}, {0}, 0},
    {"inport", "rx_burst, rx_packet, send_call, tx_packet (the keyless path)", CAL_PHY, 0, "",
     "in_port=p0 actions=output:p1", "flows=1", {1, 4, 16, 32}, {0}, 0},
    {"direct", "parse, megaflow_hit, subtable_probe (one subtable, looked up directly)",
     CAL_PHY, 0, "", CAL_L3, "flows=1000", {1, 8, 32}, {0}, 0},
    {"emc", "flow_hash, emc_hit", CAL_PHY, 0, "direct-subtables=0 emc-insert-inv-prob=1",
     CAL_L3, "flows=64", {1, 8, 32}, {0}, 0},
    {"emc-miss", "emc_miss (EMC overflowing), smc_hit", CAL_PHY, 0,
     "direct-subtables=0 emc-insert-inv-prob=1", CAL_L3, "flows=200000", {8, 32}, {0}, 0},
    {"emc-rare-insert", "emc_insert against emc_miss (1 miss in 100 inserted)", CAL_PHY, 0,
     "direct-subtables=0 emc-insert-inv-prob=100", CAL_L3, "flows=200000", {8, 32}, {0}, 0},
    {"smc", "smc_hit (EMC off)", CAL_PHY, 0, "direct-subtables=0 emc-insert-inv-prob=0",
     CAL_L3, "flows=1000", {8, 32}, {0}, 0},
    {"smc-large", "smc_hit over a large table", CAL_PHY, 0,
     "direct-subtables=0 emc-insert-inv-prob=0", CAL_L3, "flows=500000", {8, 32}, {0}, 0},
    {"zipf-1m", "emc_hit, emc_miss, smc_hit in their proportions over a million Zipf flows "
     "of a protocol mix (TCP, UDP, ICMP; 20% IPv6, 10% VLAN)",
     CAL_PHY, 0, "direct-subtables=0",
     "priority=20,in_port=p0,ip,nw_dst=10.1.0.0/16 actions=output:p1;"
     "priority=10,in_port=p0 actions=output:p1",
     "flows=1000000 popularity=zipf:1.0 proto=tcp:6,udp:3,icmp:1 ipv6-share=0.2 "
     "vlan-share=0.1", {8, 32}, {0}, 2000000},
    {"smc-miss", "smc_miss, megaflow_hit (an SMC far smaller than the flows)", CAL_PHY, 0,
     "direct-subtables=0 emc-insert-inv-prob=0 smc-entries=1024", CAL_L3, "flows=100000",
     {8, 32}, {0}, 0},
    {"classifier-1", "megaflow_hit, subtable_probe, flow_hash (no caches)", CAL_PHY, 0,
     CAL_NOCACHE, CAL_L3, "flows=1000", {8, 32}, {0}, 0},
    {"classifier-4", "subtable_probe (5 subtables)", CAL_PHY, 0, CAL_NOCACHE, CAL_MASKS4,
     "flows=500 dst-ip=10.1.0.0/16", {8, 32}, {0}, 0},
    {"classifier-16", "subtable_probe (17 subtables)", CAL_PHY, 0, CAL_NOCACHE, CAL_MASKS16,
     "flows=500 dst-ip=10.1.0.0/16", {8, 32}, {0}, 0},
    {"upcall", "upcall, megaflow_install (16 destinations, room for one megaflow: nearly "
     "every packet evicts the one the next packet needs)",
     CAL_PHY, 0, CAL_NOCACHE " megaflow-max=1", CAL_HOSTS16 CAL_L3,
     "flows=16 dst-ip=10.1.0.0/28", {1, 8, 32}, {0}, 0},
    {"actions", "action_executed (set fields, decrement TTL)", CAL_PHY, 0, "",
     "priority=10,in_port=p0,ip actions=mod_dl_src:02:00:00:00:0a:01,dec_ttl,output:p1",
     "flows=100", {8, 32}, {0}, 0},
    {"two-outputs", "send_call, tx_packet (two outputs: a copy and two sends)", CAL_PHY, 0,
     "", "in_port=p0 actions=output:p1,output:p2", "flows=100", {8, 32}, {0}, 0},
    {"drop", "drop (a drop rule)", CAL_PHY, 0, "", "priority=10,in_port=p0,ip actions=drop",
     "flows=100", {8, 32}, {0}, 0},
    {"truncated", "rx_packet, drop (received, never parsed)", CAL_PHY, CAL_F_TRUNC, "",
     CAL_L3, "flows=100", {8, 32}, {0}, 0},
    {"flush-50us", "send_call against tx_packet (output batching over polls)", CAL_PHY, 0,
     "tx-flush-interval=50", CAL_L3, "flows=100", {2, 8}, {0}, 0},
    {"csum", "sw_csum_packet, sw_csum_byte (a guest's PARTIAL completed for a NIC)", CAL_PHY,
     CAL_F_GUEST, "", CAL_L3, "flows=100 proto=udp", {8, 32}, {64, 512, 1500}, 0},
    {"decap-unknown", "tunnel_pop, sw_csum_verify, sw_csum_verify_byte (outer checksums)",
     CAL_DECAP, 0, "", "in_port=vx0,tun_id=42 actions=output:p1",
     "vxlan-share=1 vxlan-udp-csum=true flows=1000", {32}, {64, 512, 1500}, 0},
    {"decap-good", "tunnel_pop (the NIC vouched: nothing verified)", CAL_DECAP, CAL_F_GOOD, "",
     "in_port=vx0,tun_id=42 actions=output:p1", "vxlan-share=1 vxlan-udp-csum=true flows=1000",
     {32}, {64, 512, 1500}, 0},
    {"encap", "tunnel_push", CAL_ENCAP, 0, "", "in_port=p0 actions=output:vx0", "flows=100",
     {8, 32}, {0}, 0},
    {"encap-csum", "tunnel_push, sw_csum_packet (outer UDP checksum in software)", CAL_ENCAP,
     CAL_F_CSUM, "", "in_port=p0 actions=output:vx0", "flows=100", {32}, {64, 1500}, 0},
};

#define CAL_N_WORKLOADS (sizeof cal_catalogue / sizeof cal_catalogue[0])

/* ---- one run ---------------------------------------------------------------- */

struct cal_run {
    struct dp *dp;
    struct dp_pmd *pmd;
    struct netdev *dev[3]; /* p0, p1, p2 */
    uint64_t sends_seen;
    struct sim_traffic *traffic;
    struct sim_pool pool;
    struct sim_cost_ctx ctx;
    uint8_t frame[SIM_TRAFFIC_FRAME_MAX];
};

/* Splits "k=v k=v" and calls set(aux, k, v) for each; -1 on the first
 * failure (its reason in err). */
static int cal_pairs(const char *text, int (*set)(void *, const char *, const char *, char *,
                                                  size_t),
                     void *aux, char *err, size_t errlen)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fs_errf(err, errlen, "'%s': expected KEY=VALUE", tok);
            return -1;
        }
        *eq = '\0';
        if (set(aux, tok, eq + 1, err, errlen))
            return -1;
    }
    return 0;
}

static int cal_knob(void *aux, const char *k, const char *v, char *err, size_t errlen)
{
    int rc = dp_knobs_set(aux, k, v, err, errlen);
    if (rc > 0)
        fs_errf(err, errlen, "unknown knob '%s'", k);
    return rc ? -1 : 0;
}

static int cal_traffic_key(void *aux, const char *k, const char *v, char *err, size_t errlen)
{
    return sim_traffic_cfg_set(aux, k, v, err, errlen);
}

static int cal_add_dummy(struct cal_run *r, const char *name, uint32_t caps, char *err,
                         size_t errlen)
{
    static const struct netdev_opt opts[] = {
        {"rxqs", "1", 0}, {"txqs", "1", 0}, {"tx-keep", "true", 0}, {"burst", "32", 0}};
    struct dp_port_params pp = {
        .name = name,
        .type = "dummy",
        .args = {.opts = opts, .n_opts = 4, .base_dir = "", .out_dir = "", .caps_set = true,
                 .caps = {.flags = caps}},
        .tx_retries = -1,
        .emc_insert_inv_prob = -1,
    };
    int no = dp_port_add(r->dp, &pp, err, errlen);
    if (no < 0)
        return -1;
    struct dp_port_info info;
    dp_port_get(r->dp, (unsigned)no, &info);
    r->dev[no] = info.dev;
    return 0;
}

static int cal_add_vxlan(struct cal_run *r, const struct cal_workload *w, char *err,
                         size_t errlen)
{
    bool decap = w->topo == CAL_DECAP;
    const struct netdev_opt opts[] = {
        {"underlay", decap ? "p0" : "p1", 0},
        {"local-ip", decap ? "192.0.2.2" : "192.0.2.1", 0},
        {"remote-ip", decap ? "192.0.2.1" : "192.0.2.2", 0},
        {"vni", "42", 0},
        {"csum", w->flags & CAL_F_CSUM ? "true" : "false", 0},
        {"src-mac", "02:00:00:00:01:02", 0},
        {"next-hop-mac", "02:00:00:00:01:01", 0},
    };
    struct dp_port_params pp = {
        .name = "vx0",
        .type = "vxlan",
        .args = {.opts = opts, .n_opts = sizeof opts / sizeof opts[0], .base_dir = "",
                 .out_dir = ""},
        .tx_retries = -1,
        .emc_insert_inv_prob = -1,
    };
    return dp_port_add(r->dp, &pp, err, errlen) < 0 ? -1 : 0;
}

static void cal_run_destroy(struct cal_run *r)
{
    dp_pmd_destroy(r->pmd);
    dp_destroy(r->dp);
    sim_traffic_destroy(r->traffic);
    sim_pool_fini(&r->pool);
}

static int cal_run_create(struct cal_run *r, const struct cal_workload *w, unsigned size,
                          char *err, size_t errlen)
{
    char why[512];
    memset(r, 0, sizeof *r);
    sim_pool_init(&r->pool, SIM_TRAFFIC_FRAME_MAX);
    struct dp_knobs k;
    dp_knobs_default(&k);
    if (cal_pairs(w->knobs, cal_knob, &k, why, sizeof why)) {
        fs_errf(err, errlen, "workload %s: knobs: %s", w->name, why);
        return -1;
    }
    sim_cost_ctx_init(&r->ctx, &k);
    if (dp_create(&k, &r->dp, why, sizeof why)) {
        fs_errf(err, errlen, "workload %s: %s", w->name, why);
        return -1;
    }
    /* No device offload: a dummy port that announces one emulates it in
     * software inside the poll, which is no cost of the core's. */
    if (cal_add_dummy(r, "p0", 0, why, sizeof why) || cal_add_dummy(r, "p1", 0, why, sizeof why) ||
        cal_add_dummy(r, "p2", 0, why, sizeof why) ||
        (w->topo != CAL_PHY && cal_add_vxlan(r, w, why, sizeof why))) {
        fs_errf(err, errlen, "workload %s: %s", w->name, why);
        return -1;
    }
    struct dp_rule_src src[CAL_MAX_RULES];
    char rules[4096];
    size_t n = 0;
    snprintf(rules, sizeof rules, "%s", w->rules);
    char *save = NULL;
    for (char *t = strtok_r(rules, ";", &save); t && n < CAL_MAX_RULES;
         t = strtok_r(NULL, ";", &save)) {
        src[n] = (struct dp_rule_src){t, (int)n + 1};
        n++;
    }
    struct dp_rule_edit e = {.clear = true, .add = src, .n_add = n};
    if (dp_rules_apply(r->dp, &e, w->name, why, sizeof why)) {
        fs_errf(err, errlen, "workload %s: %s", w->name, why);
        return -1;
    }
    struct sim_traffic_cfg tc;
    sim_traffic_cfg_default(&tc);
    char sz[16];
    snprintf(sz, sizeof sz, "%u", size);
    if (cal_pairs(w->traffic, cal_traffic_key, &tc, why, sizeof why) ||
        (size && sim_traffic_cfg_set(&tc, "frame-size", sz, why, sizeof why)) ||
        (w->topo == CAL_DECAP &&
         (sim_traffic_cfg_set(&tc, "vxlan-src-ip", "192.0.2.1", why, sizeof why) ||
          sim_traffic_cfg_set(&tc, "vxlan-dst-ip", "192.0.2.2", why, sizeof why))) ||
        sim_traffic_cfg_validate(&tc, why, sizeof why)) {
        fs_errf(err, errlen, "workload %s: traffic: %s", w->name, why);
        return -1;
    }
    r->traffic = sim_traffic_new(&tc, 1, 1, 0, why, sizeof why);
    r->pmd = dp_pmd_create(r->dp);
    if (!r->traffic || !r->pmd ||
        dp_assign_rxqs(r->dp, &r->pmd, 1, NULL, 0, why, sizeof why)) {
        fs_errf(err, errlen, "workload %s: %s", w->name, r->traffic ? why : "out of memory");
        return -1;
    }
    return 0;
}

/* Writes, marks and injects the next burst (untimed). */
static int cal_inject(struct cal_run *r, const struct cal_workload *w, unsigned burst,
                      uint64_t now)
{
    if (w->flags & CAL_F_IDLE)
        return 0;
    for (unsigned i = 0; i < burst; i++) {
        struct sim_traffic_info info;
        size_t len = sim_traffic_next_frame(r->traffic, r->frame, &info);
        struct sim_pkt *sk = sim_pool_get(&r->pool, (uint32_t)len);
        if (!sk)
            return -1;
        struct pkt *p = &sk->pkt;
        memcpy(p->data, r->frame, len);
        if (w->flags & CAL_F_GUEST)
            sim_guest_partial(p);
        if (w->flags & CAL_F_GOOD)
            pkt_rx_verify_emulate(p, NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM);
        if (w->flags & CAL_F_TRUNC)
            p->flags |= PKT_F_TRUNCATED;
        p->ts = now;
        if (netdev_dummy_inject(r->dev[0], 0, p))
            return -1;
    }
    return 0;
}

/* Takes and frees what the ports sent; returns how many. */
static uint64_t cal_collect(struct cal_run *r)
{
    uint64_t n = 0;
    struct pkt *out[64];
    for (int d = 0; d < 3; d++) {
        int got;
        while ((got = netdev_dummy_collect(r->dev[d], 0, out, 64)) > 0) {
            for (int i = 0; i < got; i++)
                pkt_free(out[i]);
            n += (uint64_t)got;
        }
    }
    return n;
}

static uint64_t cal_send_calls(const struct cal_run *r)
{
    return netdev_dummy_send_calls(r->dev[0]) + netdev_dummy_send_calls(r->dev[1]) +
           netdev_dummy_send_calls(r->dev[2]);
}

static uint64_t cal_tx_pending(const struct cal_run *r)
{
    return (uint64_t)netdev_dummy_tx_pending(r->dev[0], 0) +
           netdev_dummy_tx_pending(r->dev[1], 0) + netdev_dummy_tx_pending(r->dev[2], 0);
}

/* One poll: timed, counted (cycles and counts NULL: only run). */
static int cal_poll(struct cal_run *r, const struct cal_workload *w, unsigned burst,
                    uint64_t now, const struct sim_calib_clock *clk, uint64_t *cycles,
                    uint64_t *counts)
{
    if (cal_inject(r, w, burst, now))
        return -1;
    struct dp_counters a, b;
    dp_pmd_counters(r->pmd, &a);
    uint64_t sends = cal_send_calls(r);
    uint64_t t0 = clk->cycles();
    if (clk->loop)
        clk->loop();
    unsigned rx = dp_pmd_poll(r->pmd, now);
    uint64_t t1 = clk->cycles();
    dp_pmd_counters(r->pmd, &b);
    struct sim_poll_io io = {.rx = rx, .sends = cal_send_calls(r) - sends,
                             .tx = cal_tx_pending(r)};
    cal_collect(r);
    if (cycles) {
        struct sim_cost_snap sa, sb;
        sim_cost_snap_read(&a, &sa);
        sim_cost_snap_read(&b, &sb);
        sim_poll_counts(&r->ctx, &sa, &sb, &io, counts);
        *cycles = t1 - t0;
    }
    return 0;
}

static int cal_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double cal_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cal_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One run's cycles and events per poll, without the polls that took more
 * than CAL_OUTLIER times the run's median poll: on a shared machine those
 * include another thread's time slice or an interrupt, which no event
 * explains (the workloads' polls are alike by design). */
#define CAL_OUTLIER 3.0

static void cal_run_figures(const uint64_t *cyc, const uint64_t *cnt, unsigned polls,
                            double *scratch, double *cycles, double *counts, unsigned *dropped)
{
    for (unsigned i = 0; i < polls; i++)
        scratch[i] = (double)cyc[i];
    double limit = CAL_OUTLIER * cal_median(scratch, polls);
    double sum = 0;
    unsigned kept = 0;
    memset(counts, 0, SIM_COST_N * sizeof *counts);
    for (unsigned i = 0; i < polls; i++) {
        if ((double)cyc[i] > limit)
            continue;
        kept++;
        sum += (double)cyc[i];
        for (int e = 0; e < SIM_COST_N; e++)
            counts[e] += (double)cnt[(size_t)i * SIM_COST_N + e];
    }
    *cycles = sum / kept;
    for (int e = 0; e < SIM_COST_N; e++)
        counts[e] /= kept;
    *dropped = polls - kept;
}

/* What a measurement keeps: per run its figure, per poll its cycles and
 * events. */
struct cal_bufs {
    double *per_run;
    uint64_t *cyc, *cnt;
    double *scratch;
};

static void cal_bufs_free(struct cal_bufs *b)
{
    free(b->per_run);
    free(b->cyc);
    free(b->cnt);
    free(b->scratch);
}

static int cal_bufs_alloc(struct cal_bufs *b, const struct sim_calib_opts *o, char *err,
                          size_t errlen)
{
    b->per_run = calloc(o->repeats, sizeof *b->per_run);
    b->cyc = calloc(o->polls, sizeof *b->cyc);
    b->cnt = calloc((size_t)o->polls * SIM_COST_N, sizeof *b->cnt);
    b->scratch = calloc(o->polls, sizeof *b->scratch);
    if (b->per_run && b->cyc && b->cnt && b->scratch)
        return 0;
    fs_errf(err, errlen, "out of memory");
    return -1;
}

static int cal_measure(const struct cal_workload *w, unsigned burst, unsigned size,
                       const struct sim_calib_clock *clk, const struct sim_calib_opts *o,
                       struct sim_calib_row *row, char *err, size_t errlen)
{
    struct cal_bufs bu;
    int rc = cal_bufs_alloc(&bu, o, err, errlen);
    double *per_run = bu.per_run, *scratch = bu.scratch;
    uint64_t *cyc = bu.cyc, *cnt = bu.cnt;
    memset(row->counts, 0, sizeof row->counts);
    row->polls_discarded = 0;
    row->n_runs = 0;
    for (unsigned k = 0; k < o->repeats && rc == 0; k++) {
        struct cal_run r;
        if (cal_run_create(&r, w, size, err, errlen)) {
            cal_run_destroy(&r);
            rc = -1;
            break;
        }
        uint64_t now = CAL_STEP_NS;
        unsigned warm = o->warm_polls;
        /* A large flow population's caches fill slowly; the quick
         * catalogue does not wait for them. */
        if (!o->quick && burst && w->warm_packets / burst > warm)
            warm = w->warm_packets / burst;
        for (unsigned i = 0; i < warm && rc == 0; i++, now += CAL_STEP_NS)
            rc = cal_poll(&r, w, burst, now, clk, NULL, NULL);
        for (unsigned i = 0; i < o->polls && rc == 0; i++, now += CAL_STEP_NS)
            rc = cal_poll(&r, w, burst, now, clk, &cyc[i], &cnt[(size_t)i * SIM_COST_N]);
        cal_run_destroy(&r);
        if (rc) {
            fs_errf(err, errlen, "workload %s: out of memory", w->name);
            break;
        }
        double counts[SIM_COST_N];
        unsigned dropped;
        cal_run_figures(cyc, cnt, o->polls, scratch, &per_run[k], counts, &dropped);
        if (k < SIM_CALIB_MAX_RUNS)
            row->run_cycles[row->n_runs++] = per_run[k];
        row->polls_discarded += dropped;
        for (int e = 0; e < SIM_COST_N; e++)
            row->counts[e] += counts[e] / o->repeats;
    }
    if (rc == 0) {
        row->cycles = cal_median(per_run, o->repeats);
        row->cycles_min = per_run[0]; /* sorted by cal_median() */
        row->cycles_max = per_run[o->repeats - 1];
    }
    cal_bufs_free(&bu);
    return rc;
}

/* ---- a device's own cost ---------------------------------------------------------- */

int sim_calib_device(const struct sim_calib_clock *clk, const struct sim_calib_opts *o,
                     const struct sim_calib_dev *d, double *cycles_per_packet, char *err,
                     size_t errlen)
{
    struct cal_bufs bu;
    int rc = cal_bufs_alloc(&bu, o, err, errlen);
    double *per_run = bu.per_run, *scratch = bu.scratch;
    uint64_t *cyc = bu.cyc, *cnt = bu.cnt;
    struct pkt_batch b;
    uint64_t now = CAL_STEP_NS;
    for (unsigned k = 0; k < o->repeats && rc == 0; k++) {
        unsigned got = 0, tries = 0;
        for (unsigned i = 0; i < o->warm_polls + o->polls && rc == 0; now += CAL_STEP_NS) {
            if (d->refill)
                d->refill(d->aux, d->rx, now);
            pkt_batch_init(&b);
            uint64_t t0 = clk->cycles();
            if (clk->loop)
                clk->loop();
            int n = netdev_rxq_recv(d->rx, 0, &b, now);
            int sent = n > 0 ? netdev_send(d->tx, 0, b.pkts, n, b.flags) : 0;
            uint64_t t1 = clk->cycles();
            for (int j = sent < 0 ? 0 : sent; j < n; j++)
                pkt_free(b.pkts[j]);
            if (d->drain)
                d->drain(d->aux, d->tx);
            if (n <= 0) {
                if (++tries > 1000000u) {
                    fs_errf(err, errlen, "the rx device delivers nothing");
                    rc = -1;
                }
                continue;
            }
            if (i >= o->warm_polls) {
                /* The packets of the poll ride in the rx_packet column. */
                cyc[got] = t1 - t0;
                memset(&cnt[(size_t)got * SIM_COST_N], 0, SIM_COST_N * sizeof *cnt);
                cnt[(size_t)got * SIM_COST_N + SIM_COST_RX_PKT] = (uint64_t)n;
                got++;
            }
            i++;
        }
        if (rc)
            break;
        double cycles, counts[SIM_COST_N];
        unsigned dropped;
        cal_run_figures(cyc, cnt, got, scratch, &cycles, counts, &dropped);
        per_run[k] = cycles / counts[SIM_COST_RX_PKT];
    }
    if (rc == 0)
        *cycles_per_packet = cal_median(per_run, o->repeats);
    cal_bufs_free(&bu);
    return rc;
}

struct cal_dummy_io {
    struct sim_traffic *traffic;
    struct sim_pool pool;
    uint8_t frame[SIM_TRAFFIC_FRAME_MAX];
    bool failed;
};

static void cal_dummy_refill(void *aux, struct netdev *rx, uint64_t now)
{
    struct cal_dummy_io *io = aux;
    for (int i = 0; i < PKT_BATCH_MAX; i++) {
        struct sim_traffic_info info;
        size_t len = sim_traffic_next_frame(io->traffic, io->frame, &info);
        struct sim_pkt *sk = sim_pool_get(&io->pool, (uint32_t)len);
        if (!sk) {
            io->failed = true;
            return;
        }
        memcpy(sk->pkt.data, io->frame, len);
        sk->pkt.ts = now;
        if (netdev_dummy_inject(rx, 0, &sk->pkt))
            io->failed = true;
    }
}

static void cal_dummy_drain(void *aux, struct netdev *tx)
{
    (void)aux;
    struct pkt *out[64];
    int got;
    while ((got = netdev_dummy_collect(tx, 0, out, 64)) > 0)
        for (int i = 0; i < got; i++)
            pkt_free(out[i]);
}

int sim_calib_dummy_io(const struct sim_calib_clock *clk, const struct sim_calib_opts *o,
                       double *cycles_per_packet, char *err, size_t errlen)
{
    static const struct netdev_opt opts[] = {
        {"rxqs", "1", 0}, {"txqs", "1", 0}, {"tx-keep", "true", 0}, {"burst", "32", 0}};
    struct netdev_args a = {.opts = opts, .n_opts = 4, .base_dir = "", .out_dir = "",
                            .caps_set = true};
    struct cal_dummy_io io;
    memset(&io, 0, sizeof io);
    sim_pool_init(&io.pool, SIM_TRAFFIC_FRAME_MAX);
    struct sim_traffic_cfg tc;
    sim_traffic_cfg_default(&tc);
    char why[256];
    io.traffic = sim_traffic_new(&tc, 1, 1, 0, why, sizeof why);
    struct netdev *rx = netdev_open("calib-rx", "dummy", &a, why, sizeof why);
    struct netdev *tx = rx ? netdev_open("calib-tx", "dummy", &a, why, sizeof why) : NULL;
    int rc = -1;
    if (!io.traffic || !rx || !tx) {
        fs_errf(err, errlen, "dummy ports: %s", why);
    } else {
        struct sim_calib_dev d = {rx, tx, cal_dummy_refill, cal_dummy_drain, &io};
        rc = sim_calib_device(clk, o, &d, cycles_per_packet, err, errlen);
        if (rc == 0 && io.failed) {
            fs_errf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    if (tx)
        netdev_close(tx);
    if (rx)
        netdev_close(rx);
    sim_traffic_destroy(io.traffic);
    sim_pool_fini(&io.pool);
    return rc;
}

/* ---- the catalogue and the fit -------------------------------------------------- */

int sim_calib_fit(struct sim_calib *c)
{
    size_t m = c->n_rows, n = SIM_COST_N;
    if (m == 0)
        return -1;
    double *a = calloc(m * n, sizeof *a), *b = calloc(m, sizeof *b);
    int dup[SIM_COST_N];
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    for (size_t i = 0; i < m; i++) {
        const struct sim_calib_row *r = &c->rows[i];
        double y = r->cycles > 0 ? r->cycles : 1;
        for (size_t j = 0; j < n; j++)
            a[i * n + j] = r->counts[j] / y;
        b[i] = r->cycles > 0 ? 1 : 0;
    }
    sim_nnls_collinear(a, m, n, dup);
    int rc = sim_nnls(a, b, m, n, c->cost_cycles) == -1 ? -1 : 0;
    free(a);
    free(b);
    if (rc)
        return rc;
    double sq = 0, mx = 0;
    for (size_t i = 0; i < m; i++) {
        struct sim_calib_row *r = &c->rows[i];
        r->fitted = 0;
        for (size_t j = 0; j < n; j++)
            r->fitted += r->counts[j] * c->cost_cycles[j];
        double e = r->cycles > 0 ? r->fitted / r->cycles - 1 : 0;
        sq += e * e;
        if (fabs(e) > mx)
            mx = fabs(e);
    }
    c->rms_rel_err = m ? sqrt(sq / (double)m) : 0;
    c->max_rel_err = mx;
    for (size_t j = 0; j < n; j++) {
        c->twin[j] = dup[j];
        c->uncertainty_cycles[j] = -1; /* a refit's: sim_calib_bootstrap() */
    }
    return 0;
}

/* The q-quantile (0..1) of sorted v[0..n-1], linearly interpolated. */
static double cal_quantile(const double *v, size_t n, double q)
{
    double x = q * (double)(n - 1);
    size_t i = (size_t)x;
    return i + 1 < n ? v[i] + (x - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* One bootstrap replicate: t's rows get the median of the drawn rounds. */
static int cal_replicate(const struct sim_calib *c, struct sim_calib *t, unsigned runs,
                         struct sim_rng *rng)
{
    unsigned pick[SIM_CALIB_MAX_RUNS];
    double v[SIM_CALIB_MAX_RUNS];
    for (unsigned k = 0; k < runs; k++)
        pick[k] = (unsigned)sim_rng_below(rng, runs);
    for (size_t i = 0; i < c->n_rows; i++) {
        for (unsigned k = 0; k < runs; k++)
            v[k] = c->rows[i].run_cycles[pick[k]];
        t->rows[i].cycles = cal_median(v, runs);
    }
    return sim_calib_fit(t);
}

int sim_calib_bootstrap(struct sim_calib *c, unsigned replicates, uint64_t seed)
{
    unsigned runs = SIM_CALIB_MAX_RUNS;
    for (size_t i = 0; i < c->n_rows; i++)
        runs = c->rows[i].n_runs < runs ? c->rows[i].n_runs : runs;
    for (int e = 0; e < SIM_COST_N; e++)
        c->uncertainty_cycles[e] = -1;
    if (c->n_rows == 0 || runs < 2 || replicates < 2)
        return 0;
    struct sim_calib t = *c;
    t.rows = malloc(c->n_rows * sizeof *t.rows);
    double *draws = malloc((size_t)replicates * SIM_COST_N * sizeof *draws);
    int rc = t.rows && draws ? 0 : -1;
    if (t.rows)
        memcpy(t.rows, c->rows, c->n_rows * sizeof *t.rows);
    struct sim_rng rng;
    sim_rng_init(&rng, seed, 0);
    for (unsigned r = 0; r < replicates && rc == 0; r++) {
        rc = cal_replicate(c, &t, runs, &rng);
        for (int e = 0; e < SIM_COST_N && rc == 0; e++)
            draws[(size_t)e * replicates + r] = t.cost_cycles[e];
    }
    for (int e = 0; e < SIM_COST_N && rc == 0; e++) {
        double *d = &draws[(size_t)e * replicates];
        qsort(d, replicates, sizeof *d, cal_cmp_double);
        c->uncertainty_cycles[e] =
            (cal_quantile(d, replicates, 0.95) - cal_quantile(d, replicates, 0.05)) / 2;
    }
    free(t.rows);
    free(draws);
    return rc;
}

/* A workload's burst and frame sizes; false if --only leaves it out. */
static bool cal_dims(const struct cal_workload *w, const struct sim_calib_opts *o, size_t *nb,
                     size_t *ns)
{
    *nb = *ns = 0;
    while (*nb < 4 && w->bursts[*nb])
        (*nb)++;
    while (*ns < CAL_MAX_SIZES && w->sizes[*ns])
        (*ns)++;
    return !o->only || !strncmp(w->name, o->only, strlen(o->only));
}

int sim_calibrate(const struct sim_calib_clock *clk, const struct sim_calib_opts *o,
                  struct sim_calib *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!clk || !clk->cycles || o->repeats < 1 || o->polls < 1) {
        fs_errf(err, errlen, "calibration needs a clock, repeats >= 1 and polls >= 1");
        return -1;
    }
    size_t total = 0, nb, ns;
    for (size_t i = 0; i < CAL_N_WORKLOADS; i++)
        if (cal_dims(&cal_catalogue[i], o, &nb, &ns))
            total += o->quick ? 1 : nb * (ns ? ns : 1);
    if (total == 0) {
        fs_errf(err, errlen, "no workload named %s...", o->only);
        return -1;
    }
    out->rows = calloc(total, sizeof *out->rows);
    if (!out->rows) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < CAL_N_WORKLOADS; i++) {
        const struct cal_workload *w = &cal_catalogue[i];
        if (!cal_dims(w, o, &nb, &ns))
            continue;
        for (size_t bi = o->quick ? nb - 1 : 0; bi < nb; bi++) {
            for (size_t si = o->quick && ns ? ns - 1 : 0; si < (ns ? ns : 1); si++) {
                struct sim_calib_row *row = &out->rows[out->n_rows];
                unsigned burst = w->bursts[bi], size = ns ? w->sizes[si] : 0;
                if (size)
                    snprintf(row->name, sizeof row->name, "%s/b%u/%uB", w->name, burst, size);
                else
                    snprintf(row->name, sizeof row->name, "%s/b%u", w->name, burst);
                row->isolates = w->isolates;
                row->burst = w->flags & CAL_F_IDLE ? 0 : burst;
                row->frame = size;
                if (o->progress)
                    o->progress(o->aux, out->n_rows, total, row->name);
                if (cal_measure(w, burst, size, clk, o, row, err, errlen)) {
                    sim_calib_free(out);
                    return -1;
                }
                out->n_rows++;
            }
        }
    }
    if (sim_calib_fit(out) || sim_calib_bootstrap(out, CAL_BOOTSTRAP, 1)) {
        fs_errf(err, errlen, "out of memory");
        sim_calib_free(out);
        return -1;
    }
    return 0;
}

void sim_calib_free(struct sim_calib *c)
{
    if (!c)
        return;
    free(c->rows);
    memset(c, 0, sizeof *c);
}
