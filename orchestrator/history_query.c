/* Queries of the history store (history_store.h): the merged profile of a window. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashtab.h"
#include "base/utf8.h"
#include "orchestrator/history_int.h"

/* Linux's largest pid (PID_MAX_LIMIT): a reused pid's later process is keyed above it. */
#define PID_LIMIT 4194304

/* A process of the result: its identity (profile string ids) and its key in the profile. */
typedef struct proc_ent {
    int pid, key;
    uint32_t comm, container, appid, runtime;
} proc_ent;

/* Where a (process, stack) of the result is: repeated rows add to its count. */
typedef struct row_ent {
    int key;
    uint32_t idx; /* the stack's index in the process's table */
    int64_t stack;
} row_ent;

typedef struct query {
    pp_history *h;
    pp_profile *prof;
    pp_htab procs;       /* proc_ent by identity */
    pp_u64map pid_taken; /* pid -> 1 when a process of the result is keyed by it */
    pp_u64map frames;    /* frames.id -> profile mapping id << 32 | profile string id */
    pp_htab rows;        /* row_ent by (key, stack) */
    int64_t last_proc;   /* procs.id of the last row, and its entry */
    pp_pid_profile *last_pp;
    int next_key;
    sqlite3_stmt *frame_sel, *stack_sel;
    uint32_t *buf;
    size_t buf_cap;
    uint64_t bytes, max_bytes; /* the result's memory, estimated, and its cap */
} query;

/* Estimated bytes of the result per distinct stack (its table entries and hash slots, beside its
 * frame ids), per frame string (beside its text) and per process. */
#define STACK_COST 96
#define FRAME_COST 48
#define PROC_COST 256

static uint32_t col_str(query *q, sqlite3_stmt *st, int c)
{
    const char *s = (const char *)sqlite3_column_text(st, c);
    return pp_profile_intern(q->prof, s ? s : "");
}

/* The profile entry of the process the row's columns 0..4 name. */
static pp_pid_profile *proc_of(query *q, sqlite3_stmt *st)
{
    proc_ent k = {.pid = sqlite3_column_int(st, 0),
                  .comm = col_str(q, st, 1),
                  .container = col_str(q, st, 2),
                  .appid = col_str(q, st, 3),
                  .runtime = col_str(q, st, 4)};
    uint64_t hash = pp_hash_bytes(&k, sizeof(k), 0);
    pp_htab_probe pr;
    for (proc_ent *e = pp_htab_first(&q->procs, hash, &pr); e; e = pp_htab_next(&q->procs, &pr))
        if (e->pid == k.pid && e->comm == k.comm && e->container == k.container &&
            e->appid == k.appid && e->runtime == k.runtime)
            return pp_profile_get(q->prof, e->key, false);
    k.key = k.pid;
    if (pp_u64map_get(&q->pid_taken, (uint64_t)(unsigned)k.pid) || k.pid <= 0)
        k.key = q->next_key++;
    else if (pp_u64map_put(&q->pid_taken, (uint64_t)(unsigned)k.pid, 1) < 0)
        return NULL;
    proc_ent *e = pp_htab_add(&q->procs, hash);
    if (!e)
        return NULL;
    *e = k;
    q->bytes += PROC_COST;
    pp_pid_profile *pp = pp_profile_get(q->prof, k.key, true);
    if (!pp)
        return NULL;
    pp->comm = k.comm;
    pp->container = k.container;
    pp->appid = k.appid;
    const char *rt = pp_profile_str(q->prof, k.runtime);
    pp->runtime = *rt ? rt : NULL; /* the profile's strings live as long as it */
    return pp;
}

/* The profile string id of frames.id id, its profile mapping id (0: none) in *mapping;
 * UINT32_MAX on failure. */
static uint32_t frame_of(query *q, int64_t id, uint32_t *mapping)
{
    uint64_t *v = pp_u64map_get(&q->frames, (uint64_t)id);
    if (v) {
        *mapping = (uint32_t)(*v >> 32);
        return (uint32_t)*v;
    }
    sqlite3_bind_int64(q->frame_sel, 1, id);
    uint32_t s = UINT32_MAX;
    *mapping = 0;
    if (sqlite3_step(q->frame_sel) == SQLITE_ROW) {
        const void *b = sqlite3_column_blob(q->frame_sel, 0);
        int n = sqlite3_column_bytes(q->frame_sel, 0);
        s = pp_strtab_intern(pp_profile_strings(q->prof), b ? b : "", (size_t)n);
        q->bytes += FRAME_COST + (uint64_t)n;
        /* a version 1 database has no mappings: its statement gives one column */
        if (sqlite3_column_count(q->frame_sel) == 3 &&
            sqlite3_column_type(q->frame_sel, 1) != SQLITE_NULL) {
            const char *file = (const char *)sqlite3_column_text(q->frame_sel, 1);
            const char *bid = (const char *)sqlite3_column_text(q->frame_sel, 2);
            *mapping = pp_profile_mapping(q->prof, file ? file : "", bid ? bid : "");
            if (*mapping == UINT32_MAX)
                s = UINT32_MAX;
        }
    }
    sqlite3_reset(q->frame_sel);
    if (s != UINT32_MAX &&
        pp_u64map_put(&q->frames, (uint64_t)id, (uint64_t)*mapping << 32 | s) < 0)
        s = UINT32_MAX;
    return s;
}

