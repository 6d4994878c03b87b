/* test_tunnel.c: VXLAN push and pop (src/tunnel.h), the outer UDP checksum
 * shortcut, the checksum states around a tunnel, tunnel port configuration,
 * and decap/encap through the datapath with dummy ports.
 *
 * The oracle is independent of src/csum.c and src/tunnel.c: frames and the
 * expected outer headers are built byte by byte in network order here, and
 * every checksum is checked with a naive big-endian byte-pair sum (ref_*).
 * Packets come from pkt_from_data(), whose buffer ends at the last byte, so
 * a read past the end is an error under valgrind and ASan.
 *
 * Where the datapath decides (test_dp_*), a dummy underlay plays the NIC and
 * injects packets with the rx checksum states a device would deliver: this
 * is how the "device vouched for a corrupted packet" case (GOOD on both
 * outer layers) is made, which no file-based port can produce. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "config.h"
#include "dp.h"
#include "drop.h"
#include "flow.h"
#include "netdev.h"
#include "offload.h"
#include "packet.h"
#include "parse.h"
#include "tunnel.h"
#include "helpers/csum_ref.h"

#define MAXF 2048

/* ---- reference checksums (naive, network order; see helpers/csum_ref.h) -- */

/* Pseudo-header sum of the L4 segment at frame[l4..l4+len) behind the IP
 * header at frame[l3]. */
static uint64_t ref_pseudo(const uint8_t *f, size_t l3, uint8_t proto, size_t len)
{
    uint64_t s = proto + (uint64_t)len;
    if ((f[l3] >> 4) == 4)
        return s + ref_sum(f + l3 + 12, 8);
    return s + ref_sum(f + l3 + 8, 32);
}

static bool ref_ipv4_ok(const uint8_t *f, size_t l3)
{
    return ref_fold(ref_sum(f + l3, (size_t)(f[l3] & 15) * 4)) == 0xffff;
}

/* True if the L4 segment (TCP/UDP/ICMP) checksums to zero. */
static bool ref_l4_ok(const uint8_t *f, size_t l3, size_t l4, uint8_t proto, size_t len)
{
    uint64_t s = ref_sum(f + l4, len);
    if (proto != 1)
        s += ref_pseudo(f, l3, proto, len);
    return ref_fold(s) == 0xffff;
}

/* The complete checksum for the field at frame[l4 + field_ofs]. */
static uint16_t ref_l4_csum(uint8_t *f, size_t l3, size_t l4, uint8_t proto, size_t len,
                            size_t field_ofs)
{
    p16(f + l4 + field_ofs, 0);
    uint64_t s = ref_sum(f + l4, len);
    if (proto != 1)
        s += ref_pseudo(f, l3, proto, len);
    uint16_t c = (uint16_t)~ref_fold(s);
    if (proto == 17 && c == 0)
        c = 0xffff;
    return c;
}

/* ---- a deterministic PRNG (xorshift64*) --------------------------------- */

struct rng {
    uint64_t s;
};

static uint32_t rng_next(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (uint32_t)((r->s * 0x2545f4914f6cdd1dull) >> 32);
}

static unsigned rng_below(struct rng *r, unsigned n)
{
    return rng_next(r) % n;
}

