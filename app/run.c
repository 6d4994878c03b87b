/* run.c: `flowswitch run`, the live datapath on PMD threads.
 *
 *   flowswitch run [--backend=dpdk] [--stats-interval SEC] [--json]
 *                  [--duration SEC] [--pmd-cores LIST | --pmds N]
 *                  [--pmd-rxq-affinity PORT:Q:PMD,...] [--idle-sleep-us N]
 *                  [--out-dir DIR] [--ctl-socket PATH] CONFIG [-- EAL-ARGS]
 *
 * Opens the config's ports, starts the PMDs on the monotonic clock and
 * forwards until SIGINT/SIGTERM or --duration, printing per-PMD statistics
 * every --stats-interval seconds (0: only at exit). At exit every PMD
 * flushes its queues, then the final per-PMD statistics and the per-port /
 * per-drop-reason summary are printed (--json: one JSON object per stats
 * line, then the summary object). Without --backend=dpdk only pcap/dummy
 * ports exist; with it the EAL is initialised from EAL-ARGS first and ports
 * of type "dpdk" are available.
 *
 * Control: a control socket (ctl-server.h, the commands of ctl-commands.h)
 * at --ctl-socket, else [datapath] ctl-socket, else the default path
 * (ctl_default_socket_path()). It is bound before any port is opened, so
 * a second run on the same socket is refused before it touches the first
 * one's devices and files; it serves once the PMDs run and stops before
 * they stop. Keep-alive ([datapath] keepalive, `ctl set keep-alive=on`)
 * adds a keep-alive line to every statistics report.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP are blocked in every thread (before
 * the EAL starts its own) and taken synchronously by the control loop with
 * sigtimedwait, so no handler or global flag is needed. SIGHUP re-reads
 * the config (control_reload()).
 *
 * The PMD layout comes from [datapath] pmd-cores and pmd-rxq-affinity, or
 * from --pmd-cores/--pmds and --pmd-rxq-affinity, which override them. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "control.h"
#include "ctl-commands.h"
#include "ctl-proto.h"
#include "ctl-server.h"
#include "dp.h"
#include "keepalive.h"
#include "netdev.h"
#include "pmd.h"
#include "report.h"
#include "sys.h"
#include "util.h"

#ifdef HAVE_DPDK
#include "backends/dpdk/netdev-dpdk.h"
#endif

/* Exit codes, as the other commands use them: 1 for what the operator
 * asked (the command line, the config and what it names), found before
 * anything is forwarded; 2 for a run the system failed (the EAL's
 * environment, threads, memory) or whose packets did not add up. */
#define RUN_EXIT_OK 0
#define RUN_EXIT_USAGE 1
#define RUN_EXIT_RUNTIME 2
/* The longest the control loop sleeps: replaced rule tables that a PMD
 * still held are freed at least this often. */
#define RUN_HOUSEKEEPING_NS (1000 * 1000 * 1000ull)

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: flowswitch run [--backend=dpdk] [--stats-interval SEC] [--json]\n"
            "                      [--duration SEC] [--pmd-cores LIST | --pmds N]\n"
            "                      [--pmd-rxq-affinity PORT:QUEUE:PMD,...]\n"
            "                      [--idle-sleep-us N] [--out-dir DIR]\n"
            "                      [--ctl-socket PATH] CONFIG [-- EAL-ARGS]\n"
            "Forwards on PMD threads until SIGINT/SIGTERM (or --duration), printing\n"
            "per-PMD statistics every --stats-interval seconds and at exit.\n"
            "--backend=dpdk initialises DPDK's EAL with EAL-ARGS (e.g. -l 0 --no-huge\n"
            "--no-pci -m 512 --file-prefix fs1) and enables ports of type dpdk.\n"
            "--pmd-cores 1,2 pins one PMD per listed CPU; --pmds N runs N unpinned\n"
            "PMDs (default 1). --pmd-rxq-affinity p0:0:2 polls rx queue 0 of p0 on the\n"
            "PMD of core 2 (or PMD index 2 when unpinned).\n"
            "--idle-sleep-us N sleeps N us in an idle iteration (default 0: busy poll).\n"
            "--ctl-socket PATH serves 'flowswitch ctl' there (default: [datapath]\n"
            "ctl-socket, else $FLOWSWITCH_CTL_SOCKET, else /run/flowswitch/flowswitch.ctl\n"
            "as root, else $XDG_RUNTIME_DIR/flowswitch/flowswitch.ctl, else\n"
            "/tmp/flowswitch-UID/flowswitch.ctl). SIGHUP re-reads CONFIG: its rules and\n"
            "live knobs are applied, a broken file changes nothing.\n"
            "Exit status: 0 after a stop; 1 a usage or config error, found before\n"
            "anything is forwarded; 2 a runtime failure (the EAL cannot start here,\n"
            "no memory or threads, packets not conserved).\n");
}

