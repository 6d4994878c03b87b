/* test_parse.c: unit tests of the L2/L3/L4 parser (src/parse.c).
 *
 * Frames are built byte by byte here (no scapy at test time) and handed to
 * the parser in an exactly-sized heap packet (pkt_from_data: the buffer ends
 * at the last frame byte), so valgrind/ASan catch any read past pkt->len.
 * Every reference frame is parsed at every truncation length 0..full and at
 * full length plus trailing padding, with the exact expected result, key and
 * offsets at each length. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "flow.h"
#include "packet.h"
#include "parse.h"
#include "parse-inl.h"

/* ---- frame builder ---------------------------------------------------- */

struct fb {
    uint8_t b[1600];
    size_t n;
};

static size_t fb_put(struct fb *f, const void *p, size_t n)
{
    assert_true(f->n + n <= sizeof f->b);
    size_t at = f->n;
    memcpy(f->b + at, p, n);
    f->n += n;
    return at;
}

static void fb_u8(struct fb *f, uint8_t v)
{
    fb_put(f, &v, 1);
}

static void fb_u16(struct fb *f, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    fb_put(f, b, 2);
}

static void fb_u32(struct fb *f, uint32_t v)
{
    fb_u16(f, (uint16_t)(v >> 16));
    fb_u16(f, (uint16_t)v);
}

static void fb_fill(struct fb *f, size_t n, uint8_t v)
{
    assert_true(f->n + n <= sizeof f->b);
    memset(f->b + f->n, v, n);
    f->n += n;
}

static void fb_set16(struct fb *f, size_t at, uint16_t v)
{
    f->b[at] = (uint8_t)(v >> 8);
    f->b[at + 1] = (uint8_t)v;
}

static void fb_payload(struct fb *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fb_u8(f, (uint8_t)(0x60 + i));
}

static const uint8_t MAC_DST[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
static const uint8_t MAC_SRC[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
static const uint8_t IP4_SRC[4] = {10, 0, 0, 1};
static const uint8_t IP4_DST[4] = {10, 0, 0, 2};
static const uint8_t IP6_SRC[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
static const uint8_t IP6_DST[16] = {0x20, 0x01, 0x0d, 0xb8, [14] = 0xab, [15] = 2};

static uint32_t be32_of(const uint8_t a[4])
{
    uint32_t v;
    memcpy(&v, a, 4);
    return v;
}

static void fb_eth(struct fb *f, uint16_t type)
{
    fb_put(f, MAC_DST, 6);
    fb_put(f, MAC_SRC, 6);
    fb_u16(f, type);
}

static void fb_tag(struct fb *f, uint16_t tci, uint16_t type)
{
    fb_u16(f, tci);
    fb_u16(f, type);
}

/* IPv4 header with ihl_words (5..15) words, options are NOPs. tot_len is
 * written by fb_ipv4_done(). TOS 0x28, TTL 64. */
static size_t fb_ipv4(struct fb *f, uint8_t proto, unsigned ihl_words, uint16_t frag)
{
    size_t at = f->n;
    fb_u8(f, (uint8_t)(0x40 | ihl_words));
    fb_u8(f, 0x28);
    fb_u16(f, 0);
    fb_u16(f, 0x1234);
    fb_u16(f, frag);
    fb_u8(f, 64);
    fb_u8(f, proto);
    fb_u16(f, 0);
    fb_put(f, IP4_SRC, 4);
    fb_put(f, IP4_DST, 4);
    if (ihl_words > 5)
        fb_fill(f, (ihl_words - 5) * 4, 0x01);
    return at;
}

static void fb_ipv4_done(struct fb *f, size_t ip)
{
    fb_set16(f, ip + 2, (uint16_t)(f->n - ip));
}

/* IPv6 header: traffic class 0xb8, flow label 0x12345, hop limit 64. */
static size_t fb_ipv6(struct fb *f, uint8_t nh)
{
    size_t at = f->n;
    fb_u8(f, 0x6b);
    fb_u8(f, 0x81);
    fb_u8(f, 0x23);
    fb_u8(f, 0x45);
    fb_u16(f, 0);
    fb_u8(f, nh);
    fb_u8(f, 64);
    fb_put(f, IP6_SRC, 16);
    fb_put(f, IP6_DST, 16);
    return at;
}

static void fb_ipv6_done(struct fb *f, size_t ip)
{
    fb_set16(f, ip + 4, (uint16_t)(f->n - ip - 40));
}

/* Hop-by-hop / routing / destination options: (len8 + 1) * 8 bytes. */
static void fb_ext(struct fb *f, uint8_t nh, uint8_t len8)
{
    fb_u8(f, nh);
    fb_u8(f, len8);
    fb_fill(f, (size_t)(len8 + 1) * 8 - 2, 0);
}

static void fb_frag6(struct fb *f, uint8_t nh, uint16_t off8, int more)
{
    fb_u8(f, nh);
    fb_u8(f, 0);
    fb_u16(f, (uint16_t)(off8 << 3 | (more ? 1 : 0)));
    fb_u32(f, 0xdeadbeef);
}

static size_t fb_tcp(struct fb *f, uint16_t sport, uint16_t dport, uint16_t flags,
                     unsigned doff)
{
    size_t at = f->n;
    fb_u16(f, sport);
    fb_u16(f, dport);
    fb_u32(f, 1000);
    fb_u32(f, 2000);
    fb_u8(f, (uint8_t)(doff << 4 | ((flags >> 8) & 0x0f)));
    fb_u8(f, (uint8_t)flags);
    fb_u16(f, 65535);
    fb_u16(f, 0);
    fb_u16(f, 0);
    if (doff > 5)
        fb_fill(f, (doff - 5) * 4, 0x01);
    return at;
}

static size_t fb_udp(struct fb *f, uint16_t sport, uint16_t dport)
{
    size_t at = f->n;
    fb_u16(f, sport);
    fb_u16(f, dport);
    fb_u16(f, 0);
    fb_u16(f, 0);
    return at;
}

static void fb_udp_done(struct fb *f, size_t udp)
{
    fb_set16(f, udp + 4, (uint16_t)(f->n - udp));
}

static void fb_icmp(struct fb *f, uint8_t type, uint8_t code)
{
    fb_u8(f, type);
    fb_u8(f, code);
    fb_u16(f, 0);
    fb_u16(f, 0x4242);
    fb_u16(f, 1);
}

static const uint8_t ARP_SHA[6] = {0x02, 0, 0, 0, 0, 0x11};
static const uint8_t ARP_THA[6] = {0x02, 0, 0, 0, 0, 0x22};

static void fb_arp(struct fb *f, uint16_t op)
{
    fb_u16(f, 1);
    fb_u16(f, 0x0800);
    fb_u8(f, 6);
    fb_u8(f, 4);
    fb_u16(f, op);
    fb_put(f, ARP_SHA, 6);
    fb_put(f, IP4_SRC, 4);
    fb_put(f, ARP_THA, 6);
    fb_put(f, IP4_DST, 4);
}

/* ---- parse helpers ------------------------------------------------------ */

static bool all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* Invariants that hold after every parse, whatever the input. */
static void check_invariants(const struct pkt *p, const struct flow_key *k,
                             enum parse_result r)
{
    assert_true((unsigned)r < PARSE_N_RESULTS);
    assert_true(p->flags & PKT_F_PARSED);
    assert_true(p->n_vlan <= PARSE_MAX_VLANS);
    assert_int_equal(k->in_port, p->in_port);
    assert_true(all_zero(k->pad, sizeof k->pad));
    assert_true(all_zero(k->tun_src, sizeof k->tun_src));
    assert_true(all_zero(k->tun_dst, sizeof k->tun_dst));
    assert_int_equal(k->tun_id, 0);
    if (parse_key_hot(p))
        assert_false(flow_key_cold(k));
    if (p->l3_ofs != PKT_OFS_NONE) {
        assert_int_not_equal(p->l3, PKT_L3_NONE);
        assert_int_equal(p->l3_ofs, 14 + 4 * p->n_vlan);
        assert_true(p->l3_ofs <= p->len);
    } else {
        assert_int_equal(p->l3, PKT_L3_NONE);
    }
    if (p->l4_ofs != PKT_OFS_NONE) {
        assert_true(p->l3 == PKT_L3_IPV4 || p->l3 == PKT_L3_IPV6);
        assert_true(p->l4_ofs >= p->l3_ofs + 20);
        assert_true((uint32_t)p->l4_ofs + p->l4_len <= p->len);
        assert_int_equal(p->l4_proto, k->nw_proto);
    } else {
        assert_int_equal(p->l4_len, 0);
        assert_int_equal(p->l4_proto, 0);
    }
    if (p->flags & PKT_F_L4) {
        assert_int_equal(r, PARSE_OK);
        assert_int_not_equal(p->l4_ofs, PKT_OFS_NONE);
        assert_true(p->payload_ofs > p->l4_ofs);
        assert_true(p->payload_ofs <= p->l4_ofs + p->l4_len);
        assert_false(p->flags & PKT_F_FRAG_LATER);
    } else {
        assert_int_equal(p->payload_ofs, PKT_OFS_NONE);
        assert_int_equal(k->tp_src, 0);
        assert_int_equal(k->tp_dst, 0);
        assert_int_equal(k->tcp_flags, 0);
    }
    if (p->flags & PKT_F_FRAG_LATER)
        assert_true(p->flags & PKT_F_FRAG);
    assert_int_equal(!!(k->nw_frag & FLOW_FRAG_ANY), !!(p->flags & PKT_F_FRAG));
    assert_int_equal(!!(k->nw_frag & FLOW_FRAG_LATER), !!(p->flags & PKT_F_FRAG_LATER));
    if (p->flags & PKT_F_VXLAN) {
        assert_true(p->flags & PKT_F_L4);
        assert_int_equal(p->l4_proto, 17);
        assert_int_equal(k->tp_dst, VXLAN_UDP_PORT);
        assert_false(p->flags & PKT_F_FRAG);
        assert_true((uint32_t)p->payload_ofs + 8 <= (uint32_t)p->l4_ofs + p->l4_len);
    }
    if (r == PARSE_OK && (p->l3 == PKT_L3_IPV4 || p->l3 == PKT_L3_IPV6))
        assert_int_not_equal(p->l4_ofs, PKT_OFS_NONE);
    if (p->flags & PKT_F_IPV6_RH)
        assert_int_equal(p->l3, PKT_L3_IPV6);
    /* The pseudo-header's destination of a parsed IPv6 packet: the
     * Destination Address without a routing header in effect, else an
     * address inside the headers, or none (a type we do not know). */
    if (r == PARSE_OK && p->l3 == PKT_L3_IPV6) {
        const uint8_t *ip = p->data + p->l3_ofs;
        const uint8_t *d = parse_ipv6_final_dst(ip, (uint32_t)(p->l4_ofs - p->l3_ofs));
        if (!(p->flags & PKT_F_IPV6_RH))
            assert_ptr_equal(d, ip + 24);
        else if (d)
            assert_true(d >= ip + IPV6_HLEN + 8 && d + 16 <= p->data + p->l4_ofs);
    }
}

struct res {
    enum parse_result r;
    struct flow_key k;
    struct pkt m; /* metadata copy; m.data is dangling, never dereferenced */
};

/* The layout fields the keyless parsers must agree on with parse_pkt(). */
static void assert_same_layout(const struct pkt *p, const struct pkt *m)
{
    assert_int_equal(p->l3_ofs, m->l3_ofs);
    assert_int_equal(p->l4_ofs, m->l4_ofs);
    assert_int_equal(p->l4_len, m->l4_len);
    assert_int_equal(p->payload_ofs, m->payload_ofs);
    assert_int_equal(p->l3, m->l3);
    assert_int_equal(p->l4_proto, m->l4_proto);
    assert_int_equal(p->n_vlan, m->n_vlan);
    assert_int_equal(p->flags, m->flags);
}

static enum parse_result layout_rx(struct pkt *p)
{
    return parse_pkt_layout_rx(p);
}

/* The keyless parsers, which must agree with parse_pkt() on the layout. */
static enum parse_result (*const layout_parsers[])(struct pkt *) = {parse_pkt_layout,
                                                                    layout_rx};

/* Parses b[0..n) in an exactly-sized heap packet on in_port 3. */
static struct res parse_n(const uint8_t *b, size_t n)
{
    struct res out;
    struct pkt *p = pkt_from_data(b, (uint32_t)n);
    assert_non_null(p);
    assert_int_equal(p->len, n);
    assert_int_equal(pkt_tailroom(p), 0); /* the buffer ends at the frame end */
    p->in_port = 3;
    memset(&out.k, 0xa5, sizeof out.k); /* the parser must zero it all */
    out.r = parse_pkt(p, &out.k);
    check_invariants(p, &out.k, out.r);
    out.m = *p;
    pkt_free(p);

    /* parse_pkt_layout(), and parse_pkt_layout_rx() on a packet as
     * received (pkt_from_data() makes one): the same result and layout,
     * without a key. */
    for (size_t i = 0; i < sizeof layout_parsers / sizeof layout_parsers[0]; i++) {
        struct pkt *q = pkt_from_data(b, (uint32_t)n);
        assert_non_null(q);
        q->in_port = 3;
        assert_int_equal(layout_parsers[i](q), out.r);
        assert_same_layout(q, &out.m);
        pkt_free(q);
    }

    /* The full parse without parse_ipv4_fast(): the same result, key and
     * layout (the fast path only shortens the common frame's). */
    struct pkt *q = pkt_from_data(b, (uint32_t)n);
    assert_non_null(q);
    q->in_port = 3;
    struct flow_key kf;
    memset(&kf, 0x5a, sizeof kf);
    assert_int_equal(parse_pkt_into(q, &kf, true, false, false), out.r);
    assert_memory_equal(&kf, &out.k, sizeof kf);
    assert_same_layout(q, &out.m);
    pkt_free(q);
    return out;
}

/* Whether parse_ipv4_fast() takes b[0..n) (the frame's key and layout are
 * then checked by parse_n()). */
static bool fast_takes(const uint8_t *b, size_t n)
{
    struct pkt *p = pkt_from_data(b, (uint32_t)n);
    assert_non_null(p);
    struct flow_key k;
    flow_key_zero(&k);
    p->flags |= PKT_F_PARSED;
    bool took = parse_ipv4_fast(p, &k, p->data, p->len);
    pkt_free(p);
    return took;
}

static struct res parse_fb(const struct fb *f)
{
    return parse_n(f->b, f->n);
}

/* A key with only the fields every Ethernet frame built here has. */
static struct flow_key key_l2(uint16_t dl_type)
{
    struct flow_key k;
    memset(&k, 0, sizeof k);
    k.in_port = 3;
    memcpy(k.dl_dst, MAC_DST, 6);
    memcpy(k.dl_src, MAC_SRC, 6);
    k.dl_type = dl_type;
    return k;
}

static void key_ipv4(struct flow_key *k, uint8_t proto)
{
    k->nw_src = be32_of(IP4_SRC);
    k->nw_dst = be32_of(IP4_DST);
    k->nw_tos = 0x28;
    k->nw_ttl = 64;
    k->nw_proto = proto;
}

static void key_ipv6(struct flow_key *k, uint8_t proto)
{
    memcpy(k->ipv6_src, IP6_SRC, 16);
    memcpy(k->ipv6_dst, IP6_DST, 16);
    k->ipv6_label = 0x12345;
    k->nw_tos = 0xb8;
    k->nw_ttl = 64;
    k->nw_proto = proto;
}

static void assert_key(const struct flow_key *got, const struct flow_key *exp)
{
    if (!flow_equal(got, exp)) {
        const uint8_t *g = (const void *)got, *e = (const void *)exp;
        for (size_t i = 0; i < sizeof *got; i++)
            if (g[i] != e[i])
                print_error("key byte %zu: got 0x%02x expected 0x%02x\n", i, g[i], e[i]);
        fail_msg("flow key mismatch");
    }
}

static void assert_ofs(const struct res *r, unsigned l3, unsigned l4, unsigned l4_len,
                       unsigned payload)
{
    assert_int_equal(r->m.l3_ofs, l3);
    assert_int_equal(r->m.l4_ofs, l4);
    assert_int_equal(r->m.l4_len, l4_len);
    assert_int_equal(r->m.payload_ofs, payload);
}

#define NONE PKT_OFS_NONE
#define F_P PKT_F_PARSED

/* ---- result names ------------------------------------------------------- */

static void test_result_names(void **state)
{
    (void)state;
    static const struct {
        enum parse_result r;
        const char *upper;
        const char *desc;
    } all[] = {
#define PARSE_T_(name, desc) {PARSE_##name, #name, desc},
        PARSE_RESULTS(PARSE_T_)
#undef PARSE_T_
    };
    assert_int_equal(sizeof all / sizeof all[0], PARSE_N_RESULTS);
    for (size_t i = 0; i < PARSE_N_RESULTS; i++) {
        char lower[32];
        size_t n = strlen(all[i].upper);
        assert_true(n < sizeof lower);
        for (size_t j = 0; j <= n; j++)
            lower[j] = (char)tolower((unsigned char)all[i].upper[j]);
        assert_string_equal(parse_result_name(all[i].r), lower);
        assert_string_equal(parse_result_desc(all[i].r), all[i].desc);
    }
    assert_string_equal(parse_result_name(PARSE_OK), "ok");
    assert_string_equal(parse_result_name(PARSE_IP_TRUNC), "ip_trunc");
    assert_string_equal(parse_result_name(PARSE_N_RESULTS), "unknown");
    assert_string_equal(parse_result_name((enum parse_result)-1), "unknown");
    assert_non_null(parse_result_desc(PARSE_N_RESULTS));
}

/* ---- L2 ------------------------------------------------------------------ */

static void test_eth_unknown_type(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x88cc); /* LLDP */
    fb_payload(&f, 46);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x88cc);
    assert_key(&r.k, &e);
    assert_int_equal(r.m.l3, PKT_L3_NONE);
    assert_ofs(&r, NONE, NONE, 0, NONE);
    assert_int_equal(r.m.flags, F_P);
    assert_int_equal(r.m.n_vlan, 0);
    assert_int_equal(r.m.l4_proto, 0);
}

static void test_eth_length_field(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0026); /* 802.3 length: LLC follows */
    fb_payload(&f, 46);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x0026);
    assert_key(&r.k, &e);
    assert_ofs(&r, NONE, NONE, 0, NONE);
}

