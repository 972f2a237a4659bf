/* Start-up notices for gProfiler options that polyprof accepts but does not (fully) act on,
 * beyond the generic "has no effect" line of the option table (cli.c): each is logged once, when
 * the run starts. */
#ifndef PP_NOTICES_H
#define PP_NOTICES_H

#include "orchestrator/cli.h"

/* Logs: a WARNING per --<rt>-mode that asks for a runtime profiler polyprof does not have (the
 * processes of that runtime get the system sampler's native frames only); an INFO line that
 * polyprof never sends its logs to a server when gProfiler would have (-u), or when
 * --api-server/--glogger-server or --dont-send-logs is given; an INFO line for
 * --app-id-args-filter, which Java appids do not apply yet. */
void pp_log_startup_notices(const pp_config *cfg);

#endif
