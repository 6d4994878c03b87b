/* netdev-pcap.c: libpcap ports (see netdev-pcap.h for options and
 * semantics, testdata/README.md for the vnet-hdr record layout).
 * Local names use the pcapdev_ prefix: pcap_ belongs to libpcap. */
#include "netdev-pcap.h"

#include "netdev-provider.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pcap/pcap.h>

#include "packet.h"

#define PCAPDEV_PATH_MAX 4096
#define PCAPDEV_TX_SNAPLEN 65535
#define PCAPDEV_LIVE_SNAPLEN 65535
#define PCAPDEV_LINK_ETH 1     /* DLT_EN10MB / LINKTYPE_ETHERNET */
#define PCAPDEV_LINK_USER0 147 /* DLT_USER0 / LINKTYPE_USER0 */
/* How often the thread receiving on a live interface reads the kernel's
 * drop counters (libpcap handles are not shared between threads). */
#define PCAPDEV_KSTATS_NS (100 * 1000 * 1000ull)

/* virtio_net_hdr flags and gso types (virtio spec 5.1.6). */
#define VNET_F_NEEDS_CSUM 1u
#define VNET_F_DATA_VALID 2u
#define VNET_GSO_NONE 0u

/* The port's counters: the rx ones written by the PMD polling its one rx
 * queue, the tx ones by the PMDs sending on its one tx queue (one at a
 * time), read by get_stats() from any thread. */
struct pcapdev_stats {
    netdev_counter rx_packets, rx_bytes, rx_dropped, rx_errors, rx_csum_good, rx_csum_bad;
    netdev_counter tx_packets, tx_bytes, tx_errors, tx_offload_contract;
    netdev_counter rx_kernel_dropped; /* a live interface's, as last read */
};

struct pcapdev_port {
    unsigned burst;
    bool vnet;
    struct netdev_caps caps;
    struct pcapdev_stats stats;

    /* Rx: a file (rx_live false) or an interface. */
    bool has_rx;  /* set at open: rx is replaced when a loop starts over */
    pcap_t *rx;
    bool rx_live;
    uint64_t kstats_next_ns; /* live: when to read the kernel's counters */
    bool rx_eof;       /* file exhausted or failed: nothing more to read */
    struct pkt *ahead; /* next file record, decoded, not yet delivered */
    /* rx-loop: the file replayed as a traffic source, see netdev-pcap.h. */
    uint64_t loops;      /* passes to make, 0: rx-loop not given, UINT64_MAX: forever */
    uint64_t pass;       /* passes started (from 1) */
    bool anchored;       /* base set: the first poll happened */
    uint64_t base;       /* rx time of the file's first record in this pass */
    uint64_t first_raw;  /* the file's first record time */
    uint64_t last_raw;   /* the latest record time read in this pass */
    uint64_t pass_recs;  /* records read in this pass */
    char rx_name[PCAPDEV_PATH_MAX]; /* path or interface name */
    atomic_bool rx_failed; /* a read failed: rx_err holds "FILE: reason" (the
                            * first failure; written before this is set) */
    char rx_err[PCAPDEV_PATH_MAX + PCAP_ERRBUF_SIZE];

    /* Tx: a file (dumper) or an interface (tx_live). */
    pcap_t *tx_dead;
    pcap_dumper_t *dumper;
    pcap_t *tx_live;
    bool tx_shared;   /* tx_live is the rx handle (same interface) */
    uint8_t *scratch; /* vnet-hdr tx record: header + frame */
    char tx_name[PCAPDEV_PATH_MAX];
};

/* libpcap often starts a message with the file name: drop that repetition. */
static const char *pcapdev_strip_name(const char *msg, const char *name)
{
    size_t n = strlen(name);
    if (!strncmp(msg, name, n) && msg[n] == ':' && msg[n + 1] == ' ')
        return msg + n + 2;
    return msg;
}

static const char *pcapdev_link_name(int dlt)
{
    const char *s = pcap_datalink_val_to_name(dlt);
    return s ? s : "unknown";
}

static uint16_t pcapdev_get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static void pcapdev_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* ---- open / close -------------------------------------------------------- */

