/* pmd.c: PMD threads, rx/tx queue assignment, cycle accounting, stats. */
#define _GNU_SOURCE /* CPU_SET, pthread_setaffinity_np, pthread_setname_np, gettid */
#include "pmd.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "keepalive.h"
#include "netdev-provider.h"
#include "report.h"
#include "sys.h"
#include "util.h"

_Static_assert(KA_MAX_PMDS == PMD_MAX, "a keep-alive slot per PMD");

#define PMD_PUBLISH_NS (100 * 1000 * 1000ull)
/* How long a PMD waits for a control request's answer between checks, and
 * how long a stalled PMD (the test hook) sleeps between looks at its flags. */
#define PMD_REQUEST_POLL_NS (50 * 1000ull)
#define PMD_STALL_POLL_NS (1000 * 1000ull)
/* The highest CPU number pmd-cores and pmd-rxq-affinity accept. */
#define PMD_CPU_MAX 4095

/* ---- per-PMD state ------------------------------------------------------- */

/* Written by the PMD thread on every iteration: one cache line. */
struct pmd_hot {
    struct dp_pmd *dpp;
    uint64_t busy_cycles, idle_cycles;
    uint64_t busy_iterations, idle_iterations;
    uint64_t next_publish_ns;
    uint32_t idle_sleep_us;
    uint32_t index;
};

/* Set by the control thread, read by the PMD on every iteration: a line of
 * its own so that the PMD's writes never invalidate it. The PMD runs a
 * loop specialised for the flags it last read and leaves it when they
 * change: keep-alive off costs the loop nothing (not even a branch). */
#define PMD_F_STOP 1u  /* leave the thread */
#define PMD_F_KA 2u    /* beat the keep-alive heartbeat every iteration */
#define PMD_F_STALL 4u /* test hook: stop polling (pmd_runtime_test_stall) */
struct pmd_ctl {
    atomic_uint flags;
};

/* Touched at start, stop and publication only. */
struct pmd_cold {
    struct pmd_runtime *rt;
    pthread_t tid;
    bool running;
    int core;
    struct ka_heartbeat *hb; /* this PMD's keep-alive slot (NULL: none) */
    pthread_mutex_t snap_lock;
    struct pmd_stats snap;
};

struct pmd_thread {
    alignas(PMD_CACHE_LINE) struct pmd_hot hot;
    alignas(PMD_CACHE_LINE) struct pmd_ctl ctl;
    alignas(PMD_CACHE_LINE) struct pmd_cold cold;
};

_Static_assert(offsetof(struct pmd_thread, hot) == 0, "hot group first");
_Static_assert(sizeof(struct pmd_hot) <= PMD_CACHE_LINE, "hot group fits one line");
_Static_assert(offsetof(struct pmd_thread, ctl) == PMD_CACHE_LINE,
               "control flag on the second line");
_Static_assert(offsetof(struct pmd_thread, cold) % PMD_CACHE_LINE == 0,
               "cold group starts a line");
_Static_assert(sizeof(struct pmd_thread) % PMD_CACHE_LINE == 0,
               "whole lines: no neighbour shares the last one");

/* A locking proxy in front of a port whose tx queues PMDs share. txq.c only
 * calls send and link_up through it. */
struct pmd_txlock {
    struct netdev proxy;
    struct netdev *real;
    pthread_mutex_t locks[NETDEV_MAX_QUEUES];
};

static int pmd_txlock_send(struct netdev *dev, unsigned qid, struct pkt **pkts, int n,
                           uint16_t summary)
{
    struct pmd_txlock *l = dev->priv;
    pthread_mutex_lock(&l->locks[qid % NETDEV_MAX_QUEUES]);
    int r = netdev_send(l->real, qid, pkts, n, summary);
    pthread_mutex_unlock(&l->locks[qid % NETDEV_MAX_QUEUES]);
    return r;
}

static bool pmd_txlock_link_up(const struct netdev *dev)
{
    const struct pmd_txlock *l = dev->priv;
    return netdev_link_up(l->real);
}

