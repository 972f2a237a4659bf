/* The on-disk upload spool: one file per pending upload in a private directory (0700, files
 * 0600), written atomically (temp file, fsync, rename), named by creation time so that sorting
 * the names gives the submission order. Bounded by total size, age and count: the oldest
 * entries are dropped first, each with a warning line. */
#ifndef PP_SPOOL_H
#define PP_SPOOL_H

#include <jansson.h>
#include <stddef.h>

typedef struct pp_spool_limits {
    unsigned long long max_bytes; /* default 256 MiB */
    long long max_age_s;          /* default 24 h */
    size_t max_files;             /* default 10000 */
} pp_spool_limits;

typedef struct pp_spool pp_spool;

/* Defaults, overridable by POLYPROF_SPOOL_MAX_MB, POLYPROF_SPOOL_MAX_AGE_S and
 * POLYPROF_SPOOL_MAX_FILES. */
void pp_spool_default_limits(pp_spool_limits *l);

/* Opens (creating it and its parents if needed) the spool directory dir. label names the spool
 * in log lines ("Performance Studio"). Removes temp files a crash left behind and applies the
 * limits. NULL with a message in err on failure. */
pp_spool *pp_spool_open(const char *dir, const char *label, const pp_spool_limits *lim, char *err,
                        size_t errlen);
void pp_spool_close(pp_spool *sp);
const char *pp_spool_path(const pp_spool *sp);

/* Adds an entry (meta: a JSON object, data: the payload), then applies the limits. Returns 0,
 * or -1 with a message in err. */
int pp_spool_put(pp_spool *sp, const json_t *meta, const char *data, size_t len, char *err,
                 size_t errlen);

/* Drops entries (oldest first) until the limits hold at time now_ns (ns since the epoch). */
void pp_spool_enforce(pp_spool *sp, long long now_ns);

/* Pending entry names, oldest first; *names is malloc'd (free with pp_spool_names_free). */
size_t pp_spool_list(pp_spool *sp, char ***names);
void pp_spool_names_free(char **names, size_t n);
/* Number of pending entries and their total size. */
size_t pp_spool_count(pp_spool *sp, unsigned long long *bytes);

/* Reads one entry. Returns 0, or -1 (missing or corrupt: the caller should remove it). */
int pp_spool_read(pp_spool *sp, const char *name, json_t **meta, char **data, size_t *len);
void pp_spool_remove(pp_spool *sp, const char *name);

/* Creation time of an entry from its name, ns since the epoch (0 if the name is foreign). */
long long pp_spool_entry_time(const char *name);

#endif
