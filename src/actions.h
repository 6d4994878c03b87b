/* actions.h: the actions a rule applies, and their execution.
 *
 * An action list is immutable once built and reference counted, so a
 * megaflow or cache entry can keep it alive after its rule is deleted.
 * Executing a list applies set-field and VLAN actions in order; each
 * output hands the packet (a copy, if more actions follow) to the output
 * callback. A list that ends without output drops the packet. */
#ifndef FS_ACTIONS_H
#define FS_ACTIONS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "drop.h"
#include "flow.h"
#include "packet.h"

enum action_type {
    ACT_OUTPUT,       /* u.port */
    ACT_SET_DL_SRC,   /* u.mac */
    ACT_SET_DL_DST,   /* u.mac */
    ACT_SET_NW_SRC,   /* u.ip4 (IPv4 only) */
    ACT_SET_NW_DST,   /* u.ip4 */
    ACT_SET_NW_TOS,   /* u.u8: DSCP bits (low 2 ECN bits kept) */
    ACT_SET_TP_SRC,   /* u.u16 (TCP/UDP/SCTP) */
    ACT_SET_TP_DST,   /* u.u16 */
    ACT_PUSH_VLAN,    /* u.u16: TPID; the new tag copies the outer TCI, or 0 */
    ACT_SET_VLAN_VID, /* u.u16: VID of the outer tag (pushes 0x8100 if none) */
    ACT_SET_VLAN_PCP, /* u.u8 */
    ACT_POP_VLAN,
    ACT_DEC_TTL,
    ACT_SET_TUNNEL,   /* u.ip4 (host order): VNI for vni = flow tunnel ports */
    ACT_N_TYPES
};

struct action {
    uint8_t type; /* enum action_type */
    union {
        uint16_t port; /* datapath port number */
        uint8_t mac[6];
        uint32_t ip4; /* network order */
        uint16_t u16; /* host order */
        uint8_t u8;
    } u;
};

struct action_list {
    atomic_uint refcnt;
    unsigned n;
    struct action a[];
};

/* A list of n actions (copied), refcnt 1. NULL on allocation failure. */
struct action_list *action_list_create(const struct action *acts, unsigned n);
struct action_list *action_list_ref(struct action_list *l);
void action_list_unref(struct action_list *l);

/* Writes the ovs-ofctl rendering ("mod_dl_src:..,output:p1", "drop").
 * port_name maps port numbers to names (NULL: numbers are printed). */
void action_list_format(const struct action_list *l,
                        const char *(*port_name)(void *aux, uint16_t port),
                        void *aux, char *buf, size_t size);

/* What execution reports back to the datapath. */
struct action_ctx {
    void *aux;
    /* Takes ownership of pkt. */
    void (*output)(void *aux, struct pkt *pkt, uint16_t port);
    /* Takes ownership of pkt and counts it. */
    void (*drop)(void *aux, struct pkt *pkt, enum drop_reason reason);
    uint64_t copies; /* packets created by outputs that were not the last */
};

/* Applies 'l' to pkt (parsed; key is its flow key, updated as headers
 * change). Consumes pkt: every path ends in output or drop. */
void actions_execute(struct action_ctx *ctx, struct pkt *pkt,
                     struct flow_key *key, const struct action_list *l);

#endif
