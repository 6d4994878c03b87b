/* test_sim_verify.c: sim/verify.h, the sink's verifier.
 *
 * The "datapath" here is the test itself: it receives frames from traffic
 * models and rewrites them byte by byte the way each transform should (or
 * deliberately wrongly), recomputing checksums with the naive reference
 * of helpers/csum_ref.h. The verifier must accept every right frame and
 * name what is wrong with every wrong one: a corrupted packet, a
 * misforwarded one, reordering, each transform done wrong. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packet.h"
#include "sim/traffic.h"
#include "sim/verify.h"
#include "helpers/csum_ref.h"

#define FMAX (SIM_TRAFFIC_FRAME_MAX + 256)

static struct sim_traffic *model_of(unsigned id, ...)
{
    struct sim_traffic_cfg c;
    sim_traffic_cfg_default(&c);
    va_list ap;
    va_start(ap, id);
    for (const char *kv; (kv = va_arg(ap, const char *));) {
        char k[64], err[256];
        const char *eq = strchr(kv, '=');
        snprintf(k, sizeof k, "%.*s", (int)(eq - kv), kv);
        if (sim_traffic_cfg_set(&c, k, eq + 1, err, sizeof err))
            fail_msg("%s: %s", kv, err);
    }
    va_end(ap);
    char err[256];
    struct sim_traffic *t = sim_traffic_new(&c, 42, (uint16_t)id, 10e9, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    return t;
}

/* The next frame of t, copied into f. */
static size_t next_any(struct sim_traffic *t, uint8_t *f, struct sim_traffic_info *in)
{
    uint64_t at;
    struct pkt *p;
    assert_int_equal(sim_traffic_next(t, &at, &p, in), 0);
    size_t len = p->len;
    memcpy(f, p->data, len);
    pkt_free(p);
    return len;
}

/* The next tagged frame (whose whole check the verifier can run). */
static size_t next_frame(struct sim_traffic *t, uint8_t *f, struct sim_traffic_info *in)
{
    for (;;) {
        size_t len = next_any(t, f, in);
        if (in->tagged)
            return len;
    }
}

static uint64_t count(const struct sim_verify *v, enum sim_verify_reason r)
{
    return sim_verify_stats(v)->violations[r];
}

static uint64_t total(const struct sim_verify *v)
{
    uint64_t n = 0;
    for (int r = 0; r < SIM_VERIFY_N; r++)
        n += count(v, (enum sim_verify_reason)r);
    return n;
}

/* Expects exactly the given reasons (a list of enum values ended by OK)
 * for one tagged frame, and nothing else. */
static void expect_only(struct sim_verify *v, const uint8_t *f, size_t len, ...)
{
    uint64_t untagged = sim_verify_stats(v)->untagged;
    uint64_t before[SIM_VERIFY_N];
    for (int r = 0; r < SIM_VERIFY_N; r++)
        before[r] = count(v, (enum sim_verify_reason)r);
    unsigned found = sim_verify_frame(v, f, len);
    uint64_t want[SIM_VERIFY_N] = {0};
    unsigned n = 0;
    va_list ap;
    va_start(ap, len);
    for (int r; (r = va_arg(ap, int)) >= 0; n++)
        want[r]++;
    va_end(ap);
    for (int r = 0; r < SIM_VERIFY_N; r++) {
        uint64_t got = count(v, (enum sim_verify_reason)r) - before[r];
        if (got != want[r])
            fail_msg("%s: %llu, expected %llu", sim_verify_reason_name((enum sim_verify_reason)r),
                     (unsigned long long)got, (unsigned long long)want[r]);
    }
    assert_int_equal(found, n);
    assert_int_equal(sim_verify_stats(v)->untagged, untagged); /* the whole check ran */
}

#define OK -1

/* ---- reference rewriting (the test's "datapath") ---- */

/* Offset of the network header of the Ethernet frame at f. */
static size_t l3_of(const uint8_t *f)
{
    size_t o = 12;
    while (g16(f + o) == 0x8100 || g16(f + o) == 0x88a8)
        o += 4;
    return o + 2;
}

static void fix_ipv4(uint8_t *ip)
{
    p16(ip + 10, 0);
    p16(ip + 10, (uint16_t)~ref_fold(ref_sum(ip, 20)));
}

/* Recomputes the L4 checksum of the IPv4/IPv6 packet at ip. */
static void fix_l4(uint8_t *ip)
{
    bool v6 = ip[0] >> 4 == 6;
    uint8_t proto = v6 ? ip[6] : ip[9];
    size_t hl = v6 ? 40 : 20, len = v6 ? g16(ip + 4) : g16(ip + 2) - 20u;
    uint8_t *l4 = ip + hl;
    size_t cofs = proto == 6 ? 16 : proto == 17 ? 6 : 2;
    p16(l4 + cofs, 0);
    uint64_t s = ref_sum(l4, len);
    if (proto != 1)
        s += proto + len + (v6 ? ref_sum(ip + 8, 32) : ref_sum(ip + 12, 8));
    uint16_t c = (uint16_t)~ref_fold(s);
    if (proto == 17 && c == 0)
        c = 0xffff;
    p16(l4 + cofs, c);
}

