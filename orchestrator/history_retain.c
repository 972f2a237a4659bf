/* Retention of the history store (history_store.h): per-minute summaries past the fine age,
 * deletion past the max age and over the byte cap, garbage collection of the stacks and frames no
 * sample references any more. One transaction: a kill leaves the store as it was before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/history_int.h"

static int prepare(pp_history *h, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
    int rc = sqlite3_prepare_v2(h->db, sql, -1, st, NULL);
    if (rc == SQLITE_OK)
        return 0;
    pp_hist_err(h, err, errlen, sql);
    return pp_hist_full(h, rc) ? PP_HISTORY_FULL : -1;
}

/* Steps st to its end (a statement that returns no row). */
static int run(pp_history *h, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    pp_hist_err(h, err, errlen, sqlite3_sql(st));
    return pp_hist_full(h, rc) ? PP_HISTORY_FULL : -1;
}

static int64_t scalar(pp_history *h, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static uint64_t live_bytes(pp_history *h)
{
    int64_t pages = scalar(h, "PRAGMA page_count"), freel = scalar(h, "PRAGMA freelist_count");
    int64_t size = scalar(h, "PRAGMA page_size");
    return pages > freel && freel >= 0 && size > 0 ? (uint64_t)(pages - freel) * (uint64_t)size : 0;
}

/* Deletes the sessions (and their processes and samples) that sel (binding ?1 to arg) lists.
 * Returns how many, or a negative error. */
static int64_t delete_sessions(pp_history *h, const char *sel, int64_t arg, char *err,
                               size_t errlen)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "INSERT INTO temp.doomed %s", sel);
    sqlite3_stmt *st = NULL;
    int rc = pp_hist_exec(h,
                          "CREATE TEMP TABLE IF NOT EXISTS doomed(id INTEGER PRIMARY KEY);"
                          "DELETE FROM temp.doomed;",
                          err, errlen);
    if (rc < 0 || (rc = prepare(h, sql, &st, err, errlen)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, arg);
    rc = run(h, st, err, errlen);
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    int64_t n = sqlite3_changes(h->db);
    if (n && (rc = pp_hist_exec(h,
                                "DELETE FROM samples WHERE proc IN (SELECT id FROM procs WHERE "
                                "session IN (SELECT id FROM temp.doomed));"
                                "DELETE FROM procs WHERE session IN (SELECT id FROM temp.doomed);"
                                "DELETE FROM sessions WHERE id IN (SELECT id FROM temp.doomed);",
                                err, errlen)) < 0)
        return rc;
    return n;
}

/* Deletes the stacks no sample references, then the frames no stack references, then the
 * mappings no frame references. */
static int collect_garbage(pp_history *h, char *err, size_t errlen)
{
    int rc = pp_hist_exec(h,
                          "DELETE FROM stacks WHERE id NOT IN (SELECT stack FROM samples);"
                          "CREATE TEMP TABLE IF NOT EXISTS live(id INTEGER PRIMARY KEY);"
                          "DELETE FROM temp.live;",
                          err, errlen);
    sqlite3_stmt *sel = NULL, *ins = NULL;
    if (rc < 0 || (rc = prepare(h, "SELECT frames FROM stacks", &sel, err, errlen)) < 0 ||
        (rc = prepare(h, "INSERT OR IGNORE INTO temp.live VALUES(?1)", &ins, err, errlen)) < 0)
        goto out;
    int r;
    while ((r = sqlite3_step(sel)) == SQLITE_ROW) {
        const unsigned char *p = sqlite3_column_blob(sel, 0);
        const unsigned char *end = p + sqlite3_column_bytes(sel, 0);
        uint64_t id;
        while (p && p < end && pp_hist_varint_get(&p, end, &id) == 0) {
            sqlite3_bind_int64(ins, 1, (int64_t)id);
            if ((rc = run(h, ins, err, errlen)) < 0)
                goto out;
        }
    }
    if (r != SQLITE_DONE) {
        pp_hist_err(h, err, errlen, "reading the stacks");
        rc = pp_hist_full(h, r) ? PP_HISTORY_FULL : -1;
        goto out;
    }
    rc = pp_hist_exec(h,
                      "DELETE FROM frames WHERE id NOT IN (SELECT id FROM temp.live);"
                      "DELETE FROM temp.live;"
                      "DELETE FROM mappings WHERE id NOT IN"
                      " (SELECT mapping FROM frames WHERE mapping IS NOT NULL);",
                      err, errlen);
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    return rc;
}

/* ---- per-minute summaries ---- */

enum { S_FIND, S_NEW, S_GROW, S_PROCS, S_FIND_PROC, S_NEW_PROC, S_MOVE, S_DROP, S_N };

