/* dp.c: ports, rules and the PMD poll loop. */
#include "dp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "flow.h"
#include "parse.h"
#include "parse-inl.h"
#include "util.h"

int dp_rules_load(struct rule_table *t, const struct config *cfg, char *err, size_t errlen)
{
    rule_table_clear(t);
    for (size_t i = 0; i < cfg->n_rules; i++) {
        struct rule *r;
        char why[256];
        if (rule_parse(cfg->rules[i].text, config_rule_port_lookup, (void *)cfg, &r,
                       why, sizeof why)) {
            fs_errf(err, errlen, "%s:%d: rule: %s", cfg->path, cfg->rules[i].line, why);
            rule_table_clear(t);
            return -1;
        }
        r->line = cfg->rules[i].line;
        rule_table_add(t, r);
    }
    return 0;
}

/* Registers tunnel port t with its underlay u (for decapsulation). */
static int dp_add_tunnel(struct dp *dp, struct dp_port *u, struct dp_port *t)
{
    struct tnl_cfg *tn = realloc(u->tnls, (u->n_tnls + 1) * sizeof *tn);
    if (tn)
        u->tnls = tn;
    uint16_t *tp = realloc(u->tnl_ports, (u->n_tnls + 1) * sizeof *tp);
    if (tp)
        u->tnl_ports = tp;
    if (!tn || !tp)
        return -1;
    t->tunnel = true;
    dp->has_tunnels = true;
    u->tnls[u->n_tnls] = t->tnl;
    u->tnl_ports[u->n_tnls] = t->port_no;
    u->n_tnls++;
    return 0;
}

int dp_create(const struct config *cfg, const char *out_dir, struct dp **out,
              char *err, size_t errlen)
{
    struct dp *dp = calloc(1, sizeof *dp);
    if (!dp) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    dp->knobs = cfg->knobs;
    dp->cfg_path = cfg->path;
    dp->cfg = cfg;
    fs_clock_init(&dp->clock, FS_CLOCK_MONOTONIC);
    dp->rules = rule_table_create();
    if (!dp->rules) {
        free(dp);
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < cfg->n_ports; i++) {
        const struct config_port *cp = &cfg->ports[i];
        struct dp_port *p = &dp->ports[i];
        char why[512];
        snprintf(p->name, sizeof p->name, "%s", cp->name);
        snprintf(p->type, sizeof p->type, "%s", cp->type);
        p->port_no = (uint16_t)i;
        dp->n_ports = (unsigned)i + 1;
        if (!strcmp(cp->type, "vxlan")) {
            struct netdev_args targs = {.opts = cp->opts, .n_opts = cp->n_opts};
            int rc = tnl_cfg_parse(&p->tnl, &targs, config_rule_port_lookup, (void *)cfg,
                                   (int)i, why, sizeof why);
            if (rc == 0 && dp->ports[p->tnl.underlay].tunnel) {
                snprintf(why, sizeof why, "option 'underlay': '%s' is a tunnel port",
                         dp->ports[p->tnl.underlay].name);
                rc = -1;
            }
            if (rc == 0 && dp_add_tunnel(dp, &dp->ports[p->tnl.underlay], p)) {
                snprintf(why, sizeof why, "out of memory");
                rc = -1;
            }
            if (rc == 0)
                continue;
            fs_errf(err, errlen, "%s:%d: port %s: %s", cfg->path, cp->line, cp->name, why);
            dp_destroy(dp);
            return -1;
        }
        struct netdev_args args = {
            .opts = cp->opts,
            .n_opts = cp->n_opts,
            .base_dir = cfg->dir,
            .out_dir = out_dir ? out_dir : cfg->dir,
            .caps_set = cp->caps_set,
            .caps = cp->caps,
        };
        p->dev = netdev_open(cp->name, cp->type, &args, why, sizeof why);
        if (!p->dev) {
            fs_errf(err, errlen, "%s:%d: port %s: %s", cfg->path, cp->line, cp->name, why);
            dp_destroy(dp);
            return -1;
        }
        netdev_get_caps(p->dev, &p->caps);
        p->tx_retries = cp->tx_retries >= 0 ? (unsigned)cp->tx_retries
                                            : dp->knobs.tx_retries;
    }
    for (size_t i = 0; i < cfg->n_ports; i++)
        dp->emc_port_inv_prob[i] = cfg->ports[i].emc_insert_inv_prob;
    struct fcache_cfg fcc;
    char why[256];
    dp_fcache_cfg(dp, &fcc);
    if (fcache_cfg_validate(&fcc, why, sizeof why)) {
        fs_errf(err, errlen, "%s: [datapath]: %s", cfg->path, why);
        dp_destroy(dp);
        return -1;
    }
    if (dp_rules_load(dp->rules, cfg, err, errlen)) {
        dp_destroy(dp);
        return -1;
    }
    *out = dp;
    return 0;
}

void dp_destroy(struct dp *dp)
{
    if (!dp)
        return;
    for (unsigned i = 0; i < dp->n_ports; i++) {
        netdev_close(dp->ports[i].dev);
        free(dp->ports[i].tnls);
        free(dp->ports[i].tnl_ports);
    }
    rule_table_destroy(dp->rules);
    free(dp);
}

void dp_fcache_cfg(const struct dp *dp, struct fcache_cfg *c)
{
    const struct dp_knobs *k = &dp->knobs;
    fcache_cfg_default(c);
    c->emc_entries = k->emc_entries;
    c->emc_ways = k->emc_ways;
    c->emc_insert_inv_prob = k->emc_insert_inv_prob;
    c->emc_max_key_len = k->emc_max_key_len;
    c->smc_enabled = k->smc;
    c->smc_entries = k->smc_entries;
    c->megaflow_max = k->megaflow_max;
    c->resort_interval_ns = (uint64_t)k->subtable_resort_ms * 1000000u;
    c->revalidate = k->megaflow_revalidate;
    c->seed = k->seed;
    c->direct_subtables = k->direct_subtables;
    for (unsigned i = 0; i < dp->n_ports && i < FCACHE_MAX_PORTS; i++)
        c->emc_port_inv_prob[i] = dp->emc_port_inv_prob[i];
}

