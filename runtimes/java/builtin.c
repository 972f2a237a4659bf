/* The "builtin" Java backend (--java-mode builtin; docs/java.md "In-sampler walker"): with the
 * BPF sampler, every JVM is registered for the sampler's HotSpot walker (walker.c) once its
 * layout passed the self-check, and its samples carry their Java frames, taken at the sample
 * instant. Nothing attaches to the JVM: no attach socket, no file in it, nothing loaded. A JVM
 * whose layout does not pass gets `[Profiling skipped: unverified HotSpot layout]`; without the
 * BPF sampler every JVM gets an error stack saying why.
 *
 * "auto" is this backend too: a JVM whose layout the walker does not support is handed to
 * async-profiler when it is found, else to JFR, and so is every JVM when the sampler cannot walk
 * (--perf-mode perf-event); polyprof attaches only to JVMs handed over (javaopts.h). The
 * hand-over is decided at the session's start (pp_java_auto_sort, the runtime's session hook:
 * before the session's metadata and perf maps ask for it), and tried again each session: a JVM
 * the walker then takes is no longer attached to. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/java/java.h"
#include "runtimes/java/javaopts.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

extern const pp_backend pp_java_jfr_backend, pp_java_ap_backend;

typedef struct jbsession {
    pp_skip *skips;
    size_t nskips;
    const pp_backend *other; /* auto: async-profiler or JFR, for the JVMs handed over */
    void *session;
} jbsession;

/* auto's profiler for the JVMs the walker does not take: async-profiler when it is found, else
 * JFR (as auto chose before the walker). */
static const pp_backend *other_backend(void)
{
    char why[512];
    return pp_java_ap_backend.available(why, sizeof(why)) ? &pp_java_ap_backend
                                                          : &pp_java_jfr_backend;
}

static const char *tool_name(const pp_backend *b)
{
    return b == &pp_java_ap_backend ? "async-profiler" : "JFR";
}

static bool walks_in_auto(const pp_runtime_ctx *ctx)
{
    return ctx && ctx->mode && strcmp(ctx->mode, "auto") == 0 && pp_inwalk_possible(ctx);
}

void pp_java_auto_sort(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n)
{
    if (!walks_in_auto(ctx))
        return;
    const char *tool = NULL;
    for (size_t i = 0; i < n; i++) {
        const pp_proc *p = &procs[i];
        if (p->kind != PP_KIND_JAVA || p->blacklisted)
            continue;
        char err[256] = "";
        pp_inwalk_status st = pp_inwalk_attach(ctx, p, err, sizeof(err));
        if (st == PP_INWALK_OK) {
            pp_java_set_handed(p->pid, p->start_ticks, false); /* walked (again) */
        } else if (st == PP_INWALK_UNSUPPORTED) {
            tool = tool ? tool : tool_name(other_backend());
            pp_java_set_handed(p->pid, p->start_ticks, true);
            pp_info_proc(p->pid, p->start_ticks, "java pid %d (%s): %s; profiled with %s", p->pid,
                         p->comm, err, tool);
        } /* gone, or not checkable yet: left to the session's start (an error stack) */
    }
}

static void *jb_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    jbsession *s = calloc(1, sizeof(*s));
    pp_proc *fallback = calloc(n ? n : 1, sizeof(*fallback));
    pp_proc *walk = calloc(n ? n : 1, sizeof(*walk));
    if (s)
        s->skips = calloc(n ? n : 1, sizeof(*s->skips));
    if (!s || !s->skips || !fallback || !walk) {
        free(fallback);
        free(walk);
        if (s)
            free(s->skips);
        free(s);
        return NULL;
    }
    bool auto_mode = ctx->mode && strcmp(ctx->mode, "auto") == 0;
    const pp_backend *other = auto_mode ? other_backend() : NULL;
    size_t nfall = 0, nwalk = 0;
    if (other && !pp_inwalk_possible(ctx)) { /* every JVM: nothing to walk them */
        for (size_t i = 0; i < n; i++)
            fallback[nfall++] = procs[i];
        pp_debug("java: the sampler does not walk Java frames (no BPF sampler): %zu JVMs "
                 "profiled with %s",
                 n, tool_name(other));
    } else {
        /* auto: those pp_java_auto_sort handed over at the session's start (before their
         * metadata was asked for) go to the other profiler as they are */
        for (size_t i = 0; i < n; i++) {
            if (other && pp_java_is_handed(procs[i].pid, procs[i].start_ticks))
                fallback[nfall++] = procs[i];
            else
                walk[nwalk++] = procs[i];
        }
        size_t nmore = 0;
        pp_walk_or_hand_over(ctx, walk, nwalk, other ? tool_name(other) : NULL,
                             "--java-mode builtin walks Java frames in the BPF sampler, which is "
                             "not running (--perf-mode bpf, smart or dwarf runs it), or use "
                             "--java-mode jfr or ap",
                             fallback + nfall, &nmore, s->skips, &s->nskips);
        for (size_t i = nfall; i < nfall + nmore; i++) /* from now on: metadata, perf maps */
            pp_java_set_handed(fallback[i].pid, fallback[i].start_ticks, true);
        nfall += nmore;
    }
    if (nfall) {
        s->other = other;
        s->session = other->start(ctx, fallback, nfall, deadline);
    }
    free(walk);
    free(fallback);
    return s;
}

static int jb_collect(void *session, pp_profile *out)
{
    jbsession *s = session;
    int rc = s->session ? s->other->collect(s->session, out) : 0;
    /* the JVMs handed over are that profiler's (polyprof.runtime_samples names it) */
    for (size_t i = 0; s->session && i < pp_profile_npids(out); i++) {
        pp_pid_profile *pp = pp_profile_at(out, i);
        if (!pp->profiler)
            pp->profiler = s->other->name;
    }
    return pp_skips_emit(out, s->skips, s->nskips, "java") < 0 ? -1 : rc;
}

static void jb_stop(void *session)
{
    jbsession *s = session; /* the walker needs nothing: the sampler does the work */
    if (s->session)
        s->other->stop(s->session);
}

static void jb_free(void *session)
{
    jbsession *s = session;
    if (!s)
        return;
    if (s->session)
        s->other->free(s->session);
    free(s->skips);
    free(s);
}

static const char *const builtin_modes[] = {"builtin", "auto", NULL};

const pp_backend pp_java_builtin_backend = {
    .name = "builtin",
    .modes = builtin_modes,
    .start = jb_start,
    .collect = jb_collect,
    .stop = jb_stop,
    .free = jb_free,
    .walks_new_processes = true,
};
