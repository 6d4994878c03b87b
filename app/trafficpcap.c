/* trafficpcap.c: a scenario's traffic as pcap files (trafficpcap.h). */
#include "trafficpcap.h"

#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"
#include "traffic.h"
#include "util.h"

static int tp_stream(const struct scenario *sc, size_t i, const char *dir, uint64_t packets,
                     FILE *out, char *err, size_t errlen)
{
    const struct sim_stream_cfg *st = &sc->streams[i];
    const struct sim_port_cfg *pc = &sc->ports[st->port];
    char why[256], path[4096];
    /* As the engine creates it (sim_run): the run's seed, id i + 1. */
    struct sim_traffic *t = sim_traffic_new(
        &st->traffic, sc->sim.seed, (uint16_t)(i + 1),
        pc->model == SIM_PORT_NIC ? (double)pc->line_bps : 0, why, sizeof why);
    if (!t) {
        fs_errf(err, errlen, "%s:%d: traffic %s: %s", sc->cfg.path, st->line, st->name, why);
        return -1;
    }
    if (snprintf(path, sizeof path, "%s/%s.pcap", dir, st->name) >= (int)sizeof path) {
        fs_errf(err, errlen, "%s: path too long", dir);
        sim_traffic_destroy(t);
        return -1;
    }
    pcap_t *pd = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535,
                                                      PCAP_TSTAMP_PRECISION_NANO);
    pcap_dumper_t *dump = pd ? pcap_dump_open(pd, path) : NULL;
    /* One bit per flow id the stream can hand out in 'packets' packets. */
    uint64_t ids = (uint64_t)st->traffic.flows + packets;
    uint8_t *seen = calloc(ids / 8 + 1, 1);
    uint8_t *frame = malloc(SIM_TRAFFIC_FRAME_MAX);
    int rc = -1;
    if (!dump || !seen || !frame) {
        fs_errf(err, errlen, "%s: %s", path, dump ? "out of memory"
                                              : pd ? pcap_geterr(pd) : "cannot open");
        goto out;
    }
    uint64_t distinct = 0, bytes = 0;
    for (uint64_t n = 0; n < packets; n++) {
        struct sim_traffic_info info;
        size_t len = sim_traffic_next_frame(t, frame, &info);
        struct pcap_pkthdr h;
        h.ts.tv_sec = (time_t)(info.arrival_ns / 1000000000u);
        h.ts.tv_usec = (suseconds_t)(info.arrival_ns % 1000000000u); /* ns: a nanosecond pcap */
        h.caplen = h.len = (bpf_u_int32)len;
        pcap_dump((u_char *)dump, &h, frame);
        bytes += len;
        if (info.flow_id < ids && !(seen[info.flow_id / 8] & (1u << (info.flow_id % 8)))) {
            seen[info.flow_id / 8] |= (uint8_t)(1u << (info.flow_id % 8));
            distinct++;
        }
    }
    if (pcap_dump_flush(dump)) {
        fs_errf(err, errlen, "%s: write error", path);
        goto out;
    }
    fprintf(out, "%s: %" PRIu64 " packets, %" PRIu64 " distinct flows, %" PRIu64 " bytes\n",
            path, packets, distinct, bytes);
    rc = 0;
out:
    if (dump)
        pcap_dump_close(dump);
    if (pd)
        pcap_close(pd);
    free(seen);
    free(frame);
    sim_traffic_destroy(t);
    return rc;
}

int traffic_pcap_write(const struct scenario *sc, const char *dir, uint64_t packets, FILE *out,
                       char *err, size_t errlen)
{
    for (size_t i = 0; i < sc->n_streams; i++)
        if (tp_stream(sc, i, dir, packets, out, err, errlen))
            return -1;
    return 0;
}
