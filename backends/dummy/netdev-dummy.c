/* netdev-dummy.c: in-memory ports for tests and benchmarks (see
 * netdev-dummy.h for the options and the test hooks). */
#include "netdev-dummy.h"

#include "netdev-provider.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DUMMY_BURST_DEFAULT PKT_BATCH_MAX
#define DUMMY_TX_COST_MAX 1000000000ul /* 1 s per send call at most */

/* A FIFO of packets: a ring that grows by doubling. */
struct dummy_fifo {
    struct pkt **slots;
    size_t cap;  /* 0 or a power of two */
    size_t head; /* index of the oldest packet */
    size_t count;
};

/* Counters of one rx queue (written by the PMD polling it) and of one tx
 * queue (written by the PMDs sending on it, one at a time). */
struct dummy_rxq_stats {
    netdev_counter packets, bytes, csum_good, csum_bad;
};

struct dummy_txq_stats {
    netdev_counter packets, bytes, offload_contract;
};

struct dummy_port {
    unsigned n_rxq, n_txq;
    unsigned burst;
    int tx_accept; /* -1: unlimited */
    int64_t tx_budget[NETDEV_MAX_QUEUES]; /* packets each txq still takes, -1: unlimited */
    uint64_t tx_cost_ns;
    bool tx_keep;
    bool link_up;
    bool live;
    struct netdev_caps caps;
    struct dummy_rxq_stats rxs[NETDEV_MAX_QUEUES];
    struct dummy_txq_stats txs[NETDEV_MAX_QUEUES];
    uint64_t send_calls;
    struct netdev_dummy_send_rec log[NETDEV_DUMMY_SEND_LOG]; /* ring */
    struct dummy_fifo rxq[NETDEV_MAX_QUEUES];
    struct dummy_fifo txq[NETDEV_MAX_QUEUES]; /* kept transmitted packets */
};

static const struct netdev_class dummy_class;

/* ---- FIFO ---------------------------------------------------------------- */

static int dummy_fifo_push(struct dummy_fifo *f, struct pkt *p)
{
    if (f->count == f->cap) {
        size_t ncap = f->cap ? f->cap * 2 : 64;
        struct pkt **ns = malloc(ncap * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i < f->count; i++)
            ns[i] = f->slots[(f->head + i) & (f->cap - 1)];
        free(f->slots);
        f->slots = ns;
        f->cap = ncap;
        f->head = 0;
    }
    f->slots[(f->head + f->count) & (f->cap - 1)] = p;
    f->count++;
    return 0;
}

static struct pkt *dummy_fifo_head(const struct dummy_fifo *f)
{
    return f->count ? f->slots[f->head] : NULL;
}

static struct pkt *dummy_fifo_pop(struct dummy_fifo *f)
{
    if (!f->count)
        return NULL;
    struct pkt *p = f->slots[f->head];
    f->head = (f->head + 1) & (f->cap - 1);
    f->count--;
    return p;
}

static void dummy_fifo_destroy(struct dummy_fifo *f)
{
    struct pkt *p;
    while ((p = dummy_fifo_pop(f)))
        pkt_free(p);
    free(f->slots);
    memset(f, 0, sizeof *f);
}

/* ---- helpers ------------------------------------------------------------- */

static struct dummy_port *dummy_port(struct netdev *dev)
{
    return dev && dev->class == &dummy_class ? dev->priv : NULL;
}

static const struct dummy_port *dummy_port_const(const struct netdev *dev)
{
    return dev && dev->class == &dummy_class ? dev->priv : NULL;
}

static uint64_t dummy_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void dummy_busy_wait(uint64_t ns)
{
    uint64_t end = dummy_clock_ns() + ns;
    while (dummy_clock_ns() < end)
        continue;
}

static void dummy_log_send(struct dummy_port *dp, unsigned qid, int offered,
                           int accepted)
{
    struct netdev_dummy_send_rec *r =
        &dp->log[dp->send_calls % NETDEV_DUMMY_SEND_LOG];
    r->qid = qid;
    r->offered = offered;
    r->accepted = accepted;
    dp->send_calls++;
}

/* ---- vtable -------------------------------------------------------------- */

