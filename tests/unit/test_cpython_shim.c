/* The CPython reader never reports the interpreter's own frames (issue 33): on 3.13 a Python
 * __init__ called through a specialised class call (CALL_ALLOC_AND_ENTER_INIT) runs on top of
 * a shim frame whose code object (_Py_InitCleanup) is the interpreter's, named "__init__" in
 * file "__init__", owned by the thread (not FRAME_OWNED_BY_CSTACK). Every pyenv CPython 3.8-3.13
 * and Debian's python3.11 run tests/fixtures/python/initshim.py, which parks the main thread in
 * Parked.__init__ called from build(): its stack must be exactly <module> -> build -> __init__,
 * every frame in the fixture's file at its marked line. On 3.13 also with the shim's address
 * unknown (a libpython without .symtab): the code object itself tells it. */
#include <limits.h>
#include <time.h>

#include "base/child.h"
#include "runtimes/python/cpython.h"
#include "runtimes/python/cpython_int.h"
#include "testutil.h"

#define FIXTURE "tests/fixtures/python/initshim.py"
#define PYENV "/root/.pyenv/versions/"

static int marker(const char *name)
{
    return pp_test_marker(FIXTURE, name);
}

typedef struct parked {
    pp_child *child;
    char *dir;
    int pid;
    char path[PATH_MAX];
} parked;

/* Starts the fixture and waits (<= 30 s) until its main thread is parked in __init__. */
static void start(parked *f, const char *python)
{
    memset(f, 0, sizeof(*f));
    cr_assert(realpath(FIXTURE, f->path) != NULL, "run from the repository root");
    f->dir = pp_test_mkdtemp();
    char ready[PATH_MAX + 8];
    snprintf(ready, sizeof(ready), "%s/ready", f->dir);
    pp_child_opts o = {.argv = (char *[]){(char *)python, f->path, ready, NULL}, .quiet = true};
    char err[256];
    f->child = pp_child_start(&o, err, sizeof(err));
    cr_assert(f->child, "%s", err);
    f->pid = pp_child_pid(f->child);
    double end = pp_mono_now() + 30;
    while (access(ready, F_OK) != 0 && pp_mono_now() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cr_assert(access(ready, F_OK) == 0, "%s did not get ready", python);
}

static void stop(parked *f)
{
    pp_child_free(f->child);
    pp_test_rmtree(f->dir);
}

typedef struct seen {
    char text[4096];
    bool ok;
} seen;

typedef struct want {
    const parked *f;
    const char *init; /* "Parked.__init__" (3.11+) or "__init__" */
    seen *s;
} want;

static int check_main(void *arg, const pp_py_stack *st)
{
    want *w = arg;
    if (st->tid != w->f->pid)
        return 0;
    const char *names[] = {"<module>", "build", w->init};
    const int lines[] = {marker("module"), marker("build"), marker("init")};
    size_t o = 0;
    bool ok = st->n == 3 && !st->truncated;
    for (size_t i = 0; i < st->n && o < sizeof(w->s->text) - 300; i++) {
        const pp_py_frame *fr = &st->frames[i];
        o += (size_t)snprintf(w->s->text + o, sizeof(w->s->text) - o, " | %s %s:%d", fr->name,
                              fr->file, fr->line);
        ok = ok && strcmp(fr->name, names[i]) == 0 && strcmp(fr->file, w->f->path) == 0 &&
             fr->line == lines[i];
    }
    w->s->ok = ok;
    return 1;
}

/* Samples pid until its main thread shows the expected stack (<= 10 s); asserts it does. With
 * forget_shim, the shim's address from .symtab is dropped before the first sample. */
static void expect_no_shim(const parked *f, const char *python, int minor, bool forget_shim)
{
    pp_py_open_status st;
    char err[256];
    pp_py_proc *p = pp_py_open(f->pid, &st, err, sizeof(err));
    cr_assert(p, "open %s: %s", python, err);
    if (minor >= 13)
        cr_assert(p->L.shim_code != 0, "%s: _Py_InitCleanup not found in .symtab", python);
    if (forget_shim)
        p->L.shim_code = 0;
    seen s = {.ok = false};
    want w = {.f = f, .init = minor >= 11 ? "Parked.__init__" : "__init__", .s = &s};
    double end = pp_mono_now() + 10;
    while (!s.ok && pp_mono_now() < end) {
        s.text[0] = '\0';
        cr_assert(pp_py_sample(p, check_main, &w, err, sizeof(err)) >= 0, "%s", err);
    }
    cr_assert(s.ok, "%s%s: main thread:%s", python, forget_shim ? " (shim address unknown)" : "",
              s.text);
    pp_py_close(p);
}

static void run_version(const char *python, int minor)
{
    if (access(python, X_OK) != 0)
        cr_skip_test("%s not installed", python);
    pp_test_quiet_log();
    parked f;
    start(&f, python);
    expect_no_shim(&f, python, minor, false);
    if (minor >= 13)
        expect_no_shim(&f, python, minor, true);
    stop(&f);
}

#define PYENV_TEST(tname, ver, mm, minor)                                                          \
    Test(cpython_shim, tname)                                                                      \
    {                                                                                              \
        run_version(PYENV ver "/bin/python" mm, minor);                                            \
    }

PYENV_TEST(py38, "3.8.18", "3.8", 8)
PYENV_TEST(py39, "3.9.18", "3.9", 9)
PYENV_TEST(py310, "3.10.13", "3.10", 10)
PYENV_TEST(py311, "3.11.7", "3.11", 11)
PYENV_TEST(py312, "3.12.1", "3.12", 12)
PYENV_TEST(py313, "3.13.0", "3.13", 13)

Test(cpython_shim, debian_python311)
{
    run_version("/usr/bin/python3.11", 11);
}
