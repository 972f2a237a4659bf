#include "merge/profile.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"

typedef struct {
    uint32_t off, len;
    uint64_t count;
    uint32_t tid; /* the thread the samples were taken on; 0 when not recorded */
} stack_ent;

struct pp_stack_table {
    uint32_t *frames; /* all stacks' frame ids, concatenated */
    size_t nframes, frames_cap;
    stack_ent *ents;
    size_t n, cap;
    pp_htab index; /* of uint32_t indexes into ents */
    uint64_t total;
    size_t ntid; /* entries with a tid */
};

typedef struct mapping {
    uint32_t file, build_id; /* string ids */
} mapping;

struct pp_profile {
    uint64_t generation; /* unique in this process, never reused (see pp_profile_generation) */
    pp_strtab *strings;
    pp_pid_profile **pids;
    size_t n, cap;
    pp_htab index; /* of uint32_t indexes into pids */
    mapping *maps; /* mapping id i + 1 at maps[i] */
    size_t nmaps, maps_cap;
    pp_u64map map_index;  /* file << 32 | build_id -> mapping id */
    pp_u64map frame_maps; /* (uint32_t)pid << 32 | frame -> mapping id */
};

static uint64_t hash_stack(uint32_t tid, const uint32_t *f, size_t n)
{
    return pp_hash_bytes(f, n * sizeof(*f), n ^ (uint64_t)tid << 32);
}

static void table_free(pp_stack_table *t)
{
    if (!t)
        return;
    free(t->frames);
    free(t->ents);
    pp_htab_free(&t->index);
    free(t);
}

static int table_add(pp_stack_table *t, uint32_t tid, const uint32_t *f, size_t n, uint64_t count)
{
    if (!t->index.cap && pp_htab_reserve(&t->index, 32) < 0) /* 64 slots at first */
        return -1;
    uint64_t h = hash_stack(tid, f, n);
    pp_htab_probe p;
    for (uint32_t *i = pp_htab_first(&t->index, h, &p); i; i = pp_htab_next(&t->index, &p)) {
        stack_ent *e = &t->ents[*i];
        /* an empty stack has no frames (t->frames may still be NULL) */
        if (e->len == n && e->tid == tid &&
            (n == 0 || memcmp(t->frames + e->off, f, n * sizeof(*f)) == 0)) {
            e->count += count;
            t->total += count;
            return 0;
        }
    }
    if (t->nframes + n > UINT32_MAX || t->n >= UINT32_MAX - 1)
        return -1;
    if (t->nframes + n > t->frames_cap) {
        size_t nc = t->frames_cap ? t->frames_cap * 2 : 256;
        while (nc < t->nframes + n)
            nc *= 2;
        uint32_t *nf = realloc(t->frames, nc * sizeof(*nf));
        if (!nf)
            return -1;
        t->frames = nf;
        t->frames_cap = nc;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        stack_ent *ne = realloc(t->ents, nc * sizeof(*ne));
        if (!ne)
            return -1;
        t->ents = ne;
        t->cap = nc;
    }
    uint32_t *slot = pp_htab_add(&t->index, h);
    if (!slot)
        return -1;
    if (n)
        memcpy(t->frames + t->nframes, f, n * sizeof(*f));
    t->ents[t->n] = (stack_ent){(uint32_t)t->nframes, (uint32_t)n, count, tid};
    t->ntid += tid != 0;
    t->nframes += n;
    *slot = (uint32_t)t->n++;
    t->total += count;
    return 0;
}

pp_profile *pp_profile_new(void)
{
    pp_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    PP_HTAB_INIT(&p->index, uint32_t, 50);
    p->strings = pp_strtab_new();
    if (!p->strings) {
        free(p);
        return NULL;
    }
    static _Atomic uint64_t next_generation = 1;
    p->generation = atomic_fetch_add(&next_generation, 1);
    return p;
}

uint64_t pp_profile_generation(const pp_profile *p)
{
    return p->generation;
}

static void pid_free(pp_pid_profile *pp)
{
    if (!pp)
        return;
    json_decref(pp->app_metadata);
    table_free(pp->stacks);
    free(pp);
}

void pp_profile_free(pp_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        pid_free(p->pids[i]);
    free(p->pids);
    pp_htab_free(&p->index);
    free(p->maps);
    pp_u64map_free(&p->map_index);
    pp_u64map_free(&p->frame_maps);
    pp_strtab_free(p->strings);
    free(p);
}

pp_strtab *pp_profile_strings(pp_profile *p)
{
    return p->strings;
}

const char *pp_profile_str(const pp_profile *p, uint32_t id)
{
    return pp_strtab_get(p->strings, id);
}

uint32_t pp_profile_intern(pp_profile *p, const char *s)
{
    return pp_strtab_intern_cstr(p->strings, s ? s : "");
}

static uint64_t hash_pid(int pid)
{
    return pp_hash_u64((uint64_t)(unsigned)pid);
}

