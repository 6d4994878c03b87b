/* test_classifier.c: megaflow table and tuple-space classifier. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "classifier.h"
#include "flow.h"

static struct action_list *mk_actions(uint16_t port)
{
    struct action a = {.type = ACT_OUTPUT, .u.port = port};
    struct action_list *l = action_list_create(&a, 1);
    assert_non_null(l);
    return l;
}

static void key_ip(struct flow_key *k, uint32_t in_port, uint32_t src, uint32_t dst,
                   uint16_t tp_dst)
{
    memset(k, 0, sizeof *k);
    k->in_port = in_port;
    k->dl_type = 0x0800;
    k->nw_proto = 6;
    k->nw_src = src;
    k->nw_dst = dst;
    k->tp_dst = tp_dst;
    k->nw_ttl = 64;
}

static void mask_dst(struct flow_mask *m, uint32_t dst_mask, uint16_t tp_mask)
{
    memset(m, 0, sizeof *m);
    m->m.in_port = UINT32_MAX;
    m->m.dl_type = 0xffff;
    m->m.nw_dst = dst_mask;
    m->m.tp_dst = tp_mask;
}

struct fixture {
    struct cls_flows flows;
    struct classifier cls;
};

static int setup_n(void **state, uint32_t max)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    if (!fx || cls_flows_init(&fx->flows, max))
        return -1;
    classifier_init(&fx->cls, &fx->flows);
    *state = fx;
    return 0;
}

static int setup(void **state)
{
    return setup_n(state, 4096);
}

static int setup_small(void **state)
{
    return setup_n(state, 4);
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    classifier_destroy(&fx->cls);
    assert_int_equal(fx->flows.n, 0);
    cls_flows_destroy(&fx->flows);
    free(fx);
    return 0;
}

static uint32_t lookup1(struct classifier *c, const struct flow_key *k, uint64_t *probes)
{
    uint32_t idx[32];
    uint64_t ph = 0, pm = 0;
    uint32_t hit = classifier_lookup_batch(c, k, 1, idx, &ph, &pm);
    if (probes)
        *probes = ph + pm;
    return hit ? idx[0] : CLS_IDX_NONE;
}

static void test_init_bounds(void **state)
{
    (void)state;
    struct cls_flows f;
    assert_int_equal(cls_flows_init(&f, 0), -1);
    assert_int_equal(cls_flows_init(&f, CLS_MAX_FLOWS + 1), -1);
    assert_int_equal(cls_flows_init(&f, 1), 0);
    cls_flows_destroy(&f);
}

static void test_insert_lookup_two_masks(void **state)
{
    struct fixture *fx = *state;
    struct flow_key k;
    struct flow_mask m24, m32p;
    mask_dst(&m24, htonl(0xffffff00), 0);
    mask_dst(&m32p, UINT32_MAX, 0xffff);

    struct action_list *a1 = mk_actions(1), *a2 = mk_actions(2);
    uint32_t i1, i2;
    key_ip(&k, 0, 1, htonl(0x0a000001), 80);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m24, a1, &i1), 0);
    key_ip(&k, 0, 1, htonl(0x0b000001), 80);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m32p, a2, &i2), 0);
    assert_int_equal(fx->cls.n_st, 2);
    assert_int_equal(fx->cls.n_flows, 2);
    assert_int_equal(fx->flows.n, 2);

    /* The stored key is masked. */
    assert_int_equal(cls_flow(&fx->flows, i1)->key.nw_dst, htonl(0x0a000000));
    assert_int_equal(cls_flow(&fx->flows, i1)->key.tp_dst, 0);
    assert_int_equal(cls_flow(&fx->flows, i1)->key.nw_src, 0);

    /* Any key in 10.0.0.0/24 on port 0 matches i1 regardless of src/ports. */
    key_ip(&k, 0, 12345, htonl(0x0a0000fe), 9999);
    assert_int_equal(lookup1(&fx->cls, &k, NULL), i1);
    assert_ptr_equal(cls_flow(&fx->flows, i1)->actions, a1);
    /* Different port: in_port is exact in the mask. */
    key_ip(&k, 1, 1, htonl(0x0a000001), 80);
    assert_int_equal(lookup1(&fx->cls, &k, NULL), CLS_IDX_NONE);
    /* The exact /32 + tp_dst megaflow. */
    key_ip(&k, 0, 7, htonl(0x0b000001), 80);
    assert_int_equal(lookup1(&fx->cls, &k, NULL), i2);
    key_ip(&k, 0, 7, htonl(0x0b000001), 81);
    assert_int_equal(lookup1(&fx->cls, &k, NULL), CLS_IDX_NONE);
    key_ip(&k, 0, 7, htonl(0x0b000002), 80);
    assert_int_equal(lookup1(&fx->cls, &k, NULL), CLS_IDX_NONE);

    /* A duplicate (same mask, same masked key) returns the existing one and
     * does not take the reference. */
    struct action_list *a3 = mk_actions(3);
    uint32_t i3;
    key_ip(&k, 0, 99, htonl(0x0a000077), 1);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m24, a3, &i3), 1);
    assert_int_equal(i3, i1);
    assert_int_equal(a3->refcnt, 1);
    action_list_unref(a3);
    assert_int_equal(fx->flows.n, 2);
}

