/* netdev.h: the backend vtable and the registry of backend types.
 *
 * A backend (dummy, pcap, dpdk) implements struct netdev_class and registers
 * it by type name. The datapath core talks to ports only through this
 * header. Backends see only this header, packet.h and what they expose. */
#ifndef FS_NETDEV_H
#define FS_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netdev-caps.h"
#include "offload.h"
#include "packet.h"
#include "util.h"

#define NETDEV_NAME_MAX 32
#define NETDEV_MAX_QUEUES 64


/* One "key = value" option of a port, as written in the config. */
struct netdev_opt {
    const char *key;
    const char *value;
    int line; /* line in the config file, 0 if not from a file */
};

/* What open() receives. Strings are owned by the caller and valid only
 * during open(): a backend copies what it keeps. */
struct netdev_args {
    const struct netdev_opt *opts; /* backend-specific options */
    size_t n_opts;
    const char *base_dir; /* resolve input paths against this ("" = cwd) */
    const char *out_dir;  /* resolve output paths against this ("" = cwd) */
    bool caps_set;        /* the config gave 'caps': use 'caps' */
    struct netdev_caps caps;
};

/* Backend counters (the core keeps its own per-port datapath counters). */
struct netdev_stats {
    uint64_t rx_packets, rx_bytes;
    uint64_t tx_packets, tx_bytes;
    uint64_t rx_dropped; /* dropped by the backend before the core saw them */
    uint64_t tx_dropped;
    uint64_t rx_errors, tx_errors;
    /* Accepted by send() but dropped: a PARTIAL layer the device did not
     * announce (the core reports these as offload_contract drops). */
    uint64_t tx_offload_contract;
    /* Received packets the device vouched for (some layer GOOD, none BAD)
     * and found wrong (some layer BAD). */
    uint64_t rx_csum_good, rx_csum_bad;
};

/* Result of netdev_class.rxq_peek(). */
enum netdev_rx_state {
    NETDEV_RX_READY = 0, /* a frame is pending; *next_ts is its time */
    NETDEV_RX_EMPTY = 1, /* nothing now, more may come (live device) */
    NETDEV_RX_EOF = 2,   /* a finite source is exhausted */
};

struct netdev;

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
    void (*get_stats)(const struct netdev *dev, struct netdev_stats *stats);
    bool (*link_up)(const struct netdev *dev);
    /* Optional: text of the error that ended reception (e.g. a truncated
     * pcap file), NULL if none. Valid until close. */
    const char *(*rx_error)(const struct netdev *dev);
};

struct netdev {
    const struct netdev_class *class;
    char name[NETDEV_NAME_MAX];
    void *priv; /* class->priv_size bytes */
};

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

/* Registers a backend type. Returns 0, or -EEXIST for a duplicate name. */
int netdev_register(const struct netdev_class *class);

/* Forgets every registered type (tests and shutdown). */
void netdev_unregister_all(void);

const struct netdev_class *netdev_class_find(const char *type);

/* Writes the registered type names, comma separated, into buf. */
void netdev_types(char *buf, size_t size);

/* Opens a port of the given type. On failure returns NULL with the reason
 * in err. */
struct netdev *netdev_open(const char *name, const char *type,
                           const struct netdev_args *args, char *err,
                           size_t errlen);

void netdev_close(struct netdev *dev);

/* Convenience wrappers for optional operations. */
enum netdev_rx_state netdev_rxq_peek(struct netdev *dev, unsigned qid,
                                     uint64_t *next_ts);
void netdev_get_caps(const struct netdev *dev, struct netdev_caps *caps);
void netdev_get_stats(const struct netdev *dev, struct netdev_stats *stats);
bool netdev_link_up(const struct netdev *dev);
const char *netdev_rx_error(const struct netdev *dev);

/* Option helpers for backends: the last value given for 'key', or NULL. */
const char *netdev_opt_get(const struct netdev_args *args, const char *key);

/* Parses a non-negative integer option in [min, max]. Returns 0 (with *out
 * unchanged when the option is absent) or -1 with a message in err. */
int netdev_opt_uint(const struct netdev_args *args, const char *key,
                    unsigned long min, unsigned long max, unsigned long *out,
                    char *err, size_t errlen);

/* Parses a boolean option (true/false/yes/no/on/off/1/0). */
int netdev_opt_bool(const struct netdev_args *args, const char *key, bool *out,
                    char *err, size_t errlen);

/* Fails with "unknown option 'x'" for any key not in the NULL-terminated
 * list 'known'. Returns 0 or -1. */
int netdev_opt_check(const struct netdev_args *args, const char *const *known,
                     char *err, size_t errlen);

/* Joins dir and path (path unchanged if absolute or dir empty) into buf.
 * Returns 0, or -1 if it does not fit. */
int netdev_path(const char *dir, const char *path, char *buf, size_t size);

/* Parses a capability list ("tx-ip-csum,tx-l4-csum,guest-csum,rx-csum",
 * "none", or empty) into caps. Returns 0 or -1 naming the bad word. */
int netdev_caps_parse(const char *s, struct netdev_caps *caps, char *err,
                      size_t errlen);

/* Formats caps as the same list ("none" if empty). */
void netdev_caps_format(const struct netdev_caps *caps, char *buf, size_t size);

#endif
