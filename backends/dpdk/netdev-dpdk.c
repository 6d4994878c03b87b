/* netdev-dpdk.c: DPDK ethdev ports (see netdev-dpdk.h for options and
 * semantics). Local names use the dpdkdev_ prefix: rte_ belongs to DPDK. */
#include "netdev-dpdk.h"

#include "netdev-provider.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_vhost.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_spinlock.h>
#include <rte_vhost.h>

#include "offload.h"
#include "packet.h"
#include "proto.h"

#define DPDKDEV_DEVARGS_MAX 1024
#define DPDKDEV_DEF_DESC 1024
#define DPDKDEV_DEF_MBUF_SIZE (2048 + RTE_PKTMBUF_HEADROOM)
#define DPDKDEV_INFLIGHT 8192 /* mbufs held by the core's queues, clones... */

/* virtio-net feature bits (virtio spec 5.1.3). */
#define DPDKDEV_VIRTIO_F_CSUM 0
#define DPDKDEV_VIRTIO_F_GUEST_CSUM 1

/* RTE_MBUF_F_TX_* bits the backend sets; cleared with and-not before. */
#define DPDKDEV_TX_FLAGS                                                       \
    (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_IP_CKSUM |       \
     RTE_MBUF_F_TX_L4_MASK | RTE_MBUF_F_TX_OUTER_IPV4 |                        \
     RTE_MBUF_F_TX_OUTER_IPV6 | RTE_MBUF_F_TX_OUTER_IP_CKSUM |                 \
     RTE_MBUF_F_TX_OUTER_UDP_CKSUM | RTE_MBUF_F_TX_TUNNEL_MASK)

/* Counters of one queue: only its PMD writes them (the PMDs sharing a tx
 * queue one at a time), a control thread may read them (netdev_counter). */
struct dpdkdev_qstats {
    netdev_counter packets, bytes, dropped, errors;
    netdev_counter multiseg, copied, nombuf, prep_failed, offload, sw_csum, notconn;
} __rte_cache_aligned;

struct dpdkdev_port {
    uint16_t port_id;
    bool probed;  /* we probed it: remove the device at close */
    bool started;
    bool vhost;
    bool cb_lsc, cb_qstate;
    char devname[RTE_ETH_NAME_MAX_LEN];
    char driver[64];
    struct rte_mempool *pool;
    unsigned n_rxq, n_txq, rxd, txd, burst;
    uint64_t hw_rx_capa, hw_tx_capa; /* the device's offload capabilities */
    uint64_t rx_ol, tx_ol;           /* enabled at configure */
    uint32_t caps;                   /* announced NETDEV_* */
    bool rx_csum;                    /* rx verdicts are meaningful */

    /* vhost state, written by the vhost event thread. */
    atomic_bool link;                /* vhost: a guest is connected */
    atomic_bool guest_csum;          /* vhost: guest negotiated GUEST_CSUM */
    atomic_bool host_csum;           /* vhost: guest negotiated CSUM */
    atomic_uint_fast64_t link_changes;
    atomic_uint_fast64_t remaps;
    rte_spinlock_t remap_lock;       /* serialises map recomputation */
    uint64_t txq_enabled;            /* bit per tx queue (guest rx vring) */
    atomic_int txq_map[NETDEV_MAX_QUEUES]; /* qid -> device queue, -1 none */
    rte_spinlock_t txq_lock[NETDEV_MAX_QUEUES];

    struct dpdkdev_qstats rxs[NETDEV_MAX_QUEUES];
    struct dpdkdev_qstats txs[NETDEV_MAX_QUEUES];
};

static struct dpdkdev_port *dpdkdev_priv(const struct netdev *dev)
{
    return dev->priv;
}

/* ---- EAL ----------------------------------------------------------------- */

/* The EAL's runtime directory of this (primary) process, removed at exit.
 * The EAL is one per process, so this is too. */
static char *eal_runtime_dir;

/* Whether argv[1..argc) names option opt, alone or as opt=VALUE. */
static bool eal_args_have(int argc, char **argv, const char *opt)
{
    size_t n = strlen(opt);
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], opt, n) && (argv[i][n] == '\0' || argv[i][n] == '='))
            return true;
    return false;
}

