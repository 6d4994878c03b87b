/* verify.c: the sink's verifier (see verify.h).
 *
 * Deliberately self-contained: its parser, checksum sum and header
 * rewriting are written here from the protocol specifications, not taken
 * from src/ (parse.c, csum.c, actions.c, tunnel.c), so that a fault in the
 * datapath's code cannot hide itself by being what checks it. */
#include "verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "rng.h"
#include "util.h"

static const struct {
    const char *name, *desc;
} reasons[SIM_VERIFY_N] = {
#define SIM_VERIFY_ROW_(e, name, desc) [SIM_VERIFY_##e] = {name, desc},
    SIM_VERIFY_REASONS(SIM_VERIFY_ROW_)
#undef SIM_VERIFY_ROW_
};

const char *sim_verify_reason_name(enum sim_verify_reason r)
{
    return (unsigned)r < SIM_VERIFY_N ? reasons[r].name : NULL;
}

const char *sim_verify_reason_desc(enum sim_verify_reason r)
{
    return (unsigned)r < SIM_VERIFY_N ? reasons[r].desc : NULL;
}

/* ---- parsing ---- */

#define NO_OFS SIZE_MAX
/* Bits of the checksummed layers: outer (or only) IP and L4, VXLAN inner
 * IP and L4; reasons in the same order. */
#define B_OIP 1u
#define B_OL4 2u
#define B_IIP 4u
#define B_IL4 8u

/* One Ethernet frame's network and transport layer. */
struct vlayer {
    unsigned ip;        /* 4, 6, or 0 (ARP, other) */
    size_t l3, l4;      /* offsets; l4 NO_OFS without a checksummed L4 */
    size_t l4len;       /* bytes the L4 checksum covers */
    size_t pay;         /* the first byte after the L4 header (after ARP) */
    size_t csum;        /* offset of the L4 checksum field */
    uint8_t proto;
};

struct vframe {
    unsigned n;                 /* layers: 2 with VXLAN */
    struct vlayer lay[2];
    size_t tag;                 /* the innermost payload, NO_OFS if none */
};

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Skips Ethernet and up to two VLAN tags at f[ofs..end): the ethertype
 * and where the network header starts; false if cut short. */
static bool parse_l2(const uint8_t *f, size_t end, size_t ofs, uint16_t *type, size_t *l3)
{
    if (end < ofs + 14)
        return false;
    size_t o = ofs + 12;
    *type = be16(f + o);
    for (int tags = 0; (*type == 0x8100 || *type == 0x88a8) && tags < 2; tags++) {
        if (end < o + 6)
            return false;
        o += 4;
        *type = be16(f + o);
    }
    *l3 = o + 2;
    return true;
}

