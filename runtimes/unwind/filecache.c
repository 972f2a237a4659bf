/* The per-file cache: see filecache.h. One mutex guards the indexes; the rows are built by the
 * worker pool's threads without it. Structure:
 *   identities (dev, ino of a maps line) -> the file entry (once the worker has read the key),
 *   references (pid, dev, ino) -> one per process and identity (pp_filecache_map is idempotent),
 *   processes -> the identities each references (released together),
 *   keys (build-id or inode key) and ids -> file entries.
 * An identity lives while a process references it or a job resolves it; a file entry lives
 * until dropped (least recently used among the unreferenced, unpinned ones, when over the cap),
 * and its memory until the last pp_filecache_put. */
#include "runtimes/unwind/filecache.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/elfnotes.h"
#include "base/hash.h"
#include "base/hashtab.h"
#include "base/child.h"
#include "base/log.h"
#include "base/procmap_query.h"
#include "base/workpool.h"

/* A build of at least this many rows is followed by malloc_trim (see the build). */
#define TRIM_AFTER_ROWS 50000

typedef struct fc_file {
    pp_fc_file pub; /* first: pp_filecache_put gets it back */
    pp_fc_state state;
    size_t refs;     /* identities pointing at it */
    size_t pins;     /* pp_filecache_acquire without put */
    uint64_t lru;    /* tick of its last use */
    double unref_at; /* pp_mono_now when refs last fell to 0 */
    uint64_t gen;    /* generation when it became READY/FAILED */
    bool dropped;    /* out of the indexes: freed at the last put */
    bool over_cap;   /* FAILED for want of room: dropped when unreferenced, to be retried */
} fc_file;

typedef struct fc_ident {
    uint64_t dev, ino;
    fc_file *file; /* NULL until resolved */
    size_t refs;   /* processes referencing it, plus one while a job resolves it */
    bool resolving;
    bool failed;    /* could not be read as a file: FAILED, id 0 */
    bool retry;     /* the failure may pass (the process went away, the path is another file
                       now): retried when another process maps it */
    int failed_pid; /* the process it was read through */
} fc_ident;

typedef struct {
    uint64_t dev, ino;
    fc_ident *p;
} ident_ent;
typedef struct {
    uint64_t dev, ino;
    int pid;
} ref_ent;
typedef struct {
    int pid;
    fc_ident **v;
    size_t n, cap;
} proc_ent;
typedef struct {
    fc_file *f;
} file_ent; /* keys (hashed by key string) and ids (hashed by id) */

struct pp_filecache {
    pthread_mutex_t mu;
    pp_workpool *pool;
    size_t users; /* the owner (until pp_filecache_free) and each queued or running job */
    bool closing;
    size_t cap, bytes;
    uint64_t tick, gen, next_id;
    uint64_t evicted, built, build_failed, expired;
    double idle_s;    /* an entry no process maps is dropped after this long */
    double expire_at; /* next sweep (pp_mono_now) */
    pp_htab idents, refs, procs, keys, ids;
};

typedef struct job {
    pp_filecache *c;
    fc_ident *ident;
    int pid;
    uint64_t start, end;
    char *path;
} job;

static uint64_t ident_hash(uint64_t dev, uint64_t ino)
{
    return pp_hash_u64(dev * 31 + ino);
}
static uint64_t ref_hash(int pid, uint64_t dev, uint64_t ino)
{
    return pp_hash_u64(ident_hash(dev, ino) ^ (uint64_t)(unsigned)pid);
}
static uint64_t key_hash(const char *k)
{
    return pp_hash_bytes(k, strlen(k), 0x5eed);
}

size_t pp_filecache_cap_bytes(void)
{
    const char *s = getenv(PP_FILECACHE_ENV);
    if (!s || !*s)
        return PP_FILECACHE_DEFAULT_BYTES;
    char *end;
    errno = 0;
    unsigned long mib = strtoul(s, &end, 10);
    if (errno || *end || mib < 1 || mib > 65536) {
        pp_log(PP_LOG_WARNING,
               "%s=%s is not a size in MiB between 1 and 65536: using the default %zu MiB",
               PP_FILECACHE_ENV, s, PP_FILECACHE_DEFAULT_BYTES >> 20);
        return PP_FILECACHE_DEFAULT_BYTES;
    }
    return (size_t)mib << 20;
}

