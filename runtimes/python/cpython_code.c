/* Code objects of the target: names, file names and line tables read once and cached per code
 * object address, validated on every hit; the line-table decoders of 3.8/3.9 (co_lnotab), 3.10
 * (co_linetable) and 3.11+ (location table, Objects/locations.md). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "merge/strtab.h"
#include "runtimes/python/cpython_int.h"

#define OB_TYPE 8

/* ---- strings ---- */

static size_t put_utf8(char *o, uint32_t c)
{
    if (c == 0 || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff) {
        o[0] = '?';
        return 1;
    }
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xc0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xe0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        o[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    o[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

char *pp_py_read_str(pp_rmem *m, const pp_py_layout *L, uint64_t addr)
{
    uint8_t hdr[128];
    size_t hlen = L->u_compact_data + 8;
    if (!pp_rmem_valid_ptr(addr, 8) || hlen > sizeof(hdr) || L->u_state + 4 > hlen ||
        L->u_length + 8 > hlen || pp_rmem_read(m, addr, hdr, hlen) != 0)
        return NULL;
    uint64_t type;
    int64_t length;
    uint32_t state;
    memcpy(&type, hdr + OB_TYPE, 8);
    memcpy(&length, hdr + L->u_length, 8);
    memcpy(&state, hdr + L->u_state, 4);
    if (L->unicode_type && type != L->unicode_type)
        return NULL;
    unsigned kind = (state >> 2) & 7;
    bool compact = state & 0x20, ascii = state & 0x40;
    if ((kind != 1 && kind != 2 && kind != 4) || length < 0 || (ascii && kind != 1))
        return NULL;
    if (L->minor <= 11 && !(state & 0x80)) /* not "ready" (legacy wstr-only string) */
        return NULL;
    size_t n = length > PP_PY_STR_MAX ? PP_PY_STR_MAX : (size_t)length;
    uint64_t data;
    if (compact)
        data = addr + (ascii ? L->u_ascii_data : L->u_compact_data);
    else
        memcpy(&data, hdr + L->u_compact_data, 8);
    uint8_t raw[PP_PY_STR_MAX * 4];
    if (n && (!pp_rmem_valid_ptr(data, kind) || pp_rmem_read(m, data, raw, n * kind) != 0))
        return NULL;
    char *out = malloc(n * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t c;
        if (kind == 1) {
            c = raw[i];
            if (ascii && c >= 0x80)
                c = '?';
        } else if (kind == 2) {
            uint16_t v;
            memcpy(&v, raw + 2 * i, 2);
            c = v;
        } else {
            memcpy(&c, raw + 4 * i, 4);
        }
        o += put_utf8(o, c);
    }
    *o = '\0';
    return out;
}

/* ---- line tables ---- */

int pp_py_line_lnotab(const uint8_t *t, size_t n, int firstlineno, int lasti)
{
    /* Objects/codeobject.c PyCode_Addr2Line (3.8/3.9). */
    int line = firstlineno, addr = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        addr += t[i];
        if (addr > lasti)
            break;
        line += (int8_t)t[i + 1];
    }
    return line > 0 ? line : 0;
}

int pp_py_line_310(const uint8_t *t, size_t n, int firstlineno, int lasti)
{
    /* 3.10 (Objects/lnotab_notes.txt): (byte delta u8, line delta i8, -128 = no line) pairs;
     * each entry covers [start, end) in bytes. */
    if (lasti < 0)
        return firstlineno;
    int line = firstlineno, end = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        int start = end;
        end += t[i];
        int8_t ld = (int8_t)t[i + 1];
        int cur = -1;
        if (ld != -128) {
            line += ld;
            cur = line;
        }
        if (start <= lasti && lasti < end)
            return cur > 0 ? cur : 0;
    }
    return 0;
}

static unsigned varint(const uint8_t *t, size_t n, size_t *i)
{
    unsigned v = 0, shift = 0;
    while (*i < n && shift < 32) {
        uint8_t b = t[(*i)++];
        v |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64))
            break;
    }
    return v;
}

