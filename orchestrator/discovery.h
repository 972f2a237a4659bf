/* Process discovery: one pass over /proc classifies every process by runtime,
 * cheaply enough for hosts with thousands of processes. */
#ifndef PP_DISCOVERY_H
#define PP_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>

#include "runtimes/registry.h"

typedef struct pp_proc_list {
    pp_proc *procs;
    size_t n, cap;
} pp_proc_list;

typedef struct pp_discovery_opts {
    const int *pids; /* restrict to these pids (NULL = all) */
    size_t npids;
    int min_duration; /* skip processes younger than this many seconds (0 = none) */
    int self_pid;     /* polyprof's pid: it and its descendants are never listed.
                         0 = getpid(), negative = no self-exclusion (tests). */
    /* Regex overrides (PCRE2) per kind, NULL = the descriptor's default, "" = kind disabled
     * (its detector too); matched as the descriptor's match_on says (each distinct file
     * mapping's maps line, or the executable's path). A kind's detector (an ELF check) applies
     * whatever its regex, which only adds to it. native: must be NULL. */
    const char *maps_regex[PP_KIND_COUNT];
} pp_discovery_opts;

typedef struct pp_discovery pp_discovery;

/* Compiles the regexes once. NULL with a message in err if an override does not compile (the
 * message names the kind, the PCRE2 error and its offset). Not thread-safe: one pp_discovery per
 * thread. */
pp_discovery *pp_discovery_new(const pp_discovery_opts *o, char *err, size_t errlen);
void pp_discovery_free(pp_discovery *d);
/* One pass over /proc (kernel threads skipped, vanished processes skipped silently). The list
 * is cleared first. Returns 0, or -1 if /proc cannot be read. */
int pp_discover(pp_discovery *d, pp_proc_list *out);
/* Classifies one process on demand. Returns -1 if it is gone or excluded. */
int pp_discover_one(pp_discovery *d, int pid, pp_proc *out);
void pp_proc_list_free(pp_proc_list *l);

/* Counters since pp_discovery_new. A process seen in the previous pass with the same start time
 * and comm, and the same vsize or a runtime kind, reuses its classification without reading its
 * maps (docs/discovery.md); detectors cache their answers per executable identity. */
typedef struct pp_discovery_stats {
    unsigned long passes;     /* pp_discover calls */
    unsigned long maps_reads; /* /proc/<pid>/maps files read */
    unsigned long reused;     /* classifications reused from the previous pass */
    unsigned long elf_opens;  /* executables parsed by the detectors */
} pp_discovery_stats;
void pp_discovery_get_stats(const pp_discovery *d, pp_discovery_stats *s);

#endif