static void pcapdev_port_cleanup(struct pcapdev_port *pp)
{
    pkt_free(pp->ahead);
    pp->ahead = NULL;
    if (pp->dumper) {
        pcap_dump_flush(pp->dumper);
        pcap_dump_close(pp->dumper);
        pp->dumper = NULL;
    }
    if (pp->tx_dead) {
        pcap_close(pp->tx_dead);
        pp->tx_dead = NULL;
    }
    if (pp->tx_live && !pp->tx_shared)
        pcap_close(pp->tx_live);
    pp->tx_live = NULL;
    if (pp->rx) {
        pcap_close(pp->rx);
        pp->rx = NULL;
    }
    free(pp->scratch);
    pp->scratch = NULL;
}

static int pcapdev_check_link(pcap_t *p, const char *what, const char *name,
                              bool vnet, char *err, size_t errlen)
{
    int want = vnet ? PCAPDEV_LINK_USER0 : PCAPDEV_LINK_ETH;
    int got = pcap_datalink(p);
    if (got == want)
        return 0;
    const char *hint = "";
    if (vnet)
        hint = " for vnet-hdr=true";
    else if (got == PCAPDEV_LINK_USER0)
        hint = " (virtio-net records need vnet-hdr=true)";
    fs_errf(
        err, errlen, "%s '%s': link type %d (%s), expected %d (%s)%s", what,
        name, got, pcapdev_link_name(got), want, pcapdev_link_name(want), hint);
    return -1;
}

static int pcapdev_open_rx_file(struct pcapdev_port *pp, const char *path,
                                char *err, size_t errlen)
{
    char ebuf[PCAP_ERRBUF_SIZE];
    ebuf[0] = '\0';
    pp->rx = pcap_open_offline_with_tstamp_precision(
        path, PCAP_TSTAMP_PRECISION_NANO, ebuf);
    if (!pp->rx) {
        fs_errf(err, errlen, "rx pcap '%s': %s", path,
                        pcapdev_strip_name(ebuf, path));
        return -1;
    }
    return pcapdev_check_link(pp->rx, "rx pcap", path, pp->vnet, err, errlen);
}

/* A live handle on 'iface': promiscuous, immediate, non-blocking. */
static pcap_t *pcapdev_open_iface(const char *what, const char *iface,
                                  char *err, size_t errlen)
{
    char ebuf[PCAP_ERRBUF_SIZE];
    ebuf[0] = '\0';
    pcap_t *p = pcap_create(iface, ebuf);
    if (!p) {
        fs_errf(err, errlen, "%s '%s': %s", what, iface, ebuf);
        return NULL;
    }
    int rc;
    if ((rc = pcap_set_snaplen(p, PCAPDEV_LIVE_SNAPLEN)) != 0
        || (rc = pcap_set_promisc(p, 1)) != 0
        || (rc = pcap_set_immediate_mode(p, 1)) != 0
        || (rc = pcap_activate(p)) < 0) {
        const char *status = pcap_statustostr(rc), *detail = pcap_geterr(p);
        if (!detail[0] || !strcmp(detail, status))
            fs_errf(err, errlen, "%s '%s': %s", what, iface, status);
        else if (rc == PCAP_ERROR)
            fs_errf(err, errlen, "%s '%s': %s", what, iface, detail);
        else
            fs_errf(err, errlen, "%s '%s': %s: %s", what, iface, status,
                            detail);
        pcap_close(p);
        return NULL;
    }
    if (pcap_setnonblock(p, 1, ebuf) != 0) {
        fs_errf(err, errlen, "%s '%s': %s", what, iface, ebuf);
        pcap_close(p);
        return NULL;
    }
    return p;
}

static int pcapdev_open_rx_iface(struct pcapdev_port *pp, const char *iface,
                                 char *err, size_t errlen)
{
    pp->rx = pcapdev_open_iface("rx-iface", iface, err, errlen);
    if (!pp->rx)
        return -1;
    pp->rx_live = true;
    /* Inbound only: never see what this (or another) port injects. */
    if (pcap_setdirection(pp->rx, PCAP_D_IN) != 0) {
        fs_errf(err, errlen,
                        "rx-iface '%s': cannot capture inbound only: %s", iface,
                        pcap_geterr(pp->rx));
        return -1;
    }
    return pcapdev_check_link(pp->rx, "rx-iface", iface, false, err, errlen);
}

