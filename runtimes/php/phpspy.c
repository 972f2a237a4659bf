/* The phpspy launcher (--php-mode phpspy): gProfiler's command line (spec gprofiler-compat.md
 * §5.7) run through base/child.h for one session, its output parsed as gProfiler's parser does:
 * blocks of "<index> <frame>" lines (index 0 innermost; a block whose indexes do not count up
 * from 0 is corrupt), ended by "# pid = <pid>", separated by an empty line; each frame becomes
 * "<frame>_[php]" under the literal comm "php", one count per block. */
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
#include "runtimes/php/php_int.h"
#include "runtimes/runner.h"

#define PHPSPY_TOOL "php/phpspy"
#define PHPSPY_MAX_HZ 999
#define PHPSPY_BUFFER "16384" /* -b: gProfiler's BUFFER_SIZE */
#define PHPSPY_WORKERS "16"   /* -T: gProfiler's NUM_WORKERS */
#define MAX_OUTPUT (64u << 20)
#define MAX_FRAMES 512
#define DEFAULT_FILTER "php-fpm" /* gProfiler's --php-proc-filter default */

typedef struct phpspy {
    pp_child *child;
    char output[PATH_MAX];
    char reason[340];
    int stop_fd;
    double child_deadline;
    pp_proc *procs; /* for error stacks when phpspy could not start */
    size_t n;
} phpspy;

static bool phpspy_available(char *why, size_t len)
{
    char path[PATH_MAX];
    if (pp_resource_tool(PHPSPY_TOOL, path, sizeof(path)) == 0)
        return true;
    char where[1024];
    pp_resource_describe(NULL, PHPSPY_TOOL, true, where, sizeof(where));
    snprintf(why, len, "phpspy not found (looked for %s)", where);
    return false;
}

static void phpspy_free(void *session)
{
    phpspy *s = session;
    if (!s)
        return;
    pp_child_free(s->child);
    if (s->output[0])
        unlink(s->output);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    free(s->procs);
    free(s);
}

static void *phpspy_start(const pp_runtime_ctx *ctx, const pp_proc *procs, size_t n,
                          double deadline)
{
    char exe[PATH_MAX], why[1200];
    if (!phpspy_available(why, sizeof(why)))
        return NULL;
    phpspy *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->procs = calloc(n ? n : 1, sizeof(*s->procs));
    if (s->stop_fd < 0 || !s->procs) {
        phpspy_free(s);
        return NULL;
    }
    memcpy(s->procs, procs, n * sizeof(*procs));
    s->n = n;
    if (!phpspy_available(why, sizeof(why)) ||
        pp_resource_tool(PHPSPY_TOOL, exe, sizeof(exe)) != 0) {
        phpspy_free(s); /* the runner says why (the backend is not available) */
        return NULL;
    }
    if (!ctx->tmpdir) {
        snprintf(s->reason, sizeof(s->reason), "no session temporary directory");
        return s;
    }
    unsigned char r[8];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        memset(r, 0x5a, sizeof(r));
    snprintf(s->output, sizeof(s->output), "%s/phpspy.%02x%02x%02x%02x%02x%02x%02x%02x.col",
             ctx->tmpdir, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    const char *filter = pp_runtime_opt(ctx, "php-proc-filter");
    int hz = ctx->frequency < PHPSPY_MAX_HZ ? ctx->frequency : PHPSPY_MAX_HZ;
    char hz_s[16];
    snprintf(hz_s, sizeof(hz_s), "%d", hz);
    char *argv[] = {exe,        "--verbose-fields=p",
                    "-P",       (char *)(filter ? filter : DEFAULT_FILTER),
                    "-H",       hz_s,
                    "-b",       PHPSPY_BUFFER,
                    "-T",       PHPSPY_WORKERS,
                    "--output", s->output,
                    NULL};
    /* gProfiler appends phpspy's directory to PATH: phpspy runs the objdump, strings, awk and
     * xargs bundled beside it */
    char path_env[PATH_MAX + 4200];
    const char *path = getenv("PATH");
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(path_env, sizeof(path_env), "PATH=%.4096s:%s", path ? path : "/usr/bin:/bin", dir);
    /* polyprof's environment with that PATH (gProfiler copies os.environ) */
    extern char **environ;
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **envp = calloc(ne + 2, sizeof(*envp));
    if (!envp) {
        phpspy_free(s);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "PATH=", 5) != 0)
            envp[k++] = environ[i];
    envp[k++] = path_env;
    pp_child_opts o = {.argv = argv,
                       .envp = envp,
                       .term_signal = SIGINT,
                       .kill_grace = 2.0,
                       .quiet = true,
                       .capture_limit = 64 * 1024};
    char err[300];
    s->child = pp_child_start(&o, err, sizeof(err));
    free(envp);
    if (!s->child) {
        snprintf(s->reason, sizeof(s->reason), "phpspy did not start: %s", err);
        pp_warn("php: %s", s->reason);
    }
    s->child_deadline = deadline; /* then SIGINT: phpspy writes what it has and exits */
    pp_debug("phpspy: -P %s at %d Hz (%s)", filter ? filter : DEFAULT_FILTER, hz, exe);
    return s;
}

