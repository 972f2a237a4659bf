/* async-profiler in a JVM: places libasyncProfiler.so in the JVM's mount namespace, sends
 * `load <lib> true start,...` and `load <lib> true stop,...` through polyprof's attach client
 * (the arguments of asprof_cmd.c) and parses the collapsed output. See asprof.h and docs/java.md
 * ("async-profiler").
 *
 * Library: async-profiler cannot be unloaded, and a second copy in one JVM would fight the first
 * over its signal handler and perf events, so a JVM that maps a libasyncProfiler.so already
 * (loaded by an earlier session, by gProfiler or by its user) is given that path again: the
 * dynamic loader finds it by name among the loaded objects without opening the file, which may
 * be gone (verified on JDK 17 and 25). Otherwise the library of the jar is written to
 * `<target dir>/async-profiler-<ver>/libasyncProfiler.so` inside the target's root for the
 * load and removed right after it, where the target dir is /tmp/polyprof-<random>
 * (pp_target_tmpdir). Output and log files are `async-profiler-<pid>.{output,log}` in
 * `<target dir>/<session dir name>` inside the target's root, pre-created and owned by the JVM's
 * user (mode 0600), removed by pp_asprof_free with the directories polyprof created. Every
 * directory on the way must be root-owned: anything another user planted fails this JVM's start
 * with a reason, nothing else. */
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

#include <stdatomic.h>

#include "base/child.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "base/resource.h"
#include "runtimes/java/asprof.h"
#include "runtimes/java/asprof_int.h"
#include "runtimes/java/attach.h"
#include "runtimes/java/jvmutil.h"

#define STOP_SECONDS 8.0 /* how long a stop may take */
#define LIB_NAME "libasyncProfiler.so"

struct pp_asprof_session {
    int pid;
    char lib_ns[PATH_MAX]; /* the library as the JVM sees it */
    char out_ns[PATH_MAX], log_ns[PATH_MAX];
    char out_name[64], log_name[64];
    int dirfd;        /* the output directory, through the target's root */
    char base[1024];  /* the target dir, /tmp/polyprof-<random> */
    char files[2048]; /* the session directory below it */
    pp_asprof_opts o;
    double deadline;
    bool started, stopped;
};