static void test_eth_runt(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    struct res r = parse_n(f.b, 13);
    assert_int_equal(r.r, PARSE_ETH_TRUNC);
    struct flow_key e;
    memset(&e, 0, sizeof e);
    e.in_port = 3;
    assert_key(&r.k, &e);
    assert_int_equal(r.m.flags, F_P);
    assert_ofs(&r, NONE, NONE, 0, NONE);
    r = parse_n(f.b, 0);
    assert_int_equal(r.r, PARSE_ETH_TRUNC);
    assert_key(&r.k, &e);
}

/* Reused packets: the parser clears its own flags, keeps the others,
 * zeroes the key whatever it held, and copies in_port. */
static void test_reparse_state(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 17, 5, 0x2000 | 10); /* later fragment */
    fb_payload(&f, 20);
    fb_ipv4_done(&f, ip);

    struct pkt *p = pkt_from_data(f.b, (uint32_t)f.n);
    assert_non_null(p);
    p->in_port = 9;
    p->flags = PKT_F_VNET_CSUM | PKT_F_VXLAN | PKT_F_L4;
    struct flow_key k;
    memset(&k, 0xff, sizeof k);
    assert_int_equal(parse_pkt(p, &k), PARSE_OK);
    check_invariants(p, &k, PARSE_OK);
    assert_int_equal(k.in_port, 9);
    assert_int_equal(p->flags, F_P | PKT_F_VNET_CSUM | PKT_F_FRAG | PKT_F_FRAG_LATER);

    /* Same packet, now not a fragment and too short for Ethernet. */
    p->len = 10;
    p->in_port = 4;
    assert_int_equal(parse_pkt(p, &k), PARSE_ETH_TRUNC);
    assert_int_equal(p->flags, F_P | PKT_F_VNET_CSUM);
    assert_int_equal(p->l3_ofs, NONE);
    assert_int_equal(p->l4_ofs, NONE);
    assert_int_equal(p->l3, PKT_L3_NONE);
    struct flow_key e;
    memset(&e, 0, sizeof e);
    e.in_port = 4;
    assert_key(&k, &e);
    pkt_free(p);
}

static void test_vlan_udp(void **state)
{
    (void)state;
    for (int dei = 0; dei <= 1; dei++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x8100);
        fb_tag(&f, (uint16_t)(5 << 13 | dei << 12 | 100), 0x0800);
        size_t ip = fb_ipv4(&f, 17, 5, 0);
        size_t udp = fb_udp(&f, 5000, 53);
        fb_payload(&f, 10);
        fb_udp_done(&f, udp);
        fb_ipv4_done(&f, ip);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x0800);
        e.vlan_tpid[0] = 0x8100;
        e.vlan_tci[0] = (uint16_t)(5 << 13 | FLOW_VLAN_PRESENT | 100); /* DEI not kept */
        key_ipv4(&e, 17);
        e.tp_src = 5000;
        e.tp_dst = 53;
        assert_key(&r.k, &e);
        assert_int_equal(r.m.n_vlan, 1);
        assert_int_equal(r.m.l3, PKT_L3_IPV4);
        assert_int_equal(r.m.l4_proto, 17);
        assert_ofs(&r, 18, 38, 18, 46);
        assert_int_equal(r.m.flags, F_P | PKT_F_L4);
    }
}