static bool quick(void)
{
    const char *q = getenv("FS_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* ---- frame builder ------------------------------------------------------ */

struct fspec {
    bool v6;
    uint8_t proto;       /* 6 TCP, 17 UDP, 1 ICMP (v4), 58 ICMPv6, 0: ARP frame */
    unsigned payload;    /* L4 payload bytes */
    bool vlan;
    bool ip_opts;        /* 4 bytes of IPv4 options */
    unsigned eth_pad;    /* bytes after the IP datagram (Ethernet padding) */
    bool partial;        /* leave the L4 field as the pseudo-header sum */
    uint32_t seed;       /* payload bytes, ports */
};

struct fdesc {
    size_t len, l3, l4, l4len, field;
    uint8_t proto;
};

/* Builds the frame of s into f (MAXF bytes) and describes it in d. The L4
 * checksum is complete unless s->partial. */
static void build_frame(const struct fspec *s, uint8_t *f, struct fdesc *d)
{
    struct rng r = {0x9e3779b97f4a7c15ull ^ s->seed};
    size_t o = 0;
    memcpy(f, "\x02\x00\x00\x00\x01\x02\x02\x00\x00\x00\x01\x01", 12);
    o = 12;
    if (s->vlan) {
        p16(f + o, 0x8100);
        p16(f + o + 2, 0xa064);
        o += 4;
    }
    memset(d, 0, sizeof *d);
    if (s->proto == 0) { /* ARP request, padded to 60 bytes */
        p16(f + o, 0x0806);
        o += 2;
        d->l3 = o;
        memcpy(f + o, "\x00\x01\x08\x00\x06\x04\x00\x01\x02\x00\x00\x00\x01\x01"
                      "\x0a\x00\x00\x01\x00\x00\x00\x00\x00\x00\x0a\x00\x00\x02", 28);
        o += 28;
        while (o < 60)
            f[o++] = 0;
        d->len = o;
        return;
    }
    p16(f + o, s->v6 ? 0x86dd : 0x0800);
    o += 2;
    d->l3 = o;
    size_t hl = s->v6 ? 40 : (s->ip_opts ? 24 : 20);
    size_t l4h = s->proto == 6 ? 20 : s->proto == 17 ? 8 : 4;
    size_t l4len = l4h + s->payload;
    uint8_t *ip = f + o;
    memset(ip, 0, hl);
    if (s->v6) {
        ip[0] = 0x60;
        p16(ip + 4, (uint16_t)l4len);
        ip[6] = s->proto;
        ip[7] = 64;
        memcpy(ip + 8, "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 16);
        memcpy(ip + 24, "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02", 16);
    } else {
        ip[0] = (uint8_t)(0x40 | hl / 4);
        p16(ip + 2, (uint16_t)(hl + l4len));
        p16(ip + 4, (uint16_t)rng_next(&r));
        ip[8] = 64;
        ip[9] = s->proto;
        memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
        if (s->ip_opts)
            memcpy(ip + 20, "\x01\x01\x01\x00", 4);
        p16(ip + 10, (uint16_t)~ref_fold(ref_sum(ip, hl)));
    }
    o += hl;
    d->l4 = o;
    d->l4len = l4len;
    d->proto = s->proto;
    uint8_t *l4 = f + o;
    memset(l4, 0, l4h);
    if (s->proto == 6) {
        p16(l4, (uint16_t)(1024 + rng_below(&r, 60000)));
        p16(l4 + 2, 80);
        l4[12] = 0x50;
        l4[13] = 0x18;
        p16(l4 + 14, 512);
        d->field = 16;
    } else if (s->proto == 17) {
        p16(l4, (uint16_t)(1024 + rng_below(&r, 60000)));
        p16(l4 + 2, 53);
        p16(l4 + 4, (uint16_t)l4len);
        d->field = 6;
    } else {
        l4[0] = s->proto == 1 ? 8 : 128;
        d->field = 2;
    }
    for (unsigned i = 0; i < s->payload; i++)
        l4[l4h + i] = (uint8_t)rng_next(&r);
    o += l4h + s->payload;
    for (unsigned i = 0; i < s->eth_pad; i++)
        f[o++] = (uint8_t)(0xa0 + i);
    d->len = o;
    uint16_t c = ref_l4_csum(f, d->l3, d->l4, s->proto, l4len, d->field);
    if (s->partial)
        c = ref_fold(ref_pseudo(f, d->l3, s->proto, l4len));
    p16(l4 + d->field, c);
}

/* A parsed heap packet of the frame; PARTIAL with the virtio location if
 * the spec says so. */
static struct pkt *make_pkt(const struct fspec *s, struct fdesc *d)
{
    uint8_t f[MAXF];
    build_frame(s, f, d);
    struct pkt *p = pkt_from_data(f, (uint32_t)d->len);
    assert_non_null(p);
    struct flow_key k;
    assert_int_equal(parse_pkt(p, &k), PARSE_OK);
    if (s->partial) {
        pkt_csum_set(p, CSUM_L_OUTER_L4, CSUM_PARTIAL);
        p->flags |= PKT_F_VNET_CSUM;
        p->csum_start = (uint16_t)d->l4;
        p->csum_offset = (uint16_t)d->field;
    }
    return p;
}

/* ---- tunnel configurations ---------------------------------------------- */

static const uint8_t SRC_MAC[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t DST_MAC[6] = {0x02, 0, 0, 0, 0, 0xfe};

static struct tnl_cfg cfg4(uint32_t vni, bool csum)
{
    struct tnl_cfg t;
    memset(&t, 0, sizeof t);
    memcpy(t.local_ip, "\xc0\x00\x02\x01", 4);
    memcpy(t.remote_ip, "\xc0\x00\x02\x02", 4);
    t.vni = vni;
    t.dst_port = VXLAN_UDP_PORT;
    t.csum = csum;
    t.ttl = 64;
    t.df = true;
    memcpy(t.src_mac, SRC_MAC, 6);
    memcpy(t.dst_mac, DST_MAC, 6);
    return t;
}

static struct tnl_cfg cfg6(uint32_t vni, bool csum)
{
    struct tnl_cfg t = cfg4(vni, csum);
    t.ipv6 = true;
    memcpy(t.local_ip, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
    memcpy(t.remote_ip, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
    return t;
}

/* The remote's view of a tunnel: what it sends us has our local IP as the
 * destination. */
static struct tnl_cfg mirror(const struct tnl_cfg *t)
{
    struct tnl_cfg m = *t;
    memcpy(m.local_ip, t->remote_ip, 16);
    memcpy(m.remote_ip, t->local_ip, 16);
    return m;
}

/* Encapsulates a frame the remote VTEP of t sends us: pushed with the
 * mirrored configuration and completed in software; re-parsed as received. */
static struct pkt *vxlan_from_remote(const struct tnl_cfg *t, uint32_t vni,
                                     const struct fspec *inner, struct fdesc *d)
{
    struct pkt *p = make_pkt(inner, d);
    struct tnl_cfg m = mirror(t);
    bool grew = false;
    assert_int_equal(tnl_push(p, &m, vni, 12345, &grew), 0);
    assert_int_equal(pkt_csum_complete(p, NULL), CSUM_PREP_OK);
    /* as a device delivers it: a fresh buffer, states UNKNOWN, parsed */
    struct pkt *q = pkt_from_data(p->data, p->len);
    assert_non_null(q);
    pkt_free(p);
    struct flow_key k;
    assert_int_equal(parse_pkt(q, &k), PARSE_OK);
    return q;
}

/* Re-parses p after its bytes were edited. */
static void reparse(struct pkt *p)
{
    struct flow_key k;
    parse_pkt(p, &k);
}

/* Offset of the outer UDP header (no tags, IPv4 without options or IPv6). */
static size_t udp_ofs(const struct tnl_cfg *t)
{
    return t->ipv6 ? 54 : 34;
}

static void fix_outer_ip(struct pkt *p)
{
    p16(p->data + 24, 0);
    p16(p->data + 24, (uint16_t)~ref_fold(ref_sum(p->data + 14, 20)));
}

static void fix_outer_udp(struct pkt *p, const struct tnl_cfg *t)
{
    size_t u = udp_ofs(t);
    size_t len = g16(p->data + u + 4);
    p16(p->data + u + 6, 0);
    uint16_t c = (uint16_t)~ref_fold(ref_sum(p->data + u, len) + ref_pseudo(p->data, 14, 17, len));
    p16(p->data + u + 6, c ? c : 0xffff);
}

/* ---- names, lengths, source ports --------------------------------------- */

static void test_names_and_lengths(void **state)
{
    (void)state;
    struct tnl_cfg a = cfg4(1, false), b = cfg6(1, true);
    assert_int_equal(tnl_hlen(&a), 50);
    assert_int_equal(tnl_hlen(&b), 70);
    assert_int_equal(TNL_HLEN_V4, 50);
    assert_int_equal(TNL_HLEN_V6, 70);
    for (int i = 0; i < TNL_POP_N; i++) {
        const char *n = tnl_pop_result_name((enum tnl_pop_result)i);
        assert_non_null(n);
        assert_string_not_equal(n, "unknown");
        for (int j = 0; j < i; j++)
            assert_string_not_equal(n, tnl_pop_result_name((enum tnl_pop_result)j));
    }
    assert_string_equal(tnl_pop_result_name(TNL_POP_N), "unknown");
    /* the drop counters the datapath reports carry the same names */
    static const struct {
        enum tnl_pop_result r;
        enum drop_reason d;
    } map[] = {
        {TNL_POP_TRUNC, DROP_tunnel_trunc},
        {TNL_POP_IP_OPTIONS, DROP_tunnel_ip_options},
        {TNL_POP_UDP_LEN, DROP_tunnel_udp_len},
        {TNL_POP_BAD_CSUM, DROP_tunnel_bad_csum},
        {TNL_POP_UNKNOWN_VNI, DROP_tunnel_unknown_vni},
        {TNL_POP_BAD_VXLAN, DROP_tunnel_bad_vxlan},
        {TNL_POP_NOT_ETHERNET, DROP_tunnel_not_ethernet},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        assert_string_equal(tnl_pop_result_name(map[i].r), drop_reason_name(map[i].d));
}

static void test_src_port(void **state)
{
    (void)state;
    assert_int_equal(tnl_src_port(0), 49152);
    assert_int_equal(tnl_src_port(16383), 65535);
    assert_int_equal(tnl_src_port(16384), 49152);
    assert_int_equal(tnl_src_port(UINT32_MAX), 65535);
    /* always in the dynamic range, and spread over it */
    unsigned buckets[64] = {0};
    struct rng r = {42};
    unsigned n = quick() ? 20000 : 200000;
    for (unsigned i = 0; i < n; i++) {
        uint16_t sp = tnl_src_port(rng_next(&r));
        assert_true(sp >= 49152);
        buckets[(sp - 49152) / 256]++;
    }
    for (int i = 0; i < 64; i++) {
        assert_true(buckets[i] > n / 64 / 2);
        assert_true(buckets[i] < n / 64 * 2);
    }
}

/* The source port of a given inner flow is stable: the same in every run
 * and on every machine (flow_hash is fixed), and the same for every packet
 * of the flow. The pinned values were computed by testdata/gen_vxlan.py's
 * independent re-implementation of flow_hash (and agree with the replay
 * cases' byte-exact outputs). */
static void test_src_port_stable(void **state)
{
    (void)state;
    struct flow_key k;
    memset(&k, 0, sizeof k);
    assert_int_equal(flow_hash(&k, 0), 0x0fd23cfau);
    assert_int_equal(tnl_src_port(flow_hash(&k, 0)), 64762);
    k.in_port = 3;
    k.dl_type = 0x0800;
    k.nw_proto = 6;
    memcpy(&k.nw_src, "\x0a\x00\x00\x01", 4);
    memcpy(&k.nw_dst, "\x0a\x00\x00\x02", 4);
    k.tp_src = 40000;
    k.tp_dst = 80;
    assert_int_equal(flow_hash(&k, 0), 0x516b97cfu);
    uint16_t sp = tnl_src_port(flow_hash(&k, 0));
    assert_int_equal(sp, 55247);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tnl_src_port(flow_hash(&k, 0)), sp);
    k.tp_src = 40001; /* another flow: (almost surely) another port */
    assert_int_equal(tnl_src_port(flow_hash(&k, 0)), 51956);
}

/* ---- push ---------------------------------------------------------------- */

static void test_push_v4_headers(void **state)
{
    (void)state;
    struct fspec s = {.proto = 6, .payload = 33, .partial = true, .seed = 1};
    struct fdesc d;
    struct pkt *p = make_pkt(&s, &d);
    uint8_t inner[MAXF];
    memcpy(inner, p->data, p->len);
    uint32_t ilen = p->len;
    p->ts = 777;
    p->hash = 0xabcdef;
    struct tnl_cfg t = cfg4(0x123456, false);
    t.tos = 0x28;
    t.ttl = 17;
    bool grew = false;
    assert_int_equal(tnl_push(p, &t, 0x123456, 0x4000 + 7, &grew), 0);
    assert_false(grew);
    assert_int_equal(p->len, ilen + 50);
    assert_memory_equal(p->data + 50, inner, ilen);

    uint8_t want[50] = {
        0x02, 0, 0, 0, 0, 0xfe, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00,          /* Ethernet */
        0x45, 0x28, 0, 0, 0, 0, 0x40, 0, 17, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2, /* IPv4 */
        0, 0, 0x12, 0xb5, 0, 0, 0, 0,                                      /* UDP */
        0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0,                                /* VXLAN */
    };
    p16(want + 16, (uint16_t)(20 + 8 + 8 + ilen));
    p16(want + 34, (uint16_t)(49152 + 7));
    p16(want + 38, (uint16_t)(8 + 8 + ilen));
    assert_memory_equal(p->data, want, 50);

    /* layout: outer now, the old layers as inner */
    assert_true(p->flags & PKT_F_TUNNEL);
    assert_true(p->flags & PKT_F_PARSED);
    assert_false(p->flags & PKT_F_VNET_CSUM);
    assert_int_equal(p->l3, PKT_L3_IPV4);
    assert_int_equal(p->l3_ofs, 14);
    assert_int_equal(p->l4_ofs, 34);
    assert_int_equal(p->l4_proto, 17);
    assert_int_equal(p->l4_len, 16 + ilen);
    assert_int_equal(p->inner_l3, PKT_L3_IPV4);
    assert_int_equal(p->inner_l3_ofs, 50 + d.l3);
    assert_int_equal(p->inner_l4_ofs, 50 + d.l4);
    assert_int_equal(p->inner_l4_len, d.l4len);
    assert_int_equal(p->inner_l4_proto, 6);
    assert_true(p->inner_flags & PKT_IF_L4);
    assert_int_equal(p->ts, 777);
    assert_int_equal(p->hash, 0xabcdef);
    /* states: the guest's PARTIAL moved inward; outer IPv4 PARTIAL, no UDP csum */
    assert_int_equal(pkt_csum_get(p, CSUM_L_INNER_L4), CSUM_PARTIAL);
    assert_int_equal(pkt_csum_get(p, CSUM_L_INNER_IP), CSUM_UNKNOWN);
    assert_int_equal(pkt_csum_get(p, CSUM_L_OUTER_IP), CSUM_PARTIAL);
    assert_int_equal(pkt_csum_get(p, CSUM_L_OUTER_L4), CSUM_GOOD);

    /* resolved for a NIC without offload: everything complete */
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(pkt_send_prepare(p, 0, &st), CSUM_PREP_OK);
    assert_true(ref_ipv4_ok(p->data, 14));
    assert_int_equal(g16(p->data + 40), 0); /* outer UDP: no checksum */
    assert_true(ref_l4_ok(p->data, 50 + d.l3, 50 + d.l4, 6, d.l4len));
    assert_int_equal(st.n[CSUM_STAT_SW + CSUM_L_OUTER_IP], 1);
    assert_int_equal(st.n[CSUM_STAT_SW + CSUM_L_INNER_L4], 1);
    assert_int_equal(st.n[CSUM_STAT_SW + CSUM_L_OUTER_L4], 0);
    assert_false(pkt_csum_any_partial(p));
    pkt_free(p);
}

static void test_push_v4_csum_nodf(void **state)
{
    (void)state;
    struct fspec s = {.proto = 17, .payload = 101, .partial = true, .vlan = true, .seed = 2};
    struct fdesc d;
    struct pkt *p = make_pkt(&s, &d);
    struct tnl_cfg t = cfg4(7, true);
    t.df = false;
    t.dst_port = 8472;
    assert_int_equal(tnl_push(p, &t, 7, 99, NULL), 0);
    assert_int_equal(g16(p->data + 20), 0); /* no DF */
    assert_int_equal(g16(p->data + 36), 8472);
    assert_int_equal(pkt_csum_get(p, CSUM_L_OUTER_L4), CSUM_PARTIAL);
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(pkt_send_prepare(p, 0, &st), CSUM_PREP_OK);
    assert_true(ref_ipv4_ok(p->data, 14));
    assert_true(ref_l4_ok(p->data, 14, 34, 17, g16(p->data + 38)));
    assert_int_not_equal(g16(p->data + 40), 0);
    assert_true(ref_l4_ok(p->data, 50 + d.l3, 50 + d.l4, 17, d.l4len));
    assert_int_equal(st.n[CSUM_STAT_SW + CSUM_L_OUTER_L4], 1);
    pkt_free(p);
}

static void test_push_v6_headers(void **state)
{
    (void)state;
    struct fspec s = {.v6 = true, .proto = 6, .payload = 10, .partial = true, .seed = 3};
    struct fdesc d;
    struct pkt *p = make_pkt(&s, &d);
    uint32_t ilen = p->len;
    struct tnl_cfg t = cfg6(0xabcdef, true);
    t.tos = 0xb8;
    t.ttl = 1;
    assert_int_equal(tnl_push(p, &t, 0xabcdef, 0, NULL), 0);
    assert_int_equal(p->len, ilen + 70);
    const uint8_t *ip = p->data + 14;
    assert_int_equal(g16(p->data + 12), 0x86dd);
    assert_int_equal(ip[0], 0x6b); /* version 6, traffic class 0xb8 */
    assert_int_equal(ip[1], 0x80); /* ... flow label 0 */
    assert_int_equal(ip[2], 0);
    assert_int_equal(ip[3], 0);
    assert_int_equal(g16(ip + 4), 16 + ilen);
    assert_int_equal(ip[6], 17);
    assert_int_equal(ip[7], 1);
    assert_memory_equal(ip + 8, t.local_ip, 16);
    assert_memory_equal(ip + 24, t.remote_ip, 16);
    assert_int_equal(g16(p->data + 54), 49152);
    assert_int_equal(g16(p->data + 56), 4789);
    assert_memory_equal(p->data + 62, "\x08\x00\x00\x00\xab\xcd\xef\x00", 8);
    assert_int_equal(p->l3, PKT_L3_IPV6);
    assert_int_equal(p->l4_ofs, 54);
    assert_int_equal(p->inner_l3, PKT_L3_IPV6);
    assert_int_equal(pkt_csum_get(p, CSUM_L_OUTER_IP), CSUM_GOOD); /* no IPv6 header csum */
    assert_int_equal(pkt_csum_get(p, CSUM_L_OUTER_L4), CSUM_PARTIAL);
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(pkt_send_prepare(p, 0, &st), CSUM_PREP_OK);
    assert_true(ref_l4_ok(p->data, 14, 54, 17, 16 + ilen));
    assert_true(ref_l4_ok(p->data, 70 + d.l3, 70 + d.l4, 6, d.l4len));
    assert_int_equal(st.n[CSUM_STAT_SW + CSUM_L_OUTER_IP], 0);
    pkt_free(p);
}

/* A buffer owner with little headroom, that can grow it (or not). */
struct small_pkt {
    struct pkt p;
    uint8_t buf[128];
};

static void small_release(struct pkt *p)
{
    if (p->buf != ((struct small_pkt *)(void *)p)->buf)
        free(p->buf);
    free(p);
}

static int small_grow(struct pkt *p, uint32_t headroom)
{
    uint8_t *nb = malloc(headroom + p->len);
    if (!nb)
        return -1;
    memcpy(nb + headroom, p->data, p->len);
    if (p->buf != ((struct small_pkt *)(void *)p)->buf)
        free(p->buf);
    p->buf = nb;
    p->buf_size = headroom + p->len;
    p->data = nb + headroom;
    return 0;
}

static const struct pkt_ops small_ops = {.release = small_release, .grow_headroom = small_grow};
static const struct pkt_ops fixed_ops = {.release = small_release, .grow_headroom = NULL};

static struct pkt *small_pkt(const uint8_t *f, uint32_t len, uint32_t headroom,
                             const struct pkt_ops *ops)
{
    struct small_pkt *s = calloc(1, sizeof *s);
    assert_non_null(s);
    assert_true(headroom + len <= sizeof s->buf);
    struct pkt *p = &s->p;
    pkt_reset_meta(p);
    p->buf = s->buf;
    p->buf_size = sizeof s->buf;
    p->data = s->buf + headroom;
    p->len = len;
    p->ops = ops;
    memcpy(p->data, f, len);
    struct flow_key k;
    assert_int_equal(parse_pkt(p, &k), PARSE_OK);
    return p;
}

static void test_push_headroom(void **state)
{
    (void)state;
    struct fspec s = {.proto = 17, .payload = 20, .seed = 4};
    struct fdesc d;
    uint8_t f[MAXF];
    build_frame(&s, f, &d);
    struct tnl_cfg t = cfg4(42, false);

    struct pkt *p = small_pkt(f, (uint32_t)d.len, 10, &small_ops);
    bool grew = false;
    assert_int_equal(tnl_push(p, &t, 42, 0, &grew), 0);
    assert_true(grew);
    assert_int_equal(p->len, d.len + 50);
    assert_memory_equal(p->data + 50, f, d.len);
    assert_int_equal(g16(p->data + 12), 0x0800);
    pkt_free(p);

    /* enough headroom: nothing grows */
    p = small_pkt(f, (uint32_t)d.len, 50, &small_ops);
    grew = false;
    assert_int_equal(tnl_push(p, &t, 42, 0, &grew), 0);
    assert_false(grew);
    assert_ptr_equal(p->data, p->buf);
    pkt_free(p);

    /* an owner that cannot grow: -1, the packet untouched */
    p = small_pkt(f, (uint32_t)d.len, 10, &fixed_ops);
    uint8_t *data = p->data;
    grew = false;
    assert_int_equal(tnl_push(p, &t, 42, 0, &grew), -1);
    assert_false(grew);
    assert_ptr_equal(p->data, data);
    assert_int_equal(p->len, d.len);
    assert_memory_equal(p->data, f, d.len);
    pkt_free(p);
}

static void test_push_too_long(void **state)
{
    (void)state;
    uint32_t len = 65535 - 50 + 1; /* the outer IPv4 total length would overflow */
    struct pkt *p = pkt_alloc(len);
    assert_non_null(p);
    memset(p->data, 0, len);
    p->len = len;
    memcpy(p->data, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x88\xb5", 14);
    struct flow_key k;
    assert_int_equal(parse_pkt(p, &k), PARSE_OK);
    struct tnl_cfg t = cfg4(1, false);
    assert_int_equal(tnl_push(p, &t, 1, 0, NULL), -1);
    p->len = len - 1; /* a 65535-byte frame */
    assert_int_equal(tnl_push(p, &t, 1, 0, NULL), 0);
    assert_int_equal(p->len, 65535);
    assert_int_equal(g16(p->data + 16), 65535 - 14);
    assert_int_equal(g16(p->data + 38), 65535 - 34);
    pkt_free(p);
}

/* ---- the outer UDP checksum shortcut ------------------------------------ */

static void random_spec(struct rng *r, struct fspec *s, unsigned i)
{
    static const uint8_t protos4[] = {6, 17, 1};
    static const uint8_t protos6[] = {6, 17, 58};
    memset(s, 0, sizeof *s);
    s->v6 = rng_below(r, 2);
    s->proto = s->v6 ? protos6[rng_below(r, 3)] : protos4[rng_below(r, 3)];
    s->payload = rng_below(r, 8) ? rng_below(r, 200) : rng_below(r, 1400);
    s->vlan = rng_below(r, 4) == 0;
    s->ip_opts = !s->v6 && rng_below(r, 4) == 0;
    s->eth_pad = rng_below(r, 4) == 0 ? rng_below(r, 9) : 0;
    s->seed = i;
}

/* Property: for random inner packets with a complete L4 checksum, the
 * header-only shortcut equals the full RFC 768 sum, which is itself right
 * (the datagram then checksums to zero with the reference sum). */
static void test_shortcut_equals_full(void **state)
{
    (void)state;
    struct rng r = {7};
    unsigned n = quick() ? 300 : 20000;
    for (unsigned i = 0; i < n; i++) {
        struct fspec s;
        random_spec(&r, &s, i);
        struct fdesc d;
        struct pkt *p = make_pkt(&s, &d);
        bool v6 = rng_below(&r, 2);
        struct tnl_cfg t = v6 ? cfg6(rng_next(&r) & 0xffffff, true)
                              : cfg4(rng_next(&r) & 0xffffff, true);
        assert_int_equal(tnl_push(p, &t, t.vni, rng_next(&r), NULL), 0);
        assert_int_equal(pkt_send_prepare(p, 0, NULL), CSUM_PREP_OK); /* outer IPv4 header */
        uint16_t full = pkt_outer_udp_csum_full(p);
        uint16_t shortcut = pkt_outer_udp_csum_short(p);
        assert_int_equal(shortcut, full);
        assert_int_not_equal(full, 0);
        size_t u = udp_ofs(&t);
        memcpy(p->data + u + 6, &full, 2); /* values are as stored in the packet */
        assert_true(ref_l4_ok(p->data, 14, u, 17, g16(p->data + u + 4)));
        pkt_free(p);
    }
}

/* Sanity: with the inner checksum wrong (not complete) the payload does
 * not cancel, and the shortcut no longer equals the full sum -- which stays
 * right. */
static void test_shortcut_differs_when_incomplete(void **state)
{
    (void)state;
    struct rng r = {8};
    unsigned n = quick() ? 200 : 5000;
    for (unsigned i = 0; i < n; i++) {
        struct fspec s;
        random_spec(&r, &s, i + 100000);
        struct fdesc d;
        struct pkt *p = make_pkt(&s, &d);
        uint8_t *field = p->data + d.l4 + d.field;
        uint16_t old = g16(field), nw;
        do {
            nw = ref_fold((uint64_t)old + 1 + rng_below(&r, 0xfffe));
        } while (nw == old || (old == 0 && nw == 0xffff) || (old == 0xffff && nw == 0));
        p16(field, nw);
        struct tnl_cfg t = cfg4(5, true);
        assert_int_equal(tnl_push(p, &t, 5, 1, NULL), 0);
        uint16_t full = pkt_outer_udp_csum_full(p);
        assert_int_not_equal(pkt_outer_udp_csum_short(p), full);
        memcpy(p->data + 40, &full, 2);
        assert_true(ref_l4_ok(p->data, 14, 34, 17, g16(p->data + 38)));
        pkt_free(p);
    }
}

/* The full sum is used (and right) where nothing cancels: ARP, a zero
 * inner UDP checksum, an inner packet the device left UNKNOWN. */
static void test_outer_csum_no_cancel(void **state)
{
    (void)state;
    struct fspec arp = {.proto = 0};
    struct fspec u0 = {.proto = 17, .payload = 30, .seed = 9};
    const struct fspec *specs[] = {&arp, &u0};
    for (int i = 0; i < 2; i++) {
        struct fdesc d;
        struct pkt *p = make_pkt(specs[i], &d);
        if (specs[i]->proto == 17)
            p16(p->data + d.l4 + 6, 0); /* no inner checksum */
        struct tnl_cfg t = cfg4(5, true);
        assert_int_equal(tnl_push(p, &t, 5, 1, NULL), 0);
        assert_int_equal(pkt_send_prepare(p, 0, NULL), CSUM_PREP_OK);
        assert_true(ref_ipv4_ok(p->data, 14));
        assert_true(ref_l4_ok(p->data, 14, 34, 17, g16(p->data + 38)));
        uint16_t full = pkt_outer_udp_csum_full(p);
        assert_memory_equal(p->data + 40, &full, 2);
        pkt_free(p);
    }
}

/* ---- pop ----------------------------------------------------------------- */

static void test_pop_v4(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg4(42, true);
    struct fspec s = {.proto = 6, .payload = 40, .eth_pad = 0, .seed = 10};
    struct fdesc d;
    uint8_t inner[MAXF];
    build_frame(&s, inner, &d);
    struct pkt *p = vxlan_from_remote(&t, 42, &s, &d);
    p->ts = 1234;
    p->hash = 77;
    p->in_port = 3;
    struct flow_key k;
    memset(&k, 0xee, sizeof k);
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    unsigned which = 99;
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), TNL_POP_OK);
    assert_int_equal(which, 0);
    assert_int_equal(p->len, d.len);
    assert_memory_equal(p->data, inner, d.len);
    assert_int_equal(k.tun_id, 42);
    assert_memory_equal(k.tun_src, "\0\0\0\0\0\0\0\0\0\0\xff\xff\xc0\x00\x02\x02", 16);
    assert_memory_equal(k.tun_dst, "\0\0\0\0\0\0\0\0\0\0\xff\xff\xc0\x00\x02\x01", 16);
    assert_int_equal(k.tun_flags, FLOW_TNL_F_CSUM); /* a valid non-zero UDP checksum */
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 2);            /* IPv4 header and UDP */
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFY_FAILED], 0);
    assert_int_equal(p->ts, 1234);
    assert_int_equal(p->hash, 77);
    assert_int_equal(p->in_port, 3);
    /* the inner frame parses as what was sent */
    struct flow_key ik;
    assert_int_equal(parse_pkt(p, &ik), PARSE_OK);
    assert_int_equal(ik.tp_dst, 80);
    pkt_free(p);
}

static void test_pop_v6(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg6(0xfffffe, true);
    struct fspec s = {.v6 = true, .proto = 17, .payload = 13, .seed = 11};
    struct fdesc d;
    uint8_t inner[MAXF];
    build_frame(&s, inner, &d);
    struct pkt *p = vxlan_from_remote(&t, 0xfffffe, &s, &d);
    struct flow_key k;
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    unsigned which;
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), TNL_POP_OK);
    assert_memory_equal(p->data, inner, d.len);
    assert_int_equal(k.tun_id, 0xfffffe);
    assert_memory_equal(k.tun_src, t.remote_ip, 16);
    assert_memory_equal(k.tun_dst, t.local_ip, 16);
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 1); /* UDP only: IPv6 has no header checksum */
    pkt_free(p);
}

