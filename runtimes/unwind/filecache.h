/* The per-file cache: one entry per ELF file mapped by any profiled process, shared by every
 * process that maps it, holding the facts polyprof derives from the file once (its unwind rows
 * today; symbols and interpreter layouts are meant to join pp_fc_file later). docs/ARCHITECTURE.md,
 * "Native unwinding".
 *
 * Keys. A file is keyed by its GNU build-id; a file without one by its device, inode, size and
 * mtime. A mapping is first looked up by the (device, inode) its /proc/<pid>/maps line shows,
 * an in-memory lookup: that index holds only identities some live process maps (an inode whose
 * last mapper was released leaves it, so a reused inode number never finds old rows).
 *
 * Reading the file. The worker opens /proc/<pid>/map_files/<start>-<end>, the very file the
 * process maps (a file renamed over it on disk is not read), and takes it when its fstat shows the
 * maps line's device and inode, or (a stacked file system may show another inode through the
 * link) when the process still maps that inode at start (PROCMAP_QUERY, else the maps text): a
 * range remapped to another file since the caller read its maps is refused. Where map_files
 * cannot be opened, the mapping's path under /proc/<pid>/root, accepted only when its fstat
 * shows the maps line's device and inode. Reads are bounded (pp_cfi_build's caps).
 *
 * Off the caller's path. pp_filecache_map never blocks on I/O: an unknown identity is queued to a
 * worker (base/workpool.h) and reported PP_FC_BUILDING; later calls see READY or FAILED.
 *
 * Memory. The rows of all entries together are capped at a byte figure (pp_filecache_new's
 * max_bytes; 0 takes $POLYPROF_UNWIND_CACHE_MIB when set, else PP_FILECACHE_DEFAULT_BYTES).
 * Entries no process references are dropped least-recently-used first when the cap is
 * exceeded; an entry that does not fit while every other is referenced is FAILED ("over the
 * cache's byte cap") and is retried when it is next mapped after its last mapper went away.
 *
 * Ids. Each entry has a small integer id (1, 2, ...; 0 is none), stable for the entry's life and
 * not reused while the cache lives (ids are 32-bit). The BPF unwinder uses it as its map key.
 *
 * Changes. pp_filecache_generation increases whenever an entry becomes READY or FAILED or is
 * dropped; a consumer polls it and, when it moved, lists the entries (pp_filecache_foreach) and
 * diffs them with what it holds (an id no longer listed was dropped).
 *
 * Thread-safe: every function may be called from any thread. */
#ifndef PP_UNWIND_FILECACHE_H
#define PP_UNWIND_FILECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtimes/unwind/cfipack.h"

#define PP_FILECACHE_DEFAULT_BYTES ((size_t)12 << 20) /* 12 MiB of rows (1.5 Mi) for the host */
#define PP_FILECACHE_IDLE_S 60.0 /* an unmapped file's rows are kept this long */
#define PP_FILECACHE_ENV "POLYPROF_UNWIND_CACHE_MIB" /* overrides the default, in MiB */

typedef enum {
    PP_FC_NONE = 0,     /* unknown id, or the entry was dropped */
    PP_FC_BUILDING = 1, /* queued or being built: use frame pointers meanwhile */
    PP_FC_READY = 2,    /* rows available (pp_filecache_acquire) */
    PP_FC_FAILED = 3,   /* no rows: no CFI, unreadable, malformed, over the cap (see err) */
} pp_fc_state;

/* One file's facts. Every field is immutable once the entry is READY or FAILED; read them only
 * through pp_filecache_acquire (which keeps the entry alive) or inside a foreach callback. */
typedef struct pp_fc_file {
    uint32_t id;
    char key[96];      /* "buildid:<hex>" or "inode:<dev>:<ino>:<size>:<mtime_ns>" */
    pp_cfi_packed cfi; /* the unwind rows (READY), 8 bytes a row */
    size_t bytes;      /* what the entry counts against the cap */
    char err[160];     /* why FAILED */
    /* Later: symbols, interpreter layouts (one struct per file). */
} pp_fc_file;

