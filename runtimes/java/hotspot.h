/* HotSpot's own exported layout, read out of a running JVM (the first stage of the in-sampler
 * Java walker, issue 31; docs/java.md "HotSpot layout reader"). Nothing here is wired to a mode
 * yet: no user-visible change.
 *
 * hotspot_layout.c: libjvm.so exports its structure table (gHotSpotVMStructs: type, field,
 * offset or static address), its type sizes (gHotSpotVMTypes) and its int constants
 * (gHotSpotVMIntConstants; gHotSpotVMLongConstants is looked up, no long constant is needed
 * yet), with the entries' own layout in
 * gHotSpotVM*Entry*Offset / *ArrayStride (set by the JVM at start-up, so read from its memory).
 * The reader finds each field a walker needs by name (a field renamed between versions is listed
 * under each of its names), checks that every needed one is there (a reason string names the
 * first that is not), and caches the result per libjvm build-id.
 *
 * hotspot_method.c: Method* -> "pkg/Class.method(Sig)Ret" (async-profiler's `sig` text, ';' as
 * '|'), read through ConstMethod, its ConstantPool and the holder Klass's name, cached per
 * process by Method*.
 *
 * hotspot_walk.c: the JVM's Java threads (the ThreadsSMRSupport list) and a walk of a thread's
 * top frames from its JavaFrameAnchor (set while it runs native or VM code) through the code
 * cache: interpreted frames (the method in the frame), compiled frames (the nmethod's method,
 * CodeBlob frame sizes). The end-to-end self-check of a layout.
 *
 * Every read of the target goes through base/remote_mem.h (process_vm_readv or /proc/PID/mem:
 * never stops the JVM), bounded, and every count, length and pointer read is checked. */
#ifndef PP_JAVA_HOTSPOT_H
#define PP_JAVA_HOTSPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashtab.h"
#include "base/remote_mem.h"

#define PP_HS_NONE UINT32_MAX /* a field the JVM does not export */

/* What a walker needs from one libjvm build. Offsets are bytes into the structure; static
 * addresses are relative to the load bias (file addresses: the same for every process of the
 * build); PP_HS_NONE / 0 when absent. */
typedef struct pp_hs_layout {
    int major;         /* Abstract_VM_Version::_vm_major_version */
    char release[64];  /* Abstract_VM_Version::_s_vm_release ("17.0.15+6-Debian-1deb12u1") */
    char buildid[96];  /* the cache key: libjvm build-id and the JVM's owner ("buildid:<hex>/uid:N")
                        */
    uint64_t cc_heaps; /* static CodeCache::_heaps (GrowableArray<CodeHeap*>*) */
    uint64_t cc_low, cc_high;          /* static CodeCache::_low_bound/_high_bound */
    uint64_t threads_list;             /* static ThreadsSMRSupport::_java_thread_list */
    uint64_t interp_code;              /* static AbstractInterpreter::_code (StubQueue*) */
    uint64_t vm_major, vm_release;     /* static Abstract_VM_Version fields */
    uint32_t ga_len, ga_data;          /* GrowableArrayBase._len, GrowableArray<int>._data */
    uint32_t heap_memory, heap_segmap; /* CodeHeap._memory/_segmap (VirtualSpace) */
    uint32_t heap_log2seg;             /* CodeHeap._log2_segment_size */
    uint32_t vs_low, vs_high;          /* VirtualSpace._low/_high */
    uint32_t heapblock_size;           /* sizeof(HeapBlock): a blob follows its header */
    uint32_t blob_name, blob_size, blob_frame_size;
    uint32_t blob_code_begin, blob_code_end;     /* pointers (<= 22) */
    uint32_t blob_code_offset, blob_data_offset; /* offsets from the blob (23+) */
    uint32_t blob_kind;                          /* CodeBlob._kind (23+) */
    uint32_t blob_fco;    /* CodeBlob._frame_complete_offset (int; int16_t in 23+) */
    int32_t kind_nmethod; /* CodeBlobKind::Nmethod (23+), else -1 */
    uint32_t nm_method, nm_comp_level, nm_compile_id; /* nmethod (CompiledMethod <= 22) */
    uint32_t nm_scopes_pcs, nm_scopes_data, nm_metadata, nm_immutable_data, nm_orig_pc;
    /* the debug information's bounds (hotspot_scopes.c): CompiledMethod._scopes_data_begin (a
     * pointer, <= 22), nmethod._dependencies_offset (<= 22: where the PcDescs end),
     * nmethod._scopes_data_offset and _immutable_data_size (23+), CodeBlob._mutable_data,
     * _mutable_data_size and _relocation_size (25+: the metadata ends the mutable data) */
    uint32_t nm_sd_begin, nm_deps, nm_sd_offset, nm_imm_size;
    uint32_t blob_mutable, blob_mutable_size, blob_reloc_size;
    uint32_t pcd_pc, pcd_scope, pcd_size; /* PcDesc._pc_offset, _scope_decode_offset, its size */
    uint32_t method_const;                /* Method._constMethod */
    uint32_t cm_constants, cm_name_index, cm_sig_index, cm_size; /* ConstMethod */
    uint32_t cp_holder, cp_length, cp_size; /* ConstantPool; its slots follow cp_size bytes */
    uint32_t klass_name;                    /* Klass._name */
    uint32_t sym_length, sym_body;          /* Symbol._length (u2), _body */
    uint32_t jt_anchor, jt_thread_obj, jt_osthread, jt_state; /* JavaThread (Thread) */
    uint32_t anchor_sp, anchor_pc, anchor_fp;                 /* JavaFrameAnchor */
    uint32_t os_tid;                                          /* OSThread._thread_id */
    uint32_t tl_length, tl_threads;                           /* ThreadsList */
    uint32_t sq_buffer, sq_limit;      /* StubQueue._stub_buffer/_buffer_limit: the interpreter */
    int32_t if_sender_sp, if_last_sp;  /* frame::interpreter_frame_*_offset (words from fp) */
    int32_t if_method;                 /* interpreter_frame_method_offset: last_sp - 1 (x86_64) */
    int32_t st_native, st_vm, st_java; /* JavaThreadState values */
} pp_hs_layout;