/* An IPv6 VXLAN packet with a segment routing header (two segments, the
 * last one our local IP) between the outer IPv6 and UDP headers. With
 * segments left 0 the header is done: the packet is for us, decapsulated,
 * its UDP checksum verified (the Destination Address is the final one).
 * With segments left it is on its way to another node (RFC 8200 4.4):
 * not decapsulated. */
static void test_pop_v6_routing_header(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg6(77, true);
    struct fspec s = {.v6 = true, .proto = 6, .payload = 20, .seed = 13};
    for (int left = 0; left < 3; left++) {
        struct fdesc d;
        struct pkt *v = vxlan_from_remote(&t, 77, &s, &d);
        uint8_t f[MAXF];
        size_t ip = 14, rh = 54, n = v->len + 40;
        memcpy(f, v->data, rh);
        memcpy(f + rh + 40, v->data + rh, v->len - rh);
        uint8_t *x = f + rh;
        memset(x, 0, 40);
        x[0] = 17;
        x[1] = 4;
        x[2] = 4;
        x[3] = (uint8_t)left;
        x[4] = 1;                           /* Last Entry */
        memcpy(x + 8, t.local_ip, 16);       /* Segment List[0]: the final one */
        memcpy(x + 24, t.remote_ip, 16);
        f[ip + 6] = 43;
        p16(f + ip + 4, (uint16_t)(g16(f + ip + 4) + 40));
        pkt_free(v);
        struct pkt *p = pkt_from_data(f, (uint32_t)n);
        assert_non_null(p);
        struct flow_key k;
        assert_int_equal(parse_pkt(p, &k), PARSE_OK);
        assert_int_equal(!!(p->flags & PKT_F_IPV6_RH), left != 0);
        struct csum_stats st;
        memset(&st, 0, sizeof st);
        unsigned which;
        enum tnl_pop_result r = tnl_pop(p, &t, 1, &which, &k, &st);
        if (left) {
            assert_int_equal(r, TNL_POP_NOT_TUNNEL);
            assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 0);
            assert_int_equal(p->len, n);
        } else {
            assert_int_equal(r, TNL_POP_OK);
            assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 1);
            assert_int_equal(st.n[CSUM_STAT_SW_VERIFY_FAILED], 0);
            assert_int_equal(p->len, d.len);
        }
        pkt_free(p);
    }
}

