/* The local history store (history_store.h): opening, the schema, writing a session. Retention
 * and queries: history_retain.c, history_query.c. */
#include "orchestrator/history_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/hashtab.h"
#include "base/safefile.h"
#include "orchestrator/history_int.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO meta VALUES('schema', 2);"
    /* the files native frames were found in (pprof's mappings): file as mapped, build-id hex or
     * "" */
    "CREATE TABLE IF NOT EXISTS mappings(id INTEGER PRIMARY KEY, file TEXT NOT NULL,"
    " build_id TEXT NOT NULL, UNIQUE(file, build_id));"
    /* interned frames (bytes as the profile holds them, and the mapping, NULL for none: a name
     * found in two files is two frames) and stacks (the frame ids, root first, as LEB128
     * varints), looked up by the text's hash */
    "CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
    " text BLOB NOT NULL, mapping INTEGER);"
    "CREATE INDEX IF NOT EXISTS frames_hash ON frames(hash);"
    "CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
    " frames BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS stacks_hash ON stacks(hash);"
    /* minute: NULL for a session, the minute (start / 60) of a per-minute summary */
    "CREATE TABLE IF NOT EXISTS sessions(id INTEGER PRIMARY KEY, start INTEGER NOT NULL,"
    " end INTEGER NOT NULL, host TEXT NOT NULL, hz INTEGER NOT NULL, minute INTEGER);"
    "CREATE INDEX IF NOT EXISTS sessions_start ON sessions(start);"
    "CREATE INDEX IF NOT EXISTS sessions_minute ON sessions(minute, host);"
    "CREATE TABLE IF NOT EXISTS procs(id INTEGER PRIMARY KEY, session INTEGER NOT NULL,"
    " pid INTEGER NOT NULL, comm TEXT NOT NULL, container TEXT NOT NULL, appid TEXT NOT NULL,"
    " runtime TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS procs_session ON procs(session);"
    "CREATE TABLE IF NOT EXISTS samples(proc INTEGER NOT NULL, stack INTEGER NOT NULL,"
    " count INTEGER NOT NULL, PRIMARY KEY(proc, stack)) WITHOUT ROWID;";

void pp_hist_err(pp_history *h, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "history database %s/%s: %s: %s", h->dir, PP_HISTORY_DB, what,
             sqlite3_errmsg(h->db));
}

int pp_hist_exec(pp_history *h, const char *sql, char *err, size_t errlen)
{
    int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    pp_hist_err(h, err, errlen, sql);
    return pp_hist_full(h, rc) ? PP_HISTORY_FULL : -1;
}

int pp_hist_begin(pp_history *h, char *err, size_t errlen)
{
    int rc = pp_hist_exec(h, "BEGIN IMMEDIATE", err, errlen);
    if (rc < 0 && !sqlite3_get_autocommit(h->db))
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

bool pp_hist_full(pp_history *h, int rc)
{
    rc &= 0xff;
    return rc == SQLITE_FULL || (rc == SQLITE_IOERR && sqlite3_system_errno(h->db) == ENOSPC);
}

/* A version 1 database (frames without mappings) becomes version 2: its frames get a NULL
 * mapping (adding a column rewrites nothing), in the writer's first transaction. */
static int migrate(pp_history *h, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    bool has = false;
    if (sqlite3_prepare_v2(h->db, "SELECT name FROM pragma_table_info('frames')", -1, &st, NULL) !=
        SQLITE_OK) {
        pp_hist_err(h, err, errlen, "reading the schema");
        return -1;
    }
    while (!has && sqlite3_step(st) == SQLITE_ROW)
        has = strcmp((const char *)sqlite3_column_text(st, 0), "mapping") == 0;
    sqlite3_finalize(st);
    if (has)
        return 0;
    return pp_hist_exec(h,
                        "BEGIN IMMEDIATE; ALTER TABLE frames ADD COLUMN mapping INTEGER;"
                        " UPDATE meta SET value = 2 WHERE key = 'schema'; COMMIT;",
                        err, errlen);
}

/* The database file: created 0600 with O_NOFOLLOW relative to the held directory, and refused
 * unless it is a regular file with one link owned by the effective uid. */
static int check_db_file(int dfd, const char *dir, bool writer, struct stat *out, char *err,
                         size_t errlen)
{
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (writer ? O_CREAT : 0);
    int fd = openat(dfd, PP_HISTORY_DB, flags, 0600);
    if (fd < 0) {
        if (errno == ENOENT)
            snprintf(err, errlen,
                     "no history in %s (%s is missing): run polyprof with --history-dir %s "
                     "first, or give the directory it writes",
                     dir, PP_HISTORY_DB, dir);
        else
            snprintf(err, errlen, "cannot open %s/%s: %s%s", dir, PP_HISTORY_DB, strerror(errno),
                     errno == ELOOP ? " (a symlink: remove it)" : "");
        return -1;
    }
    struct stat st;
    int rc = fstat(fd, &st);
    close(fd);
    if (rc < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "%s/%s is not a regular file with one link owned by uid %u: remove it (polyprof "
                 "creates its own)",
                 dir, PP_HISTORY_DB, (unsigned)geteuid());
        return -1;
    }
    *out = st;
    if (writer && (st.st_mode & 077) && fchmodat(dfd, PP_HISTORY_DB, 0600, 0) < 0) {
        snprintf(err, errlen, "cannot make %s/%s private (chmod 0600): %s", dir, PP_HISTORY_DB,
                 strerror(errno));
        return -1;
    }
    return 0;
}

