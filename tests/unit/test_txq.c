/* test_txq.c: the transmit batch (src/txq.c), on a virtual clock.
 *
 * Times are plain uint64 'now' values passed in. Two kinds of ports:
 *   - a local fake netdev_class whose send behaviour is scripted per call
 *     (accept N, accept a scripted sequence, fail with -errno, link down)
 *     and which keeps what it accepted so order and ts can be checked;
 *   - the real dummy backend (tx-accept, tx-stall, tx-keep, link=down).
 * Packets come from a counting allocator, so every test also checks that
 * each packet was released exactly once. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dummy/netdev-dummy.h"
#include "drop.h"
#include "netdev-provider.h"
#include "packet.h"
#include "txq.h"

#define US 1000ull

/* ---- counting packets ------------------------------------------------- */

struct tpool {
    uint64_t allocated;
    uint64_t released;
    uint32_t next_seq;
};

struct tpkt {
    struct pkt pkt;
    uint8_t frame[128];
    struct tpool *pool;
    uint32_t seq;
    bool released;
};

static void tpkt_release(struct pkt *p)
{
    struct tpkt *t = p->owner;
    assert_false(t->released); /* released exactly once */
    t->released = true;
    t->pool->released++;
    free(t);
}

static const struct pkt_ops tpkt_ops = {.release = tpkt_release};

static struct pkt *tpkt_new(struct tpool *pool, uint32_t len)
{
    struct tpkt *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_true(len <= sizeof t->frame);
    t->pool = pool;
    t->seq = pool->next_seq++;
    t->pkt.buf = t->frame;
    t->pkt.data = t->frame;
    t->pkt.buf_size = sizeof t->frame;
    t->pkt.len = len;
    t->pkt.ops = &tpkt_ops;
    t->pkt.owner = t;
    t->pkt.ts = UINT64_MAX;
    memset(t->frame, (int)(t->seq & 0xff), len);
    pool->allocated++;
    return &t->pkt;
}

static uint32_t tpkt_seq(const struct pkt *p)
{
    return ((const struct tpkt *)p->owner)->seq;
}

/* ---- the fake port ---------------------------------------------------- */

#define FAKE_SCRIPT_MAX 64
#define FAKE_KEEP_MAX 4096
#define FAKE_CALLS_MAX 4096

struct fake_port {
    int accept;                  /* per call, -1 = all; used after the script */
    int error;                   /* != 0: every call fails with it (-errno) */
    int script[FAKE_SCRIPT_MAX]; /* per-call results: >= 0 accept, < 0 error */
    unsigned n_script, script_pos;
    bool link_up;
    bool keep;                   /* keep accepted packets (else free them) */
    struct pkt *kept[FAKE_KEEP_MAX];
    unsigned n_kept;
    unsigned calls;
    int offered[FAKE_CALLS_MAX], returned[FAKE_CALLS_MAX];
    int64_t last_seq;            /* order check when not keeping */
    uint64_t accepted_total, accepted_bytes;
    uint16_t last_summary;       /* 'summary' of the last send call */
};

static int fake_send(struct netdev *dev, unsigned qid, struct pkt **pkts,
                     int n, uint16_t summary)
{
    struct fake_port *f = dev->priv;
    (void)qid;
    f->last_summary = summary;
    assert_true(n > 0 && n <= PKT_BATCH_MAX); /* never called with nothing */
    int r;
    if (f->script_pos < f->n_script)
        r = f->script[f->script_pos++];
    else if (f->error)
        r = f->error;
    else
        r = f->accept < 0 || f->accept > n ? n : f->accept;
    if (r > n && r - n != 5) /* +5 is the "returns too many" test */
        r = n;
    if (f->calls < FAKE_CALLS_MAX) {
        f->offered[f->calls] = n;
        f->returned[f->calls] = r;
    }
    f->calls++;
    int acc = r < 0 ? 0 : (r > n ? n : r);
    for (int i = 0; i < acc; i++) {
        struct pkt *p = pkts[i];
        int64_t s = tpkt_seq(p);
        assert_true(s > f->last_seq); /* order kept */
        f->last_seq = s;
        f->accepted_total++;
        f->accepted_bytes += p->len;
        if (f->keep && f->n_kept < FAKE_KEEP_MAX)
            f->kept[f->n_kept++] = p;
        else
            pkt_free(p);
    }
    return r;
}

static bool fake_link_up(const struct netdev *dev)
{
    const struct fake_port *f = dev->priv;
    return f->link_up;
}

static const struct netdev_class fake_class = {
    .type = "txqfake",
    .send = fake_send,
    .tx_stamps = true,
    .link_up = fake_link_up,
};

/* The same port for a device whose send() does not read pkt->ts. */
static const struct netdev_class fake_class_nostamp = {
    .type = "txqfake-nostamp",
    .send = fake_send,
    .link_up = fake_link_up,
};

/* ---- fixture ---------------------------------------------------------- */

struct fx {
    struct tpool pool;
    struct fake_port fake;
    struct netdev dev;
    struct txq q;
    uint64_t enqueued; /* what the test handed to q */
};

