/* traffic-cfg.c: the traffic model's settings (see traffic.h): defaults,
 * one key at a time from text, and the whole-set check. */
#include "traffic.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const proto_names[SIM_PROTO_N] = {"tcp", "udp", "icmp", "arp"};

void sim_traffic_cfg_default(struct sim_traffic_cfg *c)
{
    static const uint8_t src_mac[6] = {2, 0, 0, 0, 0, 1}, dst_mac[6] = {2, 0, 0, 0, 0, 2};
    static const uint8_t vx_src_mac[6] = {2, 0, 0, 0, 1, 1}, vx_dst_mac[6] = {2, 0, 0, 0, 1, 2};
    static const uint8_t src6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1};
    static const uint8_t dst6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2};
    memset(c, 0, sizeof *c);
    c->flows = 1;
    c->popularity = SIM_POP_UNIFORM;
    c->n_sizes = 1;
    c->size[0] = 64;
    c->size_weight[0] = 1;
    c->mix.weight[SIM_PROTO_UDP] = 1;
    c->inner.weight[SIM_PROTO_UDP] = 1;
    c->vlan_lo = c->vlan_hi = 100;
    c->vni = 42;
    memcpy(c->vxlan_src_mac, vx_src_mac, 6);
    memcpy(c->vxlan_dst_mac, vx_dst_mac, 6);
    memcpy(c->vxlan_src_ip, (uint8_t[4]){192, 0, 2, 1}, 4);
    memcpy(c->vxlan_dst_ip, (uint8_t[4]){192, 0, 2, 2}, 4);
    c->bad_layer = SIM_BAD_L4;
    c->rate_unit = SIM_RATE_PPS;
    c->rate = 1e6;
    c->arrivals = SIM_ARR_CONSTANT;
    c->burst = 1;
    memcpy(c->src_mac, src_mac, 6);
    memcpy(c->dst_mac, dst_mac, 6);
    memcpy(c->src_ip4, (uint8_t[4]){10, 0, 0, 0}, 4);
    memcpy(c->dst_ip4, (uint8_t[4]){10, 1, 0, 0}, 4);
    c->src_ip4_len = c->dst_ip4_len = 16;
    memcpy(c->src_ip6, src6, 16);
    memcpy(c->dst_ip6, dst6, 16);
    c->src_ip6_len = c->dst_ip6_len = 64;
    c->sport_lo = c->dport_lo = 1024;
    c->sport_hi = c->dport_hi = 65535;
    c->ttl = 64;
}

/* ---- value parsers: each returns 0, or -1 with the reason in err ---- */

/* A whole string as a finite number in [lo, hi]. */
static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || v > hi || isspace((unsigned char)*s))
        return -1;
    *out = v;
    return 0;
}

/* A whole string as a decimal integer in [lo, hi]. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* "N" or "N-M" with lo <= N <= M <= hi. */
static int parse_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *a, uint64_t *b)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    char *dash = strchr(buf, '-');
    if (dash)
        *dash = '\0';
    if (parse_u64(buf, lo, hi, a))
        return -1;
    *b = *a;
    if (dash && (parse_u64(dash + 1, lo, hi, b) || *b < *a))
        return -1;
    return 0;
}

/* xx:xx:xx:xx:xx:xx, exactly (glibc's ether_aton accepts trailing text). */
static int parse_mac(const char *s, uint8_t mac[6])
{
    uint8_t m[6];
    for (int i = 0; i < 6; i++, s += 3) {
        if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) ||
            s[2] != (i < 5 ? ':' : '\0'))
            return -1;
        char hex[3] = {s[0], s[1], '\0'};
        m[i] = (uint8_t)strtoul(hex, NULL, 16);
    }
    memcpy(mac, m, 6);
    return 0;
}

/* "ADDR[/LEN]" of family af (AF_INET: 4 bytes, AF_INET6: 16); host bits
 * beyond the prefix are cleared. */