static size_t push_vlan(uint8_t *f, size_t len, uint16_t tpid, uint16_t tci)
{
    memmove(f + 16, f + 12, len - 12);
    p16(f + 12, tpid);
    p16(f + 14, tci);
    return len + 4;
}

static size_t pop_vlan(uint8_t *f, size_t len)
{
    memmove(f + 12, f + 16, len - 16);
    return len - 4;
}

static const struct sim_vxlan_encap encap4 = {
    .ipv6 = false, .src_mac = {2, 0, 0, 0, 9, 1}, .dst_mac = {2, 0, 0, 0, 9, 2},
    .src_ip = {198, 51, 100, 1}, .dst_ip = {198, 51, 100, 2}, .vni = 5000, .dst_port = 4789,
    .ttl = 64, .tos = 0, .df = true};

static const struct sim_vxlan_encap encap6 = {
    .ipv6 = true, .src_mac = {2, 0, 0, 0, 9, 1}, .dst_mac = {2, 0, 0, 0, 9, 2},
    .src_ip = {0x20, 1, 0xd, 0xb8, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    .dst_ip = {0x20, 1, 0xd, 0xb8, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, .vni = 77,
    .dst_port = 4789, .ttl = 255, .tos = 0x10, .df = false};

/* Encapsulates f in place as a VTEP does: outer source port sport, IPv4
 * identification id, outer UDP checksum if udp_csum. */
static size_t encap(uint8_t *f, size_t len, const struct sim_vxlan_encap *e, uint16_t sport,
                    uint16_t id, bool udp_csum)
{
    size_t iph = e->ipv6 ? 40 : 20, h = 14 + iph + 16;
    memmove(f + h, f, len);
    memcpy(f, e->dst_mac, 6);
    memcpy(f + 6, e->src_mac, 6);
    p16(f + 12, e->ipv6 ? 0x86dd : 0x0800);
    uint8_t *ip = f + 14, *udp = ip + iph;
    memset(ip, 0, iph + 16);
    if (e->ipv6) {
        ip[0] = (uint8_t)(0x60 | e->tos >> 4);
        ip[1] = (uint8_t)(e->tos << 4);
        p16(ip + 4, (uint16_t)(16 + len));
        ip[6] = 17;
        ip[7] = e->ttl;
        memcpy(ip + 8, e->src_ip, 16);
        memcpy(ip + 24, e->dst_ip, 16);
    } else {
        ip[0] = 0x45;
        ip[1] = e->tos;
        p16(ip + 2, (uint16_t)(36 + len));
        p16(ip + 4, id);
        p16(ip + 6, e->df ? 0x4000 : 0);
        ip[8] = e->ttl;
        ip[9] = 17;
        memcpy(ip + 12, e->src_ip, 4);
        memcpy(ip + 16, e->dst_ip, 4);
        fix_ipv4(ip);
    }
    p16(udp, sport);
    p16(udp + 2, e->dst_port);
    p16(udp + 4, (uint16_t)(16 + len));
    udp[8] = 0x08;
    udp[12] = (uint8_t)(e->vni >> 16);
    udp[13] = (uint8_t)(e->vni >> 8);
    udp[14] = (uint8_t)e->vni;
    if (udp_csum)
        fix_l4(ip);
    return len + h;
}

static struct sim_expect one(enum sim_xform_kind k)
{
    struct sim_expect e;
    memset(&e, 0, sizeof e);
    e.n = 1;
    e.xf[0].kind = k;
    return e;
}

/* ---- tests ---- */

static void test_clean_mix_accepted(void **state)
{
    (void)state;
    struct sim_traffic *a = model_of(1, "flows=500", "frame-size=imix",
                                     "proto=tcp:1,udp:1,icmp:1,arp:1", "ipv6-share=0.4",
                                     "vlan-share=0.3", "vxlan-share=0.3", "vxlan-udp-csum=true",
                                     "vxlan-inner-proto=tcp:1,udp:1,icmp:1,arp:1",
                                     "vxlan-inner-ipv6-share=0.5", "bad-csum-share=0.1", NULL);
    struct sim_traffic *b = model_of(2, "flows=50", "bad-csum-share=0.2",
                                     "bad-csum-layer=outer-udp", "vxlan-share=1", NULL);
    struct sim_verify *v = sim_verify_new(10);
    assert_non_null(v);
    assert_int_equal(sim_verify_add_model(v, a), 0);
    assert_int_equal(sim_verify_add_model(v, b), 0);
    assert_int_equal(sim_verify_add_model(v, a), -1); /* the same id twice */
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    const int n = 6000;
    int bad = 0, untagged = 0;
    for (int i = 0; i < n; i++) {
        size_t len = next_any(i % 3 ? a : b, f, &in);
        bad += in.bad != SIM_BAD_NONE;
        untagged += !in.tagged;
        assert_int_equal(sim_verify_frame(v, f, len), 0);
    }
    const struct sim_verify_stats *st = sim_verify_stats(v);
    assert_int_equal(st->frames, n);
    assert_int_equal(st->ok, n);
    assert_int_equal(total(v), 0);
    assert_int_equal(st->bad_csum_expected, bad);
    assert_int_equal(st->untagged, untagged);
    assert_true(bad > 100 && untagged > 100);
    const struct sim_verify_violation *list;
    assert_int_equal(sim_verify_listed(v, &list), 0);
    sim_verify_destroy(v);
    sim_traffic_destroy(a);
    sim_traffic_destroy(b);
}

/* A verifier given the frame as sent (sim_verify_frame_sent) reaches the
 * same verdicts as one that rebuilds it: on a clean mix with deliberate
 * bad checksums, and on a corrupted payload with its checksum fixed. */
static void test_sent_frame_same_verdicts(void **state)
{
    (void)state;
    struct sim_traffic *a = model_of(5, "flows=200", "frame-size=imix",
                                     "proto=tcp:1,udp:1,icmp:1", "ipv6-share=0.3",
                                     "vxlan-share=0.3", "bad-csum-share=0.1", NULL);
    struct sim_verify *rebuilt = sim_verify_new(10), *kept = sim_verify_new(10);
    sim_verify_add_model(rebuilt, a);
    sim_verify_add_model(kept, a);
    static uint8_t f[FMAX], sent[FMAX];
    struct sim_traffic_info in;
    for (int i = 0; i < 2000; i++) {
        size_t len = next_any(a, f, &in);
        memcpy(sent, f, len);
        if (i % 100 == 7) { /* a payload byte flipped, the L4 checksum fixed */
            f[len - 1] ^= 0x20;
            if (!in.vxlan && !in.ipv6 && in.tagged && in.proto == SIM_PROTO_UDP)
                fix_l4(f + 14);
        }
        unsigned r = sim_verify_frame(rebuilt, f, len);
        assert_int_equal(sim_verify_frame_sent(kept, f, len, sent, len, in.bad), r);
    }
    const struct sim_verify_stats *x = sim_verify_stats(rebuilt), *y = sim_verify_stats(kept);
    assert_int_equal(x->ok, y->ok);
    assert_true(x->ok < 2000 && x->ok > 1900); /* the corrupted ones caught */
    assert_memory_equal(x->violations, y->violations, sizeof x->violations);
    assert_int_equal(x->bad_csum_expected, y->bad_csum_expected);
    sim_verify_destroy(rebuilt);
    sim_verify_destroy(kept);
    sim_traffic_destroy(a);
}

static void test_corrupted_caught(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(3, "flows=10", "frame-size=200", NULL); /* IPv4/UDP */
    struct sim_traffic *x = model_of(4, "flows=10", "frame-size=200", "vxlan-share=1",
                                     "vxlan-inner-proto=tcp", NULL);
    struct sim_verify *v = sim_verify_new(100);
    sim_verify_add_model(v, t);
    sim_verify_add_model(v, x);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;

    /* A payload bit flipped: the UDP checksum and the payload. */
    size_t len = next_frame(t, f, &in);
    f[len - 3] ^= 0x10;
    expect_only(v, f, len, SIM_VERIFY_L4_CSUM, SIM_VERIFY_PAYLOAD, OK);
    /* The same with the checksum fixed up: only the payload. */
    len = next_frame(t, f, &in);
    f[len - 3] ^= 0x10;
    fix_l4(f + 14);
    expect_only(v, f, len, SIM_VERIFY_PAYLOAD, OK);
    /* Another destination address, checksums fixed: a header mismatch. */
    len = next_frame(t, f, &in);
    f[14 + 19] ^= 1;
    fix_ipv4(f + 14);
    fix_l4(f + 14);
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    /* A broken IPv4 header checksum. */
    len = next_frame(t, f, &in);
    f[14 + 10] ^= 0x40;
    expect_only(v, f, len, SIM_VERIFY_IP_CSUM, OK);
    /* Inside VXLAN: the inner TCP checksum and payload (the outer UDP
     * checksum is 0). */
    len = next_frame(x, f, &in);
    assert_true(in.vxlan && in.tagged);
    f[len - 1] ^= 0xff;
    expect_only(v, f, len, SIM_VERIFY_INNER_L4_CSUM, SIM_VERIFY_PAYLOAD, OK);
    len = next_frame(x, f, &in);
    f[50 + 14 + 8] ^= 1; /* inner TTL: inner IPv4 checksum, header */
    expect_only(v, f, len, SIM_VERIFY_INNER_IP_CSUM, SIM_VERIFY_HEADER, OK);
    /* Cut short: the IP length no longer fits. */
    len = next_frame(t, f, &in);
    expect_only(v, f, len - 10, SIM_VERIFY_MALFORMED, OK);
    expect_only(v, f, 10, SIM_VERIFY_MALFORMED, OK);
    /* Longer than sent (not padding): the length. */
    len = next_frame(t, f, &in);
    f[len] = 0;
    expect_only(v, f, len + 1, SIM_VERIFY_LENGTH, OK);
    /* A tag naming a model this sink does not know. */
    len = next_frame(t, f, &in);
    f[in.tag_ofs + 3] ^= 0x40;
    fix_l4(f + 14);
    expect_only(v, f, len, SIM_VERIFY_UNKNOWN_MODEL, OK);
    /* A tag naming another flow of the model: the headers differ. */
    len = next_frame(t, f, &in);
    f[in.tag_ofs + 9] ^= 1;
    fix_l4(f + 14);
    assert_true(sim_verify_frame(v, f, len) >= 1);
    assert_true(count(v, SIM_VERIFY_HEADER) >= 2);

    const struct sim_verify_stats *st = sim_verify_stats(v);
    assert_int_equal(st->ok, 0);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
    sim_traffic_destroy(x);
}

/* Flows with an even id belong to this sink. */
static bool even_flows(void *aux, uint16_t model, const struct sim_flow_desc *fd, uint64_t seq,
                       struct sim_expect *exp)
{
    (void)aux;
    (void)model;
    (void)seq;
    (void)exp;
    return fd->id % 2 == 0;
}

static void test_misforwarded(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(5, "flows=20", "proto=tcp:1,udp:1", "frame-size=128", NULL);
    struct sim_verify *v = sim_verify_new(4);
    sim_verify_add_model(v, t);
    sim_verify_expect_by_flow(v, even_flows, NULL);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    int odd = 0;
    for (int i = 0; i < 200; i++) {
        size_t len = next_frame(t, f, &in);
        unsigned found = sim_verify_frame(v, f, len);
        assert_int_equal(found, in.flow_id % 2);
        odd += (int)(in.flow_id % 2);
    }
    assert_int_equal(count(v, SIM_VERIFY_MISFORWARDED), odd);
    assert_int_equal(total(v), odd);
    const struct sim_verify_violation *list;
    assert_int_equal(sim_verify_listed(v, &list), 4); /* the first 4 kept */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(list[i].reason, SIM_VERIFY_MISFORWARDED);
        assert_true(list[i].tagged);
        assert_int_equal(list[i].model_id, 5);
        assert_int_equal(list[i].flow_id % 2, 1);
        assert_non_null(strstr(list[i].detail, "flow"));
    }
    /* Back to a fixed expectation: everything is welcome. */
    sim_verify_expect_by_flow(v, NULL, NULL);
    size_t len = next_frame(t, f, &in);
    assert_int_equal(sim_verify_frame(v, f, len), 0);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

/* Expectations per model take precedence over the per-flow callback and
 * the fixed one; NULL: the model's frames must not arrive at all. Kept
 * (k) or rebuilt (v), the frame sent gives the same verdicts. */
static void test_expect_model(void **state)
{
    (void)state;
    struct sim_traffic *a = model_of(11, "flows=10", "proto=udp", "frame-size=128", NULL);
    struct sim_traffic *b = model_of(12, "flows=10", "proto=udp", "frame-size=128", NULL);
    static const uint8_t mac[6] = {0x0a, 9, 8, 7, 6, 5};
    struct sim_expect e = one(SIM_XF_MOD_DL_DST);
    memcpy(e.xf[0].mac, mac, 6);
    struct sim_verify *vk[2];
    for (int i = 0; i < 2; i++) {
        struct sim_verify *v = vk[i] = sim_verify_new(10);
        sim_verify_add_model(v, a);
        sim_verify_add_model(v, b);
        sim_verify_expect_by_flow(v, even_flows, NULL);
        assert_int_equal(sim_verify_expect_model(v, 11, &e), 0);
        assert_int_equal(sim_verify_expect_model(v, 12, NULL), 0);
        assert_int_equal(sim_verify_expect_model(v, 13, &e), -1); /* not registered */
        struct sim_expect many = e;
        many.n = SIM_XFORM_MAX + 1;
        assert_int_equal(sim_verify_expect_model(v, 11, &many), -1);
    }
    struct sim_verify *v = vk[0], *k = vk[1];
    static uint8_t f[FMAX], sent[FMAX];
    struct sim_traffic_info in;
    for (int i = 0; i < 40; i++) { /* odd flows too: the callback is not asked */
        size_t len = next_frame(a, f, &in);
        memcpy(sent, f, len);
        if (i % 2 == 0) {
            memcpy(f, mac, 6);
            expect_only(v, f, len, OK);
            assert_int_equal(sim_verify_frame_sent(k, f, len, sent, len, in.bad), 0);
        } else { /* not rewritten */
            expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
            assert_int_equal(sim_verify_frame_sent(k, f, len, sent, len, in.bad), 1);
        }
    }
    assert_int_equal(count(k, SIM_VERIFY_HEADER), 20);
    size_t len = next_frame(b, f, &in);
    expect_only(v, f, len, SIM_VERIFY_MISFORWARDED, OK);
    assert_int_equal(sim_verify_frame_sent(k, f, len, f, len, in.bad), 1);
    assert_int_equal(count(k, SIM_VERIFY_MISFORWARDED), 1);
    assert_int_equal(total(k), 21);
    sim_verify_destroy(v);
    sim_verify_destroy(k);
    sim_traffic_destroy(a);
    sim_traffic_destroy(b);
}

static void test_order(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(6, "flows=3", NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
#define SEND(flow, seq) sim_verify_frame(v, f, sim_traffic_build(t, flow, seq, f, &in))
    assert_int_equal(SEND(0, 0), 0);
    assert_int_equal(SEND(0, 1), 0);
    assert_int_equal(SEND(0, 5), 0);  /* a gap: drops are not reordering */
    assert_int_equal(SEND(1, 0), 0);  /* flows are independent */
    assert_int_equal(SEND(0, 3), 1);  /* late */
    assert_int_equal(count(v, SIM_VERIFY_REORDERED), 1);
    assert_int_equal(SEND(0, 5), 1);  /* again */
    assert_int_equal(count(v, SIM_VERIFY_DUPLICATE), 1);
    assert_int_equal(SEND(0, 6), 0);
    assert_int_equal(SEND(1, 1), 0);
    assert_int_equal(SEND(2, 7), 0);  /* a flow may first be seen at any seq */
    /* Thousands of flows: the order table grows. */
    for (uint64_t fl = 10; fl < 5000; fl++)
        assert_int_equal(SEND(fl, 0), 0);
    for (uint64_t fl = 10; fl < 5000; fl++)
        assert_int_equal(SEND(fl, 0), 1);
    assert_int_equal(count(v, SIM_VERIFY_DUPLICATE), 1 + 4990);
    /* Flow ids far beyond the model's flows (churn hands them out): kept
     * in the hash map behind the dense table, checked the same way. */
    const uint64_t far = (1ull << 40) + 3;
    assert_int_equal(SEND(far, 4), 0);
    assert_int_equal(SEND(far + 1, 0), 0);
    assert_int_equal(SEND(far, 2), 1);
    assert_int_equal(SEND(far, 4), 1);
    assert_int_equal(SEND(far, 5), 0);
    assert_int_equal(count(v, SIM_VERIFY_REORDERED), 2);
    assert_int_equal(count(v, SIM_VERIFY_DUPLICATE), 2 + 4990);
#undef SEND
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

static void test_deliberate_bad(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(7, "flows=10", "frame-size=256", "proto=tcp",
                                     "bad-csum-share=1", NULL);
    struct sim_traffic *ip = model_of(8, "flows=10", "frame-size=256", "bad-csum-share=1",
                                      "bad-csum-layer=ip", NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t);
    sim_verify_add_model(v, ip);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    size_t len = next_frame(t, f, &in);
    assert_int_equal(in.bad, SIM_BAD_L4);
    expect_only(v, f, len, OK); /* sent wrong, arrives wrong: right */
    assert_int_equal(sim_verify_stats(v)->bad_csum_expected, 1);
    len = next_frame(t, f, &in);
    fix_l4(f + 14); /* a datapath "fixed" it */
    expect_only(v, f, len, SIM_VERIFY_BAD_CSUM_FIXED, OK);
    len = next_frame(ip, f, &in);
    assert_int_equal(in.bad, SIM_BAD_IP);
    expect_only(v, f, len, OK);
    len = next_frame(ip, f, &in);
    fix_ipv4(f + 14);
    expect_only(v, f, len, SIM_VERIFY_BAD_CSUM_FIXED, OK);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
    sim_traffic_destroy(ip);
}

static void test_untagged(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(9, "flows=10", "proto=tcp", NULL); /* 64 B: no room */
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    size_t len = next_any(t, f, &in);
    assert_false(in.tagged);
    assert_int_equal(sim_verify_frame(v, f, len), 0);
    assert_int_equal(sim_verify_stats(v)->untagged, 1);
    len = next_any(t, f, &in);
    f[len - 1] ^= 1;
    assert_int_equal(sim_verify_frame(v, f, len), 1); /* checksums are still checked */
    assert_int_equal(count(v, SIM_VERIFY_L4_CSUM), 1);
    assert_int_equal(sim_verify_stats(v)->untagged, 2);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

static void test_mod_dl(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(10, "flows=10", "proto=tcp:1,udp:1,arp:1", "frame-size=128",
                                     NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t);
    static const uint8_t mac[6] = {0x0a, 1, 2, 3, 4, 5}, other[6] = {0x0a, 1, 2, 3, 4, 6};
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    for (int which = 0; which < 2; which++) {
        struct sim_expect e = one(which ? SIM_XF_MOD_DL_DST : SIM_XF_MOD_DL_SRC);
        memcpy(e.xf[0].mac, mac, 6);
        assert_int_equal(sim_verify_expect(v, &e), 0);
        size_t o = which ? 0 : 6;
        size_t len = next_frame(t, f, &in);
        memcpy(f + o, mac, 6);
        expect_only(v, f, len, OK);
        len = next_frame(t, f, &in);
        memcpy(f + o, other, 6);
        expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
        len = next_frame(t, f, &in); /* not done at all */
        expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
        len = next_frame(t, f, &in); /* done to the wrong field */
        memcpy(f + 6 - o, mac, 6);
        assert_true(sim_verify_frame(v, f, len) >= 1);
    }
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

static void test_dec_ttl(void **state)
{
    (void)state;
    struct sim_traffic *t4 = model_of(11, "flows=10", "proto=tcp:1,udp:1,icmp:1", "ttl=64",
                                      "vlan-share=0.5", "frame-size=100", NULL);
    struct sim_traffic *t6 = model_of(12, "flows=10", "ipv6-share=1", "frame-size=100", NULL);
    struct sim_traffic *t1 = model_of(13, "flows=10", "ttl=1", "frame-size=100", NULL);
    struct sim_traffic *bad = model_of(14, "flows=10", "bad-csum-share=1", "bad-csum-layer=ip",
                                       "frame-size=100", NULL);
    struct sim_traffic *arp = model_of(15, "flows=10", "proto=arp", NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t4);
    sim_verify_add_model(v, t6);
    sim_verify_add_model(v, t1);
    sim_verify_add_model(v, bad);
    sim_verify_add_model(v, arp);
    struct sim_expect e = one(SIM_XF_DEC_TTL);
    assert_int_equal(sim_verify_expect(v, &e), 0);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    for (int i = 0; i < 20; i++) { /* right: TTL - 1, checksum recomputed */
        size_t len = next_frame(t4, f, &in);
        uint8_t *ip = f + l3_of(f);
        ip[8]--;
        fix_ipv4(ip);
        expect_only(v, f, len, OK);
    }
    size_t len = next_frame(t4, f, &in); /* not decremented */
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    len = next_frame(t4, f, &in); /* decremented, checksum stale */
    f[l3_of(f) + 8]--;
    expect_only(v, f, len, SIM_VERIFY_IP_CSUM, OK);
    len = next_frame(t4, f, &in); /* decremented twice */
    f[l3_of(f) + 8] -= 2;
    fix_ipv4(f + l3_of(f));
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    len = next_frame(t6, f, &in); /* IPv6: the hop limit, no header checksum */
    f[14 + 7]--;
    expect_only(v, f, len, OK);
    len = next_frame(t6, f, &in);
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    /* A packet sent with a wrong IPv4 checksum stays wrong after dec_ttl. */
    len = next_frame(bad, f, &in);
    f[14 + 8]--;
    fix_ipv4(f + 14);
    f[14 + 10] ^= 0x55;
    expect_only(v, f, len, OK);
    len = next_frame(bad, f, &in);
    f[14 + 8]--;
    fix_ipv4(f + 14);
    expect_only(v, f, len, SIM_VERIFY_BAD_CSUM_FIXED, OK);
    /* TTL 1 is dropped by dec_ttl, ARP has no TTL: such an expectation is
     * itself wrong. */
    len = next_frame(t1, f, &in);
    expect_only(v, f, len, SIM_VERIFY_BAD_EXPECTATION, OK);
    len = next_frame(arp, f, &in);
    expect_only(v, f, len, SIM_VERIFY_BAD_EXPECTATION, OK);
    sim_verify_destroy(v);
    sim_traffic_destroy(t4);
    sim_traffic_destroy(t6);
    sim_traffic_destroy(t1);
    sim_traffic_destroy(bad);
    sim_traffic_destroy(arp);
}

static void test_vlan(void **state)
{
    (void)state;
    struct sim_traffic *plain = model_of(16, "flows=10", "proto=tcp:1,udp:1,arp:1",
                                         "frame-size=100", NULL);
    /* 66 bytes with a VLAN tag: just room for the payload tag. */
    struct sim_traffic *tagged = model_of(17, "flows=10", "vlan-share=1", "vlan-id=300",
                                          "proto=udp", "frame-size=66", NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, plain);
    sim_verify_add_model(v, tagged);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;

    struct sim_expect e = one(SIM_XF_PUSH_VLAN);
    e.xf[0].tpid = 0x8100;
    e.xf[0].tci = 0x2000 | 42;
    assert_int_equal(sim_verify_expect(v, &e), 0);
    size_t len = next_frame(plain, f, &in);
    len = push_vlan(f, len, 0x8100, 0x2000 | 42);
    expect_only(v, f, len, OK);
    len = next_frame(plain, f, &in);
    len = push_vlan(f, len, 0x8100, 0x2000 | 43); /* wrong VID */
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    len = next_frame(plain, f, &in);
    len = push_vlan(f, len, 0x88a8, 0x2000 | 42); /* wrong TPID */
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    len = next_frame(plain, f, &in); /* not pushed */
    expect_only(v, f, len, SIM_VERIFY_LENGTH, SIM_VERIFY_HEADER, OK);

    e = one(SIM_XF_POP_VLAN);
    assert_int_equal(sim_verify_expect(v, &e), 0);
    len = next_frame(tagged, f, &in); /* 62 -> 58 bytes, padded to 60 on the wire */
    assert_int_equal(len, 62);
    assert_true(in.tagged);
    assert_int_equal(g16(f + 14) & 0xfff, 300);
    len = pop_vlan(f, len);
    expect_only(v, f, len, OK);
    len = next_frame(tagged, f, &in);
    len = pop_vlan(f, len);
    memset(f + len, 0, 2);
    expect_only(v, f, 60, OK);
    len = next_frame(tagged, f, &in); /* not popped */
    expect_only(v, f, len, SIM_VERIFY_LENGTH, SIM_VERIFY_HEADER, OK);
    len = next_frame(tagged, f, &in); /* popped, then cut */
    len = pop_vlan(f, len);
    expect_only(v, f, len - 2, SIM_VERIFY_MALFORMED, OK);
    len = next_frame(plain, f, &in); /* nothing to pop: the expectation is wrong */
    expect_only(v, f, len, SIM_VERIFY_BAD_EXPECTATION, OK);
    sim_verify_destroy(v);
    sim_traffic_destroy(plain);
    sim_traffic_destroy(tagged);
}

static void test_vxlan_encap(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(18, "flows=50", "proto=tcp:1,udp:1,icmp:1,arp:1",
                                     "ipv6-share=0.3", "vlan-share=0.3", "frame-size=imix", NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    struct sim_expect e = one(SIM_XF_VXLAN_ENCAP);
    e.xf[0].encap = encap4;
    assert_int_equal(sim_verify_expect(v, &e), 0);
    for (int i = 0; i < 50; i++) { /* any source port and IP id; checksum or not */
        size_t len = next_frame(t, f, &in);
        len = encap(f, len, &encap4, (uint16_t)(49152 + i * 300), (uint16_t)(i * 77), i & 1);
        expect_only(v, f, len, OK);
    }
    size_t len = next_frame(t, f, &in);
    len = encap(f, len, &encap4, 1234, 0, false);
    expect_only(v, f, len, SIM_VERIFY_VXLAN_SPORT, OK);
    struct sim_vxlan_encap wrong = encap4;
    wrong.vni = 5001;
    len = next_frame(t, f, &in);
    len = encap(f, len, &wrong, 50000, 0, false);
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    wrong = encap4;
    wrong.dst_ip[3] = 3;
    len = next_frame(t, f, &in);
    len = encap(f, len, &wrong, 50000, 0, true);
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    wrong = encap4;
    wrong.df = false;
    len = next_frame(t, f, &in);
    len = encap(f, len, &wrong, 50000, 0, false);
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    len = next_frame(t, f, &in); /* outer IPv4 checksum wrong */
    len = encap(f, len, &encap4, 50000, 0, false);
    f[14 + 10] ^= 1;
    expect_only(v, f, len, SIM_VERIFY_IP_CSUM, OK);
    len = next_frame(t, f, &in); /* outer UDP checksum wrong */
    len = encap(f, len, &encap4, 50000, 0, true);
    f[14 + 20 + 6] ^= 1;
    expect_only(v, f, len, SIM_VERIFY_L4_CSUM, OK);
    len = next_frame(t, f, &in); /* not encapsulated */
    assert_true(sim_verify_frame(v, f, len) >= 1);
    assert_true(count(v, SIM_VERIFY_LENGTH) >= 1);

    /* IPv6 underlay: a zero UDP checksum is allowed for the tunnel. */
    e.xf[0].encap = encap6;
    assert_int_equal(sim_verify_expect(v, &e), 0);
    len = next_frame(t, f, &in);
    len = encap(f, len, &encap6, 65535, 0, false);
    expect_only(v, f, len, OK);
    len = next_frame(t, f, &in);
    len = encap(f, len, &encap6, 49152, 0, true);
    expect_only(v, f, len, OK);
    len = next_frame(t, f, &in); /* hop limit wrong */
    len = encap(f, len, &encap6, 49152, 0, true);
    f[14 + 7] = 64;
    expect_only(v, f, len, SIM_VERIFY_HEADER, OK);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

static void test_vxlan_decap(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(19, "flows=50", "vxlan-share=1", "vlan-share=0.5",
                                     "vxlan-inner-proto=tcp:1,udp:1,icmp:1,arp:1",
                                     "vxlan-inner-ipv6-share=0.3", "frame-size=imix",
                                     "vxlan-udp-csum=true", NULL);
    struct sim_traffic *plain = model_of(20, "flows=5", "frame-size=128", NULL);
    struct sim_verify *v = sim_verify_new(10);
    sim_verify_add_model(v, t);
    sim_verify_add_model(v, plain);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    struct sim_expect e = one(SIM_XF_VXLAN_DECAP);
    assert_int_equal(sim_verify_expect(v, &e), 0);
    for (int i = 0; i < 50; i++) {
        size_t len = next_frame(t, f, &in);
        size_t outer = (in.vlan ? 18 : 14) + 20 + 16;
        memmove(f, f + outer, len - outer);
        expect_only(v, f, len - outer, OK);
    }
    size_t len = next_frame(t, f, &in); /* outer headers left on */
    expect_only(v, f, len, SIM_VERIFY_LENGTH, SIM_VERIFY_HEADER, OK);
    len = next_frame(plain, f, &in); /* not VXLAN: wrong expectation */
    expect_only(v, f, len, SIM_VERIFY_BAD_EXPECTATION, OK);

    /* A chain: decap, then a new destination MAC and dec_ttl. */
    e.n = 3;
    e.xf[1].kind = SIM_XF_MOD_DL_DST;
    memcpy(e.xf[1].mac, ((uint8_t[]){2, 2, 2, 2, 2, 2}), 6);
    e.xf[2].kind = SIM_XF_DEC_TTL;
    assert_int_equal(sim_verify_expect(v, &e), 0);
    int done = 0;
    while (done < 10) {
        len = next_frame(t, f, &in);
        if (in.proto == SIM_PROTO_ARP)
            continue;
        size_t outer = (in.vlan ? 18 : 14) + 20 + 16;
        memmove(f, f + outer, len - outer);
        len -= outer;
        memset(f, 2, 6);
        if (in.ipv6) {
            f[14 + 7]--;
        } else {
            f[14 + 8]--;
            fix_ipv4(f + 14);
        }
        expect_only(v, f, len, OK);
        done++;
    }
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
    sim_traffic_destroy(plain);
}

/* More transforms than a chain holds: refused, or a bad expectation. */
static bool five_xforms(void *aux, uint16_t model, const struct sim_flow_desc *fd, uint64_t seq,
                        struct sim_expect *exp)
{
    (void)aux;
    (void)model;
    (void)fd;
    (void)seq;
    exp->n = SIM_XFORM_MAX + 1;
    return true;
}

static void test_too_many_xforms(void **state)
{
    (void)state;
    struct sim_traffic *t = model_of(22, "flows=4", "frame-size=100", NULL);
    struct sim_verify *v = sim_verify_new(4);
    sim_verify_add_model(v, t);
    struct sim_expect e = one(SIM_XF_DEC_TTL);
    assert_int_equal(sim_verify_expect(v, &e), 0);
    struct sim_expect big = e;
    big.n = SIM_XFORM_MAX + 1;
    assert_int_equal(sim_verify_expect(v, &big), -1);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    size_t len = next_frame(t, f, &in); /* the dec_ttl expectation still holds */
    f[14 + 8]--;
    fix_ipv4(f + 14);
    expect_only(v, f, len, OK);
    sim_verify_expect_by_flow(v, five_xforms, NULL);
    len = next_frame(t, f, &in);
    expect_only(v, f, len, SIM_VERIFY_BAD_EXPECTATION, OK);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

static void test_names_and_listing(void **state)
{
    (void)state;
    for (int r = 0; r < SIM_VERIFY_N; r++) {
        const char *n = sim_verify_reason_name((enum sim_verify_reason)r);
        assert_non_null(n);
        assert_non_null(sim_verify_reason_desc((enum sim_verify_reason)r));
        for (int s = 0; s < r; s++)
            assert_string_not_equal(n, sim_verify_reason_name((enum sim_verify_reason)s));
    }
    assert_null(sim_verify_reason_name(SIM_VERIFY_N));
    assert_string_equal(sim_verify_reason_name(SIM_VERIFY_MISFORWARDED), "misforwarded");

    struct sim_traffic *t = model_of(21, "flows=4", "frame-size=100", NULL);
    struct sim_verify *v = sim_verify_new(3);
    sim_verify_add_model(v, t);
    static uint8_t f[FMAX];
    struct sim_traffic_info in;
    uint64_t flows[5], seqs[5];
    for (int i = 0; i < 5; i++) {
        size_t len = next_frame(t, f, &in);
        flows[i] = in.flow_id;
        seqs[i] = in.seq;
        f[len - 1] ^= 1;
        assert_int_equal(sim_verify_frame(v, f, len), 2); /* checksum and payload */
    }
    const struct sim_verify_violation *list;
    assert_int_equal(sim_verify_listed(v, &list), 3);
    assert_int_equal(count(v, SIM_VERIFY_L4_CSUM), 5);
    assert_int_equal(count(v, SIM_VERIFY_PAYLOAD), 5);
    assert_int_equal(list[0].reason, SIM_VERIFY_L4_CSUM);
    assert_int_equal(list[1].reason, SIM_VERIFY_PAYLOAD);
    assert_int_equal(list[0].flow_id, flows[0]);
    assert_int_equal(list[0].seq, seqs[0]);
    assert_int_equal(list[2].flow_id, flows[1]);
    assert_int_equal(list[2].seq, seqs[1]);
    assert_non_null(strstr(list[1].detail, "byte 95")); /* the last of 96 */
    sim_verify_destroy(v);
    /* No list at all: counts only. */
    v = sim_verify_new(0);
    sim_verify_add_model(v, t);
    size_t len = next_frame(t, f, &in);
    f[20] ^= 1;
    assert_true(sim_verify_frame(v, f, len) > 0);
    assert_int_equal(sim_verify_listed(v, &list), 0);
    sim_verify_destroy(v);
    sim_traffic_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_mix_accepted),
        cmocka_unit_test(test_corrupted_caught),
        cmocka_unit_test(test_sent_frame_same_verdicts),
        cmocka_unit_test(test_misforwarded),
        cmocka_unit_test(test_expect_model),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_deliberate_bad),
        cmocka_unit_test(test_untagged),
        cmocka_unit_test(test_mod_dl),
        cmocka_unit_test(test_dec_ttl),
        cmocka_unit_test(test_vlan),
        cmocka_unit_test(test_vxlan_encap),
        cmocka_unit_test(test_vxlan_decap),
        cmocka_unit_test(test_too_many_xforms),
        cmocka_unit_test(test_names_and_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
