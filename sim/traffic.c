/* traffic.c: the traffic model (see traffic.h): flow identities, frames,
 * arrivals, popularity and churn. */
#include "traffic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "dmath.h" /* arrival arithmetic as written: no fused multiply-add */
#include "rng.h"
#include "util.h"
#include "zipf.h"

/* Purposes of a model's rng streams (the low 8 bits of the index). */
enum { STREAM_ARRIVAL, STREAM_PICK, STREAM_CHURN };

/* Salts of the hashed draws: flow attributes and per-packet choices. */
enum {
    H_VXLAN = 1, H_PROTO, H_IPV6, H_VLAN, H_VID, H_SRC, H_SRC6, H_DST, H_DST6, H_SPORT,
    H_DPORT, H_OUTER_SPORT, H_LABEL, H_ACK,
    P_SIZE = 1, P_BAD, P_FILL,
};

#define VXLAN_OUTER_LEN (14 + 20 + 8 + 8)

struct sim_traffic {
    struct sim_traffic_cfg cfg;
    uint16_t id;
    uint64_t key;              /* the hash key of identities: (seed, id) mixed */
    double size_cdf[SIM_TRAFFIC_SIZES_MAX];
    double mix_cdf[SIM_PROTO_N], inner_cdf[SIM_PROTO_N];

    struct sim_rng arrival_rng, pick_rng, churn_rng;
    struct sim_zipf zipf;
    uint64_t *seqs;            /* next sequence number per slot */
    uint64_t *slot_flow;       /* flow id per slot (with churn), else slot i = flow i */
    uint64_t next_slot;        /* the next packet's slot, drawn one packet ahead
                                * so that its per-flow state can be prefetched */
    uint64_t next_flow;        /* the next flow id churn hands out */

    /* Arrival process. */
    double ns_per_pkt;         /* pps rates: 1e9 / pps */
    double ns_per_bit;         /* bit rates: 1e9 / bps */
    double line_ns_per_bit;    /* bursty: the line rate */
    uint64_t n;                /* packets generated */
    uint64_t bits;             /* their wire bits (with preamble and gap) */
    double t_next;             /* arrival of the next packet, ns */
    uint32_t burst_pos;
    uint64_t burst_bits;
    double burst_start;

    double churn_period;       /* ns between replacements, 0: none */
    uint64_t churned;

    uint8_t frame[SIM_TRAFFIC_FRAME_MAX]; /* built here, then copied to a packet */
    /* Identities computed lately (sim_traffic_flow() is pure: this only
     * saves recomputing those of popular flows), direct-mapped by id. */
    struct sim_flow_desc *flow_cache; /* SIM_FLOW_CACHE entries, id + 1 in .id */
    /* Payload bytes: SIM_FILL_LEN pseudo-random bytes of the model's key;
     * a packet's payload is a window of them. */
    uint8_t *fill;
};

#define SIM_FLOW_CACHE 16384
#define SIM_FILL_SPAN 16384u /* a power of two: window starts */
#define SIM_FILL_LEN ((SIM_FILL_SPAN + SIM_TRAFFIC_FRAME_MAX + 7) & ~7u)

/* ---- hashing ---- */

static uint64_t flow_hash(const struct sim_traffic *t, uint64_t flow_id)
{
    return sim_mix64(t->key ^ sim_mix64(flow_id + 0x632be59bd9b4e019ULL));
}

static uint64_t salt(uint64_t h, uint64_t k)
{
    return sim_mix64(h + k * 0x9e3779b97f4a7c15ULL);
}

static uint64_t pkt_hash(uint64_t fh, uint64_t seq)
{
    return sim_mix64(fh ^ sim_mix64(seq + 0xa0761d6478bd642fULL));
}

static void make_cdf(const double *w, unsigned n, double *cdf)
{
    double sum = 0, acc = 0;
    for (unsigned i = 0; i < n; i++)
        sum += w[i];
    for (unsigned i = 0; i < n; i++) {
        acc += w[i];
        cdf[i] = acc / sum;
    }
    cdf[n - 1] = 1.0;
}

/* The index whose cdf interval holds u in [0, 1); zero-weight entries are
 * never chosen. */
static unsigned pick_cdf(const double *cdf, unsigned n, double u)
{
    for (unsigned i = 0; i + 1 < n; i++)
        if (u < cdf[i])
            return i;
    return n - 1;
}

