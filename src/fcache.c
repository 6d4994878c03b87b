/* fcache.c: EMC -> SMC -> classifier -> upcall, per PMD. */
#include "fcache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classifier.h"
#include "emc.h"
#include "packet.h"
#include "smc.h"
#include "util.h"

_Static_assert(PKT_BATCH_MAX <= 32, "batch maps are 32-bit");

/* Classifier slots: one per in_port below FCACHE_MAX_PORTS, one shared by
 * every higher port (in_port is exact in every mask, so sharing is safe). */
#define FCACHE_N_CLS (FCACHE_MAX_PORTS + 1)
/* EMC probes prefetch this many packets ahead. */
#define FCACHE_EMC_AHEAD 4
/* Revalidation consults the rule table once per megaflow, and a lookup
 * examines up to every rule: above this many rule examinations a rule
 * change flushes the megaflows instead (they are re-learned by upcalls, for
 * the flows still active), so a PMD never stalls for long. */
#define FCACHE_REVALIDATE_BUDGET (1u << 20)

struct fcache {
    struct fcache_cfg cfg;
    const struct rule_table *rules;
    uint64_t rules_version;
    struct cls_flows flows;
    struct classifier *cls[FCACHE_N_CLS];
    struct emc *emc;                          /* NULL: off for every port */
    struct smc *smc;                          /* NULL: off */
    uint64_t emc_thr[FCACHE_N_CLS];           /* emc_insert_threshold() per port */
    uint64_t rng;
    uint64_t next_resort;
    struct action_list **deferred; /* evicted megaflows' lists: unref at the
                                    * next call */
    unsigned n_deferred, cap_deferred;
    /* fcache_port_simple()'s last answer, for it and fcache_lookup_port():
     * valid while the megaflows stay as they were (flows.gen), across
     * batches (the actions are read from the megaflow each time). */
    uint32_t simple_port, simple_idx;
    uint64_t simple_gen;
    struct fcache_stats st;
};

void fcache_cfg_default(struct fcache_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->emc_entries = 8192;
    cfg->emc_ways = 2;
    cfg->emc_insert_inv_prob = 100;
    for (unsigned i = 0; i < FCACHE_MAX_PORTS; i++)
        cfg->emc_port_inv_prob[i] = -1;
    cfg->emc_max_key_len = EMC_KEY_LEN_MAX;
    cfg->smc_enabled = true;
    cfg->smc_entries = 1u << 21;
    cfg->megaflow_max = 65535;
    cfg->resort_interval_ns = 1000000000ull;
    cfg->revalidate = true;
    cfg->seed = 0;
    cfg->prefetch = true;
    cfg->direct_subtables = 1;
}

/* Writes the reason into err and returns -1: the validation's exits. */
#define fcache_fail(err, errlen, ...) (fs_errf((err), (errlen), __VA_ARGS__), -1)

static bool is_pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

int fcache_cfg_validate(const struct fcache_cfg *cfg, char *err, size_t errlen)
{
    if (!is_pow2(cfg->emc_entries) || cfg->emc_entries > EMC_MAX_ENTRIES)
        return fcache_fail(err, errlen, "emc-entries must be a power of two between 1 and %u",
                           EMC_MAX_ENTRIES);
    if (cfg->emc_ways != 1 && cfg->emc_ways != 2)
        return fcache_fail(err, errlen, "emc-ways must be 1 or 2");
    for (unsigned i = 0; i < FCACHE_MAX_PORTS; i++)
        if (cfg->emc_port_inv_prob[i] < -1 || cfg->emc_port_inv_prob[i] > UINT32_MAX)
            return fcache_fail(err, errlen,
                               "emc-insert-inv-prob of port %u must be -1 (global) or 0..%u",
                               i, UINT32_MAX);
    if (cfg->emc_max_key_len > EMC_KEY_LEN_MAX)
        return fcache_fail(err, errlen, "emc-max-key-len must be 0..%u", EMC_KEY_LEN_MAX);
    if (cfg->smc_enabled &&
        (!is_pow2(cfg->smc_entries) || cfg->smc_entries < SMC_WAYS ||
         cfg->smc_entries > SMC_MAX_ENTRIES))
        return fcache_fail(err, errlen, "smc-entries must be a power of two between %u and %u",
                           SMC_WAYS, SMC_MAX_ENTRIES);
    if (cfg->direct_subtables > FCACHE_DIRECT_MAX)
        return fcache_fail(err, errlen, "direct-subtables must be 0..%u", FCACHE_DIRECT_MAX);
    if (cfg->megaflow_max < 1 || cfg->megaflow_max > CLS_MAX_FLOWS)
        return fcache_fail(err, errlen, "megaflow-max must be 1..%u", CLS_MAX_FLOWS);
    return 0;
}

