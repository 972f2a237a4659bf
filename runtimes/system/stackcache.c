/* Stack traces by hash, in two generations (see stackcache.h). */
#include "runtimes/system/stackcache.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"

/* Keyed by the trace's hash (never 0), which the BPF program computed: the table uses it as it
 * is. 4-aligned (the hash in halves), so that a slot is 20 bytes rather than 24. */
typedef struct {
    uint32_t hash_lo, hash_hi;
    uint32_t off; /* into ips */
    uint32_t n;
} slot;

typedef struct {
    pp_htab tab; /* of slot */
    uint64_t *ips;
    size_t nips, ipscap;
} gen;

struct pp_stackcache {
    gen cur, old;
    size_t max_entries;
};

static void gen_init(gen *g)
{
    memset(g, 0, sizeof(*g));
    PP_HTAB_INIT(&g->tab, slot, 75);
}

static void gen_free(gen *g)
{
    pp_htab_free(&g->tab);
    free(g->ips);
    gen_init(g);
}

static const slot *gen_find(const gen *g, uint64_t hash)
{
    pp_htab_probe p;
    for (const slot *s = pp_htab_first(&g->tab, hash, &p); s; s = pp_htab_next(&g->tab, &p))
        if (s->hash_lo == (uint32_t)hash && s->hash_hi == (uint32_t)(hash >> 32))
            return s;
    return NULL;
}

pp_stackcache *pp_stackcache_new(size_t max_entries)
{
    pp_stackcache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->max_entries = max_entries ? max_entries : 1;
    gen_init(&c->cur);
    gen_init(&c->old);
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
    if (!g->tab.cap && pp_htab_reserve(&g->tab, 768) < 0) /* 1024 slots at 3/4 */
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
    slot *s = pp_htab_add(&g->tab, hash);
    if (!s)
        return -1;
    memcpy(g->ips + g->nips, ips, n * sizeof(*ips));
    *s = (slot){(uint32_t)hash, (uint32_t)(hash >> 32), (uint32_t)g->nips, (uint32_t)n};
    g->nips += n;
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
    return pp_htab_count(&c->cur.tab) >= c->max_entries;
}

void pp_stackcache_rotate(pp_stackcache *c)
{
    gen_free(&c->old);
    c->old = c->cur;
    gen_init(&c->cur);
}

void pp_stackcache_drop_old(pp_stackcache *c)
{
    gen_free(&c->old);
}

size_t pp_stackcache_count(const pp_stackcache *c)
{
    return pp_htab_count(&c->cur.tab) + pp_htab_count(&c->old.tab);
}
