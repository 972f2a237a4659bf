/* Command line, config file and environment, compatible with gProfiler's agent. Precedence: command
 * line > environment (POLYPROF_<OPTION>, then GPROFILER_<OPTION>) > config file (--config, default
 * /etc/polyprof/config.ini, else /etc/gprofiler/config.ini) > defaults. */
#ifndef PP_CLI_H
#define PP_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/options.h"
#include "runtimes/registry.h"

#define PP_VERSION "0.1.0"
/* The gProfiler agent version polyprof is compatible with (reported as agent_version). */
#define PP_GPROFILER_COMPAT_VERSION "1.57.1"

typedef enum {
    PP_PERF_BPF = 0,  /* eBPF sampler, falls back to perf-event when it does not load */
    PP_PERF_EVENT,    /* perf_event mmap ring buffers, no BPF */
    PP_PERF_DISABLED, /* no system sampler: runtime stacks concatenated unscaled */
} pp_perf_mode;

typedef enum { PP_CMD_PROFILE = 0, PP_CMD_UPLOAD_FILE, PP_CMD_EXTRACT_RESOURCES } pp_command;

typedef struct pp_config {
    pp_command command;

    /* output and session */
    char *output_dir;     /* -o/--output-dir, NULL if not given */
    int duration;         /* -d/--profiling-duration, seconds, default 60 */
    int frequency;        /* -f/--profiling-frequency, Hz, default 11, 1..1000 */
    bool continuous;      /* -c/--continuous */
    bool rotating_output; /* --rotating-output */
    char *output_format;  /* --format: comma list of col, pprof, collapsed-plain */
    bool output_pprof;    /* ... it names pprof: profile_<time>.pb.gz beside each .col */
    bool output_plain;    /* ... it names collapsed-plain: profile_<time>.folded */
    int *pids;            /* --pids (comma lists, repeatable), NULL if none */
    size_t npids;
    char *history_dir;          /* --history-dir DIR: the local history store, NULL: off */
    char *history_max_bytes_s;  /* --history-max-bytes (default "1G") ... */
    char *history_fine_age_s;   /* --history-fine-age (default "1h") ... */
    char *history_max_age_s;    /* --history-max-age (default "7d") ... */
    uint64_t history_max_bytes; /* ... parsed: bytes */
    int64_t history_fine_age, history_max_age; /* ... parsed: seconds */
    int min_duration;                          /* --min-duration, seconds, default 0 */
    /* --<rt>-maps-regex / --<rt>-exe-regex overrides of discovery's regexes, indexed by
     * pp_proc_kind; NULL = built-in, "" = that kind is never detected by its rule. */
    char *maps_regex[PP_KIND_COUNT];
    bool insert_dso_name;      /* --insert-dso-name */
    bool flamegraph;           /* --flamegraph / --no-flamegraph (default true) */
    char *profiling_mode;      /* --mode: "cpu" (default), "allocation", "none" */
    pp_perf_mode perf_mode;    /* --perf-mode */
    char *perf_mode_given;     /* the --perf-mode text as given (e.g. "fp"), NULL if default */
    bool perf_fp_only;         /* --perf-mode fp: user stacks by frame pointers only, no CFI */
    int perf_dwarf_stack_size; /* --perf-dwarf-stack-size: user stack bytes per perf-event
                                  sample for the CFI unwinder (default 8192) */

    /* --<rt>-mode values after alias mapping ("none" -> "disabled"; --no-<rt> sets
     * "disabled"), indexed by pp_proc_kind; NULL for kinds without a mode option. Defaults are
     * each runtime's default_mode. */
    char *runtime_mode[PP_KIND_COUNT];

    /* identity, metadata */
    bool disable_container_names;
    bool disable_application_identifiers;
    bool disable_application_metadata;
    bool disable_metadata_collection;
    bool disable_metrics_collection;
    char *profile_api_version; /* --profile-api-version, only "v1" accepted, NULL if not given */
    char *external_metadata;   /* --external-metadata PATH */
    char **app_id_args_filter; /* --app-id-args-filter REGEX (repeatable) */
    size_t napp_id_args_filter;

    /* process */
    int verbose;                 /* -v/--verbose */
    char *log_file;              /* --log-file, default /var/log/polyprof/polyprof.log */
    int log_rotate_max_size;     /* --log-rotate-max-size, bytes, default 5 MiB */
    int log_rotate_backup_count; /* --log-rotate-backup-count, default 1 */
    char *pid_file;              /* --pid-file, default /var/run/polyprof.pid */
    char *config_file;           /* --config, NULL if none given */
    bool disable_pidns_check;    /* --disable-pidns-check */
    bool rootless;               /* --rootless */
    int controller_pid;          /* --controller-pid, 0 if none */
    char *heartbeat_file;        /* --heartbeat-file */
    bool dont_disable_core_files;

    /* uploads (issue 6 wires these) */
    bool upload;               /* -u/--upload-results */
    char *token;               /* --token, or --token-file contents, or env; never logged */
    char *token_file;          /* --token-file PATH */
    char *service_name;        /* --service-name */
    char *server_host;         /* --server-host, default https://profiler.granulate.io */
    char *api_server;          /* --api-server / --glogger-server */
    int server_upload_timeout; /* --server-upload-timeout, default 120 */
    bool no_verify;            /* --no-verify */
    char *ca_bundle;           /* --ca-bundle PATH */
    bool dont_send_logs;       /* --dont-send-logs */
    char *spool_dir;           /* --spool-dir, default /var/lib/polyprof/spool */
    char *pyroscope_server;    /* --pyroscope-server URL */
    char *pyroscope_tenant_id; /* --pyroscope-tenant-id (X-Scope-OrgID) */
    char *pyroscope_auth_file; /* --pyroscope-basic-auth-file PATH ("user:password") */

    /* upload-file subcommand */
    char *file_path; /* --file-path */
    /* extract-resources subcommand */
    char *resources_dest; /* --resources-dest */

    /* Options stored by name (no field here) that were given, in option-table order: gProfiler
     * options without effect, and the runtimes' own options (pp_runtime_opt). */
    pp_opt_value *named_options;
    size_t nnamed_options;
} pp_config;

