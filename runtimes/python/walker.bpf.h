/* The CPython walker of the system sampler (its folder's walker of the sampler program, listed by
 * the Makefile from the registry: build/walkers_gen.bpf.h; docs/python-bpf.md).
 *
 * The sampled task's thread state is found by its thread pointer: on x86_64 glibc, pthread_self()
 * is the fs base, and every PyThreadState records it in thread_id (3.8-3.13), so the thread
 * running on this CPU is named whether or not it holds the GIL (a thread inside zlib.compress
 * released it). The answer is cached per task (`py_tstates`) and checked again at each sample with
 * one read. Frames are then walked from the thread state's current frame, innermost first; each
 * gives the code object's address, the instruction index and a check value
 * (pp_cpython_check of co_name and co_firstlineno) that user space compares when it names the
 * frame. Every read goes through bpf_probe_read_user: garbage gives a failed read, never a
 * fault; every loop is bounded (bpf_loop). */
#ifndef PP_PYTHON_BPF_H
#define PP_PYTHON_BPF_H

#include "runtimes/python/walker_info.h"

#define PY_MAX_INTERPS 4
#define PY_FRAME_STEPS (PP_RT_MAX_FRAMES + 64) /* shim and incomplete frames are skipped */
#define PY_FRAME_BUF 128
#define PY_CODE_BUF 128

/* A task's thread state; ts 0: it had none at `when` (a native thread: not searched again for
 * PY_NEGATIVE_NS, so that such threads do not cost a search of every thread state per sample). */
struct py_tstate {
    __u64 ts, when;
};
#define PY_NEGATIVE_NS 1000000000ULL

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, PP_RT_TSTATE_ENTRIES);
    __type(key, __u32); /* kernel tid */
    __type(value, struct py_tstate);
} py_tstates SEC(".maps");

struct py_find {
    const struct pp_cpython_info *in;
    __u64 ts, fsbase, found;
    int failed;
};

static long py_find_cb(__u32 i, void *arg)
{
    struct py_find *f = arg;
    const struct pp_cpython_info *in = f->in;
    __u64 tid = 0, next = 0;
    if (!f->ts)
        return 1;
    if (bpf_probe_read_user(&tid, sizeof(tid), (void *)(f->ts + in->ts_thread_id)) != 0) {
        f->failed = 1;
        return 1;
    }
    if (tid == f->fsbase) {
        f->found = f->ts;
        return 1;
    }
    if (bpf_probe_read_user(&next, sizeof(next), (void *)(f->ts + in->ts_next)) != 0 ||
        next == f->ts) {
        f->failed = 1;
        return 1;
    }
    f->ts = next;
    return 0;
}

/* The thread state whose thread_id is fsbase, newest interpreter first; 0 when none. */
static __always_inline __u64 py_find_tstate(const struct pp_cpython_info *in, __u64 fsbase,
                                            int *failed)
{
    __u64 interp = 0;
    if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(in->runtime + in->rt_interp_head)))
        return 0;
    for (int k = 0; k < PY_MAX_INTERPS && interp; k++) {
        struct py_find f = {.in = in, .fsbase = fsbase};
        if (bpf_probe_read_user(&f.ts, sizeof(f.ts), (void *)(interp + in->is_threads_head)))
            break;
        __u32 max = in->max_threads;
        bpf_loop(max < 8192 ? max : 8192, py_find_cb, &f, 0);
        if (f.found)
            return f.found;
        *failed |= f.failed;
        if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(interp + in->is_next)))
            break;
    }
    return 0;
}

struct py_walk {
    const struct pp_cpython_info *in;
    struct rt_walk *w;
    __u64 frame;
};

