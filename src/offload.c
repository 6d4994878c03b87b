/* offload.c: the lazy checksum resolver and the emulated rx verifier. */
#include "offload.h"

#include <string.h>

#include "csum.h"
#include "flow.h"
#include "netdev-caps.h"
#include "parse.h"
#include "proto.h"

/* One IP layer of a packet: the packet itself, or the inner packet of one
 * we encapsulated. */
struct ol_view {
    uint8_t l3;       /* enum pkt_l3 */
    uint16_t l3_ofs;
    uint8_t l4_proto;
    uint16_t l4_ofs;
    uint16_t l4_len;
    bool l4;          /* complete L4 header */
    bool frag;
    bool rh;          /* IPv6 with a routing header in effect (PKT_F_IPV6_RH) */
};

static struct ol_view view_outer(const struct pkt *p)
{
    struct ol_view v = {
        .l3 = (p->flags & PKT_F_PARSED) ? p->l3 : PKT_L3_NONE,
        .l3_ofs = p->l3_ofs,
        .l4_proto = p->l4_proto,
        .l4_ofs = p->l4_ofs,
        .l4_len = p->l4_len,
        .l4 = (p->flags & PKT_F_L4) != 0,
        .frag = (p->flags & PKT_F_FRAG) != 0,
        .rh = (p->flags & PKT_F_IPV6_RH) != 0,
    };
    return v;
}

static struct ol_view view_inner(const struct pkt *p)
{
    struct ol_view v = {
        .l3 = (p->flags & PKT_F_TUNNEL) ? p->inner_l3 : PKT_L3_NONE,
        .l3_ofs = p->inner_l3_ofs,
        .l4_proto = p->inner_l4_proto,
        .l4_ofs = p->inner_l4_ofs,
        .l4_len = p->inner_l4_len,
        .l4 = (p->inner_flags & PKT_IF_L4) != 0,
        .frag = (p->inner_flags & PKT_IF_FRAG) != 0,
        .rh = (p->inner_flags & PKT_IF_IPV6_RH) != 0,
    };
    return v;
}

/* Offset of the checksum field inside the L4 header of 'proto', or -1. */
static int l4_csum_field(uint8_t proto)
{
    switch (proto) {
    case IP_PROTO_TCP:
        return 16;
    case IP_PROTO_UDP:
        return 6;
    case IP_PROTO_ICMP:
    case IP_PROTO_ICMPV6:
        return 2;
    default:
        return -1;
    }
}

/* The destination address of v's IPv6 pseudo-header: the final destination
 * (RFC 8200 8.1), which a routing header in effect names; NULL if that
 * header's type is unknown to us. */
static const uint8_t *pseudo_dst6(const struct pkt *p, const struct ol_view *v)
{
    const uint8_t *ip = p->data + v->l3_ofs;
    if (!v->rh)
        return ip + 24;
    return parse_ipv6_final_dst(ip, (uint32_t)(v->l4_ofs - v->l3_ofs));
}

/* True if v's L4 layer is one whose checksum we can compute from the
 * headers: a complete, unfragmented TCP/UDP/ICMP/ICMPv6 segment entirely
 * present in the buffer, whose pseudo-header we can build. */
static bool l4_known(const struct pkt *p, const struct ol_view *v)
{
    return v->l4 && !v->frag && l4_csum_field(v->l4_proto) >= 0 &&
           (v->l3 == PKT_L3_IPV4 || v->l3 == PKT_L3_IPV6) &&
           v->l4_ofs != PKT_OFS_NONE && (uint32_t)v->l4_ofs + v->l4_len <= p->len &&
           !(v->l3 == PKT_L3_IPV4 && v->l4_proto == IP_PROTO_ICMPV6) &&
           !(v->l3 == PKT_L3_IPV6 && v->l4_proto == IP_PROTO_ICMP) &&
           !(v->rh && !pseudo_dst6(p, v));
}

/* The pseudo-header sum of v's L4 layer (0 for ICMPv4, which has none);
 * v's layer must be l4_known(). */
static uint32_t l4_pseudo(const struct pkt *p, const struct ol_view *v)
{
    const uint8_t *ip = p->data + v->l3_ofs;
    if (v->l4_proto == IP_PROTO_ICMP)
        return 0;
    if (v->l3 == PKT_L3_IPV4) {
        uint32_t src, dst;
        memcpy(&src, ip + 12, 4);
        memcpy(&dst, ip + 16, 4);
        return csum_pseudo_ipv4(src, dst, v->l4_proto, v->l4_len);
    }
    return csum_pseudo_ipv6(ip + 8, pseudo_dst6(p, v), v->l4_proto, v->l4_len);
}

