/* dp.h: the datapath core's public interface.
 *
 * A struct dp owns the ports and the rule table; a struct dp_pmd is one
 * polling context (its clock reading, output queues, flow caches and
 * counters), driven by whoever owns the thread: the PMD runtime, the
 * replay engine or the simulator. Both types are private to dp.c.
 *
 * Threads: the control side (dp_create, dp_port_*, dp_rules_apply,
 * dp_knob_update, dp_knobs_publish, dp_stats_collect after the PMDs
 * stopped) runs on one thread; each dp_pmd is used by one thread at a
 * time. Rule and knob changes are published to the PMDs without locks on
 * their fast path: a PMD takes them at the start of its next dp_pmd_poll()
 * (its quiescent point), after flushing its output queues, and a replaced
 * rule table or knob set is freed once every PMD has synced with a later
 * publication (dp_rules_reclaim). Requests about a PMD's own state (its
 * caches) are served at the same point (dp_pmd_request_post).
 *
 * Conservation, per PMD and in total, at every step:
 *   rx + copies = tx + dropped + queued
 * where copies are the extra packets made by multiple outputs. */
#ifndef FS_DP_H
#define FS_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "fcache.h"
#include "netdev.h"
#include "offload.h"
#include "parse.h"
#include "rules.h"
#include "txq.h"

#define DP_MAX_PORTS 64

struct dp;
struct dp_pmd;

/* ---- knobs ------------------------------------------------------------- */

/* Every datapath knob, defined once: the config loader, `ctl set`, the
 * defaults, the range checks, `flowswitch knobs` and the knob table of
 * docs/usage.md all come from this list. Adding a knob is one X() entry
 * (and its use in the datapath). The columns:
 *   X(name, field, kind, default, min, max, yes, no, live, doc)
 * kind DP_KNOB_U32: a uint32_t field, decimal min..max;
 * kind DP_KNOB_WORDS: a bool field written as the word yes (true) or no;
 * live: whether dp_knob_update() may change it while PMDs run (else it
 * needs a restart). */
#define DP_KNOBS(X)                                                                               \
    X("tx-flush-interval", tx_flush_interval_us, DP_KNOB_U32, 0, 0, 1000000, NULL, NULL, true,    \
      "us a partly filled output batch may wait; 0 sends at the end of every rx batch")           \
    X("tx-retries", tx_retries, DP_KNOB_U32, 8, 0, TXQ_MAX_RETRIES, NULL, NULL, true,             \
      "send retries before a tx_full drop (a port's own tx-retries overrides it)")                \
    X("bad-csum", bad_csum_forward, DP_KNOB_WORDS, 0, 0, 1, "forward", "drop", true,              \
      "what happens to a packet whose checksum the NIC or the host found bad")                    \
    X("emc-entries", emc_entries, DP_KNOB_U32, 8192, 1, 1u << 24, NULL, NULL, false,              \
      "exact-match cache entries per PMD (a power of two)")                                       \
    X("emc-ways", emc_ways, DP_KNOB_U32, 2, 1, 2, NULL, NULL, false,                              \
      "EMC associativity: candidate slots per key")                                               \
    X("emc-insert-inv-prob", emc_insert_inv_prob, DP_KNOB_U32, 100, 0, 1000000000, NULL, NULL,    \
      true, "a miss enters the EMC with probability 1/N (1 always, 0 EMC off); per port too")     \
    X("emc-max-key-len", emc_max_key_len, DP_KNOB_U32, 136, 0, 136, NULL, NULL, false,            \
      "bytes: longer keys skip the EMC (IPv4 48, IPv6 80, decapsulated up to 136)")               \
    X("smc", smc, DP_KNOB_WORDS, 1, 0, 1, "on", "off", true,                                      \
      "the signature-match cache between the EMC and the megaflows")                              \
    X("smc-entries", smc_entries, DP_KNOB_U32, 1u << 21, 4, 1u << 26, NULL, NULL, false,          \
      "SMC entries per PMD (a power of two)")                                                     \
    X("megaflow-max", megaflow_max, DP_KNOB_U32, 65535, 1, 1u << 22, NULL, NULL, false,           \
      "megaflows per PMD: the megaflow table's size")                                             \
    X("subtable-resort-interval", subtable_resort_ms, DP_KNOB_U32, 1000, 0, 3600000, NULL,        \
      NULL, false, "ms of datapath time between re-sorts of the subtables by hit count")          \
    X("megaflow-revalidate", megaflow_revalidate, DP_KNOB_WORDS, 1, 0, 1, "on", "off", false,     \
      "a rule change removes only the megaflows it changes (off: flushes all)")                   \
    X("tx-batching", tx_batching, DP_KNOB_WORDS, 1, 0, 1, "on", "off", false,                     \
      "off: each rx batch grouped per action list, each group sent alone (OVS 2.8)")      \
    X("seed", seed, DP_KNOB_U32, 0, 0, 4294967295u, NULL, NULL, false,                            \
      "seed of the caches' hashes and insertion draws")                                           \
    X("direct-subtables", direct_subtables, DP_KNOB_U32, 1, 0, FCACHE_DIRECT_MAX, NULL, NULL,     \
      false, "ports whose megaflows span at most N subtables skip the EMC and SMC")

