/* Supervision of external profiler processes: launched with execve and an argv list (never a
 * shell), in their own session, killed if polyprof dies (PR_SET_PDEATHSIG), stdout/stderr
 * captured, bounded by a deadline, reaped always. Per-session private temp directories under
 * /run/polyprof, removed at the end.
 *
 * Rules for callers:
 * - PR_SET_PDEATHSIG fires when the *thread* that called pp_child_start exits, not only when
 *   polyprof dies: start, wait and free a child from the same long-lived thread.
 * - SIGCHLD must not be ignored (SIG_IGN would auto-reap) and nothing else may call waitpid(-1).
 * - A pp_child is used by one thread at a time; pp_child_kill_all is the only cross-thread call.
 * - The child starts with an empty signal mask, default dispositions, stdin from /dev/null,
 *   stdout/stderr to pipes, no other inherited fd, in a new session (pgid = sid = pid). Signals
 *   and kills target the whole process group, so grandchildren that stay in it die too
 *   (a grandchild that calls setsid itself escapes; profilers do not). */
#ifndef PP_CHILD_H
#define PP_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct pp_child pp_child;

typedef struct pp_child_opts {
    char *const *argv;    /* argv[0] is the program path (absolute, or looked up in PATH) */
    char *const *envp;    /* NULL = polyprof's environment */
    const char *cwd;      /* NULL = unchanged */
    size_t capture_limit; /* max bytes kept of stdout and of stderr each (0 = 1 MiB) */
    int term_signal;      /* signal sent at the deadline before SIGKILL (0 = SIGKILL only) */
    double kill_grace;    /* seconds between term_signal and SIGKILL (default 1) */
    /* false (default): pp_child_wait logs a warning with the status and the tail of stderr when
     * the child failed (non-zero exit, signal, timeout). true: it only logs at DEBUG, for tools
     * whose failures are expected or reported by the caller (see pp_child_log_failure). */
    bool quiet;
} pp_child_opts;

/* Starts the child. NULL with a message in err: "program not found: X" (PATH lookup, or an
 * absolute path that does not exist; nothing is forked), "cannot execute X: <strerror>" (execve
 * failed in the child, which is reaped), "cannot chdir to D for X: ...", or a setup error.
 * PATH lookup uses polyprof's PATH (like execvp), not the one in envp, and skips relative PATH
 * entries. */
pp_child *pp_child_start(const pp_child_opts *o, char *err, size_t errlen);
pid_t pp_child_pid(const pp_child *c);
/* Sends a signal to the child's process group. -1 with errno ESRCH once the child is reaped. */
int pp_child_signal(pp_child *c, int sig);

typedef struct pp_child_result {
    bool exited; /* exited normally (exit_code valid) */
    int exit_code;
    int term_signal;       /* signal that ended it, 0 if none */
    bool timed_out;        /* killed at the deadline */
    const char *out, *err; /* captured stdout/stderr (NUL-terminated, truncated to the limit) */
    size_t out_len, err_len;
    bool stopped;                      /* killed because stop_fd became readable (wait_until) */
    bool out_truncated, err_truncated; /* more output was produced than capture_limit */
    double elapsed;                    /* seconds from start to reaping */
} pp_child_result;

/* Waits until the child exits or the monotonic deadline (CLOCK_MONOTONIC seconds) passes, then
 * term_signal, grace, SIGKILL; always reaps. Result strings live until pp_child_free.
 * A deadline <= 0 or infinite means none. Both pipes are drained all along (the child never
 * blocks on a full pipe; bytes beyond capture_limit are discarded). When the child exits, any
 * process left in its process group is SIGKILLed before it is reaped, and output still buffered
 * in the pipes is read (for at most ~1 s). Returns 0 with res filled; calling it again after the
 * child is reaped returns the same result. -1 with errno on a system error (the child is then
 * killed and reaped, res still filled). */
int pp_child_wait(pp_child *c, double deadline, pp_child_result *res);
/* Same, and also ends the wait early when stop_fd (eventfd, pipe, signalfd; -1 = none) becomes
 * readable: the child then gets term_signal, grace, SIGKILL as at the deadline, and
 * res->stopped is set (timed_out is not). stop_fd is only polled, never read. */
int pp_child_wait_until(pp_child *c, double deadline, int stop_fd, pp_child_result *res);
void pp_child_free(pp_child *c); /* kills (SIGKILL) and reaps a child still running; NULL ok */

/* true when res is a failure (non-zero exit, killed by a signal, timed out or stopped).
 * Writes "exited with code N" / "killed by signal N (NAME)" / "timed out after X s" /
 * "stopped" into buf. */
bool pp_child_describe(const pp_child_result *res, char *buf, size_t len);
/* When res is a failure, writes "<what> <description>; stderr: <last ~1 KiB of stderr, one
 * line>" into out and returns true. */
bool pp_child_failure_text(const pp_child_result *res, const char *what, char *out, size_t len);
/* Logs pp_child_failure_text's line at level (a pp_log_level) when res is a failure. Returns
 * whether it was. */
bool pp_child_log_failure(const pp_child_result *res, int level, const char *what);

/* SIGKILLs the process group of every child started by this process and not yet reaped.
 * Registered with atexit() by the first pp_child_start, so error paths that exit() leave no
 * child behind; may also be called directly. Children stay valid: pp_child_wait/free still reap
 * them. Does nothing in a forked copy of polyprof (only the starting process kills its children).
 * Not async-signal-safe (takes a mutex); crashes are covered by PR_SET_PDEATHSIG. */
void pp_child_kill_all(void);

/* polyprof's private scratch space (docs/security.md): /run/polyprof as root (root-owned,
 * 0700, symlinks refused, re-created if not root-owned), $XDG_RUNTIME_DIR/polyprof or
 * /tmp/polyprof-<uid> rootless (must be ours). Creates a private 0700 directory in it for one
 * run's external profilers; path written to out. The parent of the base must be a directory
 * (root-owned when we are root). The session directory is named "sess-<polyprof pid>-XXXXXX"
 * so pp_tmp_cleanup_stale can find orphans. Nothing a target process reads lives here. */
int pp_session_tmpdir(char *out, size_t len, char *err, size_t errlen);
/* The directory, as seen inside each target's root, for files a target must read or write
 * (async-profiler's library and output): "/tmp/polyprof-<12 random characters>", chosen once per
 * boot and remembered in the scratch space (so a restarted polyprof uses the same library path
 * in a JVM that already loaded it). Its users create it in each target's root themselves, root-
 * owned, without following links (runtimes/java/asprof_fs.c). */
int pp_target_tmpdir(char *out, size_t len, char *err, size_t errlen);
/* The scratch space's path (see pp_session_tmpdir), and its creation and checks alone. */
const char *pp_tmp_base(void);
int pp_tmp_ensure_base(char *err, size_t errlen);
/* Removes a directory tree created by pp_session_tmpdir (never follows symlinks, does not cross
 * into other file systems). A symlink given as path is removed itself. */
void pp_rmtree(const char *path);
/* Removes the session directories in the base left by a polyprof that died without cleaning up:
 * "sess-<pid>-*" directories whose pid is not a running process with our comm (our own pid is
 * kept). Other entries are left alone. Returns the number removed, -1 if the base cannot be
 * read (0 when it does not exist). Call once at start-up. */
int pp_tmp_cleanup_stale(void);
/* For tests only: replaces the base directory (NULL restores the default). The
 * string must outlive its use. Production code never calls this. */
void pp_tmp_set_base(const char *base);

/* Monotonic clock in seconds. */
double pp_mono_now(void);

#endif
