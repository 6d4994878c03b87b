/* txq.c: per (PMD, output port) transmit batching.
 *
 * One queue per (PMD, port), touched only by its PMD: no locks, no
 * allocation. The hot path is txq_enqueue_burst() (a copy and a length add per packet,
 * a compare per call; txq_enqueue() is its one-packet case) and in
 * txq_flush() one wait sample per run of packets queued at one time (and,
 * for devices that read it, a pass stamping pkt->ts), before the backend
 * owns anything.
 *
 * Accounting of one flush of n packets (all of them at time 'now'):
 *   - every backend send call lands in exactly one batch_hist bucket (the
 *     number it accepted, 0 for a call that failed), so
 *     sum(batch_hist) == send_calls and sum(i * batch_hist[i]) == packets;
 *   - every one of the n packets, accepted or dropped, adds one wait_hist
 *     sample of now - its enqueue time;
 *   - accepted + dropped == n, and the queue is empty afterwards.
 *
 * Wait histogram bucket edges (TXQ_WAIT_BUCKETS = 16, "bucket i counts
 * waits < 2^i us", 1 us = 1000 ns exactly):
 *   bucket 0:           [0, 1000) ns
 *   bucket i (1..14):   [2^(i-1) * 1000, 2^i * 1000) ns
 *   bucket 15:          [16384000 ns, inf)
 * i.e. the bucket of a wait w is 0 if w < 1 us, else 1 + floor(log2(w_us))
 * with w_us = floor(w / 1000), capped at 15.
 *
 * Drop reasons: what a send failing with -errno left is tx_error, or
 * tx_down when netdev_link_up() says the link is down; what is left after
 * zero progress or the last retry is tx_full, or tx_down on a down link. A
 * queue whose dev is NULL (port removed) drops everything as tx_down.
 * txq_purge() has no time, so purged packets add no wait sample.
 *
 * The owner may change q->interval_ns and q->retries between calls (the
 * run-time tx-flush-interval / tx-retries knobs); they apply from the next
 * flush_if_due / flush. */
#include "txq.h"

#include <assert.h>

#include "util.h"
#include "offload.h"

void txq_init(struct txq *q, struct netdev *dev, unsigned qid, unsigned retries,
              uint64_t interval_ns)
{
    q->dev = dev;
    q->qid = qid;
    q->retries = retries > TXQ_MAX_RETRIES ? TXQ_MAX_RETRIES : retries;
    q->interval_ns = interval_ns;
    q->stamp = dev && netdev_tx_stamps(dev);
    q->count = 0;
    q->n_runs = 0;
    q->first_ns = 0;
    q->bytes = 0;
    q->summary = 0;
    for (unsigned i = 0; i < PKT_BATCH_MAX; i++) {
        q->pkts[i] = NULL;
        q->run_ns[i] = 0;
        q->run_start[i] = 0;
    }
    q->stats = (struct txq_stats){0};
}

/* Bucket of a wait of 'ns' nanoseconds (edges in the file comment). */
static inline unsigned txq_wait_bucket(uint64_t ns)
{
    uint64_t us = ns / FS_NSEC_PER_USEC;
    if (us == 0)
        return 0;
    unsigned b = 64u - (unsigned)__builtin_clzll(us); /* 1 + floor(log2(us)) */
    return b < TXQ_WAIT_BUCKETS ? b : TXQ_WAIT_BUCKETS - 1;
}

void txq_enqueue_burst(struct txq *q, struct pkt *const *pkts, unsigned n, uint16_t summary,
                       uint64_t now)
{
    while (n) {
        if (q->count >= PKT_BATCH_MAX)
            txq_flush(q, now);
        unsigned i = q->count, k = PKT_BATCH_MAX - i;
        if (k > n)
            k = n;
        if (i == 0) {
            q->first_ns = now;
            q->run_ns[0] = now;
            q->run_start[0] = 0;
            q->n_runs = 1;
        } else if (now != q->run_ns[q->n_runs - 1]) {
            q->run_ns[q->n_runs] = now;
            q->run_start[q->n_runs] = (uint16_t)i;
            q->n_runs++;
        }
        uint64_t bytes = 0;
        for (unsigned j = 0; j < k; j++) {
            q->pkts[i + j] = pkts[j];
            bytes += pkts[j]->len;
        }
        q->bytes += bytes;
        q->summary |= summary;
        q->count = (uint16_t)(i + k);
        pkts += k;
        n -= k;
    }
}

void txq_enqueue(struct txq *q, struct pkt *pkt, uint64_t now)
{
    txq_enqueue_burst(q, &pkt, 1, pkt_csum_any_partial(pkt) ? PKT_BATCH_F_PARTIAL : 0, now);
}

