/* pool.c: the simulator's packet buffers. */
#include "pool.h"

#include <stdlib.h>

static void sim_pool_release(struct pkt *pkt);

static const struct pkt_ops sim_pool_ops = {
    .release = sim_pool_release,
    .grow_headroom = NULL, /* SIM_POOL_HEADROOM is enough for what the core pushes */
};

static void sim_pool_release(struct pkt *pkt)
{
    struct sim_pkt *s = (struct sim_pkt *)pkt;
    struct sim_pool *p = pkt->owner;
    s->next = p->free;
    p->free = s;
    p->in_use--;
}

void sim_pool_init(struct sim_pool *p, uint32_t frame_max)
{
    p->frame_max = frame_max;
    p->free = NULL;
    p->allocated = 0;
    p->in_use = 0;
}

void sim_pool_fini(struct sim_pool *p)
{
    while (p->free) {
        struct sim_pkt *s = p->free;
        p->free = s->next;
        free(s);
    }
}

struct sim_pkt *sim_pool_get(struct sim_pool *p, uint32_t len)
{
    if (len > p->frame_max)
        return NULL;
    struct sim_pkt *s = p->free;
    if (s) {
        p->free = s->next;
    } else {
        s = malloc(sizeof *s + SIM_POOL_HEADROOM + 2 * (size_t)p->frame_max);
        if (!s)
            return NULL;
        s->sent = s->buf + SIM_POOL_HEADROOM + p->frame_max;
        p->allocated++;
    }
    p->in_use++;
    struct pkt *pkt = &s->pkt;
    pkt->buf = s->buf;
    pkt->buf_size = SIM_POOL_HEADROOM + p->frame_max;
    pkt->data = s->buf + SIM_POOL_HEADROOM;
    pkt->len = len;
    pkt->ops = &sim_pool_ops;
    pkt->owner = p;
    pkt_reset_meta(pkt);
    s->arrival_ns = 0;
    s->stream = 0;
    s->flow = 0;
    s->bad = 0;
    s->sent_len = 0;
    s->next = NULL;
    return s;
}

struct sim_pkt *sim_pkt_of(struct pkt *p)
{
    return p->ops == &sim_pool_ops ? (struct sim_pkt *)p : NULL;
}
