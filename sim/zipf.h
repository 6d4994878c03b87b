/* zipf.h: Zipf(n, s) rank sampler.
 *
 * Draws ranks k in [1, n] with P(k) = k^-s / sum_{i=1..n} i^-s: rank 1 is
 * the most popular. Rejection-inversion (W. Hörmann, G. Derflinger,
 * "Rejection-inversion to generate variates from monotone discrete
 * distributions", ACM TOMACS 6(3), 1996): O(1) memory and O(1) expected
 * time for any n (up to 2^53) and any s >= 0, with no table. s = 1 is
 * handled exactly (the integral of x^-s is then log x, through the
 * log1p/expm1 forms below), and s = 0 is the uniform distribution.
 *
 * Deterministic: a sample is a pure function of the sampler and the
 * random stream's state (sim/rng.h, sim/dmath.h). */
#ifndef SIM_ZIPF_H
#define SIM_ZIPF_H

#include <stdint.h>

#include "rng.h"

#define SIM_ZIPF_N_MAX ((uint64_t)1 << 53)

/* Precomputed constants of one (n, s); read-only after sim_zipf_init(),
 * so one sampler can serve several streams. */
struct sim_zipf {
    uint64_t n;
    double s;
    double one_minus_s;
    double h_x1;   /* H(1.5) - 1: the top of the inversion interval */
    double h_n;    /* H(n + 0.5): its bottom */
    double s_div;  /* the squeeze: ranks within it of x are accepted at once */
};

/* Sets up Zipf(n, s). Returns 0, or -1 if n is 0 or above SIM_ZIPF_N_MAX,
 * or s is negative, infinite or NaN. */
int sim_zipf_init(struct sim_zipf *z, uint64_t n, double s);

/* A rank in [1, n], drawn with r. */
uint64_t sim_zipf_sample(const struct sim_zipf *z, struct sim_rng *r);

#endif
