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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_costs),
        cmocka_unit_test(test_fit_names_collinear_events),
        cmocka_unit_test(test_fit_noise_and_no_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
