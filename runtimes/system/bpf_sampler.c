/* eBPF backend of the system sampler: loads bpf/sampler.bpf.c (CO-RE skeleton), attaches it to
 * one CPU-clock perf event per online CPU and drains the in-kernel aggregates. */
#include "runtimes/system/bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpf/sampler.h"
#include "orchestrator/log.h"
#include "runtimes/system/cpus.h"
#include "runtimes/system/ksym_bpf.h"
#include "sampler.skel.h"

#define MAX_CPUS 1024
#define BATCH 1024
#define FULL_CLEAR_EVERY 16
#define PROC_PID_INIT_INO 0xEFFFFFFCU

struct pp_bpf_sampler {
    struct sampler_bpf *skel;
    struct bpf_link **links;
    int *fds;
    int ncpus;
    int ncpu_possible;
    pp_emitter *emit;
    pp_symbolizer *sym;
    pp_ksym_bpf *ksym;
    struct ring_buffer *news; /* first samples of processes */
    uint64_t drains, nnews;
    bool no_batch;                     /* the kernel has no batch ops on hash maps */
    struct pp_sample_key bkeys[BATCH]; /* batch buffers */
    struct pp_sample_val bvals[BATCH];
    uint64_t used[PP_STACKS_ENTRIES / 64]; /* stack ids used by this drain's entries */
    uint64_t *counter_buf;
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
    ring_buffer__free(s->news);
    sampler_bpf__destroy(s->skel);
    if (s->ksym)
        pp_symbolizer_set_kernel_namer(s->sym, NULL, NULL);
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
        s->nnews++;
    }
    return 0;
}

int pp_bpf_sampler_news_fd(pp_bpf_sampler *s)
{
    return ring_buffer__epoll_fd(s->news);
}

