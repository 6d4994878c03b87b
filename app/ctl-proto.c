/* ctl-proto.c: the control socket's request/answer protocol. */
#include "ctl-proto.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static bool ctl_is_blank(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* A byte a request may not carry: every control byte but tab. */
static bool ctl_is_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* Bytes a word may have to go unquoted. */
static bool ctl_is_plain(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("_@%+=:,./-", c));
}

/* ---- requests ------------------------------------------------------------ */

enum ctl_scan ctl_request_scan(const char *buf, size_t len, size_t *line_len,
                               size_t *consumed)
{
    size_t window = len < CTL_REQUEST_MAX ? len : CTL_REQUEST_MAX;
    const char *nl = memchr(buf, '\n', window);
    if (!nl)
        return len < CTL_REQUEST_MAX ? CTL_SCAN_MORE : CTL_SCAN_OVERSIZED;
    size_t n = (size_t)(nl - buf);
    *consumed = n + 1;
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    *line_len = n;
    return CTL_SCAN_LINE;
}

/* The line's first word is a bare --json. */
static bool ctl_leading_json(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && ctl_is_blank((unsigned char)line[i]))
        i++;
    return len - i >= 6 && !memcmp(line + i, "--json", 6) &&
           (len - i == 6 || ctl_is_blank((unsigned char)line[i + 6]));
}

/* Copies the word starting at line[*pos] into out, removing quotes and
 * escapes; advances *pos past it and returns the bytes written (no NUL),
 * or -1 with the reason in err. */
static long ctl_word(const char *line, size_t len, size_t *pos, char *out, char *err,
                     size_t errlen)
{
    size_t i = *pos, o = 0;
    while (i < len && !ctl_is_blank((unsigned char)line[i])) {
        char c = line[i];
        if (c == '\'' || c == '"') {
            size_t open = i++;
            while (i < len && line[i] != c) {
                if (c == '"' && line[i] == '\\' && i + 1 < len &&
                    (line[i + 1] == '"' || line[i + 1] == '\\'))
                    i++;
                out[o++] = line[i++];
            }
            if (i == len) {
                fs_errf(err, errlen, "unterminated %s quote at column %zu",
                        c == '"' ? "double" : "single", open + 1);
                return -1;
            }
            i++;
        } else if (c == '\\') {
            if (i + 1 == len) {
                fs_errf(err, errlen, "trailing backslash at column %zu", i + 1);
                return -1;
            }
            out[o++] = line[i + 1];
            i += 2;
        } else {
            out[o++] = line[i++];
        }
    }
    *pos = i;
    return (long)o;
}

int ctl_request_parse(const char *line, size_t len, struct ctl_request *req,
                      char *err, size_t errlen)
{
    memset(req, 0, sizeof *req);
    req->json = ctl_leading_json(line, len);
    for (size_t i = 0; i < len; i++) {
        if (ctl_is_control((unsigned char)line[i])) {
            fs_errf(err, errlen, "control byte 0x%02x at column %zu",
                    (unsigned char)line[i], i + 1);
            return -1;
        }
    }
    /* Each word's text is no longer than its source and the words are
     * separated by blanks, so len + 1 bytes hold every word and its NUL. */
    req->store = malloc(len + 1);
    req->argv = malloc((CTL_MAX_ARGS + 2) * sizeof *req->argv);
    if (!req->store || !req->argv) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    int limit = CTL_MAX_ARGS + (req->json ? 1 : 0);
    int n = 0;
    size_t i = 0, o = 0;
    for (;;) {
        while (i < len && ctl_is_blank((unsigned char)line[i]))
            i++;
        if (i == len)
            break;
        if (n == limit) {
            fs_errf(err, errlen, "too many words (limit %d)", CTL_MAX_ARGS);
            return -1;
        }
        long w = ctl_word(line, len, &i, req->store + o, err, errlen);
        if (w < 0)
            return -1;
        req->argv[n++] = req->store + o;
        o += (size_t)w;
        req->store[o++] = '\0';
    }
    char **words = req->argv;
    if (req->json) {
        words++;
        n--;
        memmove(req->argv, words, (size_t)n * sizeof *words);
    }
    if (n == 0) {
        fs_errf(err, errlen, req->json ? "no command after --json" : "empty request");
        return -1;
    }
    req->argv[n] = NULL;
    req->argc = n;
    return 0;
}

void ctl_request_free(struct ctl_request *req)
{
    free(req->argv);
    free(req->store);
    req->argv = NULL;
    req->store = NULL;
    req->argc = 0;
}

/* Bytes the word takes on the wire (without a separator); 0 if it has a
 * byte no request may carry. */
