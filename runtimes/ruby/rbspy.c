/* The rbspy launcher (--ruby-mode rbspy): one `rbspy record` child per Ruby process, with
 * gProfiler's command line (its fork's flags spelled as upstream rbspy has them, docs/ruby.md),
 * run through base/child.h, its collapsed output parsed into `_[rb]` frames. */
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
#include "base/resource.h"
#include "runtimes/folded.h"
#include "runtimes/ruby/rbspy.h"
#include "runtimes/runner.h"

#define MAX_OUTPUT (64u << 20) /* bytes of one rbspy output file */
#define TIMEOUT_EXTRA 10.0     /* gProfiler: duration + 10 s, then SIGKILL */
#define SUFFIX "_[rb]"
#define CFUNC_MARK " [c function] - " /* rbspy's C-function frames: "<name> [c function] - ..." */

typedef struct spyproc {
    int pid;
    unsigned long long start_ticks;
    char comm[64];
    char output[PATH_MAX];
    pp_child *child;
    char reason[340]; /* why the child could not start (its error stack) */
} spyproc;

typedef struct rbspy {
    spyproc *procs;
    size_t n;
    int stop_fd;
    double child_deadline;
} rbspy;

int pp_rbspy_find(char *out, size_t len)
{
    return pp_resource_tool("ruby/rbspy", out, len);
}

/* gProfiler's frame of an rbspy frame: "_[rb]" after a Ruby frame (once: Granulate's fork
 * writes it itself); a C-function frame unsuffixed, with the ":0" line the fork writes and
 * upstream rbspy omits ("(unknown) [c function] - (unknown)"). */
static void rewrite_frame(void *arg, const char *f, size_t len, char *out, size_t cap)
{
    (void)arg;
    size_t sl = strlen(SUFFIX);
    bool has = len >= sl && memcmp(f + len - sl, SUFFIX, sl) == 0;
    const char *c = memmem(f, len, CFUNC_MARK, strlen(CFUNC_MARK));
    if (!c) {
        snprintf(out, cap, "%.*s%s", (int)len, f, has ? "" : SUFFIX);
        return;
    }
    const char *path = c + strlen(CFUNC_MARK),
               *colon = memrchr(path, ':', len - (size_t)(path - f));
    const char *end = f + len, *d = colon ? colon + 1 : end;
    while (d < end && *d >= '0' && *d <= '9')
        d++;
    bool lined = colon && d == end && d > colon + 1;
    snprintf(out, cap, "%.*s%s", (int)len, f, lined ? "" : ":0");
}

size_t pp_rbspy_parse(char *text, pp_profile *out, pp_pid_profile *dst)
{
    return pp_folded_parse(text, out, dst, rewrite_frame, NULL);
}

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

/* gProfiler's file name: rbspy.<16 random letters>.<pid>.col */
static void output_path(char *out, size_t len, const char *tmpdir, int pid)
{
    unsigned char r[16];
    char letters[sizeof(r) + 1];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        for (size_t i = 0; i < sizeof(r); i++)
            r[i] = (unsigned char)(rand() & 0xff);
    for (size_t i = 0; i < sizeof(r); i++)
        letters[i] = (char)('a' + r[i] % 26);
    letters[sizeof(r)] = '\0';
    snprintf(out, len, "%s/rbspy.%s.%d.col", tmpdir, letters, pid);
}

static void start_one(spyproc *p, const char *exe, const char *tmpdir, int rate, int duration)
{
    char rate_s[16], dur_s[16], pid_s[16];
    output_path(p->output, sizeof(p->output), tmpdir, p->pid);
    snprintf(rate_s, sizeof(rate_s), "%d", rate);
    snprintf(dur_s, sizeof(dur_s), "%d", duration);
    snprintf(pid_s, sizeof(pid_s), "%d", p->pid);
    char *argv[] = {(char *)exe, "record",  "--silent",      "-r",        rate_s,
                    "-d",        dur_s,     "--nonblocking", "--on-cpu",  "--format=collapsed",
                    "--file",    p->output, "--raw-file",    "/dev/null", "-p",
                    pid_s,       NULL};
    /* SIGINT: rbspy writes what it has recorded, then exits */
    pp_child_opts o = {.argv = argv, .term_signal = SIGINT, .kill_grace = 1.0, .quiet = true};
    char err[300];
    p->child = pp_child_start(&o, err, sizeof(err));
    if (!p->child) {
        snprintf(p->reason, sizeof(p->reason), "%s", err);
        pp_warn_proc(p->pid, p->start_ticks, "rbspy for pid %d (%s) did not start: %s", p->pid,
                     p->comm, err);
    }
}

