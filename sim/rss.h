/* rss.h: receive-side scaling as a NIC computes it.
 *
 * The Toeplitz hash (Microsoft RSS) over the tuple a NIC extracts from a
 * packet, the 128-entry redirection table (RETA) a DPDK PMD fills by
 * default (entry i -> queue i % n_queues), and the queue of a hash (RETA
 * entry hash & 127, the hash's low 7 bits). The tuple is, in network
 * order: source address, destination address, then for TCP and UDP
 * (non-fragments) source port and destination port: 8 or 12 bytes for
 * IPv4, 32 or 36 for IPv6. Which types hash their ports is the NIC's
 * configuration (struct sim_rss.types); the default is what OVS and
 * testpmd ask of a PMD: IP, TCP and UDP, so TCP and UDP use four fields and
 * every other IP packet (ICMP, fragments, ...) two. Non-IP packets hash to
 * 0 (queue reta[0]), as NICs deliver them.
 *
 * Pure functions of their inputs; struct sim_rss is read-only after
 * sim_rss_init() and holds a per-key lookup table (36 x 256 words), so a
 * hash costs one table load per input byte. */
#ifndef SIM_RSS_H
#define SIM_RSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "packet.h"

#define SIM_RSS_KEY_LEN 40
#define SIM_RSS_RETA_SIZE 128
#define SIM_RSS_INPUT_MAX 36 /* IPv6 with ports; a 40-byte key covers 36 */

/* The 40-byte key of Microsoft's RSS specification, which most NICs and
 * DPDK PMDs use by default. */
extern const uint8_t sim_rss_default_key[SIM_RSS_KEY_LEN];

/* The tuple types (DPDK's RTE_ETH_RSS_{IPV4,NONFRAG_IPV4_TCP,...}). */
enum sim_rss_type {
    SIM_RSS_NONE = 0, /* not hashed: hash 0 */
    SIM_RSS_IPV4,
    SIM_RSS_IPV4_TCP,
    SIM_RSS_IPV4_UDP,
    SIM_RSS_IPV6,
    SIM_RSS_IPV6_TCP,
    SIM_RSS_IPV6_UDP,
    SIM_RSS_N_TYPES
};

#define SIM_RSS_TYPE_BIT(t) (1u << (t))
#define SIM_RSS_TYPES_DEFAULT                                                  \
    (SIM_RSS_TYPE_BIT(SIM_RSS_IPV4) | SIM_RSS_TYPE_BIT(SIM_RSS_IPV4_TCP) |     \
     SIM_RSS_TYPE_BIT(SIM_RSS_IPV4_UDP) | SIM_RSS_TYPE_BIT(SIM_RSS_IPV6) |     \
     SIM_RSS_TYPE_BIT(SIM_RSS_IPV6_TCP) | SIM_RSS_TYPE_BIT(SIM_RSS_IPV6_UDP))

/* The hash input of one packet. */
struct sim_rss_tuple {
    uint8_t type;  /* enum sim_rss_type */
    uint8_t len;   /* bytes of data: 0, 8, 12, 32 or 36 */
    uint8_t data[SIM_RSS_INPUT_MAX];
};

/* One NIC's RSS configuration. */
struct sim_rss {
    uint32_t types;     /* SIM_RSS_TYPE_BIT()s the NIC hashes */
    uint16_t n_queues;
    uint16_t reta[SIM_RSS_RETA_SIZE];
    uint8_t key[SIM_RSS_KEY_LEN];
    uint32_t tbl[SIM_RSS_INPUT_MAX][256]; /* hash of byte value v at position i */
};

/* Sets up RSS over n_queues queues (1..65535) with 'key' (NULL: the
 * default key), the default types and the default RETA. Returns 0, or -1
 * if n_queues is 0. */
int sim_rss_init(struct sim_rss *rss, const uint8_t key[SIM_RSS_KEY_LEN], uint16_t n_queues);

/* The Toeplitz hash of len bytes (at most SIM_RSS_INPUT_MAX) under 'key',
 * bit by bit as the specification states it. */
uint32_t sim_rss_toeplitz(const uint8_t key[SIM_RSS_KEY_LEN], const uint8_t *data, size_t len);

/* The tuple of an IPv4 / IPv6 packet from its fields (addresses in network
 * order, ports in host order). proto 6 (TCP) and 17 (UDP) give the
 * four-field types, anything else the two-field one; 'frag' (an IP
 * fragment) always gives two fields. Type selection by the NIC's
 * configuration happens in sim_rss_hash(). */
void sim_rss_tuple_ipv4(struct sim_rss_tuple *t, const uint8_t src[4], const uint8_t dst[4],
                        uint8_t proto, bool frag, uint16_t sport, uint16_t dport);
void sim_rss_tuple_ipv6(struct sim_rss_tuple *t, const uint8_t src[16], const uint8_t dst[16],
                        uint8_t proto, bool frag, uint16_t sport, uint16_t dport);

/* The tuple of a packet parsed by parse_pkt() (PKT_F_PARSED), from its
 * outer headers: a VXLAN packet hashes its outer IP and UDP header. A
 * packet that is not parsed, not IP, or whose L4 header is incomplete
 * gives the two-field type (IP) or SIM_RSS_NONE (anything else). */
void sim_rss_tuple_from_pkt(const struct pkt *pkt, struct sim_rss_tuple *t);

/* The NIC's hash of a tuple: a four-field type the NIC does not hash with
 * ports falls back to the two-field type; a type it does not hash at all
 * gives 0. */
uint32_t sim_rss_hash(const struct sim_rss *rss, const struct sim_rss_tuple *t);

/* The rx queue for a hash: reta[hash % SIM_RSS_RETA_SIZE]. */
static inline uint16_t sim_rss_queue(const struct sim_rss *rss, uint32_t hash)
{
    return rss->reta[hash & (SIM_RSS_RETA_SIZE - 1)];
}

#endif