void pp_bpf_sampler_take_news(pp_bpf_sampler *s)
{
    ring_buffer__consume(s->news);
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
    int cpus[MAX_CPUS];
    s->ncpu_possible = libbpf_num_possible_cpus();
    int n = pp_online_cpus(cpus, MAX_CPUS);
    if (n <= 0 || s->ncpu_possible <= 0) {
        snprintf(err, errlen, "cannot read the online CPU list");
        goto fail;
    }
    s->emit = pp_emitter_new(sym);
    s->counter_buf = calloc((size_t)s->ncpu_possible, sizeof(uint64_t));
    s->links = calloc((size_t)n, sizeof(*s->links));
    s->fds = calloc((size_t)n, sizeof(*s->fds));
    if (!s->emit || !s->counter_buf || !s->links || !s->fds) {
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
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != PROC_PID_INIT_INO) {
        s->skel->rodata->pidns_dev = st.st_dev;
        s->skel->rodata->pidns_ino = st.st_ino;
    }
    int rc = sampler_bpf__load(s->skel);
    if (rc) {
        snprintf(err, errlen,
                 "cannot load the BPF sampler (%s); a kernel with BTF and CAP_BPF/CAP_SYS_ADMIN "
                 "is needed",
                 strerror(-rc));
        goto fail;
    }
    /* Kernel frames are named by the kernel itself when it lets us (else from /proc/kallsyms). */
    char kerr[256];
    s->sym = sym;
    s->ksym = pp_ksym_bpf_open(kerr, sizeof(kerr));
    if (s->ksym)
        pp_symbolizer_set_kernel_namer(sym, pp_ksym_bpf_namer, s->ksym);
    else
        pp_debug("%s; kernel symbols will come from /proc/kallsyms", kerr);
    s->news = ring_buffer__new(bpf_map__fd(s->skel->maps.news), on_news, s, NULL);
    if (!s->news) {
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

/* Reads one stack of the idle set; returns the number of ips (0 when unavailable). */
static size_t read_stack(int map_fd, int id, uint64_t *ips)
{
    if (id < 0)
        return 0;
    uint32_t key = (uint32_t)id;
    if (bpf_map_lookup_elem(map_fd, &key, ips) != 0)
        return 0;
    size_t n = 0;
    while (n < PP_MAX_STACK_DEPTH && ips[n])
        n++;
    return n;
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

/* Emits one aggregated entry; marks its stack ids in used (deleted after the drain). */
static int emit_entry(pp_bpf_sampler *s, pp_profile *out, int stacks_fd,
                      const struct pp_sample_key *key, const struct pp_sample_val *val)
{
    uint64_t uips[PP_MAX_STACK_DEPTH], kips[PP_MAX_STACK_DEPTH];
    char comm[PP_TASK_COMM_LEN + 1];
    memcpy(comm, val->comm, PP_TASK_COMM_LEN);
    comm[PP_TASK_COMM_LEN] = '\0';
    size_t nu = read_stack(stacks_fd, key->user_stack, uips);
    size_t nk = read_stack(stacks_fd, key->kernel_stack, kips);
    const int ids[2] = {key->user_stack, key->kernel_stack};
    for (int i = 0; i < 2; i++)
        if (ids[i] >= 0 && ids[i] < PP_STACKS_ENTRIES)
            s->used[ids[i] / 64] |= 1ULL << (ids[i] % 64);
    return pp_emit_sample(s->emit, out, (int)key->pid, comm, uips, nu, kips, nk, val->count);
}

/* Reads and deletes every counts entry: batched (one syscall per BATCH entries), else one by
 * one (kernels without batch operations on hash maps). */
static int drain_counts(pp_bpf_sampler *s, pp_profile *out, int counts_fd, int stacks_fd)
{
    int rc = 0;
    if (!s->no_batch) {
        uint64_t token[2], next[2];
        bool first = true;
        for (;;) {
            uint32_t n = BATCH;
            int r = bpf_map_lookup_and_delete_batch(counts_fd, first ? NULL : token, next, s->bkeys,
                                                    s->bvals, &n, NULL);
            int e = r ? errno : 0;
            if (r && e != ENOENT && first && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP)) {
                s->no_batch = true; /* nothing was read or deleted */
                break;
            }
            for (uint32_t i = 0; i < n && (r == 0 || e == ENOENT); i++)
                if (emit_entry(s, out, stacks_fd, &s->bkeys[i], &s->bvals[i]) < 0)
                    rc = -1;
            if (r) {
                if (e != ENOENT)
                    clear_map(counts_fd, sizeof(struct pp_sample_key)); /* never left full */
                return rc;
            }
            memcpy(token, next, sizeof(token));
            first = false;
        }
    }
    struct pp_sample_key key, next;
    struct pp_sample_val val;
    bool first = true;
    while (bpf_map_get_next_key(counts_fd, first ? NULL : &key, &next) == 0) {
        first = false;
        key = next;
        if (bpf_map_lookup_elem(counts_fd, &key, &val) == 0 &&
            emit_entry(s, out, stacks_fd, &key, &val) < 0)
            rc = -1;
    }
    clear_map(counts_fd, sizeof(struct pp_sample_key));
    return rc;
}

int pp_bpf_sampler_drain(pp_bpf_sampler *s, pp_profile *out)
{
    struct sampler_bpf *k = s->skel;
    pp_bpf_sampler_take_news(s); /* mappings of processes first sampled since the last call */
    uint32_t idle = k->bss->active;
    /* Flip: new samples go to the other set. A program that read the old value finishes within
     * microseconds (BPF programs run to completion with preemption off); wait well past that. */
    __atomic_store_n(&k->bss->active, idle ^ 1, __ATOMIC_SEQ_CST);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);

    int counts_fd = bpf_map__fd(idle ? k->maps.counts1 : k->maps.counts0);
    int stacks_fd = bpf_map__fd(idle ? k->maps.stacks1 : k->maps.stacks0);
    int threads_fd = bpf_map__fd(idle ? k->maps.threads1 : k->maps.threads0);

    memset(s->used, 0, sizeof(s->used));
    int rc = drain_counts(s, out, counts_fd, stacks_fd);
    /* Stack traces: the ones the entries used are deleted by id. A full walk every
     * FULL_CLEAR_EVERY drains removes traces no entry kept (a counts entry refused by a full
     * map), which would otherwise fill the stack map. */
    if (s->drains % FULL_CLEAR_EVERY == FULL_CLEAR_EVERY - 1) {
        clear_map(stacks_fd, sizeof(uint32_t));
    } else {
        for (uint32_t w = 0; w < PP_STACKS_ENTRIES / 64; w++)
            for (uint64_t bits = s->used[w]; bits; bits &= bits - 1) {
                uint32_t id = w * 64 + (uint32_t)__builtin_ctzll(bits);
                bpf_map_delete_elem(stacks_fd, &id);
            }
    }
    clear_map(threads_fd, sizeof(uint32_t));
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
    st->ustack_collisions = counter(s, PP_CNT_USTACK_COLLISION);
    st->kstack_collisions = counter(s, PP_CNT_KSTACK_COLLISION);
    st->ustack_errors = counter(s, PP_CNT_USTACK_ERROR);
    st->filtered = counter(s, PP_CNT_FILTERED);
    st->news = s->nnews;
    st->news_lost = counter(s, PP_CNT_NEWS_LOST);
    st->drains = s->drains;
}
