/* test_sim_zipf.c: sim/zipf.h rank frequencies against the Zipf pmf.
 *
 * The reference pmf is computed here independently of the sampler: bin
 * masses sum k^-s directly where a bin is short, and with the
 * Euler-Maclaurin formula (C library pow and log, terms to the third
 * derivative) where it is long, so n = 10^8 costs no 10^8-term sum. Each
 * case draws a fixed-seed sample (deterministic) and requires the
 * chi-square statistic over bins of at least 20 expected draws to stay
 * below a bound a correct sampler exceeds with probability about 1e-6;
 * a sampler with a slightly wrong exponent must exceed it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_sim_stats.h"
#include "sim/rng.h"
#include "sim/zipf.h"


/* sum_{k=a..b} k^-s. */
static double zsum(uint64_t a, uint64_t b, double s)
{
    if (b < a)
        return 0;
    if (b - a < 2000) {
        double t = 0;
        for (uint64_t k = b;; k--) { /* smallest terms first */
            t += pow((double)k, -s);
            if (k == a)
                break;
        }
        return t;
    }
    /* Euler-Maclaurin with f(x) = x^-s. */
    double fa = pow((double)a, -s), fb = pow((double)b, -s);
    double integral = s == 1 ? log((double)b / a)
                             : (pow((double)b, 1 - s) - pow((double)a, 1 - s)) / (1 - s);
    double d1a = -s * fa / a, d1b = -s * fb / b;
    double d3a = -s * (s + 1) * (s + 2) * fa / ((double)a * a * a);
    double d3b = -s * (s + 1) * (s + 2) * fb / ((double)b * b * b);
    return integral + (fa + fb) / 2 + (d1b - d1a) / 12 - (d3b - d3a) / 720;
}


#define MAXBINS 4096

struct bins {
    int n;
    uint64_t lo[MAXBINS], hi[MAXBINS]; /* ranks lo..hi */
    double p[MAXBINS];
};

/* Bins of ranks for Zipf(n, s) with at least 'min_expect' expected draws
 * out of 'draws' each: single ranks up to 64, then ranges growing by an
 * eighth (a few hundred bins up to n = 10^8), widened where too thin. */
static void make_bins(struct bins *b, uint64_t n, double s, double draws, double min_expect)
{
    double total = zsum(1, n, s);
    b->n = 0;
    uint64_t a = 1;
    while (a <= n) {
        uint64_t e = a < 64 ? a : a + a / 8 > n ? n : a + a / 8;
        double p = zsum(a, e, s) / total;
        while (e < n && p * draws < min_expect) {
            uint64_t step = e / 8 + 1;
            e = e + step > n ? n : e + step;
            p = zsum(a, e, s) / total;
        }
        if (p * draws < min_expect && b->n > 0) { /* a thin tail joins the last bin */
            b->n--;
            a = b->lo[b->n];
            p = zsum(a, e, s) / total;
        }
        assert_true(b->n < MAXBINS);
        b->lo[b->n] = a;
        b->hi[b->n] = e;
        b->p[b->n] = p;
        b->n++;
        a = e + 1;
    }
}

