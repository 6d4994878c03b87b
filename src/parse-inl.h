/* parse-inl.h: the parser's inline body, for parse.c and the datapath's
 * per-batch extract loop (dp.c), which inlines parse_pkt_rx() and
 * parse_pkt_layout_rx() so that a received packet's parse costs no call.
 * Not a public interface: use parse.h. The rules of what is filled when
 * are in parse.c's file comment. */
#ifndef FS_PARSE_INL_H
#define FS_PARSE_INL_H

#include <string.h>

#include "parse.h"
#include "proto.h"

#define PARSE_IPV4_MF 0x2000u
#define PARSE_IPV4_OFF_MASK 0x1fffu
#define PARSE_IPV6_FRAG_OFF_MASK 0xfff8u
#define PARSE_ARP_ETH_IPV4_LEN 28
#define PARSE_ARP_FIXED_LEN 8

static inline uint16_t parse_rd16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* What parse_ipv6_rh_final() says of a routing header besides an offset. */
#define PARSE_RH_UNKNOWN 0 /* a type whose address layout we do not know */
#define PARSE_RH_BAD (-1)  /* breaks its type's rules: every node that
                            * processes it discards it */

/* A routing header rh, whose (rh[1] + 1) * 8 bytes are present and whose
 * segments left (rh[3]) is not 0: the offset in rh of its final destination,
 * the last address it routes the packet through (type 0 (RFC 8200 4.4) and
 * type 2 (RFC 6275 6.4) list the addresses in order: the last one; type 4,
 * segment routing (RFC 8754 2), in reverse: Segment List[0]), or
 * PARSE_RH_UNKNOWN, or PARSE_RH_BAD (type 0: an odd length or more segments
 * left than addresses; type 2: not one address and one segment left;
 * type 4: Last Entry beyond the header or segments left beyond Last Entry
 * + 1, as RFC 8754 4.3.1.1 checks). Inline and call-free: a call in the
 * parser's extension-header loop, however rarely taken, makes the compiler
 * keep that loop's state out of caller-saved registers, which every IPv6
 * packet would pay for. */
static inline __attribute__((always_inline)) int parse_ipv6_rh_final(const uint8_t *rh)
{
    unsigned ext_len = rh[1], type = rh[2], left = rh[3];
    switch (type) {
    case 0: { /* 4 reserved bytes, then ext_len / 2 addresses */
        unsigned n = ext_len / 2;
        if ((ext_len & 1) || left > n)
            return PARSE_RH_BAD;
        return (int)(8 + 16 * (n - 1));
    }
    case 2: /* Mobile IPv6: exactly the home address */
        if (ext_len != 2 || left != 1)
            return PARSE_RH_BAD;
        return 8;
    case 4: { /* Last Entry at rh[4]; Segment List[0], the last segment, at 8 */
        unsigned last = rh[4];
        if (ext_len < 2 || last > ext_len / 2 - 1 || left > last + 1)
            return PARSE_RH_BAD;
        return 8;
    }
    default:
        return PARSE_RH_UNKNOWN;
    }
}

/* Parses the L4 header at l4[0..l4_len), which is inside the frame.
 * 'frag' is true for a first fragment (later ones never get here). */
