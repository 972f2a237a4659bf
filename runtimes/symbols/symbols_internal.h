/* Private pieces of the symbolizer: sorted symbol tables, ELF / gopclntab / kallsyms / perf-map
 * loaders, /proc/<pid>/maps parsing, demangling and frame sanitizing. Exposed for the unit tests
 * and the fuzz target; not part of the public API (see symbolizer.h). */
#ifndef PP_SYMBOLS_INTERNAL_H
#define PP_SYMBOLS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "runtimes/symbols/symbolizer.h"

/* Value of a hex digit, or -1. */
static inline int pp_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* ---- process root directories held open (roots.c) ---- */

/* Root directories of processes, held open with O_PATH so that a process's files can still be
 * opened after it exits, and shared by processes with the same root (same device and inode):
 * only the host's root (pid 1's) and polyprof's own, never a container's (that would pin its
 * mounts). Zero-initialized = empty. */
#define PP_ROOTS_MAX 64
typedef struct pp_root_id {
    uint64_t dev, ino, mntns; /* the root directory, and the mount namespace it is seen from */
} pp_root_id;
typedef struct pp_roots {
    struct pp_root_ref {
        pp_root_id id;
        int fd;
        unsigned refs;
    } r[PP_ROOTS_MAX];
    pp_root_id trusted[2]; /* the host's (pid 1's) and polyprof's own */
    int ntrusted;
    int trusted_read; /* trusted[] is read at the first pp_roots_get */
} pp_roots;

/* Takes a reference to /proc/<pid>/root; returns its index, or -1 (a container's root, process
 * gone, table full). */
int pp_roots_get(pp_roots *t, int pid);
/* Drops a reference (idx -1 is ignored); the directory is closed with its last one. */
void pp_roots_put(pp_roots *t, int idx);
/* The O_PATH descriptor of idx. */
int pp_roots_fd(const pp_roots *t, int idx);

/* ---- symbol table (symtab.c) ---- */

#define PP_SYM_FUNC 0x01   /* STT_FUNC / STT_GNU_IFUNC / kernel text */
#define PP_SYM_GLOBAL 0x02 /* STB_GLOBAL */
#define PP_SYM_WEAK 0x04   /* STB_WEAK */
#define PP_SYM_SEQ 0x08    /* duplicates at one address: the last added wins (perf maps) */

/* Hard bounds that keep a malformed input from eating memory. */
#define PP_SYMTAB_MAX_SYMS (8u << 20)
#define PP_SYMTAB_MAX_ARENA (512u << 20)
#define PP_SYM_MAX_NAME 4096

typedef struct pp_sym {
    uint64_t addr;
    uint64_t end;  /* size while building; exclusive end after pp_symtab_finish */
    uint32_t name; /* offset into arena */
    uint8_t flags;
} pp_sym;

typedef struct pp_symtab {
    pp_sym *syms;
    size_t n, cap;
    char *arena; /* all names, NUL-terminated */
    size_t alen, acap;
    uint32_t *dem; /* lazily: per symbol 0 = unknown, 1 = not mangled, k = darena offset k-2 */
    char *darena;  /* demangled (and sanitized) names */
    size_t dlen, dcap;
    int finished;
} pp_symtab;

void pp_symtab_init(pp_symtab *t);
void pp_symtab_free(pp_symtab *t);
/* Adds a symbol (size 0 = extends to the next symbol). Names longer than PP_SYM_MAX_NAME are cut.
 * Returns 0, or -1 when a bound is hit or on OOM (the table stays usable). */
int pp_symtab_add(pp_symtab *t, uint64_t addr, uint64_t size, const char *name, size_t namelen,
                  uint8_t flags);
/* Sorts, keeps the best symbol per address (function > sized > non-weak > global > fewer leading
 * underscores > longer name > added later) and computes ends. A size-0 symbol ends at the next
 * symbol's address, the last one at addr + last_span. */