static void test_qinq(void **state)
{
    (void)state;
    const uint16_t outer[] = {0x88a8, 0x8100};
    for (size_t i = 0; i < 2; i++) {
        struct fb f = {.n = 0};
        fb_eth(&f, outer[i]);
        fb_tag(&f, (uint16_t)(3 << 13 | 10), 0x8100);
        fb_tag(&f, (uint16_t)(7 << 13 | 4095), 0x0806);
        fb_arp(&f, 1);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        assert_int_equal(r.m.n_vlan, 2);
        assert_int_equal(r.k.vlan_tpid[0], outer[i]);
        assert_int_equal(r.k.vlan_tpid[1], 0x8100);
        assert_int_equal(r.k.vlan_tci[0], 3 << 13 | FLOW_VLAN_PRESENT | 10);
        assert_int_equal(r.k.vlan_tci[1], 7 << 13 | FLOW_VLAN_PRESENT | 4095);
        assert_int_equal(r.k.dl_type, 0x0806);
        assert_int_equal(r.m.l3, PKT_L3_ARP);
        assert_int_equal(r.m.l3_ofs, 22);
        assert_int_equal(r.k.nw_src, be32_of(IP4_SRC));
    }
}

static void test_vlan_depth(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x88a8);
    fb_tag(&f, 1, 0x8100);
    fb_tag(&f, 2, 0x8100);
    fb_tag(&f, 3, 0x0800);
    size_t ip = fb_ipv4(&f, 17, 5, 0);
    size_t udp = fb_udp(&f, 1, 2);
    fb_udp_done(&f, udp);
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_VLAN_DEPTH);
    struct flow_key e = key_l2(0);
    e.vlan_tpid[0] = 0x88a8;
    e.vlan_tpid[1] = 0x8100;
    e.vlan_tci[0] = FLOW_VLAN_PRESENT | 1;
    e.vlan_tci[1] = FLOW_VLAN_PRESENT | 2;
    assert_key(&r.k, &e);
    assert_int_equal(r.m.n_vlan, 2);
    assert_ofs(&r, NONE, NONE, 0, NONE);
    /* The third TPID alone decides: no tag bytes needed after it. */
    r = parse_n(f.b, 22);
    assert_int_equal(r.r, PARSE_VLAN_DEPTH);
}

static void test_vlan_unknown_inner(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x8100);
    fb_tag(&f, 42, 0x88cc);
    fb_payload(&f, 42);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.k.dl_type, 0x88cc);
    assert_int_equal(r.m.n_vlan, 1);
    assert_int_equal(r.k.vlan_tci[0], FLOW_VLAN_PRESENT | 42);
    assert_ofs(&r, NONE, NONE, 0, NONE);
}

/* ---- ARP ----------------------------------------------------------------- */

static void test_arp(void **state)
{
    (void)state;
    const uint16_t ops[] = {1, 2, 0x0103};
    for (size_t i = 0; i < 3; i++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x0806);
        fb_arp(&f, ops[i]);
        fb_fill(&f, 18, 0); /* padded to 60 */
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x0806);
        e.nw_proto = (uint8_t)ops[i]; /* low 8 bits of the opcode */
        e.nw_src = be32_of(IP4_SRC);
        e.nw_dst = be32_of(IP4_DST);
        memcpy(e.arp_sha, ARP_SHA, 6);
        memcpy(e.arp_tha, ARP_THA, 6);
        assert_key(&r.k, &e);
        assert_int_equal(r.m.l3, PKT_L3_ARP);
        assert_ofs(&r, 14, NONE, 0, NONE);
        assert_int_equal(r.m.flags, F_P);
        assert_int_equal(r.m.l4_proto, 0);
    }
}

static void test_arp_not_eth_ipv4(void **state)
{
    (void)state;
    /* htype, ptype, hlen, plen each wrong in turn */
    for (int which = 0; which < 4; which++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x0806);
        fb_arp(&f, 1);
        if (which == 0)
            fb_set16(&f, 14, 6);
        else if (which == 1)
            fb_set16(&f, 16, 0x86dd);
        else
            f.b[14 + 4 + (which - 2)] = 16;
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x0806);
        assert_key(&r.k, &e);
        assert_int_equal(r.m.l3, PKT_L3_ARP);
        assert_int_equal(r.m.l3_ofs, 14);
        /* Its 8 fixed bytes are still required. */
        assert_int_equal(parse_n(f.b, 21).r, PARSE_ARP_TRUNC);
        assert_int_equal(parse_n(f.b, 22).r, PARSE_OK);
    }
}

/* ---- IPv4 ---------------------------------------------------------------- */

static void test_ipv4_tcp(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 6, 5, 0x4000); /* DF: not a fragment */
    fb_tcp(&f, 1234, 80, 0x0f12, 5); /* reserved bits + SYN|ACK */
    fb_payload(&f, 7);
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x0800);
    key_ipv4(&e, 6);
    e.tp_src = 1234;
    e.tp_dst = 80;
    e.tcp_flags = 0x0f12;
    assert_key(&r.k, &e);
    assert_int_equal(r.m.l3, PKT_L3_IPV4);
    assert_int_equal(r.m.l4_proto, 6);
    assert_ofs(&r, 14, 34, 27, 54);
    assert_int_equal(r.m.flags, F_P | PKT_F_L4);
}

static void test_ipv4_options_tcp_options(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 6, 8, 0); /* 12 bytes of options */
    fb_tcp(&f, 40000, 443, 0x002, 8); /* 12 bytes of options */
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x0800);
    key_ipv4(&e, 6);
    e.tp_src = 40000;
    e.tp_dst = 443;
    e.tcp_flags = 0x002;
    assert_key(&r.k, &e);
    assert_ofs(&r, 14, 46, 32, 78);

    /* Maximal IHL (60 bytes) and data offset (60 bytes). */
    struct fb g = {.n = 0};
    fb_eth(&g, 0x0800);
    ip = fb_ipv4(&g, 6, 15, 0);
    fb_tcp(&g, 1, 2, 0x010, 15);
    fb_ipv4_done(&g, ip);
    r = parse_fb(&g);
    assert_int_equal(r.r, PARSE_OK);
    assert_ofs(&r, 14, 74, 60, 134);
}

static void test_ipv4_padding(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 17, 5, 0);
    size_t udp = fb_udp(&f, 68, 67);
    fb_payload(&f, 4);
    fb_udp_done(&f, udp);
    fb_ipv4_done(&f, ip);
    assert_int_equal(f.n, 46);
    struct res bare = parse_fb(&f);
    fb_fill(&f, 14, 0xff); /* Ethernet minimum 60 bytes */
    struct res pad = parse_fb(&f);
    assert_int_equal(pad.r, PARSE_OK);
    assert_key(&pad.k, &bare.k);
    assert_ofs(&pad, 14, 34, 12, 42);
    assert_int_equal(pad.m.flags, F_P | PKT_F_L4);
    assert_int_equal(pad.k.tp_src, 68);
    assert_int_equal(pad.k.tp_dst, 67);
}

static void build_ipv4_frag(struct fb *f, uint8_t proto, uint16_t frag, size_t l4_bytes)
{
    fb_eth(f, 0x0800);
    size_t ip = fb_ipv4(f, proto, 5, frag);
    size_t l4 = f->n;
    fb_payload(f, l4_bytes);
    if (proto == 17 && l4_bytes >= 8) {
        fb_set16(f, l4, 1111);
        fb_set16(f, l4 + 2, 4789);
        fb_set16(f, l4 + 4, 1408); /* the whole datagram's length */
    }
    fb_ipv4_done(f, ip);
}

static void test_ipv4_frag_first(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    build_ipv4_frag(&f, 17, 0x2000, 40);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x0800);
    key_ipv4(&e, 17);
    e.nw_frag = FLOW_FRAG_ANY;
    e.tp_src = 1111;
    e.tp_dst = 4789;
    assert_key(&r.k, &e);
    /* UDP length 1408 > 40 is fine in a fragment; no VXLAN in a fragment. */
    assert_int_equal(r.m.flags, F_P | PKT_F_FRAG | PKT_F_L4);
    assert_ofs(&r, 14, 34, 40, 42);

    /* A bad UDP length is still bad in a fragment. */
    fb_set16(&f, 34 + 4, 7);
    assert_int_equal(parse_fb(&f).r, PARSE_UDP_LEN);
}

static void test_ipv4_frag_first_short(void **state)
{
    (void)state;
    const uint8_t protos[] = {6, 17, 132, 1};
    const size_t short_len[] = {19, 7, 11, 3};
    for (size_t i = 0; i < 4; i++) {
        for (size_t n = 0; n <= short_len[i]; n++) {
            struct fb f = {.n = 0};
            build_ipv4_frag(&f, protos[i], 0x2000, n);
            struct res r = parse_fb(&f);
            assert_int_equal(r.r, PARSE_OK);
            assert_int_equal(r.m.flags, F_P | PKT_F_FRAG);
            assert_int_equal(r.k.nw_frag, FLOW_FRAG_ANY);
            assert_int_equal(r.k.tp_src, 0);
            assert_int_equal(r.k.tp_dst, 0);
            assert_ofs(&r, 14, 34, n, NONE);

            /* The same bytes unfragmented: a cut L4 header. */
            struct fb g = {.n = 0};
            build_ipv4_frag(&g, protos[i], 0, n);
            r = parse_fb(&g);
            assert_int_equal(r.r, PARSE_L4_TRUNC);
            assert_int_equal(r.m.flags, F_P);
            assert_ofs(&r, 14, 34, n, NONE);
            assert_int_equal(r.k.nw_proto, protos[i]);
        }
    }
    /* TCP whose options are cut by the fragment end: no L4, OK. */
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 6, 5, 0x2000);
    fb_tcp(&f, 1, 2, 0x02, 5);
    f.b[34 + 12] = 8 << 4; /* claims 32 bytes, 20 present */
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.m.flags, F_P | PKT_F_FRAG);
    assert_int_equal(r.k.tp_dst, 0);
    /* ...but a data offset below 5 is malformed in any packet. */
    f.b[34 + 12] = 4 << 4;
    assert_int_equal(parse_fb(&f).r, PARSE_TCP_HLEN);
}

