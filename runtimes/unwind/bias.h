/* The load bias of a process's executable file mapping: what its addresses minus the file's
 * virtual addresses (the unwind rows' pcs) are. Shared by the BPF unwinder's loader and the
 * perf-event backend's unwinder, so that both look rows up at the same pcs. */
#ifndef PP_UNWIND_BIAS_H
#define PP_UNWIND_BIAS_H

#include <stdbool.h>
#include <stdint.h>

/* pid maps [start, end) of a file at file offset `offset`, executable. Reads the program headers
 * of the very file mapped (/proc/<pid>/map_files/<start>-<end>) and takes the executable PT_LOAD
 * segment that offset lies in: a non-executable segment may share that page (lld puts the read-only
 * segment's tail and the text's head in one file page, at virtual addresses a page apart). False
 * when the file cannot be read as a 64-bit ELF or no such segment exists. */
bool pp_unwind_load_bias(int pid, uint64_t start, uint64_t end, uint64_t offset, uint64_t *bias);

#endif
