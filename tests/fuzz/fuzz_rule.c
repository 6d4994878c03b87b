/* fuzz_rule.c: libFuzzer harness for the rule parser behind `flowswitch ctl
 * rule-add` / rule-del / rule-load and the config's rules (src/rules.c):
 * text from outside, parsed against four ports.
 *
 * The input is one rule (a NUL ends it early). abort() flags a broken
 * invariant:
 *  - a parse fails with a reason and no rule, or gives a rule whose text is
 *    the input, priority 0..65535, a match that is its own masked self
 *    (match & mask == match) and a non-NULL action list;
 *  - the rule goes into a table and comes out: a lookup of its own match
 *    finds a rule at least as high, a strict delete removes exactly one;
 *  - its actions and match format without overrunning (ASan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "flow.h"
#include "rules.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

/* Ports p0..p3, and their numbers. */
static int lookup(void *aux, const char *name)
{
    (void)aux;
    if (name[0] == 'p' && name[1] >= '0' && name[1] <= '3' && !name[2])
        return name[1] - '0';
    if (name[0] >= '0' && name[0] <= '3' && !name[1])
        return name[0] - '0';
    return -1;
}

static const char *port_name(void *aux, uint16_t port)
{
    (void)aux;
    static const char *const names[] = {"p0", "p1", "p2", "p3"};
    return port < 4 ? names[port] : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* exactly sized: ASan sees any overrun */
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct rule *r = NULL;
    char err[256] = "";
    if (rule_parse(text, lookup, NULL, &r, err, sizeof err)) {
        CHECK(!r && err[0]);
        free(text);
        return 0;
    }
    CHECK(r && r->actions && !strcmp(r->text, text));
    CHECK(r->priority >= 0 && r->priority <= 65535);
    struct flow_key m;
    flow_apply_mask(&m, &r->match, &r->mask);
    CHECK(flow_equal(&m, &r->match));
    char buf[2048];
    action_list_format(r->actions, port_name, NULL, buf, sizeof buf);
    flow_format_masked(&r->match, &r->mask, buf, sizeof buf);
    flow_format_masked(&r->match, &r->mask, buf, 7);

    /* In and out of a table, next to a catch-all. */
    struct rule_table *t = rule_table_create();
    struct rule *low = NULL;
    CHECK(t && !rule_parse("priority=0 actions=drop", lookup, NULL, &low, err, sizeof err));
    rule_table_add(t, low);
    struct rule *copy = NULL;
    CHECK(!rule_parse(text, lookup, NULL, &copy, err, sizeof err));
    int prio = r->priority;
    rule_table_add(t, r);
    const struct rule *hit = rule_table_lookup(t, &m, NULL);
    CHECK(hit && hit->priority >= prio);
    /* The rule is in once (an equal catch-all was replaced by it). */
    size_t before = rule_table_count(t);
    CHECK(rule_table_delete_strict(t, copy) == 1);
    CHECK(rule_table_count(t) == before - 1);
    rule_free(copy);
    rule_table_destroy(t);
    free(text);
    return 0;
}
