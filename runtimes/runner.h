/* Runs the runtime profilers of one session concurrently (one thread per driver), alongside the
 * system sampler, and collects their profiles. A driver that overruns the session deadline is
 * told to stop; one that still does not return is abandoned and its pids get a
 * "[Profiling error: profiler did not finish in time]" stack. A driver whose start fails gives
 * its pids "[Profiling error: profiler failed to start]". External profilers run as children
 * (base/child.h), so a crashing profiler only affects its own pids. */
#ifndef PP_RUNNER_H
#define PP_RUNNER_H

#include "merge/profile.h"
#include "runtimes/runtime.h"

typedef struct pp_runner pp_runner;

/* One runtime profiler of a session: a runtime's backend and its context (which must outlive
 * the runner, also an abandoned one: keep it for the whole run). */
typedef struct pp_runner_task {
    pp_proc_kind kind;
    const pp_backend *backend;
    const pp_runtime_ctx *ctx;
} pp_runner_task;

/* Starts every task on its kind's processes of procs (blacklisted ones excluded), to run until
 * deadline (monotonic seconds). */
pp_runner *pp_runner_start(const pp_runner_task *tasks, size_t n, const pp_proc *procs,
                           size_t nprocs, double deadline);
/* Waits for the drivers until deadline + grace (or now + grace when called before the deadline,
 * e.g. after a signal), stops laggards, and returns their profiles
 * (owned by the runner until pp_runner_free), one per started driver. */
size_t pp_runner_finish(pp_runner *r, double grace, pp_profile ***profiles);
void pp_runner_free(pp_runner *r);
/* Abandoned runtime profilers whose thread is still running (any runner): while there are, what
 * they may use (the sampler, the symbolizer, their runtime's context) must not be freed. */
size_t pp_runner_abandoned(void);

/* The single stack of a process that has no profile: "[Profiling <what>: <reason>]" (what:
 * "error" or "skipped", gProfiler's words), replacing whatever the pid had. comm and runtime
 * (the profile's runtime label, may be NULL) name it. 0, or -1 out of memory. */
int pp_error_stack(pp_profile *out, int pid, const char *comm, const char *runtime,
                   const char *what, const char *reason);

/* A process a backend leaves out of its session, given an error or skipped stack at collect. */
typedef struct pp_skip {
    int pid;
    char comm[17];
    bool error; /* "error", else "skipped" */
    char reason[256];
} pp_skip;
/* Records p in k and logs it (a WARNING "<runtime> pid N (comm) cannot be profiled: reason" for
 * an error, else an INFO "... not profiled: reason"). */
void pp_skip_note(pp_skip *k, const pp_proc *p, const char *runtime, bool error,
                  const char *reason);
/* The stacks of n skips (pp_error_stack). 0, or -1 out of memory. */
int pp_skips_emit(pp_profile *out, const pp_skip *k, size_t n, const char *runtime);

/* The start of a runtime whose built-in mode is its in-sampler walker (ctx->rt's), with an
 * external profiler (tool, e.g. "py-spy") taking what the walker cannot when tool is non-NULL:
 * registers each of procs with the walker (pp_inwalk_attach); a process it does not support (or
 * every process, when the sampler cannot walk: no_walk says why) goes to fallback[] with tool,
 * else gets a skip note in skips[]; gone processes are left out. fallback and skips have room for
 * n. Returns the processes walked; *nfall and *nskips are set. */
size_t pp_walk_or_hand_over(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n,
                            const char *tool, const char *no_walk, pp_proc *fallback, size_t *nfall,
                            pp_skip *skips, size_t *nskips);

#endif