/* The index slot of pid's entry, or NULL. */
static uint32_t *pid_find(const pp_profile *p, int pid)
{
    pp_htab_probe pr;
    for (uint32_t *i = pp_htab_first(&p->index, hash_pid(pid), &pr); i;
         i = pp_htab_next(&p->index, &pr))
        if (p->pids[*i]->pid == pid)
            return i;
    return NULL;
}

pp_pid_profile *pp_profile_get(pp_profile *p, int pid, bool create)
{
    uint32_t *i = pid_find(p, pid);
    if (i)
        return p->pids[*i];
    if (!create)
        return NULL;
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 32;
        pp_pid_profile **np = realloc(p->pids, nc * sizeof(*np));
        if (!np)
            return NULL;
        p->pids = np;
        p->cap = nc;
    }
    pp_pid_profile *pp = calloc(1, sizeof(*pp));
    if (!pp)
        return NULL;
    pp->stacks = calloc(1, sizeof(*pp->stacks));
    uint32_t *slot = pp->stacks ? pp_htab_add(&p->index, hash_pid(pid)) : NULL;
    if (!slot) {
        free(pp->stacks);
        free(pp);
        return NULL;
    }
    PP_HTAB_INIT(&pp->stacks->index, uint32_t, 50);
    pp->pid = pid;
    *slot = (uint32_t)p->n;
    p->pids[p->n++] = pp;
    return pp;
}

size_t pp_profile_npids(const pp_profile *p)
{
    return p->n;
}

pp_pid_profile *pp_profile_at(const pp_profile *p, size_t i)
{
    return i < p->n ? p->pids[i] : NULL;
}

void pp_profile_remove(pp_profile *p, int pid)
{
    uint32_t *slot = pid_find(p, pid);
    if (!slot)
        return;
    size_t i = *slot;
    pp_htab_remove(&p->index, slot);
    pid_free(p->pids[i]);
    memmove(p->pids + i, p->pids + i + 1, (p->n - i - 1) * sizeof(*p->pids));
    p->n--;
    size_t pos = 0;
    for (uint32_t *e; (e = pp_htab_each(&p->index, &pos));)
        if (*e > i)
            (*e)--; /* the entries after it moved down by one */
}

int pp_pid_add(pp_pid_profile *pp, const uint32_t *frames, size_t n, uint64_t count)
{
    return table_add(pp->stacks, 0, frames, n, count);
}

int pp_pid_add_tid(pp_pid_profile *pp, uint32_t tid, const uint32_t *frames, size_t n,
                   uint64_t count)
{
    return table_add(pp->stacks, tid, frames, n, count);
}

uint32_t pp_pid_stack_tid(const pp_pid_profile *pp, size_t i)
{
    return pp->stacks->ents[i].tid;
}

bool pp_pid_has_tids(const pp_pid_profile *pp)
{
    return pp->stacks->ntid > 0;
}

int pp_pid_drop_tids(pp_pid_profile *pp)
{
    pp_stack_table *t = pp->stacks;
    if (!t->ntid)
        return 0;
    pp_stack_table *nt = calloc(1, sizeof(*nt));
    if (!nt)
        return -1;
    PP_HTAB_INIT(&nt->index, uint32_t, 50);
    for (size_t i = 0; i < t->n; i++)
        if (table_add(nt, 0, t->frames + t->ents[i].off, t->ents[i].len, t->ents[i].count) < 0) {
            table_free(nt);
            return -1;
        }
    table_free(t);
    pp->stacks = nt;
    return 0;
}

size_t pp_pid_nstacks(const pp_pid_profile *pp)
{
    return pp->stacks->n;
}

const uint32_t *pp_pid_stack(const pp_pid_profile *pp, size_t i, size_t *n, uint64_t *count)
{
    const stack_ent *e = &pp->stacks->ents[i];
    *n = e->len;
    if (count)
        *count = e->count;
    return pp->stacks->frames + e->off;
}

void pp_pid_set_count(pp_pid_profile *pp, size_t i, uint64_t count)
{
    stack_ent *e = &pp->stacks->ents[i];
    pp->stacks->total = pp->stacks->total - e->count + count;
    e->count = count;
}

uint64_t pp_pid_total(const pp_pid_profile *pp)
{
    return pp->stacks->total;
}

void pp_pid_clear(pp_pid_profile *pp)
{
    pp_stack_table *t = pp->stacks;
    t->nframes = 0;
    t->n = 0;
    t->total = 0;
    t->ntid = 0;
    pp_htab_clear(&t->index);
}

/* Gives frame f of src (src_profile's ids) dst's copy of its mapping: (pid, id) in dst, or
 * (PP_ANY_PID, id) when src has it for every process. 0, or -1 on OOM. */
