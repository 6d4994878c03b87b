/* test_dp.c: the datapath's transmit policy end to end, on dummy ports and
 * a virtual clock: batching across flows and rx batches, the flush
 * interval, idle flushes, forced flushes (port removal, rule changes, PMD
 * destruction) and conservation at every step. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actions.h"
#include "backends/dummy/netdev-dummy.h"
#include "config.h"
#include "fcache.h"
#include "dp.h"
#include "netdev.h"
#include "packet.h"
#include "helpers/dummy_group.h"

#define US 1000ull

struct fx {
    char dir[64];
    char path[128];
    struct config cfg;
    struct dp *dp;
    struct dp_pmd *pmd;
};

/* Writes 'text' as the config and opens the datapath: p0 (rx), p1 and p2
 * (tx, kept for collection). */
static void fx_open(struct fx *f, const char *datapath, const char *rules)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/fs-test-dp-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/dp.ini", f->dir);
    FILE *c = fopen(f->path, "w");
    assert_non_null(c);
    fprintf(c,
            "[datapath]\n%s\n"
            "[port p0]\ntype = dummy\n"
            "[port p1]\ntype = dummy\ntx-keep = true\n"
            "[port p2]\ntype = dummy\ntx-keep = true\n"
            "[rules]\n%s\n",
            datapath, rules);
    fclose(c);
    char err[512];
    if (config_load(f->path, &f->cfg, err, sizeof err))
        fail_msg("config: %s", err);
    if (config_dp_create(&f->cfg, f->dir, &f->dp, err, sizeof err))
        fail_msg("dp: %s", err);
    f->pmd = dp_pmd_create(f->dp);
    assert_non_null(f->pmd);
}

static void fx_close(struct fx *f)
{
    if (f->pmd)
        dp_pmd_destroy(f->pmd);
    dp_destroy(f->dp);
    config_free(&f->cfg);
    unlink(f->path);
    rmdir(f->dir);
}

/* A 64-byte UDP/IPv4 frame of flow 'flow' with the sequence number 'seq'
 * in its payload, stamped with rx time ts. */
static struct pkt *mk(unsigned flow, unsigned seq, uint64_t ts)
{
    uint8_t b[64] = {0};
    memcpy(b, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
    uint8_t *ip = b + 14;
    ip[0] = 0x45;
    ip[3] = 50;
    ip[8] = 64;
    ip[9] = 17;
    ip[12] = 10;
    ip[15] = 1;
    ip[16] = 10;
    ip[19] = 2;
    uint8_t *udp = ip + 20;
    udp[0] = (uint8_t)(flow >> 8);
    udp[1] = (uint8_t)flow;
    udp[3] = 53;
    udp[5] = 30;
    udp[8] = (uint8_t)(seq >> 8);
    udp[9] = (uint8_t)seq;
    struct pkt *p = pkt_from_data(b, sizeof b);
    assert_non_null(p);
    p->ts = ts;
    return p;
}

static unsigned seq_of(const struct pkt *p)
{
    return (unsigned)(p->data[42] << 8 | p->data[43]);
}

static struct netdev *dev(struct fx *f, unsigned port)
{
    struct dp_port_info p;
    dp_port_get(f->dp, port, &p);
    return p.dev;
}

/* The PMD's counters now (one snapshot at a time). */
static const struct dp_stats *snap(struct fx *f)
{
    static struct dp_stats s;
    dp_stats_collect(f->dp, &f->pmd, 1, &s);
    return &s;
}

static void assert_conserved(struct fx *f)
{
    struct dp_totals t;
    dp_stats_totals(snap(f), dp_n_ports(f->dp), &t);
    assert_int_equal(t.rx + t.copies, t.tx + t.dropped + t.queued);
}

static unsigned queued(struct fx *f)
{
    return dp_pmd_queued(f->pmd);
}

/* Collects what p1 sent, checking sequence order, and frees it. */
static int collect(struct fx *f, unsigned port, unsigned *next_seq)
{
    struct pkt *out[256];
    int n = netdev_dummy_collect(dev(f, port), 0, out, 256);
    for (int i = 0; i < n; i++) {
        if (next_seq)
            assert_int_equal(seq_of(out[i]), (*next_seq)++);
        pkt_free(out[i]);
    }
    return n;
}

/* 32 flows in one rx batch to one port leave in one send call. */
static void test_one_call_for_32_flows(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "", "rule = in_port=p0 actions=output:p1");
    for (unsigned i = 0; i < 32; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(i, i, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 32);
    assert_int_equal(netdev_dummy_send_calls(dev(&f, 1)), 1);
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 32);
    assert_conserved(&f);
    fx_close(&f);
}

