/* The background reader of JIT perf maps and jitdumps: see pmreader.h. */
#include "runtimes/symbols/pmreader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/child.h"
#include "base/workpool.h"

#define TURN_CHUNKS 16 /* chunks a read does before it goes to the back of the queue */

struct pp_pmreader {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* paused or stopped changed */
    int refs;          /* the owner's, and one per read queued or running */
    bool paused, stopped;
    double budget, spent; /* this session's reading time, seconds */
    pp_workpool *pool;
};

struct pp_pmsrc {
    pthread_mutex_t mu; /* the map, busy, refs */
    int refs;
    bool busy; /* a read is queued or running */
    pp_pmreader *r;
    pp_perfmap map;
};

typedef struct job {
    pp_pmsrc *src;
    int fd;
    bool jitdump;
} job;

pp_pmreader *pp_pmreader_new(void)
{
    pp_pmreader *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->pool = pp_workpool_new(1);
    if (!r->pool) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->refs = 1;
    r->budget = PP_PMREAD_MIN_BUDGET_S;
    return r;
}

static void reader_put(pp_pmreader *r)
{
    pthread_mutex_lock(&r->mu);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    pp_workpool_free(r->pool); /* no read left: nothing queued, no thread busy */
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

void pp_pmreader_stop(pp_pmreader *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stopped = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

bool pp_pmreader_wait_idle(pp_pmreader *r, double deadline)
{
    return !r || pp_workpool_wait_idle(r->pool, deadline);
}

void pp_pmreader_free(pp_pmreader *r, double wait_s)
{
    if (!r)
        return;
    pp_pmreader_stop(r);
    if (wait_s > 0)
        pp_workpool_wait_idle(r->pool, pp_mono_now() + wait_s);
    reader_put(r);
}

void pp_pmreader_begin_session(pp_pmreader *r, double session_s)
{
    double b = session_s / PP_PMREAD_BUDGET_SHARE;
    pthread_mutex_lock(&r->mu);
    r->budget = b > PP_PMREAD_MIN_BUDGET_S ? b : PP_PMREAD_MIN_BUDGET_S;
    r->spent = 0;
    r->paused = false;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void pp_pmreader_set_budget(pp_pmreader *r, double seconds)
{
    pthread_mutex_lock(&r->mu);
    r->budget = seconds;
    pthread_mutex_unlock(&r->mu);
}

void pp_pmreader_pause(pp_pmreader *r, bool paused)
{
    pthread_mutex_lock(&r->mu);
    r->paused = paused;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

double pp_pmreader_spent(pp_pmreader *r)
{
    pthread_mutex_lock(&r->mu);
    double v = r->spent;
    pthread_mutex_unlock(&r->mu);
    return v;
}

/* Whether the worker may read one more chunk: waits while paused; false when stopped or the
 * session's budget is spent. */
static bool may_read(pp_pmreader *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->paused && !r->stopped)
        pthread_cond_wait(&r->cv, &r->mu);
    bool ok = !r->stopped && r->spent < r->budget;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static void add_spent(pp_pmreader *r, double s)
{
    pthread_mutex_lock(&r->mu);
    r->spent += s;
    pthread_mutex_unlock(&r->mu);
}

/* The worker's CPU time, seconds: the budget counts what it costs the host, not how long a
 * busy host made it wait. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- sources ---- */

pp_pmsrc *pp_pmsrc_new(pp_pmreader *r)
{
    pp_pmsrc *src = calloc(1, sizeof(*src));
    if (!src)
        return NULL;
    pthread_mutex_init(&src->mu, NULL);
    src->refs = 1;
    src->r = r;
    pthread_mutex_lock(&r->mu);
    r->refs++;
    pthread_mutex_unlock(&r->mu);
    return src;
}

void pp_pmsrc_put(pp_pmsrc *src)
{
    if (!src)
        return;
    pthread_mutex_lock(&src->mu);
    bool last = --src->refs == 0;
    pthread_mutex_unlock(&src->mu);
    if (!last)
        return;
    pp_pmreader *r = src->r;
    pp_perfmap_free(&src->map);
    pthread_mutex_destroy(&src->mu);
    free(src);
    reader_put(r);
}

static long update(pp_perfmap *m, int fd, bool jitdump, uint64_t max_bytes)
{
    return jitdump ? pp_jitdump_update_some(m, fd, max_bytes)
                   : pp_perfmap_update_some(m, fd, max_bytes);
}

static void read_job(void *arg, bool run);

/* The end of a read: more to read in its next turn (queued again, true), or done. */
static bool requeue(job *j)
{
    pp_pmreader *r = j->src->r;
    return pp_workpool_submit(r->pool, read_job, j) == 0;
}

static void read_job(void *arg, bool run)
{
    job *j = arg;
    pp_pmsrc *src = j->src;
    pp_pmreader *r = src->r;
    bool more = false, failed = false;
    long added = 0;
    for (int turn = 0; run && turn < TURN_CHUNKS; turn++) {
        if (!may_read(r))
            break;
        double t0 = thread_cpu();
        pthread_mutex_lock(&src->mu);
        long n = update(&src->map, j->fd, j->jitdump, PP_PMREAD_CHUNK);
        more = n >= 0 && !src->map.complete;
        failed = n < 0;
        pthread_mutex_unlock(&src->mu);
        add_spent(r, thread_cpu() - t0);
        if (n > 0)
            added += n;
        if (!more)
            break;
    }
    pthread_mutex_lock(&src->mu);
    /* also when a stop came before this turn read anything */
    bool left = !failed && !src->map.complete;
    pthread_mutex_unlock(&src->mu);
    if (added || left)
        pp_debug("symbols: perf map read in the background: %ld new entries%s", added,
                 left ? ", more to read" : "");
    /* a read that yielded with more to read goes to the back of the queue (the others' turn) */
    if (run && more && may_read(r) && requeue(j))
        return;
    close(j->fd);
    pthread_mutex_lock(&src->mu);
    src->busy = false;
    pthread_mutex_unlock(&src->mu);
    pp_pmsrc_put(src);
    free(j);
    reader_put(r); /* the last reference frees the pool: this thread then exits */
}

static bool stopped(pp_pmreader *r)
{
    pthread_mutex_lock(&r->mu);
    bool v = r->stopped;
    pthread_mutex_unlock(&r->mu);
    return v;
}

long pp_pmsrc_refresh(pp_pmsrc *src, int fd, bool jitdump, uint64_t *inline_left)
{
    if (stopped(src->r)) { /* stopping: named from what was read */
        close(fd);
        return 0;
    }
    pthread_mutex_lock(&src->mu);
    if (src->busy) { /* the running read goes on; a change is seen at the next refresh */
        pthread_mutex_unlock(&src->mu);
        close(fd);
        return 0;
    }
    uint64_t unread = pp_perfmap_unread(&src->map, fd);
    if (unread <= *inline_left) {
        long n = update(&src->map, fd, jitdump, *inline_left);
        pthread_mutex_unlock(&src->mu);
        close(fd);
        *inline_left -= unread < *inline_left ? unread : *inline_left;
        return n;
    }
    job *j = malloc(sizeof(*j));
    if (!j) {
        pthread_mutex_unlock(&src->mu);
        close(fd);
        return 0;
    }
    *j = (job){.src = src, .fd = fd, .jitdump = jitdump};
    pp_debug("symbols: perf map: %llu MiB to read, in the background",
             (unsigned long long)(unread >> 20));
    src->busy = true;
    src->refs++;
    pthread_mutex_unlock(&src->mu);
    pp_pmreader *r = src->r;
    pthread_mutex_lock(&r->mu);
    r->refs++; /* the read's: the reader outlives it */
    pthread_mutex_unlock(&r->mu);
    if (pp_workpool_submit(r->pool, read_job, j) < 0) {
        pthread_mutex_lock(&src->mu);
        src->busy = false;
        src->refs--;
        pthread_mutex_unlock(&src->mu);
        reader_put(r);
        close(fd);
        free(j);
    }
    return 0;
}

bool pp_pmsrc_find(pp_pmsrc *src, uint64_t addr, char *buf, size_t bufsz)
{
    pthread_mutex_lock(&src->mu);
    const char *name = pp_perfmap_find(&src->map, addr);
    if (name)
        snprintf(buf, bufsz, "%s", name);
    pthread_mutex_unlock(&src->mu);
    return name != NULL;
}

void pp_pmsrc_clear(pp_pmsrc *src)
{
    pthread_mutex_lock(&src->mu);
    if (!src->busy)
        pp_perfmap_free(&src->map); /* the drop count stays */
    pthread_mutex_unlock(&src->mu);
}

void pp_pmsrc_get_stats(pp_pmsrc *src, pp_pmsrc_stats *out)
{
    pthread_mutex_lock(&src->mu);
    *out = (pp_pmsrc_stats){.dropped = src->map.dropped,
                            .bytes = pp_perfmap_memory(&src->map),
                            .entries = src->map.n,
                            .reading = src->busy,
                            .complete = src->map.complete,
                            .cap_logged = src->map.cap_logged};
    pthread_mutex_unlock(&src->mu);
}

void pp_pmsrc_set_cap_logged(pp_pmsrc *src)
{
    pthread_mutex_lock(&src->mu);
    src->map.cap_logged = 1;
    pthread_mutex_unlock(&src->mu);
}
