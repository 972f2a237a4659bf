/* Unit tests of the history store's mappings (orchestrator/history_store.c, schema version 2):
 * each frame keeps the file (and build-id) it was found in through a store and a query, a name
 * found in two files is two frames, retention drops mappings no frame uses, and a version 1
 * database is migrated by the writer and read as it is by a reader. */
#include "tests/unit/testutil.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include "orchestrator/history_int.h"
#include "orchestrator/history_store.h"

#define T0 1800000000LL

static char *dir;
static char hdir[512];

static void setup(void)
{
    pp_test_quiet_log();
    dir = pp_test_mkdtemp();
    snprintf(hdir, sizeof(hdir), "%s/h", dir);
}

static void teardown(void)
{
    pp_test_rmtree(dir);
}

TestSuite(history_maps, .init = setup, .fini = teardown);

static pp_history *open_store(bool writer, const pp_history_limits *lim)
{
    char err[1024];
    pp_history *h = pp_history_open(hdir, writer, lim, err, sizeof(err));
    cr_assert_not_null(h, "%s", err);
    return h;
}

/* Adds the stack frames[0..n) (texts) with count to pid, each frame found in files[i] (NULL:
 * none; "*" before the file: for every process) with build-id ids[i]. */
static void add_located(pp_profile *p, int pid, const char *const *frames, const char *const *files,
                        const char *const *ids, size_t n, uint64_t count)
{
    pp_pid_profile *pp = pp_profile_get(p, pid, true);
    pp->comm = pp_profile_intern(p, "c");
    uint32_t f[8];
    for (size_t i = 0; i < n; i++) {
        f[i] = pp_profile_intern(p, frames[i]);
        if (!files[i])
            continue;
        bool any = files[i][0] == '*';
        uint32_t m = pp_profile_mapping(p, files[i] + any, ids[i]);
        cr_assert_eq(pp_profile_set_frame_mapping(p, any ? PP_ANY_PID : pid, f[i], m), 0);
    }
    cr_assert_eq(pp_pid_add(pp, f, n, count), 0);
}

/* pid 100 and 200 both run "main;work;irq_[k]": main of two executables, work of a library in
 * 100 and without a file in 200, the kernel frame for every process. */
static pp_profile *located_profile(void)
{
    pp_profile *p = pp_profile_new();
    const char *fr[] = {"main", "work", "irq_[k]"};
    const char *fa[] = {"/bin/a", "/lib/w.so", "*[kernel.kallsyms]"}, *ia[] = {"aa", "", "kk"};
    const char *fb[] = {"/bin/b", NULL, NULL}, *ib[] = {"bb", NULL, NULL};
    add_located(p, 100, fr, fa, ia, 3, 3);
    add_located(p, 200, fr, fb, ib, 3, 4);
    return p;
}

/* The file and build-id of frame text in pid of q, "file@build-id", or "" without one. */
static const char *located(pp_profile *q, int pid, const char *text)
{
    static char buf[256];
    uint32_t m = pp_profile_frame_mapping(q, pid, pp_profile_intern(q, text)), file, bid;
    if (!m)
        return "";
    pp_profile_mapping_get(q, m, &file, &bid);
    snprintf(buf, sizeof(buf), "%s@%s", pp_profile_str(q, file), pp_profile_str(q, bid));
    return buf;
}

