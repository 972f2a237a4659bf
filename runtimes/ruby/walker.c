/* The Ruby in-sampler walker's user-space half (docs/ruby.md): prepare() opens the process with
 * the Ruby reader (ruby_int.h), checks an untested layout against the process (its main thread's
 * outermost frame must be `<main>` of its script) and fills the BPF walker's data (struct
 * pp_ruby_info); name() turns the recorded (iseq, pc) pairs into rbspy-style frames through the
 * reader's iseq cache and line tables, and gives a frame whose iseq changed since the sample as
 * a lost-symbol frame instead of misnaming it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"
#include "base/log.h"
#include "runtimes/ruby/walker_info.h"
#include "bpf/sampler.h"
#include "runtimes/ruby/ruby_int.h"
#include "runtimes/runtime.h"
#include "runtimes/system/sampler.h"

#define LOST_FRAME "[lost symbol]_[rb]"
#define CFP_BUF 64 /* RB_CFP_BUF of runtimes/ruby/walker.bpf.h */

typedef struct frame_ent {
    const pp_rb_iseq *q;
    int line;
    uint32_t id;
} frame_ent;

typedef struct rbwalk {
    pp_rb_proc *h;
    unsigned gen;
    pp_htab frames; /* of frame_ent: (iseq, line) -> id in the current profile */
    uint64_t generation;
    bool have_gen;
} rbwalk;

static void rw_begin(void *state)
{
    rbwalk *w = state;
    pp_rmem_begin_sample(&w->h->mem);
    w->gen++; /* iseqs are validated again: one freed since may have left the cache */
    pp_htab_clear(&w->frames);
}

static void rw_free(void *state)
{
    rbwalk *w = state;
    if (!w)
        return;
    pp_htab_free(&w->frames);
    pp_rb_close(w->h);
    free(w);
}

static uint32_t frame_id(rbwalk *w, pp_profile *out, const pp_rb_iseq *q, int line)
{
    uint64_t h = pp_hash_u64((uintptr_t)q ^ ((uint64_t)(uint32_t)line << 48));
    pp_htab_probe pr;
    for (frame_ent *e = pp_htab_first(&w->frames, h, &pr); e; e = pp_htab_next(&w->frames, &pr))
        if (e->q == q && e->line == line)
            return e->id;
    char text[PATH_MAX + 600];
    pp_rb_frame_text(text, sizeof(text), q ? q->label : NULL, q ? q->path : NULL, line);
    uint32_t id = pp_profile_intern(out, text);
    frame_ent *e = id == UINT32_MAX ? NULL : pp_htab_add(&w->frames, h);
    if (e)
        *e = (frame_ent){q, line, id};
    return id;
}

static size_t rw_name(void *state, pp_profile *out, const uint64_t *words, size_t nframes,
                      unsigned flags, uint32_t *ids, size_t cap, uint64_t *lost)
{
    rbwalk *w = state;
    pp_rb_proc *h = w->h;
    if (!w->have_gen || w->generation != pp_profile_generation(out)) { /* ids of one profile */
        pp_htab_clear(&w->frames);
        w->generation = pp_profile_generation(out);
        w->have_gen = true;
    }
    if (nframes > PP_RT_MAX_FRAMES)
        nframes = PP_RT_MAX_FRAMES;
    size_t k = 0;
    if ((flags & (PP_RT_TRUNCATED | PP_RT_READ_FAILED)) && k < cap)
        ids[k++] = pp_profile_intern(out, "[truncated]");
    for (size_t i = nframes; i-- > 0 && k < cap;) { /* root first */
        uint64_t w0 = words[2 * i], pc = words[2 * i + 1];
        if (w0 == 0) {
            ids[k++] = frame_id(w, out, NULL, 0);
            continue;
        }
        size_t before = pp_htab_count(&h->iseqs);
        pp_rb_iseq *q = pp_rb_iseq_get(h, PP_RUBY_ISEQ(w0), w->gen);
        if (pp_htab_count(&h->iseqs) < before)
            pp_htab_clear(&w->frames); /* the cache started over: its iseqs are freed */
        if (!q || pp_ruby_check(q->body) != PP_RUBY_CHECK(w0)) {
            (*lost)++;
            ids[k++] = pp_profile_intern(out, LOST_FRAME);
            continue;
        }
        ids[k++] = frame_id(w, out, q, pp_rb_iseq_line(q, pc));
    }
    for (size_t i = 0; i < k; i++)
        if (ids[i] == UINT32_MAX)
            return 0;
    return k;
}

