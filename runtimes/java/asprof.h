/* async-profiler launcher (`--java-mode ap`): runs the user's installed async-profiler
 * (`java/asprof` on the resource search path of base/resource.h, else `asprof` on PATH) with
 * gProfiler's exact load/start/stop command lines (spec gprofiler-compat.md §5.3: interval from
 * -f, cpu/itimer choice, file=<out>,collapsed,ann,sig, log file, timeout), as supervised
 * children (base/child.h), and parses its collapsed output into a profile. One session per JVM;
 * called from the Java driver's thread (start, collect and free from the same thread). */
#ifndef PP_ASPROF_H
#define PP_ASPROF_H

#include <stddef.h>

#include "merge/profile.h"
#include "runtimes/runtime.h"

/* Canonical path of asprof (pp_resource_tool("java/asprof"): the resource search path, then
 * PATH) written to out; -1 when absent. */
int pp_asprof_find(char *out, size_t len);

typedef struct pp_asprof_session pp_asprof_session;

/* Loads and starts async-profiler in JVM pid until deadline (monotonic seconds). NULL with a
 * one-line reason in err (written into the pid's "[Profiling error: …]" stack by the driver). */
pp_asprof_session *pp_asprof_start(const char *asprof, int pid, const pp_runtime_ctx *ctx,
                                   double deadline, char *err, size_t errlen);
/* Stops the profiler, reads and parses its output into pp (an entry of prof). 0, or -1 with
 * err. Returns by the deadline plus a few seconds. */
int pp_asprof_collect(pp_asprof_session *s, pp_profile *prof, pp_pid_profile *pp, char *err,
                      size_t errlen);
/* Frees the session, killing any child still running and removing its files. NULL ok. */
void pp_asprof_free(pp_asprof_session *s);

/* Parses async-profiler collapsed text ("frame;...;leaf count" lines) into pp. Malformed lines
 * are skipped and counted. Returns the number of lines added. */
long pp_asprof_parse_collapsed(const char *text, size_t len, pp_profile *prof, pp_pid_profile *pp,
                               size_t *bad_lines);

#endif