static unsigned pmd_txlock_n_rxq(const struct netdev *dev)
{
    const struct pmd_txlock *l = dev->priv;
    return netdev_n_rxq(l->real);
}

static unsigned pmd_txlock_n_txq(const struct netdev *dev)
{
    const struct pmd_txlock *l = dev->priv;
    return netdev_n_txq(l->real);
}

static void pmd_txlock_get_caps(const struct netdev *dev, struct netdev_caps *caps)
{
    const struct pmd_txlock *l = dev->priv;
    netdev_get_caps(l->real, caps);
}

static void pmd_txlock_get_stats(const struct netdev *dev, struct netdev_stats *st)
{
    const struct pmd_txlock *l = dev->priv;
    netdev_get_stats(l->real, st);
}

static const struct netdev_class pmd_txlock_class = {
    .type = "pmd-txlock",
    .n_rxq = pmd_txlock_n_rxq,
    .n_txq = pmd_txlock_n_txq,
    .send = pmd_txlock_send,
    .tx_stamps = true, /* whatever the real device needs: stamp always */
    .get_caps = pmd_txlock_get_caps,
    .get_stats = pmd_txlock_get_stats,
    .link_up = pmd_txlock_link_up,
};

struct pmd_runtime {
    struct dp *dp;
    struct pmd_config cfg;
    unsigned n_pmds;
    struct pmd_thread *pmds[PMD_MAX];
    struct dp_pmd *dpps[PMD_MAX];
    struct pmd_txlock *txlocks[DP_MAX_PORTS];
    uint64_t start_ns, start_cycles;
    bool started, stopped;
};

void pmd_config_default(struct pmd_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_pmds = 1;
    for (unsigned i = 0; i < PMD_MAX; i++)
        c->cores[i] = -1;
}

int pmd_config_parse_cores(struct pmd_config *c, const char *s, char *err,
                           size_t errlen)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf)
        goto bad;
    unsigned n = 0;
    for (char *p = buf, *next; p; p = next) {
        char *comma = strchr(p, ',');
        next = comma ? comma + 1 : NULL;
        if (comma)
            *comma = '\0';
        char *dash = strchr(p, '-');
        if (dash)
            *dash = '\0';
        unsigned long a, b;
        if (!fs_parse_uint(p, 0, PMD_CPU_MAX, &a))
            goto bad;
        b = a;
        if (dash && !fs_parse_uint(dash + 1, a, PMD_CPU_MAX, &b))
            goto bad;
        for (unsigned long x = a; x <= b; x++) {
            if (n >= PMD_MAX) {
                fs_errf(err, errlen, "pmd-cores '%s': more than %d cores", s, PMD_MAX);
                return -1;
            }
            for (unsigned k = 0; k < n; k++)
                if (c->cores[k] == (int)x) {
                    fs_errf(err, errlen, "pmd-cores '%s': core %lu twice", s, x);
                    return -1;
                }
            c->cores[n++] = (int)x;
        }
    }
    c->n_pmds = n;
    return 0;
bad:
    fs_errf(err, errlen, "pmd-cores '%s': expected a CPU list like 1,2 or 1-3", s);
    return -1;
}

