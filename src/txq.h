/* txq.h: per (PMD, output port) transmit batching.
 *
 * Packets to one port are queued and leave in one backend send call: when
 * the queue is full (PKT_BATCH_MAX), when its oldest packet has waited the
 * flush interval, and whenever the owner forces a flush (end of an rx batch
 * with interval 0, an idle poll iteration, port removal, reconfiguration,
 * rule reload, shutdown). A send that takes only part of the queue is
 * retried while each attempt makes progress, up to 'retries' more calls;
 * what is left is freed and counted (tx_full). Order is preserved. */
#ifndef FS_TXQ_H
#define FS_TXQ_H

#include <stdbool.h>
#include <stdint.h>

#include "drop.h"
#include "netdev.h"
#include "packet.h"

#define TXQ_MAX_RETRIES 32
#define TXQ_WAIT_BUCKETS 16 /* wait histogram: bucket i counts waits < 2^i us (last: the rest) */

/* Counters of one output queue: the scalar counters are an array indexed
 * by enum txq_stat; drops are by reason; two histograms. */
enum txq_stat {
    TXQ_STAT_PACKETS,    /* accepted by the backend */
    TXQ_STAT_BYTES,
    TXQ_STAT_SEND_CALLS, /* backend send calls */
    TXQ_STAT_RETRIES,    /* send calls after the first of a flush */
    TXQ_N_STATS
};

struct txq_stats {
    uint64_t n[TXQ_N_STATS];
    uint64_t dropped[DROP_N_REASONS]; /* tx_full, tx_error, tx_down */
    uint64_t batch_hist[PKT_BATCH_MAX + 1]; /* packets accepted per send call */
    uint64_t wait_hist[TXQ_WAIT_BUCKETS];   /* per packet: send time - enqueue time */
    uint64_t wait_max_ns;
};

struct txq {
    struct netdev *dev;
    unsigned qid;
    unsigned retries;      /* 0..TXQ_MAX_RETRIES */
    uint64_t interval_ns;  /* 0: flushed by the owner at each rx batch end */
    bool stamp;            /* the device's send() reads pkt->ts
                            * (netdev_class.tx_stamps): set it on flush */
    uint16_t count;
    uint16_t n_runs;       /* runs of packets queued at one time, in order:
                            * run i starts at pkts[run_start[i]] */
    uint64_t first_ns;     /* enqueue time of pkts[0] (run_ns[0]) */
    uint64_t bytes;        /* frame bytes queued */
    uint16_t summary;      /* PKT_BATCH_F_* bound of the queued packets */
    struct pkt *pkts[PKT_BATCH_MAX];
    uint64_t run_ns[PKT_BATCH_MAX];
    uint16_t run_start[PKT_BATCH_MAX];
    struct txq_stats stats;
};

void txq_init(struct txq *q, struct netdev *dev, unsigned qid, unsigned retries,
              uint64_t interval_ns);

/* Queues pkt (taking ownership); sends the queue first if it is full. */
void txq_enqueue(struct txq *q, struct pkt *pkt, uint64_t now);

/* Queues pkts[0..n) in order (taking ownership): the same as n calls of
 * txq_enqueue(), with one copy per chunk. 'summary' bounds their
 * PKT_BATCH_F_* flags (see netdev_class.send; PKT_BATCH_F_PARTIAL if
 * unknown). */
void txq_enqueue_burst(struct txq *q, struct pkt *const *pkts, unsigned n, uint16_t summary,
                       uint64_t now);

/* Sends pkts[0..n) now (taking ownership), as txq_enqueue_burst() and then
 * txq_flush() would: the same counters, retries and drops. With nothing
 * queued and n <= PKT_BATCH_MAX (the case it is for) the packets are not
 * copied into the queue and wait 0. 'bytes' is the sum of their lengths if
 * the caller has it, else TXQ_BYTES_UNKNOWN; 'summary' as for
 * txq_enqueue_burst(). For owners that would flush at
 * once anyway (interval 0). */
#define TXQ_BYTES_UNKNOWN UINT64_MAX
void txq_send_burst(struct txq *q, struct pkt **pkts, unsigned n, uint64_t bytes,
                    uint16_t summary, uint64_t now);

/* Sends everything queued now (with retries). */
void txq_flush(struct txq *q, uint64_t now);

/* Flushes if the interval has expired (now >= first_ns + interval_ns) or
 * the interval is 0. Returns true if it flushed. */
bool txq_flush_if_due(struct txq *q, uint64_t now);

/* Frees everything queued, counting it under 'reason' (port gone). */
void txq_purge(struct txq *q, enum drop_reason reason);

static inline unsigned txq_queued(const struct txq *q)
{
    return q->count;
}

#endif
