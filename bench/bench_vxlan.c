/* bench_vxlan: VXLAN decapsulation rate through the whole datapath, with
 * the outer checksums verified in software (rx state UNKNOWN) or vouched
 * for by the device (GOOD), side by side in one run.
 *
 *   bench_vxlan [--quick] [--rounds N] [--seconds S] [--flows N] [--json FILE]
 *
 * VXLAN/IPv4 packets (outer UDP checksum present and valid; a second table
 * with a zero outer UDP checksum, where only the 20-byte IPv4 header is
 * left to verify) enter dummy port p0, the underlay of tunnel port vx0
 * (VNI 42), in rx batches of 32; they are decapsulated, re-parsed, matched
 * by `in_port=vx0,tun_id=42 actions=output:vm0` and sent to dummy port vm0,
 * which keeps them so the same packets are injected again (their outer
 * headers restored in the headroom): no allocation in the measured loop.
 * State GOOD marks the outer IPv4 and L4 checksums GOOD on every injection,
 * as a NIC's rx verdict would; UNKNOWN leaves them to software.
 *
 * Sizes are inner frame sizes (the VM's packet: Ethernet/IPv4/UDP; the
 * packet on the wire is 50 bytes longer): 64, 128, 256, 512, 1500 and IMIX
 * (7:4:1 of 64, 570 and 1450 bytes, 1450 being the largest inner frame a
 * 1500-byte underlay MTU carries). Every round runs UNKNOWN and GOOD back
 * to back (which goes first alternates); Mpps are the medians of the
 * rounds and a ratio is the median of the rounds' GOOD/UNKNOWN ratios, min
 * and max beside it (machines are shared and noisy: the ratio of two
 * measurements taken together is what counts).
 * Prints a table with the GOOD/UNKNOWN ratio next to the OVS-DPDK figure
 * for the same comparison on hardware (PHY-VXLAN-PHY, 64 B; where it comes
 * from: docs/performance.md) and writes --json:
 *   {"mpps": {"64": {"unknown": x, "good": y}, ..., "imix": {...}},
 *    "good_vs_unknown_ratio_64": r (with _min, _max), "ratio": {...} (with
 *    ratio_min, ratio_max), "estimator": "...",
 *    "mpps_udp_csum_zero": {...}, "ratio_udp_csum_zero": {...}, ...} */
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

#define BV_POOL (PKT_BATCH_MAX * 8)
#define BV_OUTER 50
#define BV_NSIZES 6

static const char *const bv_size_names[BV_NSIZES] = {"64", "128", "256", "512", "1500", "imix"};
static const unsigned bv_sizes[BV_NSIZES] = {64, 128, 256, 512, 1500, 0};
/* IMIX pattern (inner bytes), repeated over the pool. */
static const unsigned bv_imix[12] = {64, 570, 64, 64, 570, 64, 1450, 64, 570, 64, 570, 64};

struct bv_ctx {
    struct config cfg;
    struct dp *dp;
    struct dp_pmd *pmd;
    struct netdev *in, *out;
    uint64_t now;
};

struct bv_pool {
    struct pkt *pkts[BV_POOL];
    uint8_t outer[BV_POOL][BV_OUTER]; /* each packet's outer headers */
    uint32_t len[BV_POOL];            /* and its wire length */
    unsigned n;
};

/* A VXLAN/IPv4 packet carrying an Ethernet/IPv4/UDP inner frame of 'inner'
 * bytes of flow 'flow', every checksum valid (the outer UDP one 0 if
 * !udp_csum), as the remote VTEP 192.0.2.2 sends it to 192.0.2.1. */
