/* test_ctl_proto.c: the control protocol (app/ctl-proto.c): splitting a
 * request line into words, finding line ends, quoting words back into a
 * line, framing answers and reading answer headers.
 *
 * The expected words of the quoting cases are those of POSIX shell
 * splitting (they agree with Python's shlex.split on every case here);
 * the expected frames follow the format in ctl-proto.h, written out by
 * hand. JSON bodies are checked by parsing them back with jansson. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-proto.h"

/* ---- splitting ----------------------------------------------------------- */

struct split_case {
    const char *line;
    bool json;
    const char *words[6]; /* NULL-terminated */
};

static const struct split_case split_cases[] = {
    {"echo a b", false, {"echo", "a", "b"}},
    {"  echo   a\tb  ", false, {"echo", "a", "b"}},
    {"rule-add 'priority=10,in_port=p0,ip actions=output:p1'", false,
     {"rule-add", "priority=10,in_port=p0,ip actions=output:p1"}},
    {"a \"b c\" d", false, {"a", "b c", "d"}},
    {"a 'it'\\''s'", false, {"a", "it's"}},
    {"a \"x\\\"y\\\\z\"", false, {"a", "x\"y\\z"}},
    {"a \"x\\ny\"", false, {"a", "x\\ny"}},
    {"a b\\ c", false, {"a", "b c"}},
    {"a ''", false, {"a", ""}},
    {"a \"\"", false, {"a", ""}},
    {"a x''y", false, {"a", "xy"}},
    {"a 'x'\"y\"z", false, {"a", "xyz"}},
    {"a 'back\\slash' \"single'inside\" 'double\"inside'", false,
     {"a", "back\\slash", "single'inside", "double\"inside"}},
    {"a \\'q \\\"d \\\\b", false, {"a", "'q", "\"d", "\\b"}},
    {"a 'tab\tinside'", false, {"a", "tab\tinside"}},
    {"--json help", true, {"help"}},
    {"  --json\tstats x", true, {"stats", "x"}},
    {"help --json", false, {"help", "--json"}},
    {"'--json' help", false, {"--json", "help"}},
    {"--jsonx help", false, {"--jsonx", "help"}},
    {"caf\xc3\xa9 \xff", false, {"caf\xc3\xa9", "\xff"}},
};

static void check_split(const struct split_case *c)
{
    struct ctl_request req;
    char err[128] = "";
    int rc = ctl_request_parse(c->line, strlen(c->line), &req, err, sizeof err);
    if (rc)
        fail_msg("'%s': %s", c->line, err);
    assert_int_equal(req.json, c->json);
    int n = 0;
    while (c->words[n])
        n++;
    assert_int_equal(req.argc, n);
    for (int i = 0; i < n; i++)
        assert_string_equal(req.argv[i], c->words[i]);
    assert_null(req.argv[n]);
    ctl_request_free(&req);
}

static void test_split(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof split_cases / sizeof split_cases[0]; i++)
        check_split(&split_cases[i]);
}

struct bad_case {
    const char *line;
    size_t len; /* 0: strlen */
    bool json;
    const char *reason;
};

static const struct bad_case bad_cases[] = {
    {"", 0, false, "empty request"},
    {" \t ", 0, false, "empty request"},
    {"--json", 0, true, "no command after --json"},
    {"--json   ", 0, true, "no command after --json"},
    {"echo 'abc", 0, false, "unterminated single quote at column 6"},
    {"echo \"abc", 0, false, "unterminated double quote at column 6"},
    {"--json echo \"a\\\"", 0, true, "unterminated double quote at column 13"},
    {"echo abc\\", 0, false, "trailing backslash at column 9"},
    {"echo a\x01z", 0, false, "control byte 0x01 at column 7"},
    {"echo a\x7f", 0, false, "control byte 0x7f at column 7"},
    {"echo a\nb", 0, false, "control byte 0x0a at column 7"},
    {"echo a\0b", 8, false, "control byte 0x00 at column 7"},
};

