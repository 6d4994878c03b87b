/* test_smc.c: signature-match cache. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "classifier.h"
#include "flow.h"
#include "smc.h"

struct fixture {
    struct cls_flows flows;
    struct classifier cls;
    struct flow_mask mask; /* in_port + nw_dst exact */
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    if (!fx || cls_flows_init(&fx->flows, 70000))
        return -1;
    classifier_init(&fx->cls, &fx->flows);
    fx->mask.m.in_port = UINT32_MAX;
    fx->mask.m.nw_dst = UINT32_MAX;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    classifier_destroy(&fx->cls);
    cls_flows_destroy(&fx->flows);
    free(fx);
    return 0;
}

static void key_n(struct flow_key *k, uint32_t n, uint32_t src)
{
    memset(k, 0, sizeof *k);
    k->dl_type = 0x0800;
    k->nw_dst = n;
    k->nw_src = src;
    k->nw_ttl = 9;
}

static uint32_t add_flow(struct fixture *fx, uint32_t n)
{
    struct flow_key k;
    key_n(&k, n, 0);
    uint32_t idx;
    assert_int_equal(classifier_insert(&fx->cls, &k, &fx->mask, NULL, &idx), 0);
    return idx;
}

static void test_create_args(void **state)
{
    (void)state;
    assert_null(smc_create(0, 1));
    assert_null(smc_create(2, 1));
    assert_null(smc_create(1000, 1));
    struct smc *s = smc_create(1u << 20, 1);
    assert_non_null(s);
    /* 4 bytes an entry: 2^20 entries in 4 MiB. */
    assert_int_equal(smc_memory(s), 4u << 20);
    assert_int_equal(sizeof(struct smc_bucket), 4 * SMC_WAYS);
    assert_int_equal(smc_count(s), 0);
    smc_destroy(s);
    smc_destroy(NULL);
}

/* Signature 0 is a signature like any other, and a zeroed (empty) way is
 * never taken for "signature 0 -> megaflow 0". */
static void test_signature_zero(void **state)
{
    struct fixture *fx = *state;
    struct smc *s = smc_create(64, 1);
    assert_non_null(s);
    uint32_t i0 = add_flow(fx, 0x0a000001);
    assert_int_equal(i0, 0); /* megaflow slot 0 */
    struct flow_key k;
    key_n(&k, 0x0a000001, 5);
    const uint32_t h = 0x00000003u; /* signature 0, bucket 3 */
    assert_int_equal(smc_sig(h), 0);
    uint32_t got = 77;
    assert_int_equal(smc_candidate(s, h), CLS_IDX_NONE);
    assert_false(smc_lookup(s, &fx->flows, &k, h, &got));
    assert_true(smc_insert(s, h, i0));
    assert_true(smc_lookup(s, &fx->flows, &k, h, &got));
    assert_int_equal(got, 0);
    assert_int_equal(smc_count(s), 1);
    smc_destroy(s);
}

