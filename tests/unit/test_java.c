/* Unit tests: the HotSpot attach client (request encoding, reply parsing, /proc status, a full
 * exchange with a stand-in JVM socket, the SIGQUIT guard, a stale socket, stopped processes,
 * cancellation), and a JVM in a container: its release file, /tmp, attach socket and hs_err
 * files found inside its root. What is read from a JVM as text: test_java_jvm.c. */
#include "tests/unit/testutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "runtimes/java/attach.h"
#include "runtimes/java/jfr_session.h"
#include "runtimes/java/jvmutil.h"
#include "base/procfiles.h"

TestSuite(java, .init = pp_test_quiet_log);

Test(java, encode_jcmd_request)
{
    char buf[256];
    size_t n = pp_jattach_encode(buf, sizeof(buf), "jcmd", "VM.version", NULL, NULL);
    cr_assert_eq(n, 20);
    cr_assert(memcmp(buf, "1\0jcmd\0VM.version\0\0\0", 20) == 0);
}

Test(java, encode_load_request)
{
    char buf[256];
    size_t n = pp_jattach_encode(buf, sizeof(buf), "load", "/x/libap.so", "true", "start");
    const char want[] = "1\0load\0/x/libap.so\0true\0start\0";
    cr_assert_eq(n, sizeof(want) - 1);
    cr_assert(memcmp(buf, want, n) == 0);
}

Test(java, encode_rejects_overflow)
{
    char small[8], big[16384];
    cr_assert_eq(pp_jattach_encode(small, sizeof(small), "jcmd", "VM.version", NULL, NULL), 0);
    char *arg = malloc(5000);
    memset(arg, 'a', 4999);
    arg[4999] = '\0';
    cr_assert_eq(pp_jattach_encode(big, sizeof(big), "jcmd", arg, NULL, NULL), 0);
    cr_assert_eq(pp_jattach_encode(big, sizeof(big), NULL, NULL, NULL, NULL), 0);
    free(arg);
}

Test(java, parse_reply)
{
    int code = -5;
    const char *body = NULL;
    const char ok[] = "0\nJDK 17.0.15\n";
    cr_assert_eq(pp_jattach_parse_reply(ok, strlen(ok), &code, &body), 0);
    cr_assert_eq(code, 0);
    cr_assert_str_eq(body, "JDK 17.0.15\n");
    const char bad[] = "-1\njava.lang.IllegalArgumentException: Unknown diagnostic command\n";
    cr_assert_eq(pp_jattach_parse_reply(bad, strlen(bad), &code, &body), 0);
    cr_assert_eq(code, -1);
    cr_assert_eq(pp_jattach_parse_reply("0", 1, &code, &body), 0);
    cr_assert_str_eq(body, "");
    cr_assert_eq(pp_jattach_parse_reply("", 0, &code, &body), -1);
    cr_assert_eq(pp_jattach_parse_reply("abc\n", 4, &code, &body), -1);
    cr_assert_eq(pp_jattach_parse_reply("\nx", 2, &code, &body), -1);
    cr_assert_eq(pp_jattach_parse_reply("123456789012345\n", 16, &code, &body), -1);
}

Test(java, parse_status)
{
    const char *text = "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
                       "NSpid:\t4242\t17\t1\nUid:\t0\t65534\t65534\t65534\n"
                       "Gid:\t0\t65533\t65533\t65533\nSigBlk:\t0000000000000000\n"
                       "SigCgt:\t0000000101005ccf\n";
    pp_jattach_status st;
    cr_assert_eq(pp_jattach_parse_status(text, &st), 0);
    cr_assert_eq(st.nspid, 1);
    cr_assert_eq(st.euid, 65534);
    cr_assert_eq(st.egid, 65533);
    cr_assert(st.sigquit_caught);
    const char *noquit =
        "NSpid:\t10\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nSigCgt:\t0000000000000003\n";
    cr_assert_eq(pp_jattach_parse_status(noquit, &st), 0);
    cr_assert_eq(st.nspid, 10);
    cr_assert(!st.sigquit_caught);
    cr_assert_eq(pp_jattach_parse_status("Name:\tx\n", &st), -1);
}

