/* calibcmd.c: `flowswitch sim calibrate`, a cost profile measured on this
 * machine (sim/calibrate.h).
 *
 *   flowswitch sim calibrate [--out PROFILE.json] [--quick] [--repeats N]
 *                            [--polls N] [--cpu N] [--json] [--base PROFILE]
 *                            [--only NAME]
 *                            [--nic-rx DEVARGS --nic-tx DEVARGS [--nic-mbufs N]
 *                             -- EAL-ARGS]
 *
 * Measures the TSC rate against the monotonic clock, runs the calibration
 * workloads pinned to one CPU, fits the costs and writes a profile (the
 * CPU model from /proc/cpuinfo, the measured TSC rate as "ghz", the costs
 * in ns, and under "calibration" the workloads, their measured and fitted
 * cycles and the status of every event). With --base, the core's costs
 * are those of an existing profile instead. With --nic-rx/--nic-tx (DPDK
 * builds), the NIC driver cost is measured too: bursts received from a
 * DPDK port and sent on another (no datapath), against the same on dummy
 * ports; the difference per packet is nic_rx_packet (nic_tx_packet stays
 * 0: one figure per forwarded packet). The profile is read back with the
 * loader before it is kept: a profile it would refuse is an error. */
#define _GNU_SOURCE
#include "calibcmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#ifdef HAVE_DPDK
#include "backends/dpdk/netdev-dpdk.h"
#endif
#include "calibrate.h"
#include "netdev.h"
#include "packet.h"
#include "profile.h"
#include "sys.h"

#define CAL_EXIT_OK 0
#define CAL_EXIT_USAGE 1
#define CAL_EXIT_FAILED 2

static void calib_usage(FILE *out)
{
    fprintf(out,
            "usage: flowswitch sim calibrate [--out PROFILE.json] [--quick] [--repeats N]\n"
            "                                [--polls N] [--cpu N] [--json]\n"
            "Measures the cost model's per-event costs on this machine: the real core on\n"
            "dummy ports, each poll timed with the TSC, over workloads that vary each\n"
            "event independently, fitted by non-negative least squares of cycles per poll\n"
            "on the events per poll (medians over --repeats runs of --polls polls).\n"
            "--out writes the profile (else it goes to stdout after the table); --json\n"
            "prints the profile only; --cpu pins the measurement (default: the last CPU\n"
            "this process may use); --quick measures a reduced catalogue; --base takes\n"
            "the core's costs from a profile instead of measuring them; --only NAME\n"
            "measures only the workloads whose name starts with NAME (to look at them:\n"
            "its fit is no profile).\n"
            "--nic-rx DEVARGS --nic-tx DEVARGS [--nic-mbufs N] -- EAL-ARGS (DPDK builds):\n"
            "also measures what a DPDK port pair costs per forwarded packet beyond a\n"
            "dummy pair (e.g. --nic-rx net_pcap0,rx_pcap=t.pcap,infinite_rx=1 --nic-tx\n"
            "net_null0,size=64,no-rx=1 -- -l 1 --no-pci): the profile's nic_rx_packet.\n"
            "--vhost SOCK -- EAL-ARGS (DPDK builds): also measures a vhost copy, a\n"
            "net_vhost port on SOCK and a net_virtio_user guest in this process, at 64\n"
            "and 1518 B: the profile's vhost_packet and vhost_byte (with --base).\n");
}

/* The TSC rate in GHz: cycles over monotonic ns across 'ms' of spinning,
 * the median of three tries. */
static double calib_tsc_ghz(unsigned ms)
{
    double g[3];
    for (int i = 0; i < 3; i++) {
        uint64_t n0 = fs_mono_ns(), c0 = fs_cycles();
        while (fs_mono_ns() - n0 < (uint64_t)ms * 1000000u)
            ;
        uint64_t n1 = fs_mono_ns(), c1 = fs_cycles();
        g[i] = (double)(c1 - c0) / (double)(n1 - n0);
    }
    double a = g[0] < g[1] ? g[0] : g[1], b = g[0] < g[1] ? g[1] : g[0];
    return g[2] < a ? a : g[2] > b ? b : g[2];
}

/* /proc/cpuinfo's first "model name", or "unknown". */
static void calib_cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10))
            continue;
        char *c = strchr(line, ':');
        if (!c)
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        c[strcspn(c, "\n")] = '\0';
        snprintf(buf, size, "%s", c);
        break;
    }
    fclose(f);
}

