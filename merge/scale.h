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
 * coverage"): a runtime profile does not cover a thread or process the sampler counted at least
 * PP_COVER_MIN_SAMPLER_SAMPLES times when it gave fewer than PP_COVER_MIN_RT_SAMPLES samples
 * for it. The rule does not depend on the profilers' rates (which the merge does not know, and
 * which a JVM lowers): the slowest runtime profiler samples at least 1/20 of the sampler's
 * highest rate (50 Hz against -f 1000), so a covered thread with 400 sampler samples gets about
 * 20 runtime samples or more, and fewer than 10 is a gap, not noise. */
#define PP_COVER_MIN_RT_SAMPLES 10
#define PP_COVER_MIN_SAMPLER_SAMPLES 400
bool pp_coverage_enough(uint64_t rt, uint64_t sampler);
/* A thread both sides counted with fewer sampler samples, or only the runtime saw with fewer
 * runtime samples, is merged in the pool (pp_merge_runtime) rather than on its own. */
#define PP_POOL_BELOW_SAMPLES 20

/* Merges one runtime profiler's profile into the system profile, pid by pid:
 * - a runtime profile with no stacks is ignored (the sampler's stacks stay);
 * - real stacks, sampler has samples: the runtime's stacks replace the sampler's, scaled to its
 *   counts; the pid's total is the sampler's:
 *   - without a thread both sides counted (pp_pid_add_tid): when the runtime does not cover the
 *     process (pp_coverage_enough), its samples are kept unscaled and the rest of the sampler's
 *     samples keep their native stacks (scaled to that rest) under a "[Profiling error:
 *     <profiler> covered R of S samples]" frame (after the comm); else the runtime's stacks
 *     scaled to the sampler's count of the process replace its stacks;
 *   - else per thread: each common thread's runtime stacks scaled to the sampler's count of it;
 *     a common thread the runtime does not cover is kept and marked as above (the frame's R and
 *     S are the sums over the pid's marked threads), and so are all the common threads (and the
 *     pooled runtime-only ones) when the runtime does not cover them taken together; the
 *     sampler's stacks of threads the runtime
 *     did not sample (GC, JIT compiler, native threads) and of tid 0 keep their native stacks;
 *     the runtime's of tid 0 and of threads the sampler never counted with at least
 *     PP_POOL_BELOW_SAMPLES samples (off the CPU) are dropped;
 *   - the pool, under thread churn (a thread per request, each caught by few samples): the
 *     common threads with fewer than PP_POOL_BELOW_SAMPLES sampler samples and the runtime's
 *     threads with fewer than that which the sampler did not count. Its runtime samples are
 *     scaled at the process's rate (sampler over runtime samples of the unmarked common
 *     threads) to at most the pool's sampler samples, which keep their native stacks for the
 *     rest (scaled down);
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
