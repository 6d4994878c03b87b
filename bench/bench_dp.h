/* bench_dp.h: what the datapath benchmarks share (header-only): a datapath
 * built from an INI text, as `flowswitch` builds one from a config file. */
#ifndef FS_BENCH_DP_H
#define FS_BENCH_DP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "dp.h"

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
