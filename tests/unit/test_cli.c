/* Unit tests for the command line / env / config file parser (orchestrator/cli.c). */
#include "tests/unit/testutil.h"

#include <getopt.h>
#include <jansson.h>

#include "orchestrator/cli.h"
#include "runtimes/runtime.h"

/* An option stored by name, as given, or NULL. */
static const pp_opt_value *named(const pp_config *c, const char *name)
{
    for (size_t i = 0; i < c->nnamed_options; i++)
        if (strcmp(c->named_options[i].name, name) == 0)
            return &c->named_options[i];
    return NULL;
}

#define MAXARGS 32

static pp_config cfg;
static char err[1024];
static char *outbuf;
static size_t outlen;

static void setup(void)
{
    pp_test_quiet_log();
    pp_cli_default_config_path = "/nonexistent/polyprof-test/config.ini";
    pp_cli_gprofiler_config_path = "/nonexistent/polyprof-test/gprofiler.ini";
    memset(&cfg, 0, sizeof(cfg));
    err[0] = '\0';
    outbuf = NULL;
    outlen = 0;
}

static void teardown(void)
{
    pp_config_free(&cfg);
    free(outbuf);
    outbuf = NULL;
}

TestSuite(cli, .init = setup, .fini = teardown);

/* Parses {"polyprof", args..., NULL} with the given environment. */
static int parse_env(char **envp, const char *const *args)
{
    char *argv[MAXARGS + 2];
    int argc = 0;
    argv[argc++] = "polyprof";
    for (; args && *args; args++) {
        cr_assert(argc < MAXARGS);
        argv[argc++] = (char *)*args;
    }
    argv[argc] = NULL;
    pp_config_free(&cfg);
    free(outbuf);
    outbuf = NULL;
    FILE *out = open_memstream(&outbuf, &outlen);
    cr_assert(out != NULL);
    optind = 0;
    int rc = pp_cli_parse(argc, argv, envp, out, &cfg, err, sizeof(err));
    fclose(out);
    return rc;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define PARSE(...) parse_env(NULL, ARGS(__VA_ARGS__))
#define PARSE_ENV(env, ...) parse_env(env, ARGS(__VA_ARGS__))

/* run_arguments[key] as compact JSON text (caller frees). */
static char *run_arg(const char *key)
{
    json_t *ra = pp_config_run_arguments(&cfg);
    json_t *v = json_object_get(ra, key);
    cr_assert(v != NULL, "run_arguments has no key %s", key);
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(ra);
    return s;
}

static void expect_run_arg(const char *key, const char *expected)
{
    char *s = run_arg(key);
    cr_expect_str_eq(s, expected, "run_arguments[%s]", key);
    free(s);
}

Test(cli, defaults)
{
    cr_assert_eq(PARSE("-o", "/tmp/out"), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.command, PP_CMD_PROFILE);
    cr_expect_str_eq(cfg.output_dir, "/tmp/out");
    cr_expect_eq(cfg.duration, 60);
    cr_expect_eq(cfg.frequency, 11);
    cr_expect(!cfg.continuous && !cfg.rotating_output && !cfg.insert_dso_name);
    cr_expect_null(cfg.pids);
    cr_expect_eq(cfg.npids, 0);
    cr_expect_eq(cfg.min_duration, 0);
    cr_expect(cfg.flamegraph);
    cr_expect_str_eq(cfg.profiling_mode, "cpu");
    cr_expect_eq(cfg.perf_mode, PP_PERF_BPF);
    cr_expect_null(cfg.perf_mode_given);
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_JAVA], "auto");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_PYTHON], "auto");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_RUBY], "auto");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_PHP], "auto");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_DOTNET], "disabled");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_NODE], "disabled");
    cr_expect_null(named(&cfg, "no-python-versions"));
    cr_expect_null(named(&cfg, "php-proc-filter"), "the default is the row's, not stored");
    cr_expect(!cfg.disable_container_names && !cfg.disable_application_identifiers);
    cr_expect(!cfg.disable_application_metadata && !cfg.disable_metadata_collection);
    cr_expect(!cfg.disable_metrics_collection);
    cr_expect_null(cfg.profile_api_version);
    cr_expect_null(cfg.external_metadata);
    cr_expect_eq(cfg.napp_id_args_filter, 0);
    cr_expect_eq(cfg.verbose, 0);
    cr_expect_str_eq(cfg.log_file, "/var/log/polyprof/polyprof.log");
    cr_expect_str_eq(cfg.pid_file, "/var/run/polyprof.pid");
    cr_expect_null(cfg.config_file);
    cr_expect(!cfg.disable_pidns_check && !cfg.rootless && !cfg.dont_disable_core_files);
    cr_expect_eq(cfg.controller_pid, 0);
    cr_expect_null(cfg.heartbeat_file);
    cr_expect(!cfg.upload);
    cr_expect_null(cfg.token);
    cr_expect_null(cfg.service_name);
    cr_expect_str_eq(cfg.server_host, "https://profiler.granulate.io");
    cr_expect_str_eq(cfg.api_server, "https://api.granulate.io");
    cr_expect_eq(cfg.server_upload_timeout, 120);
    cr_expect(!cfg.no_verify && !cfg.dont_send_logs);
    cr_expect_null(cfg.ca_bundle);
    cr_expect_str_eq(cfg.spool_dir, "/var/lib/polyprof/spool");
    cr_expect_null(cfg.pyroscope_server);
    cr_expect_null(cfg.file_path);
    cr_expect_eq(cfg.nnamed_options, 0);
}

/* One option on the command line (after -o X) and its run_arguments value. */
typedef struct {
    const char *args[6];
    const char *key;
    const char *json;
} opt_case;

