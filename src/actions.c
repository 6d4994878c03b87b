/* actions.c: action lists and their execution on a parsed packet. */
#include "actions.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "parse.h"
#include "proto.h"

struct action_list *action_list_create(const struct action *acts, unsigned n)
{
    struct action_list *l = malloc(sizeof *l + n * sizeof l->a[0]);
    if (!l)
        return NULL;
    atomic_init(&l->refcnt, 1);
    l->n = n;
    if (n)
        memcpy(l->a, acts, n * sizeof l->a[0]);
    return l;
}

/* Atomic: the PMDs' megaflows and the control thread's rule tables share
 * lists. Taken on megaflow install and removal, never per packet. */
struct action_list *action_list_ref(struct action_list *l)
{
    if (l)
        atomic_fetch_add_explicit(&l->refcnt, 1, memory_order_relaxed);
    return l;
}

void action_list_unref(struct action_list *l)
{
    if (l && atomic_fetch_sub_explicit(&l->refcnt, 1, memory_order_acq_rel) == 1)
        free(l);
}

static int fmt_append(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fmt_append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    *used += (size_t)n;
    if (*used >= size)
        *used = size;
    return 0;
}

void action_list_format(const struct action_list *l,
                        const char *(*port_name)(void *aux, uint16_t port),
                        void *aux, char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    if (!l || l->n == 0) {
        fmt_append(buf, size, &used, "drop");
        return;
    }
    for (unsigned i = 0; i < l->n; i++) {
        const struct action *a = &l->a[i];
        const char *sep = i ? "," : "";
        char ip[INET_ADDRSTRLEN];
        const uint8_t *m = a->u.mac;
        switch ((enum action_type)a->type) {
        case ACT_OUTPUT: {
            const char *name = port_name ? port_name(aux, a->u.port) : NULL;
            if (name)
                fmt_append(buf, size, &used, "%soutput:%s", sep, name);
            else
                fmt_append(buf, size, &used, "%soutput:%u", sep, a->u.port);
            break;
        }
        case ACT_SET_DL_SRC:
        case ACT_SET_DL_DST:
            fmt_append(buf, size, &used, "%smod_dl_%s:%02x:%02x:%02x:%02x:%02x:%02x",
                       sep, a->type == ACT_SET_DL_SRC ? "src" : "dst", m[0], m[1],
                       m[2], m[3], m[4], m[5]);
            break;
        case ACT_SET_NW_SRC:
        case ACT_SET_NW_DST:
            inet_ntop(AF_INET, &a->u.ip4, ip, sizeof ip);
            fmt_append(buf, size, &used, "%smod_nw_%s:%s", sep,
                       a->type == ACT_SET_NW_SRC ? "src" : "dst", ip);
            break;
        case ACT_SET_NW_TOS:
            fmt_append(buf, size, &used, "%smod_nw_tos:%u", sep, a->u.u8);
            break;
        case ACT_SET_TP_SRC:
        case ACT_SET_TP_DST:
            fmt_append(buf, size, &used, "%smod_tp_%s:%u", sep,
                       a->type == ACT_SET_TP_SRC ? "src" : "dst", a->u.u16);
            break;
        case ACT_PUSH_VLAN:
            fmt_append(buf, size, &used, "%spush_vlan:0x%04x", sep, a->u.u16);
            break;
        case ACT_SET_VLAN_VID:
            fmt_append(buf, size, &used, "%smod_vlan_vid:%u", sep, a->u.u16);
            break;
        case ACT_SET_VLAN_PCP:
            fmt_append(buf, size, &used, "%smod_vlan_pcp:%u", sep, a->u.u8);
            break;
        case ACT_POP_VLAN:
            fmt_append(buf, size, &used, "%spop_vlan", sep);
            break;
        case ACT_DEC_TTL:
            fmt_append(buf, size, &used, "%sdec_ttl", sep);
            break;
        case ACT_SET_TUNNEL:
            fmt_append(buf, size, &used, "%sset_tunnel:%u", sep, a->u.ip4);
            break;
        case ACT_N_TYPES:
            break;
        }
    }
}

