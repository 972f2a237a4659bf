/* The py-spy launcher (--python-mode pyspy): one `py-spy record` child per Python process with
 * gProfiler's exact command line (spec gprofiler-compat.md §5.4), through runtimes/perproc.h,
 * its raw folded output parsed and annotated with package versions. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/resource.h"
#include "runtimes/folded.h"
#include "runtimes/perproc.h"
#include "runtimes/python/pkgversions.h"
#include "runtimes/python/python_int.h"

typedef struct pyspy {
    pp_perproc *procs;
    bool annotate;
    char (*pyver)[32]; /* per process, for the annotations */
} pyspy;

int pp_pyspy_find(char *out, size_t len)
{
    return pp_resource_tool("python/py-spy", out, len);
}

typedef struct frame_ctx {
    const char *root, *pyver;
} frame_ctx;

/* A py-spy frame as gProfiler writes it: "_[p]"-suffixed, with its package annotation. */
static void rewrite_frame(void *arg, const char *f, size_t len, char *out, size_t cap)
{
    const frame_ctx *c = arg;
    /* Granulate's py-spy fork (gProfiler's) ends each frame in "_[p]"; py-spy as released on
     * PyPI does not: the suffix is added so that both give gProfiler's frames. */
    char suffixed[PATH_MAX + 600];
    bool has = len >= 4 && memcmp(f + len - 4, "_[p]", 4) == 0;
    snprintf(suffixed, sizeof(suffixed), "%.*s%s", (int)len, f, has ? "" : "_[p]");
    if (c->root)
        pp_pkgver_rewrite_frame(c->root, suffixed, c->pyver, out, cap);
    else
        snprintf(out, cap, "%s", suffixed);
}

size_t pp_pyspy_parse(char *text, pp_profile *out, pp_pid_profile *dst, const char *root,
                      const char *pyver)
{
    frame_ctx c = {root, pyver};
    return pp_folded_parse(text, out, dst, rewrite_frame, &c);
}

static size_t parse(void *arg, size_t i, char *text, pp_profile *out, pp_pid_profile *dst)
{
    const pyspy *s = arg;
    char root[40];
    snprintf(root, sizeof(root), "/proc/%d/root", dst->pid);
    return pp_pyspy_parse(text, out, dst, s->annotate ? root : NULL, s->pyver[i]);
}

static const char *const argv[] = {
    "{exe}", "record", "-r",       "{rate}",   "-d", "{duration}", "--nonblocking",    "--format",
    "raw",   "-F",     "--output", "{output}", "-p", "{pid}",      "--full-filenames", "--gil",
    NULL};

static const pp_perproc_tool tool = {
    .name = "py-spy",
    .file_prefix = "pyspy",
    .runtime = "python",
    .argv = argv,
    .max_hz = PP_PYSPY_MAX_HZ,
    .extra_timeout = 10.0, /* gProfiler: duration + 10 s */
    .gone_stderr = "Error: Failed to get process executable name",
    .parse = parse,
};

void pp_pyspy_free(void *session)
{
    pyspy *s = session;
    if (!s)
        return;
    pp_perproc_free(s->procs);
    free(s->pyver);
    free(s);
}

void *pp_pyspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    char exe[PATH_MAX];
    (void)deadline; /* gProfiler passes the session duration (not the time left) */
    if (pp_pyspy_find(exe, sizeof(exe)) < 0)
        return NULL; /* logged by the session (the backend is not available) */
    pyspy *s = calloc(1, sizeof(*s));
    if (!s || !(s->pyver = calloc(n ? n : 1, sizeof(*s->pyver)))) {
        free(s);
        return NULL;
    }
    s->annotate = !pp_runtime_opt(ctx, "no-python-versions");
    for (size_t i = 0; s->annotate && i < n; i++)
        if (pp_python_process_version(procs[i].pid, s->pyver[i], sizeof(s->pyver[i])) < 0)
            s->pyver[i][0] = '\0';
    s->procs = pp_perproc_start(&tool, exe, ctx, procs, n, s);
    if (!s->procs) {
        pp_pyspy_free(s);
        return NULL;
    }
    return s;
}

int pp_pyspy_collect(void *session, pp_profile *out)
{
    pyspy *s = session;
    return pp_perproc_collect(s->procs, out);
}

void pp_pyspy_stop(void *session)
{
    pyspy *s = session;
    pp_perproc_stop(s->procs);
}