static bool ipv4_known(const struct pkt *p, const struct ol_view *v)
{
    return v->l3 == PKT_L3_IPV4 && v->l3_ofs != PKT_OFS_NONE &&
           (uint32_t)v->l3_ofs + 20 <= p->len &&
           (uint32_t)v->l3_ofs + (uint32_t)(p->data[v->l3_ofs] & 0x0f) * 4 <= p->len;
}

/* Counts a checksum of 'layer' completed in software over 'bytes'. */
static void csum_count_sw(struct csum_stats *st, enum csum_layer layer, uint32_t bytes)
{
    if (st) {
        st->n[CSUM_STAT_SW + layer]++;
        st->n[CSUM_STAT_SW_BYTES] += bytes;
    }
}

static void ipv4_complete(struct pkt *p, const struct ol_view *v)
{
    uint8_t *ip = p->data + v->l3_ofs;
    size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
    pkt_st16(ip + 10, csum_ipv4_hdr(ip, ihl));
}

/* Writes the full checksum over v's known L4 layer. */
static void l4_complete_known(struct pkt *p, const struct ol_view *v)
{
    uint8_t *l4 = p->data + v->l4_ofs;
    uint8_t *field = l4 + l4_csum_field(v->l4_proto);
    pkt_st16(field, 0);
    uint16_t c = csum_fold(csum_partial(l4, v->l4_len, l4_pseudo(p, v)));
    if (v->l4_proto == IP_PROTO_UDP)
        c = csum_udp_field(c);
    pkt_st16(field, c);
}

/* The virtio spec's generic completion: sum from csum_start to the end of
 * the frame (the field holds the guest's pseudo-header sum) and store the
 * result at csum_start + csum_offset. Bounds were checked at rx; they are
 * checked again since headers may have been pushed or pulled since. */
static bool l4_complete_vnet(struct pkt *p)
{
    uint32_t start = p->csum_start, at = (uint32_t)p->csum_start + p->csum_offset;
    if (start > p->len || at + 2 > p->len)
        return false;
    uint16_t c = csum_fold(csum_partial(p->data + start, p->len - start, 0));
    /* As Linux does for any protocol: 0 and 0xFFFF are the same sum, and a
     * UDP field must never carry 0. */
    pkt_st16(p->data + at, c ? c : 0xffff);
    return true;
}

/* True if p's virtio location (if any) is v's L4 layer, so we may
 * recompute the pseudo-header sum ourselves. */
static bool vnet_matches_l4(const struct pkt *p, const struct ol_view *v)
{
    return !(p->flags & PKT_F_VNET_CSUM) ||
           (p->csum_start == v->l4_ofs && (int)p->csum_offset == l4_csum_field(v->l4_proto));
}

/* Leaves v's L4 PARTIAL for a device or guest: the pseudo-header sum in
 * the field and the location in csum_start/csum_offset. */
static void l4_leave_partial(struct pkt *p, const struct ol_view *v)
{
    uint8_t *field = p->data + v->l4_ofs + l4_csum_field(v->l4_proto);
    pkt_st16(field, csum_fold_nocompl(l4_pseudo(p, v)));
    p->flags |= PKT_F_VNET_CSUM;
    p->csum_start = v->l4_ofs;
    p->csum_offset = (uint16_t)l4_csum_field(v->l4_proto);
}

/* Completes (in software) v's PARTIAL L4 layer 'layer'. */
static enum csum_prep l4_complete(struct pkt *p, const struct ol_view *v,
                                  enum csum_layer layer, struct csum_stats *st)
{
    uint32_t bytes;
    if (l4_known(p, v) && vnet_matches_l4(p, v)) {
        l4_complete_known(p, v);
        bytes = v->l4_len;
    } else if (layer == CSUM_L_OUTER_L4 && (p->flags & PKT_F_VNET_CSUM) && l4_complete_vnet(p)) {
        bytes = p->len - p->csum_start;
    } else {
        return CSUM_PREP_INVALID;
    }
    p->flags &= (uint16_t)~PKT_F_VNET_CSUM;
    p->csum_start = p->csum_offset = 0;
    pkt_csum_set(p, layer, CSUM_GOOD);
    csum_count_sw(st, layer, bytes);
    return CSUM_PREP_OK;
}

