/* simcmd.c: `flowswitch sim`, a simulation of a scenario in virtual time.
 *
 *   flowswitch sim [--seed N] [--json] [--out-dir DIR] [--set KEY=VALUE ...]
 *                  SCENARIO
 *
 * Loads the scenario (scenario.h), runs it (sim/engine.h) and prints its
 * report (report.h); with --out-dir, ports with capture = true write what
 * they transmit there. On a terminal, a run longer than a second shows a
 * progress line on stderr (virtual time, packets, simulated rate); nothing
 * on a pipe. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "calibcmd.h"
#include "experiments.h"
#include "jobs.h"
#include "report.h"
#include "scenario.h"
#include "simcmd.h"
#include "sweep.h"
#include "sys.h"
#include "trafficpcap.h"

#define SIM_EXIT_OK 0
#define SIM_EXIT_USAGE 1
#define SIM_EXIT_FAILED 2
#define SIM_MAX_SETS 64

static void sim_usage(FILE *out)
{
    fprintf(out,
            "usage: flowswitch sim [--seed N] [--json] [--out-dir DIR]\n"
            "                      [--set SECTION.KEY=VALUE ...] SCENARIO\n"
            "       flowswitch sim --traffic-pcap DIR [--packets N] [--set ...] SCENARIO\n"
            "       flowswitch sim --sweep KEY=V1,V2,... [--sweep KEY2=...] [--out-dir DIR]\n"
            "                      [--jobs N | --emit-commands CMDDIR] [--set ...] SCENARIO\n"
            "       flowswitch sim merge CMDDIR\n"
            "       flowswitch sim experiment NAME [--out-dir DIR] [--quick] ...\n"
            "       flowswitch sim calibrate [--out PROFILE.json] ...\n"
            "Runs the datapath core on simulated ports and traffic in virtual time and\n"
            "prints what happened: throughput per port and PMD, drops by reason, cache\n"
            "hits, checksums by place, latency percentiles, what the sinks verified.\n"
            "--seed overrides [sim] seed; --set overrides any key (sim.KEY,\n"
            "datapath.KEY, port.NAME.KEY, traffic.NAME.KEY); --out-dir receives the\n"
            "captures of ports with capture = true. Exit status: 0 ok, 1 usage or\n"
            "scenario error, 2 the run found a violation or lost a packet.\n"
            "--traffic-pcap writes the first N (--packets, default 65536) packets of\n"
            "each traffic stream to DIR/NAME.pcap instead of simulating: the frames the\n"
            "simulation offers, for a pcap port (e.g. DPDK net_pcap) to replay.\n"
            "--sweep simulates the scenario once per value of KEY (any --set key; ';'\n"
            "separates values that hold commas), or per pair with a second --sweep, and\n"
            "writes a table, plots and index.html to DIR (default sweep-SCENARIO);\n"
            "--jobs runs N points at a time in child processes (default: the online\n"
            "CPUs), the same page whatever N. --emit-commands runs nothing: it writes\n"
            "CMDDIR/commands.sh, one shell command per point (for GNU parallel or a\n"
            "Slurm job array), each writing CMDDIR/points/N.json; 'sim merge CMDDIR'\n"
            "then writes the page a direct run writes.\n"
            "'flowswitch sim calibrate --help' and 'flowswitch sim experiment --help'\n"
            "describe the calibration and the experiments.\n");
}

struct sim_progress {
    uint64_t start_ns, last_ns;
    bool shown;
};

static void sim_progress_cb(void *aux, uint64_t now_ns, uint64_t offered)
{
    struct sim_progress *p = aux;
    uint64_t wall = fs_mono_ns();
    if (wall - p->start_ns < 1000000000ull || wall - p->last_ns < 250000000ull)
        return;
    p->last_ns = wall;
    p->shown = true;
    fprintf(stderr, "\rsim: %.3f ms of virtual time, %" PRIu64 " packets, %.2f M/s simulated   ",
            (double)now_ns / 1e6, offered,
            (double)offered / ((double)(wall - p->start_ns) / 1e9) / 1e6);
    fflush(stderr);
}

int fs_cmd_sim(int argc, char **argv)
{
    static const struct option opts[] = {
        {"seed", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"out-dir", required_argument, NULL, 'o'},
        {"set", required_argument, NULL, 'S'},
        {"traffic-pcap", required_argument, NULL, 'T'},
        {"sweep", required_argument, NULL, 'W'},
        {"packets", required_argument, NULL, 'n'},
        {"jobs", required_argument, NULL, 'J'},
        {"emit-commands", required_argument, NULL, 'E'},
        {"point-out", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc >= 2 && !strcmp(argv[1], "calibrate"))
        return fs_cmd_sim_calibrate(argc - 1, argv + 1);
    if (argc == 3 && !strcmp(argv[1], "merge")) {
        netdev_dummy_register();
        return fs_sim_merge(argv[2]);
    }
    if (argc >= 2 && !strcmp(argv[1], "experiment"))
        return fs_cmd_sim_experiment(argc - 1, argv + 1);
    bool json = false;
    const char *out_dir = NULL, *seed = NULL, *pcap_dir = NULL, *emit_dir = NULL;
    const char *point_out = NULL;
    unsigned long long pcap_packets = 65536;
    unsigned n_jobs = jobs_default();
    const char *sweeps[2];
    size_t n_sweeps = 0;
    const char *sets[SIM_MAX_SETS + 1];
    size_t n_sets = 0;
    char seed_set[64];
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            seed = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'o':
            out_dir = optarg;
            break;
        case 'S':
            if (n_sets >= SIM_MAX_SETS) {
                fprintf(stderr, "flowswitch sim: more than %d --set\n", SIM_MAX_SETS);
                return SIM_EXIT_USAGE;
            }
            sets[n_sets++] = optarg;
            break;
        case 'T':
            pcap_dir = optarg;
            break;
        case 'W':
            if (n_sweeps == 2) {
                fprintf(stderr, "flowswitch sim: at most two --sweep\n");
                return SIM_EXIT_USAGE;
            }
            sweeps[n_sweeps++] = optarg;
            break;
        case 'n': {
            char *end;
            errno = 0;
            pcap_packets = strtoull(optarg, &end, 10);
            if (*optarg < '0' || *optarg > '9' || *end || errno || pcap_packets == 0 ||
                pcap_packets > 100000000ull) {
                fprintf(stderr, "flowswitch sim: bad --packets '%s' (1..100000000)\n", optarg);
                return SIM_EXIT_USAGE;
            }
            break;
        }
        case 'E':
            emit_dir = optarg;
            break;
        case 'P':
            point_out = optarg;
            break;
        case 'J':
            if (jobs_parse(optarg, &n_jobs)) {
                fprintf(stderr, "flowswitch sim: bad --jobs '%s' (1..1024)\n", optarg);
                return SIM_EXIT_USAGE;
            }
            break;
        case 'h':
            sim_usage(stdout);
            return SIM_EXIT_OK;
        default:
            fprintf(stderr, "flowswitch sim: try 'flowswitch sim --help'\n");
            return SIM_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "flowswitch sim: expected exactly one SCENARIO argument\n");
        return SIM_EXIT_USAGE;
    }
    if (seed) {
        if (snprintf(seed_set, sizeof seed_set, "sim.seed=%s", seed) >= (int)sizeof seed_set) {
            fprintf(stderr, "flowswitch sim: bad --seed '%s'\n", seed);
            return SIM_EXIT_USAGE;
        }
        sets[n_sets++] = seed_set;
    }
    if (emit_dir && !n_sweeps) {
        fprintf(stderr, "flowswitch sim: --emit-commands needs --sweep\n");
        return SIM_EXIT_USAGE;
    }
    if (point_out) {
        netdev_dummy_register();
        return fs_sim_point(argv[optind], sets, n_sets, point_out);
    }
    if (n_sweeps) {
        char cmd[4096], dflt[512];
        jobs_command("flowswitch", argc, argv, cmd, sizeof cmd);
        if (!out_dir) {
            const char *base = strrchr(argv[optind], '/');
            base = base ? base + 1 : argv[optind];
            snprintf(dflt, sizeof dflt, "sweep-%.*s", (int)strcspn(base, "."), base);
            out_dir = dflt;
        }
        netdev_dummy_register();
        return fs_sim_sweep(argv[optind], sets, n_sets, sweeps, n_sweeps, out_dir, cmd,
                            n_jobs, emit_dir);
    }
    const char *dirs[2] = {out_dir, pcap_dir};
    for (int i = 0; i < 2; i++) {
        int rc = dirs[i] ? fs_mkdir_p(dirs[i]) : 0;
        if (rc) {
            fprintf(stderr, "flowswitch: %s: %s\n", dirs[i], strerror(-rc));
            return SIM_EXIT_USAGE;
        }
    }
    netdev_dummy_register();

    struct scenario sc;
    char err[1024];
    if (scenario_load(argv[optind], sets, n_sets, &sc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return SIM_EXIT_USAGE;
    }
    if (pcap_dir) {
        int rc = traffic_pcap_write(&sc, pcap_dir, pcap_packets, stdout, err, sizeof err);
        if (rc)
            fprintf(stderr, "%s\n", err);
        scenario_free(&sc);
        return rc ? SIM_EXIT_USAGE : SIM_EXIT_OK;
    }
    struct sim_progress prog = {.start_ns = fs_mono_ns()};
    sc.sim.out_dir = out_dir;
    if (isatty(STDERR_FILENO)) {
        sc.sim.progress = sim_progress_cb;
        sc.sim.progress_aux = &prog;
    }
    struct sim_results res;
    int rc = sim_run(&sc.sim, &res, err, sizeof err);
    if (prog.shown)
        fprintf(stderr, "\r%*s\r", 78, "");
    if (rc) {
        fprintf(stderr, "%s\n", err);
        scenario_free(&sc);
        return SIM_EXIT_USAGE;
    }
    report_sim(stdout, json, &sc, &res);
    bool conserved = res.offered + res.copies == res.delivered + res.dropped + res.in_flight;
    bool clean = true;
    for (size_t i = 0; i < res.n_ports; i++)
        clean &= res.ports[i].verify.frames == res.ports[i].verify.ok;
    sim_results_free(&res);
    scenario_free(&sc);
    return conserved && clean ? SIM_EXIT_OK : SIM_EXIT_FAILED;
}
