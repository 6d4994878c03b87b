/* netdev-dpdk.h: DPDK ethdev ports ("dpdk") and the EAL.
 *
 * Plain C API: no DPDK type appears here, so the application layer
 * (app/main.c, app/run.c) can call it without including <rte_*.h>.
 *
 * Port options (type = dpdk):
 *   devargs=STR     the device, as EAL devargs: "0000:03:00.0", "net_null0",
 *                   "net_ring0", "net_pcap0,rx_pcap=in.pcap,infinite_rx=1",
 *                   "net_vhost0,iface=/run/vm0.sock,queues=2". If an ethdev
 *                   with the devargs' name exists already (created by the
 *                   EAL command line or by the embedding program, e.g.
 *                   rte_eth_from_rings) it is used as is and not detached at
 *                   close; otherwise it is probed (rte_dev_probe) at open and
 *                   removed at close. Required.
 *   rxqs=0..64      rx queues (default 1; 0: a tx-only port)
 *   txqs=1..64      tx queues (default 1). Give one per PMD thread, or the
 *                   runtime serialises the PMDs that share a queue.
 *   rxd=64..16384   rx descriptors per queue (default 1024)
 *   txd=64..16384   tx descriptors per queue (default 1024)
 *   mbufs=N         mbufs in the port's own pool (default rxqs*rxd +
 *                   txqs*txd + 8192: what the rings hold plus packets in
 *                   flight in the datapath's output queues)
 *   mbuf-cache=N    per-lcore mempool cache (default min(256, mbufs/8))
 *   mbuf-size=N     data room per mbuf, headroom included (default 2176)
 *   burst=1..32     packets one rxq_recv asks the device for (default 32)
 *
 * Packets: the struct pkt lives in the mbuf's private area, so rx wraps the
 * mbufs without copying (pkt->owner is the mbuf, pkt->buf its buf_addr,
 * pkt->data buf_addr + data_off); multi-segment mbufs are refused and
 * counted (rx_dropped and rx_errors); an mbuf from a pool whose private
 * area cannot hold a struct pkt (a ring fed by another program) is copied
 * into one of the port's own (rx_copied). Tx of an mbuf-backed packet syncs
 * data_off and the lengths back from pkt->data/len (actions may have pushed
 * or pulled headers); any other packet (heap clone, another backend's) is
 * copied into a fresh mbuf of this port's pool and then freed.
 * grow_headroom moves the frame inside the mbuf when head + tail room
 * suffice (mbuf headroom is RTE_PKTMBUF_HEADROOM, 128 by default).
 *
 * Offloads: the device's rx/tx offload capabilities map to NETDEV_* caps;
 * the config's 'caps' can only turn them off. Rx IPv4/TCP/UDP checksum
 * offload is enabled where offered; its verdicts become the per-layer
 * states (RTE_MBUF_F_RX_*_CKSUM_NONE = CSUM_PARTIAL). Layers still PARTIAL
 * at send become RTE_MBUF_F_TX_* requests with l2/l3 lengths, checked by
 * rte_eth_tx_prepare. Outer (tunnel) checksum offload is not announced:
 * struct pkt carries no inner offsets, so the core completes those. A
 * PARTIAL L4 behind IPv6 extension headers is completed in software (for a
 * vhost guest too): DPDK's IPv6 pseudo-header takes the fixed header's next
 * header, payload length and Destination Address, wrong behind them.
 *
 * vhost-user (net_vhost): registered with compliant offload flags
 * (legacy-ol-flags=0 is added to the devargs), so a guest's NEEDS_CSUM
 * packets arrive L4 PARTIAL. The port announces guest-csum (unless 'caps'
 * turns it off); whether the connected guest negotiated
 * VIRTIO_NET_F_GUEST_CSUM is tracked at every (re)connection, and a PARTIAL
 * layer sent to a guest that did not is completed in software here
 * (tx_sw_csum counter) - the core caches a port's caps at open, before any
 * guest connects. link_up follows connect/disconnect; send to a
 * disconnected guest returns -ENOTCONN. A guest disabling one of its rx
 * queues remaps our tx queue onto an enabled one (txq i -> enabled[i % n]);
 * vhost tx queues are always locked, as the remap can make them shared. */
#ifndef FS_NETDEV_DPDK_H
#define FS_NETDEV_DPDK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netdev.h"

/* Initialises the EAL with argv[0..argc-1] (argv[0] is the program name,
 * the rest EAL arguments). Returns 0, or a negative errno with the reason
 * in err: -EINVAL for arguments the EAL refuses, another (rte_eal_init()'s
 * rte_errno, e.g. -ENOMEM, -EACCES) for an EAL that cannot start on this
 * system. Adds --in-memory unless argv names --in-memory, --proc-type,
 * --no-huge or --legacy-mem, and netdev_dpdk_fini() removes the runtime
 * directory unless --proc-type was given: a run leaves nothing under
 * /var/run/dpdk or on hugetlbfs after it exits. Call once per process. */
int netdev_dpdk_init(int argc, char **argv, char *err, size_t errlen);

/* Registers the "dpdk" type (after netdev_dpdk_init). */
void netdev_dpdk_register(void);

/* Releases the EAL (after every dpdk port is closed). */
void netdev_dpdk_fini(void);

/* Makes the calling (non-EAL) thread a DPDK lcore so mempool caches work
 * for it. Call at the start of each PMD thread; returns 0 or -1. */
int netdev_dpdk_thread_register(void);

/* Undoes netdev_dpdk_thread_register, before the thread exits. */
void netdev_dpdk_thread_unregister(void);

/* Backend-specific counters of a dpdk port (all zero for other types). */
struct netdev_dpdk_stats {
    uint64_t rx_multiseg;     /* multi-segment mbufs refused at rx */
    uint64_t rx_copied;       /* rx mbufs from a pool without a pkt area */
    uint64_t tx_copied;       /* foreign packets copied into an mbuf */
    uint64_t tx_nombuf;       /* ... that found no free mbuf */
    uint64_t tx_prep_failed;  /* rejected by rte_eth_tx_prepare */
    uint64_t tx_offload;      /* packets sent with RTE_MBUF_F_TX_* requests */
    uint64_t tx_sw_csum;      /* PARTIAL completed here (guest without csum) */
    uint64_t tx_notconn;      /* sends refused: guest gone or queue disabled */
    uint64_t link_changes;    /* vhost connect/disconnect events seen */
    uint64_t txq_remaps;      /* vhost queue enable/disable events seen */
};

/* True if dev is a dpdk port. */
bool netdev_dpdk_is(const struct netdev *dev);

/* Fills st for a dpdk port. */
void netdev_dpdk_get_stats(const struct netdev *dev, struct netdev_dpdk_stats *st);

/* One-line description of the port: driver, queues, hardware offloads,
 * announced caps and, for vhost, the guest's negotiated csum features. */
void netdev_dpdk_describe(const struct netdev *dev, char *buf, size_t size);

#endif
