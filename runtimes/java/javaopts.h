/* `--java-safemode` and `--java-collect-jvm-flags`, read from the session context at each
 * session start (pp_java_options_set) and kept process-wide for the hooks that have no context
 * (metadata, safemode triggers). Thread-safe. */
#ifndef PP_JAVA_JAVAOPTS_H
#define PP_JAVA_JAVAOPTS_H

#include <stdbool.h>

#include <jansson.h>

#include "runtimes/runtime.h"

/* Safemode options (gProfiler's names); a bit each. */
enum {
    PP_SAFEMODE_PROFILED_OOM = 1 << 0,
    PP_SAFEMODE_PROFILED_SIGNALED = 1 << 1,
    PP_SAFEMODE_HSERR = 1 << 2,
    PP_SAFEMODE_GENERAL_OOM = 1 << 3,
    PP_SAFEMODE_GENERAL_SIGNALED = 1 << 4,
    PP_SAFEMODE_PID_IN_KERNEL_MESSAGES = 1 << 5,
    PP_SAFEMODE_EXTENDED_VERSION_CHECKS = 1 << 6,
    PP_SAFEMODE_AP_LOADED_CHECK = 1 << 7,
};

/* Parses a --java-safemode value: NULL (not given) the default
 * "profiled-oom,profiled-signaled,hserr", "" (bare flag) or "all" every option, else a comma
 * list ("none" or a list of nothing: none). -1 with the unknown word in bad. Unit-tested. */
int pp_java_safemode_parse(const char *v, unsigned *mask, char *bad, size_t badlen);

/* Reads both options from ctx (logging a bad value once and keeping the default). */
void pp_java_options_set(const pp_runtime_ctx *ctx);

/* Whether polyprof must not attach to JVM pid (no metadata request, no JIT perf map: the
 * in-sampler walker names its Java frames itself): with --java-mode builtin, every JVM; with
 * auto while the sampler walks, every JVM but those handed over to async-profiler or JFR
 * (pp_java_handed_over); with ap or jfr, none. */
bool pp_java_no_attach(int pid);
/* Records whether JVM pid (started at start_ticks) is handed over to async-profiler or JFR in
 * auto mode (the in-sampler walker does not support it: it may be attached to) or walked again
 * (on false). At most PP_JAVA_HANDED_MAX are kept: when full, one of a JVM that is gone is
 * replaced, else one in turn. Unit-tested. */
#define PP_JAVA_HANDED_MAX 1024
void pp_java_set_handed(int pid, unsigned long long start_ticks, bool on);
/* Whether that JVM is handed over (a pid reused since is not). */
bool pp_java_is_handed(int pid, unsigned long long start_ticks);

/* Whether safemode acts on a trigger ("profiled-oom", "profiled-signaled", "hserr"). */
bool pp_java_safemode_on(const char *reason);

/* jvm_flags from `VM.flags -all` output per --java-collect-jvm-flags: `default`, `all`, `none`
 * or a comma list of flag names (those of `all` whose name is listed). New reference. */
json_t *pp_java_jvm_flags(const char *vmflags);
/* Whether --java-collect-jvm-flags is none (VM.flags is then not requested). */
bool pp_java_jvm_flags_none(void);
/* The same for an explicit option value (NULL: default). Unit-tested. */
json_t *pp_java_jvm_flags_for(const char *vmflags, const char *option);

#endif
