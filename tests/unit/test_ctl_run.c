/* test_ctl_run.c: the control plane over real PMD threads, in process: the
 * datapath of a config (a looping pcap source, dummy sinks), the PMD
 * runtime, keep-alive, the control plane and its socket, driven with
 * ctl_client_request() while the PMDs forward. Run under ThreadSanitizer
 * by `make tsan`: rule changes, knob changes, requests, snapshots and
 * device counters cross threads here.
 *
 * Waits are for states (an answer, a counter, a keep-alive state), bounded
 * by CT_WAIT_MS; nothing asserts how long anything took. */
#define _GNU_SOURCE /* gettid */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dummy/netdev-dummy.h"
#include "backends/pcap/netdev-pcap.h"
#include "config.h"
#include "control.h"
#include "ctl-client.h"
#include "ctl-commands.h"
#include "ctl-server.h"
#include "dp.h"
#include "helpers/ctl_test.h"
#include "keepalive.h"
#include "pmd.h"
#include "smc.h"

#define FX_PMDS 4   /* PMD 3 gets no rx queue: it never runs */
#define FX_WAIT_MS 300 /* the control plane's wait for PMDs */

struct fx {
    struct ct_dir dir;
    char cfg_path[96];
    struct config cfg;
    struct dp *dp;
    struct pmd_runtime *rt;
    struct ka *ka;
    struct control *ctl;
    struct ctl_commands *cc;
    struct ctl_server *srv;
};

/* 64 UDP frames, 20 us apart: the source repeats them for ever. */
static void write_source(const char *path)
{
    pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
    assert_non_null(dead);
    pcap_dumper_t *d = pcap_dump_open(dead, path);
    assert_non_null(d);
    for (unsigned i = 0; i < 64; i++) {
        uint8_t f[64] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 50,
                         0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
        f[34] = (uint8_t)(i >> 8), f[35] = (uint8_t)i; /* udp source port: the frame */
        f[37] = 53;
        f[39] = 30;
        struct pcap_pkthdr h = {.ts = {.tv_sec = 1, .tv_usec = (suseconds_t)(i * 20)},
                                .caplen = sizeof f,
                                .len = sizeof f};
        pcap_dump((u_char *)d, &h, f);
    }
    pcap_dump_close(d);
    pcap_close(dead);
}

static void fx_write(struct fx *f, const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", f->dir.root, name);
    FILE *o = fopen(path, "w");
    assert_non_null(o);
    fputs(text, o);
    fclose(o);
}

static const char fx_ini[] = "[datapath]\n"
                             "keepalive-interval = 50\n"
                             "[port p0]\ntype = pcap\nrx = in.pcap\nrx-loop = forever\n"
                             "[port p1]\ntype = dummy\n"
                             "[port p2]\ntype = dummy\n"
                             "[rules]\nrule = in_port=p0 actions=output:p1\n";

/* The fixture running config 'ini', its PMDs sleeping idle_sleep_us when
 * idle. */
static int fx_setup_with(void **state, const char *ini, uint32_t idle_sleep_us)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    ct_dir_make(&f->dir);
    netdev_dummy_register();
    netdev_pcap_register();
    char src[96];
    snprintf(src, sizeof src, "%s/in.pcap", f->dir.root);
    write_source(src);
    fx_write(f, "fs.ini", ini);
    snprintf(f->cfg_path, sizeof f->cfg_path, "%s/fs.ini", f->dir.root);
    char err[512];
    if (config_load(f->cfg_path, &f->cfg, err, sizeof err) ||
        config_dp_create(&f->cfg, f->dir.root, &f->dp, err, sizeof err))
        fail_msg("%s", err);
    struct pmd_config pc;
    pmd_config_default(&pc);
    pc.n_pmds = FX_PMDS;
    pc.idle_sleep_us = idle_sleep_us;
    assert_int_equal(pmd_runtime_create(f->dp, &pc, &f->rt, err, sizeof err), 0);
    assert_int_equal(ka_create(FX_PMDS, f->cfg.keepalive_interval_ms, &f->ka, err, sizeof err), 0);
    pmd_runtime_set_keepalive(f->rt, f->ka);
    struct control_params cp = {
        .cfg = &f->cfg, .dp = f->dp, .rt = f->rt, .ka = f->ka, .wait_ms = FX_WAIT_MS};
    assert_int_equal(control_create(&cp, &f->ctl, err, sizeof err), 0);
    f->cc = ctl_commands_create();
    assert_non_null(f->cc);
    ctl_commands_attach(f->cc, f->ctl);
    size_t n;
    const struct ctl_command *t = ctl_commands_table(&n);
    if (ctl_server_create(f->dir.sock, t, n, f->cc, NULL, &f->srv, err, sizeof err) ||
        pmd_runtime_start(f->rt, err, sizeof err) || control_start(f->ctl, err, sizeof err) ||
        ctl_server_start(f->srv, err, sizeof err))
        fail_msg("%s", err);
    *state = f;
    return 0;
}