/* The mapping a process shows in its maps line. */
typedef struct pp_fc_mapping {
    uint64_t start, end; /* the mapping's address range (for /proc/<pid>/map_files) */
    uint64_t dev;        /* makedev(major, minor) of the maps line */
    uint64_t ino;
    const char *path; /* the maps line's path (may be NULL): the fallback through
                         /proc/<pid>/root, checked against dev and ino */
} pp_fc_mapping;

/* A listed entry (pp_filecache_foreach). */
typedef struct pp_fc_info {
    uint32_t id;
    pp_fc_state state;
    uint64_t gen;    /* the generation at which it became READY/FAILED */
    size_t bytes;    /* counted against the cap: the rows' bytes plus the entry's own */
    size_t refs;     /* identities (mapped inodes) referencing it through live processes */
    size_t nrows;    /* READY: rows */
    const char *key; /* valid during the callback only */
    const char *err; /* FAILED: why (valid during the callback only) */
} pp_fc_info;

typedef struct pp_fc_stats {
    size_t cap_bytes, bytes; /* the cap and the bytes held (rows plus each entry's own) */
    size_t files, ready, building, failed;
    uint64_t evicted, built, build_failed;
    uint64_t expired; /* dropped after PP_FILECACHE_IDLE_S unmapped */
} pp_fc_stats;

typedef struct pp_filecache pp_filecache;

/* max_bytes 0: $POLYPROF_UNWIND_CACHE_MIB, else PP_FILECACHE_DEFAULT_BYTES. threads: the worker
 * threads building rows (0: 1). NULL when out of memory. */
pp_filecache *pp_filecache_new(size_t max_bytes, size_t threads);
/* The cap a cache created with max_bytes 0 gets ($POLYPROF_UNWIND_CACHE_MIB, else the default;
 * a malformed value is logged and ignored). */
size_t pp_filecache_cap_bytes(void);
/* An entry no process has mapped for this long is dropped (checked when a process is released
 * or unmaps a file, at most once a second; default PP_FILECACHE_IDLE_S). */
void pp_filecache_set_idle(pp_filecache *c, double seconds);
/* Never waits: builds that are running finish on their threads and free what is left. Put every
 * acquired entry before (one still acquired is left allocated). */
void pp_filecache_free(pp_filecache *c);

/* Process pid maps m's file: records the reference (idempotent per pid and identity) and returns
 * the state of the file's entry, with its id in *id (0 while the file is not yet identified).
 * Never blocks on I/O. */
pp_fc_state pp_filecache_map(pp_filecache *c, int pid, const pp_fc_mapping *m, uint32_t *id);
/* Process pid no longer maps the file of (dev, ino) (munmap, dlclose): its reference is released.
 * No-op when it held none. */
void pp_filecache_unmap(pp_filecache *c, int pid, uint64_t dev, uint64_t ino);
/* The process is gone (or rescanned from scratch): every reference it held is released. */
void pp_filecache_release_pid(pp_filecache *c, int pid);

/* The state of an entry by id (PP_FC_NONE: unknown or dropped). */
pp_fc_state pp_filecache_state(pp_filecache *c, uint32_t id);
/* A READY entry, kept alive (not dropped, rows not freed) until pp_filecache_put; NULL unless
 * READY. Marks it recently used. */
const pp_fc_file *pp_filecache_acquire(pp_filecache *c, uint32_t id);
void pp_filecache_put(pp_filecache *c, const pp_fc_file *f);

/* Increases whenever an entry becomes READY or FAILED, or is dropped. */
uint64_t pp_filecache_generation(pp_filecache *c);
/* Calls cb for every entry (under the cache's lock: cb must not call the cache, and be quick).
 * Returns the generation the listing reflects. */
uint64_t pp_filecache_foreach(pp_filecache *c, void (*cb)(void *arg, const pp_fc_info *info),
                              void *arg);
void pp_filecache_stats(pp_filecache *c, pp_fc_stats *out);
/* The bytes held (pp_fc_stats.bytes); a size_t (*)(void *) for pp_symbolizer_share_budget. */
size_t pp_filecache_bytes(void *cache);
/* Builds queued or running (for tests and an orderly exit). */
size_t pp_filecache_pending(pp_filecache *c);

#endif
