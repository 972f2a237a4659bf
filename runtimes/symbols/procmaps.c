/* /proc/<pid>/maps line parsing:
 * "start-end perms offset major:minor inode          path" */
#include "runtimes/symbols/symbols_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/procmap_query.h"

/* Parses a number in base 16 or 10 at s[*i]; returns 0 on success. */
static int num(const char *s, size_t len, size_t *i, int base, uint64_t *out)
{
    uint64_t v = 0;
    int digits = 0;
    while (*i < len) {
        int d = pp_hexval(s[*i]);
        if (d < 0 || d >= base)
            break;
        if (++digits > (base == 16 ? 16 : 20))
            return -1;
        uint64_t nv = v * (uint64_t)base + (uint64_t)d;
        if (base == 10 && nv < v)
            return -1;
        v = nv;
        (*i)++;
    }
    if (!digits)
        return -1;
    *out = v;
    return 0;
}

static int expect(const char *s, size_t len, size_t *i, char c)
{
    if (*i >= len || s[*i] != c)
        return -1;
    (*i)++;
    return 0;
}

static void skip_spaces(const char *s, size_t len, size_t *i)
{
    while (*i < len && (s[*i] == ' ' || s[*i] == '\t'))
        (*i)++;
}

int pp_maps_parse_line(const char *line, size_t len, pp_maps_line *out)
{
    memset(out, 0, sizeof(*out));
    out->path = "";
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t i = 0;
    uint64_t maj, min;
    if (num(line, len, &i, 16, &out->start) || expect(line, len, &i, '-') ||
        num(line, len, &i, 16, &out->end) || expect(line, len, &i, ' '))
        return -1;
    if (out->end <= out->start)
        return -1;
    if (i + 5 > len || line[i + 4] != ' ')
        return -1;
    memcpy(out->perms, line + i, 4);
    out->perms[4] = '\0';
    i += 5;
    if (num(line, len, &i, 16, &out->offset) || expect(line, len, &i, ' ') ||
        num(line, len, &i, 16, &maj) || expect(line, len, &i, ':') ||
        num(line, len, &i, 16, &min) || expect(line, len, &i, ' ') ||
        num(line, len, &i, 10, &out->inode))
        return -1;
    out->dev_major = (unsigned)maj;
    out->dev_minor = (unsigned)min;
    skip_spaces(line, len, &i);
    out->path = line + i;
    out->pathlen = len - i;
    static const char del[] = " (deleted)";
    size_t dl = sizeof(del) - 1;
    if (out->pathlen > dl && memcmp(out->path + out->pathlen - dl, del, dl) == 0)
        out->deleted = 1;
    return 0;
}

static int starts(const char *p, size_t n, const char *pre)
{
    size_t l = strlen(pre);
    return n >= l && memcmp(p, pre, l) == 0;
}

pp_map_kind pp_maps_classify(const char *path, size_t n)
{
    if (n == 0 || starts(path, n, "//anon") || starts(path, n, "[anon:") ||
        starts(path, n, "[anon_shmem:") || starts(path, n, "/memfd:") ||
        starts(path, n, "/dev/zero") || starts(path, n, "/anon_hugepage") ||
        starts(path, n, "/SYSV"))
        return PP_MAP_ANON;
    if (n == 6 && memcmp(path, "[vdso]", 6) == 0)
        return PP_MAP_VDSO;
    if (path[0] == '[')
        return PP_MAP_OTHER;
    return PP_MAP_FILE;
}

static const char deleted_suffix[] = " (deleted)";

typedef struct query_cb {
    int (*fn)(void *, const pp_maps_line *);
    void *arg;
} query_cb;

