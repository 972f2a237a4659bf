/* JIT code names a runtime's own client hands to the symbolizer in memory (no perf map file):
 * per process, address ranges and the frame text of the code there. A runtime driver adds them
 * from any thread as it learns them (a runtime's method-load events); the symbolizer looks an
 * address of anonymous executable memory up here when the process's perf map does not name it.
 * Thread-safe; bounded in memory allocated per process (PP_JITNAMES_MAX_BYTES) and over all
 * processes (PP_JITNAMES_MAX_TOTAL): an addition past either is refused and counted (the names
 * held stay; a process's are freed when it is forgotten); and in processes
 * (PP_JITNAMES_MAX_PIDS: a new one takes the slot of the least recently added-to). */
#ifndef PP_JITNAMES_H
#define PP_JITNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_JITNAMES_MAX_PIDS 256
#define PP_JITNAMES_MAX_BYTES (16u << 20) /* a process's ranges and names, as allocated */
#define PP_JITNAMES_MAX_TOTAL (32u << 20) /* all processes' */

/* Names [start, start + size) of pid with name (copied). Code added later at an address wins
 * over earlier code there (a method re-compiled, or code memory reused). 0, or -1 (dropped by a
 * bound, size 0, OOM). */
int pp_jitnames_add(int pid, uint64_t start, uint64_t size, const char *name);
/* The name of ip in pid into out (NUL-terminated, cut to len - 1); false when none. */
bool pp_jitnames_find(int pid, uint64_t ip, char *out, size_t len);
/* Forgets pid's names (it exited, or its runtime client stopped). */
void pp_jitnames_forget(int pid);
/* Entries held for pid, and entries dropped by the bounds since the start. */
size_t pp_jitnames_count(int pid);
uint64_t pp_jitnames_dropped(void);
/* Bytes allocated for all processes' names now (bounded by PP_JITNAMES_MAX_TOTAL). */
size_t pp_jitnames_bytes(void);
/* Entries moved by sorting and merging since the start (a measure of the lookups' upkeep). */
uint64_t pp_jitnames_sort_work(void);

#endif
