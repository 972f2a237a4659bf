/* The option table of the CLI (see cli_opts.h), --help and run_arguments. */
#include "orchestrator/cli_opts.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtimes/runtime.h"

#define OFF(field) offsetof(pp_config, field)

static const pp_choice mode_choices[] = {{"cpu"}, {"allocation"}, {"none"}, {NULL}};
static const pp_choice api_version_choices[] = {{"v1"}, {NULL}};
static const pp_choice perf_choices[] = {{"bpf"}, {"perf-event"}, {"disabled"}, {"none"},
                                         {"fp"},  {"smart"},      {"dwarf"},    {NULL}};
/* Shorthands for rows. */
#define FLAG(n, field, d, h)                                                                       \
    {                                                                                              \
        .name = n, .kind = PP_OPT_FLAG, .dest = d, .off = OFF(field), .help = h                    \
    }
#define STR(n, field, d, mv, h)                                                                    \
    {                                                                                              \
        .name = n, .kind = PP_OPT_STR, .dest = d, .off = OFF(field), .metavar = mv, .help = h      \
    }
#define NOOPF PP_OPT_NOOPF
#define NOOPA PP_OPT_NOOPA
#define NOOPI PP_OPT_NOOPI
#define NOTIMPL PP_NOTIMPL

/* The CLI's own rows, in three parts: the runtimes' rows are inserted between them
 * (pp_cli_table_init). */
static const pp_opt head_rows[] = {
    /* ---- output and session ---- */
    {.name = "output-dir",
     .shortopt = 'o',
     .kind = PP_OPT_STR,
     .off = OFF(output_dir),
     .metavar = "DIR",
     .section = "output and session",
     .help = "write profiles (.col, flamegraph .html) to DIR"},
    {.name = "profiling-duration",
     .shortopt = 'd',
     .kind = PP_OPT_INT,
     .dest = "duration",
     .off = OFF(duration),
     .ranged = true,
     .min = 1,
     .max = INT_MAX,
     .def_int = 60,
     .metavar = "SECONDS",
     .help = "length of one profiling session"},
    {.name = "profiling-frequency",
     .shortopt = 'f',
     .kind = PP_OPT_INT,
     .dest = "frequency",
     .off = OFF(frequency),
     .ranged = true,
     .min = 1,
     .max = 1000,
     .def_int = 11,
     .metavar = "HZ",
     .help = "sampling frequency (cpu mode only)"},
    {.name = "continuous",
     .shortopt = 'c',
     .kind = PP_OPT_FLAG,
     .off = OFF(continuous),
     .help = "profile session after session until stopped"},
    FLAG("rotating-output", rotating_output, NULL, "keep only the last profile"),
    {.name = "format",
     .kind = PP_OPT_STR,
     .off = OFF(output_format),
     .metavar = "FORMAT[,FORMAT...]",
     .help = "with -o, the formats written for each session: col (gProfiler's collapsed "
             "stacks, always written), pprof (profile_<time>.pb.gz beside the .col: gzipped "
             "profile.proto for pprof, Pyroscope, speedscope), collapsed-plain "
             "(profile_<time>.folded: 'comm;frames count' lines for "
             "flamegraph.pl, inferno, speedscope); default col"},
    {.name = "pids",
     .kind = PP_OPT_INTLIST,
     .dest = "pids_to_profile",
     .off = OFF(pids),
     .cnt_off = OFF(npids),
     .metavar = "PID[,PID...]",
     .help = "profile only these processes (repeatable, extends the list); those that do not "
             "exist are dropped with a warning, and when none exists polyprof exits 1"},
    {.name = "history-dir",
     .kind = PP_OPT_STR,
     .off = OFF(history_dir),
     .metavar = "DIR",
     .help = "keep every session's stacks in the local history DIR/history.db (SQLite; created "
             "0700/0600), queried with `polyprof history`; default off"},
    {.name = "history-max-bytes",
     .kind = PP_OPT_STR,
     .off = OFF(history_max_bytes_s),
     .def_str = "1G",
     .metavar = "SIZE",
     .help = "with --history-dir, the history's byte cap: over it the oldest sessions are "
             "deleted (K, M, G, T: powers of 1024)"},
    {.name = "history-fine-age",
     .kind = PP_OPT_STR,
     .off = OFF(history_fine_age_s),
     .def_str = "1h",
     .metavar = "AGE",
     .help = "with --history-dir, how long sessions are kept whole; older ones are merged into "
             "per-minute summaries (s, m, h, d, w)"},
    {.name = "history-max-age",
     .kind = PP_OPT_STR,
     .off = OFF(history_max_age_s),
     .def_str = "7d",
     .metavar = "AGE",
     .help = "with --history-dir, how long anything is kept in the history (s, m, h, d, w)"},
};

