/* async-profiler launcher: places libasyncProfiler.so in the JVM's mount namespace, runs
 * `asprof <pid> load <lib> true start,...` and `... stop,...` (gProfiler's command lines, see
 * asprof_cmd.c) as supervised children and parses the collapsed output. See asprof.h and
 * docs/java.md ("async-profiler launcher").
 *
 * Layout: the library is found next to asprof (upstream `bin/asprof` + `lib/`, or gProfiler's
 * `resources/java/{asprof,glibc/,musl/}`) and copied to
 * `<target dir>/async-profiler-<ver>/<glibc|musl>/libasyncProfiler.so` inside the target, where
 * the target dir is /tmp/polyprof-<random> (pp_target_tmpdir; kept, so async-profiler is loaded
 * once per JVM). Output and log files are `async-profiler-<pid>.{output,log}` in
 * `<target dir>/<session dir name>` inside the target's root, pre-created and owned by the JVM's
 * user (mode 0600), removed by pp_asprof_free. Every directory on the way must be root-owned:
 * anything another user planted fails this JVM's start with a reason, nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/child.h"
#include "base/log.h"
#include "runtimes/java/asprof.h"
#include "runtimes/java/asprof_int.h"
#include "base/procfiles.h"
#include "base/resource.h"

#define MAX_CREATED 8
#define STOP_SECONDS 8.0 /* how long a stop may take */

struct pp_asprof_session {
    int pid;
    char asprof[PATH_MAX];
    char lib_ns[PATH_MAX]; /* the library as the JVM sees it */
    char out_ns[PATH_MAX], log_ns[PATH_MAX];
    char out_name[64], log_name[64];
    int dirfd; /* the output directory, through the target's root */
    char created[MAX_CREATED][4096];
    int ncreated;
    pp_asprof_opts o;
    double deadline;
    bool started, stopped;
};

int pp_asprof_find(char *out, size_t len)
{
    return pp_resource_tool("java/asprof", out, len);
}

/* The last "[ERROR]" line of the log (else its last line), for messages. */
static void log_tail(const pp_asprof_session *s, char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = openat(s->dirfd, s->log_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    char text[16384];
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return;
    text[n] = '\0';
    const char *best = NULL;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (*line && (!best || strstr(line, "[ERROR]") || !strstr(best, "[ERROR]")))
            best = line;
        line = nl ? nl + 1 : NULL;
    }
    size_t bl = best ? strlen(best) : 0;
    if (bl >= len)
        bl = len - 1;
    memcpy(buf, best ? best : "", bl);
    buf[bl] = '\0';
}

