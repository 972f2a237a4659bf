/* The methods a compiled Java frame inlined (docs/java.md "In-sampler walker", "Inlined
 * frames"): an nmethod's debug information maps each of its debug points (a call's return
 * address, a safepoint poll, ...) to a PcDesc, whose scope chain (ScopeDesc) in the scopes data
 * names the method the code there belongs to, that method's caller when it was inlined, and so
 * on out to the nmethod's own method.
 *
 * Where the sections are (HotSpot's nmethod.hpp of each version, and its serviceability agent's
 * NMethod.java):
 *  - JDK 17 .. 22 (PP_HS_SCOPES_17), all in the nmethod: metadata [nm + _metadata_offset,
 *    _scopes_data_begin), scopes data [_scopes_data_begin, nm + _scopes_pcs_offset), PcDescs
 *    [nm + _scopes_pcs_offset, nm + _dependencies_offset); code_begin the CodeBlob's
 *    _code_begin; the stream is CompressedStream's up to JDK 19 (L = 192 low bytes, no excluded
 *    byte), UNSIGNED5 from JDK 20 (below);
 *  - JDK 25+ (PP_HS_SCOPES_25): PcDescs [imm + _scopes_pcs_offset, imm + _scopes_data_offset),
 *    scopes data [imm + _scopes_data_offset, imm + _immutable_data_size) (imm:
 *    nmethod._immutable_data, allocated apart; the data's real end, _speculations_offset in a
 *    JVMCI build, is not exported: the rest of the immutable data bounds it), metadata [mut +
 *    _relocation_size, mut + _mutable_data_size) (mut: CodeBlob._mutable_data); code_begin nm +
 *    _code_offset; the stream is UNSIGNED5 (one excluded byte, 0: L = 191) since JDK 20. (The
 *    serviceability agent's NMethod.java of 25.0.3 has the PcDescs after the scopes data; the
 *    offsets a running 25.0.3 holds, _scopes_pcs_offset < _scopes_data_offset, and its own
 *    nmethod.hpp have them before, as here.)
 *  - JDK 23 and 24 moved the sections in steps not checked here: no inlined frames there.
 * A PcDesc's _pc_offset is relative to code_begin; the PcDescs are sorted by it, the first a
 * lower sentinel, the last an upper one. A scope: sender's decode offset (0: none, the
 * outermost scope), the method's metadata index (i: metadata[i - 1]; 0 is null), the bci, then
 * offsets of its locals (not read here).
 *
 * The lookup is HotSpot's approximate one (nmethod::pc_desc_near): the first PcDesc at or after
 * the pc. A caller frame's pc is a call's return address, which has a PcDesc of its own; the
 * sampled frame's pc is anywhere in the code, and the next debug point's scopes are the ones
 * around it (as async-profiler and HotSpot's own stack walks for profilers take them).
 *
 * Every read is bounded (the sections' sizes, a scope's header at most 15 bytes, at most
 * PP_HS_MAX_INLINE scopes, a binary search of at most log2 of the PcDescs) and checked: a
 * section outside its bounds or out of order, a decode offset outside the scopes data, a
 * sender at or after its scope (a loop), a metadata index outside the metadata, a truncated
 * stream, or a chain whose outermost method is not the nmethod's own give no chain at all. */
#include <string.h>

#include "runtimes/java/hotspot.h"

#define SECTION_MAX (16u << 20) /* bytes of one section (C2's largest are a few hundred KiB) */
#define SCOPE_HDR 15            /* a scope's sender and method index: two values, 5 bytes each */

typedef struct nm_sections {
    uint64_t code;             /* code_begin */
    uint64_t pcs_lo, pcs_hi;   /* PcDescs */
    uint64_t data_lo, data_hi; /* scopes data */
    uint64_t meta_lo, meta_hi; /* Metadata* */
} nm_sections;

int pp_hs_scopes_layout(const pp_hs_layout *L)
{
    if (L->pcd_pc == PP_HS_NONE || L->pcd_scope == PP_HS_NONE || L->pcd_size == PP_HS_NONE ||
        L->pcd_size < 8 || L->pcd_size > 64 || L->pcd_pc + 4 > L->pcd_size ||
        L->pcd_scope + 4 > L->pcd_size || L->nm_scopes_pcs == PP_HS_NONE ||
        L->blob_size == PP_HS_NONE || L->nm_method == PP_HS_NONE)
        return PP_HS_SCOPES_NONE;
    if (L->major >= 9 && L->major <= 22 && L->blob_code_begin != PP_HS_NONE &&
        L->nm_metadata != PP_HS_NONE && L->nm_sd_begin != PP_HS_NONE && L->nm_deps != PP_HS_NONE)
        return PP_HS_SCOPES_17;
    if (L->major >= 25 && L->blob_code_offset != PP_HS_NONE && L->nm_immutable_data != PP_HS_NONE &&
        L->nm_imm_size != PP_HS_NONE && L->nm_sd_offset != PP_HS_NONE &&
        L->blob_mutable != PP_HS_NONE && L->blob_mutable_size != PP_HS_NONE &&
        L->blob_reloc_size != PP_HS_NONE)
        return PP_HS_SCOPES_25;
    return PP_HS_SCOPES_NONE;
}

