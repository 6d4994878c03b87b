/* test_ctl_client.c: the control client (app/ctl-client.c) and the
 * `flowswitch ctl` command, against the real server with the toy command
 * table, and against fake servers that answer wrongly, partly or never.
 * The command's output streams are captured in memory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>

#include "ctl-client.h"
#include "ctl-server.h"
#include "helpers/ctl_test.h"

/* The directory and a running toy server. */
static int fx_setup(void **state)
{
    if (ct_fx_setup(state))
        return -1;
    return ct_fx_serve(*state, NULL) ? 0 : -1;
}

/* One run of `flowswitch ctl`, its exit status and what it printed. */
struct run {
    int rc;
    char *out, *err;
    size_t out_len, err_len;
};

static struct run ctl_run(int argc, const char *const *args)
{
    char *argv[32];
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)args[i];
    argv[argc] = NULL;
    struct run r = {0};
    FILE *out = open_memstream(&r.out, &r.out_len);
    FILE *err = open_memstream(&r.err, &r.err_len);
    r.rc = ctl_cmd_main(argc, argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}

#define CTL(...)                                                                \
    ctl_run(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *),     \
            (const char *[]){__VA_ARGS__})

static void expect_run(struct run r, int rc, const char *out, const char *err)
{
    if (r.rc != rc)
        fail_msg("exit %d, want %d (stdout '%s', stderr '%s')", r.rc, rc, r.out, r.err);
    if (out)
        assert_string_equal(r.out, out);
    if (err && !strstr(r.err, err))
        fail_msg("stderr '%s' lacks '%s'", r.err, err);
    if (!err)
        assert_string_equal(r.err, "");
    free(r.out);
    free(r.err);
}

static void test_ok_and_errors(void **state)
{
    struct ct_fx *fx = *state;
    const char *s = fx->dir.sock;
    /* Arguments arrive exactly as given, whatever they contain. */
    expect_run(CTL("ctl", "--socket", s, "echo", "priority=10,in_port=p0,ip actions=output:p1",
                   "it's", "", "$HOME", "a\\b", "tab\there"),
               0, "priority=10,in_port=p0,ip actions=output:p1\nit's\n\n$HOME\na\\b\ntab\there\n",
               NULL);
    /* Options after COMMAND are the command's words. */
    expect_run(CTL("ctl", "--socket", s, "echo", "--json", "--socket"), 0, "--json\n--socket\n",
               NULL);
    expect_run(CTL("ctl", "--socket", s, "--json", "echo", "a b"), 0, "[\"a b\"]\n", NULL);
    expect_run(CTL("ctl", "-s", s, "-j", "version"), 0, "{\"version\":\"" FS_VERSION "\"}\n",
               NULL);
    expect_run(CTL("ctl", "--socket", s, "add", "1", "x"), 1, "",
               "flowswitch ctl: add: not a number\n");
    expect_run(CTL("ctl", "--socket", s, "--json", "add", "1"), 1,
               "{\"error\":\"'add' takes 2 arguments, not 1 (usage: add A B)\"}\n", NULL);
    expect_run(CTL("ctl", "--socket", s, "nosuch"), 1, "",
               "flowswitch ctl: unknown command 'nosuch' (try 'help')\n");
    /* A command named --json after "--" is sent quoted: a command, not
     * the flag. */
    expect_run(CTL("ctl", "--socket", s, "--", "--json", "x"), 1, "",
               "unknown command '--json'");

    /* The default path comes from FLOWSWITCH_CTL_SOCKET. */
    setenv("FLOWSWITCH_CTL_SOCKET", s, 1);
    expect_run(CTL("ctl", "echo", "from-env"), 0, "from-env\n", NULL);
    unsetenv("FLOWSWITCH_CTL_SOCKET");
}

static void test_usage(void **state)
{
    struct ct_fx *fx = *state;
    const char *s = fx->dir.sock;
    struct run r = CTL("ctl", "--help");
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: flowswitch ctl [--socket PATH] [--json]"));
    assert_non_null(strstr(r.out, "Exit status: 0 ok; 1 usage error"));
    free(r.out);
    free(r.err);
    expect_run(CTL("ctl"), 1, "", "flowswitch ctl: no COMMAND");
    expect_run(CTL("ctl", "--socket", s), 1, "", "flowswitch ctl: no COMMAND");
    expect_run(CTL("ctl", "--bogus", "help"), 1, "", "bad option '--bogus'");
    expect_run(CTL("ctl", "--socket"), 1, "", "bad option '--socket'");
    expect_run(CTL("ctl", "--timeout", "soon", "help"), 1, "",
               "--timeout 'soon': expected seconds, 0..86400");
    expect_run(CTL("ctl", "--timeout", "-1", "help"), 1, "", "expected seconds");
    expect_run(CTL("ctl", "--socket", s, "echo", "two\nlines"), 1, "",
               "word 2 has a control byte (a newline cannot be sent)");
}

static void test_unreachable(void **state)
{
    struct ct_fx *fx = *state;
    char path[96];
    snprintf(path, sizeof path, "%s/none.ctl", fx->dir.root);
    struct run r = CTL("ctl", "--socket", path, "help");
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "cannot reach"));
    assert_non_null(strstr(r.err, "No such file or directory"));
    free(r.out);
    free(r.err);

    /* A socket file nobody listens on. */
    snprintf(path, sizeof path, "%s/dead.ctl", fx->dir.root);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd);
    expect_run(CTL("ctl", "--socket", path, "help"), 2, "", "Connection refused");
}

