/* The HotSpot walker of the system sampler (its folder's walker of the sampler program, listed by
 * the Makefile from the registry; docs/java.md "In-sampler walker").
 *
 * A sampled thread whose user pc is in the JVM's code cache runs Java code (compiled, or the
 * interpreter): its frames are walked from the sampled user registers exactly as
 * runtimes/java/hotspot_walk.c walks a stopped thread from its JavaFrameAnchor (x86_64 frames):
 *  - a pc in the interpreter: the frame keeps fp; its Method* at fp + if_method words, the
 *    caller's unextended sp at fp + if_sender_sp words, the return address at fp + 8, the
 *    caller's fp at fp, the caller's sp fp + 16;
 *  - else the pc's CodeBlob (the code heap holding it, its segment map followed back to the
 *    blob's first segment, bounded hops): a frame of CodeBlob._frame_size words above its
 *    unextended sp, the return address and the caller's fp in the two words below the caller's
 *    sp; an nmethod's frame is recorded (its Method*, its tier from _comp_level), a stub's is
 *    stepped over; a blob without a frame of its own (the call stub) ends the walk.
 * Each frame gives the Method* (and a compiled frame's pc offset) and a word of its type, a
 * compiled frame's nmethod and a check of its method's identity (walker_info.h:
 * ConstMethod*, holder's name, name and signature indexes). The walk stops on leaving the code
 * cache or at anything implausible (a sp that does not grow, a frame above 512 KiB). A thread in
 * native or VM code (pc outside the code cache) is walked from where the sampler's CFI unwind of
 * the same sample (run before the walkers) first met anonymous executable memory (rt_jit_regs: the
 * return address into the Java code that called it, the caller's sp and fp, exact as CFI restores
 * them); without such a frame its native frames are the sample's stack. Every read goes through
 * bpf_probe_read_user; every loop is bounded. */
#ifndef PP_JAVA_BPF_H
#define PP_JAVA_BPF_H

#include "runtimes/java/walker_info.h"

#define HS_STEPS (PP_RT_MAX_FRAMES + 32) /* stubs between Java frames are stepped over */
#define HS_HOPS 48                       /* segment-map hops (each back up to 254 segments) */
#define HS_MAX_FRAME_WORDS 65536
#define HS_MAX_STEP (1ULL << 20)

struct hs_walk {
    const struct pp_hotspot_info *in;
    struct rt_walk *w;
    __u64 pc, sp, unext, fp;
    __u32 top; /* the next frame is the sampled one: its pc may be in a prologue or epilogue */
};

#define HS_PROLOGUE 128 /* prologue bytes scanned (C1, C2: 12-60 on JDK 17 and 25) */

struct hs_scan {
    const __u8 *b;
    struct pp_hsw_prologue p;
};

static long hs_scan_cb(__u32 j, void *arg)
{
    struct hs_scan *c = arg;
    return pp_hsw_prologue_at(&c->p, c->b + (j & (HS_PROLOGUE - 1)), (int)j);
}

/* Where the sampled compiled frame's caller is (a PP_HSW_AT_* of walker_info.h) when its pc (in
 * the blob at blob, its header in hb) is in a prologue or an epilogue: before the blob's
 * _frame_complete_offset the prologue's bytes tell how far it got, in the body the instruction
 * at pc. scan: HS_PROLOGUE bytes of scratch, 4 before them and 16 after them readable too. */
static __always_inline __u32 hs_top_at(const struct pp_hotspot_info *in, const __u8 *hb, __u64 blob,
                                       __u64 pc, __s32 fs, __u8 *scan)
{
    __u8 c[16] = {}; /* 8 bytes before pc, 8 from it */
    if (bpf_probe_read_user(c, sizeof(c), (void *)(pc - 8)) != 0)
        return PP_HSW_AT_BODY;
    __u32 at = pp_hsw_epilogue(c);
    if (at != PP_HSW_AT_BODY || !in->blob_fco)
        return at;
    __s32 fco = *(short *)(hb + (in->blob_fco & (PP_HSW_HDR - 1)));
    const __u8 *cp = hb + (in->blob_code & (PP_HSW_HDR - 1));
    __u64 code =
        in->blob_code & PP_HSW_CODE_REL ? blob + (__u64)(__s64) * (__s32 *)cp : *(__u64 *)cp;
    if (fco <= 0 || pc < code || pc >= code + (__u64)fco)
        return PP_HSW_AT_BODY;
    /* the prologue and the bytes the scan looks at past it (no further: the blob may end
     * there, at the end of the committed heap) */
    __u32 len = fco + 16 < HS_PROLOGUE ? (__u32)fco + 16 : HS_PROLOGUE;
    if (bpf_probe_read_user(scan, len & (2 * HS_PROLOGUE - 1), (void *)code) != 0)
        return PP_HSW_AT_FAILED;
    struct hs_scan sc = {.b = scan};
    pp_hsw_prologue_init(&sc.p, fco, fs);
    bpf_loop(HS_PROLOGUE, hs_scan_cb, &sc, 0);
    return pp_hsw_prologue_state(&sc.p, (int)(pc - code));
}

