/* netdev-pcap.h: libpcap ports ("pcap"): pcap files and live interfaces.
 *
 * Options (a port needs at least one of rx, rx-iface, tx, tx-iface):
 *   rx=FILE         frames from a pcap file (relative to the config's
 *                   directory); the record timestamps (read in ns) are the
 *                   frames' rx times
 *   rx-iface=IF     frames captured live on interface IF (promiscuous,
 *                   immediate mode, non-blocking, inbound only); their rx
 *                   time is the 'now' of the rxq_recv call that got them
 *   tx=FILE         frames written to a pcap file (relative to the output
 *                   directory), created with just its header at open
 *   tx-iface=IF     frames injected into interface IF
 *   burst=1..32     packets one rxq_recv returns at most (default 32)
 *   vnet-hdr=BOOL   every record of the rx and tx files is a 12-byte
 *                   virtio_net_hdr_mrg_rxbuf followed by the frame, link
 *                   type LINKTYPE_USER0 (147) instead of Ethernet (1);
 *                   files only (see testdata/README.md)
 *   rx-loop=N|forever  the rx file as a traffic source (as DPDK's net_pcap
 *                   infinite_rx): N passes over it (1..2^32-1), or no end.
 *                   Record times count from the file's first record; the
 *                   first pass starts at the port's first poll (its 'now';
 *                   0 for a peek) and each next pass one mean record gap
 *                   after the previous pass's last record, so the file's
 *                   pacing repeats (records with equal times: as fast as
 *                   the datapath polls). Every pass delivers the same
 *                   frames; an empty file ends at once.
 * rx and rx-iface are exclusive, and so are tx and tx-iface. A port has one
 * rx queue when it has an rx source (else none) and one tx queue when it has
 * a tx sink (else none; send then returns -EOPNOTSUPP). rx and tx must not
 * name the same file. Capabilities are the config's 'caps' (none when not
 * given).
 *
 * Received packets are heap packets (pkt_alloc) with PKT_HEADROOM headroom.
 * Rx from a file: rxq_recv(now) returns records whose timestamp is <= now,
 * in file order, up to 'burst'. rxq_peek reports READY with the next
 * record's time, or EOF. A record captured shorter than its length is
 * delivered with PKT_F_TRUNCATED. A read error (e.g. a file cut in the
 * middle of a record) ends reception as if at EOF: everything before it is
 * delivered, rx_errors counts it and rx_error() returns "FILE: reason".
 * A live interface keeps receiving after a capture error; rx_error() then
 * returns "IFACE: reason" for the first one (rx_errors counts them all).
 * The kernel's drop counters of a live interface are read by the thread
 * that receives on it, every 100 ms of its clock, and reported in
 * rx_dropped. Counters and rx_error() may be read from any thread.
 * With vnet-hdr, NEEDS_CSUM sets PKT_F_VNET_CSUM, csum_start/csum_offset and
 * an outer L4 state of CSUM_PARTIAL; DATA_VALID sets CSUM_GOOD. A record
 * shorter than 12 bytes, with a GSO type, or with a NEEDS_CSUM location
 * outside the frame is not delivered and counts in rx_errors and
 * rx_dropped.
 *
 * Tx to a file: a standard microsecond pcap (snaplen 65535); each record's
 * time is pkt->ts truncated to us. With vnet-hdr, a packet whose outer L4
 * state is CSUM_PARTIAL with PKT_F_VNET_CSUM gets a NEEDS_CSUM header with
 * its csum_start/csum_offset, any other an all-zero header. send writes and
 * frees every packet, or returns -EIO (taking none) once the file has a
 * write error. The file is flushed after every send call. */
#ifndef FS_NETDEV_PCAP_H
#define FS_NETDEV_PCAP_H

#include "netdev.h"

/* Bytes of the virtio-net header in front of every vnet-hdr record. */
#define NETDEV_PCAP_VNET_HDR_LEN 12

/* Registers the "pcap" type (nothing happens if it already is). */
void netdev_pcap_register(void);

#endif
