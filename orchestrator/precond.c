#include "orchestrator/precond.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/log.h"
#include "base/safefile.h"
#include "base/inroot.h"

int pp_check_root(const pp_config *cfg)
{
    bool root = geteuid() == 0;
    if (root && cfg->rootless) { /* gProfiler's text */
        fprintf(stderr, "Conflict, running with --rootless and as root, rerun with --rootless or "
                        "as root (but not both).\n");
        return -1;
    }
    if (!root && !cfg->rootless) {
        fprintf(stderr, "Not running as root, rerun with --rootless or as root.\n");
        return -1;
    }
    return 0;
}

int pp_check_pidns(const pp_config *cfg)
{
    if (cfg->disable_pidns_check)
        return 0;
    char comm[32] = "";
    FILE *f = fopen("/proc/2/comm", "re");
    if (f) {
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = '\0';
        fclose(f);
    }
    if (strncmp(comm, "kthreadd", 8) != 0) {
        fprintf(stderr, "Please run me in the init PID namespace! In Docker, make sure you pass "
                        "'--pid=host'. In Kubernetes, add 'hostPID: true' in the Pod spec.\n"
                        "You can disable this check with --disable-pidns-check.\n");
        return -1;
    }
    return 0;
}

struct lock_job {
    const char *name;
    int fd;
    int err;
    bool init_ns; /* bound in PID 1's network namespace */
};

