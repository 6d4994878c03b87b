/* tunnel.h: VXLAN encapsulation and decapsulation (RFC 7348).
 *
 * A tunnel port ("[port vx0]" with "type = vxlan") is a datapath port with
 * no device: output to it pushes outer Ethernet/IP/UDP/VXLAN headers and
 * sends the result on its underlay port; a VXLAN packet arriving on the
 * underlay port for the tunnel's local IP and UDP port is popped and
 * continues through the rules with in_port = the tunnel port and the
 * tunnel metadata (tun_id, tun_src, tun_dst) in its flow key.
 *
 * Checksums (see offload.h): at push the packet's outer states move to the
 * inner layers (a guest's PARTIAL inner TCP stays PARTIAL and is completed
 * or offloaded at the egress port), the outer IPv4 header checksum is
 * PARTIAL, the outer UDP checksum is PARTIAL with csum = true and 0 (GOOD)
 * otherwise. At pop the outer IPv4 and UDP checksums are verified in
 * software only when their rx state is UNKNOWN (GOOD skips the work, BAD
 * drops), a zero UDP checksum is never verified (IPv4: "none"; IPv6:
 * accepted for tunnels, RFC 6935), and every state is reset: the device's
 * verdict covered the outer headers only. */
#ifndef FS_TUNNEL_H
#define FS_TUNNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "flow.h"
#include "netdev.h"
#include "offload.h"
#include "packet.h"
#include "proto.h"

#define TNL_HLEN_V4 (ETH_HLEN + IPV4_HLEN + UDP_HLEN + VXLAN_HLEN) /* 50 */
#define TNL_HLEN_V6 (ETH_HLEN + IPV6_HLEN + UDP_HLEN + VXLAN_HLEN) /* 70 */

/* One tunnel port's configuration. Addresses in network order; IPv4 ones
 * in the first 4 bytes. */
struct tnl_cfg {
    bool ipv6;            /* underlay family */
    uint8_t local_ip[16];
    uint8_t remote_ip[16];
    uint32_t vni;         /* 0..2^24-1 */
    bool vni_flow;        /* vni = flow: taken from set_tunnel at output */
    uint16_t dst_port;    /* default 4789 */
    bool csum;            /* outer UDP checksum (default: false v4, true v6) */
    uint8_t ttl;          /* default 64 */
    uint8_t tos;          /* default 0 */
    bool df;              /* IPv4 don't-fragment bit, default true */
    uint16_t underlay;    /* datapath port number of the underlay port */
    uint8_t src_mac[6];   /* outer Ethernet source (zero if not given) */
    uint8_t dst_mac[6];   /* next hop (zero if not given) */
};

/* Drop reasons of decapsulation (mapped to drop.h reasons by the caller). */
enum tnl_pop_result {
    TNL_POP_OK = 0,
    TNL_POP_NOT_TUNNEL,  /* not VXLAN to a local tunnel: process as usual */
    TNL_POP_TRUNC,       /* outer headers truncated */
    TNL_POP_IP_OPTIONS,  /* outer IPv4 with options (unsupported) */
    TNL_POP_UDP_LEN,     /* UDP length disagrees with the IP length */
    TNL_POP_BAD_CSUM,    /* outer IPv4 or UDP checksum wrong */
    TNL_POP_UNKNOWN_VNI, /* VXLAN for a local address with no such VNI */
    TNL_POP_BAD_VXLAN,   /* VXLAN I flag clear, or reserved bits set */
    TNL_POP_NOT_ETHERNET, /* the payload is too short for an Ethernet frame */
    TNL_POP_N
};

const char *tnl_pop_result_name(enum tnl_pop_result r);

/* Fills t from a tunnel port's options (underlay, local-ip, remote-ip,
 * vni, dst-port, csum, ttl, tos, df, src-mac, next-hop-mac); 'underlay'
 * is resolved with port_lookup (it returns a port number or -1) and must be
 * below max_port. src-mac and next-hop-mac may be left out by a port that
 * only decapsulates (tnl_encap_missing()). Returns 0,
 * or -1 with the reason (naming the option) in err. */
int tnl_cfg_parse(struct tnl_cfg *t, const struct netdev_args *args,
                  int (*port_lookup)(void *aux, const char *name), void *aux,
                  int max_port, char *err, size_t errlen);

/* The first option a tunnel port with options 'args' lacks to encapsulate
 * ("src-mac", "next-hop-mac"), or NULL if it can: a port without them
 * only decapsulates, and no rule may output to it. */
const char *tnl_encap_missing(const struct netdev_args *args);

/* Outer header length of t's encapsulation. */
unsigned tnl_hlen(const struct tnl_cfg *t);

/* The outer UDP source port for an inner flow hash: stable across runs,
 * spread over 49152..65535 (RFC 7348 section 5). */
uint16_t tnl_src_port(uint32_t inner_hash);

/* Pushes t's outer headers with the given VNI onto pkt, which must be
 * parsed. Offsets: l3/l4 now describe the outer IP/UDP, inner_* the old
 * layers; checksum states move as described above. The headroom is grown
 * if short (*grew set). Returns 0, or -1 if the headroom cannot be grown. */
int tnl_push(struct pkt *pkt, const struct tnl_cfg *t, uint32_t vni,
             uint32_t inner_hash, bool *grew);

/* Decapsulation of a parsed packet received on an underlay port: finds the
 * tunnel among tunnels[0..n) (local IP = outer destination, dst_port = UDP
 * destination, vni = VXLAN VNI; a vni_flow tunnel accepts any VNI),
 * validates as described above, strips the outer headers, resets the
 * states and sets *which and the tunnel fields of *key (tun_id, tun_src,
 * tun_dst); the caller re-parses the inner frame (key fields other than
 * the tunnel's are then overwritten). Counts software verifications in st. */
enum tnl_pop_result tnl_pop(struct pkt *pkt, const struct tnl_cfg *tunnels, unsigned n,
                            unsigned *which, struct flow_key *key, struct csum_stats *st);

#endif
