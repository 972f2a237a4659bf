/* Safe file creation and bounded input reads (see safefile.h). */
#include "base/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/procfiles.h"

#define UNIQUE_CHARS 12
#define UNIQUE_TRIES 100

void pp_random_chars(char *out, size_t n)
{
    static const char al[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char rnd[64];
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof(rnd) ? n - done : sizeof(rnd);
        ssize_t got = getrandom(rnd, want, GRND_NONBLOCK);
        if (got <= 0) { /* no entropy yet (early boot): the clock, never a constant */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 20 ^
                         (uint64_t)done;
            for (size_t i = 0; i < want;
                 i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
                rnd[i] = (unsigned char)(x >> 56);
            got = (ssize_t)want;
        }
        for (ssize_t i = 0; i < got; i++)
            out[done++] = al[rnd[i] % (sizeof(al) - 1)];
    }
    out[n] = '\0';
}

static pp_unique_name_source name_source = pp_random_chars;

void pp_safefile_set_name_source(pp_unique_name_source source)
{
    name_source = source ? source : pp_random_chars;
}

int pp_create_unique_at(int dfd, const char *prefix, const char *suffix, int flags, mode_t mode,
                        char *name, size_t namelen)
{
    for (int tries = 0; tries < UNIQUE_TRIES; tries++) {
        char rnd[UNIQUE_CHARS + 1];
        name_source(rnd, UNIQUE_CHARS);
        if ((size_t)snprintf(name, namelen, "%s%s%s", prefix, rnd, suffix ? suffix : "") >=
            namelen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

int pp_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
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

int pp_replace_file_at(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
    char tmp[256];
    int fd = pp_create_unique_at(dfd, ".polyprof-tmp-", NULL, O_WRONLY, mode, tmp, sizeof(tmp));
    if (fd < 0)
        return -1;
    int rc = pp_write_all(fd, data, len) < 0 || fchmod(fd, mode) < 0 || fsync(fd) < 0 ? -1 : 0;
    int e = errno;
    if (close(fd) < 0 && !rc) {
        rc = -1;
        e = errno;
    }
    if (!rc && renameat(dfd, tmp, dfd, name) < 0) {
        rc = -1;
        e = errno;
    }
    if (rc) {
        unlinkat(dfd, tmp, 0);
        errno = e;
    }
    return rc;
}

int pp_mkdir_parents(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return 0;
}

int pp_open_private_dir(const char *path, mode_t mode, char *err, size_t errlen)
{
    if (pp_mkdir_parents(path) < 0 || (mkdir(path, mode) < 0 && errno != EEXIST)) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path,
                 errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link or not a directory; "
                                                      "remove it and start polyprof again"
                                                    : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "%s is owned by uid %u, not by polyprof's user (%u); someone else created it: "
                 "remove it and start polyprof again",
                 path, (unsigned)st.st_uid, (unsigned)geteuid());
        close(fd);
        return -1;
    }
    if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
        snprintf(err, errlen, "cannot set the mode of %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISLNK(m))
        return "a symbolic link";
    return "not a regular file";
}

int pp_open_owned_append(int dfd, const char *name, mode_t mode, char *err, size_t errlen)
{
    int fd = openat(dfd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                    mode);
    if (fd < 0) {
        snprintf(err, errlen, "%s",
                 errno == ELOOP   ? "it is a symbolic link; remove it or give another path"
                 : errno == ENXIO ? "it is a FIFO or socket; remove it or give another path"
                                  : strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    char buf[128];
    if (fstat(fd, &st) < 0) {
        why = strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(buf, sizeof(buf), "it is %s, not a regular file", kind_of(st.st_mode));
        why = buf;
    } else if (st.st_uid != geteuid()) {
        snprintf(buf, sizeof(buf), "it is owned by uid %u, not by polyprof's user; remove it",
                 (unsigned)st.st_uid);
        why = buf;
    } else if (st.st_nlink != 1) {
        why = "it has other hard links; remove it";
    }
    if (why) {
        snprintf(err, errlen, "%s", why);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

static void human_size(unsigned long long n, char *buf, size_t len)
{
    if (n >= (1ull << 20) && n % (1ull << 20) == 0)
        snprintf(buf, len, "%llu MiB", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, len, "%llu KiB", n >> 10);
    else
        snprintf(buf, len, "%llu bytes", n);
}

char *pp_read_input_file(const char *path, size_t max, const char *what, size_t *len, bool *usage,
                         char *err, size_t errlen)
{
    *usage = false;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(e));
        errno = e;
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s is %s; give a regular file", what, path, kind_of(st.st_mode));
        *usage = true;
        close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > max) {
        char a[32], b[32];
        human_size((unsigned long long)st.st_size, a, sizeof(a));
        human_size(max, b, sizeof(b));
        snprintf(err, errlen, "%s %s is too large (%s; the limit is %s)", what, path, a, b);
        *usage = true;
        close(fd);
        return NULL;
    }
    char *buf = pp_read_fd(fd, max, PP_READ_TRUNCATE, len);
    int e = errno;
    close(fd);
    if (!buf) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(e));
        errno = e;
    }
    return buf;
}

void pp_escape_text(const char *in, char *out, size_t outlen)
{
    if (!outlen)
        return;
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        if (*p >= 0x20 && *p < 0x7f) {
            if (o + 1 >= outlen)
                break;
            out[o++] = (char)*p;
        } else {
            if (o + 4 >= outlen)
                break;
            snprintf(out + o, outlen - o, "\\x%02x", *p);
            o += 4;
        }
    }
    out[o] = '\0';
}
