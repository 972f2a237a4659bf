/* The user-space native unwinder: follows a sampled thread's stack from its user registers and
 * a copy of the top of its stack (the perf-event backend's PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER) with the CFI rows of runtimes/unwind/cfi.h, falling back to frame
 * pointers for a frame whose pc has no row. The same rules as the BPF unwinder
 * (docs/ARCHITECTURE.md, "Native unwinding"):
 * - the first frame is the sampled ip; a caller's is its return address - 1 (the call
 *   instruction, so that a call that ends a function names it), except after a signal frame,
 *   whose interrupted ip is exact;
 * - CFA = rsp or rbp + off (PP_CFI_RSP/RBP), the PLT's rule (PP_CFI_PLT), the return address at
 *   CFA - 8, the caller's rbp at CFA + rbp_off when saved; __restore_rt (PP_CFI_SIGRETURN) takes
 *   rbp, rsp and rip from the rt_sigframe's ucontext at rsp; PP_CFI_END ends the stack;
 * - no row (or PP_CFI_NONE / PP_CFI_UNSUPPORTED): frame pointers for that frame, counted;
 * - a frame is never outside an executable mapping: the walk stops there;
 * - at most PP_UNWIND_MAX_FRAMES frames; reads only inside the copied stack.
 * Pure: no I/O, no allocation; the caller says where executable code is and gives its rows. */
#ifndef PP_UNWIND_UNWIND_H
#define PP_UNWIND_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/unwind/cfi.h"

#define PP_UNWIND_MAX_FRAMES 127

/* Offsets from rsp at __restore_rt (the rt_sigframe's pretcode is popped: rsp is its struct
 * ucontext, whose uc_mcontext starts at 40) of the interrupted rbp, rsp and rip. */
#define PP_SIGFRAME_RBP (40 + 10 * 8)
#define PP_SIGFRAME_RSP (40 + 15 * 8)
#define PP_SIGFRAME_RIP (40 + 16 * 8)

typedef struct pp_unwind_regs {
    uint64_t ip, sp, bp;
} pp_unwind_regs;

/* Where pc lies: returns 0 when pc is in no executable mapping of the process; else 1, with *row
 * the CFI row covering pc (pc - the file's load bias, pp_cfi_packed_find), or a PP_CFI_NONE row
 * when the file has no rows (JIT code, a perf-map region, rows not built yet: frame pointers for
 * that frame). */
typedef int (*pp_unwind_lookup)(void *arg, uint64_t pc, pp_cfi_row *row);

typedef enum {
    PP_UNWIND_END = 0,     /* reached the outermost frame (PP_CFI_END, or a zero return address) */
    PP_UNWIND_UNMAPPED,    /* the next pc lies in no executable mapping */
    PP_UNWIND_STACK_SHORT, /* a read fell outside the copied stack */
    PP_UNWIND_BAD_FRAME,   /* a CFA that does not move up the stack */
    PP_UNWIND_MAX,         /* PP_UNWIND_MAX_FRAMES (or the caller's cap) reached */
} pp_unwind_stop;

typedef struct pp_unwind_result {
    size_t n;           /* ips written */
    unsigned cfi_steps; /* caller steps taken (or tried) with a CFI row */
    unsigned fp_steps;  /* caller steps taken (or tried) by frame pointers: no row for the pc */
    pp_unwind_stop stop;
} pp_unwind_result;

/* Unwinds: writes at most cap (<= PP_UNWIND_MAX_FRAMES) ips, leaf first, into ips. stack holds
 * len bytes copied from the thread's stack at address regs->sp. */
pp_unwind_result pp_unwind(const pp_unwind_regs *regs, const uint8_t *stack, size_t len,
                           pp_unwind_lookup lookup, void *arg, uint64_t *ips, size_t cap);

/* Whether the unwind reached the stack's end by its rules; any other stop counts the sample as
 * truncated. */
static inline int pp_unwind_complete(const pp_unwind_result *r)
{
    return r->stop == PP_UNWIND_END;
}

#endif
