/* flow.h: the flow key every lookup works on, its masks and its hash.
 *
 * A key is a fixed-layout struct with no implicit padding, so keys and masks
 * can be compared and hashed as arrays of 64-bit words. Fields the parser
 * did not find are zero; the whole key is always initialised. Multi-byte
 * numeric fields are in host order, addresses are in network order (so a
 * prefix mask is a run of leading one bits in bytes). */
#ifndef FS_FLOW_H
#define FS_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* flow_key.nw_frag bits */
#define FLOW_FRAG_ANY   0x01u /* an IP fragment, first or later */
#define FLOW_FRAG_LATER 0x02u /* not the first fragment */

/* flow_key.vlan_tci bit meaning "a tag is present" (the 802.1Q DEI/CFI bit is
 * not matchable; as in OVS, the bit position marks presence instead). */
/* flow_key.tun_flags */
#define FLOW_TNL_F_CSUM 0x01u /* the outer UDP checksum was present and valid */

#define FLOW_VLAN_PRESENT 0x1000u
#define FLOW_VLAN_VID_MASK 0x0fffu
#define FLOW_VLAN_PCP_SHIFT 13

struct flow_key {
    /* The hot words (the first FLOW_HOT_U64S): every field of an Ethernet
     * key with up to two VLAN tags and IPv4, TCP, UDP, SCTP or ICMP over
     * it, so such a key's cold words are zero (flow_key_cold()). */
    uint32_t in_port;     /* datapath port number */
    uint16_t dl_type;     /* ethertype after the VLAN tags (host order) */
    uint16_t tcp_flags;   /* low 12 bits of the TCP flags */
    uint8_t dl_src[6];
    uint16_t tp_src;      /* TCP/UDP/SCTP port; ICMP/ICMPv6 type */
    uint8_t dl_dst[6];
    uint16_t tp_dst;      /* TCP/UDP/SCTP port; ICMP/ICMPv6 code */
    uint32_t nw_src;      /* IPv4 source, ARP SPA (network order) */
    uint32_t nw_dst;      /* IPv4 destination, ARP TPA (network order) */
    uint8_t nw_proto;     /* IP protocol, final IPv6 next header, ARP opcode */
    uint8_t nw_tos;       /* IPv4 TOS / IPv6 traffic class */
    uint8_t nw_ttl;       /* IPv4 TTL / IPv6 hop limit */
    uint8_t nw_frag;      /* FLOW_FRAG_* */
    uint32_t ipv6_label;  /* flow label, low 20 bits */
    uint16_t vlan_tci[2]; /* outer, inner tag: PCP | PRESENT | VID; 0 = none */
    uint16_t vlan_tpid[2]; /* 0x8100 / 0x88a8 of each tag, 0 = none */

    /* The cold words: IPv6 addresses, ARP hardware addresses and the tunnel
     * metadata (zero unless the packet was decapsulated). */
    uint8_t ipv6_src[16];
    uint8_t ipv6_dst[16];
    uint8_t arp_sha[6];
    uint8_t arp_tha[6];
    uint8_t tun_flags;    /* FLOW_TNL_F_* */
    uint8_t pad[3];       /* always zero */
    uint8_t tun_src[16];  /* IPv6, or IPv4-mapped (::ffff:a.b.c.d) */
    uint8_t tun_dst[16];
    uint64_t tun_id;      /* VNI */
};

#define FLOW_U64S (sizeof(struct flow_key) / 8)
/* Words 0..FLOW_HOT_U64S-1 are hot, the rest cold (see struct flow_key). */
#define FLOW_HOT_U64S 6

_Static_assert(sizeof(struct flow_key) == 136, "flow_key has no implicit padding");
_Static_assert(sizeof(struct flow_key) == 8 * 16 + 8, "flow_key_zero's stores cover the key");
_Static_assert(offsetof(struct flow_key, ipv6_src) == FLOW_HOT_U64S * 8,
               "the hot fields fill the hot words");
_Static_assert(FLOW_HOT_U64S % 2 == 0, "flow_hash() pairs the hot words");

/* A mask has the key's layout: 1 bits are significant. */
struct flow_mask {
    struct flow_key m;
};

/* A key seen as words. may_alias: keys are written field by field and read
 * as words, which strict aliasing would otherwise let the compiler reorder. */