static uint64_t in_range(uint64_t h, uint64_t lo, uint64_t hi)
{
    return lo + h % (hi - lo + 1);
}

/* prefix with its host bits from h (bytes in network order). */
static void fill_prefix(uint8_t *out, const uint8_t *prefix, unsigned bytes, unsigned plen,
                        uint64_t h1, uint64_t h2)
{
    for (unsigned i = 0; i < bytes; i++) {
        unsigned keep = plen >= (i + 1) * 8 ? 8 : plen > i * 8 ? plen - i * 8 : 0;
        uint8_t mask = (uint8_t)(0xff00u >> keep);
        uint64_t h = i < 8 ? h1 >> (8 * i) : h2 >> (8 * (i - 8));
        out[i] = (uint8_t)((prefix[i] & mask) | ((uint8_t)h & ~mask));
    }
}

static void flow_compute(const struct sim_traffic *t, uint64_t flow_id, struct sim_flow_desc *d);

void sim_traffic_flow(const struct sim_traffic *t, uint64_t flow_id, struct sim_flow_desc *d)
{
    struct sim_flow_desc *e = t->flow_cache ? &t->flow_cache[flow_id % SIM_FLOW_CACHE] : NULL;
    if (e && e->id == flow_id + 1) {
        *d = *e;
        d->id = flow_id;
        return;
    }
    flow_compute(t, flow_id, d);
    if (e) {
        *e = *d;
        e->id = flow_id + 1;
    }
}

static void flow_compute(const struct sim_traffic *t, uint64_t flow_id, struct sim_flow_desc *d)
{
    const struct sim_traffic_cfg *c = &t->cfg;
    uint64_t fh = flow_hash(t, flow_id);
    memset(d, 0, sizeof *d);
    d->id = flow_id;
    d->vxlan = sim_unit(salt(fh, H_VXLAN)) < c->vxlan_share;
    const struct sim_traffic_mix *mix = d->vxlan ? &c->inner : &c->mix;
    d->proto = (uint8_t)pick_cdf(d->vxlan ? t->inner_cdf : t->mix_cdf, SIM_PROTO_N,
                                 sim_unit(salt(fh, H_PROTO)));
    d->ipv6 = d->proto != SIM_PROTO_ARP && sim_unit(salt(fh, H_IPV6)) < mix->ipv6_share;
    d->vlan = sim_unit(salt(fh, H_VLAN)) < c->vlan_share;
    if (d->vlan)
        d->vlan_tci = (uint16_t)(c->vlan_pcp << 13 |
                                 in_range(salt(fh, H_VID), c->vlan_lo, c->vlan_hi));
    if (d->vxlan) {
        d->vni = c->vni;
        d->outer_sport = (uint16_t)(49152 + salt(fh, H_OUTER_SPORT) % 16384);
    }
    memcpy(d->src_mac, c->src_mac, 6);
    if (d->proto == SIM_PROTO_ARP)
        memset(d->dst_mac, 0xff, 6);
    else
        memcpy(d->dst_mac, c->dst_mac, 6);
    if (d->ipv6) {
        fill_prefix(d->src_ip, c->src_ip6, 16, c->src_ip6_len, salt(fh, H_SRC), salt(fh, H_SRC6));
        fill_prefix(d->dst_ip, c->dst_ip6, 16, c->dst_ip6_len, salt(fh, H_DST), salt(fh, H_DST6));
        d->flow_label = (uint32_t)(salt(fh, H_LABEL) & 0xfffff);
    } else {
        fill_prefix(d->src_ip, c->src_ip4, 4, c->src_ip4_len, salt(fh, H_SRC), 0);
        fill_prefix(d->dst_ip, c->dst_ip4, 4, c->dst_ip4_len, salt(fh, H_DST), 0);
    }
    if (d->proto == SIM_PROTO_ICMP) {
        d->sport = (uint16_t)salt(fh, H_SPORT);
    } else if (d->proto != SIM_PROTO_ARP) {
        d->sport = (uint16_t)in_range(salt(fh, H_SPORT), c->sport_lo, c->sport_hi);
        d->dport = (uint16_t)in_range(salt(fh, H_DPORT), c->dport_lo, c->dport_hi);
        /* A plain UDP flow to the VXLAN port would be taken for VXLAN. */
        if (d->proto == SIM_PROTO_UDP && d->dport == 4789 && c->dport_lo != c->dport_hi)
            d->dport = d->dport == c->dport_hi ? c->dport_lo : 4790;
    }
}

