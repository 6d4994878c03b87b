/* test_sim_hist.c: sim/hist.h against exact statistics.
 *
 * Every distribution here is also kept as a sorted array: the reference
 * percentile is the nearest-rank value computed with integer ranks
 * (rank = ceil(num * N / den) for p = num/den * 100), and the histogram's
 * answer must be within its documented bound, 2^-11 of that value. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "test_sim_stats.h"
#include "sim/hist.h"
#include "sim/rng.h"


static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Percentiles as num/den of 100%: p50, p90, p99, p99.9, p99.99, p1, p25. */
static const struct {
    double p;
    uint64_t num, den;
} pcts[] = {
    {50, 1, 2}, {90, 9, 10}, {99, 99, 100}, {99.9, 999, 1000},
    {99.99, 9999, 10000}, {1, 1, 100}, {25, 1, 4},
};

/* Checks h's percentiles against the sorted values v[0..n). */
static void check_percentiles(const struct sim_hist *h, const uint64_t *v, size_t n)
{
    for (size_t i = 0; i < sizeof pcts / sizeof pcts[0]; i++) {
        uint64_t rank = (pcts[i].num * n + pcts[i].den - 1) / pcts[i].den;
        if (rank < 1)
            rank = 1;
        uint64_t exact = v[rank - 1];
        uint64_t got = sim_hist_percentile(h, pcts[i].p);
        double err = fabs((double)got - (double)exact);
        assert_true(err <= (double)exact / 2048.0);
        /* The answer lies in the exact value's bucket. */
        assert_int_equal(sim_hist_index(got), sim_hist_index(exact));
    }
    assert_int_equal(sim_hist_percentile(h, 0), v[0]);
    assert_int_equal(sim_hist_percentile(h, 100), v[n - 1]);
}

static void check_stats(const struct sim_hist *h, const uint64_t *v, size_t n)
{
    long double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    assert_int_equal(h->count, n);
    assert_int_equal(h->min, v[0]);
    assert_int_equal(h->max, v[n - 1]);
    double mean = (double)(sum / n);
    assert_true(fabs(sim_hist_mean(h) - mean) <= 1e-12 * mean);
}

static void test_uniform_integers(void **state)
{
    (void)state;
    const size_t n = 1000000;
    uint64_t *v = malloc(n * sizeof *v);
    assert_non_null(v);
    struct sim_hist h;
    assert_int_equal(sim_hist_init(&h), 0);
    for (size_t i = 0; i < n; i++) {
        v[i] = i + 1;
        sim_hist_add(&h, i + 1);
    }
    check_stats(&h, v, n);
    assert_true(sim_hist_mean(&h) == 500000.5);
    check_percentiles(&h, v, n);
    uint64_t p50 = sim_hist_percentile(&h, 50);
    assert_true(p50 >= 500000 - 500000 / 2048 && p50 <= 500000 + 500000 / 2048);
    sim_hist_destroy(&h);
    free(v);
}

static void test_exponential_and_lognormal(void **state)
{
    (void)state;
    const size_t n = quick() ? 100000 : 1000000;
    uint64_t *v = malloc(n * sizeof *v);
    assert_non_null(v);
    struct sim_rng r;
    sim_rng_init(&r, 21, 0);
    for (int dist = 0; dist < 2; dist++) {
        struct sim_hist h;
        assert_int_equal(sim_hist_init(&h), 0);
        for (size_t i = 0; i < n; i++) {
            double x = dist == 0 ? sim_rng_exponential(&r, 10000.0)
                                 : exp(9 + 2 * (sim_rng_uniform(&r) + sim_rng_uniform(&r) +
                                                sim_rng_uniform(&r) - 1.5));
            v[i] = (uint64_t)x;
            sim_hist_add(&h, v[i]);
        }
        qsort(v, n, sizeof *v, cmp_u64);
        check_stats(&h, v, n);
        check_percentiles(&h, v, n);
        sim_hist_destroy(&h);
    }
    free(v);
}

/* Below 2048 ns every value has its own bucket: percentiles are exact. */
static void test_small_values_exact(void **state)
{
    (void)state;
    struct sim_hist h;
    assert_int_equal(sim_hist_init(&h), 0);
    uint64_t v[2048];
    for (uint64_t i = 0; i < 2048; i++) {
        v[i] = i;
        sim_hist_add(&h, i);
    }
    for (int p = 1; p < 100; p++) {
        uint64_t rank = ((uint64_t)p * 2048 + 99) / 100;
        assert_int_equal(sim_hist_percentile(&h, p), v[rank - 1]);
    }
    sim_hist_destroy(&h);
}

/* Bucket ranges tile the 64-bit range without gap or overlap, each at most
 * 1/1024 of its lower bound wide, and sim_hist_index() agrees with them. */
