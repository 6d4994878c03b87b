/* rules.c: the ovs-ofctl rule syntax and the rule table (the slow path).
 *
 * Parsing follows ovs-ofctl(8): "field=value" pairs and protocol shorthands
 * separated by commas and/or blanks, then "actions=" and a comma-separated
 * action list. Prerequisites (tp_dst needs tcp/udp/sctp, ...) are checked
 * once the whole match is known, so their order in the text does not matter.
 *
 * The table is a vector sorted by priority (descending) then insertion
 * sequence (ascending); a lookup is a linear scan. Caches sit in front of
 * it, so clarity wins over speed here, but a lookup never allocates. */
#include "rules.h"
#include "util.h"
#include "proto.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VLAN_PCP_MASK 0xe000u
#define VLAN_NONE     0xffffu /* dl_vlan=0xffff: "no 802.1Q tag" (OFP10_VLAN_NONE) */

/* ------------------------------------------------------------------------ */
/* Errors and small value parsers                                           */

static bool is_delim(char c)
{
    return c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* An unsigned integer, decimal or 0x-hex (no sign, no octal, no blanks),
 * at most max. */
static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    unsigned base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s)
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            return false;
        if (v > (UINT64_MAX - d) / base)
            return false;
        v = v * base + d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* xx:xx:xx:xx:xx:xx, one or two hex digits per byte. */
static bool parse_mac(const char *s, uint8_t mac[6])
{
    for (int i = 0; i < 6; i++) {
        unsigned v = 0, nd = 0;
        for (; nd < 2; nd++, s++) {
            unsigned d;
            if (*s >= '0' && *s <= '9')
                d = (unsigned)(*s - '0');
            else if (*s >= 'a' && *s <= 'f')
                d = (unsigned)(*s - 'a' + 10);
            else if (*s >= 'A' && *s <= 'F')
                d = (unsigned)(*s - 'A' + 10);
            else
                break;
            v = v * 16 + d;
        }
        if (!nd)
            return false;
        mac[i] = (uint8_t)v;
        if (i < 5 && *s++ != ':')
            return false;
    }
    return *s == '\0';
}

/* Splits "value/mask" into bounded copies. *has_mask tells whether a '/'
 * was present. False if a part does not fit (no valid value is that long). */
#define RULE_PART_MAX 64
static bool split_mask(const char *v, char val[RULE_PART_MAX], char mask[RULE_PART_MAX],
                       bool *has_mask)
{
    const char *slash = strchr(v, '/');
    size_t n = slash ? (size_t)(slash - v) : strlen(v);
    if (n >= RULE_PART_MAX)
        return false;
    memcpy(val, v, n);
    val[n] = '\0';
    *has_mask = slash != NULL;
    mask[0] = '\0';
    if (slash) {
        size_t m = strlen(slash + 1);
        if (m >= RULE_PART_MAX)
            return false;
        memcpy(mask, slash + 1, m + 1);
    }
    return true;
}

/* Sets the first 'bits' bits of the n-byte big-endian mask m. */
static void prefix_mask(uint8_t *m, size_t n, unsigned bits)
{
    for (size_t i = 0; i < n; i++) {
        unsigned b = bits >= 8 ? 8 : bits;
        m[i] = (uint8_t)(b ? 0xffu << (8 - b) : 0);
        bits -= b;
    }
}

/* IPv4 (network order) with an optional /prefix or /dotted-mask. */
static bool parse_ip4_masked(const char *v, uint32_t *addr, uint32_t *mask)
{
    char a[RULE_PART_MAX], m[RULE_PART_MAX];
    bool has_mask;
    if (!split_mask(v, a, m, &has_mask) || inet_pton(AF_INET, a, addr) != 1)
        return false;
    if (!has_mask) {
        *mask = UINT32_MAX;
    } else if (strchr(m, '.')) {
        if (inet_pton(AF_INET, m, mask) != 1)
            return false;
    } else {
        uint64_t bits;
        if (!parse_uint(m, 32, &bits) || !strncmp(m, "0x", 2))
            return false;
        prefix_mask((uint8_t *)mask, 4, (unsigned)bits);
    }
    return true;
}

/* IPv6 with an optional /prefix or /address-mask. */
static bool parse_ip6_masked(const char *v, uint8_t addr[16], uint8_t mask[16])
{
    char a[RULE_PART_MAX], m[RULE_PART_MAX];
    bool has_mask;
    if (!split_mask(v, a, m, &has_mask) || inet_pton(AF_INET6, a, addr) != 1)
        return false;
    if (!has_mask) {
        memset(mask, 0xff, 16);
    } else if (strchr(m, ':')) {
        if (inet_pton(AF_INET6, m, mask) != 1)
            return false;
    } else {
        uint64_t bits;
        if (!parse_uint(m, 128, &bits) || !strncmp(m, "0x", 2))
            return false;
        prefix_mask(mask, 16, (unsigned)bits);
    }
    return true;
}

/* A tunnel endpoint: IPv6, or IPv4 stored IPv4-mapped (::ffff:a.b.c.d), with
 * an optional prefix (an IPv4 prefix covers the last 4 bytes; the mapping
 * bytes are always matched, so an IPv4 rule never matches an IPv6 tunnel). */
static bool parse_tun_ip(const char *v, uint8_t addr[16], uint8_t mask[16])
{
    if (strchr(v, ':'))
        return parse_ip6_masked(v, addr, mask);
    uint32_t a4, m4;
    if (!parse_ip4_masked(v, &a4, &m4))
        return false;
    memset(addr, 0, 10);
    addr[10] = addr[11] = 0xff;
    memcpy(addr + 12, &a4, 4);
    memset(mask, 0xff, 12);
    memcpy(mask + 12, &m4, 4);
    return true;
}