/* --- header rewriting ------------------------------------------------- */

/* True if the packet has a complete L4 header we may rewrite. */
static inline bool pkt_has_l4(const struct pkt *p)
{
    return (p->flags & PKT_F_L4) && !(p->flags & PKT_F_FRAG_LATER);
}

/* Offset of the L4 checksum field, or -1 if the protocol has none that
 * covers the pseudo-header (ICMPv4) or the packet has no L4 header. */
static int l4_csum_ofs(const struct pkt *p)
{
    if (!pkt_has_l4(p))
        return -1;
    switch (p->l4_proto) {
    case IP_PROTO_TCP:
        return p->l4_ofs + 16;
    case IP_PROTO_UDP:
        return p->l4_ofs + 6;
    case IP_PROTO_ICMPV6:
        return p->l4_ofs + 2;
    default:
        return -1;
    }
}

/* Applies an incremental change to the L4 checksum. An IPv4 UDP checksum
 * of 0 means "none" and stays 0; a computed 0 is stored as 0xFFFF. */
static void l4_csum_update32(struct pkt *p, uint32_t old_v, uint32_t new_v, bool is16)
{
    int ofs = l4_csum_ofs(p);
    /* A PARTIAL field is rewritten from the headers at the egress port. */
    if (ofs < 0 || p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL)
        return;
    uint8_t *f = p->data + ofs;
    uint16_t c = pkt_ld16(f);
    if (p->l4_proto == IP_PROTO_UDP && c == 0)
        return;
    c = is16 ? csum_update16(c, (uint16_t)old_v, (uint16_t)new_v)
             : csum_update32(c, old_v, new_v);
    if (p->l4_proto == IP_PROTO_UDP)
        c = csum_udp_field(c);
    pkt_st16(f, c);
}

/* CRC32c (Castagnoli), reflected, as SCTP (RFC 4960 appendix B) uses it.
 * Bitwise: SCTP rewrites are rare and this keeps it table-free. */
