/* /proc/<pid>/maps line parsing:
 * "start-end perms offset major:minor inode          path" */
#include "runtimes/symbols/symbols_internal.h"

#include <string.h>

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