int pmd_config_parse_affinity(struct pmd_config *c, const struct dp *dp,
                              const char *s, char *err, size_t errlen)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf) {
        fs_errf(err, errlen, "pmd-rxq-affinity: too long");
        return -1;
    }
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(tok, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c1 || !c2) {
            fs_errf(err, errlen, "pmd-rxq-affinity '%s': expected PORT:QUEUE:PMD", tok);
            return -1;
        }
        *c1 = *c2 = '\0';
        int port = -1;
        for (unsigned i = 0; i < dp_n_ports(dp); i++) {
            struct dp_port_info pi;
            dp_port_get(dp, i, &pi);
            if (!strcmp(pi.name, tok))
                port = (int)i;
        }
        if (port < 0) {
            fs_errf(err, errlen, "pmd-rxq-affinity: unknown port '%s'", tok);
            return -1;
        }
        unsigned long q, core;
        struct dp_port_info pi;
        dp_port_get(dp, (unsigned)port, &pi);
        unsigned nq = pi.dev ? netdev_n_rxq(pi.dev) : 0;
        if (!nq || !fs_parse_uint(c1 + 1, 0, nq - 1, &q)) {
            fs_errf(err, errlen, "pmd-rxq-affinity: port %s has no rx queue '%s'", tok,
                    c1 + 1);
            return -1;
        }
        if (!fs_parse_uint(c2 + 1, 0, PMD_CPU_MAX, &core)) {
            fs_errf(err, errlen, "pmd-rxq-affinity: bad PMD '%s' (expected 0..%d)", c2 + 1,
                    PMD_CPU_MAX);
            return -1;
        }
        int pmd = -1;
        bool pinned = c->cores[0] >= 0;
        for (unsigned i = 0; i < c->n_pmds; i++)
            if (pinned ? c->cores[i] == (int)core : i == core)
                pmd = (int)i;
        if (pmd < 0) {
            fs_errf(err, errlen, "pmd-rxq-affinity: %s %lu is not a PMD",
                    pinned ? "core" : "PMD index", core);
            return -1;
        }
        if (c->n_affinity >= PMD_MAX_AFFINITY) {
            fs_errf(err, errlen, "pmd-rxq-affinity: more than %d entries", PMD_MAX_AFFINITY);
            return -1;
        }
        c->affinity[c->n_affinity].port = (uint16_t)port;
        c->affinity[c->n_affinity].qid = (uint16_t)q;
        c->affinity[c->n_affinity].pmd = (unsigned)pmd;
        c->n_affinity++;
    }
    return 0;
}

/* ---- create / destroy --------------------------------------------------- */

static int pmd_assign(struct pmd_runtime *rt, char *err, size_t errlen)
{
    struct dp *dp = rt->dp;
    if (dp_assign_rxqs(dp, rt->dpps, rt->n_pmds, rt->cfg.affinity, rt->cfg.n_affinity, err,
                       errlen))
        return -1;
    for (unsigned p = 0; p < dp_n_ports(dp); p++) {
        struct dp_port_info pi;
        dp_port_get(dp, p, &pi);
        struct netdev *dev = pi.dev;
        if (!dev)
            continue;
        /* Tx queues. */
        unsigned ntx = netdev_n_txq(dev);
        if (ntx == 0)
            continue;
        bool shared = ntx < rt->n_pmds;
        if (shared) {
            struct pmd_txlock *l = calloc(1, sizeof *l);
            if (!l) {
                fs_errf(err, errlen, "out of memory");
                return -1;
            }
            l->real = dev;
            l->proxy.class = &pmd_txlock_class;
            l->proxy.priv = l;
            snprintf(l->proxy.name, sizeof l->proxy.name, "%s", dev->name);
            for (unsigned q = 0; q < NETDEV_MAX_QUEUES; q++)
                pthread_mutex_init(&l->locks[q], NULL);
            rt->txlocks[p] = l;
        }
        for (unsigned i = 0; i < rt->n_pmds; i++)
            dp_pmd_set_txq(rt->dpps[i], (uint16_t)p, i % ntx,
                           shared ? &rt->txlocks[p]->proxy : NULL);
    }
    return 0;
}

int pmd_runtime_create(struct dp *dp, const struct pmd_config *cfg,
                       struct pmd_runtime **out, char *err, size_t errlen)
{
    if (cfg->n_pmds == 0 || cfg->n_pmds > PMD_MAX) {
        fs_errf(err, errlen, "number of PMDs must be 1..%d", PMD_MAX);
        return -1;
    }
    struct pmd_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    rt->dp = dp;
    rt->cfg = *cfg;
    for (unsigned i = 0; i < cfg->n_pmds; i++) {
        struct pmd_thread *t = fs_aligned_alloc(sizeof *t);
        struct dp_pmd *dpp = t ? dp_pmd_create(dp) : NULL;
        if (!dpp) {
            fs_aligned_free(t);
            fs_errf(err, errlen, "out of memory");
            pmd_runtime_destroy(rt);
            return -1;
        }
        t->hot.dpp = dpp;
        t->hot.index = i;
        t->hot.idle_sleep_us = cfg->idle_sleep_us;
        atomic_init(&t->ctl.flags, 0);
        t->cold.rt = rt;
        t->cold.core = cfg->cores[i];
        pthread_mutex_init(&t->cold.snap_lock, NULL);
        rt->pmds[i] = t;
        rt->dpps[i] = dpp;
        rt->n_pmds = i + 1;
    }
    if (pmd_assign(rt, err, errlen)) {
        pmd_runtime_destroy(rt);
        return -1;
    }
    rt->start_ns = fs_mono_ns();
    rt->start_cycles = fs_cycles();
    *out = rt;
    return 0;
}

