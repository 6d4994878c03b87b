/* tunnel.c: VXLAN push and pop. */
#include "tunnel.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "csum.h"
#include "util.h"
#include "proto.h"

static inline void wr_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint16_t rd_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static const char *const tnl_pop_names[TNL_POP_N] = {
    [TNL_POP_OK] = "ok",
    [TNL_POP_NOT_TUNNEL] = "not_tunnel",
    [TNL_POP_TRUNC] = "tunnel_trunc",
    [TNL_POP_IP_OPTIONS] = "tunnel_ip_options",
    [TNL_POP_UDP_LEN] = "tunnel_udp_len",
    [TNL_POP_BAD_CSUM] = "tunnel_bad_csum",
    [TNL_POP_UNKNOWN_VNI] = "tunnel_unknown_vni",
    [TNL_POP_BAD_VXLAN] = "tunnel_bad_vxlan",
    [TNL_POP_NOT_ETHERNET] = "tunnel_not_ethernet",
};

const char *tnl_pop_result_name(enum tnl_pop_result r)
{
    return (unsigned)r < TNL_POP_N ? tnl_pop_names[r] : "unknown";
}

/* An IPv4 or IPv6 address; *v6 tells which. */
static bool tnl_parse_ip(const char *s, uint8_t out[16], bool *v6)
{
    memset(out, 0, 16);
    if (inet_pton(AF_INET, s, out) == 1) {
        *v6 = false;
        return true;
    }
    if (inet_pton(AF_INET6, s, out) == 1) {
        *v6 = true;
        return true;
    }
    return false;
}

static bool tnl_parse_mac(const char *s, uint8_t mac[6])
{
    unsigned b[6];
    char tail;
    if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
               &tail) != 6)
        return false;
    for (int i = 0; i < 6; i++)
        mac[i] = (uint8_t)b[i];
    return true;
}

int tnl_cfg_parse(struct tnl_cfg *t, const struct netdev_args *args,
                  int (*port_lookup)(void *aux, const char *name), void *aux,
                  int max_port, char *err, size_t errlen)
{
    static const char *const known[] = {"underlay", "local-ip", "remote-ip", "vni",
                                        "dst-port", "csum", "ttl", "tos", "df",
                                        "src-mac", "next-hop-mac", NULL};
    memset(t, 0, sizeof *t);
    if (netdev_opt_check(args, known, err, errlen))
        return -1;
    /* src-mac and next-hop-mac only to encapsulate: tnl_check_outputs(). */
    const char *req[] = {"underlay", "local-ip", "remote-ip", "vni"};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        if (!netdev_opt_get(args, req[i])) {
            fs_errf(err, errlen, "vxlan port needs option '%s'", req[i]);
            return -1;
        }
    }
    const char *u = netdev_opt_get(args, "underlay");
    int up = port_lookup(aux, u);
    if (up < 0 || up >= max_port) {
        fs_errf(err, errlen, "option 'underlay': '%s' is not a device port defined before "
                             "this one", u);
        return -1;
    }
    t->underlay = (uint16_t)up;
    bool v6l, v6r;
    const char *l = netdev_opt_get(args, "local-ip"), *r = netdev_opt_get(args, "remote-ip");
    if (!tnl_parse_ip(l, t->local_ip, &v6l)) {
        fs_errf(err, errlen, "option 'local-ip': '%s' is not an IPv4 or IPv6 address", l);
        return -1;
    }
    if (!tnl_parse_ip(r, t->remote_ip, &v6r)) {
        fs_errf(err, errlen, "option 'remote-ip': '%s' is not an IPv4 or IPv6 address", r);
        return -1;
    }
    if (v6l != v6r) {
        fs_errf(err, errlen, "options 'local-ip' and 'remote-ip' are of different families");
        return -1;
    }
    t->ipv6 = v6l;
    const char *vni = netdev_opt_get(args, "vni");
    if (!strcmp(vni, "flow")) {
        t->vni_flow = true;
    } else {
        unsigned long v;
        if (netdev_opt_uint(args, "vni", 0, 0xffffff, &v, err, errlen))
            return -1;
        t->vni = (uint32_t)v;
    }
    unsigned long port = VXLAN_UDP_PORT, ttl = 64, tos = 0;
    if (netdev_opt_uint(args, "dst-port", 1, 65535, &port, err, errlen) ||
        netdev_opt_uint(args, "ttl", 1, 255, &ttl, err, errlen) ||
        netdev_opt_uint(args, "tos", 0, 255, &tos, err, errlen))
        return -1;
    t->dst_port = (uint16_t)port;
    t->ttl = (uint8_t)ttl;
    t->tos = (uint8_t)tos;
    t->csum = t->ipv6; /* RFC 6935/6936: IPv6 tunnels checksum by default */
    t->df = true;
    if (netdev_opt_bool(args, "csum", &t->csum, err, errlen) ||
        netdev_opt_bool(args, "df", &t->df, err, errlen))
        return -1;
    const char *sm = netdev_opt_get(args, "src-mac"), *dm = netdev_opt_get(args, "next-hop-mac");
    if (sm && !tnl_parse_mac(sm, t->src_mac)) {
        fs_errf(err, errlen, "option 'src-mac': '%s' is not a MAC address", sm);
        return -1;
    }
    if (dm && !tnl_parse_mac(dm, t->dst_mac)) {
        fs_errf(err, errlen, "option 'next-hop-mac': '%s' is not a MAC address", dm);
        return -1;
    }
    return 0;
}

