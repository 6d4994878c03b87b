/* ctl-server.c: the control socket server. */
#define _GNU_SOURCE /* accept4 */
#include "ctl-server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sys.h"
#include "ctl-thread.h"
#include "util.h"

#define CTL_DEFAULT_MAX_CLIENTS 64
#define CTL_MAX_CLIENTS_LIMIT 4096
#define CTL_DEFAULT_IO_TIMEOUT_MS 5000
#define CTL_BACKLOG 128
#define CTL_READ_CHUNK 4096
/* A client's input buffer doubles from one chunk, so it reaches
 * CTL_REQUEST_MAX exactly and never more. */
#define CTL_READ_STEPS (CTL_REQUEST_MAX / CTL_READ_CHUNK)
_Static_assert(CTL_REQUEST_MAX % CTL_READ_CHUNK == 0 &&
                   (CTL_READ_STEPS & (CTL_READ_STEPS - 1)) == 0,
               "CTL_REQUEST_MAX is CTL_READ_CHUNK times a power of two");
/* How long the server stops accepting after accept() failed for want of
 * descriptors or memory (instead of spinning on a readable listener). */
#define CTL_ACCEPT_PAUSE_NS (100 * 1000 * 1000ull)

struct ctl_client {
    int fd;
    char *in; /* request bytes not yet served */
    size_t in_len, in_cap;
    char *out; /* the framed answer being written */
    size_t out_len, out_off;
    bool peer_eof;    /* the client shut down its sending side */
    bool closing;     /* close once the answer is written */
    uint64_t progress_ns; /* last read, write or answer */
};

struct ctl_counters {
    _Atomic uint64_t accepted, refused, requests, errors, malformed, oversized,
        dropped_partial, dropped_slow;
};

struct ctl_server {
    char *path;
    int lock_fd; /* PATH.lock, flock()ed for the server's lifetime */
    int listen_fd;
    int wake[2]; /* a byte on wake[1] tells the thread to stop */
    dev_t dev;   /* the socket file this server bound */
    ino_t ino;
    const struct ctl_command *table;
    size_t n_commands;
    void *aux;
    unsigned max_clients;
    uint64_t io_timeout_ns;
    struct ctl_client *clients; /* [max_clients], n_clients in use */
    size_t n_clients;
    struct pollfd *pfds; /* [max_clients + 2] */
    uint64_t accept_resume_ns;
    pthread_t thread;
    bool running;
    struct ctl_counters ctr;
};

static void ctl_count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- built-in commands --------------------------------------------------- */

static void ctl_cmd_help(void *aux, int argc, char *argv[], bool json,
                         struct ctl_answer *ans);
static void ctl_cmd_version(void *aux, int argc, char *argv[], bool json,
                            struct ctl_answer *ans);

static const struct ctl_command ctl_builtins[] = {
    {"help", 0, 0, "", "list the commands", ctl_cmd_help},
    {"version", 0, 0, "", "show the flowswitch version", ctl_cmd_version},
};
#define CTL_N_BUILTINS (sizeof ctl_builtins / sizeof ctl_builtins[0])

static void ctl_help_add(const struct ctl_command *c, bool json, json_t *list,
                         struct ctl_answer *ans)
{
    if (json) {
        json_t *max = c->max_args == CTL_ARGS_ANY ? json_null() : json_integer(c->max_args);
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:i, s:o}", "name", c->name,
                                              "usage", c->usage, "help", c->help,
                                              "min_args", c->min_args, "max_args", max));
        return;
    }
    char synopsis[256];
    snprintf(synopsis, sizeof synopsis, "%s%s%s", c->name, *c->usage ? " " : "", c->usage);
    if (strlen(synopsis) < 30)
        ctl_answer_printf(ans, "  %-30s %s\n", synopsis, c->help);
    else
        ctl_answer_printf(ans, "  %s\n  %-30s %s\n", synopsis, "", c->help);
}

static void ctl_cmd_help(void *aux, int argc, char *argv[], bool json,
                         struct ctl_answer *ans)
{
    const struct ctl_server *srv = aux;
    (void)argc;
    (void)argv;
    json_t *list = json ? json_array() : NULL;
    if (!json)
        ctl_answer_printf(ans, "Commands (flowswitch ctl [--json] COMMAND [ARGS]):\n");
    for (size_t i = 0; i < CTL_N_BUILTINS; i++)
        ctl_help_add(&ctl_builtins[i], json, list, ans);
    for (size_t i = 0; i < srv->n_commands; i++)
        ctl_help_add(&srv->table[i], json, list, ans);
    if (json)
        ctl_answer_set_json(ans, list ? json_pack("{s:o}", "commands", list) : NULL);
}

