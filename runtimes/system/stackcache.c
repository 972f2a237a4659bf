/* Stack traces by hash, in two generations (see stackcache.h). */
#include "runtimes/system/stackcache.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash; /* 0: empty slot */
    uint32_t off;  /* into ips */
    uint32_t n;
} slot;

typedef struct {
    slot *tab;
    size_t cap, used; /* cap: a power of two */
    uint64_t *ips;
    size_t nips, ipscap;
} gen;

struct pp_stackcache {
    gen cur, old;
    size_t max_entries;
};

static void gen_free(gen *g)
{
    free(g->tab);
    free(g->ips);
    memset(g, 0, sizeof(*g));
}

static size_t slot_of(uint64_t hash, size_t cap)
{
    uint64_t h = hash * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

static const slot *gen_find(const gen *g, uint64_t hash)
{
    if (!g->cap)
        return NULL;
    for (size_t s = slot_of(hash, g->cap);; s = (s + 1) & (g->cap - 1)) {
        if (g->tab[s].hash == hash)
            return &g->tab[s];
        if (!g->tab[s].hash)
            return NULL;
    }
}

static int gen_grow(gen *g)
{
    size_t ncap = g->cap ? g->cap * 2 : 1024;
    slot *nt = calloc(ncap, sizeof(*nt));
    if (!nt)
        return -1;
    for (size_t i = 0; i < g->cap; i++) {
        if (!g->tab[i].hash)
            continue;
        size_t s = slot_of(g->tab[i].hash, ncap);
        while (nt[s].hash)
            s = (s + 1) & (ncap - 1);
        nt[s] = g->tab[i];
    }
    free(g->tab);
    g->tab = nt;
    g->cap = ncap;
    return 0;
}

pp_stackcache *pp_stackcache_new(size_t max_entries)
{
    pp_stackcache *c = calloc(1, sizeof(*c));
    if (c)
        c->max_entries = max_entries ? max_entries : 1;
    return c;
}

void pp_stackcache_free(pp_stackcache *c)
{
    if (!c)
        return;
    gen_free(&c->cur);
    gen_free(&c->old);
    free(c);
}

int pp_stackcache_add(pp_stackcache *c, uint64_t hash, const uint64_t *ips, size_t n)
{
    gen *g = &c->cur;
    if (!hash || gen_find(g, hash))
        return 0;
    if (n > PP_STACKCACHE_MAX_DEPTH)
        n = PP_STACKCACHE_MAX_DEPTH;
    if ((g->used + 1) * 4 > g->cap * 3 && gen_grow(g) < 0)
        return -1;
    if (g->nips + n > g->ipscap) {
        size_t ncap = g->ipscap ? g->ipscap * 2 : 4096;
        while (ncap < g->nips + n)
            ncap *= 2;
        if (ncap > UINT32_MAX)
            return -1;
        uint64_t *ni = realloc(g->ips, ncap * sizeof(*ni));
        if (!ni)
            return -1;
        g->ips = ni;
        g->ipscap = ncap;
    }
    memcpy(g->ips + g->nips, ips, n * sizeof(*ips));
    size_t s = slot_of(hash, g->cap);
    while (g->tab[s].hash)
        s = (s + 1) & (g->cap - 1);
    g->tab[s] = (slot){.hash = hash, .off = (uint32_t)g->nips, .n = (uint32_t)n};
    g->nips += n;
    g->used++;
    return 0;
}

const uint64_t *pp_stackcache_get(const pp_stackcache *c, uint64_t hash, size_t *n)
{
    const gen *gens[2] = {&c->cur, &c->old};
    for (int i = 0; hash && i < 2; i++) {
        const slot *s = gen_find(gens[i], hash);
        if (s) {
            *n = s->n;
            return gens[i]->ips + s->off;
        }
    }
    *n = 0;
    return NULL;
}

bool pp_stackcache_full(const pp_stackcache *c)
{
    return c->cur.used >= c->max_entries;
}

void pp_stackcache_rotate(pp_stackcache *c)
{
    gen_free(&c->old);
    c->old = c->cur;
    memset(&c->cur, 0, sizeof(c->cur));
}

void pp_stackcache_drop_old(pp_stackcache *c)
{
    gen_free(&c->old);
}

size_t pp_stackcache_count(const pp_stackcache *c)
{
    return c->cur.used + c->old.used;
}
