/* test_rules.c: the ovs-ofctl rule parser and the rule table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

/* Ports p0..p3 are 0..3; the decimal numbers 0..7 are accepted too. */
static int test_lookup(void *aux, const char *name)
{
    (void)aux;
    static const char *const names[] = {"p0", "p1", "p2", "p3"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i]))
            return i;
    if (name[0] >= '0' && name[0] <= '7' && name[1] == '\0')
        return name[0] - '0';
    return -1;
}

static struct rule *parse_ok(const char *text)
{
    struct rule *r = NULL;
    char err[256] = "unset";
    int rc = rule_parse(text, test_lookup, NULL, &r, err, sizeof err);
    if (rc != 0)
        fail_msg("rule_parse(\"%s\") failed: %s", text, err);
    assert_non_null(r);
    assert_string_equal(r->text, text);
    return r;
}

static void parse_err(const char *text, const char *expected)
{
    struct rule *r = (struct rule *)(uintptr_t)1;
    char err[256] = "";
    int rc = rule_parse(text, test_lookup, NULL, &r, err, sizeof err);
    if (rc != -1)
        fail_msg("rule_parse(\"%s\") succeeded, expected \"%s\"", text, expected);
    assert_null(r);
    assert_string_equal(err, expected);
}

/* Expected key and mask start all zero. */
struct expect {
    struct flow_key k;
    struct flow_mask m;
};

static void expect_init(struct expect *e)
{
    memset(e, 0, sizeof *e);
}

static void assert_match(const struct rule *r, const struct expect *e)
{
    if (memcmp(&r->match, &e->k, sizeof e->k)) {
        char a[512], b[512];
        flow_format(&r->match, a, sizeof a);
        flow_format(&e->k, b, sizeof b);
        fail_msg("match differs: got %s, want %s", a, b);
    }
    if (memcmp(&r->mask, &e->m, sizeof e->m)) {
        const uint8_t *g = (const uint8_t *)&r->mask, *w = (const uint8_t *)&e->m;
        for (size_t i = 0; i < sizeof e->m; i++)
            if (g[i] != w[i])
                fail_msg("mask differs at byte %zu: got 0x%02x, want 0x%02x", i, g[i], w[i]);
    }
}

/* Parses text and compares the match with e, then frees the rule. */
static void check_match(const char *text, const struct expect *e)
{
    struct rule *r = parse_ok(text);
    assert_match(r, e);
    rule_free(r);
}

static uint32_t ip4(const char *s)
{
    uint32_t a;
    assert_int_equal(inet_pton(AF_INET, s, &a), 1);
    return a;
}

static void ip6(const char *s, uint8_t out[16])
{
    assert_int_equal(inet_pton(AF_INET6, s, out), 1);
}

static void set_ip(struct expect *e, uint16_t proto_dl_type, uint8_t nw_proto)
{
    e->k.dl_type = proto_dl_type;
    e->m.m.dl_type = 0xffff;
    if (nw_proto) {
        e->k.nw_proto = nw_proto;
        e->m.m.nw_proto = 0xff;
    }
}

/* ------------------------------------------------------------------------ */
/* Match fields                                                             */

static void test_empty_match_and_priority(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    struct rule *r = parse_ok("actions=drop");
    assert_int_equal(r->priority, RULE_DEFAULT_PRIORITY);
    assert_match(r, &e);
    assert_non_null(r->actions);
    assert_int_equal(r->actions->n, 0);
    assert_int_equal(r->line, 0);
    rule_free(r);

    r = parse_ok("priority=0 actions=drop");
    assert_int_equal(r->priority, 0);
    rule_free(r);
    r = parse_ok("priority=65535,actions=drop");
    assert_int_equal(r->priority, 65535);
    rule_free(r);
    r = parse_ok("  priority=0x10 ,, actions=drop");
    assert_int_equal(r->priority, 16);
    rule_free(r);
    r = parse_ok("priority=010 actions=drop"); /* decimal, not octal */
    assert_int_equal(r->priority, 10);
    rule_free(r);

    parse_err("priority=65536 actions=drop", "bad value '65536' for field 'priority'");
    parse_err("priority=-1 actions=drop", "bad value '-1' for field 'priority'");
    parse_err("priority= actions=drop", "bad value '' for field 'priority'");
    parse_err("priority=1x actions=drop", "bad value '1x' for field 'priority'");
    parse_err("priority=99999999999999999999999 actions=drop",
              "bad value '99999999999999999999999' for field 'priority'");
}

static void test_in_port(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    e.k.in_port = 2;
    e.m.m.in_port = UINT32_MAX;
    check_match("in_port=p2 actions=drop", &e);
    check_match("in_port=2 actions=drop", &e);
    e.k.in_port = 0;
    check_match("in_port=p0 actions=drop", &e);
    parse_err("in_port=p9 actions=drop", "unknown port 'p9'");
    parse_err("in_port=9 actions=drop", "unknown port '9'");

    /* Without a lookup only numbers work. */
    struct rule *r;
    char err[128];
    assert_int_equal(rule_parse("in_port=17 actions=output:3", NULL, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r->match.in_port, 17);
    assert_int_equal(r->actions->a[0].u.port, 3);
    rule_free(r);
    assert_int_equal(rule_parse("in_port=p0 actions=drop", NULL, NULL, &r, err, sizeof err), -1);
    assert_string_equal(err, "unknown port 'p0'");
}

static void test_dl_addrs_and_type(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    static const uint8_t mac[6] = {0x00, 0x11, 0x22, 0xaa, 0xbb, 0x0c};
    memcpy(e.k.dl_src, mac, 6);
    memset(e.m.m.dl_src, 0xff, 6);
    check_match("dl_src=00:11:22:AA:bb:c actions=drop", &e);

    expect_init(&e);
    /* Multicast bit mask: pre-masked value. */
    e.k.dl_dst[0] = 0x01;
    e.m.m.dl_dst[0] = 0x01;
    check_match("dl_dst=03:00:00:00:00:01/01:00:00:00:00:00 actions=drop", &e);

    expect_init(&e);
    e.k.dl_type = 0x88cc;
    e.m.m.dl_type = 0xffff;
    check_match("dl_type=0x88cc actions=drop", &e);
    check_match("dl_type=35020 actions=drop", &e);
    check_match("dl_type=0X88CC actions=drop", &e);

    parse_err("dl_src=00:11:22:33:44 actions=drop", "bad value '00:11:22:33:44' for field 'dl_src'");
    parse_err("dl_src=00:11:22:33:44:55:66 actions=drop",
              "bad value '00:11:22:33:44:55:66' for field 'dl_src'");
    parse_err("dl_dst=00:11:22:33:44:5g actions=drop", "bad value '00:11:22:33:44:5g' for field 'dl_dst'");
    parse_err("dl_dst=000:11:22:33:44:55 actions=drop", "bad value '000:11:22:33:44:55' for field 'dl_dst'");
    parse_err("dl_dst=00:11:22:33:44:55/ff actions=drop",
              "bad value '00:11:22:33:44:55/ff' for field 'dl_dst'");
    parse_err("dl_type=0x10000 actions=drop", "bad value '0x10000' for field 'dl_type'");
    parse_err("dl_type=0x0800/0xff00 actions=drop", "bad value '0x0800/0xff00' for field 'dl_type'");
}

static void test_vlan(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    e.k.vlan_tci[0] = FLOW_VLAN_PRESENT | 5;
    e.m.m.vlan_tci[0] = 0x1fff;
    check_match("dl_vlan=5 actions=drop", &e);

    expect_init(&e);
    e.k.vlan_tci[0] = 0;
    e.m.m.vlan_tci[0] = 0xffff;
    check_match("dl_vlan=0xffff actions=drop", &e);

    expect_init(&e);
    e.k.vlan_tci[0] = (3 << 13) | FLOW_VLAN_PRESENT;
    e.m.m.vlan_tci[0] = 0xf000;
    check_match("dl_vlan_pcp=3 actions=drop", &e);

    expect_init(&e);
    e.k.vlan_tci[0] = (7 << 13) | FLOW_VLAN_PRESENT | 4095;
    e.m.m.vlan_tci[0] = 0xffff;
    check_match("dl_vlan_pcp=7,dl_vlan=4095 actions=drop", &e);

    expect_init(&e);
    e.k.vlan_tci[0] = 0x1000;
    e.m.m.vlan_tci[0] = 0x1000;
    check_match("vlan_tci=0x1234/0x1000 actions=drop", &e); /* "any tag" */
    expect_init(&e);
    e.k.vlan_tci[0] = 0x3064;
    e.m.m.vlan_tci[0] = 0xffff;
    check_match("vlan_tci=0x3064 actions=drop", &e);

    parse_err("dl_vlan=4096 actions=drop", "bad value '4096' for field 'dl_vlan'");
    parse_err("dl_vlan_pcp=8 actions=drop", "bad value '8' for field 'dl_vlan_pcp'");
    parse_err("vlan_tci=0x10000 actions=drop", "bad value '0x10000' for field 'vlan_tci'");
    parse_err("dl_vlan=1,vlan_tci=0x1001 actions=drop", "'vlan_tci' conflicts with 'dl_vlan'");
    parse_err("vlan_tci=0x1001,dl_vlan_pcp=1 actions=drop",
              "'dl_vlan_pcp' conflicts with 'vlan_tci'");
    parse_err("dl_vlan=0xffff,dl_vlan_pcp=1 actions=drop",
              "'dl_vlan_pcp' conflicts with 'dl_vlan=0xffff' (no tag)");
    parse_err("dl_vlan_pcp=1,dl_vlan=0xffff actions=drop",
              "'dl_vlan_pcp' conflicts with 'dl_vlan=0xffff' (no tag)");
}

static void test_protocol_shorthands(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint16_t dl_type;
        uint8_t nw_proto;
    } protos[] = {
        {"ip", 0x0800, 0},     {"ipv6", 0x86dd, 0},   {"arp", 0x0806, 0},
        {"icmp", 0x0800, 1},   {"icmp6", 0x86dd, 58}, {"tcp", 0x0800, 6},
        {"udp", 0x0800, 17},   {"sctp", 0x0800, 132}, {"tcp6", 0x86dd, 6},
        {"udp6", 0x86dd, 17},  {"sctp6", 0x86dd, 132},
    };
    for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++) {
        struct expect e;
        char text[64];
        expect_init(&e);
        set_ip(&e, protos[i].dl_type, protos[i].nw_proto);
        snprintf(text, sizeof text, "%s actions=drop", protos[i].name);
        check_match(text, &e);
    }

    /* Consistent repetitions are fine, as in ovs-ofctl. */
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x0800, 6);
    check_match("ip,tcp actions=drop", &e);
    check_match("tcp,dl_type=0x0800,nw_proto=6 actions=drop", &e);

    parse_err("ip,ipv6 actions=drop", "'ipv6' conflicts with 'ip'");
    parse_err("tcp,udp actions=drop", "'udp' conflicts with 'tcp'");
    parse_err("tcp6,nw_proto=17 actions=drop", "'nw_proto' conflicts with 'tcp6'");
    parse_err("dl_type=0x86dd,tcp actions=drop", "'tcp' conflicts with 'dl_type'");
    parse_err("tcp=1 actions=drop", "'tcp' takes no value");
}

