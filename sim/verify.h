/* verify.h: the sink's verifier.
 *
 * For every frame a simulated sink receives, checks in software, with its
 * own parser and checksum code (independent of the datapath's parser,
 * checksum engine and resolver, and of any checksum state a packet
 * carries): every IPv4 header checksum and every TCP, UDP, ICMP and
 * ICMPv6 checksum, those of the frame inside VXLAN too (one level); then,
 * from the payload tag (traffic.h), that the traffic model exists, that
 * the flow is expected at this sink, that sequence numbers rise within a
 * flow at this sink (gaps, i.e. drops, are allowed), and that the frame
 * equals the one the model sent (rebuilt with sim_traffic_build()) after
 * the transforms the sink expects, byte for byte except checksum fields,
 * whose correctness is compared instead: a checksum the model got wrong
 * on purpose must arrive wrong, every other one right.
 *
 * Violations are counted by reason and the first max_listed are kept with
 * their model, flow, sequence number and a detail. An untagged frame (no
 * room for a tag, see traffic.h) is counted as such and only its
 * checksums are checked. Frames may arrive padded to the 60-byte Ethernet
 * minimum. For the order check the verifier keeps 8 bytes per flow id of
 * each model (its flows, and the ids churn added up to the highest seen;
 * ids beyond 2^25 in a hash map); it never frees or modifies the frames
 * it is given. */
#ifndef SIM_VERIFY_H
#define SIM_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traffic.h"

/* X(ENUM, "name", "what it means"). */
#define SIM_VERIFY_REASONS(X)                                                          \
    X(MALFORMED, "malformed", "headers cut short or inconsistent")                     \
    X(IP_CSUM, "ip_csum", "wrong IPv4 header checksum")                                \
    X(L4_CSUM, "l4_csum", "wrong TCP, UDP, ICMP or ICMPv6 checksum")                  \
    X(INNER_IP_CSUM, "inner_ip_csum", "wrong IPv4 header checksum inside VXLAN")      \
    X(INNER_L4_CSUM, "inner_l4_csum", "wrong L4 checksum inside VXLAN")               \
    X(BAD_CSUM_FIXED, "bad_csum_fixed", "a checksum sent wrong on purpose arrived right") \
    X(UNKNOWN_MODEL, "unknown_model", "the tag names no traffic model of this sink")   \
    X(MISFORWARDED, "misforwarded", "the flow is not expected at this sink")           \
    X(REORDERED, "reordered", "sequence number below the flow's last at this sink")    \
    X(DUPLICATE, "duplicate", "sequence number equal to the flow's last at this sink") \
    X(BAD_EXPECTATION, "bad_expectation", "an expected transform cannot apply to the packet") \
    X(LENGTH, "length_mismatch", "length differs from the packet sent, transformed")   \
    X(HEADER, "header_mismatch", "a header byte differs from the packet sent, transformed") \
    X(PAYLOAD, "payload_mismatch", "a payload byte differs from the packet sent")      \
    X(VXLAN_SPORT, "vxlan_src_port", "VXLAN outer UDP source port outside 49152..65535")

enum sim_verify_reason {
#define SIM_VERIFY_ENUM_(e, name, desc) SIM_VERIFY_##e,
    SIM_VERIFY_REASONS(SIM_VERIFY_ENUM_)
#undef SIM_VERIFY_ENUM_
    SIM_VERIFY_N
};

const char *sim_verify_reason_name(enum sim_verify_reason r);
const char *sim_verify_reason_desc(enum sim_verify_reason r);

/* What the datapath does to a packet on its way to the sink. */
enum sim_xform_kind {
    SIM_XF_MOD_DL_SRC,   /* Ethernet source := mac */
    SIM_XF_MOD_DL_DST,   /* Ethernet destination := mac */
    SIM_XF_DEC_TTL,      /* the first IP header: TTL / hop limit - 1 */
    SIM_XF_PUSH_VLAN,    /* a tag (tpid, tci) in front of the outermost one */
    SIM_XF_POP_VLAN,     /* the outermost tag removed */
    SIM_XF_VXLAN_ENCAP,  /* outer Ethernet/IP/UDP/VXLAN pushed (encap fields) */
    SIM_XF_VXLAN_DECAP,  /* outer headers of a VXLAN packet removed */
};

/* The outer headers an encapsulation must push. The outer UDP source port
 * may be any of 49152..65535, the outer IPv4 identification anything, the
 * outer UDP checksum 0 (IPv4) or correct; the rest must be as given. */
