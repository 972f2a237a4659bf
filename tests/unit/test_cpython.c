/* CPython memory reader against real interpreters: every pyenv CPython 3.8-3.13 and Debian's
 * python3.11 run tests/fixtures/python/stacks.py; the stacks read must match the fixture's
 * known functions, files, lines and thread ids exactly. Plus: unsupported versions, a
 * non-Python process, a process killed between open and sample, and garbage memory through
 * the reader's test hook. */
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "base/child.h"
#include "base/procfiles.h"
#include "runtimes/python/cpython.h"
#include "runtimes/python/cpython_int.h"
#include "testutil.h"

#define FIXTURE "tests/fixtures/python/stacks.py"
#define PYENV "/root/.pyenv/versions/"

/* ---- the fixture process ---- */

typedef struct fixture {
    pp_child *child;
    char *dir;
    int pid;
    char ready[512];          /* "ready <pid> main=<tid> gen=<tid> ..." */
    char path[PATH_MAX];      /* the script, absolute */
    char readyfile[PATH_MAX]; /* where the script writes its ready line */
} fixture;

static void fixture_prepare(fixture *f, const char *script)
{
    memset(f, 0, sizeof(*f));
    cr_assert(realpath(script, f->path) != NULL, "run from the repository root");
    f->dir = pp_test_mkdtemp();
    snprintf(f->readyfile, sizeof(f->readyfile), "%s/ready", f->dir);
}

/* Starts argv and waits (<= 30 s) for the ready file. */
static void fixture_launch(fixture *f, char *const *argv)
{
    pp_child_opts o = {.argv = argv, .quiet = true};
    char err[256];
    f->child = pp_child_start(&o, err, sizeof(err));
    cr_assert(f->child, "%s", err);
    f->pid = pp_child_pid(f->child);
    double end = pp_mono_now() + 30;
    FILE *rf = NULL;
    while (!(rf = fopen(f->readyfile, "r")) && pp_mono_now() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cr_assert(rf, "%s did not get ready", argv[0]);
    cr_assert(fgets(f->ready, sizeof(f->ready), rf));
    fclose(rf);
}

/* Starts python on a fixture script with extra args and waits for its ready file. */
static void fixture_start_script(fixture *f, const char *python, const char *script,
                                 const char *const *extra)
{
    fixture_prepare(f, script);
    char *argv[16] = {(char *)python, f->path, f->readyfile};
    int n = 3;
    for (; extra && *extra && n < 15; extra++)
        argv[n++] = (char *)*extra;
    argv[n] = NULL;
    fixture_launch(f, argv);
}

static void fixture_start(fixture *f, const char *python, const char *const *extra)
{
    fixture_start_script(f, python, FIXTURE, extra);
}

static void fixture_stop(fixture *f)
{
    pp_child_free(f->child);
    f->child = NULL;
    pp_test_rmtree(f->dir);
    f->dir = NULL;
}

/* Native tid the fixture reported for thread name. */
static long fixture_tid(const fixture *f, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), " %s=", name);
    const char *p = strstr(f->ready, key);
    cr_assert(p, "no %s in %s", name, f->ready);
    return atol(p + strlen(key));
}

static int marker(const char *name)
{
    return pp_test_marker(FIXTURE, name);
}

/* ---- captured samples ---- */

typedef struct cap_stack {
    long tid;
    bool truncated, gil;
    size_t n;
    pp_py_frame fr[PP_PY_MAX_DEPTH];
} cap_stack;

typedef struct cap {
    int n;
    cap_stack s[16];
} cap;

static int capture(void *arg, const pp_py_stack *st)
{
    cap *c = arg;
    cr_assert(st->n > 0 && st->n <= PP_PY_MAX_DEPTH);
    if (c->n < 16) {
        cap_stack *s = &c->s[c->n++];
        s->tid = st->tid;
        s->truncated = st->truncated;
        s->gil = st->holds_gil;
        s->n = st->n;
        memcpy(s->fr, st->frames, st->n * sizeof(*st->frames));
    }
    return 0;
}

static bool only_tid(void *arg, long tid)
{
    return tid == *(const long *)arg;
}

static const cap_stack *by_tid(const cap *c, long tid)
{
    for (int i = 0; i < c->n; i++)
        if (c->s[i].tid == tid)
            return &c->s[i];
    return NULL;
}

