/* fuzz_ctl_request.c: libFuzzer harness for the control protocol
 * (app/ctl-proto.c), everything a control socket reads from outside.
 *
 * Each input is treated four ways, and abort() flags a broken invariant:
 *  - as what a client sends: cut into lines as the server does, each line
 *    split into words (copied into an exactly-sized buffer, so ASan flags
 *    any read past the line); a split either fails cleanly or gives 1 to
 *    CTL_MAX_ARGS words without control bytes, --json exactly when the
 *    line starts with that bare word, and words that survive quoting:
 *    formatting them and splitting again gives the same words;
 *  - as words (NUL-separated) a client quotes: formatting fails only for a
 *    control byte or a limit, and a formatted line splits back into them;
 *  - as answer text: the framed answer's header matches its body, and a
 *    JSON body is always a valid JSON document (even for non-UTF-8 text);
 *  - as what a server answers: a header parse is strict and bounded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-proto.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static bool is_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static bool leading_json(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return n - i >= 6 && !memcmp(s + i, "--json", 6) &&
           (n - i == 6 || s[i + 6] == ' ' || s[i + 6] == '\t');
}

/* Formats words, splits the line again: the same words come back. */
static void check_round_trip(int argc, char **argv, bool json)
{
    size_t len, line_len, used;
    char err[256];
    char *line = ctl_request_format(argc, argv, json, &len, err, sizeof err);
    if (!line) {
        /* Only a control byte or a limit stops formatting. */
        bool control = false;
        size_t total = 0;
        for (int i = 0; i < argc; i++) {
            for (const char *p = argv[i]; *p; p++)
                control |= is_control((unsigned char)*p);
            total += 4 * strlen(argv[i]) + 3;
        }
        CHECK(control || argc < 1 || argc > CTL_MAX_ARGS || total + 8 > CTL_REQUEST_MAX);
        CHECK(err[0]);
        return;
    }
    CHECK(len <= CTL_REQUEST_MAX && strlen(line) == len);
    CHECK(ctl_request_scan(line, len, &line_len, &used) == CTL_SCAN_LINE);
    CHECK(used == len);
    struct ctl_request req;
    CHECK(ctl_request_parse(line, line_len, &req, err, sizeof err) == 0);
    CHECK(req.json == json && req.argc == argc);
    for (int i = 0; i < argc; i++)
        CHECK(!strcmp(req.argv[i], argv[i]));
    ctl_request_free(&req);
    free(line);
}

static void check_line(const char *src, size_t len)
{
    char *line = malloc(len ? len : 1);
    CHECK(line != NULL);
    memcpy(line, src, len);
    struct ctl_request req;
    char err[256] = "";
    int rc = ctl_request_parse(line, len, &req, err, sizeof err);
    CHECK(req.json == leading_json(line, len));
    if (rc) {
        CHECK(rc == -1 && req.argc == 0 && err[0]);
        ctl_request_free(&req);
        free(line);
        return;
    }
    CHECK(req.argc >= 1 && req.argc <= CTL_MAX_ARGS && req.argv[req.argc] == NULL);
    size_t total = 0;
    for (int i = 0; i < req.argc; i++) {
        size_t n = strlen(req.argv[i]);
        for (size_t j = 0; j < n; j++)
            CHECK(!is_control((unsigned char)req.argv[i][j]));
        total += n + 1;
    }
    CHECK(total <= len + 1);

    /* Deterministic. */
    struct ctl_request again;
    CHECK(ctl_request_parse(line, len, &again, err, sizeof err) == 0);
    CHECK(again.argc == req.argc && again.json == req.json);
    for (int i = 0; i < req.argc; i++)
        CHECK(!strcmp(again.argv[i], req.argv[i]));
    ctl_request_free(&again);

    check_round_trip(req.argc, req.argv, req.json);
    ctl_request_free(&req);
    free(line);
}

/* Lines as the server cuts them (an unterminated tail as if the client
 * closed after it). */