static void reset_log(const pp_asprof_session *s)
{
    int fd = openat(s->dirfd, s->log_name, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
}

/* Runs `asprof <pid> load <lib> true <arg>` until deadline. Returns the exit code (0 ok), or
 * -1 when it could not run, was killed or timed out; why gets a one-line reason on failure. */
static int run_asprof(pp_asprof_session *s, const char *arg, double deadline, char *why,
                      size_t whylen)
{
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", s->pid);
    char *argv[] = {s->asprof, pid, "load", s->lib_ns, "true", (char *)arg, NULL};
    pp_child_opts co = {.argv = argv,
                        .capture_limit = 65536,
                        .term_signal = SIGTERM,
                        .kill_grace = 1,
                        .quiet = true};
    reset_log(s);
    pp_child *c = pp_child_start(&co, why, whylen);
    if (!c)
        return -1;
    pp_child_result r;
    int code = -1;
    if (pp_child_wait(c, deadline, &r) == 0 && r.exited)
        code = r.exit_code;
    if (code != 0) {
        char desc[64], tail[512], err1[512] = "";
        pp_child_describe(&r, desc, sizeof(desc));
        log_tail(s, tail, sizeof(tail));
        if (!tail[0] && r.err) { /* last non-empty stderr line */
            snprintf(err1, sizeof(err1), "%s", r.err);
            char *e = err1 + strlen(err1);
            while (e > err1 && (e[-1] == '\n' || e[-1] == ' '))
                *--e = '\0';
            char *nl = strrchr(err1, '\n');
            snprintf(tail, sizeof(tail), "%s", nl ? nl + 1 : err1);
        }
        snprintf(why, whylen, "asprof %s%s%s", desc, tail[0] ? ": " : "", tail);
    }
    pp_child_free(c);
    return code;
}

/* In the session directory (root-owned, created by polyprof, writable by root only): never a
 * link, a regular file. */
static int create_file(pp_asprof_session *s, const char *name, uid_t uid, gid_t gid)
{
    int fd = openat(s->dirfd, name,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    struct stat st;
    int rc = fstat(fd, &st);
    if (rc == 0 && !S_ISREG(st.st_mode)) {
        errno = EINVAL;
        rc = -1;
    }
    if (rc == 0)
        rc = fchown(fd, uid, gid);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* Library in the target; fills s->lib_ns. */
static int place_library(pp_asprof_session *s, const char *base, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    bool musl = pp_find_mapping(s->pid, "ld-musl", tmp, sizeof(tmp)) == 0 &&
                pp_find_mapping(s->pid, "glibc-compat", tmp, sizeof(tmp)) != 0;
    char src[PATH_MAX], ver[64], dir[PATH_MAX];
    if (pp_asprof_find_lib(s->asprof, musl, src, sizeof(src), ver, sizeof(ver), err, errlen) < 0)
        return -1;
    snprintf(dir, sizeof(dir), "%s/async-profiler-%s/%s", base, ver, musl ? "musl" : "glibc");
    int fd = pp_asprof_open_dir(s->pid, dir, true, NULL, NULL, 0, err, errlen);
    if (fd < 0)
        return -1;
    /* gProfiler requires 250 KiB free: the library, output and log must fit */
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < 250u * 1024) {
        snprintf(err, errlen, "less than 250 KiB free in %s inside pid %d's mount namespace", base,
                 s->pid);
        close(fd);
        return -1;
    }
    int rc = pp_asprof_copy_lib(src, fd, "libasyncProfiler.so", err, errlen);
    close(fd);
    if ((size_t)snprintf(s->lib_ns, sizeof(s->lib_ns), "%.*s/libasyncProfiler.so",
                         (int)(sizeof(s->lib_ns) - 32), dir) >= sizeof(s->lib_ns))
        rc = -1;
    return rc;
}

/* Output and log files in the session directory seen through the target's root. */
static int place_files(pp_asprof_session *s, const char *tmpdir, char *err, size_t errlen)
{
    uid_t uid;
    gid_t gid;
    if (pp_asprof_proc_ids(s->pid, &uid, &gid) < 0) {
        snprintf(err, errlen, "process %d exited", s->pid);
        return -1;
    }
    s->dirfd = pp_asprof_open_dir(s->pid, tmpdir, true, s->created, &s->ncreated, MAX_CREATED, err,
                                  errlen);
    if (s->dirfd < 0)
        return -1;
    /* a JVM running as another user must reach its two files (it cannot list the directory) */
    if (uid != 0 && fchmod(s->dirfd, 0711) < 0) {
        snprintf(err, errlen, "cannot open the session directory to pid %d: %s", s->pid,
                 strerror(errno));
        return -1;
    }
    snprintf(s->out_name, sizeof(s->out_name), "async-profiler-%d.output", s->pid);
    snprintf(s->log_name, sizeof(s->log_name), "async-profiler-%d.log", s->pid);
    snprintf(s->out_ns, sizeof(s->out_ns), "%s/%s", tmpdir, s->out_name);
    snprintf(s->log_ns, sizeof(s->log_ns), "%s/%s", tmpdir, s->log_name);
    if (create_file(s, s->out_name, uid, gid) < 0 || create_file(s, s->log_name, uid, gid) < 0) {
        snprintf(err, errlen, "cannot create async-profiler's output files for pid %d: %s", s->pid,
                 strerror(errno));
        return -1;
    }
    return 0;
}

pp_asprof_session *pp_asprof_start(const char *asprof, int pid, const pp_runtime_ctx *ctx,
                                   double deadline, char *err, size_t errlen)
{
    pp_asprof_session *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->pid = pid;
    s->dirfd = -1;
    s->deadline = deadline;
    snprintf(s->asprof, sizeof(s->asprof), "%s", asprof);
    double now = pp_mono_now();
    int duration = (int)ceil(deadline - now);
    pp_asprof_opts_init(&s->o, ctx, duration, pp_asprof_perf_works());
    const char *sess = ctx && ctx->tmpdir ? strrchr(ctx->tmpdir, '/') : NULL;
    char files[1024]; /* /tmp/polyprof-<random>/sess-<pid>-<random> */
    if (!sess || !sess[1] || !ctx->target_tmpdir || ctx->target_tmpdir[0] != '/' ||
        (size_t)snprintf(files, sizeof(files), "%s%s", ctx->target_tmpdir, sess) >= sizeof(files)) {
        snprintf(err, errlen, "no session temp directory");
        pp_asprof_free(s);
        return NULL;
    }
    if (place_library(s, ctx->target_tmpdir, err, errlen) < 0 ||
        place_files(s, files, err, errlen) < 0) {
        pp_asprof_free(s);
        return NULL;
    }
    char arg[8192], why[768];
    if (pp_asprof_start_arg(&s->o, s->out_ns, s->log_ns, arg, sizeof(arg)) < 0) {
        snprintf(err, errlen, "async-profiler arguments too long");
        pp_asprof_free(s);
        return NULL;
    }
    double limit = now + s->o.attach_timeout;
    for (int attempt = 0;; attempt++) {
        int code = run_asprof(s, arg, limit, why, sizeof(why));
        if (code == 0)
            break;
        /* left running by an earlier polyprof: stop it without output, then start once more */
        if (code == 200 && strstr(why, "Profiler already started") && attempt == 0) {
            char stop[8192], why2[768];
            pp_asprof_stop_arg(&s->o, s->out_ns, s->log_ns, false, stop, sizeof(stop));
            pp_info("java: async-profiler was already running in pid %d; restarting it", pid);
            if (run_asprof(s, stop, pp_mono_now() + STOP_SECONDS, why2, sizeof(why2)) == 0)
                continue;
        }
        snprintf(err, errlen, "async-profiler did not start: %s", why);
        pp_asprof_free(s);
        return NULL;
    }
    s->started = true;
    return s;
}

/* The output file (NUL-terminated, malloc'd) or NULL. */
static char *read_output(pp_asprof_session *s, size_t *len, char *err, size_t errlen)
{
    int fd = openat(s->dirfd, s->out_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > PP_ASPROF_MAX_OUTPUT) {
        snprintf(err, errlen, "cannot read async-profiler's output %s: %s", s->out_ns,
                 fd < 0 ? strerror(errno) : "not a regular file or too large");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    ssize_t n = 0;
    while (buf && got < (size_t)st.st_size &&
           (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
        got += (size_t)n;
    close(fd);
    if (!buf || n < 0) {
        snprintf(err, errlen, "cannot read async-profiler's output %s", s->out_ns);
        free(buf);
        return NULL;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
}

int pp_asprof_collect(pp_asprof_session *s, pp_profile *prof, pp_pid_profile *pp, char *err,
                      size_t errlen)
{
    if (!s || !s->started) {
        snprintf(err, errlen, "async-profiler was not started");
        return -1;
    }
    char arg[8192], why[768] = "";
    int code = -1;
    if (!s->stopped && pp_asprof_stop_arg(&s->o, s->out_ns, s->log_ns, true, arg, sizeof(arg)) == 0)
        code = run_asprof(s, arg, pp_mono_now() + STOP_SECONDS, why, sizeof(why));
    s->stopped = true;
    size_t len = 0;
    char *text = read_output(s, &len, err, errlen);
    if (!text)
        return -1;
    /* a JVM that exited keeps what async-profiler dumped at exit; otherwise a failed stop
     * with no output is an error */
    if (code != 0 && len == 0) {
        snprintf(err, errlen, "async-profiler did not stop: %s", why);
        free(text);
        return -1;
    }
    size_t bad = 0;
    long added = pp_asprof_parse_collapsed(text, len, prof, pp, &bad);
    free(text);
    if (bad)
        pp_debug("java: %zu malformed lines in async-profiler output of pid %d", bad, s->pid);
    if (added == 0 && bad > 0) {
        snprintf(err, errlen, "async-profiler output has no valid stack line (%zu malformed)", bad);
        return -1;
    }
    return 0;
}

void pp_asprof_free(pp_asprof_session *s)
{
    if (!s)
        return;
    if (s->started && !s->stopped && kill(s->pid, 0) == 0) {
        char arg[8192], why[768];
        if (pp_asprof_stop_arg(&s->o, s->out_ns, s->log_ns, false, arg, sizeof(arg)) == 0)
            run_asprof(s, arg, pp_mono_now() + STOP_SECONDS, why, sizeof(why));
    }
    if (s->dirfd >= 0) {
        if (s->out_name[0])
            unlinkat(s->dirfd, s->out_name, 0);
        if (s->log_name[0])
            unlinkat(s->dirfd, s->log_name, 0);
        close(s->dirfd);
    }
    /* directories created in the target, deepest first, each reached without symlinks */
    for (int i = s->ncreated - 1; i >= 0; i--) {
        char parent[4096], err[256];
        snprintf(parent, sizeof(parent), "%s", s->created[i]);
        char *slash = strrchr(parent, '/');
        if (!slash)
            continue;
        *slash = '\0';
        int fd = pp_asprof_open_dir(s->pid, parent, false, NULL, NULL, -1, err, sizeof(err));
        if (fd >= 0) {
            unlinkat(fd, slash + 1, AT_REMOVEDIR);
            close(fd);
        }
    }
    free(s);
}