/* --<rt>-maps-regex rows go here. */

static const pp_opt mid_rows[] = {
    {.name = "min-duration",
     .kind = PP_OPT_INT,
     .off = OFF(min_duration),
     .ranged = true,
     .min = 0,
     .max = INT_MAX,
     .metavar = "SECONDS",
     .help = "skip processes younger than this (0: profile all)"},
    FLAG("insert-dso-name", insert_dso_name, NULL,
         "name the file of native frames: '<symbol> (<file>)' (the system sampler's frames, "
         "and those of the runtime profilers that support it)"),
    {.name = "flamegraph",
     .neg = "no-flamegraph",
     .kind = PP_OPT_NEGFLAG,
     .off = OFF(flamegraph),
     .def_int = 1,
     .help = "with -o, write a flame graph page beside each .col (profile_<time>.html, "
             "last_flamegraph.html; the default; --no-flamegraph: do not)"},
    {.name = "mode",
     .kind = PP_OPT_CHOICE,
     .dest = "profiling_mode",
     .off = OFF(profiling_mode),
     .def_str = "cpu",
     .choices = mode_choices,
     .metavar = "{cpu,allocation,none}",
     .help = "profiling mode"},
    NOOPA("alloc-interval", "SIZE",
          "allocation sampling interval (--mode allocation only) " NOTIMPL),
    NOOPI("max-processes-runtime-profiler", 0, INT_MAX, NOTIMPL),
    NOOPI("skip-system-profilers-above", 0, INT_MAX, NOTIMPL),
    NOOPF("profile-spawned-processes", NOTIMPL),

    /* ---- system sampler ---- */
    {.name = "perf-mode",
     .neg = "no-perf",
     .kind = PP_OPT_PERF,
     .off = OFF(perf_mode),
     .choices = perf_choices,
     .section = "system sampler",
     .metavar = "{bpf,perf-event,disabled,none,fp,smart,dwarf}",
     .help = "system-wide sampler: bpf (default; eBPF, falls back to perf-event when it "
             "cannot load) or perf-event (perf_event ring buffers, no BPF), both unwinding "
             "native stacks by CFI (.eh_frame) with frame pointers where a pc has none; dwarf "
             "and smart mean bpf; fp: bpf with frame pointers only (gProfiler's fp); "
             "disabled/none: no system sampler"},
    {.name = "perf-dwarf-stack-size",
     .kind = PP_OPT_INT,
     .off = OFF(perf_dwarf_stack_size),
     .ranged = true,
     .min = 1,
     .max = 65528,
     .def_int = 8192,
     .metavar = "BYTES",
     .help = "perf-event sampler: bytes of each sample's user stack copied for the CFI "
             "unwinder (rounded up to 8; deeper frames are lost)"},
    NOOPF("perf-no-memory-restart", NOTIMPL),
    NOOPF("perf-use-cgroups", NOTIMPL),
    NOOPI("perf-max-cgroups", 0, INT_MAX, NOTIMPL),
    NOOPI("perf-max-docker-containers", 0, INT_MAX, NOTIMPL),
    NOOPA("perf-event", "EVENT", NOTIMPL),
    NOOPI("perf-event-period", 1, INT_MAX, NOTIMPL),
    NOOPA("hw-events-file", "PATH", NOTIMPL),

};

/* The runtimes section goes here. */