struct dp_pmd *dp_pmd_create(struct dp *dp)
{
    struct dp_pmd *pmd = calloc(1, sizeof *pmd);
    if (!pmd)
        return NULL;
    struct fcache_cfg fcc;
    dp_fcache_cfg(dp, &fcc);
    pmd->fc = fcache_create(&fcc, dp->rules);
    if (!pmd->fc) {
        free(pmd);
        return NULL;
    }
    pmd->dp = dp;
    uint64_t interval_ns = (uint64_t)dp->knobs.tx_flush_interval_us * FS_NSEC_PER_USEC;
    for (unsigned i = 0; i < dp->n_ports; i++)
        txq_init(&pmd->txq[i], dp->ports[i].dev, 0, dp->ports[i].tx_retries,
                 interval_ns);
    pkt_batch_init(&pmd->rx);
    return pmd;
}

int dp_pmd_add_rxq(struct dp_pmd *pmd, uint16_t port, uint16_t qid)
{
    const struct dp *dp = pmd->dp;
    if (pmd->n_rxqs >= sizeof pmd->rxqs / sizeof pmd->rxqs[0] || port >= dp->n_ports ||
        !dp->ports[port].dev || qid >= dp->ports[port].dev->class->n_rxq(dp->ports[port].dev))
        return -1;
    pmd->rxqs[pmd->n_rxqs].port = port;
    pmd->rxqs[pmd->n_rxqs].qid = qid;
    pmd->n_rxqs++;
    return 0;
}

void dp_pmd_set_txq(struct dp_pmd *pmd, uint16_t port, unsigned qid)
{
    if (port < pmd->dp->n_ports)
        pmd->txq[port].qid = qid;
}

void dp_pmd_flush(struct dp_pmd *pmd)
{
    for (unsigned i = 0; i < pmd->dp->n_ports; i++)
        if (txq_queued(&pmd->txq[i]))
            txq_flush(&pmd->txq[i], pmd->now);
}

void dp_pmd_destroy(struct dp_pmd *pmd)
{
    if (!pmd)
        return;
    dp_pmd_flush(pmd);
    for (unsigned i = 0; i < pmd->dp->n_ports; i++)
        txq_purge(&pmd->txq[i], DROP_tx_down);
    pkt_batch_free(&pmd->rx);
    fcache_destroy(pmd->fc);
    free(pmd);
}

/* Action callbacks: aux is the PMD. */
static void dp_drop_cb(void *aux, struct pkt *pkt, enum drop_reason reason)
{
    struct dp_pmd *pmd = aux;
    pmd->drops.n[reason]++;
    pkt_free(pkt);
}

/* Output to a tunnel port: push the outer headers, resolve what the
 * underlay cannot offload, queue on the underlay. */
static void dp_output_tunnel(struct dp_pmd *pmd, struct pkt *pkt, const struct dp_port *t)
{
    struct dp *dp = pmd->dp;
    const struct dp_port *u = &dp->ports[t->tnl.underlay];
    if (!u->dev) {
        dp_drop_cb(pmd, pkt, DROP_tx_down);
        return;
    }
    /* A packet we encapsulated before (double encap): finish its checksums
     * now, it becomes a plain inner packet. */
    if ((pkt->flags & PKT_F_TUNNEL) && pkt_csum_complete(pkt, &pmd->csum) != CSUM_PREP_OK) {
        dp_drop_cb(pmd, pkt, DROP_csum_invalid);
        return;
    }
    pkt->flags &= (uint16_t)~PKT_F_TUNNEL;
    uint32_t vni = t->tnl.vni_flow ? pkt->out_vni : t->tnl.vni;
    bool grew = false;
    uint32_t inner_len = pkt->len;
    if (tnl_push(pkt, &t->tnl, vni, pkt->hash, &grew)) {
        dp_drop_cb(pmd, pkt, DROP_no_headroom);
        return;
    }
    if (grew)
        pmd->headroom_grown++;
    if (pkt_send_prepare(pkt, u->caps.flags, &pmd->csum) != CSUM_PREP_OK) {
        dp_drop_cb(pmd, pkt, DROP_csum_invalid);
        return;
    }
    struct dp_port_stats *ps = &pmd->port_stats[t->port_no];
    ps->tnl_tx++;
    ps->tnl_tx_bytes += inner_len;
    txq_enqueue(&pmd->txq[u->port_no], pkt, pmd->now);
}

static void dp_output_cb(void *aux, struct pkt *pkt, uint16_t port)
{
    struct dp_pmd *pmd = aux;
    if (port < pmd->dp->n_ports && pmd->dp->ports[port].tunnel) {
        dp_output_tunnel(pmd, pkt, &pmd->dp->ports[port]);
        return;
    }
    if (port >= pmd->dp->n_ports || !pmd->dp->ports[port].dev) {
        dp_drop_cb(pmd, pkt, DROP_tx_down);
        return;
    }
    const struct dp_port *p = &pmd->dp->ports[port];
    /* The lazy resolver runs only for batches that hold PARTIAL packets:
     * GOOD/UNKNOWN traffic pays this one test. */
    if (FS_CSUM_MACHINERY && (pmd->rx_flags & PKT_BATCH_F_PARTIAL) &&
        pkt_send_prepare(pkt, p->caps.flags, &pmd->csum) != CSUM_PREP_OK) {
        dp_drop_cb(pmd, pkt, DROP_csum_invalid);
        return;
    }
    txq_enqueue(&pmd->txq[port], pkt, pmd->now);
}

/* Output of a run of packets whose whole action list is one output to
 * 'port': what dp_output_cb() does per packet, with one enqueue for the run
 * when there is nothing to do per packet (a device port, no PARTIAL packet
 * in the rx batch). A run that is the whole rx batch ('whole', 'bytes' of
 * frames or TXQ_BYTES_UNKNOWN) leaves at once when the port's queue would be
 * flushed at the end of the batch anyway (interval 0): nothing else of this
 * batch can join it. */