static const opt_case opt_cases[] = {
    {{"-d", "5"}, "duration", "5"},
    {{"--profiling-duration", "7"}, "duration", "7"},
    {{"--profiling-duration=8"}, "duration", "8"},
    {{"-d9"}, "duration", "9"},
    {{"-f", "99"}, "frequency", "99"},
    {{"--profiling-frequency=1000"}, "frequency", "1000"},
    {{"-c"}, "continuous", "true"},
    {{"--continuous"}, "continuous", "true"},
    {{"--rotating-output"}, "rotating_output", "true"},
    {{"--pids", "1,2"}, "pids_to_profile", "[1,2]"},
    {{"--pids=3", "--pids", "4,5"}, "pids_to_profile", "[3,4,5]"},
    {{"--min-duration", "30"}, "min_duration", "30"},
    {{"--insert-dso-name"}, "insert_dso_name", "true"},
    {{"--no-flamegraph"}, "flamegraph", "false"},
    {{"--format", "pprof,collapsed-plain"}, "format", "\"pprof,collapsed-plain\""},
    {{"--no-flamegraph", "--flamegraph"}, "flamegraph", "true"},
    {{"--mode", "none"}, "profiling_mode", "\"none\""},
    {{"--mode=allocation"}, "profiling_mode", "\"allocation\""},
    {{"--perf-mode", "perf-event"}, "perf_mode", "\"perf-event\""},
    {{"--perf-mode", "disabled"}, "perf_mode", "\"disabled\""},
    {{"--perf-mode", "none"}, "perf_mode", "\"disabled\""},
    {{"--perf-mode", "fp"}, "perf_mode", "\"bpf\""},
    {{"--perf-mode", "fp"}, "perf_mode_given", "\"fp\""},
    {{"--no-perf"}, "perf_mode", "\"disabled\""},
    {{"--java-mode", "jfr"}, "java_mode", "\"jfr\""},
    {{"--java-mode", "ap"}, "java_mode", "\"ap\""},
    {{"--no-java"}, "java_mode", "\"disabled\""},
    {{"--java-mode", "none"}, "java_mode", "\"disabled\""},
    {{"--python-mode", "py-spy"}, "python_mode", "\"pyspy\""},
    {{"--python-mode", "pyspy"}, "python_mode", "\"pyspy\""},
    {{"--python-mode", "pyperf"}, "python_mode", "\"builtin\""},
    {{"--python-mode=builtin"}, "python_mode", "\"builtin\""},
    {{"--no-python"}, "python_mode", "\"disabled\""},
    {{"--no-python-versions"}, "python_versions", "false"},
    {{"--ruby-mode", "rbspy"}, "ruby_mode", "\"rbspy\""},
    {{"--no-ruby"}, "ruby_mode", "\"disabled\""},
    {{"--php-mode", "phpspy"}, "php_mode", "\"phpspy\""},
    {{"--php-mode", "builtin"}, "php_mode", "\"builtin\""},
    {{"--php-proc-filter", "php"}, "php_proc_filter", "\"php\""},
    {{"--dotnet-mode", "dotnet-trace"}, "dotnet_mode", "\"dotnet-trace\""},
    {{"--dotnet-mode", "none"}, "dotnet_mode", "\"disabled\""},
    {{"--dotnet-mode", "auto"}, "dotnet_mode", "\"builtin\""},
    {{"--nodejs-mode", "attach-maps"}, "nodejs_mode", "\"attach-maps\""},
    {{"--nodejs-mode", "attach-maps"}, "nodejs_mode", "\"attach-maps\""},
    {{"--no-nodejs"}, "nodejs_mode", "\"disabled\""},
    {{"--disable-container-names"}, "container_names", "false"},
    {{"--disable-application-identifiers"}, "collect_appids", "false"},
    {{"--disable-application-metadata"}, "application_metadata", "false"},
    {{"--disable-metadata-collection"}, "collect_metadata", "false"},
    {{"--disable-metrics-collection"}, "collect_metrics", "false"},
    {{"--profile-api-version", "v1"}, "profile_api_version", "\"v1\""},
    {{"--external-metadata", "/m.json"}, "external_metadata", "\"/m.json\""},
    {{"--app-id-args-filter", "a.*", "--app-id-args-filter=b"},
     "app_id_args_filters",
     "[\"a.*\",\"b\"]"},
    {{"-v"}, "verbose", "true"},
    {{"--log-file", "/tmp/l.log"}, "log_file", "\"/tmp/l.log\""},
    {{"--pid-file", "/tmp/p.pid"}, "pid_file", "\"/tmp/p.pid\""},
    {{"--disable-pidns-check"}, "pid_ns_check", "false"},
    {{"--rootless"}, "rootless", "true"},
    {{"--controller-pid", "42"}, "controller_pid", "42"},
    {{"--heartbeat-file", "/tmp/hb"}, "heartbeat_file", "\"/tmp/hb\""},
    {{"--dont-disable-core-files"}, "disable_core_files", "false"},
    {{"--server-host", "http://h"}, "server_host", "\"http://h\""},
    {{"--api-server", "http://a"}, "api_server", "\"http://a\""},
    {{"--glogger-server", "http://g"}, "api_server", "\"http://g\""},
    {{"--server-upload-timeout", "5"}, "server_upload_timeout", "5"},
    {{"--no-verify"}, "verify", "false"},
    {{"--ca-bundle", "/ca.pem"}, "ca_bundle", "\"/ca.pem\""},
    {{"--dont-send-logs"}, "log_to_server", "false"},
    {{"--spool-dir", "/sp"}, "spool_dir", "\"/sp\""},
    {{"--pyroscope-server", "http://p"}, "pyroscope_server", "\"http://p\""},
    {{"--pyroscope-tenant-id", "t1"}, "pyroscope_tenant_id", "\"t1\""},
    {{"--pyroscope-basic-auth-file", "/auth"}, "pyroscope_basic_auth_file", "null"},
    {{"--service-name", "svc"}, "service_name", "\"svc\""},
    {{"--token", "SECRET"}, "server_token", "null"},
    {{"--perf-dwarf-stack-size", "16384"}, "perf_dwarf_stack_size", "16384"},
    {{"--perf-no-memory-restart"}, "perf_no_memory_restart", "true"},
    {{"--java-safemode"}, "java_safemode", "true"},
    {{"--java-safemode", "hserr"}, "java_safemode", "\"hserr\""},
    {{"--java-safemode=x,y"}, "java_safemode", "\"x,y\""},
    {{"--python-pyspy-process", "1,2", "--python-pyspy-process", "3"},
     "python_pyspy_process",
     "\"1,2,3\""},
    {{"--java-async-profiler-mode", "itimer"}, "java_async_profiler_mode", "\"itimer\""},
};

