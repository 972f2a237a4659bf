#include "runtimes/system/perf_unwind.h"
#include "runtimes/unwind/bias.h"

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/child.h"
#include "base/hashtab.h"
#include "base/procfiles.h"
#include "runtimes/symbols/symbols_internal.h"
#include "runtimes/unwind/filecache.h"

#define PROCS_MAX 4096     /* processes whose mappings are kept; past it, gone ones are swept */
#define MAPS_MAX 4096      /* executable mappings kept per process */
#define REREAD_SECONDS 1.0 /* a pc outside the known mappings re-reads them at most this often */

typedef struct umap {
    uint64_t start, end, offset, dev, ino;
    uint64_t bias;         /* runtime address - file virtual address */
    bool file, bias_known; /* file-backed; its program headers were read */
    uint8_t state;         /* pp_fc_state */
    uint32_t id;
    const pp_fc_file *f; /* acquired once READY; put when the process is forgotten */
} umap;

typedef struct uproc {
    int pid;
    umap *maps; /* sorted by start */
    size_t n;
    double read_at; /* pp_mono_now() of the last maps read (0: never) */
    uint64_t gen;   /* the cache generation its pending files were last checked at */
} uproc;

struct pp_perf_unwinder {
    pp_filecache *cache;
    pp_htab procs; /* of uproc */
    int no_query;  /* pp_maps_read_exec: the kernel lacks PROCMAP_QUERY */
};

typedef struct lookup_arg {
    pp_perf_unwinder *u;
    uproc *p;
} lookup_arg;

static uint64_t hash_pid(int pid)
{
    return pp_hash_u64((uint64_t)(unsigned)pid);
}

static void proc_clear(pp_perf_unwinder *u, uproc *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->maps[i].f)
            pp_filecache_put(u->cache, p->maps[i].f);
    free(p->maps);
    p->maps = NULL;
    p->n = 0;
    pp_filecache_release_pid(u->cache, p->pid);
}

pp_perf_unwinder *pp_perf_unwinder_new(void)
{
    pp_perf_unwinder *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    PP_HTAB_INIT(&u->procs, uproc, 75);
    u->cache = pp_filecache_new(0, 1);
    if (!u->cache) {
        free(u);
        return NULL;
    }
    return u;
}

pp_filecache *pp_perf_unwinder_cache(pp_perf_unwinder *u)
{
    return u->cache;
}

void pp_perf_unwinder_free(pp_perf_unwinder *u)
{
    if (!u)
        return;
    size_t pos = 0;
    for (uproc *p; (p = pp_htab_each(&u->procs, &pos));)
        proc_clear(u, p);
    pp_htab_free(&u->procs);
    pp_filecache_free(u->cache);
    free(u);
}

typedef struct maps_acc {
    umap *maps;
    size_t n, cap;
} maps_acc;

static int add_map(void *arg, const pp_maps_line *ml)
{
    maps_acc *a = arg;
    if (a->n >= MAPS_MAX)
        return 1;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 32;
        umap *nm = realloc(a->maps, nc * sizeof(*nm));
        if (!nm)
            return 1;
        a->maps = nm;
        a->cap = nc;
    }
    pp_map_kind k = pp_maps_classify(ml->path, ml->pathlen);
    a->maps[a->n++] = (umap){.start = ml->start,
                             .end = ml->end,
                             .offset = ml->offset,
                             .dev = makedev(ml->dev_major, ml->dev_minor),
                             .ino = ml->inode,
                             .file = k == PP_MAP_FILE && ml->inode != 0};
    return 0;
}

/* (Re)reads p's executable mappings (kept as they were when the process cannot be read). */
static void read_maps(pp_perf_unwinder *u, uproc *p)
{
    p->read_at = pp_mono_now();
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* gone: keep what we had */
    maps_acc a = {0};
    int rc = pp_maps_read_exec(fd, &u->no_query, add_map, &a);
    close(fd);
    if (rc < 0) {
        free(a.maps);
        return;
    }
    /* A mapping read before (same range, offset and file) keeps its bias and rows: a re-read
     * (a pc outside the mappings, dlopen) costs no file read for the others. */
    umap *old = p->maps;
    size_t nold = p->n, j = 0;
    for (size_t i = 0; i < a.n; i++) {
        umap *m = &a.maps[i];
        while (j < nold && old[j].start < m->start)
            j++;
        if (j < nold && old[j].start == m->start && old[j].end == m->end &&
            old[j].offset == m->offset && old[j].dev == m->dev && old[j].ino == m->ino) {
            *m = old[j];
            old[j].f = NULL; /* moved */
            continue;
        }
        if (!m->file ||
            !(m->bias_known = pp_unwind_load_bias(p->pid, m->start, m->end, m->offset, &m->bias)))
            continue;
        pp_fc_mapping fm = {.start = m->start, .end = m->end, .dev = m->dev, .ino = m->ino};
        m->state = (uint8_t)pp_filecache_map(u->cache, p->pid, &fm, &m->id);
    }
    for (size_t k = 0; k < nold; k++)
        if (old[k].f)
            pp_filecache_put(u->cache, old[k].f);
    free(old);
    p->maps = a.maps;
    p->n = a.n;
    p->gen = 0;
}