static unsigned fcache_port(uint32_t in_port)
{
    return in_port < FCACHE_MAX_PORTS ? in_port : FCACHE_MAX_PORTS;
}

/* Sets the insertion thresholds of every port from the global inv_prob and
 * the ports' overrides, creating the EMC if some port now inserts and
 * destroying it if none does (then no lookup probes it). Returns 0, or -1
 * (nothing changed) if the EMC cannot be allocated. */
static int fcache_emc_setup(struct fcache *fc, uint32_t inv_prob)
{
    uint64_t thr[FCACHE_N_CLS];
    bool any = false;
    for (unsigned p = 0; p < FCACHE_N_CLS; p++) {
        int64_t o = p < FCACHE_MAX_PORTS ? fc->cfg.emc_port_inv_prob[p] : -1;
        uint32_t inv = o >= 0 ? (uint32_t)o : inv_prob;
        thr[p] = emc_insert_threshold(inv);
        any |= inv != 0;
    }
    if (any && !fc->emc) {
        fc->emc = emc_create(fc->cfg.emc_entries, fc->cfg.emc_ways, fc->cfg.emc_max_key_len);
        if (!fc->emc)
            return -1;
    } else if (!any && fc->emc) {
        /* Its sweep count lives on in the counters. */
        fc->st.n[FCACHE_STAT_EMC_SWEPT] += fc->emc->swept;
        emc_destroy(fc->emc);
        fc->emc = NULL;
    }
    memcpy(fc->emc_thr, thr, sizeof thr);
    fc->cfg.emc_insert_inv_prob = inv_prob;
    return 0;
}

int fcache_set_emc_insert_inv_prob(struct fcache *fc, uint32_t inv_prob)
{
    return fcache_emc_setup(fc, inv_prob);
}

int fcache_set_smc(struct fcache *fc, bool enabled)
{
    if (enabled && !fc->smc) {
        fc->smc = smc_create(fc->cfg.smc_entries, fc->cfg.seed);
        if (!fc->smc)
            return -1;
    } else if (!enabled && fc->smc) {
        fc->st.n[FCACHE_STAT_SMC_SWEPT] += fc->smc->swept;
        smc_destroy(fc->smc);
        fc->smc = NULL;
    }
    fc->cfg.smc_enabled = enabled;
    return 0;
}

struct fcache *fcache_create(const struct fcache_cfg *cfg, const struct rule_table *rules)
{
    if (fcache_cfg_validate(cfg, NULL, 0))
        return NULL;
    struct fcache *fc = calloc(1, sizeof *fc);
    if (!fc)
        return NULL;
    fc->cfg = *cfg;
    fc->rules = rules;
    fc->rules_version = rule_table_version(rules);
    fc->rng = cfg->seed;
    fc->simple_port = UINT32_MAX;
    fc->next_resort = 0;
    fc->cap_deferred = PKT_BATCH_MAX;
    fc->deferred = malloc(fc->cap_deferred * sizeof *fc->deferred);
    if (!fc->deferred || cls_flows_init(&fc->flows, cfg->megaflow_max)) {
        free(fc->deferred);
        free(fc);
        return NULL;
    }
    if (fcache_emc_setup(fc, cfg->emc_insert_inv_prob) ||
        fcache_set_smc(fc, cfg->smc_enabled)) {
        fcache_destroy(fc);
        return NULL;
    }
    return fc;
}

static void fcache_drain_deferred(struct fcache *fc)
{
    for (unsigned i = 0; i < fc->n_deferred; i++)
        action_list_unref(fc->deferred[i]);
    fc->n_deferred = 0;
}

