#include "runtimes/system/emit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 640 /* native user and kernel frames, and a runtime trace */

typedef struct {
    uint64_t ip;
    int pid;
    uint32_t id; /* frame id + 1; 0 = empty slot */
} cache_ent;

struct pp_emitter {
    pp_symbolizer *sym;
    uint64_t generation; /* pp_profile_generation of the profile the cached ids belong to */
    cache_ent *cache;
    size_t cap, used;
};

pp_emitter *pp_emitter_new(pp_symbolizer *sym)
{
    pp_emitter *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->sym = sym;
    e->cap = 4096;
    e->cache = calloc(e->cap, sizeof(*e->cache));
    if (!e->cache) {
        free(e);
        return NULL;
    }
    return e;
}

void pp_emitter_free(pp_emitter *e)
{
    if (!e)
        return;
    free(e->cache);
    free(e);
}

static void cache_reset(pp_emitter *e)
{
    memset(e->cache, 0, e->cap * sizeof(*e->cache));
    e->used = 0;
}

static size_t slot_of(int pid, uint64_t ip, size_t cap)
{
    uint64_t h = ip * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(unsigned)pid * 0xc2b2ae3d27d4eb4fULL;
    return (h ^ (h >> 29)) & (cap - 1);
}

/* pid < 0 marks kernel addresses (shared by all processes). */
static uint32_t frame_id(pp_emitter *e, pp_profile *out, int pid, uint64_t ip)
{
    size_t s = slot_of(pid, ip, e->cap);
    while (e->cache[s].id) {
        if (e->cache[s].ip == ip && e->cache[s].pid == pid)
            return e->cache[s].id - 1;
        s = (s + 1) & (e->cap - 1);
    }
    char buf[1024];
    if (pid < 0)
        pp_symbolize_kernel(e->sym, ip, buf, sizeof(buf));
    else
        pp_symbolize_user(e->sym, pid, ip, buf, sizeof(buf));
    uint32_t id = pp_profile_intern(out, buf);
    if (id == UINT32_MAX)
        return id;
    /* Bounded cache: when it gets dense, start over rather than grow without limit. */
    if (e->used * 4 >= e->cap * 3) {
        if (e->cap < (1u << 20)) {
            cache_ent *nc = calloc(e->cap * 2, sizeof(*nc));
            if (nc) {
                size_t ncap = e->cap * 2;
                for (size_t i = 0; i < e->cap; i++) {
                    if (!e->cache[i].id)
                        continue;
                    size_t t = slot_of(e->cache[i].pid, e->cache[i].ip, ncap);
                    while (nc[t].id)
                        t = (t + 1) & (ncap - 1);
                    nc[t] = e->cache[i];
                }
                free(e->cache);
                e->cache = nc;
                e->cap = ncap;
            } else {
                cache_reset(e);
            }
        } else {
            cache_reset(e);
        }
        s = slot_of(pid, ip, e->cap);
        while (e->cache[s].id)
            s = (s + 1) & (e->cap - 1);
    }
    e->cache[s] = (cache_ent){ip, pid, id + 1};
    e->used++;
    return id;
}

/* Whether frame id's text starts with one of the interpreter-loop names. */
static bool is_loop(pp_profile *out, uint32_t id, const char *const *loop)
{
    const char *f = id == UINT32_MAX ? NULL : pp_profile_str(out, id);
    for (const char *const *l = loop; f && l && *l; l++)
        if (strncmp(f, *l, strlen(*l)) == 0)
            return true;
    return false;
}

int pp_emit_sample(pp_emitter *e, pp_profile *out, int pid, const char *comm, const uint64_t *user,
                   size_t nuser, const uint64_t *kernel, size_t nkernel, uint64_t count)
{
    return pp_emit_mixed(e, out, pid, comm, user, nuser, kernel, nkernel, NULL, 0, NULL, count);
}

int pp_emit_mixed(pp_emitter *e, pp_profile *out, int pid, const char *comm, const uint64_t *user,
                  size_t nuser, const uint64_t *kernel, size_t nkernel, const uint32_t *rt,
                  size_t nrt, const char *const *loop, uint64_t count)
{
    /* The cached ids are string ids of one profile. A new session's profile may be allocated at
     * the freed one's address, so the cache is keyed on the profile's generation. */
    if (e->generation != pp_profile_generation(out)) {
        cache_reset(e);
        e->generation = pp_profile_generation(out);
    }
    pp_pid_profile *pp = pp_profile_get(out, pid, true);
    if (!pp)
        return -1;
    if (!pp->comm || pid == 0)
        pp->comm = pp_profile_intern(out, pid == 0 ? "swapper" : comm);

    uint32_t frames[MAX_FRAMES], native[MAX_FRAMES];
    size_t n = 0;
    if (nrt > MAX_FRAMES / 2)
        nrt = MAX_FRAMES / 2; /* the runtime frames are given root first: keep the root side */
    if (nuser + nkernel + nrt > MAX_FRAMES) {
        /* Keep the leaf-most frames. */
        size_t room = MAX_FRAMES - nrt;
        if (nkernel > room)
            nkernel = room;
        room -= nkernel;
        if (nuser > room)
            nuser = room;
    }
    for (size_t i = 0; i < nuser; i++)
        native[i] = frame_id(e, out, pid, user[i]);
    /* With runtime frames: native frames below the outermost interpreter-loop frame, the
     * runtime's frames, native frames above the innermost one. Without a loop frame in the
     * native stack (no frame pointers, or an unwind that stopped early) the runtime frames are
     * the root and every native frame is above them. */
    size_t inner = nuser, outer = nuser; /* leaf-first indexes of the loop frames */
    for (size_t i = 0; nrt && i < nuser; i++) {
        if (!is_loop(out, native[i], loop))
            continue;
        if (inner == nuser)
            inner = i;
        outer = i;
    }
    size_t below = outer < nuser ? outer + 1 : nuser; /* native[below..] are under the loop */
    for (size_t i = nuser; nrt && i-- > below;)
        frames[n++] = native[i];
    for (size_t i = 0; i < nrt; i++)
        frames[n++] = rt[i];
    for (size_t i = nrt ? inner : nuser; i-- > 0;)
        frames[n++] = native[i];
    for (size_t i = nkernel; i-- > 0;)
        frames[n++] = frame_id(e, out, -1, kernel[i]);
    if (n == 0)
        frames[n++] = pp_profile_intern(out, "[unknown]");
    for (size_t i = 0; i < n; i++)
        if (frames[i] == UINT32_MAX)
            return -1;
    return pp_pid_add(pp, frames, n, count);
}