enum dp_knob_kind { DP_KNOB_U32, DP_KNOB_WORDS };

#define DP_KNOB_TYPE_DP_KNOB_U32 uint32_t
#define DP_KNOB_TYPE_DP_KNOB_WORDS bool
#define DP_KNOB_FIELD(name, field, kind, def, min, max, yes, no, live, doc) \
    DP_KNOB_TYPE_##kind field;

/* The knob values, one field per DP_KNOBS() entry. */
struct dp_knobs {
    DP_KNOBS(DP_KNOB_FIELD)
};

/* What DP_KNOBS() says of one knob. */
struct dp_knob_info {
    const char *name;
    enum dp_knob_kind kind;
    uint32_t def, min, max;
    const char *yes, *no; /* DP_KNOB_WORDS: the words for true and false */
    bool live;
    const char *doc;
};

/* The number of knobs, and knob i (i < dp_knob_count()) in table order. */
size_t dp_knob_count(void);
const struct dp_knob_info *dp_knob_info(size_t i);

void dp_knobs_default(struct dp_knobs *k);

/* Sets knob 'name' ("tx-flush-interval", "smc", ...) from its text form.
 * Returns 0; -1 with the reason in err for a bad value; 1 if 'name' is not
 * a datapath knob (err untouched). */
int dp_knobs_set(struct dp_knobs *k, const char *name, const char *value, char *err,
                 size_t errlen);

/* The knob names, comma separated, for "unknown knob" messages. */
void dp_knobs_names(char *buf, size_t size);

/* Writes knob 'name' of k in its text form (what dp_knobs_set() reads).
 * Returns 0, or -1 if 'name' is not a datapath knob. */
int dp_knobs_get(const struct dp_knobs *k, const char *name, char *buf, size_t size);

/* True if dp_knob_update() and dp_knobs_publish() can change knob 'name'
 * while PMDs run. */
bool dp_knob_is_live(const char *name);

/* Whether k is a knob set a datapath takes: with dp NULL, on its own (what
 * dp_create() checks); else as the next knob set of the running dp (only
 * live knobs may differ from dp's, and the ports' emc-insert-inv-prob
 * overrides count). Changes nothing. Returns 0, or -1 with the reason in
 * err ("knob 'X' cannot change while the datapath runs", or the flow
 * caches' reason, e.g. "smc-entries must be a power of two ..."). */
int dp_knobs_check(const struct dp *dp, const struct dp_knobs *k, char *err, size_t errlen);

/* ---- datapath and ports ------------------------------------------------- */

/* Creates an empty datapath. Returns 0, or -1 with the reason in err (a
 * knob combination the flow caches refuse). */
int dp_create(const struct dp_knobs *knobs, struct dp **out, char *err, size_t errlen);

/* Closes the ports and frees the rule tables. Every PMD must have been
 * destroyed first. NULL is ignored. */
void dp_destroy(struct dp *dp);

/* A port to add: a device of a registered backend type, or a tunnel port
 * (type "vxlan", no device: args holds its options). */
struct dp_port_params {
    const char *name;
    const char *type;
    struct netdev_args args;
    int tx_retries;              /* -1: the datapath's tx-retries */
    int64_t emc_insert_inv_prob; /* -1: the datapath's emc-insert-inv-prob */
};

/* Adds a port (numbered from 0 in the order added) before any PMD is
 * created. Returns the port number, or -1 with the reason in err. */
int dp_port_add(struct dp *dp, const struct dp_port_params *p, char *err, size_t errlen);

