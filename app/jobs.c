/* jobs.c: points run in child processes (jobs.h). Each child is forked
 * with the parent's state (scenario paths, settings), runs one point and
 * writes back through a pipe: its status, its error text and its result
 * bytes. The parent keeps a window of at most N children and reads them
 * oldest first, so results and the first error come in point order
 * whatever finishes first. */
#include "jobs.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exp.h"
#include "util.h"

#define JOBS_MAX 1024
#define JOBS_ERR_LEN 2048

/* What a child sends before the result bytes. */
struct jobs_msg {
    int rc;
    char err[JOBS_ERR_LEN];
};

struct jobs_child {
    pid_t pid;
    int fd;                 /* read end of its pipe */
    size_t point;
};

unsigned jobs_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > JOBS_MAX ? JOBS_MAX : (unsigned)n;
}

int jobs_parse(const char *s, unsigned *n)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno || v < 1 || v > JOBS_MAX)
        return -1;
    *n = (unsigned)v;
    return 0;
}

void jobs_command(const char *prefix, int argc, char **argv, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "%s", prefix);
    static const char *const skip[] = {"--jobs", "--emit-commands"};
    for (int i = 0; i < argc && n < size; i++) {
        bool drop = false;
        for (size_t k = 0; k < 2 && !drop; k++) {
            size_t len = strlen(skip[k]);
            if (!strcmp(argv[i], skip[k]) && i + 1 < argc)
                drop = ++i;
            else
                drop = !strncmp(argv[i], skip[k], len) && argv[i][len] == '=';
        }
        if (!drop)
            n += (size_t)snprintf(buf + n, size - n, " %s", argv[i]);
    }
}

static int jobs_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static size_t jobs_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* Forks the child of point i; it never returns into the caller's code. */
static int jobs_start(struct jobs_child *ch, size_t i, jobs_fn *fn, void *aux, void *results,
                      size_t size, char *err, size_t errlen)
{
    int fds[2];
    if (pipe(fds)) {
        fs_errf(err, errlen, "point %zu: pipe: %s", i, strerror(errno));
        return -1;
    }
    fflush(NULL);           /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        fs_errf(err, errlen, "point %zu: fork: %s", i, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        static struct jobs_msg msg;
        void *out = (char *)results + i * size;
        msg.rc = fn(aux, i, out, msg.err, sizeof msg.err);
        int bad = jobs_write_all(fds[1], &msg, sizeof msg) ||
                  jobs_write_all(fds[1], out, size);
        _exit(bad ? 3 : 0);
    }
    close(fds[1]);
    *ch = (struct jobs_child){.pid = pid, .fd = fds[0], .point = i};
    return 0;
}

/* Reads child ch's answer into its point's result and reaps it. */
static int jobs_finish(struct jobs_child *ch, void *results, size_t size, char *err,
                       size_t errlen)
{
    static struct jobs_msg msg;
    void *out = (char *)results + ch->point * size;
    size_t got = jobs_read_all(ch->fd, &msg, sizeof msg);
    if (got == sizeof msg && msg.rc == 0)
        got += jobs_read_all(ch->fd, out, size);
    close(ch->fd);
    int status = 0;
    while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got >= sizeof msg && msg.rc) {
        msg.err[sizeof msg.err - 1] = '\0';
        fs_errf(err, errlen, "point %zu: %s", ch->point, msg.err);
        return -1;
    }
    if (got != sizeof msg + size || !WIFEXITED(status) || WEXITSTATUS(status)) {
        if (WIFSIGNALED(status))
            fs_errf(err, errlen, "point %zu: its process died of signal %d", ch->point,
                    WTERMSIG(status));
        else
            fs_errf(err, errlen, "point %zu: its process gave no result", ch->point);
        return -1;
    }
    return 0;
}

static int jobs_serial(size_t n, jobs_fn *fn, void *aux, void *results, size_t size,
                       size_t *failed, char *err, size_t errlen)
{
    char why[JOBS_ERR_LEN];
    for (size_t i = 0; i < n; i++) {
        if (fn(aux, i, (char *)results + i * size, why, sizeof why)) {
            fs_errf(err, errlen, "point %zu: %s", i, why);
            *failed = i;
            return -1;
        }
    }
    return 0;
}

