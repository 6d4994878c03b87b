/* keepalive.c: PMD heartbeats and their monitor. */
#define _GNU_SOURCE /* gettid */
#include "keepalive.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"
#include "ctl-thread.h"
#include "util.h"

/* The monitor's view of one PMD (under ka->mu). */
struct ka_pmd {
    bool idle;
    bool counting;   /* has a baseline: the first check after start or IDLE */
    enum ka_state state;
    uint64_t last_beat;
    uint64_t changed_ns; /* when the check that saw last_beat first ran */
    uint64_t silent_ns;
    uint64_t stalls;
};

struct ka {
    unsigned n;
    struct ka_heartbeat *hb; /* [n], one cache line each */
    pthread_mutex_t mu;      /* guards everything below */
    pthread_cond_t wake;     /* on CLOCK_MONOTONIC: stop the monitor */
    uint32_t interval_ms;
    struct ka_pmd pmds[KA_MAX_PMDS];
    pthread_t thread;
    bool running, stopping;
};

const char *ka_state_name(enum ka_state s)
{
    switch (s) {
    case KA_ALIVE:
        return "ALIVE";
    case KA_STALLED:
        return "STALLED";
    case KA_IDLE:
        return "IDLE";
    }
    return "?";
}

void ka_heartbeat_attach(struct ka_heartbeat *hb)
{
    atomic_store_explicit(&hb->tid, (int)gettid(), memory_order_relaxed);
}

static uint32_t ka_clamp_interval(uint32_t ms)
{
    return ms < KA_INTERVAL_MIN_MS   ? KA_INTERVAL_MIN_MS
           : ms > KA_INTERVAL_MAX_MS ? KA_INTERVAL_MAX_MS
                                     : ms;
}

int ka_create(unsigned n_pmds, uint32_t interval_ms, struct ka **out, char *err,
              size_t errlen)
{
    *out = NULL;
    if (n_pmds < 1 || n_pmds > KA_MAX_PMDS) {
        fs_errf(err, errlen, "keep-alive: %u PMDs (1..%d)", n_pmds, KA_MAX_PMDS);
        return -1;
    }
    if (interval_ms < KA_INTERVAL_MIN_MS || interval_ms > KA_INTERVAL_MAX_MS) {
        fs_errf(err, errlen, "keep-alive interval %u ms (%d..%d)", (unsigned)interval_ms,
                KA_INTERVAL_MIN_MS, KA_INTERVAL_MAX_MS);
        return -1;
    }
    struct ka *ka = calloc(1, sizeof *ka);
    struct ka_heartbeat *hb = fs_aligned_alloc(n_pmds * sizeof *hb);
    pthread_condattr_t ca;
    bool ca_ok = ka && hb && !pthread_condattr_init(&ca);
    bool cond_ok = ca_ok && !pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) &&
                   !pthread_cond_init(&ka->wake, &ca);
    if (ca_ok)
        pthread_condattr_destroy(&ca);
    if (!cond_ok || pthread_mutex_init(&ka->mu, NULL)) {
        if (cond_ok)
            pthread_cond_destroy(&ka->wake);
        fs_aligned_free(hb);
        free(ka);
        fs_errf(err, errlen, "keep-alive: out of memory");
        return -1;
    }
    for (unsigned i = 0; i < n_pmds; i++) {
        atomic_init(&hb[i].beat, 0);
        atomic_init(&hb[i].tid, 0);
    }
    ka->n = n_pmds;
    ka->hb = hb;
    ka->interval_ms = interval_ms;
    *out = ka;
    return 0;
}

void ka_destroy(struct ka *ka)
{
    if (!ka)
        return;
    ka_stop(ka);
    pthread_cond_destroy(&ka->wake);
    pthread_mutex_destroy(&ka->mu);
    fs_aligned_free(ka->hb);
    free(ka);
}

struct ka_heartbeat *ka_heartbeat(struct ka *ka, unsigned pmd)
{
    return pmd < ka->n ? &ka->hb[pmd] : NULL;
}

unsigned ka_n_pmds(const struct ka *ka)
{
    return ka->n;
}

void ka_set_idle(struct ka *ka, unsigned pmd, bool idle)
{
    if (pmd >= ka->n)
        return;
    pthread_mutex_lock(&ka->mu);
    struct ka_pmd *p = &ka->pmds[pmd];
    if (p->idle != idle) {
        p->idle = idle;
        p->counting = false;
        p->state = idle ? KA_IDLE : KA_ALIVE;
        p->silent_ns = 0;
    }
    pthread_mutex_unlock(&ka->mu);
}

void ka_set_interval(struct ka *ka, uint32_t interval_ms)
{
    pthread_mutex_lock(&ka->mu);
    ka->interval_ms = ka_clamp_interval(interval_ms);
    pthread_cond_signal(&ka->wake); /* the monitor recomputes its period */
    pthread_mutex_unlock(&ka->mu);
}