static int run_parse_secs(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || v < 0 || v > 1e7)
        return -1;
    *out = v;
    return 0;
}

struct run_opts {
    bool dpdk, json;
    double stats_interval, duration;
    const char *pmd_cores, *affinity, *out_dir, *config, *ctl_socket;
    unsigned long n_pmds;
    unsigned long idle_sleep_us;
    int eal_argc;
    char **eal_argv; /* after "--" */
};

static int run_parse(int argc, char **argv, struct run_opts *o)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"stats-interval", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"duration", required_argument, NULL, 'd'},
        {"pmd-cores", required_argument, NULL, 'c'},
        {"pmds", required_argument, NULL, 'n'},
        {"pmd-rxq-affinity", required_argument, NULL, 'a'},
        {"idle-sleep-us", required_argument, NULL, 'i'},
        {"out-dir", required_argument, NULL, 'o'},
        {"ctl-socket", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    /* Everything after "--" belongs to the EAL: cut it off before getopt
     * (which would otherwise permute it). */
    int ours = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            ours = i;
            break;
        }
    o->eal_argc = ours < argc ? argc - ours - 1 : 0;
    o->eal_argv = ours < argc ? argv + ours + 1 : NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(ours, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (!strcmp(optarg, "dpdk"))
                o->dpdk = true;
            else if (strcmp(optarg, "default") && strcmp(optarg, "pcap")) {
                fprintf(stderr, "flowswitch run: unknown backend '%s' (dpdk)\n", optarg);
                return -1;
            }
            break;
        case 's':
            if (run_parse_secs(optarg, &o->stats_interval)) {
                fprintf(stderr, "flowswitch run: bad --stats-interval '%s'\n", optarg);
                return -1;
            }
            break;
        case 'd':
            if (run_parse_secs(optarg, &o->duration)) {
                fprintf(stderr, "flowswitch run: bad --duration '%s'\n", optarg);
                return -1;
            }
            break;
        case 'j':
            o->json = true;
            break;
        case 'c':
            o->pmd_cores = optarg;
            break;
        case 'n':
            if (!fs_parse_uint(optarg, 1, PMD_MAX, &o->n_pmds)) {
                fprintf(stderr, "flowswitch run: --pmds must be 1..%d\n", PMD_MAX);
                return -1;
            }
            break;
        case 'a':
            o->affinity = optarg;
            break;
        case 'i':
            if (!fs_parse_uint(optarg, 0, 1000000, &o->idle_sleep_us)) {
                fprintf(stderr, "flowswitch run: --idle-sleep-us must be 0..1000000\n");
                return -1;
            }
            break;
        case 'o':
            o->out_dir = optarg;
            break;
        case 'S':
            o->ctl_socket = optarg;
            break;
        case 'h':
            run_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "flowswitch run: try 'flowswitch run --help'\n");
            return -1;
        }
    }
    if (optind != ours - 1) {
        fprintf(stderr, "flowswitch run: expected exactly one CONFIG argument\n");
        return -1;
    }
    o->config = argv[optind];
    if (o->pmd_cores && o->n_pmds) {
        fprintf(stderr, "flowswitch run: --pmd-cores and --pmds are exclusive\n");
        return -1;
    }
    if (o->eal_argc && !o->dpdk) {
        fprintf(stderr, "flowswitch run: EAL arguments need --backend=dpdk\n");
        return -1;
    }
    return 0;
}

#ifdef HAVE_DPDK
/* Returns 0, or RUN_EXIT_USAGE for EAL arguments the EAL refuses,
 * RUN_EXIT_RUNTIME for an EAL that cannot start here. */
static int run_dpdk_init(const struct run_opts *o)
{
    char **av = calloc((size_t)o->eal_argc + 2, sizeof *av);
    if (!av) {
        fprintf(stderr, "flowswitch: out of memory\n");
        return RUN_EXIT_RUNTIME;
    }
    av[0] = "flowswitch";
    for (int i = 0; i < o->eal_argc; i++)
        av[i + 1] = o->eal_argv[i];
    char err[512];
    int rc = netdev_dpdk_init(o->eal_argc + 1, av, err, sizeof err);
    free(av);
    if (rc) {
        fprintf(stderr, "flowswitch: %s\n", err);
        return rc == -EINVAL ? RUN_EXIT_USAGE : RUN_EXIT_RUNTIME;
    }
    netdev_dpdk_register();
    return 0;
}

