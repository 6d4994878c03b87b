/* test_sim_traffic.c: sim/traffic.h, the traffic model.
 *
 * The settings parser and its errors; each model property against what it
 * promises (IMIX mean size, Zipf rank frequencies, churn rate, Poisson
 * gaps, constant spacing, bursts, line rate, shares); every frame's
 * headers and checksums checked by an independent walk with the naive
 * reference sum of helpers/csum_ref.h; deliberately bad checksums bad in
 * exactly the configured layer; regeneration; determinism; and a pcap of a
 * generated mix read by tshark, which must find no bad checksum and the
 * protocol counts the model reports. Statistical bounds are about five
 * standard deviations, with fixed seeds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packet.h"
#include "test_sim_stats.h"
#include "sim/traffic.h"
#include "helpers/csum_ref.h"


/* Applies "key=value" settings (NULL-terminated) to the defaults. */
static void cfg_of(struct sim_traffic_cfg *c, ...)
{
    sim_traffic_cfg_default(c);
    va_list ap;
    va_start(ap, c);
    for (const char *kv; (kv = va_arg(ap, const char *));) {
        char k[64], err[512];
        const char *eq = strchr(kv, '=');
        assert_non_null(eq);
        snprintf(k, sizeof k, "%.*s", (int)(eq - kv), kv);
        if (sim_traffic_cfg_set(c, k, eq + 1, err, sizeof err))
            fail_msg("%s: %s", kv, err);
    }
    va_end(ap);
}

static struct sim_traffic *model(const struct sim_traffic_cfg *c, uint64_t seed, uint16_t id,
                                 double line_bps)
{
    char err[512] = "";
    struct sim_traffic *t = sim_traffic_new(c, seed, id, line_bps, err, sizeof err);
    if (!t)
        fail_msg("sim_traffic_new: %s", err);
    return t;
}

/* The next packet's info (the packet itself is checked and freed). */
static void next_info(struct sim_traffic *t, struct sim_traffic_info *info)
{
    uint64_t at;
    struct pkt *p;
    assert_int_equal(sim_traffic_next(t, &at, &p, info), 0);
    assert_int_equal(at, info->arrival_ns);
    assert_int_equal(p->len, info->frame_len);
    pkt_free(p);
}

/* ---- settings ---- */

static void expect_set_error(const char *key, const char *value, const char *want)
{
    struct sim_traffic_cfg c, before;
    sim_traffic_cfg_default(&c);
    before = c;
    char err[1024] = "";
    assert_int_equal(sim_traffic_cfg_set(&c, key, value, err, sizeof err), -1);
    assert_memory_equal(&c, &before, sizeof c);
    if (!strstr(err, want))
        fail_msg("%s = %s: '%s' lacks '%s'", key, value, err, want);
    /* Every message names its key. */
    if (strncmp(err, key, strlen(key)) && !strstr(err, "unknown key"))
        fail_msg("'%s' does not start with the key '%s'", err, key);
}

static void test_cfg_values(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "flows=1000000", "popularity=zipf:1.1", "churn=2500", "frame-size=imix",
           "proto=tcp:3, udp:1,ICMP", "ipv6-share=0.25", "vlan-share=0.5", "vlan-id=10-20",
           "vlan-pcp=5", "vxlan-share=0.1", "vxlan-vni=16777215", "vxlan-src-ip=198.51.100.1",
           "vxlan-dst-ip=198.51.100.2", "vxlan-src-mac=aa:bb:cc:dd:ee:01",
           "vxlan-dst-mac=AA:BB:CC:DD:EE:02", "vxlan-udp-csum=true", "vxlan-inner-proto=arp",
           "vxlan-inner-ipv6-share=1", "bad-csum-share=0.01", "bad-csum-layer=outer-udp",
           "rate=14.88 Mpps", "arrivals=bursty:32", "src-mac=02:11:22:33:44:55",
           "dst-ip=172.16.5.99/12", "src-ip6=2001:db8::1/48", "dst-port=80", "src-port=5-6",
           "ttl=1", NULL);
    assert_int_equal(c.flows, 1000000);
    assert_int_equal(c.popularity, SIM_POP_ZIPF);
    assert_true(c.zipf_s == 1.1);
    assert_true(c.churn == 2500);
    assert_int_equal(c.n_sizes, 3);
    assert_int_equal(c.size[0], 64);
    assert_int_equal(c.size[1], 594);
    assert_int_equal(c.size[2], 1518);
    assert_true(c.size_weight[0] == 7 && c.size_weight[1] == 4 && c.size_weight[2] == 1);
    assert_true(c.mix.weight[SIM_PROTO_TCP] == 3 && c.mix.weight[SIM_PROTO_UDP] == 1 &&
                c.mix.weight[SIM_PROTO_ICMP] == 1 && c.mix.weight[SIM_PROTO_ARP] == 0);
    assert_true(c.mix.ipv6_share == 0.25);
    assert_int_equal(c.vlan_lo, 10);
    assert_int_equal(c.vlan_hi, 20);
    assert_int_equal(c.vlan_pcp, 5);
    assert_int_equal(c.vni, 0xffffff);
    assert_memory_equal(c.vxlan_src_ip, ((uint8_t[]){198, 51, 100, 1}), 4);
    assert_memory_equal(c.vxlan_dst_mac, ((uint8_t[]){0xaa, 0xbb, 0xcc, 0xdd, 0xee, 2}), 6);
    assert_true(c.vxlan_udp_csum);
    assert_true(c.inner.weight[SIM_PROTO_ARP] == 1 && c.inner.weight[SIM_PROTO_UDP] == 0);
    assert_true(c.inner.ipv6_share == 1);
    assert_int_equal(c.bad_layer, SIM_BAD_OUTER_UDP);
    assert_int_equal(c.rate_unit, SIM_RATE_PPS);
    assert_true(fabs(c.rate - 14.88e6) < 1e-3);
    assert_int_equal(c.arrivals, SIM_ARR_BURSTY);
    assert_int_equal(c.burst, 32);
    /* A prefix keeps its length and loses its host bits. */
    assert_memory_equal(c.dst_ip4, ((uint8_t[]){172, 16, 0, 0}), 4);
    assert_int_equal(c.dst_ip4_len, 12);
    assert_memory_equal(c.src_ip6, ((uint8_t[]){0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0}), 8);
    assert_int_equal(c.src_ip6_len, 48);
    assert_int_equal(c.dport_lo, 80);
    assert_int_equal(c.dport_hi, 80);
    assert_int_equal(c.sport_lo, 5);
    assert_int_equal(c.ttl, 1);
    char err[256];
    assert_int_equal(sim_traffic_cfg_validate(&c, err, sizeof err), 0);

    cfg_of(&c, "rate=10gbps", NULL);
    assert_int_equal(c.rate_unit, SIM_RATE_BPS);
    assert_true(c.rate == 10e9);
    cfg_of(&c, "rate=37.5%", "frame-size=64:1,65:2,9216:0.5", "proto=udp", NULL);
    assert_int_equal(c.rate_unit, SIM_RATE_LINE_PCT);
    assert_true(c.rate == 37.5);
    assert_int_equal(c.n_sizes, 3);
    assert_int_equal(c.size[2], 9216);
    cfg_of(&c, "rate=500 kbps", "arrivals=poisson", "popularity=uniform", NULL);
    assert_true(c.rate == 500e3);
    assert_int_equal(c.arrivals, SIM_ARR_POISSON);
}

