/* The HotSpot layout reader, method namer and frame walk (runtimes/java/hotspot.h) on real JVMs:
 * OpenJDK 17 and Temurin 25 run a program whose main thread sleeps in Outer.level2, called from
 * Outer.level1, interpreted (-Xint) and compiled (warmed up with -Xbatch, no inlining); the walk
 * of its thread from the JavaFrameAnchor must name those frames. Skipped only when the JDK is not
 * installed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/utf8.h"
#include "hotspot_fake.h"
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

static int walked_tid; /* the thread walk_outer found, as OSThread._thread_id gives it */

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
        if (seen) {
            walked_tid = th[i].tid;
            return n;
        }
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
    /* the thread's id is the JVM's main thread (named "java" by the launcher) */
    char comm[64];
    snprintf(comm, sizeof(comm), "/proc/%d/task/%d/comm", (int)pid, walked_tid);
    cr_expect(access(comm, R_OK) == 0, "no task %d in pid %d", walked_tid, (int)pid);
    if (access(comm, R_OK) == 0)
        cr_expect_str_eq(pp_test_read_text(comm), "java\n");
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

/* ---- synthetic memory: tables and objects laid out in a buffer served through the hook ---- */

#define FAKE_BASE 0x200000ull
#define FAKE_SIZE (2u << 20)

typedef struct fake {
    uint8_t *mem;
    uint64_t strings; /* next free string address */
} fake;

static int fake_read(void *arg, uint64_t addr, void *buf, size_t len)
{
    fake *f = arg;
    if (addr < FAKE_BASE || addr + len > FAKE_BASE + FAKE_SIZE) {
        errno = EFAULT;
        return -1;
    }
    memcpy(buf, f->mem + (addr - FAKE_BASE), len);
    return 0;
}

static void put(fake *f, uint64_t addr, const void *v, size_t n)
{
    cr_assert(addr >= FAKE_BASE && addr + n <= FAKE_BASE + FAKE_SIZE);
    memcpy(f->mem + (addr - FAKE_BASE), v, n);
}

static void put64(fake *f, uint64_t addr, uint64_t v)
{
    put(f, addr, &v, 8);
}

static uint64_t str(fake *f, const char *s)
{
    uint64_t a = f->strings;
    put(f, a, s, strlen(s) + 1);
    f->strings += strlen(s) + 1;
    return a;
}

static void fake_init(fake *f, pp_rmem *m)
{
    f->mem = calloc(1, FAKE_SIZE);
    cr_assert(f->mem);
    f->strings = FAKE_BASE + 0x10000;
    pp_rmem_init(m, 1);
    m->hook = fake_read;
    m->hook_arg = f;
}

/* A JDK-17-shaped set of tables (names as 17 exports them: CompiledMethod._method,
 * _scopes_data_begin, CodeBlob pointers) with rows left out by name (skip) and an optional
 * extra struct row; the symbols' addresses into syms. */
typedef struct row {
    const char *type, *field;
    uint64_t offset; /* or the static's address */
    bool is_static;
} row;

