/* dp.h: the datapath: ports, the rule table, and the PMD poll loop.
 *
 * A struct dp owns the ports (netdevs) and the rules built from a config.
 * A struct dp_pmd is one polling context: its clock reading 'now', its rx
 * batch, its per-port output queues (txq), its flow caches and its
 * counters. Nothing in a dp_pmd is shared with another PMD.
 *
 * Conservation, per PMD and in total, at every step:
 *   rx + copies = tx + drops + queued
 * where copies are the extra packets made by multiple outputs. */
#ifndef FS_DP_H
#define FS_DP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "config.h"
#include "drop.h"
#include "fcache.h"
#include "netdev.h"
#include "offload.h"
#include "parse.h"
#include "rules.h"
#include "tunnel.h"
#include "txq.h"

#define DP_MAX_PORTS CONFIG_MAX_PORTS

struct dp_port {
    struct netdev *dev;   /* NULL once removed, and for tunnel ports */
    bool tunnel;          /* a VXLAN port: no device, see tnl */
    struct tnl_cfg tnl;
    /* An underlay port: the tunnels whose traffic arrives here. */
    struct tnl_cfg *tnls;
    uint16_t *tnl_ports;
    unsigned n_tnls;
    char name[NETDEV_NAME_MAX];
    char type[NETDEV_NAME_MAX];
    uint16_t port_no;
    struct netdev_caps caps;
    unsigned tx_retries;
    bool rx_done;         /* finite source exhausted (replay) */
};

struct dp {
    struct dp_port ports[DP_MAX_PORTS];
    unsigned n_ports;
    struct rule_table *rules;
    struct dp_knobs knobs;
    struct fs_clock clock;
    const char *cfg_path; /* for messages */
    const struct config *cfg; /* must outlive the dp */
    size_t next_change;   /* replay: the next cfg->changes[] to apply */
    int64_t emc_port_inv_prob[DP_MAX_PORTS]; /* per in_port EMC override, -1 none */
    uint64_t changes_applied;
    bool has_tunnels;     /* some port is a tunnel: packets need p->hash
                           * (the VXLAN source port) whatever the caches do */
};

/* An rx queue a PMD polls. */
struct dp_rxq_ref {
    uint16_t port;
    uint16_t qid;
};

/* Per-port counters of one PMD. */
struct dp_port_stats {
    uint64_t rx_packets, rx_bytes;   /* device ports */
    uint64_t tnl_rx, tnl_rx_bytes;   /* tunnel ports: packets decapsulated */
    uint64_t tnl_tx, tnl_tx_bytes;   /* tunnel ports: packets encapsulated */
};

struct dp_pmd {
    struct dp *dp;
    uint64_t now;                 /* refreshed once per poll iteration */
    struct pkt_batch rx;          /* the batch being processed */
    struct txq txq[DP_MAX_PORTS]; /* output batch per port */
    struct dp_port_stats port_stats[DP_MAX_PORTS];
    struct drop_stats drops;
    uint64_t copies;
    uint64_t headroom_grown;      /* tunnel pushes that had to grow headroom */
    uint16_t rx_flags;            /* PKT_BATCH_F_* of the batch in process */
    struct csum_stats csum;
    uint64_t parse_results[PARSE_N_RESULTS];
    uint64_t iterations, idle_iterations;
    struct fcache *fc;            /* EMC -> SMC -> megaflows -> rule table */
    /* The rx queues this PMD polls; n_rxqs == 0 means every queue of every
     * port (the single-PMD replay case). */
    struct dp_rxq_ref rxqs[DP_MAX_PORTS * 4];
    unsigned n_rxqs;
    /* Replay: drain each rx queue of everything due before polling the
     * next, so frames with equal timestamps leave in port order whatever
     * the burst size. */
    bool drain;
};

/* Opens every port of cfg and builds the rule table. Output paths of
 * backends are resolved against out_dir (NULL: the config's directory).
 * On failure returns -1 with "file:line: port NAME: reason" in err. */
int dp_create(const struct config *cfg, const char *out_dir, struct dp **out,
              char *err, size_t errlen);

/* Parses cfg's rules into t (cleared first; left empty on failure).
 * Returns 0, or -1 with "file:line: rule: reason" in err. */
int dp_rules_load(struct rule_table *t, const struct config *cfg, char *err, size_t errlen);

/* Closes the ports. Every PMD must have been destroyed first. */
void dp_destroy(struct dp *dp);

/* Replaces the rule table with rules parsed from cfg (after flushing every
 * PMD's output queues). Returns 0, or -1 with the reason in err. */
int dp_set_rules(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                 const struct config *cfg, char *err, size_t errlen);

/* Applies a scripted change: flushes every PMD's output queues, then
 * deletes/adds rules and sets knobs. Rules were validated by config_load;
 * returns -1 with the reason in err if one still fails to parse. */
int dp_apply_change(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                    const struct config_change *ch, char *err, size_t errlen);

/* The flow-cache configuration of dp's knobs and per-port overrides. */
void dp_fcache_cfg(const struct dp *dp, struct fcache_cfg *fc);

/* NULL if out of memory. */
struct dp_pmd *dp_pmd_create(struct dp *dp);

/* Makes the PMD poll (port, qid); once any is added, it polls only those.
 * Returns 0, or -1 if the list is full or the queue does not exist. */
int dp_pmd_add_rxq(struct dp_pmd *pmd, uint16_t port, uint16_t qid);

/* Makes the PMD transmit on tx queue qid of port (default 0). */
void dp_pmd_set_txq(struct dp_pmd *pmd, uint16_t port, unsigned qid);

/* Flushes the output queues, then frees the PMD. */
void dp_pmd_destroy(struct dp_pmd *pmd);

/* Processes the packets of pmd->rx, all received on port in_port: sets
 * their in_port, counts them in the port's rx stats, parses, looks up,
 * executes actions, queues outputs. Consumes every packet. */
void dp_pmd_process(struct dp_pmd *pmd, uint16_t in_port);

/* One poll iteration at time 'now': receive from every port in port order,
 * process each batch, then flush the output queues that are due (all of
 * them with interval 0, or when nothing was received). Returns the number
 * of packets received. */
unsigned dp_pmd_poll(struct dp_pmd *pmd, uint64_t now);

/* Sends everything queued on every port. */
void dp_pmd_flush(struct dp_pmd *pmd);

/* Removes a port: flushes every PMD's queue to it (packets that cannot be
 * sent are dropped and counted), then closes the device. */
void dp_port_remove(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                    uint16_t port_no);

/* Summed counters of a set of PMDs. */
struct dp_totals {
    uint64_t rx, tx, copies, dropped, queued;
};
void dp_totals(const struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
               struct dp_totals *t);

/* Replay: runs one PMD on the virtual clock until every port's input is
 * consumed and every queue is empty. Returns 0, or 1 if some port reported
 * an rx error (outputs are still complete up to it). */
int dp_replay(struct dp *dp, struct dp_pmd *pmd);

/* Prints the per-port and per-drop-reason summary (text or JSON). */
void dp_print_summary(const struct dp *dp, struct dp_pmd *const *pmds,
                      unsigned n_pmds, FILE *out, bool json);

#endif
