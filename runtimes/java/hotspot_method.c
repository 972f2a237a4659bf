/* Naming a HotSpot Method* from the JVM's memory (hotspot.h): Method._constMethod ->
 * ConstMethod (_constants, _name_index, _signature_index) -> the ConstantPool's slots (Symbol*)
 * and its _pool_holder's Klass._name, formatted as async-profiler's `sig` output writes a Java
 * frame: "pkg/Class.method(Sig)Ret" with ';' as '|'. */
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/utf8.h"
#include "runtimes/java/hotspot.h"

#define SYM_MAX 512 /* bytes of one Symbol kept (class, method name, signature) */

typedef struct method_ent {
    uint64_t method;
    pp_hs_method_id id; /* its identity when it was named */
    char *text;
} method_ent;

void pp_hs_methods_init(pp_hs_proc *p)
{
    PP_HTAB_INIT(&p->methods, method_ent, 50);
    p->method_bytes = 0;
}

void pp_hs_methods_free(pp_hs_proc *p)
{
    size_t pos = 0;
    method_ent *e;
    while ((e = pp_htab_each(&p->methods, &pos)))
        free(e->text);
    pp_htab_free(&p->methods);
    p->method_bytes = 0;
}

static int rd_ptr(pp_hs_proc *p, uint64_t addr, uint64_t *v)
{
    return pp_rmem_read_cached(&p->mem, addr, v, 8) == 0 && pp_rmem_valid_ptr(*v, 8) ? 0 : -1;
}

/* A Symbol's bytes (at most cap, cut at SYM_MAX) into out; the length read, or -1. */
static int rd_symbol(pp_hs_proc *p, uint64_t sym, char *out, size_t cap)
{
    const pp_hs_layout *L = &p->L;
    uint16_t n;
    if (!pp_rmem_valid_ptr(sym, 4) ||
        pp_rmem_read_cached(&p->mem, sym + L->sym_length, &n, sizeof(n)) != 0 || n == 0)
        return -1;
    size_t want = n < cap ? n : cap;
    if (pp_rmem_read_cached(&p->mem, sym + L->sym_body, out, want) != 0)
        return -1;
    if (memchr(out, 0, want))
        return -1; /* HotSpot's modified UTF-8 never holds a NUL byte */
    return (int)want;
}

/* The Symbol* in constant-pool slot idx of cp (checked against the pool's length). */
static int cp_symbol(pp_hs_proc *p, uint64_t cp, int32_t cp_len, uint16_t idx, uint64_t *sym)
{
    if (idx == 0 || (int32_t)idx >= cp_len)
        return -1;
    return rd_ptr(p, cp + p->L.cp_size + (uint64_t)idx * 8, sym);
}

/* pp_hs_method_text, with the method's identity read in *id. */
static int method_text(pp_hs_proc *p, uint64_t method, char *out, size_t cap, pp_hs_method_id *id)
{
    const pp_hs_layout *L = &p->L;
    uint64_t cm, cp, holder, kname, nsym, ssym;
    uint16_t ni, si;
    int32_t cp_len;
    if (cap < 8 || !pp_rmem_valid_ptr(method, 8) || rd_ptr(p, method + L->method_const, &cm) ||
        rd_ptr(p, cm + L->cm_constants, &cp) ||
        pp_rmem_read_cached(&p->mem, cm + L->cm_name_index, &ni, 2) ||
        pp_rmem_read_cached(&p->mem, cm + L->cm_sig_index, &si, 2) ||
        pp_rmem_read_cached(&p->mem, cp + L->cp_length, &cp_len, 4) || cp_len <= 0 ||
        cp_len > 65536 || rd_ptr(p, cp + L->cp_holder, &holder) ||
        rd_ptr(p, holder + L->klass_name, &kname) || cp_symbol(p, cp, cp_len, ni, &nsym) ||
        cp_symbol(p, cp, cp_len, si, &ssym))
        return -1;
    char raw[3 * SYM_MAX + 2];
    int k = rd_symbol(p, kname, raw, SYM_MAX);
    if (k <= 0)
        return -1;
    raw[k] = '.';
    int n = rd_symbol(p, nsym, raw + k + 1, SYM_MAX);
    if (n <= 0)
        return -1;
    char *sig = raw + k + 1 + n;
    int s = rd_symbol(p, ssym, sig, SYM_MAX);
    if (s <= 1 || sig[0] != '(')
        return -1; /* not a method descriptor: not a Method, or one being freed */
    for (int i = 0; i < s; i++)
        if (sig[i] == ';')
            sig[i] = '|';
    size_t total = (size_t)(k + 1 + n + s);
    pp_utf8_copy(out, cap < PP_HS_TEXT_MAX ? cap : PP_HS_TEXT_MAX, raw, total);
    id->cm = cm;
    id->kname = kname;
    id->idx = (uint32_t)ni | (uint32_t)si << 16;
    return 0;
}