static void test_cfg_errors(void **state)
{
    (void)state;
    expect_set_error("flows", "0", "1..100000000");
    expect_set_error("flows", "100000001", "flows:");
    expect_set_error("flows", "12x", "flows:");
    expect_set_error("flows", "-5", "flows:");
    expect_set_error("popularity", "zipf", "zipf:EXPONENT");
    expect_set_error("popularity", "zipf:-1", "popularity:");
    expect_set_error("popularity", "pareto", "popularity:");
    expect_set_error("churn", "-1", "churn:");
    expect_set_error("churn", "fast", "churn:");
    expect_set_error("frame-size", "63", "outside 64..9216");
    expect_set_error("frame-size", "9217", "frame-size:");
    expect_set_error("frame-size", "big", "frame-size:");
    expect_set_error("frame-size", "64:1,32:1", "size '32'");
    expect_set_error("frame-size", "64:x", "weight");
    expect_set_error("frame-size", "64:0,128:0", "add up to 0");
    expect_set_error("frame-size", "64:1,65:1,66:1,67:1,68:1,69:1,70:1,71:1,72:1,73:1,74:1,"
                                   "75:1,76:1,77:1,78:1,79:1,80:1", "more than 16");
    expect_set_error("proto", "sctp:1", "unknown protocol 'sctp'");
    expect_set_error("proto", "tcp:1,tcp:2", "twice");
    expect_set_error("proto", "tcp:-1", "weight");
    expect_set_error("proto", "tcp:0", "add up to 0");
    expect_set_error("proto", "", "proto:");
    expect_set_error("vxlan-inner-proto", "gre", "vxlan-inner-proto: unknown protocol");
    expect_set_error("ipv6-share", "1.5", "between 0 and 1");
    expect_set_error("vlan-share", "-0.1", "vlan-share:");
    expect_set_error("vxlan-share", "half", "vxlan-share:");
    expect_set_error("bad-csum-share", "2", "bad-csum-share:");
    expect_set_error("vlan-id", "4096", "0..4095");
    expect_set_error("vlan-id", "20-10", "vlan-id:");
    expect_set_error("vlan-pcp", "8", "vlan-pcp:");
    expect_set_error("vxlan-vni", "16777216", "vxlan-vni:");
    expect_set_error("vxlan-src-ip", "10.0.0.0/8", "not an IPv4 address");
    expect_set_error("vxlan-dst-ip", "fe80::1", "vxlan-dst-ip:");
    expect_set_error("vxlan-src-mac", "02:00:00:00:00", "not a MAC");
    expect_set_error("dst-mac", "02:00:00:00:00:01:02", "dst-mac:");
    expect_set_error("src-mac", "2:0:0:0:0:1", "src-mac:");
    expect_set_error("src-mac", "02:00:00:00:00:0g", "src-mac:");
    expect_set_error("src-mac", "02-00-00-00-00-01", "src-mac:");
    expect_set_error("vxlan-udp-csum", "maybe", "true or false");
    expect_set_error("bad-csum-layer", "eth", "l4, ip, outer-ip or outer-udp");
    expect_set_error("rate", "10", "unit");
    expect_set_error("rate", "10 furlongs", "rate:");
    expect_set_error("rate", "0pps", "not above 0");
    expect_set_error("rate", "-5%", "rate:");
    expect_set_error("arrivals", "bursty:0", "arrivals:");
    expect_set_error("arrivals", "bursty", "arrivals:");
    expect_set_error("arrivals", "uniform", "constant, poisson or bursty");
    expect_set_error("src-ip", "10.0.0.256", "src-ip:");
    expect_set_error("src-ip", "10.0.0.0/33", "src-ip:");
    expect_set_error("dst-ip6", "2001:db8::/129", "dst-ip6:");
    expect_set_error("src-ip6", "10.0.0.1", "src-ip6:");
    expect_set_error("src-port", "70000", "0..65535");
    expect_set_error("dst-port", "9-8", "dst-port:");
    expect_set_error("ttl", "0", "1..255");
    expect_set_error("colour", "red", "unknown key 'colour' (known: flows,");
}

static void test_cfg_validate_and_new(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    char err[256];
    cfg_of(&c, "bad-csum-share=0.1", "bad-csum-layer=outer-ip", NULL);
    assert_int_equal(sim_traffic_cfg_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad-csum-layer: outer-ip needs VXLAN packets"));
    assert_null(sim_traffic_new(&c, 1, 0, 10e9, err, sizeof err));
    cfg_of(&c, "bad-csum-share=0.1", "bad-csum-layer=outer-ip", "vxlan-share=0.5", NULL);
    assert_int_equal(sim_traffic_cfg_validate(&c, err, sizeof err), 0);

    cfg_of(&c, "rate=50%", NULL);
    assert_null(sim_traffic_new(&c, 1, 0, 0, err, sizeof err));
    assert_non_null(strstr(err, "rate: 50% needs the line rate"));
    cfg_of(&c, "arrivals=bursty:4", NULL);
    assert_null(sim_traffic_new(&c, 1, 0, 0, err, sizeof err));
    assert_non_null(strstr(err, "arrivals: bursty needs the line rate"));
    cfg_of(&c, "arrivals=bursty:4", "rate=20gbps", NULL);
    assert_null(sim_traffic_new(&c, 1, 0, 10e9, err, sizeof err));
    assert_non_null(strstr(err, "above the line rate"));
    /* Hand-made settings are checked too. */
    sim_traffic_cfg_default(&c);
    c.flows = 0;
    assert_null(sim_traffic_new(&c, 1, 0, 0, err, sizeof err));
    assert_non_null(strstr(err, "flows:"));
    sim_traffic_cfg_default(&c);
    c.mix.weight[SIM_PROTO_UDP] = 0;
    assert_int_equal(sim_traffic_cfg_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "proto: the weights add up to 0"));
    sim_traffic_cfg_default(&c);
    c.rate = 0;
    assert_int_equal(sim_traffic_cfg_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "rate:"));
}

