/* One external profiler child per process and session (py-spy, rbspy): gProfiler's pattern of
 * `<tool> record ... -p <pid>` with the session's duration, run through base/child.h (an argv
 * list, no shell), its output file in the session's private directory parsed by the backend.
 * Failures become error stacks (runner.h); no child outlives collect() or free(). */
#ifndef PP_PERPROC_H
#define PP_PERPROC_H

#include <stddef.h>

#include "runtimes/runtime.h"

typedef struct pp_perproc_tool {
    const char *name;        /* "rbspy": messages and error stacks */
    const char *file_prefix; /* output file <tmpdir>/<prefix>.<16 random letters>.<pid>.col */
    const char *runtime;     /* the profile's runtime label, and messages: "ruby" */
    /* the command line, NULL-terminated; the elements "{exe}", "{rate}" (Hz), "{duration}" (s),
     * "{output}" and "{pid}" are replaced */
    const char *const *argv;
    int max_hz;           /* -f is clamped to this */
    double extra_timeout; /* the child is killed at duration + this */
    /* stderr text that, with the process gone and no output, means the process exited before
     * the tool attached (an error stack says so); NULL: none */
    const char *gone_stderr;
    /* Parses text (the output of the i-th process of start(), modified freely) into dst, its
     * pid entry of out, whose comm and runtime are set. */
    size_t (*parse)(void *arg, size_t i, char *text, pp_profile *out, pp_pid_profile *dst);
} pp_perproc_tool;

typedef struct pp_perproc pp_perproc;

/* Starts t's program exe (a canonical path) for each of procs; arg is given to t->parse. NULL
 * on a setup error (logged). A child that cannot start gives its process an error stack. */
pp_perproc *pp_perproc_start(const pp_perproc_tool *t, const char *exe, const pp_runtime_ctx *ctx,
                             const pp_proc *procs, size_t n, void *arg);
/* Waits for every child (until its deadline or stop), parses the outputs into out and adds the
 * error stacks. 0, or -1 out of memory. */
int pp_perproc_collect(pp_perproc *s, pp_profile *out);
/* Makes a running collect() end its waits now (each child gets SIGINT, then SIGKILL). Callable
 * from another thread. */
void pp_perproc_stop(pp_perproc *s);
/* Kills and reaps the children left, removes the output files, frees s (NULL ok). */
void pp_perproc_free(pp_perproc *s);

#endif
