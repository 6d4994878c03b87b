/* classifier.h: the megaflow table and the megaflow classifier.
 *
 * A megaflow is (mask, masked key, actions): every packet whose key agrees
 * with the masked key on the mask's bits gets the actions. Megaflows live
 * in one table per PMD (struct cls_flows), a fixed array of slots addressed
 * by index, so the EMC can refer to one by (index, generation) and the SMC
 * by a 16-bit index. A slot's generation changes whenever its megaflow dies,
 * so a cached (index, generation) pair is checked, never trusted: a slot is
 * reused at once, and a stale reference simply misses.
 *
 * The classifier (struct classifier, one per in_port) is tuple-space
 * search: one subtable per distinct mask, each a hash table of masked keys
 * (4-entry buckets, see struct cls_bucket). A lookup probes the subtables
 * in rank order (most hits since the last re-rank first) until one holds a
 * matching megaflow. Megaflows installed from the rule table never overlap
 * with different answers (see fcache.h), so the first match is the answer.
 *
 * Nothing here allocates on the lookup path; insertion may (a new subtable
 * or a larger hash table). */
#ifndef FS_CLASSIFIER_H
#define FS_CLASSIFIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
#include <emmintrin.h>
#endif

#include "actions.h"
#include "flow.h"

#define CLS_MAX_FLOWS (1u << 22) /* largest megaflow table */
#define CLS_IDX_NONE UINT32_MAX

struct classifier;

/* The 64-bit words of a key. Keys are written field by field and read as
 * words; a plain uint64_t pointer (flow_u64()) breaks C's aliasing rules
 * once such reads are inlined next to the writes, so hot inline code reads
 * through this may_alias type instead. */
typedef uint64_t cls_word __attribute__((__may_alias__));

static inline const cls_word *cls_words(const struct flow_key *k)
{
    return (const cls_word *)(const void *)k;
}

/* A bucket of a subtable's hash table: 4 entries, 32 bytes. The table is
 * bucketized linear probing: an entry lives in its home bucket
 * (hash & bucket_mask) or, if that was full, in the first bucket after it
 * with room, and every bucket from its home up to its own is full. So a
 * lookup stops at the first bucket that is not full, which at a load of at
 * most 1/2 is almost always the home bucket: a miss costs one bucket and a
 * branch that is almost always predicted. Deletion shifts entries back
 * (no tombstones). */
#define CLS_BUCKET_ENTRIES 4
struct cls_bucket {
    uint32_t hash[CLS_BUCKET_ENTRIES]; /* cls_hash() of the masked key */
    uint32_t idx1[CLS_BUCKET_ENTRIES]; /* megaflow index + 1; 0 = empty */
};

/* All megaflows of one classifier that share a mask. */
struct cls_subtable {
    uint8_t n_words;              /* non-zero 64-bit words of the mask */
    bool in_port_only;            /* the mask has in_port bits only: keys
                                   * with equal in_port get one answer */
    bool hot_only;                /* the mask has no cold words (flow.h) */
    uint8_t word[FLOW_U64S];      /* their positions in the key */
    uint64_t mask_w[FLOW_U64S];   /* their values */
    uint32_t n;                   /* megaflows */
    uint32_t bucket_mask;         /* buckets - 1 (power of two) */
    struct cls_bucket *buckets;
    uint64_t hits;                /* since the last classifier_rank() */
    struct classifier *cls;       /* owner */
    struct flow_mask mask;        /* the full mask */
};

struct cls_megaflow {
    uint32_t gen;                 /* incarnation: changes when the slot is freed */
    uint8_t in_use;
    uint8_t ref;                  /* clock bit: set on every hit */
    uint16_t pad;
    uint32_t hash;                /* cls_hash() of key in st */
    uint32_t next_free;           /* free-list link while !in_use */
    struct cls_subtable *st;      /* owner (gives the mask) while in_use */
    struct action_list *actions;  /* owned reference; NULL = no rule matches */
    struct flow_key key;          /* masked by st->mask */
};

/* The megaflow table of one PMD: slots [0, hw) have been used at least once;
 * the rest of the array is untouched (zero) memory. Freed slots are reused
 * last-freed first. */
struct cls_flows {
    struct cls_megaflow *mf;
    uint32_t max;       /* capacity */
    uint32_t n;         /* megaflows in use */
    uint32_t hw;        /* high-water mark of used slots */
    uint32_t free_head; /* CLS_IDX_NONE if no freed slot */
    uint32_t hand;      /* eviction clock hand */
    uint64_t gen;       /* bumped by every install and removal: a cached
                         * answer of the same gen still stands */
};