static size_t ctl_quoted_len(const char *w, bool is_command)
{
    size_t n = 0, quotes = 0;
    bool plain = *w != '\0' && !(is_command && !strcmp(w, "--json"));
    for (const char *p = w; *p; p++, n++) {
        unsigned char c = (unsigned char)*p;
        if (ctl_is_control(c))
            return 0;
        plain = plain && ctl_is_plain(c);
        quotes += c == '\'';
    }
    return plain ? n : n + 2 + 3 * quotes;
}

static char *ctl_quote_into(char *o, const char *w, size_t quoted_len)
{
    size_t n = strlen(w);
    if (quoted_len == n) {
        memcpy(o, w, n);
        return o + n;
    }
    *o++ = '\'';
    for (const char *p = w; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    return o;
}

char *ctl_request_format(int argc, char *const argv[], bool json, size_t *len,
                         char *err, size_t errlen)
{
    if (argc < 1) {
        fs_errf(err, errlen, "no command");
        return NULL;
    }
    if (argc > CTL_MAX_ARGS) {
        fs_errf(err, errlen, "too many words (limit %d)", CTL_MAX_ARGS);
        return NULL;
    }
    size_t total = json ? 7 : 0; /* "--json " */
    for (int i = 0; i < argc; i++) {
        size_t q = ctl_quoted_len(argv[i], i == 0);
        if (q == 0) {
            fs_errf(err, errlen, "word %d has a control byte (a newline cannot be sent)",
                    i + 1);
            return NULL;
        }
        total += q + 1; /* a blank or the final '\n' */
        if (total > CTL_REQUEST_MAX) {
            fs_errf(err, errlen, "request longer than %d bytes", CTL_REQUEST_MAX);
            return NULL;
        }
    }
    char *buf = malloc(total + 1);
    if (!buf) {
        fs_errf(err, errlen, "out of memory");
        return NULL;
    }
    char *o = buf;
    if (json) {
        memcpy(o, "--json ", 7);
        o += 7;
    }
    for (int i = 0; i < argc; i++) {
        o = ctl_quote_into(o, argv[i], ctl_quoted_len(argv[i], i == 0));
        *o++ = i + 1 < argc ? ' ' : '\n';
    }
    *o = '\0';
    *len = (size_t)(o - buf);
    return buf;
}

/* ---- answers ------------------------------------------------------------- */

void ctl_answer_init(struct ctl_answer *a)
{
    memset(a, 0, sizeof *a);
}

void ctl_answer_destroy(struct ctl_answer *a)
{
    free(a->text);
    json_decref(a->json);
    memset(a, 0, sizeof *a);
}

/* Drops the body and makes the answer an error with 'reason' (taken). A
 * NULL reason stands for "out of memory". */
static void ctl_answer_fail(struct ctl_answer *a, char *reason)
{
    free(a->text);
    json_decref(a->json);
    a->json = NULL;
    a->error = true;
    a->text = reason;
    a->len = reason ? strlen(reason) : 0;
    a->cap = a->len;
    while (a->len && a->text[a->len - 1] == '\n')
        a->text[--a->len] = '\0';
}

static char *ctl_vasprintf(const char *fmt, va_list ap, size_t *len)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    *len = (size_t)n;
    return s;
}

void ctl_answer_printf(struct ctl_answer *a, const char *fmt, ...)
{
    if (a->error)
        return;
    va_list ap;
    va_start(ap, fmt);
    size_t n;
    char *s = ctl_vasprintf(fmt, ap, &n);
    va_end(ap);
    if (!s) {
        ctl_answer_fail(a, NULL);
        return;
    }
    if (n > CTL_ANSWER_MAX - a->len) {
        free(s);
        ctl_answer_error(a, "answer longer than %u bytes", CTL_ANSWER_MAX);
        return;
    }
    if (fs_grow((void **)&a->text, &a->cap, a->len + n + 1, 1, 256)) {
        free(s);
        ctl_answer_fail(a, NULL);
        return;
    }
    memcpy(a->text + a->len, s, n + 1);
    a->len += n;
    free(s);
}

void ctl_answer_error(struct ctl_answer *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n;
    char *s = ctl_vasprintf(fmt, ap, &n);
    va_end(ap);
    ctl_answer_fail(a, s);
}

void ctl_answer_set_json(struct ctl_answer *a, json_t *doc)
{
    if (a->error) {
        json_decref(doc);
        return;
    }
    if (!doc) {
        ctl_answer_error(a, "cannot build the JSON answer");
        return;
    }
    json_decref(a->json);
    a->json = doc;
}

/* A JSON string of s[0..n); bytes that are not valid UTF-8 (the text may
 * quote what a client sent) are written as \xNN, so the result is always
 * a valid document. NULL only when out of memory. */
static json_t *ctl_json_text(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    if (j)
        return j;
    char *esc = malloc(4 * n + 1);
    if (!esc)
        return NULL;
    char *o = esc;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80)
            o += sprintf(o, "\\x%02x", c);
        else
            *o++ = (char)c;
    }
    j = json_stringn(esc, (size_t)(o - esc));
    free(esc);
    return j;
}

