/* rules.h: the rule table (the slow path) and the ovs-ofctl rule syntax.
 *
 * A rule is "match actions=list" as ovs-ofctl writes flows, e.g.
 *   priority=100,in_port=p0,ip,nw_dst=10.0.0.0/8,tcp,tp_dst=80 actions=output:p1
 * A lookup returns the highest-priority matching rule (ties: the earlier
 * added) and accumulates into a mask the bits that decided it, so a
 * megaflow installed with that mask can never shadow a higher-priority
 * rule. */
#ifndef FS_RULES_H
#define FS_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actions.h"
#include "flow.h"

#define RULE_DEFAULT_PRIORITY 32768
#define RULE_MAX_ACTIONS 64

struct rule {
    int priority;              /* 0..65535 */
    uint64_t seq;              /* insertion order, breaks priority ties */
    struct flow_key match;     /* pre-masked */
    struct flow_mask mask;
    struct action_list *actions; /* owned reference; n == 0 means drop */
    char *text;                /* the rule as written (owned) */
    int line;                  /* config line, 0 if none */
};

/* Maps a port name (or decimal number) to a port number, -1 if unknown. */
typedef int rule_port_lookup_fn(void *aux, const char *name);

/* Parses one rule. On success *out is a new rule (free with rule_free). On
 * failure returns -1 with a one-line reason in err, e.g.
 * "tp_dst requires tcp, udp or sctp" or "unknown field 'nw_dts'". */
int rule_parse(const char *text, rule_port_lookup_fn *lookup, void *aux,
               struct rule **out, char *err, size_t errlen);

void rule_free(struct rule *r);

struct rule_table;

struct rule_table *rule_table_create(void);
void rule_table_destroy(struct rule_table *t);

/* A copy of t with the same rules, order and version (rules share their
 * action lists). Editing the copy bumps its version past t's, so caches
 * built on t see the copy as a change. NULL if out of memory. */
struct rule_table *rule_table_clone(const struct rule_table *t);

/* Adds r. A rule with the same priority, match and mask is replaced
 * (OpenFlow "add" semantics). Returns 0: the table owns r, the version is
 * bumped. Returns -1 when the table cannot grow (out of memory): t is
 * unchanged and r is still the caller's. */
int rule_table_add(struct rule_table *t, struct rule *r);

/* Makes room for 'more' rules beyond the ones t holds, so that the next
 * 'more' rule_table_add() calls cannot fail (deletes and clears in between
 * keep the room). Returns 0, or -1 when out of memory (t unchanged): an
 * edit of several rules reserves first, and is then applied whole. */
int rule_table_reserve(struct rule_table *t, size_t more);

/* Deletes the rules whose priority, match and mask equal r's ("strict"
 * delete). Returns how many were removed. Bumps the version if any. */
unsigned rule_table_delete_strict(struct rule_table *t, const struct rule *r);

/* Removes every rule. Bumps the version. */
void rule_table_clear(struct rule_table *t);

/* The highest-priority rule matching key, or NULL. If wc is not NULL, the
 * bits that decided are OR-ed into it: the winner's whole mask, and for
 * every rule examined before it, bits on which key differs from that rule
 * (flow_wc_disprove()). Every key equal to key on wc gets the same
 * answer. */
const struct rule *rule_table_lookup(const struct rule_table *t,
                                     const struct flow_key *key,
                                     struct flow_mask *wc);

/* Changes on every add/delete/clear; caches compare it. */
uint64_t rule_table_version(const struct rule_table *t);

size_t rule_table_count(const struct rule_table *t);

/* Iteration in lookup order (priority descending, then seq). */
const struct rule *rule_table_at(const struct rule_table *t, size_t i);

#endif