Test(cli, every_option_parsed)
{
    for (size_t i = 0; i < sizeof(opt_cases) / sizeof(opt_cases[0]); i++) {
        const opt_case *t = &opt_cases[i];
        const char *args[10] = {"-o", "/tmp/out"};
        size_t n = 2;
        for (size_t k = 0; k < 6 && t->args[k]; k++)
            args[n++] = t->args[k];
        args[n] = NULL;
        int rc = parse_env(NULL, args);
        cr_assert_eq(rc, PP_CLI_OK, "case %zu (%s): %s", i, t->args[0], err);
        expect_run_arg(t->key, t->json);
    }
}

Test(cli, struct_fields)
{
    cr_assert_eq(PARSE("-o", "o", "--pids", "10", "--perf-mode=dwarf", "--controller-pid=7",
                       "--app-id-args-filter", "x", "--external-metadata", "/em",
                       "--heartbeat-file", "/hb", "-vv"),
                 PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.npids, 1);
    cr_expect_eq(cfg.pids[0], 10);
    cr_expect_eq(cfg.perf_mode, PP_PERF_BPF);
    cr_expect_str_eq(cfg.perf_mode_given, "dwarf");
    cr_expect_not(cfg.perf_fp_only, "dwarf unwinds by CFI");
    cr_expect_eq(cfg.perf_dwarf_stack_size, 8192);
    cr_expect_eq(cfg.controller_pid, 7);
    cr_expect_eq(cfg.napp_id_args_filter, 1);
    cr_expect_str_eq(cfg.app_id_args_filter[0], "x");
    cr_expect_str_eq(cfg.external_metadata, "/em");
    cr_expect_str_eq(cfg.heartbeat_file, "/hb");
    cr_expect_eq(cfg.verbose, 2);
}

Test(cli, combined_short_flags)
{
    cr_assert_eq(PARSE("-cu", "--token=t", "--service-name", "s", "-d", "5"), PP_CLI_OK, "%s", err);
    cr_expect(cfg.continuous);
    cr_expect(cfg.upload);
    cr_expect_str_eq(cfg.token, "t");
    cr_expect_eq(cfg.duration, 5);
    cr_assert_eq(PARSE("-cvo/tmp/x"), PP_CLI_OK, "%s", err);
    cr_expect(cfg.continuous);
    cr_expect_eq(cfg.verbose, 1);
    cr_expect_str_eq(cfg.output_dir, "/tmp/x");
}

Test(cli, abbreviated_long_option)
{
    cr_assert_eq(PARSE("--output=/x", "--rotating"), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.output_dir, "/x");
    cr_expect(cfg.rotating_output);
}

Test(cli, perf_mode_mapping)
{
    const char *gp[] = {"fp", "smart", "dwarf"};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(PARSE("-o", "o", "--perf-mode", gp[i]), PP_CLI_OK);
        cr_expect_eq(cfg.perf_mode, PP_PERF_BPF);
        cr_expect_str_eq(cfg.perf_mode_given, gp[i]);
    }
    cr_assert_eq(PARSE("-o", "o", "--perf-mode", "none"), PP_CLI_OK);
    cr_expect_eq(cfg.perf_mode, PP_PERF_DISABLED);
    cr_assert_eq(PARSE("-o", "o", "--perf-mode", "perf-event"), PP_CLI_OK);
    cr_expect_eq(cfg.perf_mode, PP_PERF_EVENT);
    cr_assert_eq(PARSE("-o", "o", "--perf-mode", "bpf"), PP_CLI_OK);
    cr_expect_eq(cfg.perf_mode, PP_PERF_BPF);
    cr_expect_str_eq(cfg.perf_mode_given, "bpf");
}

Test(cli, runtime_none_and_no_flags)
{
    cr_assert_eq(PARSE("-o", "o", "--java-mode", "none", "--python-mode", "none", "--ruby-mode",
                       "none", "--php-mode", "none", "--dotnet-mode", "none", "--nodejs-mode",
                       "none"),
                 PP_CLI_OK, "%s", err);
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (pp_runtime_get(k)->modes)
            cr_expect_str_eq(cfg.runtime_mode[k], "disabled", "%s", pp_runtime_get(k)->label);
    cr_assert_eq(PARSE("-o", "o", "--no-java", "--no-python", "--no-ruby", "--no-php",
                       "--no-dotnet", "--no-nodejs"),
                 PP_CLI_OK, "%s", err);
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (pp_runtime_get(k)->modes)
            cr_expect_str_eq(cfg.runtime_mode[k], "disabled", "%s", pp_runtime_get(k)->label);
    /* last one wins */
    cr_assert_eq(PARSE("-o", "o", "--no-java", "--java-mode", "ap"), PP_CLI_OK);
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_JAVA], "ap");
}

Test(cli, runtime_labels_name_the_options)
{
    cr_expect_str_eq(pp_runtime_get(PP_KIND_JAVA)->label, "java");
    cr_expect_str_eq(pp_runtime_get(PP_KIND_PYTHON)->label, "python");
    cr_expect_str_eq(pp_runtime_get(PP_KIND_RUBY)->label, "ruby");
    cr_expect_str_eq(pp_runtime_get(PP_KIND_PHP)->label, "php");
    cr_expect_str_eq(pp_runtime_get(PP_KIND_DOTNET)->label, "dotnet");
    cr_expect_str_eq(pp_runtime_get(PP_KIND_NODE)->label, "nodejs");
    cr_expect_null(pp_runtime_get(PP_KIND_GO)->modes, "Go has no --go-mode");
}

Test(cli, pids_extend)
{
    cr_assert_eq(PARSE("-o", "o", "--pids", "1,2", "--pids=3", "--pids", " 4 , 5"), PP_CLI_OK, "%s",
                 err);
    cr_assert_eq(cfg.npids, 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(cfg.pids[i], i + 1);
}

Test(cli, env_both_prefixes_and_precedence)
{
    char *env[] = {"GPROFILER_OUTPUT_DIR=/g",
                   "GPROFILER_PROFILING_FREQUENCY=20",
                   "POLYPROF_PROFILING_FREQUENCY=30",
                   "GPROFILER_SERVICE_NAME=gsvc",
                   "GPROFILER_CONTINUOUS=true",
                   "POLYPROF_NO_FLAMEGRAPH=yes",
                   "GPROFILER_JAVA_MODE=none",
                   "GPROFILER_PIDS=7,8",
                   "UNRELATED=1",
                   NULL};
    cr_assert_eq(PARSE_ENV(env, "-d", "3"), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.output_dir, "/g");
    cr_expect_eq(cfg.frequency, 30);
    cr_expect_str_eq(cfg.service_name, "gsvc");
    cr_expect(cfg.continuous);
    cr_expect(!cfg.flamegraph);
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_JAVA], "disabled");
    cr_expect_eq(cfg.npids, 2);
    cr_expect_eq(cfg.duration, 3);

    /* command line beats both; a list from the command line replaces the env list */
    cr_assert_eq(PARSE_ENV(env, "-f", "40", "-o", "/c", "--pids", "9"), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.frequency, 40);
    cr_expect_str_eq(cfg.output_dir, "/c");
    cr_assert_eq(cfg.npids, 1);
    cr_expect_eq(cfg.pids[0], 9);
}

