/* The HotSpot in-sampler walker's user-space half (docs/java.md "In-sampler walker"): prepare()
 * opens the JVM with the layout reader (hotspot.h), runs its end-to-end self-check and fills the
 * BPF walker's data (struct pp_hotspot_info: the code heaps, their segment maps, the interpreter's
 * code and the offsets) from the layout; name() turns the recorded (Method*, type and check)
 * pairs into gProfiler's frames ("pkg/Class.method(Sig)Ret_[j]"), naming a Method* only when its
 * identity (ConstMethod*, holder's name, name and signature indexes) still gives the check
 * recorded at the sample (else a lost-symbol frame, never another method's name); a compiled
 * frame is followed by the methods its nmethod inlined at its pc ("..._[i]", hotspot_scopes.c).
 *
 * Splicing: the BPF walker walks a thread from its pc when that is in the code cache, else from
 * the first frame in anonymous executable memory the sampler's CFI unwind of the same sample met
 * (native or VM code called from Java); the native stack the sampler unwound has its frames in
 * the code cache (by frame pointers, as far as they lead) where the Java frames belong: the
 * innermost run of them is replaced by the Java frames (loop_code; the walk ends where native
 * code called Java), the native frames under it (the JVM's call into Java:
 * JavaCalls::call_helper and the thread's start, or JNI code that called back into Java) kept
 * below them. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hash.h"
#include "base/hashtab.h"
#include "base/log.h"
#include "base/procfiles.h"
#include "runtimes/java/walker_info.h"
#include "bpf/sampler.h"
#include "runtimes/java/walker.h"
#include "runtimes/runtime.h"
#include "runtimes/system/sampler.h"

#define LOST_FRAME "[lost symbol]"
/* A JVM whose threads are all in Java code at the check (one still starting) is tried again a
 * few times, 5 ms apart, then left to the caller's own retry (the adopter's, or the next
 * session's): prepare runs on the session's loop, where a process that never shows a frame must
 * not cost more than this. */
#define SELFCHECK_TRIES 3

_Static_assert(sizeof(struct pp_hotspot_info) <= PP_RT_INFO_BYTES,
               "the HotSpot walker's data must fit struct pp_rt_proc.info");

typedef struct frame_ent {
    uint64_t w0, aux;  /* the recorded words */
    uint32_t start, n; /* its ids, root first: chain[start, start + n) */
} frame_ent;

typedef struct hswalk {
    pp_hs_proc p;
    struct pp_hotspot_info in; /* as the sampler has it: the code heaps */
    pp_htab frames;            /* of frame_ent: recorded words -> ids in the current profile */
    uint32_t *chain;           /* the frames' ids */
    size_t chain_n, chain_cap;
    uint64_t generation;
    bool have_gen;
    bool scopes;         /* the debug information's layout is known: inlined frames */
    uint64_t inl_failed; /* compiled frames shown without what they inlined (not readable) */
    char (*text)[PP_JAVA_FRAME_TEXT]; /* PP_HS_MAX_INLINE texts of one frame being named */
} hswalk;

static void forget_frames(hswalk *w)
{
    pp_htab_clear(&w->frames);
    w->chain_n = 0;
}

static void hw_begin(void *state)
{
    hswalk *w = state;
    pp_rmem_begin_sample(&w->p.mem); /* methods are validated again at each drain */
    forget_frames(w);
}

static void hw_free(void *state)
{
    hswalk *w = state;
    if (!w)
        return;
    if (w->inl_failed)
        pp_debug("java pid %d: %llu compiled frames shown without their inlined methods", w->p.pid,
                 (unsigned long long)w->inl_failed);
    pp_htab_free(&w->frames);
    free(w->chain);
    free(w->text);
    pp_hs_close(&w->p);
    free(w);
}

static unsigned check_of(const pp_hs_method_id *id)
{
    return pp_hsw_check(id->cm, id->kname, id->idx);
}

