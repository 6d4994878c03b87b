/* test_sim_invariants.c: physics and bookkeeping the simulator must obey
 * on any scenario.
 *
 * A seeded generator builds random topologies: one to three ingress NICs
 * of random line rates (10 Mb/s to 100 Gb/s) feeding one egress port (a
 * NIC, or a VM whose guest takes packets at some rate), one to four PMDs,
 * random rx queues, tx queues and ring sizes, offered rates from 10% to
 * 150% of the line (allow-overload), frame sizes from 64 to 9000 bytes,
 * short runs. Each run is checked against arithmetic done here, from the
 * configured rates and the frames' lengths:
 *   - per egress NIC, the bits that leave (frame + FCS + preamble + gap,
 *     24 bytes beyond the buffer) within any window W of 1, 10 or 100 us
 *     stay <= line rate x W + one frame;
 *   - each packet's latency >= its serialisation time on the egress;
 *   - every PMD's busy time is within 1 ns of what the cost model charged;
 *   - conservation over the run and over the measurement window
 *     (offered + copies + in flight at the start = delivered + dropped +
 *     in flight at the end), and no buffer too small for a frame;
 *   - the same seed gives the same bytes of JSON report.
 * And two smaller ones: a long frame on a slow link is not a line_rate
 * drop, and the text report shows the simple path's hits.
 * FS_TEST_QUICK=1 (valgrind) runs fewer topologies. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/report.h"
#include "app/scenario.h"
#include "backends/dummy/netdev-dummy.h"
#include "sim/engine.h"
#include "sim/rng.h"

#define MAX_PORTS 4
#define WIRE_EXTRA_BYTES 24 /* FCS 4, preamble and start delimiter 8, gap 12 */

struct dep_rec {
    uint64_t dep_ps, arrival_ns;
    uint32_t len;
};

/* What the departure hook saw, per port. */
struct observer {
    struct dep_rec *d[MAX_PORTS];
    size_t n[MAX_PORTS], cap[MAX_PORTS];
    uint64_t line_bps[MAX_PORTS]; /* 0: not a NIC */
    uint64_t service_ps[MAX_PORTS];
    unsigned bad_latency;
};

static void on_departure(void *aux, const struct sim_departure_info *d)
{
    struct observer *o = aux;
    assert_true(d->port < MAX_PORTS);
    unsigned p = d->port;
    if (o->n[p] == o->cap[p]) {
        o->cap[p] = o->cap[p] ? 2 * o->cap[p] : 1024;
        o->d[p] = realloc(o->d[p], o->cap[p] * sizeof *o->d[p]);
        assert_non_null(o->d[p]);
    }
    o->d[p][o->n[p]++] = (struct dep_rec){d->dep_ps, d->arrival_ns, d->len};
    /* Its serialisation time, from the configured rate. */
    double ser_ps = o->line_bps[p]
                        ? (double)(d->len + WIRE_EXTRA_BYTES) * 8 * 1e12 / (double)o->line_bps[p]
                        : (double)o->service_ps[p];
    if (d->arrival_ns != UINT64_MAX &&
        (double)d->dep_ps - (double)d->arrival_ns * 1000.0 < ser_ps - 1.0)
        o->bad_latency++;
}

/* Bits leaving port p in any window of w_ps: <= line x w + one frame. */
static void check_line_rate(const struct observer *o, unsigned p, double w_ps)
{
    const struct dep_rec *d = o->d[p];
    double line = (double)o->line_bps[p], bits = 0, max_bits = 0;
    size_t lo = 0;
    for (size_t j = 0; j < o->n[p]; j++) {
        if (j)
            assert_true(d[j].dep_ps >= d[j - 1].dep_ps); /* one serialiser: in order */
        double b = (double)(d[j].len + WIRE_EXTRA_BYTES) * 8;
        if (b > max_bits)
            max_bits = b;
        bits += b;
        while ((double)(d[j].dep_ps - d[lo].dep_ps) >= w_ps) {
            bits -= (double)(d[lo].len + WIRE_EXTRA_BYTES) * 8;
            lo++;
        }
        if (bits > line * w_ps / 1e12 + max_bits + 1e-6) {
            fail_msg("port %u: %.0f bits in %.0f ps at %.0f b/s (+%.0f)", p, bits, w_ps, line,
                     max_bits);
        }
    }
}

