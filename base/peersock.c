/* Unix sockets of profiled processes, with owner and peer checks: see peersock.h. */
#include "base/child.h"
#include "base/peersock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/inroot.h"
#include "base/log.h"
#include "base/procfiles.h"

int pp_peer_from_pid(int pid, pp_peer *peer)
{
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    const char *uid = NULL, *gid = NULL;
    if (pp_read_small_file(path, text, sizeof(text)) > 0) {
        uid = pp_status_field(text, "Uid");
        gid = pp_status_field(text, "Gid");
    }
    unsigned long r, e, rg, eg;
    if (!uid || !gid || sscanf(uid, "%lu %lu", &r, &e) != 2 ||
        sscanf(gid, "%lu %lu", &rg, &eg) != 2) {
        errno = ESRCH;
        return -1;
    }
    *peer = (pp_peer){.pid = pid, .euid = (uid_t)e, .egid = (gid_t)eg};
    return 0;
}

int pp_peersock_check_file(int fd, const pp_peer *peer, const char *what, char *err, size_t errlen)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        snprintf(err, errlen, "cannot check %s: %s", what, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(sb.st_mode)) {
        snprintf(err, errlen, "%s is not a socket: not connecting", what);
    } else if (sb.st_uid != peer->euid) {
        snprintf(err, errlen,
                 "%s is owned by uid %u, not by the process's user (uid %u): not connecting "
                 "(another user may have put it there: remove it if it is not the process's)",
                 what, (unsigned)sb.st_uid, (unsigned)peer->euid);
    } else {
        return 0;
    }
    errno = EPERM;
    return -1;
}

int pp_peersock_check_peer(int sock, const pp_peer *peer, const char *what, char *err,
                           size_t errlen)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || len != sizeof(cr)) {
        snprintf(err, errlen, "cannot read the credentials of %s's listener: %s", what,
                 strerror(errno));
        errno = EPERM;
        return -1;
    }
    /* pid 0: the listener is in a pid namespace not visible from polyprof's; only its uid can
     * be compared then */
    if (cr.pid > 0 && cr.pid != peer->pid)
        snprintf(err, errlen,
                 "%s is served by process %d (uid %u), not by process %d: not connecting "
                 "(another process may have put it there: remove it if it is not the process's)",
                 what, (int)cr.pid, (unsigned)cr.uid, peer->pid);
    else if (cr.pid <= 0 && cr.uid != peer->euid)
        snprintf(err, errlen,
                 "%s is served by uid %u (a process polyprof cannot see), not by the process's "
                 "user (uid %u): not connecting",
                 what, (unsigned)cr.uid, (unsigned)peer->euid);
    else
        return 0;
    errno = EPERM;
    return -1;
}

/* Sleeps ms, or less when a cancel descriptor becomes readable: then false. */
static bool nap(long ms, const pp_peersock_opts *o)
{
    struct pollfd p[4];
    int n = 0;
    for (int i = 0; i < o->ncancel && n < 4; i++)
        if (o->cancel_fds[i] >= 0)
            p[n++] = (struct pollfd){.fd = o->cancel_fds[i], .events = POLLIN};
    double until = pp_mono_now() + (double)ms / 1000;
    for (;;) {
        double left = until - pp_mono_now();
        if (left <= 0)
            return true;
        int r = poll(p, (nfds_t)n, (int)(left * 1000) + 1);
        for (int i = 0; r > 0 && i < n; i++)
            if (p[i].revents)
                return false;
    }
}

/* Connects a new non-blocking socket to path, retrying a full backlog (EAGAIN) until the
 * deadline. */
static int connect_path(const char *path, const pp_peersock_opts *o)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    for (long ms = 5;; ms *= 2) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
        if (errno != EAGAIN && errno != EINTR)
            break;
        if (pp_mono_now() + (double)ms / 1000 > o->deadline) {
            errno = ETIMEDOUT;
            break;
        }
        if (!nap(ms, o)) {
            errno = ECANCELED;
            break;
        }
    }
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* connect_path with this thread's effective ids switched to uid/gid (raw per-thread syscalls:
 * glibc's seteuid would change every thread of polyprof), restored right after: the kernel
 * records the connecting side's ids at connect time. */
static int connect_path_as(const char *path, const pp_peersock_opts *o, uid_t uid, gid_t gid)
{
    uid_t euid = geteuid();
    gid_t egid = getegid();
    if (syscall(SYS_setresgid, -1, gid, -1) < 0)
        return -1;
    if (syscall(SYS_setresuid, -1, uid, -1) < 0) {
        int e = errno;
        if (syscall(SYS_setresgid, -1, egid, -1) < 0)
            abort();
        errno = e;
        return -1;
    }
    int fd = connect_path(path, o);
    int e = errno;
    /* Restoring cannot fail (the real and saved ids are unchanged); if it did, this thread
     * would run on with another user's ids: stop rather than continue that way. */
    if (syscall(SYS_setresuid, -1, euid, -1) < 0 || syscall(SYS_setresgid, -1, egid, -1) < 0) {
        pp_critical("cannot restore this thread's ids: %s", strerror(errno));
        abort();
    }
    errno = e;
    return fd;
}

int pp_peersock_connect_fd(int fd, const pp_peer *peer, const pp_peersock_opts *o, char *err,
                           size_t errlen)
{
    const char *what = o->what ? o->what : "the socket";
    if (pp_peersock_check_file(fd, peer, what, err, errlen) < 0)
        return -1;
    char path[PP_FD_PATH_LEN]; /* the socket file held open: short, fits any sun_path */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    int s = o->as_peer ? connect_path_as(path, o, peer->euid, peer->egid) : connect_path(path, o);
    if (s < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot connect to %s: %s", what,
                 e == ETIMEDOUT   ? "no answer in time"
                 : e == ECANCELED ? "cancelled"
                                  : strerror(e));
        errno = e;
        return -1;
    }
    if (pp_peersock_check_peer(s, peer, what, err, errlen) < 0) {
        close(s);
        errno = EPERM;
        return -1;
    }
    return s;
}

/* pp_peersock_connect_fd on the file fd held (-1: opening what failed), which it closes. */
static int connect_held(int fd, const char *what, const pp_peer *peer, const pp_peersock_opts *o,
                        char *err, size_t errlen)
{
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", o->what ? o->what : what, strerror(e));
        errno = e;
        return -1;
    }
    int s = pp_peersock_connect_fd(fd, peer, o, err, errlen);
    int e = errno;
    close(fd);
    errno = e;
    return s;
}

int pp_peersock_connect_at(int dirfd, const char *name, const pp_peer *peer,
                           const pp_peersock_opts *o, char *err, size_t errlen)
{
    return connect_held(openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), name, peer, o, err,
                        errlen);
}

int pp_peersock_connect_in_root(const char *path, const pp_peer *peer, const pp_peersock_opts *o,
                                char *err, size_t errlen)
{
    return connect_held(pp_open_in_proc_root(peer->pid, path, O_PATH), path, peer, o, err, errlen);
}
