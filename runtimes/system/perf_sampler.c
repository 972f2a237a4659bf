#include "runtimes/system/perf_sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hashtab.h"
#include "merge/strtab.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/system/cpus.h"
#include "runtimes/system/perf_unwind.h"

#define MAX_CPUS 1024
#define RING_PAGES 64 /* data pages per CPU (256 KiB) */
#define MAX_CHAIN 256
#define MAX_ENTRIES 65536 /* distinct raw stacks kept between drains */
#define COMM_LEN 16
#define SEEN_MAX 12288 /* pids announced: past this, gone pids are swept out */
#define NEWS_MAX 256   /* announcements waiting for the draining thread */
#define COMMS_PRUNE 8192
#define TID_PIDS_MAX 4096 /* processes counted per thread (as the BPF sampler's tid_pids) */
#define THREADS_MAX 16384 /* threads of tracked processes counted between two takes */

/* A process whose samples are counted per thread, for one use or both (an entry without a use
 * is removed):
 * - USE_TIDS (pp_perf_sampler_count_threads, the per-thread merge): its samples' keys carry the
 *   tid. Sticky; at most TID_PIDS_MAX processes, the gone ones pruned when that many are;
 * - USE_TRACK (pp_perf_sampler_track_threads, the sampled threads): its samples are counted per
 *   thread in `threads`; refs callers track it. */
enum { USE_TIDS = 1, USE_TRACK = 2 };
typedef struct pid_ent {
    int pid;
    unsigned uses : 2;
    unsigned refs : 30;
} pid_ent;

/* One aggregated raw stack: ips[] holds the kernel part then the user part, leaf first. */
typedef struct raw_stack {
    struct raw_stack *next;
    uint64_t hash, count;
    int pid;
    uint32_t tid; /* for pids counted per thread, else 0 */
    uint16_t nk, nu;
    uint64_t ips[];
} raw_stack;

typedef struct comm_ent {
    struct comm_ent *next;
    int pid;
    char comm[COMM_LEN + 1];
} comm_ent;

/* Chained rather than base/hashtab: entries have variable length (their addresses inline), are
 * allocated one by one as samples arrive and handed whole to the drain; bucket i holds hashes
 * (pp_hash_bytes) whose low bits are i. */
typedef struct {
    raw_stack **buckets;
    size_t nbuckets, n;
} raw_table;

struct pp_perf_sampler {
    int ncpus;
    int *fds;
    void **rings;
    size_t ring_size, page_size;
    int wake_fd;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t lock;
    raw_table table;       /* filled by the reader thread, swapped out by drain */
    comm_ent *comms[1024]; /* by pid % 1024, chained: read once per drained stack */
    size_t ncomms;
    pp_htab seen; /* of int pids announced, room for SEEN_MAX made at the start */
    /* of pid_ent, room made for TID_PIDS_MAX + ntracked: adding to it never grows it */
    pp_htab procs;
    size_t ntids, ntracked; /* entries with USE_TIDS, with USE_TRACK */
    bool swept;             /* swept since the last drain */
    int news[NEWS_MAX];
    size_t nnews_queued;
    int news_fd; /* eventfd: news queued */
    const int *pids;
    size_t npids;
    pp_emitter *emit;
    pp_symbolizer *sym;
    pp_htab threads; /* of pp_thread_hits: samples per thread of tracked processes, by tid */
    uint64_t samples, lost, map_full, filtered, drains, ustack_errors, nnews, news_lost,
        threads_full, unwind_cfi, unwind_fallback, unwind_truncated, unwind_cfi_frames,
        unwind_fp_frames;
    /* CFI mode (not --perf-mode fp): the kernel's callchain is the kernel part only; user stacks
     * are unwound here from each sample's registers and stack copy */
    pp_perf_unwinder *unwinder;
    unsigned stack_size;
    unsigned char *buf; /* one record's body, copied out of the ring */
    size_t bufsz;
};

/* The user registers each sample carries (PERF_SAMPLE_REGS_USER, in bit order: bp, sp, ip). */
#define REGS_MASK                                                                                  \
    ((1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_SP) | (1ULL << PERF_REG_X86_IP))
#define NREGS 3

static uint64_t hash_raw(int pid, uint32_t tid, const uint64_t *ips, size_t n, uint16_t nk)
{
    return pp_hash_bytes(ips, n * sizeof(*ips),
                         ((uint64_t)(unsigned)pid << 16 | nk) ^ (uint64_t)tid << 40);
}