static int fx_setup(void **state)
{
    return fx_setup_with(state, fx_ini, 20); /* shared machines, sanitizers: do not spin */
}

/* PMDs that sleep 30 ms when idle. */
static int fx_setup_sleepy(void **state)
{
    return fx_setup_with(state, fx_ini, 30000);
}

/* The SMC off, with a size it could not have on (a power of two is only
 * required of an SMC in use). */
static int fx_setup_smc_off(void **state)
{
    static const char ini[] = "[datapath]\nkeepalive-interval = 50\nsmc = off\nsmc-entries = 12\n"
                              "[port p0]\ntype = pcap\nrx = in.pcap\nrx-loop = forever\n"
                              "[port p1]\ntype = dummy\n"
                              "[port p2]\ntype = dummy\n"
                              "[rules]\nrule = in_port=p0 actions=output:p1\n";
    return fx_setup_with(state, ini, 20);
}

/* Stops everything in run's order and checks conservation. */
static int fx_teardown(void **state)
{
    struct fx *f = *state;
    ctl_server_stop(f->srv);
    pmd_runtime_stop(f->rt);
    control_destroy(f->ctl);
    struct dp_stats *s = malloc(sizeof *s);
    assert_non_null(s);
    dp_stats_collect(f->dp, pmd_runtime_pmds(f->rt), pmd_runtime_n_pmds(f->rt), s);
    struct dp_totals t;
    dp_stats_totals(s, dp_n_ports(f->dp), &t);
    assert_int_equal(t.rx + t.copies, t.tx + t.dropped + t.queued);
    assert_int_equal(t.queued, 0);
    free(s);
    pmd_runtime_destroy(f->rt);
    ka_destroy(f->ka);
    ctl_server_destroy(f->srv);
    ctl_commands_destroy(f->cc);
    dp_destroy(f->dp);
    config_free(&f->cfg);
    ct_dir_remove(&f->dir);
    netdev_unregister_all();
    free(f);
    return 0;
}

/* Sends a request line ('\n' added) and returns the answer body (owned by
 * a static buffer until the next call); *error says ERR. */
