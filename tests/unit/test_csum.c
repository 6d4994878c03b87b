/* test_csum.c: unit and property tests for src/csum.c.
 *
 * The oracle is ref_sum() below: a naive RFC 1071 byte-pair sum in
 * big-endian (network) order, written independently of csum.c (which sums
 * native-endian words with wide tricks). The real packets were generated
 * with scapy, so their checksum fields are a second, external oracle. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"

/* ---- helpers -------------------------------------------------------------- */

/* Naive ones'-complement sum of big-endian byte pairs, plus 'init' (a
 * host-order value), folded with end-around carries: host-order result. */
static uint16_t ref_sum(const uint8_t *p, size_t len, uint64_t init)
{
    uint64_t s = init;
    size_t i;
    for (i = 0; i + 1 < len; i += 2)
        s += (uint64_t)p[i] << 8 | p[i + 1];
    if (len & 1)
        s += (uint64_t)p[len - 1] << 8;
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

static uint16_t ref_fold64(uint64_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

/* A csum.h value (memory order) as a host-order number. */
static uint16_t net16(uint16_t memval)
{
    uint8_t b[2];
    memcpy(b, &memval, 2);
    return (uint16_t)(b[0] << 8 | b[1]);
}

/* A host-order number as a csum.h value (memory order). */
static uint16_t mem16(uint16_t host)
{
    uint8_t b[2] = {(uint8_t)(host >> 8), (uint8_t)host};
    uint16_t v;
    memcpy(&v, b, 2);
    return v;
}

static uint16_t get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static void put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

/* Host-order folded value of one of our unfolded sums. */
static uint16_t our16(uint32_t sum)
{
    return net16(csum_fold_nocompl(sum));
}

/* xorshift64*: deterministic, fixed seeds. */
struct rng {
    uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

static uint32_t rng_below(struct rng *r, uint32_t n)
{
    return (uint32_t)(rng_next(r) % n);
}

static void rng_fill(struct rng *r, uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(rng_next(r) >> 56);
}

static bool quick(void)
{
    const char *q = getenv("FS_TEST_QUICK");
    return q && strcmp(q, "1") == 0;
}

/* All kernels this build and CPU can run (portable always). */
static size_t impls(csum_partial_fn fns[CSUM_IMPL_N], enum csum_impl ids[])
{
    size_t n = 0;
    for (int i = 0; i < CSUM_IMPL_N; i++) {
        csum_partial_fn f = csum_impl_fn((enum csum_impl)i);
        if (f) {
            ids[n] = (enum csum_impl)i;
            fns[n++] = f;
        }
    }
    return n;
}

/* ---- dispatch (first test: concurrent first use of the lazy pointer) ---- */

struct thr_arg {
    const uint8_t *buf;
    size_t len;
    uint16_t result;
};

static void *thr_main(void *v)
{
    struct thr_arg *a = v;
    uint16_t r = 0;
    for (int i = 0; i < 1000; i++)
        r = csum(a->buf, a->len);
    a->result = r;
    return NULL;
}

static void test_dispatch_concurrent_first_use(void **state)
{
    (void)state;
    uint8_t buf[1500];
    struct rng r = {0x1234};
    rng_fill(&r, buf, sizeof buf);
    uint16_t want = (uint16_t)~ref_sum(buf, sizeof buf, 0);

    pthread_t t[4];
    struct thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct thr_arg){buf, sizeof buf, 0};
        assert_int_equal(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(net16(a[i].result), want);
    }
}

/* The CPU features each kernel needs, asked independently of csum.c. */
static bool cpu_runs(enum csum_impl impl)
{
#if defined(__x86_64__) && !defined(CSUM_NO_SIMD)
    __builtin_cpu_init();
    bool bw = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    switch (impl) {
    case CSUM_IMPL_PORTABLE:
    case CSUM_IMPL_SSE2:
        return true;
    case CSUM_IMPL_AVX2:
        return __builtin_cpu_supports("avx2");
    case CSUM_IMPL_AVX512:
        return bw;
    case CSUM_IMPL_AVX512VNNI:
        return bw && __builtin_cpu_supports("avx512vnni");
    case CSUM_IMPL_N:
        break;
    }
    return false;
#else
    return impl == CSUM_IMPL_PORTABLE;
#endif
}

static void test_dispatch_selection(void **state)
{
    (void)state;
    static const char *const names[CSUM_IMPL_N] = {"portable", "sse2", "avx2", "avx512",
                                                   "avx512vnni"};
    assert_null(csum_impl_fn(CSUM_IMPL_N));
    assert_string_equal(csum_impl_name(CSUM_IMPL_N), "?");
    assert_int_equal(csum_impl_from_name("avx3"), CSUM_IMPL_N);
    assert_int_equal(csum_impl_from_name(NULL), CSUM_IMPL_N);
    for (int i = 0; i < CSUM_IMPL_N; i++) {
        assert_string_equal(csum_impl_name((enum csum_impl)i), names[i]);
        assert_int_equal(csum_impl_from_name(names[i]), i);
        /* Each kernel exactly where the CPU has what it needs. */
        if (cpu_runs((enum csum_impl)i))
            assert_non_null(csum_impl_fn((enum csum_impl)i));
        else {
            assert_null(csum_impl_fn((enum csum_impl)i));
            print_message("csum: %s not run here (this CPU or build lacks it)\n", names[i]);
        }
    }

    /* The best one is the fastest kind the CPU has: VNNI, AVX-512, AVX2,
     * SSE2, portable, in that order (docs/performance.md). */
    static const enum csum_impl order[] = {CSUM_IMPL_AVX512VNNI, CSUM_IMPL_AVX512,
                                           CSUM_IMPL_AVX2, CSUM_IMPL_SSE2,
                                           CSUM_IMPL_PORTABLE};
    enum csum_impl want = CSUM_IMPL_PORTABLE;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (cpu_runs(order[i])) {
            want = order[i];
            break;
        }
    assert_int_equal(csum_impl_best(), want);
    assert_int_equal(csum_impl_active(), want);

    /* csum_partial() goes to the active kernel. */
    uint8_t buf[777];
    struct rng r = {99};
    rng_fill(&r, buf, sizeof buf);
    assert_int_equal(csum_fold(csum_partial(buf + 1, 700, 5)),
                     csum_fold(csum_impl_fn(want)(buf + 1, 700, 5)));
}

/* Forcing: every kernel the CPU runs can be forced and csum_partial() then
 * is that kernel; one it cannot run is refused and changes nothing. */
static void test_dispatch_force(void **state)
{
    (void)state;
    uint8_t buf[1500];
    struct rng r = {0xF0CE};
    rng_fill(&r, buf, sizeof buf);
    uint16_t want = (uint16_t)~ref_sum(buf + 3, 1400, 0);
    for (int i = 0; i < CSUM_IMPL_N; i++) {
        enum csum_impl before = csum_impl_active();
        if (!cpu_runs((enum csum_impl)i)) {
            assert_int_equal(csum_impl_force((enum csum_impl)i), -1);
            assert_int_equal(csum_impl_active(), before);
            continue;
        }
        assert_int_equal(csum_impl_force((enum csum_impl)i), 0);
        assert_int_equal(csum_impl_active(), i);
        assert_int_equal(net16(csum(buf + 3, 1400)), want);
    }
    assert_int_equal(csum_impl_force(CSUM_IMPL_N), -1);
    assert_int_equal(csum_impl_force(csum_impl_best()), 0);
    assert_int_equal(csum_impl_active(), csum_impl_best());
}

/* ---- known vectors ---------------------------------------------------------- */

static void test_rfc1071_example(void **state)
{
    (void)state;
    /* RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2. */
    const uint8_t d[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(our16(fns[i](d, 8, 0)), 0xddf2);
    assert_int_equal(our16(csum_partial(d, 8, 0)), 0xddf2);
    assert_int_equal(net16(csum(d, 8)), 0x220d);
    assert_int_equal(ref_sum(d, 8, 0), 0xddf2);
    /* Byte order independence: the folded value stored in memory is the
     * byte sequence dd f2 on any host. */
    uint16_t f = csum_fold_nocompl(csum_partial(d, 8, 0));
    uint8_t b[2];
    memcpy(b, &f, 2);
    assert_int_equal(b[0], 0xdd);
    assert_int_equal(b[1], 0xf2);
}

static void test_zero_and_tiny_lengths(void **state)
{
    (void)state;
    const uint8_t d[3] = {0xab, 0xcd, 0xef};
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);
    for (size_t i = 0; i < n; i++) {
        /* 0 bytes: the sum passes through unchanged, even from NULL. */
        assert_int_equal(fns[i](d, 0, 0), 0);
        assert_int_equal(fns[i](d, 0, 0x12345678u), 0x12345678u);
        assert_int_equal(fns[i](NULL, 0, 0xffffffffu), 0xffffffffu);
        /* One byte: padded with zero on the right. */
        assert_int_equal(our16(fns[i](d, 1, 0)), 0xab00);
        assert_int_equal(our16(fns[i](d + 1, 1, 0)), 0xcd00);
        assert_int_equal(our16(fns[i](d, 2, 0)), 0xabcd);
        assert_int_equal(our16(fns[i](d, 3, 0)), 0xabcd + 0xef00 - 0xffff);
        assert_int_equal(our16(fns[i](d + 1, 2, 0)), 0xcdef);
    }
    /* A checksum over nothing is 0xFFFF (the complement of +0). */
    assert_int_equal(csum(d, 0), 0xffff);
}

static void test_fold_add_edges(void **state)
{
    (void)state;
    assert_int_equal(csum_fold_nocompl(0), 0);
    assert_int_equal(csum_fold(0), 0xffff);
    assert_int_equal(csum_fold_nocompl(0xffff), 0xffff);
    assert_int_equal(csum_fold(0xffff), 0);
    assert_int_equal(csum_fold_nocompl(0x10000), 1);
    /* 0xffff + 0xffff = 0x1fffe -> 0xffff: the second fold matters. */
    assert_int_equal(csum_fold_nocompl(0xffffffffu), 0xffff);
    assert_int_equal(csum_fold_nocompl(0x0001fffeu), 0xffff);
    assert_int_equal(csum_fold_nocompl(0x12345678u), 0x68ac);
    /* End-around carry in csum_add. */
    assert_int_equal(csum_add(0xffffffffu, 1), 1);
    assert_int_equal(csum_add(0x80000000u, 0x80000000u), 1);
    assert_int_equal(csum_add(0, 0), 0);
    assert_int_equal(csum_add(7, 9), 16);
    /* csum_add is congruent to adding the folded halves. */
    struct rng r = {7};
    for (int i = 0; i < 1000; i++) {
        uint32_t a = (uint32_t)rng_next(&r), b = (uint32_t)rng_next(&r);
        uint64_t ra = (a & 0xffff) + (a >> 16), rb = (b & 0xffff) + (b >> 16);
        assert_int_equal(csum_fold_nocompl(csum_add(a, b)),
                         ref_fold64(ra + rb));
    }
}

/* Tests with big buffers: more than 64 KiB so a 32-bit accumulator of
 * 16-bit words would overflow (65537 words of 0xFFFF suffice). */
static void test_large_buffers(void **state)
{
    (void)state;
    const size_t big = 200 * 1024;
    uint8_t *b = malloc(big + 2);
    /* Worst case for the per-block bounds: all 0xFF at lengths just past
     * the block limits (64 KiB blocks, 128 KiB single-block bound). */
    static const size_t ff_lens[] = {65536 + 430, 131072, 131072 + 430,
                                     196608 + 430, 196608 + 431,
                                     65536 + 131100};
    assert_non_null(b);
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);

    memset(b, 0xff, big + 2);
    for (size_t i = 0; i < n; i++) {
        /* All 0xFFFF words: ones'-complement sum is 0xFFFF (-0), not 0. */
        assert_int_equal(our16(fns[i](b, big, 0)), 0xffff);
        assert_int_equal(our16(fns[i](b + 1, big, 0)), 0xffff);
        assert_int_equal(our16(fns[i](b + 1, big + 1, 0)),
                         ref_sum(b + 1, big + 1, 0));
        assert_int_equal(our16(fns[i](b, big, 0xffffffffu)), 0xffff);
    }
    assert_int_equal(csum(b, big), 0);
    for (size_t k = 0; k < sizeof ff_lens / sizeof ff_lens[0]; k++)
        for (size_t off = 0; off < 2; off++) {
            uint16_t w = ref_sum(b + off, ff_lens[k], 0);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(our16(fns[i](b + off, ff_lens[k], 0)), w);
        }

    /* 0x00 0x01 repeated: sum is exactly big/2, which needs 17 bits. */
    for (size_t k = 0; k < big; k += 2) {
        b[k] = 0;
        b[k + 1] = 1;
    }
    uint16_t want = ref_fold64(big / 2);
    assert_int_equal(ref_sum(b, big, 0), want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(our16(fns[i](b, big, 0)), want);

    /* 1 MiB + 3 random bytes at every start offset 0..7. */
    const size_t mb = (1u << 20) + 3;
    uint8_t *m = malloc(mb + 8);
    assert_non_null(m);
    struct rng r = {0xfeed};
    rng_fill(&r, m, mb + 8);
    for (size_t off = 0; off < 8; off++) {
        uint16_t w = ref_sum(m + off, mb, 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(our16(fns[i](m + off, mb, 0)), w);
    }
    free(m);
    free(b);
}

/* ---- property: every kernel vs the reference, every length and alignment -- */

#define SWEEP_MAX 2048
#define SWEEP_ALIGN 64

static void sweep_buffer(const uint8_t *base, struct rng *r)
{
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);
    uint64_t *pref = malloc((SWEEP_MAX + 1) * sizeof *pref);
    assert_non_null(pref);

    for (size_t a = 0; a < SWEEP_ALIGN; a++) {
        const uint8_t *p = base + a;
        /* pref[L] = exact big-endian byte-pair sum of p[0..L). */
        pref[0] = 0;
        for (size_t l = 1; l <= SWEEP_MAX; l++)
            pref[l] = pref[l - 1] +
                      ((l - 1) % 2 == 0 ? (uint64_t)p[l - 1] << 8 : p[l - 1]);
        for (size_t l = 0; l <= SWEEP_MAX; l++) {
            /* Mostly 0, sometimes a random carried-in sum. */
            uint32_t init = (l % 3 == 0) ? (uint32_t)rng_next(r) : 0;
            uint16_t want = ref_fold64(pref[l] + our16(init));
            for (size_t i = 0; i < n; i++) {
                uint16_t got = our16(fns[i](p, l, init));
                if (got != want)
                    fail_msg("%s: len %zu align %zu init %#x: got %#06x, "
                             "want %#06x", csum_impl_name(ids[i]), l, a,
                             init, got, want);
            }
        }
    }
    free(pref);
}

static void test_sweep_random(void **state)
{
    (void)state;
    uint8_t *buf = malloc(SWEEP_MAX + SWEEP_ALIGN);
    assert_non_null(buf);
    struct rng r = {0xC0FFEE};
    rng_fill(&r, buf, SWEEP_MAX + SWEEP_ALIGN);
    sweep_buffer(buf, &r);
    free(buf);
}

/* Mostly 0xFF bytes: every add carries, the case that breaks carry-free
 * tricks with a wrong bound. */
static void test_sweep_carry_heavy(void **state)
{
    (void)state;
    uint8_t *buf = malloc(SWEEP_MAX + SWEEP_ALIGN);
    assert_non_null(buf);
    struct rng r = {0xBADC0DE};
    memset(buf, 0xff, SWEEP_MAX + SWEEP_ALIGN);
    for (size_t i = 0; i < SWEEP_MAX + SWEEP_ALIGN; i += 1 + rng_below(&r, 97))
        buf[i] = (uint8_t)rng_next(&r);
    sweep_buffer(buf, &r);
    free(buf);
}

/* A random buffer of n bytes with runs of 0xFF (up to max_run long, at
 * most max_gap apart) that make carries: the long sweeps' data. */
static uint8_t *carry_heavy_buf(struct rng *r, size_t n, uint32_t max_gap, uint32_t max_run)
{
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    rng_fill(r, buf, n);
    for (size_t i = 0; i < n; i += 1 + rng_below(r, max_gap)) {
        size_t run = 1 + rng_below(r, max_run);
        memset(buf + i, 0xff, run < n - i ? run : n - i);
    }
    return buf;
}

/* pref[l] = the exact word sum of p[0..l) framed from p, for l = 0..len. */
static void word_prefix_sums(const uint8_t *p, size_t len, uint64_t *pref)
{
    pref[0] = 0;
    for (size_t l = 1; l <= len; l++)
        pref[l] = pref[l - 1] + ((l - 1) % 2 == 0 ? (uint64_t)p[l - 1] << 8 : p[l - 1]);
}

/* Every implementation's sum of p[0..l) with 'init' carried in equals want. */
static void check_all_impls(const csum_partial_fn *fns, const enum csum_impl *ids, size_t n,
                            const uint8_t *p, size_t l, size_t off, uint32_t init,
                            uint16_t want)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t got = our16(fns[i](p, l, init));
        if (got != want)
            fail_msg("%s: len %zu offset %zu init %#x: got %#06x, want %#06x",
                     csum_impl_name(ids[i]), l, off, init, got, want);
    }
}