static const pp_opt tail_rows[] = {
    /* ---- identity and metadata ---- */
    {.name = "disable-container-names",
     .kind = PP_OPT_FLAG,
     .dest = "container_names",
     .off = OFF(disable_container_names),
     .json_inv = true,
     .section = "identity and metadata",
     .help = "do not resolve container names"},
    {.name = "disable-application-identifiers",
     .kind = PP_OPT_FLAG,
     .dest = "collect_appids",
     .off = OFF(disable_application_identifiers),
     .json_inv = true,
     .help = "do not add appid frames"},
    {.name = "disable-application-metadata",
     .kind = PP_OPT_FLAG,
     .dest = "application_metadata",
     .off = OFF(disable_application_metadata),
     .json_inv = true,
     .help = "do not collect application metadata"},
    {.name = "disable-metadata-collection",
     .kind = PP_OPT_FLAG,
     .dest = "collect_metadata",
     .off = OFF(disable_metadata_collection),
     .json_inv = true,
     .help = "minimal metadata in the profile header"},
    {.name = "disable-metrics-collection",
     .kind = PP_OPT_FLAG,
     .dest = "collect_metrics",
     .off = OFF(disable_metrics_collection),
     .json_inv = true,
     .help = "do not collect CPU/memory metrics"},
    {.name = "profile-api-version",
     .kind = PP_OPT_CHOICE,
     .off = OFF(profile_api_version),
     .choices = api_version_choices,
     .metavar = "{v1}",
     .help = "use the legacy v1 profile API"},
    STR("external-metadata", external_metadata, NULL, "PATH",
        "JSON file {\"static\": {...}, \"application\": {\"<pid>\": {...}}}, read at every "
        "session: static goes to the header's metadata.external_metadata, application[<pid>] "
        "into that process's metadata; it must have been modified in the last 5 minutes "
        "(missing, invalid or stale at start: exit 1; later: ignored for the session)"),
    {.name = "app-id-args-filter",
     .kind = PP_OPT_STRLIST,
     .dest = "app_id_args_filters",
     .off = OFF(app_id_args_filter),
     .cnt_off = OFF(napp_id_args_filter),
     .metavar = "REGEX",
     .help = "gProfiler adds matching JVM arguments to Java appids; no effect in polyprof yet "
             "(logged at start)"},

    /* ---- process ---- */
    {.name = "verbose",
     .shortopt = 'v',
     .kind = PP_OPT_COUNT,
     .off = OFF(verbose),
     .section = "process",
     .help = "debug logging on stderr"},
    {.name = "log-file",
     .kind = PP_OPT_STR,
     .off = OFF(log_file),
     .def_str = "/var/log/polyprof/polyprof.log",
     .metavar = "PATH",
     .help = "log file (always DEBUG; a symlink or a file not owned by polyprof's user is "
             "refused)"},
    {.name = "log-rotate-max-size",
     .kind = PP_OPT_INT,
     .off = OFF(log_rotate_max_size),
     .ranged = true,
     .min = 1,
     .max = INT_MAX,
     .def_int = 5 * 1024 * 1024,
     .metavar = "BYTES",
     .help = "start a new log file when the log file would reach this size"},
    {.name = "log-rotate-backup-count",
     .kind = PP_OPT_INT,
     .off = OFF(log_rotate_backup_count),
     .ranged = true,
     .min = 1,
     .max = INT_MAX,
     .def_int = 1,
     .metavar = "N",
     .help = "rotated log files kept (PATH.1 ... PATH.N)"},
    {.name = "pid-file",
     .kind = PP_OPT_STR,
     .off = OFF(pid_file),
     .def_str = "/var/run/polyprof.pid",
     .metavar = "PATH",
     .help = "pid file"},
    {.name = "config",
     .kind = PP_OPT_STR,
     .off = OFF(config_file),
     .metavar = "PATH",
     .help = "config file (default: /etc/polyprof/config.ini, else gProfiler's "
             "/etc/gprofiler/config.ini, when it exists)"},
    {.name = "disable-pidns-check",
     .kind = PP_OPT_FLAG,
     .dest = "pid_ns_check",
     .off = OFF(disable_pidns_check),
     .json_inv = true,
     .help = "do not require the init PID namespace"},
    FLAG("rootless", rootless, NULL, "run without root (with --pids)"),
    {.name = "controller-pid",
     .kind = PP_OPT_INT,
     .off = OFF(controller_pid),
     .nullable = true,
     .ranged = true,
     .min = 1,
     .max = INT_MAX,
     .metavar = "PID",
     .help = "in continuous mode, exit when this process exits"},
    STR("heartbeat-file", heartbeat_file, NULL, "PATH",
        "created if missing and touched at the end of every session, for a liveness probe "
        "(a symbolic link there is refused, not followed)"),
    {.name = "dont-disable-core-files",
     .kind = PP_OPT_FLAG,
     .dest = "disable_core_files",
     .off = OFF(dont_disable_core_files),
     .json_inv = true,
     .help = "allow core files for polyprof and its children"},
    NOOPF("diagnostics", NOTIMPL),
    NOOPF("log-usage", NOTIMPL),
    NOOPF("enable-heartbeat-server", NOTIMPL),
    NOOPI("heartbeat-interval", 1, INT_MAX, NOTIMPL),
    NOOPF("enable-hw-metrics-collection", NOTIMPL),
    NOOPA("perfspect-path", "PATH", NOTIMPL),
    NOOPI("perfspect-duration", 1, INT_MAX, NOTIMPL),
    NOOPI("spark-sample-period", INT_MIN, INT_MAX, "deprecated " NOTIMPL),
    NOOPF("collect-spark-metrics", "deprecated " NOTIMPL),
    NOOPF("databricks-job-name-as-service-name", "deprecated " NOTIMPL),
    {.name = "version",
     .kind = PP_OPT_VERSION,
     .off = PP_OFF_NONE,
     .help = "print the version and exit"},
    {.name = "help",
     .shortopt = 'h',
     .kind = PP_OPT_HELP,
     .off = PP_OFF_NONE,
     .scope = PP_SCOPE_BOTH,
     .help = "print this help and exit"},

    /* ---- uploads (also on the upload-file subcommand) ---- */
    {.name = "upload-results",
     .shortopt = 'u',
     .kind = PP_OPT_FLAG,
     .off = OFF(upload),
     .section = "uploads (the options from --token on also apply to upload-file)",
     .help = "upload profiles to the server (needs --token and --service-name)"},
    {.name = "token",
     .kind = PP_OPT_STR,
     .dest = "server_token",
     .off = OFF(token),
     .secret = true,
     .scope = PP_SCOPE_BOTH,
     .metavar = "TOKEN",
     .help = "server token"},
    {.name = "token-file",
     .kind = PP_OPT_STR,
     .off = OFF(token_file),
     .scope = PP_SCOPE_BOTH,
     .metavar = "PATH",
     .help = "read the server token from PATH"},
    {.name = "service-name",
     .kind = PP_OPT_STR,
     .off = OFF(service_name),
     .scope = PP_SCOPE_BOTH,
     .metavar = "NAME",
     .help = "service name"},
    {.name = "server-host",
     .kind = PP_OPT_STR,
     .off = OFF(server_host),
     .def_str = "https://profiler.granulate.io",
     .scope = PP_SCOPE_BOTH,
     .metavar = "URL",
     .help = "profile upload server"},
    {.name = "api-server",
     .alias = "glogger-server",
     .kind = PP_OPT_STR,
     .off = OFF(api_server),
     .def_str = "https://api.granulate.io",
     .scope = PP_SCOPE_BOTH,
     .metavar = "URL",
     .help = "gProfiler's server for logs and heartbeats; no effect: polyprof sends no logs "
             "(logged at start)"},
    {.name = "server-upload-timeout",
     .kind = PP_OPT_INT,
     .off = OFF(server_upload_timeout),
     .ranged = true,
     .min = 1,
     .max = INT_MAX,
     .def_int = 120,
     .scope = PP_SCOPE_BOTH,
     .metavar = "SECONDS",
     .help = "upload request timeout"},
    {.name = "no-verify",
     .kind = PP_OPT_FLAG,
     .dest = "verify",
     .off = OFF(no_verify),
     .json_inv = true,
     .scope = PP_SCOPE_BOTH,
     .help = "do not verify server certificates"},
    {.name = "ca-bundle",
     .kind = PP_OPT_STR,
     .off = OFF(ca_bundle),
     .scope = PP_SCOPE_BOTH,
     .metavar = "PATH",
     .help = "CA certificates for the server"},
    {.name = "curlify-requests",
     .kind = PP_OPT_NOOP_FLAG,
     .off = PP_OFF_NONE,
     .scope = PP_SCOPE_BOTH,
     .help = NOTIMPL},
    {.name = "dont-send-logs",
     .kind = PP_OPT_FLAG,
     .dest = "log_to_server",
     .off = OFF(dont_send_logs),
     .json_inv = true,
     .scope = PP_SCOPE_BOTH,
     .help = "gProfiler: do not send logs to the server; no effect: polyprof never does"},
    {.name = "spool-dir",
     .kind = PP_OPT_STR,
     .off = OFF(spool_dir),
     .def_str = "/var/lib/polyprof/spool",
     .scope = PP_SCOPE_BOTH,
     .metavar = "DIR",
     .help = "profiles waiting for upload"},
    {.name = "pyroscope-server",
     .kind = PP_OPT_STR,
     .off = OFF(pyroscope_server),
     .scope = PP_SCOPE_BOTH,
     .metavar = "URL",
     .help = "also push profiles to this Pyroscope"},
    {.name = "pyroscope-tenant-id",
     .kind = PP_OPT_STR,
     .off = OFF(pyroscope_tenant_id),
     .scope = PP_SCOPE_BOTH,
     .metavar = "ID",
     .help = "Pyroscope X-Scope-OrgID"},
    {.name = "pyroscope-basic-auth-file",
     .kind = PP_OPT_STR,
     .off = OFF(pyroscope_auth_file),
     .secret = true,
     .scope = PP_SCOPE_BOTH,
     .metavar = "PATH",
     .help = "file holding user:password for Pyroscope"},
    {.name = "file-path",
     .kind = PP_OPT_STR,
     .off = OFF(file_path),
     .scope = PP_SCOPE_SUB,
     .metavar = "PATH",
     .help = "upload-file: the .col file to upload"},
    {.name = "resources-dest",
     .kind = PP_OPT_STR,
     .off = OFF(resources_dest),
     .scope = PP_SCOPE_SUB,
     .metavar = "DIR",
     .help = "extract-resources: the directory to copy the resources polyprof finds into "
             "(created when missing)"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const pp_opt *pp_opts;
size_t pp_nopts;
static pp_opt *table;
static char *texts; /* the generated names, metavars and help texts */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void add_rows(const pp_opt *rows, size_t n)
{
    if (n)
        memcpy(table + pp_nopts, rows, n * sizeof(*rows));
    pp_nopts += n;
}

/* A generated string kept for the life of the process (the table's strings). */
static const char *keep(char **at, const char *fmt, const char *a, const char *b)
{
    char *s = *at;
    *at += sprintf(s, fmt, a, b ? b : "") + 1;
    return s;
}

static void build_table(void)
{
    size_t n = COUNT(head_rows) + COUNT(mid_rows) + COUNT(tail_rows), text = 0;
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        n += 2 + rt->noptions;
        text += 3 * (strlen(rt->label) + 32);
    }
    table = calloc(n, sizeof(*table));
    texts = calloc(1, text);
    if (!table || !texts)
        abort();
    char *at = texts;
    add_rows(head_rows, COUNT(head_rows));
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        if (!rt->regex_option)
            continue;
        table[pp_nopts++] = (pp_opt){
            .name = keep(&at, "%s-%s", rt->label, rt->regex_option),
            .kind = PP_OPT_STR,
            .off = offsetof(pp_config, maps_regex[k]),
            .metavar = "REGEX",
            .help = rt->regex_help,
        };
    }
    add_rows(mid_rows, COUNT(mid_rows));
    bool first = true;
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        if (rt->modes) {
            table[pp_nopts++] = (pp_opt){
                .name = keep(&at, "%s-mode%s", rt->label, NULL),
                .neg = keep(&at, "no-%s%s", rt->label, NULL),
                .kind = PP_OPT_CHOICE,
                .off = offsetof(pp_config, runtime_mode[k]),
                .def_str = rt->default_mode,
                .choices = rt->modes,
                .section = first ? "runtimes" : NULL,
                .metavar = rt->mode_metavar,
                .help = rt->mode_help,
            };
            first = false;
        }
        add_rows(rt->options, rt->noptions);
    }
    add_rows(tail_rows, COUNT(tail_rows));
    pp_opts = table;
}