static void calib_loop(void)
{
    /* What app/pmd.c's loop reads beside the TSC every iteration. */
    volatile uint64_t now = fs_mono_ns();
    (void)now;
}

static void calib_progress(void *aux, size_t done, size_t total, const char *name)
{
    (void)aux;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\rcalibrate: %zu/%zu %-40s", done + 1, total, name);
}

/* Why event e's cost is no measurement, or NULL when it is one: never
 * counted, counted only in proportion to another event, or held at the
 * bound 0 by every bootstrap resample (no workload asks for more: the
 * fit cannot tell it from 0). */
static const char *calib_unidentified(const struct sim_calib *c, int e, char *buf,
                                      size_t size)
{
    if (c->twin[e] == -2)
        return "not exercised (no workload counts it): the profile keeps the built-in "
               "default";
    if (c->twin[e] >= 0) {
        snprintf(buf, size, "collinear with %s (their sum is identified)",
                 sim_cost_name((enum sim_cost)c->twin[e]));
        return buf;
    }
    if (c->cost_cycles[e] == 0 && c->uncertainty_cycles[e] == 0)
        return "at the bound 0 in every resample (not separated from the other events)";
    return NULL;
}

static const char *calib_status(const struct sim_calib *c, int e, char *buf, size_t size)
{
    const char *why = calib_unidentified(c, e, buf, size);
    return why ? why : "identified";
}

/* The profile's cost of event e: the fit's, or for an event no workload
 * counts the built-in default (a guess, listed as not identified). */
static double calib_cost_ns(const struct sim_calib *c, const struct sim_profile *def, int e,
                            double ghz)
{
    return c->twin[e] == -2 ? def->cost_ns[e] : c->cost_cycles[e] / ghz;
}

/* "uncertainty_ns" and "not_identified" of a profile document. */
static void calib_fit_json(json_t *doc, const struct sim_calib *c, double ghz)
{
    json_t *unc = json_object(), *nid = json_array();
    for (int e = 0; e < SIM_COST_N; e++) {
        char buf[128];
        if (calib_unidentified(c, e, buf, sizeof buf))
            json_array_append_new(nid, json_string(sim_cost_name((enum sim_cost)e)));
        else if (c->uncertainty_cycles[e] >= 0)
            json_object_set_new(unc, sim_cost_name((enum sim_cost)e),
                                json_real(round(c->uncertainty_cycles[e] / ghz * 1e4) / 1e4));
    }
    json_object_set_new(doc, "uncertainty_ns", unc);
    json_object_set_new(doc, "not_identified", nid);
}

static json_t *calib_profile_json(const struct sim_calib *c, const char *cpu, double ghz,
                                  const struct sim_calib_opts *o, int pinned)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < c->n_rows; i++) {
        const struct sim_calib_row *r = &c->rows[i];
        json_t *counts = json_object();
        for (int e = 0; e < SIM_COST_N; e++)
            if (r->counts[e] != 0)
                json_object_set_new(counts, sim_cost_name((enum sim_cost)e),
                                    json_real(r->counts[e]));
        json_array_append_new(
            rows, json_pack("{s:s, s:s, s:i, s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:o}", "name",
                            r->name, "isolates", r->isolates, "burst", (int)r->burst,
                            "frame_bytes", (int)r->frame, "cycles_per_poll", r->cycles,
                            "cycles_min", r->cycles_min, "cycles_max", r->cycles_max,
                            "polls_discarded", (int)r->polls_discarded,
                            "fitted_cycles", r->fitted, "rel_error",
                            r->cycles > 0 ? r->fitted / r->cycles - 1 : 0.0,
                            "events_per_poll", counts));
    }
    struct sim_profile def;
    sim_profile_default(&def);
    json_t *events = json_object();
    json_t *costs = json_object();
    for (int e = 0; e < SIM_COST_N; e++) {
        char buf[128];
        double ns = calib_cost_ns(c, &def, e, ghz);
        json_object_set_new(events, sim_cost_name((enum sim_cost)e),
                            json_pack("{s:f, s:f, s:f, s:s}", "cycles", c->cost_cycles[e], "ns",
                                      ns, "uncertainty_cycles", c->uncertainty_cycles[e],
                                      "status", calib_status(c, e, buf, sizeof buf)));
        json_object_set_new(costs, sim_cost_name((enum sim_cost)e),
                            json_real(round(ns * 1e4) / 1e4));
    }
    char desc[512];
    snprintf(desc, sizeof desc,
             "Calibrated by flowswitch sim calibrate on this CPU: the core on dummy ports, "
             "%zu workloads, %u runs of %u timed polls each; ghz is the measured TSC rate; "
             "events no workload counts keep the built-in default and are listed in "
             "not_identified.",
             c->n_rows, o->repeats, o->polls);
    json_t *calib = json_pack(
        "{s:s, s:f, s:i, s:i, s:i, s:i, s:b, s:f, s:f, s:o, s:o}", "estimator",
        sim_calib_estimator, "tsc_ghz", ghz, "repeats", (int)o->repeats, "polls",
        (int)o->polls, "warm_polls", (int)o->warm_polls, "cpu_pinned", pinned, "quick",
        o->quick, "rms_rel_error", c->rms_rel_err, "max_rel_error", c->max_rel_err, "events",
        events, "workloads", rows);
    json_t *doc = json_pack("{s:s, s:f, s:s, s:o, s:o}", "cpu", cpu, "ghz",
                            round(ghz * 1e6) / 1e6, "description", desc, "calibration", calib,
                            "costs_ns", costs);
    calib_fit_json(doc, c, ghz);
    return doc;
}