static bool frame_is(const pp_py_frame *fr, const char *name, const char *file, int line)
{
    return strcmp(fr->name, name) == 0 && strcmp(fr->file, file) == 0 && fr->line == line;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char *describe(const cap_stack *s)
{
    static char buf[4096];
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = s->n > 8 ? s->n - 8 : 0; s && i < s->n && o < sizeof(buf) - 300; i++)
        o += (size_t)snprintf(buf + o, sizeof(buf) - o, " | %s %s:%d", s->fr[i].name, s->fr[i].file,
                              s->fr[i].line);
    return buf;
}

/* What one version must show; returns NULL when the sample matches, else what differs. */
static const char *check(const fixture *f, const cap *c, int minor, bool spin)
{
    static char why[4200];
    const char *F = f->path;
    const char *method = minor >= 11 ? "Klass.method" : "method";
    /* main thread: <module> -> main -> recurse x5 -> Klass.method */
    const cap_stack *m = by_tid(c, f->pid);
    if (!m)
        return "no stack for the main thread (tid = pid)";
    bool ok = m->n == 8 && !m->truncated && frame_is(&m->fr[0], "<module>", F, marker("module")) &&
              frame_is(&m->fr[1], "main", F, marker("main")) &&
              frame_is(&m->fr[6], "recurse", F, marker("recurse_leaf")) &&
              frame_is(&m->fr[7], method, F, marker("method"));
    for (int i = 2; ok && i < 6; i++)
        ok = frame_is(&m->fr[i], "recurse", F, marker("recurse"));
    if (!ok) {
        snprintf(why, sizeof(why), "main: n=%zu%s", m->n, describe(m));
        return why;
    }
    /* gen thread: threading.py frames -> gen_thread -> gen */
    const cap_stack *g = by_tid(c, fixture_tid(f, "gen"));
    if (!g)
        return "no stack for the generator thread";
    ok = g->n >= 3 && !g->truncated && frame_is(&g->fr[g->n - 1], "gen", F, marker("gen")) &&
         frame_is(&g->fr[g->n - 2], "gen_thread", F, marker("gen_thread"));
    for (size_t i = 0; ok && i + 2 < g->n; i++)
        ok = ends_with(g->fr[i].file, "/threading.py") && g->fr[i].line > 0;
    if (ok && minor >= 11)
        ok = strcmp(g->fr[g->n - 3].name, "Thread.run") == 0;
    if (!ok) {
        snprintf(why, sizeof(why), "gen: n=%zu%s", g->n, describe(g));
        return why;
    }
    /* deep thread: 300 frames, cut at the root end to the leaf-side 256 */
    const cap_stack *d = by_tid(c, fixture_tid(f, "deep300"));
    if (!d)
        return "no stack for the deep thread";
    ok = d->n == PP_PY_MAX_DEPTH && d->truncated &&
         frame_is(&d->fr[d->n - 1], method, F, marker("method")) &&
         frame_is(&d->fr[d->n - 2], "recurse", F, marker("recurse_leaf"));
    for (size_t i = 0; ok && i + 2 < d->n; i++)
        ok = frame_is(&d->fr[i], "recurse", F, marker("recurse"));
    if (!ok) {
        snprintf(why, sizeof(why), "deep: n=%zu truncated=%d%s", d->n, d->truncated, describe(d));
        return why;
    }
    if (spin) {
        const cap_stack *s = by_tid(c, fixture_tid(f, "spin"));
        if (!s || !frame_is(&s->fr[s->n - 1], "spin", F, marker("spin")))
            return "spin thread not in spin()";
    }
    if (c->n != (spin ? 4 : 3)) {
        snprintf(why, sizeof(why), "%d stacks reported", c->n);
        return why;
    }
    return NULL;
}

/* Samples p until the fixture's stacks match (threads park asynchronously; at most 10 s). */
static void expect_stacks_soon(pp_py_proc *p, const fixture *f, int minor)
{
    char err[256];
    cap *c = calloc(1, sizeof(*c));
    const char *why = "no sample";
    double end = pp_mono_now() + 10;
    while (why && pp_mono_now() < end) {
        c->n = 0;
        cr_assert(pp_py_sample(p, capture, c, err, sizeof(err)) >= 0, "%s", err);
        why = check(f, c, minor, false);
    }
    cr_assert(!why, "%s", why);
    free(c);
}

static bool task_exists(int pid, long tid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%ld", pid, tid);
    struct stat st;
    return stat(path, &st) == 0;
}

