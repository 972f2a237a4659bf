#include "runtimes/system/emit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"

#define MAX_FRAMES PP_EMIT_MAX_FRAMES
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
    pp_frame_file file;
    if (pid < 0)
        pp_symbolize_kernel_file(e->sym, ip, buf, sizeof(buf), &file);
    else
        pp_symbolize_user_file(e->sym, pid, ip, buf, sizeof(buf), &file);
    uint32_t id = pp_profile_intern(out, buf);
    if (id == UINT32_MAX)
        return id;
    /* the frame's file, for the pprof export's mappings (kernel frames: every process's); a
     * failure here (OOM) only leaves the frame without one */
    uint32_t m = file.path ? pp_profile_mapping(out, file.path, file.build_id) : 0;
    if (m && m != UINT32_MAX)
        pp_profile_set_frame_mapping(out, pid < 0 ? PP_ANY_PID : pid, id, m);
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

/* Whether the frame at ip (frame id) is the runtime's own: its code, or its text starts with
 * one of the interpreter-loop names. */
static bool is_loop(pp_profile *out, uint32_t id, uint64_t ip, const pp_emit_loop *loop)
{
    if (!loop)
        return false;
    if (loop->code && loop->code(loop->arg, ip))
        return true;
    const char *f = id == UINT32_MAX ? NULL : pp_profile_str(out, id);
    for (const char *const *l = loop->symbols; f && l && *l; l++)
        if (strncmp(f, *l, strlen(*l)) == 0)
            return true;
    return false;
}

/* Whether frame id is the symbolizer's text for an address in no mapping. */
static bool is_unmapped(pp_profile *out, uint32_t id)
{
    const char *f = id == UINT32_MAX ? NULL : pp_profile_str(out, id);
    return f && strcmp(f, PP_FRAME_UNMAPPED) == 0;
}

int pp_emit_sample(pp_emitter *e, pp_profile *out, int pid, const char *comm, const uint64_t *user,
                   size_t nuser, const uint64_t *kernel, size_t nkernel, uint64_t count)
{
    return pp_emit_mixed(e, out, pid, 0, comm, user, nuser, kernel, nkernel, NULL, 0, NULL, count);
}

int pp_emit_mixed(pp_emitter *e, pp_profile *out, int pid, uint32_t tid, const char *comm,
                  const uint64_t *user, size_t nuser, const uint64_t *kernel, size_t nkernel,
                  const uint32_t *rt, size_t nrt, const pp_emit_loop *loop, uint64_t count)
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

    uint32_t frames[MAX_FRAMES], native[MAX_FRAMES];
    size_t n = 0;
    if (nrt > PP_EMIT_MAX_RT)
        nrt = PP_EMIT_MAX_RT; /* the runtime frames are given root first: keep the root side */
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
     * the root and the native frames are above them.
     * An address in no mapping ("[unknown]": also every address of a process whose mappings
     * could not be read) ends the trustworthy native chain: past the leaf, a frame-pointer walk
     * through code built without them (Debian's libruby) reads return addresses out of garbage.
     * With runtime frames, which give the sample its real root, the native frames from the
     * first such address on are dropped (a loop frame found among them by chance too): no run
     * of [unknown] frames between the runtime's leaf and the native one, and no root of
     * garbage. Without runtime frames, the stack ends before the first such address past the
     * leaf (a frame-pointer fallback of the CFI unwinder, or bpf_get_stack in a process whose
     * mappings were not loaded yet, through code without frame pointers): no frame of a native
     * stack lies outside an executable mapping, but an unmapped leaf (kept: the sample's only
     * user frame). */
    size_t valid = nuser; /* native[0..valid) precede the first address in no mapping */
    for (size_t i = 0; i < nuser; i++)
        if (is_unmapped(out, native[i])) {
            valid = nrt || i > 0 ? i : 1;
            break;
        }
    size_t inner = valid, outer = valid; /* leaf-first indexes of the loop frames */
    for (size_t i = 0; nrt && i < valid; i++) {
        if (!is_loop(out, native[i], user[i], loop)) {
            /* A runtime named by its code walks the innermost run of it only (a JIT's walk ends
             * at the native frames that called it): the frames under that run stay native. An
             * interpreter's walker walks through every loop frame. */
            if (inner != valid && loop->code)
                break;
            continue;
        }
        if (inner == valid)
            inner = i;
        outer = i;
    }
    for (size_t i = valid; nrt && outer < valid && i-- > outer + 1;)
        frames[n++] = native[i]; /* under the loop */
    for (size_t i = 0; i < nrt; i++)
        frames[n++] = rt[i];
    for (size_t i = nrt ? inner : valid; i-- > 0;)
        frames[n++] = native[i];
    for (size_t i = nkernel; i-- > 0;)
        frames[n++] = frame_id(e, out, -1, kernel[i]);
    if (n == 0)
        frames[n++] = pp_profile_intern(out, "[unknown]");
    for (size_t i = 0; i < n; i++)
        if (frames[i] == UINT32_MAX)
            return -1;
    return pp_pid_add_tid(pp, tid, frames, n, count);
}
