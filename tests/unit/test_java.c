/* Unit tests: the HotSpot attach client (request encoding, reply parsing, /proc status, a full
 * exchange with a stand-in JVM socket, the SIGQUIT guard, stopped processes, cancellation), the
 * VM.flags filter, the
 * `java -version` text rebuilt from system properties, the JFR.start command line and the
 * safemode classifiers. */
#include "tests/unit/testutil.h"

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
#include "runtimes/java/java.h"
#include "runtimes/java/javaopts.h"
#include "runtimes/java/jfr_session.h"
#include "runtimes/java/jvminfo.h"
#include "runtimes/java/jvmutil.h"
#include "runtimes/java/safemode.h"
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

static const char *FLAGS17 =
    "4242:\n"
    "[Global flags]\n"
    "     intx CICompilerCount                          = 2                                "
    "         {product} {ergonomic}\n"
    "     bool FlightRecorder                           = true                             "
    "         {product} {management}\n"
    "   size_t MaxHeapSize                              = 268435456                        "
    "         {product} {command line}\n"
    "    uintx ReservedCodeCacheSize                    = 251658240                     "
    "{pd product} {ergonomic}\n"
    "   size_t SoftMaxHeapSize                          = 268435456                   "
    "{manageable} {ergonomic}\n"
    "     bool UseCompressedOops                        = true                         "
    "  {product lp64_product} {ergonomic}\n"
    "     bool UseSerialGC                              = false                             "
    "        {product} {default}\n"
    "    ccstr ErrorFile                                = /x/hs_err.log                     "
    "        {product} {command line}\n"
    "     intx Tier4Threshold                           = 15000                            "
    "   {C2 product} {command line, ergonomic}\n";

Test(java, vm_flags_default_filter)
{
    json_t *a = pp_jvm_flags_parse(FLAGS17, PP_JVM_FLAGS_DEFAULT);
    char *s = json_dumps(a, JSON_COMPACT);
    cr_assert_str_eq(
        s, "[{\"name\":\"CICompilerCount\",\"type\":\"intx\",\"value\":\"2\",\"origin\":"
           "\"ergonomic\",\"kind\":[\"product\"]},"
           "{\"name\":\"FlightRecorder\",\"type\":\"bool\",\"value\":\"true\",\"origin\":"
           "\"management\",\"kind\":[\"product\"]},"
           "{\"name\":\"MaxHeapSize\",\"type\":\"size_t\",\"value\":\"268435456\",\"origin\":"
           "\"command line\",\"kind\":[\"product\"]},"
           "{\"name\":\"Tier4Threshold\",\"type\":\"intx\",\"value\":\"15000\",\"origin\":"
           "\"command line, ergonomic\",\"kind\":[\"C2\",\"product\"]},"
           "{\"name\":\"UseCompressedOops\",\"type\":\"bool\",\"value\":\"true\",\"origin\":"
           "\"ergonomic\",\"kind\":[\"lp64_product\",\"product\"]}]");
    free(s);
    json_decref(a);
}

Test(java, vm_flags_all_none_and_jdk8)
{
    json_t *a = pp_jvm_flags_parse(FLAGS17, PP_JVM_FLAGS_ALL);
    cr_assert_eq(json_array_size(a), 7); /* no ccstr, no manageable */
    json_decref(a);
    a = pp_jvm_flags_parse(FLAGS17, PP_JVM_FLAGS_NONE);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    const char *jdk8 = "    bool UseCompressedClassPointers               := true         "
                       "                       {lp64_product}\n"
                       "    bool UseG1GC                                   = false        "
                       "                       {product}\n";
    a = pp_jvm_flags_parse(jdk8, PP_JVM_FLAGS_DEFAULT);
    cr_assert_eq(json_array_size(a), 1);
    json_t *f = json_array_get(a, 0);
    cr_assert_str_eq(json_string_value(json_object_get(f, "name")), "UseCompressedClassPointers");
    cr_assert_str_eq(json_string_value(json_object_get(f, "origin")), "non-default");
    json_decref(a);
    a = pp_jvm_flags_parse("garbage\n\n{}\n = {\n", PP_JVM_FLAGS_ALL);
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
}