/* Lengths beyond the sweep: every length 4800..5900 (the AVX2 large-buffer
 * path starts at 5 KiB; its step is 304 bytes) at start offsets covering every
 * head length parity and 0/31/32/33 modulo 32, then lengths at the 64 KiB
 * block and 128 KiB single-block bounds and random lengths up to 300 KiB
 * (several blocks) at the same offsets. */
static void test_sweep_long(void **state)
{
    (void)state;
    static const size_t offs[] = {0, 1, 2, 3, 16, 17, 31, 32, 33, 63};
    const size_t big = 300 * 1024;
    struct rng r = {0x10ca1};
    uint8_t *buf = carry_heavy_buf(&r, big + 64, 4000, 600);
    uint64_t *pref = malloc((big + 1) * sizeof *pref);
    assert_non_null(pref);
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);

    for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
        const uint8_t *p = buf + offs[k];
        word_prefix_sums(p, big, pref);
        for (size_t l = 4800; l <= 5900; l++)
            check_all_impls(fns, ids, n, p, l, offs[k], 0, ref_fold64(pref[l]));
        static const size_t edges[] = {
            65536,      65536 + 431, 65536 + 432, 65536 + 433, 131072 - 1,
            131072,     131072 + 1,  131072 + 2,  131072 + 432, 65536 * 3,
            65536 * 3 + 500, 300 * 1024,
            /* avx2_wide(): whole 304-byte steps and one short of / past
             * them, a full 128 KiB block and 64 KiB blocks plus a rest */
            9120 - 2,   9120,        9120 + 2,    9120 + 30,   9120 + 32,
            9120 + 302, 65536 + 304, 65536 + 302, 131072 - 2,  131072 - 304,
            65536 * 2 + 304};
        const int ne = (int)(sizeof edges / sizeof edges[0]);
        int rounds = ne + (quick() ? 4 : 40);
        for (int j = 0; j < rounds; j++) {
            size_t l = j < ne ? edges[j]
                              : 2049 + rng_below(&r, (uint32_t)(big - 2049 + 1));
            check_all_impls(fns, ids, n, p, l, offs[k], 0, ref_fold64(pref[l]));
        }
    }
    free(pref);
    free(buf);
}

