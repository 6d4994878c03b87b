/* engine.c: the simulator's event loop, port models, PMDs and sinks. */
#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dummy/netdev-dummy.h"
#include "csum.h"
#include "dmath.h" /* no fused multiply-add: the same times on every compiler */
#include "evq.h"
#include "offload.h"
#include "parse.h"
#include "pool.h"
#include "proto.h"
#include "rss.h"
#include "util.h"

#define SIM_PS_PER_NS 1000ull
/* Bytes a frame occupies on the wire beyond its buffer: FCS, preamble,
 * start delimiter and inter-frame gap. */
#define SIM_WIRE_EXTRA 24u
/* A sender holds at most this much of a port's line time before it drops
 * (only reached with allow-overload). */
#define SIM_LINE_BACKLOG_PS (1000000ull * SIM_PS_PER_NS)
#define SIM_MAX_LISTED 16
#define SIM_COLLECT_BURST 64
#define SIM_PROGRESS_EVENTS (1u << 16)
#define SIM_RSS_MEMO 16384

enum sim_event_kind {
    SIM_EV_ARRIVAL, /* a stream's next packet (id: the stream; never queued) */
    SIM_EV_POLL,    /* a PMD's poll (id: the PMD) */
    SIM_EV_WIRE,    /* a frame delayed on a NIC's link has arrived (id: the port) */
    SIM_EV_POLL_END, /* a PMD's poll has ended: what it sent is ready (id: the PMD) */
};

/* A frame a port has taken and not yet sent: its last bit leaves at
 * dep_ps, after service_ps on the serialiser; q is the tx queue whose ring
 * holds its descriptor until then. */
struct sim_departure {
    struct pkt *p;
    uint64_t dep_ps, service_ps;
    uint16_t q;
};

/* A port's frames not yet gone, in departure order. */
struct sim_outq {
    struct sim_departure *d;
    size_t head, count, cap; /* cap: a power of two */
};

/* A packet a poll sent, waiting for the poll's end. */
struct sim_staged {
    struct pkt *p;
    uint32_t port;
    uint16_t q;
};

struct sim_port {
    const struct sim_port_cfg *cfg;
    struct sim_port_result *res;
    uint16_t port_no;
    struct netdev *dev;          /* NULL for tunnel ports */
    unsigned n_rxq, n_txq;
    unsigned rxq_pmd[NETDEV_MAX_QUEUES];
    struct sim_rss *rss;         /* NIC with several rx queues */
    /* The rx queue of flows seen lately (a flow's queue never changes):
     * direct-mapped on (stream, flow), key + 1 in .key. */
    struct sim_rss_memo {
        uint64_t key;
        uint16_t q;
    } *rss_memo;
    uint64_t wire_free_ps;       /* rx: when the link is free again */
    /* Frames still on the link (a sender faster than the line rate): in
     * arrival order, each delivered by a SIM_EV_WIRE event. */
    struct sim_pkt *wire_head, *wire_tail;
    uint64_t service_ps;         /* VM: per packet the guest takes, 0: at once */
    /* Transmit: one serialiser per port (the NIC's wire, or the guest
     * taking packets off its vrings) shared by all its tx queues, taking
     * frames in the order the polls that sent them ended. Each queue has
     * its own ring: a descriptor is held from the end of the poll that
     * sent the frame until the frame's last bit has left. */
    uint64_t tx_free_ps;         /* when the serialiser is free again */
    unsigned tx_used[NETDEV_MAX_QUEUES];   /* descriptors held in each ring */
    unsigned tx_staged[NETDEV_MAX_QUEUES]; /* sent by polls not yet ended */
    struct sim_outq out;
    uint64_t wire_n;             /* frames on the rx link (wire_head list) */
    uint64_t send_calls_seen;
    uint64_t vhost_pkts_seen, vhost_bytes_seen; /* VM: device rx + tx counted */
    struct sim_verify *verify;
    pcap_t *pcap;
    pcap_dumper_t *dump;
};

/* An rx queue a virtual PMD polls (resolved once: the assignment is
 * fixed for the run). */
struct sim_rxq_ref {
    struct sim_port *sp;
    uint16_t qid;
};

struct sim_vpmd {
    struct dp_pmd *pmd;
    struct sim_rxq_ref *rxqs;    /* the queues it polls */
    unsigned n_rxqs;
    bool nic_only;               /* all of them on NIC-model ports */
    unsigned *txq;               /* its tx queue on each port (by index) */
    bool scheduled;              /* a poll event is in the queue */
    bool idle;                   /* its last poll received nothing */
    uint64_t next_poll;          /* the time of its live poll event */
    uint64_t free_at;            /* when its last poll's work ended */
    double carry;                /* fraction of a ns of cost not yet charged */
    struct sim_staged *staged;   /* what its running poll sent */
    size_t n_staged, staged_cap;
    bool has_pending;
    uint64_t pending[SIM_COST_N]; /* work done for it outside the core (an
                                   * eager vhost rx), charged at its next poll */
    /* The events charged so far, kept as what they are computed from
     * (sim_poll_counts() is linear in them): the counters before its
     * first poll and after its last, the sum of what its polls moved and
     * of the pending work charged. sim_cost_totals() adds them up. */
    struct sim_cost_snap first, prev;
    struct sim_poll_io io_sum;
    uint64_t pending_sum[SIM_COST_N];
    struct sim_pmd_result *res;
};

struct sim_stream {
    const struct sim_stream_cfg *cfg;
    struct sim_traffic *traffic;
    uint64_t next;   /* its next arrival, UINT64_MAX once it has ended */
    uint64_t seq;    /* scheduling order of that arrival (ties with events) */
};

struct sim {
    const struct sim_cfg *cfg;
    struct sim_results *res;
    struct dp *dp;
    struct sim_port *ports;
    struct sim_vpmd *pmds;
    struct dp_pmd **dpps;
    struct sim_stream *streams;
    struct sim_evq evq;
    struct sim_pool pool;
    uint8_t frame[SIM_TRAFFIC_FRAME_MAX];
    uint32_t frame_max;          /* the largest frame the streams build */
    uint64_t dep_next;           /* the earliest departure of any port (ns),
                                  * UINT64_MAX: none */
    size_t n_listed;
    struct sim_cost_ctx cost_ctx;
    int window_edges;            /* window edges passed: 0, 1 or 2 */
};

const char *sim_port_model_name(enum sim_port_model m)
{
    switch (m) {
    case SIM_PORT_NIC:
        return "nic";
    case SIM_PORT_VM:
        return "vm";
    case SIM_PORT_TUNNEL:
        return "vxlan";
    }
    return "?";
}

static const char *const sim_drop_names[SIM_DROP_N] = {
#define SIM_DROP_NAME_(e, name, desc) [SIM_DROP_##e] = name,
    SIM_DROPS(SIM_DROP_NAME_)
#undef SIM_DROP_NAME_
};

static const char *const sim_drop_descs[SIM_DROP_N] = {
#define SIM_DROP_DESC_(e, name, desc) [SIM_DROP_##e] = desc,
    SIM_DROPS(SIM_DROP_DESC_)
#undef SIM_DROP_DESC_
};

const char *sim_drop_name(enum sim_drop d)
{
    return (unsigned)d < SIM_DROP_N ? sim_drop_names[d] : NULL;
}

const char *sim_drop_desc(enum sim_drop d)
{
    return (unsigned)d < SIM_DROP_N ? sim_drop_descs[d] : NULL;
}

/* ---- transmit queues ------------------------------------------------------ */

static int sim_outq_push(struct sim_outq *o, const struct sim_departure *d)
{
    if (o->count == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        struct sim_departure *n = malloc(cap * sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < o->count; i++)
            n[i] = o->d[(o->head + i) & (o->cap - 1)];
        free(o->d);
        o->d = n;
        o->cap = cap;
        o->head = 0;
    }
    o->d[(o->head + o->count) & (o->cap - 1)] = *d;
    o->count++;
    return 0;
}

