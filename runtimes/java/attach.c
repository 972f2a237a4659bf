/* HotSpot dynamic attach client: see attach.h. */
#include "runtimes/java/attach.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/child.h"
#include "base/fdio.h"
#include "base/inroot.h"
#include "base/log.h"
#include "base/peersock.h"
#include "base/procfiles.h"

#define MAX_ARG 4096

/* The calling thread's cancel descriptor (pp_jattach_set_cancel_fd), -1 for none, and the
 * process-wide one (pp_jattach_cancel_all; an eventfd made on first use, -1 if none could be). */
static __thread int cancel_fd = -1;
static int cancel_all_fd = -1;
static pthread_once_t cancel_all_once = PTHREAD_ONCE_INIT;

static void make_cancel_all(void)
{
    cancel_all_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void pp_jattach_set_cancel_fd(int fd)
{
    cancel_fd = fd;
}

void pp_jattach_cancel_all(void)
{
    pthread_once(&cancel_all_once, make_cancel_all);
    uint64_t one = 1;
    if (cancel_all_fd >= 0 && write(cancel_all_fd, &one, sizeof(one)) < 0)
        pp_debug("attach: cannot cancel the requests in flight: %s", strerror(errno));
}

/* The thread's and the process-wide cancel descriptors, for base/fdio.h. */
static int cancel_fds(int out[2])
{
    pthread_once(&cancel_all_once, make_cancel_all);
    out[0] = cancel_fd;
    out[1] = cancel_all_fd;
    return 2;
}

/* Sleeps ms, or less when a cancel descriptor becomes readable: then false (errno ECANCELED). */
static bool sleep_ms(long ms)
{
    int cancel[2];
    int ncancel = cancel_fds(cancel);
    return pp_fdio_wait(-1, 0, pp_mono_now() + (double)ms / 1000, cancel, ncancel) < 0 &&
           errno == ETIMEDOUT;
}

int pp_jattach_parse_status(const char *text, pp_jattach_status *st)
{
    memset(st, 0, sizeof(*st));
    const char *ns = pp_status_field(text, "NSpid");
    const char *uid = pp_status_field(text, "Uid");
    const char *gid = pp_status_field(text, "Gid");
    const char *sig = pp_status_field(text, "SigCgt");
    const char *state = pp_status_field(text, "State");
    if (!ns || !uid || !gid || !sig)
        return -1;
    while (state && (*state == ' ' || *state == '\t'))
        state++;
    st->stopped = state && (*state == 'T' || *state == 't');
    int last = pp_status_nspid(text, NULL); /* the innermost namespace's pid */
    unsigned long ruid, euid, rgid, egid;
    if (last <= 0 || sscanf(uid, "%lu %lu", &ruid, &euid) != 2 ||
        sscanf(gid, "%lu %lu", &rgid, &egid) != 2)
        return -1;
    char *end;
    unsigned long long mask = strtoull(sig, &end, 16);
    if (end == sig)
        return -1;
    st->nspid = last;
    st->euid = (uid_t)euid;
    st->egid = (gid_t)egid;
    st->sigquit_caught = (mask >> (SIGQUIT - 1)) & 1;
    return 0;
}

size_t pp_jattach_encode(char *buf, size_t len, const char *cmd, const char *a1, const char *a2,
                         const char *a3)
{
    const char *parts[5] = {"1", cmd, a1 ? a1 : "", a2 ? a2 : "", a3 ? a3 : ""};
    size_t off = 0;
    for (int i = 0; i < 5; i++) {
        if (!parts[i])
            return 0;
        size_t n = strlen(parts[i]);
        if (n > MAX_ARG || off + n + 1 > len)
            return 0;
        memcpy(buf + off, parts[i], n);
        off += n;
        buf[off++] = '\0';
    }
    return off;
}

int pp_jattach_parse_reply(const char *buf, size_t len, int *code, const char **body)
{
    const char *nl = memchr(buf, '\n', len);
    size_t digits = nl ? (size_t)(nl - buf) : len;
    if (digits == 0 || digits > 11)
        return -1;
    char tmp[16];
    memcpy(tmp, buf, digits);
    tmp[digits] = '\0';
    char *end;
    long v = strtol(tmp, &end, 10);
    if (*end != '\0' || end == tmp || v < -100000 || v > 100000)
        return -1;
    *code = (int)v;
    *body = nl ? nl + 1 : buf + len;
    return 0;
}

static bool process_alive(int pid)
{
    return !pp_pid_gone(pid);
}

/* The JVM's socket /tmp/.java_pid<nspid>, resolved inside its root (a container's symlinks
 * cannot lead to a host socket), as an O_PATH descriptor of the socket file itself: connect()
 * goes through "/proc/self/fd/<fd>", which names that very file. -1 when there is no socket, or
 * when it is the file stale (not the JVM's: nobody listens on it, or another user made it)
 * describes. */
static int open_socket(int pid, int nspid, const struct stat *stale)
{
    char name[64];
    snprintf(name, sizeof(name), "/tmp/.java_pid%d", nspid);
    int fd = pp_open_in_proc_root(pid, name, O_PATH);
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISSOCK(sb.st_mode) ||
                    (stale && sb.st_ino == stale->st_ino && sb.st_dev == stale->st_dev))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* True when the JVM's command line disables the attach listener (SIGQUIT would only print a
 * thread dump to its stdout). */
