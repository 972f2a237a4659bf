/* Registering processes that appear during a session with their runtime's in-sampler walker
 * (adopt.h). */
#include "orchestrator/adopt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/runtime.h"

#define PP_ADOPT_DELAY_S 0.2
#define RETRY_S 0.5
#define TRIES 3         /* attempts per process (an interpreter still starting fails once) */
#define PENDING_MAX 512 /* processes waiting; more are left to the next session's discovery */
#define PER_SESSION 256 /* registrations per session: a fork or exec storm costs a bound */
#define TAKE_BATCH 256

typedef struct pending {
    int pid;
    int tries;
    double due;
} pending;

struct pp_adopter {
    pp_runner_task tasks[PP_KIND_COUNT];
    size_t ntasks;
    pending v[PENDING_MAX];
    size_t n;
    size_t adopted; /* this session */
};

pp_adopter *pp_adopter_new(void)
{
    return calloc(1, sizeof(pp_adopter));
}

void pp_adopter_free(pp_adopter *a)
{
    free(a);
}

void pp_adopter_session(pp_adopter *a, const pp_runner_task *tasks, size_t ntasks)
{
    a->ntasks = 0;
    for (size_t i = 0; i < ntasks && a->ntasks < PP_KIND_COUNT; i++)
        if (tasks[i].backend->walks_new_processes)
            a->tasks[a->ntasks++] = tasks[i];
    a->adopted = 0;
}

static void queue(pp_adopter *a, int pid, double due)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].pid == pid)
            return;
    if (a->n < PENDING_MAX)
        a->v[a->n++] = (pending){.pid = pid, .due = due};
}

static const pp_runner_task *task_of(const pp_adopter *a, pp_proc_kind kind)
{
    for (size_t i = 0; i < a->ntasks; i++)
        if (a->tasks[i].kind == kind)
            return &a->tasks[i];
    return NULL;
}

/* One attempt; true when pid is done with (registered, not a walked runtime, gone, refused). */
static bool adopt(pp_adopter *a, pp_discovery *d, pending *e)
{
    pp_proc p;
    if (pp_discover_one(d, e->pid, &p) < 0)
        return true; /* gone, too young for --min-duration, outside --pids, polyprof's own */
    const pp_runner_task *t = task_of(a, p.kind);
    if (!t || p.blacklisted || !pp_inwalk_possible(t->ctx))
        return true;
    if (pp_sampler_walk_attached(t->ctx->sampler, p.pid, p.start_ticks))
        return true; /* registered by the backend's start */
    /* A fork the sampler walks with its ancestor's data is left so: named through the
     * ancestor's memory, its frames stay named when it exits before the drain (its own state
     * would read a process that is gone). The next session's discovery registers it. */
    if (pp_sampler_walk_forked(t->ctx->sampler, p.pid))
        return true;
    char err[256] = "";
    pp_inwalk_status st = pp_inwalk_attach(t->ctx, &p, err, sizeof(err));
    if (st == PP_INWALK_OK) {
        a->adopted++;
        pp_debug("%s pid %d (%s): walked in the sampler from now on (started during the "
                 "session)",
                 t->ctx->rt->label, p.pid, p.comm);
        return true;
    }
    if (st == PP_INWALK_ERROR && ++e->tries < TRIES)
        return false;
    pp_debug("%s pid %d (%s), started during the session, not walked: %s", t->ctx->rt->label, p.pid,
             p.comm, err);
    return true;
}

int pp_adopter_run(pp_adopter *a, pp_sampler *s, pp_discovery *d, double now)
{
    int pids[TAKE_BATCH];
    size_t n = pp_sampler_new_pids(s, pids, TAKE_BATCH);
    if (!a->ntasks) {
        a->n = 0;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        queue(a, pids[i], now + PP_ADOPT_DELAY_S);
    double next = INFINITY;
    for (size_t i = 0; i < a->n;) {
        pending *e = &a->v[i];
        if (e->due > now) {
            next = fmin(next, e->due);
            i++;
            continue;
        }
        if (a->adopted < PER_SESSION && !adopt(a, d, e)) {
            e->due = now + RETRY_S;
            next = fmin(next, e->due);
            i++;
            continue;
        }
        a->v[i] = a->v[--a->n];
    }
    return isinf(next) ? -1 : (int)ceil((next - now) * 1000);
}