static inline uint64_t sim_ps_to_ns(uint64_t ps)
{
    return (ps + SIM_PS_PER_NS - 1) / SIM_PS_PER_NS;
}

/* ---- set-up ---------------------------------------------------------------- */

/* A frame's time on a link, rounded up: a link never carries more than
 * its line rate, however many frames are summed. */
static uint64_t sim_wire_ps(uint64_t line_bps, uint32_t len)
{
    uint64_t bits_ps = ((uint64_t)len + SIM_WIRE_EXTRA) * 8u * 1000000000000ull;
    return (bits_ps + line_bps - 1) / line_bps;
}

/* The mean bits on the wire per packet of a stream (sizes weighted, with
 * preamble and gap; VXLAN adds its outer headers). */
static double sim_stream_wire_bits(const struct sim_traffic_cfg *t)
{
    double w = 0, sum = 0;
    for (unsigned i = 0; i < t->n_sizes; i++) {
        w += t->size_weight[i];
        sum += t->size_weight[i] * (double)t->size[i];
    }
    double mean = w > 0 ? sum / w : 64;
    return (mean + 20 + t->vxlan_share * 50) * 8;
}

/* The offered rate of a stream in bits/s on the wire of a port. */
static double sim_stream_bps(const struct sim_traffic_cfg *t, uint64_t line_bps)
{
    switch (t->rate_unit) {
    case SIM_RATE_PPS:
        return t->rate * sim_stream_wire_bits(t);
    case SIM_RATE_BPS:
        return t->rate;
    case SIM_RATE_LINE_PCT:
        return t->rate / 100.0 * (double)line_bps;
    }
    return 0;
}

static int sim_check_rates(const struct sim *s, char *err, size_t errlen)
{
    const struct sim_cfg *c = s->cfg;
    for (size_t p = 0; p < c->n_ports; p++) {
        const struct sim_port_cfg *pc = &c->ports[p];
        if (pc->model != SIM_PORT_NIC)
            continue;
        double bps = 0;
        for (size_t i = 0; i < c->n_streams; i++)
            if (c->streams[i].port == p)
                bps += sim_stream_bps(&c->streams[i].traffic, pc->line_bps);
        if (!c->allow_overload && bps > (double)pc->line_bps * (1 + 1e-9)) {
            fs_errf(err, errlen,
                    "%s:%d: port %s: the traffic offered (%.3f Gb/s on the wire) is above "
                    "its line rate (%.3f Gb/s); lower a rate or set allow-overload",
                    c->origin, pc->line, pc->name, bps / 1e9, (double)pc->line_bps / 1e9);
            return -1;
        }
    }
    return 0;
}

static int sim_add_ports(struct sim *s, char *err, size_t errlen)
{
    const struct sim_cfg *c = s->cfg;
    for (size_t i = 0; i < c->n_ports; i++) {
        const struct sim_port_cfg *pc = &c->ports[i];
        struct sim_port *sp = &s->ports[i];
        sp->cfg = pc;
        sp->res = &s->res->ports[i];
        char rxqs[16], txqs[16], why[512];
        struct netdev_opt opts[3];
        struct dp_port_params pp = {
            .name = pc->name,
            .tx_retries = pc->tx_retries,
            .emc_insert_inv_prob = pc->emc_insert_inv_prob,
        };
        if (pc->model == SIM_PORT_TUNNEL) {
            pp.type = "vxlan";
            pp.args = pc->tnl_args;
        } else {
            unsigned ntx = pc->txqs ? pc->txqs : c->n_pmds;
            snprintf(rxqs, sizeof rxqs, "%u", pc->rxqs);
            snprintf(txqs, sizeof txqs, "%u", ntx);
            opts[0] = (struct netdev_opt){"rxqs", rxqs, pc->line};
            opts[1] = (struct netdev_opt){"txqs", txqs, pc->line};
            opts[2] = (struct netdev_opt){"tx-keep", "true", pc->line};
            pp.type = "dummy";
            pp.args.opts = opts;
            pp.args.n_opts = 3;
            pp.args.base_dir = "";
            pp.args.out_dir = "";
            pp.args.caps_set = true;
            if (pc->model == SIM_PORT_NIC)
                pp.args.caps.flags = pc->tx_caps |
                                     (pc->rx_csum ? NETDEV_RX_IP_CSUM | NETDEV_RX_L4_CSUM : 0);
            else
                pp.args.caps.flags = pc->guest_csum ? NETDEV_TX_GUEST_CSUM : 0;
        }
        int no = dp_port_add(s->dp, &pp, why, sizeof why);
        if (no < 0) {
            fs_errf(err, errlen, "%s:%d: port %s: %s", c->origin, pc->line, pc->name, why);
            return -1;
        }
        sp->port_no = (uint16_t)no;
        struct dp_port_info info;
        dp_port_get(s->dp, (unsigned)no, &info);
        sp->dev = info.dev;
        if (!sp->dev)
            continue;
        sp->n_rxq = netdev_n_rxq(sp->dev);
        sp->n_txq = netdev_n_txq(sp->dev);
        if (pc->model == SIM_PORT_VM && pc->guest_pps)
            sp->service_ps = 1000000000000ull / pc->guest_pps;
        if (pc->model == SIM_PORT_NIC && sp->n_rxq > 1) {
            sp->rss = malloc(sizeof *sp->rss);
            sp->rss_memo = calloc(SIM_RSS_MEMO, sizeof *sp->rss_memo);
            if (!sp->rss || !sp->rss_memo || sim_rss_init(sp->rss, NULL, (uint16_t)sp->n_rxq)) {
                fs_errf(err, errlen, "out of memory");
                return -1;
            }
        }
    }
    return 0;
}

/* The engine's knowledge of the rules, for a sink: a stream's packets are
 * expected at its expect_port, transformed as configured, and nowhere
 * else. */
static int sim_add_sinks(struct sim *s, char *err, size_t errlen)
{
    const struct sim_cfg *c = s->cfg;
    for (size_t i = 0; i < c->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (!sp->dev)
            continue;
        sp->verify = sim_verify_new(SIM_MAX_LISTED);
        if (!sp->verify) {
            fs_errf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t k = 0; k < c->n_streams; k++) {
            const struct sim_stream_cfg *sc = &c->streams[k];
            bool here = sc->expect_port >= 0 && (size_t)sc->expect_port == i;
            if (sim_verify_add_model(sp->verify, s->streams[k].traffic) ||
                sim_verify_expect_model(sp->verify, sim_traffic_id(s->streams[k].traffic),
                                        here ? &sc->expect : NULL)) {
                fs_errf(err, errlen, "out of memory"); /* the loader caps transforms */
                return -1;
            }
        }
        if (sp->cfg->capture && c->out_dir) {
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s.pcap", c->out_dir, sp->cfg->name) >=
                (int)sizeof path) {
                fs_errf(err, errlen, "%s: path too long", c->out_dir);
                return -1;
            }
            sp->pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535,
                                                            PCAP_TSTAMP_PRECISION_NANO);
            sp->dump = sp->pcap ? pcap_dump_open(sp->pcap, path) : NULL;
            if (!sp->dump) {
                fs_errf(err, errlen, "%s: %s", path,
                        sp->pcap ? pcap_geterr(sp->pcap) : "cannot open");
                return -1;
            }
        }
    }
    return 0;
}

