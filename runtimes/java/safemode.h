/* How profiled JVMs died, for the Java safemode (see java.h).
 *
 * Exit statuses come from the kernel's process-events connector (NETLINK_CONNECTOR,
 * CN_IDX_PROC; root only), read by the Java driver's thread while it waits for the session
 * end, so it costs nothing between events and needs no thread of its own. OOM kills are
 * recognised from /dev/kmsg records written after the watch opened ("Killed process <pid>",
 * "oom-kill:...,pid=<pid>,"). Limits: when the connector is unavailable (no CAP_NET_ADMIN,
 * kernel without CONFIG_PROC_EVENTS) or its socket buffer overflowed, a death is only
 * classified by OOM records and hs_err files; a SIGKILL/SIGSEGV/SIGABRT death without either
 * then goes unnoticed. */
#ifndef PP_JAVA_SAFEMODE_H
#define PP_JAVA_SAFEMODE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pp_java_watch pp_java_watch;

/* Never NULL unless out of memory; the sources that cannot be opened are just absent. */
pp_java_watch *pp_java_watch_open(void);
void pp_java_watch_close(pp_java_watch *w);
/* The descriptor to poll for readability, or -1. */
int pp_java_watch_fd(const pp_java_watch *w);
/* Reads pending events; remembers the exit status of pids[0..n) that exited and the OOM kills
 * among them. Call it once more after a death before asking for its reason. */
void pp_java_watch_read(pp_java_watch *w, const int *pids, size_t n);
/* The safemode reason for pid, gone: "profiled-oom", "profiled-signaled", or NULL (normal
 * exit, SIGTERM / exit code 143, or unknown). hserr files are checked by the caller. */
const char *pp_java_watch_reason(pp_java_watch *w, int pid);

/* Whether a wait status is a fatal Java signal (SIGABRT, SIGKILL, SIGSEGV; exit code 143, the
 * JVM's exit after SIGTERM, is not). *sig receives the signal. Unit-tested. */
bool pp_java_fatal_status(int status, int *sig);
/* Whether a /dev/kmsg record reports an OOM kill of pid. Unit-tested. */
bool pp_java_kmsg_oom(const char *record, int pid);

#endif
