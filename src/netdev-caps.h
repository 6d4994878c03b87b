/* netdev-caps.h: the checksum offload capabilities a port announces.
 *
 * The vocabulary shared by devices (which announce and honour them), the
 * checksum resolver (which completes in software what a port cannot take)
 * and the config's "caps = ..." lists (netdev_caps_parse()). A leaf: it
 * depends on nothing. */
#ifndef FS_NETDEV_CAPS_H
#define FS_NETDEV_CAPS_H

#include <stdint.h>

/* Capability bits (struct netdev_caps). */
#define NETDEV_TX_IP_CSUM    0x0001u /* device fills the (inner) IPv4 header checksum */
#define NETDEV_TX_L4_CSUM    0x0002u /* device fills the (inner) TCP/UDP checksum */
#define NETDEV_TX_OUTER_IP_CSUM  0x0004u /* device fills a tunnel's outer IPv4 csum */
#define NETDEV_TX_OUTER_UDP_CSUM 0x0008u /* device fills a tunnel's outer UDP csum */
#define NETDEV_TX_GUEST_CSUM 0x0010u /* peer (a VM) accepts PARTIAL via NEEDS_CSUM */
#define NETDEV_RX_IP_CSUM    0x0100u /* device delivers IPv4 header csum verdicts */
#define NETDEV_RX_L4_CSUM    0x0200u /* device delivers TCP/UDP csum verdicts */

struct netdev_caps {
    uint32_t flags; /* NETDEV_TX_* | NETDEV_RX_* */
};

#endif
