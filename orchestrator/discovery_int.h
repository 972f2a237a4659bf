/* Process discovery internals shared by discovery.c, discovery_proc.c and the unit tests. */
#ifndef PP_DISCOVERY_INT_H
#define PP_DISCOVERY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/hashtab.h"
#include "orchestrator/discovery.h"

/* Fields of /proc/<pid>/stat that discovery uses. */
typedef struct pp_stat_info {
    int ppid;
    unsigned long flags;            /* field 9 (PF_* task flags) */
    unsigned long long start_ticks; /* field 22 */
    unsigned long long vsize;       /* field 23 (bytes) */
    char comm[17];
} pp_stat_info;

#define PP_PF_KTHREAD 0x00200000UL

/* Parses a /proc/<pid>/stat line. The comm field may hold spaces and parentheses: fields after
 * it are parsed from the last ')'. Returns 0, or -1 if the line is malformed. */
int pp_disc_parse_stat(const char *buf, size_t len, pp_stat_info *out);

/* Reads a whole (small) /proc file into buf (NUL-terminated, at most cap - 1 bytes). Returns
 * the length, or -1 with errno. */

/* Go executables: an ELF note named "Go" of type 4 (NT_GO_BUILDID) in a PT_NOTE segment or
 * SHT_NOTE section, or a .go.buildinfo section. The answer is cached per executable identity
 * (st_dev, st_ino, mtime, size of the file /proc/<pid>/exe points to), so the ELF file is opened
 * once per distinct executable. */
typedef struct pp_go_entry {
    dev_t dev;
    ino_t ino;
    long long mtime_sec;
    long mtime_nsec;
    long long size;
    bool is_go;
} pp_go_entry;

typedef struct pp_go_cache { /* zero-initialised: empty */
    pp_htab tab;             /* of pp_go_entry */
    unsigned long elf_opens; /* ELF files parsed (cache misses), for tests and the benchmark */
} pp_go_cache;

/* Sets *is_go for the executable of pid. Returns 0, or -1 if /proc/<pid>/exe cannot be stat'ed
 * (process gone, kernel thread, no permission). */
int pp_go_check_pid(pp_go_cache *c, int pid, bool *is_go);
/* Same for an open file (uncached): 1 Go, 0 not Go, -1 unreadable or not ELF. */
int pp_go_check_fd(int fd);
void pp_go_cache_free(pp_go_cache *c);

/* Reads the file mappings of pid as maps text into *buf (grown as needed up to limit bytes,
 * NUL-terminated; what does not fit is left out at a line boundary): with PROCMAP_QUERY only
 * the executable file-backed mappings, each as "0-0 r-xp 0 0:0 0 <path>"; on older kernels the
 * whole text of /proc/<pid>/maps. Returns the length, or -1 with errno (ESRCH/ENOENT: gone,
 * EACCES: not permitted). */
ssize_t pp_disc_read_maps(int pid, char **buf, size_t *cap, size_t limit);
/* Tests and benchmarks: read the whole text even where PROCMAP_QUERY exists. */
void pp_disc_force_text_maps(bool on);

/* Matches maps text (each distinct file mapping once, the whole maps line as subject) with the
 * maps-line kinds. Sets bits in *kinds, and in *exe_kinds for matches on the executable's own
 * mapping (exe: readlink of /proc/<pid>/exe, may be empty). */
void pp_disc_match_maps(pp_discovery *d, const char *buf, size_t len, const char *exe,
                        size_t exelen, unsigned *kinds, unsigned *exe_kinds);

#endif
