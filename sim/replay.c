/* replay.c: the replay engine. */
#include "replay.h"

#include <inttypes.h>

#include "util.h"
#include "vclock.h"

/* The earliest pending rx time over every port, UINT64_MAX if none; stops
 * polling ports with nothing left to replay. */
static uint64_t replay_next_rx_time(struct dp *dp)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < dp_n_ports(dp); i++) {
        struct dp_port_info p;
        dp_port_get(dp, i, &p);
        if (!p.dev || p.rx_stopped)
            continue;
        unsigned nq = netdev_n_rxq(p.dev);
        bool pending = false;
        for (unsigned q = 0; q < nq; q++) {
            uint64_t ts;
            if (netdev_rxq_peek(p.dev, q, &ts) == NETDEV_RX_READY) {
                pending = true;
                if (ts < next)
                    next = ts;
            }
        }
        /* A live source (EMPTY) has nothing to replay: done too. */
        if (!pending)
            dp_port_rx_stop(dp, (uint16_t)i);
    }
    return next;
}

/* Applies the scripted changes due at 'now'; the PMD takes them at its
 * next poll, after flushing what it queued before them. */
static int replay_changes(struct sim_replay *r, struct dp *dp, size_t *next, uint64_t now,
                          char *err, size_t errlen)
{
    while (*next < r->n_changes && r->changes[*next].time_ns <= now) {
        const struct sim_change *ch = &r->changes[*next];
        struct dp_rule_edit e = {
            .clear = ch->clear,
            .del = ch->del,
            .n_del = ch->n_del,
            .add = ch->add,
            .n_add = ch->n_add,
        };
        if ((e.clear || e.n_del || e.n_add) && dp_rules_apply(dp, &e, r->origin, err, errlen))
            return -1;
        if (ch->tx_flush_interval_us >= 0) {
            char v[32];
            snprintf(v, sizeof v, "%" PRId64, ch->tx_flush_interval_us);
            if (dp_knob_update(dp, "tx-flush-interval", v, err, errlen))
                return -1;
        }
        r->changes_applied++;
        (*next)++;
    }
    return 0;
}

/* The replay models a PMD that polls back to back, each iteration taking
 * iteration_ns (P) of virtual time: after a poll at t the next poll is at
 * t + P, and receives every frame stamped up to then. When the next frame
 * is later than that, the poll at t + P finds nothing and, being idle,
 * flushes everything queued; the clock then jumps to the frame. With P = 0
 * a poll takes no time: frames sharing a timestamp form rx batches and the
 * PMD goes idle between timestamps. */
int sim_replay_run(struct sim_replay *r, struct dp *dp, struct dp_pmd *pmd, char *err,
                   size_t errlen)
{
    uint64_t iter = r->iteration_ns;
    bool polled = false;
    size_t next_change = 0;
    struct sim_clock clk;

    sim_clock_init(&clk);
    r->changes_applied = 0;
    dp_pmd_set_drain(pmd, true);
    for (;;) {
        uint64_t next = replay_next_rx_time(dp);
        if (next == UINT64_MAX)
            break;
        uint64_t now = sim_clock_now(&clk);
        uint64_t t = next;
        if (polled) {
            if (next > now + iter && dp_pmd_queued(pmd)) {
                sim_clock_advance(&clk, now + iter);
                dp_pmd_poll(pmd, now + iter); /* idle: flushes */
            }
            if (t < now + iter)
                t = now + iter;
        }
        sim_clock_advance(&clk, t);
        if (replay_changes(r, dp, &next_change, sim_clock_now(&clk), err, errlen))
            return -1;
        if (dp_pmd_poll(pmd, sim_clock_now(&clk)) == 0) {
            /* A backend announced a frame it does not deliver: stop rather
             * than spin. */
            if (r->diag)
                fprintf(r->diag, "flowswitch: replay stalled at t=%" PRIu64 " ns\n", next);
            break;
        }
        polled = true;
    }
    /* The last iteration is followed by an idle one (and shutdown). */
    uint64_t now = sim_clock_now(&clk);
    if (polled)
        sim_clock_advance(&clk, now + iter);
    r->end_ns = sim_clock_now(&clk);
    dp_pmd_flush(pmd, r->end_ns);
    dp_rules_reclaim(dp);

    int rc = 0;
    for (unsigned i = 0; i < dp_n_ports(dp); i++) {
        struct dp_port_info p;
        dp_port_get(dp, i, &p);
        if (p.dev && netdev_rx_error(p.dev))
            rc = 1;
    }
    return rc;
}
