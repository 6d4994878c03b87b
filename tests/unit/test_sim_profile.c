/* test_sim_profile.c: sim/profile.h: the shipped default profile, the
 * event table, the cost arithmetic, and every way a profile file is
 * refused (each message names the file and what is wrong). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/profile.h"

/* A profile document with every default cost, where 'edit' may replace
 * the text of one event's value ("emc_hit": EDIT) or append raw text. */
static void profile_text(char *buf, size_t size, const char *event, const char *value,
                         const char *top_extra, bool drop_event)
{
    struct sim_profile d;
    sim_profile_default(&d);
    size_t n = (size_t)snprintf(buf, size, "{\n  \"cpu\": \"test cpu\",\n  \"ghz\": 2.5,%s\n"
                                           "  \"costs_ns\": {\n",
                                top_extra ? top_extra : "");
    bool first = true;
    for (int i = 0; i < SIM_COST_N; i++) {
        const char *name = sim_cost_name((enum sim_cost)i);
        bool this = event && strcmp(event, name) == 0;
        if (this && drop_event)
            continue;
        if (this && value)
            n += (size_t)snprintf(buf + n, size - n, "%s    \"%s\": %s", first ? "" : ",\n",
                                  name, value);
        else
            n += (size_t)snprintf(buf + n, size - n, "%s    \"%s\": %.17g", first ? "" : ",\n",
                                  name, d.cost_ns[i]);
        first = false;
    }
    if (event && !drop_event && !value) /* an extra, unknown event */
        n += (size_t)snprintf(buf + n, size - n, ",\n    \"%s\": 1", event);
    snprintf(buf + n, size - n, "\n  }\n}\n");
}

static char tmp_path[64];

static const char *write_tmp(const char *text)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/fs-profile-XXXXXX");
    int fd = mkstemp(tmp_path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return tmp_path;
}

/* Loads 'text'; expects a refusal whose message contains every one of the
 * NULL-terminated substrings, and *prof left alone. */
static void expect_refused(const char *text, ...)
{
    const char *path = write_tmp(text);
    struct sim_profile p;
    memset(&p, 0x5a, sizeof p);
    struct sim_profile before = p;
    char err[2048] = "";
    assert_int_equal(sim_profile_load(path, &p, err, sizeof err), -1);
    assert_memory_equal(&p, &before, sizeof p);
    assert_non_null(strstr(err, path));
    va_list ap;
    va_start(ap, text);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(err, s))
            fail_msg("'%s' lacks '%s'", err, s);
    }
    va_end(ap);
    unlink(path);
}

