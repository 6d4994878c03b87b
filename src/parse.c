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
 *  - IPv6 routing headers: one with segments left 0 is skipped like any
 *    extension header (RFC 8200 4.4: a node ignores it). One with segments
 *    left not 0 sets PKT_F_IPV6_RH (its final destination is the
 *    pseudo-header's, parse_ipv6_final_dst()); if it breaks the rules of its
 *    type (parse_ipv6_rh_final()) the result is PARSE_IPV6_RH: every node
 *    that processes it discards it (RFC 8200 4.4, RFC 8754 4.3.1.1, Linux
 *    ipv6_rthdr_rcv()), and it has no final destination to checksum for.
 *    A type we do not know is accepted: a node downstream may know it.
 *  - ICMP/ICMPv6: the "header" is type, code and checksum (4 bytes);
 *    payload_ofs = l4_ofs + 4.
 *  - ARP that is not Ethernet/IPv4 (htype 1, ptype 0x0800, 6, 4) is
 *    PARSE_OK with the ARP fields zero; it still needs its 8 fixed bytes.
 */
#include "parse.h"

#include "parse-inl.h"

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
    [PARSE_IPV6_RH] = "ipv6_rh",
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

enum parse_result parse_pkt(struct pkt *pkt, struct flow_key *key)
{
    return parse_pkt_into(pkt, key, true, false, true);
}

enum parse_result parse_pkt_layout(struct pkt *pkt)
{
    struct flow_key scratch; /* its stores are dead: the compiler drops them */
    return parse_pkt_into(pkt, &scratch, false, false, true);
}

const uint8_t *parse_ipv6_final_dst(const uint8_t *ip, uint32_t hdrs_len)
{
    const uint8_t *dst = ip + 24;
    uint8_t nh = ip[6];
    uint32_t p = IPV6_HLEN;
    while (p < hdrs_len) {
        if (hdrs_len - p < 8)
            return NULL;
        if (nh == IP_PROTO_FRAGMENT) {
            nh = ip[p];
            p += 8;
            continue;
        }
        if (nh != IP_PROTO_HOPOPTS && nh != IP_PROTO_ROUTING && nh != IP_PROTO_DSTOPTS)
            return NULL;
        uint32_t hl = ((uint32_t)ip[p + 1] + 1) * 8;
        if (hl > hdrs_len - p)
            return NULL;
        if (nh == IP_PROTO_ROUTING && ip[p + 3] != 0) {
            int at = parse_ipv6_rh_final(ip + p);
            dst = at > 0 ? ip + p + at : NULL;
        }
        nh = ip[p];
        p += hl;
    }
    return p == hdrs_len ? dst : NULL;
}
