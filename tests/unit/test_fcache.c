/* test_fcache.c: the cache hierarchy, its counters and invalidation, and
 * the differential property test against the rule table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "emc.h"
#include "fcache.h"
#include "flow.h"
#include "rules.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */

static struct rule *mk_rule(int prio, const struct flow_key *match,
                            const struct flow_mask *mask, uint16_t port)
{
    struct rule *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->priority = prio;
    flow_apply_mask(&r->match, match, mask);
    r->mask = *mask;
    struct action a = {.type = ACT_OUTPUT, .u.port = port};
    r->actions = action_list_create(&a, 1);
    assert_non_null(r->actions);
    return r;
}

static struct rule *parse_rule(const char *text)
{
    struct rule *r = NULL;
    char err[128];
    int rc = rule_parse(text, NULL, NULL, &r, err, sizeof err);
    if (rc)
        fail_msg("rule_parse(%s): %s", text, err);
    return r;
}

static void key_ip(struct flow_key *k, uint32_t in_port, uint32_t src, uint32_t dst,
                   uint16_t tp_src, uint16_t tp_dst)
{
    memset(k, 0, sizeof *k);
    k->in_port = in_port;
    k->dl_type = 0x0800;
    k->nw_proto = 6;
    k->nw_src = htonl(src);
    k->nw_dst = htonl(dst);
    k->tp_src = tp_src;
    k->tp_dst = tp_dst;
    k->nw_ttl = 64;
}

static const struct action_list *expect(const struct rule_table *t, const struct flow_key *k)
{
    const struct rule *r = rule_table_lookup(t, k, NULL);
    return r ? r->actions : NULL;
}

/* Looks up n keys and checks every answer against the rule table. */
static void lookup_check(struct fcache *fc, const struct rule_table *t,
                         const struct flow_key *keys, unsigned n, uint64_t now,
                         const struct action_list **out)
{
    uint32_t h[PKT_BATCH_MAX];
    for (unsigned i = 0; i < n; i++)
        h[i] = flow_hash(&keys[i], 0);
    fcache_lookup_batch(fc, keys, h, n, out, now);
    for (unsigned i = 0; i < n; i++)
        assert_ptr_equal(out[i], expect(t, &keys[i]));
}

static const struct action_list *lookup1(struct fcache *fc, const struct rule_table *t,
                                         const struct flow_key *k)
{
    const struct action_list *out[1];
    lookup_check(fc, t, k, 1, 0, out);
    return out[0];
}

static void check_identity(const struct fcache *fc)
{
    struct fcache_stats s;
    fcache_get_stats(fc, &s);
    assert_int_equal(s.n[FCACHE_STAT_LOOKUPS], s.n[FCACHE_STAT_EMC_HITS] + s.n[FCACHE_STAT_SMC_HITS] + s.n[FCACHE_STAT_MEGAFLOW_HITS] + s.n[FCACHE_STAT_SIMPLE_HITS] + s.n[FCACHE_STAT_UPCALLS]);
    assert_true(s.n[FCACHE_STAT_UPCALL_MISSES] <= s.n[FCACHE_STAT_UPCALLS]);
}

static struct fcache_stats stats(const struct fcache *fc)
{
    struct fcache_stats s;
    fcache_get_stats(fc, &s);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */

static void test_cfg_default_and_validate(void **state)
{
    (void)state;
    struct fcache_cfg c;
    char err[160];
    fcache_cfg_default(&c);
    assert_int_equal(c.emc_entries, 8192);
    assert_int_equal(c.emc_ways, 2);
    assert_int_equal(c.emc_insert_inv_prob, 100);
    assert_int_equal(c.emc_port_inv_prob[0], -1);
    assert_int_equal(c.emc_port_inv_prob[FCACHE_MAX_PORTS - 1], -1);
    assert_int_equal(c.emc_max_key_len, 136);
    assert_true(c.smc_enabled);
    assert_int_equal(c.smc_entries, 1u << 21);
    assert_int_equal(c.megaflow_max, 65535);
    assert_int_equal(c.resort_interval_ns, 1000000000ull);
    assert_true(c.revalidate);
    assert_int_equal(c.direct_subtables, 1);
    assert_int_equal(fcache_cfg_validate(&c, err, sizeof err), 0);

    struct fcache_cfg b = c;
    b.emc_entries = 1000;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "emc-entries"));
    b = c;
    b.emc_ways = 4;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "emc-ways"));
    b = c;
    b.emc_port_inv_prob[3] = -2;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "port 3"));
    b = c;
    b.emc_max_key_len = 137;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "emc-max-key-len"));
    b = c;
    b.smc_entries = 3;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "smc-entries"));
    b.smc_enabled = false; /* ignored when off */
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), 0);
    b = c;
    b.direct_subtables = FCACHE_DIRECT_MAX + 1;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "direct-subtables"));
    b = c;
    b.megaflow_max = 0;
    assert_int_equal(fcache_cfg_validate(&b, err, sizeof err), -1);
    assert_non_null(strstr(err, "megaflow-max"));

    struct rule_table *t = rule_table_create();
    assert_null(fcache_create(&b, t));
    rule_table_destroy(t);
}

static void test_memory_defaults(void **state)
{
    (void)state;
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    struct rule_table *t = rule_table_create();
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct fcache_memory m;
    fcache_get_memory(fc, &m);
    assert_int_equal(m.emc, 8192 * 152);     /* 1.19 MiB */
    assert_int_equal(m.smc, 8u << 20);       /* 8 MiB */
    assert_int_equal(m.megaflows, 65535 * sizeof(struct cls_megaflow));
    assert_int_equal(m.megaflows_touched, 0);
    assert_true(m.total >= m.emc + m.smc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* Stages and counters                                                      */

/* Small caches: EMC insertion 1 in inv, SMC on or off, the direct stage
 * for ports with at most 'direct' subtables. */
static struct fcache *mk_fc_stages(const struct rule_table *t, uint32_t inv, bool smc,
                                   uint32_t direct)
{
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = direct;
    c.emc_entries = 1024;
    c.smc_entries = 4096;
    c.emc_insert_inv_prob = inv;
    c.smc_enabled = smc;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    return fc;
}

static struct fcache *mk_fc(const struct rule_table *t, uint32_t inv, bool smc)
{
    return mk_fc_stages(t, inv, smc, 0); /* these tests exercise the EMC/SMC */
}

static void test_stages(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=10,ip,nw_dst=10.0.0.0/8 actions=output:1"));
    struct fcache *fc = mk_fc(t, 1, true);
    struct flow_key k1, k2;
    key_ip(&k1, 0, 0x01010101, 0x0a000001, 1000, 80);
    key_ip(&k2, 0, 0x02020202, 0x0a000002, 1001, 80);

    const struct action_list *a = lookup1(fc, t, &k1);
    assert_non_null(a);
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_INSTALLED], 1);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SMC_INSERTS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SUBTABLES], 1);
    assert_int_equal(s.n[FCACHE_STAT_CLASSIFIERS], 1);

    assert_ptr_equal(lookup1(fc, t, &k1), a); /* EMC */
    assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 1);
    assert_ptr_equal(lookup1(fc, t, &k2), a); /* same megaflow, new key */
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SUBTABLE_LOOKUPS], 1);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SMC_INSERTS], 2);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 2);
    assert_ptr_equal(lookup1(fc, t, &k2), a); /* EMC again */
    assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 2);
    check_identity(fc);
    fcache_destroy(fc);

    /* EMC off: the second packet of a flow is an SMC hit, which would
     * insert into the EMC if it were on. */
    fc = mk_fc(t, 0, true);
    lookup1(fc, t, &k1);
    lookup1(fc, t, &k1);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SMC_HITS], 1);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS] + s.n[FCACHE_STAT_EMC_INSERTS], 0);
    fcache_destroy(fc);

    /* EMC and SMC off: every repeat is a megaflow hit. */
    fc = mk_fc(t, 0, false);
    for (unsigned i = 0; i < 5; i++)
        lookup1(fc, t, &k1);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 4);
    assert_int_equal(s.n[FCACHE_STAT_SMC_HITS] + s.n[FCACHE_STAT_SMC_INSERTS], 0);
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