void pp_symtab_finish(pp_symtab *t, uint64_t last_span);
/* Symbol covering addr, or NULL. Table must be finished. */
const pp_sym *pp_symtab_find(const pp_symtab *t, uint64_t addr);
static inline const char *pp_symtab_name(const pp_symtab *t, const pp_sym *s)
{
    return t->arena + s->name;
}
/* Name for display: demangled when mangled (cached in the table), else the raw name. */
const char *pp_symtab_display_name(pp_symtab *t, const pp_sym *s);
size_t pp_symtab_memory(const pp_symtab *t);

/* ---- demangling and frame text (demangle.c) ---- */

/* Demangles a C++ (Itanium) or Rust name the way perf shows it; returns a malloc'd string or NULL
 * when the name is not mangled / cannot be demangled. */
char *pp_demangle(const char *name);
/* Writes src (with ';' -> '|', control chars -> '?') followed by suffix (may be NULL) into buf,
 * NUL-terminated, truncated to bufsz-1. Returns the length written. */
size_t pp_frame_write(char *buf, size_t bufsz, const char *src, const char *suffix);
/* Sanitizes a string in place (same replacements). */
void pp_frame_sanitize(char *s);

/* ---- kallsyms (ksyms.c) ---- */

/* Parses a kallsyms-format file (text symbols only). Returns the number of symbols, -1 when the
 * file cannot be opened. The table is finished. */
long pp_ksyms_load(const char *path, pp_symtab *t);
/* Parses one kallsyms line into t (not finished). Returns 1 if a symbol was added, else 0. */
int pp_ksyms_parse_line(const char *line, size_t len, pp_symtab *t);
/* The GNU build-id note among the ELF notes notes[0..len) (/sys/kernel/notes: the running
 * kernel's), as lowercase hex into hex (hexsz >= 2 * PP_BUILD_ID_MAX + 1). 0, or -1 when there
 * is none or the notes are malformed (hex is then ""). */
int pp_ksyms_notes_build_id(const unsigned char *notes, size_t len, char *hex, size_t hexsz);

/* ---- kernel names asked of a namer, cached per address (kcache.c) ---- */

typedef struct pp_kcache pp_kcache;
pp_kcache *pp_kcache_new(size_t max_entries);
void pp_kcache_free(pp_kcache *c);
/* The cached name of ip: 1 found (*name set, "" = the kernel has no symbol), 0 not cached. */
int pp_kcache_get(const pp_kcache *c, uint64_t ip, const char **name);
/* Caches name ("" for none) for ip; when full, the cache starts over. 0, or -1 on OOM. */
int pp_kcache_put(pp_kcache *c, uint64_t ip, const char *name);

/* ---- perf maps (perfmap.c) ---- */

/* Parses "START SIZE name" (hex, optional 0x). Returns 0 and sets the outputs, -1 if malformed. */
int pp_perfmap_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *size,
                          const char **name, size_t *namelen);

/* A process's perf map in memory, bounded: at most max_bytes (entries and names); over it, entries
 * that never named a sample go first (the oldest first), then the least recently used ones, and
 * they are counted. A map that only
 * grew (a JIT appends) is parsed from where the last read stopped; one rewritten (Java's
 * Compiler.perfmap) or replaced is parsed again. The file is read in chunks, never whole.
 * Zero-initialized = empty with the default cap (PP_PERFMAP_MAX_BYTES). */
#define PP_PERFMAP_MAX_BYTES (16u << 20) /* per process; POLYPROF_PERFMAP_MAX_MB overrides */
typedef struct pp_pm_sym {
    uint64_t addr, size;
    uint32_t name; /* offset into arena */
    uint32_t used; /* clock of the last lookup (| 1 << 31), else of the read that added it */
} pp_pm_sym;
typedef struct pp_perfmap {
    pp_pm_sym *syms; /* sorted by address, one per address (the newest line wins) */
    size_t n, cap;
    char *arena;
    size_t alen, acap, garbage; /* garbage: bytes of names no entry uses any more */
    size_t max_bytes;           /* 0 = default */
    uint32_t clock;
    /* the file read so far */
    uint64_t dev, ino, size, parsed; /* parsed: offset after the last complete line read */
    int complete;                    /* read to the end of the file (as large as size) */
    int64_t mtime_s, mtime_ns;
    char head[64], tail[64]; /* its first bytes and the bytes before parsed */
    size_t headlen, taillen;
    uint64_t dropped; /* entries evicted, since the map was created */
    int cap_logged;
} pp_perfmap;

