/* Definitions shared by the sampler's CFI unwinder (bpf/unwind.bpf.h) and the user space that
 * fills its maps (runtimes/system/unwind_maps.c). docs/ARCHITECTURE.md, "Native unwinding".
 *
 * - `unw_procs`: pid -> struct pp_unw_proc. A pid without an entry is unwound by frame pointers
 *   (bpf_get_stack), as in --perf-mode fp; an entry whose image is not the one loaded (an exec
 *   since) too.
 * - `unw_maps`: LPM trie (pid, address) -> struct pp_unw_map_val, the pid's executable mappings
 *   (each range split into prefixes). File id 0: anonymous executable memory (JIT code): frame
 *   pointers.
 * - `unw_pages`: (file id, file pc >> PP_UNW_PAGE_SHIFT) -> [lo, lo + n) of `unw_rows`: the row
 *   that covers the page's first byte, through the last row starting in the page.
 * - `unw_rows`: every file's rows, one packed 8-byte row each (PP_UNW_ROW), files at offsets. */
#ifndef PP_BPF_UNWIND_H
#define PP_BPF_UNWIND_H

#define PP_UNW_ROWS_DEFAULT 4096    /* placeholder: user space sizes the array */
#define PP_UNW_ROWS_MAX (64u << 20) /* rows host-wide at most (512 MiB) */
#define PP_UNW_PAGES_ENTRIES 65536
#define PP_UNW_MAPS_ENTRIES 262144 /* trie prefixes host-wide (about 20 per mapping) */
#define PP_UNW_PROCS_ENTRIES 8192
#define PP_UNW_PAGE_SHIFT 16
#define PP_UNW_SEARCH_STEPS 20 /* a page holds at most 2^16 rows: 17 steps suffice */

/* Row kinds: runtimes/unwind/cfi.h's pp_cfi_kind values. */
#define PP_UNW_NONE 0
#define PP_UNW_RSP 1
#define PP_UNW_RBP 2
#define PP_UNW_PLT 3
#define PP_UNW_SIGRETURN 4
#define PP_UNW_UNSUPPORTED 5
#define PP_UNW_END 6

/* A row: bits 0-31 the file pc (its low 32 bits: files whose code lies above 4 GiB get none),
 * 32-39 the kind, 40-47 the caller's rbp offset from the CFA / 8 (signed, 0: unchanged), 48-63
 * the CFA offset (signed). */
#define PP_UNW_ROW(pc, kind, rbp8, cfa)                                                            \
    ((unsigned long long)(unsigned int)(pc) | ((unsigned long long)(unsigned char)(kind) << 32) |  \
     ((unsigned long long)(unsigned char)(signed char)(rbp8) << 40) |                              \
     ((unsigned long long)(unsigned short)(short)(cfa) << 48))
#define PP_UNW_ROW_PC(r) ((unsigned int)(r))
#define PP_UNW_ROW_KIND(r) ((unsigned int)(((r) >> 32) & 0xff))
#define PP_UNW_ROW_RBP(r) ((long long)(signed char)(((r) >> 40) & 0xff) * 8)
#define PP_UNW_ROW_CFA(r) ((long long)(short)(((r) >> 48) & 0xffff))

/* x86-64 signal frame: at __restore_rt the stack pointer is the rt_sigframe's struct ucontext
 * (its pretcode was popped by the handler's return); uc_mcontext (struct sigcontext) is at 40,
 * and in it rbp at 80, rsp at 120, rip at 128 (arch/x86/include/uapi/asm/sigcontext.h). */
#define PP_UNW_SIG_RBP (40 + 80)
#define PP_UNW_SIG_RSP (40 + 120)
#define PP_UNW_SIG_RIP (40 + 128)

struct pp_unw_proc {
    unsigned long long mm; /* 0 until the sampler first unwinds it; then its address space */
};

/* The trie key: prefixlen counts bits of data; data is the pid then the address, big-endian. */
struct pp_unw_map_key {
    unsigned int prefixlen;
    unsigned char data[12];
};
#define PP_UNW_KEY_BITS 96

struct pp_unw_map_val {
    unsigned int file_id;    /* 0: no rows (anonymous executable memory): frame pointers */
    unsigned int anon;       /* 1: anonymous executable memory (no file, not the vDSO): JIT code */
    unsigned long long bias; /* address - file pc */
};

struct pp_unw_page_key {
    unsigned int file_id;
    unsigned int page; /* file pc >> PP_UNW_PAGE_SHIFT */
};

struct pp_unw_page_val {
    unsigned int lo; /* index in unw_rows */
    unsigned int n;
};

#endif
