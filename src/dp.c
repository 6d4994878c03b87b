/* dp.c: ports, rules, knobs, the PMD poll loop and its counters. */
#include "dp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "flow.h"
#include "netdev-provider.h"
#include "parse-inl.h"
#include "parse.h"
#include "proto.h"
#include "tunnel.h"
#include "util.h"

_Static_assert(FCACHE_MAX_PORTS == DP_MAX_PORTS, "one EMC override per port");

/* Largest number of PMDs a datapath serves (the reclamation scan). */
#define DP_MAX_PMDS 64

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
    int tx_retries;       /* -1: the tx-retries knob */
    int64_t emc_inv_prob; /* -1: the emc-insert-inv-prob knob */
    const char *encap_missing; /* tunnel: the option it lacks to encapsulate */
    bool rx_stopped;      /* not polled any more (dp_port_rx_stop) */
};

/* Something the PMDs may still use after the control thread replaced it:
 * a rule table or a knob set, freed by dp_rules_reclaim() once every PMD
 * has synced at generation 'gen' or later (its replacement was published
 * by then, so the PMD can no longer hold it or be about to take it). */
struct dp_retired {
    struct rule_table *rules;
    struct dp_knobs *knobs;
    uint64_t gen;
};

struct dp {
    struct dp_port ports[DP_MAX_PORTS];
    unsigned n_ports;
    bool has_tunnels;     /* some port is a tunnel: packets need p->hash
                           * (the VXLAN source port) whatever the caches do */
    struct dp_knobs knobs; /* the control thread's view */
    /* What the PMDs take at their next poll: immutable once published. */
    _Atomic(struct rule_table *) rules;
    _Atomic(struct dp_knobs *) live_knobs;
    _Atomic uint64_t gen; /* bumped after each publication of the two */
    struct dp_retired *retired;
    size_t n_retired, cap_retired;
    struct dp_pmd *pmds[DP_MAX_PMDS];
    unsigned n_pmds;
};

/* An rx queue a PMD polls. */
struct dp_rxq_ref {
    uint16_t port;
    uint16_t qid;
};

struct dp_pmd {
    struct dp *dp;
    uint64_t now;                 /* refreshed once per poll iteration */
    /* The rule table and knobs this PMD works with, and the generation of
     * dp's publications it last synced with (written by the PMD with
     * release after it switched: the control thread frees what was
     * replaced before that generation). */
    const struct rule_table *rules;
    const struct dp_knobs *knobs;
    _Atomic uint64_t synced_gen;
    struct pkt_batch rx;          /* the batch being processed */
    struct txq txq[DP_MAX_PORTS]; /* output batch per port */
    uint64_t port_n[DP_MAX_PORTS][DP_PORT_N_STATS];
    uint64_t n[DP_N_STATS];
    struct drop_stats drops;
    uint16_t rx_flags;            /* PKT_BATCH_F_* of the batch in process */
    struct csum_stats csum;
    uint64_t parse_results[PARSE_N_RESULTS];
    struct fcache *fc;            /* EMC -> SMC -> megaflows -> rule table */
    /* The rx queues this PMD polls; n_rxqs == 0 means every queue of every
     * port (the single-PMD replay case). */
    struct dp_rxq_ref rxqs[DP_MAX_PORTS * 4];
    unsigned n_rxqs;
    bool drain;                   /* dp_pmd_set_drain() */
    /* A control-side request (dp_pmd_request_post()): 'req' is valid, and
     * 'dump' the PMD's, while posted != done. */
    _Atomic uint64_t req_posted;  /* written by the control side */
    _Atomic uint64_t req_done;    /* written by the PMD */
    enum dp_pmd_request req;
    struct dp_megaflow_dump *dump;
};

/* ---- knobs ------------------------------------------------------------- */

#define DP_KNOB_INFO(name_, field, kind_, def_, min_, max_, yes_, no_, live_, doc_)     \
    {.name = name_, .kind = kind_, .def = def_, .min = min_, .max = max_, .yes = yes_, \
     .no = no_, .live = live_, .doc = doc_},
static const struct dp_knob_info dp_knob_table[] = {DP_KNOBS(DP_KNOB_INFO)};

#define DP_KNOB_OFFSET(name, field, kind, def, min, max, yes, no, live, doc) \
    offsetof(struct dp_knobs, field),
static const size_t dp_knob_offset[] = {DP_KNOBS(DP_KNOB_OFFSET)};

#define DP_N_KNOBS (sizeof dp_knob_table / sizeof dp_knob_table[0])

size_t dp_knob_count(void)
{
    return DP_N_KNOBS;
}

const struct dp_knob_info *dp_knob_info(size_t i)
{
    return i < DP_N_KNOBS ? &dp_knob_table[i] : NULL;
}

/* The index of knob 'name', or -1. */
static int dp_knob_find(const char *name)
{
    for (size_t i = 0; i < DP_N_KNOBS; i++)
        if (!strcmp(name, dp_knob_table[i].name))
            return (int)i;
    return -1;
}

/* Stores v (0/1 for DP_KNOB_WORDS) into knob i of k. */
static void dp_knob_store(struct dp_knobs *k, size_t i, uint32_t v)
{
    char *field = (char *)k + dp_knob_offset[i];
    if (dp_knob_table[i].kind == DP_KNOB_WORDS) {
        bool b = v != 0;
        memcpy(field, &b, sizeof b);
    } else {
        memcpy(field, &v, sizeof v);
    }
}

/* Knob i of k as a number (0/1 for DP_KNOB_WORDS). */
static uint32_t dp_knob_load(const struct dp_knobs *k, size_t i)
{
    const char *field = (const char *)k + dp_knob_offset[i];
    if (dp_knob_table[i].kind == DP_KNOB_WORDS) {
        bool b;
        memcpy(&b, field, sizeof b);
        return b;
    }
    uint32_t v;
    memcpy(&v, field, sizeof v);
    return v;
}

void dp_knobs_default(struct dp_knobs *k)
{
    memset(k, 0, sizeof *k);
    for (size_t i = 0; i < DP_N_KNOBS; i++)
        dp_knob_store(k, i, dp_knob_table[i].def);
}

int dp_knobs_set(struct dp_knobs *k, const char *name, const char *value, char *err,
                 size_t errlen)
{
    int i = dp_knob_find(name);
    if (i < 0)
        return 1;
    const struct dp_knob_info *ki = &dp_knob_table[i];
    if (ki->kind == DP_KNOB_WORDS) {
        bool yes = !strcmp(value, ki->yes);
        if (!yes && strcmp(value, ki->no)) {
            fs_errf(err, errlen, "bad value '%s' for '%s' (expected %s or %s)", value, name,
                    ki->yes, ki->no);
            return -1;
        }
        dp_knob_store(k, (size_t)i, yes);
        return 0;
    }
    unsigned long v;
    if (!fs_parse_uint(value, ki->min, ki->max, &v)) {
        fs_errf(err, errlen, "bad value '%s' for '%s' (expected %lu..%lu)", value, name,
                (unsigned long)ki->min, (unsigned long)ki->max);
        return -1;
    }
    dp_knob_store(k, (size_t)i, (uint32_t)v);
    return 0;
}

int dp_knobs_get(const struct dp_knobs *k, const char *name, char *buf, size_t size)
{
    int i = dp_knob_find(name);
    if (i < 0)
        return -1;
    const struct dp_knob_info *ki = &dp_knob_table[i];
    uint32_t v = dp_knob_load(k, (size_t)i);
    if (ki->kind == DP_KNOB_WORDS)
        snprintf(buf, size, "%s", v ? ki->yes : ki->no);
    else
        snprintf(buf, size, "%u", (unsigned)v);
    return 0;
}

bool dp_knob_is_live(const char *name)
{
    int i = dp_knob_find(name);
    return i >= 0 && dp_knob_table[i].live;
}

