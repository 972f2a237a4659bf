/* Worker pool: see workpool.h. */
#include "base/workpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "base/log.h"

typedef struct work {
    struct work *next;
    pp_work_fn fn;
    void *arg;
} work;

struct pp_workpool {
    pthread_mutex_t mu;
    pthread_cond_t cv, idle_cv; /* work queued; nothing queued or running */
    work *head, *tail;
    size_t max, threads, idle, running, queued;
    bool closing;
};

pp_workpool *pp_workpool_new(size_t max_threads)
{
    pp_workpool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->idle_cv, NULL);
    p->max = max_threads ? max_threads : 1;
    return p;
}

static void pool_destroy(pp_workpool *p)
{
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->idle_cv);
    free(p);
}

static void *worker(void *arg)
{
    pp_workpool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->closing) {
            p->idle++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->idle--;
        }
        if (p->closing)
            break; /* queued jobs were cancelled by pp_workpool_free */
        work *w = p->head;
        p->head = w->next;
        p->queued--;
        if (!p->head)
            p->tail = NULL;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        w->fn(w->arg, true);
        free(w);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0 && p->queued == 0)
            pthread_cond_broadcast(&p->idle_cv);
    }
    bool last = --p->threads == 0;
    pthread_mutex_unlock(&p->mu);
    if (last)
        pool_destroy(p);
    return NULL;
}

int pp_workpool_submit(pp_workpool *p, pp_work_fn fn, void *arg)
{
    work *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->fn = fn;
    w->arg = arg;
    pthread_mutex_lock(&p->mu);
    /* a thread for this job unless an idle one is left for it (a woken thread takes the lock
     * only later: the jobs queued meanwhile count against the idle ones) */
    if (p->queued + 1 > p->idle && p->threads < p->max) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker, p) == 0)
            p->threads++;
        else
            pp_debug("workpool: cannot start a worker thread (%zu running)", p->threads);
        pthread_attr_destroy(&attr);
    }
    if (p->threads == 0) {
        pthread_mutex_unlock(&p->mu);
        free(w);
        return -1;
    }
    if (p->tail)
        p->tail->next = w;
    else
        p->head = w;
    p->tail = w;
    p->queued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

size_t pp_workpool_pending(pp_workpool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->running + p->queued;
    pthread_mutex_unlock(&p->mu);
    return n;
}

bool pp_workpool_wait_idle(pp_workpool *p, double deadline)
{
    struct timespec ts = {.tv_sec = (time_t)deadline,
                          .tv_nsec = (long)((deadline - (double)(time_t)deadline) * 1e9)};
    pthread_mutex_lock(&p->mu);
    while ((p->running || p->queued) &&
           pthread_cond_clockwait(&p->idle_cv, &p->mu, CLOCK_MONOTONIC, &ts) == 0)
        ;
    bool idle = !p->running && !p->queued;
    pthread_mutex_unlock(&p->mu);
    return idle;
}

void pp_workpool_free(pp_workpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->closing = true;
    work *queued = p->head;
    p->head = p->tail = NULL;
    p->queued = 0;
    bool none = p->threads == 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    while (queued) {
        work *n = queued->next;
        queued->fn(queued->arg, false);
        free(queued);
        queued = n;
    }
    if (none)
        pool_destroy(p);
}
