/* The history store in a profiling run (--history-dir): opened at start, given each session's
 * profile after its files are written. A full disk gives one WARNING (until a session is stored
 * again) and the run goes on; the session is then not kept. */
#ifndef PP_HISTORY_HOOK_H
#define PP_HISTORY_HOOK_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "merge/profile.h"
#include "orchestrator/cli.h"

typedef struct pp_history_sink pp_history_sink;

/* NULL without --history-dir (err ""), or when the store cannot be opened (message in err). */
pp_history_sink *pp_history_sink_open(const pp_config *cfg, char *err, size_t errlen);
/* Stores the session [start, end] of prof; host_md: the host metadata (its "hostname"). Failures
 * are logged. */
void pp_history_sink_session(pp_history_sink *s, const pp_profile *prof, time_t start, time_t end,
                             const json_t *host_md);
void pp_history_sink_close(pp_history_sink *s);

#endif