static struct pkt *bv_packet(unsigned inner, unsigned flow, bool udp_csum)
{
    uint8_t f[BV_OUTER + 2048];
    unsigned len = BV_OUTER + inner;
    memset(f, 0, len);
    memcpy(f, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\xfe\x08\x00", 14);
    uint8_t *ip = f + 14, *udp = f + 34, *vx = f + 42, *in = f + 50;
    ip[0] = 0x45;
    bench_put16(ip + 2, (uint16_t)(len - 14));
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, "\xc0\x00\x02\x02\xc0\x00\x02\x01", 8);
    bench_put16(ip + 10, bench_csum16(bench_sum16(ip, 20, 0)));
    bench_put16(udp, (uint16_t)(49152 + flow % 16384));
    bench_put16(udp + 2, 4789);
    bench_put16(udp + 4, (uint16_t)(len - 34));
    vx[0] = 0x08;
    vx[6] = 42;
    /* inner Ethernet/IPv4/UDP */
    memcpy(in, "\x02\x00\x00\x00\x01\x02\x02\x00\x00\x00\x01\x01\x08\x00", 14);
    uint8_t *iip = in + 14, *iudp = in + 34;
    iip[0] = 0x45;
    bench_put16(iip + 2, (uint16_t)(inner - 14));
    iip[8] = 64;
    iip[9] = 17;
    memcpy(iip + 12, "\x0a\x00\x00\x01\x0a", 5);
    iip[17] = (uint8_t)(flow >> 16);
    iip[18] = (uint8_t)(flow >> 8);
    iip[19] = (uint8_t)flow;
    bench_put16(iip + 10, bench_csum16(bench_sum16(iip, 20, 0)));
    bench_put16(iudp, (uint16_t)(1024 + flow % 60000));
    bench_put16(iudp + 2, 9);
    bench_put16(iudp + 4, (uint16_t)(inner - 34));
    for (unsigned i = 42; i < inner; i++)
        in[i] = (uint8_t)(i * 7 + flow);
    uint32_t s =
        bench_sum16(iudp, inner - 34, 0) + 17 + (inner - 34) + bench_sum16(iip + 12, 8, 0);
    uint16_t c = bench_csum16(s);
    bench_put16(iudp + 6, c ? c : 0xffff);
    if (udp_csum) {
        s = bench_sum16(udp, len - 34, 0) + 17 + (len - 34) + bench_sum16(ip + 12, 8, 0);
        c = bench_csum16(s);
        bench_put16(udp + 6, c ? c : 0xffff);
    }
    return pkt_from_data(f, len);
}

static void bv_pool_fill(struct bv_pool *pool, unsigned size, unsigned flows, bool udp_csum)
{
    pool->n = 0;
    for (unsigned i = 0; i < BV_POOL; i++) {
        unsigned inner = size ? size : bv_imix[i % 12];
        struct pkt *p = bv_packet(inner, i % flows, udp_csum);
        if (!p) {
            fprintf(stderr, "bench_vxlan: out of memory\n");
            exit(1);
        }
        memcpy(pool->outer[i], p->data, BV_OUTER);
        pool->len[i] = p->len;
        p->owner = (void *)(uintptr_t)i; /* heap packets: the slot of its template */
        pool->pkts[pool->n++] = p;
    }
}

static void bv_pool_free(struct bv_pool *pool)
{
    for (unsigned i = 0; i < pool->n; i++)
        pkt_free(pool->pkts[i]);
    pool->n = 0;
}

/* Runs for 'seconds' and returns Mpps; aborts if a packet goes missing
 * (a decap drop would make the figure meaningless). */
static double bv_measure(struct bv_ctx *c, struct bv_pool *pool, bool good, double seconds)
{
    uint64_t n = 0;
    double start = bench_now(), end;
    do {
        for (int rep = 0; rep < 64; rep++) {
            if (pool->n < PKT_BATCH_MAX) {
                fprintf(stderr, "bench_vxlan: packets lost in the datapath\n");
                exit(1);
            }
            for (unsigned k = 0; k < PKT_BATCH_MAX; k++) {
                struct pkt *p = pool->pkts[--pool->n];
                unsigned slot = (unsigned)(uintptr_t)p->owner;
                /* restore the outer headers the pop pulled */
                p->data = p->buf + PKT_HEADROOM;
                p->len = pool->len[slot];
                memcpy(p->data, pool->outer[slot], BV_OUTER);
                p->ts = 0;
                p->csum[CSUM_L_OUTER_IP] = good ? CSUM_GOOD : CSUM_UNKNOWN;
                p->csum[CSUM_L_OUTER_L4] = good ? CSUM_GOOD : CSUM_UNKNOWN;
                netdev_dummy_inject(c->in, 0, p);
            }
            dp_pmd_poll(c->pmd, c->now++);
            pool->n += (unsigned)netdev_dummy_collect(c->out, 0, pool->pkts + pool->n,
                                                      (int)(BV_POOL - pool->n));
            n += PKT_BATCH_MAX;
        }
        end = bench_now();
    } while (end - start < seconds);
    return (double)n / (end - start) / 1e6;
}

/* One decap through the datapath, checked: the inner frame comes out. */
/* Checksums the PMD verified in software so far. */
static uint64_t bv_verified(const struct bv_ctx *c)
{
    static struct dp_stats s;
    dp_pmd_stats(c->pmd, &s);
    return s.csum.n[CSUM_STAT_SW_VERIFIED];
}

static void bv_selftest(struct bv_ctx *c, bool udp_csum)
{
    uint64_t before = bv_verified(c);
    struct pkt *p = bv_packet(100, 3, udp_csum);
    uint8_t inner[100];
    memcpy(inner, p->data + BV_OUTER, sizeof inner);
    p->ts = 0;
    netdev_dummy_inject(c->in, 0, p);
    dp_pmd_poll(c->pmd, c->now++);
    struct pkt *q = NULL;
    if (netdev_dummy_collect(c->out, 0, &q, 1) != 1 || q->len != sizeof inner ||
        memcmp(q->data, inner, sizeof inner)) {
        fprintf(stderr, "bench_vxlan: self-test: the packet was not decapsulated\n");
        exit(1);
    }
    pkt_free(q);
    uint64_t verified = bv_verified(c) - before;
    if (verified != (udp_csum ? 2u : 1u)) {
        fprintf(stderr, "bench_vxlan: self-test: %llu checksums verified in software\n",
                (unsigned long long)verified);
        exit(1);
    }
}

