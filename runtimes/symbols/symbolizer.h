/* Symbolizer: turns sampled instruction pointers into frame names, the way gProfiler's perf
 * pipeline names them.
 *
 * User frames:   "<symbol>"              (demangled C++/Rust, as perf shows them;
 *                                         "<symbol> (<dso>)" with --insert-dso-name)
 *                "(<dso path>)"          address inside a mapped file with no symbol for it
 *                "(/tmp/perf-<pid>.map)" anonymous executable memory with no perf-map entry
 *                "(vdso)"                unresolved [vdso] address
 *                "[unknown]"             address in no mapping at all
 * Kernel frames: "<symbol>_[k]" (modules too), "[unknown]_[k]" when unnamed.
 *
 * Symbol tables are cached per binary identity (build-id, else dev+inode+mtime+size), bounded by
 * count; per-process mappings are cached per pid and re-read at most once per pass when an address
 * falls outside the cached mappings; processes that are gone or unused for minutes are dropped at
 * a pass. Files of containerized processes are read through
 * /proc/<pid>/root; deleted files through /proc/<pid>/map_files. Nothing here ever aborts: an
 * unreadable or malformed file just leaves its addresses unnamed. */
#ifndef PP_SYMBOLIZER_H
#define PP_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name of an address in no mapping (the emitter recognises it: garbage under a walk). */
#define PP_FRAME_UNMAPPED "[unknown]"

typedef struct pp_symbolizer pp_symbolizer;

typedef struct pp_symbolizer_stats {
    uint64_t binaries_loaded;  /* symbol tables read from disk */
    uint64_t binaries_cached;  /* lookups answered by an already loaded table */
    uint64_t binaries_evicted; /* tables dropped by the cache bounds (count, bytes) */
    uint64_t binary_bytes;     /* bytes the cached tables held after the last load */
    uint64_t maps_reads;       /* /proc/<pid>/maps reads */
    uint64_t unknown_frames;   /* addresses that could not be named by symbol */
    uint64_t kernel_named;     /* kernel addresses named by the kernel namer (cache misses) */
    /* JIT perf map entries dropped by the per-process memory bound (symbols_internal.h
     * PP_PERFMAP_MAX_BYTES), since the symbolizer was created */
    uint64_t perfmap_entries_dropped;
    uint64_t perfmap_bytes;   /* memory held by the JIT perf maps of the processes known now */
    uint64_t procs;           /* processes known now (their maps, perf maps) */
    uint64_t perfmap_reading; /* of them, those whose perf map is being read in the background */
} pp_symbolizer_stats;

/* max_binaries: bound of the symbol-table cache (0 = default 256). The tables are also bounded
 * in bytes (default 40 MiB, least recently used dropped first; the native unwinder's rows count
 * in it too: pp_symbolizer_share_budget). Returns NULL on OOM. */
pp_symbolizer *pp_symbolizer_new(size_t max_binaries);
/* Changes the byte bound of the cached symbol tables (applied at the next load). */
void pp_symbolizer_set_max_binary_bytes(pp_symbolizer *s, size_t bytes);
/* Other per-binary facts that count against the same byte bound (the native unwinder's rows,
 * docs/ARCHITECTURE.md "Memory bounds"): other(arg) gives their bytes, and tables are dropped
 * until theirs plus those fit. NULL: the tables alone. */
void pp_symbolizer_share_budget(pp_symbolizer *s, size_t (*other)(void *arg), void *arg);
void pp_symbolizer_free(pp_symbolizer *s);

/* Marks the start of a drain pass: allows each pid's maps to be re-read once more if needed,
 * and re-reads /tmp/perf-<pid>.map files that changed. */
void pp_symbolizer_begin_pass(pp_symbolizer *s);

/* The end of a drain pass: the background reading of large perf maps, paused at the pass's
 * start (its lookups wait for one chunk at most), goes on. */
