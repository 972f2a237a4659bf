/* The built-in Python sampler (--python-mode builtin without in-sampler walks): one thread reads
 * Python stacks with the CPython reader (cpython.h) at -f Hz (at most PP_PY_MAX_HZ) on absolute
 * monotonic ticks until the deadline. CPU mode, two ways (docs/python-sampler.md):
 *  - with the perf-event system sampler: at each tick, only the threads the system sampler
 *    sampled since the previous tick are read, each counted with its number of samples; a
 *    process none of whose threads were sampled is not read (nor opened until it is);
 *  - without a system sampler: every process is read at each tick, and a thread counts the CPU
 *    time it used (/proc/<pid>/task/<tid>/schedstat) while it is running (state 'R'). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/hashtab.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/python/cpython.h"
#include "runtimes/python/frametab.h"
#include "runtimes/python/python_int.h"
#include "runtimes/system/sampler.h"

#define SAMPLER_NICE (-10)
#define MAX_THREAD_FDS 4096 /* per process; more threads are read with open/pread/close */
#define HITS_MAX 4096       /* sampled threads taken from the system sampler at a time */
#define NSTIDS_MAX 4096     /* per process: host tid -> tid in its pid namespace, cached */
#define READ_TRIES 3        /* reads of a sampled thread whose stack was not found */

/* Descriptors kept open by all sessions together: a quarter of RLIMIT_NOFILE, so that many
 * Python processes never starve polyprof of descriptors (beyond it: open/pread/close). */
static _Atomic long fds_held;
static long fds_budget(void)
{
    static _Atomic long budget;
    if (!budget) {
        struct rlimit rl;
        long b = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                     ? (long)rl.rlim_cur / 4
                     : 256;
        budget = b > 16 ? b : 16;
    }
    return budget;
}

/* A thread's CPU accounting: its /proc/<pid>/task/<tid>/schedstat (kept open within the
 * descriptor budget, else -1 and reopened per read), the on-CPU nanoseconds at its previous
 * sample, and the fraction of a sample not yet emitted. */
typedef struct tfd {
    long tid;
    int fd;
    unsigned gen; /* last sample that saw the thread */
    bool have_last;
    unsigned long long last_ns;
    double carry;
} tfd;

/* A thread's tid in its process's pid namespace (the thread state's native id). */
typedef struct nstid {
    int tid, nstid;
} nstid;

/* A sampled thread of the process read at this tick: its tid as the thread state has it, its
 * perf samples since the previous tick, whether its stack was found. */
typedef struct wanted {
    long tid;
    uint32_t samples;
    bool found;
} wanted;

typedef struct pyproc {
    int pid;
    unsigned long long start_ticks;
    char src_comm[17]; /* discovery's comm (opened lazily in perf-event mode) */
    bool opened;
    bool own_pidns;           /* in another pid namespace than polyprof's: tids are translated */
    pp_htab nstids;           /* of nstid */
    unsigned long long reads; /* stack reads (pp_py_sample*) */
    unsigned long long perf_samples; /* perf-event mode: samples of its threads taken */
    unsigned long long counted;      /* perf-event mode: of those, counted on a Python stack */
    char comm[64];
    char root[40];  /* /proc/<pid>/root */
    char pyver[32]; /* exact "X.Y.Z" for standard-library annotations */
    pp_py_proc *h;
    char reason[300]; /* "[Profiling skipped: ...]" / "[Profiling error: ...]", or "" */
    bool gone;
    unsigned long long samples, errors;
    char last_err[200];
    pp_htab fds; /* of tfd */
    unsigned gen;
    pp_pyframes frames;
    pp_pid_profile *pp;
} pyproc;

typedef struct pysampler {
    pp_profile *prof;
    pyproc *procs;
    size_t n;
    pp_sampler *sys; /* the perf-event system sampler whose samples drive the reads, or NULL */
    int *pids;       /* sorted pids of the tracked procs (perf-event mode) */
    pyproc **bypid;  /* those procs in the order of pids */
    size_t npids;
    pp_thread_hits *hits; /* HITS_MAX */
    wanted *want;         /* HITS_MAX */
    double deadline, period;
    bool annotate;
    uint32_t truncated_id;
    pthread_t thr;
    bool thr_started, joined;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    unsigned long long ticks, late;
    double busy; /* seconds spent sampling (thread CPU time) */
} pysampler;

