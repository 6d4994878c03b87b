/* smc.c: signature-match cache. */
#include "smc.h"

#include <stdlib.h>
#include <string.h>

#include "emc.h" /* emc_rand32 */
#include "util.h"

struct smc *smc_create(uint32_t entries, uint64_t seed)
{
    if (entries < SMC_WAYS || entries > SMC_MAX_ENTRIES || (entries & (entries - 1)))
        return NULL;
    struct smc *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    uint32_t nb = entries / SMC_WAYS;
    s->b = fs_alloc_big((size_t)nb * sizeof *s->b);
    if (!s->b) {
        free(s);
        return NULL;
    }
    s->mask = nb - 1;
    s->rng = seed ^ 0x5c0ffee5eedull;
    return s;
}

void smc_destroy(struct smc *s)
{
    if (!s)
        return;
    fs_free_big(s->b, ((size_t)s->mask + 1) * sizeof *s->b);
    free(s);
}

bool smc_insert(struct smc *s, uint32_t hash, uint32_t idx)
{
    if (idx >= SMC_MAX_IDX)
        return false;
    struct smc_bucket *b = &s->b[hash & s->mask];
    uint16_t sig = smc_sig(hash);
    unsigned way = SMC_WAYS;
    for (unsigned w = 0; w < SMC_WAYS; w++) {
        if (b->idx1[w] && b->sig[w] == sig) {
            way = w;
            break;
        }
        if (!b->idx1[w] && way == SMC_WAYS)
            way = w;
    }
    if (way == SMC_WAYS)
        way = emc_rand32(&s->rng) % SMC_WAYS;
    b->sig[way] = sig;
    b->idx1[way] = (uint16_t)(idx + 1);
    return true;
}

unsigned smc_sweep_step(struct smc *s, const struct cls_flows *f)
{
    struct smc_bucket *b = &s->b[s->sweep_pos];
    s->sweep_pos = (s->sweep_pos + 1) & s->mask;
    unsigned n = 0;
    for (unsigned w = 0; w < SMC_WAYS; w++) {
        if (b->idx1[w] && !cls_flow(f, b->idx1[w] - 1u)->in_use) {
            b->idx1[w] = 0;
            b->sig[w] = 0;
            n++;
        }
    }
    s->swept += n;
    return n;
}

void smc_flush(struct smc *s)
{
    memset(s->b, 0, ((size_t)s->mask + 1) * sizeof *s->b);
}

uint32_t smc_count(const struct smc *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i <= s->mask; i++)
        for (unsigned w = 0; w < SMC_WAYS; w++)
            n += s->b[i].idx1[w] != 0;
    return n;
}

size_t smc_memory(const struct smc *s)
{
    return ((size_t)s->mask + 1) * sizeof *s->b;
}