/* The AVX2 mid-size kernel (1200 B up to the 5 KiB large-buffer path):
 * every length 1150..5200 at start offsets covering both head parities and
 * 0/1/31/32/33 modulo 32, carry-heavy data with a random carried-in sum on
 * every third length. Its 320-byte step, its vector remainder (bit tests of
 * rem / 32) and its gap vector (rem % 32) take every value here. */
static void test_sweep_mid(void **state)
{
    (void)state;
    static const size_t offs[] = {0, 1, 2, 3, 15, 16, 17, 30, 31, 33};
    const size_t lo = 1150, hi = 5200;
    struct rng r = {0x3d1d};
    uint8_t *buf = carry_heavy_buf(&r, hi + 64, 700, 400);
    uint64_t *pref = malloc((hi + 1) * sizeof *pref);
    assert_non_null(pref);
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);
    size_t step = quick() ? 7 : 1;

    for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
        const uint8_t *p = buf + offs[k];
        word_prefix_sums(p, hi, pref);
        for (size_t l = lo; l <= hi; l += step) {
            uint32_t init = (l % 3 == 0) ? (uint32_t)rng_next(&r) : 0;
            check_all_impls(fns, ids, n, p, l, offs[k], init,
                            ref_fold64(pref[l] + our16(init)));
        }
    }
    /* All-zero and all-0xFF buffers: the 0x0000 / 0xFFFF distinction. */
    for (int fill = 0; fill < 2; fill++) {
        memset(buf, fill ? 0xff : 0, hi + 64);
        for (size_t l = lo; l <= hi; l += 97)
            for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
                uint16_t want = ref_sum(buf + offs[k], l, 0);
                for (size_t i = 0; i < n; i++)
                    assert_int_equal(our16(fns[i](buf + offs[k], l, 0)), want);
            }
    }
    free(pref);
    free(buf);
}

