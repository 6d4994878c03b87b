/* fuzz_parse.c: libFuzzer harness for parse_pkt().
 *
 * Each input is one frame, copied into an exactly-sized heap packet (the
 * buffer ends at the last byte, so ASan flags any read past pkt->len). After
 * parsing, the invariants every parse must satisfy are checked and abort()
 * on violation:
 *  - offsets set only for layers found, inside the frame, in order;
 *  - flags, key and offsets consistent with each other, and the IPv6
 *    pseudo-header's destination (parse_ipv6_final_dst()) where it must be;
 *  - the frame bytes are not modified, the key is fully initialised;
 *  - parsing is deterministic, and a frame that parsed OK parses the same
 *    with trailing bytes appended (padding past the IP length is ignored). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "packet.h"
#include "parse.h"
#include "parse-inl.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static bool zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

static void check(const struct pkt *p, const struct flow_key *k, enum parse_result r)
{
    CHECK((unsigned)r < PARSE_N_RESULTS);
    CHECK(parse_result_name(r) && parse_result_desc(r));
    CHECK(p->flags & PKT_F_PARSED);
    CHECK(p->n_vlan <= PARSE_MAX_VLANS);
    CHECK(k->in_port == p->in_port);
    CHECK(zero(k->pad, sizeof k->pad));
    CHECK(zero(k->tun_src, sizeof k->tun_src) && zero(k->tun_dst, sizeof k->tun_dst));
    CHECK(k->tun_id == 0);
    CHECK(!parse_key_hot(p) || !flow_key_cold(k));
    CHECK(p->l3 <= PKT_L3_ARP);
    if (r == PARSE_ETH_TRUNC)
        CHECK(p->len < 14);
    else
        CHECK(p->len >= 14);

    if (p->l3_ofs != PKT_OFS_NONE) {
        CHECK(p->l3 != PKT_L3_NONE);
        CHECK(p->l3_ofs == 14 + 4 * p->n_vlan);
        CHECK(p->l3_ofs <= p->len);
        CHECK(k->dl_type == (p->l3 == PKT_L3_IPV4   ? 0x0800
                             : p->l3 == PKT_L3_IPV6 ? 0x86dd
                                                    : 0x0806));
    } else {
        CHECK(p->l3 == PKT_L3_NONE);
    }
    for (unsigned i = 0; i < PARSE_MAX_VLANS; i++) {
        bool tag = i < p->n_vlan;
        CHECK(tag == !!(k->vlan_tci[i] & FLOW_VLAN_PRESENT));
        CHECK(tag ? (k->vlan_tpid[i] == 0x8100 || k->vlan_tpid[i] == 0x88a8)
                  : (k->vlan_tpid[i] == 0 && k->vlan_tci[i] == 0));
    }
    if (p->l3 != PKT_L3_IPV4 && p->l3 != PKT_L3_ARP)
        CHECK(k->nw_src == 0 && k->nw_dst == 0);
    if (p->l3 != PKT_L3_IPV6)
        CHECK(zero(k->ipv6_src, 16) && zero(k->ipv6_dst, 16) && k->ipv6_label == 0);
    CHECK(k->ipv6_label <= 0xfffff);
    if (p->l3 != PKT_L3_ARP)
        CHECK(zero(k->arp_sha, 6) && zero(k->arp_tha, 6));

    if (p->l4_ofs != PKT_OFS_NONE) {
        CHECK(p->l3 == PKT_L3_IPV4 || p->l3 == PKT_L3_IPV6);
        CHECK(p->l4_ofs >= p->l3_ofs + 20);
        CHECK((uint32_t)p->l4_ofs + p->l4_len <= p->len);
        CHECK(p->l4_proto == k->nw_proto);
    } else {
        CHECK(p->l4_len == 0 && p->l4_proto == 0);
    }
    if (p->flags & PKT_F_L4) {
        CHECK(r == PARSE_OK);
        CHECK(p->l4_ofs != PKT_OFS_NONE && p->payload_ofs != PKT_OFS_NONE);
        CHECK(p->payload_ofs > p->l4_ofs);
        CHECK(p->payload_ofs <= p->l4_ofs + p->l4_len);
        CHECK(!(p->flags & PKT_F_FRAG_LATER));
        if (p->l4_proto == 6)
            CHECK(p->payload_ofs - p->l4_ofs >= 20 && k->tcp_flags <= 0x0fff);
        else
            CHECK(k->tcp_flags == 0);
    } else {
        CHECK(p->payload_ofs == PKT_OFS_NONE);
        CHECK(k->tp_src == 0 && k->tp_dst == 0 && k->tcp_flags == 0);
    }
    if (r != PARSE_OK)
        CHECK(!(p->flags & (PKT_F_L4 | PKT_F_VXLAN)));
    if (p->flags & PKT_F_FRAG_LATER)
        CHECK(p->flags & PKT_F_FRAG);
    CHECK(!!(k->nw_frag & FLOW_FRAG_ANY) == !!(p->flags & PKT_F_FRAG));
    CHECK(!!(k->nw_frag & FLOW_FRAG_LATER) == !!(p->flags & PKT_F_FRAG_LATER));
    CHECK((k->nw_frag & ~(FLOW_FRAG_ANY | FLOW_FRAG_LATER)) == 0);
    if (p->flags & PKT_F_VXLAN) {
        CHECK(p->flags & PKT_F_L4);
        CHECK(p->l4_proto == 17 && k->tp_dst == VXLAN_UDP_PORT);
        CHECK(!(p->flags & PKT_F_FRAG));
        CHECK((uint32_t)p->payload_ofs + 8 <= (uint32_t)p->l4_ofs + p->l4_len);
    }
    if (r == PARSE_OK && (p->l3 == PKT_L3_IPV4 || p->l3 == PKT_L3_IPV6))
        CHECK(p->l4_ofs != PKT_OFS_NONE);
    CHECK((p->flags & PKT_F_VNET_CSUM) == 0); /* not the parser's to set */
    if (p->flags & PKT_F_IPV6_RH)
        CHECK(p->l3 == PKT_L3_IPV6);
    /* the pseudo-header's destination: the field, or inside the headers */
    if (r == PARSE_OK && p->l3 == PKT_L3_IPV6) {
        const uint8_t *ip = p->data + p->l3_ofs;
        const uint8_t *d = parse_ipv6_final_dst(ip, (uint32_t)(p->l4_ofs - p->l3_ofs));
        if (!(p->flags & PKT_F_IPV6_RH))
            CHECK(d == ip + 24);
        else
            CHECK(!d || (d >= ip + 48 && d + 16 <= p->data + p->l4_ofs));
    }
}