/* After a pop every state and the tunnel/virtio metadata are reset: the
 * device's verdicts covered the outer headers only. */
static void test_pop_resets_states(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg4(42, false);
    struct fspec s = {.proto = 17, .payload = 8, .seed = 12};
    struct fdesc d;
    struct pkt *p = vxlan_from_remote(&t, 42, &s, &d);
    pkt_csum_set(p, CSUM_L_OUTER_IP, CSUM_GOOD);
    pkt_csum_set(p, CSUM_L_OUTER_L4, CSUM_GOOD);
    pkt_csum_set(p, CSUM_L_INNER_IP, CSUM_PARTIAL);
    pkt_csum_set(p, CSUM_L_INNER_L4, CSUM_BAD);
    p->flags |= PKT_F_VNET_CSUM | PKT_F_TUNNEL;
    p->csum_start = 34;
    p->csum_offset = 6;
    struct flow_key k;
    unsigned which;
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, NULL), TNL_POP_OK);
    for (int l = 0; l < CSUM_L_N; l++)
        assert_int_equal(pkt_csum_get(p, (enum csum_layer)l), CSUM_UNKNOWN);
    assert_false(p->flags & (PKT_F_VNET_CSUM | PKT_F_TUNNEL | PKT_F_PARSED | PKT_F_L4 |
                             PKT_F_VXLAN));
    assert_int_equal(p->csum_start, 0);
    assert_int_equal(p->csum_offset, 0);
    assert_int_equal(p->l3_ofs, PKT_OFS_NONE);
    assert_int_equal(p->l4_ofs, PKT_OFS_NONE);
    assert_int_equal(p->inner_l3_ofs, PKT_OFS_NONE);
    assert_int_equal(k.tun_flags, 0); /* zero UDP checksum */
    pkt_free(p);
}