Test(java, parse_status_stopped)
{
    const char *fmt = "State:\t%s\nNSpid:\t10\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
                      "SigCgt:\t0000000000000004\n";
    const char *states[] = {"T (stopped)", "t (tracing stop)", "S (sleeping)", "R (running)",
                            "D (disk sleep)"};
    for (int i = 0; i < 5; i++) {
        char text[256];
        snprintf(text, sizeof(text), fmt, states[i]);
        pp_jattach_status st;
        cr_assert_eq(pp_jattach_parse_status(text, &st), 0);
        cr_assert_eq(st.stopped, i < 2, "%s", states[i]);
    }
}

/* A stand-in JVM: listens on /tmp/.java_pid<our pid>, checks the request, replies. */
typedef struct {
    int fd;
    const char *reply; /* NULL: never reply (until the client gives up) */
    char got[128];
    size_t ngot;
} fake_jvm;

static void *fake_jvm_main(void *arg)
{
    fake_jvm *f = arg;
    struct pollfd pf = {.fd = f->fd, .events = POLLIN};
    if (poll(&pf, 1, 8000) != 1) /* the client never came */
        return NULL;
    int c = accept(f->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    ssize_t r;
    while (f->ngot < sizeof(f->got) &&
           (r = read(c, f->got + f->ngot, sizeof(f->got) - f->ngot)) > 0) {
        f->ngot += (size_t)r;
        size_t nuls = 0;
        for (size_t i = 0; i < f->ngot; i++)
            nuls += f->got[i] == '\0';
        if (nuls >= 5) /* version, command and 3 arguments */
            break;
    }
    if (f->reply) {
        if (write(c, f->reply, strlen(f->reply)) < 0)
            perror("write");
    } else {
        char b[16];
        while (read(c, b, sizeof(b)) > 0) /* until the client closes */
            ;
    }
    close(c);
    return NULL;
}

static int listen_on(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    cr_assert(listen(fd, 4) == 0);
    return fd;
}

static int listen_at(char *path, size_t len)
{
    snprintf(path, len, "/tmp/.java_pid%d", (int)getpid());
    unlink(path);
    return listen_on(path);
}

/* One exchange with JVM pid, stood in for by a listener on fd that answers reply (NULL:
 * never). */
static int exchange_with(pid_t pid, int fd, const char *reply, const char *cmd, double timeout,
                         char **out, fake_jvm *f, char *err, size_t errlen)
{
    *f = (fake_jvm){.fd = fd, .reply = reply};
    pthread_t t;
    pthread_create(&t, NULL, fake_jvm_main, f);
    int rc = pp_jattach_jcmd(pid, cmd, timeout, out, err, errlen);
    pthread_join(t, NULL);
    return rc;
}

static int exchange(int fd, const char *reply, const char *cmd, double timeout, char **out,
                    fake_jvm *f, char *err, size_t errlen)
{
    return exchange_with(getpid(), fd, reply, cmd, timeout, out, f, err, errlen);
}

Test(java, jcmd_exchange_with_stand_in_jvm)
{
    char path[64], *out = NULL, err[256] = "";
    int fd = listen_at(path, sizeof(path));
    fake_jvm f;
    int rc = exchange(fd, "0\nOpenJDK 64-Bit Server VM version 17\nJDK 17.0.15\n", "VM.version",
                      5.0, &out, &f, err, sizeof(err));
    close(fd);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(out, "OpenJDK 64-Bit Server VM version 17\nJDK 17.0.15\n");
    cr_assert_eq(f.ngot, 20);
    cr_assert(memcmp(f.got, "1\0jcmd\0VM.version\0\0\0", 20) == 0);
    free(out);
}

Test(java, jcmd_error_code_and_timeout)
{
    char path[64], *out = NULL, err[256] = "";
    int fd = listen_at(path, sizeof(path));
    fake_jvm f;
    int rc =
        exchange(fd, "-1\nUnknown diagnostic command\n", "Bogus", 5.0, &out, &f, err, sizeof(err));
    cr_assert_eq(rc, 1, "%s", err);
    cr_assert_str_eq(out, "Unknown diagnostic command\n");
    free(out);
    out = NULL;
    rc = exchange(fd, NULL, "VM.version", 0.3, &out, &f, err, sizeof(err));
    close(fd);
    unlink(path);
    cr_assert_eq(rc, -1);
    cr_assert_null(out);
    cr_assert(strstr(err, "no answer in time"), "%s", err);
}

/* A real program, `sleep 60`, once it runs (under valgrind a forked copy would have valgrind's
 * handlers); SIGQUIT has its default action. */
static pid_t spawn_sleep(void)
{
    pid_t child = fork();
    if (child == 0) {
        signal(SIGQUIT, SIG_DFL);
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    char link[64], exe[256];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)child);
    for (int i = 0; i < 2000; i++) {
        ssize_t n = readlink(link, exe, sizeof(exe) - 1);
        if (n > 0 && (exe[n] = '\0', strstr(exe, "sleep")))
            break;
        usleep(1000);
    }
    /* an attach socket named after this new pid is another process's, left behind (a stand-in
     * JVM of an earlier run whose pid this child now has): the tests here mean "no JVM" */
    snprintf(link, sizeof(link), "/tmp/.java_pid%d", (int)child);
    unlink(link);
    return child;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(java, timeout_sets_etimedout)
{
    char path[64], *out = NULL, err[256] = "";
    int fd = listen_at(path, sizeof(path));
    fake_jvm f;
    int rc = exchange(fd, NULL, "VM.version", 0.3, &out, &f, err, sizeof(err));
    int e = errno;
    close(fd);
    unlink(path);
    cr_assert_eq(rc, -1);
    cr_assert_eq(e, ETIMEDOUT, "%s", strerror(e));
}

typedef struct {
    int efd;
    double after;
} canceller;

static void *cancel_later(void *arg)
{
    canceller *c = arg;
    struct timespec ts = {0, (long)(c->after * 1e9)};
    nanosleep(&ts, NULL);
    uint64_t one = 1;
    cr_assert_eq(write(c->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
    return NULL;
}

/* A JVM that never answers: a cancel descriptor ends the request long before its timeout, only
 * in the thread that set it. */
Test(java, cancel_fd_ends_a_request_at_once)
{
    char path[64], *out = NULL, err[256] = "";
    int fd = listen_at(path, sizeof(path));
    canceller c = {.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), .after = 0.2};
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, &c);
    pp_jattach_set_cancel_fd(c.efd);
    fake_jvm f;
    double t0 = now_s();
    int rc = exchange(fd, NULL, "VM.version", 10.0, &out, &f, err, sizeof(err));
    int e = errno;
    double took = now_s() - t0;
    pp_jattach_set_cancel_fd(-1);
    pthread_join(t, NULL);
    close(fd);
    close(c.efd);
    unlink(path);
    cr_assert_eq(rc, -1);
    cr_assert_eq(e, ECANCELED, "%s", strerror(e));
    cr_assert(strstr(err, "cancelled"), "%s", err);
    cr_assert_lt(took, 2.0, "took %.2f s", took);
}

/* A stand-in JVM process: counts SIGQUITs; the first starts its "attach listener"
 * (/tmp/.java_pid<pid>, 200 ms later, like a slow JVM), which answers every request; it reports
 * the count on report_fd after `requests` requests. */
static volatile sig_atomic_t quits;

static void on_quit(int sig)
{
    (void)sig;
    quits++;
}

static void standin_jvm(int requests, int report_fd)
{
    struct sigaction sa = {.sa_handler = on_quit};
    sigaction(SIGQUIT, &sa, NULL);
    if (write(report_fd, "r", 1) != 1) /* ready: the handler is installed */
        _exit(1);
    while (!quits)
        pause();
    double until = now_s() + 0.2;
    while (now_s() < until) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    /* like HotSpot: bound under a temporary name, renamed over whatever has the socket's */
    char path[64], tmp[80];
    snprintf(path, sizeof(path), "/tmp/.java_pid%d", (int)getpid());
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    unlink(tmp);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa_un = {.sun_family = AF_UNIX};
    snprintf(sa_un.sun_path, sizeof(sa_un.sun_path), "%s", tmp);
    if (bind(lfd, (struct sockaddr *)&sa_un, sizeof(sa_un)) < 0 || listen(lfd, 8) < 0 ||
        rename(tmp, path) < 0)
        _exit(1);
    for (int i = 0; i < requests; i++) {
        int c = accept(lfd, NULL, NULL);
        char b[256];
        if (c < 0 || read(c, b, sizeof(b)) <= 0 || write(c, "0\nok\n", 5) != 5)
            _exit(1);
        close(c);
    }
    unlink(path);
    char n = (char)quits;
    if (write(report_fd, &n, 1) != 1)
        _exit(1);
    _exit(0);
}

typedef struct {
    pid_t pid;
    int rc;
    char err[256];
} attacher;

static void *attach_once(void *arg)
{
    attacher *a = arg;
    char *out = NULL;
    a->rc = pp_jattach_jcmd(a->pid, "VM.version", 10.0, &out, a->err, sizeof(a->err));
    free(out);
    return NULL;
}

/* Identity, perf maps and the JFR start attach to a new JVM at once: one of them starts its
 * listener, the others wait for it. A second SIGQUIT after the listener started would make a
 * JVM print a thread dump. */
Test(java, one_sigquit_for_concurrent_first_attaches)
{
    enum { N = 4 };
    int p[2];
    cr_assert_eq(pipe(p), 0);
    char *dir = pp_test_mkdtemp(); /* the stand-in's cwd: the trigger files go there */
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        if (chdir(dir) < 0)
            _exit(1);
        standin_jvm(N, p[1]);
    }
    close(p[1]);
    char c;
    cr_assert_eq(read(p[0], &c, 1), 1);
    attacher a[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) { /* 50 ms apart: no two signals merge into one */
        a[i] = (attacher){.pid = child};
        pthread_create(&t[i], NULL, attach_once, &a[i]);
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    ssize_t got = read(p[0], &c, 1);
    close(p[0]);
    waitpid(child, NULL, 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(a[i].rc, 0, "%s", a[i].err);
    cr_assert_eq(got, 1);
    cr_assert_eq(c, 1, "%d SIGQUITs", c);
    DIR *d = opendir(dir);
    struct dirent *de;
    while ((de = readdir(d)))
        cr_assert(de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")),
                  "left in the cwd: %s", de->d_name);
    closedir(d);
    pp_test_rmtree(dir);
}

/* A socket nobody listens on (not the JVM's: another process made it) is not the end: the
 * JVM's listener is started, and its socket, renamed over the stale one, answers. */
Test(java, stale_attach_socket)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    char *dir = pp_test_mkdtemp();
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        if (chdir(dir) < 0)
            _exit(1);
        standin_jvm(1, p[1]);
    }
    close(p[1]);
    char c;
    cr_assert_eq(read(p[0], &c, 1), 1);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/.java_pid%d", (int)child);
    unlink(path);
    close(listen_on(path)); /* the socket file stays; nobody listens on it */
    attacher a = {.pid = child};
    attach_once(&a);
    if (a.rc != 0) /* the stand-in still waits for its SIGQUIT */
        kill(child, SIGKILL);
    ssize_t got = read(p[0], &c, 1);
    close(p[0]);
    waitpid(child, NULL, 0);
    unlink(path);
    pp_test_rmtree(dir);
    cr_assert_eq(a.rc, 0, "%s", a.err);
    cr_assert_eq(got, 1);
    cr_assert_eq(c, 1, "%d SIGQUITs", c);
}