static void run_dpdk_report(const struct dp *dp, FILE *out)
{
    for (unsigned i = 0; i < dp_n_ports(dp); i++) {
        struct dp_port_info pi;
        dp_port_get(dp, i, &pi);
        const struct netdev *dev = pi.dev;
        if (!netdev_dpdk_is(dev))
            continue;
        struct netdev_dpdk_stats s;
        netdev_dpdk_get_stats(dev, &s);
        fprintf(out,
                "port %s: dpdk: rx_multiseg %" PRIu64 " tx_copied %" PRIu64
                " tx_nombuf %" PRIu64 " tx_prep_failed %" PRIu64 " tx_offload %" PRIu64
                " tx_sw_csum %" PRIu64 " tx_notconn %" PRIu64 " link_changes %" PRIu64
                " txq_remaps %" PRIu64 "\n",
                pi.name, s.rx_multiseg, s.tx_copied, s.tx_nombuf,
                s.tx_prep_failed, s.tx_offload, s.tx_sw_csum, s.tx_notconn,
                s.link_changes, s.txq_remaps);
    }
}
#endif

/* Waits for SIGINT/SIGTERM until 'deadline' (monotonic ns), reloading the
 * config on SIGHUP. Returns true if a stop signal arrived. */
static bool run_wait(const sigset_t *set, uint64_t deadline, struct control *ctl)
{
    for (;;) {
        uint64_t now = fs_mono_ns();
        if (now >= deadline)
            return false;
        uint64_t left = deadline - now;
        struct timespec ts = {
            .tv_sec = (time_t)(left / FS_NSEC_PER_SEC),
            .tv_nsec = (long)(left % FS_NSEC_PER_SEC),
        };
        int s = sigtimedwait(set, NULL, &ts);
        if (s == SIGINT || s == SIGTERM)
            return true;
        if (s == SIGHUP)
            control_reload(ctl, stderr);
        /* EAGAIN: timeout (loop re-checks); EINTR: another signal. */
    }
}

/* The keep-alive line of a statistics report, when keep-alive is on. */
static void run_print_keepalive(struct control *ctl, FILE *out, bool json)
{
    if (!control_keepalive(ctl))
        return;
    struct ka *ka = control_ka(ctl);
    unsigned n = ka_n_pmds(ka);
    struct ka_status st[KA_MAX_PMDS];
    ka_get_status(ka, st, n);
    if (json) {
        /* {"type": "keepalive", "interval_ms": I, "pmds": [...]}, one line. */
        json_t *doc = ka_status_json(st, n, ka_interval_ms(ka));
        json_t *k = doc ? json_object_get(doc, "keepalive") : NULL;
        json_t *line = k ? json_pack("{s:s, s:O, s:O}", "type", "keepalive", "interval_ms",
                                     json_object_get(k, "interval_ms"), "pmds",
                                     json_object_get(k, "pmds"))
                         : NULL;
        char *text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (text)
            fprintf(out, "%s\n", text);
        free(text);
        json_decref(line);
        json_decref(doc);
    } else {
        fprintf(out, "keep-alive:");
        for (unsigned i = 0; i < n; i++)
            fprintf(out, " pmd%u %s", i, ka_state_name(st[i].state));
        fprintf(out, "\n");
    }
    fflush(out);
}