pp_filecache *pp_filecache_new(size_t max_bytes, size_t threads)
{
    pp_filecache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->pool = pp_workpool_new(threads ? threads : 1);
    if (!c->pool) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->users = 1;
    c->cap = max_bytes ? max_bytes : pp_filecache_cap_bytes();
    c->idle_s = PP_FILECACHE_IDLE_S;
    c->next_id = 1;
    PP_HTAB_INIT(&c->idents, ident_ent, 0);
    PP_HTAB_INIT(&c->refs, ref_ent, 0);
    PP_HTAB_INIT(&c->procs, proc_ent, 0);
    PP_HTAB_INIT(&c->keys, file_ent, 0);
    PP_HTAB_INIT(&c->ids, file_ent, 0);
    return c;
}

/* ---- file entries (under c->mu) ---- */

static void file_free(fc_file *f)
{
    pp_cfi_packed_free(&f->pub.cfi);
    free(f);
}

static file_ent *find_key(pp_filecache *c, const char *key)
{
    pp_htab_probe p;
    for (file_ent *e = pp_htab_first(&c->keys, key_hash(key), &p); e;
         e = pp_htab_next(&c->keys, &p))
        if (!strcmp(e->f->pub.key, key))
            return e;
    return NULL;
}

static file_ent *find_id(pp_filecache *c, uint32_t id)
{
    pp_htab_probe p;
    for (file_ent *e = pp_htab_first(&c->ids, pp_hash_u64(id), &p); e;
         e = pp_htab_next(&c->ids, &p))
        if (e->f->pub.id == id)
            return e;
    return NULL;
}

/* Takes f out of the indexes (its memory goes at the last put). */
static void file_drop(pp_filecache *c, fc_file *f)
{
    file_ent *e = find_key(c, f->pub.key);
    if (e && e->f == f)
        pp_htab_remove(&c->keys, e);
    e = find_id(c, f->pub.id);
    if (e)
        pp_htab_remove(&c->ids, e);
    c->bytes -= f->pub.bytes;
    c->gen++;
    f->dropped = true;
    if (!f->pins)
        file_free(f);
}

/* Drops least recently used unreferenced, unpinned, finished entries (not keep) until the
 * rows fit the cap. */
static void evict(pp_filecache *c, const fc_file *keep)
{
    while (c->bytes > c->cap) {
        fc_file *lru = NULL;
        size_t pos = 0;
        for (file_ent *e; (e = pp_htab_each(&c->ids, &pos)) != NULL;) {
            fc_file *f = e->f;
            if (f == keep || f->refs || f->pins || f->state == PP_FC_BUILDING)
                continue;
            if (!lru || f->lru < lru->lru)
                lru = f;
        }
        if (!lru)
            return;
        c->evicted++;
        file_drop(c, lru);
    }
}

static void file_unref(pp_filecache *c, fc_file *f)
{
    if (--f->refs)
        return;
    f->lru = ++c->tick;
    f->unref_at = pp_mono_now();
    if (f->over_cap)
        file_drop(c, f); /* retried at its next sight */
}

static void ident_unref(pp_filecache *c, fc_ident *id)
{
    if (--id->refs)
        return;
    pp_htab_probe p;
    for (ident_ent *e = pp_htab_first(&c->idents, ident_hash(id->dev, id->ino), &p); e;
         e = pp_htab_next(&c->idents, &p))
        if (e->p == id) {
            pp_htab_remove(&c->idents, e);
            break;
        }
    if (id->file)
        file_unref(c, id->file);
    free(id);
}

/* ---- the cache's life ---- */

