#include "merge/linecount.h"

#include <stdlib.h>
#include <string.h>

#include "merge/strtab.h"

/* Lines are interned (id 0 is the strtab's empty string, so line i has id i + 1). */
struct pp_linecount {
    pp_strtab *lines;
    uint64_t *counts; /* by line id */
    size_t cap;
};

pp_linecount *pp_linecount_new(void)
{
    pp_linecount *lc = calloc(1, sizeof(*lc));
    if (!lc)
        return NULL;
    lc->lines = pp_strtab_new();
    if (!lc->lines) {
        free(lc);
        return NULL;
    }
    return lc;
}

void pp_linecount_free(pp_linecount *lc)
{
    if (!lc)
        return;
    pp_strtab_free(lc->lines);
    free(lc->counts);
    free(lc);
}

int pp_linecount_add(pp_linecount *lc, const char *s, size_t len, uint64_t count)
{
    /* The empty line is a line like any other: kept apart from the strtab's id 0 by a prefix. */
    uint32_t id = len ? pp_strtab_intern(lc->lines, s, len) : pp_strtab_intern(lc->lines, "\n", 1);
    if (id == UINT32_MAX)
        return -1;
    if (id >= lc->cap) {
        size_t nc = lc->cap ? lc->cap * 2 : 256;
        while (nc <= id)
            nc *= 2;
        uint64_t *c = realloc(lc->counts, nc * sizeof(*c));
        if (!c)
            return -1;
        memset(c + lc->cap, 0, (nc - lc->cap) * sizeof(*c));
        lc->counts = c;
        lc->cap = nc;
    }
    lc->counts[id] += count;
    return 0;
}

size_t pp_linecount_size(const pp_linecount *lc)
{
    return pp_strtab_count(lc->lines) - 1;
}

const char *pp_linecount_get(const pp_linecount *lc, size_t i, size_t *len, uint64_t *count)
{
    uint32_t id = (uint32_t)i + 1;
    const char *s = pp_strtab_get(lc->lines, id);
    size_t n = pp_strtab_len(lc->lines, id);
    if (n == 1 && s[0] == '\n') {
        s = "";
        n = 0;
    }
    *len = n;
    *count = id < lc->cap ? lc->counts[id] : 0;
    return s;
}