static void test_ipv4_frag_later(void **state)
{
    (void)state;
    const uint16_t frags[] = {0x2000 | 185, 185, 0x4000 | 1, 0x1fff};
    for (size_t i = 0; i < 4; i++) {
        struct fb f = {.n = 0};
        build_ipv4_frag(&f, 17, frags[i], 40); /* looks like UDP, is not */
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x0800);
        key_ipv4(&e, 17);
        e.nw_frag = FLOW_FRAG_ANY | FLOW_FRAG_LATER;
        assert_key(&r.k, &e);
        assert_int_equal(r.m.flags, F_P | PKT_F_FRAG | PKT_F_FRAG_LATER);
        assert_ofs(&r, 14, 34, 40, NONE);
        assert_int_equal(r.m.l4_proto, 17);
        /* A later fragment can be as short as it likes. */
        struct fb g = {.n = 0};
        build_ipv4_frag(&g, 6, frags[i], 1);
        r = parse_fb(&g);
        assert_int_equal(r.r, PARSE_OK);
        assert_ofs(&r, 14, 34, 1, NONE);
    }
}

static void test_ipv4_malformed(void **state)
{
    (void)state;
    struct fb base = {.n = 0};
    fb_eth(&base, 0x0800);
    size_t ip = fb_ipv4(&base, 17, 5, 0);
    size_t udp = fb_udp(&base, 1, 2);
    fb_payload(&base, 12);
    fb_udp_done(&base, udp);
    fb_ipv4_done(&base, ip);
    assert_int_equal(parse_fb(&base).r, PARSE_OK);

    struct fb f;
    struct res r;
    for (unsigned ihl = 0; ihl < 5; ihl++) {
        f = base;
        f.b[14] = (uint8_t)(0x40 | ihl);
        r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_IP_HLEN);
        assert_int_equal(r.k.nw_src, 0);
        assert_int_equal(r.m.l3_ofs, 14);
        assert_int_equal(r.m.l3, PKT_L3_IPV4);
        assert_int_equal(r.m.l4_ofs, NONE);
    }
    /* total length below the header */
    f = base;
    fb_set16(&f, 16, 19);
    r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_IP_LEN);
    assert_int_equal(r.k.nw_src, 0);
    f = base;
    f.b[14] = 0x46; /* 24-byte header... */
    fb_set16(&f, 16, 23); /* ...longer than tot_len */
    assert_int_equal(parse_fb(&f).r, PARSE_IP_LEN);
    fb_set16(&f, 16, 24); /* header only: unknown-proto-free UDP of 0 bytes */
    assert_int_equal(parse_fb(&f).r, PARSE_L4_TRUNC);
    /* total length beyond the frame: header fields filled, no L4 */
    f = base;
    fb_set16(&f, 16, (uint16_t)(f.n - 14 + 1));
    r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_IP_TRUNC);
    struct flow_key e = key_l2(0x0800);
    key_ipv4(&e, 17);
    assert_key(&r.k, &e);
    assert_ofs(&r, 14, NONE, 0, NONE);
    /* options claimed beyond the frame */
    f = base;
    f.n = 14 + 28;
    f.b[14] = 0x48; /* 32-byte header, 28 bytes present */
    fb_set16(&f, 16, 40);
    r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_IP_TRUNC);
    assert_int_equal(r.k.nw_src, 0);
    /* version mismatch */
    const uint8_t bad_ver[] = {0x65, 0x05, 0x00, 0xf5};
    for (size_t i = 0; i < sizeof bad_ver; i++) {
        f = base;
        f.b[14] = bad_ver[i];
        r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_IP_VERSION);
        assert_int_equal(r.k.nw_src, 0);
        assert_int_equal(r.k.dl_type, 0x0800);
    }
}

static void test_udp_len(void **state)
{
    (void)state;
    struct fb base = {.n = 0};
    fb_eth(&base, 0x0800);
    size_t ip = fb_ipv4(&base, 17, 5, 0);
    size_t udp = fb_udp(&base, 1, 2);
    fb_payload(&base, 12);
    fb_udp_done(&base, udp); /* 20 */
    fb_ipv4_done(&base, ip);
    const struct {
        uint16_t ulen;
        enum parse_result r;
    } cases[] = {
        {0, PARSE_UDP_LEN}, {7, PARSE_UDP_LEN}, {8, PARSE_OK},   {19, PARSE_OK},
        {20, PARSE_OK},     {21, PARSE_UDP_LEN}, {0xffff, PARSE_UDP_LEN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fb f = base;
        fb_set16(&f, udp + 4, cases[i].ulen);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, cases[i].r);
        if (r.r == PARSE_OK) {
            assert_int_equal(r.k.tp_src, 1);
            assert_int_equal(r.m.l4_len, 20); /* per IP, not per UDP */
            assert_int_equal(r.m.payload_ofs, 42);
        } else {
            assert_int_equal(r.k.tp_src, 0);
            assert_false(r.m.flags & PKT_F_L4);
            assert_int_equal(r.m.l4_ofs, 34);
        }
    }
}

static void test_tcp_hlen(void **state)
{
    (void)state;
    struct fb base = {.n = 0};
    fb_eth(&base, 0x0800);
    size_t ip = fb_ipv4(&base, 6, 5, 0);
    size_t tcp = fb_tcp(&base, 1, 2, 0x10, 5);
    fb_payload(&base, 20);
    fb_ipv4_done(&base, ip); /* L4 length 40 */
    for (unsigned doff = 0; doff < 16; doff++) {
        struct fb f = base;
        f.b[tcp + 12] = (uint8_t)(doff << 4);
        struct res r = parse_fb(&f);
        if (doff < 5 || doff * 4 > 40) {
            assert_int_equal(r.r, PARSE_TCP_HLEN);
            assert_false(r.m.flags & PKT_F_L4);
            assert_int_equal(r.k.tp_dst, 0);
        } else {
            assert_int_equal(r.r, PARSE_OK);
            assert_int_equal(r.m.payload_ofs, 34 + doff * 4);
            assert_int_equal(r.k.tcp_flags, 0x10);
        }
    }
}

static void test_sctp(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 132, 5, 0);
    fb_u16(&f, 2905);
    fb_u16(&f, 3868);
    fb_u32(&f, 0x11223344);
    fb_u32(&f, 0);
    fb_payload(&f, 16);
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x0800);
    key_ipv4(&e, 132);
    e.tp_src = 2905;
    e.tp_dst = 3868;
    assert_key(&r.k, &e);
    assert_ofs(&r, 14, 34, 28, 46);
    assert_int_equal(r.m.flags, F_P | PKT_F_L4);
}

static void test_icmp(void **state)
{
    (void)state;
    const uint8_t tc[][2] = {{8, 0}, {0, 0}, {3, 4}, {11, 1}};
    for (size_t i = 0; i < 4; i++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x0800);
        size_t ip = fb_ipv4(&f, 1, 5, 0);
        fb_icmp(&f, tc[i][0], tc[i][1]);
        fb_payload(&f, 8);
        fb_ipv4_done(&f, ip);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x0800);
        key_ipv4(&e, 1);
        e.tp_src = tc[i][0];
        e.tp_dst = tc[i][1];
        assert_key(&r.k, &e);
        assert_ofs(&r, 14, 34, 16, 38);
        assert_int_equal(r.m.flags, F_P | PKT_F_L4);
    }
    /* Exactly 4 bytes of ICMP is a complete header. */
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 1, 5, 0);
    fb_u8(&f, 3);
    fb_u8(&f, 1);
    fb_u16(&f, 0);
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.k.tp_src, 3);
    assert_int_equal(r.k.tp_dst, 1);
    assert_ofs(&r, 14, 34, 4, 38);
}

static void test_unknown_ip_proto(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x0800);
    size_t ip = fb_ipv4(&f, 47, 5, 0); /* GRE */
    fb_payload(&f, 24);
    fb_ipv4_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x0800);
    key_ipv4(&e, 47);
    assert_key(&r.k, &e);
    assert_ofs(&r, 14, 34, 24, NONE);
    assert_int_equal(r.m.l4_proto, 47);
    assert_int_equal(r.m.flags, F_P);

    /* ICMPv6 over IPv4 is just an unknown protocol, even when short. */
    struct fb g = {.n = 0};
    fb_eth(&g, 0x0800);
    ip = fb_ipv4(&g, 58, 5, 0);
    fb_payload(&g, 2);
    fb_ipv4_done(&g, ip);
    r = parse_fb(&g);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.m.flags, F_P);
}

/* ---- IPv6 ---------------------------------------------------------------- */

static void test_ipv6_tcp(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, 6);
    fb_tcp(&f, 5555, 22, 0x018, 5);
    fb_payload(&f, 3);
    fb_ipv6_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x86dd);
    key_ipv6(&e, 6);
    e.tp_src = 5555;
    e.tp_dst = 22;
    e.tcp_flags = 0x018;
    assert_key(&r.k, &e);
    assert_int_equal(r.m.l3, PKT_L3_IPV6);
    assert_int_equal(r.m.l4_proto, 6);
    assert_ofs(&r, 14, 54, 23, 74);
    assert_int_equal(r.m.flags, F_P | PKT_F_L4);
}

static void test_ipv6_each_ext(void **state)
{
    (void)state;
    const uint8_t types[] = {0, 43, 60};
    for (size_t i = 0; i < 3; i++) {
        for (uint8_t len8 = 0; len8 <= 2; len8++) {
            struct fb f = {.n = 0};
            fb_eth(&f, 0x86dd);
            size_t ip = fb_ipv6(&f, types[i]);
            fb_ext(&f, 17, len8);
            size_t udp = fb_udp(&f, 546, 547);
            fb_payload(&f, 5);
            fb_udp_done(&f, udp);
            fb_ipv6_done(&f, ip);
            struct res r = parse_fb(&f);
            assert_int_equal(r.r, PARSE_OK);
            struct flow_key e = key_l2(0x86dd);
            key_ipv6(&e, 17);
            e.tp_src = 546;
            e.tp_dst = 547;
            assert_key(&r.k, &e);
            unsigned l4 = 54 + (len8 + 1u) * 8;
            assert_ofs(&r, 14, l4, 13, l4 + 8);
            assert_int_equal(r.m.l4_proto, 17);
        }
    }
}

static void test_ipv6_ext_chain(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, 0);
    fb_ext(&f, 43, 0);  /* hop-by-hop, 8 */
    fb_ext(&f, 60, 2);  /* routing, 24 */
    fb_ext(&f, 6, 1);   /* destination options, 16 */
    fb_tcp(&f, 7, 8, 0x001, 6);
    fb_ipv6_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x86dd);
    key_ipv6(&e, 6);
    e.tp_src = 7;
    e.tp_dst = 8;
    e.tcp_flags = 0x001;
    assert_key(&r.k, &e);
    assert_ofs(&r, 14, 54 + 48, 24, 54 + 48 + 24);
}