/* ---- model properties ---- */

static void test_imix_mean(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "frame-size=imix", "flows=100", NULL);
    struct sim_traffic *t = model(&c, 7, 0, 0);
    const int n = quick() ? 50000 : 300000;
    double sum = 0;
    int count[3] = {0};
    for (int i = 0; i < n; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        assert_int_equal(in.wire_bytes, in.frame_len + 4);
        assert_true(in.wire_bytes == 64 || in.wire_bytes == 594 || in.wire_bytes == 1518);
        count[in.wire_bytes == 64 ? 0 : in.wire_bytes == 594 ? 1 : 2]++;
        sum += in.wire_bytes;
    }
    /* IMIX: (7 * 64 + 4 * 594 + 1518) / 12 = 361.83 bytes with FCS. */
    double want = (7 * 64 + 4 * 594 + 1518) / 12.0;
    double var = (7 * 64.0 * 64 + 4 * 594.0 * 594 + 1518.0 * 1518) / 12 - want * want;
    assert_true(fabs(want - 361.8333) < 1e-3);
    assert_true(fabs(sum / n - want) < 5 * sqrt(var / n));
    assert_true(fabs(count[0] - n * 7 / 12.0) < 5 * sqrt(n * 7 / 12.0 * 5 / 12.0));
    assert_true(fabs(count[2] - n / 12.0) < 5 * sqrt(n / 12.0 * 11 / 12.0));
    sim_traffic_destroy(t);
}


/* Slot (rank) frequencies follow Zipf(flows, s); uniform is flat. */
static void test_popularity(void **state)
{
    (void)state;
    const int flows = 50, n = quick() ? 50000 : 400000;
    for (int zipf = 0; zipf < 2; zipf++) {
        struct sim_traffic_cfg c;
        cfg_of(&c, "flows=50", zipf ? "popularity=zipf:1.2" : "popularity=uniform", NULL);
        struct sim_traffic *t = model(&c, 3, 1, 0);
        uint64_t count[50] = {0};
        for (int i = 0; i < n; i++) {
            struct sim_traffic_info in;
            next_info(t, &in);
            assert_true(in.slot < (uint64_t)flows);
            assert_int_equal(in.flow_id, in.slot); /* no churn: slot i holds flow i */
            count[in.slot]++;
        }
        double h = 0;
        for (int k = 1; k <= flows; k++)
            h += zipf ? pow(k, -1.2) : 1;
        double x = 0;
        for (int k = 1; k <= flows; k++) {
            double e = n * (zipf ? pow(k, -1.2) : 1) / h;
            x += (count[k - 1] - e) * (count[k - 1] - e) / e;
        }
        assert_true(x < chi2_bound(flows - 1));
        sim_traffic_destroy(t);
    }
}

static void test_churn(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "flows=1000", "churn=10000", "rate=1mpps", NULL);
    struct sim_traffic *t = model(&c, 11, 2, 0);
    const int n = quick() ? 50000 : 200000;
    uint8_t *first_seen = calloc(1000 + (size_t)n, 1);
    assert_non_null(first_seen);
    uint64_t last = 0, fresh = 0;
    for (int i = 0; i < n; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        last = in.arrival_ns;
        assert_true(in.flow_id < sim_traffic_flows_created(t));
        if (!first_seen[in.flow_id]) {
            first_seen[in.flow_id] = 1;
            if (in.flow_id >= 1000) {
                assert_int_equal(in.seq, 0); /* a new flow starts its sequence */
                fresh++;
            }
        }
    }
    /* 10000 new flows a second, at exact spacing: floor(t * rate). */
    uint64_t want = last * 10000 / 1000000000;
    assert_int_equal(last, (uint64_t)(n - 1) * 1000);
    assert_int_equal(sim_traffic_flows_created(t) - 1000, want);
    /* Most replacements are seen (a replaced slot is picked 1000/1000 per
     * us on average before the next replacement). */
    assert_true(fresh > want * 9 / 10 && fresh <= want);
    free(first_seen);
    sim_traffic_destroy(t);

    /* No churn: no new flows. */
    cfg_of(&c, "flows=10", NULL);
    t = model(&c, 11, 2, 0);
    for (int i = 0; i < 1000; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
    }
    assert_int_equal(sim_traffic_flows_created(t), 10);
    sim_traffic_destroy(t);
}

static void test_constant_spacing(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "rate=1mpps", NULL);
    struct sim_traffic *t = model(&c, 1, 0, 0);
    for (uint64_t i = 0; i < 10000; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        assert_int_equal(in.arrival_ns, i * 1000);
    }
    sim_traffic_destroy(t);
    /* 3 Mpps: 333.33 ns apart, no drift. */
    cfg_of(&c, "rate=3mpps", NULL);
    t = model(&c, 1, 0, 0);
    for (uint64_t i = 0; i < (quick() ? 30000u : 300000u); i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        uint64_t want = i * 1000 / 3;
        assert_true(in.arrival_ns + 1 >= want && in.arrival_ns <= want + 1);
    }
    sim_traffic_destroy(t);
}

/* 10 Gb/s of 64-byte frames: 84 bytes (672 bits) each on the wire, so
 * 67.2 ns apart, 14.88 Mpps; the same as 100% of a 10 Gb/s line. */
static void test_line_rate(void **state)
{
    (void)state;
    const char *rates[] = {"rate=10gbps", "rate=100%"};
    for (int r = 0; r < 2; r++) {
        struct sim_traffic_cfg c;
        cfg_of(&c, rates[r], NULL);
        struct sim_traffic *t = model(&c, 1, 0, 10e9);
        const uint64_t n = quick() ? 100000 : 1000000;
        struct sim_traffic_info in;
        for (uint64_t i = 0; i <= n; i++) {
            next_info(t, &in);
            if (i == 1)
                assert_int_equal(in.arrival_ns, 67);
        }
        /* Packet n starts after n frames of 67.2 ns. */
        assert_int_equal(in.arrival_ns, n * 672 / 10);
        double mpps = (double)n / (double)in.arrival_ns * 1e3;
        assert_true(fabs(mpps - 14.880952) < 1e-5);
        sim_traffic_destroy(t);
    }
    /* Mixed sizes at 40% of 10 Gb/s: each frame takes its own wire time. */
    struct sim_traffic_cfg c;
    cfg_of(&c, "rate=40%", "frame-size=imix", NULL);
    struct sim_traffic *t = model(&c, 1, 0, 10e9);
    uint64_t bits = 0;
    for (int i = 0; i < 10000; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        assert_int_equal(in.arrival_ns, (uint64_t)((double)bits / 4.0));
        bits += ((uint64_t)in.wire_bytes + 20) * 8;
    }
    sim_traffic_destroy(t);
}

