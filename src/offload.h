/* offload.h: per-packet checksum states and the lazy resolver.
 *
 * Every packet carries, for outer IP, outer L4, inner IP and inner L4, one
 * of UNKNOWN, GOOD, BAD, PARTIAL (enum csum_state, packet.h):
 *  - rx: a device verdict or a virtio header sets them (NEEDS_CSUM =
 *    PARTIAL, DATA_VALID = GOOD); everything else starts UNKNOWN;
 *  - rewriting a header never computes a full checksum: set-field keeps
 *    GOOD/UNKNOWN/BAD packets so by incremental update (a BAD one stays
 *    BAD: the delta preserves the error), and PARTIAL stays PARTIAL;
 *  - pkt_send_prepare() at the egress port completes in software only the
 *    PARTIAL layers the port cannot take: a guest with guest-csum gets
 *    NEEDS_CSUM, a NIC with tx offload gets the pseudo-header sum in the
 *    field (its contract), everything else gets a computed checksum.
 * A PARTIAL L4 field's content is never trusted: the resolver rewrites the
 * pseudo-header sum from the current headers, so addresses changed after
 * the guest sent the packet are covered. Over IPv6 the pseudo-header takes
 * the final destination (RFC 8200 8.1), which a routing header in effect
 * names (parse_ipv6_final_dst()); behind one of a type we do not know no
 * pseudo-header can be built: a guest's NEEDS_CSUM is then completed from
 * the sum it left, as a virtio device does, or passed on to a guest. */
#ifndef FS_OFFLOAD_H
#define FS_OFFLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "packet.h"

/* FS_CSUM_OFF builds the datapath with the checksum machinery compiled out
 * (no batch summaries, no resolver, no device emulation): only the
 * benchmark baseline that measures what the machinery costs uses it. */
#ifdef FS_CSUM_OFF
#define FS_CSUM_MACHINERY 0
#else
#define FS_CSUM_MACHINERY 1
#endif

/* Checksum counters, an array indexed by enum csum_stat (one PMD's, or
 * sums). The per-layer counters take CSUM_L_N consecutive slots: layer l
 * of "completed in software" is n[CSUM_STAT_SW + l]. */
enum csum_stat {
    CSUM_STAT_SW = 0,                                   /* completed in software */
    CSUM_STAT_OFFLOADED = CSUM_STAT_SW + CSUM_L_N,      /* left PARTIAL to a port that fills it */
    CSUM_STAT_RX_BAD = CSUM_STAT_OFFLOADED + CSUM_L_N,  /* BAD verdicts seen at rx */
    CSUM_STAT_GUEST_PARTIAL = CSUM_STAT_RX_BAD + CSUM_L_N, /* passed PARTIAL to a guest */
    CSUM_STAT_RX_PARTIAL,      /* packets received with a PARTIAL L4 */
    CSUM_STAT_SW_VERIFIED,     /* checksums verified in software */
    CSUM_STAT_SW_VERIFY_FAILED, /* ... and found wrong */
    CSUM_STAT_BAD_FORWARDED,   /* BAD packets forwarded (bad-csum = forward) */
    CSUM_STAT_SW_BYTES,        /* bytes summed to complete checksums in software */
    CSUM_STAT_SW_VERIFY_BYTES, /* bytes summed to verify checksums in software */
    CSUM_N_STATS
};

struct csum_stats {
    uint64_t n[CSUM_N_STATS];
};

static inline enum csum_state pkt_csum_get(const struct pkt *p, enum csum_layer l)
{
    return (enum csum_state)p->csum[l];
}

static inline void pkt_csum_set(struct pkt *p, enum csum_layer l, enum csum_state s)
{
    p->csum[l] = (uint8_t)s;
}

/* True if some layer of p is PARTIAL. */
static inline bool pkt_csum_any_partial(const struct pkt *p)
{
    /* Branch-free: states are 0..3 and PARTIAL is the only one with both
     * low bits set, so a byte is PARTIAL iff bit 0 of (v & v >> 1) is set
     * in it (bit 7 of each byte catches a neighbour's bit: masked off). */
    _Static_assert(CSUM_L_N == 4, "four state bytes");
    _Static_assert(CSUM_PARTIAL == 3 && CSUM_BAD == 2 && CSUM_GOOD == 1,
                   "PARTIAL is the one state with bits 0 and 1 set");
    uint32_t v;
    memcpy(&v, p->csum, 4);
    return (v & (v >> 1) & 0x01010101u) != 0;
}

/* True if some layer of p is BAD. */
static inline bool pkt_csum_any_bad(const struct pkt *p)
{
    return p->csum[0] == CSUM_BAD || p->csum[1] == CSUM_BAD ||
           p->csum[2] == CSUM_BAD || p->csum[3] == CSUM_BAD;
}