typedef uint64_t __attribute__((may_alias)) flow_word;

static inline const flow_word *flow_u64(const struct flow_key *k)
{
    return (const flow_word *)(const void *)k;
}

static inline flow_word *flow_u64_rw(struct flow_key *k)
{
    return (flow_word *)(void *)k;
}

/* Zeroes k with plain stores: compilers turn a loop or memset of this size
 * into "rep stos", whose start-up costs more than the parser's whole job. */
static inline void flow_key_zero(struct flow_key *k)
{
#if defined(__SSE2__)
    /* Written out: gcc turns even a loop of vector stores into rep stos. */
    __m128i z = _mm_setzero_si128();
    __m128i *v = (__m128i *)(void *)k;
    _mm_storeu_si128(v + 0, z);
    _mm_storeu_si128(v + 1, z);
    _mm_storeu_si128(v + 2, z);
    _mm_storeu_si128(v + 3, z);
    _mm_storeu_si128(v + 4, z);
    _mm_storeu_si128(v + 5, z);
    _mm_storeu_si128(v + 6, z);
    _mm_storeu_si128(v + 7, z);
    _mm_storel_epi64(v + 8, z);
#else
    memset(k, 0, sizeof *k);
#endif
}

static inline bool flow_equal(const struct flow_key *a, const struct flow_key *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* True if (k & mask) == (match & mask); 'match' is usually pre-masked. */
bool flow_match_masked(const struct flow_key *k, const struct flow_key *match,
                       const struct flow_mask *mask);

/* dst = k & mask. */
void flow_apply_mask(struct flow_key *dst, const struct flow_key *k,
                     const struct flow_mask *mask);

/* dst |= src: accumulates the fields a lookup examined. */
void flow_mask_union(struct flow_mask *dst, const struct flow_mask *src);

/* For a key k that does not match (match, mask): adds to wc bits of mask
 * on which k differs from match, so that every key equal to k on wc fails
 * to match too. Nothing if wc already holds such a bit. Otherwise one field
 * is chosen: the first of in_port, tun_id, dl_type, the VLAN tags, nw_frag
 * and nw_proto that differs, whole (as the rule masks it); else, of the
 * fields that differ, the one that adds the fewest bits to wc, where an
 * address or port adds only its prefix down to the first differing bit
 * (as OVS's prefix tries un-wildcard) and any other field its masked
 * bits. */
void flow_wc_disprove(struct flow_mask *wc, const struct flow_key *k,
                      const struct flow_key *match, const struct flow_mask *mask);

/* True if some cold word of k is not zero (an IPv6, ARP or decapsulated
 * key; see struct flow_key). */
static inline bool flow_key_cold(const struct flow_key *k)
{
    const flow_word *w = flow_u64(k);
#if defined(__SSE2__)
    _Static_assert(FLOW_U64S - FLOW_HOT_U64S == 11, "10 words in 5 vectors, then one word");
    const __m128i *v = (const __m128i *)(const void *)(w + FLOW_HOT_U64S);
    __m128i x = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(&v[0]), _mm_loadu_si128(&v[1])),
                             _mm_or_si128(_mm_loadu_si128(&v[2]), _mm_loadu_si128(&v[3])));
    x = _mm_or_si128(x, _mm_loadu_si128(&v[4]));
    return (_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_setzero_si128())) != 0xffff) |
           (w[FLOW_U64S - 1] != 0);
#else
    uint64_t x = 0;
    for (size_t i = FLOW_HOT_U64S; i < FLOW_U64S; i++)
        x |= w[i];
    return x != 0;
#endif
}

/* True if a and b agree on the hot words wherever m has a 1 bit (m NULL:
 * on every bit): ((a ^ b) & m) == 0 over three SSE2 vectors (always
 * present on x86-64) where available, else over the words. What the flow
 * caches' hot-key compares are made of: a megaflow's (b its masked key), a
 * classifier run's (b the run's first key) and the EMC's (no mask). */
