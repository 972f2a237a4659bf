/* eBPF backend of the system sampler: loads bpf/sampler.bpf.c (CO-RE skeleton), attaches it to
 * one CPU-clock perf event per online CPU and drains the in-kernel aggregates. */
#include "runtimes/system/bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpf/sampler.h"
#include "bpf/unwind.h"
#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/system/cpus.h"
#include "runtimes/system/ksym_bpf.h"
#include "runtimes/system/stackcache.h"
#include "runtimes/system/unwind_maps.h"
#include "runtimes/system/walks.h"
#include "sampler.skel.h"

_Static_assert(PP_STACKCACHE_MAX_DEPTH == PP_RT_MAX_WORDS,
               "the stack cache keeps the longest record: a runtime trace");

#define MAX_CPUS 1024
#define BATCH 1024
#define MAX_KEY sizeof(struct pp_sample_key) /* the largest key and value drain_map reads */
#define MAX_VAL                                                                                    \
    (sizeof(struct pp_sample_val) > sizeof(struct pp_thread_val) ? sizeof(struct pp_sample_val)    \
                                                                 : sizeof(struct pp_thread_val))
#define STACKS_RB_MAX (64u << 20)
/* Bytes of stack traces the ring buffer is sized for, per sample between two drains (a new
 * user and kernel trace of a typical depth), with room for drains that run late. */
#define RB_BYTES_PER_SAMPLE 1024
#define RB_DRAIN_SECONDS 4
#define PROC_PID_INIT_INO 0xEFFFFFFCU
#define NEWPIDS_MAX 256 /* announced pids kept between two pp_bpf_sampler_new_pids calls */

struct pp_bpf_sampler {
    struct sampler_bpf *skel;
    struct bpf_link **links;
    int *fds;
    int ncpus;
    int ncpu_possible;
    pp_emitter *emit;
    pp_symbolizer *sym;
    pp_ksym_bpf *ksym;
    struct ring_buffer *news;   /* first samples of processes */
    struct ring_buffer *traces; /* stack traces, each sent once (bpf/sampler.bpf.c) */
    pp_stackcache *stacks;
    uint64_t drains, nnews, unresolved[3]; /* [0] user, [1] kernel, [2] runtime */
    pp_walks walks;                        /* processes registered for in-sampler walks */
    int newpids[NEWPIDS_MAX];              /* announced since pp_bpf_sampler_new_pids */
    size_t nnewpids;
    uint64_t walk_frames_lost;
    uint64_t known_full; /* PP_CNT_KNOWN_FULL at the last drain */
    bool reconsumed;     /* the traces ring was read again this drain */
    bool no_batch;       /* the kernel has no batch ops on hash maps */
    /* drain_map's buffers: BATCH keys and values of any of the drained maps */
    _Alignas(8) unsigned char bkeys[BATCH * MAX_KEY];
    _Alignas(8) unsigned char bvals[BATCH * MAX_VAL];
    uint64_t *counter_buf;
    pp_filecache *fc;       /* unwind rows per file (CFI mode) */
    size_t fc_cap;          /* its byte cap (the rows array is sized from it) */
    uint64_t maps_bytes;    /* kernel memory of the BPF maps (fdinfo's memlock) */
    pp_unwind_maps *unwind; /* the unwinder's maps (CFI mode; NULL: frame pointers only) */
};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBBPF_WARN) {
        char msg[1024];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        msg[strcspn(msg, "\n")] = '\0';
        pp_debug("libbpf: %s", msg);
    }
    return 0;
}

void pp_bpf_sampler_stop(pp_bpf_sampler *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->ncpus; i++) {
        if (s->links && s->links[i])
            bpf_link__destroy(s->links[i]);
        if (s->fds && s->fds[i] >= 0)
            close(s->fds[i]);
    }
    free(s->links);
    free(s->fds);
    pp_walks_destroy(&s->walks);
    pp_unwind_maps_free(s->unwind);
    pp_filecache_free(s->fc);
    ring_buffer__free(s->news);
    ring_buffer__free(s->traces);
    pp_stackcache_free(s->stacks);
    sampler_bpf__destroy(s->skel);
    if (s->ksym)
        pp_symbolizer_set_kernel_namer(s->sym, NULL, NULL);
    if (s->sym && s->fc)
        pp_symbolizer_share_budget(s->sym, NULL, NULL);
    pp_ksym_bpf_close(s->ksym);
    pp_emitter_free(s->emit);
    free(s->counter_buf);
    free(s);
}

