/* test_dummy.c: the in-memory "dummy" backend. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backends/dummy/netdev-dummy.h"
#include "netdev.h"
#include "packet.h"
#include "helpers/dummy_group.h"

/* ---- helpers ------------------------------------------------------------- */

/* Opens a dummy port from "key=value" strings (NULL-terminated list). On
 * failure returns NULL with the reason in err. */
static struct netdev *open_dummy_caps(const char *const *kv, bool caps_set,
                                      uint32_t caps, char *err, size_t errlen)
{
    struct netdev_opt opts[16];
    char keys[16][64];
    size_t n = 0;
    for (; kv && kv[n]; n++) {
        assert_true(n < 16);
        const char *eq = strchr(kv[n], '=');
        assert_non_null(eq);
        snprintf(keys[n], sizeof keys[n], "%.*s", (int)(eq - kv[n]), kv[n]);
        opts[n].key = keys[n];
        opts[n].value = eq + 1;
        opts[n].line = 0;
    }
    struct netdev_args args = {
        .opts = opts,
        .n_opts = n,
        .base_dir = "",
        .out_dir = "",
        .caps_set = caps_set,
        .caps = {.flags = caps},
    };
    return netdev_open("d0", "dummy", &args, err, errlen);
}

static struct netdev *open_dummy(const char *const *kv)
{
    char err[256] = "";
    struct netdev *dev = open_dummy_caps(kv, false, 0, err, sizeof err);
    if (!dev)
        fail_msg("open failed: %s", err);
    return dev;
}

/* Expects open to fail with a message containing every 'want' string. */
static void expect_open_error(const char *const *kv, const char *want1,
                              const char *want2)
{
    char err[256] = "";
    struct netdev *dev = open_dummy_caps(kv, false, 0, err, sizeof err);
    if (dev) {
        netdev_close(dev);
        fail_msg("open of '%s' succeeded", kv[0]);
    }
    if (!strstr(err, want1) || (want2 && !strstr(err, want2)))
        fail_msg("error '%s' does not name '%s' / '%s'", err, want1,
                 want2 ? want2 : "");
}

/* A 60-byte frame whose byte 14 is 'tag', with rx time ts. */
static struct pkt *mk_pkt(uint8_t tag, uint64_t ts)
{
    uint8_t frame[60];
    memset(frame, 0, sizeof frame);
    frame[12] = 0x08;
    frame[14] = tag;
    struct pkt *p = pkt_from_data(frame, sizeof frame);
    assert_non_null(p);
    p->ts = ts;
    return p;
}

static uint8_t tag_of(const struct pkt *p)
{
    return p->data[14];
}

static int rx_burst(struct netdev *dev, unsigned qid, struct pkt_batch *b,
                    uint64_t now)
{
    return dev->class->rxq_recv(dev, qid, b, now);
}

static int send_pkts(struct netdev *dev, unsigned qid, struct pkt **pkts, int n)
{
    return dev->class->send(dev, qid, pkts, n, PKT_BATCH_F_PARTIAL); /* per-packet checks */
}

static void free_pkts(struct pkt **pkts, int n)
{
    for (int i = 0; i < n; i++)
        pkt_free(pkts[i]);
}


/* ---- tests --------------------------------------------------------------- */

static void test_register(void **state)
{
    (void)state;
    const struct netdev_class *c = netdev_class_find("dummy");
    assert_non_null(c);
    netdev_dummy_register(); /* a second time is harmless */
    assert_ptr_equal(netdev_class_find("dummy"), c);
    assert_string_equal(c->type, "dummy");
}

static void test_defaults(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    assert_int_equal(dev->class->n_rxq(dev), 1);
    assert_int_equal(dev->class->n_txq(dev), 1);
    assert_true(netdev_link_up(dev));
    struct netdev_caps caps = {.flags = 0xdead};
    netdev_get_caps(dev, &caps);
    assert_int_equal(caps.flags, 0);
    uint64_t ts = 77;
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EOF);
    assert_int_equal(ts, 77);
    assert_null(netdev_rx_error(dev));
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets + st.tx_packets + st.rx_bytes + st.tx_bytes,
                     0);
    netdev_close(dev);
}

