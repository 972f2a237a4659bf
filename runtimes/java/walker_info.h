/* The HotSpot walker's per-process data (the `info` of struct pp_rt_proc), shared by
 * runtimes/java/walker.bpf.h and the user space that fills it (runtimes/java/walker.c) from the
 * JVM's exported layout (hotspot.h). Addresses are the target's; offsets are bytes into the
 * structure, checked by user space against the bounds the BPF side masks them with. */
#ifndef PP_JAVA_WALKER_INFO_H
#define PP_JAVA_WALKER_INFO_H

#define PP_HSW_HEAPS 4          /* code heaps (segmented code cache: 3) */
#define PP_HSW_HDR 128          /* bytes of a CodeBlob's header read at once */
#define PP_HSW_IFRAME_LO (-6)   /* the lowest interpreter frame slot read (words from fp) */
#define PP_HSW_CODE_REL 0x8000u /* blob_code: an int offset from the blob, not a pointer */

struct pp_hotspot_info {
    unsigned long long ilo, ihi; /* the interpreter's code (StubQueue buffer) */
    /* per code heap: [lo, hi) (hi: the next heap's start or CodeCache::_high_bound) and its
     * segment map's address */
    unsigned long long heap_lo[PP_HSW_HEAPS], heap_hi[PP_HSW_HEAPS], segmap[PP_HSW_HEAPS];
    unsigned int nheaps, log2seg;
    unsigned int heapblock_size; /* a blob follows its HeapBlock header */
    unsigned int hdr_len;        /* bytes of the blob header read (<= PP_HSW_HDR) */
    unsigned int blob_size, blob_frame_size;
    unsigned int blob_kind; /* JDK 23+: CodeBlob._kind (a byte); else the offset of _name */
    int kind_nmethod;       /* CodeBlobKind::Nmethod; -1: tell nmethods by _name's text */
    unsigned int nm_method, nm_comp_level;
    unsigned int method_const; /* Method._constMethod */
    /* the check's other parts: ConstMethod._constants, its _name_index (_signature_index the
     * next u2), ConstantPool._pool_holder, Klass._name */
    unsigned int cm_constants, cm_name_index, cp_holder, klass_name;
    int if_method, if_sender_sp; /* interpreter frame slots, words from fp (< 0) */
    /* the top frame's prologue (walker.bpf.h hs_top_at), offsets into the blob header: of
     * CodeBlob._frame_complete_offset (its low 16 bits: an int up to JDK 22, an int16_t since)
     * and of where the code begins: the _code_begin pointer, or with PP_HSW_CODE_REL the
     * _code_offset int from the blob; 0: not known */
    unsigned short blob_fco, blob_code;
    unsigned long long code_lo; /* the lowest heap's start: nmethods are numbered from it */
};

/* A frame's two words. The first: its Method*; a compiled frame ('1', 'j', 'n') adds in bits
 * 47..63 the pc's offset from its nmethod when the second word's bit 7 (PP_HSW_HAS_PC) says so
 * (else the pc or the nmethod did not fit). The second: its type (pp_hs_frame_type: '0', '1',
 * 'j', 'n') in bits 0..6, then PP_HSW_HAS_PC, a compiled frame's nmethod in bits 8..31
 * (its segment's index from code_lo: the nmethod is at code_lo + (index << log2seg) +
 * heapblock_size; user space reads the methods it inlined at the pc from it,
 * hotspot_scopes.c), and in bits 32..63 a check value of the method's identity at the sample:
 * its ConstMethod*, its holder class's name (Symbol*) and its name and signature indexes (idx:
 * the two u2 as one u4). User space names the Method* only when the memory it names from gives
 * the same value: a class unloaded and its Method's (and ConstMethod's) memory reused by another
 * class's method is not named as that one (classes loaded alike by loaders alike reuse the same
 * addresses for both). */
static inline unsigned int pp_hsw_check(unsigned long long constmethod, unsigned long long kname,
                                        unsigned int idx)
{
    unsigned long long x = (constmethod >> 3) * 0x9e3779b97f4a7c15ULL;
    x = (x ^ (kname >> 3)) * 0xff51afd7ed558ccdULL;
    x = (x ^ idx) * 0xc4ceb9fe1a85ec53ULL;
    return (unsigned int)(x >> 32) | 1u; /* never 0 */
}
#define PP_HSW_WORD(type, check)                                                                   \
    ((unsigned long long)(unsigned char)(type) | ((unsigned long long)(unsigned int)(check) << 32))
