/* main.c: the flowswitch command. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/dummy/netdev-dummy.h"
#include "backends/pcap/netdev-pcap.h"
#ifdef HAVE_DPDK
#include "backends/dpdk/netdev-dpdk.h"
#endif
#include "config.h"
#include "csum.h"
#include "ctl-client.h"
#include "dp.h"
#include "netdev.h"
#include "pmd.h"
#include "replay.h"
#include "simcmd.h"
#include "report.h"
#include "sys.h"
#include "util.h"

/* Exit codes. */
#define FS_EXIT_OK 0
#define FS_EXIT_USAGE 1     /* bad command line or config */
#define FS_EXIT_INPUT 2     /* an input ended with an error; outputs written */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: flowswitch [--help] [--version] COMMAND [ARGS]\n"
            "\n"
            "Commands:\n"
            "  replay [--json] [--out-dir DIR] [--quiet] CONFIG\n"
            "        Run the datapath over the config's pcap/dummy ports on the\n"
            "        virtual clock until every input is consumed; write the output\n"
            "        pcaps (relative paths under DIR, default: the config's\n"
            "        directory) and print a per-port and per-drop-reason summary\n"
            "        (--json: machine-readable).\n"
            "  run [--backend=dpdk] [--pmd-cores LIST] [--stats-interval SEC] [--json]\n"
            "      [--duration SEC] [--ctl-socket PATH] CONFIG [-- EAL-ARGS]\n"
            "        Run the datapath on PMD threads on the monotonic clock until\n"
            "        SIGINT/SIGTERM (or --duration), printing PMD stats, serving\n"
            "        'flowswitch ctl' on a control socket and re-reading CONFIG on\n"
            "        SIGHUP; with --backend=dpdk the EAL is initialised from EAL-ARGS\n"
            "        first. 'flowswitch run --help' lists every option.\n"
            "  ctl [--socket PATH] [--json] [--timeout SEC] COMMAND [ARGS]\n"
            "        Send COMMAND to a running flowswitch (stats, pmd-stats, rule-add,\n"
            "        rule-load, set, health, ...: 'flowswitch ctl help' lists them) and\n"
            "        print its answer. 'flowswitch ctl --help' lists the options.\n"
            "  sim [--seed N] [--json] [--out-dir DIR] [--set SECTION.KEY=VALUE] SCENARIO\n"
            "        Simulate a scenario (ports, traffic, N PMDs) in virtual time, the\n"
            "        real datapath core under a cost model; print what happened.\n"
            "        'flowswitch sim --help' lists every option.\n"
            "  check CONFIG\n"
            "        Validate CONFIG (syntax, ports, rules) without opening ports\n"
            "        and print the rules in lookup order.\n"
            "  knobs [--markdown]\n"
            "        List the [datapath] knobs: default, values, whether 'ctl set'\n"
            "        changes them live, what each does.\n"
            "\n"
            "Exit status: 0 ok, 1 usage or config error (ctl: or the command failed),\n"
            "2 an input ended with an error (e.g. a truncated pcap; everything read\n"
            "before it is forwarded; run: a runtime failure; ctl: the socket cannot\n"
            "be reached or answered; sim: a violation or a lost packet).\n");
}

static void register_backends(void)
{
    netdev_dummy_register();
    netdev_pcap_register();
}

static int cmd_replay(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"out-dir", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, quiet = false;
    const char *out_dir = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jo:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'o':
            out_dir = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            usage(stdout);
            return FS_EXIT_OK;
        default:
            fprintf(stderr, "flowswitch replay: try 'flowswitch --help'\n");
            return FS_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "flowswitch replay: expected exactly one CONFIG argument\n");
        return FS_EXIT_USAGE;
    }
    const char *path = argv[optind];
    if (out_dir) {
        int rc = fs_mkdir_p(out_dir);
        if (rc) {
            fprintf(stderr, "flowswitch: %s: %s\n", out_dir, strerror(-rc));
            return FS_EXIT_USAGE;
        }
    }

    struct config cfg;
    char err[1024];
    if (config_load(path, &cfg, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        config_free(&cfg);
        return FS_EXIT_USAGE;
    }
    struct dp *dp;
    if (config_dp_create(&cfg, out_dir, &dp, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        config_free(&cfg);
        return FS_EXIT_USAGE;
    }
    struct dp_pmd *pmd = dp_pmd_create(dp);
    if (!pmd) {
        fprintf(stderr, "flowswitch: out of memory\n");
        dp_destroy(dp);
        config_free(&cfg);
        return FS_EXIT_USAGE;
    }
    struct sim_replay r = {
        .iteration_ns = cfg.replay_iteration_ns,
        .changes = cfg.changes,
        .n_changes = cfg.n_changes,
        .origin = cfg.path,
        .diag = stderr,
    };
    int rc = sim_replay_run(&r, dp, pmd, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "flowswitch: %s\n", err);
        rc = 1;
    }
    for (unsigned i = 0; i < dp_n_ports(dp); i++) {
        struct dp_port_info p;
        dp_port_get(dp, i, &p);
        const char *e = p.dev ? netdev_rx_error(p.dev) : NULL;
        if (e)
            fprintf(stderr, "flowswitch: port %s: %s\n", p.name, e);
    }
    struct dp_stats *st = malloc(sizeof *st);
    if (!st) {
        fprintf(stderr, "flowswitch: out of memory\n");
        dp_pmd_destroy(pmd);
        dp_destroy(dp);
        config_free(&cfg);
        return FS_EXIT_USAGE;
    }
    dp_stats_collect(dp, &pmd, 1, st);
    if (!quiet || json)
        report_summary(stdout, json, dp, st, cfg.path, r.changes_applied);
    struct dp_totals t;
    dp_stats_totals(st, dp_n_ports(dp), &t);
    free(st);
    dp_pmd_destroy(pmd);
    dp_destroy(dp);
    config_free(&cfg);
    if (t.rx + t.copies != t.tx + t.dropped + t.queued) {
        fprintf(stderr, "flowswitch: internal error: packet conservation violated\n");
        return FS_EXIT_INPUT;
    }
    return rc ? FS_EXIT_INPUT : FS_EXIT_OK;
}

