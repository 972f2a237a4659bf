/* Unit tests of the async-profiler launcher: the collapsed-output parser, gProfiler's exact
 * start/stop argument strings, and start/collect/free end to end against the stand-in
 * tests/integration/standins/asprof (a python3 script that accepts only gProfiler's command
 * lines and answers like async-profiler: a contract test of polyprof's side, not of
 * async-profiler), with a real long-running process as the target. */
#include "tests/unit/testutil.h"

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "merge/profile.h"
#include "base/child.h"
#include "runtimes/java/asprof.h"
#include "runtimes/java/asprof_int.h"

TestSuite(asprof, .init = pp_test_quiet_log);

static const char *stack_text(pp_profile *prof, pp_pid_profile *pp, size_t i, char *buf, size_t len,
                              uint64_t *count)
{
    size_t n, at = 0;
    const uint32_t *f = pp_pid_stack(pp, i, &n, count);
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++)
        at +=
            (size_t)snprintf(buf + at, len - at, "%s%s", k ? "|" : "", pp_profile_str(prof, f[k]));
    return buf;
}

Test(asprof, parse_collapsed_skips_malformed_lines)
{
    const char text[] = "java/lang/Thread.run()V_[0];Hot.main([Ljava/lang/String|)V_[j] 41\n"
                        "\n"
                        "a;b 2\r\n"
                        "no_count_here\n"
                        "a;b 0\n"
                        "a;b -1\n"
                        "a;b 12x\n"
                        " 5\n"
                        "a;;b 3\n"
                        "a;b 99999999999999999999999\n"
                        "a;b \n"
                        "frame with spaces;leaf 7\n"
                        "a;b 3"; /* no final newline */
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    size_t bad = 0;
    long added = pp_asprof_parse_collapsed(text, sizeof(text) - 1, prof, pp, &bad);
    cr_assert_eq(added, 4);
    cr_assert_eq(bad, 8);
    cr_assert_eq(pp_pid_nstacks(pp), 3);
    char buf[512];
    uint64_t c;
    cr_assert_str_eq(stack_text(prof, pp, 0, buf, sizeof(buf), &c),
                     "java/lang/Thread.run()V_[0]|Hot.main([Ljava/lang/String|)V_[j]");
    cr_assert_eq(c, 41);
    cr_assert_str_eq(stack_text(prof, pp, 1, buf, sizeof(buf), &c), "a|b");
    cr_assert_eq(c, 5);
    cr_assert_str_eq(stack_text(prof, pp, 2, buf, sizeof(buf), &c), "frame with spaces|leaf");
    cr_assert_eq(c, 7);
    cr_assert_eq(pp_asprof_parse_collapsed("", 0, prof, pp, NULL), 0);
    pp_profile_free(prof);
}

Test(asprof, default_command_lines)
{
    pp_asprof_opts o;
    char buf[1024];
    pp_asprof_opts_init(&o, NULL, 60, true);
    cr_assert_eq(pp_asprof_start_arg(&o, "/t/o.output", "/t/o.log", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "start,event=cpu,file=/t/o.output,collapsed,ann,sig,interval=90909090,"
                          "log=/t/o.log,safemode=0,,features=probesp+vtable,timeout=90");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/t/o.output", "/t/o.log", true, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/t/o.log,mcache=30,file=/t/o.output,collapsed,ann,sig,"
                          "meminfolog");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/t/o.output", "/t/o.log", false, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/t/o.log,mcache=30,meminfolog");
    pp_asprof_opts_init(&o, NULL, 60, false);
    cr_assert_str_eq(o.event, "itimer");
    cr_assert_eq(pp_asprof_start_arg(&o, "/t/o.output", "/t/o.log", buf, 40), -1);
    /* we run as root: perf_event_open works */
    cr_assert(pp_asprof_perf_works());
}

