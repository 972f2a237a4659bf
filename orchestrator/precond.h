/* Start-up preconditions, as gProfiler checks them: root, init PID namespace, single
 * instance. Each returns 0, or -1 after printing the message to stderr (the caller exits 1). */
#ifndef PP_PRECOND_H
#define PP_PRECOND_H

#include "orchestrator/cli.h"

int pp_check_root(const pp_config *cfg);
int pp_check_pidns(const pp_config *cfg);
/* Binds the abstract unix socket "\0<name>" in PID 1's network namespace; the socket is kept
 * open for the life of the process (the kernel frees the lock when it dies). */
int pp_grab_lock(const char *name);
/* umask 022, RLIMIT_CORE 0 (unless --dont-disable-core-files), pid file (failure logged; a new
 * file renamed over the name, so a link planted there is replaced, not written through). */
void pp_process_setup(const pp_config *cfg);
/* Removes the pid file if it is still the one pp_process_setup wrote. */
void pp_remove_pid_file(const pp_config *cfg);

#endif