static void test_poisson(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "rate=1mpps", "arrivals=poisson", NULL);
    struct sim_traffic *t = model(&c, 5, 0, 0);
    const int n = quick() ? 100000 : 500000;
    double sum = 0, sum2 = 0;
    uint64_t prev = 0;
    int over = 0;
    for (int i = 0; i <= n; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        assert_true(in.arrival_ns >= prev);
        if (i > 0) {
            double g = (double)(in.arrival_ns - prev);
            sum += g;
            sum2 += g * g;
            over += g > 1000;
        }
        prev = in.arrival_ns;
    }
    /* Exponential gaps of mean 1000 ns: variance = mean^2 (the integer ns
     * rounding adds about 1/6 ns^2), P(gap > mean) = 1/e. */
    double mean = sum / n, var = sum2 / n - mean * mean;
    assert_true(fabs(mean - 1000) < 5 * 1000 / sqrt(n));
    assert_true(fabs(var - 1e6) < 5 * sqrt(8.0) * 1e6 / sqrt(n));
    double e1 = exp(-1);
    assert_true(fabs((double)over / n - e1) < 5 * sqrt(e1 * (1 - e1) / n));
    sim_traffic_destroy(t);
}

static void test_bursty(void **state)
{
    (void)state;
    /* Bursts of 8 64-byte frames at 10 Gb/s (67.2 ns apart), a burst every
     * 8 us for a mean of 1 Mpps. */
    struct sim_traffic_cfg c;
    cfg_of(&c, "rate=1mpps", "arrivals=bursty:8", NULL);
    struct sim_traffic *t = model(&c, 5, 0, 10e9);
    const int n = 80000;
    struct sim_traffic_info in;
    for (int i = 0; i < n; i++) {
        next_info(t, &in);
        uint64_t start = (uint64_t)(i / 8) * 8000;
        assert_int_equal(in.arrival_ns, start + (uint64_t)((i % 8) * 67.2 + 1e-9));
    }
    double mpps = (double)n / ((double)in.arrival_ns + 8000 - 7 * 67.2) * 1e3;
    assert_true(fabs(mpps - 1.0) < 1e-6);
    sim_traffic_destroy(t);

    /* A bit rate: bursts start when the offered 1 Gb/s would have sent
     * them; the long-run rate is 1 Gb/s on the wire. */
    cfg_of(&c, "rate=1gbps", "arrivals=bursty:16", "frame-size=imix", NULL);
    t = model(&c, 5, 0, 10e9);
    uint64_t bits = 0;
    for (int i = 0; i < 16 * 2000; i++) {
        next_info(t, &in);
        if (i % 16 == 0) /* a burst starts when its bits were due */
            assert_int_equal(in.arrival_ns, bits);
        bits += ((uint64_t)in.wire_bytes + 20) * 8;
    }
    sim_traffic_destroy(t);
}

/* Flow attribute shares: of flows, and (uniform popularity) of packets. */
static void test_shares(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "flows=20000", "proto=tcp:1,udp:2,icmp:1", "ipv6-share=0.3", "vlan-share=0.2",
           "vlan-id=100-199", "vxlan-share=0.25", "vxlan-inner-proto=tcp:1,arp:1",
           "vxlan-inner-ipv6-share=0.5", NULL);
    struct sim_traffic *t = model(&c, 9, 3, 0);
    const int nf = 20000;
    int vx = 0, vlan = 0, proto[SIM_PROTO_N] = {0}, v6 = 0, ip = 0, in_proto[SIM_PROTO_N] = {0},
        in_v6 = 0, in_ip = 0, vids[100] = {0};
    for (int f = 0; f < nf; f++) {
        struct sim_flow_desc d;
        sim_traffic_flow(t, (uint64_t)f, &d);
        assert_int_equal(d.id, (uint64_t)f);
        vx += d.vxlan;
        vlan += d.vlan;
        if (d.vlan) {
            assert_true((d.vlan_tci & 0xfff) >= 100 && (d.vlan_tci & 0xfff) <= 199);
            vids[(d.vlan_tci & 0xfff) - 100]++;
        }
        if (d.vxlan) {
            in_proto[d.proto]++;
            in_ip += d.proto != SIM_PROTO_ARP;
            in_v6 += d.ipv6;
            assert_int_equal(d.vni, 42);
            assert_true(d.outer_sport >= 49152);
        } else {
            proto[d.proto]++;
            ip++;
            v6 += d.ipv6;
        }
        if (d.proto == SIM_PROTO_ARP)
            assert_false(d.ipv6);
        /* Addresses within the prefixes. */
        if (d.ipv6) {
            assert_memory_equal(d.src_ip, ((uint8_t[]){0x20, 1, 0x0d, 0xb8, 0, 0, 0, 1}), 8);
            assert_memory_equal(d.dst_ip, ((uint8_t[]){0x20, 1, 0x0d, 0xb8, 0, 0, 0, 2}), 8);
        } else {
            assert_true(d.src_ip[0] == 10 && d.src_ip[1] == 0);
            assert_true(d.dst_ip[0] == 10 && d.dst_ip[1] == 1);
        }
        if (d.proto == SIM_PROTO_TCP || d.proto == SIM_PROTO_UDP)
            assert_true(d.sport >= 1024 && d.dport >= 1024);
    }