/* A stopped process is neither signalled nor waited for. */
Test(java, stopped_process_is_not_attached)
{
    pid_t child = spawn_sleep();
    kill(child, SIGSTOP);
    siginfo_t si;
    cr_assert_eq(waitid(P_PID, (id_t)child, &si, WSTOPPED | WNOWAIT), 0);
    char *out = NULL, err[256] = "";
    double t0 = now_s();
    int rc = pp_jattach_jcmd(child, "VM.version", 5.0, &out, err, sizeof(err));
    int e = errno;
    double took = now_s() - t0;
    char path[64], status[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)child);
    bool read_ok = pp_read_small_file(path, status, sizeof(status)) > 0;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    cr_assert_eq(rc, -1);
    cr_assert_eq(e, EAGAIN, "%s", strerror(e));
    cr_assert(strstr(err, "is stopped"), "%s", err);
    cr_assert_lt(took, 1.0, "took %.2f s", took);
    cr_assert(read_ok);
    /* no SIGQUIT pending: it would make a JVM dump its threads when it continues */
    const char *pnd = strstr(status, "ShdPnd:");
    cr_assert_not_null(pnd);
    unsigned long long mask = strtoull(pnd + 7, NULL, 16);
    cr_assert_eq(mask & (1ull << (SIGQUIT - 1)), 0);
}

