/* test_dp_knobs.c: the DP_KNOBS() table behind the config loader, `ctl
 * set` and `flowswitch knobs`: defaults (OVS's where the knob is OVS's),
 * ranges enforced at both ends, words, live-or-restart, and the text form
 * read back as written. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "dp.h"

/* The defaults as docs/usage.md states them; the EMC's and SMC's sizes and
 * the EMC insertion probability are OVS's (dpif-netdev's EM_FLOW_HASH_ENTRIES,
 * SMC_ENTRY_PER_BUCKET x SMC_BUCKET_CNT, DEFAULT_EM_FLOW_INSERT_INV_PROB). */
static const struct {
    const char *name, *value;
} documented[] = {
    {"tx-flush-interval", "0"},  {"tx-retries", "8"},         {"bad-csum", "drop"},
    {"emc-entries", "8192"},     {"emc-ways", "2"},           {"emc-insert-inv-prob", "100"},
    {"emc-max-key-len", "136"},  {"smc", "on"},               {"smc-entries", "2097152"},
    {"megaflow-max", "65535"},   {"subtable-resort-interval", "1000"},
    {"megaflow-revalidate", "on"}, {"tx-batching", "on"},     {"seed", "0"},
    {"direct-subtables", "1"},
};

static void test_defaults_are_the_documented_ones(void **state)
{
    (void)state;
    struct dp_knobs k;
    dp_knobs_default(&k);
    size_t n = sizeof documented / sizeof documented[0];
    assert_int_equal(dp_knob_count(), n);
    for (size_t i = 0; i < n; i++) {
        char buf[32];
        assert_int_equal(dp_knobs_get(&k, documented[i].name, buf, sizeof buf), 0);
        assert_string_equal(buf, documented[i].value);
    }
    char err[256];
    assert_int_equal(dp_knobs_check(NULL, &k, err, sizeof err), 0);
    assert_false(k.bad_csum_forward);
    assert_true(k.smc);
    assert_int_equal(k.emc_entries, 8192);
}

static void test_ranges_enforced_at_both_ends(void **state)
{
    (void)state;
    for (size_t i = 0; i < dp_knob_count(); i++) {
        const struct dp_knob_info *ki = dp_knob_info(i);
        if (ki->kind != DP_KNOB_U32)
            continue;
        struct dp_knobs k;
        dp_knobs_default(&k);
        char v[32], back[32], err[256];
        snprintf(v, sizeof v, "%u", (unsigned)ki->max);
        assert_int_equal(dp_knobs_set(&k, ki->name, v, err, sizeof err), 0);
        assert_int_equal(dp_knobs_get(&k, ki->name, back, sizeof back), 0);
        assert_string_equal(back, v);
        snprintf(v, sizeof v, "%u", (unsigned)ki->min);
        assert_int_equal(dp_knobs_set(&k, ki->name, v, err, sizeof err), 0);
        dp_knobs_get(&k, ki->name, back, sizeof back);
        assert_string_equal(back, v);
        if (ki->max < UINT32_MAX) {
            snprintf(v, sizeof v, "%lu", (unsigned long)ki->max + 1);
            err[0] = '\0';
            assert_int_equal(dp_knobs_set(&k, ki->name, v, err, sizeof err), -1);
            assert_non_null(strstr(err, ki->name));
            dp_knobs_get(&k, ki->name, back, sizeof back);
            snprintf(v, sizeof v, "%u", (unsigned)ki->min);
            assert_string_equal(back, v); /* a refused value changes nothing */
        }
        if (ki->min > 0) {
            snprintf(v, sizeof v, "%u", (unsigned)ki->min - 1);
            assert_int_equal(dp_knobs_set(&k, ki->name, v, err, sizeof err), -1);
        }
        assert_int_equal(dp_knobs_set(&k, ki->name, "-1", err, sizeof err), -1);
        assert_int_equal(dp_knobs_set(&k, ki->name, "12abc", err, sizeof err), -1);
    }
}

static void test_words(void **state)
{
    (void)state;
    struct dp_knobs k;
    dp_knobs_default(&k);
    char err[256], buf[32];
    assert_int_equal(dp_knobs_set(&k, "bad-csum", "forward", err, sizeof err), 0);
    assert_true(k.bad_csum_forward);
    assert_int_equal(dp_knobs_set(&k, "smc", "off", err, sizeof err), 0);
    assert_false(k.smc);
    dp_knobs_get(&k, "smc", buf, sizeof buf);
    assert_string_equal(buf, "off");
    assert_int_equal(dp_knobs_set(&k, "tx-batching", "off", err, sizeof err), 0);
    assert_false(k.tx_batching);
    assert_int_equal(dp_knobs_set(&k, "smc", "maybe", err, sizeof err), -1);
    assert_non_null(strstr(err, "expected on or off"));
    assert_false(k.smc);
    assert_int_equal(dp_knobs_set(&k, "no-such-knob", "1", err, sizeof err), 1);
}

static void test_live_knobs_and_names(void **state)
{
    (void)state;
    /* What the PMDs re-read at every poll; the rest size or seed the
     * caches when they are created. */
    const char *live[] = {"tx-flush-interval", "tx-retries", "bad-csum",
                          "emc-insert-inv-prob", "smc"};
    size_t n_live = 0;
    char names[1024];
    dp_knobs_names(names, sizeof names);
    for (size_t i = 0; i < dp_knob_count(); i++) {
        const struct dp_knob_info *ki = dp_knob_info(i);
        bool expect = false;
        for (size_t j = 0; j < sizeof live / sizeof live[0]; j++)
            expect |= !strcmp(live[j], ki->name);
        assert_int_equal(dp_knob_is_live(ki->name), expect);
        n_live += expect;
        assert_non_null(strstr(names, ki->name));
        assert_non_null(ki->doc);
        assert_true(strlen(ki->doc) > 10);
    }
    assert_int_equal(n_live, sizeof live / sizeof live[0]);
    assert_false(dp_knob_is_live("no-such-knob"));
    assert_null(dp_knob_info(dp_knob_count()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_documented_ones),
        cmocka_unit_test(test_ranges_enforced_at_both_ends),
        cmocka_unit_test(test_words),
        cmocka_unit_test(test_live_knobs_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