Test(java, version_text_from_properties)
{
    const char *p17 = "#Sun Nov 22\njava.runtime.version=17.0.15+6-Debian-1deb12u1\n"
                      "java.runtime.name=OpenJDK Runtime Environment\n"
                      "java.vm.name=OpenJDK 64-Bit Server VM\njava.version=17.0.15\n"
                      "java.version.date=2025-04-15\njava.vm.info=mixed mode, sharing\n"
                      "java.vm.version=17.0.15+6-Debian-1deb12u1\n"
                      "java.vendor.url=https\\://tracker.debian.org/openjdk-17\n";
    char *v = pp_java_version_from_props(p17);
    cr_assert_str_eq(v, "openjdk version \"17.0.15\" 2025-04-15\n"
                        "OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n"
                        "OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, "
                        "sharing)");
    free(v);
    const char *p25 = "java.runtime.name=OpenJDK Runtime Environment\n"
                      "java.runtime.version=25.0.3+9-LTS\njava.vendor.version=Temurin-25.0.3+9\n"
                      "java.version=25.0.3\njava.version.date=2026-04-21\n"
                      "java.vm.info=mixed mode, sharing\njava.vm.name=OpenJDK 64-Bit Server VM\n"
                      "java.vm.version=25.0.3+9-LTS\n";
    v = pp_java_version_from_props(p25);
    cr_assert_str_eq(v, "openjdk version \"25.0.3\" 2026-04-21 LTS\n"
                        "OpenJDK Runtime Environment Temurin-25.0.3+9 (build 25.0.3+9-LTS)\n"
                        "OpenJDK 64-Bit Server VM Temurin-25.0.3+9 (build 25.0.3+9-LTS, mixed "
                        "mode, sharing)");
    free(v);
    cr_assert_null(pp_java_version_from_props("java.vm.name=x\n"));
    cr_assert_eq(pp_java_major("1.8.0_292"), 8);
    cr_assert_eq(pp_java_major("17.0.15"), 17);
    cr_assert_eq(pp_java_major("1.6.0_45"), 6);
    cr_assert_eq(pp_java_major("x"), -1);
}

Test(java, jfr_start_cmdline)
{
    char buf[640];
    pp_jfr_start_cmdline(buf, sizeof(buf), "polyprof_1_2_3_4", PP_JFR_SAMPLER_EXECUTION, 11, 90,
                         true, "/tmp/d/start.jfr");
    cr_assert_str_eq(buf, "JFR.start name=polyprof_1_2_3_4 settings=none "
                          "+jdk.ExecutionSample#enabled=true +jdk.ExecutionSample#period=91ms "
                          "+jdk.NativeMethodSample#enabled=true "
                          "+jdk.NativeMethodSample#period=91ms "
                          "duration=90s disk=true filename=/tmp/d/start.jfr");
    pp_jfr_start_cmdline(buf, sizeof(buf), "n", PP_JFR_SAMPLER_CPUTIME, 99, 34, false, "/f");
    cr_assert_str_eq(buf, "JFR.start name=n settings=none +jdk.CPUTimeSample#enabled=true "
                          "+jdk.CPUTimeSample#throttle=10ms duration=34s disk=false filename=/f");
    pp_jfr_start_cmdline(buf, sizeof(buf), "n", PP_JFR_SAMPLER_EXECUTION, 1000, 34, true, "/f");
    cr_assert(strstr(buf, "#period=1ms "), "%s", buf);
    cr_assert_eq(pp_jfr_sampler_for(25), PP_JFR_SAMPLER_CPUTIME);
    cr_assert_eq(pp_jfr_sampler_for(26), PP_JFR_SAMPLER_CPUTIME);
    cr_assert_eq(pp_jfr_sampler_for(21), PP_JFR_SAMPLER_EXECUTION);
    cr_assert_eq(pp_jfr_sampler_for(-1), PP_JFR_SAMPLER_EXECUTION);
}

Test(java, stale_private_directories)
{
    char *dir = pp_test_mkdtemp(), path[512];
    long dead = 4000000;
    while (kill((pid_t)dead, 0) == 0 || errno != ESRCH)
        dead++;
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%ld-3", dir, dead);
    cr_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%ld-3/rec.jfr", dir, dead);
    pp_test_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%d-4", dir, (int)getpid());
    cr_assert(mkdir(path, 0700) == 0);
    snprintf(path, sizeof(path), "%s/other", dir);
    cr_assert(mkdir(path, 0700) == 0);
    int fd = open(dir, O_PATH | O_DIRECTORY);
    cr_assert_eq(pp_jfr_cleanup_stale(fd), 1);
    close(fd);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%ld-3", dir, dead);
    cr_assert(access(path, F_OK) != 0);
    snprintf(path, sizeof(path), "%s/polyprof-jfr-%d-4", dir, (int)getpid());
    cr_assert(access(path, F_OK) == 0);
    snprintf(path, sizeof(path), "%s/other", dir);
    cr_assert(access(path, F_OK) == 0);
    pp_test_rmtree(dir);
}

