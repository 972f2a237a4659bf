/* Start-up preconditions, as gProfiler checks them: root, init PID namespace, single
 * instance. Each returns 0, or -1 after printing the message to stderr (the caller exits 1). */
#ifndef PP_PRECOND_H
#define PP_PRECOND_H

#include "orchestrator/cli.h"

int pp_check_root(const pp_config *cfg);
int pp_check_pidns(const pp_config *cfg);
/* The single-instance lock (docs/security.md): binds the abstract unix socket "\0<name>" in PID
 * 1's network namespace (gProfiler's lock; in polyprof's own namespace when PID 1's cannot be
 * entered), and, as root, takes an flock on /run/<file> of the host's root directory
 * (through /proc/1/root, which a --pid=host container sees too; else polyprof's own /run). Both
 * are kept for the life of the process (the kernel frees them when it dies). Logs a warning
 * when neither is known to be host-wide. */
int pp_grab_lock(const char *name, const char *file);
/* True when gProfiler's lock (the abstract socket "gprofiler_lock") is bound in PID 1's or
 * polyprof's network namespace: gProfiler runs on this host. */
bool pp_gprofiler_running(void);
/* umask 022, RLIMIT_CORE 0 (unless --dont-disable-core-files), pid file (failure logged; a new
 * file renamed over the name, so a link planted there is replaced, not written through). */
void pp_process_setup(const pp_config *cfg);
/* Removes the pid file if it is still the one pp_process_setup wrote. */
void pp_remove_pid_file(const pp_config *cfg);

#endif
