/* packet.h: the one packet type the datapath core sees.
 *
 * A struct pkt describes a frame in a contiguous buffer owned by whoever
 * allocated it (a backend, or the heap for clones).  The core never frees a
 * buffer itself: pkt_free() hands it back through pkt->ops->release.
 * Packets travel in struct pkt_batch, at most PKT_BATCH_MAX at a time. */
#ifndef FS_PACKET_H
#define FS_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PKT_BATCH_MAX 32
/* Bytes reserved in front of every frame the core allocates, enough for an
 * outer Ethernet + IPv6 + UDP + VXLAN header (14 + 40 + 8 + 8 = 70) and a tag. */
#define PKT_HEADROOM 128
/* The largest packet buffer (headroom, frame and tailroom): no frame is
 * longer, so the lengths of a batch sum below 2^29 (pkt_len_csum()). */
#define PKT_BUF_MAX ((uint32_t)1 << 24)
/* Marks an offset the parser did not fill. */
#define PKT_OFS_NONE 0xFFFF

/* Checksum state of one protocol layer (see offload.h for the rules).
 * The numeric values are part of the contract: backends set them directly. */
enum csum_state {
    CSUM_UNKNOWN = 0, /* nobody checked */
    CSUM_GOOD = 1,    /* verified correct (by us or by the device) */
    CSUM_BAD = 2,     /* verified wrong: never fixed */
    CSUM_PARTIAL = 3, /* header right, checksum field holds only the
                       * pseudo-header sum (or nothing yet): to be completed */
};

/* Layers that carry a checksum state. Without a tunnel only OUTER_* are used. */
enum csum_layer {
    CSUM_L_OUTER_IP = 0,
    CSUM_L_OUTER_L4 = 1,
    CSUM_L_INNER_IP = 2,
    CSUM_L_INNER_L4 = 3,
    CSUM_L_N = 4,
};

/* Network layer found by the parser. */
enum pkt_l3 {
    PKT_L3_NONE = 0,
    PKT_L3_IPV4,
    PKT_L3_IPV6,
    PKT_L3_ARP,
};

/* pkt->flags */
#define PKT_F_PARSED    0x0001u /* offsets and pkt->l3/l4_proto are valid */
#define PKT_F_FRAG      0x0002u /* an IP fragment (first or later) */
#define PKT_F_FRAG_LATER 0x0004u /* a non-first fragment: no L4 header */
#define PKT_F_VXLAN     0x0008u /* UDP to the VXLAN port with a full VXLAN header */
#define PKT_F_L4        0x0010u /* a complete TCP/UDP/ICMP/ICMPv6/SCTP header */
#define PKT_F_VNET_CSUM 0x0020u /* csum_start/csum_offset came with the frame */
#define PKT_F_TRUNCATED 0x0040u /* captured shorter than it was on the wire:
                                 * the core drops it (rx_truncated) */
#define PKT_F_TUNNEL    0x0080u /* encapsulated by us: inner_* describe the
                                 * packet that was pushed into a tunnel */
#define PKT_F_IPV6_RH   0x0100u /* IPv6 with a routing header whose segments
                                 * left is not 0: the upper-layer pseudo-header
                                 * takes its final destination, not the
                                 * Destination Address (parse_ipv6_final_dst()) */

/* pkt->inner_flags */
#define PKT_IF_L4   0x01u /* the inner packet has a complete L4 header */
#define PKT_IF_FRAG 0x02u /* the inner packet is an IP fragment */
#define PKT_IF_IPV6_RH 0x04u /* PKT_F_IPV6_RH of the inner packet */

struct pkt;

/* How the owner of a buffer releases and grows it. */
struct pkt_ops {
    /* Return the packet and its buffer to the owner. Required. */
    void (*release)(struct pkt *pkt);
    /* Make at least 'headroom' bytes available in front of pkt->data,
     * moving the frame if needed. Returns 0 or -errno. NULL: cannot grow. */
    int (*grow_headroom)(struct pkt *pkt, uint32_t headroom);
};

struct pkt {
    uint8_t *data;   /* first byte of the frame */
    uint8_t *buf;    /* start of the buffer; data - buf is the headroom */
    const struct pkt_ops *ops;
    void *owner;     /* the owner's handle (an mbuf, a pool, ...) */
    uint32_t buf_size; /* bytes at buf, at most PKT_BUF_MAX */
    uint32_t len;    /* bytes of frame at data (so at most PKT_BUF_MAX) */

    /* The metadata, from csum[] on (pkt_reset_meta()). csum[] comes right
     * after len so that one 8-byte load gets both (pkt_len_csum()). */
    uint8_t csum[CSUM_L_N]; /* enum csum_state per layer */
    uint32_t hash;   /* flow hash, valid when set by the datapath */
    /* Rx time on the PMD clock (ns) until transmit; the core sets it to the
     * time of the send call just before handing the packet to a backend. */
    uint64_t ts;
    uint16_t in_port; /* datapath port number the packet arrived on */
    uint16_t flags;  /* PKT_F_* */

    /* Parsed layout (PKT_OFS_NONE where absent), offsets from data. */
    uint16_t l3_ofs;
    uint16_t l4_ofs;
    uint16_t l4_len;   /* bytes of L4 header + payload per the IP header */
    uint16_t payload_ofs; /* first byte after the L4 header */
    uint8_t l3;        /* enum pkt_l3 */
    uint8_t l4_proto;  /* IP protocol / final IPv6 next header (0 if none) */
    uint8_t n_vlan;    /* VLAN tags parsed (0..2) */