static void dp_output_run(struct dp_pmd *pmd, struct pkt **pkts, unsigned n, uint16_t port,
                          bool whole, uint64_t bytes)
{
    const struct dp *dp = pmd->dp;
    if (port >= dp->n_ports || dp->ports[port].tunnel || !dp->ports[port].dev ||
        (FS_CSUM_MACHINERY && (pmd->rx_flags & PKT_BATCH_F_PARTIAL))) {
        for (unsigned i = 0; i < n; i++)
            dp_output_cb(pmd, pkts[i], port);
        return;
    }
    struct txq *q = &pmd->txq[port];
    if (whole && q->interval_ns == 0)
        txq_send_burst(q, pkts, n, bytes, pmd->rx_flags, pmd->now);
    else
        txq_enqueue_burst(q, pkts, n, pmd->rx_flags, pmd->now);
}

/* Counts the PARTIAL and BAD verdicts a packet arrived with. Only called
 * for batches whose summary says some packet is PARTIAL or BAD:
 * GOOD/UNKNOWN batches skip it entirely (devices count their own GOOD
 * verdicts). */
static void dp_rx_verdicts(struct dp_pmd *pmd, const struct pkt *p)
{
    for (int l = 0; l < CSUM_L_N; l++)
        if (p->csum[l] == CSUM_BAD)
            pmd->csum.rx_bad[l]++;
    if (p->csum[CSUM_L_OUTER_L4] == CSUM_PARTIAL)
        pmd->csum.rx_partial++;
}

/* The bad-csum policy for a packet still carrying a BAD verdict (after
 * decapsulation, which judges tunnel packets itself); returns false if p
 * was dropped. */
static bool dp_bad_csum_policy(struct dp_pmd *pmd, struct pkt *p)
{
    if (!pkt_csum_any_bad(p))
        return true;
    if (pmd->dp->knobs.bad_csum_forward) {
        pmd->csum.bad_forwarded++;
        return true;
    }
    dp_drop_cb(pmd, p, DROP_bad_csum);
    return false;
}

static const enum drop_reason dp_tnl_drop[TNL_POP_N] = {
    [TNL_POP_TRUNC] = DROP_tunnel_trunc,
    [TNL_POP_IP_OPTIONS] = DROP_tunnel_ip_options,
    [TNL_POP_UDP_LEN] = DROP_tunnel_udp_len,
    [TNL_POP_BAD_CSUM] = DROP_tunnel_bad_csum,
    [TNL_POP_UNKNOWN_VNI] = DROP_tunnel_unknown_vni,
    [TNL_POP_BAD_VXLAN] = DROP_tunnel_bad_vxlan,
    [TNL_POP_NOT_ETHERNET] = DROP_tunnel_not_ethernet,
};

/* A UDP packet on an underlay port: decapsulates it if it is VXLAN for one
 * of the port's tunnels (then *key is the inner packet's, with the tunnel
 * metadata, and in_port the tunnel port). Returns false if p was dropped. */
static bool dp_decap(struct dp_pmd *pmd, struct pkt *p, struct flow_key *key)
{
    const struct dp_port *u = &pmd->dp->ports[p->in_port];
    struct flow_key tk;
    unsigned which;
    enum tnl_pop_result r = tnl_pop(p, u->tnls, u->n_tnls, &which, &tk, &pmd->csum);
    if (r == TNL_POP_NOT_TUNNEL)
        return true;
    if (r != TNL_POP_OK) {
        dp_drop_cb(pmd, p, dp_tnl_drop[r]);
        return false;
    }
    uint16_t tport = u->tnl_ports[which];
    p->in_port = tport;
    struct dp_port_stats *ps = &pmd->port_stats[tport];
    ps->tnl_rx++;
    ps->tnl_rx_bytes += p->len;
    enum parse_result pr = parse_pkt(p, key);
    pmd->parse_results[pr]++;
    if (pr != PARSE_OK) {
        dp_drop_cb(pmd, p, DROP_parse_error);
        return false;
    }
    memcpy(key->tun_src, tk.tun_src, sizeof key->tun_src);
    memcpy(key->tun_dst, tk.tun_dst, sizeof key->tun_dst);
    key->tun_id = tk.tun_id;
    key->tun_flags = tk.tun_flags;
    return true;
}

/* Drops a packet dp_extract() could not take: truncated on capture
 * (r == PARSE_N_RESULTS) or unparsable (r, counted per result). */
static void dp_extract_drop(struct dp_pmd *pmd, struct pkt *p, enum parse_result r)
{
    if (r == PARSE_N_RESULTS) {
        dp_drop_cb(pmd, p, DROP_rx_truncated);
        return;
    }
    pmd->parse_results[r]++;
    dp_drop_cb(pmd, p, DROP_parse_error);
}

/* How much of dp_extract() a batch needs (without keys: dp_extract_layout()). */
enum dp_extract_mode {
    DP_X_KEYS,   /* the keys: nothing else to do for this batch */
    DP_X_FULL,   /* also decapsulation, verdicts, the bad-csum policy, hashes */
};

_Static_assert(PKT_BATCH_MAX <= 32, "dp_extract_layout() marks drops in 32 bits");

/* dp_extract() for a batch whose answer needs no key: the checks, drops
 * and layout only, in place (the packets left are b->pkts[0..n), n
 * returned, their bytes in *kept_bytes). The loop has no drop in it: a
 * bitmask marks what to drop afterwards. */
static unsigned dp_extract_layout(struct dp_pmd *pmd, uint16_t in_port, struct pkt_batch *b,
                                  uint64_t *kept_bytes)
{
    const unsigned count = b->count;
    uint64_t bytes = 0;
    uint32_t bad = 0;
    uint8_t res[PKT_BATCH_MAX];
    for (unsigned i = 0; i < count; i++) {
        struct pkt *p = b->pkts[i];
        p->in_port = in_port;
        bytes += p->len;
        enum parse_result r = p->flags & PKT_F_TRUNCATED ? PARSE_N_RESULTS
                                                         : parse_pkt_layout_rx(p);
        if (r != PARSE_OK) {
            bad |= 1u << i;
            res[i] = (uint8_t)r;
        }
    }
    struct dp_port_stats *ps = &pmd->port_stats[in_port];
    ps->rx_packets += count;
    ps->rx_bytes += bytes;
    unsigned n = count;
    if (bad) {
        n = 0;
        for (unsigned i = 0; i < count; i++) {
            struct pkt *p = b->pkts[i];
            if (bad & (1u << i)) {
                bytes -= p->len;
                dp_extract_drop(pmd, p, (enum parse_result)res[i]);
            } else {
                b->pkts[n++] = p;
            }
        }
    }
    pmd->parse_results[PARSE_OK] += n;
    *kept_bytes = bytes;
    return n;
}

