/* The CPython in-sampler walker's user-space half (docs/python-bpf.md): prepare() opens the
 * process with the CPython reader (cpython.h) and fills the BPF walker's per-process data
 * (struct pp_cpython_info: _PyRuntime and the version's offsets, from the reader's layout);
 * name() turns the recorded (code object, instruction, check) triples into frames through the
 * reader's code-object cache and line tables, and gives a frame whose code object changed since
 * the sample (freed, its address reused) as a lost-symbol frame instead of misnaming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "runtimes/python/walker_info.h"
#include "bpf/sampler.h"
#include "runtimes/python/cpython_int.h"
#include "runtimes/python/frametab.h"
#include "runtimes/python/python_int.h"
#include "runtimes/system/sampler.h"

#define FRAME_BUF 128 /* PY_FRAME_BUF and PY_CODE_BUF of runtimes/python/walker.bpf.h */
#define LOST_FRAME "[lost symbol]_[p]"

typedef struct pywalk {
    pp_py_proc *h;
    char root[40];
    char pyver[32];
    pp_pyframes frames;
    uint64_t generation; /* of the profile the frame ids belong to */
    bool have_gen;
} pywalk;

static void pw_begin(void *state)
{
    pywalk *w = state;
    pp_rmem_begin_sample(&w->h->mem); /* code objects are validated once per drain */
}

static void pw_free(void *state)
{
    pywalk *w = state;
    if (!w)
        return;
    pp_pyframes_free(&w->frames);
    pp_py_close(w->h);
    free(w);
}

static size_t pw_name(void *state, pp_profile *out, const uint64_t *words, size_t nframes,
                      unsigned flags, uint32_t *ids, size_t cap, uint64_t *lost)
{
    pywalk *w = state;
    pp_py_proc *h = w->h;
    if (!w->have_gen || w->generation != pp_profile_generation(out)) {
        pp_pyframes_reset(&w->frames);
        w->generation = pp_profile_generation(out);
        w->have_gen = true;
    }
    uint64_t codes[PP_RT_MAX_FRAMES];
    if (nframes > PP_RT_MAX_FRAMES)
        nframes = PP_RT_MAX_FRAMES;
    for (size_t i = 0; i < nframes; i++)
        codes[i] = words[2 * i];
    pp_py_code_prefetch(&h->codes, &h->mem, &h->L, codes, nframes);
    size_t k = 0;
    if ((flags & (PP_RT_TRUNCATED | PP_RT_READ_FAILED)) && k < cap)
        ids[k++] = pp_profile_intern(out, "[truncated]");
    for (size_t i = nframes; i-- > 0 && k < cap;) { /* root first */
        uint64_t aux = words[2 * i + 1];
        int idx = (int)(int32_t)(uint32_t)(aux >> 32);
        pp_py_code *co = pp_py_code_get(&h->codes, &h->mem, &h->L, codes[i]);
        if (!co && h->mem.gone) /* exited since the sample: the check value vouches */
            co = pp_py_code_cached(&h->codes, codes[i]);
        /* a code object freed since the sample may still pass as one, its strings gone */
        if (!co || pp_cpython_check(co->check[1], co->firstlineno) != (uint32_t)aux ||
            strcmp(co->name, "<invalid>") == 0 || strcmp(co->file, "<invalid>") == 0) {
            (*lost)++;
            ids[k++] = pp_profile_intern(out, LOST_FRAME);
            continue;
        }
        if (co->internal)
            continue; /* a shim frame the walker could not tell (no shim_code: stripped) */
        ids[k++] =
            pp_pyframes_id(&w->frames, out, co->name, co->file, pp_py_code_line(co, &h->L, idx));
    }
    for (size_t i = 0; i < k; i++)
        if (ids[i] == UINT32_MAX)
            return 0;
    return k;
}

static const char *const loop_symbols[] = {"_PyEval_EvalFrameDefault", NULL};

static const pp_walker_ops ops = {
    .loop_symbols = loop_symbols,
    .begin = pw_begin,
    .name = pw_name,
    .free = pw_free,
};