#define STATIC_AT(i) (FAKE_BASE + 0x80000 + (i)*16)
static const row rows17[] = {
    {"CodeCache", "_heaps", STATIC_AT(0), true},
    {"CodeCache", "_low_bound", STATIC_AT(1), true},
    {"CodeCache", "_high_bound", STATIC_AT(2), true},
    {"ThreadsSMRSupport", "_java_thread_list", STATIC_AT(3), true},
    {"AbstractInterpreter", "_code", STATIC_AT(4), true},
    {"Abstract_VM_Version", "_vm_major_version", STATIC_AT(5), true},
    {"GrowableArrayBase", "_len", 0, false},
    {"GrowableArray<int>", "_data", 8, false},
    {"CodeHeap", "_memory", 8, false},
    {"CodeHeap", "_segmap", 120, false},
    {"CodeHeap", "_log2_segment_size", 256, false},
    {"VirtualSpace", "_low", 16, false},
    {"VirtualSpace", "_high", 24, false},
    {"CodeBlob", "_name", 96, false},
    {"CodeBlob", "_size", 12, false},
    {"CodeBlob", "_frame_size", 28, false},
    {"CodeBlob", "_code_begin", 32, false},
    {"CodeBlob", "_code_end", 40, false},
    {"CompiledMethod", "_method", 112, false},
    {"CompiledMethod", "_scopes_data_begin", 120, false},
    {"nmethod", "_comp_level", 308, false},
    {"nmethod", "_scopes_pcs_offset", 268, false},
    {"nmethod", "_metadata_offset", 260, false},
    {"Method", "_constMethod", 8, false},
    {"ConstMethod", "_constants", 8, false},
    {"ConstMethod", "_name_index", 34, false},
    {"ConstMethod", "_signature_index", 36, false},
    {"ConstantPool", "_pool_holder", 24, false},
    {"ConstantPool", "_length", 60, false},
    {"Klass", "_name", 24, false},
    {"Symbol", "_length", 4, false},
    {"Symbol", "_body", 6, false},
    {"JavaThread", "_anchor", 656, false},
    {"JavaThread", "_osthread", 560, false},
    {"JavaThread", "_thread_state", 824, false},
    {"JavaFrameAnchor", "_last_Java_sp", 0, false},
    {"JavaFrameAnchor", "_last_Java_pc", 8, false},
    {"JavaFrameAnchor", "_last_Java_fp", 16, false},
    {"OSThread", "_thread_id", 208, false},
    {"ThreadsList", "_length", 4, false},
    {"ThreadsList", "_threads", 16, false},
    {"StubQueue", "_stub_buffer", 8, false},
    {"StubQueue", "_buffer_limit", 20, false},
};

static void fake_tables(fake *f, uint64_t *syms, const char *skip, const row *extra, bool no_end)
{
    static const uint64_t vals[PP_HS_NSYMS] = {[PP_HS_STRUCTS] = FAKE_BASE + 0x100000,
                                               [PP_HS_ST_STRIDE] = 48,
                                               [PP_HS_ST_TYPE] = 0,
                                               [PP_HS_ST_FIELD] = 8,
                                               [PP_HS_ST_STATIC] = 24,
                                               [PP_HS_ST_OFFSET] = 32,
                                               [PP_HS_ST_ADDRESS] = 40,
                                               [PP_HS_TYPES] = FAKE_BASE + 0xa0000,
                                               [PP_HS_TY_STRIDE] = 32,
                                               [PP_HS_TY_NAME] = 0,
                                               [PP_HS_TY_SIZE] = 24,
                                               [PP_HS_INTS] = FAKE_BASE + 0xb0000,
                                               [PP_HS_IC_STRIDE] = 16,
                                               [PP_HS_IC_NAME] = 0,
                                               [PP_HS_IC_VALUE] = 8,
                                               [PP_HS_LONGS] = FAKE_BASE + 0xc0000,
                                               [PP_HS_LC_STRIDE] = 16,
                                               [PP_HS_LC_NAME] = 0,
                                               [PP_HS_LC_VALUE] = 8};
    for (int i = 0; i < PP_HS_NSYMS; i++) {
        syms[i] = FAKE_BASE + (uint64_t)i * 8;
        put64(f, syms[i], vals[i]);
    }
    uint64_t e = vals[PP_HS_STRUCTS];
    size_t n = sizeof(rows17) / sizeof(rows17[0]);
    for (size_t i = 0; i <= n; i++) {
        const row *r = i < n ? &rows17[i] : extra;
        if (!r || (skip && strcmp(r->field, skip) == 0))
            continue;
        int32_t st = r->is_static;
        put64(f, e, str(f, r->type));
        put64(f, e + 8, str(f, r->field));
        put(f, e + 24, &st, 4);
        put64(f, e + (st ? 40 : 32), r->offset);
        e += 48;
    }
    uint64_t junk = str(f, "Junk");
    for (int i = 0; no_end && i <= 20000; i++, e += 48) /* past the reader's bound, no end */
        put64(f, e, junk);
    int32_t major = 17;
    put(f, STATIC_AT(5), &major, 4);
    static const struct {
        const char *name;
        uint64_t size;
    } types[] = {{"HeapBlock", 16}, {"ConstantPool", 72}, {"ConstMethod", 48}};
    for (size_t i = 0; i < 3; i++) {
        put64(f, vals[PP_HS_TYPES] + i * 32, str(f, types[i].name));
        put64(f, vals[PP_HS_TYPES] + i * 32 + 24, types[i].size);
    }
    static const struct {
        const char *name;
        int32_t v;
    } ints[] = {{"frame::interpreter_frame_sender_sp_offset", -1},
                {"frame::interpreter_frame_last_sp_offset", -2},
                {"_thread_in_native", 4},
                {"_thread_in_vm", 6},
                {"_thread_in_Java", 8}};
    for (size_t i = 0; i < 5; i++) {
        put64(f, vals[PP_HS_INTS] + i * 16, str(f, ints[i].name));
        put(f, vals[PP_HS_INTS] + i * 16 + 8, &ints[i].v, 4);
    }
}

