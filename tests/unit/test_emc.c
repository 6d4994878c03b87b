/* test_emc.c: exact-match cache. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "classifier.h"
#include "emc.h"
#include "flow.h"

struct fixture {
    struct cls_flows flows;
    struct classifier cls;
    struct flow_mask mask; /* in_port + nw_src exact */
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    if (!fx || cls_flows_init(&fx->flows, 1024))
        return -1;
    classifier_init(&fx->cls, &fx->flows);
    fx->mask.m.in_port = UINT32_MAX;
    fx->mask.m.nw_src = UINT32_MAX;
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

static void key_n(struct flow_key *k, uint32_t n)
{
    memset(k, 0, sizeof *k);
    k->dl_type = 0x0800;
    k->nw_src = n;
    k->nw_proto = 17;
    k->tp_src = (uint16_t)n;
}

/* A megaflow matching key_n(n) (nw_src exact). */
static uint32_t add_flow(struct fixture *fx, uint32_t n)
{
    struct flow_key k;
    key_n(&k, n);
    struct action a = {.type = ACT_OUTPUT, .u.port = (uint16_t)n};
    uint32_t idx;
    assert_int_equal(classifier_insert(&fx->cls, &k, &fx->mask, action_list_create(&a, 1), &idx),
                     0);
    return idx;
}

static uint32_t gen_of(struct fixture *fx, uint32_t idx)
{
    return cls_flow(&fx->flows, idx)->gen;
}

static void test_create_args(void **state)
{
    (void)state;
    assert_null(emc_create(0, 2, 136));
    assert_null(emc_create(1000, 2, 136));
    assert_null(emc_create(1024, 3, 136));
    assert_null(emc_create(1024, 0, 136));
    assert_null(emc_create(EMC_MAX_ENTRIES * 2, 1, 136));
    struct emc *e = emc_create(8192, 2, 500);
    assert_non_null(e);
    assert_int_equal(e->max_key_len, 136); /* clamped to the key size */
    /* 16 bytes of meta + the 136-byte key per entry. */
    assert_int_equal(emc_memory(e), 8192 * (16 + 136));
    assert_int_equal(sizeof(struct emc_meta), 16);
    emc_destroy(e);
    emc_destroy(NULL);
}

static void test_key_len(void **state)
{
    (void)state;
    struct flow_key k;
    memset(&k, 0, sizeof k);
    assert_int_equal(emc_key_len(&k), 0);
    k.in_port = 1; /* offset 0: word 0 */
    assert_int_equal(emc_key_len(&k), 8);
    k.nw_dst = 1; /* offset 28: word 3 */
    assert_int_equal(emc_key_len(&k), 32);
    k.vlan_tpid[1] = 0x8100; /* offset 46: word 5, the last hot word (IPv4 keys end here) */
    assert_int_equal(emc_key_len(&k), 48);
    k.ipv6_dst[15] = 1; /* offset 79: word 9 (IPv6 keys end here) */
    assert_int_equal(emc_key_len(&k), 80);
    k.arp_tha[5] = 1; /* offset 91: word 11 (ARP keys end here) */
    assert_int_equal(emc_key_len(&k), 96);
    k.tun_id = 1; /* offset 128: word 16 (decapsulated keys) */
    assert_int_equal(emc_key_len(&k), 136);
}

static void test_hit_then_alive_then_key(void **state)
{
    struct fixture *fx = *state;
    struct emc *e = emc_create(64, 2, 136);
    assert_non_null(e);
    uint32_t i1 = add_flow(fx, 1);
    struct flow_key k1, k2;
    key_n(&k1, 1);
    key_n(&k2, 2);
    uint32_t h1 = flow_hash(&k1, 0), got = 99;
    assert_false(emc_lookup(e, &fx->flows, &k1, h1, &got));
    assert_true(emc_insert(e, &fx->flows, &k1, h1, i1, gen_of(fx, i1)));
    assert_true(emc_lookup(e, &fx->flows, &k1, h1, &got));
    assert_int_equal(got, i1);
    /* Same hash, different key: the key compare rejects it. */
    assert_false(emc_lookup(e, &fx->flows, &k2, h1, &got));
    /* Same key, different hash: the hash compare rejects it first. */
    assert_false(emc_lookup(e, &fx->flows, &k1, h1 ^ 0x80000000u, &got));
    /* The key length is recorded. */
    uint32_t p = emc_pos(e, h1, 0);
    uint32_t q = emc_pos(e, h1, 1);
    assert_true(e->meta[p].used || e->meta[q].used);
    /* (key_n()'s last field is nw_proto, in word 4.) */
    assert_int_equal(e->meta[e->meta[p].used && e->meta[p].hash == h1 ? p : q].key_len, 40);
    /* Re-inserting the same key updates the entry in place. */
    uint32_t i9 = add_flow(fx, 9);
    assert_true(emc_insert(e, &fx->flows, &k1, h1, i9, gen_of(fx, i9)));
    assert_true(emc_lookup(e, &fx->flows, &k1, h1, &got));
    assert_int_equal(got, i9);
    assert_int_equal(emc_count(e, &fx->flows), 1);
    emc_destroy(e);
}

