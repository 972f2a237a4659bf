/* Unit tests of the local history store (orchestrator/history_store.h) and the history option
 * values (orchestrator/history_time.h): round trip, interning, filters, per-minute summaries,
 * retention by age and by bytes, a full disk (SQLite's page limit), safe creation, time parsing. */
#include "tests/unit/testutil.h"

#include <sqlite3.h>
#include <zlib.h>

#include "orchestrator/cli.h"
#include "base/utf8.h"
#include "merge/header.h"
#include "orchestrator/history_cmd.h"
#include "orchestrator/history_int.h"
#include "orchestrator/history_store.h"
#include "orchestrator/history_time.h"
#include "pprof.pb-c.h"

#define T0 1800000000LL /* a minute boundary (divisible by 60) */

static char *dir;

static void setup(void)
{
    pp_test_quiet_log();
    dir = pp_test_mkdtemp();
}

static void teardown(void)
{
    pp_test_rmtree(dir);
}

TestSuite(history, .init = setup, .fini = teardown);

static char *hist_path(void)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/h", dir);
    return p;
}

static pp_history *open_w(const pp_history_limits *lim)
{
    char err[1024];
    pp_history *h = pp_history_open(hist_path(), true, lim, err, sizeof(err));
    cr_assert_not_null(h, "%s", err);
    return h;
}

/* Adds a stack "f1;f2;..." (semicolon separated) with count to pid's entry. */
static void add(pp_profile *p, int pid, const char *comm, const char *container, const char *stack,
                uint64_t count)
{
    pp_pid_profile *pp = pp_profile_get(p, pid, true);
    cr_assert_not_null(pp);
    pp->comm = pp_profile_intern(p, comm);
    pp->container = pp_profile_intern(p, container);
    uint32_t frames[32];
    size_t n = 0;
    char *copy = strdup(stack), *save = NULL;
    for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save))
        frames[n++] = pp_profile_intern(p, f);
    free(copy);
    cr_assert_eq(pp_pid_add(pp, frames, n, count), 0);
}

/* A profile of two processes. */
static pp_profile *sample_profile(uint64_t k)
{
    pp_profile *p = pp_profile_new();
    add(p, 100, "web", "", "main;serve;parse", 5 * k);
    add(p, 100, "web", "", "main;serve;write", 2 * k);
    add(p, 200, "db", "box", "main;query", 7 * k);
    pp_profile_get(p, 200, false)->runtime = "python";
    return p;
}

static void store(pp_history *h, pp_profile *p, int64_t start, int64_t end)
{
    char err[1024];
    int rc = pp_history_add(h, p, start, end, "hostA", 97, err, sizeof(err));
    cr_assert_eq(rc, 0, "%s", err);
}

/* The count of "comm;container;f1;...;leaf" in p (0 when absent). */
static uint64_t count_of(pp_profile *p, const char *key)
{
    uint64_t total = 0;
    for (size_t i = 0; i < pp_profile_npids(p); i++) {
        pp_pid_profile *pp = pp_profile_at(p, i);
        for (size_t s = 0; s < pp_pid_nstacks(pp); s++) {
            size_t n;
            uint64_t c;
            const uint32_t *f = pp_pid_stack(pp, s, &n, &c);
            char buf[1024];
            int len = snprintf(buf, sizeof(buf), "%s;%s", pp_profile_str(p, pp->comm),
                               pp_profile_str(p, pp->container));
            for (size_t j = 0; j < n; j++)
                len +=
                    snprintf(buf + len, sizeof(buf) - (size_t)len, ";%s", pp_profile_str(p, f[j]));
            if (!strcmp(buf, key))
                total += c;
        }
    }
    return total;
}

static uint64_t total_of(pp_profile *p)
{
    uint64_t t = 0;
    for (size_t i = 0; i < pp_profile_npids(p); i++)
        t += pp_pid_total(pp_profile_at(p, i));
    return t;
}

