/* The BPF CFI unwinder's maps, kept in step with the sampled processes (see unwind_maps.h). */
#include "runtimes/system/unwind_maps.h"
#include "runtimes/unwind/bias.h"

#include <bpf/bpf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "bpf/unwind.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "base/procmap_query.h"

#define MAX_MAPPINGS 4096    /* executable mappings kept per process (beyond: not unwound there) */
#define RESCAN_MS 5000       /* a process's mappings are read again this often (dlopen, JIT) */
#define MAX_FILE_PAGES 65536 /* page-index entries per file (4 GiB of code) */

typedef struct umap {
    uint64_t start, end, offset, dev, ino, bias;
    uint32_t id; /* the file cache's id; 0: none (anonymous, or not identified yet) */
    int file;    /* file-backed */
    int anon;    /* no file and no special name ([vdso], [vsyscall]): JIT code may live there */
    int settled; /* the cache answered for good (an id, or FAILED: frame pointers there) */
} umap;

typedef struct uproc {
    int pid;
    umap *maps;
    size_t n;
    uint64_t scanned_ms;
} uproc;

typedef struct ufile {
    uint32_t id;
    uint32_t lo, n;   /* its rows in the array (n 0: not loaded) */
    uint32_t page_lo; /* its pages in the index: [page_lo, page_lo + npages) */
    uint32_t npages;
    uint32_t refs;  /* mappings of loaded processes */
    uint64_t tried; /* u->epoch when loading last failed for lack of room (UINT64_MAX: never
                       loadable) */
} ufile;

typedef struct range {
    uint32_t lo, n;
} range;