static int copy_frame_mapping(pp_profile *dst_profile, const pp_pid_profile *dst,
                              const pp_profile *src_profile, const pp_pid_profile *src, uint32_t f,
                              uint32_t id)
{
    int pid = src->pid;
    uint32_t m = pp_profile_frame_mapping(src_profile, pid, f);
    if (!m)
        return 0;
    if (!pp_u64map_get(&src_profile->frame_maps, (uint64_t)(uint32_t)pid << 32 | f))
        pid = PP_ANY_PID;
    const mapping *sm = &src_profile->maps[m - 1];
    uint32_t dm = pp_profile_mapping(dst_profile, pp_profile_str(src_profile, sm->file),
                                     pp_profile_str(src_profile, sm->build_id));
    if (dm == UINT32_MAX)
        return -1;
    return pp_profile_set_frame_mapping(dst_profile, pid == PP_ANY_PID ? pid : dst->pid, id, dm);
}

int pp_pid_add_all(pp_profile *dst_profile, pp_pid_profile *dst, const pp_profile *src_profile,
                   const pp_pid_profile *src)
{
    uint32_t buf[512];
    bool maps = pp_htab_count(&src_profile->frame_maps.t) > 0;
    for (size_t i = 0; i < pp_pid_nstacks(src); i++) {
        size_t n;
        uint64_t count;
        const uint32_t *f = pp_pid_stack(src, i, &n, &count);
        uint32_t *ids = n <= 512 ? buf : malloc(n * sizeof(*ids));
        if (!ids)
            return -1;
        int rc = 0;
        for (size_t k = 0; k < n; k++) {
            ids[k] = pp_profile_intern(dst_profile, pp_profile_str(src_profile, f[k]));
            if (maps && rc == 0)
                rc = copy_frame_mapping(dst_profile, dst, src_profile, src, f[k], ids[k]);
        }
        if (rc == 0)
            rc = pp_pid_add_tid(dst, pp_pid_stack_tid(src, i), ids, n, count);
        if (ids != buf)
            free(ids);
        if (rc < 0)
            return -1;
    }
    return 0;
}

uint32_t pp_profile_mapping(pp_profile *p, const char *file, const char *build_id)
{
    uint32_t f = pp_profile_intern(p, file), b = pp_profile_intern(p, build_id);
    if (f == UINT32_MAX || b == UINT32_MAX)
        return UINT32_MAX;
    uint64_t key = (uint64_t)f << 32 | b;
    uint64_t *v = pp_u64map_get(&p->map_index, key);
    if (v)
        return (uint32_t)*v;
    if (p->nmaps == p->maps_cap) {
        size_t nc = p->maps_cap ? p->maps_cap * 2 : 16;
        mapping *nm = nc < UINT32_MAX ? realloc(p->maps, nc * sizeof(*nm)) : NULL;
        if (!nm)
            return UINT32_MAX;
        p->maps = nm;
        p->maps_cap = nc;
    }
    if (pp_u64map_put(&p->map_index, key, p->nmaps + 1) < 0)
        return UINT32_MAX;
    p->maps[p->nmaps++] = (mapping){f, b};
    return (uint32_t)p->nmaps;
}

size_t pp_profile_nmappings(const pp_profile *p)
{
    return p->nmaps;
}

void pp_profile_mapping_get(const pp_profile *p, uint32_t id, uint32_t *file, uint32_t *build_id)
{
    bool ok = id >= 1 && id <= p->nmaps;
    *file = ok ? p->maps[id - 1].file : 0;
    *build_id = ok ? p->maps[id - 1].build_id : 0;
}

int pp_profile_set_frame_mapping(pp_profile *p, int pid, uint32_t frame, uint32_t mapping)
{
    uint64_t key = (uint64_t)(uint32_t)pid << 32 | frame;
    if (!mapping || pp_u64map_get(&p->frame_maps, key))
        return 0;
    return pp_u64map_put(&p->frame_maps, key, mapping);
}

uint32_t pp_profile_frame_mapping(const pp_profile *p, int pid, uint32_t frame)
{
    if (!pp_htab_count(&p->frame_maps.t))
        return 0;
    const uint64_t *v = pp_u64map_get(&p->frame_maps, (uint64_t)(uint32_t)pid << 32 | frame);
    if (!v)
        v = pp_u64map_get(&p->frame_maps, (uint64_t)(uint32_t)PP_ANY_PID << 32 | frame);
    return v ? (uint32_t)*v : 0;
}

int pp_profile_drop_tids(pp_profile *p)
{
    int rc = 0;
    for (size_t i = 0; i < p->n; i++)
        rc |= pp_pid_drop_tids(p->pids[i]);
    return rc;
}

size_t pp_profile_bytes(const pp_profile *p)
{
    size_t b = pp_strtab_bytes(p->strings) + p->cap * sizeof(*p->pids) + pp_htab_bytes(&p->index) +
               p->maps_cap * sizeof(*p->maps) + pp_htab_bytes(&p->map_index.t) +
               pp_htab_bytes(&p->frame_maps.t);
    for (size_t i = 0; i < p->n; i++) {
        const pp_stack_table *t = p->pids[i]->stacks;
        b += sizeof(*p->pids[i]) + t->frames_cap * sizeof(*t->frames) + t->cap * sizeof(*t->ents) +
             pp_htab_bytes(&t->index);
    }
    return b;
}