/* ---- frames ---- */

static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
    wr16(p, (uint16_t)(v >> 16));
    wr16(p + 2, (uint16_t)v);
}

static void wr48(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 6; i++)
        p[i] = (uint8_t)(v >> (40 - 8 * i));
}

static void wr64(uint8_t *p, uint64_t v)
{
    uint64_t be = __builtin_bswap64(v);
    memcpy(p, &be, 8);
}

bool sim_tag_read(const uint8_t *f, size_t len, size_t ofs, uint16_t *model_id,
                  uint64_t *flow_id, uint64_t *seq)
{
    if (ofs > len || len - ofs < SIM_TAG_LEN)
        return false;
    const uint8_t *p = f + ofs;
    if ((p[0] << 8 | p[1]) != SIM_TAG_MAGIC)
        return false;
    uint64_t fl = 0, sq = 0;
    for (int i = 0; i < 6; i++) {
        fl = fl << 8 | p[4 + i];
        sq = sq << 8 | p[10 + i];
    }
    *model_id = (uint16_t)(p[2] << 8 | p[3]);
    *flow_id = fl;
    *seq = sq;
    return true;
}

static size_t put_eth(uint8_t *f, const uint8_t *dst, const uint8_t *src, bool vlan, uint16_t tci,
                      uint16_t type)
{
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    size_t o = 12;
    if (vlan) {
        wr16(f + 12, 0x8100);
        wr16(f + 14, tci);
        o = 16;
    }
    wr16(f + o, type);
    return o + 2;
}

/* The L4 checksum field value of the segment at l4 behind IP header ip. */
static uint16_t l4_csum(const uint8_t *ip, bool v6, uint8_t proto, const uint8_t *l4, size_t len)
{
    uint32_t sum = 0;
    if (v6) {
        sum = csum_pseudo_ipv6(ip + 8, ip + 24, proto, (uint32_t)len);
    } else if (proto != 1) {
        uint32_t s, d;
        memcpy(&s, ip + 12, 4);
        memcpy(&d, ip + 16, 4);
        sum = csum_pseudo_ipv4(s, d, proto, (uint16_t)len);
    }
    uint16_t c = csum_fold(csum_partial(l4, len, sum));
    return proto == 17 ? csum_udp_field(c) : c;
}

/* A checksum field value that is wrong for its data: never the same value
 * in ones' complement (0 and 0xffff), never UDP's "no checksum". */
static uint16_t corrupt(uint16_t field, bool udp)
{
    uint16_t b = (uint16_t)(field ^ 0x5555);
    if (udp && b == 0)
        b = (uint16_t)(field ^ 0xaaaa);
    return b;
}

static void corrupt_at(uint8_t *p, bool udp)
{
    uint16_t v;
    memcpy(&v, p, 2);
    v = corrupt(v, udp);
    memcpy(p, &v, 2);
}

/* Builds the (inner) frame of flow d, packet seq, into f with at least
 * 'target' bytes; returns its length and sets the tag fields of *info.
 * bad_inner corrupts that layer (L4 or IP) after the checksums. */
static size_t build_inner(const struct sim_traffic *t, const struct sim_flow_desc *d,
                          uint64_t seq, uint64_t ph, size_t target, bool with_vlan,
                          enum sim_bad_layer bad, uint8_t *f, struct sim_traffic_info *info)
{
    const struct sim_traffic_cfg *c = &t->cfg;
    bool arp = d->proto == SIM_PROTO_ARP;
    uint16_t type = arp ? 0x0806 : d->ipv6 ? 0x86dd : 0x0800;
    size_t l2 = put_eth(f, d->dst_mac, d->src_mac, with_vlan, d->vlan_tci, type);
    size_t l3len = arp ? 28 : d->ipv6 ? 40 : 20;
    size_t l4len = arp ? 0 : d->proto == SIM_PROTO_TCP ? 20 : 8;
    size_t hdr = l2 + l3len + l4len;
    size_t len = target > hdr ? target : hdr;
    if (len < 60)
        len = 60;
    uint8_t *l3 = f + l2, *l4 = l3 + l3len, *pay = l4 + l4len;
    size_t paylen = len - hdr;

