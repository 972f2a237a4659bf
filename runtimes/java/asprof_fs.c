/* Files async-profiler needs in the target's mount namespace: the library (present only while
 * the JVM loads it) and the session's output and log directory, both under the target directory
 * (/tmp/polyprof-<random>, root-owned). Paths are walked from
 * /proc/<pid>/root one component at a time with O_NOFOLLOW, so a symlink planted in a container
 * can never redirect polyprof (root) to a host path. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtimes/java/asprof_int.h"
#include "base/procfiles.h"

int pp_asprof_open_dir(int pid, const char *path, bool require_root, bool create, char *err,
                       size_t errlen)
{
    char root[64], rel[4096] = "";
    snprintf(root, sizeof(root), "/proc/%d/root", pid);
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", root, strerror(errno));
        return -1;
    }
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", path);
    char *save = NULL;
    for (char *comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
        if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
            snprintf(err, errlen, "bad directory %s", path);
            close(fd);
            return -1;
        }
        size_t rl = strlen(rel);
        snprintf(rel + rl, sizeof(rel) - rl, "/%s", comp);
        int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && create) {
            mkdirat(fd, comp, 0755);
            nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (nfd >= 0)
                fchmod(nfd, 0755); /* whatever the umask */
        }
        int e = errno;
        close(fd);
        if (nfd < 0) {
            snprintf(err, errlen, "cannot open %s in pid %d's mount namespace: %s", rel, pid,
                     e == ELOOP || e == ENOTDIR ? "a symlink or not a directory" : strerror(e));
            return -1;
        }
        struct stat st;
        if (fstat(nfd, &st) < 0 || (require_root && st.st_uid != 0)) {
            snprintf(err, errlen, "%s in pid %d's mount namespace is not owned by root", rel, pid);
            close(nfd);
            return -1;
        }
        fd = nfd;
    }
    return fd;
}

void pp_asprof_rmdirs(int pid, const char *path, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(path, base, bl) != 0 || (path[bl] != '/' && path[bl] != '\0'))
        return;
    char dir[4096], err[256];
    snprintf(dir, sizeof(dir), "%s", path);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            return;
        *slash = '\0';
        int fd = pp_asprof_open_dir(pid, dir, false, false, err, sizeof(err));
        int rc = fd >= 0 ? unlinkat(fd, slash + 1, AT_REMOVEDIR) : -1;
        if (fd >= 0)
            close(fd);
        if (rc < 0 || strlen(dir) < bl) /* not empty, or base removed */
            return;
    }
}

int pp_asprof_proc_ids(int pid, uid_t *uid, gid_t *gid)
{
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    if (pp_read_small_file(path, text, sizeof(text)) < 0)
        return -1;
    const char *u = strstr(text, "\nUid:"), *g = strstr(text, "\nGid:");
    unsigned long ru, eu, rg, eg;
    if (!u || !g || sscanf(u + 5, "%lu %lu", &ru, &eu) != 2 ||
        sscanf(g + 5, "%lu %lu", &rg, &eg) != 2)
        return -1;
    *uid = (uid_t)eu;
    *gid = (gid_t)eg;
    return 0;
}