const char *tnl_encap_missing(const struct netdev_args *args)
{
    static const char *const need[] = {"src-mac", "next-hop-mac"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!netdev_opt_get(args, need[i]))
            return need[i];
    return NULL;
}

unsigned tnl_hlen(const struct tnl_cfg *t)
{
    return t->ipv6 ? TNL_HLEN_V6 : TNL_HLEN_V4;
}

uint16_t tnl_src_port(uint32_t inner_hash)
{
    return (uint16_t)(49152u + inner_hash % 16384u);
}

int tnl_push(struct pkt *pkt, const struct tnl_cfg *t, uint32_t vni,
             uint32_t inner_hash, bool *grew)
{
    unsigned hlen = tnl_hlen(t);
    uint32_t inner_len = pkt->len;
    if (inner_len + hlen > 65535)
        return -1;
    if (!pkt_push(pkt, hlen, grew))
        return -1;
    uint8_t *h = pkt->data;

    /* The old (outer) layout becomes the inner one. */
    pkt->inner_l3_ofs =
        pkt->l3_ofs == PKT_OFS_NONE ? PKT_OFS_NONE : (uint16_t)(pkt->l3_ofs + hlen);
    pkt->inner_l4_ofs =
        pkt->l4_ofs == PKT_OFS_NONE ? PKT_OFS_NONE : (uint16_t)(pkt->l4_ofs + hlen);
    pkt->inner_l4_len = pkt->l4_len;
    pkt->inner_l3 = pkt->l3;
    pkt->inner_l4_proto = pkt->l4_proto;
    pkt->inner_flags = (uint8_t)(((pkt->flags & PKT_F_L4) ? PKT_IF_L4 : 0) |
                                 ((pkt->flags & PKT_F_FRAG) ? PKT_IF_FRAG : 0) |
                                 ((pkt->flags & PKT_F_IPV6_RH) ? PKT_IF_IPV6_RH : 0));
    pkt->csum[CSUM_L_INNER_IP] = pkt->csum[CSUM_L_OUTER_IP];
    pkt->csum[CSUM_L_INNER_L4] = pkt->csum[CSUM_L_OUTER_L4];

    /* Outer Ethernet. */
    memcpy(h, t->dst_mac, 6);
    memcpy(h + 6, t->src_mac, 6);
    wr_be16(h + 12, t->ipv6 ? ETH_TYPE_IPV6 : ETH_TYPE_IPV4);
    uint8_t *ip = h + 14;
    unsigned iplen = t->ipv6 ? 40 : 20;
    uint8_t *udp = ip + iplen;
    uint16_t udp_len = (uint16_t)(UDP_HLEN + VXLAN_HLEN + inner_len);
    if (t->ipv6) {
        uint32_t w = 0x60000000u | ((uint32_t)t->tos << 20);
        ip[0] = (uint8_t)(w >> 24);
        ip[1] = (uint8_t)(w >> 16);
        ip[2] = (uint8_t)(w >> 8);
        ip[3] = (uint8_t)w;
        wr_be16(ip + 4, udp_len);
        ip[6] = IP_PROTO_UDP;
        ip[7] = t->ttl;
        memcpy(ip + 8, t->local_ip, 16);
        memcpy(ip + 24, t->remote_ip, 16);
    } else {
        ip[0] = 0x45;
        ip[1] = t->tos;
        wr_be16(ip + 2, (uint16_t)(20 + udp_len));
        wr_be16(ip + 4, 0);
        wr_be16(ip + 6, t->df ? 0x4000 : 0);
        ip[8] = t->ttl;
        ip[9] = IP_PROTO_UDP;
        pkt_st16(ip + 10, 0);
        memcpy(ip + 12, t->local_ip, 4);
        memcpy(ip + 16, t->remote_ip, 4);
    }
    wr_be16(udp, tnl_src_port(inner_hash));
    wr_be16(udp + 2, t->dst_port);
    wr_be16(udp + 4, udp_len);
    pkt_st16(udp + 6, 0);
    uint8_t *vx = udp + 8;
    vx[0] = 0x08;
    vx[1] = vx[2] = vx[3] = 0;
    vx[4] = (uint8_t)(vni >> 16);
    vx[5] = (uint8_t)(vni >> 8);
    vx[6] = (uint8_t)vni;
    vx[7] = 0;

    pkt->l3 = t->ipv6 ? PKT_L3_IPV6 : PKT_L3_IPV4;
    pkt->l3_ofs = 14;
    pkt->l4_ofs = (uint16_t)(14 + iplen);
    pkt->l4_len = udp_len;
    pkt->l4_proto = IP_PROTO_UDP;
    pkt->payload_ofs = (uint16_t)(pkt->l4_ofs + 8);
    pkt->n_vlan = 0;
    pkt->flags = (uint16_t)((pkt->flags & ~(PKT_F_FRAG | PKT_F_FRAG_LATER | PKT_F_VNET_CSUM |
                                            PKT_F_IPV6_RH)) |
                            PKT_F_PARSED | PKT_F_L4 | PKT_F_VXLAN | PKT_F_TUNNEL);
    pkt->csum_start = pkt->csum_offset = 0;
    pkt->csum[CSUM_L_OUTER_IP] = t->ipv6 ? CSUM_GOOD : CSUM_PARTIAL;
    pkt->csum[CSUM_L_OUTER_L4] = t->csum ? CSUM_PARTIAL : CSUM_GOOD;
    return 0;
}