void pp_symbolizer_end_pass(pp_symbolizer *s);
/* A session of `seconds` begins: large perf maps (and jitdumps) are read on a worker thread
 * during it, in 1 MiB chunks, for at most max(2 s, a quarter of the session) in all; a map not
 * read to its end by then is read on in the next session (its frames meanwhile named from what
 * was read, else "(/tmp/perf-<pid>.map)"). */
void pp_symbolizer_begin_session(pp_symbolizer *s, double seconds);
/* Ends the background reading for good, at its next chunk (a stop signal). */
void pp_symbolizer_stop_reading(pp_symbolizer *s);
/* Waits until no perf map is being read in the background, at most until the monotonic
 * deadline (pp_mono_now); true when none is. */
bool pp_symbolizer_wait_reads(pp_symbolizer *s, double deadline);

/* Names user address ip of process pid (a host pid). Writes a NUL-terminated frame (see above)
 * into buf and returns its length (truncated to bufsz-1). Never fails. */
size_t pp_symbolize_user(pp_symbolizer *s, int pid, uint64_t ip, char *buf, size_t bufsz);

/* The file a frame was found in (the pprof export's mappings): path as the process maps it
 * (" (deleted)" included), "[vdso]" or "[kernel.kallsyms]"; NULL when none (anonymous memory,
 * JIT code, an address in no mapping). build_id: the file's GNU build-id in lowercase hex, ""
 * when the file has none or could not be read. path stays valid until the next call on the
 * symbolizer. */
typedef struct pp_frame_file {
    const char *path;
    char build_id[129];
} pp_frame_file;
/* pp_symbolize_user, also telling the frame's file. */
size_t pp_symbolize_user_file(pp_symbolizer *s, int pid, uint64_t ip, char *buf, size_t bufsz,
                              pp_frame_file *file);

/* Names kernel address ip: "<symbol>_[k]". With a kernel namer set, asks it and caches the
 * answer per address (bounded); otherwise (or when the namer fails) from /proc/kallsyms, loaded
 * once, lazily. */
size_t pp_symbolize_kernel(pp_symbolizer *s, uint64_t ip, char *buf, size_t bufsz);
/* pp_symbolize_kernel, also telling the file: "[kernel.kallsyms]" with the running kernel's
 * build-id (/sys/kernel/notes, read once; "" when unreadable), for every kernel address. */
size_t pp_symbolize_kernel_file(pp_symbolizer *s, uint64_t ip, char *buf, size_t bufsz,
                                pp_frame_file *file);

/* A way to name one kernel address without reading /proc/kallsyms: returns 0 with the symbol
 * in name, 1 when the kernel has no symbol for ip, -1 when it cannot answer (the symbolizer then
 * falls back to /proc/kallsyms). */
typedef int (*pp_kernel_namer)(void *arg, uint64_t ip, char *name, size_t len);
/* Sets (fn != NULL) or removes the kernel namer. Names already cached stay cached. */
void pp_symbolizer_set_kernel_namer(pp_symbolizer *s, pp_kernel_namer fn, void *arg);

/* A process was sampled for the first time (or exec'd): reads its mappings now, while it runs,
 * so that its addresses can still be named after it exits. Mappings of an exited process are
 * kept until the pass after the one that failed to re-read them. */
void pp_symbolizer_note_pid(pp_symbolizer *s, int pid);

/* Drops the cached mappings of a pid that is gone (binaries stay cached). */
void pp_symbolizer_forget_pid(pp_symbolizer *s, int pid);

void pp_symbolizer_get_stats(const pp_symbolizer *s, pp_symbolizer_stats *out);

/* gProfiler's --insert-dso-name: named user frames become "<symbol> (<dso>)", the dso being the
 * mapped file's path as the process sees it, "vdso" or "/tmp/perf-<pid>.map" (as gProfiler's perf
 * frames). Unnamed and kernel frames do not change. Set it before the first symbolization: frames
 * already named are not renamed. */
void pp_symbolizer_set_dso_names(pp_symbolizer *s, bool on);

#endif