static void bv_open(struct bv_ctx *c)
{
    char dir[] = "/tmp/bench_vxlan.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/vxlan.ini", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "[port p0]\ntype = dummy\n\n[port vm0]\ntype = dummy\ntx-keep = true\n\n"
               "[port vx0]\ntype = vxlan\nunderlay = p0\nlocal-ip = 192.0.2.1\n"
               "remote-ip = 192.0.2.2\nvni = 42\nsrc-mac = 02:00:00:00:00:01\n"
               "next-hop-mac = 02:00:00:00:00:fe\n\n"
               "[rules]\nrule = in_port=vx0,tun_id=42 actions=output:vm0\n");
    fclose(f);
    netdev_dummy_register();
    char err[512];
    if (config_load(path, &c->cfg, err, sizeof err) ||
        config_dp_create(&c->cfg, dir, &c->dp, err, sizeof err)) {
        fprintf(stderr, "bench_vxlan: %s\n", err);
        exit(1);
    }
    unlink(path);
    rmdir(dir);
    c->pmd = dp_pmd_create(c->dp);
    if (!c->pmd) {
        fprintf(stderr, "bench_vxlan: out of memory\n");
        exit(1);
    }
    struct dp_port_info pi;
    dp_port_get(c->dp, 0, &pi);
    c->in = pi.dev;
    dp_port_get(c->dp, 1, &pi);
    c->out = pi.dev;
    c->now = 1;
}

static void bv_close(struct bv_ctx *c)
{
    dp_pmd_destroy(c->pmd);
    dp_destroy(c->dp);
    config_free(&c->cfg);
    netdev_unregister_all();
}

/* Per size: the median Mpps of each state over the rounds, and the median
 * (min, max) of the rounds' GOOD/UNKNOWN ratios, each round's two runs
 * taken back to back. */
struct bv_result {
    double unknown[BV_NSIZES], good[BV_NSIZES];
    struct bench_stat ratio[BV_NSIZES];
};

static void bv_run(struct bv_ctx *c, bool udp_csum, unsigned rounds, double seconds,
                   unsigned flows, struct bv_result *r)
{
    double *unk = calloc(rounds, sizeof *unk), *good = calloc(rounds, sizeof *good);
    double *ratio = calloc(rounds, sizeof *ratio);
    if (!unk || !good || !ratio) {
        fprintf(stderr, "bench_vxlan: out of memory\n");
        exit(1);
    }
    memset(r, 0, sizeof *r);
    bv_selftest(c, udp_csum);
    for (int s = 0; s < BV_NSIZES; s++) {
        struct bv_pool pool;
        bv_pool_fill(&pool, bv_sizes[s], flows, udp_csum);
        bv_measure(c, &pool, false, seconds / 5 > 0.05 ? seconds / 5 : 0.05); /* warm up */
        for (unsigned k = 0; k < rounds; k++) {
            /* a pair per round; which state goes first alternates */
            for (int j = 0; j < 2; j++) {
                bool g = (j == 1) != (k & 1);
                double m = bv_measure(c, &pool, g, seconds);
                if (g)
                    good[k] = m;
                else
                    unk[k] = m;
            }
            ratio[k] = good[k] / unk[k];
        }
        r->unknown[s] = bench_stat_of(unk, rounds).median;
        r->good[s] = bench_stat_of(good, rounds).median;
        r->ratio[s] = bench_stat_of(ratio, rounds);
        bv_pool_free(&pool);
    }
    free(unk);
    free(good);
    free(ratio);
}

static void bv_print(const char *title, const struct bv_result *r)
{
    printf("\n%s\n", title);
    printf("  %-6s %6s %12s %12s %9s\n", "inner", "wire", "UNKNOWN Mpps", "GOOD Mpps",
           "GOOD/UNK (paired: median [min-max])");
    for (int s = 0; s < BV_NSIZES; s++) {
        char wire[16];
        if (bv_sizes[s])
            snprintf(wire, sizeof wire, "%u", bv_sizes[s] + BV_OUTER);
        else
            snprintf(wire, sizeof wire, "mix");
        const struct bench_stat *q = &r->ratio[s];
        printf("  %-6s %6s %12.3f %12.3f %8.3f (%+.1f%%) [%.3f-%.3f]\n", bv_size_names[s],
               wire, r->unknown[s], r->good[s], q->median, (q->median - 1) * 100, q->min, q->max);
    }
}