static void test_no_rule(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=10,tcp,tp_dst=22 actions=output:1"));
    struct fcache *fc = mk_fc(t, 1, true);
    struct flow_key k;
    key_ip(&k, 0, 1, 2, 3, 80);
    assert_null(lookup1(fc, t, &k));
    assert_null(lookup1(fc, t, &k));
    k.nw_src = 77; /* not examined by any rule: the same "no rule" megaflow */
    assert_null(lookup1(fc, t, &k));
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_UPCALL_MISSES], 1);
    assert_int_equal(s.n[FCACHE_STAT_NO_RULE], 3);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS], 1);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 1);
    k.tp_dst = 22;
    assert_non_null(lookup1(fc, t, &k));
    assert_int_equal(stats(fc).n[FCACHE_STAT_NO_RULE], 3);
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* 32 packets of one new flow in one batch: one upcall, the other 31 find
 * the megaflow it installed. */
static void test_batch_duplicates(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=1,ip actions=output:3"));
    struct fcache *fc = mk_fc(t, 1, true);
    struct flow_key keys[32];
    const struct action_list *out[32];
    for (unsigned i = 0; i < 32; i++)
        key_ip(&keys[i], 0, 5, 6, 7, (uint16_t)(i % 2 ? 8 : 9));
    lookup_check(fc, t, keys, 32, 0, out);
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 31);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS], 1);
    lookup_check(fc, t, keys, 32, 0, out);
    assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 32);
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* Rule changes                                                             */

static void rule_change_case(bool revalidate)
{
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=10,ip,nw_dst=10.0.0.0/8 actions=output:1"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 1;
    c.emc_entries = 256;
    c.smc_entries = 256;
    c.revalidate = revalidate;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct flow_key k, other;
    key_ip(&k, 0, 0x01010101, 0x0a000001, 1000, 80);
    key_ip(&other, 0, 0x01010101, 0x0b000001, 1000, 80);
    const struct action_list *a1 = lookup1(fc, t, &k);
    assert_null(lookup1(fc, t, &other));
    assert_ptr_equal(lookup1(fc, t, &k), a1); /* cached in the EMC */
    assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 1);

    /* A higher-priority rule for this very packet: the EMC entry must not
     * answer with the old rule. */
    rule_table_add(t, parse_rule("priority=20,tcp,tp_dst=80 actions=output:2"));
    const struct action_list *a2 = lookup1(fc, t, &k);
    assert_ptr_not_equal(a2, a1);
    assert_int_equal(a2->a[0].u.port, 2);
    assert_int_equal(lookup1(fc, t, &other)->a[0].u.port, 2);
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_RULE_CHANGES], 1);
    assert_true(s.n[FCACHE_STAT_MEGAFLOWS_FLUSHED] >= 1);
    /* Delete it: back to the first rule. */
    struct rule *del = parse_rule("priority=20,tcp,tp_dst=80 actions=drop");
    assert_int_equal(rule_table_delete_strict(t, del), 1);
    rule_free(del);
    assert_ptr_equal(lookup1(fc, t, &k), a1);
    assert_null(lookup1(fc, t, &other));
    /* Replace the first rule's actions (same match): the new list. */
    rule_table_add(t, parse_rule("priority=10,ip,nw_dst=10.0.0.0/8 actions=output:7"));
    const struct action_list *a3 = lookup1(fc, t, &k);
    assert_int_equal(a3->a[0].u.port, 7);
    assert_ptr_equal(lookup1(fc, t, &k), a3);
    /* Clear: nothing matches any more. */
    rule_table_clear(t);
    assert_null(lookup1(fc, t, &k));
    check_identity(fc);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_RULE_CHANGES], 4);
    if (!revalidate)
        assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_REVALIDATED], 0);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

static void test_rule_change_revalidate(void **state)
{
    (void)state;
    rule_change_case(true);
}

static void test_rule_change_flush(void **state)
{
    (void)state;
    rule_change_case(false);
}

/* A change that cannot affect a megaflow keeps it (and its EMC entries). */
static void test_revalidation_keeps_unaffected(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=10,ip,nw_dst=10.0.0.0/8 actions=output:1"));
    struct fcache *fc = mk_fc(t, 1, true);
    struct flow_key k;
    key_ip(&k, 0, 1, 0x0a000001, 2, 3);
    lookup1(fc, t, &k);
    lookup1(fc, t, &k);
    assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 1);
    /* Another in_port only: the megaflow's mask has in_port exact. */
    rule_table_add(t, parse_rule("priority=30,in_port=5 actions=output:9"));
    lookup1(fc, t, &k);
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_REVALIDATED], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_FLUSHED], 0);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 2);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

static void test_set_rules_and_flush(void **state)
{
    (void)state;
    struct rule_table *t1 = rule_table_create(), *t2 = rule_table_create();
    rule_table_add(t1, parse_rule("priority=1,ip actions=output:1"));
    rule_table_add(t2, parse_rule("priority=1,ip actions=output:2"));
    struct fcache *fc = mk_fc(t1, 1, true);
    struct flow_key k;
    key_ip(&k, 0, 1, 2, 3, 4);
    assert_int_equal(lookup1(fc, t1, &k)->a[0].u.port, 1);
    assert_int_equal(lookup1(fc, t1, &k)->a[0].u.port, 1);
    /* Same version number in both tables: only set_rules can tell. */
    assert_int_equal(rule_table_version(t1), rule_table_version(t2));
    fcache_set_rules(fc, t2);
    assert_int_equal(lookup1(fc, t2, &k)->a[0].u.port, 2);
    fcache_flush(fc);
    assert_int_equal(stats(fc).n[FCACHE_STAT_MEGAFLOWS], 0);
    assert_int_equal(lookup1(fc, t2, &k)->a[0].u.port, 2);
    assert_int_equal(stats(fc).n[FCACHE_STAT_UPCALLS], 3);
    fcache_destroy(fc);
    rule_table_destroy(t1);
    rule_table_destroy(t2);
}

/* After megaflows die, their EMC entries are swept within one pass. */
static void test_sweep_after_change(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=1,ip,nw_src=1.0.0.0/8 actions=output:1"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_entries = 64;
    c.emc_insert_inv_prob = 1;
    c.smc_entries = 64;
    c.revalidate = false;
    c.emc_port_inv_prob[1] = 0; /* the probe key below never enters the EMC */
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct flow_key keys[16];
    const struct action_list *out[16];
    for (unsigned i = 0; i < 16; i++)
        key_ip(&keys[i], 0, 0x01000000 + i, 9, 9, 9);
    lookup_check(fc, t, keys, 16, 0, out);
    lookup_check(fc, t, keys, 16, 0, out);
    struct fcache_stats s = stats(fc);
    uint64_t cached = s.n[FCACHE_STAT_EMC_HITS]; /* live EMC entries */
    assert_true(cached >= 8);
    rule_table_add(t, parse_rule("priority=2,udp actions=output:2"));
    /* One lookup per call of a key outside the old flows: 64 calls sweep
     * all 64 entries. */
    struct flow_key x;
    key_ip(&x, 1, 1, 1, 1, 1);
    for (unsigned i = 0; i < 64; i++)
        lookup_check(fc, t, &x, 1, 0, out);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_SWEPT], cached);
    assert_true(s.n[FCACHE_STAT_SMC_SWEPT] > 0);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* Megaflow bound                                                           */