static const char *ask(struct fx *f, bool *error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static const char *ask(struct fx *f, bool *error, const char *fmt, ...)
{
    static char body[1 << 16];
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    struct ctl_reply r;
    char err[256];
    if (ctl_client_request(f->dir.sock, line, (size_t)n, CT_WAIT_MS, &r, err, sizeof err) !=
        CTL_CLIENT_OK)
        fail_msg("%.*s: %s", n - 1, line, err);
    snprintf(body, sizeof body, "%s", r.body);
    *error = r.error;
    ctl_reply_free(&r);
    return body;
}

static const char *ask_ok(struct fx *f, const char *line)
{
    bool error;
    const char *body = ask(f, &error, "%s", line);
    if (error)
        fail_msg("%s: ERR %s", line, body);
    return body;
}

static json_t *ask_json(struct fx *f, const char *cmd)
{
    bool error;
    const char *body = ask(f, &error, "--json %s", cmd);
    json_error_t je;
    json_t *doc = json_loads(body, 0, &je);
    if (error || !doc)
        fail_msg("%s: %s", cmd, body);
    return doc;
}

/* The datapath counter 'key' of port 'port' in `port-show --json`. */
static uint64_t port_counter(struct fx *f, const char *port, const char *key)
{
    json_t *doc = ask_json(f, "port-show");
    json_t *ports = json_object_get(doc, "ports"), *p;
    size_t i;
    uint64_t v = UINT64_MAX;
    json_array_foreach(ports, i, p)
        if (!strcmp(json_string_value(json_object_get(p, "name")), port))
            v = (uint64_t)json_integer_value(
                json_object_get(json_object_get(p, "datapath"), key));
    json_decref(doc);
    assert_true(v != UINT64_MAX);
    return v;
}

/* Waits until port's datapath counter exceeds 'above'; returns it. */
static uint64_t wait_counter(struct fx *f, const char *port, const char *key, uint64_t above)
{
    for (int w = 0; w < CT_WAIT_MS / 10; w++) {
        uint64_t v = port_counter(f, port, key);
        if (v > above)
            return v;
        ct_sleep_ms(10);
    }
    fail_msg("%s %s stayed at %" PRIu64, port, key, above);
    return 0;
}

/* ---- rule and knob changes under traffic -------------------------------- */

/* Rules move the traffic from p1 to p2 and back, twenty times, while other
 * clients read statistics: every change is answered once every PMD took it
 * (no PMD lags), and traffic follows it. */
static void test_rules_under_traffic(void **state)
{
    struct fx *f = *state;
    const int rounds = getenv("FS_TEST_QUICK") ? 4 : 20;
    uint64_t p1 = wait_counter(f, "p1", "tx_packets", 0);
    for (int i = 0; i < rounds; i++) {
        const char *a = ask_ok(f, "rule-add 'priority=40000,in_port=p0 actions=output:p2'");
        assert_string_equal(a, "rule added (2 rules)\n");
        uint64_t p2 = port_counter(f, "p2", "tx_packets");
        wait_counter(f, "p2", "tx_packets", p2);
        ask_ok(f, "stats");
        ask_ok(f, "cache-show");
        ask_ok(f, "megaflow-show");
        a = ask_ok(f, "rule-del priority=40000,in_port=p0");
        assert_string_equal(a, "1 rule deleted (1 rules)\n");
        p1 = wait_counter(f, "p1", "tx_packets", port_counter(f, "p1", "tx_packets"));
    }
    bool error;
    const char *a = ask(f, &error, "rule-del priority=40000,in_port=p0");
    assert_true(error);
    assert_string_equal(a, "rule-del: no rule has exactly this priority and match (rule-show "
                           "lists them)\n");
    a = ask(f, &error, "rule-add 'in_port=p9 actions=drop'");
    assert_true(error);
    assert_string_equal(a, "rule-add: unknown port 'p9'\n");
    /* The knobs that change live, and one that does not. */
    assert_string_equal(ask_ok(f, "set tx-flush-interval=50"), "tx-flush-interval = 50\n");
    assert_string_equal(ask_ok(f, "set smc=off"), "smc = off\n");
    assert_string_equal(ask_ok(f, "set emc-insert-inv-prob=1"), "emc-insert-inv-prob = 1\n");
    assert_string_equal(ask_ok(f, "set tx-flush-interval=0"), "tx-flush-interval = 0\n");
    a = ask(f, &error, "set emc-entries=1024");
    assert_true(error);
    assert_string_equal(a, "set: knob 'emc-entries' cannot change while the datapath runs\n");
    a = ask(f, &error, "set smc");
    assert_true(error);
    assert_string_equal(a, "set: expected KNOB=VALUE, not 'smc'\n");
    /* SMC off on every PMD that runs: cache-show sees it in their snapshots. */
    json_t *doc = NULL;
    for (int w = 0; w < CT_WAIT_MS / 10; w++) {
        json_decref(doc);
        doc = ask_json(f, "cache-show");
        json_t *smc = json_object_get(json_array_get(json_object_get(doc, "pmds"), 0), "smc");
        if (!json_is_true(json_object_get(smc, "enabled")))
            break;
        ct_sleep_ms(10);
    }
    json_t *smc = json_object_get(json_array_get(json_object_get(doc, "pmds"), 0), "smc");
    assert_false(json_is_true(json_object_get(smc, "enabled")));
    json_decref(doc);
    /* megaflow-flush is answered by every PMD (the one without a thread
     * through its owner). */
    assert_string_equal(ask_ok(f, "megaflow-flush"), "megaflows flushed on 4 PMDs\n");
    assert_true(p1 > 0);
}

/* rule-load: a broken file changes nothing and names FILE:LINE; a good one
 * replaces every rule; --add adds. */
static void test_rule_load(void **state)
{
    struct fx *f = *state;
    fx_write(f, "bad.txt", "priority=5,in_port=p0 actions=output:p2\n# two\n"
                           "in_port=p0,tp_dst=80 actions=drop\n");
    fx_write(f, "good.txt", "priority=5,in_port=p0 actions=output:p2\n\n"
                            "priority=4,in_port=p1 actions=drop\n");
    char before[4096];
    snprintf(before, sizeof before, "%s", ask_ok(f, "rule-show"));
    bool error;
    const char *a = ask(f, &error, "rule-load %s/bad.txt", f->dir.root);
    assert_true(error);
    char want[512];
    snprintf(want, sizeof want,
             "%s/bad.txt:3: rule: tp_dst requires tcp, udp or sctp (nothing changed)\n",
             f->dir.root);
    assert_string_equal(a, want);
    assert_string_equal(ask_ok(f, "rule-show"), before);
    a = ask(f, &error, "rule-load %s/none.txt", f->dir.root);
    assert_true(error);
    assert_non_null(strstr(a, "none.txt: No such file or directory"));
    a = ask(f, &error, "rule-load %s/good.txt", f->dir.root);
    assert_false(error);
    snprintf(want, sizeof want, "2 rules loaded from %s/good.txt (2 rules)\n", f->dir.root);
    assert_string_equal(a, want);
    assert_string_equal(ask_ok(f, "rule-show"),
                        "2 rules, in lookup order (priority, rule):\n"
                        "      5  priority=5,in_port=p0 actions=output:p2\n"
                        "      4  priority=4,in_port=p1 actions=drop\n");
    wait_counter(f, "p2", "tx_packets", port_counter(f, "p2", "tx_packets"));
    a = ask(f, &error, "rule-load --add %s/good.txt", f->dir.root);
    assert_false(error);
    a = ask(f, &error, "rule-load --bogus %s/good.txt", f->dir.root);
    assert_true(error);
}

/* ---- keep-alive ----------------------------------------------------------- */

/* The heartbeat slot of PMD i in `health --json` (or -1 if off). */
static const char *pmd_state(json_t *health, unsigned i)
{
    json_t *p = json_array_get(json_object_get(json_object_get(health, "keepalive"), "pmds"), i);
    return p ? json_string_value(json_object_get(p, "state")) : "";
}

static bool wait_state(struct fx *f, unsigned pmd, const char *want)
{
    for (int w = 0; w < CT_WAIT_MS / 10; w++) {
        json_t *h = ask_json(f, "health");
        bool ok = !strcmp(pmd_state(h, pmd), want);
        json_decref(h);
        if (ok)
            return true;
        ct_sleep_ms(10);
    }
    return false;
}

/* Threads named by /proc/self/task: true if one is called 'name'. */
static bool thread_exists(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d))) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *c = fopen(path, "r");
        if (c && fgets(comm, sizeof comm, c))
            comm[strcspn(comm, "\n")] = '\0';
        if (c)
            fclose(c);
        found = !strcmp(comm, name);
    }
    closedir(d);
    return found;
}

