/* The processes registered for in-sampler walks (sampler.h): per pid, the runtime's naming
 * operations and state, and its coverage counts. A sorted array; the BPF backend holds the lock
 * while it attaches or drains. */
#ifndef PP_WALKS_H
#define PP_WALKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtimes/system/sampler.h"

typedef struct pp_walk_ent {
    int pid;
    unsigned long long start; /* start_ticks */
    unsigned walker;
    const pp_walker_ops *ops;
    void *state; /* NULL for a fork walked with its ancestor's data: named with via's state */
    int via;     /* that ancestor's pid; 0: registered itself */
    uint64_t rt_samples, samples; /* since the last coverage read */
} pp_walk_ent;

typedef struct pp_walks {
    pthread_mutex_t lock;
    pp_walk_ent *v; /* sorted by pid */
    size_t n, cap;
    pp_walk_cov *retired; /* counts of entries removed since the last coverage read */
    size_t nretired, capretired;
} pp_walks;

void pp_walks_init(pp_walks *w);
void pp_walks_destroy(pp_walks *w); /* frees every state */
/* The entry of pid, or NULL. */
pp_walk_ent *pp_walks_get(pp_walks *w, int pid);
/* Adds e (replacing pid's entry, whose state is freed). 0, or -1 without memory (e.state is
 * then freed). */
int pp_walks_put(pp_walks *w, const pp_walk_ent *e);
/* Removes pid's entry and frees its state; its counts stay for the next coverage read. */
void pp_walks_remove(pp_walks *w, int pid);
/* Coverage of the entries with samples, and of those removed since the last call (malloc'd,
 * *out), counts reset; returns the count. */
size_t pp_walks_coverage(pp_walks *w, pp_walk_cov **out);

#endif
