/* netdev-dummy.h: in-memory ports ("dummy") for tests and benchmarks.
 *
 * A dummy port has up to NETDEV_MAX_QUEUES rx and tx queues that live in
 * memory. Tests play the device: they inject packets into an rx queue with
 * their rx time in pkt->ts, and collect what the datapath transmitted.
 *
 * Options (all optional; every error names the option):
 *   burst=1..32        packets one rxq_recv returns at most (default 32)
 *   rxqs=1..64         rx queues (default 1)
 *   txqs=1..64         tx queues (default 1)
 *   tx-accept=N        packets one send call accepts at most (default
 *                      unlimited; 0 = a stalled port that accepts nothing)
 *   tx-stall=BOOL      true is the same as tx-accept=0
 *   tx-cost-ns=N       busy-waits N ns in every send call (0..1000000000),
 *                      emulating a doorbell / vhost kick, for benchmarks
 *   tx-keep=BOOL       keep transmitted packets for netdev_dummy_collect()
 *                      (default false: they are counted and freed)
 *   link=up|down       link state (default up); a down port's send returns
 *                      -ENETDOWN and takes nothing
 * Capabilities are the config's 'caps' (none when not given).
 *
 * Rx: rxq_recv(now) returns, in injection order, up to 'burst' packets from
 * the head of the queue whose ts <= now (a head with ts > now holds back
 * the packets behind it). rxq_peek reports READY with the head's ts, or EOF
 * when the queue is empty -- EMPTY instead once the port is made live with
 * netdev_dummy_set_live().
 *
 * The test hooks below accept only dummy ports: for any other netdev they
 * return -EINVAL (or 0 / false for the counters) and do nothing. */
#ifndef FS_NETDEV_DUMMY_H
#define FS_NETDEV_DUMMY_H

#include <stdbool.h>
#include <stdint.h>

#include "netdev.h"
#include "packet.h"

/* Send calls whose record netdev_dummy_send_log() keeps (the most recent). */
#define NETDEV_DUMMY_SEND_LOG 256

/* One send call, as the port saw it. */
struct netdev_dummy_send_rec {
    unsigned qid;
    int offered;  /* n passed to send */
    int accepted; /* what send returned (a count, or -errno) */
};

/* Registers the "dummy" type (nothing happens if it already is). */
void netdev_dummy_register(void);

/* Queues 'pkt' at the tail of rx queue 'qid', taking ownership (also on
 * failure, when the packet is freed). The packet is delivered as the device
 * would deliver it: pkt_reset_meta() state, except ts, csum[], csum_start,
 * csum_offset and the device flags PKT_F_VNET_CSUM and PKT_F_TRUNCATED,
 * which are kept as the test set them. Returns 0, -EINVAL (bad port or
 * qid), -EMSGSIZE (len beyond PKT_BUF_MAX) or -ENOMEM. */
int netdev_dummy_inject(struct netdev *dev, unsigned qid, struct pkt *pkt);

/* Packets waiting in rx queue 'qid' (whatever their ts). */
unsigned netdev_dummy_rx_pending(const struct netdev *dev, unsigned qid);

/* Dequeues up to 'max' kept transmitted packets of tx queue 'qid' into
 * out[], oldest first; the caller owns them. Returns how many, or -EINVAL. */
int netdev_dummy_collect(struct netdev *dev, unsigned qid, struct pkt **out,
                         int max);

/* Kept transmitted packets waiting in tx queue 'qid'. */
unsigned netdev_dummy_tx_pending(const struct netdev *dev, unsigned qid);

/* Packets one send call accepts at most from now on; -1 = unlimited,
 * 0 = stalled. Returns 0 or -EINVAL. */
int netdev_dummy_set_tx_accept(struct netdev *dev, int n);

/* Limits what tx queue qid accepts, over all send calls from now on, to n
 * packets (n < 0: unlimited, the default): a ring of that many free slots,
 * which a simulator refills as the device drains it. Returns 0 or -EINVAL. */
int netdev_dummy_set_tx_budget(struct netdev *dev, unsigned qid, int64_t n);

/* Link up (true) or down (false). Returns 0 or -EINVAL. */
int netdev_dummy_set_link(struct netdev *dev, bool up);

/* Live (true): an empty rx queue peeks EMPTY instead of EOF. */
int netdev_dummy_set_live(struct netdev *dev, bool live);

/* Keep transmitted packets (true) or count and free them (false). Packets
 * already kept stay until collected or until close. */
int netdev_dummy_set_tx_keep(struct netdev *dev, bool keep);

/* Send calls so far, on every tx queue, including refused ones. This count
 * and the send log are exact for a port that one thread at a time sends
 * on (the tests that use them); the device counters (netdev_get_stats) are
 * kept per queue and exact with any number of PMDs. */
uint64_t netdev_dummy_send_calls(const struct netdev *dev);

/* Copies the records of the most recent min(max, kept) send calls into
 * out[], oldest first (at most NETDEV_DUMMY_SEND_LOG calls are kept).
 * Returns how many it copied, or -EINVAL. */
int netdev_dummy_send_log(const struct netdev *dev,
                          struct netdev_dummy_send_rec *out, int max);

#endif
