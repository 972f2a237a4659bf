/* The symbolizer's internals shared by its files: symbolizer.c (processes, mappings, kernel, JIT
 * and user frames) and bincache.c (the binary symbol-table cache: bounded in count and bytes,
 * least recently used dropped first). */
#ifndef PP_SYMBOLS_SYMBOLIZER_INT_H
#define PP_SYMBOLS_SYMBOLIZER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtimes/symbols/pmreader.h"
#include "runtimes/symbols/symbolizer.h"
#include "runtimes/symbols/symbols_internal.h"

#define DEFAULT_MAX_BINARIES 256
/* The symbol tables cached together hold at most this many bytes (names, demangled names,
 * entries): a host where new binaries keep appearing (deployments, CI runners) must not grow
 * polyprof without bound. libjvm's table, among the largest, is a few MiB. */
#define DEFAULT_MAX_BINARY_BYTES (40u << 20) /* with the unwind rows (at most 12 MiB) */
#define PID_BUCKETS 1024
#define MAX_MAPS_PER_PID 65536
#define IDLE_PASSES 150 /* ~5 min of 2 s drains */
#define ELF_LAST_SPAN 4096

typedef struct pp_binary {
    uint64_t dev, ino, size;
    int64_t mtime_s, mtime_ns;
    pp_elf_meta meta;
    int quality; /* PP_SYMQ_* reached */
    pp_symtab tab;
} pp_binary;

typedef struct binslot {
    pp_binary *bin;
    uint64_t gen;
    uint64_t last_used;
} binslot;

enum { MAP_UNRESOLVED = 0, MAP_OK, MAP_FAILED };

typedef struct pp_map {
    uint64_t start, end, offset;
    char *path; /* as in maps, " (deleted)" included */
    uint8_t kind, deleted, state;
    uint32_t slot;
    uint64_t gen;
} pp_map;

typedef struct pp_proc {
    int pid, nspid;
    int root; /* in s->roots (held open: valid after the process exits), or -1 */
    pp_map *maps;
    size_t nmaps;
    uint64_t maps_pass;
    uint64_t used_pass; /* last pass that named one of its addresses (or announced it) */
    int dead;           /* last maps read failed (exited): dropped at the next pass */
    /* perf map (or jitdump), read in the background when large (pmreader.h) */
    pp_pmsrc *pm;
    int perfmap_present;
    uint64_t perfmap_pass;
    struct pp_proc *next;
} pp_proc;

struct pp_symbolizer {
    size_t max_binaries;
    size_t max_binary_bytes;
    size_t (*other_bytes)(void *); /* facts sharing the bound (pp_symbolizer_share_budget) */
    void *other_arg;
    binslot *slots;
    uint64_t next_gen, clock;
    /* By pid % PID_BUCKETS, chained; left off base/hashtab: looked up on emitter cache misses
     * only (not per sample), and each pp_proc is its own allocation anyway. */
    pp_proc *buckets[PID_BUCKETS];
    uint64_t pass;
    pp_symtab ksyms;
    int ksyms_loaded;
    char *kallsyms_path;
    char kernel_build_id[2 * PP_BUILD_ID_MAX + 1]; /* "" unknown */
    int kernel_build_id_read;
    pp_kernel_namer namer;
    void *namer_arg;
    pp_kcache *kcache; /* names given by the namer */
    pp_symtab vdso;
    pp_elf_meta vdso_meta;
    uint64_t vdso_len;
    int vdso_state; /* 0 not tried, 1 ok, -1 unavailable */
    pp_roots roots;
    int no_query;             /* the kernel has no PROCMAP_QUERY: maps are read as text */
    bool dso_names;           /* --insert-dso-name: "<symbol> (<dso>)" */
    uint64_t pm_dropped_gone; /* perf map entries dropped in processes no longer cached */
    pp_pmreader *pmr;         /* reads large perf maps on a worker thread */
    uint64_t inline_left;     /* perf map bytes the caller may still read itself this pass */
    pp_symbolizer_stats stats;
};

/* Opens path inside the process's root, whose symlinks cannot lead out of it: through the held
 * root when there is one (the host's: files open after the process exits too), else a
 * container's root opened for this file only (never held: that pins its mounts). */
int pp_sym_open_in_root(const pp_symbolizer *s, const pp_proc *p, const char *path, int flags);
/* Returns the binary of a file mapping, loading it when needed; *fresh is set when loaded now. */
pp_binary *pp_sym_map_binary(pp_symbolizer *s, const pp_proc *p, pp_map *m, int *fresh);
void pp_sym_binary_free(pp_binary *b);

#endif