static void test_eviction(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=3,ip,nw_dst=10.0.0.1 actions=output:1"));
    rule_table_add(t, parse_rule("priority=3,ip,nw_dst=10.0.0.2 actions=output:2"));
    rule_table_add(t, parse_rule("priority=3,ip,nw_dst=10.0.0.3 actions=output:3"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 1;
    c.emc_entries = 64;
    c.smc_entries = 64;
    c.megaflow_max = 2;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct flow_key keys[12];
    const struct action_list *out[12];
    for (unsigned i = 0; i < 12; i++)
        key_ip(&keys[i], 0, 1, 0x0a000001 + i % 3, 1, 1);
    /* Within one batch, evicted megaflows' lists stay valid. */
    lookup_check(fc, t, keys, 12, 0, out);
    for (unsigned r = 0; r < 10; r++)
        lookup_check(fc, t, keys, 12, 0, out);
    struct fcache_stats s = stats(fc);
    assert_true(s.n[FCACHE_STAT_MEGAFLOWS_EVICTED] > 0);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS], 2);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_INSTALLED] - s.n[FCACHE_STAT_MEGAFLOWS_EVICTED], 2);
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* More than PKT_BATCH_MAX keys in one call, with evictions on the way: every
 * answer is right and still readable at the end of the call. */
static void test_long_call_chunks(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=3,ip,nw_dst=10.0.0.1 actions=output:1"));
    rule_table_add(t, parse_rule("priority=3,ip,nw_dst=10.0.0.2 actions=output:2"));
    rule_table_add(t, parse_rule("priority=3,ip,nw_dst=10.0.0.3 actions=output:3"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.megaflow_max = 2;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    enum { N = 100 };
    struct flow_key keys[N];
    uint32_t h[N];
    const struct action_list *out[N];
    for (unsigned i = 0; i < N; i++) {
        key_ip(&keys[i], 0, i, 0x0a000001 + i % 3, 1, 1);
        h[i] = flow_hash(&keys[i], 0);
    }
    fcache_lookup_batch(fc, keys, h, N, out, 0);
    for (unsigned i = 0; i < N; i++) {
        assert_ptr_equal(out[i], expect(t, &keys[i]));
        assert_int_equal(out[i]->a[0].u.port, 1 + i % 3);
    }
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_LOOKUPS], N);
    assert_true(s.n[FCACHE_STAT_MEGAFLOWS_EVICTED] > PKT_BATCH_MAX); /* more than one batch's worth */
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* Above the revalidation budget, a rule change flushes instead. */
static void test_revalidate_budget(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    char buf[128];
    /* 1100 rules that never match the packets below (odd ports), then one
     * that does. */
    for (unsigned i = 0; i < 1100; i++) {
        snprintf(buf, sizeof buf, "priority=9,udp,tp_dst=%u actions=output:1", 2 * i + 1);
        rule_table_add(t, parse_rule(buf));
    }
    rule_table_add(t, parse_rule("priority=1,ip actions=output:2"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 0;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct flow_key k;
    /* 1000 megaflows: an even port differs from the odd rule above it in
     * the last bit only, so the whole tp_dst decides: each is its own. */
    for (unsigned i = 0; i < 1000; i++) {
        key_ip(&k, 0, 1, 1, 1, (uint16_t)(2 + 2 * i));
        k.nw_proto = 17;
        assert_int_equal(lookup1(fc, t, &k)->a[0].u.port, 2);
    }
    assert_int_equal(stats(fc).n[FCACHE_STAT_MEGAFLOWS], 1000);
    /* 1000 x 1102 rule examinations > 2^20: flushed, not revalidated. */
    rule_table_add(t, parse_rule("priority=20,ip,nw_src=9.9.9.9 actions=output:3"));
    key_ip(&k, 0, 1, 1, 1, 5000);
    k.nw_proto = 17;
    assert_int_equal(lookup1(fc, t, &k)->a[0].u.port, 2);
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_REVALIDATE_OVER_BUDGET], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_FLUSHED], 1000);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_REVALIDATED], 0);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS], 1);
    /* Below the budget (1 megaflow), the next change revalidates. */
    rule_table_add(t, parse_rule("priority=20,ip,nw_src=9.9.9.8 actions=output:3"));
    lookup1(fc, t, &k);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_REVALIDATE_OVER_BUDGET], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOWS_FLUSHED] + s.n[FCACHE_STAT_MEGAFLOWS_REVALIDATED], 1001);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* EMC insertion policy                                                     */

static void test_insertion_exact_count(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=1,ip actions=output:1"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 4;
    c.smc_enabled = false;
    c.seed = 99;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    enum { N = 4000 };
    struct flow_key k;
    for (unsigned i = 0; i < N; i++) {
        key_ip(&k, 0, i, 1, 1, 1); /* all distinct: every one is a draw */
        lookup1(fc, t, &k);
    }
    uint64_t rng = 99, expect_n = 0;
    for (unsigned i = 0; i < N; i++)
        expect_n += emc_insert_draw(&rng, emc_insert_threshold(4));
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], expect_n);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 1029);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS] + s.n[FCACHE_STAT_MEGAFLOW_HITS], N);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

static void test_per_port_override(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=1,ip actions=output:1"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 0; /* EMC off ... */
    c.emc_port_inv_prob[2] = 1; /* ... except on port 2, always */
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct flow_key k;
    for (unsigned r = 0; r < 3; r++)
        for (unsigned p = 0; p < 4; p++) {
            key_ip(&k, p, 1, 1, 1, 1);
            lookup1(fc, t, &k);
        }
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 1);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 2); /* port 2's second and third packet */
    assert_int_equal(s.n[FCACHE_STAT_CLASSIFIERS], 4);
    fcache_destroy(fc);

    /* The opposite: global always, port 1 never. */
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 1;
    c.emc_port_inv_prob[1] = 0;
    fc = fcache_create(&c, t);
    assert_non_null(fc);
    for (unsigned r = 0; r < 3; r++)
        for (unsigned p = 0; p < 4; p++) {
            key_ip(&k, p, 1, 1, 1, 1);
            lookup1(fc, t, &k);
        }
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 3);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 6);
    assert_int_equal(s.n[FCACHE_STAT_SMC_HITS], 2);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* emc-insert-inv-prob and the SMC changed between lookups (what a PMD does
 * at its quiescent point): a cache no port uses is freed and never probed,
 * one turned on again starts empty, the answers stay those of the rule
 * table, and the swept counters never go back. */
static void test_runtime_setters(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=1,ip actions=output:1"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 1;
    c.emc_port_inv_prob[3] = 1; /* port 3 keeps its own setting */
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct fcache_memory m;
    struct flow_key k;
    key_ip(&k, 0, 1, 1, 1, 1);
    lookup1(fc, t, &k);
    lookup1(fc, t, &k);
    assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 1);

    /* Global 0, but port 3 inserts: the EMC stays, port 0 no longer uses it. */
    assert_int_equal(fcache_set_emc_insert_inv_prob(fc, 0), 0);
    fcache_get_memory(fc, &m);
    assert_true(m.emc > 0);
    lookup1(fc, t, &k);
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SMC_HITS], 1);

    /* SMC off: freed, repeats become megaflow hits. */
    assert_int_equal(fcache_set_smc(fc, false), 0);
    fcache_get_memory(fc, &m);
    assert_int_equal(m.smc, 0);
    lookup1(fc, t, &k);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_SMC_HITS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 1);

    /* SMC on again: empty (a megaflow hit, then inserted), then hits. */
    assert_int_equal(fcache_set_smc(fc, true), 0);
    fcache_get_memory(fc, &m);
    assert_true(m.smc > 0);
    lookup1(fc, t, &k);
    lookup1(fc, t, &k);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 2);
    assert_int_equal(s.n[FCACHE_STAT_SMC_HITS], 2);
    check_identity(fc);
    fcache_destroy(fc);

    /* Without the override, 0 frees the EMC; 1 creates an empty one. */
    c.emc_port_inv_prob[3] = -1;
    fc = fcache_create(&c, t);
    assert_non_null(fc);
    lookup1(fc, t, &k);
    assert_int_equal(fcache_set_emc_insert_inv_prob(fc, 0), 0);
    fcache_get_memory(fc, &m);
    assert_int_equal(m.emc, 0);
    lookup1(fc, t, &k);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 0);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 1);
    assert_int_equal(fcache_set_emc_insert_inv_prob(fc, 1), 0);
    fcache_get_memory(fc, &m);
    assert_true(m.emc > 0);
    lookup1(fc, t, &k); /* an SMC hit, inserted into the new EMC */
    lookup1(fc, t, &k);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 2);
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 1);
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* Keys longer than emc-max-key-len are never cached, on any insert path
 * (upcall, SMC hit, classifier hit). */