int pp_asprof_find(char *out, size_t len)
{
    return pp_resource_lookup(NULL, "java/async-profiler.jar", false, out, len);
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

/* The first line of text, for messages. */
static void first_line(const char *text, char *buf, size_t len)
{
    snprintf(buf, len, "%.*s", (int)strcspn(text ? text : "", "\n"), text ? text : "");
}

/* Sends `load <lib> true <arg>` through the attach client until deadline. Returns the agent's
 * return code (0 ok; async-profiler answers 200 to an action that failed, with an [ERROR] line
 * in its log), or -1 when the JVM could not be reached or did not load the library; why gets a
 * one-line reason on failure. */
static int run_agent(pp_asprof_session *s, const char *arg, double deadline, char *why,
                     size_t whylen)
{
    reset_log(s);
    double left = deadline - pp_mono_now();
    char *out = NULL, err[256], line[256];
    int code = pp_jattach_cmd(s->pid, "load", s->lib_ns, "true", arg, left > 0.5 ? left : 0.5, &out,
                              err, sizeof(err));
    int ret = -1;
    if (code < 0) {
        snprintf(why, whylen, "%s", err);
    } else if (code != 0) {
        first_line(out, line, sizeof(line));
        snprintf(why, whylen, "JVM %d did not load %.300s (attach result %d): %.200s", s->pid,
                 s->lib_ns, code, line[0] ? line : "no message");
    } else {
        /* JDK 9+ answer "return code: N", JDK 8 "N" alone */
        const char *rc = strstr(out, "return code: ");
        const char *num = rc ? rc + 13 : out;
        char *end;
        long v = strtol(num, &end, 10);
        ret = end != num ? (int)v : -1;
        if (end == num && !*out)
            ret = 0;
        if (ret != 0) {
            char tail[512];
            log_tail(s, tail, sizeof(tail));
            first_line(out, line, sizeof(line));
            if (ret < 0)
                snprintf(why, whylen, "unexpected answer to load from JVM %d: %s", s->pid, line);
            else
                snprintf(why, whylen, "async-profiler returned %d%s%s", ret, tail[0] ? ": " : "",
                         tail);
        }
    }
    free(out);
    return ret;
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

/* The library the JVM loads, in s->lib_ns: the libasyncProfiler.so it maps already, else the
 * jar's, written into <base>/async-profiler-<ver>/ inside the target (the directory's fd in
 * *libdir: the caller removes the file and the directory after the load). */
static int place_library(pp_asprof_session *s, const pp_asprof_lib *lib, int *libdir, char *err,
                         size_t errlen)
{
    const char *base = s->base;
    char loaded[PATH_MAX], dir[PATH_MAX];
    if (pp_find_mapping(s->pid, "/" LIB_NAME, loaded, sizeof(loaded)) == 0 && loaded[0] == '/' &&
        strcmp(strrchr(loaded, '/'), "/" LIB_NAME) == 0) {
        snprintf(s->lib_ns, sizeof(s->lib_ns), "%s", loaded);
        pp_debug("java: pid %d has async-profiler loaded from %s already: using it", s->pid,
                 loaded);
        return 0;
    }
    if ((size_t)snprintf(dir, sizeof(dir), "%s/async-profiler-%s", base, lib->version) >=
            sizeof(dir) - sizeof(LIB_NAME) - 1 ||
        (*libdir = pp_asprof_open_dir(s->pid, dir, true, true, err, errlen)) < 0)
        return -1;
    /* gProfiler requires 250 KiB free: the library, output and log must fit */
    struct statvfs vfs;
    if (fstatvfs(*libdir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < 250u * 1024) {
        snprintf(err, errlen, "less than 250 KiB free in %s inside pid %d's mount namespace", base,
                 s->pid);
        return -1;
    }
    snprintf(s->lib_ns, sizeof(s->lib_ns), "%.*s/%s",
             (int)(sizeof(s->lib_ns) - sizeof(LIB_NAME) - 1), dir, LIB_NAME);
    return pp_asprof_lib_write(lib, *libdir, LIB_NAME, err, errlen);
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
    s->dirfd = pp_asprof_open_dir(s->pid, tmpdir, true, true, err, errlen);
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

/* Once per run: the options upstream async-profiler has no equivalent for. */
static void notice_ignored(const pp_asprof_opts *o)
{
    static atomic_bool said;
    char list[256];
    if (pp_asprof_ignored(o, list, sizeof(list)) && !atomic_exchange(&said, true))
        pp_info("java: async-profiler 4.x has no equivalent of %s (options of gProfiler's "
                "async-profiler fork): ignored",
                list);
}

/* Starts the profiler (s->lib_ns loaded): when an earlier polyprof left it running, stops it
 * without output and starts once more. 0, or -1 with err. */
static int start_profiler(pp_asprof_session *s, double limit, char *err, size_t errlen)
{
    char arg[8192], why[768];
    if (pp_asprof_start_arg(&s->o, s->out_ns, s->log_ns, arg, sizeof(arg)) < 0) {
        snprintf(err, errlen, "async-profiler arguments too long");
        return -1;
    }
    for (int attempt = 0;; attempt++) {
        int code = run_agent(s, arg, limit, why, sizeof(why));
        if (code == 0)
            return 0;
        if (code == 200 && strstr(why, "Profiler already started") && attempt == 0) {
            char stop[8192], why2[768];
            pp_asprof_stop_arg(&s->o, s->out_ns, s->log_ns, false, stop, sizeof(stop));
            pp_info("java: async-profiler was already running in pid %d; restarting it", s->pid);
            if (run_agent(s, stop, pp_mono_now() + STOP_SECONDS, why2, sizeof(why2)) == 0)
                continue;
        }
        snprintf(err, errlen, "async-profiler did not start: %s", why);
        return -1;
    }
}

pp_asprof_session *pp_asprof_start(const pp_asprof_lib *lib, int pid, const pp_runtime_ctx *ctx,
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
    double now = pp_mono_now();
    int duration = (int)ceil(deadline - now);
    pp_asprof_opts_init(&s->o, ctx, duration, pp_asprof_perf_works());
    notice_ignored(&s->o);
    const char *sess = ctx && ctx->tmpdir ? strrchr(ctx->tmpdir, '/') : NULL;
    /* /tmp/polyprof-<random>/sess-<pid>-<random> */
    if (!sess || !sess[1] || !ctx->target_tmpdir || ctx->target_tmpdir[0] != '/' ||
        (size_t)snprintf(s->base, sizeof(s->base), "%s", ctx->target_tmpdir) >= sizeof(s->base) ||
        (size_t)snprintf(s->files, sizeof(s->files), "%s%s", s->base, sess) >= sizeof(s->files)) {
        snprintf(err, errlen, "no session temp directory");
        pp_asprof_free(s);
        return NULL;
    }
    int libdir = -1;
    int rc = place_files(s, s->files, err, errlen);
    if (rc == 0)
        rc = place_library(s, lib, &libdir, err, errlen);
    if (rc == 0)
        rc = start_profiler(s, now + s->o.attach_timeout, err, errlen);
    /* loaded or not, the library file has done its work: the JVM keeps its mapping */
    if (libdir >= 0) {
        unlinkat(libdir, LIB_NAME, 0);
        close(libdir);
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%.*s", (int)(strlen(s->lib_ns) - sizeof(LIB_NAME)), s->lib_ns);
        pp_asprof_rmdirs(pid, dir, s->base);
    }
    if (rc < 0) {
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
        code = run_agent(s, arg, pp_mono_now() + STOP_SECONDS, why, sizeof(why));
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
    pp_java_tids tids;
    pp_java_tids_init(&tids, s->pid);
    pp_asprof_parse_opts po = {
        .thread_frames = s->o.threads, .sampler_tid = pp_java_tids_map, .arg = &tids};
    long added = pp_asprof_parse_threads(text, len, prof, pp, &po, &bad);
    pp_java_tids_free(&tids);
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
            run_agent(s, arg, pp_mono_now() + STOP_SECONDS, why, sizeof(why));
    }
    if (s->dirfd >= 0) {
        if (s->out_name[0])
            unlinkat(s->dirfd, s->out_name, 0);
        if (s->log_name[0])
            unlinkat(s->dirfd, s->log_name, 0);
        close(s->dirfd);
    }
    if (s->files[0])
        pp_asprof_rmdirs(s->pid, s->files, s->base);
    free(s);
}
