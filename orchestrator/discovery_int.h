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
