/* The session loop: system sampler running continuously, sessions of -d seconds back to back
 * (no gap in sampling between them), each turned into one profile and written out. */
#ifndef PP_SESSION_H
#define PP_SESSION_H

#include "orchestrator/cli.h"

/* Runs until the last session ends (one, or forever with -c) or SIGINT/SIGTERM arrives; the
 * session cut short by a signal is still written (it is complete up to the signal). Returns the
 * process exit code. SIGINT/SIGTERM must be blocked by the caller (they are read through a
 * signalfd). */
int pp_run_sessions(const pp_config *cfg);

#endif
