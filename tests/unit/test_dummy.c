/* test_dummy.c: the in-memory "dummy" backend. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/dummy/netdev-dummy.h"
#include "netdev-provider.h"
#include "packet.h"
#include "helpers/csum_ref.h"
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

/* The rx verdict accounting (dummy_rx_verdicts, pkt_rx_classify): a batch of GOOD and UNKNOWN
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
    struct pkt *big = mk_pkt(9, 0); /* a frame no device delivers */
    big->len = PKT_BUF_MAX + 1;
    assert_int_equal(netdev_dummy_inject(dev, 2, big), -EMSGSIZE);
    assert_int_equal(netdev_dummy_rx_pending(dev, 2), 1);
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
    q = mk_pkt(6, 0);
    assert_int_equal(send_pkts(dev, 0, &q, 1), 1);
    /* Counted per queue (one writer each), added up by get_stats. */
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    assert_int_equal(st.rx_packets, 1);
    assert_int_equal(st.tx_packets, 2);
    assert_int_equal(st.tx_bytes, 2 * (uint64_t)p->len);
    assert_int_equal(netdev_dummy_collect(dev, 0, &q, 1), 1);
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

/* A tx budget caps what a queue takes over all calls until it is set
 * again; the other queue and tx-accept still apply. */
static void test_tx_budget(void **state)
{
    (void)state;
    struct netdev *dev = open_dummy((const char *const[]){"txqs=2", "tx-accept=4", NULL});
    struct pkt *pkts[6];
    for (int i = 0; i < 6; i++)
        pkts[i] = mk_pkt((uint8_t)i, 0);
    assert_int_equal(netdev_dummy_set_tx_budget(dev, 0, 5), 0);
    assert_int_equal(send_pkts(dev, 0, pkts, 3), 3);     /* budget 5 -> 2 */
    assert_int_equal(send_pkts(dev, 0, pkts + 3, 3), 2); /* -> 0 */
    assert_int_equal(send_pkts(dev, 0, pkts + 5, 1), 0); /* full */
    assert_int_equal(send_pkts(dev, 1, pkts + 5, 1), 1); /* queue 1: unlimited */
    assert_int_equal(netdev_dummy_set_tx_budget(dev, 0, -1), 0);
    struct pkt *more[6];
    for (int i = 0; i < 6; i++)
        more[i] = mk_pkt((uint8_t)i, 0);
    assert_int_equal(send_pkts(dev, 0, more, 6), 4); /* tx-accept still 4 */
    free_pkts(more + 4, 2);
    assert_int_equal(netdev_dummy_set_tx_budget(dev, 2, 1), -EINVAL);
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

/* Integer options are decimal, as every number of the config is: a
 * leading zero is not octal and a 0x prefix, a sign or a blank is refused
 * with a message naming the option and its range. */
static void test_option_uint_decimal(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int rc;
        unsigned long want; /* if rc == 0 */
    } cases[] = {
        {"010", 0, 10},   {"0", 0, 0},       {"0009", 0, 9},   {"255", 0, 255},
        {"0x10", -1, 0},  {"0X10", -1, 0},   {"+5", -1, 0},    {"-0", -1, 0},
        {" 5", -1, 0},    {"5 ", -1, 0},     {"", -1, 0},      {"256", -1, 0},
        {"1e2", -1, 0},   {"99999999999999999999999", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct netdev_opt opt = {"tos", cases[i].value, 3};
        struct netdev_args args = {.opts = &opt, .n_opts = 1};
        unsigned long out = 12345;
        char err[128] = "";
        int rc = netdev_opt_uint(&args, "tos", 0, 255, &out, err, sizeof err);
        if (rc != cases[i].rc)
            fail_msg("'%s': rc %d, want %d", cases[i].value, rc, cases[i].rc);
        if (rc == 0) {
            assert_int_equal(out, cases[i].want);
        } else {
            char want[128];
            snprintf(want, sizeof want, "option 'tos': '%s' is not an integer in 0..255",
                     cases[i].value);
            assert_string_equal(err, want);
            assert_int_equal(out, 12345);
        }
    }
    /* Absent: 0, *out untouched. */
    struct netdev_opt other = {"ttl", "0x10", 1};
    struct netdev_args args = {.opts = &other, .n_opts = 1};
    unsigned long out = 7;
    assert_int_equal(netdev_opt_uint(&args, "tos", 0, 255, &out, NULL, 0), 0);
    assert_int_equal(out, 7);
    /* Through a backend: the dummy port's burst. */
    expect_open_error((const char *const[]){"burst=0x10", NULL},
                      "option 'burst': '0x10' is not an integer in 1..32", NULL);
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

/* ---- rx verdict property test -------------------------------------------- */

/* The rx path gathers the four state bytes of every packet of a burst
 * branch-free and settles the common case (GOOD and UNKNOWN only, every
 * GOOD layer GOOD in all packets) inline; test_rx_props checks that, for
 * random bursts, the batch flags and the rx_csum_good / rx_csum_bad
 * counters equal the plain per-packet definition. */

struct prop_rng {
    uint64_t s;
};

static uint64_t prop_next(struct prop_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* A number in [0, m). */
static unsigned prop_rnd(struct prop_rng *r, unsigned m)
{
    return (unsigned)((prop_next(r) >> 11) % m);
}

static bool prop_quick(void)
{
    const char *q = getenv("FS_TEST_QUICK");
    return q && strcmp(q, "1") == 0;
}

/* The reference classes of one packet from its four states: the batch
 * flags it contributes (a kind of state present) and its verdict (bad: a
 * layer BAD; good: a layer GOOD and none BAD). */
static void prop_classify(const uint8_t csum[CSUM_L_N], uint16_t *flags, bool *good,
                          bool *bad)
{
    bool g = false, b = false, p = false;
    for (int l = 0; l < CSUM_L_N; l++) {
        g |= csum[l] == CSUM_GOOD;
        b |= csum[l] == CSUM_BAD;
        p |= csum[l] == CSUM_PARTIAL;
    }
    *flags = (uint16_t)((g ? PKT_BATCH_F_GOOD : 0) | (b ? PKT_BATCH_F_BAD : 0) |
                        (p ? PKT_BATCH_F_PARTIAL : 0));
    *bad = b;
    *good = g && !b;
}

/* A 60-byte frame: IPv4/UDP 10.0.0.1:1234 -> 10.0.0.2:5678 with correct
 * checksums unless ip_bad / udp_bad, or (!ip) a non-IP frame (ethertype
 * 0x88b5). Payload bytes random. */
static struct pkt *prop_frame(struct prop_rng *r, bool ip, bool ip_bad, bool udp_bad)
{
    uint8_t f[60];
    memset(f, 0, sizeof f);
    memset(f, 0x02, 12);
    for (size_t i = 42; i < sizeof f; i++)
        f[i] = (uint8_t)prop_next(r);
    if (!ip) {
        p16(f + 12, 0x88b5);
    } else {
        uint8_t *iph = f + 14, *udp = f + 34;
        p16(f + 12, 0x0800);
        iph[0] = 0x45;
        p16(iph + 2, 46);
        iph[8] = 64;
        iph[9] = 17;
        static const uint8_t addrs[8] = {10, 0, 0, 1, 10, 0, 0, 2};
        memcpy(iph + 12, addrs, sizeof addrs);
        uint16_t ic = (uint16_t)~ref_fold(ref_sum(iph, 20));
        p16(iph + 10, ip_bad ? (uint16_t)(ic ^ 0x0101) : ic);
        p16(udp, 1234);
        p16(udp + 2, 5678);
        p16(udp + 4, 26);
        uint64_t s = ref_sum(addrs, sizeof addrs) + 17 + 26 + ref_sum(udp, 26);
        uint16_t uc = (uint16_t)~ref_fold(s);
        if (!uc)
            uc = 0xffff;
        if (udp_bad) /* wrong, and not 0 ("no checksum": GOOD over IPv4) */
            uc = (uint16_t)(uc ^ 0x0101) ? (uint16_t)(uc ^ 0x0101) : 0x1010;
        p16(udp + 6, uc);
    }
    struct pkt *p = pkt_from_data(f, sizeof f);
    assert_non_null(p);
    return p;
}

/* A queued packet as the test knows it. */
struct prop_rec {
    struct pkt *p;
    uint64_t ts;
    uint8_t want[CSUM_L_N]; /* its states after rxq_recv */
};

#define PROP_QMAX 96

struct prop_port {
    struct netdev *dev;
    unsigned id; /* for the messages */
    uint32_t caps; /* NETDEV_RX_* the port emulates */
    unsigned burst;
    uint64_t now;
    struct prop_rec q[PROP_QMAX]; /* the rx queue, head first */
    unsigned nq;
    uint64_t good, bad, packets, bytes; /* the counters it must show */
};

/* Injects a group of 1..40 packets whose states follow one pattern: all
 * UNKNOWN, the same GOOD layers in all, GOOD layers that differ between
 * packets (at random, or one packet missing one), the same GOOD layers
 * with a rare BAD or PARTIAL layer (at random, or one in one packet), the
 * same random states in all, or anything. Some rx times lie ahead of now.
 * Records in pp->q the states each packet must carry after rxq_recv: as
 * injected, plus the verdicts an emulating port sets on UNKNOWN outer
 * layers of IPv4/UDP frames. */
static void prop_inject_group(struct prop_rng *r, struct prop_port *pp)
{
    static const uint8_t kinds[14] = {0, 0, 1, 1, 1, 2, 3, 3, 4, 5, 6, 6, 7, 7};
    unsigned kind = kinds[prop_rnd(r, 14)];
    unsigned n = 1 + prop_rnd(r, 40);
    if (n > PROP_QMAX - pp->nq)
        n = PROP_QMAX - pp->nq;
    unsigned mask = 1 + prop_rnd(r, 15); /* the GOOD layers of kinds 1, 3, 4 */
    unsigned odd = prop_rnd(r, n), odd_l; /* kind 3: packet odd lacks 'drop' */
    do
        odd_l = prop_rnd(r, CSUM_L_N);
    while (!(mask >> odd_l & 1));
    unsigned drop = prop_rnd(r, 4) ? 1u << odd_l : mask;
    /* kind 6: packet odd has layer spoil_l BAD or PARTIAL */
    unsigned spoil_l = prop_rnd(r, CSUM_L_N);
    uint8_t spoil = prop_rnd(r, 2) ? CSUM_BAD : CSUM_PARTIAL;
    uint8_t same[CSUM_L_N]; /* kind 7: these states in every packet */
    for (unsigned l = 0; l < CSUM_L_N; l++)
        same[l] = (uint8_t)prop_rnd(r, 4);
    bool future = prop_rnd(r, 4) == 0;
    /* The frames (what an emulating port verifies): non-IP, IPv4/UDP with
     * correct checksums, with a rare wrong one, or a mix of all. */
    unsigned frames = prop_rnd(r, 4);
    for (unsigned i = 0; i < n; i++) {
        uint8_t st[CSUM_L_N];
        for (unsigned l = 0; l < CSUM_L_N; l++) {
            bool in_mask = mask >> l & 1;
            switch (kind) {
            case 0:
                st[l] = CSUM_UNKNOWN;
                break;
            case 1:
                st[l] = in_mask ? CSUM_GOOD : CSUM_UNKNOWN;
                break;
            case 2:
                st[l] = (uint8_t)prop_rnd(r, 2);
                break;
            case 3: /* one GOOD layer (or all) missing in packet 'odd' */
                st[l] = in_mask && !(i == odd && (drop >> l & 1)) ? CSUM_GOOD : CSUM_UNKNOWN;
                break;
            case 4:
                st[l] = in_mask ? CSUM_GOOD : CSUM_UNKNOWN;
                if (prop_rnd(r, 16) == 0)
                    st[l] = prop_rnd(r, 2) ? CSUM_BAD : CSUM_PARTIAL;
                break;
            case 6:
                st[l] = i == odd && l == spoil_l ? spoil : in_mask ? CSUM_GOOD : CSUM_UNKNOWN;
                break;
            case 7:
                st[l] = same[l];
                break;
            default:
                st[l] = (uint8_t)prop_rnd(r, 4);
                break;
            }
        }
        bool ip = frames == 1 || frames == 2 || (frames == 3 && prop_rnd(r, 4));
        unsigned odds = frames == 3 ? 4 : frames == 2 ? 16 : 0; /* 1 in odds wrong */
        bool ip_bad = odds && !prop_rnd(r, odds), udp_bad = odds && !prop_rnd(r, odds);
        struct pkt *p = prop_frame(r, ip, ip_bad, udp_bad);
        struct prop_rec *rec = &pp->q[pp->nq++];
        p->ts = future && prop_rnd(r, 3) == 0 ? pp->now + 1 + prop_rnd(r, 6)
                                               : pp->now - prop_rnd(r, 3);
        memcpy(p->csum, st, sizeof st);
        rec->p = p;
        rec->ts = p->ts;
        memcpy(rec->want, st, sizeof st);
        /* The verdicts an emulating port adds on UNKNOWN outer layers. */
        if (ip && (pp->caps & NETDEV_RX_IP_CSUM) && st[CSUM_L_OUTER_IP] == CSUM_UNKNOWN)
            rec->want[CSUM_L_OUTER_IP] = ip_bad ? CSUM_BAD : CSUM_GOOD;
        if (ip && (pp->caps & NETDEV_RX_L4_CSUM) && st[CSUM_L_OUTER_L4] == CSUM_UNKNOWN)
            rec->want[CSUM_L_OUTER_L4] = udp_bad ? CSUM_BAD : CSUM_GOOD;
        assert_int_equal(netdev_dummy_inject(pp->dev, 0, p), 0);
    }
}

/* One rxq_recv into a batch that may already hold packets (random states,
 * random flags), checked against the reference. */
static void prop_recv_once(struct prop_rng *r, struct prop_port *pp, unsigned it)
{
    struct pkt_batch b;
    pkt_batch_init(&b);
    unsigned pre = prop_rnd(r, 3) ? 0 : prop_rnd(r, PKT_BATCH_MAX + 1);
    for (unsigned i = 0; i < pre; i++) {
        struct pkt *q = mk_pkt(0xee, 0);
        for (unsigned l = 0; l < CSUM_L_N; l++)
            q->csum[l] = (uint8_t)prop_rnd(r, 4); /* not to be counted */
        pkt_batch_add(&b, q);
    }
    const uint16_t flags0 = (uint16_t)prop_rnd(r, 8);
    b.flags = flags0;

    /* The reference: the due packets at the head, at most burst and room. */
    unsigned n = 0, room = PKT_BATCH_MAX - pre;
    while (n < pp->nq && n < pp->burst && n < room && pp->q[n].ts <= pp->now)
        n++;
    uint16_t want_flags = flags0;
    uint64_t bytes = 0;
    for (unsigned i = 0; i < n; i++) {
        uint16_t f;
        bool good, bad;
        prop_classify(pp->q[i].want, &f, &good, &bad);
        want_flags |= f;
        pp->good += good;
        pp->bad += bad;
        bytes += pp->q[i].p->len;
    }
    pp->packets += n;
    pp->bytes += bytes;

    int got = rx_burst(pp->dev, 0, &b, pp->now);
    struct netdev_stats ns;
    netdev_get_stats(pp->dev, &ns);
    if (got != (int)n || b.count != pre + n)
        fail_msg("port %u it %u burst %u caps %#x pre %u now %llu: got %d (count %u), want %u",
                 pp->id, it, pp->burst, pp->caps, pre, (unsigned long long)pp->now, got,
                 b.count, n);
    for (unsigned i = 0; i < n; i++) {
        const struct pkt *p = b.pkts[pre + i];
        if (p != pp->q[i].p || memcmp(p->csum, pp->q[i].want, CSUM_L_N))
            fail_msg("port %u it %u burst %u caps %#x: packet %u is not the queued one or "
                     "its states %u%u%u%u are not %u%u%u%u", pp->id, it, pp->burst, pp->caps, i,
                     p->csum[0], p->csum[1], p->csum[2], p->csum[3], pp->q[i].want[0],
                     pp->q[i].want[1], pp->q[i].want[2], pp->q[i].want[3]);
    }
    if (b.flags != want_flags || ns.rx_csum_good != pp->good || ns.rx_csum_bad != pp->bad ||
        ns.rx_packets != pp->packets || ns.rx_bytes != pp->bytes)
        fail_msg("port %u it %u burst %u caps %#x pre %u n %u: flags %#x want %#x, good %llu "
                 "want %llu, bad %llu want %llu, packets %llu want %llu, bytes %llu want %llu",
                 pp->id, it, pp->burst, pp->caps, pre, n, b.flags, want_flags,
                 (unsigned long long)ns.rx_csum_good, (unsigned long long)pp->good,
                 (unsigned long long)ns.rx_csum_bad, (unsigned long long)pp->bad,
                 (unsigned long long)ns.rx_packets, (unsigned long long)pp->packets,
                 (unsigned long long)ns.rx_bytes, (unsigned long long)pp->bytes);
    assert_int_equal(netdev_dummy_rx_pending(pp->dev, 0), pp->nq - n);
    memmove(pp->q, pp->q + n, (pp->nq - n) * sizeof pp->q[0]);
    pp->nq -= n;
    pkt_batch_free(&b);
}

/* Ports of bursts 1..32 (fixed and random), without rx caps and with
 * each kind of rx verdict emulation, each fed random groups of packets and
 * polled a few hundred times with a clock that holds some packets back. */
static void test_rx_props(void **state)
{
    (void)state;
    static const uint32_t caps[4] = {0, NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM,
                                     NETDEV_RX_IP_CSUM, NETDEV_RX_L4_CSUM};
    static const unsigned bursts[] = {1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 0, 0, 0, 0, 0, 0};
    const unsigned n_ports = sizeof bursts / sizeof bursts[0];
    const unsigned iters = prop_quick() ? 1000 : 4000; /* rxq_recv calls in all */
    struct prop_rng r = {0x9e3779b97f4a7c15ull};
    for (unsigned port = 0; port < n_ports; port++) {
        struct prop_port pp;
        memset(&pp, 0, sizeof pp);
        pp.id = port;
        pp.burst = bursts[port] ? bursts[port] : 1 + prop_rnd(&r, PKT_BATCH_MAX);
        pp.caps = caps[port % 4];
        pp.now = 1000;
        char opt[32], err[256] = "";
        snprintf(opt, sizeof opt, "burst=%u", pp.burst);
        pp.dev = open_dummy_caps((const char *const[]){opt, NULL}, pp.caps != 0, pp.caps, err,
                                 sizeof err);
        if (!pp.dev)
            fail_msg("open failed: %s", err);
        for (unsigned it = 0; it < iters / n_ports; it++) {
            if (pp.nq < 2 * pp.burst + 8 && prop_rnd(&r, 8)) /* or let it drain */
                prop_inject_group(&r, &pp);
            prop_recv_once(&r, &pp, it);
            pp.now += prop_rnd(&r, 3);
        }
        netdev_close(pp.dev); /* frees what is still queued */
    }
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
        cmocka_unit_test(test_tx_budget),
        cmocka_unit_test(test_tx_stall),
        cmocka_unit_test(test_link_down),
        cmocka_unit_test(test_keep_collect_order),
        cmocka_unit_test(test_send_log_wraps),
        cmocka_unit_test(test_tx_cost),
        cmocka_unit_test(test_inject_metadata),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_option_uint_decimal),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_hooks_reject_other_ports),
        cmocka_unit_test(test_close_frees_queued),
        cmocka_unit_test(test_rx_props),
    };
    return cmocka_run_group_tests_name("dummy", tests, dummy_group_setup, dummy_group_teardown);
}