int netdev_dpdk_init(int argc, char **argv, char *err, size_t errlen)
{
    /* rte_eal_init permutes argv: give it a copy of the pointers. The EAL
     * runs --in-memory unless told otherwise, as OVS runs it, so that no
     * hugepage file outlives the process; --in-memory excludes --no-huge and
     * --legacy-mem, whose runtime files netdev_dpdk_fini() removes. A
     * process other DPDK processes attach to (--proc-type) keeps them. */
    bool shared = eal_args_have(argc, argv, "--proc-type");
    bool in_memory = !shared && !eal_args_have(argc, argv, "--in-memory") &&
                     !eal_args_have(argc, argv, "--no-huge") &&
                     !eal_args_have(argc, argv, "--legacy-mem");
    int n = argc + (in_memory && argc > 0);
    char **copy = calloc((size_t)n + 1, sizeof *copy);
    if (!copy) {
        fs_errf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int k = 0;
    for (int i = 0; i < argc; i++) {
        copy[k++] = argv[i];
        if (i == 0 && in_memory)
            copy[k++] = "--in-memory";
    }
    rte_errno = 0;
    int rc = rte_eal_init(k, copy);
    free(copy);
    if (rc < 0) {
        int e = rte_errno > 0 ? rte_errno : EIO;
        fs_errf(err, errlen, "EAL initialisation failed: %s", rte_strerror(e));
        return -e;
    }
    if (!shared)
        eal_runtime_dir = strdup(rte_eal_get_runtime_dir());
    return 0;
}

/* Removes the files the EAL left in its runtime directory (config, memseg
 * arrays, the multi-process socket) and the directory itself. */
static void eal_runtime_dir_remove(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(path);
}

void netdev_dpdk_fini(void)
{
    rte_eal_cleanup();
    if (eal_runtime_dir) {
        eal_runtime_dir_remove(eal_runtime_dir);
        free(eal_runtime_dir);
        eal_runtime_dir = NULL;
    }
}

int netdev_dpdk_thread_register(void)
{
    return rte_thread_register() == 0 ? 0 : -1;
}

void netdev_dpdk_thread_unregister(void)
{
    rte_thread_unregister();
}

/* ---- mbuf <-> pkt ------------------------------------------------------- */

static void dpdkdev_pkt_release(struct pkt *p)
{
    rte_pktmbuf_free(p->owner);
}

/* Moves the frame inside the mbuf's buffer to get 'headroom' bytes. */
static int dpdkdev_pkt_grow(struct pkt *p, uint32_t headroom)
{
    if ((uint64_t)headroom + p->len > p->buf_size)
        return -ENOSPC;
    uint8_t *nd = p->buf + headroom;
    memmove(nd, p->data, p->len);
    p->data = nd;
    return 0;
}

static const struct pkt_ops dpdkdev_pkt_ops = {
    .release = dpdkdev_pkt_release,
    .grow_headroom = dpdkdev_pkt_grow,
};

static inline struct pkt *dpdkdev_mbuf_pkt(struct rte_mbuf *m)
{
    return rte_mbuf_to_priv(m);
}

/* Points the struct pkt in m's private area at m: the fields that stay
 * the same for the mbuf's whole life (buffer, ops, owner). */
static void dpdkdev_pkt_bind(struct rte_mbuf *m)
{
    struct pkt *p = dpdkdev_mbuf_pkt(m);
    p->buf = m->buf_addr;
    p->buf_size = m->buf_len;
    p->ops = &dpdkdev_pkt_ops;
    p->owner = m;
}

static void dpdkdev_pkt_bind_obj(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
    (void)mp;
    (void)arg;
    (void)idx;
    dpdkdev_pkt_bind(obj);
}

static inline enum csum_state dpdkdev_ip_state(uint64_t f)
{
    switch (f & RTE_MBUF_F_RX_IP_CKSUM_MASK) {
    case RTE_MBUF_F_RX_IP_CKSUM_GOOD:
        return CSUM_GOOD;
    case RTE_MBUF_F_RX_IP_CKSUM_BAD:
        return CSUM_BAD;
    case RTE_MBUF_F_RX_IP_CKSUM_NONE:
        return CSUM_PARTIAL;
    default:
        return CSUM_UNKNOWN;
    }
}

static inline enum csum_state dpdkdev_l4_state(uint64_t f)
{
    switch (f & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
    case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
        return CSUM_GOOD;
    case RTE_MBUF_F_RX_L4_CKSUM_BAD:
        return CSUM_BAD;
    case RTE_MBUF_F_RX_L4_CKSUM_NONE:
        return CSUM_PARTIAL;
    default:
        return CSUM_UNKNOWN;
    }
}

/* ---- capabilities ------------------------------------------------------- */

static uint32_t dpdkdev_hw_caps(const struct dpdkdev_port *dp)
{
    uint32_t c = 0;
    if (dp->vhost) {
        /* net_vhost (22.11) completes a guest's partial checksums itself
         * unless rx checksum offload is enabled: announce and enable it so
         * they arrive PARTIAL (L4_CKSUM_NONE) and stay lazy. */
        c = NETDEV_TX_GUEST_CSUM;
        if ((dp->hw_rx_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) &&
            (dp->hw_rx_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM))
            c |= NETDEV_RX_L4_CSUM;
        return c;
    }
    if (dp->hw_tx_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM)
        c |= NETDEV_TX_IP_CSUM;
    if ((dp->hw_tx_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM) &&
        (dp->hw_tx_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM))
        c |= NETDEV_TX_L4_CSUM;
    if (dp->hw_rx_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM)
        c |= NETDEV_RX_IP_CSUM;
    if ((dp->hw_rx_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) &&
        (dp->hw_rx_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM))
        c |= NETDEV_RX_L4_CSUM;
    return c;
}

/* ---- vhost events ------------------------------------------------------- */

/* Recomputes txq_map from txq_enabled: an enabled queue maps to itself, a
 * disabled one to enabled[qid % n_enabled], none to -1. */
static void dpdkdev_remap(struct dpdkdev_port *dp)
{
    int en[NETDEV_MAX_QUEUES];
    unsigned n = 0;
    for (unsigned q = 0; q < dp->n_txq; q++)
        if (dp->txq_enabled & (1ull << q))
            en[n++] = (int)q;
    for (unsigned q = 0; q < dp->n_txq; q++) {
        int to = -1;
        if (dp->txq_enabled & (1ull << q))
            to = (int)q;
        else if (n)
            to = en[q % n];
        atomic_store_explicit(&dp->txq_map[q], to, memory_order_release);
    }
}

static void dpdkdev_vhost_features(struct dpdkdev_port *dp)
{
    uint64_t f = 0;
    int vid = rte_eth_vhost_get_vid_from_port_id(dp->port_id);
    if (vid >= 0 && rte_vhost_get_negotiated_features(vid, &f) != 0)
        f = 0;
    atomic_store(&dp->guest_csum, (f >> DPDKDEV_VIRTIO_F_GUEST_CSUM) & 1);
    atomic_store(&dp->host_csum, (f >> DPDKDEV_VIRTIO_F_CSUM) & 1);
}

/* Applies the guest's pending vring enable/disable events (net_vhost keeps
 * them until read, also those from before the callbacks were registered)
 * and remaps the tx queues. */
static void dpdkdev_vhost_queue_events(struct dpdkdev_port *dp)
{
    struct rte_eth_vhost_queue_event ev;
    rte_spinlock_lock(&dp->remap_lock);
    while (rte_eth_vhost_get_queue_event(dp->port_id, &ev) == 0) {
        if (ev.rx || ev.queue_id >= dp->n_txq)
            continue;
        if (ev.enable)
            dp->txq_enabled |= 1ull << ev.queue_id;
        else
            dp->txq_enabled &= ~(1ull << ev.queue_id);
        atomic_fetch_add(&dp->remaps, 1);
    }
    dpdkdev_remap(dp);
    rte_spinlock_unlock(&dp->remap_lock);
}

static int dpdkdev_event_cb(uint16_t port_id, enum rte_eth_event_type type,
                            void *arg, void *ret_param)
{
    struct dpdkdev_port *dp = arg;
    (void)ret_param;
    if (port_id != dp->port_id)
        return 0;
    if (type == RTE_ETH_EVENT_INTR_LSC) {
        struct rte_eth_link link;
        memset(&link, 0, sizeof link);
        rte_eth_link_get_nowait(port_id, &link);
        bool up = link.link_status == RTE_ETH_LINK_UP;
        if (up) {
            dpdkdev_vhost_features(dp);
            dpdkdev_vhost_queue_events(dp); /* any not yet reported */
        } else {
            /* The guest's vrings went with it (net_vhost reports no queue
             * event for that): the next guest enables its own. */
            rte_spinlock_lock(&dp->remap_lock);
            dp->txq_enabled = 0;
            dpdkdev_remap(dp);
            rte_spinlock_unlock(&dp->remap_lock);
        }
        atomic_store(&dp->link, up);
        atomic_fetch_add(&dp->link_changes, 1);
        fprintf(stderr, "flowswitch: dpdk port %s: guest %s%s\n", dp->devname,
                up ? "connected" : "disconnected",
                up ? (atomic_load(&dp->guest_csum) ? " (guest-csum on)"
                                                   : " (guest-csum off)")
                   : "");
    } else if (type == RTE_ETH_EVENT_QUEUE_STATE) {
        dpdkdev_vhost_queue_events(dp);
    }
    return 0;
}

/* ---- open / close ------------------------------------------------------- */

static const char *const dpdkdev_known_opts[] = {
    "devargs", "rxqs", "txqs", "rxd", "txd", "mbufs", "mbuf-cache", "mbuf-size",
    "burst", NULL,
};

static void dpdkdev_cleanup(struct dpdkdev_port *dp)
{
    if (dp->cb_lsc)
        rte_eth_dev_callback_unregister(dp->port_id, RTE_ETH_EVENT_INTR_LSC,
                                        dpdkdev_event_cb, dp);
    if (dp->cb_qstate)
        rte_eth_dev_callback_unregister(dp->port_id, RTE_ETH_EVENT_QUEUE_STATE,
                                        dpdkdev_event_cb, dp);
    dp->cb_lsc = dp->cb_qstate = false;
    if (dp->started) {
        rte_eth_dev_stop(dp->port_id);
        dp->started = false;
    }
    if (dp->probed) {
        struct rte_eth_dev_info info;
        struct rte_device *rdev = NULL;
        if (rte_eth_dev_info_get(dp->port_id, &info) == 0)
            rdev = info.device;
        rte_eth_dev_close(dp->port_id);
        if (rdev)
            rte_dev_remove(rdev);
        dp->probed = false;
    }
    if (dp->pool) {
        /* Mbufs of this pool may still sit in another port's tx ring (or in
         * a ring another program reads): free the pool only when every mbuf
         * is back, else leave it to rte_eal_cleanup. */
        if (rte_mempool_full(dp->pool))
            rte_mempool_free(dp->pool);
        dp->pool = NULL;
    }
}

/* Finds or probes the ethdev named by devargs (its name is the part before
 * the first comma). */
static int dpdkdev_attach(struct dpdkdev_port *dp, const char *devargs, char *err,
                          size_t errlen)
{
    char name[RTE_ETH_NAME_MAX_LEN];
    size_t n = strcspn(devargs, ",");
    if (n == 0 || n >= sizeof name) {
        fs_errf(err, errlen, "devargs '%s': bad device name", devargs);
        return -1;
    }
    memcpy(name, devargs, n);
    name[n] = '\0';
    uint16_t pid;
    if (rte_eth_dev_get_port_by_name(name, &pid) == 0) {
        dp->port_id = pid;
        snprintf(dp->devname, sizeof dp->devname, "%s", name);
        return 0;
    }
    char full[DPDKDEV_DEVARGS_MAX];
    int w;
    /* vhost: rx-style (compliant) offload flags, see netdev-dpdk.h. */
    if (!strncmp(name, "net_vhost", 9) && !strstr(devargs, "legacy-ol-flags"))
        w = snprintf(full, sizeof full, "%s,legacy-ol-flags=0", devargs);
    else
        w = snprintf(full, sizeof full, "%s", devargs);
    if (w < 0 || (size_t)w >= sizeof full) {
        fs_errf(err, errlen, "devargs too long");
        return -1;
    }
    int rc = rte_dev_probe(full);
    if (rc < 0) {
        fs_errf(err, errlen, "devargs '%s': probe failed: %s", devargs,
                        rte_strerror(-rc));
        return -1;
    }
    if (rte_eth_dev_get_port_by_name(name, &pid) != 0) {
        fs_errf(err, errlen,
                        "devargs '%s': probed, but no ethdev named '%s' appeared",
                        devargs, name);
        return -1;
    }
    dp->port_id = pid;
    dp->probed = true;
    snprintf(dp->devname, sizeof dp->devname, "%s", name);
    return 0;
}

static int dpdkdev_open(struct netdev *dev, const struct netdev_args *args, char *err,
                        size_t errlen)
{
    struct dpdkdev_port *dp = dpdkdev_priv(dev);
    if (netdev_opt_check(args, dpdkdev_known_opts, err, errlen))
        return -1;
    const char *devargs = netdev_opt_get(args, "devargs");
    if (!devargs || !devargs[0]) {
        fs_errf(err, errlen, "missing option 'devargs' (e.g. devargs=net_null0)");
        return -1;
    }
    unsigned long rxqs = 1, txqs = 1, rxd = DPDKDEV_DEF_DESC, txd = DPDKDEV_DEF_DESC;
    unsigned long burst = PKT_BATCH_MAX, mbufs = 0, cache = ~0ul;
    unsigned long mbuf_size = DPDKDEV_DEF_MBUF_SIZE;
    if (netdev_opt_uint(args, "rxqs", 0, NETDEV_MAX_QUEUES, &rxqs, err, errlen) ||
        netdev_opt_uint(args, "txqs", 1, NETDEV_MAX_QUEUES, &txqs, err, errlen) ||
        netdev_opt_uint(args, "rxd", 64, 16384, &rxd, err, errlen) ||
        netdev_opt_uint(args, "txd", 64, 16384, &txd, err, errlen) ||
        netdev_opt_uint(args, "burst", 1, PKT_BATCH_MAX, &burst, err, errlen) ||
        netdev_opt_uint(args, "mbufs", 1024, 1ul << 24, &mbufs, err, errlen) ||
        netdev_opt_uint(args, "mbuf-cache", 0, RTE_MEMPOOL_CACHE_MAX_SIZE, &cache,
                        err, errlen) ||
        netdev_opt_uint(args, "mbuf-size", RTE_PKTMBUF_HEADROOM + 64, 65535,
                        &mbuf_size, err, errlen))
        return -1;
    dp->n_rxq = (unsigned)rxqs;
    dp->n_txq = (unsigned)txqs;
    dp->rxd = (unsigned)rxd;
    dp->txd = (unsigned)txd;
    dp->burst = (unsigned)burst;
    if (!mbufs)
        mbufs = rxqs * rxd + txqs * txd + DPDKDEV_INFLIGHT;
    if (cache == ~0ul)
        cache = mbufs / 8 < 256 ? mbufs / 8 : 256;
    rte_spinlock_init(&dp->remap_lock);
    for (unsigned q = 0; q < NETDEV_MAX_QUEUES; q++) {
        rte_spinlock_init(&dp->txq_lock[q]);
        atomic_init(&dp->txq_map[q], (int)q);
    }
    atomic_init(&dp->link, false);
    atomic_init(&dp->guest_csum, false);
    atomic_init(&dp->host_csum, false);
    atomic_init(&dp->link_changes, 0);
    atomic_init(&dp->remaps, 0);

    if (dpdkdev_attach(dp, devargs, err, errlen))
        goto fail;

    struct rte_eth_dev_info info;
    int rc = rte_eth_dev_info_get(dp->port_id, &info);
    if (rc) {
        fs_errf(err, errlen, "%s: cannot read device info: %s", dp->devname,
                        rte_strerror(-rc));
        goto fail;
    }
    snprintf(dp->driver, sizeof dp->driver, "%s", info.driver_name);
    dp->vhost = !strcmp(info.driver_name, "net_vhost");
    dp->hw_rx_capa = info.rx_offload_capa;
    dp->hw_tx_capa = info.tx_offload_capa;
    if (rxqs > info.max_rx_queues || txqs > info.max_tx_queues) {
        fs_errf(err, errlen,
                        "%s: rxqs=%lu txqs=%lu exceed the device's %u rx / %u tx queues",
                        dp->devname, rxqs, txqs, info.max_rx_queues, info.max_tx_queues);
        goto fail;
    }

    uint32_t hw = dpdkdev_hw_caps(dp);
    dp->caps = args->caps_set ? (hw & args->caps.flags) : hw;

    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    if (dp->caps & NETDEV_RX_IP_CSUM)
        dp->rx_ol |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
    if (dp->caps & NETDEV_RX_L4_CSUM)
        dp->rx_ol |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
    if (dp->caps & NETDEV_TX_IP_CSUM)
        dp->tx_ol |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    if (dp->caps & NETDEV_TX_L4_CSUM)
        dp->tx_ol |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    if (dp->vhost && (dp->caps & NETDEV_TX_GUEST_CSUM))
        dp->tx_ol |= dp->hw_tx_capa & (RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
                                       RTE_ETH_TX_OFFLOAD_UDP_CKSUM);
    dp->rx_ol &= dp->hw_rx_capa;
    dp->tx_ol &= dp->hw_tx_capa;
    /* Verdicts are read when rx checksum offload is on, and always from
     * vhost (compliant flags: NEEDS_CSUM arrives as L4_CKSUM_NONE). */
    dp->rx_csum = dp->rx_ol != 0 || dp->vhost;
    conf.rxmode.offloads = dp->rx_ol;
    conf.txmode.offloads = dp->tx_ol;
    conf.intr_conf.lsc = dp->vhost ? 1 : 0;

    rc = rte_eth_dev_configure(dp->port_id, (uint16_t)rxqs, (uint16_t)txqs, &conf);
    if (rc) {
        fs_errf(err, errlen, "%s: configure failed: %s", dp->devname,
                        rte_strerror(-rc));
        goto fail;
    }
    uint16_t nrxd = (uint16_t)rxd, ntxd = (uint16_t)txd;
    rte_eth_dev_adjust_nb_rx_tx_desc(dp->port_id, &nrxd, &ntxd);

    char pname[RTE_MEMPOOL_NAMESIZE];
    snprintf(pname, sizeof pname, "fs_mp%u", dp->port_id);
    uint16_t priv = (uint16_t)RTE_ALIGN(sizeof(struct pkt), RTE_MBUF_PRIV_ALIGN);
    int socket = rte_eth_dev_socket_id(dp->port_id);
    dp->pool = rte_pktmbuf_pool_create(pname, (unsigned)mbufs, (unsigned)cache, priv,
                                       (uint16_t)mbuf_size,
                                       socket < 0 ? (int)SOCKET_ID_ANY : socket);
    if (!dp->pool) {
        fs_errf(err, errlen, "%s: cannot create a pool of %lu mbufs: %s",
                        dp->devname, mbufs, rte_strerror(rte_errno));
        goto fail;
    }
    rte_mempool_obj_iter(dp->pool, dpdkdev_pkt_bind_obj, NULL);
    for (unsigned q = 0; q < dp->n_rxq; q++) {
        struct rte_eth_rxconf rxc = info.default_rxconf;
        rxc.offloads = dp->rx_ol;
        rc = rte_eth_rx_queue_setup(dp->port_id, (uint16_t)q, nrxd, (unsigned)socket,
                                    &rxc, dp->pool);
        if (rc) {
            fs_errf(err, errlen, "%s: rx queue %u setup failed: %s",
                            dp->devname, q, rte_strerror(-rc));
            goto fail;
        }
    }
    for (unsigned q = 0; q < dp->n_txq; q++) {
        struct rte_eth_txconf txc = info.default_txconf;
        txc.offloads = dp->tx_ol;
        rc = rte_eth_tx_queue_setup(dp->port_id, (uint16_t)q, ntxd, (unsigned)socket,
                                    &txc);
        if (rc) {
            fs_errf(err, errlen, "%s: tx queue %u setup failed: %s",
                            dp->devname, q, rte_strerror(-rc));
            goto fail;
        }
    }
    if (dp->vhost) {
        /* No queue is enabled until the guest enables its rx vring: a guest
         * with fewer queue pairs than n_txq never enables the others, and
         * every tx queue must then map onto one it did enable. */
        dp->txq_enabled = 0;
        dpdkdev_remap(dp);
        if (rte_eth_dev_callback_register(dp->port_id, RTE_ETH_EVENT_INTR_LSC,
                                          dpdkdev_event_cb, dp) == 0)
            dp->cb_lsc = true;
        if (rte_eth_dev_callback_register(dp->port_id, RTE_ETH_EVENT_QUEUE_STATE,
                                          dpdkdev_event_cb, dp) == 0)
            dp->cb_qstate = true;
    }
    rc = rte_eth_dev_start(dp->port_id);
    if (rc) {
        fs_errf(err, errlen, "%s: start failed: %s", dp->devname,
                        rte_strerror(-rc));
        goto fail;
    }
    dp->started = true;
    if (dp->vhost) {
        /* A guest may have connected before the callbacks were in place:
         * its link, features and enabled queues. */
        struct rte_eth_link link;
        memset(&link, 0, sizeof link);
        rte_eth_link_get_nowait(dp->port_id, &link);
        if (link.link_status == RTE_ETH_LINK_UP) {
            dpdkdev_vhost_features(dp);
            dpdkdev_vhost_queue_events(dp);
            atomic_store(&dp->link, true);
        }
    } else {
        rte_eth_promiscuous_enable(dp->port_id);
    }

    char desc[512];
    netdev_dpdk_describe(dev, desc, sizeof desc);
    fprintf(stderr, "flowswitch: port %s: %s\n", dev->name, desc);
    return 0;

fail:
    dpdkdev_cleanup(dp);
    return -1;
}

static void dpdkdev_close(struct netdev *dev)
{
    dpdkdev_cleanup(dpdkdev_priv(dev));
}

static unsigned dpdkdev_n_rxq(const struct netdev *dev)
{
    return dpdkdev_priv(dev)->n_rxq;
}

static unsigned dpdkdev_n_txq(const struct netdev *dev)
{
    return dpdkdev_priv(dev)->n_txq;
}

/* ---- rx ----------------------------------------------------------------- */

/* The packet of a received mbuf: its frame, fresh metadata, rx time. */
static inline void dpdkdev_pkt_rx(struct pkt *p, const struct rte_mbuf *mb, uint64_t now)
{
    p->data = (uint8_t *)mb->buf_addr + mb->data_off;
    p->len = mb->pkt_len;
    pkt_reset_meta(p);
    p->ts = now;
}

/* Wraps the leading mbufs of m[0..n) that need nothing else (one segment,
 * direct, of our pool: bound at pool creation) into out[], without reading
 * rx verdicts. Returns how many; *bytes grows by their length.
 * dpdkdev_rxq_recv() handles the rest one by one. Out of line: inlined into
 * dpdkdev_rxq_recv(), its loop spills registers to the stack. */
static __attribute__((noinline)) unsigned
dpdkdev_rx_own_prefix(struct rte_mbuf **m, unsigned n, const struct rte_mempool *pool,
                      uint64_t now, struct pkt **out, uint64_t *bytes)
{
    uint64_t b = 0;
    unsigned k = 0;
    for (; k < n; k++) {
        struct rte_mbuf *mb = m[k];
        if (unlikely(mb->nb_segs != 1 || mb->pool != pool ||
                     (mb->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL))))
            break;
        struct pkt *p = dpdkdev_mbuf_pkt(mb);
        dpdkdev_pkt_rx(p, mb, now);
        b += p->len;
        out[k] = p;
    }
    *bytes += b;
    return k;
}

