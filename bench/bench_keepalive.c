/* bench_keepalive: what keep-alive costs the PMD loop.
 *
 *   bench_keepalive --ka on|off --batches N        (for callgrind)
 *   bench_keepalive --rounds R --seconds S [--json FILE]
 *
 * One PMD of the runtime (app/pmd.c), not started: its poll loop runs on
 * this thread through pmd_runtime_iterate(), one iteration per rx batch of
 * 32 64-byte UDP packets from dummy port p0 to dummy port p1 by the rule
 * `in_port=p0 actions=output:p1`; p1 keeps what it sends so the same
 * packets are injected again (no allocation in the loop). Keep-alive on
 * makes the loop beat the PMD's heartbeat slot every iteration, as a
 * running PMD does (the monitor thread, on another CPU, is not part of
 * the loop's cost).
 *
 * --ka MODE --batches N: N iterations with keep-alive on or off after a
 * warm-up, each in its own call of pmd_runtime_iterate(), so that
 * `valgrind --tool=callgrind --toggle-collect=pmd_runtime_iterate` counts
 * exactly the loop's instructions for N batches (bench/run divides).
 * Prints the packets forwarded.
 *
 * --rounds R --seconds S: R rounds, each timing S seconds of the loop with
 * keep-alive off and S with it on (the order flips every round); prints
 * and writes (JSON) the median Mpps of each and the median of the rounds'
 * on/off ratios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "bench_dp.h"
#include "config.h"
#include "dp.h"
#include "keepalive.h"
#include "netdev.h"
#include "packet.h"
#include "pmd.h"

#define BK_POOL (PKT_BATCH_MAX * 4)

struct bk {
    struct pmd_runtime *rt;
    struct netdev *in, *out;
    struct pkt *pool[BK_POOL];
    unsigned n_pool;
    uint64_t packets;
};

/* n iterations, each over one injected batch. Returns -1 if packets got
 * lost (the loop must forward every one). */
static int bk_run(struct bk *b, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        if (b->n_pool < PKT_BATCH_MAX) {
            fprintf(stderr, "bench_keepalive: packets lost in the datapath\n");
            return -1;
        }
        for (unsigned i = 0; i < PKT_BATCH_MAX; i++) {
            struct pkt *p = b->pool[--b->n_pool];
            p->ts = 0;
            netdev_dummy_inject(b->in, 0, p);
        }
        pmd_runtime_iterate(b->rt, 0, 1);
        b->n_pool += (unsigned)netdev_dummy_collect(b->out, 0, b->pool + b->n_pool,
                                                    (int)(BK_POOL - b->n_pool));
        b->packets += PKT_BATCH_MAX;
    }
    return 0;
}

/* Mpps of the loop for 'seconds' (whole rounds of 256 batches). */
static double bk_timed(struct bk *b, double seconds)
{
    uint64_t before = b->packets;
    double start = bench_now(), end;
    do {
        if (bk_run(b, 256))
            return -1;
        end = bench_now();
    } while (end - start < seconds);
    return (double)(b->packets - before) / (end - start) / 1e6;
}

