/* csum.c: Internet checksum arithmetic (RFC 1071, RFC 1624).
 *
 * All sums are over 16-bit words read in memory order with native-endian
 * loads (see csum.h), so no byte swapping is ever needed.
 *
 * The kernels do not add 16-bit words one by one. They rely on
 * 2^16 == 1 (mod 2^16 - 1): any exact integer sum of 32-bit (or 64-bit)
 * chunks of the buffer, each chunk starting at an even offset, is congruent
 * modulo 0xFFFF to the sum of its 16-bit words, and it is zero only if all
 * the data is zero. Folding it with end-around carries therefore gives the
 * same ones'-complement sum, including the 0x0000 / 0xFFFF distinction.
 *
 * Exact sum of the 32-bit halves of 64-bit words without add-with-carry:
 * keep S = sum of the words modulo 2^64 (plain wrapping adds) and
 * H = sum of their high halves (w >> 32, exact). Then the sum of the low
 * halves is exactly S - (H << 32) (mod 2^64), as long as fewer than 2^32
 * words went in, and the total is that plus H. That is 3 cheap operations
 * per 8 bytes and no carry chain (the portable kernel); the driver caps a
 * pass at CSUM_CHUNK bytes so the bounds always hold. The x86-64 kernels
 * use a pmaddwd method instead, described with them. */
#include "csum.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* Build with -DCSUM_NO_SIMD to compile only the portable kernel (what
 * every non-x86-64 build gets), e.g. to test that configuration. */
#if defined(__x86_64__) && !defined(CSUM_NO_SIMD)
#include <immintrin.h>
#define CSUM_X86 1
#else
#define CSUM_X86 0
#endif

/* A kernel pass covers at most this many bytes (even, so the word framing
 * is unchanged between passes): at most 2^27 64-bit words per pass, far
 * inside the 2^31 bound of the S/H technique. */
#define CSUM_CHUNK ((size_t)1 << 30)

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The last byte, padded with a zero byte on the right (memory order). */
static inline uint16_t ld8pad(const uint8_t *p)
{
    uint16_t v = 0;
    memcpy(&v, p, 1);
    return v;
}

/* End-around-carry fold of an exact 64-bit sum to 32 bits (never 0 for a
 * non-zero input). */
static inline uint32_t fold64(uint64_t t)
{
    t = (t & 0xffffffffu) + (t >> 32);
    t = (t & 0xffffffffu) + (t >> 32);
    return (uint32_t)t;
}

/* Ones'-complement add of two 32-bit sums. */
static inline uint32_t add32(uint32_t a, uint32_t b)
{
    uint32_t r = a + b;
    return r + (r < a);
}

/* Exact value from the S/H pair (see the file comment). */
static inline uint64_t sh_total(uint64_t s, uint64_t h)
{
    return (s - (h << 32)) + h;
}

/* Sum of the last len < 8 bytes at p (p at an even offset of the buffer),
 * exact. */
static inline uint64_t tail_lt8(const uint8_t *p, size_t len)
{
    uint64_t t = 0;
    if (len & 4) {
        t += ld32(p);
        p += 4;
    }
    if (len & 2) {
        t += ld16(p);
        p += 2;
    }
    if (len & 1)
        t += ld8pad(p);
    return t;
}

/* ---- Portable kernel ---------------------------------------------------- */

/* Exact (see file comment) sum of len <= CSUM_CHUNK bytes. Four S/H pairs
 * so the four word streams are independent dependency chains. */
static uint64_t sum_portable(const uint8_t *p, size_t len)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    uint64_t h0 = 0, h1 = 0, h2 = 0, h3 = 0;

    while (len >= 32) {
        uint64_t w0 = ld64(p), w1 = ld64(p + 8);
        uint64_t w2 = ld64(p + 16), w3 = ld64(p + 24);
        s0 += w0;
        h0 += w0 >> 32;
        s1 += w1;
        h1 += w1 >> 32;
        s2 += w2;
        h2 += w2 >> 32;
        s3 += w3;
        h3 += w3 >> 32;
        p += 32;
        len -= 32;
    }
    while (len >= 8) {
        uint64_t w = ld64(p);
        s0 += w;
        h0 += w >> 32;
        p += 8;
        len -= 8;
    }
    uint64_t s = s0 + s1 + s2 + s3;
    uint64_t h = h0 + h1 + h2 + h3;
    return sh_total(s, h) + tail_lt8(p, len);
}

static uint32_t csum_partial_portable(const void *data, size_t len,
                                      uint32_t sum)
{
    const uint8_t *p = data;
    while (len > CSUM_CHUNK) {
        sum = add32(sum, fold64(sum_portable(p, CSUM_CHUNK)));
        p += CSUM_CHUNK;
        len -= CSUM_CHUNK;
    }
    return add32(sum, fold64(sum_portable(p, len)));
}

/* ---- x86-64 SIMD kernels --------------------------------------------------
 *
 * Per vector: flip the sign bit of every 16-bit word (w ^ 0x8000 is w - 32768
 * as a signed word) and multiply-add adjacent words with 1 (pmaddwd): each
 * 32-bit lane gets w0 + w1 - 65536 exactly, no carry is lost. That is 3 ALU
 * operations per vector (xor with a folded load, pmaddwd, add) and no
 * dependency longer than one add per accumulator. The lanes are accumulated
 * with wrapping 32-bit adds and the 32768 per word taken away is added back
 * once per block: a block is at most CSUM_SIMD_BLOCK_MAX bytes, whose exact
 * sum is below 2^32, so arithmetic modulo 2^32 gives it exactly.
 *
 * The bytes after the last whole 128-byte (AVX2) or 64-byte (SSE2) step are
 * summed branch-free with one more step over the LAST 128 (64) bytes of the
 * buffer, the bytes already counted masked to zero (a zero word contributes
 * exactly what the correction adds back). Buffers shorter than one step use
 * whole vectors and one masked vector ending at the last byte. No byte
 * outside [data, data + len) is ever read.
 *
 * Mid-size and large buffers (AVX2, >= CSUM_MID_MIN bytes) also use the
 * integer units, idle otherwise, with an add-with-carry chain over part of
 * the data, and align the vector loads (see avx2_mid(), avx2_wide(),
 * avx2_large()). */
#if CSUM_X86

/* gcc with an old -mtune (e.g. DPDK's pkg-config flags carry -march=corei7)
 * splits every unaligned 256-bit load in two, halving the kernel's speed;
 * the run-time dispatched code is tuned generically instead. clang does not
 * split and has no tune= attribute. */
#if defined(__clang__)
#define CSUM_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define CSUM_TARGET_AVX2 __attribute__((target("avx2,tune=generic")))
#endif