/* The front half of dp_pmd_process(): drops truncated and unparsable
 * packets, decapsulates, applies the bad-csum policy and hashes; returns
 * the packets left (pkts, their keys and hashes as the mode needs). Always
 * inlined with a constant mode: the common batches (no checksum verdicts
 * to judge, no tunnel anywhere, a port the caches look up directly) get a
 * tight parse loop; batches that need no keys take dp_extract_layout(). */
static inline __attribute__((always_inline)) unsigned
dp_extract(struct dp_pmd *pmd, uint16_t in_port, struct pkt_batch *b, struct flow_key *keys,
           struct pkt **pkts, uint32_t *hashes, uint64_t *kept_bytes, bool verdicts,
           const enum dp_extract_mode mode)
{
    const bool general = mode == DP_X_FULL;
    /* flow_hash() feeds the EMC/SMC and the VXLAN source port: packets of a
     * port the caches look up directly need none (fcache_port_direct()). */
    uint32_t hash_port = UINT32_MAX;
    bool need_hash = true;
    uint64_t parsed_ok = 0, bytes = 0, dropped_bytes = 0;
    unsigned n = 0;
    const unsigned count = b->count; /* a local: packet stores cannot alias it */

    for (unsigned i = 0; i < count; i++) {
        struct pkt *p = b->pkts[i];
        p->in_port = in_port;
        bytes += p->len;
        if (p->flags & PKT_F_TRUNCATED) {
            dropped_bytes += p->len;
            dp_extract_drop(pmd, p, PARSE_N_RESULTS);
            continue;
        }
        if (general && verdicts)
            dp_rx_verdicts(pmd, p);
        enum parse_result r = parse_pkt(p, &keys[n]);
        if (r != PARSE_OK) {
            dropped_bytes += p->len;
            dp_extract_drop(pmd, p, r);
            continue;
        }
        if (general) {
            parsed_ok++; /* else every packet parsed is kept: n */
            /* Decapsulation judges the outer verdicts itself
             * (tunnel_bad_csum) and resets them; the bad-csum policy sees
             * what is left. */
            if (pmd->dp->ports[p->in_port].n_tnls && p->l4_proto == 17 &&
                !dp_decap(pmd, p, &keys[n]))
                continue;
            if (verdicts && !dp_bad_csum_policy(pmd, p))
                continue;
            if (p->in_port != hash_port) {
                hash_port = p->in_port;
                need_hash = pmd->dp->has_tunnels || !fcache_port_direct(pmd->fc, hash_port);
            }
            hashes[n] = p->hash = need_hash ? flow_hash(&keys[n], 0) : 0;
        }
        pkts[n++] = p;
    }
    pmd->parse_results[PARSE_OK] += general ? parsed_ok : n;
    struct dp_port_stats *ps = &pmd->port_stats[in_port];
    ps->rx_packets += count;
    ps->rx_bytes += bytes;
    /* Only decapsulation (FULL) changes lengths and drops after parsing. */
    if (!general)
        *kept_bytes = bytes - dropped_bytes;
    return n;
}

void dp_pmd_process(struct dp_pmd *pmd, uint16_t in_port)
{
    struct pkt_batch *b = &pmd->rx;
    struct flow_key keys[PKT_BATCH_MAX];
    struct pkt *pkts[PKT_BATCH_MAX];
    const struct action_list *acts[PKT_BATCH_MAX];
    uint32_t hashes[PKT_BATCH_MAX];
    bool verdicts = FS_CSUM_MACHINERY && (b->flags & (PKT_BATCH_F_BAD | PKT_BATCH_F_PARTIAL));
    unsigned n;
    uint64_t kept_bytes = TXQ_BYTES_UNKNOWN; /* of pkts[0..n), if known */

    pmd->rx_flags = b->flags;
    if (b->count == 0) {
        pkt_batch_init(b);
        return;
    }
    /* Only decapsulation changes a packet's in_port. */
    const uint16_t port = in_port;
    bool plain = !verdicts && !pmd->dp->has_tunnels;
    const struct action_list *simple;
    fcache_sync(pmd->fc, pmd->now);
    if (plain && fcache_port_simple(pmd->fc, port, &simple) &&
        (!simple || (simple->n == 1 && simple->a[0].type == ACT_OUTPUT))) {
        /* One answer for the port, an output or a drop: no key needed. */
        n = dp_extract_layout(pmd, port, b, &kept_bytes);
        pkt_batch_init(b); /* b->pkts[0..n) stay ours until we return */
        if (!n)
            return;
        const struct action_list *a = fcache_lookup_port(pmd->fc, port, n);
        if (a) {
            dp_output_run(pmd, b->pkts, n, a->a[0].u.port, true, kept_bytes);
        } else {
            for (unsigned i = 0; i < n; i++)
                dp_drop_cb(pmd, b->pkts[i], DROP_no_rule);
        }
        return;
    } else {
        if (plain && fcache_port_direct(pmd->fc, port))
            n = dp_extract(pmd, port, b, keys, pkts, hashes, &kept_bytes, false, DP_X_KEYS);
        else
            n = dp_extract(pmd, port, b, keys, pkts, hashes, &kept_bytes, verdicts, DP_X_FULL);
        pkt_batch_init(b);
        fcache_lookup_batch(pmd->fc, keys, hashes, n, acts, pmd->now);
    }

    struct action_ctx ctx = {
        .aux = pmd,
        .output = dp_output_cb,
        .drop = dp_drop_cb,
        .copies = 0,
    };
    for (unsigned i = 0; i < n;) {
        const struct action_list *a = acts[i];
        if (a && a->n == 1 && a->a[0].type == ACT_OUTPUT) {
            /* The common case, as OVS batches per flow: a run of packets
             * that only go out of one port. */
            unsigned j = i + 1;
            while (j < n && acts[j] == a)
                j++;
            dp_output_run(pmd, &pkts[i], j - i, a->a[0].u.port, i == 0 && j == n,
                          kept_bytes);
            i = j;
            continue;
        }
        if (!a)
            dp_drop_cb(pmd, pkts[i], DROP_no_rule);
        else
            actions_execute(&ctx, pkts[i], &keys[i], a);
        i++;
    }
    pmd->copies += ctx.copies;
}