/* emc_lookup_hot() of a key without cold words: an entry with the same
 * hot words and a cold word is another key (a miss); the key itself hits;
 * emc_lookup() agrees. */
static void test_lookup_hot(void **state)
{
    struct fixture *fx = *state;
    struct emc *e = emc_create(64, 2, 136);
    assert_non_null(e);
    uint32_t i1 = add_flow(fx, 1), i2 = add_flow(fx, 2), got = 99;
    struct flow_key k, cold;
    key_n(&k, 1);
    cold = k;
    cold.ipv6_dst[0] = 0xfe;
    assert_false(flow_key_cold(&k));
    assert_true(flow_key_cold(&cold));
    const uint32_t h = 0x12345678u; /* one hash for both: the key compare decides */
    assert_true(emc_insert(e, &fx->flows, &cold, h, i2, gen_of(fx, i2)));
    assert_false(emc_lookup_hot(e, &fx->flows, &k, h, &got));
    assert_false(emc_lookup(e, &fx->flows, &k, h, &got));
    assert_true(emc_lookup(e, &fx->flows, &cold, h, &got));
    assert_int_equal(got, i2);
    assert_true(emc_insert(e, &fx->flows, &k, h, i1, gen_of(fx, i1)));
    assert_true(emc_lookup_hot(e, &fx->flows, &k, h, &got));
    assert_int_equal(got, i1);
    assert_true(emc_lookup(e, &fx->flows, &cold, h, &got));
    assert_int_equal(got, i2);
    /* Another hot word: a miss. */
    k.tp_src ^= 1;
    assert_false(emc_lookup_hot(e, &fx->flows, &k, h, &got));
    emc_destroy(e);
}

/* Three keys with one hash compete for the two candidate positions. */
static void test_collisions_full_bucket_2way(void **state)
{
    struct fixture *fx = *state;
    struct emc *e = emc_create(256, 2, 136);
    assert_non_null(e);
    const uint32_t h = 0x00130005u; /* positions 5 and 0x13 */
    assert_int_not_equal(emc_pos(e, h, 0), emc_pos(e, h, 1));
    struct flow_key k[3];
    uint32_t idx[3], got;
    for (unsigned i = 0; i < 3; i++) {
        key_n(&k[i], 100 + i);
        idx[i] = add_flow(fx, 100 + i);
    }
    assert_true(emc_insert(e, &fx->flows, &k[0], h, idx[0], gen_of(fx, idx[0])));
    assert_true(emc_insert(e, &fx->flows, &k[1], h, idx[1], gen_of(fx, idx[1])));
    for (unsigned i = 0; i < 2; i++) {
        assert_true(emc_lookup(e, &fx->flows, &k[i], h, &got));
        assert_int_equal(got, idx[i]);
    }
    /* Both candidates are alive with equal hashes: the first is replaced. */
    assert_true(emc_insert(e, &fx->flows, &k[2], h, idx[2], gen_of(fx, idx[2])));
    assert_false(emc_lookup(e, &fx->flows, &k[0], h, &got));
    assert_true(emc_lookup(e, &fx->flows, &k[1], h, &got));
    assert_int_equal(got, idx[1]);
    assert_true(emc_lookup(e, &fx->flows, &k[2], h, &got));
    assert_int_equal(got, idx[2]);
    assert_int_equal(emc_count(e, &fx->flows), 2);

    /* A dead candidate is preferred over a live one: kill k[1]'s megaflow. */
    action_list_unref(cls_flow_remove(&fx->flows, idx[1]));
    assert_true(emc_insert(e, &fx->flows, &k[0], h, idx[0], gen_of(fx, idx[0])));
    assert_true(emc_lookup(e, &fx->flows, &k[2], h, &got)); /* survived */
    assert_true(emc_lookup(e, &fx->flows, &k[0], h, &got));
    assert_int_equal(got, idx[0]);

    /* Different hashes sharing both positions: the smaller stored hash is
     * replaced. */
    emc_flush(e);
    const uint32_t ha = 0x00130005u, hb = 0x01130105u; /* same positions in 256 */
    assert_int_equal(emc_pos(e, ha, 0), emc_pos(e, hb, 0));
    assert_int_equal(emc_pos(e, ha, 1), emc_pos(e, hb, 1));
    assert_true(emc_insert(e, &fx->flows, &k[0], hb, idx[0], gen_of(fx, idx[0])));
    assert_true(emc_insert(e, &fx->flows, &k[2], ha, idx[2], gen_of(fx, idx[2])));
    /* k[0] (hb) took position 0, k[2] (ha) position 1; ha < hb, so the
     * next insertion replaces k[2]. */
    uint32_t i3 = add_flow(fx, 103);
    struct flow_key k3;
    key_n(&k3, 103);
    assert_true(emc_insert(e, &fx->flows, &k3, hb, i3, gen_of(fx, i3)));
    assert_true(emc_lookup(e, &fx->flows, &k[0], hb, &got));
    assert_false(emc_lookup(e, &fx->flows, &k[2], ha, &got));
    assert_true(emc_lookup(e, &fx->flows, &k3, hb, &got));
    assert_int_equal(got, i3);
    emc_destroy(e);
}