#define NEAR(got, n, p) assert_true(fabs((got) - (n) * (p)) < 5 * sqrt((n) * (p) * (1 - (p))) + 1)
    NEAR(vx, nf, 0.25);
    NEAR(vlan, nf, 0.2);
    NEAR(proto[SIM_PROTO_TCP], nf - vx, 0.25);
    NEAR(proto[SIM_PROTO_UDP], nf - vx, 0.5);
    NEAR(proto[SIM_PROTO_ICMP], nf - vx, 0.25);
    assert_int_equal(proto[SIM_PROTO_ARP], 0);
    NEAR(v6, ip, 0.3);
    NEAR(in_proto[SIM_PROTO_TCP], vx, 0.5);
    NEAR(in_proto[SIM_PROTO_ARP], vx, 0.5);
    assert_int_equal(in_proto[SIM_PROTO_UDP], 0);
    NEAR(in_v6, in_ip, 0.5);
    for (int v = 0; v < 100; v++)
        assert_true(vids[v] > 0);

    /* Packets: the same shares (uniform popularity). */
    const int n = quick() ? 20000 : 100000;
    int pvx = 0, pvlan = 0, pv6 = 0, parp = 0;
    for (int i = 0; i < n; i++) {
        struct sim_traffic_info in;
        next_info(t, &in);
        struct sim_flow_desc d;
        sim_traffic_flow(t, in.flow_id, &d);
        assert_int_equal(in.vxlan, d.vxlan);
        assert_int_equal(in.proto, d.proto);
        pvx += in.vxlan;
        pvlan += in.vlan;
        pv6 += in.ipv6;
        parp += in.proto == SIM_PROTO_ARP;
    }
    /* Flow shares vary per run of flows: bound by both spreads. */
    assert_true(fabs(pvx / (double)n - vx / (double)nf) < 0.02);
    assert_true(fabs(pvlan / (double)n - vlan / (double)nf) < 0.02);
    assert_true(fabs(pv6 / (double)n - (v6 + in_v6) / (double)nf) < 0.02);
    assert_true(fabs(parp / (double)n - in_proto[SIM_PROTO_ARP] / (double)nf) < 0.02);
    sim_traffic_destroy(t);
}

/* ---- frames: an independent walk of the headers ---- */

/* Layers of a frame and which of them checksum wrong, as bits: */
#define L_OIP 1u  /* outer (or only) IPv4 header */
#define L_OL4 2u  /* outer (or only) TCP/UDP/ICMP/ICMPv6 */
#define L_IIP 4u  /* VXLAN inner IPv4 header */
#define L_IL4 8u  /* VXLAN inner L4 */

struct walk {
    unsigned present, bad;
    bool vxlan, vlan, ipv6, arp;
    uint8_t l4proto;        /* innermost */
    size_t payload;         /* offset of the innermost L4 payload / after ARP */
    uint16_t udp_csum_outer; /* the outer UDP checksum field of a VXLAN frame */
};

/* Walks the Ethernet frame f[0..len), which starts at offset 'base' of
 * the whole frame (inner: a VXLAN inner frame), checking every length
 * field (the test fails on an inconsistency). The innermost layer's
 * fields end up in *w. */
static void walk_frame(const uint8_t *f, size_t len, size_t base, bool inner, struct walk *w)
{
    assert_true(len >= 14);
    size_t o = 12;
    uint16_t type = g16(f + 12);
    if (type == 0x8100) {
        assert_false(inner);
        w->vlan = true;
        type = g16(f + 16);
        o = 16;
    }
    o += 2;
    unsigned lip = inner ? L_IIP : L_OIP, ll4 = inner ? L_IL4 : L_OL4;
    if (type == 0x0806) {
        assert_true(len >= o + 28);
        assert_int_equal(g16(f + o), 1);
        assert_int_equal(g16(f + o + 2), 0x0800);
        assert_int_equal(g16(f + o + 6), 1);
        w->arp = true;
        w->payload = base + o + 28;
        return;
    }
    w->arp = false;
    size_t l4, l4len;
    uint64_t pseudo;
    uint8_t proto;
    if (type == 0x0800) {
        const uint8_t *ip = f + o;
        assert_int_equal(ip[0], 0x45);
        assert_int_equal(g16(ip + 2), len - o); /* IP frames carry no padding */
        w->present |= lip;
        if (ref_fold(ref_sum(ip, 20)) != 0xffff)
            w->bad |= lip;
        proto = ip[9];
        l4 = o + 20;
        l4len = len - l4;
        pseudo = ref_sum(ip + 12, 8) + proto + l4len;
        w->ipv6 = false;
    } else {
        assert_int_equal(type, 0x86dd);
        const uint8_t *ip = f + o;
        assert_int_equal(ip[0] >> 4, 6);
        assert_int_equal(g16(ip + 4), len - o - 40);
        proto = ip[6];
        l4 = o + 40;
        l4len = len - l4;
        pseudo = ref_sum(ip + 8, 32) + proto + l4len;
        w->ipv6 = true;
    }
    w->present |= ll4;
    w->l4proto = proto;
    const uint8_t *p = f + l4;
    uint64_t s = ref_sum(p, l4len) + (proto == 1 ? 0 : pseudo);
    bool udp0 = proto == 17 && !w->ipv6 && g16(p + 6) == 0;
    if (!udp0 && ref_fold(s) != 0xffff)
        w->bad |= ll4;
    switch (proto) {
    case 6:
        assert_int_equal(p[12], 0x50);
        w->payload = base + l4 + 20;
        break;
    case 17:
        assert_int_equal(g16(p + 4), l4len);
        w->payload = base + l4 + 8;
        if (g16(p + 2) == 4789 && !inner) {
            assert_int_equal(p[8], 0x08);
            w->vxlan = true;
            w->udp_csum_outer = g16(p + 6);
            walk_frame(p + 16, l4len - 16, base + l4 + 16, true, w);
        }
        break;
    case 1:
        assert_int_equal(p[0], 8);
        w->payload = base + l4 + 8;
        break;
    case 58:
        assert_int_equal(p[0], 128);
        w->payload = base + l4 + 8;
        break;
    default:
        fail_msg("unexpected protocol %u", proto);
    }
}

static void walk(const uint8_t *f, size_t len, struct walk *w)
{
    memset(w, 0, sizeof *w);
    walk_frame(f, len, 0, false, w);
}

