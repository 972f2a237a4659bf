/* A JVM's Java threads and a walk of a thread's top frames from its JavaFrameAnchor through the
 * code cache (hotspot.h): what the BPF walker will do at the sample instant, done in user space
 * on threads stopped in native or VM code, as the end-to-end check of a layout. x86_64 frames:
 * an interpreted frame keeps fp (its method at fp + if_method words, the caller's unextended sp
 * at fp + if_sender_sp words, the return address at fp + 8, the caller's fp at fp); a compiled
 * frame (or stub) is CodeBlob._frame_size words above its unextended sp, with the return address
 * and the saved fp in the two words below its sender's sp. */
#include <stdio.h>
#include <string.h>

#include "runtimes/java/hotspot.h"

#define MAX_THREADS 65536
#define MAX_HOPS 4096         /* segment-map hops to a blob's first segment */
#define MAX_BLOB (64u << 20)  /* larger than any code blob */
#define MAX_FRAME_WORDS 65536 /* a frame larger than 512 KiB is not plausible */
#define MAX_STEP (1ull << 20) /* sp moves less than 1 MiB per frame */

static int u64at(pp_hs_proc *p, uint64_t addr, uint64_t *v)
{
    return addr && pp_rmem_read_cached(&p->mem, addr, v, 8) == 0 ? 0 : -1;
}

static int i32at(pp_hs_proc *p, uint64_t addr, int32_t *v)
{
    return addr && pp_rmem_read_cached(&p->mem, addr, v, 4) == 0 ? 0 : -1;
}

static int ptrat(pp_hs_proc *p, uint64_t addr, uint64_t *v)
{
    return u64at(p, addr, v) == 0 && pp_rmem_valid_ptr(*v, 1) ? 0 : -1;
}

int pp_hs_threads(pp_hs_proc *p, pp_hs_thread *out, size_t cap)
{
    const pp_hs_layout *L = &p->L;
    uint64_t list, arr;
    uint32_t n;
    if (ptrat(p, p->bias + L->threads_list, &list) ||
        pp_rmem_read_cached(&p->mem, list + L->tl_length, &n, 4) || n > MAX_THREADS ||
        (n && ptrat(p, list + L->tl_threads, &arr)))
        return -1;
    size_t got = 0;
    for (uint32_t i = 0; i < n && got < cap; i++) {
        uint64_t jt, os;
        int32_t tid, st;
        if (ptrat(p, arr + (uint64_t)i * 8, &jt) || ptrat(p, jt + L->jt_osthread, &os) ||
            i32at(p, os + L->os_tid, &tid) || tid <= 0 || i32at(p, jt + L->jt_state, &st))
            continue; /* a thread starting or exiting */
        out[got++] = (pp_hs_thread){.jt = jt, .tid = tid, .state = st};
    }
    return (int)got;
}

int pp_hs_ccache_read(pp_hs_proc *p, pp_hs_ccache *c)
{
    const pp_hs_layout *L = &p->L;
    memset(c, 0, sizeof(*c));
    uint64_t ga, data, sq;
    int32_t n, limit;
    if (ptrat(p, p->bias + L->cc_low, &c->low) || ptrat(p, p->bias + L->cc_high, &c->high) ||
        c->high <= c->low || ptrat(p, p->bias + L->interp_code, &sq) ||
        ptrat(p, sq + L->sq_buffer, &c->ilo) || i32at(p, sq + L->sq_limit, &limit) || limit <= 0 ||
        (uint32_t)limit > MAX_BLOB || ptrat(p, p->bias + L->cc_heaps, &ga) ||
        i32at(p, ga + L->ga_len, &n) || n <= 0 || n > PP_HS_MAX_HEAPS ||
        ptrat(p, ga + L->ga_data, &data))
        return -1;
    c->ihi = c->ilo + (uint32_t)limit;
    for (int i = 0; i < n; i++) {
        uint64_t h;
        int32_t lg;
        if (ptrat(p, data + (uint64_t)i * 8, &h) ||
            ptrat(p, h + L->heap_memory + L->vs_low, &c->heap_lo[c->nheaps]) ||
            ptrat(p, h + L->heap_memory + L->vs_high, &c->heap_hi[c->nheaps]) ||
            ptrat(p, h + L->heap_segmap + L->vs_low, &c->segmap[c->nheaps]) ||
            i32at(p, h + L->heap_log2seg, &lg) || lg < 3 || lg > 20)
            return -1;
        c->log2seg[c->nheaps++] = lg;
    }
    return 0;
}

/* The CodeBlob holding pc (its address, 0 when none): CodeHeap::find_start. */
static uint64_t find_blob(pp_hs_proc *p, const pp_hs_ccache *c, uint64_t pc)
{
    if (pc < c->low || pc >= c->high)
        return 0;
    for (int i = 0; i < c->nheaps; i++) {
        if (pc < c->heap_lo[i] || pc >= c->heap_hi[i])
            continue;
        uint64_t idx = (pc - c->heap_lo[i]) >> c->log2seg[i];
        for (int hop = 0;; hop++) {
            uint8_t b;
            if (hop >= MAX_HOPS || pp_rmem_read_cached(&p->mem, c->segmap[i] + idx, &b, 1) ||
                b == 0xff || b > idx)
                return 0; /* free, or not a plausible map */
            if (!b)
                break;
            idx -= b;
        }
        uint64_t blob = c->heap_lo[i] + (idx << c->log2seg[i]) + p->L.heapblock_size;
        int32_t size;
        if (i32at(p, blob + p->L.blob_size, &size) || size <= 0 || (uint32_t)size > MAX_BLOB ||
            pc >= blob + (uint32_t)size)
            return 0;
        return blob;
    }
    return 0;
}

