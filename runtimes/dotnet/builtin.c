/* --dotnet-mode builtin: names the JIT-compiled methods of running .NET processes for the system
 * sampler, through polyprof's own diagnostics client (ipc.c) and nettrace parser (nettrace.c).
 * For each .NET process first seen at a session's start: a streaming EventPipe session of the
 * runtime provider (JIT | Loader, verbose: MethodLoadVerbose) is opened first, then a rundown
 * session is started and stopped at once (on 3.1 the rundown of the methods compiled so far comes
 * at a stop); every method's range and name go to the symbolizer's in-memory table
 * (runtimes/symbols/jitnames.h) as "Namespace.Class.Method(args)_[net]". The streaming session
 * lives across sessions, read by a thread of its own, until the process exits (the stream
 * ends) or polyprof does (StopTracing, then the stream is read to its end). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/dotnet/dotnet.h"
#include "runtimes/runtime.h"
#include "runtimes/symbols/jitnames.h"

#define MAX_TRACKED 64

typedef struct tracked {
    int pid;
    unsigned long long start;
    bool failed;      /* not to be tried again (its failure was logged) */
    bool running;     /* a reader thread exists (joined at reap or exit) */
    bool journaled;   /* its session is open: in the journal (journal.c) */
    atomic_bool done; /* the reader ended */
    atomic_bool stop; /* the reader is to end (reading on until stop_by, set before) */
    double stop_by;
    uint64_t rundown; /* a rundown session whose stop was not acknowledged (journaled), or 0 */
    pthread_t th;
    pp_net_session s;
    pp_nettrace *p;
} tracked;

/* Each on the heap: a reader thread holds its entry's address while the table is compacted. */
static tracked *tab[MAX_TRACKED];
static size_t ntab;

size_t pp_net_frame_name(const pp_net_method *m, char *out, size_t len)
{
    const char *args = strchr(m->sig, '(');
    int n = snprintf(out, len, "%s%s%s%s_[net]", m->ns, m->ns[0] ? "." : "", m->name,
                     args ? args : "()");
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static void add_method(void *arg, const pp_net_method *m)
{
    int pid = *(const int *)arg;
    if (m->kind == PP_NET_METHOD_UNLOAD || m->size == 0)
        return;
    char name[3 * PP_NET_NAME_MAX + 16];
    pp_net_frame_name(m, name, sizeof(name));
    pp_jitnames_add(pid, m->start, m->size, name);
}

/* The journal holds the sessions open now (journal.c). */
static void journal_sync(void)
{
    pp_net_jent e[2 * MAX_TRACKED];
    size_t n = 0;
    for (size_t i = 0; i < ntab; i++) {
        if (tab[i]->journaled)
            e[n++] = (pp_net_jent){tab[i]->pid, tab[i]->start, tab[i]->s.id};
        if (tab[i]->rundown)
            e[n++] = (pp_net_jent){tab[i]->pid, tab[i]->start, tab[i]->rundown};
    }
    pp_net_journal_write(e, n);
}

/* pp_net_rundown's journal callback: the rundown session open (its id), or stopped (0). */
static void rundown_journal(void *arg, uint64_t id)
{
    tracked *t = arg;
    t->rundown = id;
    journal_sync();
}

/* Sends StopTracing again to t's rundown session left open: true once acknowledged. */
static bool stop_rundown(tracked *t, double deadline)
{
    char err[512];
    pp_net_session s = {.pid = t->pid, .fd = -1, .id = t->rundown};
    if (pp_net_socket_name(s.pid, s.dir, sizeof(s.dir), s.name, sizeof(s.name), err, sizeof(err)) <
            0 ||
        pp_net_session_stop(&s, deadline, err, sizeof(err)) < 0) {
        pp_log(PP_LOG_INFO, "%s (stopping its rundown session is tried again)", err);
        return false;
    }
    t->rundown = 0;
    return true;
}

static void *reader(void *arg)
{
    tracked *t = arg;
    uint8_t buf[65536];
    double stop_deadline = 0;
    for (;;) {
        if (atomic_load(&t->stop) && stop_deadline == 0)
            stop_deadline = t->stop_by; /* the rest of the stream after StopTracing */
        if (stop_deadline && pp_mono_now() > stop_deadline)
            break;
        ssize_t r = pp_net_session_read(&t->s, buf, sizeof(buf), pp_mono_now() + 0.2);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == ETIMEDOUT)
                continue;
            break;
        }
        if (pp_nettrace_push(t->p, buf, (size_t)r) < 0) {
            pp_warn_proc(t->pid, t->start,
                         ".NET process %d: %s; its methods compiled from now "
                         "on stay unnamed",
                         t->pid, pp_nettrace_error(t->p));
            break;
        }
    }
    pp_net_session_close(&t->s);
    atomic_store(&t->done, true);
    return NULL;
}

