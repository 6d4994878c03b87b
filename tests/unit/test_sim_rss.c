/* test_sim_rss.c: sim/rss.h against the RSS verification suite.
 *
 * The expected hashes are the published verification vectors of
 * Microsoft's "Verifying the RSS Hash Calculation" (the same table is in
 * Intel's 82599 datasheet, section 7.1.2.8.3, and DPDK's
 * app/test/test_thash.c): the default key, IPv4 and IPv6, with and
 * without ports. Packets for the tuple extraction are built byte by byte
 * here and parsed with the core's parser. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "packet.h"
#include "parse.h"
#include "sim/rng.h"
#include "sim/rss.h"
#include "helpers/csum_ref.h"

struct v4_vec {
    uint8_t dst[4], src[4];
    uint16_t dport, sport;
    uint32_t hash_l3, hash_l4;
};

static const struct v4_vec v4[] = {
    {{161, 142, 100, 80}, {66, 9, 149, 187}, 1766, 2794, 0x323e8fc2, 0x51ccc178},
    {{65, 69, 140, 83}, {199, 92, 111, 2}, 4739, 14230, 0xd718262a, 0xc626b0ea},
    {{12, 22, 207, 184}, {24, 19, 198, 95}, 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
    {{209, 142, 163, 6}, {38, 27, 205, 30}, 2217, 48228, 0x82989176, 0xafc7327f},
    {{202, 188, 127, 2}, {153, 39, 163, 191}, 1303, 44251, 0x5d1809c5, 0x10e828a2},
};

struct v6_vec {
    uint8_t dst[16], src[16];
    uint16_t dport, sport;
    uint32_t hash_l3, hash_l4;
};

static const struct v6_vec v6[] = {
    {/* 3ffe:2501:200:3::1 */
     {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x01},
     /* 3ffe:2501:200:1fff::7 */
     {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x07},
     1766, 2794, 0x2cc18cd5, 0x40207d3d},
    {/* ff02::1 */
     {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01},
     /* 3ffe:501:8::260:97ff:fe40:efab */
     {0x3f, 0xfe, 0x05, 0x01, 0x00, 0x08, 0, 0, 0x02, 0x60, 0x97, 0xff, 0xfe, 0x40, 0xef, 0xab},
     4739, 14230, 0x0f0c461c, 0xdde51bbf},
    {/* fe80::200:f8ff:fe21:67cf */
     {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67, 0xcf},
     /* 3ffe:1900:4545:3:200:f8ff:fe21:67cf */
     {0x3f, 0xfe, 0x19, 0x00, 0x45, 0x45, 0x00, 0x03, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21,
      0x67, 0xcf},
     38024, 44251, 0x4b61e985, 0x02d1feef},
};

#define N_V4 (sizeof v4 / sizeof v4[0])
#define N_V6 (sizeof v6 / sizeof v6[0])

/* The specification's input: source, destination (alen bytes each),
 * source port, destination port, in network order. */
static void spec_input(uint8_t *in, const uint8_t *src, const uint8_t *dst, size_t alen,
                       uint16_t sport, uint16_t dport)
{
    memcpy(in, src, alen);
    memcpy(in + alen, dst, alen);
    p16(in + 2 * alen, sport);
    p16(in + 2 * alen + 2, dport);
}

static void test_vectors_bitwise(void **state)
{
    (void)state;
    uint8_t in[36];
    for (size_t i = 0; i < N_V4; i++) {
        spec_input(in, v4[i].src, v4[i].dst, 4, v4[i].sport, v4[i].dport);
        assert_int_equal(sim_rss_toeplitz(sim_rss_default_key, in, 8), v4[i].hash_l3);
        assert_int_equal(sim_rss_toeplitz(sim_rss_default_key, in, 12), v4[i].hash_l4);
    }
    for (size_t i = 0; i < N_V6; i++) {
        spec_input(in, v6[i].src, v6[i].dst, 16, v6[i].sport, v6[i].dport);
        assert_int_equal(sim_rss_toeplitz(sim_rss_default_key, in, 32), v6[i].hash_l3);
        assert_int_equal(sim_rss_toeplitz(sim_rss_default_key, in, 36), v6[i].hash_l4);
    }
}

