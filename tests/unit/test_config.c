/* test_config.c: the config file parser (good and bad files). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

/* Every [datapath] knob, in the order the "unknown knob" message lists them. */
#define KNOWN_KNOBS                                                              \
    "tx-flush-interval, tx-retries, bad-csum, emc-entries, emc-ways, "           \
    "emc-insert-inv-prob, emc-max-key-len, smc, smc-entries, megaflow-max, "      \
    "subtable-resort-interval, megaflow-revalidate, tx-batching, seed, "         \
    "direct-subtables, replay-iteration-ns, pmd-cores, pmd-rxq-affinity, "       \
    "pmd-priority, keepalive, keepalive-interval, ctl-socket"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "netdev-provider.h"
#include "rules.h"

/* Local backend types, so the test depends on no real backend: the config
 * only asks the registry whether a type exists. */
static int fake_open(struct netdev *dev, const struct netdev_args *args, char *err,
                     size_t errlen)
{
    (void)dev;
    (void)args;
    (void)err;
    (void)errlen;
    return 0;
}

static void fake_close(struct netdev *dev)
{
    (void)dev;
}

static const struct netdev_class fake_dummy = {
    .type = "dummy",
    .open = fake_open,
    .close = fake_close,
};

static const struct netdev_class fake_pcap = {
    .type = "pcap",
    .open = fake_open,
    .close = fake_close,
};

/* snprintf that fails the test instead of truncating. */
static void xsnprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void xsnprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < size);
}

struct fixture {
    char data[PATH_MAX]; /* tests/unit/data/config */
    char tmp[PATH_MAX];  /* scratch dir for generated files */
};

static int group_setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    /* Run from the repository root (make check), or find the data next to
     * this source file. */
    const char *rel = "tests/unit/data/config";
    if (access(rel, R_OK) == 0) {
        snprintf(fx->data, sizeof fx->data, "%s", rel);
    } else {
        const char *file = __FILE__;
        const char *slash = strrchr(file, '/');
        int n = slash ? (int)(slash - file) : 1;
        snprintf(fx->data, sizeof fx->data, "%.*s/data/config", n, slash ? file : ".");
    }
    snprintf(fx->tmp, sizeof fx->tmp, "/tmp/fs-test-config-XXXXXX");
    if (!mkdtemp(fx->tmp)) {
        free(fx);
        return -1;
    }
    netdev_unregister_all();
    if (netdev_register(&fake_dummy) || netdev_register(&fake_pcap)) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int group_teardown(void **state)
{
    struct fixture *fx = *state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->tmp);
    int rc = system(cmd);
    netdev_unregister_all();
    free(fx);
    return rc == 0 ? 0 : -1;
}

static void data_path(const struct fixture *fx, const char *name, char *buf, size_t size)
{
    xsnprintf(buf, size, "%s/%s", fx->data, name);
}

