/* classifier.c: megaflow table and tuple-space search classifier. */
#include "classifier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CLS_MIN_BUCKETS 2u

/* ------------------------------------------------------------------------ */
/* The megaflow table                                                       */

int cls_flows_init(struct cls_flows *f, uint32_t max)
{
    memset(f, 0, sizeof *f);
    if (max == 0 || max > CLS_MAX_FLOWS)
        return -1;
    /* Slots are initialised when first used (below hw); the pages of the
     * rest are never touched. */
    f->mf = fs_alloc_big((size_t)max * sizeof *f->mf);
    if (!f->mf)
        return -1;
    f->max = max;
    f->free_head = CLS_IDX_NONE;
    return 0;
}

void cls_flows_destroy(struct cls_flows *f)
{
    /* Classifiers remove their megaflows; drop any reference left anyway. */
    for (uint32_t i = 0; i < f->hw; i++)
        if (f->mf[i].in_use)
            action_list_unref(f->mf[i].actions);
    fs_free_big(f->mf, (size_t)f->max * sizeof *f->mf);
    memset(f, 0, sizeof *f);
}

static uint32_t cls_flows_alloc(struct cls_flows *f)
{
    uint32_t idx;
    if (f->free_head != CLS_IDX_NONE) {
        idx = f->free_head;
        f->free_head = f->mf[idx].next_free;
    } else if (f->hw < f->max) {
        idx = f->hw++;
        f->mf[idx].gen = 0;
    } else {
        return CLS_IDX_NONE;
    }
    f->n++;
    f->gen++;
    return idx;
}

static void cls_flows_free(struct cls_flows *f, uint32_t idx)
{
    struct cls_megaflow *mf = &f->mf[idx];
    mf->in_use = 0;
    mf->gen++;
    f->gen++;
    mf->st = NULL;
    mf->actions = NULL;
    mf->next_free = f->free_head;
    f->free_head = idx;
    f->n--;
}

uint32_t cls_flows_victim(struct cls_flows *f)
{
    if (f->n == 0)
        return CLS_IDX_NONE;
    /* Two full turns always find one: the first clears every ref bit. */
    for (uint64_t step = 0; step < 2ull * f->hw + 1; step++) {
        uint32_t i = f->hand;
        f->hand = f->hand + 1 >= f->hw ? 0 : f->hand + 1;
        struct cls_megaflow *mf = &f->mf[i];
        if (!mf->in_use)
            continue;
        if (mf->ref) {
            mf->ref = 0;
            continue;
        }
        return i;
    }
    return CLS_IDX_NONE; /* not reached */
}

size_t cls_flows_memory(const struct cls_flows *f, size_t *touched)
{
    if (touched)
        *touched = (size_t)f->hw * sizeof *f->mf;
    return (size_t)f->max * sizeof *f->mf;
}

/* ------------------------------------------------------------------------ */
/* Subtables                                                                */

static struct cls_subtable *cls_subtable_create(struct classifier *c,
                                                const struct flow_mask *mask)
{
    struct cls_subtable *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->buckets = calloc(CLS_MIN_BUCKETS, sizeof *st->buckets);
    if (!st->buckets) {
        free(st);
        return NULL;
    }
    st->bucket_mask = CLS_MIN_BUCKETS - 1;
    st->mask = *mask;
    st->cls = c;
    const cls_word *m = cls_words(&mask->m);
    for (unsigned i = 0; i < FLOW_U64S; i++) {
        if (m[i]) {
            st->word[st->n_words] = (uint8_t)i;
            st->mask_w[st->n_words] = m[i];
            st->n_words++;
        }
    }
    struct flow_key port_bits;
    memset(&port_bits, 0, sizeof port_bits);
    port_bits.in_port = UINT32_MAX;
    const unsigned pw = offsetof(struct flow_key, in_port) / 8;
    st->in_port_only = st->n_words == 1 && st->word[0] == pw &&
                       !(st->mask_w[0] & ~cls_words(&port_bits)[pw]);
    st->hot_only = !st->n_words || st->word[st->n_words - 1] < FLOW_HOT_U64S;
    return st;
}

static void cls_subtable_free(struct cls_subtable *st)
{
    free(st->buckets);
    free(st);
}

/* Inserts (hash, idx) into a table with room: the first free entry from
 * the home bucket on. */
static void cls_buckets_put(struct cls_bucket *bk, uint32_t bmask, uint32_t hash, uint32_t idx)
{
    for (uint32_t b = hash & bmask;; b = (b + 1) & bmask) {
        for (unsigned e = 0; e < CLS_BUCKET_ENTRIES; e++) {
            if (!bk[b].idx1[e]) {
                bk[b].hash[e] = hash;
                bk[b].idx1[e] = idx + 1;
                return;
            }
        }
    }
}

