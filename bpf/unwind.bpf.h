/* The sampler's CFI unwinder of user stacks (bpf/unwind.h for the maps; docs/ARCHITECTURE.md,
 * "Native unwinding"). Included by bpf/sampler.bpf.c after send_trace and take_stack.
 *
 * One frame per bpf_loop iteration, its state in a per-CPU array: the frame's mapping from the
 * pid's trie (no mapping: the stack ends there, so no frame lies outside an executable mapping),
 * its row by a bounded binary search in the file's rows of the pc's page, then the caller's
 * registers by the row's rule; where there is no row (anonymous code, a file whose rows are not
 * loaded yet, a gap, an unsupported rule) by frame pointers, counted. */
#ifndef PP_UNWIND_BPF_H
#define PP_UNWIND_BPF_H

#include "bpf/unwind.h"

const volatile __u32 unwind_cfi = 0; /* 1: CFI unwinding of user stacks; 0: frame pointers */

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_UNW_PROCS_ENTRIES);
    __type(key, __u32);
    __type(value, struct pp_unw_proc);
} unw_procs SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(max_entries, PP_UNW_MAPS_ENTRIES);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct pp_unw_map_key);
    __type(value, struct pp_unw_map_val);
} unw_maps SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, PP_UNW_PAGES_ENTRIES);
    __type(key, struct pp_unw_page_key);
    __type(value, struct pp_unw_page_val);
} unw_pages SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, PP_UNW_ROWS_DEFAULT); /* sized by user space before load */
    __uint(map_flags, BPF_F_MMAPABLE);        /* user space copies rows in, no syscall per row */
    __type(key, __u32);
    __type(value, __u64);
} unw_rows SEC(".maps");

struct unw_state {
    struct pp_stack_rec r; /* the ips, as sent */
    __u64 ip, sp, bp, h;
    __u32 pid, n;
    __u32 exact;    /* ip is not a return address (the first frame, a signal's interrupted one) */
    __u32 fallback; /* frames unwound by frame pointers */
    __u32 cfi;      /* frames unwound by CFI */
    __u32 truncated;
    /* the first frame in anonymous executable memory (JIT code), as the unwind reached it: its
     * pc (a return address), sp and fp; jit_ip 0 when none (rt_jit_regs) */
    __u64 jit_ip, jit_sp, jit_bp;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct unw_state);
} unw_scratch SEC(".maps");

struct unw_ctx {
    struct unw_state *s;
};

/* The row of file pc rel in file_id (*row), and the one after it (*next, 0 when none). 0 when
 * there is none (no rows for that page, before the first row). */
static __always_inline int unw_find(__u32 file_id, __u64 rel, __u64 *row, __u64 *next)
{
    if (rel >> 32)
        return 0;
    struct pp_unw_page_key pk = {.file_id = file_id, .page = (__u32)(rel >> PP_UNW_PAGE_SHIFT)};
    struct pp_unw_page_val *pv = bpf_map_lookup_elem(&unw_pages, &pk);
    if (!pv || !pv->n)
        return 0;
    __u32 l = pv->lo, r = pv->lo + pv->n, pc = (__u32)rel;
    for (int i = 0; i < PP_UNW_SEARCH_STEPS && r - l > 1; i++) {
        __u32 mid = l + (r - l) / 2;
        __u64 *v = bpf_map_lookup_elem(&unw_rows, &mid);
        if (!v)
            return 0;
        if (PP_UNW_ROW_PC(*v) <= pc)
            l = mid;
        else
            r = mid;
    }
    __u64 *v = bpf_map_lookup_elem(&unw_rows, &l);
    if (!v || PP_UNW_ROW_PC(*v) > pc)
        return 0;
    *row = *v;
    __u32 nx = l + 1;
    __u64 *w = bpf_map_lookup_elem(&unw_rows, &nx);
    *next = w ? *w : 0;
    return 1;
}

