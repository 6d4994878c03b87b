/* csum_anchor_rte.c: DPDK's rte_raw_cksum() as a benchmark anchor.
 *
 * rte_raw_cksum() is an inline function of <rte_ip.h>: the code that runs
 * is what the compiler makes of it in the caller's translation unit, with
 * the caller's flags. This unit holds nothing else, so the Makefile can
 * compile it with DPDK's own flags (once with the library's machine flags,
 * once with -march=native), naming the function with -DCSUM_ANCHOR_NAME. */
#include <rte_ip.h>

#include "csum_anchors.h"

uint32_t CSUM_ANCHOR_NAME(const void *data, size_t len, uint32_t sum)
{
    (void)sum;
    return rte_raw_cksum(data, len);
}
