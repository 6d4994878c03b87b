/* bench_txbatch.c: what output batching (src/txq.c) buys, and what a flush
 * interval costs in latency.
 *
 * Setup: 4 output ports whose send call busy-waits a fixed cost per call
 * (default 250 ns, standing for a NIC doorbell or a vhost ring update +
 * kick; how the default was chosen: docs/performance.md), then releases
 * the packets.
 * 64-byte packets from a preallocated pool; F flows (1, 10, 32, 100, 1000),
 * flow f goes to port f % 4; every rx batch holds 32 packets whose flows
 * are drawn uniformly (fixed-seed PRNG); the packets of a batch are grouped
 * by flow as a datapath does before executing actions.
 *
 * Modes:
 *   off         each flow group of an rx batch is sent at once with its own
 *               send call (OVS before 2.9: one call per flow batch)
 *   interval0   groups are queued per port, every port is flushed at the end
 *               of the rx batch (txq_flush_if_due with interval 0)
 *   interval50  tx-flush-interval = 50 us: a port's batch leaves when full
 *               (on the 33rd enqueue) or at the first rx batch end with
 *               now >= first enqueue + 50 us
 *
 * Time: the datapath decisions and the latency use a virtual clock that
 * advances a fixed gap per rx batch (default 8 us: 32 packets / 8 us =
 * 4 Mpps offered, a busy PMD in a PVP setup), so batch sizes and latencies
 * are exact and identical on every machine. Latency = send time - rx time on that clock, i.e. the time
 * a packet waited in its output batch. Mpps is wall-clock processing speed
 * (rx from the pool, grouping, queueing, send calls with their emulated
 * cost, release), the median of --runs rounds; in each round the three
 * modes of a flow count run back to back (the order alternating), and
 * "batched / off" is the median of the rounds' paired ratios.
 *
 * Usage: bench_txbatch [--json FILE] [--send-cost-ns N] [--packets N]
 *                      [--runs N] [--gap-ns N] [--pkt-cost-ns N] [--quick]
 *
 * --pkt-cost-ns adds a busy-wait of N ns per packet (per rx batch, before
 * the outputs) standing for the rest of a datapath's per-packet work
 * (parse, lookup, actions, a vhost copy); the default 0 measures the
 * transmit stage alone, which is why its ratios exceed OVS's. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_dp.h"
#include "util.h"
#include "drop.h"
#include "netdev-provider.h"
#include "packet.h"
#include "txq.h"

#define BT_PORTS 4
#define BT_POOL 1024
#define BT_PKT_LEN 64
#define BT_TRACE 65536 /* flow ids drawn once, reused cyclically */
#define BT_MAX_FLOWS 1000
#define BT_LAT_BIN_NS 100
#define BT_LAT_BINS 20000 /* 0 .. 2 ms; the last bin holds the rest */

enum bt_mode { BT_OFF, BT_INTERVAL0, BT_INTERVAL50, BT_N_MODES };
static const char *const bt_mode_name[BT_N_MODES] = {"off", "interval0",
                                                     "interval50"};
static const unsigned bt_flows[] = {1, 10, 32, 100, 1000};
#define BT_N_FLOWS (sizeof bt_flows / sizeof bt_flows[0])
#define BT_LAT_FLOWS_IDX 3 /* the headline latency: 100 flows */

/* ---- clock and busy-wait ---------------------------------------------- */

static uint64_t bt_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void bt_busy_wait(uint64_t ns)
{
    uint64_t end = bt_wall_ns() + ns;
    while (bt_wall_ns() < end)
        continue;
}

/* ---- packet pool ------------------------------------------------------- */

struct bt_pool;

struct bt_pkt {
    struct pkt pkt;
    struct bt_pkt *next;
    struct bt_pool *pool;
    uint64_t rx_ns;
    uint8_t frame[PKT_HEADROOM + BT_PKT_LEN];
};

struct bt_pool {
    struct bt_pkt *pkts;
    struct bt_pkt *free;
    unsigned n_free;
};

static void bt_pkt_release(struct pkt *p)
{
    struct bt_pkt *b = p->owner;
    b->next = b->pool->free;
    b->pool->free = b;
    b->pool->n_free++;
}

