/* proto.h: protocol numbers and header sizes, defined once.
 *
 * Every module that reads or writes headers (parser, rules, actions,
 * checksum resolver, tunnels, backends) names these; none spells the
 * numbers itself. Values are host order; the wire is big endian. */
#ifndef FS_PROTO_H
#define FS_PROTO_H

/* Ethernet (IEEE 802.3) and VLAN tags (802.1Q, 802.1ad). */
#define ETH_ADDR_LEN 6
#define ETH_HLEN 14
#define VLAN_HLEN 4
#define ETH_TYPE_IPV4 0x0800
#define ETH_TYPE_ARP 0x0806
#define ETH_TYPE_VLAN 0x8100
#define ETH_TYPE_QINQ 0x88a8
#define ETH_TYPE_IPV6 0x86dd

/* IP protocol / IPv6 next-header numbers (IANA). */
#define IP_PROTO_HOPOPTS 0
#define IP_PROTO_ICMP 1
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define IP_PROTO_ROUTING 43
#define IP_PROTO_FRAGMENT 44
#define IP_PROTO_ICMPV6 58
#define IP_PROTO_DSTOPTS 60
#define IP_PROTO_SCTP 132

/* Fixed header sizes. */
#define IPV4_HLEN 20
#define IPV6_HLEN 40
#define TCP_HLEN_MIN 20
#define UDP_HLEN 8
#define SCTP_HLEN 12
#define ICMP_HLEN 4
#define VXLAN_HLEN 8

/* The IANA-assigned VXLAN UDP port (RFC 7348). */
#define VXLAN_UDP_PORT 4789

#endif