/* The suffix of a recorded type ('n', a compiled native method's wrapper, is compiled code). */
static const char *suffix(char type)
{
    return type == PP_HS_NATIVE_WRAPPER ? "_[j]" : pp_hs_suffix(type);
}

size_t pp_java_frame_text(pp_hs_proc *p, uint64_t w0, uint64_t aux, char *out, size_t cap)
{
    char type = PP_HSW_TYPE(aux);
    const char *sfx = suffix(type);
    if (!*sfx)
        sfx = "_[j]";
    const char *name =
        pp_hs_method_name_checked(p, PP_HSW_METHOD(w0, aux), PP_HSW_CHECK(aux), check_of);
    snprintf(out, cap, "%s%s", name ? name : LOST_FRAME, sfx);
    return name ? 1 : 0;
}

/* An inlined method's name: its identity read now, named through the same cache (an address
 * reused by another method since it was cached is not named as the old one). */
static const char *inlined_name(pp_hs_proc *p, uint64_t m)
{
    pp_hs_method_id id;
    if (pp_hs_method_identity(p, m, &id) != 0)
        return NULL;
    return pp_hs_method_name_checked(p, m, check_of(&id), check_of);
}

size_t pp_java_frame_texts(pp_hs_proc *p, const struct pp_hotspot_info *in, uint64_t w0,
                           uint64_t aux, char (*out)[PP_JAVA_FRAME_TEXT], size_t cap,
                           const char **why)
{
    *why = NULL;
    if (cap == 0)
        return 0;
    if (!pp_java_frame_text(p, w0, aux, out[0], sizeof(out[0])))
        return 0;
    char type = PP_HSW_TYPE(aux);
    uint32_t pc = PP_HSW_PCOFF(w0, aux);
    if (!in || (type != PP_HS_C1 && type != PP_HS_C2) || !pc)
        return 1;
    uint64_t nm =
        in->code_lo + ((uint64_t)PP_HSW_SEG(aux) << (in->log2seg & 31)) + in->heapblock_size;
    /* a compilation of another tier at the nmethod's address since the sample (C1, then C2 of
     * the same method) has another chain: the frame alone */
    uint8_t lvl = 0;
    if (pp_rmem_read(&p->mem, nm + p->L.nm_comp_level, &lvl, 1) != 0 ||
        (lvl >= 1 && lvl < 4 ? PP_HS_C1
         : lvl == 4          ? PP_HS_C2
                             : 0) != type) {
        *why = "the nmethod is of another tier now (recompiled since the sample)";
        return 1;
    }
    uint64_t ms[PP_HS_MAX_INLINE];
    int n = pp_hs_inlined(p, nm, PP_HSW_METHOD(w0, aux), pc, ms, PP_HS_MAX_INLINE, why);
    if (n < 0)
        return 1;
    *why = NULL;
    size_t k = 1;
    for (int j = n - 2; j >= 0 && k < cap; j--) { /* ms[n - 1] is the frame's own method */
        const char *name = inlined_name(p, ms[j]);
        if (!name) {
            *why = "an inlined method is unreadable";
            return 1;
        }
        snprintf(out[k++], sizeof(out[0]), "%s_[i]", name);
    }
    return k;
}

/* The ids of the frames of one recorded frame (root first: its method, then the methods it
 * inlined at its pc), cached for the profile when its method was named. Returns how many (0:
 * out of memory). */
