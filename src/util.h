/* util.h: small helpers every module shares. */
#ifndef FS_UTIL_H
#define FS_UTIL_H

#include <stddef.h>

/* Formats a one-line error into err[0..errlen) (nothing if err is NULL or
 * errlen is 0): the "char *err, size_t errlen" convention of every API here. */
void fs_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Creates 'path' and its missing parents (mode 0777 before umask). Returns
 * 0 (also if it exists) or -errno. */
int fs_mkdir_p(const char *path);

#endif
