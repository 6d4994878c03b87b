/* rng.h: seeded, independent random streams for the simulator.
 *
 * Every model draws from its own stream, named by (seed, stream): the seed
 * is the run's (a scenario's --seed), the stream number tells the models
 * apart, as ns-3's RngRun / stream do. A stream is xoshiro256** (Blackman
 * and Vigna, period 2^256 - 1) whose four state words are mixed from both
 * numbers with splitmix64, so the same (seed, stream) gives the same
 * sequence on every machine and compiler, and different streams start at
 * unrelated points of the period: the state is never all zero, and two
 * streams' first 2^64 draws overlap only if their starting points lie
 * within 2^64 steps of each other, a chance of about 2^-191 for unrelated
 * points.
 *
 * Integer draws are bit-exact everywhere. Double draws use only IEEE-754
 * basic operations and sim/dmath.h, never the C library's transcendental
 * functions, so they are bit-exact too on targets with IEEE double
 * arithmetic (SSE2 on x86-64, AArch64).
 *
 * No globals: a struct sim_rng is the whole state, copyable by value. */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdint.h>

/* Stream numbers are 64 bits: a model family takes a domain (the high 16
 * bits) and numbers its instances and purposes in the low 48, so families
 * never share a stream. */
#define SIM_RNG_STREAM(domain, index)                                          \
    (((uint64_t)(domain) << 48) | ((uint64_t)(index) & 0xffffffffffffULL))

struct sim_rng {
    uint64_t s[4];
};

/* Seeds r as stream 'stream' of run 'seed'. Any values are valid. */
void sim_rng_init(struct sim_rng *r, uint64_t seed, uint64_t stream);

/* splitmix64's output function: a bijection of 64-bit words with full
 * avalanche. For counter-based draws (a value that must be a pure
 * function of some identifiers, e.g. a flow's addresses from its id). */
static inline uint64_t sim_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The next splitmix64 output of the generator whose state is *x (Steele,
 * Lea and Flood's SplitMix with the golden-ratio increment). */
static inline uint64_t sim_splitmix64(uint64_t *x)
{
    *x += 0x9e3779b97f4a7c15ULL;
    return sim_mix64(*x);
}

/* Maps 64 random bits to a double uniform in [0, 1) (the top 53 bits). */
static inline double sim_unit(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

static inline uint64_t sim_rng_rotl_(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* The next 64 random bits (xoshiro256**). */
static inline uint64_t sim_rng_u64(struct sim_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = sim_rng_rotl_(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sim_rng_rotl_(s[3], 45);
    return out;
}

/* A double uniform in [0, 1), multiples of 2^-53. */
static inline double sim_rng_uniform(struct sim_rng *r)
{
    return sim_unit(sim_rng_u64(r));
}

/* A uniform integer in [0, n), without modulo bias (rejection of the
 * 2^64 mod n lowest draws). n = 0 returns 0. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);

/* An exponential variate with the given mean (> 0): -mean * ln(1 - U).
 * Always finite and >= 0. */
double sim_rng_exponential(struct sim_rng *r, double mean);

#endif
