/* Reading a process's file mappings for discovery. Two ways, same output format (maps text):
 * - PROCMAP_QUERY (Linux 6.11+): an ioctl on /proc/<pid>/maps that returns one VMA at a time,
 *   with filters. Discovery asks only for executable file-backed VMAs, the mappings a runtime
 *   runs code from (its executable, libjvm, libpython, extension modules...), so the kernel
 *   formats a handful of paths per process instead of every line of maps text (the text path
 *   costs ~1 µs of kernel time per line: most of a first discovery pass).
 * - the text of /proc/<pid>/maps, on kernels without the ioctl. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/discovery_int.h"
#include "base/procmap_query.h"

#define QUERY_MAX_VMAS 65536
/* Each VMA becomes a maps-like line with this fixed prefix, so the same regexes (matched on
 * whole maps lines) apply to both sources. */
#define LINE_PREFIX "0-0 r-xp 0 0:0 0 "

static int no_query; /* the kernel has no PROCMAP_QUERY: use the text */

static int grow(char **buf, size_t *cap, size_t need, size_t limit)
{
    if (need <= *cap)
        return 0;
    if (need > limit)
        return -1;
    size_t ncap = *cap ? *cap : 4096;
    while (ncap < need)
        ncap *= 2;
    if (ncap > limit)
        ncap = limit;
    char *nb = realloc(*buf, ncap);
    if (!nb)
        return -1;
    memset(nb + *cap, 0, ncap - *cap); /* PCRE2's JIT may read a little past the subject */
    *buf = nb;
    *cap = ncap;
    return 0;
}

static ssize_t read_text(int fd, char **buf, size_t *cap, size_t limit)
{
    size_t len = 0;
    bool truncated = false;
    for (;;) {
        if (len + 1 >= *cap && grow(buf, cap, *cap * 2, limit) < 0) {
            truncated = true;
            break;
        }
        ssize_t r = read(fd, *buf + len, *cap - len - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (truncated) {
        const char *nl = memrchr(*buf, '\n', len);
        len = nl ? (size_t)(nl - *buf) + 1 : 0;
    }
    (*buf)[len] = '\0';
    return (ssize_t)len;
}

typedef struct query_acc {
    char **buf;
    size_t *cap, limit, len;
    unsigned nvmas;
} query_acc;

static int add_line(void *arg, const struct pp_procmap_query *q, const char *name, size_t nl)
{
    (void)q;
    query_acc *a = arg;
    if (++a->nvmas > QUERY_MAX_VMAS)
        return 1;
    if (!nl)
        return 0;
    if (grow(a->buf, a->cap, a->len + sizeof(LINE_PREFIX) + nl + 2, a->limit) < 0)
        return 1; /* classified from what was read */
    memcpy(*a->buf + a->len, LINE_PREFIX, sizeof(LINE_PREFIX) - 1);
    a->len += sizeof(LINE_PREFIX) - 1;
    memcpy(*a->buf + a->len, name, nl);
    a->len += nl;
    (*a->buf)[a->len++] = '\n';
    return 0;
}

/* -1 with errno ENOTTY/EINVAL when the kernel has no PROCMAP_QUERY. */
static ssize_t read_query(int fd, char **buf, size_t *cap, size_t limit)
{
    query_acc a = {.buf = buf, .cap = cap, .limit = limit};
    if (pp_procmap_each(fd, PP_QUERY_FILE_BACKED_VMA | PP_QUERY_VMA_EXECUTABLE, add_line, &a) < 0)
        return -1;
    if (grow(buf, cap, a.len + 1, limit) == 0)
        (*buf)[a.len] = '\0';
    return (ssize_t)a.len;
}

ssize_t pp_disc_read_maps(int pid, char **buf, size_t *cap, size_t limit)
{
    char path[48];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = -1;
    if (!__atomic_load_n(&no_query, __ATOMIC_RELAXED)) {
        r = read_query(fd, buf, cap, limit);
        if (r < 0 && (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)) {
            __atomic_store_n(&no_query, 1, __ATOMIC_RELAXED);
        } else {
            int e = errno;
            close(fd);
            errno = e;
            return r;
        }
    }
    r = read_text(fd, buf, cap, limit);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

void pp_disc_force_text_maps(bool on)
{
    __atomic_store_n(&no_query, on ? 1 : 0, __ATOMIC_RELAXED);
}