/* Every packet of a mix: lengths, tag, checksums all right. */
static void check_mix(struct sim_traffic *t, int n, int *n_bad, int *n_tagged)
{
    for (int i = 0; i < n; i++) {
        uint64_t at;
        struct pkt *p;
        struct sim_traffic_info in;
        assert_int_equal(sim_traffic_next(t, &at, &p, &in), 0);
        assert_int_equal(pkt_headroom(p), PKT_HEADROOM);
        assert_int_equal(pkt_tailroom(p), 0);
        for (int l = 0; l < CSUM_L_N; l++)
            assert_int_equal(p->csum[l], CSUM_UNKNOWN);
        assert_true(p->len >= 60);
        struct walk w;
        walk(p->data, p->len, &w);
        assert_int_equal(w.vxlan, in.vxlan);
        assert_int_equal(w.vlan, in.vlan);
        assert_int_equal(w.arp, in.proto == SIM_PROTO_ARP);
        if (!w.arp)
            assert_int_equal(w.ipv6, in.ipv6);
        /* The tag is where the payload starts, when it fits. */
        bool room = p->len >= w.payload + SIM_TAG_LEN;
        assert_int_equal(in.tagged, room);
        if (in.tagged) {
            uint16_t id;
            uint64_t fl, sq;
            assert_int_equal(in.tag_ofs, w.payload);
            assert_true(sim_tag_read(p->data, p->len, in.tag_ofs, &id, &fl, &sq));
            assert_int_equal(id, sim_traffic_id(t));
            assert_int_equal(fl, in.flow_id);
            assert_int_equal(sq, in.seq);
            (*n_tagged)++;
        }
        /* Bad where the model says, nowhere else. */
        unsigned want = 0;
        switch (in.bad) {
        case SIM_BAD_NONE: break;
        case SIM_BAD_L4: want = in.vxlan ? L_IL4 : L_OL4; break;
        case SIM_BAD_IP: want = in.vxlan ? L_IIP : L_OIP; break;
        case SIM_BAD_OUTER_IP: want = L_OIP; break;
        case SIM_BAD_OUTER_UDP: want = L_OL4; break;
        }
        if (w.bad != want)
            fail_msg("packet %d (flow %llu seq %llu): bad layers %x, expected %x", i,
                     (unsigned long long)in.flow_id, (unsigned long long)in.seq, w.bad, want);
        if (in.bad != SIM_BAD_NONE) {
            assert_true(in.tagged);
            (*n_bad)++;
        }
        pkt_free(p);
    }
}

static void test_checksums_and_layout(void **state)
{
    (void)state;
    static const char *const sizes[] = {
        "frame-size=imix", "frame-size=64:3,65:1,127:1,1500:1,9216:1", "frame-size=64"};
    for (int s = 0; s < 3; s++) {
        for (int csum = 0; csum < 2; csum++) {
            struct sim_traffic_cfg c;
            cfg_of(&c, "flows=5000", sizes[s], "proto=tcp:1,udp:1,icmp:1,arp:1", "ipv6-share=0.4",
                   "vlan-share=0.3", "vxlan-share=0.3",
                   "vxlan-inner-proto=tcp:1,udp:1,icmp:1,arp:1", "vxlan-inner-ipv6-share=0.5",
                   csum ? "vxlan-udp-csum=true" : "vxlan-udp-csum=false", NULL);
            struct sim_traffic *t = model(&c, 100 + (uint64_t)s, (uint16_t)(s * 2 + csum), 0);
            int bad = 0, tagged = 0;
            check_mix(t, quick() ? 3000 : 20000, &bad, &tagged);
            assert_int_equal(bad, 0);
            assert_true(tagged > 0);
            sim_traffic_destroy(t);
        }
    }
}

/* A plain UDP flow never goes to the VXLAN port, unless told to. */
static void test_no_accidental_vxlan(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "dst-port=4788-4790", "proto=udp:1,tcp:1", NULL);
    struct sim_traffic *t = model(&c, 1, 0, 0);
    int seen[3] = {0};
    for (uint64_t f = 0; f < 3000; f++) {
        struct sim_flow_desc d;
        sim_traffic_flow(t, f, &d);
        assert_true(d.dport >= 4788 && d.dport <= 4790);
        seen[d.dport - 4788] += d.proto == SIM_PROTO_UDP; /* TCP may use 4789 */
    }
    assert_int_equal(seen[1], 0);
    assert_true(seen[0] > 0 && seen[2] > 0);
    sim_traffic_destroy(t);
    cfg_of(&c, "dst-port=4789", NULL);
    t = model(&c, 1, 0, 0);
    struct sim_flow_desc d;
    sim_traffic_flow(t, 5, &d);
    assert_int_equal(d.dport, 4789);
    sim_traffic_destroy(t);
}

