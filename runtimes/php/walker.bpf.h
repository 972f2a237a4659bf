/* The PHP walker of the system sampler (its folder's walker of the sampler program, listed by the
 * Makefile from the registry: build/walkers_gen.bpf.h; docs/php.md).
 *
 * NTS builds keep the engine's state in the global executor_globals: its current_execute_data is
 * the innermost frame of the (only) PHP thread, and each zend_execute_data links to its caller by
 * prev_execute_data. Per frame the walker records the zend_function's address, the index of the
 * frame's current opline in the function's opcodes (its line, looked up by user space) and a
 * check value of the function's name, file and first line (pp_php_check). The VM keeps the
 * running frame in r14 and its opline in r15, and stores the opline in the frame only at calls:
 * when the thread's r14 is a frame of the chain and r15 points at one of that frame's zend_ops,
 * r15 is its current opline. Every read goes through
 * bpf_probe_read_user (garbage gives a failed read, never a fault); the loop is bounded
 * (bpf_loop). */
#ifndef PP_PHP_BPF_H
#define PP_PHP_BPF_H

#include "runtimes/php/walker_info.h"

#define PHP_FRAME_STEPS (PP_RT_MAX_FRAMES + 32) /* frames without a function are skipped */
#define PHP_ED_BUF 64                           /* a zend_execute_data read */
#define PHP_FN_BUF 256                          /* a zend_function read */

struct php_scratch {
    __u8 ed[PHP_ED_BUF + 8]; /* 8 bytes of slack past every masked offset */
    __u8 fn[PHP_FN_BUF + 8];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct php_scratch);
} php_scratch SEC(".maps");

struct php_walk {
    const struct pp_php_info *in;
    struct rt_walk *w;
    struct php_scratch *s;
    __u64 ed;
    __u64 r14, r15; /* the thread's registers (the VM's frame and opline), or 0 */
};

static long php_frame_cb(__u32 i, void *arg)
{
    struct php_walk *pw = arg;
    const struct pp_php_info *in = pw->in;
    struct rt_walk *w = pw->w;
    struct php_scratch *s = pw->s;
    __u64 ed = pw->ed;
    if (!ed)
        return 1;
    if (w->n >= PP_RT_MAX_FRAMES) {
        w->flags |= PP_RT_TRUNCATED;
        return 1;
    }
    __u32 el = in->ed_len & (PHP_ED_BUF - 1); /* user space keeps it below PHP_ED_BUF */
    if (el < 8 || bpf_probe_read_user(s->ed, el, (void *)ed) != 0) {
        w->flags |= PP_RT_READ_FAILED;
        return 1;
    }
    __u64 opline = *(__u64 *)(s->ed + (in->ed_opline & (PHP_ED_BUF - 1)));
    __u64 func = *(__u64 *)(s->ed + (in->ed_func & (PHP_ED_BUF - 1)));
    pw->ed = *(__u64 *)(s->ed + (in->ed_prev & (PHP_ED_BUF - 1)));
    if (pw->ed == ed)
        pw->ed = 0; /* a loop: garbage */
    if (!func)
        return 0; /* a frame without a function: nothing to name */
    __u32 fl = in->fn_len & (PHP_FN_BUF - 1);
    if (fl < 24 || bpf_probe_read_user(s->fn, fl, (void *)func) != 0) {
        /* an internal function's allocation may end before the op_array fields */
        fl = 24;
        if (bpf_probe_read_user(s->fn, 24, (void *)func) != 0) {
            w->flags |= PP_RT_READ_FAILED;
            return 1;
        }
    }
    __u32 type = s->fn[0];
    __u64 name = *(__u64 *)(s->fn + (in->fn_name & (PHP_FN_BUF - 1)));
    __u64 scope = *(__u64 *)(s->fn + (in->fn_scope & (PHP_FN_BUF - 1)));
    __u32 idx = PP_PHP_NO_OPLINE, check;
    if ((type == PP_PHP_USER_FUNCTION || type == PP_PHP_EVAL_CODE) && fl > 24) {
        __u64 opcodes = *(__u64 *)(s->fn + (in->op_opcodes & (PHP_FN_BUF - 1)));
        __u32 last = *(__u32 *)(s->fn + (in->op_last & (PHP_FN_BUF - 1)));
        __u64 file = *(__u64 *)(s->fn + (in->op_filename & (PHP_FN_BUF - 1)));
        __u32 start = *(__u32 *)(s->fn + (in->op_line_start & (PHP_FN_BUF - 1)));
        __u32 sh = in->zop_shift & 7;
        if (pw->r14 && pw->r14 == ed && pw->r15 >= opcodes &&
            pw->r15 < opcodes + ((__u64)last << sh) && !((pw->r15 - opcodes) & ((1u << sh) - 1)))
            opline = pw->r15; /* the running frame: its opline is in r15, not stored yet */
        if (opline >= opcodes && opline < opcodes + ((__u64)last << sh))
            idx = (__u32)((opline - opcodes) >> sh);
        check = pp_php_check(type, name, file, start);
    } else {
        check = pp_php_check(type, name, scope, 0);
    }
    rt_push(w, func, PP_PHP_WORD(idx, check));
    return 0;
}

/* Fills w with the PHP frames of the sampled thread; returns a PP_CNT_WALK_* outcome. */
static __always_inline __u32 pp_walk_php(const struct pp_rt_proc *p, __u32 tid, struct rt_walk *w)
{
    (void)tid; /* the frame is the executor's, whichever thread runs it */
    const struct pp_php_info *in = (const void *)p->info;
    __u32 zero = 0;
    struct php_scratch *s = bpf_map_lookup_elem(&php_scratch, &zero);
    if (!s)
        return PP_CNT_WALK_READ;
    struct php_walk pw = {.in = in, .w = w, .s = s};
    if (bpf_probe_read_user(&pw.ed, sizeof(pw.ed), (void *)in->eg_ced) != 0)
        return PP_CNT_WALK_READ;
    if (!pw.ed)
        return PP_CNT_WALK_IDLE;
#ifdef __TARGET_ARCH_x86
    if (in->vm_regs) {
        /* r14/r15 are callee-saved: in the VM's handlers and in the C functions they call, r14
         * is the executing frame and r15 its opline; they are trusted for the frame equal to
         * r14 only when r15 points at one of that frame's own zend_ops (php_frame_cb) */
        struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
        pw.r14 = BPF_CORE_READ(regs, r14);
        pw.r15 = BPF_CORE_READ(regs, r15);
    }
#endif
    bpf_loop(PHP_FRAME_STEPS, php_frame_cb, &pw, 0);
    if (pw.ed && !(w->flags & PP_RT_READ_FAILED))
        w->flags |= PP_RT_TRUNCATED;
    if (w->n == 0)
        return w->flags & PP_RT_READ_FAILED ? PP_CNT_WALK_READ : PP_CNT_WALK_IDLE;
    return PP_CNT_WALK_OK;
}

#endif
