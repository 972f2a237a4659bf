/* async-profiler (`--java-mode ap`): polyprof reads libasyncProfiler.so out of async-profiler's
 * jar (`java/async-profiler.jar` on the resource search path of base/resource.h; Maven Central's
 * tools.profiler:async-profiler), places it in the JVM's mount namespace, and drives it through
 * its own attach client (`load <lib> true <args>`, attach.h) with gProfiler's start/stop
 * arguments mapped to upstream async-profiler 4.x (docs/java.md), then parses its collapsed
 * output into a profile. No asprof or jattach process. One session per JVM; called from the
 * Java driver's thread (start, collect and free from the same thread). */
#ifndef PP_ASPROF_H
#define PP_ASPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"
#include "runtimes/runtime.h"

/* Canonical path of async-profiler's jar (pp_resource_lookup of "java/async-profiler.jar", a
 * data resource: never looked up on PATH) written to out; -1 when absent. */
int pp_asprof_find(char *out, size_t len);

/* The library of this platform read out of a jar, with the jar's version. */
typedef struct pp_asprof_lib {
    char version[64]; /* Maven pom.properties' version ([A-Za-z0-9._-]), else "size-<n>" */
    unsigned char *data;
    size_t size;
} pp_asprof_lib;

/* Reads <platform>/libasyncProfiler.so (linux-x64 or linux-arm64) and the version out of jar.
 * NULL with a one-line reason in err. */
pp_asprof_lib *pp_asprof_lib_load(const char *jar, char *err, size_t errlen);
void pp_asprof_lib_free(pp_asprof_lib *lib);

typedef struct pp_asprof_session pp_asprof_session;

/* Loads (unless the JVM has it already) and starts async-profiler in JVM pid until deadline
 * (monotonic seconds). NULL with a one-line reason in err (written into the pid's
 * "[Profiling error: …]" stack by the driver). */
pp_asprof_session *pp_asprof_start(const pp_asprof_lib *lib, int pid, const pp_runtime_ctx *ctx,
                                   double deadline, char *err, size_t errlen);
/* Stops the profiler, reads and parses its output into pp (an entry of prof). 0, or -1 with
 * err. Returns by the deadline plus a few seconds. */
int pp_asprof_collect(pp_asprof_session *s, pp_profile *prof, pp_pid_profile *pp, char *err,
                      size_t errlen);
/* Frees the session, stopping a profiler started but not collected, and removing its files. NULL
 * ok. */
void pp_asprof_free(pp_asprof_session *s);

/* Parses async-profiler collapsed text ("frame;...;leaf count" lines) into pp. Malformed lines
 * are skipped and counted. Returns the number of lines added. */
long pp_asprof_parse_collapsed(const char *text, size_t len, pp_profile *prof, pp_pid_profile *pp,
                               size_t *bad_lines);

/* With opts: a "[<name> tid=N]" root frame (async-profiler's `threads`) gives the stack its
 * thread (pp_pid_add_tid; mapped by sampler_tid when set) and is kept only with thread_frames. */
typedef struct pp_asprof_parse_opts {
    bool thread_frames;
    uint32_t (*sampler_tid)(void *arg, long tid);
    void *arg;
} pp_asprof_parse_opts;
long pp_asprof_parse_threads(const char *text, size_t len, pp_profile *prof, pp_pid_profile *pp,
                             const pp_asprof_parse_opts *opts, size_t *bad_lines);

#endif