/* Lays the tables out afresh (fake_tables) and parses them into L: pp_hs_layout_parse's result. */
static int reparse(fake *f, pp_rmem *m, uint64_t *syms, const char *skip, const row *extra,
                   bool no_end, pp_hs_layout *L, char *why, size_t len)
{
    memset(f->mem, 0, FAKE_SIZE);
    pp_rmem_begin_sample(m);
    f->strings = FAKE_BASE + 0x10000;
    fake_tables(f, syms, skip, extra, no_end);
    return pp_hs_layout_parse(m, syms, FAKE_BASE, L, why, len);
}

/* An entry field offset the target sets so that offset + width wraps past 2^64 is refused, not
 * used to index the entry (a read of polyprof's stack at an offset near 2^64). */
Test(hotspot, an_entry_offset_that_wraps_is_refused)
{
    fake f;
    pp_rmem m;
    fake_init(&f, &m);
    uint64_t syms[PP_HS_NSYMS];
    pp_hs_layout L;
    char why[256] = "";
    cr_assert_eq(reparse(&f, &m, syms, NULL, NULL, false, &L, why, sizeof(why)), 0, "%s", why);
    put64(&f, syms[PP_HS_ST_TYPE], UINT64_MAX - 3); /* + 8 wraps to 4, within the stride */
    pp_rmem_begin_sample(&m);
    cr_assert_eq(pp_hs_layout_parse(&m, syms, FAKE_BASE, &L, why, sizeof(why)), -1);
    cr_expect(strstr(why, "past the stride"), "%s", why);
    pp_rmem_free(&m);
    free(f.mem);
}

/* Fields are found by name, under the names each version uses; a missing one is named. */
Test(hotspot, tables_are_read_by_name_and_a_missing_field_is_named)
{
    fake f;
    pp_rmem m;
    fake_init(&f, &m);
    uint64_t syms[PP_HS_NSYMS];
    pp_hs_layout L;
    char why[256] = "";
    cr_assert_eq(reparse(&f, &m, syms, NULL, NULL, false, &L, why, sizeof(why)), 0, "%s", why);
    cr_expect_eq(pp_hs_layout_check(&L, why, sizeof(why)), 0, "%s", why);
    cr_expect_eq(L.major, 17);
    cr_expect_eq(L.nm_method, 112);      /* CompiledMethod._method */
    cr_expect_eq(L.nm_scopes_data, 120); /* _scopes_data_begin */
    cr_expect_eq(L.jt_anchor, 656);
    cr_expect_eq(L.cc_heaps, STATIC_AT(0) - FAKE_BASE); /* statics relative to the bias */
    cr_expect_eq(L.cp_size, 72);
    cr_expect_eq(L.if_method, -3);
    cr_expect_eq(L.blob_kind, PP_HS_NONE);

    cr_assert_eq(reparse(&f, &m, syms, "_thread_id", NULL, false, &L, why, sizeof(why)), 0, "%s",
                 why);
    cr_expect_eq(pp_hs_layout_check(&L, why, sizeof(why)), -1);
    cr_expect(strstr(why, "OSThread._thread_id"), "%s", why);

    /* a field of the same name in another type, or an overlong name, is not taken */
    static char longname[200];
    memset(longname, 'A', sizeof(longname) - 1);
    static const row other = {"Thread", "_anchor", 1, false};
    row overlong = {longname, "_thread_id", 2, false};
    cr_assert_eq(reparse(&f, &m, syms, "_anchor", &other, false, &L, why, sizeof(why)), 0, "%s",
                 why);
    cr_expect_eq(L.jt_anchor, PP_HS_NONE);
    cr_assert_eq(reparse(&f, &m, syms, "_thread_id", &overlong, false, &L, why, sizeof(why)), 0,
                 "%s", why);
    cr_expect_eq(L.os_tid, PP_HS_NONE);

    /* a table without its end is refused */
    cr_expect_eq(reparse(&f, &m, syms, NULL, NULL, true, &L, why, sizeof(why)), -1);
    cr_expect(strstr(why, "gHotSpotVMStructs has no end"), "%s", why);
    /* a stride that does not hold the entry's fields is refused */
    put64(&f, syms[PP_HS_ST_STRIDE], 40);
    pp_rmem_begin_sample(&m);
    cr_expect_eq(pp_hs_layout_parse(&m, syms, FAKE_BASE, &L, why, sizeof(why)), -1);
    cr_expect(strstr(why, "gHotSpotVMStructEntryAddressOffset"), "%s", why);
    pp_rmem_free(&m);
    free(f.mem);
}