void pp_cli_table_init(void)
{
    pthread_once(&table_once, build_table);
}

const char *pp_opt_dest(const pp_opt *o, char *buf, size_t len)
{
    if (o->dest)
        return o->dest;
    snprintf(buf, len, "%s", o->name);
    for (char *p = buf; *p; p++)
        if (*p == '-')
            *p = '_';
    return buf;
}

void pp_opt_display(const pp_opt *o, char *buf, size_t len)
{
    if (o->shortopt)
        snprintf(buf, len, "-%c/--%s", o->shortopt, o->name);
    else if (o->alias)
        snprintf(buf, len, "--%s/--%s", o->name, o->alias);
    else
        snprintf(buf, len, "--%s", o->name);
}

bool pp_opt_takes_value(const pp_opt *o)
{
    switch (o->kind) {
    case PP_OPT_INT:
    case PP_OPT_STR:
    case PP_OPT_CHOICE:
    case PP_OPT_PERF:
    case PP_OPT_INTLIST:
    case PP_OPT_STRLIST:
    case PP_OPT_NOOP_ARG:
    case PP_OPT_NOOP_OPTARG:
        return true;
    default:
        return false;
    }
}

void pp_cli_print_help(FILE *out)
{
    pp_cli_table_init();
    fprintf(
        out,
        "usage: polyprof [options]\n"
        "       polyprof upload-file --file-path PATH [connectivity options]\n"
        "       polyprof extract-resources --resources-dest DIR\n"
        "       polyprof history --history-dir DIR [--since T] [--until T] [filters] -o FILE   "
        "(see polyprof history --help)\n"
        "       polyprof diff BASE.col TARGET.col [-o OUT.html] [--top N]   (see polyprof diff "
        "--help)\n\n"
        "polyprof %s: whole-host CPU profiler, command-line compatible with gProfiler %s.\n"
        "Every long option can also be set with the environment variable POLYPROF_<NAME> or\n"
        "GPROFILER_<NAME> (NAME: the option in upper case, '-' as '_'), or as 'name = value'\n"
        "in the config file. Precedence: command line > POLYPROF_ > GPROFILER_ > config file.\n",
        PP_VERSION, PP_GPROFILER_COMPAT_VERSION);
    for (size_t i = 0; i < pp_nopts; i++) {
        const pp_opt *o = &pp_opts[i];
        char names[160];
        int n = 0;
        if (o->section)
            fprintf(out, "\n%s:\n", o->section);
        if (o->shortopt)
            n += snprintf(names + n, sizeof(names) - n, "-%c, ", o->shortopt);
        n += snprintf(names + n, sizeof(names) - n, "--%s", o->name);
        if (pp_opt_takes_value(o))
            n += snprintf(names + n, sizeof(names) - n, " %s", o->metavar ? o->metavar : "VALUE");
        if (o->alias)
            n += snprintf(names + n, sizeof(names) - n, ", --%s", o->alias);
        if (o->neg)
            n += snprintf(names + n, sizeof(names) - n, ", --%s", o->neg);
        if (strlen(names) > 40)
            fprintf(out, "  %s\n  %-40s %s", names, "", o->help ? o->help : "");
        else
            fprintf(out, "  %-40s %s", names, o->help ? o->help : "");
        if (o->kind == PP_OPT_INT && o->def_int)
            fprintf(out, " (default: %d)", o->def_int);
        else if (o->def_str)
            fprintf(out, " (default: %s)", o->def_str);
        fputc('\n', out);
    }
}