/* tx-batching = off: each run of packets with one action list (here the
 * packets of one flow: each UDP source port has its own rule) leaves in
 * its own send call, in order, whether the list is one output or rewrites
 * the packet first; on: the batch in one call. */
static void test_tx_batching_off(void **state)
{
    (void)state;
    for (int mode = 0; mode < 4; mode++) {
        const bool on = mode & 1, rewrite = mode & 2;
        char rules[4096];
        size_t n0 = 0;
        for (unsigned k = 0; k < 16; k++)
            n0 += (size_t)snprintf(rules + n0, sizeof rules - n0,
                                   "rule = priority=20,udp,tp_src=%u actions=%soutput:p1\n", k,
                                   rewrite ? "mod_dl_src:02:00:00:00:00:07," : "");
        struct fx f = {0};
        fx_open(&f, on ? "tx-batching = on" : "tx-batching = off", rules);
        for (unsigned i = 0; i < 32; i++)
            netdev_dummy_inject(dev(&f, 0), 0, mk(i / 2, i, 0));
        assert_int_equal(dp_pmd_poll(f.pmd, 0), 32);
        assert_int_equal(netdev_dummy_send_calls(dev(&f, 1)), on ? 1 : 16);
        struct netdev_dummy_send_rec log[32];
        int n = netdev_dummy_send_log(dev(&f, 1), log, 32);
        for (int i = 0; i < n; i++)
            assert_int_equal(log[i].offered, on ? 32 : 2);
        unsigned next = 0;
        assert_int_equal(collect(&f, 1, &next), 32);
        assert_conserved(&f);
        fx_close(&f);
    }
}

/* tx-batching = off groups an rx batch per action list as OVS 2.8 did:
 * 32 packets of two flows interleaved (A B A B ...), each flow its own
 * rule, leave in 2 send calls of 16 (not 32 runs of one), flow A's first
 * (it appears first), each flow's packets in their order. */
static void test_tx_batching_off_groups(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-batching = off",
            "rule = priority=20,udp,tp_src=0 actions=output:p1\n"
            "rule = priority=20,udp,tp_src=1 actions=output:p1\n");
    for (unsigned i = 0; i < 32; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(i % 2, i, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 32);
    assert_int_equal(netdev_dummy_send_calls(dev(&f, 1)), 2);
    struct netdev_dummy_send_rec log[4];
    int n = netdev_dummy_send_log(dev(&f, 1), log, 4);
    assert_int_equal(n, 2);
    assert_int_equal(log[0].offered, 16);
    assert_int_equal(log[1].offered, 16);
    struct pkt *out[64];
    int got = netdev_dummy_collect(dev(&f, 1), 0, out, 64);
    assert_int_equal(got, 32);
    for (int i = 0; i < got; i++) {
        /* flow A: seq 0, 2, .., 30; then flow B: 1, 3, .., 31 */
        unsigned want = i < 16 ? 2u * (unsigned)i : 2u * (unsigned)(i - 16) + 1;
        assert_int_equal(seq_of(out[i]), want);
        pkt_free(out[i]);
    }
    assert_conserved(&f);
    fx_close(&f);
}

/* A port whose one megaflow covers in_port alone (a "simple" port: keyless
 * parse, the batch sent in place): a batch with a truncated capture and
 * two unparsable frames among good ones keeps the good ones in order and
 * counts each drop by reason; bytes stay conserved. */