Test(java, no_sigquit_without_handler)
{
    pid_t child = spawn_sleep();
    char *out = NULL, err[256] = "";
    int rc = pp_jattach_jcmd(child, "VM.version", 2.0, &out, err, sizeof(err));
    int alive = kill(child, 0) == 0;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    cr_assert_eq(rc, -1);
    cr_assert(strstr(err, "no SIGQUIT handler"), "%s", err);
    cr_assert(alive, "the process was signalled");
}

Test(java, trigger_removed_when_the_process_dies)
{
    /* Catches SIGQUIT (so it is signalled) but never listens, and exits on it. */
    char *dir = pp_test_mkdtemp();
    pid_t child = fork();
    if (child == 0) {
        /* a shell cannot trap a signal ignored when it starts (POSIX), and a test run started in
         * the background of a shell without job control inherits SIGQUIT ignored */
        signal(SIGQUIT, SIG_DFL);
        if (chdir(dir) != 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", "trap 'exit 0' QUIT; while :; do sleep 0.05; done",
              (char *)NULL);
        _exit(127);
    }
    char path[600], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)child);
    pp_jattach_status st = {0};
    for (int i = 0; i < 30000 && !st.sigquit_caught; i++) { /* up to 30 s on a loaded host */
        if (pp_read_small_file(path, text, sizeof(text)) > 0)
            pp_jattach_parse_status(text, &st);
        usleep(1000);
    }
    cr_assert(st.sigquit_caught);
    char *out = NULL, err[256] = "";
    int rc = pp_jattach_jcmd(child, "VM.version", 1.0, &out, err, sizeof(err));
    waitpid(child, NULL, 0);
    cr_assert_eq(rc, -1);
    snprintf(path, sizeof(path), "%s/.attach_pid%d", dir, (int)child);
    cr_assert(access(path, F_OK) != 0, "trigger left behind: %s", err);
    pp_test_rmtree(dir);
}

