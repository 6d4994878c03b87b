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
 *   [change c1]          (replay only, see sim/replay.h)
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

#include "dp.h"
#include "netdev.h"
#include "replay.h"

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

struct config {
    char *path;      /* as given (owned) */
    char *dir;       /* directory of the file, for relative paths (owned) */
    struct config_port ports[CONFIG_MAX_PORTS];
    size_t n_ports;
    struct dp_rule_src *rules; /* [rules], texts owned */
    size_t n_rules;
    struct dp_knobs knobs;     /* [datapath] knobs of the datapath */
    uint32_t replay_iteration_ns; /* virtual time one poll iteration takes in
                                   * replay, 0..1e9, default 0 (sim_replay) */
    /* PMD threads of 'flowswitch run' (pmd.h parses them when it starts;
     * the command line overrides them; replay ignores them). "" = unset. */
    char pmd_cores[128];           /* CPU list, "1,2" or "1-3" */
    int pmd_cores_line;
    char pmd_rxq_affinity[256];    /* "PORT:QUEUE:CORE,..." */
    int pmd_rxq_affinity_line;
    int pmd_priority;              /* nice value of the PMD threads, -20..19 */
    bool pmd_priority_set;         /* pmd-priority given (else left as is) */
    /* Keep-alive of the PMD threads (keepalive.h) and the control socket of
     * 'flowswitch run'. */
    bool keepalive;                /* keepalive = on | off (default) */
    uint32_t keepalive_interval_ms; /* keepalive-interval, default 1000 */
    char ctl_socket[108];          /* ctl-socket: a unix socket path; "" = the
                                    * default (ctl_default_socket_path()) */
    int ctl_socket_line;
    /* [change NAME] sections, in file order, times non-decreasing; rule
     * texts owned. */
    struct sim_change *changes;
    size_t n_changes;
};

/* Loads and validates path (including every rule's syntax and port names).
 * Returns 0, or -1 with "path:line: reason" in err (line omitted for
 * errors not tied to a line, such as a missing file). On failure cfg is
 * left empty (config_free is still safe). */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);

void config_free(struct config *cfg);

/* What a caller adds to the format: sections of its own and port types
 * that no backend provides (the simulator's scenarios: [sim], [traffic
 * NAME], ports of type nic and vm). Errors the callbacks write into err
 * are reported as "file:line: err". */
struct config_ext {
    const char *const *sections;   /* NULL-terminated section types */
    const bool *named;             /* per section: takes a NAME (for messages) */
    const char *const *port_types; /* NULL-terminated, or NULL */
    /* [TYPE NAME] begins ('name' "" if none). Returns 0 or -1. */
    int (*section)(void *aux, const char *type, const char *name, int line, char *err,
                   size_t errlen);
    /* "key = value" in the current extension section. Returns 0 or -1. */
    int (*key)(void *aux, const char *name, const char *value, int line, char *err,
               size_t errlen);
    void *aux;
};

/* config_load() of the format extended by ext. Ports of ext's types keep
 * their keys as options, as backend ports do; rules may name them. */
int config_load_ext(const char *path, struct config *cfg, const struct config_ext *ext,
                    char *err, size_t errlen);

/* Port number of 'name' or -1. */
int config_port_index(const struct config *cfg, const char *name);

/* The rule_port_lookup_fn over a config's ports (aux = struct config *). */
int config_rule_port_lookup(void *aux, const char *name);

/* Rules read from a flows file: one rule per line, blank lines and lines
 * starting with '#' skipped (what `include =` in [rules] and `flowswitch
 * ctl rule-load` read). Each rule keeps its line number. */
struct config_rules {
    struct dp_rule_src *rules; /* texts owned */
    size_t n, cap;
};

/* Reads path into out. Returns 0, or -1 with "path: reason" in err (out is
 * then empty). The rules are not parsed: dp_rules_apply() does, naming
 * path:line. */
int config_rules_read(const char *path, struct config_rules *out, char *err, size_t errlen);

void config_rules_free(struct config_rules *r);

/* Sets key = value on port 'port' after loading, replacing what the file
 * gave (the core keys caps, tx-retries, emc-insert-inv-prob, or an
 * option). Returns 0, or -1 with the reason in err. */
int config_port_set(struct config *cfg, const char *port, const char *key, const char *value,
                    char *err, size_t errlen);

/* The config's rules as a table (for `flowswitch check`), or NULL with
 * "file:line: rule: reason" in err. */
struct rule_table *config_rule_table(const struct config *cfg, char *err, size_t errlen);

/* Creates the datapath a config describes: its knobs, its ports (output
 * paths of backends resolved against out_dir, NULL: the config's
 * directory) and its rules. Returns 0, or -1 with "file:line: reason" in
 * err. */
int config_dp_create(const struct config *cfg, const char *out_dir, struct dp **out,
                     char *err, size_t errlen);

#endif
