/* engine.h: the simulator: the real datapath core driven in virtual time.
 *
 * A simulation has ports with a model around them (a NIC: line rate, rx
 * and tx rings, rx checksum verdicts, tx offloads; a VM: vrings, guest
 * checksum offload, a guest that drains at some rate), traffic streams
 * (traffic.h) arriving on them, N virtual PMDs running the unmodified core
 * (dp.h) on dummy ports (backends/dummy), and sinks that verify every
 * packet the ports transmit (verify.h).
 *
 * Time. One event queue (evq.h) orders the arrivals and the PMDs' polls.
 * An arrival is injected into the rx ring of its port's queue (chosen by
 * RSS) with its arrival time; a full ring drops it (rx_missed). A PMD
 * polls at its own virtual time: dp_pmd_poll() receives what has arrived
 * by then, and the PMD's clock then advances by the cost of what the core
 * counted for that poll (dp_pmd_counters(): packets parsed, cache hits,
 * subtables probed, upcalls, checksums in software, tunnel work, send
 * calls, ...) times the per-event costs of a cost profile (profile.h).
 * So queues build, rings overflow, batches form and latency accrues as
 * they would on a datapath of that speed. An idle PMD sleeps until the
 * next frame due on its queues or the next flush its tx-flush-interval
 * requires.
 *
 * Transmit. What a PMD sends is ready when its poll ends: it takes a
 * descriptor of its tx queue's ring (a full ring refuses packets: the
 * core's retries, then tx_full drops) and waits for the port's one
 * serialiser, shared by all the port's tx queues: a NIC's wire at the line
 * rate, or a VM's guest at its rate (a VM without one takes packets at
 * once). A frame is delivered when its last bit has left; until then it is
 * in flight. A packet's latency runs from its last bit's arrival at the
 * port it came in on to its last bit's departure. Each departing packet is
 * verified by its port's sink: software checksums, the flow's expected
 * port and header transforms, per-flow order.
 *
 * A run is a pure function of (configuration, seed, cost profile): the
 * same on every machine and compiler, and its results conserve packets:
 *   offered + copies = delivered + dropped (every reason) + in flight.
 * Traffic stops at the configured duration; the engine then drains every
 * ring and queue, so nothing is in flight at the end (the window's edges
 * record what was in flight then). */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dp.h"
#include "hist.h"
#include "profile.h"
#include "traffic.h"
#include "verify.h"

enum sim_port_model {
    SIM_PORT_NIC,
    SIM_PORT_VM,
    SIM_PORT_TUNNEL, /* a VXLAN port of the datapath (no device) */
};

const char *sim_port_model_name(enum sim_port_model m);

struct sim_port_cfg {
    char name[NETDEV_NAME_MAX];
    enum sim_port_model model;
    int line;                  /* where it was configured (messages) */
    uint64_t line_bps;         /* NIC: line rate */
    unsigned rxqs;             /* rx queues (NIC: RSS spreads over them) */
    unsigned txqs;             /* 0: one per PMD */
    unsigned rx_ring;          /* NIC rx descriptors / VM vring, per queue */
    unsigned tx_ring;          /* NIC tx descriptors / VM vring, per queue */
    bool rx_csum;              /* NIC: delivers checksum verdicts */
    uint32_t tx_caps;          /* NIC: NETDEV_TX_* offloads */
    bool guest_csum;           /* VM: sends NEEDS_CSUM, takes PARTIAL */
    bool eager_csum;           /* VM with guest_csum: the host completes each
                                * NEEDS_CSUM packet as it takes it from the
                                * vring (vhost rx), whatever its egress: the
                                * work is charged to the PMD that polls the
                                * queue (sw_csum_packet, sw_csum_byte) */
    uint64_t guest_pps;        /* VM: packets/s the guest takes off its
                                * vring, 0: at once */
    double send_cost_ns;       /* extra cost of a send call to this port */
    double packet_cost_ns;     /* VM: extra cost per packet the host moves
                                * through its vrings, either way (vhost's
                                * copy and descriptors) */
    int forward;               /* VM: the guest sends what it receives back
                                * through this VM port (an index into
                                * ports; a testpmd-style loopback), -1:
                                * the guest is the sink */
    bool capture;              /* write what it transmits to a pcap */
    /* SIM_PORT_TUNNEL: the tunnel's options (tunnel.h), and every port's
     * core settings. */
    struct netdev_args tnl_args;
    int tx_retries;            /* -1: the datapath's */
    int64_t emc_insert_inv_prob; /* -1: the datapath's */
};