/* Frames too small for their headers grow; the tag needs 16 bytes. */
static void test_small_frames(void **state)
{
    (void)state;
    static const struct {
        const char *proto, *v6, *vlan, *vxlan;
        uint32_t len;
        bool tagged;
    } cases[] = {
        {"proto=udp", "ipv6-share=0", "vlan-share=0", "vxlan-share=0", 60, true},   /* 42 + 18 */
        {"proto=tcp", "ipv6-share=0", "vlan-share=0", "vxlan-share=0", 60, false},  /* 54 + 6 */
        {"proto=icmp", "ipv6-share=0", "vlan-share=0", "vxlan-share=0", 60, true},  /* 42 + 18 */
        {"proto=icmp", "ipv6-share=0", "vlan-share=1", "vxlan-share=0", 60, false}, /* 46 + 14 */
        {"proto=tcp", "ipv6-share=1", "vlan-share=1", "vxlan-share=0", 78, false},  /* 78 */
        {"proto=udp", "ipv6-share=1", "vlan-share=0", "vxlan-share=0", 62, false},  /* 62 */
        {"proto=arp", "ipv6-share=0", "vlan-share=0", "vxlan-share=0", 60, true},   /* 42 + 18 */
        {"proto=udp", "ipv6-share=0", "vlan-share=0", "vxlan-share=1", 110, true},  /* 50 + 60 */
        {"proto=udp", "ipv6-share=0", "vlan-share=1", "vxlan-share=1", 114, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sim_traffic_cfg c;
        cfg_of(&c, "frame-size=64", cases[i].proto, cases[i].v6, cases[i].vlan, cases[i].vxlan,
               "vxlan-inner-proto=udp", NULL);
        struct sim_traffic *t = model(&c, 1, 0, 0);
        struct sim_traffic_info in;
        next_info(t, &in);
        if (in.frame_len != cases[i].len || in.tagged != cases[i].tagged)
            fail_msg("case %zu: %u bytes, tagged %d", i, in.frame_len, in.tagged);
        assert_int_equal(in.wire_bytes, cases[i].len + 4);
        sim_traffic_destroy(t);
    }
}

static void test_bad_checksums(void **state)
{
    (void)state;
    static const char *const layers[] = {"bad-csum-layer=l4", "bad-csum-layer=ip",
                                         "bad-csum-layer=outer-ip", "bad-csum-layer=outer-udp"};
    for (int l = 0; l < 4; l++) {
        for (int csum = 0; csum < 2; csum++) {
            struct sim_traffic_cfg c;
            cfg_of(&c, "flows=3000", "frame-size=imix", "proto=tcp:1,udp:1,icmp:1,arp:1",
                   "ipv6-share=0.3", "vlan-share=0.3", "vxlan-share=0.5",
                   "vxlan-inner-proto=tcp:1,udp:1,icmp:1", "vxlan-inner-ipv6-share=0.3",
                   csum ? "vxlan-udp-csum=true" : "vxlan-udp-csum=false", "bad-csum-share=0.3",
                   layers[l], NULL);
            struct sim_traffic *t = model(&c, 55, 9, 0);
            int bad = 0, tagged = 0;
            const int n = quick() ? 3000 : 20000;
            check_mix(t, n, &bad, &tagged); /* each bad packet bad in its layer only */
            assert_true(bad > 0);
            /* About 30% of the packets that have the layer and a tag. */
            assert_true(bad < tagged * 0.36);
            sim_traffic_destroy(t);
        }
    }
    /* The share among eligible packets, exactly measured: UDP over IPv4,
     * all tagged, L4 checksums. */
    struct sim_traffic_cfg c;
    cfg_of(&c, "flows=100", "bad-csum-share=0.25", NULL);
    struct sim_traffic *t = model(&c, 56, 9, 0);
    int bad = 0, tagged = 0;
    const int n = quick() ? 10000 : 50000;
    check_mix(t, n, &bad, &tagged);
    assert_int_equal(tagged, n);
    assert_true(fabs(bad - n * 0.25) < 5 * sqrt(n * 0.25 * 0.75));
    sim_traffic_destroy(t);
}

/* ---- regeneration and determinism ---- */

static void test_regenerate(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "flows=300", "churn=50000", "frame-size=imix", "proto=tcp:1,udp:1,icmp:1,arp:1",
           "ipv6-share=0.3", "vlan-share=0.3", "vxlan-share=0.3", "vxlan-udp-csum=true",
           "bad-csum-share=0.2", "popularity=zipf:0.9", NULL);
    struct sim_traffic *t = model(&c, 77, 4, 0);
    /* A second model with the same settings: regeneration needs no state. */
    struct sim_traffic *u = model(&c, 77, 4, 0);
    static uint8_t buf[SIM_TRAFFIC_FRAME_MAX];
    for (int i = 0; i < 5000; i++) {
        uint64_t at;
        struct pkt *p;
        struct sim_traffic_info in, rin, bin;
        assert_int_equal(sim_traffic_next(t, &at, &p, &in), 0);
        struct pkt *r = sim_traffic_regenerate(u, in.flow_id, in.seq, &rin);
        assert_non_null(r);
        assert_int_equal(r->len, p->len);
        assert_memory_equal(r->data, p->data, p->len);
        assert_int_equal(rin.bad, in.bad);
        assert_int_equal(rin.tag_ofs, in.tag_ofs);
        assert_int_equal(rin.slot, UINT64_MAX);
        size_t len = sim_traffic_build(t, in.flow_id, in.seq, buf, &bin);
        assert_int_equal(len, p->len);
        assert_memory_equal(buf, p->data, len);
        pkt_free(r);
        pkt_free(p);
    }
    assert_true(sim_traffic_flows_created(t) > 300);
    sim_traffic_destroy(t);
    sim_traffic_destroy(u);
}

/* FNV-1a over the first n packets' arrival times, flow, seq and bytes. */
static uint64_t run_digest(const struct sim_traffic_cfg *c, uint64_t seed, uint16_t id, int n,
                           uint64_t *arrivals_digest)
{
    struct sim_traffic *t = model(c, seed, id, 10e9);
    uint64_t h = 0xcbf29ce484222325ULL, ha = h;
    for (int i = 0; i < n; i++) {
        uint64_t at;
        struct pkt *p;
        struct sim_traffic_info in;
        assert_int_equal(sim_traffic_next(t, &at, &p, &in), 0);
        uint64_t words[3] = {at, in.flow_id, in.seq};
        const uint8_t *b = (const uint8_t *)words;
        for (size_t k = 0; k < sizeof words; k++) {
            h = (h ^ b[k]) * 0x100000001b3ULL;
            ha = (ha ^ b[k]) * 0x100000001b3ULL;
        }
        for (uint32_t k = 0; k < p->len; k++)
            h = (h ^ p->data[k]) * 0x100000001b3ULL;
        pkt_free(p);
    }
    sim_traffic_destroy(t);
    if (arrivals_digest)
        *arrivals_digest = ha;
    return h;
}

static void test_determinism(void **state)
{
    (void)state;
    struct sim_traffic_cfg c;
    cfg_of(&c, "flows=1000", "popularity=zipf:1", "churn=100000", "arrivals=poisson",
           "frame-size=imix", "proto=tcp:1,udp:1,icmp:1,arp:1", "vxlan-share=0.2",
           "bad-csum-share=0.1", NULL);
    uint64_t a1, a2, a3;
    uint64_t d1 = run_digest(&c, 1, 0, 3000, &a1);
    assert_int_equal(run_digest(&c, 1, 0, 3000, &a2), d1);
    assert_int_equal(a1, a2);
    assert_int_not_equal(run_digest(&c, 2, 0, 3000, NULL), d1);
    assert_int_not_equal(run_digest(&c, 1, 1, 3000, NULL), d1);
    /* A pps rate: another size mix changes the frames, not when packets
     * arrive nor which flows send them (each has its own stream). */
    struct sim_traffic_cfg c2 = c;
    char err[128];
    assert_int_equal(sim_traffic_cfg_set(&c2, "frame-size", "1500", err, sizeof err), 0);
    assert_int_not_equal(run_digest(&c2, 1, 0, 3000, &a3), d1);
    assert_int_equal(a3, a1);
}

/* ---- tshark: an independent dissector reads a generated mix ---- */

static char pcap_path[64];

/* Writes n packets of t to a new pcap; counts[] gets, per packet class,
 * how many the model generated, bad[] which frames it corrupted. */
enum { K_V4_TCP, K_V4_UDP, K_V4_ICMP, K_V6_TCP, K_V6_UDP, K_V6_ICMP, K_ARP, K_N };

static int class_of(bool v6, uint8_t proto)
{
    if (proto == SIM_PROTO_ARP)
        return K_ARP;
    int l4 = proto == SIM_PROTO_TCP ? 0 : proto == SIM_PROTO_UDP ? 1 : 2;
    return (v6 ? K_V6_TCP : K_V4_TCP) + l4;
}

