/* Go .gopclntab parsing (function entries and names only), for Go binaries whose .symtab was
 * stripped. Layouts handled (pcHeader magic):
 *   0xfffffffb  Go 1.2-1.15: nfunc, then functab of (entry, funcoff) uintptr pairs; _func and
 *               names are relative to the table start.
 *   0xfffffffa  Go 1.16-1.17: header with nfunc, nfiles, funcnameOffset, cuOffset, filetabOffset,
 *               pctabOffset, pclnOffset; functab of uintptr pairs at pclnOffset.
 *   0xfffffff0  Go 1.18-1.19 and 0xfffffff1 Go 1.20+: header adds textStart after nfiles;
 *               functab of uint32 (entryoff, funcoff) pairs, entries relative to textStart.
 * Every read is bounds-checked against the section image. */
#include "runtimes/symbols/symbols_internal.h"

#include <string.h>

typedef struct rd {
    const uint8_t *d;
    size_t len;
    int be;
    unsigned ptr;
} rd;

static int u32(const rd *r, uint64_t off, uint32_t *v)
{
    if (off > r->len || r->len - off < 4)
        return -1;
    const uint8_t *p = r->d + off;
    if (r->be)
        *v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    else
        *v = (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
    return 0;
}

static int uptr(const rd *r, uint64_t off, uint64_t *v)
{
    if (r->ptr == 4) {
        uint32_t x;
        if (u32(r, off, &x))
            return -1;
        *v = x;
        return 0;
    }
    uint32_t a, b;
    if (off > UINT64_MAX - 4 || u32(r, off, &a) || u32(r, off + 4, &b))
        return -1;
    *v = r->be ? ((uint64_t)a << 32 | b) : ((uint64_t)b << 32 | a);
    return 0;
}

/* Name at base+nameoff, NUL-terminated inside the section. */
static int name_at(const rd *r, uint64_t base, int32_t nameoff, const char **name, size_t *nl)
{
    if (nameoff < 0)
        return -1;
    uint64_t off = base + (uint64_t)nameoff;
    if (off < base || off >= r->len)
        return -1;
    size_t max = r->len - off;
    if (max > PP_SYM_MAX_NAME)
        max = PP_SYM_MAX_NAME;
    const uint8_t *p = r->d + off;
    const uint8_t *z = memchr(p, 0, max);
    if (!z || z == p)
        return -1;
    *name = (const char *)p;
    *nl = (size_t)(z - p);
    return 0;
}

static void add_func(pp_symtab *t, uint64_t entry, uint64_t next, const char *name, size_t nl,
                     long *n)
{
    uint64_t size = next > entry ? next - entry : 0;
    if (pp_symtab_add(t, entry, size, name, nl, PP_SYM_FUNC | PP_SYM_GLOBAL) == 0)
        (*n)++;
}

static long parse_118(const rd *r, uint64_t text_start, pp_symtab *t)
{
    uint64_t p = r->ptr, nfunc, text, nameoff, pcln;
    if (uptr(r, 8, &nfunc) || uptr(r, 8 + 2 * p, &text) || uptr(r, 8 + 3 * p, &nameoff) ||
        uptr(r, 8 + 7 * p, &pcln))
        return -1;
    if (text == 0)
        text = text_start;
    if (pcln >= r->len || nameoff >= r->len || nfunc > (r->len - pcln) / 8)
        return -1;
    long n = 0;
    for (uint64_t i = 0; i < nfunc; i++) {
        uint32_t entryoff, funcoff, nextoff, fentry, fname;
        if (u32(r, pcln + i * 8, &entryoff) || u32(r, pcln + i * 8 + 4, &funcoff) ||
            u32(r, pcln + (i + 1) * 8, &nextoff))
            break;
        uint64_t f = pcln + funcoff;
        if (u32(r, f, &fentry) || u32(r, f + 4, &fname))
            continue;
        const char *name;
        size_t nl;
        if (name_at(r, nameoff, (int32_t)fname, &name, &nl))
            continue;
        add_func(t, text + entryoff, text + nextoff, name, nl, &n);
    }
    return n;
}

static long parse_116(const rd *r, pp_symtab *t)
{
    uint64_t p = r->ptr, nfunc, nameoff, pcln;
    if (uptr(r, 8, &nfunc) || uptr(r, 8 + 2 * p, &nameoff) || uptr(r, 8 + 6 * p, &pcln))
        return -1;
    if (pcln >= r->len || nameoff >= r->len || nfunc > (r->len - pcln) / (2 * p))
        return -1;
    long n = 0;
    for (uint64_t i = 0; i < nfunc; i++) {
        uint64_t entry, funcoff, next;
        uint32_t fname;
        if (uptr(r, pcln + i * 2 * p, &entry) || uptr(r, pcln + i * 2 * p + p, &funcoff) ||
            uptr(r, pcln + (i + 1) * 2 * p, &next))
            break;
        if (funcoff > r->len)
            continue;
        uint64_t f = pcln + funcoff;
        if (u32(r, f + p, &fname))
            continue;
        const char *name;
        size_t nl;
        if (name_at(r, nameoff, (int32_t)fname, &name, &nl))
            continue;
        add_func(t, entry, next, name, nl, &n);
    }
    return n;
}

static long parse_12(const rd *r, pp_symtab *t)
{
    uint64_t p = r->ptr, nfunc, tab = 8 + p;
    if (uptr(r, 8, &nfunc))
        return -1;
    if (tab >= r->len || nfunc > (r->len - tab) / (2 * p))
        return -1;
    long n = 0;
    for (uint64_t i = 0; i < nfunc; i++) {
        uint64_t entry, funcoff, next;
        uint32_t fname;
        if (uptr(r, tab + i * 2 * p, &entry) || uptr(r, tab + i * 2 * p + p, &funcoff) ||
            uptr(r, tab + (i + 1) * 2 * p, &next))
            break;
        if (funcoff > r->len || u32(r, funcoff + p, &fname))
            continue;
        const char *name;
        size_t nl;
        if (name_at(r, 0, (int32_t)fname, &name, &nl))
            continue;
        add_func(t, entry, next, name, nl, &n);
    }
    return n;
}

static int version_of(uint32_t magic)
{
    switch (magic) {
    case 0xfffffffb:
        return 12;
    case 0xfffffffa:
        return 116;
    case 0xfffffff0:
    case 0xfffffff1:
        return 118;
    default:
        return 0;
    }
}

long pp_gopclntab_parse(const uint8_t *data, size_t len, uint64_t text_start, pp_symtab *t)
{
    if (!data || len < 16)
        return -1;
    rd r = {.d = data, .len = len, .be = 0};
    uint32_t magic;
    u32(&r, 0, &magic);
    int ver = version_of(magic);
    if (!ver) {
        r.be = 1; /* big-endian target */
        u32(&r, 0, &magic);
        ver = version_of(magic);
        if (!ver)
            return -1;
    }
    if (data[4] != 0 || data[5] != 0)
        return -1;
    if (data[6] != 1 && data[6] != 2 && data[6] != 4)
        return -1;
    if (data[7] != 4 && data[7] != 8)
        return -1;
    r.ptr = data[7];
    if (ver == 118)
        return parse_118(&r, text_start, t);
    if (ver == 116)
        return parse_116(&r, t);
    return parse_12(&r, t);
}