/* Exactly-sized heap copies so valgrind/ASan catch any read outside
 * [p, p + len) (no over-read of the tail, no aligned over-read of the
 * head). ASan does not see the loads of the inline assembly loop; valgrind
 * does. */
static void test_no_out_of_bounds_reads(void **state)
{
    (void)state;
    csum_partial_fn fns[CSUM_IMPL_N];
    enum csum_impl ids[CSUM_IMPL_N];
    size_t n = impls(fns, ids);
    struct rng r = {31337};
    uint8_t src[700];
    rng_fill(&r, src, sizeof src);
    for (size_t len = 0; len <= 600; len += (len < 80 ? 1 : 37)) {
        for (size_t a = 0; a < 64; a += (len < 80 ? 7 : 1)) {
            uint8_t *blk = malloc(a + len + (a + len == 0));
            assert_non_null(blk);
            memcpy(blk + a, src, len);
            uint16_t want = ref_sum(src, len, 0);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(our16(fns[i](blk + a, len, 0)), want);
            free(blk);
        }
    }
    /* The large-buffer paths (alignment head, add-with-carry part, blocks):
     * data ends exactly at the end of the heap block. */
    static const size_t big_lens[] = {1199, 1200, 1201, 1500, 1501, 1519,
                                      1520, 1521, 1919, 2000, 3333, 5118,
                                      5119, 5120, 5121, 6000, 9000, 65535,
                                      65536 + 433, 140000};
    static const size_t big_offs[] = {0, 1, 2, 31, 32, 33};
    for (size_t k = 0; k < sizeof big_lens / sizeof big_lens[0]; k++)
        for (size_t j = 0; j < sizeof big_offs / sizeof big_offs[0]; j++) {
            size_t len = big_lens[k], a = big_offs[j];
            uint8_t *blk = malloc(a + len);
            assert_non_null(blk);
            rng_fill(&r, blk + a, len);
            uint16_t want = ref_sum(blk + a, len, 0);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(our16(fns[i](blk + a, len, 0)), want);
            free(blk);
        }
}

/* ---- IPv4 header ------------------------------------------------------------ */

