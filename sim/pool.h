/* pool.h: the simulator's packet buffers.
 *
 * Every packet a simulated device receives comes from a pool: a struct pkt
 * with the simulator's own metadata (arrival time, which stream sent it)
 * in front of a fixed-size buffer, and a copy of the frame as the stream
 * sent it (the sink compares with it). The pool owns the buffers through
 * pkt_ops, so the datapath frees them with pkt_free() as it frees any
 * packet, and a freed packet goes back on the pool's free list: no
 * allocation per packet once the pool has grown to the number of packets
 * in flight. Packets the datapath makes itself (copies of multiple
 * outputs) are ordinary heap packets: sim_pkt_of() tells them apart. */
#ifndef SIM_POOL_H
#define SIM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "packet.h"

/* Headroom of a pool buffer: room for two VXLAN encapsulations. */
#define SIM_POOL_HEADROOM 256

struct sim_pkt {
    struct pkt pkt;
    uint64_t arrival_ns;  /* when its last bit reached the device */
    uint32_t stream;      /* the traffic stream that sent it */
    uint64_t flow;        /* its flow id in that stream */
    uint8_t bad;          /* the checksum layer the model got wrong */
    uint32_t sent_len;    /* the frame as sent, in sent[] */
    uint8_t *sent;        /* frame_max bytes after the buffer */
    struct sim_pkt *next; /* free list */
    uint8_t buf[];
};

struct sim_pool {
    uint32_t frame_max;   /* largest frame a buffer holds */
    struct sim_pkt *free;
    uint64_t allocated;   /* buffers ever allocated */
    uint64_t in_use;
};

/* An empty pool of buffers for frames up to frame_max bytes. */
void sim_pool_init(struct sim_pool *p, uint32_t frame_max);

/* Frees every buffer on the free list. Packets still in use must have
 * been freed first (their release would touch the pool). */
void sim_pool_fini(struct sim_pool *p);

/* A packet with fresh metadata, SIM_POOL_HEADROOM bytes of headroom and
 * 'len' bytes of frame (contents undefined), or NULL if len > frame_max or
 * out of memory. */
struct sim_pkt *sim_pool_get(struct sim_pool *p, uint32_t len);

/* The pool packet behind p, or NULL for a packet of another owner. */
struct sim_pkt *sim_pkt_of(struct pkt *p);

#endif
