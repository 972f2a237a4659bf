/* Unit tests of the async-profiler driver: the collapsed-output parser, the start/stop argument
 * strings (gProfiler's, mapped to upstream 4.x), the jar reader, and start/collect/free end to
 * end with the real library (the jar `make deps` pins, in PP_TOOLS) in a real JDK 17 JVM:
 * `load` with the default arguments is accepted. */
#include "tests/unit/testutil.h"

#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/child.h"
#include "base/procfiles.h"
#include "merge/profile.h"
#include "runtimes/java/asprof.h"
#include "runtimes/java/asprof_int.h"

TestSuite(asprof, .init = pp_test_quiet_log);

static const char *stack_text(pp_profile *prof, pp_pid_profile *pp, size_t i, char *buf, size_t len,
                              uint64_t *count)
{
    size_t n, at = 0;
    const uint32_t *f = pp_pid_stack(pp, i, &n, count);
    buf[0] = '\0';
    for (size_t k = 0; k < n && at < len; k++) /* a deep stack is cut at the buffer's end */
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

static uint32_t plus_100(void *arg, long tid)
{
    (void)arg;
    return (uint32_t)tid + 100;
}

/* async-profiler's `threads` root frames give each stack its thread, and are dropped unless the
 * user asked for thread names. */
Test(asprof, thread_frames_give_threads)
{
    static const char text[] = "[main tid=41];Hot.main()V_[j];Hot.a()V_[j] 5\n"
                               "[Worker tid=1 tid=42];W.run()V_[j] 3\n"
                               "[GC Thread#0 tid=43] 2\n"
                               "[no tid];x 1\n"
                               "[bad tid=4x];y 1\n";
    for (int keep = 0; keep < 2; keep++) {
        pp_profile *prof = pp_profile_new();
        pp_pid_profile *pp = pp_profile_get(prof, 1, true);
        pp_asprof_parse_opts po = {.thread_frames = keep, .sampler_tid = plus_100};
        size_t bad = 0;
        long added = pp_asprof_parse_threads(text, sizeof(text) - 1, prof, pp, &po, &bad);
        cr_assert_eq(added, keep ? 5 : 4);
        cr_assert_eq(bad, keep ? 0 : 1, "a thread frame alone is no stack");
        char buf[512];
        uint64_t c;
        cr_assert_str_eq(stack_text(prof, pp, 0, buf, sizeof(buf), &c),
                         keep ? "[main tid=41]|Hot.main()V_[j]|Hot.a()V_[j]"
                              : "Hot.main()V_[j]|Hot.a()V_[j]");
        cr_assert_eq(pp_pid_stack_tid(pp, 0), 141);
        cr_assert_eq(pp_pid_stack_tid(pp, 1), 142, "the last tid= of the frame");
        size_t nx = keep ? 3 : 2;
        cr_assert_str_eq(stack_text(prof, pp, nx, buf, sizeof(buf), &c), "[no tid]|x");
        cr_assert_eq(pp_pid_stack_tid(pp, nx), 0);
        cr_assert_eq(pp_pid_stack_tid(pp, nx + 1), 0);
        pp_profile_free(prof);
    }
}

Test(asprof, default_command_lines)
{
    pp_asprof_opts o;
    char buf[1024];
    pp_asprof_opts_init(&o, NULL, 60, true);
    cr_assert_eq(pp_asprof_start_arg(&o, "/t/o.output", "/t/o.log", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf,
                     "start,event=cpu,threads,file=/t/o.output,collapsed,ann,sig,interval=90909090,"
                     "log=/t/o.log,features=vtable,timeout=90");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/t/o.output", "/t/o.log", true, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/t/o.log,mcache=30,threads,file=/t/o.output,collapsed,ann,sig");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/t/o.output", "/t/o.log", false, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/t/o.log,mcache=30");
    cr_assert_eq(pp_asprof_ignored(&o, buf, sizeof(buf)), 0);
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
    cr_assert_str_eq(buf, "start,event=itimer,threads,file=/o,collapsed,ann,sig,"
                          "interval=10000000,log=/l,features=vtable+comptask,timeout=60,lib,"
                          "cstack=fp");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/o", "/l", true, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/l,mcache=7,threads,file=/o,collapsed,ann,sig,lib,cstack=fp");
    cr_assert_eq(pp_asprof_stop_arg(&o, "/o", "/l", false, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "stop,log=/l,mcache=7,lib,cstack=fp");
    cr_assert_gt(pp_asprof_ignored(&o, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "--java-include-method-modifiers, --java-line-numbers line-of-function, "
                          "--java-async-profiler-safemode 5, "
                          "--java-async-profiler-no-report-meminfo");
    /* allocation mode with --alloc-interval */
    pp_opt_value alloc[] = {{"alloc-interval", "1mb"}};
    cfg.values = alloc;
    cfg.nvalues = 1;
    cfg.insert_dso_name = false;
    cfg.profiling_mode = "allocation";
    pp_asprof_opts_init(&o, &cfg, 30, true);
    cr_assert_eq(pp_asprof_start_arg(&o, "/o", "/l", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf,
                     "start,event=alloc,threads,file=/o,collapsed,ann,sig,alloc=1048576,log=/l,"
                     "features=vtable,timeout=60");
    /* only gProfiler's probesp asked for: no features argument at all */
    pp_opt_value probesp[] = {{"java-async-profiler-features", "probesp"}};
    cfg.values = probesp;
    cfg.profiling_mode = "cpu";
    pp_asprof_opts_init(&o, &cfg, 30, true);
    cr_assert_eq(pp_asprof_start_arg(&o, "/o", "/l", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf,
                     "start,event=cpu,threads,file=/o,collapsed,ann,sig,interval=10000000,log=/l,"
                     "timeout=60");
}

/* ---- the jar and the real library in a real JVM ---- */

#define JDK17 "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"

/* The jar `make deps` pins (tests/tools/install.sh), or NULL. */
static const char *pinned_jar(char *buf, size_t len)
{
    const char *tools = getenv("PP_TOOLS") ? getenv("PP_TOOLS") : "/var/cache/polyprof/tools";
    char sh[256] = "", ver[32] = "";
    FILE *f = fopen("tests/tools/install.sh", "r");
    while (f && fgets(sh, sizeof(sh), f))
        if (sscanf(sh, "ASPROF_VERSION=%31s", ver) == 1)
            break;
    if (f)
        fclose(f);
    snprintf(buf, len, "%s/async-profiler-%s/java/async-profiler.jar", tools, ver);
    return ver[0] && access(buf, R_OK) == 0 ? buf : NULL;
}

Test(asprof, lib_load_reads_the_platform_library_and_version_out_of_the_jar)
{
    char jar[PATH_MAX], err[512] = "";
    if (!pinned_jar(jar, sizeof(jar)))
        cr_skip_test("no pinned async-profiler jar (make deps fetches it)");
    pp_asprof_lib *lib = pp_asprof_lib_load(jar, err, sizeof(err));
    cr_assert_not_null(lib, "%s", err);
    cr_assert_str_eq(lib->version, "4.6");
    cr_assert_gt(lib->size, 100000);
    cr_assert_eq(memcmp(lib->data, "\177ELF", 4), 0);
    pp_asprof_lib_free(lib);
    /* not a jar, and a zip without the library */
    char *d = pp_test_mkdtemp(), path[PATH_MAX + 32], cmd[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/x.jar", d);
    pp_test_write_file(path, "not a zip", 9);
    cr_assert_null(pp_asprof_lib_load(path, err, sizeof(err)));
    cr_assert(strstr(err, "cannot read async-profiler from"), "%s", err);
    snprintf(cmd, sizeof(cmd), "cd %s && echo x > f && python3 -m zipfile -c y.jar f", d);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/y.jar", d);
    cr_assert_null(pp_asprof_lib_load(path, err, sizeof(err)));
    cr_assert(strstr(err, "libasyncProfiler.so"), "%s", err);
    pp_test_rmtree(d);
}

typedef struct env {
    char *dir;
    char base[PATH_MAX], sess[PATH_MAX];
    pid_t jvm;
    FILE *out;
} env;

/* A JDK 17 JVM running tests/integration/apps/Hot.java (source launcher), ready. */
static bool env_init(env *e)
{
    if (access(JDK17, X_OK) != 0)
        return false;
    e->dir = pp_test_mkdtemp();
    snprintf(e->base, sizeof(e->base), "%s/base", e->dir);
    snprintf(e->sess, sizeof(e->sess), "%s/sess-1-x", e->dir);
    cr_assert(mkdir(e->sess, 0700) == 0);
    char src[PATH_MAX];
    cr_assert(realpath("tests/integration/apps/Hot.java", src));
    int p[2];
    cr_assert(pipe(p) == 0);
    e->jvm = fork();
    cr_assert(e->jvm >= 0);
    if (e->jvm == 0) {
        /* dies with the test: a failed assertion ends the test's process without env_free,
         * and a JVM left running spins on the host */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        close(p[0]);
        execl(JDK17, "java", src, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    e->out = fdopen(p[0], "r");
    char line[128] = "";
    cr_assert(fgets(line, sizeof(line), e->out) && strncmp(line, "ready ", 6) == 0,
              "the JVM did not start: %s", line);
    return true;
}

static void env_free(env *e)
{
    kill(e->jvm, SIGKILL);
    waitpid(e->jvm, NULL, 0);
    fclose(e->out);
    pp_test_rmtree(e->dir);
}

static uint64_t hot_samples(pp_profile *prof, pp_pid_profile *pp)
{
    uint64_t n = 0, c;
    char buf[4096];
    for (size_t i = 0; i < pp_pid_nstacks(pp); i++)
        if (strstr(stack_text(prof, pp, i, buf, sizeof(buf), &c), "Hot.hot"))
            n += c;
    return n;
}

/* Whether the JVM maps an async-profiler library that is not ours (not under e->base): another
 * profiler on the host (another polyprof profiling every JVM, e.g. another test run) attached
 * to this JVM first. Its profiler then competes with ours in the JVM: this JVM says nothing
 * about ours. */
static bool foreign_profiler(const env *e)
{
    char path[64], line[4096];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)e->jvm);
    FILE *f = fopen(path, "r");
    bool foreign = false;
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "/libasyncProfiler.so") && !strstr(line, e->base))
            foreign = true;
    if (f)
        fclose(f);
    return foreign;
}

/* Whether the JVM maps our copy of the library (under e->base, deleted since the load). */
static bool ours_mapped(const env *e)
{
    char path[64], line[4096];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)e->jvm);
    FILE *f = fopen(path, "r");
    bool ours = false;
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "/libasyncProfiler.so") && strstr(line, e->base))
            ours = true;
    if (f)
        fclose(f);
    return ours;
}

