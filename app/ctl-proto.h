/* ctl-proto.h: the control socket's request/answer protocol.
 *
 * A client talks to a running flowswitch over a unix stream socket. The
 * exchange is text, one request at a time, and readable with `nc -U`:
 *
 * Request: one line of at most CTL_REQUEST_MAX bytes, '\n' included (a
 *   '\r' right before the '\n' is ignored). The line is split into words
 *   the way a POSIX shell splits a simple command: blanks (space, tab)
 *   separate words; 'single quotes' keep everything up to the next single
 *   quote; "double quotes" keep everything up to the next unescaped double
 *   quote, a backslash in them escaping only '"' and '\'; outside quotes a
 *   backslash makes the next byte literal; quoted and unquoted pieces
 *   without a blank between them form one word (x'y z'"w" is "xy zw").
 *   The first word is the command, the others its arguments, at most
 *   CTL_MAX_ARGS words in all. A first word `--json` asks for a JSON answer
 *   and is removed. A request that is empty, has an unterminated quote, a
 *   trailing backslash, or a control byte other than tab gets an error.
 *
 * Answer: a header line "OK <n>\n" or "ERR <n>\n", then exactly n bytes of
 *   body (n in decimal, at most CTL_ANSWER_MAX). An OK body is the
 *   command's output (text, or one JSON document when asked); an ERR body
 *   is the reason, one line, or {"error": "reason"} when JSON was asked.
 *   A non-empty body ends with '\n'. The length prefix tells a client where
 *   the answer ends without any escaping of the body.
 *
 * Everything here is pure (memory in, memory out) except
 * ctl_default_socket_path(), which reads the environment. */
#ifndef FS_CTL_PROTO_H
#define FS_CTL_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest request line, '\n' included. The longest legitimate request
 * is a rule in ovs-ofctl syntax (a few hundred bytes) or a handful of them;
 * whole rule files go by path (rule-load FILE). 64 KiB leaves two orders of
 * magnitude of room and bounds what one client makes the server buffer. */
#define CTL_REQUEST_MAX 65536

/* The most words in a request, the command included. */
#define CTL_MAX_ARGS 256

/* The largest answer body: a megaflow dump of a full table (65535 entries
 * of a few hundred bytes as JSON) fits with room to spare. */
#define CTL_ANSWER_MAX (64u * 1024 * 1024)

/* The longest error reason framed; a longer one is cut. */
#define CTL_ERROR_MAX 4096

/* The longest answer header: "ERR 67108864\n" is 13 bytes. */
#define CTL_ANSWER_HEADER_MAX 16

/* ---- requests ------------------------------------------------------------ */

/* Where the first request in buf[0..len) ends. */
enum ctl_scan {
    CTL_SCAN_MORE,      /* no '\n' yet, and room for one: read more */
    CTL_SCAN_LINE,      /* a complete line */
    CTL_SCAN_OVERSIZED, /* no '\n' within the first CTL_REQUEST_MAX bytes */
};

/* Looks for the first request line in buf[0..len). On CTL_SCAN_LINE,
 * *line_len is its length without the '\n' (and without a '\r' before it)
 * and *consumed the number of bytes up to and including the '\n'. */
enum ctl_scan ctl_request_scan(const char *buf, size_t len, size_t *line_len,
                               size_t *consumed);

/* A parsed request. argv[0] is the command name, argv[argc] is NULL; the
 * strings live in storage the request owns until ctl_request_free(). */
struct ctl_request {
    int argc;    /* 1..CTL_MAX_ARGS after a successful parse, else 0 */
    char **argv;
    bool json;   /* the request began with --json */
    char *store; /* the words, NUL-terminated, one after the other */
};

/* Splits the request line[0..len) (no '\n') into words. Returns 0, or -1
 * with the reason in err ("unterminated single quote at column 7", "out of
 * memory", ...) and req->argc 0. Either way req->json tells whether the
 * line asked for JSON (on failure: whether it begins with the word
 * "--json"), so the error can be answered in the form asked for. Call
 * ctl_request_free() in both cases. */
int ctl_request_parse(const char *line, size_t len, struct ctl_request *req,
                      char *err, size_t errlen);