static int sim_add_pmds(struct sim *s, char *err, size_t errlen)
{
    const struct sim_cfg *c = s->cfg;
    for (unsigned i = 0; i < c->n_pmds; i++) {
        s->dpps[i] = dp_pmd_create(s->dp);
        if (!s->dpps[i]) {
            fs_errf(err, errlen, "out of memory for PMD %u", i);
            return -1;
        }
        s->pmds[i].pmd = s->dpps[i];
        s->pmds[i].res = &s->res->pmds[i];
        struct dp_counters cur;
        dp_pmd_counters(s->dpps[i], &cur);
        sim_cost_snap_read(&cur, &s->pmds[i].prev);
        s->pmds[i].first = s->pmds[i].prev;
    }
    if (dp_assign_rxqs(s->dp, s->dpps, c->n_pmds, NULL, 0, err, errlen))
        return -1;
    for (unsigned i = 0; i < c->n_pmds; i++) {
        struct dp_pmd *pmd = s->dpps[i];
        struct sim_vpmd *v = &s->pmds[i];
        v->res->rxqs = dp_pmd_n_rxqs(pmd);
        v->rxqs = calloc(v->res->rxqs ? v->res->rxqs : 1, sizeof *v->rxqs);
        v->txq = calloc(c->n_ports ? c->n_ports : 1, sizeof *v->txq);
        if (!v->rxqs || !v->txq) {
            fs_errf(err, errlen, "out of memory");
            return -1;
        }
        for (unsigned k = 0; k < dp_pmd_n_rxqs(pmd); k++) {
            uint16_t port, qid;
            dp_pmd_get_rxq(pmd, k, &port, &qid);
            for (size_t p = 0; p < c->n_ports; p++)
                if (s->ports[p].port_no == port) {
                    s->ports[p].rxq_pmd[qid] = i;
                    v->rxqs[v->n_rxqs++] = (struct sim_rxq_ref){&s->ports[p], qid};
                }
        }
        v->nic_only = true;
        for (unsigned k = 0; k < v->n_rxqs; k++)
            v->nic_only &= v->rxqs[k].sp->cfg->model == SIM_PORT_NIC;
        for (size_t p = 0; p < c->n_ports; p++) {
            struct sim_port *sp = &s->ports[p];
            if (sp->dev && sp->n_txq) {
                dp_pmd_set_txq(pmd, sp->port_no, i % sp->n_txq, NULL);
                v->txq[p] = dp_pmd_txq_id(pmd, sp->port_no);
            }
        }
    }
    return 0;
}

/* ---- arrivals -------------------------------------------------------------- */

static void sim_schedule_poll(struct sim *s, unsigned k, uint64_t t)
{
    struct sim_vpmd *v = &s->pmds[k];
    if (t < v->free_at)
        t = v->free_at;
    if (v->scheduled && v->next_poll <= t)
        return; /* due sooner already (a busy PMD polls again at free_at) */
    v->scheduled = true;
    v->next_poll = t;
    sim_evq_push(&s->evq, t, SIM_EV_POLL, k);
}

/* The one's-complement sum of data, folded (the sim's own arithmetic: the
 * guest model does not borrow the datapath's checksum engine). */