/* ---- was the machine quiet? ------------------------------------------------- */

#define CALIB_MAX_CPUS 1024

/* /proc/stat's jiffies per CPU: busy (everything but idle and iowait),
 * steal, and the total. */
struct calib_stat {
    unsigned long long busy[CALIB_MAX_CPUS], steal[CALIB_MAX_CPUS], total[CALIB_MAX_CPUS];
    int n;
};

static void calib_stat_read(struct calib_stat *st)
{
    memset(st, 0, sizeof *st);
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long v[8] = {0};
        int cpu;
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 5 ||
            cpu < 0 || cpu >= CALIB_MAX_CPUS)
            continue;
        /* user nice system idle iowait irq softirq steal */
        st->busy[cpu] = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        st->steal[cpu] = v[7];
        st->total[cpu] = st->busy[cpu] + v[3] + v[4];
        if (cpu + 1 > st->n)
            st->n = cpu + 1;
    }
    fclose(f);
}

/* The other CPUs' busy share and every CPU's steal share between a and b
 * (the calibration's own CPU is left out of the first: it is busy by
 * design). Writes both into the calibration object and warns when the
 * machine was busy enough to disturb the timings. */
static void calib_load_json(json_t *doc, const struct calib_stat *a, const struct calib_stat *b,
                            int pinned)
{
    unsigned long long busy = 0, total = 0, steal = 0, all = 0;
    for (int i = 0; i < b->n && i < a->n; i++) {
        all += b->total[i] - a->total[i];
        steal += b->steal[i] - a->steal[i];
        if (i == pinned)
            continue;
        busy += b->busy[i] - a->busy[i];
        total += b->total[i] - a->total[i];
    }
    double other = total ? (double)busy / (double)total : 0;
    double st = all ? (double)steal / (double)all : 0;
    json_t *calib = json_object_get(doc, "calibration");
    if (calib)
        json_object_set_new(calib, "machine_load",
                            json_pack("{s:f, s:f, s:s}", "other_cpus_busy", other, "steal", st,
                                      "measured", "/proc/stat over the calibration"));
    if (other > 0.1 || st > 0.01)
        fprintf(stderr,
                "flowswitch sim calibrate: warning: the machine was busy during the "
                "calibration (other CPUs %.0f%% busy, %.1f%% stolen by the hypervisor): "
                "the costs include other work's interference; recalibrate on a quiet "
                "machine\n",
                100 * other, 100 * st);
}

/* The profile's "calibration" object, made if the document has none. */
static json_t *calib_obj(json_t *doc)
{
    json_t *calib = json_object_get(doc, "calibration");
    if (!calib) {
        calib = json_object();
        json_object_set_new(doc, "calibration", calib);
    }
    return calib;
}

/* The command line and the machine, for the profile's record, under
 * "command" and "machine" (a --base run: "base_command", "base_machine"
 * for the one that added to the base profile). */