/* Whether blob is an nmethod: CodeBlob._kind (23+), else its _name. */
static bool is_nmethod(pp_hs_proc *p, uint64_t blob)
{
    const pp_hs_layout *L = &p->L;
    if (L->blob_kind != PP_HS_NONE) {
        uint8_t k;
        return pp_rmem_read_cached(&p->mem, blob + L->blob_kind, &k, 1) == 0 &&
               (int32_t)k == L->kind_nmethod;
    }
    uint64_t name;
    char s[16] = "";
    if (ptrat(p, blob + L->blob_name, &name) ||
        pp_rmem_read_cached(&p->mem, name, s, sizeof(s) - 1))
        return false;
    return strcmp(s, "nmethod") == 0 || strncmp(s, "native nmethod", 14) == 0;
}

const char *pp_hs_suffix(char type)
{
    switch (type) {
    case PP_HS_INTERPRETED:
        return "_[0]";
    case PP_HS_C1:
        return "_[1]";
    case PP_HS_C2:
        return "_[j]";
    default:
        return "";
    }
}

int pp_hs_walk(pp_hs_proc *p, uint64_t jt, pp_hs_frame *out, size_t cap)
{
    const pp_hs_layout *L = &p->L;
    uint64_t a = jt + L->jt_anchor, sp, fp, pc;
    if (u64at(p, a + L->anchor_sp, &sp) || u64at(p, a + L->anchor_fp, &fp) ||
        u64at(p, a + L->anchor_pc, &pc))
        return -1;
    if (!sp)
        return 0; /* running Java code (or none on its stack): only registers tell */
    if (!pp_rmem_valid_ptr(sp, 8) || (!pc && u64at(p, sp - 8, &pc)))
        return -1;
    pp_hs_ccache c;
    if (pp_hs_ccache_read(p, &c))
        return -1;
    uint64_t unext = sp;
    size_t n = 0;
    for (int step = 0; step < 2 * PP_HS_MAX_FRAMES && n < cap; step++) {
        uint64_t nsp, nunext, npc, nfp;
        if (pc >= c.ilo && pc < c.ihi) {
            uint64_t m;
            if (!pp_rmem_valid_ptr(fp, 8) || fp < sp ||
                ptrat(p, fp + (int64_t)L->if_method * 8, &m) ||
                u64at(p, fp + (int64_t)L->if_sender_sp * 8, &nunext) || u64at(p, fp + 8, &npc) ||
                u64at(p, fp, &nfp))
                return n ? (int)n : -1;
            out[n++] = (pp_hs_frame){.method = m, .pc = pc, .type = PP_HS_INTERPRETED};
            nsp = fp + 16;
        } else {
            uint64_t blob = find_blob(p, &c, pc);
            int32_t fs;
            if (!blob)
                break; /* left the code cache: the call stub's caller, native code */
            if (i32at(p, blob + L->blob_frame_size, &fs) || fs <= 0 || fs > MAX_FRAME_WORDS)
                break; /* no frame of its own (entry stubs) */
            if (is_nmethod(p, blob)) {
                uint64_t m;
                uint8_t lvl;
                if (ptrat(p, blob + L->nm_method, &m) ||
                    pp_rmem_read_cached(&p->mem, blob + L->nm_comp_level, &lvl, 1))
                    return n ? (int)n : -1;
                char t = lvl == 0 ? PP_HS_NATIVE_WRAPPER : lvl < 4 ? PP_HS_C1 : PP_HS_C2;
                out[n++] = (pp_hs_frame){.method = m, .pc = pc, .type = t};
            }
            nsp = unext + (uint64_t)fs * 8;
            nunext = nsp;
            if (u64at(p, nsp - 8, &npc) || u64at(p, nsp - 16, &nfp))
                return n ? (int)n : -1;
        }
        if (nsp <= sp || nsp - sp > MAX_STEP || nunext < nsp - MAX_STEP || nunext > nsp + MAX_STEP)
            break; /* the stack grows down: a caller is above */
        sp = nsp;
        unext = nunext;
        pc = npc;
        fp = nfp;
    }
    return (int)n;
}

int pp_hs_selfcheck(pp_hs_proc *p, char *why, size_t len)
{
    pp_hs_thread th[256];
    int nt = pp_hs_threads(p, th, sizeof(th) / sizeof(th[0]));
    if (nt < 0) {
        snprintf(why, len, "cannot read the JVM's thread list");
        return -1;
    }
    size_t named = 0, unnamed = 0;
    pp_hs_frame f[PP_HS_MAX_FRAMES];
    for (int i = 0; i < nt; i++) {
        int n = pp_hs_walk(p, th[i].jt, f, PP_HS_MAX_FRAMES);
        for (int k = 0; k < n; k++) {
            if (pp_hs_method_name(p, f[k].method))
                named++;
            else
                unnamed++;
        }
    }
    if (named + unnamed == 0)
        return 0;
    /* a thread leaving native code while it is read may give a stale frame: tolerate a few */
    if (!named || unnamed * 4 > named) {
        snprintf(why, len, "%zu of %zu Java frames walked did not name a method", unnamed,
                 named + unnamed);
        return -1;
    }
    return 1;
}