/* Removes a port: flushes every PMD's queue to it (packets that cannot be
 * sent are dropped and counted), then closes the device. */
void dp_port_remove(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                    uint16_t port_no);

/* The PMDs stop polling the port (a replay source that is exhausted). */
void dp_port_rx_stop(struct dp *dp, uint16_t port_no);

unsigned dp_n_ports(const struct dp *dp);

/* Port number of a name (or a decimal number), -1 if unknown. Matches
 * rule_port_lookup_fn with aux = the dp. */
int dp_port_lookup(void *dp, const char *name);

struct dp_port_info {
    const char *name;
    const char *type;
    uint16_t port_no;
    bool tunnel;             /* a VXLAN port: no device */
    bool rx_stopped;         /* dp_port_rx_stop() */
    struct netdev *dev;      /* NULL for tunnels and removed ports */
    struct netdev_caps caps;
};

void dp_port_get(const struct dp *dp, unsigned port_no, struct dp_port_info *info);

/* ---- rules and run-time knobs ----------------------------------------- */

struct dp_rule_src {
    const char *text; /* "match actions=..." in ovs-ofctl syntax */
    int line;         /* where it was written, for messages; 0 if nowhere */
};

/* One atomic change of the rule table: optionally remove every rule, then
 * delete (strict: priority and match) and add. */
struct dp_rule_edit {
    bool clear;
    const struct dp_rule_src *del;
    size_t n_del;
    const struct dp_rule_src *add;
    size_t n_add;
};

/* Applies an edit as a whole or not at all: every rule is parsed and room
 * for the new table's rules allocated first, then the table is published
 * for the PMDs. Returns 0, or -1 with "ORIGIN:LINE: reason" (or
 * "out of memory") in err, the rules unchanged (origin names the source,
 * e.g. a file). The edit's texts stay the caller's. */
int dp_rules_apply(struct dp *dp, const struct dp_rule_edit *edit, const char *origin,
                   char *err, size_t errlen);

/* The current rule table (control thread only; valid until the next edit). */
const struct rule_table *dp_rules(const struct dp *dp);

/* Frees the replaced rule tables that no PMD uses any more. Returns how
 * many are still waiting for a PMD. */
unsigned dp_rules_reclaim(struct dp *dp);

/* True once the PMD works with the rule table and knob set published last
 * (it passed its quiescent point since). Control side. */
bool dp_pmd_current(const struct dp_pmd *pmd);

/* Changes a knob at run time: tx-flush-interval, tx-retries (each PMD's
 * output queues), bad-csum, emc-insert-inv-prob and smc (each PMD's flow
 * caches: a cache turned off is freed, one turned on starts empty). The
 * PMDs apply it at their next poll (dp_knobs_publish() of the running set
 * with this one knob changed). Returns 0, or -1 with the reason in err
 * (unknown knob, bad value, or one that needs a restart). */
int dp_knob_update(struct dp *dp, const char *name, const char *value, char *err,
                   size_t errlen);

/* Replaces the whole knob set by k in one publication, however many knobs
 * differ: each PMD takes every change of k at one quiescent point (its next
 * poll), so no PMD ever works with some of them and not the others. k is
 * checked first (dp_knobs_check(dp, k)); the caller keeps k. Control side.
 * Returns 0, or -1 with the reason in err (a knob that needs a restart
 * differs, a combination the flow caches refuse, out of memory): nothing
 * is published then. */
int dp_knobs_publish(struct dp *dp, const struct dp_knobs *k, char *err, size_t errlen);

/* The knob set published last (control thread only). */
const struct dp_knobs *dp_get_knobs(const struct dp *dp);

/* ---- PMDs ----------------------------------------------------------------- */

/* NULL if out of memory. */
struct dp_pmd *dp_pmd_create(struct dp *dp);

/* Flushes the output queues, then frees the PMD. NULL is ignored. */
void dp_pmd_destroy(struct dp_pmd *pmd);

/* Makes the PMD poll (port, qid); once any is added, it polls only those.
 * Returns 0, or -1 if the list is full or the queue does not exist. */
int dp_pmd_add_rxq(struct dp_pmd *pmd, uint16_t port, uint16_t qid);

unsigned dp_pmd_n_rxqs(const struct dp_pmd *pmd);
void dp_pmd_get_rxq(const struct dp_pmd *pmd, unsigned i, uint16_t *port, uint16_t *qid);