/* Off (the default) is no work: no monitor thread, and no PMD writes its
 * heartbeat slot although every one iterates. On: beats, ALIVE, IDLE for
 * the PMD without rx queues. A stalled PMD is STALLED, a request or change
 * names it instead of waiting for ever, and it is ALIVE after release and
 * catches up. */
static void test_keepalive(void **state)
{
    struct fx *f = *state;
    assert_true(thread_exists("pmd-0") && thread_exists("pmd-1") && thread_exists("pmd-2"));
    assert_false(thread_exists("pmd-3")); /* no rx queue: no thread */
    assert_true(thread_exists("fs-ctl"));
    assert_false(thread_exists("fs-keepalive"));
    assert_string_equal(ask_ok(f, "health"),
                        "keep-alive: off (flowswitch ctl set keep-alive=on)\n");
    uint64_t it0 = 0;
    for (int w = 0; w < 3; w++) {
        json_t *ps = ask_json(f, "pmd-stats");
        uint64_t it = (uint64_t)json_integer_value(
            json_object_get(json_array_get(json_object_get(ps, "pmds"), 0), "iterations"));
        json_decref(ps);
        assert_true(it >= it0);
        it0 = it;
        for (unsigned i = 0; i < FX_PMDS; i++)
            assert_int_equal(atomic_load(&ka_heartbeat(f->ka, i)->beat), 0);
        ct_sleep_ms(120); /* more than a snapshot period: iterations move */
    }
    assert_true(it0 > 0);

    assert_string_equal(ask_ok(f, "set keep-alive=on"), "keep-alive = on\n");
    assert_true(thread_exists("fs-keepalive"));
    assert_true(wait_state(f, 0, "ALIVE"));
    assert_true(wait_state(f, 3, "IDLE"));
    json_t *h = ask_json(f, "health");
    json_t *ka = json_object_get(h, "keepalive");
    assert_true(json_is_true(json_object_get(ka, "enabled")));
    assert_int_equal(json_integer_value(json_object_get(ka, "interval_ms")), 50);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(ka, "pmds"), 1), "tid")) > 0,
                     1);
    json_decref(h);

    pmd_runtime_test_stall(f->rt, 0, true);
    assert_true(wait_state(f, 0, "STALLED"));
    assert_string_equal(pmd_state(h = ask_json(f, "health"), 1), "ALIVE");
    json_decref(h);
    bool error;
    const char *a = ask(f, &error, "megaflow-flush");
    assert_true(error);
    assert_string_equal(a, "megaflow-flush: pmd 0 did not answer within 300 ms (stalled?); it "
                           "will when it resumes\n");
    a = ask_ok(f, "rule-add 'priority=3,in_port=p1 actions=drop'");
    assert_string_equal(a, "rule added (2 rules)\n"
                           "note: pmd 0 did not take the change within 300 ms (stalled?); it "
                           "will at its next poll\n");
    pmd_runtime_test_stall(f->rt, 0, false);
    assert_true(wait_state(f, 0, "ALIVE"));
    h = ask_json(f, "health");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(json_object_get(h, "keepalive"), "pmds"),
                                        0),
                         "stalls")),
                     1);
    json_decref(h);
    /* The pending flush was served on release; a new one is answered. */
    assert_string_equal(ask_ok(f, "megaflow-flush"), "megaflows flushed on 4 PMDs\n");
    assert_string_equal(ask_ok(f, "rule-del priority=3,in_port=p1"), "1 rule deleted (1 rules)\n");
    assert_string_equal(ask_ok(f, "set keepalive-interval=80"), "keepalive-interval = 80\n");

    assert_string_equal(ask_ok(f, "set keep-alive=off"), "keep-alive = off\n");
    assert_false(thread_exists("fs-keepalive"));
    uint64_t beats[FX_PMDS];
    ct_sleep_ms(20); /* each PMD leaves its loop at its next iteration */
    for (unsigned i = 0; i < FX_PMDS; i++)
        beats[i] = atomic_load(&ka_heartbeat(f->ka, i)->beat);
    ct_sleep_ms(150);
    for (unsigned i = 0; i < FX_PMDS; i++)
        assert_int_equal(atomic_load(&ka_heartbeat(f->ka, i)->beat), beats[i]);
    a = ask(f, &error, "set keep-alive=maybe");
    assert_true(error);
}