/* 128 x 0x00 then 128 x 0xFF. A vector loaded at csum_mask_tab + 128 - S + r
 * + k * W is the mask for vector k of an S-byte step that keeps only its last
 * r bytes (0 < r < S). */
static const uint8_t csum_mask_tab[256] __attribute__((aligned(64))) = {
    [128] =
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* Largest block whose exact sum fits in 32 bits: (2^17 / 2) words of at
 * most 0xFFFF. Long buffers are cut into CSUM_SIMD_BLOCK bytes and a last
 * block shorter than CSUM_SIMD_BLOCK_MAX. */
#define CSUM_SIMD_BLOCK_MAX ((size_t)128 * 1024)
#define CSUM_SIMD_BLOCK ((size_t)64 * 1024)

/* From this length on, the AVX2 kernel takes the large-buffer path. Below
 * it the mid-size kernel is as fast or faster (docs/performance.md). */
#define CSUM_AVX2_LARGE ((size_t)5120)

CSUM_TARGET_AVX2 static inline __m256i avx2_ld(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* w0 + w1 - 65536 per 32-bit lane. */
CSUM_TARGET_AVX2 static inline __m256i avx2_pairs(__m256i v)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i bias = _mm256_slli_epi16(ones, 15);
    return _mm256_madd_epi16(_mm256_xor_si256(v, bias), ones);
}

CSUM_TARGET_AVX2 static inline __m256i avx2_masked(const uint8_t *p,
                                                   const uint8_t *m)
{
    return avx2_pairs(_mm256_and_si256(avx2_ld(p), avx2_ld(m)));
}

/* The exact sum from two accumulators that took nvec vectors' pairs
 * (below 2^32 by the block bound, so modulo 2^32 is exact). */
CSUM_TARGET_AVX2 static inline uint32_t avx2_reduce(__m256i a0, __m256i a1,
                                                    uint32_t nvec)
{
    __m256i a = _mm256_add_epi32(a0, a1);
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(a),
                              _mm256_extracti128_si256(a, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    /* Every vector lost 16 * 32768 = 2^19. */
    return (uint32_t)_mm_cvtsi128_si32(x) + (nvec << 19);
}

/* Adds the pairs of an even len >= 128 bytes at p to the accumulators;
 * *nvec counts the vectors. */
CSUM_TARGET_AVX2 __attribute__((always_inline)) static inline void
avx2_accum(const uint8_t *p, size_t len, __m256i *acc0, __m256i *acc1,
           uint32_t *nvec)
{
    const uint8_t *end = p + len, *stop = p + (len & ~(size_t)127);
    __m256i a0 = *acc0, a1 = *acc1;
    size_t r = len & 127;

    *nvec += (uint32_t)(len / 128) * 4;
    do {
        a0 = _mm256_add_epi32(a0, avx2_pairs(avx2_ld(p)));
        a1 = _mm256_add_epi32(a1, avx2_pairs(avx2_ld(p + 32)));
        a0 = _mm256_add_epi32(a0, avx2_pairs(avx2_ld(p + 64)));
        a1 = _mm256_add_epi32(a1, avx2_pairs(avx2_ld(p + 96)));
        p += 128;
    } while (p != stop);
    if (r) { /* the last 128 bytes, keeping their last r */
        const uint8_t *q = end - 128, *m = csum_mask_tab + r;
        a0 = _mm256_add_epi32(a0, avx2_masked(q, m));
        a1 = _mm256_add_epi32(a1, avx2_masked(q + 32, m + 32));
        a0 = _mm256_add_epi32(a0, avx2_masked(q + 64, m + 64));
        a1 = _mm256_add_epi32(a1, avx2_masked(q + 96, m + 96));
        *nvec += 4;
    }
    *acc0 = a0;
    *acc1 = a1;
}

/* Exact sum of an even 32 <= len <= CSUM_SIMD_BLOCK_MAX bytes. */
CSUM_TARGET_AVX2 __attribute__((always_inline)) static inline uint32_t
avx2_block(const uint8_t *p, size_t len)
{
    __m256i a0, a1 = _mm256_setzero_si256();
    uint32_t nvec = 0;

    if (len >= 128) {
        a0 = a1;
        avx2_accum(p, len, &a0, &a1, &nvec);
    } else { /* whole vectors, then the last 32 bytes */
        const uint8_t *end = p + len;
        nvec = (uint32_t)(len / 32);
        a0 = avx2_pairs(avx2_ld(p));
        if (len >= 64)
            a1 = avx2_pairs(avx2_ld(p + 32));
        if (len >= 96)
            a0 = _mm256_add_epi32(a0, avx2_pairs(avx2_ld(p + 64)));
        size_t r = len & 31;
        if (r) { /* keeping the last r of the last 32 bytes */
            a1 = _mm256_add_epi32(
                a1, avx2_masked(end - 32, csum_mask_tab + 96 + r));
            nvec++;
        }
    }
    return avx2_reduce(a0, a1, nvec);
}

/* Mid-size kernel (CSUM_MID_MIN <= len < CSUM_AVX2_LARGE, any parity and
 * alignment).
 *
 * Layout. The vector loads are aligned: the 1..32 head bytes from p up to
 * the first 32-byte boundary q after p are one vector loaded at p, kept and
 * (for an odd head) byte-swapped within each word by one vpshufb with a row
 * of csum_head_tab, so that the whole sum is taken in the word framing of q;
 * the result is rotated back by 8 bits at the end (a rotate of a
 * ones'-complement sum is a byte swap, RFC 1071). An aligned p thus gets a
 * whole useful head vector (row 32 keeps everything), not an all-masked one.
 * From q, m = n / 320 loop steps each sum 8 vectors (256 bytes, going up
 * from q, into 2 accumulators) and 8 words with an add-with-carry chain (64
 * bytes, going DOWN from the even end e): both streams start at addresses
 * known at entry, so neither waits for the division. After the loop the
 * bytes between the two regions (< 320) are summed with whole vectors (bit
 * tests of rem / 32) and one aligned vector keeping its first rem % 32 bytes
 * (an even row of csum_head_tab). The chain starts with 'sum' (rotated into
 * q's framing) and a last odd byte; right after the loop it is folded to 17
 * bits on the integer side, while the vector pipes still work on the gap
 * vectors, and added to the reduced vector total at the very end. The
 * 2^19-per-vector correction starts in lane 0 of the second accumulator.
 * The exact total stays below 2^32 at these sizes.
 *
 * At these sizes calls overlap only partly, so the latency from entry to
 * result counts as much as the operation count: hence the chain folded off
 * the vector path and joined with a single add. The variants measured
 * against this layout are in docs/performance.md. */
#define CSUM_MID_MIN ((size_t)1200)
#define CSUM_MID_VEC 256u
#define CSUM_MID_ADC 64u
#define CSUM_MID_STEP (CSUM_MID_VEC + CSUM_MID_ADC)

/* Row h (0..32): a vpshufb control keeping the first h bytes of a vector
 * (0x80 clears a byte), each moved to the other byte of its 16-bit word when
 * h is odd (the words never cross the 16-byte lanes vpshufb works in). */
#define CSUM_HC_SRC(h, j) ((j) ^ ((h) & 1))
#define CSUM_HC(h, j)                                                          \
    (CSUM_HC_SRC(h, j) < (h) ? (CSUM_HC_SRC(h, j) & 15) : 0x80)
#define CSUM_HC8(h, j)                                                         \
    CSUM_HC(h, j), CSUM_HC(h, j + 1), CSUM_HC(h, j + 2), CSUM_HC(h, j + 3),    \
        CSUM_HC(h, j + 4), CSUM_HC(h, j + 5), CSUM_HC(h, j + 6),               \
        CSUM_HC(h, j + 7)
#define CSUM_HCROW(h)                                                          \
    CSUM_HC8(h, 0), CSUM_HC8(h, 8), CSUM_HC8(h, 16), CSUM_HC8(h, 24)
#define CSUM_HCROW4(h)                                                         \
    CSUM_HCROW(h), CSUM_HCROW(h + 1), CSUM_HCROW(h + 2), CSUM_HCROW(h + 3)
static const uint8_t csum_head_tab[33 * 32] __attribute__((aligned(64))) = {
    CSUM_HCROW4(0),  CSUM_HCROW4(4),  CSUM_HCROW4(8),  CSUM_HCROW4(12),
    CSUM_HCROW4(16), CSUM_HCROW4(20), CSUM_HCROW4(24), CSUM_HCROW4(28),
    CSUM_HCROW(32)};

/* One vector at off(v) into accumulator a (t: temporary); ymm6 holds 1 and
 * ymm7 0x8000 in every word. */
#define CSUM_MID_V(off, t, a)                                                  \
    "vpxor " #off "(%[v]), %%ymm7, %%" #t "\n\t"                              \
    "vpmaddwd %%ymm6, %%" #t ", %%" #t "\n\t"                                 \
    "vpaddd %%" #t ", %%" #a ", %%" #a "\n\t"
#define CSUM_MID_A(off) "adcq " #off "(%[e]), %[s]\n\t"

/* add32(sum, the sum of the len bytes at p). The whole vector and carry part
 * is one asm block: the compiler neither reassociates the accumulators nor
 * touches the carry flag, and the constants are made in registers. */
CSUM_TARGET_AVX2 __attribute__((noinline)) static uint32_t
avx2_mid(const uint8_t *p, size_t len, uint32_t sum)
{
    const uint8_t *end = p + len;
    size_t head = 32 - ((uintptr_t)p & 31); /* 1..32 */
    const uint8_t *q = p + head, *v = q;
    size_t n = (size_t)(end - q);
    unsigned rot = (unsigned)((uintptr_t)p & 1) * 8; /* head & 1, times 8 */
    /* The chain starts with 'sum' taken to q's framing and a last odd byte
     * (at an even offset from q). */
    uint64_t s = (uint64_t)((sum >> rot) | (sum << (-rot & 31))) +
                 ((n & 1) ? end[-1] : 0);
    n &= ~(size_t)1;
    const uint8_t *e = q + n;
    size_t m = n / CSUM_MID_STEP, rem = n - CSUM_MID_STEP * m;
    size_t vr = rem / 32;
    const uint8_t *hc = csum_head_tab + 32 * head;
    const uint8_t *gc = csum_head_tab + 32 * (rem & 31); /* even row */
    const uint8_t *t = p;
    uint32_t vs;

    __asm__("vpcmpeqw %%ymm6, %%ymm6, %%ymm6\n\t"
            "clc\n\t"
            "vpsrlw $15, %%ymm6, %%ymm6\n\t"
            "vmovdqu (%[t]), %%ymm0\n\t"
            "vpsllw $15, %%ymm6, %%ymm7\n\t"
            "vpshufb (%[hc]), %%ymm0, %%ymm0\n\t"
            /* head and gap vectors, 8 m loop vectors, vr more: each lost
             * 2^19, added back in lane 0 of the second accumulator */
            "leal 2(%k[vr], %k[m], 8), %k[t]\n\t"
            "vpxor %%ymm7, %%ymm0, %%ymm0\n\t"
            "shll $19, %k[t]\n\t"
            "vpmaddwd %%ymm6, %%ymm0, %%ymm0\n\t"
            "vmovd %k[t], %%xmm1\n"
            "5:\n\t"
            CSUM_MID_V(0, ymm4, ymm0) CSUM_MID_A(-8)
            CSUM_MID_V(32, ymm5, ymm1) CSUM_MID_A(-16)
            CSUM_MID_V(64, ymm8, ymm0) CSUM_MID_A(-24)
            CSUM_MID_V(96, ymm9, ymm1) CSUM_MID_A(-32)
            CSUM_MID_V(128, ymm4, ymm0) CSUM_MID_A(-40)
            CSUM_MID_V(160, ymm5, ymm1) CSUM_MID_A(-48)
            CSUM_MID_V(192, ymm8, ymm0) CSUM_MID_A(-56)
            CSUM_MID_V(224, ymm9, ymm1) CSUM_MID_A(-64)
            "leaq 256(%[v]), %[v]\n\t"
            "leaq -64(%[e]), %[e]\n\t"
            "decq %[m]\n\t" /* leaves CF alone */
            "jnz 5b\n\t"
            "adcq $0, %[s]\n\t" /* end-around carry: twice, as the */
            "adcq $0, %[s]\n\t" /* first can carry out only to 0 */
            /* the chain folded to 17 bits (0 only if s is), on the integer
             * side, off the vector path */
            "movq %[s], %[t]\n\t"
            "shrq $32, %[t]\n\t"
            "addl %k[s], %k[t]\n\t"
            "adcl $0, %k[t]\n\t"
            "movzwl %w[t], %k[s]\n\t"
            "shrl $16, %k[t]\n\t"
            "addl %k[t], %k[s]\n\t"
            "testb $8, %b[vr]\n\t"
            "jz 1f\n\t"
            CSUM_MID_V(0, ymm4, ymm0) CSUM_MID_V(32, ymm5, ymm1)
            CSUM_MID_V(64, ymm8, ymm0) CSUM_MID_V(96, ymm9, ymm1)
            CSUM_MID_V(128, ymm4, ymm0) CSUM_MID_V(160, ymm5, ymm1)
            CSUM_MID_V(192, ymm8, ymm0) CSUM_MID_V(224, ymm9, ymm1)
            "addq $256, %[v]\n"
            "1:\n\t"
            "testb $4, %b[vr]\n\t"
            "jz 2f\n\t"
            CSUM_MID_V(0, ymm4, ymm0) CSUM_MID_V(32, ymm5, ymm1)
            CSUM_MID_V(64, ymm8, ymm0) CSUM_MID_V(96, ymm9, ymm1)
            "addq $128, %[v]\n"
            "2:\n\t"
            "testb $2, %b[vr]\n\t"
            "jz 3f\n\t"
            CSUM_MID_V(0, ymm4, ymm0) CSUM_MID_V(32, ymm5, ymm1)
            "addq $64, %[v]\n"
            "3:\n\t"
            "testb $1, %b[vr]\n\t"
            "jz 4f\n\t"
            CSUM_MID_V(0, ymm4, ymm0)
            "addq $32, %[v]\n"
            "4:\n\t"
            /* the gap vector: first rem % 32 bytes at v (v + 32 <= end) */
            "vmovdqu (%[v]), %%ymm4\n\t"
            "vpshufb (%[gc]), %%ymm4, %%ymm4\n\t"
            "vpxor %%ymm7, %%ymm4, %%ymm4\n\t"
            "vpmaddwd %%ymm6, %%ymm4, %%ymm4\n\t"
            "vpaddd %%ymm4, %%ymm1, %%ymm1\n\t"
            "vpaddd %%ymm1, %%ymm0, %%ymm0\n\t"
            "vextracti128 $1, %%ymm0, %%xmm1\n\t"
            "vpaddd %%xmm1, %%xmm0, %%xmm0\n\t"
            "vpshufd $0x4e, %%xmm0, %%xmm1\n\t"
            "vpaddd %%xmm1, %%xmm0, %%xmm0\n\t"
            "vpshufd $0xb1, %%xmm0, %%xmm1\n\t"
            "vpaddd %%xmm1, %%xmm0, %%xmm0\n\t"
            "vmovd %%xmm0, %[vs]\n\t"
            "vzeroupper"
            : [s] "+r"(s), [v] "+r"(v), [e] "+r"(e), [m] "+r"(m),
              [vr] "+r"(vr), [t] "+r"(t), [vs] "=r"(vs)
            : [hc] "r"(hc), [gc] "r"(gc)
            : "cc", "memory", "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7",
              "xmm8", "xmm9");
#undef CSUM_MID_V
#undef CSUM_MID_A
    /* vs + s: the exact sum in q's framing, back to p's. */
    vs += (uint32_t)s;
    return (vs << rot) | (vs >> (-rot & 31));
}

/* Large-buffer kernel. One loop step is 256 bytes with the vector method (8
 * vectors, 4 accumulators, 24 vector operations: 6 cycles on the 4 vector
 * pipes) plus, on the integer units, 48 bytes with an add-with-carry chain
 * (6 x adc from memory, 1 per cycle: 6 cycles, in parallel). The adc words
 * are the LAST 48 * k bytes of the buffer, the vectors the first 256 * k;
 * the gap between them (< 304 bytes) is summed with whole vectors and one
 * masked vector ending at the start of the adc region, so there is no
 * separate tail pass and no second reduction. The chain starts with 'sum'
 * and is folded to 17 bits on the integer side while the vector tail and
 * reduction run, so only one add follows the reduction.
 *
 * The loop is bound by the vector pipes: the exact sum needs 3 vector
 * operations per 32 bytes. The adc chain uses integer units that are idle
 * otherwise; more adc words do not help, because integer loads slow the
 * vector side. The measurements and the formulations tried are in
 * docs/performance.md.
 *
 * Sum of an even CSUM_WIDE_STEP <= len <= CSUM_SIMD_BLOCK_MAX bytes added to
 * 'sum', folded to 32 bits, 0 only if all zero. */
#define CSUM_WIDE_VEC 256u
#define CSUM_WIDE_ADC 48u
#define CSUM_WIDE_STEP (CSUM_WIDE_VEC + CSUM_WIDE_ADC)

CSUM_TARGET_AVX2 __attribute__((noinline)) static uint32_t
avx2_wide(const uint8_t *p, size_t len, uint32_t sum)
{
    size_t k = len / CSUM_WIDE_STEP, n = k;
    const uint8_t *q = p + len - CSUM_WIDE_ADC * k;
    const uint8_t *r = p + CSUM_WIDE_VEC * k;
    size_t rest = (size_t)(q - r);
    __m256i ones, bias, a0, a1, a2, a3, t0, t1, t2, t3;
    uint64_t s = sum; /* the chain starts with 'sum' */

    __asm__("vpcmpeqw %[ones], %[ones], %[ones]\n\t"
            "vpxor %[a0], %[a0], %[a0]\n\t"
            "vpsrlw $15, %[ones], %[ones]\n\t"
            "vpxor %[a1], %[a1], %[a1]\n\t"
            "vpsllw $15, %[ones], %[bias]\n\t"
            "vpxor %[a2], %[a2], %[a2]\n\t"
            "vpxor %[a3], %[a3], %[a3]\n\t"
            "clc\n\t"
            ".p2align 4\n"
            "1:\n\t"
            "vpxor (%[p]), %[bias], %[t0]\n\t"
            "vpxor 32(%[p]), %[bias], %[t1]\n\t"
            "vpmaddwd %[ones], %[t0], %[t0]\n\t"
            "vpmaddwd %[ones], %[t1], %[t1]\n\t"
            "vpaddd %[t0], %[a0], %[a0]\n\t"
            "vpaddd %[t1], %[a1], %[a1]\n\t"
            "adcq (%[q]), %[s]\n\t"
            "adcq 8(%[q]), %[s]\n\t"
            "vpxor 64(%[p]), %[bias], %[t2]\n\t"
            "vpxor 96(%[p]), %[bias], %[t3]\n\t"
            "vpmaddwd %[ones], %[t2], %[t2]\n\t"
            "vpmaddwd %[ones], %[t3], %[t3]\n\t"
            "vpaddd %[t2], %[a2], %[a2]\n\t"
            "vpaddd %[t3], %[a3], %[a3]\n\t"
            "adcq 16(%[q]), %[s]\n\t"
            "adcq 24(%[q]), %[s]\n\t"
            "vpxor 128(%[p]), %[bias], %[t0]\n\t"
            "vpxor 160(%[p]), %[bias], %[t1]\n\t"
            "vpmaddwd %[ones], %[t0], %[t0]\n\t"
            "vpmaddwd %[ones], %[t1], %[t1]\n\t"
            "vpaddd %[t0], %[a0], %[a0]\n\t"
            "vpaddd %[t1], %[a1], %[a1]\n\t"
            "adcq 32(%[q]), %[s]\n\t"
            "adcq 40(%[q]), %[s]\n\t"
            "vpxor 192(%[p]), %[bias], %[t2]\n\t"
            "vpxor 224(%[p]), %[bias], %[t3]\n\t"
            "vpmaddwd %[ones], %[t2], %[t2]\n\t"
            "vpmaddwd %[ones], %[t3], %[t3]\n\t"
            "vpaddd %[t2], %[a2], %[a2]\n\t"
            "vpaddd %[t3], %[a3], %[a3]\n\t"
            "leaq 256(%[p]), %[p]\n\t"
            "leaq 48(%[q]), %[q]\n\t"
            "decq %[n]\n\t"
            "jnz 1b\n\t"
            "adcq $0, %[s]\n\t"
            "adcq $0, %[s]"
            : [p] "+r"(p), [q] "+r"(q), [n] "+r"(n), [s] "+r"(s),
              [ones] "=&x"(ones), [bias] "=&x"(bias), [a0] "=&x"(a0),
              [a1] "=&x"(a1), [a2] "=&x"(a2), [a3] "=&x"(a3),
              [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3)
            :
            : "cc", "memory");

    /* p == r now: the whole vectors of [r, r + rest), then the last
     * rest % 32 bytes before the adc region (masked, ending at r + rest; at
     * least 256 bytes of vectors precede it, so the load stays inside). */
    const uint8_t *e = r + rest;
    uint32_t nvec = (uint32_t)(k * (CSUM_WIDE_VEC / 32) + rest / 32);
    for (; p + 64 <= e; p += 64) {
        a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_xor_si256(avx2_ld(p), bias), ones));
        a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_xor_si256(avx2_ld(p + 32), bias), ones));
    }
    if (p + 32 <= e)
        a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_xor_si256(avx2_ld(p), bias), ones));
    if (rest & 31) {
        __m256i m = avx2_ld(csum_mask_tab + 96 + (rest & 31));
        __m256i x = _mm256_and_si256(avx2_ld(e - 32), m);
        a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_xor_si256(x, bias), ones));
        nvec++;
    }
    __m256i a = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(a),
                              _mm256_extracti128_si256(a, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    /* The chain folded to 17 bits (0 only if s is) plus the vectors'
     * correction, on the integer side while the vectors finish. Exact: at
     * most 110384 of the len <= 128 KiB bytes are vectors, whose sum plus
     * the 17 bits stays below 2^32. */
    uint32_t s32 = fold64(s);
    uint32_t k17 = (s32 & 0xffffu) + (s32 >> 16) + (nvec << 19);
    return (uint32_t)_mm_cvtsi128_si32(x) + k17;
}