static void test_simple_port_drops(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "", "rule = in_port=p0 actions=output:p1");
    netdev_dummy_inject(dev(&f, 0), 0, mk(0, 0, 0)); /* installs the megaflow */
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 1);
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 1);

    for (unsigned i = 1; i <= 32; i++) {
        struct pkt *p = mk(i, i, 0);
        if (i == 4)
            p->flags |= PKT_F_TRUNCATED;
        if (i == 8)
            p->data[14] = 0x65; /* IP version 6 under ethertype IPv4 */
        if (i == 32)
            p->len = 20; /* cut inside the IPv4 header */
        netdev_dummy_inject(dev(&f, 0), 0, p);
    }
    struct fcache_stats s0;
    fcache_get_stats(dp_pmd_fcache(f.pmd), &s0);
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 32);
    struct fcache_stats s1;
    fcache_get_stats(dp_pmd_fcache(f.pmd), &s1);
    /* The 29 good packets were answered without keys: simple hits, not
     * classifier probes. */
    assert_int_equal(s1.n[FCACHE_STAT_SIMPLE_HITS] - s0.n[FCACHE_STAT_SIMPLE_HITS], 29);
    assert_int_equal(s1.n[FCACHE_STAT_LOOKUPS] - s0.n[FCACHE_STAT_LOOKUPS], 29);
    assert_int_equal(s1.n[FCACHE_STAT_DIRECT], s0.n[FCACHE_STAT_DIRECT]);
    assert_int_equal(s1.n[FCACHE_STAT_MEGAFLOW_HITS], s0.n[FCACHE_STAT_MEGAFLOW_HITS]);
    assert_int_equal(s1.n[FCACHE_STAT_SUBTABLE_LOOKUPS], s0.n[FCACHE_STAT_SUBTABLE_LOOKUPS]);
    assert_int_equal(s1.n[FCACHE_STAT_UPCALLS], s0.n[FCACHE_STAT_UPCALLS]);
    struct pkt *out[64];
    int n = netdev_dummy_collect(dev(&f, 1), 0, out, 64);
    assert_int_equal(n, 29);
    unsigned want = 1;
    for (int i = 0; i < n; i++) {
        while (want == 4 || want == 8)
            want++;
        assert_int_equal(seq_of(out[i]), want++);
        pkt_free(out[i]);
    }
    const struct dp_stats *st = snap(&f);
    assert_int_equal(st->drops[DROP_rx_truncated], 1);
    assert_int_equal(st->drops[DROP_parse_error], 2);
    assert_int_equal(st->parse[PARSE_IP_VERSION], 1);
    assert_int_equal(st->parse[PARSE_IP_TRUNC], 1);
    assert_int_equal(st->parse[PARSE_OK], 30);
    assert_int_equal(st->ports[0].n[DP_PORT_RX_PACKETS], 33);
    assert_int_equal(st->ports[0].n[DP_PORT_RX_BYTES], 32 * 64 + 20);
    assert_int_equal(st->ports[1].tx.n[TXQ_STAT_PACKETS], 30);
    assert_int_equal(st->ports[1].tx.n[TXQ_STAT_BYTES], 30 * 64);
    assert_conserved(&f);
    fx_close(&f);
}

/* Interval 0: nothing outlives the rx batch it came in. */
static void test_interval0_nothing_survives(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 0", "rule = in_port=p0 actions=output:p1");
    unsigned next = 0, seq = 0;
    for (unsigned it = 0; it < 20; it++) {
        unsigned n = 1 + it % 7;
        for (unsigned i = 0; i < n; i++)
            netdev_dummy_inject(dev(&f, 0), 0, mk(i, seq++, it * US));
        assert_int_equal(dp_pmd_poll(f.pmd, it * US), n);
        assert_int_equal(queued(&f), 0);
        assert_int_equal(collect(&f, 1, &next), (int)n);
        assert_conserved(&f);
    }
    fx_close(&f);
}

/* Interval 50 us under continuous load: packets of several rx batches
 * leave together, none waits more than the interval plus one iteration. */
static void test_interval_batches_across_rx(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 50", "rule = in_port=p0 actions=output:p1");
    unsigned next = 0, seq = 0;
    uint64_t now = 0, first_pending = 0;
    bool pending = false;
    for (unsigned it = 0; it < 200; it++, now += 10 * US) {
        netdev_dummy_inject(dev(&f, 0), 0, mk(it % 3, seq++, now));
        if (!pending) {
            first_pending = now;
            pending = true;
        }
        assert_int_equal(dp_pmd_poll(f.pmd, now), 1);
        int got = collect(&f, 1, &next);
        if (got) {
            /* A flush happened at 'now': its oldest packet waited at most
             * the interval (plus one 10 us iteration). */
            assert_true(now - first_pending <= 50 * US + 10 * US);
            assert_true(now - first_pending >= 50 * US);
            pending = queued(&f) != 0;
            first_pending = now;
        }
        assert_conserved(&f);
    }
    /* Several rx batches per send call. */
    assert_true(netdev_dummy_send_calls(dev(&f, 1)) <= 200 / 5);
    fx_close(&f);
}