/* The parser's layout fields (and flags) of a and b are equal. */
static bool same_layout(const struct pkt *a, const struct pkt *b)
{
    return a->l3_ofs == b->l3_ofs && a->l4_ofs == b->l4_ofs && a->l4_len == b->l4_len &&
           a->payload_ofs == b->payload_ofs && a->flags == b->flags && a->l3 == b->l3 &&
           a->l4_proto == b->l4_proto && a->n_vlan == b->n_vlan;
}

static struct pkt *exact_pkt(const uint8_t *data, size_t size)
{
    struct pkt *p = pkt_from_data(data, (uint32_t)size);
    CHECK(p != NULL);
    CHECK(p->len == size && pkt_tailroom(p) == 0); /* the buffer ends here */
    p->in_port = 5;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    struct pkt *p = exact_pkt(data, size);
    struct flow_key k;
    memset(&k, 0x5a, sizeof k);
    enum parse_result r = parse_pkt(p, &k);
    check(p, &k, r);
    CHECK(size == 0 || memcmp(p->data, data, size) == 0);

    /* Deterministic: a second parse of the same packet is identical. */
    struct pkt m = *p;
    struct flow_key k2;
    memset(&k2, 0xa5, sizeof k2);
    CHECK(parse_pkt(p, &k2) == r);
    CHECK(flow_equal(&k, &k2));
    CHECK(memcmp(&m, p, sizeof m) == 0);

    /* The keyless parse of a packet as received: the same result and
     * metadata as parse_pkt() made (exact_pkt() gives a fresh packet). */
    struct pkt *f = exact_pkt(data, size);
    CHECK(parse_pkt_layout_rx(f) == r);
    CHECK(same_layout(f, p));
    pkt_free(f);

    /* A frame that parsed OK ignores bytes appended after it. */
    if (r == PARSE_OK) {
        uint8_t *padded = malloc(size + 16);
        CHECK(padded != NULL);
        memcpy(padded, data, size);
        memset(padded + size, 0xee, 16);
        struct pkt *q = exact_pkt(padded, size + 16);
        struct flow_key k3;
        CHECK(parse_pkt(q, &k3) == PARSE_OK);
        check(q, &k3, PARSE_OK);
        CHECK(flow_equal(&k, &k3));
        CHECK(same_layout(q, p));
        pkt_free(q);
        free(padded);
    }
    pkt_free(p);
    return 0;
}