static bool ip_eq(const struct tnl_cfg *t, const uint8_t *a, const uint8_t *cfg_ip)
{
    return !memcmp(a, cfg_ip, t->ipv6 ? 16 : 4);
}

enum tnl_pop_result tnl_pop(struct pkt *pkt, const struct tnl_cfg *tunnels, unsigned n,
                            unsigned *which, struct flow_key *key, struct csum_stats *st)
{
    /* A routing header in effect: the packet is on its way to another node
     * (RFC 8200 4.4), not to this endpoint. */
    if (!(pkt->flags & PKT_F_PARSED) || pkt->l4_proto != IP_PROTO_UDP ||
        (pkt->l3 != PKT_L3_IPV4 && pkt->l3 != PKT_L3_IPV6) || pkt->l4_ofs == PKT_OFS_NONE ||
        (pkt->flags & (PKT_F_FRAG | PKT_F_IPV6_RH)))
        return TNL_POP_NOT_TUNNEL;
    const uint8_t *ip = pkt->data + pkt->l3_ofs;
    bool v6 = pkt->l3 == PKT_L3_IPV6;
    const uint8_t *dst = ip + (v6 ? 24 : 16), *src = ip + (v6 ? 8 : 12);
    if (!(pkt->flags & PKT_F_L4))
        return TNL_POP_NOT_TUNNEL;
    const uint8_t *udp = pkt->data + pkt->l4_ofs;
    uint16_t dport = rd_be16(udp + 2);

    /* Is it for one of our tunnel endpoints? */
    bool local = false;
    for (unsigned i = 0; i < n && !local; i++)
        local = tunnels[i].ipv6 == v6 && tunnels[i].dst_port == dport &&
                ip_eq(&tunnels[i], dst, tunnels[i].local_ip);
    (void)src; /* any remote may send: rules can match tun_src */
    if (!local)
        return TNL_POP_NOT_TUNNEL;

    if (!v6 && (ip[0] & 0x0f) != 5)
        return TNL_POP_IP_OPTIONS;
    uint16_t udp_len = rd_be16(udp + 4);
    if (udp_len != pkt->l4_len)
        return TNL_POP_UDP_LEN;
    if (udp_len < UDP_HLEN + VXLAN_HLEN)
        return TNL_POP_TRUNC;
    if ((uint32_t)pkt->l4_ofs + udp_len > pkt->len)
        return TNL_POP_TRUNC;
    const uint8_t *vx = udp + 8;
    /* Flags exactly "I", reserved fields zero (as OVS checks them). */
    if (vx[0] != 0x08 || vx[1] || vx[2] || vx[3] || vx[7])
        return TNL_POP_BAD_VXLAN;
    if (udp_len < UDP_HLEN + VXLAN_HLEN + 14)
        return TNL_POP_NOT_ETHERNET;
    uint32_t vni = (uint32_t)vx[4] << 16 | (uint32_t)vx[5] << 8 | vx[6];

    const struct tnl_cfg *t = NULL;
    for (unsigned i = 0; i < n; i++) {
        const struct tnl_cfg *c = &tunnels[i];
        if (c->ipv6 == v6 && c->dst_port == dport && ip_eq(c, dst, c->local_ip) &&
            (c->vni_flow || c->vni == vni)) {
            t = c;
            *which = i;
            break;
        }
    }
    if (!t)
        return TNL_POP_UNKNOWN_VNI;

    /* Verify only what the device did not. */
    if (!v6) {
        enum csum_state s = pkt_csum_get(pkt, CSUM_L_OUTER_IP);
        if (s == CSUM_UNKNOWN) {
            if (st) {
                st->n[CSUM_STAT_SW_VERIFIED]++;
                st->n[CSUM_STAT_SW_VERIFY_BYTES] += IPV4_HLEN;
            }
            if (csum_fold(csum_partial(ip, 20, 0)) != 0) {
                if (st)
                    st->n[CSUM_STAT_SW_VERIFY_FAILED]++;
                return TNL_POP_BAD_CSUM;
            }
        } else if (s == CSUM_BAD) {
            return TNL_POP_BAD_CSUM;
        }
    }
    bool has_csum = pkt_ld16(udp + 6) != 0;
    if (has_csum) {
        enum csum_state s = pkt_csum_get(pkt, CSUM_L_OUTER_L4);
        if (s == CSUM_UNKNOWN) {
            if (st) {
                st->n[CSUM_STAT_SW_VERIFIED]++;
                st->n[CSUM_STAT_SW_VERIFY_BYTES] += udp_len;
            }
            uint32_t sum = csum_add(pkt_outer_udp_pseudo(pkt), csum_partial(udp, udp_len, 0));
            if (csum_fold(sum) != 0) {
                if (st)
                    st->n[CSUM_STAT_SW_VERIFY_FAILED]++;
                return TNL_POP_BAD_CSUM;
            }
        } else if (s == CSUM_BAD) {
            return TNL_POP_BAD_CSUM;
        }
    }

    memset(key->tun_src, 0, 16);
    memset(key->tun_dst, 0, 16);
    if (v6) {
        memcpy(key->tun_src, src, 16);
        memcpy(key->tun_dst, dst, 16);
    } else {
        key->tun_src[10] = key->tun_src[11] = 0xff;
        key->tun_dst[10] = key->tun_dst[11] = 0xff;
        memcpy(key->tun_src + 12, src, 4);
        memcpy(key->tun_dst + 12, dst, 4);
    }
    key->tun_id = vni;
    key->tun_flags = has_csum ? FLOW_TNL_F_CSUM : 0;

    /* Strip: the inner frame is what the VXLAN payload holds (anything after
     * the UDP length, such as outer Ethernet padding, goes too). */
    uint32_t off = (uint32_t)pkt->l4_ofs + UDP_HLEN + VXLAN_HLEN;
    uint32_t inner_len = udp_len - UDP_HLEN - VXLAN_HLEN;
    pkt_pull(pkt, off);
    pkt->len = inner_len;
    uint16_t keep = pkt->flags & (uint16_t)~(PKT_F_PARSED | PKT_F_FRAG | PKT_F_FRAG_LATER |
                                            PKT_F_VXLAN | PKT_F_L4 | PKT_F_IPV6_RH |
                                            PKT_F_VNET_CSUM | PKT_F_TUNNEL);
    uint64_t ts = pkt->ts;
    uint32_t hash = pkt->hash;
    uint16_t in_port = pkt->in_port;
    pkt_reset_meta(pkt);
    pkt->ts = ts;
    pkt->hash = hash;
    pkt->in_port = in_port;
    pkt->flags = keep;
    return TNL_POP_OK;
}