static const struct pkt_ops bt_pkt_ops = {.release = bt_pkt_release};

static int bt_pool_init(struct bt_pool *pool)
{
    pool->pkts = calloc(BT_POOL, sizeof *pool->pkts);
    if (!pool->pkts)
        return -1;
    pool->free = NULL;
    pool->n_free = 0;
    for (unsigned i = 0; i < BT_POOL; i++) {
        struct bt_pkt *b = &pool->pkts[i];
        b->pool = pool;
        b->pkt.buf = b->frame;
        b->pkt.buf_size = sizeof b->frame;
        b->pkt.data = b->frame + PKT_HEADROOM;
        b->pkt.ops = &bt_pkt_ops;
        b->pkt.owner = b;
        memset(b->pkt.data, 0x5a, BT_PKT_LEN);
        bt_pkt_release(&b->pkt);
    }
    return 0;
}

static inline struct pkt *bt_pool_get(struct bt_pool *pool)
{
    struct bt_pkt *b = pool->free;
    pool->free = b->next;
    pool->n_free--;
    return &b->pkt;
}

/* ---- the emulated port ------------------------------------------------- */

struct bt_port {
    uint64_t cost_ns;
    uint64_t *lat_hist; /* BT_LAT_BINS, shared by the ports of a run */
    uint64_t calls;
};

static int bt_send(struct netdev *dev, unsigned qid, struct pkt **pkts, int n,
                   uint16_t summary)
{
    struct bt_port *port = dev->priv;
    (void)qid;
    (void)summary;
    port->calls++;
    if (port->cost_ns)
        bt_busy_wait(port->cost_ns);
    for (int i = 0; i < n; i++) {
        struct pkt *p = pkts[i];
        const struct bt_pkt *b = p->owner;
        uint64_t lat = (p->ts - b->rx_ns) / BT_LAT_BIN_NS; /* ts: send time */
        port->lat_hist[lat < BT_LAT_BINS ? lat : BT_LAT_BINS - 1]++;
        pkt_free(p);
    }
    return n;
}

static const struct netdev_class bt_class = {
    .type = "benchtx",
    .send = bt_send,
    .tx_stamps = true, /* bt_send() reads pkt->ts, the send time */
};

/* ---- one run ------------------------------------------------------------ */

struct bt_cfg {
    uint64_t send_cost_ns;
    uint64_t packets; /* per run */
    unsigned runs;
    uint64_t gap_ns;  /* virtual time between rx batches */
    uint64_t pkt_cost_ns; /* optional other per-packet work (default 0) */
    double send_cost_measured_ns;
};

struct bt_result {
    double mpps;      /* median of the rounds */
    struct bench_stat vs_off; /* paired per-round Mpps ratio to mode off */
    double avg_batch; /* packets per send call */
    uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns;
    uint64_t send_calls;
};

static uint32_t bt_rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Smallest v (bin lower edge, ns) with at least q of the samples <= v. */
static uint64_t bt_percentile(const uint64_t *hist, double q)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < BT_LAT_BINS; i++)
        total += hist[i];
    if (total == 0)
        return 0;
    uint64_t need = (uint64_t)(q * (double)total + 0.999999);
    if (need == 0)
        need = 1;
    uint64_t acc = 0;
    for (unsigned i = 0; i < BT_LAT_BINS; i++) {
        acc += hist[i];
        if (acc >= need)
            return (uint64_t)i * BT_LAT_BIN_NS;
    }
    return (uint64_t)(BT_LAT_BINS - 1) * BT_LAT_BIN_NS;
}

static uint64_t bt_hist_max(const uint64_t *hist)
{
    for (unsigned i = BT_LAT_BINS; i-- > 0;)
        if (hist[i])
            return (uint64_t)i * BT_LAT_BIN_NS;
    return 0;
}

struct bt_ctx {
    struct bt_pool pool;
    uint16_t trace[BT_TRACE];
    uint32_t stamp[BT_MAX_FLOWS];
    uint8_t gidx[BT_MAX_FLOWS];
    uint64_t lat_hist[BT_LAT_BINS];
};