/* The libjvm symbols read (absolute addresses in the target, 0 when absent). */
enum {
    PP_HS_STRUCTS,
    PP_HS_ST_STRIDE,
    PP_HS_ST_TYPE,
    PP_HS_ST_FIELD,
    PP_HS_ST_STATIC,
    PP_HS_ST_OFFSET,
    PP_HS_ST_ADDRESS,
    PP_HS_TYPES,
    PP_HS_TY_STRIDE,
    PP_HS_TY_NAME,
    PP_HS_TY_SIZE,
    PP_HS_INTS,
    PP_HS_IC_STRIDE,
    PP_HS_IC_NAME,
    PP_HS_IC_VALUE,
    PP_HS_LONGS,
    PP_HS_LC_STRIDE,
    PP_HS_LC_NAME,
    PP_HS_LC_VALUE,
    PP_HS_NSYMS
};
extern const char *const pp_hs_sym_names[PP_HS_NSYMS];

/* Parses the tables of the JVM read through m (syms: absolute addresses; bias: libjvm's load
 * bias, subtracted from static addresses). 0, or -1 with why (unreadable or malformed tables). */
int pp_hs_layout_parse(pp_rmem *m, const uint64_t *syms, uint64_t bias, pp_hs_layout *L, char *why,
                       size_t len);
/* Whether L has everything the walker needs, with plausible values: 0, or -1 with why naming
 * the first missing or implausible field ("no JavaThread._anchor in this JVM's vmstructs"). */
int pp_hs_layout_check(const pp_hs_layout *L, char *why, size_t len);
/* Layouts cached per build-id and owner uid (at most PP_HS_CACHE_MAX, oldest replaced). */
#define PP_HS_CACHE_MAX 16
bool pp_hs_cache_get(const char *buildid, pp_hs_layout *out);
void pp_hs_cache_put(const pp_hs_layout *L);
/* Tests: drops the cache; how many parses the cache saved. */
void pp_hs_cache_reset(void);
unsigned long pp_hs_cache_hits(void);

/* One JVM being read. */
typedef struct pp_hs_proc {
    int pid;
    pp_rmem mem;
    uint64_t bias; /* libjvm's load bias */
    pp_hs_layout L;
    bool cached;     /* L came from the build-id cache */
    pp_htab methods; /* Method* -> text (hotspot_method.c) */
    size_t method_bytes;
} pp_hs_proc;

/* Finds libjvm in pid (/proc/PID/maps, the file through /proc/PID/root), its symbols and
 * build-id, and the layout (cache, else the tables in memory), then checks it. 0, or -1 with why
 * (p is then closed). */
int pp_hs_open(pp_hs_proc *p, int pid, char *why, size_t len);
void pp_hs_close(pp_hs_proc *p);

/* ---- hotspot_method.c ---- */
void pp_hs_methods_init(pp_hs_proc *p);
void pp_hs_methods_free(pp_hs_proc *p);
#define PP_HS_TEXT_MAX 1024     /* a frame's text is cut (at a character) past this */
#define PP_HS_METHODS_MAX 65536 /* cached names per process; the cache starts over past it */
#define PP_HS_METHOD_BYTES_MAX (8u << 20) /* or past this many bytes of names and entries */
/* The text of the Method* at method ("pkg/Class.method(Sig)Ret", valid UTF-8, ';' as '|'), into
 * out. 0, or -1 when what is read there is not a method. Uncached. */
int pp_hs_method_text(pp_hs_proc *p, uint64_t method, char *out, size_t cap);
/* Same, cached by Method* (the pointer stays valid until pp_hs_close or the cache starts over;
 * copy it). NULL when not a method. */
const char *pp_hs_method_name(pp_hs_proc *p, uint64_t method);
/* What identifies a method besides its address: its ConstMethod*, its holder's name Symbol*,
 * its name and signature indexes (ConstMethod's two u2 read as one u4). */