static pp_profile *query(pp_history *h, const pp_history_filter *f, pp_history_window *w)
{
    char err[1024];
    pp_history_window dummy;
    pp_profile *p = pp_history_query(h, f, w ? w : &dummy, err, sizeof(err));
    cr_assert_not_null(p, "%s", err);
    return p;
}

static pp_history_stats stats(pp_history *h)
{
    pp_history_stats st;
    char err[512];
    cr_assert_eq(pp_history_get_stats(h, &st, err, sizeof(err)), 0, "%s", err);
    return st;
}

Test(history, round_trip_keeps_every_stack_count_and_process)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = sample_profile(1);
    store(h, p, T0, T0 + 60);
    pp_profile_free(p);
    pp_history_filter f = {.since = T0 - 10, .until = T0 + 100};
    pp_history_window w;
    pp_profile *q = query(h, &f, &w);
    cr_assert_eq(count_of(q, "web;;main;serve;parse"), 5);
    cr_assert_eq(count_of(q, "web;;main;serve;write"), 2);
    cr_assert_eq(count_of(q, "db;box;main;query"), 7);
    cr_assert_eq(total_of(q), 14);
    cr_assert_eq(pp_profile_npids(q), 2);
    pp_pid_profile *db = pp_profile_get(q, 200, false);
    cr_assert_not_null(db, "the pid is kept");
    cr_assert_str_eq(db->runtime, "python");
    cr_assert_null(pp_profile_get(q, 100, false)->runtime, "the system sampler's: no runtime");
    cr_assert_eq(w.sessions, 1);
    cr_assert_eq(w.first, T0);
    cr_assert_eq(w.last, T0 + 60);
    cr_assert_eq(w.hz, 97);
    cr_assert_str_eq(w.hosts, "hostA");
    pp_profile_free(q);
    pp_history_close(h);
}

Test(history, frames_and_stacks_are_stored_once)
{
    pp_history *h = open_w(NULL);
    for (int i = 0; i < 5; i++) {
        pp_profile *p = sample_profile(1);
        store(h, p, T0 + i * 60, T0 + i * 60 + 60);
        pp_profile_free(p);
    }
    pp_history_stats st = stats(h);
    cr_assert_eq(st.sessions, 5);
    cr_assert_eq(st.frames, 5, "main, serve, parse, write, query: %lld", (long long)st.frames);
    cr_assert_eq(st.stacks, 3);
    cr_assert_eq(st.samples, 15);
    pp_history_filter f = {.since = 0, .until = T0 + 1000};
    pp_profile *q = query(h, &f, NULL);
    cr_assert_eq(count_of(q, "web;;main;serve;parse"), 25, "five sessions summed");
    pp_profile_free(q);
    pp_history_close(h);
}

Test(history, filters_select_processes_and_the_window)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = sample_profile(1);
    store(h, p, T0, T0 + 60);
    store(h, p, T0 + 600, T0 + 660);
    pp_profile_free(p);
    pp_history_filter f = {.since = T0, .until = T0 + 100, .comm = "db"};
    pp_profile *q = query(h, &f, NULL);
    cr_assert_eq(total_of(q), 7, "only db, only the first session");
    pp_profile_free(q);
    f = (pp_history_filter){.since = 0, .until = T0 + 1000, .pid = 100};
    q = query(h, &f, NULL);
    cr_assert_eq(total_of(q), 14);
    cr_assert_eq(count_of(q, "db;box;main;query"), 0);
    pp_profile_free(q);
    f = (pp_history_filter){.since = 0, .until = T0 + 1000, .container = "box"};
    q = query(h, &f, NULL);
    cr_assert_eq(total_of(q), 14);
    pp_profile_free(q);
    f = (pp_history_filter){.since = 0, .until = T0 + 1000, .runtime = "system"};
    q = query(h, &f, NULL);
    cr_assert_eq(count_of(q, "web;;main;serve;parse"), 10);
    cr_assert_eq(total_of(q), 14, "runtime 'system': the system sampler's processes");
    pp_profile_free(q);
    f = (pp_history_filter){.since = T0 + 61, .until = T0 + 500};
    pp_history_window w;
    q = query(h, &f, &w);
    cr_assert_eq(total_of(q), 0, "no session overlaps");
    cr_assert_eq(w.sessions, 0);
    pp_profile_free(q);
    pp_history_close(h);
}