static void calib_origin_json(json_t *doc, int argc, char **argv, bool base)
{
    char cmd[2048] = "flowswitch sim calibrate";
    size_t n = strlen(cmd);
    for (int i = 1; i < argc && n < sizeof cmd; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " %s", argv[i]);
    struct utsname u;
    char machine[512] = "unknown";
    if (uname(&u) == 0)
        snprintf(machine, sizeof machine, "%s, %s %s, %ld CPUs online", u.nodename, u.sysname,
                 u.release, sysconf(_SC_NPROCESSORS_ONLN));
    json_t *calib = calib_obj(doc);
    json_object_set_new(calib, base ? "base_command" : "command", json_string(cmd));
    json_object_set_new(calib, base ? "base_machine" : "machine", json_string(machine));
}

static void calib_table(FILE *out, const struct sim_calib *c, double ghz, const char *cpu)
{
    fprintf(out, "calibration on %s, TSC %.4f GHz\n", cpu, ghz);
    fprintf(out, "%-28s %10s %10s %8s %9s\n", "workload", "cyc/poll", "fitted", "error",
            "discarded");
    for (size_t i = 0; i < c->n_rows; i++) {
        const struct sim_calib_row *r = &c->rows[i];
        fprintf(out, "%-28s %10.1f %10.1f %+7.1f%% %9u\n", r->name, r->cycles, r->fitted,
                r->cycles > 0 ? 100 * (r->fitted / r->cycles - 1) : 0.0, r->polls_discarded);
    }
    fprintf(out, "fit: rms relative error %.1f%%, max %.1f%%\n", 100 * c->rms_rel_err,
            100 * c->max_rel_err);
    fprintf(out, "%-20s %10s %10s %9s  %s\n", "event", "cycles", "ns", "+-ns", "status");
    for (int e = 0; e < SIM_COST_N; e++) {
        char buf[128], unc[32] = "-";
        if (c->uncertainty_cycles[e] >= 0)
            snprintf(unc, sizeof unc, "%.4f", c->uncertainty_cycles[e] / ghz);
        fprintf(out, "%-20s %10.3f %10.4f %9s  %s\n", sim_cost_name((enum sim_cost)e),
                c->cost_cycles[e], c->cost_cycles[e] / ghz, unc,
                calib_status(c, e, buf, sizeof buf));
    }
    fprintf(out, "+-ns: half the 5-95%% bootstrap interval over the rounds\n");
}

/* Pins the calling thread to 'cpu' (-1: the last one it may use).
 * Returns the CPU, or -1 if it could not pin. */
static int calib_pin(int cpu)
{
    cpu_set_t set;
    if (cpu < 0) {
        if (sched_getaffinity(0, sizeof set, &set))
            return -1;
        for (int i = CPU_SETSIZE - 1; i >= 0; i--)
            if (CPU_ISSET(i, &set)) {
                cpu = i;
                break;
            }
    }
    if (cpu < 0)
        return -1;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) ? -1 : cpu;
}

struct calib_nic {
    const char *rx, *tx;      /* devargs, NULL: no NIC measurement */
    const char *mbufs;
    char **eal;               /* argv for the EAL, [0] the program */
    int n_eal;
    double dpdk_cpp, dummy_cpp;
};

/* The NIC driver's cycles per packet beyond a dummy port's. */
static int calib_nic(struct calib_nic *n, const struct sim_calib_clock *clk,
                     const struct sim_calib_opts *o, char *err, size_t errlen)
{
#ifdef HAVE_DPDK
    if (netdev_dpdk_init(n->n_eal, n->eal, err, errlen))
        return -1;
    netdev_dpdk_register();
    const struct netdev_opt rx_opts[] = {{"devargs", n->rx, 0}, {"rxqs", "1", 0},
                                         {"txqs", "1", 0}, {"burst", "32", 0},
                                         {"mbufs", n->mbufs, 0}};
    const struct netdev_opt tx_opts[] = {{"devargs", n->tx, 0}, {"rxqs", "0", 0},
                                         {"txqs", "1", 0}};
    struct netdev_args ra = {.opts = rx_opts, .n_opts = n->mbufs ? 5 : 4, .base_dir = "",
                             .out_dir = ""};
    struct netdev_args ta = {.opts = tx_opts, .n_opts = 3, .base_dir = "", .out_dir = ""};
    char why[512];
    struct netdev *rx = netdev_open("nic-rx", "dpdk", &ra, why, sizeof why);
    struct netdev *tx = rx ? netdev_open("nic-tx", "dpdk", &ta, why, sizeof why) : NULL;
    int rc = -1;
    if (!rx || !tx) {
        snprintf(err, errlen, "--nic-%s: %s", rx ? "tx" : "rx", why);
    } else {
        struct sim_calib_dev d = {.rx = rx, .tx = tx};
        rc = sim_calib_device(clk, o, &d, &n->dpdk_cpp, err, errlen);
    }
    if (tx)
        netdev_close(tx);
    if (rx)
        netdev_close(rx);
    netdev_dpdk_fini();
    if (rc)
        return -1;
    return sim_calib_dummy_io(clk, o, &n->dummy_cpp, err, errlen);
#else
    (void)n;
    (void)clk;
    (void)o;
    snprintf(err, errlen, "--nic-rx/--nic-tx need the DPDK backend (not compiled in)");
    return -1;
#endif
}