Test(asprof, options_from_the_configuration)
{
    pp_opt_value noops[] = {
        {"java-async-profiler-mode", "itimer"},
        {"java-async-profiler-safemode", "5"},
        {"java-async-profiler-features", "probesp,vtable,comptask"},
        {"java-async-profiler-args", "cstack=fp"},
        {"java-async-profiler-mcache", "7"},
        {"java-async-profiler-no-report-meminfo", NULL},
        {"java-include-method-modifiers", NULL},
        {"java-line-numbers", "line-of-function"},
        {"java-collect-thread-names", NULL},
    };
    pp_runtime_ctx cfg = {.rt = pp_runtime_get(PP_KIND_JAVA),
                          .frequency = 100,
                          .insert_dso_name = true,
                          .profiling_mode = "cpu",
                          .values = noops,
                          .nvalues = sizeof(noops) / sizeof(noops[0])};
    pp_asprof_opts o;
    char buf[1024];
    pp_asprof_opts_init(&o, &cfg, 30, true);
    cr_assert_eq(pp_asprof_start_arg(&o, "/o", "/l", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "start,event=itimer,threads,file=/o,collapsed,ann,sig,includemm,"
                          "includeln,interval=10000000,log=/l,safemode=5,,"
                          "features=probesp+vtable+comptask,timeout=60,lib,cstack=fp");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/o", "/l", true, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/l,mcache=7,threads,file=/o,collapsed,ann,sig,includemm,"
                          "includeln,lib,cstack=fp");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/o", "/l", false, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/l,mcache=7,lib,cstack=fp");
    /* allocation mode with --alloc-interval */
    pp_opt_value alloc[] = {{"alloc-interval", "1mb"}};
    cfg.values = alloc;
    cfg.nvalues = 1;
    cfg.insert_dso_name = false;
    cfg.profiling_mode = "allocation";
    pp_asprof_opts_init(&o, &cfg, 30, true);
    cr_assert_eq(pp_asprof_start_arg(&o, "/o", "/l", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "start,event=alloc,file=/o,collapsed,ann,sig,alloc=1048576,log=/l,"
                          "safemode=0,,features=probesp+vtable,timeout=60");
}

/* ---- end to end against the stand-in ---- */

typedef struct env {
    char *dir;
    char asprof[PATH_MAX], libbase[PATH_MAX], sess[PATH_MAX], files[PATH_MAX + 8];
    pid_t target;
} env;

static void env_init(env *e, bool with_lib, uid_t uid)
{
    e->dir = pp_test_mkdtemp();
    char path[PATH_MAX + 64], standin[PATH_MAX];
    cr_assert(realpath("tests/integration/standins/asprof", standin));
    snprintf(path, sizeof(path), "%s/bin", e->dir);
    cr_assert(mkdir(path, 0755) == 0);
    snprintf(e->asprof, sizeof(e->asprof), "%s/bin/asprof", e->dir);
    cr_assert(symlink(standin, e->asprof) == 0);
    if (with_lib) {
        snprintf(path, sizeof(path), "%s/lib", e->dir);
        cr_assert(mkdir(path, 0755) == 0);
        snprintf(path, sizeof(path), "%s/lib/libasyncProfiler.so", e->dir);
        pp_test_write_file(path, "\177ELF not really", 15);
    }
    /* the target directory (in the target's root, here the same as ours) and the private
     * session directory, whose name the target's session directory takes */
    snprintf(e->libbase, sizeof(e->libbase), "%s/libbase", e->dir);
    snprintf(e->sess, sizeof(e->sess), "%s/sess", e->dir);
    snprintf(e->files, sizeof(e->files), "%s/sess", e->libbase);
    cr_assert(mkdir(e->sess, 0700) == 0);
    e->target = fork();
    cr_assert(e->target >= 0);
    if (e->target == 0) {
        if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
            _exit(126);
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
}

static void env_free(env *e)
{
    char state[64];
    snprintf(state, sizeof(state), "/tmp/.asprof-standin-%d.json", (int)e->target);
    unlink(state);
    kill(e->target, SIGKILL);
    waitpid(e->target, NULL, 0);
    pp_test_rmtree(e->dir);
}

static int count_entries(const char *dir)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    cr_assert(fscanf(p, "%d", &n) == 1);
    pclose(p);
    return n;
}

