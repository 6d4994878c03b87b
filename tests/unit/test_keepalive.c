/* test_keepalive.c: PMD keep-alive (app/keepalive.c).
 *
 * The state machine is driven with a fake clock: times are plain ns values
 * handed to ka_check() at the monitor's cadence (KA_CHECKS_PER_INTERVAL
 * checks per interval), and the assertions are the contract of
 * keepalive.h: ALIVE while the last beat is at most one interval old,
 * STALLED once it is older than an interval plus one check period (so
 * within two intervals), ALIVE again at the next beat, IDLE never checked.
 * The monitor thread then runs on the real clock over real threads with a
 * short interval; that part asserts states reached, never how long it took. */
#define _GNU_SOURCE /* gettid */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keepalive.h"

#define MS 1000000ull

static struct ka *make(unsigned n, uint32_t interval_ms)
{
    struct ka *ka = NULL;
    char err[128] = "";
    if (ka_create(n, interval_ms, &ka, err, sizeof err))
        fail_msg("ka_create: %s", err);
    return ka;
}

static struct ka_status status_of(struct ka *ka, unsigned pmd)
{
    struct ka_status st[KA_MAX_PMDS];
    ka_get_status(ka, st, ka_n_pmds(ka));
    return st[pmd];
}

static void test_names_and_limits(void **state)
{
    (void)state;
    assert_string_equal(ka_state_name(KA_ALIVE), "ALIVE");
    assert_string_equal(ka_state_name(KA_STALLED), "STALLED");
    assert_string_equal(ka_state_name(KA_IDLE), "IDLE");

    struct ka *ka = NULL;
    char err[128];
    assert_int_equal(ka_create(0, 1000, &ka, err, sizeof err), -1);
    assert_string_equal(err, "keep-alive: 0 PMDs (1..32)");
    assert_int_equal(ka_create(KA_MAX_PMDS + 1, 1000, &ka, err, sizeof err), -1);
    assert_int_equal(ka_create(2, 0, &ka, err, sizeof err), -1);
    assert_string_equal(err, "keep-alive interval 0 ms (1..3600000)");
    assert_null(ka);

    ka = make(KA_MAX_PMDS, KA_INTERVAL_DEFAULT_MS);
    assert_int_equal(ka_interval_ms(ka), 1000);
    ka_set_interval(ka, 0);
    assert_int_equal(ka_interval_ms(ka), KA_INTERVAL_MIN_MS);
    ka_set_interval(ka, UINT32_MAX);
    assert_int_equal(ka_interval_ms(ka), KA_INTERVAL_MAX_MS);
    assert_null(ka_heartbeat(ka, KA_MAX_PMDS));
    ka_destroy(ka);
    ka_destroy(NULL);
}

/* Every PMD's slot starts a cache line of its own. */
static void test_slots_own_lines(void **state)
{
    (void)state;
    struct ka *ka = make(8, 1000);
    assert_int_equal(sizeof(struct ka_heartbeat), FS_CACHE_LINE);
    for (unsigned i = 0; i < 8; i++) {
        uintptr_t a = (uintptr_t)ka_heartbeat(ka, i);
        assert_int_equal(a % FS_CACHE_LINE, 0);
        if (i)
            assert_true(a - (uintptr_t)ka_heartbeat(ka, i - 1) >= FS_CACHE_LINE);
    }
    ka_destroy(ka);
}

/* A scripted run: PMD 0 beats at every step, PMD 1 stops at 400 ms and
 * resumes at 800 ms, PMD 2 has no rx queue and never beats. */
