/* bench_csum.c: Internet checksum throughput, GB/s (10^9 bytes per second).
 *
 * Implementations, all called through the same function-pointer signature
 * on the same hot buffer (in L1 up to 9000 bytes; 65535 bytes exceed a
 * 32 KiB L1d and run from L2):
 *   csum_partial   our sum as applications get it (run-time dispatched)
 *   portable       our portable C kernel (wide accumulators, no SIMD)
 *   sse2, avx2     our x86-64 kernels, forced (when the CPU has them)
 *   bytepair_ref   a straightforward RFC 1071 loop: one 16-bit word per add
 *   kernel_adc_c   the classic kernel-style csum_partial written in C: 64-bit
 *                  words added with an end-around carry, folded at the end
 *                  (this project's flags)
 *   rte_raw_cksum_dpdk_flags, rte_raw_cksum_native  DPDK's rte_raw_cksum()
 *                  compiled as DPDK builds itself (-O3 with the machine
 *                  flags of libdpdk.pc) and at -O3 -march=native, each in
 *                  its own translation unit (csum_anchor_rte.c; only with
 *                  -DHAVE_DPDK_BENCH)
 *   read_ceiling   the machine's read ceiling: a plain sum of 64-bit words
 *                  without carries, written with the widest vector adds the
 *                  CPU has (AVX2 vpaddq, 32-byte loads, 4 accumulators; SSE2
 *                  on x86-64 without AVX2; plain C elsewhere). It does one
 *                  add per loaded vector and is bound by the load ports.
 *   read_ceiling_sse2  the same with 16-byte SSE2 loads (what gcc -O3 or
 *                  clang -O2 make of the plain C loop for baseline x86-64)
 *   read_ceiling_c the plain C loop as this compiler builds it. gcc 12 at
 *                  -O2 does not vectorise it: one scalar add chain, a
 *                  latency bound rather than a read ceiling; shown for
 *                  honesty, not used for the ratio.
 * Targets, at 1500 bytes and above: csum_partial >= 1.5 x rte_raw_cksum
 * and >= 0.75 x read_ceiling.
 *
 * Usage: bench_csum [--json FILE] [--time SEC] [--runs N] [--quick]
 * Each cell is timed --runs times (default 300) for about --time seconds
 * (default 0.002) each, runs interleaved across cells: in each run every
 * implementation is timed once for a size and alignment before the next.
 * The GB/s table is the median run of each cell; the ratios
 * (ratio_vs_*_1500, the read ceilings' too) are medians of the per-run
 * ratios ours / theirs, each run's two timings taken back to back, with min
 * and max in paired_ratios_1500.
 * Many short runs keep each pair close in time on a shared machine; longer
 * runs understate the read ceiling most: its loads are what a shared
 * machine's disturbances slow. How the sampling was chosen, with the
 * figures of each choice, is in docs/performance.md.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_dp.h"
#include "csum.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef HAVE_DPDK_BENCH
#include "csum_anchors.h"
#endif

typedef uint32_t (*sum_fn)(const void *data, size_t len, uint32_t sum);

static uint32_t bench_bytepair(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t s = sum;
    size_t i;
    for (i = 0; i + 1 < len; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        s += (uint32_t)p[len - 1] << 8;
    s = (s & 0xffffffffu) + (s >> 32);
    return (uint32_t)(s + (s >> 32));
}

/* The kernel's csum_partial idea in plain C: add 64-bit words, adding each
 * add's carry back in (end-around carry), then fold 64 -> 32 bits the same
 * way. A trailing partial word is zero-padded, which keeps byte positions
 * and so the 16-bit word order. */
static uint32_t bench_kernel_adc(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t s = sum;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        s += w;
        s += s < w;
    }
    if (i < len) {
        uint64_t w = 0;
        memcpy(&w, p + i, len - i);
        s += w;
        s += s < w;
    }
    uint32_t lo = (uint32_t)s, hi = (uint32_t)(s >> 32);
    lo += hi;
    lo += lo < hi;
    return lo;
}

/* The plain loop. Its result depends on every word, so it cannot be
 * optimised away; whatever the compiler makes of it is what it measures. */
static uint32_t bench_ceiling_c(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    uint64_t s = sum;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        s += w;
    }
    return (uint32_t)(s ^ (s >> 32));
}

