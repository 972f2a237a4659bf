/* Per-process identity of a session's profile: container name, appid and application metadata,
 * from the process kind found by discovery. Metadata and appids are cached per process
 * (pid + start time + kind) for as long as discovery lists it, so a long-lived process is
 * examined once, also when it is idle (never sampled) for many sessions; they are
 * computed on worker threads from the moment a process is first seen, so that neither the
 * session nor the other processes wait for a slow one (a JVM that does not answer attach). */
#ifndef PP_IDENTITY_H
#define PP_IDENTITY_H

#include "merge/profile.h"
#include "orchestrator/cli.h"
#include "orchestrator/discovery.h"

typedef struct pp_identity pp_identity;

pp_identity *pp_identity_new(const pp_config *cfg);
void pp_identity_free(pp_identity *id);
/* Records this session's discovery result (kinds by pid) and starts computing the appids and
 * metadata of runtime processes not seen before (returns at once). */
void pp_identity_set_procs(pp_identity *id, const pp_proc_list *procs);
/* How long after the session's end pp_identity_annotate waits at most for computations still
 * running (seconds). */
#define PP_IDENTITY_WAIT_S 1.0
/* Fills container, appid and app_metadata of every pid of prof (pid 0 excluded; values already
 * set by a runtime profiler are kept), and drops the cache entries of processes that this
 * session's discovery did not list and prof does not hold (gone). Waits
 * for computations still running until PP_IDENTITY_WAIT_S after session_end (monotonic
 * seconds); a process whose identity is not ready by then has no appid and metadata in this
 * session's profile (the next session has them). */
void pp_identity_annotate(pp_identity *id, pp_profile *prof, pp_discovery *disc,
                          double session_end);
/* How many appid and metadata computations were started so far (tests, benchmarks). */
size_t pp_identity_computed(const pp_identity *id);

#endif
