/* A file's unwind rows as the per-file cache keeps them: 8 bytes a row instead of a
 * pp_cfi_row's 24, exact (every row decodes to the row that was packed).
 *
 * A packed row: bits 0-31 its pc minus the table's base (the first row's pc), 32-39 its kind,
 * 40-47 the caller's rbp offset from the CFA / 8 (signed), 48-63 the CFA offset (signed). A row
 * whose offsets do not fit (a CFA offset beyond +-32 KiB, an rbp offset beyond +-1 KiB or not a
 * multiple of 8, offsets on a kind that has none) is kind PP_CFIPACK_WIDE and bits 40-63 index
 * it in a side array of whole rows (they are rare: frames of more than 32 KiB). A table whose
 * code spans more than 4 GiB, or has more than 2^24 wide rows, cannot be packed. */
#ifndef PP_UNWIND_CFIPACK_H
#define PP_UNWIND_CFIPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtimes/unwind/cfi.h"

#define PP_CFIPACK_WIDE 0xffu

typedef struct pp_cfi_packed {
    uint64_t *rows; /* n packed rows, sorted by pc */
    size_t n;
    pp_cfi_row *wide; /* the rows that do not fit, in pc order */
    size_t nwide;
    uint64_t base;             /* the first row's pc */
    uint64_t text_lo, text_hi; /* as pp_cfi_table's */
} pp_cfi_packed;

/* Packs t into p (t is left as it was). -1 with a reason in err when it cannot be packed or
 * memory is short. */
int pp_cfi_pack(const pp_cfi_table *t, pp_cfi_packed *p, char *err, size_t errsz);
/* Row i (< p->n) unpacked. */
pp_cfi_row pp_cfi_packed_row(const pp_cfi_packed *p, size_t i);
/* Row i's pc. */
static inline uint64_t pp_cfi_packed_pc(const pp_cfi_packed *p, size_t i)
{
    return p->base + (uint32_t)p->rows[i];
}
/* The row that covers pc into *out: true, or false (before the first row: *out is a
 * PP_CFI_NONE row). */
bool pp_cfi_packed_find(const pp_cfi_packed *p, uint64_t pc, pp_cfi_row *out);
/* Heap bytes the table holds. */
size_t pp_cfi_packed_bytes(const pp_cfi_packed *p);
void pp_cfi_packed_free(pp_cfi_packed *p);

#endif
