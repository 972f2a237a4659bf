/* Unit tests for the log layer's per-process messages: the bounded repeat table
 * (base/logrepeat.c) and pp_log_proc (base/log.c): logged once per process and format, then
 * counted, and the count reported when the log is closed. */
#include "testutil.h"

#include <limits.h>

#include "base/logrepeat.h"

TestSuite(logrepeat);
TestSuite(logproc);

Test(logrepeat, logged_once_then_counted_then_logged_again_after_the_interval)
{
    pp_logrep *t = calloc(1, sizeof(*t));
    unsigned long long held;
    double since;
    cr_assert(pp_logrep_check(t, 1, 100.0, &held, &since), "the first occurrence is logged");
    cr_assert_eq(held, 0);
    for (int i = 1; i <= 5; i++)
        cr_assert_not(pp_logrep_check(t, 1, 100.0 + 60 * i, &held, &since), "repeat %d", i);
    cr_assert(pp_logrep_check(t, 2, 500.0, &held, &since), "another key is logged");
    size_t keys;
    cr_assert_eq(pp_logrep_held(t, &keys), 5);
    cr_assert_eq(keys, 1);
    cr_assert_eq(t->suppressed, 5);
    /* an hour after it was last logged: logged again, with the count of what was not */
    cr_assert(pp_logrep_check(t, 1, 100.0 + PP_LOGREP_INTERVAL, &held, &since));
    cr_assert_eq(held, 5);
    cr_assert_float_eq(since, PP_LOGREP_INTERVAL, 1e-9);
    cr_assert_eq(pp_logrep_held(t, NULL), 0);
    cr_assert_not(pp_logrep_check(t, 1, 101.0 + PP_LOGREP_INTERVAL, &held, &since),
                  "counted again from there");
    cr_assert_eq(pp_logrep_held(t, NULL), 1);
    pp_logrep_clear_held(t);
    cr_assert_eq(pp_logrep_held(t, NULL), 0);
    free(t);
}

Test(logrepeat, bounded_the_least_recently_seen_key_is_forgotten_and_no_count_is_lost)
{
    pp_logrep *t = calloc(1, sizeof(*t));
    unsigned long long held;
    double since;
    const uint64_t hot = 0xfeedfaceULL << 20;
    cr_assert(pp_logrep_check(t, hot, 0, &held, &since));
    size_t n = PP_LOGREP_SLOTS * 4;
    for (uint64_t k = 1; k <= n; k++) {
        cr_assert(pp_logrep_check(t, k, 1, &held, &since), "key %llu is new",
                  (unsigned long long)k);
        cr_assert_not(pp_logrep_check(t, k, 1, &held, &since), "key %llu is held",
                      (unsigned long long)k);
        /* a key seen all along is never the least recently seen of its set */
        cr_assert_not(pp_logrep_check(t, hot, 1, &held, &since), "hot key forgotten at %llu",
                      (unsigned long long)k);
    }
    cr_assert_eq(pp_logrep_held(t, NULL), n + n, "forgotten keys keep their counts");
    cr_assert(t->forgotten > 0, "four times as many keys as slots: some were replaced");
    /* the first keys were replaced: seen again, they are logged again */
    cr_assert(pp_logrep_check(t, 1, 2, &held, &since));
    cr_assert(sizeof(pp_logrep) <= 160 * 1024, "the table is this struct: nothing grows");
    free(t);
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

Test(logproc, once_per_process_and_format_then_counted_and_reported_at_close)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    unsigned long long before = pp_log_repeats_counted();
    for (int s = 0; s < 3; s++)
        pp_warn_proc(42, 7, "pid %d: session %d failed", 42, s);
    pp_warn_proc(42, 8, "pid %d: session %d failed", 42, 9); /* the pid reused: another process */
    pp_warn_proc(43, 7, "pid %d: session %d failed", 43, 0);
    pp_info_proc(42, 7, "pid %d: another message", 42);
    pp_info_proc(42, 7, "pid %d: another message", 42);
    pp_warn("pid %d: plain messages are never counted", 42);
    pp_warn("pid %d: plain messages are never counted", 42);
    cr_assert_eq(pp_log_repeats_counted() - before, 3);
    pp_log_close();
    const char *text = pp_test_read_text(path);
    cr_assert_eq(count(text, "WARNING: polyprof: pid 42: session 0 failed\n"), 1, "%s", text);
    cr_assert_eq(count(text, "session 1 failed"), 0, "%s", text);
    cr_assert_eq(count(text, "session 2 failed"), 0, "%s", text);
    cr_assert_eq(count(text, "pid 42: session 9 failed"), 1, "%s", text);
    cr_assert_eq(count(text, "pid 43: session 0 failed"), 1, "%s", text);
    cr_assert_eq(count(text, "INFO: polyprof: pid 42: another message"), 1, "%s", text);
    cr_assert_eq(count(text, "plain messages are never counted"), 2, "%s", text);
    const char *last = "INFO: polyprof: 3 repeated per-process messages were counted and not "
                       "logged (each is logged once per process and hour)\n";
    size_t tl = strlen(text), ll = strlen(last);
    cr_assert(tl > ll && strcmp(text + tl - ll, last) == 0, "the last line: %s", text);
    pp_test_rmtree(dir);
}

Test(logproc, lines_are_utf8_whatever_a_message_quotes)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    pp_warn("process %s (pid %d) exited",
            "\xff\xfe"
            "x\xc3",
            5); /* a comm any user can set */
    pp_warn_proc(5, 1, "pid %d: comm %s", 5, "a\xe2\x82\xac\x80");
    pp_log_close();
    const char *text = pp_test_read_text(path);
    cr_assert_eq(count(text, "process \xef\xbf\xbd\xef\xbf\xbdx\xef\xbf\xbd (pid 5) exited\n"), 1,
                 "%s", text);
    cr_assert_eq(count(text, "pid 5: comm a\xe2\x82\xac\xef\xbf\xbd\n"), 1, "%s", text);
    pp_test_rmtree(dir);
}
