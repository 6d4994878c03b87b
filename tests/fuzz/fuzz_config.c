/* fuzz_config.c: libFuzzer harness for the config parser (app/config.c:
 * config_load() over libinih, what SIGHUP re-reads while the switch runs)
 * on fuzzed file contents.
 *
 * The input is written to a memory file and loaded by its /proc path
 * (fuzz_file.h).
 * abort() flags a broken invariant:
 *  - a load fails with "path[:line]: reason" (line within the file) and an
 *    empty config, or succeeds with ports, rules and changes within their
 *    limits, every rule of which parses (config_rule_table());
 *  - config_free() leaves nothing behind (LeakSanitizer).
 * Port types are registered without a backend: the parser only asks
 * whether a type exists. */
#include "fuzz_file.h"

#include <string.h>

#include "config.h"
#include "netdev-provider.h"
#include "rules.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static const struct netdev_class fuzz_dummy = {.type = "dummy"};
static const struct netdev_class fuzz_pcap = {.type = "pcap"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool registered;
    if (!registered) {
        netdev_register(&fuzz_dummy);
        netdev_register(&fuzz_pcap);
        registered = true;
    }
    const char *path = fuzz_file(data, size);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';

    struct config cfg;
    char err[1024] = "";
    if (config_load(path, &cfg, err, sizeof err)) {
        CHECK(err[0] && cfg.n_ports == 0 && cfg.n_rules == 0 && !cfg.path);
        /* "path:line: reason": the line is one of the file's (or an
         * included file's, whose name then leads the message). */
        size_t n = strlen(path);
        if (!strncmp(err, path, n) && err[n] == ':') {
            long line = strtol(err + n + 1, NULL, 10);
            CHECK(line >= 0 && (size_t)line <= lines);
        }
        config_free(&cfg);
        return 0;
    }
    CHECK(cfg.n_ports <= CONFIG_MAX_PORTS);
    for (size_t i = 0; i < cfg.n_ports; i++)
        CHECK(cfg.ports[i].name[0] && cfg.ports[i].type[0]);
    for (size_t i = 1; i < cfg.n_changes; i++)
        CHECK(cfg.changes[i].time_ns >= cfg.changes[i - 1].time_ns);
    CHECK(cfg.keepalive_interval_ms >= 1 && cfg.keepalive_interval_ms <= 3600000);
    CHECK(!cfg.pmd_priority_set || (cfg.pmd_priority >= -20 && cfg.pmd_priority <= 19));
    struct rule_table *t = config_rule_table(&cfg, err, sizeof err);
    CHECK(t && rule_table_count(t) <= cfg.n_rules);
    rule_table_destroy(t);
    config_free(&cfg);
    return 0;
}