    /* Payload: the tag, then a pattern of the packet's hash. */
    info->tagged = paylen >= SIM_TAG_LEN;
    info->tag_ofs = info->tagged ? (uint16_t)hdr : 0;
    size_t i = 0;
    if (info->tagged) {
        wr16(pay, SIM_TAG_MAGIC);
        wr16(pay + 2, t->id);
        wr48(pay + 4, d->id);
        wr48(pay + 10, seq);
        i = SIM_TAG_LEN;
    }
    if (i < paylen)
        memcpy(pay + i, t->fill + (salt(ph, P_FILL) & (SIM_FILL_SPAN - 1)), paylen - i);

    if (arp) {
        static const uint8_t arp_hdr[8] = {0, 1, 8, 0, 6, 4, 0, 1};
        memcpy(l3, arp_hdr, 8);
        memcpy(l3 + 8, d->src_mac, 6);
        memcpy(l3 + 14, d->src_ip, 4);
        memset(l3 + 18, 0, 6);
        memcpy(l3 + 24, d->dst_ip, 4);
        info->bad = SIM_BAD_NONE;
        return len;
    }

    size_t seglen = l4len + paylen;
    uint8_t proto;
    switch (d->proto) {
    case SIM_PROTO_TCP:
        proto = 6;
        wr16(l4, d->sport);
        wr16(l4 + 2, d->dport);
        wr32(l4 + 4, (uint32_t)seq);
        wr32(l4 + 8, (uint32_t)salt(ph, H_ACK) | 1);
        l4[12] = 0x50;
        l4[13] = 0x18; /* ACK, PSH */
        wr16(l4 + 14, 0xffff);
        wr16(l4 + 16, 0);
        wr16(l4 + 18, 0);
        break;
    case SIM_PROTO_UDP:
        proto = 17;
        wr16(l4, d->sport);
        wr16(l4 + 2, d->dport);
        wr16(l4 + 4, (uint16_t)seglen);
        wr16(l4 + 6, 0);
        break;
    default: /* ICMP / ICMPv6 echo request */
        proto = d->ipv6 ? 58 : 1;
        l4[0] = d->ipv6 ? 128 : 8;
        l4[1] = 0;
        wr16(l4 + 2, 0);
        wr16(l4 + 4, d->sport);
        wr16(l4 + 6, (uint16_t)seq);
        break;
    }

    if (d->ipv6) {
        uint32_t vtf = 0x60000000u | d->flow_label;
        l3[0] = (uint8_t)(vtf >> 24);
        l3[1] = (uint8_t)(vtf >> 16);
        l3[2] = (uint8_t)(vtf >> 8);
        l3[3] = (uint8_t)vtf;
        wr16(l3 + 4, (uint16_t)seglen);
        l3[6] = proto;
        l3[7] = c->ttl;
        memcpy(l3 + 8, d->src_ip, 16);
        memcpy(l3 + 24, d->dst_ip, 16);
    } else {
        l3[0] = 0x45;
        l3[1] = 0;
        wr16(l3 + 2, (uint16_t)(20 + seglen));
        wr16(l3 + 4, (uint16_t)seq);
        wr16(l3 + 6, 0x4000); /* DF */
        l3[8] = c->ttl;
        l3[9] = proto;
        wr16(l3 + 10, 0);
        memcpy(l3 + 12, d->src_ip, 4);
        memcpy(l3 + 16, d->dst_ip, 4);
        uint16_t ipc = csum_ipv4_hdr(l3, 20);
        memcpy(l3 + 10, &ipc, 2);
    }
    size_t cofs = proto == 6 ? 16 : proto == 17 ? 6 : 2;
    uint16_t lc = l4_csum(l3, d->ipv6, proto, l4, seglen);
    memcpy(l4 + cofs, &lc, 2);

    /* Only tagged frames are corrupted: a sink tells them from faults. */
    info->bad = SIM_BAD_NONE;
    if (bad == SIM_BAD_L4 && info->tagged) {
        corrupt_at(l4 + cofs, proto == 17);
        info->bad = SIM_BAD_L4;
    } else if (bad == SIM_BAD_IP && !d->ipv6 && info->tagged) {
        corrupt_at(l3 + 10, false);
        info->bad = SIM_BAD_IP;
    }
    return len;
}

size_t sim_traffic_frame_max(const struct sim_traffic_cfg *cfg)
{
    size_t len = 14 + 4 + 40 + 20; /* the longest headers build_inner() writes */
    for (unsigned i = 0; i < cfg->n_sizes; i++)
        if ((size_t)cfg->size[i] - 4u > len)
            len = (size_t)cfg->size[i] - 4u;
    if (cfg->vxlan_share > 0)
        len += VXLAN_OUTER_LEN + 4;
    return len;
}