/* Processes cfg->packets packets in 'mode' with 'flows' flows. Returns the
 * wall-clock ns it took; fills the batching and latency figures. Exits on
 * a broken invariant (a lost or dropped packet). */
static uint64_t bt_run(struct bt_ctx *c, const struct bt_cfg *cfg,
                       enum bt_mode mode, unsigned flows, uint64_t gap_ns,
                       uint64_t packets, struct bt_result *res)
{
    struct bt_port ports[BT_PORTS];
    struct netdev devs[BT_PORTS];
    struct txq q[BT_PORTS];
    uint64_t interval = mode == BT_INTERVAL50 ? 50 * FS_NSEC_PER_USEC : 0;

    memset(c->lat_hist, 0, sizeof c->lat_hist);
    memset(c->stamp, 0, sizeof c->stamp);
    for (unsigned i = 0; i < BT_PORTS; i++) {
        ports[i] = (struct bt_port){.cost_ns = cfg->send_cost_ns,
                                    .lat_hist = c->lat_hist};
        memset(&devs[i], 0, sizeof devs[i]);
        devs[i].class = &bt_class;
        snprintf(devs[i].name, sizeof devs[i].name, "out%u", i);
        devs[i].priv = &ports[i];
        txq_init(&q[i], &devs[i], 0, 8, interval);
    }
    uint64_t seed = 0x243f6a8885a308d3ull ^ flows;
    for (unsigned i = 0; i < BT_TRACE; i++)
        c->trace[i] = (uint16_t)(bt_rng(&seed) % flows);

    uint64_t n_batches = packets / PKT_BATCH_MAX;
    unsigned tpos = 0;
    uint64_t now = 0;
    uint64_t t0 = bt_wall_ns();
    for (uint64_t b = 1; b <= n_batches; b++) {
        now = b * gap_ns;
        /* rx: a burst of 32, grouped by flow in order of first appearance */
        struct pkt *grp[PKT_BATCH_MAX][PKT_BATCH_MAX];
        uint8_t gcnt[PKT_BATCH_MAX];
        uint16_t gflow[PKT_BATCH_MAX];
        unsigned ng = 0;
        for (unsigned i = 0; i < PKT_BATCH_MAX; i++) {
            struct pkt *p = bt_pool_get(&c->pool);
            struct bt_pkt *bp = p->owner;
            unsigned f = c->trace[tpos++ & (BT_TRACE - 1)];
            p->len = BT_PKT_LEN;
            p->ts = now;
            p->hash = f;
            bp->rx_ns = now;
            if (c->stamp[f] != (uint32_t)b) {
                c->stamp[f] = (uint32_t)b;
                c->gidx[f] = (uint8_t)ng;
                gflow[ng] = (uint16_t)f;
                gcnt[ng] = 0;
                ng++;
            }
            unsigned g = c->gidx[f];
            grp[g][gcnt[g]++] = p;
        }
        if (cfg->pkt_cost_ns) /* parse, lookup, actions of the 32 */
            bt_busy_wait(cfg->pkt_cost_ns * PKT_BATCH_MAX);
        /* actions: output to the flow's port */
        for (unsigned g = 0; g < ng; g++) {
            struct txq *tq = &q[gflow[g] % BT_PORTS];
            for (unsigned i = 0; i < gcnt[g]; i++)
                txq_enqueue(tq, grp[g][i], now);
            if (mode == BT_OFF)
                txq_flush(tq, now);
        }
        /* end of the rx batch */
        if (mode != BT_OFF)
            for (unsigned i = 0; i < BT_PORTS; i++)
                txq_flush_if_due(&q[i], now);
    }
    /* the next poll iteration finds nothing: an idle PMD flushes all */
    now += gap_ns;
    for (unsigned i = 0; i < BT_PORTS; i++)
        txq_flush(&q[i], now);
    uint64_t elapsed = bt_wall_ns() - t0;

    uint64_t sent = 0, calls = 0, dropped = 0;
    for (unsigned i = 0; i < BT_PORTS; i++) {
        sent += q[i].stats.n[TXQ_STAT_PACKETS];
        calls += q[i].stats.n[TXQ_STAT_SEND_CALLS];
        for (int r = 0; r < DROP_N_REASONS; r++)
            dropped += q[i].stats.dropped[r];
        if (ports[i].calls != q[i].stats.n[TXQ_STAT_SEND_CALLS] || txq_queued(&q[i])) {
            fprintf(stderr, "bench_txbatch: port %u: call count mismatch\n", i);
            exit(1);
        }
    }
    if (sent != n_batches * PKT_BATCH_MAX || dropped || c->pool.n_free != BT_POOL) {
        fprintf(stderr,
                "bench_txbatch: conservation broken: sent %" PRIu64
                " dropped %" PRIu64 " pool %u/%u\n",
                sent, dropped, c->pool.n_free, BT_POOL);
        exit(1);
    }
    res->send_calls = calls;
    res->avg_batch = calls ? (double)sent / (double)calls : 0;
    res->lat_p50_ns = bt_percentile(c->lat_hist, 0.50);
    res->lat_p99_ns = bt_percentile(c->lat_hist, 0.99);
    res->lat_max_ns = bt_hist_max(c->lat_hist);
    return elapsed;
}