static bool pid_wanted(const pp_perf_sampler *s, int pid)
{
    if (!s->npids)
        return true;
    for (size_t i = 0; i < s->npids; i++)
        if (s->pids[i] == pid)
            return true;
    return false;
}

static void remember_comm(pp_perf_sampler *s, int pid, const char *comm)
{
    size_t b = (unsigned)pid % 1024;
    for (comm_ent *c = s->comms[b]; c; c = c->next)
        if (c->pid == pid) {
            snprintf(c->comm, sizeof(c->comm), "%s", comm);
            return;
        }
    comm_ent *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->pid = pid;
    snprintf(c->comm, sizeof(c->comm), "%s", comm);
    c->next = s->comms[b];
    s->comms[b] = c;
    s->ncomms++;
}

/* Frees the comms of processes that are gone, once there are many. Called with s->lock held,
 * after a drain has named everything it took. */
static void prune_comms(pp_perf_sampler *s)
{
    if (s->ncomms < COMMS_PRUNE)
        return;
    for (size_t b = 0; b < 1024; b++) {
        comm_ent **pc = &s->comms[b];
        while (*pc) {
            comm_ent *c = *pc;
            if (pp_pid_gone(c->pid)) {
                *pc = c->next;
                free(c);
                s->ncomms--;
            } else {
                pc = &c->next;
            }
        }
    }
}

static uint64_t hash_pid(int pid)
{
    return pp_hash_u64((uint64_t)(unsigned)pid);
}

/* pid's entry in a set of int pids (seen), or NULL. */
static int *pid_find(const pp_htab *set, int pid)
{
    pp_htab_probe p;
    for (int *e = pp_htab_first(set, hash_pid(pid), &p); e; e = pp_htab_next(set, &p))
        if (*e == pid)
            return e;
    return NULL;
}

static bool still_running(void *ent, void *arg)
{
    (void)arg;
    return !pp_pid_gone(*(const int *)ent);
}

/* Forgets pid (it exec'd: its next sample announces the new image). */
static void seen_forget(pp_perf_sampler *s, int pid)
{
    int *e = pid_find(&s->seen, pid);
    if (e)
        pp_htab_remove(&s->seen, e);
}

/* Queues pid for pp_perf_sampler_take_news() the first time it is sampled (again after an
 * exec). Called with s->lock held. */
static void announce(pp_perf_sampler *s, int pid)
{
    if (pid <= 0)
        return;
    if (pid_find(&s->seen, pid))
        return;
    if (pp_htab_count(&s->seen) >= SEEN_MAX) {
        if (!s->swept) { /* at most once per drain: a host may have this many live processes */
            pp_htab_filter(&s->seen, still_running, NULL);
            s->swept = true;
        }
        if (pp_htab_count(&s->seen) >= SEEN_MAX) {
            s->news_lost++; /* its mappings are read at the drain instead */
            return;
        }
    }
    int *slot = pp_htab_add(&s->seen, hash_pid(pid)); /* never grows: room was made */
    if (slot)
        *slot = pid;
    if (s->nnews_queued >= NEWS_MAX) {
        s->news_lost++;
        return;
    }
    s->news[s->nnews_queued++] = pid;
    if (s->nnews_queued == 1) {
        uint64_t one = 1;
        if (write(s->news_fd, &one, sizeof(one)) < 0) {
            /* the counter cannot overflow here; nothing to do */
        }
    }
}

/* The process's comm: from PERF_RECORD_COMM of its leader, else /proc/<pid>/comm. */
static void lookup_comm(pp_perf_sampler *s, int pid, char *out, size_t len)
{
    for (comm_ent *c = s->comms[(unsigned)pid % 1024]; c; c = c->next)
        if (c->pid == pid) {
            snprintf(out, len, "%s", c->comm);
            return;
        }
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    out[0] = '\0';
    if (fd >= 0) {
        ssize_t r = read(fd, out, len - 1);
        close(fd);
        if (r > 0) {
            out[r] = '\0';
            out[strcspn(out, "\n")] = '\0';
        }
    }
    if (!out[0])
        snprintf(out, len, "[unknown]");
    remember_comm(s, pid, out);
}

