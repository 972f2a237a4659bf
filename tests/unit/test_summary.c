/* Unit tests for the session's log lines: the start-up line of runtime profilers and modes
 * (orchestrator/runtime_modes.c), the per-session summary (orchestrator/summary.c) and the
 * upload status it quotes. */
#include "testutil.h"

#include <limits.h>

#include "orchestrator/runtime_modes.h"
#include "orchestrator/summary.h"

Test(runtime_modes, profiled_unprofiled_and_disabled_runtimes_with_their_modes)
{
    pp_config cfg = {0};
    cfg.runtime_mode[PP_KIND_JAVA] = (char *)"jfr";
    cfg.runtime_mode[PP_KIND_PYTHON] = (char *)"builtin";
    cfg.runtime_mode[PP_KIND_RUBY] = (char *)"auto";
    cfg.runtime_mode[PP_KIND_PHP] = (char *)"disabled";
    cfg.runtime_mode[PP_KIND_NODE] = (char *)"disabled";
    bool profiled[PP_KIND_COUNT] = {false};
    profiled[PP_KIND_JAVA] = profiled[PP_KIND_PYTHON] = true;
    char line[512];
    pp_runtime_modes_format(&cfg, profiled, line, sizeof(line));
    cr_assert_str_eq(line, "runtime profilers: java (jfr), python (builtin); without "
                           "a profiler (system sampler frames only): ruby (auto); disabled: php, "
                           "dotnet, nodejs");
    bool none[PP_KIND_COUNT] = {false};
    pp_runtime_modes_format(&cfg, none, line, sizeof(line));
    cr_assert_str_eq(line, "runtime profilers: none; without a profiler (system sampler frames "
                           "only): java (jfr), python (builtin), ruby (auto); disabled: php, "
                           "dotnet, nodejs");
    cfg.runtime_mode[PP_KIND_JAVA] = (char *)"ap";
    profiled[PP_KIND_PYTHON] = false;
    pp_runtime_modes_format(&cfg, profiled, line, sizeof(line));
    cr_assert(strncmp(line, "runtime profilers: java (ap: async-profiler); ", 46) == 0, "%s", line);
    pp_runtime_modes_format(&cfg, profiled, line, 20);
    cr_assert_str_eq(line, "runtime profilers: ", "cut to the buffer");
}

/* A profile entry for pid with one stack of one frame. */
static void add_stack(pp_profile *p, int pid, const char *frame, uint64_t count)
{
    pp_pid_profile *pp = pp_profile_get(p, pid, true);
    uint32_t f = pp_profile_intern(p, frame);
    cr_assert_eq(pp_pid_add(pp, &f, 1, count), 0);
}

Test(summary, processes_samples_runtime_coverage_upload_and_repeats)
{
    pp_proc procs[] = {
        {.pid = 1, .kind = PP_KIND_NATIVE},
        {.pid = 2, .kind = PP_KIND_NATIVE},
        {.pid = 12, .kind = PP_KIND_PYTHON, .blacklisted = true},
        {.pid = 11, .kind = PP_KIND_PYTHON},
        {.pid = 10, .kind = PP_KIND_PYTHON},
        {.pid = 13, .kind = PP_KIND_PYTHON},
        {.pid = 20, .kind = PP_KIND_JAVA},
        {.pid = 30, .kind = PP_KIND_RUBY},
    };
    pp_proc_list list = {.procs = procs, .n = 8, .cap = 8};
    pp_runner_task tasks[] = {{.kind = PP_KIND_JAVA}, {.kind = PP_KIND_PYTHON}};
    pp_summary s;
    pp_summary_begin(&s, &list, tasks, 2);

    pp_profile *py = pp_profile_new(), *java = pp_profile_new();
    add_stack(py, 10, "f_[p]", 5);
    add_stack(py, 11, "[Profiling error: cannot read memory]", 1);
    add_stack(py, 99, "g_[p]", 4); /* not handed to a profiler: not counted */
    add_stack(java, 20, "[Profiling skipped: profiling this JVM is not supported]", 1);
    pp_summary_runtime(&s, py);
    pp_summary_runtime(&s, java);
    char line[1024];
    pp_summary_format(&s, 1234, "off", 2, line, sizeof(line));
    cr_assert_str_eq(line, "8 processes (native 2, java 1, python 4, ruby 1); 1234 samples; "
                           "runtime stacks: java 0 of 1 (1 skipped), python 1 of 3 (1 error); "
                           "upload: off; 2 repeated messages not logged");
    pp_summary_format(&s, 1, "off", 0, line, sizeof(line));
    cr_assert(strstr(line, "; 1 sample; ") && !strstr(line, "repeated"), "%s", line);
    free(s.pids); /* pp_summary_end does this after logging */

    /* the line as logged: samples summed over the final profile, repeats counted meanwhile */
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    pp_summary_begin(&s, &list, tasks, 2);
    pp_summary_runtime(&s, py);
    pp_warn_proc(11, 1, "pid %d: failed", 11);
    pp_warn_proc(11, 1, "pid %d: failed", 11);
    pp_profile *final = pp_profile_new();
    add_stack(final, 1, "main", 7);
    add_stack(final, 10, "f_[p]", 3);
    pp_summary_end(&s, final, NULL);
    cr_assert_null(s.pids);
    pp_log_close();
    cr_assert(strstr(pp_test_read_text(path),
                     "INFO: polyprof: session summary: 8 processes (native 2, java 1, python 4, "
                     "ruby 1); 10 samples; runtime stacks: java 0 of 1, python 1 of 3 (1 error); "
                     "upload: off; 1 repeated message not logged\n"),
              "%s", pp_test_read_text(path));
    pp_profile_free(final);
    pp_profile_free(py);
    pp_profile_free(java);
    pp_test_rmtree(dir);
}