/* "V" or "V/M" for an unsigned field of at most max. */
static bool parse_uint_masked(const char *v, uint64_t max, bool maskable, uint64_t *val,
                              uint64_t *mask)
{
    char a[RULE_PART_MAX], m[RULE_PART_MAX];
    bool has_mask;
    if (!split_mask(v, a, m, &has_mask) || (has_mask && !maskable))
        return false;
    if (!parse_uint(a, max, val))
        return false;
    *mask = max;
    if (has_mask && !parse_uint(m, max, mask))
        return false;
    return true;
}

static bool parse_mac_masked(const char *v, uint8_t mac[6], uint8_t mask[6])
{
    char a[RULE_PART_MAX], m[RULE_PART_MAX];
    bool has_mask;
    if (!split_mask(v, a, m, &has_mask) || !parse_mac(a, mac))
        return false;
    if (!has_mask) {
        memset(mask, 0xff, 6);
        return true;
    }
    return parse_mac(m, mask);
}

/* ------------------------------------------------------------------------ */
/* Match fields                                                             */

/* Prerequisites, checked after the whole match is parsed. */
enum rule_prereq {
    PRQ_NONE,
    PRQ_IP4_OR_ARP, /* nw_src, nw_dst */
    PRQ_ARP,
    PRQ_IP6,
    PRQ_IP_ANY,     /* ip or ipv6 */
    PRQ_L4,         /* tcp, udp or sctp over ip or ipv6 */
    PRQ_TCP,
    PRQ_ICMP4,
    PRQ_ICMP6,
};

/* Fields writing the same key bits share a slot: a second write is a
 * duplicate (same name) or a conflict (different names). */
enum rule_slot {
    SLOT_PRIORITY, SLOT_IN_PORT, SLOT_DL_SRC, SLOT_DL_DST, SLOT_DL_TYPE,
    SLOT_DL_VLAN, SLOT_DL_VLAN_PCP, SLOT_VLAN_TCI, SLOT_NW_SRC, SLOT_NW_DST,
    SLOT_IPV6_SRC, SLOT_IPV6_DST, SLOT_IPV6_LABEL, SLOT_NW_PROTO, SLOT_NW_DSCP,
    SLOT_NW_ECN, SLOT_NW_TTL, SLOT_IP_FRAG, SLOT_TP_SRC, SLOT_TP_DST,
    SLOT_TCP_FLAGS, SLOT_ARP_SHA, SLOT_ARP_THA, SLOT_TUN_ID, SLOT_TUN_SRC,
    SLOT_TUN_DST, SLOT_N
};

enum rule_kind {
    FK_PRIORITY, FK_IN_PORT, FK_MAC, FK_DL_TYPE, FK_DL_VLAN, FK_DL_VLAN_PCP,
    FK_VLAN_TCI, FK_IP4, FK_IP6, FK_IPV6_LABEL, FK_NW_PROTO, FK_NW_TOS,
    FK_IP_DSCP, FK_NW_ECN, FK_NW_TTL, FK_IP_FRAG, FK_U16, FK_ICMP, FK_TCP_FLAGS,
    FK_TUN_ID, FK_TUN_IP,
};

struct rule_field {
    const char *name;
    enum rule_kind kind;
    enum rule_slot slot;
    enum rule_prereq prereq;
    size_t off; /* offset of the key field, for the kinds that use it */
};

#define KOFF(f) offsetof(struct flow_key, f)

