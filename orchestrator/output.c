#include "orchestrator/output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge/header.h"

#define TMP_PREFIX ".polyprof-tmp-"

static int mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

int pp_output_prepare(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output path %s exists and is not a directory; give -o a directory",
                 dir);
        return -1;
    }
    if (mkdir_p(dir) < 0 || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cannot create output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (access(dir, W_OK | X_OK) < 0) {
        snprintf(err, errlen, "output directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes text as DIR/name (temp file, fsync, rename), then points the link DIR/lname at it (a
 * relative symlink replaced by a rename). With rotate, the file the link pointed to before is
 * deleted. path_out (may be NULL) receives the file's path. */
static int write_linked(const char *dir, const char *name, const char *lname, const char *text,
                        size_t len, bool rotate, char *path_out, size_t plen, char *err,
                        size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX], link[PATH_MAX], ltmp[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path) ||
        snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "%d-%s", dir, (int)getpid(), name) >=
            (int)sizeof(tmp) ||
        snprintf(link, sizeof(link), "%s/%s", dir, lname) >= (int)sizeof(link) ||
        snprintf(ltmp, sizeof(ltmp), "%s/" TMP_PREFIX "%d-%s", dir, (int)getpid(), lname) >=
            (int)sizeof(ltmp)) {
        snprintf(err, errlen, "output directory path too long: %s", dir);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (write_all(fd, text, len) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "cannot write %s: %s (disk full?)", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }

    /* The previous target, for rotation. */
    char old[PATH_MAX] = "";
    ssize_t ol = readlink(link, old, sizeof(old) - 1);
    old[ol > 0 ? ol : 0] = '\0';

    unlink(ltmp);
    if (symlink(name, ltmp) < 0 || rename(ltmp, link) < 0) {
        snprintf(err, errlen, "cannot update %s: %s", link, strerror(errno));
        unlink(ltmp);
        return -1;
    }
    if (rotate && old[0] && !strchr(old, '/') && strcmp(old, name) != 0 &&
        strcmp(old, lname) != 0) {
        char oldpath[PATH_MAX];
        if (snprintf(oldpath, sizeof(oldpath), "%s/%s", dir, old) < (int)sizeof(oldpath))
            unlink(oldpath);
    }
    if (path_out)
        snprintf(path_out, plen, "%s", path);
    return 0;
}

int pp_output_write(const char *dir, time_t end, const char *text, size_t len, bool rotate,
                    char *path_out, size_t plen, char *err, size_t errlen)
{
    char ts[32], name[64];
    pp_iso_time(end, ts, sizeof(ts));
    snprintf(name, sizeof(name), "profile_%s.col", ts);
    /* Two sessions ending in the same second (a short last session cut by a signal) must not
     * overwrite each other: the later one gets a _<n> suffix. */
    for (int n = 1; n < 100; n++) {
        char probe[PATH_MAX];
        if (snprintf(probe, sizeof(probe), "%s/%s", dir, name) >= (int)sizeof(probe) ||
            access(probe, F_OK) != 0)
            break;
        snprintf(name, sizeof(name), "profile_%s_%d.col", ts, n);
    }
    return write_linked(dir, name, "last_profile.col", text, len, rotate, path_out, plen, err,
                        errlen);
}

int pp_output_write_html(const char *dir, const char *col_path, const char *text, size_t len,
                         bool rotate, char *path_out, size_t plen, char *err, size_t errlen)
{
    const char *base = strrchr(col_path, '/');
    base = base ? base + 1 : col_path;
    size_t bl = strlen(base);
    char name[NAME_MAX + 1];
    if (bl < 4 || strcmp(base + bl - 4, ".col") != 0 || bl + 1 > sizeof(name)) {
        snprintf(err, errlen, "not a profile file name: %s", col_path);
        return -1;
    }
    snprintf(name, sizeof(name), "%.*s.html", (int)(bl - 4), base);
    return write_linked(dir, name, "last_flamegraph.html", text, len, rotate, path_out, plen, err,
                        errlen);
}
