/* The PHP walker's per-process data (the `info` of struct pp_rt_proc), shared by
 * runtimes/php/walker.bpf.h and the user space that fills it (runtimes/php/walker.c). Offsets are
 * the running engine's (docs/php.md, "Layout tables"). */
#ifndef PP_PHP_WALKER_INFO_H
#define PP_PHP_WALKER_INFO_H

struct pp_php_info {
    unsigned long long eg_ced; /* &executor_globals.current_execute_data in the target */
    /* 1: read the sampled thread's r14 and r15, where the HYBRID VM of GCC builds keeps the
     * executing frame and its opline on x86_64 (the opline in memory is stored only at calls) */
    unsigned long long vm_regs;
    unsigned int ed_opline, ed_func, ed_prev, ed_len; /* zend_execute_data, one read of ed_len */
    unsigned int fn_len;                              /* one read of a zend_function: [0, fn_len) */
    unsigned int fn_name, fn_scope;                   /* common.function_name, common.scope */
    unsigned int op_last, op_opcodes, op_filename, op_line_start; /* zend_op_array */
    unsigned int zop_shift;                                       /* log2(sizeof(zend_op)) */
};

#define PP_PHP_USER_FUNCTION 2u /* zend_function.type of user code */
#define PP_PHP_EVAL_CODE 4u
#define PP_PHP_NO_OPLINE 0xffffffffu /* the frame's opline was not inside its op_array */

/* The check value recorded per frame: user space compares it with the function it names later
 * (the address may hold another function by then). For user code: the function name's and the
 * file name's addresses and the first line; for internal functions: the name and the class. */
static inline unsigned int pp_php_check(unsigned int type, unsigned long long name,
                                        unsigned long long other, unsigned int line)
{
    unsigned long long x = (name >> 3) ^ (other << 17) ^ ((unsigned long long)line << 40) ^ type;
    x *= 0x9e3779b97f4a7c15ULL;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    return (unsigned int)(x >> 32);
}

/* A frame's second word: the opline's index in its op_array (PP_PHP_NO_OPLINE when unknown)
 * and the check value. The first word is the zend_function's address. */
#define PP_PHP_WORD(idx, check)                                                                    \
    (((unsigned long long)(unsigned int)(idx) << 32) | (unsigned long long)(unsigned int)(check))

#endif
