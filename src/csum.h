/* csum.h: Internet checksum arithmetic (RFC 1071, RFC 1624).
 *
 * Conventions: a "sum" is an unfolded 32-bit ones'-complement accumulator of
 * 16-bit words read in memory order (native-endian loads), so a folded
 * result can be stored into a packet with memcpy and be correct on any
 * host. 16-bit checksum values and header fields passed in or returned are
 * likewise "as stored in the packet" (network byte order in memory), not
 * host-order numbers. */
#ifndef FS_CSUM_H
#define FS_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* Adds the ones'-complement sum of len bytes at data (any alignment, any
 * length including 0 and odd lengths; an odd last byte is padded with zero
 * on the right, as if at an even offset) to 'sum'. Returns the unfolded sum. */
uint32_t csum_partial(const void *data, size_t len, uint32_t sum);

/* Folds a sum to 16 bits and complements it: the value for the checksum
 * field. */
uint16_t csum_fold(uint32_t sum);

/* Folds without complementing (the pseudo-header value a NEEDS_CSUM
 * checksum field holds). */
uint16_t csum_fold_nocompl(uint32_t sum);

/* Adds two unfolded sums. */
uint32_t csum_add(uint32_t a, uint32_t b);

/* The checksum field value for len bytes at data. */
uint16_t csum(const void *data, size_t len);

/* IPv4 header checksum of 'ihl_bytes' at ip, computed as if the checksum
 * field were zero (ignores its current value). */
uint16_t csum_ipv4_hdr(const void *ip, size_t ihl_bytes);

/* Pseudo-header sums. Addresses in network order; l4_len = bytes of L4
 * header + payload (IPv6: the upper-layer packet length). */
uint32_t csum_pseudo_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
                          uint16_t l4_len);
uint32_t csum_pseudo_ipv6(const uint8_t src[16], const uint8_t dst[16],
                          uint8_t next_header, uint32_t l4_len);

/* Incremental update of a checksum field (RFC 1624, eqn. 3) after a 16-bit
 * or 32-bit field changed from old to new (all as stored in the packet). */
uint16_t csum_update16(uint16_t csum_field, uint16_t old_val, uint16_t new_val);
uint16_t csum_update32(uint16_t csum_field, uint32_t old_val, uint32_t new_val);
/* The same for an even-length byte range (e.g. an IPv6 address). */
uint16_t csum_update_bytes(uint16_t csum_field, const void *old_bytes,
                           const void *new_bytes, size_t len);

/* ---- Extension block (added by the csum.c owner; everything above is the
 * lead's contract, unchanged). Implementation selection for tests and
 * benchmarks, and the UDP zero rule as a helper. ---- */

/* A raw-sum kernel: same contract as csum_partial(). */
typedef uint32_t (*csum_partial_fn)(const void *data, size_t len, uint32_t sum);

enum csum_impl {
    CSUM_IMPL_PORTABLE, /* wide-accumulator C: every CPU and architecture */
    CSUM_IMPL_SSE2,     /* x86-64 only (SSE2 is baseline there) */
    CSUM_IMPL_AVX2,     /* x86-64 with AVX2, detected at run time */
    CSUM_IMPL_AVX512,   /* x86-64 with AVX-512F and BW, detected at run time */
    CSUM_IMPL_AVX512VNNI, /* the same plus AVX512-VNNI (vpdpwssd) */
    CSUM_IMPL_N
};

/* The kernel for 'impl', or NULL if this build or CPU cannot run it. All
 * kernels return sums that fold to the same checksum. */
csum_partial_fn csum_impl_fn(enum csum_impl impl);

/* Short name of 'impl' ("portable", "sse2", "avx2", "avx512",
 * "avx512vnni"); "?" if out of range. */
const char *csum_impl_name(enum csum_impl impl);

/* The implementation named 'name' (as csum_impl_name() spells it), or
 * CSUM_IMPL_N if there is none (NULL included). */
enum csum_impl csum_impl_from_name(const char *name);

/* The fastest kernel this build and CPU can run: what csum_partial()
 * resolves to on first use unless csum_impl_force() chose another. */
enum csum_impl csum_impl_best(void);

/* The implementation csum_partial() dispatches to (csum_impl_best() until
 * the first call, unless forced). */
enum csum_impl csum_impl_active(void);

/* Makes csum_partial() use 'impl' from now on (tests, benchmarks, and
 * flowswitch's FS_CSUM_KERNEL). Returns 0, or -1 (nothing changed) if this
 * build or CPU cannot run it. Meant for start-up, before packets flow: every
 * kernel gives the same sums, so a switch is harmless, only not atomic with
 * respect to calls in flight. */
int csum_impl_force(enum csum_impl impl);

/* The UDP checksum field value for a checksum computed with csum_fold():
 * a computed 0 is transmitted as 0xFFFF (RFC 768; 0 means "no checksum"
 * on IPv4 and is invalid on IPv6). Every other value is returned as is.
 * The functions above never apply this rule themselves: callers writing a
 * UDP checksum (full or after csum_update*()) must. */
uint16_t csum_udp_field(uint16_t computed);

#endif