static bool attach_disabled(int pid)
{
    char path[64], buf[65536];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    ssize_t n = pp_read_small_file(path, buf, sizeof(buf));
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
        if (strcmp(buf + i, "-XX:+DisableAttachMechanism") == 0)
            return true;
    return false;
}

/* Creates the trigger file, owned by the JVM's user (HotSpot trusts a trigger owned by its own
 * euid, as seen in its user namespace, or by root; JDK 8 only the former), never truncating or
 * following an existing file; returns its path in out, or -1. */
static int create_trigger(int pid, const pp_jattach_status *st, char *name, size_t len, int *dirfd)
{
    /* Held as a descriptor: the trigger is removed even when the JVM exits meanwhile (its
     * /proc/<pid>/cwd is then gone). */
    const char *dirs[2] = {"/proc/%d/cwd", "/proc/%d/root/tmp"};
    snprintf(name, len, ".attach_pid%d", st->nspid);
    for (int i = 0; i < 2; i++) {
        char dir[64];
        snprintf(dir, sizeof(dir), dirs[i], pid);
        /* the cwd link is the kernel's; /tmp is resolved inside the JVM's root */
        int dfd = i == 0 ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)
                         : pp_open_in_proc_root(pid, "/tmp", O_PATH | O_DIRECTORY);
        if (dfd < 0)
            continue;
        int flags = O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC;
        int fd = openat(dfd, name, flags, 0660);
        if (fd < 0 && errno == EEXIST && unlinkat(dfd, name, 0) == 0)
            fd = openat(dfd, name, flags, 0660);
        if (fd < 0) {
            close(dfd);
            continue;
        }
        if (st->euid != geteuid() && fchown(fd, st->euid, st->egid) < 0)
            pp_debug("attach: cannot give %s/%s to uid %u: %s", dir, name, (unsigned)st->euid,
                     strerror(errno));
        struct stat sb;
        bool trusted = fstat(fd, &sb) == 0 && (sb.st_uid == st->euid || sb.st_uid == geteuid());
        close(fd);
        if (trusted) {
            *dirfd = dfd;
            return 0;
        }
        unlinkat(dfd, name, 0);
        close(dfd);
    }
    return -1;
}

/* Makes the JVM start its attach listener; its socket (open_socket) once it exists (HotSpot
 * renames its new socket over a stale one), else -1 with err and errno ETIMEDOUT (no socket in
 * time), ECANCELED or EPERM (any other reason). */
