/* vclock.h: virtual time for replays and simulations.
 *
 * The datapath never reads a clock itself: whoever drives a PMD passes it
 * 'now'. In replay and simulation that time is virtual, moved forward by
 * the pcap timestamps and the simulated events, so runs are reproducible
 * bit for bit. Times are nanoseconds. */
#ifndef FS_VCLOCK_H
#define FS_VCLOCK_H

#include <stdint.h>

struct sim_clock {
    uint64_t now;
};

static inline void sim_clock_init(struct sim_clock *c)
{
    c->now = 0;
}

static inline uint64_t sim_clock_now(const struct sim_clock *c)
{
    return c->now;
}

/* Moves time forward to t (never backwards). */
static inline void sim_clock_advance(struct sim_clock *c, uint64_t t)
{
    if (t > c->now)
        c->now = t;
}

#endif
