/* fuzz_decap.c: libFuzzer harness for VXLAN decapsulation (tnl_pop).
 *
 * Input: byte 0 chooses the rx checksum states a device delivered (bits
 * 0-1: outer IP, bits 2-3: outer L4; enum csum_state values), the rest is
 * a frame received on an underlay port with two tunnels: IPv4 (local
 * 192.0.2.1, remote 192.0.2.2, VNI 42, port 4789) and IPv6 (local
 * 2001:db8::1, remote 2001:db8::2, vni = flow, port 4789). The frame is
 * copied into an exactly-sized heap packet (the buffer ends at its last
 * byte, so ASan flags any read past pkt->len), parsed, popped, and the
 * inner frame parsed again. Invariants (abort() on violation):
 *  - the result is a known one with a name; a refused packet is untouched
 *    (bytes, data, len, flags, states, offsets) and so is the key;
 *  - a popped packet is the UDP payload after the 8-byte VXLAN header, up to
 *    the UDP length (at least an Ethernet header), inside the old frame;
 *    the chosen tunnel's local address, port and VNI are the packet's;
 *    tun_src/tun_dst/tun_id/tun_flags come from the outer headers; every
 *    state is UNKNOWN and no parse/tunnel/virtio flag is left;
 *  - a checksum is verified in software only for an UNKNOWN state, a
 *    popped packet whose states were UNKNOWN has a valid outer IPv4 header
 *    checksum (IPv4) and a valid or zero UDP checksum (reference sum here),
 *    a BAD state never pops unless its checksum is a zero UDP one, and
 *    sw_verify_failed <= sw_verified <= 2;
 *  - popping is deterministic, and an inner frame that parses can be
 *    pushed back through the tunnel and popped again, giving the same bytes.
 * Seeds: tests/fuzz/seeds/decap/ (written by testdata/gen_vxlan.py). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "offload.h"
#include "packet.h"
#include "parse.h"
#include "tunnel.h"
#include "tests/unit/helpers/csum_ref.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void tunnels_init(struct tnl_cfg t[2])
{
    memset(t, 0, 2 * sizeof t[0]);
    memcpy(t[0].local_ip, "\xc0\x00\x02\x01", 4);
    memcpy(t[0].remote_ip, "\xc0\x00\x02\x02", 4);
    t[0].vni = 42;
    t[0].dst_port = VXLAN_UDP_PORT;
    t[0].ttl = 64;
    t[0].df = true;
    memcpy(t[0].src_mac, "\x02\x00\x00\x00\x00\x01", 6);
    memcpy(t[0].dst_mac, "\x02\x00\x00\x00\x00\xfe", 6);
    t[1] = t[0];
    t[1].ipv6 = true;
    t[1].vni_flow = true;
    t[1].csum = true;
    memcpy(t[1].local_ip, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
    memcpy(t[1].remote_ip, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
}

static struct pkt *exact_pkt(const uint8_t *data, size_t size)
{
    struct pkt *p = pkt_from_data(data, (uint32_t)size);
    CHECK(p != NULL);
    CHECK(p->len == size && pkt_tailroom(p) == 0);
    p->in_port = 1;
    return p;
}

/* The metadata a refused pop must leave alone. */
static bool same_meta(const struct pkt *a, const struct pkt *b)
{
    return a->data == b->data && a->len == b->len && a->flags == b->flags &&
           a->l3_ofs == b->l3_ofs && a->l4_ofs == b->l4_ofs && a->l4_len == b->l4_len &&
           a->payload_ofs == b->payload_ofs && a->l3 == b->l3 &&
           a->l4_proto == b->l4_proto && memcmp(a->csum, b->csum, sizeof a->csum) == 0 &&
           a->ts == b->ts && a->hash == b->hash && a->in_port == b->in_port;
}