#define PP_HSW_METHOD_BITS 47 /* a Method* is a user address */
#define PP_HSW_PC_LIMIT (1u << (64 - PP_HSW_METHOD_BITS))
#define PP_HSW_SEG_LIMIT (1u << 24)
#define PP_HSW_HAS_PC 0x80u /* second word: the first carries the pc, this one the nmethod */
/* a compiled frame's words for its Method* m, pc (its offset from its nmethod) and seg (the
 * nmethod's segment index): both carried when all fit, else neither (no inlined frames) */
#define PP_HSW_FITS(m, pc, seg)                                                                    \
    ((m) < (1ULL << PP_HSW_METHOD_BITS) && (pc) > 0 && (pc) < PP_HSW_PC_LIMIT &&                   \
     (seg) < PP_HSW_SEG_LIMIT)
#define PP_HSW_W0_PC(m, pc, seg)                                                                   \
    ((m) | (PP_HSW_FITS(m, pc, seg) ? (unsigned long long)(pc) << PP_HSW_METHOD_BITS : 0ULL))
#define PP_HSW_WORD_SEG(type, check, m, pc, seg)                                                   \
    (PP_HSW_WORD(type, check) |                                                                    \
     (PP_HSW_FITS(m, pc, seg) ? PP_HSW_HAS_PC | (unsigned long long)(seg) << 8 : 0ULL))
#define PP_HSW_METHOD(w0, w1)                                                                      \
    ((w1)&PP_HSW_HAS_PC ? (w0) & ((1ULL << PP_HSW_METHOD_BITS) - 1) : (w0))
#define PP_HSW_PCOFF(w0, w1) ((w1)&PP_HSW_HAS_PC ? (unsigned int)((w0) >> PP_HSW_METHOD_BITS) : 0u)
#define PP_HSW_SEG(w1) ((unsigned int)((w1) >> 8) & (PP_HSW_SEG_LIMIT - 1))
#define PP_HSW_TYPE(word) ((char)((word)&0x7f))
#define PP_HSW_CHECK(word) ((unsigned int)((word) >> 32))

/* The sampled (top) compiled frame's pc in its prologue or epilogue (x86_64, C1 and C2 code as
 * HotSpot 17-25 emit it; docs/java.md "Prologues and epilogues"): where its caller's return
 * address and fp are. PP_HSW_AT_BODY: the frame is built (the return address in its top word,
 * the saved fp below it); _RET: not yet or no longer (the return address at sp, fp the
 * caller's); _RBP: only the caller's fp pushed (at sp, the return address above it); _FPREG:
 * the frame made but fp not saved in it yet (the return address in its top word, fp the
 * caller's); _UNKNOWN: a prologue of no shape known (the walk ends at the frame, the trace
 * marked cut: `[truncated]` at its root). */
enum {
    PP_HSW_AT_BODY,
    PP_HSW_AT_RET,
    PP_HSW_AT_RBP,
    PP_HSW_AT_FPREG,
    PP_HSW_AT_UNKNOWN,
    PP_HSW_AT_FAILED /* the prologue could not be read */
};

/* The instruction at pc, c: the 8 bytes before pc and 8 from it. `pop rbp`, then the
 * return poll (`cmp rsp, [r15 + d]`, `ja` to its stub; with @ReservedStackAccess first the same
 * cmp against the reserved zone, `jb`) and `ret` come after the frame was taken down (`add rsp,
 * N` before them leaves it whole). */
static inline unsigned int pp_hsw_epilogue(const unsigned char *c)
{
    const unsigned char *at = c + 8;
    if (at[0] == 0x5d)
        return PP_HSW_AT_RBP;
    if (at[0] == 0xc3 || (at[0] == 0x49 && at[1] == 0x3b && (at[2] == 0x67 || at[2] == 0xa7)))
        return PP_HSW_AT_RET;
    /* a conditional jump (rel32 or rel8) right after that cmp (disp32 or disp8) */
    int jcc = (at[0] == 0x0f && (at[1] & 0xf0) == 0x80) || (at[0] & 0xf0) == 0x70;
    if (jcc && ((c[1] == 0x49 && c[2] == 0x3b && c[3] == 0xa7) ||
                (c[4] == 0x49 && c[5] == 0x3b && c[6] == 0x67)))
        return PP_HSW_AT_RET;
    return PP_HSW_AT_BODY;
}

/* A prologue's scan, position by position (pp_hsw_prologue_at), for the instructions that make
 * the frame of fs words: `sub rsp, fs * 8 - 16` after `push rbp` (maybe `mov rbp, rsp`
 * between: C1, and C2 with a stack bang); or `sub rsp, imm32 fs * 8 - 8` then
 * `mov [rsp + fs * 8 - 16], rbp` (C2 without a bang); or, a frame of two words, `push rbp`
 * (maybe `mov rbp, rsp` after it) alone, ending the prologue or followed by the nmethod entry
 * barrier (`cmp [r15 + d], imm`, maybe after a nop aligning it). The prologue is the n bytes
 * before _frame_complete_offset; offsets are from its start. */