typedef struct pp_hs_method_id {
    uint64_t cm, kname;
    uint32_t idx;
} pp_hs_method_id;
/* Reads the identity of the Method* at method now: 0, or -1 when unreadable. */
int pp_hs_method_identity(pp_hs_proc *p, uint64_t method, pp_hs_method_id *id);
/* Same for a Method* recorded with check, a value of its identity (check_of) at the time: named
 * only when the Method* (cached, else read again) has an identity of that value, NULL otherwise
 * (the Method was freed, its memory reused by another method since). */
const char *pp_hs_method_name_checked(pp_hs_proc *p, uint64_t method, unsigned check,
                                      unsigned (*check_of)(const pp_hs_method_id *id));

/* ---- hotspot_scopes.c ---- */
#define PP_HS_MAX_INLINE 64 /* scopes of one pc (the nmethod's method and what it inlined) */
/* Which layout of the debug information L has (hotspot_scopes.c): 0 none the reader knows (no
 * inlined frames), else a PP_HS_SCOPES_* value. */
enum { PP_HS_SCOPES_NONE, PP_HS_SCOPES_17, PP_HS_SCOPES_25 };
int pp_hs_scopes_layout(const pp_hs_layout *L);
/* One UNSIGNED5 value (HotSpot's CompressedReadStream::read_int) of b[*pos..len): x is the
 * number of excluded bytes (0 up to JDK 19's encoding, 1 from JDK 20's UNSIGNED5). 0 and *pos
 * past it, or -1 (the stream ends inside it, an excluded byte, a value above INT32_MAX). */
int pp_hs_u5_read(const uint8_t *b, size_t len, size_t *pos, unsigned x, uint32_t *out);
/* The methods of the scopes at pc (an offset from the nmethod nm) of the nmethod whose Method*
 * is method: innermost first, method itself last (out[n - 1]). Returns n (1 ..
 * min(cap, PP_HS_MAX_INLINE)), or -1 (why set) when nm's _method is not method (flushed since),
 * or its debug information is not readable, inconsistent or does not end in method: then
 * nothing is known of inlining. */
int pp_hs_inlined(pp_hs_proc *p, uint64_t nm, uint64_t method, uint32_t pc, uint64_t *out,
                  size_t cap, const char **why);

/* ---- hotspot_walk.c ---- */
typedef struct pp_hs_thread {
    uint64_t jt; /* JavaThread* */
    int tid;     /* OSThread._thread_id (as the JVM's pid namespace sees it) */
    int state;   /* JavaThread._thread_state */
} pp_hs_thread;
/* The JVM's Java threads (at most cap). Returns how many, or -1 when the list is unreadable. */
int pp_hs_threads(pp_hs_proc *p, pp_hs_thread *out, size_t cap);

/* The code cache as one walk sees it: its bounds, the interpreter's code, each code heap's
 * committed start and end and segment map. */
#define PP_HS_MAX_HEAPS 16
typedef struct pp_hs_ccache {
    uint64_t low, high; /* CodeCache bounds */
    uint64_t ilo, ihi;  /* the interpreter's code */
    uint64_t heap_lo[PP_HS_MAX_HEAPS], heap_hi[PP_HS_MAX_HEAPS], segmap[PP_HS_MAX_HEAPS];
    int log2seg[PP_HS_MAX_HEAPS];
    int nheaps;
} pp_hs_ccache;
/* Reads it (bounded, checked). 0, or -1 when something read is implausible. */
int pp_hs_ccache_read(pp_hs_proc *p, pp_hs_ccache *c);

typedef enum {
    PP_HS_INTERPRETED = '0',
    PP_HS_C1 = '1',
    PP_HS_C2 = 'j',
    PP_HS_NATIVE_WRAPPER = 'n', /* a compiled native method's wrapper */
} pp_hs_frame_type;
typedef struct pp_hs_frame {
    uint64_t method; /* Method* */
    uint64_t pc;
    char type; /* pp_hs_frame_type */
} pp_hs_frame;
#define PP_HS_MAX_FRAMES 128
/* Walks the top Java frames of thread jt from its JavaFrameAnchor (innermost first, at most
 * cap). Returns how many frames, 0 when the anchor is not set (the thread runs Java code, or no
 * Java frame), -1 when the walk met something it cannot read. */
int pp_hs_walk(pp_hs_proc *p, uint64_t jt, pp_hs_frame *out, size_t cap);
/* The suffix of a frame type as async-profiler's `ann` writes it ("_[0]", "_[1]", "_[j]"). */
const char *pp_hs_suffix(char type);
/* The end-to-end self-check: walks every thread whose anchor is set and names its frames. 1 when
 * at least one Java frame was walked and named and nothing read was implausible, 0 when no
 * thread had a walkable frame, -1 with why. */
int pp_hs_selfcheck(pp_hs_proc *p, char *why, size_t len);

#endif