/* Frees what ctl_request_parse() allocated; req may be zeroed or freed. */
void ctl_request_free(struct ctl_request *req);

/* Builds the request line for argv[0..argc) (argv[0] the command), '\n'
 * included, quoting each word so that ctl_request_parse() gives back
 * exactly argv: words made only of letters, digits and "_@%+=:,./-" are
 * sent as they are, others in single quotes ('\'' for a quote inside).
 * Returns a malloc'd string (its length in *len), or NULL with the reason
 * in err: no word, a word with a control byte other than tab (a newline
 * cannot travel inside a request), more than CTL_MAX_ARGS words, or a line
 * longer than CTL_REQUEST_MAX. */
char *ctl_request_format(int argc, char *const argv[], bool json, size_t *len,
                         char *err, size_t errlen);

/* ---- answers ------------------------------------------------------------- */

/* What a command handler answers. A handler appends text with
 * ctl_answer_printf(), or hands over a JSON document with
 * ctl_answer_set_json(), or fails with ctl_answer_error(). Use the
 * functions; the fields are for the framing. */
struct ctl_answer {
    bool error;    /* ctl_answer_error() was called: text is the reason */
    char *text;    /* body text (or reason), NUL-terminated, len bytes */
    size_t len, cap;
    json_t *json;  /* the JSON document, owned */
};

void ctl_answer_init(struct ctl_answer *a);

/* Frees the text and drops the JSON document; a may be reused after
 * ctl_answer_init(). */
void ctl_answer_destroy(struct ctl_answer *a);

/* Appends formatted text to the body. Out of memory, or past
 * CTL_ANSWER_MAX, turns the answer into an error. No-op on an answer
 * that is already an error. */
void ctl_answer_printf(struct ctl_answer *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Makes the answer an error with this reason (one line, no '\n' needed;
 * the first CTL_ERROR_MAX bytes are sent), replacing any body or JSON
 * document; a later error replaces it again. */
void ctl_answer_error(struct ctl_answer *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Hands over doc (a reference is stolen) as the JSON form of the answer,
 * replacing an earlier one. doc NULL (a failed json_pack(), say) makes the
 * answer an error. No-op (doc dropped) on an answer that is an error. */
void ctl_answer_set_json(struct ctl_answer *a, json_t *doc);

/* Frames the answer for the wire: header and body, as described at the
 * top. json selects the body: a JSON answer is the document (compact, one
 * line), or {"text": body} for a handler that only wrote text, or {} for
 * one that wrote nothing; a text answer is the body text, or the document
 * indented when the handler only gave JSON. An error body carries the
 * reason (as {"error": reason} for JSON, bytes that are not UTF-8 escaped
 * as \xNN). A body over CTL_ANSWER_MAX becomes an error answer. Returns a
 * malloc'd frame (length in *len) or NULL when out of memory. */
char *ctl_answer_frame(const struct ctl_answer *a, bool json, size_t *len);

/* What an answer header says. */
enum ctl_header {
    CTL_HEADER_MORE,   /* no complete header yet: read more */
    CTL_HEADER_OK,     /* a valid header */
    CTL_HEADER_BROKEN, /* not an answer header */
};

/* Reads the answer header at the start of buf[0..len): on CTL_HEADER_OK
 * sets *error (ERR or OK), *body_len and *header_len (the bytes to skip to
 * the body). Strict: "OK" or "ERR", one space, 1 to 9 decimal digits
 * without a leading zero (except "0"), a value at most CTL_ANSWER_MAX,
 * then '\n'. */
enum ctl_header ctl_answer_parse_header(const char *buf, size_t len, bool *error,
                                        size_t *body_len, size_t *header_len);

/* ---- where the socket lives ---------------------------------------------- */

/* Writes the default control socket path into buf: $FLOWSWITCH_CTL_SOCKET
 * if set and not empty; else /run/flowswitch/flowswitch.ctl for root;
 * else $XDG_RUNTIME_DIR/flowswitch/flowswitch.ctl; else
 * /tmp/flowswitch-<uid>/flowswitch.ctl (the server refuses that directory
 * unless it is the user's own and not writable by others). Returns 0, or
 * -1 if the path does not fit in len bytes. */
int ctl_default_socket_path(char *buf, size_t len);

#endif
