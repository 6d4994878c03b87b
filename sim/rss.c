/* rss.c: Toeplitz hash, tuples and RETA (see rss.h). */
#include "rss.h"

#include <string.h>

#include "parse.h"

const uint8_t sim_rss_default_key[SIM_RSS_KEY_LEN] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* The 32 key bits starting at bit j (bit 0 = the first byte's top bit). */
static uint32_t key_window(const uint8_t *key, unsigned j)
{
    unsigned byte = j / 8, shift = j % 8;
    uint64_t w = 0;
    for (unsigned i = 0; i < 5; i++)
        w = w << 8 | (byte + i < SIM_RSS_KEY_LEN ? key[byte + i] : 0);
    return (uint32_t)(w >> (8 - shift));
}

uint32_t sim_rss_toeplitz(const uint8_t key[SIM_RSS_KEY_LEN], const uint8_t *data, size_t len)
{
    uint32_t h = 0;
    if (len > SIM_RSS_INPUT_MAX)
        len = SIM_RSS_INPUT_MAX;
    for (size_t i = 0; i < len * 8; i++)
        if (data[i / 8] & (0x80u >> (i % 8)))
            h ^= key_window(key, (unsigned)i);
    return h;
}

int sim_rss_init(struct sim_rss *rss, const uint8_t key[SIM_RSS_KEY_LEN], uint16_t n_queues)
{
    if (n_queues == 0)
        return -1;
    memcpy(rss->key, key ? key : sim_rss_default_key, SIM_RSS_KEY_LEN);
    rss->types = SIM_RSS_TYPES_DEFAULT;
    rss->n_queues = n_queues;
    for (unsigned i = 0; i < SIM_RSS_RETA_SIZE; i++)
        rss->reta[i] = (uint16_t)(i % n_queues);
    for (unsigned pos = 0; pos < SIM_RSS_INPUT_MAX; pos++) {
        uint32_t bit[8];
        for (unsigned b = 0; b < 8; b++)
            bit[b] = key_window(rss->key, pos * 8 + b);
        for (unsigned v = 0; v < 256; v++) {
            uint32_t h = 0;
            for (unsigned b = 0; b < 8; b++)
                if (v & (0x80u >> b))
                    h ^= bit[b];
            rss->tbl[pos][v] = h;
        }
    }
    return 0;
}

static void tuple_fill(struct sim_rss_tuple *t, const uint8_t *src, const uint8_t *dst,
                       size_t alen, uint8_t proto, bool frag, uint16_t sport, uint16_t dport,
                       enum sim_rss_type base)
{
    memset(t, 0, sizeof *t);
    memcpy(t->data, src, alen);
    memcpy(t->data + alen, dst, alen);
    t->len = (uint8_t)(2 * alen);
    t->type = (uint8_t)base;
    if (!frag && (proto == 6 || proto == 17)) {
        t->data[2 * alen] = (uint8_t)(sport >> 8);
        t->data[2 * alen + 1] = (uint8_t)sport;
        t->data[2 * alen + 2] = (uint8_t)(dport >> 8);
        t->data[2 * alen + 3] = (uint8_t)dport;
        t->len = (uint8_t)(t->len + 4);
        t->type = (uint8_t)(base + (proto == 6 ? 1 : 2));
    }
}

void sim_rss_tuple_ipv4(struct sim_rss_tuple *t, const uint8_t src[4], const uint8_t dst[4],
                        uint8_t proto, bool frag, uint16_t sport, uint16_t dport)
{
    tuple_fill(t, src, dst, 4, proto, frag, sport, dport, SIM_RSS_IPV4);
}

void sim_rss_tuple_ipv6(struct sim_rss_tuple *t, const uint8_t src[16], const uint8_t dst[16],
                        uint8_t proto, bool frag, uint16_t sport, uint16_t dport)
{
    tuple_fill(t, src, dst, 16, proto, frag, sport, dport, SIM_RSS_IPV6);
}

void sim_rss_tuple_from_pkt(const struct pkt *pkt, struct sim_rss_tuple *t)
{
    memset(t, 0, sizeof *t);
    if (!(pkt->flags & PKT_F_PARSED) || pkt->l3_ofs == PKT_OFS_NONE)
        return;
    const uint8_t *l3 = pkt->data + pkt->l3_ofs;
    bool ports = (pkt->flags & PKT_F_L4) && !(pkt->flags & PKT_F_FRAG) &&
                 pkt->l4_ofs != PKT_OFS_NONE && (pkt->l4_proto == 6 || pkt->l4_proto == 17);
    uint8_t proto = ports ? pkt->l4_proto : 0;
    uint16_t sport = 0, dport = 0;
    if (ports) {
        const uint8_t *l4 = pkt->data + pkt->l4_ofs;
        sport = (uint16_t)(l4[0] << 8 | l4[1]);
        dport = (uint16_t)(l4[2] << 8 | l4[3]);
    }
    if (pkt->l3 == PKT_L3_IPV4)
        sim_rss_tuple_ipv4(t, l3 + 12, l3 + 16, proto, false, sport, dport);
    else if (pkt->l3 == PKT_L3_IPV6)
        sim_rss_tuple_ipv6(t, l3 + 8, l3 + 24, proto, false, sport, dport);
}

uint32_t sim_rss_hash(const struct sim_rss *rss, const struct sim_rss_tuple *t)
{
    unsigned type = t->type, len = t->len;
    if (type == SIM_RSS_NONE || type >= SIM_RSS_N_TYPES)
        return 0;
    if (!(rss->types & SIM_RSS_TYPE_BIT(type))) {
        /* Without its port type, a TCP or UDP packet is hashed as IP. */
        type = type >= SIM_RSS_IPV6 ? SIM_RSS_IPV6 : SIM_RSS_IPV4;
        len = type == SIM_RSS_IPV6 ? 32 : 8;
        if (!(rss->types & SIM_RSS_TYPE_BIT(type)))
            return 0;
    }
    uint32_t h = 0;
    for (unsigned i = 0; i < len && i < SIM_RSS_INPUT_MAX; i++)
        h ^= rss->tbl[i][t->data[i]];
    return h;
}