static void test_batch_map_and_probes(void **state)
{
    struct fixture *fx = *state;
    struct flow_mask ma, mb;
    mask_dst(&ma, UINT32_MAX, 0);
    mask_dst(&mb, 0, 0xffff);
    struct flow_key k;
    uint32_t ia, ib;
    key_ip(&k, 0, 0, 100, 0);
    assert_int_equal(classifier_insert(&fx->cls, &k, &ma, mk_actions(1), &ia), 0);
    key_ip(&k, 0, 0, 0, 443);
    assert_int_equal(classifier_insert(&fx->cls, &k, &mb, mk_actions(2), &ib), 0);
    /* vec order: a (first inserted), b. */
    assert_int_equal(fx->cls.vec[0]->n, 1);

    struct flow_key keys[32];
    for (unsigned i = 0; i < 32; i++) {
        /* i%3: 0 -> hits a, 1 -> hits b, 2 -> misses */
        if (i % 3 == 0)
            key_ip(&keys[i], 0, i, 100, (uint16_t)i);
        else if (i % 3 == 1)
            key_ip(&keys[i], 0, i, 5000 + i, 443);
        else
            key_ip(&keys[i], 0, i, 7000 + i, 22);
    }
    uint32_t idx[32];
    uint64_t ph = 0, pm = 0;
    /* Only the odd bits are asked for. */
    uint32_t map = 0xaaaaaaaau;
    uint32_t hits = classifier_lookup_batch(&fx->cls, keys, map, idx, &ph, &pm);
    unsigned na = 0, nb = 0, nm = 0;
    for (unsigned i = 0; i < 32; i++) {
        if (!(map >> i & 1)) {
            assert_false(hits >> i & 1);
            continue;
        }
        if (i % 3 == 0) {
            assert_true(hits >> i & 1);
            assert_int_equal(idx[i], ia);
            na++;
        } else if (i % 3 == 1) {
            assert_true(hits >> i & 1);
            assert_int_equal(idx[i], ib);
            nb++;
        } else {
            assert_false(hits >> i & 1);
            nm++;
        }
    }
    assert_true(na && nb && nm);
    /* Hits on a probed 1 subtable, hits on b probed 2, misses probed 2. */
    assert_int_equal(ph, na * 1 + nb * 2);
    assert_int_equal(pm, nm * 2);
    assert_int_equal(fx->cls.vec[0]->hits, na);
    assert_int_equal(fx->cls.vec[1]->hits, nb);

    /* Ranking: make b the most hit, re-rank, b is probed first. */
    for (unsigned r = 0; r < 5; r++)
        assert_int_equal(lookup1(&fx->cls, &keys[1], NULL), ib);
    classifier_rank(&fx->cls);
    assert_int_equal(fx->cls.vec[0]->mask.m.tp_dst, 0xffff);
    assert_int_equal(fx->cls.vec[0]->hits, 0);
    assert_int_equal(fx->cls.vec[1]->hits, 0);
    uint64_t probes;
    assert_int_equal(lookup1(&fx->cls, &keys[1], &probes), ib);
    assert_int_equal(probes, 1);
    assert_int_equal(lookup1(&fx->cls, &keys[0], &probes), ia);
    assert_int_equal(probes, 2);
}

/* Runs: keys that equal the first key of a subtable's probe on its mask
 * share its answer (hit or miss) up to the first key that differs; the
 * keys after that, equal to the first or not, are probed on their own.
 * Every answer and every counter is what one-key lookups give. */
