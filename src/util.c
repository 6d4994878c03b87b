/* util.c: small helpers every module shares. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>

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