static int start_listener(int pid, const pp_jattach_status *st, const struct stat *stale,
                          double deadline, char *err, size_t errlen)
{
    if (!st->sigquit_caught) {
        snprintf(err, errlen,
                 "JVM %d has no SIGQUIT handler (starting up, or run with -Xrs): not attaching",
                 pid);
        return -1;
    }
    if (attach_disabled(pid)) {
        snprintf(err, errlen, "JVM %d runs with -XX:+DisableAttachMechanism", pid);
        return -1;
    }
    char trigger[128];
    int tdir = -1;
    if (create_trigger(pid, st, trigger, sizeof(trigger), &tdir) < 0) {
        snprintf(err, errlen, "cannot create the attach trigger file of JVM %d: %s", pid,
                 strerror(errno));
        return -1;
    }
    int rc = -1, e = 0;
    if (kill(pid, SIGQUIT) < 0) {
        snprintf(err, errlen, "cannot signal JVM %d: %s", pid, strerror(errno));
    } else {
        double stop = pp_mono_now() + 6.0;
        if (stop > deadline)
            stop = deadline;
        for (long ms = 20;; ms += 20) {
            if ((rc = open_socket(pid, st->nspid, stale)) >= 0)
                break;
            if (!process_alive(pid)) {
                snprintf(err, errlen, "JVM %d exited while starting its attach listener", pid);
                break;
            }
            double left = stop - pp_mono_now();
            if (left <= 0) {
                e = ETIMEDOUT;
                snprintf(err, errlen,
                         stale ? "JVM %d did not start its attach listener (/tmp/.java_pid%d is "
                                 "still a socket that is not the JVM's, which polyprof could not "
                                 "remove)"
                               : "JVM %d did not start its attach listener (no /tmp/.java_pid%d "
                                 "after SIGQUIT)",
                         pid, st->nspid);
                break;
            }
            if (!sleep_ms(ms < left * 1000 ? ms : (long)(left * 1000) + 1)) {
                e = ECANCELED;
                snprintf(err, errlen, "attach to JVM %d cancelled (the session is ending)", pid);
                break;
            }
        }
    }
    unlinkat(tdir, trigger, 0);
    close(tdir);
    errno = rc < 0 ? (e ? e : EPERM) : 0;
    return rc;
}

/* The JVMs whose attach listener a thread is starting: one at a time per JVM. A second SIGQUIT
 * reaching a JVM whose listener has just started makes it print a thread dump on its stdout, and
 * identity, perf maps and the JFR start all attach to a new JVM at once. Bounded: beyond
 * MAX_STARTING JVMs at once a thread starts the listener without registering. */
#define MAX_STARTING 64
static pthread_mutex_t starting_lock = PTHREAD_MUTEX_INITIALIZER;
static int starting[MAX_STARTING]; /* 0: free */

/* Takes the slot of pid (true), or finds it taken (false, *busy set) or none free. */
static bool starting_take(int pid, bool *busy)
{
    pthread_mutex_lock(&starting_lock);
    int free_slot = -1;
    *busy = false;
    for (int i = 0; i < MAX_STARTING && !*busy; i++) {
        *busy = starting[i] == pid;
        if (!starting[i] && free_slot < 0)
            free_slot = i;
    }
    if (!*busy && free_slot >= 0)
        starting[free_slot] = pid;
    pthread_mutex_unlock(&starting_lock);
    return !*busy && free_slot >= 0;
}

static void starting_release(int pid)
{
    pthread_mutex_lock(&starting_lock);
    for (int i = 0; i < MAX_STARTING; i++)
        if (starting[i] == pid)
            starting[i] = 0;
    pthread_mutex_unlock(&starting_lock);
}

/* Removes the JVM's socket path while it is still the file stale describes (a socket nobody
 * listens on, or one another user made): HotSpot restarts a running listener on SIGQUIT only when
 * the path is missing, and otherwise prints a thread dump on the JVM's stdout. True when the stale
 * file is no longer at the path (removed here, or already replaced or removed). */
static bool remove_stale(int pid, int nspid, const struct stat *stale)
{
    int dfd = pp_open_in_proc_root(pid, "/tmp", O_PATH | O_DIRECTORY);
    if (dfd < 0)
        return false;
    char name[32];
    snprintf(name, sizeof(name), ".java_pid%d", nspid);
    struct stat sb;
    bool gone;
    if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        gone = errno == ENOENT;
    else if (sb.st_ino != stale->st_ino || sb.st_dev != stale->st_dev)
        gone = true; /* replaced meanwhile: by the JVM, or another thread removed it */
    else
        gone = unlinkat(dfd, name, 0) == 0 || errno == ENOENT;
    if (!gone)
        pp_debug("attach: cannot remove the stale /tmp/.java_pid%d of JVM %d: %s", nspid, pid,
                 strerror(errno));
    close(dfd);
    return gone;
}