static void test_key_len_limit_paths(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=1,arp actions=output:1"));
    rule_table_add(t, parse_rule("priority=1,ip actions=output:2"));
    for (int smc = 0; smc <= 1; smc++) {
        struct fcache_cfg c;
        fcache_cfg_default(&c);
        c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
        c.emc_insert_inv_prob = 1;
        c.emc_max_key_len = 64; /* IPv4 keys (48 bytes) fit, ARP keys (96) do not */
        c.smc_enabled = smc;
        struct fcache *fc = fcache_create(&c, t);
        assert_non_null(fc);
        struct flow_key arp;
        memset(&arp, 0, sizeof arp);
        arp.dl_type = 0x0806;
        arp.nw_proto = 1;
        arp.arp_sha[5] = 1;
        arp.arp_tha[5] = 2;
        for (unsigned i = 0; i < 4; i++) {
            arp.nw_src = htonl(i % 2); /* two flows, one megaflow */
            assert_int_equal(lookup1(fc, t, &arp)->a[0].u.port, 1);
        }
        struct fcache_stats s = stats(fc);
        assert_int_equal(s.n[FCACHE_STAT_EMC_HITS], 0);
        assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS], 0);
        assert_int_equal(s.n[FCACHE_STAT_EMC_INSERT_TOO_LONG], 4);
        assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
        if (smc)
            assert_int_equal(s.n[FCACHE_STAT_SMC_HITS], 2);
        else
            assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 3);
        struct flow_key ip;
        key_ip(&ip, 0, 1, 1, 1, 1); /* 40 bytes: cached */
        lookup1(fc, t, &ip);
        lookup1(fc, t, &ip);
        assert_int_equal(stats(fc).n[FCACHE_STAT_EMC_HITS], 1);
        fcache_destroy(fc);
    }
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* Classifier integration                                                   */

static void test_resort(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    /* Two disjoint rules on different fields: two masks, two subtables. */
    rule_table_add(t, parse_rule("priority=5,ip,nw_src=1.1.1.1 actions=output:1"));
    rule_table_add(t, parse_rule("priority=4,ip,nw_dst=2.2.2.2 actions=output:2"));
    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = 0; /* these tests exercise the EMC/SMC */
    c.emc_insert_inv_prob = 0;
    c.smc_enabled = false;
    c.resort_interval_ns = 1000;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);
    struct flow_key a, b;
    key_ip(&a, 0, 0x01010101, 9, 1, 1);
    key_ip(&b, 0, 9, 0x02020202, 1, 1);
    const struct action_list *out[1];
    uint32_t ha = flow_hash(&a, 0), hb = flow_hash(&b, 0);
    fcache_lookup_batch(fc, &a, &ha, 1, out, 0); /* subtable A first */
    fcache_lookup_batch(fc, &b, &hb, 1, out, 1);
    assert_int_equal(stats(fc).n[FCACHE_STAT_SUBTABLES], 2);
    /* b's megaflow mask covers nw_src and nw_dst (both rules examined);
     * it lives in the second subtable. */
    struct fcache_stats s0 = stats(fc);
    for (unsigned i = 0; i < 10; i++)
        fcache_lookup_batch(fc, &b, &hb, 1, out, 2);
    struct fcache_stats s1 = stats(fc);
    assert_int_equal(s1.n[FCACHE_STAT_MEGAFLOW_HITS] - s0.n[FCACHE_STAT_MEGAFLOW_HITS], 10);
    assert_int_equal(s1.n[FCACHE_STAT_SUBTABLE_LOOKUPS] - s0.n[FCACHE_STAT_SUBTABLE_LOOKUPS], 20);
    /* The interval passes: b's subtable is ranked first. */
    fcache_lookup_batch(fc, &b, &hb, 1, out, 5000);
    struct fcache_stats s2 = stats(fc);
    assert_int_equal(s2.n[FCACHE_STAT_SUBTABLE_LOOKUPS] - s1.n[FCACHE_STAT_SUBTABLE_LOOKUPS], 1);
    assert_true(s2.n[FCACHE_STAT_RESORTS] >= 2);
    fcache_lookup_batch(fc, &a, &ha, 1, out, 5001);
    assert_int_equal(stats(fc).n[FCACHE_STAT_SUBTABLE_LOOKUPS] - s2.n[FCACHE_STAT_SUBTABLE_LOOKUPS], 2);
    assert_ptr_equal(out[0], expect(t, &a));
    /* a now gets 5 hits; the clock goes back (a new replay): re-ranked at
     * once rather than after the old deadline. */
    for (unsigned i = 0; i < 5; i++)
        fcache_lookup_batch(fc, &a, &ha, 1, out, 5002);
    uint64_t r = stats(fc).n[FCACHE_STAT_RESORTS];
    fcache_lookup_batch(fc, &a, &ha, 1, out, 10);
    struct fcache_stats s3 = stats(fc);
    assert_int_equal(s3.n[FCACHE_STAT_RESORTS], r + 1);
    fcache_lookup_batch(fc, &a, &ha, 1, out, 11);
    assert_int_equal(stats(fc).n[FCACHE_STAT_SUBTABLE_LOOKUPS] - s3.n[FCACHE_STAT_SUBTABLE_LOOKUPS], 1);
    assert_int_equal(stats(fc).n[FCACHE_STAT_RESORTS], r + 1);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

static void test_high_in_ports(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=5,in_port=100 actions=output:1"));
    rule_table_add(t, parse_rule("priority=5,in_port=200 actions=output:2"));
    struct fcache *fc = mk_fc(t, 0, false);
    struct flow_key k;
    for (unsigned r = 0; r < 3; r++) {
        key_ip(&k, 100, 1, 1, 1, 1);
        assert_int_equal(lookup1(fc, t, &k)->a[0].u.port, 1);
        key_ip(&k, 200, 1, 1, 1, 1);
        assert_int_equal(lookup1(fc, t, &k)->a[0].u.port, 2);
        key_ip(&k, 300, 1, 1, 1, 1);
        assert_null(lookup1(fc, t, &k));
    }
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_CLASSIFIERS], 1); /* shared by ports >= 64 */
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 3);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 6);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* The direct stage and the in_port-only shortcut                           */

static struct fcache *mk_fc_direct(const struct rule_table *t, uint32_t direct)
{
    return mk_fc_stages(t, 1, true, direct);
}

/* fcache_port_simple()'s answer is kept across syncs and batches while no
 * megaflow comes or goes, and always reads the megaflow's current actions:
 * a revalidation that keeps the megaflow but changes its answer shows at
 * once; a flush (the megaflow gone) and a reinstall are seen too. */
