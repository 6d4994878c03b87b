/* test_dpdk_vhost.c: vhost-user ports (net_vhost) with net_virtio_user
 * guests driven by the test in the same process:
 *  - checksum offload negotiated on and off, as the port reports it;
 *  - a guest's PARTIAL TCP packet forwarded to a non-offloading port (a
 *    ring) leaves with a valid checksum;
 *  - VM-to-VM with guest checksum on both sides: the packet reaches the
 *    other guest still PARTIAL (NEEDS_CSUM) and nothing is computed;
 *  - a PARTIAL L4 behind IPv6 extension headers (a segment routing header,
 *    hop-by-hop) to such a guest is completed in software, with the final
 *    destination's pseudo-header;
 *  - a guest disconnecting under traffic and reconnecting: the switch keeps
 *    running, sends to the absent guest are refused and counted, traffic
 *    resumes, and the counters are conserved;
 *  - queue enable/disable by the guest: two PMDs on a two-queue vhost port,
 *    a guest with two queue pairs and then one: every tx queue lands on a
 *    queue the guest enabled, nothing is dropped. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rte_bus.h>
#include <rte_dev.h>

#include "backends/pcap/netdev-pcap.h"
#include "dpdk_helpers.h"
#include "report.h"

struct vh_env {
    struct rte_mempool *pool;
    char dir[256];
    unsigned serial; /* unique vhost / guest names */
};

struct guest {
    char name[64];
    uint16_t port;
    bool up;
};

/* A guest with 'nq' queue pairs of a device offering 'maxq' (virtio_user
 * enables the first nq, see test_queue_remap). */
static int guest_open_mq(struct vh_env *env, struct guest *g, const char *sock, bool csum,
                         unsigned maxq, unsigned nq)
{
    char args[512];
    snprintf(g->name, sizeof g->name, "net_virtio_user%u", env->serial++);
    snprintf(args, sizeof args, "%s,path=%s,queues=%u,queue_size=256", g->name, sock, maxq);
    if (rte_dev_probe(args) != 0)
        return -1;
    if (rte_eth_dev_get_port_by_name(g->name, &g->port) != 0)
        return -1;
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    if (csum) {
        conf.rxmode.offloads = RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
        conf.txmode.offloads = RTE_ETH_TX_OFFLOAD_TCP_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    }
    if (rte_eth_dev_configure(g->port, (uint16_t)nq, (uint16_t)nq, &conf) != 0)
        return -1;
    for (unsigned q = 0; q < nq; q++)
        if (rte_eth_rx_queue_setup(g->port, (uint16_t)q, 256, SOCKET_ID_ANY, NULL,
                                   env->pool) != 0 ||
            rte_eth_tx_queue_setup(g->port, (uint16_t)q, 256, SOCKET_ID_ANY, NULL) != 0)
            return -1;
    if (rte_eth_dev_start(g->port) != 0)
        return -1;
    g->up = true;
    return 0;
}

static int guest_open(struct vh_env *env, struct guest *g, const char *sock, bool csum)
{
    return guest_open_mq(env, g, sock, csum, 1, 1);
}

static void guest_close(struct guest *g)
{
    if (!g->up)
        return;
    struct rte_eth_dev_info info;
    struct rte_device *dev = NULL;
    if (rte_eth_dev_info_get(g->port, &info) == 0)
        dev = info.device;
    rte_eth_dev_stop(g->port);
    rte_eth_dev_close(g->port);
    if (dev)
        rte_dev_remove(dev);
    g->up = false;
}

/* Receives up to max frames from the guest's rx queue q, waiting until
 * 'want' arrived (want 0: whatever is there now). */
