/* fcache.h: the flow-cache hierarchy of one PMD.
 *
 * A lookup goes EMC -> SMC -> megaflow classifier -> upcall (the rule
 * table), and stops at the first stage that answers:
 *
 *   EMC         exact match on the whole key (emc.h)
 *   SMC         16-bit signature -> megaflow index, confirmed by a masked
 *               compare (smc.h)
 *   classifier  tuple-space search, one classifier per in_port
 *               (classifier.h)
 *   upcall      rule_table_lookup(); installs a megaflow whose mask is the
 *               bits that decided the lookup (the winner's mask and, for
 *               every rule examined before it, bits on which the key
 *               differs from it), plus in_port exact, so no megaflow can
 *               shadow a higher-priority rule. A lookup that finds no rule installs a "no rule"
 *               megaflow too (actions NULL), so repeated misses stay cheap.
 *
 * Why any matching megaflow is right: a megaflow built from key K with mask
 * W = wc(K) answers for every key K' with K' & W == K & W, because the rule
 * table's decision for K' depends only on the bits of W (the rules it
 * examines, their outcomes and the winner are the same). So megaflows of
 * one rule-table version never disagree, and a cache hit on any live
 * megaflow that matches the key is correct.
 *
 * Rule changes: every fcache_lookup_batch() first compares
 * rule_table_version() with the version the megaflows were built for. On a
 * change each megaflow is revalidated (cfg.revalidate): the rule table is
 * consulted for its masked key; the megaflow is kept, with the current
 * rule's action list, if the fields the new lookup examined are within its
 * mask, and deleted otherwise. With revalidate off, or when megaflows x
 * rules exceeds 2^20 (the rule table is a linear list: revalidating 65535
 * megaflows against 1000 rules would stall the PMD for most of a second),
 * every megaflow is flushed instead and re-learned by upcalls. EMC entries
 * refer to megaflows by (slot, generation) and SMC
 * entries are confirmed by a masked compare against a live megaflow, so a
 * deleted megaflow is never used again: no packet is ever forwarded by a
 * stale entry. Dead EMC and SMC entries are swept incrementally (one EMC
 * entry and one SMC bucket per call, plus any dead EMC entry a probe
 * meets).
 *
 * Counters: every packet is answered by exactly one stage, so
 *   lookups == emc_hits + smc_hits + megaflow_hits + simple_hits + upcalls
 * (simple_hits: packets answered without a key by fcache_lookup_port()).
 * "Misses" of a stage are the packets that went past it: EMC misses =
 * lookups - emc_hits, SMC misses = EMC misses - smc_hits, classifier misses
 * = upcalls. Packets of one batch answered by a megaflow that an earlier
 * packet of the same batch installed count as megaflow hits.
 *
 * Everything is per PMD and single-threaded; the hit path never allocates.
 */
#ifndef FS_FCACHE_H
#define FS_FCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actions.h"
#include "flow.h"
#include "rules.h"

#define FCACHE_MAX_PORTS 64 /* == DP_MAX_PORTS (dp.c checks) */

struct fcache_cfg {
    /* EMC */
    uint32_t emc_entries;         /* power of two, 1..2^24; default 8192 */
    unsigned emc_ways;            /* 1 or 2; default 2 */
    uint32_t emc_insert_inv_prob; /* insert 1 in N: 0 = EMC off, 1 = always;
                                   * default 100 */
    int64_t emc_port_inv_prob[FCACHE_MAX_PORTS]; /* per in_port override of
                                   * emc_insert_inv_prob, -1 = use it
                                   * (default); ports >= FCACHE_MAX_PORTS use
                                   * the global value. 0 turns the EMC off
                                   * for that port (no inserts, no probes). */
    unsigned emc_max_key_len;     /* bytes, 0..136: longer keys are not
                                   * cached. Default 136 (every key; see
                                   * emc.h for "length": Ethernet, VLAN
                                   * and IPv4 keys take 48 bytes at most,
                                   * IPv6 keys 80, ARP keys 96,
                                   * decapsulated keys up to 136). */
    /* SMC */
    bool smc_enabled;             /* default true */
    uint32_t smc_entries;         /* power of two, 4..2^26; default 2^21:
                                   * two entries per flow at 1M flows, so
                                   * that 8-way buckets rarely overflow
                                   * (docs/performance.md) */
    /* Megaflows */
    uint32_t megaflow_max;        /* 1..2^22; default 65535 (all SMC-addressable);
                                   * on overflow one is evicted (CLOCK) */
    uint64_t resort_interval_ns;  /* subtable re-ranking period of datapath
                                   * time; default 1 s; 0 = every call */
    bool revalidate;              /* on a rule change: revalidate (true,
                                   * default) or flush every megaflow */
    uint64_t seed;                /* PRNG seed (EMC insertion, SMC victim);
                                   * default 0 */
    bool prefetch;                /* prefetch the batch's EMC, SMC, megaflow
                                   * and subtable lines ahead of use; default
                                   * true (bench/bench_flowcache.c measures
                                   * both) */
    uint32_t direct_subtables;    /* 0..FCACHE_DIRECT_MAX: a port whose
                                   * classifier has at most this many
                                   * subtables is looked up in it directly,
                                   * skipping the EMC and SMC (and needing no
                                   * flow_hash()); default 1; 0 = never */
};