static int on_news(void *ctx, void *data, size_t size)
{
    pp_bpf_sampler *s = ctx;
    uint32_t pid;
    if (size >= sizeof(pid)) {
        memcpy(&pid, data, sizeof(pid));
        pp_symbolizer_note_pid(s->sym, (int)pid);
        if (s->unwind)
            pp_unwind_maps_add_pid(s->unwind, (int)pid);
        s->nnews++;
        if (s->nnewpids < NEWPIDS_MAX) /* beyond: found by the next session's discovery */
            s->newpids[s->nnewpids++] = (int)pid;
    }
    return 0;
}

static uint64_t counter(pp_bpf_sampler *s, uint32_t idx);
static int drain_locked(pp_bpf_sampler *s, pp_profile *out);

static int on_trace(void *ctx, void *data, size_t size)
{
    pp_bpf_sampler *s = ctx;
    const struct pp_stack_rec *r = data;
    size_t head = offsetof(struct pp_stack_rec, ips);
    if (size < head)
        return 0;
    size_t n = (size - head) / sizeof(uint64_t);
    if (r->nr < n)
        n = r->nr;
    if (pp_stackcache_add(s->stacks, r->hash, (const uint64_t *)(const void *)r->ips, n) < 0)
        pp_debug("sampler: out of memory keeping a stack trace");
    return 0;
}

/* Samples taken between two drains, with room for drains that run late. */
static uint64_t samples_per_drain(const pp_sampler_opts *o, int ncpus)
{
    return (uint64_t)ncpus * (uint64_t)(o->frequency > 0 ? o->frequency : 1) * RB_DRAIN_SECONDS;
}

/* The ring buffer's size: a power of two holding the traces of every sample between drains. */
static uint32_t traces_rb_bytes(const pp_sampler_opts *o, int ncpus)
{
    uint64_t want = samples_per_drain(o, ncpus) * RB_BYTES_PER_SAMPLE;
    uint32_t sz = PP_STACKS_RB_MIN;
    while (sz < want && sz < STACKS_RB_MAX)
        sz *= 2;
    return sz;
}

/* Entries of a counts or threads map: at least one per sample between drains (every sample
 * may be distinct), 4,096 to PP_COUNTS_ENTRIES. A smaller map is created faster and, above all,
 * drained faster: each drain visits every bucket of both maps. */
static uint32_t entries_for(const pp_sampler_opts *o, int ncpus)
{
    uint64_t want = samples_per_drain(o, ncpus);
    uint32_t n = 4096;
    while (n < want && n < PP_COUNTS_ENTRIES)
        n *= 2;
    return n;
}

/* Entries of the known-hash map: two stacks per sample between drains, so that it never fills
 * before the cache (half its size) rotates; 32,768 to 524,288 (~64 bytes each). */
static uint32_t known_entries_for(const pp_sampler_opts *o, int ncpus)
{
    uint64_t want = 2 * samples_per_drain(o, ncpus);
    uint32_t n = PP_KNOWN_ENTRIES;
    while (n < want && n < (1u << 19))
        n *= 2;
    return n;
}

int pp_bpf_sampler_news_fd(pp_bpf_sampler *s)
{
    return ring_buffer__epoll_fd(s->news);
}

size_t pp_bpf_sampler_new_pids(pp_bpf_sampler *s, int *pids, size_t cap)
{
    size_t n = s->nnewpids < cap ? s->nnewpids : cap;
    memcpy(pids, s->newpids, n * sizeof(*pids));
    s->nnewpids = 0;
    return n;
}

void pp_bpf_sampler_load_rows(pp_bpf_sampler *s)
{
    if (s->unwind)
        pp_unwind_maps_load_ready(s->unwind);
}

void pp_bpf_sampler_take_news(pp_bpf_sampler *s)
{
    ring_buffer__consume(s->news);
    if (s->unwind)
        pp_unwind_maps_sync(s->unwind);
}