/* ---- reload ----------------------------------------------------------------- */

/* A knob's value as the control plane holds it. */
static const char *knob(struct fx *f, const char *name)
{
    static char v[64];
    control_lock(f->ctl);
    assert_int_equal(control_knob_get(f->ctl, name, v, sizeof v), 0);
    control_unlock(f->ctl);
    return v;
}

/* What control_reload() wrote. */
static const char *reload(struct fx *f, int want_rc)
{
    static char text[4096];
    FILE *log = fmemopen(text, sizeof text, "w");
    assert_non_null(log);
    assert_int_equal(control_reload(f->ctl, log), want_rc);
    fclose(log);
    return text;
}

/* SIGHUP's work: a good file replaces the rules and sets the live knobs,
 * reports what needs a restart; a broken one is rejected whole. */
static void test_reload(void **state)
{
    struct fx *f = *state;
    fx_write(f, "fs.ini",
             "[datapath]\nkeepalive-interval = 50\ntx-flush-interval = 25\nemc-entries = 1024\n"
             "[port p0]\ntype = pcap\nrx = in.pcap\nrx-loop = forever\n"
             "[port p1]\ntype = dummy\n"
             "[port p2]\ntype = dummy\nburst = 8\n"
             "[rules]\nrule = in_port=p0 actions=output:p2\nrule = priority=1 actions=drop\n");
    char want[1024];
    snprintf(want, sizeof want,
             "flowswitch: reloaded %s: 2 rules; tx-flush-interval 0 -> 25\n"
             "flowswitch: reload of %s: not applied, needs a restart: emc-entries 8192 -> 1024; "
             "port p2\n",
             f->cfg_path, f->cfg_path);
    assert_string_equal(reload(f, 0), want);
    assert_string_equal(knob(f, "tx-flush-interval"), "25");
    assert_string_equal(ask_ok(f, "rule-show"),
                        "2 rules, in lookup order (priority, rule):\n"
                        "  32768  in_port=p0 actions=output:p2\n"
                        "      1  priority=1 actions=drop\n");
    wait_counter(f, "p2", "tx_packets", port_counter(f, "p2", "tx_packets"));

    /* Broken: line 3; then a rule the running ports cannot take. */
    fx_write(f, "fs.ini", "[datapath]\ntx-flush-interval = 0\nnonsense\n"
                          "[rules]\nrule = in_port=p0 actions=output:p1\n");
    snprintf(want, sizeof want,
             "%s:3: syntax error: expected '[section]' or 'key = value'\n"
             "flowswitch: reload of %s rejected, the running configuration stays\n",
             f->cfg_path, f->cfg_path);
    assert_string_equal(reload(f, -1), want);
    fx_write(f, "fs.ini", "[datapath]\ntx-flush-interval = 0\n"
                          "[port p0]\ntype = pcap\nrx = in.pcap\n"
                          "[port q1]\ntype = dummy\n"
                          "[rules]\nrule = in_port=p0 actions=output:q1\n");
    snprintf(want, sizeof want,
             "%s:9: rule: unknown port 'q1'\n"
             "flowswitch: reload of %s rejected, the running configuration stays\n",
             f->cfg_path, f->cfg_path);
    assert_string_equal(reload(f, -1), want);
    assert_string_equal(knob(f, "tx-flush-interval"), "25");
    assert_string_equal(ask_ok(f, "rule-show"),
                        "2 rules, in lookup order (priority, rule):\n"
                        "  32768  in_port=p0 actions=output:p2\n"
                        "      1  priority=1 actions=drop\n");
    fx_write(f, "fs.ini", fx_ini);
}

/* A reload whose live knob change the running datapath refuses (smc = on
 * needs the running smc-entries, 12, to be a power of two; the file's own
 * 16 takes a restart) is rejected before anything is published: the rules
 * and every knob stay as they were. */