static int dummy_open(struct netdev *dev, const struct netdev_args *args,
                      char *err, size_t errlen)
{
    static const char *const known[] = {
        "burst",      "rxqs",    "txqs", "tx-accept", "tx-stall",
        "tx-cost-ns", "tx-keep", "link", NULL,
    };
    struct dummy_port *dp = dev->priv;
    unsigned long burst = DUMMY_BURST_DEFAULT, rxqs = 1, txqs = 1;
    unsigned long accept = ULONG_MAX, cost = 0;
    bool stall = false, keep = false;

    if (netdev_opt_check(args, known, err, errlen)
        || netdev_opt_uint(args, "burst", 1, PKT_BATCH_MAX, &burst, err, errlen)
        || netdev_opt_uint(args, "rxqs", 1, NETDEV_MAX_QUEUES, &rxqs, err,
                           errlen)
        || netdev_opt_uint(args, "txqs", 1, NETDEV_MAX_QUEUES, &txqs, err,
                           errlen)
        || netdev_opt_uint(args, "tx-accept", 0, INT_MAX, &accept, err, errlen)
        || netdev_opt_bool(args, "tx-stall", &stall, err, errlen)
        || netdev_opt_uint(args, "tx-cost-ns", 0, DUMMY_TX_COST_MAX, &cost, err,
                           errlen)
        || netdev_opt_bool(args, "tx-keep", &keep, err, errlen))
        return -EINVAL;

    bool up = true;
    const char *link = netdev_opt_get(args, "link");
    if (link) {
        if (!strcmp(link, "up")) {
            up = true;
        } else if (!strcmp(link, "down")) {
            up = false;
        } else {
            snprintf(err, errlen,
                     "option 'link': expected up or down, not '%s'", link);
            return -EINVAL;
        }
    }

    dp->n_rxq = (unsigned)rxqs;
    dp->n_txq = (unsigned)txqs;
    dp->burst = (unsigned)burst;
    dp->tx_accept = stall ? 0 : accept == ULONG_MAX ? -1 : (int)accept;
    dp->tx_cost_ns = cost;
    dp->tx_keep = keep;
    dp->link_up = up;
    dp->live = false;
    for (unsigned q = 0; q < NETDEV_MAX_QUEUES; q++)
        dp->tx_budget[q] = -1;
    if (args->caps_set)
        dp->caps = args->caps;
    return 0;
}

static void dummy_close(struct netdev *dev)
{
    struct dummy_port *dp = dev->priv;
    for (unsigned q = 0; q < NETDEV_MAX_QUEUES; q++) {
        dummy_fifo_destroy(&dp->rxq[q]);
        dummy_fifo_destroy(&dp->txq[q]);
    }
}

static unsigned dummy_n_rxq(const struct netdev *dev)
{
    const struct dummy_port *dp = dev->priv;
    return dp->n_rxq;
}

static unsigned dummy_n_txq(const struct netdev *dev)
{
    const struct dummy_port *dp = dev->priv;
    return dp->n_txq;
}

/* Moves the due packets of f into batch (at most the burst size), their
 * bytes into *bytes, and gathers their checksum states: *any ORs the four
 * state bytes of every packet, *lanes sums them byte by byte (at most
 * PKT_BATCH_MAX packets of states 0..3: no byte carries into the next).
 * Both come from the load that reads the length (pkt_len_csum()): one
 * instruction a packet more than counting bytes, whatever the states. With
 * rx caps the port emulates its verdicts first. Inlined twice: with the
 * port's rx caps when it emulates verdicts, with 0 (no test per packet)
 * otherwise. */
static inline __attribute__((always_inline)) int
dummy_rx_loop(const struct dummy_port *dp, struct dummy_fifo *f, struct pkt_batch *batch,
              uint64_t now, uint64_t *bytes, uint32_t *any, uint32_t *lanes,
              const uint32_t caps)
{
    _Static_assert(PKT_BATCH_MAX * CSUM_PARTIAL <= 0xff, "byte-wise state sums fit a byte");
    _Static_assert(CSUM_L_N == 4, "four state bytes");
    int n = 0;
    uint64_t lc_sum = 0, lc_or = 0;
    while ((unsigned)n < dp->burst && !pkt_batch_full(batch)) {
        struct pkt *p = dummy_fifo_head(f);
        if (!p || p->ts > now)
            break;
        dummy_fifo_pop(f);
        if (FS_CSUM_MACHINERY) {
            if (caps)
                pkt_rx_verify_emulate(p, caps);
            uint64_t lc = pkt_len_csum(p);
            lc_sum += lc;
            lc_or |= lc;
        } else {
            lc_sum += p->len;
        }
        pkt_batch_add(batch, p);
        n++;
    }
    *bytes = FS_CSUM_MACHINERY ? PKT_LC_LEN(lc_sum) : lc_sum;
    *any = PKT_LC_CSUM(lc_or);
    *lanes = PKT_LC_CSUM(lc_sum);
    return n;
}

