/* profile.c: cost profiles (see profile.h), read with jansson. */
#include "profile.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
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

void sim_profile_default(struct sim_profile *prof)
{
    memset(prof, 0, sizeof *prof);
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

static int load_costs(const char *path, json_t *costs, struct sim_profile *p, char *err,
                      size_t errlen)
{
    const char *key;
    json_t *v;
    json_object_foreach(costs, key, v) {
        int ev = sim_cost_by_name(key);
        if (ev < 0) {
            char known[1024];
            known_events(known, sizeof known);
            snprintf(err, errlen, "%s: costs_ns: unknown event '%s' (known: %s)", path, key,
                     known);
            return -1;
        }
        if (!json_is_number(v)) {
            snprintf(err, errlen, "%s: costs_ns.%s: the cost must be a number of ns, not %s",
                     path, key, json_kind(v));
            return -1;
        }
        double c = json_number_value(v);
        if (c < 0) {
            snprintf(err, errlen, "%s: costs_ns.%s: negative cost %g", path, key, c);
            return -1;
        }
        p->cost_ns[ev] = c;
    }
    for (int i = 0; i < SIM_COST_N; i++) {
        if (!json_object_get(costs, events[i].name)) {
            snprintf(err, errlen, "%s: costs_ns: missing cost '%s' (%s)", path, events[i].name,
                     events[i].desc);
            return -1;
        }
    }
    return 0;
}

static int load_root(const char *path, json_t *root, struct sim_profile *p, char *err,
                     size_t errlen)
{
    if (!json_is_object(root)) {
        snprintf(err, errlen, "%s: a profile is a JSON object, not %s", path, json_kind(root));
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "cpu") && strcmp(key, "ghz") && strcmp(key, "costs_ns") &&
            strcmp(key, "description") && strcmp(key, "calibration")) {
            snprintf(err, errlen,
                     "%s: unknown key '%s' (known: cpu, ghz, description, calibration, "
                     "costs_ns)",
                     path, key);
            return -1;
        }
    }
    json_t *cpu = json_object_get(root, "cpu");
    json_t *ghz = json_object_get(root, "ghz");
    json_t *desc = json_object_get(root, "description");
    json_t *costs = json_object_get(root, "costs_ns");
    if (!cpu || !json_is_string(cpu)) {
        snprintf(err, errlen, "%s: cpu: %s", path,
                 cpu ? "must be a string (the CPU model)" : "missing (the CPU model)");
        return -1;
    }
    if (!ghz || !json_is_number(ghz) || !(json_number_value(ghz) > 0)) {
        snprintf(err, errlen, "%s: ghz: %s", path,
                 ghz ? "must be a number above 0 (the clock in GHz)"
                     : "missing (the clock in GHz)");
        return -1;
    }
    json_t *calib = json_object_get(root, "calibration");
    if (calib && !json_is_object(calib)) {
        snprintf(err, errlen, "%s: calibration: must be an object, not %s", path,
                 json_kind(calib));
        return -1;
    }
    if (desc && !json_is_string(desc)) {
        snprintf(err, errlen, "%s: description: must be a string, not %s", path,
                 json_kind(desc));
        return -1;
    }
    if (!costs || !json_is_object(costs)) {
        snprintf(err, errlen, "%s: costs_ns: %s", path,
                 costs ? "must be an object of event: ns" : "missing (the event costs)");
        return -1;
    }
    snprintf(p->cpu, sizeof p->cpu, "%s", json_string_value(cpu));
    p->ghz = json_number_value(ghz);
    return load_costs(path, costs, p, err, errlen);
}

int sim_profile_load(const char *path, struct sim_profile *prof, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        if (je.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        else
            snprintf(err, errlen, "%s: %s", path, je.text);
        return -1;
    }
    struct sim_profile p;
    memset(&p, 0, sizeof p);
    int rc = load_root(path, root, &p, err, errlen);
    json_decref(root);
    if (rc == 0)
        *prof = p;
    return rc;
}

double sim_profile_apply(const struct sim_profile *prof, const uint64_t counts[SIM_COST_N])
{
    double ns = 0;
    for (int i = 0; i < SIM_COST_N; i++)
        if (counts[i]) /* most events do not happen in a poll; adding 0 is a no-op */
            ns += (double)counts[i] * prof->cost_ns[i];
    return ns;
}