void pmd_runtime_destroy(struct pmd_runtime *rt)
{
    if (!rt)
        return;
    pmd_runtime_stop(rt);
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        dp_pmd_destroy(rt->dpps[i]);
        pthread_mutex_destroy(&rt->pmds[i]->cold.snap_lock);
        fs_aligned_free(rt->pmds[i]);
    }
    for (unsigned p = 0; p < DP_MAX_PORTS; p++) {
        struct pmd_txlock *l = rt->txlocks[p];
        if (!l)
            continue;
        for (unsigned q = 0; q < NETDEV_MAX_QUEUES; q++)
            pthread_mutex_destroy(&l->locks[q]);
        free(l);
    }
    free(rt);
}

/* ---- the poll loop ------------------------------------------------------ */

/* Fills st from the PMD's own counters (called on the PMD's thread, or
 * after it stopped). */
static void pmd_collect(const struct pmd_thread *t, struct pmd_stats *st, uint64_t now)
{
    st->busy_iterations = t->hot.busy_iterations;
    st->idle_iterations = t->hot.idle_iterations;
    st->busy_cycles = t->hot.busy_cycles;
    st->idle_cycles = t->hot.idle_cycles;
    st->time_ns = now;
    dp_pmd_stats(t->hot.dpp, &st->dp);
    fcache_get_memory(dp_pmd_fcache(t->hot.dpp), &st->mem);
}

static void pmd_publish(struct pmd_thread *t, uint64_t now)
{
    pthread_mutex_lock(&t->cold.snap_lock);
    pmd_collect(t, &t->cold.snap, now);
    pthread_mutex_unlock(&t->cold.snap_lock);
}

/* One poll iteration: the clock, the poll, the cycle accounting, (with ka,
 * a constant) the heartbeat and the idle sleep. The heartbeat comes before
 * the sleep: the poll is done, and the monitor sees it at once, not one
 * sleep later. Returns the iteration's time. */
static inline __attribute__((always_inline)) uint64_t
pmd_iterate(struct pmd_thread *t, struct ka_heartbeat *hb, const bool ka)
{
    uint64_t c0 = fs_cycles();
    uint64_t now = fs_mono_ns();
    unsigned n = dp_pmd_poll(t->hot.dpp, now);
    uint64_t c1 = fs_cycles();
    if (n) {
        t->hot.busy_cycles += c1 - c0;
        t->hot.busy_iterations++;
    } else {
        t->hot.idle_cycles += c1 - c0;
        t->hot.idle_iterations++;
    }
    if (ka)
        ka_heartbeat_beat(hb, t->hot.busy_iterations + t->hot.idle_iterations);
    if (!n && t->hot.idle_sleep_us) {
        struct timespec ts = {
            .tv_sec = t->hot.idle_sleep_us / 1000000u,
            .tv_nsec = (long)(t->hot.idle_sleep_us % 1000000u) * 1000,
        };
        nanosleep(&ts, NULL);
    }
    return now;
}

/* Polls while the control flags stay 'flags'; inlined once with and once
 * without the heartbeat. */
static inline __attribute__((always_inline)) void
pmd_loop(struct pmd_thread *t, unsigned flags, const bool ka)
{
    struct ka_heartbeat *hb = t->cold.hb;
    while (atomic_load_explicit(&t->ctl.flags, memory_order_relaxed) == flags) {
        uint64_t now = pmd_iterate(t, hb, ka);
        if (now >= t->hot.next_publish_ns) {
            pmd_publish(t, now);
            t->hot.next_publish_ns = now + PMD_PUBLISH_NS;
        }
    }
}