static void test_ipv4(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x0800, 0);
    e.k.nw_dst = ip4("10.0.0.0");
    e.m.m.nw_dst = ip4("255.0.0.0");
    check_match("ip,nw_dst=10.1.2.3/8 actions=drop", &e); /* pre-masked */
    check_match("nw_dst=10.200.0.1/255.0.0.0,ip actions=drop", &e); /* any order */

    expect_init(&e);
    set_ip(&e, 0x0800, 0);
    e.k.nw_src = ip4("192.168.1.1");
    e.m.m.nw_src = UINT32_MAX;
    check_match("ip,nw_src=192.168.1.1 actions=drop", &e);
    check_match("ip,nw_src=192.168.1.1/32 actions=drop", &e);
    e.k.nw_src = 0;
    e.m.m.nw_src = 0;
    check_match("ip,nw_src=192.168.1.1/0 actions=drop", &e);
    /* Non-contiguous dotted masks are allowed (OpenFlow 1.2+). */
    e.k.nw_src = ip4("0.0.1.0");
    e.m.m.nw_src = ip4("0.0.255.0");
    check_match("ip,nw_src=192.168.1.1/0.0.255.0 actions=drop", &e);
    expect_init(&e);
    set_ip(&e, 0x0800, 0);
    e.k.nw_src = ip4("172.16.0.0");
    e.m.m.nw_src = ip4("255.240.0.0");
    check_match("ip,nw_src=172.31.255.255/12 actions=drop", &e);

    /* ARP: nw_src/nw_dst and arp_spa/arp_tpa are the same key fields. */
    expect_init(&e);
    set_ip(&e, 0x0806, 0);
    e.k.nw_src = ip4("10.0.0.1");
    e.m.m.nw_src = UINT32_MAX;
    e.k.nw_dst = ip4("10.0.0.0");
    e.m.m.nw_dst = ip4("255.255.255.0");
    check_match("arp,nw_src=10.0.0.1,nw_dst=10.0.0.9/24 actions=drop", &e);
    check_match("arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.9/24 actions=drop", &e);

    parse_err("ip,nw_src=10.0.0.256 actions=drop", "bad value '10.0.0.256' for field 'nw_src'");
    parse_err("ip,nw_src=10.0.0 actions=drop", "bad value '10.0.0' for field 'nw_src'");
    parse_err("ip,nw_src=10.0.0.1/33 actions=drop", "bad value '10.0.0.1/33' for field 'nw_src'");
    parse_err("ip,nw_src=10.0.0.1/ actions=drop", "bad value '10.0.0.1/' for field 'nw_src'");
    parse_err("ip,nw_src=10.0.0.1/255.0.0 actions=drop",
              "bad value '10.0.0.1/255.0.0' for field 'nw_src'");
    parse_err("arp,nw_src=10.0.0.1,arp_spa=10.0.0.1 actions=drop",
              "'arp_spa' conflicts with 'nw_src'");
    parse_err("ip,nw_dst=1.1.1.1,nw_dst=1.1.1.1 actions=drop", "duplicate field 'nw_dst'");
}