/* After an rx batch: sends the queues whose interval expired, and the full
 * ones (a full batch gains nothing by waiting). */
static void dp_pmd_flush_due(struct dp_pmd *pmd)
{
    for (unsigned i = 0; i < pmd->dp->n_ports; i++) {
        struct txq *q = &pmd->txq[i];
        if (txq_queued(q) >= PKT_BATCH_MAX)
            txq_flush(q, pmd->now);
        else if (txq_queued(q))
            txq_flush_if_due(q, pmd->now);
    }
}

/* Receives one batch from (port, qid) and processes it. */
static unsigned dp_pmd_poll_rxq(struct dp_pmd *pmd, unsigned port_no, unsigned qid)
{
    struct dp_port *port = &pmd->dp->ports[port_no];
    pkt_batch_init(&pmd->rx);
    int n = port->dev->class->rxq_recv(port->dev, qid, &pmd->rx, pmd->now);
    if (n <= 0)
        return 0;
    unsigned got = pmd->rx.count;
    dp_pmd_process(pmd, port->port_no);
    dp_pmd_flush_due(pmd);
    return got;
}

unsigned dp_pmd_poll(struct dp_pmd *pmd, uint64_t now)
{
    struct dp *dp = pmd->dp;
    unsigned total = 0;

    pmd->now = now;
    pmd->iterations++;
    if (pmd->n_rxqs) {
        for (unsigned i = 0; i < pmd->n_rxqs; i++) {
            const struct dp_rxq_ref *r = &pmd->rxqs[i];
            if (dp->ports[r->port].dev)
                total += dp_pmd_poll_rxq(pmd, r->port, r->qid);
        }
    } else {
        for (unsigned i = 0; i < dp->n_ports; i++) {
            struct dp_port *port = &dp->ports[i];
            if (!port->dev || port->rx_done)
                continue;
            unsigned nq = port->dev->class->n_rxq(port->dev);
            for (unsigned q = 0; q < nq; q++) {
                unsigned got;
                do {
                    got = dp_pmd_poll_rxq(pmd, i, q);
                    total += got;
                } while (pmd->drain && got);
            }
        }
    }
    if (total == 0) {
        /* An idle PMD never holds packets. */
        pmd->idle_iterations++;
        dp_pmd_flush(pmd);
    }
    return total;
}

void dp_port_remove(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                    uint16_t port_no)
{
    if (port_no >= dp->n_ports || !dp->ports[port_no].dev)
        return;
    for (unsigned i = 0; i < n_pmds; i++) {
        struct txq *q = &pmds[i]->txq[port_no];
        txq_flush(q, pmds[i]->now);
        txq_purge(q, DROP_tx_down);
        q->dev = NULL;
    }
    netdev_close(dp->ports[port_no].dev);
    dp->ports[port_no].dev = NULL;
}

int dp_set_rules(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                 const struct config *cfg, char *err, size_t errlen)
{
    /* Validate into a scratch table first so a bad file changes nothing. */
    struct rule_table *scratch = rule_table_create();
    if (!scratch) {
        fs_errf(err, errlen, "out of memory");
        return -1;
    }
    int rc = dp_rules_load(scratch, cfg, err, errlen);
    rule_table_destroy(scratch);
    if (rc)
        return -1;
    for (unsigned i = 0; i < n_pmds; i++)
        dp_pmd_flush(pmds[i]);
    return dp_rules_load(dp->rules, cfg, err, errlen);
}

int dp_apply_change(struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                    const struct config_change *ch, char *err, size_t errlen)
{
    for (unsigned i = 0; i < n_pmds; i++)
        dp_pmd_flush(pmds[i]);
    if (ch->clear)
        rule_table_clear(dp->rules);
    for (int pass = 0; pass < 2; pass++) {
        const struct config_rule *l = pass ? ch->add : ch->del;
        size_t n = pass ? ch->n_add : ch->n_del;
        for (size_t k = 0; k < n; k++) {
            struct rule *r;
            char why[256];
            if (rule_parse(l[k].text, config_rule_port_lookup, (void *)dp->cfg, &r, why,
                           sizeof why)) {
                fs_errf(err, errlen, "%s:%d: %s", dp->cfg_path, l[k].line, why);
                return -1;
            }
            r->line = l[k].line;
            if (pass) {
                rule_table_add(dp->rules, r);
            } else {
                rule_table_delete_strict(dp->rules, r);
                rule_free(r);
            }
        }
    }
    if (ch->tx_flush_interval_us >= 0) {
        dp->knobs.tx_flush_interval_us = (uint32_t)ch->tx_flush_interval_us;
        for (unsigned i = 0; i < n_pmds; i++)
            for (unsigned p = 0; p < dp->n_ports; p++)
                pmds[i]->txq[p].interval_ns =
                    (uint64_t)ch->tx_flush_interval_us * FS_NSEC_PER_USEC;
    }
    dp->changes_applied++;
    return 0;
}

/* Drops by reason, the PMDs' own plus what their txqs dropped. */
/* Packets a port's send() accepted and then refused for an offload it did
 * not announce: counted as tx by the txq, reported as drops. */
static uint64_t dp_port_contract_drops(const struct dp *dp, unsigned port)
{
    struct netdev_stats ns;
    if (!dp->ports[port].dev)
        return 0;
    netdev_get_stats(dp->ports[port].dev, &ns);
    return ns.tx_offload_contract;
}

static void dp_drops(const struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
                     struct drop_stats *d)
{
    memset(d, 0, sizeof *d);
    for (unsigned p = 0; p < dp->n_ports; p++)
        d->n[DROP_offload_contract] += dp_port_contract_drops(dp, p);
    for (unsigned i = 0; i < n_pmds; i++) {
        for (int r = 0; r < DROP_N_REASONS; r++) {
            d->n[r] += pmds[i]->drops.n[r];
            for (unsigned p = 0; p < dp->n_ports; p++)
                d->n[r] += pmds[i]->txq[p].stats.dropped[r];
        }
    }
}