/* Result of pkt_send_prepare(). */
enum csum_prep {
    CSUM_PREP_OK = 0,
    CSUM_PREP_INVALID, /* a PARTIAL layer with no usable location: drop */
};

/* Resolves p's PARTIAL layers for a port with capability flags 'caps'
 * (NETDEV_TX_*): completes in software what the port cannot fill and marks
 * it GOOD; for a guest-csum port leaves the L4 PARTIAL with PKT_F_VNET_CSUM,
 * csum_start and csum_offset set and the pseudo-header sum in the field;
 * for a tx-l4-csum / tx-ip-csum port leaves the layer PARTIAL with the
 * pseudo-header sum in the L4 field. The packet must have been parsed
 * (offsets valid) unless it carries PKT_F_VNET_CSUM, whose location is
 * then used as the virtio spec says. Counts into st (may be NULL). */
enum csum_prep pkt_send_prepare(struct pkt *p, uint32_t caps, struct csum_stats *st);

/* Completes every PARTIAL layer of p in software regardless of caps (what
 * an emulated NIC does for the offloads it announced). */
enum csum_prep pkt_csum_complete(struct pkt *p, struct csum_stats *st);

/* Emulates a NIC's rx checksum verification ('rx_caps': NETDEV_RX_*) on a
 * freshly received frame: parses it, verifies the IPv4 header and TCP/UDP
 * checksums in software and sets GOOD/BAD verdicts (UNKNOWN where the layer
 * is absent or not covered; an IPv4 UDP checksum of 0 is GOOD). Leaves a
 * PARTIAL layer alone, and the packet unparsed (parse_reset_layout()), as
 * netdev_class.rxq_recv() delivers packets. */
void pkt_rx_verify_emulate(struct pkt *p, uint32_t rx_caps);

/* The batch summary flags (PKT_BATCH_F_*) one packet contributes; a
 * backend ORs them into batch->flags for every packet it delivers (and may
 * count its verdicts from them: GOOD without BAD = the device vouched). */
static inline uint16_t pkt_batch_flags_of(const struct pkt *p)
{
    uint32_t s;
    memcpy(&s, p->csum, sizeof s);
    if (!FS_CSUM_MACHINERY || !s)
        return 0; /* all UNKNOWN: the common case, one test */
    /* Per byte (states 0..3): GOOD = 01, BAD = 10, PARTIAL = 11. */
    if (!(s & 0x02020202u))
        return PKT_BATCH_F_GOOD; /* GOOD and UNKNOWN only: the next case */
    uint32_t lo = s & 0x01010101u, hi = (s >> 1) & 0x01010101u;
    return (uint16_t)(((lo & hi) ? PKT_BATCH_F_PARTIAL : 0) |
                      ((hi & ~lo) ? PKT_BATCH_F_BAD : 0) |
                      ((lo & ~hi) ? PKT_BATCH_F_GOOD : 0));
}

/* What an emulated device (dummy, pcap) does with a packet it is asked to
 * send, given the offloads it announced ('caps', NETDEV_TX_*): completes an
 * announced IP/L4 offload in software as the hardware would, leaves a
 * PARTIAL L4 with PKT_F_VNET_CSUM to a guest-csum peer, and returns false
 * for a packet carrying a PARTIAL layer the device did not announce (the
 * device drops it and counts offload_contract). */
bool pkt_tx_emulate_slow(struct pkt *p, uint32_t caps);

static inline bool pkt_tx_emulate(struct pkt *p, uint32_t caps)
{
    if (!FS_CSUM_MACHINERY || !pkt_csum_any_partial(p))
        return true;
    return pkt_tx_emulate_slow(p, caps);
}

/* The outer UDP checksum of an encapsulated packet whose inner L4 checksum
 * is complete (the inner payload then cancels out: only headers are
 * summed; an inner layer whose pseudo-header cannot be built is summed in
 * full), or of any packet by summing everything (pkt_outer_udp_csum_full).
 * Both return the value for the field (a computed 0 as 0xFFFF). */
uint16_t pkt_outer_udp_csum_short(const struct pkt *pkt);
/* The pseudo-header sum (unfolded) of the outer UDP header at l3/l4, with
 * the Destination Address: the packet must be parsed (PKT_F_PARSED, IPv4
 * or IPv6, l4_proto UDP) and its outer IPv6 header have no routing header
 * in effect (PKT_F_IPV6_RH clear), as tnl_push() builds it and as tnl_pop()
 * requires. */
uint32_t pkt_outer_udp_pseudo(const struct pkt *pkt);
uint16_t pkt_outer_udp_csum_full(const struct pkt *pkt);

#endif