/* Keeps the load at most 1/2 of the entries. */
static int cls_subtable_reserve(struct cls_subtable *st)
{
    uint32_t nb = st->bucket_mask + 1;
    if ((uint64_t)(st->n + 1) * 2 <= (uint64_t)nb * CLS_BUCKET_ENTRIES)
        return 0;
    uint32_t nnb = nb * 2;
    struct cls_bucket *nbk = calloc(nnb, sizeof *nbk);
    if (!nbk)
        return -ENOMEM;
    for (uint32_t b = 0; b < nb; b++)
        for (unsigned e = 0; e < CLS_BUCKET_ENTRIES; e++)
            if (st->buckets[b].idx1[e])
                cls_buckets_put(nbk, nnb - 1, st->buckets[b].hash[e],
                                st->buckets[b].idx1[e] - 1);
    free(st->buckets);
    st->buckets = nbk;
    st->bucket_mask = nnb - 1;
    return 0;
}

/* True if x lies in the cyclic interval (a, c]. */
static bool cls_cyclic_in(uint32_t a, uint32_t c, uint32_t x)
{
    return a < c ? (x > a && x <= c) : (x > a || x <= c);
}

/* Deletes megaflow idx (hash 'hash') and restores the invariant: every
 * entry's buckets from its home up to its own are full. Emptying an entry
 * of bucket 'hole' may strand entries stored after it (reached only through
 * full buckets); the first such entry of each following bucket moves into
 * the hole, which moves on to its bucket. */
static void cls_buckets_del(struct cls_subtable *st, uint32_t hash, uint32_t idx)
{
    const uint32_t bm = st->bucket_mask;
    uint32_t hole = hash & bm;
    unsigned he = 0;
    for (;; hole = (hole + 1) & bm) { /* present: the caller knows it is */
        for (he = 0; he < CLS_BUCKET_ENTRIES; he++)
            if (st->buckets[hole].idx1[he] == idx + 1)
                break;
        if (he < CLS_BUCKET_ENTRIES)
            break;
    }
    st->buckets[hole].idx1[he] = 0;
    st->buckets[hole].hash[he] = 0;
    for (uint32_t j = (hole + 1) & bm; j != hole; j = (j + 1) & bm) {
        struct cls_bucket *bj = &st->buckets[j];
        unsigned e;
        for (e = 0; e < CLS_BUCKET_ENTRIES; e++)
            if (bj->idx1[e] && !cls_cyclic_in(hole, j, bj->hash[e] & bm))
                break;
        if (e < CLS_BUCKET_ENTRIES) {
            st->buckets[hole].hash[he] = bj->hash[e];
            st->buckets[hole].idx1[he] = bj->idx1[e];
            bj->idx1[e] = 0;
            bj->hash[e] = 0;
            hole = j;
            he = e;
        } else if (!cls_bucket_full(bj)) {
            break;
        }
    }
}

/* Finds the megaflow of st whose masked key equals 'key & mask'. */
static uint32_t cls_subtable_find(const struct cls_subtable *st, const struct cls_flows *f,
                                  const struct flow_key *key, uint32_t hash)
{
    return cls_subtable_lookup(st, f, key, hash);
}

static void classifier_unlink_subtable(struct classifier *c, struct cls_subtable *st)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        if (c->vec[i] == st) {
            memmove(&c->vec[i], &c->vec[i + 1], (c->n_st - i - 1) * sizeof c->vec[0]);
            c->n_st--;
            return;
        }
    }
}

struct action_list *cls_flow_remove(struct cls_flows *f, uint32_t idx)
{
    struct cls_megaflow *mf = &f->mf[idx];
    struct cls_subtable *st = mf->st;
    struct action_list *acts = mf->actions;
    cls_buckets_del(st, mf->hash, idx);
    st->n--;
    st->cls->n_flows--;
    if (st->n == 0) {
        classifier_unlink_subtable(st->cls, st);
        cls_subtable_free(st);
    }
    cls_flows_free(f, idx);
    return acts;
}

/* ------------------------------------------------------------------------ */
/* The classifier                                                           */

void classifier_init(struct classifier *c, struct cls_flows *f)
{
    memset(c, 0, sizeof *c);
    c->flows = f;
    c->prefetch = true;
}

