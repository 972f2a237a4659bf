/* Kernel address -> name cache for names given by a kernel namer (symbolizer.h). Open
 * addressing over (ip, string id); names interned once. Bounded: when it holds max_entries it
 * starts over, so a long continuous run never grows it without limit. */
#include <stdlib.h>
#include <string.h>

#include "merge/strtab.h"
#include "runtimes/symbols/symbols_internal.h"

typedef struct {
    uint64_t ip;
    uint32_t id; /* string id + 1; 0 = empty slot */
} kent;

struct pp_kcache {
    pp_strtab *names;
    kent *slots;
    size_t cap, used, max;
};

pp_kcache *pp_kcache_new(size_t max_entries)
{
    pp_kcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->max = max_entries ? max_entries : 65536;
    c->cap = 1;
    while (c->cap < c->max * 2)
        c->cap <<= 1;
    c->slots = calloc(c->cap, sizeof(*c->slots));
    c->names = pp_strtab_new();
    if (!c->slots || !c->names) {
        pp_kcache_free(c);
        return NULL;
    }
    return c;
}

void pp_kcache_free(pp_kcache *c)
{
    if (!c)
        return;
    free(c->slots);
    pp_strtab_free(c->names);
    free(c);
}

static size_t slot_of(uint64_t ip, size_t cap)
{
    uint64_t h = ip * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

int pp_kcache_get(const pp_kcache *c, uint64_t ip, const char **name)
{
    for (size_t s = slot_of(ip, c->cap); c->slots[s].id; s = (s + 1) & (c->cap - 1)) {
        if (c->slots[s].ip == ip) {
            *name = pp_strtab_get(c->names, c->slots[s].id - 1);
            return 1;
        }
    }
    return 0;
}

int pp_kcache_put(pp_kcache *c, uint64_t ip, const char *name)
{
    if (c->used >= c->max) {
        pp_strtab *fresh = pp_strtab_new();
        if (!fresh)
            return -1;
        pp_strtab_free(c->names);
        c->names = fresh;
        memset(c->slots, 0, c->cap * sizeof(*c->slots));
        c->used = 0;
    }
    uint32_t id = pp_strtab_intern_cstr(c->names, name);
    if (id == UINT32_MAX)
        return -1;
    size_t s = slot_of(ip, c->cap);
    while (c->slots[s].id && c->slots[s].ip != ip)
        s = (s + 1) & (c->cap - 1);
    if (!c->slots[s].id)
        c->used++;
    c->slots[s] = (kent){ip, id + 1};
    return 0;
}