int main(int argc, char **argv)
{
    const char *ka_mode = NULL, *json = NULL;
    uint64_t batches = 0;
    unsigned rounds = 0;
    double seconds = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--ka") && v) {
            ka_mode = argv[++i];
        } else if (!strcmp(a, "--batches") && v) {
            batches = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--rounds") && v) {
            rounds = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--seconds") && v) {
            seconds = strtod(argv[++i], NULL);
        } else if (!strcmp(a, "--json") && v) {
            json = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_keepalive --ka on|off --batches N | "
                            "--rounds R --seconds S [--json FILE]\n");
            return 2;
        }
    }
    if (!(ka_mode && batches) && !rounds) {
        fprintf(stderr, "bench_keepalive: --ka and --batches, or --rounds\n");
        return 2;
    }

    netdev_dummy_register();
    struct config cfg;
    struct dp *dp;
    char err[512];
    if (bench_dp_open("bench_keepalive",
                      "[port p0]\ntype = dummy\n\n[port p1]\ntype = dummy\ntx-keep = true\n\n"
                      "[rules]\nrule = in_port=p0 actions=output:p1\n",
                      &cfg, &dp))
        return 1;
    struct pmd_config pc;
    pmd_config_default(&pc);
    struct bk b;
    memset(&b, 0, sizeof b);
    struct ka *ka;
    if (pmd_runtime_create(dp, &pc, &b.rt, err, sizeof err) ||
        ka_create(1, 1000, &ka, err, sizeof err)) {
        fprintf(stderr, "bench_keepalive: %s\n", err);
        return 1;
    }
    pmd_runtime_set_keepalive(b.rt, ka);
    struct dp_port_info pin, pout;
    dp_port_get(dp, 0, &pin);
    dp_port_get(dp, 1, &pout);
    b.in = pin.dev;
    b.out = pout.dev;
    for (unsigned i = 0; i < BK_POOL; i++)
        b.pool[b.n_pool++] = bench_udp_packet(0);

    int rc = 0;
    if (batches) {
        pmd_runtime_keepalive(b.rt, !strcmp(ka_mode, "on"));
        if (bk_run(&b, batches / 10 + 1) == 0) {
            b.packets = 0;
            rc = bk_run(&b, batches);
        } else {
            rc = -1;
        }
        printf("keep-alive %s: %llu packets in %llu iterations, heartbeat %llu\n", ka_mode,
               (unsigned long long)b.packets, (unsigned long long)batches,
               (unsigned long long)atomic_load(&ka_heartbeat(ka, 0)->beat));
    } else {
        double *ratio = calloc(rounds, sizeof *ratio);
        double *mpps_off = calloc(rounds, sizeof *mpps_off);
        double *mpps_on = calloc(rounds, sizeof *mpps_on);
        if (!ratio || !mpps_off || !mpps_on) {
            fprintf(stderr, "bench_keepalive: out of memory\n");
            return 1;
        }
        bk_timed(&b, seconds / 4); /* warm-up */
        for (unsigned r = 0; r < rounds && rc == 0; r++) {
            double mpps[2];
            for (int k = 0; k < 2; k++) {
                int on = (r % 2) ^ k;
                pmd_runtime_keepalive(b.rt, on);
                mpps[on] = bk_timed(&b, seconds);
                if (mpps[on] < 0)
                    rc = -1;
            }
            mpps_off[r] = mpps[0];
            mpps_on[r] = mpps[1];
            ratio[r] = mpps[1] / mpps[0];
            printf("round %u: off %.3f Mpps, on %.3f Mpps, on/off %.4f\n", r, mpps[0], mpps[1],
                   ratio[r]);
        }
        double med = bench_stat_of(ratio, rounds).median; /* sorts ratio */
        double med_off = bench_stat_of(mpps_off, rounds).median;
        double med_on = bench_stat_of(mpps_on, rounds).median;
        printf("keep-alive on/off, median of %u paired rounds: %.4f (overhead %.4f)\n", rounds,
               med, 1 - med);
        if (json && rc == 0) {
            FILE *j = fopen(json, "w");
            if (!j) {
                perror(json);
                return 1;
            }
            fprintf(j, "{\"rounds\": %u, \"seconds\": %.3f, \"mpps_median_off\": %.4f, "
                       "\"mpps_median_on\": %.4f, \"on_off_ratios\": [",
                    rounds, seconds, med_off, med_on);
            for (unsigned r = 0; r < rounds; r++)
                fprintf(j, "%s%.5f", r ? ", " : "", ratio[r]);
            fprintf(j, "], \"on_off_median\": %.5f, \"estimator\": \"medians of paired "
                       "rounds (off and on back to back, the order flipping every round)\"}\n",
                    med);
            fclose(j);
        }
        free(mpps_off);
        free(mpps_on);
        free(ratio);
    }
    for (unsigned i = 0; i < b.n_pool; i++)
        pkt_free(b.pool[i]);
    pmd_runtime_destroy(b.rt);
    ka_destroy(ka);
    dp_destroy(dp);
    config_free(&cfg);
    netdev_unregister_all();
    return rc ? 1 : 0;
}