/* Puts the NIC measurement into a profile document. */
static void calib_nic_json(json_t *doc, const struct calib_nic *n, double ghz)
{
    double extra = n->dpdk_cpp - n->dummy_cpp;
    if (extra < 0)
        extra = 0;
    json_t *costs = json_object_get(doc, "costs_ns");
    json_object_set_new(costs, "nic_rx_packet", json_real(round(extra / ghz * 1e4) / 1e4));
    json_object_set_new(costs, "nic_tx_packet", json_real(0));
    json_t *nid = json_object_get(doc, "not_identified");
    for (size_t i = json_array_size(nid); i-- > 0;) {
        const char *e = json_string_value(json_array_get(nid, i));
        if (e && (!strcmp(e, "nic_rx_packet") || !strcmp(e, "nic_tx_packet")))
            json_array_remove(nid, i);
    }
    json_t *calib = json_object_get(doc, "calibration");
    if (!calib) {
        calib = json_object();
        json_object_set_new(doc, "calibration", calib);
    }
    json_object_set_new(calib, "nic",
                        json_pack("{s:s, s:s, s:f, s:f, s:f, s:s}", "rx_devargs", n->rx,
                                  "tx_devargs", n->tx, "dpdk_cycles_per_packet", n->dpdk_cpp,
                                  "dummy_cycles_per_packet", n->dummy_cpp, "tsc_ghz", ghz,
                                  "charged", "nic_rx_packet: (dpdk - dummy) cycles per "
                                  "forwarded packet / tsc_ghz; nic_tx_packet 0"));
    const char *d = json_string_value(json_object_get(doc, "description"));
    char desc[1024];
    snprintf(desc, sizeof desc,
             "%s NIC driver cost: %s into %s, %.1f cycles per forwarded packet beyond a "
             "dummy pair's, charged as nic_rx_packet.",
             d ? d : "", n->rx, n->tx, extra);
    json_object_set_new(doc, "description", json_string(desc));
}

/* ---- vhost copies ------------------------------------------------------------ */

/* What the host's PMD pays to copy packets through a vhost vring: a
 * net_vhost port (the host's end, server on SOCK) and a net_virtio_user
 * port (the guest's end) in this process. Untimed, the guest sends a burst
 * of FRAME-byte frames; timed, the host receives it from the vring (a copy
 * out) and sends it back (a copy in); untimed, the guest takes it off. Two
 * frame sizes give the per-byte cost, the dummy pair's cycles the rest. */
struct calib_vhost {
    const char *sock;         /* NULL: no vhost measurement */
    char **eal;
    int n_eal;
    double cpp[2];            /* cycles per packet moved, 64 and 1518 B */
    double dummy_cpp;
};

static const unsigned calib_vhost_sizes[2] = {64, 1518};

struct calib_vhost_io {
    struct netdev *guest;
    unsigned frame;           /* bytes on the wire (the buffer: 4 fewer) */
    uint8_t data[1518];
};

static void calib_vhost_refill(void *aux, struct netdev *rx, uint64_t now)
{
    (void)rx;
    (void)now;
    struct calib_vhost_io *io = aux;
    struct pkt *p[32];
    int n = 0;
    while (n < 32 && (p[n] = pkt_from_data(io->data, io->frame - 4)))
        n++;
    int sent = n ? netdev_send(io->guest, 0, p, n, 0) : 0;
    for (int i = sent < 0 ? 0 : sent; i < n; i++)
        pkt_free(p[i]);
}

