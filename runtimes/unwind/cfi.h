/* Unwind rows compiled from an ELF file's call-frame information (.eh_frame through
 * .eh_frame_hdr, .debug_frame when present): the per-file facts the native unwinders (the BPF
 * sampler's and the perf-event backend's user-space one) follow to find a frame's caller without
 * frame pointers. docs/ARCHITECTURE.md, "Native unwinding".
 *
 * A row holds from its pc up to the next row's pc (in the file's virtual addresses: p_vaddr
 * space, before the load bias). x86-64 only for now: the return address is at CFA - 8 and the
 * caller's rsp is the CFA; other architectures add their own kinds rather than change these. */
#ifndef PP_UNWIND_CFI_H
#define PP_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PP_CFI_NONE = 0,        /* no CFI covers this pc (a gap between FDEs): frame pointers */
    PP_CFI_RSP = 1,         /* CFA = rsp + cfa_off */
    PP_CFI_RBP = 2,         /* CFA = rbp + cfa_off */
    PP_CFI_PLT = 3,         /* the PLT's DW_CFA_def_cfa_expression: CFA = rsp + 8, plus 8 when
                               (pc & 15) >= 11 */
    PP_CFI_SIGRETURN = 4,   /* __restore_rt: the interrupted registers are in the rt_sigframe at
                               rsp (struct ucontext at rsp + 40: rbp, rsp, rip at its mcontext) */
    PP_CFI_UNSUPPORTED = 5, /* a rule the unwinders cannot follow: frame pointers, counted */
    PP_CFI_END = 6,         /* the outermost frame (return address undefined): the stack ends */
} pp_cfi_kind;

typedef struct pp_cfi_row {
    uint64_t pc;     /* first pc (file virtual address) the row applies to */
    uint8_t kind;    /* pp_cfi_kind */
    int32_t cfa_off; /* PP_CFI_RSP / PP_CFI_RBP */
    int32_t rbp_off; /* 0: rbp unchanged; else the caller's rbp is saved at CFA + rbp_off */
} pp_cfi_row;

/* One file's rows, sorted by pc (unique), adjacent rows with the same rule merged. Each FDE's
 * rows end with a PP_CFI_NONE row where no other FDE starts right there. A __restore_rt found by
 * its code bytes gets a PP_CFI_SIGRETURN row over its 9 bytes (whatever its CFI says). Rows
 * come from .eh_frame (FDEs listed by .eh_frame_hdr's table, i.e. PT_GNU_EH_FRAME) and from
 * .debug_frame for pcs .eh_frame does not cover. An .eh_frame without .eh_frame_hdr (rare: a
 * few static binaries) gives no rows. */
typedef struct pp_cfi_table {
    pp_cfi_row *rows;
    size_t n, cap;
    uint64_t text_lo, text_hi; /* the executable segments' virtual address range */
} pp_cfi_table;

/* Bounds of one file's rows: a file with more rows, or larger, gets none (pp_cfi_build fails). */
#define PP_CFI_MAX_ROWS ((size_t)4 << 20) /* 4 Mi rows: 96 MiB before the cache's cap */
/* libdw interprets an FDE's CFI from its start for each row: the sum over rows of their index in
 * their FDE is bounded (gcc's cc1, the largest seen: 35 M; a hostile FDE of many rows would
 * otherwise cost hours) */
#define PP_CFI_MAX_WORK ((uint64_t)1 << 27)
#define PP_CFI_MAX_FILE ((uint64_t)1 << 30) /* 1 GiB */

/* The bounds of one build (pp_cfi_build takes PP_CFI_MAX_ROWS and PP_CFI_MAX_WORK). */
typedef struct pp_cfi_limits {
    size_t max_rows;
    uint64_t max_work;
} pp_cfi_limits;

/* Compiles the CFI of the ELF file open at fd (read-only, bounded: a hostile file gives an error,
 * never a crash or an unbounded loop) into t. Returns the row count (>= 0), or -1 with a reason in
 * err (no CFI, not ELF, too large, malformed). */
long pp_cfi_build(int fd, pp_cfi_table *t, char *err, size_t errsz);
/* The row that covers pc, or NULL (before the first row). */
/* The same with other bounds (tests; 0 fields take the defaults). */
long pp_cfi_build_limited(int fd, const pp_cfi_limits *lim, pp_cfi_table *t, char *err,
                          size_t errsz);
const pp_cfi_row *pp_cfi_find(const pp_cfi_table *t, uint64_t pc);
void pp_cfi_free(pp_cfi_table *t);

#endif