static int parse_prefix(const char *s, int af, uint8_t *addr, uint8_t *len)
{
    char buf[64];
    unsigned bytes = af == AF_INET ? 4 : 16;
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    uint64_t plen = bytes * 8;
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = '\0';
        if (parse_u64(slash + 1, 0, bytes * 8, &plen))
            return -1;
    }
    uint8_t a[16];
    if (inet_pton(af, buf, a) != 1)
        return -1;
    for (unsigned i = 0; i < bytes; i++) {
        unsigned keep = plen >= (i + 1) * 8 ? 8 : plen > i * 8 ? (unsigned)(plen - i * 8) : 0;
        a[i] &= (uint8_t)(0xff00u >> keep);
    }
    memcpy(addr, a, bytes);
    *len = (uint8_t)plen;
    return 0;
}

/* "tcp:W,udp:W,..." or a bare protocol name. */
static int parse_mix(const char *s, double w[SIM_PROTO_N], char *err, size_t errlen,
                     const char *key)
{
    char buf[256];
    double out[SIM_PROTO_N] = {0};
    bool seen[SIM_PROTO_N] = {false};
    if (strlen(s) >= sizeof buf || !*s) {
        snprintf(err, errlen, "%s: expected PROTO:WEIGHT,... with tcp, udp, icmp, arp", key);
        return -1;
    }
    strcpy(buf, s);
    double sum = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *colon = strchr(tok, ':');
        if (colon)
            *colon = '\0';
        char *e = tok + strlen(tok);
        while (e > tok && isspace((unsigned char)e[-1]))
            *--e = '\0';
        int p = -1;
        for (int i = 0; i < SIM_PROTO_N; i++)
            if (strcasecmp(tok, proto_names[i]) == 0)
                p = i;
        if (p < 0) {
            snprintf(err, errlen, "%s: unknown protocol '%s' (tcp, udp, icmp, arp)", key, tok);
            return -1;
        }
        if (seen[p]) {
            snprintf(err, errlen, "%s: '%s' given twice", key, tok);
            return -1;
        }
        seen[p] = true;
        double v = 1;
        if (colon && parse_double(colon + 1, 0, 1e9, &v)) {
            snprintf(err, errlen, "%s: weight '%s' of %s is not a number >= 0", key, colon + 1,
                     tok);
            return -1;
        }
        out[p] = v;
        sum += v;
    }
    if (!(sum > 0)) {
        snprintf(err, errlen, "%s: the weights add up to 0", key);
        return -1;
    }
    memcpy(w, out, sizeof out);
    return 0;
}

static int parse_sizes(const char *s, struct sim_traffic_cfg *c, char *err, size_t errlen)
{
    const char *what = "frame-size: expected N (64..9216, bytes with FCS), imix, or N:WEIGHT,...";
    uint64_t n;
    if (strcasecmp(s, "imix") == 0)
        s = "64:7,594:4,1518:1";
    else if (parse_u64(s, 0, UINT64_MAX, &n) == 0) {
        if (n < SIM_TRAFFIC_SIZE_MIN || n > SIM_TRAFFIC_SIZE_MAX) {
            snprintf(err, errlen,
                     "frame-size: %s is outside 64..9216 (bytes on the wire, FCS included)", s);
            return -1;
        }
        c->n_sizes = 1;
        c->size[0] = (uint16_t)n;
        c->size_weight[0] = 1;
        return 0;
    }
    char buf[512];
    if (strlen(s) >= sizeof buf || !strchr(s, ':')) {
        snprintf(err, errlen, "%s, not '%s'", what, s);
        return -1;
    }
    strcpy(buf, s);
    unsigned k = 0;
    uint16_t size[SIM_TRAFFIC_SIZES_MAX];
    double weight[SIM_TRAFFIC_SIZES_MAX], sum = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        double w;
        if (!colon) {
            snprintf(err, errlen, "%s: '%s' has no weight", what, tok);
            return -1;
        }
        *colon = '\0';
        if (parse_u64(tok, SIM_TRAFFIC_SIZE_MIN, SIM_TRAFFIC_SIZE_MAX, &n)) {
            snprintf(err, errlen, "frame-size: size '%s' is not in 64..9216", tok);
            return -1;
        }
        if (parse_double(colon + 1, 0, 1e9, &w)) {
            snprintf(err, errlen, "frame-size: weight '%s' of %s is not a number >= 0", colon + 1,
                     tok);
            return -1;
        }
        if (k == SIM_TRAFFIC_SIZES_MAX) {
            snprintf(err, errlen, "frame-size: more than %d sizes", SIM_TRAFFIC_SIZES_MAX);
            return -1;
        }
        size[k] = (uint16_t)n;
        weight[k++] = w;
        sum += w;
    }
    if (!(sum > 0)) {
        snprintf(err, errlen, "frame-size: the weights add up to 0");
        return -1;
    }
    c->n_sizes = k;
    memcpy(c->size, size, k * sizeof size[0]);
    memcpy(c->size_weight, weight, k * sizeof weight[0]);
    return 0;
}

