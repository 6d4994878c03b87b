/* pmd.c: PMD threads, rx/tx queue assignment, cycle accounting, stats. */
#define _GNU_SOURCE /* CPU_SET, pthread_setaffinity_np */
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
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PMD_HAVE_TSC 1
#else
#define PMD_HAVE_TSC 0
#endif

#include "offload.h"
#include "util.h"

#define PMD_PUBLISH_NS (100 * 1000 * 1000ull)

uint64_t pmd_cycles(void)
{
#if PMD_HAVE_TSC
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * FS_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
#endif
}

static uint64_t pmd_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * FS_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* posix_memalign keeps its own bookkeeping, so the pointer it returns is
 * the one free() takes: no offset games, and the pair below is the only
 * way per-PMD memory is allocated and released. */
void *pmd_aligned_alloc(size_t size)
{
    size_t lines = size / PMD_CACHE_LINE + (size % PMD_CACHE_LINE != 0);
    if (lines == 0)
        lines = 1;
    if (lines > SIZE_MAX / PMD_CACHE_LINE)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, PMD_CACHE_LINE, lines * PMD_CACHE_LINE) != 0)
        return NULL;
    memset(p, 0, lines * PMD_CACHE_LINE);
    return p;
}

void pmd_aligned_free(void *p)
{
    free(p);
}

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
 * its own so that the PMD's writes never invalidate it. */
struct pmd_ctl {
    atomic_bool stop;
};

/* Touched at start, stop and publication only. */
struct pmd_cold {
    struct pmd_runtime *rt;
    pthread_t tid;
    bool running;
    int core;
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
    int r = l->real->class->send(l->real, qid, pkts, n, summary);
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
    return l->real->class->n_rxq(l->real);
}