static int fx_setup(void **state)
{
    struct fx *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->fake.accept = -1;
    x->fake.link_up = true;
    x->fake.keep = true;
    x->fake.last_seq = -1;
    x->dev.class = &fake_class;
    strcpy(x->dev.name, "fake0");
    x->dev.priv = &x->fake;
    txq_init(&x->q, &x->dev, 0, 8, 0);
    *state = x;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *x = *state;
    txq_purge(&x->q, DROP_tx_down);
    for (unsigned i = 0; i < x->fake.n_kept; i++)
        pkt_free(x->fake.kept[i]);
    assert_int_equal(x->pool.allocated, x->pool.released);
    free(x);
    return 0;
}

static uint64_t dropped_total(const struct txq *q)
{
    uint64_t t = 0;
    for (int i = 0; i < DROP_N_REASONS; i++)
        t += q->stats.dropped[i];
    return t;
}

/* enqueued = accepted + dropped + queued, the histograms agree with the
 * counters, and what the pool still holds is exactly what is queued or
 * kept by the port. */
static void check_conservation(const struct fx *x)
{
    const struct txq *q = &x->q;
    const struct txq_stats *st = &q->stats;
    assert_int_equal(x->enqueued, st->n[TXQ_STAT_PACKETS] + dropped_total(q) + txq_queued(q));
    uint64_t calls = 0, pk = 0;
    for (unsigned i = 0; i <= PKT_BATCH_MAX; i++) {
        calls += st->batch_hist[i];
        pk += (uint64_t)i * st->batch_hist[i];
    }
    assert_int_equal(calls, st->n[TXQ_STAT_SEND_CALLS]);
    assert_int_equal(pk, st->n[TXQ_STAT_PACKETS]);
    assert_int_equal(st->n[TXQ_STAT_PACKETS], x->fake.accepted_total);
    assert_int_equal(st->n[TXQ_STAT_BYTES], x->fake.accepted_bytes);
    assert_int_equal(x->pool.allocated - x->pool.released,
                     txq_queued(q) + x->fake.n_kept);
}

static void enq(struct fx *x, uint32_t len, uint64_t now)
{
    txq_enqueue(&x->q, tpkt_new(&x->pool, len), now);
    x->enqueued++;
}

static void enq_n(struct fx *x, unsigned n, uint64_t now)
{
    for (unsigned i = 0; i < n; i++)
        enq(x, 64, now);
}

/* ---- tests ------------------------------------------------------------ */

static void test_init(void **state)
{
    struct fx *x = *state;
    struct txq q;
    memset(&q, 0xa5, sizeof q);
    txq_init(&q, &x->dev, 3, 99, 50 * US);
    assert_ptr_equal(q.dev, &x->dev);
    assert_int_equal(q.qid, 3);
    assert_int_equal(q.retries, TXQ_MAX_RETRIES); /* clamped */
    assert_int_equal(q.interval_ns, 50 * US);
    assert_int_equal(txq_queued(&q), 0);
    assert_int_equal(q.stats.n[TXQ_STAT_PACKETS], 0);
    assert_int_equal(q.stats.wait_max_ns, 0);
    assert_int_equal(q.stats.batch_hist[PKT_BATCH_MAX], 0);
    assert_int_equal(q.stats.dropped[DROP_tx_full], 0);
    txq_init(&q, &x->dev, 0, 0, 0);
    assert_int_equal(q.retries, 0);
    /* an empty queue never calls the backend */
    txq_flush(&q, 5);
    assert_false(txq_flush_if_due(&q, 5));
    assert_int_equal(x->fake.calls, 0);
}

static void test_interval0_always_flushes(void **state)
{
    struct fx *x = *state;
    assert_false(txq_flush_if_due(&x->q, 0)); /* nothing queued */
    for (unsigned batch = 0; batch < 5; batch++) {
        uint64_t now = 1000 + batch * 7 * US;
        enq_n(x, 3 + batch, now);
        check_conservation(x);
        /* end of the rx batch, same 'now': everything leaves */
        assert_true(txq_flush_if_due(&x->q, now));
        assert_int_equal(txq_queued(&x->q), 0);
        assert_int_equal(x->fake.calls, batch + 1);
        assert_int_equal(x->fake.offered[batch], 3 + batch);
        assert_false(txq_flush_if_due(&x->q, now));
        check_conservation(x);
    }
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 5);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 0);
    /* nothing waited: every sample in bucket 0 */
    assert_int_equal(x->q.stats.wait_hist[0], 3 + 4 + 5 + 6 + 7);
    assert_int_equal(x->q.stats.wait_max_ns, 0);
}

static void test_interval_n(void **state)
{
    struct fx *x = *state;
    const uint64_t N = 50 * US, t0 = 1000000;
    x->q.interval_ns = N;
    enq(x, 64, t0);
    assert_int_equal(x->q.first_ns, t0);
    assert_false(txq_flush_if_due(&x->q, t0));
    enq(x, 64, t0 + 29 * US);
    assert_false(txq_flush_if_due(&x->q, t0 + 29 * US));
    assert_false(txq_flush_if_due(&x->q, t0 + N - 1));
    assert_false(txq_flush_if_due(&x->q, t0 - 1)); /* clock behind: not due */
    assert_int_equal(x->fake.calls, 0);
    check_conservation(x);
    assert_true(txq_flush_if_due(&x->q, t0 + N));
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->fake.offered[0], 2);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 2);
    /* waits 50 us (bucket 6: [32, 64) us) and 21 us (bucket 5: [16, 32)) */
    assert_int_equal(x->q.stats.wait_hist[6], 1);
    assert_int_equal(x->q.stats.wait_hist[5], 1);
    assert_int_equal(x->q.stats.wait_max_ns, N);
    /* the next packet starts a new deadline */
    enq(x, 64, t0 + 70 * US);
    assert_int_equal(x->q.first_ns, t0 + 70 * US);
    assert_false(txq_flush_if_due(&x->q, t0 + 119 * US));
    assert_true(txq_flush_if_due(&x->q, t0 + 120 * US));
    /* the interval can change at run time: 0 flushes at once */
    enq(x, 64, t0 + 200 * US);
    assert_false(txq_flush_if_due(&x->q, t0 + 200 * US));
    x->q.interval_ns = 0;
    assert_true(txq_flush_if_due(&x->q, t0 + 200 * US));
    assert_int_equal(x->fake.calls, 3);
    check_conservation(x);
}

