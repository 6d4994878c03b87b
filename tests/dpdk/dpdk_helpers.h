/* dpdk_helpers.h: shared helpers of the in-process DPDK tests (static,
 * header-only: each test is one program).
 *
 * Every test initialises the EAL with --no-huge --no-pci and a unique
 * --file-prefix (fs-<test>-<pid>), builds a datapath from an INI text
 * written to a temporary directory, runs it on the PMD runtime and talks
 * to its ports through rings (net_ring) or vhost-user guests
 * (net_virtio_user) that the test itself drives. */
#ifndef FS_TESTS_DPDK_HELPERS_H
#define FS_TESTS_DPDK_HELPERS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "backends/dpdk/netdev-dpdk.h"
#include "config.h"
#include "dp.h"
#include "pmd.h"

/* Waiting for the datapath is bounded so a broken build fails instead of
 * hanging; it is never a performance assertion. */
#define TH_WAIT_NS (20ull * 1000 * 1000 * 1000)

static inline uint64_t th_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void th_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* EAL with a unique file prefix. Returns 0 or -1. */
static inline int th_eal_init(const char *test, const char *extra)
{
    char prefix[128], mem[] = "256";
    snprintf(prefix, sizeof prefix, "fs-%s-%ld", test, (long)getpid());
    char *argv[32];
    int argc = 0;
    argv[argc++] = "fs-test";
    argv[argc++] = "-l";
    argv[argc++] = "0";
    argv[argc++] = "--no-huge";
    argv[argc++] = "--no-pci";
    argv[argc++] = "-m";
    argv[argc++] = mem;
    argv[argc++] = "--file-prefix";
    argv[argc++] = prefix;
    argv[argc++] = "--log-level";
    argv[argc++] = "error";
    argv[argc++] = "--no-telemetry";
    char extra_buf[512];
    if (extra) {
        snprintf(extra_buf, sizeof extra_buf, "%s", extra);
        char *save = NULL;
        for (char *t = strtok_r(extra_buf, " ", &save); t && argc < 31;
             t = strtok_r(NULL, " ", &save))
            argv[argc++] = t;
    }
    argv[argc] = NULL;
    char err[256];
    if (netdev_dpdk_init(argc, argv, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    netdev_dpdk_register();
    return 0;
}

/* Writes 'ini' to DIR/config.ini (DIR made with mkdtemp into dir) and
 * loads it. Returns 0 or -1. */
static inline int th_config(char *dir, size_t dirlen, const char *ini, struct config *cfg)
{
    snprintf(dir, dirlen, "/tmp/fs-dpdk-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[512];
    snprintf(path, sizeof path, "%s/config.ini", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(ini, f);
    fclose(f);
    char err[512];
    if (config_load(path, cfg, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static inline void th_rmdir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* A pool whose mbufs can carry a struct pkt, for the frames a test injects. */
static inline struct rte_mempool *th_pool(const char *name, unsigned n)
{
    return rte_pktmbuf_pool_create(name, n, 0,
                                   (uint16_t)RTE_ALIGN(sizeof(struct pkt),
                                                       RTE_MBUF_PRIV_ALIGN),
                                   RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
}

static inline uint16_t th_csum_fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

static inline uint32_t th_sum(const uint8_t *p, size_t n, uint32_t s)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        s += (uint32_t)(p[n - 1] << 8);
    return s;
}

/* Writes an Ethernet/IPv4/L4 frame (proto 6 TCP or 17 UDP) with 'payload'
 * bytes derived from 'seed' into buf; returns its length. With 'partial'
 * the L4 checksum holds only the pseudo-header sum (what a guest with
 * checksum offload sends), else the full checksum. */
static inline uint32_t th_frame(uint8_t *buf, uint8_t proto, uint32_t seed,
                                unsigned payload, int partial)
{
    unsigned l4h = proto == 6 ? 20 : 8;
    unsigned l4len = l4h + payload;
    unsigned iplen = 20 + l4len;
    static const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 2}, src[6] = {0x02, 0, 0, 0, 0, 1};
    memcpy(buf, dst, 6);
    memcpy(buf + 6, src, 6);
    buf[12] = 0x08;
    buf[13] = 0x00;
    uint8_t *ip = buf + 14;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[2] = (uint8_t)(iplen >> 8);
    ip[3] = (uint8_t)iplen;
    ip[4] = (uint8_t)(seed >> 8);
    ip[5] = (uint8_t)seed;
    ip[8] = 64;
    ip[9] = proto;
    ip[12] = 10;
    ip[13] = 0;
    ip[14] = (uint8_t)(seed >> 8);
    ip[15] = (uint8_t)seed;
    ip[16] = 10;
    ip[17] = 1;
    ip[18] = 0;
    ip[19] = 1;
    uint16_t c = (uint16_t)~th_csum_fold(th_sum(ip, 20, 0));
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)c;
    uint8_t *l4 = ip + 20;
    memset(l4, 0, l4h);
    l4[0] = (uint8_t)((1000 + seed % 1000) >> 8);
    l4[1] = (uint8_t)(1000 + seed % 1000);
    l4[2] = 0x1f;
    l4[3] = 0x90;
    if (proto == 6) {
        l4[4] = (uint8_t)(seed >> 24);
        l4[7] = (uint8_t)seed;
        l4[12] = 5 << 4;
        l4[13] = 0x18;
        l4[14] = 0xff;
        l4[15] = 0xff;
    } else {
        l4[4] = (uint8_t)(l4len >> 8);
        l4[5] = (uint8_t)l4len;
    }
    for (unsigned i = 0; i < payload; i++)
        l4[l4h + i] = (uint8_t)(seed * 7 + i);
    uint32_t ph = th_sum(ip + 12, 8, 0) + proto + l4len;
    unsigned co = proto == 6 ? 16 : 6;
    uint16_t v;
    if (partial)
        v = th_csum_fold(ph);
    else {
        v = (uint16_t)~th_csum_fold(th_sum(l4, l4len, ph));
        if (proto == 17 && v == 0)
            v = 0xffff;
    }
    l4[co] = (uint8_t)(v >> 8);
    l4[co + 1] = (uint8_t)v;
    return 14 + iplen;
}

/* True if the IPv4 header and L4 checksums of an th_frame-style frame are
 * valid. */
static inline int th_csum_ok(const uint8_t *f, uint32_t len)
{
    if (len < 34)
        return 0;
    const uint8_t *ip = f + 14;
    if (th_csum_fold(th_sum(ip, 20, 0)) != 0xffff)
        return 0;
    unsigned iplen = (unsigned)(ip[2] << 8 | ip[3]);
    unsigned l4len = iplen - 20;
    uint32_t ph = th_sum(ip + 12, 8, 0) + ip[9] + l4len;
    return th_csum_fold(th_sum(ip + 20, l4len, ph)) == 0xffff;
}

static inline struct rte_mbuf *th_mbuf(struct rte_mempool *mp, const uint8_t *data,
                                       uint32_t len)
{
    struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
    if (!m)
        return NULL;
    char *d = rte_pktmbuf_append(m, (uint16_t)len);
    if (!d) {
        rte_pktmbuf_free(m);
        return NULL;
    }
    memcpy(d, data, len);
    return m;
}

/* The totals of PMD i's published snapshot. */
static inline void th_pmd_totals(struct pmd_runtime *rt, unsigned i, struct dp_totals *t,
                                 struct pmd_stats *keep)
{
    static struct pmd_stats st;
    pmd_runtime_snapshot(rt, i, &st);
    dp_stats_totals(&st.dp, DP_MAX_PORTS, t);
    if (keep)
        *keep = st;
}

/* Checksums PMD i completed in software (every layer). */
static inline uint64_t th_pmd_csum_sw(struct pmd_runtime *rt, unsigned i)
{
    static struct pmd_stats st;
    pmd_runtime_snapshot(rt, i, &st);
    uint64_t n = 0;
    for (int l = 0; l < CSUM_L_N; l++)
        n += st.dp.csum.n[CSUM_STAT_SW + l];
    return n;
}

/* Sum of rx packets published by the PMDs. */
static inline uint64_t th_rx_total(struct pmd_runtime *rt)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
        struct dp_totals t;
        th_pmd_totals(rt, i, &t, NULL);
        n += t.rx;
    }
    return n;
}

static inline uint64_t th_drops(struct pmd_runtime *rt, enum drop_reason r)
{
    static struct pmd_stats st;
    uint64_t n = 0;
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
        pmd_runtime_snapshot(rt, i, &st);
        n += st.dp.drops[r];
    }
    return n;
}

/* Waits until the PMDs have published at least 'n' rx packets, and every
 * queue is empty. Returns 0, or -1 on timeout. */
static inline int th_wait_rx(struct pmd_runtime *rt, uint64_t n)
{
    uint64_t end = th_now() + TH_WAIT_NS;
    while (th_now() < end) {
        uint64_t rx = 0, queued = 0;
        for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++) {
            struct dp_totals t;
            th_pmd_totals(rt, i, &t, NULL);
            rx += t.rx;
            queued += t.queued;
        }
        if (rx >= n && queued == 0)
            return 0;
        th_sleep_ms(5);
    }
    return -1;
}

/* The totals of every PMD (after pmd_runtime_stop). */
static inline void th_totals(struct dp *dp, struct pmd_runtime *rt, struct dp_totals *t)
{
    static struct dp_stats s;
    dp_stats_collect(dp, pmd_runtime_pmds(rt), pmd_runtime_n_pmds(rt), &s);
    dp_stats_totals(&s, dp_n_ports(dp), t);
}

static inline int th_conserved(struct dp *dp, struct pmd_runtime *rt)
{
    struct dp_totals t;
    th_totals(dp, rt, &t);
    return t.rx + t.copies == t.tx + t.dropped + t.queued;
}

/* The device of port i. */
static inline struct netdev *th_port_dev(struct dp *dp, unsigned i)
{
    struct dp_port_info p;
    dp_port_get(dp, i, &p);
    return p.dev;
}

#endif