static const char *rule_port_name(void *aux, uint16_t port)
{
    const struct config *cfg = aux;
    return port < cfg->n_ports ? cfg->ports[port].name : NULL;
}

static int cmd_check(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: flowswitch check CONFIG\n");
        return FS_EXIT_USAGE;
    }
    struct config cfg;
    char err[1024];
#ifdef HAVE_DPDK
    /* check opens no port: dpdk ports are validated without the EAL. */
    netdev_dpdk_register();
#endif
    if (config_load(argv[1], &cfg, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        config_free(&cfg);
        return FS_EXIT_USAGE;
    }
    struct rule_table *t = config_rule_table(&cfg, err, sizeof err);
    int rc = FS_EXIT_OK;
    if (!t) {
        fprintf(stderr, "%s\n", err);
        rc = FS_EXIT_USAGE;
    }
    if (rc == FS_EXIT_OK) {
        printf("%s: %zu ports, %zu rules\n", cfg.path, cfg.n_ports,
               rule_table_count(t));
        for (size_t i = 0; i < cfg.n_ports; i++) {
            char caps[256];
            netdev_caps_format(&cfg.ports[i].caps, caps, sizeof caps);
            printf("  port %zu %s type=%s caps=%s\n", i, cfg.ports[i].name,
                   cfg.ports[i].type, cfg.ports[i].caps_set ? caps : "(backend default)");
        }
        for (size_t i = 0; i < rule_table_count(t); i++) {
            const struct rule *r = rule_table_at(t, i);
            char acts[1024];
            action_list_format(r->actions, rule_port_name, &cfg, acts, sizeof acts);
            printf("  line %d priority=%d: %s -> %s\n", r->line, r->priority, r->text,
                   acts);
        }
    }
    rule_table_destroy(t);
    config_free(&cfg);
    return rc;
}

/* `flowswitch knobs`: the DP_KNOBS() table as text or as the Markdown
 * table docs/usage.md carries (tests/run-tests compares the two). */
static int cmd_knobs(int argc, char **argv)
{
    bool md = argc == 2 && !strcmp(argv[1], "--markdown");
    if (argc > 2 || (argc == 2 && !md)) {
        fprintf(stderr, "usage: flowswitch knobs [--markdown]\n");
        return FS_EXIT_USAGE;
    }
    if (md)
        printf("| Knob | Default | Values | Changes | What it does |\n"
               "|---|---|---|---|---|\n");
    for (size_t i = 0; i < dp_knob_count(); i++) {
        const struct dp_knob_info *k = dp_knob_info(i);
        char def[32], values[48];
        if (k->kind == DP_KNOB_WORDS) {
            snprintf(def, sizeof def, "%s", k->def ? k->yes : k->no);
            snprintf(values, sizeof values, "%s, %s", k->yes, k->no);
        } else {
            snprintf(def, sizeof def, "%u", (unsigned)k->def);
            snprintf(values, sizeof values, "%u..%u", (unsigned)k->min, (unsigned)k->max);
        }
        const char *when = k->live ? "live" : "restart";
        if (md)
            printf("| `%s` | %s | %s | %s | %s |\n", k->name, def, values, when, k->doc);
        else
            printf("%-25s %-9s %-16s %-8s %s\n", k->name, def, values, when, k->doc);
    }
    return FS_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return FS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return FS_EXIT_OK;
    }
    /* FS_CSUM_KERNEL forces the checksum kernel (docs/datapath.md). */
    const char *ck = getenv("FS_CSUM_KERNEL");
    if (ck && *ck && csum_impl_force(csum_impl_from_name(ck)) != 0) {
        fprintf(stderr, "flowswitch: FS_CSUM_KERNEL=%s: not a checksum kernel this CPU runs "
                        "(portable, sse2, avx2, avx512, avx512vnni)\n", ck);
        return FS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("flowswitch %s\nchecksum kernel: %s\n", FS_VERSION,
               csum_impl_name(csum_impl_active()));
        return FS_EXIT_OK;
    }
    register_backends();
    int rc;
    if (!strcmp(argv[1], "replay"))
        rc = cmd_replay(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "check"))
        rc = cmd_check(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "run"))
        rc = fs_cmd_run(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "ctl"))
        rc = fs_cmd_ctl(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "sim"))
        rc = fs_cmd_sim(argc - 1, argv + 1);
    else if (!strcmp(argv[1], "knobs"))
        rc = cmd_knobs(argc - 1, argv + 1);
    else {
        fprintf(stderr, "flowswitch: unknown command '%s' (try 'flowswitch --help')\n",
                argv[1]);
        rc = FS_EXIT_USAGE;
    }
    netdev_unregister_all();
    return rc;
}
