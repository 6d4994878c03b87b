/* keepalive.h: PMD keep-alive.
 *
 * A PMD thread can be alive as a process yet not forwarding: starved by a
 * higher-priority thread, stuck in a device call, spinning on a lock. Its
 * state in /proc still reads R with rising CPU time; only the PMD itself
 * can say it completed another poll iteration. Keep-alive gives every PMD
 * a heartbeat slot, alone on its own cache line, into which the PMD stores
 * its iteration counter once per poll iteration (a relaxed atomic store: no
 * lock, no read-modify-write, no line shared with anyone but the monitor's
 * occasional read). A monitor compares each slot with what it saw before:
 *
 *   ALIVE    the heartbeat changed within the last interval;
 *   STALLED  it has not changed for longer than the interval (a PMD that
 *            never beat since monitoring began counts from that start);
 *            ALIVE again at the first change;
 *   IDLE     a PMD without rx queues: it never runs a poll loop and is
 *            never reported failed.
 *
 * These are states, not verdicts: what to do about a stalled PMD is the
 * operator's call. The monitor reads the slots several times per interval
 * (KA_CHECKS_PER_INTERVAL), so a PMD that stops is STALLED within
 * (1 + 2 / KA_CHECKS_PER_INTERVAL) intervals of its last beat, less than
 * two. The state machine, ka_check(), is a pure function of the slots and
 * the time it is given, which tests drive with a fake clock; the monitor
 * thread calls it with the monotonic clock.
 *
 * The design follows the OVS-DPDK keep-alive series that was proposed but
 * never merged upstream ("[PATCH v5 00/10] Add OVS DPDK keep-alive
 * functionality.", ovs-dev, 2017-09-15): heartbeats from the PMD side
 * without locks, a separate monitor, PMDs named by thread id, no DPDK
 * dependency. */
#ifndef FS_KEEPALIVE_H
#define FS_KEEPALIVE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sys.h"

#define KA_MAX_PMDS 32 /* PMD_MAX (pmd.h checks) */
#define KA_INTERVAL_DEFAULT_MS 1000
#define KA_INTERVAL_MIN_MS 1
#define KA_INTERVAL_MAX_MS 3600000
#define KA_CHECKS_PER_INTERVAL 4

enum ka_state {
    KA_ALIVE,
    KA_STALLED,
    KA_IDLE,
};

/* "ALIVE", "STALLED", "IDLE". */
const char *ka_state_name(enum ka_state s);

/* One PMD's heartbeat slot. Only that PMD writes it. */
struct ka_heartbeat {
    _Alignas(FS_CACHE_LINE) _Atomic uint64_t beat; /* the PMD's iteration counter */
    _Atomic int tid; /* the PMD thread's id (0: not attached yet) */
};

/* PMD side, once per poll iteration: publishes the iteration counter. */
static inline void ka_heartbeat_beat(struct ka_heartbeat *hb, uint64_t iteration)
{
    atomic_store_explicit(&hb->beat, iteration, memory_order_relaxed);
}

/* PMD side, once at thread start: records the calling thread's id, which
 * the status reports (threads are what an operator can inspect). */
void ka_heartbeat_attach(struct ka_heartbeat *hb);

/* What the monitor knows of one PMD. */
struct ka_status {
    unsigned pmd;
    int tid;              /* 0: the PMD has not attached */
    enum ka_state state;
    uint64_t beat;        /* the heartbeat value last seen */
    uint64_t silent_ns;   /* since the heartbeat last changed, at the last check */
    uint64_t stalls;      /* times the PMD went ALIVE -> STALLED */
};

struct ka;

/* Creates the heartbeat slots of n_pmds PMDs (1..KA_MAX_PMDS) and their
 * monitor state, interval_ms in KA_INTERVAL_MIN_MS..KA_INTERVAL_MAX_MS.
 * Returns 0, or -1 with the reason in err. */
int ka_create(unsigned n_pmds, uint32_t interval_ms, struct ka **out, char *err,
              size_t errlen);

/* Stops the monitor thread if it runs, frees everything. NULL is ignored. */
void ka_destroy(struct ka *ka);

/* PMD i's heartbeat slot, to hand to that PMD (valid until destroy). */
struct ka_heartbeat *ka_heartbeat(struct ka *ka, unsigned pmd);

/* Marks PMD i as having no rx queues (IDLE, never checked) or as polling
 * again (ALIVE, its silence counted from the next check). */
void ka_set_idle(struct ka *ka, unsigned pmd, bool idle);

/* Changes the interval (clamped to the limits); takes effect at the next
 * check. */
void ka_set_interval(struct ka *ka, uint32_t interval_ms);
uint32_t ka_interval_ms(struct ka *ka);

/* The state machine: reads every slot and moves each PMD's state as of
 * time now_ns (monotonic, never going back). The first check after create
 * (or after a PMD left IDLE) starts that PMD's count. */
void ka_check(struct ka *ka, uint64_t now_ns);

/* Copies the states of PMDs 0..n-1 (n at most the PMD count) as of the
 * last check. Any thread, any time. */
void ka_get_status(struct ka *ka, struct ka_status *st, unsigned n);

unsigned ka_n_pmds(const struct ka *ka);

/* The JSON form of a status array, for `ctl health` and the stats stream:
 * {"keepalive": {"interval_ms": I, "pmds": [{"pmd": 0, "tid": 1234,
 * "state": "ALIVE", "heartbeat": N, "silent_ms": M, "stalls": K}, ...]}}.
 * NULL when out of memory. */
json_t *ka_status_json(const struct ka_status *st, unsigned n, uint32_t interval_ms);

/* Starts the monitor thread ("fs-keepalive", every signal blocked): a
 * ka_check() on the monotonic clock KA_CHECKS_PER_INTERVAL times per
 * interval, every PMD's count starting afresh at the first (a restart
 * after ka_stop() reports no stall for the time it was stopped). Returns
 * 0 (also if it runs already) or -1 with err. */
int ka_start(struct ka *ka, char *err, size_t errlen);

/* Stops and joins the monitor thread; the states stay readable. */
void ka_stop(struct ka *ka);

#endif
