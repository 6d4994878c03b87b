/* config.h: the config file -> ports, datapath knobs and rules.
 *
 * The format is INI (parsed with libinih), documented in README.md:
 *
 *   [datapath]
 *   tx-flush-interval = 0
 *
 *   [port p0]
 *   type = pcap
 *   rx = in.pcap
 *   caps = tx-ip-csum,tx-l4-csum
 *
 *   [rules]
 *   rule = priority=100,in_port=p0,ip actions=output:p1
 *
 *   [change c1]
 *   time = 0.5
 *   delete = priority=100,in_port=p0,ip actions=drop
 *   add = priority=90,in_port=p0 actions=output:p2
 *
 * Every error names the file and line: "cfg.ini:12: unknown knob 'foo'".
 * Ports are numbered in the order they appear, from 0. */
#ifndef FS_CONFIG_H
#define FS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netdev.h"

#define CONFIG_MAX_PORTS 64
#define CONFIG_MAX_LINE 199 /* longer lines are rejected, not cut */

/* Per-port settings the core (not the backend) uses. */
struct config_port {
    char name[NETDEV_NAME_MAX];
    char type[NETDEV_NAME_MAX];
    int line;                 /* the [port NAME] line */
    struct netdev_opt *opts;  /* backend options, in file order (owned) */
    size_t n_opts;
    bool caps_set;
    struct netdev_caps caps;
    int tx_retries;           /* -1: the datapath default */
    int64_t emc_insert_inv_prob; /* -1: the datapath's emc-insert-inv-prob */
};

struct config_rule {
    char *text; /* owned */
    int line;
};

/* Datapath knobs ([datapath] section). */
struct dp_knobs {
    uint32_t tx_flush_interval_us; /* 0..1000000, default 0 */
    uint32_t tx_retries;           /* default per-port retries, 0..32, default 8 */
    uint32_t replay_iteration_ns;  /* virtual time one poll iteration takes in
                                    * replay, 0..1e9, default 0 (see dp_replay) */
    bool bad_csum_forward;         /* bad-csum = drop (default) | forward */
    /* Flow caches (fcache.h; validated by fcache_cfg_validate at start). */
    uint32_t emc_entries;          /* power of two, default 8192 */
    uint32_t emc_ways;             /* 1 or 2, default 2 */
    uint32_t emc_insert_inv_prob;  /* 0 = EMC off, 1 = always, default 100 */
    uint32_t emc_max_key_len;      /* bytes, default 136 (every key) */
    bool smc;                      /* smc = on (default) | off */
    uint32_t smc_entries;          /* power of two, default 2^20 */
    uint32_t megaflow_max;         /* default 65535 */
    uint32_t subtable_resort_ms;   /* default 1000 */
    bool megaflow_revalidate;      /* megaflow-revalidate = on (default) | off */
    uint32_t seed;                 /* PRNG seed of the caches, default 0 */
    uint32_t direct_subtables;     /* ports with at most this many megaflow
                                    * subtables skip the EMC/SMC, default 1 */
    /* PMD threads of 'flowswitch run' (pmd.h parses them when it starts;
     * the command line overrides them; replay ignores them). "" = unset. */
    char pmd_cores[128];           /* CPU list, "1,2" or "1-3" */
    int pmd_cores_line;
    char pmd_rxq_affinity[256];    /* "PORT:QUEUE:CORE,..." */
    int pmd_rxq_affinity_line;
};

/* A scripted change ([change NAME]): replay applies it when the virtual
 * clock reaches time_ns, before the poll iteration at that time. */
struct config_change {
    char name[NETDEV_NAME_MAX];
    int line;                  /* the [change NAME] line */
    uint64_t time_ns;          /* 'time' in seconds, required */
    bool clear;                /* 'clear = true': remove every rule first */
    struct config_rule *del;   /* 'delete = RULE' (strict: priority + match) */
    size_t n_del;
    struct config_rule *add;   /* 'add = RULE' */
    size_t n_add;
    int64_t tx_flush_interval_us; /* 'tx-flush-interval', -1: unchanged */
};

struct config {
    char *path;      /* as given (owned) */
    char *dir;       /* directory of the file, for relative paths (owned) */
    struct config_port ports[CONFIG_MAX_PORTS];
    size_t n_ports;
    struct config_rule *rules; /* owned */
    size_t n_rules;
    struct dp_knobs knobs;
    struct config_change *changes; /* in file order, times non-decreasing */
    size_t n_changes;
};

void dp_knobs_default(struct dp_knobs *k);

/* Loads and validates path (including every rule's syntax and port names).
 * Returns 0, or -1 with "path:line: reason" in err (line omitted for
 * errors not tied to a line, such as a missing file). On failure cfg is
 * left empty (config_free is still safe). */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);

void config_free(struct config *cfg);

/* Port number of 'name' or -1. */
int config_port_index(const struct config *cfg, const char *name);

/* The rule_port_lookup_fn over a config's ports (aux = struct config *). */
int config_rule_port_lookup(void *aux, const char *name);

#endif