static void pmd_sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / FS_NSEC_PER_SEC),
                          .tv_nsec = (long)(ns % FS_NSEC_PER_SEC)};
    nanosleep(&ts, NULL);
}

/* Pins and prioritises the calling PMD thread. A pin or a priority the
 * system refuses is reported and the PMD runs on without it. */
static void pmd_thread_setup(struct pmd_thread *t)
{
    const struct pmd_config *cfg = &t->cold.rt->cfg;
    if (t->cold.core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t->cold.core, &set);
        int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        if (rc)
            fprintf(stderr, "flowswitch: pmd %u: cannot pin to core %d: %s\n",
                    t->hot.index, t->cold.core, strerror(rc));
    }
    if (cfg->priority_set && setpriority(PRIO_PROCESS, (id_t)gettid(), cfg->priority))
        fprintf(stderr, "flowswitch: pmd %u: cannot set priority (nice) %d: %s; "
                        "running at the default\n",
                t->hot.index, cfg->priority, strerror(errno));
    if (cfg->thread_start && cfg->thread_start() != 0)
        fprintf(stderr, "flowswitch: pmd %u: thread registration failed\n", t->hot.index);
    if (t->cold.hb)
        ka_heartbeat_attach(t->cold.hb);
}

static void *pmd_main(void *arg)
{
    struct pmd_thread *t = arg;
    struct pmd_runtime *rt = t->cold.rt;
    struct dp_pmd *dpp = t->hot.dpp;

    pmd_thread_setup(t);
    for (;;) {
        unsigned f = atomic_load_explicit(&t->ctl.flags, memory_order_relaxed);
        if (f & PMD_F_STOP)
            break;
        if (f & PMD_F_STALL) {
            while (atomic_load_explicit(&t->ctl.flags, memory_order_relaxed) == f)
                pmd_sleep_ns(PMD_STALL_POLL_NS);
        } else if (f & PMD_F_KA) {
            pmd_loop(t, f, true);
        } else {
            pmd_loop(t, f, false);
        }
    }
    uint64_t end = fs_mono_ns();
    dp_pmd_flush(dpp, end);
    pmd_publish(t, end);
    if (rt->cfg.thread_stop)
        rt->cfg.thread_stop();
    return NULL;
}

void pmd_runtime_iterate(struct pmd_runtime *rt, unsigned i, uint64_t n)
{
    struct pmd_thread *t = rt->pmds[i];
    if (atomic_load_explicit(&t->ctl.flags, memory_order_relaxed) & PMD_F_KA) {
        struct ka_heartbeat *hb = t->cold.hb;
        for (uint64_t k = 0; k < n; k++)
            (void)pmd_iterate(t, hb, true);
    } else {
        for (uint64_t k = 0; k < n; k++)
            (void)pmd_iterate(t, NULL, false);
    }
}

int pmd_runtime_start(struct pmd_runtime *rt, char *err, size_t errlen)
{
    rt->start_ns = fs_mono_ns();
    rt->start_cycles = fs_cycles();
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        struct pmd_thread *t = rt->pmds[i];
        pmd_publish(t, rt->start_ns);
        if (dp_pmd_n_rxqs(rt->dpps[i]) == 0) {
            /* A dp_pmd without rx queues would poll every queue: never run
             * it. */
            fprintf(stderr, "flowswitch: pmd %u has no rx queue, not started\n", i);
            continue;
        }
        int rc = pthread_create(&t->cold.tid, NULL, pmd_main, t);
        if (rc) {
            fs_errf(err, errlen, "pmd %u: cannot create thread: %s", i, strerror(rc));
            pmd_runtime_stop(rt);
            return -1;
        }
        /* Named here, so the name is there when start returns. */
        char name[16];
        snprintf(name, sizeof name, "pmd-%u", i);
        pthread_setname_np(t->cold.tid, name);
        t->cold.running = true;
    }
    rt->started = true;
    return 0;
}