static int parse_rate(const char *s, struct sim_traffic_cfg *c, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        enum sim_rate_unit kind;
        double mult;
    } units[] = {
        {"pps", SIM_RATE_PPS, 1},       {"kpps", SIM_RATE_PPS, 1e3},
        {"mpps", SIM_RATE_PPS, 1e6},    {"bps", SIM_RATE_BPS, 1},
        {"kbps", SIM_RATE_BPS, 1e3},    {"mbps", SIM_RATE_BPS, 1e6},
        {"gbps", SIM_RATE_BPS, 1e9},    {"%", SIM_RATE_LINE_PCT, 1},
    };
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    const char *u = end;
    while (isspace((unsigned char)*u))
        u++;
    if (end != s && !errno && isfinite(v) && !isspace((unsigned char)*s)) {
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (strcasecmp(u, units[i].unit) == 0) {
                if (!(v > 0)) {
                    snprintf(err, errlen, "rate: %s is not above 0", s);
                    return -1;
                }
                c->rate_unit = units[i].kind;
                c->rate = v * units[i].mult;
                return 0;
            }
        }
    }
    snprintf(err, errlen,
             "rate: expected a number and a unit (pps, kpps, mpps, bps, kbps, mbps, gbps, "
             "or %% of the line rate), not '%s'", s);
    return -1;
}

static int parse_share(const char *key, const char *v, double *out, char *err, size_t errlen)
{
    if (parse_double(v, 0, 1, out)) {
        snprintf(err, errlen, "%s: '%s' is not a share between 0 and 1", key, v);
        return -1;
    }
    return 0;
}

static int parse_bool(const char *key, const char *v, bool *out, char *err, size_t errlen)
{
    if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1"))
        *out = true;
    else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0"))
        *out = false;
    else {
        snprintf(err, errlen, "%s: '%s' is not true or false", key, v);
        return -1;
    }
    return 0;
}

/* ---- keys ---- */

static const char *const known_keys =
    "flows, popularity, churn, frame-size, proto, ipv6-share, vlan-share, vlan-id, vlan-pcp, "
    "vxlan-share, vxlan-vni, vxlan-src-ip, vxlan-dst-ip, vxlan-src-mac, vxlan-dst-mac, "
    "vxlan-udp-csum, vxlan-inner-proto, vxlan-inner-ipv6-share, bad-csum-share, bad-csum-layer, "
    "rate, arrivals, src-mac, dst-mac, src-ip, dst-ip, src-ip6, dst-ip6, src-port, dst-port, ttl";

/* Keys whose value is a share: where it goes. */
static double *share_field(struct sim_traffic_cfg *c, const char *key)
{
    if (!strcmp(key, "ipv6-share"))
        return &c->mix.ipv6_share;
    if (!strcmp(key, "vlan-share"))
        return &c->vlan_share;
    if (!strcmp(key, "vxlan-share"))
        return &c->vxlan_share;
    if (!strcmp(key, "vxlan-inner-ipv6-share"))
        return &c->inner.ipv6_share;
    if (!strcmp(key, "bad-csum-share"))
        return &c->bad_share;
    return NULL;
}