/* Byte swap of a folded 16-bit sum: the sum of the same bytes framed one
 * byte later (RFC 1071 "byte order independence"). */
static inline uint32_t swap16(uint32_t folded)
{
    return ((folded >> 8) & 0xffu) | ((folded & 0xffu) << 8);
}

/* Even len >= CSUM_AVX2_LARGE. The vector loads are aligned to 32 bytes
 * (unaligned 32-byte loads that cross cache lines are slower): the head
 * before the boundary is summed with one masked vector and, if its length
 * is odd, the rest is summed in its own word framing and byte-swapped back.
 * Then blocks of CSUM_SIMD_BLOCK bytes keep every block's sum exact. */
CSUM_TARGET_AVX2 __attribute__((noinline)) static uint32_t
avx2_large(const uint8_t *p, size_t len, uint32_t sum)
{
    size_t head = (size_t)(-(uintptr_t)p & 31);
    uint32_t h = 0;
    uint64_t t = 0;

    if (head) { /* one vector at p keeping its first 'head' bytes */
        __m256i keep_last = avx2_ld(csum_mask_tab + 128 - head);
        h = avx2_reduce(avx2_pairs(_mm256_andnot_si256(keep_last, avx2_ld(p))),
                        _mm256_setzero_si256(), 1);
        p += head;
        len -= head;
    }
    if (len & 1) { /* odd only if head was: last byte, in the rest's framing */
        len--;
        t = ld8pad(p + len);
    }
    while (len >= CSUM_SIMD_BLOCK + CSUM_WIDE_STEP) {
        t += avx2_wide(p, CSUM_SIMD_BLOCK, 0);
        p += CSUM_SIMD_BLOCK;
        len -= CSUM_SIMD_BLOCK;
        if (t >> 62) /* never for any real size; keeps t exact */
            t = fold64(t);
    }
    t += len >= CSUM_WIDE_STEP ? avx2_wide(p, len, 0) : avx2_block(p, len);
    uint32_t rest = fold64(t);
    if (head & 1)
        rest = swap16(csum_fold_nocompl(rest));
    return add32(add32(sum, h), rest);
}