static uint16_t sim_sum16(const uint8_t *d, size_t n, uint32_t sum)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(d[i] << 8 | d[i + 1]);
    if (n & 1)
        sum += (uint32_t)d[n - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

/* A guest with checksum offload sends TCP and UDP with NEEDS_CSUM: the
 * pseudo-header sum in the field, the rest left to the host (virtio). */
void sim_guest_partial(struct pkt *p)
{
    struct flow_key key;
    if (parse_pkt(p, &key) != PARSE_OK || !(p->flags & PKT_F_L4) || (p->flags & PKT_F_FRAG) ||
        (p->l4_proto != IP_PROTO_TCP && p->l4_proto != IP_PROTO_UDP))
        return;
    const uint8_t *ip = p->data + p->l3_ofs;
    uint32_t sum = 0;
    if (p->l3 == PKT_L3_IPV4)
        sum = sim_sum16(ip + 12, 8, 0);
    else
        sum = sim_sum16(ip + 8, 32, 0);
    sum += p->l4_proto;
    sum += p->l4_len;
    uint16_t off = p->l4_proto == IP_PROTO_TCP ? 16 : 6;
    uint16_t f = sim_sum16(NULL, 0, sum);
    uint8_t *field = p->data + p->l4_ofs + off;
    field[0] = (uint8_t)(f >> 8);
    field[1] = (uint8_t)f;
    uint16_t start = p->l4_ofs;
    pkt_reset_meta(p);
    p->flags |= PKT_F_VNET_CSUM;
    p->csum_start = start;
    p->csum_offset = off;
    p->csum[CSUM_L_OUTER_L4] = CSUM_PARTIAL;
}

static void sim_guest_complete(struct pkt *p);

/* A guest without checksum offload computed its TCP and UDP checksums. */
static void sim_guest_counts(struct pkt *p, struct sim_port_result *pr)
{
    struct flow_key key;
    if (parse_pkt(p, &key) == PARSE_OK && (p->flags & PKT_F_L4) &&
        (p->l4_proto == IP_PROTO_TCP || p->l4_proto == IP_PROTO_UDP))
        pr->guest_computed++;
    pkt_reset_meta(p);
}

/* The eager placement: the host completes a NEEDS_CSUM packet as vhost rx
 * takes it, so the core sees a complete packet; the PMD polling the queue
 * pays the sum. */
static void sim_eager_csum(struct sim *s, struct sim_port *sp, unsigned q, struct pkt *p)
{
    uint64_t bytes = p->len - p->csum_start;
    sim_guest_complete(p);
    pkt_reset_meta(p);
    sp->res->eager_csum++;
    sp->res->eager_csum_bytes += bytes;
    struct sim_vpmd *v = &s->pmds[sp->rxq_pmd[q]];
    v->pending[SIM_COST_CSUM_PKT]++;
    v->pending[SIM_COST_CSUM_BYTE] += bytes;
    v->has_pending = true;
}

/* A frame has fully arrived at its port at sk->arrival_ns: into the rx
 * ring of its queue (by RSS), or dropped if the ring is full. */
static void sim_deliver(struct sim *s, struct sim_port *sp, struct sim_pkt *sk, bool bad)
{
    struct sim_port_result *pr = sp->res;
    struct pkt *p = &sk->pkt;
    unsigned q = 0;
    if (sp->rss) {
        uint64_t key = ((uint64_t)sk->stream << 48 | sk->flow) + 1;
        struct sim_rss_memo *m = &sp->rss_memo[sk->flow % SIM_RSS_MEMO];
        if (m->key == key) {
            q = m->q;
        } else {
            struct flow_key fk;
            struct sim_rss_tuple tu;
            parse_pkt(p, &fk);
            sim_rss_tuple_from_pkt(p, &tu);
            q = sim_rss_queue(sp->rss, sim_rss_hash(sp->rss, &tu));
            pkt_reset_meta(p);
            m->key = key;
            m->q = (uint16_t)q;
        }
    }
    if (netdev_dummy_rx_pending(sp->dev, q) >= sp->cfg->rx_ring) {
        pr->drops[SIM_DROP_RX_MISSED]++;
        pkt_free(p);
        return;
    }
    if (sp->cfg->model == SIM_PORT_VM && sp->cfg->guest_csum && !bad)
        sim_guest_partial(p);
    else if (sp->cfg->model == SIM_PORT_VM)
        sim_guest_counts(p, pr);
    if (sp->cfg->eager_csum && (p->flags & PKT_F_VNET_CSUM))
        sim_eager_csum(s, sp, q, p);
    p->ts = sk->arrival_ns;
    if (netdev_dummy_inject(sp->dev, q, p)) {
        pr->drops[SIM_DROP_NOMEM]++; /* freed by the inject */
        return;
    }
    sim_schedule_poll(s, sp->rxq_pmd[q], sk->arrival_ns);
}

/* The frame at the head of a NIC's link has arrived. */
static void sim_wire(struct sim *s, unsigned port)
{
    struct sim_port *sp = &s->ports[port];
    struct sim_pkt *sk = sp->wire_head;
    sp->wire_head = sk->next;
    sp->wire_n--;
    if (!sp->wire_head)
        sp->wire_tail = NULL;
    else
        sim_evq_push(&s->evq, sp->wire_head->arrival_ns, SIM_EV_WIRE, port);
    sk->next = NULL;
    sim_deliver(s, sp, sk, false);
}

static void sim_arrival(struct sim *s, unsigned id, uint64_t now)
{
    struct sim_stream *st = &s->streams[id];
    const struct sim_cfg *c = s->cfg;
    struct sim_port *sp = &s->ports[st->cfg->port];
    struct sim_port_result *pr = sp->res;
    struct sim_traffic_info info;
    /* Built where the sink will find it (the frame as sent), then copied
     * into the packet the datapath gets. */
    struct sim_pkt *sk = sim_pool_get(&s->pool, s->frame_max);
    size_t len = sim_traffic_next_frame(st->traffic, sk ? sk->sent : s->frame, &info);
    uint64_t next = sim_traffic_next_time(st->traffic);
    st->next = next < c->duration_ns ? next : UINT64_MAX;
    /* Hints for the per-flow state this packet and the stream's next one
     * will touch (with a million flows, each a miss). */
    if (st->cfg->expect_port >= 0 && s->ports[st->cfg->expect_port].verify)
        sim_verify_prefetch(s->ports[st->cfg->expect_port].verify, (uint16_t)(id + 1),
                            info.flow_id);
    if (sp->rss_memo)
        __builtin_prefetch(&sp->rss_memo[sim_traffic_peek_flow(st->traffic) % SIM_RSS_MEMO]);
    st->seq = s->evq.next_seq++;
    pr->offered++;
    pr->offered_bytes += len;
    s->res->offered++;

    uint64_t ts = now;
    if (sp->cfg->model == SIM_PORT_NIC) {
        /* The link serialises frames: one cannot finish arriving before
         * the previous one plus its own wire time. */
        uint64_t t_ps = now * SIM_PS_PER_NS;
        uint64_t wire = sim_wire_ps(sp->cfg->line_bps, (uint32_t)len);
        uint64_t done = sp->wire_free_ps + wire;
        if (done < t_ps)
            done = t_ps;
        /* The backlog is the wait behind other frames: a frame longer
         * than it on a slow link is not a drop by itself. */
        if (done - t_ps > SIM_LINE_BACKLOG_PS + wire) {
            pr->drops[SIM_DROP_LINE_RATE]++;
            if (sk)
                pkt_free(&sk->pkt);
            return;
        }
        sp->wire_free_ps = done;
        ts = (done + SIM_PS_PER_NS - 1) / SIM_PS_PER_NS;
    }
    if (!sk) {
        pr->drops[SIM_DROP_NOMEM]++;
        return;
    }
    sk->pkt.len = (uint32_t)len;
    memcpy(sk->pkt.data, sk->sent, len);
    sk->sent_len = (uint32_t)len;
    sk->bad = info.bad;
    sk->arrival_ns = ts;
    sk->stream = id;
    sk->flow = info.flow_id;
    if (ts > now || sp->wire_head) {
        /* Still on the link (behind frames of other streams): it reaches
         * the NIC's ring when it has arrived, not before. Deliberately bad
         * frames never come from a NIC model's guest, so 'bad' only
         * matters on VMs, which have no link. */
        if (sp->wire_tail)
            sp->wire_tail->next = sk;
        else
            sp->wire_head = sk;
        sp->wire_tail = sk;
        sp->wire_n++;
        if (sp->wire_head == sk)
            sim_evq_push(&s->evq, ts, SIM_EV_WIRE, st->cfg->port);
        return;
    }
    sim_deliver(s, sp, sk, info.bad);
}

/* ---- the sinks -------------------------------------------------------------- */

/* What a guest does with a NEEDS_CSUM packet: finishes the sum from
 * csum_start over the rest of the frame, with the field as it came. */
static void sim_guest_complete(struct pkt *p)
{
    if ((uint32_t)p->csum_start + p->csum_offset + 2u > p->len)
        return;
    uint8_t *field = p->data + p->csum_start + p->csum_offset;
    uint16_t c = (uint16_t)~sim_sum16(p->data + p->csum_start, p->len - p->csum_start, 0);
    if (c == 0 && p->csum_offset == 6)
        c = 0xffff; /* UDP sends a computed 0 as all ones */
    field[0] = (uint8_t)(c >> 8);
    field[1] = (uint8_t)c;
}

static void sim_sink(struct sim *s, struct sim_port *sp, struct pkt *p, uint64_t dep_ns)
{
    struct sim_port_result *pr = sp->res;
    if (p->flags & PKT_F_VNET_CSUM) {
        sim_guest_complete(p);
        pr->guest_completed++;
    }
    struct sim_pkt *sk = sim_pkt_of(p);
    if (sk && sk->sent_len)
        sim_verify_frame_sent(sp->verify, p->data, p->len, sk->sent, sk->sent_len, sk->bad);
    else
        sim_verify_frame(sp->verify, p->data, p->len);
    if (sk && sk->arrival_ns >= s->cfg->warmup_ns)
        sim_hist_add(&s->res->latency, dep_ns - sk->arrival_ns);
    if (sp->dump) {
        struct pcap_pkthdr h;
        h.ts.tv_sec = (time_t)(dep_ns / 1000000000u);
        h.ts.tv_usec = (suseconds_t)(dep_ns % 1000000000u); /* ns: a nanosecond pcap */
        h.caplen = h.len = p->len;
        pcap_dump((u_char *)sp->dump, &h, p->data);
    }
    pr->delivered++;
    pr->delivered_bytes += p->len;
    pr->delivered_wire_bytes += (uint64_t)p->len + SIM_WIRE_EXTRA;
    s->res->delivered++;
    pkt_free(p);
}

/* A guest that forwards: what it takes off its vring at 'dep' goes back
 * to the host through another of its ports (as the guest's own stack or a
 * testpmd would send it: NEEDS_CSUM only where that port negotiated it). */
static void sim_guest_forward(struct sim *s, struct sim_port *from, struct pkt *p, uint64_t dep)
{
    struct sim_port *to = &s->ports[from->cfg->forward];
    from->res->forwarded++;
    if ((p->flags & PKT_F_VNET_CSUM) && !to->cfg->guest_csum) {
        sim_guest_complete(p);
        from->res->guest_completed++;
    }
    if (netdev_dummy_rx_pending(to->dev, 0) >= to->cfg->rx_ring) {
        to->res->drops[SIM_DROP_RX_MISSED]++;
        pkt_free(p);
        return;
    }
    bool vnet = p->flags & PKT_F_VNET_CSUM;
    uint16_t start = p->csum_start, off = p->csum_offset;
    uint8_t l4 = p->csum[CSUM_L_OUTER_L4];
    pkt_reset_meta(p);
    if (vnet) {
        p->flags |= PKT_F_VNET_CSUM;
        p->csum_start = start;
        p->csum_offset = off;
        p->csum[CSUM_L_OUTER_L4] = l4;
    }
    p->ts = dep;
    if (netdev_dummy_inject(to->dev, 0, p)) {
        to->res->drops[SIM_DROP_NOMEM]++;
        return;
    }
    sim_schedule_poll(s, to->rxq_pmd[0], dep);
}

/* A frame's last bit has left port sp at dep_ps: into the sink, or back
 * into the host through a forwarding guest. */
static void sim_depart(struct sim *s, struct sim_port *sp, struct pkt *p, uint64_t dep_ps,
                       uint64_t service_ps)
{
    uint64_t dep = sim_ps_to_ns(dep_ps);
    if (s->cfg->on_departure) {
        const struct sim_pkt *sk = sim_pkt_of(p);
        struct sim_departure_info d = {
            .port = (unsigned)(sp - s->ports),
            .len = p->len,
            .dep_ps = dep_ps,
            .service_ps = service_ps,
            .arrival_ns = sk ? sk->arrival_ns : UINT64_MAX,
        };
        s->cfg->on_departure(s->cfg->departure_aux, &d);
    }
    if (sp->cfg->model == SIM_PORT_VM && sp->cfg->forward >= 0)
        sim_guest_forward(s, sp, p, dep);
    else
        sim_sink(s, sp, p, dep);
}

/* When PMD k's poll ends at 'end': what it sent goes into the tx queues'
 * rings and onto its port's serialiser (a VM without a guest rate takes
 * it at once). */
static void sim_poll_end(struct sim *s, unsigned k, uint64_t end)
{
    struct sim_vpmd *v = &s->pmds[k];
    for (size_t j = 0; j < v->n_staged; j++) {
        const struct sim_staged *st = &v->staged[j];
        struct sim_port *sp = &s->ports[st->port];
        sp->tx_staged[st->q]--;
        uint64_t service = sp->cfg->model == SIM_PORT_NIC
                               ? sim_wire_ps(sp->cfg->line_bps, st->p->len)
                               : sp->service_ps;
        if (!service) {
            sim_depart(s, sp, st->p, end * SIM_PS_PER_NS, 0);
            continue;
        }
        uint64_t start = end * SIM_PS_PER_NS;
        if (sp->tx_free_ps > start)
            start = sp->tx_free_ps;
        struct sim_departure d = {st->p, start + service, service, st->q};
        if (sim_outq_push(&sp->out, &d)) {
            sp->res->drops[SIM_DROP_NOMEM]++;
            pkt_free(st->p);
            continue;
        }
        sp->tx_free_ps = d.dep_ps;
        sp->tx_used[st->q]++;
        if (sim_ps_to_ns(d.dep_ps) < s->dep_next)
            s->dep_next = sim_ps_to_ns(d.dep_ps);
    }
    v->n_staged = 0;
}

/* Sends every frame whose last bit has left by 'now' (ns), all ports. */
static void sim_departures(struct sim *s, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        struct sim_outq *o = &sp->out;
        while (o->count) {
            struct sim_departure d = o->d[o->head];
            if (sim_ps_to_ns(d.dep_ps) > now) {
                if (sim_ps_to_ns(d.dep_ps) < next)
                    next = sim_ps_to_ns(d.dep_ps);
                break;
            }
            o->head = (o->head + 1) & (o->cap - 1);
            o->count--;
            sp->tx_used[d.q]--;
            sim_depart(s, sp, d.p, d.dep_ps, d.service_ps);
        }
    }
    s->dep_next = next;
}

