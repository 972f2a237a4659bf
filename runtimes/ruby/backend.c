/* The "builtin" Ruby backend (--ruby-mode builtin, and auto's first choice): every Ruby process
 * is registered for the BPF sampler's in-sampler walker (walker.c), so its samples carry their
 * Ruby frames, taken at the sample instant; nothing else runs. A process whose Ruby the walker
 * does not support gets `[Profiling skipped: unsupported Ruby X.Y]` (or `unverified Ruby X.Y
 * layout`); without the BPF sampler every process gets an error stack saying so. See
 * docs/ruby.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

typedef struct rbsession {
    pp_skip *skips;
    size_t nskips;
} rbsession;

static void *rb_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    (void)deadline;
    rbsession *s = calloc(1, sizeof(*s));
    if (s)
        s->skips = calloc(n ? n : 1, sizeof(*s->skips));
    if (!s || !s->skips) {
        free(s);
        return NULL;
    }
    size_t walked = 0;
    for (size_t i = 0; i < n; i++) {
        char err[256] = "";
        pp_inwalk_status st = pp_inwalk_attach(ctx, &procs[i], err, sizeof(err));
        if (st == PP_INWALK_OK) {
            walked++;
            continue;
        }
        if (st == PP_INWALK_GONE)
            continue;
        pp_skip_note(&s->skips[s->nskips++], &procs[i], "ruby", st != PP_INWALK_UNSUPPORTED, err);
    }
    pp_debug("ruby: %zu processes walked in the sampler, %zu skipped", walked, s->nskips);
    return s;
}

static int rb_collect(void *session, pp_profile *out)
{
    rbsession *s = session;
    return pp_skips_emit(out, s->skips, s->nskips, "ruby");
}

static void rb_stop(void *session)
{
    (void)session;
}

static void rb_free(void *session)
{
    rbsession *s = session;
    if (s)
        free(s->skips);
    free(s);
}

static const char *const builtin_modes[] = {"builtin", NULL};

/* Placeholder for --ruby-mode rbspy until the rbspy backend (branch `rbspy`) is merged, which
 * replaces it: not available, and its processes get an error stack. */
#define NO_RBSPY "the rbspy backend is not part of this build (--ruby-mode builtin walks Ruby)"

static bool rbspy_available(char *why, size_t len)
{
    snprintf(why, len, NO_RBSPY);
    return false;
}

/* Not available: the runner gives the processes an error stack. */
static void *rbspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    (void)ctx;
    (void)procs;
    (void)n;
    (void)deadline;
    pp_warn("--ruby-mode rbspy: " NO_RBSPY);
    return NULL;
}

static const char *const rbspy_modes[] = {"rbspy", NULL};

const pp_backend pp_ruby_rbspy_placeholder = {
    .name = "rbspy",
    .modes = rbspy_modes,
    .available = rbspy_available,
    .start = rbspy_start,
    .collect = rb_collect,
    .stop = rb_stop,
    .free = rb_free,
};

const pp_backend pp_ruby_builtin_backend = {
    .name = "builtin",
    .modes = builtin_modes,
    .start = rb_start,
    .collect = rb_collect,
    .stop = rb_stop,
    .free = rb_free,
    .walks_new_processes = true,
};
