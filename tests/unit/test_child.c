/* Unit tests for child-process supervision and temp directories (base/child.c).
 * Real processes: /bin stand-ins, and this test binary itself re-executed as a helper
 * ("<self> --pp-child-helper MODE ARGS...", handled in a constructor before Criterion starts),
 * which keeps working under valgrind --trace-children. Waits are on conditions with timeouts. */
#include "tests/unit/testutil.h"

#include <valgrind/valgrind.h>

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "base/child.h"

/* ---- helper modes (run in the re-executed binary, never return) ---- */

static void write_pidfile(const char *path, pid_t pid)
{
    char tmp[4096], buf[32];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
    if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0)
        _exit(90);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            _exit(91);
        p += w;
        n -= (size_t)w;
    }
}

__attribute__((constructor)) static void helper_main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], "--pp-child-helper") != 0)
        return;
    const char *mode = argv[2];
    char buf[256];
    if (!strcmp(mode, "print") && argc == 6) {
        write_all(1, argv[3], strlen(argv[3]));
        write_all(2, argv[4], strlen(argv[4]));
        _exit(atoi(argv[5]));
    } else if (!strcmp(mode, "ignore-term") && argc == 4) {
        signal(SIGTERM, SIG_IGN);
        write_pidfile(argv[3], getpid());
        for (;;)
            pause();
    } else if ((!strcmp(mode, "grandchild") || !strcmp(mode, "orphan")) && argc == 4) {
        pid_t gc = fork();
        if (gc == 0) {
            write_pidfile(argv[3], getpid());
            for (;;)
                pause();
        }
        if (!strcmp(mode, "grandchild"))
            for (;;)
                pause();
        while (access(argv[3], F_OK) != 0)
            nap_ms(5);
        _exit(0);
    } else if (!strcmp(mode, "huge") && argc == 4) {
        static char chunk[65536];
        size_t total = strtoul(argv[3], NULL, 10);
        memset(chunk, 'x', sizeof(chunk));
        for (size_t done = 0; done < total; done += sizeof(chunk))
            write_all(1, chunk, sizeof(chunk));
        memset(chunk, 'y', sizeof(chunk));
        for (size_t done = 0; done < total; done += sizeof(chunk))
            write_all(2, chunk, sizeof(chunk));
        _exit(0);
    } else if (!strcmp(mode, "endless") && argc == 4) {
        static char chunk[4096];
        memset(chunk, 'z', sizeof(chunk));
        write_all(1, chunk, sizeof(chunk)); /* fits in the pipe: ready means output pending */
        write_pidfile(argv[3], getpid());
        for (;;)
            write_all(1, chunk, sizeof(chunk));
    } else if (!strcmp(mode, "fds")) {
        struct rlimit rl;
        long max = 4096;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536)
            max = (long)rl.rlim_cur;
        for (long fd = 0; fd < max; fd++) {
            char link[64], target[PATH_MAX] = "";
            snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
            ssize_t tl = readlink(link, target, sizeof(target) - 1);
            target[tl > 0 ? tl : 0] = '\0';
            if (RUNNING_ON_VALGRIND && strstr(target, "/results/valgrind/"))
                continue; /* valgrind's own log file (tests/stages.py names it so) */
            if (fcntl((int)fd, F_GETFD) >= 0) {
                int n = snprintf(buf, sizeof(buf), "%ld ", fd);
                write_all(1, buf, (size_t)n);
            }
        }
        _exit(0);
    } else if (!strcmp(mode, "sigs")) {
        sigset_t cur;
        sigprocmask(SIG_BLOCK, NULL, &cur);
        int blocked = 0, ignored = 0;
        for (int s = 1; s < SIGRTMAX; s++) { /* valgrind reserves SIGRTMAX (64) */
            struct sigaction sa;
            if (sigismember(&cur, s) == 1)
                blocked++;
            if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
                ignored++;
        }
        int n = snprintf(buf, sizeof(buf), "blocked=%d ignored=%d", blocked, ignored);
        write_all(1, buf, (size_t)n);
        _exit(0);
    }
    _exit(99);
}

