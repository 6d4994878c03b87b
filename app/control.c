/* control.c: the control plane of a running datapath (see control.h). */
#include "control.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys.h"
#include "util.h"

#define CONTROL_WAIT_MS_DEFAULT 1000
/* Between two looks at the PMDs while waiting for them. */
#define CONTROL_POLL_NS (50 * 1000ull)

struct control {
    pthread_mutex_t mu;
    const struct config *cfg;
    struct dp *dp;
    struct pmd_runtime *rt;
    struct ka *ka;
    atomic_bool keepalive; /* heartbeats on and the monitor running (written
                            * under mu, read by anyone) */
    unsigned wait_ms;
};

int control_create(const struct control_params *p, struct control **out, char *err,
                   size_t errlen)
{
    struct control *c = calloc(1, sizeof *c);
    if (!c || pthread_mutex_init(&c->mu, NULL)) {
        free(c);
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    c->cfg = p->cfg;
    c->dp = p->dp;
    c->rt = p->rt;
    c->ka = p->ka;
    c->wait_ms = p->wait_ms ? p->wait_ms : CONTROL_WAIT_MS_DEFAULT;
    *out = c;
    return 0;
}

int control_ka_interval_check(uint32_t interval_ms, uint32_t idle_sleep_us, char *err,
                              size_t errlen)
{
    if ((uint64_t)interval_ms * 1000 >= 2ull * idle_sleep_us)
        return 0;
    fs_errf(err, errlen,
            "keepalive-interval %u ms is too short for PMDs that sleep %u us when idle: "
            "a sleeping PMD would look stalled (use at least %u ms, twice the idle sleep)",
            (unsigned)interval_ms, (unsigned)idle_sleep_us,
            (unsigned)((2ull * idle_sleep_us + 999) / 1000));
    return -1;
}

/* Whether keep-alive is available and can judge the PMDs by interval_ms. */
static int control_ka_usable(const struct control *c, uint32_t interval_ms, char *err,
                             size_t errlen)
{
    if (!c->ka) {
        fs_errf(err, errlen, "keep-alive is not available");
        return -1;
    }
    return control_ka_interval_check(interval_ms, pmd_runtime_idle_sleep_us(c->rt), err,
                                     errlen);
}

/* Keep-alive on or off: the monitor and the PMDs' heartbeats. */
static int control_keepalive_set(struct control *c, bool on, char *err, size_t errlen)
{
    if (on == atomic_load(&c->keepalive))
        return 0;
    if (on) {
        if (control_ka_usable(c, c->ka ? ka_interval_ms(c->ka) : 0, err, errlen) ||
            ka_start(c->ka, err, errlen))
            return -1;
        pmd_runtime_keepalive(c->rt, true);
    } else {
        pmd_runtime_keepalive(c->rt, false);
        ka_stop(c->ka);
    }
    atomic_store(&c->keepalive, on);
    return 0;
}

void control_destroy(struct control *c)
{
    if (!c)
        return;
    if (atomic_load(&c->keepalive))
        control_keepalive_set(c, false, NULL, 0);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int control_start(struct control *c, char *err, size_t errlen)
{
    control_lock(c);
    int rc = c->cfg->keepalive ? control_keepalive_set(c, true, err, errlen) : 0;
    control_unlock(c);
    return rc;
}

void control_lock(struct control *c)
{
    pthread_mutex_lock(&c->mu);
}

void control_unlock(struct control *c)
{
    pthread_mutex_unlock(&c->mu);
}

struct dp *control_dp(const struct control *c)
{
    return c->dp;
}

struct pmd_runtime *control_rt(const struct control *c)
{
    return c->rt;
}

struct ka *control_ka(const struct control *c)
{
    return c->ka;
}

const struct config *control_config(const struct control *c)
{
    return c->cfg;
}

bool control_keepalive(struct control *c)
{
    return atomic_load(&c->keepalive);
}

unsigned control_wait_ms(const struct control *c)
{
    return c->wait_ms;
}

static void control_sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / FS_NSEC_PER_SEC),
                          .tv_nsec = (long)(ns % FS_NSEC_PER_SEC)};
    nanosleep(&ts, NULL);
}