/* A lone packet on an otherwise idle PMD whose poll loop runs every 'step'
 * ns: it leaves by first + N + one iteration. */
static void test_ping_within_bound(void **state)
{
    struct fx *x = *state;
    const uint64_t N = 50 * US, step = 7 * US;
    const uint64_t starts[] = {0, 3 * US, 6999, 123456789};
    x->q.interval_ns = N;
    for (unsigned k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        uint64_t now = starts[k] - starts[k] % step; /* iteration grid */
        uint64_t t_enq = starts[k];
        bool queued = false;
        unsigned calls0 = x->fake.calls;
        for (unsigned it = 0; it < 100 && (txq_queued(&x->q) || !queued); it++) {
            if (!queued && now + step > t_enq) { /* arrives in this iteration */
                enq(x, 64, now > t_enq ? now : t_enq);
                t_enq = now > t_enq ? now : t_enq;
                queued = true;
            }
            txq_flush_if_due(&x->q, now);
            check_conservation(x);
            if (txq_queued(&x->q))
                now += step;
        }
        assert_int_equal(txq_queued(&x->q), 0);
        assert_int_equal(x->fake.calls, calls0 + 1);
        struct pkt *p = x->fake.kept[x->fake.n_kept - 1];
        assert_true(p->ts >= t_enq + N);
        assert_true(p->ts <= t_enq + N + step);
    }
    assert_true(x->q.stats.wait_max_ns <= N + step);
}

static void test_full_flushes_on_33rd(void **state)
{
    struct fx *x = *state;
    x->q.interval_ns = 1000 * US;
    enq_n(x, PKT_BATCH_MAX, 100);
    assert_int_equal(txq_queued(&x->q), PKT_BATCH_MAX);
    assert_int_equal(x->fake.calls, 0);
    check_conservation(x);
    enq(x, 64, 200);
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->fake.offered[0], PKT_BATCH_MAX);
    assert_int_equal(txq_queued(&x->q), 1);
    assert_int_equal(x->q.first_ns, 200); /* the 33rd starts the next batch */
    /* the 32 left at the time of the 33rd enqueue */
    for (unsigned i = 0; i < PKT_BATCH_MAX; i++)
        assert_int_equal(x->fake.kept[i]->ts, 200);
    assert_int_equal(x->q.stats.batch_hist[PKT_BATCH_MAX], 1);
    check_conservation(x);
}

/* A device without tx_stamps gets its packets' ts untouched (the flush
 * makes no pass over them), with the same counters and wait samples. */
static void test_no_stamp_for_devices_that_ignore_ts(void **state)
{
    struct fx *x = *state;
    x->dev.class = &fake_class_nostamp;
    txq_init(&x->q, &x->dev, 0, 8, 0);
    assert_false(x->q.stamp);
    enq_n(x, 3, 100);
    enq_n(x, 2, 100 + 3 * US);
    txq_flush(&x->q, 100 + 5 * US);
    assert_int_equal(x->fake.n_kept, 5);
    for (unsigned i = 0; i < 5; i++)
        assert_true(x->fake.kept[i]->ts == UINT64_MAX); /* as allocated */
    assert_int_equal(x->q.stats.wait_hist[3], 3); /* 5 us: [4, 8) us */
    assert_int_equal(x->q.stats.wait_hist[2], 2); /* 2 us: [2, 4) us */
    assert_int_equal(x->q.stats.wait_max_ns, 5 * US);
    check_conservation(x);

    /* and the stamping class does stamp */
    x->dev.class = &fake_class;
    txq_init(&x->q, &x->dev, 0, 8, 0);
    assert_true(x->q.stamp);
    enq(x, 64, 7);
    txq_flush(&x->q, 9);
    assert_int_equal(x->fake.kept[5]->ts, 9);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 1); /* the new queue's counters */
}

/* txq_send_burst() on an empty queue: one call straight from the caller's
 * array, waits of 0, stamps, counters as enqueue + flush would make them;
 * more than a batch goes in PKT_BATCH_MAX chunks. */
static void test_send_burst_empty_queue(void **state)
{
    struct fx *x = *state;
    struct pkt *pk[PKT_BATCH_MAX + 8];
    for (unsigned i = 0; i < PKT_BATCH_MAX + 8; i++)
        pk[i] = tpkt_new(&x->pool, 60 + i);
    x->enqueued += PKT_BATCH_MAX + 8;
    txq_send_burst(&x->q, pk, PKT_BATCH_MAX + 8, TXQ_BYTES_UNKNOWN, 0, 500);
    assert_int_equal(txq_queued(&x->q), 0);
    assert_int_equal(x->fake.calls, 2);
    assert_int_equal(x->fake.offered[0], PKT_BATCH_MAX);
    assert_int_equal(x->fake.offered[1], 8);
    assert_int_equal(x->q.stats.wait_hist[0], PKT_BATCH_MAX + 8);
    assert_int_equal(x->q.stats.wait_max_ns, 0);
    for (unsigned i = 0; i < PKT_BATCH_MAX + 8; i++) {
        assert_ptr_equal(x->fake.kept[i], pk[i]); /* in order */
        assert_int_equal(x->fake.kept[i]->ts, 500);
    }
    check_conservation(x);
}