static void run_version(const char *python, const char *version_prefix, int minor)
{
    if (access(python, X_OK) != 0)
        cr_skip_test("%s not installed", python);
    pp_test_quiet_log();
    fixture f;
    fixture_start(&f, python, (const char *[]){"spin", NULL});
    pp_py_open_status st;
    char err[256];
    pp_py_proc *p = pp_py_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "open %s: %s", python, err);
    cr_assert_eq(st, PP_PY_OK);
    cr_assert(strncmp(pp_py_version(p), version_prefix, strlen(version_prefix)) == 0,
              "version %s, expected %s", pp_py_version(p), version_prefix);
    /* Threads park asynchronously after "ready": sample until the stacks match (<= 10 s). */
    cap *c = calloc(1, sizeof(*c));
    const char *why = "no sample";
    char tidmsg[96];
    bool gil_seen = false;
    double end = pp_mono_now() + 10;
    int samples = 0;
    while (pp_mono_now() < end) {
        c->n = 0;
        int n = pp_py_sample(p, capture, c, err, sizeof(err));
        cr_assert(n >= 0, "sample: %s", err);
        samples++;
        int holders = 0;
        /* A thread state can outlive its OS thread for a moment (a thread exiting): every tid
         * must be a task in the sample that ends the loop. */
        long bad_tid = 0;
        for (int i = 0; i < c->n; i++) {
            if (!task_exists(f.pid, c->s[i].tid))
                bad_tid = c->s[i].tid;
            holders += c->s[i].gil;
            if (c->s[i].gil && c->s[i].tid == fixture_tid(&f, "spin"))
                gil_seen = true;
        }
        cr_assert(holders <= 1, "%d threads hold the GIL", holders);
        why = check(&f, c, minor, true);
        if (!why && bad_tid) {
            snprintf(tidmsg, sizeof(tidmsg), "tid %ld not a task of %d", bad_tid, f.pid);
            why = tidmsg;
        }
        if (!why && gil_seen)
            break;
    }
    cr_assert(!why, "%s: %s", python, why);
    cr_assert(gil_seen, "%s: the spinning thread never seen holding the GIL", python);
    /* Only the threads the filter accepts are read (the perf-event mode's sampled threads): by
     * the kernel tid, which every version gives. */
    long want = fixture_tid(&f, "gen"), none = -1;
    c->n = 0;
    cr_assert_eq(pp_py_sample_threads(p, only_tid, &want, capture, c, err, sizeof(err)), 1, "%s",
                 err);
    cr_assert(c->n == 1 && c->s[0].tid == want, "%d stacks, tid %ld", c->n, c->s[0].tid);
    cr_assert(frame_is(&c->s[0].fr[c->s[0].n - 1], "gen", f.path, marker("gen")), "%s",
              describe(&c->s[0]));
    c->n = 0;
    cr_assert_eq(pp_py_sample_threads(p, only_tid, &none, capture, c, err, sizeof(err)), 0);
    cr_assert_eq(c->n, 0);
    pp_py_stats stats;
    pp_py_get_stats(p, &stats);
    cr_assert(stats.code_cached > 0 && stats.reads > 0);
    cr_assert(samples < 2 || stats.code_hits > 0);
    free(c);
    pp_py_close(p);
    fixture_stop(&f);
}

#define PYENV_TEST(tname, ver, mm, minor)                                                          \
    Test(cpython, tname)                                                                           \
    {                                                                                              \
        run_version(PYENV ver "/bin/python" mm, mm ".", minor);                                    \
    }

PYENV_TEST(py38, "3.8.18", "3.8", 8)
PYENV_TEST(py39, "3.9.18", "3.9", 9)
PYENV_TEST(py310, "3.10.13", "3.10", 10)
PYENV_TEST(py311, "3.11.7", "3.11", 11)
PYENV_TEST(py312, "3.12.1", "3.12", 12)
PYENV_TEST(py313, "3.13.0", "3.13", 13)

Test(cpython, debian_python311)
{
    run_version("/usr/bin/python3.11", "3.11.", 11);
}

static void expect_unsupported(const char *python, const char *msg)
{
    if (access(python, X_OK) != 0)
        cr_skip_test("%s not installed", python);
    fixture f;
    fixture_start(&f, python, NULL);
    pp_py_open_status st = PP_PY_OK;
    char err[256];
    cr_assert_null(pp_py_open(f.pid, &st, err, sizeof(err)));
    cr_assert_eq(st, PP_PY_UNSUPPORTED);
    cr_assert_str_eq(err, msg);
    fixture_stop(&f);
}

Test(cpython, py37_unsupported)
{
    expect_unsupported(PYENV "3.7.16/bin/python3.7", "unsupported Python 3.7");
}