void pmd_runtime_stop(struct pmd_runtime *rt)
{
    for (unsigned i = 0; i < rt->n_pmds; i++)
        atomic_fetch_or(&rt->pmds[i]->ctl.flags, PMD_F_STOP);
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        struct pmd_thread *t = rt->pmds[i];
        if (t->cold.running) {
            pthread_join(t->cold.tid, NULL);
            t->cold.running = false;
        }
        pmd_publish(t, fs_mono_ns());
    }
    rt->stopped = true;
}

unsigned pmd_runtime_n_pmds(const struct pmd_runtime *rt)
{
    return rt->n_pmds;
}

uint32_t pmd_runtime_idle_sleep_us(const struct pmd_runtime *rt)
{
    return rt->cfg.idle_sleep_us;
}

struct dp_pmd *const *pmd_runtime_pmds(const struct pmd_runtime *rt)
{
    return rt->dpps;
}

void pmd_runtime_snapshot(struct pmd_runtime *rt, unsigned i, struct pmd_stats *st)
{
    struct pmd_thread *t = rt->pmds[i];
    pthread_mutex_lock(&t->cold.snap_lock);
    *st = t->cold.snap;
    pthread_mutex_unlock(&t->cold.snap_lock);
}

bool pmd_runtime_running(const struct pmd_runtime *rt, unsigned i)
{
    return i < rt->n_pmds && rt->pmds[i]->cold.running;
}

/* ---- keep-alive ------------------------------------------------------------- */

void pmd_runtime_set_keepalive(struct pmd_runtime *rt, struct ka *ka)
{
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        rt->pmds[i]->cold.hb = ka ? ka_heartbeat(ka, i) : NULL;
        if (ka)
            ka_set_idle(ka, i, dp_pmd_n_rxqs(rt->dpps[i]) == 0);
    }
}

void pmd_runtime_keepalive(struct pmd_runtime *rt, bool on)
{
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        struct pmd_thread *t = rt->pmds[i];
        if (on && t->cold.hb)
            atomic_fetch_or(&t->ctl.flags, PMD_F_KA);
        else
            atomic_fetch_and(&t->ctl.flags, ~PMD_F_KA);
    }
}

void pmd_runtime_test_stall(struct pmd_runtime *rt, unsigned i, bool stall)
{
    if (i >= rt->n_pmds)
        return;
    if (stall)
        atomic_fetch_or(&rt->pmds[i]->ctl.flags, PMD_F_STALL);
    else
        atomic_fetch_and(&rt->pmds[i]->ctl.flags, ~PMD_F_STALL);
}

/* ---- requests ------------------------------------------------------------------ */

unsigned pmd_runtime_request(struct pmd_runtime *rt, enum dp_pmd_request req,
                             unsigned timeout_ms, bool answered[PMD_MAX])
{
    uint64_t deadline = fs_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    bool posted[PMD_MAX] = {false};
    unsigned missing;
    for (;;) {
        missing = 0;
        for (unsigned i = 0; i < rt->n_pmds; i++) {
            struct dp_pmd *dpp = rt->dpps[i];
            /* A PMD whose previous request is still pending (it was
             * stalled) gets this one once it answered that. */
            if (!posted[i] && dp_pmd_request_post(dpp, req) == 0) {
                posted[i] = true;
                if (!rt->pmds[i]->cold.running)
                    dp_pmd_sync(dpp); /* no thread polls it */
            }
            answered[i] = posted[i] && dp_pmd_request_done(dpp);
            missing += !answered[i];
        }
        if (!missing || fs_mono_ns() >= deadline)
            break;
        pmd_sleep_ns(PMD_REQUEST_POLL_NS);
    }
    return missing;
}

void pmd_runtime_sync_idle(struct pmd_runtime *rt)
{
    for (unsigned i = 0; i < rt->n_pmds; i++)
        if (!rt->pmds[i]->cold.running)
            dp_pmd_sync(rt->dpps[i]);
}

uint32_t pmd_runtime_lagging(const struct pmd_runtime *rt)
{
    uint32_t lag = 0;
    for (unsigned i = 0; i < rt->n_pmds; i++)
        if (!dp_pmd_current(rt->dpps[i]))
            lag |= 1u << i;
    return lag;
}