static void check_popped(const struct tnl_cfg *tn, unsigned which, const struct pkt *before,
                         const uint8_t *frame, const struct pkt *p, const struct flow_key *k,
                         const struct csum_stats *st)
{
    CHECK(which < 2);
    const struct tnl_cfg *t = &tn[which];
    bool v6 = before->l3 == PKT_L3_IPV6;
    CHECK(v6 == t->ipv6);
    CHECK(before->l4_proto == 17 && !(before->flags & (PKT_F_FRAG | PKT_F_IPV6_RH)));
    const uint8_t *ip = frame + before->l3_ofs, *udp = frame + before->l4_ofs;
    const uint8_t *dst = ip + (v6 ? 24 : 16), *src = ip + (v6 ? 8 : 12);
    CHECK(!memcmp(dst, t->local_ip, v6 ? 16 : 4));
    CHECK(be16(udp + 2) == t->dst_port);
    uint16_t ulen = be16(udp + 4);
    CHECK(ulen == before->l4_len);
    CHECK(ulen >= 8 + VXLAN_HLEN + 14);
    CHECK(udp[8] & 0x08);
    uint32_t vni = (uint32_t)udp[12] << 16 | (uint32_t)udp[13] << 8 | udp[14];
    CHECK(k->tun_id == vni);
    CHECK(t->vni_flow || t->vni == vni);
    if (v6) {
        CHECK(!memcmp(k->tun_src, src, 16) && !memcmp(k->tun_dst, dst, 16));
    } else {
        CHECK((ip[0] & 0x0f) == 5); /* no options */
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        CHECK(!memcmp(k->tun_src, mapped, 12) && !memcmp(k->tun_src + 12, src, 4));
        CHECK(!memcmp(k->tun_dst, mapped, 12) && !memcmp(k->tun_dst + 12, dst, 4));
    }
    bool has_csum = be16(udp + 6) != 0;
    CHECK(k->tun_flags == (has_csum ? FLOW_TNL_F_CSUM : 0));

    /* the inner frame: where it was, as long as the UDP length says */
    CHECK(p->data == before->data + before->l4_ofs + 16);
    CHECK(p->len == (uint32_t)ulen - 16);
    CHECK(p->data + p->len <= before->data + before->len);
    CHECK(!memcmp(p->data, frame + before->l4_ofs + 16, p->len));
    for (int l = 0; l < CSUM_L_N; l++)
        CHECK(p->csum[l] == CSUM_UNKNOWN);
    CHECK(!(p->flags & (PKT_F_PARSED | PKT_F_L4 | PKT_F_VXLAN | PKT_F_FRAG |
                        PKT_F_FRAG_LATER | PKT_F_IPV6_RH | PKT_F_VNET_CSUM | PKT_F_TUNNEL)));
    CHECK(p->l3_ofs == PKT_OFS_NONE && p->l4_ofs == PKT_OFS_NONE);
    CHECK(p->ts == before->ts && p->hash == before->hash && p->in_port == before->in_port);

    /* checksums: what was UNKNOWN was verified and is right */
    enum csum_state ips = (enum csum_state)before->csum[CSUM_L_OUTER_IP];
    enum csum_state l4s = (enum csum_state)before->csum[CSUM_L_OUTER_L4];
    unsigned want_verified = 0;
    if (!v6) {
        CHECK(ips != CSUM_BAD);
        if (ips == CSUM_UNKNOWN) {
            want_verified++;
            CHECK(ref_fold(ref_sum(ip, 20)) == 0xffff);
        }
    }
    if (has_csum) {
        CHECK(l4s != CSUM_BAD);
        if (l4s == CSUM_UNKNOWN) {
            want_verified++;
            uint64_t s = ref_sum(udp, ulen) + 17 + ulen + ref_sum(src, v6 ? 16 : 4) +
                         ref_sum(dst, v6 ? 16 : 4);
            CHECK(ref_fold(s) == 0xffff);
        }
    }
    CHECK(st->n[CSUM_STAT_SW_VERIFIED] == want_verified);
    CHECK(st->n[CSUM_STAT_SW_VERIFY_FAILED] == 0);
}

/* Pushes the popped inner frame back through tunnel t (as its remote would
 * send it to us) and pops it again: the same inner bytes. */