/* One session: start, 1.5 s of profiling, collect, free. Returns the Hot.hot* samples, or -1
 * with err when the start or the collection failed. */
static long long session(env *e, const pp_asprof_lib *lib, char *err, size_t errlen)
{
    pp_runtime_ctx ctx = {.frequency = 100, .tmpdir = e->sess, .target_tmpdir = e->base};
    err[0] = '\0';
    pp_asprof_session *s = pp_asprof_start(lib, e->jvm, &ctx, pp_mono_now() + 3, err, errlen);
    if (!s)
        return -1;
    /* the library file is gone once loaded; the output and log wait in the session dir */
    char path[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/async-profiler-4.6", e->base);
    cr_assert_eq(access(path, F_OK), -1, "library directory left after the load");
    usleep(1500000);
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, e->jvm, true);
    long long n =
        pp_asprof_collect(s, prof, pp, err, errlen) == 0 ? (long long)hot_samples(prof, pp) : -1;
    pp_asprof_free(s);
    pp_profile_free(prof);
    cr_assert_eq(access(e->base, F_OK), -1, "target directory left after the session");
    return n;
}

/* gProfiler's default arguments, mapped, are accepted by the pinned library in JDK 17; a second
 * session reuses the loaded library, whose file is gone. When another profiler on the host
 * attached async-profiler to the test's JVM first (seen once: another run profiling every JVM),
 * the attempt proves nothing either way: it is made again in a new JVM (3 JVMs at most). */
