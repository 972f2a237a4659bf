/* Processes that appear during a session (started, or exec'd into a runtime, after its
 * discovery) are registered with their runtime's in-sampler walker within about a second, when
 * that runtime's backend walks in the sampler (pp_backend.walks_new_processes): short-lived
 * scripts and workers get their interpreter frames in the session that saw them, not from the
 * next one. Forks of registered processes are walked at once by the sampler itself
 * (PP_RT_FORK_DEPTH); this covers the rest. */
#ifndef PP_ADOPT_H
#define PP_ADOPT_H

#include <stddef.h>

#include "orchestrator/discovery.h"
#include "runtimes/runner.h"
#include "runtimes/system/sampler.h"

typedef struct pp_adopter pp_adopter;

pp_adopter *pp_adopter_new(void);
void pp_adopter_free(pp_adopter *a);
/* A new session: its tasks (the backends running per runtime; copied), the count reset. */
void pp_adopter_session(pp_adopter *a, const pp_runner_task *tasks, size_t ntasks);
/* Takes the processes the sampler announced, and registers those due (announced
 * PP_ADOPT_DELAY_S ago: an interpreter that just started has no thread state yet). Returns the
 * milliseconds until the next is due, or -1 when none waits. */
int pp_adopter_run(pp_adopter *a, pp_sampler *s, pp_discovery *d, double now);

#endif