static void check_repush(const struct tnl_cfg *tn, unsigned which, const struct pkt *inner)
{
    struct pkt *q = pkt_from_data(inner->data, inner->len);
    CHECK(q != NULL);
    struct flow_key k;
    if (parse_pkt(q, &k) != PARSE_OK) {
        pkt_free(q);
        return;
    }
    struct tnl_cfg m = tn[which];
    memcpy(m.local_ip, tn[which].remote_ip, 16);
    memcpy(m.remote_ip, tn[which].local_ip, 16);
    uint32_t vni = 7;
    if (!tn[which].vni_flow)
        vni = tn[which].vni;
    CHECK(tnl_push(q, &m, vni, inner->len, NULL) == 0);
    CHECK(pkt_csum_complete(q, NULL) == CSUM_PREP_OK);
    struct pkt *r = pkt_from_data(q->data, q->len);
    CHECK(r != NULL);
    CHECK(parse_pkt(r, &k) == PARSE_OK);
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    unsigned w2 = 9;
    CHECK(tnl_pop(r, tn, 2, &w2, &k, &st) == TNL_POP_OK);
    CHECK(w2 == which);
    CHECK(k.tun_id == vni);
    CHECK(st.n[CSUM_STAT_SW_VERIFY_FAILED] == 0);
    CHECK(r->len == inner->len && !memcmp(r->data, inner->data, r->len));
    pkt_free(r);
    pkt_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    struct tnl_cfg tn[2];
    tunnels_init(tn);
    const uint8_t *frame = data + 1;
    size_t flen = size - 1;
    struct pkt *p = exact_pkt(frame, flen);
    struct flow_key k;
    parse_pkt(p, &k);
    p->csum[CSUM_L_OUTER_IP] = data[0] & 3;
    p->csum[CSUM_L_OUTER_L4] = (data[0] >> 2) & 3;
    p->ts = 5;
    p->hash = 0x1234;
    struct pkt before = *p;
    struct pkt *twin = pkt_clone(p);
    CHECK(twin != NULL);

    struct flow_key tk, tk0;
    memset(&tk, 0x5a, sizeof tk);
    tk0 = tk;
    struct csum_stats st;
    memset(&st, 0, sizeof st);
    unsigned which = 77;
    enum tnl_pop_result r = tnl_pop(p, tn, 2, &which, &tk, &st);
    CHECK((unsigned)r < TNL_POP_N);
    CHECK(tnl_pop_result_name(r) != NULL);
    CHECK(st.n[CSUM_STAT_SW_VERIFIED] <= 2 && st.n[CSUM_STAT_SW_VERIFY_FAILED] <= st.n[CSUM_STAT_SW_VERIFIED]);
    if (r == TNL_POP_OK) {
        check_popped(tn, which, &before, frame, p, &tk, &st);
    } else {
        CHECK(same_meta(p, &before));
        CHECK(flen == 0 || !memcmp(p->data, frame, flen));
        CHECK(!memcmp(&tk, &tk0, sizeof tk));
        CHECK(st.n[CSUM_STAT_SW_VERIFY_FAILED] <= 1);
        if (r == TNL_POP_NOT_TUNNEL)
            CHECK(st.n[CSUM_STAT_SW_VERIFIED] == 0);
        if (st.n[CSUM_STAT_SW_VERIFY_FAILED])
            CHECK(r == TNL_POP_BAD_CSUM);
    }

    /* deterministic */
    struct flow_key tk2;
    memset(&tk2, 0x5a, sizeof tk2);
    unsigned which2 = 77;
    CHECK(tnl_pop(twin, tn, 2, &which2, &tk2, NULL) == r);
    if (r == TNL_POP_OK) {
        CHECK(which2 == which && twin->len == p->len && !memcmp(twin->data, p->data, p->len));
        CHECK(!memcmp(tk2.tun_src, tk.tun_src, 16) && tk2.tun_id == tk.tun_id);
    }
    pkt_free(twin);

    if (r == TNL_POP_OK) {
        /* the inner frame parses without reading outside it */
        struct pkt *inner = exact_pkt(p->data, p->len);
        struct flow_key ik;
        enum parse_result pr = parse_pkt(inner, &ik);
        CHECK((unsigned)pr < PARSE_N_RESULTS);
        if (inner->l4_ofs != PKT_OFS_NONE)
            CHECK((uint32_t)inner->l4_ofs + inner->l4_len <= inner->len);
        check_repush(tn, which, inner);
        pkt_free(inner);
    }
    pkt_free(p);
    return 0;
}
