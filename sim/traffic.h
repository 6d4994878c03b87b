/* traffic.h: the traffic model (TRex-profile-like), one instance per
 * offered stream.
 *
 * A model has 'flows' flow slots. Each packet picks a slot by popularity
 * (uniform, or Zipf over the slot ranks: slot 0 is the most popular),
 * takes the flow in that slot and its next per-flow sequence number, and
 * builds a real frame: Ethernet [802.1Q] then IPv4 or IPv6 with TCP, UDP
 * or ICMP/ICMPv6 echo, or ARP, optionally inside VXLAN (outer IPv4/UDP
 * 4789). Checksums are correct except for a configured share of packets
 * whose L4 or IPv4 header checksum (or VXLAN outer IP/UDP checksum) is
 * deliberately wrong. Churn replaces, at constant virtual-time spacing,
 * the flow of a random slot by a new flow.
 *
 * Identity and regeneration. Flows are numbered by generation: slot i
 * starts with flow i, and churn gives each replacement the next number. A
 * flow's identity (family, protocol, VLAN, VXLAN, addresses, ports) is a
 * pure function of (seed, model id, flow id), and a packet's content of
 * (seed, model id, flow id, sequence number): sim_traffic_flow() and
 * sim_traffic_build() rebuild either at any time, so a sink can check
 * what arrived against what was sent without storing anything.
 *
 * The payload tag. When the frame has room (16 bytes after the innermost
 * L4 header, or after the ARP body in the padding), the payload starts
 * with SIM_TAG_LEN bytes, big-endian: magic SIM_TAG_MAGIC (2 bytes), model
 * id (2), flow id (6), sequence number (6). The rest of the payload is a
 * window, chosen by a hash of (flow, seq), of a table of pseudo-random
 * bytes the model draws from its seed and id. Frames without room
 * (64-byte TCP over IPv4, IPv6 at 64 bytes, ...) are untagged, and are
 * never given a bad checksum (a sink could not tell it from a fault).
 *
 * Sizes. Frame sizes are counted as on the wire with the 4-byte FCS (RFC
 * 2544: a "64-byte frame" is 60 bytes of buffer); buffers never hold the
 * FCS. A frame too small for its headers grows to fit them (at least 60
 * bytes of buffer). For VXLAN packets the drawn size is the inner frame's
 * and the outer headers add 50 bytes (54 with a VLAN tag). Offered rates
 * in bits per second count frame + FCS + 20 bytes of preamble and
 * inter-frame gap per packet, so 10 Gb/s of 64-byte frames is 14.88 Mpps.
 *
 * Arrivals, in ns of virtual time from 0: constant (exact spacing: a pps
 * rate spaces packets 1/rate apart, a bit rate spaces each packet by its
 * own wire time at that rate), poisson (exponential gaps of the same
 * means), or bursty:B (B frames back to back at the line rate, bursts
 * starting when the offered rate would have sent them, never before the
 * previous burst ends).
 *
 * Randomness: arrivals, slot picks and churn victims each have their own
 * stream (sim/rng.h: seed, SIM_RNG_STREAM(SIM_TRAFFIC_RNG_DOMAIN,
 * id << 8 | purpose)), so changing the size mix leaves arrival times and
 * flow picks as they were; identities and per-packet choices are hashed.
 * Memory: 8 bytes per flow slot (16 with churn), 26 KB of payload
 * table. No globals. */
#ifndef SIM_TRAFFIC_H
#define SIM_TRAFFIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "packet.h"

/* The rng stream domain of traffic models: other models use others. */
#define SIM_TRAFFIC_RNG_DOMAIN 1

#define SIM_TAG_LEN 16
#define SIM_TAG_MAGIC 0x51a7u

#define SIM_TRAFFIC_FLOWS_MAX 100000000u
#define SIM_TRAFFIC_SIZE_MIN 64u     /* on the wire, with FCS */
#define SIM_TRAFFIC_SIZE_MAX 9216u
#define SIM_TRAFFIC_SIZES_MAX 16     /* entries of a size table */
/* The longest buffer a model builds: the largest size without FCS, plus
 * VXLAN outer headers with a VLAN tag. */