static const struct rule_field rule_fields[] = {
    {"priority", FK_PRIORITY, SLOT_PRIORITY, PRQ_NONE, 0},
    {"in_port", FK_IN_PORT, SLOT_IN_PORT, PRQ_NONE, 0},
    {"dl_src", FK_MAC, SLOT_DL_SRC, PRQ_NONE, KOFF(dl_src)},
    {"dl_dst", FK_MAC, SLOT_DL_DST, PRQ_NONE, KOFF(dl_dst)},
    {"dl_type", FK_DL_TYPE, SLOT_DL_TYPE, PRQ_NONE, 0},
    {"dl_vlan", FK_DL_VLAN, SLOT_DL_VLAN, PRQ_NONE, 0},
    {"dl_vlan_pcp", FK_DL_VLAN_PCP, SLOT_DL_VLAN_PCP, PRQ_NONE, 0},
    {"vlan_tci", FK_VLAN_TCI, SLOT_VLAN_TCI, PRQ_NONE, 0},
    {"nw_src", FK_IP4, SLOT_NW_SRC, PRQ_IP4_OR_ARP, KOFF(nw_src)},
    {"nw_dst", FK_IP4, SLOT_NW_DST, PRQ_IP4_OR_ARP, KOFF(nw_dst)},
    {"arp_spa", FK_IP4, SLOT_NW_SRC, PRQ_ARP, KOFF(nw_src)},
    {"arp_tpa", FK_IP4, SLOT_NW_DST, PRQ_ARP, KOFF(nw_dst)},
    {"ipv6_src", FK_IP6, SLOT_IPV6_SRC, PRQ_IP6, KOFF(ipv6_src)},
    {"ipv6_dst", FK_IP6, SLOT_IPV6_DST, PRQ_IP6, KOFF(ipv6_dst)},
    {"ipv6_label", FK_IPV6_LABEL, SLOT_IPV6_LABEL, PRQ_IP6, 0},
    {"nw_proto", FK_NW_PROTO, SLOT_NW_PROTO, PRQ_IP_ANY, 0},
    {"nw_tos", FK_NW_TOS, SLOT_NW_DSCP, PRQ_IP_ANY, 0},
    {"ip_dscp", FK_IP_DSCP, SLOT_NW_DSCP, PRQ_IP_ANY, 0},
    {"nw_ecn", FK_NW_ECN, SLOT_NW_ECN, PRQ_IP_ANY, 0},
    {"ip_ecn", FK_NW_ECN, SLOT_NW_ECN, PRQ_IP_ANY, 0},
    {"nw_ttl", FK_NW_TTL, SLOT_NW_TTL, PRQ_IP_ANY, 0},
    {"ip_frag", FK_IP_FRAG, SLOT_IP_FRAG, PRQ_IP_ANY, 0},
    {"tp_src", FK_U16, SLOT_TP_SRC, PRQ_L4, KOFF(tp_src)},
    {"tp_dst", FK_U16, SLOT_TP_DST, PRQ_L4, KOFF(tp_dst)},
    {"icmp_type", FK_ICMP, SLOT_TP_SRC, PRQ_ICMP4, KOFF(tp_src)},
    {"icmp_code", FK_ICMP, SLOT_TP_DST, PRQ_ICMP4, KOFF(tp_dst)},
    {"icmpv6_type", FK_ICMP, SLOT_TP_SRC, PRQ_ICMP6, KOFF(tp_src)},
    {"icmpv6_code", FK_ICMP, SLOT_TP_DST, PRQ_ICMP6, KOFF(tp_dst)},
    {"tcp_flags", FK_TCP_FLAGS, SLOT_TCP_FLAGS, PRQ_TCP, 0},
    {"arp_op", FK_NW_PROTO, SLOT_NW_PROTO, PRQ_ARP, 0},
    {"arp_sha", FK_MAC, SLOT_ARP_SHA, PRQ_ARP, KOFF(arp_sha)},
    {"arp_tha", FK_MAC, SLOT_ARP_THA, PRQ_ARP, KOFF(arp_tha)},
    {"tun_id", FK_TUN_ID, SLOT_TUN_ID, PRQ_NONE, 0},
    {"tun_src", FK_TUN_IP, SLOT_TUN_SRC, PRQ_NONE, KOFF(tun_src)},
    {"tun_dst", FK_TUN_IP, SLOT_TUN_DST, PRQ_NONE, KOFF(tun_dst)},
};

#define N_RULE_FIELDS (sizeof rule_fields / sizeof rule_fields[0])

/* Protocol shorthands: set dl_type and (if non-zero) nw_proto exactly. */
static const struct {
    const char *name;
    uint16_t dl_type;
    uint8_t nw_proto;
} rule_protos[] = {
    {"ip", ETH_TYPE_IPV4, 0},
    {"ipv6", ETH_TYPE_IPV6, 0},
    {"arp", ETH_TYPE_ARP, 0},
    {"icmp", ETH_TYPE_IPV4, IP_PROTO_ICMP},
    {"icmp6", ETH_TYPE_IPV6, IP_PROTO_ICMPV6},
    {"tcp", ETH_TYPE_IPV4, IP_PROTO_TCP},
    {"udp", ETH_TYPE_IPV4, IP_PROTO_UDP},
    {"sctp", ETH_TYPE_IPV4, IP_PROTO_SCTP},
    {"tcp6", ETH_TYPE_IPV6, IP_PROTO_TCP},
    {"udp6", ETH_TYPE_IPV6, IP_PROTO_UDP},
    {"sctp6", ETH_TYPE_IPV6, IP_PROTO_SCTP},
};

#define N_RULE_PROTOS (sizeof rule_protos / sizeof rule_protos[0])

/* State of one rule_parse() call. */
struct rule_parser {
    struct rule *r;
    rule_port_lookup_fn *lookup;
    void *aux;
    char *err;
    size_t errlen;
    const char *slot_by[SLOT_N];  /* name of the field that set each slot */
    const char *dl_type_by;       /* what fixed dl_type (field or shorthand) */
    const char *nw_proto_by;      /* what fixed nw_proto */
    bool vlan_none;               /* dl_vlan=0xffff */
    const struct rule_field *used[N_RULE_FIELDS * 2]; /* fields, in text order */
    size_t n_used;
};

/* Fixes dl_type (exact), unless something else already fixed another value. */
static int rp_set_dl_type(struct rule_parser *p, uint16_t v, const char *by)
{
    struct rule *r = p->r;
    if (p->dl_type_by && r->match.dl_type != v) {
        fs_errf(p->err, p->errlen, "'%s' conflicts with '%s'", by, p->dl_type_by);
        return -1;
    }
    if (!p->dl_type_by)
        p->dl_type_by = by;
    r->match.dl_type = v;
    r->mask.m.dl_type = 0xffff;
    return 0;
}

static int rp_set_nw_proto(struct rule_parser *p, uint8_t v, const char *by)
{
    struct rule *r = p->r;
    if (p->nw_proto_by && r->match.nw_proto != v) {
        fs_errf(p->err, p->errlen, "'%s' conflicts with '%s'", by, p->nw_proto_by);
        return -1;
    }
    if (!p->nw_proto_by)
        p->nw_proto_by = by;
    r->match.nw_proto = v;
    r->mask.m.nw_proto = 0xff;
    return 0;
}

