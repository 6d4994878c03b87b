/* emc.h: the exact-match cache (EMC), one per PMD.
 *
 * Maps a full flow key to a megaflow, checked in the order that costs least:
 * the 32-bit flow hash, then whether the megaflow is still alive (its slot
 * generation), then the key: all 136 bytes, or for a key without cold words
 * (emc_lookup_hot()) its 48 hot bytes and the entry's length (a dead entry
 * never costs a key compare). Entries
 * are split in two arrays: a 16-byte "meta" per entry (hash, megaflow
 * index and generation, key length) that every probe reads, and the keys,
 * read only on a hash match. The meta array of the default 8192 entries is
 * 128 KiB, so even a missing probe stays in L2.
 *
 * A key has 1 or 2 candidate positions (ways): hash & mask, and the hash
 * rotated by 16 bits & mask (independent bits up to 2^16 entries). Insertion
 * replaces the equal key, else a free or dead candidate, else the candidate
 * with the smaller stored hash (OVS's pseudo-random choice).
 *
 * Dead entries (their megaflow slot changed generation) count as misses; a
 * probe that finds one clears it, and emc_sweep_step() clears them
 * incrementally, one entry per call. Since a megaflow's generation is
 * 32 bits and at most PKT_BATCH_MAX megaflows die per lookup batch, a dead
 * entry is swept long before its slot's generation could wrap around.
 *
 * The key "length" is the number of bytes up to and including its last
 * non-zero 64-bit word; keys longer than max_key_len are never inserted. */
#ifndef FS_EMC_H
#define FS_EMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
#include <emmintrin.h>
#endif

#include "classifier.h"
#include "flow.h"

#define EMC_MAX_ENTRIES (1u << 24)
#define EMC_KEY_LEN_MAX ((unsigned)sizeof(struct flow_key)) /* 136 */

struct emc_meta {
    uint32_t hash;
    uint32_t mf_idx;  /* megaflow slot */
    uint32_t mf_gen;  /* its generation when inserted */
    uint16_t key_len; /* emc_key_len() of the key, set on every insert */
    uint8_t used;
    uint8_t pad;
};

struct emc {
    struct emc_meta *meta;
    struct flow_key *keys;
    uint32_t mask;        /* entries - 1 */
    uint32_t ways;        /* 1 or 2 */
    uint32_t max_key_len; /* bytes */
    uint32_t sweep_pos;
    uint64_t swept;       /* dead entries cleared (by probes and sweeps) */
};

/* An EMC of 'entries' (a power of two, 1..EMC_MAX_ENTRIES) entries with
 * 'ways' (1 or 2) candidate positions per key, caching keys of at most
 * max_key_len bytes. NULL on bad arguments or allocation failure. */
struct emc *emc_create(uint32_t entries, unsigned ways, unsigned max_key_len);
void emc_destroy(struct emc *e);

/* Bytes up to the last non-zero 64-bit word of k (0 for an all-zero key). */
static inline unsigned emc_key_len(const struct flow_key *k)
{
    const cls_word *w = cls_words(k);
    for (unsigned i = FLOW_U64S; i > 0; i--)
        if (w[i - 1])
            return i * 8;
    return 0;
}

static inline uint32_t emc_pos(const struct emc *e, uint32_t hash, unsigned way)
{
    return (way ? (hash >> 16 | hash << 16) : hash) & e->mask;
}

/* Whole-key equality, branch-free: SSE2 (always present on x86-64) for the
 * first 128 bytes where available, else 64-bit words. */
static inline bool emc_key_equal(const struct flow_key *a, const struct flow_key *b)
{
    const cls_word *x = cls_words(a), *y = cls_words(b);
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
    _Static_assert(FLOW_U64S == 17, "16 words in 8 vectors, then one word");
    const __m128i *va = (const __m128i *)(const void *)a;
    const __m128i *vb = (const __m128i *)(const void *)b;
#define EMC_VX_(i) _mm_xor_si128(_mm_loadu_si128(&va[i]), _mm_loadu_si128(&vb[i]))
    /* Written out: gcc keeps a loop of these (6 instructions a vector). */
    __m128i d = _mm_or_si128(_mm_or_si128(_mm_or_si128(EMC_VX_(0), EMC_VX_(1)),
                                          _mm_or_si128(EMC_VX_(2), EMC_VX_(3))),
                             _mm_or_si128(_mm_or_si128(EMC_VX_(4), EMC_VX_(5)),
                                          _mm_or_si128(EMC_VX_(6), EMC_VX_(7))));
#undef EMC_VX_
    return (_mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xffff) &
           ((x[16] ^ y[16]) == 0);
#else
    uint64_t d = 0;
    for (unsigned i = 0; i < FLOW_U64S; i++)
        d |= x[i] ^ y[i];
    return d == 0;
#endif
}

