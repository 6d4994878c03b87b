/* jobs.h: independent points (of a sweep or an experiment) run in up to N
 * child processes at once, their results gathered in point order, so the
 * output does not depend on N (jobs.c). No scheduler: one machine's CPUs. */
#ifndef FS_JOBS_H
#define FS_JOBS_H

#include <stddef.h>

/* Point i's work: fills 'out' (the point's 'size' bytes of the results,
 * plain data without pointers: a child sends it back as bytes) and returns
 * 0, or -1 with the reason in err. */
typedef int jobs_fn(void *aux, size_t i, void *out, char *err, size_t errlen);

/* The number of online CPUs (at least 1): the default of --jobs. */
unsigned jobs_default(void);

/* Parses a --jobs value (1..1024) into *n. Returns 0 or -1. */
int jobs_parse(const char *s, unsigned *n);

/* Runs fn for the points 0..n, at most n_jobs at a time in child
 * processes (n_jobs <= 1, or one point: in this process, in order);
 * point i's result lands at results + i * size. Stops starting points
 * after a failure. Returns 0, or -1 with "point I: reason" (the first
 * failed point's) in err and its index in *failed. */
int jobs_run(size_t n, unsigned n_jobs, jobs_fn *fn, void *aux, void *results, size_t size,
             size_t *failed, char *err, size_t errlen);

#endif