/* After a change was published: the PMDs without a thread take it here,
 * the others at their quiescent point, which this waits for (bounded);
 * then what no PMD uses is freed. Returns the PMDs that lag. */
static control_lag control_settle(struct control *c)
{
    pmd_runtime_sync_idle(c->rt);
    uint64_t deadline = fs_mono_ns() + (uint64_t)c->wait_ms * 1000000ull;
    control_lag lag;
    while ((lag = pmd_runtime_lagging(c->rt)) && fs_mono_ns() < deadline)
        control_sleep_ns(CONTROL_POLL_NS);
    dp_rules_reclaim(c->dp);
    return lag;
}

int control_reclaim(struct control *c)
{
    if (pthread_mutex_trylock(&c->mu))
        return -1;
    pmd_runtime_sync_idle(c->rt);
    int n = (int)dp_rules_reclaim(c->dp);
    control_unlock(c);
    return n;
}

int control_rules_apply(struct control *c, const struct dp_rule_edit *e, const char *origin,
                        control_lag *lag, char *err, size_t errlen)
{
    *lag = 0;
    if (dp_rules_apply(c->dp, e, origin, err, errlen))
        return -1;
    *lag = control_settle(c);
    return 0;
}

/* The keep-alive knobs: "keepalive" (also "keep-alive") and
 * "keepalive-interval". Returns 1 if 'name' is not one. */
static int control_ka_knob(struct control *c, const char *name, const char *value, char *err,
                           size_t errlen)
{
    if (!strcmp(name, "keepalive") || !strcmp(name, "keep-alive")) {
        if (strcmp(value, "on") && strcmp(value, "off")) {
            fs_errf(err, errlen, "bad value '%s' for '%s' (expected on or off)", value, name);
            return -1;
        }
        return control_keepalive_set(c, !strcmp(value, "on"), err, errlen);
    }
    if (!strcmp(name, "keepalive-interval")) {
        unsigned long v;
        if (!fs_parse_uint(value, KA_INTERVAL_MIN_MS, KA_INTERVAL_MAX_MS, &v)) {
            fs_errf(err, errlen, "bad value '%s' for '%s' (expected ms, %d..%d)", value, name,
                    KA_INTERVAL_MIN_MS, KA_INTERVAL_MAX_MS);
            return -1;
        }
        if (control_ka_usable(c, (uint32_t)v, err, errlen))
            return -1;
        ka_set_interval(c->ka, (uint32_t)v);
        return 0;
    }
    return 1;
}

int control_knob_set(struct control *c, const char *name, const char *value,
                     control_lag *lag, char *err, size_t errlen)
{
    *lag = 0;
    int rc = control_ka_knob(c, name, value, err, errlen);
    if (rc <= 0)
        return rc;
    if (dp_knob_update(c->dp, name, value, err, errlen))
        return -1;
    *lag = control_settle(c);
    return 0;
}

int control_knob_get(const struct control *c, const char *name, char *buf, size_t size)
{
    if (!strcmp(name, "keepalive") || !strcmp(name, "keep-alive")) {
        snprintf(buf, size, "%s", atomic_load(&c->keepalive) ? "on" : "off");
        return 0;
    }
    if (!strcmp(name, "keepalive-interval")) {
        snprintf(buf, size, "%u", c->ka ? (unsigned)ka_interval_ms(c->ka)
                                        : (unsigned)c->cfg->keepalive_interval_ms);
        return 0;
    }
    return dp_knobs_get(dp_get_knobs(c->dp), name, buf, size);
}

unsigned control_request(struct control *c, enum dp_pmd_request req, bool answered[PMD_MAX])
{
    return pmd_runtime_request(c->rt, req, c->wait_ms, answered);
}

/* ---- reload -------------------------------------------------------------- */

/* What a reload found; printed once at its end. */
struct control_report {
    char applied[1024];
    char restart[1024];
    char failed[1024]; /* changes that failed after the rules were published */
};