/* A lone ping is delivered by the next (idle) iteration even with a long
 * interval. */
static void test_ping_not_stuck(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 1000", "rule = in_port=p0 actions=output:p1");
    netdev_dummy_inject(dev(&f, 0), 0, mk(1, 0, 100));
    assert_int_equal(dp_pmd_poll(f.pmd, 100), 1);
    assert_int_equal(queued(&f), 1); /* held for the interval... */
    assert_int_equal(dp_pmd_poll(f.pmd, 101), 0);
    assert_int_equal(queued(&f), 0); /* ...but an idle PMD holds nothing */
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 1);
    assert_conserved(&f);
    fx_close(&f);
}

/* A full batch leaves at once, whatever the interval. */
static void test_full_batch_leaves(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 1000", "rule = in_port=p0 actions=output:p1");
    for (unsigned i = 0; i < 32; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(i, i, 5));
    assert_int_equal(dp_pmd_poll(f.pmd, 5), 32);
    assert_int_equal(queued(&f), 0);
    assert_int_equal(collect(&f, 1, NULL), 32);
    fx_close(&f);
}

/* Removing a port with packets pending sends them (or drops and counts
 * them if the port refuses); later output to it is tx_down. */
static void test_port_removal_flushes(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 1000",
            "rule = in_port=p0,udp,tp_src=1 actions=output:p1\n"
            "rule = in_port=p0,udp,tp_src=2 actions=output:p2");
    for (unsigned i = 0; i < 5; i++) {
        netdev_dummy_inject(dev(&f, 0), 0, mk(1, i, 0));
        netdev_dummy_inject(dev(&f, 0), 0, mk(2, i, 0));
    }
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 10);
    assert_int_equal(queued(&f), 10);
    /* p1 sends what it had; p2 refuses everything: dropped, counted. */
    unsigned next = 0;
    netdev_dummy_set_tx_accept(dev(&f, 2), 0);
    struct dp_pmd *pmds[1] = {f.pmd};
    dp_port_remove(f.dp, pmds, 1, 1);
    assert_null(dev(&f, 1));
    dp_port_remove(f.dp, pmds, 1, 2);
    assert_int_equal(queued(&f), 0);
    assert_int_equal(snap(&f)->ports[1].tx.n[TXQ_STAT_PACKETS], 5);
    assert_int_equal(snap(&f)->ports[2].tx.dropped[DROP_tx_full] +
                         snap(&f)->ports[2].tx.dropped[DROP_tx_down], 5);
    (void)next;
    assert_conserved(&f);
    /* Output to a removed port: counted, never lost. */
    netdev_dummy_inject(dev(&f, 0), 0, mk(1, 9, 1));
    assert_int_equal(dp_pmd_poll(f.pmd, 1), 1);
    assert_int_equal(snap(&f)->drops[DROP_tx_down], 1);
    assert_conserved(&f);
    fx_close(&f);
}

/* A rule change flushes what is queued under the old rules first: the PMD
 * takes it at its next poll, sends what it holds, then forwards by the new
 * rules. */
static void test_rule_change_flushes(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 1000", "rule = in_port=p0 actions=output:p1");
    for (unsigned i = 0; i < 3; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(1, i, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 3);
    assert_int_equal(queued(&f), 3);
    struct dp_rule_src add = {.text = "priority=40000,in_port=p0 actions=output:p2"};
    struct dp_rule_edit e = {.add = &add, .n_add = 1};
    char err[256];
    assert_int_equal(dp_rules_apply(f.dp, &e, "test", err, sizeof err), 0);
    assert_int_equal(queued(&f), 3); /* the PMD has not polled since */
    /* The new rule wins at the next poll, after the old packets left. */
    netdev_dummy_inject(dev(&f, 0), 0, mk(1, 7, 1));
    assert_int_equal(dp_pmd_poll(f.pmd, 1), 1);
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 3);
    dp_pmd_flush(f.pmd, 1);
    assert_int_equal(collect(&f, 1, NULL), 0);
    assert_int_equal(collect(&f, 2, NULL), 1);
    assert_conserved(&f);
    fx_close(&f);
}

/* What the control side replaces is freed only once every PMD synced
 * after the replacement: two changes published before the PMD's next poll
 * keep both replaced knob sets (the PMD may be between reading the first
 * new one and announcing it), and the PMD's poll releases them. */