#if defined(__x86_64__)
static uint32_t bench_ceiling_sse2(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    __m128i a0 = _mm_cvtsi32_si128((int)sum), a1 = _mm_setzero_si128();
    __m128i a2 = a1, a3 = a1;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        const __m128i *q = (const __m128i *)(const void *)(p + i);
        a0 = _mm_add_epi64(a0, _mm_loadu_si128(q));
        a1 = _mm_add_epi64(a1, _mm_loadu_si128(q + 1));
        a2 = _mm_add_epi64(a2, _mm_loadu_si128(q + 2));
        a3 = _mm_add_epi64(a3, _mm_loadu_si128(q + 3));
    }
    for (; i + 16 <= len; i += 16)
        a0 = _mm_add_epi64(a0,
                           _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
    a0 = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
    a0 = _mm_add_epi64(a0, _mm_unpackhi_epi64(a0, a0));
    uint64_t s = (uint64_t)_mm_cvtsi128_si64(a0);
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        s += w;
    }
    return (uint32_t)(s ^ (s >> 32));
}

/* Same tune=generic as src/csum.c: under DPDK's -march=corei7 gcc would
 * otherwise split the unaligned 256-bit loads and understate the ceiling. */
#if defined(__clang__)
#define BENCH_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define BENCH_TARGET_AVX2 __attribute__((target("avx2,tune=generic")))
#endif
#define BENCH_TARGET_AVX512 __attribute__((target("avx512f")))

BENCH_TARGET_AVX2 static uint32_t
bench_ceiling_avx2(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    __m256i a0 = _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)sum));
    __m256i a1 = _mm256_setzero_si256(), a2 = a1, a3 = a1;
    size_t i = 0;
    for (; i + 128 <= len; i += 128) {
        const __m256i *q = (const __m256i *)(const void *)(p + i);
        a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(q));
        a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(q + 1));
        a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(q + 2));
        a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(q + 3));
    }
    for (; i + 32 <= len; i += 32)
        a0 = _mm256_add_epi64(
            a0, _mm256_loadu_si256((const __m256i *)(const void *)(p + i)));
    a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    __m128i x = _mm_add_epi64(_mm256_castsi256_si128(a0),
                              _mm256_extracti128_si256(a0, 1));
    x = _mm_add_epi64(x, _mm_unpackhi_epi64(x, x));
    uint64_t s = (uint64_t)_mm_cvtsi128_si64(x);
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        s += w;
    }
    return (uint32_t)(s ^ (s >> 32));
}

/* The AVX-512 read ceiling: the same loop with 64-byte loads and vpaddq on
 * zmm (4 accumulators, one 256-byte step), for the AVX-512 kernels. */
BENCH_TARGET_AVX512 static uint32_t
bench_ceiling_avx512(const void *data, size_t len, uint32_t sum)
{
    const uint8_t *p = data;
    __m512i a0 = _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)sum));
    __m512i a1 = _mm512_setzero_si512(), a2 = a1, a3 = a1;
    size_t i = 0;
    for (; i + 256 <= len; i += 256) {
        a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
        a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
        a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 128));
        a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 192));
    }
    for (; i + 64 <= len; i += 64)
        a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a0 = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
    uint64_t s = (uint64_t)_mm512_reduce_add_epi64(a0);
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        s += w;
    }
    return (uint32_t)(s ^ (s >> 32));
}
#endif

struct impl {
    const char *name;
    sum_fn fn;
    bool exact; /* computes the checksum (checked against bytepair_ref) */
};

static const size_t sizes[] = {64, 576, 1500, 9000, 65535};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAX_IMPLS 16

static volatile uint32_t sink;

/* Seconds for 'iters' calls of fn over buf[0..len). The pointer goes
 * through an empty asm so the calls cannot be hoisted or merged; the
 * results feed a volatile sink. Calls are independent of one another
 * (throughput, as when summing a stream of packets). */
static double time_calls(sum_fn fn, const uint8_t *buf, size_t len,
                         uint64_t iters)
{
    uint32_t acc = 0;
    double t0 = bench_now();
    for (uint64_t i = 0; i < iters; i++) {
        const uint8_t *p = buf;
        __asm__ volatile("" : "+r"(p));
        acc += fn(p, len, 0);
    }
    double t = bench_now() - t0;
    sink = acc;
    return t;
}