/* Sets key in c (a scratch copy); -1 with the reason. */
static int set_key(struct sim_traffic_cfg *c, const char *k, const char *v, char *err,
                   size_t errlen)
{
    uint64_t a, b;
    double d;
    double *share = share_field(c, k);
    if (share)
        return parse_share(k, v, share, err, errlen);

    if (!strcmp(k, "flows")) {
        if (parse_u64(v, 1, SIM_TRAFFIC_FLOWS_MAX, &a))
            goto bad_flows;
        c->flows = (uint32_t)a;
    } else if (!strcmp(k, "popularity")) {
        if (!strcasecmp(v, "uniform")) {
            c->popularity = SIM_POP_UNIFORM;
        } else if (!strncasecmp(v, "zipf:", 5) && !parse_double(v + 5, 0, 100, &d)) {
            c->popularity = SIM_POP_ZIPF;
            c->zipf_s = d;
        } else {
            snprintf(err, errlen,
                     "popularity: expected uniform or zipf:EXPONENT (0..100), not '%s'", v);
            return -1;
        }
    } else if (!strcmp(k, "churn")) {
        /* Bounded: each new flow costs the run time, and 1e9 a second is
         * already one per nanosecond of virtual time. */
        if (parse_double(v, 0, SIM_TRAFFIC_CHURN_MAX, &d)) {
            snprintf(err, errlen, "churn: '%s' is not a number of new flows per second "
                     "(0..1e9)", v);
            return -1;
        }
        c->churn = d;
    } else if (!strcmp(k, "frame-size")) {
        return parse_sizes(v, c, err, errlen);
    } else if (!strcmp(k, "proto")) {
        return parse_mix(v, c->mix.weight, err, errlen, k);
    } else if (!strcmp(k, "vxlan-inner-proto")) {
        return parse_mix(v, c->inner.weight, err, errlen, k);
    } else if (!strcmp(k, "vlan-id")) {
        if (parse_range(v, 0, 4095, &a, &b)) {
            snprintf(err, errlen, "vlan-id: expected N or N-M within 0..4095, not '%s'", v);
            return -1;
        }
        c->vlan_lo = (uint16_t)a;
        c->vlan_hi = (uint16_t)b;
    } else if (!strcmp(k, "vlan-pcp")) {
        if (parse_u64(v, 0, 7, &a)) {
            snprintf(err, errlen, "vlan-pcp: '%s' is not in 0..7", v);
            return -1;
        }
        c->vlan_pcp = (uint8_t)a;
    } else if (!strcmp(k, "vxlan-vni")) {
        if (parse_u64(v, 0, 0xffffff, &a)) {
            snprintf(err, errlen, "vxlan-vni: '%s' is not in 0..16777215", v);
            return -1;
        }
        c->vni = (uint32_t)a;
    } else if (!strcmp(k, "vxlan-src-ip") || !strcmp(k, "vxlan-dst-ip")) {
        uint8_t len;
        uint8_t *dst = k[6] == 's' ? c->vxlan_src_ip : c->vxlan_dst_ip;
        if (parse_prefix(v, AF_INET, dst, &len) || len != 32) {
            snprintf(err, errlen, "%s: '%s' is not an IPv4 address", k, v);
            return -1;
        }
    } else if (!strcmp(k, "vxlan-src-mac") || !strcmp(k, "vxlan-dst-mac") ||
               !strcmp(k, "src-mac") || !strcmp(k, "dst-mac")) {
        uint8_t *dst = !strcmp(k, "vxlan-src-mac") ? c->vxlan_src_mac
                       : !strcmp(k, "vxlan-dst-mac") ? c->vxlan_dst_mac
                       : !strcmp(k, "src-mac")       ? c->src_mac
                                                     : c->dst_mac;
        if (parse_mac(v, dst)) {
            snprintf(err, errlen, "%s: '%s' is not a MAC address (xx:xx:xx:xx:xx:xx)", k, v);
            return -1;
        }
    } else if (!strcmp(k, "vxlan-udp-csum")) {
        return parse_bool(k, v, &c->vxlan_udp_csum, err, errlen);
    } else if (!strcmp(k, "bad-csum-layer")) {
        static const char *const names[] = {NULL, "l4", "ip", "outer-ip", "outer-udp"};
        for (int i = SIM_BAD_L4; i <= SIM_BAD_OUTER_UDP; i++) {
            if (!strcasecmp(v, names[i])) {
                c->bad_layer = (enum sim_bad_layer)i;
                return 0;
            }
        }
        snprintf(err, errlen, "bad-csum-layer: expected l4, ip, outer-ip or outer-udp, not '%s'",
                 v);
        return -1;
    } else if (!strcmp(k, "rate")) {
        return parse_rate(v, c, err, errlen);
    } else if (!strcmp(k, "arrivals")) {
        if (!strcasecmp(v, "constant")) {
            c->arrivals = SIM_ARR_CONSTANT;
        } else if (!strcasecmp(v, "poisson")) {
            c->arrivals = SIM_ARR_POISSON;
        } else if (!strncasecmp(v, "bursty:", 7) && !parse_u64(v + 7, 1, 1000000, &a)) {
            c->arrivals = SIM_ARR_BURSTY;
            c->burst = (uint32_t)a;
        } else {
            snprintf(err, errlen,
                     "arrivals: expected constant, poisson or bursty:FRAMES (1..1000000), not '%s'",
                     v);
            return -1;
        }
    } else if (!strcmp(k, "src-ip") || !strcmp(k, "dst-ip")) {
        bool src = k[0] == 's';
        if (parse_prefix(v, AF_INET, src ? c->src_ip4 : c->dst_ip4,
                         src ? &c->src_ip4_len : &c->dst_ip4_len)) {
            snprintf(err, errlen, "%s: '%s' is not an IPv4 address or prefix (a.b.c.d[/len])",
                     k, v);
            return -1;
        }
    } else if (!strcmp(k, "src-ip6") || !strcmp(k, "dst-ip6")) {
        bool src = k[0] == 's';
        if (parse_prefix(v, AF_INET6, src ? c->src_ip6 : c->dst_ip6,
                         src ? &c->src_ip6_len : &c->dst_ip6_len)) {
            snprintf(err, errlen, "%s: '%s' is not an IPv6 address or prefix (addr[/len])", k, v);
            return -1;
        }
    } else if (!strcmp(k, "src-port") || !strcmp(k, "dst-port")) {
        if (parse_range(v, 0, 65535, &a, &b)) {
            snprintf(err, errlen, "%s: expected N or N-M within 0..65535, not '%s'", k, v);
            return -1;
        }
        if (k[0] == 's') {
            c->sport_lo = (uint16_t)a;
            c->sport_hi = (uint16_t)b;
        } else {
            c->dport_lo = (uint16_t)a;
            c->dport_hi = (uint16_t)b;
        }
    } else if (!strcmp(k, "ttl")) {
        if (parse_u64(v, 1, 255, &a)) {
            snprintf(err, errlen, "ttl: '%s' is not in 1..255", v);
            return -1;
        }
        c->ttl = (uint8_t)a;
    } else {
        snprintf(err, errlen, "unknown key '%s' (known: %s)", k, known_keys);
        return -1;
    }
    return 0;

bad_flows:
    snprintf(err, errlen, "flows: '%s' is not a number of flows in 1..%u", v,
             SIM_TRAFFIC_FLOWS_MAX);
    return -1;
}