static int dpdkdev_rxq_recv(struct netdev *dev, unsigned qid, struct pkt_batch *batch,
                            uint64_t now)
{
    struct dpdkdev_port *dp = dpdkdev_priv(dev);
    struct dpdkdev_qstats *qs = &dp->rxs[qid];
    struct rte_mbuf *m[PKT_BATCH_MAX];
    unsigned room = PKT_BATCH_MAX - batch->count;
    if (room > dp->burst)
        room = dp->burst;
    uint16_t n = rte_eth_rx_burst(dp->port_id, (uint16_t)qid, m, (uint16_t)room);
    if (!n)
        return 0;
    uint16_t bflags = 0;
    unsigned got = 0;
    uint64_t bytes = 0;
    /* Locals, so that the stores below cannot make the compiler reload
     * them for every packet. */
    const bool verdicts = dp->rx_csum;
    struct rte_mempool *const pool = dp->pool;
    struct pkt **const out = batch->pkts + batch->count;
    unsigned i = 0;
    if (!verdicts) /* the common case first, in a loop of its own */
        i = got = dpdkdev_rx_own_prefix(m, n, pool, now, out, &bytes);
    for (; i < n; i++) {
        struct rte_mbuf *mb = m[i];
        if (mb->nb_segs != 1) {
            netdev_counter_add(&qs->multiseg, 1);
            netdev_counter_add(&qs->dropped, 1);
            netdev_counter_add(&qs->errors, 1);
            rte_pktmbuf_free(mb);
            continue;
        }
        /* Direct mbufs of our pool were bound when it was made: one test.
         * Others are bound now, or copied into ours when their pool has no
         * room for a struct pkt (another application's ring, a PMD's own
         * pool); an attached buffer (indirect, external) is bound anew. */
        if (unlikely(mb->pool != pool ||
                     (mb->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL)))) {
            if (mb->pool != pool &&
                rte_pktmbuf_priv_size(mb->pool) < sizeof(struct pkt)) {
                struct rte_mbuf *c = rte_pktmbuf_alloc(pool);
                if (!c || mb->pkt_len > rte_pktmbuf_tailroom(c)) {
                    rte_pktmbuf_free(c);
                    rte_pktmbuf_free(mb);
                    netdev_counter_add(&qs->dropped, 1);
                    continue;
                }
                memcpy(rte_pktmbuf_mtod(c, void *), rte_pktmbuf_mtod(mb, void *),
                       mb->pkt_len);
                c->pkt_len = mb->pkt_len;
                c->data_len = (uint16_t)mb->pkt_len;
                /* The rx flags only: c owns its own, direct buffer. */
                c->ol_flags = mb->ol_flags &
                              ~(uint64_t)(RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL);
                rte_pktmbuf_free(mb);
                mb = c;
                netdev_counter_add(&qs->copied, 1);
            } else {
                dpdkdev_pkt_bind(mb);
            }
        }
        struct pkt *p = dpdkdev_mbuf_pkt(mb);
        dpdkdev_pkt_rx(p, mb, now);
        if (verdicts) {
            uint64_t f = mb->ol_flags;
            p->csum[CSUM_L_OUTER_IP] = (uint8_t)dpdkdev_ip_state(f);
            p->csum[CSUM_L_OUTER_L4] = (uint8_t)dpdkdev_l4_state(f);
            bflags |= pkt_batch_flags_of(p);
        }
        bytes += p->len;
        out[got++] = p;
    }
    batch->count = (uint16_t)(batch->count + got);
    batch->flags |= bflags;
    netdev_counter_add(&qs->packets, got);
    netdev_counter_add(&qs->bytes, bytes);
    return (int)got;
}