#define SIM_TRAFFIC_FRAME_MAX (SIM_TRAFFIC_SIZE_MAX - 4 + 54)

enum sim_proto {
    SIM_PROTO_TCP,
    SIM_PROTO_UDP,
    SIM_PROTO_ICMP, /* ICMP echo request, ICMPv6 echo request on IPv6 */
    SIM_PROTO_ARP,  /* ARP request (IPv4 only) */
    SIM_PROTO_N
};

enum sim_popularity { SIM_POP_UNIFORM, SIM_POP_ZIPF };
enum sim_arrivals { SIM_ARR_CONSTANT, SIM_ARR_POISSON, SIM_ARR_BURSTY };
enum sim_rate_unit { SIM_RATE_PPS, SIM_RATE_BPS, SIM_RATE_LINE_PCT };

/* Which checksum a "bad" packet gets wrong. L4 and IP are the innermost
 * frame's (of a VXLAN packet, the inner one's); the OUTER ones apply to
 * VXLAN packets only. A packet without that layer stays correct. */
enum sim_bad_layer {
    SIM_BAD_NONE = 0,
    SIM_BAD_L4,
    SIM_BAD_IP,
    SIM_BAD_OUTER_IP,
    SIM_BAD_OUTER_UDP,
};

/* A protocol mix: weights per protocol (any scale) and the share of IP
 * flows on IPv6. */
struct sim_traffic_mix {
    double weight[SIM_PROTO_N];
    double ipv6_share;
};

/* A model's settings. Fill with sim_traffic_cfg_default() and
 * sim_traffic_cfg_set(); the fields are readable by the engine. Addresses
 * in network order. */
struct sim_traffic_cfg {
    uint32_t flows;
    enum sim_popularity popularity;
    double zipf_s;
    double churn;                       /* new flows per second */
    unsigned n_sizes;                   /* frame sizes on the wire, with weights */
    uint16_t size[SIM_TRAFFIC_SIZES_MAX];
    double size_weight[SIM_TRAFFIC_SIZES_MAX];
    struct sim_traffic_mix mix;         /* flows outside VXLAN */
    double vlan_share;
    uint16_t vlan_lo, vlan_hi;          /* VIDs drawn per flow from this range */
    uint8_t vlan_pcp;
    double vxlan_share;
    struct sim_traffic_mix inner;       /* flows inside VXLAN */
    uint32_t vni;
    uint8_t vxlan_src_mac[6], vxlan_dst_mac[6];
    uint8_t vxlan_src_ip[4], vxlan_dst_ip[4];
    bool vxlan_udp_csum;                /* outer UDP checksum (else 0) */
    double bad_share;                   /* of tagged packets */
    enum sim_bad_layer bad_layer;
    enum sim_rate_unit rate_unit;
    double rate;                        /* pps, bit/s, or % of the line rate */
    enum sim_arrivals arrivals;
    uint32_t burst;                     /* frames per burst (bursty) */
    uint8_t src_mac[6], dst_mac[6];
    uint8_t src_ip4[4], dst_ip4[4];     /* prefixes: flows draw the host bits */
    uint8_t src_ip4_len, dst_ip4_len;
    uint8_t src_ip6[16], dst_ip6[16];
    uint8_t src_ip6_len, dst_ip6_len;
    uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
    uint8_t ttl;                        /* IPv4 TTL / IPv6 hop limit, also outer */
};

/* The defaults: 1 flow, uniform, no churn, 64-byte UDP over IPv4, no VLAN,
 * VXLAN or bad checksums, 1 Mpps constant; MACs 02:00:00:00:00:01 ->
 * :02, 10.0.0.0/16 -> 10.1.0.0/16, 2001:db8:0:1::/64 -> 2001:db8:0:2::/64,
 * ports 1024-65535, TTL 64; VXLAN VNI 42 from 192.0.2.1 to 192.0.2.2
 * (MACs 02:00:00:00:01:01 -> :02), outer UDP checksum off. */