/* add32(sum, the sum of len < 32 bytes at p): straight-line 32-bit loads
 * into one exact 64-bit total, folded (inlined into the AVX2 dispatcher:
 * no call there). */
static inline uint32_t csum_small(const uint8_t *p, size_t len, uint32_t sum)
{
    uint64_t t = sum;
    if (len & 16) {
        t += (uint64_t)ld32(p) + ld32(p + 4) + ld32(p + 8) + ld32(p + 12);
        p += 16;
    }
    if (len & 8) {
        t += (uint64_t)ld32(p) + ld32(p + 4);
        p += 8;
    }
    return fold64(t + tail_lt8(p, len & 7));
}

/* The mid and large sizes go straight to avx2_mid(), avx2_wide() or
 * avx2_large() (compares and a jump); small ones are summed here, inline.
 * No path calls a function, so the dispatcher needs no stack frame. */
CSUM_TARGET_AVX2 static uint32_t
csum_partial_avx2(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    if (len < CSUM_MID_MIN) {
        if (len < 32)
            return csum_small(p, len, sum);
        if (len & 1) { /* the last byte, padded, as at an even offset */
            len--;
            sum = add32(sum, ld8pad(p + len));
        }
        return add32(sum, avx2_block(p, len));
    }
    if (len < CSUM_AVX2_LARGE)
        return avx2_mid(p, len, sum);
    if (len & 1) {
        len--;
        sum = add32(sum, ld8pad(p + len));
    }
    if (!((uintptr_t)p & 31) && len <= CSUM_SIMD_BLOCK_MAX)
        return avx2_wide(p, len, sum); /* aligned: no head to split */
    return avx2_large(p, len, sum);
}