static void rbspy_free(void *session)
{
    rbspy *s = session;
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

static void *rbspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    char exe[PATH_MAX];
    (void)deadline; /* gProfiler gives rbspy the session duration, not the time left */
    if (pp_rbspy_find(exe, sizeof(exe)) < 0)
        return NULL; /* logged by the session (the backend is not available) */
    if (!ctx->tmpdir) {
        pp_error("rbspy: no session temporary directory");
        return NULL;
    }
    rbspy *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->procs = calloc(n ? n : 1, sizeof(*s->procs));
    if (s->stop_fd < 0 || !s->procs) {
        rbspy_free(s);
        return NULL;
    }
    int rate = ctx->frequency < PP_RBSPY_MAX_HZ ? ctx->frequency : PP_RBSPY_MAX_HZ;
    rate = rate > 0 ? rate : 1;
    int duration = ctx->duration > 0 ? ctx->duration : 1;
    s->child_deadline = pp_mono_now() + duration + TIMEOUT_EXTRA;
    for (size_t i = 0; i < n; i++, s->n++) {
        spyproc *p = &s->procs[i];
        p->pid = procs[i].pid;
        p->start_ticks = procs[i].start_ticks;
        comm_of(p->pid, procs[i].comm, p->comm, sizeof(p->comm));
        start_one(p, exe, ctx->tmpdir, rate, duration);
    }
    pp_debug("rbspy: %zu processes, %d Hz, %d s (%s)", n, rate, duration, exe);
    return s;
}

static void rbspy_stop(void *session)
{
    rbspy *s = session;
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof(one)) < 0)
        pp_debug("rbspy: cannot signal stop: %s", strerror(errno));
}

static int collect_one(rbspy *s, spyproc *p, pp_profile *out)
{
    pp_child_result res;
    pp_child_wait_until(p->child, s->child_deadline, s->stop_fd, &res);
    char desc[128], frame[400];
    bool failed = pp_child_describe(&res, desc, sizeof(desc));
    bool alive = pp_proc_alive(p->pid);
    size_t len = 0;
    char *text = pp_read_file(p->output, MAX_OUTPUT, PP_READ_TRUNCATE | PP_READ_NOFOLLOW, &len);
    if (text && len == MAX_OUTPUT)
        pp_warn("rbspy output %s reached %u MiB: only its start is read", p->output,
                MAX_OUTPUT >> 20);
    unlink(p->output);
    int rc = 0;
    if (text && text[0]) {
        pp_pid_profile *dst = pp_profile_get(out, p->pid, true);
        if (dst) {
            dst->comm = pp_profile_intern(out, p->comm);
            dst->runtime = "ruby";
            pp_rbspy_parse(text, out, dst);
        } else {
            rc = -1;
        }
    } else if (!alive) {
        /* exited during the session: nothing recorded, the sampler's stacks stay */
    } else if (failed && !res.stopped) {
        snprintf(frame, sizeof(frame), "rbspy %s", desc);
        pp_error_stack(out, p->pid, p->comm, "ruby", "error", frame);
        char why[4096];
        if (pp_child_failure_text(&res, "rbspy", why, sizeof(why)))
            pp_warn_proc(p->pid, p->start_ticks, "ruby pid %d (%s): %s", p->pid, p->comm, why);
    }
    free(text);
    pp_child_free(p->child);
    p->child = NULL;
    return rc;
}

static int rbspy_collect(void *session, pp_profile *out)
{
    rbspy *s = session;
    int rc = 0;
    for (size_t i = 0; i < s->n; i++) {
        spyproc *p = &s->procs[i];
        if (!p->child)
            pp_error_stack(out, p->pid, p->comm, "ruby", "error", p->reason);
        else if (collect_one(s, p, out) < 0)
            rc = -1;
    }
    return rc;
}

static bool rbspy_available(char *why, size_t len)
{
    char path[PATH_MAX];
    if (pp_rbspy_find(path, sizeof(path)) == 0)
        return true;
    char where[2048];
    pp_resource_describe(NULL, "ruby/rbspy", true, where, sizeof(where));
    snprintf(why, len,
             "rbspy not found (looked for %s); install rbspy there (make deps builds it; or set "
             "POLYPROF_RESOURCES)",
             where);
    return false;
}

static const char *const rbspy_modes[] = {"rbspy", NULL};

const pp_backend pp_ruby_rbspy_backend = {
    .name = "rbspy",
    .modes = rbspy_modes,
    .available = rbspy_available,
    .start = rbspy_start,
    .collect = rbspy_collect,
    .stop = rbspy_stop,
    .free = rbspy_free,
};