/* ---- tx ----------------------------------------------------------------- */

/* Software completion of what the device (or guest) cannot take. */
static void dpdkdev_sw_complete(struct dpdkdev_qstats *qs, struct pkt *p)
{
    if (pkt_csum_any_partial(p)) {
        pkt_csum_complete(p, NULL);
        netdev_counter_add(&qs->sw_csum, 1);
    }
}

/* Translates p's PARTIAL layers into tx requests on m. Returns true if any
 * request was set. */
static bool dpdkdev_tx_offload(const struct dpdkdev_port *dp, struct pkt *p,
                               struct rte_mbuf *m)
{
    m->ol_flags &= ~(uint64_t)DPDKDEV_TX_FLAGS; /* and-not, never XOR */
    bool ip = p->csum[CSUM_L_OUTER_IP] == CSUM_PARTIAL;
    bool l4 = p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL;
    if (!ip && !l4)
        return false;
    if (!(p->flags & PKT_F_PARSED) || p->l3_ofs == PKT_OFS_NONE ||
        p->l4_ofs == PKT_OFS_NONE)
        return false;
    uint64_t f = 0;
    if (p->l3 == PKT_L3_IPV4) {
        f |= RTE_MBUF_F_TX_IPV4;
        if (ip && (dp->tx_ol & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM))
            f |= RTE_MBUF_F_TX_IP_CKSUM;
    } else if (p->l3 == PKT_L3_IPV6) {
        f |= RTE_MBUF_F_TX_IPV6;
    }
    if (l4) {
        if (p->l4_proto == IP_PROTO_TCP)
            f |= RTE_MBUF_F_TX_TCP_CKSUM;
        else if (p->l4_proto == IP_PROTO_UDP)
            f |= RTE_MBUF_F_TX_UDP_CKSUM;
    }
    m->l2_len = p->l3_ofs;
    m->l3_len = (uint16_t)(p->l4_ofs - p->l3_ofs);
    m->ol_flags |= f;
    return (f & (RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_L4_MASK)) != 0;
}

