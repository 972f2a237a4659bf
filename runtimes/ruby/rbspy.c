/* The rbspy launcher (--ruby-mode rbspy): one `rbspy record` child per Ruby process with
 * gProfiler's command line (its fork's flags spelled as upstream rbspy has them, docs/ruby.md),
 * through runtimes/perproc.h; its collapsed output parsed into `_[rb]` frames. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/resource.h"
#include "runtimes/folded.h"
#include "runtimes/perproc.h"
#include "runtimes/ruby/rbspy.h"

#define SUFFIX "_[rb]"
#define CFUNC_MARK " [c function] - " /* rbspy's C-function frames: "<name> [c function] - ..." */

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

static size_t parse(void *arg, size_t i, char *text, pp_profile *out, pp_pid_profile *dst)
{
    (void)arg;
    (void)i;
    return pp_rbspy_parse(text, out, dst);
}

static const char *const argv[] = {
    "{exe}",  "record",     "--silent",      "-r",        "{rate}",
    "-d",     "{duration}", "--nonblocking", "--on-cpu",  "--format=collapsed",
    "--file", "{output}",   "--raw-file",    "/dev/null", "-p",
    "{pid}",  NULL};

static const pp_perproc_tool tool = {
    .name = "rbspy",
    .file_prefix = "rbspy",
    .runtime = "ruby",
    .argv = argv,
    .max_hz = PP_RBSPY_MAX_HZ,
    .extra_timeout = 10.0, /* gProfiler: duration + 10 s, then SIGKILL */
    /* rbspy's words for a pid that is gone when it starts */
    .gone_stderr = "Failed to get process executable name",
    .parse = parse,
};

static void *rbspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n, double deadline)
{
    char exe[PATH_MAX];
    (void)deadline; /* gProfiler gives rbspy the session duration, not the time left */
    if (pp_rbspy_find(exe, sizeof(exe)) < 0)
        return NULL; /* logged by the session (the backend is not available) */
    return pp_perproc_start(&tool, exe, ctx, procs, n, NULL);
}

static int rbspy_collect(void *session, pp_profile *out)
{
    return pp_perproc_collect(session, out);
}

static void rbspy_stop(void *session)
{
    pp_perproc_stop(session);
}

static void rbspy_free(void *session)
{
    pp_perproc_free(session);
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
