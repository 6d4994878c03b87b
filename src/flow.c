/* flow.c: flow key masks, hashing and formatting. */
#include "flow.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

bool flow_match_masked(const struct flow_key *k, const struct flow_key *match,
                       const struct flow_mask *mask)
{
    const flow_word *kw = flow_u64(k), *mw = flow_u64(match), *mk = flow_u64(&mask->m);
    uint64_t diff = 0;
    for (size_t i = 0; i < FLOW_U64S; i++)
        diff |= (kw[i] ^ mw[i]) & mk[i];
    return diff == 0;
}

void flow_apply_mask(struct flow_key *dst, const struct flow_key *k,
                     const struct flow_mask *mask)
{
    flow_word *d = flow_u64_rw(dst);
    const flow_word *kw = flow_u64(k), *mk = flow_u64(&mask->m);
    for (size_t i = 0; i < FLOW_U64S; i++)
        d[i] = kw[i] & mk[i];
}

void flow_mask_union(struct flow_mask *dst, const struct flow_mask *src)
{
    flow_word *d = flow_u64_rw(&dst->m);
    const flow_word *s = flow_u64(&src->m);
    for (size_t i = 0; i < FLOW_U64S; i++)
        d[i] |= s[i];
}

/* A field of the key as flow_wc_disprove() takes it. */
struct flow_field {
    uint8_t ofs, len;
    bool net;     /* network order: the first byte is the most significant
                   * (else host order) */
    bool prefix;  /* an address or port: a prefix of it can decide */
};

#define FLOW_F(f, n, p) {offsetof(struct flow_key, f), sizeof(((struct flow_key *)0)->f), n, p}
#define FLOW_F1(f, i) {offsetof(struct flow_key, f) + (i) * sizeof(((struct flow_key *)0)->f[0]), \
                       sizeof(((struct flow_key *)0)->f[0]), false, false}

/* The fields that tell kinds of packets apart, in the order they are tried:
 * they are in almost every megaflow's mask anyway. */
static const struct flow_field flow_fields_kind[] = {
    FLOW_F(in_port, false, false), FLOW_F(tun_id, false, false),
    FLOW_F(dl_type, false, false), FLOW_F1(vlan_tpid, 0), FLOW_F1(vlan_tci, 0),
    FLOW_F1(vlan_tpid, 1), FLOW_F1(vlan_tci, 1), FLOW_F(nw_frag, false, false),
    FLOW_F(nw_proto, false, false),
};

/* Every other field. */
static const struct flow_field flow_fields_other[] = {
    FLOW_F(nw_dst, true, true), FLOW_F(nw_src, true, true), FLOW_F(tp_dst, false, true),
    FLOW_F(tp_src, false, true), FLOW_F(ipv6_dst, true, true), FLOW_F(ipv6_src, true, true),
    FLOW_F(tun_dst, true, true), FLOW_F(tun_src, true, true), FLOW_F(dl_dst, true, false),
    FLOW_F(dl_src, true, false), FLOW_F(nw_tos, true, false), FLOW_F(nw_ttl, true, false),
    FLOW_F(tcp_flags, false, false), FLOW_F(ipv6_label, false, false),
    FLOW_F(arp_sha, true, false), FLOW_F(arp_tha, true, false),
    FLOW_F(tun_flags, true, false), FLOW_F(pad, true, false),
};

#undef FLOW_F
#undef FLOW_F1

/* Byte i of field f counted from its most significant byte. */
static unsigned flow_field_byte(const struct flow_field *f, unsigned i)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return f->ofs + i;
#else
    return f->net ? f->ofs + i : f->ofs + f->len - 1u - i;
#endif
}

/* The bits of field f that decide against (match, mask) for k, into add
 * (a whole key, zero outside f); false if k agrees with match on f. */