int pp_py_line_locations(const uint8_t *t, size_t n, int firstlineno, int idx)
{
    /* 3.11+ Objects/locations.md; semantics of PyCode_Addr2Line. */
    if (idx < 0)
        return 0;
    long line = firstlineno, addr = 0;
    size_t i = 0;
    while (i < n) {
        uint8_t b = t[i++];
        if (!(b & 0x80))
            continue; /* resynchronise on the next entry start */
        int code = (b >> 3) & 15, len = (b & 7) + 1;
        bool none = false;
        if (code == 15) {
            none = true;
        } else if (code == 14 || code == 13) {
            unsigned u = varint(t, n, &i);
            line += (u & 1) ? -(long)(u >> 1) : (long)(u >> 1);
        } else if (code >= 10) {
            line += code - 10;
        }
        while (i < n && !(t[i] & 0x80)) /* skip the rest of the entry */
            i++;
        if (addr <= idx && idx < addr + len)
            return none || line <= 0 || line > 0x7fffffff ? 0 : (int)line;
        addr += len;
    }
    return 0;
}

/* Whether a location table (3.11+) gives no line to any instruction: every entry is of code
 * 15, "no location" (an empty table too). */
static bool locations_lineless(const uint8_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((t[i] & 0x80) && ((t[i] >> 3) & 15) != 15)
            return false;
    return true;
}

/* ---- the code object cache ---- */

static void entry_free(pp_py_code *e)
{
    free(e->table);
    memset(e, 0, sizeof(*e));
}

/* Drops the entries (the interned strings stay: callers may hold them until close). */
static void cache_clear(pp_py_code_cache *c)
{
    size_t pos = 0;
    for (pp_py_code *e; (e = pp_htab_each(&c->slots, &pos));)
        entry_free(e);
    pp_htab_clear(&c->slots);
}

void pp_py_code_cache_free(pp_py_code_cache *c)
{
    cache_clear(c);
    pp_htab_free(&c->slots);
    pp_strtab_free(c->strs);
    c->strs = NULL;
}

/* What is compared on a hit: ob_type, the name/file/qualname/line-table pointers and the first
 * line. A code object freed and replaced by another at the same address differs in these. */
typedef struct code_hdr {
    uint64_t check[4];
    uint64_t type;
    int firstlineno;
} code_hdr;

static uint32_t hdr_size(const pp_py_layout *L)
{
    uint32_t need = L->co_firstlineno + 4;
    const uint32_t offs[4] = {L->co_filename, L->co_name, L->co_qualname, L->co_linetable};
    for (int i = 0; i < 4; i++)
        if (offs[i] + 8 > need)
            need = offs[i] + 8;
    return need;
}

#define HDR_MAX 512

static int parse_hdr(const uint8_t *buf, const pp_py_layout *L, code_hdr *h)
{
    const uint32_t offs[4] = {L->co_filename, L->co_name, L->co_qualname, L->co_linetable};
    memcpy(&h->type, buf + OB_TYPE, 8);
    if (L->code_type && h->type != L->code_type)
        return -1;
    for (int i = 0; i < 4; i++) {
        h->check[i] = 0;
        if (offs[i] || i != 2) /* co_qualname: 3.11+ only */
            memcpy(&h->check[i], buf + offs[i], 8);
    }
    memcpy(&h->firstlineno, buf + L->co_firstlineno, 4);
    if (!pp_rmem_valid_ptr(h->check[0], 8) || !pp_rmem_valid_ptr(h->check[1], 8))
        return -1;
    return 0;
}

/* fresh: past the page cache, whose pages may be older than what was just read */
static int read_hdr(pp_rmem *m, const pp_py_layout *L, uint64_t addr, code_hdr *h, bool fresh)
{
    uint8_t buf[HDR_MAX];
    uint32_t need = hdr_size(L);
    if (!pp_rmem_valid_ptr(addr, 8) || need > sizeof(buf) ||
        (fresh ? pp_rmem_read(m, addr, buf, need) : pp_rmem_read_cached(m, addr, buf, need)) != 0)
        return -1;
    return parse_hdr(buf, L, h);
}

