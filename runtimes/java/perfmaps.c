/* JIT symbols for the system sampler: `Compiler.perfmap` in every JVM, and removal of the map
 * files polyprof created (see java.h). What polyprof created is recorded in its private scratch
 * space (<base>/perfmaps/<pid>-<start ticks>: the JVM's namespace pid, its /tmp and the map's
 * device and inode), so that a polyprof killed before it could clean up is recognised by the
 * next run: the map of a JVM still running is treated as its own, the map of a JVM that is gone
 * is removed at start-up when it is still the same file.
 *
 * The requests run on a few worker threads, at most one per JVM at a time: a refresh returns at
 * once, and a JVM that does not answer holds up only its own request (2 s at most), never the
 * session or the other JVMs. Such a JVM is asked again only PP_PERFMAP_RETRY_S later.
 *
 * An idle JVM is not asked again: a JVM whose JIT compiler threads used no CPU time since it
 * wrote its last map has compiled nothing since (its map is current), and the question would
 * cost it the writing of its whole map. (The whole process's time is not that test: an idle
 * JVM's housekeeping threads use a clock tick every few seconds.) Whether polyprof supports a JVM
 * is decided once per JVM. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/safefile.h"
#include "base/inroot.h"
#include "runtimes/java/attach.h"
#include "runtimes/java/java.h"
#include "runtimes/java/jfr_session.h"
#include "runtimes/java/jvmutil.h"
#include "base/procfiles.h"
#include "base/workpool.h"

/* What tells whether a JVM compiled anything: the CPU time of each of its JIT compiler threads
 * (HotSpot names them "C1 CompilerThreadN", "C2 CompilerThreadN", "JVMCI CompilerThreadN").
 * Without any (-Xint) or with more than PM_JIT_THREADS, the whole process's CPU time. */
#define PM_JIT_THREADS 32
typedef struct pm_jit {
    bool whole;              /* no usable compiler threads: proc is the process's time */
    unsigned long long proc; /* pp_proc_cpu_ticks, when whole */
    int n;                   /* compiler threads listed */
    int tid[PM_JIT_THREADS]; /* their ids */
    unsigned long long ticks[PM_JIT_THREADS]; /* and CPU times (utime + stime, clock ticks) */
} pm_jit;

/* One JVM polyprof asked for a perf map. */
typedef struct pm_entry {
    int pid;
    unsigned long long start;
    int nspid;
    bool ours;  /* the map did not exist before polyprof's first Compiler.perfmap */
    int tmp_fd; /* O_PATH fd of the JVM's /tmp (works after the JVM is gone), -1 if none */
    bool seen;  /* listed in the current refresh */
    unsigned long long rec_ino; /* inode of the own map last recorded, 0 if none */
    bool busy;                  /* a request is queued or running */
    double retry_at;            /* monotonic; no request before (it did not answer) */
    bool unsupported;           /* pp_java_supported said no: never asked */
    bool answered;              /* a request succeeded; jit was read after it */
    pm_jit jit;                 /* the JIT threads' CPU times after the last answered request */
} pm_entry;

/* Requests run on this many threads. */
#define PM_THREADS 2

#define RECORDS "perfmaps"

