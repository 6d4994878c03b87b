/* test_jobs.c: app/jobs.h, points run in child processes.
 *
 * The work is a pure function of the point's index (i * i + 7, with a
 * marker byte), so the expected results are known without running it:
 * every point's result must land at its own index whatever the number of
 * children, a failing point must be the one reported ("point I: " and its
 * reason), and a child that dies must be reported with its signal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/jobs.h"

struct result {
    uint64_t value;
    char tag[40];
};

/* Which point fails (by returning -1 or by dying), or -1 for none. */
struct work {
    long fail_at, die_at;
};

static int work_fn(void *aux, size_t i, void *out, char *err, size_t errlen)
{
    const struct work *w = aux;
    struct result *r = out;
    if ((long)i == w->fail_at) {
        snprintf(err, errlen, "bad value %zu", i);
        return -1;
    }
    if ((long)i == w->die_at)
        raise(SIGKILL);
    r->value = (uint64_t)i * i + 7;
    snprintf(r->tag, sizeof r->tag, "point-%zu", i);
    return 0;
}

static void check_in_order(unsigned n_jobs)
{
    struct work w = {-1, -1};
    struct result res[23];
    memset(res, 0, sizeof res);
    size_t failed = 99;
    char err[256] = "";
    assert_int_equal(jobs_run(23, n_jobs, work_fn, &w, res, sizeof res[0], &failed, err,
                              sizeof err), 0);
    for (size_t i = 0; i < 23; i++) {
        char tag[40];
        snprintf(tag, sizeof tag, "point-%zu", i);
        assert_int_equal(res[i].value, i * i + 7);
        assert_string_equal(res[i].tag, tag);
    }
}

static void test_serial(void **state)
{
    (void)state;
    check_in_order(1);
}

static void test_parallel(void **state)
{
    (void)state;
    check_in_order(2);
    check_in_order(5);
    check_in_order(64); /* more children allowed than points */
}

static void test_failure_named(void **state)
{
    (void)state;
    for (unsigned jobs = 1; jobs <= 4; jobs += 3) {
        struct work w = {11, -1};
        struct result res[20];
        memset(res, 0, sizeof res);
        size_t failed = 0;
        char err[256] = "";
        assert_int_equal(jobs_run(20, jobs, work_fn, &w, res, sizeof res[0], &failed, err,
                                  sizeof err), -1);
        assert_int_equal(failed, 11);
        assert_string_equal(err, "point 11: bad value 11");
        /* the points before it are complete */
        assert_int_equal(res[10].value, 107);
    }
}

static void test_child_death_named(void **state)
{
    (void)state;
    struct work w = {-1, 3};
    struct result res[8];
    memset(res, 0, sizeof res);
    size_t failed = 0;
    char err[256] = "";
    assert_int_equal(jobs_run(8, 2, work_fn, &w, res, sizeof res[0], &failed, err, sizeof err),
                     -1);
    assert_int_equal(failed, 3);
    char want[64];
    snprintf(want, sizeof want, "point 3: its process died of signal %d", SIGKILL);
    assert_string_equal(err, want);
}

static void test_parse(void **state)
{
    (void)state;
    unsigned n = 0;
    assert_int_equal(jobs_parse("4", &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(jobs_parse("1024", &n), 0);
    assert_int_equal(jobs_parse("0", &n), -1);
    assert_int_equal(jobs_parse("1025", &n), -1);
    assert_int_equal(jobs_parse("-1", &n), -1);
    assert_int_equal(jobs_parse("2x", &n), -1);
    assert_int_equal(jobs_parse("", &n), -1);
    assert_true(jobs_default() >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_failure_named),
        cmocka_unit_test(test_child_death_named),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
