/* The HotSpot layout reader, method namer and frame walk (runtimes/java/hotspot.h) on real JVMs:
 * OpenJDK 17 and Temurin 25 run a program whose main thread sleeps in Outer.level2, called from
 * Outer.level1, interpreted (-Xint) and compiled (warmed up with -Xbatch, no inlining); the walk
 * of its thread from the JavaFrameAnchor must name those frames. Skipped only when the JDK is not
 * installed. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/java/hotspot.h"
#include "testutil.h"

static const char *const jdks[] = {"/usr/lib/jvm/java-17-openjdk-amd64",
                                   "/usr/lib/jvm/temurin-25-jdk-amd64"};

static const char outer_java[] =
    "public class Outer {\n"
    "    static void level2(long ms) throws InterruptedException {\n"
    "        Thread.sleep(ms);\n"
    "    }\n"
    "    static void level1(long ms) throws InterruptedException {\n"
    "        level2(ms);\n"
    "    }\n"
    "    public static void main(String[] args) throws InterruptedException {\n"
    "        if (args.length > 0)\n"
    "            for (int i = 0; i < 30000; i++) level1(0);\n"
    "        while (true) level1(20);\n"
    "    }\n"
    "}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The JDK's home, or skips the test when it is not installed. */
static const char *jdk_or_skip(int i)
{
    char java[256];
    snprintf(java, sizeof(java), "%s/bin/javac", jdks[i]);
    if (access(java, X_OK) != 0)
        cr_skip_test("JDK not installed: %s", jdks[i]);
    return jdks[i];
}

/* Compiles Outer.java into a new temp directory (the caller removes it). */
static char *compile_outer(const char *home)
{
    char *dir = pp_test_mkdtemp(), path[512], cmd[1024];
    snprintf(path, sizeof(path), "%s/Outer.java", dir);
    pp_test_write_file(path, outer_java, sizeof(outer_java) - 1);
    snprintf(cmd, sizeof(cmd), "%s/bin/javac -d %s %s", home, dir, path);
    cr_assert(system(cmd) == 0, "%s failed", cmd);
    return dir;
}