static size_t frame_ids(hswalk *w, pp_profile *out, uint64_t w0, uint64_t aux, uint64_t *lost,
                        uint32_t *ids)
{
    uint64_t h = pp_hash_u64(w0 ^ (aux * 0x9e3779b97f4a7c15ULL));
    pp_htab_probe pr;
    for (frame_ent *e = pp_htab_first(&w->frames, h, &pr); e; e = pp_htab_next(&w->frames, &pr))
        if (e->w0 == w0 && e->aux == aux) {
            memcpy(ids, w->chain + e->start, e->n * sizeof(*ids));
            return e->n;
        }
    char(*text)[PP_JAVA_FRAME_TEXT] = w->text;
    const char *why;
    size_t n = pp_java_frame_texts(&w->p, w->scopes ? &w->in : NULL, w0, aux, text,
                                   PP_HS_MAX_INLINE, &why);
    if (n == 0) {
        (*lost)++; /* text[0] is the lost frame's */
        ids[0] = pp_profile_intern(out, text[0]);
        return ids[0] == UINT32_MAX ? 0 : 1; /* not cached: named again next time */
    }
    if (why) {
        if (!w->inl_failed)
            pp_debug("java pid %d: a compiled frame shown without its inlined methods: %s",
                     w->p.pid, why);
        w->inl_failed++;
    }
    for (size_t i = 0; i < n; i++)
        if ((ids[i] = pp_profile_intern(out, text[i])) == UINT32_MAX)
            return 0;
    if (w->chain_n + n > w->chain_cap) {
        size_t cap = w->chain_cap ? w->chain_cap * 2 : 1024;
        while (cap < w->chain_n + n)
            cap *= 2;
        uint32_t *c = realloc(w->chain, cap * sizeof(*c));
        if (!c)
            return n; /* named, not cached */
        w->chain = c;
        w->chain_cap = cap;
    }
    frame_ent *e = pp_htab_add(&w->frames, h);
    if (e) {
        memcpy(w->chain + w->chain_n, ids, n * sizeof(*ids));
        *e = (frame_ent){w0, aux, (uint32_t)w->chain_n, (uint32_t)n};
        w->chain_n += n;
    }
    return n;
}

/* The sample's frames, root first; a frame and what it inlined are several. Past cap the
 * root-side frames are cut (the leaf's are kept) and a "[truncated]" frame is the root, as
 * when the sampler cut the walk. */
static size_t hw_name(void *state, pp_profile *out, const uint64_t *words, size_t nframes,
                      unsigned flags, uint32_t *ids, size_t cap, uint64_t *lost)
{
    hswalk *w = state;
    if (!w->have_gen || w->generation != pp_profile_generation(out)) { /* ids of one profile */
        forget_frames(w);
        w->generation = pp_profile_generation(out);
        w->have_gen = true;
    }
    if (cap == 0)
        return 0;
    bool cut = flags & (PP_RT_TRUNCATED | PP_RT_READ_FAILED);
    size_t k = 0; /* leaf first, reversed below */
    uint32_t chain[PP_HS_MAX_INLINE];
    for (size_t i = 0; i < nframes && !(cut && k == cap); i++) {
        size_t n = frame_ids(w, out, words[2 * i], words[2 * i + 1], lost, chain);
        if (n == 0)
            return 0;
        for (size_t j = n; j-- > 0;) {
            if (k == cap) {
                cut = true;
                break;
            }
            ids[k++] = chain[j];
        }
    }
    if (cut && k == cap)
        k--; /* room for the mark */
    for (size_t i = 0; i < k / 2; i++) {
        uint32_t t = ids[i];
        ids[i] = ids[k - 1 - i];
        ids[k - 1 - i] = t;
    }
    if (cut) {
        memmove(ids + 1, ids, k * sizeof(*ids));
        ids[0] = pp_profile_intern(out, "[truncated]");
        k++;
    }
    for (size_t i = 0; i < k; i++)
        if (ids[i] == UINT32_MAX)
            return 0;
    return k;
}

/* Whether ip is in the code cache: the native unwinder's frames there (JIT code, the
 * interpreter, stubs) are the Java frames' place. */
static bool hw_code(void *state, uint64_t ip)
{
    const struct pp_hotspot_info *in = &((hswalk *)state)->in;
    for (unsigned i = 0; i < in->nheaps && i < PP_HSW_HEAPS; i++)
        if (ip >= in->heap_lo[i] && ip < in->heap_hi[i])
            return true;
    return false;
}

