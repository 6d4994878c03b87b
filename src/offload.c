/* offload.c: the lazy checksum resolver and the emulated rx verifier. */
#include "offload.h"

#include <string.h>

#include "csum.h"
#include "flow.h"
#include "netdev.h"
#include "parse.h"

#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17
#define IPPROTO_ICMP_ 1
#define IPPROTO_ICMPV6_ 58

static inline uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static inline void wr16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

/* Offset of the checksum field inside the L4 header of 'proto', or -1. */
static int l4_csum_field(uint8_t proto)
{
    switch (proto) {
    case IPPROTO_TCP_:
        return 16;
    case IPPROTO_UDP_:
        return 6;
    case IPPROTO_ICMP_:
    case IPPROTO_ICMPV6_:
        return 2;
    default:
        return -1;
    }
}

/* True if the parsed L4 layer of p is one whose checksum we can compute
 * from the headers: a complete, unfragmented TCP/UDP/ICMP/ICMPv6 segment
 * entirely present in the buffer. */
static bool l4_known(const struct pkt *p)
{
    return (p->flags & (PKT_F_PARSED | PKT_F_L4)) == (PKT_F_PARSED | PKT_F_L4) &&
           !(p->flags & PKT_F_FRAG) && l4_csum_field(p->l4_proto) >= 0 &&
           (p->l3 == PKT_L3_IPV4 || p->l3 == PKT_L3_IPV6) &&
           (uint32_t)p->l4_ofs + p->l4_len <= p->len &&
           !(p->l3 == PKT_L3_IPV4 && p->l4_proto == IPPROTO_ICMPV6_) &&
           !(p->l3 == PKT_L3_IPV6 && p->l4_proto == IPPROTO_ICMP_);
}

/* The pseudo-header sum of p's L4 layer (0 for ICMPv4, which has none). */
static uint32_t l4_pseudo(const struct pkt *p)
{
    const uint8_t *ip = p->data + p->l3_ofs;
    if (p->l4_proto == IPPROTO_ICMP_)
        return 0;
    if (p->l3 == PKT_L3_IPV4) {
        uint32_t src, dst;
        memcpy(&src, ip + 12, 4);
        memcpy(&dst, ip + 16, 4);
        return csum_pseudo_ipv4(src, dst, p->l4_proto, p->l4_len);
    }
    return csum_pseudo_ipv6(ip + 8, ip + 24, p->l4_proto, p->l4_len);
}

static bool ipv4_known(const struct pkt *p)
{
    return (p->flags & PKT_F_PARSED) && p->l3 == PKT_L3_IPV4 &&
           p->l3_ofs != PKT_OFS_NONE && (uint32_t)p->l3_ofs + 20 <= p->len &&
           (uint32_t)p->l3_ofs + (uint32_t)(p->data[p->l3_ofs] & 0x0f) * 4 <= p->len;
}

static void ipv4_complete(struct pkt *p)
{
    uint8_t *ip = p->data + p->l3_ofs;
    size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
    wr16(ip + 10, csum_ipv4_hdr(ip, ihl));
}

/* Writes the full checksum over the known L4 layer. */
static void l4_complete_known(struct pkt *p)
{
    uint8_t *l4 = p->data + p->l4_ofs;
    uint8_t *field = l4 + l4_csum_field(p->l4_proto);
    wr16(field, 0);
    uint16_t c = csum_fold(csum_partial(l4, p->l4_len, l4_pseudo(p)));
    if (p->l4_proto == IPPROTO_UDP_)
        c = csum_udp_field(c);
    wr16(field, c);
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
    wr16(p->data + at, c);
    return true;
}

/* True if p's virtio location is the parsed L4 layer, so we may recompute
 * the pseudo-header sum ourselves. */
static bool vnet_matches_l4(const struct pkt *p)
{
    return !(p->flags & PKT_F_VNET_CSUM) ||
           (p->csum_start == p->l4_ofs &&
            (int)p->csum_offset == l4_csum_field(p->l4_proto));
}

static enum csum_prep l4_resolve(struct pkt *p, uint32_t caps, bool force_sw,
                                 struct csum_stats *st)
{
    bool known = l4_known(p) && vnet_matches_l4(p);
    bool guest = !force_sw && (caps & NETDEV_TX_GUEST_CSUM);
    bool nic = !force_sw && (caps & NETDEV_TX_L4_CSUM);