static const char *const sum_sql[S_N] = {
    "SELECT id FROM sessions WHERE minute=?1 AND host=?2",
    "INSERT INTO sessions(start, end, host, hz, minute) VALUES(?1, ?2, ?3, ?5, ?4)",
    "UPDATE sessions SET start=min(start, ?2), end=max(end, ?3), hz=max(hz, ?5) WHERE id=?1",
    "SELECT id, pid, comm, container, appid, runtime FROM procs WHERE session=?1",
    "SELECT id FROM procs WHERE session=?1 AND pid=?2 AND comm=?3 AND container=?4 AND appid=?5"
    " AND runtime=?6",
    "INSERT INTO procs(session, pid, comm, container, appid, runtime)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    /* "WHERE true": an upsert after a SELECT needs it (SQLite's parsing ambiguity) */
    "INSERT INTO samples(proc, stack, count) SELECT ?1, stack, count FROM samples"
    " WHERE proc=?2 AND true ON CONFLICT(proc, stack) DO UPDATE SET count=count+excluded.count",
    "DELETE FROM samples WHERE proc=?1",
};

typedef struct old_session {
    int64_t id, start, end;
    int hz;
    char *host;
} old_session;

/* The id of the summary of minute for host, created or widened to [start, end]. */
static int64_t summary_of(pp_history *h, sqlite3_stmt **st, const old_session *o, char *err,
                          size_t errlen, int *rc)
{
    int64_t minute = o->start >= 0 ? o->start / 60 : (o->start - 59) / 60;
    sqlite3_bind_int64(st[S_FIND], 1, minute);
    sqlite3_bind_text(st[S_FIND], 2, o->host, -1, SQLITE_STATIC);
    int64_t id = 0;
    int r = sqlite3_step(st[S_FIND]);
    if (r == SQLITE_ROW)
        id = sqlite3_column_int64(st[S_FIND], 0);
    sqlite3_reset(st[S_FIND]);
    if (r != SQLITE_ROW && r != SQLITE_DONE) { /* not "no summary yet": that would make two */
        pp_hist_err(h, err, errlen, "finding a minute's summary");
        *rc = pp_hist_full(h, r) ? PP_HISTORY_FULL : -1;
        return 0;
    }
    sqlite3_stmt *w = st[id ? S_GROW : S_NEW];
    sqlite3_bind_int64(w, id ? 2 : 1, o->start);
    sqlite3_bind_int64(w, id ? 3 : 2, o->end);
    sqlite3_bind_int(w, 5, o->hz);
    if (id) {
        sqlite3_bind_int64(w, 1, id);
    } else {
        sqlite3_bind_text(w, 3, o->host, -1, SQLITE_STATIC);
        sqlite3_bind_int64(w, 4, minute);
    }
    if ((*rc = run(h, w, err, errlen)) < 0)
        return 0;
    return id ? id : sqlite3_last_insert_rowid(h->db);
}

/* Moves the processes and samples of session o into its minute's summary. */
static int summarise_one(pp_history *h, sqlite3_stmt **st, const old_session *o, char *err,
                         size_t errlen)
{
    int rc = 0;
    int64_t sum = summary_of(h, st, o, err, errlen, &rc);
    if (!sum)
        return rc;
    sqlite3_stmt *procs = st[S_PROCS];
    sqlite3_bind_int64(procs, 1, o->id);
    int r;
    while ((r = sqlite3_step(procs)) == SQLITE_ROW) {
        int64_t old = sqlite3_column_int64(procs, 0);
        sqlite3_stmt *f = st[S_FIND_PROC], *n = st[S_NEW_PROC];
        sqlite3_bind_int64(f, 1, sum);
        sqlite3_bind_int64(n, 1, sum);
        for (int c = 1; c <= 5; c++) {
            sqlite3_bind_value(f, c + 1, sqlite3_column_value(procs, c));
            sqlite3_bind_value(n, c + 1, sqlite3_column_value(procs, c));
        }
        int64_t np = 0;
        int fr = sqlite3_step(f);
        if (fr == SQLITE_ROW)
            np = sqlite3_column_int64(f, 0);
        sqlite3_reset(f);
        if (fr != SQLITE_ROW && fr != SQLITE_DONE) {
            pp_hist_err(h, err, errlen, "finding a process of a minute's summary");
            rc = pp_hist_full(h, fr) ? PP_HISTORY_FULL : -1;
            break;
        }
        if (!np) {
            if ((rc = run(h, n, err, errlen)) < 0)
                break;
            np = sqlite3_last_insert_rowid(h->db);
        }
        sqlite3_bind_int64(st[S_MOVE], 1, np);
        sqlite3_bind_int64(st[S_MOVE], 2, old);
        sqlite3_bind_int64(st[S_DROP], 1, old);
        if ((rc = run(h, st[S_MOVE], err, errlen)) < 0 ||
            (rc = run(h, st[S_DROP], err, errlen)) < 0)
            break;
    }
    sqlite3_reset(procs);
    if (rc == 0 && r != SQLITE_DONE) {
        pp_hist_err(h, err, errlen, "reading a session's processes");
        rc = pp_hist_full(h, r) ? PP_HISTORY_FULL : -1;
    }
    return rc;
}