/* ---- fixtures ---- */

static char self_exe[4096];
static char *scratch;
static char base[4096];
static char err[512];
static pp_child_result res;

static void setup(void)
{
    pp_test_quiet_log();
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    cr_assert(n > 0);
    self_exe[n] = '\0';
    scratch = pp_test_mkdtemp();
    snprintf(base, sizeof(base), "%s/polyprof_tmp", scratch);
    pp_tmp_set_base(base);
    err[0] = '\0';
    memset(&res, 0, sizeof(res));
}

static void teardown(void)
{
    pp_tmp_set_base(NULL);
    pp_test_rmtree(scratch);
    scratch = NULL;
}

TestSuite(child, .init = setup, .fini = teardown);
TestSuite(tmpdir, .init = setup, .fini = teardown);

static pp_child *start_opts(pp_child_opts *o)
{
    pp_child *c = pp_child_start(o, err, sizeof(err));
    cr_assert(c != NULL, "start %s: %s", o->argv[0], err);
    return c;
}

/* Starts this binary as a helper: helper(mode, args..., NULL). */
#define HELPER(...) ((char *[]){self_exe, "--pp-child-helper", __VA_ARGS__, NULL})

static pp_child *start_argv(char **argv)
{
    pp_child_opts o = {.argv = argv, .quiet = true};
    return start_opts(&o);
}

static bool wait_file(const char *path, double timeout)
{
    double end = pp_mono_now() + timeout;
    while (access(path, F_OK) != 0) {
        if (pp_mono_now() > end)
            return false;
        nap_ms(5);
    }
    return true;
}

static pid_t read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL);
    int pid = 0;
    cr_assert(fscanf(f, "%d", &pid) == 1);
    fclose(f);
    return pid;
}

/* true when pid no longer runs (gone or zombie). */
static bool proc_dead(pid_t pid)
{
    char p[64], buf[512];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return !rp || rp[2] == 'Z' || rp[2] == 'X';
}

/* With the test process as child subreaper, orphans come back to us: waits until pid is reaped
 * (returns its status) or dead as seen in /proc, up to timeout. */
static int reap_orphan(pid_t pid, double timeout)
{
    double end = pp_mono_now() + timeout;
    for (;;) {
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        cr_assert(pp_mono_now() < end, "pid %d still alive", (int)pid);
        nap_ms(5);
    }
}

/* ---- launching and capture ---- */

Test(child, captures_stdout_stderr_and_exit_code)
{
    pp_child *c = start_argv(HELPER("print", "hello out\n", "oops\n", "3"));
    cr_assert(pp_child_pid(c) > 0);
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    cr_assert(res.exited);
    cr_assert_eq(res.exit_code, 3);
    cr_assert_eq(res.term_signal, 0);
    cr_assert(!res.timed_out && !res.stopped);
    cr_assert_str_eq(res.out, "hello out\n");
    cr_assert_str_eq(res.err, "oops\n");
    cr_assert_eq(res.out_len, 10);
    cr_assert_eq(res.err_len, 5);
    cr_assert(!res.out_truncated && !res.err_truncated);
    char d[128];
    cr_assert(pp_child_describe(&res, d, sizeof(d)));
    cr_assert_str_eq(d, "exited with code 3");
    cr_assert(pp_child_log_failure(&res, PP_LOG_DEBUG, "helper"));
    /* waiting again returns the same result */
    pp_child_result again;
    cr_assert_eq(pp_child_wait(c, 0, &again), 0);
    cr_assert_eq(again.exit_code, 3);
    cr_assert_str_eq(again.out, "hello out\n");
    cr_assert_eq(pp_child_signal(c, SIGTERM), -1);
    cr_assert_eq(errno, ESRCH);
    pp_child_free(c);
}