struct dp_megaflow_dump *pmd_runtime_take_dump(struct pmd_runtime *rt, unsigned i)
{
    return i < rt->n_pmds ? dp_pmd_take_dump(rt->dpps[i]) : NULL;
}

/* ---- reporting ---------------------------------------------------------- */

/* Estimated cycle-counter rate (ticks per ns) since the runtime was created. */
static double pmd_cycles_per_ns(const struct pmd_runtime *rt)
{
    uint64_t ns = fs_mono_ns() - rt->start_ns;
    uint64_t cy = fs_cycles() - rt->start_cycles;
    return ns ? (double)cy / (double)ns : 1.0;
}

void pmd_runtime_report(struct pmd_runtime *rt, unsigned i, const struct pmd_stats *cur,
                        const struct pmd_stats *base, FILE *out, bool json)
{
    uint64_t base_ns = base ? base->time_ns : rt->start_ns;
    struct report_pmd rp = {
        .index = i,
        .core = rt->pmds[i]->cold.core,
        .n_rxqs = dp_pmd_n_rxqs(rt->dpps[i]),
        .secs = cur->time_ns > base_ns ? (double)(cur->time_ns - base_ns) / 1e9 : 0.0,
        .cycles_per_ns = pmd_cycles_per_ns(rt),
        .busy_iterations = cur->busy_iterations,
        .idle_iterations = cur->idle_iterations,
        .busy_cycles = cur->busy_cycles,
        .idle_cycles = cur->idle_cycles,
        .d = &cur->dp,
    };
    struct dp_stats *d = NULL;
    if (base) {
        rp.busy_iterations -= base->busy_iterations;
        rp.idle_iterations -= base->idle_iterations;
        rp.busy_cycles -= base->busy_cycles;
        rp.idle_cycles -= base->idle_cycles;
        d = malloc(sizeof *d);
        if (!d)
            return;
        *d = cur->dp;
        dp_stats_sub(d, &base->dp);
        rp.d = d;
    }
    report_pmd(out, json, &rp, dp_n_ports(rt->dp));
    free(d);
}

void pmd_runtime_print_stats(struct pmd_runtime *rt, struct pmd_stats *prev,
                             FILE *out, bool json)
{
    struct pmd_stats *cur = malloc(sizeof *cur);
    if (!cur)
        return;
    if (json)
        fprintf(out, "{\"type\": \"pmd-stats\", \"pmds\": [");
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        pmd_runtime_snapshot(rt, i, cur);
        if (json && i)
            fprintf(out, ", ");
        pmd_runtime_report(rt, i, cur, prev ? &prev[i] : NULL, out, json);
        if (prev)
            prev[i] = *cur;
    }
    if (json)
        fprintf(out, "]}\n");
    fflush(out);
    free(cur);
}

void pmd_runtime_print_assignment(const struct pmd_runtime *rt, FILE *out)
{
    const struct dp *dp = rt->dp;
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        const struct dp_pmd *dpp = rt->dpps[i];
        fprintf(out, "pmd%u", i);
        if (rt->pmds[i]->cold.core >= 0)
            fprintf(out, " core %d", rt->pmds[i]->cold.core);
        fprintf(out, ": rx");
        for (unsigned k = 0; k < dp_pmd_n_rxqs(dpp); k++) {
            uint16_t port, qid;
            struct dp_port_info pi;
            dp_pmd_get_rxq(dpp, k, &port, &qid);
            dp_port_get(dp, port, &pi);
            fprintf(out, " %s/%u", pi.name, qid);
        }
        if (!dp_pmd_n_rxqs(dpp))
            fprintf(out, " (none)");
        fprintf(out, "; tx");
        for (unsigned p = 0; p < dp_n_ports(dp); p++) {
            struct dp_port_info pi;
            dp_port_get(dp, p, &pi);
            if (pi.dev && netdev_n_txq(pi.dev))
                fprintf(out, " %s/%u%s", pi.name, dp_pmd_txq_id(dpp, (uint16_t)p),
                        rt->txlocks[p] ? "(shared)" : "");
        }
        fprintf(out, "\n");
    }
}