/* Behind queued packets it keeps the order: the queue leaves first, in the
 * same flush; a partial acceptance is retried and the rest dropped as
 * tx_full, exactly as for a flush. */
static void test_send_burst_behind_queue_and_drops(void **state)
{
    struct fx *x = *state;
    x->q.interval_ns = 1000 * US;
    enq_n(x, 3, 100);
    struct pkt *pk[4];
    for (unsigned i = 0; i < 4; i++)
        pk[i] = tpkt_new(&x->pool, 64);
    x->enqueued += 4;
    txq_send_burst(&x->q, pk, 4, TXQ_BYTES_UNKNOWN, 0, 100 + 2 * US);
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->fake.offered[0], 7);
    assert_ptr_equal(x->fake.kept[3], pk[0]);
    assert_int_equal(x->q.stats.wait_hist[2], 3); /* 2 us */
    assert_int_equal(x->q.stats.wait_hist[0], 4);
    check_conservation(x);

    x->q.retries = 1;
    x->fake.accept = 2; /* 2 per call, one retry: 4 of 6 go */
    struct pkt *more[6];
    for (unsigned i = 0; i < 6; i++)
        more[i] = tpkt_new(&x->pool, 64);
    x->enqueued += 6;
    txq_send_burst(&x->q, more, 6, 6 * 64, 0, 900);
    assert_int_equal(x->fake.calls, 3);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 1);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 2);
    assert_int_equal(txq_queued(&x->q), 0);
    check_conservation(x);
}

/* The send summary is the OR of what the enqueues declared: a burst's
 * summary as given, a single packet's PARTIAL state as found; a flush
 * starts over. */
static void test_send_summary(void **state)
{
    struct fx *x = *state;
    x->q.interval_ns = 1000 * US;
    enq_n(x, 2, 10); /* UNKNOWN packets */
    txq_flush(&x->q, 20);
    assert_int_equal(x->fake.last_summary, 0);

    struct pkt *p = tpkt_new(&x->pool, 64);
    p->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
    txq_enqueue(&x->q, p, 30);
    x->enqueued++;
    txq_flush(&x->q, 40);
    assert_int_equal(x->fake.last_summary, PKT_BATCH_F_PARTIAL);

    struct pkt *b[2] = {tpkt_new(&x->pool, 64), tpkt_new(&x->pool, 64)};
    x->enqueued += 2;
    txq_enqueue_burst(&x->q, b, 1, PKT_BATCH_F_GOOD, 50);
    txq_enqueue_burst(&x->q, b + 1, 1, PKT_BATCH_F_BAD, 50);
    txq_flush(&x->q, 60);
    assert_int_equal(x->fake.last_summary, PKT_BATCH_F_GOOD | PKT_BATCH_F_BAD);

    struct pkt *c = tpkt_new(&x->pool, 64);
    x->enqueued++;
    txq_send_burst(&x->q, &c, 1, 64, PKT_BATCH_F_PARTIAL, 70);
    assert_int_equal(x->fake.last_summary, PKT_BATCH_F_PARTIAL);
    check_conservation(x);
}

/* 32 flows in one rx batch to one port: one call, not 32. */
static void test_32_flows_one_call(void **state)
{
    struct fx *x = *state;
    for (unsigned f = 0; f < 32; f++) {
        struct pkt *p = tpkt_new(&x->pool, 60 + f);
        p->hash = f * 2654435761u; /* a different flow each */
        txq_enqueue(&x->q, p, 5000);
        x->enqueued++;
    }
    assert_true(txq_flush_if_due(&x->q, 5000));
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 1);
    assert_int_equal(x->q.stats.batch_hist[32], 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 32);
    assert_int_equal(x->q.stats.n[TXQ_STAT_BYTES], 32 * 60 + 31 * 32 / 2);
    check_conservation(x);
}

static void test_accept5_in_7_calls(void **state)
{
    struct fx *x = *state;
    x->fake.accept = 5;
    enq_n(x, 32, 10);
    txq_flush(&x->q, 10);
    assert_int_equal(x->fake.calls, 7);
    for (unsigned i = 0; i < 7; i++)
        assert_int_equal(x->fake.offered[i], 32 - 5 * (int)i);
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 7);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 6);
    assert_int_equal(x->q.stats.batch_hist[5], 6);
    assert_int_equal(x->q.stats.batch_hist[2], 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 32);
    assert_int_equal(dropped_total(&x->q), 0);
    check_conservation(x);
}

static void test_stalled_one_call(void **state)
{
    struct fx *x = *state;
    x->fake.accept = 0;
    enq_n(x, 32, 10);
    txq_flush(&x->q, 10);
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 0);
    assert_int_equal(x->q.stats.batch_hist[0], 1);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 32);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 0);
    assert_int_equal(x->pool.released, 32);
    /* dropped packets still count as waited */
    assert_int_equal(x->q.stats.wait_hist[0], 32);
    check_conservation(x);
}

