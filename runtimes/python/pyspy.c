/* The py-spy launcher (--python-mode pyspy): one `py-spy record` child per Python process with
 * gProfiler's exact command line (spec gprofiler-compat.md §5.4), run through
 * base/child.h, its raw folded output parsed and annotated with package versions. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "base/resource.h"
#include "runtimes/python/pkgversions.h"
#include "runtimes/folded.h"
#include "runtimes/python/python_int.h"
#include "runtimes/runner.h"

#define MAX_OUTPUT (64u << 20)   /* bytes of one py-spy output file */
#define PYSPY_TIMEOUT_EXTRA 10.0 /* gProfiler: duration + 10 s */

typedef struct spyproc {
    int pid;
    unsigned long long start_ticks;
    char comm[64];
    char root[40];
    char pyver[32];
    char output[PATH_MAX];
    pp_child *child;
    char reason[340]; /* why the child could not start (its error stack) */
} spyproc;

typedef struct pyspy {
    spyproc *procs;
    size_t n;
    int stop_fd;
    bool annotate;
    double child_deadline;
} pyspy;

int pp_pyspy_find(char *out, size_t len)
{
    return pp_resource_tool("python/py-spy", out, len);
}

static void random_letters(char *out, size_t n)
{
    unsigned char r[32];
    if (n > sizeof(r))
        n = sizeof(r);
    if (getrandom(r, n, 0) != (ssize_t)n)
        for (size_t i = 0; i < n; i++)
            r[i] = (unsigned char)(rand() & 0xff);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)('a' + r[i] % 26);
    out[n] = '\0';
}

static void start_one(pyspy *s, spyproc *p, const char *exe, const char *tmpdir, int rate,
                      int duration)
{
    char letters[17], rate_s[16], dur_s[16], pid_s[16];
    random_letters(letters, 16);
    snprintf(p->output, sizeof(p->output), "%s/pyspy.%s.%d.col", tmpdir, letters, p->pid);
    snprintf(rate_s, sizeof(rate_s), "%d", rate);
    snprintf(dur_s, sizeof(dur_s), "%d", duration);
    snprintf(pid_s, sizeof(pid_s), "%d", p->pid);
    char *argv[] = {
        (char *)exe,        "record", "-r", rate_s,     "-d",      dur_s, "--nonblocking",
        "--format",         "raw",    "-F", "--output", p->output, "-p",  pid_s,
        "--full-filenames", "--gil",  NULL};
    pp_child_opts o = {.argv = argv, .term_signal = SIGINT, .kill_grace = 1.0, .quiet = true};
    char err[300];
    p->child = pp_child_start(&o, err, sizeof(err));
    if (!p->child) {
        snprintf(p->reason, sizeof(p->reason), "%s", err);
        pp_warn_proc(p->pid, p->start_ticks, "py-spy for pid %d (%s) did not start: %s", p->pid,
                     p->comm, err);
    }
    (void)s;
}

void pp_pyspy_free(void *session)
{
    pyspy *s = session;
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        pp_child_free(s->procs[i].child);
        if (s->procs[i].output[0])
            unlink(s->procs[i].output);
    }
    free(s->procs);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    free(s);
}

void *pp_pyspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    char exe[PATH_MAX];
    if (pp_pyspy_find(exe, sizeof(exe)) < 0)
        return NULL; /* logged by the session (the backend is not available) */
    if (!ctx->tmpdir) {
        pp_error("py-spy: no session temporary directory");
        return NULL;
    }
    pyspy *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->procs = calloc(n ? n : 1, sizeof(*s->procs));
    if (s->stop_fd < 0 || !s->procs) {
        pp_pyspy_free(s);
        return NULL;
    }
    s->annotate = !pp_runtime_opt(ctx, "no-python-versions");
    int rate = ctx->frequency < PP_PYSPY_MAX_HZ ? ctx->frequency : PP_PYSPY_MAX_HZ;
    /* gProfiler passes the session duration (not the time left) and allows 10 s more. */
    int duration = ctx->duration > 0 ? ctx->duration : 1;
    s->child_deadline = pp_mono_now() + duration + PYSPY_TIMEOUT_EXTRA;
    (void)deadline;
    for (size_t i = 0; i < n; i++, s->n++) {
        spyproc *p = &s->procs[i];
        p->pid = procs[i].pid;
        p->start_ticks = procs[i].start_ticks;
        pp_python_comm(p->pid, procs[i].comm, p->comm, sizeof(p->comm));
        snprintf(p->root, sizeof(p->root), "/proc/%d/root", p->pid);
        if (s->annotate && pp_python_process_version(p->pid, p->pyver, sizeof(p->pyver)) < 0)
            p->pyver[0] = '\0';
        start_one(s, p, exe, ctx->tmpdir, rate, duration);
    }
    pp_debug("py-spy: %zu processes, %d Hz, %d s (%s)", n, rate, duration, exe);
    return s;
}

void pp_pyspy_stop(void *session)
{
    pyspy *s = session;
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof(one)) < 0)
        pp_debug("py-spy: cannot signal stop: %s", strerror(errno));
}

static char *read_output(const char *path)
{
    size_t len;
    char *text = pp_read_file(path, MAX_OUTPUT, PP_READ_TRUNCATE | PP_READ_NOFOLLOW, &len);
    if (text && len == MAX_OUTPUT)
        pp_warn("py-spy output %s reached %u MiB: only its start is read", path, MAX_OUTPUT >> 20);
    return text;
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

static void add_error(pp_profile *out, const spyproc *p, const char *reason)
{
    pp_error_stack(out, p->pid, p->comm, "python", "error", reason);
}

int pp_pyspy_collect(void *session, pp_profile *out)
{
    pyspy *s = session;
    for (size_t i = 0; i < s->n; i++) {
        spyproc *p = &s->procs[i];
        if (!p->child) {
            add_error(out, p, p->reason);
            continue;
        }
        pp_child_result res;
        pp_child_wait_until(p->child, s->child_deadline, s->stop_fd, &res);
        char desc[128], frame[400];
        bool failed = pp_child_describe(&res, desc, sizeof(desc));
        bool alive = pp_proc_alive(p->pid);
        char *text = read_output(p->output);
        unlink(p->output);
        if (text && text[0]) {
            pp_pid_profile *dst = pp_profile_get(out, p->pid, true);
            if (!dst) {
                free(text);
                return -1;
            }
            dst->comm = pp_profile_intern(out, p->comm);
            dst->runtime = "python";
            pp_pyspy_parse(text, out, dst, s->annotate ? p->root : NULL, p->pyver);
        } else if (!alive) {
            if (res.err && strstr(res.err, "Error: Failed to get process executable name"))
                add_error(out, p, "process exited before py-spy started");
            /* else: exited during the session, nothing recorded: the sampler's stacks stay */
        } else if (failed && !res.stopped) {
            snprintf(frame, sizeof(frame), "py-spy %s", desc);
            add_error(out, p, frame);
            char why[4096];
            if (pp_child_failure_text(&res, "py-spy", why, sizeof(why)))
                pp_warn_proc(p->pid, p->start_ticks, "python pid %d (%s): %s", p->pid, p->comm,
                             why);
        }
        free(text);
        pp_child_free(p->child);
        p->child = NULL;
    }
    return 0;
}