/* ---- a JVM in a container: its files are found inside its root ---- */

static void sh(const char *cmd)
{
    cr_assert(system(cmd) == 0, "%s", cmd);
}

/* The JDK's release file is an absolute symlink to a path that exists both on the host and
 * inside the JVM's root: the one inside is read. */
Test(java, release_file_read_inside_the_jvm_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), p[1400], target[600];
    snprintf(p, sizeof(p), "mkdir -p %s/jdk/lib/server %s%s", root, root, host);
    sh(p);
    static const char page[4096];
    snprintf(p, sizeof(p), "%s/jdk/lib/server/libjvm.so", root);
    pp_test_write_file(p, page, sizeof(page));
    snprintf(target, sizeof(target), "%s/release", host);
    snprintf(p, sizeof(p), "%s/jdk/release", root);
    cr_assert(symlink(target, p) == 0);
    static const char outside[] = "JAVA_VERSION=\"99.0.1\"\n",
                      inside[] = "IMPLEMENTOR=\"x\"\nJAVA_VERSION=\"17.0.9\"\n"
                                 "JAVA_VERSION_DATE=\"2023-10-17\"\n";
    pp_test_write_file(target, outside, strlen(outside));
    snprintf(p, sizeof(p), "%s%s/release", root, host);
    pp_test_write_file(p, inside, strlen(inside));
    pid_t pid = pp_test_spawn_in_root_with_lib(root, "jdk/lib/server/libjvm.so");

    char lib[PATH_MAX], ver[64], date[32], want[600];
    cr_assert_eq(pp_java_release_info(pid, lib, sizeof(lib), ver, sizeof(ver), date, sizeof(date)),
                 0);
    cr_assert_str_eq(ver, "17.0.9", "the release file was read outside the JVM's root");
    cr_assert_str_eq(date, "2023-10-17");
    snprintf(want, sizeof(want), "%s/jdk/lib/server/libjvm.so", root);
    cr_assert_str_eq(lib, want, "the path as mapped, inside the JVM's root");
    pp_test_kill(pid);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