static unsigned guest_recv_q(struct guest *g, unsigned q, struct rte_mbuf **out, unsigned max,
                             unsigned want)
{
    unsigned n = 0;
    uint64_t end = th_now() + TH_WAIT_NS;
    if (!want)
        return rte_eth_rx_burst(g->port, (uint16_t)q, out, (uint16_t)max);
    while (n < want && th_now() < end) {
        uint16_t k = rte_eth_rx_burst(g->port, (uint16_t)q, out + n, (uint16_t)(max - n));
        n += k;
        if (!k)
            th_sleep_ms(1);
    }
    return n;
}

static unsigned guest_recv(struct guest *g, struct rte_mbuf **out, unsigned max,
                           unsigned want)
{
    return guest_recv_q(g, 0, out, max, want);
}

/* The guest sends one TCP frame; 'partial': with checksum offload. */
static void guest_send_tcp(struct vh_env *env, struct guest *g, uint32_t seed,
                           bool partial, uint8_t *frame, uint32_t *len)
{
    *len = th_frame(frame, 6, seed, 100, partial);
    struct rte_mbuf *m = th_mbuf(env->pool, frame, *len);
    assert_non_null(m);
    if (partial) {
        m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
        m->l2_len = 14;
        m->l3_len = 20;
    }
    assert_int_equal(rte_eth_tx_prepare(g->port, 0, &m, 1), 1);
    uint64_t end = th_now() + TH_WAIT_NS;
    while (rte_eth_tx_burst(g->port, 0, &m, 1) != 1) {
        assert_true(th_now() < end);
        th_sleep_ms(1);
    }
}

static int wait_link(struct netdev *dev, bool up)
{
    uint64_t end = th_now() + TH_WAIT_NS;
    while (th_now() < end) {
        if (netdev_link_up(dev) == up)
            return 0;
        th_sleep_ms(5);
    }
    return -1;
}

struct run {
    char dir[256];
    struct config cfg;
    struct dp *dp;
    struct pmd_runtime *rt;
};

