/* test_ctl_server.c: the control socket server (app/ctl-server.c) end to
 * end, over real unix sockets in a temporary directory, with a toy command
 * table (helpers/ctl_test.h). Answers are read with the helper's own
 * parser and compared byte for byte with frames the tests write out
 * ("STATUS <length of body>\n" then the body, as ctl-proto.h specifies).
 *
 * Waits are for events (an answer, a counter, a closed connection), never
 * for a time; the one timeout that matters to the server (io_timeout_ms)
 * is set short where a test needs it to fire. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ctl-server.h"
#include "helpers/ctl_test.h"

/* Creates and starts the toy server, or fails the test. */
static void fx_serve(struct ct_fx *fx, const struct ctl_server_options *opts)
{
    assert_true(ct_fx_serve(fx, opts));
}

static void expect_answer(struct ct_answer a, const char *status, const char *body)
{
    if (!a.ok)
        fail_msg("no answer (wanted %s '%s')", status, body);
    assert_string_equal(a.status, status);
    assert_int_equal(a.len, strlen(body));
    assert_string_equal(a.body, body);
    free(a.body);
}

static void ask_expect(int fd, const char *line, const char *status, const char *body)
{
    expect_answer(ct_ask(fd, line), status, body);
}

/* The body of an OK answer, parsed as JSON. */
static json_t *ask_json(int fd, const char *line, const char *status)
{
    struct ct_answer a = ct_ask(fd, line);
    assert_true(a.ok);
    assert_string_equal(a.status, status);
    assert_int_equal(a.body[a.len - 1], '\n');
    json_error_t jerr;
    json_t *doc = json_loads(a.body, 0, &jerr);
    if (!doc)
        fail_msg("'%s' is not JSON: %s", a.body, jerr.text);
    free(a.body);
    return doc;
}

static struct ctl_server_stats stats(struct ct_fx *fx)
{
    struct ctl_server_stats st;
    ctl_server_get_stats(fx->srv, &st);
    return st;
}

/* Waits (bounded) until the counter picked by 'field' reaches 'want'. */
#define WAIT_STAT(fx, field, want)                                             \
    do {                                                                       \
        for (int w_ = 0; w_ < CT_WAIT_MS / 5 && stats(fx).field < (want); w_++)  \
            ct_sleep_ms(5);                                                    \
        assert_int_equal(stats(fx).field, (want));                             \
    } while (0)

/* ---- answers ---------------------------------------------------------------- */

static void test_answers(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);
    int fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);

    ask_expect(fd, "echo a b\n", "OK", "a\nb\n");
    ask_expect(fd, "rule-add-like: \n", "ERR",
               "unknown command 'rule-add-like:' (try 'help')\n");
    ask_expect(fd, "echo 'priority=10,in_port=p0,ip actions=output:p1' \"x y\" it\\'s\n", "OK",
               "priority=10,in_port=p0,ip actions=output:p1\nx y\nit's\n");
    ask_expect(fd, "echo\n", "OK", "");
    ask_expect(fd, "add 2 40\r\n", "OK", "42\n");
    ask_expect(fd, "add 2 x\n", "ERR", "add: not a number\n");
    ask_expect(fd, "add 1\n", "ERR", "'add' takes 2 arguments, not 1 (usage: add A B)\n");
    ask_expect(fd, "big 1 2\n", "ERR", "'big' takes 1 argument, not 2 (usage: big N)\n");
    ask_expect(fd, "calls 0\n", "ERR", "'calls' takes 0 arguments, not 1 (usage: calls)\n");
    ask_expect(fd, "version\n", "OK", "flowswitch " FS_VERSION "\n");
    ask_expect(fd, "calls\n", "OK", "5\n"); /* the echo and add handlers that ran */

    /* help: the built-ins and every row of the table, with usage and
     * help text. */
    struct ct_answer h = ct_ask(fd, "help\n");
    assert_true(h.ok);
    assert_string_equal(h.status, "OK");
    const char *want[] = {"help", "list the commands", "version", "echo [WORD...]",
                          "answer the words, one per line", "add A B", "big N",
                          "calls", "how many echo and add requests ran"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(h.body, want[i]))
            fail_msg("help lacks '%s':\n%s", want[i], h.body);
    free(h.body);

    /* Pipelined: three requests in one write, three answers in order. */
    assert_true(ct_send_str(fd, "echo 1\nadd 1 1\necho 3\n"));
    expect_answer(ct_read_answer(fd), "OK", "1\n");
    expect_answer(ct_read_answer(fd), "OK", "2\n");
    expect_answer(ct_read_answer(fd), "OK", "3\n");
    close(fd);

    struct ctl_server_stats st = stats(fx);
    assert_int_equal(st.requests, 15);
    assert_int_equal(st.errors, 5);
    assert_int_equal(st.malformed, 0);
}