/* True if p is IPv6 with extension headers in front of its L4 header. An L4
 * request gets DPDK's pseudo-header in the field (rte_ipv6_phdr_cksum(),
 * from rte_eth_tx_prepare() and from the vhost library's enqueue), which
 * takes the fixed header's next header, payload length and Destination
 * Address: behind extension headers the upper-layer protocol and length
 * differ, and a routing header moves the destination (RFC 8200 8.1). */
static inline bool dpdkdev_ipv6_ext(const struct pkt *p)
{
    return (p->flags & PKT_F_PARSED) && p->l3 == PKT_L3_IPV6 &&
           p->l4_ofs != PKT_OFS_NONE && p->l4_ofs - p->l3_ofs != IPV6_HLEN;
}

/* True if the device can take p's remaining PARTIAL layers as requests. */
static bool dpdkdev_can_offload(const struct dpdkdev_port *dp, const struct pkt *p)
{
    if (p->csum[CSUM_L_INNER_IP] == CSUM_PARTIAL ||
        p->csum[CSUM_L_INNER_L4] == CSUM_PARTIAL)
        return false;
    if (p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL && dpdkdev_ipv6_ext(p))
        return false; /* completed in software */
    if (dp->vhost) {
        /* The guest fills L4; vhost computes an IPv4 header checksum in
         * software when asked. */
        if (p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL &&
            !atomic_load_explicit(&dp->guest_csum, memory_order_relaxed))
            return false;
        if (p->csum[CSUM_L_OUTER_IP] == CSUM_PARTIAL)
            return false;
        return (p->flags & PKT_F_PARSED) &&
               (p->l4_proto == IP_PROTO_TCP || p->l4_proto == IP_PROTO_UDP);
    }
    if (p->csum[CSUM_L_OUTER_IP] == CSUM_PARTIAL &&
        !(dp->tx_ol & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM))
        return false;
    if (p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL &&
        !(dp->tx_ol & (RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM)))
        return false;
    return (p->flags & PKT_F_PARSED) &&
           (p->l4_proto == IP_PROTO_TCP || p->l4_proto == IP_PROTO_UDP ||
            p->csum[CSUM_L_OUTER_L4] != CSUM_PARTIAL);
}