/* Measures every (mode, flows) case: cfg->runs rounds, each round running
 * every case once, the three modes of a flow count back to back (their
 * order reversed every other round), so that a burst of interference on a
 * shared machine spreads over the cases and hits a pair's two runs alike. */
static void bt_measure_all(struct bt_ctx *c, const struct bt_cfg *cfg,
                           struct bt_result r[BT_N_MODES][BT_N_FLOWS])
{
    static double mpps[BT_N_MODES][BT_N_FLOWS][16], ratio[16];
    unsigned runs = cfg->runs < 16 ? cfg->runs : 16;
    uint64_t pk = cfg->packets / PKT_BATCH_MAX * PKT_BATCH_MAX;
    for (int m = 0; m < BT_N_MODES; m++) /* warm up, and the exact figures */
        for (unsigned f = 0; f < BT_N_FLOWS; f++)
            bt_run(c, cfg, (enum bt_mode)m, bt_flows[f], cfg->gap_ns, cfg->packets,
                   &r[m][f]);
    for (unsigned k = 0; k < runs; k++)
        for (unsigned f = 0; f < BT_N_FLOWS; f++)
            for (int j = 0; j < BT_N_MODES; j++) {
                int m = k % 2 ? BT_N_MODES - 1 - j : j;
                struct bt_result tmp;
                uint64_t ns = bt_run(c, cfg, (enum bt_mode)m, bt_flows[f], cfg->gap_ns,
                                     cfg->packets, &tmp);
                mpps[m][f][k] = ns ? (double)pk * 1e3 / (double)ns : 0;
            }
    for (unsigned f = 0; f < BT_N_FLOWS; f++) {
        for (int m = 0; m < BT_N_MODES; m++) {
            for (unsigned k = 0; k < runs; k++)
                ratio[k] = mpps[0][f][k] > 0 ? mpps[m][f][k] / mpps[0][f][k] : 0;
            r[m][f].vs_off = bench_stat_of(ratio, runs);
        }
        for (int m = 0; m < BT_N_MODES; m++)
            r[m][f].mpps = bench_stat_of(mpps[m][f], runs).median;
    }
}

/* ---- output --------------------------------------------------------------- */

/* OVS-DPDK reference figures printed next to ours (provenance:
 * docs/performance.md). */
static const unsigned ovs29_flows[] = {10, 32, 50, 100, 500, 1000};
static const double ovs29_before[] = {3.123350, 2.090440, 1.954184,
                                      1.705794, 1.601252, 1.568175};
static const double ovs29_after[] = {4.174807, 3.625314, 3.499402,
                                     3.264955, 2.956190, 2.712385};
static const char *const ovsint_flows[] = {"8",  "100", "1000", "2000", "5000",
                                           "10k", "20k", "50k", "100k", "500k"};
static const double ovsint_unbatched[] = {4.419, 4.026, 3.630, 3.394, 2.989,
                                          2.756, 2.641, 2.604, 2.598, 2.598};