static void test_batch_runs(void **state)
{
    struct fixture *fx = *state;
    struct flow_mask m8, mport;
    mask_dst(&m8, htonl(0xff000000), 0);
    mask_dst(&mport, 0, 0xffff);
    struct flow_key k;
    uint32_t i10, i80;
    key_ip(&k, 0, 0, htonl(0x0a000000), 0);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m8, mk_actions(1), &i10), 0);
    key_ip(&k, 0, 0, 0, 80);
    assert_int_equal(classifier_insert(&fx->cls, &k, &mport, mk_actions(2), &i80), 0);

    /* 'a': 10/8 (a hit in the first subtable, whatever the rest);
     * 'p': not 10/8, port 80 (a miss in the first, a hit in the second);
     * 'x': neither. Sources and low address bits vary within a kind. */
    static const char pattern[] = "aaaapaaxxxpppaaxapxxxaaaaaaapxaa";
    _Static_assert(sizeof pattern - 1 == 32, "one batch");
    struct flow_key keys[32];
    for (unsigned i = 0; i < 32; i++) {
        uint32_t dst = pattern[i] == 'a' ? 0x0a000000u + i : 0x0b000000u + i;
        key_ip(&keys[i], 0, 1000 + i, htonl(dst), pattern[i] == 'p' ? 80 : (uint16_t)(100 + i));
    }
    for (unsigned first = 0; first < 32; first += 5) {
        uint32_t map = ~0u << first, idx[32];
        uint64_t ph = 0, pm = 0, ph1 = 0, pm1 = 0;
        uint64_t hits0 = fx->cls.vec[0]->hits, hits1 = fx->cls.vec[1]->hits;
        uint32_t hits = classifier_lookup_batch(&fx->cls, keys, map, idx, &ph, &pm);
        unsigned want0 = 0, want1 = 0;
        for (unsigned i = first; i < 32; i++) {
            uint32_t one[32], h1 = 0;
            uint64_t a = 0, b = 0;
            h1 = classifier_lookup_batch(&fx->cls, &keys[i], 1, one, &a, &b);
            ph1 += a;
            pm1 += b;
            want0 += pattern[i] == 'a';
            want1 += pattern[i] == 'p';
            if (pattern[i] == 'x') {
                assert_int_equal(h1, 0);
                assert_false(hits >> i & 1);
            } else {
                assert_int_equal(h1, 1);
                assert_true(hits >> i & 1);
                assert_int_equal(idx[i], one[0]);
                assert_int_equal(idx[i], pattern[i] == 'a' ? i10 : i80);
            }
        }
        assert_int_equal(hits & ~map, 0);
        assert_int_equal(ph, ph1);
        assert_int_equal(pm, pm1);
        /* The batch and the one-key lookups each counted every hit. */
        assert_int_equal(fx->cls.vec[0]->hits - hits0, 2 * want0);
        assert_int_equal(fx->cls.vec[1]->hits - hits1, 2 * want1);
    }
}

/* The bucket invariant: every entry's buckets from its home up to (not
 * including) its own are full. Returns how many entries are displaced. */
static unsigned check_buckets(const struct cls_subtable *st)
{
    unsigned displaced = 0, n = 0;
    uint32_t bm = st->bucket_mask;
    for (uint32_t j = 0; j <= bm; j++) {
        for (unsigned e = 0; e < CLS_BUCKET_ENTRIES; e++) {
            if (!st->buckets[j].idx1[e]) {
                assert_int_equal(st->buckets[j].hash[e], 0);
                continue;
            }
            n++;
            uint32_t h = st->buckets[j].hash[e] & bm;
            if (h != j)
                displaced++;
            for (uint32_t b = h; b != j; b = (b + 1) & bm)
                assert_true(cls_bucket_full(&st->buckets[b]));
        }
    }
    assert_int_equal(n, st->n);
    return displaced;
}

/* Many megaflows in one subtable: shared home buckets, overflow chains,
 * growth, and removal with backward shift, checked against a brute-force
 * model and the bucket invariant after every operation. */