static uint32_t sctp_crc32c(const uint8_t *d, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= d[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void sctp_recompute(struct pkt *p)
{
    uint8_t *sctp = p->data + p->l4_ofs;
    uint32_t len = p->l4_len;
    if ((uint32_t)p->l4_ofs + len > p->len || len < 12)
        return;
    pkt_st32(sctp + 8, 0);
    uint32_t crc = sctp_crc32c(sctp, len);
    /* Stored little-endian (the reflected CRC's natural byte order). */
    sctp[8] = (uint8_t)crc;
    sctp[9] = (uint8_t)(crc >> 8);
    sctp[10] = (uint8_t)(crc >> 16);
    sctp[11] = (uint8_t)(crc >> 24);
}

/* Incrementally updates the IPv4 header checksum after a 16- or 32-bit
 * field changed, unless the header checksum is PARTIAL (completed later). */
static void ip_csum_update(struct pkt *p, uint8_t *ip, uint32_t old_v, uint32_t new_v,
                           bool is16)
{
    if (p->csum[CSUM_L_OUTER_IP] == CSUM_PARTIAL)
        return;
    uint16_t c = pkt_ld16(ip + 10);
    c = is16 ? csum_update16(c, (uint16_t)old_v, (uint16_t)new_v)
             : csum_update32(c, old_v, new_v);
    pkt_st16(ip + 10, c);
}

static void set_nw_addr(struct pkt *p, struct flow_key *key, bool src, uint32_t addr)
{
    if (p->l3 != PKT_L3_IPV4)
        return;
    uint8_t *ip = p->data + p->l3_ofs;
    uint8_t *field = ip + (src ? 12 : 16);
    uint32_t old = pkt_ld32(field);
    if (old == addr)
        return;
    pkt_st32(field, addr);
    ip_csum_update(p, ip, old, addr, false);
    if (p->l4_proto == IP_PROTO_TCP || p->l4_proto == IP_PROTO_UDP)
        l4_csum_update32(p, old, addr, false);
    else if (p->l4_proto == IP_PROTO_SCTP && pkt_has_l4(p))
        sctp_recompute(p);
    if (src)
        key->nw_src = addr;
    else
        key->nw_dst = addr;
}

static void set_nw_tos(struct pkt *p, struct flow_key *key, uint8_t dscp)
{
    if (p->l3 != PKT_L3_IPV4)
        return;
    uint8_t *ip = p->data + p->l3_ofs;
    uint16_t old = pkt_ld16(ip);
    ip[1] = (uint8_t)((ip[1] & 0x03) | (dscp & 0xfc));
    ip_csum_update(p, ip, old, pkt_ld16(ip), true);
    key->nw_tos = ip[1];
}

static void set_tp_port(struct pkt *p, struct flow_key *key, bool src, uint16_t port)
{
    if (!pkt_has_l4(p) ||
        (p->l4_proto != IP_PROTO_TCP && p->l4_proto != IP_PROTO_UDP &&
         p->l4_proto != IP_PROTO_SCTP))
        return;
    uint8_t *f = p->data + p->l4_ofs + (src ? 0 : 2);
    uint16_t old = pkt_ld16(f), nv = htons(port);
    if (old == nv)
        return;
    pkt_st16(f, nv);
    if (p->l4_proto == IP_PROTO_SCTP)
        sctp_recompute(p);
    else
        l4_csum_update32(p, old, nv, true);
    if (src)
        key->tp_src = port;
    else
        key->tp_dst = port;
}

static bool dec_ttl(struct pkt *p, struct flow_key *key)
{
    uint8_t *ip = p->data + p->l3_ofs;
    if (p->l3 == PKT_L3_IPV4) {
        if (ip[8] <= 1)
            return false;
        uint16_t old = pkt_ld16(ip + 8);
        ip[8]--;
        ip_csum_update(p, ip, old, pkt_ld16(ip + 8), true);
        key->nw_ttl = ip[8];
    } else if (p->l3 == PKT_L3_IPV6) {
        if (ip[7] <= 1)
            return false;
        ip[7]--;
        key->nw_ttl = ip[7];
    }
    return true;
}

/* Shifts every parsed offset after the Ethernet addresses by delta. */
static void shift_offsets(struct pkt *p, int delta)
{
    if (p->l3_ofs != PKT_OFS_NONE)
        p->l3_ofs = (uint16_t)(p->l3_ofs + delta);
    if (p->l4_ofs != PKT_OFS_NONE)
        p->l4_ofs = (uint16_t)(p->l4_ofs + delta);
    if (p->payload_ofs != PKT_OFS_NONE)
        p->payload_ofs = (uint16_t)(p->payload_ofs + delta);
    if (p->flags & PKT_F_VNET_CSUM)
        p->csum_start = (uint16_t)(p->csum_start + delta);
}

/* Inserts a tag (tpid, tci) as the outer tag. */
static bool push_vlan(struct pkt *p, struct flow_key *key, uint16_t tpid, uint16_t tci)
{
    if (p->len < 12 || !pkt_push(p, 4, NULL))
        return false;
    memmove(p->data, p->data + 4, 12);
    pkt_st16(p->data + 12, htons(tpid));
    pkt_st16(p->data + 14, htons(tci));
    shift_offsets(p, 4);
    if (p->n_vlan < 2)
        p->n_vlan++;
    key->vlan_tpid[1] = key->vlan_tpid[0];
    key->vlan_tci[1] = key->vlan_tci[0];
    key->vlan_tpid[0] = tpid;
    key->vlan_tci[0] = (uint16_t)(tci | FLOW_VLAN_PRESENT);
    return true;
}

static void pop_vlan(struct pkt *p, struct flow_key *key)
{
    if (p->n_vlan == 0 || p->len < 18)
        return;
    memmove(p->data + 4, p->data, 12);
    pkt_pull(p, 4);
    shift_offsets(p, -4);
    p->n_vlan--;
    key->vlan_tpid[0] = key->vlan_tpid[1];
    key->vlan_tci[0] = key->vlan_tci[1];
    key->vlan_tpid[1] = 0;
    key->vlan_tci[1] = 0;
}

/* Sets the VID or PCP bits of the outer tag, pushing a 0x8100 tag first if
 * the frame has none. */
static bool set_vlan_bits(struct pkt *p, struct flow_key *key, uint16_t mask,
                          uint16_t bits)
{
    if (p->n_vlan == 0)
        return push_vlan(p, key, ETH_TYPE_VLAN, bits & mask);
    uint16_t tci = ntohs(pkt_ld16(p->data + 14));
    tci = (uint16_t)((tci & ~mask) | (bits & mask));
    pkt_st16(p->data + 14, htons(tci));
    key->vlan_tci[0] = (uint16_t)(tci | FLOW_VLAN_PRESENT);
    return true;
}

void actions_execute(struct action_ctx *ctx, struct pkt *pkt,
                     struct flow_key *key, const struct action_list *l)
{
    unsigned n = l ? l->n : 0;
    for (unsigned i = 0; i < n; i++) {
        const struct action *a = &l->a[i];
        switch ((enum action_type)a->type) {
        case ACT_OUTPUT:
            if (i + 1 == n) {
                ctx->output(ctx->aux, pkt, a->u.port);
                return;
            } else {
                struct pkt *copy = pkt_clone(pkt);
                ctx->copies++;
                if (copy)
                    ctx->output(ctx->aux, copy, a->u.port);
                else
                    ctx->drop(ctx->aux, NULL, DROP_nomem);
            }
            break;
        case ACT_SET_DL_SRC:
            memcpy(pkt->data + 6, a->u.mac, 6);
            memcpy(key->dl_src, a->u.mac, 6);
            break;
        case ACT_SET_DL_DST:
            memcpy(pkt->data, a->u.mac, 6);
            memcpy(key->dl_dst, a->u.mac, 6);
            break;
        case ACT_SET_NW_SRC:
        case ACT_SET_NW_DST:
            set_nw_addr(pkt, key, a->type == ACT_SET_NW_SRC, a->u.ip4);
            break;
        case ACT_SET_NW_TOS:
            set_nw_tos(pkt, key, a->u.u8);
            break;
        case ACT_SET_TP_SRC:
        case ACT_SET_TP_DST:
            set_tp_port(pkt, key, a->type == ACT_SET_TP_SRC, a->u.u16);
            break;
        case ACT_PUSH_VLAN: {
            uint16_t tci = pkt->n_vlan ? ntohs(pkt_ld16(pkt->data + 14)) : 0;
            if (!push_vlan(pkt, key, a->u.u16, tci)) {
                ctx->drop(ctx->aux, pkt, DROP_no_headroom);
                return;
            }
            break;
        }
        case ACT_SET_VLAN_VID:
            if (!set_vlan_bits(pkt, key, FLOW_VLAN_VID_MASK, a->u.u16)) {
                ctx->drop(ctx->aux, pkt, DROP_no_headroom);
                return;
            }
            break;
        case ACT_SET_VLAN_PCP:
            if (!set_vlan_bits(pkt, key, 0xe000,
                               (uint16_t)(a->u.u8 << FLOW_VLAN_PCP_SHIFT))) {
                ctx->drop(ctx->aux, pkt, DROP_no_headroom);
                return;
            }
            break;
        case ACT_POP_VLAN:
            pop_vlan(pkt, key);
            break;
        case ACT_DEC_TTL:
            if (!dec_ttl(pkt, key)) {
                ctx->drop(ctx->aux, pkt, DROP_ttl_exceeded);
                return;
            }
            break;
        case ACT_SET_TUNNEL:
            pkt->out_vni = a->u.ip4;
            break;
        case ACT_N_TYPES:
            break;
        }
    }
    ctx->drop(ctx->aux, pkt, DROP_rule_drop);
}
