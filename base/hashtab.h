/* The one open-addressing hash table of polyprof: fixed-size entries (a struct of the caller's)
 * stored inline, linear probing over a power-of-two number of slots, deletion by backward shift
 * (no tombstones). The caller hashes its key with base/hash.h and compares keys itself; the
 * table keeps, just before each entry (in the same cache line), the low 32 bits of its hash (its
 * tag): probes compare tags before comparing keys, and growing needs no callback. A slot costs
 * 4 bytes more than a 4-aligned entry, 8 more than an 8-aligned one.
 *
 * Lookup, without callbacks:
 *     pp_htab t;
 *     PP_HTAB_INIT(&t, my_ent, 50);
 *     ...
 *     pp_htab_probe p;
 *     for (my_ent *e = pp_htab_first(&t, h, &p); e; e = pp_htab_next(&t, &p))
 *         if (e->key == key)
 *             return e;
 *     my_ent *e = pp_htab_add(&t, h);  // after a miss; NULL when out of memory
 *
 * Tables whose entries must keep an order or dense ids (interned strings, a profile's stacks)
 * keep their entries in an array and put uint32_t indexes in the table.
 *
 * Pointers to entries stay valid until the next pp_htab_add, remove, filter, reserve or clear. */
#ifndef PP_HASHTAB_H
#define PP_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"

typedef struct pp_htab {
    unsigned char *slots; /* slot i at slots + i * stride: uint32_t tag (0: empty), entry at off */
    size_t cap;           /* slots: 0 or a power of two */
    size_t n;             /* entries held */
    size_t esize, stride, off;
    unsigned max_load; /* percent of the slots in use past which the table grows */
} pp_htab;

/* An empty table of entries of esize bytes aligned to align (at most 8) that grows to stay at
 * most max_load_pct % full (between 25 and 90; 0 means 50). Allocates nothing. */
void pp_htab_init(pp_htab *t, size_t esize, size_t align, unsigned max_load_pct);
#define PP_HTAB_INIT(t, type, max_load_pct)                                                        \
    pp_htab_init((t), sizeof(type), _Alignof(type), (max_load_pct))
/* Frees the slots; the table is empty and usable again (same entry size and load). */
void pp_htab_free(pp_htab *t);
/* Drops every entry, keeping the slots. */
void pp_htab_clear(pp_htab *t);
/* Makes room for n entries without growing. 0, or -1 on OOM (the table is unchanged). */
int pp_htab_reserve(pp_htab *t, size_t n);
/* A new, zeroed entry for hash h (the caller has checked that its key is absent, and fills it
 * in). Grows the table first when it would be fuller than its load; when that fails (OOM), still
 * adds while the table is at most half-way from its load to full. NULL when it cannot add. */
void *pp_htab_add(pp_htab *t, uint64_t h);
/* Removes the entry ent (a pointer the table gave). Other entries may move. */
void pp_htab_remove(pp_htab *t, void *ent);
/* Removes every entry for which keep(entry, arg) is false; keep is called once per entry, and
 * may release what the entry owns before answering false. Returns how many were removed. */
size_t pp_htab_filter(pp_htab *t, bool (*keep)(void *ent, void *arg), void *arg);
/* Iteration in slot order: the next entry at or after slot *pos (start at 0), or NULL. */
void *pp_htab_each(const pp_htab *t, size_t *pos);
/* Bytes allocated (for memory accounting). */
size_t pp_htab_bytes(const pp_htab *t);

static inline size_t pp_htab_count(const pp_htab *t)
{
    return t->n;
}

/* True when the next pp_htab_add grows the table (callers that bound a cache start over, or
 * sweep, before that). */
static inline bool pp_htab_full(const pp_htab *t)
{
    return (t->n + 1) * 100 > t->cap * t->max_load;
}

/* ---- probing (inline: on the hot paths of the samplers and the merge) ---- */

typedef struct pp_htab_probe {
    size_t i;
    uint32_t tag;
} pp_htab_probe;

static inline uint32_t pp_htab_tag(uint64_t h)
{
    uint32_t tag = (uint32_t)h;
    return tag ? tag : 1;
}

/* The next entry on the probe sequence whose tag matches, or NULL at the first empty slot (the
 * probe is then spent). The table is never full, so every sequence ends. */
static inline void *pp_htab_next(const pp_htab *t, pp_htab_probe *p)
{
    unsigned char *slots = t->slots;
    size_t stride = t->stride, mask = t->cap - 1;
    uint32_t want = p->tag;
    for (size_t i = p->i;; i = (i + 1) & mask) {
        unsigned char *slot = slots + i * stride;
        uint32_t tag = *(const uint32_t *)(const void *)slot;
        if (tag == want) {
            p->i = (i + 1) & mask;
            return slot + t->off;
        }
        if (!tag)
            return NULL;
    }
}

/* The first entry of hash h's probe sequence whose tag matches (see pp_htab_next), or NULL. */
static inline void *pp_htab_first(const pp_htab *t, uint64_t h, pp_htab_probe *p)
{
    if (!t->n)
        return NULL;
    p->tag = pp_htab_tag(h);
    p->i = p->tag & (t->cap - 1);
    return pp_htab_next(t, p);
}

/* ---- u64 -> u64 map: a zero-initialised pp_u64map is an empty map ---- */

typedef struct pp_u64map {
    pp_htab t;
} pp_u64map;

typedef struct pp_u64map_ent {
    uint64_t key, val;
} pp_u64map_ent;

/* Inserts or replaces. 0, or -1 on OOM. */
int pp_u64map_put(pp_u64map *m, uint64_t key, uint64_t val);
void pp_u64map_free(pp_u64map *m);

/* Pointer to key's value (valid until the next put), or NULL. */
static inline uint64_t *pp_u64map_get(const pp_u64map *m, uint64_t key)
{
    pp_htab_probe p;
    for (pp_u64map_ent *e = pp_htab_first(&m->t, pp_hash_u64(key), &p); e;
         e = pp_htab_next(&m->t, &p))
        if (e->key == key)
            return &e->val;
    return NULL;
}

#endif
