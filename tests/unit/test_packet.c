/* test_packet.c: struct pkt's layout contracts and buffer limits
 * (packet.h): pkt_len_csum() halves, PKT_BUF_MAX in pkt_alloc(),
 * pkt_clone() and pkt_push(), pkt_reset_meta(). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "packet.h"

static uint32_t states_word(const uint8_t s[CSUM_L_N])
{
    uint32_t v;
    memcpy(&v, s, sizeof v);
    return v;
}

/* One packet: the halves give back len and the state bytes as stored. */
static void test_len_csum_one(void **state)
{
    (void)state;
    struct pkt p = pkt_fresh;
    p.len = 0x00abcdefu;
    p.csum[CSUM_L_OUTER_IP] = CSUM_GOOD;
    p.csum[CSUM_L_OUTER_L4] = CSUM_BAD;
    p.csum[CSUM_L_INNER_IP] = CSUM_PARTIAL;
    p.csum[CSUM_L_INNER_L4] = CSUM_UNKNOWN;
    uint64_t v = pkt_len_csum(&p);
    assert_int_equal(PKT_LC_LEN(v), 0x00abcdefu);
    assert_int_equal(PKT_LC_CSUM(v), states_word(p.csum));
}

/* The worst batch: PKT_BATCH_MAX packets of the longest frame and every
 * state PARTIAL. The sum keeps the lengths and the byte-wise state sums
 * apart; the OR gives the OR of the states. Then random batches against
 * the plain sums. */
static void test_len_csum_batch(void **state)
{
    (void)state;
    struct pkt p = pkt_fresh;
    p.len = PKT_BUF_MAX;
    memset(p.csum, CSUM_PARTIAL, sizeof p.csum);
    uint64_t sum = 0, or = 0;
    for (unsigned i = 0; i < PKT_BATCH_MAX; i++) {
        sum += pkt_len_csum(&p);
        or |= pkt_len_csum(&p);
    }
    assert_int_equal(PKT_LC_LEN(sum), (uint64_t)PKT_BATCH_MAX * PKT_BUF_MAX);
    uint8_t want[CSUM_L_N];
    memset(want, PKT_BATCH_MAX * CSUM_PARTIAL, sizeof want);
    assert_int_equal(PKT_LC_CSUM(sum), states_word(want));
    assert_int_equal(PKT_LC_CSUM(or), states_word(p.csum));

    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (unsigned round = 0; round < 2000; round++) {
        unsigned n = 1 + round % PKT_BATCH_MAX;
        uint64_t len_sum = 0;
        uint8_t lane[CSUM_L_N] = {0}, any[CSUM_L_N] = {0};
        sum = or = 0;
        for (unsigned i = 0; i < n; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            p.len = (uint32_t)(rng >> 33) % (PKT_BUF_MAX + 1);
            for (unsigned l = 0; l < CSUM_L_N; l++) {
                p.csum[l] = (uint8_t)((rng >> (8 + 2 * l)) & 3);
                lane[l] = (uint8_t)(lane[l] + p.csum[l]);
                any[l] |= p.csum[l];
            }
            len_sum += p.len;
            sum += pkt_len_csum(&p);
            or |= pkt_len_csum(&p);
        }
        assert_int_equal(PKT_LC_LEN(sum), len_sum);
        assert_int_equal(PKT_LC_CSUM(sum), states_word(lane));
        assert_int_equal(PKT_LC_CSUM(or), states_word(any));
    }
}

/* No buffer beyond PKT_BUF_MAX: pkt_alloc() refuses it, and allocates the
 * largest one. */
static void test_alloc_limit(void **state)
{
    (void)state;
    assert_null(pkt_alloc(PKT_BUF_MAX - PKT_HEADROOM + 1));
    assert_null(pkt_alloc(UINT32_MAX));
    struct pkt *p = pkt_alloc(PKT_BUF_MAX - PKT_HEADROOM);
    assert_non_null(p);
    assert_int_equal(p->buf_size, PKT_BUF_MAX);
    assert_int_equal(p->len, 0);
    assert_int_equal(pkt_headroom(p), PKT_HEADROOM);
    pkt_free(p);
}

/* pkt_push() that would need a buffer beyond PKT_BUF_MAX fails and leaves
 * the packet as it was; one that fits grows the headroom. */
static void test_push_limit(void **state)
{
    (void)state;
    struct pkt *p = pkt_alloc(64);
    assert_non_null(p);
    memset(p->data, 0x5a, 64);
    p->len = 64;
    uint8_t *data = p->data;
    bool grew = false;
    assert_null(pkt_push(p, PKT_BUF_MAX, &grew));
    assert_null(pkt_push(p, UINT32_MAX - PKT_HEADROOM + 1, &grew));
    assert_false(grew);
    assert_ptr_equal(p->data, data);
    assert_int_equal(p->len, 64);

    assert_non_null(pkt_push(p, 1000, &grew));
    assert_true(grew);
    assert_int_equal(p->len, 1064);
    assert_true(p->buf_size <= PKT_BUF_MAX);
    for (unsigned i = 1000; i < 1064; i++)
        assert_int_equal(p->data[i], 0x5a);
    pkt_free(p);
}

/* pkt_reset_meta() resets every metadata field, csum[] included, and
 * keeps every buffer field (len included). */
static void test_reset_meta(void **state)
{
    (void)state;
    struct pkt *p = pkt_from_data("abcdefgh", 8);
    assert_non_null(p);
    struct pkt keep = *p;
    memset(p->csum, CSUM_BAD, sizeof p->csum);
    p->hash = 7;
    p->ts = 99;
    p->in_port = 3;
    p->flags = PKT_F_PARSED;
    p->l3_ofs = 14;
    p->l3 = PKT_L3_IPV4;
    p->inner_l3 = PKT_L3_IPV6;
    p->csum_start = 34;
    p->out_vni = 5;
    pkt_reset_meta(p);
    assert_memory_equal((const char *)p + PKT_META_OFS, (const char *)&pkt_fresh + PKT_META_OFS,
                        sizeof *p - PKT_META_OFS);
    assert_int_equal(states_word(p->csum), 0);
    assert_ptr_equal(p->data, keep.data);
    assert_ptr_equal(p->buf, keep.buf);
    assert_ptr_equal(p->ops, keep.ops);
    assert_ptr_equal(p->owner, keep.owner);
    assert_int_equal(p->buf_size, keep.buf_size);
    assert_int_equal(p->len, 8);
    assert_memory_equal(p->data, "abcdefgh", 8);
    pkt_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_len_csum_one),
        cmocka_unit_test(test_len_csum_batch),
        cmocka_unit_test(test_alloc_limit),
        cmocka_unit_test(test_push_limit),
        cmocka_unit_test(test_reset_meta),
    };
    return cmocka_run_group_tests_name("packet", tests, NULL, NULL);
}