static int rp_port(struct rule_parser *p, const char *name, uint64_t max, uint64_t *out)
{
    long port = -1;
    uint64_t n;
    if (p->lookup)
        port = p->lookup(p->aux, name);
    else if (parse_uint(name, max, &n) && strncmp(name, "0x", 2))
        port = (long)n;
    if (port < 0 || (uint64_t)port > max) {
        fs_errf(p->err, p->errlen, "unknown port '%s'", name);
        return -1;
    }
    *out = (uint64_t)port;
    return 0;
}

/* Parses 'value' of field f into the rule. */
static int rp_field(struct rule_parser *p, const struct rule_field *f, const char *value)
{
    struct rule *r = p->r;
    struct flow_key *k = &r->match, *m = &r->mask.m;
    uint8_t *kb = (uint8_t *)k + f->off, *mb = (uint8_t *)m + f->off;
    uint64_t v, vm;
    bool ok = true;

    switch (f->kind) {
    case FK_PRIORITY:
        if ((ok = parse_uint(value, 65535, &v)))
            r->priority = (int)v;
        break;
    case FK_IN_PORT:
        if (rp_port(p, value, UINT32_MAX, &v))
            return -1;
        k->in_port = (uint32_t)v;
        m->in_port = UINT32_MAX;
        break;
    case FK_MAC:
        ok = parse_mac_masked(value, kb, mb);
        break;
    case FK_DL_TYPE:
        if ((ok = parse_uint(value, 0xffff, &v)))
            return rp_set_dl_type(p, (uint16_t)v, f->name);
        break;
    case FK_DL_VLAN:
        if (!(ok = parse_uint(value, 0xffff, &v)) || (v > FLOW_VLAN_VID_MASK && v != VLAN_NONE)) {
            ok = false;
        } else if (v == VLAN_NONE) {
            p->vlan_none = true;
            k->vlan_tci[0] = 0;
            m->vlan_tci[0] = 0xffff;
        } else {
            k->vlan_tci[0] |= (uint16_t)(FLOW_VLAN_PRESENT | v);
            m->vlan_tci[0] |= FLOW_VLAN_PRESENT | FLOW_VLAN_VID_MASK;
        }
        break;
    case FK_DL_VLAN_PCP:
        if ((ok = parse_uint(value, 7, &v))) {
            k->vlan_tci[0] |= (uint16_t)(FLOW_VLAN_PRESENT | (v << FLOW_VLAN_PCP_SHIFT));
            m->vlan_tci[0] |= FLOW_VLAN_PRESENT | VLAN_PCP_MASK;
        }
        break;
    case FK_VLAN_TCI:
        if ((ok = parse_uint_masked(value, 0xffff, true, &v, &vm))) {
            k->vlan_tci[0] = (uint16_t)v;
            m->vlan_tci[0] = (uint16_t)vm;
        }
        break;
    case FK_IP4: {
        uint32_t a, am;
        if ((ok = parse_ip4_masked(value, &a, &am))) {
            memcpy(kb, &a, 4);
            memcpy(mb, &am, 4);
        }
        break;
    }
    case FK_IP6:
        ok = parse_ip6_masked(value, kb, mb);
        break;
    case FK_IPV6_LABEL:
        if ((ok = parse_uint_masked(value, 0xfffff, true, &v, &vm))) {
            k->ipv6_label = (uint32_t)v;
            m->ipv6_label = (uint32_t)vm;
        }
        break;
    case FK_NW_PROTO:
        if ((ok = parse_uint(value, 255, &v)))
            return rp_set_nw_proto(p, (uint8_t)v, f->name);
        break;
    case FK_NW_TOS:
        if ((ok = parse_uint(value, 255, &v) && !(v & 3))) {
            k->nw_tos |= (uint8_t)v;
            m->nw_tos |= 0xfc;
        }
        break;
    case FK_IP_DSCP:
        if ((ok = parse_uint(value, 63, &v))) {
            k->nw_tos |= (uint8_t)(v << 2);
            m->nw_tos |= 0xfc;
        }
        break;
    case FK_NW_ECN:
        if ((ok = parse_uint(value, 3, &v))) {
            k->nw_tos |= (uint8_t)v;
            m->nw_tos |= 0x03;
        }
        break;
    case FK_NW_TTL:
        if ((ok = parse_uint(value, 255, &v))) {
            k->nw_ttl = (uint8_t)v;
            m->nw_ttl = 0xff;
        }
        break;
    case FK_IP_FRAG: {
        static const struct {
            const char *name;
            uint8_t value, mask;
        } frags[] = {
            {"no", 0, FLOW_FRAG_ANY},
            {"yes", FLOW_FRAG_ANY, FLOW_FRAG_ANY},
            {"first", FLOW_FRAG_ANY, FLOW_FRAG_ANY | FLOW_FRAG_LATER},
            {"later", FLOW_FRAG_ANY | FLOW_FRAG_LATER, FLOW_FRAG_ANY | FLOW_FRAG_LATER},
            {"not_later", 0, FLOW_FRAG_LATER},
        };
        ok = false;
        for (size_t i = 0; i < sizeof frags / sizeof frags[0]; i++) {
            if (!strcmp(value, frags[i].name)) {
                k->nw_frag = frags[i].value;
                m->nw_frag = frags[i].mask;
                ok = true;
            }
        }
        break;
    }
    case FK_U16:
    case FK_ICMP: {
        bool icmp = f->kind == FK_ICMP;
        if ((ok = parse_uint_masked(value, icmp ? 255 : 0xffff, !icmp, &v, &vm))) {
            uint16_t v16 = (uint16_t)v, m16 = icmp ? 0xffff : (uint16_t)vm;
            memcpy(kb, &v16, 2);
            memcpy(mb, &m16, 2);
        }
        break;
    }
    case FK_TCP_FLAGS:
        if ((ok = parse_uint_masked(value, 0x0fff, true, &v, &vm))) {
            k->tcp_flags = (uint16_t)v;
            m->tcp_flags = (uint16_t)vm;
        }
        break;
    case FK_TUN_ID:
        if ((ok = parse_uint_masked(value, UINT64_MAX, true, &v, &vm))) {
            k->tun_id = v;
            m->tun_id = vm;
        }
        break;
    case FK_TUN_IP:
        ok = parse_tun_ip(value, kb, mb);
        break;
    }
    if (!ok) {
        fs_errf(p->err, p->errlen, "bad value '%s' for field '%s'", value, f->name);
        return -1;
    }
    return 0;
}