static void test_simple_answer_cache(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    struct rule *r2 = parse_rule("priority=5,in_port=1 actions=output:2");
    rule_table_add(t, r2);
    struct fcache *fc = mk_fc_direct(t, 1);
    struct flow_key k;
    uint32_t h = 0;
    const struct action_list *out[1], *simple = NULL;
    key_ip(&k, 1, 0x0a000001, 0x0b000001, 1000, 80);
    fcache_lookup_batch(fc, &k, &h, 1, out, 0); /* installs the megaflow */
    for (int round = 0; round < 3; round++) {
        fcache_sync(fc, 0);
        assert_true(fcache_port_simple(fc, 1, &simple));
        assert_int_equal(simple->a[0].u.port, 2);
        assert_int_equal(fcache_lookup_port(fc, 1, 4)->a[0].u.port, 2);
    }
    uint64_t installed = stats(fc).n[FCACHE_STAT_MEGAFLOWS_INSTALLED];

    /* Same match, another output: revalidation keeps the megaflow. */
    struct rule *r3 = parse_rule("priority=5,in_port=1 actions=output:3");
    assert_int_equal(rule_table_delete_strict(t, r3), 1);
    rule_table_add(t, r3);
    fcache_sync(fc, 0);
    assert_int_equal(stats(fc).n[FCACHE_STAT_MEGAFLOWS_FLUSHED], 0);
    assert_true(fcache_port_simple(fc, 1, &simple));
    assert_int_equal(simple->a[0].u.port, 3);
    assert_int_equal(fcache_lookup_port(fc, 1, 1)->a[0].u.port, 3);

    /* Gone: no simple answer until a batch installs it again. */
    fcache_flush(fc);
    fcache_sync(fc, 0);
    assert_false(fcache_port_simple(fc, 1, &simple));
    fcache_lookup_batch(fc, &k, &h, 1, out, 0);
    assert_int_equal(stats(fc).n[FCACHE_STAT_MEGAFLOWS_INSTALLED], installed + 1);
    fcache_sync(fc, 0);
    assert_true(fcache_port_simple(fc, 1, &simple));
    assert_int_equal(simple->a[0].u.port, 3);
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

static void test_direct_stage(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=5,in_port=1 actions=output:2"));
    struct fcache *fc = mk_fc_direct(t, 1);
    assert_true(fcache_port_direct(fc, 1)); /* no classifier yet */
    assert_true(fcache_port_direct(fc, 7));

    /* One batch of different flows from port 1: one upcall installs the
     * in_port-only megaflow, the rest of the batch hits it. The hashes are
     * garbage on purpose: a direct lookup must not read them. */
    struct flow_key keys[8];
    uint32_t h[8];
    const struct action_list *out[8];
    for (unsigned i = 0; i < 8; i++) {
        key_ip(&keys[i], 1, 0x0a000000 + i, 0x0b000000 + 7 * i, (uint16_t)(1000 + i), 80);
        h[i] = 0xdeadbeef;
    }
    keys[5].dl_type = 0x0806; /* not IP: a prerequisite fails below */
    keys[1].nw_tos = 16;      /* for the priority-9 rule below */
    keys[3].nw_ttl = 63;      /* for the priority-7 rule below */
    for (unsigned round = 0; round < 2; round++) {
        fcache_lookup_batch(fc, keys, h, 8, out, 0);
        for (unsigned i = 0; i < 8; i++)
            assert_ptr_equal(out[i], expect(t, &keys[i]));
    }
    struct fcache_stats s = stats(fc), s2;
    assert_int_equal(s.n[FCACHE_STAT_LOOKUPS], 16);
    assert_int_equal(s.n[FCACHE_STAT_DIRECT], 16);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(s.n[FCACHE_STAT_MEGAFLOW_HITS], 15);
    assert_int_equal(s.n[FCACHE_STAT_SUBTABLE_LOOKUPS], 15); /* one subtable, probed once per batch */
    assert_int_equal(s.n[FCACHE_STAT_EMC_HITS] + s.n[FCACHE_STAT_SMC_HITS] + s.n[FCACHE_STAT_EMC_INSERTS] + s.n[FCACHE_STAT_SMC_INSERTS], 0);
    assert_int_equal(s.n[FCACHE_STAT_SUBTABLES], 1);
    assert_true(fcache_port_direct(fc, 1));
    check_identity(fc);

    /* The in_port-only megaflow answers port 1 without keys. */
    const struct action_list *simple = NULL;
    fcache_sync(fc, 0);
    assert_true(fcache_port_simple(fc, 1, &simple));
    assert_ptr_equal(simple, expect(t, &keys[0]));
    assert_false(fcache_port_simple(fc, 2, &simple)); /* no classifier */
    assert_ptr_equal(fcache_lookup_port(fc, 1, 5), expect(t, &keys[0]));
    s2 = stats(fc);
    /* Counted as what happened: 5 simple hits, no classifier probe. */
    assert_int_equal(s2.n[FCACHE_STAT_LOOKUPS], s.n[FCACHE_STAT_LOOKUPS] + 5);
    assert_int_equal(s2.n[FCACHE_STAT_SIMPLE_HITS], s.n[FCACHE_STAT_SIMPLE_HITS] + 5);
    assert_int_equal(s2.n[FCACHE_STAT_DIRECT], s.n[FCACHE_STAT_DIRECT]);
    assert_int_equal(s2.n[FCACHE_STAT_MEGAFLOW_HITS], s.n[FCACHE_STAT_MEGAFLOW_HITS]);
    assert_int_equal(s2.n[FCACHE_STAT_SUBTABLE_LOOKUPS], s.n[FCACHE_STAT_SUBTABLE_LOOKUPS]);
    assert_int_equal(s2.n[FCACHE_STAT_UPCALLS], s.n[FCACHE_STAT_UPCALLS]);
    check_identity(fc);
    /* Asked for a port without a simple answer, it answers "no rule" and
     * counts so (the datapath never does: it asks first). */
    assert_null(fcache_lookup_port(fc, 2, 2));
    assert_int_equal(stats(fc).n[FCACHE_STAT_NO_RULE], s2.n[FCACHE_STAT_NO_RULE] + 2);
    assert_int_equal(stats(fc).n[FCACHE_STAT_UPCALLS], s2.n[FCACHE_STAT_UPCALLS] + 2);
    assert_int_equal(stats(fc).n[FCACHE_STAT_SIMPLE_HITS], s2.n[FCACHE_STAT_SIMPLE_HITS]);
    /* A lookup batch ends fcache_port_simple()'s answer: asked again. */
    lookup_check(fc, t, keys, 8, 0, out);
    assert_ptr_equal(fcache_lookup_port(fc, 1, 1), expect(t, &keys[0]));
    check_identity(fc);

    /* Two more rules. Port 1 gets three subtables: key 1 matches the first
     * (in_port, dl_type, nw_tos), key 3 the second (in_port, dl_type,
     * nw_proto, nw_ttl) and differs from the first on nw_tos; the other
     * keys differ from the first on nw_tos and from the second on nw_ttl
     * (in_port, nw_tos, nw_ttl), the ARP key too: it shares their
     * megaflow. The port leaves the direct stage; its packets then fill
     * the EMC. */
    rule_table_add(t, parse_rule("priority=9,in_port=1,ip,nw_tos=16 actions=output:3"));
    rule_table_add(t, parse_rule("priority=7,in_port=1,tcp,nw_ttl=63 actions=output:4"));
    fcache_sync(fc, 0); /* revalidation deletes the in_port-only megaflow */
    assert_false(fcache_port_simple(fc, 1, &simple));
    lookup_check(fc, t, keys, 8, 0, out);
    assert_int_equal(stats(fc).n[FCACHE_STAT_SUBTABLES], 3);
    assert_false(fcache_port_direct(fc, 1));
    assert_false(fcache_port_simple(fc, 1, &simple));
    assert_int_equal(out[1]->a[0].u.port, 3);
    assert_int_equal(out[2]->a[0].u.port, 2);
    assert_int_equal(out[3]->a[0].u.port, 4);
    s = stats(fc);
    lookup_check(fc, t, keys, 8, 0, out);
    s2 = stats(fc);
    assert_int_equal(s2.n[FCACHE_STAT_DIRECT], s.n[FCACHE_STAT_DIRECT]);
    assert_true(s2.n[FCACHE_STAT_EMC_INSERTS] > 0);
    lookup_check(fc, t, keys, 8, 0, out);
    assert_true(stats(fc).n[FCACHE_STAT_EMC_HITS] > 0);
    check_identity(fc);

    /* direct_subtables = 3 keeps the three-mask port direct. */
    fcache_destroy(fc);
    fc = mk_fc_direct(t, 3);
    for (unsigned round = 0; round < 3; round++)
        lookup_check(fc, t, keys, 8, 0, out);
    s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_DIRECT], 24);
    assert_int_equal(s.n[FCACHE_STAT_EMC_INSERTS] + s.n[FCACHE_STAT_SMC_INSERTS], 0);
    fcache_destroy(fc);

    /* direct_subtables = 0: never direct, never simple. */
    fc = mk_fc_direct(t, 0);
    assert_false(fcache_port_direct(fc, 1));
    assert_false(fcache_port_simple(fc, 1, &simple));
    lookup_check(fc, t, keys, 8, 0, out);
    assert_int_equal(stats(fc).n[FCACHE_STAT_DIRECT], 0);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* Ports >= FCACHE_MAX_PORTS share one classifier, whose one subtable is
 * in_port-only: the one-probe shortcut must still tell the ports apart in
 * a mixed batch. */