/* The CodeBlob holding pc (CodeHeap::find_start), 0 when none. */
static __always_inline __u64 hs_find_blob(const struct pp_hotspot_info *in, __u64 pc)
{
    __u64 lo = 0, map = 0;
#pragma unroll
    for (int i = 0; i < PP_HSW_HEAPS; i++) {
        if (i < in->nheaps && pc >= in->heap_lo[i] && pc < in->heap_hi[i]) {
            lo = in->heap_lo[i];
            map = in->segmap[i];
        }
    }
    if (!lo)
        return 0;
    __u32 lg = in->log2seg & 31;
    __u64 idx = (pc - lo) >> lg;
    for (int hop = 0; hop < HS_HOPS; hop++) {
        __u8 b = 0;
        if (bpf_probe_read_user(&b, 1, (void *)(map + idx)) != 0 || b == 0xff || b > idx)
            return 0; /* free, or not a plausible map */
        if (!b)
            return lo + (idx << lg) + in->heapblock_size;
        idx -= b;
    }
    return 0;
}

/* The check value of method's identity (walker_info.h), 0 when unreadable. */
static __always_inline __u32 hs_check(const struct pp_hotspot_info *in, __u64 method)
{
    __u64 cm = 0, cp = 0, holder = 0, kname = 0;
    __u32 idx = 0;
    if (bpf_probe_read_user(&cm, sizeof(cm), (void *)(method + in->method_const)) != 0 || !cm ||
        bpf_probe_read_user(&idx, sizeof(idx), (void *)(cm + in->cm_name_index)) != 0 ||
        bpf_probe_read_user(&cp, sizeof(cp), (void *)(cm + in->cm_constants)) != 0 || !cp ||
        bpf_probe_read_user(&holder, sizeof(holder), (void *)(cp + in->cp_holder)) != 0 ||
        !holder ||
        bpf_probe_read_user(&kname, sizeof(kname), (void *)(holder + in->klass_name)) != 0)
        return 0;
    return pp_hsw_check(cm, kname, idx);
}