static int open_dir(const char *dir, bool writer, char *err, size_t errlen)
{
    if (writer)
        return pp_open_private_dir(dir, 0700, err, errlen);
    /* the writer's rules, checked but not enforced (the reader changes nothing): no symlink as
     * the last component, owned by the effective uid, not writable by group or others; so no
     * other user can plant or swap a file in it */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (dfd < 0) {
        snprintf(err, errlen,
                 "cannot open the history directory %s: %s%s; give the --history-dir "
                 "polyprof writes",
                 dir, strerror(errno),
                 errno == ELOOP || errno == ENOTDIR
                     ? " (a symlink, or not a directory: give the real directory)"
                     : "");
    } else if (memset(&st, 0, sizeof(st)),
               fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        snprintf(err, errlen,
                 "the history directory %s is not private (owner uid %u, mode %03o): polyprof "
                 "history reads only a directory owned by uid %u and not writable by group or "
                 "others, as polyprof --history-dir makes it; fix its owner and mode",
                 dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)geteuid());
        close(dfd);
        dfd = -1;
    }
    return dfd;
}

/* The descriptors open in this process, sorted (the /proc/self/fd listing, without its own). */
static size_t list_fds(int *fds, size_t cap)
{
    DIR *d = opendir("/proc/self/fd");
    size_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) && n < cap;) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != dirfd(d))
            fds[n++] = fd;
    }
    closedir(d);
    return n;
}

/* Whether one of the descriptors open now but not in before[0..nbefore) (those SQLite opened:
 * the history command is single-threaded) is the database file checked (dev, ino). SQLite opens
 * the file again by its path (the /proc link of the held directory resolved to a path): this is
 * what makes sure it opened the file checked, whatever happened to the path meanwhile. */