static void destroy(pp_filecache *c)
{
    size_t pos = 0;
    for (proc_ent *p; (p = pp_htab_each(&c->procs, &pos)) != NULL;)
        free(p->v);
    pos = 0;
    for (ident_ent *e; (e = pp_htab_each(&c->idents, &pos)) != NULL;)
        free(e->p);
    pos = 0;
    for (file_ent *e; (e = pp_htab_each(&c->ids, &pos)) != NULL;) {
        if (e->f->pins) /* a put after the free would touch freed memory: leak it instead */
            continue;
        file_free(e->f);
    }
    pp_htab_free(&c->idents);
    pp_htab_free(&c->refs);
    pp_htab_free(&c->procs);
    pp_htab_free(&c->keys);
    pp_htab_free(&c->ids);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Drops one user; the last frees the cache. Called with c->mu held; unlocks it. */
static void unuse_unlock(pp_filecache *c)
{
    bool last = --c->users == 0;
    pthread_mutex_unlock(&c->mu);
    if (last)
        destroy(c);
}

void pp_filecache_free(pp_filecache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    pp_workpool *pool = c->pool;
    c->pool = NULL;
    pthread_mutex_unlock(&c->mu);
    pp_workpool_free(pool); /* queued jobs are released (run = false) here */
    pthread_mutex_lock(&c->mu);
    unuse_unlock(c);
}

/* ---- the worker: identify the file, build its rows ---- */

static int build_id_note(void *arg, const char *name, size_t namesz, uint32_t type,
                         const unsigned char *desc, size_t descsz)
{
    char *key = arg;
    if (type != NT_GNU_BUILD_ID || !pp_elf_note_named(name, namesz, "GNU") || descsz < 8 ||
        descsz > 32)
        return 0;
    int o = snprintf(key, 96, "buildid:");
    for (size_t i = 0; i < descsz; i++)
        o += snprintf(key + o, 96 - (size_t)o, "%02x", desc[i]);
    return 1;
}

/* The mapped file, open: /proc/<pid>/map_files/<start>-<end>, else the path under the process's
 * root when it is the maps line's inode. -1 with errno. */
/* The process still maps the file (dev, ino) at start: asked with PROCMAP_QUERY, else read from
 * the maps text (at most 64 MiB of it). */
static bool still_mapped(int pid, uint64_t start, uint64_t dev, uint64_t ino)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/maps", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct pp_procmap_query q = {.size = sizeof(q), .query_addr = start};
    bool ok = false;
    if (ioctl(fd, PP_PROCMAP_QUERY, &q) == 0) {
        ok = q.vma_start == start && makedev(q.dev_major, q.dev_minor) == dev && q.inode == ino;
    } else if (errno == ENOTTY || errno == EINVAL) {
        FILE *f = fdopen(fd, "r");
        if (f) {
            fd = -1;
            char line[512];
            size_t total = 0;
            while (total < ((size_t)64 << 20) && fgets(line, sizeof(line), f)) {
                total += strlen(line);
                unsigned long long lo = 0, hi, off, in = 0;
                unsigned ma = 0, mi = 0;
                bool here = sscanf(line, "%llx-%llx %*4s %llx %x:%x %llu", &lo, &hi, &off, &ma, &mi,
                                   &in) == 6 &&
                            lo == start;
                ok = here && makedev(ma, mi) == dev && in == ino;
                if (!strchr(line, '\n')) /* the rest of a long line (a path) */
                    while (fgets(line, sizeof(line), f) && !strchr(line, '\n'))
                        total += strlen(line);
                if (here)
                    break;
            }
            fclose(f);
        }
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

static int open_mapped(const job *j, const fc_ident *id)
{
    char p[4200];
    snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", j->pid, (unsigned long long)j->start,
             (unsigned long long)j->end);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        /* the file mapped there now is the maps line's: same inode, or (a stacked file system
         * may show another inode through the link) the process still maps that inode there,
         * not another file mapped at the range since the caller read its maps */
        struct stat st;
        if (fstat(fd, &st) == 0 &&
            (((uint64_t)st.st_dev == id->dev && (uint64_t)st.st_ino == id->ino) ||
             still_mapped(j->pid, j->start, id->dev, id->ino)))
            return fd;
        close(fd);
        errno = ESTALE;
        return -1;
    }
    if (!j->path || j->path[0] != '/')
        return -1;
    snprintf(p, sizeof(p), "/proc/%d/root%s", j->pid, j->path);
    fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != id->dev || (uint64_t)st.st_ino != id->ino) {
        close(fd); /* replaced on disk since it was mapped: not the mapped file */
        errno = ESTALE;
        return -1;
    }
    return fd;
}

