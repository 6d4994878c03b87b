/* replay.h: the replay engine: one PMD on the virtual clock over finite
 * inputs (pcap files, dummy queues), with scripted changes.
 *
 * Frames are received when the virtual clock reaches their timestamps, so
 * a replay gives the same output bytes and counters on every machine. */
#ifndef FS_REPLAY_H
#define FS_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dp.h"

/* A scripted change ([change NAME] in a config), applied when the virtual
 * clock reaches time_ns, before the poll iteration at that time. Rule
 * texts are owned by whoever built the change. */
struct sim_change {
    char name[NETDEV_NAME_MAX];
    int line;                     /* where it was written */
    uint64_t time_ns;
    bool clear;                   /* remove every rule first */
    struct dp_rule_src *del;      /* strict deletes (priority + match) */
    size_t n_del;
    struct dp_rule_src *add;
    size_t n_add;
    int64_t tx_flush_interval_us; /* -1: unchanged */
};

struct sim_replay {
    uint64_t iteration_ns;           /* virtual time one poll iteration takes */
    const struct sim_change *changes; /* in time order */
    size_t n_changes;
    const char *origin;              /* names the changes' source in errors */
    FILE *diag;                      /* one-line diagnostics (NULL: none) */
    /* Out: */
    uint64_t changes_applied;
    uint64_t end_ns;                 /* the virtual time at the end */
};

/* Runs pmd (the only PMD of dp, polling every port) on the virtual clock
 * until every port's input is consumed and every queue is empty. Returns
 * 0; 1 if some port reported an rx error (outputs are still complete up
 * to it: read it with netdev_rx_error()); -1 with the reason in err if a
 * change could not be applied. */
int sim_replay_run(struct sim_replay *r, struct dp *dp, struct dp_pmd *pmd, char *err,
                   size_t errlen);

#endif