/* Real packets (scapy), starting at the IP header. */
/* IPv4 (IHL 5) / TCP with options / "GET / HTTP/1.1..." */
static const uint8_t pkt_tcp4[] = {
    0x45, 0x00, 0x00, 0x4f, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0x52, 0xaa,
    0xc0, 0xa8, 0x01, 0x0a, 0x0a, 0x00, 0x00, 0x07, 0xa8, 0xca, 0x00, 0x50,
    0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x80, 0x18, 0x01, 0xf6,
    0xeb, 0x84, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x00, 0x01, 0xe2, 0x40,
    0x00, 0x09, 0xfb, 0xf1, 0x47, 0x45, 0x54, 0x20, 0x2f, 0x20, 0x48, 0x54,
    0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31, 0x0d, 0x0a, 0x48, 0x6f, 0x73, 0x74,
    0x3a, 0x20, 0x78, 0x0d, 0x0a, 0x0d, 0x0a};
/* IPv4 with a record-route option (IHL 7) / UDP, odd payload length. */
static const uint8_t pkt_udp4[] = {
    0x47, 0x00, 0x00, 0x37, 0x00, 0x01, 0x00, 0x00, 0x11, 0x11, 0x33, 0xbe,
    0xac, 0x10, 0x05, 0x04, 0xac, 0x10, 0x05, 0xc8, 0x07, 0x07, 0x04, 0x01,
    0x02, 0x03, 0x04, 0x00, 0x14, 0xe9, 0x14, 0xe9, 0x00, 0x1b, 0x33, 0xb7,
    0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x2c, 0x20, 0x6f, 0x64, 0x64, 0x20, 0x6c,
    0x65, 0x6e, 0x67, 0x74, 0x68, 0x21, 0x21};
/* IPv6 / TCP, odd payload length. */
static const uint8_t pkt_tcp6[] = {
    0x60, 0x00, 0x00, 0x00, 0x00, 0x5f, 0x06, 0x40, 0x20, 0x01, 0x0d, 0xb8,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xab, 0xcd, 0x00, 0x16, 0xc3, 0x50, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x02, 0x50, 0x10, 0xff, 0xff, 0x46, 0x03, 0x00, 0x00,
    0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff,
    0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff,
    0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff,
    0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff,
    0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff,
    0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff,
    0x00, 0xff, 0x7a};
/* IPv6 / hop-by-hop (router alert) / UDP: the pseudo-header uses the final
 * next header (17) and the upper-layer length (75), not payload length. */
static const uint8_t pkt_udp6[] = {
    0x60, 0x00, 0x00, 0x00, 0x00, 0x53, 0x00, 0xff, 0xfe, 0x80, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0xfb, 0x11, 0x00, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00,
    0x04, 0xd2, 0x16, 0x2e, 0x00, 0x4b, 0xb3, 0x08, 0x00, 0x03, 0x06, 0x09,
    0x0c, 0x0f, 0x12, 0x15, 0x18, 0x1b, 0x1e, 0x21, 0x24, 0x27, 0x2a, 0x2d,
    0x30, 0x33, 0x36, 0x39, 0x3c, 0x3f, 0x42, 0x45, 0x48, 0x4b, 0x4e, 0x51,
    0x54, 0x57, 0x5a, 0x5d, 0x60, 0x63, 0x66, 0x69, 0x6c, 0x6f, 0x72, 0x75,
    0x78, 0x7b, 0x7e, 0x81, 0x84, 0x87, 0x8a, 0x8d, 0x90, 0x93, 0x96, 0x99,
    0x9c, 0x9f, 0xa2, 0xa5, 0xa8, 0xab, 0xae, 0xb1, 0xb4, 0xb7, 0xba, 0xbd,
    0xc0, 0xc3, 0xc6};
/* IPv6 / ICMPv6 echo request. */
static const uint8_t pkt_icmp6[] = {
    0x60, 0x00, 0x00, 0x00, 0x00, 0x15, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
    0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x03, 0x80, 0x00, 0x0f, 0xcf, 0x42, 0x42, 0x00, 0x07,
    0x70, 0x69, 0x6e, 0x67, 0x36, 0x20, 0x70, 0x61, 0x79, 0x6c, 0x6f, 0x61,
    0x64};

static void check_ipv4_hdr(const uint8_t *pkt, size_t ihl, uint16_t field)
{
    uint8_t buf[64 + 8];
    for (size_t off = 0; off < 8; off++) {
        uint8_t *h = buf + off;
        memcpy(h, pkt, ihl);
        assert_int_equal(net16(get16(h + 10)), field);
        assert_int_equal(net16(csum_ipv4_hdr(h, ihl)), field);
        /* The current field value is ignored. */
        put16(h + 10, 0);
        assert_int_equal(net16(csum_ipv4_hdr(h, ihl)), field);
        put16(h + 10, 0xa5c3);
        assert_int_equal(net16(csum_ipv4_hdr(h, ihl)), field);
        /* Independent reference with the field zeroed. */
        put16(h + 10, 0);
        assert_int_equal((uint16_t)~ref_sum(h, ihl, 0), field);
        /* Verification of the header as received sums to -0. */
        put16(h + 10, mem16(field));
        assert_int_equal(csum(h, ihl), 0);
    }
}

static void test_ipv4_header(void **state)
{
    (void)state;
    check_ipv4_hdr(pkt_tcp4, 20, 0x52aa);
    check_ipv4_hdr(pkt_udp4, 28, 0x33be); /* IHL 7: options */

    /* The classic example 4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7. */
    const uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
                           0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
                           0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    check_ipv4_hdr(h, 20, 0xb861);

    /* Random headers of every legal IHL against the reference. */
    struct rng r = {4};
    for (int i = 0; i < 2000; i++) {
        uint8_t x[60];
        size_t ihl = 4 * (5 + rng_below(&r, 11));
        rng_fill(&r, x, sizeof x);
        uint16_t f = get16(x + 10);
        put16(x + 10, 0);
        uint16_t want = (uint16_t)~ref_sum(x, ihl, 0);
        put16(x + 10, f);
        assert_int_equal(net16(csum_ipv4_hdr(x, ihl)), want);
    }
}

