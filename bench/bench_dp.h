/* bench_dp.h: what the benchmarks share (header-only): the clock and the
 * median of rounds they report, a datapath built from an INI text, as
 * `flowswitch` builds one from a config file, and the packets they forward. */
#ifndef FS_BENCH_DP_H
#define FS_BENCH_DP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "dp.h"
#include "packet.h"

/* Seconds on the monotonic clock. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* qsort() comparator of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of n > 0 figures (rounds of one measurement, or the
 * per-round ratios of two measurements taken side by side). */
struct bench_stat {
    double median, min, max;
};

/* Sorts v[0..n) in place and returns its median (the mean of the middle two
 * for even n), min and max. n must be > 0. */
static inline struct bench_stat bench_stat_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return (struct bench_stat){m, v[0], v[n - 1]};
}

static inline void bench_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* RFC 1071 sum of d[0..n) as big-endian 16-bit words added to s, unfolded:
 * the benchmarks build their packets' checksums with it, independently of
 * the csum module they may be measuring. */
static inline uint32_t bench_sum16(const uint8_t *d, size_t n, uint32_t s)
{
    size_t i;
    for (i = 0; i + 1 < n; i += 2)
        s += (uint32_t)d[i] << 8 | d[i + 1];
    if (n & 1)
        s += (uint32_t)d[n - 1] << 8;
    return s;
}

/* The one's-complement checksum field of the sum s. */
static inline uint16_t bench_csum16(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

/* A 64-byte Ethernet/IPv4/UDP frame of flow i to 10.0.0.0/8 with a valid IPv4
 * header checksum (the UDP checksum 0: none, as IPv4 allows). NULL if out of
 * memory. */
static inline struct pkt *bench_udp_packet(unsigned i)
{
    uint8_t f[64];
    memset(f, 0, sizeof f);
    memcpy(f, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    bench_put16(ip + 2, 50);
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, "\x0a\x00\x00\x01", 4);
    ip[16] = 10;
    ip[17] = (uint8_t)(i >> 16);
    ip[18] = (uint8_t)(i >> 8);
    ip[19] = (uint8_t)i;
    bench_put16(ip + 10, bench_csum16(bench_sum16(ip, 20, 0)));
    uint8_t *udp = ip + 20;
    bench_put16(udp, (uint16_t)(1024 + (i & 0x7fff)));
    bench_put16(udp + 2, 4789 + 1);
    bench_put16(udp + 4, 30);
    return pkt_from_data(f, sizeof f);
}

/* Writes 'ini' to a temporary file, loads it into cfg and creates its
 * datapath (the file and its directory are gone again on return). Returns
 * 0, or -1 with the reason on stderr after "prog: ". */
static inline int bench_dp_open(const char *prog, const char *ini, struct config *cfg,
                                struct dp **dp)
{
    char dir[] = "/tmp/bench_dp.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    char path[64], err[512];
    snprintf(path, sizeof path, "%s/bench.ini", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        rmdir(dir);
        return -1;
    }
    fputs(ini, f);
    fclose(f);
    int rc = 0;
    if (config_load(path, cfg, err, sizeof err) ||
        config_dp_create(cfg, dir, dp, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        rc = -1;
    }
    unlink(path);
    rmdir(dir);
    return rc;
}

#endif