/* The verdicts of the last n packets of the batch (their states gathered
 * by dummy_rx_loop() into any and lanes, any != 0): ORs their
 * summary into batch->flags and counts rx_csum_good (some layer GOOD, none
 * BAD) and rx_csum_bad (some layer BAD), as pkt_rx_classify() does. The
 * common cases inline: states GOOD and UNKNOWN only, and every layer that
 * is GOOD in some packet GOOD in all n (byte i of lanes is then n wherever
 * byte i of any is GOOD): all n vouched for; or GOOD and UNKNOWN mixed
 * unevenly: a packet counts if any of its states is GOOD, one test each. */
static inline __attribute__((always_inline)) void
dummy_rx_verdicts(struct dummy_rxq_stats *qs, struct pkt_batch *batch, unsigned n,
                  uint32_t any, uint32_t lanes)
{
    /* Without BAD and PARTIAL every byte of any is 0 or 1 (GOOD). */
    if (!(any & 0x02020202u)) {
        unsigned good = n;
        if (lanes != any * n) {
            good = 0;
            for (unsigned i = batch->count - n; i < batch->count; i++) {
                uint32_t st;
                memcpy(&st, batch->pkts[i]->csum, sizeof st);
                good += st != 0;
            }
        }
        netdev_counter_add(&qs->csum_good, good);
        batch->flags |= PKT_BATCH_F_GOOD;
        return;
    }
    /* BAD or PARTIAL layers, or GOOD-only states the byte sums do not
     * count exactly: packet by packet, out of line. */
    uint64_t good = 0, bad = 0;
    pkt_rx_classify(batch, batch->count - n, &good, &bad);
    netdev_counter_add(&qs->csum_good, good);
    netdev_counter_add(&qs->csum_bad, bad);
}

/* Receives a burst from the non-empty f: dummy_rx_loop(), the verdicts and
 * the counters. Inlined twice, like dummy_rx_loop(). */
static inline __attribute__((always_inline)) int
dummy_rx_burst(struct dummy_port *dp, struct dummy_fifo *f, struct pkt_batch *batch,
               uint64_t now, const uint32_t caps)
{
    uint64_t bytes;
    uint32_t any, lanes;
    struct dummy_rxq_stats *qs = &dp->rxs[f - dp->rxq];
    int n = dummy_rx_loop(dp, f, batch, now, &bytes, &any, &lanes, caps);
    if (FS_CSUM_MACHINERY && any) /* all UNKNOWN: this one test */
        dummy_rx_verdicts(qs, batch, (unsigned)n, any, lanes);
    netdev_counter_add(&qs->packets, (uint64_t)n);
    netdev_counter_add(&qs->bytes, bytes);
    return n;
}

/* dummy_rx_burst() out of line, for a port that emulates rx verdicts and
 * for one that does not: the idle poll of dummy_rxq_recv() then saves and
 * restores none of the registers a burst needs. */
static __attribute__((noinline)) int
dummy_rx_burst_emulating(struct dummy_port *dp, struct dummy_fifo *f, struct pkt_batch *batch,
                         uint64_t now)
{
    return dummy_rx_burst(dp, f, batch, now, dp->caps.flags);
}

static __attribute__((noinline)) int
dummy_rx_burst_plain(struct dummy_port *dp, struct dummy_fifo *f, struct pkt_batch *batch,
                     uint64_t now)
{
    return dummy_rx_burst(dp, f, batch, now, 0);
}

static int dummy_rxq_recv(struct netdev *dev, unsigned qid,
                          struct pkt_batch *batch, uint64_t now)
{
    struct dummy_port *dp = dev->priv;
    if (qid >= dp->n_rxq)
        return 0;
    struct dummy_fifo *f = &dp->rxq[qid];
    if (!f->count) /* the idle port a PMD polls: nothing else to do */
        return 0;
    if (FS_CSUM_MACHINERY && (dp->caps.flags & (NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM)))
        return dummy_rx_burst_emulating(dp, f, batch, now);
    return dummy_rx_burst_plain(dp, f, batch, now);
}