static void test_reclaim_waits_for_sync(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "", "rule = in_port=p0 actions=output:p1");
    char err[256];
    assert_int_equal(dp_rules_reclaim(f.dp), 0);
    assert_true(dp_pmd_current(f.pmd));
    assert_int_equal(dp_knob_update(f.dp, "tx-retries", "1", err, sizeof err), 0);
    assert_int_equal(dp_knob_update(f.dp, "tx-retries", "2", err, sizeof err), 0);
    assert_false(dp_pmd_current(f.pmd));
    assert_int_equal(dp_rules_reclaim(f.dp), 2);
    struct dp_rule_edit e = {.clear = true};
    assert_int_equal(dp_rules_apply(f.dp, &e, "test", err, sizeof err), 0);
    assert_int_equal(dp_rules_reclaim(f.dp), 3);
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 0);
    assert_true(dp_pmd_current(f.pmd));
    assert_int_equal(dp_rules_reclaim(f.dp), 0);
    fx_close(&f);
}

/* An edit is applied whole or not at all: one that grows the table well
 * past the old table's size (the room is reserved before anything is
 * retired) replaces it, with the deletes and a replacement; one with a bad
 * rule at its end leaves the published table, its rules and the retired
 * list as they were. */
static void test_rule_edit_whole(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "", "rule = priority=5,in_port=p0 actions=output:p1");
    char err[256];
    enum { N = 200 };
    static char texts[N][96];
    struct dp_rule_src add[N + 1];
    for (unsigned i = 0; i < N; i++) {
        snprintf(texts[i], sizeof texts[i],
                 "priority=%u,in_port=p0,udp,tp_src=%u actions=output:p2", 1000 + i, i);
        add[i] = (struct dp_rule_src){texts[i], (int)i + 1};
    }
    /* The last addition replaces the first one (same priority and match). */
    add[N] = (struct dp_rule_src){"priority=1000,in_port=p0,udp,tp_src=0 actions=drop", N + 1};
    struct dp_rule_src del = {"priority=5,in_port=p0 actions=drop", 0};
    struct dp_rule_edit e = {.del = &del, .n_del = 1, .add = add, .n_add = N + 1};
    const struct rule_table *old = dp_rules(f.dp);
    assert_int_equal(dp_rules_apply(f.dp, &e, "test", err, sizeof err), 0);
    const struct rule_table *t = dp_rules(f.dp);
    assert_ptr_not_equal(t, old);
    assert_int_equal(rule_table_count(t), N);
    for (unsigned i = 0; i < N; i++)
        assert_int_equal(rule_table_at(t, i)->priority, 1000 + N - 1 - i);
    assert_string_equal(rule_table_at(t, N - 1)->text, add[N].text);
    assert_int_equal(dp_rules_reclaim(f.dp), 1); /* the old table, until the PMD polls */
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 0);
    assert_int_equal(dp_rules_reclaim(f.dp), 0);

    /* Clear, then add all but a broken last rule: nothing happens. */
    add[N] = (struct dp_rule_src){"priority=7,in_port=p0,tp_dst=80 actions=drop", 77};
    struct dp_rule_edit bad = {.clear = true, .add = add, .n_add = N + 1};
    uint64_t v = rule_table_version(t);
    assert_int_equal(dp_rules_apply(f.dp, &bad, "test", err, sizeof err), -1);
    assert_string_equal(err, "test:77: rule: tp_dst requires tcp, udp or sctp");
    assert_ptr_equal(dp_rules(f.dp), t);
    assert_int_equal(rule_table_count(t), N);
    assert_true(rule_table_version(t) == v);
    assert_int_equal(dp_rules_reclaim(f.dp), 0);
    fx_close(&f);
}

/* Several knobs change in one publication: the PMD works with the old set
 * until its next poll and with every new value from then on; only one set
 * is replaced (one publication, not one per knob). A set in which a knob
 * that needs a restart differs, or one the flow caches refuse with the
 * running knobs, publishes nothing. */