void dp_totals(const struct dp *dp, struct dp_pmd *const *pmds, unsigned n_pmds,
               struct dp_totals *t)
{
    struct drop_stats d;
    memset(t, 0, sizeof *t);
    dp_drops(dp, pmds, n_pmds, &d);
    t->dropped = drop_stats_total(&d);
    for (unsigned i = 0; i < n_pmds; i++) {
        t->copies += pmds[i]->copies;
        for (unsigned p = 0; p < dp->n_ports; p++) {
            t->rx += pmds[i]->port_stats[p].rx_packets;
            t->tx += pmds[i]->txq[p].stats.packets;
            t->queued += txq_queued(&pmds[i]->txq[p]);
        }
    }
    for (unsigned p = 0; p < dp->n_ports; p++)
        t->tx -= dp_port_contract_drops(dp, p);
}

/* The earliest pending rx time over every port, UINT64_MAX if none; marks
 * ports with nothing left to replay as done. */
static uint64_t dp_next_rx_time(struct dp *dp)
{
    uint64_t next = UINT64_MAX;
    for (unsigned i = 0; i < dp->n_ports; i++) {
        struct dp_port *port = &dp->ports[i];
        if (!port->dev || port->rx_done)
            continue;
        unsigned nq = port->dev->class->n_rxq(port->dev);
        bool pending = false;
        for (unsigned q = 0; q < nq; q++) {
            uint64_t ts;
            if (netdev_rxq_peek(port->dev, q, &ts) == NETDEV_RX_READY) {
                pending = true;
                if (ts < next)
                    next = ts;
            }
        }
        /* A live source (EMPTY) has nothing to replay: done too. */
        if (!pending)
            port->rx_done = true;
    }
    return next;
}

static bool dp_pmd_holds_packets(const struct dp_pmd *pmd)
{
    for (unsigned i = 0; i < pmd->dp->n_ports; i++)
        if (txq_queued(&pmd->txq[i]))
            return true;
    return false;
}

/* Applies the scripted changes due at 'now'. */
static int dp_replay_changes(struct dp *dp, struct dp_pmd *pmd, uint64_t now)
{
    const struct config *cfg = dp->cfg;
    while (cfg && dp->next_change < cfg->n_changes &&
           cfg->changes[dp->next_change].time_ns <= now) {
        char err[512];
        pmd->now = now;
        if (dp_apply_change(dp, &pmd, 1, &cfg->changes[dp->next_change], err, sizeof err)) {
            fprintf(stderr, "flowswitch: %s\n", err);
            return -1;
        }
        dp->next_change++;
    }
    return 0;
}

/* The replay models a PMD that polls back to back, each iteration taking
 * replay-iteration-ns (P) of virtual time: after a poll at t the next poll is
 * at t + P, and receives every frame stamped up to then. When the next
 * frame is later than that, the poll at t + P finds nothing and, being
 * idle, flushes everything queued; the clock then jumps to the frame. With
 * P = 0 a poll takes no time: frames sharing a timestamp form rx batches
 * and the PMD goes idle between timestamps. */
int dp_replay(struct dp *dp, struct dp_pmd *pmd)
{
    uint64_t iter = dp->knobs.replay_iteration_ns;
    bool polled = false;

    fs_clock_init(&dp->clock, FS_CLOCK_VIRTUAL);
    pmd->drain = true;
    for (;;) {
        uint64_t next = dp_next_rx_time(dp);
        if (next == UINT64_MAX)
            break;
        uint64_t now = fs_clock_now(&dp->clock);
        uint64_t t = next;
        if (polled) {
            if (next > now + iter && dp_pmd_holds_packets(pmd)) {
                fs_clock_advance(&dp->clock, now + iter);
                dp_pmd_poll(pmd, now + iter); /* idle: flushes */
            }
            if (t < now + iter)
                t = now + iter;
        }
        fs_clock_advance(&dp->clock, t);
        if (dp_replay_changes(dp, pmd, fs_clock_now(&dp->clock)))
            return 1;
        if (dp_pmd_poll(pmd, fs_clock_now(&dp->clock)) == 0) {
            /* A backend announced a frame it does not deliver: stop rather
             * than spin. */
            fprintf(stderr, "flowswitch: replay stalled at t=%" PRIu64 " ns\n", next);
            break;
        }
        polled = true;
    }
    /* The last iteration is followed by an idle one (and shutdown). */
    uint64_t now = fs_clock_now(&dp->clock);
    if (polled)
        fs_clock_advance(&dp->clock, now + iter);
    pmd->now = fs_clock_now(&dp->clock);
    dp_pmd_flush(pmd);

    int rc = 0;
    for (unsigned i = 0; i < dp->n_ports; i++) {
        const char *e = dp->ports[i].dev ? netdev_rx_error(dp->ports[i].dev) : NULL;
        if (e) {
            fprintf(stderr, "flowswitch: port %s: %s\n", dp->ports[i].name, e);
            rc = 1;
        }
    }
    return rc;
}

/* --- summary ------------------------------------------------------------ */

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

struct dp_port_view {
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped, send_calls;
};

static void dp_port_view(const struct dp *dp, struct dp_pmd *const *pmds,
                         unsigned n_pmds, unsigned port, struct dp_port_view *v)
{
    memset(v, 0, sizeof *v);
    uint64_t contract = dp_port_contract_drops(dp, port);
    v->tx_packets -= contract;
    v->tx_dropped += contract;
    for (unsigned i = 0; i < n_pmds; i++) {
        const struct dp_port_stats *ps = &pmds[i]->port_stats[port];
        v->rx_packets += ps->tnl_rx;
        v->rx_bytes += ps->tnl_rx_bytes;
        v->tx_packets += ps->tnl_tx;
        v->tx_bytes += ps->tnl_tx_bytes;
        const struct txq_stats *s = &pmds[i]->txq[port].stats;
        v->rx_packets += pmds[i]->port_stats[port].rx_packets;
        v->rx_bytes += pmds[i]->port_stats[port].rx_bytes;
        v->tx_packets += s->packets;
        v->tx_bytes += s->bytes;
        v->send_calls += s->send_calls;
        for (int r = 0; r < DROP_N_REASONS; r++)
            v->tx_dropped += s->dropped[r];
    }
}