static int pcapdev_open_tx_iface(struct pcapdev_port *pp, const char *iface,
                                 char *err, size_t errlen)
{
    if (pp->rx_live && !strcmp(pp->rx_name, iface)) {
        pp->tx_live = pp->rx;
        pp->tx_shared = true;
        return 0;
    }
    pp->tx_live = pcapdev_open_iface("tx-iface", iface, err, errlen);
    if (!pp->tx_live)
        return -1;
    /* A transmit-only handle: a filter that accepts nothing keeps its
     * capture buffer empty. */
    struct bpf_insn reject = {.code = BPF_RET | BPF_K, .k = 0};
    struct bpf_program prog = {.bf_len = 1, .bf_insns = &reject};
    if (pcap_setfilter(pp->tx_live, &prog) != 0) {
        fs_errf(err, errlen, "tx-iface '%s': %s", iface,
                        pcap_geterr(pp->tx_live));
        return -1;
    }
    return pcapdev_check_link(pp->tx_live, "tx-iface", iface, false, err,
                              errlen);
}

static int pcapdev_open_tx_file(struct pcapdev_port *pp, const char *path,
                                char *err, size_t errlen)
{
    int link = pp->vnet ? PCAPDEV_LINK_USER0 : PCAPDEV_LINK_ETH;
    pp->tx_dead = pcap_open_dead_with_tstamp_precision(
        link, PCAPDEV_TX_SNAPLEN, PCAP_TSTAMP_PRECISION_MICRO);
    if (!pp->tx_dead) {
        fs_errf(err, errlen, "tx pcap '%s': out of memory", path);
        return -1;
    }
    pp->dumper = pcap_dump_open(pp->tx_dead, path);
    if (!pp->dumper) {
        fs_errf(err, errlen, "tx pcap '%s': %s", path,
                        pcapdev_strip_name(pcap_geterr(pp->tx_dead), path));
        return -1;
    }
    /* The file exists with its header even if nothing is ever sent. */
    if (pcap_dump_flush(pp->dumper) != 0) {
        fs_errf(err, errlen, "tx pcap '%s': %s", path, strerror(errno));
        return -1;
    }
    if (pp->vnet) {
        pp->scratch = malloc(NETDEV_PCAP_VNET_HDR_LEN + PCAPDEV_TX_SNAPLEN);
        if (!pp->scratch) {
            fs_errf(err, errlen, "tx pcap '%s': out of memory", path);
            return -1;
        }
    }
    return 0;
}

/* The value of 'key', NULL if absent; -1 with a message if it is empty. */
static int pcapdev_opt_str(const struct netdev_args *args, const char *key,
                           const char **out, char *err, size_t errlen)
{
    *out = netdev_opt_get(args, key);
    if (*out && !(*out)[0]) {
        fs_errf(err, errlen, "option '%s': empty value", key);
        return -1;
    }
    return 0;
}