/* ---- thread state ---- */

/* Kernel state letter of /proc/<pid>/task/<tid>/stat, or -1. */
static int state_of_stat(int pid, long tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", pid, tid);
    if (pp_read_small_file(path, buf, sizeof(buf)) <= 0)
        return -1;
    const char *p = strrchr(buf, ')'); /* comm may hold ')' and spaces */
    return p && p[1] == ' ' && p[2] ? p[2] : -1;
}

static int open_schedstat(int pid, long tid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%ld/schedstat", pid, tid);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Cumulative on-CPU nanoseconds of the thread (first field of schedstat), or -1. */
static int read_cpu_ns(const tfd *e, int pid, unsigned long long *ns)
{
    int fd = e->fd >= 0 ? e->fd : open_schedstat(pid, e->tid);
    char buf[128];
    ssize_t r = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
    if (fd >= 0 && fd != e->fd)
        close(fd);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    char *end;
    *ns = strtoull(buf, &end, 10);
    return end == buf ? -1 : 0;
}

static void tfd_close(tfd *e)
{
    if (e->fd >= 0) {
        close(e->fd);
        fds_held--;
    }
}

/* pp_htab_filter: keeps the threads seen in the last 64 samples (the others are likely gone). */
static bool tfd_recent(void *ent, void *proc)
{
    tfd *e = ent;
    if (e->gen + 64 >= ((const pyproc *)proc)->gen)
        return true;
    tfd_close(e);
    return false;
}

static tfd *fds_find(pyproc *p, long tid)
{
    pp_htab_probe pr;
    for (tfd *e = pp_htab_first(&p->fds, pp_hash_u64((uint64_t)tid), &pr); e;
         e = pp_htab_next(&p->fds, &pr))
        if (e->tid == tid)
            return e;
    return NULL;
}

/* How many samples thread tid of p counts for at this tick: 0 unless it is running or
 * runnable (state 'R') now; then the CPU time it used since it was last counted, in sampling
 * periods, rounded, the rest carried over (a thread's counts sum to its CPU time, across late
 * or skipped ticks and across ticks where it was blocked). A thread seen for the first time,
 * without schedstat, or beyond MAX_THREAD_FDS threads counts 1 when in state 'R'. */
static unsigned thread_samples(pyproc *p, long tid, double period)
{
    tfd *e = fds_find(p, tid);
    if (!e && pp_htab_count(&p->fds) < MAX_THREAD_FDS) {
        if (pp_htab_full(&p->fds)) /* before growing, close threads not seen lately */
            pp_htab_filter(&p->fds, tfd_recent, p);
        if ((e = pp_htab_add(&p->fds, pp_hash_u64((uint64_t)tid)))) {
            *e = (tfd){.tid = tid, .fd = -1};
            if (fds_held < fds_budget() && (e->fd = open_schedstat(p->pid, tid)) >= 0)
                fds_held++;
        }
    }
    if (!e)
        return state_of_stat(p->pid, tid) == 'R';
    e->gen = p->gen;
    unsigned long long ns;
    if (read_cpu_ns(e, p->pid, &ns) < 0)
        return state_of_stat(p->pid, tid) == 'R'; /* no schedstat, or the thread exited */
    if (!e->have_last || ns < e->last_ns) {
        e->have_last = true;
        e->last_ns = ns;
        return state_of_stat(p->pid, tid) == 'R';
    }
    e->carry += (double)(ns - e->last_ns) / 1e9 / period;
    e->last_ns = ns;
    /* Emitted only while the thread runs (or waits for a CPU): the CPU of a thread that has
     * blocked since was spent elsewhere than where it sleeps now, and waits for its next
     * running moment. */
    if (e->carry < 0.5 || state_of_stat(p->pid, tid) != 'R')
        return 0;
    double n = floor(e->carry + 0.5);
    e->carry -= n;
    return n > 0 ? (unsigned)n : 0;
}

static void fds_close(pyproc *p)
{
    size_t pos = 0;
    for (tfd *e; (e = pp_htab_each(&p->fds, &pos));)
        tfd_close(e);
    pp_htab_free(&p->fds);
}

/* ---- frames ---- */

typedef struct cbarg {
    pysampler *s;
    pyproc *p;
    wanted *want; /* perf-event mode: the sampled threads, sorted by tid */
    size_t nwant, left;
} cbarg;

static int cmp_wanted(const void *a, const void *b)
{
    long x = ((const wanted *)a)->tid, y = ((const wanted *)b)->tid;
    return (x > y) - (x < y);
}

static wanted *find_wanted(cbarg *a, long tid)
{
    wanted key = {.tid = tid};
    return tid > 0 ? bsearch(&key, a->want, a->nwant, sizeof(*a->want), cmp_wanted) : NULL;
}

static bool want_tid(void *arg, long tid)
{
    wanted *w = find_wanted(arg, tid);
    return w && !w->found;
}

/* How many samples the stack st counts for. */
static unsigned stack_count(cbarg *a, const pp_py_stack *st)
{
    if (!st->n)
        return 0;
    if (a->want) { /* its thread's perf samples since the previous tick */
        wanted *w = find_wanted(a, st->tid);
        if (!w || w->found)
            return 0;
        w->found = true;
        a->left--;
        a->p->counted += w->samples;
        return w->samples;
    }
    /* Without a kernel tid the reader's GIL holder is the best guess. */
    return st->tid > 0 ? thread_samples(a->p, st->tid, a->s->period) : st->holds_gil;
}

static int on_stack(void *arg, const pp_py_stack *st)
{
    cbarg *a = arg;
    pyproc *p = a->p;
    unsigned count = stack_count(a, st);
    if (!count)
        return 0;
    uint32_t ids[PP_PY_MAX_DEPTH + 1];
    size_t n = 0, lim = st->n < PP_PY_MAX_DEPTH ? st->n : PP_PY_MAX_DEPTH;
    if (st->truncated)
        ids[n++] = a->s->truncated_id;
    for (size_t i = st->n - lim; i < st->n; i++) {
        const pp_py_frame *f = &st->frames[i];
        uint32_t id = pp_pyframes_id(&p->frames, a->s->prof, f->name, f->file, f->line);
        ids[n++] = id == UINT32_MAX ? 0 : id;
    }
    if (!p->pp) {
        p->pp = pp_profile_get(a->s->prof, p->pid, true);
        if (!p->pp)
            return 1;
    }
    pp_pid_add(p->pp, ids, n, count);
    return a->want && !a->left; /* every sampled thread found: stop the walk */
}

/* ---- sampling ---- */

/* One read of p's stacks: every thread's (a->want NULL) or the sampled threads'. */
static void sample_proc(cbarg *a)
{
    pyproc *p = a->p;
    p->gen++;
    p->reads++;
    char err[200];
    int rc = a->want ? pp_py_sample_threads(p->h, want_tid, a, on_stack, a, err, sizeof(err))
                     : pp_py_sample(p->h, on_stack, a, err, sizeof(err));
    if (rc >= 0) {
        p->samples++;
        return;
    }
    if (pp_py_exited(p->h) || !pp_proc_alive(p->pid)) {
        p->gone = true; /* normal: keep what was gathered */
        pp_debug("python pid %d exited during the session", p->pid);
        return;
    }
    p->errors++;
    snprintf(p->last_err, sizeof(p->last_err), "%s", err);
}

static void sample_all(pysampler *s)
{
    for (size_t i = 0; i < s->n; i++) {
        pyproc *p = &s->procs[i];
        if (!p->h || p->gone)
            continue;
        cbarg a = {.s = s, .p = p};
        sample_proc(&a);
    }
}

static void open_proc(pysampler *s, pyproc *p);

/* tid (polyprof's pid namespace) as p's thread states have it: the same unless p lives in
 * another pid namespace (a container), then the last NSpid of the thread's status, cached; 0
 * when unknown (the thread exited). */
static long ns_tid(pyproc *p, int tid)
{
    if (!p->own_pidns)
        return tid;
    pp_htab_probe pr;
    for (nstid *e = pp_htab_first(&p->nstids, pp_hash_u64((uint64_t)tid), &pr); e;
         e = pp_htab_next(&p->nstids, &pr))
        if (e->tid == tid)
            return e->nstid;
    int last = pp_read_nspid(p->pid, tid, NULL);
    if (last <= 0)
        return 0;
    if (pp_htab_count(&p->nstids) >= NSTIDS_MAX)
        pp_htab_clear(&p->nstids);
    nstid *e = pp_htab_add(&p->nstids, pp_hash_u64((uint64_t)tid));
    if (e)
        *e = (nstid){tid, last};
    return last;
}

/* Reads the stacks of p's threads in hits (n > 0), each counted with its samples. */
static void sample_hits(pysampler *s, pyproc *p, const pp_thread_hits *hits, size_t n)
{
    if (!p->opened)
        open_proc(s, p); /* first sampled: opened now */
    for (size_t i = 0; i < n; i++)
        p->perf_samples += hits[i].samples;
    if (!p->h || p->gone)
        return;
    cbarg a = {.s = s, .p = p, .want = s->want};
    for (size_t i = 0; i < n; i++) {
        long tid = ns_tid(p, hits[i].tid);
        if (tid > 0)
            s->want[a.nwant++] = (wanted){.tid = tid, .samples = hits[i].samples};
    }
    if (!a.nwant)
        return;
    qsort(a.want, a.nwant, sizeof(*a.want), cmp_wanted);
    a.left = a.nwant;
    /* A read of a running thread finds no frame now and then (its frames changed under the
     * read: about 1 read in 10 of a busy thread); its samples would be lost, so the threads not
     * found are read again at once (only those: want_tid skips the others). */
    for (int tries = 0; tries < READ_TRIES && a.left && !p->gone; tries++) {
        unsigned long long errors = p->errors;
        sample_proc(&a);
        if (p->errors != errors)
            break;
    }
}

static int cmp_hits(const void *a, const void *b)
{
    const pp_thread_hits *x = a, *y = b;
    return x->pid != y->pid ? (x->pid > y->pid) - (x->pid < y->pid)
                            : (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_proc_pid(const void *a, const void *b)
{
    int x = (*(pyproc *const *)a)->pid, y = (*(pyproc *const *)b)->pid;
    return (x > y) - (x < y);
}

/* Perf-event mode: reads the threads sampled since the previous tick, and only those. */
static void sample_sampled(pysampler *s)
{
    for (int round = 0; round < 8; round++) {
        size_t n = pp_sampler_sampled_threads(s->sys, s->pids, s->npids, s->hits, HITS_MAX);
        if (!n)
            break;
        qsort(s->hits, n, sizeof(*s->hits), cmp_hits);
        for (size_t i = 0, j; i < n; i = j) {
            for (j = i + 1; j < n && s->hits[j].pid == s->hits[i].pid;)
                j++;
            int *k = bsearch(&s->hits[i].pid, s->pids, s->npids, sizeof(int), cmp_int);
            if (k)
                sample_hits(s, s->bypid[k - s->pids], &s->hits[i], j - i);
        }
        if (n < HITS_MAX)
            break;
    }
}

static void *sampler_main(void *arg)
{
    pysampler *s = arg;
    /* A tick costs ~0.1 ms per process, but on a loaded host a normal-priority thread wakes
     * late and misses ticks (the system sampler runs in interrupt context and never does):
     * a higher weight lets it run on time. Needs root; harmless when refused. */
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), SAMPLER_NICE) < 0)
        pp_debug("python sampler: cannot raise the thread's priority: %s", strerror(errno));
    double t0 = pp_mono_now();
    unsigned long long k = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        double next = t0 + (double)k * s->period;
        if (next >= s->deadline)
            break;
        struct timespec ts = {(time_t)next, (long)((next - floor(next)) * 1e9)};
        while (!s->stop &&
               pthread_cond_clockwait(&s->cond, &s->lock, CLOCK_MONOTONIC, &ts) != ETIMEDOUT)
            ;
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->lock);
        struct timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        if (s->sys)
            sample_sampled(s);
        else
            sample_all(s);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        s->busy += (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
        s->ticks++;
        /* The next tick after now: ticks missed while sampling are skipped, not bunched. */
        unsigned long long nk = (unsigned long long)((pp_mono_now() - t0) / s->period) + 1;
        if (nk > k + 1)
            s->late += nk - k - 1;
        k = nk > k + 1 ? nk : k + 1;
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Whether pid lives in another pid namespace than polyprof. */
static bool other_pidns(int pid)
{
    char path[64];
    struct stat a, b;
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
    return stat(path, &a) == 0 && stat("/proc/self/ns/pid", &b) == 0 &&
           (a.st_ino != b.st_ino || a.st_dev != b.st_dev);
}

static void open_proc(pysampler *s, pyproc *p)
{
    p->opened = true;
    pp_python_comm(p->pid, p->src_comm, p->comm, sizeof(p->comm));
    snprintf(p->root, sizeof(p->root), "/proc/%d/root", p->pid);
    p->frames = (pp_pyframes){.annotate = s->annotate, .root = p->root, .pyver = p->pyver};
    pp_py_open_status st;
    char err[200] = "";
    p->h = pp_py_open(p->pid, &st, err, sizeof(err));
    if (p->h) {
        /* The reader may only know "X.Y" (before 3.11): the version literal has "X.Y.Z". */
        const char *v = pp_py_version(p->h);
        const char *dot = strchr(v, '.');
        if (s->annotate && (!dot || !strchr(dot + 1, '.')) &&
            pp_python_process_version(p->pid, p->pyver, sizeof(p->pyver)) == 0)
            v = p->pyver;
        if (v != p->pyver)
            snprintf(p->pyver, sizeof(p->pyver), "%s", v);
        p->own_pidns = s->sys && other_pidns(p->pid);
        pp_debug("python pid %d (%s): CPython %s", p->pid, p->comm, p->pyver);
        return;
    }
    if (st == PP_PY_GONE) {
        p->gone = true;
        return;
    }
    if (st == PP_PY_UNSUPPORTED) {
        snprintf(p->reason, sizeof(p->reason), "[Profiling skipped: %s]", err);
        pp_info_proc(p->pid, p->start_ticks, "python pid %d (%s) not profiled: %s", p->pid, p->comm,
                     err);
    } else {
        snprintf(p->reason, sizeof(p->reason), "[Profiling error: %s]", err);
        pp_warn_proc(p->pid, p->start_ticks, "python pid %d (%s) cannot be profiled: %s", p->pid,
                     p->comm, err);
    }
}

void pp_pysampler_free(void *session)
{
    pysampler *s = session;
    if (!s)
        return;
    if (s->thr_started && !s->joined) {
        pp_pysampler_stop(s);
        pthread_join(s->thr, NULL);
    }
    for (size_t i = 0; i < s->n; i++) {
        if (s->procs[i].h) {
            pp_py_stats st;
            pp_py_get_stats(s->procs[i].h, &st);
            pp_debug("python pid %d: %llu reads, %zu code objects cached", s->procs[i].pid,
                     st.reads, st.code_cached);
        }
        fds_close(&s->procs[i]);
        pp_htab_free(&s->procs[i].nstids);
        pp_pyframes_free(&s->procs[i].frames);
        pp_py_close(s->procs[i].h);
    }
    for (size_t i = 0; i < s->npids; i++)
        pp_sampler_track_threads(s->sys, s->pids[i], false);
    free(s->procs);
    free(s->pids);
    free(s->bypid);
    free(s->hits);
    free(s->want);
    pp_profile_free(s->prof);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

void *pp_pysampler_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    pysampler *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->prof = pp_profile_new();
    s->procs = calloc(n ? n : 1, sizeof(*s->procs));
    if (!s->prof || !s->procs) {
        pp_pysampler_free(s);
        return NULL;
    }
    int hz = ctx->frequency < PP_PY_MAX_HZ ? ctx->frequency : PP_PY_MAX_HZ;
    s->period = 1.0 / (hz > 0 ? hz : 1);
    s->deadline = deadline;
    s->annotate = !pp_runtime_opt(ctx, "no-python-versions");
    s->truncated_id = pp_profile_intern(s->prof, "[truncated]");
    if (ctx->sampler && pp_sampler_can_track_threads(ctx->sampler)) {
        s->sys = ctx->sampler;
        s->pids = calloc(n ? n : 1, sizeof(*s->pids));
        s->bypid = calloc(n ? n : 1, sizeof(*s->bypid));
        s->hits = calloc(HITS_MAX, sizeof(*s->hits));
        s->want = calloc(HITS_MAX, sizeof(*s->want));
        if (!s->pids || !s->bypid || !s->hits || !s->want) {
            pp_pysampler_free(s);
            return NULL;
        }
    }
    for (size_t i = 0; i < n; i++, s->n++) {
        pyproc *p = &s->procs[i];
        PP_HTAB_INIT(&p->fds, tfd, 50);
        PP_HTAB_INIT(&p->nstids, nstid, 50);
        p->pid = procs[i].pid;
        p->start_ticks = procs[i].start_ticks;
        snprintf(p->src_comm, sizeof(p->src_comm), "%s", procs[i].comm);
        snprintf(p->comm, sizeof(p->comm), "%s", procs[i].comm);
        if (!s->sys)
            open_proc(s, p);
        else if (pp_sampler_track_threads(s->sys, p->pid, true) == 0)
            s->bypid[s->npids++] = p; /* opened when first sampled */
        else
            snprintf(p->reason, sizeof(p->reason), "[Profiling error: out of memory]");
    }
    if (s->npids)
        qsort(s->bypid, s->npids, sizeof(*s->bypid), cmp_proc_pid);
    for (size_t i = 0; i < s->npids; i++)
        s->pids[i] = s->bypid[i]->pid;
    if (pthread_create(&s->thr, NULL, sampler_main, s) != 0) {
        pp_error("cannot start the Python sampler thread: %s", strerror(errno));
        pp_pysampler_free(s);
        return NULL;
    }
    s->thr_started = true;
    pp_debug("python sampler: %zu processes at %d Hz, %s", n, hz,
             s->sys ? "reading the threads the perf-event sampler sampled"
                    : "reading every process (CPU time from schedstat)");
    return s;
}

void pp_pysampler_stop(void *session)
{
    pysampler *s = session;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

int pp_pysampler_collect(void *session, pp_profile *out)
{
    pysampler *s = session;
    if (s->thr_started && !s->joined) {
        pthread_join(s->thr, NULL);
        s->joined = true;
    }
    for (size_t i = 0; i < s->n; i++) {
        pyproc *p = &s->procs[i];
        bool has = p->pp && pp_pid_nstacks(p->pp) > 0;
        if (s->sys)
            pp_debug("python pid %d: %llu stack reads, %llu samples of its threads by the "
                     "perf-event sampler, %llu of them counted on Python stacks",
                     p->pid, p->reads, p->perf_samples, p->counted);
        if (!has && !p->reason[0] && p->errors && !p->samples)
            snprintf(p->reason, sizeof(p->reason), "[Profiling error: %s]", p->last_err);
        if (p->errors)
            pp_warn_proc(p->pid, p->start_ticks,
                         "python pid %d (%s): %llu of %llu samples failed: %s", p->pid, p->comm,
                         p->errors, p->errors + p->samples, p->last_err);
        if (!has && !p->reason[0])
            continue; /* idle, or exited before a sample: the system sampler's stacks stay */
        pp_pid_profile *dst = pp_profile_get(out, p->pid, true);
        if (!dst)
            return -1;
        dst->comm = pp_profile_intern(out, p->comm);
        dst->runtime = "python";
        if (!has) {
            uint32_t f = pp_profile_intern(out, p->reason);
            pp_pid_add(dst, &f, 1, 1);
        } else if (pp_pid_add_all(out, dst, s->prof, p->pp) < 0) {
            return -1;
        }
    }
    pp_debug("python sampler: %llu ticks, %llu skipped (late), %.1f ms CPU per tick", s->ticks,
             s->late, s->ticks ? s->busy * 1000 / (double)s->ticks : 0.0);
    return 0;
}
