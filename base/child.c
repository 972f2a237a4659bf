/* Child-process supervision (see child.h); temp directories are in child_tmp.c. */
#include "base/child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define DEFAULT_CAPTURE (1024 * 1024)
#define DRAIN_AFTER_EXIT 1.0 /* seconds spent reading pipes after the child exited */
#define NOPIDFD_POLL_MS 20   /* exit polling period without a pidfd */

extern char **environ;

typedef struct capture {
    int fd; /* read end, -1 once closed */
    char *buf;
    size_t len, cap, limit;
    bool truncated;
} capture;

struct pp_child {
    pid_t pid;
    pid_t owner; /* getpid() of the process that started it */
    int pidfd;   /* -1 when pidfd_open is unavailable */
    capture out, err;
    int term_signal;
    double kill_grace, started;
    bool quiet, reaped;
    int status;
    char *prog; /* for messages */
    pp_child_result res;
    struct pp_child *next; /* registry of unreaped children */
};

/* ---- registry ---- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pp_child *reg_head;
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

static void register_atexit(void)
{
    atexit(pp_child_kill_all);
}

static void reg_add(pp_child *c)
{
    pthread_mutex_lock(&reg_lock);
    c->next = reg_head;
    reg_head = c;
    pthread_mutex_unlock(&reg_lock);
}

static void reg_remove_locked(pp_child *c)
{
    for (pp_child **p = &reg_head; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    c->next = NULL;
}

void pp_child_kill_all(void)
{
    pid_t self = getpid();
    pthread_mutex_lock(&reg_lock);
    for (pp_child *c = reg_head; c; c = c->next)
        if (!c->reaped && c->owner == self)
            kill(-c->pid, SIGKILL);
    pthread_mutex_unlock(&reg_lock);
}

/* Reaps a child known to have exited (a zombie), or blocks until it does. Under the registry
 * lock so that pp_child_kill_all never signals a pid that may have been reused. */
static void reap(pp_child *c)
{
    int st = 0;
    siginfo_t si;
    while (!c->reaped && waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
    pthread_mutex_lock(&reg_lock);
    if (!c->reaped) {
        pid_t r;
        do
            r = waitpid(c->pid, &st, 0);
        while (r < 0 && errno == EINTR);
        c->status = r == c->pid ? st : -1; /* -1: neither exited nor signaled */
        if (r != c->pid)
            pp_debug("waitpid(%d) for %s: %s", (int)c->pid, c->prog, strerror(errno));
        c->reaped = true;
        reg_remove_locked(c);
    }
    pthread_mutex_unlock(&reg_lock);
}

int pp_child_signal(pp_child *c, int sig)
{
    int r = -1;
    pthread_mutex_lock(&reg_lock);
    if (c->reaped)
        errno = ESRCH;
    else
        r = kill(-c->pid, sig);
    pthread_mutex_unlock(&reg_lock);
    return r;
}

pid_t pp_child_pid(const pp_child *c)
{
    return c->pid;
}

double pp_mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- launch ---- */

/* Resolves argv[0] like execvp with polyprof's PATH, skipping relative entries (we run as root).
 * 0 with the path in out, -1 if not found. */
static int resolve_program(const char *name, char *out, size_t len)
{
    struct stat st;
    if (strchr(name, '/')) {
        if (stat(name, &st) < 0 && (errno == ENOENT || errno == ENOTDIR))
            return -1;
        if ((size_t)snprintf(out, len, "%s", name) >= len)
            return -1;
        return 0;
    }
    if (!*name)
        return -1;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const char *p = path;; p++) {
        const char *e = strchrnul(p, ':');
        int n = snprintf(out, len, "%.*s/%s", (int)(e - p), p, name);
        if (*p == '/' && n > 0 && (size_t)n < len && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
            access(out, X_OK) == 0)
            return 0;
        if (!*e)
            break;
        p = e;
    }
    return -1;
}

/* Moves fd to a number >= 3 with O_CLOEXEC so that dup2 onto 0..2 in the child never clobbers
 * another source fd (polyprof may run with 0..2 closed). */
static int fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return n;
}

static int cloexec_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    p[0] = fd_above_stdio(p[0]);
    p[1] = fd_above_stdio(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        if (p[0] >= 0)
            close(p[0]);
        if (p[1] >= 0)
            close(p[1]);
        return -1;
    }
    return 0;
}

enum { STAGE_SETUP = 1, STAGE_CHDIR, STAGE_EXEC };