Test(cli, env_flags_false_and_upload)
{
    char *env[] = {"GPROFILER_CONTINUOUS=false",
                   "POLYPROF_UPLOAD_RESULTS=1",
                   "GPROFILER_TOKEN=tok",
                   "GPROFILER_SERVICE_NAME=svc",
                   "POLYPROF_NO_JAVA=false",
                   "GPROFILER_NO_PYTHON=true",
                   "GPROFILER_VERSION=1.2.3",
                   "GPROFILER_IN_CONTAINER=1",
                   "POLYPROF_NO_PYTHON_VERSIONS=true",
                   NULL};
    cr_assert_eq(PARSE_ENV(env, NULL), PP_CLI_OK, "%s", err);
    cr_expect(!cfg.continuous);
    cr_expect(cfg.upload);
    cr_expect_str_eq(cfg.token, "tok");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_JAVA], "auto");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_PYTHON], "disabled");
    cr_expect_not_null(named(&cfg, "no-python-versions"));
}

Test(cli, env_dont_send_logs_any_value)
{
    char *env1[] = {"GPROFILER_DONT_SEND_LOGS=whatever", NULL};
    cr_assert_eq(PARSE_ENV(env1, "-o", "o"), PP_CLI_OK, "%s", err);
    cr_expect(cfg.dont_send_logs);
    char *env2[] = {"GPROFILER_DONT_SEND_LOGS=", NULL};
    cr_assert_eq(PARSE_ENV(env2, "-o", "o"), PP_CLI_OK, "%s", err);
    cr_expect(cfg.dont_send_logs);
    char *env3[] = {"POLYPROF_DONT_SEND_LOGS=false", NULL};
    cr_assert_eq(PARSE_ENV(env3, "-o", "o"), PP_CLI_OK, "%s", err);
    cr_expect(!cfg.dont_send_logs);
}

Test(cli, env_errors)
{
    char *env1[] = {"GPROFILER_CONTINUOUS=maybe", NULL};
    cr_expect_eq(PARSE_ENV(env1, "-o", "o"), PP_CLI_USAGE);
    cr_expect_str_eq(err, "unexpected value 'maybe' for --continuous: expecting 'true', 'false', "
                          "'yes', 'no', '1' or '0' (from environment variable "
                          "GPROFILER_CONTINUOUS)");
    char *env2[] = {"POLYPROF_PROFILING_FREQUENCY=0", NULL};
    cr_expect_eq(PARSE_ENV(env2, "-o", "o"), PP_CLI_USAGE);
    cr_expect_str_eq(err, "argument -f/--profiling-frequency: must be between 1 and 1000 (got 0) "
                          "(from environment variable POLYPROF_PROFILING_FREQUENCY)");
}

static const char config_text[] = "# polyprof config\n"
                                  "; another comment\n"
                                  "[polyprof]\n"
                                  "output-dir = /from/config\n"
                                  "profiling-frequency: 50\n"
                                  "--profiling-duration = 15\n"
                                  "continuous = true\n"
                                  "flamegraph = false\n"
                                  "service_name = \"cfg svc\"\n"
                                  "pids = [11, 12]\n"
                                  "app-id-args-filter = [a, b]\n"
                                  "no-java = true\n"
                                  "perf-mode = smart\n"
                                  "\n";

Test(cli, config_file_and_precedence)
{
    char *dir = pp_test_mkdtemp();
    char path[256];
    snprintf(path, sizeof(path), "%s/config.ini", dir);
    pp_test_write_file(path, config_text, strlen(config_text));

    cr_assert_eq(PARSE("--config", path), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.config_file, path);
    cr_expect_str_eq(cfg.output_dir, "/from/config");
    cr_expect_eq(cfg.frequency, 50);
    cr_expect_eq(cfg.duration, 15);
    cr_expect(cfg.continuous);
    cr_expect(!cfg.flamegraph);
    cr_expect_str_eq(cfg.service_name, "cfg svc");
    cr_assert_eq(cfg.npids, 2);
    cr_expect_eq(cfg.pids[1], 12);
    cr_assert_eq(cfg.napp_id_args_filter, 2);
    cr_expect_str_eq(cfg.app_id_args_filter[1], "b");
    cr_expect_str_eq(cfg.runtime_mode[PP_KIND_JAVA], "disabled");
    cr_expect_str_eq(cfg.perf_mode_given, "smart");

    /* env beats config, command line beats env */
    char *env[] = {"GPROFILER_PROFILING_FREQUENCY=60", "POLYPROF_PROFILING_DURATION=16", NULL};
    cr_assert_eq(PARSE_ENV(env, "--config", path, "-d", "17"), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.frequency, 60);
    cr_expect_eq(cfg.duration, 17);
    cr_assert_eq(PARSE_ENV(env, "--config", path), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.duration, 16);

    /* config path from the environment, and the default config path */
    char envcfg[300];
    snprintf(envcfg, sizeof(envcfg), "GPROFILER_CONFIG=%s", path);
    char *env2[] = {envcfg, NULL};
    cr_assert_eq(PARSE_ENV(env2, NULL), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.frequency, 50);
    pp_cli_default_config_path = path;
    cr_assert_eq(PARSE(NULL), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.output_dir, "/from/config");
    cr_expect_null(cfg.config_file);
    pp_test_rmtree(dir);
}