/* start_listener, unless another thread is starting pid's listener: then waits for that one
 * (until the deadline) and uses the socket it made. With stale (the file at the socket's path
 * refuses connections), that file is removed first if it is still there. */
static int start_listener_once(int pid, const pp_jattach_status *st, const struct stat *stale,
                               double deadline, char *err, size_t errlen)
{
    for (;;) {
        bool busy;
        bool mine = starting_take(pid, &busy);
        if (!busy) {
            int fd = open_socket(pid, st->nspid, stale); /* made by the thread before */
            if (fd < 0 && stale && remove_stale(pid, st->nspid, stale))
                stale = NULL; /* any socket at the path now is new (its inode may be reused) */
            if (fd < 0)
                fd = start_listener(pid, st, stale, deadline, err, errlen);
            int e = errno;
            if (mine)
                starting_release(pid);
            errno = fd < 0 ? e : 0;
            return fd;
        }
        double left = deadline - pp_mono_now();
        if (left <= 0 || !sleep_ms(left < 0.02 ? (long)(left * 1000) + 1 : 20)) {
            int e = left <= 0 ? ETIMEDOUT : ECANCELED;
            if (e == ETIMEDOUT)
                snprintf(err, errlen, "JVM %d did not start its attach listener in time", pid);
            else
                snprintf(err, errlen, "attach to JVM %d cancelled (the session is ending)", pid);
            errno = e;
            return -1;
        }
    }
}

