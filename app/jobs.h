/* jobs.h: independent points (of a sweep or an experiment) run in up to N
 * child processes at once, their results gathered in point order, so the
 * output does not depend on N (jobs.c). No scheduler: one machine's CPUs. */
#ifndef FS_JOBS_H
#define FS_JOBS_H

#include <stdbool.h>
#include <stddef.h>

/* Point i's work: fills 'out' (the point's 'size' bytes of the results,
 * plain data without pointers: a child sends it back as bytes) and returns
 * 0, or -1 with the reason in err. */
typedef int jobs_fn(void *aux, size_t i, void *out, char *err, size_t errlen);

/* The number of online CPUs (at least 1): the default of --jobs. */
unsigned jobs_default(void);

/* Parses a --jobs value (1..1024) into *n. Returns 0 or -1. */
int jobs_parse(const char *s, unsigned *n);

/* The command line "PREFIX ARGV..." for a page, without --jobs and
 * --emit-commands (and their values): how the points ran does not change
 * the page, so every way writes the same bytes. */
void jobs_command(const char *prefix, int argc, char **argv, char *buf, size_t size);

/* Runs fn for the points 0..n, at most n_jobs at a time in child
 * processes (n_jobs <= 1, or one point: in this process, in order);
 * point i's result lands at results + i * size. Stops starting points
 * after a failure. Returns 0, or -1 with "point I: reason" (the first
 * failed point's) in err and its index in *failed. */
int jobs_run(size_t n, unsigned n_jobs, jobs_fn *fn, void *aux, void *results, size_t size,
             size_t *failed, char *err, size_t errlen);


/* ---- a queue of exp_run_point() calls (exp.h) ------------------------------------ */

struct exp_table;

/* Points of a table to simulate, queued in the order they were added to
 * it and run together by jobs_points_run(): an experiment queues its grid,
 * runs it, then derives its relative figures from the table. */
struct jobs_points {
    struct exp_table *t;
    struct jobs_point *q;
    size_t n, cap;
};

/* Queues point 'point' of jp->t: scenario 'path' with the overrides
 * sets[0..n_sets) (copied), and its steady-state check (exp_check_steady())
 * if 'steady'. Returns 0, or -1 if out of memory. */
int jobs_points_add(struct jobs_points *jp, size_t point, const char *path,
                    const char *const *sets, size_t n_sets, bool steady);

/* Runs the queued points n_jobs at a time (jobs_run()), fills their
 * figures in jp->t and empties the queue. Returns 0, or -1 with "point I
 * (NAME=VALUE, ...): reason" in err. */
int jobs_points_run(struct jobs_points *jp, unsigned n_jobs, char *err, size_t errlen);

void jobs_points_free(struct jobs_points *jp);

/* "NAME=VALUE, ..." of point i of table t (its parameters), for errors. */
void jobs_point_name(const struct exp_table *t, size_t i, char *buf, size_t size);

#endif