void classifier_destroy(struct classifier *c)
{
    struct cls_flows *f = c->flows;
    for (uint32_t i = 0; i < f->hw && c->n_flows; i++)
        if (f->mf[i].in_use && f->mf[i].st->cls == c)
            action_list_unref(cls_flow_remove(f, i));
    free(c->vec);
    memset(c, 0, sizeof *c);
}

static struct cls_subtable *classifier_find_subtable(const struct classifier *c,
                                                     const struct flow_mask *mask)
{
    for (unsigned i = 0; i < c->n_st; i++)
        if (flow_equal(&c->vec[i]->mask.m, &mask->m))
            return c->vec[i];
    return NULL;
}

int classifier_insert(struct classifier *c, const struct flow_key *key,
                      const struct flow_mask *mask, struct action_list *actions,
                      uint32_t *idx)
{
    struct cls_flows *f = c->flows;
    struct cls_subtable *st = classifier_find_subtable(c, mask);
    bool new_st = false;
    if (st) {
        uint32_t old = cls_subtable_find(st, f, key, cls_hash(st, key));
        if (old != CLS_IDX_NONE) {
            *idx = old;
            return 1;
        }
    }
    if (f->n >= f->max)
        return -ENOSPC;
    if (!st) {
        if (c->n_st == c->cap_st) {
            size_t cap = c->cap_st; /* at most one subtable per megaflow: fits */
            if (fs_grow((void **)&c->vec, &cap, c->n_st + 1u, sizeof *c->vec, 8))
                return -ENOMEM;
            c->cap_st = (unsigned)cap;
        }
        st = cls_subtable_create(c, mask);
        if (!st)
            return -ENOMEM;
        new_st = true;
    }
    if (cls_subtable_reserve(st)) {
        if (new_st)
            cls_subtable_free(st);
        return -ENOMEM;
    }
    uint32_t i = cls_flows_alloc(f);
    struct cls_megaflow *mf = &f->mf[i];
    mf->in_use = 1;
    mf->ref = 1;
    mf->pad = 0;
    mf->next_free = CLS_IDX_NONE;
    mf->st = st;
    mf->actions = actions;
    flow_apply_mask(&mf->key, key, mask);
    mf->hash = cls_hash(st, &mf->key);
    cls_buckets_put(st->buckets, st->bucket_mask, mf->hash, i);
    st->n++;
    c->n_flows++;
    if (new_st)
        c->vec[c->n_st++] = st; /* last: it has no hits yet */
    *idx = i;
    return 0;
}

/* The run that starts at the first key of 'probe' (a non-empty map): it and
 * the keys after it, in batch order, that equal it on st's mask, up to the
 * first that does not. */
static inline uint32_t cls_run(const struct cls_subtable *st, const struct flow_key *keys,
                               uint32_t probe)
{
    unsigned r0 = (unsigned)__builtin_ctz(probe);
    const cls_word *w0 = cls_words(&keys[r0]);
    uint32_t run = 1u << r0;
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
    if (st->hot_only) {
        for (uint32_t b = probe & (probe - 1); b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            if (!flow_hot_equal_masked(&keys[i], &keys[r0], &st->mask))
                break;
            run |= 1u << i;
        }
        return run;
    }
#endif
    for (uint32_t b = probe & (probe - 1); b; b &= b - 1) {
        unsigned i = (unsigned)__builtin_ctz(b);
        const cls_word *w = cls_words(&keys[i]);
        uint64_t diff = 0;
        for (unsigned k = 0; k < st->n_words; k++) {
            unsigned j = st->word[k];
            diff |= (w[j] ^ w0[j]) & st->mask_w[k];
        }
        if (diff)
            break;
        run |= 1u << i;
    }
    return run;
}

/* Probes st (rank s in its classifier) with keys[i0] alone and gives its
 * answer to every key of 'set', keys that must get the same one: returns
 * set on a hit (idx[] filled, hits counted, *ph grown by the probes), 0 on
 * a miss. */
static inline uint32_t cls_probe_set(struct cls_subtable *st, const struct cls_flows *f,
                                     const struct flow_key *keys, unsigned i0, uint32_t set,
                                     uint32_t *idx, unsigned s, uint64_t *ph)
{
    uint32_t x = cls_subtable_lookup(st, f, &keys[i0], cls_hash(st, &keys[i0]));
    if (x == CLS_IDX_NONE)
        return 0;
    unsigned nh = 0;
    for (uint32_t b = set; b; b &= b - 1) {
        idx[__builtin_ctz(b)] = x;
        nh++;
    }
    st->hits += nh;
    *ph += (uint64_t)nh * (s + 1);
    return set;
}