/* Makes the PMD transmit on tx queue qid of port (default 0), through
 * 'dev' instead of the port's own device when not NULL (a proxy that
 * serialises PMDs sharing a queue). */
void dp_pmd_set_txq(struct dp_pmd *pmd, uint16_t port, unsigned qid, struct netdev *dev);
unsigned dp_pmd_txq_id(const struct dp_pmd *pmd, uint16_t port);

/* Replay: drain each rx queue of everything due before polling the next,
 * so frames with equal timestamps leave in port order whatever the burst
 * size. */
void dp_pmd_set_drain(struct dp_pmd *pmd, bool drain);

/* One poll iteration at time 'now' (ns): takes pending rule and knob
 * changes, receives from every rx queue in order, processes each batch,
 * then flushes the output queues that are due (all of them with interval
 * 0, or when nothing was received). Returns the packets received. */
unsigned dp_pmd_poll(struct dp_pmd *pmd, uint64_t now);

/* Sends everything queued on every port at time 'now'. */
void dp_pmd_flush(struct dp_pmd *pmd, uint64_t now);

/* Packets waiting in the PMD's output queues. */
unsigned dp_pmd_queued(const struct dp_pmd *pmd);

/* Which PMD polls each rx queue, as `flowswitch run` assigns them: a queue
 * pinned in 'pins' goes to its PMD, which then polls no other (OVS's
 * isolation); the others are dealt round-robin, in port then queue order,
 * to the PMDs without pins (to every PMD if all have some). Returns 0, or
 * -1 with the reason in err. */
struct dp_rxq_pin {
    uint16_t port;
    uint16_t qid;
    unsigned pmd; /* index into pmds */
};

int dp_assign_rxqs(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                   const struct dp_rxq_pin *pins, unsigned n_pins, char *err, size_t errlen);

/* The PMD's flow caches (for their memory and stats reports). */
const struct fcache *dp_pmd_fcache(const struct dp_pmd *pmd);

/* The knob set the PMD works with: the one it took at its last quiescent
 * point. For the thread that polls the PMD (or its owner while none does);
 * valid until its next dp_pmd_poll() or dp_pmd_sync(). */
const struct dp_knobs *dp_pmd_knobs(const struct dp_pmd *pmd);

/* ---- requests a PMD serves at its quiescent point -------------------------- */

/* What the control side may ask of a PMD's own state (its caches), which
 * no other thread may touch while it polls: the PMD serves the request at
 * the start of its next dp_pmd_poll(). One request per PMD at a time: post
 * it, then wait until it is done (with a timeout of the caller's: a
 * stalled PMD never answers). A PMD that no thread polls is served by
 * whoever owns it, with dp_pmd_sync(). Posting, checking and
 * taking the result are control-side calls (one thread at a time). */
enum dp_pmd_request {
    DP_PMD_REQ_MEGAFLOW_FLUSH = 1, /* delete every megaflow, empty the EMC and SMC */
    DP_PMD_REQ_MEGAFLOW_DUMP,      /* copy every megaflow: dp_pmd_take_dump() */
};

/* One megaflow of a dump. */
struct dp_megaflow {
    struct flow_key key;         /* masked by mask */
    struct flow_mask mask;
    struct action_list *actions; /* a reference of the dump's; NULL: no rule */
};

struct dp_megaflow_dump {
    struct dp_megaflow *flows;
    size_t n;
    bool nomem; /* the PMD could not allocate the copy (n is 0) */
};

/* Posts req. Returns 0, or -1 if the PMD has not served the previous
 * request yet (nothing posted). A dump left untaken is freed. */
int dp_pmd_request_post(struct dp_pmd *pmd, enum dp_pmd_request req);

/* True once the last request posted has been served (also when none was). */
bool dp_pmd_request_done(const struct dp_pmd *pmd);

/* The quiescent point without a poll: takes pending rule and knob changes
 * (after flushing the output queues) and serves a posted request. For the
 * owner of a PMD that no thread polls (dp_pmd_poll() starts with it). */
void dp_pmd_sync(struct dp_pmd *pmd);

/* After a DUMP request is done: its result (the caller frees it with
 * dp_megaflow_dump_free()), or NULL if there is none. */
struct dp_megaflow_dump *dp_pmd_take_dump(struct dp_pmd *pmd);

void dp_megaflow_dump_free(struct dp_megaflow_dump *d);