static int64_t scalar(pp_history *h, const char *sql)
{
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(h->db, sql, -1, &st, NULL), SQLITE_OK, "%s",
                 sqlite3_errmsg(h->db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static pp_profile *query_all(pp_history *h)
{
    char err[1024];
    pp_history_window w;
    pp_history_filter f = {.since = 0, .until = T0 + 100000};
    pp_profile *q = pp_history_query(h, &f, &w, err, sizeof(err));
    cr_assert_not_null(q, "%s", err);
    return q;
}

static void store_at(pp_history *h, pp_profile *p, int64_t start)
{
    char err[1024];
    cr_assert_eq(pp_history_add(h, p, start, start + 10, "host", 100, err, sizeof(err)), 0, "%s",
                 err);
}

Test(history_maps, frames_keep_their_files_through_the_store)
{
    pp_history *h = open_store(true, NULL);
    pp_profile *p = located_profile();
    store_at(h, p, T0);
    store_at(h, p, T0 + 60);
    pp_profile_free(p);
    cr_assert_eq(scalar(h, "SELECT count(*) FROM mappings"), 4, "each (file, build-id) once");
    cr_assert_eq(scalar(h, "SELECT count(*) FROM frames"), 5,
                 "main@a, main@b, work@w.so, work, irq_[k]@kernel");
    pp_profile *q = query_all(h);
    cr_expect_str_eq(located(q, 100, "main"), "/bin/a@aa");
    cr_expect_str_eq(located(q, 200, "main"), "/bin/b@bb");
    cr_expect_str_eq(located(q, 100, "work"), "/lib/w.so@");
    cr_expect_str_eq(located(q, 200, "work"), "", "a frame without a file stays without");
    cr_expect_str_eq(located(q, 200, "irq_[k]"), "[kernel.kallsyms]@kk");
    cr_expect_eq(pp_pid_total(pp_profile_get(q, 100, false)), 6);
    cr_expect_eq(pp_pid_nstacks(pp_profile_get(q, 200, false)), 1, "one stack, summed");
    pp_profile_free(q);
    pp_history_close(h);
}

Test(history_maps, retention_drops_the_mappings_no_frame_uses)
{
    pp_history_limits lim = {.fine_age = 60, .max_age = 3600};
    pp_history *h = open_store(true, &lim);
    pp_profile *p = located_profile();
    store_at(h, p, T0);
    pp_profile_free(p);
    p = pp_profile_new();
    const char *fr[] = {"other"}, *fo[] = {"/bin/o"}, *io[] = {"oo"};
    add_located(p, 7, fr, fo, io, 1, 1);
    store_at(h, p, T0 + 4000); /* the first session is past the max age now */
    pp_profile_free(p);
    cr_assert_eq(scalar(h, "SELECT count(*) FROM mappings"), 1, "only /bin/o's is left");
    pp_history_close(h);
}

/* The schema polyprof wrote before mappings (version 1), with one session. */
static const char v1[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "INSERT INTO meta VALUES('schema', 1);"
    "CREATE TABLE frames(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, text BLOB NOT NULL);"
    "CREATE INDEX frames_hash ON frames(hash);"
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, frames BLOB NOT NULL);"
    "CREATE INDEX stacks_hash ON stacks(hash);"
    "CREATE TABLE sessions(id INTEGER PRIMARY KEY, start INTEGER NOT NULL,"
    " end INTEGER NOT NULL, host TEXT NOT NULL, hz INTEGER NOT NULL, minute INTEGER);"
    "CREATE INDEX sessions_start ON sessions(start);"
    "CREATE INDEX sessions_minute ON sessions(minute, host);"
    "CREATE TABLE procs(id INTEGER PRIMARY KEY, session INTEGER NOT NULL,"
    " pid INTEGER NOT NULL, comm TEXT NOT NULL, container TEXT NOT NULL, appid TEXT NOT NULL,"
    " runtime TEXT NOT NULL);"
    "CREATE INDEX procs_session ON procs(session);"
    "CREATE TABLE samples(proc INTEGER NOT NULL, stack INTEGER NOT NULL,"
    " count INTEGER NOT NULL, PRIMARY KEY(proc, stack)) WITHOUT ROWID;"
    "INSERT INTO frames VALUES(1, 11, CAST('main' AS BLOB)), (2, 12, CAST('old' AS BLOB));"
    "INSERT INTO stacks VALUES(1, 21, x'0102');"
    "INSERT INTO sessions VALUES(1, 1800000000, 1800000010, 'host', 100, NULL);"
    "INSERT INTO procs VALUES(1, 1, 100, 'c', '', '', '');"
    "INSERT INTO samples VALUES(1, 1, 9);";

Test(history_maps, a_version_1_store_is_read_then_migrated)
{
    cr_assert_eq(mkdir(hdir, 0700), 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", hdir, PP_HISTORY_DB);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    cr_assert_eq(chmod(path, 0600), 0);

    pp_history *h = open_store(false, NULL); /* a reader changes nothing */
    pp_profile *q = query_all(h);
    cr_expect_eq(pp_pid_total(pp_profile_get(q, 100, false)), 9, "the old session is read");
    cr_expect_str_eq(located(q, 100, "main"), "", "no mappings in a version 1 store");
    pp_profile_free(q);
    cr_expect_eq(scalar(h, "SELECT value FROM meta WHERE key='schema'"), 1);
    pp_history_close(h);

    h = open_store(true, NULL);
    cr_expect_eq(scalar(h, "SELECT value FROM meta WHERE key='schema'"), 2);
    cr_expect_eq(scalar(h, "SELECT count(*) FROM pragma_table_info('frames') WHERE name='mapping'"),
                 1, "the writer added the column");
    pp_profile *p = located_profile();
    store_at(h, p, T0 + 60);
    pp_profile_free(p);
    pp_history_close(h);
    h = open_store(true, NULL); /* opening a version 2 store again changes nothing */
    q = query_all(h);
    cr_expect_eq(pp_pid_total(pp_profile_get(q, 100, false)), 9 + 3, "old and new sessions");
    cr_expect_str_eq(located(q, 100, "main"), "/bin/a@aa",
                     "the old session's main has no file, the new one's gives it /bin/a");
    pp_profile_free(q);
    pp_history_close(h);
}
