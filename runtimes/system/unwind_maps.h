/* Keeps the BPF CFI unwinder's maps (bpf/unwind.h) in step with the processes it samples: each
 * process's executable mappings in the trie, the rows of the files they map (from the per-file
 * cache, runtimes/unwind/filecache.h) copied into the shared rows array, and a page index per
 * file. docs/ARCHITECTURE.md, "Native unwinding".
 *
 * Never builds rows: a file whose rows the cache has not built yet is mapped without them (the
 * unwinder falls back to frame pointers there) and loaded at a later pp_unwind_maps_sync. The
 * rows array is the host-wide cap: a file that does not fit stays on frame pointers until room is
 * freed (its last process exits). Not thread-safe: one thread (the sampler's drain) calls it. */
#ifndef PP_UNWIND_MAPS_H
#define PP_UNWIND_MAPS_H

#include <stdint.h>

#include "runtimes/unwind/filecache.h"

typedef struct pp_unwind_maps pp_unwind_maps;

typedef struct pp_unwind_maps_fds {
    int procs, maps, pages, rows; /* unw_procs, unw_maps, unw_pages, unw_rows */
} pp_unwind_maps_fds;

typedef struct pp_unwind_stats {
    uint64_t table_bytes;   /* rows loaded in the kernel, bytes */
    uint64_t table_cap;     /* the rows array's size, bytes */
    uint64_t files_loaded;  /* files whose rows are loaded */
    uint64_t files_no_room; /* times a file's rows did not fit (array or page index full) */
    uint64_t procs;         /* processes whose mappings are loaded */
    uint64_t procs_no_room; /* processes left to frame pointers (the trie or procs map full) */
} pp_unwind_stats;

/* The rows array (fds.rows, rows_cap 8-byte rows) is mapped into memory here. NULL with a reason
 * in err. fc is borrowed. */
pp_unwind_maps *pp_unwind_maps_new(const pp_unwind_maps_fds *fds, uint32_t rows_cap,
                                   pp_filecache *fc, char *err, size_t errlen);
void pp_unwind_maps_free(pp_unwind_maps *u);
/* Loads (again, after an exec or a rescan) pid's executable mappings. */
void pp_unwind_maps_add_pid(pp_unwind_maps *u, int pid);
/* Periodic pass: drops exited processes, rescans the mappings of the others every few seconds,
 * loads the rows of files the cache finished, unloads files no process maps any more. */
void pp_unwind_maps_sync(pp_unwind_maps *u);
/* Only the last step of pp_unwind_maps_sync: loads the rows of files the cache finished since the
 * last call (one generation check when nothing changed). Called between drains, so that a new
 * process's stacks are unwound by CFI within a fraction of a second, not at the next drain. */
void pp_unwind_maps_load_ready(pp_unwind_maps *u);
void pp_unwind_maps_stats(const pp_unwind_maps *u, pp_unwind_stats *st);

/* Packs a row for the BPF side (PP_UNW_ROW); a rule that does not fit becomes unsupported. */
uint64_t pp_unwind_pack_row(const pp_cfi_row *r);

#endif