int pp_hs_u5_read(const uint8_t *b, size_t len, size_t *pos, unsigned x, uint32_t *out)
{
    const unsigned low = 256 - 64 - x; /* bytes that end a value */
    size_t i = *pos;
    if (x > 1 || i >= len || b[i] < x)
        return -1;
    uint64_t sum = b[i] - x;
    if (sum < low) {
        *pos = i + 1;
        *out = (uint32_t)sum;
        return 0;
    }
    for (unsigned k = 1, shift = 6; k < 5; k++, shift += 6) {
        if (i + k >= len || b[i + k] < x)
            return -1;
        sum += (uint64_t)(b[i + k] - x) << shift;
        if (b[i + k] < x + low || k == 4) {
            if (sum > INT32_MAX)
                return -1;
            *pos = i + k + 1;
            *out = (uint32_t)sum;
            return 0;
        }
    }
    return -1; /* not reached */
}

static int rd_i32(pp_hs_proc *p, uint64_t a, int32_t *v)
{
    return pp_rmem_read_cached(&p->mem, a, v, sizeof(*v));
}

/* A section [lo, lo + hi_off - lo_off) of base, offsets checked: 0 or -1. */
static int section(uint64_t base, int32_t lo_off, int32_t hi_off, int32_t limit, uint64_t *lo,
                   uint64_t *hi)
{
    if (lo_off < 0 || hi_off < lo_off || hi_off > limit || (uint32_t)limit > SECTION_MAX)
        return -1;
    *lo = base + (uint32_t)lo_off;
    *hi = base + (uint32_t)hi_off;
    return 0;
}

static int sections(pp_hs_proc *p, int kind, uint64_t nm, nm_sections *s, const char **why)
{
    const pp_hs_layout *L = &p->L;
    int32_t size, pcs, a, b, c;
    uint64_t ptr;
    *why = "the nmethod is unreadable";
    if (rd_i32(p, nm + L->blob_size, &size) != 0 || size <= 0 || (uint32_t)size > SECTION_MAX ||
        rd_i32(p, nm + L->nm_scopes_pcs, &pcs) != 0)
        return -1;
    if (kind == PP_HS_SCOPES_17) {
        if (pp_rmem_ptr(&p->mem, nm + L->blob_code_begin, &s->code) != 0 ||
            rd_i32(p, nm + L->nm_metadata, &a) != 0 ||
            pp_rmem_ptr(&p->mem, nm + L->nm_sd_begin, &ptr) || rd_i32(p, nm + L->nm_deps, &b) != 0)
            return -1;
        *why = "the nmethod's sections are out of its bounds";
        if (ptr < nm || ptr - nm > (uint32_t)size ||
            section(nm, a, (int32_t)(ptr - nm), size, &s->meta_lo, &s->meta_hi) != 0 ||
            section(nm, (int32_t)(ptr - nm), pcs, size, &s->data_lo, &s->data_hi) != 0 ||
            section(nm, pcs, b, size, &s->pcs_lo, &s->pcs_hi) != 0 || s->code < nm ||
            s->code - nm > (uint32_t)size)
            return -1;
        return 0;
    }
    uint64_t imm, mut;
    int32_t code, isize, msize, reloc;
    if (rd_i32(p, nm + L->blob_code_offset, &code) != 0 ||
        pp_rmem_ptr(&p->mem, nm + L->nm_immutable_data, &imm) != 0 ||
        rd_i32(p, nm + L->nm_imm_size, &isize) != 0 || rd_i32(p, nm + L->nm_sd_offset, &c) != 0 ||
        pp_rmem_ptr(&p->mem, nm + L->blob_mutable, &mut) != 0 ||
        rd_i32(p, nm + L->blob_mutable_size, &msize) != 0 ||
        rd_i32(p, nm + L->blob_reloc_size, &reloc) != 0)
        return -1;
    *why = "the nmethod's sections are out of their bounds";
    if (code <= 0 || code >= size || !imm || !mut || imm + SECTION_MAX < imm ||
        mut + SECTION_MAX < mut || section(imm, pcs, c, isize, &s->pcs_lo, &s->pcs_hi) != 0 ||
        section(imm, c, isize, isize, &s->data_lo, &s->data_hi) != 0 ||
        section(mut, reloc, msize, msize, &s->meta_lo, &s->meta_hi) != 0)
        return -1;
    s->code = nm + (uint32_t)code;
    return 0;
}

