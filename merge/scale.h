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

/* Merges one runtime profiler's profile into the system profile, pid by pid:
 * - a runtime profile with no stacks is ignored (the sampler's stacks stay);
 * - real stacks, sampler has samples: scaled to the sampler's count and replace its stacks;
 *   when both sides recorded threads (pp_pid_add_tid) and share at least one, per thread instead:
 *   each thread's runtime stacks scaled to the sampler's count for that thread, the sampler's
 *   stacks of threads the runtime did not sample kept (GC, JIT compiler, native threads), runtime
 *   samples of threads the sampler never counted dropped; the pid's total is the sampler's;
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