static void add_raw(pp_perf_sampler *s, int pid, uint32_t tid, const uint64_t *kips, size_t nk,
                    const uint64_t *uips, size_t nu)
{
    uint64_t ips[MAX_CHAIN];
    size_t n = 0;
    for (size_t i = 0; i < nk && n < MAX_CHAIN; i++)
        ips[n++] = kips[i];
    nk = n;
    for (size_t i = 0; i < nu && n < MAX_CHAIN; i++)
        ips[n++] = uips[i];
    uint64_t h = hash_raw(pid, tid, ips, n, (uint16_t)nk);
    raw_table *t = &s->table;
    size_t b = h & (t->nbuckets - 1);
    for (raw_stack *r = t->buckets[b]; r; r = r->next) {
        if (r->hash == h && r->pid == pid && r->tid == tid && r->nk == nk && r->nu + r->nk == n &&
            memcmp(r->ips, ips, n * sizeof(*ips)) == 0) {
            r->count++;
            return;
        }
    }
    if (t->n >= MAX_ENTRIES) {
        s->map_full++;
        return;
    }
    raw_stack *r = malloc(sizeof(*r) + n * sizeof(*ips));
    if (!r) {
        s->map_full++;
        return;
    }
    r->hash = h;
    r->count = 1;
    r->pid = pid;
    r->tid = tid;
    r->nk = (uint16_t)nk;
    r->nu = (uint16_t)(n - nk);
    memcpy(r->ips, ips, n * sizeof(*ips));
    r->next = t->buckets[b];
    t->buckets[b] = r;
    t->n++;
}

/* ---- the processes counted per thread (pid_ent). Called with s->lock held. ---- */

static pid_ent *proc_find(const pp_perf_sampler *s, int pid)
{
    pp_htab_probe p;
    for (pid_ent *e = pp_htab_first(&s->procs, hash_pid(pid), &p); e;
         e = pp_htab_next(&s->procs, &p))
        if (e->pid == pid)
            return e;
    return NULL;
}

/* pid's uses (0: none). */
static unsigned proc_uses(const pp_perf_sampler *s, int pid)
{
    const pid_ent *e = proc_find(s, pid);
    return e ? e->uses : 0;
}

/* pid's entry, added without a use when absent (the caller has made room); NULL on OOM. */
static pid_ent *proc_add(pp_perf_sampler *s, int pid)
{
    pid_ent *e = proc_find(s, pid);
    if (!e && (e = pp_htab_add(&s->procs, hash_pid(pid))))
        e->pid = pid;
    return e;
}

/* Gives e the use (one it has not). */
static void proc_set(pp_perf_sampler *s, pid_ent *e, unsigned use)
{
    e->uses |= use;
    ++*(use == USE_TIDS ? &s->ntids : &s->ntracked);
}

/* Takes the use (one it has) from e; false when e has no use left (the caller removes it). */
static bool proc_drop(pp_perf_sampler *s, pid_ent *e, unsigned use)
{
    e->uses &= ~use;
    --*(use == USE_TIDS ? &s->ntids : &s->ntracked);
    return e->uses != 0;
}

/* pp_htab_filter: takes USE_TIDS from the processes that are gone. */
static bool keep_running_tids(void *ent, void *arg)
{
    pid_ent *e = ent;
    return !(e->uses & USE_TIDS) || !pp_pid_gone(e->pid) || proc_drop(arg, e, USE_TIDS);
}

/* Counts one sample of thread tid of pid (tracked). Called with s->lock held. */
static void count_thread(pp_perf_sampler *s, int pid, int tid)
{
    pp_htab_probe p;
    for (pp_thread_hits *e = pp_htab_first(&s->threads, hash_pid(tid), &p); e;
         e = pp_htab_next(&s->threads, &p))
        if (e->tid == tid && e->pid == pid) {
            e->samples++;
            return;
        }
    pp_thread_hits *e =
        pp_htab_count(&s->threads) < THREADS_MAX ? pp_htab_add(&s->threads, hash_pid(tid)) : NULL;
    if (!e) {
        s->threads_full++;
        return;
    }
    *e = (pp_thread_hits){.pid = pid, .tid = tid, .samples = 1};
}