static const double ovsint_i0[] = {4.342, 3.956, 3.632, 3.390, 2.938,
                                   2.711, 2.598, 2.558, 2.552, 2.550};
static const double ovsint_i50[] = {4.749, 4.281, 3.760, 3.490, 2.994,
                                    2.746, 2.622, 2.579, 2.572, 2.571};

#define BT_N_LOADS 4
static const uint64_t bt_load_gap_us[BT_N_LOADS] = {2, 8, 32, 128};

static void bt_print(const struct bt_cfg *cfg,
                     struct bt_result r[BT_N_MODES][BT_N_FLOWS],
                     const struct bt_result *pooled,
                     struct bt_result load[BT_N_LOADS])
{
    printf("tx batching: %d output ports, %d B packets, rx batches of %d, flows drawn "
           "uniformly, flow f -> port f %% %d\n",
           BT_PORTS, BT_PKT_LEN, PKT_BATCH_MAX, BT_PORTS);
    printf("send cost %" PRIu64 " ns per call (busy-wait; measured %.0f ns), other "
           "per-packet work %" PRIu64 " ns;\n",
           cfg->send_cost_ns, cfg->send_cost_measured_ns, cfg->pkt_cost_ns);
    printf("virtual clock: one rx batch per poll iteration, every %.1f us = %.2f Mpps "
           "offered (busy PMD);\n",
           (double)cfg->gap_ns / 1e3, PKT_BATCH_MAX * 1e3 / (double)cfg->gap_ns);
    printf("Mpps: wall clock, median of %u rounds of %" PRIu64 " packets; batch: "
           "packets per send call; latency: virtual clock (exact)\n\n",
           cfg->runs, cfg->packets / PKT_BATCH_MAX * PKT_BATCH_MAX);

    printf("%-28s", "flows");
    for (unsigned f = 0; f < BT_N_FLOWS; f++)
        printf("%12u", bt_flows[f]);
    printf("\n");
    for (int m = 0; m < BT_N_MODES; m++) {
        char label[64];
        snprintf(label, sizeof label, "Mpps %s", bt_mode_name[m]);
        printf("%-28s", label);
        for (unsigned f = 0; f < BT_N_FLOWS; f++)
            printf("%12.3f", r[m][f].mpps);
        printf("\n");
    }
    for (int m = 1; m < BT_N_MODES; m++) {
        char label[64];
        snprintf(label, sizeof label, "  %s / off (paired)", bt_mode_name[m]);
        printf("%-28s", label);
        for (unsigned f = 0; f < BT_N_FLOWS; f++)
            printf("%12.2f", r[m][f].vs_off.median);
        printf("\n");
    }
    for (int m = 0; m < BT_N_MODES; m++) {
        char label[64];
        snprintf(label, sizeof label, "avg batch %s", bt_mode_name[m]);
        printf("%-28s", label);
        for (unsigned f = 0; f < BT_N_FLOWS; f++)
            printf("%12.2f", r[m][f].avg_batch);
        printf("\n");
    }
    for (int m = 0; m < BT_N_MODES; m++) {
        char label[64];
        snprintf(label, sizeof label, "latency us %s p50/p99", bt_mode_name[m]);
        printf("%-28s", label);
        for (unsigned f = 0; f < BT_N_FLOWS; f++) {
            char cell[32];
            snprintf(cell, sizeof cell, "%.1f/%.1f", r[m][f].lat_p50_ns / 1e3,
                     r[m][f].lat_p99_ns / 1e3);
            printf("%12s", cell);
        }
        printf("\n");
    }
    printf("interval50 added latency, 100 flows: p50 %.1f us, p99 %.1f us, max %.1f us "
           "(all flow counts pooled: p50 %.1f, p99 %.1f)\n\n",
           r[BT_INTERVAL50][BT_LAT_FLOWS_IDX].lat_p50_ns / 1e3,
           r[BT_INTERVAL50][BT_LAT_FLOWS_IDX].lat_p99_ns / 1e3,
           r[BT_INTERVAL50][BT_LAT_FLOWS_IDX].lat_max_ns / 1e3,
           pooled->lat_p50_ns / 1e3, pooled->lat_p99_ns / 1e3);

