/* sys.c: monotonic clock, cycle counter, mkdir -p, aligned memory. */
#include "sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FS_HAVE_TSC 1
#else
#define FS_HAVE_TSC 0
#endif

#include "util.h"

uint64_t fs_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * FS_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t fs_cycles(void)
{
#if FS_HAVE_TSC
    return __rdtsc();
#else
    return fs_mono_ns();
#endif
}

int fs_mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return -errno;
    return 0;
}

/* posix_memalign keeps its own bookkeeping, so the pointer it returns is
 * the one free() takes: no offset games. */
void *fs_aligned_alloc(size_t size)
{
    size_t lines = size / FS_CACHE_LINE + (size % FS_CACHE_LINE != 0);
    if (lines == 0)
        lines = 1;
    if (lines > SIZE_MAX / FS_CACHE_LINE)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, FS_CACHE_LINE, lines * FS_CACHE_LINE) != 0)
        return NULL;
    memset(p, 0, lines * FS_CACHE_LINE);
    return p;
}

void fs_aligned_free(void *p)
{
    free(p);
}