static void test_split_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        struct ctl_request req;
        char err[128] = "";
        size_t len = c->len ? c->len : strlen(c->line);
        assert_int_equal(ctl_request_parse(c->line, len, &req, err, sizeof err), -1);
        assert_string_equal(err, c->reason);
        assert_int_equal(req.argc, 0);
        assert_int_equal(req.json, c->json);
        ctl_request_free(&req);
    }
}

/* CTL_MAX_ARGS words pass, one more does not; --json does not count. */
static void test_split_word_limit(void **state)
{
    (void)state;
    char line[4 * (CTL_MAX_ARGS + 2) + 8] = "--json";
    for (int i = 0; i < CTL_MAX_ARGS; i++)
        strcat(line, " w");
    struct ctl_request req;
    char err[128];
    assert_int_equal(ctl_request_parse(line, strlen(line), &req, err, sizeof err), 0);
    assert_int_equal(req.argc, CTL_MAX_ARGS);
    assert_true(req.json);
    ctl_request_free(&req);
    const char *plain = line + 7; /* the same words without --json */
    assert_int_equal(ctl_request_parse(plain, strlen(plain), &req, err, sizeof err), 0);
    assert_int_equal(req.argc, CTL_MAX_ARGS);
    ctl_request_free(&req);
    strcat(line, " w");
    assert_int_equal(ctl_request_parse(line, strlen(line), &req, err, sizeof err), -1);
    assert_string_equal(err, "too many words (limit 256)");
    assert_true(req.json);
    ctl_request_free(&req);
    assert_int_equal(ctl_request_parse(plain, strlen(plain), &req, err, sizeof err), -1);
    assert_string_equal(err, "too many words (limit 256)");
    ctl_request_free(&req);
}

/* ---- line ends ------------------------------------------------------------ */

static void test_scan(void **state)
{
    (void)state;
    size_t line_len = 99, used = 99;
    assert_int_equal(ctl_request_scan("", 0, &line_len, &used), CTL_SCAN_MORE);
    assert_int_equal(ctl_request_scan("help", 4, &line_len, &used), CTL_SCAN_MORE);
    assert_int_equal(ctl_request_scan("help\nversion\n", 13, &line_len, &used), CTL_SCAN_LINE);
    assert_int_equal(line_len, 4);
    assert_int_equal(used, 5);
    assert_int_equal(ctl_request_scan("help\r\nx", 7, &line_len, &used), CTL_SCAN_LINE);
    assert_int_equal(line_len, 4);
    assert_int_equal(used, 6);
    assert_int_equal(ctl_request_scan("\n", 1, &line_len, &used), CTL_SCAN_LINE);
    assert_int_equal(line_len, 0);
    assert_int_equal(used, 1);
    assert_int_equal(ctl_request_scan("\r\n", 2, &line_len, &used), CTL_SCAN_LINE);
    assert_int_equal(line_len, 0);

    /* The limit counts the '\n': CTL_REQUEST_MAX - 1 bytes and a '\n'
     * fit, CTL_REQUEST_MAX bytes without one do not. */
    char *big = malloc(CTL_REQUEST_MAX + 2);
    assert_non_null(big);
    memset(big, 'a', CTL_REQUEST_MAX + 2);
    big[CTL_REQUEST_MAX - 1] = '\n';
    assert_int_equal(ctl_request_scan(big, CTL_REQUEST_MAX + 2, &line_len, &used),
                     CTL_SCAN_LINE);
    assert_int_equal(line_len, CTL_REQUEST_MAX - 1);
    assert_int_equal(used, CTL_REQUEST_MAX);
    big[CTL_REQUEST_MAX - 1] = 'a';
    assert_int_equal(ctl_request_scan(big, CTL_REQUEST_MAX - 1, &line_len, &used),
                     CTL_SCAN_MORE);
    assert_int_equal(ctl_request_scan(big, CTL_REQUEST_MAX, &line_len, &used),
                     CTL_SCAN_OVERSIZED);
    big[CTL_REQUEST_MAX] = '\n'; /* a newline one byte too late */
    assert_int_equal(ctl_request_scan(big, CTL_REQUEST_MAX + 2, &line_len, &used),
                     CTL_SCAN_OVERSIZED);
    free(big);
}

