/* jobs.c: points run in child processes (jobs.h). Each child is forked
 * with the parent's state (scenario paths, settings), runs one point and
 * writes back through a pipe: its status, its error text and its result
 * bytes. The parent keeps a window of at most N children and reads them
 * oldest first, so results and the first error come in point order
 * whatever finishes first. */
#include "jobs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