/* The JVM's /tmp is an absolute symlink (to /var/tmp): the recording's directory is the
 * container's /var/tmp, not the host's. */
Test(java, jfr_tmp_inside_the_jvm_root)
{
    char *root = pp_test_mkdtemp(), p[600];
    snprintf(p, sizeof(p), "mkdir -p %s/var/tmp && ln -s /var/tmp %s/tmp", root, root);
    sh(p);
    pid_t pid = pp_test_spawn_isolated(pp_test_chroot, root);
    pp_jfr_rec r;
    char err[256];
    cr_assert_eq(pp_jfr_rec_init(&r, pid, err, sizeof(err)), 0, "%s", err);
    struct stat got, want;
    snprintf(p, sizeof(p), "%s/var/tmp", root);
    cr_assert(fstat(r.tmp_fd, &got) == 0 && stat(p, &want) == 0);
    cr_assert(got.st_ino == want.st_ino && got.st_dev == want.st_dev,
              "the JVM's /tmp was resolved outside its root");
    pp_jfr_rec_close(&r);
    pp_test_kill(pid);
    pp_test_rmtree(root);
}

/* The JFR directories in a JVM's /tmp have names nobody can predict: a user who made the old
 * predictable names (polyprof-jfr-<polyprof pid>-1..300) in advance denies nothing. */
Test(java, jfr_private_dir_names_cannot_be_planted)
{
    char *root = pp_test_mkdtemp(), p[600];
    snprintf(p, sizeof(p), "%s/tmp", root);
    cr_assert(mkdir(p, 01777) == 0);
    for (int i = 0; i <= 300; i++) {
        snprintf(p, sizeof(p), "%s/tmp/polyprof-jfr-%d-%d", root, (int)getpid(), i);
        cr_assert(mkdir(p, 0755) == 0);
    }
    pid_t pid = pp_test_spawn_isolated(pp_test_chroot, root);
    pp_jfr_rec r;
    char err[256];
    cr_assert_eq(pp_jfr_rec_init(&r, pid, err, sizeof(err)), 0, "%s", err);
    char names[3][64];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pp_jfr_make_private_dir(&r, names[i], sizeof(names[i]), err, sizeof(err)), 0,
                     "%s", err);
        char prefix[64];
        int n = snprintf(prefix, sizeof(prefix), "polyprof-jfr-%d-", (int)getpid());
        cr_assert(strncmp(names[i], prefix, (size_t)n) == 0, "%s", names[i]);
        cr_assert_eq(strlen(names[i] + n), PP_JFR_DIR_RANDOM, "%s", names[i]);
        for (const char *c = names[i] + n; *c; c++)
            cr_assert(isalnum((unsigned char)*c), "%s", names[i]);
        for (int k = 0; k < i; k++)
            cr_assert_str_neq(names[i], names[k]);
        struct stat sb;
        snprintf(p, sizeof(p), "%s/tmp/%s", root, names[i]);
        cr_assert(lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700);
    }
    pp_jfr_rec_close(&r);
    pp_test_kill(pid);
    pp_test_rmtree(root);
}