static void test_stall_and_resume(void **state)
{
    (void)state;
    const uint64_t interval = 100 * MS, period = interval / KA_CHECKS_PER_INTERVAL;
    struct ka *ka = make(3, 100);
    ka_set_idle(ka, 2, true);
    uint64_t iter[2] = {0, 0};
    uint64_t stalled_at = 0, realive_at = 0;
    for (uint64_t t = 0; t <= 1200 * MS; t += period) {
        ka_heartbeat_beat(ka_heartbeat(ka, 0), ++iter[0]);
        if (t <= 400 * MS || t >= 800 * MS)
            ka_heartbeat_beat(ka_heartbeat(ka, 1), ++iter[1]);
        ka_check(ka, t);
        struct ka_status s0 = status_of(ka, 0), s1 = status_of(ka, 1), s2 = status_of(ka, 2);
        assert_int_equal(s0.state, KA_ALIVE);
        assert_int_equal(s0.beat, iter[0]);
        assert_int_equal(s2.state, KA_IDLE);
        assert_int_equal(s2.stalls, 0);
        if (s1.state == KA_STALLED && !stalled_at)
            stalled_at = t;
        if (stalled_at && !realive_at && s1.state == KA_ALIVE)
            realive_at = t;
        /* Its last beat at 400 ms: ALIVE up to 500 ms, silent as long. */
        if (t > 400 * MS && t <= 500 * MS) {
            assert_int_equal(s1.state, KA_ALIVE);
            assert_int_equal(s1.silent_ns, t - 400 * MS);
        }
    }
    /* STALLED at the first check past one interval of silence: 525 ms,
     * 1.25 intervals after the last beat (within two). */
    assert_int_equal(stalled_at, 525 * MS);
    assert_true(stalled_at - 400 * MS <= 2 * interval);
    /* ALIVE again at the check that sees the first new beat. */
    assert_int_equal(realive_at, 800 * MS);
    struct ka_status s1 = status_of(ka, 1);
    assert_int_equal(s1.state, KA_ALIVE);
    assert_int_equal(s1.stalls, 1);
    assert_int_equal(s1.beat, iter[1]);
    assert_int_equal(status_of(ka, 0).stalls, 0);
    ka_destroy(ka);
}

/* The silence of an idle PMD that sleeps S between polls (the poll itself
 * taking 1 ms) and beats once per poll, judged at the monitor's cadence
 * (each check a period after the previous one ended: 0.1 ms of its own
 * later): how many stalls it is charged with over 40 intervals, at 17
 * phases of its beats against the checks. */
static uint64_t idle_pmd_stalls(uint64_t interval, uint64_t sleep)
{
    const uint64_t period = interval / KA_CHECKS_PER_INTERVAL, poll = 1 * MS;
    const uint64_t check_cost = MS / 10;
    uint64_t stalls = 0;
    for (uint64_t phase = 0; phase < 17; phase++) {
        struct ka *ka = make(1, (uint32_t)(interval / MS));
        uint64_t iter = 0, next_beat = phase * period / 17, next_check = 0;
        for (uint64_t t = 0; t <= 40 * interval; t += MS / 10) {
            if (t >= next_beat) {
                ka_heartbeat_beat(ka_heartbeat(ka, 0), ++iter);
                next_beat = t + sleep + poll;
            }
            if (t >= next_check) {
                ka_check(ka, t);
                next_check = t + check_cost + period;
            }
        }
        stalls += status_of(ka, 0).stalls;
        ka_destroy(ka);
    }
    return stalls;
}

/* The bound control_ka_interval_check() rests on: a PMD that sleeps up to
 * half an interval when idle is never taken for stalled; one that sleeps a
 * whole interval (an idle sleep of 1 s under the default 1000 ms) is. */