static int pcapdev_open(struct netdev *dev, const struct netdev_args *args,
                        char *err, size_t errlen)
{
    static const char *const known[] = {
        "rx", "rx-iface", "tx", "tx-iface", "burst", "vnet-hdr", "rx-loop", NULL,
    };
    struct pcapdev_port *pp = dev->priv;
    unsigned long burst = PKT_BATCH_MAX;
    bool vnet = false;
    const char *rx, *rx_iface, *tx, *tx_iface;

    if (netdev_opt_check(args, known, err, errlen)
        || netdev_opt_uint(args, "burst", 1, PKT_BATCH_MAX, &burst, err, errlen)
        || netdev_opt_bool(args, "vnet-hdr", &vnet, err, errlen)
        || pcapdev_opt_str(args, "rx", &rx, err, errlen)
        || pcapdev_opt_str(args, "rx-iface", &rx_iface, err, errlen)
        || pcapdev_opt_str(args, "tx", &tx, err, errlen)
        || pcapdev_opt_str(args, "tx-iface", &tx_iface, err, errlen))
        return -EINVAL;
    if (rx && rx_iface) {
        fs_errf(err, errlen,
                        "options 'rx' and 'rx-iface' are exclusive");
        return -EINVAL;
    }
    if (tx && tx_iface) {
        fs_errf(err, errlen,
                        "options 'tx' and 'tx-iface' are exclusive");
        return -EINVAL;
    }
    if (!rx && !rx_iface && !tx && !tx_iface) {
        fs_errf(err, errlen,
                        "pcap port needs rx, rx-iface, tx or tx-iface");
        return -EINVAL;
    }
    const char *loop = netdev_opt_get(args, "rx-loop");
    if (loop) {
        unsigned long n;
        if (!rx) {
            fs_errf(err, errlen, "option 'rx-loop': needs 'rx' (a file)");
            return -EINVAL;
        }
        if (!strcmp(loop, "forever")) {
            pp->loops = UINT64_MAX;
        } else if (netdev_opt_uint(args, "rx-loop", 1, UINT32_MAX, &n, err, errlen)) {
            fs_errf(err, errlen, "option 'rx-loop': '%s' is not 1..%u or forever", loop,
                    UINT32_MAX);
            return -EINVAL;
        } else {
            pp->loops = n;
        }
    }
    if (vnet && (rx_iface || tx_iface)) {
        fs_errf(err, errlen,
                        "option 'vnet-hdr': applies to pcap files "
                        "only, not to rx-iface/tx-iface");
        return -EINVAL;
    }

    pp->burst = (unsigned)burst;
    pp->vnet = vnet;
    if (args->caps_set)
        pp->caps = args->caps;
    if ((pp->caps.flags & NETDEV_TX_GUEST_CSUM) && !vnet) {
        fs_errf(err, errlen,
                        "caps 'guest-csum' needs vnet-hdr = true (a guest "
                        "learns of a partial checksum only from the virtio header)");
        return -EINVAL;
    }

    int rc = 0;
    if (rx) {
        if (netdev_path(args->base_dir, rx, pp->rx_name, sizeof pp->rx_name)) {
            fs_errf(err, errlen, "option 'rx': path too long");
            return -ENAMETOOLONG;
        }
        rc = pcapdev_open_rx_file(pp, pp->rx_name, err, errlen);
    } else if (rx_iface) {
        snprintf(pp->rx_name, sizeof pp->rx_name, "%s", rx_iface);
        rc = pcapdev_open_rx_iface(pp, rx_iface, err, errlen);
    }
    if (!rc && tx) {
        if (netdev_path(args->out_dir, tx, pp->tx_name, sizeof pp->tx_name)) {
            fs_errf(err, errlen, "option 'tx': path too long");
            pcapdev_port_cleanup(pp);
            return -ENAMETOOLONG;
        }
        struct stat in, out;
        if (rx && !stat(pp->rx_name, &in) && !stat(pp->tx_name, &out)
            && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
            fs_errf(err, errlen,
                            "options 'rx' and 'tx' name the same file '%s'",
                            pp->tx_name);
            pcapdev_port_cleanup(pp);
            return -EINVAL;
        }
        rc = pcapdev_open_tx_file(pp, pp->tx_name, err, errlen);
    } else if (!rc && tx_iface) {
        snprintf(pp->tx_name, sizeof pp->tx_name, "%s", tx_iface);
        rc = pcapdev_open_tx_iface(pp, tx_iface, err, errlen);
    }
    if (rc) {
        pcapdev_port_cleanup(pp);
        return -EINVAL;
    }
    pp->has_rx = pp->rx != NULL;
    return 0;
}

static void pcapdev_port_close(struct netdev *dev)
{
    pcapdev_port_cleanup(dev->priv);
}

static unsigned pcapdev_n_rxq(const struct netdev *dev)
{
    const struct pcapdev_port *pp = dev->priv;
    return pp->has_rx ? 1 : 0;
}

static unsigned pcapdev_n_txq(const struct netdev *dev)
{
    const struct pcapdev_port *pp = dev->priv;
    return pp->dumper || pp->tx_live ? 1 : 0;
}

/* ---- rx ------------------------------------------------------------------ */

/* Counts a record that is not delivered (malformed vnet-hdr). */
static struct pkt *pcapdev_rx_reject(struct pcapdev_port *pp)
{
    netdev_counter_add(&pp->stats.rx_errors, 1);
    netdev_counter_add(&pp->stats.rx_dropped, 1);
    return NULL;
}

