/* test_sim_stats.h: what the simulator's statistical tests share.
 *
 * The tests draw fixed-seed samples (so a result is reproducible) and
 * compare them with bounds a correct model exceeds with a probability of
 * about 1e-6. Header-only. */
#ifndef FS_TEST_SIM_STATS_H
#define FS_TEST_SIM_STATS_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* FS_TEST_QUICK=1 (valgrind runs): smaller samples. */
static inline bool quick(void)
{
    const char *q = getenv("FS_TEST_QUICK");
    return q && strcmp(q, "1") == 0;
}

/* The chi-square value with df degrees of freedom exceeded with
 * probability about 1e-6 (Wilson-Hilferty approximation, z = 4.75). */
static inline double chi2_bound(int df)
{
    double a = 2.0 / (9.0 * df), z = 4.75;
    double t = 1 - a + z * sqrt(a);
    return df * t * t * t;
}

#endif
