/* The session loop: system sampler running continuously, sessions of -d seconds back to back
 * (no gap in sampling between them), each turned into one profile and written out. */
#ifndef PP_SESSION_H
#define PP_SESSION_H

#include "orchestrator/cli.h"

#include <signal.h>

/* The signals that end a run like SIGTERM (write the part of the session already sampled, clean
 * up, exit 0): SIGINT, SIGTERM, SIGHUP, SIGQUIT. */
void pp_session_stop_signals(sigset_t *set);
/* Blocks the stop signals (the session loop reads them through a signalfd; threads started
 * later inherit the mask) and ignores SIGPIPE, SIGUSR1, SIGUSR2 and SIGALRM, which would
 * otherwise kill polyprof at once. Children get default dispositions back (child.h). */
void pp_session_signals_setup(void);

/* Runs until the last session ends (one, or forever with -c) or a stop signal arrives; the
 * session cut short by a signal is still written (it is complete up to the signal). Returns the
 * process exit code. pp_session_signals_setup must have been called. */
int pp_run_sessions(const pp_config *cfg);

#endif
