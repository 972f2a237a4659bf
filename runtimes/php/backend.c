/* The "builtin" PHP backend (--php-mode builtin, and auto's first choice): with the BPF sampler
 * every PHP process is registered for the sampler's PHP walker (walker.c, docs/php.md); its
 * samples then carry their PHP frames. A process the walker cannot serve (an unsupported
 * version, a thread-safe build, a layout that fails its self-check) gets one
 * `[Profiling skipped: ...]` stack. Without the BPF sampler there is no walk: auto hands the
 * processes to phpspy when it is installed; otherwise they keep the sampler's native frames
 * (said once). --php-proc-filter applies only when it is given (docs/decisions.md). */
#include <pthread.h>
#include <regex.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/php/php_int.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"
#include "runtimes/system/sampler.h"

typedef struct phpsession {
    void *spy; /* phpspy, in auto mode without the BPF sampler */
    pp_skip *skips;
    size_t nskips, skipcap;
    /* the children watcher: PHP processes forked during the session (php-fpm's new workers)
     * are registered within WATCH_MS of their fork */
    pp_runtime_ctx ctx;
    const char *filter;
    int *parents; /* registered processes whose children are watched */
    size_t nparents, parentcap;
    pthread_t watcher;
    bool watching;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    double deadline; /* the session's end (CLOCK_MONOTONIC s): collect() returns then */
} phpsession;

#define WATCH_MS 100
#define MAX_PARENTS 4096

bool pp_php_filter_match(const char *pattern, const char *comm)
{
    regex_t re;
    if (!pattern || !*pattern)
        return true;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return false;
    bool m = regexec(&re, comm, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

static bool said_no_bpf;

static void add_parent(phpsession *s, int pid)
{
    for (size_t i = 0; i < s->nparents; i++)
        if (s->parents[i] == pid)
            return;
    if (s->nparents == s->parentcap) {
        size_t ncap = s->parentcap ? s->parentcap * 2 : 16;
        int *n = ncap <= MAX_PARENTS ? realloc(s->parents, ncap * sizeof(*n)) : NULL;
        if (!n)
            return;
        s->parents = n;
        s->parentcap = ncap;
    }
    s->parents[s->nparents++] = pid;
}

/* Registers p (under s->lock); a process the walker cannot serve is recorded for its skip
 * stack. */
static void attach_one(phpsession *s, const pp_proc *p)
{
    if (s->filter && !pp_php_filter_match(s->filter, p->comm))
        return;
    char err[256] = "";
    pp_inwalk_status st = pp_inwalk_attach(&s->ctx, p, err, sizeof(err));
    if (st == PP_INWALK_OK) {
        add_parent(s, p->pid);
        return;
    }
    if (st != PP_INWALK_GONE && s->nskips < s->skipcap)
        pp_skip_note(&s->skips[s->nskips++], p, "php", st != PP_INWALK_UNSUPPORTED, err);
}

/* comm and start time of pid from /proc/<pid>/stat; 0, or -1 (gone). */
static int proc_of(int pid, pp_proc *p)
{
    char path[48], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    ssize_t n = pp_read_small_file(path, buf, sizeof(buf));
    char *open = n > 0 ? memchr(buf, '(', (size_t)n) : NULL,
         *close = n > 0 ? strrchr(buf, ')') : NULL;
    if (!open || !close || close < open)
        return -1;
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    size_t cl = (size_t)(close - open - 1);
    snprintf(p->comm, sizeof(p->comm), "%.*s", (int)(cl < 16 ? cl : 16), open + 1);
    /* fields from 3 (state) on, space-separated; start time is field 22 */
    char *f = close + 2;
    for (int field = 3; f && *f && field < 22; field++) {
        if (field == 4)
            p->ppid = atoi(f);
        f = strchr(f, ' ');
        if (f)
            f++;
    }
    if (!f || !*f)
        return -1;
    p->start_ticks = strtoull(f, NULL, 10);
    p->kind = PP_KIND_PHP;
    return 0;
}

/* Registers the children of the registered processes that are not yet (under s->lock). */
static void watch_once(phpsession *s)
{
    for (size_t i = 0; i < s->nparents; i++) {
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", s->parents[i], s->parents[i]);
        ssize_t n = pp_read_small_file(path, buf, sizeof(buf));
        for (char *c = buf, *e; n > 0 && *c; c = e) {
            long pid = strtol(c, &e, 10);
            if (e == c)
                break;
            pp_proc p;
            bool tried = false;
            for (size_t k = 0; k < s->nskips && !tried; k++)
                tried = s->skips[k].pid == (int)pid;
            if (pid > 0 && !tried && proc_of((int)pid, &p) == 0 &&
                !pp_sampler_walk_attached(s->ctx.sampler, p.pid, p.start_ticks))
                attach_one(s, &p);
        }
    }
}

static void *watcher_main(void *arg)
{
    phpsession *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        watch_once(s);
        pthread_mutex_unlock(&s->lock);
        pp_php_prefetch();
        pthread_mutex_lock(&s->lock);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += WATCH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void watcher_stop(phpsession *s)
{
    if (!s->watching)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->watcher, NULL);
    s->watching = false;
}

static void *builtin_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n,
                           double deadline)
{
    phpsession *s = calloc(1, sizeof(*s));
    if (!s || !(s->skips = calloc(n ? n : 1, sizeof(*s->skips)))) {
        free(s);
        return NULL;
    }
    bool auto_mode = strcmp(ctx->mode, "auto") == 0;
    if (!pp_inwalk_possible(ctx)) {
        char why[256];
        if (auto_mode &&
            (!pp_php_phpspy_backend.available || pp_php_phpspy_backend.available(why, sizeof(why))))
            s->spy = pp_php_phpspy_backend.start(ctx, procs, n, deadline);
        else if (!__atomic_exchange_n(&said_no_bpf, true, __ATOMIC_RELAXED))
            pp_warn("php: --php-mode %s walks PHP frames in the BPF sampler, which is not "
                    "running (use --perf-mode bpf): PHP processes keep native frames",
                    ctx->mode);
        return s;
    }
    s->ctx = *ctx;
    s->deadline = deadline;
    s->filter = pp_runtime_opt(ctx, "php-proc-filter");
    s->skipcap = n + 64;
    pp_skip *more = realloc(s->skips, s->skipcap * sizeof(*more));
    if (more)
        s->skips = more;
    else
        s->skipcap = n ? n : 1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++)
        attach_one(s, &procs[i]);
    pthread_mutex_unlock(&s->lock);
    s->watching = pthread_create(&s->watcher, NULL, watcher_main, s) == 0;
    pp_debug("php: %zu processes walked in the sampler, %zu skipped", s->nparents, s->nskips);
    return s;
}