static const pp_walker_ops ops = {
    .loop_symbols = NULL,
    .loop_code = hw_code,
    .begin = hw_begin,
    .name = hw_name,
    .free = hw_free,
};

int pp_java_walker_info(pp_hs_proc *p, struct pp_hotspot_info *in, char *why, size_t len)
{
    const pp_hs_layout *L = &p->L;
    pp_hs_ccache c;
    memset(in, 0, sizeof(*in));
    if (pp_hs_ccache_read(p, &c) != 0) {
        snprintf(why, len, "cannot read the JVM's code cache");
        return -1;
    }
    if (c.nheaps > PP_HSW_HEAPS) {
        snprintf(why, len, "%d code heaps (the walker takes %d)", c.nheaps, PP_HSW_HEAPS);
        return -1;
    }
    in->ilo = c.ilo;
    in->code_lo = UINT64_MAX;
    in->ihi = c.ihi;
    in->nheaps = (unsigned)c.nheaps;
    in->log2seg = (unsigned)c.log2seg[0];
    for (int i = 0; i < c.nheaps; i++) {
        if (c.log2seg[i] != c.log2seg[0]) {
            snprintf(why, len, "code heaps of different segment sizes");
            return -1;
        }
        /* a heap's end: the next heap's start (they are cut out of one reserved space), its
         * committed end growing with the code */
        uint64_t hi = c.high;
        for (int j = 0; j < c.nheaps; j++)
            if (c.heap_lo[j] > c.heap_lo[i] && c.heap_lo[j] < hi)
                hi = c.heap_lo[j];
        if (c.heap_lo[i] < c.low || hi <= c.heap_lo[i]) {
            snprintf(why, len, "a code heap outside the code cache");
            return -1;
        }
        in->heap_lo[i] = c.heap_lo[i];
        if (c.heap_lo[i] < in->code_lo)
            in->code_lo = c.heap_lo[i];
        in->heap_hi[i] = hi;
        in->segmap[i] = c.segmap[i];
    }
    bool kind = L->blob_kind != PP_HS_NONE;
    in->heapblock_size = L->heapblock_size;
    in->blob_size = L->blob_size;
    in->blob_frame_size = L->blob_frame_size;
    in->blob_kind = kind ? L->blob_kind : L->blob_name;
    in->kind_nmethod = kind ? L->kind_nmethod : -1;
    in->nm_method = L->nm_method;
    in->nm_comp_level = L->nm_comp_level;
    in->method_const = L->method_const;
    in->cm_constants = L->cm_constants;
    in->cm_name_index = L->cm_name_index;
    in->cp_holder = L->cp_holder;
    in->klass_name = L->klass_name;
    in->if_method = L->if_method;
    in->if_sender_sp = L->if_sender_sp;
    uint32_t hi = in->blob_size > in->blob_frame_size ? in->blob_size : in->blob_frame_size;
    hi = in->blob_kind > hi ? in->blob_kind : hi;
    /* the prologue's bounds, when the header read can hold them too (else not used) */
    bool rel = L->blob_code_begin == PP_HS_NONE;
    uint32_t code = rel ? L->blob_code_offset : L->blob_code_begin;
    if (L->blob_fco != PP_HS_NONE && code != PP_HS_NONE && L->blob_fco > 0 && code > 0 &&
        L->blob_fco <= PP_HSW_HDR - 16 && code <= PP_HSW_HDR - 16) {
        in->blob_fco = (unsigned short)L->blob_fco;
        in->blob_code = (unsigned short)(code | (rel ? PP_HSW_CODE_REL : 0));
        hi = L->blob_fco > hi ? L->blob_fco : hi;
        hi = code > hi ? code : hi;
    }
    in->hdr_len = (hi + 8 + 7) & ~7u;
    if (in->hdr_len > PP_HSW_HDR - 8 || (kind && in->kind_nmethod < 0) || in->kind_nmethod > 255 ||
        in->nm_method == PP_HS_NONE || in->nm_comp_level == PP_HS_NONE ||
        in->heapblock_size > 4096 || L->cm_sig_index != L->cm_name_index + 2 ||
        in->if_method < PP_HSW_IFRAME_LO || in->if_method > -1 ||
        in->if_sender_sp < PP_HSW_IFRAME_LO || in->if_sender_sp > -1 || in->log2seg < 3 ||
        in->log2seg > 20) {
        snprintf(why, len, "structure offsets out of the walker's bounds");
        return -1;
    }
    return 0;
}