static void test_vectors_tuples(void **state)
{
    (void)state;
    static struct sim_rss rss;
    assert_int_equal(sim_rss_init(&rss, NULL, 4), 0);
    struct sim_rss_tuple t;
    for (size_t i = 0; i < N_V4; i++) {
        sim_rss_tuple_ipv4(&t, v4[i].src, v4[i].dst, 6, false, v4[i].sport, v4[i].dport);
        assert_int_equal(t.type, SIM_RSS_IPV4_TCP);
        assert_int_equal(t.len, 12);
        assert_int_equal(sim_rss_hash(&rss, &t), v4[i].hash_l4);
        sim_rss_tuple_ipv4(&t, v4[i].src, v4[i].dst, 17, false, v4[i].sport, v4[i].dport);
        assert_int_equal(t.type, SIM_RSS_IPV4_UDP);
        assert_int_equal(sim_rss_hash(&rss, &t), v4[i].hash_l4);
        sim_rss_tuple_ipv4(&t, v4[i].src, v4[i].dst, 1, false, 0, 0);
        assert_int_equal(t.type, SIM_RSS_IPV4);
        assert_int_equal(t.len, 8);
        assert_int_equal(sim_rss_hash(&rss, &t), v4[i].hash_l3);
        sim_rss_tuple_ipv4(&t, v4[i].src, v4[i].dst, 6, true, v4[i].sport, v4[i].dport);
        assert_int_equal(sim_rss_hash(&rss, &t), v4[i].hash_l3);
    }
    for (size_t i = 0; i < N_V6; i++) {
        sim_rss_tuple_ipv6(&t, v6[i].src, v6[i].dst, 6, false, v6[i].sport, v6[i].dport);
        assert_int_equal(t.type, SIM_RSS_IPV6_TCP);
        assert_int_equal(t.len, 36);
        assert_int_equal(sim_rss_hash(&rss, &t), v6[i].hash_l4);
        sim_rss_tuple_ipv6(&t, v6[i].src, v6[i].dst, 58, false, 0, 0);
        assert_int_equal(t.type, SIM_RSS_IPV6);
        assert_int_equal(sim_rss_hash(&rss, &t), v6[i].hash_l3);
    }
    /* A NIC that does not hash UDP ports hashes UDP as IP; one that hashes
     * nothing IPv4 gives 0. */
    rss.types &= ~SIM_RSS_TYPE_BIT(SIM_RSS_IPV4_UDP);
    sim_rss_tuple_ipv4(&t, v4[0].src, v4[0].dst, 17, false, v4[0].sport, v4[0].dport);
    assert_int_equal(sim_rss_hash(&rss, &t), v4[0].hash_l3);
    sim_rss_tuple_ipv4(&t, v4[0].src, v4[0].dst, 6, false, v4[0].sport, v4[0].dport);
    assert_int_equal(sim_rss_hash(&rss, &t), v4[0].hash_l4);
    rss.types = SIM_RSS_TYPE_BIT(SIM_RSS_IPV6);
    assert_int_equal(sim_rss_hash(&rss, &t), 0);
    t.type = SIM_RSS_NONE;
    assert_int_equal(sim_rss_hash(&rss, &t), 0);
}

/* The table-driven hash equals the bitwise one, for any key and input. */
static void test_table_matches_bitwise(void **state)
{
    (void)state;
    static struct sim_rss rss;
    struct sim_rng r;
    sim_rng_init(&r, 4, 4);
    for (int k = 0; k < 20; k++) {
        uint8_t key[SIM_RSS_KEY_LEN];
        for (int i = 0; i < SIM_RSS_KEY_LEN; i++)
            key[i] = (uint8_t)sim_rng_u64(&r);
        assert_int_equal(sim_rss_init(&rss, key, 3), 0);
        for (int j = 0; j < 200; j++) {
            struct sim_rss_tuple t;
            uint8_t a[16], b[16];
            for (int i = 0; i < 16; i++) {
                a[i] = (uint8_t)sim_rng_u64(&r);
                b[i] = (uint8_t)sim_rng_u64(&r);
            }
            uint16_t sp = (uint16_t)sim_rng_u64(&r), dp = (uint16_t)sim_rng_u64(&r);
            if (j & 1)
                sim_rss_tuple_ipv6(&t, a, b, 17, false, sp, dp);
            else
                sim_rss_tuple_ipv4(&t, a, b, 6, false, sp, dp);
            assert_int_equal(sim_rss_hash(&rss, &t), sim_rss_toeplitz(key, t.data, t.len));
        }
    }
}