/* gProfiler's default config file is read when polyprof's is absent, never as well. */
Test(cli, gprofiler_config_file_fallback)
{
    char *dir = pp_test_mkdtemp();
    char gp[256], pp[256];
    snprintf(gp, sizeof(gp), "%s/gprofiler.ini", dir);
    snprintf(pp, sizeof(pp), "%s/polyprof.ini", dir);
    const char *gtext = "[gprofiler]\noutput-dir = /from/gprofiler\nprofiling-frequency = 7\n";
    pp_test_write_file(gp, gtext, strlen(gtext));
    pp_cli_gprofiler_config_path = gp;
    cr_assert_eq(PARSE(NULL), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.output_dir, "/from/gprofiler");
    cr_expect_eq(cfg.frequency, 7);
    pp_config_free(&cfg);
    const char *ptext = "output-dir = /from/polyprof\n";
    pp_test_write_file(pp, ptext, strlen(ptext));
    pp_cli_default_config_path = pp;
    cr_assert_eq(PARSE(NULL), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.output_dir, "/from/polyprof");
    cr_expect_eq(cfg.frequency, 11, "gProfiler's file not read when polyprof's exists");
    pp_config_free(&cfg);
    /* --config wins over both */
    cr_assert_eq(PARSE("--config", gp), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.output_dir, "/from/gprofiler");
    pp_test_rmtree(dir);
}

/* Log rotation options are real (gProfiler's defaults: 5 MiB, 1 backup). */
Test(cli, log_rotation_options)
{
    cr_assert_eq(PARSE("-o", "o"), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.log_rotate_max_size, 5 * 1024 * 1024);
    cr_expect_eq(cfg.log_rotate_backup_count, 1);
    cr_assert_eq(PARSE("-o", "o", "--log-rotate-max-size", "100", "--log-rotate-backup-count", "3"),
                 PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.log_rotate_max_size, 100);
    cr_expect_eq(cfg.log_rotate_backup_count, 3);
    cr_expect_eq(cfg.nnamed_options, 0);
    cr_expect_eq(PARSE("-o", "o", "--log-rotate-backup-count", "0"), PP_CLI_USAGE);
}

/* A config or token file that is not a regular file, or too large, is a usage error (exit 2)
 * with a message naming it; a FIFO never blocks; binary bytes are never echoed raw. */
Test(cli, input_files_are_bounded_regular_files, .timeout = 20)
{
    char *dir = pp_test_mkdtemp();
    char fifo[256], big[256], bin[256];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_expect_eq(PARSE("-o", "o", "--config", fifo), PP_CLI_USAGE);
    cr_expect(strstr(err, "is a FIFO") && strstr(err, fifo), "%s", err);
    cr_expect_eq(PARSE("-o", "o", "--config", dir), PP_CLI_USAGE);
    cr_expect(strstr(err, "is a directory"), "%s", err);
    cr_expect_eq(PARSE("-o", "o", "--config", "/dev/zero"), PP_CLI_USAGE);
    cr_expect(strstr(err, "is a character device"), "%s", err);
    snprintf(big, sizeof(big), "%s/big.ini", dir);
    int fd = open(big, O_WRONLY | O_CREAT, 0600);
    cr_assert(fd >= 0 && ftruncate(fd, (off_t)PP_CLI_MAX_CONFIG + 1) == 0);
    close(fd);
    cr_expect_eq(PARSE("-o", "o", "--config", big), PP_CLI_USAGE);
    cr_expect(strstr(err, "too large") && strstr(err, "the limit is 1 MiB"), "%s", err);
    /* a binary file: its bytes are escaped in the message */
    snprintf(bin, sizeof(bin), "%s/bin.ini", dir);
    pp_test_write_file(bin, "\x1b[2J\x7f\xff=1\n", 8);
    cr_expect_eq(PARSE("-o", "o", "--config", bin), PP_CLI_USAGE);
    cr_expect(strstr(err, "\\x1b[2J\\x7f\\xff"), "%s", err);
    for (const char *p = err; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "raw byte in %s", err);
    cr_expect_eq(PARSE("-u", "--service-name", "s", "--token-file", fifo), PP_CLI_USAGE);
    cr_expect(strstr(err, "--token-file") && strstr(err, "is a FIFO"), "%s", err);
    cr_expect_eq(PARSE("-u", "--service-name", "s", "--token-file", "/dev/zero"), PP_CLI_USAGE);
    pp_test_rmtree(dir);
}

Test(cli, config_file_errors)
{
    char *dir = pp_test_mkdtemp();
    char path[256];
    snprintf(path, sizeof(path), "%s/bad.ini", dir);
    const char *text = "output-dir = /x\nno-such-option = 1\n";
    pp_test_write_file(path, text, strlen(text));
    cr_expect_eq(PARSE("--config", path), PP_CLI_USAGE);
    char want[512];
    snprintf(want, sizeof(want),
             "unrecognized arguments: --no-such-option; see --help (in config file %s line 2)",
             path);
    cr_expect_str_eq(err, want);

    snprintf(path, sizeof(path), "%s/missing.ini", dir);
    cr_expect_eq(PARSE("-o", "o", "--config", path), PP_CLI_FAIL);
    cr_expect(strstr(err, path) != NULL, "%s", err);
    pp_test_rmtree(dir);
}

/* Usage errors: argv and the exact message. */
typedef struct {
    const char *args[8];
    const char *msg;
} usage_case;

