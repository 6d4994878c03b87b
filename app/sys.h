/* sys.h: the system services of the application layer, each read in one
 * place: the monotonic clock, the cycle counter, directories, memory
 * aligned to cache lines. */
#ifndef FS_SYS_H
#define FS_SYS_H

#include <stddef.h>
#include <stdint.h>

/* Cache line of the target: per-thread data is padded to it. */
#if defined(__aarch64__) || defined(__powerpc64__)
#define FS_CACHE_LINE 128
#else
#define FS_CACHE_LINE 64
/* Zeroed memory aligned to FS_CACHE_LINE, its size rounded up to whole
 * lines (so no neighbour shares its last line); NULL if out of memory.
 * Free with fs_aligned_free() only. */
void *fs_aligned_alloc(size_t size);
void fs_aligned_free(void *p);

#endif

/* Monotonic time in ns (CLOCK_MONOTONIC). */
uint64_t fs_mono_ns(void);

/* The counter used for cycle accounting: the TSC on x86, else ns. */
uint64_t fs_cycles(void);

/* Creates 'path' and its missing parents (mode 0777 before umask). Returns
 * 0 (also if it exists) or -errno. */
int fs_mkdir_p(const char *path);

/* Zeroed memory aligned to FS_CACHE_LINE, its size rounded up to whole
 * lines (so no neighbour shares its last line); NULL if out of memory.
 * Free with fs_aligned_free() only. */
void *fs_aligned_alloc(size_t size);
void fs_aligned_free(void *p);

#endif