/* The kernel memory of obj's maps, as /proc/self/fdinfo reports it ("memlock:"): allocated when
 * a map is made, charged to polyprof's memory cgroup whether mapped into its memory or not. */
static uint64_t maps_memlock(struct bpf_object *obj)
{
    uint64_t total = 0;
    struct bpf_map *m;
    bpf_object__for_each_map(m, obj)
    {
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", bpf_map__fd(m));
        if (bpf_map__fd(m) < 0 || pp_read_small_file(path, buf, sizeof(buf)) <= 0)
            continue;
        const char *v = strstr(buf, "memlock:");
        if (v)
            total += strtoull(v + 8, NULL, 10);
    }
    return total;
}

/* The rows array's size: the rows the per-file cache can hold (8 bytes each, packed), plus a
 * third for the holes files leave in it as they come and go. */
static uint32_t unw_rows_for(size_t cache_bytes)
{
    uint64_t rows = cache_bytes / sizeof(uint64_t);
    rows += rows / 3;
    return rows > PP_UNW_ROWS_MAX ? PP_UNW_ROWS_MAX : rows < 4096 ? 4096 : (uint32_t)rows;
}

/* The CFI unwinder's user-space side: the per-file row cache and the maps it fills. Without it
 * no process is in unw_procs, so every user stack is unwound by frame pointers. */
static int start_unwind(pp_bpf_sampler *s, char *err, size_t errlen)
{
    s->fc = pp_filecache_new(s->fc_cap, 1);
    if (!s->fc) {
        snprintf(err, errlen, "out of memory for the unwind cache");
        return -1;
    }
    pp_symbolizer_share_budget(s->sym, pp_filecache_bytes, s->fc);
    pp_unwind_maps_fds fds = {.procs = bpf_map__fd(s->skel->maps.unw_procs),
                              .maps = bpf_map__fd(s->skel->maps.unw_maps),
                              .pages = bpf_map__fd(s->skel->maps.unw_pages),
                              .rows = bpf_map__fd(s->skel->maps.unw_rows)};
    s->unwind =
        pp_unwind_maps_new(&fds, bpf_map__max_entries(s->skel->maps.unw_rows), s->fc, err, errlen);
    return s->unwind ? 0 : -1;
}