/* Largest direct_subtables. */
#define FCACHE_DIRECT_MAX 64

/* Counters, one array indexed by enum fcache_stat: every packet looked up
 * is answered by exactly one of emc_hits, smc_hits, megaflow_hits,
 * simple_hits and upcalls. The last three are gauges (current sizes), which
 * add up across PMDs like the counters. */
#define FCACHE_STATS(X)                                                          \
    X(LOOKUPS, lookups)                /* packets passed to a lookup */          \
    X(EMC_HITS, emc_hits)                                                        \
    X(SMC_HITS, smc_hits)                                                        \
    X(MEGAFLOW_HITS, megaflow_hits)    /* classifier hits */                     \
    X(SIMPLE_HITS, simple_hits)        /* answered without a key by the port's   \
                                        * one in_port-only megaflow              \
                                        * (fcache_lookup_port()) */              \
    X(DIRECT, direct)                  /* lookups with a key that skipped the EMC \
                                        * and SMC: a subset of megaflow_hits +   \
                                        * upcalls */                             \
    X(UPCALLS, upcalls)                /* rule-table lookups (classifier misses) */ \
    X(UPCALL_MISSES, upcall_misses)    /* upcalls that found no rule (subset) */ \
    X(NO_RULE, no_rule)                /* packets answered NULL, at any stage */ \
    X(SUBTABLE_LOOKUPS, subtable_lookups) /* subtables probed by megaflow hits */ \
    X(SUBTABLE_LOOKUPS_MISS, subtable_lookups_miss) /* ... by classifier misses */ \
    X(MEGAFLOWS_INSTALLED, megaflows_installed)                                  \
    X(MEGAFLOWS_EVICTED, megaflows_evicted) /* to make room: megaflow_max */     \
    X(MEGAFLOWS_FLUSHED, megaflows_flushed) /* deleted by a rule change */       \
    X(MEGAFLOWS_REVALIDATED, megaflows_revalidated) /* kept across a change */   \
    X(MEGAFLOW_INSTALL_FAILED, megaflow_install_failed) /* out of memory */      \
    X(RULE_CHANGES, rule_changes)      /* rule-table versions seen */            \
    X(REVALIDATE_OVER_BUDGET, revalidate_over_budget) /* flushed instead: above \
                                        * 2^20 rule examinations */              \
    X(EMC_INSERTS, emc_inserts)                                                  \
    X(EMC_INSERT_TOO_LONG, emc_insert_too_long) /* chosen, key too long */       \
    X(SMC_INSERTS, smc_inserts)                                                  \
    X(SMC_INSERT_UNADDRESSABLE, smc_insert_unaddressable) /* slot >= 65535 */    \
    X(EMC_SWEPT, emc_swept)            /* dead EMC entries cleared */            \
    X(SMC_SWEPT, smc_swept)            /* dead SMC ways cleared */               \
    X(RESORTS, resorts)                /* subtable re-rankings */                \
    X(MEGAFLOWS, megaflows)            /* gauge: live megaflows */               \
    X(SUBTABLES, subtables)            /* gauge: over every in_port classifier */ \
    X(CLASSIFIERS, classifiers)        /* gauge: in_ports with a classifier */

enum fcache_stat {
#define FCACHE_STAT_ENUM_(ID, name) FCACHE_STAT_##ID,
    FCACHE_STATS(FCACHE_STAT_ENUM_)
#undef FCACHE_STAT_ENUM_
    FCACHE_N_STATS
};

struct fcache_stats {
    uint64_t n[FCACHE_N_STATS];
};

/* The counter's name as reports print it ("emc_hits"). */
const char *fcache_stat_name(enum fcache_stat s);

/* dst += src, counter by counter. */
void fcache_stats_add(struct fcache_stats *dst, const struct fcache_stats *src);

/* Bytes per PMD. */
struct fcache_memory {
    size_t emc;             /* meta + keys */
    size_t smc;             /* buckets */
    size_t megaflows;       /* megaflow table capacity (virtual) */
    size_t megaflows_touched; /* of which ever used */
    size_t classifier;      /* subtables and their hash tables */
    size_t total;           /* emc + smc + megaflows_touched + classifier + fcache */
};

struct fcache;

void fcache_cfg_default(struct fcache_cfg *cfg);

/* Checks every field; returns 0, or -1 with a one-line reason in err, e.g.
 * "emc-entries must be a power of two between 1 and 16777216". */
int fcache_cfg_validate(const struct fcache_cfg *cfg, char *err, size_t errlen);

/* The caches of one PMD over 'rules' (which must outlive it, or be replaced
 * with fcache_set_rules()). NULL on an invalid cfg or allocation failure. */