static void test_retries0_one_call(void **state)
{
    struct fx *x = *state;
    x->q.retries = 0;
    x->fake.accept = 5;
    enq_n(x, 32, 10);
    txq_flush(&x->q, 10);
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 0);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 5);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 27);
    check_conservation(x);
}

static void test_retries_stop_at_n(void **state)
{
    struct fx *x = *state;
    for (unsigned n = 0; n <= TXQ_MAX_RETRIES; n++) {
        uint64_t calls0 = x->fake.calls, drop0 = x->q.stats.dropped[DROP_tx_full];
        uint64_t sent0 = x->q.stats.n[TXQ_STAT_PACKETS], retr0 = x->q.stats.n[TXQ_STAT_RETRIES];
        x->q.retries = n;
        x->fake.accept = 1;
        enq_n(x, 32, 10);
        txq_flush(&x->q, 10);
        unsigned calls = n + 1 < 32 ? n + 1 : 32;
        assert_int_equal(x->fake.calls - calls0, calls);
        assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES] - retr0, calls - 1);
        assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS] - sent0, calls);
        assert_int_equal(x->q.stats.dropped[DROP_tx_full] - drop0, 32 - calls);
        check_conservation(x);
    }
}

/* Progress, then zero progress: stops there even with retries left. */
static void test_retries_stop_on_zero_progress(void **state)
{
    struct fx *x = *state;
    const int script[] = {3, 4, 0, 7};
    memcpy(x->fake.script, script, sizeof script);
    x->fake.n_script = 4;
    enq_n(x, 20, 10);
    txq_flush(&x->q, 10);
    assert_int_equal(x->fake.calls, 3);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 2);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 7);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 13);
    assert_int_equal(x->q.stats.batch_hist[3], 1);
    assert_int_equal(x->q.stats.batch_hist[4], 1);
    assert_int_equal(x->q.stats.batch_hist[0], 1);
    /* the kept ones are the first 7, in order */
    for (unsigned i = 0; i < 7; i++)
        assert_int_equal(tpkt_seq(x->fake.kept[i]), i);
    check_conservation(x);
}

static void test_order_kept(void **state)
{
    struct fx *x = *state;
    /* interleaved "flows", several flushes, partial acceptance with
     * retries: what leaves is the enqueue order (fake_send also asserts
     * strictly increasing sequence numbers on every call) */
    x->fake.accept = 3;
    x->q.retries = TXQ_MAX_RETRIES; /* 32 packets need 11 calls */
    x->q.interval_ns = 20 * US;
    uint64_t now = 0;
    for (unsigned it = 0; it < 50; it++) {
        for (unsigned k = 0; k < 1 + it % 9; k++) {
            struct pkt *p = tpkt_new(&x->pool, 64);
            p->hash = k % 3;
            txq_enqueue(&x->q, p, now);
            x->enqueued++;
        }
        txq_flush_if_due(&x->q, now);
        check_conservation(x);
        now += 3 * US;
    }
    txq_flush(&x->q, now);
    assert_int_equal(dropped_total(&x->q), 0);
    assert_int_equal(x->fake.n_kept, x->enqueued);
    for (unsigned i = 0; i < x->fake.n_kept; i++)
        assert_int_equal(tpkt_seq(x->fake.kept[i]), i);
    check_conservation(x);
}

static void test_ts_and_bytes(void **state)
{
    struct fx *x = *state;
    x->fake.accept = 2;
    x->q.retries = 1;
    static const uint32_t lens[] = {60, 61, 100, 128, 64, 90};
    for (unsigned i = 0; i < 6; i++)
        enq(x, lens[i], 100 + i);
    txq_flush(&x->q, 777);
    /* two calls of 2: the first four were accepted */
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 4);
    assert_int_equal(x->q.stats.n[TXQ_STAT_BYTES], 60 + 61 + 100 + 128);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 2);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(x->fake.kept[i]->ts, 777);
    check_conservation(x);
}

static void test_negative_return(void **state)
{
    struct fx *x = *state;
    /* error, link up: tx_error */
    x->fake.error = -EIO;
    enq_n(x, 10, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->q.stats.dropped[DROP_tx_error], 10);
    assert_int_equal(x->q.stats.batch_hist[0], 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 0);
    check_conservation(x);
    /* error, link down: tx_down */
    x->fake.link_up = false;
    x->fake.error = -ENETDOWN;
    enq_n(x, 7, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(x->fake.calls, 2);
    assert_int_equal(x->q.stats.dropped[DROP_tx_down], 7);
    check_conservation(x);
    /* progress, then an error: the rest is tx_error, no more calls */
    x->fake.link_up = true;
    x->fake.error = 0;
    x->fake.script[0] = 5;
    x->fake.script[1] = -EIO;
    x->fake.n_script = 2;
    x->fake.script_pos = 0;
    enq_n(x, 32, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(x->fake.calls, 4);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 5);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 1);
    assert_int_equal(x->q.stats.dropped[DROP_tx_error], 10 + 27);
    check_conservation(x);
    /* a down port that just takes nothing: tx_down, not tx_full */
    x->fake.link_up = false;
    x->fake.accept = 0;
    enq_n(x, 4, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(x->fake.calls, 5);
    assert_int_equal(x->q.stats.dropped[DROP_tx_down], 7 + 4);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 0);
    check_conservation(x);
}

