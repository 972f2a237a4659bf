/* Per-process coverage of the runtime profilers, at a session's end: the header's
 * polyprof.runtime_samples (and the warning for a process below 50 %), and the debug line of
 * each runtime profile's counts before its merge. */
#ifndef PP_COVERAGE_H
#define PP_COVERAGE_H

#include <jansson.h>
#include <stddef.h>

#include "merge/profile.h"
#include "orchestrator/discovery.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"
#include "runtimes/system/sampler.h"

/* For every process given to a runtime profiler this session, {pid, runtime, mode, profiler,
 * runtime_samples, sampler_samples}, then the forks walked that discovery did not list; see
 * coverage.c. */
json_t *pp_runtime_coverage(const pp_runtime_ctx *ctx, const pp_proc_list *procs,
                            const pp_runner_task *tasks, size_t ntasks, const pp_profile *sys,
                            pp_profile *const *rts, size_t nrt, const pp_walk_cov *cov,
                            size_t ncov);
/* After the merges: each entry of list (pp_runtime_coverage's) whose process kept native stacks
 * for want of runtime samples (merge/scale.h, pp_coverage_enough) gets "native_kept":
 * {runtime_samples, sampler_samples}, the figures of its "[Profiling error: ... covered R of S
 * samples]" frame. */
void pp_coverage_note_merge(json_t *list, const pp_profile *merged);
/* Before a merge: per pid, the runtime profiler's sample count and the system sampler's. */
void pp_log_runtime_counts(pp_profile *sys, const pp_profile *rt);

#endif