static inline __m128i sse2_ld(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

static inline __m128i sse2_pairs(__m128i v)
{
    const __m128i bias = _mm_set1_epi16((short)0x8000);
    const __m128i ones = _mm_set1_epi16(1);
    return _mm_madd_epi16(_mm_xor_si128(v, bias), ones);
}

static inline __m128i sse2_masked(const uint8_t *p, const uint8_t *m)
{
    return sse2_pairs(_mm_and_si128(sse2_ld(p), sse2_ld(m)));
}

/* Exact sum of an even 16 <= len <= CSUM_SIMD_BLOCK_MAX bytes (SSE2 is
 * baseline on x86-64). */
__attribute__((always_inline)) static inline uint32_t
sse2_block(const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    __m128i a0, a1 = _mm_setzero_si128();
    uint32_t nvec;

    if (len >= 64) {
        const uint8_t *stop = p + (len & ~(size_t)63);
        nvec = (uint32_t)(len / 16);
        a0 = a1;
        do {
            a0 = _mm_add_epi32(a0, sse2_pairs(sse2_ld(p)));
            a1 = _mm_add_epi32(a1, sse2_pairs(sse2_ld(p + 16)));
            a0 = _mm_add_epi32(a0, sse2_pairs(sse2_ld(p + 32)));
            a1 = _mm_add_epi32(a1, sse2_pairs(sse2_ld(p + 48)));
            p += 64;
        } while (p != stop);
        size_t r = len & 63;
        if (r) { /* the last 64 bytes, keeping their last r */
            const uint8_t *q = end - 64, *m = csum_mask_tab + 64 + r;
            a0 = _mm_add_epi32(a0, sse2_masked(q, m));
            a1 = _mm_add_epi32(a1, sse2_masked(q + 16, m + 16));
            a0 = _mm_add_epi32(a0, sse2_masked(q + 32, m + 32));
            a1 = _mm_add_epi32(a1, sse2_masked(q + 48, m + 48));
            nvec = (nvec & ~3u) + 4;
        }
    } else {
        nvec = (uint32_t)(len / 16);
        a0 = sse2_pairs(sse2_ld(p));
        if (len >= 32)
            a1 = sse2_pairs(sse2_ld(p + 16));
        if (len >= 48)
            a0 = _mm_add_epi32(a0, sse2_pairs(sse2_ld(p + 32)));
        size_t r = len & 15;
        if (r) { /* the last 16 bytes, keeping their last r */
            a1 = _mm_add_epi32(a1, sse2_masked(end - 16, csum_mask_tab + 112 + r));
            nvec++;
        }
    }
    __m128i x = _mm_add_epi32(a0, a1);
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    /* Every vector lost 8 * 32768 = 2^18; all modulo 2^32. */
    return (uint32_t)_mm_cvtsi128_si32(x) + (nvec << 18);
}

/* SSE2 buffers longer than one block, kept out of line. len is even and
 * > CSUM_SIMD_BLOCK_MAX. */
__attribute__((noinline)) static uint32_t sse2_long(const uint8_t *p,
                                                    size_t len, uint32_t sum)
{
    uint64_t t = 0;
    while (len >= CSUM_SIMD_BLOCK + 128) {
        t += sse2_block(p, CSUM_SIMD_BLOCK);
        p += CSUM_SIMD_BLOCK;
        len -= CSUM_SIMD_BLOCK;
        if (t >> 62)
            t = fold64(t);
    }
    t += sse2_block(p, len);
    return add32(sum, fold64(t));
}

static uint32_t csum_partial_sse2(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    if (len < 16)
        return add32(sum, fold64(sum_portable(p, len)));
    if (len & 1) {
        len--;
        sum = add32(sum, ld8pad(p + len));
    }
    if (len > CSUM_SIMD_BLOCK_MAX)
        return sse2_long(p, len, sum);
    return add32(sum, sse2_block(p, len));
}

/* ---- AVX-512 kernels ------------------------------------------------------
 *
 * The pmaddwd method on 64-byte vectors, with mask registers for the tail.
 * "avx512vnni" does the multiply-add and the accumulate in one vpdpwssd, so
 * a vector costs 2 vector operations (xor, vpdpwssd) instead of 3 (xor,
 * vpmaddwd, vpaddd: "avx512", for AVX-512BW CPUs without VNNI). A 256-byte
 * loop step feeds 4 accumulators; the 0..3 whole vectors after it go to
 * their own accumulators; the last len % 64 bytes are one zero-masked load,
 * which reads no byte outside the buffer and pads an odd last byte with
 * zero on the right, as the contract wants, so one path serves every
 * length from 0 and every alignment (the loads are unaligned). Blocks of at
 * most CSUM_SIMD_BLOCK_MAX bytes keep the exact sum below 2^32, as in the
 * AVX2 kernel. Why 2 operations a vector is the floor here, and what that
 * means against the read ceiling, is in docs/performance.md. */
#define CSUM_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))

/* Below CSUM_AVX512_MIN bytes the AVX2 kernel is faster (its small-size
 * paths have no 64-byte reduction). From CSUM_AVX512_ALIGN_MIN bytes on, the
 * vector loads are aligned to 64 bytes (unaligned ones each cross a cache
 * line) after a head of up to 62 bytes taken as one more masked vector. An
 * odd head changes the word framing, so it needs its own reduction and a
 * byte swap: that pays only from CSUM_AVX512_ALIGN_ODD_MIN bytes. All three
 * measured (docs/performance.md). */
#define CSUM_AVX512_MIN ((size_t)256)
#define CSUM_AVX512_ALIGN_MIN ((size_t)512)
#define CSUM_AVX512_ALIGN_ODD_MIN ((size_t)2048)
#define CSUM_TARGET_AVX512VNNI \
    __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* acc + (the 32 words of x, each minus 32768, summed in pairs per lane). */
#define AVX512_STEP(vnni, acc, x)                                              \
    ((vnni) ? _mm512_dpwssd_epi32((acc), _mm512_xor_si512((x), bias), ones)   \
            : _mm512_add_epi32((acc), _mm512_madd_epi16(                        \
                                          _mm512_xor_si512((x), bias), ones)))

/* Defines NAME_block(), the exact sum of len <= CSUM_SIMD_BLOCK_MAX bytes
 * at p (any length), and NAME(), the csum_partial() kernel: blocks of
 * CSUM_SIMD_BLOCK bytes (even, so the word framing carries over), their
 * sums added in 64 bits. Written once for both kernels: gcc inlines
 * intrinsics only into functions with the same target, so the helper cannot
 * be shared as a function. The empty asm keeps the constants in registers;
 * without it gcc rematerialises them (a broadcast, a vector operation) in
 * every tail case. */
#define AVX512_KERNEL(NAME, TARGET, VNNI)                                      \
    TARGET static inline uint32_t NAME##_block(const uint8_t *p, size_t len,  \
                                               size_t head)                    \
    {                                                                          \
        __m512i ones = _mm512_set1_epi16(1);                                   \
        __m512i bias = _mm512_set1_epi16((short)0x8000);                       \
        __asm__("" : "+v"(ones), "+v"(bias));                                  \
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;        \
        uint32_t nvec = (uint32_t)((len - head + 63) / 64);                    \
        if (head) { /* an even head < 64 bytes: same framing */                \
            __mmask64 keep = ((__mmask64)1 << head) - 1;                       \
            a3 = AVX512_STEP(VNNI, a3, _mm512_maskz_loadu_epi8(keep, p));      \
            p += head;                                                         \
            len -= head;                                                       \
            nvec++;                                                            \
        }                                                                      \
        for (size_t n = len / 256; n; n--, p += 256) {                         \
            a0 = AVX512_STEP(VNNI, a0, _mm512_loadu_si512(p));                 \
            a1 = AVX512_STEP(VNNI, a1, _mm512_loadu_si512(p + 64));            \
            a2 = AVX512_STEP(VNNI, a2, _mm512_loadu_si512(p + 128));           \
            a3 = AVX512_STEP(VNNI, a3, _mm512_loadu_si512(p + 192));           \
        }                                                                      \
        size_t r = len & 255;                                                  \
        if (r >= 128) {                                                        \
            a0 = AVX512_STEP(VNNI, a0, _mm512_loadu_si512(p));                 \
            a1 = AVX512_STEP(VNNI, a1, _mm512_loadu_si512(p + 64));            \
            p += 128;                                                          \
            r -= 128;                                                          \
        }                                                                      \
        if (r >= 64) {                                                         \
            a2 = AVX512_STEP(VNNI, a2, _mm512_loadu_si512(p));                 \
            p += 64;                                                           \
            r -= 64;                                                           \
        }                                                                      \
        if (r) {                                                               \
            __mmask64 keep = ((__mmask64)1 << r) - 1;                          \
            a3 = AVX512_STEP(VNNI, a3, _mm512_maskz_loadu_epi8(keep, p));      \
        }                                                                      \
        a0 = _mm512_add_epi32(_mm512_add_epi32(a0, a1),                        \
                              _mm512_add_epi32(a2, a3));                       \
        /* Every vector, the masked ones too, lost 32 * 32768 = 2^20. */       \
        return (uint32_t)_mm512_reduce_add_epi32(a0) + (nvec << 20);           \
    }                                                                          \
    TARGET static uint32_t NAME(const void *data, size_t len, uint32_t sum)   \
    {                                                                          \
        const uint8_t *p = data;                                               \
        if (len < CSUM_AVX512_MIN)                                             \
            return csum_partial_avx2(p, len, sum);                             \
        size_t head = (size_t)(-(uintptr_t)p & 63), even_head = 0;             \
        uint32_t h = 0;                                                        \
        bool odd = false;                                                      \
        if (len >= CSUM_AVX512_ALIGN_ODD_MIN && (head & 1)) {                  \
            h = NAME##_block(p, head, 0); /* own sum, rest swapped below */    \
            odd = true;                                                        \
            p += head;                                                         \
            len -= head;                                                       \
        } else if (len >= CSUM_AVX512_ALIGN_MIN && !(head & 1)) {              \
            even_head = head; /* into the first block's accumulators */        \
        }                                                                      \
        uint64_t t = 0;                                                        \
        while (len > CSUM_SIMD_BLOCK_MAX) {                                    \
            t += NAME##_block(p, CSUM_SIMD_BLOCK + even_head, even_head);      \
            p += CSUM_SIMD_BLOCK + even_head;                                  \
            len -= CSUM_SIMD_BLOCK + even_head;                                \
            even_head = 0;                                                     \
            if (t >> 62)                                                       \
                t = fold64(t);                                                 \
        }                                                                      \
        t += NAME##_block(p, len, even_head);                                  \
        uint32_t rest = fold64(t);                                             \
        if (odd) /* the rest was framed one byte later */                      \
            rest = swap16(csum_fold_nocompl(rest));                            \
        return add32(add32(sum, h), rest);                                     \
    }