/* Parses the frame at f[ofs..end) into *L; false if malformed. */
static bool parse_layer(const uint8_t *f, size_t end, size_t ofs, struct vlayer *L)
{
    uint16_t type;
    size_t o;
    memset(L, 0, sizeof *L);
    L->l3 = L->l4 = L->pay = L->csum = NO_OFS;
    if (!parse_l2(f, end, ofs, &type, &o))
        return false;
    size_t ipend;
    if (type == 0x0806) {
        if (end < o + 28)
            return false;
        L->l3 = o;
        L->pay = o + 28;
        return true;
    } else if (type == 0x0800) {
        if (end < o + 20 || f[o] >> 4 != 4)
            return false;
        size_t ihl = (size_t)(f[o] & 15) * 4, tot = be16(f + o + 2);
        if (ihl < 20 || tot < ihl || o + tot > end)
            return false;
        L->ip = 4;
        L->l3 = o;
        L->proto = f[o + 9];
        if (be16(f + o + 6) & 0x3fff)
            return true; /* a fragment: no L4 header to check */
        L->l4 = o + ihl;
        ipend = o + tot;
    } else if (type == 0x86dd) {
        if (end < o + 40 || f[o] >> 4 != 6 || o + 40 + be16(f + o + 4) > end)
            return false;
        L->ip = 6;
        L->l3 = o;
        L->proto = f[o + 6];
        L->l4 = o + 40;
        ipend = o + 40 + be16(f + o + 4);
    } else {
        return true; /* not IP: nothing checksummed */
    }
    size_t l4 = L->l4, avail = ipend - l4;
    switch (L->proto) {
    case 6: {
        size_t doff = avail < 20 ? 0 : (size_t)(f[l4 + 12] >> 4) * 4;
        if (doff < 20 || doff > avail)
            return false;
        L->pay = l4 + doff;
        L->csum = l4 + 16;
        L->l4len = avail;
        return true;
    }
    case 17:
        if (avail < 8 || be16(f + l4 + 4) < 8 || be16(f + l4 + 4) > avail)
            return false;
        L->pay = l4 + 8;
        L->csum = l4 + 6;
        L->l4len = be16(f + l4 + 4);
        return true;
    case 1:
    case 58:
        if ((L->proto == 1) != (L->ip == 4))
            break;
        if (avail < 8)
            return false;
        L->pay = l4 + 8;
        L->csum = l4 + 2;
        L->l4len = avail;
        return true;
    }
    L->l4 = NO_OFS; /* another protocol: no checksum we know */
    return true;
}

/* Parses a whole frame, and the frame inside VXLAN (UDP to 4789 with the
 * I flag and room for an Ethernet header). */
static bool parse_frame(const uint8_t *f, size_t len, struct vframe *v)
{
    v->n = 1;
    if (!parse_layer(f, len, 0, &v->lay[0]))
        return false;
    struct vlayer *o = &v->lay[0];
    v->tag = o->pay;
    if (o->proto == 17 && o->l4 != NO_OFS && be16(f + o->l4 + 2) == 4789 && o->l4len >= 16 + 14 &&
        (f[o->l4 + 8] & 0x08)) {
        v->n = 2;
        if (!parse_layer(f, o->l4 + o->l4len, o->l4 + 16, &v->lay[1]))
            return false;
        v->tag = v->lay[1].pay;
    }
    return true;
}

/* ---- checksums: RFC 1071, big-endian 16-bit words ---- */

/* The one's-complement sum of p[0..n) as big-endian 16-bit words, folded
 * to 16 bits. Summed in the machine's byte order as 32-bit halves in
 * 64-bit lanes (32 bytes a step with SSE2), then swapped: the
 * one's-complement sum commutes with swapping the bytes of every word
 * (RFC 1071, 2.B). Frames are at most 64 KiB: the lanes cannot overflow. */
static uint64_t vsum(const uint8_t *p, size_t n)
{
    uint64_t a = 0;
    size_t i = 0;
#ifdef __SSE2__
    __m128i acc0 = _mm_setzero_si128(), acc1 = _mm_setzero_si128();
    const __m128i z = _mm_setzero_si128();
    for (; i + 32 <= n; i += 32) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + i + 16));
        acc0 = _mm_add_epi64(acc0, _mm_unpacklo_epi32(v0, z));
        acc1 = _mm_add_epi64(acc1, _mm_unpackhi_epi32(v0, z));
        acc0 = _mm_add_epi64(acc0, _mm_unpacklo_epi32(v1, z));
        acc1 = _mm_add_epi64(acc1, _mm_unpackhi_epi32(v1, z));
    }
    uint64_t lanes[2];
    _mm_storeu_si128((__m128i *)(void *)lanes, _mm_add_epi64(acc0, acc1));
    a = lanes[0] + lanes[1];
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        a += (w >> 32) + (w & 0xffffffffu);
    }
    for (; i + 2 <= n; i += 2) {
        uint16_t h;
        memcpy(&h, p + i, 2);
        a += h;
    }
    if (i < n) {
        uint8_t last[2] = {p[i], 0};
        uint16_t h;
        memcpy(&h, last, 2);
        a += h;
    }
    while (a >> 16)
        a = (a & 0xffff) + (a >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    a = __builtin_bswap16((uint16_t)a);
#endif
    return a;
}