/* Writes p's frame position and length (which the core may have changed)
 * into its own mbuf mb. */
static inline void dpdkdev_mbuf_sync(struct rte_mbuf *mb, const struct pkt *p)
{
    mb->data_off = (uint16_t)(p->data - (uint8_t *)mb->buf_addr);
    mb->pkt_len = p->len;
    mb->data_len = (uint16_t)p->len;
}

/* The leading packets of pkts[0..n) that are ours and need no offload
 * (the caller knows none is PARTIAL): synced into m[], their bytes added to
 * *bytes. Returns how many; dpdkdev_send() handles the rest one by one. */
static inline int dpdkdev_own_prefix(struct pkt **pkts, int n, struct rte_mbuf **m,
                                     uint64_t *bytes)
{
    uint64_t b = 0;
    int k = 0;
    for (; k < n; k++) {
        const struct pkt *p = pkts[k];
        if (unlikely(p->ops != &dpdkdev_pkt_ops))
            break;
        struct rte_mbuf *mb = p->owner;
        dpdkdev_mbuf_sync(mb, p);
        mb->ol_flags &= ~(uint64_t)DPDKDEV_TX_FLAGS;
        b += p->len;
        m[k] = mb;
    }
    *bytes += b;
    return k;
}

static int dpdkdev_send(struct netdev *dev, unsigned qid, struct pkt **pkts, int n,
                        uint16_t summary)
{
    struct dpdkdev_port *dp = dpdkdev_priv(dev);
    struct dpdkdev_qstats *qs = &dp->txs[qid];
    struct rte_mbuf *m[PKT_BATCH_MAX];
    if (n > PKT_BATCH_MAX)
        n = PKT_BATCH_MAX;
    if (n <= 0)
        return 0;

    int dq = (int)qid;
    if (dp->vhost) {
        if (!atomic_load_explicit(&dp->link, memory_order_acquire)) {
            netdev_counter_add(&qs->notconn, 1);
            return -ENOTCONN;
        }
        dq = atomic_load_explicit(&dp->txq_map[qid], memory_order_acquire);
        if (dq < 0) {
            netdev_counter_add(&qs->notconn, 1);
            return -ENOTCONN;
        }
    }

    /* Build the mbuf array: sync owned mbufs, copy foreign packets. Bit k
     * of offl / foreign: packet k was given offload requests / is a copy. */
    uint32_t offl = 0, foreign = 0;
    uint64_t bytes = 0;
    int k = 0;
    int err = 0;
    const bool any_partial = summary & PKT_BATCH_F_PARTIAL;
    if (!any_partial) /* the common case first, in a loop of its own */
        k = dpdkdev_own_prefix(pkts, n, m, &bytes);
    for (; k < n; k++) {
        struct pkt *p = pkts[k];
        bool partial = any_partial && pkt_csum_any_partial(p);
        if (unlikely(partial) && !dpdkdev_can_offload(dp, p)) {
            dpdkdev_sw_complete(qs, p);
            partial = pkt_csum_any_partial(p);
        }
        struct rte_mbuf *mb;
        if (likely(p->ops == &dpdkdev_pkt_ops)) {
            mb = p->owner;
            dpdkdev_mbuf_sync(mb, p);
        } else {
            if (p->len > (uint32_t)rte_pktmbuf_data_room_size(dp->pool) -
                             RTE_PKTMBUF_HEADROOM) {
                err = -EMSGSIZE;
                break;
            }
            mb = rte_pktmbuf_alloc(dp->pool);
            if (!mb) {
                netdev_counter_add(&qs->nombuf, 1);
                break;
            }
            memcpy(rte_pktmbuf_mtod(mb, void *), p->data, p->len);
            mb->pkt_len = p->len;
            mb->data_len = (uint16_t)p->len;
            netdev_counter_add(&qs->copied, 1);
            foreign |= 1u << k;
        }
        if (unlikely(partial) && dpdkdev_tx_offload(dp, p, mb))
            offl |= 1u << k;
        else
            mb->ol_flags &= ~(uint64_t)DPDKDEV_TX_FLAGS;
        bytes += p->len;
        m[k] = mb;
    }
    int built = k;
    int ok = built;
    if (offl && built) {
        ok = rte_eth_tx_prepare(dp->port_id, (uint16_t)dq, m, (uint16_t)built);
        if (ok < built)
            netdev_counter_add(&qs->prep_failed, 1);
    }

    bool lock = dp->vhost;
    if (lock)
        rte_spinlock_lock(&dp->txq_lock[dq]);
    uint16_t sent = ok ? rte_eth_tx_burst(dp->port_id, (uint16_t)dq, m, (uint16_t)ok) : 0;
    if (lock)
        rte_spinlock_unlock(&dp->txq_lock[dq]);

    /* Accepted: the sent prefix (an mbuf-backed pkt of it may already be
     * freed: only the arrays and the unsent packets are read). Mbufs made
     * for foreign packets that were not sent go back to the pool; the
     * foreign packets of the sent prefix are freed (their copy left). */
    uint32_t sent_map = sent >= 32 ? UINT32_MAX : (1u << sent) - 1;
    for (int i = sent; i < built; i++)
        bytes -= pkts[i]->len;
    for (uint32_t f = foreign; f; f &= f - 1) {
        int i = __builtin_ctz(f);
        if (i < (int)sent)
            pkt_free(pkts[i]);
        else if (i < built)
            rte_pktmbuf_free(m[i]);
    }
    netdev_counter_add(&qs->offload, (unsigned)__builtin_popcount(offl & sent_map));
    netdev_counter_add(&qs->packets, sent);
    netdev_counter_add(&qs->bytes, bytes);
    if (sent == 0 && err)
        return err;
    if (sent == 0 && ok == 0 && built > 0 && offl) {
        netdev_counter_add(&qs->errors, 1);
        return -EINVAL; /* the first packet cannot be prepared */
    }
    return (int)sent;
}

