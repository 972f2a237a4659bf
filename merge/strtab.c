#include "merge/strtab.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

/* Strings live in large chunks; an open-addressing index maps hash -> id. */
#define CHUNK_SIZE (64 * 1024)

typedef struct {
    char *data;
    size_t used, cap;
} chunk;

struct pp_strtab {
    chunk *chunks;
    size_t nchunks, chunks_cap;
    const char **strs; /* id -> string */
    uint32_t *lens;
    size_t count, cap;
    uint32_t *index; /* slot -> id+1, 0 = empty */
    size_t index_cap;
    size_t bytes;
};

static char *arena_alloc(pp_strtab *t, size_t n)
{
    if (t->nchunks == 0 || t->chunks[t->nchunks - 1].cap - t->chunks[t->nchunks - 1].used < n) {
        if (t->nchunks == t->chunks_cap) {
            size_t nc = t->chunks_cap ? t->chunks_cap * 2 : 8;
            chunk *c = realloc(t->chunks, nc * sizeof(*c));
            if (!c)
                return NULL;
            t->chunks = c;
            t->chunks_cap = nc;
        }
        size_t cap = n > CHUNK_SIZE ? n : CHUNK_SIZE;
        char *d = malloc(cap);
        if (!d)
            return NULL;
        t->chunks[t->nchunks++] = (chunk){d, 0, cap};
        t->bytes += cap;
    }
    chunk *c = &t->chunks[t->nchunks - 1];
    char *r = c->data + c->used;
    c->used += n;
    return r;
}

static int rehash(pp_strtab *t, size_t ncap)
{
    uint32_t *idx = calloc(ncap, sizeof(*idx));
    if (!idx)
        return -1;
    for (size_t id = 0; id < t->count; id++) {
        size_t slot = pp_hash_bytes(t->strs[id], t->lens[id], 0) & (ncap - 1);
        while (idx[slot])
            slot = (slot + 1) & (ncap - 1);
        idx[slot] = (uint32_t)id + 1;
    }
    free(t->index);
    t->bytes += (ncap - t->index_cap) * sizeof(*idx);
    t->index = idx;
    t->index_cap = ncap;
    return 0;
}

pp_strtab *pp_strtab_new(void)
{
    pp_strtab *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    if (rehash(t, 1024) < 0 || pp_strtab_intern(t, "", 0) != 0) {
        pp_strtab_free(t);
        return NULL;
    }
    return t;
}

void pp_strtab_free(pp_strtab *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nchunks; i++)
        free(t->chunks[i].data);
    free(t->chunks);
    free(t->strs);
    free(t->lens);
    free(t->index);
    free(t);
}

uint32_t pp_strtab_intern(pp_strtab *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return UINT32_MAX;
    /* Keep the index at most half full; refuse to fill it past 3/4 if it cannot grow. */
    if (t->count * 2 >= t->index_cap && rehash(t, t->index_cap * 2) < 0 &&
        t->count * 4 >= t->index_cap * 3)
        return UINT32_MAX;
    size_t mask = t->index_cap - 1;
    size_t slot = pp_hash_bytes(s, len, 0) & mask;
    while (t->index[slot]) {
        uint32_t id = t->index[slot] - 1;
        if (t->lens[id] == len && memcmp(t->strs[id], s, len) == 0)
            return id;
        slot = (slot + 1) & mask;
    }
    if (t->count >= UINT32_MAX - 1)
        return UINT32_MAX;
    if (t->count == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        const char **ns = realloc(t->strs, nc * sizeof(*ns));
        if (!ns)
            return UINT32_MAX;
        t->strs = ns;
        uint32_t *nl = realloc(t->lens, nc * sizeof(*nl));
        if (!nl)
            return UINT32_MAX;
        t->lens = nl;
        t->bytes += (nc - t->cap) * (sizeof(*ns) + sizeof(*nl));
        t->cap = nc;
    }
    char *copy = arena_alloc(t, len + 1);
    if (!copy)
        return UINT32_MAX;
    memcpy(copy, s, len);
    copy[len] = '\0';
    uint32_t id = (uint32_t)t->count++;
    t->strs[id] = copy;
    t->lens[id] = (uint32_t)len;
    t->index[slot] = id + 1;
    return id;
}

uint32_t pp_strtab_intern_cstr(pp_strtab *t, const char *s)
{
    return pp_strtab_intern(t, s, strlen(s));
}

const char *pp_strtab_get(const pp_strtab *t, uint32_t id)
{
    return id < t->count ? t->strs[id] : "";
}

size_t pp_strtab_len(const pp_strtab *t, uint32_t id)
{
    return id < t->count ? t->lens[id] : 0;
}

size_t pp_strtab_count(const pp_strtab *t)
{
    return t->count;
}

size_t pp_strtab_bytes(const pp_strtab *t)
{
    return t->bytes;
}
