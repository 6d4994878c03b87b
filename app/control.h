/* control.h: the control plane of a running datapath.
 *
 * `flowswitch run` is changed while it forwards from two places: the
 * control socket's commands (ctl-commands.c, on the ctl thread) and a
 * config reload on SIGHUP (run.c, on the main thread). Both go through one
 * struct control, whose mutex serialises them; the PMDs never take it.
 *
 * A change reaches the PMDs as the core hands it over (dp.h): published
 * with one atomic store, taken by each PMD at its quiescent point (after
 * flushing its output queues). The control side then waits, at most
 * wait_ms, until every PMD took it, so that when an operation returns the
 * change is in force everywhere or the caller learns which PMD lags (a
 * stalled one); and it frees the rule tables and knob sets no PMD uses any
 * more (control_reclaim() catches up with laggards later). PMD state is
 * read only from the snapshots PMDs publish (pmd.h) and through requests
 * they serve at their quiescent point.
 *
 * Every function except control_create/destroy, control_start,
 * control_keepalive, control_reclaim and control_reload expects the caller
 * to hold the mutex (control_lock()). */
#ifndef FS_CONTROL_H
#define FS_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "dp.h"
#include "keepalive.h"
#include "pmd.h"

/* What the control plane works on; everything is borrowed and must outlive
 * the struct control. */
struct control_params {
    const struct config *cfg; /* the configuration the datapath was built from */
    struct dp *dp;
    struct pmd_runtime *rt;
    struct ka *ka;            /* keep-alive slots (pmd_runtime_set_keepalive) and
                               * monitor */
    unsigned wait_ms;         /* how long to wait for the PMDs (0: 1000 ms) */
};

struct control;

/* Returns 0, or -1 with the reason in err. */
int control_create(const struct control_params *p, struct control **out, char *err,
                   size_t errlen);

/* Stops keep-alive monitoring if it runs; frees the control (not what it
 * borrowed). NULL is ignored. */
void control_destroy(struct control *c);

/* After the PMDs started: turns keep-alive on if the config asks for it.
 * Returns 0 or -1 with err. */
int control_start(struct control *c, char *err, size_t errlen);

void control_lock(struct control *c);
void control_unlock(struct control *c);

struct dp *control_dp(const struct control *c);
struct pmd_runtime *control_rt(const struct control *c);
struct ka *control_ka(const struct control *c);
const struct config *control_config(const struct control *c);
/* Whether keep-alive is on; any thread, without the mutex. */
bool control_keepalive(struct control *c);
unsigned control_wait_ms(const struct control *c);

/* Bit i set: PMD i (running) has not taken the last change yet. */
typedef uint32_t control_lag;

/* Applies a rule edit as a whole or not at all (dp_rules_apply(), errors
 * "ORIGIN:LINE: rule: reason"), then waits for the PMDs; *lag says which
 * did not take it in time. Returns 0 or -1 (nothing changed). */
int control_rules_apply(struct control *c, const struct dp_rule_edit *e, const char *origin,
                        control_lag *lag, char *err, size_t errlen);

/* Whether keep-alive can judge PMDs that sleep idle_sleep_us when idle by
 * an interval of interval_ms: an idle PMD is silent for up to one sleep and
 * one poll, and the monitor may see that silence one check period (a
 * quarter interval) late, so the interval must be at least twice the idle
 * sleep. A shorter one is refused rather than stretched, so that the
 * interval an operator reads is the one stalls are judged by. Returns 0,
 * or -1 with the reason in err. */
int control_ka_interval_check(uint32_t interval_ms, uint32_t idle_sleep_us, char *err,
                              size_t errlen);

/* Sets a knob while the PMDs run: a live datapath knob (dp_knob_update():
 * tx-flush-interval, tx-retries, bad-csum, emc-insert-inv-prob, smc), or
 * keep-alive (keepalive or keep-alive = on|off) and keepalive-interval
 * (ms; keep-alive on and the interval both pass
 * control_ka_interval_check()). Waits for the PMDs like
 * control_rules_apply(). Returns 0, or -1 with the reason in err (unknown
 * knob, bad value, or one that needs a restart). */
int control_knob_set(struct control *c, const char *name, const char *value,
                     control_lag *lag, char *err, size_t errlen);

/* A knob's current value in text form (datapath knobs and the keep-alive
 * ones). Returns 0 or -1 for an unknown name. */
int control_knob_get(const struct control *c, const char *name, char *buf, size_t size);

/* Asks every PMD to serve req at its quiescent point and waits for the
 * answers (pmd_runtime_request()); returns how many did not answer. */
unsigned control_request(struct control *c, enum dp_pmd_request req, bool answered[PMD_MAX]);

/* Frees replaced rule tables and knob sets no PMD uses any more; returns
 * how many still wait for a PMD, or -1 (nothing done) if an operation
 * holds the mutex: housekeeping never waits for a command. */
int control_reclaim(struct control *c);

/* SIGHUP: re-reads the config file and applies what differs from the
 * running configuration: the file's rules as one edit that first removes
 * every rule, then the live knobs that change as one knob set
 * (dp_knobs_publish(): each PMD takes all of them at one quiescent point,
 * never some without the others); the rest (ports, cache sizes, PMD
 * layout, socket...) is reported as needing a restart. Everything is
 * checked, in one pass, before anything is published: a file with an
 * error, or live knob values the running datapath cannot take (with its
 * knobs that need a restart), is rejected as a whole ("file:line: reason"
 * or "file: [datapath]: reason" on log) and nothing changes. Takes the
 * mutex itself. Returns 0 if the file was applied; -1 if it was rejected,
 * or if a change failed after the rules were published (out of memory, a
 * monitor thread that cannot start: "reload of FILE failed" on log, naming
 * what was not applied). */
int control_reload(struct control *c, FILE *log);

#endif