static const char *perf_mode_name(pp_perf_mode m)
{
    switch (m) {
    case PP_PERF_EVENT:
        return "perf-event";
    case PP_PERF_DISABLED:
        return "disabled";
    default:
        return "bpf";
    }
}

json_t *pp_config_run_arguments(const pp_config *cfg)
{
    pp_cli_table_init();
    json_t *o = json_object();
    const char *base = (const char *)cfg;
    for (size_t i = 0; i < pp_nopts; i++) {
        const pp_opt *opt = &pp_opts[i];
        char buf[96];
        const char *dest = pp_opt_dest(opt, buf, sizeof(buf));
        json_t *v = NULL;
        if (opt->kind == PP_OPT_HELP || opt->kind == PP_OPT_VERSION)
            continue;
        if (opt->secret) {
            json_object_set_new(o, dest, json_null());
            continue;
        }
        switch (opt->kind) {
        case PP_OPT_FLAG:
        case PP_OPT_NEGFLAG: {
            bool b = *(const bool *)(base + opt->off);
            v = json_boolean(opt->json_inv ? !b : b);
            break;
        }
        case PP_OPT_COUNT:
            v = json_boolean(*(const int *)(base + opt->off) > 0);
            break;
        case PP_OPT_INT: {
            int x = *(const int *)(base + opt->off);
            v = (opt->nullable && x == 0) ? json_null() : json_integer(x);
            break;
        }
        case PP_OPT_STR:
        case PP_OPT_CHOICE: {
            const char *s = *(char *const *)(base + opt->off);
            v = s ? json_string(s) : json_null();
            break;
        }
        case PP_OPT_PERF:
            v = json_string(perf_mode_name(cfg->perf_mode));
            json_object_set_new(o, "perf_mode_given",
                                cfg->perf_mode_given ? json_string(cfg->perf_mode_given)
                                                     : json_null());
            break;
        case PP_OPT_INTLIST: {
            const int *arr = *(int *const *)(base + opt->off);
            size_t n = *(const size_t *)(base + opt->cnt_off);
            if (!arr) {
                v = json_null();
                break;
            }
            v = json_array();
            for (size_t k = 0; k < n; k++)
                json_array_append_new(v, json_integer(arr[k]));
            break;
        }
        case PP_OPT_STRLIST: {
            char *const *arr = *(char **const *)(base + opt->off);
            size_t n = *(const size_t *)(base + opt->cnt_off);
            v = json_array();
            for (size_t k = 0; k < n; k++)
                json_array_append_new(v, json_string(arr[k]));
            break;
        }
        case PP_OPT_NOOP_FLAG:
        case PP_OPT_NOOP_ARG:
        case PP_OPT_NOOP_OPTARG: {
            const pp_opt_value *found = NULL;
            for (size_t k = 0; k < cfg->nnamed_options; k++)
                if (strcmp(cfg->named_options[k].name, opt->name) == 0)
                    found = &cfg->named_options[k];
            if (opt->kind == PP_OPT_NOOP_FLAG)
                v = json_boolean(opt->json_inv ? found == NULL : found != NULL);
            else if (found && found->value)
                v = json_string(found->value);
            else if (found)
                v = json_true();
            else
                v = opt->def_str ? json_string(opt->def_str) : json_null();
            break;
        }
        default:
            continue;
        }
        json_object_set_new(o, dest, v ? v : json_null());
    }
    json_object_set_new(o, "subcommand",
                        cfg->command == PP_CMD_UPLOAD_FILE ? json_string("upload-file")
                        : cfg->command == PP_CMD_EXTRACT_RESOURCES
                            ? json_string("extract-resources")
                            : json_null());
    return o;
}