static bool hdr_matches(const pp_py_code *e, const code_hdr *h)
{
    return memcmp(e->check, h->check, sizeof(h->check)) == 0 && e->firstlineno == h->firstlineno;
}

static uint8_t *read_bytes(pp_rmem *m, const pp_py_layout *L, uint64_t addr, size_t *len)
{
    uint8_t hdr[64];
    int64_t size;
    uint64_t type;
    *len = 0;
    if (!pp_rmem_valid_ptr(addr, 8) || L->bytes_size + 8 > sizeof(hdr) ||
        pp_rmem_read(m, addr, hdr, L->bytes_size + 8) != 0)
        return NULL;
    memcpy(&type, hdr + OB_TYPE, 8);
    memcpy(&size, hdr + L->bytes_size, 8);
    if ((L->bytes_type && type != L->bytes_type) || size < 0 || size > PP_PY_LINETABLE_MAX)
        return NULL;
    uint8_t *t = malloc(size ? (size_t)size : 1);
    if (!t || (size && pp_rmem_read(m, addr + L->bytes_data, t, (size_t)size) != 0)) {
        free(t);
        return NULL;
    }
    *len = (size_t)size;
    return t;
}

/* The string at addr, interned for the handle's lifetime ("<invalid>" when unreadable). */
static const char *intern_str(pp_py_code_cache *c, pp_rmem *m, const pp_py_layout *L, uint64_t addr)
{
    if (!c->strs && !(c->strs = pp_strtab_new()))
        return NULL;
    if (pp_strtab_bytes(c->strs) > PP_PY_STRINGS_MAX)
        return "<too many names>";
    char *s = pp_py_read_str(m, L, addr);
    uint32_t id = pp_strtab_intern_cstr(c->strs, s ? s : "<invalid>");
    free(s);
    return id == UINT32_MAX ? NULL : pp_strtab_get(c->strs, id);
}

static int fill(pp_py_code_cache *c, pp_py_code *e, pp_rmem *m, const pp_py_layout *L,
                uint64_t addr, const code_hdr *h)
{
    e->addr = addr;
    memcpy(e->check, h->check, sizeof(e->check));
    e->firstlineno = h->firstlineno;
    e->last_idx = INT_MIN;
    e->last_line = 0;
    e->file = intern_str(c, m, L, h->check[0]);
    e->name = intern_str(c, m, L, L->co_qualname ? h->check[2] : h->check[1]);
    e->table = read_bytes(m, L, h->check[3], &e->table_len);
    /* 3.13+ shim code objects are static ones of the interpreter whose co_filename is their
     * co_name (the same string object: "__init__" for _Py_InitCleanup) and whose line table
     * gives no line (one "no location" entry); compiled code has lines. The address from
     * .symtab, when there is one, names it exactly. */
    e->internal = (L->shim_code && addr == L->shim_code) ||
                  (L->minor >= 13 && L->lines == PP_PY_LOCATIONS && h->check[0] == h->check[1] &&
                   e->table && locations_lineless(e->table, e->table_len));
    /* The strings and the table were read after the header (fresh: the page cache may hold a
     * page from before the code object was replaced): when the header still matches, read again,
     * the code object held them throughout. Otherwise a name freed and reused by another string
     * (names are reused as fast as code objects) would pair one function's name with another's
     * first line. */
    code_hdr now;
    if (!e->file || !e->name || read_hdr(m, L, addr, &now, true) != 0 || !hdr_matches(e, &now)) {
        entry_free(e);
        return -1;
    }
    return 0;
}

static pp_py_code *lookup(pp_py_code_cache *c, uint64_t addr)
{
    pp_htab_probe p;
    for (pp_py_code *e = pp_htab_first(&c->slots, pp_hash_u64(addr), &p); e;
         e = pp_htab_next(&c->slots, &p))
        if (e->addr == addr)
            return e;
    return NULL;
}