static void test_burst_limit(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy((const char *const[]){"burst=4", NULL});
    for (int i = 0; i < 10; i++)
        assert_int_equal(netdev_dummy_inject(dev, 0, mk_pkt((uint8_t)i, 0)), 0);
    assert_int_equal(netdev_dummy_rx_pending(dev, 0), 10);

    struct pkt_batch b;
    int expect[] = {4, 4, 2, 0};
    uint8_t next = 0;
    for (int r = 0; r < 4; r++) {
        pkt_batch_init(&b);
        assert_int_equal(rx_burst(dev, 0, &b, 100), expect[r]);
        assert_int_equal(b.count, expect[r]);
        for (int i = 0; i < b.count; i++)
            assert_int_equal(tag_of(b.pkts[i]), next++);
        pkt_batch_free(&b);
    }
    assert_int_equal(netdev_dummy_rx_pending(dev, 0), 0);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets, 10);
    assert_int_equal(st.rx_bytes, 600);
    netdev_close(dev);
}

/* The rx verdict accounting (pkt_rx_acc_*): a batch of GOOD and UNKNOWN
 * packets counts its GOOD ones and says GOOD; a batch with BAD and
 * PARTIAL ones counts per packet (BAD wins over GOOD, PARTIAL alone is no
 * verdict) and ORs every kind; an all-UNKNOWN batch says nothing. */
static void test_rx_verdict_accounting(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy((const char *const[]){NULL});
    static const uint8_t st[3][5][2] = {
        {{CSUM_GOOD, CSUM_GOOD}, {0, 0}, {0, CSUM_GOOD}, {0, 0}, {CSUM_GOOD, 0}},
        {{CSUM_GOOD, CSUM_BAD}, {0, CSUM_PARTIAL}, {CSUM_GOOD, 0}, {0, 0}, {CSUM_BAD, 0}},
        {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}},
    };
    static const uint16_t want_flags[3] = {
        PKT_BATCH_F_GOOD, PKT_BATCH_F_GOOD | PKT_BATCH_F_BAD | PKT_BATCH_F_PARTIAL, 0};
    static const uint64_t want_good[3] = {3, 4, 4}, want_bad[3] = {0, 2, 2};
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < 5; i++) {
            struct pkt *p = mk_pkt((uint8_t)i, 0);
            p->csum[CSUM_L_OUTER_IP] = st[r][i][0];
            p->csum[CSUM_L_OUTER_L4] = st[r][i][1];
            assert_int_equal(netdev_dummy_inject(dev, 0, p), 0);
        }
        struct pkt_batch b;
        pkt_batch_init(&b);
        assert_int_equal(rx_burst(dev, 0, &b, 100), 5);
        assert_int_equal(b.flags, want_flags[r]);
        struct netdev_stats ns;
        netdev_get_stats(dev, &ns);
        assert_int_equal(ns.rx_csum_good, want_good[r]);
        assert_int_equal(ns.rx_csum_bad, want_bad[r]);
        pkt_batch_free(&b);
    }
    netdev_close(dev);
}

static void test_burst_default_and_batch_room(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    for (int i = 0; i < 40; i++)
        netdev_dummy_inject(dev, 0, mk_pkt((uint8_t)i, 0));
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, 0, &b, 0), 32);
    assert_int_equal(tag_of(b.pkts[31]), 31);
    /* Appends only into the room left in the batch. */
    pkt_free(b.pkts[30]);
    pkt_free(b.pkts[31]);
    b.count = 30;
    assert_int_equal(rx_burst(dev, 0, &b, 0), 2);
    assert_int_equal(b.count, 32);
    assert_int_equal(tag_of(b.pkts[30]), 32);
    assert_int_equal(tag_of(b.pkts[31]), 33);
    assert_int_equal(rx_burst(dev, 0, &b, 0), 0); /* full batch */
    pkt_batch_free(&b);
    assert_int_equal(netdev_dummy_rx_pending(dev, 0), 6);
    netdev_close(dev); /* frees the 6 still queued */
}