static int bin_of(const struct bins *b, uint64_t k)
{
    int lo = 0, hi = b->n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (b->hi[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Chi-square of 'draws' samples of Zipf(n, s_sample) against the pmf of
 * Zipf(n, s_model); *df gets the degrees of freedom. */
static double zipf_chi2(uint64_t n, double s_sample, double s_model, int draws, uint64_t seed,
                        int *df)
{
    static struct bins b;
    static uint64_t count[MAXBINS];
    make_bins(&b, n, s_model, draws, 20);
    memset(count, 0, sizeof count);
    struct sim_zipf z;
    assert_int_equal(sim_zipf_init(&z, n, s_sample), 0);
    struct sim_rng r;
    sim_rng_init(&r, seed, 0);
    for (int i = 0; i < draws; i++) {
        uint64_t k = sim_zipf_sample(&z, &r);
        assert_true(k >= 1 && k <= n);
        count[bin_of(&b, k)]++;
    }
    double x = 0;
    for (int i = 0; i < b.n; i++) {
        double e = b.p[i] * draws;
        x += (count[i] - e) * (count[i] - e) / e;
    }
    *df = b.n - 1;
    return x;
}

static void test_rank_frequencies(void **state)
{
    (void)state;
    static const struct {
        uint64_t n;
        double s;
    } cases[] = {
        {10, 0.0},       {1000, 0.5},      {1000, 1.0},     {100000, 0.99},
        {1000000, 1.0},  {100000000, 0.8}, {100000000, 1.0}, {100000000, 1.2},
        {100, 2.5},      {5, 1.0},         {1, 1.0},        {2, 3.0},
    };
    const int draws = quick() ? 100000 : 1000000;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int df;
        double x = zipf_chi2(cases[i].n, cases[i].s, cases[i].s, draws, 1000 + i, &df);
        if (df == 0) { /* n = 1: every draw is rank 1 */
            assert_true(x == 0);
            continue;
        }
        if (x >= chi2_bound(df))
            printf("n=%llu s=%g: chi2 %.1f df %d bound %.1f\n",
                   (unsigned long long)cases[i].n, cases[i].s, x, df, chi2_bound(df));
        assert_true(x < chi2_bound(df));
    }
}

/* The test has power: a sampler off by 0.02 in the exponent fails it. */
static void test_wrong_exponent_detected(void **state)
{
    (void)state;
    const int draws = quick() ? 200000 : 1000000;
    int df;
    double x = zipf_chi2(100000, 1.0, 1.02, draws, 77, &df);
    assert_true(x > chi2_bound(df));
    x = zipf_chi2(1000000, 0.98, 1.0, draws, 78, &df);
    assert_true(x > chi2_bound(df));
}

/* s = 1 exactly, and exponents either side of it, give nearly the same
 * frequencies (no discontinuity at s = 1). */
static void test_continuous_at_one(void **state)
{
    (void)state;
    struct sim_zipf a, b, c;
    assert_int_equal(sim_zipf_init(&a, 1000000, 1.0), 0);
    assert_int_equal(sim_zipf_init(&b, 1000000, 1.0 - 1e-12), 0);
    assert_int_equal(sim_zipf_init(&c, 1000000, 1.0 + 1e-12), 0);
    assert_true(fabs(a.h_n - b.h_n) < 1e-9 * a.h_n);
    assert_true(fabs(a.h_n - c.h_n) < 1e-9 * a.h_n);
    /* H(n + 1/2) for s = 1 is log(n + 1/2). */
    assert_true(fabs(a.h_n - log(1000000.5)) < 1e-12);
    struct sim_rng r1, r2;
    sim_rng_init(&r1, 3, 3);
    sim_rng_init(&r2, 3, 3);
    int same = 0;
    for (int i = 0; i < 10000; i++)
        same += sim_zipf_sample(&a, &r1) == sim_zipf_sample(&b, &r2);
    assert_true(same > 9990);
}

static void test_deterministic(void **state)
{
    (void)state;
    struct sim_zipf z;
    assert_int_equal(sim_zipf_init(&z, 100000000, 1.1), 0);
    struct sim_rng r1, r2, r3;
    sim_rng_init(&r1, 9, 1);
    sim_rng_init(&r2, 9, 1);
    sim_rng_init(&r3, 9, 2);
    int diff = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t k = sim_zipf_sample(&z, &r1);
        assert_int_equal(k, sim_zipf_sample(&z, &r2));
        diff += k != sim_zipf_sample(&z, &r3);
    }
    assert_true(diff > 500);
}

static void test_init_errors(void **state)
{
    (void)state;
    struct sim_zipf z;
    assert_int_equal(sim_zipf_init(&z, 0, 1.0), -1);
    assert_int_equal(sim_zipf_init(&z, SIM_ZIPF_N_MAX + 1, 1.0), -1);
    assert_int_equal(sim_zipf_init(&z, 10, -0.1), -1);
    assert_int_equal(sim_zipf_init(&z, 10, NAN), -1);
    assert_int_equal(sim_zipf_init(&z, 10, INFINITY), -1);
    assert_int_equal(sim_zipf_init(&z, SIM_ZIPF_N_MAX, 1.0), 0);
    struct sim_rng r;
    sim_rng_init(&r, 1, 1);
    for (int i = 0; i < 1000; i++) {
        uint64_t k = sim_zipf_sample(&z, &r);
        assert_true(k >= 1 && k <= SIM_ZIPF_N_MAX);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_frequencies),
        cmocka_unit_test(test_wrong_exponent_detected),
        cmocka_unit_test(test_continuous_at_one),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_init_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
