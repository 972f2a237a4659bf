/* Merge and scale: runtime-profiler stacks replace the
 * system sampler's native stacks of the same pid, scaled to the sampler's sample count. */
#ifndef PP_SCALE_H
#define PP_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "merge/profile.h"

/* Scales the pid's stack counts so that they sum exactly to target, deterministically: each
 * count becomes floor(c * target / total), and the remaining units go to the stacks with the
 * largest remainders (ties: first-seen stack first). Stacks that end at 0 are kept with count 0
 * (the writer skips them). No-op when the total already equals target or is 0. */
void pp_scale_to(pp_pid_profile *pp, uint64_t target);

/* True when the pid's profile is a runtime profiler's error/skip stack: exactly one stack that
 * holds a "[Profiling <what>: <reason>]" frame. *frame receives that frame's string id. */
bool pp_is_error_stack(const pp_profile *p, const pp_pid_profile *pp, uint32_t *frame);

/* The coverage below which runtime samples are not scaled up (docs/decisions.md, "Low runtime
 * coverage"): a runtime profile covers a thread or process whose sampler counted `sampler`
 * samples when it gave at least as many, or at least PP_COVER_MIN_SHARE_PCT % of them and at
 * least PP_COVER_MIN_SAMPLES (or half of them, when the sampler has fewer than twice that). */
#define PP_COVER_MIN_SHARE_PCT 10
#define PP_COVER_MIN_SAMPLES 20
bool pp_coverage_enough(uint64_t rt, uint64_t sampler);

/* Merges one runtime profiler's profile into the system profile, pid by pid:
 * - a runtime profile with no stacks is ignored (the sampler's stacks stay);
 * - real stacks, sampler has samples: the runtime's stacks replace the sampler's, scaled to its
 *   counts; the pid's total is the sampler's:
 *   - when the runtime does not cover the process (pp_coverage_enough), its samples are kept
 *     unscaled and the rest of the sampler's samples keep their native stacks (scaled to that
 *     rest) under a "[Profiling error: <profiler> covered R of S samples]" frame (after the comm);
 *   - else per thread, for the threads both sides counted (pp_pid_add_tid): each thread's runtime
 *     stacks scaled to the sampler's count of it; a thread the runtime does not cover with at
 *     least PP_COVER_MIN_SAMPLES sampler samples is kept and marked as above (the frame's R and
 *     S are the sums over the pid's marked threads);
 *   - the rest is a pool: the sampler's samples of threads the runtime did not see (GC, JIT,
 *     native threads, and under thread churn the short threads only the sampler caught), the
 *     runtime's of threads the sampler did not count, tid 0, and threads too small to judge. The
 *     pool's runtime samples are scaled at the process's rate (sampler over runtime samples, the
 *     marked threads left out) to at most the pool's sampler samples, which keep their native
 *     stacks for the rest (scaled down). Without common threads the pool is the whole process;
 *   - uncovered_rt/uncovered_of of the pid add the marked samples' R and S;
 * - real stacks, sampler has no samples: kept unscaled;
 * - error stack, sampler has samples: the error frame is inserted after the comm of each of the
 *   sampler's stacks (counts kept);
 * - error stack, sampler has no samples: the pid keeps no stacks (its metadata still counts);
 * - the runtime's comm, appid and metadata win when set; the container name is taken from the
 *   sampler when the runtime has none.
 * With perf_enabled false, runtime stacks are copied unscaled (gProfiler's perf-less mode).
 * Pids new to sys are appended in rt's order. Returns 0, or -1 on OOM. */
int pp_merge_runtime(pp_profile *sys, const pp_profile *rt, bool perf_enabled);

#endif