static void check_stream(const char *buf, size_t size)
{
    size_t off = 0;
    while (off < size) {
        size_t line_len = 0, used = 0;
        enum ctl_scan s = ctl_request_scan(buf + off, size - off, &line_len, &used);
        if (s == CTL_SCAN_MORE) {
            CHECK(size - off < CTL_REQUEST_MAX && !memchr(buf + off, '\n', size - off));
            check_line(buf + off, size - off);
            return;
        }
        if (s == CTL_SCAN_OVERSIZED) {
            CHECK(size - off >= CTL_REQUEST_MAX && !memchr(buf + off, '\n', CTL_REQUEST_MAX));
            return;
        }
        CHECK(s == CTL_SCAN_LINE && used >= 1 && used <= size - off);
        CHECK(used <= CTL_REQUEST_MAX && buf[off + used - 1] == '\n');
        CHECK(!memchr(buf + off, '\n', used - 1));
        CHECK(line_len == used - 1 || (line_len == used - 2 && buf[off + line_len] == '\r'));
        check_line(buf + off, line_len);
        off += used;
    }
}

/* The input as NUL-separated words. */
static void check_words(const char *buf, size_t size)
{
    char *copy = malloc(size + 1);
    CHECK(copy != NULL);
    memcpy(copy, buf, size);
    copy[size] = '\0';
    char *argv[17];
    int argc = 0;
    bool json = size && (buf[0] & 1);
    for (size_t i = json ? 1 : 0; i <= size && argc < 17;) {
        argv[argc++] = copy + i;
        i += strlen(copy + i) + 1;
    }
    check_round_trip(argc, argv, json);
    free(copy);
}

static void check_frame(const struct ctl_answer *a, bool json)
{
    size_t len, body_len = 0, hdr_len = 0;
    bool error = false;
    char *f = ctl_answer_frame(a, json, &len);
    CHECK(f != NULL);
    CHECK(ctl_answer_parse_header(f, len, &error, &body_len, &hdr_len) == CTL_HEADER_OK);
    CHECK(error == a->error && hdr_len + body_len == len);
    CHECK(body_len == 0 || f[len - 1] == '\n');
    if (json) {
        json_t *doc = json_loadb(f + hdr_len, body_len, 0, NULL);
        CHECK(doc != NULL);
        CHECK(json_is_object(doc));
        json_decref(doc);
    }
    free(f);
}

/* The input as a handler's text, and as an error reason. */
static void check_answers(const char *buf, size_t size)
{
    struct ctl_answer a;
    ctl_answer_init(&a);
    ctl_answer_printf(&a, "%.*s", (int)size, buf);
    check_frame(&a, false);
    check_frame(&a, true);
    ctl_answer_error(&a, "%.*s", (int)size, buf);
    check_frame(&a, false);
    check_frame(&a, true);
    ctl_answer_destroy(&a);
}

/* The input as what a server sent. */
static void check_header(const char *buf, size_t size)
{
    bool error = false;
    size_t body_len = 0, hdr_len = 0;
    enum ctl_header h = ctl_answer_parse_header(buf, size, &error, &body_len, &hdr_len);
    if (h == CTL_HEADER_OK) {
        CHECK(hdr_len <= CTL_ANSWER_HEADER_MAX && hdr_len <= size && buf[hdr_len - 1] == '\n');
        CHECK(body_len <= CTL_ANSWER_MAX);
        CHECK(!memcmp(buf, error ? "ERR " : "OK ", error ? 4 : 3));
        /* Every shorter prefix is still incomplete. */
        for (size_t n = 0; n < hdr_len; n++) {
            bool e;
            size_t b, hl;
            CHECK(ctl_answer_parse_header(buf, n, &e, &b, &hl) == CTL_HEADER_MORE);
        }
    } else if (h == CTL_HEADER_MORE) {
        CHECK(size < CTL_ANSWER_HEADER_MAX);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * CTL_REQUEST_MAX)
        return 0;
    const char *buf = (const char *)data;
    check_stream(buf, size);
    check_words(buf, size);
    check_answers(buf, size);
    check_header(buf, size);
    return 0;
}
