/* util.c: small helpers every module shares. */
#include "util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void fs_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

bool fs_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    if (*s < '0' || *s > '9')
        return false;
    unsigned long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10 || d > max)
            return false;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

int fs_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    if (!elem)
        return -1;
    size_t n = *cap ? *cap : (first ? first : 1);
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / elem)
        return -1;
    /* Through memcpy: *arr is an array pointer of the caller's type. */
    void *old;
    memcpy(&old, arr, sizeof old);
    void *p = realloc(old, n * elem);
    if (!p)
        return -1;
    memcpy(arr, &p, sizeof p);
    *cap = n;
    return 0;
}

#define FS_HUGE (2u << 20)

static size_t fs_big_len(size_t bytes)
{
    return (bytes + FS_HUGE - 1) & ~(size_t)(FS_HUGE - 1);
}

void *fs_alloc_big(size_t bytes)
{
    if (bytes < FS_HUGE) {
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes ? bytes : 64))
            return NULL;
        memset(p, 0, bytes);
        return p;
    }
    /* Map one huge page more than needed, keep the aligned part. */
    size_t len = fs_big_len(bytes);
    uint8_t *map = mmap(NULL, len + FS_HUGE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)map + FS_HUGE - 1) & ~(uintptr_t)(FS_HUGE - 1);
    uint8_t *p = (uint8_t *)a;
    size_t head = (size_t)(p - map);
    if (head)
        munmap(map, head);
    if (FS_HUGE - head)
        munmap(p + len, FS_HUGE - head);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

void fs_free_big(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < FS_HUGE)
        free(p);
    else
        munmap(p, fs_big_len(bytes));
}