Test(asprof, load_with_the_default_arguments_in_a_real_jvm, .timeout = 180)
{
    char jar[PATH_MAX], err[512];
    if (!pinned_jar(jar, sizeof(jar)))
        cr_skip_test("no pinned async-profiler jar (make deps fetches it)");
    pp_asprof_lib *lib = pp_asprof_lib_load(jar, err, sizeof(err));
    cr_assert_not_null(lib, "%s", err);
    for (int attempt = 1;; attempt++) {
        env e;
        if (!env_init(&e))
            cr_skip_test("no JDK 17 at " JDK17);
        long long first = session(&e, lib, err, sizeof(err));
        bool ours = ours_mapped(&e);
        long long second = first > 10 && ours ? session(&e, lib, err, sizeof(err)) : 0;
        bool foreign = foreign_profiler(&e);
        env_free(&e);
        if (foreign && attempt < 3) {
            fprintf(stderr, "test_asprof: another profiler attached async-profiler to the test's "
                            "JVM; trying again in a new JVM\n");
            continue;
        }
        pp_asprof_lib_free(lib);
        cr_assert(!foreign, "another profiler on the host attached async-profiler to each of "
                            "the 3 test JVMs first: stop it and run the test again");
        cr_assert(first >= 0, "first session: %s", err);
        cr_assert(ours, "our library is not mapped in the JVM (not loaded from our directory)");
        cr_assert(second >= 0, "second session: %s", err);
        /* 1.5 s at 100 Hz of a spinning JVM: 150 samples on an idle host */
        cr_assert_gt(first, 10,
                     "first session: %lld hot samples: host starved (the JVM got too "
                     "little CPU)",
                     first);
        cr_assert_gt(second, 10,
                     "second session: %lld hot samples: host starved (the JVM got "
                     "too little CPU)",
                     second);
        return;
    }
}

