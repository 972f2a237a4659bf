/* Private to the Python driver: the two runtime profilers behind --python-mode (the built-in
 * sampler, sampler.c; the py-spy launcher, pyspy.c) and helpers they share with driver.c. Both
 * profilers follow the driver contract of runtimes/runtime.h (start/collect/stop/free). */
#ifndef PP_PYTHON_INT_H
#define PP_PYTHON_INT_H

#include <stddef.h>

#include "runtimes/runtime.h"

#define PP_PY_MAX_HZ 100   /* built-in sampler: -f clamped to this */
#define PP_PYSPY_MAX_HZ 50 /* py-spy: gProfiler's MAX_FREQUENCY */

void *pp_pysampler_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n,
                         double deadline);
int pp_pysampler_collect(void *session, pp_profile *out);
void pp_pysampler_stop(void *session);
void pp_pysampler_free(void *session);

void *pp_pyspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline);
int pp_pyspy_collect(void *session, pp_profile *out);
void pp_pyspy_stop(void *session);
void pp_pyspy_free(void *session);

/* Parses py-spy's raw output (one "frame;frame;...;frame count" per line, root first, split at
 * the last space; malformed lines are skipped) into dst, a pid entry of out. With a root
 * (/proc/<pid>/root), frames get package annotations (pkgversions.h), pyver being the process's
 * Python version. text is modified. Returns the number of lines added. */
size_t pp_pyspy_parse(char *text, pp_profile *out, pp_pid_profile *dst, const char *root,
                      const char *pyver);

/* Canonical path of the py-spy executable (pp_resource_tool("python/py-spy"): the resource
 * search path of base/resource.h, then PATH). 0 or -1 (not found). */
int pp_pyspy_find(char *out, size_t len);

/* The exact Python version ("3.11.7") of pid from its libpython or executable, or -1. */
int pp_python_process_version(int pid, char *out, size_t len);

/* The comm of pid as /proc/<pid>/comm has it (newline stripped); fallback when unreadable. */
void pp_python_comm(int pid, const char *fallback, char *out, size_t len);

/* Application metadata keys of a Python process (driver.c). */
json_t *pp_python_metadata(int pid);

#endif