static enum csum_prep ip_resolve(struct pkt *p, const struct ol_view *v,
                                 enum csum_layer layer, bool offload, struct csum_stats *st)
{
    if (pkt_csum_get(p, layer) != CSUM_PARTIAL)
        return CSUM_PREP_OK;
    if (!ipv4_known(p, v))
        return CSUM_PREP_INVALID;
    if (offload) {
        if (st)
            st->n[CSUM_STAT_OFFLOADED + layer]++;
        return CSUM_PREP_OK;
    }
    ipv4_complete(p, v);
    pkt_csum_set(p, layer, CSUM_GOOD);
    csum_count_sw(st, layer, (uint32_t)(p->data[v->l3_ofs] & 0x0f) * 4);
    return CSUM_PREP_OK;
}

/* A packet we did not encapsulate: one IP layer, the outer states. */
static enum csum_prep resolve_plain(struct pkt *p, uint32_t caps, bool force_sw,
                                    struct csum_stats *st)
{
    struct ol_view v = view_outer(p);
    if (ip_resolve(p, &v, CSUM_L_OUTER_IP, !force_sw && (caps & NETDEV_TX_IP_CSUM), st))
        return CSUM_PREP_INVALID;
    if (pkt_csum_get(p, CSUM_L_OUTER_L4) != CSUM_PARTIAL)
        return CSUM_PREP_OK;

    bool known = l4_known(p, &v) && vnet_matches_l4(p, &v);
    bool guest = !force_sw && (caps & NETDEV_TX_GUEST_CSUM);
    bool nic = !force_sw && (caps & NETDEV_TX_L4_CSUM);
    if (known && (guest || nic)) {
        l4_leave_partial(p, &v);
        if (st) {
            if (guest)
                st->n[CSUM_STAT_GUEST_PARTIAL]++;
            else
                st->n[CSUM_STAT_OFFLOADED + CSUM_L_OUTER_L4]++;
        }
        return CSUM_PREP_OK;
    }
    if (!known && (p->flags & PKT_F_VNET_CSUM) && guest) {
        /* A location we do not understand: pass it on as the guest gave it,
         * if it still lies inside the frame. */
        if ((uint32_t)p->csum_start + p->csum_offset + 2 > p->len)
            return CSUM_PREP_INVALID;
        if (st)
            st->n[CSUM_STAT_GUEST_PARTIAL]++;
        return CSUM_PREP_OK;
    }
    return l4_complete(p, &v, CSUM_L_OUTER_L4, st);
}

/* Sum of len bytes at 'data' as they would be summed if they started at an
 * odd offset of the checksummed region when 'odd' (bytes swap lanes). */
static uint32_t sum_at(const void *data, size_t len, bool odd)
{
    uint32_t s = csum_partial(data, len, 0);
    if (!odd)
        return s;
    uint16_t f = csum_fold_nocompl(s);
    return (uint32_t)(uint16_t)((f << 8) | (f >> 8));
}

uint32_t pkt_outer_udp_pseudo(const struct pkt *p)
{
    struct ol_view v = view_outer(p);
    return l4_pseudo(p, &v);
}

/* The outer UDP checksum over everything: pseudo-header + UDP header (with
 * the field as 0) + payload. */
uint16_t pkt_outer_udp_csum_full(const struct pkt *p)
{
    const uint8_t *udp = p->data + p->l4_ofs;
    uint32_t s = pkt_outer_udp_pseudo(p);
    s = csum_add(s, csum_partial(udp, 6, 0));
    s = csum_add(s, csum_partial(udp + 8, p->l4_len - 8u, 0));
    return csum_udp_field(csum_fold(s));
}

/* With the inner L4 checksum complete, its segment sums to the complement
 * of its pseudo-header sum, so only the headers in front of it (and any
 * bytes after it, such as inner Ethernet padding) need summing. */