static long py_frame_cb(__u32 i, void *arg)
{
    struct py_walk *pw = arg;
    const struct pp_cpython_info *in = pw->in;
    struct rt_walk *w = pw->w;
    __u64 f = pw->frame;
    if (!f)
        return 1;
    __u32 n = w->n;
    if (n >= PP_RT_MAX_FRAMES) {
        w->flags |= PP_RT_TRUNCATED;
        return 1;
    }
    __u8 *fb = w->buf;
    __u32 sz = in->fr_size & (PY_FRAME_BUF - 1); /* user space keeps it below PY_FRAME_BUF */
    if (sz < 8 || bpf_probe_read_user(fb, sz, (void *)f) != 0) {
        w->flags |= PP_RT_READ_FAILED;
        return 1;
    }
    /* offsets masked for the verifier (user space checked them); the buffers have 8 bytes of
     * slack past PY_FRAME_BUF */
    __u32 oc = in->fr_code & (PY_FRAME_BUF - 1), ob = in->fr_back & (PY_FRAME_BUF - 1);
    __u32 oi = in->fr_ip & (PY_FRAME_BUF - 1), oo = in->fr_owner & (PY_FRAME_BUF - 1);
    __u64 code = *(__u64 *)(fb + oc);
    pw->frame = *(__u64 *)(fb + ob);
    if (pw->frame == f)
        pw->frame = 0; /* a loop: garbage */
    __s64 idx;
    if (in->frame_object) {
        idx = *(__s32 *)(fb + oi);
    } else {
        if (in->cstack_owner && fb[oo] == in->cstack_owner - 1)
            return 0; /* shim / entry frame */
        if (in->shim_code && code == in->shim_code)
            return 0; /* 3.13 init shim: owned by the thread, runs the interpreter's code */
        __s64 d = (__s64)(*(__u64 *)(fb + oi) - (code + in->co_code_adaptive));
        if (d < 0)
            return 0; /* incomplete frame: being set up, no instruction run yet */
        idx = d / 2 > 0x7fffffff ? 0x7fffffff : d / 2;
    }
    __u8 *cb = w->buf + PY_FRAME_BUF + 8;
    __u32 cl = in->co_check_len & (PY_CODE_BUF - 1);
    __u64 name = 0;
    __s32 first = 0;
    if (cl >= 8 && bpf_probe_read_user(cb, cl, (void *)(code + in->co_check_off)) == 0) {
        name = *(__u64 *)(cb + (in->co_name_rel & (PY_CODE_BUF - 1)));
        first = *(__s32 *)(cb + (in->co_firstlineno_rel & (PY_CODE_BUF - 1)));
    }
    rt_push(w, code, PP_CPYTHON_WORD(idx, pp_cpython_check(name, first)));
    return 0;
}

/* Fills w with the sampled thread's Python frames; returns a PP_CNT_WALK_* outcome. */
static __always_inline __u32 pp_walk_python(const struct pp_rt_proc *p, __u32 tid,
                                            struct rt_walk *w)
{
    const struct pp_cpython_info *in = (const void *)p->info;
    __u64 fsbase = rt_thread_pointer();
    if (!fsbase)
        return PP_CNT_WALK_NO_THREAD;
    __u64 ts = 0, got = 0, now = bpf_ktime_get_ns();
    struct py_tstate *cached = bpf_map_lookup_elem(&py_tstates, &tid);
    if (cached && !cached->ts && now - cached->when < PY_NEGATIVE_NS)
        return PP_CNT_WALK_NO_THREAD;
    if (cached && cached->ts &&
        bpf_probe_read_user(&got, sizeof(got), (void *)(cached->ts + in->ts_thread_id)) == 0 &&
        got == fsbase)
        ts = cached->ts;
    int failed = 0;
    if (!ts) {
        ts = py_find_tstate(in, fsbase, &failed);
        struct py_tstate nv = {.ts = ts, .when = now};
        bpf_map_update_elem(&py_tstates, &tid, &nv, BPF_ANY);
        if (!ts)
            return failed ? PP_CNT_WALK_READ : PP_CNT_WALK_NO_THREAD;
    }
    struct py_walk pw = {.in = in, .w = w};
    if (bpf_probe_read_user(&pw.frame, sizeof(pw.frame), (void *)(ts + in->ts_frame)))
        return PP_CNT_WALK_READ;
    if (in->cframe_current >= 0 && pw.frame &&
        bpf_probe_read_user(&pw.frame, sizeof(pw.frame),
                            (void *)(pw.frame + (__u32)in->cframe_current)))
        return PP_CNT_WALK_READ;
    if (!pw.frame)
        return PP_CNT_WALK_IDLE;
    bpf_loop(PY_FRAME_STEPS, py_frame_cb, &pw, 0);
    if (pw.frame && !(w->flags & PP_RT_READ_FAILED))
        w->flags |= PP_RT_TRUNCATED;
    if (w->n == 0)
        return w->flags & PP_RT_READ_FAILED ? PP_CNT_WALK_READ : PP_CNT_WALK_IDLE;
    return PP_CNT_WALK_OK;
}

#endif