/* In the forked child: only async-signal-safe calls, no allocation. Never returns. */
static void child_exec(const char *path, char *const *argv, char *const *envp, const char *cwd,
                       pid_t parent, int devnull, int outw, int errw, int report, long maxfd)
{
    int rep[2] = {STAGE_SETUP, 0};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    /* All signals are blocked (by the parent around fork): reset dispositions before unblocking
     * so that no polyprof handler runs here and no SIG_IGN is inherited through execve. */
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    if (setsid() < 0)
        goto fail;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        goto fail;
    if (getppid() != parent) /* polyprof died before prctl: nobody would kill us */
        _exit(127);
    if (dup2(devnull, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw, 2) < 0)
        goto fail;
    /* Every other fd is closed at execve; the report pipe stays open until then. */
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        for (long fd = 3; fd < maxfd; fd++)
            fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    if (cwd && chdir(cwd) < 0) {
        rep[0] = STAGE_CHDIR;
        goto fail;
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(path, argv, envp);
    rep[0] = STAGE_EXEC;
fail:
    rep[1] = errno;
    if (write(report, rep, sizeof(rep)) < 0) {
        /* nothing more to do */
    }
    _exit(127);
}

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt,
                                                          ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void close_fds(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

pp_child *pp_child_start(const pp_child_opts *o, char *err, size_t errlen)
{
    if (!o || !o->argv || !o->argv[0]) {
        set_err(err, errlen, "empty command");
        errno = EINVAL;
        return NULL;
    }
    const char *name = o->argv[0];
    char path[PATH_MAX];
    if (resolve_program(name, path, sizeof(path)) < 0) {
        set_err(err, errlen, "program not found: %s", name);
        errno = ENOENT;
        return NULL;
    }
    pthread_once(&atexit_once, register_atexit);

    /* fds: devnull, out r/w, err r/w, report r/w */
    int fds[7] = {-1, -1, -1, -1, -1, -1, -1};
    fds[0] = fd_above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (fds[0] < 0 || cloexec_pipe(fds + 1) < 0 || cloexec_pipe(fds + 3) < 0 ||
        cloexec_pipe(fds + 5) < 0) {
        int e = errno;
        set_err(err, errlen, "cannot start %s: %s", name, strerror(e));
        close_fds(fds, 7);
        errno = e;
        return NULL;
    }
    struct rlimit rl;
    long maxfd = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        maxfd = rl.rlim_cur < (1 << 20) ? (long)rl.rlim_cur : (1 << 20);
    char *const *envp = o->envp ? o->envp : environ;

    /* Nothing is allocated between here and the fork: a child that fails before execve
     * _exit()s without owning heap memory. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t parent = getpid();
    double started = pp_mono_now();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(path, o->argv, envp, o->cwd, parent, fds[0], fds[2], fds[4], fds[6], maxfd);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        set_err(err, errlen, "cannot start %s: fork: %s", name, strerror(e));
        close_fds(fds, 7);
        errno = e;
        return NULL;
    }
    close(fds[0]);
    close(fds[2]);
    close(fds[4]);
    close(fds[6]);

    pp_child *c = calloc(1, sizeof(*c));
    char *prog = strdup(name);
    if (c && prog) {
        c->pid = pid;
        c->owner = parent;
        c->started = started;
        c->prog = prog;
        c->pidfd = -1;
        c->out.fd = fds[1];
        c->err.fd = fds[3];
        c->out.limit = c->err.limit = o->capture_limit ? o->capture_limit : DEFAULT_CAPTURE;
        c->term_signal = o->term_signal;
        c->kill_grace = o->kill_grace > 0 ? o->kill_grace : 1.0;
        c->quiet = o->quiet;
        reg_add(c);
    }

    int report[2];
    size_t got = 0;
    while (got < sizeof(report)) {
        ssize_t n = read(fds[5], (char *)report + got, sizeof(report) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[5]);
    if (!c || !prog || got == sizeof(report)) {
        e = got == sizeof(report) ? report[1] : ENOMEM;
        if (got != sizeof(report))
            set_err(err, errlen, "cannot start %s: out of memory", name);
        else if (report[0] == STAGE_EXEC)
            set_err(err, errlen, "cannot execute %s: %s", name, strerror(e));
        else if (report[0] == STAGE_CHDIR)
            set_err(err, errlen, "cannot chdir to %s for %s: %s", o->cwd, name, strerror(e));
        else
            set_err(err, errlen, "cannot set up the child process for %s: %s", name, strerror(e));
        if (c && prog) {
            pp_child_free(c); /* kills (if it did exec) and reaps */
        } else {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
            }
            close(fds[1]);
            close(fds[3]);
            free(c);
            free(prog);
        }
        errno = e;
        return NULL;
    }
    fcntl(c->out.fd, F_SETFL, O_NONBLOCK);
    fcntl(c->err.fd, F_SETFL, O_NONBLOCK);
    c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    pp_debug("started %s (pid %d)", path, (int)pid);
    return c;
}

/* ---- waiting ---- */