AVX512_KERNEL(csum_partial_avx512, CSUM_TARGET_AVX512, 0)
AVX512_KERNEL(csum_partial_avx512vnni, CSUM_TARGET_AVX512VNNI, 1)
#undef AVX512_KERNEL
#undef AVX512_STEP

static bool cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/* The OS must also save the zmm state; __builtin_cpu_supports() checks
 * that (XCR0) for the AVX-512 features, as for AVX. */
static bool cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw");
}

static bool cpu_has_avx512vnni(void)
{
    return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
}

#endif /* CSUM_X86 */

/* ---- Run-time dispatch ----------------------------------------------------
 *
 * The one static with mutable state in this module: the kernel pointer.
 * It starts at the resolver and is replaced once by the best kernel for this
 * CPU. Its final value is a pure function of the CPU, every value it can hold
 * is a valid kernel giving identical results, and the resolver is idempotent,
 * so concurrent first calls are harmless (relaxed atomics suffice: the code
 * pointed to is immutable). */

static uint32_t csum_partial_resolve(const void *data, size_t len,
                                     uint32_t sum);

static _Atomic(csum_partial_fn) csum_active = csum_partial_resolve;

csum_partial_fn csum_impl_fn(enum csum_impl impl)
{
    switch (impl) {
    case CSUM_IMPL_PORTABLE:
        return csum_partial_portable;
#if CSUM_X86
    case CSUM_IMPL_SSE2:
        return csum_partial_sse2;
    case CSUM_IMPL_AVX2:
        return cpu_has_avx2() ? csum_partial_avx2 : NULL;
    case CSUM_IMPL_AVX512:
        return cpu_has_avx512() ? csum_partial_avx512 : NULL;
    case CSUM_IMPL_AVX512VNNI:
        return cpu_has_avx512vnni() ? csum_partial_avx512vnni : NULL;
#else
    case CSUM_IMPL_SSE2:
    case CSUM_IMPL_AVX2:
    case CSUM_IMPL_AVX512:
    case CSUM_IMPL_AVX512VNNI:
#endif
    case CSUM_IMPL_N:
        break;
    }
    return NULL;
}