static uint16_t vfold(uint64_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

/* The layers whose checksum is wrong, as B_* bits (inner: the VXLAN one). */
static unsigned layer_bad(const uint8_t *f, const struct vlayer *L, bool inner, bool vxlan_outer)
{
    unsigned bad = 0;
    if (L->ip == 4 && vfold(vsum(f + L->l3, (size_t)(f[L->l3] & 15) * 4)) != 0xffff)
        bad |= inner ? B_IIP : B_OIP;
    if (L->l4 == NO_OFS)
        return bad;
    const uint8_t *l4 = f + L->l4;
    uint64_t s = vsum(l4, L->l4len);
    if (L->proto != 1) {
        s += L->proto + L->l4len;
        s += L->ip == 4 ? vsum(f + L->l3 + 12, 8) : vsum(f + L->l3 + 8, 32);
    }
    if (L->proto == 17 && be16(l4 + 6) == 0) {
        /* No checksum: allowed on IPv4, and on IPv6 for a tunnel (RFC 6935). */
        if (L->ip == 4 || vxlan_outer)
            return bad;
        return bad | (inner ? B_IL4 : B_OL4);
    }
    if (vfold(s) != 0xffff)
        bad |= inner ? B_IL4 : B_OL4;
    return bad;
}

static unsigned frame_bad(const uint8_t *f, const struct vframe *v)
{
    unsigned bad = layer_bad(f, &v->lay[0], false, v->n == 2);
    if (v->n == 2)
        bad |= layer_bad(f, &v->lay[1], true, false);
    return bad;
}

/* ---- per-flow order ---- */

/* Flow ids below this have a slot in their model's dense table (8 bytes
 * each, grown as ids appear: a model's popular flows have the lowest
 * ids, so their slots share cache lines); the rest go to a hash map. */
#define SEQ_DENSE_MAX (1u << 25)

struct seq_entry {
    uint64_t key;
    uint64_t next; /* last sequence number + 1; 0: empty */
};

struct seq_map {
    struct seq_entry *e;
    size_t mask, n;
};

static int seq_map_grow(struct seq_map *m)
{
    size_t cap = m->e ? (m->mask + 1) * 2 : 1024;
    struct seq_entry *e = calloc(cap, sizeof *e);
    if (!e)
        return -1;
    for (size_t i = 0; m->e && i <= m->mask; i++) {
        if (!m->e[i].next)
            continue;
        size_t j = sim_mix64(m->e[i].key) & (cap - 1);
        while (e[j].next)
            j = (j + 1) & (cap - 1);
        e[j] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->mask = cap - 1;
    return 0;
}

/* The "next" word of key, created empty if new; NULL if out of memory. */
static uint64_t *seq_map_get(struct seq_map *m, uint64_t key)
{
    if ((!m->e || (m->n + 1) * 2 > m->mask + 1) && seq_map_grow(m))
        return NULL;
    size_t j = sim_mix64(key) & m->mask;
    while (m->e[j].next && m->e[j].key != key)
        j = (j + 1) & m->mask;
    if (!m->e[j].next) {
        m->e[j].key = key;
        m->n++;
    }
    return &m->e[j].next;
}

/* ---- the verifier ---- */

#define BUF_CAP (SIM_TRAFFIC_FRAME_MAX + 4 * SIM_XFORM_MAX + 70 * SIM_XFORM_MAX)

/* What a registered model's frames are expected to be. */
enum model_expect {
    EXPECT_DEFAULT,     /* the per-flow callback, else the fixed expectation */
    EXPECT_GIVEN,       /* .exp, whatever the flow */
    EXPECT_NONE,        /* none of its frames may arrive */
};

struct vmodel {
    const struct sim_traffic *t;
    uint16_t id;
    enum model_expect how;
    struct sim_expect exp;      /* EXPECT_GIVEN */
    uint64_t *next;             /* dense order table: flow id -> last seq + 1 */
    size_t n_next;
};

struct sim_verify {
    struct sim_verify_stats st;
    size_t max_listed, n_listed;
    struct sim_verify_violation *listed;
    struct vmodel *models;
    size_t n_models;
    struct sim_expect fixed;
    sim_verify_expect_cb *fn;
    void *aux;
    struct seq_map seqs;        /* order of flows beyond the dense tables */
    uint8_t exp[BUF_CAP];       /* the expected frame */
    uint8_t mask[BUF_CAP];      /* 1: byte not compared */
};

/* The order word of (model, flow); NULL if out of memory. */
static uint64_t *seq_slot(struct sim_verify *v, struct vmodel *m, uint64_t flow)
{
    if (flow >= SEQ_DENSE_MAX)
        return seq_map_get(&v->seqs, (uint64_t)m->id << 48 | flow);
    if (flow >= m->n_next) {
        size_t n = m->n_next ? m->n_next : 1024;
        while (n <= flow)
            n *= 2;
        uint64_t *a = fs_alloc_big(n * sizeof *a);
        if (!a)
            return NULL;
        if (m->n_next)
            memcpy(a, m->next, m->n_next * sizeof *a);
        fs_free_big(m->next, m->n_next * sizeof *a);
        m->next = a;
        m->n_next = n;
    }
    return &m->next[flow];
}

/* The frame being checked, for the violations it gets. */
struct ctx {
    struct sim_verify *v;
    unsigned found;
    bool tagged;
    uint16_t model;
    uint64_t flow, seq;
};

static void violation(struct ctx *c, enum sim_verify_reason r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void violation(struct ctx *c, enum sim_verify_reason r, const char *fmt, ...)
{
    struct sim_verify *v = c->v;
    c->found++;
    v->st.violations[r]++;
    if (v->n_listed >= v->max_listed)
        return;
    struct sim_verify_violation *x = &v->listed[v->n_listed++];
    x->reason = (uint8_t)r;
    x->tagged = c->tagged;
    x->model_id = c->model;
    x->flow_id = c->flow;
    x->seq = c->seq;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->detail, sizeof x->detail, fmt, ap);
    va_end(ap);
}

struct sim_verify *sim_verify_new(size_t max_listed)
{
    struct sim_verify *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->max_listed = max_listed;
    v->listed = calloc(max_listed ? max_listed : 1, sizeof *v->listed);
    if (!v->listed) {
        free(v);
        return NULL;
    }
    return v;
}

void sim_verify_destroy(struct sim_verify *v)
{
    if (!v)
        return;
    free(v->listed);
    for (size_t i = 0; i < v->n_models; i++)
        fs_free_big(v->models[i].next, v->models[i].n_next * sizeof *v->models[i].next);
    free(v->models);
    free(v->seqs.e);
    free(v);
}

static struct vmodel *find_model(const struct sim_verify *v, uint16_t id)
{
    for (size_t i = 0; i < v->n_models; i++)
        if (v->models[i].id == id)
            return &v->models[i];
    return NULL;
}

int sim_verify_add_model(struct sim_verify *v, const struct sim_traffic *t)
{
    if (find_model(v, sim_traffic_id(t)))
        return -1;
    struct vmodel *m = realloc(v->models, (v->n_models + 1) * sizeof *m);
    if (!m)
        return -1;
    v->models = m;
    struct vmodel *nm = &m[v->n_models];
    *nm = (struct vmodel){.t = t, .id = sim_traffic_id(t)};
    /* Room for the flows the model starts with (pages are touched only as
     * flows arrive); churned flows grow it. */
    uint64_t flows = sim_traffic_flows_created(t);
    if (flows > 0 && !seq_slot(v, nm, (flows < SEQ_DENSE_MAX ? flows : SEQ_DENSE_MAX) - 1))
        return -1;
    v->n_models++;
    return 0;
}

int sim_verify_expect_model(struct sim_verify *v, uint16_t model_id, const struct sim_expect *exp)
{
    struct vmodel *m = find_model(v, model_id);
    if (!m || (exp && exp->n > SIM_XFORM_MAX))
        return -1;
    m->how = exp ? EXPECT_GIVEN : EXPECT_NONE;
    if (exp)
        m->exp = *exp;
    return 0;
}

int sim_verify_expect(struct sim_verify *v, const struct sim_expect *exp)
{
    if (exp->n > SIM_XFORM_MAX)
        return -1;
    v->fixed = *exp;
    return 0;
}

void sim_verify_expect_by_flow(struct sim_verify *v, sim_verify_expect_cb *fn, void *aux)
{
    v->fn = fn;
    v->aux = aux;
}

void sim_verify_prefetch(const struct sim_verify *v, uint16_t model_id, uint64_t flow)
{
    const struct vmodel *m = find_model(v, model_id);
    if (m && flow < m->n_next)
        __builtin_prefetch(&m->next[flow], 1);
}

const struct sim_verify_stats *sim_verify_stats(const struct sim_verify *v)
{
    return &v->st;
}

size_t sim_verify_listed(const struct sim_verify *v, const struct sim_verify_violation **list)
{
    *list = v->listed;
    return v->n_listed;
}

/* ---- expected transforms, applied to the frame sent ---- */

static bool apply_dec_ttl(uint8_t *b, size_t len)
{
    uint16_t type;
    size_t o;
    if (!parse_l2(b, len, 0, &type, &o))
        return false;
    if (type == 0x0800 && len >= o + 20) {
        if (b[o + 8] <= 1)
            return false; /* the datapath drops it: it cannot arrive */
        /* RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m') for the TTL/protocol word. */
        uint16_t m = be16(b + o + 8), m2 = (uint16_t)(m - 0x100);
        uint64_t s = (uint16_t)~be16(b + o + 10) + (uint64_t)(uint16_t)~m + m2;
        b[o + 8]--;
        put16(b + o + 10, (uint16_t)~vfold(s));
        return true;
    }
    if (type == 0x86dd && len >= o + 40) {
        if (b[o + 7] <= 1)
            return false;
        b[o + 7]--;
        return true;
    }
    return false; /* no IP header */
}

static bool apply_encap(uint8_t *b, size_t *len, const struct sim_vxlan_encap *e)
{
    size_t iplen = e->ipv6 ? 40 : 20, h = 14 + iplen + 16, inner = *len;
    if (inner + h > BUF_CAP || inner + 16 > 0xffff - iplen)
        return false;
    memmove(b + h, b, inner);
    memcpy(b, e->dst_mac, 6);
    memcpy(b + 6, e->src_mac, 6);
    put16(b + 12, e->ipv6 ? 0x86dd : 0x0800);
    uint8_t *ip = b + 14, *udp = ip + iplen, *vx = udp + 8;
    if (e->ipv6) {
        ip[0] = (uint8_t)(0x60 | e->tos >> 4);
        ip[1] = (uint8_t)(e->tos << 4);
        ip[2] = ip[3] = 0;
        put16(ip + 4, (uint16_t)(16 + inner));
        ip[6] = 17;
        ip[7] = e->ttl;
        memcpy(ip + 8, e->src_ip, 16);
        memcpy(ip + 24, e->dst_ip, 16);
    } else {
        ip[0] = 0x45;
        ip[1] = e->tos;
        put16(ip + 2, (uint16_t)(20 + 16 + inner));
        put16(ip + 4, 0); /* any identification: not compared */
        put16(ip + 6, e->df ? 0x4000 : 0);
        ip[8] = e->ttl;
        ip[9] = 17;
        put16(ip + 10, 0);
        memcpy(ip + 12, e->src_ip, 4);
        memcpy(ip + 16, e->dst_ip, 4);
        put16(ip + 10, (uint16_t)~vfold(vsum(ip, 20)));
    }
    put16(udp, 0); /* any source port in 49152..65535 */
    put16(udp + 2, e->dst_port);
    put16(udp + 4, (uint16_t)(16 + inner));
    put16(udp + 6, 0);
    vx[0] = 0x08;
    vx[1] = vx[2] = vx[3] = 0;
    vx[4] = (uint8_t)(e->vni >> 16);
    vx[5] = (uint8_t)(e->vni >> 8);
    vx[6] = (uint8_t)e->vni;
    vx[7] = 0;
    *len = inner + h;
    return true;
}

/* Applies x to the frame b[0..*len); false (with why) if it cannot. */
static bool apply(const struct sim_xform *x, uint8_t *b, size_t *len, bool *encapped,
                  const char **why)
{
    switch (x->kind) {
    case SIM_XF_MOD_DL_SRC:
    case SIM_XF_MOD_DL_DST:
        memcpy(b + (x->kind == SIM_XF_MOD_DL_SRC ? 6 : 0), x->mac, 6);
        return true;
    case SIM_XF_DEC_TTL:
        *why = "dec_ttl: no IP header, or a TTL the datapath drops";
        return apply_dec_ttl(b, *len);
    case SIM_XF_PUSH_VLAN:
        if (*len + 4 > BUF_CAP)
            return false;
        memmove(b + 16, b + 12, *len - 12);
        put16(b + 12, x->tpid);
        put16(b + 14, x->tci);
        *len += 4;
        return true;
    case SIM_XF_POP_VLAN: {
        uint16_t t = be16(b + 12);
        *why = "pop_vlan: the packet has no VLAN tag";
        if ((t != 0x8100 && t != 0x88a8) || *len < 18)
            return false;
        memmove(b + 12, b + 16, *len - 16);
        *len -= 4;
        return true;
    }
    case SIM_XF_VXLAN_ENCAP:
        *why = "vxlan encap: the frame would be too long";
        if (!apply_encap(b, len, &x->encap))
            return false;
        *encapped = true;
        return true;
    case SIM_XF_VXLAN_DECAP: {
        struct vframe f;
        *why = "vxlan decap: the packet is not VXLAN";
        if (!parse_frame(b, *len, &f) || f.n != 2)
            return false;
        size_t inner = f.lay[0].l4 + 16, end = f.lay[0].l4 + f.lay[0].l4len;
        memmove(b, b + inner, end - inner);
        *len = end - inner;
        *encapped = false;
        return true;
    }
    }
    *why = "unknown transform";
    return false;
}

/* Marks the bytes not compared: checksum fields, and the outer fields an
 * encapsulation may choose. */
static void build_mask(uint8_t *mask, size_t len, const struct vframe *v, bool encapped)
{
    memset(mask, 0, len);
    for (unsigned i = 0; i < v->n; i++) {
        const struct vlayer *L = &v->lay[i];
        if (L->ip == 4)
            mask[L->l3 + 10] = mask[L->l3 + 11] = 1;
        if (L->csum != NO_OFS)
            mask[L->csum] = mask[L->csum + 1] = 1;
    }
    if (encapped && v->n == 2) {
        const struct vlayer *o = &v->lay[0];
        mask[o->l4] = mask[o->l4 + 1] = 1;
        if (o->ip == 4)
            mask[o->l3 + 4] = mask[o->l3 + 5] = 1;
    }
}

static const enum sim_verify_reason csum_reason[4] = {
    SIM_VERIFY_IP_CSUM, SIM_VERIFY_L4_CSUM, SIM_VERIFY_INNER_IP_CSUM, SIM_VERIFY_INNER_L4_CSUM};
static const char *const layer_name[4] = {"IPv4 header", "L4", "inner IPv4 header", "inner L4"};

/* Checksum violations of a frame expected with 'want_bad' layers wrong. */
static void check_csums(struct ctx *c, unsigned got_bad, unsigned want_bad)
{
    for (unsigned i = 0; i < 4; i++) {
        unsigned bit = 1u << i;
        if ((got_bad & bit) && !(want_bad & bit))
            violation(c, csum_reason[i], "%s checksum wrong", layer_name[i]);
        else if ((want_bad & bit) && !(got_bad & bit))
            violation(c, SIM_VERIFY_BAD_CSUM_FIXED, "%s checksum sent wrong arrived right",
                      layer_name[i]);
    }
}

/* Compares the received frame with the expected one, e[0..elen). */
static void compare(struct ctx *c, const uint8_t *f, size_t len, const uint8_t *e, size_t elen,
                    size_t etag, const struct vframe *ev, bool encapped)
{
    struct sim_verify *v = c->v;
    size_t n = elen;
    if (len == elen && !memcmp(f, e, len))
        return; /* the common case: identical, checksums included */
    if (len != elen && !(elen < 60 && len == 60)) { /* Ethernet padding is allowed */
        violation(c, SIM_VERIFY_LENGTH, "%zu bytes, expected %zu", len, elen);
        n = len < elen ? len : elen;
    }
    build_mask(v->mask, elen, ev, encapped);
    /* The masked bytes are all in the headers: byte by byte up to the
     * payload, then memcmp() and a byte loop only to name a difference. */
    size_t hdr = etag < n ? etag : n;
    size_t i = 0;
    while (i < hdr && (f[i] == e[i] || v->mask[i]))
        i++;
    if (i == hdr) {
        if (!memcmp(f + hdr, e + hdr, n - hdr))
            i = n;
        else
            while (f[i] == e[i])
                i++;
    }
    if (i < n)
        violation(c, i < etag ? SIM_VERIFY_HEADER : SIM_VERIFY_PAYLOAD,
                  "byte %zu is 0x%02x, expected 0x%02x", i, f[i], e[i]);
    if (encapped && ev->n == 2 && len >= ev->lay[0].l4 + 2) {
        uint16_t sport = be16(f + ev->lay[0].l4);
        if (sport < 49152)
            violation(c, SIM_VERIFY_VXLAN_SPORT, "outer UDP source port %u", sport);
    }
}

/* The expectation for a frame of (model, flow, seq): NULL if it must not
 * arrive here. */
static const struct sim_expect *expectation(struct sim_verify *v, const struct vmodel *m,
                                            uint64_t flow, uint64_t seq, struct sim_expect *buf)
{
    if (m->how == EXPECT_GIVEN)
        return &m->exp;
    if (m->how == EXPECT_NONE)
        return NULL;
    if (!v->fn)
        return &v->fixed;
    struct sim_flow_desc fd;
    sim_traffic_flow(m->t, flow, &fd);
    memset(buf, 0, sizeof *buf);
    return v->fn(v->aux, m->id, &fd, seq, buf) ? buf : NULL;
}

/* sim_verify_frame(), with the frame the model sent when the caller kept
 * it (sent != NULL: its bytes and the layer the model got wrong) instead of
 * rebuilding it. */
static unsigned verify_frame(struct sim_verify *v, const uint8_t *f, size_t len,
                             const uint8_t *sent, size_t sent_len, uint8_t sent_bad)
{
    struct ctx c = {.v = v};
    struct vframe rf;
    v->st.frames++;
    if (!parse_frame(f, len, &rf)) {
        violation(&c, SIM_VERIFY_MALFORMED, "%zu-byte frame does not parse", len);
        return c.found;
    }
    unsigned got_bad = frame_bad(f, &rf);
    uint16_t model_id;
    uint64_t flow, seq;
    if (rf.tag == NO_OFS || !sim_tag_read(f, len, rf.tag, &model_id, &flow, &seq)) {
        v->st.untagged++;
        check_csums(&c, got_bad, 0);
        goto done;
    }
    c.tagged = true;
    c.model = model_id;
    c.flow = flow;
    c.seq = seq;
    struct vmodel *m = find_model(v, model_id);
    if (!m) {
        violation(&c, SIM_VERIFY_UNKNOWN_MODEL, "model %u", model_id);
        check_csums(&c, got_bad, 0);
        goto done;
    }
    struct sim_expect buf;
    const struct sim_expect *exp = expectation(v, m, flow, seq, &buf);
    if (!exp) {
        violation(&c, SIM_VERIFY_MISFORWARDED, "flow %llu of model %u",
                  (unsigned long long)flow, model_id);
        goto done;
    }

    uint64_t *next = seq_slot(v, m, flow);
    if (!next)
        v->st.order_unchecked++;
    else if (*next && seq + 1 < *next)
        violation(&c, SIM_VERIFY_REORDERED, "after %llu", (unsigned long long)(*next - 1));
    else if (*next && seq + 1 == *next)
        violation(&c, SIM_VERIFY_DUPLICATE, "seen already");
    else
        *next = seq + 1;

    if (exp->n > SIM_XFORM_MAX) {
        violation(&c, SIM_VERIFY_BAD_EXPECTATION, "%u transforms, at most %d", exp->n,
                  SIM_XFORM_MAX);
        goto done;
    }
    /* Delivered unchanged as kept, byte for byte (the common case): the
     * checksums it was sent with, right or wrong on purpose, are those it
     * has, and got_bad has checked them. */
    if (sent && exp->n == 0 && len == sent_len && !memcmp(f, sent, len)) {
        if (sent_bad != SIM_BAD_NONE && got_bad)
            v->st.bad_csum_expected++;
        else if (got_bad)
            check_csums(&c, got_bad, 0);
        goto done;
    }

    struct sim_traffic_info info;
    const uint8_t *e = v->exp;
    size_t elen;
    if (sent && exp->n == 0) {
        e = sent;
        elen = sent_len;
        info.bad = sent_bad;
    } else if (sent && sent_len <= sizeof v->exp) {
        memcpy(v->exp, sent, sent_len);
        elen = sent_len;
        info.bad = sent_bad;
    } else {
        elen = sim_traffic_build(m->t, flow, seq, v->exp, &info);
    }
    bool encapped = false;
    for (unsigned i = 0; i < exp->n; i++) {
        const char *why = "";
        if (!apply(&exp->xf[i], v->exp, &elen, &encapped, &why)) {
            violation(&c, SIM_VERIFY_BAD_EXPECTATION, "%s", why);
            goto done;
        }
    }
    struct vframe ef;
    if (!parse_frame(e, elen, &ef)) {
        violation(&c, SIM_VERIFY_BAD_EXPECTATION, "the expected frame does not parse");
        goto done;
    }
    /* The transforms keep checksums right: a frame the model did not get
     * wrong on purpose is expected right everywhere. */
    unsigned want_bad = info.bad == SIM_BAD_NONE ? 0 : frame_bad(e, &ef);
    check_csums(&c, got_bad, want_bad);
    if (want_bad && (got_bad & want_bad) == want_bad)
        v->st.bad_csum_expected++;
    compare(&c, f, len, e, elen, ef.tag == NO_OFS ? elen : ef.tag, &ef, encapped);

done:
    if (!c.found)
        v->st.ok++;
    return c.found;
}

unsigned sim_verify_frame(struct sim_verify *v, const uint8_t *f, size_t len)
{
    return verify_frame(v, f, len, NULL, 0, 0);
}

unsigned sim_verify_frame_sent(struct sim_verify *v, const uint8_t *f, size_t len,
                               const uint8_t *sent, size_t sent_len, uint8_t sent_bad)
{
    return verify_frame(v, f, len, sent, sent_len, sent_bad);
}