static uint64_t calibrate(sum_fn fn, const uint8_t *buf, size_t len,
                          double target)
{
    uint64_t it = 16;
    for (;;) {
        double t = time_calls(fn, buf, len, it);
        if (t >= 0.01 || it >= (1ull << 40)) {
            double per = t / (double)it;
            uint64_t n = (uint64_t)(target / per);
            return n ? n : 1;
        }
        it *= 4;
    }
}

static int find_impl(const struct impl *impls, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(impls[i].name, name))
            return (int)i;
    return -1;
}

/* Median, min and max over runs of the per-run ratio runs1500[r][a] /
 * runs1500[r][b] (rows of MAX_IMPLS); tmp holds 'runs' doubles. */
static struct bench_stat paired_ratio(const double *runs1500, int runs, size_t a, size_t b,
                                      double *tmp)
{
    for (int r = 0; r < runs; r++)
        tmp[r] = runs1500[(size_t)r * MAX_IMPLS + a] / runs1500[(size_t)r * MAX_IMPLS + b];
    return bench_stat_of(tmp, (size_t)runs);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_csum [--json FILE] [--time SEC] [--runs N] [--quick] "
            "[--kernel NAME]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    double target = 0.002;
    int runs = 300;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--time") && i + 1 < argc)
            target = atof(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) {
            const char *k = argv[++i];
            if (csum_impl_force(csum_impl_from_name(k)) != 0) {
                fprintf(stderr, "bench_csum: --kernel %s: not a kernel this CPU runs\n", k);
                return 2;
            }
        } else if (!strcmp(argv[i], "--quick")) {
            target = 0.002;
            runs = 20;
        } else
            usage();
    }
    if (target <= 0 || runs < 1)
        usage();

    struct impl impls[MAX_IMPLS];
    size_t ni = 0;
    impls[ni++] = (struct impl){"csum_partial", csum_partial, true};
    impls[ni++] = (struct impl){"portable", csum_impl_fn(CSUM_IMPL_PORTABLE), true};
    for (int k = CSUM_IMPL_PORTABLE + 1; k < CSUM_IMPL_N; k++)
        if (csum_impl_fn((enum csum_impl)k))
            impls[ni++] = (struct impl){csum_impl_name((enum csum_impl)k),
                                        csum_impl_fn((enum csum_impl)k), true};
    impls[ni++] = (struct impl){"bytepair_ref", bench_bytepair, false};
    impls[ni++] = (struct impl){"kernel_adc_c", bench_kernel_adc, true};
#ifdef HAVE_DPDK_BENCH
    impls[ni++] = (struct impl){"rte_raw_cksum_dpdk_flags", csum_rte_dpdk_flags, true};
    impls[ni++] = (struct impl){"rte_raw_cksum_native", csum_rte_native, true};
#endif
    const char *ceiling_kind = "c";
    sum_fn ceiling = bench_ceiling_c;
#if defined(__x86_64__)
    __builtin_cpu_init();
    /* The ceiling of the ISA csum_partial() uses. */
    enum csum_impl act = csum_impl_active();
    ceiling_kind = "sse2";
    ceiling = bench_ceiling_sse2;
    if (act == CSUM_IMPL_AVX512 || act == CSUM_IMPL_AVX512VNNI) {
        ceiling_kind = "avx512";
        ceiling = bench_ceiling_avx512;
    } else if (act == CSUM_IMPL_AVX2) {
        ceiling_kind = "avx2";
        ceiling = bench_ceiling_avx2;
    }
#endif
    impls[ni++] = (struct impl){"read_ceiling", ceiling, false};
#if defined(__x86_64__)
    impls[ni++] = (struct impl){"read_ceiling_sse2", bench_ceiling_sse2, false};
    if (ceiling != bench_ceiling_avx2 && __builtin_cpu_supports("avx2"))
        impls[ni++] = (struct impl){"read_ceiling_avx2", bench_ceiling_avx2, false};