static void job_free(job *j)
{
    free(j->path);
    free(j);
}

static void resolve_failed(pp_filecache *c, fc_ident *id, int pid, int err)
{
    id->failed = true;
    id->failed_pid = pid;
    /* the process may have gone (or unmapped it) before the worker looked: another mapper may
     * succeed */
    id->retry = err == ENOENT || err == ESRCH || err == ESTALE;
    c->gen++;
}

static void job_run(void *arg, bool run)
{
    job *j = arg;
    pp_filecache *c = j->c;
    fc_ident *id = j->ident;
    int fd = run ? open_mapped(j, id) : -1;
    int oerr = errno;
    char key[96] = "";
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        oerr = EINVAL;
    }
    if (fd >= 0) {
        elf_version(EV_CURRENT);
        Elf *e = elf_begin(fd, ELF_C_READ, NULL);
        if (e && elf_kind(e) == ELF_K_ELF)
            pp_elf_notes_walk(e, 0, build_id_note, key);
        if (e)
            elf_end(e);
        if (!key[0])
            snprintf(key, sizeof(key), "inode:%llx:%llu:%lld:%lld", (unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
    }

    pthread_mutex_lock(&c->mu);
    id->resolving = false;
    fc_file *f = NULL;
    bool build = false;
    if (fd < 0) {
        if (run)
            resolve_failed(c, id, j->pid, oerr);
    } else if (!c->closing) {
        file_ent *e = find_key(c, key);
        if (e) {
            f = e->f;
        } else if ((f = calloc(1, sizeof(*f))) != NULL) {
            snprintf(f->pub.key, sizeof(f->pub.key), "%s", key);
            f->pub.id = (uint32_t)c->next_id++;
            f->state = PP_FC_BUILDING;
            f->lru = ++c->tick;
            file_ent *ke = pp_htab_add(&c->keys, key_hash(key));
            file_ent *ie = ke ? pp_htab_add(&c->ids, pp_hash_u64(f->pub.id)) : NULL;
            if (!ie) {
                if (ke)
                    pp_htab_remove(&c->keys, ke);
                free(f);
                f = NULL;
            } else {
                ke->f = f;
                ie->f = f;
                build = true;
            }
        }
        if (f) {
            id->file = f;
            f->refs++;
        } else {
            resolve_failed(c, id, j->pid, ENOMEM);
        }
    }
    if (build)
        f->pins++; /* kept while built without the lock */
    pthread_mutex_unlock(&c->mu);

    if (build) {
        pp_cfi_table t;
        pp_cfi_packed packed = {0};
        char err[160];
        /* no more rows than the cap holds packed: a larger file fails while being built, before
         * its wide rows (3 times the packed bytes) are all made */
        pp_cfi_limits lim = {.max_rows = c->cap / sizeof(uint64_t) + 1};
        if (lim.max_rows > PP_CFI_MAX_ROWS)
            lim.max_rows = PP_CFI_MAX_ROWS;
        long n = pp_cfi_build_limited(fd, &lim, &t, err, sizeof(err));
        if (n >= 0) {
            if (pp_cfi_pack(&t, &packed, err, sizeof(err)) < 0)
                n = -1;
            pp_cfi_free(&t);
        }
        /* A large file's build (libdw's per-FDE state, the wide rows: ~23 MiB for node's
         * 372,000 rows) leaves its freed memory resident in this worker's malloc arena: give
         * it back now rather than at the session's end. */
        if (n >= TRIM_AFTER_ROWS)
            malloc_trim(0);
        pthread_mutex_lock(&c->mu);
        f->pins--;
        f->pub.bytes = sizeof(*f) + (n >= 0 ? pp_cfi_packed_bytes(&packed) : 0);
        if (n >= 0 && f->pub.bytes > c->cap) {
            snprintf(f->pub.err, sizeof(f->pub.err),
                     "%zu bytes of unwind rows: over the cache's byte cap of %zu (%s)",
                     f->pub.bytes, c->cap, PP_FILECACHE_ENV);
            f->over_cap = true;
            pp_cfi_packed_free(&packed);
            n = -1;
            f->pub.bytes = sizeof(*f);
        }
        c->bytes += f->pub.bytes;
        if (n >= 0) {
            f->pub.cfi = packed;
            f->state = PP_FC_READY;
            c->built++;
        } else {
            if (!f->over_cap)
                snprintf(f->pub.err, sizeof(f->pub.err), "%s", err);
            f->state = PP_FC_FAILED;
            c->build_failed++;
        }
        evict(c, f);
        if (c->bytes > c->cap && f->state == PP_FC_READY) {
            /* every other entry is in use: this one does not fit */
            c->bytes -= f->pub.bytes;
            pp_cfi_packed_free(&f->pub.cfi);
            f->pub.bytes = sizeof(*f);
            c->bytes += f->pub.bytes;
            snprintf(f->pub.err, sizeof(f->pub.err),
                     "no room under the cache's byte cap of %zu (%s): every entry is in use",
                     c->cap, PP_FILECACHE_ENV);
            f->over_cap = true;
            f->state = PP_FC_FAILED;
            c->built--;
            c->build_failed++;
        }
        f->gen = ++c->gen;
        if (f->dropped && !f->pins)
            file_free(f);
        else if (!f->refs && f->over_cap && !f->dropped)
            file_drop(c, f);
        pthread_mutex_unlock(&c->mu);
    }
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&c->mu);
    ident_unref(c, id);
    job_free(j);
    unuse_unlock(c);
}