static void ctl_cmd_version(void *aux, int argc, char *argv[], bool json,
                            struct ctl_answer *ans)
{
    (void)aux;
    (void)argc;
    (void)argv;
    if (json)
        ctl_answer_set_json(ans, json_pack("{s:s}", "version", FS_VERSION));
    else
        ctl_answer_printf(ans, "flowswitch %s\n", FS_VERSION);
}

/* ---- requests ------------------------------------------------------------ */

static const struct ctl_command *ctl_lookup(const struct ctl_server *srv, const char *name,
                                            bool *builtin)
{
    for (size_t i = 0; i < CTL_N_BUILTINS; i++) {
        if (!strcmp(ctl_builtins[i].name, name)) {
            *builtin = true;
            return &ctl_builtins[i];
        }
    }
    for (size_t i = 0; i < srv->n_commands; i++) {
        if (!strcmp(srv->table[i].name, name)) {
            *builtin = false;
            return &srv->table[i];
        }
    }
    return NULL;
}

static void ctl_dispatch(struct ctl_server *srv, const struct ctl_request *req,
                         struct ctl_answer *ans)
{
    const char *name = req->argv[0];
    bool builtin = false;
    const struct ctl_command *c = ctl_lookup(srv, name, &builtin);
    if (!c) {
        ctl_answer_error(ans, "unknown command '%s' (try 'help')", name);
        return;
    }
    int n = req->argc - 1;
    if (n < c->min_args || (c->max_args != CTL_ARGS_ANY && n > c->max_args)) {
        char want[64];
        if (c->max_args == c->min_args)
            snprintf(want, sizeof want, "%d argument%s", c->min_args,
                     c->min_args == 1 ? "" : "s");
        else if (c->max_args == CTL_ARGS_ANY)
            snprintf(want, sizeof want, "at least %d argument%s", c->min_args,
                     c->min_args == 1 ? "" : "s");
        else
            snprintf(want, sizeof want, "%d to %d arguments", c->min_args, c->max_args);
        ctl_answer_error(ans, "'%s' takes %s, not %d (usage: %s%s%s)", c->name, want, n,
                         c->name, *c->usage ? " " : "", c->usage);
        return;
    }
    c->handler(builtin ? (void *)srv : srv->aux, req->argc, req->argv, req->json, ans);
}

/* ---- clients ------------------------------------------------------------- */

static void ctl_client_close(struct ctl_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->in);
    free(c->out);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

/* Queues a framed answer (taken) and tries to write it at once. */
static void ctl_client_queue(struct ctl_client *c, char *frame, size_t len, uint64_t now)
{
    c->out = frame;
    c->out_len = len;
    c->out_off = 0;
    c->progress_ns = now;
}

/* Writes what the socket takes of the pending answer. When all of it is
 * written the answer is freed, and a closing client is closed. */
static void ctl_client_flush(struct ctl_client *c, uint64_t now)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            c->out_off += (size_t)w;
            c->progress_ns = now;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            ctl_client_close(c); /* the client is gone */
            return;
        }
    }
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    if (c->closing)
        ctl_client_close(c);
}

/* Parses and runs the request line[0..len) and queues its answer. */
static void ctl_serve(struct ctl_server *srv, struct ctl_client *c, const char *line,
                      size_t len, uint64_t now)
{
    struct ctl_request req;
    struct ctl_answer ans;
    char err[256];
    ctl_answer_init(&ans);
    if (ctl_request_parse(line, len, &req, err, sizeof err)) {
        ctl_count(&srv->ctr.malformed);
        ctl_answer_error(&ans, "malformed request: %s", err);
    } else {
        ctl_dispatch(srv, &req, &ans);
    }
    size_t flen;
    char *frame = ctl_answer_frame(&ans, req.json, &flen);
    ctl_request_free(&req);
    ctl_answer_destroy(&ans);
    ctl_count(&srv->ctr.requests);
    if (!frame) {
        ctl_count(&srv->ctr.errors);
        ctl_client_close(c); /* out of memory: nothing to tell it with */
        return;
    }
    if (frame[0] == 'E')
        ctl_count(&srv->ctr.errors);
    ctl_client_queue(c, frame, flen, now);
}