Test(cpython, py36_unsupported)
{
    expect_unsupported(PYENV "3.6.15/bin/python3.6", "unsupported Python 3.6");
}

Test(cpython, not_python)
{
    pp_child_opts o = {.argv = (char *[]){"/bin/sleep", "60", NULL}, .quiet = true};
    char err[256];
    pp_child *c = pp_child_start(&o, err, sizeof(err));
    cr_assert(c, "%s", err);
    pp_py_open_status st = PP_PY_OK;
    cr_assert_null(pp_py_open(pp_child_pid(c), &st, err, sizeof(err)));
    cr_assert_eq(st, PP_PY_NOT_PYTHON, "status %d: %s", st, err);
    cr_assert(strstr(err, "no CPython interpreter"), "%s", err);
    pp_child_free(c);
}

Test(cpython, no_such_process)
{
    pp_py_open_status st = PP_PY_OK;
    char err[256];
    cr_assert_null(pp_py_open(INT_MAX - 1, &st, err, sizeof(err)));
    cr_assert_eq(st, PP_PY_GONE);
}

static const char *any_python(void)
{
    static const char *const cands[] = {PYENV "3.12.1/bin/python3.12",
                                        PYENV "3.11.7/bin/python3.11", "/usr/bin/python3.11"};
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
        if (access(cands[i], X_OK) == 0)
            return cands[i];
    return NULL;
}

static int count_cb(void *arg, const pp_py_stack *st)
{
    (void)st;
    (*(int *)arg)++;
    return 0;
}

Test(cpython, killed_between_open_and_sample)
{
    const char *py = any_python();
    if (!py)
        cr_skip_test("no python 3.11/3.12");
    fixture f;
    fixture_start(&f, py, NULL);
    pp_py_open_status st;
    char err[256];
    pp_py_proc *p = pp_py_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "%s", err);
    pp_child_free(f.child); /* SIGKILL + reap */
    f.child = NULL;
    int n = 0;
    cr_assert_eq(pp_py_sample(p, count_cb, &n, err, sizeof(err)), -1);
    cr_assert(strstr(err, "process exited"), "%s", err);
    cr_assert_eq(pp_py_sample(p, count_cb, &n, err, sizeof(err)), -1);
    pp_py_close(p);
    fixture_stop(&f);
}

/* Garbage memory: every read returns pseudo-random bytes (sometimes a failure, sometimes
 * pointers into a small fake range so that chains are followed). The walk must stay bounded
 * and never crash; strings are whatever comes out, valid C strings. */
static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int garbage(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    (void)addr;
    if (next_rand() % 50 == 0)
        return -1;
    uint8_t *b = buf;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = next_rand();
        if (v % 3 == 0)
            v = 0x10000 + (v % 0x4000) * 8; /* plausible pointer */
        else if (v % 3 == 1)
            v &= 0xff0000ffull;
        memcpy(b + i, &v, len - i < 8 ? len - i : 8);
    }
    return 0;
}

static int check_cb(void *arg, const pp_py_stack *st)
{
    (void)arg;
    cr_assert(st->n > 0 && st->n <= PP_PY_MAX_DEPTH);
    for (size_t i = 0; i < st->n; i++)
        cr_assert(strlen(st->frames[i].name) < 4 * PP_PY_STR_MAX + 1 &&
                  strlen(st->frames[i].file) < 4 * PP_PY_STR_MAX + 1);
    return 0;
}

/* A 3.13.0 _Py_DebugOffsets block with the values read from a live pyenv 3.13.0 (sizes and
 * GIL offsets partly made up, but consistent). */
static void debug_offsets_313(uint8_t *buf)
{
    static const struct {
        int idx;
        uint64_t v;
    } vals[] = {{1, 0x030d00f0}, {3, 283320}, {5, 632},   {6, 8000},  {8, 7264}, {9, 7344},
                {14, 16},        {15, 7400},  {17, 7408}, {18, 7416}, {19, 304}, {21, 8},
                {22, 16},        {23, 72},    {24, 152},  {25, 160},  {28, 80},  {29, 8},
                {30, 0},         {31, 56},    {33, 70},   {34, 208},  {35, 112}, {36, 120},
                {37, 128},       {38, 136},   {39, 68},   {43, 200},  {64, 40},  {65, 16},
                {66, 32},        {67, 64},    {68, 32},   {69, 16},   {70, 40}};
    memset(buf, 0, PP_PY_DEBUG_OFFSETS_SIZE);
    memcpy(buf, "xdebugpy", 8);
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
        memcpy(buf + 8 * vals[i].idx, &vals[i].v, 8);
}

