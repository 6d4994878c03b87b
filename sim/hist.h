/* hist.h: latency histogram in nanoseconds of virtual time.
 *
 * Log-linear buckets, as HdrHistogram's: values below 2^SIM_HIST_SUB_BITS
 * (2048 ns) each have their own bucket; above, every power-of-two range is
 * cut into 2^(SIM_HIST_SUB_BITS - 1) = 1024 equal buckets. A bucket is at
 * most 1/1024 of the values it holds wide, so a percentile reported as
 * its bucket's midpoint is within 2^-SIM_HIST_SUB_BITS (0.049%) of the
 * exact nearest-rank percentile of the values added (three significant
 * digits), over the whole 64-bit range. count, min, max and the sum behind
 * the mean are exact.
 *
 * The buckets array is allocated zeroed at sim_hist_init() (440 KiB of
 * address space, touched only where values fall). No globals; a histogram
 * is used by one thread at a time. */
#ifndef SIM_HIST_H
#define SIM_HIST_H

#include <stdint.h>

#define SIM_HIST_SUB_BITS 11
#define SIM_HIST_HALF (1u << (SIM_HIST_SUB_BITS - 1))
#define SIM_HIST_N_BUCKETS ((64 - SIM_HIST_SUB_BITS) * SIM_HIST_HALF + 2 * SIM_HIST_HALF)

struct sim_hist {
    uint64_t count;
    uint64_t min;          /* UINT64_MAX while empty */
    uint64_t max;
    uint64_t sum_lo, sum_hi; /* the exact 128-bit sum of the values */
    uint32_t top;          /* buckets at and above this index are empty */
    uint64_t *buckets;     /* SIM_HIST_N_BUCKETS counts */
};

/* An empty histogram. Returns 0, or -1 if the buckets cannot be
 * allocated (h is then safe to destroy). */
int sim_hist_init(struct sim_hist *h);

/* Frees the buckets; h may be re-initialised. */
void sim_hist_destroy(struct sim_hist *h);

/* Empties h, keeping its buckets. */
void sim_hist_reset(struct sim_hist *h);

/* The bucket a value falls in, and the values [*lo, *hi] a bucket holds. */
static inline uint32_t sim_hist_index(uint64_t v)
{
    if (v < 2 * SIM_HIST_HALF)
        return (uint32_t)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - (SIM_HIST_SUB_BITS - 1);
    return (uint32_t)(shift * SIM_HIST_HALF + (v >> shift));
}
void sim_hist_bucket_range(uint32_t idx, uint64_t *lo, uint64_t *hi);

/* Adds n occurrences of value v. */
void sim_hist_add_n(struct sim_hist *h, uint64_t v, uint64_t n);

static inline void sim_hist_add(struct sim_hist *h, uint64_t v)
{
    sim_hist_add_n(h, v, 1);
}

/* Adds every value of src to dst. */
void sim_hist_merge(struct sim_hist *dst, const struct sim_hist *src);

/* The mean of the values (0 when empty). */
double sim_hist_mean(const struct sim_hist *h);

/* The p-th percentile (0 <= p <= 100) by the nearest-rank rule: the value
 * of rank ceil(p/100 * count) (at least 1) in sorted order, reported as its
 * bucket's midpoint clamped to [min, max]; p = 0 gives min and p = 100
 * max, exactly. 0 when empty. */
uint64_t sim_hist_percentile(const struct sim_hist *h, double p);

#endif