void fcache_destroy(struct fcache *fc)
{
    if (!fc)
        return;
    fcache_drain_deferred(fc);
    for (unsigned p = 0; p < FCACHE_N_CLS; p++) {
        if (fc->cls[p]) {
            classifier_destroy(fc->cls[p]);
            free(fc->cls[p]);
        }
    }
    cls_flows_destroy(&fc->flows);
    emc_destroy(fc->emc);
    smc_destroy(fc->smc);
    free(fc->deferred);
    free(fc);
}

static void fcache_remove_all(struct fcache *fc, uint64_t *counter)
{
    struct cls_flows *f = &fc->flows;
    for (uint32_t i = 0; i < f->hw && f->n; i++) {
        if (f->mf[i].in_use) {
            action_list_unref(cls_flow_remove(f, i));
            (*counter)++;
        }
    }
}

void fcache_flush(struct fcache *fc)
{
    fcache_drain_deferred(fc);
    fcache_remove_all(fc, &fc->st.n[FCACHE_STAT_MEGAFLOWS_FLUSHED]);
    if (fc->emc)
        emc_flush(fc->emc);
    if (fc->smc)
        smc_flush(fc->smc);
}

void fcache_set_rules(struct fcache *fc, const struct rule_table *rules)
{
    fcache_flush(fc);
    fc->rules = rules;
    fc->rules_version = rule_table_version(rules);
}

void fcache_switch_rules(struct fcache *fc, const struct rule_table *rules)
{
    fc->rules = rules;
}

/* True if every bit of a is in b. */
static bool mask_within(const struct flow_mask *a, const struct flow_mask *b)
{
    const cls_word *x = cls_words(&a->m), *y = cls_words(&b->m);
    uint64_t out = 0;
    for (unsigned i = 0; i < FLOW_U64S; i++)
        out |= x[i] & ~y[i];
    return out == 0;
}

/* The rule table changed: keep each megaflow whose answer provably did not
 * change (the fields the rule table now examines for its masked key are
 * within its mask), with the current rule's action list; delete the rest. */
static void fcache_revalidate(struct fcache *fc)
{
    struct cls_flows *f = &fc->flows;
    fc->st.n[FCACHE_STAT_RULE_CHANGES]++;
    size_t nrules = rule_table_count(fc->rules);
    if (!fc->cfg.revalidate ||
        (uint64_t)f->n * (nrules ? nrules : 1) > FCACHE_REVALIDATE_BUDGET) {
        if (fc->cfg.revalidate && f->n)
            fc->st.n[FCACHE_STAT_REVALIDATE_OVER_BUDGET]++;
        fcache_remove_all(fc, &fc->st.n[FCACHE_STAT_MEGAFLOWS_FLUSHED]);
        return;
    }
    for (uint32_t i = 0; i < f->hw; i++) {
        struct cls_megaflow *mf = &f->mf[i];
        if (!mf->in_use)
            continue;
        struct flow_mask wc;
        memset(&wc, 0, sizeof wc);
        const struct rule *r = rule_table_lookup(fc->rules, &mf->key, &wc);
        if (!mask_within(&wc, &mf->st->mask)) {
            action_list_unref(cls_flow_remove(f, i));
            fc->st.n[FCACHE_STAT_MEGAFLOWS_FLUSHED]++;
            continue;
        }
        struct action_list *acts = r ? r->actions : NULL;
        if (acts != mf->actions) {
            action_list_unref(mf->actions);
            mf->actions = action_list_ref(acts);
        }
        fc->st.n[FCACHE_STAT_MEGAFLOWS_REVALIDATED]++;
    }
}

static struct classifier *fcache_cls_get(struct fcache *fc, unsigned port)
{
    if (!fc->cls[port]) {
        struct classifier *c = malloc(sizeof *c);
        if (!c)
            return NULL;
        classifier_init(c, &fc->flows);
        c->prefetch = fc->cfg.prefetch;
        c->one_port = port < FCACHE_MAX_PORTS; /* the last one is shared */
        fc->cls[port] = c;
    }
    return fc->cls[port];
}

/* A packet answered by megaflow idx at some stage. */
static inline const struct action_list *fcache_answer(struct fcache *fc, uint32_t idx)
{
    struct cls_megaflow *mf = cls_flow(&fc->flows, idx);
    mf->ref = 1;
    fc->st.n[FCACHE_STAT_NO_RULE] += mf->actions == NULL;
    return mf->actions;
}