/* Method* -> text: ';' as '|', invalid UTF-8 repaired, cached; what is not a method is not
 * named (an index past the pool, a signature that is not one). */
Test(hotspot, method_text_is_sanitised_and_cached)
{
    fake f;
    pp_hs_proc p;
    memset(&p, 0, sizeof(p));
    fake_init(&f, &p.mem);
    pp_hs_methods_init(&p);
    p.L = PP_TEST_HS_METHOD_LAYOUT;
    const uint64_t M = FAKE_BASE + 0x100, CM = FAKE_BASE + 0x200, CP = FAKE_BASE + 0x400,
                   K = FAKE_BASE + 0x800;
    put64(&f, M + 8, CM);
    put64(&f, CM + 8, CP);
    uint16_t ni = 3, si = 4;
    put(&f, CM + 34, &ni, 2);
    put(&f, CM + 36, &si, 2);
    put64(&f, CP + 24, K);
    int32_t cplen = 10;
    put(&f, CP + 60, &cplen, 4);
    const char *const texts[3] = {"pkg/Cl\xff"
                                  "ass",
                                  "run", "(Ljava/lang/String;I)V"};
    const uint64_t syms[3] = {FAKE_BASE + 0x1200, FAKE_BASE + 0x1000, FAKE_BASE + 0x1100};
    for (int i = 0; i < 3; i++) {
        uint16_t n = (uint16_t)strlen(texts[i]);
        put(&f, syms[i] + 4, &n, 2);
        put(&f, syms[i] + 6, texts[i], n);
    }
    put64(&f, K + 24, syms[0]);
    put64(&f, CP + 72 + 3 * 8, syms[1]);
    put64(&f, CP + 72 + 4 * 8, syms[2]);
    const char *t = pp_hs_method_name(&p, M);
    cr_assert(t);
    cr_expect_str_eq(t, "pkg/Cl" PP_UTF8_REPLACEMENT "ass.run(Ljava/lang/String|I)V");
    cr_expect(pp_hs_method_name(&p, M) == t); /* cached */
    cr_expect_eq(pp_htab_count(&p.methods), 1);
    char buf[PP_HS_TEXT_MAX];
    cplen = 4; /* the signature's index is past the pool */
    put(&f, CP + 60, &cplen, 4);
    pp_rmem_begin_sample(&p.mem);
    cr_expect_eq(pp_hs_method_text(&p, M, buf, sizeof(buf)), -1);
    cplen = 10;
    put(&f, CP + 60, &cplen, 4);
    put(&f, syms[2] + 6, "X", 1); /* not a descriptor */
    pp_rmem_begin_sample(&p.mem);
    cr_expect_eq(pp_hs_method_text(&p, M, buf, sizeof(buf)), -1);
    cr_expect_null(pp_hs_method_name(&p, M + 8));
    cr_expect_eq(pp_htab_count(&p.methods), 1);
    /* bounded by bytes too (a JVM's generated classes with long names): past the cap the cache
     * starts over */
    put(&f, syms[2] + 6, texts[2], 1);
    const uint64_t M2 = FAKE_BASE + 0x180;
    put64(&f, M2 + 8, CM);
    p.method_bytes = PP_HS_METHOD_BYTES_MAX;
    pp_rmem_begin_sample(&p.mem);
    cr_assert(pp_hs_method_name(&p, M2));
    cr_expect_eq(pp_htab_count(&p.methods), 1, "started over: only the new name");
    cr_expect_lt(p.method_bytes, (size_t)PP_HS_TEXT_MAX + 256);
    pp_hs_close(&p);
    free(f.mem);
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