static void test_one_subtable_churn(void **state)
{
    struct fixture *fx = *state;
    struct flow_mask m;
    mask_dst(&m, UINT32_MAX, 0);
    enum { N = 600 };
    uint32_t idx[N];
    bool live[N];
    memset(live, 0, sizeof live);
    uint64_t rng = 12345;
    struct flow_key k;
    unsigned max_displaced = 0;
    for (unsigned round = 0; round < 20000; round++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        unsigned v = (unsigned)(rng >> 33) % N;
        key_ip(&k, 0, 0, v, 0);
        if (!live[v]) {
            struct action_list *a = mk_actions((uint16_t)v);
            assert_int_equal(classifier_insert(&fx->cls, &k, &m, a, &idx[v]), 0);
            live[v] = true;
        } else {
            struct action_list *a = cls_flow_remove(&fx->flows, idx[v]);
            assert_int_equal(a->a[0].u.port, v);
            action_list_unref(a);
            live[v] = false;
        }
        if (fx->cls.n_st) {
            unsigned d = check_buckets(fx->cls.vec[0]);
            if (d > max_displaced)
                max_displaced = d;
        }
        if (round % 97 == 0) {
            unsigned nlive = 0;
            for (unsigned j = 0; j < N; j++) {
                key_ip(&k, 0, 77, j, 5);
                uint32_t got = lookup1(&fx->cls, &k, NULL);
                if (live[j]) {
                    assert_int_equal(got, idx[j]);
                    assert_int_equal(cls_flow(&fx->flows, got)->actions->a[0].u.port, j);
                    nlive++;
                } else {
                    assert_int_equal(got, CLS_IDX_NONE);
                }
            }
            assert_int_equal(fx->cls.n_flows, nlive);
            if (nlive)
                assert_true((fx->cls.vec[0]->bucket_mask + 1) * CLS_BUCKET_ENTRIES >= 2 * nlive);
        }
    }
    assert_true(fx->cls.n_st <= 1);
    /* Overflow chains occurred, so the shifts were exercised. */
    assert_true(max_displaced >= 5);
}

/* The subtable hash and match look only at the mask's bits. */
static void test_cls_hash_masked_only(void **state)
{
    struct fixture *fx = *state;
    struct flow_mask m;
    mask_dst(&m, htonl(0xffff0000), 0);
    struct flow_key k1, k2;
    key_ip(&k1, 0, 1, htonl(0x0a0b0c0d), 1);
    key_ip(&k2, 0, 2, htonl(0x0a0bffff), 2);
    k2.nw_ttl = 3;
    uint32_t i;
    assert_int_equal(classifier_insert(&fx->cls, &k1, &m, mk_actions(1), &i), 0);
    const struct cls_subtable *st = fx->cls.vec[0];
    assert_int_equal(cls_hash(st, &k1), cls_hash(st, &k2));
    assert_int_equal(cls_hash(st, &k1), cls_flow(&fx->flows, i)->hash);
    assert_true(cls_flow_match(cls_flow(&fx->flows, i), &k2));
    k2.nw_dst = htonl(0x0a0c0000);
    assert_false(cls_flow_match(cls_flow(&fx->flows, i), &k2));
    /* in_port and dl_type share a 64-bit word, nw_dst is in another. */
    assert_int_equal(st->n_words, 2);
}

/* flow_hot_equal_masked(), the hot-word compare of megaflow matches,
 * classifier runs and the EMC, against a byte-by-byte model: random keys
 * whose hot bytes often agree, random masks (some all-zero bytes), with and
 * without a mask; cold bytes never count. */
static void test_hot_equal_masked(void **state)
{
    (void)state;
    uint64_t s = 12345;
    unsigned equal = 0, masked_equal = 0;
    for (unsigned it = 0; it < 20000; it++) {
        struct flow_key a, b;
        struct flow_mask m;
        uint8_t *pa = (uint8_t *)&a, *pb = (uint8_t *)&b, *pm = (uint8_t *)&m;
        for (size_t i = 0; i < sizeof a; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            pa[i] = (uint8_t)(s >> 56);
            pb[i] = (s >> 41) % 8 ? pa[i] : (uint8_t)(s >> 48);
            pm[i] = (s >> 37) % 2 ? 0 : (uint8_t)(s >> 24);
        }
        if (it % 4 == 0)
            memcpy(&b, &a, FLOW_HOT_U64S * 8); /* hot words equal, cold ones not */
        bool want = true, want_masked = true;
        for (size_t i = 0; i < FLOW_HOT_U64S * 8; i++) {
            want &= pa[i] == pb[i];
            want_masked &= (pa[i] & pm[i]) == (pb[i] & pm[i]);
        }
        assert_int_equal(flow_hot_equal_masked(&a, &b, NULL), want);
        assert_int_equal(flow_hot_equal_masked(&a, &b, &m), want_masked);
        equal += want;
        masked_equal += want_masked;
    }
    /* Both answers occurred often enough to mean something. */
    assert_true(equal >= 4000 && equal < 20000);
    assert_true(masked_equal > equal && masked_equal < 20000);
}