struct pp_unwind_maps {
    pp_unwind_maps_fds fd;
    pp_filecache *fc;
    uint64_t *rows; /* the mmapped unw_rows */
    uint32_t cap;
    range *free; /* free row ranges, sorted by lo, coalesced */
    size_t nfree, free_cap;
    uproc *procs;
    size_t nprocs, procs_cap;
    ufile *files;
    size_t nfiles, files_cap;
    uint64_t gen;   /* the cache generation last synced */
    uint64_t epoch; /* moves when room may have been freed or files built: retry loads */
    bool dirty;     /* references changed since the last load pass */
    uint64_t used;  /* rows loaded */
    pp_unwind_stats st;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t pp_unwind_pack_row(const pp_cfi_row *r)
{
    unsigned kind = r->kind;
    int32_t cfa = r->cfa_off, rbp = r->rbp_off;
    if (kind > PP_UNW_END)
        kind = PP_UNW_UNSUPPORTED;
    if (kind == PP_UNW_RSP || kind == PP_UNW_RBP) {
        if (cfa < -32768 || cfa > 32767 || rbp % 8 != 0 || rbp < -1024 || rbp > 1016)
            return PP_UNW_ROW(r->pc, PP_UNW_UNSUPPORTED, 0, 0);
        return PP_UNW_ROW(r->pc, kind, rbp / 8, cfa);
    }
    return PP_UNW_ROW(r->pc, kind, 0, 0);
}

/* ---- the rows array: a first-fit allocator of row ranges ---- */

static int free_insert(pp_unwind_maps *u, size_t at, range r)
{
    if (u->nfree == u->free_cap) {
        size_t nc = u->free_cap ? 2 * u->free_cap : 16;
        range *nf = realloc(u->free, nc * sizeof(*nf));
        if (!nf)
            return -1;
        u->free = nf;
        u->free_cap = nc;
    }
    memmove(u->free + at + 1, u->free + at, (u->nfree - at) * sizeof(*u->free));
    u->free[at] = r;
    u->nfree++;
    return 0;
}

static int rows_alloc(pp_unwind_maps *u, uint32_t n, uint32_t *lo)
{
    for (size_t i = 0; i < u->nfree; i++) {
        if (u->free[i].n < n)
            continue;
        *lo = u->free[i].lo;
        u->free[i].lo += n;
        u->free[i].n -= n;
        if (!u->free[i].n) {
            memmove(u->free + i, u->free + i + 1, (u->nfree - i - 1) * sizeof(*u->free));
            u->nfree--;
        }
        return 0;
    }
    return -1;
}

static void rows_release(pp_unwind_maps *u, uint32_t lo, uint32_t n)
{
    size_t i = 0;
    while (i < u->nfree && u->free[i].lo < lo)
        i++;
    bool prev = i > 0 && u->free[i - 1].lo + u->free[i - 1].n == lo;
    bool next = i < u->nfree && lo + n == u->free[i].lo;
    if (prev && next) {
        u->free[i - 1].n += n + u->free[i].n;
        memmove(u->free + i, u->free + i + 1, (u->nfree - i - 1) * sizeof(*u->free));
        u->nfree--;
    } else if (prev) {
        u->free[i - 1].n += n;
    } else if (next) {
        u->free[i].lo = lo;
        u->free[i].n += n;
    } else if (free_insert(u, i, (range){lo, n}) < 0) {
        pp_debug("unwind: out of memory; %u rows of the table lost", n); /* leaked, not reused */
    }
}

/* ---- files ---- */

static ufile *file_get(pp_unwind_maps *u, uint32_t id, bool add)
{
    for (size_t i = 0; i < u->nfiles; i++)
        if (u->files[i].id == id)
            return &u->files[i];
    if (!add)
        return NULL;
    if (u->nfiles == u->files_cap) {
        size_t nc = u->files_cap ? 2 * u->files_cap : 64;
        ufile *nf = realloc(u->files, nc * sizeof(*nf));
        if (!nf)
            return NULL;
        u->files = nf;
        u->files_cap = nc;
    }
    ufile *f = &u->files[u->nfiles++];
    memset(f, 0, sizeof(*f));
    f->id = id;
    f->tried = UINT64_MAX - 1;
    return f;
}

static void file_unload(pp_unwind_maps *u, ufile *f)
{
    if (!f->n)
        return;
    for (uint32_t p = 0; p < f->npages; p++) { /* the index first: then no lookup reaches them */
        struct pp_unw_page_key k = {.file_id = f->id, .page = f->page_lo + p};
        bpf_map_delete_elem(u->fd.pages, &k);
    }
    rows_release(u, f->lo, f->n);
    u->epoch++;
    u->used -= f->n;
    u->st.files_loaded--;
    f->n = 0;
    f->npages = 0;
}

/* Writes the page index of rows[lo, lo + n) (file pcs sorted); -1 when the index is full. */
static int write_pages(pp_unwind_maps *u, ufile *f, const pp_cfi_packed *t)
{
    size_t n = t->n;
    uint64_t first = pp_cfi_packed_pc(t, 0), last = pp_cfi_packed_pc(t, n - 1);
    if (t->text_hi > last + 1 && t->text_hi <= UINT32_MAX)
        last = t->text_hi - 1;
    uint32_t p0 = (uint32_t)(first >> PP_UNW_PAGE_SHIFT),
             p1 = (uint32_t)(last >> PP_UNW_PAGE_SHIFT);
    if (p1 - p0 >= MAX_FILE_PAGES)
        return -1;
    f->page_lo = p0;
    size_t i = 0;
    for (uint32_t p = p0; p <= p1; p++) {
        uint64_t ps = (uint64_t)p << PP_UNW_PAGE_SHIFT, pe = ps + (1u << PP_UNW_PAGE_SHIFT);
        while (i + 1 < n && pp_cfi_packed_pc(t, i + 1) <= ps)
            i++;
        size_t j = i;
        while (j + 1 < n && pp_cfi_packed_pc(t, j + 1) < pe)
            j++;
        f->npages = p - p0 + 1;
        if (pp_cfi_packed_pc(t, i) >= pe || (j == i && pp_cfi_packed_row(t, i).kind == PP_CFI_NONE))
            continue; /* nothing covers this page */
        struct pp_unw_page_key k = {.file_id = f->id, .page = p};
        struct pp_unw_page_val v = {.lo = f->lo + (uint32_t)i, .n = (uint32_t)(j - i + 1)};
        if (bpf_map_update_elem(u->fd.pages, &k, &v, BPF_ANY) != 0)
            return -1;
    }
    return 0;
}

/* Copies a READY file's rows into the array and indexes them. */
static void file_load(pp_unwind_maps *u, ufile *f)
{
    const pp_fc_file *cf = pp_filecache_acquire(u->fc, f->id);
    if (!cf)
        return;
    const pp_cfi_packed *t = &cf->cfi;
    if (!t->n || t->n > UINT32_MAX || pp_cfi_packed_pc(t, t->n - 1) > UINT32_MAX) {
        f->tried = UINT64_MAX; /* none, or code above 4 GiB: frame pointers */
        pp_filecache_put(u->fc, cf);
        return;
    }
    uint32_t lo;
    if (rows_alloc(u, (uint32_t)t->n, &lo) < 0) {
        f->tried = u->epoch;
        u->st.files_no_room++;
        pp_debug("unwind: no room for %zu rows of %s (table full: %u rows)", t->n, cf->key, u->cap);
        pp_filecache_put(u->fc, cf);
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        pp_cfi_row r = pp_cfi_packed_row(t, i);
        u->rows[lo + i] = pp_unwind_pack_row(&r);
    }
    f->lo = lo;
    f->n = (uint32_t)t->n;
    u->used += f->n;
    u->st.files_loaded++;
    if (write_pages(u, f, t) < 0) {
        u->st.files_no_room++;
        pp_debug("unwind: the page index is full; %s left to frame pointers", cf->key);
        file_unload(u, f);
        f->tried = u->epoch;
    }
    pp_filecache_put(u->fc, cf);
}

/* Loads the rows of referenced READY files, unloads unreferenced or dropped ones. */
static void load_pass(pp_unwind_maps *u)
{
    for (size_t i = 0; i < u->nfiles;) {
        ufile *f = &u->files[i];
        pp_fc_state s = pp_filecache_state(u->fc, f->id);
        if (!f->refs || s != PP_FC_READY)
            file_unload(u, f);
        else if (!f->n && f->tried != u->epoch && f->tried != UINT64_MAX)
            file_load(u, f);
        if (!f->refs || s == PP_FC_NONE || s == PP_FC_FAILED) {
            u->files[i] = u->files[--u->nfiles];
            continue;
        }
        i++;
    }
    u->st.table_bytes = u->used * sizeof(uint64_t);
}

/* ---- processes ---- */

static void make_key(struct pp_unw_map_key *k, int pid, uint64_t addr, unsigned bits)
{
    uint32_t p = __builtin_bswap32((uint32_t)pid);
    uint64_t a = __builtin_bswap64(addr);
    k->prefixlen = 32 + bits;
    memcpy(k->data, &p, 4);
    memcpy(k->data + 4, &a, 8);
}

/* Calls the trie for every prefix of [start, end): write (v non-NULL) or delete. */
static int trie_range(pp_unwind_maps *u, int pid, uint64_t start, uint64_t end,
                      const struct pp_unw_map_val *v)
{
    for (uint64_t a = start; a < end;) {
        unsigned k = a ? (unsigned)__builtin_ctzll(a) : 63;
        while (k > 0 && (k >= 64 || a + (1ull << k) > end || a + (1ull << k) < a))
            k--;
        struct pp_unw_map_key key;
        make_key(&key, pid, a, 64 - k);
        if (v && bpf_map_update_elem(u->fd.maps, &key, v, BPF_ANY) != 0)
            return -1;
        if (!v)
            bpf_map_delete_elem(u->fd.maps, &key);
        a += 1ull << k;
    }
    return 0;
}

typedef struct scan {
    umap *v;
    size_t n;
} scan;

static int on_vma(void *arg, const struct pp_procmap_query *q, const char *name, size_t nl)
{
    scan *s = arg;
    if (s->n >= MAX_MAPPINGS)
        return 1;
    umap *m = &s->v[s->n++];
    memset(m, 0, sizeof(*m));
    m->start = q->vma_start;
    m->end = q->vma_end;
    m->offset = q->vma_offset;
    m->dev = makedev(q->dev_major, q->dev_minor);
    m->ino = q->inode;
    m->file = q->inode != 0;
    m->anon = !m->file && (nl == 0 || !name || name[0] != '[' || strncmp(name, "[anon", 5) == 0);
    return 0;
}

static uproc *proc_get(pp_unwind_maps *u, int pid)
{
    for (size_t i = 0; i < u->nprocs; i++)
        if (u->procs[i].pid == pid)
            return &u->procs[i];
    return NULL;
}

static void unref(pp_unwind_maps *u, const umap *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ufile *f = v[i].id ? file_get(u, v[i].id, false) : NULL;
        if (f && f->refs)
            f->refs--;
    }
    u->dirty = true;
}

