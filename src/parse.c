/* parse.c: L2/L3/L4 parser (see parse.h for the contract).
 *
 * This is the per-packet hot path: straight-line code, byte loads, no
 * function pointers, no allocation. Every read is bounded first, either by
 * pkt->len or (from L3 on) by the length the IP header announces, which has
 * itself been checked against pkt->len.
 *
 * What is filled when (the tests pin these rules down):
 *  - pkt: PKT_F_PARSED is always set on return; the other PKT_F_* bits the
 *    parser owns (FRAG, FRAG_LATER, VXLAN, L4) are cleared first, all other
 *    bits (e.g. PKT_F_VNET_CSUM) are preserved. Offsets are PKT_OFS_NONE,
 *    l4_len/l4_proto/n_vlan/l3 zero, until the layer is found.
 *  - l3_ofs and pkt->l3 are set as soon as the ethertype names a known L3
 *    (IPv4, IPv6, ARP), before that header is validated. For an unknown
 *    ethertype they stay NONE (there is no L3 the parser understood).
 *  - Key L2 fields (dl_src/dst) once the Ethernet header is present; VLAN
 *    fields per complete tag; dl_type once all tags were read.
 *  - IPv4: key L3 fields (addresses, tos, ttl, proto, nw_frag) once the whole
 *    header including options is present and version/IHL/total length are
 *    consistent; a payload shorter than the total length is then IP_TRUNC
 *    with those fields filled but no l4_ofs.
 *  - IPv6: addresses, traffic class, label and hop limit once the fixed
 *    header is present and valid (version, payload length != 0). nw_proto
 *    and nw_frag need the extension-header walk, which needs the whole
 *    payload: on IP_TRUNC they stay zero.
 *  - l4_ofs/l4_len/l4_proto are set whenever the IP layer is complete, also
 *    for unknown protocols and non-first fragments (as in OVS, l4_ofs is
 *    "where the IP payload starts"). PKT_F_L4 and payload_ofs, and the key's
 *    tp_src/tp_dst/tcp_flags, are set only when a complete TCP/UDP/SCTP/
 *    ICMP/ICMPv6 header was found.
 *  - First fragments may be short: a cut L4 header there is PARSE_OK without
 *    PKT_F_L4. The UDP length of a fragment describes the whole datagram,
 *    so it is only checked to be >= 8. A fragment never sets PKT_F_VXLAN
 *    (it cannot be decapsulated before reassembly).
 *  - IPv6 truncation vs. malformed extension headers: the payload length is
 *    checked against the bytes present BEFORE the walk, so missing bytes are
 *    always PARSE_IP_TRUNC; an extension header that does not fit inside the
 *    payload length, a second fragment header, or more than
 *    PARSE_MAX_IPV6_EXT headers is PARSE_IPV6_EXT. Any fragment header marks
 *    the packet a fragment (an RFC 6946 atomic fragment included, as OVS
 *    does); a non-first one ends the walk (what follows is not a header).
 *  - ICMP/ICMPv6: the "header" is type, code and checksum (4 bytes);
 *    payload_ofs = l4_ofs + 4.
 *  - ARP that is not Ethernet/IPv4 (htype 1, ptype 0x0800, 6, 4) is
 *    PARSE_OK with the ARP fields zero; it still needs its 8 fixed bytes.
 */
#include "parse.h"

#include <string.h>

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_TYPE_IPV4 0x0800
#define ETH_TYPE_ARP 0x0806
#define ETH_TYPE_VLAN 0x8100
#define ETH_TYPE_QINQ 0x88a8
#define ETH_TYPE_IPV6 0x86dd

#define IPV4_HLEN 20
#define IPV4_MF 0x2000u
#define IPV4_OFF_MASK 0x1fffu
#define IPV6_HLEN 40
#define IPV6_FRAG_OFF_MASK 0xfff8u
#define ARP_ETH_IPV4_LEN 28
#define ARP_FIXED_LEN 8

#define IPPROTO_HOPOPTS_ 0
#define IPPROTO_ICMP_ 1
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17
#define IPPROTO_ROUTING_ 43
#define IPPROTO_FRAGMENT_ 44
#define IPPROTO_ICMPV6_ 58
#define IPPROTO_DSTOPTS_ 60
#define IPPROTO_SCTP_ 132

#define TCP_HLEN_MIN 20
#define UDP_HLEN 8
#define SCTP_HLEN 12
#define ICMP_HLEN 4
#define VXLAN_HLEN 8

#define PARSE_OWN_FLAGS                                                        \
    (PKT_F_PARSED | PKT_F_FRAG | PKT_F_FRAG_LATER | PKT_F_VXLAN | PKT_F_L4)

