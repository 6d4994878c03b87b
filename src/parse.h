/* parse.h: L2/L3/L4 parser filling packet offsets and the flow key.
 *
 * Handles Ethernet, 802.1Q and QinQ (0x88a8, and 0x8100 stacked), ARP, IPv4
 * with options and fragments, IPv6 with hop-by-hop, routing, fragment and
 * destination-options extension headers, TCP, UDP, SCTP, ICMP, ICMPv6, and
 * recognises VXLAN (UDP destination port 4789) as a tunnel. It never reads
 * past pkt->len: a header cut short or inconsistent is reported, not
 * guessed at. Bytes past the IP total length (Ethernet padding) are ignored. */
#ifndef FS_PARSE_H
#define FS_PARSE_H

#include "flow.h"
#include "packet.h"
#include "proto.h"

#define PARSE_MAX_VLANS 2
#define PARSE_MAX_IPV6_EXT 8 /* more extension headers than this: malformed */

/* X-macro of parse results: name, description. PARSE_OK must stay first. */
#define PARSE_RESULTS(X)                                                       \
    X(OK, "parsed")                                                            \
    X(ETH_TRUNC, "Ethernet header truncated")                                  \
    X(VLAN_TRUNC, "VLAN tag truncated")                                        \
    X(VLAN_DEPTH, "more than two VLAN tags")                                   \
    X(ARP_TRUNC, "ARP header truncated")                                       \
    X(IP_TRUNC, "IP header or payload truncated")                              \
    X(IP_VERSION, "IP version does not match the ethertype")                   \
    X(IP_HLEN, "IPv4 header length below 20 bytes")                            \
    X(IP_LEN, "IP total length smaller than its header")                       \
    X(IPV6_EXT, "malformed or too many IPv6 extension headers")                \
    X(IPV6_RH, "IPv6 routing header that breaks its type's rules")            \
    X(L4_TRUNC, "L4 header truncated")                                         \
    X(TCP_HLEN, "TCP data offset out of range")                                \
    X(UDP_LEN, "UDP length inconsistent with the IP length")

enum parse_result {
#define PARSE_ENUM_(name, desc) PARSE_##name,
    PARSE_RESULTS(PARSE_ENUM_)
#undef PARSE_ENUM_
    PARSE_N_RESULTS
};

/* The PKT_F_* bits the parser owns. */
#define PARSE_OWN_FLAGS                                                        \
    (PKT_F_PARSED | PKT_F_FRAG | PKT_F_FRAG_LATER | PKT_F_VXLAN | PKT_F_L4 |     \
     PKT_F_IPV6_RH)

/* Forgets a parse: no offsets, no layers, none of the parser's flags (the
 * layout of a received packet, pkt_reset_meta()). Other flags stay. */
static inline void parse_reset_layout(struct pkt *pkt)
{
    pkt->l3_ofs = PKT_OFS_NONE;
    pkt->l4_ofs = PKT_OFS_NONE;
    pkt->payload_ofs = PKT_OFS_NONE;
    pkt->l4_len = 0;
    pkt->l3 = PKT_L3_NONE;
    pkt->l4_proto = 0;
    pkt->n_vlan = 0;
    pkt->flags = (uint16_t)(pkt->flags & ~PARSE_OWN_FLAGS);
}

/* True if the key parse_pkt() filled for pkt has no cold words
 * (!flow_key_cold()): the parser writes only hot fields for a frame
 * without an IPv6 or ARP layer (see struct flow_key). */
static inline bool parse_key_hot(const struct pkt *pkt)
{
    return pkt->l3 == PKT_L3_IPV4 || pkt->l3 == PKT_L3_NONE;
}

/* Short lower-case name of a result ("ok", "ip_trunc", ...). */
const char *parse_result_name(enum parse_result r);
const char *parse_result_desc(enum parse_result r);

/* Parses pkt->data[0..len) from the Ethernet header. Always zeroes and
 * fills *key as far as the headers are valid (key->in_port = pkt->in_port),
 * and sets pkt->l3_ofs, l4_ofs, l4_len, payload_ofs, l3, l4_proto, n_vlan
 * and PKT_F_* flags (offsets of absent layers are PKT_OFS_NONE).
 * Returns PARSE_OK, or the first problem found. */
enum parse_result parse_pkt(struct pkt *pkt, struct flow_key *key);

/* parse_pkt() without a key: the same checks, result and packet layout, for
 * packets whose answer does not depend on their key (fcache_port_simple()). */
enum parse_result parse_pkt_layout(struct pkt *pkt);

/* The destination address of an upper-layer pseudo-header over IPv6 (RFC
 * 8200 8.1): the final destination. 'ip' is the IPv6 header, 'hdrs_len'
 * the bytes from it to the upper-layer header (l4_ofs - l3_ofs of a parsed
 * packet, all of them present). The last routing header with segments left
 * not 0 names it; without one (PKT_F_IPV6_RH clear, where callers need not
 * ask) it is the Destination Address, ip + 24. NULL if that routing header
 * is of a type parse_ipv6_rh_final() (parse-inl.h) does not know (or the
 * chain does not fit hdrs_len): the pseudo-header cannot be built, only a
 * sum the sender left can be continued. */
const uint8_t *parse_ipv6_final_dst(const uint8_t *ip, uint32_t hdrs_len);

#endif