/* Identifies m's file in the cache (its id, once known) and references it. */
static void identify(pp_unwind_maps *u, int pid, umap *m, const char *path)
{
    if (!m->file || m->settled)
        return;
    pp_fc_mapping fm = {
        .start = m->start, .end = m->end, .dev = m->dev, .ino = m->ino, .path = path};
    uint32_t id = 0;
    pp_fc_state s = pp_filecache_map(u->fc, pid, &fm, &id);
    if (s == PP_FC_FAILED)
        m->settled = 1; /* no rows for this file: not asked again until it is mapped anew */
    if (!id || s == PP_FC_FAILED || s == PP_FC_NONE)
        return;
    ufile *f = file_get(u, id, true);
    if (!f)
        return;
    m->id = id;
    m->settled = 1;
    f->refs++;
    u->dirty = true;
}

static void write_maps(pp_unwind_maps *u, int pid, const umap *v, size_t n, bool *full)
{
    for (size_t i = 0; i < n; i++) {
        struct pp_unw_map_val val = {
            .file_id = v[i].id, .anon = v[i].anon ? 1 : 0, .bias = v[i].bias};
        if (trie_range(u, pid, v[i].start, v[i].end, &val) < 0)
            *full = true;
    }
}

static void proc_drop(pp_unwind_maps *u, uproc *p, bool gone)
{
    uint32_t key = (uint32_t)p->pid;
    bpf_map_delete_elem(u->fd.procs, &key); /* first: the sampler stops using the trie */
    for (size_t i = 0; i < p->n; i++)
        trie_range(u, p->pid, p->maps[i].start, p->maps[i].end, NULL);
    unref(u, p->maps, p->n);
    if (gone)
        pp_filecache_release_pid(u->fc, p->pid);
    free(p->maps);
    *p = u->procs[--u->nprocs];
    u->st.procs = u->nprocs;
}