static const usage_case usage_cases[] = {
    {{"-o", "o", "--foo"}, "unrecognized arguments: --foo; see --help"},
    {{"-o", "o", "--tokn=SECRET"}, "unrecognized arguments: --tokn; see --help"},
    {{"-o", "o", "-x"}, "unrecognized arguments: -x; see --help"},
    {{"-o", "o", "stray"}, "unrecognized arguments: stray; see --help"},
    {{"-o", "o", "--", "a", "b"}, "unrecognized arguments: a b; see --help"},
    {{"-o"}, "argument -o/--output-dir: expected one argument"},
    {{"-o", "o", "--pids"}, "argument --pids: expected one argument"},
    {{"-o", "o", "--continuous=yes"}, "argument -c/--continuous: ignored explicit argument 'yes'"},
    {{"-o", "o", "--pyroscope", "x"},
     "ambiguous option: --pyroscope could match --pyroscope-server, --pyroscope-tenant-id, "
     "--pyroscope-basic-auth-file"},
    {{"-o", "o", "-d", "abc"}, "argument -d/--profiling-duration: invalid int value: 'abc'"},
    {{"-o", "o", "-d", "0"}, "argument -d/--profiling-duration: must be at least 1 (got 0)"},
    {{"-o", "o", "-f", "0"},
     "argument -f/--profiling-frequency: must be between 1 and 1000 (got 0)"},
    {{"-o", "o", "-f", "1001"},
     "argument -f/--profiling-frequency: must be between 1 and 1000 (got 1001)"},
    {{"-o", "o", "-f", "5x"}, "argument -f/--profiling-frequency: invalid int value: '5x'"},
    {{"-o", "o", "--server-upload-timeout", "0"},
     "argument --server-upload-timeout: must be at least 1 (got 0)"},
    {{"-o", "o", "--min-duration", "-1"}, "argument --min-duration: must be at least 0 (got -1)"},
    {{"-o", "o", "--perf-dwarf-stack-size", "65529"},
     "argument --perf-dwarf-stack-size: must be between 1 and 65528 (got 65529)"},
    {{"-o", "o", "--mode", "gpu"},
     "argument --mode: invalid choice: 'gpu' (choose from 'cpu', 'allocation', 'none')"},
    {{"-o", "o", "--perf-mode", "lbr"},
     "argument --perf-mode: invalid choice: 'lbr' (choose from 'bpf', 'perf-event', "
     "'disabled', "
     "'none', 'fp', 'smart', 'dwarf')"},
    {{"-o", "o", "--java-mode", "x"},
     "argument --java-mode: invalid choice: 'x' (choose from 'auto', 'jfr', 'ap', 'builtin', "
     "'disabled', 'none')"},
    {{"-o", "o", "--python-mode", "x"},
     "argument --python-mode: invalid choice: 'x' (choose from 'auto', 'builtin', 'pyspy', "
     "'py-spy', 'pyperf', 'disabled', 'none')"},
    {{"-o", "o", "--ruby-mode", "x"},
     "argument --ruby-mode: invalid choice: 'x' (choose from 'auto', 'builtin', 'rbspy', "
     "'disabled', 'none')"},
    {{"-o", "o", "--php-mode", "x"},
     "argument --php-mode: invalid choice: 'x' (choose from 'auto', 'builtin', 'phpspy', "
     "'disabled', 'none')"},
    {{"-o", "o", "--dotnet-mode", "x"},
     "argument --dotnet-mode: invalid choice: 'x' (choose from 'auto', 'builtin', "
     "'dotnet-trace', 'disabled', 'none')"},
    {{"-o", "o", "--nodejs-mode", "x"},
     "argument --nodejs-mode: invalid choice: 'x' (choose from 'auto', 'attach-maps', 'perf', "
     "'disabled', 'none')"},
    {{"-o", "o", "--profile-api-version", "v2"},
     "argument --profile-api-version: invalid choice: 'v2' (choose from 'v1')"},
    {{"-o", "o", "--pids", "1,x"},
     "argument --pids: invalid pid 'x' (expected a comma-separated list of positive integers)"},
    {{"-o", "o", "--pids", "0"},
     "argument --pids: invalid pid '0' (expected a comma-separated list of positive integers)"},
    {{"-o", "o", "--pids", "1,,2"},
     "argument --pids: invalid pid list '1,,2' (expected a comma-separated list of positive "
     "integers)"},
    {{"-c"}, "must provide either --output-dir (-o) or --upload-results (-u)"},
    {{"-o", "o", "--format", "col,svg"},
     "--format: unknown format 'svg'; give a comma list of col, pprof, collapsed-plain"},
    {{"-o", "o", "--format", "col,,pprof"},
     "--format: unknown format ''; give a comma list of col, pprof, collapsed-plain"},
    {{"-u", "--token", "t", "--service-name", "s", "--format", "pprof"},
     "--format pprof writes files beside the .col: give -o/--output-dir"},
    {{"-u", "--service-name", "s"},
     "--upload-results requires --token (or --token-file, or the POLYPROF_TOKEN / "
     "GPROFILER_TOKEN environment variable)"},
    {{"-u", "--token", "t"}, "--upload-results requires --service-name"},
    {{"-o", "o", "--alloc-interval", "1mb"},
     "--alloc-interval is only allowed with --mode allocation"},
    {{"-o", "o", "--mode", "allocation", "-f", "10"},
     "-f/--profiling-frequency is not allowed with --mode allocation (it applies to cpu "
     "profiling only)"},
    {{"-o", "o", "--pids", "1", "--profile-spawned-processes"},
     "--pids is not allowed together with --profile-spawned-processes"},
    {{"upload-file", "--token", "t", "--service-name", "s"},
     "upload-file: the following arguments are required: --file-path"},
    {{"upload-file", "--file-path", "f", "-o", "x"}, "unrecognized arguments: -o; see --help"},
    {{"upload-file", "--file-path", "f", "--token", "t"},
     "--upload-results requires --service-name"},
    /* gProfiler's argparse: --resources-dest is required */
    {{"extract-resources"},
     "extract-resources: the following arguments are required: --resources-dest"},
    {{"extract-resources", "--resources-dest", "d", "-o", "x"},
     "unrecognized arguments: -o; see --help"},
    {{"extract-resources", "--resources-dest", "d", "--file-path", "f"},
     "--file-path belongs to upload-file, not extract-resources"},
    {{"upload-file", "--file-path", "f", "--resources-dest", "d", "--token=t", "--service-name=s"},
     "--resources-dest belongs to extract-resources, not upload-file"},
    {{"-o", "o", "--resources-dest", "d"}, "unrecognized arguments: --resources-dest; see --help"},
};

Test(cli, usage_errors)
{
    for (size_t i = 0; i < sizeof(usage_cases) / sizeof(usage_cases[0]); i++) {
        int rc = parse_env(NULL, usage_cases[i].args);
        cr_expect_eq(rc, PP_CLI_USAGE, "case %zu (%s): rc %d", i, usage_cases[i].msg, rc);
        cr_expect_str_eq(err, usage_cases[i].msg, "case %zu: got \"%s\"", i, err);
        pp_config_free(&cfg);
    }
}