static const char *const csum_impl_names[CSUM_IMPL_N] = {
    [CSUM_IMPL_PORTABLE] = "portable",
    [CSUM_IMPL_SSE2] = "sse2",
    [CSUM_IMPL_AVX2] = "avx2",
    [CSUM_IMPL_AVX512] = "avx512",
    [CSUM_IMPL_AVX512VNNI] = "avx512vnni",
};

const char *csum_impl_name(enum csum_impl impl)
{
    if ((unsigned)impl >= CSUM_IMPL_N)
        return "?";
    return csum_impl_names[impl];
}

enum csum_impl csum_impl_from_name(const char *name)
{
    for (int i = 0; i < CSUM_IMPL_N; i++)
        if (name && !strcmp(name, csum_impl_names[i]))
            return (enum csum_impl)i;
    return CSUM_IMPL_N;
}

/* Best first: the order of the measured speeds at packet sizes on the CPUs
 * that have them (docs/performance.md). */
static const enum csum_impl csum_impl_pref[] = {
    CSUM_IMPL_AVX512VNNI, CSUM_IMPL_AVX512, CSUM_IMPL_AVX2, CSUM_IMPL_SSE2,
};

enum csum_impl csum_impl_best(void)
{
    for (size_t i = 0; i < sizeof csum_impl_pref / sizeof csum_impl_pref[0]; i++)
        if (csum_impl_fn(csum_impl_pref[i]))
            return csum_impl_pref[i];
    return CSUM_IMPL_PORTABLE;
}