Test(child, path_lookup_env_and_cwd)
{
    pp_child *c = start_argv((char *[]){"echo", "a", "b", NULL});
    cr_assert_eq(pp_child_wait(c, 0, &res), 0);
    cr_assert(res.exited && res.exit_code == 0);
    cr_assert_str_eq(res.out, "a b\n");
    cr_assert_str_eq(res.err, "");
    char d[128];
    cr_assert(!pp_child_describe(&res, d, sizeof(d)));
    cr_assert(!pp_child_log_failure(&res, PP_LOG_WARNING, "echo"));
    pp_child_free(c);

    pp_child_opts o = {.argv = (char *[]){"/usr/bin/env", NULL},
                       .envp = (char *[]){"A=1", "B=two", NULL}};
    c = start_opts(&o);
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    /* valgrind --trace-children appends its own variables */
    cr_assert(strncmp(res.out, "A=1\nB=two\n", 10) == 0, "%s", res.out);
    cr_assert(strstr(res.out, "PATH=") == NULL);
    pp_child_free(c);

    o = (pp_child_opts){.argv = (char *[]){"/bin/pwd", NULL}, .cwd = scratch};
    c = start_opts(&o);
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    char want[4200];
    snprintf(want, sizeof(want), "%s\n", scratch);
    cr_assert_str_eq(res.out, want);
    pp_child_free(c);
}

Test(child, program_not_found)
{
    pp_child_opts o = {.argv = (char *[]){"pp-no-such-program-zz", "x", NULL}};
    cr_assert_null(pp_child_start(&o, err, sizeof(err)));
    cr_assert_str_eq(err, "program not found: pp-no-such-program-zz");
    o.argv = (char *[]){"/nonexistent/pp/prog", NULL};
    cr_assert_null(pp_child_start(&o, err, sizeof(err)));
    cr_assert_str_eq(err, "program not found: /nonexistent/pp/prog");
    o.argv = (char *[]){NULL};
    cr_assert_null(pp_child_start(&o, err, sizeof(err)));
    cr_assert_str_eq(err, "empty command");
    /* nothing was forked */
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
    cr_assert_eq(errno, ECHILD);
}

Test(child, exec_failure_is_reported_and_reaped)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/not-executable", scratch);
    pp_test_write_file(path, "#!/bin/true\n", 12);
    cr_assert_eq(chmod(path, 0644), 0);
    pp_child_opts o = {.argv = (char *[]){path, NULL}};
    cr_assert_null(pp_child_start(&o, err, sizeof(err)));
    char want[4400];
    snprintf(want, sizeof(want), "cannot execute %s: %s", path, strerror(EACCES));
    cr_assert_str_eq(err, want);

    o = (pp_child_opts){.argv = (char *[]){"/bin/echo", NULL}, .cwd = "/nonexistent/pp-dir"};
    cr_assert_null(pp_child_start(&o, err, sizeof(err)));
    cr_assert(strstr(err, "cannot chdir to /nonexistent/pp-dir for /bin/echo") == err, "%s", err);
    /* the failed children were reaped */
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
    cr_assert_eq(errno, ECHILD);
}

/* ---- deadlines and signals ---- */

Test(child, deadline_sends_term_signal)
{
    pp_child_opts o = {.argv = (char *[]){"/bin/sleep", "1000", NULL},
                       .term_signal = SIGTERM,
                       .kill_grace = 30,
                       .quiet = true};
    pp_child *c = start_opts(&o);
    double t0 = pp_mono_now();
    cr_assert_eq(pp_child_wait(c, t0 + 0.2, &res), 0);
    cr_assert(res.timed_out);
    cr_assert(!res.exited);
    cr_assert_eq(res.term_signal, SIGTERM);
    cr_assert(pp_mono_now() - t0 >= 0.19);
    cr_assert(pp_mono_now() - t0 < 25, "SIGTERM must end it well before the grace");
    char d[128];
    cr_assert(pp_child_describe(&res, d, sizeof(d)));
    cr_assert(strncmp(d, "timed out after", 15) == 0, "%s", d);
    pp_child_free(c);
}

