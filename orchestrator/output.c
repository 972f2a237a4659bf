#include "orchestrator/output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "merge/header.h"
#include "base/safefile.h"

#define TMP_PREFIX ".polyprof-tmp-"
/* Names tried for a profile: its stem, then _1 to _99, then _<12 random characters>. */
#define NAME_SUFFIXES 100
#define NAME_RANDOM_TRIES 100

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int pp_output_prepare(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output path %s exists and is not a directory; give -o a directory",
                 dir);
        return -1;
    }
    if (pp_mkdir_parents(dir) < 0 || (mkdir(dir, 0755) < 0 && errno != EEXIST) ||
        stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
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
                unlinkat(dirfd(d), e->d_name, 0); /* a link itself, never its target */
        closedir(d);
    }
    return 0;
}

/* Renames dfd/from to dfd/to unless an entry named to exists: 0, -1 with EEXIST when it does,
 * -1 with another errno on failure. Where the file system has no RENAME_NOREPLACE, the check
 * and the rename are two steps; a rename never writes through a link at the destination. */
static int rename_noreplace(int dfd, const char *from, const char *to)
{
    if (syscall(SYS_renameat2, dfd, from, dfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EPERM)
        return -1;
    struct stat st;
    if (fstatat(dfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return renameat(dfd, from, dfd, to);
}

/* A name this module gives profiles: "profile_*<ext>" with no '/'. */
static bool is_profile_name(const char *s, const char *ext)
{
    size_t n = strlen(s), el = strlen(ext);
    return strncmp(s, "profile_", 8) == 0 && n > 8 + el && strcmp(s + n - el, ext) == 0 &&
           !strchr(s, '/');
}

/* Writes text as DIR/<stem><ext> (DIR/<stem>_<n><ext> when that name is taken, n up to 99, then
 * DIR/<stem>_<12 random characters><ext>), then points
 * the link DIR/<lname> at it; with rotate, the profile file the link pointed to before is
 * deleted. Every name is used relative to the directory held open: the temp file gets an
 * unpredictable name and O_EXCL|O_NOFOLLOW, the final names are reached by rename only (a link
 * planted under any of them is replaced or skipped, never written through). path_out (may be
 * NULL) receives the file's path. */
static int write_linked(const char *dir, const char *stem, const char *ext, const char *lname,
                        const void *text, size_t len, bool rotate, char *path_out, size_t plen,
                        char *err, size_t errlen)
{
    char name[NAME_MAX + 1], tmp[128], ltmp[128];
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot open output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    int fd = pp_create_unique_at(dfd, TMP_PREFIX, ext, O_WRONLY, 0644, tmp, sizeof(tmp));
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
        close(dfd);
        return -1;
    }
    if (pp_write_all(fd, text, len) < 0 || fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "cannot write %s/%s: %s (disk full?)", dir, tmp, strerror(errno));
        close(fd);
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return -1;
    }
    close(fd);
    /* Two sessions ending in the same second (a short last session cut by a signal) must not
     * overwrite each other: the later one gets a _<n> suffix. Those names can be predicted, and
     * anyone who can create entries in the directory (a sticky /tmp) can take them all in
     * advance: then the name gets 12 random characters instead, which nobody can prepare, so a
     * profile is never lost to planted names. */
    int rc = -1;
    for (int n = 0; n < NAME_SUFFIXES + NAME_RANDOM_TRIES; n++) {
        if (n >= NAME_SUFFIXES) {
            char rnd[13];
            pp_random_chars(rnd, 12);
            snprintf(name, sizeof(name), "%s_%s%s", stem, rnd, ext);
        } else if (n) {
            snprintf(name, sizeof(name), "%s_%d%s", stem, n, ext);
        } else {
            snprintf(name, sizeof(name), "%s%s", stem, ext);
        }
        if ((rc = rename_noreplace(dfd, tmp, name)) == 0 || errno != EEXIST)
            break;
    }
    if (rc < 0) {
        snprintf(err, errlen, "cannot rename %s/%s to %s: %s", dir, tmp, name, strerror(errno));
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return -1;
    }

    /* The previous target, for rotation. */
    char old[PATH_MAX] = "";
    ssize_t ol = readlinkat(dfd, lname, old, sizeof(old) - 1);
    old[ol > 0 ? ol : 0] = '\0';

    rc = -1;
    for (int tries = 0; tries < 100 && rc < 0; tries++) {
        char rnd[13];
        pp_random_chars(rnd, 12);
        snprintf(ltmp, sizeof(ltmp), TMP_PREFIX "%s-last", rnd);
        rc = symlinkat(name, dfd, ltmp); /* fails with EEXIST on any existing entry */
        if (rc < 0 && errno != EEXIST)
            break;
    }
    if (rc < 0 || renameat(dfd, ltmp, dfd, lname) < 0) {
        snprintf(err, errlen, "cannot update %s/%s: %s", dir, lname, strerror(errno));
        if (rc == 0)
            unlinkat(dfd, ltmp, 0);
        close(dfd);
        return -1;
    }
    /* Only a profile file this module named: the link may have been replaced by anyone who can
     * write in the directory. */
    if (rotate && is_profile_name(old, ext) && strcmp(old, name) != 0)
        unlinkat(dfd, old, 0);
    fsync(dfd);
    close(dfd);
    if (path_out)
        snprintf(path_out, plen, "%s/%s", dir, name);
    return 0;
}

int pp_output_write(const char *dir, time_t end, const char *text, size_t len, bool rotate,
                    char *path_out, size_t plen, char *err, size_t errlen)
{
    char ts[32], stem[64];
    pp_iso_time(end, ts, sizeof(ts));
    snprintf(stem, sizeof(stem), "profile_%s", ts);
    return write_linked(dir, stem, ".col", "last_profile.col", text, len, rotate, path_out, plen,
                        err, errlen);
}

int pp_output_write_beside(const char *dir, const char *col_path, const char *ext,
                           const char *lname, const void *data, size_t len, bool rotate,
                           char *path_out, size_t plen, char *err, size_t errlen)
{
    const char *base = strrchr(col_path, '/');
    base = base ? base + 1 : col_path;
    size_t bl = strlen(base);
    char stem[NAME_MAX + 1];
    if (bl < 4 || strcmp(base + bl - 4, ".col") != 0 || bl - 4 + strlen(ext) + 2 > sizeof(stem)) {
        snprintf(err, errlen, "not a profile file name: %s", col_path);
        return -1;
    }
    snprintf(stem, sizeof(stem), "%.*s", (int)(bl - 4), base);
    return write_linked(dir, stem, ext, lname, data, len, rotate, path_out, plen, err, errlen);
}

int pp_output_write_html(const char *dir, const char *col_path, const char *text, size_t len,
                         bool rotate, char *path_out, size_t plen, char *err, size_t errlen)
{
    return pp_output_write_beside(dir, col_path, ".html", "last_flamegraph.html", text, len, rotate,
                                  path_out, plen, err, errlen);
}
