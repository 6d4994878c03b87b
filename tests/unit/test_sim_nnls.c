/* test_sim_nnls.c: sim/nnls.h, the calibration's estimator.
 *
 * A non-negative least-squares problem is convex, so its solution is
 * certified by the Karush-Kuhn-Tucker conditions, checked here directly
 * from A, b and the returned x (independently of how it was found):
 * x >= 0, and the gradient w = A^T (b - A x) is 0 where x > 0 and <= 0
 * where x = 0. Problems built with a known non-negative solution and an
 * exact right-hand side must give that solution back. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/nnls.h"

/* A fixed-seed generator of the test's own (uniform in [0, 1)). */
static uint64_t lcg_state;

static double urand(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

/* The KKT conditions of min ||Ax - b|| s.t. x >= 0, to a tolerance
 * relative to the size of the problem. */
static void check_kkt(const double *a, const double *b, size_t m, size_t n, const double *x)
{
    double bnorm = 0;
    for (size_t i = 0; i < m; i++)
        bnorm += b[i] * b[i];
    bnorm = sqrt(bnorm);
    double *r = malloc(m * sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < m; i++) {
        double v = b[i];
        for (size_t j = 0; j < n; j++)
            v -= a[i * n + j] * x[j];
        r[i] = v;
    }
    for (size_t j = 0; j < n; j++) {
        assert_true(x[j] >= 0);
        double w = 0, cn = 0;
        for (size_t i = 0; i < m; i++) {
            w += a[i * n + j] * r[i];
            cn += a[i * n + j] * a[i * n + j];
        }
        double tol = 1e-8 * sqrt(cn) * (bnorm > 0 ? bnorm : 1);
        if (x[j] > 0) {
            if (fabs(w) > tol)
                fail_msg("x[%zu] = %g > 0 but gradient %g (tol %g)", j, x[j], w, tol);
        } else if (w > tol) {
            fail_msg("x[%zu] = 0 but gradient %g > 0 (tol %g)", j, w, tol);
        }
    }
    free(r);
}

static void test_identity(void **state)
{
    (void)state;
    /* min ||x - b||, x >= 0: the positive part of b. */
    const double a[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double b[3] = {1, -2, 3};
    double x[3];
    assert_int_equal(sim_nnls(a, b, 3, 3, x), 0);
    assert_true(fabs(x[0] - 1) < 1e-12 && x[1] == 0 && fabs(x[2] - 3) < 1e-12);
}

static void test_exact_recovery(void **state)
{
    (void)state;
    /* b = A x_true with x_true >= 0 (some exactly 0) and A of full column
     * rank: the unique solution is x_true. Columns scaled from 1e-3 to
     * 1e4, as counts of polls and of bytes are. */
    enum { M = 60, N = 12 };
    for (int trial = 0; trial < 20; trial++) {
        lcg_state = 1000u + (uint64_t)trial;
        double a[M * N], b[M], xt[N], x[N];
        for (size_t j = 0; j < N; j++)
            xt[j] = (j % 4 == 3) ? 0 : 0.1 + 10 * urand();
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++)
                a[i * N + j] = urand() * pow(10, (double)(j % 8) - 3);
        for (size_t i = 0; i < M; i++) {
            b[i] = 0;
            for (size_t j = 0; j < N; j++)
                b[i] += a[i * N + j] * xt[j];
        }
        assert_int_equal(sim_nnls(a, b, M, N, x), 0);
        for (size_t j = 0; j < N; j++)
            if (fabs(x[j] - xt[j]) > 1e-7 * (1 + xt[j]))
                fail_msg("trial %d: x[%zu] = %.12g, expected %.12g", trial, j, x[j], xt[j]);
        check_kkt(a, b, M, N, x);
    }
}

static void test_active_constraints(void **state)
{
    (void)state;
    /* Right-hand sides of mixed sign: the unconstrained optimum has
     * negative entries, so constraints are active; KKT certifies x. */
    enum { M = 30, N = 10 };
    int active = 0;
    for (int trial = 0; trial < 50; trial++) {
        lcg_state = 77u + (uint64_t)trial;
        double a[M * N], b[M], x[N];
        for (size_t i = 0; i < M * N; i++)
            a[i] = urand() - 0.3;
        for (size_t i = 0; i < M; i++)
            b[i] = 2 * urand() - 1;
        assert_int_equal(sim_nnls(a, b, M, N, x), 0);
        check_kkt(a, b, M, N, x);
        for (size_t j = 0; j < N; j++)
            active += x[j] == 0;
    }
    assert_true(active > 0); /* the cases did exercise the constraints */
}

static void test_collinear(void **state)
{
    (void)state;
    /* Column 3 is 2 x column 1, column 4 is zero: the twins are named,
     * and the fit is as good as without the duplicate (KKT holds, the
     * residual equals that of the problem without columns 3 and 4). */
    enum { M = 20, N = 5 };
    lcg_state = 5;
    double a[M * N], b[M], x[N], a2[M * 3], x2[3];
    for (size_t i = 0; i < M; i++) {
        a[i * N + 0] = urand();
        a[i * N + 1] = urand();
        a[i * N + 2] = urand();
        a[i * N + 3] = 2 * a[i * N + 1];
        a[i * N + 4] = 0;
        for (size_t j = 0; j < 3; j++)
            a2[i * 3 + j] = a[i * N + j];
        b[i] = 3 * a[i * N + 0] + 4 * a[i * N + 1] + 0.5 * a[i * N + 2] + 0.01 * urand();
    }
    int dup[N];
    assert_int_equal(sim_nnls_collinear(a, M, N, dup), 2);
    assert_int_equal(dup[0], -1);
    assert_int_equal(dup[1], -1);
    assert_int_equal(dup[2], -1);
    assert_int_equal(dup[3], 1);
    assert_int_equal(dup[4], -2);
    assert_int_equal(sim_nnls(a, b, M, N, x), 0);
    check_kkt(a, b, M, N, x);
    assert_true(x[4] == 0);
    assert_int_equal(sim_nnls(a2, b, M, 3, x2), 0);
    /* Same fitted values: column 1's share is split between 1 and 3. */
    assert_true(fabs(x[1] + 2 * x[3] - x2[1]) < 1e-8);
    assert_true(fabs(x[0] - x2[0]) < 1e-8 && fabs(x[2] - x2[2]) < 1e-8);
}

static void test_all_negative(void **state)
{
    (void)state;
    /* Every column points away from b: x = 0. */
    const double a[6] = {1, 2, 1, 1, 3, 0};
    const double b[3] = {-1, -1, -1};
    double x[2] = {7, 7};
    assert_int_equal(sim_nnls(a, b, 3, 2, x), 0);
    assert_true(x[0] == 0 && x[1] == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_exact_recovery),
        cmocka_unit_test(test_active_constraints),
        cmocka_unit_test(test_collinear),
        cmocka_unit_test(test_all_negative),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