Test(cpython, debug_offsets_313)
{
    uint8_t buf[PP_PY_DEBUG_OFFSETS_SIZE];
    debug_offsets_313(buf);
    pp_py_layout L;
    char err[128];
    cr_assert_eq(pp_py_layout_from_debug(buf, sizeof(buf), &L, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(L.minor, 13);
    cr_assert_eq(L.rt_interp_head, 632);
    cr_assert_eq(L.is_threads_head, 7344);
    cr_assert_eq(L.is_next, 7264);
    cr_assert_eq(L.gil_locked, 8);
    cr_assert_eq(L.gil_holder, 16);
    cr_assert_eq(L.ts_frame, 72);
    cr_assert_eq(L.cframe_current, -1);
    cr_assert_eq(L.ts_native_tid, 160);
    cr_assert_eq(L.fr_ip, 56);
    cr_assert_eq(L.fr_owner, 70);
    cr_assert_eq(L.fr_size, 71);
    cr_assert_eq(L.co_code_adaptive, 200);
    cr_assert_eq(L.u_ascii_data, 40);
    cr_assert_eq(L.u_compact_data, 56);
    uint64_t ft = 1;
    memcpy(buf + 16, &ft, 8);
    cr_assert_eq(pp_py_layout_from_debug(buf, sizeof(buf), &L, err, sizeof(err)), -1);
    cr_assert(strstr(err, "free-threaded"), "%s", err);
}

Test(cpython, garbage_memory_all_layouts)
{
    for (int minor = 8; minor <= 13; minor++) {
        pp_py_proc *p = calloc(1, sizeof(*p));
        p->pid = getpid();
        pp_rmem_init(&p->mem, p->pid);
        p->mem.hook = garbage;
        if (minor == 13) {
            uint8_t buf[PP_PY_DEBUG_OFFSETS_SIZE];
            char err[128];
            debug_offsets_313(buf);
            cr_assert_eq(pp_py_layout_from_debug(buf, sizeof(buf), &p->L, err, sizeof(err)), 0);
        } else {
            p->L = *pp_py_layout_for(minor);
        }
        p->runtime = 0x10000;
        p->pthread_tid = 0x2d0;
        char err[256];
        for (int i = 0; i < 300; i++)
            cr_assert(pp_py_sample(p, check_cb, NULL, err, sizeof(err)) >= -1);
        pp_py_close(p);
    }
}

Test(cpython, debug_offsets_rejected)
{
    uint8_t buf[PP_PY_DEBUG_OFFSETS_SIZE] = {0};
    pp_py_layout L;
    char err[128];
    cr_assert_eq(pp_py_layout_from_debug(buf, sizeof(buf), &L, err, sizeof(err)), -1);
    memcpy(buf, "xdebugpy", 8);
    uint64_t v = 0x030e00f0; /* 3.14 */
    memcpy(buf + 8, &v, 8);
    cr_assert_eq(pp_py_layout_from_debug(buf, sizeof(buf), &L, err, sizeof(err)), -1);
    cr_assert(strstr(err, "unsupported Python 3.14"), "%s", err);
    v = 0x030d00f0;
    memcpy(buf + 8, &v, 8);
    cr_assert_eq(pp_py_layout_from_debug(buf, sizeof(buf), &L, err, sizeof(err)), -1);
    cr_assert(strstr(err, "implausible"), "%s", err); /* all sizes 0 */
}

Test(cpython, line_tables)
{
    /* 3.8 lnotab: +2 bytes +1 line, +4 bytes +2 lines, +2 bytes -1 line (0xff). */
    const uint8_t lnotab[] = {2, 1, 4, 2, 2, 0xff};
    cr_assert_eq(pp_py_line_lnotab(lnotab, sizeof(lnotab), 10, 0), 10);
    cr_assert_eq(pp_py_line_lnotab(lnotab, sizeof(lnotab), 10, 2), 11);
    cr_assert_eq(pp_py_line_lnotab(lnotab, sizeof(lnotab), 10, 7), 13);
    cr_assert_eq(pp_py_line_lnotab(lnotab, sizeof(lnotab), 10, 8), 12);
    /* 3.10: [0,4) line+1, [4,6) no line, [6,10) line+2 (from the last line). */
    const uint8_t t310[] = {4, 1, 2, 0x80, 4, 2};
    cr_assert_eq(pp_py_line_310(t310, sizeof(t310), 10, 0), 11);
    cr_assert_eq(pp_py_line_310(t310, sizeof(t310), 10, 4), 0);
    cr_assert_eq(pp_py_line_310(t310, sizeof(t310), 10, 8), 13);
    cr_assert_eq(pp_py_line_310(t310, sizeof(t310), 10, 12), 0);
    /* 3.11: one-line form delta 1 (code 11) over 2 units, short form (code 0) over 1 unit,
     * no-columns (code 13) delta -2 over 3 units, none (code 15) over 1 unit. */
    const uint8_t loc[] = {
        0x80 | (11 << 3) | 1, 4, 8, 0x80 | (0 << 3) | 0, 3, 0x80 | (13 << 3) | 2, 5,
        0x80 | (15 << 3) | 0};
    cr_assert_eq(pp_py_line_locations(loc, sizeof(loc), 10, 0), 11);
    cr_assert_eq(pp_py_line_locations(loc, sizeof(loc), 10, 2), 11);
    cr_assert_eq(pp_py_line_locations(loc, sizeof(loc), 10, 3), 9);
    cr_assert_eq(pp_py_line_locations(loc, sizeof(loc), 10, 6), 0);
    cr_assert_eq(pp_py_line_locations(loc, sizeof(loc), 10, 7), 0);
}

/* ---- a fake 3.12 process in memory (through the reader's test hook) ---- */

#define FAKE_BASE 0x100000ull
#define FAKE_SIZE 0x10000u
#define FAKE_CODE_TYPE 0xc0de000ull
#define FAKE_STR_TYPE 0x5712000ull
#define FAKE_BYTES_TYPE 0xb7e5000ull
static uint8_t fake[FAKE_SIZE];

static int fake_read(void *arg, uint64_t addr, void *buf, size_t len)
{
    (void)arg;
    if (addr < FAKE_BASE || addr + len > FAKE_BASE + FAKE_SIZE)
        return -1;
    memcpy(buf, fake + (addr - FAKE_BASE), len);
    return 0;
}

static void put64(uint64_t at, uint64_t v)
{
    memcpy(fake + (at - FAKE_BASE), &v, 8);
}

static void put32(uint64_t at, uint32_t v)
{
    memcpy(fake + (at - FAKE_BASE), &v, 4);
}

/* A str object: ASCII when every char < 0x80, else compact UCS-2. */
static void put_str(uint64_t at, const uint16_t *chars, size_t n, bool ascii)
{
    put64(at + 8, FAKE_STR_TYPE);
    put64(at + 16, n);
    put32(at + 32, (ascii ? (1u << 2) | 0x40 : (2u << 2)) | 0x20);
    for (size_t i = 0; i < n; i++) {
        if (ascii)
            fake[at + 40 - FAKE_BASE + i] = (uint8_t)chars[i];
        else
            memcpy(fake + (at + 56 - FAKE_BASE) + 2 * i, &chars[i], 2);
    }
}

static void put_ascii(uint64_t at, const char *s)
{
    uint16_t c[64];
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        c[i] = (uint8_t)s[i];
    put_str(at, c, n, true);
}

static pp_py_proc *fake_proc(void)
{
    memset(fake, 0, sizeof(fake));
    const uint64_t rt = FAKE_BASE, interp = rt + 0x1000, ts = rt + 0x2000, cframe = rt + 0x3000,
                   frame = rt + 0x4000, code = rt + 0x5000, table = rt + 0x6300;
    put64(rt + 40, interp);                /* interpreters.head */
    put64(interp + 72, ts);                /* threads.head */
    put64(ts + 56, cframe);                /* cframe */
    put64(ts + 144, 4242);                 /* native_thread_id */
    put64(cframe + 0, frame);              /* current_frame */
    put64(frame + 0, code);                /* f_code */
    put64(frame + 56, code + 192 + 2 * 3); /* prev_instr: code unit 3 */
    put64(code + 8, FAKE_CODE_TYPE);
    put32(code + 68, 10); /* co_firstlineno */
    put64(code + 112, rt + 0x6000);
    put64(code + 120, rt + 0x6100);
    put64(code + 128, rt + 0x6200);
    put64(code + 136, table);
    put_ascii(rt + 0x6000, "/fake.py");
    put_ascii(rt + 0x6100, "f");
    put_ascii(rt + 0x6200, "Fake.f");
    /* Location table: one "no columns" entry (code 13), line delta +3, 8 code units. */
    put64(table + 8, FAKE_BYTES_TYPE);
    put64(table + 16, 2);
    fake[table + 32 - FAKE_BASE] = 0x80 | (13 << 3) | 7;
    fake[table + 33 - FAKE_BASE] = 6;
    pp_py_proc *p = calloc(1, sizeof(*p));
    p->pid = getpid();
    pp_rmem_init(&p->mem, p->pid);
    p->mem.hook = fake_read;
    p->L = *pp_py_layout_for(12);
    p->L.code_type = FAKE_CODE_TYPE;
    p->L.unicode_type = FAKE_STR_TYPE;
    p->L.bytes_type = FAKE_BYTES_TYPE;
    p->runtime = rt;
    return p;
}

static cap *fake_sample(pp_py_proc *p)
{
    static cap c;
    char err[256];
    c.n = 0;
    cr_assert_eq(pp_py_sample(p, capture, &c, err, sizeof(err)), 1, "%s", err);
    return &c;
}

Test(cpython, fake_process_and_code_reuse)
{
    pp_py_proc *p = fake_proc();
    cap *c = fake_sample(p);
    cr_assert_eq(c->s[0].tid, 4242);
    cr_assert_eq(c->s[0].n, 1);
    cr_assert(frame_is(&c->s[0].fr[0], "Fake.f", "/fake.py", 13), "%s", describe(&c->s[0]));
    c = fake_sample(p);
    cr_assert(frame_is(&c->s[0].fr[0], "Fake.f", "/fake.py", 13));
    pp_py_stats st;
    pp_py_get_stats(p, &st);
    cr_assert_eq(st.code_cached, 1);
    cr_assert_eq(st.code_misses, 1);
    /* The code object is freed and another one takes its address: other qualname and first
     * line. The cache must notice. A UCS-2 name checks the non-ASCII path. */
    const uint16_t other[] = {'O', 0xe9, '.', 0x20ac, 'g'}; /* "Oé.€g" */
    put_str(FAKE_BASE + 0x6400, other, 5, false);
    put64(FAKE_BASE + 0x5000 + 128, FAKE_BASE + 0x6400);
    put32(FAKE_BASE + 0x5000 + 68, 20);
    c = fake_sample(p);
    cr_assert(frame_is(&c->s[0].fr[0], "O\xc3\xa9.\xe2\x82\xacg", "/fake.py", 23), "%s",
              describe(&c->s[0]));
    pp_py_get_stats(p, &st);
    cr_assert_eq(st.code_misses, 2);
    /* A frame chain that loops on itself: cut, marked truncated, no endless walk. */
    put64(FAKE_BASE + 0x4000 + 8, FAKE_BASE + 0x4000);
    c = fake_sample(p);
    cr_assert(c->s[0].truncated && c->s[0].n >= 1 && c->s[0].n <= 2);
    /* Not a code object any more (wrong type): the frame is dropped, the stack truncated. */
    put64(FAKE_BASE + 0x4000 + 8, 0);
    put64(FAKE_BASE + 0x5000 + 8, 0x1234000);
    char err[256];
    c->n = 0;
    cr_assert_eq(pp_py_sample(p, capture, c, err, sizeof(err)), 0);
    pp_py_close(p);
}

/* A thread inside a sub-interpreter (3.12+): reported once, with the sub-interpreter's stack
 * (the main interpreter's thread state of the same OS thread is suspended in run_string). */
static void run_subinterp(const char *python)
{
    if (access(python, X_OK) != 0)
        cr_skip_test("%s not installed", python);
    fixture f;
    fixture_start_script(&f, python, "tests/fixtures/python/subinterp.py", NULL);
    char err[256];
    double end = pp_mono_now() + 10;
    pp_py_open_status st;
    pp_py_proc *p = pp_py_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "%s", err);
    cap *c = calloc(1, sizeof(*c));
    long sub = fixture_tid(&f, "sub");
    bool ok = false;
    while (!ok && pp_mono_now() < end) {
        c->n = 0;
        cr_assert(pp_py_sample(p, capture, c, err, sizeof(err)) >= 0, "%s", err);
        const cap_stack *s = by_tid(c, sub), *m = by_tid(c, f.pid);
        ok = c->n == 2 && s && m && s->n == 2 && frame_is(&s->fr[0], "<module>", "<string>", 8) &&
             frame_is(&s->fr[1], "subfunc", "<string>", 7) &&
             frame_is(&m->fr[m->n - 1], "main_wait", f.path, pp_test_marker(f.path, "main_wait"));
    }
    cr_assert(ok, "%s: %d stacks; sub:%s", python, c->n,
              by_tid(c, sub) ? describe(by_tid(c, sub)) : " none");
    free(c);
    pp_py_close(p);
    fixture_stop(&f);
}

Test(cpython, subinterpreter_py312)
{
    run_subinterp(PYENV "3.12.1/bin/python3.12");
}

Test(cpython, subinterpreter_py313)
{
    run_subinterp(PYENV "3.13.0/bin/python3.13");
}

/* A python in another mount namespace whose libpython path exists only there (as in a
 * container): found through /proc/<pid>/root. */
Test(cpython, other_mount_namespace)
{
    const char *home = PYENV "3.12.1";
    if (access(home, X_OK) != 0 || access("/usr/bin/unshare", X_OK) != 0)
        cr_skip_test("needs pyenv 3.12.1 and unshare");
    pp_child_opts probe = {.argv = (char *[]){"/usr/bin/unshare", "--mount", "true", NULL},
                           .quiet = true};
    char err[256];
    pp_child *pc = pp_child_start(&probe, err, sizeof(err));
    pp_child_result res;
    bool can =
        pc && pp_child_wait(pc, pp_mono_now() + 30, &res) == 0 && res.exited && !res.exit_code;
    pp_child_free(pc);
    if (!can)
        cr_skip_test("cannot create a mount namespace here");
    fixture f;
    fixture_prepare(&f, FIXTURE);
    /* In the namespace: the install is bound on <dir>/py and hidden at its real path, so the
     * mapped libpython is <dir>/py/lib/..., which the host sees as an empty directory. */
    char script[4 * PATH_MAX];
    snprintf(script, sizeof(script),
             "mkdir -p %s/py %s/empty && mount --bind %s %s/py && mount --bind %s/empty %s/lib && "
             "PYTHONHOME=%s/py LD_LIBRARY_PATH=%s/py/lib exec %s/py/bin/python3.12 %s %s",
             f.dir, f.dir, home, f.dir, f.dir, home, f.dir, f.dir, f.dir, f.path, f.readyfile);
    fixture_launch(&f, (char *[]){"/usr/bin/unshare", "--mount", "--propagation", "private", "--",
                                  "/bin/sh", "-c", script, NULL});
    char lib[PATH_MAX];
    cr_assert(pp_find_mapping(f.pid, "/libpython", lib, sizeof(lib)) == 0);
    cr_assert(strncmp(lib, f.dir, strlen(f.dir)) == 0, "mapped from %s", lib);
    cr_assert(access(lib, F_OK) != 0, "%s should not exist outside the namespace", lib);
    pp_py_open_status st;
    pp_py_proc *p = pp_py_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "%s", err);
    cr_assert_str_eq(pp_py_version(p), "3.12.1");
    expect_stacks_soon(p, &f, 12);
    pp_py_close(p);
    fixture_stop(&f);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    cr_assert(in && out, "copy %s -> %s", from, to);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
}

