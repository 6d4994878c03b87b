/* test_sim_calibrate.c: sim/calibrate.h, the fit of the calibration.
 *
 * sim_calib_fit() is checked on rows built from known costs (cycles per
 * poll = counts . costs exactly): it must give the costs back, name the
 * events no row counts and the collinear ones, and report a zero error.
 * The timed measurement itself runs in tests/run-tests (flowswitch sim
 * calibrate), where only what it produces is asserted, not its timings. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/calibrate.h"

static uint64_t lcg;

static double urand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

/* Rows where every event but 'zero' (never counted) and 'twin' (always
 * twice 'of') moves at random; cycles from 'cost'. */
static void make_rows(struct sim_calib *c, size_t n, const double *cost, int zero, int twin,
                      int of)
{
    memset(c, 0, sizeof *c);
    c->rows = calloc(n, sizeof *c->rows);
    assert_non_null(c->rows);
    c->n_rows = n;
    for (size_t i = 0; i < n; i++) {
        struct sim_calib_row *r = &c->rows[i];
        for (int e = 0; e < SIM_COST_N; e++)
            r->counts[e] = e == zero ? 0 : urand() * (e % 3 ? 32 : 2000);
        if (twin >= 0)
            r->counts[twin] = 2 * r->counts[of];
        for (int e = 0; e < SIM_COST_N; e++)
            r->cycles += r->counts[e] * cost[e];
    }
}

static void test_fit_recovers_costs(void **state)
{
    (void)state;
    double cost[SIM_COST_N];
    lcg = 42;
    for (int e = 0; e < SIM_COST_N; e++)
        cost[e] = e == SIM_COST_DROP ? 0 : 1 + 50 * urand();
    cost[SIM_COST_CSUM_BYTE] = 0.02;
    struct sim_calib c;
    make_rows(&c, 120, cost, SIM_COST_NIC_RX_PKT, -1, 0);
    cost[SIM_COST_NIC_RX_PKT] = 0;
    assert_int_equal(sim_calib_fit(&c), 0);
    for (int e = 0; e < SIM_COST_N; e++)
        if (fabs(c.cost_cycles[e] - cost[e]) > 1e-6 * (1 + cost[e]))
            fail_msg("%s: fitted %g, true %g", sim_cost_name((enum sim_cost)e),
                     c.cost_cycles[e], cost[e]);
    assert_int_equal(c.twin[SIM_COST_NIC_RX_PKT], -2);
    assert_int_equal(c.twin[SIM_COST_EMC_HIT], -1);
    assert_true(c.max_rel_err < 1e-9);
    for (size_t i = 0; i < c.n_rows; i++)
        assert_true(fabs(c.rows[i].fitted - c.rows[i].cycles) < 1e-6 * c.rows[i].cycles);
    sim_calib_free(&c);
}

static void test_fit_names_collinear_events(void **state)
{
    (void)state;
    double cost[SIM_COST_N];
    lcg = 7;
    for (int e = 0; e < SIM_COST_N; e++)
        cost[e] = 1 + 20 * urand();
    struct sim_calib c;
    /* megaflow_install always twice upcall: only their sum is known. */
    make_rows(&c, 100, cost, -1, SIM_COST_MEGAFLOW_INSTALL, SIM_COST_UPCALL);
    assert_int_equal(sim_calib_fit(&c), 0);
    assert_int_equal(c.twin[SIM_COST_MEGAFLOW_INSTALL], SIM_COST_UPCALL);
    double sum = c.cost_cycles[SIM_COST_UPCALL] + 2 * c.cost_cycles[SIM_COST_MEGAFLOW_INSTALL];
    double want = cost[SIM_COST_UPCALL] + 2 * cost[SIM_COST_MEGAFLOW_INSTALL];
    assert_true(fabs(sum - want) < 1e-6 * want);
    assert_true(c.max_rel_err < 1e-9);
    sim_calib_free(&c);
}

