/* A small pool of worker threads for per-process work whose duration the target controls (an
 * attach request to a JVM that may not answer, a file in a process's root): jobs run
 * concurrently on up to max_threads threads, so a job stuck on one process costs only its own
 * time bound, not the other processes' nor the caller's. The caller never waits for the pool:
 * submitting queues the job and returns; completion is the job's own business (it publishes its
 * result under its caller's lock). Threads are started on demand and stay until the pool is
 * freed; freeing never waits either (see pp_workpool_free), only pp_workpool_wait_idle does, as
 * long as asked. Thread-safe. */
#ifndef PP_WORKPOOL_H
#define PP_WORKPOOL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pp_workpool pp_workpool;

/* A job. run is true when it runs on a worker; false when the pool was freed before the job
 * began (then it must only release arg). */
typedef void (*pp_work_fn)(void *arg, bool run);

/* NULL when out of memory. max_threads >= 1. */
pp_workpool *pp_workpool_new(size_t max_threads);
/* Queues fn(arg, true). Returns 0, or -1 when the job could not be queued (out of memory, or no
 * thread could be started and none exists): fn is then not called and arg stays the caller's. */
int pp_workpool_submit(pp_workpool *p, pp_work_fn fn, void *arg);
/* Jobs queued or running. */
size_t pp_workpool_pending(pp_workpool *p);
/* Waits until no job is queued or running, or until the monotonic deadline (seconds, as
 * pp_mono_now); true when idle. For an exit after the jobs were told to end. */
bool pp_workpool_wait_idle(pp_workpool *p, double deadline);
/* Jobs that were queued when the pool was freed get fn(arg, false) here; jobs that are running
 * finish on their threads, which then exit, the last one freeing the pool. Never waits. */
void pp_workpool_free(pp_workpool *p);

#endif