static void test_too_many_clamped(void **state)
{
    struct fx *x = *state;
    x->fake.script[0] = 8 + 5; /* offered 8, "accepted" 13 */
    x->fake.n_script = 1;
    enq_n(x, 8, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 8);
    assert_int_equal(x->q.stats.batch_hist[8], 1);
    check_conservation(x);
}

static void test_purge(void **state)
{
    struct fx *x = *state;
    txq_purge(&x->q, DROP_tx_down); /* empty: nothing */
    assert_int_equal(dropped_total(&x->q), 0);
    enq_n(x, 9, 50);
    txq_purge(&x->q, DROP_tx_down);
    assert_int_equal(txq_queued(&x->q), 0);
    assert_int_equal(x->q.stats.dropped[DROP_tx_down], 9);
    assert_int_equal(x->pool.released, 9);
    enq_n(x, 4, 60);
    txq_purge(&x->q, DROP_nomem);
    assert_int_equal(x->q.stats.dropped[DROP_nomem], 4);
    assert_int_equal(x->fake.calls, 0);
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 0);
    /* purge records no wait (it has no time) */
    for (unsigned i = 0; i < TXQ_WAIT_BUCKETS; i++)
        assert_int_equal(x->q.stats.wait_hist[i], 0);
    check_conservation(x);
    /* the queue works normally afterwards */
    enq_n(x, 2, 70);
    assert_int_equal(x->q.first_ns, 70);
    txq_flush(&x->q, 70);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 2);
    check_conservation(x);
}

static void test_null_dev_is_down(void **state)
{
    struct fx *x = *state;
    enq_n(x, 3, 0);
    x->q.dev = NULL;
    txq_flush(&x->q, 0);
    assert_int_equal(x->q.stats.dropped[DROP_tx_down], 3);
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 0);
    check_conservation(x);
}

/* txq_enqueue_burst() is n txq_enqueue()s: a full queue is sent before the
 * rest is queued, order and per-packet waits are kept (one flush mixes two
 * enqueue times, the next has one). */
static void test_enqueue_burst(void **state)
{
    struct fx *x = *state;
    const uint64_t t0 = 1000 * US;
    struct pkt *a[20], *b[20];
    for (unsigned i = 0; i < 20; i++)
        a[i] = tpkt_new(&x->pool, 64);
    for (unsigned i = 0; i < 20; i++)
        b[i] = tpkt_new(&x->pool, 64);
    x->enqueued += 40;
    txq_enqueue_burst(&x->q, a, 20, 0, t0);
    assert_int_equal(txq_queued(&x->q), 20);
    assert_int_equal(x->fake.calls, 0);
    txq_enqueue_burst(&x->q, b, 20, 0, t0 + 5 * US); /* 12 fit, then a send */
    assert_int_equal(x->fake.calls, 1);
    assert_int_equal(x->fake.offered[0], 32);
    assert_int_equal(txq_queued(&x->q), 8);
    assert_int_equal(x->q.first_ns, t0 + 5 * US);
    /* waits: 20 x 5 us (bucket 3: [4, 8) us), 12 x 0 */
    assert_int_equal(x->q.stats.wait_hist[3], 20);
    assert_int_equal(x->q.stats.wait_hist[0], 12);
    txq_flush(&x->q, t0 + 10 * US);
    assert_int_equal(x->fake.calls, 2);
    assert_int_equal(x->fake.offered[1], 8);
    assert_int_equal(x->q.stats.wait_hist[3], 28);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 40);
    assert_int_equal(x->q.stats.n[TXQ_STAT_BYTES], 40 * 64);
    assert_int_equal(x->q.stats.wait_max_ns, 5 * US);
    txq_enqueue_burst(&x->q, a, 0, 0, t0); /* nothing */
    assert_int_equal(txq_queued(&x->q), 0);
    check_conservation(x);
}

static void test_wait_hist_edges(void **state)
{
    struct fx *x = *state;
    const uint64_t T = 100000000000ull;
    struct {
        uint64_t wait;
        unsigned bucket;
    } cases[] = {
        {T, 15},            /* enqueued at time 0 */
        {16384000, 15},     /* 2^14 us */
        {16383999, 14},
        {8192000, 14},
        {8191999, 13},
        {65000, 7},         /* 65 us: [64, 128) */
        {64000, 7},
        {63999, 6},
        {4000, 3},
        {3999, 2},
        {2000, 2},
        {1999, 1},
        {1000, 1},
        {999, 0},
        {0, 0},
    };
    unsigned n = sizeof cases / sizeof cases[0];
    uint64_t expect[TXQ_WAIT_BUCKETS] = {0};
    for (unsigned i = 0; i < n; i++) {
        enq(x, 64, T - cases[i].wait);
        expect[cases[i].bucket]++;
    }
    txq_flush(&x->q, T);
    for (unsigned b = 0; b < TXQ_WAIT_BUCKETS; b++)
        assert_int_equal(x->q.stats.wait_hist[b], expect[b]);
    assert_int_equal(x->q.stats.wait_max_ns, T);
    /* a clock reading behind the enqueue time counts as no wait */
    enq(x, 64, 500);
    txq_flush(&x->q, 400);
    assert_int_equal(x->q.stats.wait_hist[0], expect[0] + 1);
    assert_int_equal(x->q.stats.wait_max_ns, T);
    check_conservation(x);
}