size_t sim_traffic_build(const struct sim_traffic *t, uint64_t flow_id, uint64_t seq,
                         uint8_t *buf, struct sim_traffic_info *info)
{
    const struct sim_traffic_cfg *c = &t->cfg;
    struct sim_flow_desc d;
    sim_traffic_flow(t, flow_id, &d);
    uint64_t ph = pkt_hash(flow_hash(t, flow_id), seq);
    size_t target = c->size[pick_cdf(t->size_cdf, c->n_sizes, sim_unit(salt(ph, P_SIZE)))] - 4u;
    bool bad = c->bad_share > 0 && sim_unit(salt(ph, P_BAD)) < c->bad_share;
    enum sim_bad_layer layer = bad ? c->bad_layer : SIM_BAD_NONE;

    memset(info, 0, sizeof *info);
    info->flow_id = flow_id;
    info->seq = seq;
    info->slot = UINT64_MAX;
    info->model_id = t->id;
    info->proto = d.proto;
    info->ipv6 = d.ipv6;
    info->vlan = d.vlan;
    info->vxlan = d.vxlan;

    size_t len;
    if (!d.vxlan) {
        len = build_inner(t, &d, seq, ph, target, d.vlan, layer, buf, info);
    } else {
        size_t outer = VXLAN_OUTER_LEN + (d.vlan ? 4 : 0);
        bool inner_bad = layer == SIM_BAD_L4 || layer == SIM_BAD_IP;
        size_t inner = build_inner(t, &d, seq, ph, target, false,
                                   inner_bad ? layer : SIM_BAD_NONE, buf + outer, info);
        if (info->tagged)
            info->tag_ofs = (uint16_t)(info->tag_ofs + outer);
        len = outer + inner;
        size_t l2 = put_eth(buf, c->vxlan_dst_mac, c->vxlan_src_mac, d.vlan, d.vlan_tci, 0x0800);
        uint8_t *ip = buf + l2, *udp = ip + 20, *vx = udp + 8;
        ip[0] = 0x45;
        ip[1] = 0;
        wr16(ip + 2, (uint16_t)(20 + 16 + inner));
        wr16(ip + 4, 0);
        wr16(ip + 6, 0x4000);
        ip[8] = c->ttl;
        ip[9] = 17;
        wr16(ip + 10, 0);
        memcpy(ip + 12, c->vxlan_src_ip, 4);
        memcpy(ip + 16, c->vxlan_dst_ip, 4);
        wr16(udp, d.outer_sport);
        wr16(udp + 2, 4789);
        wr16(udp + 4, (uint16_t)(16 + inner));
        wr16(udp + 6, 0);
        vx[0] = 0x08;
        vx[1] = vx[2] = vx[3] = 0;
        vx[4] = (uint8_t)(d.vni >> 16);
        vx[5] = (uint8_t)(d.vni >> 8);
        vx[6] = (uint8_t)d.vni;
        vx[7] = 0;
        uint16_t ipc = csum_ipv4_hdr(ip, 20);
        memcpy(ip + 10, &ipc, 2);
        bool outer_bad = info->tagged && (layer == SIM_BAD_OUTER_IP || layer == SIM_BAD_OUTER_UDP);
        if (c->vxlan_udp_csum || (outer_bad && layer == SIM_BAD_OUTER_UDP)) {
            uint16_t uc = l4_csum(ip, false, 17, udp, 16 + inner);
            memcpy(udp + 6, &uc, 2);
        }
        if (outer_bad) {
            corrupt_at(layer == SIM_BAD_OUTER_IP ? ip + 10 : udp + 6, layer == SIM_BAD_OUTER_UDP);
            info->bad = (uint8_t)layer;
        }
    }
    info->frame_len = (uint32_t)len;
    info->wire_bytes = (uint32_t)len + 4;
    return len;
}

/* The next draw of the popularity stream. */
static uint64_t pick_slot(struct sim_traffic *t)
{
    return t->cfg.popularity == SIM_POP_ZIPF ? sim_zipf_sample(&t->zipf, &t->pick_rng) - 1
                                             : sim_rng_below(&t->pick_rng, t->cfg.flows);
}

