/* Kernel address -> name cache for names given by a kernel namer (symbolizer.h). Open
 * addressing over (ip, string id); names interned once. Bounded: when it holds max_entries it
 * starts over, so a long continuous run never grows it without limit. */
#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"
#include "merge/strtab.h"
#include "runtimes/symbols/symbols_internal.h"

/* 4-aligned (the address in halves), so that a slot is 16 bytes rather than 24. */
typedef struct {
    uint32_t ip_lo, ip_hi;
    uint32_t id; /* string id */
} kent;

struct pp_kcache {
    pp_strtab *names;
    pp_htab slots; /* of kent, sized for max entries at creation */
    size_t max;
};

pp_kcache *pp_kcache_new(size_t max_entries)
{
    pp_kcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->max = max_entries ? max_entries : 65536;
    PP_HTAB_INIT(&c->slots, kent, 50);
    c->names = pp_strtab_new();
    if (pp_htab_reserve(&c->slots, c->max) < 0 || !c->names) {
        pp_kcache_free(c);
        return NULL;
    }
    return c;
}

void pp_kcache_free(pp_kcache *c)
{
    if (!c)
        return;
    pp_htab_free(&c->slots);
    pp_strtab_free(c->names);
    free(c);
}

static kent *find(const pp_kcache *c, uint64_t ip)
{
    pp_htab_probe p;
    for (kent *e = pp_htab_first(&c->slots, pp_hash_u64(ip), &p); e;
         e = pp_htab_next(&c->slots, &p))
        if (e->ip_lo == (uint32_t)ip && e->ip_hi == (uint32_t)(ip >> 32))
            return e;
    return NULL;
}

int pp_kcache_get(const pp_kcache *c, uint64_t ip, const char **name)
{
    const kent *e = find(c, ip);
    if (e)
        *name = pp_strtab_get(c->names, e->id);
    return e != NULL;
}

int pp_kcache_put(pp_kcache *c, uint64_t ip, const char *name)
{
    if (pp_htab_count(&c->slots) >= c->max) {
        pp_strtab *fresh = pp_strtab_new();
        if (!fresh)
            return -1;
        pp_strtab_free(c->names);
        c->names = fresh;
        pp_htab_clear(&c->slots);
    }
    uint32_t id = pp_strtab_intern_cstr(c->names, name);
    if (id == UINT32_MAX)
        return -1;
    kent *e = find(c, ip);
    if (!e && !(e = pp_htab_add(&c->slots, pp_hash_u64(ip))))
        return -1;
    *e = (kent){(uint32_t)ip, (uint32_t)(ip >> 32), id};
    return 0;
}