int sim_traffic_cfg_set(struct sim_traffic_cfg *cfg, const char *key, const char *value,
                        char *err, size_t errlen)
{
    struct sim_traffic_cfg c = *cfg;
    if (set_key(&c, key, value, err, errlen))
        return -1;
    *cfg = c;
    return 0;
}

static double mix_sum(const struct sim_traffic_mix *m)
{
    double s = 0;
    for (int i = 0; i < SIM_PROTO_N; i++)
        s += m->weight[i];
    return s;
}

int sim_traffic_cfg_validate(const struct sim_traffic_cfg *c, char *err, size_t errlen)
{
    if (c->flows < 1 || c->flows > SIM_TRAFFIC_FLOWS_MAX) {
        snprintf(err, errlen, "flows: %u is not in 1..%u", c->flows, SIM_TRAFFIC_FLOWS_MAX);
        return -1;
    }
    if (!(mix_sum(&c->mix) > 0) || (c->vxlan_share > 0 && !(mix_sum(&c->inner) > 0))) {
        snprintf(err, errlen, "%s: the weights add up to 0",
                 mix_sum(&c->mix) > 0 ? "vxlan-inner-proto" : "proto");
        return -1;
    }
    if (c->n_sizes < 1 || c->n_sizes > SIM_TRAFFIC_SIZES_MAX) {
        snprintf(err, errlen, "frame-size: no size given");
        return -1;
    }
    if (c->vlan_lo > c->vlan_hi || c->vlan_hi > 4095 || c->vlan_pcp > 7) {
        snprintf(err, errlen, "vlan-id: %u-%u is not a range within 0..4095", c->vlan_lo,
                 c->vlan_hi);
        return -1;
    }
    if (c->sport_lo > c->sport_hi || c->dport_lo > c->dport_hi) {
        snprintf(err, errlen, "%s: the range is empty",
                 c->sport_lo > c->sport_hi ? "src-port" : "dst-port");
        return -1;
    }
    if ((c->bad_layer == SIM_BAD_OUTER_IP || c->bad_layer == SIM_BAD_OUTER_UDP) &&
        c->bad_share > 0 && !(c->vxlan_share > 0)) {
        snprintf(err, errlen, "bad-csum-layer: %s needs VXLAN packets (vxlan-share > 0)",
                 c->bad_layer == SIM_BAD_OUTER_IP ? "outer-ip" : "outer-udp");
        return -1;
    }
    if (!(c->rate > 0) || !isfinite(c->rate)) {
        snprintf(err, errlen, "rate: must be above 0");
        return -1;
    }
    if (c->arrivals == SIM_ARR_BURSTY && c->burst < 1) {
        snprintf(err, errlen, "arrivals: a burst has at least one frame");
        return -1;
    }
    if (c->ttl < 1) {
        snprintf(err, errlen, "ttl: must be in 1..255");
        return -1;
    }
    return 0;
}