/* The BPF walker's data from the reader's layout; -1 when an offset does not fit its bounds. */
static int fill_info(const pp_py_proc *h, struct pp_cpython_info *in)
{
    const pp_py_layout *L = &h->L;
    memset(in, 0, sizeof(*in));
    in->runtime = h->runtime;
    in->shim_code = L->shim_code;
    in->rt_interp_head = L->rt_interp_head;
    in->is_next = L->is_next;
    in->is_threads_head = L->is_threads_head;
    in->ts_next = L->ts_next;
    in->ts_frame = L->ts_frame;
    in->ts_thread_id = L->ts_thread_id;
    in->cframe_current = L->cframe_current;
    in->frame_object = L->frame_object;
    in->fr_back = L->fr_back;
    in->fr_code = L->fr_code;
    in->fr_ip = L->fr_ip;
    in->fr_owner = L->fr_owner;
    in->fr_size = L->fr_size;
    in->cstack_owner = L->minor >= 12 ? 3 + 1 : 0; /* FRAME_OWNED_BY_CSTACK */
    in->co_code_adaptive = L->co_code_adaptive;
    uint32_t lo = L->co_name < L->co_firstlineno ? L->co_name : L->co_firstlineno;
    uint32_t hi = L->co_name + 8 > L->co_firstlineno + 4 ? L->co_name + 8 : L->co_firstlineno + 4;
    in->co_check_off = lo;
    in->co_check_len = hi - lo;
    in->co_name_rel = L->co_name - lo;
    in->co_firstlineno_rel = L->co_firstlineno - lo;
    in->max_threads = PP_PY_MAX_THREADS;
    if (in->fr_size < 8 || in->fr_size >= FRAME_BUF || in->co_check_len >= FRAME_BUF ||
        in->fr_code + 8 > in->fr_size || in->fr_back + 8 > in->fr_size ||
        in->fr_ip + (L->frame_object ? 4 : 8) > in->fr_size ||
        (in->cstack_owner && in->fr_owner >= in->fr_size))
        return -1;
    return 0;
}

static void *pw_prepare(const pp_runtime_ctx *ctx, int pid, void *info, size_t len,
                        pp_inwalk_status *status, char *err, size_t errlen)
{
    pp_py_open_status st;
    pywalk *w = calloc(1, sizeof(*w));
    if (!w || len < sizeof(struct pp_cpython_info)) {
        free(w);
        *status = PP_INWALK_ERROR;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->h = pp_py_open(pid, &st, err, errlen);
    if (!w->h) {
        free(w);
        *status = st == PP_PY_UNSUPPORTED ? PP_INWALK_UNSUPPORTED
                  : st == PP_PY_GONE      ? PP_INWALK_GONE
                                          : PP_INWALK_ERROR;
        return NULL;
    }
    if (fill_info(w->h, info) < 0) {
        snprintf(err, errlen,
                 "unsupported Python %s (structure offsets out of the walker's bounds)",
                 pp_py_version(w->h));
        pw_free(w);
        *status = PP_INWALK_UNSUPPORTED;
        return NULL;
    }
    bool annotate = !pp_runtime_opt(ctx, "no-python-versions");
    snprintf(w->root, sizeof(w->root), "/proc/%d/root", pid);
    const char *v = pp_py_version(w->h), *dot = strchr(v, '.');
    if (annotate && (!dot || !strchr(dot + 1, '.')) &&
        pp_python_process_version(pid, w->pyver, sizeof(w->pyver)) == 0)
        v = w->pyver;
    if (v != w->pyver)
        snprintf(w->pyver, sizeof(w->pyver), "%s", v);
    w->frames = (pp_pyframes){.annotate = annotate, .root = w->root, .pyver = w->pyver};
    pp_debug("python pid %d: CPython %s walked in the sampler", pid, w->pyver);
    *status = PP_INWALK_OK;
    return w;
}

const pp_inwalker pp_python_inwalker = {
    .kind = PP_WALK_PYTHON,
    .prepare = pw_prepare,
    .ops = &ops,
};