static void test_ipv6_no_next_header(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, 60);
    fb_ext(&f, 59, 0);
    fb_ipv6_done(&f, ip);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.k.nw_proto, 59);
    assert_ofs(&r, 14, 62, 0, NONE);
    /* TCP announced but no byte of it: cut L4 header. */
    f.b[54] = 6;
    r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_L4_TRUNC);
    assert_ofs(&r, 14, 62, 0, NONE);
}

static void test_ipv6_ext_limits(void **state)
{
    (void)state;
    for (unsigned n = 1; n <= PARSE_MAX_IPV6_EXT + 2; n++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x86dd);
        size_t ip = fb_ipv6(&f, 60);
        for (unsigned i = 0; i < n; i++)
            fb_ext(&f, i + 1 < n ? 60 : 17, 0);
        size_t udp = fb_udp(&f, 1, 2);
        fb_udp_done(&f, udp);
        fb_ipv6_done(&f, ip);
        struct res r = parse_fb(&f);
        if (n <= PARSE_MAX_IPV6_EXT) {
            assert_int_equal(r.r, PARSE_OK);
            assert_ofs(&r, 14, 54 + 8 * n, 8, 62 + 8 * n);
        } else {
            assert_int_equal(r.r, PARSE_IPV6_EXT);
            assert_int_equal(r.k.nw_proto, 0);
            assert_ofs(&r, 14, NONE, 0, NONE);
            /* the fixed header's fields are still there */
            assert_memory_equal(r.k.ipv6_src, IP6_SRC, 16);
        }
    }
    /* The fragment header counts too. */
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, 44);
    fb_frag6(&f, 60, 0, 1);
    for (unsigned i = 0; i < PARSE_MAX_IPV6_EXT; i++)
        fb_ext(&f, i + 1 < PARSE_MAX_IPV6_EXT ? 60 : 17, 0);
    fb_ipv6_done(&f, ip);
    assert_int_equal(parse_fb(&f).r, PARSE_IPV6_EXT);
}

static void test_ipv6_ext_malformed(void **state)
{
    (void)state;
    const uint8_t types[] = {0, 43, 60, 44};
    for (size_t t = 0; t < 4; t++) {
        /* The payload ends 1..7 bytes into the extension header. */
        for (unsigned have = 0; have < 8; have++) {
            struct fb f = {.n = 0};
            fb_eth(&f, 0x86dd);
            size_t ip = fb_ipv6(&f, types[t]);
            fb_ext(&f, 17, 0);
            f.n = 54 + have;
            fb_ipv6_done(&f, ip);
            struct res r = parse_fb(&f);
            if (have == 0)
                assert_int_equal(r.r, PARSE_IP_LEN); /* payload length 0 */
            else
                assert_int_equal(r.r, PARSE_IPV6_EXT);
        }
    }
    /* Header length running past the payload. */
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, 43);
    fb_ext(&f, 17, 1);
    f.b[55] = 2; /* claims 24 bytes, 16 in the payload */
    fb_ipv6_done(&f, ip);
    fb_fill(&f, 20, 0); /* bytes after the payload do not count */
    assert_int_equal(parse_fb(&f).r, PARSE_IPV6_EXT);

    /* Two fragment headers. */
    struct fb g = {.n = 0};
    fb_eth(&g, 0x86dd);
    ip = fb_ipv6(&g, 44);
    fb_frag6(&g, 44, 0, 1);
    fb_frag6(&g, 17, 0, 1);
    size_t udp = fb_udp(&g, 1, 2);
    fb_udp_done(&g, udp);
    fb_ipv6_done(&g, ip);
    assert_int_equal(parse_fb(&g).r, PARSE_IPV6_EXT);
}

/* ---- IPv6 routing headers ------------------------------------------------ */

static const uint8_t RH_A1[16] = {0xfd, 0, [14] = 0xa1, [15] = 1};
static const uint8_t RH_A2[16] = {0xfd, 0, [14] = 0xa2, [15] = 2};
static const uint8_t RH_A3[16] = {0xfd, 0, [14] = 0xa3, [15] = 3};

/* A routing header of 'type' listing n addresses (Hdr Ext Len 2n); rsv is
 * its 5th byte (type 4: Last Entry). Returns its offset. */
static size_t fb_rh(struct fb *f, uint8_t nh, uint8_t type, uint8_t left, uint8_t rsv,
                    const uint8_t *const *addr, unsigned n)
{
    size_t at = f->n;
    fb_u8(f, nh);
    fb_u8(f, (uint8_t)(2 * n));
    fb_u8(f, type);
    fb_u8(f, left);
    fb_u8(f, rsv);
    fb_fill(f, 3, 0);
    for (unsigned i = 0; i < n; i++)
        fb_put(f, addr[i], 16);
    return at;
}

/* A routing header for build_rh_udp(): type, segments left, 5th byte
 * (type 4: Last Entry) and how many of RH_A1, RH_A2, RH_A3 it lists. */
struct rh {
    uint8_t type, left, rsv;
    unsigned n;
};

/* Eth / IPv6 / (hop-by-hop) / routing header h / UDP with 6 payload bytes;
 * *rh gets the header's offset. */
static struct fb build_rh_udp(bool hbh, const struct rh *h, size_t *rh)
{
    const uint8_t *const addr[] = {RH_A1, RH_A2, RH_A3};
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, hbh ? 0 : 43);
    if (hbh)
        fb_ext(&f, 43, 0);
    *rh = fb_rh(&f, 17, h->type, h->left, h->rsv, addr, h->n);
    size_t udp = fb_udp(&f, 1000, 2000);
    fb_payload(&f, 6);
    fb_udp_done(&f, udp);
    fb_ipv6_done(&f, ip);
    return f;
}

/* The final destination a parsed frame's pseudo-header takes (NULL: none
 * known), as an offset into the frame (or -1). */
static long final_dst_ofs(const struct fb *f)
{
    struct pkt *p = pkt_from_data(f->b, (uint32_t)f->n);
    assert_non_null(p);
    assert_int_equal(parse_pkt_layout(p), PARSE_OK);
    const uint8_t *ip = p->data + p->l3_ofs;
    const uint8_t *d = parse_ipv6_final_dst(ip, (uint32_t)(p->l4_ofs - p->l3_ofs));
    long ofs = d ? (long)(d - p->data) : -1;
    pkt_free(p);
    return ofs;
}

/* Well-formed routing headers: with segments left, the flag and the final
 * destination (type 0: the last address listed; type 2: its one address;
 * type 4: Segment List[0], the list being in reverse, also for a reduced
 * SRH whose segments left is Last Entry + 1); without, neither; a type we
 * do not know: the flag and no final destination. The UDP layer is found
 * behind each, with or without a hop-by-hop header in front. */
static void test_ipv6_rh_final(void **state)
{
    (void)state;
    /* final: index of the final address, -1: the Destination Address,
     * -2: unknown */
    static const struct {
        struct rh h;
        int final;
    } c[] = {
        {{4, 2, 2, 3}, 0},    /* SRH, 3 segments, 2 left: Segment List[0] */
        {{4, 1, 2, 3}, 0},
        {{4, 3, 2, 3}, 0},    /* reduced: left = Last Entry + 1 */
        {{4, 1, 0, 1}, 0},    /* one segment */
        {{4, 0, 2, 3}, -1},   /* segments left 0: ignored */
        {{0, 2, 0, 2}, 1},    /* type 0: the last address */
        {{0, 1, 0, 3}, 2},
        {{0, 3, 0, 3}, 2},
        {{0, 0, 0, 2}, -1},
        {{2, 1, 0, 1}, 0},    /* Mobile IPv6 home address */
        {{2, 0, 0, 1}, -1},
        {{253, 1, 0, 2}, -2}, /* experimental type: layout unknown */
        {{3, 2, 0, 2}, -2},   /* RPL (compressed addresses): not decoded */
        {{253, 0, 0, 2}, -1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        for (int hbh = 0; hbh < 2; hbh++) {
            const struct rh *h = &c[i].h;
            size_t rh;
            struct fb f = build_rh_udp(hbh, h, &rh);
            struct res r = parse_fb(&f);
            assert_int_equal(r.r, PARSE_OK);
            bool in_effect = h->left != 0;
            assert_int_equal(r.m.flags, F_P | PKT_F_L4 | (in_effect ? PKT_F_IPV6_RH : 0));
            size_t l4 = rh + 8 + 16 * h->n;
            assert_ofs(&r, 14, l4, 14, l4 + 8);
            assert_int_equal(r.k.nw_proto, 17);
            assert_memory_equal(r.k.ipv6_dst, IP6_DST, 16); /* the field, for matching */
            long want = c[i].final == -1 ? 14 + 24
                        : c[i].final == -2 ? -1 : (long)(rh + 8 + 16 * (size_t)c[i].final);
            print_message("type %u left %u n %u: final at %ld\n", h->type, h->left, h->n,
                          want);
            assert_int_equal(final_dst_ofs(&f), want);
            if (in_effect) {
                int at = parse_ipv6_rh_final(f.b + rh);
                assert_int_equal(at, c[i].final == -2 ? PARSE_RH_UNKNOWN
                                                      : 8 + 16 * c[i].final);
            }
        }
    }
}

/* More than one routing header: the last one in effect names the final
 * destination (the earlier ones are done when it is processed); behind a
 * fragment header of a first fragment too. */
static void test_ipv6_rh_several(void **state)
{
    (void)state;
    const uint8_t *a1[] = {RH_A1}, *a23[] = {RH_A2, RH_A3};
    static const struct {
        uint8_t t1, l1, t2, l2;
        int final; /* 1: a1, 3: A3 of the second, 0: Destination Address, -1: none */
    } c[] = {
        {0, 1, 0, 2, 3}, {0, 1, 0, 0, 1}, {0, 0, 0, 1, 3}, {0, 0, 0, 0, 0},
        {0, 1, 253, 1, -1}, {253, 1, 0, 1, 3}, {253, 1, 0, 0, -1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x86dd);
        size_t ip = fb_ipv6(&f, 43);
        size_t rh1 = fb_rh(&f, 60, c[i].t1, c[i].l1, 0, a1, 1);
        fb_ext(&f, 43, 0);
        size_t rh2 = fb_rh(&f, 44, c[i].t2, c[i].l2, 0, a23, 2);
        fb_frag6(&f, 17, 0, 1);
        size_t udp = fb_udp(&f, 1, 2);
        fb_payload(&f, 4);
        fb_udp_done(&f, udp);
        fb_ipv6_done(&f, ip);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        assert_int_equal(!!(r.m.flags & PKT_F_IPV6_RH), c[i].l1 || c[i].l2);
        assert_int_equal(r.m.flags & PKT_F_FRAG, PKT_F_FRAG);
        long want = c[i].final == 0 ? 14 + 24 : c[i].final == 1 ? (long)rh1 + 8
                    : c[i].final == 3 ? (long)rh2 + 8 + 16 : -1;
        assert_int_equal(final_dst_ofs(&f), want);
    }
}

/* A routing header in effect that breaks its type's rules is PARSE_IPV6_RH
 * (no L4 layer, like any bad extension header); with segments left 0 the
 * same bytes are ignored. */
static void test_ipv6_rh_malformed(void **state)
{
    (void)state;
    /* odd: one more 8-byte unit, Hdr Ext Len 2n + 1 */
    static const struct {
        struct rh h;
        bool odd;
    } c[] = {
        {{0, 3, 0, 2}, false}, /* more segments left than addresses */
        {{0, 1, 0, 0}, false}, /* no address */
        {{0, 1, 0, 1}, true},  /* odd length: 3 units */
        {{2, 1, 0, 2}, false}, /* type 2 carries exactly one address */
        {{2, 2, 0, 1}, false}, /* ... and one segment left */
        {{4, 1, 0, 0}, false}, /* SRH without a segment */
        {{4, 1, 3, 3}, false}, /* Last Entry beyond the list */
        {{4, 3, 1, 3}, false}, /* segments left > Last Entry + 1 */
        {{4, 1, 1, 1}, true},  /* Last Entry 1 in 3 units: room for one */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const struct rh *h = &c[i].h;
        size_t rh;
        struct fb f = build_rh_udp(false, h, &rh);
        if (c[i].odd) {
            size_t end = rh + 8 + 16 * h->n;
            struct fb g = {.n = 0};
            fb_put(&g, f.b, end);
            fb_fill(&g, 8, 0);
            fb_put(&g, f.b + end, f.n - end);
            g.b[rh + 1] = (uint8_t)(2 * h->n + 1);
            fb_ipv6_done(&g, 14);
            f = g;
        }
        print_message("type %u left %u last %u n %u odd %d\n", h->type, h->left, h->rsv, h->n,
                      c[i].odd);
        assert_int_equal(parse_ipv6_rh_final(f.b + rh), PARSE_RH_BAD);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_IPV6_RH);
        assert_int_equal(r.k.nw_proto, 0);
        assert_ofs(&r, 14, NONE, 0, NONE);
        assert_memory_equal(r.k.ipv6_dst, IP6_DST, 16);
        f.b[rh + 3] = 0;
        r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        assert_int_equal(r.m.flags, F_P | PKT_F_L4);
    }
}

