/* profile.c: cost profiles (see profile.h), read with jansson. */
#include "profile.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    double def;
    const char *desc;
} events[SIM_COST_N] = {
#define SIM_COST_ROW_(e, name, def, desc) [SIM_COST_##e] = {name, def, desc},
    SIM_COST_EVENTS(SIM_COST_ROW_)
#undef SIM_COST_ROW_
};

const char *sim_cost_name(enum sim_cost ev)
{
    return (unsigned)ev < SIM_COST_N ? events[ev].name : NULL;
}

const char *sim_cost_desc(enum sim_cost ev)
{
    return (unsigned)ev < SIM_COST_N ? events[ev].desc : NULL;
}

int sim_cost_by_name(const char *name)
{
    for (int i = 0; i < SIM_COST_N; i++)
        if (strcmp(events[i].name, name) == 0)
            return i;
    return -1;
}

static void blank_profile(struct sim_profile *p);

void sim_profile_default(struct sim_profile *prof)
{
    blank_profile(prof);
    snprintf(prof->cpu, sizeof prof->cpu, "%s", "generic x86-64");
    prof->ghz = 3.0;
    for (int i = 0; i < SIM_COST_N; i++)
        prof->cost_ns[i] = events[i].def;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* The known event names, comma-separated, for an error message. */
static void known_events(char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < SIM_COST_N && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", events[i].name);
}

/* What an error message needs: the file's name and text (to find the line
 * of a key: jansson keeps no positions once parsed) and the buffer. */
struct prof_load {
    const char *path;
    const char *text;
    char *err;
    size_t errlen;
};

/* The line of the first occurrence of "key" in the file, or 1 (also for
 * an empty key: the document as a whole). */
static int key_line(const struct prof_load *l, const char *key)
{
    if (!*key)
        return 1;
    char quoted[160];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(l->text, quoted);
    int line = 1;
    for (const char *c = l->text; at && c < at; c++)
        line += *c == '\n';
    return line;
}

/* Writes "PATH:LINE: message" (LINE: where key first appears); returns -1. */
static int perr(const struct prof_load *l, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int perr(const struct prof_load *l, const char *key, const char *fmt, ...)
{
    if (!l->err || !l->errlen)
        return -1;
    int n = snprintf(l->err, l->errlen, "%s:%d: ", l->path, key_line(l, key));
    if (n >= 0 && (size_t)n < l->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(l->err + n, l->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Reads a non-negative number of ns for event 'key' of object 'obj'. */
static int load_ns(const struct prof_load *l, const char *obj, const char *key, json_t *v,
                   double *out)
{
    if (!json_is_number(v))
        return perr(l, key, "%s.%s: must be a number of ns, not %s", obj, key, json_kind(v));
    double c = json_number_value(v);
    if (!(c >= 0))
        return perr(l, key, "%s.%s: negative cost %g", obj, key, c);
    *out = c;
    return 0;
}

/* The event named 'key', or -1 with an "unknown event" error. */
static int event_key(const struct prof_load *l, const char *obj, const char *key)
{
    int ev = sim_cost_by_name(key);
    if (ev < 0) {
        char known[1024];
        known_events(known, sizeof known);
        perr(l, key, "%s: unknown event '%s' (known: %s)", obj, key, known);
    }
    return ev;
}

static int load_costs(const struct prof_load *l, json_t *costs, struct sim_profile *p)
{
    const char *key;
    json_t *v;
    json_object_foreach(costs, key, v) {
        int ev = event_key(l, "costs_ns", key);
        if (ev < 0 || load_ns(l, "costs_ns", key, v, &p->cost_ns[ev]))
            return -1;
    }
    for (int i = 0; i < SIM_COST_N; i++) {
        if (json_object_get(costs, events[i].name))
            continue;
        if (i < SIM_COST_FIRST_OPTIONAL)
            return perr(l, "costs_ns", "costs_ns: missing cost '%s' (%s)", events[i].name,
                        events[i].desc);
        p->cost_ns[i] = events[i].def; /* an older profile: a guess */
        p->unidentified[i] = true;
    }
    return 0;
}

/* "uncertainty_ns" and "not_identified", both optional. */
static int load_fit(const struct prof_load *l, json_t *root, struct sim_profile *p)
{
    json_t *unc = json_object_get(root, "uncertainty_ns");
    json_t *nid = json_object_get(root, "not_identified");
    const char *key;
    json_t *v;
    if (unc && !json_is_object(unc))
        return perr(l, "uncertainty_ns", "uncertainty_ns: must be an object of event: ns");
    json_object_foreach(unc, key, v) {
        int ev = event_key(l, "uncertainty_ns", key);
        if (ev < 0 || load_ns(l, "uncertainty_ns", key, v, &p->uncertainty_ns[ev]))
            return -1;
    }
    if (nid && !json_is_array(nid))
        return perr(l, "not_identified", "not_identified: must be an array of event names");
    size_t i;
    json_array_foreach(nid, i, v) {
        if (!json_is_string(v))
            return perr(l, "not_identified", "not_identified[%zu]: must be an event name", i);
        int ev = event_key(l, "not_identified", json_string_value(v));
        if (ev < 0)
            return -1;
        p->unidentified[ev] = true;
    }
    return 0;
}

static int load_root(const struct prof_load *l, json_t *root, struct sim_profile *p)
{
    static const char *const known[] = {"cpu", "ghz", "description", "calibration",
                                        "costs_ns", "uncertainty_ns", "not_identified"};
    if (!json_is_object(root))
        return perr(l, "", "a profile is a JSON object, not %s", json_kind(root));
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        size_t k = 0;
        while (k < sizeof known / sizeof *known && strcmp(key, known[k]))
            k++;
        if (k == sizeof known / sizeof *known)
            return perr(l, key,
                        "unknown key '%s' (known: cpu, ghz, description, calibration, "
                        "costs_ns, uncertainty_ns, not_identified)",
                        key);
    }
    json_t *cpu = json_object_get(root, "cpu");
    json_t *ghz = json_object_get(root, "ghz");
    json_t *desc = json_object_get(root, "description");
    json_t *calib = json_object_get(root, "calibration");
    json_t *costs = json_object_get(root, "costs_ns");
    if (!cpu || !json_is_string(cpu))
        return perr(l, "cpu", "cpu: %s",
                    cpu ? "must be a string (the CPU model)" : "missing (the CPU model)");
    if (!ghz || !json_is_number(ghz) || !(json_number_value(ghz) > 0))
        return perr(l, "ghz", "ghz: %s",
                    ghz ? "must be a number above 0 (the clock in GHz)"
                        : "missing (the clock in GHz)");
    if (calib && !json_is_object(calib))
        return perr(l, "calibration", "calibration: must be an object, not %s",
                    json_kind(calib));
    if (desc && !json_is_string(desc))
        return perr(l, "description", "description: must be a string, not %s",
                    json_kind(desc));
    if (!costs || !json_is_object(costs))
        return perr(l, "costs_ns", "costs_ns: %s",
                    costs ? "must be an object of event: ns" : "missing (the event costs)");
    snprintf(p->cpu, sizeof p->cpu, "%s", json_string_value(cpu));
    p->ghz = json_number_value(ghz);
    return load_costs(l, costs, p) || load_fit(l, root, p) ? -1 : 0;
}

/* The whole file, NUL-terminated (malloc'd), or NULL with errno set. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (buf && bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static void blank_profile(struct sim_profile *p)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < SIM_COST_N; i++)
        p->uncertainty_ns[i] = -1;
}

int sim_profile_load(const char *path, struct sim_profile *prof, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = slurp(path, &len);
    if (!text) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (err && errlen && je.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        else if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, je.text);
        free(text);
        return -1;
    }
    struct sim_profile p;
    blank_profile(&p);
    struct prof_load l = {path, text, err, errlen};
    int rc = load_root(&l, root, &p);
    json_decref(root);
    free(text);
    if (rc == 0)
        *prof = p;
    return rc;
}

int sim_profile_require(const struct sim_profile *prof, enum sim_cost ev, const char *who,
                        char *err, size_t errlen)
{
    if ((unsigned)ev >= SIM_COST_N || !prof->unidentified[ev])
        return 0;
    if (err && errlen)
        snprintf(err, errlen,
                 "%s needs the cost of %s (%s), which the profile for '%s' does not "
                 "identify: calibrate a profile whose workloads separate it "
                 "(flowswitch sim calibrate) or set it by hand in costs_ns and remove it "
                 "from not_identified",
                 who, events[ev].name, events[ev].desc, prof->cpu);
    return -1;
}

double sim_profile_apply(const struct sim_profile *prof, const uint64_t counts[SIM_COST_N])
{
    double ns = 0;
    for (int i = 0; i < SIM_COST_N; i++)
        if (counts[i]) /* most events do not happen in a poll; adding 0 is a no-op */
            ns += (double)counts[i] * prof->cost_ns[i];
    return ns;
}