static bool active(const pp_runtime_ctx *ctx)
{
    return strcmp(ctx->mode, "builtin") == 0 || strcmp(ctx->mode, "auto") == 0;
}

/* Tells t's reader to end by the monotonic time by (not waiting for it). */
static void tell_stop(tracked *t, double by)
{
    if (t->running && !atomic_load(&t->stop)) {
        t->stop_by = by;
        atomic_store(&t->stop, true);
    }
}

/* Ends t's reader (told to end within 3 s if it was not told already) and frees its parser. */
static void finish(tracked *t)
{
    if (t->running) {
        tell_stop(t, pp_mono_now() + 3);
        pthread_join(t->th, NULL);
        t->running = false;
    }
    t->journaled = false;
    pp_nettrace_free(t->p);
    t->p = NULL;
}

/* Starts naming the methods of pid, each step within 5 s and all by the monotonic time budget:
 * 0, or -1 (logged). */
static int start_one(tracked *t, double budget)
{
    char err[512];
    const pp_net_provider prov[] = {
        {PP_NET_PROVIDER_RUNTIME, PP_NET_KW_JIT | PP_NET_KW_LOADER, PP_NET_LEVEL_VERBOSE}};
    double t0 = pp_mono_now();
    if (pp_net_session_start(t->pid, prov, 1, 16, t0 + 5 < budget ? t0 + 5 : budget, &t->s, err,
                             sizeof(err)) < 0) {
        pp_warn_proc(t->pid, t->start, "%s; its managed frames stay unnamed", err);
        return -1;
    }
    t->journaled = true; /* before anything else: a polyprof killed from now on leaves it */
    journal_sync();
    t->p = pp_nettrace_new(add_method, &t->pid);
    pp_nettrace *rd = pp_nettrace_new(add_method, &t->pid);
    double left = budget - pp_mono_now();
    int rc = t->p && rd ? pp_net_rundown(t->pid, rd, left < 5 ? left : 5, rundown_journal, t, err,
                                         sizeof(err))
                        : -1;
    size_t named = rd ? (size_t)pp_nettrace_get_stats(rd)->methods : 0;
    pp_nettrace_free(rd);
    if (rc < 0) {
        pp_warn_proc(t->pid, t->start,
                     "%s; methods compiled before now stay unnamed (those compiled later are "
                     "named)",
                     t->p ? err : "out of memory");
        if (!t->p) {
            pp_net_session_stop(&t->s, pp_mono_now() + 2, err, sizeof(err));
            pp_net_session_close(&t->s);
            t->journaled = false;
            return -1;
        }
    }
    atomic_store(&t->done, false);
    atomic_store(&t->stop, false);
    if (pthread_create(&t->th, NULL, reader, t) != 0) {
        pp_net_session_stop(&t->s, pp_mono_now() + 2, err, sizeof(err));
        pp_net_session_close(&t->s);
        pp_nettrace_free(t->p);
        t->p = NULL;
        t->journaled = false;
        return -1;
    }
    t->running = true;
    pp_log(PP_LOG_INFO,
           ".NET process %d: %zu methods named by rundown in %.2f s, a session "
           "streams the methods compiled from now on",
           t->pid, named, pp_mono_now() - t0);
    return 0;
}