pp_bpf_sampler *pp_bpf_sampler_start(const pp_sampler_opts *o, pp_symbolizer *sym, char *err,
                                     size_t errlen)
{
    libbpf_set_print(libbpf_quiet);
    pp_bpf_sampler *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pp_walks_init(&s->walks);
    int cpus[MAX_CPUS];
    s->ncpu_possible = libbpf_num_possible_cpus();
    int n = pp_online_cpus(cpus, MAX_CPUS);
    if (n <= 0 || s->ncpu_possible <= 0) {
        snprintf(err, errlen, "cannot read the online CPU list");
        goto fail;
    }
    s->emit = pp_emitter_new(sym);
    uint32_t known = n > 0 ? known_entries_for(o, n) : PP_KNOWN_ENTRIES;
    s->stacks = pp_stackcache_new(o->stack_cache && o->stack_cache < known / 2 ? o->stack_cache
                                                                               : known / 2);
    s->counter_buf = calloc((size_t)s->ncpu_possible, sizeof(uint64_t));
    s->links = calloc((size_t)n, sizeof(*s->links));
    s->fds = calloc((size_t)n, sizeof(*s->fds));
    if (!s->emit || !s->stacks || !s->counter_buf || !s->links || !s->fds) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++)
        s->fds[i] = -1;

    s->skel = sampler_bpf__open();
    if (!s->skel) {
        snprintf(err, errlen, "cannot open the BPF sampler: %s", strerror(errno));
        goto fail;
    }
    s->skel->rodata->filter_pids = o->npids > 0;
    s->skel->rodata->unwind_cfi = !o->fp_only;
    /* frame pointers only: the rows array is not allocated (the other unwind maps allocate
     * their entries as they are added) */
    s->fc_cap = pp_filecache_cap_bytes();
    bpf_map__set_max_entries(s->skel->maps.unw_rows, o->fp_only ? 1 : unw_rows_for(s->fc_cap));
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != PROC_PID_INIT_INO) {
        s->skel->rodata->pidns_dev = st.st_dev;
        s->skel->rodata->pidns_ino = st.st_ino;
    }
    bpf_map__set_max_entries(s->skel->maps.stacks, traces_rb_bytes(o, n));
    bpf_map__set_max_entries(s->skel->maps.known, known);
    uint32_t entries = entries_for(o, n);
    struct bpf_map *sized[] = {s->skel->maps.counts0, s->skel->maps.counts1, s->skel->maps.threads0,
                               s->skel->maps.threads1};
    for (size_t i = 0; i < sizeof(sized) / sizeof(sized[0]); i++)
        bpf_map__set_max_entries(sized[i], entries);
    double t0 = pp_mono_now();
    int rc = sampler_bpf__load(s->skel);
    if (rc) {
        snprintf(err, errlen,
                 "cannot load the BPF sampler (%s); a kernel with BTF and CAP_BPF/CAP_SYS_ADMIN "
                 "is needed",
                 strerror(-rc));
        goto fail;
    }
    s->maps_bytes = maps_memlock(s->skel->obj);
    pp_debug("sampler: BPF programs loaded in %.1f ms (user stacks by %s; maps %.1f MiB)",
             (pp_mono_now() - t0) * 1000.0, o->fp_only ? "frame pointers" : "CFI",
             (double)s->maps_bytes / (1 << 20));
    /* Kernel frames are named by the kernel itself when it lets us (else from /proc/kallsyms). */
    char kerr[256];
    s->sym = sym;
    s->ksym = pp_ksym_bpf_open(kerr, sizeof(kerr));
    if (s->ksym)
        pp_symbolizer_set_kernel_namer(sym, pp_ksym_bpf_namer, s->ksym);
    else
        pp_debug("%s; kernel symbols will come from /proc/kallsyms", kerr);
    if (!o->fp_only && start_unwind(s, kerr, sizeof(kerr)) < 0)
        pp_warn("%s; user stacks will be unwound by frame pointers only", kerr);
    s->news = ring_buffer__new(bpf_map__fd(s->skel->maps.news), on_news, s, NULL);
    if (!s->news) {
        snprintf(err, errlen, "cannot open the sampler's ring buffer: %s", strerror(errno));
        goto fail;
    }
    s->traces = ring_buffer__new(bpf_map__fd(s->skel->maps.stacks), on_trace, s, NULL);
    if (!s->traces) {
        snprintf(err, errlen, "cannot open the sampler's ring buffer: %s", strerror(errno));
        goto fail;
    }
    for (size_t i = 0; i < o->npids; i++) {
        uint32_t pid = (uint32_t)o->pids[i];
        uint8_t one = 1;
        bpf_map__update_elem(s->skel->maps.pids, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY);
    }
    for (int i = 0; i < n; i++) {
        int fd = pp_open_cpu_clock(cpus[i], o->frequency, PERF_SAMPLE_IP, 0);
        if (fd < 0) {
            snprintf(err, errlen, "perf_event_open on CPU %d failed: %s", cpus[i], strerror(errno));
            s->ncpus = i;
            goto fail;
        }
        s->fds[i] = fd;
        s->ncpus = i + 1;
        s->links[i] = bpf_program__attach_perf_event(s->skel->progs.pp_sample, fd);
        if (!s->links[i]) {
            snprintf(err, errlen, "cannot attach the BPF sampler to CPU %d: %s", cpus[i],
                     strerror(errno));
            goto fail;
        }
    }
    return s;
fail:
    pp_bpf_sampler_stop(s);
    return NULL;
}

/* The trace of a stack hash; NULL with *n = 0 when there is none (counted when it was lost).
 * A trace registered by a program that was held up past the flip's wait may still be on its
 * way: the ring is read once more, once per drain, before the stack counts as lost. */
static const uint64_t *trace_of(pp_bpf_sampler *s, uint64_t hash, int kernel, size_t *n)
{
    const uint64_t *ips = pp_stackcache_get(s->stacks, hash, n);
    if (!ips && hash && !s->reconsumed) {
        s->reconsumed = true;
        ring_buffer__consume(s->traces);
        ips = pp_stackcache_get(s->stacks, hash, n);
    }
    if (!ips && hash)
        s->unresolved[kernel]++;
    return ips;
}

