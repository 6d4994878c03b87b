/* bench_fwd: the datapath's cost per packet between two dummy ports (parse,
 * lookup, actions, output batching, backend rx and send).
 *
 *   bench_fwd [--rule l3|inport] [--flows N] [--state unknown|good|mix]
 *             [--seconds S] [--packets N] [--json FILE] [--label NAME]
 *
 * 64-byte UDP/IPv4 packets from N flows enter dummy port p0 in rx batches of
 * 32 and leave on p1, which keeps what it transmits so the same packets are
 * injected again: no allocation in the measured loop. The rule:
 *   l3      in_port=p0,ip,nw_dst=10.0.0.0/8 actions=output:p1, with
 *           direct-subtables = 0: every packet is parsed into a flow key,
 *           hashed and answered by the EMC (the default)
 *   inport  in_port=p0 actions=output:p1: the keyless per-batch path
 * --state sets the outer IP and L4 checksum states of every injected packet,
 * as a NIC's rx verdict would: unknown, good, or mix (packet i of a batch
 * gets GOOD/GOOD, UNKNOWN/UNKNOWN, GOOD/UNKNOWN, UNKNOWN/GOOD for i mod 4).
 *
 * Only the datapath is measured: the harness injects and collects outside
 * the measured calls. Timed, the clock is read around each dp_pmd_poll() of
 * the measured phase (two clock reads per batch of 32, in both builds);
 * under callgrind, `--toggle-collect=bf_dp_poll` counts exactly the
 * datapath's instructions of the measured phase (bf_dp_poll() is the
 * measured phase's only way into dp_pmd_poll()). --packets N runs a fixed
 * amount of work: N packets (rounded up to whole rounds of 64 batches)
 * measured, after a warm-up of a tenth of that. Prints Mpps and ns/packet
 * of the datapath; the JSON is {"label", "rule", "flows", "state", "mpps",
 * "ns_per_pkt", "packets", "loop_mpps"} (loop_mpps: the whole loop,
 * harness included, for reference). Run it built normally and built with
 * -DFS_CSUM_OFF (the checksum machinery compiled out) to measure what the
 * machinery costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "bench_dp.h"
#include "config.h"
#include "dp.h"
#include "netdev.h"
#include "packet.h"
#include "sys.h"

#define BF_POOL (PKT_BATCH_MAX * 8)

/* One round: 64 rx batches of PKT_BATCH_MAX packets. */
#define BF_ROUND (64 * PKT_BATCH_MAX)

enum bf_state { BF_UNKNOWN, BF_GOOD, BF_MIX };

static const char *const bf_state_names[] = {"unknown", "good", "mix"};

/* The outer (IP, L4) states --state mix gives packet k of a batch. */
static const uint8_t bf_mix[4][2] = {
    {CSUM_GOOD, CSUM_GOOD},
    {CSUM_UNKNOWN, CSUM_UNKNOWN},
    {CSUM_GOOD, CSUM_UNKNOWN},
    {CSUM_UNKNOWN, CSUM_GOOD},
};

/* The forwarding loop's state. */
struct bf_ctx {
    struct dp_pmd *pmd;
    struct netdev *in, *out;
    struct pkt **pool; /* BF_POOL slots, n_pool of them free packets */
    unsigned n_pool;
    enum bf_state state;
    uint64_t now;     /* PMD clock passed to dp_pmd_poll() */
    uint64_t packets; /* forwarded by the last bf_run() */
    uint64_t dp_ns;   /* time inside the measured dp_pmd_poll() calls */
    uint64_t loop_ns; /* the last bf_run()'s whole span */
};

/* The measured phase's call into the datapath: callgrind's
 * --toggle-collect=bf_dp_poll counts the datapath and nothing of the
 * harness around it. Never inlined, cloned or left by a tail jump (the
 * empty asm after the call), so the symbol is entered and left around each
 * call. */
#if defined(__clang__)
#define BF_OPAQUE __attribute__((noinline))
#else
#define BF_OPAQUE __attribute__((noinline, noipa))
#endif
BF_OPAQUE static unsigned bf_dp_poll(struct dp_pmd *pmd, uint64_t now)
{
    unsigned n = dp_pmd_poll(pmd, now);
    __asm__ volatile("" ::: "memory");
    return n;
}

/* Injects one batch with the states of c->state. */
static void bf_inject(struct bf_ctx *c)
{
    for (unsigned k = 0; k < PKT_BATCH_MAX; k++) {
        struct pkt *p = c->pool[--c->n_pool];
        p->ts = 0;
        uint8_t ip = CSUM_UNKNOWN, l4 = CSUM_UNKNOWN;
        if (c->state == BF_GOOD) {
            ip = l4 = CSUM_GOOD;
        } else if (c->state == BF_MIX) {
            ip = bf_mix[k % 4][0];
            l4 = bf_mix[k % 4][1];
        }
        p->csum[CSUM_L_OUTER_IP] = ip;
        p->csum[CSUM_L_OUTER_L4] = l4;
        netdev_dummy_inject(c->in, 0, p);
    }
}