    printf("interval50 latency vs load (100 flows; a busy PMD: one rx batch per poll iteration,\n"
           "no idle iteration in between, which would flush everything):\n");
    printf("%-28s", "rx batch every (us)");
    for (unsigned l = 0; l < BT_N_LOADS; l++)
        printf("%12" PRIu64, bt_load_gap_us[l]);
    printf("\n%-28s", "offered Mpps");
    for (unsigned l = 0; l < BT_N_LOADS; l++)
        printf("%12.2f", PKT_BATCH_MAX / (double)bt_load_gap_us[l]);
    printf("\n%-28s", "avg batch");
    for (unsigned l = 0; l < BT_N_LOADS; l++)
        printf("%12.2f", load[l].avg_batch);
    printf("\n%-28s", "latency us p50/p99");
    for (unsigned l = 0; l < BT_N_LOADS; l++) {
        char cell[32];
        snprintf(cell, sizeof cell, "%.1f/%.1f", load[l].lat_p50_ns / 1e3,
                 load[l].lat_p99_ns / 1e3);
        printf("%12s", cell);
    }
    printf("\n\n");

    printf("reference, OVS 2.9 output batching (BACKGROUND.md 5; PVP, one phy port, "
           "64 B at 10G, one PMD), Mpps:\n");
    printf("%-28s", "flows");
    for (unsigned i = 0; i < 6; i++)
        printf("%12u", ovs29_flows[i]);
    printf("\n%-28s", "OVS before (per-flow send)");
    for (unsigned i = 0; i < 6; i++)
        printf("%12.3f", ovs29_before[i]);
    printf("\n%-28s", "OVS after (output batch)");
    for (unsigned i = 0; i < 6; i++)
        printf("%12.3f", ovs29_after[i]);
    printf("\n%-28s", "  after / before");
    for (unsigned i = 0; i < 6; i++)
        printf("%12.2f", ovs29_after[i] / ovs29_before[i]);
    printf("\n\nreference, OVS tx-flush-interval (BACKGROUND.md 5; PVP L3-VPN/VXLAN, "
           "4 vhost ports, 64 B, one PMD), Mpps:\n");
    printf("%-28s", "flows");
    for (unsigned i = 0; i < 10; i++)
        printf("%7s", ovsint_flows[i]);
    printf("\n%-28s", "OVS unbatched");
    for (unsigned i = 0; i < 10; i++)
        printf("%7.3f", ovsint_unbatched[i]);
    printf("\n%-28s", "OVS interval 0");
    for (unsigned i = 0; i < 10; i++)
        printf("%7.3f", ovsint_i0[i]);
    printf("\n%-28s", "OVS interval 50");
    for (unsigned i = 0; i < 10; i++)
        printf("%7.3f", ovsint_i50[i]);
    printf("\n%-28s", "  interval 50 / interval 0");
    for (unsigned i = 0; i < 10; i++)
        printf("%7.3f", ovsint_i50[i] / ovsint_i0[i]);
    printf("\nOVS: interval 50 adds 20-30 us of ping RTT.\n");
}