static uint64_t pick(struct sim_rng *r, const uint64_t *v, size_t n)
{
    return v[sim_rng_u64(r) % n];
}

/* One random topology (ports, streams, rules in the caller's arrays). */
struct topo {
    struct sim_cfg cfg;
    struct sim_port_cfg ports[MAX_PORTS];
    struct sim_stream_cfg streams[MAX_PORTS];
    struct dp_rule_src rules[MAX_PORTS];
    char rule_text[MAX_PORTS][96];
};

static void port_init(struct sim_port_cfg *p, const char *name, enum sim_port_model m)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->model = m;
    p->rxqs = 1;
    p->rx_ring = p->tx_ring = 1024;
    p->forward = -1;
    p->tx_retries = -1;
    p->emc_insert_inv_prob = -1;
}

static void topo_gen(struct topo *t, uint64_t seed)
{
    static const uint64_t rates[] = {10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                     25000000000ull, 100000000000ull};
    static const uint64_t sizes[] = {64, 65, 128, 594, 1518, 9000};
    static const uint64_t rings[] = {8, 64, 256, 1024};
    struct sim_rng r;
    sim_rng_init(&r, seed, 77);
    memset(t, 0, sizeof *t);
    struct sim_cfg *c = &t->cfg;
    c->seed = seed;
    c->n_pmds = 1 + (unsigned)(sim_rng_u64(&r) % 4);
    c->allow_overload = true;
    sim_profile_default(&c->profile);
    dp_knobs_default(&c->knobs);
    c->origin = "invariants";
    unsigned n_in = 1 + (unsigned)(sim_rng_u64(&r) % 3);
    unsigned eg = n_in;
    bool vm = sim_rng_u64(&r) % 4 == 0;
    port_init(&t->ports[eg], "eg", vm ? SIM_PORT_VM : SIM_PORT_NIC);
    if (vm) {
        t->ports[eg].guest_pps = pick(&r, (const uint64_t[]){0, 100000, 2000000}, 3);
        t->ports[eg].tx_ring = t->ports[eg].rx_ring = 256;
    } else {
        t->ports[eg].line_bps = pick(&r, rates, 6);
        t->ports[eg].tx_ring = (unsigned)pick(&r, rings, 4);
        t->ports[eg].txqs = (unsigned)(sim_rng_u64(&r) % (c->n_pmds + 1));
    }
    double min_pkt_ns = 1e18;
    for (unsigned i = 0; i < n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%u", i);
        struct sim_port_cfg *p = &t->ports[i];
        port_init(p, name, SIM_PORT_NIC);
        p->line_bps = pick(&r, rates, 6);
        p->rxqs = 1 + (unsigned)(sim_rng_u64(&r) % 2);
        p->rx_ring = (unsigned)pick(&r, rings, 4);
        struct sim_stream_cfg *s = &t->streams[i];
        snprintf(s->name, sizeof s->name, "s%u", i);
        s->port = i;
        s->expect_port = (int)eg;
        sim_traffic_cfg_default(&s->traffic);
        s->traffic.flows = 1 + (uint32_t)(sim_rng_u64(&r) % 64);
        s->traffic.size[0] = (uint16_t)pick(&r, sizes, 6);
        s->traffic.size_weight[0] = 1;
        s->traffic.n_sizes = 1;
        s->traffic.rate_unit = SIM_RATE_LINE_PCT;
        s->traffic.rate = 10 + (double)(sim_rng_u64(&r) % 141);
        s->traffic.arrivals = sim_rng_u64(&r) % 2 ? SIM_ARR_POISSON : SIM_ARR_CONSTANT;
        double pkt_ns = (double)(s->traffic.size[0] + 20) * 8 * 1e9 / (double)p->line_bps /
                        (s->traffic.rate / 100);
        if (pkt_ns < min_pkt_ns)
            min_pkt_ns = pkt_ns;
        snprintf(t->rule_text[i], sizeof t->rule_text[i], "in_port=%s actions=output:eg", name);
        t->rules[i] = (struct dp_rule_src){t->rule_text[i], 0};
    }
    /* A few thousand packets on the fastest stream, at least 20 on the
     * slowest link's. */
    double pkts = getenv("FS_TEST_QUICK") ? 300 : 3000;
    uint64_t dur = (uint64_t)(pkts * min_pkt_ns);
    if (dur < 20000)
        dur = 20000;
    c->duration_ns = dur;
    c->warmup_ns = dur / 4;
    c->ports = t->ports;
    c->n_ports = n_in + 1;
    c->streams = t->streams;
    c->n_streams = n_in;
    c->rules = t->rules;
    c->n_rules = n_in;
}

