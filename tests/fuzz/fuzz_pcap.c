/* fuzz_pcap.c: libFuzzer harness for the pcap backend's record reader
 * (backends/pcap/netdev-pcap.c over libpcap), plain and vnet-hdr: a pcap
 * file is outside input (captures, guests' traffic).
 *
 * The first byte picks the port's options (vnet-hdr, rx-loop, rx-csum and
 * guest-csum caps, burst); the rest is the rx file, written to a memory
 * file and opened by its /proc path (fuzz_file.h). abort() flags a broken
 * invariant:
 *  - an open fails with a reason, or the port delivers packets in bounded
 *    time: at most its burst per call, each due (time <= now), with a
 *    length within PKT_BUF_MAX and any NEEDS_CSUM location inside the
 *    frame, until EOF (the loop count bounds the passes);
 *  - the counters add up: rx_packets = packets delivered;
 *  - every packet delivered can be written back (tx to /dev/null, with
 *    the same vnet-hdr setting) and freed (LeakSanitizer). */
#include "fuzz_file.h"

#include <string.h>

#include "backends/pcap/netdev-pcap.h"
#include "netdev-provider.h"
#include "packet.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

/* Receive calls at most per input: an rx-loop of 3 passes over the largest
 * inputs ends well within it. */
#define FUZZ_MAX_CALLS 100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool registered;
    if (!registered) {
        netdev_pcap_register();
        registered = true;
    }
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    const char *rx = fuzz_file(data + 1, size - 1);
    char burst[8];
    bool vnet = mode & 1, loop = mode & 2;
    snprintf(burst, sizeof burst, "%u", 1u + (mode >> 3) % 32);
    struct netdev_opt opts[] = {
        {"rx", rx, 0},
        {"tx", "/dev/null", 0},
        {"vnet-hdr", vnet ? "true" : "false", 0},
        {"burst", burst, 0},
        {"rx-loop", "3", 0},
    };
    struct netdev_args args = {
        .opts = opts,
        .n_opts = loop ? 5 : 4,
        .base_dir = "",
        .out_dir = "",
        .caps_set = true,
        .caps = {.flags = (mode & 4 ? NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM : 0) |
                          (vnet && (mode & 4) ? NETDEV_TX_GUEST_CSUM : 0)},
    };
    char err[512] = "";
    struct netdev *dev = netdev_open("p0", "pcap", &args, err, sizeof err);
    if (!dev) {
        CHECK(err[0]);
        return 0;
    }
    uint64_t delivered = 0;
    unsigned max_burst = 1u + (mode >> 3) % 32;
    for (unsigned call = 0; call < FUZZ_MAX_CALLS; call++) {
        struct pkt_batch b;
        pkt_batch_init(&b);
        /* The first poll starts a loop at 1; then every record is due. */
        uint64_t now = call ? UINT64_MAX - 1 : 1;
        int n = netdev_rxq_recv(dev, 0, &b, now);
        CHECK(n >= 0 && (unsigned)n <= max_burst && (unsigned)n == b.count);
        for (unsigned i = 0; i < b.count; i++) {
            const struct pkt *p = b.pkts[i];
            CHECK(p->len <= PKT_BUF_MAX);
            CHECK(p->ts <= now);
            if (p->flags & PKT_F_VNET_CSUM)
                CHECK((uint32_t)p->csum_start + p->csum_offset + 2 <= p->len);
        }
        delivered += b.count;
        if (b.count) {
            int sent = netdev_send(dev, 0, b.pkts, (int)b.count, PKT_BATCH_F_PARTIAL);
            CHECK(sent == (int)b.count);
            pkt_batch_init(&b);
        }
        uint64_t next;
        if (!n && netdev_rxq_peek(dev, 0, &next) == NETDEV_RX_EOF)
            break;
        CHECK(call + 1 < FUZZ_MAX_CALLS);
    }
    struct netdev_stats st;
    netdev_get_stats(dev, &st);
    CHECK(st.rx_packets == delivered);
    CHECK(st.tx_packets + st.tx_offload_contract == delivered);
    netdev_close(dev);
    return 0;
}
