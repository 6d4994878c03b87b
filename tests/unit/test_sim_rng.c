/* test_sim_rng.c: sim/rng.h streams and sim/dmath.h functions.
 *
 * Exact outputs come from tests/unit/data/sim/rng_ref.py, an independent
 * Python implementation of the published splitmix64 and xoshiro256**
 * algorithms and of the seeding rule rng.h documents; the splitmix64
 * vector is the one Vigna's reference code prints. Distributions are
 * checked statistically with fixed seeds (deterministic, so a pass or
 * failure is reproducible), with bounds of about five standard deviations.
 * The math functions are compared with the C library's. */
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
#include "sim/dmath.h"
#include "sim/rng.h"


static void test_splitmix64_vector(void **state)
{
    (void)state;
    static const uint64_t want[5] = {0x599ed017fb08fc85ULL, 0x2c73f08458540fa5ULL,
                                     0x883ebce5a3f27c77ULL, 0x3fbef740e9177b3fULL,
                                     0xe3b8346708cb5ecdULL};
    uint64_t x = 1234567;
    for (int i = 0; i < 5; i++)
        assert_int_equal(sim_splitmix64(&x), want[i]);
}

static void test_xoshiro_vector(void **state)
{
    (void)state;
    static const uint64_t want[8] = {
        0x0000000000002d00ULL, 0x0000000000000000ULL, 0x000000005a007080ULL,
        0x10e0000000009d80ULL, 0x10e0b61ce1009d80ULL, 0x0870021ce143ad00ULL,
        0xe071c3c2e143f089ULL, 0x75a1690ef7a20380ULL};
    struct sim_rng r = {{1, 2, 3, 4}};
    for (int i = 0; i < 8; i++)
        assert_int_equal(sim_rng_u64(&r), want[i]);
}

static void test_init_vectors(void **state)
{
    (void)state;
    static const struct {
        uint64_t seed, stream, out[4];
    } v[] = {
        {0x0ULL, 0x0ULL,
         {0x0420970b5814bcadULL, 0xf76884df843179daULL, 0xb53c29e6de5191f4ULL,
          0x372e4ecec7b26744ULL}},
        {0x2aULL, 0x0ULL,
         {0xf480eb33ceb16283ULL, 0x23274c498291f528ULL, 0x71d4027c29024572ULL,
          0xc5fa81c3821fe6f8ULL}},
        {0x2aULL, 0x1ULL,
         {0x124f6967c2253727ULL, 0xa14a673d8b11a3ddULL, 0x871755f9f57a4e2bULL,
          0x4860d8eb9dbbbe3dULL}},
        {0xffffffffffffffffULL, 0x7ULL,
         {0xd639133f916fc639ULL, 0x157c59643551ae65ULL, 0xbdfacd9ffa2e018aULL,
          0xa7a8d7268387d5ceULL}},
        {0x7ULL, 0xffffffffffffffffULL,
         {0x4bc92be23f53a61fULL, 0xb7572635c267a309ULL, 0x0510cce2630cfa6eULL,
          0xe021134ec62a136aULL}},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct sim_rng r;
        sim_rng_init(&r, v[i].seed, v[i].stream);
        for (int j = 0; j < 4; j++)
            assert_int_equal(sim_rng_u64(&r), v[i].out[j]);
    }
}

static void test_below_vectors(void **state)
{
    (void)state;
    static const struct {
        uint64_t n, out[6];
    } v[] = {
        {0x1ULL, {0, 0, 0, 0, 0, 0}},
        {0x6ULL, {3, 5, 2, 1, 5, 3}},
        {0x3b9aca07ULL,
         {0x2d735e72ULL, 0x38bbe10bULL, 0x38740610ULL, 0x31cdca49ULL, 0x13c8a90aULL,
          0x0b511597ULL}},
        {0x8000000000000001ULL,
         {0x2edfa8348766c258ULL, 0x30daa659521451deULL, 0x5634ad4a9d2c2e9eULL,
          0x4fb9ed58fb10fb54ULL, 0x3346269e975b4578ULL, 0x6941379407fb96d4ULL}},
        {0xffffffffffffffffULL,
         {0xaedfa8348766c259ULL, 0xb0daa659521451dfULL, 0x3d061829bd9c4232ULL,
          0xd634ad4a9d2c2e9fULL, 0x3d67706b968b3503ULL, 0xcfb9ed58fb10fb55ULL}},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct sim_rng r;
        sim_rng_init(&r, 1, 2);
        for (int j = 0; j < 6; j++)
            assert_int_equal(sim_rng_below(&r, v[i].n), v[i].out[j]);
    }
    struct sim_rng r;
    sim_rng_init(&r, 1, 2);
    assert_int_equal(sim_rng_below(&r, 0), 0);
}

/* Same (seed, stream): the same sequence; another stream or seed: another
 * one; a copy of the state continues identically. */
