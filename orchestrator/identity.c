#include "orchestrator/identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/containers.h"
#include "base/log.h"
#include "runtimes/runtime.h"

typedef struct entry {
    int pid;
    unsigned long long start;
    pp_proc_kind kind;
    bool seen; /* in the current session */
    char *appid;
    json_t *md;
} entry;

struct pp_identity {
    const pp_config *cfg;
    pp_containers *containers;
    entry *e;
    size_t n, cap;
    const pp_proc_list *procs;
};

pp_identity *pp_identity_new(const pp_config *cfg)
{
    pp_identity *id = calloc(1, sizeof(*id));
    if (!id)
        return NULL;
    id->cfg = cfg;
    if (!cfg->disable_container_names) {
        /* The host's files as PID 1 sees them; when PID 1's root cannot be read (polyprof in a
         * sandbox that hides PID 1), polyprof's own root is the best view of the host. */
        const char *root = access("/proc/1/root/", R_OK | X_OK) == 0 ? "/proc/1/root" : "/";
        if (root[1] == '\0')
            pp_debug("containers: /proc/1/root is not readable; using / as the host root");
        id->containers = pp_containers_new(root, "/var/run/docker.sock");
    }
    return id;
}

static void entry_clear(entry *e)
{
    free(e->appid);
    json_decref(e->md);
}

void pp_identity_free(pp_identity *id)
{
    if (!id)
        return;
    for (size_t i = 0; i < id->n; i++)
        entry_clear(&id->e[i]);
    free(id->e);
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

/* The cached entry of process p, computed when p is new (or its pid was reused). */
static entry *add(pp_identity *id, const pp_proc *p)
{
    entry *e = NULL;
    for (size_t i = 0; i < id->n && !e; i++)
        if (id->e[i].pid == p->pid)
            e = &id->e[i];
    if (e && e->start == p->start_ticks && e->kind == p->kind)
        return e;
    if (e) {
        entry_clear(e); /* pid reused by another process */
    } else {
        if (id->n == id->cap) {
            size_t nc = id->cap ? id->cap * 2 : 64;
            entry *ne = realloc(id->e, nc * sizeof(*ne));
            if (!ne)
                return NULL;
            id->e = ne;
            id->cap = nc;
        }
        e = &id->e[id->n++];
    }
    *e = (entry){.pid = p->pid, .start = p->start_ticks, .kind = p->kind};
    e->appid = pp_runtime_appid(p->pid, p->kind);
    e->md = pp_app_metadata(p->pid, p->kind);
    return e;
}

void pp_identity_set_procs(pp_identity *id, const pp_proc_list *procs)
{
    id->procs = procs;
    if (id->containers)
        pp_containers_new_session(id->containers);
    for (size_t i = 0; i < procs->n; i++)
        if (pp_runtime_get(procs->procs[i].kind))
            add(id, &procs->procs[i]);
}

void pp_identity_annotate(pp_identity *id, pp_profile *prof, pp_discovery *disc)
{
    for (size_t i = 0; i < id->n; i++)
        id->e[i].seen = false;
    for (size_t i = 0; i < pp_profile_npids(prof); i++) {
        pp_pid_profile *pp = pp_profile_at(prof, i);
        if (pp->pid <= 0)
            continue;
        if (id->containers && !pp->container)
            pp->container = pp_profile_intern(prof, pp_container_name(id->containers, pp->pid));
        const pp_proc *p = find_proc(id->procs, pp->pid);
        pp_proc one;
        if (!p && disc && pp_discover_one(disc, pp->pid, &one) == 0)
            p = &one;
        if (!p)
            continue; /* gone: no identity beyond its comm */
        entry *e = add(id, p);
        if (!e)
            continue;
        e->seen = true;
        if (!pp->appid && e->appid)
            pp->appid = pp_profile_intern(prof, e->appid);
        if (!pp->app_metadata && e->md)
            pp->app_metadata = json_incref(e->md);
    }
    /* Bounded cache: forget processes that did not appear in this session. */
    size_t k = 0;
    for (size_t i = 0; i < id->n; i++) {
        if (id->e[i].seen)
            id->e[k++] = id->e[i];
        else
            entry_clear(&id->e[i]);
    }
    id->n = k;
}