/* The JSON body of an answer that is not an error. */
static char *ctl_json_body(const struct ctl_answer *a, size_t flags)
{
    json_t *doc;
    if (a->json)
        doc = json_incref(a->json);
    else if (a->len)
        doc = json_pack("{s:o*}", "text", ctl_json_text(a->text, a->len));
    else
        doc = json_object();
    if (!doc)
        return NULL;
    char *s = json_dumps(doc, flags);
    json_decref(doc);
    return s;
}

/* Joins header and body (body NULL: none), adding a '\n' to a body that
 * lacks one. */
static char *ctl_frame(bool error, const char *body, size_t body_len, size_t *len)
{
    bool nl = body_len && body[body_len - 1] != '\n';
    char hdr[CTL_ANSWER_HEADER_MAX];
    int h = snprintf(hdr, sizeof hdr, "%s %zu\n", error ? "ERR" : "OK", body_len + nl);
    char *f = malloc((size_t)h + body_len + nl + 1);
    if (!f)
        return NULL;
    memcpy(f, hdr, (size_t)h);
    if (body_len)
        memcpy(f + h, body, body_len);
    if (nl)
        f[h + body_len] = '\n';
    *len = (size_t)h + body_len + nl;
    f[*len] = '\0';
    return f;
}

static char *ctl_frame_error(const char *reason, size_t reason_len, bool json,
                             size_t *len)
{
    if (!reason) {
        reason = "out of memory";
        reason_len = strlen(reason);
    }
    if (reason_len > CTL_ERROR_MAX)
        reason_len = CTL_ERROR_MAX;
    if (!json)
        return ctl_frame(true, reason, reason_len, len);
    json_t *doc = json_pack("{s:o*}", "error", ctl_json_text(reason, reason_len));
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!s)
        return NULL;
    char *f = ctl_frame(true, s, strlen(s), len);
    free(s);
    return f;
}

char *ctl_answer_frame(const struct ctl_answer *a, bool json, size_t *len)
{
    if (a->error)
        return ctl_frame_error(a->text, a->len, json, len);
    char *dumped = NULL;
    const char *body = a->text;
    size_t body_len = a->len;
    if (json || (!a->len && a->json)) {
        dumped = ctl_json_body(a, json ? JSON_COMPACT : JSON_INDENT(2));
        if (!dumped)
            return ctl_frame_error(NULL, 0, json, len);
        body = dumped;
        body_len = strlen(dumped);
    }
    char *f;
    if (body_len + (body_len && body[body_len - 1] != '\n') > CTL_ANSWER_MAX) {
        char reason[64];
        snprintf(reason, sizeof reason, "answer longer than %u bytes", CTL_ANSWER_MAX);
        f = ctl_frame_error(reason, strlen(reason), json, len);
    } else {
        f = ctl_frame(false, body, body_len, len);
    }
    free(dumped);
    return f;
}

enum ctl_header ctl_answer_parse_header(const char *buf, size_t len, bool *error,
                                        size_t *body_len, size_t *header_len)
{
    static const char *const words[] = {"OK ", "ERR "};
    size_t i = 0;
    for (int w = 0; w < 2 && !i; w++) {
        size_t wl = strlen(words[w]);
        size_t n = len < wl ? len : wl;
        if (memcmp(buf, words[w], n))
            continue;
        if (n < wl)
            return CTL_HEADER_MORE;
        *error = w == 1;
        i = wl;
    }
    if (!i)
        return CTL_HEADER_BROKEN;
    size_t j = i;
    uint64_t v = 0;
    while (j < len && buf[j] >= '0' && buf[j] <= '9' && j - i < 10)
        v = v * 10 + (uint64_t)(buf[j++] - '0');
    size_t digits = j - i;
    if (digits > 9)
        return CTL_HEADER_BROKEN;
    if (j == len)
        return CTL_HEADER_MORE;
    if (buf[j] != '\n' || digits == 0 || (digits > 1 && buf[i] == '0') ||
        v > CTL_ANSWER_MAX)
        return CTL_HEADER_BROKEN;
    *body_len = (size_t)v;
    *header_len = j + 1;
    return CTL_HEADER_OK;
}

/* ---- where the socket lives ---------------------------------------------- */

int ctl_default_socket_path(char *buf, size_t len)
{
    const char *env = getenv("FLOWSWITCH_CTL_SOCKET");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (geteuid() == 0)
        n = snprintf(buf, len, "/run/flowswitch/flowswitch.ctl");
    else if (xdg && *xdg)
        n = snprintf(buf, len, "%s/flowswitch/flowswitch.ctl", xdg);
    else
        n = snprintf(buf, len, "/tmp/flowswitch-%u/flowswitch.ctl", (unsigned)geteuid());
    return n < 0 || (size_t)n >= len ? -1 : 0;
}