static void test_json(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);
    int fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);

    json_t *d = ask_json(fd, "--json echo a 'b c' ''\n", "OK");
    json_t *want = json_pack("[s,s,s]", "a", "b c", "");
    assert_true(json_equal(d, want));
    json_decref(want);
    json_decref(d);

    d = ask_json(fd, "--json version\n", "OK");
    assert_string_equal(json_string_value(json_object_get(d, "version")), FS_VERSION);
    json_decref(d);

    /* A handler that wrote text only: {"text": ...}. */
    d = ask_json(fd, "--json add 1 2\n", "OK");
    assert_string_equal(json_string_value(json_object_get(d, "text")), "3\n");
    json_decref(d);

    d = ask_json(fd, "--json help\n", "OK");
    json_t *cmds = json_object_get(d, "commands");
    assert_int_equal(json_array_size(cmds), 2 + CT_N_TABLE);
    const char *names[] = {"help", "version", "echo", "add", "big", "calls"};
    for (size_t i = 0; i < 2 + CT_N_TABLE; i++) {
        json_t *c = json_array_get(cmds, i);
        assert_string_equal(json_string_value(json_object_get(c, "name")), names[i]);
    }
    json_t *echo = json_array_get(cmds, 2);
    assert_string_equal(json_string_value(json_object_get(echo, "usage")), "[WORD...]");
    assert_int_equal(json_integer_value(json_object_get(echo, "min_args")), 0);
    assert_true(json_is_null(json_object_get(echo, "max_args")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cmds, 3), "max_args")),
                     2);
    json_decref(d);

    d = ask_json(fd, "--json nosuch\n", "ERR");
    assert_string_equal(json_string_value(json_object_get(d, "error")),
                        "unknown command 'nosuch' (try 'help')");
    json_decref(d);
    d = ask_json(fd, "--json echo 'open\n", "ERR");
    assert_string_equal(json_string_value(json_object_get(d, "error")),
                        "malformed request: unterminated single quote at column 13");
    json_decref(d);
    /* Not UTF-8, echoed back in an error: still a JSON document. */
    d = ask_json(fd, "--json \xff\xfe\n", "ERR");
    assert_string_equal(json_string_value(json_object_get(d, "error")),
                        "unknown command '\\xff\\xfe' (try 'help')");
    json_decref(d);
    close(fd);
}

/* ---- bad requests ----------------------------------------------------------------- */

static void test_malformed(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);
    int fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);
    ask_expect(fd, "echo 'abc\n", "ERR",
               "malformed request: unterminated single quote at column 6\n");
    ask_expect(fd, "echo ok\n", "OK", "ok\n"); /* the connection stays */
    ask_expect(fd, "echo \"a\\\"\n", "ERR",
               "malformed request: unterminated double quote at column 6\n");
    ask_expect(fd, "echo a\\\n", "ERR", "malformed request: trailing backslash at column 7\n");
    ask_expect(fd, "echo \x1b[2J\n", "ERR",
               "malformed request: control byte 0x1b at column 6\n");
    assert_true(ct_send(fd, "echo \0x\n", 8));
    expect_answer(ct_read_answer(fd), "ERR",
                  "malformed request: control byte 0x00 at column 6\n");
    ask_expect(fd, "\n", "ERR", "malformed request: empty request\n");
    ask_expect(fd, "   \t\n", "ERR", "malformed request: empty request\n");
    ask_expect(fd, "--json\n", "ERR", "{\"error\":\"malformed request: no command after --json\"}\n");
    ask_expect(fd, "echo still here\n", "OK", "still\nhere\n");
    close(fd);
    assert_int_equal(stats(fx).malformed, 8);
}

/* Sends n bytes of 'a' without a newline; the server may close while it
 * does, which is fine. */