void dp_knobs_names(char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < DP_N_KNOBS && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                         dp_knob_table[i].name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* The flow-cache configuration of a knob set and the ports' overrides. */
static void dp_fcache_cfg(const struct dp *dp, const struct dp_knobs *k, struct fcache_cfg *c)
{
    fcache_cfg_default(c);
    c->emc_entries = k->emc_entries;
    c->emc_ways = k->emc_ways;
    c->emc_insert_inv_prob = k->emc_insert_inv_prob;
    c->emc_max_key_len = k->emc_max_key_len;
    c->smc_enabled = k->smc;
    c->smc_entries = k->smc_entries;
    c->megaflow_max = k->megaflow_max;
    c->resort_interval_ns = (uint64_t)k->subtable_resort_ms * FS_NSEC_PER_MSEC;
    c->revalidate = k->megaflow_revalidate;
    c->seed = k->seed;
    c->direct_subtables = k->direct_subtables;
    for (unsigned i = 0; dp && i < dp->n_ports && i < FCACHE_MAX_PORTS; i++)
        c->emc_port_inv_prob[i] = dp->ports[i].emc_inv_prob;
}

int dp_knobs_check(const struct dp *dp, const struct dp_knobs *k, char *err, size_t errlen)
{
    for (size_t i = 0; dp && i < DP_N_KNOBS; i++) {
        if (dp_knob_load(&dp->knobs, i) != dp_knob_load(k, i) && !dp_knob_table[i].live) {
            fs_errf(err, errlen, "knob '%s' cannot change while the datapath runs",
                    dp_knob_table[i].name);
            return -1;
        }
    }
    struct fcache_cfg fcc;
    dp_fcache_cfg(dp, k, &fcc);
    return fcache_cfg_validate(&fcc, err, errlen);
}

/* ---- datapath and ports ------------------------------------------------- */

int dp_create(const struct dp_knobs *knobs, struct dp **out, char *err, size_t errlen)
{
    if (dp_knobs_check(NULL, knobs, err, errlen))
        return -1;
    struct dp *dp = calloc(1, sizeof *dp);
    struct rule_table *t = rule_table_create();
    struct dp_knobs *live = malloc(sizeof *live);
    if (!dp || !t || !live) {
        free(dp);
        rule_table_destroy(t);
        free(live);
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    dp->knobs = *knobs;
    *live = *knobs;
    atomic_init(&dp->rules, t);
    atomic_init(&dp->live_knobs, live);
    atomic_init(&dp->gen, 0);
    *out = dp;
    return 0;
}

void dp_destroy(struct dp *dp)
{
    if (!dp)
        return;
    for (unsigned i = 0; i < dp->n_ports; i++) {
        netdev_close(dp->ports[i].dev);
        free(dp->ports[i].tnls);
        free(dp->ports[i].tnl_ports);
    }
    for (size_t i = 0; i < dp->n_retired; i++) {
        rule_table_destroy(dp->retired[i].rules);
        free(dp->retired[i].knobs);
    }
    free(dp->retired);
    rule_table_destroy(atomic_load(&dp->rules));
    free(atomic_load(&dp->live_knobs));
    free(dp);
}

/* Registers tunnel port t with its underlay u (for decapsulation). */
static int dp_add_tunnel(struct dp *dp, struct dp_port *u, struct dp_port *t)
{
    struct tnl_cfg *tn = realloc(u->tnls, (u->n_tnls + 1) * sizeof *tn);
    if (tn)
        u->tnls = tn;
    uint16_t *tp = realloc(u->tnl_ports, (u->n_tnls + 1) * sizeof *tp);
    if (tp)
        u->tnl_ports = tp;
    if (!tn || !tp)
        return -1;
    t->tunnel = true;
    dp->has_tunnels = true;
    u->tnls[u->n_tnls] = t->tnl;
    u->tnl_ports[u->n_tnls] = t->port_no;
    u->n_tnls++;
    return 0;
}

int dp_port_lookup(void *aux, const char *name)
{
    const struct dp *dp = aux;
    for (unsigned i = 0; i < dp->n_ports; i++)
        if (!strcmp(dp->ports[i].name, name))
            return (int)i;
    /* A port number: only one that exists. */
    unsigned long v;
    if (fs_parse_uint(name, 0, DP_MAX_PORTS, &v) && v < dp->n_ports)
        return (int)v;
    return -1;
}

int dp_port_add(struct dp *dp, const struct dp_port_params *pp, char *err, size_t errlen)
{
    if (dp->n_pmds) {
        fs_errf(err, errlen, "ports are added before the PMDs are created");
        return -1;
    }
    if (dp->n_ports >= DP_MAX_PORTS) {
        fs_errf(err, errlen, "more than %d ports", DP_MAX_PORTS);
        return -1;
    }
    if (pp->emc_insert_inv_prob < -1 || pp->emc_insert_inv_prob > UINT32_MAX) {
        fs_errf(err, errlen, "emc-insert-inv-prob must be 0..%u", UINT32_MAX);
        return -1;
    }
    unsigned i = dp->n_ports;
    struct dp_port *p = &dp->ports[i];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", pp->name);
    snprintf(p->type, sizeof p->type, "%s", pp->type);
    p->port_no = (uint16_t)i;
    p->tx_retries = pp->tx_retries;
    p->emc_inv_prob = pp->emc_insert_inv_prob;
    if (!strcmp(pp->type, "vxlan")) {
        /* Tunnel ports name their underlay among the ports before them. */
        dp->n_ports = i + 1;
        int rc = tnl_cfg_parse(&p->tnl, &pp->args, dp_port_lookup, dp, (int)i, err, errlen);
        if (rc == 0 && dp->ports[p->tnl.underlay].tunnel) {
            fs_errf(err, errlen, "option 'underlay': '%s' is a tunnel port",
                    dp->ports[p->tnl.underlay].name);
            rc = -1;
        }
        if (rc == 0 && dp_add_tunnel(dp, &dp->ports[p->tnl.underlay], p)) {
            fs_errf(err, errlen, "out of memory");
            rc = -1;
        }
        if (rc) {
            dp->n_ports = i;
            return -1;
        }
        p->encap_missing = tnl_encap_missing(&pp->args);
        return (int)i;
    }
    p->dev = netdev_open(pp->name, pp->type, &pp->args, err, errlen);
    if (!p->dev)
        return -1;
    netdev_get_caps(p->dev, &p->caps);
    dp->n_ports = i + 1;
    return (int)i;
}

void dp_port_rx_stop(struct dp *dp, uint16_t port_no)
{
    if (port_no < dp->n_ports)
        dp->ports[port_no].rx_stopped = true;
}

unsigned dp_n_ports(const struct dp *dp)
{
    return dp->n_ports;
}

void dp_port_get(const struct dp *dp, unsigned port_no, struct dp_port_info *info)
{
    const struct dp_port *p = &dp->ports[port_no];
    info->name = p->name;
    info->type = p->type;
    info->port_no = p->port_no;
    info->tunnel = p->tunnel;
    info->rx_stopped = p->rx_stopped;
    info->dev = p->dev;
    info->caps = p->caps;
}

/* ---- rules, knobs and their hand-over to the PMDs ----------------------- */

/* Records what the next publication replaces (at the generation that
 * publication will have: dp_publish() follows). Control side. */
static int dp_retire(struct dp *dp, struct rule_table *rules, struct dp_knobs *knobs)
{
    if (fs_grow((void **)&dp->retired, &dp->cap_retired, dp->n_retired + 1,
                sizeof *dp->retired, 8))
        return -1;
    uint64_t next = atomic_load_explicit(&dp->gen, memory_order_relaxed) + 1;
    dp->retired[dp->n_retired++] = (struct dp_retired){rules, knobs, next};
    return 0;
}

/* After a new rule table or knob set was stored: the generation PMDs sync
 * with. A PMD that reads the new generation (acquire) sees the new
 * pointers. */
static void dp_publish(struct dp *dp)
{
    uint64_t g = atomic_load_explicit(&dp->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&dp->gen, g, memory_order_release);
}

/* Whether some PMD may still use what was replaced at generation gen: it
 * has not synced since (it may be between reading the old pointer and
 * announcing it, or still work with it). */
static bool dp_in_use(const struct dp *dp, uint64_t gen)
{
    for (unsigned i = 0; i < dp->n_pmds; i++)
        if (atomic_load_explicit(&dp->pmds[i]->synced_gen, memory_order_acquire) < gen)
            return true;
    return false;
}

unsigned dp_rules_reclaim(struct dp *dp)
{
    size_t j = 0;
    for (size_t i = 0; i < dp->n_retired; i++) {
        struct dp_retired *r = &dp->retired[i];
        if (dp_in_use(dp, r->gen)) {
            dp->retired[j++] = *r;
            continue;
        }
        rule_table_destroy(r->rules);
        free(r->knobs);
    }
    dp->n_retired = j;
    return (unsigned)j;
}

/* Parses src into a rule (with its line); fails with "origin:line: why",
 * also for an output to a tunnel port that cannot encapsulate. */
static int dp_rule_parse(struct dp *dp, const struct dp_rule_src *src, const char *origin,
                         struct rule **out, char *err, size_t errlen)
{
    char why[256];
    if (rule_parse(src->text, dp_port_lookup, dp, out, why, sizeof why)) {
        fs_errf(err, errlen, "%s:%d: rule: %s", origin ? origin : "rule", src->line, why);
        return -1;
    }
    const struct action_list *l = (*out)->actions;
    for (unsigned i = 0; l && i < l->n; i++) {
        if (l->a[i].type != ACT_OUTPUT || l->a[i].u.port >= dp->n_ports)
            continue;
        const struct dp_port *p = &dp->ports[l->a[i].u.port];
        if (p->tunnel && p->encap_missing) {
            fs_errf(err, errlen,
                    "%s:%d: rule: output to tunnel port '%s' needs its option '%s' to "
                    "encapsulate", origin ? origin : "rule", src->line, p->name,
                    p->encap_missing);
            rule_free(*out);
            *out = NULL;
            return -1;
        }
    }
    (*out)->line = src->line;
    return 0;
}

int dp_rules_apply(struct dp *dp, const struct dp_rule_edit *e, const char *origin,
                   char *err, size_t errlen)
{
    size_t n = e->n_del + e->n_add;
    struct rule **parsed = calloc(n ? n : 1, sizeof *parsed);
    if (!parsed) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct dp_rule_src *s = i < e->n_del ? &e->del[i] : &e->add[i - e->n_del];
        rc = dp_rule_parse(dp, s, origin, &parsed[i], err, errlen);
    }
    struct rule_table *cur = atomic_load_explicit(&dp->rules, memory_order_relaxed);
    struct rule_table *t = NULL;
    if (rc == 0) {
        /* The new table continues the old one's versions, so the caches
         * built on the old one see a change. Room for every addition is
         * made before anything is retired: past this point nothing can
         * fail. */
        t = rule_table_clone(cur);
        if (t && e->clear)
            rule_table_clear(t);
        if (!t || rule_table_reserve(t, e->n_add) || dp_retire(dp, cur, NULL)) {
            rule_table_destroy(t);
            fs_errf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    if (rc) {
        for (size_t i = 0; i < n; i++)
            rule_free(parsed[i]);
        free(parsed);
        return -1;
    }
    for (size_t i = 0; i < e->n_del; i++) {
        rule_table_delete_strict(t, parsed[i]);
        rule_free(parsed[i]);
    }
    for (size_t i = e->n_del; i < n; i++)
        rule_table_add(t, parsed[i]); /* takes it: the room is reserved */
    free(parsed);
    atomic_store_explicit(&dp->rules, t, memory_order_release);
    dp_publish(dp);
    dp_rules_reclaim(dp);
    return 0;
}

bool dp_pmd_current(const struct dp_pmd *pmd)
{
    return atomic_load_explicit(&pmd->synced_gen, memory_order_acquire) ==
           atomic_load_explicit(&pmd->dp->gen, memory_order_relaxed);
}

const struct rule_table *dp_rules(const struct dp *dp)
{
    return atomic_load_explicit(&dp->rules, memory_order_relaxed);
}

int dp_knobs_publish(struct dp *dp, const struct dp_knobs *k, char *err, size_t errlen)
{
    if (dp_knobs_check(dp, k, err, errlen))
        return -1;
    struct dp_knobs *nk = malloc(sizeof *nk);
    struct dp_knobs *old = atomic_load_explicit(&dp->live_knobs, memory_order_relaxed);
    if (!nk || dp_retire(dp, NULL, old)) {
        free(nk);
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    *nk = *k;
    dp->knobs = *k;
    atomic_store_explicit(&dp->live_knobs, nk, memory_order_release);
    dp_publish(dp);
    dp_rules_reclaim(dp);
    return 0;
}

int dp_knob_update(struct dp *dp, const char *name, const char *value, char *err,
                   size_t errlen)
{
    struct dp_knobs k = dp->knobs;
    int rc = dp_knobs_set(&k, name, value, err, errlen);
    if (rc > 0) {
        fs_errf(err, errlen, "unknown knob '%s'", name);
        return -1;
    }
    if (rc < 0)
        return -1;
    if (!dp_knob_is_live(name)) {
        fs_errf(err, errlen, "knob '%s' cannot change while the datapath runs", name);
        return -1;
    }
    return dp_knobs_publish(dp, &k, err, errlen);
}

const struct dp_knobs *dp_get_knobs(const struct dp *dp)
{
    return &dp->knobs;
}

/* ---- PMDs ----------------------------------------------------------------- */

static void dp_pmd_serve_request(struct dp_pmd *pmd);

static void dp_pmd_apply_knobs(struct dp_pmd *pmd, const struct dp_knobs *k)
{
    const struct dp *dp = pmd->dp;
    /* The caches' run-time knobs: an allocation that fails leaves that
     * cache as it was (cache-show tells). */
    if (pmd->knobs && k->emc_insert_inv_prob != pmd->knobs->emc_insert_inv_prob)
        (void)fcache_set_emc_insert_inv_prob(pmd->fc, k->emc_insert_inv_prob);
    if (pmd->knobs && k->smc != pmd->knobs->smc)
        (void)fcache_set_smc(pmd->fc, k->smc);
    uint64_t interval_ns = (uint64_t)k->tx_flush_interval_us * FS_NSEC_PER_USEC;
    for (unsigned i = 0; i < dp->n_ports; i++) {
        const struct dp_port *p = &dp->ports[i];
        unsigned retries = p->tx_retries >= 0 ? (unsigned)p->tx_retries : k->tx_retries;
        pmd->txq[i].interval_ns = interval_ns;
        pmd->txq[i].retries = retries > TXQ_MAX_RETRIES ? TXQ_MAX_RETRIES : retries;
    }
    pmd->knobs = k;
}

struct dp_pmd *dp_pmd_create(struct dp *dp)
{
    if (dp->n_pmds >= DP_MAX_PMDS)
        return NULL;
    struct dp_pmd *pmd = calloc(1, sizeof *pmd);
    if (!pmd)
        return NULL;
    const struct dp_knobs *k = atomic_load_explicit(&dp->live_knobs, memory_order_acquire);
    const struct rule_table *t = atomic_load_explicit(&dp->rules, memory_order_acquire);
    struct fcache_cfg fcc;
    dp_fcache_cfg(dp, k, &fcc);
    pmd->fc = fcache_create(&fcc, t);
    if (!pmd->fc) {
        free(pmd);
        return NULL;
    }
    pmd->dp = dp;
    pmd->rules = t;
    atomic_init(&pmd->synced_gen, atomic_load_explicit(&dp->gen, memory_order_relaxed));
    atomic_init(&pmd->req_posted, 0);
    atomic_init(&pmd->req_done, 0);
    for (unsigned i = 0; i < dp->n_ports; i++)
        txq_init(&pmd->txq[i], dp->ports[i].dev, 0, 0, 0);
    dp_pmd_apply_knobs(pmd, k);
    pkt_batch_init(&pmd->rx);
    dp->pmds[dp->n_pmds++] = pmd;
    return pmd;
}

int dp_pmd_add_rxq(struct dp_pmd *pmd, uint16_t port, uint16_t qid)
{
    const struct dp *dp = pmd->dp;
    if (pmd->n_rxqs >= sizeof pmd->rxqs / sizeof pmd->rxqs[0] || port >= dp->n_ports ||
        !dp->ports[port].dev || qid >= netdev_n_rxq(dp->ports[port].dev))
        return -1;
    pmd->rxqs[pmd->n_rxqs].port = port;
    pmd->rxqs[pmd->n_rxqs].qid = qid;
    pmd->n_rxqs++;
    return 0;
}

unsigned dp_pmd_n_rxqs(const struct dp_pmd *pmd)
{
    return pmd->n_rxqs;
}

void dp_pmd_get_rxq(const struct dp_pmd *pmd, unsigned i, uint16_t *port, uint16_t *qid)
{
    *port = pmd->rxqs[i].port;
    *qid = pmd->rxqs[i].qid;
}

void dp_pmd_set_txq(struct dp_pmd *pmd, uint16_t port, unsigned qid, struct netdev *dev)
{
    if (port >= pmd->dp->n_ports)
        return;
    struct txq *q = &pmd->txq[port];
    q->qid = qid;
    if (dev) {
        q->dev = dev;
        q->stamp = netdev_tx_stamps(dev);
    }
}

unsigned dp_pmd_txq_id(const struct dp_pmd *pmd, uint16_t port)
{
    return pmd->txq[port].qid;
}

void dp_pmd_set_drain(struct dp_pmd *pmd, bool drain)
{
    pmd->drain = drain;
}

/* Sends everything queued, at the PMD's current time. */
static void dp_pmd_flush_all(struct dp_pmd *pmd)
{
    for (unsigned i = 0; i < pmd->dp->n_ports; i++)
        if (txq_queued(&pmd->txq[i]))
            txq_flush(&pmd->txq[i], pmd->now);
}

void dp_pmd_flush(struct dp_pmd *pmd, uint64_t now)
{
    pmd->now = now;
    dp_pmd_flush_all(pmd);
}

unsigned dp_pmd_queued(const struct dp_pmd *pmd)
{
    unsigned n = 0;
    for (unsigned i = 0; i < pmd->dp->n_ports; i++)
        n += txq_queued(&pmd->txq[i]);
    return n;
}

static const struct dp_rxq_pin *dp_find_pin(const struct dp_rxq_pin *pins, unsigned n,
                                            unsigned port, unsigned qid)
{
    for (unsigned i = 0; i < n; i++)
        if (pins[i].port == port && pins[i].qid == qid)
            return &pins[i];
    return NULL;
}

int dp_assign_rxqs(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                   const struct dp_rxq_pin *pins, unsigned n_pins, char *err, size_t errlen)
{
    bool isolated[DP_MAX_PMDS] = {false};
    unsigned n_free = 0, rr = 0;
    if (n_pmds == 0 || n_pmds > DP_MAX_PMDS) {
        fs_errf(err, errlen, "number of PMDs must be 1..%d", DP_MAX_PMDS);
        return -1;
    }
    for (unsigned i = 0; i < n_pins; i++) {
        if (pins[i].pmd >= n_pmds) {
            fs_errf(err, errlen, "rx queue %u of port %u pinned to PMD %u of %u",
                    pins[i].qid, pins[i].port, pins[i].pmd, n_pmds);
            return -1;
        }
        isolated[pins[i].pmd] = true;
    }
    for (unsigned i = 0; i < n_pmds; i++)
        n_free += !isolated[i];
    for (unsigned p = 0; p < dp->n_ports; p++) {
        struct netdev *dev = dp->ports[p].dev;
        unsigned nq = dev ? netdev_n_rxq(dev) : 0;
        for (unsigned q = 0; q < nq; q++) {
            const struct dp_rxq_pin *pin = dp_find_pin(pins, n_pins, p, q);
            unsigned target;
            if (pin) {
                target = pin->pmd;
            } else {
                /* The next PMD in round-robin order that takes unpinned
                 * queues. */
                do {
                    target = rr++ % n_pmds;
                } while (n_free && isolated[target]);
            }
            if (dp_pmd_add_rxq(pmds[target], (uint16_t)p, (uint16_t)q)) {
                fs_errf(err, errlen, "pmd %u: cannot add rx queue %u of port %s", target, q,
                        dp->ports[p].name);
                return -1;
            }
        }
    }
    return 0;
}

const struct fcache *dp_pmd_fcache(const struct dp_pmd *pmd)
{
    return pmd->fc;
}

const struct dp_knobs *dp_pmd_knobs(const struct dp_pmd *pmd)
{
    return pmd->knobs;
}

void dp_pmd_destroy(struct dp_pmd *pmd)
{
    if (!pmd)
        return;
    struct dp *dp = pmd->dp;
    dp_pmd_flush_all(pmd);
    for (unsigned i = 0; i < dp->n_ports; i++)
        txq_purge(&pmd->txq[i], DROP_tx_down);
    pkt_batch_free(&pmd->rx);
    dp_megaflow_dump_free(pmd->dump);
    fcache_destroy(pmd->fc);
    for (unsigned i = 0; i < dp->n_pmds; i++) {
        if (dp->pmds[i] == pmd) {
            dp->pmds[i] = dp->pmds[--dp->n_pmds];
            break;
        }
    }
    free(pmd);
}

/* The PMD's quiescent point, at the start of every poll: takes a new rule
 * table or knob set published by the control thread, after sending what
 * it queued under the old ones, then announces the generation it synced
 * with (only then may the control thread free what was replaced), then
 * serves a posted request. Four loads when nothing changed. */
void dp_pmd_sync(struct dp_pmd *pmd)
{
    struct dp *dp = pmd->dp;
    const uint64_t g = atomic_load_explicit(&dp->gen, memory_order_acquire);
    if (g != atomic_load_explicit(&pmd->synced_gen, memory_order_relaxed)) {
        const struct rule_table *t = atomic_load_explicit(&dp->rules, memory_order_acquire);
        const struct dp_knobs *k = atomic_load_explicit(&dp->live_knobs, memory_order_acquire);
        if (t != pmd->rules || k != pmd->knobs) {
            dp_pmd_flush_all(pmd);
            if (k != pmd->knobs)
                dp_pmd_apply_knobs(pmd, k);
            if (t != pmd->rules) {
                fcache_switch_rules(pmd->fc, t);
                pmd->rules = t;
            }
        }
        atomic_store_explicit(&pmd->synced_gen, g, memory_order_release);
    }
    if (atomic_load_explicit(&pmd->req_posted, memory_order_relaxed) !=
        atomic_load_explicit(&pmd->req_done, memory_order_relaxed))
        dp_pmd_serve_request(pmd);
}

/* ---- requests ------------------------------------------------------------ */

int dp_pmd_request_post(struct dp_pmd *pmd, enum dp_pmd_request req)
{
    uint64_t posted = atomic_load_explicit(&pmd->req_posted, memory_order_relaxed);
    if (atomic_load_explicit(&pmd->req_done, memory_order_acquire) != posted)
        return -1;
    dp_megaflow_dump_free(pmd->dump);
    pmd->dump = NULL;
    pmd->req = req;
    atomic_store_explicit(&pmd->req_posted, posted + 1, memory_order_release);
    return 0;
}

bool dp_pmd_request_done(const struct dp_pmd *pmd)
{
    return atomic_load_explicit(&pmd->req_done, memory_order_acquire) ==
           atomic_load_explicit(&pmd->req_posted, memory_order_relaxed);
}

struct dp_dump_ctx {
    struct dp_megaflow_dump *d;
    size_t cap;
};

static void dp_dump_one(void *aux, const struct flow_key *key, const struct flow_mask *mask,
                        struct action_list *actions)
{
    struct dp_dump_ctx *c = aux;
    if (c->d->n == c->cap)
        return;
    struct dp_megaflow *m = &c->d->flows[c->d->n++];
    m->key = *key;
    m->mask = *mask;
    m->actions = actions ? action_list_ref(actions) : NULL;
}

/* A copy of the PMD's megaflows (on its thread). */
static struct dp_megaflow_dump *dp_pmd_dump(const struct dp_pmd *pmd)
{
    struct dp_megaflow_dump *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    struct fcache_stats st;
    fcache_get_stats(pmd->fc, &st);
    struct dp_dump_ctx c = {.d = d, .cap = st.n[FCACHE_STAT_MEGAFLOWS]};
    d->flows = c.cap ? malloc(c.cap * sizeof *d->flows) : NULL;
    if (c.cap && !d->flows)
        d->nomem = true;
    else
        fcache_megaflow_walk(pmd->fc, dp_dump_one, &c);
    return d;
}

static void dp_pmd_serve_request(struct dp_pmd *pmd)
{
    uint64_t posted = atomic_load_explicit(&pmd->req_posted, memory_order_acquire);
    if (posted == atomic_load_explicit(&pmd->req_done, memory_order_relaxed))
        return;
    switch (pmd->req) {
    case DP_PMD_REQ_MEGAFLOW_FLUSH:
        fcache_flush(pmd->fc);
        break;
    case DP_PMD_REQ_MEGAFLOW_DUMP:
        pmd->dump = dp_pmd_dump(pmd);
        break;
    }
    atomic_store_explicit(&pmd->req_done, posted, memory_order_release);
}

struct dp_megaflow_dump *dp_pmd_take_dump(struct dp_pmd *pmd)
{
    if (!dp_pmd_request_done(pmd))
        return NULL;
    struct dp_megaflow_dump *d = pmd->dump;
    pmd->dump = NULL;
    return d;
}

void dp_megaflow_dump_free(struct dp_megaflow_dump *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        action_list_unref(d->flows[i].actions);
    free(d->flows);
    free(d);
}

/* Action callbacks: aux is the PMD. */
static void dp_drop_cb(void *aux, struct pkt *pkt, enum drop_reason reason)
{
    struct dp_pmd *pmd = aux;
    pmd->drops.n[reason]++;
    pkt_free(pkt);
}

/* Output to a tunnel port: push the outer headers, resolve what the
 * underlay cannot offload, queue on the underlay. */
static void dp_output_tunnel(struct dp_pmd *pmd, struct pkt *pkt, const struct dp_port *t)
{
    struct dp *dp = pmd->dp;
    const struct dp_port *u = &dp->ports[t->tnl.underlay];
    if (!u->dev) {
        dp_drop_cb(pmd, pkt, DROP_tx_down);
        return;
    }
    /* A packet we encapsulated before (double encap): finish its checksums
     * now, it becomes a plain inner packet. */
    if ((pkt->flags & PKT_F_TUNNEL) && pkt_csum_complete(pkt, &pmd->csum) != CSUM_PREP_OK) {
        dp_drop_cb(pmd, pkt, DROP_csum_invalid);
        return;
    }
    pkt->flags &= (uint16_t)~PKT_F_TUNNEL;
    uint32_t vni = t->tnl.vni_flow ? pkt->out_vni : t->tnl.vni;
    bool grew = false;
    uint32_t inner_len = pkt->len;
    pmd->n[DP_STAT_TNL_PUSH]++;
    if (tnl_push(pkt, &t->tnl, vni, pkt->hash, &grew)) {
        dp_drop_cb(pmd, pkt, DROP_no_headroom);
        return;
    }
    if (grew)
        pmd->n[DP_STAT_HEADROOM_GROWN]++;
    if (pkt_send_prepare(pkt, u->caps.flags, &pmd->csum) != CSUM_PREP_OK) {
        dp_drop_cb(pmd, pkt, DROP_csum_invalid);
        return;
    }
    uint64_t *ps = pmd->port_n[t->port_no];
    ps[DP_PORT_TNL_TX]++;
    ps[DP_PORT_TNL_TX_BYTES] += inner_len;
    txq_enqueue(&pmd->txq[u->port_no], pkt, pmd->now);
}

static void dp_output_cb(void *aux, struct pkt *pkt, uint16_t port)
{
    struct dp_pmd *pmd = aux;
    if (port < pmd->dp->n_ports && pmd->dp->ports[port].tunnel) {
        dp_output_tunnel(pmd, pkt, &pmd->dp->ports[port]);
        return;
    }
    if (port >= pmd->dp->n_ports || !pmd->dp->ports[port].dev) {
        dp_drop_cb(pmd, pkt, DROP_tx_down);
        return;
    }
    const struct dp_port *p = &pmd->dp->ports[port];
    /* The lazy resolver runs only for batches that hold PARTIAL packets:
     * GOOD/UNKNOWN traffic pays this one test. */
    if (FS_CSUM_MACHINERY && (pmd->rx_flags & PKT_BATCH_F_PARTIAL) &&
        pkt_send_prepare(pkt, p->caps.flags, &pmd->csum) != CSUM_PREP_OK) {
        dp_drop_cb(pmd, pkt, DROP_csum_invalid);
        return;
    }
    txq_enqueue(&pmd->txq[port], pkt, pmd->now);
}

/* Output of a run of packets whose whole action list is one output to
 * 'port': what dp_output_cb() does per packet, with one enqueue for the run
 * when there is nothing to do per packet (a device port, no PARTIAL packet
 * in the rx batch). A run that is the whole rx batch ('whole', 'bytes' of
 * frames or TXQ_BYTES_UNKNOWN) leaves at once when the port's queue would be
 * flushed at the end of the batch anyway (interval 0): nothing else of this
 * batch can join it. */
static void dp_output_run(struct dp_pmd *pmd, struct pkt **pkts, unsigned n, uint16_t port,
                          bool whole, uint64_t bytes)
{
    const struct dp *dp = pmd->dp;
    if (port >= dp->n_ports || dp->ports[port].tunnel || !dp->ports[port].dev ||
        (FS_CSUM_MACHINERY && (pmd->rx_flags & PKT_BATCH_F_PARTIAL))) {
        for (unsigned i = 0; i < n; i++)
            dp_output_cb(pmd, pkts[i], port);
        if (!pmd->knobs->tx_batching) /* the run's own send calls (a tunnel's underlay) */
            dp_pmd_flush_all(pmd);
        return;
    }
    struct txq *q = &pmd->txq[port];
    if (whole && q->interval_ns == 0) {
        txq_send_burst(q, pkts, n, bytes, pmd->rx_flags, pmd->now);
    } else {
        txq_enqueue_burst(q, pkts, n, pmd->rx_flags, pmd->now);
        if (!pmd->knobs->tx_batching) /* each run its own send call */
            txq_flush(q, pmd->now);
    }
}

/* Counts the PARTIAL and BAD verdicts a packet arrived with. Only called
 * for batches whose summary says some packet is PARTIAL or BAD:
 * GOOD/UNKNOWN batches skip it entirely (devices count their own GOOD
 * verdicts). */
static void dp_rx_verdicts(struct dp_pmd *pmd, const struct pkt *p)
{
    for (int l = 0; l < CSUM_L_N; l++)
        if (p->csum[l] == CSUM_BAD)
            pmd->csum.n[CSUM_STAT_RX_BAD + l]++;
    if (p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL)
        pmd->csum.n[CSUM_STAT_RX_PARTIAL]++;
}

/* The bad-csum policy for a packet still carrying a BAD verdict (after
 * decapsulation, which judges tunnel packets itself); returns false if p
 * was dropped. */
static bool dp_bad_csum_policy(struct dp_pmd *pmd, struct pkt *p)
{
    if (!pkt_csum_any_bad(p))
        return true;
    if (pmd->knobs->bad_csum_forward) {
        pmd->csum.n[CSUM_STAT_BAD_FORWARDED]++;
        return true;
    }
    dp_drop_cb(pmd, p, DROP_bad_csum);
    return false;
}

static const enum drop_reason dp_tnl_drop[TNL_POP_N] = {
    [TNL_POP_TRUNC] = DROP_tunnel_trunc,
    [TNL_POP_IP_OPTIONS] = DROP_tunnel_ip_options,
    [TNL_POP_UDP_LEN] = DROP_tunnel_udp_len,
    [TNL_POP_BAD_CSUM] = DROP_tunnel_bad_csum,
    [TNL_POP_UNKNOWN_VNI] = DROP_tunnel_unknown_vni,
    [TNL_POP_BAD_VXLAN] = DROP_tunnel_bad_vxlan,
    [TNL_POP_NOT_ETHERNET] = DROP_tunnel_not_ethernet,
};

/* A UDP packet on an underlay port: decapsulates it if it is VXLAN for one
 * of the port's tunnels (then *key is the inner packet's, with the tunnel
 * metadata, and in_port the tunnel port). Returns false if p was dropped. */
static bool dp_decap(struct dp_pmd *pmd, struct pkt *p, struct flow_key *key)
{
    const struct dp_port *u = &pmd->dp->ports[p->in_port];
    struct flow_key tk;
    unsigned which;
    enum tnl_pop_result r = tnl_pop(p, u->tnls, u->n_tnls, &which, &tk, &pmd->csum);
    if (r == TNL_POP_NOT_TUNNEL)
        return true;
    if (r != TNL_POP_OK) {
        dp_drop_cb(pmd, p, dp_tnl_drop[r]);
        return false;
    }
    pmd->n[DP_STAT_TNL_POP]++;
    uint16_t tport = u->tnl_ports[which];
    p->in_port = tport;
    uint64_t *ps = pmd->port_n[tport];
    ps[DP_PORT_TNL_RX]++;
    ps[DP_PORT_TNL_RX_BYTES] += p->len;
    enum parse_result pr = parse_pkt(p, key);
    pmd->parse_results[pr]++;
    if (pr != PARSE_OK) {
        dp_drop_cb(pmd, p, DROP_parse_error);
        return false;
    }
    memcpy(key->tun_src, tk.tun_src, sizeof key->tun_src);
    memcpy(key->tun_dst, tk.tun_dst, sizeof key->tun_dst);
    key->tun_id = tk.tun_id;
    key->tun_flags = tk.tun_flags;
    return true;
}

/* Drops a packet dp_extract() could not take: truncated on capture
 * (r == PARSE_N_RESULTS) or unparsable (r, counted per result). */
static void dp_extract_drop(struct dp_pmd *pmd, struct pkt *p, enum parse_result r)
{
    if (r == PARSE_N_RESULTS) {
        dp_drop_cb(pmd, p, DROP_rx_truncated);
        return;
    }
    pmd->parse_results[r]++;
    dp_drop_cb(pmd, p, DROP_parse_error);
}

/* How much of dp_extract() a batch needs (without keys: dp_extract_layout()). */
enum dp_extract_mode {
    DP_X_KEYS,   /* the keys: nothing else to do for this batch */
    DP_X_FULL,   /* also decapsulation, verdicts, the bad-csum policy, hashes */
};

_Static_assert(PKT_BATCH_MAX <= 32, "dp_extract_layout() marks drops in 32 bits");

/* dp_extract() for a batch whose answer needs no key: the checks, drops
 * and layout only, in place (the packets left are b->pkts[0..n), n
 * returned, their bytes in *kept_bytes). The loop has no drop in it: a
 * bitmask marks what to drop afterwards. */
static unsigned dp_extract_layout(struct dp_pmd *pmd, uint16_t in_port, struct pkt_batch *b,
                                  uint64_t *kept_bytes)
{
    const unsigned count = b->count;
    uint64_t bytes = 0;
    uint32_t bad = 0;
    uint8_t res[PKT_BATCH_MAX];
    for (unsigned i = 0; i < count; i++) {
        struct pkt *p = b->pkts[i];
        p->in_port = in_port;
        bytes += p->len;
        enum parse_result r = p->flags & PKT_F_TRUNCATED ? PARSE_N_RESULTS
                                                         : parse_pkt_layout_rx(p);
        if (r != PARSE_OK) {
            bad |= 1u << i;
            res[i] = (uint8_t)r;
        }
    }
    uint64_t *ps = pmd->port_n[in_port];
    ps[DP_PORT_RX_PACKETS] += count;
    ps[DP_PORT_RX_BYTES] += bytes;
    unsigned n = count;
    if (bad) {
        n = 0;
        for (unsigned i = 0; i < count; i++) {
            struct pkt *p = b->pkts[i];
            if (bad & (1u << i)) {
                bytes -= p->len;
                dp_extract_drop(pmd, p, (enum parse_result)res[i]);
            } else {
                b->pkts[n++] = p;
            }
        }
    }
    pmd->parse_results[PARSE_OK] += n;
    pmd->n[DP_STAT_LAYOUT_ONLY] += n;
    *kept_bytes = bytes;
    return n;
}

/* The front half of dp_pmd_process(): drops truncated and unparsable
 * packets, decapsulates, applies the bad-csum policy and hashes; returns
 * the packets left (pkts, their keys and hashes as the mode needs, and in
 * *hot the map of keys known to have no cold words). Always
 * inlined with a constant mode (and verdicts and tunnels constant where
 * the caller can): the common batches (no checksum verdicts to judge, no
 * tunnel anywhere) get a tight parse loop; batches that need no keys take
 * dp_extract_layout(). */
static inline __attribute__((always_inline)) unsigned
dp_extract(struct dp_pmd *pmd, uint16_t in_port, struct pkt_batch *b, struct flow_key *keys,
           struct pkt **pkts, uint32_t *hashes, uint32_t *hot, uint64_t *kept_bytes,
           const bool verdicts, const bool tunnels, const enum dp_extract_mode mode)
{
    const bool general = mode == DP_X_FULL;
    /* flow_hash() feeds the EMC/SMC and the VXLAN source port: packets of a
     * port the caches look up directly need none (fcache_port_direct());
     * without tunnels every packet keeps in_port. */
    const bool need_hash = general && (tunnels || !fcache_port_direct(pmd->fc, in_port));
    /* Without tunnels or verdicts every packet parsed is kept: n. */
    const bool count_parsed = general && (tunnels || verdicts);
    uint64_t parsed_ok = 0, bytes = 0, dropped_bytes = 0;
    uint32_t hot_map = 0;
    unsigned n = 0;
    const unsigned count = b->count; /* a local: packet stores cannot alias it */

    for (unsigned i = 0; i < count; i++) {
        struct pkt *p = b->pkts[i];
        p->in_port = in_port;
        bytes += p->len;
        if (p->flags & PKT_F_TRUNCATED) {
            dropped_bytes += p->len;
            dp_extract_drop(pmd, p, PARSE_N_RESULTS);
            continue;
        }
        if (general && verdicts)
            dp_rx_verdicts(pmd, p);
        enum parse_result r = parse_pkt_rx(p, &keys[n]); /* fresh from the device */
        if (r != PARSE_OK) {
            dropped_bytes += p->len;
            dp_extract_drop(pmd, p, r);
            continue;
        }
        if (general) {
            parsed_ok += count_parsed;
            /* Decapsulation judges the outer verdicts itself
             * (tunnel_bad_csum) and resets them; the bad-csum policy sees
             * what is left. */
            if (tunnels && pmd->dp->ports[p->in_port].n_tnls &&
                p->l4_proto == IP_PROTO_UDP && !dp_decap(pmd, p, &keys[n]))
                continue;
            if (verdicts && !dp_bad_csum_policy(pmd, p))
                continue;
            /* A decapsulated key has tunnel metadata (cold words). */
            bool hot = parse_key_hot(p) && (!tunnels || p->in_port == in_port);
            hot_map |= (uint32_t)hot << n;
            hashes[n] = p->hash =
                !need_hash ? 0 : hot ? flow_hash_known(&keys[n], 0, false) : flow_hash(&keys[n], 0);
        }
        pkts[n++] = p;
    }
    pmd->parse_results[PARSE_OK] += count_parsed ? parsed_ok : n;
    *hot = hot_map;
    uint64_t *ps = pmd->port_n[in_port];
    ps[DP_PORT_RX_PACKETS] += count;
    ps[DP_PORT_RX_BYTES] += bytes;
    /* Only decapsulation (FULL) changes lengths and drops after parsing. */
    if (!general)
        *kept_bytes = bytes - dropped_bytes;
    return n;
}

/* True if a's whole list is one output (its port in a->a[0].u.port). */
static inline bool dp_output_only(const struct action_list *a)
{
    return a && a->n == 1 && a->a[0].type == ACT_OUTPUT;
}

/* dp_extract() of the rarer batches (with checksum verdicts to judge, or
 * a datapath with tunnels), out of line: dp_pmd_process() keeps only the
 * common loops, the same whether the checksum machinery is compiled in or
 * not. */
static __attribute__((noinline)) unsigned
dp_extract_general(struct dp_pmd *pmd, uint16_t in_port, struct pkt_batch *b,
                   struct flow_key *keys, struct pkt **pkts, uint32_t *hashes, uint32_t *hot,
                   uint64_t *kept_bytes, bool verdicts)
{
    if (pmd->dp->has_tunnels)
        return dp_extract(pmd, in_port, b, keys, pkts, hashes, hot, kept_bytes, verdicts, true,
                          DP_X_FULL);
    return dp_extract(pmd, in_port, b, keys, pkts, hashes, hot, kept_bytes, true, false,
                      DP_X_FULL);
}

/* tx-batching = off groups an rx batch per megaflow (per action list), in
 * the order each first appears, as OVS 2.8 did before executing each flow
 * batch and sending it on its own: keys, packets and action lists are
 * reordered alike; a flow's packets keep their order. */
static void dp_group_by_actions(struct flow_key *keys, struct pkt **pkts,
                                const struct action_list **acts, unsigned n)
{
    struct flow_key k2[PKT_BATCH_MAX];
    struct pkt *p2[PKT_BATCH_MAX];
    const struct action_list *a2[PKT_BATCH_MAX];
    bool taken[PKT_BATCH_MAX] = {false};
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        if (taken[i])
            continue;
        for (unsigned j = i; j < n; j++) {
            if (taken[j] || acts[j] != acts[i])
                continue;
            taken[j] = true;
            k2[m] = keys[j];
            p2[m] = pkts[j];
            a2[m++] = acts[j];
        }
    }
    memcpy(keys, k2, n * sizeof *keys);
    memcpy(pkts, p2, n * sizeof *pkts);
    memcpy(acts, a2, n * sizeof *acts);
}

static void dp_pmd_process(struct dp_pmd *pmd, uint16_t in_port)
{
    struct pkt_batch *b = &pmd->rx;
    struct flow_key keys[PKT_BATCH_MAX];
    struct pkt *pkts[PKT_BATCH_MAX];
    const struct action_list *acts[PKT_BATCH_MAX];
    uint32_t hashes[PKT_BATCH_MAX];
    uint32_t hot = 0; /* keys without cold words (dp_extract()) */
    bool verdicts = FS_CSUM_MACHINERY && (b->flags & (PKT_BATCH_F_BAD | PKT_BATCH_F_PARTIAL));
    unsigned n;
    uint64_t kept_bytes = TXQ_BYTES_UNKNOWN; /* of pkts[0..n), if known */

    pmd->rx_flags = b->flags;
    if (b->count == 0) {
        pkt_batch_init(b);
        return;
    }
    /* Only decapsulation changes a packet's in_port. */
    const uint16_t port = in_port;
    bool plain = !verdicts && !pmd->dp->has_tunnels;
    const struct action_list *simple;
    fcache_sync(pmd->fc, pmd->now);
    if (plain && fcache_port_simple(pmd->fc, port, &simple) &&
        (!simple || dp_output_only(simple))) {
        /* One answer for the port, an output or a drop: no key needed. */
        n = dp_extract_layout(pmd, port, b, &kept_bytes);
        pkt_batch_init(b); /* b->pkts[0..n) stay ours until we return */
        if (!n)
            return;
        const struct action_list *a = fcache_lookup_port(pmd->fc, port, n);
        if (a) {
            dp_output_run(pmd, b->pkts, n, a->a[0].u.port, true, kept_bytes);
        } else {
            for (unsigned i = 0; i < n; i++)
                dp_drop_cb(pmd, b->pkts[i], DROP_no_rule);
        }
        return;
    } else {
        /* Constant verdicts and tunnels: a GOOD/UNKNOWN batch without
         * tunnels tests neither per packet. */
        if (plain && fcache_port_direct(pmd->fc, port))
            n = dp_extract(pmd, port, b, keys, pkts, hashes, &hot, &kept_bytes, false, false,
                           DP_X_KEYS);
        else if (plain)
            n = dp_extract(pmd, port, b, keys, pkts, hashes, &hot, &kept_bytes, false, false,
                           DP_X_FULL);
        else
            n = dp_extract_general(pmd, port, b, keys, pkts, hashes, &hot, &kept_bytes,
                                   verdicts);
        pkt_batch_init(b);
        if (pmd->dp->has_tunnels) /* decapsulation changes in_port */
            fcache_lookup_batch(pmd->fc, keys, hashes, n, acts, pmd->now);
        else
            fcache_lookup_batch_port(pmd->fc, keys, hashes, hot, n, acts, pmd->now);
        if (!pmd->knobs->tx_batching)
            dp_group_by_actions(keys, pkts, acts, n);
    }

    struct action_ctx ctx = {
        .aux = pmd,
        .output = dp_output_cb,
        .drop = dp_drop_cb,
        .copies = 0,
    };
    for (unsigned i = 0; i < n;) {
        const struct action_list *a = acts[i];
        if (dp_output_only(a)) {
            /* The common case: a run of packets that only go out of one
             * port, whichever rules sent them there (OVS batches per flow).
             * Without tx-batching a run is one action list's packets (the
             * batch was grouped per action list), sent on its own as OVS
             * 2.8 sent each flow batch. */
            const uint16_t out_port = a->a[0].u.port;
            const bool merge = pmd->knobs->tx_batching;
            unsigned j = i + 1;
            while (j < n && (acts[j] == a || (merge && dp_output_only(acts[j]) &&
                                              acts[j]->a[0].u.port == out_port)))
                j++;
            dp_output_run(pmd, &pkts[i], j - i, out_port, i == 0 && j == n, kept_bytes);
            i = j;
            continue;
        }
        if (!a) {
            dp_drop_cb(pmd, pkts[i], DROP_no_rule);
        } else {
            pmd->n[DP_STAT_ACTION_RUNS]++;
            actions_execute(&ctx, pkts[i], &keys[i], a);
            /* Without tx-batching a run of one action list leaves at its
             * end, in send calls of its own. */
            if (!pmd->knobs->tx_batching && (i + 1 == n || acts[i + 1] != a))
                dp_pmd_flush_all(pmd);
        }
        i++;
    }
    pmd->n[DP_STAT_COPIES] += ctx.copies;
}

/* After an rx batch: sends the queues whose interval expired, and the full
 * ones (a full batch gains nothing by waiting). */
static void dp_pmd_flush_due(struct dp_pmd *pmd)
{
    for (unsigned i = 0; i < pmd->dp->n_ports; i++) {
        struct txq *q = &pmd->txq[i];
        if (txq_queued(q) >= PKT_BATCH_MAX)
            txq_flush(q, pmd->now);
        else if (txq_queued(q))
            txq_flush_if_due(q, pmd->now);
    }
}

/* Receives one batch from (port, qid) and processes it. */
static unsigned dp_pmd_poll_rxq(struct dp_pmd *pmd, unsigned port_no, unsigned qid)
{
    struct dp_port *port = &pmd->dp->ports[port_no];
    pkt_batch_init(&pmd->rx);
    int n = netdev_rxq_recv(port->dev, qid, &pmd->rx, pmd->now);
    if (n <= 0)
        return 0;
    pmd->n[DP_STAT_RX_BURSTS]++;
    unsigned got = pmd->rx.count;
    dp_pmd_process(pmd, port->port_no);
    dp_pmd_flush_due(pmd);
    return got;
}

unsigned dp_pmd_poll(struct dp_pmd *pmd, uint64_t now)
{
    struct dp *dp = pmd->dp;
    unsigned total = 0;

    pmd->now = now;
    dp_pmd_sync(pmd);
    pmd->n[DP_STAT_ITERATIONS]++;
    if (pmd->n_rxqs) {
        for (unsigned i = 0; i < pmd->n_rxqs; i++) {
            const struct dp_rxq_ref *r = &pmd->rxqs[i];
            if (dp->ports[r->port].dev)
                total += dp_pmd_poll_rxq(pmd, r->port, r->qid);
        }
    } else {
        for (unsigned i = 0; i < dp->n_ports; i++) {
            struct dp_port *port = &dp->ports[i];
            if (!port->dev || port->rx_stopped)
                continue;
            unsigned nq = netdev_n_rxq(port->dev);
            for (unsigned q = 0; q < nq; q++) {
                unsigned got;
                do {
                    got = dp_pmd_poll_rxq(pmd, i, q);
                    total += got;
                } while (pmd->drain && got);
            }
        }
    }
    if (total == 0) {
        /* An idle PMD never holds packets. */
        pmd->n[DP_STAT_IDLE_ITERATIONS]++;
        dp_pmd_flush_all(pmd);
    }
    return total;
}

void dp_port_remove(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                    uint16_t port_no)
{
    if (port_no >= dp->n_ports || !dp->ports[port_no].dev)
        return;
    for (unsigned i = 0; i < n_pmds; i++) {
        struct txq *q = &pmds[i]->txq[port_no];
        txq_flush(q, pmds[i]->now);
        txq_purge(q, DROP_tx_down);
        q->dev = NULL;
    }
    netdev_close(dp->ports[port_no].dev);
    dp->ports[port_no].dev = NULL;
}

/* ---- counters ------------------------------------------------------------- */

const char *dp_stat_name(enum dp_stat s)
{
    static const char *const names[DP_N_STATS] = {
#define DP_STAT_NAME_(ID, name) [DP_STAT_##ID] = #name,
        DP_STATS(DP_STAT_NAME_)
#undef DP_STAT_NAME_
    };
    return (unsigned)s < DP_N_STATS ? names[s] : "?";
}

void dp_pmd_stats(const struct dp_pmd *pmd, struct dp_stats *out)
{
    const struct dp *dp = pmd->dp;
    memset(out, 0, sizeof *out);
    memcpy(out->n, pmd->n, sizeof out->n);
    out->n[DP_STAT_QUEUED] = dp_pmd_queued(pmd);
    memcpy(out->drops, pmd->drops.n, sizeof out->drops);
    memcpy(out->parse, pmd->parse_results, sizeof out->parse);
    out->csum = pmd->csum;
    fcache_get_stats(pmd->fc, &out->fcache);
    for (unsigned p = 0; p < dp->n_ports; p++) {
        memcpy(out->ports[p].n, pmd->port_n[p], sizeof out->ports[p].n);
        out->ports[p].tx = pmd->txq[p].stats;
        for (int r = 0; r < DROP_N_REASONS; r++)
            out->drops[r] += pmd->txq[p].stats.dropped[r];
    }
}

/* dst[i] += src[i] (sub: -=) over one counter array. */
static void dp_counters_acc(uint64_t *dst, const uint64_t *src, size_t n, bool sub)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = sub ? dst[i] - src[i] : dst[i] + src[i];
}

#define DP_ACC(dst, src, sub) \
    dp_counters_acc((dst), (src), sizeof(dst) / sizeof((dst)[0]), (sub))

/* The one walk over every counter of a snapshot. */
static void dp_stats_acc(struct dp_stats *dst, const struct dp_stats *src, bool sub)
{
    DP_ACC(dst->n, src->n, sub);
    DP_ACC(dst->drops, src->drops, sub);
    DP_ACC(dst->parse, src->parse, sub);
    DP_ACC(dst->csum.n, src->csum.n, sub);
    DP_ACC(dst->fcache.n, src->fcache.n, sub);
    for (unsigned p = 0; p < DP_MAX_PORTS; p++) {
        struct dp_port_stats *d = &dst->ports[p];
        const struct dp_port_stats *s = &src->ports[p];
        DP_ACC(d->n, s->n, sub);
        DP_ACC(d->tx.n, s->tx.n, sub);
        DP_ACC(d->tx.dropped, s->tx.dropped, sub);
        DP_ACC(d->tx.batch_hist, s->tx.batch_hist, sub);
        DP_ACC(d->tx.wait_hist, s->tx.wait_hist, sub);
        if (!sub && s->tx.wait_max_ns > d->tx.wait_max_ns)
            d->tx.wait_max_ns = s->tx.wait_max_ns;
    }
}

void dp_stats_add(struct dp_stats *dst, const struct dp_stats *src)
{
    dp_stats_acc(dst, src, false);
}

void dp_stats_sub(struct dp_stats *dst, const struct dp_stats *src)
{
    dp_stats_acc(dst, src, true);
}

void dp_pmd_counters(const struct dp_pmd *pmd, struct dp_counters *out)
{
    memcpy(out->n, pmd->n, sizeof out->n);
    out->n[DP_STAT_QUEUED] = dp_pmd_queued(pmd);
    memcpy(out->drops, pmd->drops.n, sizeof out->drops);
    memcpy(out->parse, pmd->parse_results, sizeof out->parse);
    out->csum = pmd->csum;
    fcache_get_counters(pmd->fc, &out->fcache);
}

void dp_stats_finish(const struct dp *dp, struct dp_stats *s)
{
    for (unsigned p = 0; p < dp->n_ports; p++) {
        struct netdev_stats ns;
        if (!dp->ports[p].dev)
            continue;
        netdev_get_stats(dp->ports[p].dev, &ns);
        s->ports[p].tx.n[TXQ_STAT_PACKETS] -= ns.tx_offload_contract;
        s->ports[p].tx.dropped[DROP_offload_contract] += ns.tx_offload_contract;
        s->drops[DROP_offload_contract] += ns.tx_offload_contract;
    }
}

void dp_stats_collect(const struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                      struct dp_stats *out)
{
    struct dp_stats one;
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < n_pmds; i++) {
        dp_pmd_stats(pmds[i], &one);
        dp_stats_add(out, &one);
    }
    dp_stats_finish(dp, out);
}

void dp_stats_totals(const struct dp_stats *s, unsigned n_ports, struct dp_totals *t)
{
    memset(t, 0, sizeof *t);
    t->copies = s->n[DP_STAT_COPIES];
    t->queued = s->n[DP_STAT_QUEUED];
    for (int r = 0; r < DROP_N_REASONS; r++)
        t->dropped += s->drops[r];
    for (unsigned p = 0; p < n_ports && p < DP_MAX_PORTS; p++) {
        t->rx += s->ports[p].n[DP_PORT_RX_PACKETS];
        t->tx += s->ports[p].tx.n[TXQ_STAT_PACKETS];
    }
}