/* The user frames of a sample whose callchain ends at rec + off: PERF_SAMPLE_REGS_USER (u64 abi;
 * u64 regs[NREGS] unless abi is NONE) then PERF_SAMPLE_STACK_USER (u64 size; char data[size];
 * u64 dyn_size when size != 0), unwound by s->unwinder. Counts the walk's outcome. */
static size_t unwind_user(pp_perf_sampler *s, int pid, const unsigned char *rec, size_t len,
                          size_t off, uint64_t *uips)
{
    uint64_t abi, regs[NREGS], size, dyn = 0;
    if (len < off + 8)
        return 0;
    memcpy(&abi, rec + off, 8);
    off += 8;
    if (abi == PERF_SAMPLE_REGS_ABI_NONE) /* a kernel thread: no user registers */
        return 0;
    if (len < off + sizeof(regs) + 8)
        return 0;
    memcpy(regs, rec + off, sizeof(regs));
    off += sizeof(regs);
    memcpy(&size, rec + off, 8);
    off += 8;
    if (size > len - off || (size && len - off - size < 8))
        return 0;
    if (size)
        memcpy(&dyn, rec + off + size, 8);
    if (dyn > size)
        dyn = size;
    pp_unwind_regs r = {.bp = regs[0], .sp = regs[1], .ip = regs[2]};
    pp_unwind_result res =
        pp_perf_unwind(s->unwinder, pid, &r, rec + off, (size_t)dyn, uips, PP_UNWIND_MAX_FRAMES);
    if (res.n) {
        s->unwind_cfi_frames += res.cfi_steps;
        s->unwind_fp_frames += res.fp_steps;
        if (res.fp_steps)
            s->unwind_fallback++;
        else
            s->unwind_cfi++;
        if (!pp_unwind_complete(&res))
            s->unwind_truncated++;
    }
    return res.n;
}

static void handle_sample(pp_perf_sampler *s, const unsigned char *rec, size_t len)
{
    /* PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN: u32 pid, tid; u64 nr; u64 ips[nr] */
    if (len < 16)
        return;
    uint32_t pid, tid;
    uint64_t nr;
    memcpy(&pid, rec, 4);
    memcpy(&tid, rec + 4, 4);
    memcpy(&nr, rec + 8, 8);
    if (nr > (len - 16) / 8)
        return;
    s->samples++;
    if (!pid_wanted(s, (int)pid) || (s->npids && pid == 0)) {
        s->filtered++;
        return;
    }
    unsigned uses = (int)pid > 0 ? proc_uses(s, (int)pid) : 0;
    if (uses & USE_TRACK)
        count_thread(s, (int)pid, (int)tid);
    uint64_t kips[MAX_CHAIN], uips[MAX_CHAIN];
    size_t nk = 0, nu = 0;
    enum { NONE, KERNEL, USER } ctx = NONE;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t ip;
        memcpy(&ip, rec + 16 + i * 8, 8);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
            if (ip == (uint64_t)PERF_CONTEXT_KERNEL)
                ctx = KERNEL;
            else if (ip == (uint64_t)PERF_CONTEXT_USER)
                ctx = USER;
            else
                ctx = NONE;
            continue;
        }
        if (ctx == KERNEL && nk < MAX_CHAIN)
            kips[nk++] = ip;
        else if (ctx == USER && nu < MAX_CHAIN)
            uips[nu++] = ip;
    }
    size_t off = 16 + nr * 8;
    if (s->unwinder && pid != 0)
        nu = unwind_user(s, (int)pid, rec, len, off, uips);
    if (nu == 0 && pid != 0)
        s->ustack_errors++;
    if (nu > 0)
        announce(s, (int)pid);
    add_raw(s, (int)pid, uses & USE_TIDS ? tid : 0, kips, nk, uips, nu);
}

