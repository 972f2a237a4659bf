/* Supervision of external profiler processes: launched with execve and an argv list (never a
 * shell), in their own session, killed if polyprof dies (PR_SET_PDEATHSIG), stdout/stderr
 * captured, bounded by a deadline, reaped always. Per-session private temp directories under
 * /tmp/polyprof_tmp, removed at the end. */
#ifndef PP_CHILD_H
#define PP_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct pp_child pp_child;

typedef struct pp_child_opts {
    char *const *argv;        /* argv[0] is the program path (absolute, or looked up in PATH) */
    char *const *envp;        /* NULL = polyprof's environment */
    const char *cwd;          /* NULL = unchanged */
    size_t capture_limit;     /* max bytes kept of stdout and of stderr each (0 = 1 MiB) */
    int term_signal;          /* signal sent at the deadline before SIGKILL (0 = SIGKILL only) */
    double kill_grace;        /* seconds between term_signal and SIGKILL (default 1) */
} pp_child_opts;

/* Starts the child. NULL with a message in err (e.g. program not found). */
pp_child *pp_child_start(const pp_child_opts *o, char *err, size_t errlen);
pid_t pp_child_pid(const pp_child *c);
/* Sends a signal to the child's process group. */
int pp_child_signal(pp_child *c, int sig);

typedef struct pp_child_result {
    bool exited;              /* exited normally (exit_code valid) */
    int exit_code;
    int term_signal;          /* signal that ended it, 0 if none */
    bool timed_out;           /* killed at the deadline */
    const char *out, *err;    /* captured stdout/stderr (NUL-terminated, truncated to the limit) */
    size_t out_len, err_len;
} pp_child_result;

/* Waits until the child exits or the monotonic deadline (CLOCK_MONOTONIC seconds) passes, then
 * term_signal, grace, SIGKILL; always reaps. Result strings live until pp_child_free. */
int pp_child_wait(pp_child *c, double deadline, pp_child_result *res);
void pp_child_free(pp_child *c); /* kills (SIGKILL) and reaps a child still running */

/* Creates /tmp/polyprof_tmp (root-owned, 0755, symlinks refused, re-created if not root-owned)
 * and a private 0700 directory in it; path written to out. */
int pp_session_tmpdir(char *out, size_t len, char *err, size_t errlen);
/* Removes a directory tree created by pp_session_tmpdir (never follows symlinks). */
void pp_rmtree(const char *path);

/* Monotonic clock in seconds. */
double pp_mono_now(void);

#endif