static char *report_bytes(struct topo *t, const struct sim_results *res, size_t *len)
{
    struct scenario sc;
    memset(&sc, 0, sizeof sc);
    sc.sim = t->cfg;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    report_sim(f, true, &sc, res);
    fclose(f);
    return buf;
}

static void check_one(uint64_t seed)
{
    struct topo t;
    topo_gen(&t, seed);
    struct observer o;
    memset(&o, 0, sizeof o);
    for (size_t i = 0; i < t.cfg.n_ports; i++) {
        const struct sim_port_cfg *p = &t.ports[i];
        o.line_bps[i] = p->model == SIM_PORT_NIC ? p->line_bps : 0;
        o.service_ps[i] = p->model == SIM_PORT_VM && p->guest_pps ? 1000000000000ull / p->guest_pps
                                                                   : 0;
    }
    t.cfg.on_departure = on_departure;
    t.cfg.departure_aux = &o;
    struct sim_results res;
    char err[512];
    if (sim_run(&t.cfg, &res, err, sizeof err))
        fail_msg("seed %" PRIu64 ": %s", seed, err);

    for (size_t p = 0; p < t.cfg.n_ports; p++) {
        if (!o.line_bps[p])
            continue;
        check_line_rate(&o, (unsigned)p, 1e6);
        check_line_rate(&o, (unsigned)p, 1e7);
        check_line_rate(&o, (unsigned)p, 1e8);
    }
    assert_int_equal(o.bad_latency, 0);
    uint64_t seen = 0;
    for (size_t p = 0; p < t.cfg.n_ports; p++) {
        seen += o.n[p];
        assert_int_equal(o.n[p], res.ports[p].delivered + res.ports[p].forwarded);
    }
    assert_int_equal(seen, res.delivered);
    for (size_t k = 0; k < res.n_pmds; k++) {
        const struct sim_pmd_result *pm = &res.pmds[k];
        /* busy is the charged ns floored (the fraction carried); the
         * tolerance adds the rounding of summing charged_ns in doubles. */
        double diff = (double)pm->busy_ns - pm->charged_ns;
        double tol = 1.0 + 1e-12 * pm->charged_ns * (double)pm->polls;
        if (diff <= -tol || diff >= tol)
            fail_msg("seed %" PRIu64 " pmd %zu: busy %" PRIu64 " charged %.9f", seed, k,
                     pm->busy_ns, pm->charged_ns);
        /* every poll charges at least its iteration */
        assert_true(pm->charged_ns + 1 >=
                    (double)pm->polls * t.cfg.profile.cost_ns[SIM_COST_POLL_ITER]);
    }
    assert_int_equal(res.offered + res.copies, res.delivered + res.dropped + res.in_flight);
    assert_int_equal(res.in_flight, 0);
    assert_int_equal(res.drops[SIM_DROP_NOMEM], 0);
    const struct sim_window *w = &res.window;
    assert_int_equal(w->offered + w->dp.n[DP_STAT_COPIES] + w->in_flight_start,
                     w->delivered + w->dp_dropped + w->sim_dropped + w->in_flight_end);

    /* Same seed, same bytes. */
    size_t la, lb;
    char *a = report_bytes(&t, &res, &la);
    sim_results_free(&res);
    t.cfg.on_departure = NULL;
    assert_int_equal(sim_run(&t.cfg, &res, err, sizeof err), 0);
    char *b = report_bytes(&t, &res, &lb);
    sim_results_free(&res);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    for (size_t p = 0; p < MAX_PORTS; p++)
        free(o.d[p]);
}