static bool same_mapping(const umap *a, const umap *b)
{
    return a->start == b->start && a->end == b->end && a->offset == b->offset && a->dev == b->dev &&
           a->ino == b->ino;
}

void pp_unwind_maps_add_pid(pp_unwind_maps *u, int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    scan s = {.v = calloc(MAX_MAPPINGS, sizeof(umap))};
    if (!s.v) {
        close(fd);
        return;
    }
    /* A kernel without PROCMAP_QUERY: the process stays on frame pointers. */
    int rc = pp_procmap_each(fd, PP_QUERY_VMA_EXECUTABLE, on_vma, &s);
    close(fd);
    uproc *p = proc_get(u, pid);
    if (rc < 0 || s.n == 0) {
        free(s.v);
        if (p)
            proc_drop(u, p, pp_pid_gone(pid));
        return;
    }
    /* Mappings already known keep their file and bias; new ones are identified. */
    for (size_t i = 0; i < s.n; i++) {
        umap *m = &s.v[i];
        const umap *old = NULL;
        for (size_t j = 0; p && j < p->n && !old; j++)
            if (same_mapping(&p->maps[j], m))
                old = &p->maps[j];
        if (old && (old->settled || !m->file)) {
            *m = *old;
            ufile *f = m->id ? file_get(u, m->id, false) : NULL;
            if (f)
                f->refs++;
            continue;
        }
        m->bias = m->start - m->offset;
        if (m->file && !pp_unwind_load_bias(pid, m->start, m->end, m->offset, &m->bias))
            m->file = 0; /* not an ELF we can read: frame pointers there */
        identify(u, pid, m, NULL);
    }
    if (!p) {
        if (u->nprocs == u->procs_cap) {
            size_t nc = u->procs_cap ? 2 * u->procs_cap : 64;
            uproc *np = realloc(u->procs, nc * sizeof(*np));
            if (!np) {
                unref(u, s.v, s.n);
                free(s.v);
                return;
            }
            u->procs = np;
            u->procs_cap = nc;
        }
        p = &u->procs[u->nprocs++];
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        u->st.procs = u->nprocs;
    }
    bool full = false;
    write_maps(u, pid, s.v, s.n, &full);
    for (size_t j = 0; j < p->n; j++) { /* mappings gone since the last scan */
        bool kept = false;
        for (size_t i = 0; i < s.n && !kept; i++)
            kept = same_mapping(&p->maps[j], &s.v[i]);
        if (!kept)
            trie_range(u, pid, p->maps[j].start, p->maps[j].end, NULL);
    }
    unref(u, p->maps, p->n);
    free(p->maps);
    umap *shrunk = realloc(s.v, s.n * sizeof(umap));
    p->maps = shrunk ? shrunk : s.v;
    p->n = s.n;
    p->scanned_ms = now_ms();
    struct pp_unw_proc pv = {.mm = 0}; /* the sampler takes the current image as this one */
    uint32_t key = (uint32_t)pid;
    if (full || bpf_map_update_elem(u->fd.procs, &key, &pv, BPF_ANY) != 0) {
        u->st.procs_no_room++;
        proc_drop(u, p, false);
        return;
    }
    load_pass(u);
}