static void test_ipv6(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x86dd, 0);
    ip6("2001:db8::", e.k.ipv6_src);
    memset(e.m.m.ipv6_src, 0xff, 8);
    check_match("ipv6,ipv6_src=2001:db8::1:2:3:4/64 actions=drop", &e);
    check_match("ipv6,ipv6_src=2001:db8::1:2:3:4/ffff:ffff:ffff:ffff:: actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x86dd, 0);
    ip6("fe80::1", e.k.ipv6_dst);
    memset(e.m.m.ipv6_dst, 0xff, 16);
    check_match("ipv6,ipv6_dst=fe80::1 actions=drop", &e);
    /* /127: the last bit is wild. */
    ip6("fe80::", e.k.ipv6_dst);
    e.m.m.ipv6_dst[15] = 0xfe;
    check_match("ipv6,ipv6_dst=fe80::1/127 actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x86dd, 0);
    e.k.ipv6_label = 0x12345;
    e.m.m.ipv6_label = 0xfffff;
    check_match("ipv6,ipv6_label=0x12345 actions=drop", &e);
    e.k.ipv6_label = 0x12300;
    e.m.m.ipv6_label = 0xfff00;
    check_match("ipv6,ipv6_label=0x12345/0xfff00 actions=drop", &e);

    parse_err("ipv6,ipv6_src=2001:db8::/129 actions=drop",
              "bad value '2001:db8::/129' for field 'ipv6_src'");
    parse_err("ipv6,ipv6_src=10.0.0.1 actions=drop", "bad value '10.0.0.1' for field 'ipv6_src'");
    parse_err("ipv6,ipv6_src=2001:db8:::1 actions=drop",
              "bad value '2001:db8:::1' for field 'ipv6_src'");
    parse_err("ipv6,ipv6_label=0x100000 actions=drop",
              "bad value '0x100000' for field 'ipv6_label'");
}

static void test_ip_fields(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x0800, 47);
    check_match("ip,nw_proto=47 actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x0800, 0);
    e.k.nw_tos = 0x20;
    e.m.m.nw_tos = 0xfc;
    check_match("ip,nw_tos=32 actions=drop", &e);
    check_match("ip,ip_dscp=8 actions=drop", &e);
    e.k.nw_tos = 0x22;
    e.m.m.nw_tos = 0xff;
    check_match("ip,ip_dscp=8,nw_ecn=2 actions=drop", &e);
    expect_init(&e);
    set_ip(&e, 0x86dd, 0);
    e.k.nw_tos = 0x03;
    e.m.m.nw_tos = 0x03;
    check_match("ipv6,nw_ecn=3 actions=drop", &e);
    check_match("ipv6,ip_ecn=3 actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x0800, 0);
    e.k.nw_ttl = 1;
    e.m.m.nw_ttl = 0xff;
    check_match("ip,nw_ttl=1 actions=drop", &e);

    parse_err("ip,nw_tos=33 actions=drop", "bad value '33' for field 'nw_tos'");
    parse_err("ip,nw_tos=256 actions=drop", "bad value '256' for field 'nw_tos'");
    parse_err("ip,ip_dscp=64 actions=drop", "bad value '64' for field 'ip_dscp'");
    parse_err("ip,nw_ecn=4 actions=drop", "bad value '4' for field 'nw_ecn'");
    parse_err("ip,nw_ttl=256 actions=drop", "bad value '256' for field 'nw_ttl'");
    parse_err("ip,nw_proto=256 actions=drop", "bad value '256' for field 'nw_proto'");
    parse_err("ip,nw_tos=4,ip_dscp=1 actions=drop", "'ip_dscp' conflicts with 'nw_tos'");
}

static void test_ip_frag(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        uint8_t value, mask;
    } cases[] = {
        {"no", 0, FLOW_FRAG_ANY},
        {"yes", FLOW_FRAG_ANY, FLOW_FRAG_ANY},
        {"first", FLOW_FRAG_ANY, FLOW_FRAG_ANY | FLOW_FRAG_LATER},
        {"later", FLOW_FRAG_ANY | FLOW_FRAG_LATER, FLOW_FRAG_ANY | FLOW_FRAG_LATER},
        {"not_later", 0, FLOW_FRAG_LATER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct expect e;
        char text[64];
        expect_init(&e);
        set_ip(&e, 0x0800, 0);
        e.k.nw_frag = cases[i].value;
        e.m.m.nw_frag = cases[i].mask;
        snprintf(text, sizeof text, "ip,ip_frag=%s actions=drop", cases[i].v);
        check_match(text, &e);
    }

    /* Semantics on keys: first fragment, later fragment, whole packet. */
    struct flow_key first = {.dl_type = 0x0800, .nw_frag = FLOW_FRAG_ANY};
    struct flow_key later = {.dl_type = 0x0800, .nw_frag = FLOW_FRAG_ANY | FLOW_FRAG_LATER};
    struct flow_key whole = {.dl_type = 0x0800};
    static const struct {
        const char *v;
        bool first, later, whole;
    } sem[] = {
        {"no", false, false, true},       {"yes", true, true, false},
        {"first", true, false, false},    {"later", false, true, false},
        {"not_later", true, false, true},
    };
    for (size_t i = 0; i < sizeof sem / sizeof sem[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "ip,ip_frag=%s actions=drop", sem[i].v);
        struct rule *r = parse_ok(text);
        assert_int_equal(flow_match_masked(&first, &r->match, &r->mask), sem[i].first);
        assert_int_equal(flow_match_masked(&later, &r->match, &r->mask), sem[i].later);
        assert_int_equal(flow_match_masked(&whole, &r->match, &r->mask), sem[i].whole);
        rule_free(r);
    }
    parse_err("ip,ip_frag=maybe actions=drop", "bad value 'maybe' for field 'ip_frag'");
}

static void test_l4_fields(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x0800, 6);
    e.k.tp_dst = 80;
    e.m.m.tp_dst = 0xffff;
    check_match("tcp,tp_dst=80 actions=drop", &e);
    e.k.tp_src = 0x1000;
    e.m.m.tp_src = 0xf000;
    check_match("tcp,tp_dst=80,tp_src=0x1234/0xf000 actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x86dd, 17);
    e.k.tp_src = 53;
    e.m.m.tp_src = 0xffff;
    check_match("udp6,tp_src=53 actions=drop", &e);
    expect_init(&e);
    set_ip(&e, 0x0800, 132);
    e.k.tp_dst = 65535;
    e.m.m.tp_dst = 0xffff;
    check_match("sctp,tp_dst=65535 actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x0800, 6);
    e.k.tcp_flags = 0x002;
    e.m.m.tcp_flags = 0x0fff;
    check_match("tcp,tcp_flags=2 actions=drop", &e);
    e.m.m.tcp_flags = 0x012;
    check_match("tcp,tcp_flags=0x002/0x012 actions=drop", &e);

    expect_init(&e);
    set_ip(&e, 0x0800, 1);
    e.k.tp_src = 8;
    e.m.m.tp_src = 0xffff;
    e.k.tp_dst = 0;
    e.m.m.tp_dst = 0xffff;
    check_match("icmp,icmp_type=8,icmp_code=0 actions=drop", &e);
    expect_init(&e);
    set_ip(&e, 0x86dd, 58);
    e.k.tp_src = 135;
    e.m.m.tp_src = 0xffff;
    e.k.tp_dst = 3;
    e.m.m.tp_dst = 0xffff;
    check_match("icmp6,icmpv6_type=135,icmpv6_code=3 actions=drop", &e);

    parse_err("tcp,tp_dst=65536 actions=drop", "bad value '65536' for field 'tp_dst'");
    parse_err("tcp,tp_dst=http actions=drop", "bad value 'http' for field 'tp_dst'");
    parse_err("tcp,tcp_flags=0x1000 actions=drop", "bad value '0x1000' for field 'tcp_flags'");
    parse_err("icmp,icmp_type=256 actions=drop", "bad value '256' for field 'icmp_type'");
    parse_err("icmp,icmp_type=8/0xff actions=drop", "bad value '8/0xff' for field 'icmp_type'");
    parse_err("tcp,tp_dst=80,tp_dst=81 actions=drop", "duplicate field 'tp_dst'");
}

static void test_arp_fields(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x0806, 0);
    e.k.nw_proto = 2;
    e.m.m.nw_proto = 0xff;
    static const uint8_t sha[6] = {2, 0, 0, 0, 0, 1}, tha[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    memcpy(e.k.arp_sha, sha, 6);
    memset(e.m.m.arp_sha, 0xff, 6);
    memcpy(e.k.arp_tha, tha, 6);
    memset(e.m.m.arp_tha, 0xff, 6);
    check_match("arp,arp_op=2,arp_sha=02:00:00:00:00:01,arp_tha=ff:ff:ff:ff:ff:ff actions=drop",
                &e);
    parse_err("arp,arp_op=256 actions=drop", "bad value '256' for field 'arp_op'");
    parse_err("arp,arp_sha=1:2:3 actions=drop", "bad value '1:2:3' for field 'arp_sha'");
}

static void test_tunnel_fields(void **state)
{
    (void)state;
    struct expect e;
    expect_init(&e);
    e.k.tun_id = 5000;
    e.m.m.tun_id = UINT64_MAX;
    check_match("tun_id=5000 actions=drop", &e);
    check_match("tun_id=0x1388 actions=drop", &e);
    e.k.tun_id = 0x1300;
    e.m.m.tun_id = 0xff00;
    check_match("tun_id=0x1388/0xff00 actions=drop", &e);
    e.k.tun_id = UINT64_MAX;
    e.m.m.tun_id = UINT64_MAX;
    check_match("tun_id=0xffffffffffffffff actions=drop", &e);

    expect_init(&e);
    static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
    memcpy(e.k.tun_src, mapped, 16);
    memset(e.m.m.tun_src, 0xff, 16);
    ip6("2001:db8::7", e.k.tun_dst);
    memset(e.m.m.tun_dst, 0xff, 16);
    check_match("tun_src=192.0.2.1,tun_dst=2001:db8::7 actions=drop", &e);

    expect_init(&e);
    memcpy(e.k.tun_dst, mapped, 16);
    e.k.tun_dst[15] = 0;
    memset(e.m.m.tun_dst, 0xff, 15);
    check_match("tun_dst=192.0.2.1/24 actions=drop", &e);

    parse_err("tun_id=0x10000000000000000 actions=drop",
              "bad value '0x10000000000000000' for field 'tun_id'");
    parse_err("tun_src=192.0.2 actions=drop", "bad value '192.0.2' for field 'tun_src'");
    parse_err("tun_dst=::g actions=drop", "bad value '::g' for field 'tun_dst'");
}

static void test_field_errors(void **state)
{
    (void)state;
    parse_err("ip,nw_dts=10.0.0.1 actions=drop", "unknown field 'nw_dts'");
    parse_err("table=0 actions=drop", "unknown field 'table'");
    parse_err("in_port=p0", "missing 'actions='");
    parse_err("", "missing 'actions='");
    parse_err("in_port=p0 action=drop", "unknown field 'action'");
    parse_err("in_port actions=drop", "field 'in_port' needs a value");
    parse_err("in_port=p0,in_port=p1 actions=drop", "duplicate field 'in_port'");
    parse_err("priority=1,priority=1 actions=drop", "duplicate field 'priority'");
    parse_err("ip,ip_dscp=1,nw_tos=4 actions=drop", "'nw_tos' conflicts with 'ip_dscp'");
    parse_err("tcp,tp_src=1,icmp_type=1 actions=drop", "'icmp_type' conflicts with 'tp_src'");

    /* A small error buffer is truncated, never overrun. */
    struct rule *r;
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(rule_parse("bogus=1 actions=drop", test_lookup, NULL, &r, small, sizeof small), -1);
    assert_string_equal(small, "unknown");
    /* And no buffer at all is fine. */
    assert_int_equal(rule_parse("bogus=1 actions=drop", test_lookup, NULL, &r, NULL, 0), -1);
    assert_null(r);
}

static void test_prerequisites(void **state)
{
    (void)state;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"nw_src=10.0.0.1 actions=drop", "nw_src requires ip or arp"},
        {"ipv6,nw_dst=10.0.0.1 actions=drop", "nw_dst requires ip or arp"},
        {"ip,arp_spa=10.0.0.1 actions=drop", "arp_spa requires arp"},
        {"arp_tpa=10.0.0.1 actions=drop", "arp_tpa requires arp"},
        {"ip,ipv6_src=::1 actions=drop", "ipv6_src requires ipv6"},
        {"ipv6_dst=::1 actions=drop", "ipv6_dst requires ipv6"},
        {"ip,ipv6_label=1 actions=drop", "ipv6_label requires ipv6"},
        {"nw_proto=6 actions=drop", "nw_proto requires ip or ipv6"},
        {"arp,nw_tos=4 actions=drop", "nw_tos requires ip or ipv6"},
        {"ip_dscp=1 actions=drop", "ip_dscp requires ip or ipv6"},
        {"nw_ecn=1 actions=drop", "nw_ecn requires ip or ipv6"},
        {"nw_ttl=1 actions=drop", "nw_ttl requires ip or ipv6"},
        {"ip_frag=no actions=drop", "ip_frag requires ip or ipv6"},
        {"tp_dst=80 actions=drop", "tp_dst requires tcp, udp or sctp"},
        {"ip,tp_src=80 actions=drop", "tp_src requires tcp, udp or sctp"},
        {"icmp,tp_src=80 actions=drop", "tp_src requires tcp, udp or sctp"},
        {"nw_proto=6,tp_src=80 actions=drop", "nw_proto requires ip or ipv6"},
        {"dl_type=0x0806,nw_proto=6,tp_src=80 actions=drop", "nw_proto requires ip or ipv6"},
        {"udp,tcp_flags=2 actions=drop", "tcp_flags requires tcp"},
        {"tcp_flags=2 actions=drop", "tcp_flags requires tcp"},
        {"icmp6,icmp_type=1 actions=drop", "icmp_type requires icmp"},
        {"ip,icmp_code=1 actions=drop", "icmp_code requires icmp"},
        {"icmp,icmpv6_type=1 actions=drop", "icmpv6_type requires icmp6"},
        {"ipv6,icmpv6_code=1 actions=drop", "icmpv6_code requires icmp6"},
        {"ip,arp_op=1 actions=drop", "arp_op requires arp"},
        {"arp_sha=00:00:00:00:00:01 actions=drop", "arp_sha requires arp"},
        {"ipv6,arp_tha=00:00:00:00:00:01 actions=drop", "arp_tha requires arp"},
        /* The first unmet prerequisite in text order is reported. */
        {"tp_dst=1,ipv6_src=::1 actions=drop", "tp_dst requires tcp, udp or sctp"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        parse_err(cases[i].text, cases[i].err);

    /* Spelled out instead of shorthands, in any order. */
    struct rule *r = parse_ok("tp_dst=80,nw_proto=6,dl_type=0x86dd actions=drop");
    assert_int_equal(r->match.dl_type, 0x86dd);
    assert_int_equal(r->match.nw_proto, 6);
    assert_int_equal(r->match.tp_dst, 80);
    rule_free(r);
    r = parse_ok("tcp6,tcp_flags=0x010 actions=drop");
    assert_int_equal(r->match.tcp_flags, 0x010);
    rule_free(r);
}

static void test_issue_example(void **state)
{
    (void)state;
    struct rule *r = parse_ok("priority=100,in_port=p0,ip,nw_dst=10.0.0.0/8,tcp,tp_dst=80 "
                              "actions=output:p1");
    struct expect e;
    expect_init(&e);
    set_ip(&e, 0x0800, 6);
    e.k.in_port = 0;
    e.m.m.in_port = UINT32_MAX;
    e.k.nw_dst = ip4("10.0.0.0");
    e.m.m.nw_dst = ip4("255.0.0.0");
    e.k.tp_dst = 80;
    e.m.m.tp_dst = 0xffff;
    assert_int_equal(r->priority, 100);
    assert_match(r, &e);
    assert_int_equal(r->actions->n, 1);
    assert_int_equal(r->actions->a[0].type, ACT_OUTPUT);
    assert_int_equal(r->actions->a[0].u.port, 1);
    assert_int_equal(r->actions->refcnt, 1);
    rule_free(r);

    /* Blanks as separators, tabs too. */
    r = parse_ok("priority=100 in_port=p0\tip nw_dst=10.0.0.0/8 tcp tp_dst=80  actions=output:p1");
    assert_match(r, &e);
    rule_free(r);
}

/* ------------------------------------------------------------------------ */
/* Actions                                                                  */

static void test_actions_each(void **state)
{
    (void)state;
    struct rule *r = parse_ok(
        "tcp actions=mod_dl_src:00:00:00:00:00:0a,mod_dl_dst:0a:0b:0c:0d:0e:0f,"
        "mod_nw_src:10.0.0.1,mod_nw_dst:10.0.0.2,mod_nw_tos:0x28,mod_tp_src:1000,"
        "mod_tp_dst:65535,push_vlan:0x88a8,mod_vlan_vid:4095,mod_vlan_pcp:7,pop_vlan,"
        "strip_vlan,push_vlan:0x8100,dec_ttl,output:p3");
    const struct action_list *l = r->actions;
    assert_int_equal(l->n, 15);
    static const uint8_t src[6] = {0, 0, 0, 0, 0, 0x0a}, dst[6] = {0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
    assert_int_equal(l->a[0].type, ACT_SET_DL_SRC);
    assert_memory_equal(l->a[0].u.mac, src, 6);
    assert_int_equal(l->a[1].type, ACT_SET_DL_DST);
    assert_memory_equal(l->a[1].u.mac, dst, 6);
    assert_int_equal(l->a[2].type, ACT_SET_NW_SRC);
    assert_int_equal(l->a[2].u.ip4, ip4("10.0.0.1"));
    assert_int_equal(l->a[3].type, ACT_SET_NW_DST);
    assert_int_equal(l->a[3].u.ip4, ip4("10.0.0.2"));
    assert_int_equal(l->a[4].type, ACT_SET_NW_TOS);
    assert_int_equal(l->a[4].u.u8, 0x28);
    assert_int_equal(l->a[5].type, ACT_SET_TP_SRC);
    assert_int_equal(l->a[5].u.u16, 1000);
    assert_int_equal(l->a[6].type, ACT_SET_TP_DST);
    assert_int_equal(l->a[6].u.u16, 65535);
    assert_int_equal(l->a[7].type, ACT_PUSH_VLAN);
    assert_int_equal(l->a[7].u.u16, 0x88a8);
    assert_int_equal(l->a[8].type, ACT_SET_VLAN_VID);
    assert_int_equal(l->a[8].u.u16, 4095);
    assert_int_equal(l->a[9].type, ACT_SET_VLAN_PCP);
    assert_int_equal(l->a[9].u.u8, 7);
    assert_int_equal(l->a[10].type, ACT_POP_VLAN);
    assert_int_equal(l->a[11].type, ACT_POP_VLAN);
    assert_int_equal(l->a[12].type, ACT_PUSH_VLAN);
    assert_int_equal(l->a[12].u.u16, 0x8100);
    assert_int_equal(l->a[13].type, ACT_DEC_TTL);
    assert_int_equal(l->a[14].type, ACT_OUTPUT);
    assert_int_equal(l->a[14].u.port, 3);

    char buf[512];
    action_list_format(l, NULL, NULL, buf, sizeof buf);
    assert_non_null(strstr(buf, "output:3"));
    rule_free(r);

    /* Several outputs, numbers and names, blanks after commas. */
    r = parse_ok("in_port=p0 actions=output:p1, output:2,mod_vlan_vid:10,output:p3");
    l = r->actions;
    assert_int_equal(l->n, 4);
    assert_int_equal(l->a[0].u.port, 1);
    assert_int_equal(l->a[1].u.port, 2);
    assert_int_equal(l->a[2].type, ACT_SET_VLAN_VID);
    assert_int_equal(l->a[3].u.port, 3);
    rule_free(r);

    r = parse_ok("ipv6 actions=dec_ttl,output:p0");
    assert_int_equal(r->actions->n, 2);
    rule_free(r);
    r = parse_ok("udp6 actions=mod_tp_dst:53,output:p0");
    assert_int_equal(r->actions->a[0].u.u16, 53);
    rule_free(r);
}

static void test_actions_drop_and_strip(void **state)
{
    (void)state;
    struct rule *r = parse_ok("in_port=p0 actions=drop");
    assert_int_equal(r->actions->n, 0);
    rule_free(r);
    r = parse_ok("in_port=p0 actions=");
    assert_int_equal(r->actions->n, 0);
    rule_free(r);

    /* Actions after the last output have no effect: not compiled. */
    r = parse_ok("ip actions=output:p1,mod_nw_dst:1.2.3.4,dec_ttl");
    assert_int_equal(r->actions->n, 1);
    assert_int_equal(r->actions->a[0].type, ACT_OUTPUT);
    rule_free(r);
    r = parse_ok("ip actions=mod_nw_dst:1.2.3.4,dec_ttl");
    assert_int_equal(r->actions->n, 0);
    rule_free(r);
    r = parse_ok("ip actions=output:p1,dec_ttl,output:p2,pop_vlan");
    assert_int_equal(r->actions->n, 3);
    assert_int_equal(r->actions->a[2].type, ACT_OUTPUT);
    assert_int_equal(r->actions->a[2].u.port, 2);
    rule_free(r);

    parse_err("actions=drop,output:p1", "'drop' must be the only action");
    parse_err("actions=output:p1,drop", "'drop' must be the only action");
}

static void test_actions_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *err;
    } cases[] = {
        {"actions=flood", "unknown action 'flood'"},
        {"actions=output", "action 'output' needs an argument"},
        {"actions=output:p9", "unknown port 'p9'"},
        {"actions=output:", "unknown port ''"},
        {"actions=pop_vlan:1,output:p0", "action 'pop_vlan' takes no argument"},
        {"ip actions=dec_ttl:2,output:p0", "action 'dec_ttl' takes no argument"},
        {"actions=mod_dl_src:00:11", "bad value '00:11' for action 'mod_dl_src'"},
        {"ip actions=mod_nw_src:1.2.3", "bad value '1.2.3' for action 'mod_nw_src'"},
        {"ip actions=mod_nw_tos:0x29", "bad value '0x29' for action 'mod_nw_tos'"},
        {"ip actions=mod_nw_tos:256", "bad value '256' for action 'mod_nw_tos'"},
        {"tcp actions=mod_tp_src:65536", "bad value '65536' for action 'mod_tp_src'"},
        {"actions=push_vlan:0x0800", "bad value '0x0800' for action 'push_vlan'"},
        {"actions=mod_vlan_vid:4096", "bad value '4096' for action 'mod_vlan_vid'"},
        {"actions=mod_vlan_pcp:8", "bad value '8' for action 'mod_vlan_pcp'"},
        /* Prerequisites against the match. */
        {"actions=mod_nw_src:1.2.3.4,output:p0", "mod_nw_src requires ip"},
        {"ipv6 actions=mod_nw_dst:1.2.3.4,output:p0", "mod_nw_dst requires ip"},
        {"arp actions=mod_nw_tos:4,output:p0", "mod_nw_tos requires ip"},
        {"ip actions=mod_tp_src:1,output:p0", "mod_tp_src requires tcp, udp or sctp"},
        {"icmp actions=mod_tp_dst:1,output:p0", "mod_tp_dst requires tcp, udp or sctp"},
        {"actions=dec_ttl,output:p0", "dec_ttl requires ip or ipv6"},
        {"arp actions=output:p0,dec_ttl", "dec_ttl requires ip or ipv6"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        parse_err(cases[i].text, cases[i].err);

    /* Exactly RULE_MAX_ACTIONS is fine, one more is not. */
    char text[2048] = "actions=";
    for (int i = 0; i < RULE_MAX_ACTIONS; i++)
        strcat(text, i ? ",output:p1" : "output:p1");
    struct rule *r = parse_ok(text);
    assert_int_equal(r->actions->n, RULE_MAX_ACTIONS);
    rule_free(r);
    strcat(text, ",output:p2");
    char want[64];
    snprintf(want, sizeof want, "too many actions (max %d)", RULE_MAX_ACTIONS);
    parse_err(text, want);
}

/* ------------------------------------------------------------------------ */
/* The table                                                                */

static struct rule *mk(const char *text)
{
    return parse_ok(text);
}

static struct flow_key tcp_key(uint32_t in_port, const char *dst, uint16_t tp_dst)
{
    struct flow_key k;
    memset(&k, 0, sizeof k);
    k.in_port = in_port;
    k.dl_type = 0x0800;
    k.nw_proto = 6;
    k.nw_dst = ip4(dst);
    k.tp_dst = tp_dst;
    k.nw_ttl = 64;
    return k;
}

static void test_table_priority_order(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    assert_non_null(t);
    assert_int_equal(rule_table_count(t), 0);
    assert_null(rule_table_at(t, 0));

    struct flow_key k = tcp_key(0, "10.1.1.1", 80);
    assert_null(rule_table_lookup(t, &k, NULL));

    rule_table_add(t, mk("priority=10,ip actions=output:p1"));
    rule_table_add(t, mk("priority=200,ip,nw_dst=10.0.0.0/8 actions=output:p2"));
    rule_table_add(t, mk("priority=100,tcp,tp_dst=80 actions=output:p3"));
    rule_table_add(t, mk("priority=100,in_port=p0 actions=output:p0"));
    rule_table_add(t, mk("priority=65535,ip,nw_dst=192.168.0.0/16 actions=drop"));
    assert_int_equal(rule_table_count(t), 5);

    /* Iteration order: priority descending, ties in insertion order. */
    static const int prios[] = {65535, 200, 100, 100, 10};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(rule_table_at(t, i)->priority, prios[i]);
    assert_non_null(strstr(rule_table_at(t, 2)->text, "tp_dst=80"));
    assert_non_null(strstr(rule_table_at(t, 3)->text, "in_port=p0"));
    assert_true(rule_table_at(t, 2)->seq < rule_table_at(t, 3)->seq);
    assert_null(rule_table_at(t, 5));

    const struct rule *r = rule_table_lookup(t, &k, NULL);
    assert_int_equal(r->priority, 200);
    k = tcp_key(0, "11.1.1.1", 80);
    r = rule_table_lookup(t, &k, NULL);
    assert_non_null(strstr(r->text, "tp_dst=80")); /* tie: the earlier added */
    k = tcp_key(0, "11.1.1.1", 81);
    r = rule_table_lookup(t, &k, NULL);
    assert_non_null(strstr(r->text, "in_port=p0"));
    k = tcp_key(1, "11.1.1.1", 81);
    r = rule_table_lookup(t, &k, NULL);
    assert_int_equal(r->priority, 10);
    k = tcp_key(1, "192.168.3.3", 80);
    r = rule_table_lookup(t, &k, NULL);
    assert_int_equal(r->priority, 65535);
    assert_int_equal(r->actions->n, 0);
    k.dl_type = 0x86dd;
    assert_null(rule_table_lookup(t, &k, NULL));

    /* A later-added rule of higher priority goes in front. */
    rule_table_add(t, mk("priority=150,tcp actions=output:p1"));
    k = tcp_key(0, "11.1.1.1", 80);
    r = rule_table_lookup(t, &k, NULL);
    assert_int_equal(r->priority, 150);
    /* A later-added rule of equal priority goes behind its ties. */
    rule_table_add(t, mk("priority=100,tcp,tp_dst=81 actions=output:p2"));
    assert_non_null(strstr(rule_table_at(t, 5)->text, "tp_dst=81"));
    assert_int_equal(rule_table_at(t, 6)->priority, 10);

    rule_table_destroy(t);
    rule_table_destroy(NULL);
}

static void test_table_replace_and_delete(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    uint64_t v0 = rule_table_version(t);

    rule_table_add(t, mk("priority=100,tcp,tp_dst=80 actions=output:p1"));
    rule_table_add(t, mk("priority=100,udp actions=output:p1"));
    rule_table_add(t, mk("priority=100,ip actions=output:p1"));
    uint64_t v1 = rule_table_version(t);
    assert_true(v1 != v0);
    uint64_t seq0 = rule_table_at(t, 0)->seq;

    /* Same priority+match+mask (written differently): replaced in place. */
    rule_table_add(t, mk("tp_dst=80 tcp priority=100 actions=output:p2,output:p3"));
    assert_int_equal(rule_table_count(t), 3);
    uint64_t v2 = rule_table_version(t);
    assert_true(v2 != v1);
    const struct rule *r = rule_table_at(t, 0);
    assert_int_equal(r->seq, seq0);
    assert_int_equal(r->actions->n, 2);
    assert_int_equal(r->actions->a[0].u.port, 2);
    struct flow_key k = tcp_key(0, "1.1.1.1", 80);
    assert_ptr_equal(rule_table_lookup(t, &k, NULL), r);

    /* Different priority or mask: a new rule. */
    rule_table_add(t, mk("priority=101,tcp,tp_dst=80 actions=output:p1"));
    rule_table_add(t, mk("priority=100,tcp,tp_dst=80/0xfff0 actions=output:p1"));
    assert_int_equal(rule_table_count(t), 5);

    /* Strict delete: only the exact priority+match+mask. */
    struct rule *probe = mk("priority=100,tcp,tp_dst=80 actions=drop");
    uint64_t v3 = rule_table_version(t);
    assert_int_equal(rule_table_delete_strict(t, probe), 1);
    assert_int_equal(rule_table_count(t), 4);
    uint64_t v4 = rule_table_version(t);
    assert_true(v4 != v3);
    assert_int_equal(rule_table_delete_strict(t, probe), 0);
    assert_int_equal(rule_table_version(t), v4); /* no change, no bump */
    rule_free(probe);
    probe = mk("priority=99,udp actions=drop");
    assert_int_equal(rule_table_delete_strict(t, probe), 0);
    rule_free(probe);
    for (size_t i = 0; i < rule_table_count(t); i++)
        assert_false(rule_table_at(t, i)->priority == 100 &&
                     rule_table_at(t, i)->mask.m.tp_dst == 0xffff);

    /* Left: 101 tcp/80, then the 100s in insertion order: udp, ip, tcp/80/0xfff0. */
    assert_string_equal(rule_table_at(t, 0)->text, "priority=101,tcp,tp_dst=80 actions=output:p1");
    assert_string_equal(rule_table_at(t, 1)->text, "priority=100,udp actions=output:p1");
    assert_string_equal(rule_table_at(t, 2)->text, "priority=100,ip actions=output:p1");
    assert_string_equal(rule_table_at(t, 3)->text,
                        "priority=100,tcp,tp_dst=80/0xfff0 actions=output:p1");
    k = tcp_key(0, "1.1.1.1", 81);
    r = rule_table_lookup(t, &k, NULL);
    assert_ptr_equal(r, rule_table_at(t, 2)); /* the earlier of the ties */

    rule_table_clear(t);
    assert_int_equal(rule_table_count(t), 0);
    uint64_t v5 = rule_table_version(t);
    assert_true(v5 != v4);
    rule_table_clear(t);
    assert_true(rule_table_version(t) != v5);
    assert_null(rule_table_lookup(t, &k, NULL));

    /* The table is usable after clear. */
    rule_table_add(t, mk("actions=output:p0"));
    assert_non_null(rule_table_lookup(t, &k, NULL));
    rule_table_destroy(t);
}

static void test_table_action_list_outlives_rule(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, mk("ip actions=output:p2"));
    struct flow_key k = tcp_key(0, "1.1.1.1", 1);
    struct action_list *l = action_list_ref(rule_table_lookup(t, &k, NULL)->actions);
    assert_int_equal(l->refcnt, 2);
    rule_table_clear(t);
    assert_int_equal(l->refcnt, 1);
    assert_int_equal(l->a[0].u.port, 2);
    action_list_unref(l);
    rule_table_destroy(t);
}

static void test_table_wildcards(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, mk("priority=200,tcp,tp_dst=80 actions=output:p1"));
    rule_table_add(t, mk("priority=100,ip,nw_dst=10.0.0.0/8 actions=output:p2"));
    rule_table_add(t, mk("priority=50,in_port=p3 actions=output:p3"));

    /* Matches the lower rule: wc holds its mask and, of the rule above,
     * the prefix of tp_dst down to the first bit where 22 (0x0016) and 80
     * (0x0050) differ (0x0040): 0xffc0. Nothing of the third. */
    struct flow_key k = tcp_key(0, "10.9.9.9", 22);
    struct flow_mask wc;
    memset(&wc, 0, sizeof wc);
    const struct rule *r = rule_table_lookup(t, &k, &wc);
    assert_int_equal(r->priority, 100);
    struct flow_mask want;
    memset(&want, 0, sizeof want);
    want.m.dl_type = 0xffff;
    want.m.tp_dst = 0xffc0;
    want.m.nw_dst = ip4("255.0.0.0");
    assert_memory_equal(&wc, &want, sizeof want);

    /* A megaflow with this mask cannot shadow the priority-200 rule: any
     * key equal to k under wc gets the same answer. */
    struct flow_key k2 = k;
    k2.nw_dst = ip4("10.1.2.3");
    k2.in_port = 3;
    k2.nw_ttl = 1;
    assert_true(flow_match_masked(&k2, &k, &wc));
    assert_ptr_equal(rule_table_lookup(t, &k2, NULL), r);
    struct flow_key k3 = k;
    k3.tp_dst = 80; /* differs in wc: may (and does) get another rule */
    assert_false(flow_match_masked(&k3, &k, &wc));
    assert_int_equal(rule_table_lookup(t, &k3, NULL)->priority, 200);

    /* The first rule matches: only its mask. */
    memset(&wc, 0, sizeof wc);
    r = rule_table_lookup(t, &k3, &wc);
    memset(&want, 0, sizeof want);
    want.m.dl_type = 0xffff;
    want.m.nw_proto = 0xff;
    want.m.tp_dst = 0xffff;
    assert_memory_equal(&wc, &want, sizeof want);

    /* A miss differs from every rule: on tp_dst (0xffc0 as above), on
     * nw_dst (11 and 10 differ in the last bit of the first byte: /8), on
     * in_port. wc is OR-ed into, not overwritten. */
    struct flow_key miss = tcp_key(1, "11.0.0.1", 22);
    memset(&wc, 0, sizeof wc);
    wc.m.nw_ttl = 0xff;
    assert_null(rule_table_lookup(t, &miss, &wc));
    memset(&want, 0, sizeof want);
    want.m.tp_dst = 0xffc0;
    want.m.nw_dst = ip4("255.0.0.0");
    want.m.in_port = UINT32_MAX;
    want.m.nw_ttl = 0xff;
    assert_memory_equal(&wc, &want, sizeof want);
    rule_table_destroy(t);
}

/* A TCP packet to dst looked up in t: the winner has priority prio and wc
 * is dl_type, nw_proto if with_proto, and nw_dst/nw_dst_mask. */
static void assert_route_wc(const struct rule_table *t, const char *dst, int prio,
                            bool with_proto, const char *nw_dst_mask)
{
    struct flow_key k = tcp_key(0, dst, 80);
    struct flow_mask wc, want;
    memset(&wc, 0, sizeof wc);
    assert_int_equal(rule_table_lookup(t, &k, &wc)->priority, prio);
    memset(&want, 0, sizeof want);
    want.m.dl_type = 0xffff;
    want.m.nw_proto = with_proto ? 0xff : 0;
    want.m.nw_dst = ip4(nw_dst_mask);
    assert_memory_equal(&wc, &want, sizeof want);
}

/* The bits that tell a key apart from the rules above its winner, as a
 * route table shows them: a field that tells kinds of packets apart
 * (dl_type, nw_proto) is taken whole before an address; an address or port
 * down to its first differing bit; nothing when wc already differs. */
static void test_table_wildcards_prefix(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, mk("priority=500,ip,nw_dst=10.1.1.1 actions=output:p1"));
    rule_table_add(t, mk("priority=450,ipv6,ipv6_dst=2001:db8::/32 actions=output:p1"));
    rule_table_add(t, mk("priority=400,ip,nw_dst=10.2.3.0/24 actions=output:p1"));
    rule_table_add(t, mk("priority=300,ip,nw_dst=10.64.0.0/16 actions=output:p1"));
    rule_table_add(t, mk("priority=250,udp,nw_dst=10.200.0.0/16 actions=output:p1"));
    rule_table_add(t, mk("priority=200,ip,nw_dst=10.0.0.0/8 actions=output:p2"));

    /* 10.200.1.1 (TCP): second byte 200 = 11001000b against 1, 2 and 64
     * (top bit clear): the first bit of the second byte decides, /9; the
     * IPv6 rule by dl_type; the UDP rule by nw_proto (TCP), although its
     * /16 matches; the winner adds /8. */
    assert_route_wc(t, "10.200.1.1", 200, true, "255.128.0.0");
    /* 10.2.3.9: /32 against 10.1.1.1 (second byte 2 vs 1: /15), then the
     * /24 matches. */
    assert_route_wc(t, "10.2.3.9", 400, false, "255.255.255.0");
    /* 10.1.1.3 against 10.1.1.1: the second-lowest bit, /31; the IPv6 rule
     * by dl_type; the /24, the /16 and the UDP rule differ from 10.1.1.3
     * within the /31 already taken: nothing more. The winner adds /8. */
    assert_route_wc(t, "10.1.1.3", 200, false, "255.255.255.254");
    rule_table_destroy(t);
}

/* The wildcard contract, on random rules and keys: every key equal to k on
 * the wc of k's lookup gets the same rule. The keys come from small
 * domains (a few ports, addresses, protocols), so rules overlap and
 * differ in few bits; each wc is tried with 20 keys that keep k's bits
 * under it and take random ones elsewhere. */
static uint32_t prop_rnd(uint64_t *s, uint32_t n)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((*s >> 33) % n);
}

