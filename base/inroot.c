/* Opening files inside a process's root (see inroot.h). */
#include "base/inroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_LINKS 40  /* as the kernel's own limit on symlinks in one resolution */
#define MAX_DEPTH 256 /* directories held open at once; deeper paths are refused */

static atomic_bool no_openat2; /* set once openat2 is known to be missing */

int pp_openat_in_root(int rootfd, const char *path, int flags)
{
    if (!atomic_load_explicit(&no_openat2, memory_order_relaxed)) {
        struct open_how how = {
            .flags = (uint64_t)(flags | O_CLOEXEC),
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        const char *rel = path;
        while (*rel == '/')
            rel++;
        int fd = -1;
        /* EAGAIN: a rename or mount elsewhere raced with a ".." in the path; tried again */
        for (int tries = 0; tries < 3; tries++) {
            fd = (int)syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof(how));
            if (fd >= 0 || errno != EAGAIN)
                break;
        }
        if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
            return fd;
        /* ENOSYS: no openat2 (kernel, or valgrind); EPERM: a seccomp filter, or a real
         * permission error that the walk reports again */
        if (errno == ENOSYS)
            atomic_store_explicit(&no_openat2, true, memory_order_relaxed);
    }
    return pp_openat_in_root_walk(rootfd, path, flags);
}

/* Replaces the first *len bytes of buf (the consumed part of the path) by target, keeping the
 * rest after a '/'; -1 when the result does not fit. */
static int splice_link(char *buf, size_t size, size_t consumed, const char *target, size_t tl)
{
    size_t rest = strlen(buf + consumed);
    if (tl + 1 + rest + 1 > size)
        return -1;
    memmove(buf + tl + 1, buf + consumed, rest + 1);
    memcpy(buf, target, tl);
    buf[tl] = '/';
    return 0;
}

int pp_openat_in_root_walk(int rootfd, const char *path, int flags)
{
    char work[2 * PATH_MAX], target[PATH_MAX];
    if (strlen(path) >= sizeof(work)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(work, path);
    int dirs[MAX_DEPTH]; /* dirs[0] is rootfd (not ours); the others are O_PATH directories */
    int depth = 0, links = 0, result = -1, err = 0;
    dirs[0] = rootfd;
    size_t pos = 0;
    for (;;) {
        while (work[pos] == '/')
            pos++;
        if (!work[pos]) { /* the path names a directory reached so far */
            result = openat(dirs[depth], ".", flags | O_CLOEXEC);
            err = errno;
            break;
        }
        char *comp = work + pos;
        size_t cl = strcspn(comp, "/");
        size_t next = pos + cl;
        bool last = true;
        for (size_t k = next; work[k]; k++)
            if (work[k] != '/') {
                last = false;
                break;
            }
        char saved = work[next];
        work[next] = '\0';
        if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
            if (comp[1] == '.' && depth > 0)
                close(dirs[depth--]); /* at the root, ".." stays there */
            work[next] = saved;
            pos = next;
            continue;
        }
        int fd = openat(dirs[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            err = errno;
            if (fd >= 0)
                close(fd);
            break;
        }
        if (S_ISLNK(st.st_mode) && last && (flags & O_NOFOLLOW)) {
            close(fd); /* the link itself (O_PATH), else ELOOP, as open(2) does */
            result = openat(dirs[depth], comp, flags | O_CLOEXEC);
            err = errno;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            ssize_t tl = readlinkat(fd, "", target, sizeof(target) - 1);
            err = errno;
            close(fd);
            if (tl <= 0)
                break;
            if (++links > MAX_LINKS) {
                err = ELOOP;
                break;
            }
            work[next] = saved;
            if (splice_link(work, sizeof(work), next, target, (size_t)tl) < 0) {
                err = ENAMETOOLONG;
                break;
            }
            if (target[0] == '/')
                while (depth > 0)
                    close(dirs[depth--]);
            pos = 0;
            continue;
        }
        if (last) {
            close(fd);
            /* O_NOFOLLOW: a component swapped for a symlink since it was looked at fails */
            result = openat(dirs[depth], comp, flags | O_NOFOLLOW | O_CLOEXEC);
            err = errno;
            break;
        }
        if (!S_ISDIR(st.st_mode) || depth + 1 >= MAX_DEPTH) {
            err = S_ISDIR(st.st_mode) ? ENAMETOOLONG : ENOTDIR;
            close(fd);
            break;
        }
        dirs[++depth] = fd;
        work[next] = saved;
        pos = next;
    }
    while (depth > 0)
        close(dirs[depth--]);
    if (result < 0)
        errno = err ? err : ENOENT;
    return result;
}

int pp_open_in_proc_root(int pid, const char *path, int flags)
{
    char root[64];
    snprintf(root, sizeof(root), "/proc/%d/root", pid);
    int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0)
        return -1;
    int fd = pp_openat_in_root(rfd, path, flags);
    int e = errno;
    close(rfd);
    errno = e;
    return fd;
}

int pp_open_in_proc_root_path(int pid, const char *path, char *out, size_t len)
{
    int fd = pp_open_in_proc_root(pid, path, O_PATH);
    if (fd < 0)
        return -1;
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) < 0)
        err = errno;
    else if (!S_ISREG(st.st_mode))
        err = EINVAL;
    else if ((size_t)snprintf(out, len, "/proc/self/fd/%d", fd) >= len)
        err = ENAMETOOLONG;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}
