/* drop.h: the named reasons a packet can be dropped for.
 *
 * Every packet the datapath does not transmit is counted under exactly one
 * of these, so that rx + copies = tx + drops + queued always holds. */
#ifndef FS_DROP_H
#define FS_DROP_H

#include <stdint.h>

#define DROP_REASONS(X)                                                        \
    X(no_rule, "no rule matched")                                              \
    X(rule_drop, "a rule's actions dropped it")                                \
    X(parse_error, "malformed or truncated headers")                           \
    X(rx_truncated, "frame captured shorter than its length")                  \
    X(ttl_exceeded, "dec_ttl on a TTL or hop limit of 0 or 1")                 \
    X(action_error, "an action did not apply to the packet")                   \
    X(no_headroom, "no headroom to push a header")                             \
    X(tx_error, "the port's send failed")                                      \
    X(tx_full, "the port accepted none after the retries")                     \
    X(tx_down, "the output port is down or gone")                              \
    X(offload_contract, "an offload the port did not announce")                \
    X(bad_csum, "arrived with a bad checksum")                                 \
    X(csum_invalid, "a partial checksum with no usable location")              \
    X(tunnel_trunc, "VXLAN outer headers truncated")                           \
    X(tunnel_ip_options, "VXLAN outer IPv4 header with options")               \
    X(tunnel_udp_len, "VXLAN UDP length disagrees with the IP length")         \
    X(tunnel_bad_csum, "VXLAN outer IPv4 or UDP checksum wrong")               \
    X(tunnel_unknown_vni, "VXLAN for a local address with an unknown VNI")     \
    X(tunnel_bad_vxlan, "VXLAN header without the I flag")                     \
    X(tunnel_not_ethernet, "VXLAN payload too short for an Ethernet frame")    \
    X(nomem, "out of memory")

enum drop_reason {
#define DROP_ENUM_(name, desc) DROP_##name,
    DROP_REASONS(DROP_ENUM_)
#undef DROP_ENUM_
    DROP_N_REASONS
};

const char *drop_reason_name(enum drop_reason r);
const char *drop_reason_desc(enum drop_reason r);

struct drop_stats {
    uint64_t n[DROP_N_REASONS];
};

static inline uint64_t drop_stats_total(const struct drop_stats *s)
{
    uint64_t t = 0;
    for (int i = 0; i < DROP_N_REASONS; i++)
        t += s->n[i];
    return t;
}

#endif