int jobs_run(size_t n, unsigned n_jobs, jobs_fn *fn, void *aux, void *results, size_t size,
             size_t *failed, char *err, size_t errlen)
{
    if (n_jobs <= 1 || n <= 1)
        return jobs_serial(n, fn, aux, results, size, failed, err, errlen);
    if (n_jobs > n)
        n_jobs = (unsigned)n;
    struct jobs_child *win = calloc(n_jobs, sizeof *win);
    if (!win) {
        fs_errf(err, errlen, "out of memory");
        *failed = 0;
        return -1;
    }
    size_t next = 0, head = 0, running = 0;
    int rc = 0;
    /* A ring of children in point order: start while there is room and
     * no failure, then finish the oldest. */
    while (running || (rc == 0 && next < n)) {
        while (rc == 0 && next < n && running < n_jobs) {
            struct jobs_child *ch = &win[(head + running) % n_jobs];
            if (jobs_start(ch, next, fn, aux, results, size, err, errlen)) {
                *failed = next;
                rc = -1;
                break;
            }
            next++;
            running++;
        }
        if (!running)
            break;
        struct jobs_child *old = &win[head];
        char why[JOBS_ERR_LEN + 64];
        if (jobs_finish(old, results, size, why, sizeof why) && rc == 0) {
            snprintf(err, errlen, "%s", why);
            *failed = old->point;
            rc = -1;
        }
        head = (head + 1) % n_jobs;
        running--;
    }
    free(win);
    return rc;
}

/* ---- a queue of exp_run_point() calls -------------------------------------------- */

struct jobs_point {
    size_t point;           /* in the table */
    char *path;
    char **sets;
    size_t n_sets;
    bool steady;            /* then exp_check_steady() after the run */
};

static void jobs_point_free(struct jobs_point *p)
{
    for (size_t i = 0; i < p->n_sets; i++)
        free(p->sets[i]);
    free(p->sets);
    free(p->path);
}

int jobs_points_add(struct jobs_points *jp, size_t point, const char *path,
                    const char *const *sets, size_t n_sets, bool steady)
{
    if (fs_grow((void **)&jp->q, &jp->cap, jp->n + 1, sizeof *jp->q, 16))
        return -1;
    struct jobs_point *p = &jp->q[jp->n];
    *p = (struct jobs_point){.point = point, .steady = steady, .path = strdup(path),
                             .sets = calloc(n_sets ? n_sets : 1, sizeof *p->sets)};
    bool ok = p->path && p->sets;
    for (size_t i = 0; ok && i < n_sets; i++, p->n_sets++)
        ok = (p->sets[i] = strdup(sets[i])) != NULL;
    if (!ok) {
        jobs_point_free(p);
        return -1;
    }
    jp->n++;
    return 0;
}

/* jobs_fn: queued point i into out (a copy of its table point). */
static int jobs_point_run(void *aux, size_t i, void *out, char *err, size_t errlen)
{
    const struct jobs_points *jp = aux;
    const struct jobs_point *p = &jp->q[i];
    const char *const *sets = (const char *const *)p->sets;
    if (exp_run_point(p->path, sets, p->n_sets, out, err, errlen))
        return -1;
    return p->steady ? exp_check_steady(p->path, sets, p->n_sets, out, err, errlen) : 0;
}

void jobs_point_name(const struct exp_table *t, size_t i, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < t->n_params && n < size; k++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s=%s", k ? ", " : "", t->param_name[k],
                              t->points[i].param[k]);
}

int jobs_points_run(struct jobs_points *jp, unsigned n_jobs, char *err, size_t errlen)
{
    int rc = 0;
    struct exp_point *res = jp->n ? calloc(jp->n, sizeof *res) : NULL;
    if (jp->n && !res) {
        fs_errf(err, errlen, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; res && i < jp->n; i++)
        res[i] = jp->t->points[jp->q[i].point];
    size_t failed = 0;
    char why[JOBS_ERR_LEN + 64], name[1024];
    if (res && jobs_run(jp->n, n_jobs, jobs_point_run, jp, res, sizeof *res, &failed, why,
                        sizeof why)) {
        size_t pt = jp->q[failed].point;
        jobs_point_name(jp->t, pt, name, sizeof name);
        /* why is "point I: reason" with I in the queue: name the table's */
        const char *reason = strchr(why, ':');
        fs_errf(err, errlen, "point %zu (%s)%s", pt, name, reason ? reason : why);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < jp->n; i++)
        jp->t->points[jp->q[i].point] = res[i];
    free(res);
    for (size_t i = 0; i < jp->n; i++)
        jobs_point_free(&jp->q[i]);
    jp->n = 0;
    return rc;
}

void jobs_points_free(struct jobs_points *jp)
{
    for (size_t i = 0; i < jp->n; i++)
        jobs_point_free(&jp->q[i]);
    free(jp->q);
    jp->q = NULL;
    jp->n = jp->cap = 0;
}