static void test_default_file_matches_builtin(void **state)
{
    (void)state;
    struct sim_profile d, f;
    sim_profile_default(&d);
    char err[512];
    if (sim_profile_load("sim/profiles/default.json", &f, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_string_equal(f.cpu, d.cpu);
    assert_true(f.ghz == d.ghz);
    for (int i = 0; i < SIM_COST_N; i++) {
        if (f.cost_ns[i] != d.cost_ns[i])
            fail_msg("%s: file %g, built-in %g", sim_cost_name((enum sim_cost)i), f.cost_ns[i],
                     d.cost_ns[i]);
        assert_true(d.cost_ns[i] >= 0);
    }
}

static void test_event_table(void **state)
{
    (void)state;
    /* The events the cost model needs, by their report names. */
    static const char *const want[] = {
        "poll_iteration", "rx_burst", "rx_packet", "parse", "parse_layout", "flow_hash",
        "emc_hit", "emc_miss", "smc_hit", "smc_miss", "megaflow_hit", "subtable_probe",
        "upcall", "megaflow_install", "action_executed", "packet_copy", "sw_csum_byte",
        "sw_csum_packet", "sw_csum_verify", "sw_csum_verify_byte", "tunnel_push", "tunnel_pop",
        "send_call", "tx_packet", "drop", "nic_rx_packet", "nic_tx_packet", "emc_insert",
        "smc_insert", "vhost_packet", "vhost_byte"};
    assert_int_equal(SIM_COST_N, sizeof want / sizeof want[0]);
    for (int i = 0; i < SIM_COST_N; i++) {
        assert_string_equal(sim_cost_name((enum sim_cost)i), want[i]);
        assert_int_equal(sim_cost_by_name(want[i]), i);
        assert_non_null(sim_cost_desc((enum sim_cost)i));
        assert_true(strlen(sim_cost_desc((enum sim_cost)i)) > 5);
    }
    assert_int_equal(sim_cost_by_name("emc"), -1);
    assert_int_equal(sim_cost_by_name(""), -1);
    assert_null(sim_cost_name(SIM_COST_N));
    assert_null(sim_cost_desc((enum sim_cost)-1));
}

static void test_apply(void **state)
{
    (void)state;
    struct sim_profile p;
    sim_profile_default(&p);
    uint64_t counts[SIM_COST_N];
    for (int i = 0; i < SIM_COST_N; i++) {
        p.cost_ns[i] = (double)(1u << i); /* each event its own bit */
        counts[i] = 0;
    }
    assert_true(sim_profile_apply(&p, counts) == 0);
    counts[SIM_COST_EMC_HIT] = 3;
    counts[SIM_COST_DROP] = 1;
    assert_true(sim_profile_apply(&p, counts) ==
                3.0 * (1u << SIM_COST_EMC_HIT) + (1u << SIM_COST_DROP));
    /* A fractional per-byte cost. */
    sim_profile_default(&p);
    memset(counts, 0, sizeof counts);
    counts[SIM_COST_CSUM_BYTE] = 1000;
    counts[SIM_COST_CSUM_PKT] = 2;
    assert_true(sim_profile_apply(&p, counts) == 1000 * 0.011 + 2 * 4.0);
}

static void test_valid_variants(void **state)
{
    (void)state;
    char text[4096];
    /* Integer costs, a zero cost, no description, another key order. */
    profile_text(text, sizeof text, "upcall", "0", NULL, false);
    const char *path = write_tmp(text);
    struct sim_profile p;
    char err[512];
    if (sim_profile_load(path, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    unlink(path);
    assert_string_equal(p.cpu, "test cpu");
    assert_true(p.ghz == 2.5);
    assert_true(p.cost_ns[SIM_COST_UPCALL] == 0);
    assert_true(p.cost_ns[SIM_COST_CSUM_BYTE] == 0.011);

    profile_text(text, sizeof text, "emc_hit", "7", "\n  \"description\": \"calibrated\",",
                 false);
    path = write_tmp(text);
    assert_int_equal(sim_profile_load(path, &p, err, sizeof err), 0);
    unlink(path);
    assert_true(p.cost_ns[SIM_COST_EMC_HIT] == 7);

    /* How it was calibrated: any object, kept out of the costs. */
    profile_text(text, sizeof text, NULL, NULL,
                 "\n  \"calibration\": {\"workloads\": [{\"drop\": -1}], \"r2\": 0.9},",
                 false);
    path = write_tmp(text);
    if (sim_profile_load(path, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    unlink(path);
    assert_true(p.cost_ns[SIM_COST_DROP] == 5.0);

    /* A long CPU name is truncated, not refused. */
    char longcpu[501];
    memset(longcpu, 'x', 500);
    longcpu[500] = 0;
    profile_text(text, sizeof text, NULL, NULL, NULL, false);
    char *cpu = strstr(text, "test cpu");
    assert_non_null(cpu);
    char longtext[5000];
    snprintf(longtext, sizeof longtext, "%.*s%s%s", (int)(cpu - text), text, longcpu,
             cpu + strlen("test cpu"));
    path = write_tmp(longtext);
    assert_int_equal(sim_profile_load(path, &p, err, sizeof err), 0);
    unlink(path);
    assert_int_equal(strlen(p.cpu), SIM_PROFILE_CPU_MAX - 1);
    assert_true(p.cpu[0] == 'x');
}

/* A profile made before emc_insert, smc_insert, vhost_packet and
 * vhost_byte existed still loads: those costs are the defaults and are
 * reported as not identified; the experiments that need one refuse. */
static void test_older_profile(void **state)
{
    (void)state;
    char text[4096];
    profile_text(text, sizeof text, "vhost_byte", NULL, NULL, true);
    char *cut = strstr(text, ",\n    \"emc_insert\"");
    assert_non_null(cut);
    snprintf(cut, sizeof text - (size_t)(cut - text), "\n  }\n}\n");
    const char *path = write_tmp(text);
    struct sim_profile p, d;
    sim_profile_default(&d);
    char err[512];
    if (sim_profile_load(path, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    unlink(path);
    for (int i = 0; i < SIM_COST_N; i++) {
        assert_true(p.cost_ns[i] == d.cost_ns[i]);
        assert_int_equal(p.unidentified[i], i >= SIM_COST_EMC_INSERT);
        assert_true(p.uncertainty_ns[i] == -1);
    }
    assert_int_equal(sim_profile_require(&p, SIM_COST_UPCALL, "x", err, sizeof err), 0);
    assert_int_equal(sim_profile_require(&p, SIM_COST_VHOST_BYTE, "rx-verdicts", err,
                                         sizeof err),
                     -1);
    assert_non_null(strstr(err, "rx-verdicts needs the cost of vhost_byte"));
    assert_non_null(strstr(err, "'test cpu' does not identify"));
}

/* uncertainty_ns and not_identified are read into the profile. */
static void test_fit_members(void **state)
{
    (void)state;
    char text[4096];
    profile_text(text, sizeof text, NULL, NULL,
                 "\n  \"uncertainty_ns\": {\"emc_hit\": 0.25, \"vhost_byte\": 0.001},"
                 "\n  \"not_identified\": [\"tunnel_push\", \"nic_rx_packet\"],",
                 false);
    const char *path = write_tmp(text);
    struct sim_profile p;
    char err[512];
    if (sim_profile_load(path, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    unlink(path);
    for (int i = 0; i < SIM_COST_N; i++) {
        double want = i == SIM_COST_EMC_HIT ? 0.25 : i == SIM_COST_VHOST_BYTE ? 0.001 : -1;
        assert_true(p.uncertainty_ns[i] == want);
        assert_int_equal(p.unidentified[i], i == SIM_COST_TUNNEL_PUSH || i == SIM_COST_NIC_RX_PKT);
    }
    assert_int_equal(sim_profile_require(&p, SIM_COST_TUNNEL_PUSH, "encap", err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "encap needs the cost of tunnel_push"));
}

static void test_refused(void **state)
{
    (void)state;
    char text[4096];

    profile_text(text, sizeof text, "emc_hit", NULL, NULL, true);
    expect_refused(text, "costs_ns", "missing cost 'emc_hit'", NULL);
    profile_text(text, sizeof text, "drop", NULL, NULL, true);
    expect_refused(text, "missing cost 'drop'", NULL);

    profile_text(text, sizeof text, "smc_hit", "-3", NULL, false);
    expect_refused(text, "costs_ns.smc_hit", "negative cost -3", NULL);
    profile_text(text, sizeof text, "smc_hit", "-0.5e-3", NULL, false);
    expect_refused(text, "costs_ns.smc_hit", "negative", NULL);

    profile_text(text, sizeof text, "parse", "\"6\"", NULL, false);
    expect_refused(text, "costs_ns.parse", "must be a number", "a string", NULL);
    profile_text(text, sizeof text, "parse", "true", NULL, false);
    expect_refused(text, "costs_ns.parse", "a boolean", NULL);
    profile_text(text, sizeof text, "parse", "null", NULL, false);
    expect_refused(text, "costs_ns.parse", "null", NULL);
    profile_text(text, sizeof text, "parse", "[6]", NULL, false);
    expect_refused(text, "costs_ns.parse", "an array", NULL);

    profile_text(text, sizeof text, "emc_probe", NULL, NULL, false);
    expect_refused(text, "unknown event 'emc_probe'", "known: poll_iteration", "drop",
                   "nic_tx_packet", NULL);
    profile_text(text, sizeof text, "nic_rx_packet", NULL, NULL, true);
    expect_refused(text, "missing cost 'nic_rx_packet'", NULL);

    profile_text(text, sizeof text, NULL, NULL, "\n  \"calibration\": [1],", false);
    expect_refused(text, "calibration: must be an object, not an array", NULL);

    profile_text(text, sizeof text, NULL, NULL, "\n  \"gigahertz\": 3,", false);
    expect_refused(text, ":4: unknown key 'gigahertz'", NULL);
    /* The fit's members: known events, numbers >= 0, names. */
    profile_text(text, sizeof text, NULL, NULL, "\n  \"uncertainty_ns\": {\"emc_hitt\": 1},",
                 false);
    expect_refused(text, ":4: uncertainty_ns: unknown event 'emc_hitt'", NULL);
    profile_text(text, sizeof text, NULL, NULL, "\n  \"uncertainty_ns\": {\"drop\": -1},",
                 false);
    expect_refused(text, ":4:", "uncertainty_ns.drop: negative cost", NULL);
    profile_text(text, sizeof text, NULL, NULL, "\n  \"not_identified\": [\"tunnel\"],",
                 false);
    expect_refused(text, "not_identified: unknown event 'tunnel'", NULL);
    profile_text(text, sizeof text, NULL, NULL, "\n  \"not_identified\": \"drop\",", false);
    expect_refused(text, ":4: not_identified: must be an array", NULL);
    profile_text(text, sizeof text, NULL, NULL, "\n  \"not_identified\": [3],", false);
    expect_refused(text, "not_identified[0]: must be an event name", NULL);
    /* An event's line: poll_iteration on line 5, one event a line, parse 4th. */
    profile_text(text, sizeof text, "parse", "\"6\"", NULL, false);
    expect_refused(text, ":8: costs_ns.parse", NULL);

    /* Malformed JSON: jansson's line and column. */
    expect_refused("{\n  \"cpu\": \"x\",\n  \"ghz\": 3,,\n}\n", ":3:", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": 3, \"costs_ns\": {\"drop\": 1}", ":1:", NULL);
    expect_refused("", "", NULL);
    expect_refused("{\"cpu\": \"a\", \"cpu\": \"b\"}", ":1:", "duplicate", NULL);
    expect_refused("{\"ghz\": 3} trailing", ":1:", NULL);
    profile_text(text, sizeof text, "drop", "NaN", NULL, false);
    expect_refused(text, NULL);

    /* Wrong shapes. */
    expect_refused("[1, 2]", "a profile is a JSON object, not an array", NULL);
    expect_refused("{\"ghz\": 3, \"costs_ns\": {}}", "cpu: missing", NULL);
    expect_refused("{\"cpu\": 5, \"ghz\": 3, \"costs_ns\": {}}", "cpu: must be a string", NULL);
    expect_refused("{\"cpu\": \"x\", \"costs_ns\": {}}", "ghz: missing", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": 0, \"costs_ns\": {}}",
                   "ghz: must be a number above 0", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": -2, \"costs_ns\": {}}", "ghz:", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": \"3\", \"costs_ns\": {}}", "ghz:", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": 3}", "costs_ns: missing", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": 3, \"costs_ns\": [1]}", "costs_ns: must be an object",
                   NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": 3, \"description\": 1, \"costs_ns\": {}}",
                   "description: must be a string", NULL);
    expect_refused("{\"cpu\": \"x\", \"ghz\": 3, \"costs_ns\": {}}",
                   "missing cost 'poll_iteration'", NULL);

    /* A file that cannot be opened. */
    struct sim_profile p;
    char err[256];
    assert_int_equal(sim_profile_load("/nonexistent/p.json", &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/p.json: No such file or directory"));
    /* No error buffer: still refused, nothing written. */
    assert_int_equal(sim_profile_load("/nonexistent/p.json", &p, NULL, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_file_matches_builtin),
        cmocka_unit_test(test_event_table),
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_valid_variants),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_older_profile),
        cmocka_unit_test(test_fit_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