static inline void fcache_emc_maybe_insert(struct fcache *fc, const struct flow_key *key,
                                           uint32_t hash, uint32_t idx)
{
    uint64_t thr = fc->emc_thr[fcache_port(key->in_port)];
    if (emc_insert_draw(&fc->rng, thr)) {
        if (emc_insert(fc->emc, &fc->flows, key, hash, idx, cls_flow(&fc->flows, idx)->gen))
            fc->st.n[FCACHE_STAT_EMC_INSERTS]++;
        else
            fc->st.n[FCACHE_STAT_EMC_INSERT_TOO_LONG]++;
    }
}

static inline void fcache_smc_insert(struct fcache *fc, uint32_t hash, uint32_t idx)
{
    if (fc->smc) {
        if (smc_insert(fc->smc, hash, idx))
            fc->st.n[FCACHE_STAT_SMC_INSERTS]++;
        else
            fc->st.n[FCACHE_STAT_SMC_INSERT_UNADDRESSABLE]++;
    }
}

/* The slow path for keys[i]: the rule table, then a new megaflow. */
static const struct action_list *fcache_upcall(struct fcache *fc, const struct flow_key *key,
                                               uint32_t hash, bool cached)
{
    struct flow_mask wc;
    memset(&wc, 0, sizeof wc);
    const struct rule *r = rule_table_lookup(fc->rules, key, &wc);
    wc.m.in_port = UINT32_MAX;
    struct action_list *acts = r ? r->actions : NULL;
    fc->st.n[FCACHE_STAT_UPCALLS]++;
    if (!r) {
        fc->st.n[FCACHE_STAT_UPCALL_MISSES]++;
        fc->st.n[FCACHE_STAT_NO_RULE]++;
    }

    struct classifier *c = fcache_cls_get(fc, fcache_port(key->in_port));
    if (!c) {
        fc->st.n[FCACHE_STAT_MEGAFLOW_INSTALL_FAILED]++;
        return acts;
    }
    struct cls_flows *f = &fc->flows;
    if (f->n >= f->max) {
        /* The victim may have answered an earlier packet of this call: its
         * list must outlive the call. */
        if (fc->n_deferred == fc->cap_deferred) {
            size_t cap = fc->cap_deferred;
            if (fs_grow((void **)&fc->deferred, &cap, fc->n_deferred + 1u,
                        sizeof *fc->deferred, PKT_BATCH_MAX)) {
                fc->st.n[FCACHE_STAT_MEGAFLOW_INSTALL_FAILED]++;
                return acts;
            }
            fc->cap_deferred = (unsigned)cap;
        }
        uint32_t v = cls_flows_victim(f);
        fc->deferred[fc->n_deferred++] = cls_flow_remove(f, v);
        fc->st.n[FCACHE_STAT_MEGAFLOWS_EVICTED]++;
    }
    uint32_t idx;
    int rc = classifier_insert(c, key, &wc, action_list_ref(acts), &idx);
    if (rc < 0 || rc == 1) {
        /* rc == 1 cannot happen (the classifier missed this key); either
         * way the packet still gets the rule's answer. */
        action_list_unref(acts);
        if (rc < 0) {
            fc->st.n[FCACHE_STAT_MEGAFLOW_INSTALL_FAILED]++;
            return acts;
        }
    } else {
        fc->st.n[FCACHE_STAT_MEGAFLOWS_INSTALLED]++;
    }
    cls_flow(f, idx)->ref = 1;
    if (cached) {
        fcache_smc_insert(fc, hash, idx);
        if (fc->emc)
            fcache_emc_maybe_insert(fc, key, hash, idx);
    }
    return acts;
}

static inline bool fcache_direct(const struct fcache *fc, unsigned port)
{
    const struct classifier *c = fc->cls[port];
    return !c || c->n_st <= fc->cfg.direct_subtables;
}

bool fcache_port_direct(const struct fcache *fc, uint32_t in_port)
{
    return fc->cfg.direct_subtables && fcache_direct(fc, fcache_port(in_port));
}

/* Whether keys[0..n) share one in_port (a batch normally comes from one
 * port: then one test decides for all). */
static bool fcache_keys_uniform(const struct flow_key *keys, unsigned n)
{
    bool uniform = true;
    for (unsigned i = 1; i < n; i++)
        uniform &= keys[i].in_port == keys[0].in_port;
    return uniform;
}