static void send_junk(int fd, size_t n)
{
    char buf[4096];
    memset(buf, 'a', sizeof buf);
    while (n) {
        size_t k = n < sizeof buf ? n : sizeof buf;
        if (!ct_send(fd, buf, k))
            return;
        n -= k;
    }
}

static void test_oversized(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);

    /* The largest request passes: "echo " + word + "\n" = CTL_REQUEST_MAX. */
    size_t wlen = CTL_REQUEST_MAX - 6;
    char *line = malloc(CTL_REQUEST_MAX + 1);
    memcpy(line, "echo ", 5);
    memset(line + 5, 'w', wlen);
    line[5 + wlen] = '\n';
    line[6 + wlen] = '\0';
    int fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);
    struct ct_answer a = ct_ask(fd, line);
    assert_true(a.ok);
    assert_string_equal(a.status, "OK");
    assert_int_equal(a.len, wlen + 1);
    free(a.body);

    /* One byte more: an error, then the server closes the connection. */
    line[5 + wlen] = 'w';
    line[6 + wlen] = '\n';
    assert_true(ct_send(fd, line, CTL_REQUEST_MAX + 1));
    expect_answer(ct_read_answer(fd), "ERR", "request longer than 65536 bytes\n");
    assert_int_equal(ct_read_to_eof(fd), 0);
    close(fd);
    free(line);

    /* Endless bytes without a newline: the same. */
    fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);
    send_junk(fd, 3 * CTL_REQUEST_MAX);
    expect_answer(ct_read_answer(fd), "ERR", "request longer than 65536 bytes\n");
    assert_int_equal(ct_read_to_eof(fd), 0);
    close(fd);

    assert_int_equal(stats(fx).oversized, 2);
    fd = ct_connect(fx->dir.sock);
    ask_expect(fd, "echo after\n", "OK", "after\n");
    close(fd);
}

static void test_disconnects(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);

    /* Half a request, then gone: dropped, nothing answered. */
    int fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);
    assert_true(ct_send_str(fd, "echo half a requ"));
    close(fd);
    WAIT_STAT(fx, dropped_partial, 1);

    /* Whole requests, then a half-close (as `nc -N` does): every answer
     * still comes, then EOF. */
    fd = ct_connect(fx->dir.sock);
    assert_true(ct_send_str(fd, "echo a\nversion\nadd 1 1\n"));
    shutdown(fd, SHUT_WR);
    expect_answer(ct_read_answer(fd), "OK", "a\n");
    expect_answer(ct_read_answer(fd), "OK", "flowswitch " FS_VERSION "\n");
    expect_answer(ct_read_answer(fd), "OK", "2\n");
    assert_int_equal(ct_read_to_eof(fd), 0);
    close(fd);

    /* Gone before reading a large answer: the server's write fails with
     * EPIPE, never SIGPIPE (whose default action would kill this test). */
    signal(SIGPIPE, SIG_DFL);
    for (int i = 0; i < 4; i++) {
        fd = ct_connect(fx->dir.sock);
        assert_true(ct_send_str(fd, "big 4000000\n"));
        close(fd);
    }
    fd = ct_connect(fx->dir.sock);
    ask_expect(fd, "echo alive\n", "OK", "alive\n");
    close(fd);
    assert_int_equal(stats(fx).dropped_partial, 1);
}

/* ---- many clients ------------------------------------------------------------------- */

/* Eight connections, each sending half a request; then the other halves in
 * reverse order: every client gets its own answer. */
static void test_interleaved(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);
    int fds[8];
    char line[8][32];
    for (int i = 0; i < 8; i++) {
        fds[i] = ct_connect(fx->dir.sock);
        assert_true(fds[i] >= 0);
        snprintf(line[i], sizeof line[i], "echo client-%d 'x %d'\n", i, i * i);
        assert_true(ct_send(fds[i], line[i], 9));
    }
    for (int i = 7; i >= 0; i--)
        assert_true(ct_send_str(fds[i], line[i] + 9));
    for (int i = 0; i < 8; i++) {
        char want[32];
        snprintf(want, sizeof want, "client-%d\nx %d\n", i, i * i);
        expect_answer(ct_read_answer(fds[i]), "OK", want);
        close(fds[i]);
    }
}

struct worker {
    const char *path;
    int id;
    int ok; /* answers that matched */
};