static void test_table_wildcards_property(void **state)
{
    (void)state;
    uint64_t rng = 18;
    unsigned matched = 0, looked = 0;
#define RND(n) prop_rnd(&rng, (n))
    static const char *const fields[] = {
        "in_port=%u", "nw_dst=10.%u.0.0/16", "nw_dst=10.0.%u.0/24", "nw_src=192.168.0.%u",
        "tp_dst=%u", "tp_src=%u", "nw_tos=%u", "dl_src=02:00:00:00:00:0%u",
        "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00", "nw_dst=10.%u.0.0/12",
    };
    for (unsigned set = 0; set < 40; set++) {
        struct rule_table *t = rule_table_create();
        unsigned nr = 1 + RND(30);
        for (unsigned i = 0; i < nr; i++) {
            char text[256];
            int n = snprintf(text, sizeof text, "priority=%u,%s", RND(5),
                             RND(3) == 0 ? "ip" : RND(2) ? "tcp" : "udp");
            unsigned nf = 1 + RND(3);
            for (unsigned f = 0; f < nf; f++) {
                unsigned which = RND(sizeof fields / sizeof fields[0]);
                unsigned v = which == 6 ? 4 * RND(3) : which == 4 || which == 5 ? 80 + RND(4)
                                                                                 : RND(4);
                if (which == 0)
                    v = 1 + RND(3);
                n += snprintf(text + n, sizeof text - (size_t)n, ",");
                n += snprintf(text + n, sizeof text - (size_t)n, fields[which], v);
            }
            snprintf(text + n, sizeof text - (size_t)n, " actions=output:%u", 1 + RND(3));
            char err[256];
            struct rule *r;
            /* A field given twice, or tp_* without tcp or udp, is refused. */
            if (rule_parse(text, NULL, NULL, &r, err, sizeof err) == 0)
                rule_table_add(t, r);
        }
        assert_true(rule_table_count(t) > 0 || nr < 3);
        for (unsigned q = 0; q < 200; q++) {
            struct flow_key k;
            memset(&k, 0, sizeof k);
            k.in_port = 1 + RND(3);
            k.dl_type = RND(8) ? 0x0800 : 0x86dd;
            k.nw_proto = RND(2) ? 6 : 17;
            k.nw_dst = htonl(0x0a000000u | RND(4) << 16 | RND(4) << 8 | RND(4));
            k.nw_src = htonl(0xc0a80000u | RND(4));
            k.tp_dst = (uint16_t)(80 + RND(4));
            k.tp_src = (uint16_t)(80 + RND(4));
            k.nw_tos = (uint8_t)(4 * RND(3));
            k.dl_src[5] = (uint8_t)RND(4);
            k.dl_dst[0] = (uint8_t)RND(2);
            struct flow_mask wc;
            memset(&wc, 0, sizeof wc);
            const struct rule *r = rule_table_lookup(t, &k, &wc);
            assert_ptr_equal(r, rule_table_lookup(t, &k, NULL));
            matched += r != NULL;
            looked++;
            for (unsigned v = 0; v < 20; v++) {
                struct flow_key k2;
                uint8_t *b2 = (uint8_t *)&k2;
                const uint8_t *b = (const uint8_t *)&k, *m = (const uint8_t *)&wc.m;
                for (size_t i = 0; i < sizeof k2; i++) {
                    /* Random bits outside wc, mostly from k's own domain. */
                    uint8_t other = RND(2) ? b[i] ^ (uint8_t)(1u << RND(8)) : (uint8_t)RND(256);
                    b2[i] = (uint8_t)((b[i] & m[i]) | (other & ~m[i]));
                }
                assert_ptr_equal(rule_table_lookup(t, &k2, NULL), r);
            }
        }
        rule_table_destroy(t);
    }
    /* Both outcomes occurred, often. */
    assert_true(matched > looked / 10 && matched < looked * 9 / 10);
#undef RND
}