static void calib_vhost_drain(void *aux, struct netdev *tx)
{
    (void)tx;
    struct calib_vhost_io *io = aux;
    for (int round = 0; round < 4; round++) {
        struct pkt_batch b;
        pkt_batch_init(&b);
        int n = netdev_rxq_recv(io->guest, 0, &b, UINT64_MAX);
        for (int i = 0; i < b.count; i++)
            pkt_free(b.pkts[i]);
        if (n <= 0)
            break;
    }
}

static struct netdev *calib_dpdk_open(const char *name, const char *devargs, char *why,
                                      size_t size)
{
    const struct netdev_opt opts[] = {{"devargs", devargs, 0}, {"rxqs", "1", 0},
                                      {"txqs", "1", 0}, {"burst", "32", 0}};
    struct netdev_args a = {.opts = opts, .n_opts = 4, .base_dir = "", .out_dir = ""};
    return netdev_open(name, "dpdk", &a, why, size);
}

static int calib_vhost(struct calib_vhost *v, const struct sim_calib_clock *clk,
                       const struct sim_calib_opts *o, char *err, size_t errlen)
{
#ifdef HAVE_DPDK
    if (netdev_dpdk_init(v->n_eal, v->eal, err, errlen))
        return -1;
    netdev_dpdk_register();
    char host_args[512], guest_args[512], why[512];
    snprintf(host_args, sizeof host_args, "net_vhost0,iface=%s,queues=1", v->sock);
    snprintf(guest_args, sizeof guest_args, "net_virtio_user0,path=%s,queues=1", v->sock);
    struct netdev *host = calib_dpdk_open("vhost-host", host_args, why, sizeof why);
    struct netdev *guest = host ? calib_dpdk_open("vhost-guest", guest_args, why, sizeof why)
                                : NULL;
    int rc = -1;
    if (!host || !guest)
        snprintf(err, errlen, "--vhost %s: %s", v->sock, why);
    struct calib_vhost_io *io = calloc(1, sizeof *io);
    for (int k = 0; k < 2 && host && guest && io; k++) {
        io->guest = guest;
        io->frame = calib_vhost_sizes[k];
        for (unsigned i = 0; i < sizeof io->data; i++)
            io->data[i] = (uint8_t)(i < 12 ? 0x02 : i);
        struct sim_calib_dev d = {.rx = host, .tx = host, .refill = calib_vhost_refill,
                                  .drain = calib_vhost_drain, .aux = io};
        rc = sim_calib_device(clk, o, &d, &v->cpp[k], err, errlen);
        if (rc)
            break;
    }
    free(io);
    if (guest)
        netdev_close(guest);
    if (host)
        netdev_close(host);
    netdev_dpdk_fini();
    if (rc)
        return -1;
    return sim_calib_dummy_io(clk, o, &v->dummy_cpp, err, errlen);
#else
    (void)v;
    (void)clk;
    (void)o;
    snprintf(err, errlen, "--vhost needs the DPDK backend (not compiled in)");
    return -1;
#endif
}

/* Puts the vhost measurement into a profile document: each timed packet
 * was copied twice (out of the vring and into it). */
static void calib_vhost_json(json_t *doc, const struct calib_vhost *v, double ghz)
{
    double dbytes = (double)(calib_vhost_sizes[1] - calib_vhost_sizes[0]);
    double byte = (v->cpp[1] - v->cpp[0]) / (2 * dbytes);
    byte = byte > 0 ? byte : 0;
    double pkt = (v->cpp[0] - v->dummy_cpp) / 2 - byte * (calib_vhost_sizes[0] - 4);
    pkt = pkt > 0 ? pkt : 0;
    json_t *costs = json_object_get(doc, "costs_ns");
    json_object_set_new(costs, "vhost_packet", json_real(round(pkt / ghz * 1e4) / 1e4));
    json_object_set_new(costs, "vhost_byte", json_real(round(byte / ghz * 1e6) / 1e6));
    json_t *nid = json_object_get(doc, "not_identified");
    for (size_t i = json_array_size(nid); i-- > 0;) {
        const char *e = json_string_value(json_array_get(nid, i));
        if (e && (!strcmp(e, "vhost_packet") || !strcmp(e, "vhost_byte")))
            json_array_remove(nid, i);
    }
    json_object_set_new(
        calib_obj(doc), "vhost",
        json_pack("{s:s, s:f, s:f, s:f, s:f, s:s}", "socket", v->sock, "cycles_per_packet_64B",
                  v->cpp[0], "cycles_per_packet_1518B", v->cpp[1], "dummy_cycles_per_packet",
                  v->dummy_cpp, "tsc_ghz", ghz, "charged",
                  "net_vhost rx + tx of what a net_virtio_user guest sent; vhost_byte = "
                  "(c1518 - c64) / (2 x 1454), vhost_packet = (c64 - dummy) / 2 - 60 x "
                  "vhost_byte"));
}

