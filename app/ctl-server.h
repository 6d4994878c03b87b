/* ctl-server.h: the control socket server.
 *
 * A unix stream socket served by one thread of its own (never a PMD): it
 * accepts clients, reads requests (ctl-proto.h), runs the command they
 * name from a table the owner supplies, and writes the answers. poll()
 * drives everything; every socket is non-blocking, so no client can hold
 * the thread:
 *  - each client has its own input buffer (up to CTL_REQUEST_MAX) and at
 *    most one answer pending; while an answer is pending the server reads
 *    no more from that client, so a client that never reads costs one
 *    answer of memory;
 *  - a client that makes no progress for io_timeout_ms while the server
 *    waits on it (an answer it does not read, a request it leaves half
 *    sent) is dropped; a connected client with nothing pending may stay;
 *  - a malformed request gets an error answer and the connection stays;
 *    an oversized one gets an error answer, then the connection is closed
 *    (the rest of it cannot be told from the next request);
 *  - a client that disconnects in the middle of a request is dropped; one
 *    that half-closes after whole requests still gets their answers;
 *  - writes use MSG_NOSIGNAL: a vanished client never raises SIGPIPE.
 *
 * Security: the socket is owner-only. Its directory is created with mode
 * 0700 when missing; an existing one must be a directory (not a symlink)
 * owned by the effective user and writable by nobody else, or the server
 * refuses to start. The socket gets mode 0600: the socket inode's mode is
 * set before bind(), which Linux applies to the file it creates, so there
 * is no window with a wider mode and no process-wide umask change (other
 * threads may be creating files); the mode and owner are verified after
 * bind(). The server holds an exclusive flock() on PATH.lock (never
 * deleted: deleting it would race with the next locker) from before the
 * stale check until it is destroyed, so two servers starting at once
 * cannot both take the path. A path whose lock is held, or where a live
 * server answers, is refused; a socket left by a process that died (lock
 * free, connect() fails with ECONNREFUSED) is replaced.
 *
 * Commands: the server answers `help` (the table, with usage and help
 * text) and `version` itself; every other command comes from the table.
 * Handlers run on the server thread, one at a time, so they need no lock
 * among themselves; they must not block on PMD threads (a PMD may be
 * stalled: ask it through lock-free hand-overs, read its published
 * snapshots) and should return within milliseconds, since every client
 * waits while one runs. */
#ifndef FS_CTL_SERVER_H
#define FS_CTL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl-proto.h"

/* A command handler: argv[0] is the command name, argv[1..argc) its
 * arguments (their number already checked against the table), json
 * whether the client asked for a JSON answer. Writes the answer into ans. */
typedef void ctl_handler_fn(void *aux, int argc, char *argv[], bool json,
                            struct ctl_answer *ans);

/* A row of the command table. */
struct ctl_command {
    const char *name;       /* e.g. "rule-add" */
    int min_args, max_args; /* arguments after the name; max CTL_ARGS_ANY: no limit */
    const char *usage;      /* the arguments, e.g. "'MATCH actions=...'" ("" for none) */
    const char *help;       /* one line: what it does */
    ctl_handler_fn *handler;
};

#define CTL_ARGS_ANY (-1)

/* Tunables; zero fields take the defaults. */
struct ctl_server_options {
    unsigned max_clients;  /* clients at once (64, at most 4096); one more is
                            * told "too many clients" */
    unsigned io_timeout_ms; /* drop a client stuck this long (5000) */
};

/* What the server has seen since it was created (read any time). */
struct ctl_server_stats {
    uint64_t accepted;        /* connections accepted */
    uint64_t refused;         /* connections turned away: too many clients */
    uint64_t requests;        /* requests answered (OK or ERR) */
    uint64_t errors;          /* of which ERR answers */
    uint64_t malformed;       /* requests that could not be parsed */
    uint64_t oversized;       /* requests over CTL_REQUEST_MAX (then closed) */
    uint64_t dropped_partial; /* clients gone in the middle of a request */
    uint64_t dropped_slow;    /* clients dropped after io_timeout_ms */
};

struct ctl_server;

/* Creates the run directory if needed, checks it, and binds and listens on
 * the socket at path (the socket serves nobody until ctl_server_start()).
 * table[0..n) is borrowed until destroy; its names must be unique and not
 * "help" or "version"; aux is passed to every handler. opts NULL takes the
 * defaults. Returns 0, or -1 with the reason in err: a bad table, a path
 * too long for a unix socket, an unsafe run directory, a live server on
 * the path ("... is in use by a running server"), a non-socket file there,
 * or a system error. */
int ctl_server_create(const char *path, const struct ctl_command *table, size_t n,
                      void *aux, const struct ctl_server_options *opts,
                      struct ctl_server **out, char *err, size_t errlen);

/* Starts the server thread (named "fs-ctl", every signal blocked in it).
 * Returns 0 or -1 with the reason in err. */
int ctl_server_start(struct ctl_server *srv, char *err, size_t errlen);

/* Stops the server thread and disconnects every client; the socket stays
 * bound (new connections wait in the backlog) until destroy. Safe to call
 * twice or without start; never from a handler. */
void ctl_server_stop(struct ctl_server *srv);

/* Stops the server if needed, closes the socket and removes its file if
 * it is still the one this server bound. NULL is ignored. */
void ctl_server_destroy(struct ctl_server *srv);

/* The socket path the server was created with. */
const char *ctl_server_path(const struct ctl_server *srv);

/* Copies the counters (each read atomically). */
void ctl_server_get_stats(struct ctl_server *srv, struct ctl_server_stats *st);

#endif