static void test_table_many(void **state)
{
    (void)state;
    /* Growth past the initial capacity; order holds throughout. */
    struct rule_table *t = rule_table_create();
    char text[128];
    for (int i = 0; i < 300; i++) {
        snprintf(text, sizeof text, "priority=%d,tcp,tp_dst=%d actions=output:p%d",
                 (i * 7919) % 1000, i, i % 4);
        rule_table_add(t, mk(text));
    }
    assert_int_equal(rule_table_count(t), 300);
    for (size_t i = 1; i < 300; i++) {
        const struct rule *a = rule_table_at(t, i - 1), *b = rule_table_at(t, i);
        assert_true(a->priority > b->priority ||
                    (a->priority == b->priority && a->seq < b->seq));
    }
    for (int i = 0; i < 300; i += 37) {
        struct flow_key k = tcp_key(0, "1.1.1.1", (uint16_t)i);
        const struct rule *r = rule_table_lookup(t, &k, NULL);
        assert_non_null(r);
        assert_int_equal(r->match.tp_dst, i);
        assert_int_equal(r->priority, (i * 7919) % 1000);
    }
    rule_table_destroy(t);
}

/* The table's texts in lookup order, joined, for comparing whole tables. */
static void table_texts(const struct rule_table *t, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rule_table_count(t); i++) {
        int w = snprintf(buf + used, size - used, "%s|", rule_table_at(t, i)->text);
        assert_true(w > 0 && (size_t)w < size - used);
        used += (size_t)w;
    }
}

