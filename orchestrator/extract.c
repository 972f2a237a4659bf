/* extract-resources (extract.h). */
#include "orchestrator/extract.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/safefile.h"

typedef struct extract {
    int dest_fd;
    struct stat dest_st;
    FILE *out;
    char **done; /* relative paths copied, first match wins */
    size_t ndone;
    char *err;
    size_t errlen;
} extract;

static bool already(const extract *x, const char *rel)
{
    for (size_t i = 0; i < x->ndone; i++)
        if (strcmp(x->done[i], rel) == 0)
            return true;
    return false;
}

/* Opens (creating) the directories of rel below dest, never through a symbolic link; returns
 * the descriptor of rel's parent and points *base at its last component, or -1 (err set). */
static int dest_parent(extract *x, const char *rel, const char **base)
{
    char part[NAME_MAX + 1];
    int fd = dup(x->dest_fd);
    const char *p = rel;
    for (const char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
        size_t l = (size_t)(slash - p);
        if (l > NAME_MAX) {
            close(fd);
            fd = -1;
            errno = ENAMETOOLONG;
            break;
        }
        memcpy(part, p, l);
        part[l] = '\0';
        if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST) {
            close(fd);
            fd = -1;
            break;
        }
        int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
    }
    if (fd < 0)
        snprintf(x->err, x->errlen, "cannot create the directory of %s in the destination: %s", rel,
                 errno == ELOOP || errno == ENOTDIR
                     ? "a path component is a symbolic link or not a directory; remove it"
                     : strerror(errno));
    *base = p;
    return fd;
}

/* Copies root/rel (st: the file, links followed) to dest/rel, unless an earlier directory had
 * rel. 0, or -1 with err set. */
static int copy_one(extract *x, const char *root, const char *rel, const struct stat *st)
{
    if (already(x, rel))
        return 0;
    if (x->ndone >= PP_EXTRACT_MAX_FILES) {
        snprintf(x->err, x->errlen,
                 "more than %d files below the resources directories (at %s/%s); is "
                 "POLYPROF_RESOURCES pointing at the right directory?",
                 PP_EXTRACT_MAX_FILES, root, rel);
        return -1;
    }
    char path[PATH_MAX], why[PATH_MAX + 256];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, rel) >= sizeof(path)) {
        snprintf(x->err, x->errlen, "path too long: %s/%s", root, rel);
        return -1;
    }
    size_t len;
    bool usage;
    char *data =
        pp_read_input_file(path, PP_EXTRACT_MAX_FILE, "resource", &len, &usage, why, sizeof(why));
    if (!data) {
        snprintf(x->err, x->errlen, "%s", why);
        return -1;
    }
    const char *base;
    int pfd = dest_parent(x, rel, &base);
    int rc = -1;
    if (pfd >= 0) {
        rc = pp_replace_file_at(pfd, base, data, len, (st->st_mode & 0111) ? 0755 : 0644);
        if (rc < 0)
            snprintf(x->err, x->errlen, "cannot write %s in the destination: %s", rel,
                     strerror(errno));
        close(pfd);
    }
    free(data);
    if (rc < 0)
        return -1;
    char **done = realloc(x->done, (x->ndone + 1) * sizeof(*done));
    char *copy = strdup(rel);
    if (!done || !copy) {
        free(copy);
        if (done)
            x->done = done;
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    x->done = done;
    x->done[x->ndone++] = copy;
    if (x->out)
        fprintf(x->out, "%s <- %s\n", rel, path);
    return 0;
}

/* Walks directory dfd (root/rel, rel "" at the top), copying its files; closes dfd. */
static int walk(extract *x, const char *root, int dfd, const char *rel, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    int rc = 0;
    char sub[PATH_MAX];
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", dot files (resources/.keep, a temporary file) */
        if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
            sizeof(sub))
            continue;
        struct stat lst, st;
        if (fstatat(dirfd(d), e->d_name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(lst.st_mode)) {
            if ((lst.st_dev == x->dest_st.st_dev && lst.st_ino == x->dest_st.st_ino) ||
                depth >= PP_EXTRACT_MAX_DEPTH)
                continue; /* the destination itself, or too deep */
            int sfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sfd >= 0)
                rc = walk(x, root, sfd, sub, depth + 1);
        } else if ((S_ISREG(lst.st_mode) || S_ISLNK(lst.st_mode)) &&
                   fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
            rc = copy_one(x, root, sub, &st);
        }
    }
    closedir(d);
    return rc;
}

static int each_dir(const char *dir, void *arg)
{
    extract *x = arg;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* not there: the search skips it too */
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_dev == x->dest_st.st_dev && st.st_ino == x->dest_st.st_ino) {
        close(fd); /* the destination is a resources directory: its files are there already */
        return 0;
    }
    return walk(x, dir, fd, "", 0);
}

int pp_extract_resources(const pp_resource_env *env, const char *dest, FILE *out, char *err,
                         size_t errlen)
{
    extract x = {.out = out, .err = err, .errlen = errlen};
    if (mkdir(dest, 0755) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create --resources-dest %s: %s%s", dest, strerror(errno),
                 errno == ENOENT ? " (its parent directory must exist)" : "");
        return -1;
    }
    x.dest_fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (x.dest_fd < 0 || fstat(x.dest_fd, &x.dest_st) < 0) {
        snprintf(err, errlen, "cannot open --resources-dest %s: %s", dest, strerror(errno));
        if (x.dest_fd >= 0)
            close(x.dest_fd);
        return -1;
    }
    int rc = pp_resource_each_dir(env, each_dir, &x);
    close(x.dest_fd);
    for (size_t i = 0; i < x.ndone; i++)
        free(x.done[i]);
    free(x.done);
    return rc ? -1 : (int)x.ndone;
}
