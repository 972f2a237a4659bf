#include "runtimes/system/emit.h"

#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"

#define MAX_FRAMES 256
/* The cache starts over rather than grow past this many slots (3/4 of them used). */
#define CACHE_MAX_SLOTS ((size_t)1 << 20)

/* 4-aligned (the address in halves), so that a slot is 20 bytes rather than 24. */
typedef struct {
    uint32_t ip_lo, ip_hi;
    int pid;
    uint32_t id; /* frame id */
} cache_ent;

struct pp_emitter {
    pp_symbolizer *sym;
    uint64_t generation; /* pp_profile_generation of the profile the cached ids belong to */
    pp_htab cache;       /* of cache_ent */
};

pp_emitter *pp_emitter_new(pp_symbolizer *sym)
{
    pp_emitter *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->sym = sym;
    PP_HTAB_INIT(&e->cache, cache_ent, 75);
    if (pp_htab_reserve(&e->cache, 3072) < 0) { /* 4096 slots */
        free(e);
        return NULL;
    }
    return e;
}

void pp_emitter_free(pp_emitter *e)
{
    if (!e)
        return;
    pp_htab_free(&e->cache);
    free(e);
}

/* A cache miss: names ip and caches its frame id (h: the key's hash). Out of line, so that the
 * lookup below stays small. */
static __attribute__((noinline)) uint32_t frame_id_miss(pp_emitter *e, pp_profile *out, int pid,
                                                        uint64_t ip, uint64_t h)
{
    char buf[1024];
    if (pid < 0)
        pp_symbolize_kernel(e->sym, ip, buf, sizeof(buf));
    else
        pp_symbolize_user(e->sym, pid, ip, buf, sizeof(buf));
    uint32_t id = pp_profile_intern(out, buf);
    if (id == UINT32_MAX)
        return id;
    /* Bounded cache: when it gets dense at its largest (or cannot grow), start over. */
    if (pp_htab_full(&e->cache) && e->cache.cap >= CACHE_MAX_SLOTS)
        pp_htab_clear(&e->cache);
    cache_ent *c = pp_htab_add(&e->cache, h);
    if (!c) {
        pp_htab_clear(&e->cache);
        c = pp_htab_add(&e->cache, h);
    }
    if (c)
        *c = (cache_ent){(uint32_t)ip, (uint32_t)(ip >> 32), pid, id};
    return id;
}

/* pid < 0 marks kernel addresses (shared by all processes). */
static inline uint32_t frame_id(pp_emitter *e, pp_profile *out, int pid, uint64_t ip)
{
    /* One finisher over both (user addresses fit in 47 bits, kernel ones have the top bits set):
     * a pair that folds onto another only costs a probe. */
    uint64_t h = pp_hash_u64(ip ^ ((uint64_t)(unsigned)pid << 32));
    pp_htab_probe p;
    for (cache_ent *c = pp_htab_first(&e->cache, h, &p); c; c = pp_htab_next(&e->cache, &p))
        if (c->ip_lo == (uint32_t)ip && c->ip_hi == (uint32_t)(ip >> 32) && c->pid == pid)
            return c->id;
    return frame_id_miss(e, out, pid, ip, h);
}

int pp_emit_sample(pp_emitter *e, pp_profile *out, int pid, const char *comm, const uint64_t *user,
                   size_t nuser, const uint64_t *kernel, size_t nkernel, uint64_t count)
{
    /* The cached ids are string ids of one profile. A new session's profile may be allocated at
     * the freed one's address, so the cache is keyed on the profile's generation. */
    if (e->generation != pp_profile_generation(out)) {
        pp_htab_clear(&e->cache);
        e->generation = pp_profile_generation(out);
    }
    pp_pid_profile *pp = pp_profile_get(out, pid, true);
    if (!pp)
        return -1;
    if (!pp->comm || pid == 0)
        pp->comm = pp_profile_intern(out, pid == 0 ? "swapper" : comm);

    uint32_t frames[MAX_FRAMES];
    size_t n = 0;
    if (nuser + nkernel > MAX_FRAMES) {
        /* Keep the leaf-most frames. */
        size_t room = MAX_FRAMES;
        if (nkernel > room)
            nkernel = room;
        room -= nkernel;
        if (nuser > room)
            nuser = room;
    }
    for (size_t i = nuser; i-- > 0;)
        frames[n++] = frame_id(e, out, pid, user[i]);
    for (size_t i = nkernel; i-- > 0;)
        frames[n++] = frame_id(e, out, -1, kernel[i]);
    if (n == 0)
        frames[n++] = pp_profile_intern(out, "[unknown]");
    for (size_t i = 0; i < n; i++)
        if (frames[i] == UINT32_MAX)
            return -1;
    return pp_pid_add(pp, frames, n, count);
}
