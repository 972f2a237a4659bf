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

/* Starts every driver of drivers[0..n) that has a start() on its processes of procs
 * (blacklisted ones excluded), to run until deadline (monotonic seconds). */
pp_runner *pp_runner_start(const pp_runtime_driver *const *drivers, size_t n,
                           const pp_runtime_ctx *ctx, const pp_proc_list *procs, double deadline);
/* Waits for the drivers until deadline + grace (or now + grace when called before the deadline,
 * e.g. after a signal), stops laggards, and returns their profiles
 * (owned by the runner until pp_runner_free), one per started driver. */
size_t pp_runner_finish(pp_runner *r, double grace, pp_profile ***profiles);
void pp_runner_free(pp_runner *r);

#endif
