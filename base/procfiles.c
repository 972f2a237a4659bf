#include "base/procfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t pp_read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || len == 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < len - 1) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

char *pp_read_file(const char *path, size_t max, int flags, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
                            ((flags & PP_READ_NOFOLLOW) ? O_NOFOLLOW : 0));
    if (fd < 0)
        return NULL;
    char *buf = pp_read_fd(fd, max, flags, len);
    close(fd);
    return buf;
}

char *pp_read_fd(int fd, size_t max, int flags, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        ((size_t)st.st_size <= max || (flags & PP_READ_TRUNCATE))) {
        size_t want = (size_t)st.st_size < max ? (size_t)st.st_size : max, got = 0;
        buf = malloc(want + 1);
        while (buf && got < want) {
            ssize_t n = read(fd, buf + got, want - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (buf) {
            buf[got] = '\0';
            *len = got;
        }
    }
    return buf;
}

const char *pp_status_field(const char *status, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = status; p && *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ':')
            return p + kl + 1;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

int pp_status_nspid(const char *status, int *levels)
{
    const char *p = pp_status_field(status, "NSpid");
    int n = 0, last = -1;
    for (; p; n++) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p < '0' || *p > '9')
            break;
        long long v = 0;
        for (; *p >= '0' && *p <= '9' && v <= INT_MAX; p++)
            v = v * 10 + (*p - '0');
        if (v <= 0 || v > INT_MAX) {
            n = 0;
            break;
        }
        last = (int)v;
    }
    if (levels)
        *levels = n;
    return n ? last : -1;
}

int pp_read_nspid(int pid, int tid, int *levels)
{
    char path[64], status[8192];
    if (tid > 0)
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
    else
        snprintf(path, sizeof(path), "/proc/%d/status", pid);
    ssize_t n = pp_read_small_file(path, status, sizeof(status));
    const char *f = n > 0 ? pp_status_field(status, "NSpid") : NULL;
    /* a file longer than the buffer (a long Groups: line) may cut the line: it must end here */
    if (f && ((size_t)n < sizeof(status) - 1 || strchr(f, '\n')))
        return pp_status_nspid(status, levels);
    if (levels)
        *levels = 0;
    return -1;
}

bool pp_pid_gone(int pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* Fields `field` and `field + 1` (field >= 3) of a /proc stat file (path) as numbers, and the
 * comm between the parentheses into comm (unless NULL; cut to commlen - 1 bytes); false when
 * the task is gone. */
static bool stat_path_fields(const char *path, int field, unsigned long long v[2], char *comm,
                             size_t commlen)
{
    char buf[1024];
    if (pp_read_small_file(path, buf, sizeof(buf)) <= 0)
        return false;
    char *p = strrchr(buf, ')');
    char *open = strchr(buf, '(');
    if (!p || !open || open > p)
        return false;
    if (comm && commlen) {
        size_t n = (size_t)(p - open - 1);
        n = n < commlen - 1 ? n : commlen - 1;
        memcpy(comm, open + 1, n);
        comm[n] = '\0';
    }
    /* fields 3.. follow ") " */
    p++;
    for (int f = 2; f < field - 1 && p; f++)
        p = strchr(p + 1, ' ');
    if (!p)
        return false;
    char *end;
    v[0] = strtoull(p + 1, &end, 10);
    v[1] = *end == ' ' ? strtoull(end + 1, NULL, 10) : 0;
    return true;
}

static bool stat_fields(int pid, int field, unsigned long long v[2])
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    return stat_path_fields(path, field, v, NULL, 0);
}

unsigned long long pp_task_cpu_ticks(int pid, int tid, char *comm, size_t commlen)
{
    char path[96];
    unsigned long long v[2];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
    if (comm && commlen)
        comm[0] = '\0';
    return stat_path_fields(path, 14, v, comm, commlen) ? v[0] + v[1] : 0;
}

unsigned long long pp_proc_start_ticks(int pid)
{
    unsigned long long v[2];
    return stat_fields(pid, 22, v) ? v[0] : 0;
}

unsigned long long pp_proc_cpu_ticks(int pid)
{
    unsigned long long v[2];
    return stat_fields(pid, 14, v) ? v[0] + v[1] : 0;
}

bool pp_proc_alive(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if (pp_read_small_file(path, buf, sizeof(buf)) <= 0)
        return false;
    const char *p = strrchr(buf, ')'); /* comm may hold ')' */
    return p && p[1] == ' ' && p[2] && p[2] != 'Z' && p[2] != 'X';
}

bool pp_proc_has_memory(int pid)
{
    char path[64], first[2]; /* one byte is enough to tell */
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    return pp_read_small_file(path, first, sizeof(first)) > 0;
}

int pp_find_mapping(int pid, const char *needle, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    /* Bounded: a maps file has at most a few hundred thousand lines. */
    for (int i = 0; i < 1000000 && getline(&line, &cap, f) > 0; i++) {
        char *p = strchr(line, '/');
        if (!p || !strstr(p, needle))
            continue;
        p[strcspn(p, "\n")] = '\0';
        char *del = strstr(p, " (deleted)");
        if (del)
            *del = '\0';
        snprintf(out, len, "%s", p);
        rc = 0;
        break;
    }
    free(line);
    fclose(f);
    return rc;
}