static void test_knobs_publish_one_set(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "smc = off\nsmc-entries = 12", "rule = in_port=p0 actions=output:p1");
    char err[256];
    struct dp_knobs k = *dp_get_knobs(f.dp);
    k.tx_flush_interval_us = 1000;
    k.bad_csum_forward = true;
    k.tx_retries = 3;
    assert_int_equal(dp_knobs_check(f.dp, &k, err, sizeof err), 0);
    assert_int_equal(dp_knobs_publish(f.dp, &k, err, sizeof err), 0);
    assert_int_equal(dp_get_knobs(f.dp)->tx_flush_interval_us, 1000);
    const struct dp_knobs *pk = dp_pmd_knobs(f.pmd);
    assert_int_equal(pk->tx_flush_interval_us, 0); /* not before its next poll */
    assert_false(pk->bad_csum_forward);
    assert_int_equal(pk->tx_retries, 8);
    assert_false(dp_pmd_current(f.pmd));
    assert_int_equal(dp_rules_reclaim(f.dp), 1);
    netdev_dummy_inject(dev(&f, 0), 0, mk(1, 0, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 1);
    pk = dp_pmd_knobs(f.pmd);
    assert_int_equal(pk->tx_flush_interval_us, 1000);
    assert_true(pk->bad_csum_forward);
    assert_int_equal(pk->tx_retries, 3);
    assert_int_equal(queued(&f), 1); /* the new flush interval holds it */
    assert_int_equal(dp_rules_reclaim(f.dp), 0);

    struct dp_knobs bad = k;
    bad.emc_entries = 1024;
    bad.tx_flush_interval_us = 0;
    assert_int_equal(dp_knobs_publish(f.dp, &bad, err, sizeof err), -1);
    assert_string_equal(err, "knob 'emc-entries' cannot change while the datapath runs");
    bad = k;
    bad.smc = true; /* with the running smc-entries, 12 */
    assert_int_equal(dp_knobs_check(f.dp, &bad, err, sizeof err), -1);
    assert_int_equal(dp_knobs_publish(f.dp, &bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "smc-entries must be a power of two"));
    assert_int_equal(dp_knobs_check(NULL, &bad, err, sizeof err), -1);
    bad.emc_entries = 1024; /* on its own, any knob may differ */
    bad.smc_entries = 16;
    assert_int_equal(dp_knobs_check(NULL, &bad, err, sizeof err), 0);
    assert_true(dp_pmd_current(f.pmd));
    assert_int_equal(dp_get_knobs(f.dp)->tx_flush_interval_us, 1000);
    assert_false(dp_get_knobs(f.dp)->smc);
    dp_pmd_flush(f.pmd, 1);
    assert_conserved(&f);
    fx_close(&f);
}

/* The caches' run-time knobs reach a PMD at its next poll: SMC off frees
 * it, emc-insert-inv-prob 0 frees the EMC, and both come back empty;
 * knobs that size the caches need a restart. */
static void test_live_cache_knobs(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "direct-subtables = 0", "rule = in_port=p0 actions=output:p1");
    struct fcache_memory m;
    char err[256];
    assert_int_equal(dp_knob_update(f.dp, "smc", "off", err, sizeof err), 0);
    assert_int_equal(dp_knob_update(f.dp, "emc-insert-inv-prob", "0", err, sizeof err), 0);
    assert_false(dp_get_knobs(f.dp)->smc);
    char v[32];
    assert_int_equal(dp_knobs_get(dp_get_knobs(f.dp), "smc", v, sizeof v), 0);
    assert_string_equal(v, "off");
    assert_int_equal(dp_knobs_get(dp_get_knobs(f.dp), "emc-insert-inv-prob", v, sizeof v), 0);
    assert_string_equal(v, "0");
    assert_int_equal(dp_knobs_get(dp_get_knobs(f.dp), "emc-entries", v, sizeof v), 0);
    assert_string_equal(v, "8192");
    assert_int_equal(dp_knobs_get(dp_get_knobs(f.dp), "nonsense", v, sizeof v), -1);
    assert_true(dp_knob_is_live("smc") && dp_knob_is_live("tx-retries"));
    assert_false(dp_knob_is_live("emc-entries") || dp_knob_is_live("nonsense"));
    fcache_get_memory(dp_pmd_fcache(f.pmd), &m);
    assert_true(m.smc > 0 && m.emc > 0); /* not before the PMD's next poll */
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 0);
    fcache_get_memory(dp_pmd_fcache(f.pmd), &m);
    assert_int_equal(m.smc, 0);
    assert_int_equal(m.emc, 0);
    for (unsigned i = 0; i < 4; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(1, i, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 1), 4);
    const uint64_t *c = snap(&f)->fcache.n;
    assert_int_equal(c[FCACHE_STAT_UPCALLS], 1);
    assert_int_equal(c[FCACHE_STAT_MEGAFLOW_HITS], 3);
    assert_int_equal(c[FCACHE_STAT_EMC_INSERTS] + c[FCACHE_STAT_SMC_INSERTS], 0);

    assert_int_equal(dp_knob_update(f.dp, "smc", "on", err, sizeof err), 0);
    assert_int_equal(dp_knob_update(f.dp, "emc-insert-inv-prob", "1", err, sizeof err), 0);
    assert_int_equal(dp_pmd_poll(f.pmd, 2), 0);
    fcache_get_memory(dp_pmd_fcache(f.pmd), &m);
    assert_true(m.smc > 0 && m.emc > 0);
    for (unsigned i = 4; i < 7; i++) { /* one batch each: the EMC sees the insert */
        netdev_dummy_inject(dev(&f, 0), 0, mk(1, i, 3));
        assert_int_equal(dp_pmd_poll(f.pmd, 3), 1);
    }
    c = snap(&f)->fcache.n;
    assert_int_equal(c[FCACHE_STAT_EMC_HITS], 2); /* after one insert */
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 7);

    assert_int_equal(dp_knob_update(f.dp, "smc", "maybe", err, sizeof err), -1);
    assert_string_equal(err, "bad value 'maybe' for 'smc' (expected on or off)");
    assert_int_equal(dp_knob_update(f.dp, "emc-entries", "1024", err, sizeof err), -1);
    assert_string_equal(err, "knob 'emc-entries' cannot change while the datapath runs");
    assert_conserved(&f);
    fx_close(&f);
}