static void test_ipv6_malformed(void **state)
{
    (void)state;
    struct fb base = {.n = 0};
    fb_eth(&base, 0x86dd);
    size_t ip = fb_ipv6(&base, 17);
    size_t udp = fb_udp(&base, 1, 2);
    fb_udp_done(&base, udp);
    fb_ipv6_done(&base, ip);
    assert_int_equal(parse_fb(&base).r, PARSE_OK);

    const uint8_t bad_ver[] = {0x4b, 0x0b, 0x7b, 0xfb};
    for (size_t i = 0; i < sizeof bad_ver; i++) {
        struct fb f = base;
        f.b[14] = bad_ver[i];
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_IP_VERSION);
        assert_true(all_zero(r.k.ipv6_src, 16));
        assert_int_equal(r.m.l3, PKT_L3_IPV6);
        assert_int_equal(r.m.l3_ofs, 14);
    }
    /* Jumbogram: payload length 0 */
    struct fb f = base;
    fb_set16(&f, 18, 0);
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_IP_LEN);
    assert_true(all_zero(r.k.ipv6_src, 16));
    /* Payload length beyond the frame: fixed-header fields, no proto */
    f = base;
    fb_set16(&f, 18, 9);
    r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_IP_TRUNC);
    struct flow_key e = key_l2(0x86dd);
    key_ipv6(&e, 0);
    assert_key(&r.k, &e);
    assert_ofs(&r, 14, NONE, 0, NONE);
    /* An IPv4 packet with an IPv6 ethertype, IPv6 with IPv4's */
    struct fb g = {.n = 0};
    fb_eth(&g, 0x86dd);
    ip = fb_ipv4(&g, 17, 5, 0);
    fb_payload(&g, 30);
    fb_ipv4_done(&g, ip);
    assert_int_equal(parse_fb(&g).r, PARSE_IP_VERSION);
    f = base;
    fb_set16(&f, 12, 0x0800);
    assert_int_equal(parse_fb(&f).r, PARSE_IP_VERSION);
}

static void build_ipv6_frag(struct fb *f, uint16_t off8, int more, uint8_t after_nh,
                            size_t l4_bytes)
{
    fb_eth(f, 0x86dd);
    size_t ip = fb_ipv6(f, 0);
    fb_ext(f, 44, 0);
    fb_frag6(f, after_nh, off8, more);
    if (after_nh == 60)
        fb_ext(f, 17, 0);
    size_t l4 = f->n;
    fb_payload(f, l4_bytes);
    if (l4_bytes >= 8) {
        fb_set16(f, l4, 3333);
        fb_set16(f, l4 + 2, 4444);
        fb_set16(f, l4 + 4, 3000);
    }
    fb_ipv6_done(f, ip);
}

static void test_ipv6_frag_first(void **state)
{
    (void)state;
    struct fb f = {.n = 0};
    build_ipv6_frag(&f, 0, 1, 60, 32); /* hbh, frag, dstopts, udp */
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    struct flow_key e = key_l2(0x86dd);
    key_ipv6(&e, 17);
    e.nw_frag = FLOW_FRAG_ANY;
    e.tp_src = 3333;
    e.tp_dst = 4444;
    assert_key(&r.k, &e);
    assert_int_equal(r.m.flags, F_P | PKT_F_FRAG | PKT_F_L4);
    assert_ofs(&r, 14, 78, 32, 86);

    /* Atomic fragment (offset 0, M 0): still a fragment, as in OVS. */
    struct fb a = {.n = 0};
    build_ipv6_frag(&a, 0, 0, 17, 8);
    fb_set16(&a, 70 + 4, 8);
    r = parse_fb(&a);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.k.nw_frag, FLOW_FRAG_ANY);
    assert_int_equal(r.m.flags, F_P | PKT_F_FRAG | PKT_F_L4);

    /* A first fragment with the L4 header cut is fine. */
    for (size_t n = 0; n < 8; n++) {
        struct fb s = {.n = 0};
        build_ipv6_frag(&s, 0, 1, 17, n);
        r = parse_fb(&s);
        assert_int_equal(r.r, PARSE_OK);
        assert_int_equal(r.m.flags, F_P | PKT_F_FRAG);
        assert_ofs(&r, 14, 70, n, NONE);
        assert_int_equal(r.k.nw_proto, 17);
    }
}

static void test_ipv6_frag_later(void **state)
{
    (void)state;
    const int more[] = {0, 1};
    for (size_t i = 0; i < 2; i++) {
        struct fb f = {.n = 0};
        /* next header 60 after a later fragment is NOT walked */
        build_ipv6_frag(&f, 185, more[i], 60, 3);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x86dd);
        key_ipv6(&e, 60);
        e.nw_frag = FLOW_FRAG_ANY | FLOW_FRAG_LATER;
        assert_key(&r.k, &e);
        assert_int_equal(r.m.flags, F_P | PKT_F_FRAG | PKT_F_FRAG_LATER);
        assert_ofs(&r, 14, 70, 11, NONE);
        assert_int_equal(r.m.l4_proto, 60);
    }
}

static void test_icmpv6(void **state)
{
    (void)state;
    const uint8_t tc[][2] = {{128, 0}, {129, 0}, {1, 3}, {135, 0}};
    for (size_t i = 0; i < 4; i++) {
        struct fb f = {.n = 0};
        fb_eth(&f, 0x86dd);
        size_t ip = fb_ipv6(&f, 58);
        fb_icmp(&f, tc[i][0], tc[i][1]);
        fb_payload(&f, 16);
        fb_ipv6_done(&f, ip);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(0x86dd);
        key_ipv6(&e, 58);
        e.tp_src = tc[i][0];
        e.tp_dst = tc[i][1];
        assert_key(&r.k, &e);
        assert_ofs(&r, 14, 54, 24, 58);
        assert_int_equal(r.m.l4_proto, 58);
        assert_int_equal(r.m.flags, F_P | PKT_F_L4);
    }
    /* ICMPv6 needs 4 bytes; ICMP (1) over IPv6 is unknown, not ICMP */
    struct fb f = {.n = 0};
    fb_eth(&f, 0x86dd);
    size_t ip = fb_ipv6(&f, 58);
    fb_payload(&f, 3);
    fb_ipv6_done(&f, ip);
    assert_int_equal(parse_fb(&f).r, PARSE_L4_TRUNC);
    f.b[20] = 1;
    struct res r = parse_fb(&f);
    assert_int_equal(r.r, PARSE_OK);
    assert_int_equal(r.m.flags, F_P);
    assert_int_equal(r.k.nw_proto, 1);
}

/* ---- VXLAN --------------------------------------------------------------- */

static void build_vxlan(struct fb *f, bool v6, uint16_t dport, size_t udp_payload)
{
    fb_eth(f, v6 ? 0x86dd : 0x0800);
    size_t ip = v6 ? fb_ipv6(f, 17) : fb_ipv4(f, 17, 5, 0);
    size_t udp = fb_udp(f, 49152, dport);
    size_t start = f->n;
    if (udp_payload >= 8) {
        fb_u32(f, 0x08000000); /* I flag */
        fb_u32(f, 0x00123400); /* VNI 0x1234 */
    }
    if (udp_payload >= 8 + 14 + 20 + 8) {
        fb_eth(f, 0x0800);
        size_t iip = fb_ipv4(f, 17, 5, 0);
        size_t iudp = fb_udp(f, 1, 2);
        fb_payload(f, udp_payload - (8 + 14 + 20 + 8));
        fb_udp_done(f, iudp);
        fb_ipv4_done(f, iip);
    } else {
        fb_payload(f, udp_payload - (f->n - start));
    }
    fb_udp_done(f, udp);
    if (v6)
        fb_ipv6_done(f, ip);
    else
        fb_ipv4_done(f, ip);
}