/* A reservation that cannot be made (its size overflows: no allocation can
 * satisfy it) fails and leaves the table as it was; one that can be made
 * changes nothing visible, and the additions it made room for succeed. */
static void test_table_reserve(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    assert_int_equal(rule_table_add(t, mk("priority=10,ip actions=output:p1")), 0);
    assert_int_equal(rule_table_add(t, mk("priority=200,tcp,tp_dst=80 actions=output:p2")), 0);
    assert_int_equal(rule_table_add(t, mk("priority=100,udp actions=drop")), 0);
    char before[512], after[512];
    table_texts(t, before, sizeof before);
    assert_string_equal(before, "priority=200,tcp,tp_dst=80 actions=output:p2|"
                                "priority=100,udp actions=drop|"
                                "priority=10,ip actions=output:p1|");
    uint64_t v = rule_table_version(t);
    struct flow_key k = tcp_key(0, "10.0.0.1", 80);

    /* count + more overflows; then the bytes of that many pointers do. */
    assert_int_equal(rule_table_reserve(t, SIZE_MAX), -1);
    assert_int_equal(rule_table_reserve(t, SIZE_MAX - 3), -1);
    assert_int_equal(rule_table_reserve(t, SIZE_MAX / sizeof(void *)), -1);
    table_texts(t, after, sizeof after);
    assert_string_equal(after, before);
    assert_int_equal(rule_table_count(t), 3);
    assert_true(rule_table_version(t) == v);
    assert_int_equal(rule_table_lookup(t, &k, NULL)->priority, 200);

    /* Room for 500 more: not a change (caches need not notice). */
    assert_int_equal(rule_table_reserve(t, 0), 0);
    assert_int_equal(rule_table_reserve(t, 500), 0);
    table_texts(t, after, sizeof after);
    assert_string_equal(after, before);
    assert_true(rule_table_version(t) == v);

    char text[128];
    for (int i = 0; i < 500; i++) {
        snprintf(text, sizeof text, "priority=%d,tcp,tp_dst=%d actions=output:p3", 300 + i,
                 1000 + i);
        assert_int_equal(rule_table_add(t, mk(text)), 0);
    }
    assert_int_equal(rule_table_count(t), 503);
    assert_true(rule_table_version(t) == v + 500);
    /* A replacement takes no room and is a change too. */
    assert_int_equal(rule_table_add(t, mk("priority=100,udp actions=output:p1")), 0);
    assert_int_equal(rule_table_count(t), 503);
    assert_true(rule_table_version(t) == v + 501);
    assert_string_equal(rule_table_at(t, 501)->text, "priority=100,udp actions=output:p1");
    rule_table_destroy(t);
}

