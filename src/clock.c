/* clock.c: monotonic and virtual time sources. */
#include "clock.h"

#include <time.h>

void fs_clock_init(struct fs_clock *c, enum fs_clock_kind kind)
{
    c->kind = kind;
    c->virt_now = 0;
}

uint64_t fs_clock_now(const struct fs_clock *c)
{
    if (c->kind == FS_CLOCK_VIRTUAL)
        return c->virt_now;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * FS_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void fs_clock_advance(struct fs_clock *c, uint64_t t)
{
    if (t > c->virt_now)
        c->virt_now = t;
}