/* Turns one record into a packet, or NULL (counted) if it is not delivered. */
static struct pkt *pcapdev_rx_decode(struct pcapdev_port *pp,
                                     const struct pcap_pkthdr *h,
                                     const uint8_t *data)
{
    uint32_t caplen = h->caplen;
    const uint8_t *frame = data;
    uint32_t flen = caplen;
    uint8_t vflags = 0;
    uint16_t cstart = 0, coff = 0;

    if (pp->vnet) {
        if (caplen < NETDEV_PCAP_VNET_HDR_LEN)
            return pcapdev_rx_reject(pp);
        vflags = data[0];
        if (data[1] != VNET_GSO_NONE) /* no TSO/USO was negotiated */
            return pcapdev_rx_reject(pp);
        cstart = pcapdev_get_le16(data + 6);
        coff = pcapdev_get_le16(data + 8);
        frame = data + NETDEV_PCAP_VNET_HDR_LEN;
        flen = caplen - NETDEV_PCAP_VNET_HDR_LEN;
        if ((vflags & VNET_F_NEEDS_CSUM) && (uint32_t)cstart + coff + 2 > flen)
            return pcapdev_rx_reject(pp);
    }

    struct pkt *p = pkt_alloc(flen);
    if (!p) {
        netdev_counter_add(&pp->stats.rx_dropped, 1);
        return NULL;
    }
    pkt_reset_meta(p);
    memcpy(p->data, frame, flen);
    p->len = flen;
    p->ts = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
    if (h->len > caplen)
        p->flags |= PKT_F_TRUNCATED;
    if (vflags & VNET_F_NEEDS_CSUM) {
        p->flags |= PKT_F_VNET_CSUM;
        p->csum_start = cstart;
        p->csum_offset = coff;
        p->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
    } else if (vflags & VNET_F_DATA_VALID) {
        p->csum[CSUM_L_OUTER_L4] = CSUM_GOOD;
    }
    return p;
}

static void pcapdev_rx_fail(struct pcapdev_port *pp)
{
    if (!atomic_load_explicit(&pp->rx_failed, memory_order_relaxed)) {
        snprintf(pp->rx_err, sizeof pp->rx_err, "%s: %s", pp->rx_name,
                 pcap_geterr(pp->rx));
        atomic_store_explicit(&pp->rx_failed, true, memory_order_release);
    }
    netdev_counter_add(&pp->stats.rx_errors, 1);
}

/* rx-loop: starts the next pass over the file if there is one (and the
 * pass that ended read a record: an empty file ends at once). Each pass
 * starts one mean record gap after the previous pass's last record.
 * Returns false at the end of the loops (or if the file cannot be
 * reopened: reported as an rx error). */
static bool pcapdev_rx_rewind(struct pcapdev_port *pp)
{
    if (!pp->loops || pp->pass >= pp->loops || !pp->pass_recs)
        return false;
    char ebuf[PCAP_ERRBUF_SIZE] = "";
    pcap_t *again = pcap_open_offline_with_tstamp_precision(
        pp->rx_name, PCAP_TSTAMP_PRECISION_NANO, ebuf);
    if (again && pcap_datalink(again) != pcap_datalink(pp->rx)) {
        snprintf(ebuf, sizeof ebuf, "the file's link type changed");
        pcap_close(again);
        again = NULL;
    }
    if (!again) {
        if (!atomic_load_explicit(&pp->rx_failed, memory_order_relaxed)) {
            snprintf(pp->rx_err, sizeof pp->rx_err, "%s: %s", pp->rx_name,
                     pcapdev_strip_name(ebuf, pp->rx_name));
            atomic_store_explicit(&pp->rx_failed, true, memory_order_release);
        }
        netdev_counter_add(&pp->stats.rx_errors, 1);
        return false;
    }
    pcap_close(pp->rx);
    pp->rx = again;
    uint64_t span = pp->last_raw - pp->first_raw;
    uint64_t gap = pp->pass_recs > 1 ? span / (pp->pass_recs - 1) : 0;
    pp->base += span + gap;
    pp->pass++;
    pp->pass_recs = 0;
    return true;
}