/* Writes a generated file into the scratch dir; returns its path in buf. */
static void tmp_file(const struct fixture *fx, const char *name, const char *text, char *buf,
                     size_t size)
{
    xsnprintf(buf, size, "%s/%s", fx->tmp, name);
    FILE *f = fopen(buf, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void assert_empty(const struct config *cfg)
{
    assert_null(cfg->path);
    assert_null(cfg->dir);
    assert_int_equal(cfg->n_ports, 0);
    assert_null(cfg->rules);
    assert_int_equal(cfg->n_rules, 0);
    assert_int_equal(cfg->knobs.tx_retries, 8);
    assert_int_equal(cfg->knobs.tx_flush_interval_us, 0);
}

/* Loads path, expecting failure with exactly "path:line: reason" (line 0:
 * "reason" alone, as for a missing file). */
static void load_err_at(const char *path, const char *err_file, int line, const char *reason)
{
    struct config cfg;
    char err[1024] = "", want[1024];
    memset(&cfg, 0x5a, sizeof cfg);
    int rc = config_load(path, &cfg, err, sizeof err);
    if (rc != -1)
        fail_msg("config_load(%s) succeeded, expected %s:%d: %s", path, err_file, line, reason);
    if (line > 0)
        xsnprintf(want, sizeof want, "%s:%d: %s", err_file, line, reason);
    else
        xsnprintf(want, sizeof want, "%s", reason);
    assert_string_equal(err, want);
    assert_empty(&cfg);
    config_free(&cfg); /* still safe */
    assert_empty(&cfg);
}

static void load_err(const char *path, int line, const char *reason)
{
    load_err_at(path, path, line, reason);
}

static void data_err(const struct fixture *fx, const char *name, int line, const char *reason)
{
    char path[PATH_MAX];
    data_path(fx, name, path, sizeof path);
    load_err(path, line, reason);
}

static void tmp_err(const struct fixture *fx, const char *text, int line, const char *reason)
{
    char path[PATH_MAX];
    tmp_file(fx, "gen.ini", text, path, sizeof path);
    load_err(path, line, reason);
}

static void load_ok(const char *path, struct config *cfg)
{
    char err[1024] = "";
    if (config_load(path, cfg, err, sizeof err))
        fail_msg("config_load(%s) failed: %s", path, err);
}

static void assert_opt(const struct config_port *p, size_t i, const char *key,
                       const char *value, int line)
{
    assert_true(i < p->n_opts);
    assert_string_equal(p->opts[i].key, key);
    assert_string_equal(p->opts[i].value, value);
    assert_int_equal(p->opts[i].line, line);
}

/* ------------------------------------------------------------------------ */

static void test_good_full(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    struct config cfg;
    data_path(fx, "good.ini", path, sizeof path);
    load_ok(path, &cfg);

    assert_string_equal(cfg.path, path);
    assert_string_equal(cfg.dir, fx->data);
    assert_int_equal(cfg.knobs.tx_flush_interval_us, 50);
    assert_int_equal(cfg.knobs.tx_retries, 4);

    assert_int_equal(cfg.n_ports, 2);
    const struct config_port *p0 = &cfg.ports[0], *p1 = &cfg.ports[1];
    assert_string_equal(p0->name, "p0");
    assert_string_equal(p0->type, "dummy");
    assert_int_equal(p0->line, 8);
    assert_true(p0->caps_set);
    assert_int_equal(p0->caps.flags, NETDEV_TX_IP_CSUM | NETDEV_TX_L4_CSUM);
    assert_int_equal(p0->tx_retries, 0);
    assert_int_equal(p0->n_opts, 2); /* type, caps, tx-retries are core keys */
    assert_opt(p0, 0, "burst", "4", 10);
    assert_opt(p0, 1, "rx", "in.pcap", 13);

    assert_string_equal(p1->name, "uplink.1-a_B");
    assert_string_equal(p1->type, "pcap");
    assert_int_equal(p1->line, 15);
    assert_false(p1->caps_set);
    assert_int_equal(p1->tx_retries, -1);
    assert_int_equal(p1->n_opts, 3); /* repeated keys kept, in file order */
    assert_opt(p1, 0, "rx", "in0.pcap", 17);
    assert_opt(p1, 1, "rx", "in1.pcap", 18);
    assert_opt(p1, 2, "tx", "out.pcap", 19);

    assert_int_equal(config_port_index(&cfg, "p0"), 0);
    assert_int_equal(config_port_index(&cfg, "uplink.1-a_B"), 1);
    assert_int_equal(config_port_index(&cfg, "p2"), -1);
    assert_int_equal(config_rule_port_lookup(&cfg, "uplink.1-a_B"), 1);
    assert_int_equal(config_rule_port_lookup(&cfg, "1"), 1);
    assert_int_equal(config_rule_port_lookup(&cfg, "0"), 0);
    assert_int_equal(config_rule_port_lookup(&cfg, "2"), -1);
    assert_int_equal(config_rule_port_lookup(&cfg, "p9"), -1);
    assert_int_equal(config_rule_port_lookup(&cfg, ""), -1);

    /* Rules in file order, the included ones where the include is. */
    assert_int_equal(cfg.n_rules, 5);
    assert_string_equal(cfg.rules[0].text, "priority=100,in_port=p0,ip,nw_dst=10.0.0.0/8,tcp,"
                                           "tp_dst=80 actions=output:uplink.1-a_B");
    assert_int_equal(cfg.rules[0].line, 22);
    assert_string_equal(cfg.rules[1].text, "in_port=1 actions=output:0"); /* ; comment cut */
    assert_int_equal(cfg.rules[1].line, 23);
    assert_string_equal(cfg.rules[2].text, "priority=10,arp actions=output:p0");
    assert_int_equal(cfg.rules[2].line, 3); /* line in flows_good.txt */
    assert_string_equal(cfg.rules[3].text, "priority=20,in_port=p0,udp,tp_dst=53 "
                                           "actions=mod_tp_dst:5353,output:uplink.1-a_B");
    assert_int_equal(cfg.rules[3].line, 5);
    assert_string_equal(cfg.rules[4].text, "priority=1 actions=drop");
    assert_int_equal(cfg.rules[4].line, 25);

    /* The stored texts parse with the config's port lookup. */
    struct rule *r;
    char err[256];
    assert_int_equal(rule_parse(cfg.rules[0].text, config_rule_port_lookup, &cfg, &r, err,
                                sizeof err), 0);
    assert_int_equal(r->match.in_port, 0);
    assert_int_equal(r->actions->a[0].u.port, 1);
    rule_free(r);
    assert_int_equal(rule_parse(cfg.rules[1].text, config_rule_port_lookup, &cfg, &r, err,
                                sizeof err), 0);
    assert_int_equal(r->match.in_port, 1);
    assert_int_equal(r->actions->a[0].u.port, 0);
    rule_free(r);

    config_free(&cfg);
    assert_empty(&cfg);
}

static void test_good_minimal(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    struct config cfg;
    data_path(fx, "minimal.ini", path, sizeof path);
    load_ok(path, &cfg);
    assert_int_equal(cfg.n_ports, 1);
    assert_string_equal(cfg.ports[0].name, "only");
    assert_int_equal(cfg.ports[0].line, 1);
    assert_int_equal(cfg.ports[0].n_opts, 0);
    assert_null(cfg.ports[0].opts);
    assert_false(cfg.ports[0].caps_set);
    assert_int_equal(cfg.n_rules, 0);
    assert_int_equal(cfg.knobs.tx_retries, 8);
    assert_int_equal(cfg.knobs.tx_flush_interval_us, 0);
    config_free(&cfg);

    struct dp_knobs k;
    memset(&k, 0xff, sizeof k);
    dp_knobs_default(&k);
    assert_int_equal(k.tx_retries, 8);
    assert_int_equal(k.tx_flush_interval_us, 0);
}

static void test_good_edge_syntax(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    struct config cfg;

    /* A line of exactly CONFIG_MAX_LINE characters; line numbers after it
     * stay right. */
    data_path(fx, "max_line.ini", path, sizeof path);
    load_ok(path, &cfg);
    assert_int_equal(cfg.ports[0].n_opts, 2);
    assert_int_equal(strlen(cfg.ports[0].opts[0].value), CONFIG_MAX_LINE - strlen("name = "));
    assert_int_equal(cfg.ports[0].opts[0].line, 3);
    assert_opt(&cfg.ports[0], 1, "last", "1", 4);
    config_free(&cfg);

    /* CRLF line ends, a UTF-8 BOM, "key: value", blanks around names,
     * extreme knob values, caps "none", empty sections. */
    tmp_file(fx, "edge.ini",
             "\xEF\xBB\xBF[datapath]\r\n"
             "tx-flush-interval = 1000000\r\n"
             "tx-retries=0\r\n"
             "[rules]\r\n"
             "[ port   x ]\r\n"
             "type: dummy\r\n"
             "caps = none\r\n"
             "tx-retries = 32\r\n"
             "opt =\r\n"
             "[datapath] ; again\r\n",
             path, sizeof path);
    load_ok(path, &cfg);
    assert_int_equal(cfg.knobs.tx_flush_interval_us, 1000000);
    assert_int_equal(cfg.knobs.tx_retries, 0);
    assert_int_equal(cfg.n_ports, 1);
    assert_string_equal(cfg.ports[0].name, "x");
    assert_int_equal(cfg.ports[0].line, 5);
    assert_true(cfg.ports[0].caps_set);
    assert_int_equal(cfg.ports[0].caps.flags, 0);
    assert_int_equal(cfg.ports[0].tx_retries, 32);
    assert_opt(&cfg.ports[0], 0, "opt", "", 9);
    assert_string_equal(cfg.dir, fx->tmp);
    config_free(&cfg);

    /* An empty file is a valid (empty) config. */
    tmp_file(fx, "empty.ini", "", path, sizeof path);
    load_ok(path, &cfg);
    assert_int_equal(cfg.n_ports, 0);
    assert_int_equal(cfg.n_rules, 0);
    config_free(&cfg);

    /* 64 ports is the maximum. */
    char *big = malloc(64 * 40 + 1);
    assert_non_null(big);
    big[0] = '\0';
    for (int i = 0; i < CONFIG_MAX_PORTS; i++)
        sprintf(big + strlen(big), "[port p%d]\ntype = dummy\n", i);
    tmp_file(fx, "many.ini", big, path, sizeof path);
    load_ok(path, &cfg);
    assert_int_equal(cfg.n_ports, CONFIG_MAX_PORTS);
    assert_string_equal(cfg.ports[63].name, "p63");
    assert_int_equal(cfg.ports[63].line, 127);
    config_free(&cfg);
    strcat(big, "[port one-too-many]\ntype = dummy\n");
    tmp_file(fx, "many.ini", big, path, sizeof path);
    load_err(path, 129, "too many ports (max 64)");
    free(big);
}

static void test_dir(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX], cwd[PATH_MAX];
    struct config cfg;

    /* A path without a directory: "."; includes resolve against cwd. */
    tmp_file(fx, "flows-here.txt", "actions=drop\n", path, sizeof path);
    tmp_file(fx, "here.ini", "[rules]\ninclude = flows-here.txt\n", path, sizeof path);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(fx->tmp), 0);
    char err[512] = "";
    int rc = config_load("here.ini", &cfg, err, sizeof err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    assert_string_equal(cfg.path, "here.ini");
    assert_string_equal(cfg.dir, ".");
    assert_int_equal(cfg.n_rules, 1);
    config_free(&cfg);

    /* Absolute include paths are used as they are. */
    char flows[PATH_MAX], text[PATH_MAX + 64];
    xsnprintf(flows, sizeof flows, "%s/flows-here.txt", fx->tmp);
    xsnprintf(text, sizeof text, "[rules]\ninclude = %s\n", flows);
    char sub[PATH_MAX];
    xsnprintf(sub, sizeof sub, "%s/sub", fx->tmp);
    assert_int_equal(mkdir(sub, 0700), 0);
    xsnprintf(path, sizeof path, "%s/sub/abs.ini", fx->tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    load_ok(path, &cfg);
    assert_string_equal(cfg.dir, sub);
    assert_int_equal(cfg.n_rules, 1);
    assert_string_equal(cfg.rules[0].text, "actions=drop");
    config_free(&cfg);

    /* A missing file at the root. */
    load_err("/no-such-flowswitch.ini", 0, "/no-such-flowswitch.ini: No such file or directory");
}

static void test_bad_data_files(void **state)
{
    struct fixture *fx = *state;
    data_err(fx, "bad_syntax.ini", 4, "syntax error: expected '[section]' or 'key = value'");
    data_err(fx, "bad_section.ini", 3,
             "unknown section '[bridge]' (expected [datapath], [port NAME], [rules] or [change NAME])");
    data_err(fx, "bad_knob.ini", 3, "unknown knob 'tx-turbo' (known: " KNOWN_KNOBS ")");
    data_err(fx, "bad_knob_range.ini", 3,
             "bad value '1000001' for 'tx-flush-interval' (expected 0..1000000)");
    data_err(fx, "bad_dup_port.ini", 6, "duplicate port 'p0' (first at line 1)");
    data_err(fx, "bad_no_type.ini", 4, "port 'p1' has no 'type'");
    data_err(fx, "bad_no_type_last.ini", 3, "port 'p1' has no 'type'");
    data_err(fx, "bad_type.ini", 2, "unknown port type 'dumy' (known: dummy, pcap, vxlan)");
    data_err(fx, "bad_caps.ini", 3,
             "caps: unknown capability 'turbo' (known: tx-ip-csum, tx-l4-csum, tx-outer-ip-csum, "
             "tx-outer-udp-csum, guest-csum, rx-csum, rx-ip-csum, rx-l4-csum, none)");
    data_err(fx, "bad_rule.ini", 7, "rule: tp_dst requires tcp, udp or sctp");
    data_err(fx, "bad_rule_port.ini", 7, "rule: unknown port 'p9'");
    data_err(fx, "bad_long_line.ini", 3, "line too long (max 199 characters)");
    data_err(fx, "bad_outside.ini", 2, "key 'type' outside of a section");

    char path[PATH_MAX], flows[PATH_MAX], reason[PATH_MAX + 64];
    data_path(fx, "bad_include.ini", path, sizeof path);
    data_path(fx, "flows_bad.txt", flows, sizeof flows);
    load_err_at(path, flows, 3, "rule: unknown field 'nw_dts'");

    data_path(fx, "bad_include_missing.ini", path, sizeof path);
    data_path(fx, "no-such-flows.txt", flows, sizeof flows);
    xsnprintf(reason, sizeof reason, "include: %s: No such file or directory", flows);
    load_err(path, 4, reason);

    data_path(fx, "no-such-config.ini", path, sizeof path);
    xsnprintf(reason, sizeof reason, "%s: No such file or directory", path);
    load_err(path, 0, reason);
}

static void test_bad_generated(void **state)
{
    struct fixture *fx = *state;
    /* Sections. */
    tmp_err(fx, "[port p0\ntype = dummy\n", 1, "missing ']' in section header");
    tmp_err(fx, "[port p0] x\ntype = dummy\n", 1, "unexpected text after ']'");
    tmp_err(fx, "[port]\ntype = dummy\n", 1, "port section without a name (expected [port NAME])");
    tmp_err(fx, "[portx]\n", 1,
            "unknown section '[portx]' (expected [datapath], [port NAME], [rules] or [change NAME])");
    tmp_err(fx, "[Datapath]\n", 1,
            "unknown section '[Datapath]' (expected [datapath], [port NAME], [rules] or [change NAME])");
    tmp_err(fx, "\n[port 12]\ntype = dummy\n", 2,
            "bad port name '12' (a number would be ambiguous in rules)");
    tmp_err(fx, "[port a/b]\ntype = dummy\n", 1,
            "bad port name 'a/b' (1..31 characters of A-Z a-z 0-9 _ . -)");
    tmp_err(fx, "[port a b]\ntype = dummy\n", 1,
            "bad port name 'a b' (1..31 characters of A-Z a-z 0-9 _ . -)");
    tmp_err(fx, "[port abcdefghijabcdefghijabcdefghij12]\ntype = dummy\n", 1,
            "bad port name 'abcdefghijabcdefghijabcdefghij12' (1..31 characters of A-Z a-z 0-9 _ . -)");
    {
        /* 31 characters is fine. */
        char path[PATH_MAX];
        struct config cfg;
        tmp_file(fx, "ok31.ini", "[port abcdefghijabcdefghijabcdefghij1]\ntype = dummy\n", path,
                 sizeof path);
        load_ok(path, &cfg);
        assert_string_equal(cfg.ports[0].name, "abcdefghijabcdefghijabcdefghij1");
        config_free(&cfg);
    }

    /* Keys. */
    tmp_err(fx, "[datapath]\ntx-retries = 33\n", 2, "bad value '33' for 'tx-retries' (expected 0..32)");
    tmp_err(fx, "[datapath]\ntx-retries = -1\n", 2, "bad value '-1' for 'tx-retries' (expected 0..32)");
    tmp_err(fx, "[datapath]\ntx-retries = 1x\n", 2, "bad value '1x' for 'tx-retries' (expected 0..32)");
    tmp_err(fx, "[datapath]\ntx-retries =\n", 2, "bad value '' for 'tx-retries' (expected 0..32)");
    tmp_err(fx, "[datapath]\ntx-flush-interval = 99999999999999999999999\n", 2,
            "bad value '99999999999999999999999' for 'tx-flush-interval' (expected 0..1000000)");
    tmp_err(fx, "[datapath]\ntx-retries = 1\ntx-retries = 2\n", 3, "duplicate knob 'tx-retries'");
    tmp_err(fx, "[port p0]\ntype = dummy\ntype = pcap\n", 3, "duplicate key 'type' (first at line 2)");
    tmp_err(fx, "[port p0]\ntype = dummy\ncaps = none\ncaps = none\n", 4, "duplicate key 'caps'");
    tmp_err(fx, "[port p0]\ntype = dummy\ntx-retries = 33\n", 3,
            "bad value '33' for 'tx-retries' (expected 0..32)");
    tmp_err(fx, "[port p0]\ntype = dummy\ntx-retries = 1\ntx-retries = 1\n", 4,
            "duplicate key 'tx-retries'");
    tmp_err(fx, "[port p0]\ntype =\n", 2, "unknown port type '' (known: dummy, pcap, vxlan)");
    tmp_err(fx, "[rules]\nflow = actions=drop\n", 2,
            "unknown key 'flow' in [rules] (expected 'rule' or 'include')");
    tmp_err(fx, "[rules]\nrule =\n", 2, "rule: missing 'actions='");
    tmp_err(fx, "[rules]\nrule = actions=output:0\n", 2, "rule: unknown port '0'");

    /* The first error wins, whoever finds it. */
    tmp_err(fx, "[port p0]\ntype = dummy\nbroken\n[bogus]\n", 3,
            "syntax error: expected '[section]' or 'key = value'");
    tmp_err(fx, "[bogus]\nbroken\n", 1,
            "unknown section '[bogus]' (expected [datapath], [port NAME], [rules] or [change NAME])");
    tmp_err(fx, "[datapath]\nfoo = 1\nbroken\n", 2,
            "unknown knob 'foo' (known: " KNOWN_KNOBS ")");
    /* A syntax error before a rule error: rules are checked last. */
    tmp_err(fx, "[rules]\nrule = bogus\nbroken\n", 3,
            "syntax error: expected '[section]' or 'key = value'");
    /* The [port] line of a port without type comes before later errors. */
    tmp_err(fx, "[port p0]\nx = 1\nbroken\n", 1, "port 'p0' has no 'type'");
    tmp_err(fx, "[port p0]\nx = 1\n[port p1]\nbroken\n", 1, "port 'p0' has no 'type'");

    /* Directories open but cannot be read. */
    {
        char want[PATH_MAX + 64];
        xsnprintf(want, sizeof want, "include: %s/.: Is a directory", fx->tmp);
        tmp_err(fx, "[rules]\ninclude = .\n", 2, want);
        xsnprintf(want, sizeof want, "%s: Is a directory", fx->tmp);
        load_err(fx->tmp, 0, want);
    }

    /* An indented line is an ordinary line, never a continuation. */
    {
        char path[PATH_MAX];
        struct config cfg;
        tmp_file(fx, "indent.ini", "[port p0]\n  type = dummy\n  rx = a.pcap\n\tburst = 2\n", path,
                 sizeof path);
        load_ok(path, &cfg);
        assert_string_equal(cfg.ports[0].type, "dummy");
        assert_int_equal(cfg.ports[0].n_opts, 2);
        assert_opt(&cfg.ports[0], 0, "rx", "a.pcap", 3);
        assert_opt(&cfg.ports[0], 1, "burst", "2", 4);
        config_free(&cfg);
    }

    /* Long lines in flows files are fine (no INI limit there); errors in
     * them name the flows file. */
    {
        char flows[PATH_MAX], path[PATH_MAX], want[PATH_MAX];
        char *big = malloc(4096);
        assert_non_null(big);
        strcpy(big, "in_port=0");
        for (int i = 0; i < 100; i++)
            strcat(big, ",ip");
        strcat(big, " actions=output:0\n\n#\nbogus actions=drop\n");
        tmp_file(fx, "long-flows.txt", big, flows, sizeof flows);
        free(big);
        tmp_file(fx, "inc.ini", "[port p0]\ntype = dummy\n[rules]\ninclude = long-flows.txt\n",
                 path, sizeof path);
        xsnprintf(want, sizeof want, "%s:4: rule: unknown field 'bogus'", flows);
        struct config cfg;
        char err[1024];
        assert_int_equal(config_load(path, &cfg, err, sizeof err), -1);
        assert_string_equal(err, want);
        config_free(&cfg);
    }
}

static void test_error_buffer(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    struct config cfg;
    data_path(fx, "bad_knob.ini", path, sizeof path);
    /* A short buffer is truncated, never overrun; none at all is fine. */
    char small[6];
    memset(small, 'x', sizeof small);
    assert_int_equal(config_load(path, &cfg, small, sizeof small), -1);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, path, sizeof small - 1);
    config_free(&cfg);
    assert_int_equal(config_load(path, &cfg, NULL, 0), -1);
    config_free(&cfg);
    config_free(NULL);
}

/* [change NAME] sections and the flow-cache knobs. */
static void test_changes_and_cache_knobs(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    struct config cfg;
    tmp_file(fx, "chg.ini",
             "[datapath]\n"
             "emc-entries = 4096\nemc-ways = 1\nemc-insert-inv-prob = 0\n"
             "smc = off\nsmc-entries = 1024\nmegaflow-max = 10\n"
             "megaflow-revalidate = off\nsubtable-resort-interval = 5\nseed = 7\n"
             "bad-csum = forward\nreplay-iteration-ns = 100\n"
             "pmd-cores = 1-2\npmd-rxq-affinity = p0:0:2\n"
             "[port p0]\ntype = dummy\nemc-insert-inv-prob = 1\n"
             "[port p1]\ntype = dummy\n"
             "[rules]\nrule = in_port=p0 actions=output:p1\n"
             "[change a]\ntime = 1.5\ndelete = in_port=p0 actions=drop\n"
             "add = priority=5,in_port=p1 actions=output:p0\n"
             "[change b]\ntime = 2.000000001\nclear = true\ntx-flush-interval = 50\n",
             path, sizeof path);
    load_ok(path, &cfg);
    assert_int_equal(cfg.knobs.emc_entries, 4096);
    assert_int_equal(cfg.knobs.emc_ways, 1);
    assert_int_equal(cfg.knobs.emc_insert_inv_prob, 0);
    assert_false(cfg.knobs.smc);
    assert_int_equal(cfg.knobs.smc_entries, 1024);
    assert_int_equal(cfg.knobs.megaflow_max, 10);
    assert_false(cfg.knobs.megaflow_revalidate);
    assert_int_equal(cfg.knobs.subtable_resort_ms, 5);
    assert_int_equal(cfg.knobs.seed, 7);
    assert_true(cfg.knobs.bad_csum_forward);
    assert_int_equal(cfg.replay_iteration_ns, 100);
    assert_string_equal(cfg.pmd_cores, "1-2");
    assert_int_equal(cfg.pmd_cores_line, 13);
    assert_string_equal(cfg.pmd_rxq_affinity, "p0:0:2");
    assert_int_equal(cfg.pmd_rxq_affinity_line, 14);
    assert_int_equal(cfg.ports[0].emc_insert_inv_prob, 1);
    assert_int_equal(cfg.ports[1].emc_insert_inv_prob, -1);
    assert_int_equal(cfg.n_changes, 2);
    const struct sim_change *a = &cfg.changes[0], *b = &cfg.changes[1];
    assert_string_equal(a->name, "a");
    assert_int_equal(a->line, 22);
    assert_int_equal(a->time_ns, 1500000000ull);
    assert_int_equal(a->n_del, 1);
    assert_string_equal(a->del[0].text, "in_port=p0 actions=drop");
    assert_int_equal(a->n_add, 1);
    assert_int_equal(a->add[0].line, 25);
    assert_false(a->clear);
    assert_int_equal(a->tx_flush_interval_us, -1);
    assert_int_equal(b->time_ns, 2000000001ull);
    assert_true(b->clear);
    assert_int_equal(b->tx_flush_interval_us, 50);
    config_free(&cfg);

    tmp_err(fx, "[change x]\nadd = actions=drop\n", 1, "change 'x' has no 'time'");
    tmp_err(fx, "[change x]\ntime = 1.5s\n", 2,
            "bad value '1.5s' for 'time' (expected seconds, e.g. 1.5)");
    tmp_err(fx, "[change x]\ntime = 0.1234567891\n", 2,
            "bad value '0.1234567891' for 'time' (expected seconds, e.g. 1.5)");
    tmp_err(fx, "[change x]\ntime = 2\n[change y]\ntime = 1\n", 4,
            "change 'y' is earlier than the change before it");
    tmp_err(fx, "[change x]\ntime = 1\ncolour = red\n", 3,
            "unknown key 'colour' in a change (known: time, add, delete, clear, "
            "tx-flush-interval)");
    tmp_err(fx, "[port p0]\ntype = dummy\n[change x]\ntime = 1\nadd = in_port=p9 actions=drop\n",
            5, "add: unknown port 'p9'");
    tmp_err(fx, "[datapath]\nsmc = maybe\n", 2, "bad value 'maybe' for 'smc' (expected on or off)");
    tmp_err(fx, "[datapath]\npmd-cores = 1\npmd-cores = 2\n", 3, "duplicate knob 'pmd-cores'");
    tmp_err(fx, "[datapath]\nemc-ways = 3\n", 2, "bad value '3' for 'emc-ways' (expected 1..2)");
    tmp_err(fx, "[port p0]\ntype = dummy\nemc-insert-inv-prob = -1\n", 3,
            "bad value '-1' for 'emc-insert-inv-prob' (expected 0..1000000000)");
}

/* The keys of 'flowswitch run': keep-alive, the control socket, the PMDs'
 * priority; their defaults and their errors. */
static void test_run_keys(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    struct config cfg;
    tmp_file(fx, "run.ini", "[port p0]\ntype = dummy\n", path, sizeof path);
    load_ok(path, &cfg);
    assert_false(cfg.keepalive);
    assert_int_equal(cfg.keepalive_interval_ms, 1000);
    assert_string_equal(cfg.ctl_socket, "");
    assert_false(cfg.pmd_priority_set);
    config_free(&cfg);
    tmp_file(fx, "run2.ini",
             "[datapath]\nkeepalive = on\nkeepalive-interval = 250\n"
             "ctl-socket = /tmp/x/fs.ctl\npmd-priority = -5\n",
             path, sizeof path);
    load_ok(path, &cfg);
    assert_true(cfg.keepalive);
    assert_int_equal(cfg.keepalive_interval_ms, 250);
    assert_string_equal(cfg.ctl_socket, "/tmp/x/fs.ctl");
    assert_int_equal(cfg.ctl_socket_line, 4);
    assert_true(cfg.pmd_priority_set);
    assert_int_equal(cfg.pmd_priority, -5);
    config_free(&cfg);
    tmp_err(fx, "[datapath]\nkeepalive = yes\n", 2,
            "bad value 'yes' for 'keepalive' (expected on or off)");
    tmp_err(fx, "[datapath]\nkeepalive-interval = 0\n", 2,
            "bad value '0' for 'keepalive-interval' (expected ms, 1..3600000)");
    tmp_err(fx, "[datapath]\nkeepalive-interval = 3600001\n", 2,
            "bad value '3600001' for 'keepalive-interval' (expected ms, 1..3600000)");
    tmp_err(fx, "[datapath]\npmd-priority = -21\n", 2,
            "bad value '-21' for 'pmd-priority' (expected a nice value, -20..19)");
    tmp_err(fx, "[datapath]\npmd-priority = 20\n", 2,
            "bad value '20' for 'pmd-priority' (expected a nice value, -20..19)");
    tmp_err(fx, "[datapath]\npmd-priority = --1\n", 2,
            "bad value '--1' for 'pmd-priority' (expected a nice value, -20..19)");
    tmp_err(fx, "[datapath]\nctl-socket =\n", 2,
            "bad value '' for 'ctl-socket' (1..107 characters)");
    tmp_err(fx, "[datapath]\nkeepalive = on\nkeepalive = off\n", 3,
            "duplicate knob 'keepalive'");
}

/* A flows file as rule-load reads it: rules with their lines, blanks and
 * comments skipped; a missing file named. */
static void test_rules_read(void **state)
{
    struct fixture *fx = *state;
    char path[PATH_MAX];
    tmp_file(fx, "flows.txt",
             "# comment\n\n  priority=5,in_port=p0 actions=drop  \n\t\n"
             "in_port=p1 actions=output:p0\r\n#last\n",
             path, sizeof path);
    struct config_rules r;
    char err[PATH_MAX + 64];
    assert_int_equal(config_rules_read(path, &r, err, sizeof err), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.rules[0].text, "priority=5,in_port=p0 actions=drop");
    assert_int_equal(r.rules[0].line, 3);
    assert_string_equal(r.rules[1].text, "in_port=p1 actions=output:p0");
    assert_int_equal(r.rules[1].line, 5);
    config_rules_free(&r);
    assert_int_equal(r.n, 0);
    char missing[PATH_MAX + 16], want[PATH_MAX + 64];
    xsnprintf(missing, sizeof missing, "%s/none.txt", fx->tmp);
    assert_int_equal(config_rules_read(missing, &r, err, sizeof err), -1);
    xsnprintf(want, sizeof want, "%s: No such file or directory", missing);
    assert_string_equal(err, want);
    assert_int_equal(r.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changes_and_cache_knobs),
        cmocka_unit_test(test_good_full),
        cmocka_unit_test(test_good_minimal),
        cmocka_unit_test(test_good_edge_syntax),
        cmocka_unit_test(test_dir),
        cmocka_unit_test(test_bad_data_files),
        cmocka_unit_test(test_bad_generated),
        cmocka_unit_test(test_error_buffer),
        cmocka_unit_test(test_run_keys),
        cmocka_unit_test(test_rules_read),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