static void test_fit_noise_and_no_rows(void **state)
{
    (void)state;
    double cost[SIM_COST_N];
    lcg = 9;
    for (int e = 0; e < SIM_COST_N; e++)
        cost[e] = 1 + 10 * urand();
    struct sim_calib c;
    make_rows(&c, 200, cost, -1, -1, 0);
    /* +-2% multiplicative noise: every fitted cost non-negative, the
     * errors reported and bounded by what was added. */
    for (size_t i = 0; i < c.n_rows; i++)
        c.rows[i].cycles *= 1 + 0.04 * (urand() - 0.5);
    assert_int_equal(sim_calib_fit(&c), 0);
    for (int e = 0; e < SIM_COST_N; e++)
        assert_true(c.cost_cycles[e] >= 0);
    assert_true(c.rms_rel_err > 0 && c.rms_rel_err < 0.02);
    sim_calib_free(&c);
    struct sim_calib empty;
    memset(&empty, 0, sizeof empty);
    assert_int_equal(sim_calib_fit(&empty), -1);
}

/* Rows of 'runs' rounds each, round k of a row its true cycles times
 * (1 + noise x (u - 0.5)), u uniform; the median is the row's figure. */
static void make_rounds(struct sim_calib *c, unsigned runs, double noise)
{
    double v[SIM_CALIB_MAX_RUNS];
    for (size_t i = 0; i < c->n_rows; i++) {
        struct sim_calib_row *r = &c->rows[i];
        r->n_runs = runs;
        for (unsigned k = 0; k < runs; k++)
            v[k] = r->run_cycles[k] = r->cycles * (1 + noise * (urand() - 0.5));
        for (unsigned a = 1; a < runs; a++) /* insertion sort for the median */
            for (unsigned b = a; b > 0 && v[b - 1] > v[b]; b--) {
                double x = v[b];
                v[b] = v[b - 1];
                v[b - 1] = x;
            }
        r->cycles = runs % 2 ? v[runs / 2] : (v[runs / 2 - 1] + v[runs / 2]) / 2;
    }
}

/* The bootstrap over rounds: no spread without noise, a spread that covers
 * the true costs with it, none with one round. */
static void test_bootstrap_uncertainty(void **state)
{
    (void)state;
    double cost[SIM_COST_N];
    lcg = 11;
    for (int e = 0; e < SIM_COST_N; e++)
        cost[e] = 2 + 30 * urand();
    cost[SIM_COST_VHOST_BYTE] = 0.05;
    struct sim_calib c;
    make_rows(&c, 150, cost, -1, -1, 0);
    make_rounds(&c, 7, 0);
    assert_int_equal(sim_calib_fit(&c), 0);
    assert_true(c.uncertainty_cycles[SIM_COST_UPCALL] == -1); /* not bootstrapped yet */
    assert_int_equal(sim_calib_bootstrap(&c, 100, 1), 0);
    for (int e = 0; e < SIM_COST_N; e++)
        assert_true(fabs(c.uncertainty_cycles[e]) < 1e-9 * (1 + cost[e]));
    sim_calib_free(&c);

    make_rows(&c, 150, cost, -1, -1, 0);
    make_rounds(&c, 9, 0.06); /* +-3% a run */
    assert_int_equal(sim_calib_fit(&c), 0);
    assert_int_equal(sim_calib_bootstrap(&c, 300, 5), 0);
    for (int e = 0; e < SIM_COST_N; e++) {
        double u = c.uncertainty_cycles[e], d = fabs(c.cost_cycles[e] - cost[e]);
        /* the 5-95% half-width is about 1.6 standard errors */
        if (!(u > 0 && d <= 4 * u + 1e-3 * cost[e]))
            fail_msg("%s: fitted %g, true %g, uncertainty %g", sim_cost_name((enum sim_cost)e),
                     c.cost_cycles[e], cost[e], u);
    }
    /* The same seed, the same answer. */
    double u0 = c.uncertainty_cycles[SIM_COST_EMC_INSERT];
    assert_int_equal(sim_calib_bootstrap(&c, 300, 5), 0);
    assert_true(c.uncertainty_cycles[SIM_COST_EMC_INSERT] == u0);
    /* One round: nothing to resample. */
    for (size_t i = 0; i < c.n_rows; i++)
        c.rows[i].n_runs = 1;
    assert_int_equal(sim_calib_bootstrap(&c, 300, 5), 0);
    for (int e = 0; e < SIM_COST_N; e++)
        assert_true(c.uncertainty_cycles[e] == -1);
    sim_calib_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_costs),
        cmocka_unit_test(test_fit_names_collinear_events),
        cmocka_unit_test(test_fit_noise_and_no_rows),
        cmocka_unit_test(test_bootstrap_uncertainty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