static int calib_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno || v > max)
        return -1;
    *out = v;
    return 0;
}

int fs_cmd_sim_calibrate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},   {"quick", no_argument, NULL, 'q'},
        {"repeats", required_argument, NULL, 'r'}, {"polls", required_argument, NULL, 'p'},
        {"cpu", required_argument, NULL, 'c'},   {"json", no_argument, NULL, 'j'},
        {"base", required_argument, NULL, 'b'},  {"nic-rx", required_argument, NULL, 'R'},
        {"nic-tx", required_argument, NULL, 'X'}, {"nic-mbufs", required_argument, NULL, 'M'},
        {"only", required_argument, NULL, 'O'},  {"vhost", required_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *out_path = NULL, *base = NULL;
    struct calib_nic nic = {.rx = NULL};
    struct calib_vhost vh = {.sock = NULL};
    bool json = false;
    long cpu = -1;
    struct sim_calib_opts o = {.repeats = 5, .polls = 2000, .warm_polls = 600};
    int ch;
    unsigned long v;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out_path = optarg;
            break;
        case 'q':
            o.quick = true;
            break;
        case 'r':
        case 'p':
        case 'c':
            if (calib_uint(optarg, ch == 'c' ? CPU_SETSIZE - 1 : 1000000, &v) ||
                (ch != 'c' && v == 0)) {
                fprintf(stderr, "flowswitch sim calibrate: bad --%s '%s'\n",
                        ch == 'r' ? "repeats" : ch == 'p' ? "polls" : "cpu", optarg);
                return CAL_EXIT_USAGE;
            }
            if (ch == 'r')
                o.repeats = (unsigned)v;
            else if (ch == 'p')
                o.polls = (unsigned)v;
            else
                cpu = (long)v;
            break;
        case 'j':
            json = true;
            break;
        case 'b':
            base = optarg;
            break;
        case 'R':
            nic.rx = optarg;
            break;
        case 'X':
            nic.tx = optarg;
            break;
        case 'M':
            nic.mbufs = optarg;
            break;
        case 'O':
            o.only = optarg;
            break;
        case 'V':
            vh.sock = optarg;
            break;
        case 'h':
            calib_usage(stdout);
            return CAL_EXIT_OK;
        default:
            fprintf(stderr, "flowswitch sim calibrate: try 'flowswitch sim calibrate --help'\n");
            return CAL_EXIT_USAGE;
        }
    }
    bool dashes = optind > 0 && optind <= argc && !strcmp(argv[optind - 1], "--");
    if (optind != argc && !dashes) {
        fprintf(stderr, "flowswitch sim calibrate: unexpected argument '%s'\n", argv[optind]);
        return CAL_EXIT_USAGE;
    }
    if (!nic.rx != !nic.tx || (dashes && !nic.rx && !vh.sock) || (nic.rx && vh.sock)) {
        fprintf(stderr, "flowswitch sim calibrate: --nic-rx and --nic-tx go together, with "
                        "the EAL arguments after --; --vhost SOCK takes them too, in a run "
                        "of its own\n");
        return CAL_EXIT_USAGE;
    }
    char *eal_argv[64];
    if (nic.rx || vh.sock) {
        if (argc - optind + 1 > 64) {
            fprintf(stderr, "flowswitch sim calibrate: too many EAL arguments\n");
            return CAL_EXIT_USAGE;
        }
        eal_argv[0] = "flowswitch";
        for (int i = optind; i < argc; i++)
            eal_argv[i - optind + 1] = argv[i];
        nic.eal = vh.eal = eal_argv;
        nic.n_eal = vh.n_eal = argc - optind + 1;
    }
    if (o.quick) {
        o.polls = o.polls < 300 ? o.polls : 300;
        o.warm_polls = 100;
        o.repeats = o.repeats < 3 ? o.repeats : 3;
    }
    netdev_dummy_register();
    int pinned = calib_pin((int)cpu);
    if (pinned < 0 && cpu >= 0) {
        fprintf(stderr, "flowswitch sim calibrate: cannot pin to CPU %ld: %s\n", cpu,
                strerror(errno));
        return CAL_EXIT_USAGE;
    }
    char model[256];
    calib_cpu_model(model, sizeof model);
    double ghz = calib_tsc_ghz(o.quick ? 20 : 200);
    struct sim_calib_clock clk = {.cycles = fs_cycles, .loop = calib_loop};
    o.progress = calib_progress;
    struct sim_calib c;
    memset(&c, 0, sizeof c);
    char err[1024];
    json_t *doc = NULL;
    if ((nic.rx && calib_nic(&nic, &clk, &o, err, sizeof err)) ||
        (vh.sock && calib_vhost(&vh, &clk, &o, err, sizeof err))) {
        fprintf(stderr, "flowswitch sim calibrate: %s\n", err);
        return CAL_EXIT_FAILED;
    }
    if (base) {
        struct sim_profile bp;
        json_error_t je;
        if (sim_profile_load(base, &bp, err, sizeof err) ||
            !(doc = json_load_file(base, 0, &je))) {
            fprintf(stderr, "flowswitch sim calibrate: --base %s\n", doc ? err : je.text);
            return CAL_EXIT_USAGE;
        }
    } else {
        struct calib_stat *st = calloc(2, sizeof *st);
        if (st)
            calib_stat_read(&st[0]);
        int rc = sim_calibrate(&clk, &o, &c, err, sizeof err);
        if (st)
            calib_stat_read(&st[1]);
        if (isatty(STDERR_FILENO))
            fprintf(stderr, "\r%70s\r", "");
        if (rc) {
            free(st);
            fprintf(stderr, "flowswitch sim calibrate: %s\n", err);
            return CAL_EXIT_FAILED;
        }
        doc = calib_profile_json(&c, model, ghz, &o, pinned);
        if (st)
            calib_load_json(doc, &st[0], &st[1], pinned);
        free(st);
        calib_origin_json(doc, argc, argv, false);
    }
    if (nic.rx)
        calib_nic_json(doc, &nic, ghz);
    if (vh.sock)
        calib_vhost_json(doc, &vh, ghz);
    if (base)
        calib_origin_json(doc, argc, argv, true);
    int rc;
    char tmp[] = "/tmp/fs-calibrate-XXXXXX";
    const char *path = out_path;
    if (!path) {
        int fd = mkstemp(tmp);
        if (fd < 0) {
            fprintf(stderr, "flowswitch sim calibrate: %s: %s\n", tmp, strerror(errno));
            json_decref(doc);
            sim_calib_free(&c);
            return CAL_EXIT_FAILED;
        }
        close(fd);
        path = tmp;
    }
    rc = json_dump_file(doc, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (rc) {
        fprintf(stderr, "flowswitch sim calibrate: %s: cannot write\n", path);
        json_decref(doc);
        sim_calib_free(&c);
        return CAL_EXIT_FAILED;
    }
    /* The loader is the judge of a profile: complete and non-negative. */
    struct sim_profile check;
    if (sim_profile_load(path, &check, err, sizeof err)) {
        fprintf(stderr, "flowswitch sim calibrate: the profile written is refused: %s\n", err);
        rc = CAL_EXIT_FAILED;
    }
    if (!json && !base)
        calib_table(stdout, &c, ghz, model);
    if (!json && nic.rx)
        printf("NIC %s -> %s: %.1f cycles per packet, dummy ports %.1f: nic_rx_packet "
               "%.4f ns\n", nic.rx, nic.tx, nic.dpdk_cpp, nic.dummy_cpp,
               (nic.dpdk_cpp > nic.dummy_cpp ? nic.dpdk_cpp - nic.dummy_cpp : 0) / ghz);
    if (!out_path) {
        if (!json)
            printf("\n");
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        printf("\n");
        unlink(path);
    } else if (!json) {
        printf("wrote %s\n", out_path);
    }
    json_decref(doc);
    sim_calib_free(&c);
    return rc ? CAL_EXIT_FAILED : CAL_EXIT_OK;
}