/* Random adds (a third replace an existing rule), strict deletes, clears
 * and clones against a reference model: a list kept the way the table's
 * contract says (a replacement keeps the old rule's place; a new rule goes
 * after every rule of its priority or higher). The table, with its index
 * of rules by key, must hold exactly the model's rules in its order. */
struct model_rule {
    int prio, port, out;
};

static void model_check(const struct rule_table *t, const struct model_rule *m, size_t n)
{
    assert_int_equal(rule_table_count(t), n);
    for (size_t i = 0; i < n; i++) {
        const struct rule *r = rule_table_at(t, i);
        assert_int_equal(r->priority, m[i].prio);
        assert_int_equal(r->match.tp_dst, m[i].port);
        assert_int_equal(r->actions->a[0].u.port, m[i].out);
    }
}

static void test_table_model(void **state)
{
    (void)state;
    enum { MAX = 600 };
    static struct model_rule m[MAX];
    size_t n = 0;
    struct rule_table *t = rule_table_create();
    uint32_t x = 12345;
    const int steps = getenv("FS_TEST_QUICK") ? 3000 : 20000;
    for (int step = 0; step < steps; step++) {
        x = x * 1103515245u + 12345u;
        unsigned op = (x >> 16) % 100;
        int prio = (int)((x >> 8) % 4) * 10, port = (int)((x >> 4) % 150), out = (int)(x % 4);
        char text[128];
        snprintf(text, sizeof text, "priority=%d,tcp,tp_dst=%d actions=output:p%d", prio, port,
                 out);
        size_t at = n;
        for (size_t i = 0; i < n; i++)
            if (m[i].prio == prio && m[i].port == port)
                at = i;
        if (op < 70 && (at < n || n < MAX)) {
            rule_table_add(t, mk(text));
            if (at < n) {
                m[at].out = out;
            } else {
                size_t pos = n;
                while (pos > 0 && m[pos - 1].prio < prio)
                    pos--;
                memmove(&m[pos + 1], &m[pos], (n - pos) * sizeof *m);
                m[pos] = (struct model_rule){prio, port, out};
                n++;
            }
        } else if (op < 96) {
            struct rule *r = mk(text);
            assert_int_equal(rule_table_delete_strict(t, r), at < n);
            rule_free(r);
            if (at < n) {
                memmove(&m[at], &m[at + 1], (n - at - 1) * sizeof *m);
                n--;
            }
        } else if (op < 98) {
            struct rule_table *c = rule_table_clone(t);
            assert_non_null(c);
            rule_table_destroy(t);
            t = c;
        } else if (op == 98) {
            rule_table_clear(t);
            n = 0;
        }
        if (step % 97 == 0 || step == steps - 1)
            model_check(t, m, n);
    }
    rule_table_destroy(t);
}

