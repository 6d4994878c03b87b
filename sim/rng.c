/* rng.c: seeding and the non-inline draws of sim/rng.h. */
#include "rng.h"

#include "dmath.h"

/* Two odd Weyl increments: the state words mix seed + i * G1 with
 * stream + i * G2 (i = 1..4). With different increments the two parts can
 * agree in at most one word, so the state is never all zero, and equal
 * seed and stream numbers do not cancel. */
#define SIM_RNG_G1 0x9e3779b97f4a7c15ULL
#define SIM_RNG_G2 0xd1b54a32d192ed03ULL

void sim_rng_init(struct sim_rng *r, uint64_t seed, uint64_t stream)
{
    for (int i = 0; i < 4; i++) {
        uint64_t n = (uint64_t)(i + 1);
        r->s[i] = sim_mix64(seed + n * SIM_RNG_G1) ^ sim_mix64(stream + n * SIM_RNG_G2);
    }
}

uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    /* 2^64 mod n: draws below it would make small results more likely. */
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = sim_rng_u64(r);
        if (x >= threshold)
            return x % n;
    }
}

double sim_rng_exponential(struct sim_rng *r, double mean)
{
    /* 1 - U is in (0, 1]: the logarithm is finite. */
    return -mean * sim_log1p(-sim_rng_uniform(r));
}
