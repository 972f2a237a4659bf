/* The perf-event backend's native unwinding: per process, its executable mappings (read from
 * /proc/<pid>/maps on first sight, again when a pc falls outside them, at most once a second)
 * with each file's CFI rows from the per-file cache (runtimes/unwind/filecache.h) and its load
 * bias (from the file's program headers, read through /proc/<pid>/map_files), and the
 * user-space unwinder (runtimes/unwind/unwind.h) over a sample's registers and stack copy.
 * Files whose rows are not built yet unwind by frame pointers meanwhile. Not thread-safe: the
 * sampler's reader calls it under its lock. */
#ifndef PP_PERF_UNWIND_H
#define PP_PERF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/unwind/filecache.h"
#include "runtimes/unwind/unwind.h"

typedef struct pp_perf_unwinder pp_perf_unwinder;

/* NULL when out of memory. */
pp_perf_unwinder *pp_perf_unwinder_new(void);
/* Its per-file cache (for the symbolizer's shared byte bound). */
pp_filecache *pp_perf_unwinder_cache(pp_perf_unwinder *u);
void pp_perf_unwinder_free(pp_perf_unwinder *u);
/* Unwinds one sample of process pid (a host pid): ips (leaf first, at most cap) and the walk's
 * outcome. */
pp_unwind_result pp_perf_unwind(pp_perf_unwinder *u, int pid, const pp_unwind_regs *regs,
                                const uint8_t *stack, size_t len, uint64_t *ips, size_t cap);
/* pid exec'd or exited: its mappings are read again at its next sample. */
void pp_perf_unwinder_forget(pp_perf_unwinder *u, int pid);

#endif
