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
    /* Tunnel metadata (zero unless the packet was decapsulated). */
    uint8_t tun_src[16];  /* IPv6, or IPv4-mapped (::ffff:a.b.c.d) */
    uint8_t tun_dst[16];
    uint64_t tun_id;      /* VNI */

    uint32_t in_port;     /* datapath port number */
    uint16_t dl_type;     /* ethertype after the VLAN tags (host order) */
    uint16_t vlan_tci[2]; /* outer, inner tag: PCP | PRESENT | VID; 0 = none */
    uint16_t vlan_tpid[2]; /* 0x8100 / 0x88a8 of each tag, 0 = none */
    uint8_t dl_src[6];
    uint8_t dl_dst[6];
    uint16_t tp_src;      /* TCP/UDP/SCTP port; ICMP/ICMPv6 type */
    uint16_t tp_dst;      /* TCP/UDP/SCTP port; ICMP/ICMPv6 code */
    uint16_t tcp_flags;   /* low 12 bits of the TCP flags */

    uint32_t nw_src;      /* IPv4 source, ARP SPA (network order) */
    uint32_t nw_dst;      /* IPv4 destination, ARP TPA (network order) */
    uint8_t ipv6_src[16];
    uint8_t ipv6_dst[16];
    uint32_t ipv6_label;  /* flow label, low 20 bits */
    uint8_t nw_proto;     /* IP protocol, final IPv6 next header, ARP opcode */
    uint8_t nw_tos;       /* IPv4 TOS / IPv6 traffic class */
    uint8_t nw_ttl;       /* IPv4 TTL / IPv6 hop limit */
    uint8_t nw_frag;      /* FLOW_FRAG_* */
    uint8_t arp_sha[6];
    uint8_t arp_tha[6];
    uint8_t tun_flags;    /* FLOW_TNL_F_* (zero unless decapsulated) */
    uint8_t pad[3];       /* always zero */
};

#define FLOW_U64S (sizeof(struct flow_key) / 8)

_Static_assert(sizeof(struct flow_key) == 136, "flow_key has no implicit padding");
_Static_assert(sizeof(struct flow_key) == 8 * 16 + 8, "flow_key_zero's stores cover the key");

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

/* Hash of the whole key, deterministic across runs and machines. */
uint32_t flow_hash(const struct flow_key *k, uint32_t basis);

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
