#include "orchestrator/identity.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "base/hashtab.h"
#include "base/workpool.h"
#include "orchestrator/containers.h"
#include "base/log.h"
#include "runtimes/runtime.h"

/* Appids and metadata are computed on a few worker threads (a JVM's needs an attach request,
 * which a process that does not answer holds for seconds): the session starts at once, and one
 * slow process delays neither the others nor the session. */
#define IDENT_THREADS 4
/* Processes examined from the moment discovery lists them: past this many cached entries, a new
 * process is examined only once sampled (at the session's end; a host with thousands of idle
 * JVMs: their metadata, flags included, is tens of KiB each). */
#define IDENT_EAGER_MAX 4096
/* At exit, jobs still running get this long to end. */
#define IDENT_EXIT_WAIT_S 0.5

/* One process's appid and metadata, computed by a worker. Shared by its cache entry and the
 * job (refs); done, appid and md are written by the job and read under ident_lock. */
typedef struct ident_job {
    int refs;
    bool done;
    int pid;
    pp_proc_kind kind;
    char *appid;
    json_t *md;
} ident_job;

/* Process-wide: a job can finish after its pp_identity is gone. */
static pthread_mutex_t ident_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ident_done = PTHREAD_COND_INITIALIZER;

/* A process's cache entry, kept while discovery lists the process or the profile holds it (a
 * process idle for hours is examined once, not once per session). */
typedef struct entry {
    int pid;
    unsigned long long start;
    pp_proc_kind kind;
    unsigned long long session; /* the last session that listed it or sampled it */
    ident_job *job;             /* NULL: nothing to compute (native) or out of memory */
} entry;

struct pp_identity {
    const pp_config *cfg;
    pp_containers *containers;
    pp_workpool *pool;
    pp_htab e; /* of entry, by pid */
    unsigned long long session;
    size_t computed; /* jobs started (pp_identity_computed) */
    const pp_proc_list *procs;
};

static void job_unref(ident_job *j)
{
    pthread_mutex_lock(&ident_lock);
    bool last = --j->refs == 0;
    pthread_mutex_unlock(&ident_lock);
    if (last) {
        free(j->appid);
        json_decref(j->md);
        free(j);
    }
}

static void compute(ident_job *j)
{
    char *appid = pp_runtime_appid(j->pid, j->kind);
    json_t *md = pp_app_metadata(j->pid, j->kind);
    pthread_mutex_lock(&ident_lock);
    j->appid = appid;
    j->md = md;
    j->done = true;
    pthread_cond_broadcast(&ident_done);
    pthread_mutex_unlock(&ident_lock);
}

static void job_run(void *arg, bool run)
{
    if (run)
        compute(arg);
    job_unref(arg);
}

pp_identity *pp_identity_new(const pp_config *cfg)
{
    pp_identity *id = calloc(1, sizeof(*id));
    if (!id)
        return NULL;
    id->cfg = cfg;
    PP_HTAB_INIT(&id->e, entry, 50);
    if (!cfg->disable_container_names) {
        /* The host's files as PID 1 sees them; when PID 1's root cannot be read (polyprof in a
         * sandbox that hides PID 1), polyprof's own root is the best view of the host. */
        const char *root = access("/proc/1/root/", R_OK | X_OK) == 0 ? "/proc/1/root" : "/";
        if (root[1] == '\0')
            pp_debug("containers: /proc/1/root is not readable; using / as the host root");
        id->containers = pp_containers_new(root, "/var/run/docker.sock");
    }
    id->pool = pp_workpool_new(IDENT_THREADS); /* NULL: computed in the caller's thread */
    return id;
}

static void entry_clear(entry *e)
{
    if (e->job)
        job_unref(e->job);
    e->job = NULL;
}

/* pp_htab_filter: keeps the entries of the session *arg (clears the others). */
static bool entry_kept(void *ent, void *arg)
{
    entry *e = ent;
    if (e->session == *(unsigned long long *)arg)
        return true;
    entry_clear(e);
    return false;
}

void pp_identity_free(pp_identity *id)
{
    if (!id)
        return;
    /* at exit the attach requests were cancelled (pp_java_perfmaps_cleanup): running jobs end
     * at once, and are given a moment to, so that none is cut short (a trigger file left) */
    if (id->pool)
        pp_workpool_wait_idle(id->pool, pp_mono_now() + IDENT_EXIT_WAIT_S);
    pp_workpool_free(id->pool); /* never waits: a job still running finishes on its own */
    unsigned long long none = id->session + 1;
    pp_htab_filter(&id->e, entry_kept, &none);
    pp_htab_free(&id->e);
    pp_containers_free(id->containers);
    free(id);
}

