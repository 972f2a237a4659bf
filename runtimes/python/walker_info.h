/* The CPython walker's per-process data (the `info` of struct pp_rt_proc), shared by
 * runtimes/python/walker.bpf.h and the user space that fills it (runtimes/python/inbpf.c). Offsets
 * are the running interpreter's (docs/python-bpf.md); 0 for an optional field means absent. */
#ifndef PP_PYTHON_WALKER_INFO_H
#define PP_PYTHON_WALKER_INFO_H

struct pp_cpython_info {
    unsigned long long runtime;   /* &_PyRuntime in the target */
    unsigned long long shim_code; /* the interpreter's shim code object (3.13 init shim); 0:
                                     unknown, user space drops such frames when naming them */
    unsigned int rt_interp_head;
    unsigned int is_next, is_threads_head;
    unsigned int ts_next, ts_frame, ts_thread_id; /* ts_thread_id: the thread's pthread_t */
    int cframe_current;                           /* >= 0: ts_frame is a _PyCFrame *, the frame
                                                     pointer at this offset in it */
    unsigned int frame_object;                    /* 3.8-3.10: PyFrameObject, f_lasti an int */
    unsigned int fr_back, fr_code, fr_ip, fr_owner, fr_size;
    unsigned int cstack_owner; /* 3.12+: owner value of C-stack (shim) frames + 1; 0: none */
    unsigned int co_code_adaptive;
    unsigned int co_check_off, co_check_len; /* one read covering co_name and co_firstlineno */
    unsigned int co_name_rel, co_firstlineno_rel;
    unsigned int max_threads; /* thread states searched per interpreter */
};

/* The check value recorded per frame: user space compares it with the code object it names
 * later (the address may hold another code object by then). */
static inline unsigned int pp_cpython_check(unsigned long long name, int firstlineno)
{
    unsigned long long x = (name >> 3) ^ ((unsigned long long)(unsigned int)firstlineno << 40);
    x *= 0x9e3779b97f4a7c15ULL;
    return (unsigned int)(x >> 32);
}

/* A frame's second word: the instruction index (code units on 3.11+, f_lasti as stored before)
 * and the check value. The first word is the code object's address. */
#define PP_CPYTHON_WORD(idx, check)                                                                \
    (((unsigned long long)(unsigned int)(idx) << 32) | (unsigned long long)(unsigned int)(check))

#endif