static void test_collisions_1way(void **state)
{
    struct fixture *fx = *state;
    struct emc *e = emc_create(256, 1, 136);
    assert_non_null(e);
    struct flow_key k[2];
    uint32_t idx[2], got;
    for (unsigned i = 0; i < 2; i++) {
        key_n(&k[i], 200 + i);
        idx[i] = add_flow(fx, 200 + i);
    }
    /* Different hashes, one position (0x42) in a 1-way EMC. */
    uint32_t h0 = 0x11110042u, h1 = 0x22220042u;
    assert_true(emc_insert(e, &fx->flows, &k[0], h0, idx[0], gen_of(fx, idx[0])));
    assert_true(emc_lookup(e, &fx->flows, &k[0], h0, &got));
    assert_true(emc_insert(e, &fx->flows, &k[1], h1, idx[1], gen_of(fx, idx[1])));
    assert_false(emc_lookup(e, &fx->flows, &k[0], h0, &got));
    assert_true(emc_lookup(e, &fx->flows, &k[1], h1, &got));
    assert_int_equal(emc_count(e, &fx->flows), 1);
    emc_destroy(e);
}

static void test_key_length_limit(void **state)
{
    struct fixture *fx = *state;
    struct emc *e = emc_create(64, 2, 48);
    assert_non_null(e);
    struct flow_key k;
    key_n(&k, 7);
    uint32_t i = add_flow(fx, 7), got;
    uint32_t h = flow_hash(&k, 0);
    assert_int_equal(emc_key_len(&k), 40);
    assert_true(emc_insert(e, &fx->flows, &k, h, i, gen_of(fx, i)));
    assert_true(emc_lookup(e, &fx->flows, &k, h, &got));
    /* An ARP-like key reaches a cold word: 96 > 48, never cached. */
    k.arp_tha[0] = 1;
    h = flow_hash(&k, 0);
    assert_false(emc_insert(e, &fx->flows, &k, h, i, gen_of(fx, i)));
    assert_false(emc_lookup(e, &fx->flows, &k, h, &got));
    assert_int_equal(emc_count(e, &fx->flows), 1);
    emc_destroy(e);

    /* Limit 0: only the all-zero key fits. */
    e = emc_create(64, 2, 0);
    assert_non_null(e);
    key_n(&k, 7);
    assert_false(emc_insert(e, &fx->flows, &k, flow_hash(&k, 0), i, gen_of(fx, i)));
    memset(&k, 0, sizeof k);
    assert_true(emc_insert(e, &fx->flows, &k, flow_hash(&k, 0), i, gen_of(fx, i)));
    emc_destroy(e);
}

/* Entries of dead megaflows miss, and the sweep clears them all in one
 * pass over the table. */