/* Reads what is available from a pipe; returns false at EOF or error (fd closed). */
static bool capture_read(capture *k)
{
    char tmp[65536];
    for (int i = 0; i < 16; i++) { /* bounded: a fast writer must not keep us from the deadline */
        ssize_t n = read(k->fd, tmp, sizeof(tmp));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n <= 0) {
            close(k->fd);
            k->fd = -1;
            return false;
        }
        size_t keep = k->len < k->limit ? k->limit - k->len : 0;
        if (keep > (size_t)n)
            keep = (size_t)n;
        if (keep < (size_t)n)
            k->truncated = true;
        if (keep && k->len + keep + 1 > k->cap) {
            size_t nc = k->cap ? k->cap : 4096;
            while (nc < k->len + keep + 1)
                nc *= 2;
            if (nc > k->limit + 1)
                nc = k->limit + 1;
            char *nb = realloc(k->buf, nc);
            if (!nb) {
                k->truncated = true;
                continue; /* keep draining, drop the bytes */
            }
            k->buf = nb;
            k->cap = nc;
        }
        if (keep) {
            memcpy(k->buf + k->len, tmp, keep);
            k->len += keep;
        }
    }
    return true;
}

/* true when the child has exited (zombie, not reaped yet). */
static bool child_exited(pp_child *c)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD; /* cannot wait: treat as gone */
    return si.si_pid == c->pid;
}

static int ms_until(double t, double now)
{
    if (!isfinite(t))
        return -1;
    double ms = (t - now) * 1000.0;
    if (ms <= 0)
        return 0;
    return ms > INT_MAX ? INT_MAX : (int)ceil(ms);
}

/* Polls the pipes (and pidfd, stop fd) until `until`, the child exiting, or stop_fd. Returns 1
 * when the child exited, 2 on stop_fd, 0 on timeout, -1 on error. */
static int pump(pp_child *c, double until, int stop_fd)
{
    for (;;) {
        if (child_exited(c))
            return 1;
        double now = pp_mono_now();
        if (now >= until)
            return 0;
        struct pollfd pf[4];
        int n = 0, iout = -1, ierr = -1, ipid = -1, istop = -1;
        if (c->out.fd >= 0)
            pf[iout = n++] = (struct pollfd){.fd = c->out.fd, .events = POLLIN};
        if (c->err.fd >= 0)
            pf[ierr = n++] = (struct pollfd){.fd = c->err.fd, .events = POLLIN};
        if (c->pidfd >= 0)
            pf[ipid = n++] = (struct pollfd){.fd = c->pidfd, .events = POLLIN};
        if (stop_fd >= 0)
            pf[istop = n++] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
        int to = ms_until(until, now);
        if (c->pidfd < 0 && (to < 0 || to > NOPIDFD_POLL_MS))
            to = NOPIDFD_POLL_MS;
        int r = poll(pf, (nfds_t)n, to);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (iout >= 0 && pf[iout].revents)
            capture_read(&c->out);
        if (ierr >= 0 && pf[ierr].revents)
            capture_read(&c->err);
        if (istop >= 0 && pf[istop].revents)
            return 2;
    }
}

static void fill_result(pp_child *c, bool timed_out, bool stopped)
{
    pp_child_result *r = &c->res;
    memset(r, 0, sizeof(*r));
    if (WIFEXITED(c->status)) {
        r->exited = true;
        r->exit_code = WEXITSTATUS(c->status);
    } else if (WIFSIGNALED(c->status)) {
        r->term_signal = WTERMSIG(c->status);
    }
    r->timed_out = timed_out;
    r->stopped = stopped;
    r->out = c->out.buf ? c->out.buf : "";
    r->err = c->err.buf ? c->err.buf : "";
    if (c->out.buf)
        c->out.buf[c->out.len] = '\0';
    if (c->err.buf)
        c->err.buf[c->err.len] = '\0';
    r->out_len = c->out.len;
    r->err_len = c->err.len;
    r->out_truncated = c->out.truncated;
    r->err_truncated = c->err.truncated;
    r->elapsed = pp_mono_now() - c->started;
}