static void control_note(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends "; text" (or "text" to an empty buf), cut at size. */
static void control_note(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used && used + 2 < size) {
        memcpy(buf + used, "; ", 3);
        used += 2;
    }
    if (used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

static bool control_port_equal(const struct config_port *a, const struct config_port *b)
{
    if (strcmp(a->name, b->name) || strcmp(a->type, b->type) || a->n_opts != b->n_opts ||
        a->caps_set != b->caps_set || (a->caps_set && a->caps.flags != b->caps.flags) ||
        a->tx_retries != b->tx_retries || a->emc_insert_inv_prob != b->emc_insert_inv_prob)
        return false;
    for (size_t i = 0; i < a->n_opts; i++)
        if (strcmp(a->opts[i].key, b->opts[i].key) || strcmp(a->opts[i].value, b->opts[i].value))
            return false;
    return true;
}

/* The differences that a running datapath cannot take. */
static void control_restart_diffs(const struct config *run, const struct config *neu,
                                  struct control_report *r)
{
    size_t n = run->n_ports > neu->n_ports ? run->n_ports : neu->n_ports;
    for (size_t i = 0; i < n; i++) {
        const struct config_port *a = i < run->n_ports ? &run->ports[i] : NULL;
        const struct config_port *b = i < neu->n_ports ? &neu->ports[i] : NULL;
        if (!a || !b || !control_port_equal(a, b))
            control_note(r->restart, sizeof r->restart, "port %s", b ? b->name : a->name);
    }
    struct {
        const char *name;
        bool differs;
    } app[] = {
        {"pmd-cores", strcmp(run->pmd_cores, neu->pmd_cores) != 0},
        {"pmd-rxq-affinity", strcmp(run->pmd_rxq_affinity, neu->pmd_rxq_affinity) != 0},
        {"pmd-priority", run->pmd_priority_set != neu->pmd_priority_set ||
                             run->pmd_priority != neu->pmd_priority},
        {"ctl-socket", strcmp(run->ctl_socket, neu->ctl_socket) != 0},
    };
    for (size_t i = 0; i < sizeof app / sizeof app[0]; i++)
        if (app[i].differs)
            control_note(r->restart, sizeof r->restart, "%s", app[i].name);
}

/* What a reload publishes besides the rules, worked out and checked by
 * control_reload_check() before anything is published. */
struct control_reload_plan {
    struct dp_knobs knobs; /* the running knobs with the file's live values */
    char changes[1024];    /* the live knobs that change: "name was -> now; ..." */
};

/* The one check of a reload, before anything is published: the file's
 * knobs must be a set a datapath accepts on its own (what run checks at
 * start-up); the running knobs with the file's live values (plan->knobs)
 * must be a set the running datapath takes (a live knob may depend on one
 * that needs a restart: smc = on and the running smc-entries); and
 * keep-alive must be able to take the file's interval. Notes the knobs
 * that need a restart in r. Returns 0, or -1 with the reason in err. */
static int control_reload_check(struct control *c, const struct config *neu,
                                struct control_reload_plan *plan, struct control_report *r,
                                char *err, size_t errlen)
{
    if (dp_knobs_check(NULL, &neu->knobs, err, errlen))
        return -1;
    plan->knobs = *dp_get_knobs(c->dp);
    plan->changes[0] = '\0';
    char names[1024];
    dp_knobs_names(names, sizeof names);
    char *save = NULL;
    for (char *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        char was[64], now[64];
        if (dp_knobs_get(&plan->knobs, name, was, sizeof was) ||
            dp_knobs_get(&neu->knobs, name, now, sizeof now) || !strcmp(was, now))
            continue;
        if (!dp_knob_is_live(name)) {
            control_note(r->restart, sizeof r->restart, "%s %s -> %s", name, was, now);
            continue;
        }
        if (dp_knobs_set(&plan->knobs, name, now, err, errlen))
            return -1;
        control_note(plan->changes, sizeof plan->changes, "%s %s -> %s", name, was, now);
    }
    char why[512];
    if (dp_knobs_check(c->dp, &plan->knobs, why, sizeof why)) {
        fs_errf(err, errlen, "%s (with the running values of the knobs that need a restart)",
                why);
        return -1;
    }
    bool interval_changes = c->ka && ka_interval_ms(c->ka) != neu->keepalive_interval_ms;
    if ((neu->keepalive || interval_changes) &&
        control_ka_usable(c, neu->keepalive_interval_ms, err, errlen))
        return -1;
    return 0;
}

/* Publishes the planned knob set in one dp_knobs_publish(), so that every
 * PMD takes all of the changed live knobs at one quiescent point, then
 * applies keep-alive's; what still fails (out of memory, a thread that
 * cannot start) goes to r->failed. */
static void control_reload_knobs(struct control *c, const struct config *neu,
                                 const struct control_reload_plan *plan,
                                 struct control_report *r)
{
    if (plan->changes[0]) {
        char err[256];
        if (dp_knobs_publish(c->dp, &plan->knobs, err, sizeof err))
            control_note(r->failed, sizeof r->failed, "%s: %s", plan->changes, err);
        else
            control_note(r->applied, sizeof r->applied, "%s", plan->changes);
    }
    if (c->ka && ka_interval_ms(c->ka) != neu->keepalive_interval_ms) {
        control_note(r->applied, sizeof r->applied, "keepalive-interval %u -> %u",
                     (unsigned)ka_interval_ms(c->ka), (unsigned)neu->keepalive_interval_ms);
        ka_set_interval(c->ka, neu->keepalive_interval_ms);
    }
    if (neu->keepalive != atomic_load(&c->keepalive)) {
        char err[256];
        if (control_keepalive_set(c, neu->keepalive, err, sizeof err))
            control_note(r->failed, sizeof r->failed, "keepalive %s: %s",
                         neu->keepalive ? "on" : "off", err);
        else
            control_note(r->applied, sizeof r->applied, "keepalive %s",
                         neu->keepalive ? "on" : "off");
    }
}

int control_reload(struct control *c, FILE *log)
{
    const char *path = c->cfg->path;
    struct config neu;
    char err[1024];
    if (config_load(path, &neu, err, sizeof err)) {
        fprintf(log, "%s\nflowswitch: reload of %s rejected, the running configuration stays\n",
                err, path);
        config_free(&neu);
        return -1;
    }
    control_lock(c);
    struct control_report r = {"", "", ""};
    struct control_reload_plan plan;
    struct dp_rule_edit e = {.clear = true, .add = neu.rules, .n_add = neu.n_rules};
    char why[768];
    int rc = control_reload_check(c, &neu, &plan, &r, why, sizeof why);
    if (rc) {
        fprintf(log, "%s: [datapath]: %s\nflowswitch: reload of %s rejected, the running "
                     "configuration stays\n", path, why, path);
    } else if ((rc = dp_rules_apply(c->dp, &e, path, err, sizeof err))) {
        fprintf(log, "%s\nflowswitch: reload of %s rejected, the running configuration stays\n",
                err, path);
    } else {
        control_note(r.applied, sizeof r.applied, "%zu rules", neu.n_rules);
        control_reload_knobs(c, &neu, &plan, &r);
        control_restart_diffs(c->cfg, &neu, &r);
        control_lag lag = control_settle(c);
        fprintf(log, "flowswitch: reloaded %s: %s\n", path, r.applied);
        if (r.failed[0]) {
            fprintf(log, "flowswitch: reload of %s failed, not applied: %s\n", path, r.failed);
            rc = -1;
        }
        if (r.restart[0])
            fprintf(log, "flowswitch: reload of %s: not applied, needs a restart: %s\n", path,
                     r.restart);
        if (lag)
            fprintf(log, "flowswitch: reload of %s: PMDs 0x%x have not taken it yet\n", path,
                    (unsigned)lag);
    }
    control_unlock(c);
    fflush(log);
    config_free(&neu);
    return rc ? -1 : 0;
}