static bool flow_field_decide(const struct flow_field *f, const uint8_t *k, const uint8_t *m,
                              const uint8_t *mask, uint8_t *add)
{
    bool differs = false;
    for (unsigned i = 0; i < f->len; i++) {
        unsigned b = flow_field_byte(f, i);
        uint8_t d = (uint8_t)((k[b] ^ m[b]) & mask[b]);
        if (!f->prefix || differs) {
            add[b] = f->prefix ? 0 : mask[b];
        } else if (d) {
            /* Down to the first differing bit, within the mask. */
            unsigned top = 31u - (unsigned)__builtin_clz(d);
            add[b] = (uint8_t)(mask[b] & ~((1u << top) - 1u));
        } else {
            add[b] = mask[b];
        }
        differs |= d != 0;
    }
    return differs;
}

void flow_wc_disprove(struct flow_mask *wc, const struct flow_key *k,
                      const struct flow_key *match, const struct flow_mask *mask)
{
    const flow_word *kw = flow_u64(k), *mw = flow_u64(match), *mk = flow_u64(&mask->m);
    flow_word *w = flow_u64_rw(&wc->m);
    for (size_t i = 0; i < FLOW_U64S; i++)
        if ((kw[i] ^ mw[i]) & mk[i] & w[i])
            return; /* wc already tells k apart */
    const uint8_t *kb = (const uint8_t *)k, *mb = (const uint8_t *)match;
    const uint8_t *mask_b = (const uint8_t *)&mask->m;
    uint8_t *wb = (uint8_t *)&wc->m;
    uint8_t add[sizeof(struct flow_key)], best[sizeof(struct flow_key)];
    memset(add, 0, sizeof add);
    for (size_t j = 0; j < sizeof flow_fields_kind / sizeof flow_fields_kind[0]; j++) {
        const struct flow_field *f = &flow_fields_kind[j];
        if (flow_field_decide(f, kb, mb, mask_b, add)) {
            for (unsigned i = 0; i < f->len; i++)
                wb[f->ofs + i] |= add[f->ofs + i];
            return;
        }
    }
    unsigned best_cost = UINT32_MAX;
    const struct flow_field *bf = NULL;
    for (size_t j = 0; j < sizeof flow_fields_other / sizeof flow_fields_other[0]; j++) {
        const struct flow_field *f = &flow_fields_other[j];
        if (!flow_field_decide(f, kb, mb, mask_b, add))
            continue;
        unsigned cost = 0;
        for (unsigned i = 0; i < f->len; i++)
            cost += (unsigned)__builtin_popcount(add[f->ofs + i] & (uint8_t)~wb[f->ofs + i]);
        if (cost < best_cost) {
            best_cost = cost;
            bf = f;
            memcpy(best + f->ofs, add + f->ofs, f->len);
        }
    }
    /* Some field differs: k does not match. Should none (a caller that
     * broke the contract), the whole mask keeps wc safe. */
    if (!bf) {
        flow_mask_union(wc, mask);
        return;
    }
    for (unsigned i = 0; i < bf->len; i++)
        wb[bf->ofs + i] |= best[bf->ofs + i];
}

/* flow_hash()'s constants, one per word (odd; a zero cold word adds
 * nothing to the hash). */
const uint64_t flow_hash_k[FLOW_U64S] = {
    FLOW_HASH_K0, FLOW_HASH_K1, FLOW_HASH_K2, FLOW_HASH_K3, FLOW_HASH_K4, FLOW_HASH_K5,
    0x15d25341edc5fe85ull, 0x23eb71643ac5c727ull, 0xf4a3cc3052800e05ull,
    0x09c9c31ae2f93909ull, 0x74406663d3e1ec75ull, 0x2cc9d354d76fd971ull,
    0xa946a04e9ff35ab3ull, 0x4dfc3c3b18c1c02bull, 0x2a162b8dc835698dull,
    0x89fb1806dc3fe287ull, 0x8e822f9a9b04393full,
};

static bool bytes_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

struct fmt_buf {
    char *p;
    size_t left;
    bool first;
};