/* File rx: makes pp->ahead the next deliverable record, unless at EOF.
 * 'now' starts the first pass of an rx-loop port (its first poll). */
static void pcapdev_rx_fill(struct pcapdev_port *pp, uint64_t now)
{
    if (pp->loops && !pp->anchored) {
        pp->anchored = true;
        pp->base = now;
        pp->pass = 1;
    }
    while (!pp->ahead && !pp->rx_eof) {
        struct pcap_pkthdr *h;
        const u_char *data;
        int rc = pcap_next_ex(pp->rx, &h, &data);
        if (rc == 1) {
            pp->ahead = pcapdev_rx_decode(pp, h, data);
            if (pp->loops) {
                /* Record times relative to the file's first, from the
                 * pass's base (a file out of time order keeps its order). */
                uint64_t raw = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
                if (pp->pass == 1 && !pp->pass_recs)
                    pp->first_raw = raw;
                pp->last_raw = raw > pp->last_raw ? raw : pp->last_raw;
                pp->pass_recs++;
                if (pp->ahead)
                    pp->ahead->ts = pp->base + (raw > pp->first_raw ? raw - pp->first_raw : 0);
            }
        } else if (rc == PCAP_ERROR_BREAK || rc == 0) {
            /* (0, a timeout, is not a file's answer) */
            pp->rx_eof = !pcapdev_rx_rewind(pp);
        } else {
            pcapdev_rx_fail(pp);
            pp->rx_eof = !pcapdev_rx_rewind(pp);
        }
    }
}

/* What one rxq_recv call delivered, counted once at its end. */
struct pcapdev_rx_count {
    uint64_t packets, bytes, good, bad;
};

/* Hands a decoded packet to the core: the emulated rx checksum verdicts
 * of an rx-csum port, the batch summary, the counts. */
static void pcapdev_deliver(struct pcapdev_port *pp, struct pkt_batch *batch,
                            struct pkt *p, struct pcapdev_rx_count *c)
{
    c->packets++;
    c->bytes += p->len;
    pkt_rx_deliver(p, pp->caps.flags, batch, &c->good, &c->bad);
}

static int pcapdev_rx_counted(struct pcapdev_port *pp, const struct pcapdev_rx_count *c)
{
    if (c->packets) {
        netdev_counter_add(&pp->stats.rx_packets, c->packets);
        netdev_counter_add(&pp->stats.rx_bytes, c->bytes);
    }
    if (c->good | c->bad) {
        netdev_counter_add(&pp->stats.rx_csum_good, c->good);
        netdev_counter_add(&pp->stats.rx_csum_bad, c->bad);
    }
    return (int)c->packets;
}

static int pcapdev_rxq_recv_live(struct pcapdev_port *pp,
                                 struct pkt_batch *batch, uint64_t now)
{
    struct pcapdev_rx_count c = {0};
    if (now >= pp->kstats_next_ns) {
        struct pcap_stat ps;
        if (pcap_stats(pp->rx, &ps) == 0)
            atomic_store_explicit(&pp->stats.rx_kernel_dropped,
                                  (uint64_t)ps.ps_drop + ps.ps_ifdrop, memory_order_relaxed);
        pp->kstats_next_ns = now + PCAPDEV_KSTATS_NS;
    }
    while (c.packets < pp->burst && !pkt_batch_full(batch)) {
        struct pcap_pkthdr *h;
        const u_char *data;
        int rc = pcap_next_ex(pp->rx, &h, &data);
        if (rc == 0)
            break; /* nothing more now */
        if (rc != 1) {
            pcapdev_rx_fail(pp); /* remembered, but a live port keeps trying */
            break;
        }
        struct pkt *p = pcapdev_rx_decode(pp, h, data);
        if (!p)
            continue;
        p->ts = now;
        pcapdev_deliver(pp, batch, p, &c);
    }
    return pcapdev_rx_counted(pp, &c);
}

