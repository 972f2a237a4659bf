/* The local history store (--history-dir DIR): every session's stacks and counts kept on the host
 * in DIR/history.db, an SQLite database in WAL mode (a reader, `polyprof history`, reads while
 * polyprof writes; a killed polyprof loses at most the session being written: one transaction
 * per session). Frame strings and stacks are stored once (interned: a frames table and a stacks
 * table keyed by hash, sample rows referencing stack ids; a frame with the file and build-id it
 * was found in, a mappings table). Retention, enforced after each write:
 * sessions older than the fine age are merged into per-minute summaries, anything older than the
 * max age is deleted, and while the database is over the byte cap the oldest sessions (summaries
 * first, as they are the oldest) are deleted. The schema and its reasons: docs/decisions.md. */
#ifndef PP_HISTORY_STORE_H
#define PP_HISTORY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge/profile.h"

/* The database's name in the history directory. */
#define PP_HISTORY_DB "history.db"

/* Defaults of --history-max-bytes, --history-fine-age, --history-max-age. */
#define PP_HISTORY_DEF_MAX_BYTES (1ULL << 30)
#define PP_HISTORY_DEF_FINE_AGE 3600
#define PP_HISTORY_DEF_MAX_AGE (7 * 86400)

typedef struct pp_history_limits {
    uint64_t max_bytes; /* byte cap of the database's live pages (0: none) */
    int64_t fine_age;   /* seconds a session is kept whole before its minute's summary takes it */
    int64_t max_age;    /* seconds anything is kept */
    /* tests: SQLite's max_page_count (0: none), so that a write fails with SQLITE_FULL as on a
     * full disk */
    uint32_t max_pages;
} pp_history_limits;

typedef struct pp_history pp_history;

/* Opens DIR/history.db. With writer, DIR is created (mode 0700, never through a symlink, owned by
 * the effective uid: base/safefile.h's pp_open_private_dir) and the database file too (0600,
 * O_NOFOLLOW, a regular file with one link owned by the effective uid), the schema is created and
 * limits apply (NULL: the defaults). Without writer (queries), a missing database is an error.
 * Returns NULL with a message in err (what is wrong and what to do). */
pp_history *pp_history_open(const char *dir, bool writer, const pp_history_limits *lim, char *err,
                            size_t errlen);
void pp_history_close(pp_history *h);

/* pp_history_add's result when the disk (or the test page limit) is full: nothing of the session
 * was stored. */
#define PP_HISTORY_FULL (-2)
/* pp_history_add's result when the session was stored (committed) but retention then failed
 * (rolled back: the store is as it was after the session's write). */
#define PP_HISTORY_RETAIN_FAILED (-3)

/* Stores a session: its time range (seconds since the epoch), host name, sampling frequency, and
 * per process of p
 * with samples its pid, comm, container, appid, runtime and stacks with counts; then enforces
 * retention relative to end. Returns 0, PP_HISTORY_FULL, PP_HISTORY_RETAIN_FAILED (the session
 * is kept) or -1 with a message in err. */
int pp_history_add(pp_history *h, const pp_profile *p, int64_t start, int64_t end, const char *host,
                   int hz, char *err, size_t errlen);

/* Retention alone (pp_history_add runs it), relative to now. 0, PP_HISTORY_FULL or -1. */
int pp_history_retain(pp_history *h, int64_t now, char *err, size_t errlen);

typedef struct pp_history_filter {
    int64_t since, until; /* sessions whose [start, end] overlaps [since, until] */
    int pid;              /* 0: any */
    const char *comm, *container, *runtime, *appid; /* NULL: any; runtime "system": none */
    uint64_t max_bytes; /* cap of the result's memory (estimated); 0: PP_HISTORY_QUERY_MAX_BYTES */
} pp_history_filter;

/* The default cap of a query's result in memory: past it the query fails, saying to narrow the
 * window or add a filter (a busy day can be millions of distinct stacks). */
#define PP_HISTORY_QUERY_MAX_BYTES (256ULL << 20)

typedef struct pp_history_window {
    size_t sessions;     /* sessions and summaries read */
    int64_t first, last; /* earliest start and latest end read (0 when none) */
    int hz;              /* the highest sampling frequency of those sessions (0 when none) */
    char hosts[256];     /* the host names, comma separated (truncated) */
} pp_history_window;

/* The merged profile of the sessions that overlap the filter's window, with the filter's
 * processes: one entry per (pid, comm, container, appid, runtime). A pid reused by another
 * process in the window is keyed above 4194304 (PID_MAX_LIMIT) for the later one. NULL with a
 * message in err. */
pp_profile *pp_history_query(pp_history *h, const pp_history_filter *f, pp_history_window *w,
                             char *err, size_t errlen);

typedef struct pp_history_stats {
    int64_t sessions, summaries, procs, samples, stacks, frames;
    uint64_t bytes; /* live pages x page size */
} pp_history_stats;

int pp_history_get_stats(pp_history *h, pp_history_stats *st, char *err, size_t errlen);

#endif