static int from_query(void *arg, const struct pp_procmap_query *q, const char *name, size_t nl)
{
    const query_cb *c = arg;
    pp_maps_line ml = {
        .start = q->vma_start,
        .end = q->vma_end,
        .offset = q->vma_offset,
        .inode = q->inode,
        .dev_major = q->dev_major,
        .dev_minor = q->dev_minor,
        .path = name,
        .pathlen = nl,
    };
    snprintf(ml.perms, sizeof(ml.perms), "%c%cx%c",
             (q->vma_flags & PP_QUERY_VMA_READABLE) ? 'r' : '-',
             (q->vma_flags & PP_QUERY_VMA_WRITABLE) ? 'w' : '-',
             (q->vma_flags & PP_QUERY_VMA_SHARED) ? 's' : 'p');
    size_t dl = sizeof(deleted_suffix) - 1;
    ml.deleted = nl > dl && memcmp(name + nl - dl, deleted_suffix, dl) == 0;
    return c->fn(c->arg, &ml);
}

static int read_text(int fd, int (*fn)(void *, const pp_maps_line *), void *arg)
{
    int dfd = dup(fd);
    FILE *f = dfd >= 0 ? fdopen(dfd, "re") : NULL;
    if (!f) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int rc = 0;
    errno = 0;
    while ((len = getline(&line, &lcap, f)) > 0) {
        pp_maps_line ml;
        if (pp_maps_parse_line(line, (size_t)len, &ml) != 0 || ml.perms[2] != 'x')
            continue;
        if (fn(arg, &ml))
            break;
    }
    if (ferror(f))
        rc = -1;
    free(line);
    fclose(f);
    return rc;
}

int pp_maps_read_exec(int fd, int *no_query, int (*fn)(void *arg, const pp_maps_line *ml),
                      void *arg)
{
    if (!*no_query) {
        query_cb c = {fn, arg};
        if (pp_procmap_each(fd, PP_QUERY_VMA_EXECUTABLE, from_query, &c) == 0)
            return 0;
        if (errno != ENOTTY && errno != EINVAL && errno != EOPNOTSUPP)
            return -1;
        *no_query = 1; /* first call on this kernel: nothing was passed to fn */
    }
    return read_text(fd, fn, arg);
}

int pp_maps_covers_exec(int fd, uint64_t addr)
{
    struct pp_procmap_query q = {
        .size = sizeof(q),
        .query_flags = PP_QUERY_VMA_EXECUTABLE,
        .query_addr = addr,
    };
    if (ioctl(fd, PP_PROCMAP_QUERY, &q) == 0)
        return 1;
    return errno == ENOENT ? 0 : -1;
}

int pp_proc_modules(int pid, const char *lib_prefix, pp_proc_module *lib, pp_proc_module *exe)
{
    char path[64], target[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    ssize_t tl = readlink(path, target, sizeof(target) - 1);
    target[tl > 0 ? tl : 0] = '\0';
    const char *del = strstr(target, " (deleted)");
    size_t tlen = del ? (size_t)(del - target) : strlen(target);
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    lib->path[0] = exe->path[0] = '\0';
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        pp_maps_line ml;
        if (pp_maps_parse_line(line, (size_t)n, &ml) != 0 || ml.offset != 0 || !ml.pathlen ||
            ml.pathlen >= PATH_MAX)
            continue;
        const char *base = memrchr(ml.path, '/', ml.pathlen);
        base = base ? base + 1 : ml.path;
        size_t plen = ml.pathlen - (ml.deleted ? strlen(" (deleted)") : 0);
        pp_proc_module *m = NULL;
        if (!lib->path[0] && strncmp(base, lib_prefix, strlen(lib_prefix)) == 0)
            m = lib;
        else if (!exe->path[0] && tlen && plen == tlen && memcmp(ml.path, target, tlen) == 0)
            m = exe;
        if (m) {
            memcpy(m->path, ml.path, plen);
            m->path[plen] = '\0';
            m->start = ml.start;
            m->end = ml.end;
            m->deleted = ml.deleted;
        }
    }
    free(line);
    fclose(f);
    return 0;
}