/* Every session that ended before cutoff becomes part of its minute's summary. */
static int summarise(pp_history *h, int64_t cutoff, char *err, size_t errlen)
{
    sqlite3_stmt *sel = NULL, *st[S_N] = {0};
    old_session *old = NULL;
    size_t n = 0, cap = 0;
    int rc = prepare(h,
                     "SELECT id, start, end, host, hz FROM sessions WHERE minute IS NULL AND end<?1"
                     " ORDER BY start",
                     &sel, err, errlen);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(sel, 1, cutoff);
    int r;
    while ((r = sqlite3_step(sel)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            old_session *no = realloc(old, nc * sizeof(*no));
            if (!no)
                break;
            old = no;
            cap = nc;
        }
        const char *host = (const char *)sqlite3_column_text(sel, 3);
        old[n] = (old_session){sqlite3_column_int64(sel, 0), sqlite3_column_int64(sel, 1),
                               sqlite3_column_int64(sel, 2), sqlite3_column_int(sel, 4),
                               strdup(host ? host : "")};
        if (!old[n].host)
            break;
        n++;
    }
    /* the whole list or nothing: a short list would leave old sessions unsummarised */
    if (r == SQLITE_ROW) {
        snprintf(err, errlen, "history database %s/%s: out of memory listing old sessions", h->dir,
                 PP_HISTORY_DB);
        rc = -1;
    } else if (r != SQLITE_DONE) {
        pp_hist_err(h, err, errlen, "listing old sessions");
        rc = pp_hist_full(h, r) ? PP_HISTORY_FULL : -1;
    }
    sqlite3_finalize(sel);
    for (int i = 0; i < S_N && rc == 0; i++)
        rc = prepare(h, sum_sql[i], &st[i], err, errlen);
    sqlite3_stmt *del = NULL;
    if (rc == 0)
        rc = prepare(h, "DELETE FROM procs WHERE session=?1", &del, err, errlen);
    sqlite3_stmt *dels = NULL;
    if (rc == 0)
        rc = prepare(h, "DELETE FROM sessions WHERE id=?1", &dels, err, errlen);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = summarise_one(h, st, &old[i], err, errlen);
        sqlite3_bind_int64(del, 1, old[i].id);
        sqlite3_bind_int64(dels, 1, old[i].id);
        if (rc == 0 && (rc = run(h, del, err, errlen)) == 0)
            rc = run(h, dels, err, errlen);
    }
    for (size_t i = 0; i < n; i++)
        free(old[i].host);
    free(old);
    for (int i = 0; i < S_N; i++)
        sqlite3_finalize(st[i]);
    sqlite3_finalize(del);
    sqlite3_finalize(dels);
    return rc;
}

static int retain_tx(pp_history *h, int64_t now, char *err, size_t errlen)
{
    int64_t gone = delete_sessions(h, "SELECT id FROM sessions WHERE end < ?1",
                                   now - h->lim.max_age, err, errlen);
    if (gone < 0)
        return (int)gone;
    int rc = summarise(h, now - h->lim.fine_age, err, errlen);
    if (rc < 0 || (gone && (rc = collect_garbage(h, err, errlen)) < 0))
        return rc;
    /* over the byte cap: the oldest sessions go first, an eighth of them (at least one) at a
     * time, until the live pages fit */
    while (h->lim.max_bytes && live_bytes(h) > h->lim.max_bytes) {
        int64_t n = scalar(h, "SELECT count(*) FROM sessions");
        if (n <= 0)
            break;
        gone = delete_sessions(h, "SELECT id FROM sessions ORDER BY start, id LIMIT ?1",
                               n / 8 ? n / 8 : 1, err, errlen);
        if (gone < 0)
            return (int)gone;
        if ((rc = collect_garbage(h, err, errlen)) < 0)
            return rc;
    }
    return 0;
}

int pp_history_retain(pp_history *h, int64_t now, char *err, size_t errlen)
{
    int rc = pp_hist_begin(h, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = retain_tx(h, now, err, errlen)) < 0 ||
        (rc = pp_hist_exec(h, "COMMIT", err, errlen)) < 0) {
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    /* give the freed pages back to the file system (auto_vacuum=INCREMENTAL) */
    return pp_hist_exec(h, "PRAGMA incremental_vacuum", err, errlen);
}

int pp_history_get_stats(pp_history *h, pp_history_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof(*st));
    st->sessions = scalar(h, "SELECT count(*) FROM sessions WHERE minute IS NULL");
    st->summaries = scalar(h, "SELECT count(*) FROM sessions WHERE minute IS NOT NULL");
    st->procs = scalar(h, "SELECT count(*) FROM procs");
    st->samples = scalar(h, "SELECT count(*) FROM samples");
    st->stacks = scalar(h, "SELECT count(*) FROM stacks");
    st->frames = scalar(h, "SELECT count(*) FROM frames");
    st->bytes = live_bytes(h);
    if (st->sessions < 0 || st->summaries < 0 || st->procs < 0 || st->samples < 0 ||
        st->stacks < 0 || st->frames < 0) {
        pp_hist_err(h, err, errlen, "counting rows");
        return -1;
    }
    return 0;
}