/* The interpreter loop (vm_exec_core is static: found only with symbols). */
static const char *const loop_symbols[] = {"vm_exec_core", "rb_vm_exec", NULL};

static const pp_walker_ops ops = {
    .loop_symbols = loop_symbols,
    .begin = rw_begin,
    .name = rw_name,
    .free = rw_free,
};

/* The BPF walker's data from the layout; -1 when an offset does not fit its bounds. */
static int fill_info(const pp_rb_proc *h, struct pp_ruby_info *in)
{
    const pp_rb_layout *L = &h->L;
    memset(in, 0, sizeof(*in));
    if (L->root_ec >= 0) {
        in->ec_root = h->vm + L->vm_main_ractor;
        in->root_ec = L->root_ec;
    } else {
        in->ec_root = h->ec_ptr;
        in->root_ec = -1;
    }
    in->ec_thread = L->ec_thread;
    in->th_nt = L->th_nt;
    in->th_thread_id = L->th_thread_id;
    in->ec_vm_stack = L->ec_vm_stack;
    in->ec_vm_stack_size = L->ec_vm_stack_size;
    in->ec_cfp = L->ec_cfp;
    in->cfp_size = L->cfp_size;
    in->cfp_pc = L->cfp_pc;
    in->cfp_iseq = L->cfp_iseq;
    in->cfp_ep = L->cfp_ep;
    in->iseq_body = L->iseq_body;
    if (!in->ec_root || in->cfp_size < 8 || in->cfp_size > CFP_BUF || in->cfp_pc + 8 > CFP_BUF ||
        in->cfp_iseq + 8 > CFP_BUF || in->cfp_ep + 8 > CFP_BUF || in->iseq_body > 31)
        return -1;
    return 0;
}

static void *rw_prepare(const pp_runtime_ctx *ctx, int pid, void *info, size_t len,
                        pp_inwalk_status *status, char *err, size_t errlen)
{
    (void)ctx;
    pp_rb_status st;
    rbwalk *w = calloc(1, sizeof(*w));
    if (!w || len < sizeof(struct pp_ruby_info)) {
        free(w);
        *status = PP_INWALK_ERROR;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    PP_HTAB_INIT(&w->frames, frame_ent, 50);
    w->h = pp_rb_open(pid, &st, err, errlen);
    if (!w->h) {
        rw_free(w);
        *status = st == PP_RB_UNSUPPORTED ? PP_INWALK_UNSUPPORTED
                  : st == PP_RB_GONE      ? PP_INWALK_GONE
                                          : PP_INWALK_ERROR;
        return NULL;
    }
    char why[PATH_MAX + 128];
    if (!w->h->L.tested && pp_rb_self_check(w->h, why, sizeof(why)) != 0) {
        pp_debug("ruby pid %d: layout self-check failed: %s", pid, why);
        snprintf(err, errlen, "unverified Ruby %d.%d layout", w->h->L.major, w->h->L.minor);
        rw_free(w);
        *status = PP_INWALK_UNSUPPORTED;
        return NULL;
    }
    if (fill_info(w->h, info) < 0) {
        snprintf(err, errlen, "unsupported Ruby %d.%d (offsets out of the walker's bounds)",
                 w->h->L.major, w->h->L.minor);
        rw_free(w);
        *status = PP_INWALK_UNSUPPORTED;
        return NULL;
    }
    pp_debug("ruby pid %d: Ruby %s walked in the sampler", pid, w->h->version);
    *status = PP_INWALK_OK;
    return w;
}

const pp_inwalker pp_ruby_inwalker = {
    .kind = PP_WALK_RUBY,
    .prepare = rw_prepare,
    .ops = &ops,
};
