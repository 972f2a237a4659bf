/* The background reader of JIT perf maps and jitdumps (the symbolizer's, symbolizer.c): a
 * large map (a hostile user's 500 MB /tmp/perf-<pid>.map, a JIT that wrote millions of lines)
 * is read on a worker thread (base/workpool.h) in bounded chunks during the session, never on
 * the path that builds a session's profile, nor in the way of a stop:
 *  - each process's map is a pp_pmsrc: its pp_perfmap behind a lock, held by the worker for one
 *    chunk (PP_PMREAD_CHUNK bytes of the file) at a time; lookups take the same lock;
 *  - between chunks the worker yields: it waits while the reader is paused (during a drain,
 *    whose lookups then wait for one chunk at most), and ends its read when the reader is
 *    stopped (a stop signal, the exit) or has spent its time budget for the session; what is
 *    left is read in the next session (the file's remainder, from where it stopped);
 *  - a small remainder (a JIT's appended lines) is read at once by the caller, up to a byte
 *    budget per pass, so that its names need not wait for the worker.
 * Thread-safe where stated; the reader and its sources are reference counted, so that a read
 * still running when the symbolizer is freed ends on its own. */
#ifndef PP_PMREADER_H
#define PP_PMREADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtimes/symbols/symbols_internal.h"

#define PP_PMREAD_CHUNK (4u << 20) /* bytes of a file the worker reads under the lock at a time */
#define PP_PMREAD_INLINE_PER_PASS (4u << 20) /* bytes the caller may read itself per pass */
#define PP_PMREAD_MIN_BUDGET_S 2.0           /* a session's reading CPU time: at least this, */
#define PP_PMREAD_BUDGET_SHARE 4             /* else a quarter of the session */

typedef struct pp_pmreader pp_pmreader;
typedef struct pp_pmsrc pp_pmsrc;

/* NULL when out of memory. */
pp_pmreader *pp_pmreader_new(void);
/* Stops the reads (at their next chunk) and drops the caller's reference; waits for them at
 * most wait_s seconds (a read still running then ends on its own and frees what it holds). */
void pp_pmreader_free(pp_pmreader *r, double wait_s);
/* A new session of session_s seconds: its reading budget starts again (see above). */
void pp_pmreader_begin_session(pp_pmreader *r, double session_s);
/* Sets this session's budget (CPU seconds; tests). */
void pp_pmreader_set_budget(pp_pmreader *r, double seconds);
/* Pauses the worker at its next chunk (a drain begins) / lets it go on (the drain ended). */
void pp_pmreader_pause(pp_pmreader *r, bool paused);
/* Ends every read at its next chunk, for good (a stop signal): nothing more is read, by the
 * worker or by a refresh. */
void pp_pmreader_stop(pp_pmreader *r);
/* Waits until no read is queued or running, at most until the monotonic deadline; true when
 * idle (tests, and the exit). */
bool pp_pmreader_wait_idle(pp_pmreader *r, double deadline);
/* CPU seconds the worker read this session. */
double pp_pmreader_spent(pp_pmreader *r);

/* A process's map (empty), or NULL when out of memory. Caller's thread only, except where
 * stated. */
pp_pmsrc *pp_pmsrc_new(pp_pmreader *r);
/* Drops the caller's reference (a read in progress keeps its own). */
void pp_pmsrc_put(pp_pmsrc *src);
/* Brings src up to date with the file open at fd (a perf map, or a jitdump), taking fd: read
 * now when what is left of it fits in *inline_left (which it then decreases), else handed to
 * the worker (nothing is done while a read of src is running: it is read again at the next
 * refresh). Returns the entries added now, 0 when handed over, -1 when the file is not a
 * regular file (src is then empty). */
long pp_pmsrc_refresh(pp_pmsrc *src, int fd, bool jitdump, uint64_t *inline_left);
/* The map's name for addr (marked used) copied into buf (bufsz > 0), or false; waits for the
 * worker's current chunk at most. */
bool pp_pmsrc_find(pp_pmsrc *src, uint64_t addr, char *buf, size_t bufsz);
/* Empties src (its file is gone), unless a read of it is running. */
void pp_pmsrc_clear(pp_pmsrc *src);
typedef struct pp_pmsrc_stats {
    uint64_t dropped; /* entries dropped by the memory bound */
    size_t bytes;     /* memory held */
    size_t entries;
    bool reading;  /* a read is queued or running */
    bool complete; /* the file was read to its end */
    int cap_logged;
} pp_pmsrc_stats;
void pp_pmsrc_get_stats(pp_pmsrc *src, pp_pmsrc_stats *out);
/* Marks the bound's drop as logged (it is logged once per process). */
void pp_pmsrc_set_cap_logged(pp_pmsrc *src);

#endif