/* Frees pkts[from..n) and counts them under 'reason'. */
static void txq_drop_tail(struct txq *q, struct pkt *const *pkts, unsigned from, unsigned n,
                          enum drop_reason reason)
{
    for (unsigned i = from; i < n; i++)
        pkt_free(pkts[i]);
    q->stats.dropped[reason] += n - from;
}

/* Hands pkts[0..n) (bytes in all, PKT_BATCH_F_* bound 'summary') to the
 * device at time 'now' (stamped into pkt->ts for devices that read it),
 * with the retries, the send counters and the drops of what it does not
 * take. */
static void txq_xmit(struct txq *q, struct pkt **pkts, unsigned n, uint64_t bytes,
                     uint16_t summary, uint64_t now)
{
    struct txq_stats *st = &q->stats;
    if (q->stamp)
        for (unsigned i = 0; i < n; i++)
            pkts[i]->ts = now;
    struct netdev *dev = q->dev;
    if (dev == NULL) { /* port gone: nothing can be sent */
        txq_drop_tail(q, pkts, 0, n, DROP_tx_down);
        return;
    }

    unsigned sent = 0;
    unsigned retries_left = q->retries;
    enum drop_reason why = DROP_N_REASONS; /* none */
    for (;;) {
        int r = netdev_send(dev, q->qid, pkts + sent, (int)(n - sent), summary);
        st->n[TXQ_STAT_SEND_CALLS]++;
        if (r < 0) {
            st->batch_hist[0]++;
            why = netdev_link_up(dev) ? DROP_tx_error : DROP_tx_down;
            break;
        }
        unsigned acc = (unsigned)r;
        if (acc > n - sent) /* a backend bug: it cannot take more than offered */
            acc = n - sent;
        st->batch_hist[acc]++;
        sent += acc;
        if (sent == n)
            break;
        if (acc == 0 || retries_left == 0) {
            /* Zero progress or out of retries. A down link explains a
             * refusal better than a full queue does. */
            why = netdev_link_up(dev) ? DROP_tx_full : DROP_tx_down;
            break;
        }
        retries_left--;
        st->n[TXQ_STAT_RETRIES]++;
    }
    /* The packets not accepted are still ours: their bytes come off. */
    for (unsigned i = sent; i < n; i++)
        bytes -= pkts[i]->len;
    if (why != DROP_N_REASONS)
        txq_drop_tail(q, pkts, sent, n, why);
    st->n[TXQ_STAT_PACKETS] += sent;
    st->n[TXQ_STAT_BYTES] += bytes;
}

void txq_flush(struct txq *q, uint64_t now)
{
    unsigned n = q->count;
    if (n == 0)
        return;

    /* The waits, one sample per packet, one bucket per run of packets
     * queued at one time (the common case is one run: one poll
     * iteration). */
    struct txq_stats *st = &q->stats;
    uint64_t bytes = q->bytes;
    uint64_t max_wait = 0;
    for (unsigned r = 0; r < q->n_runs; r++) {
        unsigned end = r + 1 < q->n_runs ? q->run_start[r + 1] : n;
        uint64_t e = q->run_ns[r];
        uint64_t w = now > e ? now - e : 0;
        if (w > max_wait)
            max_wait = w;
        st->wait_hist[txq_wait_bucket(w)] += end - q->run_start[r];
    }
    if (max_wait > st->wait_max_ns)
        st->wait_max_ns = max_wait;
    uint16_t summary = q->summary;
    q->count = 0;
    q->n_runs = 0;
    q->bytes = 0;
    q->summary = 0;
    txq_xmit(q, q->pkts, n, bytes, summary, now);
}

void txq_send_burst(struct txq *q, struct pkt **pkts, unsigned n, uint64_t bytes,
                    uint16_t summary, uint64_t now)
{
    if (q->count || n > PKT_BATCH_MAX) { /* behind what is queued: in order */
        txq_enqueue_burst(q, pkts, n, summary, now);
        txq_flush(q, now);
        return;
    }
    if (n == 0)
        return;
    if (bytes == TXQ_BYTES_UNKNOWN) {
        bytes = 0;
        for (unsigned i = 0; i < n; i++)
            bytes += pkts[i]->len;
    }
    q->stats.wait_hist[0] += n; /* sent when queued: no wait */
    txq_xmit(q, pkts, n, bytes, summary, now);
}

bool txq_flush_if_due(struct txq *q, uint64_t now)
{
    if (q->count == 0)
        return false;
    if (q->interval_ns != 0 &&
        (now < q->first_ns || now - q->first_ns < q->interval_ns))
        return false;
    txq_flush(q, now);
    return true;
}

void txq_purge(struct txq *q, enum drop_reason reason)
{
    assert((unsigned)reason < DROP_N_REASONS);
    if ((unsigned)reason >= DROP_N_REASONS)
        reason = DROP_tx_down;
    txq_drop_tail(q, q->pkts, 0, q->count, reason);
    q->count = 0;
    q->n_runs = 0;
    q->bytes = 0;
    q->summary = 0;
}