/* The classifier of one in_port. vec is the ranked subtable vector. */
struct classifier {
    struct cls_flows *flows;
    struct cls_subtable **vec;
    unsigned n_st, cap_st;
    uint32_t n_flows;
    bool prefetch;  /* prefetch hash-table buckets in batch lookups (default) */
    bool one_port;  /* every key looked up has the same in_port (the owner
                     * sets it; default false: compared per key) */
};

/* A table of 'max' megaflow slots (1..CLS_MAX_FLOWS). Returns 0 or -1. */
int cls_flows_init(struct cls_flows *f, uint32_t max);

/* Frees the table. Every classifier using it must have been destroyed. */
void cls_flows_destroy(struct cls_flows *f);

static inline struct cls_megaflow *cls_flow(const struct cls_flows *f, uint32_t idx)
{
    return &f->mf[idx];
}

/* True if slot idx still holds the incarnation 'gen' (it is alive: a freed
 * slot's generation has moved on). idx must be < f->hw. */
static inline bool cls_flow_alive(const struct cls_flows *f, uint32_t idx, uint32_t gen)
{
    return f->mf[idx].gen == gen && f->mf[idx].in_use;
}

/* The subtable hash of 'k' under st's mask: a hash of the masked words
 * only, independent of flow_hash(). classifier_lookup_batch() computes the
 * same function for a whole batch at once (cls_hash_start/step/finish). */
static inline uint64_t cls_hash_start(const struct cls_subtable *st)
{
    return 0x243f6a8885a308d3ull ^ st->n_words;
}

static inline uint64_t cls_hash_step(uint64_t h, uint64_t masked_word)
{
    h ^= masked_word;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static inline uint32_t cls_hash_finish(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (uint32_t)h;
}

static inline uint32_t cls_hash(const struct cls_subtable *st, const struct flow_key *k)
{
    const cls_word *w = cls_words(k);
    uint64_t h = cls_hash_start(st);
    for (unsigned i = 0; i < st->n_words; i++)
        h = cls_hash_step(h, w[st->word[i]] & st->mask_w[i]);
    return cls_hash_finish(h);
}

/* True if k agrees with megaflow mf (in use) on its mask: three masked
 * vectors for a mask without cold words, else the mask's words. */
static inline bool cls_flow_match(const struct cls_megaflow *mf, const struct flow_key *k)
{
    const struct cls_subtable *st = mf->st;
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
    if (st->hot_only)
        return flow_hot_equal_masked(k, &mf->key, &st->mask);
#endif
    const cls_word *w = cls_words(k), *m = cls_words(&mf->key);
    uint64_t diff = 0;
    for (unsigned i = 0; i < st->n_words; i++) {
        unsigned j = st->word[i];
        diff |= (w[j] & st->mask_w[i]) ^ m[j];
    }
    return diff == 0;
}

/* Matching a bucket: bit e of the result is set iff entry e is used and
 * holds 'hash'; *full tells whether all 4 entries are used. Branch-free: a
 * lookup asks this of almost every bucket it meets, and mispredicted
 * branches cost more than the arithmetic. SSE2 (always present on x86-64)
 * where available, else 64-bit SWAR. */
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
static inline unsigned cls_bucket_match(const struct cls_bucket *bk, uint32_t hash, bool *full)
{
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)bk->hash);
    __m128i i = _mm_loadu_si128((const __m128i *)(const void *)bk->idx1);
    __m128i empty = _mm_cmpeq_epi32(i, _mm_setzero_si128());
    __m128i eq = _mm_cmpeq_epi32(h, _mm_set1_epi32((int)hash));
    *full = _mm_movemask_ps(_mm_castsi128_ps(empty)) == 0;
    return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_andnot_si128(empty, eq)));
}
#else
/* Bit 31 of each 32-bit lane of the result is set iff that lane of x is
 * non-zero (exact per lane: no carry crosses lanes). */
static inline uint64_t cls_lanes_nonzero(uint64_t x)
{
    const uint64_t lo = 0x7fffffff7fffffffull;
    return (((x & lo) + lo) | x) & ~lo;
}