Test(history, a_reused_pid_stays_two_processes)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = pp_profile_new();
    add(p, 300, "old", "", "a;b", 3);
    store(h, p, T0, T0 + 60);
    pp_profile_free(p);
    p = pp_profile_new();
    add(p, 300, "new", "", "a;b", 4);
    store(h, p, T0 + 60, T0 + 120);
    pp_profile_free(p);
    pp_history_filter f = {.since = 0, .until = T0 + 1000};
    pp_profile *q = query(h, &f, NULL);
    cr_assert_eq(pp_profile_npids(q), 2);
    cr_assert_eq(count_of(q, "old;;a;b"), 3);
    cr_assert_eq(count_of(q, "new;;a;b"), 4);
    pp_profile_free(q);
    pp_history_close(h);
}

Test(history, sessions_past_the_fine_age_become_per_minute_summaries)
{
    pp_history_limits lim = {.fine_age = 3600, .max_age = 7 * 86400};
    pp_history *h = open_w(&lim);
    int64_t starts[] = {T0, T0 + 20, T0 + 40, T0 + 70};
    for (size_t i = 0; i < 4; i++) {
        pp_profile *p = sample_profile(i + 1);
        store(h, p, starts[i], starts[i] + 15);
        pp_profile_free(p);
    }
    cr_assert_eq(stats(h).summaries, 0, "all within the fine age");
    pp_profile *p = sample_profile(10);
    store(h, p, T0 + 3700, T0 + 3715); /* the first four are now older than an hour */
    pp_profile_free(p);
    pp_history_stats st = stats(h);
    cr_assert_eq(st.summaries, 2, "minutes T0 and T0+60: %lld", (long long)st.summaries);
    cr_assert_eq(st.sessions, 1);
    cr_assert_eq(st.procs, 2 * 2 + 2, "one process row per process and minute");
    pp_history_filter f = {.since = T0, .until = T0 + 59};
    pp_history_window w;
    pp_profile *q = query(h, &f, &w);
    cr_assert_eq(count_of(q, "web;;main;serve;parse"), 5 * (1 + 2 + 3), "minute T0: 3 sessions");
    cr_assert_eq(w.first, T0);
    cr_assert_eq(w.last, T0 + 55);
    pp_profile_free(q);
    f.until = T0 + 5000;
    q = query(h, &f, NULL);
    cr_assert_eq(count_of(q, "db;box;main;query"), 7 * (1 + 2 + 3 + 4 + 10), "nothing lost");
    pp_profile_free(q);
    pp_history_close(h);
}

Test(history, anything_past_the_max_age_is_deleted_with_its_frames)
{
    pp_history_limits lim = {.fine_age = 60, .max_age = 3600};
    pp_history *h = open_w(&lim);
    pp_profile *p = pp_profile_new();
    add(p, 1, "gone", "", "only_in_old;x", 4);
    store(h, p, T0, T0 + 10);
    pp_profile_free(p);
    p = sample_profile(1);
    store(h, p, T0 + 3000, T0 + 3010);
    cr_assert_eq(stats(h).frames, 7, "both sessions' frames");
    store(h, p, T0 + 3700, T0 + 3710);
    pp_profile_free(p);
    pp_history_stats st = stats(h);
    cr_assert_eq(st.frames, 5, "the deleted session's own frames are gone: %lld",
                 (long long)st.frames);
    cr_assert_eq(st.stacks, 3);
    pp_history_filter f = {.since = 0, .until = T0 + 5000};
    pp_profile *q = query(h, &f, NULL);
    cr_assert_eq(count_of(q, "gone;;only_in_old;x"), 0);
    cr_assert_eq(total_of(q), 28, "the two younger sessions");
    pp_profile_free(q);
    pp_history_close(h);
}

