/* The "builtin" Java backend (--java-mode builtin; docs/java.md "In-sampler walker"): with the
 * BPF sampler, every JVM is registered for the sampler's HotSpot walker (walker.c) once its
 * layout passed the self-check, and its samples carry their Java frames, taken at the sample
 * instant. Nothing attaches to the JVM: no attach socket, no file in it, nothing loaded. A JVM
 * whose layout does not pass gets `[Profiling skipped: unverified HotSpot layout]`; without the
 * BPF sampler every JVM gets an error stack saying why. "auto" does not pick it yet. */
#include <stdlib.h>

#include "runtimes/runner.h"
#include "runtimes/runtime.h"

typedef struct jbsession {
    pp_skip *skips;
    size_t nskips;
} jbsession;

static void *jb_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    (void)deadline;
    jbsession *s = calloc(1, sizeof(*s));
    pp_proc *fallback = calloc(n ? n : 1, sizeof(*fallback));
    if (s)
        s->skips = calloc(n ? n : 1, sizeof(*s->skips));
    if (!s || !s->skips || !fallback) {
        free(fallback);
        if (s)
            free(s->skips);
        free(s);
        return NULL;
    }
    size_t nfall = 0;
    pp_walk_or_hand_over(ctx, procs, n, NULL,
                         "--java-mode builtin walks Java frames in the BPF sampler, which is not "
                         "running (--perf-mode bpf, smart or dwarf runs it), or use --java-mode "
                         "jfr or ap",
                         fallback, &nfall, s->skips, &s->nskips);
    free(fallback);
    return s;
}

static int jb_collect(void *session, pp_profile *out)
{
    jbsession *s = session;
    return pp_skips_emit(out, s->skips, s->nskips, "java");
}

static void jb_stop(void *session)
{
    (void)session; /* nothing runs: the sampler does the work */
}

static void jb_free(void *session)
{
    jbsession *s = session;
    if (!s)
        return;
    free(s->skips);
    free(s);
}

static const char *const builtin_modes[] = {"builtin", NULL};

const pp_backend pp_java_builtin_backend = {
    .name = "builtin",
    .modes = builtin_modes,
    .start = jb_start,
    .collect = jb_collect,
    .stop = jb_stop,
    .free = jb_free,
    .walks_new_processes = true,
};