static void write_pcap(struct sim_traffic *t, int n, int counts[K_N], int *vlan, int *vxlan,
                       bool *bad)
{
    snprintf(pcap_path, sizeof pcap_path, "/tmp/fs-traffic-XXXXXX");
    int fd = mkstemp(pcap_path);
    assert_true(fd >= 0);
    close(fd);
    pcap_t *pd = pcap_open_dead(DLT_EN10MB, 65535);
    assert_non_null(pd);
    pcap_dumper_t *dump = pcap_dump_open(pd, pcap_path);
    assert_non_null(dump);
    for (int i = 0; i < n; i++) {
        uint64_t at;
        struct pkt *p;
        struct sim_traffic_info in;
        assert_int_equal(sim_traffic_next(t, &at, &p, &in), 0);
        struct pcap_pkthdr h;
        h.ts.tv_sec = (time_t)(at / 1000000000);
        h.ts.tv_usec = (suseconds_t)(at % 1000000000 / 1000);
        h.caplen = h.len = p->len;
        pcap_dump((u_char *)dump, &h, p->data);
        counts[class_of(in.ipv6, in.proto)]++;
        *vlan += in.vlan;
        *vxlan += in.vxlan;
        bad[i] = in.bad != SIM_BAD_NONE;
        pkt_free(p);
    }
    pcap_dump_close(dump);
    pcap_close(pd);
}

/* Runs tshark on the pcap with checksum validation on; returns its stdout
 * (malloc'ed). */
static char *tshark(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE "
             "-o udp.check_checksum:TRUE %s 2>/dev/null",
             pcap_path, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len < 4096) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    assert_int_equal(pclose(f), 0);
    return out;
}

#define TSHARK_BAD                                                                          \
    "-Y 'ip.checksum.status == \"Bad\" || tcp.checksum.status == \"Bad\" || "              \
    "udp.checksum.status == \"Bad\" || icmp.checksum.status == \"Bad\" || "                \
    "icmpv6.checksum.status == \"Bad\"' -T fields -e frame.number"

/* Classifies tshark's frame.protocols lines ("eth:ethertype:vlan:
 * ethertype:ip:udp:vxlan:eth:ethertype:ipv6:tcp:data") like class_of(). */
static void tshark_classes(const char *out, int counts[K_N], int *vlan, int *vxlan, int *lines)
{
    char line[512];
    for (const char *p = out; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(line, sizeof line, ":%.*s:", (int)n, p);
        p += n + (e ? 1 : 0);
        if (n == 0)
            continue;
        (*lines)++;
        const char *in = strstr(line, ":vxlan:");
        if (in)
            (*vxlan)++;
        const char *vl = strstr(line, ":vlan:");
        if (vl && (!in || vl < in))
            (*vlan)++;
        const char *s = in ? in + 6 : line;
        bool v6 = strstr(s, ":ipv6:") != NULL;
        int k = -1;
        if (strstr(s, ":arp:"))
            k = K_ARP;
        else if (strstr(s, ":tcp:"))
            k = v6 ? K_V6_TCP : K_V4_TCP;
        else if (strstr(s, ":udp:"))
            k = v6 ? K_V6_UDP : K_V4_UDP;
        else if (strstr(s, ":icmpv6:") || strstr(s, ":icmp:"))
            k = v6 ? K_V6_ICMP : K_V4_ICMP;
        if (k < 0)
            fail_msg("tshark: unclassified frame '%s'", line);
        counts[k]++;
    }
}

static void test_tshark_cross_check(void **state)
{
    (void)state;
    /* Destination ports away from 4789 and well-known services, so tshark
     * decodes exactly the VXLAN the model made. */
    const int n = quick() ? 1000 : 3000;
    for (int pass = 0; pass < 2; pass++) {
        struct sim_traffic_cfg c;
        cfg_of(&c, "flows=2000", "frame-size=64:2,128:1,594:1,1518:1", "dst-port=30000-30999",
               "src-port=40000-40999", "proto=tcp:2,udp:2,icmp:1,arp:1", "ipv6-share=0.4",
               "vlan-share=0.25", "vxlan-share=0.3", "vxlan-inner-proto=tcp:1,udp:1,icmp:1",
               "vxlan-inner-ipv6-share=0.5", "vxlan-udp-csum=true",
               pass ? "bad-csum-share=0.2" : "bad-csum-share=0", NULL);
        struct sim_traffic *t = model(&c, 2024, 7, 0);
        int want[K_N] = {0}, got[K_N] = {0}, vlan = 0, vxlan = 0, tvlan = 0, tvxlan = 0, lines = 0;
        bool *bad = calloc((size_t)n, sizeof *bad);
        assert_non_null(bad);
        write_pcap(t, n, want, &vlan, &vxlan, bad);
        sim_traffic_destroy(t);

        char *out = tshark(TSHARK_BAD);
        int n_bad = 0;
        for (int i = 0; i < n; i++)
            n_bad += bad[i];
        /* tshark flags exactly the frames the model corrupted. */
        int flagged = 0;
        char *save;
        for (char *tok = strtok_r(out, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
            int fr = atoi(tok);
            assert_true(fr >= 1 && fr <= n);
            if (!bad[fr - 1])
                fail_msg("tshark finds a bad checksum in frame %d, which the model made right", fr);
            flagged++;
        }
        assert_int_equal(flagged, n_bad);
        if (pass == 0)
            assert_int_equal(n_bad, 0);
        else
            assert_true(n_bad > n / 20);
        free(out);

        out = tshark("-T fields -e frame.protocols");
        tshark_classes(out, got, &tvlan, &tvxlan, &lines);
        free(out);
        assert_int_equal(lines, n);
        for (int k = 0; k < K_N; k++) {
            if (got[k] != want[k])
                fail_msg("class %d: tshark counts %d, the model %d", k, got[k], want[k]);
            assert_true(want[k] > 0);
        }
        assert_int_equal(tvlan, vlan);
        assert_int_equal(tvxlan, vxlan);
        unlink(pcap_path);
        free(bad);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfg_values),
        cmocka_unit_test(test_cfg_errors),
        cmocka_unit_test(test_cfg_validate_and_new),
        cmocka_unit_test(test_imix_mean),
        cmocka_unit_test(test_popularity),
        cmocka_unit_test(test_churn),
        cmocka_unit_test(test_constant_spacing),
        cmocka_unit_test(test_line_rate),
        cmocka_unit_test(test_poisson),
        cmocka_unit_test(test_bursty),
        cmocka_unit_test(test_shares),
        cmocka_unit_test(test_checksums_and_layout),
        cmocka_unit_test(test_small_frames),
        cmocka_unit_test(test_no_accidental_vxlan),
        cmocka_unit_test(test_bad_checksums),
        cmocka_unit_test(test_regenerate),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_tshark_cross_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
