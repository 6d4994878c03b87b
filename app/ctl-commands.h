/* ctl-commands.h: the commands a running flowswitch answers on its control
 * socket (what `flowswitch ctl COMMAND` sends).
 *
 * The table is served by ctl-server.h over a struct control (control.h):
 * every command runs on the server thread holding the control mutex, so
 * commands and a SIGHUP reload never interleave. Commands read PMD state
 * only from published snapshots or through requests the PMDs serve, and
 * wait for PMDs at most the control's wait_ms, so a stalled PMD delays an
 * answer by that much at worst (and the answer names it).
 *
 *   stats                 totals since start: ports, drops, caches, conservation
 *   pmd-stats             per PMD since start or the last pmd-stats-clear
 *   pmd-stats-clear       sets the pmd-stats baseline (nothing else is reset)
 *   port-show [PORT]      ports: type, caps, link, queues and PMDs, counters
 *   drops                 drops by reason, parse errors by kind
 *   rule-show             the rules in lookup order
 *   rule-add RULE         adds 'MATCH actions=...' (same priority and match:
 *                         replaced)
 *   rule-del MATCH        deletes the rule with exactly this priority and match
 *                         (as ovs-ofctl del-flows --strict); none: an error
 *   rule-load [--add] FILE  the file's rules replace every rule (--add: are
 *                         added), all or nothing, errors as FILE:LINE
 *   megaflow-show [PMD]   each PMD's megaflows (match, mask, actions)
 *   megaflow-flush        every PMD drops its megaflows, EMC and SMC entries
 *   cache-show            per PMD: cache sizes, memory, hits and hit rates
 *   set KNOB=VALUE        tx-flush-interval, tx-retries, bad-csum,
 *                         emc-insert-inv-prob, smc, keep-alive, keepalive-interval
 *   health                keep-alive state of every PMD
 * (help and version are the server's own.) Every command answers text, or
 * JSON when asked. A change (rule-*, set) answers once every PMD has taken
 * it, or says which PMD has not within wait_ms. */
#ifndef FS_CTL_COMMANDS_H
#define FS_CTL_COMMANDS_H

#include <stddef.h>

#include "control.h"
#include "ctl-server.h"

struct ctl_commands;

/* The commands' own state: the pmd-stats baseline. It exists before the
 * datapath does (the socket is bound first); ctl_commands_attach() gives
 * it the control plane (borrowed) before the server starts. NULL if out
 * of memory. */
struct ctl_commands *ctl_commands_create(void);
void ctl_commands_attach(struct ctl_commands *cc, struct control *c);
void ctl_commands_destroy(struct ctl_commands *cc);

/* The command table for ctl_server_create() (aux: the struct
 * ctl_commands). *n is set to its size. */
const struct ctl_command *ctl_commands_table(size_t *n);

#endif