static inline __attribute__((always_inline)) bool
flow_hot_equal_masked(const struct flow_key *a, const struct flow_key *b,
                      const struct flow_mask *m)
{
#if defined(__SSE2__) && !defined(FS_NO_SIMD)
    _Static_assert(FLOW_HOT_U64S == 6, "the hot words in 3 vectors");
    const __m128i *va = (const __m128i *)(const void *)a;
    const __m128i *vb = (const __m128i *)(const void *)b;
    const __m128i *vm = (const __m128i *)(const void *)m;
#define FLOW_VX_(i)                                                                    \
    (m ? _mm_and_si128(_mm_xor_si128(_mm_loadu_si128(&va[i]), _mm_loadu_si128(&vb[i])), \
                       _mm_loadu_si128(&vm[i]))                                         \
       : _mm_xor_si128(_mm_loadu_si128(&va[i]), _mm_loadu_si128(&vb[i])))
    __m128i d = _mm_or_si128(_mm_or_si128(FLOW_VX_(0), FLOW_VX_(1)), FLOW_VX_(2));
#undef FLOW_VX_
    return _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xffff;
#else
    const flow_word *x = flow_u64(a), *y = flow_u64(b);
    uint64_t d = 0;
    for (unsigned i = 0; i < FLOW_HOT_U64S; i++)
        d |= (x[i] ^ y[i]) & (m ? flow_u64(&m->m)[i] : ~0ull);
    return d == 0;
#endif
}

/* The key hash: the hot words are paired and each pair multiplied 64x64 ->
 * 128 after an xor with its own constants, the two halves of every product
 * folded and summed; each cold word is multiplied by its constant alone and
 * folded the same way, so a zero cold word adds nothing and a key without
 * cold words costs three multiplies; murmur3's finaliser mixes the sum.
 * Deterministic across runs and machines. */
extern const uint64_t flow_hash_k[FLOW_U64S];
/* The hot words' constants (flow_hash_k[0..5]), as immediates. */
#define FLOW_HASH_K0 0xe71b9592244ececbull
#define FLOW_HASH_K1 0x3fcb4b70f79a7ffdull
#define FLOW_HASH_K2 0x3bce14ab261db1d5ull
#define FLOW_HASH_K3 0x2a438f2a3172f443ull
#define FLOW_HASH_K4 0xff3f3f8cfe53b313ull
#define FLOW_HASH_K5 0xe427f474114d9fcfull

static inline uint64_t flow_hash_mum(uint64_t a, uint64_t b)
{
    __extension__ typedef unsigned __int128 u128;
    u128 r = (u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* flow_hash() given whether k has cold words (cold false: it has none). */
static inline uint32_t flow_hash_known(const struct flow_key *k, uint32_t basis, bool cold)
{
    const flow_word *w = flow_u64(k);
    uint64_t acc = basis ^ 0x243f6a8885a308d3ull;
    _Static_assert(FLOW_HOT_U64S == 6, "three pairs of hot words");
    acc += flow_hash_mum(w[0] ^ FLOW_HASH_K0, w[1] ^ FLOW_HASH_K1);
    acc += flow_hash_mum(w[2] ^ FLOW_HASH_K2, w[3] ^ FLOW_HASH_K3);
    acc += flow_hash_mum(w[4] ^ FLOW_HASH_K4, w[5] ^ FLOW_HASH_K5);
    if (cold)
        for (size_t i = FLOW_HOT_U64S; i < FLOW_U64S; i++)
            acc += flow_hash_mum(w[i], flow_hash_k[i]);
    acc ^= acc >> 33;
    acc *= 0xff51afd7ed558ccdull;
    acc ^= acc >> 33;
    acc *= 0xc4ceb9fe1a85ec53ull;
    acc ^= acc >> 33;
    return (uint32_t)acc;
}

static inline uint32_t flow_hash(const struct flow_key *k, uint32_t basis)
{
    return flow_hash_known(k, basis, flow_key_cold(k));
}

/* Writes a human-readable, ovs-ofctl-like rendering of the non-zero fields
 * of 'k' into buf (always NUL-terminated). */
void flow_format(const struct flow_key *k, char *buf, size_t size);

/* Writes the fields a mask covers, each "name=value" (the key's value), or
 * "name=value/mask" where the mask covers part of the field, in key order
 * (a megaflow as `flowswitch ctl megaflow-show` lists it); nothing for an
 * empty mask. Numbers in decimal, flags and types in hex, addresses as
 * addresses. buf is always NUL-terminated. */
void flow_format_masked(const struct flow_key *k, const struct flow_mask *m, char *buf,
                        size_t size);

#endif
