/* netdev-provider.h: what a backend implements, and nothing else.
 *
 * A backend (dummy, pcap, dpdk) fills a struct netdev_class and registers
 * it by type name; the datapath reaches it only through the functions of
 * netdev.h, which call these members. A backend sees this header, the
 * packet (packet.h), the checksum states and device emulation helpers
 * (offload.h), the protocol constants (proto.h) and fs_errf() (util.h):
 * the build compiles backends with only these on their include path. */
#ifndef FS_NETDEV_PROVIDER_H
#define FS_NETDEV_PROVIDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "netdev.h"
#include "offload.h"
#include "packet.h"
#include "util.h"

struct netdev_class {
    const char *type; /* registry name: "dummy", "pcap", "dpdk" */
    size_t priv_size; /* bytes of netdev->priv, zeroed by netdev_open() */

    /* Opens the device. On failure returns -errno or -1 and writes a clear,
     * one-line reason into err (naming the bad option, if any). */
    int (*open)(struct netdev *dev, const struct netdev_args *args, char *err,
                size_t errlen);
    /* Releases everything open() acquired, including queued packets. */
    void (*close)(struct netdev *dev);

    unsigned (*n_rxq)(const struct netdev *dev);
    unsigned (*n_txq)(const struct netdev *dev);

    /* Receives up to the device's burst size (at most PKT_BATCH_MAX) packets
     * into 'batch' (appended; batch->count grows) whose rx time is <= now, and
     * returns how many. Received packets have pkt_reset_meta() state plus
     * whatever checksum verdicts the device delivers. */
    int (*rxq_recv)(struct netdev *dev, unsigned qid, struct pkt_batch *batch,
                    uint64_t now);
    /* Optional (NULL = always EMPTY): the time of the next pending frame. */
    enum netdev_rx_state (*rxq_peek)(struct netdev *dev, unsigned qid,
                                     uint64_t *next_ts);

    /* Transmits pkts[0..n-1] in order. Returns how many it accepted (a
     * prefix of the array; it owns those now), or -errno when it took none
     * because of an error (not just a full queue). 'summary' bounds the
     * packets' PKT_BATCH_F_* flags (a bit may be set that no packet has):
     * without PKT_BATCH_F_PARTIAL no packet has a PARTIAL layer, and the
     * device may skip its per-packet offload work. */
    int (*send)(struct netdev *dev, unsigned qid, struct pkt **pkts, int n,
                uint16_t summary);
    /* True if send() reads pkt->ts (a capture's timestamps): the core then
     * sets it to the time of the flush before the call. False: pkt->ts is
     * left as it was (the core spares the device a pass over the batch). */
    bool tx_stamps;

    void (*get_caps)(const struct netdev *dev, struct netdev_caps *caps);
    /* May be called from a control thread while PMDs poll and send: read
     * counters that PMDs write as netdev_counter (or an equivalent). */
    void (*get_stats)(const struct netdev *dev, struct netdev_stats *stats);
    bool (*link_up)(const struct netdev *dev);
    /* Optional: text of the error that ended reception (e.g. a truncated
     * pcap file), NULL if none. Valid until close. */
    const char *(*rx_error)(const struct netdev *dev);
};

/* A port: the class and the backend's private state. */
struct netdev {
    const struct netdev_class *class;
    char name[NETDEV_NAME_MAX];
    void *priv; /* class->priv_size bytes */
};

/* A device counter that get_stats() reads while PMDs run. It has one
 * writer at a time: the PMD that polls the rx queue, or the PMDs that send
 * on a tx queue (serialised by that queue's lock when they share it). The
 * writer adds with a relaxed load and a relaxed store, no locked
 * instruction (on x86 the same code as a plain add); readers load it
 * relaxed and never see a torn value. */
typedef _Atomic uint64_t netdev_counter;

static inline void netdev_counter_add(netdev_counter *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline uint64_t netdev_counter_read(const netdev_counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Registers a backend type. Returns 0, -EEXIST for a duplicate name or
 * -ENOSPC when the registry is full. The registry is filled at start-up and
 * only read afterwards. */
int netdev_register(const struct netdev_class *class);

/* The registered class of a type, or NULL. */
const struct netdev_class *netdev_class_find(const char *type);

/* Counts the rx verdicts of batch->pkts[from..count) (some layer BAD: bad;
 * else some layer GOOD: good) and ORs their summaries into batch->flags. */
void pkt_rx_classify(struct pkt_batch *batch, unsigned from, uint64_t *good, uint64_t *bad);

/* What a backend does with a packet it delivers one at a time: emulates the
 * rx verdicts the device announced (rx_caps & NETDEV_RX_*), adds it to the
 * batch and counts its verdicts. All UNKNOWN (the common case) costs one
 * test. A backend that delivers bursts gathers the states itself and calls
 * pkt_rx_classify() only for bursts it cannot settle (netdev-dummy.c). */
static inline void pkt_rx_deliver(struct pkt *p, uint32_t rx_caps, struct pkt_batch *batch,
                                  uint64_t *good, uint64_t *bad)
{
    if (FS_CSUM_MACHINERY && (rx_caps & (NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM)))
        pkt_rx_verify_emulate(p, rx_caps);
    pkt_batch_add(batch, p);
    uint32_t s;
    memcpy(&s, p->csum, sizeof s);
    if (FS_CSUM_MACHINERY && s)
        pkt_rx_classify(batch, batch->count - 1u, good, bad);
}

#endif
