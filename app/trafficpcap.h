/* trafficpcap.h: a scenario's traffic written to pcap files
 * (`flowswitch sim --traffic-pcap DIR`), e.g. for a DPDK net_pcap port to
 * replay what the simulator offers. */
#ifndef FS_TRAFFICPCAP_H
#define FS_TRAFFICPCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct scenario;

/* Writes the first 'packets' packets of each of sc's traffic streams, in
 * arrival order, to DIR/NAME.pcap (Ethernet, nanosecond timestamps: the
 * arrival times): the frames sim_run() injects, byte for byte (same
 * seed, same stream ids). Prints one line per file to 'out' (packets,
 * distinct flows, bytes). Returns 0, or -1 with the reason in err. */
int traffic_pcap_write(const struct scenario *sc, const char *dir, uint64_t packets, FILE *out,
                       char *err, size_t errlen);

#endif