/* Consumes one CPU's ring buffer. Called with s->lock held. */
static void read_ring(pp_perf_sampler *s, int i)
{
    struct perf_event_mmap_page *meta = s->rings[i];
    unsigned char *data = (unsigned char *)s->rings[i] + s->page_size;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    size_t size = s->ring_size;
    unsigned char *buf = s->buf;
    while (tail < head) {
        struct perf_event_header hdr;
        for (size_t k = 0; k < sizeof(hdr); k++)
            ((unsigned char *)&hdr)[k] = data[(tail + k) % size];
        if (hdr.size < sizeof(hdr) || hdr.size > head - tail)
            break;
        size_t body = hdr.size - sizeof(hdr);
        if (body <= s->bufsz) {
            for (size_t k = 0; k < body; k++)
                buf[k] = data[(tail + sizeof(hdr) + k) % size];
            if (hdr.type == PERF_RECORD_SAMPLE) {
                handle_sample(s, buf, body);
            } else if (hdr.type == PERF_RECORD_LOST && body >= 16) {
                uint64_t lost;
                memcpy(&lost, buf + 8, 8);
                s->lost += lost;
            } else if (hdr.type == PERF_RECORD_COMM && body >= 9) {
                uint32_t pid, tid;
                memcpy(&pid, buf, 4);
                memcpy(&tid, buf + 4, 4);
                char comm[COMM_LEN + 1];
                size_t cl = strnlen((const char *)buf + 8, body - 8);
                if (cl > COMM_LEN)
                    cl = COMM_LEN;
                memcpy(comm, buf + 8, cl);
                comm[cl] = '\0';
                if (pid == tid) /* the process's (leader's) comm, as gProfiler's perf */
                    remember_comm(s, (int)pid, comm);
                if (hdr.misc & PERF_RECORD_MISC_COMM_EXEC) { /* new image: announce it again */
                    seen_forget(s, (int)pid);
                    if (s->unwinder && pid == tid)
                        pp_perf_unwinder_forget(s->unwinder, (int)pid);
                }
            }
        }
        tail += hdr.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void *reader_main(void *arg)
{
    pp_perf_sampler *s = arg;
    struct pollfd pfd[MAX_CPUS + 1];
    for (int i = 0; i < s->ncpus; i++)
        pfd[i] = (struct pollfd){.fd = s->fds[i], .events = POLLIN};
    pfd[s->ncpus] = (struct pollfd){.fd = s->wake_fd, .events = POLLIN};
    for (;;) {
        int r = poll(pfd, (nfds_t)s->ncpus + 1, 1000);
        if (r < 0 && errno != EINTR)
            break;
        if (pfd[s->ncpus].revents & POLLIN)
            break;
        pthread_mutex_lock(&s->lock);
        for (int i = 0; i < s->ncpus; i++)
            read_ring(s, i);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

static void table_free(raw_table *t)
{
    if (!t->buckets)
        return;
    for (size_t b = 0; b < t->nbuckets; b++) {
        raw_stack *r = t->buckets[b];
        while (r) {
            raw_stack *n = r->next;
            free(r);
            r = n;
        }
    }
    free(t->buckets);
    t->buckets = NULL;
    t->n = 0;
}

static int table_init(raw_table *t)
{
    t->nbuckets = 8192;
    t->n = 0;
    t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
    return t->buckets ? 0 : -1;
}

void pp_perf_sampler_stop(pp_perf_sampler *s)
{
    if (!s)
        return;
    if (s->thread_started) {
        uint64_t one = 1;
        if (write(s->wake_fd, &one, sizeof(one)) < 0) {
            /* eventfd write cannot fail here; the poll timeout ends the thread anyway */
        }
        pthread_join(s->thread, NULL);
    }
    for (int i = 0; i < s->ncpus; i++) {
        if (s->rings && s->rings[i] && s->rings[i] != MAP_FAILED)
            munmap(s->rings[i], s->ring_size + s->page_size);
        if (s->fds && s->fds[i] >= 0)
            close(s->fds[i]);
    }
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    if (s->news_fd >= 0)
        close(s->news_fd);
    table_free(&s->table);
    pp_htab_free(&s->seen);
    pp_htab_free(&s->procs);
    pp_htab_free(&s->threads);
    for (size_t b = 0; b < 1024; b++) {
        comm_ent *c = s->comms[b];
        while (c) {
            comm_ent *n = c->next;
            free(c);
            c = n;
        }
    }
    free(s->fds);
    free(s->rings);
    free(s->buf);
    if (s->unwinder && s->sym)
        pp_symbolizer_share_budget(s->sym, NULL, NULL);
    pp_perf_unwinder_free(s->unwinder);
    pp_emitter_free(s->emit);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

pp_perf_sampler *pp_perf_sampler_start(const pp_sampler_opts *o, pp_symbolizer *sym, char *err,
                                       size_t errlen)
{
    pp_perf_sampler *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->wake_fd = -1;
    s->news_fd = -1;
    PP_HTAB_INIT(&s->seen, int, 75);
    PP_HTAB_INIT(&s->procs, pid_ent, 75);
    PP_HTAB_INIT(&s->threads, pp_thread_hits, 50);
    s->sym = sym;
    s->pids = o->pids;
    s->npids = o->npids;
    s->page_size = (size_t)sysconf(_SC_PAGESIZE);
    /* 4x the pages when samples carry a stack copy (8 KiB each by default) */
    s->ring_size = (o->fp_only ? RING_PAGES : 4 * RING_PAGES) * s->page_size;
    int cpus[MAX_CPUS];
    int n = pp_online_cpus(cpus, MAX_CPUS);
    if (n <= 0) {
        snprintf(err, errlen, "cannot read the online CPU list");
        goto fail;
    }
    s->fds = calloc((size_t)n, sizeof(*s->fds));
    s->rings = calloc((size_t)n, sizeof(*s->rings));
    s->emit = pp_emitter_new(sym);
    if (!o->fp_only) {
        /* rounded up to 8 bytes, as the kernel wants it */
        s->stack_size = ((o->stack_size ? o->stack_size : PP_SAMPLER_STACK_SIZE) + 7u) & ~7u;
        if (s->stack_size > 65528)
            s->stack_size = 65528;
        s->unwinder = pp_perf_unwinder_new();
        if (s->unwinder)
            pp_symbolizer_share_budget(sym, pp_filecache_bytes,
                                       pp_perf_unwinder_cache(s->unwinder));
    }
    s->bufsz = 16 + MAX_CHAIN * 8 + 8 + NREGS * 8 + 16 + s->stack_size + 4096;
    s->buf = malloc(s->bufsz);
    s->wake_fd = eventfd(0, EFD_CLOEXEC);
    s->news_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!s->fds || !s->rings || !s->emit || !s->buf || (!o->fp_only && !s->unwinder) ||
        s->wake_fd < 0 || s->news_fd < 0 || table_init(&s->table) < 0 ||
        pp_htab_reserve(&s->seen, SEEN_MAX) < 0 || pp_htab_reserve(&s->procs, TID_PIDS_MAX) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        s->fds[i] = -1;
        int fd =
            pp_open_cpu_clock_stack(cpus[i], o->frequency, PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN,
                                    1, REGS_MASK, s->stack_size);
        s->ncpus = i + 1;
        if (fd < 0) {
            snprintf(err, errlen,
                     "perf_event_open on CPU %d failed: %s (check "
                     "/proc/sys/kernel/perf_event_paranoid and run as root)",
                     cpus[i], strerror(errno));
            goto fail;
        }
        s->fds[i] = fd;
        s->rings[i] =
            mmap(NULL, s->ring_size + s->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (s->rings[i] == MAP_FAILED) {
            snprintf(err, errlen, "cannot map the perf ring buffer of CPU %d: %s", cpus[i],
                     strerror(errno));
            goto fail;
        }
    }
    if (pthread_create(&s->thread, NULL, reader_main, s) != 0) {
        snprintf(err, errlen, "cannot start the perf reader thread");
        goto fail;
    }
    s->thread_started = true;
    return s;
fail:
    pp_perf_sampler_stop(s);
    return NULL;
}

int pp_perf_sampler_drain(pp_perf_sampler *s, pp_profile *out)
{
    pp_perf_sampler_take_news(s); /* mappings of processes first sampled since the last call */
    raw_table t, fresh;
    if (table_init(&fresh) < 0)
        return -1;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->ncpus; i++)
        read_ring(s, i);
    t = s->table;
    s->table = fresh;
    pthread_mutex_unlock(&s->lock);

    int rc = 0;
    for (size_t b = 0; b < t.nbuckets; b++) {
        for (raw_stack *r = t.buckets[b]; r; r = r->next) {
            char comm[COMM_LEN + 1];
            pthread_mutex_lock(&s->lock);
            lookup_comm(s, r->pid, comm, sizeof(comm));
            pthread_mutex_unlock(&s->lock);
            if (pp_emit_mixed(s->emit, out, r->pid, r->tid, comm, r->ips + r->nk, r->nu, r->ips,
                              r->nk, NULL, 0, NULL, r->count) < 0)
                rc = -1;
        }
    }
    table_free(&t);
    pthread_mutex_lock(&s->lock);
    prune_comms(s);
    s->swept = false;
    pthread_mutex_unlock(&s->lock);
    s->drains++;
    return rc;
}

void pp_perf_sampler_count_threads(pp_perf_sampler *s, int pid)
{
    pthread_mutex_lock(&s->lock);
    if (pid > 0 && !(proc_uses(s, pid) & USE_TIDS)) {
        if (s->ntids >= TID_PIDS_MAX)
            pp_htab_filter(&s->procs, keep_running_tids, s);
        pid_ent *e = s->ntids < TID_PIDS_MAX ? proc_add(s, pid) /* never grows: room was made */
                                             : NULL;
        if (e)
            proc_set(s, e, USE_TIDS);
    }
    pthread_mutex_unlock(&s->lock);
}

int pp_perf_sampler_news_fd(pp_perf_sampler *s)
{
    return s->news_fd;
}

void pp_perf_sampler_take_news(pp_perf_sampler *s)
{
    int pids[NEWS_MAX];
    uint64_t v;
    pthread_mutex_lock(&s->lock);
    size_t n = s->nnews_queued;
    memcpy(pids, s->news, n * sizeof(int));
    s->nnews_queued = 0;
    if (read(s->news_fd, &v, sizeof(v)) < 0) {
        /* EAGAIN: nothing was signalled */
    }
    s->nnews += n;
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < n; i++)
        pp_symbolizer_note_pid(s->sym, pids[i]);
}

void pp_perf_sampler_get_stats(pp_perf_sampler *s, pp_sampler_stats *st)
{
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&s->lock);
    st->samples = s->samples;
    st->lost = s->lost;
    st->map_full = s->map_full;
    st->filtered = s->filtered;
    st->news = s->nnews;
    st->news_lost = s->news_lost;
    st->ustack_errors = s->ustack_errors;
    st->drains = s->drains;
    st->threads_full = s->threads_full;
    st->unwind_cfi = s->unwind_cfi;
    st->unwind_fallback = s->unwind_fallback;
    st->unwind_cfi_frames = s->unwind_cfi_frames;
    st->unwind_fp_frames = s->unwind_fp_frames;
    st->unwind_truncated = s->unwind_truncated;
    pthread_mutex_unlock(&s->lock);
}

static bool other_pid(void *ent, void *pid)
{
    return ((const pp_thread_hits *)ent)->pid != *(const int *)pid;
}

int pp_perf_sampler_track_threads(pp_perf_sampler *s, int pid, bool on)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    pid_ent *e = proc_find(s, pid);
    if (on && e && (e->uses & USE_TRACK)) {
        if (e->refs < (1u << 30) - 1)
            e->refs++;
        else
            rc = -1; /* (never: one per caller) */
    } else if (on) {
        if (pp_htab_reserve(&s->procs, TID_PIDS_MAX + s->ntracked + 1) == 0 &&
            (e = proc_add(s, pid))) {
            proc_set(s, e, USE_TRACK);
            e->refs = 1;
        } else {
            rc = -1;
        }
    } else if (e && (e->uses & USE_TRACK) && --e->refs == 0) {
        if (!proc_drop(s, e, USE_TRACK))
            pp_htab_remove(&s->procs, e);
        pp_htab_filter(&s->threads, other_pid, &pid); /* its counts nobody takes any more */
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

typedef struct take_arg {
    const int *pids; /* sorted */
    size_t npids, n, cap;
    pp_thread_hits *out;
} take_arg;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* pp_htab_filter: moves the entries of the caller's pids to its array (while there is room). */
static bool take_one(void *ent, void *arg)
{
    const pp_thread_hits *e = ent;
    take_arg *a = arg;
    if (a->n >= a->cap || !bsearch(&e->pid, a->pids, a->npids, sizeof(int), cmp_int))
        return true;
    a->out[a->n++] = *e;
    return false;
}

size_t pp_perf_sampler_sampled_threads(pp_perf_sampler *s, const int *pids, size_t npids,
                                       pp_thread_hits *out, size_t cap)
{
    take_arg a = {pids, npids, 0, cap, out};
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->ncpus; i++) /* the samples taken since the reader thread last woke */
        read_ring(s, i);
    if (pp_htab_count(&s->threads))
        pp_htab_filter(&s->threads, take_one, &a);
    pthread_mutex_unlock(&s->lock);
    return a.n;
}