static void test_reload_refused_whole(void **state)
{
    struct fx *f = *state;
    fx_write(f, "fs.ini",
             "[datapath]\nkeepalive-interval = 50\ntx-flush-interval = 25\nsmc = on\n"
             "smc-entries = 16\n"
             "[port p0]\ntype = pcap\nrx = in.pcap\nrx-loop = forever\n"
             "[port p1]\ntype = dummy\n"
             "[port p2]\ntype = dummy\n"
             "[rules]\nrule = in_port=p0 actions=output:p2\nrule = priority=1 actions=drop\n");
    char want[1024];
    snprintf(want, sizeof want,
             "%s: [datapath]: smc-entries must be a power of two between %u and %u (with the "
             "running values of the knobs that need a restart)\n"
             "flowswitch: reload of %s rejected, the running configuration stays\n",
             f->cfg_path, (unsigned)SMC_WAYS, (unsigned)SMC_MAX_ENTRIES, f->cfg_path);
    assert_string_equal(reload(f, -1), want);
    assert_string_equal(knob(f, "tx-flush-interval"), "0");
    assert_string_equal(knob(f, "smc"), "off");
    assert_string_equal(knob(f, "smc-entries"), "12");
    assert_string_equal(ask_ok(f, "rule-show"),
                        "1 rules, in lookup order (priority, rule):\n"
                        "  32768  in_port=p0 actions=output:p1\n");
    fx_write(f, "fs.ini", fx_ini);
}

/* A PMD of the datapath that does nothing but pass its quiescent point
 * (dp_pmd_sync(), where dp_pmd_poll() takes changes) as fast as it can,
 * and looks at the knob set it took each time: it sees every publication
 * the real PMDs may see. */
struct knob_watch {
    struct dp_pmd *pmd;
    atomic_bool stop;
    atomic_uint seen;       /* the last set seen: 0 old, 1 new, 2 mixed */
    atomic_ulong n_mixed;   /* sets seen with one knob changed, not both */
    atomic_ulong n_flips;   /* changes of the set seen */
};

/* 1 if both knobs have the values of knobs_new_ini, 0 if neither, 2 if one. */
static unsigned knob_pair(const struct dp_knobs *k)
{
    bool a = k->tx_flush_interval_us == 25, b = k->bad_csum_forward;
    return a && b ? 1 : !a && !b ? 0 : 2;
}

static void *knob_watch_main(void *arg)
{
    struct knob_watch *w = arg;
    unsigned last = knob_pair(dp_pmd_knobs(w->pmd));
    for (unsigned long n = 1; !atomic_load(&w->stop); n++) {
        dp_pmd_sync(w->pmd);
        unsigned now = knob_pair(dp_pmd_knobs(w->pmd));
        if (now == 2)
            atomic_fetch_add(&w->n_mixed, 1);
        if (now != last)
            atomic_fetch_add(&w->n_flips, 1);
        last = now;
        atomic_store(&w->seen, now);
        if (n % 256 == 0)
            sched_yield(); /* serialised threads (valgrind) move on too */
    }
    return NULL;
}

/* One reload of the knob test's loop, without cmocka's asserts (the
 * watcher must be stopped before the test fails): the file of the set
 * to_new or the other, reloaded; false with the reason in why unless the
 * reload says it changed both knobs, the control plane holds both and the
 * watcher took both. */
static bool reload_knobs_round(struct fx *f, struct knob_watch *w, bool to_new, char *why,
                               size_t size)
{
    static const char knobs_new_ini[] =
        "[datapath]\nkeepalive-interval = 50\ntx-flush-interval = 25\nbad-csum = forward\n"
        "[port p0]\ntype = pcap\nrx = in.pcap\nrx-loop = forever\n"
        "[port p1]\ntype = dummy\n"
        "[port p2]\ntype = dummy\n"
        "[rules]\nrule = in_port=p0 actions=output:p1\n";
    fx_write(f, "fs.ini", to_new ? knobs_new_ini : fx_ini);
    char text[2048] = "", want[512], v[64], b[64];
    /* The first line (a PMD slowed down, under valgrind, may add a line
     * saying it has not taken the change yet). */
    snprintf(want, sizeof want, "flowswitch: reloaded %s: 1 rules; %s\n", f->cfg_path,
             to_new ? "tx-flush-interval 0 -> 25; bad-csum drop -> forward"
                    : "tx-flush-interval 25 -> 0; bad-csum forward -> drop");
    FILE *log = fmemopen(text, sizeof text - 1, "w");
    int rc = log ? control_reload(f->ctl, log) : -1;
    if (log)
        fclose(log);
    if (rc || strncmp(text, want, strlen(want))) {
        snprintf(why, size, "reload %d: %s", rc, text);
        return false;
    }
    control_lock(f->ctl);
    control_knob_get(f->ctl, "tx-flush-interval", v, sizeof v);
    control_knob_get(f->ctl, "bad-csum", b, sizeof b);
    control_unlock(f->ctl);
    if (strcmp(v, to_new ? "25" : "0") || strcmp(b, to_new ? "forward" : "drop")) {
        snprintf(why, size, "knobs after the reload: tx-flush-interval %s, bad-csum %s", v, b);
        return false;
    }
    for (int waited = 0; atomic_load(&w->seen) != (to_new ? 1u : 0u); waited++) {
        if (waited == CT_WAIT_MS) {
            snprintf(why, size, "the watcher did not take the set (it sees %u)",
                     atomic_load(&w->seen));
            return false;
        }
        ct_sleep_ms(1);
    }
    return true;
}