static const char *const parse_names[] = {
    [PARSE_OK] = "ok",
    [PARSE_ETH_TRUNC] = "eth_trunc",
    [PARSE_VLAN_TRUNC] = "vlan_trunc",
    [PARSE_VLAN_DEPTH] = "vlan_depth",
    [PARSE_ARP_TRUNC] = "arp_trunc",
    [PARSE_IP_TRUNC] = "ip_trunc",
    [PARSE_IP_VERSION] = "ip_version",
    [PARSE_IP_HLEN] = "ip_hlen",
    [PARSE_IP_LEN] = "ip_len",
    [PARSE_IPV6_EXT] = "ipv6_ext",
    [PARSE_L4_TRUNC] = "l4_trunc",
    [PARSE_TCP_HLEN] = "tcp_hlen",
    [PARSE_UDP_LEN] = "udp_len",
};
_Static_assert(sizeof parse_names / sizeof parse_names[0] == PARSE_N_RESULTS,
               "parse_names must name every parse result");

static const char *const parse_descs[] = {
#define PARSE_DESC_(name, desc) desc,
    PARSE_RESULTS(PARSE_DESC_)
#undef PARSE_DESC_
};

const char *parse_result_name(enum parse_result r)
{
    if ((unsigned)r >= PARSE_N_RESULTS || !parse_names[r])
        return "unknown";
    return parse_names[r];
}

const char *parse_result_desc(enum parse_result r)
{
    if ((unsigned)r >= PARSE_N_RESULTS)
        return "unknown parse result";
    return parse_descs[r];
}

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* Parses the L4 header at l4[0..l4_len), which is inside the frame.
 * 'frag' is true for a first fragment (later ones never get here). */