static int builtin_collect(void *session, pp_profile *out)
{
    phpsession *s = session;
    int rc = 0;
    if (s->watching) { /* the watcher registers new processes until the session's end */
        pthread_mutex_lock(&s->lock);
        while (!s->stopping && pp_mono_now() < s->deadline) {
            double left = s->deadline - pp_mono_now();
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            long ns = (long)((left > 1 ? 1 : left) * 1e9);
            ts.tv_nsec += ns;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&s->cond, &s->lock, &ts);
        }
        pthread_mutex_unlock(&s->lock);
    }
    watcher_stop(s);
    if (s->spy && pp_php_phpspy_backend.collect(s->spy, out) < 0)
        rc = -1;
    if (pp_skips_emit(out, s->skips, s->nskips, "php") < 0)
        rc = -1;
    int pids[64];
    char why[64][96];
    size_t nf = pp_php_take_failed(pids, why, 64);
    for (size_t i = 0; i < nf; i++) {
        char path[48], comm[32] = "php";
        snprintf(path, sizeof(path), "/proc/%d/comm", pids[i]);
        ssize_t cl = pp_read_small_file(path, comm, sizeof(comm));
        if (cl > 0) {
            comm[cl - (comm[cl - 1] == '\n')] = '\0';
        } else {
            snprintf(comm, sizeof(comm), "php");
        }
        if (pp_error_stack(out, pids[i], comm, "php", "skipped", why[i]) < 0)
            rc = -1;
    }
    return rc;
}

static void builtin_stop(void *session)
{
    phpsession *s = session;
    if (s->spy)
        pp_php_phpspy_backend.stop(s->spy);
    if (s->watching) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
    }
}

static void builtin_free(void *session)
{
    phpsession *s = session;
    if (!s)
        return;
    watcher_stop(s);
    if (s->spy)
        pp_php_phpspy_backend.free(s->spy);
    if (s->ctx.rt) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
    }
    free(s->parents);
    free(s->skips);
    free(s);
}

static const char *const builtin_modes[] = {"builtin", "auto", NULL};

const pp_backend pp_php_builtin_backend = {
    .name = "builtin",
    .modes = builtin_modes,
    .start = builtin_start,
    .collect = builtin_collect,
    .stop = builtin_stop,
    .free = builtin_free,
    .walks_new_processes = true, /* PHP scripts started during the session (the agent's
                                  * adoption); the watcher above registers php-fpm's new workers
                                  * sooner, with their own state */
};