/* Answers "reason" as an error in text form, then closes the client. */
static void ctl_client_refuse(struct ctl_client *c, const char *reason, uint64_t now)
{
    struct ctl_answer ans;
    ctl_answer_init(&ans);
    ctl_answer_error(&ans, "%s", reason);
    size_t flen;
    char *frame = ctl_answer_frame(&ans, false, &flen);
    ctl_answer_destroy(&ans);
    if (!frame) {
        ctl_client_close(c);
        return;
    }
    ctl_client_queue(c, frame, flen, now);
    c->closing = true;
    ctl_client_flush(c, now);
}

/* Serves the complete requests in the client's buffer, one answer at a
 * time: stops while an answer is pending. */
static void ctl_client_process(struct ctl_server *srv, struct ctl_client *c, uint64_t now)
{
    while (c->fd >= 0 && !c->out_len && !c->closing) {
        size_t line_len = 0, used = 0;
        switch (ctl_request_scan(c->in, c->in_len, &line_len, &used)) {
        case CTL_SCAN_LINE:
            ctl_serve(srv, c, c->in, line_len, now);
            if (c->fd < 0)
                return;
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
            ctl_client_flush(c, now);
            break;
        case CTL_SCAN_OVERSIZED: {
            char reason[64];
            ctl_count(&srv->ctr.oversized);
            ctl_count(&srv->ctr.requests);
            ctl_count(&srv->ctr.errors);
            snprintf(reason, sizeof reason, "request longer than %d bytes",
                     CTL_REQUEST_MAX);
            c->in_len = 0;
            ctl_client_refuse(c, reason, now);
            return;
        }
        case CTL_SCAN_MORE:
            if (c->peer_eof) {
                if (c->in_len)
                    ctl_count(&srv->ctr.dropped_partial);
                ctl_client_close(c);
            }
            return;
        }
    }
}

/* Reads what the client sent (up to a full request buffer), then serves. */
static void ctl_client_read(struct ctl_server *srv, struct ctl_client *c, uint64_t now)
{
    while (!c->peer_eof && c->in_len < CTL_REQUEST_MAX) {
        if (c->in_len == c->in_cap &&
            fs_grow((void **)&c->in, &c->in_cap, c->in_len + 1, 1, CTL_READ_CHUNK)) {
            ctl_client_close(c);
            return;
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
        if (r > 0) {
            c->in_len += (size_t)r;
            c->progress_ns = now;
        } else if (r == 0) {
            c->peer_eof = true;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            if (c->in_len)
                ctl_count(&srv->ctr.dropped_partial);
            ctl_client_close(c);
            return;
        }
    }
    ctl_client_process(srv, c, now);
}

/* When a client that the server waits on must have made progress, or 0
 * when the server waits on nothing from it. */
static uint64_t ctl_client_deadline(const struct ctl_server *srv, const struct ctl_client *c)
{
    if (c->out_len || c->in_len)
        return c->progress_ns + srv->io_timeout_ns;
    return 0;
}

static void ctl_accept(struct ctl_server *srv, uint64_t now)
{
    for (;;) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                srv->accept_resume_ns = now + CTL_ACCEPT_PAUSE_NS;
            return;
        }
        ctl_count(&srv->ctr.accepted);
        if (srv->n_clients == srv->max_clients) {
            /* Answered in place: no slot is used, the frame fits in the
             * new socket's empty buffer. */
            struct ctl_client tmp = {.fd = fd};
            char reason[64];
            ctl_count(&srv->ctr.refused);
            snprintf(reason, sizeof reason, "too many clients (limit %u)", srv->max_clients);
            ctl_client_refuse(&tmp, reason, now);
            ctl_client_close(&tmp);
            continue;
        }
        struct ctl_client *c = &srv->clients[srv->n_clients++];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->progress_ns = now;
    }
}

/* Removes closed clients from the array, keeping the order. */
static void ctl_compact(struct ctl_server *srv)
{
    size_t j = 0;
    for (size_t i = 0; i < srv->n_clients; i++)
        if (srv->clients[i].fd >= 0)
            srv->clients[j++] = srv->clients[i];
    srv->n_clients = j;
}