/* Round trip: push + resolve + pop gives the inner frame back byte for
 * byte (PARTIAL inner checksums completed), for random frames. */
static void test_roundtrip(void **state)
{
    (void)state;
    struct rng r = {13};
    unsigned n = quick() ? 200 : 5000;
    for (unsigned i = 0; i < n; i++) {
        struct fspec s;
        random_spec(&r, &s, i + 200000);
        s.partial = rng_below(&r, 2);
        struct fdesc d;
        uint8_t want[MAXF];
        struct fspec complete = s;
        complete.partial = false;
        build_frame(&complete, want, &d);
        struct pkt *p = make_pkt(&s, &d);
        bool v6 = rng_below(&r, 2);
        struct tnl_cfg t = v6 ? cfg6(i & 0xffffff, rng_below(&r, 2))
                              : cfg4(i & 0xffffff, rng_below(&r, 2));
        struct tnl_cfg m = mirror(&t);
        assert_int_equal(tnl_push(p, &m, t.vni, rng_next(&r), NULL), 0);
        assert_int_equal(pkt_send_prepare(p, 0, NULL), CSUM_PREP_OK);
        reparse(p);
        struct flow_key k;
        unsigned which;
        struct csum_stats st;
        memset(&st, 0, sizeof st);
        assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), TNL_POP_OK);
        assert_int_equal(st.n[CSUM_STAT_SW_VERIFY_FAILED], 0);
        assert_int_equal(p->len, d.len);
        assert_memory_equal(p->data, want, d.len);
        pkt_free(p);
    }
}

/* Re-parses a received packet after the test edited its bytes, and pops
 * it; returns the result. */
static enum tnl_pop_result pop_edited(const struct tnl_cfg *tunnels, unsigned n,
                                      struct pkt *p, unsigned *which,
                                      struct csum_stats *st)
{
    struct flow_key k;
    reparse(p);
    return tnl_pop(p, tunnels, n, which, &k, st);
}

static struct pkt *rx4(const struct tnl_cfg *t, uint32_t vni, unsigned payload)
{
    struct fspec s = {.proto = 17, .payload = payload, .seed = 14};
    struct fdesc d;
    return vxlan_from_remote(t, vni, &s, &d);
}

static void test_pop_errors(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg4(42, true);
    unsigned which;
    struct csum_stats st;
    struct pkt *p;

    /* unknown VNI */
    p = rx4(&t, 43, 10);
    memset(&st, 0, sizeof st);
    assert_int_equal(pop_edited(&t, 1, p, &which, &st), TNL_POP_UNKNOWN_VNI);
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 0); /* nothing verified for an unknown tunnel */
    pkt_free(p);

    /* IPv4 options: rebuild the outer IPv4 header with 4 bytes of options */
    {
        struct pkt *q = rx4(&t, 42, 10);
        uint8_t f[MAXF];
        memcpy(f, q->data, 34);
        memcpy(f + 38, q->data + 34, q->len - 34);
        memcpy(f + 34, "\x01\x01\x01\x00", 4);
        f[14] = 0x46;
        p16(f + 16, (uint16_t)(g16(f + 16) + 4));
        p = pkt_from_data(f, q->len + 4);
        pkt_free(q);
        p16(p->data + 24, 0);
        p16(p->data + 24, (uint16_t)~ref_fold(ref_sum(p->data + 14, 24)));
        assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_IP_OPTIONS);
        pkt_free(p);
    }

    /* UDP length below the IP payload */
    p = rx4(&t, 42, 10);
    p16(p->data + 38, (uint16_t)(g16(p->data + 38) - 2));
    fix_outer_udp(p, &t);
    assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_UDP_LEN);
    pkt_free(p);

    /* truncated: 4 bytes of VXLAN header */
    {
        uint8_t f[64];
        struct pkt *q = rx4(&t, 42, 10);
        memcpy(f, q->data, 46);
        pkt_free(q);
        p16(f + 16, 20 + 12);
        p16(f + 38, 12);
        p = pkt_from_data(f, 46);
        fix_outer_ip(p);
        p16(p->data + 40, 0);
        assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_TRUNC);
        pkt_free(p);
    }

    /* I flag clear */
    p = rx4(&t, 42, 10);
    p->data[42] = 0x00;
    fix_outer_udp(p, &t);
    assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_BAD_VXLAN);
    pkt_free(p);

    /* not enough payload for an inner Ethernet header (13 bytes, and none) */
    for (unsigned keep = 0; keep <= 13; keep += 13) {
        struct pkt *q = rx4(&t, 42, 10);
        uint8_t f[MAXF];
        uint32_t len = 50 + keep;
        memcpy(f, q->data, len);
        pkt_free(q);
        p16(f + 16, (uint16_t)(len - 14));
        p16(f + 38, (uint16_t)(len - 34));
        p = pkt_from_data(f, len);
        fix_outer_ip(p);
        fix_outer_udp(p, &t);
        assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_NOT_ETHERNET);
        pkt_free(p);
    }
    /* 14 bytes is an Ethernet frame: decapsulated (the parser judges the rest) */
    {
        struct pkt *q = rx4(&t, 42, 10);
        uint8_t f[MAXF];
        memcpy(f, q->data, 64);
        pkt_free(q);
        p16(f + 16, 50);
        p16(f + 38, 30);
        p = pkt_from_data(f, 64);
        fix_outer_ip(p);
        fix_outer_udp(p, &t);
        assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_OK);
        assert_int_equal(p->len, 14);
        pkt_free(p);
    }
}

/* tunnel.h: "VXLAN I flag clear, or reserved bits set" is TNL_POP_BAD_VXLAN
 * (as Linux's vxlan_rcv drops unknown flags). */
static void test_pop_reserved_bits(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg4(42, true);
    static const struct {
        size_t ofs;
        uint8_t val;
    } bad_vx[] = {{42, 0x0c}, {42, 0x88}, {43, 0x01}, {45, 0x80}, {49, 0x01}};
    for (size_t i = 0; i < sizeof bad_vx / sizeof bad_vx[0]; i++) {
        struct pkt *p = rx4(&t, 42, 10);
        p->data[bad_vx[i].ofs] = bad_vx[i].val;
        fix_outer_udp(p, &t);
        unsigned which;
        print_message("VXLAN byte %zu = 0x%02x\n", bad_vx[i].ofs - 42, bad_vx[i].val);
        enum tnl_pop_result r = pop_edited(&t, 1, p, &which, NULL);
        pkt_free(p);
        assert_int_equal(r, TNL_POP_BAD_VXLAN);
    }
}