uint16_t pkt_outer_udp_csum_short(const struct pkt *p)
{
    struct ol_view in = view_inner(p);
    if (!l4_known(p, &in))
        return pkt_outer_udp_csum_full(p); /* no pseudo-header to cancel with */
    const uint8_t *base = p->data + p->l4_ofs;
    uint32_t head = (uint32_t)(p->inner_l4_ofs - p->l4_ofs);
    uint32_t seg_end = head + p->inner_l4_len;
    uint32_t total = p->l4_len;
    uint16_t seg = (uint16_t)~csum_fold_nocompl(l4_pseudo(p, &in));
    if (head & 1)
        seg = (uint16_t)((seg << 8) | (seg >> 8));

    uint32_t s = pkt_outer_udp_pseudo(p);
    s = csum_add(s, csum_partial(base, 6, 0));
    s = csum_add(s, csum_partial(base + 8, head - 8, 0));
    s = csum_add(s, seg);
    if (seg_end < total)
        s = csum_add(s, sum_at(base + seg_end, total - seg_end, seg_end & 1));
    return csum_udp_field(csum_fold(s));
}

/* A packet we encapsulated: the inner layers first (the outer UDP checksum
 * covers them), then the outer IPv4 and UDP. */
static enum csum_prep resolve_tunnel(struct pkt *p, uint32_t caps, bool force_sw,
                                     struct csum_stats *st)
{
    struct ol_view in = view_inner(p), out = view_outer(p);
    bool outer_udp_partial = pkt_csum_get(p, CSUM_L_OUTER_L4) == CSUM_PARTIAL;
    bool outer_udp_sw = outer_udp_partial && (force_sw || !(caps & NETDEV_TX_OUTER_UDP_CSUM));

    if (ip_resolve(p, &in, CSUM_L_INNER_IP, !force_sw && (caps & NETDEV_TX_IP_CSUM), st))
        return CSUM_PREP_INVALID;
    if (pkt_csum_get(p, CSUM_L_INNER_L4) == CSUM_PARTIAL) {
        /* Offloading the inner L4 needs the device to do the outer UDP too
         * (or no outer UDP checksum): otherwise ours would be wrong. */
        bool offload = !force_sw && (caps & NETDEV_TX_L4_CSUM) && !outer_udp_sw &&
                       l4_known(p, &in);
        if (offload) {
            uint8_t *field = p->data + in.l4_ofs + l4_csum_field(in.l4_proto);
            pkt_st16(field, csum_fold_nocompl(l4_pseudo(p, &in)));
            if (st)
                st->n[CSUM_STAT_OFFLOADED + CSUM_L_INNER_L4]++;
        } else if (l4_known(p, &in)) {
            l4_complete_known(p, &in);
            pkt_csum_set(p, CSUM_L_INNER_L4, CSUM_GOOD);
            csum_count_sw(st, CSUM_L_INNER_L4, in.l4_len);
        } else {
            return CSUM_PREP_INVALID;
        }
    }
    if (ip_resolve(p, &out, CSUM_L_OUTER_IP,
                   !force_sw && (caps & NETDEV_TX_OUTER_IP_CSUM), st))
        return CSUM_PREP_INVALID;
    if (!outer_udp_partial)
        return CSUM_PREP_OK;
    uint8_t *field = p->data + out.l4_ofs + 6;
    if (!outer_udp_sw) {
        pkt_st16(field, csum_fold_nocompl(l4_pseudo(p, &out)));
        if (st)
            st->n[CSUM_STAT_OFFLOADED + CSUM_L_OUTER_L4]++;
        return CSUM_PREP_OK;
    }
    /* The inner checksum is now complete and was verified or computed by us
     * (GOOD): its payload cancels, only headers are summed. An UNKNOWN one
     * may be wrong, and a zero IPv4 UDP one is absent: sum everything. */
    uint8_t *ifield = l4_known(p, &in) ? p->data + in.l4_ofs + l4_csum_field(in.l4_proto) : NULL;
    bool shortcut = ifield && pkt_csum_get(p, CSUM_L_INNER_L4) == CSUM_GOOD &&
                    !(in.l4_proto == IP_PROTO_UDP && pkt_ld16(ifield) == 0);
    uint16_t c = shortcut ? pkt_outer_udp_csum_short(p) : pkt_outer_udp_csum_full(p);
    pkt_st16(field, c);
    pkt_csum_set(p, CSUM_L_OUTER_L4, CSUM_GOOD);
    /* The shortcut sums the headers in front of the inner segment. */
    csum_count_sw(st, CSUM_L_OUTER_L4,
                  shortcut ? (uint32_t)(in.l4_ofs - out.l4_ofs) : (uint32_t)out.l4_len);
    return CSUM_PREP_OK;
}