/* Forwards whole rounds: exactly 'rounds' of them when rounds > 0, else
 * until 'seconds' have passed (at least one). With 'measured', the datapath
 * is entered through bf_dp_poll() and timed (c->dp_ns). Sets c->packets and
 * c->loop_ns. Returns 0, or -1 (with a message) if the datapath lost
 * packets. */
static int bf_run(struct bf_ctx *c, double seconds, uint64_t rounds, bool measured)
{
    uint64_t n = 0, done = 0, dp_ns = 0;
    const uint64_t start = fs_mono_ns(), limit = (uint64_t)(seconds * 1e9);
    uint64_t end;
    do {
        for (int rep = 0; rep < 64; rep++) {
            if (c->n_pool < PKT_BATCH_MAX) {
                fprintf(stderr, "bench_fwd: packets lost in the datapath\n");
                return -1;
            }
            bf_inject(c);
            if (measured) {
                uint64_t t0 = fs_mono_ns();
                bf_dp_poll(c->pmd, c->now++);
                dp_ns += fs_mono_ns() - t0;
            } else {
                dp_pmd_poll(c->pmd, c->now++);
            }
            c->n_pool += (unsigned)netdev_dummy_collect(c->out, 0, c->pool + c->n_pool,
                                                        (int)(BF_POOL - c->n_pool));
            n += PKT_BATCH_MAX;
        }
        end = fs_mono_ns();
        done++;
    } while (rounds ? done < rounds : end - start < limit);
    c->packets = n;
    c->loop_ns = end - start;
    c->dp_ns = dp_ns;
    return 0;
}

static const char *const bf_rules[][2] = {
    {"l3", "[datapath]\ndirect-subtables = 0\n\n"
           "[port p0]\ntype = dummy\n\n[port p1]\ntype = dummy\ntx-keep = true\n\n"
           "[rules]\nrule = in_port=p0,ip,nw_dst=10.0.0.0/8 actions=output:p1\n"},
    {"inport", "[port p0]\ntype = dummy\n\n[port p1]\ntype = dummy\ntx-keep = true\n\n"
               "[rules]\nrule = in_port=p0 actions=output:p1\n"},
};

static int bf_usage(void)
{
    fprintf(stderr, "usage: bench_fwd [--rule l3|inport] [--flows N] "
                    "[--state unknown|good|mix] [--seconds S] [--packets N] [--json FILE] "
                    "[--label NAME]\n");
    return 2;
}

int main(int argc, char **argv)
{
    unsigned flows = 1, rule = 0;
    double seconds = 2.0;
    uint64_t packets = 0;
    enum bf_state state = BF_UNKNOWN;
    const char *json = NULL, *label = "fwd";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return bf_usage();
        i++;
        if (!strcmp(a, "--flows")) {
            flows = (unsigned)strtoul(v, NULL, 10);
        } else if (!strcmp(a, "--seconds")) {
            seconds = strtod(v, NULL);
        } else if (!strcmp(a, "--packets")) {
            packets = strtoull(v, NULL, 10);
        } else if (!strcmp(a, "--state")) {
            unsigned k = 0;
            while (k < 3 && strcmp(v, bf_state_names[k]))
                k++;
            if (k == 3)
                return bf_usage();
            state = (enum bf_state)k;
        } else if (!strcmp(a, "--rule")) {
            unsigned k = 0;
            while (k < 2 && strcmp(v, bf_rules[k][0]))
                k++;
            if (k == 2)
                return bf_usage();
            rule = k;
        } else if (!strcmp(a, "--json")) {
            json = v;
        } else if (!strcmp(a, "--label")) {
            label = v;
        } else {
            return bf_usage();
        }
    }
    if (flows == 0)
        flows = 1;

    netdev_dummy_register();
    struct config cfg;
    struct dp *dp;
    if (bench_dp_open("bench_fwd", bf_rules[rule][1], &cfg, &dp))
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
        .state = state, .now = 1,
    };
    uint64_t rounds = (packets + BF_ROUND - 1) / BF_ROUND;
    /* Warm-up (not measured), then the measured phase. */
    if (bf_run(&c, seconds / 10, packets ? (rounds + 9) / 10 : 0, false) < 0 ||
        bf_run(&c, seconds, rounds, true) < 0)
        return 1;
    packets = c.packets;
    n_pool = c.n_pool;
    double mpps = (double)packets / ((double)c.dp_ns / 1e9) / 1e6;
    double loop_mpps = (double)packets / ((double)c.loop_ns / 1e9) / 1e6;
    printf("%-24s %-6s flows %-8u %-7s %8.2f Mpps %7.2f ns/pkt (whole loop %.2f Mpps)\n",
           label, bf_rules[rule][0], flows, bf_state_names[state], mpps, 1e3 / mpps,
           loop_mpps);
    if (json) {
        FILE *j = fopen(json, "w");
        if (!j) {
            perror(json);
            return 1;
        }
        fprintf(j, "{\"label\": \"%s\", \"rule\": \"%s\", \"flows\": %u, \"state\": \"%s\", "
                   "\"mpps\": %.4f, \"ns_per_pkt\": %.3f, \"packets\": %llu, "
                   "\"loop_mpps\": %.4f}\n",
                label, bf_rules[rule][0], flows, bf_state_names[state], mpps, 1e3 / mpps,
                (unsigned long long)packets, loop_mpps);
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