/* The scope decode offset of the first PcDesc at or after pc (an offset from code_begin). */
static int pc_desc(pp_hs_proc *p, const nm_sections *s, uint32_t pc, int32_t *scope,
                   const char **why)
{
    const pp_hs_layout *L = &p->L;
    uint64_t bytes = s->pcs_hi - s->pcs_lo, n = bytes / L->pcd_size;
    *why = "no PcDesc at or after the pc";
    if (n == 0 || bytes % L->pcd_size)
        return -1;
    uint64_t lo = 0, hi = n; /* the first index whose pc offset >= pc is in [lo, hi] */
    int32_t off;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rd_i32(p, s->pcs_lo + mid * L->pcd_size + L->pcd_pc, &off) != 0) {
            *why = "a PcDesc is unreadable";
            return -1;
        }
        if (off >= 0 && (uint32_t)off >= pc)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == n)
        return -1;
    uint64_t at = s->pcs_lo + lo * L->pcd_size;
    if (rd_i32(p, at + L->pcd_pc, &off) != 0 || off < 0 || (uint32_t)off < pc ||
        rd_i32(p, at + L->pcd_scope, scope) != 0)
        return -1;
    if (lo > 0) { /* the one before is before the pc: a sorted table */
        int32_t prev;
        if (rd_i32(p, at - L->pcd_size + L->pcd_pc, &prev) != 0 ||
            (prev >= 0 && (uint32_t)prev >= pc)) {
            *why = "the PcDescs are not sorted";
            return -1;
        }
    }
    return 0;
}

int pp_hs_inlined(pp_hs_proc *p, uint64_t nm, uint64_t method, uint32_t pc, uint64_t *out,
                  size_t cap, const char **why)
{
    int kind = pp_hs_scopes_layout(&p->L);
    nm_sections s;
    int32_t off;
    uint64_t own;
    *why = "no known layout of the debug information";
    if (kind == PP_HS_SCOPES_NONE || cap == 0)
        return -1;
    *why = "the nmethod holds another method now (flushed since the sample)";
    if (pp_rmem_ptr(&p->mem, nm + p->L.nm_method, &own) != 0 || own != method)
        return -1;
    if (sections(p, kind, nm, &s, why) != 0)
        return -1;
    *why = "the pc is before the nmethod's code";
    if (nm + pc < s.code || pc_desc(p, &s, (uint32_t)(nm + pc - s.code), &off, why) != 0)
        return -1;
    if (cap > PP_HS_MAX_INLINE)
        cap = PP_HS_MAX_INLINE;
    unsigned x = p->L.major >= 20 ? 1 : 0; /* UNSIGNED5 since JDK 20 */
    uint64_t dlen = s.data_hi - s.data_lo, mcount = (s.meta_hi - s.meta_lo) / 8;
    size_t n = 0;
    if (off == 0) { /* a PcDesc without scopes (serialized null): only the nmethod's method */
        out[0] = method;
        *why = NULL;
        return 1;
    }
    for (;;) {
        uint8_t b[SCOPE_HDR];
        size_t got, pos = 0;
        uint32_t sender, idx;
        uint64_t m;
        *why = "a scope's decode offset is outside the scopes data";
        if (off <= 0 || (uint64_t)off >= dlen)
            return -1;
        got = dlen - (uint64_t)off < SCOPE_HDR ? (size_t)(dlen - (uint64_t)off) : SCOPE_HDR;
        *why = "a scope is unreadable or truncated";
        if (pp_rmem_read_cached(&p->mem, s.data_lo + (uint32_t)off, b, got) != 0 ||
            pp_hs_u5_read(b, got, &pos, x, &sender) != 0 ||
            pp_hs_u5_read(b, got, &pos, x, &idx) != 0)
            return -1;
        *why = "a scope's method index is outside the metadata";
        if (idx == 0 || idx > mcount)
            return -1;
        *why = "a scope's method is unreadable";
        if (pp_rmem_ptr(&p->mem, s.meta_lo + (uint64_t)(idx - 1) * 8, &m) != 0 || !m)
            return -1;
        *why = "more scopes than the walker takes";
        if (n == cap)
            return -1;
        out[n++] = m;
        if (sender == 0)
            break;
        *why = "a scope's sender is not before it (a loop)";
        if (sender >= (uint32_t)off)
            return -1;
        off = (int32_t)sender;
    }
    if (out[n - 1] != method) {
        *why = "the outermost scope is not the nmethod's method";
        return -1;
    }
    *why = NULL;
    return (int)n;
}
