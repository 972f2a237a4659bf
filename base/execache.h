/* A yes/no answer about a process's executable file (is it a Go binary, a .NET single-file app),
 * cached per file identity: st_dev, st_ino, mtime and size of the file /proc/<pid>/exe points to.
 * Discovery asks for every process of the host on every pass: a hit costs one stat; the file is
 * opened and examined once per distinct executable. */
#ifndef PP_EXECACHE_H
#define PP_EXECACHE_H

#include <stdbool.h>

#include "base/hashtab.h"

typedef struct pp_execache { /* zero-initialised: empty */
    pp_htab tab;             /* of the identities seen and their answer */
    unsigned long opens;     /* files examined (cache misses), for tests and the benchmark */
} pp_execache;

/* Sets *match to check's answer for pid's executable: check(fd) on a read-only descriptor of
 * the file, 1 for yes, 0 for no, -1 unreadable or not of the kind examined (cached as no: the
 * answer does not change for this identity). Returns 0, or -1 when /proc/<pid>/exe cannot be
 * stat'ed or opened (process gone, kernel thread, no permission). Beyond 65,536 identities the
 * cache starts over. */
int pp_execache_check_pid(pp_execache *c, int pid, int (*check)(int fd), bool *match);
void pp_execache_free(pp_execache *c);

/* The same, in the shape of a runtime's detector (runtimes/runtime.h): a new empty cache (NULL on
 * OOM), its release, and its count of files examined. */
void *pp_execache_new(void);
void pp_execache_delete(void *c);
unsigned long pp_execache_opens(const void *c);

#endif