/* Deletes every entry, in one walk: the next key is fetched before the current one is deleted.
 * (Asking for the first key after each delete rescans the map from its first bucket each time:
 * quadratic, and most of polyprof's CPU at 99 Hz.) */
static void clear_map(int fd, size_t key_size)
{
    unsigned char cur[64], next[64];
    if (key_size > sizeof(cur) || bpf_map_get_next_key(fd, NULL, cur) != 0)
        return;
    for (;;) {
        int more = bpf_map_get_next_key(fd, cur, next) == 0;
        bpf_map_delete_elem(fd, cur);
        if (!more)
            break;
        memcpy(cur, next, key_size);
    }
}

/* The frame ids of a runtime trace of pid (its registered walker names them), root first;
 * 0 when there is none or it cannot be named. */
static size_t runtime_frames(pp_bpf_sampler *s, pp_profile *out, pp_walk_ent *we, uint64_t hash,
                             uint32_t *ids, size_t cap)
{
    size_t n;
    const uint64_t *w = trace_of(s, hash, 2, &n);
    if (!w || !we || n < 1 || !PP_RT_HDR_MAGIC(w[0]) || PP_RT_HDR_WALKER(w[0]) != we->walker)
        return 0;
    size_t frames = PP_RT_HDR_FRAMES(w[0]);
    if (frames > (n - 1) / 2)
        frames = (n - 1) / 2;
    return we->ops->name(we->state, out, w + 1, frames, PP_RT_HDR_FLAGS(w[0]), ids, cap,
                         &s->walk_frames_lost);
}

/* Adds pid, a fork of the registered via that the sampler walked with via's data (it is named
 * with via's state and counted on its own). Its entry, or NULL. */
static pp_walk_ent *add_fork(pp_bpf_sampler *s, int pid, int via)
{
    pp_walk_ent *parent = pp_walks_get(&s->walks, via);
    if (!parent || parent->via)
        return NULL;
    pp_walk_ent e = {.pid = pid, .walker = parent->walker, .ops = parent->ops, .via = via};
    if (pp_walks_put(&s->walks, &e) < 0)
        return NULL;
    pp_debug("sampler: pid %d walked as a fork of pid %d", pid, via);
    return pp_walks_get(&s->walks, pid);
}

/* Emits one aggregated counts entry (a struct pp_sample_key and its pp_sample_val). */
static int emit_entry(pp_bpf_sampler *s, pp_profile *out, const void *k, const void *v)
{
    const struct pp_sample_key *key = k;
    const struct pp_sample_val *val = v;
    char comm[PP_TASK_COMM_LEN + 1];
    memcpy(comm, val->comm, PP_TASK_COMM_LEN);
    comm[PP_TASK_COMM_LEN] = '\0';
    size_t nu, nk, nrt = 0;
    const uint64_t *uips = trace_of(s, key->user_stack, 0, &nu);
    const uint64_t *kips = trace_of(s, key->kernel_stack, 1, &nk);
    pp_walk_ent *we = s->walks.n ? pp_walks_get(&s->walks, (int)key->pid) : NULL;
    /* a fork's entry counts only the samples the sampler took as that fork's: after an exec (or
     * from a thread already past exit_mm) the pid runs something else, native only */
    if (we && we->via && key->rt_pid != (uint32_t)we->via)
        we = NULL;
    if (!we && key->rt_pid && key->rt_stack)
        we = add_fork(s, (int)key->pid, (int)key->rt_pid);
    if (!we)
        return pp_emit_mixed(s->emit, out, (int)key->pid, key->tid, comm, uips, nu, kips, nk, NULL,
                             0, NULL, val->count);
    /* a fork is named with its ancestor's state (the frames it recorded are the ancestor's
     * code, checked per frame; the fork itself may be gone by now) */
    pp_walk_ent *namer = we->via ? pp_walks_get(&s->walks, we->via) : we;
    uint32_t rt[PP_EMIT_MAX_RT]; /* a runtime's frames, inlined ones too (named from a trace) */
    if (key->rt_stack && namer && !namer->via)
        nrt = runtime_frames(s, out, namer, key->rt_stack, rt, sizeof(rt) / sizeof(rt[0]));
    we->samples += val->count;
    if (nrt)
        we->rt_samples += val->count;
    if (we->via) {
        pp_pid_profile *pp = pp_profile_get(out, (int)key->pid, true);
        if (pp)
            pp->fork_of = we->via;
    }
    pp_emit_loop loop = {we->ops->loop_symbols, namer && namer->state ? we->ops->loop_code : NULL,
                         namer ? namer->state : NULL};
    return pp_emit_mixed(s->emit, out, (int)key->pid, key->tid, comm, uips, nu, kips, nk, rt, nrt,
                         &loop, val->count);
}