/* The EMC probes of the packets in 'miss' (all n of them with 'all': no
 * test per packet); returns those that missed. With 'port_on' the caller
 * knows every key's in_port uses the EMC: no test of the port per packet.
 * Keys in 'hot' (all of them with 'all_hot') have no cold words: their
 * probes compare the hot words only. */
static inline __attribute__((always_inline)) uint32_t
fcache_emc_stage(struct fcache *fc, const struct flow_key *keys, const uint32_t *hashes,
                 unsigned n, uint32_t miss, uint32_t *idx, const struct action_list **out,
                 uint32_t hot, const bool all, const bool port_on, const bool all_hot)
{
    (void)emc_sweep_step(fc->emc, &fc->flows); /* counted in e->swept */
    /* Copies, so that the stores of a hit (a megaflow's ref byte) do not
     * make the compiler read the tables' fields again for every packet;
     * the probes' count of dead entries goes back below. */
    struct emc ec = *fc->emc, *e = &ec;
    const struct cls_flows fl = fc->flows, *f = &fl;
    const bool pf = fc->cfg.prefetch;
    for (unsigned i = 0; pf && i < n && i < FCACHE_EMC_AHEAD; i++)
        emc_prefetch(e, hashes[i]);
    uint32_t m = 0;
    uint64_t hits = 0, no_rule = 0;
    for (unsigned i = 0; i < n; i++) {
        /* (A direct packet's hash may be anything: prefetching from it is
         * harmless, probing with it is not.) */
        if (pf && i + FCACHE_EMC_AHEAD < n)
            emc_prefetch(e, hashes[i + FCACHE_EMC_AHEAD]);
        if (!all && !(miss >> i & 1))
            continue;
        if ((port_on || fc->emc_thr[fcache_port(keys[i].in_port)]) &&
            (all_hot || (hot >> i & 1) ? emc_lookup_hot(e, f, &keys[i], hashes[i], &idx[i])
                                       : emc_lookup(e, f, &keys[i], hashes[i], &idx[i]))) {
            struct cls_megaflow *mf = cls_flow(f, idx[i]);
            mf->ref = 1;
            out[i] = mf->actions;
            no_rule += mf->actions == NULL;
            hits++;
        } else {
            m |= 1u << i;
            /* The SMC will need this bucket: start fetching it now. */
            if (pf && fc->smc)
                smc_prefetch(fc->smc, hashes[i]);
        }
    }
    fc->emc->swept = ec.swept;
    fc->st.n[FCACHE_STAT_EMC_HITS] += hits;
    fc->st.n[FCACHE_STAT_NO_RULE] += no_rule;
    return m;
}

/* One chunk of at most PKT_BATCH_MAX packets through the stages. 'uniform'
 * is 1 if the caller knows every key has the same in_port, -1 if not
 * known; bit i of 'hot' is set if keys[i] has no cold words (0: not
 * known). */
