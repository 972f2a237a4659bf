/* The "builtin" Python backend (--python-mode builtin / pyperf, and auto's first choice):
 *  - with the BPF sampler, every Python process is registered for the sampler's in-sampler
 *    walker (walker.c): its samples carry their Python frames, taken at the sample instant, and
 *    nothing else runs (no thread polls idle processes). A process the walker does not support
 *    gets `[Profiling skipped: unsupported Python X.Y]` in builtin mode; in auto mode it is
 *    handed to py-spy when py-spy is installed.
 *  - without it (--perf-mode perf-event or disabled): auto uses py-spy when installed, else, as
 *    builtin does, the user-space sampler (sampler.c; in perf-event mode it reads only the
 *    threads the perf samples name).
 * See docs/python-bpf.md. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/python/python_int.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

typedef struct pysession {
    void *user; /* the user-space sampler */
    void *spy;  /* py-spy, for processes the walker does not support (auto) */
    pp_skip *skips;
    size_t nskips;
} pysession;

static bool pyspy_found(void)
{
    char path[PATH_MAX];
    return pp_pyspy_find(path, sizeof(path)) == 0;
}

void *pp_pybuiltin_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    pysession *s = calloc(1, sizeof(*s));
    pp_proc *fallback = calloc(n ? n : 1, sizeof(*fallback));
    s = s && fallback ? s : (free(s), NULL);
    if (s)
        s->skips = calloc(n ? n : 1, sizeof(*s->skips));
    if (!s || !s->skips) {
        free(fallback);
        if (s)
            free(s->skips);
        free(s);
        return NULL;
    }
    bool auto_mode = strcmp(ctx->mode, "auto") == 0;
    if (!pp_inwalk_possible(ctx)) {
        if (auto_mode && pyspy_found())
            s->spy = pp_pyspy_start(ctx, procs, n, deadline);
        else
            s->user = pp_pysampler_start(ctx, procs, n, deadline);
        free(fallback);
        if (!s->spy && !s->user) {
            free(s->skips);
            free(s);
            return NULL;
        }
        return s;
    }
    size_t nfall = 0;
    pp_walk_or_hand_over(ctx, procs, n, auto_mode && pyspy_found() ? "py-spy" : NULL, "", fallback,
                         &nfall, s->skips, &s->nskips);
    if (nfall)
        s->spy = pp_pyspy_start(ctx, fallback, nfall, deadline);
    free(fallback);
    return s;
}

int pp_pybuiltin_collect(void *session, pp_profile *out)
{
    pysession *s = session;
    int rc = 0;
    if (s->user && pp_pysampler_collect(s->user, out) < 0)
        rc = -1;
    if (s->spy && pp_pyspy_collect(s->spy, out) < 0)
        rc = -1;
    if (pp_skips_emit(out, s->skips, s->nskips, "python") < 0)
        rc = -1;
    return rc;
}

void pp_pybuiltin_stop(void *session)
{
    pysession *s = session;
    if (s->user)
        pp_pysampler_stop(s->user);
    if (s->spy)
        pp_pyspy_stop(s->spy);
}

void pp_pybuiltin_free(void *session)
{
    pysession *s = session;
    if (!s)
        return;
    if (s->user)
        pp_pysampler_free(s->user);
    if (s->spy)
        pp_pyspy_free(s->spy);
    free(s->skips);
    free(s);
}