/* ---- TCP/UDP/ICMPv6 over IPv4 and IPv6 -------------------------------------- */

/* Checks an L4 checksum of a real packet three ways: csum.c with the given
 * pseudo-header sum (at several buffer alignments), the naive reference
 * over an explicitly built pseudo-header, and verification of the packet as
 * received. */
static void check_l4(const uint8_t *pkt, size_t len, size_t l4off,
                     size_t csum_at, uint32_t pseudo, const uint8_t *ph,
                     size_t phlen)
{
    size_t l4len = len - l4off;
    uint16_t field = net16(get16(pkt + csum_at));
    uint8_t buf[256 + 8];
    assert_true(len <= 256);

    for (size_t off = 0; off < 8; off++) {
        uint8_t *p = buf + off;
        memcpy(p, pkt, len);
        /* As received: the sum including the field is -0. */
        assert_int_equal(csum_fold(csum_partial(p + l4off, l4len, pseudo)), 0);
        put16(p + csum_at, 0);
        uint16_t got = csum_fold(csum_partial(p + l4off, l4len, pseudo));
        assert_int_equal(net16(got), field);
    }

    /* Naive: explicit pseudo-header bytes followed by the segment. */
    uint8_t all[40 + 256];
    memcpy(all, ph, phlen);
    memcpy(all + phlen, pkt + l4off, l4len);
    put16(all + phlen + (csum_at - l4off), 0);
    assert_int_equal((uint16_t)~ref_sum(all, phlen + l4len, 0), field);
    /* And csum_partial over the same bytes agrees with the pseudo sum. */
    assert_int_equal(csum_fold_nocompl(csum_partial(ph, phlen, 0)),
                     csum_fold_nocompl(pseudo));
}

static size_t build_ph4(uint8_t ph[12], const uint8_t *ip, uint8_t proto,
                        uint16_t l4len)
{
    memcpy(ph, ip + 12, 8);
    ph[8] = 0;
    ph[9] = proto;
    ph[10] = (uint8_t)(l4len >> 8);
    ph[11] = (uint8_t)l4len;
    return 12;
}

static size_t build_ph6(uint8_t ph[40], const uint8_t *ip, uint8_t nh,
                        uint32_t l4len)
{
    memcpy(ph, ip + 8, 32);
    ph[32] = (uint8_t)(l4len >> 24);
    ph[33] = (uint8_t)(l4len >> 16);
    ph[34] = (uint8_t)(l4len >> 8);
    ph[35] = (uint8_t)l4len;
    ph[36] = ph[37] = ph[38] = 0;
    ph[39] = nh;
    return 40;
}

static void test_l4_ipv4(void **state)
{
    (void)state;
    uint8_t ph[12];
    /* TCP/IPv4: L4 at 20, checksum at 20 + 16. */
    uint16_t l4 = sizeof pkt_tcp4 - 20;
    uint32_t ps = csum_pseudo_ipv4(get32(pkt_tcp4 + 12), get32(pkt_tcp4 + 16),
                                   6, l4);
    size_t n = build_ph4(ph, pkt_tcp4, 6, l4);
    check_l4(pkt_tcp4, sizeof pkt_tcp4, 20, 36, ps, ph, n);
    assert_int_equal(net16(get16(pkt_tcp4 + 36)), 0xeb84);

    /* UDP/IPv4 behind 8 bytes of IP options: L4 at 28, checksum at 34. */
    l4 = sizeof pkt_udp4 - 28;
    ps = csum_pseudo_ipv4(get32(pkt_udp4 + 12), get32(pkt_udp4 + 16), 17, l4);
    n = build_ph4(ph, pkt_udp4, 17, l4);
    check_l4(pkt_udp4, sizeof pkt_udp4, 28, 34, ps, ph, n);
}

static void test_l4_ipv6(void **state)
{
    (void)state;
    uint8_t ph[40];
    uint32_t l4 = sizeof pkt_tcp6 - 40;
    uint32_t ps = csum_pseudo_ipv6(pkt_tcp6 + 8, pkt_tcp6 + 24, 6, l4);
    size_t n = build_ph6(ph, pkt_tcp6, 6, l4);
    check_l4(pkt_tcp6, sizeof pkt_tcp6, 40, 56, ps, ph, n);

    /* Extension header: upper-layer length and final next header. */
    l4 = sizeof pkt_udp6 - 48;
    assert_int_equal(l4, 75);
    ps = csum_pseudo_ipv6(pkt_udp6 + 8, pkt_udp6 + 24, 17, l4);
    n = build_ph6(ph, pkt_udp6, 17, l4);
    check_l4(pkt_udp6, sizeof pkt_udp6, 48, 54, ps, ph, n);
    /* Using the first next header (0) or the payload length would be
     * wrong: the check must be able to fail. */
    assert_int_not_equal(
        csum_fold(csum_partial(pkt_udp6 + 48, l4,
                               csum_pseudo_ipv6(pkt_udp6 + 8, pkt_udp6 + 24,
                                                0, l4))),
        0);
    assert_int_not_equal(
        csum_fold(csum_partial(pkt_udp6 + 48, l4,
                               csum_pseudo_ipv6(pkt_udp6 + 8, pkt_udp6 + 24,
                                                17, 83))),
        0);

    /* ICMPv6 uses the IPv6 pseudo-header with next header 58. */
    l4 = sizeof pkt_icmp6 - 40;
    ps = csum_pseudo_ipv6(pkt_icmp6 + 8, pkt_icmp6 + 24, 58, l4);
    n = build_ph6(ph, pkt_icmp6, 58, l4);
    check_l4(pkt_icmp6, sizeof pkt_icmp6, 40, 42, ps, ph, n);
}