/* Reads until EOF; *buf malloc'd and NUL-terminated. */
static ssize_t recv_all(int fd, char **buf, double deadline)
{
    int cancel[2];
    int ncancel = cancel_fds(cancel);
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    if (!b)
        return -1;
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= PP_JATTACH_MAX_REPLY) {
                free(b);
                errno = EFBIG;
                return -1;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return -1;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = pp_fdio_recv_some(fd, b + len, cap - 1 - len, deadline, cancel, ncancel);
        if (r < 0) {
            free(b);
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    b[len] = '\0';
    *buf = b;
    return (ssize_t)len;
}

/* Connects (as root, or as the JVM's user when as_jvm is set) to the socket file held open as
 * sockfd, once it is owned by the JVM's user and served by the JVM itself (base/peersock.h:
 * otherwise nothing is sent, errno EPERM and err says why), sends req and reads the reply until
 * EOF. Returns its length with *reply malloc'd, or -1 with errno. */
static ssize_t exchange(int pid, int sockfd, const pp_jattach_status *st, const char *req,
                        size_t reqlen, double deadline, bool as_jvm, char **reply, char *err,
                        size_t errlen)
{
    int cancel[2];
    int ncancel = cancel_fds(cancel);
    char what[96];
    snprintf(what, sizeof(what), "/tmp/.java_pid%d of JVM %d", st->nspid, pid);
    pp_peer peer = {.pid = pid, .euid = st->euid, .egid = st->egid};
    pp_peersock_opts o = {.deadline = deadline,
                          .cancel_fds = cancel,
                          .ncancel = ncancel,
                          .as_peer = as_jvm,
                          .what = what};
    int fd = pp_peersock_connect_fd(sockfd, &peer, &o, err, errlen);
    if (fd < 0)
        return -1;
    ssize_t n = -1;
    if (pp_fdio_send_all(fd, req, reqlen, deadline, cancel, ncancel) == 0)
        n = recv_all(fd, reply, deadline);
    int e = errno;
    close(fd);
    errno = e;
    return n;
}

int pp_jattach_cmd(int pid, const char *cmd, const char *a1, const char *a2, const char *a3,
                   double timeout_s, char **out, char *err, size_t errlen)
{
    *out = NULL;
    if (errlen)
        err[0] = '\0';
    double deadline = pp_mono_now() + timeout_s;
    char path[128], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    pp_jattach_status st;
    if (pp_read_small_file(path, text, sizeof(text)) <= 0 ||
        pp_jattach_parse_status(text, &st) < 0) {
        snprintf(err, errlen, "process %d is gone", pid);
        errno = ESRCH;
        return -1;
    }
    if (st.stopped) {
        snprintf(err, errlen, "JVM %d is stopped (SIGSTOP or a debugger): it cannot answer", pid);
        errno = EAGAIN;
        return -1;
    }
    char req[3 * MAX_ARG + 64];
    size_t reqlen = pp_jattach_encode(req, sizeof(req), cmd, a1, a2, a3);
    if (reqlen == 0) {
        snprintf(err, errlen, "attach command too long");
        errno = E2BIG;
        return -1;
    }
    int sock = open_socket(pid, st.nspid, NULL);
    struct stat stale;
    if (sock >= 0 && fstat(sock, &stale) == 0 && stale.st_uid != st.euid) {
        /* Not the JVM's socket: another user made it (bound before the JVM's listener started,
         * to be asked in its place). Nothing is sent to it: it is removed (root may, in a sticky
         * /tmp) and the JVM's own listener started, whose socket HotSpot renames over the path
         * anyway; a planted name never denies the attach. */
        pp_debug("attach: /tmp/.java_pid%d of JVM %d is owned by uid %u, not by the JVM's user "
                 "(uid %u): removing it and starting the JVM's attach listener",
                 st.nspid, pid, (unsigned)stale.st_uid, (unsigned)st.euid);
        close(sock);
        sock = start_listener_once(pid, &st, &stale, deadline, err, errlen);
        if (sock < 0)
            return -1;
    }
    if (sock < 0 && (sock = start_listener_once(pid, &st, NULL, deadline, err, errlen)) < 0)
        return -1; /* errno set by start_listener */
    char *reply = NULL;
    ssize_t n = exchange(pid, sock, &st, req, reqlen, deadline, false, &reply, err, errlen);
    int e0 = errno;
    if (n < 0 && e0 == ECONNREFUSED && fstat(sock, &stale) == 0) {
        /* Nobody listens on the socket: not this JVM's (HotSpot removes a stale one when it
         * starts; another process made this one since, or a /tmp shared by two pid namespaces
         * holds another JVM's). Remove it and start (or restart) this JVM's listener. */
        pp_debug("attach: /tmp/.java_pid%d of JVM %d refuses connections (not this JVM's): "
                 "starting the JVM's attach listener",
                 st.nspid, pid);
        close(sock);
        if ((sock = start_listener_once(pid, &st, &stale, deadline, err, errlen)) < 0)
            return -1;
        n = exchange(pid, sock, &st, req, reqlen, deadline, false, &reply, err, errlen);
    } else {
        errno = e0; /* not fstat's */
    }
    bool refused = n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE));
    if (refused && st.euid != geteuid()) {
        /* Closed without an answer: the JVM refused root as peer (JDK 8, or a JVM in a user
         * namespace that does not map polyprof's root). Again as the JVM's own user. */
        free(reply);
        reply = NULL;
        n = exchange(pid, sock, &st, req, reqlen, deadline, true, &reply, err, errlen);
    }
    close(sock);
    if (n < 0 && errno == EPERM) {
        /* not the JVM's socket, or not served by the JVM (pp_peersock_connect_fd): nothing
         * was sent, err says why */
        pp_debug("attach: %s", err);
        return -1;
    }
    if (n < 0) {
        int e = errno;
        snprintf(err, errlen, "attach to JVM %d failed: %s", pid,
                 e == ETIMEDOUT   ? "no answer in time"
                 : e == ECANCELED ? "cancelled (the session is ending)"
                                  : strerror(e));
        errno = e;
        return -1;
    }
    int code;
    const char *body;
    if (pp_jattach_parse_reply(reply, (size_t)n, &code, &body) < 0) {
        snprintf(err, errlen, "JVM %d gave no attach result (%s)", pid,
                 n == 0 ? "connection closed: peer credentials refused?" : "malformed reply");
        free(reply);
        errno = EPROTO;
        return -1;
    }
    memmove(reply, body, (size_t)n - (size_t)(body - reply) + 1);
    *out = reply;
    return code < 0 ? 1 : code;
}

int pp_jattach_jcmd(int pid, const char *cmdline, double timeout_s, char **out, char *err,
                    size_t errlen)
{
    return pp_jattach_cmd(pid, "jcmd", cmdline, NULL, NULL, timeout_s, out, err, errlen);
}