void pp_perfmap_free(pp_perfmap *m);
/* Brings m up to date with the perf map open at fd (a regular file): nothing when it did not
 * change, the appended lines when it only grew, everything again otherwise. Returns the
 * entries added, or -1 when it cannot be read (m is then empty). */
long pp_perfmap_update(pp_perfmap *m, int fd);
/* pp_perfmap_update reading at most about max_bytes of the file (whole lines, one 1 MiB chunk
 * more at most): m->complete stays 0 while some is left, and the next call goes on from where
 * this one stopped (or starts again when the file was rewritten meanwhile). */
long pp_perfmap_update_some(pp_perfmap *m, int fd, uint64_t max_bytes);
/* The bytes of the file open at fd that m has not read yet: after what it parsed when the file
 * is the one m read, all of it otherwise. */
uint64_t pp_perfmap_unread(const pp_perfmap *m, int fd);
/* Adds the complete lines of data (a perf map's text; a last line without '\n' counts too) to
 * m, applying the bound. Returns entries added. */
long pp_perfmap_parse(pp_perfmap *m, const char *data, size_t len);
/* The name covering addr (marked used), or NULL. */
const char *pp_perfmap_find(pp_perfmap *m, uint64_t addr);
/* Bytes m holds (the bound applies to this). */
size_t pp_perfmap_memory(const pp_perfmap *m);

/* ---- jitdump files (jitdump.c): code-load records as perf map entries ---- */

/* The header size of a jitdump's start (data, len), or -1 when it is not one. */
long pp_jitdump_header(const void *data, size_t len);
/* Adds the code-load (and code-move) records of data (records from a record boundary; limit:
 * the bytes the file holds from there, >= len) to m. *used: the bytes of whole records
 * consumed; *closed: a close record (or garbage) ends the file. Returns entries added. */
long pp_jitdump_records(pp_perfmap *m, const void *data, size_t len, uint64_t limit, uint64_t *used,
                        int *closed);
/* pp_perfmap_update for a jitdump open at fd: the records appended since the last call. */
long pp_jitdump_update(pp_perfmap *m, int fd);
/* pp_jitdump_update reading at most about max_bytes (see pp_perfmap_update_some). */
long pp_jitdump_update_some(pp_perfmap *m, int fd, uint64_t max_bytes);

/* ---- /proc/<pid>/maps (procmaps.c) ---- */

typedef enum {
    PP_MAP_FILE = 0,
    PP_MAP_ANON,  /* anonymous executable memory: JIT, looked up in the perf map */
    PP_MAP_VDSO,  /* [vdso] */
    PP_MAP_OTHER, /* other pseudo mappings: [vsyscall], [heap], [stack] ... */
} pp_map_kind;

typedef struct pp_maps_line {
    uint64_t start, end, offset, inode;
    unsigned dev_major, dev_minor;
    char perms[5];
    const char *path; /* points into the line, not NUL-terminated; "" when none */
    size_t pathlen;
    int deleted; /* path ends with " (deleted)" (kept in path) */
} pp_maps_line;

int pp_maps_parse_line(const char *line, size_t len, pp_maps_line *out);
pp_map_kind pp_maps_classify(const char *path, size_t pathlen);

/* Executable mappings read from an open /proc/<pid>/maps: with PROCMAP_QUERY (Linux 6.11+: the
 * kernel formats only those) unless *no_query, else from the text; fn is called for each (path
 * as in the maps text) and stops the walk by returning non-zero. On a kernel without the ioctl
 * sets *no_query and reads the text. Returns 0, or -1 when the mappings cannot be read (the
 * process exited). */
int pp_maps_read_exec(int fd, int *no_query, int (*fn)(void *arg, const pp_maps_line *ml),
                      void *arg);
/* 1 when an executable mapping covers addr, 0 when none does, -1 when the kernel cannot tell
 * (no PROCMAP_QUERY, or the process exited). */