static inline __attribute__((always_inline)) enum parse_result
parse_l4(struct pkt *pkt, struct flow_key *key, const uint8_t *l4, uint32_t l4_len,
         uint8_t proto, bool is_v6, bool frag)
{
    uint32_t hlen;

    switch (proto) {
    case IP_PROTO_TCP:
        if (l4_len < TCP_HLEN_MIN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        hlen = (uint32_t)(l4[12] >> 4) * 4;
        if (hlen < TCP_HLEN_MIN)
            return PARSE_TCP_HLEN;
        if (hlen > l4_len)
            return frag ? PARSE_OK : PARSE_TCP_HLEN;
        key->tp_src = parse_rd16(l4);
        key->tp_dst = parse_rd16(l4 + 2);
        key->tcp_flags = parse_rd16(l4 + 12) & 0x0fff;
        break;
    case IP_PROTO_UDP: {
        if (l4_len < UDP_HLEN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        uint32_t ulen = parse_rd16(l4 + 4);
        if (ulen < UDP_HLEN || (!frag && ulen > l4_len))
            return PARSE_UDP_LEN;
        hlen = UDP_HLEN;
        key->tp_src = parse_rd16(l4);
        key->tp_dst = parse_rd16(l4 + 2);
        if (key->tp_dst == VXLAN_UDP_PORT && !frag &&
            ulen - UDP_HLEN >= VXLAN_HLEN)
            pkt->flags |= PKT_F_VXLAN;
        break;
    }
    case IP_PROTO_SCTP:
        if (l4_len < SCTP_HLEN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        hlen = SCTP_HLEN;
        key->tp_src = parse_rd16(l4);
        key->tp_dst = parse_rd16(l4 + 2);
        break;
    case IP_PROTO_ICMP:
    case IP_PROTO_ICMPV6:
        if (is_v6 != (proto == IP_PROTO_ICMPV6))
            return PARSE_OK; /* ICMP over IPv6 or ICMPv6 over IPv4: unknown */
        if (l4_len < ICMP_HLEN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        hlen = ICMP_HLEN;
        key->tp_src = l4[0];
        key->tp_dst = l4[1];
        break;
    default:
        return PARSE_OK;
    }
    pkt->payload_ofs = (uint16_t)(pkt->l4_ofs + hlen);
    pkt->flags |= PKT_F_L4;
    return PARSE_OK;
}

static inline __attribute__((always_inline)) enum parse_result
parse_ipv4(struct pkt *pkt, struct flow_key *key, uint32_t ofs)
{
    const uint8_t *ip = pkt->data + ofs;
    uint32_t avail = pkt->len - ofs;

    if (avail < IPV4_HLEN)
        return PARSE_IP_TRUNC;
    uint32_t ihl = IPV4_HLEN;
    if (ip[0] != 0x45) { /* not the common version 4 without options */
        if ((ip[0] >> 4) != 4)
            return PARSE_IP_VERSION;
        ihl = (uint32_t)(ip[0] & 0x0f) * 4;
        if (ihl < IPV4_HLEN)
            return PARSE_IP_HLEN;
    }
    uint32_t tot = parse_rd16(ip + 2);
    if (tot < ihl)
        return PARSE_IP_LEN;
    if (ihl > avail)
        return PARSE_IP_TRUNC;

    uint8_t proto = ip[9];
    key->nw_tos = ip[1];
    key->nw_ttl = ip[8];
    key->nw_proto = proto;
    memcpy(&key->nw_src, ip + 12, 4);
    memcpy(&key->nw_dst, ip + 16, 4);

    uint32_t frag = parse_rd16(ip + 6);
    bool later = false, is_frag = false;
    if (frag & (PARSE_IPV4_MF | PARSE_IPV4_OFF_MASK)) {
        is_frag = true;
        key->nw_frag = FLOW_FRAG_ANY;
        pkt->flags |= PKT_F_FRAG;
        if (frag & PARSE_IPV4_OFF_MASK) {
            later = true;
            key->nw_frag |= FLOW_FRAG_LATER;
            pkt->flags |= PKT_F_FRAG_LATER;
        }
    }
    if (tot > avail)
        return PARSE_IP_TRUNC;

    pkt->l4_ofs = (uint16_t)(ofs + ihl);
    pkt->l4_len = (uint16_t)(tot - ihl);
    pkt->l4_proto = proto;
    if (later)
        return PARSE_OK;
    return parse_l4(pkt, key, ip + ihl, tot - ihl, proto, false, is_frag);
}

static inline __attribute__((always_inline)) enum parse_result
parse_ipv6(struct pkt *pkt, struct flow_key *key, uint32_t ofs)
{
    const uint8_t *ip = pkt->data + ofs;
    uint32_t avail = pkt->len - ofs;

    if (avail < IPV6_HLEN)
        return PARSE_IP_TRUNC;
    if ((ip[0] >> 4) != 6)
        return PARSE_IP_VERSION;
    uint32_t plen = parse_rd16(ip + 4);
    if (plen == 0)
        return PARSE_IP_LEN; /* jumbogram (RFC 2675): not supported */

    key->nw_tos = (uint8_t)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
    key->ipv6_label = (uint32_t)(ip[1] & 0x0f) << 16 | (uint32_t)ip[2] << 8 | ip[3];
    key->nw_ttl = ip[7];
    memcpy(key->ipv6_src, ip + 8, 16);
    memcpy(key->ipv6_dst, ip + 24, 16);

    uint32_t end = IPV6_HLEN + plen; /* relative to ip */
    if (end > avail)
        return PARSE_IP_TRUNC;

    /* Walk the extension headers inside ip[IPV6_HLEN..end). */
    uint8_t nh = ip[6];
    uint32_t p = IPV6_HLEN;
    unsigned n_ext = 0;
    bool later = false, is_frag = false;
    for (;;) {
        if (nh == IP_PROTO_HOPOPTS || nh == IP_PROTO_ROUTING ||
            nh == IP_PROTO_DSTOPTS) {
            if (++n_ext > PARSE_MAX_IPV6_EXT || end - p < 8)
                return PARSE_IPV6_EXT;
            uint32_t hl = ((uint32_t)ip[p + 1] + 1) * 8;
            if (hl > end - p)
                return PARSE_IPV6_EXT;
            /* A routing header in effect moves the pseudo-header's
             * destination; segments left 0: ignored (RFC 8200 4.4). */
            if (nh == IP_PROTO_ROUTING && ip[p + 3] != 0) {
                if (parse_ipv6_rh_final(ip + p) == PARSE_RH_BAD)
                    return PARSE_IPV6_RH;
                pkt->flags |= PKT_F_IPV6_RH;
            }
            nh = ip[p];
            p += hl;
        } else if (nh == IP_PROTO_FRAGMENT) {
            if (++n_ext > PARSE_MAX_IPV6_EXT || is_frag || end - p < 8)
                return PARSE_IPV6_EXT;
            is_frag = true;
            key->nw_frag = FLOW_FRAG_ANY;
            pkt->flags |= PKT_F_FRAG;
            nh = ip[p];
            uint32_t off = parse_rd16(ip + p + 2) & PARSE_IPV6_FRAG_OFF_MASK;
            p += 8;
            if (off) {
                later = true;
                key->nw_frag |= FLOW_FRAG_LATER;
                pkt->flags |= PKT_F_FRAG_LATER;
                break;
            }
        } else {
            break;
        }
    }

    key->nw_proto = nh;
    pkt->l4_ofs = (uint16_t)(ofs + p);
    pkt->l4_len = (uint16_t)(end - p);
    pkt->l4_proto = nh;
    if (later)
        return PARSE_OK;
    return parse_l4(pkt, key, ip + p, end - p, nh, true, is_frag);
}

static inline __attribute__((always_inline)) enum parse_result
parse_arp(struct pkt *pkt, struct flow_key *key, uint32_t ofs)
{
    const uint8_t *a = pkt->data + ofs;
    uint32_t avail = pkt->len - ofs;

    if (avail < PARSE_ARP_FIXED_LEN)
        return PARSE_ARP_TRUNC;
    if (parse_rd16(a) != 1 || parse_rd16(a + 2) != ETH_TYPE_IPV4 || a[4] != 6 || a[5] != 4)
        return PARSE_OK; /* not Ethernet/IPv4 ARP: nothing to extract */
    if (avail < PARSE_ARP_ETH_IPV4_LEN)
        return PARSE_ARP_TRUNC;
    key->nw_proto = a[7]; /* low 8 bits of the opcode */
    memcpy(key->arp_sha, a + 8, 6);
    memcpy(&key->nw_src, a + 14, 4);
    memcpy(key->arp_tha, a + 18, 6);
    memcpy(&key->nw_dst, a + 24, 4);
    return PARSE_OK;
}

/* The most common frame in one pass: Ethernet without a VLAN tag, IPv4
 * without options, not a fragment, carrying a complete UDP or TCP header.
 * If pkt is one, fills the key and layout exactly as the full parse does
 * (key zeroed, key->in_port set and PKT_F_PARSED set before) and returns
 * true; else writes nothing and returns false. test_parse compares the two
 * on every frame it has. */
static inline __attribute__((always_inline)) bool
parse_ipv4_fast(struct pkt *pkt, struct flow_key *key, const uint8_t *d, uint32_t len)
{
    if (len < ETH_HLEN + IPV4_HLEN + UDP_HLEN)
        return false;
    /* Ethertype IPv4, version 4, header length 20, in one compare. */
    uint32_t tv = pkt_ld32(d + 12);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    tv >>= 8;
#else
    tv = __builtin_bswap32(tv) >> 8;
#endif
    const uint8_t *ip = d + ETH_HLEN;
    uint32_t tot = parse_rd16(ip + 2);
    if (tv != ((uint32_t)ETH_TYPE_IPV4 << 8 | 0x45) ||
        (parse_rd16(ip + 6) & (PARSE_IPV4_MF | PARSE_IPV4_OFF_MASK)) ||
        tot > len - ETH_HLEN || tot < IPV4_HLEN)
        return false;
    const uint8_t *l4 = ip + IPV4_HLEN;
    const uint32_t l4_len = tot - IPV4_HLEN;
    const uint8_t proto = ip[9];
    uint32_t hlen;
    uint16_t flags = PKT_F_L4;
    if (proto == IP_PROTO_UDP) {
        uint32_t ulen = parse_rd16(l4 + 4);
        if (l4_len < UDP_HLEN || ulen < UDP_HLEN || ulen > l4_len)
            return false;
        hlen = UDP_HLEN;
        if (parse_rd16(l4 + 2) == VXLAN_UDP_PORT && ulen - UDP_HLEN >= VXLAN_HLEN)
            flags |= PKT_F_VXLAN;
    } else if (proto == IP_PROTO_TCP) {
        if (l4_len < TCP_HLEN_MIN)
            return false;
        hlen = (uint32_t)(l4[12] >> 4) * 4;
        if (hlen < TCP_HLEN_MIN || hlen > l4_len)
            return false;
        key->tcp_flags = parse_rd16(l4 + 12) & 0x0fff;
    } else {
        return false;
    }
    memcpy(key->dl_dst, d, 6);
    memcpy(key->dl_src, d + 6, 6);
    key->dl_type = ETH_TYPE_IPV4;
    key->nw_tos = ip[1];
    key->nw_ttl = ip[8];
    key->nw_proto = proto;
    memcpy(&key->nw_src, ip + 12, 8); /* nw_src and nw_dst */
    key->tp_src = parse_rd16(l4);
    key->tp_dst = parse_rd16(l4 + 2);
    pkt->l3 = PKT_L3_IPV4;
    pkt->l3_ofs = ETH_HLEN;
    pkt->l4_ofs = ETH_HLEN + IPV4_HLEN;
    pkt->l4_len = (uint16_t)l4_len;
    pkt->l4_proto = proto;
    pkt->payload_ofs = (uint16_t)(ETH_HLEN + IPV4_HLEN + hlen);
    pkt->flags |= flags;
    return true;
}

/* parse_pkt(), and without a key for parse_pkt_layout(): with zero false
 * *key is scratch that is written, never read before written. With fresh
 * true the packet is as a backend delivers it (pkt_reset_meta() state: no
 * offsets, no parser flags), so the layout needs no reset first. With fast
 * the common frame takes parse_ipv4_fast(). */
static inline __attribute__((always_inline)) enum parse_result
parse_pkt_into(struct pkt *pkt, struct flow_key *key, const bool zero, const bool fresh,
               const bool fast)
{
    const uint8_t *d = pkt->data;
    uint32_t len = pkt->len;

    if (zero)
        flow_key_zero(key);
    key->in_port = pkt->in_port;
    if (!fresh)
        parse_reset_layout(pkt);
    pkt->flags |= PKT_F_PARSED;
    if (fast && parse_ipv4_fast(pkt, key, d, len))
        return PARSE_OK;

    if (len < ETH_HLEN)
        return PARSE_ETH_TRUNC;
    memcpy(key->dl_dst, d, 6);
    memcpy(key->dl_src, d + 6, 6);

    uint16_t type = parse_rd16(d + 12);
    uint32_t ofs = ETH_HLEN;
    while (type == ETH_TYPE_VLAN || type == ETH_TYPE_QINQ) {
        unsigned n = pkt->n_vlan;
        if (n == PARSE_MAX_VLANS)
            return PARSE_VLAN_DEPTH;
        if (len - ofs < VLAN_HLEN)
            return PARSE_VLAN_TRUNC;
        key->vlan_tpid[n] = type;
        /* The DEI bit's position marks presence (see flow.h). */
        key->vlan_tci[n] = parse_rd16(d + ofs) | FLOW_VLAN_PRESENT;
        type = parse_rd16(d + ofs + 2);
        ofs += VLAN_HLEN;
        pkt->n_vlan = (uint8_t)(n + 1);
    }
    key->dl_type = type;

    if (type == ETH_TYPE_IPV4) { /* the common case first */
        pkt->l3 = PKT_L3_IPV4;
        pkt->l3_ofs = (uint16_t)ofs;
        return parse_ipv4(pkt, key, ofs);
    }
    switch (type) {
    case ETH_TYPE_IPV6:
        pkt->l3 = PKT_L3_IPV6;
        pkt->l3_ofs = (uint16_t)ofs;
        return parse_ipv6(pkt, key, ofs);
    case ETH_TYPE_ARP:
        pkt->l3 = PKT_L3_ARP;
        pkt->l3_ofs = (uint16_t)ofs;
        return parse_arp(pkt, key, ofs);
    default:
        return PARSE_OK;
    }
}

/* parse_pkt_layout() of a packet as received: its metadata must be in the
 * state netdev_class.rxq_recv() delivers (pkt_reset_meta(), plus verdicts
 * and PKT_F_VNET_CSUM / PKT_F_TRUNCATED). The same result and layout, with
 * the stores of that reset state left out. */
static inline __attribute__((always_inline)) enum parse_result
parse_pkt_layout_rx(struct pkt *pkt)
{
    struct flow_key scratch; /* its stores are dead: the compiler drops them */
    return parse_pkt_into(pkt, &scratch, false, true, true);
}

/* parse_pkt() of a packet as received (metadata as for
 * parse_pkt_layout_rx()): the same result, key and layout, without the
 * reset of the layout. */
static inline __attribute__((always_inline)) enum parse_result
parse_pkt_rx(struct pkt *pkt, struct flow_key *key)
{
    return parse_pkt_into(pkt, key, true, true, true);
}

#endif