static char *dup_default(const char *s)
{
    char *r = strdup(s);
    if (!r)
        abort();
    return r;
}

void pp_cli_set_defaults(pp_config *cfg)
{
    pp_cli_table_init();
    for (size_t i = 0; i < pp_nopts; i++) {
        const pp_opt *o = &pp_opts[i];
        void *p = pp_opt_field(cfg, o);
        if (!p)
            continue;
        switch (o->kind) {
        case PP_OPT_FLAG:
        case PP_OPT_NEGFLAG:
            *(bool *)p = o->def_int != 0;
            break;
        case PP_OPT_COUNT:
        case PP_OPT_INT:
            *(int *)p = o->def_int;
            break;
        case PP_OPT_STR:
        case PP_OPT_CHOICE:
            *(char **)p = o->def_str ? dup_default(o->def_str) : NULL;
            break;
        case PP_OPT_PERF:
            *(pp_perf_mode *)p = PP_PERF_BPF;
            break;
        default:
            break;
        }
    }
}

void pp_config_free(pp_config *cfg)
{
    pp_cli_table_init();
    if (!cfg)
        return;
    for (size_t i = 0; i < pp_nopts; i++) {
        const pp_opt *o = &pp_opts[i];
        void *p = pp_opt_field(cfg, o);
        if (!p)
            continue;
        switch (o->kind) {
        case PP_OPT_STR:
        case PP_OPT_CHOICE:
            free(*(char **)p);
            break;
        case PP_OPT_INTLIST:
            free(*(int **)p);
            break;
        case PP_OPT_STRLIST: {
            char **arr = *(char ***)p;
            size_t n = *(size_t *)((char *)cfg + o->cnt_off);
            for (size_t k = 0; arr && k < n; k++)
                free(arr[k]);
            free(arr);
            break;
        }
        default:
            break;
        }
    }
    free(cfg->perf_mode_given);
    for (size_t i = 0; i < cfg->nnamed_options; i++) {
        free(cfg->named_options[i].name);
        free(cfg->named_options[i].value);
    }
    free(cfg->named_options);
    memset(cfg, 0, sizeof(*cfg));
}