/* A session of n distinct stacks with long unique frames (so that it takes pages). */
static pp_profile *big_profile(int tag, int n)
{
    pp_profile *p = pp_profile_new();
    for (int i = 0; i < n; i++) {
        char stack[256];
        snprintf(stack, sizeof(stack),
                 "main;session_%d_function_%d_with_a_long_name_that_takes_room;leaf_%d_%d", tag, i,
                 tag, i);
        add(p, 10, "big", "", stack, 1);
    }
    return p;
}

Test(history, the_byte_cap_deletes_the_oldest_sessions_first)
{
    pp_history_limits lim = {.max_bytes = 256 << 10, .fine_age = 86400, .max_age = 7 * 86400};
    pp_history *h = open_w(&lim);
    for (int i = 0; i < 40; i++) {
        pp_profile *p = big_profile(i, 100);
        store(h, p, T0 + i * 60, T0 + i * 60 + 60);
        pp_profile_free(p);
        pp_history_stats st = stats(h);
        cr_assert_leq(st.bytes, lim.max_bytes, "session %d: %llu bytes", i,
                      (unsigned long long)st.bytes);
    }
    pp_history_stats st = stats(h);
    cr_assert_lt(st.sessions, 40, "some were deleted");
    cr_assert_gt(st.sessions, 1);
    pp_history_filter f = {.since = T0 + 39 * 60 + 1, .until = T0 + 40 * 60};
    pp_profile *q = query(h, &f, NULL);
    cr_assert_eq(total_of(q), 100, "the newest session is kept");
    pp_profile_free(q);
    f = (pp_history_filter){.since = T0, .until = T0 + 30};
    q = query(h, &f, NULL);
    cr_assert_eq(total_of(q), 0, "the oldest is gone");
    pp_profile_free(q);
    cr_assert_leq(st.frames, 1 + 2 * 100 * st.sessions, "no frame of a deleted session is left");
    pp_history_close(h);
}

static bool integrity_ok(void)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", hist_path(), PP_HISTORY_DB);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    bool ok =
        sqlite3_step(st) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

Test(history, a_full_disk_stores_nothing_of_the_session_and_keeps_the_rest)
{
    pp_history_limits lim = {.fine_age = 86400, .max_age = 7 * 86400, .max_pages = 40};
    pp_history *h = open_w(&lim);
    char err[1024];
    int rc = 0, stored = 0;
    for (int i = 0; i < 50 && rc == 0; i++) {
        pp_profile *p = big_profile(i, 40);
        rc = pp_history_add(h, p, T0 + i * 60, T0 + i * 60 + 60, "hostA", 11, err, sizeof(err));
        pp_profile_free(p);
        stored += rc == 0;
    }
    cr_assert_eq(rc, PP_HISTORY_FULL, "the page limit is reached: %d %s", rc, err);
    cr_assert_gt(stored, 0);
    pp_history_stats st = stats(h);
    cr_assert_eq(st.sessions, stored, "the failed session left nothing");
    pp_history_filter f = {.since = 0, .until = T0 + 100000};
    pp_profile *q = query(h, &f, NULL);
    cr_assert_eq(total_of(q), (uint64_t)stored * 40);
    pp_profile_free(q);
    pp_history_close(h);
    cr_assert(integrity_ok());
}

