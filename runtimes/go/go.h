/* The Go runtime's pieces used outside its own files (the unit tests). */
#ifndef PP_GO_H
#define PP_GO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/hashtab.h"

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

#endif