static inline __attribute__((always_inline)) enum parse_result parse_l4(struct pkt *pkt, struct flow_key *key,
                                         const uint8_t *l4, uint32_t l4_len,
                                         uint8_t proto, bool is_v6, bool frag)
{
    uint32_t hlen;

    switch (proto) {
    case IPPROTO_TCP_:
        if (l4_len < TCP_HLEN_MIN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        hlen = (uint32_t)(l4[12] >> 4) * 4;
        if (hlen < TCP_HLEN_MIN)
            return PARSE_TCP_HLEN;
        if (hlen > l4_len)
            return frag ? PARSE_OK : PARSE_TCP_HLEN;
        key->tp_src = rd16(l4);
        key->tp_dst = rd16(l4 + 2);
        key->tcp_flags = rd16(l4 + 12) & 0x0fff;
        break;
    case IPPROTO_UDP_: {
        if (l4_len < UDP_HLEN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        uint32_t ulen = rd16(l4 + 4);
        if (ulen < UDP_HLEN || (!frag && ulen > l4_len))
            return PARSE_UDP_LEN;
        hlen = UDP_HLEN;
        key->tp_src = rd16(l4);
        key->tp_dst = rd16(l4 + 2);
        if (key->tp_dst == PARSE_VXLAN_PORT && !frag &&
            ulen - UDP_HLEN >= VXLAN_HLEN)
            pkt->flags |= PKT_F_VXLAN;
        break;
    }
    case IPPROTO_SCTP_:
        if (l4_len < SCTP_HLEN)
            return frag ? PARSE_OK : PARSE_L4_TRUNC;
        hlen = SCTP_HLEN;
        key->tp_src = rd16(l4);
        key->tp_dst = rd16(l4 + 2);
        break;
    case IPPROTO_ICMP_:
    case IPPROTO_ICMPV6_:
        if (is_v6 != (proto == IPPROTO_ICMPV6_))
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

static inline __attribute__((always_inline)) enum parse_result parse_ipv4(struct pkt *pkt, struct flow_key *key,
                                           uint32_t ofs)
{
    const uint8_t *ip = pkt->data + ofs;
    uint32_t avail = pkt->len - ofs;

    if (avail < IPV4_HLEN)
        return PARSE_IP_TRUNC;
    if ((ip[0] >> 4) != 4)
        return PARSE_IP_VERSION;
    uint32_t ihl = (uint32_t)(ip[0] & 0x0f) * 4;
    if (ihl < IPV4_HLEN)
        return PARSE_IP_HLEN;
    uint32_t tot = rd16(ip + 2);
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

    uint32_t frag = rd16(ip + 6);
    bool later = false, is_frag = false;
    if (frag & (IPV4_MF | IPV4_OFF_MASK)) {
        is_frag = true;
        key->nw_frag = FLOW_FRAG_ANY;
        pkt->flags |= PKT_F_FRAG;
        if (frag & IPV4_OFF_MASK) {
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

static inline __attribute__((always_inline)) enum parse_result parse_ipv6(struct pkt *pkt, struct flow_key *key,
                                           uint32_t ofs)
{
    const uint8_t *ip = pkt->data + ofs;
    uint32_t avail = pkt->len - ofs;

    if (avail < IPV6_HLEN)
        return PARSE_IP_TRUNC;
    if ((ip[0] >> 4) != 6)
        return PARSE_IP_VERSION;
    uint32_t plen = rd16(ip + 4);
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
        if (nh == IPPROTO_HOPOPTS_ || nh == IPPROTO_ROUTING_ ||
            nh == IPPROTO_DSTOPTS_) {
            if (++n_ext > PARSE_MAX_IPV6_EXT || end - p < 8)
                return PARSE_IPV6_EXT;
            uint32_t hl = ((uint32_t)ip[p + 1] + 1) * 8;
            if (hl > end - p)
                return PARSE_IPV6_EXT;
            nh = ip[p];
            p += hl;
        } else if (nh == IPPROTO_FRAGMENT_) {
            if (++n_ext > PARSE_MAX_IPV6_EXT || is_frag || end - p < 8)
                return PARSE_IPV6_EXT;
            is_frag = true;
            key->nw_frag = FLOW_FRAG_ANY;
            pkt->flags |= PKT_F_FRAG;
            nh = ip[p];
            uint32_t off = rd16(ip + p + 2) & IPV6_FRAG_OFF_MASK;
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

static inline __attribute__((always_inline)) enum parse_result parse_arp(struct pkt *pkt, struct flow_key *key,
                                          uint32_t ofs)
{
    const uint8_t *a = pkt->data + ofs;
    uint32_t avail = pkt->len - ofs;

    if (avail < ARP_FIXED_LEN)
        return PARSE_ARP_TRUNC;
    if (rd16(a) != 1 || rd16(a + 2) != ETH_TYPE_IPV4 || a[4] != 6 || a[5] != 4)
        return PARSE_OK; /* not Ethernet/IPv4 ARP: nothing to extract */
    if (avail < ARP_ETH_IPV4_LEN)
        return PARSE_ARP_TRUNC;
    key->nw_proto = a[7]; /* low 8 bits of the opcode */
    memcpy(key->arp_sha, a + 8, 6);
    memcpy(&key->nw_src, a + 14, 4);
    memcpy(key->arp_tha, a + 18, 6);
    memcpy(&key->nw_dst, a + 24, 4);
    return PARSE_OK;
}

/* parse_pkt(), and without a key for parse_pkt_layout(): with zero false
 * *key is scratch that is written, never read before written. */
static inline __attribute__((always_inline)) enum parse_result
parse_pkt_into(struct pkt *pkt, struct flow_key *key, const bool zero)
{
    const uint8_t *d = pkt->data;
    uint32_t len = pkt->len;

    if (zero)
        flow_key_zero(key);
    key->in_port = pkt->in_port;
    pkt->l3_ofs = PKT_OFS_NONE;
    pkt->l4_ofs = PKT_OFS_NONE;
    pkt->payload_ofs = PKT_OFS_NONE;
    pkt->l4_len = 0;
    pkt->l3 = PKT_L3_NONE;
    pkt->l4_proto = 0;
    pkt->n_vlan = 0;
    pkt->flags = (uint16_t)((pkt->flags & ~PARSE_OWN_FLAGS) | PKT_F_PARSED);

    if (len < ETH_HLEN)
        return PARSE_ETH_TRUNC;
    memcpy(key->dl_dst, d, 6);
    memcpy(key->dl_src, d + 6, 6);

    uint16_t type = rd16(d + 12);
    uint32_t ofs = ETH_HLEN;
    while (type == ETH_TYPE_VLAN || type == ETH_TYPE_QINQ) {
        unsigned n = pkt->n_vlan;
        if (n == PARSE_MAX_VLANS)
            return PARSE_VLAN_DEPTH;
        if (len - ofs < VLAN_HLEN)
            return PARSE_VLAN_TRUNC;
        key->vlan_tpid[n] = type;
        /* The DEI bit's position marks presence (see flow.h). */
        key->vlan_tci[n] = rd16(d + ofs) | FLOW_VLAN_PRESENT;
        type = rd16(d + ofs + 2);
        ofs += VLAN_HLEN;
        pkt->n_vlan = (uint8_t)(n + 1);
    }
    key->dl_type = type;

    switch (type) {
    case ETH_TYPE_IPV4:
        pkt->l3 = PKT_L3_IPV4;
        pkt->l3_ofs = (uint16_t)ofs;
        return parse_ipv4(pkt, key, ofs);
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

enum parse_result parse_pkt(struct pkt *pkt, struct flow_key *key)
{
    return parse_pkt_into(pkt, key, true);
}

enum parse_result parse_pkt_layout(struct pkt *pkt)
{
    struct flow_key scratch; /* its stores are dead: the compiler drops them */
    return parse_pkt_into(pkt, &scratch, false);
}