static void test_reproducible_and_distinct(void **state)
{
    (void)state;
    struct sim_rng a, b, c, d;
    sim_rng_init(&a, 99, 5);
    sim_rng_init(&b, 99, 5);
    sim_rng_init(&c, 99, 6);
    sim_rng_init(&d, 100, 5);
    int same_c = 0, same_d = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sim_rng_u64(&a);
        assert_int_equal(x, sim_rng_u64(&b));
        same_c += x == sim_rng_u64(&c);
        same_d += x == sim_rng_u64(&d);
    }
    assert_int_equal(same_c, 0);
    assert_int_equal(same_d, 0);
    struct sim_rng e = a;
    for (int i = 0; i < 10; i++)
        assert_int_equal(sim_rng_u64(&a), sim_rng_u64(&e));
    /* Equal seed and stream numbers do not cancel out. */
    for (uint64_t k = 0; k < 64; k++) {
        struct sim_rng z;
        sim_rng_init(&z, k, k);
        assert_true(z.s[0] | z.s[1] | z.s[2] | z.s[3]);
        assert_int_not_equal(z.s[0], z.s[1]);
    }
}

/* Pearson correlation of uniforms from neighbouring streams, and of each
 * stream with itself one step later: all near 0 (|r| < 5 / sqrt(n)). */
static void test_streams_uncorrelated(void **state)
{
    (void)state;
    const int n = quick() ? 20000 : 200000;
    for (uint64_t st = 0; st < 4; st++) {
        struct sim_rng a, b;
        sim_rng_init(&a, 7, st);
        sim_rng_init(&b, 7, st + 1);
        double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, slag = 0, prev = 0.5;
        for (int i = 0; i < n; i++) {
            double x = sim_rng_uniform(&a), y = sim_rng_uniform(&b);
            sx += x;
            sy += y;
            sxx += x * x;
            syy += y * y;
            sxy += x * y;
            slag += (x - 0.5) * (prev - 0.5);
            prev = x;
        }
        double cov = sxy / n - (sx / n) * (sy / n);
        double r = cov / sqrt((sxx / n - sx * sx / n / n) * (syy / n - sy * sy / n / n));
        assert_true(fabs(r) < 5 / sqrt(n));
        assert_true(fabs(slag / n / (1.0 / 12)) < 5 / sqrt(n));
    }
}

/* Chi-square statistic of counts[0..k) against equal expectations. */
static double chi2_equal(const uint64_t *counts, int k, double total)
{
    double e = total / k, x = 0;
    for (int i = 0; i < k; i++)
        x += (counts[i] - e) * (counts[i] - e) / e;
    return x;
}


static void test_uniform_distribution(void **state)
{
    (void)state;
    const int n = quick() ? 100000 : 1000000;
    struct sim_rng r;
    sim_rng_init(&r, 3, 0);
    uint64_t bins[100] = {0};
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; i++) {
        double u = sim_rng_uniform(&r);
        assert_true(u >= 0 && u < 1);
        bins[(int)(u * 100)]++;
        sum += u;
        sum2 += u * u;
    }
    double mean = sum / n, var = sum2 / n - mean * mean;
    assert_true(fabs(mean - 0.5) < 5 * sqrt(1.0 / 12 / n));
    assert_true(fabs(var - 1.0 / 12) < 5 * sqrt(1.0 / 180 / n));
    assert_true(chi2_equal(bins, 100, n) < chi2_bound(99));
    /* The extremes are representable: 0 and 1 - 2^-53. */
    assert_true(sim_unit(0) == 0.0);
    assert_true(sim_unit(UINT64_MAX) == 1.0 - 0x1p-53);
}

static void test_below_unbiased(void **state)
{
    (void)state;
    const int n = quick() ? 60000 : 600000;
    struct sim_rng r;
    sim_rng_init(&r, 11, 3);
    uint64_t c6[6] = {0}, c7[7] = {0};
    for (int i = 0; i < n; i++) {
        uint64_t x = sim_rng_below(&r, 6), y = sim_rng_below(&r, 7);
        assert_true(x < 6 && y < 7);
        c6[x]++;
        c7[y]++;
    }
    assert_true(chi2_equal(c6, 6, n) < chi2_bound(5));
    assert_true(chi2_equal(c7, 7, n) < chi2_bound(6));

    /* n = 3 * 2^62: a plain modulo would put half the draws below 2^62
     * instead of a third. */
    const uint64_t big = 3ULL << 62;
    int low = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = sim_rng_below(&r, big);
        assert_true(x < big);
        low += x < (1ULL << 62);
    }
    double p = (double)low / n;
    assert_true(fabs(p - 1.0 / 3) < 5 * sqrt(2.0 / 9 / n));
}

