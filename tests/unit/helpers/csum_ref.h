/* csum_ref.h: the naive checksum reference the tests compare against.
 *
 * Independent of src/csum.c on purpose: a big-endian byte-pair sum as RFC
 * 1071 describes it, no tricks. Values are host-order numbers read from
 * network-order bytes. Header-only, so unit tests and fuzz harnesses can
 * share it without linking anything. */
#ifndef FS_TEST_CSUM_REF_H
#define FS_TEST_CSUM_REF_H

#include <stddef.h>
#include <stdint.h>

/* The big-endian 16-bit value at p. */
static inline uint16_t g16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Stores v big-endian at p. */
static inline void p16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Unfolded sum of the 16-bit big-endian words of d[0..n) (odd tail padded). */
static inline uint64_t ref_sum(const uint8_t *d, size_t n)
{
    uint64_t s = 0;
    size_t i;
    for (i = 0; i + 1 < n; i += 2)
        s += (uint64_t)d[i] << 8 | d[i + 1];
    if (n & 1)
        s += (uint64_t)d[n - 1] << 8;
    return s;
}

/* Folds a sum to 16 bits (no complement). */
static inline uint16_t ref_fold(uint64_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

#endif