int fs_cmd_run(int argc, char **argv)
{
    struct run_opts o;
    int prc = run_parse(argc, argv, &o);
    if (prc)
        return prc > 0 ? RUN_EXIT_OK : RUN_EXIT_USAGE;
#ifndef HAVE_DPDK
    if (o.dpdk) {
        fprintf(stderr, "flowswitch run: this build has no DPDK backend "
                        "(install libdpdk-dev and rebuild)\n");
        return RUN_EXIT_USAGE;
    }
#endif
    if (o.out_dir) {
        int rc = fs_mkdir_p(o.out_dir);
        if (rc) {
            fprintf(stderr, "flowswitch: %s: %s\n", o.out_dir, strerror(-rc));
            return RUN_EXIT_USAGE;
        }
    }

    /* Block the stop and reload signals before any thread (EAL's included)
     * exists. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);

    int exit_rc = RUN_EXIT_USAGE;
    bool dpdk_up = false;
#ifdef HAVE_DPDK
    if (o.dpdk) {
        int erc = run_dpdk_init(&o);
        if (erc) {
            exit_rc = erc;
            goto out_mask;
        }
        dpdk_up = true;
    }
#endif
    struct config cfg;
    char err[1024];
    if (config_load(o.config, &cfg, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        config_free(&cfg);
        goto out_eal;
    }
    /* Keep-alive that would take idle-sleeping PMDs for stalled ones is
     * refused before anything opens (control_ka_interval_check()). */
    if (cfg.keepalive && control_ka_interval_check(cfg.keepalive_interval_ms,
                                                   (uint32_t)o.idle_sleep_us, err, sizeof err)) {
        fprintf(stderr, "flowswitch run: %s\n", err);
        config_free(&cfg);
        goto out_eal;
    }
    /* The control socket first: a second run on the same socket stops
     * here, before it opens (and truncates) anything of the first one's. */
    char sock[256];
    if (o.ctl_socket)
        snprintf(sock, sizeof sock, "%s", o.ctl_socket);
    else if (cfg.ctl_socket[0])
        snprintf(sock, sizeof sock, "%s", cfg.ctl_socket);
    else if (ctl_default_socket_path(sock, sizeof sock))
        sock[0] = '\0';
    size_t n_cmds;
    const struct ctl_command *cmds = ctl_commands_table(&n_cmds);
    struct ctl_commands *cc = ctl_commands_create();
    struct ctl_server *srv = NULL;
    if (!cc || ctl_server_create(sock, cmds, n_cmds, cc, NULL, &srv, err, sizeof err)) {
        fprintf(stderr, "flowswitch run: control socket: %s\n", cc ? err : "out of memory");
        if (!cc)
            exit_rc = RUN_EXIT_RUNTIME;
        ctl_commands_destroy(cc);
        config_free(&cfg);
        goto out_eal;
    }
    struct dp *dp;
    if (config_dp_create(&cfg, o.out_dir, &dp, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        ctl_server_destroy(srv);
        ctl_commands_destroy(cc);
        config_free(&cfg);
        goto out_eal;
    }

    struct pmd_config pc;
    pmd_config_default(&pc);
    /* The command line wins over the config's [datapath] pmd-cores and
     * pmd-rxq-affinity (and --pmds over pmd-cores). */
    if (o.pmd_cores) {
        if (pmd_config_parse_cores(&pc, o.pmd_cores, err, sizeof err)) {
            fprintf(stderr, "flowswitch run: %s\n", err);
            goto out_dp;
        }
    } else if (!o.n_pmds && cfg.pmd_cores[0] &&
               pmd_config_parse_cores(&pc, cfg.pmd_cores, err, sizeof err)) {
        fprintf(stderr, "%s:%d: %s\n", cfg.path, cfg.pmd_cores_line, err);
        goto out_dp;
    }
    if (o.n_pmds)
        pc.n_pmds = (unsigned)o.n_pmds;
    if (o.affinity) {
        if (pmd_config_parse_affinity(&pc, dp, o.affinity, err, sizeof err)) {
            fprintf(stderr, "flowswitch run: %s\n", err);
            goto out_dp;
        }
    } else if (cfg.pmd_rxq_affinity[0] &&
               pmd_config_parse_affinity(&pc, dp, cfg.pmd_rxq_affinity, err, sizeof err)) {
        fprintf(stderr, "%s:%d: %s\n", cfg.path, cfg.pmd_rxq_affinity_line, err);
        goto out_dp;
    }
    pc.idle_sleep_us = (uint32_t)o.idle_sleep_us;
    pc.priority_set = cfg.pmd_priority_set;
    pc.priority = cfg.pmd_priority;
    /* The command line and the config are valid: from here on a failure is
     * the system's (memory, threads). */
    exit_rc = RUN_EXIT_RUNTIME;
#ifdef HAVE_DPDK
    if (o.dpdk) {
        pc.thread_start = netdev_dpdk_thread_register;
        pc.thread_stop = netdev_dpdk_thread_unregister;
    }
#endif
    struct pmd_runtime *rt;
    if (pmd_runtime_create(dp, &pc, &rt, err, sizeof err)) {
        fprintf(stderr, "flowswitch run: %s\n", err);
        goto out_dp;
    }
    /* Keep-alive slots for every PMD, so keep-alive can be turned on at
     * run time; the control plane starts the monitor when it is on. */
    struct ka *ka = NULL;
    struct control *ctl = NULL;
    if (ka_create(pmd_runtime_n_pmds(rt), cfg.keepalive_interval_ms, &ka, err, sizeof err)) {
        fprintf(stderr, "flowswitch run: %s\n", err);
        pmd_runtime_destroy(rt);
        goto out_dp;
    }
    pmd_runtime_set_keepalive(rt, ka);
    struct control_params cp = {.cfg = &cfg, .dp = dp, .rt = rt, .ka = ka};
    if (control_create(&cp, &ctl, err, sizeof err)) {
        fprintf(stderr, "flowswitch run: %s\n", err);
        pmd_runtime_destroy(rt);
        ka_destroy(ka);
        goto out_dp;
    }
    ctl_commands_attach(cc, ctl);
    pmd_runtime_print_assignment(rt, stderr);
    if (pmd_runtime_start(rt, err, sizeof err) || control_start(ctl, err, sizeof err) ||
        ctl_server_start(srv, err, sizeof err)) {
        fprintf(stderr, "flowswitch run: %s\n", err);
        ctl_server_stop(srv);
        pmd_runtime_stop(rt);
        control_destroy(ctl);
        pmd_runtime_destroy(rt);
        ka_destroy(ka);
        goto out_dp;
    }
    fprintf(stderr, "flowswitch: running %u PMD%s%s; control socket %s\n",
            pmd_runtime_n_pmds(rt), pmd_runtime_n_pmds(rt) == 1 ? "" : "s",
            o.duration > 0 ? "" : " until SIGINT/SIGTERM", ctl_server_path(srv));

    struct pmd_stats *prev = calloc(pmd_runtime_n_pmds(rt), sizeof *prev);
    struct dp_stats *total = malloc(sizeof *total);
    if (!prev || !total) {
        fprintf(stderr, "flowswitch: out of memory\n");
        free(prev);
        free(total);
        ctl_server_stop(srv);
        pmd_runtime_stop(rt);
        control_destroy(ctl);
        pmd_runtime_destroy(rt);
        ka_destroy(ka);
        goto out_dp;
    }
    for (unsigned i = 0; i < pmd_runtime_n_pmds(rt); i++)
        pmd_runtime_snapshot(rt, i, &prev[i]);
    uint64_t start = fs_mono_ns();
    uint64_t end = o.duration > 0 ? start + (uint64_t)(o.duration * 1e9) : UINT64_MAX;
    uint64_t step = o.stats_interval > 0 ? (uint64_t)(o.stats_interval * 1e9) : 0;
    uint64_t next = step ? start + step : UINT64_MAX;
    for (;;) {
        uint64_t deadline = next < end ? next : end;
        uint64_t chore = fs_mono_ns() + RUN_HOUSEKEEPING_NS;
        if (run_wait(&set, deadline < chore ? deadline : chore, ctl))
            break;
        uint64_t now = fs_mono_ns();
        if (now >= end)
            break;
        control_reclaim(ctl);
        if (step && now >= next) {
            pmd_runtime_print_stats(rt, prev, stdout, o.json);
            run_print_keepalive(ctl, stdout, o.json);
            next += step;
        }
    }

    /* No control request may reach a PMD that has stopped. */
    ctl_server_stop(srv);
    pmd_runtime_stop(rt);
    control_destroy(ctl);
    ka_destroy(ka);
    if (!o.json)
        printf("--- final statistics ---\n");
    pmd_runtime_print_stats(rt, NULL, stdout, o.json);
    dp_stats_collect(dp, pmd_runtime_pmds(rt), pmd_runtime_n_pmds(rt), total);
    report_summary(stdout, o.json, dp, total, cfg.path, 0);
#ifdef HAVE_DPDK
    if (o.dpdk)
        run_dpdk_report(dp, stderr);
#endif
    fflush(stdout);
    struct dp_totals t;
    dp_stats_totals(total, dp_n_ports(dp), &t);
    free(total);
    free(prev);
    if (t.rx + t.copies != t.tx + t.dropped + t.queued)
        fprintf(stderr, "flowswitch: internal error: packet conservation violated\n");
    else
        exit_rc = RUN_EXIT_OK;
    pmd_runtime_destroy(rt);
out_dp:
    ctl_server_destroy(srv);
    ctl_commands_destroy(cc);
    dp_destroy(dp);
    config_free(&cfg);
out_eal:
#ifdef HAVE_DPDK
    if (dpdk_up)
        netdev_dpdk_fini();
#endif
    (void)dpdk_up;
#ifdef HAVE_DPDK
out_mask:
#endif
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return exit_rc;
}