static void test_burst_one(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy((const char *const[]){"burst=1", NULL});
    netdev_dummy_inject(dev, 0, mk_pkt(1, 0));
    netdev_dummy_inject(dev, 0, mk_pkt(2, 0));
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, 0, &b, 0), 1);
    assert_int_equal(rx_burst(dev, 0, &b, 0), 1);
    assert_int_equal(b.count, 2);
    assert_int_equal(tag_of(b.pkts[1]), 2);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_ts_gating_and_peek(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    netdev_dummy_inject(dev, 0, mk_pkt(1, 10));
    netdev_dummy_inject(dev, 0, mk_pkt(2, 20));
    netdev_dummy_inject(dev, 0, mk_pkt(3, 30));
    struct pkt_batch b;
    pkt_batch_init(&b);
    uint64_t ts = 0;

    assert_int_equal(rx_burst(dev, 0, &b, 5), 0);
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_READY);
    assert_int_equal(ts, 10);
    assert_int_equal(rx_burst(dev, 0, &b, 20), 2); /* ts <= now */
    assert_int_equal(b.pkts[0]->ts, 10);
    assert_int_equal(b.pkts[1]->ts, 20);
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_READY);
    assert_int_equal(ts, 30);
    assert_int_equal(rx_burst(dev, 0, &b, 29), 0);
    assert_int_equal(rx_burst(dev, 0, &b, 1000), 1);
    assert_int_equal(tag_of(b.pkts[2]), 3);
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EOF);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_injection_order_head_blocks(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    netdev_dummy_inject(dev, 0, mk_pkt(1, 50));
    netdev_dummy_inject(dev, 0, mk_pkt(2, 10));
    struct pkt_batch b;
    pkt_batch_init(&b);
    /* The head (ts 50) holds back the later-injected ts-10 packet. */
    assert_int_equal(rx_burst(dev, 0, &b, 20), 0);
    uint64_t ts;
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_READY);
    assert_int_equal(ts, 50);
    assert_int_equal(rx_burst(dev, 0, &b, 50), 2);
    assert_int_equal(tag_of(b.pkts[0]), 1);
    assert_int_equal(tag_of(b.pkts[1]), 2);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_live_peek_empty(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    uint64_t ts = 0;
    assert_int_equal(netdev_dummy_set_live(dev, true), 0);
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EMPTY);
    netdev_dummy_inject(dev, 0, mk_pkt(1, 42));
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_READY);
    assert_int_equal(ts, 42);
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, 0, &b, 42), 1);
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EMPTY);
    assert_int_equal(netdev_dummy_set_live(dev, false), 0);
    assert_int_equal(netdev_rxq_peek(dev, 0, &ts), NETDEV_RX_EOF);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_multi_queue(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(
        (const char *const[]){"rxqs=3", "txqs=2", "tx-keep=true", NULL});
    assert_int_equal(dev->class->n_rxq(dev), 3);
    assert_int_equal(dev->class->n_txq(dev), 2);
    assert_int_equal(netdev_dummy_inject(dev, 2, mk_pkt(9, 0)), 0);
    assert_int_equal(netdev_dummy_inject(dev, 3, mk_pkt(9, 0)), -EINVAL);
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, 0, &b, 0), 0);
    assert_int_equal(rx_burst(dev, 1, &b, 0), 0);
    assert_int_equal(rx_burst(dev, 2, &b, 0), 1);
    assert_int_equal(rx_burst(dev, 3, &b, 0), 0); /* no such queue */
    uint64_t ts;
    assert_int_equal(netdev_rxq_peek(dev, 2, &ts), NETDEV_RX_EOF);

    struct pkt *p = b.pkts[0];
    assert_int_equal(send_pkts(dev, 1, &p, 1), 1);
    assert_int_equal(netdev_dummy_tx_pending(dev, 0), 0);
    assert_int_equal(netdev_dummy_tx_pending(dev, 1), 1);
    struct pkt *q = mk_pkt(5, 0);
    assert_int_equal(send_pkts(dev, 2, &q, 1), -EINVAL); /* no such txq */
    pkt_free(q);
    struct pkt *out[4];
    assert_int_equal(netdev_dummy_collect(dev, 0, out, 4), 0);
    assert_int_equal(netdev_dummy_collect(dev, 1, out, 4), 1);
    assert_ptr_equal(out[0], p);
    assert_int_equal(netdev_dummy_collect(dev, 2, out, 4), -EINVAL);
    pkt_free(out[0]);
    netdev_close(dev);
}

