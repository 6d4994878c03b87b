/* ctl_test.h: what the control socket tests share: a temporary run
 * directory, a toy command table, and a raw client that reads answers
 * with its own minimal parser (so the tests do not lean on the framing
 * code they check). Header-only: the helpers are static inline. */
#ifndef FS_TEST_CTL_TEST_H
#define FS_TEST_CTL_TEST_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl-server.h"

/* How long a test waits for something that should happen promptly: long
 * enough for valgrind and sanitizer builds on a loaded machine. */
#define CT_WAIT_MS 30000

/* ---- the toy command table -------------------------------------------------- */

struct ct_aux {
    int calls; /* touched by handlers only, on the server thread */
};

/* echo [WORD...]: the words, one per line (JSON: an array). */
static inline void ct_echo(void *aux, int argc, char *argv[], bool json,
                           struct ctl_answer *ans)
{
    ((struct ct_aux *)aux)->calls++;
    if (json) {
        json_t *a = json_array();
        for (int i = 1; i < argc; i++)
            json_array_append_new(a, json_string(argv[i]));
        ctl_answer_set_json(ans, a);
        return;
    }
    for (int i = 1; i < argc; i++)
        ctl_answer_printf(ans, "%s\n", argv[i]);
}

/* add A B: their sum. */
static inline void ct_add(void *aux, int argc, char *argv[], bool json,
                          struct ctl_answer *ans)
{
    (void)argc;
    (void)json;
    ((struct ct_aux *)aux)->calls++;
    char *e1, *e2;
    long a = strtol(argv[1], &e1, 10), b = strtol(argv[2], &e2, 10);
    if (*e1 || *e2 || !*argv[1] || !*argv[2]) {
        ctl_answer_error(ans, "add: not a number");
        return;
    }
    ctl_answer_printf(ans, "%ld\n", a + b);
}

/* big N: N spaces (and the '\n' the framing adds). */
static inline void ct_big(void *aux, int argc, char *argv[], bool json,
                          struct ctl_answer *ans)
{
    (void)aux;
    (void)argc;
    (void)json;
    ctl_answer_printf(ans, "%*s", atoi(argv[1]), "");
}

/* calls: how many echo/add requests ran before. */
static inline void ct_calls(void *aux, int argc, char *argv[], bool json,
                            struct ctl_answer *ans)
{
    (void)argc;
    (void)argv;
    (void)json;
    ctl_answer_printf(ans, "%d\n", ((struct ct_aux *)aux)->calls);
}

static const struct ctl_command ct_table[] = {
    {"echo", 0, CTL_ARGS_ANY, "[WORD...]", "answer the words, one per line", ct_echo},
    {"add", 2, 2, "A B", "answer A + B", ct_add},
    {"big", 1, 1, "N", "answer N bytes", ct_big},
    {"calls", 0, 0, "", "how many echo and add requests ran", ct_calls},
};
#define CT_N_TABLE (sizeof ct_table / sizeof ct_table[0])

/* ---- a run directory ---------------------------------------------------------- */

struct ct_dir {
    char root[32]; /* mkdtemp'd */
    char run[40];  /* root/run: the server's run directory */
    char sock[56]; /* root/run/fs.ctl */
};

static inline void ct_dir_make(struct ct_dir *d)
{
    snprintf(d->root, sizeof d->root, "/tmp/fs-ctl-test-XXXXXX");
    if (!mkdtemp(d->root)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(d->run, sizeof d->run, "%s/run", d->root);
    snprintf(d->sock, sizeof d->sock, "%s/fs.ctl", d->run);
}

static inline void ct_dir_remove(struct ct_dir *d)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d->root);
}

/* ---- a test fixture: a run directory and, once started, a toy server ------ */

struct ct_fx {
    struct ct_dir dir;
    struct ct_aux aux;
    struct ctl_server *srv;
};

/* cmocka setup: the directory only (a test starts the server itself). */
static inline int ct_fx_setup(void **state)
{
    struct ct_fx *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    ct_dir_make(&fx->dir);
    *state = fx;
    return 0;
}

static inline int ct_fx_teardown(void **state)
{
    struct ct_fx *fx = *state;
    ctl_server_destroy(fx->srv);
    ct_dir_remove(&fx->dir);
    free(fx);
    return 0;
}

/* Creates and starts the toy server at the fixture's socket; false (the
 * reason on stderr) if it cannot. */
static inline bool ct_fx_serve(struct ct_fx *fx, const struct ctl_server_options *opts)
{
    char err[256] = "";
    if (ctl_server_create(fx->dir.sock, ct_table, CT_N_TABLE, &fx->aux, opts, &fx->srv, err,
                          sizeof err) ||
        ctl_server_start(fx->srv, err, sizeof err)) {
        fprintf(stderr, "toy server: %s\n", err);
        return false;
    }
    return true;
}

/* ---- a raw client ---------------------------------------------------------------- */

static inline int ct_connect(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Sends all of s; false if the peer is gone. */
static inline bool ct_send(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}

static inline bool ct_send_str(int fd, const char *s)
{
    return ct_send(fd, s, strlen(s));
}

/* Reads one byte within CT_WAIT_MS: 1, 0 at EOF (or ECONNRESET), -1 on
 * timeout or error. */
static inline int ct_read_byte(int fd, char *c)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, CT_WAIT_MS) != 1)
        return -1;
    ssize_t r = recv(fd, c, 1, 0);
    if (r == 1)
        return 1;
    if (r == 0 || errno == ECONNRESET)
        return 0;
    return -1;
}

/* One answer: "OK"/"ERR", the length in the header, and the body. */
struct ct_answer {
    bool ok;
    char status[8];
    char *body; /* malloc'd, NUL-terminated */
    size_t len;
};

/* Reads one answer (header line, then the announced bytes); ok false on
 * EOF, timeout or a header that is not "WORD N". */
static inline struct ct_answer ct_read_answer(int fd)
{
    struct ct_answer a = {0};
    char hdr[32];
    size_t n = 0;
    for (;;) {
        char c;
        if (n == sizeof hdr - 1 || ct_read_byte(fd, &c) != 1)
            return a;
        if (c == '\n')
            break;
        hdr[n++] = c;
    }
    hdr[n] = '\0';
    unsigned long len;
    char extra;
    if (sscanf(hdr, "%7s %lu%c", a.status, &len, &extra) != 2)
        return a;
    a.body = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        if (ct_read_byte(fd, &a.body[i]) != 1)
            return a;
    a.body[len] = '\0';
    a.len = len;
    a.ok = true;
    return a;
}

/* Reads until EOF; returns the bytes read, or -1 on timeout. */
static inline long ct_read_to_eof(int fd)
{
    long total = 0;
    char buf[65536];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, CT_WAIT_MS) != 1)
            return -1;
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return total;
        if (r < 0)
            return -1;
        total += r;
    }
}

/* Sends a request line and reads its answer on one connection. */
static inline struct ct_answer ct_ask(int fd, const char *line)
{
    struct ct_answer a = {0};
    if (!ct_send_str(fd, line))
        return a;
    return ct_read_answer(fd);
}

static inline void ct_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

#endif