typedef int (*entry_fn)(pp_bpf_sampler *s, pp_profile *out, const void *key, const void *val);

/* Reads and deletes every entry of a hash map whose keys are key_size bytes (values at most
 * MAX_VAL): in batches where the kernel has them (one syscall per BATCH entries), else one
 * entry at a time. each (NULL: none) sees every entry; returns -1 if it ever did. */
static int drain_map(pp_bpf_sampler *s, int fd, size_t key_size, size_t val_size, entry_fn each,
                     pp_profile *out)
{
    int rc = 0;
    if (!s->no_batch) {
        uint64_t token[2], next[2]; /* a hash map's batch position (a bucket index) */
        for (bool first = true;; first = false) {
            uint32_t n = BATCH;
            int r = bpf_map_lookup_and_delete_batch(fd, first ? NULL : token, next, s->bkeys,
                                                    s->bvals, &n, NULL);
            int e = r ? errno : 0;
            if (r && e != ENOENT && first && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP)) {
                s->no_batch = true; /* nothing was read or deleted */
                break;
            }
            for (uint32_t i = 0; each && i < n && (r == 0 || e == ENOENT); i++)
                if (each(s, out, s->bkeys + i * key_size, s->bvals + i * val_size) < 0)
                    rc = -1;
            if (r) {
                if (e != ENOENT)
                    clear_map(fd, key_size); /* never left full */
                return rc;
            }
            memcpy(token, next, sizeof(token));
        }
    }
    /* one at a time: bkeys holds the current and the next key, bvals the value */
    unsigned char *key = s->bkeys, *nextkey = s->bkeys + key_size;
    for (bool first = true; each && bpf_map_get_next_key(fd, first ? NULL : key, nextkey) == 0;
         first = false) {
        memcpy(key, nextkey, key_size);
        if (bpf_map_lookup_elem(fd, key, s->bvals) == 0 && each(s, out, key, s->bvals) < 0)
            rc = -1;
    }
    clear_map(fd, key_size);
    return rc;
}

/* Drops registered processes that are gone or whose pid now has another image (the sampler
 * marked their entry stale): checked every few drains. Called with the walks locked. */
#define WALKS_CHECK_DRAINS 4
static void walks_prune(pp_bpf_sampler *s)
{
    int fd = bpf_map__fd(s->skel->maps.rt_procs);
    for (size_t i = s->walks.n; i-- > 0;) {
        uint32_t pid = (uint32_t)s->walks.v[i].pid;
        if (s->walks.v[i].via) { /* a fork: kept while it, its ancestor and its rt_forks entry
                                    are (the sampler deletes that entry at an exec; an entry
                                    the LRU map evicted is added again by the next walk) */
            if (pp_pid_gone((int)pid) || !pp_walks_get(&s->walks, s->walks.v[i].via) ||
                !pp_bpf_sampler_walk_forked(s, (int)pid))
                pp_walks_remove(&s->walks, (int)pid);
            continue;
        }
        struct pp_rt_proc p;
        bool lost = bpf_map_lookup_elem(fd, &pid, &p) != 0;
        if (!lost && !p.stale && !pp_pid_gone((int)pid))
            continue;
        bpf_map_delete_elem(fd, &pid);
        pp_debug("sampler: pid %u no longer walked (%s)", pid,
                 lost      ? "entry lost"
                 : p.stale ? "new image"
                           : "exited");
        pp_walks_remove(&s->walks, (int)pid);
    }
}

int pp_bpf_sampler_drain(pp_bpf_sampler *s, pp_profile *out)
{
    pthread_mutex_lock(&s->walks.lock);
    int rc = drain_locked(s, out);
    if (s->drains % WALKS_CHECK_DRAINS == 0)
        walks_prune(s);
    pthread_mutex_unlock(&s->walks.lock);
    return rc;
}