Test(history, the_store_is_private_and_refuses_a_planted_link)
{
    pp_history *h = open_w(NULL);
    pp_history_close(h);
    struct stat st;
    cr_assert_eq(stat(hist_path(), &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700);
    char db[600];
    snprintf(db, sizeof(db), "%s/%s", hist_path(), PP_HISTORY_DB);
    cr_assert_eq(lstat(db, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert(integrity_ok());
    /* a symlink in place of the database is refused, not followed */
    cr_assert_eq(unlink(db), 0);
    char target[600];
    snprintf(target, sizeof(target), "%s/target", dir);
    cr_assert_eq(symlink(target, db), 0);
    char err[1024];
    cr_assert_null(pp_history_open(hist_path(), true, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "symlink"), "%s", err);
    cr_assert_eq(access(target, F_OK), -1, "nothing created through the link");
}

Test(history, a_reader_of_a_missing_store_says_what_to_do)
{
    char err[1024];
    cr_assert_null(pp_history_open(hist_path(), false, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "--history-dir"), "%s", err);
    cr_assert_eq(access(hist_path(), F_OK), -1, "a reader creates nothing");
}

Test(history_time, times_ages_and_sizes)
{
    char err[512];
    int64_t t;
    time_t now = 1800000000;
    cr_assert_eq(pp_history_parse_time("30m", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, now - 1800);
    cr_assert_eq(pp_history_parse_time("2d", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, now - 2 * 86400);
    cr_assert_eq(pp_history_parse_time("1h", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, now - 3600);
    cr_assert_eq(pp_history_parse_time("now", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, now);
    cr_assert_eq(pp_history_parse_time("1700000000", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1700000000);
    cr_assert_eq(pp_history_parse_time("@1700000001", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1700000001);
    cr_assert_eq(pp_history_parse_time("2026-11-27T10:00:00Z", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1795773600);
    cr_assert_eq(pp_history_parse_time("2026-11-27 10:00", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1795773600, "no zone: UTC");
    cr_assert_eq(pp_history_parse_time("2026-11-27T12:00:00+02:00", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1795773600);
    cr_assert_eq(pp_history_parse_time("2026-11-27T10:00:00.250Z", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1795773600);
    cr_assert_eq(pp_history_parse_time("2026-11-27", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1795737600);
    const char *bad[] = {"",
                         "1x",
                         "yesterday",
                         "2026-13-01",
                         "2026-11-27T10:00:00+25:00",
                         "-5m",
                         "99999999999999999999m",
                         "10:00",
                         "2026-11-27T10:00:00+-1:30",
                         "2026-11-27T10:00:00+ 1:30",
                         "2026-11-27T10:00:00+1:30",
                         "2026-11-27T10:00:00+01:3",
                         "253402300800",
                         "@4611686018427387903",
                         "99999999999999w"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(pp_history_parse_time(bad[i], now, &t, err, sizeof(err)), -1, "'%s'", bad[i]);
        cr_assert(strstr(err, "ISO 8601"), "the message says what to give: %s", err);
    }
    cr_assert_eq(pp_history_parse_time("@253402300799", now, &t, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(t, 253402300799, "9999-12-31T23:59:59Z, the last time taken");
    cr_assert_eq(pp_history_parse_time("2026-11-27T10:00:00-0130", now, &t, err, sizeof(err)), 0);
    cr_assert_eq(t, 1795773600 + 5400);
    errno = EOVERFLOW; /* left by something before: timegm's -1 here is a valid time */
    cr_assert_eq(pp_history_parse_time("1969-12-31T23:59:59Z", now, &t, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_eq(t, -1);
    int64_t age;
    cr_assert_eq(pp_history_parse_age("7d", &age, err, sizeof(err)), 0);
    cr_assert_eq(age, 7 * 86400);
    cr_assert_eq(pp_history_parse_age("90", &age, err, sizeof(err)), 0);
    cr_assert_eq(age, 90);
    cr_assert_eq(pp_history_parse_age("0h", &age, err, sizeof(err)), -1);
    cr_assert_eq(pp_history_parse_age("1y", &age, err, sizeof(err)), -1);
    uint64_t size;
    cr_assert_eq(pp_history_parse_size("1G", &size, err, sizeof(err)), 0);
    cr_assert_eq(size, 1ULL << 30);
    cr_assert_eq(pp_history_parse_size("512MiB", &size, err, sizeof(err)), 0);
    cr_assert_eq(size, 512ULL << 20);
    cr_assert_eq(pp_history_parse_size("100kb", &size, err, sizeof(err)), 0);
    cr_assert_eq(size, 100ULL << 10);
    cr_assert_eq(pp_history_parse_size("4096", &size, err, sizeof(err)), 0);
    cr_assert_eq(size, 4096);
    cr_assert_eq(pp_history_parse_size("1X", &size, err, sizeof(err)), -1);
    cr_assert_eq(pp_history_parse_size("0", &size, err, sizeof(err)), -1);
    cr_assert_eq(pp_history_parse_size("99999999999T", &size, err, sizeof(err)), -1);
}

Test(history_time, a_fine_age_past_the_max_age_is_refused)
{
    pp_config cfg = {
        .history_max_bytes_s = "1G", .history_fine_age_s = "2d", .history_max_age_s = "1d"};
    char err[512];
    cr_assert_eq(pp_history_parse_opts(&cfg, err, sizeof(err)), -1);
    cr_assert(strstr(err, "--history-fine-age"), "%s", err);
    cfg.history_fine_age_s = "1h";
    cr_assert_eq(pp_history_parse_opts(&cfg, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(cfg.history_fine_age, 3600);
    cr_assert_eq(cfg.history_max_age, 86400);
    cr_assert_eq(cfg.history_max_bytes, 1ULL << 30);
}

/* Reads a whole file (at most 16 MiB). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    char *buf = malloc(16 << 20);
    cr_assert_not_null(buf);
    *len = fread(buf, 1, (16 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static int history_cmd(const char *out, const char *fmt)
{
    char since[32], until[32];
    snprintf(since, sizeof(since), "%lld", T0 - 10);
    snprintf(until, sizeof(until), "%lld", T0 + 100);
    char *argv[] = {"history", "--history-dir", hist_path(), "--since",   since, "--until", until,
                    "-o",      (char *)out,     "--format",  (char *)fmt, NULL};
    return pp_history_main(11, argv);
}

Test(history, the_history_command_writes_col_html_and_pprof)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = sample_profile(1);
    store(h, p, T0, T0 + 60);
    pp_profile_free(p);
    pp_history_close(h);
    char col[600], html[600], pb[600];
    snprintf(col, sizeof(col), "%s/w.col", dir);
    snprintf(html, sizeof(html), "%s/w.html", dir);
    snprintf(pb, sizeof(pb), "%s/w.pb.gz", dir);
    cr_assert_eq(history_cmd(col, "col"), 0);
    cr_assert_eq(history_cmd(html, "html"), 0);
    cr_assert_eq(history_cmd(pb, "pprof"), 0);
    size_t len;
    char *text = slurp(col, &len);
    cr_assert(!strncmp(text, "# {\"history\": {", 15), "%.80s", text);
    cr_assert(strstr(text, "\n0;;web;main;serve;parse 5"), "%s", text);
    cr_assert(strstr(text, "\n0;box;db;main;query 7"), "%s", text);
    free(text);
    text = slurp(html, &len);
    cr_assert(strstr(text, "<html") && strstr(text, "parse"), "a flame graph page");
    free(text);
    char *gz = slurp(pb, &len);
    z_stream z = {0};
    cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
    unsigned char *raw = malloc(1 << 20);
    z.next_in = (unsigned char *)gz;
    z.avail_in = (uInt)len;
    z.next_out = raw;
    z.avail_out = 1 << 20;
    cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    Perftools__Profiles__Profile *pr = perftools__profiles__profile__unpack(NULL, z.total_out, raw);
    inflateEnd(&z);
    cr_assert_not_null(pr);
    int64_t total = 0;
    for (size_t i = 0; i < pr->n_sample; i++)
        total += pr->sample[i]->value[0];
    cr_assert_eq(total, 14, "the pprof export's samples: %lld", (long long)total);
    cr_assert_eq(pr->period, 1000000000 / 97, "the sessions' frequency");
    perftools__profiles__profile__free_unpacked(pr, NULL);
    free(raw);
    free(gz);
}

Test(history_time, an_iso_time_past_the_year_9999_shows_as_the_epoch)
{
    char buf[32];
    memset(buf, 'x', sizeof(buf));
    pp_iso_time((time_t)(INT64_C(1) << 62), buf, sizeof(buf));
    cr_assert_str_eq(buf, "1970-01-01T00:00:00", "gmtime_r fails there: %.31s", buf);
    pp_iso_time((time_t)253402300800, buf, sizeof(buf)); /* 10000-01-01 */
    cr_assert_str_eq(buf, "1970-01-01T00:00:00");
    pp_iso_time((time_t)253402300799, buf, sizeof(buf));
    cr_assert_str_eq(buf, "9999-12-31T23:59:59");
}

Test(history, a_reader_opens_read_only_and_only_a_private_directory)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = sample_profile(1);
    store(h, p, T0, T0 + 60);
    pp_profile_free(p);
    pp_history_close(h);
    char err[1024];
    h = pp_history_open(hist_path(), false, NULL, err, sizeof(err));
    cr_assert_not_null(h, "%s", err);
    cr_assert_eq(sqlite3_db_readonly(h->db, "main"), 1, "the reader cannot write the store");
    cr_assert_lt(pp_history_retain(h, T0 + 30 * 86400, err, sizeof(err)), 0);
    pp_history_close(h);
    h = open_w(NULL);
    cr_assert_eq(stats(h).sessions, 1, "the reader's attempt changed nothing");
    pp_history_close(h);
    /* a directory others can write: someone could swap the database in it */
    cr_assert_eq(chmod(hist_path(), 0777), 0);
    cr_assert_null(pp_history_open(hist_path(), false, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "not private"), "%s", err);
    cr_assert_eq(chmod(hist_path(), 0700), 0);
    /* a symlink as the last component is not followed */
    char link[600];
    snprintf(link, sizeof(link), "%s/link", dir);
    cr_assert_eq(symlink(hist_path(), link), 0);
    cr_assert_null(pp_history_open(link, false, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "symlink"), "%s", err);
}

Test(history, a_query_past_its_memory_cap_fails_saying_to_narrow_the_window)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = sample_profile(1);
    store(h, p, T0, T0 + 60);
    pp_profile_free(p);
    pp_history_filter f = {.since = T0, .until = T0 + 60, .max_bytes = 1};
    pp_history_window w;
    char err[1024];
    cr_assert_null(pp_history_query(h, &f, &w, err, sizeof(err)));
    cr_assert(strstr(err, "--since/--until") && strstr(err, "filter"), "%s", err);
    f.max_bytes = 0; /* the default cap: this window is far below it */
    p = query(h, &f, NULL);
    cr_assert_eq(total_of(p), 14);
    pp_profile_free(p);
    pp_history_close(h);
}

Test(history, host_names_are_valid_utf8_cut_on_a_character)
{
    pp_history *h = open_w(NULL);
    char host[400];
    for (size_t i = 0; i < 199; i++)
        memcpy(host + 2 * i, "\xc3\xa9", 2); /* U+00E9, 398 bytes */
    host[398] = '\0';
    pp_profile *p = sample_profile(1);
    char err[1024];
    cr_assert_eq(pp_history_add(h, p, T0, T0 + 60, "bad\xff\xfe", 97, err, sizeof(err)), 0, "%s",
                 err);
    cr_assert_eq(pp_history_add(h, p, T0, T0 + 60, host, 97, err, sizeof(err)), 0, "%s", err);
    pp_profile_free(p);
    pp_history_filter f = {.since = T0, .until = T0 + 60};
    pp_history_window w;
    p = query(h, &f, &w);
    pp_profile_free(p);
    pp_history_close(h);
    size_t n = strlen(w.hosts);
    cr_assert_lt(n, sizeof(w.hosts));
    cr_assert(pp_utf8_valid(w.hosts, n), "hosts: %s", w.hosts);
    cr_assert(!strncmp(w.hosts, "bad" PP_UTF8_REPLACEMENT PP_UTF8_REPLACEMENT ",\xc3\xa9", 11),
              "%s", w.hosts);
    char col[600];
    snprintf(col, sizeof(col), "%s/w.col", dir);
    cr_assert_eq(history_cmd(col, "col"), 0, "the header renders");
}

static bool committed; /* a transaction was committed (the WAL hook) */

static int on_wal(void *arg, sqlite3 *db, const char *name, int pages)
{
    (void)arg, (void)db, (void)name, (void)pages;
    committed = true;
    return SQLITE_OK;
}

static int interrupt_after_commit(void *arg)
{
    (void)arg;
    return committed;
}

Test(history, a_failed_retention_after_the_commit_says_the_session_is_kept)
{
    pp_history *h = open_w(NULL);
    committed = false;
    sqlite3_wal_hook(h->db, on_wal, NULL);
    sqlite3_progress_handler(h->db, 1, interrupt_after_commit, NULL);
    pp_profile *p = sample_profile(1);
    char err[1024];
    int rc = pp_history_add(h, p, T0, T0 + 60, "hostA", 97, err, sizeof(err));
    pp_profile_free(p);
    cr_assert(committed);
    sqlite3_progress_handler(h->db, 0, NULL, NULL);
    cr_assert_eq(rc, PP_HISTORY_RETAIN_FAILED, "%d: %s", rc, err);
    pp_history_filter f = {.since = T0, .until = T0 + 60};
    p = query(h, &f, NULL);
    cr_assert_eq(total_of(p), 14, "the session is kept");
    pp_profile_free(p);
    pp_history_close(h);
}

static int steps_left; /* the progress handler interrupts when it reaches 0 */

static int interrupt_at(void *arg)
{
    (void)arg;
    return --steps_left == 0;
}

/* Retention interrupted at each point in turn (an error of any step: BUSY, IOERR): it completes
 * or changes nothing; never a short list of sessions to summarise or a second summary. */
Test(history, an_interrupted_retention_summarises_all_or_nothing)
{
    pp_history_limits keep = {.fine_age = 86400, .max_age = 7 * 86400};
    pp_history_limits fine = {.fine_age = 1, .max_age = 7 * 86400};
    pp_history *h = open_w(&keep);
    pp_profile *p = sample_profile(1);
    for (int i = 0; i < 4; i++)
        store(h, p, T0 + i * 10, T0 + i * 10 + 10);
    pp_profile_free(p);
    pp_history_close(h);
    char db[600];
    snprintf(db, sizeof(db), "%s/%s", hist_path(), PP_HISTORY_DB);
    size_t len;
    char *image = slurp(db, &len); /* the store of 4 sessions, each turn starts from it */
    bool completed = false;
    for (int k = 1; !completed && k < 100000; k++) {
        pp_test_write_file(db, image, len);
        h = open_w(&fine);
        /* no fsync: a thousand turns */
        cr_assert_eq(sqlite3_exec(h->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL), SQLITE_OK);
        steps_left = k;
        sqlite3_progress_handler(h->db, 4, interrupt_at, NULL); /* every 4th VM step */
        char err[1024];
        int rc = pp_history_retain(h, T0 + 600, err, sizeof(err));
        sqlite3_progress_handler(h->db, 0, NULL, NULL);
        completed = steps_left > 0;
        pp_history_stats st = stats(h);
        if (rc == 0 || st.summaries)
            cr_assert(st.sessions == 0 && st.summaries == 1,
                      "interrupted at %d: rc %d, %lld sessions and %lld summaries left", k, rc,
                      (long long)st.sessions, (long long)st.summaries);
        else
            cr_assert(st.sessions == 4, "interrupted at %d: rolled back: %lld sessions", k,
                      (long long)st.sessions);
        pp_history_filter f = {.since = T0, .until = T0 + 100};
        p = query(h, &f, NULL);
        cr_assert_eq(total_of(p), 4 * 14, "interrupted at %d: every count kept", k);
        pp_profile_free(p);
        pp_history_close(h);
    }
    free(image);
    cr_assert(completed, "retention ran to its end once");
}

Test(history, the_history_export_is_private)
{
    pp_history *h = open_w(NULL);
    pp_profile *p = sample_profile(1);
    store(h, p, T0, T0 + 60);
    pp_profile_free(p);
    pp_history_close(h);
    char col[600];
    snprintf(col, sizeof(col), "%s/w.col", dir);
    cr_assert_eq(history_cmd(col, "col"), 0);
    struct stat st;
    cr_assert_eq(stat(col, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "every user's processes and stacks: %o",
                 (unsigned)(st.st_mode & 0777));
}