static unsigned pmd_txlock_n_txq(const struct netdev *dev)
{
    const struct pmd_txlock *l = dev->priv;
    return l->real->class->n_txq(l->real);
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
    unsigned n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10);
        if (end == p || errno || a < 0 || a > 4095)
            goto bad;
        long b = a;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || errno || b < a || b > 4095)
                goto bad;
        }
        for (long x = a; x <= b; x++) {
            if (n >= PMD_MAX) {
                fs_errf(err, errlen, "pmd-cores '%s': more than %d cores", s, PMD_MAX);
                return -1;
            }
            for (unsigned k = 0; k < n; k++)
                if (c->cores[k] == (int)x) {
                    fs_errf(err, errlen, "pmd-cores '%s': core %ld twice", s, x);
                    return -1;
                }
            c->cores[n++] = (int)x;
        }
        if (*end == ',')
            end++;
        else if (*end)
            goto bad;
        p = end;
    }
    if (n == 0)
        goto bad;
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
        for (unsigned i = 0; i < dp->n_ports; i++)
            if (!strcmp(dp->ports[i].name, tok))
                port = (int)i;
        if (port < 0) {
            fs_errf(err, errlen, "pmd-rxq-affinity: unknown port '%s'", tok);
            return -1;
        }
        char *end;
        long q = strtol(c1 + 1, &end, 10);
        unsigned nq = dp->ports[port].dev ? dp->ports[port].dev->class->n_rxq(dp->ports[port].dev) : 0;
        if (end == c1 + 1 || *end || q < 0 || (unsigned long)q >= nq) {
            fs_errf(err, errlen, "pmd-rxq-affinity: port %s has no rx queue '%s'", tok,
                    c1 + 1);
            return -1;
        }
        long core = strtol(c2 + 1, &end, 10);
        if (end == c2 + 1 || *end || core < 0) {
            fs_errf(err, errlen, "pmd-rxq-affinity: bad PMD '%s'", c2 + 1);
            return -1;
        }
        int pmd = -1;
        bool pinned = c->cores[0] >= 0;
        for (unsigned i = 0; i < c->n_pmds; i++)
            if (pinned ? c->cores[i] == (int)core : (long)i == core)
                pmd = (int)i;
        if (pmd < 0) {
            fs_errf(err, errlen, "pmd-rxq-affinity: %s %ld is not a PMD",
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

static const struct pmd_rxq_affinity *pmd_find_affinity(const struct pmd_config *c,
                                                        unsigned port, unsigned q)
{
    for (unsigned i = 0; i < c->n_affinity; i++)
        if (c->affinity[i].port == port && c->affinity[i].qid == q)
            return &c->affinity[i];
    return NULL;
}

static int pmd_assign(struct pmd_runtime *rt, char *err, size_t errlen)
{
    struct dp *dp = rt->dp;
    bool isolated[PMD_MAX] = {false};
    unsigned n_free = 0;
    for (unsigned i = 0; i < rt->cfg.n_affinity; i++)
        isolated[rt->cfg.affinity[i].pmd] = true;
    for (unsigned i = 0; i < rt->n_pmds; i++)
        n_free += !isolated[i];
    unsigned rr = 0;
    for (unsigned p = 0; p < dp->n_ports; p++) {
        struct netdev *dev = dp->ports[p].dev;
        if (!dev)
            continue;
        unsigned nq = dev->class->n_rxq(dev);
        for (unsigned q = 0; q < nq; q++) {
            const struct pmd_rxq_affinity *a = pmd_find_affinity(&rt->cfg, p, q);
            unsigned target;
            if (a) {
                target = a->pmd;
            } else {
                /* Next PMD in round-robin order that takes unpinned queues. */
                do {
                    target = rr++ % rt->n_pmds;
                } while (n_free && isolated[target]);
            }
            if (dp_pmd_add_rxq(rt->dpps[target], (uint16_t)p, (uint16_t)q)) {
                fs_errf(err, errlen, "pmd %u: cannot add rx queue %u of port %s", target,
                        q, dp->ports[p].name);
                return -1;
            }
        }
        /* Tx queues. */
        unsigned ntx = dev->class->n_txq(dev);
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
        for (unsigned i = 0; i < rt->n_pmds; i++) {
            dp_pmd_set_txq(rt->dpps[i], (uint16_t)p, i % ntx);
            if (shared)
                rt->dpps[i]->txq[p].dev = &rt->txlocks[p]->proxy;
        }
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
        struct pmd_thread *t = pmd_aligned_alloc(sizeof *t);
        struct dp_pmd *dpp = t ? dp_pmd_create(dp) : NULL;
        if (!dpp) {
            pmd_aligned_free(t);
            fs_errf(err, errlen, "out of memory");
            pmd_runtime_destroy(rt);
            return -1;
        }
        t->hot.dpp = dpp;
        t->hot.index = i;
        t->hot.idle_sleep_us = cfg->idle_sleep_us;
        atomic_init(&t->ctl.stop, false);
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
    rt->start_ns = pmd_mono_ns();
    rt->start_cycles = pmd_cycles();
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
        pmd_aligned_free(rt->pmds[i]);
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
    struct dp_pmd *dpp = t->hot.dpp;
    const struct dp *dp = dpp->dp;
    struct dp_totals tot;
    memset(st, 0, sizeof *st);
    dp_totals(dp, &dpp, 1, &tot);
    st->iterations = t->hot.busy_iterations + t->hot.idle_iterations;
    st->busy_iterations = t->hot.busy_iterations;
    st->idle_iterations = t->hot.idle_iterations;
    st->busy_cycles = t->hot.busy_cycles;
    st->idle_cycles = t->hot.idle_cycles;
    st->rx_packets = tot.rx;
    st->tx_packets = tot.tx;
    st->copies = tot.copies;
    st->dropped = tot.dropped;
    st->queued = tot.queued;
    for (int r = 0; r < DROP_N_REASONS; r++) {
        st->drops[r] = dpp->drops.n[r];
        for (unsigned p = 0; p < dp->n_ports; p++)
            st->drops[r] += dpp->txq[p].stats.dropped[r];
    }
    for (unsigned p = 0; p < dp->n_ports; p++)
        st->send_calls += dpp->txq[p].stats.send_calls;
    for (int l = 0; l < CSUM_L_N; l++) {
        st->csum_sw += dpp->csum.sw[l];
        st->csum_offloaded += dpp->csum.offloaded[l];
    }
    st->csum_guest_partial = dpp->csum.guest_partial;
    struct fcache_stats fs;
    fcache_get_stats(dpp->fc, &fs);
    st->emc_hits = fs.emc_hits;
    st->smc_hits = fs.smc_hits;
    st->megaflow_hits = fs.megaflow_hits;
    st->direct = fs.direct;
    st->upcalls = fs.upcalls;
    st->time_ns = now;
}

static void pmd_publish(struct pmd_thread *t, uint64_t now)
{
    struct pmd_stats st;
    pmd_collect(t, &st, now);
    pthread_mutex_lock(&t->cold.snap_lock);
    t->cold.snap = st;
    pthread_mutex_unlock(&t->cold.snap_lock);
}

static void *pmd_main(void *arg)
{
    struct pmd_thread *t = arg;
    struct pmd_runtime *rt = t->cold.rt;
    struct dp_pmd *dpp = t->hot.dpp;
    const struct fs_clock *clk = &dpp->dp->clock;

    if (t->cold.core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t->cold.core, &set);
        int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        if (rc)
            fprintf(stderr, "flowswitch: pmd %u: cannot pin to core %d: %s\n",
                    t->hot.index, t->cold.core, strerror(rc));
    }
    if (rt->cfg.thread_start && rt->cfg.thread_start() != 0)
        fprintf(stderr, "flowswitch: pmd %u: thread registration failed\n", t->hot.index);

    while (!atomic_load_explicit(&t->ctl.stop, memory_order_relaxed)) {
        uint64_t c0 = pmd_cycles();
        uint64_t now = fs_clock_now(clk);
        unsigned n = dp_pmd_poll(dpp, now);
        uint64_t c1 = pmd_cycles();
        if (n) {
            t->hot.busy_cycles += c1 - c0;
            t->hot.busy_iterations++;
        } else {
            t->hot.idle_cycles += c1 - c0;
            t->hot.idle_iterations++;
            if (t->hot.idle_sleep_us) {
                struct timespec ts = {
                    .tv_sec = t->hot.idle_sleep_us / 1000000u,
                    .tv_nsec = (long)(t->hot.idle_sleep_us % 1000000u) * 1000,
                };
                nanosleep(&ts, NULL);
            }
        }
        if (now >= t->hot.next_publish_ns) {
            pmd_publish(t, now);
            t->hot.next_publish_ns = now + PMD_PUBLISH_NS;
        }
    }
    dpp->now = fs_clock_now(clk);
    dp_pmd_flush(dpp);
    pmd_publish(t, dpp->now);
    if (rt->cfg.thread_stop)
        rt->cfg.thread_stop();
    return NULL;
}

int pmd_runtime_start(struct pmd_runtime *rt, char *err, size_t errlen)
{
    rt->start_ns = pmd_mono_ns();
    rt->start_cycles = pmd_cycles();
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        struct pmd_thread *t = rt->pmds[i];
        pmd_publish(t, rt->start_ns);
        if (rt->dpps[i]->n_rxqs == 0) {
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
        t->cold.running = true;
    }
    rt->started = true;
    return 0;
}

void pmd_runtime_stop(struct pmd_runtime *rt)
{
    for (unsigned i = 0; i < rt->n_pmds; i++)
        atomic_store(&rt->pmds[i]->ctl.stop, true);
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        struct pmd_thread *t = rt->pmds[i];
        if (t->cold.running) {
            pthread_join(t->cold.tid, NULL);
            t->cold.running = false;
        }
        pmd_publish(t, pmd_mono_ns());
    }
    rt->stopped = true;
}

unsigned pmd_runtime_n_pmds(const struct pmd_runtime *rt)
{
    return rt->n_pmds;
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

/* ---- reporting ---------------------------------------------------------- */

static double pmd_ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* Estimated TSC rate (cycles per ns) since the runtime was created. */
static double pmd_cycles_per_ns(const struct pmd_runtime *rt)
{
    uint64_t ns = pmd_mono_ns() - rt->start_ns;
    uint64_t cy = pmd_cycles() - rt->start_cycles;
    return ns ? (double)cy / (double)ns : 1.0;
}

void pmd_runtime_print_stats(struct pmd_runtime *rt, struct pmd_stats *prev,
                             FILE *out, bool json)
{
    double cpns = pmd_cycles_per_ns(rt);
    if (json)
        fprintf(out, "{\"type\": \"pmd-stats\", \"pmds\": [");
    for (unsigned i = 0; i < rt->n_pmds; i++) {
        struct pmd_stats cur, d, base;
        pmd_runtime_snapshot(rt, i, &cur);
        if (prev)
            base = prev[i];
        else {
            memset(&base, 0, sizeof base);
            base.time_ns = rt->start_ns;
        }
        d.iterations = cur.iterations - base.iterations;
        d.busy_iterations = cur.busy_iterations - base.busy_iterations;
        d.idle_iterations = cur.idle_iterations - base.idle_iterations;
        d.busy_cycles = cur.busy_cycles - base.busy_cycles;
        d.idle_cycles = cur.idle_cycles - base.idle_cycles;
        d.rx_packets = cur.rx_packets - base.rx_packets;
        d.tx_packets = cur.tx_packets - base.tx_packets;
        d.dropped = cur.dropped - base.dropped;
        d.send_calls = cur.send_calls - base.send_calls;
        d.copies = cur.copies - base.copies;
        for (int r = 0; r < DROP_N_REASONS; r++)
            d.drops[r] = cur.drops[r] - base.drops[r];
        d.csum_sw = cur.csum_sw - base.csum_sw;
        d.csum_offloaded = cur.csum_offloaded - base.csum_offloaded;
        d.csum_guest_partial = cur.csum_guest_partial - base.csum_guest_partial;
        d.emc_hits = cur.emc_hits - base.emc_hits;
        d.smc_hits = cur.smc_hits - base.smc_hits;
        d.megaflow_hits = cur.megaflow_hits - base.megaflow_hits;
        d.direct = cur.direct - base.direct;
        d.upcalls = cur.upcalls - base.upcalls;
        double secs = cur.time_ns > base.time_ns
                          ? (double)(cur.time_ns - base.time_ns) / 1e9 : 0.0;
        uint64_t used = d.busy_cycles + d.idle_cycles;
        double total_cycles = secs * 1e9 * cpns;
        double mpps = secs > 0 ? (double)d.rx_packets / secs / 1e6 : 0.0;
        double cpp = pmd_ratio(d.busy_cycles, d.rx_packets);
        const struct dp_pmd *dpp = rt->dpps[i];
        if (json) {
            fprintf(out,
                    "%s{\"pmd\": %u, \"core\": %d, \"rxqs\": %u, \"interval_s\": %.3f, "
                    "\"iterations\": %" PRIu64 ", \"busy_iterations\": %" PRIu64
                    ", \"idle_iterations\": %" PRIu64 ", \"busy_cycles\": %" PRIu64
                    ", \"idle_cycles\": %" PRIu64 ", \"rx_packets\": %" PRIu64
                    ", \"tx_packets\": %" PRIu64 ", \"copies\": %" PRIu64
                    ", \"dropped\": %" PRIu64 ", \"send_calls\": %" PRIu64
                    ", \"mpps\": %.3f, \"cycles_per_packet\": %.1f"
                    ", \"pkts_per_busy_iteration\": %.2f, \"pkts_per_send\": %.2f"
                    ", \"csum_sw\": %" PRIu64 ", \"csum_offloaded\": %" PRIu64
                    ", \"csum_guest_partial\": %" PRIu64 ", \"emc_hits\": %" PRIu64
                    ", \"smc_hits\": %" PRIu64 ", \"megaflow_hits\": %" PRIu64
                    ", \"direct\": %" PRIu64 ", \"upcalls\": %" PRIu64 ", \"drops\": {",
                    i ? ", " : "", i, rt->pmds[i]->cold.core, dpp->n_rxqs, secs,
                    d.iterations, d.busy_iterations, d.idle_iterations, d.busy_cycles,
                    d.idle_cycles, d.rx_packets, d.tx_packets, d.copies, d.dropped,
                    d.send_calls, mpps, cpp, pmd_ratio(d.rx_packets, d.busy_iterations),
                    pmd_ratio(d.tx_packets, d.send_calls), d.csum_sw, d.csum_offloaded,
                    d.csum_guest_partial, d.emc_hits, d.smc_hits, d.megaflow_hits, d.direct,
                    d.upcalls);
            for (int r = 0; r < DROP_N_REASONS; r++)
                fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                        drop_reason_name((enum drop_reason)r), d.drops[r]);
            fprintf(out, "}}");
        } else {
            if (rt->pmds[i]->cold.core >= 0)
                fprintf(out, "pmd thread pmd%u core %d (%u rx queues):\n", i,
                        rt->pmds[i]->cold.core, dpp->n_rxqs);
            else
                fprintf(out, "pmd thread pmd%u unpinned (%u rx queues):\n", i,
                        dpp->n_rxqs);
            fprintf(out, "  Measurement duration: %.3f s\n", secs);
            fprintf(out, "  Iterations:         %14" PRIu64 "  (%.2f us/it)\n", d.iterations,
                    d.iterations ? secs * 1e6 / (double)d.iterations : 0.0);
            fprintf(out, "  - Used TSC cycles:  %14" PRIu64 "  (%5.1f %% of total cycles)\n",
                    used, total_cycles > 0 ? 100.0 * (double)used / total_cycles : 0.0);
            fprintf(out, "  - idle iterations:  %14" PRIu64 "  (%5.1f %% of used cycles)\n",
                    d.idle_iterations, 100.0 * pmd_ratio(d.idle_cycles, used));
            fprintf(out, "  - busy iterations:  %14" PRIu64 "  (%5.1f %% of used cycles)\n",
                    d.busy_iterations, 100.0 * pmd_ratio(d.busy_cycles, used));
            fprintf(out, "  Rx packets:         %14" PRIu64 "  (%.3f Mpps, %.0f cycles/pkt)\n",
                    d.rx_packets, mpps, cpp);
            fprintf(out, "  - per busy iteration: %12.1f\n",
                    pmd_ratio(d.rx_packets, d.busy_iterations));
            fprintf(out, "  Tx packets:         %14" PRIu64 "  (%.1f pkts/send, %" PRIu64
                         " sends)\n",
                    d.tx_packets, pmd_ratio(d.tx_packets, d.send_calls), d.send_calls);
            fprintf(out, "  Cache hits: emc %" PRIu64 ", smc %" PRIu64 ", megaflow %" PRIu64
                         " (direct %" PRIu64 "), upcalls %" PRIu64 "\n",
                    d.emc_hits, d.smc_hits, d.megaflow_hits, d.direct, d.upcalls);
            fprintf(out, "  Copies:             %14" PRIu64 "\n", d.copies);
            fprintf(out, "  Dropped:            %14" PRIu64 "\n", d.dropped);
            for (int r = 0; r < DROP_N_REASONS; r++)
                if (d.drops[r])
                    fprintf(out, "  - %-18s %12" PRIu64 "\n",
                            drop_reason_name((enum drop_reason)r), d.drops[r]);
            fprintf(out, "  Checksums: sw %" PRIu64 ", offloaded %" PRIu64
                         ", guest-partial %" PRIu64 "\n",
                    d.csum_sw, d.csum_offloaded, d.csum_guest_partial);
        }
        if (prev)
            prev[i] = cur;
    }
    if (json)
        fprintf(out, "]}\n");
    fflush(out);
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
        for (unsigned k = 0; k < dpp->n_rxqs; k++)
            fprintf(out, " %s/%u", dp->ports[dpp->rxqs[k].port].name, dpp->rxqs[k].qid);
        if (!dpp->n_rxqs)
            fprintf(out, " (none)");
        fprintf(out, "; tx");
        for (unsigned p = 0; p < dp->n_ports; p++)
            if (dp->ports[p].dev && dp->ports[p].dev->class->n_txq(dp->ports[p].dev))
                fprintf(out, " %s/%u%s", dp->ports[p].name, dpp->txq[p].qid,
                        rt->txlocks[p] ? "(shared)" : "");
        fprintf(out, "\n");
    }
}