/* ---- counters ------------------------------------------------------------- */

/* Per-PMD counters beyond drops, parse results, checksums and caches. */
#define DP_STATS(X)                                                           \
    X(COPIES, copies)                 /* extra packets of multiple outputs */ \
    X(HEADROOM_GROWN, headroom_grown) /* tunnel pushes that grew headroom */  \
    X(ITERATIONS, iterations)         /* dp_pmd_poll() calls */               \
    X(IDLE_ITERATIONS, idle_iterations) /* ... that received nothing */       \
    X(RX_BURSTS, rx_bursts)           /* device receives that got packets */  \
    X(ACTION_RUNS, action_runs)       /* action lists executed one packet at  \
                                       * a time (not single-output runs) */   \
    X(TNL_PUSH, tnl_push)             /* packets encapsulated */              \
    X(TNL_POP, tnl_pop)               /* packets decapsulated */              \
    X(LAYOUT_ONLY, layout_only)       /* packets validated without a flow key \
                                       * (a port's one in_port subtable) */   \
    X(QUEUED, queued)                 /* gauge: packets in output queues */

enum dp_stat {
#define DP_STAT_ENUM_(ID, name) DP_STAT_##ID,
    DP_STATS(DP_STAT_ENUM_)
#undef DP_STAT_ENUM_
    DP_N_STATS
};

/* Per-port counters of the datapath (the device's own are netdev_stats). */
enum dp_port_stat {
    DP_PORT_RX_PACKETS,   /* received on a device port */
    DP_PORT_RX_BYTES,
    DP_PORT_TNL_RX,       /* tunnel ports: packets decapsulated */
    DP_PORT_TNL_RX_BYTES,
    DP_PORT_TNL_TX,       /* tunnel ports: packets encapsulated */
    DP_PORT_TNL_TX_BYTES,
    DP_PORT_N_STATS
};

struct dp_port_stats {
    uint64_t n[DP_PORT_N_STATS];
    struct txq_stats tx; /* the output queues to this port */
};

/* A snapshot of counters: one PMD's, or the sum over several. Every
 * counter is in an array indexed by its enum, and dp_stats_add() is the one
 * place they are added up. */
struct dp_stats {
    uint64_t n[DP_N_STATS];
    uint64_t drops[DROP_N_REASONS];    /* the PMDs' and their queues' */
    uint64_t parse[PARSE_N_RESULTS];
    struct csum_stats csum;
    struct fcache_stats fcache;
    struct dp_port_stats ports[DP_MAX_PORTS];
};

const char *dp_stat_name(enum dp_stat s);

/* One PMD's counters (on its thread, or after it stopped). */
void dp_pmd_stats(const struct dp_pmd *pmd, struct dp_stats *out);

/* The PMD-wide counters alone, without the per-port ones: what a cost
 * model reads after every poll (a few hundred bytes, where struct
 * dp_stats is tens of kilobytes). Drops are the PMD's own (not its
 * queues'); the cache gauges of subtables and classifiers are left 0. */
struct dp_counters {
    uint64_t n[DP_N_STATS];
    uint64_t drops[DROP_N_REASONS];
    uint64_t parse[PARSE_N_RESULTS];
    struct csum_stats csum;
    struct fcache_stats fcache;
};

void dp_pmd_counters(const struct dp_pmd *pmd, struct dp_counters *out);

/* dst += src; dst -= src (a change over an interval: read gauges such as
 * DP_STAT_QUEUED from a snapshot, not from a difference). */
void dp_stats_add(struct dp_stats *dst, const struct dp_stats *src);
void dp_stats_sub(struct dp_stats *dst, const struct dp_stats *src);

/* The sum of pmds[0..n) plus what the devices dropped after accepting
 * (offload_contract: counted as sent by the queues, reported as drops).
 * The PMDs must not be running. */
void dp_stats_collect(const struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                      struct dp_stats *out);

/* Adds the devices' contract drops to a sum of PMD snapshots (what
 * dp_stats_collect does after adding). */
void dp_stats_finish(const struct dp *dp, struct dp_stats *s);

struct dp_totals {
    uint64_t rx, tx, copies, dropped, queued;
};

/* The totals of a snapshot; conserved when rx + copies = tx + dropped +
 * queued. */
void dp_stats_totals(const struct dp_stats *s, unsigned n_ports, struct dp_totals *t);

#endif