static void test_generation_and_reuse(void **state)
{
    struct fixture *fx = *state;
    struct flow_mask m;
    mask_dst(&m, UINT32_MAX, 0);
    struct flow_key k;
    uint32_t i1, i2;
    key_ip(&k, 0, 0, 1, 0);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m, mk_actions(1), &i1), 0);
    uint32_t g1 = cls_flow(&fx->flows, i1)->gen;
    assert_true(cls_flow_alive(&fx->flows, i1, g1));
    action_list_unref(cls_flow_remove(&fx->flows, i1));
    assert_false(cls_flow_alive(&fx->flows, i1, g1));
    /* The last megaflow of the subtable: the subtable is gone. */
    assert_int_equal(fx->cls.n_st, 0);
    key_ip(&k, 0, 0, 2, 0);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m, mk_actions(2), &i2), 0);
    assert_int_equal(i2, i1); /* slot reused at once ... */
    assert_int_not_equal(cls_flow(&fx->flows, i2)->gen, g1); /* ... as a new incarnation */
    assert_false(cls_flow_alive(&fx->flows, i1, g1));
    assert_true(cls_flow_alive(&fx->flows, i2, cls_flow(&fx->flows, i2)->gen));
}

static void test_full_and_clock_victim(void **state)
{
    struct fixture *fx = *state; /* max 4 */
    struct flow_mask m;
    mask_dst(&m, UINT32_MAX, 0);
    struct flow_key k;
    uint32_t idx[4], extra;
    for (unsigned i = 0; i < 4; i++) {
        key_ip(&k, 0, 0, i, 0);
        assert_int_equal(classifier_insert(&fx->cls, &k, &m, mk_actions((uint16_t)i), &idx[i]), 0);
    }
    key_ip(&k, 0, 0, 9, 0);
    struct action_list *a = mk_actions(9);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m, a, &extra), -ENOSPC);
    /* The first turn clears every ref bit; mark slot 0 and 2 as used again:
     * the victims are then 1, 3, and then 0 (its bit cleared by the turn). */
    assert_int_equal(cls_flows_victim(&fx->flows), idx[0]);
    for (unsigned i = 0; i < 4; i++)
        cls_flow(&fx->flows, idx[i])->ref = 0;
    cls_flow(&fx->flows, idx[0])->ref = 1;
    cls_flow(&fx->flows, idx[2])->ref = 1;
    fx->flows.hand = 0;
    uint32_t v = cls_flows_victim(&fx->flows);
    assert_int_equal(v, idx[1]);
    action_list_unref(cls_flow_remove(&fx->flows, v));
    v = cls_flows_victim(&fx->flows);
    assert_int_equal(v, idx[3]);
    action_list_unref(cls_flow_remove(&fx->flows, v));
    v = cls_flows_victim(&fx->flows);
    assert_int_equal(v, idx[0]);
    assert_int_equal(classifier_insert(&fx->cls, &k, &m, a, &extra), 0);
    assert_int_equal(fx->flows.n, 3);
}

static void test_destroy_unrefs(void **state)
{
    struct fixture *fx = *state;
    struct action_list *shared = mk_actions(5);
    struct flow_mask m;
    struct flow_key k;
    uint32_t i;
    for (unsigned j = 0; j < 50; j++) {
        mask_dst(&m, j % 2 ? UINT32_MAX : htonl(0xffffff00), (uint16_t)(j % 5));
        key_ip(&k, 0, 0, htonl(0x0a000000 | j << 8 | j), (uint16_t)j);
        int rc = classifier_insert(&fx->cls, &k, &m, action_list_ref(shared), &i);
        if (rc == 1)
            action_list_unref(shared);
        else
            assert_int_equal(rc, 0);
    }
    assert_true(fx->cls.n_st > 1);
    assert_true(classifier_memory(&fx->cls) > 0);
    assert_int_equal(shared->refcnt, 1 + fx->cls.n_flows);
    classifier_destroy(&fx->cls);
    assert_int_equal(shared->refcnt, 1);
    assert_int_equal(fx->flows.n, 0);
    action_list_unref(shared);
    classifier_init(&fx->cls, &fx->flows);
    size_t touched;
    assert_int_equal(cls_flows_memory(&fx->flows, &touched), 4096 * sizeof(struct cls_megaflow));
    assert_true(touched > 0 && touched <= 50 * sizeof(struct cls_megaflow));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_bounds),
        cmocka_unit_test_setup_teardown(test_insert_lookup_two_masks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_map_and_probes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_subtable_churn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cls_hash_masked_only, setup, teardown),
        cmocka_unit_test(test_hot_equal_masked),
        cmocka_unit_test_setup_teardown(test_generation_and_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_and_clock_victim, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_unrefs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