void sim_traffic_cfg_default(struct sim_traffic_cfg *cfg);

/* Sets one key from its text value, as a scenario file gives it:
 *   flows = N                     1..100000000
 *   popularity = uniform | zipf:S     S >= 0
 *   churn = R                     new flows per second, 0..1e9
 *   frame-size = N | imix | N:W,N:W,...   64..9216 with FCS; imix is
 *                                 64:7,594:4,1518:1
 *   proto = tcp:W,udp:W,icmp:W,arp:W  any subset; a bare name is weight 1
 *   ipv6-share, vlan-share, vxlan-share, bad-csum-share = F   0..1
 *   vlan-id = N | N-M  (0..4095), vlan-pcp = 0..7
 *   vxlan-vni = 0..16777215, vxlan-src-ip, vxlan-dst-ip = IPv4,
 *   vxlan-src-mac, vxlan-dst-mac = MAC, vxlan-udp-csum = true | false,
 *   vxlan-inner-proto = (as proto), vxlan-inner-ipv6-share = F
 *   bad-csum-layer = l4 | ip | outer-ip | outer-udp
 *   rate = N pps|kpps|mpps | N bps|kbps|mbps|gbps | N%  (% of the line rate)
 *   arrivals = constant | poisson | bursty:B     B = 1..1000000
 *   src-mac, dst-mac = MAC; src-ip, dst-ip = IPv4[/LEN];
 *   src-ip6, dst-ip6 = IPv6[/LEN]; src-port, dst-port = N | N-M; ttl = 1..255
 * Returns 0, or -1 with a reason naming the key in err (the caller adds
 * file:line) and cfg unchanged. */
int sim_traffic_cfg_set(struct sim_traffic_cfg *cfg, const char *key, const char *value,
                        char *err, size_t errlen);

/* The longest buffer a model with these settings builds: its largest
 * frame size without the FCS, or the longest headers it may need
 * (Ethernet with a VLAN tag, IPv6, TCP) if larger, plus the VXLAN outer
 * headers with a VLAN tag if it sends VXLAN. Sizes buffers to the traffic
 * (at most SIM_TRAFFIC_FRAME_MAX). */
size_t sim_traffic_frame_max(const struct sim_traffic_cfg *cfg);

/* Checks the settings as a whole (e.g. an outer-* bad-csum-layer needs
 * VXLAN). Returns 0, or -1 with the reason in err. */
int sim_traffic_cfg_validate(const struct sim_traffic_cfg *cfg, char *err, size_t errlen);

/* The upper bound of 'churn' (new flows per second). */
#define SIM_TRAFFIC_CHURN_MAX 1e9

/* The offered rate of a stream in bits/s on the wire (preamble and gap
 * included) of a port of line rate line_bps (for '%' rates). */
double sim_traffic_cfg_wire_bps(const struct sim_traffic_cfg *cfg, uint64_t line_bps);

/* The offered packet rate of cfg into a port of line rate line_bps (for
 * rates given in bits/s or % of the line: over the mean frame on the wire,
 * preamble and gap included, VXLAN's outer headers added). */
double sim_traffic_cfg_pps(const struct sim_traffic_cfg *cfg, uint64_t line_bps);

/* A flow's identity. The addresses and VLAN are those of the frame the
 * flow sends (for VXLAN flows: of the inner frame; the VLAN tag, if any,
 * is on the outer Ethernet header); IPv4 addresses in the first 4 bytes. */
struct sim_flow_desc {
    uint64_t id;
    uint8_t proto;          /* enum sim_proto */
    bool ipv6;
    bool vlan;
    uint16_t vlan_tci;      /* PCP << 13 | VID */
    bool vxlan;
    uint32_t vni;
    uint16_t outer_sport;   /* VXLAN outer UDP source port, 49152..65535 */
    uint8_t src_mac[6], dst_mac[6];
    uint8_t src_ip[16], dst_ip[16];
    uint16_t sport, dport;  /* TCP/UDP ports; ICMP echo identifier in sport.
                             * A UDP dport drawn as 4789 (VXLAN) moves to the
                             * next port of the range, unless 4789 is the range */
    uint32_t flow_label;    /* IPv6 flow label */
};

