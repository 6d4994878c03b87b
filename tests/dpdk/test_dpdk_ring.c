/* test_dpdk_ring.c: net_ring loopback through the DPDK backend and the PMD
 * runtime: frames injected into port a's rx rings leave port b's tx rings
 * byte for byte, in order per queue, with 1 and 2 PMD threads, with a tx
 * queue shared by two PMDs, and from a pool without a struct pkt area; and
 * rule changes through the control socket (flowswitch ctl's client) while
 * the PMDs forward. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>

#include "control.h"
#include "ctl-client.h"
#include "ctl-commands.h"
#include "ctl-server.h"
#include "dpdk_helpers.h"
#include "keepalive.h"

#define N_PER_Q 600
#define MAX_FRAME 1600

struct ring_env {
    struct rte_mempool *pool;
    struct rte_mempool *bare_pool; /* priv_size 0 */
};

/* A ring port: nq rx rings and nq_tx tx rings. */
struct ring_port {
    struct rte_ring *rx[4], *tx[4];
    unsigned nrx, ntx;
};

static int ring_port_make(const char *name, struct ring_port *rp, unsigned nrx,
                          unsigned ntx)
{
    char rn[64];
    memset(rp, 0, sizeof *rp);
    rp->nrx = nrx;
    rp->ntx = ntx;
    for (unsigned i = 0; i < nrx; i++) {
        snprintf(rn, sizeof rn, "%s_rx%u", name, i);
        rp->rx[i] = rte_ring_create(rn, 1024, SOCKET_ID_ANY, 0);
        if (!rp->rx[i])
            return -1;
    }
    for (unsigned i = 0; i < ntx; i++) {
        snprintf(rn, sizeof rn, "%s_tx%u", name, i);
        rp->tx[i] = rte_ring_create(rn, 8192, SOCKET_ID_ANY, 0);
        if (!rp->tx[i])
            return -1;
    }
    return rte_eth_from_rings(name, rp->rx, nrx, rp->tx, ntx, SOCKET_ID_ANY) < 0 ? -1 : 0;
}

/* Empties the rings (the ethdev still refers to them: they are released
 * with the EAL). */
static void ring_port_free(struct ring_port *rp)
{
    void *m;
    for (unsigned i = 0; i < rp->nrx; i++)
        while (rte_ring_dequeue(rp->rx[i], &m) == 0)
            rte_pktmbuf_free(m);
    for (unsigned i = 0; i < rp->ntx; i++)
        while (rte_ring_dequeue(rp->tx[i], &m) == 0)
            rte_pktmbuf_free(m);
}

/* Frame i of queue q: sizes, protocols and bytes differ per frame. */
static uint32_t make_frame(uint8_t *buf, unsigned q, unsigned i)
{
    uint32_t seed = q * 100000u + i;
    unsigned payload = (i * 37u) % 1400u;
    return th_frame(buf, i % 3 ? 17 : 6, seed, payload, 0);
}

static void inject(struct rte_mempool *mp, struct rte_ring *r, unsigned q, unsigned n)
{
    uint8_t buf[MAX_FRAME];
    for (unsigned i = 0; i < n; i++) {
        uint32_t len = make_frame(buf, q, i);
        struct rte_mbuf *m = th_mbuf(mp, buf, len);
        assert_non_null(m);
        assert_int_equal(rte_ring_enqueue(r, m), 0);
    }
}

/* Dequeues every mbuf of r into out[] (up to max). */
static unsigned drain(struct rte_ring *r, struct rte_mbuf **out, unsigned max)
{
    unsigned n = 0;
    void *m;
    while (n < max && rte_ring_dequeue(r, &m) == 0)
        out[n++] = m;
    return n;
}

static int frame_is(const struct rte_mbuf *m, unsigned q, unsigned i)
{
    uint8_t buf[MAX_FRAME];
    uint32_t len = make_frame(buf, q, i);
    return m->nb_segs == 1 && m->pkt_len == len &&
           memcmp(rte_pktmbuf_mtod(m, const void *), buf, len) == 0;
}

struct run {
    char dir[256];
    struct config cfg;
    struct dp *dp;
    struct pmd_runtime *rt;
};