Test(child, deadline_sigkill_only)
{
    pp_child_opts o = {.argv = (char *[]){"/bin/sleep", "1000", NULL}, .quiet = true};
    pp_child *c = start_opts(&o);
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 0.1, &res), 0);
    cr_assert(res.timed_out);
    cr_assert_eq(res.term_signal, SIGKILL);
    pp_child_free(c);
}

Test(child, ignored_term_signal_gets_sigkill_after_grace)
{
    char ready[4200];
    snprintf(ready, sizeof(ready), "%s/ready", scratch);
    pp_child_opts o = {
        .argv = HELPER("ignore-term", ready), .term_signal = SIGTERM, .kill_grace = 0.3};
    pp_child *c = start_opts(&o);
    cr_assert(wait_file(ready, 60), "helper never got ready");
    double t0 = pp_mono_now();
    cr_assert_eq(pp_child_wait(c, t0, &res), 0);
    double dt = pp_mono_now() - t0;
    cr_assert(res.timed_out);
    cr_assert_eq(res.term_signal, SIGKILL);
    cr_assert(dt >= 0.29, "grace not honoured: %f", dt);
    cr_assert(dt < 30);
    pp_child_free(c);
}

Test(child, grandchild_dies_with_the_group)
{
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    char pidfile[4200];
    snprintf(pidfile, sizeof(pidfile), "%s/gc.pid", scratch);
    pp_child *c = start_argv(HELPER("grandchild", pidfile));
    cr_assert(wait_file(pidfile, 60));
    pid_t gc = read_pid(pidfile);
    cr_assert(!proc_dead(gc));
    cr_assert_eq(pp_child_wait(c, pp_mono_now(), &res), 0);
    cr_assert(res.timed_out);
    int st = reap_orphan(gc, 30);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    pp_child_free(c);
}

Test(child, group_leftovers_killed_after_normal_exit)
{
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    char pidfile[4200];
    snprintf(pidfile, sizeof(pidfile), "%s/gc.pid", scratch);
    pp_child *c = start_argv(HELPER("orphan", pidfile));
    double t0 = pp_mono_now();
    cr_assert_eq(pp_child_wait(c, t0 + 120, &res), 0);
    cr_assert(res.exited && res.exit_code == 0 && !res.timed_out);
    cr_assert(pp_mono_now() - t0 < 60);
    pid_t gc = read_pid(pidfile);
    /* the orphan still held the stdout pipe: the wait did not hang on it, and it was killed */
    int st = reap_orphan(gc, 30);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    pp_child_free(c);
}

Test(child, huge_output_truncated_without_blocking)
{
    pp_child_opts o = {.argv = HELPER("huge", "8388608"), .capture_limit = 1000};
    pp_child *c = start_opts(&o);
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 100, &res), 0);
    cr_assert(res.exited && res.exit_code == 0 && !res.timed_out, "helper blocked or failed");
    cr_assert_eq(res.out_len, 1000);
    cr_assert_eq(res.err_len, 1000);
    cr_assert(res.out_truncated && res.err_truncated);
    cr_assert_eq(strlen(res.out), 1000);
    cr_assert_eq(strspn(res.out, "x"), 1000);
    cr_assert_eq(strspn(res.err, "y"), 1000);
    pp_child_free(c);

    /* endless output until the deadline */
    char ready[4200];
    snprintf(ready, sizeof(ready), "%s/ready", scratch);
    o = (pp_child_opts){.argv = HELPER("endless", ready), .capture_limit = 100, .quiet = true};
    c = start_opts(&o);
    cr_assert(wait_file(ready, 60));
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 0.2, &res), 0);
    cr_assert(res.timed_out);
    cr_assert_eq(res.out_len, 100);
    cr_assert(res.out_truncated);
    cr_assert_eq(strspn(res.out, "z"), 100);
    pp_child_free(c);
}