static int drain_locked(pp_bpf_sampler *s, pp_profile *out)
{
    struct sampler_bpf *k = s->skel;
    for (size_t i = 0; i < s->walks.n; i++)
        if (s->walks.v[i].ops->begin && !s->walks.v[i].via) /* a fork has no state */
            s->walks.v[i].ops->begin(s->walks.v[i].state);
    pp_bpf_sampler_take_news(s); /* mappings of processes first sampled since the last call */
    uint32_t idle = k->bss->active;
    /* Flip: new samples go to the other set. A program that read the old value finishes within
     * microseconds (BPF programs run to completion with preemption off); wait well past that. */
    __atomic_store_n(&k->bss->active, idle ^ 1, __ATOMIC_SEQ_CST);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);

    int counts_fd = bpf_map__fd(idle ? k->maps.counts1 : k->maps.counts0);
    int threads_fd = bpf_map__fd(idle ? k->maps.threads1 : k->maps.threads0);

    ring_buffer__consume(s->traces); /* every trace the idle set's entries name */
    s->reconsumed = false;
    int rc = drain_map(s, counts_fd, sizeof(struct pp_sample_key), sizeof(struct pp_sample_val),
                       emit_entry, out);
    if (s->unwind)
        pp_unwind_maps_sync(s->unwind); /* exits, rescans, rows the cache finished */
    drain_map(s, threads_fd, sizeof(uint32_t), sizeof(struct pp_thread_val), NULL, NULL);
    /* The traces of the old generation served the entries counted before the last rotation,
     * just drained. When the current one is full: forget every hash in the kernel first (each is
     * sent again at its next sample), then rotate. */
    pp_stackcache_drop_old(s->stacks);
    uint64_t known_full = counter(s, PP_CNT_KNOWN_FULL); /* the kernel map filled up anyway */
    if (pp_stackcache_full(s->stacks) || known_full != s->known_full) {
        s->known_full = known_full;
        drain_map(s, bpf_map__fd(k->maps.known), sizeof(uint64_t), sizeof(uint8_t), NULL, NULL);
        pp_stackcache_rotate(s->stacks);
    }
    s->drains++;
    return rc;
}

static uint64_t counter(pp_bpf_sampler *s, uint32_t idx)
{
    if (bpf_map__lookup_elem(s->skel->maps.counters, &idx, sizeof(idx), s->counter_buf,
                             (size_t)s->ncpu_possible * sizeof(uint64_t), 0) != 0)
        return 0;
    uint64_t sum = 0;
    for (int i = 0; i < s->ncpu_possible; i++)
        sum += s->counter_buf[i];
    return sum;
}

void pp_bpf_sampler_get_stats(pp_bpf_sampler *s, pp_sampler_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->samples = counter(s, PP_CNT_SAMPLES);
    st->map_full = counter(s, PP_CNT_MAP_FULL);
    st->ustacks_lost = counter(s, PP_CNT_USTACK_LOST) + s->unresolved[0];
    st->kstacks_lost = counter(s, PP_CNT_KSTACK_LOST) + s->unresolved[1];
    st->ustack_errors = counter(s, PP_CNT_USTACK_ERROR);
    st->filtered = counter(s, PP_CNT_FILTERED);
    st->news = s->nnews;
    st->news_lost = counter(s, PP_CNT_NEWS_LOST);
    st->drains = s->drains;
    st->walk_ok = counter(s, PP_CNT_WALK_OK);
    st->walk_no_thread = counter(s, PP_CNT_WALK_NO_THREAD);
    st->walk_idle = counter(s, PP_CNT_WALK_IDLE);
    st->walk_read = counter(s, PP_CNT_WALK_READ);
    st->walk_partial = counter(s, PP_CNT_WALK_PARTIAL);
    st->walk_truncated = counter(s, PP_CNT_WALK_TRUNCATED);
    st->walk_lost = counter(s, PP_CNT_WALK_LOST) + s->unresolved[2];
    st->walk_stale = counter(s, PP_CNT_WALK_STALE);
    st->walk_inherited = counter(s, PP_CNT_WALK_INHERITED);
    st->walk_frames_lost = s->walk_frames_lost;
    st->unwind_cfi_frames = counter(s, PP_CNT_UNW_CFI_FRAMES);
    st->unwind_fp_frames = counter(s, PP_CNT_UNW_FP_FRAMES);
    st->unwind_cfi = counter(s, PP_CNT_UNW_CFI_SAMPLES);
    st->unwind_fallback = counter(s, PP_CNT_UNW_FALLBACK);
    st->unwind_truncated = counter(s, PP_CNT_UNW_TRUNCATED);
    st->unwind_unloaded = counter(s, PP_CNT_UNW_UNLOADED);
    st->bpf_maps_bytes = s->maps_bytes;
    if (s->unwind) {
        pp_unwind_stats us;
        pp_unwind_maps_stats(s->unwind, &us);
        st->unwind_table_bytes = us.table_bytes;
    }
}

