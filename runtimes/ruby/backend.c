/* The "builtin" Ruby backend (--ruby-mode builtin, and auto's first choice): every Ruby process
 * is registered for the BPF sampler's in-sampler walker (walker.c), so its samples carry their
 * Ruby frames, taken at the sample instant; nothing else runs. A process whose Ruby the walker
 * does not support gets `[Profiling skipped: unsupported Ruby X.Y]` (or `unverified Ruby X.Y
 * layout`); without the BPF sampler every process gets an error stack saying so. In auto mode
 * rbspy, when installed, takes those processes instead. See docs/ruby.md. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/ruby/rbspy.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

typedef struct rbsession {
    pp_skip *skips;
    size_t nskips;
    void *spy; /* rbspy's session (auto): processes the walker cannot take */
} rbsession;

static bool rbspy_found(void)
{
    char path[PATH_MAX];
    return pp_rbspy_find(path, sizeof(path)) == 0;
}

static void *rb_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    rbsession *s = calloc(1, sizeof(*s));
    pp_proc *fallback = calloc(n ? n : 1, sizeof(*fallback));
    if (s)
        s->skips = calloc(n ? n : 1, sizeof(*s->skips));
    if (!s || !s->skips || !fallback) {
        if (s)
            free(s->skips);
        free(s);
        free(fallback);
        return NULL;
    }
    /* auto: rbspy takes what the walker cannot (no BPF sampler, an unsupported Ruby) */
    size_t nfall = 0;
    pp_walk_or_hand_over(
        ctx, procs, n, strcmp(ctx->mode, "auto") == 0 && rbspy_found() ? "rbspy" : NULL,
        "the built-in Ruby profiler needs the BPF sampler", fallback, &nfall, s->skips, &s->nskips);
    if (nfall)
        s->spy = pp_ruby_rbspy_backend.start(ctx, fallback, nfall, deadline);
    free(fallback);
    return s;
}

static int rb_collect(void *session, pp_profile *out)
{
    rbsession *s = session;
    int rc = s->spy ? pp_ruby_rbspy_backend.collect(s->spy, out) : 0;
    if (pp_skips_emit(out, s->skips, s->nskips, "ruby") < 0)
        rc = -1;
    return rc;
}

static void rb_stop(void *session)
{
    rbsession *s = session;
    if (s->spy && pp_ruby_rbspy_backend.stop)
        pp_ruby_rbspy_backend.stop(s->spy);
}

static void rb_free(void *session)
{
    rbsession *s = session;
    if (!s)
        return;
    if (s->spy)
        pp_ruby_rbspy_backend.free(s->spy);
    free(s->skips);
    free(s);
}

static const char *const builtin_modes[] = {"builtin", NULL};

const pp_backend pp_ruby_builtin_backend = {
    .name = "builtin",
    .modes = builtin_modes,
    .start = rb_start,
    .collect = rb_collect,
    .stop = rb_stop,
    .free = rb_free,
    .walks_new_processes = true,
};