struct pp_hsw_prologue {
    int n, f1, f2;           /* its bytes; the sub's operand in each shape */
    int push, made, fpsaved; /* where the push is (-1: none), the frame made, fp saved in it */
};

static inline void pp_hsw_prologue_init(struct pp_hsw_prologue *p, int n, int fs)
{
    p->n = n;
    p->f1 = fs * 8 - 16;
    p->f2 = fs * 8 - 8;
    p->push = p->made = p->fpsaved = -1;
}

static inline int pp_hsw_is_barrier(const unsigned char *b)
{
    return b[0] == 0x41 && (b[1] == 0x81 || b[1] == 0x83) && b[2] == 0x7f;
}

/* `mov rbp, rsp` (HotSpot's encoding 48 8b ec, or 48 89 e5) */
static inline int pp_hsw_is_mov_rbp_rsp(const unsigned char *b)
{
    return b[0] == 0x48 && ((b[1] == 0x8b && b[2] == 0xec) || (b[1] == 0x89 && b[2] == 0xe5));
}

/* The length of the nop at b (HotSpot's address nops of 1-8 bytes), 0 when none. */
static inline int pp_hsw_nop_len(const unsigned char *b)
{
    if (b[0] == 0x90)
        return 1;
    if (b[0] == 0x66 && b[1] == 0x90)
        return 2;
    int p = b[0] == 0x66;
    if (b[p] != 0x0f || b[p + 1] != 0x1f)
        return 0;
    unsigned char m = b[p + 2];
    int n = m == 0x00 ? 3 : m == 0x40 ? 4 : m == 0x44 ? 5 : m == 0x80 ? 7 : m == 0x84 ? 8 : 0;
    return n ? n + p : 0;
}

/* Whether the prologue's bytes at offset j (b: 4 bytes before it to 16 after it readable) make
 * the frame: 1 (p filled: the scan ends), 0 (go on). */
static inline int pp_hsw_prologue_at(struct pp_hsw_prologue *p, const unsigned char *b, int j)
{
    if (j >= p->n)
        return 1;
    if (p->f1 == 0 && b[0] == 0x55) {
        int k = pp_hsw_is_mov_rbp_rsp(b + 1) ? 4 : 1;
        int pad = pp_hsw_nop_len(b + k);
        if (j + k == p->n || (j + k + pad + 3 <= p->n && pp_hsw_is_barrier(b + k + pad))) {
            p->push = j;
            p->made = p->fpsaved = j + k;
            return 1;
        }
        return 0;
    }
    if (b[0] != 0x48 || b[2] != 0xec || (b[1] != 0x83 && b[1] != 0x81))
        return 0;
    int imm = b[1] == 0x83 ? (signed char)b[3]
                           : (int)(b[3] | b[4] << 8 | b[5] << 16 | (unsigned int)b[6] << 24);
    int end = j + (b[1] == 0x83 ? 4 : 7);
    if (imm == p->f1 && p->f1 > 0 && end <= p->n) {
        int at = j >= 1 && b[-1] == 0x55                                   ? j - 1
                 : j >= 4 && b[-4] == 0x55 && pp_hsw_is_mov_rbp_rsp(b - 3) ? j - 4
                                                                           : -1;
        if (at < 0)
            return 0;
        p->push = at;
        p->made = p->fpsaved = end;
        return 1;
    }
    /* mov [rsp], rbp; mov [rsp + d8], rbp; mov [rsp + d32], rbp */
    const unsigned char *m = b + 7;
    int len = m[2] == 0x2c ? 4 : m[2] == 0x6c ? 5 : m[2] == 0xac ? 8 : 0;
    if (imm == p->f2 && b[1] == 0x81 && m[0] == 0x48 && m[1] == 0x89 && m[3] == 0x24 && len &&
        end + len <= p->n) {
        p->made = end;
        p->fpsaved = end + len;
        return 1;
    }
    return 0;
}

/* The state at offset off of the prologue scanned. */
static inline unsigned int pp_hsw_prologue_state(const struct pp_hsw_prologue *p, int off)
{
    if (p->made < 0)
        return PP_HSW_AT_UNKNOWN;
    if (off >= p->fpsaved)
        return PP_HSW_AT_BODY;
    if (off >= p->made)
        return PP_HSW_AT_FPREG;
    if (p->push >= 0 && off > p->push)
        return PP_HSW_AT_RBP;
    return PP_HSW_AT_RET;
}

#endif