/* Takes what PMD k sent on each port during its poll, which ends at
 * 'end' (its packets leave then: SIM_EV_POLL_END). Returns how many. */
static uint64_t sim_stage(struct sim *s, unsigned k, uint64_t end)
{
    struct sim_vpmd *v = &s->pmds[k];
    uint64_t n = 0;
    struct pkt *out[SIM_COLLECT_BURST];
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (!sp->dev || !sp->n_txq)
            continue;
        unsigned q = v->txq[i];
        int got;
        while ((got = netdev_dummy_collect(sp->dev, q, out, SIM_COLLECT_BURST)) > 0) {
            for (int j = 0; j < got; j++) {
                if (v->n_staged == v->staged_cap) {
                    size_t cap = v->staged_cap ? v->staged_cap * 2 : 64;
                    struct sim_staged *ns = realloc(v->staged, cap * sizeof *ns);
                    if (!ns) {
                        sp->res->drops[SIM_DROP_NOMEM]++;
                        pkt_free(out[j]);
                        continue;
                    }
                    v->staged = ns;
                    v->staged_cap = cap;
                }
                v->staged[v->n_staged++] = (struct sim_staged){out[j], (uint32_t)i, (uint16_t)q};
                sp->tx_staged[q]++;
            }
            n += (uint64_t)got;
        }
    }
    if (v->n_staged)
        sim_evq_push(&s->evq, end, SIM_EV_POLL_END, k);
    return n;
}

/* Before PMD k polls at 'now': each of its tx queues takes what its ring
 * has room for (the port's serialiser empties the rings at the line rate,
 * or the guest's). */
static void sim_set_budgets(struct sim *s, unsigned k, uint64_t now)
{
    (void)now; /* the departures due by now have been sent */
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (!sp->dev || !sp->n_txq)
            continue;
        unsigned q = s->pmds[k].txq[i];
        bool ring = sp->cfg->model == SIM_PORT_NIC || sp->service_ps;
        if (!ring) {
            netdev_dummy_set_tx_budget(sp->dev, q, -1);
            continue;
        }
        unsigned held = sp->tx_used[q] + sp->tx_staged[q];
        size_t room = held < sp->cfg->tx_ring ? sp->cfg->tx_ring - held : 0;
        netdev_dummy_set_tx_budget(sp->dev, q, (int64_t)room);
    }
}

/* ---- polls ----------------------------------------------------------------- */

static uint64_t sim_sum(const uint64_t *v, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += v[i];
    return t;
}

void sim_cost_ctx_init(struct sim_cost_ctx *ctx, const struct dp_knobs *knobs)
{
    ctx->emc = knobs->emc_insert_inv_prob != 0;
    ctx->smc = knobs->smc;
}

void sim_cost_snap_read(const struct dp_counters *c, struct sim_cost_snap *snap)
{
    const uint64_t *f = c->fcache.n;
    snap->rx_bursts = c->n[DP_STAT_RX_BURSTS];
    snap->layout_only = c->n[DP_STAT_LAYOUT_ONLY];
    snap->parsed = sim_sum(c->parse, PARSE_N_RESULTS);
    snap->lookups = f[FCACHE_STAT_LOOKUPS];
    snap->direct = f[FCACHE_STAT_DIRECT];
    snap->simple_hits = f[FCACHE_STAT_SIMPLE_HITS];
    snap->emc_hits = f[FCACHE_STAT_EMC_HITS];
    snap->smc_hits = f[FCACHE_STAT_SMC_HITS];
    snap->megaflow_hits = f[FCACHE_STAT_MEGAFLOW_HITS];
    snap->subtable_probes =
        f[FCACHE_STAT_SUBTABLE_LOOKUPS] + f[FCACHE_STAT_SUBTABLE_LOOKUPS_MISS];
    snap->upcalls = f[FCACHE_STAT_UPCALLS];
    snap->megaflows_installed = f[FCACHE_STAT_MEGAFLOWS_INSTALLED];
    snap->action_runs = c->n[DP_STAT_ACTION_RUNS];
    snap->copies = c->n[DP_STAT_COPIES];
    snap->tnl_push = c->n[DP_STAT_TNL_PUSH];
    snap->tnl_pop = c->n[DP_STAT_TNL_POP];
    snap->drops = sim_sum(c->drops, DROP_N_REASONS);
    snap->csum_sw = sim_sum(&c->csum.n[CSUM_STAT_SW], CSUM_L_N);
    snap->csum_sw_bytes = c->csum.n[CSUM_STAT_SW_BYTES];
    snap->csum_verified = c->csum.n[CSUM_STAT_SW_VERIFIED];
    snap->csum_verify_bytes = c->csum.n[CSUM_STAT_SW_VERIFY_BYTES];
    snap->emc_inserts = f[FCACHE_STAT_EMC_INSERTS];
    snap->smc_inserts = f[FCACHE_STAT_SMC_INSERTS];
}