/* ---- fake servers ---------------------------------------------------------------- */

struct fake {
    int listen_fd;
    const char *reply; /* sent after the request line, then close */
    size_t reply_len;
    int hold; /* read end of a pipe: with reply NULL, answer nothing until it closes */
    pthread_t thread;
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    int fd = accept(f->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char c;
    while (recv(fd, &c, 1, 0) == 1 && c != '\n')
        ;
    if (f->reply)
        ct_send(fd, f->reply, f->reply_len);
    else if (read(f->hold, &c, 1) < 0)
        perror("read");
    close(fd);
    return NULL;
}

static void fake_start(struct fake *f, const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    unlink(path);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->listen_fd, 4), 0);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_join(struct fake *f)
{
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
}

static void expect_fake(struct ct_fx *fx, const char *reply, size_t len, int rc, const char *out,
                        const char *err, const char *timeout)
{
    char path[96];
    snprintf(path, sizeof path, "%s/fake.ctl", fx->dir.root);
    struct fake f = {.reply = reply, .reply_len = len};
    fake_start(&f, path);
    if (timeout)
        expect_run(CTL("ctl", "--socket", path, "--timeout", timeout, "help"), rc, out, err);
    else
        expect_run(CTL("ctl", "--socket", path, "help"), rc, out, err);
    fake_join(&f);
}

static void test_fake_servers(void **state)
{
    struct ct_fx *fx = *state;
#define FAKE(s, ...) expect_fake(fx, s, sizeof s - 1, __VA_ARGS__)
    FAKE("OK 6\nfake!\n", 0, "fake!\n", NULL, NULL);
    FAKE("ERR 5\nnope\n", 1, "", "flowswitch ctl: nope\n", NULL);
    FAKE("OK 0\n", 0, "", NULL, NULL);
    /* A body of binary bytes is passed through as is. */
    char path[96];
    snprintf(path, sizeof path, "%s/binary.ctl", fx->dir.root);
    struct fake f = {.reply = "OK 3\n\0\xff\n", .reply_len = 8};
    fake_start(&f, path);
    struct run r = CTL("ctl", "--socket", path, "help");
    fake_join(&f);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.out_len, 3);
    assert_memory_equal(r.out, "\0\xff\n", 3);
    free(r.out);
    free(r.err);
    FAKE("HELLO\n", 2, "", "broken answer: the server sent \"H\"", NULL);
    FAKE("OK x\n", 2, "", "broken answer: the server sent \"OK x\"", NULL);
    FAKE("OK 99999999\n", 2, "", "broken answer", NULL);
    FAKE("OK 10\nabc", 2, "", "the server closed the connection after 9 bytes", NULL);
    FAKE("", 2, "", "the server closed the connection after 0 bytes", NULL);
    FAKE("OK 3\nabcdef", 0, "abc", NULL, NULL); /* what follows the answer is not read */

    /* A server that never answers: the client gives up at its timeout, also
     * one under half a millisecond (which must not round to 0, "no limit":
     * should it, the alarm ends the test). */
    snprintf(path, sizeof path, "%s/mute.ctl", fx->dir.root);
    static const char *const timeouts[] = {"0.2", "0.0004", "0.000001"};
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
        int hold[2];
        assert_int_equal(pipe(hold), 0);
        f = (struct fake){.hold = hold[0]};
        fake_start(&f, path);
        alarm(CT_WAIT_MS / 1000);
        expect_run(CTL("ctl", "--socket", path, "--timeout", timeouts[i], "help"), 2, "",
                   "no answer in time");
        alarm(0);
        close(hold[1]);
        fake_join(&f);
        close(hold[0]);
    }
}

static void test_library(void **state)
{
    struct ct_fx *fx = *state;
    struct ctl_reply reply;
    char err[256];
    const char line[] = "--json echo x\n";
    assert_int_equal(ctl_client_request(fx->dir.sock, line, sizeof line - 1, 0, &reply, err,
                                        sizeof err),
                     CTL_CLIENT_OK);
    assert_false(reply.error);
    assert_int_equal(reply.len, strlen("[\"x\"]\n"));
    assert_string_equal(reply.body, "[\"x\"]\n");
    ctl_reply_free(&reply);
    assert_null(reply.body);

    const char bad[] = "add 1 y\n";
    assert_int_equal(ctl_client_request(fx->dir.sock, bad, sizeof bad - 1, 1000, &reply, err,
                                        sizeof err),
                     CTL_CLIENT_OK);
    assert_true(reply.error);
    assert_string_equal(reply.body, "add: not a number\n");
    ctl_reply_free(&reply);

    char longp[200];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(ctl_client_request(longp, bad, sizeof bad - 1, 1000, &reply, err,
                                        sizeof err),
                     CTL_CLIENT_UNREACHABLE);
    assert_non_null(strstr(err, "path longer than 107 bytes"));
    assert_null(reply.body);
}

int main(void)
{
#define T_(f) cmocka_unit_test_setup_teardown(f, fx_setup, ct_fx_teardown)
    const struct CMUnitTest tests[] = {
        T_(test_ok_and_errors),
        T_(test_usage),
        T_(test_unreachable),
        T_(test_fake_servers),
        T_(test_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
