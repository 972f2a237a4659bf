/* Folded-stack parsing (folded.h). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge/strtab.h"
#include "runtimes/folded.h"

#define FRAME_TEXT (PATH_MAX + 600)

/* Frame ids in out of raw frames, cached: a profiler repeats its frames on every line. */
typedef struct framemap {
    pp_strtab *raw;
    uint32_t *ids;
    size_t cap;
    pp_folded_frame_fn fn;
    void *arg;
    char text[FRAME_TEXT];
} framemap;

static uint32_t map_frame(framemap *m, pp_profile *out, const char *f, size_t len)
{
    uint32_t r = pp_strtab_intern(m->raw, f, len);
    if (r == UINT32_MAX)
        return 0;
    if (r >= m->cap) {
        size_t ncap = m->cap ? m->cap : 256;
        while (ncap <= r)
            ncap *= 2;
        uint32_t *n = realloc(m->ids, ncap * sizeof(*n));
        if (!n)
            return 0;
        for (size_t i = m->cap; i < ncap; i++)
            n[i] = UINT32_MAX;
        m->ids = n;
        m->cap = ncap;
    }
    if (m->ids[r] == UINT32_MAX) {
        m->fn(m->arg, pp_strtab_get(m->raw, r), pp_strtab_len(m->raw, r), m->text, sizeof(m->text));
        m->ids[r] = pp_profile_intern(out, m->text);
    }
    return m->ids[r];
}

size_t pp_folded_parse(char *text, pp_profile *out, pp_pid_profile *dst, pp_folded_frame_fn fn,
                       void *arg)
{
    framemap *m = calloc(1, sizeof(*m));
    if (!m)
        return 0;
    m->raw = pp_strtab_new();
    m->fn = fn;
    m->arg = arg;
    uint32_t ids[PP_FOLDED_MAX_FRAMES];
    size_t lines = 0;
    for (char *line = text; m->raw && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r')
            line[ll - 1] = '\0';
        char *sp = strrchr(line, ' ');
        char *end = NULL;
        unsigned long long count =
            sp && sp[1] >= '0' && sp[1] <= '9' ? strtoull(sp + 1, &end, 10) : 0;
        if (sp && sp > line && count > 0 && count < PP_FOLDED_MAX_COUNT && *end == '\0') {
            size_t n = 0;
            for (char *f = line; f < sp && n < PP_FOLDED_MAX_FRAMES;) {
                char *semi = memchr(f, ';', (size_t)(sp - f));
                size_t fl = semi ? (size_t)(semi - f) : (size_t)(sp - f);
                if (fl)
                    ids[n++] = map_frame(m, out, f, fl);
                f += fl + 1;
            }
            if (n && pp_pid_add(dst, ids, n, count) == 0)
                lines++;
        }
        line = nl ? nl + 1 : NULL;
    }
    pp_strtab_free(m->raw);
    free(m->ids);
    free(m);
    return lines;
}
