/* ctl-client.h: the client side of the control socket, and the
 * `flowswitch ctl` command built on it.
 *
 * A client connects, sends one request line (ctl_request_format()), reads
 * one framed answer (ctl-proto.h) and disconnects. Everything happens
 * within one deadline, so a server that hangs cannot hang the client. */
#ifndef FS_CTL_CLIENT_H
#define FS_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How an exchange ended. */
enum ctl_client_result {
    CTL_CLIENT_OK,          /* an answer arrived; the reply says OK or ERR */
    CTL_CLIENT_UNREACHABLE, /* nothing to connect to at the path, or no permission */
    CTL_CLIENT_BROKEN,      /* what came back is not an answer, is cut short, or late */
};

/* A server's answer. */
struct ctl_reply {
    bool error; /* an ERR answer: body is the reason (or {"error": ...}) */
    char *body; /* malloc'd, NUL-terminated, len bytes */
    size_t len;
};

/* Sends line[0..len) (one request, '\n' included) to the server at path
 * and reads its answer into *reply, all within timeout_ms (0: no limit).
 * On anything but CTL_CLIENT_OK, err says what went wrong and *reply is
 * empty. Never raises SIGPIPE. Free the reply with ctl_reply_free(). */
enum ctl_client_result ctl_client_request(const char *path, const char *line, size_t len,
                                          unsigned timeout_ms, struct ctl_reply *reply,
                                          char *err, size_t errlen);

void ctl_reply_free(struct ctl_reply *reply);

/* `flowswitch ctl [--socket PATH] [--json] [--timeout SEC] COMMAND [ARGS...]`
 * with argv[0] "ctl": sends the command with its arguments quoted so they
 * arrive as given, prints an OK answer on out, an error on errout ("flowswitch
 * ctl: reason"; with --json the JSON error goes to out). Returns the exit
 * status: 0 ok; 1 usage error or an ERR answer; 2 the socket cannot be
 * reached, or the answer is broken or late. */
int ctl_cmd_main(int argc, char **argv, FILE *out, FILE *errout);

/* ctl_cmd_main() on stdout and stderr: the entry point main() dispatches
 * `flowswitch ctl` to. */
int fs_cmd_ctl(int argc, char **argv);

#endif