static void run_start(struct run *r, const char *ini, unsigned n_pmds)
{
    memset(r, 0, sizeof *r);
    assert_int_equal(th_config(r->dir, sizeof r->dir, ini, &r->cfg), 0);
    char err[512];
    int rc = config_dp_create(&r->cfg, r->dir, &r->dp, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    struct pmd_config pc;
    pmd_config_default(&pc);
    pc.n_pmds = n_pmds;
    pc.idle_sleep_us = 50; /* shared CI machines: do not spin when idle */
    pc.thread_start = netdev_dpdk_thread_register;
    pc.thread_stop = netdev_dpdk_thread_unregister;
    assert_int_equal(pmd_runtime_create(r->dp, &pc, &r->rt, err, sizeof err), 0);
    assert_int_equal(pmd_runtime_start(r->rt, err, sizeof err), 0);
}

static void run_stop(struct run *r)
{
    pmd_runtime_stop(r->rt);
    assert_true(th_conserved(r->dp, r->rt));
    pmd_runtime_destroy(r->rt);
    dp_destroy(r->dp);
    config_free(&r->cfg);
    th_rmdir(r->dir);
}

static void test_loopback_1pmd(void **state)
{
    struct ring_env *env = *state;
    struct ring_port a, b;
    assert_int_equal(ring_port_make("r1a", &a, 1, 1), 0);
    assert_int_equal(ring_port_make("r1b", &b, 1, 1), 0);
    struct run r;
    run_start(&r,
              "[port a]\ntype = dpdk\ndevargs = net_ring_r1a\n"
              "[port b]\ntype = dpdk\ndevargs = net_ring_r1b\n"
              "[rules]\nrule = in_port=a actions=output:b\n",
              1);
    inject(env->pool, a.rx[0], 0, N_PER_Q);
    assert_int_equal(th_wait_rx(r.rt, N_PER_Q), 0);
    static struct rte_mbuf *out[2 * N_PER_Q];
    unsigned n = drain(b.tx[0], out, 2 * N_PER_Q);
    assert_int_equal(n, N_PER_Q);
    for (unsigned i = 0; i < n; i++) {
        assert_true(frame_is(out[i], 0, i));
        rte_pktmbuf_free(out[i]);
    }
    assert_int_equal(rte_ring_count(a.tx[0]), 0);
    run_stop(&r);
    ring_port_free(&a);
    ring_port_free(&b);
}

static void test_loopback_2pmd(void **state)
{
    struct ring_env *env = *state;
    struct ring_port a, b;
    assert_int_equal(ring_port_make("r2a", &a, 2, 2), 0);
    assert_int_equal(ring_port_make("r2b", &b, 2, 2), 0);
    struct run r;
    run_start(&r,
              "[port a]\ntype = dpdk\ndevargs = net_ring_r2a\nrxqs = 2\ntxqs = 2\n"
              "[port b]\ntype = dpdk\ndevargs = net_ring_r2b\nrxqs = 2\ntxqs = 2\n"
              "[rules]\nrule = in_port=a actions=output:b\n",
              2);
    /* Round-robin: a/0 -> pmd0, a/1 -> pmd1; pmd i sends on txq i. */
    struct dp_pmd *const *pmds = pmd_runtime_pmds(r.rt);
    uint16_t port, qid;
    assert_int_equal(dp_pmd_n_rxqs(pmds[0]), 2);
    dp_pmd_get_rxq(pmds[0], 0, &port, &qid);
    assert_int_equal(qid, 0);
    dp_pmd_get_rxq(pmds[1], 0, &port, &qid);
    assert_int_equal(qid, 1);
    assert_int_equal(dp_pmd_txq_id(pmds[1], 1), 1);
    inject(env->pool, a.rx[0], 0, N_PER_Q);
    inject(env->pool, a.rx[1], 1, N_PER_Q);
    assert_int_equal(th_wait_rx(r.rt, 2 * N_PER_Q), 0);
    static struct rte_mbuf *out[2 * N_PER_Q];
    for (unsigned q = 0; q < 2; q++) {
        unsigned n = drain(b.tx[q], out, 2 * N_PER_Q);
        assert_int_equal(n, N_PER_Q);
        for (unsigned i = 0; i < n; i++) {
            assert_true(frame_is(out[i], q, i));
            rte_pktmbuf_free(out[i]);
        }
    }
    struct dp_totals t0, t1;
    th_pmd_totals(r.rt, 0, &t0, NULL);
    th_pmd_totals(r.rt, 1, &t1, NULL);
    assert_int_equal(t0.rx, N_PER_Q);
    assert_int_equal(t1.rx, N_PER_Q);
    run_stop(&r);
    ring_port_free(&a);
    ring_port_free(&b);
}

/* Two PMDs, one tx queue on b: the runtime serialises them; every frame
 * arrives once and each source queue's order is kept. */
static void test_shared_txq(void **state)
{
    struct ring_env *env = *state;
    struct ring_port a, b;
    assert_int_equal(ring_port_make("r3a", &a, 2, 2), 0);
    assert_int_equal(ring_port_make("r3b", &b, 1, 1), 0);
    struct run r;
    run_start(&r,
              "[port a]\ntype = dpdk\ndevargs = net_ring_r3a\nrxqs = 2\ntxqs = 2\n"
              "[port b]\ntype = dpdk\ndevargs = net_ring_r3b\n"
              "[rules]\nrule = in_port=a actions=output:b\n",
              2);
    inject(env->pool, a.rx[0], 0, N_PER_Q);
    inject(env->pool, a.rx[1], 1, N_PER_Q);
    assert_int_equal(th_wait_rx(r.rt, 2 * N_PER_Q), 0);
    static struct rte_mbuf *out[4 * N_PER_Q];
    unsigned n = drain(b.tx[0], out, 4 * N_PER_Q);
    assert_int_equal(n, 2 * N_PER_Q);
    unsigned next[2] = {0, 0};
    for (unsigned i = 0; i < n; i++) {
        if (next[0] < N_PER_Q && frame_is(out[i], 0, next[0]))
            next[0]++;
        else if (next[1] < N_PER_Q && frame_is(out[i], 1, next[1]))
            next[1]++;
        else
            fail_msg("frame %u is out of order or corrupted", i);
        rte_pktmbuf_free(out[i]);
    }
    assert_int_equal(next[0], N_PER_Q);
    assert_int_equal(next[1], N_PER_Q);
    run_stop(&r);
    ring_port_free(&a);
    ring_port_free(&b);
}

/* Frames from a pool with no private area are copied, not corrupted. */
static void test_foreign_pool(void **state)
{
    struct ring_env *env = *state;
    struct ring_port a, b;
    assert_int_equal(ring_port_make("r4a", &a, 1, 1), 0);
    assert_int_equal(ring_port_make("r4b", &b, 1, 1), 0);
    struct run r;
    run_start(&r,
              "[port a]\ntype = dpdk\ndevargs = net_ring_r4a\n"
              "[port b]\ntype = dpdk\ndevargs = net_ring_r4b\n"
              "[rules]\nrule = in_port=a actions=output:b\n",
              1);
    inject(env->bare_pool, a.rx[0], 0, 50);
    assert_int_equal(th_wait_rx(r.rt, 50), 0);
    static struct rte_mbuf *out[100];
    unsigned n = drain(b.tx[0], out, 100);
    assert_int_equal(n, 50);
    for (unsigned i = 0; i < n; i++) {
        assert_true(frame_is(out[i], 0, i));
        rte_pktmbuf_free(out[i]);
    }
    struct netdev_dpdk_stats ds;
    netdev_dpdk_get_stats(th_port_dev(r.dp, 0), &ds);
    assert_int_equal(ds.rx_copied, 50);
    assert_int_equal(rte_mempool_avail_count(env->bare_pool), 512);
    run_stop(&r);
    ring_port_free(&a);
    ring_port_free(&b);
}

/* ---- the control plane over ring ports ------------------------------------ */

struct ctl_run {
    struct run r;
    char sock[300];
    struct ka *ka;
    struct control *ctl;
    struct ctl_commands *cc;
    struct ctl_server *srv;
};

static void ctl_run_start(struct ctl_run *c, const char *ini, unsigned n_pmds)
{
    run_start(&c->r, ini, n_pmds);
    char err[512];
    snprintf(c->sock, sizeof c->sock, "%s/run/fs.ctl", c->r.dir);
    assert_int_equal(ka_create(n_pmds, 1000, &c->ka, err, sizeof err), 0);
    struct control_params cp = {.cfg = &c->r.cfg, .dp = c->r.dp, .rt = c->r.rt, .ka = c->ka};
    assert_int_equal(control_create(&cp, &c->ctl, err, sizeof err), 0);
    c->cc = ctl_commands_create();
    assert_non_null(c->cc);
    ctl_commands_attach(c->cc, c->ctl);
    size_t n;
    const struct ctl_command *t = ctl_commands_table(&n);
    if (ctl_server_create(c->sock, t, n, c->cc, NULL, &c->srv, err, sizeof err) ||
        ctl_server_start(c->srv, err, sizeof err))
        fail_msg("%s", err);
}

static void ctl_run_stop(struct ctl_run *c)
{
    ctl_server_stop(c->srv);
    pmd_runtime_stop(c->r.rt);
    control_destroy(c->ctl);
    ctl_server_destroy(c->srv);
    ctl_commands_destroy(c->cc);
    ka_destroy(c->ka);
    run_stop(&c->r);
}

/* A ctl request; fails the test on an ERR answer. */
static void ctl_ok(struct ctl_run *c, const char *line, const char *want)
{
    struct ctl_reply rep;
    char err[256];
    if (ctl_client_request(c->sock, line, strlen(line), 30000, &rep, err, sizeof err) !=
        CTL_CLIENT_OK)
        fail_msg("%s: %s", line, err);
    if (rep.error || (want && strcmp(rep.body, want)))
        fail_msg("%s: %s", line, rep.body);
    ctl_reply_free(&rep);
}

/* Frames 'from'..'to' of queue 0 into ring r, waiting for room. */
static void inject_range(struct rte_mempool *mp, struct rte_ring *r, unsigned from, unsigned to)
{
    uint8_t buf[MAX_FRAME];
    for (unsigned i = from; i < to; i++) {
        uint32_t len = make_frame(buf, 0, i);
        struct rte_mbuf *m = th_mbuf(mp, buf, len);
        assert_non_null(m);
        uint64_t end = th_now() + TH_WAIT_NS;
        while (rte_ring_enqueue(r, m) != 0) {
            assert_true(th_now() < end);
            th_sleep_ms(1);
        }
    }
}

/* Which frames of queue 0 a tx ring got, in order: their indices (the IP
 * id of make_frame(), checked against the whole frame). */
static unsigned collect_ids(struct rte_ring *r, unsigned *ids, unsigned max, unsigned n_frames)
{
    static struct rte_mbuf *out[8192];
    unsigned n = drain(r, out, max < 8192 ? max : 8192);
    for (unsigned k = 0; k < n; k++) {
        const uint8_t *f = rte_pktmbuf_mtod(out[k], const uint8_t *);
        unsigned i = (unsigned)(f[18] << 8 | f[19]);
        if (i >= n_frames || !frame_is(out[k], 0, i))
            fail_msg("tx frame %u is none of the injected frames", k);
        ids[k] = i;
        rte_pktmbuf_free(out[k]);
    }
    return n;
}

/* Feeds frames 0, 1, ... into a ring, a few per millisecond (the tx rings
 * are not drained until the end), until 'after' more frames went in after
 * 'changed' was set, or 'max' in all; 'n' is how many. */
struct injector {
    struct rte_mempool *mp;
    struct rte_ring *r;
    atomic_bool changed;
    unsigned after, max, n;
};

static void *injector_main(void *arg)
{
    struct injector *in = arg;
    unsigned stop = in->max;
    for (unsigned i = 0; i < stop; i += 16) {
        unsigned to = i + 16 < stop ? i + 16 : stop;
        inject_range(in->mp, in->r, i, to);
        in->n = to;
        if (stop == in->max && atomic_load(&in->changed) && to + in->after < in->max)
            stop = to + in->after;
        th_sleep_ms(1);
    }
    return NULL;
}

/* Rules changed through the control socket: frames injected after an
 * answer are forwarded by the new rule (the answer comes once every PMD
 * took the change), and under continuous traffic the outputs split at the
 * change with every frame once and in order. */
static void test_ctl_rule_changes(void **state)
{
    struct ring_env *env = *state;
    struct ring_port a, b, c;
    assert_int_equal(ring_port_make("r5a", &a, 1, 1), 0);
    assert_int_equal(ring_port_make("r5b", &b, 1, 1), 0);
    assert_int_equal(ring_port_make("r5c", &c, 1, 1), 0);
    struct ctl_run cr;
    ctl_run_start(&cr,
                  "[port a]\ntype = dpdk\ndevargs = net_ring_r5a\n"
                  "[port b]\ntype = dpdk\ndevargs = net_ring_r5b\n"
                  "[port c]\ntype = dpdk\ndevargs = net_ring_r5c\n"
                  "[rules]\nrule = in_port=a actions=output:b\n",
                  2);
    enum { STEP = 300, N = 3 * STEP, M = 7000 };
    static unsigned ids[M];
    inject_range(env->pool, a.rx[0], 0, STEP);
    assert_int_equal(th_wait_rx(cr.r.rt, STEP), 0);
    ctl_ok(&cr, "rule-add 'priority=40000,in_port=a actions=output:c'\n", "rule added (2 rules)\n");
    inject_range(env->pool, a.rx[0], STEP, 2 * STEP);
    assert_int_equal(th_wait_rx(cr.r.rt, 2 * STEP), 0);
    ctl_ok(&cr, "rule-del priority=40000,in_port=a\n", "1 rule deleted (1 rules)\n");
    inject_range(env->pool, a.rx[0], 2 * STEP, N);
    assert_int_equal(th_wait_rx(cr.r.rt, N), 0);
    unsigned nb = collect_ids(b.tx[0], ids, M, M);
    assert_int_equal(nb, 2 * STEP);
    for (unsigned k = 0; k < nb; k++)
        assert_int_equal(ids[k], k < STEP ? k : k + STEP);
    unsigned nc = collect_ids(c.tx[0], ids, M, M);
    assert_int_equal(nc, STEP);
    for (unsigned k = 0; k < nc; k++)
        assert_int_equal(ids[k], STEP + k);

    /* Under traffic: an injector thread keeps the ring fed while the rule
     * moves the traffic to c, and goes on for a while after. */
    static struct injector in = {.after = 500, .max = M};
    in.mp = env->pool;
    in.r = a.rx[0];
    atomic_init(&in.changed, false);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, injector_main, &in), 0);
    assert_int_equal(th_wait_rx(cr.r.rt, N + 200), 0);
    ctl_ok(&cr, "rule-add 'priority=40000,in_port=a actions=output:c'\n", NULL);
    atomic_store(&in.changed, true);
    pthread_join(th, NULL);
    assert_true(in.n < M); /* the change came while frames were flowing */
    assert_int_equal(th_wait_rx(cr.r.rt, N + in.n), 0);
    static unsigned to_b[M], to_c[M];
    nb = collect_ids(b.tx[0], to_b, M, M);
    nc = collect_ids(c.tx[0], to_c, M, M);
    assert_int_equal(nb + nc, in.n);
    assert_true(nb > 0 && nc >= in.after);
    for (unsigned k = 0; k < nb; k++)
        assert_int_equal(to_b[k], k);
    for (unsigned k = 0; k < nc; k++)
        assert_int_equal(to_c[k], nb + k);
    ctl_ok(&cr, "megaflow-flush\n", "megaflows flushed on 2 PMDs\n");
    ctl_run_stop(&cr);
    ring_port_free(&a);
    ring_port_free(&b);
    ring_port_free(&c);
}

static int setup(void **state)
{
    static struct ring_env env;
    if (th_eal_init("ring", NULL))
        return -1;
    env.pool = th_pool("test_pool", 8192);
    env.bare_pool = rte_pktmbuf_pool_create("bare_pool", 512, 0, 0,
                                            RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (!env.pool || !env.bare_pool)
        return -1;
    *state = &env;
    return 0;
}

static int teardown(void **state)
{
    struct ring_env *env = *state;
    rte_mempool_free(env->pool);
    rte_mempool_free(env->bare_pool);
    uint16_t pid;
    RTE_ETH_FOREACH_DEV(pid)
    {
        rte_eth_dev_stop(pid);
        rte_eth_dev_close(pid);
    }
    netdev_unregister_all();
    netdev_dpdk_fini();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_1pmd),
        cmocka_unit_test(test_loopback_2pmd),
        cmocka_unit_test(test_shared_txq),
        cmocka_unit_test(test_foreign_pool),
        cmocka_unit_test(test_ctl_rule_changes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