/* The datapath of 'ini', its ports open, no PMD running yet. */
static void run_create(struct run *r, const char *ini)
{
    memset(r, 0, sizeof *r);
    assert_int_equal(th_config(r->dir, sizeof r->dir, ini, &r->cfg), 0);
    char err[512];
    int rc = config_dp_create(&r->cfg, r->dir, &r->dp, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
}

static void run_pmds(struct run *r, unsigned n_pmds)
{
    char err[512];
    struct pmd_config pc;
    pmd_config_default(&pc);
    pc.n_pmds = n_pmds;
    pc.idle_sleep_us = 50;
    pc.thread_start = netdev_dpdk_thread_register;
    pc.thread_stop = netdev_dpdk_thread_unregister;
    assert_int_equal(pmd_runtime_create(r->dp, &pc, &r->rt, err, sizeof err), 0);
    assert_int_equal(pmd_runtime_start(r->rt, err, sizeof err), 0);
}

static void run_start_pmds(struct run *r, const char *ini, unsigned n_pmds)
{
    run_create(r, ini);
    run_pmds(r, n_pmds);
}

static void run_start(struct run *r, const char *ini)
{
    run_start_pmds(r, ini, 1);
}

static void run_stop(struct run *r)
{
    pmd_runtime_stop(r->rt);
    if (getenv("FS_TEST_VERBOSE")) {
        static struct dp_stats s;
        dp_stats_collect(r->dp, pmd_runtime_pmds(r->rt), pmd_runtime_n_pmds(r->rt), &s);
        report_summary(stderr, false, r->dp, &s, r->cfg.path, 0);
    }
    assert_true(th_conserved(r->dp, r->rt));
    pmd_runtime_destroy(r->rt);
    dp_destroy(r->dp);
    config_free(&r->cfg);
    th_rmdir(r->dir);
}

/* A ring port whose tx ring the test reads. */
static struct rte_ring *ring_sink(const char *name)
{
    char rn[64];
    snprintf(rn, sizeof rn, "%s_rx", name);
    struct rte_ring *rx = rte_ring_create(rn, 1024, SOCKET_ID_ANY, 0);
    snprintf(rn, sizeof rn, "%s_tx", name);
    struct rte_ring *tx = rte_ring_create(rn, 4096, SOCKET_ID_ANY, 0);
    assert_non_null(rx);
    assert_non_null(tx);
    assert_true(rte_eth_from_rings(name, &rx, 1, &tx, 1, SOCKET_ID_ANY) >= 0);
    return tx;
}

static struct rte_ring *ring_rx_of(const char *name)
{
    char rn[64];
    snprintf(rn, sizeof rn, "%s_rx", name);
    return rte_ring_lookup(rn);
}

static void describe(struct netdev *dev, char *buf, size_t n)
{
    netdev_dpdk_describe(dev, buf, n);
}

/* Guest with offload on: PARTIAL TCP to a ring port leaves completed. */
static void guest_partial_to_phy(struct vh_env *env, bool csum, const char *tag)
{
    char ini[1024], sock[300], ring[32];
    snprintf(sock, sizeof sock, "%s/%s.sock", env->dir, tag);
    snprintf(ring, sizeof ring, "vr_%s", tag);
    struct rte_ring *out = ring_sink(ring);
    snprintf(ini, sizeof ini,
             "[port vm1]\ntype = dpdk\ndevargs = net_vhost_%s,iface=%s,queues=1\nmbufs = 4096\n"
             "[port phy]\ntype = dpdk\ndevargs = net_ring_%s\n"
             "[rules]\nrule = in_port=vm1 actions=output:phy\n",
             tag, sock, ring);
    struct run r;
    run_start(&r, ini);
    struct guest g = {0};
    assert_int_equal(guest_open(env, &g, sock, csum), 0);
    assert_int_equal(wait_link(th_port_dev(r.dp, 0), true), 0);
    char desc[512];
    describe(th_port_dev(r.dp, 0), desc, sizeof desc);
    assert_non_null(strstr(desc, csum ? "guest-csum on" : "guest-csum off"));
    assert_non_null(strstr(desc, csum ? "host-csum on" : "host-csum off"));

    uint8_t frame[256];
    uint32_t len;
    guest_send_tcp(env, &g, 7, csum, frame, &len);
    assert_int_equal(th_wait_rx(r.rt, 1), 0);
    void *m = NULL;
    assert_int_equal(rte_ring_dequeue(out, &m), 0);
    assert_non_null(m);
    struct rte_mbuf *mb = m;
    assert_int_equal(mb->pkt_len, len);
    const uint8_t *got = rte_pktmbuf_mtod(mb, const uint8_t *);
    assert_true(th_csum_ok(got, mb->pkt_len));
    if (csum) {
        /* Sent with the pseudo-header sum only: completed on the way. */
        assert_false(th_csum_ok(frame, len));
        assert_memory_equal(got + 14 + 20 + 20, frame + 14 + 20 + 20, 100);
        assert_true(th_pmd_csum_sw(r.rt, 0) >= 1);
    } else {
        assert_memory_equal(got, frame, len);
    }
    rte_pktmbuf_free(mb);
    guest_close(&g);
    run_stop(&r);
}

static void test_partial_to_phy_csum_on(void **state)
{
    guest_partial_to_phy(*state, true, "on");
}

static void test_full_csum_off(void **state)
{
    guest_partial_to_phy(*state, false, "off");
}

static void test_vm_to_vm(void **state)
{
    struct vh_env *env = *state;
    char ini[1024], s1[300], s2[300];
    snprintf(s1, sizeof s1, "%s/vv1.sock", env->dir);
    snprintf(s2, sizeof s2, "%s/vv2.sock", env->dir);
    snprintf(ini, sizeof ini,
             "[port vm1]\ntype = dpdk\ndevargs = net_vhost_vv1,iface=%s,queues=1\nmbufs = 4096\n"
             "[port vm2]\ntype = dpdk\ndevargs = net_vhost_vv2,iface=%s,queues=1\nmbufs = 4096\n"
             "[rules]\nrule = in_port=vm1 actions=output:vm2\n",
             s1, s2);
    struct run r;
    run_start(&r, ini);
    struct guest g1 = {0}, g2 = {0};
    assert_int_equal(guest_open(env, &g1, s1, true), 0);
    assert_int_equal(guest_open(env, &g2, s2, true), 0);
    assert_int_equal(wait_link(th_port_dev(r.dp, 0), true), 0);
    assert_int_equal(wait_link(th_port_dev(r.dp, 1), true), 0);
    enum { N = 20 };
    uint8_t frame[256];
    uint32_t len = 0;
    for (unsigned i = 0; i < N; i++)
        guest_send_tcp(env, &g1, 100 + i, true, frame, &len);
    struct rte_mbuf *got[N + 4];
    unsigned n = guest_recv(&g2, got, N + 4, N);
    assert_int_equal(n, N);
    for (unsigned i = 0; i < n; i++) {
        /* Delivered PARTIAL: NEEDS_CSUM, reported by virtio as L4 NONE. */
        assert_int_equal(got[i]->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK,
                         RTE_MBUF_F_RX_L4_CKSUM_NONE);
        assert_int_equal(got[i]->pkt_len, len);
        rte_pktmbuf_free(got[i]);
    }
    /* Nothing computed: not by the core, not by the backend. */
    assert_int_equal(th_pmd_csum_sw(r.rt, 0), 0);
    struct netdev_dpdk_stats ds;
    netdev_dpdk_get_stats(th_port_dev(r.dp, 1), &ds);
    assert_int_equal(ds.tx_sw_csum, 0);
    assert_int_equal(ds.tx_offload, N);
    guest_close(&g1);
    guest_close(&g2);
    run_stop(&r);
}

/* Eth / IPv6 from fd00::1 to the first of 'hops' / a segment routing
 * header with 'left' segments left (Segment List[0] the last hop) / UDP
 * with 'payload' bytes; or, with hops NULL, Eth / IPv6 / hop-by-hop / TCP.
 * The L4 field holds the pseudo-header sum of the final destination (a
 * guest's NEEDS_CSUM, RFC 8200 8.1); *l4 and *field locate it. */
static uint32_t rh_frame(uint8_t *b, const uint8_t (*hops)[16], unsigned n_hops,
                         uint8_t left, unsigned payload, uint16_t *l4, uint16_t *field)
{
    static const uint8_t src[16] = {0xfd, [15] = 1}, dst[16] = {0xfd, [15] = 2};
    memcpy(b, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x86\xdd", 14);
    uint8_t *ip = b + 14, *x = ip + 40;
    memset(ip, 0, 8);
    ip[0] = 0x60;
    ip[6] = hops ? 43 : 0;
    ip[7] = 64;
    memcpy(ip + 8, src, 16);
    const uint8_t *final = dst;
    uint32_t xlen;
    if (hops) {
        xlen = 8 + 16 * n_hops;
        memset(x, 0, 8);
        x[0] = 17;
        x[1] = (uint8_t)(2 * n_hops);
        x[2] = 4;
        x[3] = left;
        x[4] = (uint8_t)(n_hops - 1);
        for (unsigned i = 0; i < n_hops; i++)
            memcpy(x + 8 + 16 * i, hops[n_hops - 1 - i], 16);
        memcpy(ip + 24, hops[n_hops - 1 - left], 16);
        final = hops[n_hops - 1];
    } else {
        xlen = 8;
        memcpy(x, "\x06\x00\x01\x04\x00\x00\x00\x00", 8); /* PadN */
        memcpy(ip + 24, dst, 16);
    }
    uint8_t proto = hops ? 17 : 6;
    uint32_t l4h = hops ? 8 : 20, l4len = l4h + payload;
    uint8_t *t = x + xlen;
    memset(t, 0, l4h);
    t[0] = 0x9c;
    t[1] = 0x40;
    t[3] = 53;
    if (hops) {
        t[4] = (uint8_t)(l4len >> 8);
        t[5] = (uint8_t)l4len;
    } else {
        t[12] = 0x50;
        t[13] = 0x18;
    }
    for (unsigned i = 0; i < payload; i++)
        t[l4h + i] = (uint8_t)(i * 7 + 3);
    ip[4] = (uint8_t)((xlen + l4len) >> 8);
    ip[5] = (uint8_t)(xlen + l4len);
    uint32_t ph = th_sum(src, 16, th_sum(final, 16, 0)) + proto + l4len;
    *l4 = (uint16_t)(14 + 40 + xlen);
    *field = hops ? 6 : 16;
    uint16_t c = th_csum_fold(ph);
    t[*field] = (uint8_t)(c >> 8);
    t[*field + 1] = (uint8_t)c;
    return *l4 + l4len;
}

/* True if the L4 checksum of a frame from rh_frame() verifies against its
 * final destination's pseudo-header. */
static bool rh_csum_ok(const uint8_t *b, uint32_t len, const uint8_t *final, uint16_t l4,
                       uint8_t proto)
{
    uint32_t l4len = len - l4;
    uint32_t ph = th_sum(b + 14 + 8, 16, th_sum(final, 16, 0)) + proto + l4len;
    return th_csum_fold(th_sum(b + l4, l4len, ph)) == 0xffff;
}

/* A PARTIAL L4 behind IPv6 extension headers (an SRH with two segments
 * left, a hop-by-hop header), from a vnet-hdr pcap port to a guest that
 * negotiated checksum offload: the backend completes it in software
 * (DPDK's own pseudo-header, which the vhost enqueue would write for an
 * offload request, takes the fixed header's next header, payload length
 * and Destination Address), and the guest receives valid checksums. */
static void test_ipv6_ext_partial_to_guest(void **state)
{
    struct vh_env *env = *state;
    static const uint8_t hops[3][16] = {{0xfd, 0, 0, 1, [15] = 1}, {0xfd, 0, 0, 2, [15] = 2},
                                        {0xfd, 0, 0, 3, [15] = 3}};
    static const uint8_t dst[16] = {0xfd, [15] = 2};
    uint8_t f[2][256];
    uint32_t len[2];
    uint16_t l4[2], field[2];
    len[0] = rh_frame(f[0], hops, 3, 2, 41, &l4[0], &field[0]);
    len[1] = rh_frame(f[1], NULL, 0, 0, 30, &l4[1], &field[1]);
    char path[400], sock[300], ini[1200];
    snprintf(path, sizeof path, "%s/ext.pcap", env->dir);
    snprintf(sock, sizeof sock, "%s/ext.sock", env->dir);
    FILE *pf = fopen(path, "wb");
    assert_non_null(pf);
    const uint32_t ghdr[6] = {0xa1b2c3d4, 2 | 4u << 16, 0, 0, 65535, 147}; /* LINKTYPE_USER0 */
    assert_int_equal(fwrite(ghdr, sizeof ghdr, 1, pf), 1);
    for (int i = 0; i < 2; i++) {
        const uint32_t rec[4] = {0, 0, len[i] + 12, len[i] + 12};
        const uint8_t vh[12] = {1, 0, 0, 0, 0, 0, (uint8_t)l4[i], (uint8_t)(l4[i] >> 8),
                                (uint8_t)field[i], 0, 0, 0}; /* NEEDS_CSUM, little endian */
        assert_int_equal(fwrite(rec, sizeof rec, 1, pf), 1);
        assert_int_equal(fwrite(vh, sizeof vh, 1, pf), 1);
        assert_int_equal(fwrite(f[i], len[i], 1, pf), 1);
    }
    fclose(pf);
    netdev_pcap_register(); /* the teardown unregisters every class */
    snprintf(ini, sizeof ini,
             "[port in]\ntype = pcap\nrx = %s\nvnet-hdr = true\n"
             "[port vm1]\ntype = dpdk\ndevargs = net_vhost_ext,iface=%s,queues=1\n"
             "mbufs = 4096\n"
             "[rules]\nrule = in_port=in actions=output:vm1\n",
             path, sock);
    struct run r;
    run_create(&r, ini);
    struct guest g = {0};
    assert_int_equal(guest_open(env, &g, sock, true), 0);
    assert_int_equal(wait_link(th_port_dev(r.dp, 1), true), 0);
    run_pmds(&r, 1); /* the pcap's packets are due at once: the guest is there */
    struct rte_mbuf *got[4];
    assert_int_equal(guest_recv(&g, got, 4, 2), 2);
    for (int i = 0; i < 2; i++) {
        const uint8_t *b = rte_pktmbuf_mtod(got[i], const uint8_t *);
        assert_int_equal(got[i]->pkt_len, len[i]);
        assert_true(rh_csum_ok(b, len[i], i ? dst : hops[2], l4[i], i ? 6 : 17));
        assert_memory_equal(b, f[i], l4[i]); /* headers untouched */
        rte_pktmbuf_free(got[i]);
    }
    struct netdev_dpdk_stats ds;
    netdev_dpdk_get_stats(th_port_dev(r.dp, 1), &ds);
    assert_int_equal(ds.tx_sw_csum, 2);
    assert_int_equal(ds.tx_offload, 0);
    guest_close(&g);
    run_stop(&r);
}

static void inject_udp(struct vh_env *env, struct rte_ring *rx, unsigned base, unsigned n)
{
    uint8_t buf[256];
    for (unsigned i = 0; i < n; i++) {
        uint32_t len = th_frame(buf, 17, base + i, 64, 0);
        struct rte_mbuf *m = th_mbuf(env->pool, buf, len);
        assert_non_null(m);
        uint64_t end = th_now() + TH_WAIT_NS;
        while (rte_ring_enqueue(rx, m) != 0) {
            assert_true(th_now() < end);
            th_sleep_ms(1);
        }
    }
}

static void test_disconnect_reconnect(void **state)
{
    struct vh_env *env = *state;
    char ini[1024], sock[300];
    snprintf(sock, sizeof sock, "%s/dr.sock", env->dir);
    (void)ring_sink("vr_dr");
    struct rte_ring *phy_rx = ring_rx_of("vr_dr");
    assert_non_null(phy_rx);
    snprintf(ini, sizeof ini,
             "[port phy]\ntype = dpdk\ndevargs = net_ring_vr_dr\n"
             "[port vm]\ntype = dpdk\ndevargs = net_vhost_dr,iface=%s,queues=1\nmbufs = 4096\n"
             "[rules]\nrule = in_port=phy actions=output:vm\n",
             sock);
    struct run r;
    run_start(&r, ini);
    struct netdev *vm = th_port_dev(r.dp, 1);
    struct guest g = {0};
    struct rte_mbuf *got[512];

    /* 1: connected. */
    assert_int_equal(guest_open(env, &g, sock, true), 0);
    assert_int_equal(wait_link(vm, true), 0);
    inject_udp(env, phy_rx, 0, 100);
    unsigned n = guest_recv(&g, got, 512, 100);
    assert_int_equal(n, 100);
    for (unsigned i = 0; i < n; i++)
        rte_pktmbuf_free(got[i]);

    /* 2: traffic while the guest goes away. */
    inject_udp(env, phy_rx, 1000, 200);
    guest_close(&g);
    assert_int_equal(wait_link(vm, false), 0);
    assert_int_equal(th_wait_rx(r.rt, 300), 0);

    /* 3: while it is gone, every packet is refused and counted. */
    uint64_t down0 = th_drops(r.rt, DROP_tx_down);
    inject_udp(env, phy_rx, 2000, 100);
    assert_int_equal(th_wait_rx(r.rt, 400), 0);
    assert_int_equal(th_drops(r.rt, DROP_tx_down) - down0, 100);

    /* 4: reconnect: traffic flows again. */
    assert_int_equal(guest_open(env, &g, sock, true), 0);
    assert_int_equal(wait_link(vm, true), 0);
    inject_udp(env, phy_rx, 3000, 100);
    n = guest_recv(&g, got, 512, 100);
    assert_int_equal(n, 100);
    for (unsigned i = 0; i < n; i++)
        rte_pktmbuf_free(got[i]);

    struct netdev_dpdk_stats ds;
    netdev_dpdk_get_stats(vm, &ds);
    assert_true(ds.link_changes >= 3);
    assert_true(ds.tx_notconn >= 1);
    guest_close(&g);
    pmd_runtime_stop(r.rt);
    struct dp_totals t;
    th_totals(r.dp, r.rt, &t);
    assert_int_equal(t.rx, 500);
    run_stop(&r);
}

/* Waits until the port has seen more than 'after' guest queue events (net_vhost
 * reports them from its own thread, before or after the link comes up);
 * returns the count. */
static uint64_t wait_remaps(struct netdev *vm, uint64_t after)
{
    struct netdev_dpdk_stats ds;
    uint64_t end = th_now() + TH_WAIT_NS;
    do {
        netdev_dpdk_get_stats(vm, &ds);
        if (ds.txq_remaps > after)
            break;
        th_sleep_ms(5);
    } while (th_now() < end);
    return ds.txq_remaps;
}

/* Frames of inject_udp() that the guest got on queue q: all 'want' of them,
 * in order, none elsewhere. */
static void expect_on_queue(struct guest *g, unsigned q, unsigned nq, unsigned want)
{
    struct rte_mbuf *got[256];
    unsigned n = guest_recv_q(g, q, got, 256, want);
    assert_int_equal(n, want);
    for (unsigned i = 0; i < n; i++)
        rte_pktmbuf_free(got[i]);
    for (unsigned o = 0; o < nq; o++) {
        if (o == q)
            continue;
        n = guest_recv_q(g, o, got, 256, 0);
        for (unsigned i = 0; i < n; i++)
            rte_pktmbuf_free(got[i]);
        assert_int_equal(n, 0);
    }
}

/* Queue enable/disable by the guest: a vhost port with two tx queues, used
 * by two PMDs (PMD i sends on txq i). A first guest with a single queue
 * pair never mentions queue 1, and txq 1 must map onto its queue 0; a guest
 * with two queue pairs gets PMD 1's traffic on its queue 1; one that enables
 * only the first of its two gets it on queue 0 again. Nothing is stranded or
 * dropped. */
static void test_queue_remap(void **state)
{
    struct vh_env *env = *state;
    char ini[1024], sock[300];
    snprintf(sock, sizeof sock, "%s/mq.sock", env->dir);
    struct rte_ring *rx[2];
    rx[0] = rte_ring_create("vr_mq_rx0", 1024, SOCKET_ID_ANY, 0);
    rx[1] = rte_ring_create("vr_mq_rx1", 1024, SOCKET_ID_ANY, 0);
    struct rte_ring *tx = rte_ring_create("vr_mq_tx", 1024, SOCKET_ID_ANY, 0);
    assert_true(rx[0] && rx[1] && tx);
    assert_true(rte_eth_from_rings("vr_mq", rx, 2, &tx, 1, SOCKET_ID_ANY) >= 0);
    snprintf(ini, sizeof ini,
             "[port phy]\ntype = dpdk\ndevargs = net_ring_vr_mq\nrxqs = 2\ntxqs = 1\n"
             "[port vm]\ntype = dpdk\ndevargs = net_vhost_mq,iface=%s,queues=2\n"
             "rxqs = 1\ntxqs = 2\nmbufs = 4096\n"
             "[rules]\nrule = in_port=phy actions=output:vm\n",
             sock);
    struct run r;
    run_start_pmds(&r, ini, 2);
    struct dp_pmd *const *pmds = pmd_runtime_pmds(r.rt);
    uint16_t port, qid;
    dp_pmd_get_rxq(pmds[1], 0, &port, &qid);
    assert_int_equal(port, 0);
    assert_int_equal(qid, 1);
    assert_int_equal(dp_pmd_txq_id(pmds[1], 1), 1);
    struct netdev *vm = th_port_dev(r.dp, 1);
    struct netdev_dpdk_stats ds;
    struct guest g = {0};

    /* 1: the first guest has a single queue pair: it never mentions queue
     * 1 (no event), so txq 1 maps onto its queue 0. */
    assert_int_equal(guest_open_mq(env, &g, sock, false, 1, 1), 0);
    assert_int_equal(wait_link(vm, true), 0);
    assert_true(wait_remaps(vm, 0) >= 1); /* its queue 0 enabled */
    inject_udp(env, rx[1], 0, 50);
    expect_on_queue(&g, 0, 1, 50);
    guest_close(&g);
    assert_int_equal(wait_link(vm, false), 0);

    /* 2: two queue pairs: PMD 1's traffic on the guest's queue 1, PMD 0's
     * on queue 0. */
    netdev_dpdk_get_stats(vm, &ds);
    uint64_t before = ds.txq_remaps;
    assert_int_equal(guest_open_mq(env, &g, sock, false, 2, 2), 0);
    assert_int_equal(wait_link(vm, true), 0);
    assert_true(wait_remaps(vm, before + 1) >= before + 2); /* both enabled */
    inject_udp(env, rx[1], 100, 50);
    expect_on_queue(&g, 1, 2, 50);
    inject_udp(env, rx[0], 200, 30);
    expect_on_queue(&g, 0, 2, 30);
    guest_close(&g);
    assert_int_equal(wait_link(vm, false), 0);

    /* 3: a guest of two queue pairs that enables one (virtio_user disables
     * the other): txq 1 maps onto queue 0 again. */
    netdev_dpdk_get_stats(vm, &ds);
    before = ds.txq_remaps;
    assert_int_equal(guest_open_mq(env, &g, sock, false, 2, 1), 0);
    assert_int_equal(wait_link(vm, true), 0);
    assert_true(wait_remaps(vm, before) > before);
    inject_udp(env, rx[1], 300, 40);
    expect_on_queue(&g, 0, 1, 40);

    guest_close(&g);
    pmd_runtime_stop(r.rt);
    struct dp_totals t;
    th_totals(r.dp, r.rt, &t);
    assert_int_equal(t.rx, 170);
    assert_int_equal(t.tx, 170);
    assert_int_equal(t.dropped, 0);
    run_stop(&r);
}

static int setup(void **state)
{
    static struct vh_env env;
    if (th_eal_init("vhost", NULL))
        return -1;
    env.pool = th_pool("vh_pool", 8192);
    snprintf(env.dir, sizeof env.dir, "/tmp/fs-dpdk-vhost-XXXXXX");
    if (!env.pool || !mkdtemp(env.dir))
        return -1;
    *state = &env;
    return 0;
}

static int teardown(void **state)
{
    struct vh_env *env = *state;
    uint16_t pid;
    RTE_ETH_FOREACH_DEV(pid)
    {
        rte_eth_dev_stop(pid);
        rte_eth_dev_close(pid);
    }
    rte_mempool_free(env->pool);
    th_rmdir(env->dir);
    netdev_unregister_all();
    netdev_dpdk_fini();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_to_phy_csum_on),
        cmocka_unit_test(test_full_csum_off),
        cmocka_unit_test(test_vm_to_vm),
        cmocka_unit_test(test_ipv6_ext_partial_to_guest),
        cmocka_unit_test(test_disconnect_reconnect),
        cmocka_unit_test(test_queue_remap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
