/* See hashtab.h. */
#include "base/hashtab.h"

#include <stdlib.h>
#include <string.h>

#define MIN_CAP 8
#define MAX_CAP ((size_t)1 << 31) /* slot indexes come from the 32-bit tags */

static inline uint32_t *tag_at(const pp_htab *t, size_t i)
{
    return (uint32_t *)(void *)(t->slots + i * t->stride);
}

static inline void *ent_at(const pp_htab *t, size_t i)
{
    return t->slots + i * t->stride + t->off;
}

void pp_htab_init(pp_htab *t, size_t esize, size_t align, unsigned max_load_pct)
{
    if (max_load_pct == 0)
        max_load_pct = 50;
    if (max_load_pct < 25)
        max_load_pct = 25;
    if (max_load_pct > 90)
        max_load_pct = 90;
    /* The tag takes the first 4 bytes; the entry starts at its own alignment after them. */
    size_t a = align > 4 ? 8 : 4;
    *t = (pp_htab){
        .esize = esize, .off = a, .stride = (a + esize + a - 1) / a * a, .max_load = max_load_pct};
}

void pp_htab_free(pp_htab *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = t->n = 0;
}

void pp_htab_clear(pp_htab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        *tag_at(t, i) = 0;
    t->n = 0;
}

/* Moves every entry into ncap slots (a power of two that holds them). */
static int rehash(pp_htab *t, size_t ncap)
{
    if (ncap > MAX_CAP || ncap > SIZE_MAX / t->stride)
        return -1;
    pp_htab n = *t;
    n.cap = ncap;
    n.slots = malloc(ncap * t->stride);
    if (!n.slots)
        return -1;
    for (size_t j = 0; j < ncap; j++)
        *tag_at(&n, j) = 0;
    size_t mask = ncap - 1;
    for (size_t i = 0; i < t->cap; i++) {
        uint32_t tag = *tag_at(t, i);
        if (!tag)
            continue;
        size_t j = tag & mask;
        while (*tag_at(&n, j))
            j = (j + 1) & mask;
        memcpy(tag_at(&n, j), tag_at(t, i), t->stride);
    }
    free(t->slots);
    *t = n;
    return 0;
}

int pp_htab_reserve(pp_htab *t, size_t n)
{
    size_t cap = MIN_CAP;
    while (cap < MAX_CAP && n * 100 > cap * t->max_load)
        cap *= 2;
    if (n * 100 > cap * t->max_load)
        return -1;
    return cap > t->cap ? rehash(t, cap) : 0;
}

void *pp_htab_add(pp_htab *t, uint64_t h)
{
    if (pp_htab_full(t) && rehash(t, t->cap ? t->cap * 2 : MIN_CAP) < 0) {
        /* Out of memory: go on filling up to half-way between the load and full. */
        unsigned hard = (t->max_load + 100) / 2;
        if ((t->n + 1) * 100 > t->cap * hard || t->n + 1 >= t->cap)
            return NULL;
    }
    uint32_t tag = pp_htab_tag(h);
    size_t mask = t->cap - 1, i = tag & mask;
    while (*tag_at(t, i))
        i = (i + 1) & mask;
    *tag_at(t, i) = tag;
    t->n++;
    void *e = ent_at(t, i);
    memset(e, 0, t->esize);
    return e;
}

/* Empties slot i, then moves back the entries after it whose probe sequence passes through the
 * hole, so that no sequence is cut (Knuth's algorithm R). Entries only move towards i. */
static void remove_at(pp_htab *t, size_t i)
{
    size_t mask = t->cap - 1, hole = i;
    for (size_t j = (i + 1) & mask; *tag_at(t, j); j = (j + 1) & mask) {
        size_t home = *tag_at(t, j) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            memcpy(tag_at(t, hole), tag_at(t, j), t->stride);
            hole = j;
        }
    }
    *tag_at(t, hole) = 0;
    t->n--;
}

void pp_htab_remove(pp_htab *t, void *ent)
{
    remove_at(t, (size_t)((unsigned char *)ent - t->off - t->slots) / t->stride);
}

size_t pp_htab_filter(pp_htab *t, bool (*keep)(void *ent, void *arg), void *arg)
{
    if (!t->n)
        return 0;
    /* Start at an empty slot: no run of entries wraps past the start, so the backward shifts
     * only move not yet visited entries into the current slot, and each is seen once. */
    size_t mask = t->cap - 1, start = 0, removed = 0;
    while (*tag_at(t, start))
        start++;
    for (size_t k = 0; k < t->cap;) {
        size_t i = (start + k) & mask;
        if (*tag_at(t, i) && !keep(ent_at(t, i), arg)) {
            remove_at(t, i); /* slot i may now hold a moved entry: look at it again */
            removed++;
        } else {
            k++;
        }
    }
    return removed;
}

void *pp_htab_each(const pp_htab *t, size_t *pos)
{
    for (size_t i = *pos; i < t->cap; i++) {
        if (*tag_at(t, i)) {
            *pos = i + 1;
            return ent_at(t, i);
        }
    }
    *pos = t->cap;
    return NULL;
}

size_t pp_htab_bytes(const pp_htab *t)
{
    return t->cap * t->stride;
}

/* ---- u64 -> u64 map ---- */

int pp_u64map_put(pp_u64map *m, uint64_t key, uint64_t val)
{
    uint64_t *v = pp_u64map_get(m, key);
    if (v) {
        *v = val;
        return 0;
    }
    if (!m->t.stride) {
        PP_HTAB_INIT(&m->t, pp_u64map_ent, 50);
        if (pp_htab_reserve(&m->t, 32) < 0) /* 64 slots: most maps hold more than a few */
            return -1;
    }
    pp_u64map_ent *e = pp_htab_add(&m->t, pp_hash_u64(key));
    if (!e)
        return -1;
    *e = (pp_u64map_ent){key, val};
    return 0;
}

void pp_u64map_free(pp_u64map *m)
{
    pp_htab_free(&m->t);
}