static int pcapdev_rxq_recv(struct netdev *dev, unsigned qid,
                            struct pkt_batch *batch, uint64_t now)
{
    struct pcapdev_port *pp = dev->priv;
    if (!pp->rx || qid != 0)
        return 0;
    if (pp->rx_live)
        return pcapdev_rxq_recv_live(pp, batch, now);
    struct pcapdev_rx_count c = {0};
    while (c.packets < pp->burst && !pkt_batch_full(batch)) {
        pcapdev_rx_fill(pp, now);
        struct pkt *p = pp->ahead;
        if (!p || p->ts > now)
            break;
        pp->ahead = NULL;
        pcapdev_deliver(pp, batch, p, &c);
    }
    return pcapdev_rx_counted(pp, &c);
}

static enum netdev_rx_state pcapdev_rxq_peek(struct netdev *dev, unsigned qid,
                                             uint64_t *next_ts)
{
    struct pcapdev_port *pp = dev->priv;
    if (!pp->rx || qid != 0)
        return NETDEV_RX_EOF;
    if (pp->rx_live)
        return NETDEV_RX_EMPTY;
    pcapdev_rx_fill(pp, 0); /* a peek has no time: a loop's first pass starts at 0 */
    if (!pp->ahead)
        return NETDEV_RX_EOF;
    *next_ts = pp->ahead->ts;
    return NETDEV_RX_READY;
}

static const char *pcapdev_rx_error(const struct netdev *dev)
{
    const struct pcapdev_port *pp = dev->priv;
    return atomic_load_explicit(&pp->rx_failed, memory_order_acquire) ? pp->rx_err : NULL;
}

/* ---- tx ------------------------------------------------------------------ */

static void pcapdev_tx_dump(struct pcapdev_port *pp, const struct pkt *p)
{
    struct pcap_pkthdr h;
    const uint8_t *rec = p->data;
    uint32_t len = p->len;

    h.ts.tv_sec = (time_t)(p->ts / 1000000000u);
    h.ts.tv_usec = (suseconds_t)(p->ts % 1000000000u / 1000u);
    if (pp->vnet) {
        uint8_t *v = pp->scratch;
        memset(v, 0, NETDEV_PCAP_VNET_HDR_LEN);
        if (p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL
            && (p->flags & PKT_F_VNET_CSUM)) {
            v[0] = VNET_F_NEEDS_CSUM;
            pcapdev_put_le16(v + 6, p->csum_start);
            pcapdev_put_le16(v + 8, p->csum_offset);
        }
        uint32_t room = PCAPDEV_TX_SNAPLEN;
        memcpy(v + NETDEV_PCAP_VNET_HDR_LEN, p->data, len < room ? len : room);
        rec = v;
        len += NETDEV_PCAP_VNET_HDR_LEN;
    }
    h.len = len;
    h.caplen = len < PCAPDEV_TX_SNAPLEN ? len : PCAPDEV_TX_SNAPLEN;
    pcap_dump((u_char *)pp->dumper, &h, rec);
}

static int pcapdev_send_file(struct pcapdev_port *pp, struct pkt **pkts, int n)
{
    if (ferror(pcap_dump_file(pp->dumper)))
        return -EIO;
    uint64_t sent = 0, bytes = 0, contract = 0;
    for (int i = 0; i < n; i++) {
        if (!pkt_tx_emulate(pkts[i], pp->caps.flags)) {
            contract++;
            pkt_free(pkts[i]);
            continue;
        }
        pcapdev_tx_dump(pp, pkts[i]);
        sent++;
        bytes += pkts[i]->len;
        pkt_free(pkts[i]);
    }
    netdev_counter_add(&pp->stats.tx_packets, sent);
    netdev_counter_add(&pp->stats.tx_bytes, bytes);
    if (contract)
        netdev_counter_add(&pp->stats.tx_offload_contract, contract);
    if (pcap_dump_flush(pp->dumper) != 0) /* later sends return -EIO */
        netdev_counter_add(&pp->stats.tx_errors, (uint64_t)n);
    return n;
}

