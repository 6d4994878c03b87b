/* hist.c: log-linear latency histogram (see hist.h). */
#include "hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(SIM_HIST_N_BUCKETS == 56320, "the index of UINT64_MAX is the last bucket");

int sim_hist_init(struct sim_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
    h->buckets = calloc(SIM_HIST_N_BUCKETS, sizeof *h->buckets);
    return h->buckets ? 0 : -1;
}

void sim_hist_destroy(struct sim_hist *h)
{
    free(h->buckets);
    h->buckets = NULL;
}

void sim_hist_reset(struct sim_hist *h)
{
    memset(h->buckets, 0, h->top * sizeof *h->buckets);
    h->count = h->max = h->sum_lo = h->sum_hi = 0;
    h->min = UINT64_MAX;
    h->top = 0;
}

void sim_hist_bucket_range(uint32_t idx, uint64_t *lo, uint64_t *hi)
{
    if (idx < 2 * SIM_HIST_HALF) {
        *lo = *hi = idx;
        return;
    }
    unsigned shift = idx / SIM_HIST_HALF - 1;
    uint64_t q = idx - (uint64_t)shift * SIM_HIST_HALF;
    *lo = q << shift;
    *hi = *lo + ((1ULL << shift) - 1);
}

/* sum += v * n in 128 bits. */
static void sum_add(struct sim_hist *h, uint64_t v, uint64_t n)
{
    /* v * n as hi:lo from 32-bit halves. */
    uint64_t vl = v & 0xffffffff, vh = v >> 32, nl = n & 0xffffffff, nh = n >> 32;
    uint64_t ll = vl * nl, lh = vl * nh, hl = vh * nl, hh = vh * nh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffff) + (hl & 0xffffffff);
    uint64_t lo = (ll & 0xffffffff) | (mid << 32);
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    h->sum_lo += lo;
    h->sum_hi += hi + (h->sum_lo < lo);
}

void sim_hist_add_n(struct sim_hist *h, uint64_t v, uint64_t n)
{
    if (n == 0)
        return;
    uint32_t i = sim_hist_index(v);
    h->buckets[i] += n;
    if (i >= h->top)
        h->top = i + 1;
    h->count += n;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    sum_add(h, v, n);
}

void sim_hist_merge(struct sim_hist *dst, const struct sim_hist *src)
{
    if (src->count == 0)
        return;
    for (uint32_t i = 0; i < src->top; i++)
        dst->buckets[i] += src->buckets[i];
    if (src->top > dst->top)
        dst->top = src->top;
    dst->count += src->count;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->sum_lo += src->sum_lo;
    dst->sum_hi += src->sum_hi + (dst->sum_lo < src->sum_lo);
}

double sim_hist_mean(const struct sim_hist *h)
{
    if (h->count == 0)
        return 0;
    return ((double)h->sum_hi * 0x1p64 + (double)h->sum_lo) / (double)h->count;
}

uint64_t sim_hist_percentile(const struct sim_hist *h, double p)
{
    if (h->count == 0)
        return 0;
    if (!(p > 0))
        return h->min;
    if (p >= 100)
        return h->max;
    double r = ceil(p * (double)h->count / 100);
    uint64_t rank = r < 1 ? 1 : r > (double)h->count ? h->count : (uint64_t)r;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < h->top; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            sim_hist_bucket_range(i, &lo, &hi);
            uint64_t mid = lo + (hi - lo) / 2;
            return mid < h->min ? h->min : mid > h->max ? h->max : mid;
        }
    }
    return h->max;
}