static void test_pop_not_tunnel(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg4(42, false), t6 = cfg6(42, false);
    unsigned which;
    struct pkt *p;

    /* another destination address */
    p = rx4(&t, 42, 10);
    p->data[33] = 9;
    fix_outer_ip(p);
    assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
    /* another UDP port */
    p = rx4(&t, 42, 10);
    p16(p->data + 36, 4790);
    assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
    /* an IPv4 packet and only an IPv6 tunnel */
    p = rx4(&t, 42, 10);
    assert_int_equal(pop_edited(&t6, 1, p, &which, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
    /* no tunnels at all */
    p = rx4(&t, 42, 10);
    assert_int_equal(pop_edited(&t, 0, p, &which, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
    /* a fragment (MF set): cannot be decapsulated before reassembly */
    p = rx4(&t, 42, 10);
    p16(p->data + 20, 0x2000);
    fix_outer_ip(p);
    assert_int_equal(pop_edited(&t, 1, p, &which, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
    /* TCP to port 4789 */
    p = rx4(&t, 42, 10);
    p->data[23] = 6;
    fix_outer_ip(p);
    struct flow_key k;
    parse_pkt(p, &k);
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
    /* a packet that was never parsed */
    p = rx4(&t, 42, 10);
    pkt_reset_meta(p);
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, NULL), TNL_POP_NOT_TUNNEL);
    pkt_free(p);
}

/* Which layer states make the outer checksums verified, skipped or fatal. */
struct csum_case {
    enum csum_state ip_state, udp_state;
    bool ip_bad, udp_bad, udp_zero;
    enum tnl_pop_result want;
    unsigned verified, failed;
};

static void test_pop_csum_states(void **state)
{
    (void)state;
    static const struct csum_case cases[] = {
        /* UNKNOWN: verified in software */
        {CSUM_UNKNOWN, CSUM_UNKNOWN, false, false, false, TNL_POP_OK, 2, 0},
        {CSUM_UNKNOWN, CSUM_UNKNOWN, true, false, false, TNL_POP_BAD_CSUM, 1, 1},
        {CSUM_UNKNOWN, CSUM_UNKNOWN, false, true, false, TNL_POP_BAD_CSUM, 2, 1},
        {CSUM_UNKNOWN, CSUM_UNKNOWN, false, false, true, TNL_POP_OK, 1, 0},
        /* GOOD: skipped, even when wrong: the device vouched for it */
        {CSUM_GOOD, CSUM_GOOD, false, false, false, TNL_POP_OK, 0, 0},
        {CSUM_GOOD, CSUM_GOOD, true, true, false, TNL_POP_OK, 0, 0},
        {CSUM_GOOD, CSUM_UNKNOWN, true, false, false, TNL_POP_OK, 1, 0},
        {CSUM_UNKNOWN, CSUM_GOOD, false, true, false, TNL_POP_OK, 1, 0},
        {CSUM_GOOD, CSUM_UNKNOWN, false, true, false, TNL_POP_BAD_CSUM, 1, 1},
        /* BAD: dropped without software work */
        {CSUM_BAD, CSUM_GOOD, true, false, false, TNL_POP_BAD_CSUM, 0, 0},
        {CSUM_GOOD, CSUM_BAD, false, true, false, TNL_POP_BAD_CSUM, 0, 0},
        {CSUM_BAD, CSUM_UNKNOWN, false, false, false, TNL_POP_BAD_CSUM, 0, 0},
        /* a zero IPv4 UDP checksum is "none": never verified, whatever the state */
        {CSUM_GOOD, CSUM_BAD, false, false, true, TNL_POP_OK, 0, 0},
        {CSUM_GOOD, CSUM_UNKNOWN, false, false, true, TNL_POP_OK, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct csum_case *c = &cases[i];
        struct tnl_cfg t = cfg4(42, !c->udp_zero);
        struct pkt *p = rx4(&t, 42, (unsigned)(10 + i));
        if (c->udp_zero)
            assert_int_equal(g16(p->data + 40), 0);
        if (c->ip_bad)
            p->data[24] ^= 0x11;
        if (c->udp_bad)
            p->data[41] ^= 0x22;
        reparse(p);
        pkt_csum_set(p, CSUM_L_OUTER_IP, c->ip_state);
        pkt_csum_set(p, CSUM_L_OUTER_L4, c->udp_state);
        struct csum_stats st;
        memset(&st, 0, sizeof st);
        struct flow_key k;
        unsigned which;
        print_message("csum case %zu\n", i);
        assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), c->want);
        assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], c->verified);
        assert_int_equal(st.n[CSUM_STAT_SW_VERIFY_FAILED], c->failed);
        pkt_free(p);
    }
}

/* IPv6 underlay: a zero UDP checksum is accepted (RFC 6935), never
 * verified, whatever the device said; a non-zero one is verified. */
static void test_pop_v6_zero_csum(void **state)
{
    (void)state;
    static const enum csum_state states[] = {CSUM_UNKNOWN, CSUM_GOOD, CSUM_BAD};
    for (size_t i = 0; i < 3; i++) {
        struct tnl_cfg t = cfg6(42, false);
        struct fspec s = {.proto = 6, .payload = 5, .seed = 15};
        struct fdesc d;
        struct pkt *p = vxlan_from_remote(&t, 42, &s, &d);
        assert_int_equal(g16(p->data + 60), 0);
        pkt_csum_set(p, CSUM_L_OUTER_L4, states[i]);
        struct csum_stats st;
        memset(&st, 0, sizeof st);
        struct flow_key k;
        unsigned which;
        assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), TNL_POP_OK);
        assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 0);
        assert_int_equal(k.tun_flags, 0);
        pkt_free(p);
    }
    /* corrupted non-zero: verified and dropped */
    struct tnl_cfg t = cfg6(42, true);
    struct fspec s = {.proto = 6, .payload = 5, .seed = 16};
    struct fdesc d;
    struct pkt *p = vxlan_from_remote(&t, 42, &s, &d);
    p->data[61] ^= 1;
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    struct flow_key k;
    unsigned which;
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), TNL_POP_BAD_CSUM);
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 1);
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFY_FAILED], 1);
    pkt_free(p);
}

/* A 0xFFFF outer UDP checksum (a computed zero) is valid. */
static void test_pop_csum_ffff(void **state)
{
    (void)state;
    struct tnl_cfg t = cfg4(42, true);
    struct fspec s = {.proto = 0};
    struct fdesc d;
    uint8_t f[MAXF];
    build_frame(&s, f, &d);
    struct pkt *p = pkt_from_data(f, (uint32_t)d.len);
    struct flow_key k;
    parse_pkt(p, &k);
    struct tnl_cfg m = mirror(&t);
    assert_int_equal(tnl_push(p, &m, 42, 5, NULL), 0);
    assert_int_equal(pkt_csum_complete(p, NULL), CSUM_PREP_OK);
    /* tune the ARP padding (inside no inner checksum) so that the sum with
     * the field zero is 0xffff: the field is then 0xffff, a computed 0 */
    uint16_t ulen = g16(p->data + 38);
    p16(p->data + 40, 0);
    uint64_t sum = ref_sum(p->data + 34, ulen) + ref_pseudo(p->data, 14, 17, ulen);
    p16(p->data + 50 + 58, (uint16_t)~ref_fold(sum));
    p16(p->data + 40, 0xffff);
    assert_true(ref_l4_ok(p->data, 14, 34, 17, ulen));
    memset(p->csum, CSUM_UNKNOWN, sizeof p->csum); /* as received */
    reparse(p);
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    unsigned which;
    assert_int_equal(tnl_pop(p, &t, 1, &which, &k, &st), TNL_POP_OK);
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFIED], 2);
    assert_int_equal(st.n[CSUM_STAT_SW_VERIFY_FAILED], 0);
    assert_int_equal(k.tun_flags, FLOW_TNL_F_CSUM);
    pkt_free(p);
}

/* Tunnel selection: by family, local address, dst-port and VNI; a
 * vni_flow tunnel takes any VNI; the remote address is not part of the
 * lookup (tunnel.h), the rules see it as tun_src. */