static void test_batch_hist_exact(void **state)
{
    struct fx *x = *state;
    /* 32 with accept 7: calls of 7,7,7,7,4 ; then 1 packet; then 0-accept */
    x->fake.accept = 7;
    enq_n(x, 32, 0);
    txq_flush(&x->q, 0);
    x->fake.accept = -1;
    enq_n(x, 1, 0);
    txq_flush(&x->q, 0);
    x->fake.accept = 0;
    enq_n(x, 3, 0);
    txq_flush(&x->q, 0);
    uint64_t expect[PKT_BATCH_MAX + 1] = {0};
    expect[7] = 4;
    expect[4] = 1;
    expect[1] = 1;
    expect[0] = 1;
    for (unsigned i = 0; i <= PKT_BATCH_MAX; i++)
        assert_int_equal(x->q.stats.batch_hist[i], expect[i]);
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 7);
    assert_int_equal(x->q.stats.n[TXQ_STAT_RETRIES], 4);
    check_conservation(x);
}

/* Random operations against a randomly behaving port; conservation and
 * histogram consistency after every step. */
static void test_conservation_random(void **state)
{
    struct fx *x = *state;
    const char *quick = getenv("FS_TEST_QUICK");
    unsigned steps = quick && *quick && *quick != '0' ? 3000 : 60000;
    uint64_t rng = 0x9e3779b97f4a7c15ull, now = 0, purged = 0;
    x->fake.keep = false; /* free on acceptance; order still checked */
    for (unsigned s = 0; s < steps; s++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(rng >> 33);
        now += (r >> 20) % 4 * US;
        switch (r % 16) {
        case 0:
            x->fake.accept = (int)((r >> 8) % 38) - 1; /* -1 (all)..36 */
            x->fake.error = (r >> 16) % 8 == 0 ? -EIO : 0;
            break;
        case 1:
            x->q.retries = (r >> 8) % (TXQ_MAX_RETRIES + 1);
            break;
        case 2:
            x->q.interval_ns = (r >> 8) % 3 * 10 * US;
            break;
        case 3:
            x->fake.link_up = (r >> 8) % 4 != 0;
            break;
        case 4:
            txq_flush(&x->q, now);
            assert_int_equal(txq_queued(&x->q), 0);
            break;
        case 5:
            if ((r >> 8) % 8 == 0) {
                purged += txq_queued(&x->q);
                txq_purge(&x->q, (r >> 12) % 2 ? DROP_tx_down : DROP_rule_drop);
            }
            break;
        case 6:
        case 7: {
            bool due = x->q.interval_ns == 0 ||
                       (txq_queued(&x->q) && now - x->q.first_ns >= x->q.interval_ns);
            bool had = txq_queued(&x->q) != 0;
            assert_int_equal(txq_flush_if_due(&x->q, now), had && due);
            if (had && due)
                assert_int_equal(txq_queued(&x->q), 0);
            break;
        }
        default: {
            unsigned k = 1 + (r >> 8) % 12;
            for (unsigned i = 0; i < k; i++) {
                unsigned before = txq_queued(&x->q);
                enq(x, 60 + (r >> 16) % 60, now);
                assert_int_equal(txq_queued(&x->q),
                                 before == PKT_BATCH_MAX ? 1 : before + 1);
            }
            break;
        }
        }
        check_conservation(x);
        assert_true(txq_queued(&x->q) <= PKT_BATCH_MAX);
    }
    txq_flush(&x->q, now);
    check_conservation(x);
    uint64_t samples = 0;
    for (unsigned b = 0; b < TXQ_WAIT_BUCKETS; b++)
        samples += x->q.stats.wait_hist[b];
    /* every packet that went through a flush has one sample; purged ones
     * have none */
    assert_int_equal(samples, x->enqueued - purged);
    /* the walk really went through every path */
    assert_true(x->q.stats.n[TXQ_STAT_PACKETS] > 0);
    assert_true(x->q.stats.n[TXQ_STAT_RETRIES] > 0);
    assert_true(x->q.stats.dropped[DROP_tx_full] > 0);
    assert_true(x->q.stats.dropped[DROP_tx_error] > 0);
    assert_true(x->q.stats.dropped[DROP_tx_down] > 0);
    assert_true(x->q.stats.dropped[DROP_rule_drop] > 0);
    assert_true(x->q.stats.batch_hist[PKT_BATCH_MAX] > 0);
}

/* ---- with the dummy backend ------------------------------------------- */

struct dfx {
    struct tpool pool;
    struct netdev *dev;
    struct txq q;
    uint64_t enqueued;
};

static struct netdev *dummy_open(const struct netdev_opt *opts, size_t n)
{
    struct netdev_args args = {.opts = opts, .n_opts = n, .base_dir = "",
                               .out_dir = ""};
    char err[256] = "";
    struct netdev *dev = netdev_open("d0", "dummy", &args, err, sizeof err);
    if (!dev)
        fail_msg("dummy open: %s", err);
    return dev;
}

static int dfx_setup(void **state)
{
    netdev_dummy_register();
    struct dfx *x = calloc(1, sizeof *x);
    assert_non_null(x);
    *state = x;
    return 0;
}

static int dfx_teardown(void **state)
{
    struct dfx *x = *state;
    txq_purge(&x->q, DROP_tx_down);
    if (x->dev)
        netdev_close(x->dev);
    netdev_unregister_all();
    assert_int_equal(x->pool.allocated, x->pool.released);
    free(x);
    return 0;
}