/* Runs in its own thread so that entering PID 1's network namespace affects only it. */
static void *lock_thread(void *arg)
{
    struct lock_job *j = arg;
    int ns = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        pp_debug("cannot open PID 1's network namespace for the lock: %s", strerror(errno));
    else if (setns(ns, CLONE_NEWNET) < 0)
        pp_debug("cannot enter PID 1's network namespace for the lock: %s", strerror(errno));
    else
        j->init_ns = true;
    if (ns >= 0)
        close(ns);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        j->err = errno;
        return NULL;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(j->name);
    if (n > sizeof(a.sun_path) - 1)
        n = sizeof(a.sun_path) - 1;
    memcpy(a.sun_path + 1, j->name, n);
    if (bind(fd, (struct sockaddr *)&a,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
        j->err = errno;
        close(fd);
        return NULL;
    }
    j->fd = fd;
    return NULL;
}

/* The lock file: held open (and flocked) for the life of the process. */
static int lock_file_fd = -1;

/* Opens "<root>/run/<file>" for the lock: /run must be a root-owned directory that only its
 * owner can write (so nobody else can plant the name), the lock file is never reached through a
 * symlink and must be a regular file owned by root. rootfd: a process's root (O_PATH), or -1 for
 * polyprof's own. Returns the descriptor, or -1 with errno (where is set for messages). */
static int open_lock_file(int rootfd, const char *file)
{
    int dfd = rootfd >= 0 ? pp_openat_in_root(rootfd, "/run", O_PATH | O_DIRECTORY)
                          : open("/run", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (dfd < 0)
        return -1;
    if (fstat(dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
        close(dfd);
        errno = EPERM;
        return -1;
    }
    int fd = openat(dfd, file, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    int e = errno;
    close(dfd);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* True when the abstract socket "@name" is bound in the network namespace whose /proc/net/unix
 * is at path (a read, never a bind: a bind would take the other program's lock for a moment). */
static bool abstract_bound(const char *path, const char *name)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    size_t nl = strlen(name);
    while (!found && fgets(line, sizeof(line), f)) {
        char *at = strchr(line, '@');
        if (at && strncmp(at + 1, name, nl) == 0 && (at[1 + nl] == '\n' || at[1 + nl] == '\0'))
            found = true;
    }
    fclose(f);
    return found;
}

bool pp_gprofiler_running(void)
{
    return abstract_bound("/proc/1/net/unix", "gprofiler_lock") ||
           abstract_bound("/proc/self/net/unix", "gprofiler_lock");
}

int pp_grab_lock(const char *name, const char *file)
{
    struct lock_job j = {name, -1, 0, false};
    pthread_t t;
    if (pthread_create(&t, NULL, lock_thread, &j) != 0) {
        j.err = errno;
    } else {
        pthread_join(t, NULL);
    }
    if (j.fd < 0) {
        if (j.err == EADDRINUSE)
            fprintf(stderr,
                    "Could not acquire polyprof's lock. Is it already running? Try 'sudo ss "
                    "-xp | grep %s' to see which process holds the lock.\n",
                    name);
        else
            fprintf(stderr,
                    "Could not acquire polyprof's lock due to an error (%s). Are you running "
                    "polyprof in privileged mode?\n",
                    strerror(j.err));
        return -1;
    }
    if (geteuid() != 0)
        return 0; /* --rootless: the socket only, as gProfiler */
    /* The socket alone is not host-wide where PID 1's network namespace cannot be entered: an
     * flock on /run/<file> of the host's root (through /proc/1/root, which a --pid=host
     * container sees too), else of polyprof's own root. */
    bool host_root = true;
    int rootfd = open("/proc/1/root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd = rootfd >= 0 ? open_lock_file(rootfd, file) : -1;
    if (rootfd >= 0)
        close(rootfd);
    if (fd < 0) {
        pp_debug("cannot open the lock file in PID 1's root: %s", strerror(errno));
        host_root = false;
        fd = open_lock_file(-1, file);
    }
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK) {
            fprintf(stderr,
                    "Could not acquire polyprof's lock: another polyprof holds /run/%s (it may "
                    "run in another network namespace or container). Stop it first; 'sudo "
                    "fuser -v /run/%s' shows which process holds it.\n",
                    file, file);
            close(j.fd);
            return -1;
        }
        fd = -1;
        errno = e;
    }
    if (fd < 0)
        pp_warn("cannot lock /run/%s (%s): only the abstract socket prevents a second "
                "polyprof%s",
                file, strerror(errno), j.init_ns ? "" : ", and only in this network namespace");
    else if (!j.init_ns && !host_root)
        pp_warn("single-instance lock: PID 1's network namespace and root directory are not "
                "reachable, so the lock covers only polyprof instances that share this /run; "
                "run polyprof on the host or in a privileged container with --pid=host");
    lock_file_fd = fd;
    return 0;
}

/* The pid file written by pp_process_setup, to remove it only if it is still ours. */
static dev_t pid_file_dev;
static ino_t pid_file_ino;
static bool pid_file_written;

/* Opens the directory of path (its last component in *base). */
static int open_parent(const char *path, char *dir, size_t dirlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, dirlen, ".");
    else if (slash == path)
        snprintf(dir, dirlen, "/");
    else
        snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
    return **base ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
}

void pp_process_setup(const pp_config *cfg)
{
    umask(022);
    if (!cfg->dont_disable_core_files) {
        struct rlimit r = {0, 0};
        setrlimit(RLIMIT_CORE, &r);
    }
    if (cfg->pid_file && *cfg->pid_file) {
        /* A new file renamed over the name: a link or file planted there is replaced, never
         * written through or truncated. */
        char dir[4096], text[32];
        const char *base;
        int dfd = open_parent(cfg->pid_file, dir, sizeof(dir), &base);
        int n = snprintf(text, sizeof(text), "%d", (int)getpid());
        struct stat st;
        if (dfd < 0 || pp_replace_file_at(dfd, base, text, (size_t)n, 0644) < 0 ||
            fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            pp_debug("cannot write pid file %s: %s", cfg->pid_file, strerror(errno));
        } else {
            pid_file_dev = st.st_dev;
            pid_file_ino = st.st_ino;
            pid_file_written = true;
        }
        if (dfd >= 0)
            close(dfd);
    }
}

void pp_remove_pid_file(const pp_config *cfg)
{
    if (!pid_file_written || !cfg->pid_file)
        return;
    char dir[4096];
    const char *base;
    int dfd = open_parent(cfg->pid_file, dir, sizeof(dir), &base);
    struct stat st;
    if (dfd >= 0 && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_dev == pid_file_dev && st.st_ino == pid_file_ino)
        unlinkat(dfd, base, 0);
    if (dfd >= 0)
        close(dfd);
    pid_file_written = false;
}