static void test_reta(void **state)
{
    (void)state;
    static struct sim_rss rss;
    assert_int_equal(sim_rss_init(&rss, NULL, 0), -1);
    assert_int_equal(sim_rss_init(&rss, NULL, 3), 0);
    for (int i = 0; i < SIM_RSS_RETA_SIZE; i++)
        assert_int_equal(rss.reta[i], i % 3);
    /* The queue is the RETA entry of the hash's low 7 bits. */
    assert_int_equal(sim_rss_queue(&rss, 0x51ccc178), (0x78 & 127) % 3);
    assert_int_equal(sim_rss_queue(&rss, 0x323e8fc2), (0xc2 & 127) % 3);
    assert_int_equal(sim_rss_init(&rss, NULL, 200), 0);
    for (int i = 0; i < SIM_RSS_RETA_SIZE; i++)
        assert_int_equal(rss.reta[i], i); /* more queues than entries: the first 128 */
    /* Random flows spread evenly over 4 queues (each within 5 sd of 1/4). */
    assert_int_equal(sim_rss_init(&rss, NULL, 4), 0);
    struct sim_rng r;
    sim_rng_init(&r, 8, 8);
    const int n = 40000;
    int per_q[4] = {0};
    for (int i = 0; i < n; i++) {
        uint8_t a[4] = {10, 0, (uint8_t)sim_rng_u64(&r), (uint8_t)sim_rng_u64(&r)};
        uint8_t b[4] = {10, 1, 0, 1};
        struct sim_rss_tuple t;
        sim_rss_tuple_ipv4(&t, a, b, 17, false, (uint16_t)(1024 + sim_rng_below(&r, 60000)), 53);
        per_q[sim_rss_queue(&rss, sim_rss_hash(&rss, &t))]++;
    }
    for (int q = 0; q < 4; q++)
        assert_true(abs(per_q[q] - n / 4) < 5 * 87); /* sd = sqrt(n * 3/16) ~ 87 */
}

/* ---- tuples from parsed packets ---- */

static size_t put_eth(uint8_t *f, uint16_t type, bool vlan)
{
    memset(f, 0, 12);
    f[0] = 0x02;
    f[6] = 0x02;
    f[11] = 1;
    size_t o = 12;
    if (vlan) {
        f[o++] = 0x81;
        f[o++] = 0x00;
        f[o++] = 0x00;
        f[o++] = 100;
    }
    f[o++] = (uint8_t)(type >> 8);
    f[o++] = (uint8_t)type;
    return o;
}

/* A TCP or UDP header (or 8 bytes of ICMP) with the given ports at l4. */
static size_t put_l4(uint8_t *l4, uint8_t proto, uint16_t sport, uint16_t dport)
{
    p16(l4, sport);
    p16(l4 + 2, dport);
    if (proto == 6)
        l4[12] = 0x50;
    if (proto == 17)
        l4[5] = 8;
    return proto == 6 ? 20 : 8;
}

/* Ethernet [VLAN] IPv4 and an L4 header (ports first). */
static size_t put_ipv4(uint8_t *f, bool vlan, const uint8_t src[4], const uint8_t dst[4],
                       uint8_t proto, uint16_t sport, uint16_t dport, bool frag)
{
    size_t o = put_eth(f, 0x0800, vlan);
    uint8_t *ip = f + o;
    size_t l4len = proto == 6 ? 20 : 8;
    memset(ip, 0, 20 + l4len);
    ip[0] = 0x45;
    ip[2] = (uint8_t)((20 + l4len) >> 8);
    ip[3] = (uint8_t)(20 + l4len);
    if (frag)
        ip[6] = 0x20; /* more fragments, offset 0 */
    ip[8] = 64;
    ip[9] = proto;
    memcpy(ip + 12, src, 4);
    memcpy(ip + 16, dst, 4);
    return o + 20 + put_l4(ip + 20, proto, sport, dport);
}

static size_t put_ipv6(uint8_t *f, const uint8_t src[16], const uint8_t dst[16], uint8_t proto,
                       uint16_t sport, uint16_t dport)
{
    size_t o = put_eth(f, 0x86dd, false);
    uint8_t *ip = f + o;
    size_t l4len = proto == 6 ? 20 : 8;
    memset(ip, 0, 40 + l4len);
    ip[0] = 0x60;
    ip[5] = (uint8_t)l4len;
    ip[6] = proto;
    ip[7] = 64;
    memcpy(ip + 8, src, 16);
    memcpy(ip + 24, dst, 16);
    return o + 40 + put_l4(ip + 40, proto, sport, dport);
}

static uint32_t hash_frame(const struct sim_rss *rss, const uint8_t *f, size_t len, bool parse,
                           enum sim_rss_type *type)
{
    struct pkt *p = pkt_from_data(f, (uint32_t)len);
    assert_non_null(p);
    if (parse) {
        struct flow_key k;
        assert_int_equal(parse_pkt(p, &k), PARSE_OK);
    }
    struct sim_rss_tuple t;
    sim_rss_tuple_from_pkt(p, &t);
    *type = (enum sim_rss_type)t.type;
    uint32_t h = sim_rss_hash(rss, &t);
    pkt_free(p);
    return h;
}

