/* The table behind pp_log_proc (log.h): which per-process messages were logged, and how many
 * repeats of each were counted instead of logged. A key names one message of one process (the
 * caller hashes the process and the message's format). The first occurrence of a key is logged;
 * later ones are counted until PP_LOGREP_INTERVAL seconds have passed since it was last logged,
 * when it is logged again (with the count). Bounded: PP_LOGREP_SLOTS keys in sets of
 * PP_LOGREP_WAYS; a key arriving in a full set replaces the one seen least recently there (its
 * next occurrence is logged again, its count moves to `forgotten`). Not thread-safe: log.c holds
 * its lock around every call. */
#ifndef PP_LOGREPEAT_H
#define PP_LOGREPEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_LOGREP_WAYS 8
#define PP_LOGREP_SETS 512
#define PP_LOGREP_SLOTS (PP_LOGREP_WAYS * PP_LOGREP_SETS) /* 4096 keys, 128 KiB */
#define PP_LOGREP_INTERVAL 3600.0

typedef struct pp_logrep_slot {
    uint64_t key;
    uint64_t used;           /* the table's clock at the key's last occurrence; 0: free */
    double logged;           /* when the key was last logged (the caller's clock, seconds) */
    unsigned long long held; /* repeats counted since then */
} pp_logrep_slot;

typedef struct pp_logrep {
    pp_logrep_slot slot[PP_LOGREP_SLOTS];
    uint64_t clock;                /* occurrences seen, for least-recently-used replacement */
    unsigned long long suppressed; /* every repeat counted instead of logged, since the start */
    unsigned long long forgotten;  /* held repeats of keys that were replaced */
} pp_logrep;

/* One occurrence of key at now (seconds, any monotonic clock). True when it must be logged; then
 * *held is the number of repeats not logged since it was last logged (0 the first time) and
 * *since the seconds since then. False: counted. A zeroed pp_logrep is an empty table. */
bool pp_logrep_check(pp_logrep *t, uint64_t key, double now, unsigned long long *held,
                     double *since);

/* Repeats counted and not logged since each key was last logged (forgotten ones included), and
 * how many keys hold some (*keys, may be NULL). */
unsigned long long pp_logrep_held(const pp_logrep *t, size_t *keys);

/* Zeroes every held count (after they were reported). */
void pp_logrep_clear_held(pp_logrep *t);

#endif