static void bv_json_table(FILE *j, const char *name, const struct bv_result *r)
{
    fprintf(j, "  \"%s\": {", name);
    for (int s = 0; s < BV_NSIZES; s++)
        fprintf(j, "%s\"%s\": {\"unknown\": %.4f, \"good\": %.4f}", s ? ", " : "",
                bv_size_names[s], r->unknown[s], r->good[s]);
    fprintf(j, "},\n");
}

/* "name": the median paired ratio per size; "name_min", "name_max" beside it. */
static void bv_json_ratio(FILE *j, const char *name, const struct bv_result *r)
{
    static const char *const sfx[3] = {"", "_min", "_max"};
    for (int k = 0; k < 3; k++) {
        fprintf(j, "  \"%s%s\": {", name, sfx[k]);
        for (int s = 0; s < BV_NSIZES; s++) {
            const struct bench_stat *q = &r->ratio[s];
            fprintf(j, "%s\"%s\": %.4f", s ? ", " : "", bv_size_names[s],
                    k == 0 ? q->median : k == 1 ? q->min : q->max);
        }
        fprintf(j, "},\n");
    }
}

int main(int argc, char **argv)
{
    unsigned rounds = 5, flows = 1;
    double seconds = 0.25;
    bool quick = false;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            quick = true;
        } else if (!strcmp(a, "--rounds") && v) {
            rounds = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--seconds") && v) {
            seconds = strtod(v, NULL);
            i++;
        } else if (!strcmp(a, "--flows") && v) {
            flows = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "--json") && v) {
            json = v;
            i++;
        } else {
            fprintf(stderr, "usage: bench_vxlan [--quick] [--rounds N] [--seconds S] "
                            "[--flows N] [--json FILE]\n");
            return 2;
        }
    }
    if (quick) {
        rounds = rounds < 3 ? rounds : 3;
        seconds = seconds < 0.08 ? seconds : 0.08;
    }
    if (rounds == 0)
        rounds = 1;
    if (flows == 0)
        flows = 1;

    struct bv_ctx c;
    bv_open(&c);
    struct bv_result with, zero;
    bv_run(&c, true, rounds, seconds, flows, &with);
    bv_run(&c, false, rounds, seconds, flows, &zero);
    bv_close(&c);

    char title[256];
    snprintf(title, sizeof title,
             "VXLAN/IPv4 decap, dummy -> vx0 -> dummy, %u flow%s, outer UDP checksum "
             "present (median of %u paired rounds x %.2f s):", flows, flows == 1 ? "" : "s", rounds, seconds);
    bv_print(title, &with);
    snprintf(title, sizeof title,
             "The same with a zero outer UDP checksum (only the IPv4 header to verify):");
    bv_print(title, &zero);
    double r64 = with.ratio[0].median;
    printf("\nGOOD/UNKNOWN at 64 B (median of paired rounds): %.3f (%+.1f%%) [%.3f-%.3f]; "
           "OVS-DPDK measured +7.4%% at 64 B, "
           "+9.5%% at 128 B, +11.0%% IMIX (PHY-VXLAN-PHY, 10 GbE NIC, 2016)\n",
           r64, (r64 - 1) * 100, with.ratio[0].min, with.ratio[0].max);

    if (json) {
        FILE *j = fopen(json, "w");
        if (!j) {
            perror(json);
            return 1;
        }
        fprintf(j, "{\n");
        bv_json_table(j, "mpps", &with);
        bv_json_ratio(j, "ratio", &with);
        bv_json_table(j, "mpps_udp_csum_zero", &zero);
        bv_json_ratio(j, "ratio_udp_csum_zero", &zero);
        fprintf(j, "  \"good_vs_unknown_ratio_64\": %.4f,\n", r64);
        fprintf(j, "  \"good_vs_unknown_ratio_64_min\": %.4f,\n", with.ratio[0].min);
        fprintf(j, "  \"good_vs_unknown_ratio_64_max\": %.4f,\n", with.ratio[0].max);
        fprintf(j, "  \"estimator\": \"mpps: median of the rounds; ratios: median of the "
                   "per-round GOOD/UNKNOWN ratios (the two runs of a round back to back, "
                   "the order alternating), min and max beside it\",\n");
        fprintf(j, "  \"ovs_dpdk_ratio_64\": 1.074,\n");
        fprintf(j, "  \"sizes\": \"inner frame bytes (Ethernet/IPv4/UDP); on the wire 50 more; "
                   "imix = 7:4:1 of 64, 570, 1450\",\n");
        fprintf(j, "  \"flows\": %u,\n  \"rounds\": %u,\n  \"seconds_per_run\": %.3f\n}\n",
                flows, rounds, seconds);
        fclose(j);
    }
    return 0;
}