Test(child, signal_targets_the_child)
{
    pp_child *c = start_argv((char *[]){"/bin/sleep", "1000", NULL});
    cr_assert_eq(pp_child_signal(c, SIGUSR1), 0);
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    cr_assert(!res.exited && !res.timed_out);
    cr_assert_eq(res.term_signal, SIGUSR1);
    char d[128];
    cr_assert(pp_child_describe(&res, d, sizeof(d)));
    cr_assert_str_eq(d, "killed by signal 10 (USR1)");
    pp_child_free(c);
}

Test(child, free_kills_a_running_child)
{
    pp_child *c = start_argv((char *[]){"/bin/sleep", "1000", NULL});
    pid_t pid = pp_child_pid(c);
    pp_child_free(c);
    pp_child_free(NULL);
    cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1, "already reaped");
    cr_assert_eq(errno, ECHILD);
}

Test(child, kill_all_kills_every_live_child)
{
    pp_child *a = start_argv((char *[]){"/bin/sleep", "1000", NULL});
    pp_child *b = start_argv((char *[]){"/bin/sleep", "1001", NULL});
    pp_child *done = start_argv((char *[]){"/bin/echo", NULL});
    cr_assert_eq(pp_child_wait(done, 0, &res), 0);
    pp_child_kill_all();
    cr_assert_eq(pp_child_wait(a, pp_mono_now() + 60, &res), 0);
    cr_assert(!res.timed_out);
    cr_assert_eq(res.term_signal, SIGKILL);
    cr_assert_eq(pp_child_wait(b, pp_mono_now() + 60, &res), 0);
    cr_assert_eq(res.term_signal, SIGKILL);
    pp_child_free(a);
    pp_child_free(b);
    pp_child_free(done);
}

Test(child, kill_all_in_a_forked_copy_does_nothing)
{
    pp_child *c = start_argv((char *[]){"/bin/sleep", "1000", NULL});
    pid_t f = fork();
    cr_assert(f >= 0);
    if (f == 0) {
        pp_child_kill_all(); /* a copy of polyprof must not kill its parent's children */
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(f, &st, 0), f);
    cr_assert(!proc_dead(pp_child_pid(c)));
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 0.05, &res), 0);
    cr_assert(res.timed_out, "still running at the deadline");
    pp_child_free(c);
}