void sim_poll_counts(const struct sim_cost_ctx *ctx, const struct sim_cost_snap *a,
                     const struct sim_cost_snap *b, const struct sim_poll_io *io,
                     uint64_t c[SIM_COST_N])
{
#define SIM_D_(f) (b->f - a->f)
    memset(c, 0, SIM_COST_N * sizeof *c);
    c[SIM_COST_POLL_ITER] = 1;
    c[SIM_COST_RX_BURST] = SIM_D_(rx_bursts);
    c[SIM_COST_RX_PKT] = io->rx;
    /* A port answered by its one in_port subtable validates its packets
     * without a key and looks the batch up once (dp_extract_layout()):
     * the caches count those packets as simple hits, and nothing else. */
    uint64_t layout = SIM_D_(layout_only);
    c[SIM_COST_PARSE] = SIM_D_(parsed) - layout;
    c[SIM_COST_PARSE_LAYOUT] = layout;
    /* Lookups not answered directly by a port's classifier go through the
     * hash and the cache stages that exist. */
    uint64_t cached = SIM_D_(lookups) - SIM_D_(direct) - SIM_D_(simple_hits);
    uint64_t emc_hits = SIM_D_(emc_hits);
    uint64_t smc_hits = SIM_D_(smc_hits);
    uint64_t past_emc = ctx->emc ? cached - emc_hits : cached;
    c[SIM_COST_FLOW_HASH] = cached;
    c[SIM_COST_EMC_HIT] = emc_hits;
    c[SIM_COST_EMC_MISS] = ctx->emc ? past_emc : 0;
    c[SIM_COST_SMC_HIT] = smc_hits;
    c[SIM_COST_SMC_MISS] = ctx->smc ? past_emc - smc_hits : 0;
    c[SIM_COST_MEGAFLOW_HIT] = SIM_D_(megaflow_hits);
    c[SIM_COST_SUBTABLE_PROBE] = SIM_D_(subtable_probes);
    c[SIM_COST_UPCALL] = SIM_D_(upcalls);
    c[SIM_COST_MEGAFLOW_INSTALL] = SIM_D_(megaflows_installed);
    c[SIM_COST_ACTION] = SIM_D_(action_runs);
    c[SIM_COST_COPY] = SIM_D_(copies);
    c[SIM_COST_CSUM_BYTE] = SIM_D_(csum_sw_bytes);
    c[SIM_COST_CSUM_PKT] = SIM_D_(csum_sw);
    c[SIM_COST_CSUM_VERIFY] = SIM_D_(csum_verified);
    c[SIM_COST_CSUM_VERIFY_BYTE] = SIM_D_(csum_verify_bytes);
    c[SIM_COST_TUNNEL_PUSH] = SIM_D_(tnl_push);
    c[SIM_COST_TUNNEL_POP] = SIM_D_(tnl_pop);
    c[SIM_COST_SEND_CALL] = io->sends;
    c[SIM_COST_TX_PKT] = io->tx;
    c[SIM_COST_DROP] = SIM_D_(drops);
    c[SIM_COST_NIC_RX_PKT] = io->nic_rx;
    c[SIM_COST_NIC_TX_PKT] = io->nic_tx;
    c[SIM_COST_EMC_INSERT] = SIM_D_(emc_inserts);
    c[SIM_COST_SMC_INSERT] = SIM_D_(smc_inserts);
    c[SIM_COST_VHOST_PKT] = io->vhost_pkts;
    c[SIM_COST_VHOST_BYTE] = io->vhost_bytes;
#undef SIM_D_
}

/* Packets waiting in PMD v's rx queues of NIC-model ports, and the
 * per-packet cost of those waiting in VM ports' (packet_cost_ns). */
static uint64_t sim_nic_rx_pending(const struct sim_vpmd *v, double *vm_cost)
{
    uint64_t n = 0;
    *vm_cost = 0;
    for (unsigned i = 0; i < v->n_rxqs; i++) {
        const struct sim_port *sp = v->rxqs[i].sp;
        if (sp->cfg->model == SIM_PORT_NIC)
            n += netdev_dummy_rx_pending(sp->dev, v->rxqs[i].qid);
        else if (sp->cfg->packet_cost_ns > 0)
            *vm_cost += netdev_dummy_rx_pending(sp->dev, v->rxqs[i].qid) * sp->cfg->packet_cost_ns;
    }
    return n;
}

/* Adds to io what the poll copied through VM ports' vrings: packets and
 * bytes the device counted received or sent since the last poll (polls
 * run one at a time, so the difference is this poll's). */
static void sim_vhost_moved(struct sim *s, struct sim_poll_io *io)
{
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (!sp->dev || sp->cfg->model != SIM_PORT_VM)
            continue;
        struct netdev_stats st;
        netdev_get_stats(sp->dev, &st);
        uint64_t pkts = st.rx_packets + st.tx_packets, bytes = st.rx_bytes + st.tx_bytes;
        io->vhost_pkts += pkts - sp->vhost_pkts_seen;
        io->vhost_bytes += bytes - sp->vhost_bytes_seen;
        sp->vhost_pkts_seen = pkts;
        sp->vhost_bytes_seen = bytes;
    }
}

static void sim_poll(struct sim *s, unsigned k, uint64_t now)
{
    struct sim_vpmd *v = &s->pmds[k];
    v->scheduled = false;
    sim_set_budgets(s, k, now);
    /* What it takes from NIC-model queues (all it takes, if it polls
     * only those), and the cost of what it takes from VMs'. */
    double vm_before = 0, vm_after = 0;
    uint64_t nic_pending = v->nic_only ? 0 : sim_nic_rx_pending(v, &vm_before);
    unsigned rx = dp_pmd_poll(v->pmd, now);
    struct sim_poll_io io = {.rx = rx};
    io.nic_rx = v->nic_only ? rx : nic_pending - sim_nic_rx_pending(v, &vm_after);

    /* The cost of what the core did, of the send calls to each port and
     * of what the poll sent (it leaves when the poll ends: collected after
     * the cost is known, counted before). */
    struct dp_counters all;
    struct sim_cost_snap cur;
    dp_pmd_counters(v->pmd, &all);
    sim_cost_snap_read(&all, &cur);
    double extra = vm_before - vm_after;
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (!sp->dev)
            continue;
        uint64_t calls = netdev_dummy_send_calls(sp->dev);
        uint64_t d = calls - sp->send_calls_seen;
        sp->send_calls_seen = calls;
        sp->res->send_calls += d;
        io.sends += d;
        extra += (double)d * sp->cfg->send_cost_ns;
    }
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (sp->dev && sp->n_txq) {
            uint64_t n = netdev_dummy_tx_pending(sp->dev, v->txq[i]);
            io.tx += n;
            io.nic_tx += sp->cfg->model == SIM_PORT_NIC ? n : 0;
            extra += (double)n * sp->cfg->packet_cost_ns;
        }
    }
    sim_vhost_moved(s, &io);
    uint64_t counts[SIM_COST_N];
    sim_poll_counts(&s->cost_ctx, &v->prev, &cur, &io, counts);
    v->prev = cur;
    v->io_sum.rx += io.rx;
    v->io_sum.sends += io.sends;
    v->io_sum.tx += io.tx;
    v->io_sum.nic_rx += io.nic_rx;
    v->io_sum.nic_tx += io.nic_tx;
    v->io_sum.vhost_pkts += io.vhost_pkts;
    v->io_sum.vhost_bytes += io.vhost_bytes;
    if (v->has_pending) {
        for (int e = 0; e < SIM_COST_N; e++) {
            counts[e] += v->pending[e];
            v->pending_sum[e] += v->pending[e];
            v->pending[e] = 0;
        }
        v->has_pending = false;
    }
    /* Busy time is every ns charged, whatever the poll did (received,
     * sent, flushed, woke a guest): whole ns, the fractions carried, so
     * busy_ns stays within 1 ns of charged_ns. */
    double charge = sim_profile_apply(&s->cfg->profile, counts) + extra;
    double cost = charge + v->carry;
    double whole = floor(cost);
    v->carry = cost - whole;
    uint64_t dt = (uint64_t)whole;
    uint64_t end = now + dt;
    v->free_at = end;
    v->res->polls++;
    v->res->rx_packets += rx;
    v->res->charged_ns += charge;
    v->res->busy_ns += dt;
    if (!rx) {
        v->res->empty_poll_ns += dt;
        v->res->idle_polls++;
    }
    sim_stage(s, k, end);

    v->idle = rx == 0;
    if (rx) {
        sim_schedule_poll(s, k, end);
        return;
    }
    /* Idle: it holds no packets (an idle poll flushes them all); it sleeps
     * until the next frame due on one of its queues. */
    uint64_t wake = UINT64_MAX;
    for (unsigned i = 0; i < v->n_rxqs; i++) {
        uint64_t ts;
        const struct sim_rxq_ref *q = &v->rxqs[i];
        if (q->sp->dev && netdev_rxq_peek(q->sp->dev, q->qid, &ts) == NETDEV_RX_READY &&
            ts < wake)
            wake = ts;
    }
    if (wake != UINT64_MAX)
        sim_schedule_poll(s, k, wake > now ? wake : now + 1);
}

/* ---- the measurement window ------------------------------------------------- */

static uint64_t sim_in_flight(const struct sim *s);