/* The packets of a stream go to one port, with these transforms. */
struct sim_stream_cfg {
    char name[NETDEV_NAME_MAX];
    int line;
    unsigned port;             /* where it arrives: index into ports */
    struct sim_traffic_cfg traffic;
    int expect_port;           /* where it must leave, -1: nowhere (all
                                * its packets must be dropped) */
    struct sim_expect expect;  /* what the datapath does to it */
};

/* A frame as it leaves a port (sim_cfg.on_departure). */
struct sim_departure_info {
    unsigned port;             /* index into ports */
    uint32_t len;              /* bytes of frame, without FCS */
    uint64_t dep_ps;           /* when its last bit left */
    uint64_t service_ps;       /* its time on the serialiser (0: a VM that
                                * takes packets at once) */
    uint64_t arrival_ns;       /* when its last bit reached the port it came
                                * in on; UINT64_MAX: not known (a copy) */
};

struct sim_cfg {
    uint64_t seed;
    unsigned n_pmds;           /* 1..DP_MAX_PMDS */
    uint64_t duration_ns;      /* traffic runs from 0 to this time */
    uint64_t warmup_ns;        /* the measurement window (results' window)
                                * runs from here to duration_ns; packets
                                * arriving before it are not in the
                                * latency histogram. < duration_ns */
    bool allow_overload;       /* offered rates above a line rate */
    struct sim_profile profile;
    struct dp_knobs knobs;
    struct sim_port_cfg *ports;
    size_t n_ports;
    struct sim_stream_cfg *streams;
    size_t n_streams;
    const struct dp_rule_src *rules;
    size_t n_rules;
    const char *origin;        /* names the configuration in messages */
    const char *out_dir;       /* captures go here (NULL: no captures) */
    /* Called about every 2^16 events (NULL: never), e.g. for a progress
     * line: the virtual time and the packets offered so far. */
    void (*progress)(void *aux, uint64_t now_ns, uint64_t offered);
    void *progress_aux;
    /* Called for every frame a port sends, when its last bit leaves (NULL:
     * never): lets tests check the engine's physics frame by frame. */
    void (*on_departure)(void *aux, const struct sim_departure_info *d);
    void *departure_aux;
};

/* Drops the engine counts itself, beside the datapath's (drop.h). */
#define SIM_DROPS(X)                                                          \
    X(RX_MISSED, "rx_missed", "the rx ring (or vring) of the queue was full") \
    X(LINE_RATE, "line_rate", "above the port's line rate (allow-overload)")  \
    X(NOMEM, "sim_nomem", "the simulator had no buffer for the packet")

enum sim_drop {
#define SIM_DROP_ENUM_(e, name, desc) SIM_DROP_##e,
    SIM_DROPS(SIM_DROP_ENUM_)
#undef SIM_DROP_ENUM_
    SIM_DROP_N
};

const char *sim_drop_name(enum sim_drop d);
const char *sim_drop_desc(enum sim_drop d);

struct sim_port_result {
    uint64_t offered, offered_bytes;   /* arrived at this port (streams) */
    uint64_t drops[SIM_DROP_N];
    uint64_t delivered, delivered_bytes, delivered_wire_bytes; /* left it */
    uint64_t send_calls;
    uint64_t guest_completed;          /* NEEDS_CSUM finished by the guest */
    uint64_t guest_computed;           /* VM without guest_csum: TCP/UDP
                                        * checksums its guest computed to send */
    uint64_t eager_csum, eager_csum_bytes; /* completed at vhost rx (eager_csum) */
    uint64_t forwarded;                /* VM: sent back by a forwarding guest */
    struct sim_verify_stats verify;
};

struct sim_pmd_result {
    unsigned rxqs;
    uint64_t polls, idle_polls, rx_packets; /* idle: received nothing */
    uint64_t busy_ns;                  /* virtual time spent in polls: every ns
                                        * the cost model charged, whatever the
                                        * poll did (received, sent, flushed,
                                        * woke a guest); between polls the PMD
                                        * sleeps until work is due */
    uint64_t empty_poll_ns;            /* of busy_ns, in polls that received
                                        * nothing */
    double charged_ns;                 /* the charges before rounding to whole
                                        * ns: |busy_ns - charged_ns| < 1 */
    struct {                           /* within the window */
        uint64_t polls, rx_packets, busy_ns;
    } window;
};