static void test_exponential(void **state)
{
    (void)state;
    const int n = quick() ? 100000 : 1000000;
    const double mean = 250.0;
    struct sim_rng r;
    sim_rng_init(&r, 5, 9);
    double sum = 0, sum2 = 0;
    int above = 0;
    for (int i = 0; i < n; i++) {
        double x = sim_rng_exponential(&r, mean);
        assert_true(x >= 0 && isfinite(x));
        sum += x;
        sum2 += x * x;
        above += x > mean;
    }
    double m = sum / n, var = sum2 / n - m * m;
    /* Exponential: sd = mean, variance's sd = sqrt(8) mean^2 / sqrt(n). */
    assert_true(fabs(m - mean) < 5 * mean / sqrt(n));
    assert_true(fabs(var - mean * mean) < 5 * sqrt(8.0) * mean * mean / sqrt(n));
    double p = (double)above / n, e1 = exp(-1.0);
    assert_true(fabs(p - e1) < 5 * sqrt(e1 * (1 - e1) / n));
    /* The same draw as -mean * log1p(-U) with the C library (to an ulp or so). */
    struct sim_rng a, b;
    sim_rng_init(&a, 5, 10);
    sim_rng_init(&b, 5, 10);
    for (int i = 0; i < 1000; i++) {
        double x = sim_rng_exponential(&a, 3.0);
        double y = -3.0 * log1p(-sim_rng_uniform(&b));
        assert_true(fabs(x - y) <= 4 * 0x1p-52 * fabs(y));
    }
}

/* Distance in ulps between two finite doubles of the same sign. */
static double ulps(double got, double want)
{
    if (got == want)
        return 0;
    double u = nextafter(fabs(want), INFINITY) - fabs(want);
    return fabs(got - want) / u;
}

static void test_dmath_against_libm(void **state)
{
    (void)state;
    struct sim_rng r;
    sim_rng_init(&r, 1, 1);
    const int n = quick() ? 20000 : 200000;
    double worst_log = 0, worst_exp = 0, worst_log1p = 0, worst_expm1 = 0;
    for (int i = 0; i < n; i++) {
        /* log over the whole positive range, subnormals included. */
        uint64_t b = sim_rng_below(&r, 0x7ff0000000000000ULL - 1) + 1;
        double x;
        memcpy(&x, &b, sizeof x);
        worst_log = fmax(worst_log, ulps(sim_log(x), log(x)));
        double e = (sim_rng_uniform(&r) - 0.5) * 1400;
        worst_exp = fmax(worst_exp, ulps(sim_exp(e), exp(e)));
        /* log1p and expm1 where they matter: small arguments, and moderate ones. */
        double s = (sim_rng_uniform(&r) - 0.5) * pow(10, -(double)sim_rng_below(&r, 17));
        worst_log1p = fmax(worst_log1p, ulps(sim_log1p(s), log1p(s)));
        worst_expm1 = fmax(worst_expm1, ulps(sim_expm1(s), expm1(s)));
        double m = sim_rng_uniform(&r) * 40 - 0.999;
        worst_log1p = fmax(worst_log1p, ulps(sim_log1p(m), log1p(m)));
        worst_expm1 = fmax(worst_expm1, ulps(sim_expm1(m * 10), expm1(m * 10)));
    }
    assert_true(worst_log <= 1.0);
    assert_true(worst_exp <= 1.0);
    assert_true(worst_log1p <= 4.0);
    assert_true(worst_expm1 <= 4.0);
}

static void test_dmath_special_values(void **state)
{
    (void)state;
    assert_true(sim_log(1.0) == 0.0);
    assert_true(sim_log(0.0) == -INFINITY);
    assert_true(isnan(sim_log(-1.0)));
    assert_true(isnan(sim_log(NAN)));
    assert_true(sim_log(INFINITY) == INFINITY);
    assert_true(fabs(sim_log(0x1p-1074) - (-1074 * log(2.0))) < 1e-12);
    assert_true(sim_exp(0.0) == 1.0);
    assert_true(sim_exp(710.0) == INFINITY);
    assert_true(sim_exp(-746.0) == 0.0);
    assert_true(sim_exp(-INFINITY) == 0.0);
    assert_true(isnan(sim_exp(NAN)));
    assert_true(ulps(sim_exp(1.0), exp(1.0)) <= 1.0);
    assert_true(sim_log1p(0.0) == 0.0);
    assert_true(sim_log1p(-1.0) == -INFINITY);
    assert_true(isnan(sim_log1p(-2.0)));
    assert_true(sim_log1p(1e-300) == 1e-300);
    assert_true(sim_expm1(0.0) == 0.0);
    assert_true(sim_expm1(-800.0) == -1.0);
    assert_true(sim_expm1(1e-300) == 1e-300);
    assert_true(sim_expm1(800.0) == INFINITY);
    /* Subnormal results of exp round as IEEE multiplication does. */
    assert_true(ulps(sim_exp(-740.0), exp(-740.0)) <= 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_vector),
        cmocka_unit_test(test_xoshiro_vector),
        cmocka_unit_test(test_init_vectors),
        cmocka_unit_test(test_below_vectors),
        cmocka_unit_test(test_reproducible_and_distinct),
        cmocka_unit_test(test_streams_uncorrelated),
        cmocka_unit_test(test_uniform_distribution),
        cmocka_unit_test(test_below_unbiased),
        cmocka_unit_test(test_exponential),
        cmocka_unit_test(test_dmath_against_libm),
        cmocka_unit_test(test_dmath_special_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
