/* Unit tests for base/peersock.c: a socket in a target's /tmp is used only when its file is
 * owned by the target's user and its listener is the target process itself; otherwise nothing
 * is sent. */
#include "tests/unit/testutil.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>

#include "base/peersock.h"

TestSuite(peersock, .init = pp_test_quiet_log);

#define NOBODY 65534

static double deadline_in(double s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + s;
}

static int listen_on(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
        return -1;
    return fd;
}

/* A listener of another user (nobody) in another process: binds dir/name as nobody, listens,
 * reports on the pipe "r" once listening, then, when told (a byte on go), whether a connection
 * is pending and how many bytes it got ("c<n>" or "n"). */
typedef struct {
    pid_t pid;
    int go, report;
} server;

static server serve_as_nobody(const char *dir, const char *name)
{
    int go[2], rep[2];
    cr_assert(pipe(go) == 0 && pipe(rep) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(go[1]);
        close(rep[0]);
        if (syscall(SYS_setresgid, NOBODY, NOBODY, NOBODY) < 0 ||
            syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) < 0 || chdir(dir) < 0)
            _exit(1);
        int l = listen_on(name);
        if (l < 0 || write(rep[1], "r", 1) != 1)
            _exit(1);
        char x;
        if (read(go[0], &x, 1) != 1)
            _exit(1);
        struct pollfd p = {.fd = l, .events = POLLIN};
        char out[32] = "n";
        if (poll(&p, 1, 0) == 1) {
            int c = accept(l, NULL, NULL);
            char b[256];
            ssize_t n = 0, r;
            while (c >= 0 && (r = read(c, b, sizeof(b))) > 0)
                n += r;
            snprintf(out, sizeof(out), "c%zd", n);
        }
        if (write(rep[1], out, strlen(out)) < 0)
            _exit(1);
        _exit(0);
    }
    close(go[0]);
    close(rep[1]);
    char r;
    cr_assert_eq(read(rep[0], &r, 1), 1, "the server did not start");
    return (server){.pid = pid, .go = go[1], .report = rep[0]};
}

/* What the server saw: "n" (no connection) or "c<bytes>". */
static char *server_report(server *s)
{
    static char got[32];
    cr_assert_eq(write(s->go, "g", 1), 1);
    ssize_t n = read(s->report, got, sizeof(got) - 1);
    got[n > 0 ? n : 0] = '\0';
    close(s->go);
    close(s->report);
    waitpid(s->pid, NULL, 0);
    return got;
}

static char *world_dir(void)
{
    char *dir = pp_test_mkdtemp();
    cr_assert(chmod(dir, 01777) == 0);
    return dir;
}

/* The target runs as root, another user bound its socket's name first: refused before connect,
 * so the impostor gets nothing, not even a connection. */
Test(peersock, socket_of_another_owner_is_refused)
{
    char *dir = world_dir();
    server s = serve_as_nobody(dir, "sock");
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    pp_peer target = {.pid = s.pid, .euid = 0, .egid = 0}; /* even the listener's pid */
    pp_peersock_opts o = {.deadline = deadline_in(2), .what = "the test socket"};
    char err[512] = "";
    int fd = pp_peersock_connect_at(dfd, "sock", &target, &o, err, sizeof(err));
    int e = errno;
    cr_assert_eq(fd, -1);
    cr_assert_eq(e, EPERM, "%s", strerror(e));
    cr_assert(strstr(err, "is owned by uid 65534, not by the process's user (uid 0)"), "%s", err);
    cr_assert_str_eq(server_report(&s), "n", "the impostor got a connection");
    close(dfd);
    pp_test_rmtree(dir);
}

/* The file's owner is right but the listener is another process (the same user's): refused
 * after connecting, nothing sent. */
Test(peersock, listener_of_another_process_is_refused)
{
    char *dir = world_dir();
    server s = serve_as_nobody(dir, "sock");
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    pid_t other = fork(); /* the "target": another process of nobody's */
    if (other == 0) {
        pause();
        _exit(0);
    }
    pp_peer target = {.pid = other, .euid = NOBODY, .egid = NOBODY};
    pp_peersock_opts o = {.deadline = deadline_in(2), .what = "the test socket"};
    char err[512] = "";
    int fd = pp_peersock_connect_at(dfd, "sock", &target, &o, err, sizeof(err));
    int e = errno;
    pp_test_kill(other);
    cr_assert_eq(fd, -1);
    cr_assert_eq(e, EPERM, "%s", strerror(e));
    char want[128];
    snprintf(want, sizeof(want), "is served by process %d (uid 65534), not by process %d",
             (int)s.pid, (int)other);
    cr_assert(strstr(err, want), "%s", err);
    cr_assert_str_eq(server_report(&s), "c0", "the impostor got bytes");
    close(dfd);
    pp_test_rmtree(dir);
}

/* The target's own socket, the target another user: connected, usable. Also connected as that
 * user (as_peer). */
Test(peersock, the_targets_own_socket_is_used)
{
    char *dir = world_dir();
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (int as_peer = 0; as_peer < 2; as_peer++) {
        server s = serve_as_nobody(dir, "sock");
        pp_peer target;
        cr_assert_eq(pp_peer_from_pid(s.pid, &target), 0);
        cr_assert_eq(target.euid, NOBODY);
        cr_assert_eq(target.egid, NOBODY);
        pp_peersock_opts o = {.deadline = deadline_in(2), .as_peer = as_peer, .what = "sock"};
        char err[512] = "";
        int fd = pp_peersock_connect_at(dfd, "sock", &target, &o, err, sizeof(err));
        cr_assert(fd >= 0, "%s", err);
        cr_assert_eq(geteuid(), 0, "this thread's ids were not restored");
        cr_assert_eq(write(fd, "hello", 5), 5);
        close(fd);
        cr_assert_str_eq(server_report(&s), "c5");
        char p[600];
        snprintf(p, sizeof(p), "%s/sock", dir);
        unlink(p);
    }
    close(dfd);
    pp_test_rmtree(dir);
}

/* Root's own listener in this process; a symlink to it is not a socket (O_NOFOLLOW), and the
 * in-root variant reaches it through the target's root. */
Test(peersock, symlink_refused_and_in_root)
{
    char *dir = pp_test_mkdtemp(), p[600], q[600];
    snprintf(p, sizeof(p), "%s/sock", dir);
    int l = listen_on(p);
    cr_assert(l >= 0);
    snprintf(q, sizeof(q), "%s/link", dir);
    cr_assert(symlink(p, q) == 0);
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    pp_peer me = {.pid = getpid(), .euid = geteuid(), .egid = getegid()};
    pp_peersock_opts o = {.deadline = deadline_in(2), .what = "link"};
    char err[512] = "";
    cr_assert_eq(pp_peersock_connect_at(dfd, "link", &me, &o, err, sizeof(err)), -1);
    cr_assert(strstr(err, "link is not a socket"), "%s", err);
    int fd = pp_peersock_connect_in_root(p, &me, &o, err, sizeof(err));
    cr_assert(fd >= 0, "%s", err);
    close(fd);
    close(dfd);
    close(l);
    pp_test_rmtree(dir);
}