/* SMC_WAYS flows in one bucket all hit; one more evicts exactly one. */
static void test_collisions_full_bucket(void **state)
{
    struct fixture *fx = *state;
    struct smc *s = smc_create(64, 7);
    assert_non_null(s);
    enum { N = SMC_WAYS + 1 };
    uint32_t idx[N], h[N], got;
    struct flow_key k[N];
    for (unsigned i = 0; i < N; i++) {
        idx[i] = add_flow(fx, 100 + i);
        key_n(&k[i], 100 + i, i);
        h[i] = (i + 1) << 16 | 5; /* bucket 5, distinct signatures */
    }
    for (unsigned i = 0; i < SMC_WAYS; i++)
        assert_true(smc_insert(s, h[i], idx[i]));
    for (unsigned i = 0; i < SMC_WAYS; i++) {
        assert_true(smc_lookup(s, &fx->flows, &k[i], h[i], &got));
        assert_int_equal(got, idx[i]);
    }
    assert_true(smc_insert(s, h[N - 1], idx[N - 1]));
    assert_true(smc_lookup(s, &fx->flows, &k[N - 1], h[N - 1], &got));
    unsigned still = 0;
    for (unsigned i = 0; i < SMC_WAYS; i++)
        still += smc_lookup(s, &fx->flows, &k[i], h[i], &got);
    assert_int_equal(still, SMC_WAYS - 1);
    assert_int_equal(smc_count(s), SMC_WAYS);

    /* A key whose hash collides (same bucket and signature) with a cached
     * flow but belongs to another megaflow: the masked compare rejects it. */
    struct flow_key other;
    key_n(&other, 999, 0);
    assert_false(smc_lookup(s, &fx->flows, &other, h[N - 1], &got));

    /* Same signature: the way is overwritten, not duplicated. */
    assert_true(smc_insert(s, h[N - 1], idx[0]));
    assert_int_equal(smc_count(s), SMC_WAYS);
    assert_false(smc_lookup(s, &fx->flows, &k[N - 1], h[N - 1], &got));
    assert_true(smc_lookup(s, &fx->flows, &k[0], h[N - 1], &got));
    assert_int_equal(got, idx[0]);
    smc_destroy(s);
}

/* A removed megaflow misses even if its slot is reused; the sweep clears
 * ways whose slot is free. */
static void test_dead_and_reused_and_sweep(void **state)
{
    struct fixture *fx = *state;
    struct smc *s = smc_create(16, 3); /* 4 buckets */
    assert_non_null(s);
    uint32_t a = add_flow(fx, 1), b = add_flow(fx, 2), got;
    struct flow_key ka, kb;
    key_n(&ka, 1, 0);
    key_n(&kb, 2, 0);
    uint32_t ha = flow_hash(&ka, 0), hb = flow_hash(&kb, 0);
    assert_true(smc_insert(s, ha, a));
    assert_true(smc_insert(s, hb, b));
    assert_true(smc_lookup(s, &fx->flows, &ka, ha, &got));
    action_list_unref(cls_flow_remove(&fx->flows, a));
    assert_false(smc_lookup(s, &fx->flows, &ka, ha, &got));
    /* Reuse a's slot for a different flow: still no hit for ka. */
    uint32_t c = add_flow(fx, 3);
    assert_int_equal(c, a);
    assert_false(smc_lookup(s, &fx->flows, &ka, ha, &got));
    /* ... and the slot's new megaflow is found through the stale entry
     * only by a key it matches (correct by the masked compare). */
    struct flow_key kc;
    key_n(&kc, 3, 0);
    assert_true(smc_lookup(s, &fx->flows, &kc, ha, &got));
    assert_int_equal(got, c);

    /* Free b's slot: the sweep finds it within one pass of 4 buckets. */
    action_list_unref(cls_flow_remove(&fx->flows, b));
    unsigned cleared = 0;
    for (unsigned i = 0; i < 4; i++)
        cleared += smc_sweep_step(s, &fx->flows);
    assert_int_equal(cleared, 1);
    assert_int_equal(s->swept, 1);
    assert_int_equal(smc_count(s), 1); /* the reused slot's entry stays */
    smc_flush(s);
    assert_int_equal(smc_count(s), 0);
    smc_destroy(s);
}

/* The branch-free way match finds a signature in every way, skips empty
 * ways (even with signature 0) and takes the first of equal signatures. */