Test(java, recording_names)
{
    char names[4][64];
    bool running[4];
    int n = pp_jfr_check_names("4242:\nRecording 2: name=userdisk maxsize=250.0MB (running)\n\n"
                               "Recording 3: name=polyprof_4026531836_77_123_1 duration=64s "
                               "(running)\nRecording 1: name=x duration=3s (stopped)\n",
                               names, running, 4);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(names[0], "userdisk");
    cr_assert(running[0] && running[1] && !running[2]);
    cr_assert_str_eq(names[1], "polyprof_4026531836_77_123_1");
    cr_assert_eq(pp_jfr_check_names("4242:\nNo available recordings.\n", names, running, 4), 0);
    cr_assert_eq(pp_jfr_check_names("Recording 1: name=a (running)\nRecording 2: name=b\n", names,
                                    running, 1),
                 1);

    cr_assert(pp_jfr_props_repository("4242:\n#Wed\nfile.encoding=UTF-8\n"
                                      "jdk.jfr.repository=/tmp/2026_11_25_17_03_19_3613\nx=y\n"));
    cr_assert(!pp_jfr_props_repository("4242:\nfile.encoding=UTF-8\njdk.jfr.repository=\n"));
    cr_assert(!pp_jfr_props_repository("4242:\nxjdk.jfr.repository=/a\n"));

    unsigned long long ns, ticks;
    long pid;
    cr_assert(pp_jfr_polyprof_name("polyprof_4026531836_77_123_1", &ns, &pid, &ticks));
    cr_assert(ns == 4026531836ULL && pid == 77 && ticks == 123);
    cr_assert(!pp_jfr_polyprof_name("polyprof_77_1", &ns, &pid, &ticks));
    cr_assert(!pp_jfr_polyprof_name("polyprof_1_2_3_4x", &ns, &pid, &ticks));
    cr_assert(!pp_jfr_polyprof_name("user", &ns, &pid, &ticks));

    /* ours, another live process, a dead pid, another pid namespace */
    struct stat sb;
    cr_assert(stat("/proc/self/ns/pid", &sb) == 0);
    long dead = 4000000;
    while (kill((pid_t)dead, 0) == 0 || errno != ESRCH)
        dead++;
    char name[64];
    pp_jfr_rec r;
    char err[256];
    cr_assert(pp_jfr_rec_init(&r, getpid(), err, sizeof(err)) == 0, "%s", err);
    cr_assert(!pp_jfr_orphan_name(r.name), "%s", r.name);
    snprintf(name, sizeof(name), "polyprof_%llu_%d_%llu_1", (unsigned long long)sb.st_ino,
             (int)getpid(), pp_proc_start_ticks(getpid()) + 1);
    cr_assert(pp_jfr_orphan_name(name), "our pid, another start time");
    snprintf(name, sizeof(name), "polyprof_%llu_%ld_1_1", (unsigned long long)sb.st_ino, dead);
    cr_assert(pp_jfr_orphan_name(name));
    snprintf(name, sizeof(name), "polyprof_%llu_%d_%llu_1", (unsigned long long)sb.st_ino, 1,
             pp_proc_start_ticks(1));
    cr_assert(pp_jfr_orphan_name(name), "pid 1 is no polyprof");
    snprintf(name, sizeof(name), "polyprof_%llu_%ld_1_1", (unsigned long long)sb.st_ino + 1, dead);
    cr_assert(!pp_jfr_orphan_name(name), "another pid namespace");
    cr_assert(!pp_jfr_orphan_name("userdisk"));
    pp_jfr_rec_close(&r);
}