/* Every event the cost model has charged so far, all PMDs: what the
 * per-poll counts add up to. */
static void sim_cost_totals(const struct sim *s, uint64_t out[SIM_COST_N])
{
    memset(out, 0, SIM_COST_N * sizeof *out);
    for (unsigned k = 0; k < s->cfg->n_pmds; k++) {
        const struct sim_vpmd *v = &s->pmds[k];
        uint64_t c[SIM_COST_N];
        sim_poll_counts(&s->cost_ctx, &v->first, &v->prev, &v->io_sum, c);
        c[SIM_COST_POLL_ITER] = v->res->polls;
        for (int e = 0; e < SIM_COST_N; e++)
            out[e] += c[e] + v->pending_sum[e];
    }
}

static void sim_counters_sub(struct dp_counters *d, const struct dp_counters *a)
{
    for (int i = 0; i < DP_N_STATS; i++)
        d->n[i] -= a->n[i];
    for (int i = 0; i < DROP_N_REASONS; i++)
        d->drops[i] -= a->drops[i];
    for (int i = 0; i < PARSE_N_RESULTS; i++)
        d->parse[i] -= a->parse[i];
    for (int i = 0; i < CSUM_N_STATS; i++)
        d->csum.n[i] -= a->csum.n[i];
    for (int i = 0; i < FCACHE_N_STATS; i++)
        d->fcache.n[i] -= a->fcache.n[i];
}

/* The counters now, as a snapshot in (or, for the closing edge, minus)
 * the window's fields: the first edge records them, the second subtracts
 * the first from them. */
static void sim_window_edge(struct sim *s, uint64_t t)
{
    struct sim_results *r = s->res;
    struct sim_window *w = &r->window;
    bool close = s->window_edges++ == 1;
#define SIM_W_(field, val) (field) = close ? (val) - (field) : (val)
    SIM_W_(w->offered, r->offered);
    SIM_W_(w->delivered, r->delivered);
    uint64_t sim_dropped = 0;
    for (size_t i = 0; i < r->n_ports; i++)
        for (int d = 0; d < SIM_DROP_N; d++)
            sim_dropped += r->ports[i].drops[d];
    SIM_W_(w->sim_dropped, sim_dropped);
    /* The datapath's drops by every reason (those of the tx queues too). */
    struct dp_stats *st = malloc(sizeof *st);
    uint64_t dp_dropped = 0;
    if (st) {
        dp_stats_collect(s->dp, s->dpps, s->cfg->n_pmds, st);
        for (int d = 0; d < DROP_N_REASONS; d++)
            dp_dropped += st->drops[d];
        free(st);
    }
    SIM_W_(w->dp_dropped, dp_dropped);
    *(close ? &w->in_flight_end : &w->in_flight_start) = sim_in_flight(s);
    for (size_t i = 0; i < r->n_ports; i++) {
        const struct sim_port_result *p = &r->ports[i];
        SIM_W_(w->port_offered[i], p->offered);
        SIM_W_(w->port_delivered[i], p->delivered);
        SIM_W_(w->port_delivered_wire_bytes[i], p->delivered_wire_bytes);
        SIM_W_(w->port_delivered_bytes[i], p->delivered_bytes);
        SIM_W_(w->port_rx_missed[i], p->drops[SIM_DROP_RX_MISSED]);
    }
    for (size_t i = 0; i < r->n_pmds; i++) {
        struct sim_pmd_result *p = &r->pmds[i];
        SIM_W_(p->window.polls, p->polls);
        SIM_W_(p->window.rx_packets, p->rx_packets);
        SIM_W_(p->window.busy_ns, p->busy_ns);
    }
    uint64_t costs[SIM_COST_N];
    sim_cost_totals(s, costs);
    for (int e = 0; e < SIM_COST_N; e++)
        SIM_W_(w->cost_counts[e], costs[e]);
#undef SIM_W_
    struct dp_counters sum, one;
    memset(&sum, 0, sizeof sum);
    for (unsigned k = 0; k < s->cfg->n_pmds; k++) {
        dp_pmd_counters(s->dpps[k], &one);
        sim_counters_sub(&sum, &one); /* sum = -(the PMDs' counters) */
    }
    struct dp_counters zero;
    memset(&zero, 0, sizeof zero);
    sim_counters_sub(&zero, &sum); /* zero = the PMDs' counters */
    if (close) {
        sim_counters_sub(&zero, &w->dp);
        w->end_ns = t;
    } else {
        w->start_ns = t;
    }
    w->dp = zero;
}

/* Passes the window's edges due by time t. */
static inline void sim_window_due(struct sim *s, uint64_t t)
{
    if (s->window_edges == 0 && t >= s->cfg->warmup_ns)
        sim_window_edge(s, s->cfg->warmup_ns);
    if (s->window_edges == 1 && t >= s->cfg->duration_ns)
        sim_window_edge(s, s->cfg->duration_ns);
}

/* ---- the run ---------------------------------------------------------------- */

static int sim_alloc(struct sim *s, struct sim_results *res, char *err, size_t errlen)
{
    const struct sim_cfg *c = s->cfg;
    memset(res, 0, sizeof *res);
    res->n_ports = c->n_ports;
    res->n_pmds = c->n_pmds;
    res->ports = calloc(c->n_ports ? c->n_ports : 1, sizeof *res->ports);
    res->pmds = calloc(c->n_pmds, sizeof *res->pmds);
    res->dp = calloc(1, sizeof *res->dp);
    res->violations = calloc(SIM_MAX_LISTED, sizeof *res->violations);
    size_t np = c->n_ports ? c->n_ports : 1;
    res->window.port_offered = calloc(np, sizeof *res->window.port_offered);
    res->window.port_delivered = calloc(np, sizeof *res->window.port_delivered);
    res->window.port_delivered_wire_bytes =
        calloc(np, sizeof *res->window.port_delivered_wire_bytes);
    res->window.port_rx_missed = calloc(np, sizeof *res->window.port_rx_missed);
    res->window.port_delivered_bytes = calloc(np, sizeof *res->window.port_delivered_bytes);
    s->ports = calloc(c->n_ports ? c->n_ports : 1, sizeof *s->ports);
    s->pmds = calloc(c->n_pmds, sizeof *s->pmds);
    s->dpps = calloc(c->n_pmds, sizeof *s->dpps);
    s->streams = calloc(c->n_streams ? c->n_streams : 1, sizeof *s->streams);
    bool window = res->window.port_offered && res->window.port_delivered &&
                  res->window.port_delivered_wire_bytes && res->window.port_rx_missed &&
                  res->window.port_delivered_bytes;
    if (!window || !res->ports || !res->pmds || !res->dp || !res->violations || !s->ports ||
        !s->pmds || !s->dpps || !s->streams || sim_hist_init(&res->latency)) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static void sim_teardown(struct sim *s)
{
    const struct sim_cfg *c = s->cfg;
    for (unsigned i = 0; s->dpps && i < c->n_pmds; i++)
        dp_pmd_destroy(s->dpps[i]);
    for (unsigned i = 0; s->pmds && i < c->n_pmds; i++) {
        free(s->pmds[i].rxqs);
        free(s->pmds[i].txq);
        for (size_t j = 0; j < s->pmds[i].n_staged; j++)
            pkt_free(s->pmds[i].staged[j].p);
        free(s->pmds[i].staged);
    }
    for (size_t i = 0; s->ports && i < c->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        if (sp->dump)
            pcap_dump_close(sp->dump);
        if (sp->pcap)
            pcap_close(sp->pcap);
        sim_verify_destroy(sp->verify);
        free(sp->rss);
        free(sp->rss_memo);
        for (; sp->out.count; sp->out.count--, sp->out.head = (sp->out.head + 1) & (sp->out.cap - 1))
            pkt_free(sp->out.d[sp->out.head].p);
        free(sp->out.d);
    }
    dp_destroy(s->dp); /* frees what the dummy ports still hold */
    for (size_t i = 0; s->streams && i < c->n_streams; i++)
        sim_traffic_destroy(s->streams[i].traffic);
    sim_evq_fini(&s->evq);
    sim_pool_fini(&s->pool);
    free(s->ports);
    free(s->pmds);
    free(s->dpps);
    free(s->streams);
}

/* Packets still inside the datapath or its devices. */
static uint64_t sim_in_flight(const struct sim *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        const struct sim_port *sp = &s->ports[i];
        for (unsigned q = 0; sp->dev && q < sp->n_rxq; q++)
            n += netdev_dummy_rx_pending(sp->dev, q);
        for (unsigned q = 0; sp->dev && q < sp->n_txq; q++)
            n += netdev_dummy_tx_pending(sp->dev, q);
        n += sp->out.count + sp->wire_n; /* on the serialiser, on the rx link */
    }
    for (unsigned k = 0; k < s->cfg->n_pmds; k++)
        n += dp_pmd_queued(s->dpps[k]) + s->pmds[k].n_staged;
    return n;
}