static void phpspy_stop(void *session)
{
    phpspy *s = session;
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof(one)) < 0)
        pp_debug("phpspy: cannot signal stop: %s", strerror(errno));
}

/* One block: lines "<i> <text>", then "# pid = N". 0 and the pid, or -1 when corrupt. */
static int parse_block(const char *b, size_t len, const char **frames, size_t *flens, size_t *nf,
                       long *pid)
{
    *nf = 0;
    *pid = -1;
    const char *end = b + len;
    while (b < end) {
        const char *nl = memchr(b, '\n', (size_t)(end - b));
        size_t ll = nl ? (size_t)(nl - b) : (size_t)(end - b);
        const char *next = nl ? nl + 1 : end;
        if (next >= end || (next < end && *next == '\0')) { /* the last line: the pid */
            char tmp[40];
            if (ll >= sizeof(tmp) || ll < 9 || memcmp(b, "# pid = ", 8) != 0)
                return -1;
            memcpy(tmp, b + 8, ll - 8);
            tmp[ll - 8] = '\0';
            char *e;
            errno = 0;
            long v = strtol(tmp, &e, 10);
            if (*e || errno || v <= 0 || v > 0x3fffffff)
                return -1;
            *pid = v;
            return 0;
        }
        /* "<index> <text>", the index counting up from 0 */
        size_t d = 0;
        while (d < ll && b[d] >= '0' && b[d] <= '9')
            d++;
        if (!d || d > 9 || d >= ll || b[d] != ' ')
            return -1;
        long idx = strtol(b, NULL, 10);
        if (idx != (long)*nf || *nf >= MAX_FRAMES)
            return -1;
        frames[*nf] = b + d + 1;
        flens[*nf] = ll - d - 1;
        (*nf)++;
        b = next;
    }
    return -1;
}

long pp_phpspy_parse(const char *text, size_t len, pp_profile *out, long *corrupt)
{
    static __thread const char *frames[MAX_FRAMES];
    static __thread size_t flens[MAX_FRAMES];
    uint32_t ids[MAX_FRAMES];
    long blocks = 0;
    *corrupt = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *sep = memmem(p, (size_t)(end - p), "\n\n", 2);
        if (!sep)
            break; /* the last part: empty in a complete file, else cut mid-block */
        size_t bl = (size_t)(sep - p) + 1; /* with its newline */
        size_t nf;
        long pid;
        if (bl > 1 && parse_block(p, bl, frames, flens, &nf, &pid) == 0) {
            size_t k = 0;
            bool ok = true;
            for (size_t i = nf; i-- > 0 && ok;) { /* root first */
                char f[1200];
                int fl = snprintf(f, sizeof(f), "%.*s_[php]",
                                  (int)(flens[i] > 1100 ? 1100 : flens[i]), frames[i]);
                ok = fl > 0 && memchr(frames[i], '\0', flens[i]) == NULL;
                ids[k++] = pp_profile_intern(out, f);
                ok = ok && ids[k - 1] != UINT32_MAX;
            }
            pp_pid_profile *dst = ok ? pp_profile_get(out, (int)pid, true) : NULL;
            if (dst) {
                if (!dst->runtime) {
                    dst->comm = pp_profile_intern(out, "php");
                    dst->runtime = "php";
                }
                if (pp_pid_add(dst, ids, k, 1) == 0)
                    blocks++;
            } else {
                (*corrupt)++;
            }
        } else if (bl > 1) {
            (*corrupt)++;
        }
        p = sep + 2;
    }
    return blocks;
}

static int phpspy_collect(void *session, pp_profile *out)
{
    phpspy *s = session;
    if (!s->child) {
        for (size_t i = 0; i < s->n; i++)
            pp_error_stack(out, s->procs[i].pid, s->procs[i].comm, "php", "error", s->reason);
        return 0;
    }
    /* at the session's deadline phpspy gets SIGINT: it writes what it has and exits */
    pp_child_result res;
    pp_child_wait_until(s->child, s->child_deadline, s->stop_fd, &res);
    size_t len = 0;
    char *text = pp_read_file(s->output, MAX_OUTPUT, PP_READ_TRUNCATE | PP_READ_NOFOLLOW, &len);
    unlink(s->output);
    long corrupt = 0, blocks = text ? pp_phpspy_parse(text, len, out, &corrupt) : 0;
    if (corrupt)
        pp_warn("phpspy: %ld corrupted stacks", corrupt);
    char desc[128];
    if (pp_child_describe(&res, desc, sizeof(desc)) && !res.exited && !res.term_signal)
        pp_debug("phpspy %s", desc);
    pp_debug("phpspy: %ld stacks", blocks);
    free(text);
    pp_child_free(s->child);
    s->child = NULL;
    return 0;
}

static const char *const phpspy_modes[] = {"phpspy", "auto", NULL};

const pp_backend pp_php_phpspy_backend = {
    .name = "phpspy",
    .modes = phpspy_modes,
    .available = phpspy_available,
    .start = phpspy_start,
    .collect = phpspy_collect,
    .stop = phpspy_stop,
    .free = phpspy_free,
};
