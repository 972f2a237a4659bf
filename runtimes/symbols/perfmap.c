/* /tmp/perf-<pid>.map parsing: one "START SIZE name" per line, hex numbers, name to end of line. */
#include "runtimes/symbols/symbols_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PERFMAP_MAX_BYTES (256u << 20)

static size_t parse_hex(const char *s, size_t len, size_t i, uint64_t *out)
{
    if (i + 1 < len && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
        i += 2;
    uint64_t v = 0;
    int digits = 0;
    for (; i < len; i++) {
        char c = s[i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            break;
        if (++digits > 16)
            return 0;
        v = (v << 4) | (uint64_t)d;
    }
    if (digits == 0)
        return 0;
    *out = v;
    return i;
}

int pp_perfmap_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *size,
                          const char **name, size_t *namelen)
{
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t j = parse_hex(line, len, i, start);
    if (j == 0 || j >= len || (line[j] != ' ' && line[j] != '\t'))
        return -1;
    while (j < len && (line[j] == ' ' || line[j] == '\t'))
        j++;
    size_t k = parse_hex(line, len, j, size);
    if (k == 0 || k >= len || (line[k] != ' ' && line[k] != '\t'))
        return -1;
    k++; /* exactly one separator: the name runs to the end of the line */
    if (k >= len)
        return -1;
    *name = line + k;
    *namelen = len - k;
    return 0;
}

long pp_perfmap_parse(const char *data, size_t len, pp_symtab *t)
{
    long n = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (data + pos)) : len - pos;
        uint64_t start, size;
        const char *name;
        size_t namelen;
        if (pp_perfmap_parse_line(data + pos, ll, &start, &size, &name, &namelen) == 0) {
            if (pp_symtab_add(t, start, size, name, namelen,
                              PP_SYM_FUNC | PP_SYM_GLOBAL | PP_SYM_SEQ) == 0)
                n++;
        }
        pos += ll + 1;
    }
    pp_symtab_finish(t, 1);
    return n;
}

long pp_perfmap_load(const char *path, pp_symtab *t)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    size_t want = st.st_size > (off_t)PERFMAP_MAX_BYTES ? PERFMAP_MAX_BYTES : (size_t)st.st_size;
    char *buf = malloc(want + 1);
    if (!buf) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    long n = pp_perfmap_parse(buf, got, t);
    free(buf);
    return n;
}