/* The measurement window [warmup_ns, duration_ns): the change of the
 * counters between its edges (a poll is counted at the edge it starts
 * after), so warm-up (cold caches, upcalls) and the drain after the
 * traffic stops are left out: steady-state rates and hit shares. */
struct sim_window {
    uint64_t start_ns, end_ns;
    uint64_t offered, delivered;
    uint64_t sim_dropped;              /* the engine's drops (SIM_DROPS) */
    uint64_t dp_dropped;               /* the datapath's, every reason */
    uint64_t in_flight_start, in_flight_end; /* at the edges */
    uint64_t *port_offered, *port_delivered, *port_delivered_wire_bytes; /* per port */
    uint64_t *port_delivered_bytes;
    uint64_t *port_rx_missed;
    struct dp_counters dp;             /* summed over the PMDs */
    uint64_t cost_counts[SIM_COST_N];
};

struct sim_results {
    uint64_t end_ns;                   /* virtual time of the last event */
    uint64_t events;
    uint64_t offered, delivered, copies, dropped, in_flight;
    uint64_t drops[SIM_DROP_N];        /* the engine's, all ports */
    size_t n_ports, n_pmds;
    struct sim_port_result *ports;
    struct sim_pmd_result *pmds;
    struct dp_stats *dp;               /* the datapath's counters, summed */
    struct sim_hist latency;           /* departure - arrival, ns */
    struct sim_verify_violation *violations; /* the first ones, all sinks */
    size_t n_violations;
    uint64_t cost_counts[SIM_COST_N];  /* every event the cost model charged */
    struct sim_window window;
};

/* Runs a simulation. Returns 0 with *res filled (free with
 * sim_results_free), or -1 with the reason in err (a port or rule the
 * datapath refuses, a rate above the line rate without allow_overload, no
 * memory...). */
int sim_run(const struct sim_cfg *cfg, struct sim_results *res, char *err, size_t errlen);

void sim_results_free(struct sim_results *res);

/* ---- the cost model's counting, shared with the calibration ----------------- */

/* What one poll moved, beside the core's counters: packets received and
 * sent, send calls, and which of them came from or went to NIC-model ports
 * (their driver's own cost, SIM_COST_NIC_*). */
struct sim_poll_io {
    uint64_t rx, sends, tx;
    uint64_t nic_rx, nic_tx;
    uint64_t vhost_pkts, vhost_bytes; /* copied through VM ports' vrings, rx and tx */
};

/* Which flow-cache stages exist, for the miss events: a stage the knobs
 * turn off is never probed. */
struct sim_cost_ctx {
    bool emc, smc;
};

void sim_cost_ctx_init(struct sim_cost_ctx *ctx, const struct dp_knobs *knobs);

/* The core's counters the cost model reads (dp_counters), with the
 * per-reason ones summed: taken before and after each poll. */
struct sim_cost_snap {
    uint64_t rx_bursts, layout_only, parsed;
    uint64_t lookups, direct, simple_hits, emc_hits, smc_hits, megaflow_hits;
    uint64_t subtable_probes, upcalls, megaflows_installed;
    uint64_t action_runs, copies, tnl_push, tnl_pop, drops;
    uint64_t csum_sw, csum_sw_bytes, csum_verified, csum_verify_bytes;
    uint64_t emc_inserts, smc_inserts;
};

void sim_cost_snap_read(const struct dp_counters *c, struct sim_cost_snap *snap);

/* The events of one poll (counts[SIM_COST_N]) from the core's counters
 * before (a) and after (b) it and what it moved. The engine charges these;
 * the calibration (calibrate.h) fits their costs, with this same counting. */
void sim_poll_counts(const struct sim_cost_ctx *ctx, const struct sim_cost_snap *a,
                     const struct sim_cost_snap *b, const struct sim_poll_io *io,
                     uint64_t counts[SIM_COST_N]);

/* What a VM model's guest with checksum offload does to a TCP or UDP
 * packet it sends: the pseudo-header sum in the checksum field, the L4
 * state PARTIAL with csum_start/csum_offset (virtio NEEDS_CSUM). Other
 * packets are left as they are. */
void sim_guest_partial(struct pkt *p);

#endif