    if (known && (guest || nic)) {
        /* Leave it PARTIAL with the pseudo-header sum in the field. ICMP has
         * no pseudo-header: its "partial" field is 0. */
        uint8_t *field = p->data + p->l4_ofs + l4_csum_field(p->l4_proto);
        wr16(field, csum_fold_nocompl(l4_pseudo(p)));
        p->flags |= PKT_F_VNET_CSUM;
        p->csum_start = p->l4_ofs;
        p->csum_offset = (uint16_t)l4_csum_field(p->l4_proto);
        if (st) {
            if (guest)
                st->guest_partial++;
            else
                st->offloaded[CSUM_L_OUTER_L4]++;
        }
        return CSUM_PREP_OK;
    }
    if (!known && (p->flags & PKT_F_VNET_CSUM) && guest) {
        /* A location we do not understand: pass it on as the guest gave it. */
        if (st)
            st->guest_partial++;
        return CSUM_PREP_OK;
    }
    if (known)
        l4_complete_known(p);
    else if (!(p->flags & PKT_F_VNET_CSUM) || !l4_complete_vnet(p))
        return CSUM_PREP_INVALID;
    p->flags &= (uint16_t)~PKT_F_VNET_CSUM;
    p->csum_start = p->csum_offset = 0;
    pkt_csum_set(p, CSUM_L_OUTER_L4, CSUM_GOOD);
    if (st)
        st->sw[CSUM_L_OUTER_L4]++;
    return CSUM_PREP_OK;
}

static enum csum_prep resolve(struct pkt *p, uint32_t caps, bool force_sw,
                              struct csum_stats *st)
{
    if (pkt_csum_get(p, CSUM_L_OUTER_IP) == CSUM_PARTIAL) {
        if (!ipv4_known(p))
            return CSUM_PREP_INVALID;
        if (!force_sw && (caps & NETDEV_TX_IP_CSUM)) {
            if (st)
                st->offloaded[CSUM_L_OUTER_IP]++;
        } else {
            ipv4_complete(p);
            pkt_csum_set(p, CSUM_L_OUTER_IP, CSUM_GOOD);
            if (st)
                st->sw[CSUM_L_OUTER_IP]++;
        }
    }
    if (pkt_csum_get(p, CSUM_L_OUTER_L4) == CSUM_PARTIAL)
        return l4_resolve(p, caps, force_sw, st);
    return CSUM_PREP_OK;
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
    if ((rx_caps & NETDEV_RX_IP_CSUM) && ipv4_known(p) &&
        pkt_csum_get(p, CSUM_L_OUTER_IP) == CSUM_UNKNOWN) {
        const uint8_t *ip = p->data + p->l3_ofs;
        size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
        pkt_csum_set(p, CSUM_L_OUTER_IP,
                     csum_fold(csum_partial(ip, ihl, 0)) == 0 ? CSUM_GOOD : CSUM_BAD);
    }
    if ((rx_caps & NETDEV_RX_L4_CSUM) && l4_known(p) &&
        (p->l4_proto == IPPROTO_TCP_ || p->l4_proto == IPPROTO_UDP_) &&
        pkt_csum_get(p, CSUM_L_OUTER_L4) == CSUM_UNKNOWN) {
        const uint8_t *l4 = p->data + p->l4_ofs;
        enum csum_state s;
        if (p->l4_proto == IPPROTO_UDP_ && rd16(l4 + 6) == 0)
            s = p->l3 == PKT_L3_IPV4 ? CSUM_GOOD : CSUM_BAD;
        else
            s = csum_fold(csum_partial(l4, p->l4_len, l4_pseudo(p))) == 0 ? CSUM_GOOD
                                                                          : CSUM_BAD;
        pkt_csum_set(p, CSUM_L_OUTER_L4, s);
    }
}

bool pkt_tx_emulate_slow(struct pkt *p, uint32_t caps)
{
    bool ip = pkt_csum_get(p, CSUM_L_OUTER_IP) == CSUM_PARTIAL;
    bool l4 = pkt_csum_get(p, CSUM_L_OUTER_L4) == CSUM_PARTIAL;
    bool to_guest = l4 && (caps & NETDEV_TX_GUEST_CSUM) && (p->flags & PKT_F_VNET_CSUM);
    if (!FS_CSUM_MACHINERY || (!ip && !l4))
        return true;
    if ((ip && !(caps & NETDEV_TX_IP_CSUM)) ||
        (l4 && !to_guest && !(caps & NETDEV_TX_L4_CSUM)))
        return false;
    if (ip) {
        if (!ipv4_known(p))
            return false;
        ipv4_complete(p);
        pkt_csum_set(p, CSUM_L_OUTER_IP, CSUM_GOOD);
    }
    if (l4 && !to_guest)
        return l4_resolve(p, 0, true, NULL) == CSUM_PREP_OK;
    return true;
}
