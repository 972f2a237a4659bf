/* Connecting to a unix socket a profiled process listens on (a JVM's attach listener, a
 * runtime's diagnostics socket) so that nobody else can stand in for that process.
 *
 * Such sockets live in directories every user can write (/tmp), under names anyone can predict
 * (/tmp/.java_pid<pid>): a local user can bind the name before the process does and answer in
 * its place, receiving what polyprof sends (commands, file paths) and feeding it made-up
 * answers. So, before anything is sent:
 *  1. the socket file (held open, so that what is checked is what is connected to) must be a
 *     socket owned by the target's effective uid (what the JDK's attach client and jattach
 *     check);
 *  2. after connecting, the listener's credentials (SO_PEERCRED: the process that called
 *     listen()) must name the target's pid; when the kernel gives pid 0 (the listener is in a
 *     pid namespace polyprof does not see), its uid must be the target's effective uid.
 * Otherwise the connection is closed unused and the caller gets EPERM with a message naming the
 * owner or the process found. Everything is bounded by a deadline and can be cancelled. */
#ifndef PP_PEERSOCK_H
#define PP_PEERSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The process that must be at the other end. */
typedef struct pp_peer {
    int pid;    /* its thread-group id in polyprof's pid namespace */
    uid_t euid; /* its effective ids, as /proc/<pid>/status shows them */
    gid_t egid;
} pp_peer;

/* Fills peer from /proc/<pid>/status. 0, or -1 with errno ESRCH (gone or unreadable). */
int pp_peer_from_pid(int pid, pp_peer *peer);

typedef struct pp_peersock_opts {
    double deadline;       /* CLOCK_MONOTONIC seconds: a full backlog is retried until then */
    const int *cancel_fds; /* descriptors that, once readable, end the retries (ECANCELED) */
    int ncancel;           /* at most 4 */
    bool as_peer;          /* connect with this thread's effective ids switched to the peer's (raw
                            * per-thread syscalls, restored at once): for a listener that only accepts
                            * its own user */
    const char *what;      /* names the socket in messages, e.g. "/tmp/.java_pid12 of JVM 34" */
} pp_peersock_opts;

/* Check 1 on a descriptor of the socket file (O_PATH is enough). 0, or -1 with errno EPERM (not
 * a socket, or another owner) and a message in err. */
int pp_peersock_check_file(int fd, const pp_peer *peer, const char *what, char *err, size_t errlen);

/* Check 2 on a connected socket. 0, or -1 with errno EPERM and a message in err. */
int pp_peersock_check_peer(int sock, const pp_peer *peer, const char *what, char *err,
                           size_t errlen);

/* Connects to the socket file held open as fd (connect() goes through /proc/self/fd/<fd>, which
 * names that very file, so there is no path length limit nor a race with a rename) after
 * check 1, and returns the connected socket (SOCK_NONBLOCK, SOCK_CLOEXEC) after check 2. -1
 * with errno (EPERM: a check failed, the connection was closed unused; ETIMEDOUT, ECANCELED,
 * ECONNREFUSED…) and a message in err. */
int pp_peersock_connect_fd(int fd, const pp_peer *peer, const pp_peersock_opts *o, char *err,
                           size_t errlen);

/* pp_peersock_connect_fd of name opened in the directory dirfd (O_PATH|O_NOFOLLOW: a symlink is
 * not a socket). */
int pp_peersock_connect_at(int dirfd, const char *name, const pp_peer *peer,
                           const pp_peersock_opts *o, char *err, size_t errlen);

/* pp_peersock_connect_fd of path opened inside the target's root directory (/proc/<pid>/root,
 * symlinks resolved inside it: base/inroot.h). */
int pp_peersock_connect_in_root(const char *path, const pp_peer *peer, const pp_peersock_opts *o,
                                char *err, size_t errlen);

#endif