static int chroot_without_sigquit(const char *root)
{
    signal(SIGQUIT, SIG_DFL);
    return pp_test_chroot(root);
}

/* A socket bound by the test, on which the stand-in JVM calls listen() (chroot_and_listen): its
 * listener is then the JVM's process (peer credentials are checked), and the test, which shares
 * the socket, accepts and answers (under valgrind, a process forked in a chroot cannot run). */
static int bound_socket = -1;

static int chroot_and_listen(const char *root)
{
    return chroot_without_sigquit(root) == 0 && listen(bound_socket, 4) == 0 ? 0 : -1;
}

/* The JVM's /tmp/.java_pid<nspid> is a symlink: followed inside its root (to a socket there),
 * never to a host socket. */
Test(java, attach_socket_inside_the_jvm_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), p[600], link[600];
    snprintf(p, sizeof(p), "mkdir -p %s/tmp %s/run", root, root);
    sh(p);
    snprintf(p, sizeof(p), "%s/run/jvm.sock", root);
    bound_socket = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(p), sizeof(sa.sun_path));
    memcpy(sa.sun_path, p, strlen(p) + 1);
    cr_assert(bind(bound_socket, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    pid_t pid = pp_test_spawn_isolated(chroot_and_listen, root);
    snprintf(link, sizeof(link), "%s/tmp/.java_pid%d", root, (int)pid);
    cr_assert(symlink("/run/jvm.sock", link) == 0);
    char *out = NULL, err[256] = "";
    fake_jvm f;
    int rc = exchange_with(pid, bound_socket, "0\nJDK 17.0.9\n", "VM.version", 5.0, &out, &f, err,
                           sizeof(err));
    close(bound_socket);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(out, "JDK 17.0.9\n");
    free(out);
    out = NULL;

    snprintf(p, sizeof(p), "%s/host.sock", host);
    int outside = listen_on(p);
    cr_assert(unlink(link) == 0 && symlink(p, link) == 0);
    rc = pp_jattach_jcmd(pid, "VM.version", 1.0, &out, err, sizeof(err));
    cr_assert_eq(rc, -1);
    cr_assert_null(out);
    struct pollfd pf = {.fd = outside, .events = POLLIN};
    cr_assert_eq(poll(&pf, 1, 0), 0, "connected to a host socket through the JVM's /tmp");
    close(outside);
    pp_test_kill(pid);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

/* A stand-in JVM: a static program that waits, started as "/bin/jvm <arg>" chrooted in root
 * (valgrind does not trace what runs from /bin). Returns once its command line shows arg. */
static pid_t spawn_jvm_in_root(const char *root, const char *arg)
{
    char p[1200];
    snprintf(p, sizeof(p),
             "mkdir -p %s/bin && printf '#include <unistd.h>\\nint main(void) { pause(); }\\n' > "
             "%s/jvm.c && gcc -static -o %s/bin/jvm %s/jvm.c && rm %s/jvm.c",
             root, root, root, root, root);
    sh(p);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (chroot(root) == 0 && chdir("/") == 0)
            execl("/bin/jvm", "/bin/jvm", arg, (char *)NULL);
        _exit(127);
    }
    snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
    for (int i = 0; i < 500; i++) {
        char buf[512];
        ssize_t n = pp_read_small_file(p, buf, sizeof(buf));
        if (n > 9 && strcmp(buf, "/bin/jvm") == 0)
            return pid;
        usleep(10000);
    }
    cr_assert_fail("the stand-in JVM did not start");
    return -1;
}

/* -XX:ErrorFile=/logs/hs_%p.log where the JVM's /logs is an absolute symlink naming a host
 * directory (so is its /var/logs), and its /tmp a symlink to /var/tmp: the hs_err check looks
 * inside the JVM's root, not in the host directory, and not next to its /tmp's target. */
Test(java, hserr_error_file_inside_the_jvm_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), p[1400], inside[1400];
    snprintf(p, sizeof(p),
             "mkdir -p %s/var/tmp %s%s && ln -s /var/tmp %s/tmp && ln -s %s %s/logs && "
             "ln -s %s %s/var/logs",
             root, root, host, root, host, root, host, root);
    sh(p);
    pid_t pid = spawn_jvm_in_root(root, "-XX:ErrorFile=/logs/hs_%p.log");
    pp_jfr_rec r;
    char err[256];
    cr_assert_eq(pp_jfr_rec_init(&r, pid, err, sizeof(err)), 0, "%s", err);
    snprintf(p, sizeof(p), "/logs/hs_%d.log", r.nspid);
    cr_assert_str_eq(r.errfile, p);
    cr_assert_not(pp_jfr_rec_hserr(&r));
    /* the host directory the link names, as polyprof sees it */
    snprintf(p, sizeof(p), "%s/hs_%d.log", host, r.nspid);
    pp_test_write_file(p, "x", 1);
    cr_assert_not(pp_jfr_rec_hserr(&r), "an hs_err file was looked for outside the JVM's root");
    /* the same name in the root's own directory of that path; found after the JVM is gone */
    snprintf(inside, sizeof(inside), "%s%s/hs_%d.log", root, host, r.nspid);
    pp_test_write_file(inside, "x", 1);
    pp_test_kill(pid);
    cr_assert(pp_jfr_rec_hserr(&r), "the JVM's hs_err file was not found");
    pp_jfr_rec_close(&r);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}

