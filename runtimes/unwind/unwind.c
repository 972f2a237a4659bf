#include "runtimes/unwind/unwind.h"

#include <stdbool.h>
#include <string.h>

/* The 8 bytes at addr, when they lie inside the copied stack [base, base + len). */
static int read_u64(const uint8_t *stack, size_t len, uint64_t base, uint64_t addr, uint64_t *out)
{
    if (addr < base || addr - base > len || len - (addr - base) < sizeof(*out))
        return -1;
    memcpy(out, stack + (addr - base), sizeof(*out));
    return 0;
}

/* The row of a caller frame at return address ret: the call's row (ret - 1), unless ret is the
 * first byte of the sigreturn trampoline (a signal handler "returns" to __restore_rt's start,
 * and the byte before it belongs to another function). *at is the pc the frame is named by. */
static int caller_row(pp_unwind_lookup lookup, void *arg, uint64_t ret, pp_cfi_row *row,
                      uint64_t *at)
{
    *at = ret - 1;
    if (!lookup(arg, ret - 1, row))
        return 0;
    if (row->kind == PP_CFI_SIGRETURN)
        return 1;
    pp_cfi_row here;
    if (lookup(arg, ret, &here) && here.kind == PP_CFI_SIGRETURN) {
        *row = here;
        *at = ret;
    }
    return 1;
}

pp_unwind_result pp_unwind(const pp_unwind_regs *regs, const uint8_t *stack, size_t len,
                           pp_unwind_lookup lookup, void *arg, uint64_t *ips, size_t cap)
{
    pp_unwind_result r = {0};
    if (cap > PP_UNWIND_MAX_FRAMES)
        cap = PP_UNWIND_MAX_FRAMES;
    const uint64_t base = regs->sp;
    uint64_t pc = regs->ip, sp = regs->sp, bp = regs->bp;
    int exact = 1; /* pc is where the thread was (the leaf, or interrupted by a signal) */
    for (;;) {
        if (r.n >= cap) {
            r.stop = PP_UNWIND_MAX;
            return r;
        }
        pp_cfi_row row = {.kind = PP_CFI_NONE};
        uint64_t at = pc;
        int mapped = exact ? lookup(arg, pc, &row) : caller_row(lookup, arg, pc, &row, &at);
        if (!mapped) {
            r.stop = PP_UNWIND_UNMAPPED;
            return r;
        }
        ips[r.n++] = at;
        uint64_t cfa, nbp = bp, v;
        bool by_row = true; /* the step follows the row */
        switch (row.kind) {
        case PP_CFI_END:
            r.stop = PP_UNWIND_END;
            return r;
        case PP_CFI_SIGRETURN: {
            uint64_t nsp, nip;
            if (read_u64(stack, len, base, sp + PP_SIGFRAME_RBP, &nbp) < 0 ||
                read_u64(stack, len, base, sp + PP_SIGFRAME_RSP, &nsp) < 0 ||
                read_u64(stack, len, base, sp + PP_SIGFRAME_RIP, &nip) < 0) {
                r.stop = PP_UNWIND_STACK_SHORT;
                return r;
            }
            r.cfi_steps++;
            if (nip == 0) {
                r.stop = PP_UNWIND_END;
                return r;
            }
            /* The interrupted rsp may lie anywhere (sigaltstack): only the frame cap bounds a
             * chain of signal frames. */
            pc = nip, sp = nsp, bp = nbp, exact = 1;
            continue;
        }
        case PP_CFI_RSP:
            cfa = sp + (uint64_t)(int64_t)row.cfa_off;
            break;
        case PP_CFI_RBP:
            cfa = bp + (uint64_t)(int64_t)row.cfa_off;
            break;
        case PP_CFI_PLT:
            cfa = sp + 8 + ((pc & 15) >= 11 ? 8 : 0);
            break;
        default: /* no row, a gap, an unsupported rule: frame pointers */
            r.fp_steps++;
            if (bp == 0) { /* the outermost frame's rbp (_start clears it) */
                r.stop = PP_UNWIND_END;
                return r;
            }
            if (read_u64(stack, len, base, bp, &nbp) < 0) {
                r.stop = PP_UNWIND_STACK_SHORT;
                return r;
            }
            cfa = bp + 16;
            by_row = false;
            break;
        }
        if (by_row)
            r.cfi_steps++;
        if (cfa <= sp) { /* the caller's frame lies above this one, always */
            r.stop = PP_UNWIND_BAD_FRAME;
            return r;
        }
        if (by_row && row.rbp_off &&
            read_u64(stack, len, base, cfa + (uint64_t)(int64_t)row.rbp_off, &nbp) < 0) {
            r.stop = PP_UNWIND_STACK_SHORT;
            return r;
        }
        if (read_u64(stack, len, base, cfa - 8, &v) < 0) {
            r.stop = PP_UNWIND_STACK_SHORT;
            return r;
        }
        if (v == 0) { /* no caller */
            r.stop = PP_UNWIND_END;
            return r;
        }
        pc = v, sp = cfa, bp = nbp, exact = 0;
    }
}