static void test_tuple_from_pkt(void **state)
{
    (void)state;
    static struct sim_rss rss;
    assert_int_equal(sim_rss_init(&rss, NULL, 8), 0);
    uint8_t f[256];
    enum sim_rss_type ty;
    for (size_t i = 0; i < N_V4; i++) {
        size_t n = put_ipv4(f, i & 1, v4[i].src, v4[i].dst, 6, v4[i].sport, v4[i].dport, false);
        assert_int_equal(hash_frame(&rss, f, n, true, &ty), v4[i].hash_l4);
        assert_int_equal(ty, SIM_RSS_IPV4_TCP);
        n = put_ipv4(f, false, v4[i].src, v4[i].dst, 17, v4[i].sport, v4[i].dport, false);
        assert_int_equal(hash_frame(&rss, f, n, true, &ty), v4[i].hash_l4);
        assert_int_equal(ty, SIM_RSS_IPV4_UDP);
        /* A first fragment carries ports, but NICs hash fragments by address. */
        n = put_ipv4(f, false, v4[i].src, v4[i].dst, 6, v4[i].sport, v4[i].dport, true);
        assert_int_equal(hash_frame(&rss, f, n, true, &ty), v4[i].hash_l3);
        assert_int_equal(ty, SIM_RSS_IPV4);
        /* ICMP: addresses only. */
        n = put_ipv4(f, false, v4[i].src, v4[i].dst, 1, 0x0800, 0, false);
        assert_int_equal(hash_frame(&rss, f, n, true, &ty), v4[i].hash_l3);
        assert_int_equal(ty, SIM_RSS_IPV4);
        /* Not parsed: not hashed. */
        n = put_ipv4(f, false, v4[i].src, v4[i].dst, 6, v4[i].sport, v4[i].dport, false);
        assert_int_equal(hash_frame(&rss, f, n, false, &ty), 0);
        assert_int_equal(ty, SIM_RSS_NONE);
    }
    for (size_t i = 0; i < N_V6; i++) {
        size_t n = put_ipv6(f, v6[i].src, v6[i].dst, 6, v6[i].sport, v6[i].dport);
        assert_int_equal(hash_frame(&rss, f, n, true, &ty), v6[i].hash_l4);
        assert_int_equal(ty, SIM_RSS_IPV6_TCP);
        n = put_ipv6(f, v6[i].src, v6[i].dst, 17, v6[i].sport, v6[i].dport);
        assert_int_equal(hash_frame(&rss, f, n, true, &ty), v6[i].hash_l4);
        assert_int_equal(ty, SIM_RSS_IPV6_UDP);
    }
    /* ARP: not IP, hash 0. */
    size_t n = put_eth(f, 0x0806, false);
    static const uint8_t arp[28] = {0, 1, 8, 0, 6, 4, 0, 1};
    memcpy(f + n, arp, sizeof arp);
    n += sizeof arp;
    assert_int_equal(hash_frame(&rss, f, n, true, &ty), 0);
    assert_int_equal(ty, SIM_RSS_NONE);
    /* VXLAN: the outer UDP 4-tuple, whatever the inner frame. */
    n = put_ipv4(f, false, v4[1].src, v4[1].dst, 17, v4[1].sport, 4789, false);
    size_t inner = put_ipv4(f + n + 8, false, v4[0].src, v4[0].dst, 6, 1, 2, false);
    f[n] = 0x08;                                   /* VXLAN I flag */
    size_t ulen = 8 + 8 + inner;
    f[14 + 20 + 4] = (uint8_t)(ulen >> 8);         /* UDP length */
    f[14 + 20 + 5] = (uint8_t)ulen;
    f[14 + 2] = (uint8_t)((20 + ulen) >> 8);       /* IP total length */
    f[14 + 3] = (uint8_t)(20 + ulen);
    uint8_t want_in[12];
    spec_input(want_in, v4[1].src, v4[1].dst, 4, v4[1].sport, 4789);
    assert_int_equal(hash_frame(&rss, f, n + 8 + inner, true, &ty),
                     sim_rss_toeplitz(sim_rss_default_key, want_in, 12));
    assert_int_equal(ty, SIM_RSS_IPV4_UDP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_bitwise),
        cmocka_unit_test(test_vectors_tuples),
        cmocka_unit_test(test_table_matches_bitwise),
        cmocka_unit_test(test_reta),
        cmocka_unit_test(test_tuple_from_pkt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
