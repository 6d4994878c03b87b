/* netdev.h: ports as the datapath and the tools above it see them.
 *
 * The client side of the backend contract: open a port of a registered
 * type, receive, send, read its capabilities, counters and link state.
 * What a backend implements is in netdev-provider.h; the datapath core
 * and the layers above it use these functions only. */
#ifndef FS_NETDEV_H
#define FS_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netdev-caps.h"
#include "packet.h"

#define NETDEV_NAME_MAX 32
#define NETDEV_MAX_QUEUES 64

struct netdev;

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

/* Opens a port of a registered type. On failure returns NULL with a one-line
 * reason in err (naming the bad option, if any). */
struct netdev *netdev_open(const char *name, const char *type,
                           const struct netdev_args *args, char *err,
                           size_t errlen);

/* Releases the port and every packet it still holds. NULL is ignored. */
void netdev_close(struct netdev *dev);

const char *netdev_name(const struct netdev *dev);
const char *netdev_type(const struct netdev *dev);
unsigned netdev_n_rxq(const struct netdev *dev);
unsigned netdev_n_txq(const struct netdev *dev);

/* Appends up to a burst of packets received on rx queue qid whose rx time
 * is <= now to batch; returns how many (see netdev_class.rxq_recv). */
int netdev_rxq_recv(struct netdev *dev, unsigned qid, struct pkt_batch *batch, uint64_t now);

/* The time of the next frame pending on qid (see netdev_class.rxq_peek). */
enum netdev_rx_state netdev_rxq_peek(struct netdev *dev, unsigned qid,
                                     uint64_t *next_ts);

/* Transmits pkts[0..n) on tx queue qid: returns how many were accepted (a
 * prefix, now owned by the device) or -errno (see netdev_class.send). */
int netdev_send(struct netdev *dev, unsigned qid, struct pkt **pkts, int n, uint16_t summary);

/* True if send() reads pkt->ts (netdev_class.tx_stamps). */
bool netdev_tx_stamps(const struct netdev *dev);

void netdev_get_caps(const struct netdev *dev, struct netdev_caps *caps);
void netdev_get_stats(const struct netdev *dev, struct netdev_stats *stats);
bool netdev_link_up(const struct netdev *dev);

/* Text of the error that ended reception (e.g. a truncated pcap), or NULL. */
const char *netdev_rx_error(const struct netdev *dev);

/* Option helpers (for backends and tunnel ports): the last value given for 'key', or NULL. */
const char *netdev_opt_get(const struct netdev_args *args, const char *key);

/* Parses a non-negative decimal integer option in [min, max] (the syntax
 * of fs_parse_uint(): digits only, "010" is 10, "0x10" is refused).
 * Returns 0 (with *out unchanged when the option is absent) or -1 with
 * "option 'KEY': 'VALUE' is not an integer in MIN..MAX" in err. */
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

/* True if a backend of this type is registered. */
bool netdev_type_known(const char *type);

/* Writes the registered type names, comma separated, into buf. */
void netdev_types(char *buf, size_t size);

/* Forgets every registered type (tests and shutdown). */
void netdev_unregister_all(void);

/* Parses a capability list ("tx-ip-csum,tx-l4-csum,guest-csum,rx-csum",
 * "none", or empty) into caps. Returns 0 or -1 naming the bad word. */
int netdev_caps_parse(const char *s, struct netdev_caps *caps, char *err,
                      size_t errlen);

/* Formats caps as the same list ("none" if empty). */
void netdev_caps_format(const struct netdev_caps *caps, char *buf, size_t size);

#endif