/* A reload that changes two live knobs publishes them as one set: the PMDs
 * take both at one quiescent point or neither, never one without the
 * other. The file flips both knobs back and forth while a watching PMD
 * syncs without pause; it must never see them half applied. */
static void test_reload_knobs_one_set(void **state)
{
    struct fx *f = *state;
    struct knob_watch w = {0};
    control_lock(f->ctl); /* the datapath's PMD list is the control side's */
    w.pmd = dp_pmd_create(f->dp);
    control_unlock(f->ctl);
    assert_non_null(w.pmd);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, knob_watch_main, &w), 0);
    const int rounds = getenv("FS_TEST_QUICK") ? 10 : 200;
    char why[2200] = "";
    int done = 0;
    while (done < rounds && reload_knobs_round(f, &w, done % 2 == 0, why, sizeof why))
        done++;
    atomic_store(&w.stop, true);
    pthread_join(th, NULL);
    control_lock(f->ctl);
    dp_pmd_destroy(w.pmd);
    control_unlock(f->ctl);
    fx_write(f, "fs.ini", fx_ini);
    if (done < rounds)
        fail_msg("round %d: %s", done, why);
    assert_int_equal(atomic_load(&w.n_mixed), 0);
    assert_true(atomic_load(&w.n_flips) >= (unsigned long)rounds);
}

/* PMDs that sleep 30 ms when idle are silent that long: keep-alive refuses
 * an interval under twice that, when turned on and when changed, rather
 * than report them stalled. */
static void test_keepalive_idle_sleep(void **state)
{
    struct fx *f = *state;
    /* A reload that turns it on is rejected before its rules apply. */
    fx_write(f, "fs.ini",
             "[datapath]\nkeepalive = on\nkeepalive-interval = 50\n"
             "[port p0]\ntype = pcap\nrx = in.pcap\nrx-loop = forever\n"
             "[port p1]\ntype = dummy\n"
             "[port p2]\ntype = dummy\n"
             "[rules]\nrule = in_port=p0 actions=output:p2\n");
    char want[1024];
    snprintf(want, sizeof want,
             "%s: [datapath]: keepalive-interval 50 ms is too short for PMDs that sleep 30000 "
             "us when idle: a sleeping PMD would look stalled (use at least 60 ms, twice the "
             "idle sleep)\n"
             "flowswitch: reload of %s rejected, the running configuration stays\n",
             f->cfg_path, f->cfg_path);
    assert_string_equal(reload(f, -1), want);
    assert_string_equal(ask_ok(f, "rule-show"),
                        "1 rules, in lookup order (priority, rule):\n"
                        "  32768  in_port=p0 actions=output:p1\n");
    fx_write(f, "fs.ini", fx_ini);

    bool error;
    const char *a = ask(f, &error, "set keep-alive=on");
    assert_true(error);
    assert_string_equal(a, "set: keepalive-interval 50 ms is too short for PMDs that sleep "
                           "30000 us when idle: a sleeping PMD would look stalled (use at "
                           "least 60 ms, twice the idle sleep)\n");
    assert_false(control_keepalive(f->ctl));
    a = ask(f, &error, "set keepalive-interval=59");
    assert_true(error);
    assert_non_null(strstr(a, "keepalive-interval 59 ms is too short"));
    assert_string_equal(knob(f, "keepalive-interval"), "50");
    assert_string_equal(ask_ok(f, "set keepalive-interval=60"), "keepalive-interval = 60\n");
    assert_string_equal(ask_ok(f, "set keep-alive=on"), "keep-alive = on\n");

    /* The rule itself (what run checks at start-up). */
    char err[256];
    assert_int_equal(control_ka_interval_check(1000, 500000, err, sizeof err), 0);
    assert_int_equal(control_ka_interval_check(1, 0, err, sizeof err), 0);
    assert_int_equal(control_ka_interval_check(1000, 1000000, err, sizeof err), -1);
    assert_non_null(strstr(err, "(use at least 2000 ms, twice the idle sleep)"));
    assert_int_equal(control_ka_interval_check(1, 501, err, sizeof err), -1);
    assert_non_null(strstr(err, "(use at least 2 ms,"));
}

/* Every number the switch takes is plain decimal digits in range
 * (fs_parse_uint()): no sign, no blanks. */