Test(asprof, contract_start_collect_free_with_the_standin)
{
    env e;
    env_init(&e, true, 0);
    pp_runtime_ctx ctx = {.tmpdir = e.sess, .target_tmpdir = e.libbase};
    char err[512] = "";
    pp_asprof_session *s =
        pp_asprof_start(e.asprof, e.target, &ctx, pp_mono_now() + 5, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    /* <base>/async-profiler-<size>-<mtime>/glibc/libasyncProfiler.so, a copy of the library */
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof(cmd),
             "cmp -s %s/async-profiler-*/glibc/libasyncProfiler.so %s/lib/libasyncProfiler.so",
             e.libbase, e.dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(count_entries(e.files), 2); /* output and log */
    /* a second start finds the profiler running: stop without output, start again */
    pp_asprof_session *s2 =
        pp_asprof_start(e.asprof, e.target, &ctx, pp_mono_now() + 5, err, sizeof(err));
    cr_assert_not_null(s2, "%s", err);
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, e.target, true);
    cr_assert_eq(pp_asprof_collect(s2, prof, pp, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(pp_pid_nstacks(pp), 2);
    char buf[512];
    uint64_t c;
    cr_assert_str_eq(stack_text(prof, pp, 0, buf, sizeof(buf), &c),
                     "java/lang/Thread.run()V_[0]|Hot.loop()V_[j]|Hot.inner(J)J_[i]");
    cr_assert(c >= 2);
    pp_asprof_free(s2);
    pp_asprof_free(s); /* its stop finds the profiler inactive: ignored */
    cr_assert_eq(access(e.files, F_OK), -1, "session directory left behind");
    /* the library stays for the next session (loaded once per JVM) */
    cr_assert_eq(system(cmd), 0);
    pp_profile_free(prof);
    env_free(&e);
}

/* A JVM running as another user gets its two files (owned by it, 0600) in a session directory
 * it can traverse but not list. */
Test(asprof, files_belong_to_the_jvm_user)
{
    env e;
    env_init(&e, true, 65534);
    pp_runtime_ctx ctx = {.tmpdir = e.sess, .target_tmpdir = e.libbase};
    char err[512] = "", path[PATH_MAX + 64];
    /* wait until the child runs as nobody (after setuid, before exec) */
    bool is_nobody = false;
    for (int i = 0; i < 2500 && !is_nobody; i++) {
        uid_t u;
        gid_t g;
        is_nobody = pp_asprof_proc_ids(e.target, &u, &g) == 0 && u == 65534;
        if (!is_nobody)
            usleep(2000);
    }
    cr_assert(is_nobody, "the target did not switch to uid 65534 within 5 s");
    pp_asprof_session *s =
        pp_asprof_start(e.asprof, e.target, &ctx, pp_mono_now() + 5, err, sizeof(err));
    cr_assert_not_null(s, "%s", err);
    struct stat st;
    snprintf(path, sizeof(path), "%s/async-profiler-%d.output", e.files, (int)e.target);
    cr_assert(stat(path, &st) == 0);
    cr_assert_eq(st.st_uid, 65534);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert(stat(e.files, &st) == 0);
    cr_assert_eq(st.st_mode & 0777, 0711);
    pp_asprof_free(s);
    env_free(&e);
}

Test(asprof, errors_say_what_went_wrong)
{
    env e;
    env_init(&e, false, 0);
    pp_runtime_ctx ctx = {.tmpdir = e.sess, .target_tmpdir = e.libbase};
    char err[512] = "";
    cr_assert_null(pp_asprof_start(e.asprof, e.target, &ctx, pp_mono_now() + 5, err, sizeof(err)));
    cr_assert(strstr(err, "libasyncProfiler.so not found next to"), "%s", err);
    /* with the library but a process that is gone */
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/bin/libasyncProfiler.so", e.dir);
    pp_test_write_file(path, "x", 1);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    cr_assert_null(pp_asprof_start(e.asprof, gone, &ctx, pp_mono_now() + 5, err, sizeof(err)));
    cr_assert(err[0] != '\0');
    /* collect without a session */
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    cr_assert_eq(pp_asprof_collect(NULL, prof, pp, err, sizeof(err)), -1);
    pp_profile_free(prof);
    pp_asprof_free(NULL);
    cr_assert_eq(count_entries(e.sess), 0);
    env_free(&e);
}

Test(asprof, find_looks_in_path)
{
    char out[PATH_MAX], dir[PATH_MAX + 16];
    char *d = pp_test_mkdtemp();
    snprintf(dir, sizeof(dir), "%s/asprof", d);
    pp_test_write_file(dir, "#!/bin/sh\n", 10);
    chmod(dir, 0755);
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", d, 1);
    /* resources/java/asprof next to the test binary does not exist: PATH is used */
    cr_assert_eq(pp_asprof_find(out, sizeof(out)), 0);
    cr_assert_str_eq(out, dir);
    setenv("PATH", "relative/dir:/nonexistent", 1);
    cr_assert_eq(pp_asprof_find(out, sizeof(out)), -1);
    if (old)
        setenv("PATH", old, 1);
    free(old);
    pp_test_rmtree(d);
}
