/* scenario.h: simulation scenarios (`flowswitch sim SCENARIO.ini`).
 *
 * A scenario is a config file (config.h: [datapath], [port NAME], [rules])
 * whose ports are models, plus [sim] and [traffic NAME] sections:
 *
 *   [sim]
 *   duration = 0.01        ; seconds of traffic (virtual time), > 0
 *   warmup = 0             ; seconds before the measurement window (the
 *                          ; report's "window": steady-state rates and
 *                          ; hit shares), below duration
 *   warmup-packets-per-flow = 0 ; at least this many packets per flow (on
 *                          ; average, N x flows / rate for each stream)
 *                          ; before the window; the duration grows by what
 *                          ; the warm-up grew (the window keeps its length)
 *   seed = 1               ; every random stream derives from it
 *   pmds = 1               ; virtual PMDs, 1..64
 *   profile = default      ; or a cost profile file (JSON, sim/profile.h)
 *   allow-overload = false ; offered rates above a NIC's line rate
 *
 *   [port p0]
 *   type = nic             ; nic | vm | vxlan (a tunnel port)
 *   rate = 10G             ; NIC line rate: N[K|M|G] bits/s
 *   rxqs = 1               ; rx queues (RSS spreads a NIC's traffic; a VM has one)
 *   txqs = 0               ; 0: one per PMD
 *   rx-ring = 1024         ; NIC rx descriptors, per queue
 *   tx-ring = 1024         ; NIC tx descriptors, per queue
 *   caps = rx-csum,tx-ip-csum,tx-l4-csum   ; NIC: verdicts and offloads
 *   capture = false        ; write what it transmits to OUT-DIR/NAME.pcap
 *   ; vm: vring = 256 (descriptors of each of its rings, instead of
 *   ; rx-ring and tx-ring), caps = guest-csum (the guest sends NEEDS_CSUM
 *   ; and takes PARTIAL), guest-rate = 0 (packets/s it drains, 0: at once),
 *   ; send-cost = 0 (ns per send call: a vhost kick), packet-cost = 0
 *   ; (ns per packet the host moves through its vrings), forward = PORT
 *   ; (the guest sends what it receives back out of VM port PORT),
 *   ; host-csum = lazy (the core completes a guest's NEEDS_CSUM at egress
 *   ; when the egress cannot) | eager (vhost rx completes every one)
 *
 *   [traffic t0]
 *   port = p0              ; where it arrives
 *   expect-port = p1       ; where it must leave (absent: nowhere)
 *   expect = dec_ttl,mod_dl_dst:02:00:00:00:00:09   ; what the rules do:
 *                            mod_dl_src:MAC mod_dl_dst:MAC dec_ttl
 *                            push_vlan:TPID pop_vlan vxlan_encap:PORT
 *                            vxlan_decap
 *   ...                    ; the traffic model's keys (sim/traffic.h)
 *
 * --set SECTION.KEY=VALUE overrides a key after the file is read: sim.KEY,
 * datapath.KEY, port.NAME.KEY, traffic.NAME.KEY. Every error names where
 * the value at fault was given: "file:line: reason", or "--set ARG:
 * reason" for a value a --set gave. */
#ifndef FS_SCENARIO_H
#define FS_SCENARIO_H

#include <stddef.h>

#include "config.h"
#include "engine.h"

/* The keys of a [traffic NAME] section that name ports or actions, as
 * written (resolved once every port is known), each with the line it was
 * read from (0: given by --set). */
struct scenario_stream_keys {
    char port[NETDEV_NAME_MAX];
    char expect_port[NETDEV_NAME_MAX];
    char expect[256];
    int port_line, expect_port_line, expect_line, rate_line;
};

struct scenario {
    struct config cfg;
    struct sim_cfg sim;         /* ready for sim_run() after scenario_load() */
    struct sim_port_cfg *ports; /* sim.ports */
    struct sim_stream_cfg *streams;
    size_t n_streams;
    char profile[4096];         /* "default" or its path (resolved) */
    struct scenario_stream_keys *keys; /* per stream */
};

/* Loads a scenario and applies the overrides sets[0..n) ("SECTION.KEY=
 * VALUE"). Returns 0, or -1 with "file:line: reason" (or "--set X:
 * reason") in err; sc is then empty (scenario_free is still safe). The
 * exceptions name the file alone: a file that cannot be read, one without
 * [sim], and a [datapath] knob combination the flow caches refuse (the
 * config keeps no line per knob). */
int scenario_load(const char *path, const char *const *sets, size_t n_sets,
                  struct scenario *sc, char *err, size_t errlen);

void scenario_free(struct scenario *sc);

#endif