enum csum_impl csum_impl_active(void)
{
    csum_partial_fn fn = atomic_load_explicit(&csum_active, memory_order_relaxed);
    for (int i = 0; i < CSUM_IMPL_N; i++)
        if (fn == csum_impl_fn((enum csum_impl)i))
            return (enum csum_impl)i;
    return csum_impl_best(); /* not resolved yet: what it will be */
}

int csum_impl_force(enum csum_impl impl)
{
    csum_partial_fn fn = (unsigned)impl < CSUM_IMPL_N ? csum_impl_fn(impl) : NULL;
    if (!fn)
        return -1;
    atomic_store_explicit(&csum_active, fn, memory_order_relaxed);
    return 0;
}

static uint32_t csum_partial_resolve(const void *data, size_t len,
                                     uint32_t sum)
{
    csum_partial_fn fn = csum_impl_fn(csum_impl_best());
    /* A csum_impl_force() that raced ahead wins; otherwise install. */
    csum_partial_fn expect = csum_partial_resolve;
    if (!atomic_compare_exchange_strong_explicit(&csum_active, &expect, fn,
                                                 memory_order_relaxed,
                                                 memory_order_relaxed))
        fn = expect;
    return fn(data, len, sum);
}

uint32_t csum_partial(const void *data, size_t len, uint32_t sum)
{
    return atomic_load_explicit(&csum_active, memory_order_relaxed)(data, len,
                                                                    sum);
}

/* ---- Folding and helpers ------------------------------------------------- */

uint16_t csum_fold_nocompl(uint32_t sum)
{
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)sum;
}

uint16_t csum_fold(uint32_t sum)
{
    return (uint16_t)~csum_fold_nocompl(sum);
}

uint32_t csum_add(uint32_t a, uint32_t b)
{
    return add32(a, b);
}

uint16_t csum(const void *data, size_t len)
{
    return csum_fold(csum_partial(data, len, 0));
}

uint16_t csum_udp_field(uint16_t computed)
{
    return computed ? computed : 0xffffu;
}

uint16_t csum_ipv4_hdr(const void *ip, size_t ihl_bytes)
{
    const uint8_t *p = ip;
    uint32_t sum;

    if (ihl_bytes == 20) { /* the common case, no options */
        uint64_t t = (uint64_t)ld32(p) + ld32(p + 4) + ld16(p + 8) +
                     ld32(p + 12) + ld32(p + 16);
        return csum_fold(fold64(t));
    }
    /* Skip the checksum field, bytes 10..11 (clipped to ihl_bytes). */
    sum = csum_partial(p, ihl_bytes < 10 ? ihl_bytes : 10, 0);
    if (ihl_bytes > 12)
        sum = csum_partial(p + 12, ihl_bytes - 12, sum);
    return csum_fold(sum);
}

/* The pseudo-header as laid out in memory: the protocol byte follows a zero
 * byte, so as a memory-order word it is ld16 of {0, proto}; the length is a
 * host-order count stored big-endian. Both built via bytes so the result
 * matches csum_partial() over the real pseudo-header on any host. */
static inline uint32_t pseudo_word_be16(uint16_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    return ld16(b);
}

uint32_t csum_pseudo_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
                          uint16_t l4_len)
{
    uint64_t t = (uint64_t)(src & 0xffffu) + (src >> 16) + (dst & 0xffffu) +
                 (dst >> 16) + pseudo_word_be16(proto) +
                 pseudo_word_be16(l4_len);
    return fold64(t);
}

uint32_t csum_pseudo_ipv6(const uint8_t src[16], const uint8_t dst[16],
                          uint8_t next_header, uint32_t l4_len)
{
    uint64_t t = 0;
    for (int i = 0; i < 16; i += 4)
        t += (uint64_t)ld32(src + i) + ld32(dst + i);
    t += pseudo_word_be16((uint16_t)(l4_len >> 16));
    t += pseudo_word_be16((uint16_t)l4_len);
    t += pseudo_word_be16(next_header);
    return fold64(t);
}

/* ---- Incremental update (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')) ------- */

uint16_t csum_update16(uint16_t csum_field, uint16_t old_val, uint16_t new_val)
{
    uint32_t s = (uint32_t)(uint16_t)~csum_field + (uint16_t)~old_val +
                 new_val;
    return csum_fold(s);
}

uint16_t csum_update32(uint16_t csum_field, uint32_t old_val, uint32_t new_val)
{
    uint32_t o = ~old_val;
    uint32_t s = (uint32_t)(uint16_t)~csum_field + (o & 0xffffu) + (o >> 16) +
                 (new_val & 0xffffu) + (new_val >> 16);
    return csum_fold(s);
}

uint16_t csum_update_bytes(uint16_t csum_field, const void *old_bytes,
                           const void *new_bytes, size_t len)
{
    const uint8_t *o = old_bytes, *n = new_bytes;
    uint64_t t = (uint16_t)~csum_field;
    size_t i = 0;

    for (; i + 2 <= len; i += 2)
        t += (uint64_t)(uint16_t)~ld16(o + i) + ld16(n + i);
    if (i < len) /* odd length: the last byte, padded as in csum_partial() */
        t += (uint64_t)(uint16_t)~ld8pad(o + i) + ld8pad(n + i);
    return csum_fold(fold64(t));
}
