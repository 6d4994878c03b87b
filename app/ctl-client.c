/* ctl-client.c: the control socket client and `flowswitch ctl`. */
#include "ctl-client.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "sys.h"
#include "ctl-proto.h"
#include "util.h"

#define CTL_DEFAULT_TIMEOUT_S 30

/* An exchange's deadline; 0: none. */
struct ctl_deadline {
    uint64_t at_ns;
};

/* Milliseconds left for poll(): -1 without a deadline, 0 when passed. */
static int ctl_ms_left(const struct ctl_deadline *d)
{
    if (!d->at_ns)
        return -1;
    uint64_t now = fs_mono_ns();
    if (now >= d->at_ns)
        return 0;
    uint64_t ms = (d->at_ns - now + 999999) / 1000000;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Waits until fd is ready for 'events'. Returns 0, or -1 on timeout. */
static int ctl_wait(int fd, short events, const struct ctl_deadline *d)
{
    for (;;) {
        int ms = ctl_ms_left(d);
        if (ms == 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

static enum ctl_client_result ctl_connect(const char *path, const struct ctl_deadline *d,
                                          int *out, char *err, size_t errlen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        fs_errf(err, errlen, "cannot reach %s: path longer than %zu bytes", path,
                sizeof addr.sun_path - 1);
        return CTL_CLIENT_UNREACHABLE;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fs_errf(err, errlen, "socket: %s", strerror(errno));
        return CTL_CLIENT_UNREACHABLE;
    }
    /* A blocking connect() waits while the server's backlog is full; the
     * send timeout bounds that wait. */
    int ms = ctl_ms_left(d);
    if (ms > 0) {
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    int rc;
    do {
        rc = connect(fd, (const struct sockaddr *)&addr, sizeof addr);
    } while (rc && errno == EINTR);
    if (rc) {
        fs_errf(err, errlen, "cannot reach %s: %s", path,
                errno == EAGAIN ? "the server does not accept connections" : strerror(errno));
        close(fd);
        return CTL_CLIENT_UNREACHABLE;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
        fs_errf(err, errlen, "fcntl: %s", strerror(errno));
        close(fd);
        return CTL_CLIENT_UNREACHABLE;
    }
    *out = fd;
    return CTL_CLIENT_OK;
}

static enum ctl_client_result ctl_send_all(int fd, const char *buf, size_t len,
                                           const struct ctl_deadline *d, char *err,
                                           size_t errlen)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (ctl_wait(fd, POLLOUT, d)) {
                fs_errf(err, errlen, "the server did not take the request in time");
                return CTL_CLIENT_BROKEN;
            }
        } else {
            fs_errf(err, errlen, "sending the request: %s", strerror(errno));
            return CTL_CLIENT_BROKEN;
        }
    }
    return CTL_CLIENT_OK;
}

/* Reads one framed answer. */
static enum ctl_client_result ctl_recv_answer(int fd, const struct ctl_deadline *d,
                                              struct ctl_reply *reply, char *err,
                                              size_t errlen)
{
    char hdr[CTL_ANSWER_HEADER_MAX];
    size_t got = 0, hdr_len = 0, body_len = 0;
    bool error = false;
    char *body = NULL;
    size_t body_got = 0;
    for (;;) {
        char *dst;
        size_t room;
        if (!hdr_len) {
            enum ctl_header h =
                ctl_answer_parse_header(hdr, got, &error, &body_len, &hdr_len);
            if (h == CTL_HEADER_BROKEN) {
                fs_errf(err, errlen, "broken answer: the server sent \"%.*s\"", (int)got,
                        hdr);
                goto broken;
            }
            if (h == CTL_HEADER_OK) {
                body = malloc(body_len + 1);
                if (!body) {
                    fs_errf(err, errlen, "out of memory for a %zu-byte answer", body_len);
                    goto broken;
                }
                /* Bytes read past the header start the body. */
                body_got = got - hdr_len < body_len ? got - hdr_len : body_len;
                memcpy(body, hdr + hdr_len, body_got);
                continue;
            }
            dst = hdr + got;
            room = 1; /* a byte at a time: never read past the header */
        } else {
            if (body_got == body_len)
                break;
            dst = body + body_got;
            room = body_len - body_got;
        }
        ssize_t r = recv(fd, dst, room, 0);
        if (r > 0) {
            if (hdr_len)
                body_got += (size_t)r;
            else
                got += (size_t)r;
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            fs_errf(err, errlen, "broken answer: %s after %zu bytes",
                    r == 0 ? "the server closed the connection" : strerror(errno),
                    got + body_got);
            goto broken;
        } else if (r < 0 && errno != EINTR && ctl_wait(fd, POLLIN, d)) {
            fs_errf(err, errlen, "no answer in time");
            goto broken;
        }
    }
    body[body_len] = '\0';
    reply->error = error;
    reply->body = body;
    reply->len = body_len;
    return CTL_CLIENT_OK;

broken:
    free(body);
    return CTL_CLIENT_BROKEN;
}

enum ctl_client_result ctl_client_request(const char *path, const char *line, size_t len,
                                          unsigned timeout_ms, struct ctl_reply *reply,
                                          char *err, size_t errlen)
{
    memset(reply, 0, sizeof *reply);
    struct ctl_deadline d;
    d.at_ns = timeout_ms ? fs_mono_ns() + timeout_ms * 1000000ull : 0;
    int fd;
    enum ctl_client_result r = ctl_connect(path, &d, &fd, err, errlen);
    if (r != CTL_CLIENT_OK)
        return r;
    r = ctl_send_all(fd, line, len, &d, err, errlen);
    if (r == CTL_CLIENT_OK)
        r = ctl_recv_answer(fd, &d, reply, err, errlen);
    close(fd);
    return r;
}

void ctl_reply_free(struct ctl_reply *reply)
{
    free(reply->body);
    memset(reply, 0, sizeof *reply);
}

/* ---- flowswitch ctl ------------------------------------------------------ */

static void ctl_usage(FILE *out)
{
    fprintf(out,
            "usage: flowswitch ctl [--socket PATH] [--json] [--timeout SEC] COMMAND [ARGS...]\n"
            "\n"
            "Sends COMMAND to a running flowswitch over its control socket and\n"
            "prints the answer; 'flowswitch ctl help' lists the server's commands.\n"
            "Arguments arrive as given, e.g.\n"
            "  flowswitch ctl rule-add 'priority=10,in_port=p0,ip actions=output:p1'\n"
            "\n"
            "Options:\n"
            "  --socket PATH  the control socket (default: $FLOWSWITCH_CTL_SOCKET, else\n"
            "                 /run/flowswitch/flowswitch.ctl as root, else\n"
            "                 $XDG_RUNTIME_DIR/flowswitch/flowswitch.ctl, else\n"
            "                 /tmp/flowswitch-UID/flowswitch.ctl)\n"
            "  --json         ask for the answer as JSON\n"
            "  --timeout SEC  give up after SEC seconds (default %d; 0: wait for ever;\n"
            "                 a positive SEC is at least 1 ms)\n"
            "  --help         this text\n"
            "\n"
            "Exit status: 0 ok; 1 usage error, or the command failed (its reason on\n"
            "stderr; with --json the JSON error on stdout); 2 the socket cannot be\n"
            "reached, or the answer is broken or late.\n",
            CTL_DEFAULT_TIMEOUT_S);
}

int ctl_cmd_main(int argc, char **argv, FILE *out, FILE *errout)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char path[256];
    const char *socket_path = NULL;
    bool json = false;
    double timeout_s = CTL_DEFAULT_TIMEOUT_S;
    int c;
    optind = 0; /* a fresh scan: '+' stops at COMMAND, whose options are its own */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+s:jt:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's':
            socket_path = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 't':
            errno = 0;
            timeout_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(timeout_s) || timeout_s < 0 ||
                timeout_s > 86400) {
                fprintf(errout, "flowswitch ctl: --timeout '%s': expected seconds, 0..86400\n",
                        optarg);
                return 1;
            }
            break;
        case 'h':
            ctl_usage(out);
            return 0;
        default:
            fprintf(errout, "flowswitch ctl: bad option '%s' (try 'flowswitch ctl --help')\n",
                    argv[optind - 1]);
            return 1;
        }
    }
    if (optind >= argc) {
        fprintf(errout, "flowswitch ctl: no COMMAND (try 'flowswitch ctl help' for the "
                        "server's commands)\n");
        return 1;
    }
    if (!socket_path) {
        if (ctl_default_socket_path(path, sizeof path)) {
            fprintf(errout, "flowswitch ctl: the default socket path is too long; "
                            "use --socket\n");
            return 1;
        }
        socket_path = path;
    }
    char err[512];
    size_t len;
    /* The server reads rule-load's FILE: a relative path means the
     * client's directory, not the server's. */
    char *abs = NULL;
    if (!strcmp(argv[optind], "rule-load") && optind + 1 < argc && argv[argc - 1][0] != '/' &&
        strcmp(argv[argc - 1], "--add")) {
        char cwd[4096];
        size_t n = strlen(argv[argc - 1]) + sizeof cwd + 2;
        if (!getcwd(cwd, sizeof cwd) || !(abs = malloc(n))) {
            fprintf(errout, "flowswitch ctl: cannot resolve '%s'\n", argv[argc - 1]);
            return 1;
        }
        snprintf(abs, n, "%s/%s", cwd, argv[argc - 1]);
        argv[argc - 1] = abs;
    }
    char *line = ctl_request_format(argc - optind, argv + optind, json, &len, err, sizeof err);
    free(abs);
    if (!line) {
        fprintf(errout, "flowswitch ctl: %s\n", err);
        return 1;
    }
    /* 0 ms means no limit: a positive timeout shorter than 0.5 ms must not
     * round to it. */
    unsigned timeout_ms = (unsigned)llround(timeout_s * 1000);
    if (timeout_s > 0 && timeout_ms == 0)
        timeout_ms = 1;
    struct ctl_reply reply;
    enum ctl_client_result r = ctl_client_request(socket_path, line, len, timeout_ms, &reply,
                                                  err, sizeof err);
    free(line);
    if (r != CTL_CLIENT_OK) {
        fprintf(errout, "flowswitch ctl: %s\n", err);
        return 2;
    }
    int rc = 0;
    if (!reply.error) {
        fwrite(reply.body, 1, reply.len, out);
    } else if (json) {
        fwrite(reply.body, 1, reply.len, out);
        rc = 1;
    } else {
        fprintf(errout, "flowswitch ctl: ");
        fwrite(reply.body, 1, reply.len, errout);
        rc = 1;
    }
    ctl_reply_free(&reply);
    return rc;
}

int fs_cmd_ctl(int argc, char **argv)
{
    return ctl_cmd_main(argc, argv, stdout, stderr);
}