Test(child, stop_fd_ends_the_wait)
{
    int efd = eventfd(0, EFD_CLOEXEC);
    cr_assert(efd >= 0);
    pp_child_opts o = {
        .argv = (char *[]){"/bin/sleep", "1000", NULL}, .term_signal = SIGTERM, .quiet = true};
    pp_child *c = start_opts(&o);
    uint64_t one = 1;
    cr_assert_eq(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
    cr_assert_eq(pp_child_wait_until(c, pp_mono_now() + 100, efd, &res), 0);
    cr_assert(res.stopped && !res.timed_out);
    cr_assert_eq(res.term_signal, SIGTERM);
    char d[128];
    cr_assert(pp_child_describe(&res, d, sizeof(d)));
    cr_assert_str_eq(d, "stopped");
    pp_child_free(c);
    close(efd);
}

/* ---- what the child inherits ---- */

Test(child, empty_signal_mask_and_default_dispositions)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    cr_assert_eq(sigprocmask(SIG_BLOCK, &set, &old), 0);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    pp_child *c = start_argv(HELPER("sigs"));
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    cr_assert(res.exited && res.exit_code == 0);
    cr_assert_str_eq(res.out, "blocked=0 ignored=0");
    pp_child_free(c);
    signal(SIGUSR2, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

Test(child, only_stdio_fds_are_inherited)
{
    int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
    int p[2];
    cr_assert(leak >= 0);
    cr_assert_eq(pipe(p), 0);
    pp_child *c = start_argv(HELPER("fds"));
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    cr_assert(res.exited && res.exit_code == 0);
    cr_assert_str_eq(res.out, "0 1 2 ");
    pp_child_free(c);
    close(leak);
    close(p[0]);
    close(p[1]);
}

Test(child, stdin_is_dev_null)
{
    pp_child *c = start_argv((char *[]){"/bin/cat", NULL});
    cr_assert_eq(pp_child_wait(c, pp_mono_now() + 60, &res), 0);
    cr_assert(res.exited && res.exit_code == 0);
    cr_assert_eq(res.out_len, 0);
    pp_child_free(c);
}

static pp_child *orphaned; /* kept reachable for valgrind in the intermediate process */

Test(child, child_dies_with_its_parent)
{
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t mid = fork();
    cr_assert(mid >= 0);
    if (mid == 0) {
        pp_child_opts o = {.argv = (char *[]){"/bin/sleep", "1000", NULL}};
        orphaned = pp_child_start(&o, err, sizeof(err));
        pid_t pid = orphaned ? pp_child_pid(orphaned) : -1;
        if (write(p[1], &pid, sizeof(pid)) != sizeof(pid))
            _exit(2);
        _exit(0); /* no atexit: only PR_SET_PDEATHSIG can kill the child */
    }
    close(p[1]);
    pid_t pid = -1;
    cr_assert_eq(read(p[0], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
    close(p[0]);
    int st;
    cr_assert_eq(waitpid(mid, &st, 0), mid);
    cr_assert(pid > 0);
    st = reap_orphan(pid, 30);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

Test(child, mono_now_is_monotonic)
{
    double a = pp_mono_now(), b = pp_mono_now();
    cr_assert(a > 0 && b >= a);
}

/* ---- temp directories ---- */

static void mode_owner(const char *path, mode_t mode, uid_t uid)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s missing", path);
    cr_assert(S_ISDIR(st.st_mode), "%s not a directory", path);
    cr_assert_eq(st.st_mode & 07777, mode, "%s mode %o", path, st.st_mode & 07777);
    cr_assert_eq(st.st_uid, uid);
}

Test(tmpdir, creates_private_session_dir)
{
    char a[4200], b[4200], prefix[4200];
    cr_assert_eq(pp_session_tmpdir(a, sizeof(a), err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(pp_session_tmpdir(b, sizeof(b), err, sizeof(err)), 0, "%s", err);
    cr_assert_str_neq(a, b);
    snprintf(prefix, sizeof(prefix), "%s/sess-%d-", base, (int)getpid());
    cr_assert(strncmp(a, prefix, strlen(prefix)) == 0, "%s", a);
    cr_assert_eq(strlen(a), strlen(prefix) + 6);
    mode_owner(base, 0700, 0);
    mode_owner(a, 0700, 0);
    pp_rmtree(a);
    pp_rmtree(b);
    cr_assert_eq(access(a, F_OK), -1);
    cr_assert_eq(access(b, F_OK), -1);
}

Test(tmpdir, base_mode_is_fixed)
{
    cr_assert_eq(mkdir(base, 0700), 0);
    cr_assert_eq(chmod(base, 0777), 0);
    char out[4200];
    cr_assert_eq(pp_session_tmpdir(out, sizeof(out), err, sizeof(err)), 0, "%s", err);
    mode_owner(base, 0700, 0);
}

Test(tmpdir, symlinked_base_is_refused)
{
    char target[4200], out[4200];
    snprintf(target, sizeof(target), "%s/elsewhere", scratch);
    cr_assert_eq(mkdir(target, 0755), 0);
    cr_assert_eq(symlink(target, base), 0);
    cr_assert_eq(pp_session_tmpdir(out, sizeof(out), err, sizeof(err)), -1);
    cr_assert(strstr(err, "symbolic link") != NULL, "%s", err);
    struct stat st;
    cr_assert_eq(lstat(base, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was left alone");
    DIR *d = opendir(target);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n++;
    closedir(d);
    cr_assert_eq(n, 2, "nothing created in the link target");
}

Test(tmpdir, foreign_base_is_recreated)
{
    char outside[4200], keep[4300], inner[4300], link[4300], out[4200];
    snprintf(outside, sizeof(outside), "%s/outside", scratch);
    snprintf(keep, sizeof(keep), "%s/keep", outside);
    snprintf(inner, sizeof(inner), "%s/planted", base);
    snprintf(link, sizeof(link), "%s/link", base);
    cr_assert_eq(mkdir(outside, 0755), 0);
    pp_test_write_file(keep, "k", 1);
    cr_assert_eq(mkdir(base, 0755), 0);
    pp_test_write_file(inner, "evil", 4);
    cr_assert_eq(symlink(outside, link), 0);
    cr_assert_eq(chown(base, 1234, 1234), 0);
    cr_assert_eq(pp_session_tmpdir(out, sizeof(out), err, sizeof(err)), 0, "%s", err);
    mode_owner(base, 0700, 0);
    mode_owner(out, 0700, 0);
    cr_assert_eq(access(inner, F_OK), -1);
    cr_assert_eq(access(keep, F_OK), 0, "symlink was followed");
}

/* The directory for files targets read: an unpredictable name, chosen once and remembered in the
 * private base (a restarted polyprof finds the library it loaded into a JVM before). */
Test(tmpdir, target_dir_name_is_random_and_kept)
{
    char a[256], b[256], state[4300];
    cr_assert_eq(pp_target_tmpdir(a, sizeof(a), err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(strlen(a), strlen("/tmp/polyprof-") + 12, "%s", a);
    cr_assert(strncmp(a, "/tmp/polyprof-", 14) == 0, "%s", a);
    cr_assert_eq(pp_target_tmpdir(b, sizeof(b), err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(a, b);
    snprintf(state, sizeof(state), "%s/target-dir", base);
    mode_owner(base, 0700, 0);
    struct stat st;
    cr_assert_eq(lstat(state, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    /* a damaged record is replaced by a new random name */
    pp_test_write_file(state, "../../etc", 9);
    cr_assert_eq(pp_target_tmpdir(b, sizeof(b), err, sizeof(err)), 0, "%s", err);
    cr_assert(strncmp(b, "/tmp/polyprof-", 14) == 0 && !strchr(b + 5, '.'), "%s", b);
    cr_assert_str_neq(a, b);
}

Test(tmpdir, missing_parent_is_an_error)
{
    pp_tmp_set_base("/nonexistent-pp-parent/polyprof_tmp");
    char out[4200];
    cr_assert_eq(pp_session_tmpdir(out, sizeof(out), err, sizeof(err)), -1);
    cr_assert(strstr(err, "is not a directory") != NULL, "%s", err);
    cr_assert_eq(pp_tmp_cleanup_stale(), 0);
}

Test(tmpdir, rmtree_never_follows_symlinks)
{
    char tree[4200], sub[4300], f[4400], outside[4200], keep[4300], l1[4300], l2[4300];
    snprintf(tree, sizeof(tree), "%s/tree", scratch);
    snprintf(sub, sizeof(sub), "%s/a/b", tree);
    snprintf(outside, sizeof(outside), "%s/outside", scratch);
    snprintf(keep, sizeof(keep), "%s/keep", outside);
    cr_assert_eq(mkdir(tree, 0755), 0);
    snprintf(f, sizeof(f), "%s/a", tree);
    cr_assert_eq(mkdir(f, 0755), 0);
    cr_assert_eq(mkdir(sub, 0700), 0);
    snprintf(f, sizeof(f), "%s/file", sub);
    pp_test_write_file(f, "data", 4);
    cr_assert_eq(mkdir(outside, 0755), 0);
    pp_test_write_file(keep, "k", 1);
    snprintf(l1, sizeof(l1), "%s/dirlink", tree);
    snprintf(l2, sizeof(l2), "%s/a/filelink", tree);
    cr_assert_eq(symlink(outside, l1), 0);
    cr_assert_eq(symlink(keep, l2), 0);
    cr_assert_eq(chmod(sub, 0), 0); /* root still removes it */

    pp_rmtree(tree);
    cr_assert_eq(access(tree, F_OK), -1);
    cr_assert_eq(access(keep, F_OK), 0);

    /* a symlink given as the path is removed itself */
    char top[4300];
    snprintf(top, sizeof(top), "%s/toplink", scratch);
    cr_assert_eq(symlink(outside, top), 0);
    pp_rmtree(top);
    struct stat st;
    cr_assert_eq(lstat(top, &st), -1);
    cr_assert_eq(access(keep, F_OK), 0);
    pp_rmtree("/nonexistent-pp/x");
}

static void mkdir_in_base(const char *name, bool with_file)
{
    char d[4300], f[4400];
    snprintf(d, sizeof(d), "%s/%s", base, name);
    cr_assert_eq(mkdir(d, 0700), 0, "%s", d);
    if (with_file) {
        snprintf(f, sizeof(f), "%s/out.col", d);
        pp_test_write_file(f, "x", 1);
    }
}

static bool in_base(const char *name)
{
    char d[4300];
    snprintf(d, sizeof(d), "%s/%s", base, name);
    return access(d, F_OK) == 0;
}

Test(tmpdir, stale_session_dirs_are_removed)
{
    cr_assert_eq(pp_tmp_cleanup_stale(), 0, "no base yet");
    cr_assert_eq(mkdir(base, 0755), 0);
    /* a pid that no longer exists */
    pid_t dead = fork();
    cr_assert(dead >= 0);
    if (dead == 0)
        _exit(0);
    cr_assert_eq(waitpid(dead, NULL, 0), dead);
    /* a live process with our comm (a polyprof still running) */
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t live = fork();
    cr_assert(live >= 0);
    if (live == 0) {
        char c;
        close(p[1]);
        ssize_t r = read(p[0], &c, 1);
        _exit(r < 0);
    }
    close(p[0]);

    char n_dead[64], n_self[64], n_live[64], n_init[64], n_file[64];
    snprintf(n_dead, sizeof(n_dead), "sess-%d-aaaaaa", (int)dead);
    snprintf(n_self, sizeof(n_self), "sess-%d-bbbbbb", (int)getpid());
    snprintf(n_live, sizeof(n_live), "sess-%d-cccccc", (int)live);
    snprintf(n_init, sizeof(n_init), "sess-1-dddddd"); /* alive, but not a polyprof */
    snprintf(n_file, sizeof(n_file), "sess-%d-eeeeee", (int)dead);
    mkdir_in_base(n_dead, true);
    mkdir_in_base(n_self, true);
    mkdir_in_base(n_live, false);
    mkdir_in_base(n_init, false);
    mkdir_in_base("node_module", true);
    char f[4300];
    snprintf(f, sizeof(f), "%s/%s", base, n_file);
    pp_test_write_file(f, "f", 1);

    cr_assert_eq(pp_tmp_cleanup_stale(), 2);
    cr_assert(!in_base(n_dead));
    cr_assert(!in_base(n_init));
    cr_assert(in_base(n_self));
    cr_assert(in_base(n_live));
    cr_assert(in_base("node_module"));
    cr_assert(in_base(n_file), "only directories are removed");

    close(p[1]);
    int st;
    cr_assert_eq(waitpid(live, &st, 0), live);
    cr_assert_eq(pp_tmp_cleanup_stale(), 1, "its owner is gone now");
    cr_assert(!in_base(n_live));
}
