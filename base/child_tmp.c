/* polyprof's private scratch space, /run/polyprof (see child.h), and the name of the directory
 * for files targets read. Never follows symlinks: every removal goes through openat/unlinkat
 * with O_NOFOLLOW. */
#include "base/child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/safefile.h"
#include "base/procfiles.h"

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt,
                                                          ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#define BASE_MODE 0700
#define TARGET_DIR_FILE "target-dir"

static const char *tmp_base; /* set by tests; NULL: the default */
static char default_path[PATH_MAX];

/* As root /run/polyprof (root-owned /run: nobody else can create or replace it); rootless
 * $XDG_RUNTIME_DIR/polyprof (the user's own), else /tmp/polyprof-<uid> (refused when someone
 * else made it). */
static const char *base_path(void)
{
    if (tmp_base)
        return tmp_base;
    if (!default_path[0]) {
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (geteuid() == 0)
            snprintf(default_path, sizeof(default_path), "/run/polyprof");
        else if (xdg && xdg[0] == '/')
            snprintf(default_path, sizeof(default_path), "%s/polyprof", xdg);
        else
            snprintf(default_path, sizeof(default_path), "/tmp/polyprof-%u", (unsigned)geteuid());
    }
    return default_path;
}

void pp_tmp_set_base(const char *base)
{
    tmp_base = base;
}

const char *pp_tmp_base(void)
{
    return base_path();
}

/* Empties the directory open at fd (consumed). Stays on device dev; depth-limited. */
static int rm_contents(int fd, dev_t dev, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int ret = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (st.st_dev != dev || depth >= 64) {
                ret = -1; /* another file system, or absurdly deep: leave it */
                continue;
            }
            int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0 || rm_contents(sub, dev, depth + 1) < 0)
                ret = -1;
            if (unlinkat(dirfd(d), n, AT_REMOVEDIR) < 0)
                ret = -1;
        } else if (unlinkat(dirfd(d), n, 0) < 0) {
            ret = -1;
        }
    }
    closedir(d);
    return ret;
}

/* Removes path (a directory tree, or anything else itself) relative to dirfd. */
static int rmtree_at(int dfd, const char *path)
{
    struct stat st;
    if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dfd, path, 0);
    int fd = openat(dfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    rm_contents(fd, st.st_dev, 0);
    return unlinkat(dfd, path, AT_REMOVEDIR);
}

void pp_rmtree(const char *path)
{
    if (!path || !*path)
        return;
    if (rmtree_at(AT_FDCWD, path) < 0 && errno != ENOENT)
        pp_debug("cannot remove %s: %s", path, strerror(errno));
}

/* Makes sure the base exists, is a real directory owned by us (root), mode 0700. */
static int ensure_base(char *err, size_t errlen)
{
    const char *base = base_path();
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", base);
    char *slash = strrchr(parent, '/');
    if (!slash || slash[1] == '\0') {
        set_err(err, errlen, "invalid temporary directory %s", base);
        return -1;
    }
    if (slash == parent)
        slash[1] = '\0';
    else
        *slash = '\0';
    uid_t me = geteuid();
    struct stat st;
    if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "cannot use %s: %s is not a directory", base, parent);
        return -1;
    }
    if (me == 0 && st.st_uid != 0) {
        set_err(err, errlen, "cannot use %s: %s is not owned by root", base, parent);
        return -1;
    }
    for (int tries = 0; tries < 5; tries++) {
        if (lstat(base, &st) < 0) {
            if (errno != ENOENT) {
                set_err(err, errlen, "cannot use %s: %s", base, strerror(errno));
                return -1;
            }
            if (mkdir(base, BASE_MODE) < 0 && errno != EEXIST) {
                set_err(err, errlen, "cannot create %s: %s", base, strerror(errno));
                return -1;
            }
            continue;
        }
        if (S_ISLNK(st.st_mode)) {
            set_err(err, errlen, "%s is a symbolic link; refusing to use it", base);
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            set_err(err, errlen, "%s exists and is not a directory", base);
            return -1;
        }
        if (st.st_uid != me) {
            if (me != 0) {
                set_err(err, errlen, "%s is not owned by the current user", base);
                return -1;
            }
            pp_warn("%s is not owned by root (uid %u): removing and re-creating it", base,
                    (unsigned)st.st_uid);
            if (rmtree_at(AT_FDCWD, base) < 0 && errno != ENOENT) {
                set_err(err, errlen, "cannot remove %s: %s", base, strerror(errno));
                return -1;
            }
            continue;
        }
        if ((st.st_mode & 07777) != BASE_MODE && chmod(base, BASE_MODE) < 0) {
            set_err(err, errlen, "cannot chmod %s: %s", base, strerror(errno));
            return -1;
        }
        return 0;
    }
    set_err(err, errlen, "cannot set up %s: it keeps changing", base);
    return -1;
}