#define WORKER_REQUESTS 50

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int fd = ct_connect(w->path);
    if (fd < 0)
        return NULL;
    for (int r = 0; r < WORKER_REQUESTS; r++) {
        char line[64], want[64];
        snprintf(line, sizeof line, "--json echo worker-%d \"req %d\"\n", w->id, r);
        snprintf(want, sizeof want, "[\"worker-%d\",\"req %d\"]\n", w->id, r);
        struct ct_answer a = ct_ask(fd, line);
        if (a.ok && !strcmp(a.status, "OK") && !strcmp(a.body, want))
            w->ok++;
        free(a.body);
    }
    close(fd);
    return NULL;
}

static void test_concurrent_clients(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);
    pthread_t t[8];
    struct worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){.path = fx->dir.sock, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].ok, WORKER_REQUESTS);
    }
    int fd = ct_connect(fx->dir.sock);
    char want[16];
    snprintf(want, sizeof want, "%d\n", 8 * WORKER_REQUESTS);
    ask_expect(fd, "calls\n", "OK", want);
    close(fd);
    assert_int_equal(stats(fx).accepted, 9);
}

/* A client that never reads a large answer holds nobody up, and is dropped
 * after io_timeout_ms. */
static void test_slow_reader(void **state)
{
    struct ct_fx *fx = *state;
    struct ctl_server_options o = {.io_timeout_ms = 200};
    fx_serve(fx, &o);
    const int n = 8 << 20; /* far more than the socket buffers hold */
    int slow = ct_connect(fx->dir.sock);
    assert_true(ct_send_str(slow, "big 8388608\n"));
    int fd = ct_connect(fx->dir.sock);
    for (int i = 0; i < 20; i++)
        ask_expect(fd, "echo meanwhile\n", "OK", "meanwhile\n");
    WAIT_STAT(fx, dropped_slow, 1);
    /* What the slow client can still read is a cut-short answer. */
    long got = ct_read_to_eof(slow);
    assert_true(got > 0);
    assert_true(got < (long)strlen("OK 8388609\n") + n + 1);
    close(slow);
    ask_expect(fd, "echo after\n", "OK", "after\n");
    close(fd);

    /* A request left half-sent is dropped the same way. */
    int half = ct_connect(fx->dir.sock);
    assert_true(ct_send_str(half, "echo never finis"));
    WAIT_STAT(fx, dropped_slow, 2);
    assert_int_equal(ct_read_to_eof(half), 0);
    close(half);
}

static void test_too_many_clients(void **state)
{
    struct ct_fx *fx = *state;
    struct ctl_server_options o = {.max_clients = 2};
    fx_serve(fx, &o);
    int a = ct_connect(fx->dir.sock), b = ct_connect(fx->dir.sock);
    ask_expect(a, "echo a\n", "OK", "a\n");
    ask_expect(b, "echo b\n", "OK", "b\n");
    int c = ct_connect(fx->dir.sock);
    assert_true(c >= 0);
    expect_answer(ct_read_answer(c), "ERR", "too many clients (limit 2)\n");
    assert_int_equal(ct_read_to_eof(c), 0);
    close(c);
    assert_int_equal(stats(fx).refused, 1);
    /* A slot freed is a slot for the next client. */
    close(a);
    struct ct_answer ans = {0};
    for (int i = 0; i < CT_WAIT_MS / 5; i++) {
        c = ct_connect(fx->dir.sock);
        ans = ct_ask(c, "echo c\n");
        close(c);
        if (ans.ok && !strcmp(ans.status, "OK"))
            break;
        free(ans.body);
        ans.body = NULL;
        ct_sleep_ms(5);
    }
    expect_answer(ans, "OK", "c\n");
    close(b);
}

/* ---- the socket file ------------------------------------------------------------------ */