/* Whether pid's registration describes an image it no longer runs (an exec keeps the pid and
 * its start time: the sampler marked the entry stale), or is missing. */
static bool entry_stale(pp_bpf_sampler *s, int pid)
{
    uint32_t key = (uint32_t)pid;
    struct pp_rt_proc p;
    return bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.rt_procs), &key, &p) != 0 || p.stale;
}

int pp_bpf_sampler_walk_attach(pp_bpf_sampler *s, int pid, unsigned long long start_ticks,
                               unsigned walker, const void *info, size_t len,
                               const pp_walker_ops *ops, void *state, char *err, size_t errlen)
{
    pp_walk_ent e = {
        .pid = pid, .start = start_ticks, .walker = walker, .ops = ops, .state = state};
    if (walker == PP_WALK_NONE || walker >= PP_WALK_COUNT || len > PP_RT_INFO_BYTES) {
        snprintf(err, errlen, "bad walker %u or data size %zu", walker, len);
        ops->free(state);
        return -1;
    }
    pthread_mutex_lock(&s->walks.lock);
    pp_walk_ent *old = pp_walks_get(&s->walks, pid);
    if (old && old->start == start_ticks && !entry_stale(s, pid)) {
        pthread_mutex_unlock(&s->walks.lock);
        ops->free(state);
        return 0;
    }
    struct pp_rt_proc p = {.walker = walker};
    memcpy(p.info, info, len);
    uint32_t key = (uint32_t)pid;
    int rc =
        bpf_map__update_elem(s->skel->maps.rt_procs, &key, sizeof(key), &p, sizeof(p), BPF_ANY);
    if (rc) {
        snprintf(err, errlen, "cannot register pid %d with the sampler: %s", pid, strerror(-rc));
        if (old)
            pp_walks_remove(&s->walks, pid);
        ops->free(state);
    } else if (pp_walks_put(&s->walks, &e) < 0) {
        snprintf(err, errlen, "out of memory");
        bpf_map__delete_elem(s->skel->maps.rt_procs, &key, sizeof(key), 0);
        rc = -1;
    }
    pthread_mutex_unlock(&s->walks.lock);
    return rc ? -1 : 0;
}

bool pp_bpf_sampler_walk_attached(pp_bpf_sampler *s, int pid, unsigned long long start_ticks)
{
    pthread_mutex_lock(&s->walks.lock);
    pp_walk_ent *e = pp_walks_get(&s->walks, pid);
    bool r = e && e->start == start_ticks && !entry_stale(s, pid);
    pthread_mutex_unlock(&s->walks.lock);
    return r;
}

bool pp_bpf_sampler_walk_forked(pp_bpf_sampler *s, int pid)
{
    uint32_t key = (uint32_t)pid, via;
    return bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.rt_forks), &key, &via) == 0;
}

int pp_bpf_sampler_count_threads(pp_bpf_sampler *s, int pid)
{
    uint32_t key = (uint32_t)pid;
    uint8_t one = 1;
    return bpf_map__update_elem(s->skel->maps.tid_pids, &key, sizeof(key), &one, sizeof(one),
                                BPF_ANY)
               ? -1
               : 0;
}

size_t pp_bpf_sampler_walk_coverage(pp_bpf_sampler *s, pp_walk_cov **out)
{
    pthread_mutex_lock(&s->walks.lock);
    size_t n = pp_walks_coverage(&s->walks, out);
    pthread_mutex_unlock(&s->walks.lock);
    return n;
}
