/* The Ruby walker of the system sampler (its folder's walker of the sampler program, listed by the
 * Makefile from the registry: build/walkers_gen.bpf.h; docs/ruby.md).
 *
 * With the GVL only one thread of a ractor runs Ruby code: the main ractor's running execution
 * context (3.x: ractor->threads.running_ec; 2.6/2.7: ruby_current_execution_context_ptr). The
 * sample is walked when that context's thread is the sampled task: its pthread_t (the thread
 * pointer, the fs base on x86_64 glibc) equals the task's fs base. A thread that runs without
 * the GVL (blocking I/O, a C extension that released it) counts `no_thread_state`.
 *
 * Control frames are walked from ec->cfp towards the end of the VM stack (the newest first; the
 * last frame is a dummy and not read). Per frame: one read of the control frame; an iseq frame
 * reads the iseq's RBasic flags and body pointer (one read) and records the iseq address with a
 * 16-bit check value of the body pointer, and the pc; a C-function frame (iseq NULL, magic
 * CFUNC in ep[0]) is recorded as a pair of zeros; other frames (dummy, ifunc) are skipped. Every
 * read goes through bpf_probe_read_user; every loop is bounded (bpf_loop). */
#ifndef PP_RUBY_BPF_H
#define PP_RUBY_BPF_H

#include "runtimes/ruby/walker_info.h"

#define RB_FRAME_STEPS (PP_RT_MAX_FRAMES + 96) /* dummy and ifunc frames are skipped */
#define RB_CFP_BUF 64

struct rb_walk {
    const struct pp_ruby_info *in;
    struct rt_walk *w;
    __u64 cfp, end;
};

static long rb_frame_cb(__u32 i, void *arg)
{
    struct rb_walk *rw = arg;
    const struct pp_ruby_info *in = rw->in;
    struct rt_walk *w = rw->w;
    __u64 cfp = rw->cfp;
    if (cfp >= rw->end)
        return 1;
    if (w->n >= PP_RT_MAX_FRAMES) {
        w->flags |= PP_RT_TRUNCATED;
        return 1;
    }
    __u8 *fb = w->buf;
    __u32 sz = in->cfp_size & (RB_CFP_BUF - 1 + RB_CFP_BUF); /* user space keeps it <= 64 */
    if (sz < 8 || sz > RB_CFP_BUF || bpf_probe_read_user(fb, sz, (void *)cfp) != 0) {
        w->flags |= PP_RT_READ_FAILED;
        return 1;
    }
    rw->cfp = cfp + sz;
    /* offsets masked for the verifier (user space checked them); buf has slack past 64 */
    __u64 pc = *(__u64 *)(fb + (in->cfp_pc & (RB_CFP_BUF - 1)));
    __u64 iseq = *(__u64 *)(fb + (in->cfp_iseq & (RB_CFP_BUF - 1)));
    __u64 ep = *(__u64 *)(fb + (in->cfp_ep & (RB_CFP_BUF - 1)));
    if (!iseq) {
        __u64 flags = 0;
        if (ep && bpf_probe_read_user(&flags, sizeof(flags), (void *)ep) == 0 &&
            (flags & PP_RUBY_FRAME_MAGIC_MASK) == PP_RUBY_FRAME_MAGIC_CFUNC)
            rt_push(w, 0, 0);
        return 0;
    }
    __u8 *ib = w->buf + RB_CFP_BUF + 8;
    __u32 bo = in->iseq_body & 31;
    if (bpf_probe_read_user(ib, bo + 8, (void *)iseq) != 0) {
        w->flags |= PP_RT_READ_FAILED;
        return 1;
    }
    __u64 flags = *(__u64 *)ib;
    if ((flags & 0x1f) != PP_RUBY_T_IMEMO || ((flags >> 12) & 0xf) != PP_RUBY_IMEMO_ISEQ)
        return 0; /* an ifunc (a C block) or garbage */
    __u64 body = *(__u64 *)(ib + bo);
    rt_push(w, PP_RUBY_WORD0(iseq, pp_ruby_check(body)), pc);
    return 0;
}

/* Fills w with the sampled thread's Ruby frames; returns a PP_CNT_WALK_* outcome. */
static __always_inline __u32 pp_walk_ruby(const struct pp_rt_proc *p, __u32 tid, struct rt_walk *w)
{
    const struct pp_ruby_info *in = (const void *)p->info;
    __u64 fsbase = rt_thread_pointer();
    if (!fsbase)
        return PP_CNT_WALK_NO_THREAD;
    __u64 ec = 0, th = 0, id = 0;
    if (bpf_probe_read_user(&ec, sizeof(ec), (void *)in->ec_root) != 0)
        return PP_CNT_WALK_READ;
    if (in->root_ec >= 0 && ec &&
        bpf_probe_read_user(&ec, sizeof(ec), (void *)(ec + (__u32)in->root_ec)) != 0)
        return PP_CNT_WALK_READ;
    if (!ec)
        return PP_CNT_WALK_NO_THREAD;
    if (bpf_probe_read_user(&th, sizeof(th), (void *)(ec + in->ec_thread)) != 0 || !th)
        return PP_CNT_WALK_READ;
    if (in->th_nt && bpf_probe_read_user(&th, sizeof(th), (void *)(th + in->th_nt)) != 0)
        return PP_CNT_WALK_READ;
    if (!th || bpf_probe_read_user(&id, sizeof(id), (void *)(th + in->th_thread_id)) != 0)
        return PP_CNT_WALK_READ;
    if (id != fsbase)
        return PP_CNT_WALK_NO_THREAD; /* another thread holds the GVL */
    __u64 stack = 0, size = 0;
    struct rb_walk rw = {.in = in, .w = w};
    if (bpf_probe_read_user(&stack, sizeof(stack), (void *)(ec + in->ec_vm_stack)) != 0 ||
        bpf_probe_read_user(&size, sizeof(size), (void *)(ec + in->ec_vm_stack_size)) != 0 ||
        bpf_probe_read_user(&rw.cfp, sizeof(rw.cfp), (void *)(ec + in->ec_cfp)) != 0)
        return PP_CNT_WALK_READ;
    if (!stack || size > (1ull << 28) || rw.cfp < stack)
        return PP_CNT_WALK_READ;
    /* frames are cfp, cfp + 1, ... below the dummy frame at the top of the stack */
    rw.end = stack + size * 8 - in->cfp_size;
    if (rw.cfp >= rw.end)
        return PP_CNT_WALK_IDLE;
    bpf_loop(RB_FRAME_STEPS, rb_frame_cb, &rw, 0);
    if (rw.cfp < rw.end && !(w->flags & PP_RT_READ_FAILED))
        w->flags |= PP_RT_TRUNCATED;
    if (w->n == 0)
        return w->flags & PP_RT_READ_FAILED ? PP_CNT_WALK_READ : PP_CNT_WALK_IDLE;
    return PP_CNT_WALK_OK;
}

#endif
