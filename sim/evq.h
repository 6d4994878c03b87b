/* evq.h: the simulator's event queue (ns-3's discrete-event scheduler in
 * miniature): events in time order, ties in the order they were
 * scheduled, so a run is the same on every machine. */
#ifndef SIM_EVQ_H
#define SIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_event {
    uint64_t time;  /* ns of virtual time */
    uint64_t seq;   /* scheduling order: breaks ties */
    uint32_t kind;  /* the engine's event kind */
    uint32_t id;    /* which source / PMD / port */
};

struct sim_evq {
    struct sim_event *heap;
    size_t n, cap;
    uint64_t next_seq;
};

void sim_evq_init(struct sim_evq *q);
void sim_evq_fini(struct sim_evq *q);

/* Schedules an event. Returns 0, or -1 if out of memory. */
int sim_evq_push(struct sim_evq *q, uint64_t time, uint32_t kind, uint32_t id);

/* Takes the earliest event into *ev; false if the queue is empty. */
bool sim_evq_pop(struct sim_evq *q, struct sim_event *ev);

static inline bool sim_evq_empty(const struct sim_evq *q)
{
    return q->n == 0;
}

#endif