static void test_tx_accept_partial(void **state)
{
    (void)state;
    struct netdev *dev =
        open_dummy((const char *const[]){"tx-accept=3", "tx-keep=yes", NULL});
    struct pkt *pkts[5];
    for (int i = 0; i < 5; i++)
        pkts[i] = mk_pkt((uint8_t)i, 0);
    assert_int_equal(send_pkts(dev, 0, pkts, 5), 3);
    /* The port owns the prefix it took; the rest is still ours. */
    assert_int_equal(send_pkts(dev, 0, pkts + 3, 2), 2);
    assert_int_equal(netdev_dummy_set_tx_accept(dev, 1), 0);
    struct pkt *more[3] = {mk_pkt(10, 0), mk_pkt(11, 0), mk_pkt(12, 0)};
    assert_int_equal(send_pkts(dev, 0, more, 3), 1);
    assert_int_equal(netdev_dummy_set_tx_accept(dev, -1), 0);
    assert_int_equal(send_pkts(dev, 0, more + 1, 2), 2);
    assert_int_equal(netdev_dummy_set_tx_accept(dev, -2), -EINVAL);

    assert_int_equal(netdev_dummy_send_calls(dev), 4);
    struct netdev_dummy_send_rec log[8];
    assert_int_equal(netdev_dummy_send_log(dev, log, 8), 4);
    int offered[] = {5, 2, 3, 2}, accepted[] = {3, 2, 1, 2};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(log[i].qid, 0);
        assert_int_equal(log[i].offered, offered[i]);
        assert_int_equal(log[i].accepted, accepted[i]);
    }
    /* Only the most recent two, oldest first. */
    assert_int_equal(netdev_dummy_send_log(dev, log, 2), 2);
    assert_int_equal(log[0].accepted, 1);
    assert_int_equal(log[1].offered, 2);

    struct pkt *out[16];
    assert_int_equal(netdev_dummy_collect(dev, 0, out, 16), 8);
    uint8_t want[] = {0, 1, 2, 3, 4, 10, 11, 12};
    for (int i = 0; i < 8; i++)
        assert_int_equal(tag_of(out[i]), want[i]);
    free_pkts(out, 8);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.tx_packets, 8);
    assert_int_equal(st.tx_bytes, 480);
    assert_int_equal(st.tx_dropped, 0);
    netdev_close(dev);
}

static void test_tx_stall(void **state)
{
    (void)state;
    const char *const *variants[] = {
        (const char *const[]){"tx-stall=true", NULL},
        (const char *const[]){"tx-accept=0", NULL},
        (const char *const[]){"tx-accept=7", "tx-stall=on", NULL},
    };
    for (size_t v = 0; v < 3; v++) {
        struct netdev *dev = open_dummy(variants[v]);
        struct pkt *p[2] = {mk_pkt(1, 0), mk_pkt(2, 0)};
        assert_int_equal(send_pkts(dev, 0, p, 2), 0);
        assert_int_equal(send_pkts(dev, 0, p, 2), 0);
        assert_int_equal(netdev_dummy_send_calls(dev), 2);
        struct netdev_stats st;
        netdev_get_stats(dev, &st);
        assert_int_equal(st.tx_packets, 0);
        /* Un-stalling makes the same packets go. */
        netdev_dummy_set_tx_accept(dev, -1);
        assert_int_equal(send_pkts(dev, 0, p, 2), 2);
        netdev_close(dev);
    }
    /* And the hook can stall a running port. */
    struct netdev *dev = open_dummy(NULL);
    netdev_dummy_set_tx_accept(dev, 0);
    struct pkt *p = mk_pkt(1, 0);
    assert_int_equal(send_pkts(dev, 0, &p, 1), 0);
    pkt_free(p);
    netdev_close(dev);
}