static void test_pop_selects(void **state)
{
    (void)state;
    struct tnl_cfg ts[5];
    ts[0] = cfg6(42, true);
    ts[1] = cfg4(42, false);
    ts[2] = cfg4(7, false);
    ts[3] = cfg4(42, false);
    ts[3].dst_port = 8472;
    ts[4] = cfg4(0, false);
    ts[4].vni_flow = true;
    memcpy(ts[4].local_ip, "\xc0\x00\x02\x09", 4);
    static const struct {
        int tunnel; /* the configuration the remote sends to */
        uint32_t vni;
        unsigned want;
    } cases[] = {{1, 42, 1}, {2, 7, 2}, {3, 42, 3}, {0, 42, 0}, {4, 0xabcdef, 4}, {4, 0, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tnl_cfg *t = &ts[cases[i].tunnel];
        struct fspec s = {.proto = 17, .payload = 3, .seed = 17};
        struct fdesc d;
        struct pkt *p = vxlan_from_remote(t, cases[i].vni, &s, &d);
        struct flow_key k;
        unsigned which = 99;
        assert_int_equal(tnl_pop(p, ts, 5, &which, &k, NULL), TNL_POP_OK);
        assert_int_equal(which, cases[i].want);
        assert_int_equal(k.tun_id, cases[i].vni);
        pkt_free(p);
    }
    /* from another remote: still our tunnel, tun_src tells */
    struct tnl_cfg other = ts[1];
    memcpy(other.remote_ip, "\xc0\x00\x02\x03", 4);
    struct fspec s = {.proto = 17, .payload = 3, .seed = 18};
    struct fdesc d;
    struct pkt *p = vxlan_from_remote(&other, 42, &s, &d);
    struct flow_key k;
    unsigned which = 99;
    enum tnl_pop_result r = tnl_pop(p, ts, 5, &which, &k, NULL);
    pkt_free(p);
    assert_int_equal(r, TNL_POP_OK);
    assert_int_equal(which, 1);
    assert_memory_equal(k.tun_src + 12, "\xc0\x00\x02\x03", 4);
}

/* ---- configuration ------------------------------------------------------- */

static int lookup_port(void *aux, const char *name)
{
    (void)aux;
    if (!strcmp(name, "p0"))
        return 0;
    if (!strcmp(name, "p1"))
        return 1;
    return -1;
}

static int parse_opts(struct tnl_cfg *t, const char *const *kv, char *err, size_t errlen)
{
    struct netdev_opt opts[16];
    size_t n = 0;
    for (; kv[2 * n]; n++) {
        opts[n].key = kv[2 * n];
        opts[n].value = kv[2 * n + 1];
        opts[n].line = (int)n + 1;
    }
    struct netdev_args a = {.opts = opts, .n_opts = n};
    return tnl_cfg_parse(t, &a, lookup_port, NULL, 1, err, errlen);
}

static void test_cfg_parse(void **state)
{
    (void)state;
    char err[256];
    struct tnl_cfg t;
    const char *v4[] = {"underlay", "p0", "local-ip", "192.0.2.1", "remote-ip", "192.0.2.2",
                        "vni", "42", "src-mac", "02:00:00:00:00:01",
                        "next-hop-mac", "02:00:00:00:00:fe", NULL};
    assert_int_equal(parse_opts(&t, v4, err, sizeof err), 0);
    assert_false(t.ipv6);
    assert_int_equal(t.underlay, 0);
    assert_memory_equal(t.local_ip, "\xc0\x00\x02\x01", 4);
    assert_memory_equal(t.remote_ip, "\xc0\x00\x02\x02", 4);
    assert_int_equal(t.vni, 42);
    assert_false(t.vni_flow);
    assert_int_equal(t.dst_port, 4789);
    assert_false(t.csum); /* IPv4 default */
    assert_int_equal(t.ttl, 64);
    assert_int_equal(t.tos, 0);
    assert_true(t.df);
    assert_memory_equal(t.src_mac, SRC_MAC, 6);
    assert_memory_equal(t.dst_mac, DST_MAC, 6);

    const char *v6[] = {"underlay", "p0", "local-ip", "2001:db8::1", "remote-ip", "2001:db8::2",
                        "vni", "flow", "dst-port", "8472", "ttl", "1", "tos", "255", "df",
                        "false", "src-mac", "02:00:00:00:00:01", "next-hop-mac",
                        "02:00:00:00:00:fe", NULL};
    assert_int_equal(parse_opts(&t, v6, err, sizeof err), 0);
    assert_true(t.ipv6);
    assert_true(t.vni_flow);
    assert_true(t.csum); /* IPv6 default */
    assert_int_equal(t.dst_port, 8472);
    assert_int_equal(t.ttl, 1);
    assert_int_equal(t.tos, 255);
    assert_false(t.df);
    assert_memory_equal(t.local_ip, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);

    const char *v6nocsum[] = {"underlay", "p0", "local-ip", "2001:db8::1", "remote-ip",
                              "2001:db8::2", "vni", "16777215", "csum", "false", "src-mac",
                              "02:00:00:00:00:01", "next-hop-mac", "02:00:00:00:00:fe", NULL};
    assert_int_equal(parse_opts(&t, v6nocsum, err, sizeof err), 0);
    assert_false(t.csum);
    assert_int_equal(t.vni, 16777215);

    /* errors name the option */
    static const struct {
        const char *key, *value, *needle;
    } bad[] = {
        {"vni", "16777216", "vni"},
        {"vni", "-1", "vni"},
        {"local-ip", "192.0.2", "local-ip"},
        {"remote-ip", "2001:db8::2", "famil"},
        {"underlay", "p1", "underlay"}, /* not defined before this port */
        {"underlay", "nope", "underlay"},
        {"src-mac", "02:00:00:00:00", "src-mac"},
        {"next-hop-mac", "zz:00:00:00:00:fe", "next-hop-mac"},
        {"dst-port", "0", "dst-port"},
        {"ttl", "256", "ttl"},
        {"csum", "maybe", "csum"},
        {"color", "blue", "color"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *kv[32];
        size_t n = 0;
        bool replaced = false;
        for (size_t j = 0; v4[j]; j += 2) {
            kv[n++] = v4[j];
            if (!strcmp(v4[j], bad[i].key)) {
                kv[n++] = bad[i].value;
                replaced = true;
            } else {
                kv[n++] = v4[j + 1];
            }
        }
        if (!replaced) {
            kv[n++] = bad[i].key;
            kv[n++] = bad[i].value;
        }
        kv[n] = NULL;
        err[0] = '\0';
        assert_int_equal(parse_opts(&t, kv, err, sizeof err), -1);
        print_message("%s=%s: %s\n", bad[i].key, bad[i].value, err);
        assert_non_null(strstr(err, bad[i].needle));
    }
    /* every required option; the MACs only encapsulation needs are not */
    static const struct {
        const char *key;
        bool required;
    } opt[] = {{"underlay", true},  {"local-ip", true}, {"remote-ip", true},
               {"vni", true},       {"src-mac", false}, {"next-hop-mac", false}};
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
        const char *kv[32];
        size_t n = 0;
        for (size_t j = 0; v4[j]; j += 2) {
            if (strcmp(v4[j], opt[i].key)) {
                kv[n++] = v4[j];
                kv[n++] = v4[j + 1];
            }
        }
        kv[n] = NULL;
        err[0] = '\0';
        assert_int_equal(parse_opts(&t, kv, err, sizeof err), opt[i].required ? -1 : 0);
        if (opt[i].required) {
            assert_non_null(strstr(err, opt[i].key));
            continue;
        }
        bool src = !strcmp(opt[i].key, "src-mac");
        assert_memory_equal(src ? t.src_mac : t.dst_mac, "\0\0\0\0\0\0", 6);
        assert_memory_equal(src ? t.dst_mac : t.src_mac, src ? DST_MAC : SRC_MAC, 6);
    }
}

/* Loads 'ini' as a config in a fresh directory: config_load()'s result,
 * its message in err. */
static int load_ini(const char *ini, char *err, size_t errlen)
{
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/test_tunnel.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.ini", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(ini, f);
    fclose(f);
    struct config cfg;
    err[0] = '\0';
    netdev_dummy_register();
    int rc = config_load(path, &cfg, err, errlen);
    config_free(&cfg);
    netdev_unregister_all();
    unlink(path);
    rmdir(dir);
    return rc;
}

/* A vxlan port without src-mac / next-hop-mac decapsulates; a rule (or a
 * [change] add) that outputs to it, by name or number, with set_tunnel or
 * not, is refused at load with the rule's line; with both MACs it loads. */
static void test_cfg_encap_needs_macs(void **state)
{
    (void)state;
    static const char ports[] =
        "[port p0]\ntype = dummy\n\n"                                 /* 1-3 */
        "[port vx0]\ntype = vxlan\nunderlay = p0\nlocal-ip = 192.0.2.1\n" /* 4-7 */
        "remote-ip = 192.0.2.2\nvni = flow\n%s\n"                     /* 8-10 */
        "[rules]\nrule = in_port=vx0 actions=output:p0\n%s";          /* 11-13 */
    static const struct {
        const char *macs, *more, *needle; /* needle NULL: loads */
    } c[] = {
        {"", "", NULL},
        {"", "rule = in_port=p0 actions=output:vx0\n",
         ":13: rule: output to tunnel port 'vx0' needs its option 'src-mac' to encapsulate"},
        {"", "rule = in_port=p0 actions=set_tunnel:7,output:1\n",
         ":13: rule: output to tunnel port 'vx0' needs its option 'src-mac'"},
        {"src-mac = 02:00:00:00:00:01", "rule = in_port=p0 actions=output:p0,output:vx0\n",
         ":13: rule: output to tunnel port 'vx0' needs its option 'next-hop-mac'"},
        {"next-hop-mac = 02:00:00:00:00:fe", "rule = in_port=p0 actions=output:vx0\n",
         ":13: rule: output to tunnel port 'vx0' needs its option 'src-mac'"},
        {"", "\n[change c]\ntime = 1\nadd = in_port=p0 actions=output:vx0\n",
         ":16: add: output to tunnel port 'vx0' needs its option 'src-mac'"},
        {"", "\n[change c]\ntime = 1\ndelete = in_port=p0 actions=output:vx0\n", NULL},
        {"src-mac = 02:00:00:00:00:01\nnext-hop-mac = 02:00:00:00:00:fe",
         "rule = in_port=p0 actions=output:vx0\n", NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char ini[1024], err[512];
        snprintf(ini, sizeof ini, ports, c[i].macs[0] ? c[i].macs : "#", c[i].more);
        int rc = load_ini(ini, err, sizeof err);
        print_message("case %zu: %s\n", i, err);
        if (!c[i].needle) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err, c[i].needle));
    }
}

/* ---- through the datapath (dummy ports) ---------------------------------- */

struct dpt {
    char dir[64];
    struct config cfg;
    struct dp *dp;
    struct dp_pmd *pmd;
    uint64_t now;
};

