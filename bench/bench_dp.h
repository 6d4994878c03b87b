/* bench_dp.h: what the datapath benchmarks share (header-only): a datapath
 * built from an INI text, as `flowswitch` builds one from a config file,
 * and the packets they forward. */
#ifndef FS_BENCH_DP_H
#define FS_BENCH_DP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dp.h"
#include "packet.h"

static inline void bench_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* A 64-byte Ethernet/IPv4/UDP frame of flow i to 10.0.0.0/8 (checksums not filled: the
 * datapath never looks at them on this path). NULL if out of memory. */
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