static void test_number_syntax(void **state)
{
    struct fx *f = *state;
    static const char *const bad_ms[] = {"+100", "' 100'", "100ms", "0x10", "''", "0"};
    for (size_t i = 0; i < sizeof bad_ms / sizeof bad_ms[0]; i++) {
        bool error;
        const char *a = ask(f, &error, "set keepalive-interval=%s", bad_ms[i]);
        assert_true(error);
        assert_non_null(strstr(a, "for 'keepalive-interval' (expected ms, 1..3600000)"));
    }
    assert_string_equal(knob(f, "keepalive-interval"), "50");
    static const char *const bad_pmd[] = {"+1", "' 1'", "-0", "4", "1x"};
    for (size_t i = 0; i < sizeof bad_pmd / sizeof bad_pmd[0]; i++) {
        bool error;
        const char *a = ask(f, &error, "megaflow-show %s", bad_pmd[i]);
        assert_true(error);
        assert_non_null(strstr(a, "megaflow-show: no PMD '"));
        assert_non_null(strstr(a, "' (0..3)\n"));
    }
    ask_ok(f, "megaflow-show 3");

    struct pmd_config pc;
    char err[256];
    static const char *const bad_cores[] = {"1,+2", " 1", "1,", ",1", "1-", "3-1", "1--2",
                                            "4096", ""};
    for (size_t i = 0; i < sizeof bad_cores / sizeof bad_cores[0]; i++) {
        pmd_config_default(&pc);
        assert_int_equal(pmd_config_parse_cores(&pc, bad_cores[i], err, sizeof err), -1);
        assert_non_null(strstr(err, "expected a CPU list like 1,2 or 1-3"));
    }
    pmd_config_default(&pc);
    assert_int_equal(pmd_config_parse_cores(&pc, "1-3,5,4095", err, sizeof err), 0);
    assert_int_equal(pc.n_pmds, 5);
    assert_int_equal(pc.cores[0], 1);
    assert_int_equal(pc.cores[2], 3);
    assert_int_equal(pc.cores[3], 5);
    assert_int_equal(pc.cores[4], 4095);
    assert_int_equal(pmd_config_parse_cores(&pc, "2,1-2", err, sizeof err), -1);
    assert_string_equal(err, "pmd-cores '2,1-2': core 2 twice");

    pmd_config_default(&pc);
    pc.n_pmds = 2;
    assert_int_equal(pmd_config_parse_affinity(&pc, f->dp, "p0:+0:1", err, sizeof err), -1);
    assert_string_equal(err, "pmd-rxq-affinity: port p0 has no rx queue '+0'");
    assert_int_equal(pmd_config_parse_affinity(&pc, f->dp, "p0:1:1", err, sizeof err), -1);
    assert_int_equal(pmd_config_parse_affinity(&pc, f->dp, "p0:0: 1", err, sizeof err), -1);
    assert_string_equal(err, "pmd-rxq-affinity: bad PMD ' 1' (expected 0..4095)");
    assert_int_equal(pmd_config_parse_affinity(&pc, f->dp, "p0:0:2", err, sizeof err), -1);
    assert_string_equal(err, "pmd-rxq-affinity: PMD index 2 is not a PMD");
    assert_int_equal(pc.n_affinity, 0);
    assert_int_equal(pmd_config_parse_affinity(&pc, f->dp, "p0:0:1", err, sizeof err), 0);
    assert_int_equal(pc.n_affinity, 1);
    assert_int_equal(pc.affinity[0].qid, 0);
    assert_int_equal(pc.affinity[0].pmd, 1);
}

/* Eight clients at once, each a series of reads and changes. */
struct client_arg {
    struct fx *f;
    int id, failures;
};

static void *client_main(void *arg)
{
    struct client_arg *c = arg;
    for (int i = 0; i < 10; i++) {
        char line[256];
        int n = snprintf(line, sizeof line, i % 2 ? "--json pmd-stats\n"
                                                  : "rule-add 'priority=%d,in_port=p1 actions=drop'\n",
                         100 + c->id);
        struct ctl_reply r;
        char err[256];
        if (ctl_client_request(c->f->dir.sock, line, (size_t)n, CT_WAIT_MS, &r, err, sizeof err) !=
                CTL_CLIENT_OK ||
            r.error)
            c->failures++;
        else if (i % 2 == 0 && !strstr(r.body, "rule added"))
            c->failures++;
        ctl_reply_free(&r);
    }
    return NULL;
}

static void test_concurrent_clients(void **state)
{
    struct fx *f = *state;
    pthread_t th[8];
    struct client_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (struct client_arg){f, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &args[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    json_t *doc = ask_json(f, "rule-show");
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1 + 8);
    json_decref(doc);
    struct ctl_server_stats st;
    ctl_server_get_stats(f->srv, &st);
    assert_int_equal(st.errors, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rules_under_traffic, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_rule_load, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload_refused_whole, fx_setup_smc_off,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_reload_knobs_one_set, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_idle_sleep, fx_setup_sleepy,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_number_syntax, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_clients, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