void pp_dotnet_at_start(void)
{
    int n = pp_net_stop_orphans();
    if (n > 0)
        pp_info("stopped %d EventPipe session%s left in .NET processes by a polyprof that did not "
                "exit cleanly",
                n, n == 1 ? "" : "s");
}

void pp_dotnet_session_begin(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n)
{
    if (!active(ctx))
        return;
    size_t before = ntab;
    bool changed = false;
    /* processes that are gone (or whose stream ended): reaped, their names dropped */
    for (size_t i = 0; i < ntab;) {
        tracked *t = tab[i];
        bool gone = pp_pid_gone(t->pid) || pp_proc_start_ticks(t->pid) != t->start;
        if (gone || (t->running && atomic_load(&t->done))) {
            finish(t);
            changed = true;
            if (gone) {
                pp_jitnames_forget(t->pid);
                free(t);
                tab[i] = tab[--ntab];
                continue;
            }
            t->failed = true; /* the stream ended while the process lives: not retried */
        }
        i++;
    }
    double budget = pp_mono_now() + (ctx->duration > 4 ? ctx->duration / 2.0 : 2.0);
    for (size_t i = 0; i < ntab; i++) /* rundown sessions left open: their stop again */
        if (tab[i]->rundown && pp_mono_now() < budget &&
            stop_rundown(tab[i], pp_mono_now() + 2 < budget ? pp_mono_now() + 2 : budget))
            changed = true;
    int stop_fd = ctx->stop_fd > 0 ? ctx->stop_fd : -1;
    pp_net_set_cancel_fd(stop_fd); /* a stop signal ends the connects and waits below */
    for (size_t i = 0; i < n; i++) {
        const pp_proc *p = &procs[i];
        if (p->kind != PP_KIND_DOTNET || p->blacklisted)
            continue;
        bool known = false;
        for (size_t k = 0; k < ntab && !known; k++)
            known = tab[k]->pid == p->pid && tab[k]->start == p->start_ticks;
        if (known || ntab == MAX_TRACKED || pp_mono_now() > budget)
            continue;
        struct pollfd sp = {.fd = stop_fd, .events = POLLIN};
        if (stop_fd >= 0 && poll(&sp, 1, 0) > 0)
            break; /* polyprof is stopping */
        tracked *t = calloc(1, sizeof(*t));
        if (!t)
            break;
        tab[ntab++] = t;
        t->pid = p->pid;
        t->start = p->start_ticks;
        t->s.fd = -1;
        if (start_one(t, budget) < 0)
            t->failed = true;
    }
    pp_net_set_cancel_fd(-1);
    if (changed || ntab != before)
        journal_sync();
}

void pp_dotnet_at_exit(const pp_runtime_ctx *ctx)
{
    (void)ctx;
    char err[512];
    double deadline = pp_mono_now() + 3; /* one for all: the stops, then the readers' ends */
    for (size_t i = 0; i < ntab; i++)
        tell_stop(tab[i], deadline);
    for (size_t i = 0; i < ntab; i++)
        if (tab[i]->running && !atomic_load(&tab[i]->done) &&
            pp_net_session_stop(&tab[i]->s, deadline, err, sizeof(err)) < 0)
            pp_log(PP_LOG_INFO, "%s (the session ends as its connection closes)", err);
    pp_net_jent left[MAX_TRACKED]; /* rundown sessions still open: for the next polyprof */
    size_t nleft = 0;
    for (size_t i = 0; i < ntab; i++) {
        if (tab[i]->rundown && !stop_rundown(tab[i], deadline))
            left[nleft++] = (pp_net_jent){tab[i]->pid, tab[i]->start, tab[i]->rundown};
        finish(tab[i]);
        pp_jitnames_forget(tab[i]->pid);
        free(tab[i]);
        tab[i] = NULL;
    }
    if (ntab)
        pp_net_journal_write(left, nleft);
    ntab = 0;
}