/* ---- the model ---- */

struct sim_traffic *sim_traffic_new(const struct sim_traffic_cfg *cfg, uint64_t seed,
                                    uint16_t id, double line_bps, char *err, size_t errlen)
{
    if (sim_traffic_cfg_validate(cfg, err, errlen))
        return NULL;
    if (cfg->rate_unit == SIM_RATE_LINE_PCT && !(line_bps > 0)) {
        snprintf(err, errlen, "rate: %g%% needs the line rate of the port it feeds", cfg->rate);
        return NULL;
    }
    if (cfg->arrivals == SIM_ARR_BURSTY && !(line_bps > 0)) {
        snprintf(err, errlen, "arrivals: bursty needs the line rate of the port it feeds");
        return NULL;
    }
    double bps = cfg->rate_unit == SIM_RATE_BPS ? cfg->rate
                 : cfg->rate_unit == SIM_RATE_LINE_PCT ? cfg->rate / 100 * line_bps
                                                        : 0;
    if (cfg->arrivals == SIM_ARR_BURSTY && bps > line_bps) {
        snprintf(err, errlen, "arrivals: bursty at %g bit/s is above the line rate (%g bit/s)",
                 bps, line_bps);
        return NULL;
    }
    struct sim_traffic *t = calloc(1, sizeof *t);
    if (!t)
        goto nomem;
    t->cfg = *cfg;
    t->id = id;
    t->key = sim_mix64(seed ^ sim_mix64(0x7472616666696300ULL + id));
    make_cdf(cfg->size_weight, cfg->n_sizes, t->size_cdf);
    make_cdf(cfg->mix.weight, SIM_PROTO_N, t->mix_cdf);
    if (cfg->vxlan_share > 0)
        make_cdf(cfg->inner.weight, SIM_PROTO_N, t->inner_cdf);
    else
        memcpy(t->inner_cdf, t->mix_cdf, sizeof t->inner_cdf);
    sim_rng_init(&t->arrival_rng, seed,
                 SIM_RNG_STREAM(SIM_TRAFFIC_RNG_DOMAIN, (uint64_t)id << 8 | STREAM_ARRIVAL));
    sim_rng_init(&t->pick_rng, seed,
                 SIM_RNG_STREAM(SIM_TRAFFIC_RNG_DOMAIN, (uint64_t)id << 8 | STREAM_PICK));
    sim_rng_init(&t->churn_rng, seed,
                 SIM_RNG_STREAM(SIM_TRAFFIC_RNG_DOMAIN, (uint64_t)id << 8 | STREAM_CHURN));
    if (sim_zipf_init(&t->zipf, cfg->flows,
                      cfg->popularity == SIM_POP_ZIPF ? cfg->zipf_s : 0.0)) {
        snprintf(err, errlen, "popularity: zipf:%g is not a valid exponent", cfg->zipf_s);
        free(t);
        return NULL;
    }
    t->seqs = fs_alloc_big(cfg->flows * sizeof *t->seqs);
    t->flow_cache = calloc(SIM_FLOW_CACHE, sizeof *t->flow_cache);
    t->fill = malloc(SIM_FILL_LEN);
    if (!t->seqs || !t->flow_cache || !t->fill)
        goto nomem;
    for (size_t i = 0; i < SIM_FILL_LEN; i += 8)
        wr64(t->fill + i, salt(t->key, (uint64_t)i << 8 | P_FILL));
    t->next_flow = cfg->flows;
    if (cfg->churn > 0) {
        t->slot_flow = fs_alloc_big(cfg->flows * sizeof *t->slot_flow);
        if (!t->slot_flow)
            goto nomem;
        for (uint64_t i = 0; i < cfg->flows; i++)
            t->slot_flow[i] = i;
        t->churn_period = 1e9 / cfg->churn;
    }
    if (cfg->rate_unit == SIM_RATE_PPS)
        t->ns_per_pkt = 1e9 / cfg->rate;
    else
        t->ns_per_bit = 1e9 / bps;
    if (line_bps > 0)
        t->line_ns_per_bit = 1e9 / line_bps;
    t->next_slot = pick_slot(t);
    return t;

nomem:
    snprintf(err, errlen, "flows: no memory for %u flows", cfg->flows);
    sim_traffic_destroy(t);
    return NULL;
}

