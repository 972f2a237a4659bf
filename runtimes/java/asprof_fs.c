/* Files async-profiler needs in the target's mount namespace: the library (copied once, kept
 * across sessions like gProfiler does) and the session's output and log directory, both under
 * the target directory (/tmp/polyprof-<random>, root-owned). Paths are walked from
 * /proc/<pid>/root one component at a time with O_NOFOLLOW, so a symlink planted in a container
 * can never redirect polyprof (root) to a host path. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtimes/java/asprof_int.h"
#include "base/procfiles.h"

int pp_asprof_open_dir(int pid, const char *path, bool require_root, char created[][4096],
                       int *ncreated, int max, char *err, size_t errlen)
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
        if (nfd < 0 && errno == ENOENT && max >= 0) {
            if (mkdirat(fd, comp, 0755) == 0 && ncreated && *ncreated < max)
                snprintf(created[(*ncreated)++], 4096, "%s", rel);
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

int pp_asprof_copy_lib(const char *src, int dirfd, const char *name, char *err, size_t errlen)
{
    struct stat ss = {0}, ds = {0}; /* zeroed: valgrind does not see fstatat fill ds */
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0 || fstat(in, &ss) < 0) {
        snprintf(err, errlen, "cannot read %s: %s", src, strerror(errno));
        if (in >= 0)
            close(in);
        return -1;
    }
    if (fstatat(dirfd, name, &ds, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ds.st_mode) &&
        ds.st_size == ss.st_size && ds.st_uid == 0) {
        close(in);
        return 0;
    }
    char tmp[128];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(tmp, sizeof(tmp), ".%s.%d.%lx", name, (int)getpid(), (unsigned long)ts.tv_nsec);
    int out = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
    if (out < 0) {
        snprintf(err, errlen, "cannot create the async-profiler library in the target: %s",
                 strerror(errno));
        close(in);
        return -1;
    }
    char buf[65536];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n) {
            rc = -1;
            break;
        }
    if (n < 0 || rc < 0 || fchmod(out, 0755) < 0 || close(out) < 0) {
        snprintf(err, errlen, "cannot copy %s into the target: %s", src, strerror(errno));
        unlinkat(dirfd, tmp, 0);
        close(in);
        return -1;
    }
    close(in);
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        snprintf(err, errlen, "cannot install the async-profiler library in the target: %s",
                 strerror(errno));
        unlinkat(dirfd, tmp, 0);
        return -1;
    }
    return 0;
}

static bool is_file(const char *p, struct stat *st)
{
    return stat(p, st) == 0 && S_ISREG(st->st_mode);
}

int pp_asprof_find_lib(const char *asprof, bool musl, char *lib, size_t liblen, char *ver,
                       size_t verlen, char *err, size_t errlen)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", asprof);
    const char *dir = dirname(copy);
    const char *cands[] = {musl ? "musl/" : NULL, "../lib/", "lib/", "glibc/", ""};
    struct stat st;
    bool found = false;
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]) && !found; i++) {
        if (!cands[i])
            continue;
        snprintf(lib, liblen, "%s/%slibasyncProfiler.so", dir, cands[i]);
        found = is_file(lib, &st);
    }
    if (!found) {
        snprintf(err, errlen,
                 "libasyncProfiler.so not found next to %s (looked in ../lib/, lib/, glibc/ "
                 "and the same folder)",
                 asprof);
        return -1;
    }
    char vpath[PATH_MAX + 32], text[64];
    snprintf(vpath, sizeof(vpath), "%s/async-profiler-version", dir);
    size_t o = 0;
    if (pp_read_small_file(vpath, text, sizeof(text)) > 0)
        for (const char *p = text; *p && *p != '\n' && o + 1 < verlen; p++)
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '.' || *p == '-' || *p == '_')
                ver[o++] = *p;
    if (o)
        ver[o] = '\0';
    else
        snprintf(ver, verlen, "%llx-%llx", (unsigned long long)st.st_size,
                 (unsigned long long)st.st_mtime);
    return 0;
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
