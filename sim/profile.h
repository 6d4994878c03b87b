/* profile.h: the simulator's cost profile.
 *
 * The engine advances a PMD's virtual time, after each rx burst, by what
 * the real core counted for that burst (packets parsed, cache hits, bytes
 * checksummed, send calls, ...) times the per-event costs of a profile.
 * A profile is a JSON file:
 *
 *   {
 *     "cpu": "AMD EPYC 7B13",          the machine it describes (string)
 *     "ghz": 3.0,                      its clock, GHz (number > 0)
 *     "description": "...",            optional: how it was made
 *     "calibration": { ... },          optional: how it was measured (any
 *                                      object; `flowswitch sim calibrate`
 *                                      writes its workloads and fit here)
 *     "costs_ns": { "poll_iteration": 15, "rx_burst": 25, ... }
 *   }
 *
 where "costs_ns" holds exactly one non-negative number of nanoseconds
 * for every event of SIM_COST_EVENTS below (fractions allowed: per-byte
 * costs are well below 1 ns; the events from SIM_COST_FIRST_OPTIONAL on
 * may be absent). Two optional members describe the fit:
 *
 *     "uncertainty_ns": { "emc_hit": 0.4, ... }   half the 5-95% interval
 *     "not_identified": [ "tunnel_push", ... ]    costs that are guesses
 *
 * Anything else is refused with "PATH:LINE: reason" naming the key (the
 * line of its first occurrence in the file), or jansson's line and column
 * for malformed JSON. sim/profiles/default.json is the built-in default profile as a
 * file; a test keeps the two equal. */
#ifndef SIM_PROFILE_H
#define SIM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The counted events: X(ENUM, "json and report name", default ns, what).
 * Adding an event is one line here (and its key in every profile file:
 * a profile without it is refused). The defaults are order-of-magnitude
 * figures for one 3 GHz x86-64 core, to be replaced by a calibrated
 * profile; their NIC driver costs are 0 (a device that costs what the
 * dummy port costs, which rx_packet and tx_packet already hold). */
#define SIM_COST_EVENTS(X)                                                             \
    X(POLL_ITER, "poll_iteration", 15.0, "one PMD poll-loop iteration, busy or idle")  \
    X(RX_BURST, "rx_burst", 25.0, "one rx burst call on an rx queue")                  \
    X(RX_PKT, "rx_packet", 3.0, "a packet received")                                   \
    X(PARSE, "parse", 6.0, "a packet parsed into a flow key")                          \
    X(PARSE_LAYOUT, "parse_layout", 3.0, "a packet validated without a flow key")      \
    X(FLOW_HASH, "flow_hash", 4.0, "a flow key hashed for the EMC and SMC")            \
    X(EMC_HIT, "emc_hit", 4.0, "an exact-match cache hit")                             \
    X(EMC_MISS, "emc_miss", 6.0, "an exact-match cache probe that missed")             \
    X(SMC_HIT, "smc_hit", 11.0, "a signature-match cache hit")                         \
    X(SMC_MISS, "smc_miss", 8.0, "a signature-match cache probe that missed")          \
    X(MEGAFLOW_HIT, "megaflow_hit", 20.0, "a megaflow classifier hit")                 \
    X(SUBTABLE_PROBE, "subtable_probe", 12.0, "a classifier subtable probed")          \
    X(UPCALL, "upcall", 1500.0, "a miss handled by the rule table (slow path)")        \
    X(MEGAFLOW_INSTALL, "megaflow_install", 400.0, "a megaflow installed")             \
    X(ACTION, "action_executed", 2.0, "an action list executed on a packet")                \
    X(COPY, "packet_copy", 20.0, "a packet copied for one more output")                \
    X(CSUM_BYTE, "sw_csum_byte", 0.011, "a byte summed to fill a checksum")           \
    X(CSUM_PKT, "sw_csum_packet", 4.0, "a checksum filled in software")               \
    X(CSUM_VERIFY, "sw_csum_verify", 4.0, "a checksum verified in software")          \
    X(CSUM_VERIFY_BYTE, "sw_csum_verify_byte", 0.011, "a byte summed to verify")      \
    X(TUNNEL_PUSH, "tunnel_push", 15.0, "a tunnel header pushed")                      \
    X(TUNNEL_POP, "tunnel_pop", 20.0, "a tunnel header popped")                        \
    X(SEND_CALL, "send_call", 40.0, "a send call on a tx queue")                       \
    X(TX_PKT, "tx_packet", 3.0, "a packet handed to a send call")                      \
    X(DROP, "drop", 5.0, "a packet dropped")                                           \
    X(NIC_RX_PKT, "nic_rx_packet", 0.0, "a NIC driver's own work for a packet received") \
    X(NIC_TX_PKT, "nic_tx_packet", 0.0, "a NIC driver's own work for a packet sent") \
    X(EMC_INSERT, "emc_insert", 20.0, "a flow inserted into the exact-match cache")   \
    X(SMC_INSERT, "smc_insert", 15.0, "a flow inserted into the signature-match cache") \
    X(VHOST_PKT, "vhost_packet", 30.0, "a packet copied through a vhost vring, either way") \
    X(VHOST_BYTE, "vhost_byte", 0.06, "a byte copied through a vhost vring, either way")

/* The events added after the first calibrated profiles: a profile without
 * one of them still loads, with the default cost, reported as not
 * identified. Every other event must be present. */
#define SIM_COST_FIRST_OPTIONAL SIM_COST_EMC_INSERT

enum sim_cost {
#define SIM_COST_ENUM_(e, name, def, desc) SIM_COST_##e,
    SIM_COST_EVENTS(SIM_COST_ENUM_)
#undef SIM_COST_ENUM_
    SIM_COST_N
};

#define SIM_PROFILE_CPU_MAX 128

struct sim_profile {
    char cpu[SIM_PROFILE_CPU_MAX];   /* NUL-terminated, truncated if longer */
    double ghz;
    double cost_ns[SIM_COST_N];
    /* Half the 5-95% bootstrap interval of each cost ("uncertainty_ns"),
     * or -1 where the profile gives none. */
    double uncertainty_ns[SIM_COST_N];
    /* True for an event the calibration could not separate from the
     * others ("not_identified", or an optional event the file omits):
     * its cost is a placeholder, and an experiment that depends on it
     * refuses to run (sim_profile_require()). */
    bool unidentified[SIM_COST_N];
};

/* The event's name in JSON and reports ("emc_hit"), and what it counts.
 * NULL for an out-of-range value. */
const char *sim_cost_name(enum sim_cost ev);
const char *sim_cost_desc(enum sim_cost ev);

/* The event named 'name', or -1. */
int sim_cost_by_name(const char *name);

/* The built-in default profile. */
void sim_profile_default(struct sim_profile *prof);

/* Reads a profile file. Returns 0, or -1 with "PATH: reason" (or
 * "PATH:LINE:COL: reason" for malformed JSON) in err; *prof is written
 * only on success. */
int sim_profile_load(const char *path, struct sim_profile *prof, char *err, size_t errlen);

/* 0 if event ev is identified in prof; else -1 with "WHO needs EVENT,
 * which PROFILE does not identify (...)" in err. */
int sim_profile_require(const struct sim_profile *prof, enum sim_cost ev, const char *who,
                        char *err, size_t errlen);

/* The virtual time in ns that counts[e] occurrences of each event cost:
 * sum of counts[e] * cost_ns[e], in event order. */
double sim_profile_apply(const struct sim_profile *prof, const uint64_t counts[SIM_COST_N]);

#endif