/* libpython replaced on disk after the process mapped it (an in-place upgrade): the mapping
 * reads "(deleted)" and the symbols come from /proc/<pid>/map_files. */
Test(cpython, deleted_libpython)
{
    const char *home = PYENV "3.10.13";
    if (access(home, X_OK) != 0)
        cr_skip_test("needs pyenv 3.10.13");
    fixture f;
    fixture_prepare(&f, FIXTURE);
    char lib[PATH_MAX], env[PATH_MAX + 32];
    snprintf(lib, sizeof(lib), "%s/libpython3.10.so.1.0", f.dir);
    copy_file(PYENV "3.10.13/lib/libpython3.10.so.1.0", lib);
    snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s", f.dir);
    /* python3.10 has a RUNPATH, so LD_LIBRARY_PATH wins: it maps the copy. */
    fixture_launch(&f, (char *[]){"/usr/bin/env", env, PYENV "3.10.13/bin/python3.10", f.path,
                                  f.readyfile, NULL});
    char mapped[PATH_MAX];
    cr_assert(pp_find_mapping(f.pid, "/libpython", mapped, sizeof(mapped)) == 0);
    cr_assert(strncmp(mapped, lib, strlen(lib)) == 0, "maps %s", mapped);
    cr_assert_eq(unlink(lib), 0);
    pp_py_open_status st;
    char err[256];
    pp_py_proc *p = pp_py_open(f.pid, &st, err, sizeof(err));
    cr_assert(p, "%s", err);
    cr_assert_str_eq(pp_py_version(p), "3.10.13");
    expect_stacks_soon(p, &f, 10);
    pp_py_close(p);
    fixture_stop(&f);
}
