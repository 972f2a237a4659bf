/* Private to the history store (history_store.c, history_retain.c, history_query.c). */
#ifndef PP_HISTORY_INT_H
#define PP_HISTORY_INT_H

#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>

#include "orchestrator/history_store.h"

struct pp_history {
    sqlite3 *db;
    int dfd; /* the history directory, held */
    bool writer;
    pp_history_limits lim;
    char dir[PATH_MAX];
};

/* Puts "history database DIR/history.db: what: <sqlite's message>" in err. */
void pp_hist_err(pp_history *h, char *err, size_t errlen, const char *what);
/* Runs sql; 0, or PP_HISTORY_FULL / -1 with a message in err. */
int pp_hist_exec(pp_history *h, const char *sql, char *err, size_t errlen);
/* BEGIN IMMEDIATE; on failure no transaction is left open (an interrupted BEGIN can report an
 * error after it began one). 0, or PP_HISTORY_FULL / -1 with a message in err. */
int pp_hist_begin(pp_history *h, char *err, size_t errlen);
/* Whether an SQLite result code means the disk (or the page limit) is full. */
bool pp_hist_full(pp_history *h, int rc);

/* Stack blobs: frame ids as LEB128 varints. put writes at most 10 bytes; get returns 0, or -1 when
 * the varint runs past end. */
size_t pp_hist_varint_put(unsigned char *out, uint64_t v);
int pp_hist_varint_get(const unsigned char **p, const unsigned char *end, uint64_t *v);

#endif