static int ctl_poll_timeout(const struct ctl_server *srv, uint64_t now)
{
    uint64_t next = 0;
    for (size_t i = 0; i < srv->n_clients; i++) {
        uint64_t d = ctl_client_deadline(srv, &srv->clients[i]);
        if (d && (!next || d < next))
            next = d;
    }
    if (srv->accept_resume_ns && (!next || srv->accept_resume_ns < next))
        next = srv->accept_resume_ns;
    if (!next)
        return -1;
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999) / 1000000;
    return ms > 60000 ? 60000 : (int)ms;
}

static void *ctl_server_main(void *arg)
{
    struct ctl_server *srv = arg;
    for (;;) {
        uint64_t now = fs_mono_ns();
        if (srv->accept_resume_ns && now >= srv->accept_resume_ns)
            srv->accept_resume_ns = 0;
        struct pollfd *p = srv->pfds;
        p[0] = (struct pollfd){.fd = srv->wake[0], .events = POLLIN};
        p[1] = (struct pollfd){.fd = srv->accept_resume_ns ? -1 : srv->listen_fd,
                               .events = POLLIN};
        for (size_t i = 0; i < srv->n_clients; i++) {
            const struct ctl_client *c = &srv->clients[i];
            p[2 + i] = (struct pollfd){.fd = c->fd, .events = c->out_len ? POLLOUT : POLLIN};
        }
        size_t n_polled = srv->n_clients;
        int rc = poll(p, 2 + n_polled, ctl_poll_timeout(srv, now));
        /* poll() fails only on a signal or a transient lack of memory: the
         * loop polls again. */
        if (p[0].revents)
            break;
        now = fs_mono_ns();
        for (size_t i = 0; rc > 0 && i < n_polled; i++) {
            struct ctl_client *c = &srv->clients[i];
            short ev = p[2 + i].revents;
            if (!ev)
                continue;
            if (c->out_len && (ev & (POLLOUT | POLLERR | POLLHUP))) {
                ctl_client_flush(c, now);
                if (c->fd >= 0 && !c->out_len)
                    ctl_client_process(srv, c, now);
            } else if (!c->out_len && (ev & (POLLIN | POLLERR | POLLHUP))) {
                ctl_client_read(srv, c, now);
            }
        }
        for (size_t i = 0; i < srv->n_clients; i++) {
            struct ctl_client *c = &srv->clients[i];
            uint64_t d = c->fd >= 0 ? ctl_client_deadline(srv, c) : 0;
            if (d && now >= d) {
                ctl_count(&srv->ctr.dropped_slow);
                ctl_client_close(c);
            }
        }
        ctl_compact(srv);
        if (rc > 0 && p[1].revents)
            ctl_accept(srv, now);
    }
    for (size_t i = 0; i < srv->n_clients; i++)
        ctl_client_close(&srv->clients[i]);
    srv->n_clients = 0;
    return NULL;
}

/* ---- the socket and its directory ---------------------------------------- */

/* Creates the run directory (0700) if missing and checks that it is the
 * effective user's own and writable by nobody else. */
