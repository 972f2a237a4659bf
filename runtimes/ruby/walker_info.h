/* The Ruby walker's per-process data (the `info` of struct pp_rt_proc), shared by
 * runtimes/ruby/walker.bpf.h and the user space that fills it (runtimes/ruby/walker.c). Offsets are
 * the running Ruby's (docs/ruby.md). */
#ifndef PP_RUBY_WALKER_INFO_H
#define PP_RUBY_WALKER_INFO_H

struct pp_ruby_info {
    /* The running execution context: ec = *(*ec_root + root_ec) when root_ec >= 0 (3.x: the
     * main ractor's threads.running_ec), else ec = *ec_root (2.6/2.7:
     * ruby_current_execution_context_ptr). */
    unsigned long long ec_root;
    int root_ec;
    /* The thread it belongs to: th = *(ec + ec_thread); its pthread_t at th_thread_id, or, when
     * th_nt is not 0, at *(th + th_nt) + th_thread_id (3.2+: the native thread). */
    unsigned int ec_thread, th_nt, th_thread_id;
    unsigned int ec_vm_stack, ec_vm_stack_size, ec_cfp;
    unsigned int cfp_size, cfp_pc, cfp_iseq, cfp_ep; /* rb_control_frame_t */
    unsigned int iseq_body;                          /* rb_iseq_t.body */
};

/* The check value recorded per Ruby frame: 16 bits of the iseq's body pointer, which user space
 * compares with the iseq it names later (the address may hold another object by then). */
static inline unsigned int pp_ruby_check(unsigned long long body)
{
    unsigned long long x = (body >> 3) * 0x9e3779b97f4a7c15ULL;
    return (unsigned int)(x >> 48);
}

/* A frame is two words. Ruby frame: the iseq's address with the check value in bits 48-63, and
 * the pc. C-function frame: 0 and 0. */
#define PP_RUBY_WORD0(iseq, check)                                                                 \
    (((unsigned long long)(iseq)&0xffffffffffffull) | ((unsigned long long)(check) << 48))
#define PP_RUBY_ISEQ(w0) ((w0)&0xffffffffffffull)
#define PP_RUBY_CHECK(w0) ((unsigned int)((w0) >> 48))

/* rb_control_frame_t's env flags (ep[0]): the frame magic, and T_IMEMO/imemo_iseq of RBasic. */
#define PP_RUBY_FRAME_MAGIC_MASK 0x7fff0001u
#define PP_RUBY_FRAME_MAGIC_CFUNC 0x55550001u
#define PP_RUBY_T_IMEMO 0x1au
#define PP_RUBY_IMEMO_ISEQ 7u

#endif