/* ---- caps, stats, link -------------------------------------------------- */

static void dpdkdev_get_caps(const struct netdev *dev, struct netdev_caps *caps)
{
    caps->flags = dpdkdev_priv(dev)->caps;
}

static void dpdkdev_get_stats(const struct netdev *dev, struct netdev_stats *st)
{
    const struct dpdkdev_port *dp = dpdkdev_priv(dev);
    memset(st, 0, sizeof *st);
    for (unsigned q = 0; q < dp->n_rxq; q++) {
        st->rx_packets += netdev_counter_read(&dp->rxs[q].packets);
        st->rx_bytes += netdev_counter_read(&dp->rxs[q].bytes);
        st->rx_dropped += netdev_counter_read(&dp->rxs[q].dropped);
        st->rx_errors += netdev_counter_read(&dp->rxs[q].errors);
    }
    for (unsigned q = 0; q < dp->n_txq; q++) {
        st->tx_packets += netdev_counter_read(&dp->txs[q].packets);
        st->tx_bytes += netdev_counter_read(&dp->txs[q].bytes);
        st->tx_dropped += netdev_counter_read(&dp->txs[q].dropped);
        st->tx_errors += netdev_counter_read(&dp->txs[q].errors);
    }
    struct rte_eth_stats es;
    if (rte_eth_stats_get(dp->port_id, &es) == 0)
        st->rx_dropped += es.imissed + es.rx_nombuf;
}