static void dfx_enq_n(struct dfx *x, unsigned n, uint64_t now)
{
    for (unsigned i = 0; i < n; i++) {
        txq_enqueue(&x->q, tpkt_new(&x->pool, 64), now);
        x->enqueued++;
    }
}

static void dfx_check(const struct dfx *x)
{
    uint64_t d = 0;
    for (int i = 0; i < DROP_N_REASONS; i++)
        d += x->q.stats.dropped[i];
    assert_int_equal(x->enqueued, x->q.stats.n[TXQ_STAT_PACKETS] + d + txq_queued(&x->q));
    struct netdev_stats ns;
    netdev_get_stats(x->dev, &ns);
    assert_int_equal(ns.tx_packets, x->q.stats.n[TXQ_STAT_PACKETS]);
    assert_int_equal(ns.tx_bytes, x->q.stats.n[TXQ_STAT_BYTES]);
}

static void test_dummy_accept5(void **state)
{
    struct dfx *x = *state;
    const struct netdev_opt opts[] = {{"tx-accept", "5", 0}, {"tx-keep", "true", 0}};
    x->dev = dummy_open(opts, 2);
    txq_init(&x->q, x->dev, 0, 8, 0);
    dfx_enq_n(x, 32, 1000);
    assert_true(txq_flush_if_due(&x->q, 1000));
    assert_int_equal(netdev_dummy_send_calls(x->dev), 7);
    assert_int_equal(x->q.stats.n[TXQ_STAT_SEND_CALLS], 7);
    struct netdev_dummy_send_rec rec[8];
    assert_int_equal(netdev_dummy_send_log(x->dev, rec, 8), 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(rec[i].offered, 32 - 5 * i);
        assert_int_equal(rec[i].accepted, i < 6 ? 5 : 2);
    }
    struct pkt *out[40];
    assert_int_equal(netdev_dummy_collect(x->dev, 0, out, 40), 32);
    for (unsigned i = 0; i < 32; i++) {
        assert_int_equal(tpkt_seq(out[i]), i); /* order kept */
        assert_int_equal(out[i]->ts, 1000);
        pkt_free(out[i]);
    }
    dfx_check(x);
}

static void test_dummy_stall_and_retries0(void **state)
{
    struct dfx *x = *state;
    const struct netdev_opt opts[] = {{"tx-stall", "true", 0}};
    x->dev = dummy_open(opts, 1);
    txq_init(&x->q, x->dev, 0, 8, 0);
    dfx_enq_n(x, 32, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(netdev_dummy_send_calls(x->dev), 1);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 32);
    dfx_check(x);
    /* retries=0, accepting 5: exactly one call */
    assert_int_equal(netdev_dummy_set_tx_accept(x->dev, 5), 0);
    x->q.retries = 0;
    dfx_enq_n(x, 32, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(netdev_dummy_send_calls(x->dev), 2);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 5);
    assert_int_equal(x->q.stats.dropped[DROP_tx_full], 32 + 27);
    dfx_check(x);
    /* unlimited again: 32 packets -> 1 call */
    assert_int_equal(netdev_dummy_set_tx_accept(x->dev, -1), 0);
    dfx_enq_n(x, 32, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(netdev_dummy_send_calls(x->dev), 3);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 5 + 32);
    dfx_check(x);
}

static void test_dummy_link_down(void **state)
{
    struct dfx *x = *state;
    const struct netdev_opt opts[] = {{"link", "down", 0}};
    x->dev = dummy_open(opts, 1);
    txq_init(&x->q, x->dev, 0, 8, 0);
    dfx_enq_n(x, 12, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(netdev_dummy_send_calls(x->dev), 1);
    assert_int_equal(x->q.stats.dropped[DROP_tx_down], 12);
    assert_int_equal(x->q.stats.dropped[DROP_tx_error], 0);
    dfx_check(x);
    assert_int_equal(netdev_dummy_set_link(x->dev, true), 0);
    dfx_enq_n(x, 12, 0);
    txq_flush(&x->q, 0);
    assert_int_equal(x->q.stats.n[TXQ_STAT_PACKETS], 12);
    dfx_check(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
#define D_(f) cmocka_unit_test_setup_teardown(f, dfx_setup, dfx_teardown)
        T_(test_init),
        T_(test_interval0_always_flushes),
        T_(test_interval_n),
        T_(test_ping_within_bound),
        T_(test_no_stamp_for_devices_that_ignore_ts),
        T_(test_send_burst_empty_queue),
        T_(test_send_summary),
        T_(test_send_burst_behind_queue_and_drops),
        T_(test_full_flushes_on_33rd),
        T_(test_32_flows_one_call),
        T_(test_accept5_in_7_calls),
        T_(test_stalled_one_call),
        T_(test_retries0_one_call),
        T_(test_retries_stop_at_n),
        T_(test_retries_stop_on_zero_progress),
        T_(test_order_kept),
        T_(test_ts_and_bytes),
        T_(test_negative_return),
        T_(test_too_many_clamped),
        T_(test_purge),
        T_(test_null_dev_is_down),
        T_(test_wait_hist_edges),
        T_(test_enqueue_burst),
        T_(test_batch_hist_exact),
        T_(test_conservation_random),
        D_(test_dummy_accept5),
        D_(test_dummy_stall_and_retries0),
        D_(test_dummy_link_down),
#undef T_
#undef D_
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