static void test_link_down(void **state)
{
    (void)state;
    struct netdev *dev =
        open_dummy((const char *const[]){"link=down", "tx-keep=1", NULL});
    assert_false(netdev_link_up(dev));
    struct pkt *p[2] = {mk_pkt(1, 0), mk_pkt(2, 0)};
    assert_int_equal(send_pkts(dev, 0, p, 2), -ENETDOWN);
    assert_int_equal(netdev_dummy_tx_pending(dev, 0), 0);
    struct netdev_dummy_send_rec log[1];
    assert_int_equal(netdev_dummy_send_log(dev, log, 1), 1);
    assert_int_equal(log[0].accepted, -ENETDOWN);
    assert_int_equal(netdev_dummy_set_link(dev, true), 0);
    assert_true(netdev_link_up(dev));
    assert_int_equal(send_pkts(dev, 0, p, 2), 2);
    assert_int_equal(netdev_dummy_set_link(dev, false), 0);
    assert_false(netdev_link_up(dev));
    struct pkt *q = mk_pkt(3, 0);
    assert_int_equal(send_pkts(dev, 0, &q, 1), -ENETDOWN);
    pkt_free(q);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.tx_packets, 2);
    assert_int_equal(netdev_dummy_send_calls(dev), 3);
    netdev_close(dev); /* frees the 2 kept packets */

    dev = open_dummy((const char *const[]){"link=up", NULL});
    assert_true(netdev_link_up(dev));
    netdev_close(dev);
}

static void test_keep_collect_order(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    /* Default: counted and freed (valgrind proves the free). */
    struct pkt *p[3] = {mk_pkt(1, 0), mk_pkt(2, 0), mk_pkt(3, 0)};
    assert_int_equal(send_pkts(dev, 0, p, 3), 3);
    assert_int_equal(netdev_dummy_tx_pending(dev, 0), 0);
    struct pkt *out[40];
    assert_int_equal(netdev_dummy_collect(dev, 0, out, 40), 0);

    assert_int_equal(netdev_dummy_set_tx_keep(dev, true), 0);
    /* More than the FIFO's first allocation, across several calls. */
    uint8_t tag = 0;
    for (int call = 0; call < 5; call++) {
        struct pkt *batch[20];
        for (int i = 0; i < 20; i++)
            batch[i] = mk_pkt(tag++, 0);
        assert_int_equal(send_pkts(dev, 0, batch, 20), 20);
    }
    assert_int_equal(netdev_dummy_tx_pending(dev, 0), 100);
    uint8_t want = 0;
    for (int round = 0; round < 3; round++) {
        int n = netdev_dummy_collect(dev, 0, out, 40);
        assert_int_equal(n, round < 2 ? 40 : 20);
        for (int i = 0; i < n; i++)
            assert_int_equal(tag_of(out[i]), want++);
        free_pkts(out, n);
    }
    assert_int_equal(netdev_dummy_collect(dev, 0, out, 40), 0);
    /* Turning keep off leaves nothing behind either. */
    netdev_dummy_set_tx_keep(dev, false);
    struct pkt *q = mk_pkt(9, 0);
    assert_int_equal(send_pkts(dev, 0, &q, 1), 1);
    assert_int_equal(netdev_dummy_tx_pending(dev, 0), 0);
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.tx_packets, 104);
    assert_int_equal(st.tx_bytes, 104 * 60);
    netdev_close(dev);
}