/* emc_key_equal() for a key b without cold words: the hot words equal and a
 * length that shows a has none either. */
static inline bool emc_key_equal_hot(const struct flow_key *a, unsigned a_len,
                                     const struct flow_key *b)
{
    return flow_hot_equal_masked(a, b, NULL) & (a_len <= FLOW_HOT_U64S * 8);
}

static inline void emc_prefetch(const struct emc *e, uint32_t hash)
{
    __builtin_prefetch(&e->meta[emc_pos(e, hash, 0)]);
    if (e->ways > 1)
        __builtin_prefetch(&e->meta[emc_pos(e, hash, 1)]);
}

/* emc_lookup(), and emc_lookup_hot() with 'hot'. */
static inline __attribute__((always_inline)) bool
emc_lookup_(struct emc *e, const struct cls_flows *f, const struct flow_key *key,
            uint32_t hash, uint32_t *mf_idx, const bool hot)
{
    for (unsigned w = 0; w < e->ways; w++) {
        uint32_t p = emc_pos(e, hash, w);
        struct emc_meta *m = &e->meta[p];
        if (m->hash != hash || !m->used)
            continue;
        if (!cls_flow_alive(f, m->mf_idx, m->mf_gen)) {
            m->used = 0;
            e->swept++;
            continue;
        }
        if (hot ? emc_key_equal_hot(&e->keys[p], m->key_len, key)
                : emc_key_equal(&e->keys[p], key)) {
            *mf_idx = m->mf_idx;
            return true;
        }
    }
    return false;
}

/* Looks up key (with hash = flow_hash(key, 0)). On a hit sets *mf_idx to a
 * live megaflow slot of f and returns true. Clears a dead entry it meets. */
static inline bool emc_lookup(struct emc *e, const struct cls_flows *f,
                              const struct flow_key *key, uint32_t hash, uint32_t *mf_idx)
{
    return emc_lookup_(e, f, key, hash, mf_idx, false);
}

/* emc_lookup() of a key without cold words (!flow_key_cold(key): the
 * caller knows): the same answer, comparing the hot words only. */
static inline bool emc_lookup_hot(struct emc *e, const struct cls_flows *f,
                                  const struct flow_key *key, uint32_t hash, uint32_t *mf_idx)
{
    return emc_lookup_(e, f, key, hash, mf_idx, true);
}

/* Caches key -> megaflow (mf_idx, mf_gen), which must be alive in f.
 * Returns false (and caches nothing) if the key is longer than the
 * maximum. */
bool emc_insert(struct emc *e, const struct cls_flows *f, const struct flow_key *key,
                uint32_t hash, uint32_t mf_idx, uint32_t mf_gen);

/* Checks the next entry of the sweep and clears it if dead. Returns true if
 * it cleared one. */
bool emc_sweep_step(struct emc *e, const struct cls_flows *f);

/* Empties the cache. */
void emc_flush(struct emc *e);

/* Live entries (for tests and stats; walks the whole table). */
uint32_t emc_count(const struct emc *e, const struct cls_flows *f);

size_t emc_memory(const struct emc *e);

/* Probabilistic insertion: a key is inserted with probability 1/inv_prob,
 * from a seeded PRNG so runs are deterministic. */

/* Threshold for emc_insert_draw(): 0 never (inv_prob 0), 2^32 always
 * (inv_prob 1), else 2^32 / inv_prob. */
static inline uint64_t emc_insert_threshold(uint32_t inv_prob)
{
    return inv_prob ? (1ull << 32) / inv_prob : 0;
}

/* splitmix64: the next 32 random bits of *state. */
static inline uint32_t emc_rand32(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* Decides one insertion. Draws from the PRNG only when the threshold is
 * neither "never" nor "always". */
static inline bool emc_insert_draw(uint64_t *state, uint64_t threshold)
{
    if (threshold == 0)
        return false;
    if (threshold >> 32)
        return true;
    return emc_rand32(state) < threshold;
}

#endif