/* One match token: "name=value" or a bare shorthand. */
static int rp_token(struct rule_parser *p, char *tok)
{
    char *eq = strchr(tok, '=');
    const char *value = NULL;
    if (eq) {
        *eq = '\0';
        value = eq + 1;
    }

    for (size_t i = 0; i < N_RULE_PROTOS; i++) {
        if (strcmp(tok, rule_protos[i].name))
            continue;
        if (value) {
            fs_errf(p->err, p->errlen, "'%s' takes no value", tok);
            return -1;
        }
        if (rp_set_dl_type(p, rule_protos[i].dl_type, rule_protos[i].name))
            return -1;
        if (rule_protos[i].nw_proto &&
            rp_set_nw_proto(p, rule_protos[i].nw_proto, rule_protos[i].name))
            return -1;
        return 0;
    }

    const struct rule_field *f = NULL;
    for (size_t i = 0; i < N_RULE_FIELDS && !f; i++)
        if (!strcmp(tok, rule_fields[i].name))
            f = &rule_fields[i];
    if (!f) {
        fs_errf(p->err, p->errlen, "unknown field '%s'", tok);
        return -1;
    }
    if (!value) {
        fs_errf(p->err, p->errlen, "field '%s' needs a value", tok);
        return -1;
    }

    const char *prev = p->slot_by[f->slot];
    if (prev) {
        if (!strcmp(prev, f->name))
            fs_errf(p->err, p->errlen, "duplicate field '%s'", f->name);
        else
            fs_errf(p->err, p->errlen, "'%s' conflicts with '%s'", f->name, prev);
        return -1;
    }
    /* vlan_tci writes the whole TCI that dl_vlan and dl_vlan_pcp share. */
    static const enum rule_slot vlan_slots[] = {SLOT_DL_VLAN, SLOT_DL_VLAN_PCP,
                                                SLOT_VLAN_TCI};
    if (f->slot == SLOT_DL_VLAN || f->slot == SLOT_DL_VLAN_PCP || f->slot == SLOT_VLAN_TCI) {
        for (size_t i = 0; i < 3; i++) {
            const char *other = p->slot_by[vlan_slots[i]];
            if (other && (f->slot == SLOT_VLAN_TCI || vlan_slots[i] == SLOT_VLAN_TCI)) {
                fs_errf(p->err, p->errlen, "'%s' conflicts with '%s'", f->name, other);
                return -1;
            }
        }
    }
    p->slot_by[f->slot] = f->name;
    p->used[p->n_used++] = f;
    return rp_field(p, f, value);
}

static bool rp_is_l4(const struct rule *r)
{
    if (r->mask.m.nw_proto != 0xff)
        return false;
    uint8_t pr = r->match.nw_proto;
    return pr == IP_PROTO_TCP || pr == IP_PROTO_UDP || pr == IP_PROTO_SCTP;
}

static bool rp_dl_type_is(const struct rule *r, uint16_t t)
{
    return r->mask.m.dl_type == 0xffff && r->match.dl_type == t;
}

static bool rp_nw_proto_is(const struct rule *r, uint8_t pr)
{
    return r->mask.m.nw_proto == 0xff && r->match.nw_proto == pr;
}