static int ctl_prepare_dir(const char *path, char *err, size_t errlen)
{
    char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (mkdir(dir, 0700) == 0) {
        /* Exactly 0700 whatever the umask. */
        if (chmod(dir, 0700)) {
            fs_errf(err, errlen, "%s: %s", dir, strerror(errno));
            return -1;
        }
    } else if (errno != EEXIST) {
        fs_errf(err, errlen, "cannot create run directory %s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(dir, &st)) {
        fs_errf(err, errlen, "run directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fs_errf(err, errlen, "run directory %s is not a directory%s", dir,
                S_ISLNK(st.st_mode) ? " (a symlink)" : "");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        fs_errf(err, errlen, "run directory %s is owned by uid %u, not by uid %u: refused",
                dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        fs_errf(err, errlen,
                "run directory %s is writable by others (mode %04o): refused (use 0700)",
                dir, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* Takes the lock file PATH.lock (created 0600 in the run directory, never
 * removed) with an exclusive flock(), held until destroy. Whoever holds
 * it owns the path: a second server starting at the same moment cannot
 * take a socket that is bound but not yet listening (connect() refused,
 * like a stale one) for stale and replace it. The kernel releases the
 * lock when its holder dies, so a killed server leaves no stale lock. */
static int ctl_lock_path(struct ctl_server *srv, char *err, size_t errlen)
{
    size_t n = strlen(srv->path) + sizeof ".lock";
    char *lock = malloc(n);
    if (!lock) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(lock, n, "%s.lock", srv->path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        fs_errf(err, errlen, "%s: %s", lock, strerror(errno));
        free(lock);
        return -1;
    }
    int rc;
    do {
        rc = flock(fd, LOCK_EX | LOCK_NB);
    } while (rc && errno == EINTR);
    if (rc) {
        if (errno == EWOULDBLOCK)
            fs_errf(err, errlen, "%s is in use by a running server (it holds %s)",
                    srv->path, lock);
        else
            fs_errf(err, errlen, "%s: flock: %s", lock, strerror(errno));
        close(fd);
        free(lock);
        return -1;
    }
    free(lock);
    srv->lock_fd = fd;
    return 0;
}

/* Makes the path free for bind(): nothing there, or a socket nobody
 * listens on any more (removed). A live server or a non-socket file is
 * an error. */
static int ctl_claim_path(const char *path, const struct sockaddr_un *addr, char *err,
                          size_t errlen)
{
    struct stat st;
    if (lstat(path, &st)) {
        if (errno == ENOENT)
            return 0;
        fs_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        fs_errf(err, errlen, "%s exists and is not a socket: refused", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fs_errf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int rc = connect(fd, (const struct sockaddr *)addr, sizeof *addr);
    int e = errno;
    close(fd);
    /* EAGAIN: a server whose backlog is full, still a live one. */
    if (rc == 0 || e == EAGAIN) {
        fs_errf(err, errlen, "%s is in use by a running server", path);
        return -1;
    }
    if (e == ECONNREFUSED) {
        if (unlink(path) && errno != ENOENT) {
            fs_errf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (e == ENOENT)
        return 0;
    fs_errf(err, errlen, "%s: %s", path, strerror(e));
    return -1;
}

/* Binds and listens with mode 0600; records the file's identity. */
static int ctl_bind(struct ctl_server *srv, const struct sockaddr_un *addr, char *err,
                    size_t errlen)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fs_errf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    /* Linux creates the socket file with the socket inode's mode (less
     * the umask): set it first. */
    if (fchmod(fd, 0600) || bind(fd, (const struct sockaddr *)addr, sizeof *addr)) {
        fs_errf(err, errlen, "%s: %s%s", srv->path, strerror(errno),
                errno == EADDRINUSE ? " (another server started at the same time)" : "");
        close(fd);
        return -1;
    }
    struct stat st;
    bool ok = !lstat(srv->path, &st) && S_ISSOCK(st.st_mode) && st.st_uid == geteuid();
    if (ok && (st.st_mode & 0777) != 0600)
        ok = !chmod(srv->path, 0600) && !lstat(srv->path, &st) &&
             (st.st_mode & 0777) == 0600;
    if (!ok) {
        fs_errf(err, errlen, "%s: cannot make the socket owner-only (mode 0600)", srv->path);
        unlink(srv->path);
        close(fd);
        return -1;
    }
    srv->dev = st.st_dev;
    srv->ino = st.st_ino;
    if (listen(fd, CTL_BACKLOG)) {
        fs_errf(err, errlen, "%s: listen: %s", srv->path, strerror(errno));
        unlink(srv->path);
        close(fd);
        return -1;
    }
    srv->listen_fd = fd;
    return 0;
}

static int ctl_check_table(const struct ctl_command *table, size_t n, char *err,
                           size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const struct ctl_command *c = &table[i];
        bool builtin;
        if (!c->name || !*c->name || !c->handler || !c->usage || !c->help) {
            fs_errf(err, errlen,
                    "command table row %zu: name, usage, help and handler are required", i);
            return -1;
        }
        if (c->min_args < 0 || (c->max_args != CTL_ARGS_ANY && c->max_args < c->min_args)) {
            fs_errf(err, errlen, "command '%s': bad argument counts", c->name);
            return -1;
        }
        struct ctl_server probe = {.table = table, .n_commands = i};
        if (ctl_lookup(&probe, c->name, &builtin)) {
            fs_errf(err, errlen, "command '%s' is %s", c->name,
                    builtin ? "built in" : "defined twice");
            return -1;
        }
    }
    return 0;
}

int ctl_server_create(const char *path, const struct ctl_command *table, size_t n,
                      void *aux, const struct ctl_server_options *opts,
                      struct ctl_server **out, char *err, size_t errlen)
{
    *out = NULL;
    if (ctl_check_table(table, n, err, errlen))
        return -1;
    if (opts && opts->max_clients > CTL_MAX_CLIENTS_LIMIT) {
        fs_errf(err, errlen, "max_clients %u: at most %d", opts->max_clients,
                CTL_MAX_CLIENTS_LIMIT);
        return -1;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (!path || !*path || strlen(path) >= sizeof addr.sun_path) {
        fs_errf(err, errlen, "control socket path '%s' is empty or longer than %zu bytes",
                path ? path : "", sizeof addr.sun_path - 1);
        return -1;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);

    struct ctl_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    srv->lock_fd = -1;
    srv->listen_fd = -1;
    srv->wake[0] = srv->wake[1] = -1;
    srv->table = table;
    srv->n_commands = n;
    srv->aux = aux;
    srv->max_clients = opts && opts->max_clients ? opts->max_clients : CTL_DEFAULT_MAX_CLIENTS;
    srv->io_timeout_ns = (opts && opts->io_timeout_ms ? opts->io_timeout_ms
                                                      : CTL_DEFAULT_IO_TIMEOUT_MS) *
                         1000000ull;
    srv->path = strdup(path);
    srv->clients = calloc(srv->max_clients, sizeof *srv->clients);
    srv->pfds = calloc(srv->max_clients + 2, sizeof *srv->pfds);
    if (!srv->path || !srv->clients || !srv->pfds) {
        fs_errf(err, errlen, "out of memory");
        goto fail;
    }
    if (pipe2(srv->wake, O_CLOEXEC | O_NONBLOCK)) {
        fs_errf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (ctl_prepare_dir(path, err, errlen) || ctl_lock_path(srv, err, errlen) ||
        ctl_claim_path(path, &addr, err, errlen) || ctl_bind(srv, &addr, err, errlen))
        goto fail;
    *out = srv;
    return 0;

fail:
    ctl_server_destroy(srv);
    return -1;
}

int ctl_server_start(struct ctl_server *srv, char *err, size_t errlen)
{
    if (srv->running)
        return 0;
    if (ctl_thread_start(&srv->thread, ctl_server_main, srv, "fs-ctl", err, errlen))
        return -1;
    srv->running = true;
    return 0;
}

void ctl_server_stop(struct ctl_server *srv)
{
    if (!srv->running)
        return;
    ssize_t w;
    do {
        w = write(srv->wake[1], "x", 1);
    } while (w < 0 && errno == EINTR);
    pthread_join(srv->thread, NULL);
    srv->running = false;
    char buf[16];
    while (read(srv->wake[0], buf, sizeof buf) > 0)
        ;
}

void ctl_server_destroy(struct ctl_server *srv)
{
    if (!srv)
        return;
    ctl_server_stop(srv);
    for (size_t i = 0; i < srv->n_clients; i++)
        ctl_client_close(&srv->clients[i]);
    if (srv->listen_fd >= 0) {
        struct stat st;
        if (!lstat(srv->path, &st) && st.st_dev == srv->dev && st.st_ino == srv->ino)
            unlink(srv->path);
        close(srv->listen_fd);
    }
    if (srv->lock_fd >= 0)
        close(srv->lock_fd); /* after the socket file is gone: releases the path */
    for (int i = 0; i < 2; i++)
        if (srv->wake[i] >= 0)
            close(srv->wake[i]);
    free(srv->clients);
    free(srv->pfds);
    free(srv->path);
    free(srv);
}

const char *ctl_server_path(const struct ctl_server *srv)
{
    return srv->path;
}

void ctl_server_get_stats(struct ctl_server *srv, struct ctl_server_stats *st)
{
    struct ctl_counters *c = &srv->ctr;
    st->accepted = atomic_load_explicit(&c->accepted, memory_order_relaxed);
    st->refused = atomic_load_explicit(&c->refused, memory_order_relaxed);
    st->requests = atomic_load_explicit(&c->requests, memory_order_relaxed);
    st->errors = atomic_load_explicit(&c->errors, memory_order_relaxed);
    st->malformed = atomic_load_explicit(&c->malformed, memory_order_relaxed);
    st->oversized = atomic_load_explicit(&c->oversized, memory_order_relaxed);
    st->dropped_partial = atomic_load_explicit(&c->dropped_partial, memory_order_relaxed);
    st->dropped_slow = atomic_load_explicit(&c->dropped_slow, memory_order_relaxed);
}