struct fcache *fcache_create(const struct fcache_cfg *cfg, const struct rule_table *rules);

void fcache_destroy(struct fcache *fc);

/* Points the caches at another rule table and flushes everything. */
void fcache_set_rules(struct fcache *fc, const struct rule_table *rules);

/* Points the caches at a newer version of their rule table (an edited
 * rule_table_clone()): the next sync treats it as a rule change, as for a
 * table edited in place (revalidation or flush, see above). */
void fcache_switch_rules(struct fcache *fc, const struct rule_table *rules);

/* Run-time changes of emc-insert-inv-prob (ports with an override keep
 * it) and of the SMC, made by the thread that owns fc between lookups (a
 * PMD at its quiescent point). A cache that no port uses any more is
 * freed (its entries are gone), one that is needed again is created
 * empty. Each returns 0, or -1 if that allocation failed: the setting is
 * then unchanged. */
int fcache_set_emc_insert_inv_prob(struct fcache *fc, uint32_t inv_prob);
int fcache_set_smc(struct fcache *fc, bool enabled);

/* Deletes every megaflow and empties the EMC and SMC. */
void fcache_flush(struct fcache *fc);

/* True if lookups of packets from in_port skip the EMC and SMC: its
 * classifier has at most cfg.direct_subtables subtables (the direct stage).
 * With one subtable a classifier probe costs what an EMC probe costs, hashes
 * only the mask's words and its table stays as small as the rule set, while
 * the EMC and SMC cost a key hash, a key compare and, with many
 * flows, cache misses in their large tables. Changes only when a lookup
 * installs or deletes megaflows. */
bool fcache_port_direct(const struct fcache *fc, uint32_t in_port);

/* Looks up n keys (normally <= PKT_BATCH_MAX; more are done in chunks),
 * hashes[i] = flow_hash(&keys[i], 0); hashes[i] is read only if
 * fcache_port_direct(fc, keys[i].in_port) was false before the call (a
 * direct packet's entry may be anything).
 * out[i] = the action list of the rule the rule table would choose for
 * keys[i], or NULL if no rule matches. The lists stay valid until the next
 * call on fc (or its destruction). 'now' is the PMD clock (ns), for
 * re-ranking subtables. Results are per packet, in batch order. */
void fcache_lookup_batch(struct fcache *fc, const struct flow_key *keys,
                         const uint32_t *hashes, unsigned n,
                         const struct action_list **out, uint64_t now);

/* fcache_lookup_batch() of keys that all have one in_port (a batch from one
 * port that no decapsulation changed): the same answers and counters,
 * without testing the keys' ports. Bit i of 'hot' (i < PKT_BATCH_MAX) may
 * be set only if keys[i] has no cold words (!flow_key_cold(): an Ethernet,
 * VLAN or IPv4 key); the EMC then compares its hot words only. */
void fcache_lookup_batch_port(struct fcache *fc, const struct flow_key *keys,
                              const uint32_t *hashes, uint32_t hot, unsigned n,
                              const struct action_list **out, uint64_t now);

/* Applies what changed since the last call: a new rule-table version
 * (revalidation or flush), the previous call's deferred frees, subtable
 * re-ranking when due. fcache_lookup_batch() starts with it; call it before
 * fcache_port_simple() so that the answer holds for the lookup after it. */
void fcache_sync(struct fcache *fc, uint64_t now);

/* True if every packet of in_port gets one answer whatever its key (the
 * port's classifier is direct and its only subtable covers in_port alone,
 * OVS's "simple match"); then *answer is that action list (NULL: no rule).
 * Holds until the next fcache_sync() or lookup batch. Cheap when asked
 * again: the answer is kept while no megaflow is installed or removed. */
bool fcache_port_simple(struct fcache *fc, uint32_t in_port,
                        const struct action_list **answer);

/* Looks up n packets of in_port without their keys, after
 * fcache_port_simple() said true (and nothing ran on fc since): returns the
 * port's answer, counted as n simple_hits (no subtable is probed per
 * packet: neither megaflow_hits nor subtable_lookups grow). Without a
 * simple answer it returns NULL, counted as n upcalls without a rule. */
const struct action_list *fcache_lookup_port(struct fcache *fc, uint32_t in_port, unsigned n);

/* Calls fn for every live megaflow: its masked key, its mask and its
 * action list (NULL: no rule matches), in slot order. fn must not change
 * fc. */
typedef void fcache_walk_fn(void *aux, const struct flow_key *key, const struct flow_mask *mask,
                            struct action_list *actions);
void fcache_megaflow_walk(const struct fcache *fc, fcache_walk_fn *fn, void *aux);

void fcache_get_stats(const struct fcache *fc, struct fcache_stats *st);

/* fcache_get_stats() without the subtable and classifier gauges (left 0),
 * which take a walk over every classifier: for a reader after every batch. */
void fcache_get_counters(const struct fcache *fc, struct fcache_stats *st);

void fcache_get_memory(const struct fcache *fc, struct fcache_memory *m);

#endif