static __always_inline int unw_read(__u64 *dst, __u64 addr)
{
    return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* One frame: records s->ip, then finds its caller's ip, sp, bp. 1 ends the walk. */
static long unw_step(__u32 i, void *arg)
{
    struct unw_state *s = ((struct unw_ctx *)arg)->s;
    __u64 ip = s->ip, pc = s->exact ? ip : ip - 1;
    struct pp_unw_map_key k = {.prefixlen = PP_UNW_KEY_BITS};
    __u32 pid_be = __builtin_bswap32(s->pid);
    __u64 pc_be = __builtin_bswap64(pc);
    __builtin_memcpy(k.data, &pid_be, 4);
    __builtin_memcpy(k.data + 4, &pc_be, 8);
    struct pp_unw_map_val *m = bpf_map_lookup_elem(&unw_maps, &k);
    if (!m || !ip)
        return 1; /* outside every executable mapping: not a frame */
    __u32 n = s->n;
    if (n >= PP_MAX_STACK_DEPTH) {
        s->truncated = 1;
        return 1;
    }
    if (m->anon && !s->jit_ip && n > 0) { /* (the sampled pc itself: the registers) */
        s->jit_ip = ip;
        s->jit_sp = s->sp;
        s->jit_bp = s->bp;
    }
    s->r.ips[n] = ip;
    s->n = n + 1;
    s->h = mix(s->h, ip);

    __u64 row = 0, next = 0, sp = s->sp, bp = s->bp, cfa, ra;
    __u32 kind = PP_UNW_NONE;
    if (m->file_id && unw_find(m->file_id, pc - m->bias, &row, &next)) {
        kind = PP_UNW_ROW_KIND(row);
        /* a signal handler's return address is __restore_rt itself: its row starts at ip */
        if (!s->exact && PP_UNW_ROW_KIND(next) == PP_UNW_SIGRETURN &&
            PP_UNW_ROW_PC(next) == (__u32)(ip - m->bias))
            kind = PP_UNW_SIGRETURN;
    }
    s->exact = 0;
    switch (kind) {
    case PP_UNW_END:
        s->cfi++;
        return 1;
    case PP_UNW_SIGRETURN:
        if (unw_read(&ra, sp + PP_UNW_SIG_RIP) || unw_read(&cfa, sp + PP_UNW_SIG_RSP) ||
            unw_read(&bp, sp + PP_UNW_SIG_RBP))
            return 1;
        s->cfi++;
        s->exact = 1; /* the interrupted instruction, not a return address */
        s->ip = ra;
        s->sp = cfa;
        s->bp = bp;
        return ra ? 0 : 1;
    case PP_UNW_RSP:
        cfa = sp + PP_UNW_ROW_CFA(row);
        break;
    case PP_UNW_RBP:
        cfa = bp + PP_UNW_ROW_CFA(row);
        break;
    case PP_UNW_PLT:
        cfa = sp + 8 + ((ip & 15) >= 11 ? 8 : 0);
        break;
    default: /* no row: frame pointers (counted also when they lead nowhere) */
        s->fallback++;
        if (!bp || unw_read(&ra, bp + 8) || unw_read(&cfa, bp))
            return 1;
        s->ip = ra;
        s->sp = bp + 16;
        s->bp = cfa;
        return ra ? 0 : 1;
    }
    if (unw_read(&ra, cfa - 8))
        return 1;
    long long roff = PP_UNW_ROW_RBP(row);
    if (roff && kind != PP_UNW_PLT && unw_read(&bp, cfa + roff))
        return 1;
    s->cfi++;
    s->ip = ra;
    s->sp = cfa;
    s->bp = bp;
    return ra ? 0 : 1;
}

/* The hash of the current user stack unwound by CFI (as take_stack's, sent the same way); by
 * frame pointers (take_stack) for a process whose mappings are not loaded. A global function:
 * verified once. */
__noinline __u64 take_user_stack(struct bpf_perf_event_data *ctx, __u32 pid)
{
    __u32 zero = 0;
    struct unw_state *s = bpf_map_lookup_elem(&unw_scratch, &zero);
    if (!s)
        return STACK_NONE;
    s->jit_ip = 0; /* what rt_jit_regs reads: this sample's, or none */
    if (!unwind_cfi || !pid)
        return take_stack(ctx, BPF_F_USER_STACK);
    struct task_struct *task = bpf_get_current_task_btf();
    __u64 mm = (__u64)BPF_CORE_READ(task, mm);
    struct pp_unw_proc *p = bpf_map_lookup_elem(&unw_procs, &pid);
    if (!mm)
        return STACK_NONE;
    if (p && !p->mm)
        p->mm = mm;
    if (!p || p->mm != mm) { /* not loaded yet, or an exec since */
        bump(PP_CNT_UNW_UNLOADED);
        return take_stack(ctx, BPF_F_USER_STACK);
    }
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
    s->ip = BPF_CORE_READ(regs, ip);
    s->sp = BPF_CORE_READ(regs, sp);
    s->bp = BPF_CORE_READ(regs, bp);
    s->pid = pid;
    s->n = 0;
    s->exact = 1;
    s->fallback = 0;
    s->cfi = 0;
    s->truncated = 0;
    s->jit_ip = 0;
    s->h = 0x9e3779b97f4a7c15ULL;
    struct unw_ctx c = {.s = s};
    bpf_loop(PP_MAX_STACK_DEPTH + 1, unw_step, &c, 0);
    __u32 n = s->n;
    if (n == 0) { /* the ip is in no mapping loaded (one mapped since the last scan): as before */
        s->jit_ip = 0;
        bump(PP_CNT_UNW_UNLOADED);
        return take_stack(ctx, BPF_F_USER_STACK);
    }
    if (n > PP_MAX_STACK_DEPTH)
        return STACK_NONE;
    add(PP_CNT_UNW_CFI_FRAMES, s->cfi);
    add(PP_CNT_UNW_FP_FRAMES, s->fallback);
    if (s->fallback)
        bump(PP_CNT_UNW_FALLBACK);
    else
        bump(PP_CNT_UNW_CFI_SAMPLES);
    if (s->truncated)
        bump(PP_CNT_UNW_TRUNCATED);
    return send_trace(&s->r, mix(s->h, n), n, sizeof(s->r));
}

/* The registers of the sample's first user frame in anonymous executable memory (JIT code) below
 * native frames, as this sample's CFI unwind (take_user_stack, run before the walkers) reached
 * it: where a runtime's generated code called the native code the thread runs now. 0 when the
 * unwind met none (or did not run: frame pointers, mappings not loaded). */
static __always_inline int rt_jit_regs(__u64 *pc, __u64 *sp, __u64 *fp)
{
    __u32 zero = 0;
    struct unw_state *s = bpf_map_lookup_elem(&unw_scratch, &zero);
    if (!s || !s->jit_ip)
        return 0;
    *pc = s->jit_ip;
    *sp = s->jit_sp;
    *fp = s->jit_bp;
    return 1;
}

#endif