#endif
    impls[ni++] = (struct impl){"read_ceiling_c", bench_ceiling_c, false};

    /* One hot buffer, 64-byte aligned; unaligned = offset 1. */
    uint8_t *buf = aligned_alloc(64, 65536 + 128);
    if (!buf) {
        perror("aligned_alloc");
        return 1;
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < 65536 + 128; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        buf[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> 56);
    }

    /* Sanity: every implementation that computes the checksum (ours and
     * the anchors) agrees with the byte-pair reference. */
    for (size_t i = 0; i < ni; i++)
        for (size_t s = 0; s < NSIZES && impls[i].exact; s++)
            for (int off = 0; off < 2; off++) {
                uint16_t want = csum_fold_nocompl(
                    bench_bytepair(buf + off, sizes[s], 0));
                uint16_t got =
                    csum_fold_nocompl(impls[i].fn(buf + off, sizes[s], 0));
                uint8_t b[2];
                memcpy(b, &got, 2);
                if ((uint16_t)(b[0] << 8 | b[1]) != want) {
                    fprintf(stderr, "bench_csum: %s mismatch at %zu+%d\n",
                            impls[i].name, sizes[s], off);
                    return 1;
                }
            }

    static double gbps[MAX_IMPLS][NSIZES][2]; /* the median run of each cell */
    static uint64_t iters[MAX_IMPLS][NSIZES][2];
    /* Every run of every cell, run r of cell c at [c * runs + r]. */
    double *cells = calloc((size_t)runs * MAX_IMPLS * NSIZES * 2, sizeof *cells);
    /* Every run of the 1500-byte aligned cell, for the paired ratios. */
    double *runs1500 = calloc((size_t)runs * MAX_IMPLS, sizeof *runs1500);
    double *pair = calloc((size_t)runs, sizeof *pair);
    if (!cells || !runs1500 || !pair) {
        perror("calloc");
        return 1;
    }
    const size_t s1500 = 2;
    for (size_t i = 0; i < ni; i++)
        for (size_t s = 0; s < NSIZES; s++)
            for (int off = 0; off < 2; off++)
                iters[i][s][off] =
                    calibrate(impls[i].fn, buf + off, sizes[s], target);

    for (int r = 0; r < runs; r++)
        for (size_t s = 0; s < NSIZES; s++)
            for (int off = 0; off < 2; off++)
                for (size_t i = 0; i < ni; i++) {
                    uint64_t n = iters[i][s][off];
                    double t = time_calls(impls[i].fn, buf + off, sizes[s], n);
                    double g = (double)sizes[s] * (double)n / t / 1e9;
                    cells[((i * NSIZES + s) * 2 + (size_t)off) * (size_t)runs + (size_t)r] = g;
                    if (s == s1500 && off == 0)
                        runs1500[(size_t)r * MAX_IMPLS + i] = g;
                }
    for (size_t i = 0; i < ni; i++)
        for (size_t s = 0; s < NSIZES; s++)
            for (int off = 0; off < 2; off++)
                gbps[i][s][off] =
                    bench_stat_of(cells + ((i * NSIZES + s) * 2 + (size_t)off) * (size_t)runs,
                                  (size_t)runs)
                        .median;

    printf("checksum throughput, GB/s (median of %d x %g s; aligned / "
           "unaligned = offset 1)\n",
           runs, target);
    printf("active kernel: %s; read_ceiling: %s\n",
           csum_impl_name(csum_impl_active()), ceiling_kind);
    printf("%-24s", "impl");
    for (size_t s = 0; s < NSIZES; s++)
        printf(" %15zu", sizes[s]);
    printf("\n");
    for (size_t i = 0; i < ni; i++) {
        printf("%-24s", impls[i].name);
        for (size_t s = 0; s < NSIZES; s++)
            printf("   %6.1f/%6.1f", gbps[i][s][0], gbps[i][s][1]);
        printf("\n");
    }

    /* csum_partial is impls[0]. */
    int ceil = find_impl(impls, ni, "read_ceiling");
    int ceil_sse2 = find_impl(impls, ni, "read_ceiling_sse2");
    int ceil_avx2 = find_impl(impls, ni, "read_ceiling_avx2");
    int ceil_c = find_impl(impls, ni, "read_ceiling_c");
    int rte = find_impl(impls, ni, "rte_raw_cksum_dpdk_flags");
    int rte_native = find_impl(impls, ni, "rte_raw_cksum_native");
    int kadc = find_impl(impls, ni, "kernel_adc_c");

    printf("\nratios of the median runs, csum_partial / other (aligned / unaligned)\n");
    const int others[] = {rte, rte_native, kadc, ceil, ceil_avx2, ceil_sse2, ceil_c};
    const size_t n_others = sizeof others / sizeof others[0];
    for (size_t k = 0; k < n_others; k++) {
        if (others[k] < 0)
            continue;
        printf("/ %-22s", impls[others[k]].name);
        for (size_t s = 0; s < NSIZES; s++)
            printf("   %6.2f/%6.2f",
                   gbps[0][s][0] / gbps[others[k]][s][0],
                   gbps[0][s][1] / gbps[others[k]][s][1]);
        printf("\n");
    }
    if (rte < 0)
        printf("(rte_raw_cksum anchors not built: the Makefile builds them with DPDK)\n");

    /* Paired: per run, ours / theirs at 1500 B aligned, timed back to back. */
    struct bench_stat med[sizeof others / sizeof others[0]];
    printf("\npaired runs at 1500 B aligned, csum_partial / other: median [min-max] "
           "of %d runs\n", runs);
    for (size_t k = 0; k < n_others; k++) {
        if (others[k] < 0)
            continue;
        med[k] = paired_ratio(runs1500, runs, 0, (size_t)others[k], pair);
        printf("/ %-24s %6.3f [%.3f-%.3f]\n", impls[others[k]].name, med[k].median,
               med[k].min, med[k].max);
    }

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\n  \"active_kernel\": \"%s\",\n",
                csum_impl_name(csum_impl_active()));
        fprintf(f, "  \"read_ceiling_kind\": \"%s\",\n", ceiling_kind);