int pp_hs_method_identity(pp_hs_proc *p, uint64_t method, pp_hs_method_id *id)
{
    const pp_hs_layout *L = &p->L;
    uint64_t cp, holder;
    uint16_t ni, si;
    if (!pp_rmem_valid_ptr(method, 8) || rd_ptr(p, method + L->method_const, &id->cm) ||
        rd_ptr(p, id->cm + L->cm_constants, &cp) ||
        pp_rmem_read_cached(&p->mem, id->cm + L->cm_name_index, &ni, 2) ||
        pp_rmem_read_cached(&p->mem, id->cm + L->cm_sig_index, &si, 2) ||
        rd_ptr(p, cp + L->cp_holder, &holder) || rd_ptr(p, holder + L->klass_name, &id->kname))
        return -1;
    id->idx = (uint32_t)ni | (uint32_t)si << 16;
    return 0;
}

int pp_hs_method_text(pp_hs_proc *p, uint64_t method, char *out, size_t cap)
{
    pp_hs_method_id id;
    return method_text(p, method, out, cap, &id);
}

static method_ent *cached(pp_hs_proc *p, uint64_t method, uint64_t h)
{
    pp_htab_probe pr;
    for (method_ent *e = pp_htab_first(&p->methods, h, &pr); e; e = pp_htab_next(&p->methods, &pr))
        if (e->method == method)
            return e;
    return NULL;
}

/* Caches text for method (one entry per identity seen at that address). The cached text, or
 * NULL. */
static const char *cache_put(pp_hs_proc *p, uint64_t method, uint64_t h, const pp_hs_method_id *id,
                             const char *text)
{
    char *copy = strdup(text);
    if (!copy)
        return NULL;
    if (pp_htab_count(&p->methods) >= PP_HS_METHODS_MAX ||
        p->method_bytes >= PP_HS_METHOD_BYTES_MAX) {
        pp_hs_methods_free(p); /* bounded: start over */
        pp_hs_methods_init(p);
    }
    method_ent *e = pp_htab_add(&p->methods, h);
    if (!e) {
        free(copy);
        return NULL;
    }
    *e = (method_ent){.method = method, .id = *id, .text = copy};
    p->method_bytes += strlen(copy) + 1 + sizeof(*e);
    return copy;
}

const char *pp_hs_method_name(pp_hs_proc *p, uint64_t method)
{
    uint64_t h = pp_hash_u64(method);
    method_ent *e = cached(p, method, h);
    if (e)
        return e->text;
    char text[PP_HS_TEXT_MAX];
    pp_hs_method_id id;
    if (method_text(p, method, text, sizeof(text), &id) != 0)
        return NULL; /* not cached: a method read while being set up is named next time */
    return cache_put(p, method, h, &id, text);
}

const char *pp_hs_method_name_checked(pp_hs_proc *p, uint64_t method, unsigned check,
                                      unsigned (*check_of)(const pp_hs_method_id *id))
{
    uint64_t h = pp_hash_u64(method);
    /* every identity seen at this address is kept: classes loaded and unloaded in turn reuse
     * the same Method (and ConstMethod) addresses for methods of other classes */
    pp_htab_probe pr;
    for (method_ent *e = pp_htab_first(&p->methods, h, &pr); e; e = pp_htab_next(&p->methods, &pr))
        if (e->method == method && check_of(&e->id) == check)
            return e->text;
    char text[PP_HS_TEXT_MAX];
    pp_hs_method_id id;
    if (method_text(p, method, text, sizeof(text), &id) != 0 || check_of(&id) != check)
        return NULL; /* another method there now, or none */
    return cache_put(p, method, h, &id, text);
}
