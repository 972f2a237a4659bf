/* polyprof entry point: parse the command line, check preconditions, run the sessions. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/child.h"
#include "orchestrator/cli.h"
#include "orchestrator/diff_cmd.h"
#include "orchestrator/discovery.h"
#include "orchestrator/extract.h"
#include "orchestrator/history_cmd.h"
#include "base/log.h"
#include "orchestrator/output.h"
#include "orchestrator/precond.h"
#include "orchestrator/session.h"
#include "orchestrator/upload.h"
#include "runtimes/runner.h"
#include "runtimes/runtime.h"

extern char **environ;

static bool all_runtimes_disabled(const pp_config *cfg)
{
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (cfg->runtime_mode[k] && strcmp(cfg->runtime_mode[k], "disabled") != 0)
            return false;
    return true;
}

/* The first runtime that must not run beside gProfiler in its mode, with why; NULL if none. */
static const pp_runtime *gprofiler_conflict(const pp_config *cfg, const char **why)
{
    for (int k = 1; k < PP_KIND_COUNT; k++) {
        const pp_runtime *rt = pp_runtime_get((pp_proc_kind)k);
        const char *mode = cfg->runtime_mode[k];
        if (mode && strcmp(mode, "disabled") != 0 && rt->gprofiler_conflict &&
            (*why = rt->gprofiler_conflict(mode)))
            return rt;
    }
    return NULL;
}

/* A --<rt>-maps-regex that does not compile is a usage error. */
static int check_regexes(const pp_config *cfg, char *err, size_t len)
{
    pp_discovery_opts o = {.self_pid = -1};
    for (int k = 0; k < PP_KIND_COUNT; k++)
        o.maps_regex[k] = cfg->maps_regex[k];
    pp_discovery *d = pp_discovery_new(&o, err, len);
    pp_discovery_free(d);
    return d ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "diff") == 0)
        return pp_diff_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "history") == 0)
        return pp_history_main(argc - 1, argv + 1);
    pp_config cfg;
    char err[1024] = "";
    int rc = pp_cli_parse(argc, argv, environ, stdout, &cfg, err, sizeof(err));
    if (rc == PP_CLI_OK && check_regexes(&cfg, err, sizeof(err)) < 0)
        rc = PP_CLI_USAGE;
    if (rc == PP_CLI_EXIT_OK) {
        pp_config_free(&cfg);
        return 0;
    }
    if (rc != PP_CLI_OK) {
        fprintf(stderr, "polyprof: error: %s\n", err);
        if (rc == PP_CLI_USAGE)
            fprintf(stderr, "usage: polyprof [-o DIR | -u --token T --service-name S] [options]; "
                            "see polyprof --help\n");
        pp_config_free(&cfg);
        return rc == PP_CLI_USAGE ? 2 : 1;
    }

    pp_log_rotation rot = {(unsigned long long)cfg.log_rotate_max_size,
                           cfg.log_rotate_backup_count};
    if (pp_log_init(cfg.verbose, cfg.log_file, &rot, err, sizeof(err)) < 0)
        fprintf(stderr, "polyprof: warning: cannot use log file %s: %s; logging to stderr only\n",
                cfg.log_file, err);

    int exit_code = 1;
    if (cfg.command == PP_CMD_EXTRACT_RESOURCES) {
        int n = pp_extract_resources(NULL, cfg.resources_dest, stdout, err, sizeof(err));
        if (n < 0)
            pp_critical("extract-resources: %s", err);
        else
            pp_info("extract-resources: %d files copied into %s", n, cfg.resources_dest);
        exit_code = n < 0 ? 1 : 0;
        goto out;
    }
    if (strcmp(cfg.profiling_mode, "none") == 0 ||
        (cfg.perf_mode == PP_PERF_DISABLED && all_runtimes_disabled(&cfg))) {
        pp_critical("All profilers are disabled!");
        goto out;
    }
    if (strcmp(cfg.profiling_mode, "cpu") != 0) {
        pp_critical("--mode %s is not supported by polyprof yet; use --mode cpu",
                    cfg.profiling_mode);
        goto out;
    }
    if (cfg.command == PP_CMD_UPLOAD_FILE) {
        exit_code = pp_upload_file(&cfg);
        goto out;
    }
    /* From here a signal ends the run cleanly (read through a signalfd in the session loop), or
     * is ignored; before, nothing needs cleaning up. */
    pp_session_signals_setup();
    if (pp_check_root(&cfg) < 0 || pp_check_pidns(&cfg) < 0 ||
        pp_grab_lock("polyprof_lock", "polyprof.lock") < 0)
        goto out;
    if (pp_gprofiler_running()) {
        /* docs/decisions.md: a runtime may refuse (two profilers that cannot share a process);
         * everything else only costs twice */
        const char *why = NULL;
        const pp_runtime *rt = gprofiler_conflict(&cfg, &why);
        if (rt) {
            pp_critical("gProfiler is running on this host (it holds gprofiler_lock) and %s "
                        "profiling conflicts with it: %s",
                        rt->label, why);
            goto out;
        }
        pp_warn("gProfiler is also running on this host (it holds gprofiler_lock): both profile "
                "every process, at twice the cost");
    }
    if (cfg.output_dir && pp_output_prepare(cfg.output_dir, err, sizeof(err)) < 0) {
        pp_critical("%s", err);
        goto out;
    }

    pp_process_setup(&cfg);
    int stale = pp_tmp_cleanup_stale();
    if (stale > 0)
        pp_info("removed %d temporary directories left by a polyprof that did not exit cleanly",
                stale);
    for (int k = 1; k < PP_KIND_COUNT; k++)
        if (pp_runtime_get((pp_proc_kind)k)->at_start)
            pp_runtime_get((pp_proc_kind)k)->at_start();
    pp_info("polyprof %s starting", PP_VERSION);
    exit_code = pp_run_sessions(&cfg);
    pp_remove_pid_file(&cfg);
out:
    pp_log_close();
    if (!pp_runner_abandoned()) /* a stuck runtime profiler may still read its options */
        pp_config_free(&cfg);
    return exit_code;
}
