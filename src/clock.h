/* clock.h: the datapath's time source.
 *
 * The core never reads the system clock itself. A PMD context refreshes its
 * 'now' from a struct fs_clock once per poll iteration: monotonic time in
 * production, a virtual time driven by pcap timestamps in replay and sim.
 * Times are nanoseconds. */
#ifndef FS_CLOCK_H
#define FS_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

enum fs_clock_kind {
    FS_CLOCK_MONOTONIC,
    FS_CLOCK_VIRTUAL,
};

struct fs_clock {
    enum fs_clock_kind kind;
    uint64_t virt_now; /* FS_CLOCK_VIRTUAL: the current time */
};

void fs_clock_init(struct fs_clock *c, enum fs_clock_kind kind);

/* Current time in ns. */
uint64_t fs_clock_now(const struct fs_clock *c);

/* Virtual clocks only: moves time forward to t (never backwards). */
void fs_clock_advance(struct fs_clock *c, uint64_t t);

#define FS_NSEC_PER_USEC 1000ull
#define FS_NSEC_PER_SEC 1000000000ull

#endif