/* Adds count to the stack stacks.id id of pp. 0, or -1 (a missing or malformed stack, OOM). */
static int add_stack(query *q, pp_pid_profile *pp, int64_t id, uint64_t count)
{
    sqlite3_bind_int64(q->stack_sel, 1, id);
    int rc = -1;
    if (sqlite3_step(q->stack_sel) != SQLITE_ROW)
        goto out;
    const unsigned char *p = sqlite3_column_blob(q->stack_sel, 0);
    const unsigned char *end = p + sqlite3_column_bytes(q->stack_sel, 0);
    size_t n = 0;
    uint64_t f;
    while (p && p < end) {
        if (pp_hist_varint_get(&p, end, &f) < 0)
            goto out;
        if (n == q->buf_cap) {
            size_t nc = q->buf_cap ? q->buf_cap * 2 : 64;
            uint32_t *nb = realloc(q->buf, nc * sizeof(*nb));
            if (!nb)
                goto out;
            q->buf = nb;
            q->buf_cap = nc;
        }
        uint32_t m;
        if ((q->buf[n] = frame_of(q, (int64_t)f, &m)) == UINT32_MAX ||
            pp_profile_set_frame_mapping(q->prof, pp->pid, q->buf[n], m) < 0)
            goto out;
        n++;
    }
    rc = pp_pid_add(pp, q->buf, n, count);
    q->bytes += STACK_COST + n * sizeof(uint32_t);
out:
    sqlite3_reset(q->stack_sel);
    return rc;
}

/* Adds count to the stack stacks.id stack of pp: the first time through add_stack, then by
 * updating the count where it was put (a stack id is one sequence of frames). */
static int add_row(query *q, pp_pid_profile *pp, int64_t stack, uint64_t count)
{
    row_ent k = {.key = pp->pid, .stack = stack};
    uint64_t hash = pp_hash_u64((uint64_t)stack * 0x9e3779b97f4a7c15ULL ^ (uint32_t)pp->pid);
    pp_htab_probe pr;
    for (row_ent *e = pp_htab_first(&q->rows, hash, &pr); e; e = pp_htab_next(&q->rows, &pr))
        if (e->key == k.key && e->stack == stack) {
            size_t n;
            uint64_t c;
            pp_pid_stack(pp, e->idx, &n, &c);
            pp_pid_set_count(pp, e->idx, c + count);
            return 0;
        }
    size_t before = pp_pid_nstacks(pp);
    if (add_stack(q, pp, stack, count) < 0)
        return -1;
    if (pp_pid_nstacks(pp) == before + 1) {
        row_ent *e = pp_htab_add(&q->rows, hash);
        if (!e)
            return -1;
        k.idx = (uint32_t)before;
        *e = k;
    }
    return 0;
}

static void bind_opt(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static const char rows_sql[] =
    "SELECT p.pid, p.comm, p.container, p.appid, p.runtime, m.stack, m.count, p.id"
    " FROM sessions s JOIN procs p ON p.session = s.id JOIN samples m ON m.proc = p.id"
    " WHERE s.end >= ?1 AND s.start <= ?2 AND (?3 = 0 OR p.pid = ?3)"
    " AND (?4 IS NULL OR p.comm = ?4) AND (?5 IS NULL OR p.container = ?5)"
    " AND (?6 IS NULL OR p.runtime = ?6) AND (?7 IS NULL OR p.appid = ?7)"
    " ORDER BY s.start, s.id, p.id";

static int read_rows(query *q, const pp_history_filter *f, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->h->db, rows_sql, -1, &st, NULL) != SQLITE_OK) {
        pp_hist_err(q->h, err, errlen, "preparing the query");
        return -1;
    }
    sqlite3_bind_int64(st, 1, f->since);
    sqlite3_bind_int64(st, 2, f->until);
    sqlite3_bind_int(st, 3, f->pid);
    bind_opt(st, 4, f->comm);
    bind_opt(st, 5, f->container);
    bind_opt(st, 6, f->runtime && strcmp(f->runtime, "system") == 0 ? "" : f->runtime);
    bind_opt(st, 7, f->appid);
    int r, rc = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (q->bytes > q->max_bytes) {
            snprintf(err, errlen,
                     "the window holds more than %llu MiB of distinct stacks (the query's cap): "
                     "narrow --since/--until or add a filter (--pid, --comm, --container, "
                     "--runtime, --appid)",
                     (unsigned long long)(q->max_bytes >> 20));
            rc = -1;
            break;
        }
        int64_t proc = sqlite3_column_int64(st, 7);
        pp_pid_profile *pp = proc == q->last_proc && q->last_pp ? q->last_pp : proc_of(q, st);
        q->last_proc = proc;
        q->last_pp = pp;
        int64_t count = sqlite3_column_int64(st, 6);
        if (!pp ||
            add_row(q, pp, sqlite3_column_int64(st, 5), count > 0 ? (uint64_t)count : 0) < 0) {
            snprintf(err, errlen,
                     "history database %s/%s: a stack could not be read (out of memory, or a "
                     "damaged database: check it with sqlite3 ... 'PRAGMA integrity_check')",
                     q->h->dir, PP_HISTORY_DB);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && r != SQLITE_DONE) {
        pp_hist_err(q->h, err, errlen, "reading the window");
        rc = -1;
    }
    sqlite3_finalize(st);
    return rc;
}