Test(java, safemode_classifiers)
{
    cr_assert(pp_java_fatal_status(SIGKILL, NULL)); /* killed by signal 9 */
    cr_assert(pp_java_fatal_status(SIGSEGV, NULL));
    cr_assert(pp_java_fatal_status(SIGABRT | 0x80, NULL)); /* with a core dump */
    cr_assert(!pp_java_fatal_status(SIGTERM, NULL));
    cr_assert(!pp_java_fatal_status(143 << 8, NULL)); /* exit code 143 after SIGTERM */
    cr_assert(!pp_java_fatal_status(0, NULL));
    cr_assert(pp_java_kmsg_oom("3,1234,5678,-;Out of memory: Killed process 4242 (java) "
                               "total-vm:1kB",
                               4242));
    cr_assert(pp_java_kmsg_oom("6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),"
                               "task=java,pid=4242,uid=0",
                               4242));
    cr_assert(!pp_java_kmsg_oom("3,1,2,-;Out of memory: Killed process 42420 (java)", 4242));
    cr_assert(!pp_java_kmsg_oom("6,1,2,-;java[4242]: segfault at 0", 4242));
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

static int chroot_without_sigquit(const char *root)
{
    signal(SIGQUIT, SIG_DFL);
    return pp_test_chroot(root);
}

/* The JVM's /tmp/.java_pid<nspid> is a symlink: followed inside its root (to a socket there),
 * never to a host socket. */
Test(java, attach_socket_inside_the_jvm_root)
{
    char *root = pp_test_mkdtemp(), *host = pp_test_mkdtemp(), p[600], link[600];
    snprintf(p, sizeof(p), "mkdir -p %s/tmp %s/run", root, root);
    sh(p);
    pid_t pid = pp_test_spawn_isolated(chroot_without_sigquit, root);
    snprintf(link, sizeof(link), "%s/tmp/.java_pid%d", root, (int)pid);
    cr_assert(symlink("/run/jvm.sock", link) == 0);
    snprintf(p, sizeof(p), "%s/run/jvm.sock", root);
    int in = listen_on(p);
    char *out = NULL, err[256] = "";
    fake_jvm f;
    int rc =
        exchange_with(pid, in, "0\nJDK 17.0.9\n", "VM.version", 5.0, &out, &f, err, sizeof(err));
    close(in);
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

Test(java, collect_jvm_flags_option)
{
    json_t *a = pp_java_jvm_flags_for(FLAGS17, NULL);
    cr_assert_eq(json_array_size(a), 5);
    json_decref(a);
    a = pp_java_jvm_flags_for(FLAGS17, "all");
    cr_assert_eq(json_array_size(a), 7);
    json_decref(a);
    a = pp_java_jvm_flags_for(FLAGS17, "none");
    cr_assert_eq(json_array_size(a), 0);
    json_decref(a);
    /* a list: those of `all` named (UseSerialGC is at its default; ErrorFile is a ccstr) */
    a = pp_java_jvm_flags_for(FLAGS17, "UseSerialGC,MaxHeapSize,ErrorFile,Nope");
    cr_assert_eq(json_array_size(a), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "name")),
                     "MaxHeapSize");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 1), "name")),
                     "UseSerialGC");
    json_decref(a);
}

Test(java, safemode_option)
{
    unsigned m;
    char bad[80];
    cr_assert_eq(pp_java_safemode_parse(NULL, &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, PP_SAFEMODE_PROFILED_OOM | PP_SAFEMODE_PROFILED_SIGNALED | PP_SAFEMODE_HSERR);
    cr_assert_eq(pp_java_safemode_parse("", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, 0xffu);
    cr_assert_eq(pp_java_safemode_parse("all", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, 0xffu);
    cr_assert_eq(pp_java_safemode_parse("hserr,ap-loaded-check", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, PP_SAFEMODE_HSERR | PP_SAFEMODE_AP_LOADED_CHECK);
    cr_assert_eq(pp_java_safemode_parse("none", &m, bad, sizeof(bad)), 0);
    cr_assert_eq(m, 0u);
    cr_assert_eq(pp_java_safemode_parse("hserr,oops", &m, bad, sizeof(bad)), -1);
    cr_assert_str_eq(bad, "oops");
}

Test(java, stat_times_of_a_process)
{
    /* start time as ps shows it, CPU time grows with work, 0 for a process that is gone */
    unsigned long long start = pp_proc_start_ticks(getpid()), cpu = pp_proc_cpu_ticks(getpid());
    cr_assert(start > 0);
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile unsigned long spin = 0;
    do {
        for (int i = 0; i < 100000; i++)
            spin += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
    cr_assert_gt(pp_proc_cpu_ticks(getpid()), cpu, "100 ms of CPU is 10 clock ticks");
    cr_assert_eq(pp_proc_start_ticks(getpid()), start);
    cr_assert_eq(pp_proc_cpu_ticks(1 << 23), 0);
    cr_assert_eq(pp_proc_start_ticks(1 << 23), 0);
}