static const pp_proc *find_proc(const pp_proc_list *l, int pid)
{
    for (size_t i = 0; l && i < l->n; i++)
        if (l->procs[i].pid == pid)
            return &l->procs[i];
    return NULL;
}

/* The cached entry of pid (h: its hash), or NULL. */
static entry *find(const pp_identity *id, int pid, uint64_t h)
{
    pp_htab_probe pr;
    entry *e = pp_htab_first(&id->e, h, &pr);
    while (e && e->pid != pid)
        e = pp_htab_next(&id->e, &pr);
    return e;
}

/* The cached entry of process p, computed when p is new (or its pid was reused, or it changed
 * kind: it exec'd, or mapped a runtime's library). Marked as used in this session. */
static entry *add(pp_identity *id, const pp_proc *p)
{
    uint64_t h = pp_hash_u64((uint64_t)(unsigned)p->pid);
    entry *e = find(id, p->pid, h);
    if (e && e->start == p->start_ticks && e->kind == p->kind) {
        e->session = id->session;
        return e;
    }
    if (e)
        entry_clear(e); /* pid reused by another process */
    else if (!(e = pp_htab_add(&id->e, h)))
        return NULL;
    *e = (entry){.pid = p->pid, .start = p->start_ticks, .kind = p->kind, .session = id->session};
    if (!pp_runtime_get(p->kind) || !(e->job = calloc(1, sizeof(*e->job))))
        return e; /* no identity for it */
    *e->job = (ident_job){.refs = 2, .pid = p->pid, .kind = p->kind};
    id->computed++;
    pp_debug("identity: examining pid %d (%s, %s)", p->pid, p->comm, pp_proc_kind_name(p->kind));
    if (!id->pool || pp_workpool_submit(id->pool, job_run, e->job) < 0)
        job_run(e->job, true);
    return e;
}

/* Waits until e's job is done or the monotonic deadline passed; true when done. */
static bool wait_job(const entry *e, double deadline)
{
    if (!e->job)
        return false;
    struct timespec ts = {.tv_sec = (time_t)deadline,
                          .tv_nsec = (long)((deadline - (double)(time_t)deadline) * 1e9)};
    pthread_mutex_lock(&ident_lock);
    while (!e->job->done &&
           pthread_cond_clockwait(&ident_done, &ident_lock, CLOCK_MONOTONIC, &ts) == 0)
        ;
    bool done = e->job->done;
    pthread_mutex_unlock(&ident_lock);
    return done;
}

void pp_identity_set_procs(pp_identity *id, const pp_proc_list *procs)
{
    id->procs = procs;
    id->session++;
    if (id->containers)
        pp_containers_new_session(id->containers);
    for (size_t i = 0; i < procs->n; i++) {
        const pp_proc *p = &procs->procs[i];
        if (pp_runtime_get(p->kind) && (pp_htab_count(&id->e) < IDENT_EAGER_MAX ||
                                        find(id, p->pid, pp_hash_u64((uint64_t)(unsigned)p->pid))))
            add(id, p);
    }
}

void pp_identity_annotate(pp_identity *id, pp_profile *prof, pp_discovery *disc, double session_end)
{
    double deadline = session_end + PP_IDENTITY_WAIT_S;
    for (size_t i = 0; i < pp_profile_npids(prof); i++) {
        pp_pid_profile *pp = pp_profile_at(prof, i);
        if (pp->pid <= 0)
            continue;
        const pp_proc *p = find_proc(id->procs, pp->pid);
        pp_proc one;
        if (!p && disc && pp_discover_one(disc, pp->pid, &one) == 0)
            p = &one;
        int who = pp->pid;
        if (!p && pp->fork_of) { /* a fork gone already: its ancestor's identity */
            p = find_proc(id->procs, pp->fork_of);
            if (!p && disc && pp_discover_one(disc, pp->fork_of, &one) == 0)
                p = &one;
            who = pp->fork_of;
        }
        if (id->containers && !pp->container)
            pp->container = pp_profile_intern(prof, pp_container_name(id->containers, who));
        if (!p)
            continue; /* gone: no identity beyond its comm */
        entry *e = add(id, p);
        if (!e)
            continue;
        if (!wait_job(e, deadline))
            continue; /* not ready: this session's profile has none for it */
        if (!pp->appid && e->job->appid)
            pp->appid = pp_profile_intern(prof, e->job->appid);
        if (!pp->app_metadata && e->job->md)
            pp->app_metadata = json_incref(e->job->md);
    }
    /* Bounded cache: forget processes that neither discovery listed nor the sampler sampled in
     * this session (gone, or their pid reused). */
    pp_htab_filter(&id->e, entry_kept, &id->session);
}

size_t pp_identity_computed(const pp_identity *id)
{
    return id->computed;
}