/* The flow-cache counters of a set of PMDs, summed. */
static void dp_fcache_sum(struct dp_pmd *const *pmds, unsigned n_pmds, struct fcache_stats *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < n_pmds; i++) {
        struct fcache_stats s;
        fcache_get_stats(pmds[i]->fc, &s);
        t->lookups += s.lookups;
        t->emc_hits += s.emc_hits;
        t->smc_hits += s.smc_hits;
        t->megaflow_hits += s.megaflow_hits;
        t->direct += s.direct;
        t->upcalls += s.upcalls;
        t->upcall_misses += s.upcall_misses;
        t->no_rule += s.no_rule;
        t->subtable_lookups += s.subtable_lookups;
        t->megaflows_installed += s.megaflows_installed;
        t->megaflows_evicted += s.megaflows_evicted;
        t->megaflows_flushed += s.megaflows_flushed;
        t->megaflows_revalidated += s.megaflows_revalidated;
        t->rule_changes += s.rule_changes;
        t->emc_inserts += s.emc_inserts;
        t->smc_inserts += s.smc_inserts;
        t->megaflows += s.megaflows;
        t->subtables += s.subtables;
    }
}

static uint64_t dp_headroom_grown(struct dp_pmd *const *pmds, unsigned n_pmds)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < n_pmds; i++)
        n += pmds[i]->headroom_grown;
    return n;
}

static void dp_fcache_json(struct dp_pmd *const *pmds, unsigned n_pmds, FILE *out)
{
    struct fcache_stats s;
    dp_fcache_sum(pmds, n_pmds, &s);
    fprintf(out,
            "{\"lookups\": %" PRIu64 ", \"emc_hits\": %" PRIu64 ", \"smc_hits\": %" PRIu64
            ", \"megaflow_hits\": %" PRIu64 ", \"direct\": %" PRIu64 ", \"upcalls\": %" PRIu64
            ", \"upcall_misses\": %" PRIu64 ", \"subtable_lookups\": %" PRIu64
            ", \"subtable_lookups_per_megaflow_hit\": %.3f"
            ", \"megaflows_installed\": %" PRIu64 ", \"megaflows_evicted\": %" PRIu64
            ", \"megaflows_flushed\": %" PRIu64 ", \"megaflows_revalidated\": %" PRIu64
            ", \"rule_changes\": %" PRIu64 ", \"emc_inserts\": %" PRIu64
            ", \"smc_inserts\": %" PRIu64 ", \"megaflows\": %u, \"subtables\": %u}",
            s.lookups, s.emc_hits, s.smc_hits, s.megaflow_hits, s.direct, s.upcalls,
            s.upcall_misses, s.subtable_lookups,
            s.megaflow_hits ? (double)s.subtable_lookups / (double)s.megaflow_hits : 0.0,
            s.megaflows_installed, s.megaflows_evicted, s.megaflows_flushed,
            s.megaflows_revalidated, s.rule_changes, s.emc_inserts, s.smc_inserts,
            s.megaflows, s.subtables);
}

static void dp_csum_sum(struct dp_pmd *const *pmds, unsigned n_pmds,
                        struct csum_stats *cs)
{
    uint64_t *d = (uint64_t *)(void *)cs;
    memset(cs, 0, sizeof *cs);
    for (unsigned i = 0; i < n_pmds; i++) {
        const uint64_t *s = (const uint64_t *)(const void *)&pmds[i]->csum;
        for (size_t k = 0; k < sizeof *cs / sizeof(uint64_t); k++)
            d[k] += s[k];
    }
}

static void json_layers(FILE *out, const char *name, const uint64_t v[CSUM_L_N])
{
    fprintf(out,
            "\"%s\": {\"outer_ip\": %" PRIu64 ", \"outer_l4\": %" PRIu64
            ", \"inner_ip\": %" PRIu64 ", \"inner_l4\": %" PRIu64 "}",
            name, v[CSUM_L_OUTER_IP], v[CSUM_L_OUTER_L4], v[CSUM_L_INNER_IP],
            v[CSUM_L_INNER_L4]);
}

static uint64_t sum_layers(const uint64_t v[CSUM_L_N])
{
    return v[0] + v[1] + v[2] + v[3];
}

static void dp_csum_json(const struct csum_stats *cs, FILE *out)
{
    fprintf(out, "{");
    json_layers(out, "sw", cs->sw);
    fprintf(out, ", \"sw_total\": %" PRIu64 ", ", sum_layers(cs->sw));
    json_layers(out, "offloaded", cs->offloaded);
    fprintf(out, ", \"offloaded_total\": %" PRIu64 ", \"guest_partial\": %" PRIu64 ", ",
            sum_layers(cs->offloaded), cs->guest_partial);
    json_layers(out, "rx_bad", cs->rx_bad);
    fprintf(out,
            ", \"rx_partial\": %" PRIu64 ", \"sw_verified\": %" PRIu64
            ", \"sw_verify_failed\": %" PRIu64 ", \"bad_forwarded\": %" PRIu64 "}",
            cs->rx_partial, cs->sw_verified, cs->sw_verify_failed, cs->bad_forwarded);
}

