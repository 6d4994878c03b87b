/* sys.h: the system services of the application layer, each read in one
 * place: the monotonic clock, the cycle counter, directories. */
#ifndef FS_SYS_H
#define FS_SYS_H

#include <stdint.h>

/* Monotonic time in ns (CLOCK_MONOTONIC). */
uint64_t fs_mono_ns(void);

/* The counter used for cycle accounting: the TSC on x86, else ns. */
uint64_t fs_cycles(void);

/* Creates 'path' and its missing parents (mode 0777 before umask). Returns
 * 0 (also if it exists) or -errno. */
int fs_mkdir_p(const char *path);

#endif