/* Requests are served at the PMD's next poll (or by its owner when no
 * thread polls it), one at a time: a flush empties the caches, a dump
 * copies every megaflow with its actions, which outlive a rule change. */
static void test_pmd_requests(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "direct-subtables = 0",
            "rule = priority=20,in_port=p0,udp,tp_src=1 actions=output:p2\n"
            "rule = priority=10,in_port=p0 actions=output:p1");
    assert_true(dp_pmd_request_done(f.pmd)); /* nothing posted */
    assert_null(dp_pmd_take_dump(f.pmd));
    netdev_dummy_inject(dev(&f, 0), 0, mk(1, 0, 0)); /* tp_src 1 */
    netdev_dummy_inject(dev(&f, 0), 0, mk(2, 1, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 2);
    assert_int_equal(snap(&f)->fcache.n[FCACHE_STAT_MEGAFLOWS], 2);

    assert_int_equal(dp_pmd_request_post(f.pmd, DP_PMD_REQ_MEGAFLOW_DUMP), 0);
    assert_false(dp_pmd_request_done(f.pmd));
    assert_int_equal(dp_pmd_request_post(f.pmd, DP_PMD_REQ_MEGAFLOW_FLUSH), -1);
    assert_null(dp_pmd_take_dump(f.pmd));
    assert_int_equal(dp_pmd_poll(f.pmd, 1), 0);
    assert_true(dp_pmd_request_done(f.pmd));
    struct dp_megaflow_dump *d = dp_pmd_take_dump(f.pmd);
    assert_non_null(d);
    assert_false(d->nomem);
    assert_int_equal(d->n, 2);
    /* Replace the rules: the dump's action lists stay valid. */
    struct dp_rule_edit e = {.clear = true};
    char err[256];
    assert_int_equal(dp_rules_apply(f.dp, &e, "test", err, sizeof err), 0);
    assert_int_equal(dp_pmd_poll(f.pmd, 2), 0);
    dp_rules_reclaim(f.dp);
    unsigned seen = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct dp_megaflow *m = &d->flows[i];
        assert_int_equal(m->key.in_port, 0);
        assert_int_equal(m->mask.m.in_port, UINT32_MAX);
        assert_non_null(m->actions);
        assert_int_equal(m->actions->n, 1);
        assert_int_equal(m->actions->a[0].type, ACT_OUTPUT);
        /* The tp_src rule was examined for both flows: its field is in
         * both masks, whole for the flow it matches, down to the first bit
         * that differs from 1 for the other (tp_src 2: 0xfffe); its value
         * picks the port. */
        assert_int_equal(m->mask.m.tp_src, m->key.tp_src == 1 ? 0xffff : 0xfffe);
        assert_int_equal(m->actions->a[0].u.port, m->key.tp_src == 1 ? 2 : 1);
        seen |= 1u << m->actions->a[0].u.port;
    }
    assert_int_equal(seen, 6);
    dp_megaflow_dump_free(d);

    /* A flush, served by the owner of a PMD nobody polls. */
    e = (struct dp_rule_edit){.add = &(struct dp_rule_src){.text = "in_port=p0 actions=output:p1"},
                              .n_add = 1};
    assert_int_equal(dp_rules_apply(f.dp, &e, "test", err, sizeof err), 0);
    netdev_dummy_inject(dev(&f, 0), 0, mk(1, 2, 3));
    assert_int_equal(dp_pmd_poll(f.pmd, 3), 1);
    /* Both megaflows survived the two changes (revalidated, not flushed). */
    assert_int_equal(snap(&f)->fcache.n[FCACHE_STAT_MEGAFLOWS], 2);
    assert_int_equal(snap(&f)->fcache.n[FCACHE_STAT_MEGAFLOWS_FLUSHED], 0);
    assert_int_equal(dp_pmd_request_post(f.pmd, DP_PMD_REQ_MEGAFLOW_FLUSH), 0);
    dp_pmd_sync(f.pmd);
    assert_true(dp_pmd_request_done(f.pmd));
    assert_int_equal(snap(&f)->fcache.n[FCACHE_STAT_MEGAFLOWS], 0);
    assert_int_equal(snap(&f)->fcache.n[FCACHE_STAT_MEGAFLOWS_FLUSHED], 2);
    /* A dump posted and never taken is freed (valgrind: no leak). */
    assert_int_equal(dp_pmd_request_post(f.pmd, DP_PMD_REQ_MEGAFLOW_DUMP), 0);
    assert_int_equal(dp_pmd_poll(f.pmd, 4), 0);
    assert_int_equal(collect(&f, 1, NULL) + collect(&f, 2, NULL), 3);
    assert_conserved(&f);
    fx_close(&f);
}