int pp_child_wait_until(pp_child *c, double deadline, int stop_fd, pp_child_result *res)
{
    if (c->reaped) {
        *res = c->res;
        return 0;
    }
    if (!(deadline > 0))
        deadline = INFINITY;
    bool timed_out = false, stopped = false;
    int ret = 0, saved = 0;
    int r = pump(c, deadline, stop_fd);
    if (r != 1) {
        if (r < 0) {
            saved = errno;
            ret = -1;
        } else if (r == 2) {
            stopped = true;
        } else {
            timed_out = true;
        }
        if (c->term_signal && r >= 0) {
            pp_debug("%s (pid %d) %s: sending signal %d", c->prog, (int)c->pid,
                     stopped ? "stopped" : "timed out", c->term_signal);
            kill(-c->pid, c->term_signal);
            r = pump(c, pp_mono_now() + c->kill_grace, -1);
        }
        if (r != 1) {
            kill(-c->pid, SIGKILL);
            r = pump(c, INFINITY, -1);
            if (r < 0) { /* poll failing: still never leave the child behind */
                saved = errno;
                ret = -1;
            }
        }
    }
    /* The child is a zombie: its pid (= pgid) cannot be reused yet. Kill what is left of the
     * group, then read the pipes until EOF (bounded: a process outside the group may hold them).
     */
    kill(-c->pid, SIGKILL);
    double until = pp_mono_now() + DRAIN_AFTER_EXIT;
    while (c->out.fd >= 0 || c->err.fd >= 0) {
        struct pollfd pf[2];
        int n = 0;
        if (c->out.fd >= 0)
            pf[n++] = (struct pollfd){.fd = c->out.fd, .events = POLLIN};
        if (c->err.fd >= 0)
            pf[n++] = (struct pollfd){.fd = c->err.fd, .events = POLLIN};
        int pr = poll(pf, (nfds_t)n, ms_until(until, pp_mono_now()));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        for (int i = 0; i < n; i++) {
            if (!pf[i].revents)
                continue;
            capture_read(pf[i].fd == c->out.fd ? &c->out : &c->err);
        }
    }
    if (c->out.fd >= 0)
        capture_read(&c->out);
    if (c->err.fd >= 0)
        capture_read(&c->err);
    reap(c);
    fill_result(c, timed_out, stopped);
    *res = c->res;

    char what[300];
    snprintf(what, sizeof(what), "%s (pid %d)", c->prog, (int)c->pid);
    if (!pp_child_log_failure(res, c->quiet ? PP_LOG_DEBUG : PP_LOG_WARNING, what))
        pp_debug("%s exited with code 0 after %.3f s", what, res->elapsed);
    if (ret < 0)
        errno = saved;
    return ret;
}

int pp_child_wait(pp_child *c, double deadline, pp_child_result *res)
{
    return pp_child_wait_until(c, deadline, -1, res);
}

void pp_child_free(pp_child *c)
{
    if (!c)
        return;
    if (!c->reaped) {
        kill(-c->pid, SIGKILL);
        reap(c);
    }
    if (c->pidfd >= 0)
        close(c->pidfd);
    if (c->out.fd >= 0)
        close(c->out.fd);
    if (c->err.fd >= 0)
        close(c->err.fd);
    free(c->out.buf);
    free(c->err.buf);
    free(c->prog);
    free(c);
}

bool pp_child_describe(const pp_child_result *res, char *buf, size_t len)
{
    if (res->timed_out)
        snprintf(buf, len, "timed out after %.1f s", res->elapsed);
    else if (res->stopped)
        snprintf(buf, len, "stopped");
    else if (res->exited)
        snprintf(buf, len, "exited with code %d", res->exit_code);
    else if (res->term_signal)
        snprintf(buf, len, "killed by signal %d (%s)", res->term_signal,
                 sigabbrev_np(res->term_signal) ? sigabbrev_np(res->term_signal) : "?");
    else
        snprintf(buf, len, "ended with an unknown status");
    return !(res->exited && res->exit_code == 0 && !res->timed_out && !res->stopped);
}

bool pp_child_failure_text(const pp_child_result *res, const char *what, char *out, size_t len)
{
    char desc[128];
    if (!pp_child_describe(res, desc, sizeof(desc)))
        return false;
    /* Last ~1 KiB of stderr on one line: newlines become " | ", other controls '?'. */
    const char *e = res->err ? res->err : "";
    size_t n = res->err ? res->err_len : 0;
    while (n && (e[n - 1] == '\n' || e[n - 1] == ' ' || e[n - 1] == '\r' || e[n - 1] == '\t'))
        n--;
    size_t from = n > 1024 ? n - 1024 : 0;
    char tail[1024 * 3 + 8];
    size_t t = 0;
    if (from)
        t += (size_t)snprintf(tail, sizeof(tail), "...");
    for (size_t i = from; i < n && t + 4 < sizeof(tail); i++) {
        unsigned char ch = (unsigned char)e[i];
        if (ch == '\n') {
            memcpy(tail + t, " | ", 3);
            t += 3;
        } else {
            tail[t++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
        }
    }
    tail[t] = '\0';
    snprintf(out, len, "%s %s%s%s", what, desc, t ? "; stderr: " : "", tail);
    return true;
}

bool pp_child_log_failure(const pp_child_result *res, int level, const char *what)
{
    char text[4096];
    if (!pp_child_failure_text(res, what, text, sizeof(text)))
        return false;
    pp_log((pp_log_level)level, "%s", text);
    return true;
}
