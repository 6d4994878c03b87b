/* evq.c: a binary min-heap on (time, seq). */
#include "evq.h"

#include <stdlib.h>

#include "util.h"

static bool sim_ev_before(const struct sim_event *a, const struct sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void sim_evq_init(struct sim_evq *q)
{
    q->heap = NULL;
    q->n = q->cap = 0;
    q->next_seq = 0;
}

void sim_evq_fini(struct sim_evq *q)
{
    free(q->heap);
    sim_evq_init(q);
}

int sim_evq_push(struct sim_evq *q, uint64_t time, uint32_t kind, uint32_t id)
{
    if (q->n == q->cap && fs_grow((void **)&q->heap, &q->cap, q->n + 1, sizeof *q->heap, 64))
        return -1;
    struct sim_event ev = {time, q->next_seq++, kind, id};
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!sim_ev_before(&ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
    return 0;
}

bool sim_evq_pop(struct sim_evq *q, struct sim_event *ev)
{
    if (!q->n)
        return false;
    *ev = q->heap[0];
    struct sim_event last = q->heap[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && sim_ev_before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!sim_ev_before(&q->heap[c], &last))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (q->n)
        q->heap[i] = last;
    return true;
}