static void fcache_lookup_chunk(struct fcache *fc, const struct flow_key *keys,
                                const uint32_t *hashes, unsigned n,
                                const struct action_list **out, int uniform, uint32_t hot)
{
    struct cls_flows *f = &fc->flows;
    uint32_t idx[PKT_BATCH_MAX];
    const uint32_t all = n >= 32 ? UINT32_MAX : (1u << n) - 1;
    uint32_t miss = all;
    uint32_t direct = 0; /* packets that skip the EMC and SMC */

    fc->st.n[FCACHE_STAT_LOOKUPS] += n;
    /* Otherwise known only when a stage needs it (EMC hits do not). */
    if (fc->cfg.direct_subtables) {
        if (uniform < 0)
            uniform = fcache_keys_uniform(keys, n);
        if (uniform)
            direct = fcache_direct(fc, fcache_port(keys[0].in_port)) ? miss : 0;
        else
            for (unsigned i = 0; i < n; i++)
                direct |= (uint32_t)fcache_direct(fc, fcache_port(keys[i].in_port)) << i;
        miss &= ~direct;
        fc->st.n[FCACHE_STAT_DIRECT] += (unsigned)__builtin_popcount(direct);
    }

    /* EMC */
    if (fc->emc && miss) {
        if (miss != all)
            miss = fcache_emc_stage(fc, keys, hashes, n, miss, idx, out, hot, false, false,
                                    false);
        else if (uniform <= 0)
            miss = fcache_emc_stage(fc, keys, hashes, n, miss, idx, out, hot, true, false,
                                    false);
        else if (!fc->emc_thr[fcache_port(keys[0].in_port)])
            (void)emc_sweep_step(fc->emc, f); /* as the stage does */
        else if ((hot & all) == all)
            miss = fcache_emc_stage(fc, keys, hashes, n, miss, idx, out, hot, true, true,
                                    true);
        else
            miss = fcache_emc_stage(fc, keys, hashes, n, miss, idx, out, hot, true, true,
                                    false);
    }

    /* SMC */
    if (fc->smc && miss) {
        struct smc *s = fc->smc;
        (void)smc_sweep_step(s, f); /* counted in s->swept */
        const bool pf = fc->cfg.prefetch;
        uint32_t cand[PKT_BATCH_MAX];
        /* Three passes so the bucket and megaflow misses of the whole batch
         * overlap: prefetch buckets (the EMC stage did, if it ran), read
         * signatures and prefetch the candidate megaflows, then confirm. */
        for (uint32_t b = miss; pf && !fc->emc && b; b &= b - 1)
            smc_prefetch(s, hashes[__builtin_ctz(b)]);
        for (uint32_t b = miss; b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            cand[i] = smc_candidate(s, hashes[i]);
            if (pf && cand[i] != CLS_IDX_NONE)
                __builtin_prefetch(cls_flow(f, cand[i]));
        }
        uint32_t m = 0;
        for (uint32_t b = miss; b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            if (cand[i] != CLS_IDX_NONE && smc_confirm(f, cand[i], &keys[i])) {
                idx[i] = cand[i];
                out[i] = fcache_answer(fc, idx[i]);
                fc->st.n[FCACHE_STAT_SMC_HITS]++;
                if (fc->emc)
                    fcache_emc_maybe_insert(fc, &keys[i], hashes[i], idx[i]);
            } else {
                m |= 1u << i;
            }
        }
        miss = m;
    }

    /* Classifier, one in_port at a time (a batch normally has one). */
    uint32_t todo = miss | direct;
    miss = 0;
    if (todo && uniform < 0)
        uniform = fcache_keys_uniform(keys, n);
    while (todo) {
        uint32_t port = fcache_port(keys[__builtin_ctz(todo)].in_port);
        uint32_t pmap = uniform ? todo : 0;
        for (uint32_t b = pmap ? 0 : todo; b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            if (fcache_port(keys[i].in_port) == port)
                pmap |= 1u << i;
        }
        todo &= ~pmap;
        uint32_t hits = 0;
        if (fc->cls[port])
            hits = classifier_lookup_batch(fc->cls[port], keys, pmap, idx,
                                           &fc->st.n[FCACHE_STAT_SUBTABLE_LOOKUPS],
                                           &fc->st.n[FCACHE_STAT_SUBTABLE_LOOKUPS_MISS]);
        /* Direct hits need no cache inserts: a tight loop, counters kept
         * in registers (a batch often shares one megaflow). */
        uint32_t dhits = hits & direct;
        uint32_t last = CLS_IDX_NONE;
        const struct action_list *la = NULL;
        uint64_t no_rule = 0;
        for (uint32_t b = dhits; b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            if (idx[i] != last) {
                last = idx[i];
                struct cls_megaflow *mf = cls_flow(f, last);
                mf->ref = 1;
                la = mf->actions;
            }
            out[i] = la;
            no_rule += la == NULL;
        }
        fc->st.n[FCACHE_STAT_NO_RULE] += no_rule;
        fc->st.n[FCACHE_STAT_MEGAFLOW_HITS] += (unsigned)__builtin_popcount(hits);
        for (uint32_t b = hits & ~direct; b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            out[i] = fcache_answer(fc, idx[i]);
            fcache_smc_insert(fc, hashes[i], idx[i]);
            if (fc->emc)
                fcache_emc_maybe_insert(fc, &keys[i], hashes[i], idx[i]);
        }
        miss |= pmap & ~hits;
    }

    /* Upcalls, in batch order. Once one installed a megaflow, a later
     * packet may match it: look it up again first. */
    bool installed = false;
    for (uint32_t b = miss; b; b &= b - 1) {
        unsigned i = (unsigned)__builtin_ctz(b);
        if (installed) {
            struct classifier *c = fc->cls[fcache_port(keys[i].in_port)];
            if (c && classifier_lookup_batch(c, keys, 1u << i, idx,
                                             &fc->st.n[FCACHE_STAT_SUBTABLE_LOOKUPS],
                                             &fc->st.n[FCACHE_STAT_SUBTABLE_LOOKUPS_MISS])) {
                out[i] = fcache_answer(fc, idx[i]);
                fc->st.n[FCACHE_STAT_MEGAFLOW_HITS]++;
                if (!(direct >> i & 1)) {
                    fcache_smc_insert(fc, hashes[i], idx[i]);
                    if (fc->emc)
                        fcache_emc_maybe_insert(fc, &keys[i], hashes[i], idx[i]);
                }
                continue;
            }
        }
        uint64_t before = fc->st.n[FCACHE_STAT_MEGAFLOWS_INSTALLED];
        out[i] = fcache_upcall(fc, &keys[i], hashes[i], !(direct >> i & 1));
        installed |= fc->st.n[FCACHE_STAT_MEGAFLOWS_INSTALLED] != before;
    }
}