void sim_traffic_destroy(struct sim_traffic *t)
{
    if (!t)
        return;
    fs_free_big(t->seqs, t->cfg.flows * sizeof *t->seqs);
    fs_free_big(t->slot_flow, t->cfg.flows * sizeof *t->slot_flow);
    free(t->flow_cache);
    free(t->fill);
    free(t);
}

uint16_t sim_traffic_id(const struct sim_traffic *t)
{
    return t->id;
}

uint64_t sim_traffic_flows_created(const struct sim_traffic *t)
{
    return t->next_flow;
}

/* Replaces the flows of random slots for every churn instant up to now. */
static void churn_until(struct sim_traffic *t, double now)
{
    while (t->churn_period > 0 && (double)(t->churned + 1) * t->churn_period <= now) {
        uint64_t slot = sim_rng_below(&t->churn_rng, t->cfg.flows);
        t->slot_flow[slot] = t->next_flow++;
        t->seqs[slot] = 0;
        t->churned++;
    }
}

/* Moves t_next past the packet just generated, of 'bits' wire bits. */
static void advance(struct sim_traffic *t, uint64_t bits)
{
    const struct sim_traffic_cfg *c = &t->cfg;
    bool pps = c->rate_unit == SIM_RATE_PPS;
    t->n++;
    t->bits += bits;
    switch (c->arrivals) {
    case SIM_ARR_CONSTANT:
        t->t_next = pps ? (double)t->n * t->ns_per_pkt : (double)t->bits * t->ns_per_bit;
        break;
    case SIM_ARR_POISSON:
        t->t_next += sim_rng_exponential(&t->arrival_rng,
                                         pps ? t->ns_per_pkt : (double)bits * t->ns_per_bit);
        break;
    case SIM_ARR_BURSTY:
        t->burst_bits += bits;
        if (++t->burst_pos < c->burst) {
            t->t_next = t->burst_start + (double)t->burst_bits * t->line_ns_per_bit;
        } else {
            double due = pps ? (double)t->n * t->ns_per_pkt : (double)t->bits * t->ns_per_bit;
            double end = t->burst_start + (double)t->burst_bits * t->line_ns_per_bit;
            t->burst_start = due > end ? due : end;
            t->burst_pos = 0;
            t->burst_bits = 0;
            t->t_next = t->burst_start;
        }
        break;
    }
}

uint64_t sim_traffic_peek_flow(const struct sim_traffic *t)
{
    return t->slot_flow ? t->slot_flow[t->next_slot] : t->next_slot;
}

size_t sim_traffic_next_frame(struct sim_traffic *t, uint8_t *buf, struct sim_traffic_info *info)
{
    double now = t->t_next;
    churn_until(t, now);
    uint64_t slot = t->next_slot;
    /* Draws stay in order (the stream is the model's own): packet n takes
     * draw n, whenever it is drawn. */
    t->next_slot = pick_slot(t);
    __builtin_prefetch(&t->seqs[t->next_slot], 1);
    if (t->slot_flow)
        __builtin_prefetch(&t->slot_flow[t->next_slot]);
    else
        __builtin_prefetch(&t->flow_cache[t->next_slot % SIM_FLOW_CACHE], 1);
    uint64_t flow = t->slot_flow ? t->slot_flow[slot] : slot;
    uint64_t seq = t->seqs[slot]++;
    size_t len = sim_traffic_build(t, flow, seq, buf, info);
    info->slot = slot;
    info->arrival_ns = (uint64_t)now;
    advance(t, ((uint64_t)info->wire_bytes + 20) * 8);
    return len;
}

uint64_t sim_traffic_next_time(const struct sim_traffic *t)
{
    return (uint64_t)t->t_next;
}

int sim_traffic_next(struct sim_traffic *t, uint64_t *arrival_ns, struct pkt **pkt,
                     struct sim_traffic_info *info)
{
    size_t len = sim_traffic_next_frame(t, t->frame, info);
    *arrival_ns = info->arrival_ns;
    *pkt = pkt_from_data(t->frame, (uint32_t)len);
    return *pkt ? 0 : -1;
}

struct pkt *sim_traffic_regenerate(const struct sim_traffic *t, uint64_t flow_id, uint64_t seq,
                                   struct sim_traffic_info *info)
{
    uint8_t frame[SIM_TRAFFIC_FRAME_MAX];
    size_t len = sim_traffic_build(t, flow_id, seq, frame, info);
    return pkt_from_data(frame, (uint32_t)len);
}