static void test_send_log_wraps(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    for (int i = 0; i < 300; i++) {
        struct pkt *pkts[3];
        int n = i % 3 + 1;
        for (int k = 0; k < n; k++)
            pkts[k] = mk_pkt(0, 0);
        assert_int_equal(send_pkts(dev, 0, pkts, n), n);
    }
    assert_int_equal(netdev_dummy_send_calls(dev), 300);
    static struct netdev_dummy_send_rec log[NETDEV_DUMMY_SEND_LOG + 10];
    int n = netdev_dummy_send_log(dev, log, NETDEV_DUMMY_SEND_LOG + 10);
    assert_int_equal(n, NETDEV_DUMMY_SEND_LOG);
    for (int i = 0; i < n; i++) {
        int call = 300 - NETDEV_DUMMY_SEND_LOG + i;
        assert_int_equal(log[i].offered, call % 3 + 1);
        assert_int_equal(log[i].accepted, call % 3 + 1);
    }
    netdev_close(dev);
}

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void test_tx_cost(void **state)
{
    (void)state;
    /* A lower bound only: the port must spend at least the cost per call. */
    struct netdev *dev =
        open_dummy((const char *const[]){"tx-cost-ns=200000", NULL});
    struct pkt *p[2] = {mk_pkt(1, 0), mk_pkt(2, 0)};
    uint64_t t0 = mono_ns();
    assert_int_equal(send_pkts(dev, 0, p, 1), 1);
    assert_int_equal(send_pkts(dev, 0, p + 1, 1), 1);
    assert_true(mono_ns() - t0 >= 400000);
    netdev_close(dev);
}

static void test_inject_metadata(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(NULL);
    struct pkt *p = mk_pkt(1, 123);
    p->hash = 0x1234;
    p->in_port = 7;
    p->l3_ofs = 14;
    p->flags = PKT_F_PARSED | PKT_F_L4 | PKT_F_VNET_CSUM | PKT_F_TRUNCATED;
    p->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
    p->csum[CSUM_L_OUTER_IP] = CSUM_GOOD;
    p->csum_start = 34;
    p->csum_offset = 6;
    assert_int_equal(netdev_dummy_inject(dev, 0, p), 0);
    struct pkt_batch b;
    pkt_batch_init(&b);
    assert_int_equal(rx_burst(dev, 0, &b, 200), 1);
    struct pkt *r = b.pkts[0];
    assert_ptr_equal(r, p);
    assert_int_equal(r->ts, 123);
    assert_int_equal(r->hash, 0);
    assert_int_equal(r->in_port, 0);
    assert_int_equal(r->l3_ofs, PKT_OFS_NONE);
    assert_int_equal(r->flags, PKT_F_VNET_CSUM | PKT_F_TRUNCATED);
    assert_int_equal(r->csum[CSUM_L_OUTER_L4], CSUM_PARTIAL);
    assert_int_equal(r->csum[CSUM_L_OUTER_IP], CSUM_GOOD);
    assert_int_equal(r->csum[CSUM_L_INNER_L4], CSUM_UNKNOWN);
    assert_int_equal(r->csum_start, 34);
    assert_int_equal(r->csum_offset, 6);
    pkt_batch_free(&b);
    netdev_close(dev);
}