/* The records' directory in the scratch space (created 0700), or -1. */
static int records_dir(void)
{
    char err[256];
    if (pp_tmp_ensure_base(err, sizeof(err)) < 0) {
        pp_debug("java: perf map records: %s", err);
        return -1;
    }
    int bfd = open(pp_tmp_base(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (bfd < 0)
        return -1;
    if (mkdirat(bfd, RECORDS, 0700) < 0 && errno != EEXIST) {
        close(bfd);
        return -1;
    }
    int fd = openat(bfd, RECORDS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(bfd);
    return fd;
}

static void record_name(char *buf, size_t len, int pid, unsigned long long start)
{
    snprintf(buf, len, "%d-%llu", pid, start);
}

typedef struct pm_record {
    int nspid;
    unsigned long long tmp_dev, tmp_ino, map_dev, map_ino;
} pm_record;

static bool record_read(int dfd, const char *name, pm_record *r)
{
    char text[256];
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    return sscanf(text, "%d %llu %llu %llu %llu", &r->nspid, &r->tmp_dev, &r->tmp_ino, &r->map_dev,
                  &r->map_ino) == 5;
}

/* Records e's map as polyprof's (once it exists). */
static void record_write(pm_entry *e)
{
    char name[64], text[256];
    struct stat tst, mst;
    snprintf(name, sizeof(name), "perf-%d.map", e->nspid);
    if (e->tmp_fd < 0 || fstat(e->tmp_fd, &tst) < 0 ||
        fstatat(e->tmp_fd, name, &mst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(mst.st_mode) ||
        (unsigned long long)mst.st_ino == e->rec_ino)
        return;
    int dfd = records_dir();
    if (dfd < 0)
        return;
    int n = snprintf(text, sizeof(text), "%d %llu %llu %llu %llu\n", e->nspid,
                     (unsigned long long)tst.st_dev, (unsigned long long)tst.st_ino,
                     (unsigned long long)mst.st_dev, (unsigned long long)mst.st_ino);
    record_name(name, sizeof(name), e->pid, e->start);
    if (pp_replace_file_at(dfd, name, text, (size_t)n, 0600) == 0)
        e->rec_ino = (unsigned long long)mst.st_ino;
    close(dfd);
}

static void record_remove(int pid, unsigned long long start)
{
    char name[64];
    int dfd = records_dir();
    if (dfd < 0)
        return;
    record_name(name, sizeof(name), pid, start);
    unlinkat(dfd, name, 0);
    close(dfd);
}

/* Whether a record says polyprof created this JVM's map. */
static bool record_exists(int pid, unsigned long long start)
{
    char name[64];
    int dfd = records_dir();
    if (dfd < 0)
        return false;
    record_name(name, sizeof(name), pid, start);
    pm_record r;
    bool ok = record_read(dfd, name, &r);
    close(dfd);
    return ok;
}

int pp_java_perfmaps_cleanup_stale(void)
{
    int dfd = records_dir();
    if (dfd < 0)
        return 0;
    int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        close(dfd);
        return 0;
    }
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int pid;
        unsigned long long start;
        pm_record r;
        if (sscanf(de->d_name, "%d-%llu", &pid, &start) != 2 || pid <= 0)
            continue;
        if (pp_proc_start_ticks(pid) == start)
            continue; /* the JVM runs: its map is ours, tracked and removed as usual */
        /* The JVM is gone. Its map can only be reached when its /tmp was polyprof's own (the
         * host's, the usual case): removed if it is still the very file polyprof recorded. */
        struct stat tst, mst;
        char map[64];
        int tmp = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (record_read(dfd, de->d_name, &r) && tmp >= 0 && fstat(tmp, &tst) == 0 &&
            (unsigned long long)tst.st_dev == r.tmp_dev &&
            (unsigned long long)tst.st_ino == r.tmp_ino) {
            snprintf(map, sizeof(map), "perf-%d.map", r.nspid);
            if (fstatat(tmp, map, &mst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(mst.st_mode) &&
                (unsigned long long)mst.st_dev == r.map_dev &&
                (unsigned long long)mst.st_ino == r.map_ino && unlinkat(tmp, map, 0) == 0) {
                pp_debug("java: removed /tmp/%s left by an earlier polyprof (JVM %d is gone)", map,
                         pid);
                removed++;
            }
        }
        if (tmp >= 0)
            close(tmp);
        unlinkat(dfd, de->d_name, 0);
    }
    closedir(d);
    close(dfd);
    return removed;
}

static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static pm_entry *pm;
static size_t npm, cappm;
static pp_workpool *pm_pool;                                  /* created by the first refresh */
static pthread_cond_t pm_answered = PTHREAD_COND_INITIALIZER; /* a request ended */

/* At exit, requests still running get this long to end, so that a JVM that answers in time
 * does not write its map after polyprof removed it. */
#define PM_EXIT_WAIT_S 0.5
/* Then every attach request is cancelled; the requests get this long to end. */
#define PM_CANCEL_WAIT_S 0.2

static void remove_map(pm_entry *e)
{
    if (e->ours && e->tmp_fd >= 0) {
        char name[64];
        snprintf(name, sizeof(name), "perf-%d.map", e->nspid);
        if (unlinkat(e->tmp_fd, name, 0) == 0)
            pp_debug("java: removed perf map of pid %d", e->pid);
    }
    if (e->ours)
        record_remove(e->pid, e->start);
    if (e->tmp_fd >= 0)
        close(e->tmp_fd);
    e->tmp_fd = -1;
}

static pm_entry *find(int pid, unsigned long long start)
{
    for (size_t i = 0; i < npm; i++)
        if (pm[i].pid == pid && pm[i].start == start)
            return &pm[i];
    return NULL;
}

static int nspid_of(int pid)
{
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    pp_jattach_status st;
    if (pp_read_small_file(path, text, sizeof(text)) <= 0 || pp_jattach_parse_status(text, &st) < 0)
        return -1;
    return st.nspid;
}

static pm_entry *track(const pp_proc *p)
{
    pm_entry *e = find(p->pid, p->start_ticks);
    if (e)
        return e;
    char why[128];
    bool supported = pp_java_supported(p->pid, why, sizeof(why));
    int nspid = supported ? nspid_of(p->pid) : 0;
    if (supported && nspid <= 0)
        return NULL;
    if (npm == cappm) {
        size_t nc = cappm ? cappm * 2 : 16;
        pm_entry *n = realloc(pm, nc * sizeof(*n));
        if (!n)
            return NULL;
        pm = n;
        cappm = nc;
    }
    e = &pm[npm++];
    *e = (pm_entry){.pid = p->pid, .start = p->start_ticks, .nspid = nspid, .tmp_fd = -1};
    if (!supported) {
        e->unsupported = true;
        return e;
    }
    /* the JVM's /tmp resolved inside its root: a symlinked /tmp stays in the container */
    e->tmp_fd = pp_open_in_proc_root(p->pid, "/tmp", O_PATH | O_DIRECTORY);
    char name[64];
    snprintf(name, sizeof(name), "perf-%d.map", nspid);
    struct stat sb;
    /* ours: absent before polyprof's first Compiler.perfmap, or recorded by an earlier polyprof
     * that was killed before it could remove it */
    e->ours = e->tmp_fd >= 0 && (fstatat(e->tmp_fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
                                 record_exists(p->pid, p->start_ticks));
    /* First sight of this JVM in this run: what a killed polyprof left in its /tmp goes. */
    if (e->tmp_fd >= 0 && pp_jfr_cleanup_stale(e->tmp_fd) > 0)
        pp_info("java: removed directories an earlier polyprof left in the /tmp of pid %d", p->pid);
    return e;
}

static bool is_compiler_thread(const char *comm)
{
    /* names are cut to 15 bytes: "C2 CompilerThre", "JVMCI CompilerT" */
    return strstr(comm, "CompilerThre") || strncmp(comm, "JVMCI Compiler", 14) == 0;
}

/* The JIT state of pid now (see pm_jit). */
static void jit_read(int pid, pm_jit *out)
{
    *out = (pm_jit){0};
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int tid = atoi(de->d_name);
        char comm[32];
        if (tid <= 0)
            continue;
        unsigned long long ticks = pp_task_cpu_ticks(pid, tid, comm, sizeof(comm));
        if (!is_compiler_thread(comm))
            continue;
        if (out->n == PM_JIT_THREADS) {
            out->n = 0; /* too many to follow: fall back */
            break;
        }
        out->tid[out->n] = tid;
        out->ticks[out->n++] = ticks;
    }
    if (d)
        closedir(d);
    if (out->n == 0) {
        out->whole = true;
        out->proc = pp_proc_cpu_ticks(pid);
    }
}

/* True when the JVM compiled nothing between the two reads: every compiler thread of now was
 * there before with the same CPU time (a thread that ended is no new code; HotSpot stops idle
 * compiler threads and starts them when its queue grows). */
static bool jit_idle(const pm_jit *before, const pm_jit *now)
{
    if (before->whole || now->whole)
        return before->whole && now->whole && before->proc == now->proc;
    for (int i = 0; i < now->n; i++) {
        int k = 0;
        while (k < before->n && before->tid[k] != now->tid[i])
            k++;
        if (k == before->n || before->ticks[k] != now->ticks[i])
            return false;
    }
    return true;
}

/* One Compiler.perfmap request (a worker's job). */
typedef struct pm_job {
    int pid;
    unsigned long long start;
} pm_job;

static void request(void *arg, bool run)
{
    pm_job *j = arg;
    if (!run) {
        free(j);
        return;
    }
    char *out = NULL, err[256];
    int rc =
        pp_jattach_jcmd(j->pid, "Compiler.perfmap", PP_JAVA_QUICK_TIMEOUT, &out, err, sizeof(err));
    bool silent = rc < 0 && (errno == ETIMEDOUT || errno == EAGAIN);
    pm_jit jit = {0};
    if (rc == 0)
        jit_read(j->pid, &jit); /* after the writing */
    if (rc != 0)
        pp_debug("java: Compiler.perfmap in pid %d failed: %s%s", j->pid,
                 rc < 0 ? err : (out ? out : ""),
                 silent ? "; not asked again for " PP_PERFMAP_RETRY_TEXT : "");
    pthread_mutex_lock(&pm_lock);
    pm_entry *e = find(j->pid, j->start); /* gone meanwhile: nothing to do */
    pthread_cond_broadcast(&pm_answered);
    if (e) {
        e->busy = false;
        e->answered = rc == 0;
        e->jit = jit;
        if (silent)
            e->retry_at = pp_mono_now() + PP_PERFMAP_RETRY_S;
        else if (rc == 0 && e->ours)
            record_write(e);
    }
    pthread_mutex_unlock(&pm_lock);
    free(out);
    free(j);
}

/* Queues a request for e (pm_lock held); false when it could not be queued. */
static bool submit(pm_entry *e)
{
    if (!pm_pool)
        pm_pool = pp_workpool_new(PM_THREADS);
    pm_job *j = pm_pool ? calloc(1, sizeof(*j)) : NULL;
    if (!j)
        return false;
    *j = (pm_job){.pid = e->pid, .start = e->start};
    if (pp_workpool_submit(pm_pool, request, j) < 0) {
        free(j);
        return false;
    }
    e->busy = true;
    return true;
}

void pp_java_perfmaps_refresh(const pp_proc *procs, size_t n)
{
    if (pp_java_safemode_reason(NULL, 0))
        return;
    pthread_mutex_lock(&pm_lock);
    for (size_t i = 0; i < npm; i++)
        pm[i].seen = false;
    double now = pp_mono_now();
    for (size_t i = 0; procs && i < n; i++) {
        const pp_proc *p = &procs[i];
        if (p->kind != PP_KIND_JAVA)
            continue;
        pm_entry *e = track(p);
        if (!e)
            continue;
        e->seen = true;
        if (e->unsupported || e->busy || now < e->retry_at)
            continue;
        if (e->answered) {
            pm_jit now;
            jit_read(p->pid, &now);
            if (jit_idle(&e->jit, &now))
                continue; /* compiled nothing since its last map: nothing new to name */
        }
        if (!submit(e))
            pp_debug("java: cannot queue Compiler.perfmap for pid %d (out of memory)", p->pid);
    }
    /* JVMs that are gone: their maps go with them. */
    size_t k = 0;
    for (size_t i = 0; i < npm; i++) {
        if (!pm[i].seen && pp_proc_start_ticks(pm[i].pid) != pm[i].start) {
            remove_map(&pm[i]);
            continue;
        }
        pm[k++] = pm[i];
    }
    npm = k;
    pthread_mutex_unlock(&pm_lock);
}

void pp_java_perfmaps_cleanup(void)
{
    pthread_mutex_lock(&pm_lock);
    double until = pp_mono_now() + PM_EXIT_WAIT_S;
    struct timespec ts = {.tv_sec = (time_t)until,
                          .tv_nsec = (long)((until - (double)(time_t)until) * 1e9)};
    for (bool busy = true; busy;) {
        busy = false;
        for (size_t i = 0; i < npm && !busy; i++)
            busy = pm[i].busy;
        if (busy && pthread_cond_clockwait(&pm_answered, &pm_lock, CLOCK_MONOTONIC, &ts) != 0)
            break;
    }
    pthread_mutex_unlock(&pm_lock);
    /* polyprof is exiting: every attach request still running (here, for metadata, in an
     * abandoned Java session) ends now and removes its trigger file while polyprof still can;
     * this pool's requests are given the moment that takes (they need pm_lock to end) */
    pp_jattach_cancel_all();
    if (pm_pool)
        pp_workpool_wait_idle(pm_pool, pp_mono_now() + PM_CANCEL_WAIT_S);
    pthread_mutex_lock(&pm_lock);
    pp_workpool_free(pm_pool); /* never waits: a request still in flight finds no entry */
    pm_pool = NULL;
    for (size_t i = 0; i < npm; i++)
        remove_map(&pm[i]);
    free(pm);
    pm = NULL;
    npm = cappm = 0;
    pthread_mutex_unlock(&pm_lock);
}