/* What was generated. */
struct sim_traffic_info {
    uint64_t arrival_ns;
    uint64_t flow_id;
    uint64_t seq;           /* per-flow, from 0 */
    uint64_t slot;          /* popularity rank - 1 (regeneration: UINT64_MAX) */
    uint32_t wire_bytes;    /* frame_len + 4 (FCS) */
    uint32_t frame_len;     /* bytes in the buffer */
    uint16_t model_id;
    uint8_t proto;          /* enum sim_proto */
    bool ipv6, vlan, vxlan;
    bool tagged;
    uint16_t tag_ofs;       /* offset of the tag in the frame when tagged */
    uint8_t bad;            /* enum sim_bad_layer actually corrupted */
};

struct sim_traffic;

/* A model from validated settings: run seed 'seed', model id 'id' (in the
 * tags and in its rng streams: ids must differ between the models of a
 * run). line_bps is the line rate of the port it feeds (bits/s): needed by
 * '%' rates and bursty arrivals, 0 if unknown. NULL with the reason in err
 * on bad settings, a missing line rate, or no memory. */
struct sim_traffic *sim_traffic_new(const struct sim_traffic_cfg *cfg, uint64_t seed,
                                    uint16_t id, double line_bps, char *err, size_t errlen);

void sim_traffic_destroy(struct sim_traffic *t);

uint16_t sim_traffic_id(const struct sim_traffic *t);

/* Flow ids handed out so far (flows + the churn replacements). */
uint64_t sim_traffic_flows_created(const struct sim_traffic *t);

/* The next packet in arrival order: *arrival_ns (non-decreasing), a heap
 * packet (pkt_from_data(): PKT_HEADROOM of headroom, a buffer ending at
 * the frame, fresh metadata; the caller owns it and frees it with
 * pkt_free()) and what it is. Returns 0, or -1 if no packet could be
 * allocated (the packet is then lost, its sequence number skipped). */
int sim_traffic_next(struct sim_traffic *t, uint64_t *arrival_ns, struct pkt **pkt,
                     struct sim_traffic_info *info);

/* sim_traffic_next() into a caller's buffer (at least SIM_TRAFFIC_FRAME_MAX
 * bytes): the frame's length is returned, info->arrival_ns is its arrival
 * time. */
size_t sim_traffic_next_frame(struct sim_traffic *t, uint8_t *buf, struct sim_traffic_info *info);

/* The arrival time of the packet the next call will generate. */
uint64_t sim_traffic_next_time(const struct sim_traffic *t);

/* The flow the next call will most likely generate a packet of (churn may
 * replace it first): a hint, to prefetch what a packet of it will touch. */
uint64_t sim_traffic_peek_flow(const struct sim_traffic *t);

/* The identity of flow 'flow_id' (any id: those not yet created too). */
void sim_traffic_flow(const struct sim_traffic *t, uint64_t flow_id, struct sim_flow_desc *d);

/* Writes the frame of packet (flow_id, seq) into buf (size at least
 * SIM_TRAFFIC_FRAME_MAX): the same bytes sim_traffic_next() produced for
 * it. Returns the frame length; *info is filled except arrival_ns and
 * slot. */
size_t sim_traffic_build(const struct sim_traffic *t, uint64_t flow_id, uint64_t seq,
                         uint8_t *buf, struct sim_traffic_info *info);

/* sim_traffic_build() into a new heap packet (NULL if out of memory). */
struct pkt *sim_traffic_regenerate(const struct sim_traffic *t, uint64_t flow_id, uint64_t seq,
                                   struct sim_traffic_info *info);

/* Reads the tag at frame[ofs..]: true with its fields if the magic is
 * there and the 16 bytes fit in len. */
bool sim_tag_read(const uint8_t *frame, size_t len, size_t ofs, uint16_t *model_id,
                  uint64_t *flow_id, uint64_t *seq);

#endif