static void test_option_errors(void **state)
{
    (void)state;
    static const struct {
        const char *kv;
        const char *want;
    } bad[] = {
        {"burst=0", "'burst'"},
        {"burst=33", "'burst'"},
        {"burst=abc", "'burst'"},
        {"burst=", "'burst'"},
        {"rxqs=0", "'rxqs'"},
        {"rxqs=65", "'rxqs'"},
        {"txqs=0", "'txqs'"},
        {"txqs=100", "'txqs'"},
        {"tx-accept=-1", "'tx-accept'"},
        {"tx-accept=3x", "'tx-accept'"},
        {"tx-stall=maybe", "'tx-stall'"},
        {"tx-cost-ns=fast", "'tx-cost-ns'"},
        {"tx-cost-ns=2000000000", "'tx-cost-ns'"},
        {"tx-keep=2", "'tx-keep'"},
        {"link=sideways", "'link'"},
        {"link=", "'link'"},
        {"bogus=1", "'bogus'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_open_error((const char *const[]){bad[i].kv, NULL}, bad[i].want,
                          NULL);
    /* The message also tells the valid range / words. */
    expect_open_error((const char *const[]){"burst=99", NULL}, "1..32", NULL);
    expect_open_error((const char *const[]){"link=x", NULL}, "up or down",
                      NULL);
    /* A bad option after good ones is still reported. */
    expect_open_error(
        (const char *const[]){"burst=8", "rxqs=2", "txqs=x", NULL}, "'txqs'",
        NULL);
    /* The boundaries themselves are accepted. */
    struct netdev *dev = open_dummy(
        (const char *const[]){"burst=32", "rxqs=64", "txqs=64", "tx-accept=0",
                              "tx-cost-ns=0", "link=down", NULL});
    assert_int_equal(dev->class->n_rxq(dev), 64);
    assert_int_equal(dev->class->n_txq(dev), 64);
    netdev_close(dev);
}

static void test_caps(void **state)
{
    (void)state;
    char err[128];
    uint32_t want =
        NETDEV_TX_IP_CSUM | NETDEV_TX_GUEST_CSUM | NETDEV_RX_L4_CSUM;
    struct netdev *dev = open_dummy_caps(NULL, true, want, err, sizeof err);
    assert_non_null(dev);
    struct netdev_caps caps;
    netdev_get_caps(dev, &caps);
    assert_int_equal(caps.flags, want);
    netdev_close(dev);
    /* caps given but not set: ignored. */
    dev = open_dummy_caps(NULL, false, want, err, sizeof err);
    assert_non_null(dev);
    netdev_get_caps(dev, &caps);
    assert_int_equal(caps.flags, 0);
    netdev_close(dev);
}

static void test_hooks_reject_other_ports(void **state)
{
    (void)state;
    static const struct netdev_class other = {.type = "other"};
    struct netdev fake = {.class = &other, .priv = NULL};
    struct pkt *out[1];
    /* Ownership passes even on failure: valgrind checks the free. */
    assert_int_equal(netdev_dummy_inject(&fake, 0, mk_pkt(1, 0)), -EINVAL);
    assert_int_equal(netdev_dummy_inject(NULL, 0, mk_pkt(1, 0)), -EINVAL);
    assert_int_equal(netdev_dummy_collect(&fake, 0, out, 1), -EINVAL);
    assert_int_equal(netdev_dummy_set_tx_accept(&fake, 1), -EINVAL);
    assert_int_equal(netdev_dummy_set_link(&fake, true), -EINVAL);
    assert_int_equal(netdev_dummy_set_live(&fake, true), -EINVAL);
    assert_int_equal(netdev_dummy_set_tx_keep(&fake, true), -EINVAL);
    assert_int_equal(netdev_dummy_send_calls(&fake), 0);
    assert_int_equal(netdev_dummy_rx_pending(&fake, 0), 0);
    assert_int_equal(netdev_dummy_tx_pending(&fake, 0), 0);
    struct netdev_dummy_send_rec log[1];
    assert_int_equal(netdev_dummy_send_log(&fake, log, 1), -EINVAL);
}

static void test_close_frees_queued(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy(
        (const char *const[]){"rxqs=2", "txqs=2", "tx-keep=true", NULL});
    for (int i = 0; i < 70; i++)
        netdev_dummy_inject(dev, (unsigned)i % 2, mk_pkt((uint8_t)i, 0));
    struct pkt *p[2] = {mk_pkt(1, 0), mk_pkt(2, 0)};
    assert_int_equal(send_pkts(dev, 1, p, 2), 2);
    assert_int_equal(netdev_dummy_rx_pending(dev, 0), 35);
    assert_int_equal(netdev_dummy_rx_pending(dev, 1), 35);
    netdev_close(dev); /* valgrind: no leak */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_burst_limit),
        cmocka_unit_test(test_rx_verdict_accounting),
        cmocka_unit_test(test_burst_default_and_batch_room),
        cmocka_unit_test(test_burst_one),
        cmocka_unit_test(test_ts_gating_and_peek),
        cmocka_unit_test(test_injection_order_head_blocks),
        cmocka_unit_test(test_live_peek_empty),
        cmocka_unit_test(test_multi_queue),
        cmocka_unit_test(test_tx_accept_partial),
        cmocka_unit_test(test_tx_stall),
        cmocka_unit_test(test_link_down),
        cmocka_unit_test(test_keep_collect_order),
        cmocka_unit_test(test_send_log_wraps),
        cmocka_unit_test(test_tx_cost),
        cmocka_unit_test(test_inject_metadata),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_hooks_reject_other_ports),
        cmocka_unit_test(test_close_frees_queued),
    };
    return cmocka_run_group_tests_name("dummy", tests, dummy_group_setup, dummy_group_teardown);
}