static int pcapdev_send_live(struct pcapdev_port *pp, struct pkt **pkts, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        struct pkt *p = pkts[i];
        if (!pkt_tx_emulate(p, pp->caps.flags)) {
            netdev_counter_add(&pp->stats.tx_offload_contract, 1);
            pkt_free(p);
            continue;
        }
        if (pcap_inject(pp->tx_live, p->data, p->len) < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS)
                break; /* the device queue is full: the rest stays ours */
            if (e == ENETDOWN || e == ENXIO || e == ENODEV)
                return i ? i : -ENETDOWN;
            netdev_counter_add(&pp->stats.tx_errors, 1); /* this frame is bad (e.g. too long) */
        } else {
            netdev_counter_add(&pp->stats.tx_packets, 1);
            netdev_counter_add(&pp->stats.tx_bytes, p->len);
        }
        pkt_free(p);
    }
    return i;
}

static int pcapdev_send(struct netdev *dev, unsigned qid, struct pkt **pkts,
                        int n, uint16_t summary)
{
    struct pcapdev_port *pp = dev->priv;
    (void)summary; /* a file or socket write per packet: one more test is noise */
    if (qid != 0 || n < 0)
        return -EINVAL;
    if (pp->dumper)
        return pcapdev_send_file(pp, pkts, n);
    if (pp->tx_live)
        return pcapdev_send_live(pp, pkts, n);
    return -EOPNOTSUPP;
}

/* ---- the rest ------------------------------------------------------------ */

static void pcapdev_get_caps(const struct netdev *dev, struct netdev_caps *caps)
{
    const struct pcapdev_port *pp = dev->priv;
    *caps = pp->caps;
}

static void pcapdev_get_stats(const struct netdev *dev,
                              struct netdev_stats *stats)
{
    const struct pcapdev_port *pp = dev->priv;
    const struct pcapdev_stats *s = &pp->stats;
    memset(stats, 0, sizeof *stats);
    stats->rx_packets = netdev_counter_read(&s->rx_packets);
    stats->rx_bytes = netdev_counter_read(&s->rx_bytes);
    stats->rx_dropped = netdev_counter_read(&s->rx_dropped);
    stats->rx_errors = netdev_counter_read(&s->rx_errors);
    stats->rx_csum_good = netdev_counter_read(&s->rx_csum_good);
    stats->rx_csum_bad = netdev_counter_read(&s->rx_csum_bad);
    stats->tx_packets = netdev_counter_read(&s->tx_packets);
    stats->tx_bytes = netdev_counter_read(&s->tx_bytes);
    stats->tx_errors = netdev_counter_read(&s->tx_errors);
    stats->tx_offload_contract = netdev_counter_read(&s->tx_offload_contract);
    stats->rx_dropped += netdev_counter_read(&s->rx_kernel_dropped);
}

/* Whether interface 'name' is up and running (has a carrier). */
static bool pcapdev_iface_running(const char *name)
{
    pcap_if_t *all;
    char ebuf[PCAP_ERRBUF_SIZE];
    bool up = false;
    if (pcap_findalldevs(&all, ebuf) != 0)
        return false;
    for (pcap_if_t *d = all; d; d = d->next) {
        if (!strcmp(d->name, name)) {
            up = (d->flags & PCAP_IF_UP) && (d->flags & PCAP_IF_RUNNING);
            break;
        }
    }
    pcap_freealldevs(all);
    return up;
}

static bool pcapdev_link_up(const struct netdev *dev)
{
    const struct pcapdev_port *pp = dev->priv;
    if (pp->rx_live && !pcapdev_iface_running(pp->rx_name))
        return false;
    if (pp->tx_live && !pp->tx_shared && !pcapdev_iface_running(pp->tx_name))
        return false;
    return true; /* files are always up */
}

static const struct netdev_class pcapdev_class = {
    .type = "pcap",
    .priv_size = sizeof(struct pcapdev_port),
    .open = pcapdev_open,
    .close = pcapdev_port_close,
    .n_rxq = pcapdev_n_rxq,
    .n_txq = pcapdev_n_txq,
    .rxq_recv = pcapdev_rxq_recv,
    .rxq_peek = pcapdev_rxq_peek,
    .send = pcapdev_send,
    .tx_stamps = true,
    .get_caps = pcapdev_get_caps,
    .get_stats = pcapdev_get_stats,
    .link_up = pcapdev_link_up,
    .rx_error = pcapdev_rx_error,
};

void netdev_pcap_register(void)
{
    (void)netdev_register(&pcapdev_class);
}
