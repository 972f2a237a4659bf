/* Sorted symbol tables with one string arena per table. */
#include "runtimes/symbols/symbols_internal.h"

#include <stdlib.h>
#include <string.h>

void pp_symtab_init(pp_symtab *t)
{
    memset(t, 0, sizeof(*t));
}

void pp_symtab_free(pp_symtab *t)
{
    if (!t)
        return;
    free(t->syms);
    free(t->arena);
    free(t->dem);
    free(t->darena);
    memset(t, 0, sizeof(*t));
}

static int grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : first;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Appends a NUL-terminated copy of s[0..len) to an arena; returns its offset or -1. */
static long arena_put(char **arena, size_t *alen, size_t *acap, const char *s, size_t len)
{
    if (*alen + len + 1 > PP_SYMTAB_MAX_ARENA)
        return -1;
    if (grow((void **)arena, acap, *alen + len + 1, 1, 4096) < 0)
        return -1;
    long off = (long)*alen;
    memcpy(*arena + *alen, s, len);
    (*arena)[*alen + len] = '\0';
    *alen += len + 1;
    return off;
}

int pp_symtab_add(pp_symtab *t, uint64_t addr, uint64_t size, const char *name, size_t namelen,
                  uint8_t flags)
{
    if (t->n >= PP_SYMTAB_MAX_SYMS)
        return -1;
    if (namelen > PP_SYM_MAX_NAME)
        namelen = PP_SYM_MAX_NAME;
    const char *nul = memchr(name, '\0', namelen);
    if (nul)
        namelen = (size_t)(nul - name);
    if (grow((void **)&t->syms, &t->cap, t->n + 1, sizeof(pp_sym), 64) < 0)
        return -1;
    long off = arena_put(&t->arena, &t->alen, &t->acap, name, namelen);
    if (off < 0)
        return -1;
    pp_sym *s = &t->syms[t->n++];
    s->addr = addr;
    s->end = size;
    s->name = (uint32_t)off;
    s->flags = flags;
    t->finished = 0;
    return 0;
}

static size_t underscores(const char *s)
{
    size_t n = 0;
    while (s[n] == '_')
        n++;
    return n;
}

/* Negative when a is the better symbol of two at the same address. */
static int better(const pp_sym *a, const pp_sym *b, const char *arena)
{
    if ((a->flags & PP_SYM_SEQ) && (b->flags & PP_SYM_SEQ))
        return a->name > b->name ? -1 : (a->name < b->name ? 1 : 0);
    int fa = !!(a->flags & PP_SYM_FUNC), fb = !!(b->flags & PP_SYM_FUNC);
    if (fa != fb)
        return fb - fa;
    int sa = a->end > 0, sb = b->end > 0;
    if (sa != sb)
        return sb - sa;
    int wa = !!(a->flags & PP_SYM_WEAK), wb = !!(b->flags & PP_SYM_WEAK);
    if (wa != wb)
        return wa - wb;
    int ga = !!(a->flags & PP_SYM_GLOBAL), gb = !!(b->flags & PP_SYM_GLOBAL);
    if (ga != gb)
        return gb - ga;
    const char *na = arena + a->name, *nb = arena + b->name;
    size_t ua = underscores(na), ub = underscores(nb);
    if (ua != ub)
        return ua < ub ? -1 : 1;
    size_t la = strlen(na), lb = strlen(nb);
    if (la != lb)
        return la > lb ? -1 : 1;
    /* later additions (higher arena offsets) win: newer perf-map entries */
    return a->name > b->name ? -1 : (a->name < b->name ? 1 : 0);
}

static int cmp_sym(const void *pa, const void *pb, void *arena)
{
    const pp_sym *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return better(a, b, arena);
}

void pp_symtab_finish(pp_symtab *t, uint64_t last_span)
{
    free(t->dem);
    t->dem = NULL;
    if (t->n == 0) {
        t->finished = 1;
        return;
    }
    qsort_r(t->syms, t->n, sizeof(pp_sym), cmp_sym, t->arena);
    /* keep the first (best) per address; drop unsized non-function labels that fall inside a
     * sized symbol (they would split a function) */
    size_t w = 0;
    uint64_t cover_end = 0;
    for (size_t i = 0; i < t->n; i++) {
        pp_sym *s = &t->syms[i];
        if (w > 0 && t->syms[w - 1].addr == s->addr)
            continue;
        if (s->end == 0 && !(s->flags & PP_SYM_FUNC) && s->addr < cover_end)
            continue;
        if (s->end > 0) {
            uint64_t e = s->addr + s->end;
            if (e < s->addr)
                e = UINT64_MAX;
            if (e > cover_end)
                cover_end = e;
        }
        t->syms[w++] = *s;
    }
    t->n = w;
    for (size_t i = 0; i < t->n; i++) {
        pp_sym *s = &t->syms[i];
        uint64_t end;
        if (s->end > 0) {
            end = s->addr + s->end;
            if (end < s->addr)
                end = UINT64_MAX;
        } else if (i + 1 < t->n) {
            end = t->syms[i + 1].addr;
        } else {
            end = s->addr + last_span;
            if (end < s->addr)
                end = UINT64_MAX;
        }
        s->end = end;
    }
    /* shrink */
    if (t->n < t->cap) {
        pp_sym *ns = realloc(t->syms, t->n * sizeof(pp_sym));
        if (ns) {
            t->syms = ns;
            t->cap = t->n;
        }
    }
    if (t->alen < t->acap) {
        char *na = realloc(t->arena, t->alen);
        if (na) {
            t->arena = na;
            t->acap = t->alen;
        }
    }
    t->finished = 1;
}

const pp_sym *pp_symtab_find(const pp_symtab *t, uint64_t addr)
{
    if (!t->finished || t->n == 0 || addr < t->syms[0].addr)
        return NULL;
    size_t lo = 0, hi = t->n; /* last index with syms[i].addr <= addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    /* a sized symbol may not reach addr while an enclosing earlier one does; look back a bit */
    for (size_t k = 0; k < 4 && k <= lo; k++) {
        const pp_sym *s = &t->syms[lo - k];
        if (addr < s->end)
            return s;
    }
    return NULL;
}

const char *pp_symtab_display_name(pp_symtab *t, const pp_sym *s)
{
    const char *raw = t->arena + s->name;
    if (!(raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')))
        return raw;
    size_t idx = (size_t)(s - t->syms);
    if (idx >= t->n)
        return raw;
    if (!t->dem) {
        t->dem = calloc(t->n, sizeof(uint32_t));
        if (!t->dem)
            return raw;
    }
    uint32_t d = t->dem[idx];
    if (d == 1)
        return raw;
    if (d >= 2)
        return t->darena + (d - 2);
    char *dm = pp_demangle(raw);
    if (!dm) {
        t->dem[idx] = 1;
        return raw;
    }
    pp_frame_sanitize(dm);
    long off = arena_put(&t->darena, &t->dlen, &t->dcap, dm, strlen(dm));
    free(dm);
    if (off < 0 || (uint64_t)off + 2 > UINT32_MAX) {
        t->dem[idx] = 1;
        return raw;
    }
    t->dem[idx] = (uint32_t)off + 2;
    return t->darena + off;
}

size_t pp_symtab_memory(const pp_symtab *t)
{
    return t->cap * sizeof(pp_sym) + t->acap + t->dcap + (t->dem ? t->n * sizeof(uint32_t) : 0);
}