Test(summary, no_runtime_profiler_and_no_processes)
{
    pp_proc_list list = {0};
    pp_summary s;
    pp_summary_begin(&s, &list, NULL, 0);
    char line[256];
    cr_assert_null(s.pids);
    pp_summary_format(&s, 0, "off", 0, line, sizeof(line));
    cr_assert_str_eq(line, "0 processes; 0 samples; runtime stacks: none; upload: off");
    pp_proc one = {.pid = 5, .kind = PP_KIND_GO};
    list = (pp_proc_list){.procs = &one, .n = 1, .cap = 1};
    pp_summary_begin(&s, &list, NULL, 0);
    pp_summary_format(&s, 2, "off", 0, line, sizeof(line));
    cr_assert_str_eq(line, "1 process (go 1); 2 samples; runtime stacks: none; upload: off");
}

/* Processes walked by the system sampler (in-sampler walks) got runtime stacks, once each: an
 * error or skip stack of the same process from its backend does not count besides. */
Test(summary, walked_processes_count_once)
{
    pp_proc procs[] = {
        {.pid = 10, .kind = PP_KIND_PYTHON}, {.pid = 11, .kind = PP_KIND_PYTHON},
        {.pid = 12, .kind = PP_KIND_PYTHON}, {.pid = 13, .kind = PP_KIND_PYTHON},
        {.pid = 30, .kind = PP_KIND_RUBY},
    };
    pp_proc_list list = {.procs = procs, .n = 5, .cap = 5};
    pp_runner_task tasks[] = {{.kind = PP_KIND_PYTHON}, {.kind = PP_KIND_RUBY}};
    pp_summary s;
    pp_summary_begin(&s, &list, tasks, 2);
    pp_profile *py = pp_profile_new();
    add_stack(py, 11, "[Profiling error: cannot read memory]", 1);
    add_stack(py, 12, "[Profiling skipped: unsupported Python 3.6]", 1);
    add_stack(py, 13, "[Profiling error: cannot read memory]", 1);
    pp_summary_runtime(&s, py);
    pp_walk_cov cov[] = {
        {.pid = 10, .rt_samples = 9, .samples = 10},
        {.pid = 10, .rt_samples = 2, .samples = 2}, /* a second registration (pid reuse) */
        {.pid = 11, .rt_samples = 3, .samples = 8}, /* walked after its error */
        {.pid = 13, .rt_samples = 0, .samples = 5}, /* sampled, never walked */
        {.pid = 30, .rt_samples = 4, .samples = 4},
        {.pid = 77, .rt_samples = 4, .samples = 4}, /* a fork: not in the session's list */
    };
    pp_summary_walked(&s, cov, sizeof(cov) / sizeof(cov[0]));
    pp_summary_runtime(&s, py); /* the same profile again changes nothing */
    char line[512];
    pp_summary_format(&s, 50, "off", 0, line, sizeof(line));
    cr_assert_str_eq(line, "5 processes (python 4, ruby 1); 50 samples; runtime stacks: python 2 "
                           "of 4 (1 error, 1 skipped), ruby 1 of 1; upload: off");
    free(s.pids);
    pp_profile_free(py);
}