static void test_pseudo_headers_random(void **state)
{
    (void)state;
    struct rng r = {0x5eed};
    for (int i = 0; i < 5000; i++) {
        uint8_t ip[40], ph[40];
        rng_fill(&r, ip, sizeof ip);
        uint8_t proto = (uint8_t)rng_next(&r);
        uint16_t l16 = (uint16_t)rng_next(&r);
        build_ph4(ph, ip, proto, l16);
        assert_int_equal(
            csum_fold_nocompl(csum_pseudo_ipv4(get32(ip + 12), get32(ip + 16),
                                               proto, l16)),
            mem16(ref_sum(ph, 12, 0)));
        /* IPv6, including jumbogram lengths above 0xFFFF. */
        uint32_t l32 = (i & 1) ? (uint32_t)rng_next(&r) : l16;
        build_ph6(ph, ip, proto, l32);
        assert_int_equal(
            csum_fold_nocompl(csum_pseudo_ipv6(ip + 8, ip + 24, proto, l32)),
            mem16(ref_sum(ph, 40, 0)));
    }
}

/* ---- incremental update (RFC 1624) ------------------------------------------ */

static void test_rfc1624_example(void **state)
{
    (void)state;
    /* RFC 1624 section 4: HC 0xDD2F, m 0x5555 -> m' 0x3285: eqn. 3 gives
     * 0x0000 (eqn. 2 would give the wrong 0xFFFF). */
    assert_int_equal(net16(csum_update16(mem16(0xdd2f), mem16(0x5555),
                                         mem16(0x3285))),
                     0x0000);
    /* No change, no checksum change. */
    assert_int_equal(csum_update16(0x1234, 0xabcd, 0xabcd), 0x1234);
    assert_int_equal(csum_update32(0x1234, 0xdeadbeef, 0xdeadbeef), 0x1234);
}

static uint16_t full_field(const uint8_t *buf, size_t len)
{
    return mem16((uint16_t)~ref_sum(buf, len, 0));
}

static uint16_t rand_word(struct rng *r)
{
    static const uint16_t edge[] = {0x0000, 0xffff, 0x0001, 0xfffe, 0x8000};
    if (rng_below(r, 4) == 0)
        return edge[rng_below(r, 5)];
    return (uint16_t)rng_next(r);
}

/* Random buffers with a checksum field; random 16- and 32-bit changes at
 * even offsets (not overlapping the field), chained, each compared with a
 * full recomputation by the reference. Byte 0 is never changed and nonzero
 * so the data is never all zero (the one case where eqn. 3 yields 0x0000
 * and a full computation 0xFFFF, both meaning -0/+0 of the same sum). */
static void test_incremental_random(void **state)
{
    (void)state;
    struct rng r = {0x1624};
    int packets = quick() ? 300 : 3000;
    uint8_t buf[1500];
    long cases = 0;

    for (int pk = 0; pk < packets; pk++) {
        size_t len = 2 * (10 + rng_below(&r, 741)); /* 20..1500 */
        rng_fill(&r, buf, len);
        buf[0] |= 1;
        size_t f = 2 * (1 + rng_below(&r, (uint32_t)(len / 2 - 1)));
        put16(buf + f, 0);
        put16(buf + f, full_field(buf, len));
        for (int ch = 0; ch < 4; ch++, cases++) {
            uint16_t c = get16(buf + f), upd;
            bool wide = rng_below(&r, 2);
            size_t g;
            do {
                g = 2 * (1 + rng_below(&r, (uint32_t)(len / 2 - 1)));
            } while ((wide && (g + 4 > len || (f + 2 > g && f < g + 4))) ||
                     (!wide && g == f));
            if (wide) {
                uint32_t o = get32(buf + g);
                uint32_t nv = (uint32_t)rand_word(&r) << 16 | rand_word(&r);
                put32(buf + g, nv);
                upd = csum_update32(c, o, nv);
            } else {
                uint16_t o = get16(buf + g), nv = rand_word(&r);
                put16(buf + g, nv);
                upd = csum_update16(c, o, nv);
            }
            put16(buf + f, 0);
            uint16_t want = full_field(buf, len);
            if (upd != want)
                fail_msg("packet %d change %d (%s at %zu, field at %zu): "
                         "incremental %#06x full %#06x", pk, ch,
                         wide ? "32" : "16", g, f, net16(upd), net16(want));
            put16(buf + f, upd);
            /* The updated packet verifies. */
            assert_int_equal(csum(buf, len), 0);
        }
    }
    assert_true(cases >= (quick() ? 1200 : 12000));
}

static void test_update_bytes_random(void **state)
{
    (void)state;
    struct rng r = {0xb17e5};
    int packets = quick() ? 300 : 3000;
    uint8_t buf[512], old[32];
    for (int pk = 0; pk < packets; pk++) {
        size_t len = 2 * (40 + rng_below(&r, 200));
        rng_fill(&r, buf, len);
        buf[0] |= 1;
        size_t f = 2 + 2 * rng_below(&r, 4); /* field in 2..8 */
        put16(buf + f, 0);
        uint16_t c = full_field(buf, len);
        size_t n = 2 * (1 + rng_below(&r, 16)); /* 2..32 bytes */
        size_t g = 10 + 2 * rng_below(&r, (uint32_t)((len - 10 - n) / 2 + 1));
        memcpy(old, buf + g, n);
        rng_fill(&r, buf + g, n);
        if (rng_below(&r, 8) == 0)
            memset(buf + g, 0xff, n);
        uint16_t upd = csum_update_bytes(c, old, buf + g, n);
        assert_int_equal(upd, full_field(buf, len));
    }
}

/* NAT-like rewrites of real packets: IPv4 address (header + TCP pseudo
 * header, 32-bit update), port (16-bit), IPv6 address (16-byte update). */