/* Starts java with extra options (NULL-terminated) running Outer; it dies with the test. */
static pid_t start_outer(const char *home, const char *cp, const char *const *opts, bool warm)
{
    char java[256];
    snprintf(java, sizeof(java), "%s/bin/java", home);
    const char *argv[16];
    int n = 0;
    argv[n++] = java;
    for (; opts && *opts && n < 10; opts++)
        argv[n++] = *opts;
    argv[n++] = "-cp";
    argv[n++] = cp;
    argv[n++] = "Outer";
    if (warm)
        argv[n++] = "warm";
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execv(java, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* The walk of the thread sleeping in level2, as "text suffix" lines innermost first, into out;
 * how many frames it had (0 when no thread is there yet). */
static int walk_outer(pp_hs_proc *p, char *out, size_t cap)
{
    pp_hs_thread th[64];
    int nt = pp_hs_threads(p, th, 64);
    cr_assert(nt >= 0, "the thread list of pid %d is unreadable", p->pid);
    pp_hs_frame f[PP_HS_MAX_FRAMES];
    for (int i = 0; i < nt; i++) {
        int n = pp_hs_walk(p, th[i].jt, f, PP_HS_MAX_FRAMES);
        size_t at = 0;
        bool seen = false;
        out[0] = '\0';
        for (int k = 0; k < n && at < cap; k++) {
            const char *t = pp_hs_method_name(p, f[k].method);
            seen |= t && strncmp(t, "Outer.level2", 12) == 0;
            at += (size_t)snprintf(out + at, cap - at, "%s%s\n", t ? t : "?",
                                   pp_hs_suffix(f[k].type));
        }
        if (seen)
            return n;
    }
    return 0;
}

/* Opens the JVM and waits (bounded) until its main thread's walk shows level2 with want (a
 * substring, e.g. the suffixes); returns the walk's text in out. */
static void wait_walk(pp_hs_proc *p, pid_t pid, const char *want, char *out, size_t cap)
{
    double until = now_s() + 60;
    char why[256] = "";
    bool open = false;
    while (now_s() < until) {
        if (!open && pp_hs_open(p, pid, why, sizeof(why)) == 0)
            open = true;
        if (open) {
            pp_rmem_begin_sample(&p->mem);
            if (walk_outer(p, out, cap) > 0 && strstr(out, want))
                return;
        }
        usleep(50 * 1000);
    }
    if (open)
        pp_hs_close(p);
    cr_assert_fail("pid %d: no walk showing %s within 60 s (open: %s; last walk:\n%s)", pid, want,
                   open ? "yes" : why, open ? out : "");
}

static void check_interpreted(int jdk, int major)
{
    pp_test_quiet_log();
    const char *home = jdk_or_skip(jdk);
    char *dir = compile_outer(home);
    static const char *const opts[] = {"-Xint", "-Xshare:auto", NULL};
    pid_t pid = start_outer(home, dir, opts, false);
    pp_hs_proc p;
    char walk[8192];
    wait_walk(&p, pid, "Outer.level2(J)V_[0]\nOuter.level1(J)V_[0]\n", walk, sizeof(walk));
    cr_log_info("JDK %d walk:\n%s", major, walk);
    cr_expect(strstr(walk, "Outer.level2(J)V_[0]\nOuter.level1(J)V_[0]\n"
                           "Outer.main([Ljava/lang/String|)V_[0]\n"),
              "%s", walk);
    /* above level2: Thread.sleep (JDK 17: the native method itself; 25: sleep0 and its callers) */
    cr_expect(strncmp(walk, "java/lang/Thread.sleep", 22) == 0, "%s", walk);
    cr_expect_eq(p.L.major, major, "%d", p.L.major);
    char why[256] = "";
    cr_expect_eq(pp_hs_selfcheck(&p, why, sizeof(why)), 1, "%s", why);
    /* JDK 23+: CodeBlob offsets and a kind field; before, pointers and a name */
    if (major >= 23)
        cr_expect(p.L.blob_code_offset != PP_HS_NONE && p.L.blob_kind != PP_HS_NONE &&
                  p.L.kind_nmethod >= 0);
    else
        cr_expect(p.L.blob_code_begin != PP_HS_NONE && p.L.blob_kind == PP_HS_NONE);
    pp_hs_close(&p);
    stop(pid);
    pp_test_rmtree(dir);
}

Test(hotspot, jdk17_interpreted_walk_names_level2_under_level1, .timeout = 180)
{
    check_interpreted(0, 17);
}

Test(hotspot, jdk25_interpreted_walk_names_level2_under_level1, .timeout = 180)
{
    check_interpreted(1, 25);
}

/* Compiled frames: level1 and level2 compiled (tiered, -Xbatch: before level1(true) runs),
 * not inlined into each other. */
static void check_compiled(int jdk)
{
    pp_test_quiet_log();
    const char *home = jdk_or_skip(jdk);
    char *dir = compile_outer(home);
    static const char *const opts[] = {"-Xbatch", "-XX:CompileCommand=quiet",
                                       "-XX:CompileCommand=dontinline,Outer::*", NULL};
    pid_t pid = start_outer(home, dir, opts, true);
    pp_hs_proc p;
    char walk[8192];
    wait_walk(&p, pid, "Outer.level2(J)V_[j]\nOuter.level1(J)V_[j]\n", walk, sizeof(walk));
    cr_log_info("JDK %d compiled walk:\n%s", jdk ? 25 : 17, walk);
    cr_expect(strstr(walk, "\nOuter.main([Ljava/lang/String|)V_["), "%s", walk);
    pp_hs_close(&p);
    stop(pid);
    pp_test_rmtree(dir);
}

Test(hotspot, jdk17_compiled_walk_names_level2_under_level1, .timeout = 180)
{
    check_compiled(0);
}

Test(hotspot, jdk25_compiled_walk_names_level2_under_level1, .timeout = 180)
{
    check_compiled(1);
}

/* The layout is read once per libjvm build-id; a missing field fails the check with its name. */
Test(hotspot, layout_cached_per_build_id_and_checked_by_name, .timeout = 180)
{
    pp_test_quiet_log();
    const char *home = jdk_or_skip(0);
    char *dir = compile_outer(home);
    static const char *const opts[] = {"-Xint", NULL};
    pid_t pid = start_outer(home, dir, opts, false);
    pp_hs_cache_reset();
    pp_hs_proc p, q;
    char walk[8192], why[256] = "";
    wait_walk(&p, pid, "Outer.level2", walk, sizeof(walk));
    cr_expect(!p.cached);
    cr_expect(strncmp(p.L.buildid, "buildid:", 8) == 0, "%s", p.L.buildid);
    double t0 = now_s();
    cr_assert_eq(pp_hs_open(&q, pid, why, sizeof(why)), 0, "%s", why);
    double t1 = now_s();
    cr_expect(q.cached);
    cr_expect_eq(pp_hs_cache_hits(), 1);
    cr_expect(memcmp(&p.L, &q.L, sizeof(p.L)) == 0);
    pp_hs_close(&q);
    pp_hs_cache_reset();
    double t2 = now_s();
    cr_assert_eq(pp_hs_open(&q, pid, why, sizeof(why)), 0, "%s", why);
    cr_log_info("open: cached %.2f ms, reading the tables %.2f ms (%llu reads, %llu bytes)",
                (t1 - t0) * 1e3, (now_s() - t2) * 1e3, q.mem.reads, q.mem.read_bytes);
    cr_expect(!q.cached);
    pp_hs_close(&q);

    pp_hs_layout L = p.L;
    cr_expect_eq(pp_hs_layout_check(&L, why, sizeof(why)), 0, "%s", why);
    L.jt_anchor = PP_HS_NONE;
    cr_expect_eq(pp_hs_layout_check(&L, why, sizeof(why)), -1);
    cr_expect(strstr(why, "JavaThread._anchor"), "%s", why);
    L = p.L;
    L.sym_body = 40;
    cr_expect_eq(pp_hs_layout_check(&L, why, sizeof(why)), -1);
    cr_expect(strstr(why, "Symbol"), "%s", why);
    /* a wrong interpreter slot: the end-to-end check fails, with a reason */
    p.L.if_method -= 1;
    pp_hs_methods_free(&p);
    pp_hs_methods_init(&p);
    cr_expect_eq(pp_hs_selfcheck(&p, why, sizeof(why)), -1);
    cr_expect(strstr(why, "did not name a method"), "%s", why);
    pp_hs_close(&p);
    stop(pid);
    pp_test_rmtree(dir);
}

/* Tables read from garbage memory fail cleanly (no crash, no endless table, a reason). */
static int garbage(void *arg, uint64_t addr, void *buf, size_t len)
{
    unsigned *seed = arg;
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i++) {
        *seed = *seed * 1103515245u + 12345u + (unsigned)(addr + i);
        b[i] = (uint8_t)(*seed >> 16);
    }
    return 0;
}

Test(hotspot, garbage_tables_fail_with_a_reason)
{
    for (unsigned s = 1; s < 200; s++) {
        pp_rmem m;
        pp_rmem_init(&m, 1);
        unsigned seed = s;
        m.hook = garbage;
        m.hook_arg = &seed;
        uint64_t syms[PP_HS_NSYMS];
        for (int i = 0; i < PP_HS_NSYMS; i++)
            syms[i] = 0x10000 + (uint64_t)i * 8;
        pp_hs_layout L;
        char why[256] = "";
        int r = pp_hs_layout_parse(&m, syms, 0x10000, &L, why, sizeof(why));
        if (r == 0)
            r = pp_hs_layout_check(&L, why, sizeof(why));
        cr_expect_eq(r, -1);
        cr_expect(why[0]);
        pp_rmem_free(&m);
    }
}