void pp_unwind_maps_sync(pp_unwind_maps *u)
{
    uint64_t now = now_ms();
    for (size_t i = 0; i < u->nprocs;) {
        uproc *p = &u->procs[i];
        if (pp_pid_gone(p->pid)) {
            proc_drop(u, p, true);
            continue;
        }
        bool pending = false; /* a file mapping not identified by the cache yet */
        for (size_t j = 0; j < p->n; j++)
            pending |= p->maps[j].file && !p->maps[j].settled;
        if (pending || now - p->scanned_ms >= RESCAN_MS) {
            int pid = p->pid;
            size_t before = u->nprocs;
            pp_unwind_maps_add_pid(u, pid);
            if (u->nprocs < before)
                continue; /* dropped: another process now sits at i */
        }
        i++;
    }
    pp_unwind_maps_load_ready(u);
}

/* Asks the cache again for the files it had not identified (their ids come with the entries'
 * first change of state: the generation moved) and points their trie entries at them. No maps
 * are read here: that stays at the drain (pp_unwind_maps_sync). */
static void identify_pending(pp_unwind_maps *u)
{
    for (size_t i = 0; i < u->nprocs; i++) {
        uproc *p = &u->procs[i];
        for (size_t j = 0; j < p->n; j++) {
            umap *m = &p->maps[j];
            if (!m->file || m->settled)
                continue;
            identify(u, p->pid, m, NULL);
            if (!m->id)
                continue;
            struct pp_unw_map_val val = {.file_id = m->id, .bias = m->bias};
            trie_range(u, p->pid, m->start, m->end, &val);
        }
    }
}

void pp_unwind_maps_load_ready(pp_unwind_maps *u)
{
    uint64_t gen = pp_filecache_generation(u->fc);
    if (gen != u->gen)
        identify_pending(u);
    if (gen != u->gen || u->dirty) {
        u->gen = gen;
        u->dirty = false;
        u->epoch++;
        load_pass(u);
    }
}

void pp_unwind_maps_stats(const pp_unwind_maps *u, pp_unwind_stats *st)
{
    *st = u->st;
    st->table_cap = (uint64_t)u->cap * sizeof(uint64_t);
}

pp_unwind_maps *pp_unwind_maps_new(const pp_unwind_maps_fds *fds, uint32_t rows_cap,
                                   pp_filecache *fc, char *err, size_t errlen)
{
    pp_unwind_maps *u = calloc(1, sizeof(*u));
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    u->fd = *fds;
    u->fc = fc;
    u->cap = rows_cap;
    void *m = mmap(NULL, (size_t)rows_cap * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED,
                   fds->rows, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the unwind rows array: %s", strerror(errno));
        free(u);
        return NULL;
    }
    u->rows = m;
    if (free_insert(u, 0, (range){0, rows_cap}) < 0) {
        snprintf(err, errlen, "out of memory");
        pp_unwind_maps_free(u);
        return NULL;
    }
    u->gen = UINT64_MAX;
    return u;
}

void pp_unwind_maps_free(pp_unwind_maps *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->nprocs; i++)
        free(u->procs[i].maps);
    free(u->procs);
    free(u->files);
    free(u->free);
    if (u->rows)
        munmap(u->rows, (size_t)u->cap * sizeof(uint64_t));
    free(u);
}
