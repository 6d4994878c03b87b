/* emc.c: exact-match cache. */
#include "emc.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct emc *emc_create(uint32_t entries, unsigned ways, unsigned max_key_len)
{
    if (entries == 0 || entries > EMC_MAX_ENTRIES || (entries & (entries - 1)))
        return NULL;
    if (ways != 1 && ways != 2)
        return NULL;
    struct emc *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->mask = entries - 1;
    e->meta = fs_alloc_big((size_t)entries * sizeof *e->meta);
    e->keys = fs_alloc_big((size_t)entries * sizeof *e->keys);
    if (!e->meta || !e->keys) {
        emc_destroy(e);
        return NULL;
    }
    e->ways = ways;
    e->max_key_len = max_key_len > EMC_KEY_LEN_MAX ? EMC_KEY_LEN_MAX : max_key_len;
    return e;
}

void emc_destroy(struct emc *e)
{
    if (!e)
        return;
    size_t n = (size_t)e->mask + 1;
    fs_free_big(e->meta, n * sizeof *e->meta);
    fs_free_big(e->keys, n * sizeof *e->keys);
    free(e);
}

static bool emc_meta_alive(const struct emc_meta *m, const struct cls_flows *f)
{
    return m->used && cls_flow_alive(f, m->mf_idx, m->mf_gen);
}

bool emc_insert(struct emc *e, const struct cls_flows *f, const struct flow_key *key,
                uint32_t hash, uint32_t mf_idx, uint32_t mf_gen)
{
    unsigned len = emc_key_len(key);
    if (len > e->max_key_len)
        return false;
    uint32_t victim = 0;
    bool have = false, victim_alive = false;
    for (unsigned w = 0; w < e->ways; w++) {
        uint32_t p = emc_pos(e, hash, w);
        struct emc_meta *m = &e->meta[p];
        if (m->used && m->hash == hash && emc_key_equal(&e->keys[p], key)) {
            victim = p; /* the same key: refresh its megaflow */
            have = true;
            break;
        }
        bool alive = emc_meta_alive(m, f);
        if (!have || (victim_alive && !alive) ||
            (victim_alive && alive && m->hash < e->meta[victim].hash)) {
            victim = p;
            victim_alive = alive;
            have = true;
        }
    }
    struct emc_meta *m = &e->meta[victim];
    m->hash = hash;
    m->mf_idx = mf_idx;
    m->mf_gen = mf_gen;
    m->key_len = (uint16_t)len;
    m->used = 1;
    e->keys[victim] = *key;
    return true;
}

bool emc_sweep_step(struct emc *e, const struct cls_flows *f)
{
    struct emc_meta *m = &e->meta[e->sweep_pos];
    e->sweep_pos = (e->sweep_pos + 1) & e->mask;
    if (m->used && !cls_flow_alive(f, m->mf_idx, m->mf_gen)) {
        m->used = 0;
        e->swept++;
        return true;
    }
    return false;
}

void emc_flush(struct emc *e)
{
    memset(e->meta, 0, ((size_t)e->mask + 1) * sizeof *e->meta);
}

uint32_t emc_count(const struct emc *e, const struct cls_flows *f)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i <= e->mask; i++)
        n += emc_meta_alive(&e->meta[i], f);
    return n;
}

size_t emc_memory(const struct emc *e)
{
    return ((size_t)e->mask + 1) * (sizeof *e->meta + sizeof *e->keys);
}