static bool sqlite_opened(const int *before, size_t nbefore, dev_t dev, ino_t ino)
{
    int now[512];
    size_t n = list_fds(now, sizeof(now) / sizeof(now[0]));
    for (size_t i = 0; i < n; i++) {
        bool old = false;
        for (size_t j = 0; j < nbefore && !old; j++)
            old = before[j] == now[i];
        struct stat st;
        if (!old && fstat(now[i], &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev &&
            st.st_ino == ino)
            return true;
    }
    return false;
}

pp_history *pp_history_open(const char *dir, bool writer, const pp_history_limits *lim, char *err,
                            size_t errlen)
{
    pp_history *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->dfd = -1;
    h->writer = writer;
    h->lim = lim ? *lim
                 : (pp_history_limits){.max_bytes = PP_HISTORY_DEF_MAX_BYTES,
                                       .fine_age = PP_HISTORY_DEF_FINE_AGE,
                                       .max_age = PP_HISTORY_DEF_MAX_AGE};
    snprintf(h->dir, sizeof(h->dir), "%s", dir);
    h->dfd = open_dir(dir, writer, err, errlen);
    struct stat db_st;
    if (h->dfd < 0 || check_db_file(h->dfd, dir, writer, &db_st, err, errlen) < 0)
        goto fail;
    /* Through the held directory: the path is resolved from it, not from dir again (SQLite
     * resolves the /proc link to the directory's path, and opens its -wal and -shm files there
     * with the database file's mode). The directory is checked private to us, so no other user
     * can plant a link in it; SQLITE_OPEN_NOFOLLOW would refuse the /proc link. The reader opens
     * read-only: it never writes the database or checkpoints; SQLite's WAL readers still need
     * the -wal and -shm files, and create them (owner and mode of the database file) when the
     * writer is not running (docs/security.md). */
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", h->dfd, PP_HISTORY_DB);
    int flags = (writer ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX;
    int before[512];
    size_t nbefore = writer ? 0 : list_fds(before, sizeof(before) / sizeof(before[0]));
    if (sqlite3_open_v2(path, &h->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open the history database %s/%s: %s", dir, PP_HISTORY_DB,
                 h->db ? sqlite3_errmsg(h->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(h->db, 5000);
    if (!writer) /* read-only cannot checkpoint anyway; say so to SQLite */
        sqlite3_db_config(h->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    char pragmas[320];
    snprintf(
        pragmas, sizeof(pragmas),
        "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        " PRAGMA temp_store=MEMORY; PRAGMA journal_size_limit=4194304; PRAGMA cache_size=-8192;"
        " PRAGMA max_page_count=%u;",
        h->lim.max_pages ? h->lim.max_pages : 0xfffffffeu);
    if (pp_hist_exec(h, writer ? pragmas : "PRAGMA temp_store=MEMORY;", err, errlen) < 0 ||
        (writer && (pp_hist_exec(h, schema, err, errlen) < 0 || migrate(h, err, errlen) < 0)))
        goto fail;
    if (!writer) {
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(h->db, "SELECT 1 FROM sessions LIMIT 1", -1, &st, NULL);
        sqlite3_finalize(st);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen,
                     "%s/%s is not a polyprof history database (%s): give the --history-dir "
                     "polyprof writes",
                     dir, PP_HISTORY_DB, sqlite3_errmsg(h->db));
            goto fail;
        }
        if (!sqlite_opened(before, nbefore, db_st.st_dev, db_st.st_ino)) {
            snprintf(err, errlen,
                     "SQLite opened another file than the %s/%s checked (it or a directory "
                     "above it was replaced meanwhile): check who can write the directories "
                     "above %s",
                     dir, PP_HISTORY_DB, dir);
            goto fail;
        }
    }
    return h;
fail:
    pp_history_close(h);
    return NULL;
}

void pp_history_close(pp_history *h)
{
    if (!h)
        return;
    if (h->db)
        sqlite3_close_v2(h->db);
    if (h->dfd >= 0)
        close(h->dfd);
    free(h);
}

/* ---- writing ---- */

size_t pp_hist_varint_put(unsigned char *out, uint64_t v)
{
    size_t n = 0;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        out[n++] = b | (v ? 0x80 : 0);
    } while (v);
    return n;
}

int pp_hist_varint_get(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* The id of the row with (hash, blob) in frames or stacks (sel, ins), added when missing; a
 * frame's mapping (mappings.id, 0: none) is bound as ?3. */
static int64_t intern(sqlite3_stmt *sel, sqlite3_stmt *ins, const void *data, size_t len,
                      int64_t mapping, int *rc)
{
    int64_t hash = (int64_t)pp_hash_bytes(data, len, 0x9e3779b97f4a7c15ULL);
    sqlite3_stmt *st[2] = {sel, ins};
    for (int k = 0; k < 2; k++) {
        sqlite3_reset(st[k]);
        sqlite3_bind_int64(st[k], 1, hash);
        sqlite3_bind_blob(st[k], 2, len ? data : "", (int)len, SQLITE_STATIC);
        if (sqlite3_bind_parameter_count(st[k]) >= 3) {
            if (mapping)
                sqlite3_bind_int64(st[k], 3, mapping);
            else
                sqlite3_bind_null(st[k], 3);
        }
    }
    int r = sqlite3_step(sel);
    if (r == SQLITE_ROW)
        return sqlite3_column_int64(sel, 0);
    if (r != SQLITE_DONE) {
        *rc = r;
        return 0;
    }
    r = sqlite3_step(ins);
    if (r != SQLITE_DONE) {
        *rc = r;
        return 0;
    }
    return sqlite3_last_insert_rowid(sqlite3_db_handle(ins));
}

typedef struct writer {
    sqlite3_stmt *st[9];
    int64_t *frame_ids; /* profile string id -> frames.id of the frame without mapping (0: not
                           yet) */
    size_t nframe_ids;
    pp_u64map located; /* string id << 32 | profile mapping id -> frames.id */
    int64_t *map_ids;  /* profile mapping id -> mappings.id (0: not yet) */
    unsigned char *blob;
    size_t blob_cap;
} writer;

enum {
    W_FRAME_SEL,
    W_FRAME_INS,
    W_STACK_SEL,
    W_STACK_INS,
    W_SESSION,
    W_PROC,
    W_SAMPLE,
    W_MAP_INS,
    W_MAP_SEL
};

static const char *const writer_sql[] = {
    "SELECT id FROM frames WHERE hash=?1 AND text=?2 AND mapping IS ?3",
    "INSERT INTO frames(hash, text, mapping) VALUES(?1, ?2, ?3)",
    "SELECT id FROM stacks WHERE hash=?1 AND frames=?2",
    "INSERT INTO stacks(hash, frames) VALUES(?1, ?2)",
    "INSERT INTO sessions(start, end, host, hz, minute) VALUES(?1, ?2, ?3, ?4, NULL)",
    "INSERT INTO procs(session, pid, comm, container, appid, runtime)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    "INSERT INTO samples(proc, stack, count) VALUES(?1, ?2, ?3)"
    " ON CONFLICT(proc, stack) DO UPDATE SET count = count + excluded.count",
    "INSERT OR IGNORE INTO mappings(file, build_id) VALUES(?1, ?2)",
    "SELECT id FROM mappings WHERE file=?1 AND build_id=?2",
};

static void writer_free(writer *w)
{
    for (size_t i = 0; i < sizeof(w->st) / sizeof(w->st[0]); i++)
        sqlite3_finalize(w->st[i]);
    free(w->frame_ids);
    pp_u64map_free(&w->located);
    free(w->map_ids);
    free(w->blob);
}

/* The mappings.id of the profile's mapping m (added when missing); 0 with *rc set on failure. */
static int64_t put_mapping(writer *w, const pp_profile *p, uint32_t m, int *rc)
{
    if (w->map_ids[m])
        return w->map_ids[m];
    uint32_t file, build_id;
    pp_profile_mapping_get(p, m, &file, &build_id);
    for (int k = W_MAP_INS; k <= W_MAP_SEL; k++) {
        sqlite3_stmt *st = w->st[k];
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, pp_profile_str(p, file), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, pp_profile_str(p, build_id), -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (k == W_MAP_SEL && r == SQLITE_ROW)
            return w->map_ids[m] = sqlite3_column_int64(st, 0);
        if (r != SQLITE_DONE) {
            *rc = r;
            return 0;
        }
    }
    *rc = SQLITE_CORRUPT; /* inserted or present, yet not found */
    return 0;
}

/* The frames.id of frame f of process pid (with its mapping); 0 with *rc set on failure. */
static int64_t put_frame(writer *w, const pp_profile *p, int pid, uint32_t f, int *rc)
{
    uint32_t m = pp_profile_frame_mapping(p, pid, f);
    uint64_t key = (uint64_t)f << 32 | m;
    uint64_t *v = m ? pp_u64map_get(&w->located, key) : NULL;
    if (m ? v != NULL : w->frame_ids[f] != 0)
        return m ? (int64_t)*v : w->frame_ids[f];
    int64_t mapping = m ? put_mapping(w, p, m, rc) : 0;
    if (m && !mapping)
        return 0;
    const char *s = pp_profile_str(p, f);
    int64_t id = intern(w->st[W_FRAME_SEL], w->st[W_FRAME_INS], s, strlen(s), mapping, rc);
    if (!id)
        return 0;
    if (!m)
        return w->frame_ids[f] = id;
    if (pp_u64map_put(&w->located, key, (uint64_t)id) < 0) {
        *rc = SQLITE_NOMEM;
        return 0;
    }
    return id;
}

/* The stack's id; 0 with *rc set on failure. */
static int64_t put_stack(writer *w, const pp_profile *p, int pid, const uint32_t *frames, size_t n,
                         int *rc)
{
    size_t need = n * 10 + 1;
    if (need > w->blob_cap) {
        unsigned char *nb = realloc(w->blob, need);
        if (!nb) {
            *rc = SQLITE_NOMEM;
            return 0;
        }
        w->blob = nb;
        w->blob_cap = need;
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (frames[i] >= w->nframe_ids) {
            *rc = SQLITE_MISUSE;
            return 0;
        }
        int64_t id = put_frame(w, p, pid, frames[i], rc);
        if (!id)
            return 0;
        len += pp_hist_varint_put(w->blob + len, (uint64_t)id);
    }
    return intern(w->st[W_STACK_SEL], w->st[W_STACK_INS], w->blob, len, 0, rc);
}

static int step_done(sqlite3_stmt *st)
{
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    return r == SQLITE_DONE ? SQLITE_OK : r;
}

static int put_pid(writer *w, const pp_profile *p, const pp_pid_profile *pp, int64_t session)
{
    sqlite3_stmt *st = w->st[W_PROC];
    sqlite3_bind_int64(st, 1, session);
    sqlite3_bind_int(st, 2, pp->pid);
    sqlite3_bind_text(st, 3, pp_profile_str(p, pp->comm), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, pp_profile_str(p, pp->container), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, pp_profile_str(p, pp->appid), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, pp->runtime ? pp->runtime : "", -1, SQLITE_STATIC);
    int rc = step_done(st);
    if (rc != SQLITE_OK)
        return rc;
    int64_t proc = sqlite3_last_insert_rowid(sqlite3_db_handle(st));
    for (size_t i = 0; i < pp_pid_nstacks(pp); i++) {
        size_t n = 0;
        uint64_t count = 0;
        const uint32_t *frames = pp_pid_stack(pp, i, &n, &count);
        if (!count)
            continue;
        int64_t stack = put_stack(w, p, pp->pid, frames, n, &rc);
        if (!stack)
            return rc;
        sqlite3_stmt *ss = w->st[W_SAMPLE];
        sqlite3_bind_int64(ss, 1, proc);
        sqlite3_bind_int64(ss, 2, stack);
        sqlite3_bind_int64(ss, 3, (int64_t)count);
        if ((rc = step_done(ss)) != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

static int put_session(pp_history *h, writer *w, const pp_profile *p, int64_t start, int64_t end,
                       const char *host, int hz)
{
    for (size_t i = 0; i < sizeof(w->st) / sizeof(w->st[0]); i++) {
        int rc = sqlite3_prepare_v2(h->db, writer_sql[i], -1, &w->st[i], NULL);
        if (rc != SQLITE_OK)
            return rc;
    }
    w->nframe_ids = pp_strtab_count(pp_profile_strings((pp_profile *)p));
    w->frame_ids = calloc(w->nframe_ids ? w->nframe_ids : 1, sizeof(*w->frame_ids));
    w->map_ids = calloc(pp_profile_nmappings(p) + 1, sizeof(*w->map_ids));
    if (!w->frame_ids || !w->map_ids)
        return SQLITE_NOMEM;
    sqlite3_stmt *st = w->st[W_SESSION];
    sqlite3_bind_int64(st, 1, start);
    sqlite3_bind_int64(st, 2, end);
    sqlite3_bind_text(st, 3, host ? host : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, hz);
    int rc = step_done(st);
    if (rc != SQLITE_OK)
        return rc;
    int64_t session = sqlite3_last_insert_rowid(h->db);
    for (size_t i = 0; i < pp_profile_npids(p); i++) {
        const pp_pid_profile *pp = pp_profile_at(p, i);
        if (pp_pid_total(pp) && (rc = put_pid(w, p, pp, session)) != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

int pp_history_add(pp_history *h, const pp_profile *p, int64_t start, int64_t end, const char *host,
                   int hz, char *err, size_t errlen)
{
    int rc = pp_hist_begin(h, err, errlen);
    if (rc < 0)
        return rc;
    writer w = {0};
    int src = put_session(h, &w, p, start, end, host, hz);
    writer_free(&w);
    if (src == SQLITE_OK && (rc = pp_hist_exec(h, "COMMIT", err, errlen)) == 0)
        return pp_history_retain(h, end, err, errlen) < 0 ? PP_HISTORY_RETAIN_FAILED : 0;
    if (src != SQLITE_OK) {
        snprintf(err, errlen, "history database %s/%s: cannot store the session: %s", h->dir,
                 PP_HISTORY_DB, src == SQLITE_NOMEM ? "out of memory" : sqlite3_errstr(src));
        rc = pp_hist_full(h, src) ? PP_HISTORY_FULL : -1;
    }
    sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}
