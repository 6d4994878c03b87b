/* smc.h: the signature-match cache (SMC), one per PMD.
 *
 * Maps a flow hash to a megaflow in SMC_WAYS-way buckets of 16-bit
 * signatures and 16-bit megaflow indices: 4 bytes per entry, so the default
 * 2^21 entries take 8 MiB. A bucket of 8 ways is 32 bytes, half a cache
 * line (8 ways rather than OVS's 4: the load spreads better when the table
 * is nearly full; figures in docs/performance.md).
 * The bucket is hash & (buckets - 1), the signature the upper 16 bits of
 * the hash. With 2^18 buckets the two overlap by 2 bits, so 14 signature
 * bits are independent of the bucket: a false signature match costs one masked
 * compare, which every hit performs anyway. The masked compare of the key
 * against the megaflow confirms a hit, so a stale, overwritten or colliding
 * entry is never trusted: any live megaflow that matches the key gives the
 * right answer (fcache.h).
 *
 * An empty way has index field 0 (indices are stored + 1), so a zeroed
 * bucket is empty and a signature of 0 is an ordinary signature. Megaflow
 * slots from SMC_MAX_IDX up cannot be referenced by a 16-bit index;
 * smc_insert() refuses them. */
#ifndef FS_SMC_H
#define FS_SMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
#include <emmintrin.h>
#endif

#include "classifier.h"
#include "flow.h"

#ifndef SMC_WAYS
#define SMC_WAYS 8
#endif
_Static_assert(SMC_WAYS % 8 == 0, "ways are matched 8 (SSE2) or 4 (SWAR) at a time");
#define SMC_MAX_IDX 65535u /* indices 0..65534 can be cached */
#define SMC_MAX_ENTRIES (1u << 26)

struct smc_bucket {
    uint16_t sig[SMC_WAYS];
    uint16_t idx1[SMC_WAYS]; /* megaflow index + 1; 0 = empty way */
};

struct smc {
    struct smc_bucket *b;
    uint32_t mask;      /* buckets - 1 */
    uint32_t sweep_pos;
    uint64_t rng;       /* victim choice in a full bucket */
    uint64_t swept;     /* ways cleared because their megaflow died */
};

/* An SMC of 'entries' entries (a power of two, SMC_WAYS..SMC_MAX_ENTRIES).
 * seed makes the replacement choice deterministic. NULL on bad arguments
 * or allocation failure. */
struct smc *smc_create(uint32_t entries, uint64_t seed);
void smc_destroy(struct smc *s);

static inline uint16_t smc_sig(uint32_t hash)
{
    return (uint16_t)(hash >> 16);
}

static inline void smc_prefetch(const struct smc *s, uint32_t hash)
{
    __builtin_prefetch(&s->b[hash & s->mask]);
}

/* The candidate megaflow slot for hash (a used way with its signature), or
 * CLS_IDX_NONE. Not confirmed: see smc_lookup(). Branch-free over the ways:
 * SSE2 where available, else 64-bit SWAR, 4 ways at a time. */
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
static inline uint32_t smc_candidate(const struct smc *s, uint32_t hash)
{
    const struct smc_bucket *b = &s->b[hash & s->mask];
    const __m128i sig = _mm_set1_epi16((short)smc_sig(hash));
    for (unsigned w = 0; w < SMC_WAYS; w += 8) {
        __m128i sg = _mm_loadu_si128((const __m128i *)(const void *)&b->sig[w]);
        __m128i ix = _mm_loadu_si128((const __m128i *)(const void *)&b->idx1[w]);
        __m128i hit = _mm_andnot_si128(_mm_cmpeq_epi16(ix, _mm_setzero_si128()),
                                       _mm_cmpeq_epi16(sg, sig));
        unsigned m = (unsigned)_mm_movemask_epi8(hit); /* 2 bits per way */
        if (m)
            return (uint32_t)b->idx1[w + (unsigned)__builtin_ctz(m) / 2] - 1;
    }
    return CLS_IDX_NONE;
}
#else
/* Bit 15 of each 16-bit lane of the result is set iff that lane of x is
 * non-zero (exact per lane: no carries cross lanes). */
static inline uint64_t smc_lanes_nonzero(uint64_t x)
{
    const uint64_t lo = 0x7fff7fff7fff7fffull;
    return (((x & lo) + lo) | x) & ~lo;
}

static inline uint32_t smc_candidate(const struct smc *s, uint32_t hash)
{
    const struct smc_bucket *b = &s->b[hash & s->mask];
    const uint64_t sig4 = smc_sig(hash) * 0x0001000100010001ull;
    for (unsigned w = 0; w < SMC_WAYS; w += 4) {
        uint64_t sigs, idx;
        memcpy(&sigs, &b->sig[w], 8);
        memcpy(&idx, &b->idx1[w], 8);
        uint64_t hit = ~smc_lanes_nonzero(sigs ^ sig4) & smc_lanes_nonzero(idx);
        if (hit) {
            unsigned lane = (unsigned)__builtin_ctzll(hit) / 16;
            return (uint32_t)b->idx1[w + lane] - 1;
        }
    }
    return CLS_IDX_NONE;
}
#endif

/* Confirms a candidate: the slot holds a live megaflow matching key. */
static inline bool smc_confirm(const struct cls_flows *f, uint32_t idx,
                               const struct flow_key *key)
{
    const struct cls_megaflow *mf = cls_flow(f, idx);
    return mf->in_use && cls_flow_match(mf, key);
}

/* Looks up key (hash = flow_hash(key, 0)). On a confirmed hit sets
 * *mf_idx and returns true. */
static inline bool smc_lookup(const struct smc *s, const struct cls_flows *f,
                              const struct flow_key *key, uint32_t hash, uint32_t *mf_idx)
{
    uint32_t idx = smc_candidate(s, hash);
    if (idx != CLS_IDX_NONE && smc_confirm(f, idx, key)) {
        *mf_idx = idx;
        return true;
    }
    return false;
}

/* Caches hash -> megaflow slot idx: a way with the same signature is
 * overwritten, else a free way is used, else a pseudo-random way. Returns
 * false if idx >= SMC_MAX_IDX (not addressable). */
bool smc_insert(struct smc *s, uint32_t hash, uint32_t idx);

/* Clears, in the next bucket of the sweep, the ways whose megaflow slot is
 * no longer in use. Returns how many it cleared. */
unsigned smc_sweep_step(struct smc *s, const struct cls_flows *f);

void smc_flush(struct smc *s);

/* Used ways (walks the table). */
uint32_t smc_count(const struct smc *s);

size_t smc_memory(const struct smc *s);

#endif
