/* The Java runtime's descriptor: detection, modes and options, frames, identity, backends and
 * session hooks (runtimes/runtime.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/java/asprof.h"
#include "runtimes/java/java.h"
#include "runtimes/java/javaopts.h"
#include "runtimes/java/walker.h"
#include "runtimes/runtime.h"

static const pp_choice modes[] = {
    {"auto"}, {"jfr"}, {"ap"}, {"builtin"}, {"disabled"}, {"none", "disabled"}, {NULL}};

#define APONLY                                                                                     \
    "(with --java-mode ap: passed to async-profiler as gProfiler does; docs/java.md maps each to " \
    "upstream 4.x)"
/* async-profiler options: read by asprof_cmd.c. */
#define APF(n)                                                                                     \
    {                                                                                              \
        .name = n, .kind = PP_OPT_NOOP_FLAG, .off = PP_OFF_NONE, .help = APONLY,                   \
        .driver_opt = true                                                                         \
    }
#define APA(n, mv)                                                                                 \
    {                                                                                              \
        .name = n, .kind = PP_OPT_NOOP_ARG, .off = PP_OFF_NONE, .metavar = mv, .help = APONLY,     \
        .driver_opt = true                                                                         \
    }
#define API(n, lo, hi)                                                                             \
    {                                                                                              \
        .name = n, .kind = PP_OPT_NOOP_ARG, .off = PP_OFF_NONE, .ranged = true, .min = lo,         \
        .max = hi, .metavar = "N", .help = APONLY, .driver_opt = true                              \
    }

static const pp_opt options[] = {
    PP_OPT_NOOPF("java-no-version-check", PP_NOTIMPL),
    APA("java-async-profiler-mode", "MODE"),
    API("java-async-profiler-safemode", 0, 511),
    APA("java-async-profiler-features", "LIST"),
    APA("java-async-profiler-args", "ARGS"),
    {.name = "java-safemode",
     .kind = PP_OPT_NOOP_OPTARG,
     .off = PP_OFF_NONE,
     .metavar = "[OPTIONS]",
     .help = "when a profiled JVM dies this way, stop Java profiling for the run: comma list of "
             "profiled-oom, profiled-signaled, hserr (default: all three; bare flag: all "
             "options; general-oom, general-signaled, pid-in-kernel-messages, "
             "java-extended-version-checks, ap-loaded-check are accepted, not acted on)",
     .driver_opt = true},
    API("java-jattach-timeout", 1, INT_MAX),
    API("java-async-profiler-mcache", 0, 255),
    PP_OPT_NOOPF("java-collect-spark-app-name-as-appid", PP_NOTIMPL),
    APF("java-async-profiler-no-report-meminfo"),
    {.name = "java-collect-jvm-flags",
     .kind = PP_OPT_NOOP_OPTARG,
     .off = PP_OFF_NONE,
     .metavar = "[FLAGS]",
     .help = "jvm_flags in the application metadata: default (flags not at their default), all, "
             "none, or a comma list of flag names",
     .driver_opt = true},
    PP_OPT_NOOPF("java-full-hserr", PP_NOTIMPL),
    {.name = "java-jfr-sampler",
     .kind = PP_OPT_NOOP_ARG,
     .off = PP_OFF_NONE,
     .def_str = "auto",
     .driver_opt = true,
     .metavar = "{auto,cputime,execution}",
     .help = "JFR event sampled in --java-mode jfr: cputime (jdk.CPUTimeSample, JDK 25+), "
             "execution (jdk.ExecutionSample + jdk.NativeMethodSample), auto: cputime where the "
             "JVM has it (polyprof's addition; docs/java-driver.md)"},
    APF("java-include-method-modifiers"),
    APA("java-line-numbers", "MODE"),
    APF("java-collect-thread-names"),
};

/* Java frame types as async-profiler and the JFR parser write them: _[j] JIT-compiled, _[i]
 * inlined, _[1] C1-compiled, _[0] interpreted. */
static const char *const suffixes[] = {"_[j]", "_[i]", "_[1]", "_[0]", NULL};

extern const pp_backend pp_java_jfr_backend, pp_java_ap_backend, pp_java_builtin_backend;
/* builtin first: "auto" is builtin, which hands the JVMs its walker does not support (and all of
 * them without the BPF sampler) to async-profiler, else JFR (builtin.c) */
static const pp_backend *const backends[] = {&pp_java_builtin_backend, &pp_java_ap_backend,
                                             &pp_java_jfr_backend, NULL};

static void perfmaps_refresh(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n)
{
    pp_java_options_set(ctx); /* for the hooks without a context: metadata, safemode */
    /* the JVMs polyprof may attach to (not those the in-sampler walker names the frames of):
     * the system sampler names their JIT frames with the maps */
    pp_proc *keep = calloc(n ? n : 1, sizeof(*keep));
    size_t k = 0;
    for (size_t i = 0; keep && i < n; i++)
        if (!pp_java_no_attach(procs[i].pid))
            keep[k++] = procs[i];
    if (keep)
        pp_java_perfmaps_refresh(keep, k);
    free(keep);
}

/* The session's start: auto's hand-over first (what may be attached to), then the maps. */
static void session_begin(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n)
{
    pp_java_options_set(ctx);
    pp_java_auto_sort(ctx, procs, n);
    perfmaps_refresh(ctx, procs, n);
}

static void perfmaps_cleanup(const pp_runtime_ctx *ctx)
{
    (void)ctx;
    pp_java_perfmaps_cleanup();
}

static void at_start(void)
{
    int stale = pp_java_perfmaps_cleanup_stale();
    if (stale > 0)
        pp_info("removed %d JIT perf maps left by a polyprof that did not exit cleanly (their JVMs "
                "are gone)",
                stale);
}

/* docs/decisions.md: async-profiler cannot run twice in one JVM, and each would stop the other's
 * recording; JFR recordings of two profilers coexist. */
static const char *gprofiler_conflict(const char *mode)
{
    char asprof[PATH_MAX];
    if (strcmp(mode, "ap") == 0 ||
        (strcmp(mode, "auto") == 0 && pp_asprof_find(asprof, sizeof(asprof)) == 0))
        return "it would drive async-profiler in the same JVMs as polyprof; stop gProfiler, or run "
               "polyprof with --java-mode jfr or --no-java";
    return NULL;
}

const pp_runtime pp_rt_java = {
    .name = "java",
    .label = "java",
    .match_on = PP_MATCH_MAPS,
    .default_regex = "^.+/libjvm\\.so",
    .regex_option = "maps-regex",
    .regex_help = "PCRE2 matched per executable file mapping to detect Java (default: "
                  "^.+/libjvm\\.so; \"\" disables detection)",
    .interpreter = true,
    .modes = modes,
    .default_mode = "auto",
    .mode_metavar = "{auto,jfr,ap,builtin,disabled}",
    .mode_help = "Java profiler (--no-java: disabled)",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .suffixes = suffixes,
    .metadata = pp_java_metadata,
    .appid = pp_appid_java,
    .backends = backends,
    .at_start = at_start,
    .session_begin = session_begin,
    .before_last_drain = perfmaps_refresh,
    .at_exit = perfmaps_cleanup,
    .gprofiler_conflict = gprofiler_conflict,
    .walker = &pp_java_inwalker,
};
