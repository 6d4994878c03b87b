/* util.h: small helpers every module shares. */
#ifndef FS_UTIL_H
#define FS_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Formats a one-line error into err[0..errlen) (nothing if err is NULL or
 * errlen is 0): the "char *err, size_t errlen" convention of every API here. */
void fs_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses a non-negative decimal integer (digits only: no sign, no blanks,
 * no base prefix) in [min, max] into *out. False, *out untouched, for
 * anything else, overflow included: the config file's and the knobs'
 * number syntax. */
bool fs_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* Makes the array *arr (of elem-byte elements, room for *cap of them) hold
 * at least need elements: the capacity doubles, from 'first' for an empty
 * array, until it does, and the contents are kept (the new elements are
 * uninitialised). Returns 0 (nothing done if *cap >= need already), or -1,
 * *arr and *cap unchanged, when the new capacity or its size in bytes
 * (cap * 2 * elem) would overflow a size_t or realloc fails. */
int fs_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);

/* Time units: every time in the datapath is in nanoseconds. */
#define FS_NSEC_PER_USEC 1000ull
#define FS_NSEC_PER_MSEC 1000000ull
#define FS_NSEC_PER_SEC 1000000000ull

/* Zeroed, 64-byte aligned memory for large tables. Blocks of 2 MiB or
 * more are mapped on their own, 2 MiB aligned and advised for transparent
 * huge pages (an 8 MiB table then costs 4 dTLB entries), and their pages
 * are faulted in only when first touched. Release with fs_free_big() and
 * the same size. NULL on failure. */
void *fs_alloc_big(size_t bytes);
void fs_free_big(void *p, size_t bytes);

#endif