static bool dpdkdev_link_up(const struct netdev *dev)
{
    const struct dpdkdev_port *dp = dpdkdev_priv(dev);
    if (dp->vhost)
        return atomic_load(&((struct dpdkdev_port *)dp)->link);
    struct rte_eth_link link;
    memset(&link, 0, sizeof link);
    if (rte_eth_link_get_nowait(dp->port_id, &link) != 0)
        return false;
    return link.link_status == RTE_ETH_LINK_UP;
}

static const struct netdev_class dpdkdev_class = {
    .type = "dpdk",
    .priv_size = sizeof(struct dpdkdev_port),
    .open = dpdkdev_open,
    .close = dpdkdev_close,
    .n_rxq = dpdkdev_n_rxq,
    .n_txq = dpdkdev_n_txq,
    .rxq_recv = dpdkdev_rxq_recv,
    .rxq_peek = NULL,
    .send = dpdkdev_send,
    .get_caps = dpdkdev_get_caps,
    .get_stats = dpdkdev_get_stats,
    .link_up = dpdkdev_link_up,
    .rx_error = NULL,
};

void netdev_dpdk_register(void)
{
    (void)netdev_register(&dpdkdev_class);
}

bool netdev_dpdk_is(const struct netdev *dev)
{
    return dev && dev->class == &dpdkdev_class;
}

void netdev_dpdk_get_stats(const struct netdev *dev, struct netdev_dpdk_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!netdev_dpdk_is(dev))
        return;
    struct dpdkdev_port *dp = dpdkdev_priv(dev);
    for (unsigned q = 0; q < dp->n_rxq; q++) {
        st->rx_multiseg += netdev_counter_read(&dp->rxs[q].multiseg);
        st->rx_copied += netdev_counter_read(&dp->rxs[q].copied);
    }
    for (unsigned q = 0; q < dp->n_txq; q++) {
        const struct dpdkdev_qstats *s = &dp->txs[q];
        st->tx_copied += netdev_counter_read(&s->copied);
        st->tx_nombuf += netdev_counter_read(&s->nombuf);
        st->tx_prep_failed += netdev_counter_read(&s->prep_failed);
        st->tx_offload += netdev_counter_read(&s->offload);
        st->tx_sw_csum += netdev_counter_read(&s->sw_csum);
        st->tx_notconn += netdev_counter_read(&s->notconn);
    }
    st->link_changes = atomic_load(&dp->link_changes);
    st->txq_remaps = atomic_load(&dp->remaps);
}

static void dpdkdev_fmt_ol(char *buf, size_t size, uint64_t capa, bool rx)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned b = 0; b < 64 && used < size; b++) {
        uint64_t bit = 1ull << b;
        if (!(capa & bit))
            continue;
        const char *name = rx ? rte_eth_dev_rx_offload_name(bit)
                              : rte_eth_dev_tx_offload_name(bit);
        int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "", name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (!used)
        snprintf(buf, size, "none");
}

void netdev_dpdk_describe(const struct netdev *dev, char *buf, size_t size)
{
    if (!netdev_dpdk_is(dev)) {
        snprintf(buf, size, "not a dpdk port");
        return;
    }
    struct dpdkdev_port *dp = dpdkdev_priv(dev);
    char caps[128], rx[256], tx[256];
    struct netdev_caps nc = {.flags = dp->caps};
    netdev_caps_format(&nc, caps, sizeof caps);
    dpdkdev_fmt_ol(rx, sizeof rx,
                   dp->hw_rx_capa & (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM |
                                     RTE_ETH_RX_OFFLOAD_TCP_CKSUM |
                                     RTE_ETH_RX_OFFLOAD_UDP_CKSUM),
                   true);
    dpdkdev_fmt_ol(tx, sizeof tx,
                   dp->hw_tx_capa & (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
                                     RTE_ETH_TX_OFFLOAD_TCP_CKSUM |
                                     RTE_ETH_TX_OFFLOAD_UDP_CKSUM),
                   false);
    int w = snprintf(buf, size,
                     "dpdk %s (port %u, driver %s) rxqs=%u txqs=%u rxd=%u txd=%u "
                     "mbufs=%u; device csum rx=%s tx=%s; caps=%s",
                     dp->devname, dp->port_id, dp->driver, dp->n_rxq, dp->n_txq, dp->rxd,
                     dp->txd, dp->pool ? dp->pool->size : 0, rx, tx, caps);
    if (dp->vhost && w > 0 && (size_t)w < size)
        snprintf(buf + w, size - (size_t)w, "; guest %s, guest-csum %s, host-csum %s",
                 atomic_load(&dp->link) ? "connected" : "not connected",
                 atomic_load(&dp->guest_csum) ? "on" : "off",
                 atomic_load(&dp->host_csum) ? "on" : "off");
}