int pp_tmp_ensure_base(char *err, size_t errlen)
{
    return ensure_base(err, errlen);
}

int pp_session_tmpdir(char *out, size_t len, char *err, size_t errlen)
{
    if (ensure_base(err, errlen) < 0)
        return -1;
    int bfd = open(base_path(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (bfd < 0 || fstat(bfd, &st) < 0 || st.st_uid != geteuid()) {
        set_err(err, errlen, "cannot open %s: %s", base_path(),
                bfd < 0 ? strerror(errno) : "owner changed");
        if (bfd >= 0)
            close(bfd);
        return -1;
    }
    char name[64];
    for (int tries = 0; tries < 100; tries++) {
        int n = snprintf(name, sizeof(name), "sess-%d-", (int)getpid());
        pp_random_chars(name + n, 6);
        if (mkdirat(bfd, name, 0700) == 0) {
            fchmodat(bfd, name, 0700, 0);
            close(bfd);
            if ((size_t)snprintf(out, len, "%s/%s", base_path(), name) >= len) {
                char full[PATH_MAX];
                snprintf(full, sizeof(full), "%s/%s", base_path(), name);
                pp_rmtree(full);
                set_err(err, errlen, "temporary directory path too long");
                return -1;
            }
            return 0;
        }
        if (errno != EEXIST)
            break;
    }
    set_err(err, errlen, "cannot create a directory in %s: %s", base_path(), strerror(errno));
    close(bfd);
    return -1;
}

/* "polyprof-" and 12 characters [A-Za-z0-9]: a name pp_target_tmpdir made. */
static bool valid_target_name(const char *s)
{
    if (strncmp(s, "polyprof-", 9) != 0 || strlen(s) != 9 + 12)
        return false;
    for (const char *p = s + 9; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

int pp_target_tmpdir(char *out, size_t len, char *err, size_t errlen)
{
    if (ensure_base(err, errlen) < 0)
        return -1;
    int bfd = open(base_path(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (bfd < 0) {
        set_err(err, errlen, "cannot open %s: %s", base_path(), strerror(errno));
        return -1;
    }
    /* chosen once per boot (the base is on /run) and kept, so that a JVM keeps the one copy of
     * async-profiler it loaded when polyprof restarts */
    char name[64] = "";
    int fd = openat(bfd, TARGET_DIR_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        size_t n = 0;
        char *text = pp_read_fd(fd, 63, 0, &n);
        close(fd);
        if (text && valid_target_name(text))
            snprintf(name, sizeof(name), "%s", text);
        free(text);
    }
    int rc = 0;
    if (!name[0]) {
        snprintf(name, sizeof(name), "polyprof-");
        pp_random_chars(name + 9, 12);
        rc = pp_replace_file_at(bfd, TARGET_DIR_FILE, name, strlen(name), 0600);
        if (rc < 0)
            set_err(err, errlen, "cannot write %s/%s: %s", base_path(), TARGET_DIR_FILE,
                    strerror(errno));
    }
    close(bfd);
    if (rc == 0 && (size_t)snprintf(out, len, "/tmp/%s", name) >= len) {
        set_err(err, errlen, "path too long");
        rc = -1;
    }
    return rc;
}

/* true when pid is a running process whose comm equals ours. */
static bool is_live_polyprof(pid_t pid)
{
    char p[64], mine[64] = "", theirs[64] = "";
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (!fgets(mine, sizeof(mine), f))
            mine[0] = '\0';
        fclose(f);
    }
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    f = fopen(p, "re");
    if (!f)
        return false;
    char buf[512];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X')
        return false; /* zombies are dead */
    snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
    f = fopen(p, "re");
    if (!f)
        return false;
    if (!fgets(theirs, sizeof(theirs), f))
        theirs[0] = '\0';
    fclose(f);
    return mine[0] && strcmp(mine, theirs) == 0;
}

int pp_tmp_cleanup_stale(void)
{
    int bfd = open(base_path(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (bfd < 0)
        return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(bfd);
    if (!d) {
        close(bfd);
        return -1;
    }
    int removed = 0;
    pid_t self = getpid();
    struct dirent *de;
    while ((de = readdir(d))) {
        int pid = 0, end = 0;
        if (sscanf(de->d_name, "sess-%d-%n", &pid, &end) != 1 || end == 0 || pid <= 0)
            continue;
        if (pid == self || is_live_polyprof(pid))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (rmtree_at(dirfd(d), de->d_name) == 0) {
            pp_debug("removed stale %s/%s", base_path(), de->d_name);
            removed++;
        }
    }
    closedir(d);
    return removed;
}