static enum netdev_rx_state dummy_rxq_peek(struct netdev *dev, unsigned qid,
                                           uint64_t *next_ts)
{
    struct dummy_port *dp = dev->priv;
    const struct pkt *p =
        qid < dp->n_rxq ? dummy_fifo_head(&dp->rxq[qid]) : NULL;
    if (p) {
        *next_ts = p->ts;
        return NETDEV_RX_READY;
    }
    return dp->live ? NETDEV_RX_EMPTY : NETDEV_RX_EOF;
}

/* Transmits pkts[0..n): emulates the announced offloads (with 'partial',
 * else no packet is PARTIAL and there is nothing to emulate), counts, and
 * keeps or frees. Inlined twice with a constant 'partial'. */
static inline __attribute__((always_inline)) void
dummy_tx_loop(struct dummy_port *dp, unsigned qid, struct pkt **pkts, int n, const bool partial)
{
    uint64_t bytes = 0, sent = 0;
    struct dummy_txq_stats *qs = &dp->txs[qid];
    for (int i = 0; i < n; i++) {
        struct pkt *p = pkts[i];
        if (partial && !pkt_tx_emulate(p, dp->caps.flags)) {
            netdev_counter_add(&qs->offload_contract, 1);
            pkt_free(p);
            continue;
        }
        sent++;
        bytes += p->len;
        if (!dp->tx_keep || dummy_fifo_push(&dp->txq[qid], p))
            pkt_free(p); /* not kept (or no memory to keep it) */
    }
    netdev_counter_add(&qs->packets, sent);
    netdev_counter_add(&qs->bytes, bytes);
}

static int dummy_send(struct netdev *dev, unsigned qid, struct pkt **pkts,
                      int n, uint16_t summary)
{
    struct dummy_port *dp = dev->priv;
    int ret;

    if (qid >= dp->n_txq || n < 0) {
        ret = -EINVAL;
    } else if (!dp->link_up) {
        ret = -ENETDOWN;
    } else {
        if (dp->tx_cost_ns && n > 0)
            dummy_busy_wait(dp->tx_cost_ns);
        ret = dp->tx_accept >= 0 && dp->tx_accept < n ? dp->tx_accept : n;
        if (dp->tx_budget[qid] >= 0 && dp->tx_budget[qid] < ret)
            ret = (int)dp->tx_budget[qid];
        if (dp->tx_budget[qid] >= 0)
            dp->tx_budget[qid] -= ret;
        /* Compiled out (-DFS_CSUM_OFF), one loop: not a second copy of
         * the same loop that the compiler may allocate differently. */
        if (FS_CSUM_MACHINERY && (summary & PKT_BATCH_F_PARTIAL))
            dummy_tx_loop(dp, qid, pkts, ret, true);
        else
            dummy_tx_loop(dp, qid, pkts, ret, false);
    }
    dummy_log_send(dp, qid, n, ret);
    return ret;
}

static void dummy_get_caps(const struct netdev *dev, struct netdev_caps *caps)
{
    const struct dummy_port *dp = dev->priv;
    *caps = dp->caps;
}

static void dummy_get_stats(const struct netdev *dev,
                            struct netdev_stats *stats)
{
    const struct dummy_port *dp = dev->priv;
    memset(stats, 0, sizeof *stats);
    for (unsigned q = 0; q < dp->n_rxq; q++) {
        const struct dummy_rxq_stats *s = &dp->rxs[q];
        stats->rx_packets += netdev_counter_read(&s->packets);
        stats->rx_bytes += netdev_counter_read(&s->bytes);
        stats->rx_csum_good += netdev_counter_read(&s->csum_good);
        stats->rx_csum_bad += netdev_counter_read(&s->csum_bad);
    }
    for (unsigned q = 0; q < dp->n_txq; q++) {
        const struct dummy_txq_stats *s = &dp->txs[q];
        stats->tx_packets += netdev_counter_read(&s->packets);
        stats->tx_bytes += netdev_counter_read(&s->bytes);
        stats->tx_offload_contract += netdev_counter_read(&s->offload_contract);
    }
}

static bool dummy_link_up(const struct netdev *dev)
{
    const struct dummy_port *dp = dev->priv;
    return dp->link_up;
}

static const struct netdev_class dummy_class = {
    .type = "dummy",
    .priv_size = sizeof(struct dummy_port),
    .open = dummy_open,
    .close = dummy_close,
    .n_rxq = dummy_n_rxq,
    .n_txq = dummy_n_txq,
    .rxq_recv = dummy_rxq_recv,
    .rxq_peek = dummy_rxq_peek,
    .send = dummy_send,
    .tx_stamps = true,
    .get_caps = dummy_get_caps,
    .get_stats = dummy_get_stats,
    .link_up = dummy_link_up,
    .rx_error = NULL,
};