static void fmt_add(struct fmt_buf *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fmt_add(struct fmt_buf *f, const char *fmt, ...)
{
    if (f->left <= 1)
        return;
    if (!f->first) {
        *f->p++ = ',';
        f->left--;
        *f->p = '\0';
    }
    f->first = false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(f->p, f->left, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= f->left)
        n = (int)f->left - 1;
    f->p += n;
    f->left -= (size_t)n;
}

static void fmt_mac(struct fmt_buf *f, const char *name, const uint8_t m[6])
{
    if (!bytes_zero(m, 6))
        fmt_add(f, "%s=%02x:%02x:%02x:%02x:%02x:%02x", name, m[0], m[1], m[2],
                m[3], m[4], m[5]);
}

static void fmt_ip6(struct fmt_buf *f, const char *name, const uint8_t a[16])
{
    char s[INET6_ADDRSTRLEN];
    if (!bytes_zero(a, 16) && inet_ntop(AF_INET6, a, s, sizeof s))
        fmt_add(f, "%s=%s", name, s);
}

static void fmt_ip4(struct fmt_buf *f, const char *name, uint32_t a)
{
    char s[INET_ADDRSTRLEN];
    if (a && inet_ntop(AF_INET, &a, s, sizeof s))
        fmt_add(f, "%s=%s", name, s);
}

void flow_format(const struct flow_key *k, char *buf, size_t size)
{
    struct fmt_buf f = {buf, size, true};
    if (size)
        buf[0] = '\0';
    fmt_add(&f, "in_port=%u", k->in_port);
    if (k->tun_id)
        fmt_add(&f, "tun_id=%llu", (unsigned long long)k->tun_id);
    fmt_ip6(&f, "tun_src", k->tun_src);
    fmt_ip6(&f, "tun_dst", k->tun_dst);
    fmt_mac(&f, "dl_src", k->dl_src);
    fmt_mac(&f, "dl_dst", k->dl_dst);
    for (int i = 0; i < 2; i++)
        if (k->vlan_tpid[i])
            fmt_add(&f, "vlan%d=0x%04x/%u/pcp%u", i, k->vlan_tpid[i],
                    k->vlan_tci[i] & FLOW_VLAN_VID_MASK,
                    k->vlan_tci[i] >> FLOW_VLAN_PCP_SHIFT);
    fmt_add(&f, "dl_type=0x%04x", k->dl_type);
    fmt_ip4(&f, "nw_src", k->nw_src);
    fmt_ip4(&f, "nw_dst", k->nw_dst);
    fmt_ip6(&f, "ipv6_src", k->ipv6_src);
    fmt_ip6(&f, "ipv6_dst", k->ipv6_dst);
    if (k->ipv6_label)
        fmt_add(&f, "ipv6_label=0x%05x", k->ipv6_label);
    if (k->nw_proto)
        fmt_add(&f, "nw_proto=%u", k->nw_proto);
    if (k->nw_tos)
        fmt_add(&f, "nw_tos=%u", k->nw_tos);
    if (k->nw_ttl)
        fmt_add(&f, "nw_ttl=%u", k->nw_ttl);
    if (k->nw_frag)
        fmt_add(&f, "nw_frag=%s", k->nw_frag & FLOW_FRAG_LATER ? "later" : "first");
    if (k->tp_src || k->tp_dst)
        fmt_add(&f, "tp_src=%u,tp_dst=%u", k->tp_src, k->tp_dst);
    if (k->tcp_flags)
        fmt_add(&f, "tcp_flags=0x%03x", k->tcp_flags);
    fmt_mac(&f, "arp_sha", k->arp_sha);
    fmt_mac(&f, "arp_tha", k->arp_tha);
}

/* The fields flow_format_masked() shows, in key order. */
enum flow_fmt_kind { FF_DEC, FF_HEX, FF_MAC, FF_IP4, FF_IP6 };
static const struct {
    const char *name;
    size_t off, size;
    enum flow_fmt_kind kind;
} flow_fmt_fields[] = {
#define FF(name, field, kind) {name, offsetof(struct flow_key, field), \
                               sizeof(((struct flow_key *)0)->field), kind}
    FF("tun_src", tun_src, FF_IP6),
    FF("tun_dst", tun_dst, FF_IP6),
    FF("tun_id", tun_id, FF_DEC),
    FF("in_port", in_port, FF_DEC),
    FF("dl_type", dl_type, FF_HEX),
    FF("vlan_tci", vlan_tci[0], FF_HEX),
    FF("vlan_tci_inner", vlan_tci[1], FF_HEX),
    FF("vlan_tpid", vlan_tpid[0], FF_HEX),
    FF("vlan_tpid_inner", vlan_tpid[1], FF_HEX),
    FF("dl_src", dl_src, FF_MAC),
    FF("dl_dst", dl_dst, FF_MAC),
    FF("tp_src", tp_src, FF_DEC),
    FF("tp_dst", tp_dst, FF_DEC),
    FF("tcp_flags", tcp_flags, FF_HEX),
    FF("nw_src", nw_src, FF_IP4),
    FF("nw_dst", nw_dst, FF_IP4),
    FF("ipv6_src", ipv6_src, FF_IP6),
    FF("ipv6_dst", ipv6_dst, FF_IP6),
    FF("ipv6_label", ipv6_label, FF_HEX),
    FF("nw_proto", nw_proto, FF_DEC),
    FF("nw_tos", nw_tos, FF_DEC),
    FF("nw_ttl", nw_ttl, FF_DEC),
    FF("nw_frag", nw_frag, FF_HEX),
    FF("arp_sha", arp_sha, FF_MAC),
    FF("arp_tha", arp_tha, FF_MAC),
    FF("tun_flags", tun_flags, FF_HEX),
#undef FF
};