Test(asprof, errors_say_what_went_wrong)
{
    /* a process that is gone (forked before anything is allocated: valgrind checks the child's
     * heap at its _exit too) */
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    char *d = pp_test_mkdtemp(), sess[PATH_MAX + 16], base[PATH_MAX + 16], err[512] = "";
    snprintf(sess, sizeof(sess), "%s/sess-1-x", d);
    snprintf(base, sizeof(base), "%s/base", d);
    pp_asprof_lib lib = {.version = "1", .data = (unsigned char *)"x", .size = 1};
    pp_runtime_ctx ctx = {.tmpdir = sess, .target_tmpdir = base};
    cr_assert_null(pp_asprof_start(&lib, gone, &ctx, pp_mono_now() + 5, err, sizeof(err)));
    cr_assert(err[0] != '\0');
    /* a process that is not a JVM: the attach fails with a reason, nothing is left */
    pid_t sleeper = fork();
    if (sleeper == 0) {
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    usleep(100000);
    cr_assert_null(pp_asprof_start(&lib, sleeper, &ctx, pp_mono_now() + 2, err, sizeof(err)));
    cr_assert(strstr(err, "async-profiler did not start"), "%s", err);
    cr_assert_eq(access(base, F_OK), -1, "target directory left behind");
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    /* collect without a session */
    pp_profile *prof = pp_profile_new();
    pp_pid_profile *pp = pp_profile_get(prof, 1, true);
    cr_assert_eq(pp_asprof_collect(NULL, prof, pp, err, sizeof(err)), -1);
    pp_profile_free(prof);
    pp_asprof_free(NULL);
    pp_test_rmtree(d);
}

Test(asprof, find_looks_in_resources_only)
{
    char out[PATH_MAX], path[PATH_MAX + 32];
    char *d = pp_test_mkdtemp();
    snprintf(path, sizeof(path), "%s/java", d);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/java/async-profiler.jar", d);
    pp_test_write_file(path, "PK", 2);
    setenv("POLYPROF_RESOURCES", d, 1);
    cr_assert_eq(pp_asprof_find(out, sizeof(out)), 0);
    cr_assert_str_eq(out, path);
    unsetenv("POLYPROF_RESOURCES");
    /* never on PATH */
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    snprintf(path, sizeof(path), "%s/java", d);
    setenv("PATH", path, 1);
    cr_assert_eq(pp_asprof_find(out, sizeof(out)), -1);
    if (old)
        setenv("PATH", old, 1);
    free(old);
    pp_test_rmtree(d);
}
