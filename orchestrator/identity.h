/* Per-process identity of a session's profile: container name, appid and application metadata,
 * from the process kind found by discovery. Metadata and appids are cached per process
 * (pid + start time) for the whole run, so a long-lived process is examined once. */
#ifndef PP_IDENTITY_H
#define PP_IDENTITY_H

#include "merge/profile.h"
#include "orchestrator/cli.h"
#include "orchestrator/discovery.h"

typedef struct pp_identity pp_identity;

pp_identity *pp_identity_new(const pp_config *cfg);
void pp_identity_free(pp_identity *id);
/* Records this session's discovery result (kinds by pid) and computes the appids and metadata
 * of runtime processes not seen before, so that the session's end has little left to do. */
void pp_identity_set_procs(pp_identity *id, const pp_proc_list *procs);
/* Fills container, appid and app_metadata of every pid of prof (pid 0 excluded; values already
 * set by a runtime profiler are kept), and drops cache entries of processes that are gone. */
void pp_identity_annotate(pp_identity *id, pp_profile *prof, pp_discovery *disc);

#endif
