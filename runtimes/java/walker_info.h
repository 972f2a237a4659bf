/* The HotSpot walker's per-process data (the `info` of struct pp_rt_proc), shared by
 * runtimes/java/walker.bpf.h and the user space that fills it (runtimes/java/walker.c) from the
 * JVM's exported layout (hotspot.h). Addresses are the target's; offsets are bytes into the
 * structure, checked by user space against the bounds the BPF side masks them with. */
#ifndef PP_JAVA_WALKER_INFO_H
#define PP_JAVA_WALKER_INFO_H

#define PP_HSW_HEAPS 4        /* code heaps (segmented code cache: 3) */
#define PP_HSW_HDR 128        /* bytes of a CodeBlob's header read at once */
#define PP_HSW_IFRAME_LO (-6) /* the lowest interpreter frame slot read (words from fp) */

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
    unsigned long long code_lo;  /* the lowest heap's start: nmethods are numbered from it */
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

#endif