static void test_random_topologies(void **state)
{
    (void)state;
    unsigned n = getenv("FS_TEST_QUICK") ? 12 : 60;
    for (unsigned i = 0; i < n; i++)
        check_one(1000 + i);
}

/* A frame longer than the 1 ms backlog on a slow link (1518 bytes at
 * 10 Mb/s: 1.23 ms) arriving at an idle link is carried, not dropped as
 * line_rate: 10 frames at 1% of the line are each 123 ms apart. */
static void test_slow_link_no_drop(void **state)
{
    (void)state;
    struct topo t;
    topo_gen(&t, 1);
    t.cfg.n_ports = 2;
    t.cfg.n_streams = t.cfg.n_rules = 1;
    t.cfg.n_pmds = 1;
    t.cfg.allow_overload = false;
    port_init(&t.ports[0], "in0", SIM_PORT_NIC);
    t.ports[0].line_bps = 10000000;
    port_init(&t.ports[1], "eg", SIM_PORT_NIC);
    t.ports[1].line_bps = 10000000;
    t.streams[0].traffic.size[0] = 1518;
    t.streams[0].traffic.rate = 1;
    t.streams[0].traffic.arrivals = SIM_ARR_CONSTANT;
    t.streams[0].expect_port = 1;
    snprintf(t.rule_text[0], sizeof t.rule_text[0], "in_port=in0 actions=output:eg");
    /* (1518 + 20) x 8 / 10e6 / 1% = 123.04 ms between frames: 10 in 1.2 s */
    t.cfg.duration_ns = 1200000000ull;
    t.cfg.warmup_ns = 0;
    struct sim_results res;
    char err[512];
    assert_int_equal(sim_run(&t.cfg, &res, err, sizeof err), 0);
    assert_int_equal(res.offered, 10);
    assert_int_equal(res.drops[SIM_DROP_LINE_RATE], 0);
    assert_int_equal(res.delivered, 10);
    sim_results_free(&res);
}

/* The text report lists the lookups the simple path answered, so the
 * cache stages add up to the lookups. */
static void test_text_report_simple_hits(void **state)
{
    (void)state;
    struct topo t;
    topo_gen(&t, 7);
    struct sim_results res;
    char err[512];
    assert_int_equal(sim_run(&t.cfg, &res, err, sizeof err), 0);
    struct scenario sc;
    memset(&sc, 0, sizeof sc);
    sc.sim = t.cfg;
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    report_sim(f, false, &sc, &res);
    fclose(f);
    const uint64_t *n = res.dp->fcache.n;
    assert_true(n[FCACHE_STAT_SIMPLE_HITS] > 0); /* in_port rules: the simple path */
    char want[64];
    snprintf(want, sizeof want, ", simple %" PRIu64 ",", n[FCACHE_STAT_SIMPLE_HITS]);
    assert_non_null(strstr(buf, want));
    free(buf);
    sim_results_free(&res);
}

int main(void)
{
    netdev_dummy_register();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_topologies),
        cmocka_unit_test(test_slow_link_no_drop),
        cmocka_unit_test(test_text_report_simple_hits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