void dp_print_summary(const struct dp *dp, struct dp_pmd *const *pmds,
                      unsigned n_pmds, FILE *out, bool json)
{
    struct drop_stats d;
    struct dp_totals t;
    uint64_t parse[PARSE_N_RESULTS] = {0};
    dp_drops(dp, pmds, n_pmds, &d);
    dp_totals(dp, pmds, n_pmds, &t);
    for (unsigned i = 0; i < n_pmds; i++)
        for (int r = 0; r < PARSE_N_RESULTS; r++)
            parse[r] += pmds[i]->parse_results[r];
    bool conserved = t.rx + t.copies == t.tx + t.dropped + t.queued;
    struct csum_stats cs;
    dp_csum_sum(pmds, n_pmds, &cs);

    if (json) {
        fprintf(out, "{\n  \"flowswitch\": \"%s\",\n  \"config\": ", FS_VERSION);
        json_str(out, dp->cfg_path ? dp->cfg_path : "");
        fprintf(out, ",\n  \"ports\": [");
        for (unsigned p = 0; p < dp->n_ports; p++) {
            const struct dp_port *port = &dp->ports[p];
            struct dp_port_view v;
            struct netdev_stats ns;
            char caps[256];
            dp_port_view(dp, pmds, n_pmds, p, &v);
            netdev_caps_format(&port->caps, caps, sizeof caps);
            if (port->dev)
                netdev_get_stats(port->dev, &ns);
            else
                memset(&ns, 0, sizeof ns);
            fprintf(out,
                    "%s\n    {\"name\": \"%s\", \"port_no\": %u, \"type\": \"%s\", "
                    "\"caps\": \"%s\", \"rx_packets\": %" PRIu64 ", \"rx_bytes\": %" PRIu64
                    ", \"tx_packets\": %" PRIu64 ", \"tx_bytes\": %" PRIu64
                    ", \"tx_dropped\": %" PRIu64 ", \"send_calls\": %" PRIu64
                    ", \"backend\": {\"rx_dropped\": %" PRIu64 ", \"rx_errors\": %" PRIu64
                    ", \"tx_errors\": %" PRIu64 ", \"rx_csum_good\": %" PRIu64
                    ", \"rx_csum_bad\": %" PRIu64 ", \"tx_offload_contract\": %" PRIu64 "}",
                    p ? "," : "", port->name, port->port_no, port->type, caps,
                    v.rx_packets, v.rx_bytes, v.tx_packets, v.tx_bytes, v.tx_dropped,
                    v.send_calls, ns.rx_dropped, ns.rx_errors, ns.tx_errors,
                    ns.rx_csum_good, ns.rx_csum_bad, ns.tx_offload_contract);
            const char *e = port->dev ? netdev_rx_error(port->dev) : NULL;
            if (e) {
                fprintf(out, ", \"rx_error\": ");
                json_str(out, e);
            }
            fprintf(out, "}");
        }
        fprintf(out, "\n  ],\n  \"drops\": {");
        for (int r = 0; r < DROP_N_REASONS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                    drop_reason_name((enum drop_reason)r), d.n[r]);
        fprintf(out, "},\n  \"parse\": {");
        for (int r = 0; r < PARSE_N_RESULTS; r++)
            fprintf(out, "%s\"%s\": %" PRIu64, r ? ", " : "",
                    parse_result_name((enum parse_result)r), parse[r]);
        fprintf(out, "},\n  \"csum\": ");
        dp_csum_json(&cs, out);
        fprintf(out, ",\n  \"fcache\": ");
        dp_fcache_json(pmds, n_pmds, out);
        fprintf(out,
                ",\n  \"totals\": {\"rx\": %" PRIu64 ", \"tx\": %" PRIu64
                ", \"copies\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"queued\": %" PRIu64
                "},\n  \"headroom_grown\": %" PRIu64 ",\n  \"changes_applied\": %" PRIu64 ",\n  \"conservation\": %s\n}\n",
                t.rx, t.tx, t.copies, t.dropped, t.queued, dp_headroom_grown(pmds, n_pmds),
                dp->changes_applied,
                conserved ? "true" : "false");
        return;
    }

    fprintf(out, "%-12s %-6s %10s %12s %10s %12s %8s %6s  %s\n", "port", "type",
            "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "tx_drop", "sends", "caps");
    for (unsigned p = 0; p < dp->n_ports; p++) {
        const struct dp_port *port = &dp->ports[p];
        struct dp_port_view v;
        char caps[256];
        dp_port_view(dp, pmds, n_pmds, p, &v);
        netdev_caps_format(&port->caps, caps, sizeof caps);
        fprintf(out,
                "%-12s %-6s %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %12" PRIu64
                " %8" PRIu64 " %6" PRIu64 "  %s\n",
                port->name, port->type, v.rx_packets, v.rx_bytes, v.tx_packets,
                v.tx_bytes, v.tx_dropped, v.send_calls, caps);
    }
    fprintf(out, "drops:%s\n", drop_stats_total(&d) ? "" : " none");
    for (int r = 0; r < DROP_N_REASONS; r++)
        if (d.n[r])
            fprintf(out, "  %-24s %10" PRIu64 "  %s\n",
                    drop_reason_name((enum drop_reason)r), d.n[r],
                    drop_reason_desc((enum drop_reason)r));
    for (int r = 1; r < PARSE_N_RESULTS; r++) {
        char name[64];
        if (!parse[r])
            continue;
        snprintf(name, sizeof name, "parse_error/%s", parse_result_name((enum parse_result)r));
        fprintf(out, "  %-24s %10" PRIu64 "  %s\n", name, parse[r],
                parse_result_desc((enum parse_result)r));
    }
    struct fcache_stats fs;
    dp_fcache_sum(pmds, n_pmds, &fs);
    fprintf(out,
            "flow caches: %" PRIu64 " lookups: emc %" PRIu64 ", smc %" PRIu64
            ", megaflow %" PRIu64 ", upcalls %" PRIu64 " (%" PRIu64 " without a rule); %"
            PRIu64 " megaflows installed, %" PRIu64 " evicted, %" PRIu64 " flushed; %" PRIu64
            " direct (past the EMC/SMC)\n",
            fs.lookups, fs.emc_hits, fs.smc_hits, fs.megaflow_hits, fs.upcalls,
            fs.upcall_misses, fs.megaflows_installed, fs.megaflows_evicted,
            fs.megaflows_flushed, fs.direct);
    fprintf(out,
            "checksums: %" PRIu64 " computed in software, %" PRIu64
            " offloaded to ports, %" PRIu64 " passed partial to guests, %" PRIu64
            " bad forwarded\n",
            sum_layers(cs.sw), sum_layers(cs.offloaded), cs.guest_partial,
            cs.bad_forwarded);
    fprintf(out,
            "totals: rx %" PRIu64 " + copies %" PRIu64 " = tx %" PRIu64
            " + dropped %" PRIu64 " + queued %" PRIu64 " (%s)\n",
            t.rx, t.copies, t.tx, t.dropped, t.queued,
            conserved ? "conserved" : "NOT CONSERVED");
}