/* One value (of a key or a mask) as text. */
static void flow_fmt_value(const uint8_t *v, size_t size, enum flow_fmt_kind kind, char *out,
                           size_t n)
{
    uint64_t x = 0;
    switch (kind) {
    case FF_MAC:
        snprintf(out, n, "%02x:%02x:%02x:%02x:%02x:%02x", v[0], v[1], v[2], v[3], v[4], v[5]);
        return;
    case FF_IP4:
        if (!inet_ntop(AF_INET, v, out, (socklen_t)n))
            snprintf(out, n, "?");
        return;
    case FF_IP6:
        if (!inet_ntop(AF_INET6, v, out, (socklen_t)n))
            snprintf(out, n, "?");
        return;
    case FF_DEC:
    case FF_HEX:
        if (size == 1) {
            x = *v;
        } else if (size == 2) {
            uint16_t y;
            memcpy(&y, v, 2);
            x = y;
        } else if (size == 4) {
            uint32_t y;
            memcpy(&y, v, 4);
            x = y;
        } else {
            memcpy(&x, v, 8);
        }
        snprintf(out, n, kind == FF_HEX ? "0x%llx" : "%llu", (unsigned long long)x);
        return;
    }
}

void flow_format_masked(const struct flow_key *k, const struct flow_mask *m, char *buf,
                        size_t size)
{
    struct fmt_buf f = {buf, size, true};
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof flow_fmt_fields / sizeof flow_fmt_fields[0]; i++) {
        size_t off = flow_fmt_fields[i].off, n = flow_fmt_fields[i].size;
        const uint8_t *mv = (const uint8_t *)&m->m + off;
        if (bytes_zero(mv, n))
            continue;
        char val[INET6_ADDRSTRLEN], mask[INET6_ADDRSTRLEN];
        flow_fmt_value((const uint8_t *)k + off, n, flow_fmt_fields[i].kind, val, sizeof val);
        bool exact = true;
        for (size_t b = 0; b < n; b++)
            exact &= mv[b] == 0xff;
        if (exact) {
            fmt_add(&f, "%s=%s", flow_fmt_fields[i].name, val);
        } else {
            flow_fmt_value(mv, n, flow_fmt_fields[i].kind, mask, sizeof mask);
            fmt_add(&f, "%s=%s/%s", flow_fmt_fields[i].name, val, mask);
        }
    }
}
