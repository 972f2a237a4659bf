#include "runtimes/runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

typedef struct job {
    const pp_backend *drv;
    const pp_runtime_ctx *ctx;
    pp_proc *procs;
    size_t n;
    double deadline;
    void *session;
    pp_profile *out;
    int rc;
    pthread_t thread;
    bool started;
    /* done/abandoned under the runner lock: an abandoned job owns itself and frees its state
     * when (if ever) its thread returns. */
    bool done, abandoned;
    bool stop_early; /* the session ended before its deadline (signal): collect at once */
    pthread_mutex_t *lock;
    pthread_cond_t *cond;
} job;

struct pp_runner {
    job **jobs;
    size_t n;
    pp_profile **results;
};

/* Process-wide, so that an abandoned job's thread can still signal after its runner is gone. */
static pthread_mutex_t runner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t runner_cond = PTHREAD_COND_INITIALIZER;
static size_t abandoned_running; /* abandoned jobs whose thread has not returned (runner_lock) */

static void job_free(job *j)
{
    if (j->session && j->drv->free)
        j->drv->free(j->session);
    pp_profile_free(j->out);
    free(j->procs);
    free(j);
}

static void *job_main(void *arg)
{
    job *j = arg;
    void *session = j->drv->start(j->ctx, j->procs, j->n, j->deadline);
    pthread_mutex_lock(j->lock);
    j->session = session;
    bool early = j->stop_early;
    pthread_mutex_unlock(j->lock);
    if (session && early && j->drv->stop)
        j->drv->stop(session);
    j->rc = session ? j->drv->collect(session, j->out) : -1;
    pthread_mutex_lock(j->lock);
    bool abandoned = j->abandoned;
    j->done = true;
    pthread_cond_broadcast(j->cond);
    pthread_mutex_unlock(j->lock);
    if (abandoned) {
        job_free(j); /* nobody waits for it any more; its driver's free may use the sampler */
        pthread_mutex_lock(&runner_lock);
        abandoned_running--; /* only now is nothing of it running */
        pthread_mutex_unlock(&runner_lock);
    }
    return NULL;
}

pp_runner *pp_runner_start(const pp_runner_task *tasks, size_t n, const pp_proc *procs,
                           size_t nprocs, double deadline)
{
    pp_runner *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->jobs = calloc(n ? n : 1, sizeof(*r->jobs));
    r->results = calloc(n ? n : 1, sizeof(*r->results));
    if (!r->jobs || !r->results) {
        pp_runner_free(r);
        return NULL;
    }
    for (size_t d = 0; d < n; d++) {
        const pp_backend *drv = tasks[d].backend;
        if (!drv || !drv->start || !drv->collect)
            continue;
        job *j = calloc(1, sizeof(*j));
        if (!j)
            continue;
        j->procs = calloc(nprocs ? nprocs : 1, sizeof(*j->procs));
        j->out = pp_profile_new();
        if (!j->procs || !j->out) {
            job_free(j);
            continue;
        }
        for (size_t i = 0; i < nprocs; i++)
            if (procs[i].kind == tasks[d].kind && !procs[i].blacklisted)
                j->procs[j->n++] = procs[i];
        if (j->n == 0) {
            job_free(j);
            continue;
        }
        j->drv = drv;
        j->ctx = tasks[d].ctx;
        j->deadline = deadline;
        j->lock = &runner_lock;
        j->cond = &runner_cond;
        if (pthread_create(&j->thread, NULL, job_main, j) != 0) {
            pp_error("cannot start a thread for the %s profiler", drv->name);
            job_free(j);
            continue;
        }
        pthread_detach(j->thread);
        j->started = true;
        r->jobs[r->n++] = j;
        pp_debug("%s profiler: %zu processes", drv->name, j->n);
    }
    return r;
}

int pp_error_stack(pp_profile *out, int pid, const char *comm, const char *runtime,
                   const char *what, const char *reason)
{
    pp_pid_profile *pp = pp_profile_get(out, pid, true);
    if (!pp)
        return -1;
    pp_pid_clear(pp);
    pp->comm = pp_profile_intern(out, comm ? comm : "");
    if (runtime)
        pp->runtime = runtime;
    char frame[512];
    snprintf(frame, sizeof(frame), "[Profiling %s: %s]", what, reason);
    uint32_t f = pp_profile_intern(out, frame);
    pp_pid_add(pp, &f, 1, 1);
    return 0;
}

static void error_stacks(job *j, pp_profile *out, const char *reason)
{
    for (size_t i = 0; i < j->n; i++)
        if (pp_error_stack(out, j->procs[i].pid, j->procs[i].comm, NULL, "error", reason) < 0)
            return;
}