static void test_permissions(void **state)
{
    struct ct_fx *fx = *state;
    /* Even with an empty umask the socket is owner-only. */
    mode_t old = umask(0);
    fx_serve(fx, NULL);
    umask(old);
    struct stat st;
    assert_int_equal(lstat(fx->dir.sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(lstat(fx->dir.run, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_string_equal(ctl_server_path(fx->srv), fx->dir.sock);

    /* destroy removes the socket file. */
    ctl_server_destroy(fx->srv);
    fx->srv = NULL;
    assert_int_equal(lstat(fx->dir.sock, &st), -1);
    assert_int_equal(errno, ENOENT);
}

static void expect_create_error(const char *path, const char *want)
{
    struct ctl_server *srv = NULL;
    struct ct_aux aux = {0};
    char err[256] = "";
    assert_int_equal(ctl_server_create(path, ct_table, CT_N_TABLE, &aux, NULL, &srv, err,
                                       sizeof err),
                     -1);
    assert_null(srv);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_unsafe_paths(void **state)
{
    struct ct_fx *fx = *state;
    char path[256];

    /* A run directory others may write to. */
    assert_int_equal(mkdir(fx->dir.run, 0700), 0);
    assert_int_equal(chmod(fx->dir.run, 0777), 0);
    snprintf(path, sizeof path, "run directory %s is writable by others (mode 0777)",
             fx->dir.run);
    expect_create_error(fx->dir.sock, path);
    assert_int_equal(chmod(fx->dir.run, 0755), 0); /* not writable: accepted */
    fx_serve(fx, NULL);
    ctl_server_destroy(fx->srv);
    fx->srv = NULL;

    /* A run directory owned by someone else (root can make one). */
    if (geteuid() == 0) {
        assert_int_equal(chown(fx->dir.run, 65534, 65534), 0);
        expect_create_error(fx->dir.sock, "is owned by uid 65534, not by uid 0: refused");
        assert_int_equal(chown(fx->dir.run, 0, 0), 0);
    }

    /* A symlink as the run directory. */
    char link[160], sock[200];
    snprintf(link, sizeof link, "%s/link", fx->dir.root);
    assert_int_equal(symlink(fx->dir.run, link), 0);
    snprintf(sock, sizeof sock, "%s/fs.ctl", link);
    expect_create_error(sock, "is not a directory (a symlink)");

    /* A missing parent. */
    snprintf(sock, sizeof sock, "%s/no/such/fs.ctl", fx->dir.root);
    expect_create_error(sock, "cannot create run directory");

    /* A file that is not a socket at the path. */
    snprintf(sock, sizeof sock, "%s/plain", fx->dir.run);
    FILE *f = fopen(sock, "w");
    assert_non_null(f);
    fclose(f);
    expect_create_error(sock, "exists and is not a socket: refused");

    /* Longer than sun_path. */
    char longp[200];
    memset(longp, 'x', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    expect_create_error(longp, "longer than 107 bytes");
    expect_create_error("", "is empty");
}

static void test_second_server_refused(void **state)
{
    struct ct_fx *fx = *state;
    fx_serve(fx, NULL);
    char want[200];
    snprintf(want, sizeof want, "%s is in use by a running server", fx->dir.sock);
    expect_create_error(fx->dir.sock, want);
    int fd = ct_connect(fx->dir.sock);
    ask_expect(fd, "echo first\n", "OK", "first\n"); /* the first one goes on */
    close(fd);

    /* Created but not started: the socket listens already, still refused. */
    ctl_server_stop(fx->srv);
    expect_create_error(fx->dir.sock, want);
    /* Stopped, connections wait in the backlog; started again, served. */
    fd = ct_connect(fx->dir.sock);
    assert_true(fd >= 0);
    assert_true(ct_send_str(fd, "echo later\n"));
    char err[128];
    assert_int_equal(ctl_server_start(fx->srv, err, sizeof err), 0);
    expect_answer(ct_read_answer(fd), "OK", "later\n");
    close(fd);
}

/* A server process killed with SIGKILL leaves its socket file behind;
 * connecting to it is refused, and a new server replaces it. */
static void test_stale_socket_replaced(void **state)
{
    struct ct_fx *fx = *state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct ctl_server *srv;
        struct ct_aux aux = {0};
        char err[256];
        if (ctl_server_create(fx->dir.sock, ct_table, CT_N_TABLE, &aux, NULL, &srv, err,
                              sizeof err) ||
            ctl_server_start(srv, err, sizeof err))
            _exit(1);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    int fd = ct_connect(fx->dir.sock);
    ask_expect(fd, "echo child\n", "OK", "child\n");
    close(fd);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));

    struct stat st;
    assert_int_equal(lstat(fx->dir.sock, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(ct_connect(fx->dir.sock), -1);
    assert_int_equal(errno, ECONNREFUSED);

    fx_serve(fx, NULL);
    fd = ct_connect(fx->dir.sock);
    ask_expect(fd, "echo replaced\n", "OK", "replaced\n");
    close(fd);
}

/* A server between its bind() and listen() refuses connections as a dead
 * one's socket does, but it holds the path's lock: a second server starting
 * at that moment is refused and leaves the socket alone. Once the lock is
 * free, the refusing socket is a stale one and is replaced. */
static void test_starting_server_kept(void **state)
{
    struct ct_fx *fx = *state;
    assert_int_equal(mkdir(fx->dir.run, 0700), 0);
    char lock[96];
    snprintf(lock, sizeof lock, "%s.lock", fx->dir.sock);
    int lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(lock_fd >= 0);
    assert_int_equal(flock(lock_fd, LOCK_EX | LOCK_NB), 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", fx->dir.sock);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (const struct sockaddr *)&a, sizeof a), 0);
    struct stat before, after;
    assert_int_equal(lstat(fx->dir.sock, &before), 0);
    assert_int_equal(ct_connect(fx->dir.sock), -1);
    assert_int_equal(errno, ECONNREFUSED);

    char want[200];
    snprintf(want, sizeof want, "%s is in use by a running server (it holds %s)",
             fx->dir.sock, lock);
    expect_create_error(fx->dir.sock, want);
    assert_int_equal(lstat(fx->dir.sock, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino);

    close(lock_fd); /* the starting server died before listen() */
    close(fd);
    fx_serve(fx, NULL);
    int c = ct_connect(fx->dir.sock);
    ask_expect(c, "echo took over\n", "OK", "took\nover\n");
    close(c);
    /* The running server holds the lock now. */
    lock_fd = open(lock, O_RDWR | O_CLOEXEC);
    assert_true(lock_fd >= 0);
    assert_int_equal(flock(lock_fd, LOCK_EX | LOCK_NB), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    ctl_server_destroy(fx->srv);
    fx->srv = NULL;
    assert_int_equal(flock(lock_fd, LOCK_EX | LOCK_NB), 0); /* released on destroy */
    close(lock_fd);
}

/* ---- the command table -------------------------------------------------------------------- */

static void test_bad_table(void **state)
{
    struct ct_fx *fx = *state;
    struct ctl_server *srv = NULL;
    char err[256];
    struct ctl_command t[2] = {ct_table[0], ct_table[0]};
    assert_int_equal(ctl_server_create(fx->dir.sock, t, 2, NULL, NULL, &srv, err, sizeof err),
                     -1);
    assert_string_equal(err, "command 'echo' is defined twice");
    t[1].name = "version";
    assert_int_equal(ctl_server_create(fx->dir.sock, t, 2, NULL, NULL, &srv, err, sizeof err),
                     -1);
    assert_string_equal(err, "command 'version' is built in");
    t[1] = ct_table[1];
    t[1].min_args = 3;
    assert_int_equal(ctl_server_create(fx->dir.sock, t, 2, NULL, NULL, &srv, err, sizeof err),
                     -1);
    assert_string_equal(err, "command 'add': bad argument counts");
    t[1].handler = NULL;
    assert_int_equal(ctl_server_create(fx->dir.sock, t, 2, NULL, NULL, &srv, err, sizeof err),
                     -1);
    assert_string_equal(err, "command table row 1: name, usage, help and handler are required");
    struct ctl_server_options o = {.max_clients = 4097};
    assert_int_equal(ctl_server_create(fx->dir.sock, ct_table, CT_N_TABLE, NULL, &o, &srv, err,
                                       sizeof err),
                     -1);
    assert_string_equal(err, "max_clients 4097: at most 4096");
    assert_null(srv);
}

int main(void)
{
#define T_(f) cmocka_unit_test_setup_teardown(f, ct_fx_setup, ct_fx_teardown)
    const struct CMUnitTest tests[] = {
        T_(test_answers),
        T_(test_json),
        T_(test_malformed),
        T_(test_oversized),
        T_(test_disconnects),
        T_(test_interleaved),
        T_(test_concurrent_clients),
        T_(test_slow_reader),
        T_(test_too_many_clients),
        T_(test_permissions),
        T_(test_unsafe_paths),
        T_(test_second_server_refused),
        T_(test_stale_socket_replaced),
        T_(test_starting_server_kept),
        T_(test_bad_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