int pp_maps_covers_exec(int fd, uint64_t addr);

/* ---- ELF symbol tables (elfsyms.c) ---- */

#define PP_ELF_MAX_SEGS 16
#define PP_BUILD_ID_MAX 64

typedef struct pp_load_seg {
    uint64_t offset, filesz, vaddr;
} pp_load_seg;

typedef struct pp_elf_meta {
    pp_load_seg segs[PP_ELF_MAX_SEGS];
    int nsegs;
    uint8_t build_id[PP_BUILD_ID_MAX];
    size_t build_id_len;
    char debuglink[256]; /* "" when none */
    uint32_t debuglink_crc;
    int has_symtab, has_dynsym, has_debugdata, has_gopclntab;
} pp_elf_meta;

/* Where debug files are searched: inside the process's root (rootfd, a directory descriptor;
 * else /proc/<pid>/root, opened for the lookup only, when pid > 0; neither: no process root),
 * resolved there with pp_openat_in_root (a container's symlinks stay in it), then in polyprof's
 * own root; path is the binary's path as seen from the process's root. */
typedef struct pp_debug_ctx {
    int rootfd;
    int pid;
    const char *path;
} pp_debug_ctx;

typedef struct Elf Elf;

/* Fills meta from an opened Elf. Returns 0, -1 when not a usable ELF. */
int pp_elf_meta_read(Elf *e, pp_elf_meta *meta);
/* Adds symbols of the first section of type sh_type (SHT_SYMTAB / SHT_DYNSYM). Returns count. */
long pp_elf_add_section_syms(Elf *e, unsigned sh_type, pp_symtab *t);
/* Adds .gnu_debugdata (MiniDebugInfo) symbols. Returns count, -1 when absent/bad. */
long pp_elf_add_debugdata(Elf *e, pp_symtab *t);
/* Symbol-source quality: what a table was built from, or could be built from (see below). */
#define PP_SYMQ_DYNAMIC 1   /* .dynsym / .gopclntab only */
#define PP_SYMQ_MINIDEBUG 2 /* + .gnu_debugdata */
#define PP_SYMQ_FULL 3      /* a .symtab (own or external debug file) */
/* Best quality meta suggests is reachable (debuglink counts as full). */
int pp_elf_meta_potential(const pp_elf_meta *meta);
/* Loads all symbols for the binary in e (not finished): .symtab, else external debug file
 * (build-id, debuglink; dbg may be NULL), else .dynsym + .gnu_debugdata + .gopclntab.
 * *quality (may be NULL) receives the PP_SYMQ_* reached. */
long pp_elf_load_all(Elf *e, const pp_elf_meta *meta, const pp_debug_ctx *dbg, pp_symtab *t,
                     int *quality);
/* Whole pipeline on an in-memory ELF image (no external debug files). Finishes t.
 * Fills meta when not NULL (zeroed on failure). Returns symbols, -1 when not an ELF. */
long pp_elf_load_memory(const void *data, size_t len, pp_symtab *t, pp_elf_meta *meta);
/* File offset -> ELF virtual address through PT_LOAD segments. Returns 0 and sets *vaddr. */
int pp_elf_offset_to_vaddr(const pp_elf_meta *meta, uint64_t off, uint64_t *vaddr);
/* CRC32 (zlib) of a whole file; returns 0 on success. */
int pp_file_crc32(int fd, uint32_t *crc);

/* ---- Go .gopclntab (gopclntab.c) ---- */

/* Parses a .gopclntab section image. text_start is used when the header holds 0 (PIE) or for
 * pre-1.18 formats it is ignored. Returns functions added (table not finished), -1 if bad. */
long pp_gopclntab_parse(const uint8_t *data, size_t len, uint64_t text_start, pp_symtab *t);

/* ---- symbolizer internals for tests (symbolizer.c) ---- */

/* Overrides the kallsyms path (default /proc/kallsyms); resets the loaded kernel table. */
void pp_symbolizer_set_kallsyms_path(pp_symbolizer *s, const char *path);

#endif
