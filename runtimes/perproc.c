/* One external profiler child per process (perproc.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/perproc.h"
#include "runtimes/runner.h"

#define MAX_OUTPUT (64u << 20) /* bytes of one output file */
#define MAX_ARGS 40

typedef struct item {
    int pid;
    unsigned long long start_ticks;
    char comm[64];
    char output[PATH_MAX];
    pp_child *child;
    char reason[340]; /* why the child could not start (its error stack) */
} item;

struct pp_perproc {
    const pp_perproc_tool *t;
    void *arg;
    item *items;
    size_t n;
    int stop_fd;
    double child_deadline;
};

static void comm_of(int pid, const char *fallback, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    ssize_t n = pp_read_small_file(path, out, len);
    if (n <= 0)
        snprintf(out, len, "%s", fallback ? fallback : "");
    else
        out[strcspn(out, "\n")] = '\0';
}

static void output_path(char *out, size_t len, const char *tmpdir, const char *prefix, int pid)
{
    unsigned char r[16];
    char letters[sizeof(r) + 1];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        for (size_t i = 0; i < sizeof(r); i++)
            r[i] = (unsigned char)(rand() & 0xff);
    for (size_t i = 0; i < sizeof(r); i++)
        letters[i] = (char)('a' + r[i] % 26);
    letters[sizeof(r)] = '\0';
    snprintf(out, len, "%s/%s.%s.%d.col", tmpdir, prefix, letters, pid);
}

static void start_one(pp_perproc *s, item *p, const char *exe, const char *tmpdir, int rate,
                      int duration)
{
    char rate_s[16], dur_s[16], pid_s[16];
    output_path(p->output, sizeof(p->output), tmpdir, s->t->file_prefix, p->pid);
    snprintf(rate_s, sizeof(rate_s), "%d", rate);
    snprintf(dur_s, sizeof(dur_s), "%d", duration);
    snprintf(pid_s, sizeof(pid_s), "%d", p->pid);
    const char *const keys[] = {"{exe}", "{rate}", "{duration}", "{output}", "{pid}"};
    const char *const vals[] = {exe, rate_s, dur_s, p->output, pid_s};
    char *argv[MAX_ARGS + 1];
    size_t n = 0;
    for (const char *const *a = s->t->argv; *a && n < MAX_ARGS; a++, n++) {
        argv[n] = (char *)*a;
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            if (strcmp(*a, keys[k]) == 0)
                argv[n] = (char *)vals[k];
    }
    argv[n] = NULL;
    /* SIGINT first: py-spy and rbspy write what they recorded, then exit */
    pp_child_opts o = {.argv = argv, .term_signal = SIGINT, .kill_grace = 1.0, .quiet = true};
    char err[300];
    p->child = pp_child_start(&o, err, sizeof(err));
    if (!p->child) {
        snprintf(p->reason, sizeof(p->reason), "%s", err);
        pp_warn_proc(p->pid, p->start_ticks, "%s for pid %d (%s) did not start: %s", s->t->name,
                     p->pid, p->comm, err);
    }
}

void pp_perproc_free(pp_perproc *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        pp_child_free(s->items[i].child);
        if (s->items[i].output[0])
            unlink(s->items[i].output);
    }
    free(s->items);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    free(s);
}

pp_perproc *pp_perproc_start(const pp_perproc_tool *t, const char *exe, const pp_runtime_ctx *ctx,
                             const pp_proc *procs, size_t n, void *arg)
{
    if (!ctx->tmpdir) {
        pp_error("%s: no session temporary directory", t->name);
        return NULL;
    }
    pp_perproc *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->t = t;
    s->arg = arg;
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->items = calloc(n ? n : 1, sizeof(*s->items));
    if (s->stop_fd < 0 || !s->items) {
        pp_perproc_free(s);
        return NULL;
    }
    int rate = ctx->frequency < t->max_hz ? ctx->frequency : t->max_hz;
    rate = rate > 0 ? rate : 1;
    /* gProfiler passes the session duration (not the time left) */
    int duration = ctx->duration > 0 ? ctx->duration : 1;
    s->child_deadline = pp_mono_now() + duration + t->extra_timeout;
    for (size_t i = 0; i < n; i++, s->n++) {
        item *p = &s->items[i];
        p->pid = procs[i].pid;
        p->start_ticks = procs[i].start_ticks;
        comm_of(p->pid, procs[i].comm, p->comm, sizeof(p->comm));
        start_one(s, p, exe, ctx->tmpdir, rate, duration);
    }
    pp_debug("%s: %zu processes, %d Hz, %d s (%s)", t->name, n, rate, duration, exe);
    return s;
}

void pp_perproc_stop(pp_perproc *s)
{
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof(one)) < 0)
        pp_debug("%s: cannot signal stop: %s", s->t->name, strerror(errno));
}

static int collect_one(pp_perproc *s, size_t i, pp_profile *out)
{
    const pp_perproc_tool *t = s->t;
    item *p = &s->items[i];
    pp_child_result res;
    pp_child_wait_until(p->child, s->child_deadline, s->stop_fd, &res);
    char desc[128], reason[400];
    bool failed = pp_child_describe(&res, desc, sizeof(desc));
    bool alive = pp_proc_alive(p->pid);
    size_t len = 0;
    char *text = pp_read_file(p->output, MAX_OUTPUT, PP_READ_TRUNCATE | PP_READ_NOFOLLOW, &len);
    if (text && len == MAX_OUTPUT)
        pp_warn("%s output %s reached %u MiB: only its start is read", t->name, p->output,
                MAX_OUTPUT >> 20);
    unlink(p->output);
    int rc = 0;
    if (text && text[0]) {
        pp_pid_profile *dst = pp_profile_get(out, p->pid, true);
        if (dst) {
            dst->comm = pp_profile_intern(out, p->comm);
            dst->runtime = t->runtime;
            dst->profiler = t->name;
            t->parse(s->arg, i, text, out, dst);
        } else {
            rc = -1;
        }
    } else if (!alive) {
        if (t->gone_stderr && res.err && strstr(res.err, t->gone_stderr)) {
            snprintf(reason, sizeof(reason), "process exited before %s started", t->name);
            rc = pp_error_stack(out, p->pid, p->comm, t->runtime, "error", reason);
        }
        /* else: exited during the session, nothing recorded: the sampler's stacks stay */
    } else if (failed && !res.stopped) {
        snprintf(reason, sizeof(reason), "%s %s", t->name, desc);
        rc = pp_error_stack(out, p->pid, p->comm, t->runtime, "error", reason);
        char why[4096];
        if (pp_child_failure_text(&res, t->name, why, sizeof(why)))
            pp_warn_proc(p->pid, p->start_ticks, "%s pid %d (%s): %s", t->runtime, p->pid, p->comm,
                         why);
    }
    free(text);
    pp_child_free(p->child);
    p->child = NULL;
    return rc;
}

int pp_perproc_collect(pp_perproc *s, pp_profile *out)
{
    int rc = 0;
    for (size_t i = 0; i < s->n; i++) {
        item *p = &s->items[i];
        if (!p->child) {
            if (pp_error_stack(out, p->pid, p->comm, s->t->runtime, "error", p->reason) < 0)
                rc = -1;
        } else if (collect_one(s, i, out) < 0) {
            rc = -1;
        }
    }
    return rc;
}
