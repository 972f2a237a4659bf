/* Unit tests for the log layer's per-process messages: the bounded repeat table
 * (base/logrepeat.c) and pp_log_proc (base/log.c): logged once per process and format, then
 * counted, and the count reported when the log is closed. */
#include "testutil.h"

#include <limits.h>

#include "base/loggroup.h"
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
    cr_assert_eq(count(text, "WARNING: polyprof: pid 42: session 0 failed"), 1, "%s", text);
    cr_assert_eq(count(text, "session 1 failed"), 0, "%s", text);
    cr_assert_eq(count(text, "session 2 failed"), 0, "%s", text);
    cr_assert_eq(count(text, "pid 42: session 9 failed"), 1, "%s", text);
    /* another process, the same cause: grouped with pid 42's first line */
    cr_assert_eq(count(text, "pid 42: session 0 failed (and 1 more process: pid 43)\n"), 1, "%s",
                 text);
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

/* Issue 28: a burst of 50 new processes failing the same way is one line with the count and
 * the first pids; a process failing another way keeps its own line; nothing is lost at close. */
Test(logproc, a_burst_of_processes_is_one_line_per_cause)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    for (int pid = 1000; pid < 1050; pid++)
        pp_warn_proc(pid, 5, "python pid %d (%s) cannot be profiled: %s", pid,
                     pid % 2 ? "python3" : "py(x)", "permission denied");
    pp_warn_proc(2000, 5, "python pid %d (%s) cannot be profiled: %s", 2000, "python3",
                 "unsupported Python 3.7");
    pp_info_proc(1000, 6, "python pid %d (%s) cannot be profiled: %s", 1000, "python3",
                 "permission denied"); /* another level: another cause */
    pp_log_close();
    const char *text = pp_test_read_text(path);
    cr_assert_eq(count(text, "WARNING"), 2, "%s", text);
    cr_assert_eq(count(text, "WARNING: polyprof: python pid 1000 (py(x)) cannot be profiled: "
                             "permission denied (and 49 more processes: pids 1001, 1002, 1003, "
                             "1004, 1005, 1006, 1007, 1008, 1009, 1010, ...)\n"),
                 1, "%s", text);
    cr_assert_eq(count(text, "WARNING: polyprof: python pid 2000 (python3) cannot be profiled: "
                             "unsupported Python 3.7\n"),
                 1, "%s", text);
    cr_assert_eq(count(text, "INFO: polyprof: python pid 1000 (python3) cannot be profiled: "
                             "permission denied\n"),
                 1, "%s", text);
    pp_test_rmtree(dir);
}

/* The window: a group is held until PP_LOGGRP_WINDOW after its first message, then taken. */
Test(logrepeat, groups_are_held_for_their_window)
{
    pp_loggrp *g = calloc(1, sizeof(*g));
    const char *f = "pid %d (%s): %s";
    uint64_t a = pp_loggrp_cause(f, "pid 7 (x)): a 7", 7, 2);
    cr_assert_eq(a, pp_loggrp_cause(f, "pid 8 (y): a 8", 8, 2), "pid and comm are not the cause");
    cr_assert_neq(a, pp_loggrp_cause(f, "pid 8 (y): b 8", 8, 2));
    cr_assert_neq(a, pp_loggrp_cause(f, "pid 17 (x)): a 7", 17, 2), "7 is not the pid here");
    cr_assert(pp_loggrp_add(g, a, 2, 7, "first", 10.0));
    cr_assert(pp_loggrp_add(g, a, 2, 8, "second", 10.1));
    char out[256];
    int level;
    cr_assert_not(pp_loggrp_take(g, 10.0 + PP_LOGGRP_WINDOW / 2, false, out, sizeof(out), &level));
    cr_assert(pp_loggrp_take(g, 10.0 + PP_LOGGRP_WINDOW, false, out, sizeof(out), &level));
    cr_assert_str_eq(out, "first (and 1 more process: pid 8)");
    cr_assert_eq(level, 2);
    cr_assert_not(pp_loggrp_take(g, 99, true, out, sizeof(out), &level), "taken once");
    for (int i = 0; i < PP_LOGGRP_MAX; i++)
        cr_assert(pp_loggrp_add(g, (uint64_t)i + 100, 2, i + 1, "m", 20.0));
    cr_assert_not(pp_loggrp_add(g, 99, 2, 1, "m", 20.0), "bounded: the caller logs it");
    free(g);
}