static inline unsigned cls_bucket_match(const struct cls_bucket *bk, uint32_t hash, bool *full)
{
    const uint64_t h2 = hash * 0x0000000100000001ull;
    uint64_t h01, h23, i01, i23;
    memcpy(&h01, &bk->hash[0], 8);
    memcpy(&h23, &bk->hash[2], 8);
    memcpy(&i01, &bk->idx1[0], 8);
    memcpy(&i23, &bk->idx1[2], 8);
    uint64_t nz01 = cls_lanes_nonzero(i01), nz23 = cls_lanes_nonzero(i23);
    /* bit 31: entry 0 (or 2), bit 63: entry 1 (or 3) */
    uint64_t m01 = ~cls_lanes_nonzero(h01 ^ h2) & nz01;
    uint64_t m23 = ~cls_lanes_nonzero(h23 ^ h2) & nz23;
    *full = (nz01 & nz23) == 0x8000000080000000ull;
    return (unsigned)(m01 >> 31 & 1) | (unsigned)(m01 >> 62 & 2) | (unsigned)(m23 >> 29 & 4) |
           (unsigned)(m23 >> 60 & 8);
}
#endif

/* All 4 entries used (for insertion and deletion, off the lookup path). */
static inline bool cls_bucket_full(const struct cls_bucket *b)
{
    return b->idx1[0] && b->idx1[1] && b->idx1[2] && b->idx1[3];
}

/* The megaflow of st matching k (whose cls_hash() in st is 'hash'), or
 * CLS_IDX_NONE. */
static inline uint32_t cls_subtable_lookup(const struct cls_subtable *st,
                                           const struct cls_flows *f,
                                           const struct flow_key *k, uint32_t hash)
{
    uint32_t b = hash & st->bucket_mask;
    for (;;) {
        const struct cls_bucket *bk = &st->buckets[b];
        bool full;
        for (unsigned m = cls_bucket_match(bk, hash, &full); m; m &= m - 1) {
            unsigned e = (unsigned)__builtin_ctz(m);
            if (cls_flow_match(&f->mf[bk->idx1[e] - 1], k))
                return bk->idx1[e] - 1;
        }
        if (!full)
            return CLS_IDX_NONE; /* nothing beyond a bucket with room */
        b = (b + 1) & st->bucket_mask;
    }
}

/* Removes megaflow idx (in use) from its subtable (freeing the subtable if
 * it was the last) and frees the slot. Returns the megaflow's action list
 * reference, which the caller now owns (unref it, perhaps later). */
struct action_list *cls_flow_remove(struct cls_flows *f, uint32_t idx);

/* Picks the megaflow to evict when the table is full: a CLOCK sweep that
 * spares megaflows hit since the hand last passed. CLS_IDX_NONE if empty. */
uint32_t cls_flows_victim(struct cls_flows *f);

/* Bytes of the table: allocated capacity and the part ever touched. */
size_t cls_flows_memory(const struct cls_flows *f, size_t *touched);

void classifier_init(struct classifier *c, struct cls_flows *f);

/* Removes (and unrefs) every megaflow of c, frees its subtables. */
void classifier_destroy(struct classifier *c);

/* Installs megaflow (key & mask, actions). On success returns 0 with *idx,
 * taking ownership of the 'actions' reference. If an identical megaflow
 * (same mask, same masked key) exists, returns 1 with its *idx and does not
 * take the reference. Returns -ENOSPC if the table is full (evict first),
 * -ENOMEM if memory runs out. */
int classifier_insert(struct classifier *c, const struct flow_key *key,
                      const struct flow_mask *mask, struct action_list *actions,
                      uint32_t *idx);

/* Looks up the keys keys[i] for every bit i of map (i < 32), probing the
 * subtables in rank order; the first subtable of the vector is probed for
 * every key of the batch, then the second for those that missed, and so on.
 * Sets idx[i] for each hit and returns the map of hits. Adds to *probes_hit
 * the subtables probed by the hits (rank of the hit + 1, summed) and to
 * *probes_miss those probed by the misses. Counts subtable hits for
 * ranking. */
uint32_t classifier_lookup_batch(struct classifier *c, const struct flow_key *keys,
                                 uint32_t map, uint32_t *idx, uint64_t *probes_hit,
                                 uint64_t *probes_miss);

/* Re-sorts the subtable vector by hits since the last call (ties keep
 * their order) and resets the counts. */
void classifier_rank(struct classifier *c);

/* Bytes of the subtables and their hash tables. */
size_t classifier_memory(const struct classifier *c);

#endif