static int read_window(pp_history *h, const pp_history_filter *f, pp_history_window *w, char *err,
                       size_t errlen)
{
    memset(w, 0, sizeof(*w));
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT count(*), min(start), max(end), max(hz) FROM sessions"
                           " WHERE end >= ?1 AND start <= ?2",
                           -1, &st, NULL) != SQLITE_OK) {
        pp_hist_err(h, err, errlen, "preparing the query");
        return -1;
    }
    sqlite3_bind_int64(st, 1, f->since);
    sqlite3_bind_int64(st, 2, f->until);
    if (sqlite3_step(st) == SQLITE_ROW) {
        w->sessions = (size_t)sqlite3_column_int64(st, 0);
        w->first = sqlite3_column_int64(st, 1);
        w->last = sqlite3_column_int64(st, 2);
        w->hz = sqlite3_column_int(st, 3);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(h->db,
                           "SELECT DISTINCT host FROM sessions WHERE end >= ?1 AND start <= ?2"
                           " ORDER BY host",
                           -1, &st, NULL) != SQLITE_OK) {
        pp_hist_err(h, err, errlen, "preparing the query");
        return -1;
    }
    sqlite3_bind_int64(st, 1, f->since);
    sqlite3_bind_int64(st, 2, f->until);
    /* host names are what the writer's host metadata said: repaired to UTF-8 and cut on a
     * character boundary (the .col header is JSON) */
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n + 2 < sizeof(w->hosts)) {
        const char *host = (const char *)sqlite3_column_text(st, 0);
        if (n)
            w->hosts[n++] = ',';
        n += pp_utf8_copy(w->hosts + n, sizeof(w->hosts) - n, host ? host : "",
                          (size_t)sqlite3_column_bytes(st, 0));
    }
    w->hosts[n] = '\0';
    sqlite3_finalize(st);
    return 0;
}

pp_profile *pp_history_query(pp_history *h, const pp_history_filter *f, pp_history_window *w,
                             char *err, size_t errlen)
{
    query q = {.h = h,
               .next_key = PID_LIMIT + 1,
               .max_bytes = f->max_bytes ? f->max_bytes : PP_HISTORY_QUERY_MAX_BYTES};
    PP_HTAB_INIT(&q.procs, proc_ent, 50);
    PP_HTAB_INIT(&q.rows, row_ent, 50);
    q.prof = pp_profile_new();
    int rc = q.prof ? 0 : -1;
    if (!q.prof)
        snprintf(err, errlen, "out of memory");
    /* one read transaction: the window and its rows are read from the same snapshot */
    if (rc == 0 && sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        pp_hist_err(h, err, errlen, "BEGIN");
        rc = -1;
    }
    /* frames with their files; a version 1 database (written before mappings) has none, and
     * the reader never migrates it */
    if (rc == 0 && sqlite3_prepare_v2(h->db,
                                      "SELECT f.text, m.file, m.build_id FROM frames f"
                                      " LEFT JOIN mappings m ON m.id = f.mapping WHERE f.id=?1",
                                      -1, &q.frame_sel, NULL) != SQLITE_OK)
        q.frame_sel = NULL;
    if (rc == 0 &&
        ((!q.frame_sel && sqlite3_prepare_v2(h->db, "SELECT text FROM frames WHERE id=?1", -1,
                                             &q.frame_sel, NULL) != SQLITE_OK) ||
         sqlite3_prepare_v2(h->db, "SELECT frames FROM stacks WHERE id=?1", -1, &q.stack_sel,
                            NULL) != SQLITE_OK)) {
        pp_hist_err(h, err, errlen, "preparing the query");
        rc = -1;
    }
    if (rc == 0)
        rc = read_window(h, f, w, err, errlen);
    if (rc == 0)
        rc = read_rows(&q, f, err, errlen);
    sqlite3_finalize(q.frame_sel);
    sqlite3_finalize(q.stack_sel);
    sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
    pp_htab_free(&q.procs);
    pp_htab_free(&q.rows);
    pp_u64map_free(&q.pid_taken);
    pp_u64map_free(&q.frames);
    free(q.buf);
    if (rc < 0) {
        pp_profile_free(q.prof);
        return NULL;
    }
    return q.prof;
}