static void sim_finish(struct sim *s)
{
    struct sim_results *res = s->res;
    /* Edges after the last event: the window closes at the end. */
    while (s->window_edges < 2)
        sim_window_edge(s, s->window_edges ? s->cfg->duration_ns : s->cfg->warmup_ns);
    dp_stats_collect(s->dp, s->dpps, s->cfg->n_pmds, res->dp);
    struct dp_totals t;
    dp_stats_totals(res->dp, dp_n_ports(s->dp), &t);
    res->copies = t.copies;
    res->in_flight = sim_in_flight(s);
    res->dropped = t.dropped;
    for (size_t i = 0; i < s->cfg->n_ports; i++) {
        struct sim_port *sp = &s->ports[i];
        for (int d = 0; d < SIM_DROP_N; d++) {
            res->drops[d] += sp->res->drops[d];
            res->dropped += sp->res->drops[d];
        }
        if (!sp->verify)
            continue;
        sp->res->verify = *sim_verify_stats(sp->verify);
        const struct sim_verify_violation *list;
        size_t n = sim_verify_listed(sp->verify, &list);
        for (size_t j = 0; j < n && res->n_violations < SIM_MAX_LISTED; j++)
            res->violations[res->n_violations++] = list[j];
    }
}

int sim_run(const struct sim_cfg *cfg, struct sim_results *res, char *err, size_t errlen)
{
    struct sim s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.res = res;
    sim_evq_init(&s.evq);
    /* Buffers for the largest frame the streams build (the headroom holds
     * what encapsulation adds). */
    s.frame_max = 60;
    s.dep_next = UINT64_MAX;
    for (size_t i = 0; i < cfg->n_streams; i++) {
        size_t m = sim_traffic_frame_max(&cfg->streams[i].traffic);
        if (m > s.frame_max)
            s.frame_max = (uint32_t)m;
    }
    sim_pool_init(&s.pool, s.frame_max);
    int rc = -1;
    if (cfg->n_pmds == 0) {
        fs_errf(err, errlen, "no PMD to run");
        goto out;
    }
    if (sim_alloc(&s, res, err, errlen) || sim_check_rates(&s, err, errlen) ||
        dp_create(&cfg->knobs, &s.dp, err, errlen))
        goto out;
    if (sim_add_ports(&s, err, errlen))
        goto out;
    struct dp_rule_edit e = {.clear = true, .add = cfg->rules, .n_add = cfg->n_rules};
    if (dp_rules_apply(s.dp, &e, cfg->origin, err, errlen))
        goto out;
    for (size_t i = 0; i < cfg->n_streams; i++) {
        const struct sim_stream_cfg *sc = &cfg->streams[i];
        const struct sim_port_cfg *pc = &cfg->ports[sc->port];
        char why[256];
        s.streams[i].cfg = sc;
        s.streams[i].traffic =
            sim_traffic_new(&sc->traffic, cfg->seed, (uint16_t)(i + 1),
                            pc->model == SIM_PORT_NIC ? (double)pc->line_bps : 0, why,
                            sizeof why);
        if (!s.streams[i].traffic) {
            fs_errf(err, errlen, "%s:%d: traffic %s: %s", cfg->origin, sc->line, sc->name,
                    why);
            goto out;
        }
    }
    if (sim_add_sinks(&s, err, errlen) || sim_add_pmds(&s, err, errlen))
        goto out;

    /* The streams' next arrivals stay out of the event queue (one per
     * stream, taken in turn): the earliest event is the queue's head or
     * one of them, ties in scheduling order as in the queue. */
    for (size_t i = 0; i < cfg->n_streams; i++) {
        s.streams[i].next = cfg->duration_ns > 0 ? 0 : UINT64_MAX;
        s.streams[i].seq = s.evq.next_seq++;
    }
    sim_cost_ctx_init(&s.cost_ctx, &cfg->knobs);
    struct sim_event ev;
    for (;;) {
        size_t first = SIZE_MAX;
        for (size_t i = 0; i < cfg->n_streams; i++) {
            const struct sim_stream *st = &s.streams[i];
            if (st->next != UINT64_MAX &&
                (first == SIZE_MAX || st->next < s.streams[first].next ||
                 (st->next == s.streams[first].next && st->seq < s.streams[first].seq)))
                first = i;
        }
        const struct sim_event *head = sim_evq_empty(&s.evq) ? NULL : &s.evq.heap[0];
        /* Departures come first at equal times: a poll then sees the
         * descriptors they free. */
        if (s.dep_next != UINT64_MAX &&
            (first == SIZE_MAX || s.dep_next <= s.streams[first].next) &&
            (!head || s.dep_next <= head->time)) {
            sim_window_due(&s, s.dep_next);
            res->events++;
            res->end_ns = s.dep_next;
            sim_departures(&s, s.dep_next);
            continue;
        }
        if (first != SIZE_MAX &&
            (!head || s.streams[first].next < head->time ||
             (s.streams[first].next == head->time && s.streams[first].seq < head->seq))) {
            ev = (struct sim_event){s.streams[first].next, 0, SIM_EV_ARRIVAL, (uint32_t)first};
        } else if (!sim_evq_pop(&s.evq, &ev)) {
            break;
        }
        sim_window_due(&s, ev.time);
        res->events++;
        res->end_ns = ev.time;
        if (ev.kind == SIM_EV_ARRIVAL)
            sim_arrival(&s, ev.id, ev.time);
        else if (ev.kind == SIM_EV_WIRE)
            sim_wire(&s, ev.id);
        else if (ev.kind == SIM_EV_POLL_END)
            sim_poll_end(&s, ev.id, ev.time);
        else if (s.pmds[ev.id].scheduled && s.pmds[ev.id].next_poll == ev.time)
            sim_poll(&s, ev.id, ev.time);
        if (cfg->progress && !(res->events & (SIM_PROGRESS_EVENTS - 1)))
            cfg->progress(cfg->progress_aux, ev.time, res->offered);
    }
    sim_cost_totals(&s, res->cost_counts);
    sim_finish(&s);
    /* A result that rests on a cost the profile only guesses is no
     * result: VXLAN encapsulation (tunnel_push) is refused when charged. */
    char who[512];
    snprintf(who, sizeof who, "%s: this scenario (it encapsulates into VXLAN)",
             cfg->origin ? cfg->origin : "sim");
    rc = res->cost_counts[SIM_COST_TUNNEL_PUSH]
             ? sim_profile_require(&cfg->profile, SIM_COST_TUNNEL_PUSH, who, err, errlen)
             : 0;
out:
    sim_teardown(&s);
    if (rc)
        sim_results_free(res);
    return rc;
}

void sim_results_free(struct sim_results *res)
{
    if (!res)
        return;
    free(res->ports);
    free(res->pmds);
    free(res->dp);
    free(res->violations);
    free(res->window.port_offered);
    free(res->window.port_delivered);
    free(res->window.port_delivered_wire_bytes);
    free(res->window.port_rx_missed);
    free(res->window.port_delivered_bytes);
    sim_hist_destroy(&res->latency);
    memset(res, 0, sizeof *res);
}