void fcache_sync(struct fcache *fc, uint64_t now)
{
    /* The previous call's answers are no longer in use. */
    fcache_drain_deferred(fc);
    uint64_t v = rule_table_version(fc->rules);
    if (v != fc->rules_version) {
        fcache_revalidate(fc);
        fc->rules_version = v;
    }
    /* Re-rank when the interval has passed (or the clock went back). */
    if (now >= fc->next_resort || fc->next_resort - now > fc->cfg.resort_interval_ns) {
        for (unsigned p = 0; p < FCACHE_N_CLS; p++)
            if (fc->cls[p])
                classifier_rank(fc->cls[p]);
        fc->next_resort = now + fc->cfg.resort_interval_ns;
        fc->st.n[FCACHE_STAT_RESORTS]++;
    }
}

/* The megaflow that answers every packet of in_port, if there is one: the
 * port's own classifier (not the shared one) in the direct stage, whose
 * only subtable covers in_port alone. */
static uint32_t fcache_port_megaflow(const struct fcache *fc, uint32_t in_port)
{
    if (!fc->cfg.direct_subtables || in_port >= FCACHE_MAX_PORTS)
        return CLS_IDX_NONE;
    const struct classifier *c = fc->cls[in_port];
    if (!c || c->n_st != 1 || !c->vec[0]->in_port_only)
        return CLS_IDX_NONE;
    struct flow_key k;
    flow_key_zero(&k);
    k.in_port = in_port;
    const struct cls_subtable *st = c->vec[0];
    return cls_subtable_lookup(st, &fc->flows, &k, cls_hash(st, &k));
}

/* fcache_port_megaflow(), from the cache while it stands. */
static uint32_t fcache_port_megaflow_cached(struct fcache *fc, uint32_t in_port)
{
    if (in_port == fc->simple_port && fc->flows.gen == fc->simple_gen)
        return fc->simple_idx;
    uint32_t x = fcache_port_megaflow(fc, in_port);
    fc->simple_port = in_port;
    fc->simple_idx = x;
    fc->simple_gen = fc->flows.gen;
    return x;
}

bool fcache_port_simple(struct fcache *fc, uint32_t in_port,
                        const struct action_list **answer)
{
    uint32_t x = fcache_port_megaflow_cached(fc, in_port);
    if (x == CLS_IDX_NONE)
        return false;
    *answer = cls_flow(&fc->flows, x)->actions;
    return true;
}

const struct action_list *fcache_lookup_port(struct fcache *fc, uint32_t in_port, unsigned n)
{
    uint32_t x = fcache_port_megaflow_cached(fc, in_port);
    fc->st.n[FCACHE_STAT_LOOKUPS] += n;
    if (x == CLS_IDX_NONE) {
        /* Not simple: the caller broke the contract. Answer "no rule". */
        fc->st.n[FCACHE_STAT_UPCALLS] += n;
        fc->st.n[FCACHE_STAT_UPCALL_MISSES] += n;
        fc->st.n[FCACHE_STAT_NO_RULE] += n;
        return NULL;
    }
    struct cls_megaflow *mf = cls_flow(&fc->flows, x);
    mf->ref = 1;
    mf->st->hits += n;
    fc->st.n[FCACHE_STAT_SIMPLE_HITS] += n;
    fc->st.n[FCACHE_STAT_NO_RULE] += mf->actions == NULL ? n : 0;
    return mf->actions;
}