    /* With PKT_F_TUNNEL: the inner packet's layout, offsets from data. */
    uint8_t inner_l3;       /* enum pkt_l3 */
    uint16_t inner_l3_ofs;
    uint16_t inner_l4_ofs;
    uint16_t inner_l4_len;
    uint8_t inner_l4_proto;
    uint8_t inner_flags;    /* PKT_IF_* */

    /* Virtio NEEDS_CSUM location, valid with PKT_F_VNET_CSUM: the checksum
     * covers data[csum_start..] and is stored at csum_start + csum_offset. */
    uint16_t csum_start;
    uint16_t csum_offset;

    uint32_t out_vni; /* set_tunnel value, used by vni = flow tunnel ports */
};

/* Batch summary flags (pkt_batch.flags). */
#define PKT_BATCH_F_PARTIAL 0x01u /* some packet has a layer in CSUM_PARTIAL */
#define PKT_BATCH_F_BAD     0x02u /* some packet has a layer in CSUM_BAD */
#define PKT_BATCH_F_GOOD    0x04u /* some packet has a layer in CSUM_GOOD */

struct pkt_batch {
    uint16_t count;
    uint16_t flags;
    struct pkt *pkts[PKT_BATCH_MAX];
};

static inline void pkt_batch_init(struct pkt_batch *b)
{
    b->count = 0;
    b->flags = 0;
}

static inline bool pkt_batch_full(const struct pkt_batch *b)
{
    return b->count >= PKT_BATCH_MAX;
}

/* Appends; the caller checks pkt_batch_full() first. */
static inline void pkt_batch_add(struct pkt_batch *b, struct pkt *p)
{
    b->pkts[b->count++] = p;
}

static inline uint32_t pkt_headroom(const struct pkt *p)
{
    return (uint32_t)(p->data - p->buf);
}

static inline uint32_t pkt_tailroom(const struct pkt *p)
{
    return p->buf_size - pkt_headroom(p) - p->len;
}

/* Unaligned loads and stores of header fields as stored in the packet
 * (network byte order in memory; no conversion). */
static inline uint16_t pkt_ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void pkt_st16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof v);
}

static inline uint32_t pkt_ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void pkt_st32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

/* len and the four state bytes of p in one 8-byte load. Summed over at
 * most PKT_BATCH_MAX packets, the two halves stay apart (the lengths sum
 * below 2^29, each byte of the states below 256): PKT_LC_LEN() of the sum
 * is the sum of the lengths, PKT_LC_CSUM() the byte-wise sum of the states
 * (byte i from csum[i], as a 4-byte copy of csum[] orders them), and
 * PKT_LC_CSUM() of an OR of such values the OR of the states. */
_Static_assert(offsetof(struct pkt, csum) == offsetof(struct pkt, len) + 4,
               "csum[] follows len");
_Static_assert((uint64_t)PKT_BATCH_MAX * PKT_BUF_MAX < ((uint64_t)1 << 32),
               "a batch's lengths sum in 32 bits");
static inline uint64_t pkt_len_csum(const struct pkt *p)
{
    uint64_t v;
    memcpy(&v, (const char *)p + offsetof(struct pkt, len), sizeof v);
    return v;
}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PKT_LC_LEN(v) ((uint32_t)((v) >> 32))
#define PKT_LC_CSUM(v) ((uint32_t)(v))
#else
#define PKT_LC_LEN(v) ((uint32_t)(v))
#define PKT_LC_CSUM(v) ((uint32_t)((v) >> 32))
#endif

/* The metadata of a packet: from csum[] to the end of struct pkt. */
#define PKT_META_OFS offsetof(struct pkt, csum)

/* A fresh packet's metadata (ts 0, no offsets, states UNKNOWN, ...): what
 * pkt_reset_meta() copies. */
extern const struct pkt pkt_fresh;

/* Resets the metadata of a received packet: no offsets, states UNKNOWN.
 * Inline, one 48-byte copy: backends call it for every packet they
 * receive. */
static inline void pkt_reset_meta(struct pkt *p)
{
    memcpy((char *)p + PKT_META_OFS, (const char *)&pkt_fresh + PKT_META_OFS,
           sizeof *p - PKT_META_OFS);
}

/* A heap packet with PKT_HEADROOM bytes of headroom and room for 'size'
 * bytes of frame; len is 0. NULL on allocation failure or if the buffer
 * would exceed PKT_BUF_MAX. */
struct pkt *pkt_alloc(uint32_t size);

/* A heap packet holding a copy of 'len' bytes at 'data'. */
struct pkt *pkt_from_data(const void *data, uint32_t len);

/* A heap copy of 'p': frame bytes and all metadata. NULL on failure (also
 * if the copy's buffer would exceed PKT_BUF_MAX). */
struct pkt *pkt_clone(const struct pkt *p);

/* Releases 'p' to its owner. NULL is ignored. */
void pkt_free(struct pkt *p);

/* Frees every packet of the batch and empties it. */
void pkt_batch_free(struct pkt_batch *b);

/* Prepends 'n' bytes, growing the headroom through the owner if short
 * (*grew is set true then, when grew is not NULL). Returns the new data
 * pointer, or NULL if the headroom cannot be grown (also beyond
 * PKT_BUF_MAX); offsets are not adjusted. */
uint8_t *pkt_push(struct pkt *p, uint32_t n, bool *grew);

/* Removes 'n' bytes from the front; n <= len. */
uint8_t *pkt_pull(struct pkt *p, uint32_t n);

#endif
