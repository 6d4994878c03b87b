/* bench_fwd: forwarding rate between two dummy ports through the whole
 * datapath (parse, lookup, actions, output batching, backend send).
 *
 *   bench_fwd [--flows N] [--state unknown|good] [--seconds S] [--packets N]
 *             [--json FILE] [--label NAME]
 *
 * 64-byte UDP/IPv4 packets from N flows enter dummy port p0 in rx batches of
 * 32; the rule `in_port=p0 actions=output:p1` sends them to p1, which keeps
 * what it transmits so the same packets are injected again: no allocation
 * in the measured loop. --state good marks the IP and L4 checksums GOOD on
 * every injection, as a NIC's rx verdict would. Prints Mpps and ns/packet;
 * the JSON is {"label":..., "flows":..., "state":..., "mpps":...,
 * "ns_per_pkt":..., "packets":...}. --packets N runs a fixed amount of work
 * instead of a time: N packets (rounded up to whole rounds of 64 batches)
 * measured, after a warm-up of a tenth of that. The measured phase is the
 * one call of bf_measure(), so `valgrind --tool=callgrind
 * --toggle-collect=bf_measure bench_fwd --packets N` counts exactly the
 * instructions of N forwarded packets (rx, datapath, tx, re-injection).
 * Run it built normally and built with -DFS_CSUM_OFF (the checksum
 * machinery compiled out) to measure what the machinery costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "bench_dp.h"
#include "config.h"
#include "dp.h"
#include "netdev.h"
#include "packet.h"

#define BF_POOL (PKT_BATCH_MAX * 8)

static double bf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round: 64 rx batches of PKT_BATCH_MAX packets. */
#define BF_ROUND (64 * PKT_BATCH_MAX)

/* The forwarding loop's state. */
struct bf_ctx {
    struct dp_pmd *pmd;
    struct netdev *in, *out;
    struct pkt **pool; /* BF_POOL slots, n_pool of them free packets */
    unsigned n_pool;
    bool good;       /* mark every injected packet's outer states GOOD */
    uint64_t now;    /* PMD clock passed to dp_pmd_poll() */
    uint64_t packets; /* forwarded by the last bf_run() */
    double start, end; /* its wall-clock span */
    uint64_t measured; /* forwarded by bf_measure() */
};

/* Forwards whole rounds: exactly 'rounds' of them when rounds > 0, else
 * until 'seconds' have passed (at least one). Sets c->packets, c->start and
 * c->end. Returns 0, or -1 (with a message) if the datapath lost packets. */
static int bf_run(struct bf_ctx *c, double seconds, uint64_t rounds)
{
    uint64_t n = 0, done = 0;
    c->start = bf_now();
    do {
        for (int rep = 0; rep < 64; rep++) {
            if (c->n_pool < PKT_BATCH_MAX) {
                fprintf(stderr, "bench_fwd: packets lost in the datapath\n");
                return -1;
            }
            for (unsigned k = 0; k < PKT_BATCH_MAX; k++) {
                struct pkt *p = c->pool[--c->n_pool];
                p->ts = 0;
                if (c->good) {
                    p->csum[CSUM_L_OUTER_IP] = CSUM_GOOD;
                    p->csum[CSUM_L_OUTER_L4] = CSUM_GOOD;
                }
                netdev_dummy_inject(c->in, 0, p);
            }
            dp_pmd_poll(c->pmd, c->now++);
            c->n_pool += (unsigned)netdev_dummy_collect(c->out, 0, c->pool + c->n_pool,
                                                        (int)(BF_POOL - c->n_pool));
            n += PKT_BATCH_MAX;
        }
        c->end = bf_now();
        done++;
    } while (rounds ? done < rounds : c->end - c->start < seconds);
    c->packets = n;
    return 0;
}

/* The measured phase: bf_run() in a function of its own, never inlined, for
 * callgrind's --toggle-collect (its body differs from bf_run's, so the
 * compiler cannot fold the warm-up's call into it either). */
__attribute__((noinline)) static int bf_measure(struct bf_ctx *c, double seconds,
                                                uint64_t rounds)
{
    int r = bf_run(c, seconds, rounds);
    c->measured = c->packets;
    return r;
}

int main(int argc, char **argv)
{
    unsigned flows = 1;
    double seconds = 2.0;
    uint64_t packets = 0;
    bool good = false;
    const char *json = NULL, *label = "fwd";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--flows") && v) {
            flows = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            seconds = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--packets") && v) {
            packets = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--state") && v) {
            good = !strcmp(v, "good");
            i++;
        } else if (!strcmp(a, "--json") && v) {
            json = v;
            i++;
        } else if (!strcmp(a, "--label") && v) {
            label = v;
            i++;
        } else {
            fprintf(stderr, "usage: bench_fwd [--flows N] [--state unknown|good] "
                            "[--seconds S] [--packets N] [--json FILE] [--label NAME]\n");
            return 2;
        }
    }
    if (flows == 0)
        flows = 1;

    netdev_dummy_register();
    struct config cfg;
    struct dp *dp;
    if (bench_dp_open("bench_fwd",
                      "[port p0]\ntype = dummy\n\n[port p1]\ntype = dummy\ntx-keep = true\n\n"
                      "[rules]\nrule = in_port=p0 actions=output:p1\n",
                      &cfg, &dp))
        return 1;
    struct dp_pmd *pmd = dp_pmd_create(dp);
    struct dp_port_info pin, pout;
    dp_port_get(dp, 0, &pin);
    dp_port_get(dp, 1, &pout);
    struct netdev *in = pin.dev, *out = pout.dev;

    struct pkt *pool[BF_POOL];
    unsigned n_pool = 0, next_flow = 0;
    for (unsigned i = 0; i < BF_POOL; i++)
        pool[n_pool++] = bench_udp_packet(next_flow++ % flows);

    struct bf_ctx c = {
        .pmd = pmd, .in = in, .out = out, .pool = pool, .n_pool = n_pool,
        .good = good, .now = 1,
    };
    uint64_t rounds = (packets + BF_ROUND - 1) / BF_ROUND;
    /* Warm-up (not measured), then the measured phase. */
    if (bf_run(&c, seconds / 10, packets ? (rounds + 9) / 10 : 0) < 0 ||
        bf_measure(&c, seconds, rounds) < 0)
        return 1;
    packets = c.measured;
    double start = c.start, end = c.end;
    n_pool = c.n_pool;
    double mpps = (double)packets / (end - start) / 1e6;
    printf("%-24s flows %-8u %8.2f Mpps %7.2f ns/pkt\n", label, flows, mpps, 1e3 / mpps);
    if (json) {
        FILE *j = fopen(json, "w");
        if (!j) {
            perror(json);
            return 1;
        }
        fprintf(j, "{\"label\": \"%s\", \"flows\": %u, \"state\": \"%s\", \"mpps\": %.4f, "
                   "\"ns_per_pkt\": %.3f, \"packets\": %llu}\n",
                label, flows, good ? "good" : "unknown", mpps, 1e3 / mpps,
                (unsigned long long)packets);
        fclose(j);
    }
    for (unsigned i = 0; i < n_pool; i++)
        pkt_free(pool[i]);
    dp_pmd_destroy(pmd);
    dp_destroy(dp);
    config_free(&cfg);
    netdev_unregister_all();
    return 0;
}