static void test_dead_entries_and_sweep(void **state)
{
    struct fixture *fx = *state;
    enum { N = 40 };
    struct emc *e = emc_create(128, 2, 136);
    assert_non_null(e);
    uint32_t idx[N], got;
    struct flow_key k[N];
    for (unsigned i = 0; i < N; i++) {
        key_n(&k[i], 1000 + i);
        idx[i] = add_flow(fx, 1000 + i);
        assert_true(emc_insert(e, &fx->flows, &k[i], flow_hash(&k[i], 0), idx[i],
                               gen_of(fx, idx[i])));
    }
    uint32_t live = emc_count(e, &fx->flows);
    assert_true(live > N / 2);
    /* Kill the even megaflows, then reuse their slots for other flows: a
     * reused slot must not revive the old entries (generation check). */
    for (unsigned i = 0; i < N; i += 2)
        action_list_unref(cls_flow_remove(&fx->flows, idx[i]));
    for (unsigned i = 0; i < N; i += 2) {
        uint32_t j = add_flow(fx, 5000 + i);
        (void)j;
    }
    unsigned expect_live = 0;
    for (unsigned i = 1; i < N; i += 2)
        expect_live += emc_lookup(e, &fx->flows, &k[i], flow_hash(&k[i], 0), &got);
    for (unsigned i = 0; i < N; i += 2)
        assert_false(emc_lookup(e, &fx->flows, &k[i], flow_hash(&k[i], 0), &got));
    /* Probes cleared the dead entries they met. */
    assert_true(e->swept > 0);
    assert_int_equal(emc_count(e, &fx->flows), expect_live);

    /* Sweep: kill the rest, nothing left after 128 steps. */
    for (unsigned i = 1; i < N; i += 2)
        action_list_unref(cls_flow_remove(&fx->flows, idx[i]));
    uint64_t before = e->swept;
    unsigned cleared = 0;
    for (unsigned s = 0; s < 128; s++)
        cleared += emc_sweep_step(e, &fx->flows);
    assert_int_equal(cleared, expect_live);
    assert_int_equal(e->swept - before, expect_live);
    for (uint32_t p = 0; p <= e->mask; p++)
        assert_false(e->meta[p].used);
    emc_destroy(e);
}

/* Reference splitmix64 (the published algorithm), independent of emc.h. */
static uint64_t ref_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void test_insert_probability(void **state)
{
    (void)state;
    /* Fixed seed: the count is exact and equals the reference PRNG's. */
    uint64_t s = 42, r = 42;
    uint64_t thr = emc_insert_threshold(100);
    assert_int_equal(thr, 42949672u);
    unsigned n = 0, ref = 0;
    for (unsigned i = 0; i < 100000; i++) {
        n += emc_insert_draw(&s, thr);
        ref += (uint32_t)(ref_splitmix(&r) >> 32) < 42949672u;
    }
    assert_int_equal(n, ref);
    assert_int_equal(n, 1022);

    /* 1 always, 0 never, without consuming random numbers. */
    uint64_t s1 = 7;
    for (unsigned i = 0; i < 1000; i++) {
        assert_true(emc_insert_draw(&s1, emc_insert_threshold(1)));
        assert_false(emc_insert_draw(&s1, emc_insert_threshold(0)));
    }
    assert_int_equal(s1, 7);

    /* Over many seeds, about 1/N for several N (deterministic: the seeds
     * are fixed, the bounds are > 6 standard deviations). */
    const uint32_t invs[] = {2, 10, 100, 1000};
    for (unsigned j = 0; j < 4; j++) {
        uint64_t total = 0, draws = 0;
        for (uint64_t seed = 1; seed <= 200; seed++) {
            uint64_t st = seed * 0x1234567ull;
            for (unsigned i = 0; i < 5000; i++)
                total += emc_insert_draw(&st, emc_insert_threshold(invs[j]));
            draws += 5000;
        }
        double p = 1.0 / invs[j], got = (double)total / (double)draws;
        double sd = __builtin_sqrt(p * (1 - p) / (double)draws);
        assert_true(got > p - 6 * sd && got < p + 6 * sd);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        cmocka_unit_test(test_key_len),
        cmocka_unit_test_setup_teardown(test_hit_then_alive_then_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_hot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collisions_full_bucket_2way, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collisions_1way, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_length_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_entries_and_sweep, setup, teardown),
        cmocka_unit_test(test_insert_probability),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