static long hs_frame_cb(__u32 i, void *arg)
{
    struct hs_walk *s = arg;
    const struct pp_hotspot_info *in = s->in;
    struct rt_walk *w = s->w;
    if (w->n >= PP_RT_MAX_FRAMES) {
        w->flags |= PP_RT_TRUNCATED;
        return 1;
    }
    __u64 pc = s->pc, sp = s->sp, fp = s->fp, nsp, nunext, npc, nfp;
    __u64 *wd = (__u64 *)w->buf;
    __u32 top = s->top;
    s->top = 0;
    if (pc >= in->ilo && pc < in->ihi) {
        /* words PP_HSW_IFRAME_LO .. 1 from fp, at wd[0..7] */
        if (fp < sp || fp - sp > HS_MAX_STEP ||
            bpf_probe_read_user(wd, 64, (void *)(fp + PP_HSW_IFRAME_LO * 8)) != 0) {
            w->flags |= PP_RT_READ_FAILED;
            return 1;
        }
        __u64 m = wd[(in->if_method - PP_HSW_IFRAME_LO) & 7];
        nunext = wd[(in->if_sender_sp - PP_HSW_IFRAME_LO) & 7];
        nfp = wd[(0 - PP_HSW_IFRAME_LO) & 7];
        npc = wd[(1 - PP_HSW_IFRAME_LO) & 7];
        __u32 check = m ? hs_check(in, m) : 0;
        if (!check) {
            w->flags |= PP_RT_READ_FAILED;
            return 1;
        }
        rt_push(w, m, PP_HSW_WORD('0', check));
        nsp = fp + 16;
    } else {
        __u64 blob = hs_find_blob(in, pc);
        if (!blob)
            return 1; /* left the code cache */
        __u8 *hb = w->buf;
        __u32 hl = in->hdr_len & (PP_HSW_HDR - 1);
        if (hl < 16 || bpf_probe_read_user(hb, hl, (void *)blob) != 0) {
            w->flags |= PP_RT_READ_FAILED;
            return 1;
        }
        /* offsets masked for the verifier (user space keeps them below hdr_len - 8) */
        __s32 size = *(__s32 *)(hb + (in->blob_size & (PP_HSW_HDR - 1)));
        __s32 fs = *(__s32 *)(hb + (in->blob_frame_size & (PP_HSW_HDR - 1)));
        if (size <= 0 || pc >= blob + (__u32)size)
            return 1; /* not the blob that holds pc: a stale map */
        if (fs <= 0 || fs > HS_MAX_FRAME_WORDS)
            return 1; /* no frame of its own: the call stub, the native caller's side */
        int nm;
        if (in->kind_nmethod >= 0) {
            nm = hb[in->blob_kind & (PP_HSW_HDR - 1)] == (__u8)in->kind_nmethod;
        } else {
            __u64 name = *(__u64 *)(hb + (in->blob_kind & (PP_HSW_HDR - 1))), text = 0;
            if (bpf_probe_read_user(&text, sizeof(text), (void *)name) != 0)
                text = 0;
            /* "nmethod\0", and "native n(method)": a compiled native method's wrapper */
            nm = text == 0x00646f6874656d6eULL || text == 0x6e2065766974616eULL;
        }
        if (nm) {
            __u64 m = 0;
            __u8 lvl = 0;
            __u32 check = 0;
            if (bpf_probe_read_user(&m, sizeof(m), (void *)(blob + in->nm_method)) == 0 && m &&
                bpf_probe_read_user(&lvl, 1, (void *)(blob + in->nm_comp_level)) == 0)
                check = hs_check(in, m);
            if (!check) {
                w->flags |= PP_RT_READ_FAILED;
                return 1;
            }
            char t = lvl == 0 ? 'n' : lvl < 4 ? '1' : 'j';
            __u64 off = pc - blob, seg = (blob - in->code_lo) >> (in->log2seg & 31);
            rt_push(w, PP_HSW_W0_PC(m, off, seg), PP_HSW_WORD_SEG(t, check, m, off, seg));
        }
        __u32 at = top ? hs_top_at(in, hb, blob, pc, fs, w->buf + PP_HSW_HDR) : PP_HSW_AT_BODY;
        if (at == PP_HSW_AT_UNKNOWN || at == PP_HSW_AT_FAILED) {
            /* the caller unknown: the trace says it is cut (a stub's frame: nothing was
             * recorded, the walk from the native unwind's JIT frame may still run) */
            if (w->n)
                w->flags |= at == PP_HSW_AT_FAILED ? PP_RT_READ_FAILED : PP_RT_TRUNCATED;
            return 1;
        }
        /* the caller's sp; below it the saved fp (not when still the register) and the
         * return address */
        nsp = at == PP_HSW_AT_RET   ? sp + 8
              : at == PP_HSW_AT_RBP ? sp + 16
                                    : s->unext + (__u64)fs * 8;
        nunext = nsp;
        wd[0] = fp;
        if (at == PP_HSW_AT_RET || at == PP_HSW_AT_FPREG
                ? bpf_probe_read_user(&wd[1], 8, (void *)(nsp - 8)) != 0
                : bpf_probe_read_user(wd, 16, (void *)(nsp - 16)) != 0) {
            w->flags |= PP_RT_READ_FAILED;
            return 1;
        }
        nfp = wd[0];
        npc = wd[1];
    }
    if (nsp <= sp || nsp - sp > HS_MAX_STEP || nunext + HS_MAX_STEP < nsp ||
        nunext > nsp + HS_MAX_STEP || !npc)
        return 1; /* the stack grows down: a caller is above */
    s->sp = nsp;
    s->unext = nunext;
    s->pc = npc;
    s->fp = nfp;
    return 0;
}

/* Fills w with the sampled thread's Java frames when it runs code of the code cache; returns a
 * PP_CNT_WALK_* outcome. */
static __always_inline __u32 pp_walk_java(const struct pp_rt_proc *p, __u32 tid, struct rt_walk *w)
{
    const struct pp_hotspot_info *in = (const void *)p->info;
    struct hs_walk s = {.in = in, .w = w};
    (void)tid; /* the thread is the current task: its registers tell */
    if (!rt_user_regs(&s.pc, &s.sp, &s.fp))
        return PP_CNT_WALK_NO_THREAD;
    s.unext = s.sp;
    s.top = 1;
    bpf_loop(HS_STEPS, hs_frame_cb, &s, 0);
    /* in native or VM code called from Java: from where the native unwind met the code cache */
    if (w->n == 0 && !w->flags && rt_jit_regs(&s.pc, &s.sp, &s.fp)) {
        s.unext = s.sp;
        bpf_loop(HS_STEPS, hs_frame_cb, &s, 0);
    }
    if (w->n == 0)
        return w->flags & PP_RT_READ_FAILED ? PP_CNT_WALK_READ : PP_CNT_WALK_IDLE;
    return PP_CNT_WALK_OK;
}

#endif