/* fcache_lookup_batch() with what the caller knows of the in_ports and of
 * the first chunk's cold words. */
static void fcache_lookup_chunks(struct fcache *fc, const struct flow_key *keys,
                                 const uint32_t *hashes, unsigned n,
                                 const struct action_list **out, uint64_t now, int uniform,
                                 uint32_t hot)
{
    fcache_sync(fc, now);
    for (unsigned done = 0; done < n; done += PKT_BATCH_MAX) {
        unsigned c = n - done < PKT_BATCH_MAX ? n - done : PKT_BATCH_MAX;
        fcache_lookup_chunk(fc, keys + done, hashes + done, c, out + done, uniform,
                            done ? 0 : hot);
    }
}

void fcache_lookup_batch(struct fcache *fc, const struct flow_key *keys,
                         const uint32_t *hashes, unsigned n,
                         const struct action_list **out, uint64_t now)
{
    fcache_lookup_chunks(fc, keys, hashes, n, out, now, -1, 0);
}

void fcache_lookup_batch_port(struct fcache *fc, const struct flow_key *keys,
                              const uint32_t *hashes, uint32_t hot, unsigned n,
                              const struct action_list **out, uint64_t now)
{
    fcache_lookup_chunks(fc, keys, hashes, n, out, now, 1, hot);
}

const char *fcache_stat_name(enum fcache_stat s)
{
    static const char *const names[FCACHE_N_STATS] = {
#define FCACHE_STAT_NAME_(ID, name) [FCACHE_STAT_##ID] = #name,
        FCACHE_STATS(FCACHE_STAT_NAME_)
#undef FCACHE_STAT_NAME_
    };
    return (unsigned)s < FCACHE_N_STATS ? names[s] : "?";
}

void fcache_stats_add(struct fcache_stats *dst, const struct fcache_stats *src)
{
    for (int i = 0; i < FCACHE_N_STATS; i++)
        dst->n[i] += src->n[i];
}

void fcache_get_counters(const struct fcache *fc, struct fcache_stats *st)
{
    *st = fc->st;
    st->n[FCACHE_STAT_EMC_SWEPT] += fc->emc ? fc->emc->swept : 0;
    st->n[FCACHE_STAT_SMC_SWEPT] += fc->smc ? fc->smc->swept : 0;
    st->n[FCACHE_STAT_MEGAFLOWS] = fc->flows.n;
}

void fcache_get_stats(const struct fcache *fc, struct fcache_stats *st)
{
    fcache_get_counters(fc, st);
    st->n[FCACHE_STAT_SUBTABLES] = 0;
    st->n[FCACHE_STAT_CLASSIFIERS] = 0;
    for (unsigned p = 0; p < FCACHE_N_CLS; p++) {
        if (fc->cls[p]) {
            st->n[FCACHE_STAT_SUBTABLES] += fc->cls[p]->n_st;
            st->n[FCACHE_STAT_CLASSIFIERS]++;
        }
    }
}

void fcache_megaflow_walk(const struct fcache *fc, fcache_walk_fn *fn, void *aux)
{
    const struct cls_flows *f = &fc->flows;
    for (uint32_t i = 0; i < f->hw; i++) {
        const struct cls_megaflow *mf = &f->mf[i];
        if (mf->in_use)
            fn(aux, &mf->key, &mf->st->mask, mf->actions);
    }
}

void fcache_get_memory(const struct fcache *fc, struct fcache_memory *m)
{
    memset(m, 0, sizeof *m);
    m->emc = fc->emc ? emc_memory(fc->emc) : 0;
    m->smc = fc->smc ? smc_memory(fc->smc) : 0;
    m->megaflows = cls_flows_memory(&fc->flows, &m->megaflows_touched);
    for (unsigned p = 0; p < FCACHE_N_CLS; p++)
        if (fc->cls[p])
            m->classifier += sizeof *fc->cls[p] + classifier_memory(fc->cls[p]);
    m->total = m->emc + m->smc + m->megaflows_touched + m->classifier + sizeof *fc;
}