/* pp_htab_filter: drops (and releases) the processes that are gone. */
static bool keep_running(void *ent, void *arg)
{
    uproc *p = ent;
    if (!pp_pid_gone(p->pid))
        return true;
    proc_clear(arg, p);
    return false;
}

static uproc *get_proc(pp_perf_unwinder *u, int pid)
{
    pp_htab_probe pr;
    for (uproc *p = pp_htab_first(&u->procs, hash_pid(pid), &pr); p;
         p = pp_htab_next(&u->procs, &pr))
        if (p->pid == pid)
            return p;
    if (pp_htab_count(&u->procs) >= PROCS_MAX)
        pp_htab_filter(&u->procs, keep_running, u);
    if (pp_htab_count(&u->procs) >= PROCS_MAX)
        return NULL;
    uproc *p = pp_htab_add(&u->procs, hash_pid(pid));
    if (p)
        *p = (uproc){.pid = pid};
    return p;
}

static umap *find_map(uproc *p, uint64_t pc)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc < p->maps[mid].start)
            hi = mid;
        else if (pc >= p->maps[mid].end)
            lo = mid + 1;
        else
            return &p->maps[mid];
    }
    return NULL;
}

/* Acquires the rows of p's files that became ready since the last check. */
static void refresh_pending(pp_perf_unwinder *u, uproc *p)
{
    uint64_t gen = pp_filecache_generation(u->cache);
    if (gen == p->gen)
        return;
    p->gen = gen;
    for (size_t i = 0; i < p->n; i++) {
        umap *m = &p->maps[i];
        if (!m->file || !m->bias_known || m->f || m->state == PP_FC_FAILED)
            continue;
        pp_fc_mapping fm = {.start = m->start, .end = m->end, .dev = m->dev, .ino = m->ino};
        m->state = (uint8_t)pp_filecache_map(u->cache, p->pid, &fm, &m->id);
        if (m->state == PP_FC_READY)
            m->f = pp_filecache_acquire(u->cache, m->id);
    }
}

static int lookup(void *arg, uint64_t pc, pp_cfi_row *row)
{
    lookup_arg *a = arg;
    *row = (pp_cfi_row){.kind = PP_CFI_NONE};
    umap *m = find_map(a->p, pc);
    if (!m && pp_mono_now() - a->p->read_at >= REREAD_SECONDS) {
        read_maps(a->u, a->p); /* a mapping made since (dlopen, JIT code) */
        refresh_pending(a->u, a->p);
        m = find_map(a->p, pc);
    }
    if (!m)
        return 0;
    if (m->f)
        pp_cfi_packed_find(&m->f->cfi, pc - m->bias, row);
    return 1;
}

pp_unwind_result pp_perf_unwind(pp_perf_unwinder *u, int pid, const pp_unwind_regs *regs,
                                const uint8_t *stack, size_t len, uint64_t *ips, size_t cap)
{
    uproc *p = get_proc(u, pid);
    if (!p)
        return (pp_unwind_result){.stop = PP_UNWIND_UNMAPPED};
    if (!p->read_at)
        read_maps(u, p);
    refresh_pending(u, p);
    lookup_arg a = {u, p};
    return pp_unwind(regs, stack, len, lookup, &a, ips, cap);
}

void pp_perf_unwinder_forget(pp_perf_unwinder *u, int pid)
{
    pp_htab_probe pr;
    for (uproc *p = pp_htab_first(&u->procs, hash_pid(pid), &pr); p;
         p = pp_htab_next(&u->procs, &pr))
        if (p->pid == pid) {
            proc_clear(u, p);
            pp_htab_remove(&u->procs, p);
            return;
        }
}