/* A rule's match as flow_format_masked() writes it: the fields its mask
 * covers, with /mask for the partial ones, in key order. */
static void test_format_masked(void **state)
{
    (void)state;
    char buf[512];
    struct rule *r = parse_ok("priority=5,in_port=p2,ip,nw_dst=10.0.0.0/8,tcp,tp_dst=80,"
                              "dl_src=02:00:00:00:00:01 actions=drop");
    flow_format_masked(&r->match, &r->mask, buf, sizeof buf);
    assert_string_equal(buf, "in_port=2,dl_type=0x800,dl_src=02:00:00:00:00:01,tp_dst=80,"
                             "nw_dst=10.0.0.0/255.0.0.0,nw_proto=6");
    rule_free(r);
    r = parse_ok("ipv6,ipv6_src=2001:db8::/32,udp6,tp_src=0x100/0xff00 actions=drop");
    flow_format_masked(&r->match, &r->mask, buf, sizeof buf);
    assert_string_equal(buf, "dl_type=0x86dd,tp_src=256/65280,ipv6_src=2001:db8::/ffff:ffff::,"
                             "nw_proto=17");
    rule_free(r);
    r = parse_ok("actions=drop");
    flow_format_masked(&r->match, &r->mask, buf, sizeof buf);
    assert_string_equal(buf, "");
    /* A short buffer is cut, never overrun. */
    r->mask.m.in_port = UINT32_MAX;
    r->match.in_port = 12345;
    flow_format_masked(&r->match, &r->mask, buf, 8);
    assert_string_equal(buf, "in_port");
    rule_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_match_and_priority),
        cmocka_unit_test(test_in_port),
        cmocka_unit_test(test_dl_addrs_and_type),
        cmocka_unit_test(test_vlan),
        cmocka_unit_test(test_protocol_shorthands),
        cmocka_unit_test(test_ipv4),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_ip_fields),
        cmocka_unit_test(test_ip_frag),
        cmocka_unit_test(test_l4_fields),
        cmocka_unit_test(test_arp_fields),
        cmocka_unit_test(test_tunnel_fields),
        cmocka_unit_test(test_field_errors),
        cmocka_unit_test(test_prerequisites),
        cmocka_unit_test(test_issue_example),
        cmocka_unit_test(test_actions_each),
        cmocka_unit_test(test_actions_drop_and_strip),
        cmocka_unit_test(test_actions_errors),
        cmocka_unit_test(test_table_priority_order),
        cmocka_unit_test(test_table_replace_and_delete),
        cmocka_unit_test(test_table_action_list_outlives_rule),
        cmocka_unit_test(test_table_wildcards),
        cmocka_unit_test(test_table_wildcards_prefix),
        cmocka_unit_test(test_table_wildcards_property),
        cmocka_unit_test(test_table_many),
        cmocka_unit_test(test_table_reserve),
        cmocka_unit_test(test_table_model),
        cmocka_unit_test(test_format_masked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