static enum csum_prep resolve(struct pkt *p, uint32_t caps, bool force_sw,
                              struct csum_stats *st)
{
    if (p->flags & PKT_F_TUNNEL)
        return resolve_tunnel(p, caps, force_sw, st);
    return resolve_plain(p, caps, force_sw, st);
}

enum csum_prep pkt_send_prepare(struct pkt *p, uint32_t caps, struct csum_stats *st)
{
    return resolve(p, caps, false, st);
}

enum csum_prep pkt_csum_complete(struct pkt *p, struct csum_stats *st)
{
    return resolve(p, 0, true, st);
}

void pkt_rx_verify_emulate(struct pkt *p, uint32_t rx_caps)
{
    struct flow_key key;
    if (!FS_CSUM_MACHINERY || !(rx_caps & (NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM)))
        return;
    parse_pkt(p, &key);
    struct ol_view v = view_outer(p);
    if ((rx_caps & NETDEV_RX_IP_CSUM) && ipv4_known(p, &v) &&
        pkt_csum_get(p, CSUM_L_OUTER_IP) == CSUM_UNKNOWN) {
        const uint8_t *ip = p->data + p->l3_ofs;
        size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
        pkt_csum_set(p, CSUM_L_OUTER_IP,
                     csum_fold(csum_partial(ip, ihl, 0)) == 0 ? CSUM_GOOD : CSUM_BAD);
    }
    if ((rx_caps & NETDEV_RX_L4_CSUM) && l4_known(p, &v) &&
        (p->l4_proto == IP_PROTO_TCP || p->l4_proto == IP_PROTO_UDP) &&
        pkt_csum_get(p, CSUM_L_OUTER_L4) == CSUM_UNKNOWN) {
        const uint8_t *l4 = p->data + p->l4_ofs;
        enum csum_state s;
        if (p->l4_proto == IP_PROTO_UDP && pkt_ld16(l4 + 6) == 0)
            s = p->l3 == PKT_L3_IPV4 ? CSUM_GOOD : CSUM_BAD;
        else
            s = csum_fold(csum_partial(l4, p->l4_len, l4_pseudo(p, &v))) == 0 ? CSUM_GOOD
                                                                               : CSUM_BAD;
        pkt_csum_set(p, CSUM_L_OUTER_L4, s);
    }
    /* Delivered as received: verdicts, no layout (netdev.h). */
    parse_reset_layout(p);
}

/* The capability an emulated device must announce to take 'layer' PARTIAL. */
static uint32_t layer_cap(const struct pkt *p, enum csum_layer layer)
{
    bool tnl = p->flags & PKT_F_TUNNEL;
    switch (layer) {
    case CSUM_L_OUTER_IP:
        return tnl ? NETDEV_TX_OUTER_IP_CSUM : NETDEV_TX_IP_CSUM;
    case CSUM_L_OUTER_L4:
        return tnl ? NETDEV_TX_OUTER_UDP_CSUM : NETDEV_TX_L4_CSUM;
    case CSUM_L_INNER_IP:
        return NETDEV_TX_IP_CSUM;
    case CSUM_L_INNER_L4:
    default:
        return NETDEV_TX_L4_CSUM;
    }
}

bool pkt_tx_emulate_slow(struct pkt *p, uint32_t caps)
{
    bool to_guest = !(p->flags & PKT_F_TUNNEL) && (caps & NETDEV_TX_GUEST_CSUM) &&
                    (p->flags & PKT_F_VNET_CSUM) &&
                    pkt_csum_get(p, CSUM_L_OUTER_L4) == CSUM_PARTIAL;
    for (int l = 0; l < CSUM_L_N; l++) {
        if (pkt_csum_get(p, (enum csum_layer)l) != CSUM_PARTIAL)
            continue;
        if (to_guest && l == CSUM_L_OUTER_L4)
            continue;
        if (!(caps & layer_cap(p, (enum csum_layer)l)))
            return false;
    }
    if (to_guest) {
        /* The guest completes the L4; an IP header is ours to finish. */
        struct ol_view v = view_outer(p);
        return ip_resolve(p, &v, CSUM_L_OUTER_IP, false, NULL) == CSUM_PREP_OK;
    }
    return resolve(p, 0, true, NULL) == CSUM_PREP_OK;
}
