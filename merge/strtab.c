#include "merge/strtab.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"

/* Strings live in large chunks; a hash index (of string ids) finds a string's id. */
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
    pp_htab index; /* of uint32_t ids */
    size_t bytes;  /* chunks and id arrays (the index is added when asked) */
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

pp_strtab *pp_strtab_new(void)
{
    pp_strtab *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    PP_HTAB_INIT(&t->index, uint32_t, 50);
    if (pp_htab_reserve(&t->index, 512) < 0 || pp_strtab_intern(t, "", 0) != 0) {
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
    pp_htab_free(&t->index);
    free(t);
}

uint32_t pp_strtab_intern(pp_strtab *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return UINT32_MAX;
    uint64_t h = pp_hash_bytes(s, len, 0);
    pp_htab_probe p;
    for (uint32_t *id = pp_htab_first(&t->index, h, &p); id; id = pp_htab_next(&t->index, &p))
        if (t->lens[*id] == len && memcmp(t->strs[*id], s, len) == 0)
            return *id;
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
    /* The index grows at half full; when it cannot (OOM), it is filled up to 3/4. */
    uint32_t *slot = pp_htab_add(&t->index, h);
    if (!slot)
        return UINT32_MAX;
    uint32_t id = (uint32_t)t->count++;
    t->strs[id] = copy;
    t->lens[id] = (uint32_t)len;
    *slot = id;
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
    return t->bytes + pp_htab_bytes(&t->index);
}