static void abs_time(double mono_deadline, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    double now = (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
    double t = mono_deadline > now ? mono_deadline : now;
    ts->tv_sec = (time_t)t;
    ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
}

/* Waits for j->done until the monotonic deadline. Called with runner_lock held. */
static bool wait_done(job *j, double until)
{
    struct timespec ts;
    abs_time(until, &ts);
    while (!j->done) {
        int rc = pthread_cond_clockwait(&runner_cond, &runner_lock, CLOCK_MONOTONIC, &ts);
        if (rc == ETIMEDOUT)
            break;
    }
    return j->done;
}

size_t pp_runner_finish(pp_runner *r, double grace, pp_profile ***profiles)
{
    size_t nres = 0;
    for (size_t i = 0; i < r->n; i++) {
        job *j = r->jobs[i];
        pthread_mutex_lock(&runner_lock);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, until = j->deadline + grace;
        if (now < j->deadline && !j->done) {
            /* The session ended early: the driver must not wait for its deadline, nor the
             * runner for it. */
            j->stop_early = true;
            until = now + grace;
            void *session = j->session;
            pthread_mutex_unlock(&runner_lock);
            if (session && j->drv->stop)
                j->drv->stop(session);
            pthread_mutex_lock(&runner_lock);
        }
        bool ok = wait_done(j, until);
        if (!ok && j->session && j->drv->stop) {
            pthread_mutex_unlock(&runner_lock);
            pp_warn("%s profiler overran the session; stopping it", j->drv->name);
            j->drv->stop(j->session);
            pthread_mutex_lock(&runner_lock);
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            ok = wait_done(j, (double)now.tv_sec + (double)now.tv_nsec / 1e9 + 2.0);
        }
        pp_profile *res = NULL;
        const char *name = j->drv->name; /* static; j may be freed once abandoned */
        if (ok) {
            res = j->out;
            j->out = NULL;
            if (j->rc < 0 && !j->session)
                error_stacks(j, res, "profiler failed to start");
        } else {
            /* Abandon it: the thread frees the job if it ever returns. */
            j->abandoned = true;
            abandoned_running++;
            r->jobs[i] = NULL;
            pp_error("%s profiler did not stop; its processes get an error stack", j->drv->name);
            res = pp_profile_new();
            if (res)
                error_stacks(j, res, "profiler did not finish in time");
        }
        pthread_mutex_unlock(&runner_lock);
        for (size_t k = 0; res && k < pp_profile_npids(res); k++) {
            pp_pid_profile *pp = pp_profile_at(res, k);
            if (!pp->profiler)
                pp->profiler = name; /* the low-coverage frame names it (merge/scale.h) */
        }
        if (res)
            r->results[nres++] = res;
    }
    *profiles = r->results;
    return nres;
}

void pp_runner_free(pp_runner *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        job *j = r->jobs[i];
        if (!j)
            continue;
        pthread_mutex_lock(&runner_lock);
        bool done = j->done;
        if (!done && !j->abandoned) {
            j->abandoned = true;
            abandoned_running++;
        }
        pthread_mutex_unlock(&runner_lock);
        if (done)
            job_free(j);
    }
    for (size_t i = 0; r->results && i < r->n; i++)
        pp_profile_free(r->results[i]);
    free(r->jobs);
    free(r->results);
    free(r);
}

void pp_skip_note(pp_skip *k, const pp_proc *p, const char *runtime, bool error, const char *reason)
{
    k->pid = p->pid;
    snprintf(k->comm, sizeof(k->comm), "%s", p->comm);
    k->error = error;
    snprintf(k->reason, sizeof(k->reason), "%s", reason);
    if (error)
        pp_warn_proc(k->pid, p->start_ticks, "%s pid %d (%s) cannot be profiled: %s", runtime,
                     k->pid, k->comm, reason);
    else
        pp_info_proc(k->pid, p->start_ticks, "%s pid %d (%s) not profiled: %s", runtime, k->pid,
                     k->comm, reason);
}

int pp_skips_emit(pp_profile *out, const pp_skip *k, size_t n, const char *runtime)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (pp_error_stack(out, k[i].pid, k[i].comm, runtime, k[i].error ? "error" : "skipped",
                           k[i].reason) < 0)
            rc = -1;
    return rc;
}

size_t pp_walk_or_hand_over(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n,
                            const char *tool, const char *no_walk, pp_proc *fallback, size_t *nfall,
                            pp_skip *skips, size_t *nskips)
{
    const char *rt = ctx->rt->label;
    bool can_walk = pp_inwalk_possible(ctx);
    size_t walked = 0;
    *nfall = *nskips = 0;
    for (size_t i = 0; i < n; i++) {
        const pp_proc *p = &procs[i];
        char err[256] = "";
        pp_inwalk_status st = PP_INWALK_UNSUPPORTED;
        if (can_walk)
            st = pp_inwalk_attach(ctx, p, err, sizeof(err));
        else
            snprintf(err, sizeof(err), "%s", no_walk);
        if (st == PP_INWALK_OK)
            walked++;
        else if (st == PP_INWALK_GONE)
            continue;
        else if (st == PP_INWALK_UNSUPPORTED && tool) {
            fallback[(*nfall)++] = *p;
            pp_info_proc(p->pid, p->start_ticks, "%s pid %d (%s): %s; profiled with %s", rt, p->pid,
                         p->comm, err, tool);
        } else {
            pp_skip_note(&skips[(*nskips)++], p, rt, can_walk && st != PP_INWALK_UNSUPPORTED, err);
        }
    }
    pp_debug("%s: %zu processes walked in the sampler, %zu handed to %s, %zu skipped", rt, walked,
             *nfall, tool ? tool : "no other profiler", *nskips);
    return walked;
}

size_t pp_runner_abandoned(void)
{
    pthread_mutex_lock(&runner_lock);
    size_t n = abandoned_running;
    pthread_mutex_unlock(&runner_lock);
    return n;
}