/* Input file caps (docs/security.md): the config file, and files holding a secret (--token-file,
 * --pyroscope-basic-auth-file). Larger files are refused (exit 2). */
#define PP_CLI_MAX_CONFIG (1u << 20)
#define PP_CLI_MAX_SECRET_FILE (64u << 10)

/* Default config file read when --config is not given and the file exists; else gProfiler's
 * default config file when it exists. Tests may point them elsewhere. */
extern const char *pp_cli_default_config_path;
extern const char *pp_cli_gprofiler_config_path;

enum {
    PP_CLI_OK = 0,        /* proceed with *cfg */
    PP_CLI_EXIT_OK = 100, /* --help / --version printed: exit 0 */
    PP_CLI_USAGE = 2,     /* usage error: message in err, exit 2 */
    PP_CLI_FAIL = 1,      /* runtime failure (e.g. unreadable --config / --token-file): exit 1 */
};

/* Parses argv (argv[0] is the program name), environment envp (NULL-terminated, may be NULL)
 * and the config file. On PP_CLI_USAGE/PP_CLI_FAIL a one-line message (what is wrong and what
 * to do) is written to err. --help and --version print to out. cfg must be freed with
 * pp_config_free in every case. */
int pp_cli_parse(int argc, char **argv, char **envp, FILE *out, pp_config *cfg, char *err,
                 size_t errlen);
void pp_config_free(pp_config *cfg);

/* The run_arguments object for the profile header: every option by its gProfiler dest name
 * (e.g. "output_dir", "frequency", "duration", "perf_mode", "java_mode"...), with the token and
 * any credential replaced by null. New reference. */
json_t *pp_config_run_arguments(const pp_config *cfg);

#endif