/* ---- the caller's side ---- */

static fc_ident *ident_get(pp_filecache *c, uint64_t dev, uint64_t ino)
{
    uint64_t h = ident_hash(dev, ino);
    pp_htab_probe p;
    for (ident_ent *e = pp_htab_first(&c->idents, h, &p); e; e = pp_htab_next(&c->idents, &p))
        if (e->dev == dev && e->ino == ino)
            return e->p;
    fc_ident *id = calloc(1, sizeof(*id));
    ident_ent *e = id ? pp_htab_add(&c->idents, h) : NULL;
    if (!e) {
        free(id);
        return NULL;
    }
    id->dev = e->dev = dev;
    id->ino = e->ino = ino;
    e->p = id;
    return id;
}

static proc_ent *proc_get(pp_filecache *c, int pid, bool create)
{
    uint64_t h = pp_hash_u64((uint64_t)(unsigned)pid);
    pp_htab_probe p;
    for (proc_ent *e = pp_htab_first(&c->procs, h, &p); e; e = pp_htab_next(&c->procs, &p))
        if (e->pid == pid)
            return e;
    if (!create)
        return NULL;
    proc_ent *e = pp_htab_add(&c->procs, h);
    if (e)
        e->pid = pid;
    return e;
}

/* Records pid's reference to id once. -1 when out of memory. */
static int add_ref(pp_filecache *c, int pid, fc_ident *id)
{
    uint64_t h = ref_hash(pid, id->dev, id->ino);
    pp_htab_probe p;
    for (ref_ent *e = pp_htab_first(&c->refs, h, &p); e; e = pp_htab_next(&c->refs, &p))
        if (e->pid == pid && e->dev == id->dev && e->ino == id->ino)
            return 0;
    proc_ent *pe = proc_get(c, pid, true);
    if (!pe)
        return -1;
    if (pe->n == pe->cap) {
        size_t nc = pe->cap ? pe->cap * 2 : 16;
        fc_ident **nv = realloc(pe->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        pe->v = nv;
        pe->cap = nc;
    }
    ref_ent *r = pp_htab_add(&c->refs, h);
    if (!r)
        return -1;
    r->pid = pid;
    r->dev = id->dev;
    r->ino = id->ino;
    pe->v[pe->n++] = id;
    id->refs++;
    return 0;
}

static int queue(pp_filecache *c, int pid, const pp_fc_mapping *m, fc_ident *id)
{
    job *j = calloc(1, sizeof(*j));
    if (!j)
        return -1;
    j->c = c;
    j->ident = id;
    j->pid = pid;
    j->start = m->start;
    j->end = m->end;
    if (m->path && !(j->path = strdup(m->path))) {
        free(j);
        return -1;
    }
    if (pp_workpool_submit(c->pool, job_run, j) != 0) {
        job_free(j);
        return -1;
    }
    id->refs++;
    c->users++;
    id->resolving = true;
    id->failed = id->retry = false;
    return 0;
}

pp_fc_state pp_filecache_map(pp_filecache *c, int pid, const pp_fc_mapping *m, uint32_t *id)
{
    *id = 0;
    pthread_mutex_lock(&c->mu);
    pp_fc_state st = PP_FC_FAILED;
    fc_ident *ident = c->closing ? NULL : ident_get(c, m->dev, m->ino);
    if (!ident)
        goto out;
    if (add_ref(c, pid, ident) != 0) {
        if (!ident->refs && !ident->resolving) { /* just created, unreferenced */
            ident->refs = 1;
            ident_unref(c, ident);
        }
        goto out;
    }
    if (ident->file) {
        fc_file *f = ident->file;
        f->lru = ++c->tick;
        *id = f->pub.id;
        st = f->state;
    } else if (ident->resolving) {
        st = PP_FC_BUILDING;
    } else if (ident->failed && (!ident->retry || ident->failed_pid == pid)) {
        st = PP_FC_FAILED;
    } else {
        st = queue(c, pid, m, ident) == 0 ? PP_FC_BUILDING : PP_FC_FAILED;
    }
out:
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void expire_idle(pp_filecache *c);

static bool drop_ref(pp_filecache *c, int pid, uint64_t dev, uint64_t ino)
{
    pp_htab_probe p;
    for (ref_ent *r = pp_htab_first(&c->refs, ref_hash(pid, dev, ino), &p); r;
         r = pp_htab_next(&c->refs, &p))
        if (r->pid == pid && r->dev == dev && r->ino == ino) {
            pp_htab_remove(&c->refs, r);
            return true;
        }
    return false;
}

void pp_filecache_unmap(pp_filecache *c, int pid, uint64_t dev, uint64_t ino)
{
    pthread_mutex_lock(&c->mu);
    proc_ent *pe = proc_get(c, pid, false);
    if (pe && drop_ref(c, pid, dev, ino)) {
        for (size_t i = 0; i < pe->n; i++)
            if (pe->v[i]->dev == dev && pe->v[i]->ino == ino) {
                fc_ident *id = pe->v[i];
                pe->v[i] = pe->v[--pe->n];
                ident_unref(c, id);
                break;
            }
    }
    expire_idle(c); /* a file a live process unmapped (dlclose) expires too */
    pthread_mutex_unlock(&c->mu);
}

/* Drops the finished entries no process has mapped for c->idle_s (at most one sweep a second):
 * the files of processes that came and went (a host starting new executables all day) do not
 * sit in memory until the cap is reached. */
static void expire_idle(pp_filecache *c)
{
    double now = pp_mono_now();
    if (now < c->expire_at)
        return;
    c->expire_at = now + 1.0;
    fc_file *victims[256]; /* the rest at the next sweep */
    size_t n = 0, pos = 0;
    for (file_ent *e; n < 256 && (e = pp_htab_each(&c->ids, &pos)) != NULL;) {
        fc_file *f = e->f;
        if (!f->refs && !f->pins && f->state != PP_FC_BUILDING && now - f->unref_at >= c->idle_s)
            victims[n++] = f;
    }
    for (size_t i = 0; i < n; i++) {
        c->expired++;
        file_drop(c, victims[i]);
    }
}

void pp_filecache_release_pid(pp_filecache *c, int pid)
{
    pthread_mutex_lock(&c->mu);
    proc_ent *pe = proc_get(c, pid, false);
    if (pe) {
        fc_ident **v = pe->v;
        size_t n = pe->n;
        pp_htab_remove(&c->procs, pe);
        for (size_t i = 0; i < n; i++) {
            drop_ref(c, pid, v[i]->dev, v[i]->ino);
            ident_unref(c, v[i]);
        }
        free(v);
    }
    expire_idle(c);
    pthread_mutex_unlock(&c->mu);
}

void pp_filecache_set_idle(pp_filecache *c, double seconds)
{
    pthread_mutex_lock(&c->mu);
    c->idle_s = seconds;
    c->expire_at = 0;
    pthread_mutex_unlock(&c->mu);
}

pp_fc_state pp_filecache_state(pp_filecache *c, uint32_t id)
{
    pthread_mutex_lock(&c->mu);
    file_ent *e = find_id(c, id);
    pp_fc_state st = e ? e->f->state : PP_FC_NONE;
    pthread_mutex_unlock(&c->mu);
    return st;
}

const pp_fc_file *pp_filecache_acquire(pp_filecache *c, uint32_t id)
{
    pthread_mutex_lock(&c->mu);
    file_ent *e = find_id(c, id);
    fc_file *f = e && e->f->state == PP_FC_READY ? e->f : NULL;
    if (f) {
        f->pins++;
        f->lru = ++c->tick;
    }
    pthread_mutex_unlock(&c->mu);
    return f ? &f->pub : NULL;
}

void pp_filecache_put(pp_filecache *c, const pp_fc_file *pub)
{
    if (!pub)
        return;
    fc_file *f = (fc_file *)(void *)pub;
    pthread_mutex_lock(&c->mu);
    if (--f->pins == 0) {
        if (f->dropped)
            file_free(f);
        else
            evict(c, NULL); /* it may have been what kept the cache over its cap */
    }
    pthread_mutex_unlock(&c->mu);
}

uint64_t pp_filecache_generation(pp_filecache *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

uint64_t pp_filecache_foreach(pp_filecache *c, void (*cb)(void *arg, const pp_fc_info *info),
                              void *arg)
{
    pthread_mutex_lock(&c->mu);
    size_t pos = 0;
    for (file_ent *e; (e = pp_htab_each(&c->ids, &pos)) != NULL;) {
        const fc_file *f = e->f;
        pp_fc_info in = {.id = f->pub.id,
                         .state = f->state,
                         .gen = f->gen,
                         .bytes = f->pub.bytes,
                         .refs = f->refs,
                         .nrows = f->state == PP_FC_READY ? f->pub.cfi.n : 0,
                         .key = f->pub.key,
                         .err = f->pub.err};
        cb(arg, &in);
    }
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

size_t pp_filecache_bytes(void *cache)
{
    pp_filecache *c = cache;
    pthread_mutex_lock(&c->mu);
    size_t b = c->bytes;
    pthread_mutex_unlock(&c->mu);
    return b;
}

void pp_filecache_stats(pp_filecache *c, pp_fc_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->mu);
    out->cap_bytes = c->cap;
    out->bytes = c->bytes;
    size_t pos = 0;
    for (file_ent *e; (e = pp_htab_each(&c->ids, &pos)) != NULL;) {
        out->files++;
        out->ready += e->f->state == PP_FC_READY;
        out->building += e->f->state == PP_FC_BUILDING;
        out->failed += e->f->state == PP_FC_FAILED;
    }
    out->evicted = c->evicted;
    out->expired = c->expired;
    out->built = c->built;
    out->build_failed = c->build_failed;
    pthread_mutex_unlock(&c->mu);
}

size_t pp_filecache_pending(pp_filecache *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->users - (c->closing ? 0 : 1);
    pthread_mutex_unlock(&c->mu);
    return n;
}