/* The mean bits on the wire per packet (sizes weighted, with preamble and
 * gap; VXLAN adds its outer headers), for the offered rate in bits/s. */
static double traffic_cfg_wire_bits(const struct sim_traffic_cfg *t)
{
    double w = 0, sum = 0;
    for (unsigned i = 0; i < t->n_sizes; i++) {
        w += t->size_weight[i];
        sum += t->size_weight[i] * (double)t->size[i];
    }
    double mean = w > 0 ? sum / w : 64;
    return (mean + 20 + t->vxlan_share * 50) * 8;
}

double sim_traffic_cfg_pps(const struct sim_traffic_cfg *t, uint64_t line_bps)
{
    return t->rate_unit == SIM_RATE_PPS ? t->rate
                                        : sim_traffic_cfg_wire_bps(t, line_bps) /
                                              traffic_cfg_wire_bits(t);
}

double sim_traffic_cfg_wire_bps(const struct sim_traffic_cfg *t, uint64_t line_bps)
{
    switch (t->rate_unit) {
    case SIM_RATE_PPS:
        return t->rate * traffic_cfg_wire_bits(t);
    case SIM_RATE_BPS:
        return t->rate;
    case SIM_RATE_LINE_PCT:
        return t->rate / 100.0 * (double)line_bps;
    }
    return 0;
}