void netdev_dummy_register(void)
{
    (void)netdev_register(&dummy_class);
}

/* ---- test hooks ---------------------------------------------------------- */

int netdev_dummy_inject(struct netdev *dev, unsigned qid, struct pkt *pkt)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!pkt)
        return -EINVAL;
    if (!dp || qid >= dp->n_rxq) {
        pkt_free(pkt);
        return -EINVAL;
    }
    if (pkt->len > PKT_BUF_MAX) { /* no device frame is longer: the rx
                                   * loop's length sum relies on it */
        pkt_free(pkt);
        return -EMSGSIZE;
    }
    /* What a device delivers: fresh metadata, except what the test set in
     * the device's place (rx time, checksum verdicts, virtio csum info). */
    uint64_t ts = pkt->ts;
    uint8_t csum[CSUM_L_N];
    memcpy(csum, pkt->csum, sizeof csum);
    uint16_t start = pkt->csum_start, offset = pkt->csum_offset;
    uint16_t flags = pkt->flags & (PKT_F_VNET_CSUM | PKT_F_TRUNCATED);
    pkt_reset_meta(pkt);
    pkt->ts = ts;
    memcpy(pkt->csum, csum, sizeof csum);
    pkt->csum_start = start;
    pkt->csum_offset = offset;
    pkt->flags = flags;

    int err = dummy_fifo_push(&dp->rxq[qid], pkt);
    if (err)
        pkt_free(pkt);
    return err;
}

unsigned netdev_dummy_rx_pending(const struct netdev *dev, unsigned qid)
{
    const struct dummy_port *dp = dummy_port_const(dev);
    return dp && qid < dp->n_rxq ? (unsigned)dp->rxq[qid].count : 0;
}

int netdev_dummy_collect(struct netdev *dev, unsigned qid, struct pkt **out,
                         int max)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!dp || qid >= dp->n_txq || max < 0)
        return -EINVAL;
    int n = 0;
    struct pkt *p;
    while (n < max && (p = dummy_fifo_pop(&dp->txq[qid])))
        out[n++] = p;
    return n;
}

unsigned netdev_dummy_tx_pending(const struct netdev *dev, unsigned qid)
{
    const struct dummy_port *dp = dummy_port_const(dev);
    return dp && qid < dp->n_txq ? (unsigned)dp->txq[qid].count : 0;
}

int netdev_dummy_set_tx_budget(struct netdev *dev, unsigned qid, int64_t n)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!dp || qid >= dp->n_txq)
        return -EINVAL;
    dp->tx_budget[qid] = n < 0 ? -1 : n;
    return 0;
}

int netdev_dummy_set_tx_accept(struct netdev *dev, int n)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!dp || n < -1)
        return -EINVAL;
    dp->tx_accept = n;
    return 0;
}

int netdev_dummy_set_link(struct netdev *dev, bool up)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!dp)
        return -EINVAL;
    dp->link_up = up;
    return 0;
}

int netdev_dummy_set_live(struct netdev *dev, bool live)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!dp)
        return -EINVAL;
    dp->live = live;
    return 0;
}

int netdev_dummy_set_tx_keep(struct netdev *dev, bool keep)
{
    struct dummy_port *dp = dummy_port(dev);
    if (!dp)
        return -EINVAL;
    dp->tx_keep = keep;
    return 0;
}

uint64_t netdev_dummy_send_calls(const struct netdev *dev)
{
    const struct dummy_port *dp = dummy_port_const(dev);
    return dp ? dp->send_calls : 0;
}

int netdev_dummy_send_log(const struct netdev *dev,
                          struct netdev_dummy_send_rec *out, int max)
{
    const struct dummy_port *dp = dummy_port_const(dev);
    if (!dp || max < 0)
        return -EINVAL;
    uint64_t kept = dp->send_calls < NETDEV_DUMMY_SEND_LOG
                        ? dp->send_calls
                        : NETDEV_DUMMY_SEND_LOG;
    uint64_t n = kept < (uint64_t)max ? kept : (uint64_t)max;
    uint64_t first = dp->send_calls - n;
    for (uint64_t i = 0; i < n; i++)
        out[i] = dp->log[(first + i) % NETDEV_DUMMY_SEND_LOG];
    return (int)n;
}