static void test_update_real_packets(void **state)
{
    (void)state;
    uint8_t p[256];

    /* TCP/IPv4: new source address. */
    memcpy(p, pkt_tcp4, sizeof pkt_tcp4);
    const uint8_t na4[4] = {10, 1, 2, 3};
    uint32_t o = get32(p + 12), nv = get32(na4);
    put32(p + 12, nv);
    put16(p + 10, csum_update32(get16(p + 10), o, nv));
    put16(p + 36, csum_update32(get16(p + 36), o, nv));
    assert_int_equal(csum(p, 20), 0);
    assert_int_equal(get16(p + 10), csum_ipv4_hdr(p, 20));
    uint16_t l4 = sizeof pkt_tcp4 - 20;
    uint32_t ps = csum_pseudo_ipv4(get32(p + 12), get32(p + 16), 6, l4);
    assert_int_equal(csum_fold(csum_partial(p + 20, l4, ps)), 0);
    /* ... then a new destination port. */
    uint16_t op = get16(p + 22), np = mem16(8080);
    put16(p + 22, np);
    put16(p + 36, csum_update16(get16(p + 36), op, np));
    assert_int_equal(csum_fold(csum_partial(p + 20, l4, ps)), 0);

    /* UDP/IPv6 with an extension header: new 16-byte source address. */
    memcpy(p, pkt_udp6, sizeof pkt_udp6);
    uint8_t oa[16], na[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0,
                              0,    0,    0,    0,    0xde, 0xad, 0xbe, 0xef};
    memcpy(oa, p + 8, 16);
    memcpy(p + 8, na, 16);
    put16(p + 54, csum_update_bytes(get16(p + 54), oa, na, 16));
    uint32_t l6 = sizeof pkt_udp6 - 48;
    ps = csum_pseudo_ipv6(p + 8, p + 24, 17, l6);
    assert_int_equal(csum_fold(csum_partial(p + 48, l6, ps)), 0);
    /* Equal to a full recomputation. */
    uint16_t inc = get16(p + 54);
    put16(p + 54, 0);
    assert_int_equal(csum_fold(csum_partial(p + 48, l6, ps)), inc);
}

/* ---- UDP: a computed 0 is sent as 0xFFFF -------------------------------------- */

static void test_udp_zero_maps_to_ffff(void **state)
{
    (void)state;
    /* UDP/IPv4 10.0.0.1:1000 -> 10.0.0.2:2000, 2-byte payload X chosen so
     * the computed checksum is 0. */
    uint8_t ip[20] = {0x45, 0, 0, 30, 0, 0, 0, 0, 64, 17, 0, 0,
                      10,   0, 0, 1,  10, 0, 0, 2};
    uint8_t u[10] = {0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0a, 0, 0, 0, 0};
    uint32_t ps = csum_pseudo_ipv4(get32(ip + 12), get32(ip + 16), 17, 10);
    uint16_t s = csum_fold_nocompl(csum_partial(u, 10, ps)); /* X = 0 */
    /* Want fold(s + X) == 0xFFFF: X = ~s (s is never 0 here). */
    put16(u + 8, (uint16_t)~s);
    uint16_t c = csum_fold(csum_partial(u, 10, ps));
    assert_int_equal(c, 0);
    /* The independent reference agrees that the computed value is 0. */
    uint8_t ph[12 + 10];
    build_ph4(ph, ip, 17, 10);
    memcpy(ph + 12, u, 10);
    assert_int_equal((uint16_t)~ref_sum(ph, sizeof ph, 0), 0);

    /* csum.h is pure arithmetic: the caller maps 0 to 0xFFFF. */
    assert_int_equal(csum_udp_field(c), 0xffff);
    assert_int_equal(csum_udp_field(0x1234), 0x1234);
    assert_int_equal(csum_udp_field(0xffff), 0xffff);
    /* The packet with 0xFFFF verifies (0xFFFF is -0, the same sum). */
    put16(u + 6, csum_udp_field(c));
    assert_int_equal(csum_fold(csum_partial(u, 10, ps)), 0);

    /* Incremental update starting from the mapped 0xFFFF field stays
     * correct: random port changes, mapped, equal the mapped full value. */
    struct rng r = {0xffff};
    for (int i = 0; i < 2000; i++) {
        uint16_t field = get16(u + 6);
        size_t at = 2 * rng_below(&r, 2); /* source or destination port */
        uint16_t o = get16(u + at), nv = rand_word(&r);
        put16(u + at, nv);
        uint16_t upd = csum_udp_field(csum_update16(field, o, nv));
        put16(u + 6, 0);
        uint16_t full = csum_udp_field(csum_fold(csum_partial(u, 10, ps)));
        assert_int_equal(upd, full);
        put16(u + 6, upd);
        assert_int_equal(csum_fold(csum_partial(u, 10, ps)), 0);
        if (i % 100 == 0) { /* come back to the zero case now and then */
            put16(u + 8, 0);
            put16(u + 6, 0);
            s = csum_fold_nocompl(csum_partial(u, 10, ps));
            put16(u + 8, (uint16_t)~s);
            put16(u + 6, csum_udp_field(csum_fold(csum_partial(u, 10, ps))));
            assert_int_equal(get16(u + 6), 0xffff);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* must stay first: exercises the lazy dispatch on first use */
        cmocka_unit_test(test_dispatch_concurrent_first_use),
        cmocka_unit_test(test_dispatch_selection),
        cmocka_unit_test(test_dispatch_force),
        cmocka_unit_test(test_rfc1071_example),
        cmocka_unit_test(test_zero_and_tiny_lengths),
        cmocka_unit_test(test_fold_add_edges),
        cmocka_unit_test(test_large_buffers),
        cmocka_unit_test(test_sweep_random),
        cmocka_unit_test(test_sweep_carry_heavy),
        cmocka_unit_test(test_sweep_long),
        cmocka_unit_test(test_sweep_mid),
        cmocka_unit_test(test_no_out_of_bounds_reads),
        cmocka_unit_test(test_ipv4_header),
        cmocka_unit_test(test_l4_ipv4),
        cmocka_unit_test(test_l4_ipv6),
        cmocka_unit_test(test_pseudo_headers_random),
        cmocka_unit_test(test_rfc1624_example),
        cmocka_unit_test(test_incremental_random),
        cmocka_unit_test(test_update_bytes_random),
        cmocka_unit_test(test_update_real_packets),
        cmocka_unit_test(test_udp_zero_maps_to_ffff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