static void test_idle_sleep_bound(void **state)
{
    (void)state;
    const uint64_t interval = 100 * MS;
    assert_int_equal(idle_pmd_stalls(interval, 0), 0);
    assert_int_equal(idle_pmd_stalls(interval, interval / 4), 0);
    assert_int_equal(idle_pmd_stalls(interval, interval / 2), 0);
    assert_true(idle_pmd_stalls(interval, interval) > 0);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random beat patterns, gaps from none to three intervals, checks at the
 * monitor's cadence: at every check, a PMD whose last beat is at most an
 * interval old is ALIVE, and one whose last beat is more than an interval
 * plus a period old is STALLED; each silence longer than that counts one
 * stall. */
static void test_random_patterns(void **state)
{
    (void)state;
    const char *quick = getenv("FS_TEST_QUICK");
    int runs = quick && *quick == '1' ? 10 : 100;
    uint64_t seed = 0x2545f4914f6cdd1dull;
    for (int r = 0; r < runs; r++) {
        uint32_t interval_ms = 10 + (uint32_t)(rng_next(&seed) % 200);
        uint64_t interval = interval_ms * MS, period = interval / KA_CHECKS_PER_INTERVAL;
        struct ka *ka = make(1, interval_ms);
        struct ka_heartbeat *hb = ka_heartbeat(ka, 0);
        uint64_t iter = 0, last_beat = 0, next_beat = 0, long_silences = 0;
        bool in_long = false;
        for (uint64_t t = 0; t < 200 * interval; t += period) {
            /* Beats fall anywhere between checks. */
            while (next_beat <= t) {
                ka_heartbeat_beat(hb, ++iter);
                last_beat = next_beat;
                in_long = false;
                uint64_t gap = rng_next(&seed) % 4 == 0
                                   ? rng_next(&seed) % (3 * interval)
                                   : rng_next(&seed) % (interval / 2 + 1);
                next_beat += gap ? gap : 1;
            }
            ka_check(ka, t);
            struct ka_status s = status_of(ka, 0);
            if (t - last_beat <= interval)
                assert_int_equal(s.state, KA_ALIVE);
            if (t - last_beat > interval + period) {
                assert_int_equal(s.state, KA_STALLED);
                if (!in_long)
                    long_silences++;
                in_long = true;
            }
            /* Never more stalls than silences longer than an interval. */
            assert_true(s.stalls >= long_silences);
        }
        ka_destroy(ka);
    }
}

/* A PMD that has not beaten since monitoring began counts from the first
 * check; one that leaves IDLE counts from the check after. */
static void test_never_beaten_and_idle_toggle(void **state)
{
    (void)state;
    struct ka *ka = make(2, 100);
    ka_set_idle(ka, 1, true);
    ka_check(ka, 1000 * MS);
    assert_int_equal(status_of(ka, 0).state, KA_ALIVE);
    ka_check(ka, 1100 * MS);
    assert_int_equal(status_of(ka, 0).state, KA_ALIVE);
    ka_check(ka, 1101 * MS);
    assert_int_equal(status_of(ka, 0).state, KA_STALLED);
    assert_int_equal(status_of(ka, 1).state, KA_IDLE);

    /* PMD 1 gets rx queues at 2000 ms: ALIVE, and STALLED only after an
     * interval of silence from the next check. */
    ka_set_idle(ka, 1, false);
    assert_int_equal(status_of(ka, 1).state, KA_ALIVE);
    ka_check(ka, 2000 * MS);
    ka_check(ka, 2100 * MS);
    assert_int_equal(status_of(ka, 1).state, KA_ALIVE);
    ka_check(ka, 2125 * MS);
    assert_int_equal(status_of(ka, 1).state, KA_STALLED);
    /* Back to IDLE: not failed any more. */
    ka_set_idle(ka, 1, true);
    ka_check(ka, 5000 * MS);
    struct ka_status s = status_of(ka, 1);
    assert_int_equal(s.state, KA_IDLE);
    assert_int_equal(s.stalls, 1);
    ka_destroy(ka);
}

static void test_json(void **state)
{
    (void)state;
    struct ka *ka = make(3, 100);
    ka_set_idle(ka, 2, true);
    ka_heartbeat_attach(ka_heartbeat(ka, 0));
    ka_heartbeat_beat(ka_heartbeat(ka, 0), 7);
    ka_heartbeat_beat(ka_heartbeat(ka, 1), 3);
    ka_check(ka, 0);
    ka_heartbeat_beat(ka_heartbeat(ka, 0), 9);
    ka_check(ka, 150 * MS);
    struct ka_status st[3];
    ka_get_status(ka, st, 3);
    json_t *got = ka_status_json(st, 3, ka_interval_ms(ka));
    assert_non_null(got);
    char want[512];
    snprintf(want, sizeof want,
             "{\"keepalive\": {\"interval_ms\": 100, \"pmds\": ["
             "{\"pmd\": 0, \"tid\": %d, \"state\": \"ALIVE\", \"heartbeat\": 9,"
             " \"silent_ms\": 0, \"stalls\": 0},"
             "{\"pmd\": 1, \"tid\": null, \"state\": \"STALLED\", \"heartbeat\": 3,"
             " \"silent_ms\": 150, \"stalls\": 1},"
             "{\"pmd\": 2, \"tid\": null, \"state\": \"IDLE\", \"heartbeat\": 0,"
             " \"silent_ms\": 0, \"stalls\": 0}]}}",
             (int)gettid());
    json_error_t jerr;
    json_t *exp = json_loads(want, 0, &jerr);
    assert_non_null(exp);
    if (!json_equal(got, exp)) {
        char *s = json_dumps(got, 0);
        fail_msg("got %s", s);
    }
    json_decref(exp);
    json_decref(got);
    ka_destroy(ka);
}

/* ---- the monitor thread on the real clock ------------------------------------------- */

struct pmd_sim {
    struct ka_heartbeat *hb;
    atomic_bool stop;
    atomic_bool hold; /* true: keep looping without beating */
    atomic_int tid;
    pthread_t thread;
};

static void *pmd_sim_main(void *arg)
{
    struct pmd_sim *p = arg;
    ka_heartbeat_attach(p->hb);
    atomic_store(&p->tid, (int)gettid());
    uint64_t iter = 0;
    while (!atomic_load(&p->stop)) {
        iter++;
        if (!atomic_load(&p->hold))
            ka_heartbeat_beat(p->hb, iter);
        struct timespec ts = {0, 200000}; /* a poll iteration, kind to a shared machine */
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Waits (bounded) until PMD 'pmd' is in state 'want'. */
static struct ka_status wait_state(struct ka *ka, unsigned pmd, enum ka_state want)
{
    struct ka_status s = status_of(ka, pmd);
    for (int i = 0; i < 6000 && s.state != want; i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        s = status_of(ka, pmd);
    }
    if (s.state != want)
        fail_msg("pmd %u is %s, not %s", pmd, ka_state_name(s.state), ka_state_name(want));
    return s;
}

static void test_monitor_thread(void **state)
{
    (void)state;
    struct ka *ka = make(3, 20);
    ka_set_idle(ka, 2, true);
    struct pmd_sim p[2];
    for (int i = 0; i < 2; i++) {
        p[i].hb = ka_heartbeat(ka, (unsigned)i);
        atomic_init(&p[i].stop, false);
        atomic_init(&p[i].hold, false);
        atomic_init(&p[i].tid, 0);
    }
    char err[128];
    assert_int_equal(ka_start(ka, err, sizeof err), 0);
    assert_int_equal(ka_start(ka, err, sizeof err), 0); /* already running */
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&p[i].thread, NULL, pmd_sim_main, &p[i]), 0);

    /* PMD 1 beats, then is held: STALLED; released: ALIVE again. */
    struct ka_status s = status_of(ka, 1);
    for (int i = 0; i < 6000 && s.beat == 0; i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        s = status_of(ka, 1);
    }
    assert_true(s.beat > 0);
    atomic_store(&p[1].hold, true);
    s = wait_state(ka, 1, KA_STALLED);
    assert_true(s.stalls >= 1);
    assert_int_equal(status_of(ka, 2).state, KA_IDLE);
    atomic_store(&p[1].hold, false);
    s = wait_state(ka, 1, KA_ALIVE);
    assert_true(s.stalls >= 1);
    assert_int_equal(s.tid, atomic_load(&p[1].tid));

    s = wait_state(ka, 0, KA_ALIVE);
    assert_int_equal(s.tid, atomic_load(&p[0].tid));
    assert_true(s.beat > 0);
    s = status_of(ka, 2);
    assert_int_equal(s.state, KA_IDLE);
    assert_int_equal(s.stalls, 0);

    for (int i = 0; i < 2; i++) {
        atomic_store(&p[i].stop, true);
        pthread_join(p[i].thread, NULL);
    }
    ka_stop(ka);
    ka_stop(ka);
    /* The states stay readable after the monitor stopped. */
    assert_int_equal(status_of(ka, 2).state, KA_IDLE);
    /* Started again, a PMD that no longer beats is found STALLED. */
    assert_int_equal(ka_start(ka, err, sizeof err), 0);
    wait_state(ka, 0, KA_STALLED);
    ka_destroy(ka); /* stops the monitor */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_limits),
        cmocka_unit_test(test_slots_own_lines),
        cmocka_unit_test(test_stall_and_resume),
        cmocka_unit_test(test_idle_sleep_bound),
        cmocka_unit_test(test_random_patterns),
        cmocka_unit_test(test_never_beaten_and_idle_toggle),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_monitor_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