static void test_direct_shared_ports(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=5,in_port=100 actions=output:1"));
    rule_table_add(t, parse_rule("priority=5,in_port=200 actions=output:2"));
    rule_table_add(t, parse_rule("priority=1 actions=output:9"));
    struct fcache *fc = mk_fc_direct(t, 1);
    static const uint32_t ports[] = {100, 200, 300, 100, 100, 300, 200, 64, 100, 65};
    enum { N = sizeof ports / sizeof ports[0] };
    struct flow_key keys[N];
    uint32_t h[N];
    const struct action_list *out[N];
    for (unsigned i = 0; i < N; i++)
        key_ip(&keys[i], ports[i], 0x01000000 + i, 0x02000000 + i, (uint16_t)i, 53);
    for (unsigned round = 0; round < 4; round++) {
        /* Rotate so every port leads a batch once. */
        struct flow_key k2[N];
        for (unsigned i = 0; i < N; i++) {
            k2[i] = keys[(i + round) % N];
            h[i] = 0;
        }
        fcache_lookup_batch(fc, k2, h, N, out, 0);
        for (unsigned i = 0; i < N; i++)
            assert_ptr_equal(out[i], expect(t, &k2[i]));
    }
    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_CLASSIFIERS], 1);
    assert_int_equal(s.n[FCACHE_STAT_SUBTABLES], 1);
    assert_int_equal(s.n[FCACHE_STAT_UPCALLS], 5); /* one megaflow per distinct port */
    assert_int_equal(s.n[FCACHE_STAT_DIRECT], s.n[FCACHE_STAT_LOOKUPS]);
    const struct action_list *simple;
    assert_false(fcache_port_simple(fc, 100, &simple)); /* the shared classifier */
    check_identity(fc);
    fcache_destroy(fc);
    rule_table_destroy(t);
}

/* fcache_lookup_batch_port() answers and counts exactly as
 * fcache_lookup_batch(): two caches of one configuration (EMC insertion 1
 * in 3, so the PRNG draws too), the same one-port batches, one taken with
 * the port and the keys without cold words known; port 2's EMC is off (its
 * override 0); some keys have a cold word and share their hot words with
 * others. */