/* A relative ErrorFile is resolved below the JVM's cwd: ".." cannot climb out of its root. */
Test(java, hserr_relative_error_file_stays_in_the_jvm_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), p[1400], arg[1400];
    snprintf(p, sizeof(p), "mkdir -p %s/tmp %s%s", root, root, host);
    sh(p);
    snprintf(arg, sizeof(arg), "-XX:ErrorFile=../../../../../../..%s/hs_%%p.log", host);
    pid_t pid = spawn_jvm_in_root(root, arg);
    pp_jfr_rec r;
    char err[256];
    cr_assert_eq(pp_jfr_rec_init(&r, pid, err, sizeof(err)), 0, "%s", err);
    snprintf(p, sizeof(p), "%s/hs_%d.log", host, r.nspid);
    pp_test_write_file(p, "x", 1);
    cr_assert_not(pp_jfr_rec_hserr(&r), "an hs_err file was looked for outside the JVM's root");
    snprintf(p, sizeof(p), "%s%s/hs_%d.log", root, host, r.nspid);
    pp_test_write_file(p, "x", 1);
    cr_assert(pp_jfr_rec_hserr(&r), "the JVM's hs_err file was not found");
    /* the default names: in its /tmp, as a regular file */
    cr_assert(unlink(p) == 0);
    cr_assert_not(pp_jfr_rec_hserr(&r));
    snprintf(p, sizeof(p), "%s/tmp/hs_err_pid%d.log", root, r.nspid);
    pp_test_write_file(p, "x", 1);
    cr_assert(pp_jfr_rec_hserr(&r));
    pp_test_kill(pid);
    pp_jfr_rec_close(&r);
    pp_test_rmtree(root);
    pp_test_rmtree(host);
}