uint32_t classifier_lookup_batch(struct classifier *c, const struct flow_key *keys,
                                 uint32_t map, uint32_t *idx, uint64_t *probes_hit,
                                 uint64_t *probes_miss)
{
    const struct cls_flows *f = c->flows;
    uint32_t remaining = map, found = 0;
    const cls_word *kw[32];
    uint64_t h[32];
    uint32_t hash[32];
    uint64_t ph = 0;
    for (unsigned s = 0; s < c->n_st && remaining; s++) {
        struct cls_subtable *st = c->vec[s];
        uint32_t probe = remaining;
        if (st->in_port_only) {
            /* Every key of one in_port gets the first one's answer: one
             * probe per batch (OVS's "simple match"). Keys of other
             * in_ports (the shared classifier) take the general path. */
            unsigned i0 = (unsigned)__builtin_ctz(remaining);
            uint32_t same = c->one_port ? remaining : 0;
            for (uint32_t b = same ? 0 : remaining; b; b &= b - 1) {
                unsigned i = (unsigned)__builtin_ctz(b);
                same |= (uint32_t)(keys[i].in_port == keys[i0].in_port) << i;
            }
            uint32_t got = cls_probe_set(st, f, keys, i0, same, idx, s, &ph);
            remaining &= ~got;
            found |= got;
            probe = remaining & ~same;
            if (!probe)
                continue;
        }
        /* A run: the first key is probed alone, and the keys after it that
         * equal it on the subtable's mask get its answer, hit or miss (a
         * batch of one flow, or of flows one megaflow covers, costs one
         * probe and a masked compare per key). The run ends at the first
         * key that differs; the rest take the batched path. */
        uint32_t run = cls_run(st, keys, probe);
        uint32_t got = cls_probe_set(st, f, keys, (unsigned)__builtin_ctz(probe), run, idx, s,
                                     &ph);
        remaining &= ~got;
        found |= got;
        probe &= ~run;
        if (!probe)
            continue;
        unsigned nk = 0, list[32];
        for (uint32_t b = probe; b; b &= b - 1) {
            unsigned i = (unsigned)__builtin_ctz(b);
            kw[nk] = cls_words(&keys[i]);
            list[nk] = i;
            h[nk++] = cls_hash_start(st);
        }
        /* cls_hash() of every key, word by word: the subtable's word and
         * mask stay in registers and the keys' chains run in parallel. */
        for (unsigned wi = 0; wi < st->n_words; wi++) {
            const unsigned word = st->word[wi];
            const uint64_t mw = st->mask_w[wi];
            for (unsigned k = 0; k < nk; k++)
                h[k] = cls_hash_step(h[k], kw[k][word] & mw);
        }
        for (unsigned k = 0; k < nk; k++) {
            hash[k] = cls_hash_finish(h[k]);
            if (c->prefetch)
                __builtin_prefetch(&st->buckets[hash[k] & st->bucket_mask]);
        }
        uint32_t hits = 0;
        unsigned nh = 0;
        for (unsigned k = 0; k < nk; k++) {
            unsigned i = list[k];
            uint32_t x = cls_subtable_lookup(st, f, &keys[i], hash[k]);
            if (x != CLS_IDX_NONE) {
                idx[i] = x;
                hits |= 1u << i;
                nh++;
            }
        }
        if (hits) {
            st->hits += nh;
            ph += (uint64_t)nh * (s + 1);
            remaining &= ~hits;
            found |= hits;
        }
    }
    *probes_hit += ph;
    unsigned nmiss = 0;
    for (uint32_t b = remaining; b; b &= b - 1)
        nmiss++;
    *probes_miss += (uint64_t)nmiss * c->n_st;
    return found;
}

void classifier_rank(struct classifier *c)
{
    /* Insertion sort: stable, and the vector is short and nearly sorted. */
    for (unsigned i = 1; i < c->n_st; i++) {
        struct cls_subtable *st = c->vec[i];
        unsigned j = i;
        while (j > 0 && c->vec[j - 1]->hits < st->hits) {
            c->vec[j] = c->vec[j - 1];
            j--;
        }
        c->vec[j] = st;
    }
    for (unsigned i = 0; i < c->n_st; i++)
        c->vec[i]->hits = 0;
}

size_t classifier_memory(const struct classifier *c)
{
    size_t b = (size_t)c->cap_st * sizeof c->vec[0];
    for (unsigned i = 0; i < c->n_st; i++)
        b += sizeof *c->vec[i] + ((size_t)c->vec[i]->bucket_mask + 1) * sizeof(struct cls_bucket);
    return b;
}