Test(cli, output_formats)
{
    cr_assert_eq(PARSE("-o", "o"), PP_CLI_OK, "%s", err);
    cr_expect(!cfg.output_pprof && !cfg.output_plain, "col only by default");
    cr_assert_eq(PARSE("-o", "o", "--format", "col,pprof"), PP_CLI_OK, "%s", err);
    cr_expect(cfg.output_pprof && !cfg.output_plain);
    cr_assert_eq(PARSE("-o", "o", "--format=collapsed-plain"), PP_CLI_OK, "%s", err);
    cr_expect(!cfg.output_pprof && cfg.output_plain);
    cr_assert_eq(PARSE("-u", "--token", "t", "--service-name", "s", "--format", "col"), PP_CLI_OK,
                 "%s", err);
}

Test(cli, mode_none_and_allocation_are_not_errors)
{
    cr_assert_eq(PARSE("-o", "o", "--mode", "none"), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.profiling_mode, "none");
    cr_assert_eq(PARSE("-o", "o", "--mode", "allocation", "--alloc-interval", "1mb"), PP_CLI_OK,
                 "%s", err);
    cr_expect_str_eq(cfg.profiling_mode, "allocation");
    cr_assert_eq(cfg.nnamed_options, 1);
    cr_expect_str_eq(cfg.named_options[0].name, "alloc-interval");
    cr_expect_str_eq(cfg.named_options[0].value, "1mb");
}

Test(cli, help_and_version)
{
    cr_assert_eq(PARSE("--help"), PP_CLI_EXIT_OK);
    cr_expect(strstr(outbuf, "usage: polyprof") != NULL);
    cr_expect(strstr(outbuf, "-f, --profiling-frequency HZ") != NULL, "%s", outbuf);
    cr_expect(strstr(outbuf, "--no-flamegraph") != NULL);
    cr_expect(strstr(outbuf, "--api-server URL, --glogger-server") != NULL);
    cr_assert_eq(PARSE("-h"), PP_CLI_EXIT_OK);
    cr_assert_eq(PARSE("upload-file", "--help"), PP_CLI_EXIT_OK);
    cr_assert_eq(PARSE("--version"), PP_CLI_EXIT_OK);
    cr_expect_str_eq(outbuf, "polyprof " PP_VERSION
                             " (gProfiler-compatible " PP_GPROFILER_COMPAT_VERSION ")\n");
    /* --help wins even when the rest would not validate */
    cr_assert_eq(PARSE("-c", "--help"), PP_CLI_EXIT_OK);
}

Test(cli, token_never_in_run_arguments)
{
    cr_assert_eq(PARSE("-u", "--token", "SUPERSECRET", "--service-name", "svc",
                       "--pyroscope-basic-auth-file", "/auth"),
                 PP_CLI_OK, "%s", err);
    json_t *ra = pp_config_run_arguments(&cfg);
    char *s = json_dumps(ra, JSON_COMPACT);
    cr_expect(strstr(s, "SUPERSECRET") == NULL, "%s", s);
    cr_expect(json_is_null(json_object_get(ra, "server_token")));
    cr_expect(json_is_null(json_object_get(ra, "pyroscope_basic_auth_file")));
    cr_expect(json_is_true(json_object_get(ra, "upload_results")));
    cr_expect_str_eq(json_string_value(json_object_get(ra, "service_name")), "svc");
    cr_expect(json_is_integer(json_object_get(ra, "frequency")));
    cr_expect(json_is_null(json_object_get(ra, "pids_to_profile")));
    cr_expect(json_is_array(json_object_get(ra, "app_id_args_filters")));
    cr_expect(json_is_null(json_object_get(ra, "subcommand")));
    free(s);
    json_decref(ra);
}

Test(cli, token_file)
{
    char *dir = pp_test_mkdtemp();
    char path[256];
    snprintf(path, sizeof(path), "%s/token", dir);
    pp_test_write_file(path, "  FILETOKEN\n\n", 13);
    cr_assert_eq(PARSE("-u", "--token-file", path, "--service-name", "s"), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.token, "FILETOKEN");
    cr_expect_str_eq(cfg.token_file, path);
    json_t *ra = pp_config_run_arguments(&cfg);
    char *s = json_dumps(ra, JSON_COMPACT);
    cr_expect(strstr(s, "FILETOKEN") == NULL);
    free(s);
    json_decref(ra);

    /* token file from the environment */
    char envtf[300];
    snprintf(envtf, sizeof(envtf), "GPROFILER_TOKEN_FILE=%s", path);
    char *env[] = {envtf, NULL};
    cr_assert_eq(PARSE_ENV(env, "-u", "--service-name", "s"), PP_CLI_OK, "%s", err);
    cr_expect_str_eq(cfg.token, "FILETOKEN");
    /* an explicit --token beats a token file from a lower source */
    cr_assert_eq(PARSE_ENV(env, "-u", "--service-name", "s", "--token", "cli"), PP_CLI_OK);
    cr_expect_str_eq(cfg.token, "cli");

    snprintf(path, sizeof(path), "%s/nope", dir);
    cr_expect_eq(PARSE("-u", "--token-file", path, "--service-name", "s"), PP_CLI_FAIL);
    cr_expect(strstr(err, path) != NULL, "%s", err);
    pp_test_rmtree(dir);
}

Test(cli, extract_resources_subcommand)
{
    /* no -o or -u needed; main options may come first */
    cr_assert_eq(PARSE("-v", "extract-resources", "--resources-dest", "/r"), PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.command, PP_CMD_EXTRACT_RESOURCES);
    cr_expect_str_eq(cfg.resources_dest, "/r");
    cr_expect_eq(cfg.verbose, 1);
    expect_run_arg("subcommand", "\"extract-resources\"");
    expect_run_arg("resources_dest", "\"/r\"");
}

Test(cli, upload_file_subcommand)
{
    cr_assert_eq(PARSE("-v", "upload-file", "--file-path", "/p.col", "--token", "t",
                       "--service-name", "s", "--server-host=http://h", "--no-verify"),
                 PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.command, PP_CMD_UPLOAD_FILE);
    cr_expect(cfg.upload);
    cr_expect_str_eq(cfg.file_path, "/p.col");
    cr_expect_str_eq(cfg.server_host, "http://h");
    cr_expect(cfg.no_verify);
    cr_expect_eq(cfg.verbose, 1);
    expect_run_arg("subcommand", "\"upload-file\"");
    expect_run_arg("file_path", "\"/p.col\"");
    /* main options before the subcommand */
    char *env[] = {"GPROFILER_TOKEN=t", "GPROFILER_SERVICE_NAME=s", NULL};
    cr_assert_eq(PARSE_ENV(env, "--service-name", "x", "upload-file", "--file-path=/q"), PP_CLI_OK,
                 "%s", err);
    cr_expect_str_eq(cfg.service_name, "x");
    cr_expect_str_eq(cfg.file_path, "/q");
}