static void test_vxlan(void **state)
{
    (void)state;
    for (int v6 = 0; v6 <= 1; v6++) {
        struct fb f = {.n = 0};
        build_vxlan(&f, v6, VXLAN_UDP_PORT, 54);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        struct flow_key e = key_l2(v6 ? 0x86dd : 0x0800);
        if (v6)
            key_ipv6(&e, 17);
        else
            key_ipv4(&e, 17);
        e.tp_src = 49152;
        e.tp_dst = VXLAN_UDP_PORT;
        assert_key(&r.k, &e); /* outer headers only */
        unsigned l4 = v6 ? 54 : 34;
        assert_ofs(&r, 14, l4, 62, l4 + 8);
        assert_int_equal(r.m.flags, F_P | PKT_F_L4 | PKT_F_VXLAN);
    }
}

static void test_vxlan_short(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 9; n++) {
        struct fb f = {.n = 0};
        build_vxlan(&f, false, VXLAN_UDP_PORT, n);
        struct res r = parse_fb(&f);
        assert_int_equal(r.r, PARSE_OK);
        assert_int_equal(r.k.tp_dst, VXLAN_UDP_PORT);
        uint16_t want = F_P | PKT_F_L4 | (n >= 8 ? PKT_F_VXLAN : 0);
        assert_int_equal(r.m.flags, want);
        assert_ofs(&r, 14, 34, 8 + n, 42);
    }
    /* The UDP length decides, not the bytes after it. */
    struct fb f = {.n = 0};
    build_vxlan(&f, false, VXLAN_UDP_PORT, 12);
    fb_set16(&f, 34 + 4, 8 + 7);
    assert_int_equal(parse_fb(&f).m.flags, F_P | PKT_F_L4);
    /* Port 4789 as the source only: plain UDP. */
    struct fb g = {.n = 0};
    build_vxlan(&g, false, 4790, 20);
    fb_set16(&g, 34, VXLAN_UDP_PORT);
    struct res r = parse_fb(&g);
    assert_int_equal(r.m.flags, F_P | PKT_F_L4);
    assert_int_equal(r.k.tp_src, VXLAN_UDP_PORT);
}

/* ---- truncation at every length, padding ----------------------------------- */

struct ref {
    const char *name;
    struct fb f;
    unsigned n_vlan;
    enum pkt_l3 l3;
    size_t l3_ofs;  /* after the tags */
    size_t l3_hlen; /* bytes of L3 header needed for its key fields */
    size_t l3_end;  /* end of the frame per the L3 length */
};

static struct ref ref_eth_ipv4_tcp(void)
{
    struct ref r = {.name = "eth/ipv4/tcp", .l3 = PKT_L3_IPV4, .l3_ofs = 14, .l3_hlen = 20};
    fb_eth(&r.f, 0x0800);
    size_t ip = fb_ipv4(&r.f, 6, 5, 0);
    fb_tcp(&r.f, 1234, 80, 0x018, 5);
    fb_payload(&r.f, 10);
    fb_ipv4_done(&r.f, ip);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_eth_ipv4opt_tcpopt(void)
{
    struct ref r = {.name = "eth/ipv4+opt/tcp+opt", .l3 = PKT_L3_IPV4, .l3_ofs = 14,
                    .l3_hlen = 28};
    fb_eth(&r.f, 0x0800);
    size_t ip = fb_ipv4(&r.f, 6, 7, 0);
    fb_tcp(&r.f, 1234, 80, 0x002, 10);
    fb_ipv4_done(&r.f, ip);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_vlan_ipv4_udp(void)
{
    struct ref r = {.name = "eth/vlan/ipv4/udp", .n_vlan = 1, .l3 = PKT_L3_IPV4,
                    .l3_ofs = 18, .l3_hlen = 20};
    fb_eth(&r.f, 0x8100);
    fb_tag(&r.f, 0xa064, 0x0800);
    size_t ip = fb_ipv4(&r.f, 17, 5, 0);
    size_t udp = fb_udp(&r.f, 5000, 53);
    fb_payload(&r.f, 12);
    fb_udp_done(&r.f, udp);
    fb_ipv4_done(&r.f, ip);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_qinq_ipv6_ext_tcp(void)
{
    struct ref r = {.name = "qinq/ipv6/hbh/rt/dst/tcp", .n_vlan = 2, .l3 = PKT_L3_IPV6,
                    .l3_ofs = 22, .l3_hlen = 40};
    fb_eth(&r.f, 0x88a8);
    fb_tag(&r.f, 0x0010, 0x8100);
    fb_tag(&r.f, 0x2020, 0x86dd);
    size_t ip = fb_ipv6(&r.f, 0);
    fb_ext(&r.f, 43, 0);
    fb_ext(&r.f, 60, 2);
    fb_ext(&r.f, 6, 0);
    fb_tcp(&r.f, 3000, 8080, 0x011, 5);
    fb_payload(&r.f, 6);
    fb_ipv6_done(&r.f, ip);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_ipv6_srh(void)
{
    struct ref r = {.name = "eth/ipv6/srh/udp", .l3 = PKT_L3_IPV6, .l3_ofs = 14,
                    .l3_hlen = 40};
    static const struct rh srh = {4, 2, 2, 3};
    size_t rh;
    r.f = build_rh_udp(false, &srh, &rh);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_ipv6_frag(void)
{
    struct ref r = {.name = "eth/ipv6/hbh/frag/dst/udp", .l3 = PKT_L3_IPV6, .l3_ofs = 14,
                    .l3_hlen = 40};
    build_ipv6_frag(&r.f, 0, 1, 60, 16);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_ipv4_frag_later(void)
{
    struct ref r = {.name = "eth/ipv4 later fragment", .l3 = PKT_L3_IPV4, .l3_ofs = 14,
                    .l3_hlen = 20};
    build_ipv4_frag(&r.f, 6, 0x2000 | 100, 24);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_arp(void)
{
    struct ref r = {.name = "eth/arp", .l3 = PKT_L3_ARP, .l3_ofs = 14, .l3_hlen = 28};
    fb_eth(&r.f, 0x0806);
    fb_arp(&r.f, 1);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_vlan_arp_padded(void)
{
    struct ref r = {.name = "eth/vlan/arp padded", .n_vlan = 1, .l3 = PKT_L3_ARP,
                    .l3_ofs = 18, .l3_hlen = 28};
    fb_eth(&r.f, 0x8100);
    fb_tag(&r.f, 7, 0x0806);
    fb_arp(&r.f, 2);
    r.l3_end = r.f.n;
    fb_fill(&r.f, 60 - r.f.n, 0);
    return r;
}

static struct ref ref_icmp(void)
{
    struct ref r = {.name = "eth/ipv4/icmp", .l3 = PKT_L3_IPV4, .l3_ofs = 14, .l3_hlen = 20};
    fb_eth(&r.f, 0x0800);
    size_t ip = fb_ipv4(&r.f, 1, 5, 0);
    fb_icmp(&r.f, 8, 0);
    fb_payload(&r.f, 24);
    fb_ipv4_done(&r.f, ip);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_icmpv6(void)
{
    struct ref r = {.name = "eth/ipv6/icmpv6", .l3 = PKT_L3_IPV6, .l3_ofs = 14, .l3_hlen = 40};
    fb_eth(&r.f, 0x86dd);
    size_t ip = fb_ipv6(&r.f, 58);
    fb_icmp(&r.f, 128, 0);
    fb_payload(&r.f, 24);
    fb_ipv6_done(&r.f, ip);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_vxlan(void)
{
    struct ref r = {.name = "eth/ipv4/udp/vxlan/eth/ipv4/udp", .l3 = PKT_L3_IPV4,
                    .l3_ofs = 14, .l3_hlen = 20};
    build_vxlan(&r.f, false, VXLAN_UDP_PORT, 60);
    r.l3_end = r.f.n;
    return r;
}

static struct ref ref_vxlan6(void)
{
    struct ref r = {.name = "eth/ipv6/udp/vxlan/eth/ipv4/udp", .l3 = PKT_L3_IPV6,
                    .l3_ofs = 14, .l3_hlen = 40};
    build_vxlan(&r.f, true, VXLAN_UDP_PORT, 60);
    r.l3_end = r.f.n;
    return r;
}

/* The key a cut at 'cut' must produce, derived from the full frame's key. */
static struct flow_key expected_cut_key(const struct ref *rf, const struct flow_key *full,
                                        size_t cut)
{
    struct flow_key e;
    memset(&e, 0, sizeof e);
    e.in_port = full->in_port;
    if (cut < 14)
        return e;
    if (cut >= rf->l3_end)
        return *full;
    memcpy(e.dl_dst, full->dl_dst, 6);
    memcpy(e.dl_src, full->dl_src, 6);
    for (unsigned i = 0; i < rf->n_vlan && cut >= 14 + 4 * (i + 1); i++) {
        e.vlan_tci[i] = full->vlan_tci[i];
        e.vlan_tpid[i] = full->vlan_tpid[i];
    }
    if (cut < rf->l3_ofs)
        return e;
    e.dl_type = full->dl_type;
    if (cut < rf->l3_ofs + rf->l3_hlen)
        return e;
    if (rf->l3 == PKT_L3_IPV4) {
        e.nw_src = full->nw_src;
        e.nw_dst = full->nw_dst;
        e.nw_tos = full->nw_tos;
        e.nw_ttl = full->nw_ttl;
        e.nw_proto = full->nw_proto;
        e.nw_frag = full->nw_frag;
    } else if (rf->l3 == PKT_L3_IPV6) {
        memcpy(e.ipv6_src, full->ipv6_src, 16);
        memcpy(e.ipv6_dst, full->ipv6_dst, 16);
        e.ipv6_label = full->ipv6_label;
        e.nw_tos = full->nw_tos;
        e.nw_ttl = full->nw_ttl;
    }
    return e;
}

static enum parse_result expected_cut_result(const struct ref *rf, size_t cut)
{
    if (cut < 14)
        return PARSE_ETH_TRUNC;
    if (cut < rf->l3_ofs)
        return PARSE_VLAN_TRUNC;
    if (cut >= rf->l3_end)
        return PARSE_OK;
    return rf->l3 == PKT_L3_ARP ? PARSE_ARP_TRUNC : PARSE_IP_TRUNC;
}

static void check_ref(const struct ref *rf)
{
    struct res full = parse_fb(&rf->f);
    if (full.r != PARSE_OK)
        fail_msg("%s: full frame gives %s", rf->name, parse_result_name(full.r));
    assert_int_equal(full.m.l3, rf->l3);
    assert_int_equal(full.m.l3_ofs, rf->l3_ofs);
    assert_int_equal(full.m.n_vlan, rf->n_vlan);

    for (size_t cut = 0; cut <= rf->f.n; cut++) {
        struct res r = parse_n(rf->f.b, cut);
        enum parse_result want = expected_cut_result(rf, cut);
        if (r.r != want)
            fail_msg("%s cut at %zu: got %s, expected %s", rf->name, cut,
                     parse_result_name(r.r), parse_result_name(want));
        struct flow_key ek = expected_cut_key(rf, &full.k, cut);
        if (!flow_equal(&r.k, &ek)) {
            print_error("%s cut at %zu:\n", rf->name, cut);
            assert_key(&r.k, &ek);
        }
        if (cut >= rf->l3_end) {
            assert_int_equal(r.m.flags, full.m.flags);
            assert_ofs(&r, full.m.l3_ofs, full.m.l4_ofs, full.m.l4_len, full.m.payload_ofs);
            assert_int_equal(r.m.l4_proto, full.m.l4_proto);
            continue;
        }
        unsigned tags = 0;
        if (cut >= 14) {
            tags = (unsigned)((cut - 14) / 4);
            if (tags > rf->n_vlan)
                tags = rf->n_vlan;
        }
        assert_int_equal(r.m.n_vlan, tags);
        if (cut >= rf->l3_ofs) {
            assert_int_equal(r.m.l3_ofs, rf->l3_ofs);
            assert_int_equal(r.m.l3, rf->l3);
        } else {
            assert_int_equal(r.m.l3_ofs, NONE);
            assert_int_equal(r.m.l3, PKT_L3_NONE);
        }
        assert_ofs(&r, r.m.l3_ofs, NONE, 0, NONE);
        assert_int_equal(r.m.l4_proto, 0);
        uint16_t flags = F_P;
        if (rf->l3 == PKT_L3_IPV4 && cut >= rf->l3_ofs + rf->l3_hlen)
            flags |= full.m.flags & (PKT_F_FRAG | PKT_F_FRAG_LATER);
        assert_int_equal(r.m.flags, flags);
    }

    /* Trailing bytes after the L3 length (Ethernet padding, FCS, junk) are
     * ignored: same result, key and offsets. */
    for (size_t extra = 1; extra <= 24; extra++) {
        struct fb p = rf->f;
        fb_fill(&p, extra, (uint8_t)(0xf0 + extra));
        struct res r = parse_fb(&p);
        assert_int_equal(r.r, PARSE_OK);
        assert_key(&r.k, &full.k);
        assert_int_equal(r.m.flags, full.m.flags);
        assert_ofs(&r, full.m.l3_ofs, full.m.l4_ofs, full.m.l4_len, full.m.payload_ofs);
    }
}

/* parse_ipv4_fast() takes the common frames (UDP, VXLAN, TCP with and
 * without options) and leaves every other one to the full parse; on
 * thousands of mutations of them (a byte or a length changed, the frame
 * cut), the two give the same result, key and layout (parse_n()). */
static void test_fast_path(void **state)
{
    (void)state;
    struct fb f[4];
    size_t at;
    memset(f, 0, sizeof f);
    fb_eth(&f[0], 0x0800); /* UDP */
    at = fb_ipv4(&f[0], 17, 5, 0);
    size_t u = fb_udp(&f[0], 1024, 53);
    fb_payload(&f[0], 18);
    fb_udp_done(&f[0], u);
    fb_ipv4_done(&f[0], at);
    fb_eth(&f[1], 0x0800); /* VXLAN */
    at = fb_ipv4(&f[1], 17, 5, 0);
    u = fb_udp(&f[1], 1024, 4789);
    fb_payload(&f[1], 30);
    fb_udp_done(&f[1], u);
    fb_ipv4_done(&f[1], at);
    fb_eth(&f[2], 0x0800); /* TCP */
    at = fb_ipv4(&f[2], 6, 5, 0);
    fb_tcp(&f[2], 40000, 80, 0x012, 5);
    fb_ipv4_done(&f[2], at);
    fb_eth(&f[3], 0x0800); /* TCP with options, and Ethernet padding */
    at = fb_ipv4(&f[3], 6, 5, 0);
    fb_tcp(&f[3], 40000, 80, 0x010, 8);
    fb_ipv4_done(&f[3], at);
    fb_fill(&f[3], 6, 0);
    for (int i = 0; i < 4; i++) {
        assert_true(fast_takes(f[i].b, f[i].n));
        assert_int_equal(parse_fb(&f[i]).r, PARSE_OK);
    }
    assert_true(parse_fb(&f[1]).m.flags & PKT_F_VXLAN);

    uint64_t rng = 7;
    unsigned taken = 0, left = 0;
    for (unsigned it = 0; it < 6000; it++) {
        struct fb g = f[it % 4];
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(rng >> 33);
        switch (r % 4) {
        case 0: /* a byte of the headers */
            g.b[(r >> 2) % 60] ^= (uint8_t)(1u << (r >> 8) % 8);
            break;
        case 1: /* the IP total length */
            fb_set16(&g, 16, (uint16_t)((r >> 2) % 80));
            break;
        case 2: /* the UDP length or TCP data offset */
            g.b[it % 4 < 2 ? 39 : 46] = (uint8_t)(r >> 2);
            break;
        default: /* the frame cut */
            g.n = (r >> 2) % (g.n + 1);
            break;
        }
        if (fast_takes(g.b, g.n))
            taken++;
        else
            left++;
        parse_fb(&g);
    }
    assert_true(taken > 1000 && left > 1000);
}

static void test_trunc_eth_ipv4_tcp(void **state)
{
    (void)state;
    struct ref r = ref_eth_ipv4_tcp();
    check_ref(&r);
    struct res full = parse_fb(&r.f);
    assert_int_equal(full.m.flags, F_P | PKT_F_L4);
    assert_int_equal(full.k.tp_dst, 80);
}

static void test_trunc_ipv4opt_tcpopt(void **state)
{
    (void)state;
    struct ref r = ref_eth_ipv4opt_tcpopt();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).m.payload_ofs, 14 + 28 + 40);
}

static void test_trunc_vlan_ipv4_udp(void **state)
{
    (void)state;
    struct ref r = ref_vlan_ipv4_udp();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).k.vlan_tci[0], 0xa064 | FLOW_VLAN_PRESENT);
}

static void test_trunc_qinq_ipv6_ext_tcp(void **state)
{
    (void)state;
    struct ref r = ref_qinq_ipv6_ext_tcp();
    check_ref(&r);
    struct res full = parse_fb(&r.f);
    assert_int_equal(full.k.nw_proto, 6);
    assert_ofs(&full, 22, 22 + 40 + 40, 26, 22 + 40 + 40 + 20);
}

static void test_trunc_ipv6_srh(void **state)
{
    (void)state;
    struct ref r = ref_ipv6_srh();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).m.flags, F_P | PKT_F_L4 | PKT_F_IPV6_RH);
}

static void test_trunc_ipv6_frag(void **state)
{
    (void)state;
    struct ref r = ref_ipv6_frag();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).m.flags, F_P | PKT_F_FRAG | PKT_F_L4);
}

static void test_trunc_ipv4_frag_later(void **state)
{
    (void)state;
    struct ref r = ref_ipv4_frag_later();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).m.flags, F_P | PKT_F_FRAG | PKT_F_FRAG_LATER);
}