void pp_py_code_prefetch(pp_py_code_cache *c, pp_rmem *m, const pp_py_layout *L,
                         const uint64_t *addrs, size_t n)
{
    enum { MAXV = 64 };
    const unsigned long long QUEUED = ~0ull;
    uint64_t va[MAXV];
    size_t lens[MAXV];
    uint8_t *bufs[MAXV];
    pp_py_code *ents[MAXV];
    bool ok[MAXV];
    static __thread uint8_t hdrs[MAXV][HDR_MAX];
    uint32_t need = hdr_size(L);
    size_t k = 0;
    if (need > HDR_MAX)
        return;
    for (size_t i = 0; i < n && k < MAXV; i++) {
        pp_py_code *e = lookup(c, addrs[i]);
        if (!e || e->checked_gen == m->gen || e->checked_gen == QUEUED)
            continue;
        e->checked_gen = QUEUED; /* queued (dedupes repeated code objects) */
        ents[k] = e;
        va[k] = e->addr;
        lens[k] = need;
        bufs[k] = hdrs[k];
        k++;
    }
    if (k == 0)
        return;
    pp_rmem_readv(m, va, lens, bufs, k, ok);
    for (size_t i = 0; i < k; i++) {
        code_hdr h;
        bool good = ok[i] && parse_hdr(hdrs[i], L, &h) == 0 && hdr_matches(ents[i], &h);
        /* Not confirmed: pp_py_code_get re-reads it (and reloads it if it changed). */
        ents[i]->checked_gen = good ? m->gen : 0;
    }
}

pp_py_code *pp_py_code_cached(pp_py_code_cache *c, uint64_t addr)
{
    return lookup(c, addr);
}

pp_py_code *pp_py_code_get(pp_py_code_cache *c, pp_rmem *m, const pp_py_layout *L, uint64_t addr)
{
    pp_py_code *known = lookup(c, addr);
    if (known && known->checked_gen == m->gen) {
        c->hits++;
        return known; /* validated in this sample already */
    }
    code_hdr h;
    if (read_hdr(m, L, addr, &h, false) != 0)
        return NULL;
    if (known) {
        if (hdr_matches(known, &h)) {
            c->hits++;
            known->checked_gen = m->gen;
            return known;
        }
        /* The address now holds another code object: reload in place. */
        c->misses++;
        free(known->table);
        known->table = NULL;
        if (fill(c, known, m, L, addr, &h) != 0) {
            pp_htab_remove(&c->slots, known);
            return NULL;
        }
        known->checked_gen = m->gen;
        return known;
    }
    c->misses++;
    if (!c->slots.cap) { /* sized once: the cache starts over rather than grow */
        PP_HTAB_INIT(&c->slots, pp_py_code, 50);
        if (pp_htab_reserve(&c->slots, PP_PY_CODE_CACHE) < 0)
            return NULL;
    }
    if (pp_htab_count(&c->slots) >= PP_PY_CODE_CACHE) /* full: start over (cheap, rare) */
        cache_clear(c);
    pp_py_code *e = pp_htab_add(&c->slots, pp_hash_u64(addr));
    if (!e)
        return NULL;
    if (fill(c, e, m, L, addr, &h) != 0) {
        pp_htab_remove(&c->slots, e);
        return NULL;
    }
    e->checked_gen = m->gen;
    return e;
}

int pp_py_code_line(pp_py_code *co, const pp_py_layout *L, int idx)
{
    if (idx == co->last_idx)
        return co->last_line;
    int line = 0;
    if (co->table) {
        switch (L->lines) {
        case PP_PY_LNOTAB:
            line = pp_py_line_lnotab(co->table, co->table_len, co->firstlineno, idx);
            break;
        case PP_PY_LINES310:
            line = pp_py_line_310(co->table, co->table_len, co->firstlineno,
                                  idx > 0x3fffffff || idx < -0x3fffffff ? -1 : 2 * idx);
            break;
        case PP_PY_LOCATIONS:
            line = pp_py_line_locations(co->table, co->table_len, co->firstlineno, idx);
            break;
        }
    }
    co->last_idx = idx;
    co->last_line = line;
    return line;
}