Test(cli, accepted_named_options)
{
    cr_assert_eq(
        PARSE("-o", "o", "--perf-max-docker-containers", "8192", "--perf-no-memory-restart",
              "--java-async-profiler-mode=cpu", "--java-safemode", "--python-pyspy-process", "1",
              "--max-processes-runtime-profiler", "3", "--diagnostics", "--curlify-requests"),
        PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.nnamed_options, 8);
    int found = 0;
    for (size_t i = 0; i < cfg.nnamed_options; i++) {
        if (strcmp(cfg.named_options[i].name, "perf-max-docker-containers") == 0) {
            cr_expect_str_eq(cfg.named_options[i].value, "8192");
            found++;
        }
        if (strcmp(cfg.named_options[i].name, "java-safemode") == 0) {
            cr_expect_null(cfg.named_options[i].value);
            found++;
        }
    }
    cr_expect_eq(found, 2);
    cr_assert_eq(PARSE("-o", "o", "--skip-system-profilers-above", "5", "--perf-use-cgroups",
                       "--perf-max-cgroups", "3", "--enable-heartbeat-server",
                       "--heartbeat-interval", "10", "--log-usage", "--spark-sample-period", "60",
                       "--collect-spark-metrics", "--databricks-job-name-as-service-name",
                       "--perf-event", "cycles", "--perf-event-period", "1000",
                       "--java-no-version-check", "--java-jattach-timeout", "5"),
                 PP_CLI_OK, "%s", err);
    cr_expect_eq(cfg.nnamed_options, 13);
}

Test(cli, free_zeroed_and_twice)
{
    pp_config z;
    memset(&z, 0, sizeof(z));
    pp_config_free(&z);
    pp_config_free(&z);
    pp_config_free(NULL);
    cr_assert_eq(PARSE("-o", "o", "--pids", "1", "--app-id-args-filter", "x", "--diagnostics"),
                 PP_CLI_OK);
    pp_config_free(&cfg);
    pp_config_free(&cfg);
    /* after an error everything is freed too (checked by ASan/valgrind) */
    cr_assert_eq(PARSE("--pids", "1", "--app-id-args-filter", "x", "-f", "0"), PP_CLI_USAGE);
}

Test(cli, notices_logged_and_token_never_logged)
{
    char *dir = pp_test_mkdtemp();
    char path[256];
    snprintf(path, sizeof(path), "%s/log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    cr_assert_eq(PARSE("-u", "--token", "SUPERSECRET", "--service-name", "s", "--perf-mode", "fp",
                       "--python-mode", "pyperf", "--diagnostics", "--curlify-requests"),
                 PP_CLI_OK, "%s", err);
    pp_log_close();
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    cr_expect(strstr(buf, "SUPERSECRET") == NULL, "%s", buf);
    cr_expect(strstr(buf, "--perf-mode") == NULL, "fp is a mode of its own, no notice: %s", buf);
    cr_expect(strstr(buf, "--python-mode pyperf maps to 'builtin'") != NULL, "%s", buf);
    cr_expect(strstr(buf, "option --diagnostics is accepted for gProfiler compatibility and has "
                          "no effect in polyprof") != NULL,
              "%s", buf);
    cr_expect(strstr(buf, "option --curlify-requests is accepted") != NULL, "%s", buf);
    /* exactly three lines: one notice, two no-op options */
    size_t lines = 0;
    for (char *p = buf; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(lines, 3, "%s", buf);
    pp_test_rmtree(dir);
}

/* --perf-mode fp is frame pointers only (gProfiler's meaning); bpf, dwarf, smart and perf-event
 * unwind by CFI; --perf-dwarf-stack-size sets the perf-event sampler's stack copy. */
Test(cli, perf_mode_fp_is_frame_pointers_only)
{
    const char *cfi[] = {"bpf", "dwarf", "smart", "perf-event"};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(PARSE("-o", "o", "--perf-mode", cfi[i]), PP_CLI_OK, "%s", err);
        cr_expect_not(cfg.perf_fp_only, "%s", cfi[i]);
        pp_config_free(&cfg);
    }
    cr_assert_eq(PARSE("-o", "o", "--perf-mode", "fp", "--perf-dwarf-stack-size", "16384"),
                 PP_CLI_OK, "%s", err);
    cr_expect(cfg.perf_fp_only);
    cr_expect_eq(cfg.perf_mode, PP_PERF_BPF);
    cr_expect_eq(cfg.perf_dwarf_stack_size, 16384);
    pp_config_free(&cfg);
    cr_expect_eq(PARSE("-o", "o", "--perf-dwarf-stack-size", "65536"), PP_CLI_USAGE);
}

Test(cli, history_options_parse_with_their_defaults)
{
    const char *const def[] = {"--history-dir", "/tmp/h", NULL};
    cr_assert_eq(parse_env(NULL, def), PP_CLI_OK, "--history-dir alone is an output: %s", err);
    cr_assert_str_eq(cfg.history_dir, "/tmp/h");
    cr_assert_eq(cfg.history_max_bytes, 1ULL << 30);
    cr_assert_eq(cfg.history_fine_age, 3600);
    cr_assert_eq(cfg.history_max_age, 7 * 86400);
    pp_config_free(&cfg);
    const char *const set[] = {"-o",
                               "o",
                               "--history-dir",
                               "/tmp/h",
                               "--history-max-bytes",
                               "64M",
                               "--history-fine-age",
                               "30m",
                               "--history-max-age",
                               "2d",
                               NULL};
    cr_assert_eq(parse_env(NULL, set), PP_CLI_OK, "%s", err);
    cr_assert_eq(cfg.history_max_bytes, 64ULL << 20);
    cr_assert_eq(cfg.history_fine_age, 1800);
    cr_assert_eq(cfg.history_max_age, 2 * 86400);
    pp_config_free(&cfg);
    const char *const bad[] = {"-o", "o", "--history-max-age", "forever", NULL};
    cr_assert_eq(parse_env(NULL, bad), PP_CLI_USAGE);
    cr_assert(strstr(err, "--history-max-age"), "%s", err);
    pp_config_free(&cfg);
}