/* The self-check (hotspot.h), tried again while no thread has a walkable frame. */
static int selfcheck(pp_hs_proc *p, char *why, size_t len)
{
    for (int i = 0; i < SELFCHECK_TRIES; i++) {
        pp_rmem_begin_sample(&p->mem);
        int rc = pp_hs_selfcheck(p, why, len);
        if (rc != 0)
            return rc;
        if (i + 1 < SELFCHECK_TRIES)
            nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    snprintf(why, len, "no thread had a Java frame to check the layout by yet");
    return 0;
}

static void *hw_prepare(const pp_runtime_ctx *ctx, int pid, void *info, size_t len,
                        pp_inwalk_status *status, char *err, size_t errlen)
{
    (void)ctx;
    hswalk *w = calloc(1, sizeof(*w));
    if (!w || len < sizeof(struct pp_hotspot_info)) {
        free(w);
        *status = PP_INWALK_ERROR;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char why[256] = "";
    if (pp_hs_open(&w->p, pid, why, sizeof(why)) != 0) {
        free(w);
        *status = pp_pid_gone(pid) ? PP_INWALK_GONE : PP_INWALK_UNSUPPORTED;
        pp_debug("java pid %d: HotSpot layout: %s", pid, why);
        snprintf(err, errlen, "unverified HotSpot layout");
        return NULL;
    }
    PP_HTAB_INIT(&w->frames, frame_ent, 50);
    w->text = malloc(PP_HS_MAX_INLINE * sizeof(*w->text));
    if (!w->text) {
        hw_free(w);
        *status = PP_INWALK_ERROR;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int check = selfcheck(&w->p, why, sizeof(why));
    if (check == 0) { /* nothing to check by yet: an error, tried again, not an unknown layout */
        bool gone = pp_pid_gone(pid);
        pp_debug("java pid %d: HotSpot layout %s: %s", pid, w->p.L.release, why);
        hw_free(w);
        *status = gone ? PP_INWALK_GONE : PP_INWALK_ERROR;
        snprintf(err, errlen, "%s", why);
        return NULL;
    }
    if (check < 0 || pp_java_walker_info(&w->p, info, why, sizeof(why)) < 0) {
        bool gone = pp_pid_gone(pid);
        pp_debug("java pid %d: HotSpot layout %s: %s", pid, w->p.L.release, why);
        hw_free(w);
        *status = gone ? PP_INWALK_GONE : PP_INWALK_UNSUPPORTED;
        snprintf(err, errlen, "unverified HotSpot layout");
        return NULL;
    }
    memcpy(&w->in, info, sizeof(w->in));
    w->scopes = pp_hs_scopes_layout(&w->p.L) != PP_HS_SCOPES_NONE;
    pp_debug("java pid %d: HotSpot %s walked in the sampler (%u code heaps, inlined frames %s)",
             pid, w->p.L.release, ((struct pp_hotspot_info *)info)->nheaps,
             w->scopes ? "shown" : "not shown: an unknown debug information layout");
    *status = PP_INWALK_OK;
    return w;
}

const pp_inwalker pp_java_inwalker = {
    .kind = PP_WALK_JAVA,
    .prepare = hw_prepare,
    .ops = &ops,
};
