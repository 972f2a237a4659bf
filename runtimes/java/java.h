/* The Java runtime's pieces shared between its files, and the hooks the session loop calls.
 *
 * Session hooks (orchestrator/session.c):
 *   pp_java_perfmaps_refresh() runs `Compiler.perfmap` in every JVM of the list, through the
 *   attach client, so that the system sampler names JIT-compiled frames from
 *   /tmp/perf-<nspid>.map. It is called at the session start and shortly before the session's
 *   last drain, also when Java runtime profiling is disabled; it returns at once (the requests
 *   run on worker threads, one at a time per JVM; a JVM that did not answer is asked again
 *   after PP_PERFMAP_RETRY_S). Map files that did not exist
 *   before polyprof's first call are removed by pp_java_perfmaps_cleanup() (at exit; it waits up
 *   to 0.5 s for requests in flight, then ends every attach request of the process,
 *   pp_jattach_cancel_all) or when
 *   their JVM is gone; maps that existed before are left alone. Maps polyprof created are
 *   recorded in its scratch space, so a run after a killed one recognises them:
 *   pp_java_perfmaps_cleanup_stale() (at start-up) removes those of JVMs that are gone, and a
 *   running JVM's recorded map counts as polyprof's.
 *
 * Safemode (`--java-safemode`, javaopts.h; default `profiled-oom,profiled-signaled,hserr`):
 *   once a JVM polyprof profiled dies by OOM, by a fatal signal, or leaves an hs_err file (each
 *   trigger only when listed), every
 *   later Java process gets `[Profiling skipped: disabled due to <reason>]` and polyprof never
 *   attaches to a JVM again in this run (perf maps and attach-based metadata included). */
#ifndef PP_JAVA_H
#define PP_JAVA_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "runtimes/registry.h"
#include "runtimes/runtime.h"

/* A JVM that did not answer Compiler.perfmap (or is stopped) is asked again after this long. */
#define PP_PERFMAP_RETRY_S 30.0
#define PP_PERFMAP_RETRY_TEXT "30 s"

void pp_java_perfmaps_refresh(const pp_proc *procs, size_t n);
/* --java-mode auto with the BPF sampler (builtin.c): registers procs' JVMs with the in-sampler
 * walker and hands those it does not support over to async-profiler or JFR
 * (pp_java_set_handed); called at the session's start, before metadata and perf maps. */
void pp_java_auto_sort(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n);
void pp_java_perfmaps_cleanup(void);

/* Application metadata keys of a JVM (java_version, libjvm_elfid, jvm_flags). */
json_t *pp_java_metadata(int pid);
/* Returns the number of leftover maps removed. */
int pp_java_perfmaps_cleanup_stale(void);

/* Safemode state (process-wide, thread-safe). pp_java_safemode_reason returns false while
 * profiling is allowed, else copies the reason ("profiled-oom", "profiled-signaled", "hserr"). */
bool pp_java_safemode_reason(char *reason, size_t len);
void pp_java_safemode_trigger(const char *reason);

/* Whether polyprof may attach to JVM pid: false with a reason for JVMs it does not support
 * (OpenJ9/J9, whose SIGQUIT writes a javacore; HotSpot major <= 6 per its release file). */
bool pp_java_supported(int pid, char *why, size_t len);

/* Whether JFR was ever initialized in the JVM (its "JFR Recorder Thread" exists). */
bool pp_java_jfr_initialized(int pid);

/* Java, from the command line instead of gProfiler's `jcmd VM.command_line` (same first token of
 * sun.java.command): "java: <jar>" for `-jar <jar>`, "java: <module>[/<class>]" for
 * `-m`/`--module`/`--module=`, else "java: <main class>" = the first argument after argv[0] that
 * is not a launcher option (options -cp/-classpath/--class-path/-p/--module-path/
 * --upgrade-module-path/--add-modules/--limit-modules/--add-reads/--add-exports/--add-opens/
 * --patch-module/--enable-native-access/--source/--describe-module/-d take the next argument;
 * @argfiles are skipped). NULL when there is none (e.g. `java -version`). */
char *pp_appid_java(char *const *argv, int argc, const char *cwd, const char *root);
/* (Spring Boot: a launcher main class started with -cp <jar> gives "java: <Start-Class>" of the
 * jar's manifest; polyprof's addition, docs/decisions.md.) */

/* Opens jar (relative to cwd unless absolute) inside root ("/proc/<pid>/root") without
 * leaving it, read-only and non-blocking. An fd, or -1. */
int pp_java_open_jar(const char *root, const char *cwd, const char *jar);
/* The manifest of that jar (manifest.h). 0, or -1. */
struct pp_jar_manifest;
int pp_java_jar_manifest(const char *root, const char *cwd, const char *jar,
                         struct pp_jar_manifest *m);
/* The JAR that holds the application: X of `-jar X`, or the class path's jar of a Spring Boot
 * launcher; copied into out. NULL when there is none. */
const char *pp_java_app_jar(char *const *argv, int argc, char *out, size_t len);

#endif