static int bt_write_json(const char *path, const struct bt_cfg *cfg,
                         struct bt_result r[BT_N_MODES][BT_N_FLOWS],
                         const struct bt_result *pooled,
                         struct bt_result load[BT_N_LOADS])
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_txbatch: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\n  \"bench\": \"txbatch\",\n");
    const char *keys[] = {"mpps", "avg_batch", "latency_us_p50_by_flows",
                          "latency_us_p99_by_flows", "mpps_median"};
    for (unsigned k = 0; k < 5; k++) {
        fprintf(f, "  \"%s\": {", keys[k]);
        for (int m = 0; m < BT_N_MODES; m++) {
            fprintf(f, "%s\n    \"%s\": {", m ? "," : "", bt_mode_name[m]);
            for (unsigned fl = 0; fl < BT_N_FLOWS; fl++) {
                double v = k == 0   ? r[m][fl].mpps
                           : k == 1 ? r[m][fl].avg_batch
                           : k == 2 ? r[m][fl].lat_p50_ns / 1e3
                           : k == 3 ? r[m][fl].lat_p99_ns / 1e3
                                    : r[m][fl].mpps;
                fprintf(f, "%s\"%u\": %.4f", fl ? ", " : "", bt_flows[fl], v);
            }
            fprintf(f, "}");
        }
        fprintf(f, "\n  },\n");
    }
    fprintf(f, "  \"ratio_vs_off\": {");
    for (int m = 1; m < BT_N_MODES; m++) {
        fprintf(f, "%s\n    \"%s\": {", m > 1 ? "," : "", bt_mode_name[m]);
        for (unsigned fl = 0; fl < BT_N_FLOWS; fl++) {
            const struct bench_stat *q = &r[m][fl].vs_off;
            fprintf(f, "%s\"%u\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}",
                    fl ? ", " : "", bt_flows[fl], q->median, q->min, q->max);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  },\n");
    fprintf(f, "  \"estimator\": \"mpps (and mpps_median, the same): the median of the "
               "rounds; ratio_vs_off: the median of the per-round ratios, a round running "
               "the three modes of a flow count back to back, min and max beside it\",\n");
    const struct bt_result *rl = &r[BT_INTERVAL50][BT_LAT_FLOWS_IDX];
    fprintf(f, "  \"latency_us_p50\": %.1f,\n  \"latency_us_p99\": %.1f,\n"
               "  \"latency_us_max\": %.1f,\n",
            rl->lat_p50_ns / 1e3, rl->lat_p99_ns / 1e3, rl->lat_max_ns / 1e3);
    fprintf(f, "  \"latency_note\": \"interval50 mode, %u flows, virtual clock; "
               "all flow counts pooled: p50 %.1f, p99 %.1f\",\n",
            bt_flows[BT_LAT_FLOWS_IDX], pooled->lat_p50_ns / 1e3,
            pooled->lat_p99_ns / 1e3);
    fprintf(f, "  \"latency_by_load\": [");
    for (unsigned l = 0; l < BT_N_LOADS; l++)
        fprintf(f, "%s\n    {\"rx_batch_gap_us\": %" PRIu64 ", \"offered_mpps\": %.2f, "
                   "\"flows\": 100, \"avg_batch\": %.2f, \"p50\": %.1f, \"p99\": %.1f}",
                l ? "," : "", bt_load_gap_us[l],
                PKT_BATCH_MAX / (double)bt_load_gap_us[l], load[l].avg_batch,
                load[l].lat_p50_ns / 1e3, load[l].lat_p99_ns / 1e3);
    fprintf(f, "\n  ],\n");
    fprintf(f, "  \"send_cost_measured_ns\": %.1f,\n  \"pkt_cost_ns\": %" PRIu64 ",\n",
            cfg->send_cost_measured_ns, cfg->pkt_cost_ns);
    fprintf(f, "  \"send_cost_ns\": %" PRIu64 ",\n  \"offered_mpps\": %.2f,\n"
               "  \"rx_batch_gap_us\": %.1f,\n  \"ports\": %d,\n"
               "  \"packet_bytes\": %d,\n  \"packets_per_run\": %" PRIu64 ",\n"
               "  \"runs\": %u\n}\n",
            cfg->send_cost_ns, PKT_BATCH_MAX * 1e3 / (double)cfg->gap_ns,
            (double)cfg->gap_ns / 1e3, BT_PORTS, BT_PKT_LEN,
            cfg->packets / PKT_BATCH_MAX * PKT_BATCH_MAX, cfg->runs);
    if (fclose(f) != 0) {
        fprintf(stderr, "bench_txbatch: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int bt_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static void bt_usage(FILE *f)
{
    fprintf(f, "usage: bench_txbatch [--json FILE] [--send-cost-ns N] "
               "[--packets N] [--runs N] [--gap-ns N] [--pkt-cost-ns N] [--quick]\n");
}

int main(int argc, char **argv)
{
    struct bt_cfg cfg = {.send_cost_ns = 250, .packets = 1 << 21, .runs = 5,
                         .gap_ns = 8000};
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t x;
        if (!strcmp(a, "--quick")) {
            cfg.packets = 1 << 16;
            cfg.runs = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bt_usage(stdout);
            return 0;
        }
        if (!v) {
            bt_usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--json")) {
            json = v;
        } else if (!strcmp(a, "--send-cost-ns") && !bt_parse_u64(v, 0, 100000, &x)) {
            cfg.send_cost_ns = x;
        } else if (!strcmp(a, "--packets") &&
                   !bt_parse_u64(v, PKT_BATCH_MAX, 1ull << 32, &x)) {
            cfg.packets = x;
        } else if (!strcmp(a, "--runs") && !bt_parse_u64(v, 1, 15, &x)) {
            cfg.runs = (unsigned)x;
        } else if (!strcmp(a, "--gap-ns") && !bt_parse_u64(v, 1, 10000000, &x)) {
            cfg.gap_ns = x;
        } else if (!strcmp(a, "--pkt-cost-ns") && !bt_parse_u64(v, 0, 100000, &x)) {
            cfg.pkt_cost_ns = x;
        } else {
            fprintf(stderr, "bench_txbatch: bad option or value: %s %s\n", a, v);
            bt_usage(stderr);
            return 2;
        }
    }

    struct bt_ctx *c = calloc(1, sizeof *c);
    if (!c || bt_pool_init(&c->pool)) {
        fprintf(stderr, "bench_txbatch: out of memory\n");
        return 1;
    }
    /* what one emulated send call really costs (the busy-wait overshoots
     * by up to one clock read) */
    if (cfg.send_cost_ns) {
        double chunk[11];
        for (unsigned k = 0; k < 11; k++) { /* median of 11 chunks: noise */
            uint64_t t0 = bt_wall_ns();
            for (unsigned i = 0; i < 2000; i++)
                bt_busy_wait(cfg.send_cost_ns);
            chunk[k] = (double)(bt_wall_ns() - t0);
        }
        cfg.send_cost_measured_ns = bench_stat_of(chunk, 11).median / 2000;
    }
    static struct bt_result r[BT_N_MODES][BT_N_FLOWS];
    bt_measure_all(c, &cfg, r);

    /* Latency is exact on the virtual clock: one run per case, no cost. */
    struct bt_cfg lcfg = cfg;
    lcfg.send_cost_ns = 0;
    uint64_t pooled_hist[BT_LAT_BINS] = {0};
    struct bt_result tmp;
    for (unsigned f = 0; f < BT_N_FLOWS; f++) {
        bt_run(c, &lcfg, BT_INTERVAL50, bt_flows[f], cfg.gap_ns, cfg.packets, &tmp);
        for (unsigned i = 0; i < BT_LAT_BINS; i++)
            pooled_hist[i] += c->lat_hist[i];
    }
    struct bt_result pooled = {
        .lat_p50_ns = bt_percentile(pooled_hist, 0.50),
        .lat_p99_ns = bt_percentile(pooled_hist, 0.99),
        .lat_max_ns = bt_hist_max(pooled_hist),
    };
    struct bt_result load[BT_N_LOADS];
    for (unsigned l = 0; l < BT_N_LOADS; l++)
        bt_run(c, &lcfg, BT_INTERVAL50, 100, bt_load_gap_us[l] * 1000,
               cfg.packets < (1u << 18) ? cfg.packets : (1u << 18), &load[l]);

    bt_print(&cfg, r, &pooled, load);
    int rc = 0;
    /* Batches bigger than one rx batch's share of a port were held across
     * poll iterations, so they waited: a zero wait means pkt->ts was not the
     * send time (a device class without tx_stamps leaves it unset). */
    const struct bt_result *h = &r[BT_INTERVAL50][BT_LAT_FLOWS_IDX];
    if (h->avg_batch > (double)PKT_BATCH_MAX / BT_PORTS && h->lat_max_ns == 0) {
        fprintf(stderr, "bench_txbatch: interval50 sent %.1f packets a call without "
                        "latency: send times not stamped\n", h->avg_batch);
        rc = 1;
    }
    if (json && bt_write_json(json, &cfg, r, &pooled, load))
        rc = 1;
    free(c->pool.pkts);
    free(c);
    return rc;
}
