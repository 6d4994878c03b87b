/* csum_anchors.h: reference checksum functions bench_csum measures ours
 * against, each compiled in its own translation unit with the flags of the
 * project it comes from (see the Makefile's bench rules).
 *
 * Every function has bench_csum's signature: the 16-bit ones' complement
 * sum of data[0..len) in native word order (not complemented), folded or
 * not; 'sum' is ignored by the DPDK anchors (rte_raw_cksum() takes none). */
#ifndef FS_BENCH_CSUM_ANCHORS_H
#define FS_BENCH_CSUM_ANCHORS_H 1

#include <stddef.h>
#include <stdint.h>

/* DPDK's rte_raw_cksum() compiled as DPDK builds itself: -O3 (meson's
 * release build) with the machine flags of `pkg-config --cflags libdpdk`. */
uint32_t csum_rte_dpdk_flags(const void *data, size_t len, uint32_t sum);

/* The same source at -O3 -march=native. */
uint32_t csum_rte_native(const void *data, size_t len, uint32_t sum);

#endif