static void test_batch_port_same(void **state)
{
    (void)state;
    struct rule_table *t = rule_table_create();
    rule_table_add(t, parse_rule("priority=10,ip,nw_dst=10.0.0.0/8 actions=output:1"));
    rule_table_add(t, parse_rule("priority=9,tcp,tp_dst=80 actions=output:2"));
    rule_table_add(t, parse_rule("priority=1,in_port=3 actions=output:3"));
    for (uint32_t direct = 0; direct <= 1; direct++) {
        struct fcache_cfg c;
        fcache_cfg_default(&c);
        c.direct_subtables = direct;
        c.emc_entries = 64;
        c.smc_entries = 256;
        c.emc_insert_inv_prob = 3;
        c.emc_port_inv_prob[2] = 0;
        struct fcache *a = fcache_create(&c, t), *b = fcache_create(&c, t);
        assert_non_null(a);
        assert_non_null(b);
        for (unsigned round = 0; round < 200; round++) {
            uint32_t port = round % 4, n = 1 + round % PKT_BATCH_MAX;
            struct flow_key keys[PKT_BATCH_MAX];
            uint32_t h[PKT_BATCH_MAX];
            const struct action_list *oa[PKT_BATCH_MAX], *ob[PKT_BATCH_MAX];
            uint32_t hot = 0;
            for (unsigned i = 0; i < n; i++) {
                unsigned f = (round * 7 + i * 13) % 40;
                key_ip(&keys[i], port, 0x01000000 + f, (f % 3 ? 0x0a000000 : 0x0b000000) + f,
                       (uint16_t)(1000 + f), f % 2 ? 80 : 53);
                if (f % 5 == 0)
                    keys[i].arp_sha[5] = (uint8_t)(1 + f % 2); /* a cold word */
                h[i] = flow_hash(&keys[i], 0);
                hot |= (uint32_t)!flow_key_cold(&keys[i]) << i;
            }
            /* The hot keys told, all of them or some, or none. */
            hot &= round % 3 == 0 ? ~0u : round % 3 == 1 ? 0x55555555u : 0;
            fcache_lookup_batch(a, keys, h, n, oa, round * 1000000ull);
            fcache_lookup_batch_port(b, keys, h, hot, n, ob, round * 1000000ull);
            for (unsigned i = 0; i < n; i++) {
                assert_ptr_equal(oa[i], expect(t, &keys[i]));
                assert_ptr_equal(ob[i], oa[i]);
            }
        }
        struct fcache_stats sa = stats(a), sb = stats(b);
        for (int k = 0; k < FCACHE_N_STATS; k++)
            assert_int_equal(sa.n[k], sb.n[k]);
        assert_true(sa.n[FCACHE_STAT_EMC_HITS] > 0);
        check_identity(b);
        fcache_destroy(a);
        fcache_destroy(b);
    }
    rule_table_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* The differential property test                                           */

struct rng {
    uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((r->s >> 33) % n);
}

/* A random key from small domains, so rules and repeats hit often. */
static void rand_key(struct rng *r, struct flow_key *k)
{
    memset(k, 0, sizeof *k);
    k->in_port = rnd(r, 16) ? rnd(r, 4) : 64 + rnd(r, 3);
    k->dl_src[5] = (uint8_t)rnd(r, 4);
    k->dl_dst[5] = (uint8_t)rnd(r, 4);
    if (rnd(r, 4) == 0) {
        k->vlan_tpid[0] = 0x8100;
        k->vlan_tci[0] = (uint16_t)(FLOW_VLAN_PRESENT | (1 + rnd(r, 3)));
    }
    unsigned kind = rnd(r, 10);
    if (kind < 7) {
        k->dl_type = 0x0800;
        k->nw_src = htonl(0x0a000000u | rnd(r, 8));
        k->nw_dst = htonl(0x0a000000u | rnd(r, 2) << 16 | rnd(r, 4) << 8 | rnd(r, 4));
        k->nw_tos = rnd(r, 4) ? 0 : 0x10;
        k->nw_ttl = rnd(r, 8) ? 64 : 1;
    } else if (kind < 9) {
        k->dl_type = 0x86dd;
        k->ipv6_src[0] = 0xfe;
        k->ipv6_src[15] = (uint8_t)rnd(r, 4);
        k->ipv6_dst[0] = 0xfe;
        k->ipv6_dst[15] = (uint8_t)rnd(r, 4);
        k->nw_ttl = 64;
    } else {
        k->dl_type = 0x0806;
        k->nw_proto = (uint8_t)(1 + rnd(r, 2));
        k->nw_src = htonl(0x0a000000u | rnd(r, 4));
        k->nw_dst = htonl(0x0a000000u | rnd(r, 4));
        k->arp_sha[5] = (uint8_t)rnd(r, 3);
        return;
    }
    static const uint8_t protos[] = {6, 17, 1};
    k->nw_proto = protos[rnd(r, 3)];
    static const uint16_t dports[] = {80, 443, 22, 53};
    k->tp_src = (uint16_t)(1000 + rnd(r, 4));
    k->tp_dst = dports[rnd(r, 4)];
    if (k->nw_proto == 6)
        k->tcp_flags = rnd(r, 2) ? 0x010 : 0x002;
}

/* A key that only rules without an in_port or dl_type constraint can
 * match. */
static void foreign_key(struct rng *r, struct flow_key *k)
{
    memset(k, 0, sizeof *k);
    k->in_port = 9;
    k->dl_type = 0x88b5;
    k->dl_src[5] = (uint8_t)rnd(r, 4);
}

/* A random rule: 1 to 4 constraints on fields of a random key, each with a
 * random mask (exact, prefix or a few bits), so masks overlap. */
static struct rule *rand_rule(struct rng *r, uint16_t id)
{
    struct flow_key k;
    rand_key(r, &k);
    struct flow_mask m;
    memset(&m, 0, sizeof m);
    /* Most rules constrain in_port or dl_type, so foreign_key() packets
     * (no rule matches them) keep occurring; the rest are free. */
    unsigned nf = 1 + rnd(r, 4);
    unsigned first = rnd(r, 8) ? rnd(r, 2) : 14;
    for (unsigned f = 0; f < nf; f++) {
        switch (f == 0 && first < 14 ? first : rnd(r, 14)) {
        case 0: m.m.in_port = UINT32_MAX; break;
        case 1: m.m.dl_type = 0xffff; break;
        case 2: m.m.nw_src = htonl(~0u << rnd(r, 3)); break;
        case 3: {
            static const unsigned pl[] = {8, 16, 24, 30, 32};
            unsigned p = pl[rnd(r, 5)];
            m.m.nw_dst = htonl(p == 32 ? ~0u : ~(~0u >> p));
            break;
        }
        case 4: m.m.nw_proto = 0xff; break;
        case 5: m.m.tp_dst = rnd(r, 2) ? 0xffff : 0xfff0; break;
        case 6: m.m.tp_src = (uint16_t)(rnd(r, 2) ? 0xffff : 1u << rnd(r, 2)); break;
        case 7: m.m.vlan_tci[0] = rnd(r, 2) ? FLOW_VLAN_PRESENT : 0x1fff; break;
        case 8: m.m.dl_src[5] = rnd(r, 2) ? 0xff : 0x01; break;
        case 9: m.m.ipv6_dst[15] = 0xff; m.m.ipv6_dst[0] = 0xff; break;
        case 10: m.m.nw_tos = 0xfc; break;
        case 11: m.m.nw_ttl = 0xff; break;
        case 12: m.m.arp_sha[5] = 0xff; break;
        default: m.m.tcp_flags = 0x012; break;
        }
    }
    return mk_rule((int)rnd(r, 8), &k, &m, id);
}

struct diff_cfg {
    const char *name;
    uint32_t emc_entries;
    unsigned ways;
    uint32_t inv;
    int port1_inv; /* -1: none */
    unsigned max_key_len;
    bool smc;
    uint32_t smc_entries;
    uint32_t mf_max;
    uint64_t resort_ns;
    bool revalidate;
    unsigned working_set;
    uint32_t direct; /* direct_subtables */
};

static const struct diff_cfg diff_cfgs[] = {
    {"small-2way-smc", 64, 2, 1, -1, 136, true, 64, 65535, 1000000, true, 200, 0},
    {"1way-inv3-nosmc-evict", 64, 1, 3, -1, 136, false, 0, 32, 50000, true, 300, 0},
    {"noemc-tinysmc-flush", 8192, 2, 0, -1, 136, true, 16, 16, 1000000000, false, 100, 0},
    {"classifier-only-resort", 8192, 2, 0, -1, 136, false, 0, 65535, 0, true, 500, 0},
    {"port-override-keylen", 256, 2, 1, 0, 64, true, 1024, 100, 10000, true, 300, 0},
    {"defaults", 8192, 2, 100, -1, 136, true, 1u << 20, 65535, 1000000000, true, 2000, 0},
    {"megaflow-max-1", 16, 2, 1, -1, 136, true, 8, 1, 1000, true, 50, 0},
    {"1way-flush", 128, 1, 1, 2, 136, true, 256, 65535, 100000, false, 1000, 0},
    /* The direct stage: ports with few subtables skip the EMC and SMC. */
    {"direct-1", 64, 2, 1, -1, 136, true, 64, 65535, 1000000, true, 300, 1},
    {"direct-4-evict", 64, 1, 1, -1, 136, true, 64, 32, 50000, true, 300, 4},
    {"direct-64-flush", 64, 2, 1, -1, 136, true, 64, 65535, 100000, false, 500, 64},
};

static void run_diff(const struct diff_cfg *dc, uint64_t seed, unsigned packets,
                     struct fcache_stats *sum)
{
    struct rng r = {seed};
    /* The way batches are taken draws from its own generator: the rule
     * changes and the keys stay those of the seed. */
    struct rng rt = {seed ^ 0x9e3779b97f4a7c15ull};
    struct rule_table *t = rule_table_create();
    uint16_t next_id = 1;
    unsigned n0 = 5 + rnd(&r, 30);
    for (unsigned i = 0; i < n0; i++)
        rule_table_add(t, rand_rule(&r, next_id++));

    struct fcache_cfg c;
    fcache_cfg_default(&c);
    c.direct_subtables = dc->direct;
    c.emc_entries = dc->emc_entries;
    c.emc_ways = dc->ways;
    c.emc_insert_inv_prob = dc->inv;
    if (dc->port1_inv >= 0)
        c.emc_port_inv_prob[1] = dc->port1_inv;
    c.emc_max_key_len = dc->max_key_len;
    c.smc_enabled = dc->smc;
    if (dc->smc)
        c.smc_entries = dc->smc_entries;
    c.megaflow_max = dc->mf_max;
    c.resort_interval_ns = dc->resort_ns;
    c.revalidate = dc->revalidate;
    c.seed = seed;
    struct fcache *fc = fcache_create(&c, t);
    assert_non_null(fc);

    struct flow_key *ws = calloc(dc->working_set, sizeof *ws);
    assert_non_null(ws);
    for (unsigned i = 0; i < dc->working_set; i++)
        rand_key(&r, &ws[i]);

    uint64_t now = 0, expect_null = 0, changes = 0;
    unsigned done = 0;
    while (done < packets) {
        /* Between batches, now and then: add, delete, replace or clear. */
        if (rnd(&r, 16) == 0) {
            unsigned op = rnd(&r, 100);
            size_t n = rule_table_count(t);
            if (op < 50 || n == 0) {
                rule_table_add(t, rand_rule(&r, next_id++));
            } else if (op < 85) {
                const struct rule *v = rule_table_at(t, rnd(&r, (uint32_t)n));
                struct rule del = *v;
                rule_table_delete_strict(t, &del);
            } else if (op < 99) {
                const struct rule *v = rule_table_at(t, rnd(&r, (uint32_t)n));
                rule_table_add(t, mk_rule(v->priority, &v->match, &v->mask, next_id++));
            } else {
                rule_table_clear(t);
            }
            changes++;
        }
        unsigned n = 1 + rnd(&r, PKT_BATCH_MAX);
        if (n > packets - done)
            n = packets - done;
        struct flow_key keys[PKT_BATCH_MAX];
        uint32_t h[PKT_BATCH_MAX];
        const struct action_list *out[PKT_BATCH_MAX];
        for (unsigned i = 0; i < n; i++) {
            unsigned w = rnd(&r, dc->working_set);
            if (rnd(&r, 8) == 0) {
                /* The working set drifts. */
                if (rnd(&r, 32))
                    rand_key(&r, &ws[w]);
                else
                    foreign_key(&r, &ws[w]);
            }
            keys[i] = ws[w];
            h[i] = flow_hash(&keys[i], 0);
        }
        /* Now and then a batch from one port, taken as the datapath takes
         * it: keyless when the port is simple, else with the port known. */
        bool one_port = rnd(&rt, 2) == 0;
        for (unsigned i = 1; one_port && i < n; i++) {
            keys[i].in_port = keys[0].in_port;
            h[i] = flow_hash(&keys[i], 0);
        }
        const struct action_list *simple;
        fcache_sync(fc, now);
        if (one_port && fcache_port_simple(fc, keys[0].in_port, &simple)) {
            const struct action_list *a = fcache_lookup_port(fc, keys[0].in_port, n);
            assert_ptr_equal(a, simple);
            for (unsigned i = 0; i < n; i++)
                out[i] = a;
        } else if (one_port) {
            /* The keys without cold words told, now and then. */
            uint32_t hot = 0;
            for (unsigned i = 0; i < n && rnd(&rt, 4); i++)
                hot |= (uint32_t)!flow_key_cold(&keys[i]) << i;
            fcache_lookup_batch_port(fc, keys, h, hot, n, out, now);
        } else {
            fcache_lookup_batch(fc, keys, h, n, out, now);
        }
        for (unsigned i = 0; i < n; i++) {
            const struct action_list *e = expect(t, &keys[i]);
            if (out[i] != e) {
                char kb[512];
                flow_format(&keys[i], kb, sizeof kb);
                fail_msg("%s seed %llu packet %u: fcache %p (port %d), rule table %p "
                         "(port %d) for %s",
                         dc->name, (unsigned long long)seed, done + i, (const void *)out[i],
                         out[i] && out[i]->n ? out[i]->a[0].u.port : -1, (const void *)e,
                         e && e->n ? e->a[0].u.port : -1, kb);
            }
            expect_null += e == NULL;
        }
        done += n;
        now += rnd(&r, 20000);
    }

    struct fcache_stats s = stats(fc);
    assert_int_equal(s.n[FCACHE_STAT_LOOKUPS], packets);
    assert_int_equal(s.n[FCACHE_STAT_LOOKUPS], s.n[FCACHE_STAT_EMC_HITS] + s.n[FCACHE_STAT_SMC_HITS] + s.n[FCACHE_STAT_MEGAFLOW_HITS] + s.n[FCACHE_STAT_SIMPLE_HITS] + s.n[FCACHE_STAT_UPCALLS]);
    assert_int_equal(s.n[FCACHE_STAT_NO_RULE], expect_null);
    assert_int_equal(s.n[FCACHE_STAT_RULE_CHANGES], changes);
    assert_true(s.n[FCACHE_STAT_MEGAFLOWS] <= dc->mf_max);
    fcache_stats_add(sum, &s);
    fcache_destroy(fc);
    free(ws);
    rule_table_destroy(t);
}

static bool test_quick(void)
{
    const char *q = getenv("FS_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* 10^6 packets in a normal run, 10^5 under valgrind. */
static unsigned diff_packets_total(void)
{
    return test_quick() ? 100000 : 1000000;
}

static unsigned diff_packets_per_cfg(void)
{
    unsigned n_cfg = sizeof diff_cfgs / sizeof diff_cfgs[0];
    unsigned total = diff_packets_total();
    return (total + n_cfg - 1) / n_cfg + 4;
}

/* The paths a configuration is meant to exercise were exercised (over its
 * runs together). */
static void check_coverage(const struct diff_cfg *dc, const struct fcache_stats *s)
{
    assert_true(s->n[FCACHE_STAT_MEGAFLOW_HITS] > 0);
    assert_true(s->n[FCACHE_STAT_UPCALL_MISSES] > 0);
    assert_true(s->n[FCACHE_STAT_MEGAFLOWS_FLUSHED] > 0);
    assert_true(s->n[FCACHE_STAT_DIRECT] <= s->n[FCACHE_STAT_MEGAFLOW_HITS] + s->n[FCACHE_STAT_UPCALLS]);
    if (dc->direct == 0) {
        assert_int_equal(s->n[FCACHE_STAT_DIRECT], 0);
        assert_int_equal(s->n[FCACHE_STAT_SIMPLE_HITS], 0);
    } else {
        assert_true(s->n[FCACHE_STAT_DIRECT] > 0); /* simple hits: over all configs */
    }
    if (dc->direct >= FCACHE_DIRECT_MAX) { /* the rule sets never reach 64 masks */
        assert_int_equal(s->n[FCACHE_STAT_DIRECT] + s->n[FCACHE_STAT_SIMPLE_HITS], s->n[FCACHE_STAT_LOOKUPS]);
        assert_int_equal(s->n[FCACHE_STAT_EMC_HITS] + s->n[FCACHE_STAT_SMC_HITS] + s->n[FCACHE_STAT_EMC_INSERTS] + s->n[FCACHE_STAT_SMC_INSERTS], 0);
    } else {
        if (dc->inv)
            assert_true(s->n[FCACHE_STAT_EMC_HITS] > 0);
        else
            assert_int_equal(s->n[FCACHE_STAT_EMC_HITS], 0);
        if (dc->smc)
            assert_true(s->n[FCACHE_STAT_SMC_HITS] > 0);
        else
            assert_int_equal(s->n[FCACHE_STAT_SMC_HITS], 0);
    }
    if (dc->mf_max < 1000)
        assert_true(s->n[FCACHE_STAT_MEGAFLOWS_EVICTED] > 0);
    if (dc->revalidate)
        assert_true(s->n[FCACHE_STAT_MEGAFLOWS_REVALIDATED] > 0);
    else
        assert_int_equal(s->n[FCACHE_STAT_MEGAFLOWS_REVALIDATED], 0);
    if (dc->max_key_len < 136 && dc->inv)
        assert_true(s->n[FCACHE_STAT_EMC_INSERT_TOO_LONG] > 0);
    if (dc->inv == 1 && dc->direct < FCACHE_DIRECT_MAX)
        assert_true(s->n[FCACHE_STAT_EMC_SWEPT] > 0);
}

static void test_differential(void **state)
{
    (void)state;
    unsigned per = diff_packets_per_cfg();
    uint64_t total = 0, simple = 0;
    for (unsigned i = 0; i < sizeof diff_cfgs / sizeof diff_cfgs[0]; i++) {
        struct fcache_stats sum;
        memset(&sum, 0, sizeof sum);
        /* Several rule sets per configuration. */
        for (unsigned j = 0; j < 4; j++)
            run_diff(&diff_cfgs[i], 1000 * (j + 1) + i, per / 4, &sum);
        total += sum.n[FCACHE_STAT_LOOKUPS];
        simple += sum.n[FCACHE_STAT_SIMPLE_HITS];
        print_message("  %-24s %8llu pkts: emc %llu smc %llu megaflow %llu simple %llu upcall %llu "
                      "(no rule %llu) evicted %llu flushed %llu kept %llu\n",
                      diff_cfgs[i].name, (unsigned long long)sum.n[FCACHE_STAT_LOOKUPS],
                      (unsigned long long)sum.n[FCACHE_STAT_EMC_HITS], (unsigned long long)sum.n[FCACHE_STAT_SMC_HITS],
                      (unsigned long long)sum.n[FCACHE_STAT_MEGAFLOW_HITS], (unsigned long long)sum.n[FCACHE_STAT_SIMPLE_HITS],
                      (unsigned long long)sum.n[FCACHE_STAT_UPCALLS],
                      (unsigned long long)sum.n[FCACHE_STAT_UPCALL_MISSES],
                      (unsigned long long)sum.n[FCACHE_STAT_MEGAFLOWS_EVICTED],
                      (unsigned long long)sum.n[FCACHE_STAT_MEGAFLOWS_FLUSHED],
                      (unsigned long long)sum.n[FCACHE_STAT_MEGAFLOWS_REVALIDATED]);
        check_coverage(&diff_cfgs[i], &sum);
    }
    print_message("differential: %llu packets checked against the rule table\n",
                  (unsigned long long)total);
    assert_true(total >= diff_packets_total());
    assert_true(simple > 0); /* the keyless path ran (direct configs) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cfg_default_and_validate),
        cmocka_unit_test(test_memory_defaults),
        cmocka_unit_test(test_stages),
        cmocka_unit_test(test_no_rule),
        cmocka_unit_test(test_batch_duplicates),
        cmocka_unit_test(test_rule_change_revalidate),
        cmocka_unit_test(test_rule_change_flush),
        cmocka_unit_test(test_revalidation_keeps_unaffected),
        cmocka_unit_test(test_set_rules_and_flush),
        cmocka_unit_test(test_sweep_after_change),
        cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_long_call_chunks),
        cmocka_unit_test(test_revalidate_budget),
        cmocka_unit_test(test_insertion_exact_count),
        cmocka_unit_test(test_per_port_override),
        cmocka_unit_test(test_runtime_setters),
        cmocka_unit_test(test_key_len_limit_paths),
        cmocka_unit_test(test_resort),
        cmocka_unit_test(test_high_in_ports),
        cmocka_unit_test(test_simple_answer_cache),
        cmocka_unit_test(test_direct_stage),
        cmocka_unit_test(test_direct_shared_ports),
        cmocka_unit_test(test_batch_port_same),
        cmocka_unit_test(test_differential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