static void test_way_match_every_lane(void **state)
{
    (void)state;
    struct smc *s = smc_create(SMC_WAYS * 4, 1);
    assert_non_null(s);
    for (uint16_t sig = 0; sig < 3; sig++) {
        for (unsigned w = 0; w < SMC_WAYS; w++) {
            smc_flush(s);
            struct smc_bucket *b = &s->b[2];
            /* Other ways: used with other signatures, or empty with sig. */
            for (unsigned o = 0; o < SMC_WAYS; o++) {
                if (o == w)
                    continue;
                if (o % 2) {
                    b->sig[o] = (uint16_t)(sig + 100 + o);
                    b->idx1[o] = (uint16_t)(500 + o);
                } else {
                    b->sig[o] = sig; /* empty way holding the same sig */
                    b->idx1[o] = 0;
                }
            }
            b->sig[w] = sig;
            b->idx1[w] = (uint16_t)(1000 + w);
            uint32_t h = (uint32_t)sig << 16 | 2;
            assert_int_equal(smc_candidate(s, h), 999 + w);
            /* A signature present nowhere. */
            assert_int_equal(smc_candidate(s, (uint32_t)(sig + 50) << 16 | 2), CLS_IDX_NONE);
            /* Another bucket is untouched. */
            assert_int_equal(smc_candidate(s, h ^ 1), CLS_IDX_NONE);
        }
    }
    /* All 16-bit values are matched exactly (no cross-lane carries). */
    smc_flush(s);
    struct smc_bucket *b = &s->b[0];
    for (unsigned w = 0; w < SMC_WAYS; w++) {
        b->sig[w] = (uint16_t)(0xffff - w);
        b->idx1[w] = (uint16_t)(w + 1);
    }
    for (unsigned w = 0; w < SMC_WAYS; w++)
        assert_int_equal(smc_candidate(s, (uint32_t)(0xffff - w) << 16), w);
    assert_int_equal(smc_candidate(s, 0x7fffu << 16), CLS_IDX_NONE);
    assert_int_equal(smc_candidate(s, 0x8000u << 16), CLS_IDX_NONE);
    smc_destroy(s);
}

static void test_unaddressable_index(void **state)
{
    struct fixture *fx = *state;
    struct smc *s = smc_create(1u << 16, 3);
    assert_non_null(s);
    /* Fill slots up to 65535: the last addressable one is 65534. */
    uint32_t last = 0;
    for (uint32_t i = 0; i <= 65535; i++)
        last = add_flow(fx, 0x01000000 + i);
    assert_int_equal(last, 65535);
    assert_false(smc_insert(s, 0x1234, 65535));
    assert_int_equal(smc_count(s), 0);
    assert_true(smc_insert(s, 0x1234, 65534));
    struct flow_key k;
    uint32_t got;
    key_n(&k, 0x01000000 + 65534, 0);
    assert_true(smc_lookup(s, &fx->flows, &k, 0x1234, &got));
    assert_int_equal(got, 65534);
    smc_destroy(s);
}

/* With a table larger than the flow count, almost every flow stays. */
static void test_many_flows(void **state)
{
    struct fixture *fx = *state;
    struct smc *s = smc_create(1u << 14, 11);
    assert_non_null(s);
    enum { N = 2000 };
    struct flow_key k;
    uint32_t idx[N], got;
    for (unsigned i = 0; i < N; i++) {
        idx[i] = add_flow(fx, 0x0b000000 + i);
        key_n(&k, 0x0b000000 + i, 42);
        assert_true(smc_insert(s, flow_hash(&k, 0), idx[i]));
    }
    unsigned hits = 0;
    for (unsigned i = 0; i < N; i++) {
        key_n(&k, 0x0b000000 + i, 42);
        if (smc_lookup(s, &fx->flows, &k, flow_hash(&k, 0), &got)) {
            assert_int_equal(got, idx[i]);
            hits++;
        }
    }
    /* 2000 flows into 4096 buckets of 4: overflow is very rare. */
    assert_true(hits >= N - 5);
    assert_int_equal(smc_count(s), hits);
    smc_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test_setup_teardown(test_signature_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collisions_full_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_and_reused_and_sweep, setup, teardown),
        cmocka_unit_test(test_way_match_every_lane),
        cmocka_unit_test_setup_teardown(test_unaddressable_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_flows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