/* Checks the prerequisites of every field, in text order. */
static int rp_prereqs(struct rule_parser *p)
{
    const struct rule *r = p->r;
    bool ip4 = rp_dl_type_is(r, ETH_TYPE_IPV4), ip6 = rp_dl_type_is(r, ETH_TYPE_IPV6);
    bool arp = rp_dl_type_is(r, ETH_TYPE_ARP);

    if (p->vlan_none && p->slot_by[SLOT_DL_VLAN_PCP]) {
        fs_errf(p->err, p->errlen, "'dl_vlan_pcp' conflicts with 'dl_vlan=0xffff' (no tag)");
        return -1;
    }
    for (size_t i = 0; i < p->n_used; i++) {
        const struct rule_field *f = p->used[i];
        const char *need = NULL;
        switch (f->prereq) {
        case PRQ_NONE:
            break;
        case PRQ_IP4_OR_ARP:
            if (!ip4 && !arp)
                need = "ip or arp";
            break;
        case PRQ_ARP:
            if (!arp)
                need = "arp";
            break;
        case PRQ_IP6:
            if (!ip6)
                need = "ipv6";
            break;
        case PRQ_IP_ANY:
            if (!ip4 && !ip6)
                need = "ip or ipv6";
            break;
        case PRQ_L4:
            if ((!ip4 && !ip6) || !rp_is_l4(r))
                need = "tcp, udp or sctp";
            break;
        case PRQ_TCP:
            if ((!ip4 && !ip6) || !rp_nw_proto_is(r, IP_PROTO_TCP))
                need = "tcp";
            break;
        case PRQ_ICMP4:
            if (!ip4 || !rp_nw_proto_is(r, IP_PROTO_ICMP))
                need = "icmp";
            break;
        case PRQ_ICMP6:
            if (!ip6 || !rp_nw_proto_is(r, IP_PROTO_ICMPV6))
                need = "icmp6";
            break;
        }
        if (need) {
            fs_errf(p->err, p->errlen, "%s requires %s", f->name, need);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Actions                                                                  */

enum act_prereq { APR_NONE, APR_IP4, APR_L4, APR_IP_ANY };

enum act_arg { AA_NONE, AA_PORT, AA_MAC, AA_IP4, AA_TOS, AA_U16, AA_TPID, AA_VID, AA_PCP,
               AA_VNI };

static const struct {
    const char *name;
    enum action_type type;
    enum act_arg arg;
    enum act_prereq prereq;
} rule_actions[] = {
    {"output", ACT_OUTPUT, AA_PORT, APR_NONE},
    {"mod_dl_src", ACT_SET_DL_SRC, AA_MAC, APR_NONE},
    {"mod_dl_dst", ACT_SET_DL_DST, AA_MAC, APR_NONE},
    {"mod_nw_src", ACT_SET_NW_SRC, AA_IP4, APR_IP4},
    {"mod_nw_dst", ACT_SET_NW_DST, AA_IP4, APR_IP4},
    {"mod_nw_tos", ACT_SET_NW_TOS, AA_TOS, APR_IP4},
    {"mod_tp_src", ACT_SET_TP_SRC, AA_U16, APR_L4},
    {"mod_tp_dst", ACT_SET_TP_DST, AA_U16, APR_L4},
    {"push_vlan", ACT_PUSH_VLAN, AA_TPID, APR_NONE},
    {"mod_vlan_vid", ACT_SET_VLAN_VID, AA_VID, APR_NONE},
    {"mod_vlan_pcp", ACT_SET_VLAN_PCP, AA_PCP, APR_NONE},
    {"pop_vlan", ACT_POP_VLAN, AA_NONE, APR_NONE},
    {"strip_vlan", ACT_POP_VLAN, AA_NONE, APR_NONE},
    {"dec_ttl", ACT_DEC_TTL, AA_NONE, APR_IP_ANY},
    {"set_tunnel", ACT_SET_TUNNEL, AA_VNI, APR_NONE},
};

#define N_RULE_ACTIONS (sizeof rule_actions / sizeof rule_actions[0])

/* Parses one action token ("name" or "name:arg") into *a. */
static int rp_action(struct rule_parser *p, char *tok, struct action *a)
{
    const struct rule *r = p->r;
    char *colon = strchr(tok, ':');
    const char *arg = NULL;
    if (colon) {
        *colon = '\0';
        arg = colon + 1;
    }
    size_t i;
    for (i = 0; i < N_RULE_ACTIONS; i++)
        if (!strcmp(tok, rule_actions[i].name))
            break;
    if (i == N_RULE_ACTIONS) {
        fs_errf(p->err, p->errlen, "unknown action '%s'", tok);
        return -1;
    }
    if (rule_actions[i].arg == AA_NONE && arg) {
        fs_errf(p->err, p->errlen, "action '%s' takes no argument", tok);
        return -1;
    }
    if (rule_actions[i].arg != AA_NONE && !arg) {
        fs_errf(p->err, p->errlen, "action '%s' needs an argument", tok);
        return -1;
    }

    memset(a, 0, sizeof *a);
    a->type = (uint8_t)rule_actions[i].type;
    uint64_t v = 0;
    bool ok = true;
    switch (rule_actions[i].arg) {
    case AA_NONE:
        break;
    case AA_PORT:
        if (rp_port(p, arg, UINT16_MAX, &v))
            return -1;
        a->u.port = (uint16_t)v;
        break;
    case AA_MAC:
        ok = parse_mac(arg, a->u.mac);
        break;
    case AA_IP4:
        ok = inet_pton(AF_INET, arg, &a->u.ip4) == 1;
        break;
    case AA_TOS:
        if ((ok = parse_uint(arg, 255, &v) && !(v & 3)))
            a->u.u8 = (uint8_t)v;
        break;
    case AA_U16:
        if ((ok = parse_uint(arg, 0xffff, &v)))
            a->u.u16 = (uint16_t)v;
        break;
    case AA_TPID:
        if ((ok = parse_uint(arg, 0xffff, &v) && (v == ETH_TYPE_VLAN || v == ETH_TYPE_QINQ)))
            a->u.u16 = (uint16_t)v;
        break;
    case AA_VID:
        if ((ok = parse_uint(arg, FLOW_VLAN_VID_MASK, &v)))
            a->u.u16 = (uint16_t)v;
        break;
    case AA_PCP:
        if ((ok = parse_uint(arg, 7, &v)))
            a->u.u8 = (uint8_t)v;
        break;
    case AA_VNI:
        if ((ok = parse_uint(arg, 0xffffff, &v)))
            a->u.ip4 = (uint32_t)v;
        break;
    }
    if (!ok) {
        fs_errf(p->err, p->errlen, "bad value '%s' for action '%s'", arg, tok);
        return -1;
    }

    bool ip4 = rp_dl_type_is(r, ETH_TYPE_IPV4), ip6 = rp_dl_type_is(r, ETH_TYPE_IPV6);
    const char *need = NULL;
    switch (rule_actions[i].prereq) {
    case APR_NONE:
        break;
    case APR_IP4:
        if (!ip4)
            need = "ip";
        break;
    case APR_L4:
        if ((!ip4 && !ip6) || !rp_is_l4(r))
            need = "tcp, udp or sctp";
        break;
    case APR_IP_ANY:
        if (!ip4 && !ip6)
            need = "ip or ipv6";
        break;
    }
    if (need) {
        fs_errf(p->err, p->errlen, "%s requires %s", tok, need);
        return -1;
    }
    return 0;
}

/* Parses the action list 's' (modified in place) into r->actions. */
static int rp_actions(struct rule_parser *p, char *s)
{
    struct action acts[RULE_MAX_ACTIONS];
    unsigned n = 0;
    bool drop = false;

    while (*s) {
        while (is_delim(*s))
            s++;
        if (!*s)
            break;
        char *tok = s;
        while (*s && !is_delim(*s))
            s++;
        if (*s)
            *s++ = '\0';

        if (!strcmp(tok, "drop")) {
            if (n) {
                fs_errf(p->err, p->errlen, "'drop' must be the only action");
                return -1;
            }
            drop = true;
            continue;
        }
        if (drop) {
            fs_errf(p->err, p->errlen, "'drop' must be the only action");
            return -1;
        }
        if (n == RULE_MAX_ACTIONS) {
            fs_errf(p->err, p->errlen, "too many actions (max %d)", RULE_MAX_ACTIONS);
            return -1;
        }
        if (rp_action(p, tok, &acts[n]))
            return -1;
        n++;
    }

    /* OpenFlow drops the packet at the end of the list: what follows the
     * last output can have no effect, so it is not compiled. */
    while (n && acts[n - 1].type != ACT_OUTPUT)
        n--;
    p->r->actions = action_list_create(acts, n);
    if (!p->r->actions) {
        fs_errf(p->err, p->errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* rule_parse                                                               */

int rule_parse(const char *text, rule_port_lookup_fn *lookup, void *aux,
               struct rule **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';

    struct rule *r = calloc(1, sizeof *r);
    char *buf = strdup(text);
    struct rule_parser *p = calloc(1, sizeof *p);
    if (!r || !buf || !p || !(r->text = strdup(text))) {
        fs_errf(err, errlen, "out of memory");
        free(buf);
        free(p);
        rule_free(r);
        return -1;
    }
    r->priority = RULE_DEFAULT_PRIORITY;
    p->r = r;
    p->lookup = lookup;
    p->aux = aux;
    p->err = err;
    p->errlen = errlen;

    int rc = -1;
    char *s = buf, *actions = NULL;
    while (*s) {
        while (is_delim(*s))
            s++;
        if (!*s)
            break;
        if (!strncmp(s, "actions=", 8)) {
            actions = s + 8;
            break;
        }
        char *tok = s;
        while (*s && !is_delim(*s))
            s++;
        if (*s)
            *s++ = '\0';
        if (rp_token(p, tok))
            goto out;
    }
    if (!actions) {
        fs_errf(err, errlen, "missing 'actions='");
        goto out;
    }
    if (rp_prereqs(p))
        goto out;
    flow_apply_mask(&r->match, &r->match, &r->mask);
    if (rp_actions(p, actions))
        goto out;
    rc = 0;

out:
    free(buf);
    free(p);
    if (rc)
        rule_free(r);
    else
        *out = r;
    return rc;
}

void rule_free(struct rule *r)
{
    if (!r)
        return;
    if (r->actions)
        action_list_unref(r->actions);
    free(r->text);
    free(r);
}

/* ------------------------------------------------------------------------ */
/* The table                                                                */

struct rule_table {
    struct rule **rules; /* lookup order: priority descending, then seq */
    size_t n, cap;
    uint64_t next_seq;
    uint64_t version;
    /* The rules again, by priority, match and mask (open addressing: NULL
     * empty, RULE_GONE a deleted one): the rule an add replaces is found
     * without comparing it with every rule, so loading n rules costs O(n),
     * not O(n^2). NULL when not built yet (or out of memory: then adds
     * scan). */
    struct rule **index;
    size_t index_size, index_used; /* used: rules and RULE_GONE marks */
};

static struct rule rule_gone_mark;
#define RULE_GONE (&rule_gone_mark)

struct rule_table *rule_table_create(void)
{
    return calloc(1, sizeof(struct rule_table));
}

void rule_table_destroy(struct rule_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        rule_free(t->rules[i]);
    free(t->rules);
    free(t->index);
    free(t);
}

static bool rule_same_match(const struct rule *a, const struct rule *b)
{
    return a->priority == b->priority && flow_equal(&a->match, &b->match) &&
           flow_equal(&a->mask.m, &b->mask.m);
}

static uint32_t rule_key_hash(const struct rule *r)
{
    return flow_hash(&r->match, flow_hash(&r->mask.m, (uint32_t)r->priority));
}

/* The index slot of the rule with r's priority, match and mask, or NULL. */
static struct rule **rule_index_find(const struct rule_table *t, const struct rule *r)
{
    if (!t->index)
        return NULL;
    for (size_t i = rule_key_hash(r) & (t->index_size - 1);; i = (i + 1) & (t->index_size - 1)) {
        struct rule *x = t->index[i];
        if (!x)
            return NULL;
        if (x != RULE_GONE && rule_same_match(x, r))
            return &t->index[i];
    }
}

static void rule_index_put(struct rule **index, size_t size, struct rule *r)
{
    size_t i = rule_key_hash(r) & (size - 1);
    while (index[i] && index[i] != RULE_GONE)
        i = (i + 1) & (size - 1);
    index[i] = r;
}

/* Builds the index afresh for the rules and room for 'more', at most half
 * full. On failure there is none (adds scan). */
static void rule_index_build(struct rule_table *t, size_t more)
{
    free(t->index);
    t->index = NULL;
    t->index_size = t->index_used = 0;
    size_t size = 64;
    while (size < 2 * (t->n + more))
        size *= 2;
    struct rule **index = calloc(size, sizeof *index);
    if (!index)
        return;
    for (size_t i = 0; i < t->n; i++)
        rule_index_put(index, size, t->rules[i]);
    t->index = index;
    t->index_size = size;
    t->index_used = t->n;
}

static void rule_index_add(struct rule_table *t, struct rule *r)
{
    if (!t->index || 2 * (t->index_used + 1) > t->index_size) {
        rule_index_build(t, t->n + 1);
        return; /* the rule is in t->rules already: built in */
    }
    rule_index_put(t->index, t->index_size, r);
    t->index_used++;
}

/* r is in the table (so the only rule with its key): its slot is marked. */
static void rule_index_remove(struct rule_table *t, const struct rule *r)
{
    struct rule **slot = rule_index_find(t, r);
    if (slot)
        *slot = RULE_GONE;
}

/* A copy of r sharing its action list. NULL if out of memory. */
static struct rule *rule_clone(const struct rule *r)
{
    struct rule *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *r;
    c->text = r->text ? strdup(r->text) : NULL;
    if (r->text && !c->text) {
        free(c);
        return NULL;
    }
    c->actions = action_list_ref(r->actions);
    return c;
}

struct rule_table *rule_table_clone(const struct rule_table *t)
{
    struct rule_table *c = rule_table_create();
    if (!c)
        return NULL;
    c->rules = t->n ? malloc(t->n * sizeof *c->rules) : NULL;
    if (t->n && !c->rules) {
        free(c);
        return NULL;
    }
    c->cap = t->n;
    for (size_t i = 0; i < t->n; i++) {
        c->rules[i] = rule_clone(t->rules[i]);
        if (!c->rules[i]) {
            rule_table_destroy(c);
            return NULL;
        }
        c->n = i + 1;
    }
    c->version = t->version;
    c->next_seq = t->next_seq;
    return c;
}

int rule_table_reserve(struct rule_table *t, size_t more)
{
    if (more > SIZE_MAX - t->n)
        return -1;
    return fs_grow((void **)&t->rules, &t->cap, t->n + more, sizeof *t->rules, 16);
}

int rule_table_add(struct rule_table *t, struct rule *r)
{
    if (!t->index)
        rule_index_build(t, 1);
    struct rule **slot = rule_index_find(t, r);
    for (size_t i = 0; i < t->n && (slot || !t->index); i++) {
        if (slot ? t->rules[i] == *slot : rule_same_match(t->rules[i], r)) {
            /* The replacement takes the old rule's place (and sequence). */
            r->seq = t->rules[i]->seq;
            rule_free(t->rules[i]);
            t->rules[i] = r;
            if (slot)
                *slot = r;
            t->version++;
            return 0;
        }
    }
    if (rule_table_reserve(t, 1))
        return -1; /* r stays the caller's */
    t->version++;
    r->seq = t->next_seq++;
    /* After every rule of the same or higher priority: ties keep the order
     * of insertion. */
    size_t pos = t->n;
    while (pos > 0 && t->rules[pos - 1]->priority < r->priority)
        pos--;
    memmove(&t->rules[pos + 1], &t->rules[pos], (t->n - pos) * sizeof *t->rules);
    t->rules[pos] = r;
    t->n++;
    rule_index_add(t, r);
    return 0;
}

unsigned rule_table_delete_strict(struct rule_table *t, const struct rule *r)
{
    unsigned removed = 0;
    size_t j = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (rule_same_match(t->rules[i], r)) {
            rule_index_remove(t, t->rules[i]);
            rule_free(t->rules[i]);
            removed++;
        } else {
            t->rules[j++] = t->rules[i];
        }
    }
    t->n = j;
    if (removed)
        t->version++;
    return removed;
}

void rule_table_clear(struct rule_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        rule_free(t->rules[i]);
    t->n = 0;
    t->version++;
    free(t->index);
    t->index = NULL;
    t->index_size = t->index_used = 0;
}

const struct rule *rule_table_lookup(const struct rule_table *t,
                                     const struct flow_key *key,
                                     struct flow_mask *wc)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct rule *r = t->rules[i];
        if (flow_match_masked(key, &r->match, &r->mask)) {
            /* A packet must agree with the winner on all its fields... */
            if (wc)
                flow_mask_union(wc, &r->mask);
            return r;
        }
        /* ... and differ from every rule examined before it on a bit that
         * shows it. */
        if (wc)
            flow_wc_disprove(wc, key, &r->match, &r->mask);
    }
    return NULL;
}

uint64_t rule_table_version(const struct rule_table *t)
{
    return t->version;
}

size_t rule_table_count(const struct rule_table *t)
{
    return t->n;
}

const struct rule *rule_table_at(const struct rule_table *t, size_t i)
{
    return i < t->n ? t->rules[i] : NULL;
}