struct sim_vxlan_encap {
    bool ipv6;
    uint8_t src_mac[6], dst_mac[6];
    uint8_t src_ip[16], dst_ip[16];    /* IPv4 in the first 4 bytes */
    uint32_t vni;
    uint16_t dst_port;                 /* 4789 */
    uint8_t ttl, tos;
    bool df;                           /* IPv4 don't-fragment */
};

struct sim_xform {
    enum sim_xform_kind kind;
    uint8_t mac[6];                    /* MOD_DL_SRC / MOD_DL_DST */
    uint16_t tpid, tci;                /* PUSH_VLAN */
    struct sim_vxlan_encap encap;      /* VXLAN_ENCAP */
};

#define SIM_XFORM_MAX 4

/* The transforms expected, applied in order (n = 0: delivered unchanged). */
struct sim_expect {
    unsigned n;
    struct sim_xform xf[SIM_XFORM_MAX];
};

/* The engine's knowledge of the rules: fills *exp (given empty) for
 * packet seq of 'flow' from model 'model_id' and returns true, or returns
 * false if the flow must not reach this sink. More than SIM_XFORM_MAX
 * transforms is a bad_expectation. */
typedef bool sim_verify_expect_cb(void *aux, uint16_t model_id, const struct sim_flow_desc *flow,
                                  uint64_t seq, struct sim_expect *exp);

struct sim_verify_violation {
    uint8_t reason;     /* enum sim_verify_reason */
    bool tagged;        /* model_id, flow_id and seq are known */
    uint16_t model_id;
    uint64_t flow_id, seq;
    char detail[96];
};

struct sim_verify_stats {
    uint64_t frames;            /* frames checked */
    uint64_t ok;                /* frames without any violation */
    uint64_t untagged;          /* frames without a tag (checksums checked only) */
    uint64_t bad_csum_expected; /* frames with a checksum wrong on purpose, still wrong */
    uint64_t order_unchecked;   /* tagged frames whose order was not checked: no memory */
    uint64_t violations[SIM_VERIFY_N];
};

struct sim_verify;

/* A verifier keeping the first max_listed violations. Every frame is
 * expected unchanged until sim_verify_expect() or sim_verify_expect_fn()
 * says otherwise. NULL if out of memory. */
struct sim_verify *sim_verify_new(size_t max_listed);
void sim_verify_destroy(struct sim_verify *v);

/* Registers a model whose tags the sink may see (the model must outlive
 * v). -1 if a model with its id is registered already or no memory. */
int sim_verify_add_model(struct sim_verify *v, const struct sim_traffic *t);

/* The same expectation for every frame (copied). -1 (nothing changed) if
 * it has more than SIM_XFORM_MAX transforms. */
int sim_verify_expect(struct sim_verify *v, const struct sim_expect *exp);

/* An expectation per flow, from the engine; fn NULL restores the fixed
 * one. */
void sim_verify_expect_by_flow(struct sim_verify *v, sim_verify_expect_cb *fn, void *aux);

/* One expectation for every frame of registered model model_id (copied),
 * or, exp NULL, none of its frames may arrive (misforwarded); either
 * takes precedence over the per-flow and fixed ones. -1 (nothing
 * changed) if the model is not registered or exp has more than
 * SIM_XFORM_MAX transforms. */
int sim_verify_expect_model(struct sim_verify *v, uint16_t model_id, const struct sim_expect *exp);

/* Checks one received frame. Returns the number of violations found in it
 * (0: the frame is right). */
unsigned sim_verify_frame(struct sim_verify *v, const uint8_t *frame, size_t len);

/* The same, when the caller kept the frame the model sent (sent[0..
 * sent_len), and sent_bad, the enum sim_bad_layer the model applied):
 * compared with it instead of a rebuilt one (sim_traffic_build() gives the
 * same bytes; keeping them is cheaper than rebuilding). */
unsigned sim_verify_frame_sent(struct sim_verify *v, const uint8_t *f, size_t len,
                               const uint8_t *sent, size_t sent_len, uint8_t sent_bad);

/* A hint: a frame of (model_id, flow) is on its way; fetches what
 * checking it will read into the cache. Changes nothing. */
void sim_verify_prefetch(const struct sim_verify *v, uint16_t model_id, uint64_t flow);

const struct sim_verify_stats *sim_verify_stats(const struct sim_verify *v);

/* The first violations (at most max_listed) in the order found. */
size_t sim_verify_listed(const struct sim_verify *v, const struct sim_verify_violation **list);

#endif