/* ---- quoting -------------------------------------------------------------- */

static void expect_format(int argc, char *const argv[], bool json, const char *line)
{
    size_t len = 0;
    char err[128] = "";
    char *s = ctl_request_format(argc, argv, json, &len, err, sizeof err);
    if (!s)
        fail_msg("format: %s", err);
    assert_string_equal(s, line);
    assert_int_equal(len, strlen(line));
    free(s);
}

static void test_format(void **state)
{
    (void)state;
    char *a[] = {"rule-add", "priority=10,in_port=p0,ip actions=output:p1"};
    expect_format(2, a, false, "rule-add 'priority=10,in_port=p0,ip actions=output:p1'\n");
    char *b[] = {"set", "tx-flush-interval=50", "a/b.c:d@e%f+g,h_-"};
    expect_format(3, b, true, "--json set tx-flush-interval=50 a/b.c:d@e%f+g,h_-\n");
    char *c[] = {"echo", "", "it's", "tab\there", "$HOME", "a\\b"};
    expect_format(6, c, false, "echo '' 'it'\\''s' 'tab\there' '$HOME' 'a\\b'\n");
    /* A command named --json is quoted, so it is not taken for the flag;
     * as an argument it needs nothing. */
    char *d[] = {"--json", "--json"};
    expect_format(2, d, false, "'--json' --json\n");

    size_t len;
    char err[128];
    char *nl[] = {"echo", "two\nlines"};
    assert_null(ctl_request_format(2, nl, false, &len, err, sizeof err));
    assert_string_equal(err, "word 2 has a control byte (a newline cannot be sent)");
    assert_null(ctl_request_format(0, nl, false, &len, err, sizeof err));
    assert_string_equal(err, "no command");

    /* Length: a word of CTL_REQUEST_MAX - 6 plain bytes after "echo "
     * makes a line of exactly CTL_REQUEST_MAX; one byte more is refused. */
    char *w = malloc(CTL_REQUEST_MAX);
    assert_non_null(w);
    memset(w, 'x', CTL_REQUEST_MAX - 6);
    w[CTL_REQUEST_MAX - 6] = '\0';
    char *e[] = {"echo", w};
    char *s = ctl_request_format(2, e, false, &len, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(len, CTL_REQUEST_MAX);
    free(s);
    memset(w, 'x', CTL_REQUEST_MAX - 5);
    w[CTL_REQUEST_MAX - 5] = '\0';
    assert_null(ctl_request_format(2, e, false, &len, err, sizeof err));
    assert_string_equal(err, "request longer than 65536 bytes");
    free(w);

    char *many[CTL_MAX_ARGS + 1];
    for (int i = 0; i <= CTL_MAX_ARGS; i++)
        many[i] = "w";
    s = ctl_request_format(CTL_MAX_ARGS, many, false, &len, err, sizeof err);
    assert_non_null(s);
    free(s);
    assert_null(ctl_request_format(CTL_MAX_ARGS + 1, many, false, &len, err, sizeof err));
    assert_string_equal(err, "too many words (limit 256)");
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random words of the bytes that quoting must get right: formatted, then
 * found as a line and split, they come back as they were. */
static void test_format_round_trip(void **state)
{
    (void)state;
    static const char alphabet[] = "ab Z09-_=,:./'\"\\\t $*?#;&|<>(){}[]~`!\xc3\xa9\xff";
    const char *quick = getenv("FS_TEST_QUICK");
    int rounds = quick && *quick == '1' ? 300 : 5000;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char words[8][24];
    char *argv[8];
    for (int r = 0; r < rounds; r++) {
        int argc = 1 + (int)(rng_next(&seed) % 8);
        bool json = rng_next(&seed) & 1;
        for (int i = 0; i < argc; i++) {
            int n = (int)(rng_next(&seed) % 20);
            for (int j = 0; j < n; j++)
                words[i][j] = alphabet[rng_next(&seed) % (sizeof alphabet - 1)];
            words[i][n] = '\0';
            argv[i] = words[i];
        }
        size_t len, line_len, used;
        char err[128];
        char *s = ctl_request_format(argc, argv, json, &len, err, sizeof err);
        assert_non_null(s);
        assert_int_equal(ctl_request_scan(s, len, &line_len, &used), CTL_SCAN_LINE);
        assert_int_equal(used, len);
        struct ctl_request req;
        if (ctl_request_parse(s, line_len, &req, err, sizeof err))
            fail_msg("round %d: '%s': %s", r, s, err);
        assert_int_equal(req.json, json);
        assert_int_equal(req.argc, argc);
        for (int i = 0; i < argc; i++)
            assert_string_equal(req.argv[i], argv[i]);
        ctl_request_free(&req);
        free(s);
    }
}

/* ---- answers -------------------------------------------------------------- */

static char *frame_of(const struct ctl_answer *a, bool json)
{
    size_t len;
    char *f = ctl_answer_frame(a, json, &len);
    assert_non_null(f);
    assert_int_equal(strlen(f), len);
    return f;
}

/* The frame must be the header for 'body' (its status, its length), then
 * body. */
static void expect_frame(const struct ctl_answer *a, bool json, bool error, const char *body)
{
    char *f = frame_of(a, json);
    char *want = malloc(strlen(body) + 32);
    assert_non_null(want);
    sprintf(want, "%s %zu\n%s", error ? "ERR" : "OK", strlen(body), body);
    assert_string_equal(f, want);
    free(want);
    free(f);
}

/* The body of a frame, checked against its header, parsed as JSON. */
static json_t *frame_json(const char *frame, bool want_error)
{
    bool error;
    size_t body_len, hdr_len;
    assert_int_equal(ctl_answer_parse_header(frame, strlen(frame), &error, &body_len,
                                             &hdr_len),
                     CTL_HEADER_OK);
    assert_int_equal(error, want_error);
    assert_int_equal(hdr_len + body_len, strlen(frame));
    assert_int_equal(frame[hdr_len + body_len - 1], '\n');
    json_error_t jerr;
    json_t *doc = json_loadb(frame + hdr_len, body_len, 0, &jerr);
    if (!doc)
        fail_msg("not JSON: %s (%s)", frame + hdr_len, jerr.text);
    return doc;
}

static void test_answer_text(void **state)
{
    (void)state;
    struct ctl_answer a;
    ctl_answer_init(&a);
    expect_frame(&a, false, false, "");
    ctl_answer_printf(&a, "hello");
    expect_frame(&a, false, false, "hello\n");
    ctl_answer_printf(&a, " %d\n", 42);
    expect_frame(&a, false, false, "hello 42\n");
    ctl_answer_destroy(&a);

    ctl_answer_init(&a);
    ctl_answer_printf(&a, "partial output");
    ctl_answer_error(&a, "no such rule: %s\n", "x");
    ctl_answer_printf(&a, "ignored after the error");
    ctl_answer_set_json(&a, json_true()); /* dropped */
    expect_frame(&a, false, true, "no such rule: x\n");
    ctl_answer_error(&a, "second");
    expect_frame(&a, false, true, "second\n");
    ctl_answer_destroy(&a);

    ctl_answer_init(&a);
    ctl_answer_set_json(&a, NULL);
    expect_frame(&a, false, true, "cannot build the JSON answer\n");
    ctl_answer_destroy(&a);
}

static void test_answer_json(void **state)
{
    (void)state;
    struct ctl_answer a;
    ctl_answer_init(&a);
    expect_frame(&a, true, false, "{}\n");
    ctl_answer_printf(&a, "added\n");
    expect_frame(&a, true, false, "{\"text\":\"added\\n\"}\n");
    ctl_answer_set_json(&a, json_pack("{s:i, s:[s,s]}", "n", 2, "rules", "a b", "c"));
    expect_frame(&a, true, false, "{\"n\":2,\"rules\":[\"a b\",\"c\"]}\n");
    /* Text form of an answer that gave text and JSON: the text. */
    expect_frame(&a, false, false, "added\n");
    ctl_answer_destroy(&a);

    /* Text form of a JSON-only answer: the document, indented. */
    ctl_answer_init(&a);
    ctl_answer_set_json(&a, json_pack("{s:i}", "n", 2));
    expect_frame(&a, false, false, "{\n  \"n\": 2\n}\n");
    ctl_answer_destroy(&a);

    ctl_answer_init(&a);
    ctl_answer_error(&a, "unknown command 'x'");
    expect_frame(&a, true, true, "{\"error\":\"unknown command 'x'\"}\n");
    ctl_answer_destroy(&a);

    /* Not UTF-8: escaped, and the body is still a JSON document. */
    ctl_answer_init(&a);
    ctl_answer_error(&a, "unknown command '\xff\xfe'");
    char *f = frame_of(&a, true);
    json_t *doc = frame_json(f, true);
    assert_string_equal(json_string_value(json_object_get(doc, "error")),
                        "unknown command '\\xff\\xfe'");
    json_decref(doc);
    free(f);
    ctl_answer_destroy(&a);

    ctl_answer_init(&a);
    ctl_answer_printf(&a, "caf\xc3\xa9 \x80");
    f = frame_of(&a, true);
    doc = frame_json(f, false);
    assert_string_equal(json_string_value(json_object_get(doc, "text")),
                        "caf\\xc3\\xa9 \\x80");
    json_decref(doc);
    free(f);
    ctl_answer_destroy(&a);
}

static void test_answer_limits(void **state)
{
    (void)state;
    /* An error reason is cut at CTL_ERROR_MAX bytes. */
    struct ctl_answer a;
    ctl_answer_init(&a);
    ctl_answer_error(&a, "%*s", CTL_ERROR_MAX + 100, "x");
    char *f = frame_of(&a, false);
    char want[32];
    snprintf(want, sizeof want, "ERR %d\n", CTL_ERROR_MAX + 1);
    assert_memory_equal(f, want, strlen(want));
    assert_int_equal(strlen(f), strlen(want) + CTL_ERROR_MAX + 1);
    free(f);
    ctl_answer_destroy(&a);

    /* Text past CTL_ANSWER_MAX turns the answer into an error. */
    ctl_answer_init(&a);
    size_t chunk = 4u << 20;
    for (size_t i = 0; i < CTL_ANSWER_MAX / chunk; i++)
        ctl_answer_printf(&a, "%*s", (int)chunk, "");
    assert_false(a.error);
    assert_int_equal(a.len, CTL_ANSWER_MAX);
    /* Exactly CTL_ANSWER_MAX bytes of text need a '\n' more: too long;
     * ending in its own '\n' they fit. */
    expect_frame(&a, false, true, "answer longer than 67108864 bytes\n");
    a.text[a.len - 1] = '\n';
    size_t flen;
    f = ctl_answer_frame(&a, false, &flen);
    assert_non_null(f);
    assert_int_equal(flen, strlen("OK 67108864\n") + CTL_ANSWER_MAX);
    assert_memory_equal(f, "OK 67108864\n", strlen("OK 67108864\n"));
    free(f);
    ctl_answer_printf(&a, "x");
    assert_true(a.error);
    expect_frame(&a, false, true, "answer longer than 67108864 bytes\n");
    ctl_answer_destroy(&a);
}

/* ---- answer headers -------------------------------------------------------- */

struct header_case {
    const char *in;
    enum ctl_header result;
    bool error;
    size_t body_len, hdr_len;
};

static const struct header_case header_cases[] = {
    {"OK 0\n", CTL_HEADER_OK, false, 0, 5},
    {"OK 12\nbody", CTL_HEADER_OK, false, 12, 6},
    {"ERR 7\nsecond\n", CTL_HEADER_OK, true, 7, 6},
    {"OK 67108864\n", CTL_HEADER_OK, false, 67108864, 12},
    {"", CTL_HEADER_MORE, false, 0, 0},
    {"O", CTL_HEADER_MORE, false, 0, 0},
    {"OK", CTL_HEADER_MORE, false, 0, 0},
    {"OK ", CTL_HEADER_MORE, false, 0, 0},
    {"E", CTL_HEADER_MORE, false, 0, 0},
    {"ERR 12", CTL_HEADER_MORE, false, 0, 0},
    {"ERR 123456789", CTL_HEADER_MORE, false, 0, 0},
    {"OK 67108865\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK 1234567890", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK \n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK 01\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK -1\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK +1\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK 1 \n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK 1\r\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"OK  1\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"ok 1\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"ERROR 1\n", CTL_HEADER_BROKEN, false, 0, 0},
    {"HTTP/1.1 200 OK\r\n", CTL_HEADER_BROKEN, false, 0, 0},
};

static void test_header(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof header_cases / sizeof header_cases[0]; i++) {
        const struct header_case *c = &header_cases[i];
        bool error = !c->error;
        size_t body_len = 99, hdr_len = 99;
        enum ctl_header r =
            ctl_answer_parse_header(c->in, strlen(c->in), &error, &body_len, &hdr_len);
        if (r != c->result)
            fail_msg("'%s': result %d, want %d", c->in, r, c->result);
        if (r == CTL_HEADER_OK) {
            assert_int_equal(error, c->error);
            assert_int_equal(body_len, c->body_len);
            assert_int_equal(hdr_len, c->hdr_len);
        }
    }
}

/* ---- default path ----------------------------------------------------------- */

static void test_default_path(void **state)
{
    (void)state;
    char *saved_sock = getenv("FLOWSWITCH_CTL_SOCKET");
    char *saved_xdg = getenv("XDG_RUNTIME_DIR");
    saved_sock = saved_sock ? strdup(saved_sock) : NULL;
    saved_xdg = saved_xdg ? strdup(saved_xdg) : NULL;
    char buf[128];

    setenv("FLOWSWITCH_CTL_SOCKET", "/tmp/x/fs.ctl", 1);
    assert_int_equal(ctl_default_socket_path(buf, sizeof buf), 0);
    assert_string_equal(buf, "/tmp/x/fs.ctl");
    assert_int_equal(ctl_default_socket_path(buf, 10), -1);

    setenv("FLOWSWITCH_CTL_SOCKET", "", 1);
    setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
    assert_int_equal(ctl_default_socket_path(buf, sizeof buf), 0);
    if (geteuid() == 0)
        assert_string_equal(buf, "/run/flowswitch/flowswitch.ctl");
    else
        assert_string_equal(buf, "/run/user/1000/flowswitch/flowswitch.ctl");
    unsetenv("XDG_RUNTIME_DIR");
    unsetenv("FLOWSWITCH_CTL_SOCKET");
    assert_int_equal(ctl_default_socket_path(buf, sizeof buf), 0);
    char want[64];
    if (geteuid() == 0)
        snprintf(want, sizeof want, "/run/flowswitch/flowswitch.ctl");
    else
        snprintf(want, sizeof want, "/tmp/flowswitch-%u/flowswitch.ctl", (unsigned)geteuid());
    assert_string_equal(buf, want);

    if (saved_sock)
        setenv("FLOWSWITCH_CTL_SOCKET", saved_sock, 1);
    if (saved_xdg)
        setenv("XDG_RUNTIME_DIR", saved_xdg, 1);
    free(saved_sock);
    free(saved_xdg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_errors),
        cmocka_unit_test(test_split_word_limit),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_answer_text),
        cmocka_unit_test(test_answer_json),
        cmocka_unit_test(test_answer_limits),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