static void test_bucket_layout(void **state)
{
    (void)state;
    uint64_t next = 0;
    for (uint32_t i = 0; i < SIM_HIST_N_BUCKETS; i++) {
        uint64_t lo, hi;
        sim_hist_bucket_range(i, &lo, &hi);
        assert_int_equal(lo, next);
        assert_true(hi >= lo);
        if (lo >= 2048)
            assert_true(hi - lo + 1 <= lo / 1024);
        assert_int_equal(sim_hist_index(lo), i);
        assert_int_equal(sim_hist_index(hi), i);
        next = hi + 1;
    }
    assert_int_equal(next, 0); /* the last bucket ends at UINT64_MAX */
}

static void test_extremes_and_empty(void **state)
{
    (void)state;
    struct sim_hist h;
    assert_int_equal(sim_hist_init(&h), 0);
    assert_int_equal(sim_hist_percentile(&h, 50), 0);
    assert_true(sim_hist_mean(&h) == 0);
    assert_int_equal(h.count, 0);
    sim_hist_add(&h, UINT64_MAX);
    sim_hist_add(&h, UINT64_MAX);
    sim_hist_add(&h, 0);
    assert_int_equal(h.max, UINT64_MAX);
    assert_int_equal(h.min, 0);
    /* The 128-bit sum: 2 * (2^64 - 1). */
    assert_int_equal(h.sum_hi, 1);
    assert_int_equal(h.sum_lo, UINT64_MAX - 1);
    assert_true(fabs(sim_hist_mean(&h) - 2 * 0x1p64 / 3) < 1e-9 * 0x1p64);
    assert_int_equal(sim_hist_percentile(&h, 100), UINT64_MAX);
    /* p50 is UINT64_MAX's bucket, [2^64 - 2^53, 2^64 - 1], by its midpoint. */
    assert_int_equal(sim_hist_percentile(&h, 50), 0xffe0000000000000ULL + ((1ULL << 53) - 1) / 2);
    sim_hist_reset(&h);
    assert_int_equal(h.count, 0);
    assert_int_equal(sim_hist_percentile(&h, 99), 0);
    sim_hist_add_n(&h, 5000, 3);
    sim_hist_add_n(&h, 7, 0);
    assert_int_equal(h.count, 3);
    assert_int_equal(h.min, 5000);
    assert_true(sim_hist_mean(&h) == 5000);
    sim_hist_destroy(&h);
}

/* Merging two histograms equals adding both value sets to one. */
static void test_merge(void **state)
{
    (void)state;
    struct sim_hist a, b, all;
    assert_int_equal(sim_hist_init(&a), 0);
    assert_int_equal(sim_hist_init(&b), 0);
    assert_int_equal(sim_hist_init(&all), 0);
    struct sim_rng r;
    sim_rng_init(&r, 5, 5);
    const size_t n = 100000;
    uint64_t *v = malloc(2 * n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < 2 * n; i++) {
        v[i] = (uint64_t)sim_rng_exponential(&r, i < n ? 1000.0 : 100000.0);
        sim_hist_add(i < n ? &a : &b, v[i]);
        sim_hist_add(&all, v[i]);
    }
    sim_hist_merge(&a, &b);
    assert_int_equal(a.count, all.count);
    assert_int_equal(a.min, all.min);
    assert_int_equal(a.max, all.max);
    assert_int_equal(a.sum_lo, all.sum_lo);
    assert_int_equal(a.sum_hi, all.sum_hi);
    assert_int_equal(a.top, all.top);
    assert_memory_equal(a.buckets, all.buckets, SIM_HIST_N_BUCKETS * sizeof *a.buckets);
    qsort(v, 2 * n, sizeof *v, cmp_u64);
    check_percentiles(&a, v, 2 * n);
    /* Merging an empty histogram changes nothing; into an empty one copies. */
    struct sim_hist e;
    assert_int_equal(sim_hist_init(&e), 0);
    sim_hist_merge(&a, &e);
    assert_int_equal(a.count, 2 * n);
    sim_hist_merge(&e, &a);
    assert_int_equal(e.min, a.min);
    assert_int_equal(e.count, a.count);
    assert_int_equal(sim_hist_percentile(&e, 99.9), sim_hist_percentile(&a, 99.9));
    sim_hist_destroy(&e);
    sim_hist_destroy(&a);
    sim_hist_destroy(&b);
    sim_hist_destroy(&all);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_integers),
        cmocka_unit_test(test_exponential_and_lognormal),
        cmocka_unit_test(test_small_values_exact),
        cmocka_unit_test(test_bucket_layout),
        cmocka_unit_test(test_extremes_and_empty),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