static void dpt_open(struct dpt *d, const char *ini)
{
    netdev_dummy_register();
    snprintf(d->dir, sizeof d->dir, "/tmp/test_tunnel.XXXXXX");
    assert_non_null(mkdtemp(d->dir));
    char path[128];
    snprintf(path, sizeof path, "%s/t.ini", d->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(ini, f);
    fclose(f);
    char err[512];
    int rc = config_load(path, &d->cfg, err, sizeof err);
    if (rc)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    rc = config_dp_create(&d->cfg, d->dir, &d->dp, err, sizeof err);
    if (rc)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    unlink(path);
    rmdir(d->dir);
    d->pmd = dp_pmd_create(d->dp);
    assert_non_null(d->pmd);
    d->now = 1;
}

static void dpt_close(struct dpt *d)
{
    if (!d->dp)
        return;
    dp_pmd_destroy(d->pmd);
    dp_destroy(d->dp);
    config_free(&d->cfg);
    netdev_unregister_all();
    d->dp = NULL;
}

/* cmocka fixtures: the teardown closes the datapath even after a failed
 * assertion, so a failing test leaks nothing. */
static int dpt_setup(void **state, const char *ini)
{
    struct dpt *d = calloc(1, sizeof *d);
    if (!d)
        return -1;
    *state = d;
    dpt_open(d, ini);
    return 0;
}

static int dpt_teardown(void **state)
{
    struct dpt *d = *state;
    dpt_close(d);
    free(d);
    return 0;
}

/* The PMD's counters now. */
static const struct dp_stats *dpt_stats(struct dpt *d)
{
    static struct dp_stats s;
    dp_stats_collect(d->dp, &d->pmd, 1, &s);
    return &s;
}

static struct netdev *dpt_dev(struct dpt *d, const char *name)
{
    int i = config_port_index(&d->cfg, name);
    assert_true(i >= 0);
    struct dp_port_info p;
    dp_port_get(d->dp, (unsigned)i, &p);
    assert_non_null(p.dev);
    return p.dev;
}

/* Injects p on port 'name' with the given outer states and polls. */
static void dpt_rx(struct dpt *d, const char *name, struct pkt *p, enum csum_state ip,
                   enum csum_state l4)
{
    p->ts = 0;
    p->csum[CSUM_L_OUTER_IP] = (uint8_t)ip;
    p->csum[CSUM_L_OUTER_L4] = (uint8_t)l4;
    assert_int_equal(netdev_dummy_inject(dpt_dev(d, name), 0, p), 0);
    dp_pmd_poll(d->pmd, d->now);
    dp_pmd_flush(d->pmd, d->now++);
}

static struct pkt *dpt_collect(struct dpt *d, const char *name)
{
    struct pkt *p = NULL;
    int n = netdev_dummy_collect(dpt_dev(d, name), 0, &p, 1);
    return n == 1 ? p : NULL;
}

static const char DECAP_INI[] =
    "[port p0]\ntype = dummy\n\n"
    "[port vm0]\ntype = dummy\ntx-keep = true\n\n"
    "[port vx0]\ntype = vxlan\nunderlay = p0\nlocal-ip = 192.0.2.1\nremote-ip = 192.0.2.2\n"
    "vni = 42\ncsum = true\nsrc-mac = 02:00:00:00:00:01\nnext-hop-mac = 02:00:00:00:00:fe\n\n"
    "[rules]\nrule = in_port=vx0,tun_id=42 actions=output:vm0\n";

/* A packet whose outer IPv4 and UDP checksums are both wrong, from a device
 * that says both are GOOD: forwarded without software verification (the
 * device vouched for it); the same packet with UNKNOWN states is verified
 * and dropped. */
static int decap_setup(void **state)
{
    return dpt_setup(state, DECAP_INI);
}

static void test_dp_decap_good_vouched(void **state)
{
    struct dpt *d = *state;
    struct tnl_cfg t = cfg4(42, true);
    struct fspec s = {.proto = 6, .payload = 20, .seed = 19};
    struct fdesc fd;
    uint8_t inner[MAXF];
    build_frame(&s, inner, &fd);

    struct pkt *p = vxlan_from_remote(&t, 42, &s, &fd);
    p->data[24] ^= 0x40;
    p->data[41] ^= 0x40;
    struct pkt *copy = pkt_clone(p);
    dpt_rx(d, "p0", p, CSUM_GOOD, CSUM_GOOD);
    struct pkt *out = dpt_collect(d, "vm0");
    assert_non_null(out);
    assert_int_equal(out->len, fd.len);
    assert_memory_equal(out->data, inner, fd.len);
    pkt_free(out);
    assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW_VERIFIED], 0);
    assert_int_equal(dpt_stats(d)->drops[DROP_tunnel_bad_csum], 0);

    dpt_rx(d, "p0", copy, CSUM_UNKNOWN, CSUM_UNKNOWN);
    assert_null(dpt_collect(d, "vm0"));
    assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW_VERIFIED], 1);
    assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW_VERIFY_FAILED], 1);
    assert_int_equal(dpt_stats(d)->drops[DROP_tunnel_bad_csum], 1);
}

/* A BAD verdict on an outer layer drops the packet as tunnel_bad_csum
 * (issue 4), without software verification. */
static void test_dp_decap_bad(void **state)
{
    struct dpt *d = *state;
    struct tnl_cfg t = cfg4(42, true);
    for (int l = 0; l < 2; l++) {
        struct fspec s = {.proto = 17, .payload = 20, .seed = 20};
        struct fdesc fd;
        struct pkt *p = vxlan_from_remote(&t, 42, &s, &fd);
        p->data[l ? 41 : 24] ^= 0x40;
        dpt_rx(d, "p0", p, l ? CSUM_GOOD : CSUM_BAD, l ? CSUM_BAD : CSUM_GOOD);
        assert_null(dpt_collect(d, "vm0"));
    }
    assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW_VERIFIED], 0);
    assert_int_equal(dpt_stats(d)->drops[DROP_bad_csum] + dpt_stats(d)->drops[DROP_tunnel_bad_csum], 2);
    assert_int_equal(dpt_stats(d)->drops[DROP_tunnel_bad_csum], 2);
}

static const char ENCAP_INI[] =
    "[port vm0]\ntype = dummy\n\n"
    "[port p0]\ntype = dummy\ntx-keep = true\n"
    "caps = tx-ip-csum,tx-l4-csum,tx-outer-ip-csum,tx-outer-udp-csum\n\n"
    "[port p1]\ntype = dummy\ntx-keep = true\n\n"
    "[port vx0]\ntype = vxlan\nunderlay = p0\nlocal-ip = 192.0.2.1\nremote-ip = 192.0.2.2\n"
    "vni = 42\ncsum = true\nsrc-mac = 02:00:00:00:00:01\nnext-hop-mac = 02:00:00:00:00:fe\n\n"
    "[port vx1]\ntype = vxlan\nunderlay = p1\nlocal-ip = 2001:db8::1\nremote-ip = 2001:db8::2\n"
    "vni = 7\nsrc-mac = 02:00:00:00:00:01\nnext-hop-mac = 02:00:00:00:00:fe\n\n"
    "[rules]\nrule = in_port=vm0,tcp actions=output:vx0\n"
    "rule = in_port=vm0,udp actions=output:vx1\n";

/* A guest's PARTIAL inner TCP into a tunnel on a fully offloading NIC:
 * nothing is computed in software, and what the NIC sends is complete; into
 * a tunnel on a NIC without offload, software completes it. The outer
 * source port is tnl_src_port(flow_hash(rx key)). */
static int encap_setup(void **state)
{
    return dpt_setup(state, ENCAP_INI);
}

static void test_dp_encap(void **state)
{
    struct dpt *d = *state;
    for (int i = 0; i < 2; i++) {
        struct fspec s = {.proto = i ? 17 : 6, .payload = 41, .partial = true, .seed = 21};
        struct fdesc fd;
        struct pkt *p = make_pkt(&s, &fd);
        struct flow_key k;
        p->in_port = 0;
        parse_pkt(p, &k);
        uint16_t sport = tnl_src_port(flow_hash(&k, 0));
        uint8_t want[MAXF];
        struct fspec c = s;
        c.partial = false;
        build_frame(&c, want, &fd);
        dpt_rx(d, "vm0", p, CSUM_UNKNOWN, CSUM_PARTIAL);
        struct pkt *out = dpt_collect(d, i ? "p1" : "p0");
        assert_non_null(out);
        size_t h = i ? 70 : 50, u = i ? 54 : 34;
        assert_int_equal(out->len, fd.len + h);
        assert_memory_equal(out->data + h, want, fd.len);
        if (!i)
            assert_true(ref_ipv4_ok(out->data, 14));
        assert_true(ref_l4_ok(out->data, 14, u, 17, g16(out->data + u + 4)));
        assert_int_equal(g16(out->data + u), sport);
        pkt_free(out);
        if (i == 0) {
            for (int l = 0; l < CSUM_L_N; l++)
                assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW + l], 0);
            assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_OFFLOADED + CSUM_L_OUTER_IP], 1);
            assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_OFFLOADED + CSUM_L_OUTER_L4], 1);
            assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_OFFLOADED + CSUM_L_INNER_L4], 1);
        } else {
            assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW + CSUM_L_INNER_L4], 1);
            assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW + CSUM_L_OUTER_L4], 1);
            assert_int_equal(dpt_stats(d)->csum.n[CSUM_STAT_SW + CSUM_L_OUTER_IP], 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_lengths),
        cmocka_unit_test(test_src_port),
        cmocka_unit_test(test_src_port_stable),
        cmocka_unit_test(test_push_v4_headers),
        cmocka_unit_test(test_push_v4_csum_nodf),
        cmocka_unit_test(test_push_v6_headers),
        cmocka_unit_test(test_push_headroom),
        cmocka_unit_test(test_push_too_long),
        cmocka_unit_test(test_shortcut_equals_full),
        cmocka_unit_test(test_shortcut_differs_when_incomplete),
        cmocka_unit_test(test_outer_csum_no_cancel),
        cmocka_unit_test(test_pop_v4),
        cmocka_unit_test(test_pop_v6),
        cmocka_unit_test(test_pop_v6_routing_header),
        cmocka_unit_test(test_pop_resets_states),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_pop_errors),
        cmocka_unit_test(test_pop_reserved_bits),
        cmocka_unit_test(test_pop_not_tunnel),
        cmocka_unit_test(test_pop_csum_states),
        cmocka_unit_test(test_pop_v6_zero_csum),
        cmocka_unit_test(test_pop_csum_ffff),
        cmocka_unit_test(test_pop_selects),
        cmocka_unit_test(test_cfg_parse),
        cmocka_unit_test(test_cfg_encap_needs_macs),
        cmocka_unit_test_setup_teardown(test_dp_decap_good_vouched, decap_setup, dpt_teardown),
        cmocka_unit_test_setup_teardown(test_dp_decap_bad, decap_setup, dpt_teardown),
        cmocka_unit_test_setup_teardown(test_dp_encap, encap_setup, dpt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