#ifdef BENCH_RTE_FLAGS_DPDK
        fprintf(f, "  \"anchor_cflags\": {\"rte_raw_cksum_dpdk_flags\": \"%s\", "
                   "\"rte_raw_cksum_native\": \"%s\"},\n",
                BENCH_RTE_FLAGS_DPDK, BENCH_RTE_FLAGS_NATIVE);
#endif
        fprintf(f, "  \"gbps\": {\n");
        for (size_t i = 0; i < ni; i++) {
            fprintf(f, "    \"%s\": {", impls[i].name);
            for (size_t s = 0; s < NSIZES; s++)
                fprintf(f, "%s\"%zu\": {\"aligned\": %.2f, \"unaligned\": %.2f}",
                        s ? ", " : "", sizes[s], gbps[i][s][0], gbps[i][s][1]);
            fprintf(f, "}%s\n", i + 1 < ni ? "," : "");
        }
        fprintf(f, "  },\n  \"paired_ratios_1500\": {");
        bool first = true;
        for (size_t k = 0; k < n_others; k++) {
            if (others[k] < 0)
                continue;
            fprintf(f, "%s\n    \"%s\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f, "
                       "\"runs\": %d}",
                    first ? "" : ",", impls[others[k]].name, med[k].median, med[k].min,
                    med[k].max, runs);
            first = false;
        }
        fprintf(f, "\n  },\n");
        const struct {
            const char *key;
            int idx;
        } keys[] = {{"ratio_vs_rte_raw_cksum_dpdk_flags_1500", rte},
                    {"ratio_vs_rte_raw_cksum_native_1500", rte_native},
                    {"ratio_vs_kernel_adc_c_1500", kadc},
                    {"ratio_vs_read_ceiling_avx2_1500", ceil_avx2},
                    {"ratio_vs_read_ceiling_sse2_1500", ceil_sse2},
                    {"ratio_vs_read_ceiling_c_1500", ceil_c},
                    {"ratio_vs_read_ceiling_1500", ceil}};
        for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) {
            size_t k = 0;
            while (k < n_others && others[k] != keys[j].idx)
                k++;
            if (keys[j].idx >= 0)
                fprintf(f, "  \"%s\": %.4f,\n", keys[j].key, med[k].median);
            else
                fprintf(f, "  \"%s\": null,\n", keys[j].key);
        }
        fprintf(f, "  \"estimator\": \"gbps: the median of the runs of each cell; ratio_vs_*: "
                   "the median of the per-run ratios at 1500 B aligned (both timings of a run "
                   "back to back), min and max in paired_ratios_1500\"\n}\n");
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    free(cells);
    free(runs1500);
    free(pair);
    free(buf);
    return 0;
}