uint32_t ka_interval_ms(struct ka *ka)
{
    pthread_mutex_lock(&ka->mu);
    uint32_t ms = ka->interval_ms;
    pthread_mutex_unlock(&ka->mu);
    return ms;
}

static void ka_check_locked(struct ka *ka, uint64_t now)
{
    uint64_t interval_ns = ka->interval_ms * 1000000ull;
    for (unsigned i = 0; i < ka->n; i++) {
        struct ka_pmd *p = &ka->pmds[i];
        if (p->idle) {
            p->state = KA_IDLE;
            continue;
        }
        uint64_t beat = atomic_load_explicit(&ka->hb[i].beat, memory_order_relaxed);
        if (!p->counting || beat != p->last_beat) {
            p->counting = true;
            p->last_beat = beat;
            p->changed_ns = now;
            p->state = KA_ALIVE;
        } else if (now - p->changed_ns > interval_ns && p->state != KA_STALLED) {
            p->state = KA_STALLED;
            p->stalls++;
        }
        p->silent_ns = now - p->changed_ns;
    }
}

void ka_check(struct ka *ka, uint64_t now_ns)
{
    pthread_mutex_lock(&ka->mu);
    ka_check_locked(ka, now_ns);
    pthread_mutex_unlock(&ka->mu);
}

void ka_get_status(struct ka *ka, struct ka_status *st, unsigned n)
{
    pthread_mutex_lock(&ka->mu);
    for (unsigned i = 0; i < n && i < ka->n; i++) {
        const struct ka_pmd *p = &ka->pmds[i];
        st[i] = (struct ka_status){
            .pmd = i,
            .tid = atomic_load_explicit(&ka->hb[i].tid, memory_order_relaxed),
            .state = p->idle ? KA_IDLE : p->state,
            .beat = p->last_beat,
            .silent_ns = p->silent_ns,
            .stalls = p->stalls,
        };
    }
    pthread_mutex_unlock(&ka->mu);
}

json_t *ka_status_json(const struct ka_status *st, unsigned n, uint32_t interval_ms)
{
    json_t *pmds = json_array();
    for (unsigned i = 0; pmds && i < n; i++) {
        json_t *e = json_pack("{s:I, s:o, s:s, s:I, s:I, s:I}", "pmd", (json_int_t)st[i].pmd,
                              "tid", st[i].tid ? json_integer(st[i].tid) : json_null(),
                              "state", ka_state_name(st[i].state), "heartbeat",
                              (json_int_t)st[i].beat, "silent_ms",
                              (json_int_t)(st[i].silent_ns / 1000000), "stalls",
                              (json_int_t)st[i].stalls);
        if (json_array_append_new(pmds, e)) {
            json_decref(pmds);
            return NULL;
        }
    }
    return pmds ? json_pack("{s:{s:I, s:o}}", "keepalive", "interval_ms",
                            (json_int_t)interval_ms, "pmds", pmds)
                : NULL;
}

/* ---- the monitor thread -------------------------------------------------- */

static void *ka_main(void *arg)
{
    struct ka *ka = arg;
    pthread_mutex_lock(&ka->mu);
    while (!ka->stopping) {
        uint64_t now = fs_mono_ns();
        ka_check_locked(ka, now);
        uint64_t period = ka->interval_ms * 1000000ull / KA_CHECKS_PER_INTERVAL;
        uint64_t next = now + (period ? period : 1);
        struct timespec ts = {.tv_sec = (time_t)(next / FS_NSEC_PER_SEC),
                              .tv_nsec = (long)(next % FS_NSEC_PER_SEC)};
        /* Until the next check is due; a stop or an interval change wakes
         * the monitor early (the latter then checks once more, harmless). */
        pthread_cond_timedwait(&ka->wake, &ka->mu, &ts);
    }
    pthread_mutex_unlock(&ka->mu);
    return NULL;
}

int ka_start(struct ka *ka, char *err, size_t errlen)
{
    if (ka->running)
        return 0;
    /* A PMD's silence counts from the monitor's first check: beats missed
     * while it was stopped (keep-alive off) are no stall. */
    pthread_mutex_lock(&ka->mu);
    for (unsigned i = 0; i < ka->n; i++) {
        ka->pmds[i].counting = false;
        if (!ka->pmds[i].idle)
            ka->pmds[i].state = KA_ALIVE;
    }
    pthread_mutex_unlock(&ka->mu);
    ka->stopping = false;
    if (ctl_thread_start(&ka->thread, ka_main, ka, "fs-keepalive", err, errlen))
        return -1;
    ka->running = true;
    return 0;
}

void ka_stop(struct ka *ka)
{
    if (!ka->running)
        return;
    pthread_mutex_lock(&ka->mu);
    ka->stopping = true;
    pthread_cond_signal(&ka->wake);
    pthread_mutex_unlock(&ka->mu);
    pthread_join(ka->thread, NULL);
    ka->running = false;
}