static void test_trunc_arp(void **state)
{
    (void)state;
    struct ref r = ref_arp();
    check_ref(&r);
    struct ref v = ref_vlan_arp_padded();
    check_ref(&v);
    assert_int_equal(parse_fb(&v.f).k.nw_proto, 2);
}

static void test_trunc_icmp(void **state)
{
    (void)state;
    struct ref r = ref_icmp();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).k.tp_src, 8);
}

static void test_trunc_icmpv6(void **state)
{
    (void)state;
    struct ref r = ref_icmpv6();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).k.tp_src, 128);
}

static void test_trunc_vxlan(void **state)
{
    (void)state;
    struct ref r = ref_vxlan();
    check_ref(&r);
    assert_int_equal(parse_fb(&r.f).m.flags, F_P | PKT_F_L4 | PKT_F_VXLAN);
    struct ref r6 = ref_vxlan6();
    check_ref(&r6);
    assert_int_equal(parse_fb(&r6.f).m.flags, F_P | PKT_F_L4 | PKT_F_VXLAN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_names),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_eth_unknown_type),
        cmocka_unit_test(test_eth_length_field),
        cmocka_unit_test(test_eth_runt),
        cmocka_unit_test(test_reparse_state),
        cmocka_unit_test(test_vlan_udp),
        cmocka_unit_test(test_qinq),
        cmocka_unit_test(test_vlan_depth),
        cmocka_unit_test(test_vlan_unknown_inner),
        cmocka_unit_test(test_arp),
        cmocka_unit_test(test_arp_not_eth_ipv4),
        cmocka_unit_test(test_ipv4_tcp),
        cmocka_unit_test(test_ipv4_options_tcp_options),
        cmocka_unit_test(test_ipv4_padding),
        cmocka_unit_test(test_ipv4_frag_first),
        cmocka_unit_test(test_ipv4_frag_first_short),
        cmocka_unit_test(test_ipv4_frag_later),
        cmocka_unit_test(test_ipv4_malformed),
        cmocka_unit_test(test_udp_len),
        cmocka_unit_test(test_tcp_hlen),
        cmocka_unit_test(test_sctp),
        cmocka_unit_test(test_icmp),
        cmocka_unit_test(test_unknown_ip_proto),
        cmocka_unit_test(test_ipv6_tcp),
        cmocka_unit_test(test_ipv6_each_ext),
        cmocka_unit_test(test_ipv6_ext_chain),
        cmocka_unit_test(test_ipv6_no_next_header),
        cmocka_unit_test(test_ipv6_ext_limits),
        cmocka_unit_test(test_ipv6_ext_malformed),
        cmocka_unit_test(test_ipv6_rh_final),
        cmocka_unit_test(test_ipv6_rh_several),
        cmocka_unit_test(test_ipv6_rh_malformed),
        cmocka_unit_test(test_ipv6_malformed),
        cmocka_unit_test(test_ipv6_frag_first),
        cmocka_unit_test(test_ipv6_frag_later),
        cmocka_unit_test(test_icmpv6),
        cmocka_unit_test(test_vxlan),
        cmocka_unit_test(test_vxlan_short),
        cmocka_unit_test(test_trunc_eth_ipv4_tcp),
        cmocka_unit_test(test_trunc_ipv4opt_tcpopt),
        cmocka_unit_test(test_trunc_vlan_ipv4_udp),
        cmocka_unit_test(test_trunc_qinq_ipv6_ext_tcp),
        cmocka_unit_test(test_trunc_ipv6_srh),
        cmocka_unit_test(test_trunc_ipv6_frag),
        cmocka_unit_test(test_trunc_ipv4_frag_later),
        cmocka_unit_test(test_trunc_arp),
        cmocka_unit_test(test_trunc_icmp),
        cmocka_unit_test(test_trunc_icmpv6),
        cmocka_unit_test(test_trunc_vxlan),
    };
    return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