/* Destroying a PMD sends what it holds; nothing leaks (valgrind). */
static void test_pmd_destroy_flushes(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "tx-flush-interval = 1000", "rule = in_port=p0 actions=output:p1");
    for (unsigned i = 0; i < 4; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(1, i, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 4);
    assert_int_equal(queued(&f), 4);
    dp_pmd_destroy(f.pmd);
    f.pmd = NULL;
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 4);
    fx_close(&f);
}

/* Retries through the datapath: a port taking 5 per call gets a full
 * batch in 7 calls, in order. */
static void test_retries_through_dp(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open(&f, "", "rule = in_port=p0 actions=output:p1");
    netdev_dummy_set_tx_accept(dev(&f, 1), 5);
    for (unsigned i = 0; i < 32; i++)
        netdev_dummy_inject(dev(&f, 0), 0, mk(i, i, 0));
    assert_int_equal(dp_pmd_poll(f.pmd, 0), 32);
    assert_int_equal(netdev_dummy_send_calls(dev(&f, 1)), 7);
    unsigned next = 0;
    assert_int_equal(collect(&f, 1, &next), 32);
    assert_int_equal(snap(&f)->ports[1].tx.n[TXQ_STAT_RETRIES], 6);
    assert_conserved(&f);
    fx_close(&f);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_call_for_32_flows),
        cmocka_unit_test(test_tx_batching_off),
        cmocka_unit_test(test_tx_batching_off_groups),
        cmocka_unit_test(test_simple_port_drops),
        cmocka_unit_test(test_interval0_nothing_survives),
        cmocka_unit_test(test_interval_batches_across_rx),
        cmocka_unit_test(test_ping_not_stuck),
        cmocka_unit_test(test_full_batch_leaves),
        cmocka_unit_test(test_port_removal_flushes),
        cmocka_unit_test(test_rule_change_flushes),
        cmocka_unit_test(test_knobs_publish_one_set),
        cmocka_unit_test(test_live_cache_knobs),
        cmocka_unit_test(test_reclaim_waits_for_sync),
        cmocka_unit_test(test_rule_edit_whole),
        cmocka_unit_test(test_pmd_requests),
        cmocka_unit_test(test_pmd_destroy_flushes),
        cmocka_unit_test(test_retries_through_dp),
    };
    return cmocka_run_group_tests(tests, dummy_group_setup, dummy_group_teardown);
}
