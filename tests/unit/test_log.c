/* Unit tests for the log layer's per-process messages: the bounded repeat table
 * (base/logrepeat.c), the groups by cause (base/loggroup.c) and pp_log_proc (base/log.c):
 * logged once per process and format, then counted, and the count reported when the log is
 * closed; the messages of a burst of processes with one cause logged as one line. */
#include "testutil.h"

#include <limits.h>
#include <time.h>

#include "base/loggroup.h"
#include "base/logrepeat.h"
#include "base/utf8.h"

TestSuite(logrepeat);
TestSuite(logproc);
TestSuite(loggroup);

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
    /* pid 43's same message is the same cause: grouped with pid 42's */
    cr_assert_eq(count(text, "WARNING: polyprof: pid 42: session 0 failed (and 1 more process: "
                             "pid 43)\n"),
                 1, "%s", text);
    cr_assert_eq(count(text, "session 1 failed"), 0, "%s", text);
    cr_assert_eq(count(text, "session 2 failed"), 0, "%s", text);
    cr_assert_eq(count(text, "pid 42: session 9 failed"), 1, "%s", text);
    cr_assert_eq(count(text, "pid 43: session 0 failed"), 0, "%s", text);
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

/* Issue 28: a burst of 50 new processes failing the same way is one line with the count and the
 * first pids; a process failing another way (another text, another level) keeps its own line. */
Test(logproc, a_burst_of_processes_is_one_line_per_cause)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    const char *f = "python pid %d (%s) cannot be profiled: %s";
    for (int pid = 1000; pid < 1050; pid++)
        pp_warn_proc(pid, 5, f, pid, pid % 2 ? "python3" : "py x", "permission denied");
    pp_warn_proc(2000, 5, f, 2000, "python3", "unsupported Python 3.7");
    pp_warn_proc(2001, 5, f, 2001, "python3", "unsupported Python 3.8");
    pp_info_proc(1000, 6, f, 1000, "python3", "permission denied"); /* another level */
    pp_log_close();
    const char *text = pp_test_read_text(path);
    cr_assert_eq(count(text, "WARNING"), 3, "%s", text);
    cr_assert_eq(count(text, "WARNING: polyprof: python pid 1000 (py x) cannot be profiled: "
                             "permission denied (and 49 more processes: pids 1001, 1002, 1003, "
                             "1004, 1005, 1006, 1007, 1008, 1009, 1010, ...)\n"),
                 1, "%s", text);
    cr_assert_eq(count(text, "WARNING: polyprof: python pid 2000 (python3) cannot be profiled: "
                             "unsupported Python 3.7\n"),
                 1, "%s", text);
    cr_assert_eq(count(text, "WARNING: polyprof: python pid 2001 (python3) cannot be profiled: "
                             "unsupported Python 3.8\n"),
                 1, "%s", text);
    cr_assert_eq(count(text, "INFO: polyprof: python pid 1000 (python3) cannot be profiled: "
                             "permission denied\n"),
                 1, "%s", text);
    pp_test_rmtree(dir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A held group is logged when its window closes, with no other log call and before close. */
Test(logproc, a_held_group_is_logged_when_its_window_closes)
{
    char *dir = pp_test_mkdtemp();
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof(path), "%s/pp.log", dir);
    cr_assert_eq(pp_log_init(0, path, NULL, err, sizeof(err)), 0, "%s", err);
    pp_test_quiet_log();
    double start = now_s();
    pp_warn_proc(7, 1, "pid %d: gone", 7);
    pp_warn_proc(8, 1, "pid %d: gone", 8);
    const char *want = "WARNING: polyprof: pid 7: gone (and 1 more process: pid 8)\n";
    double waited = 0;
    while (!count(pp_test_read_text(path), want) && (waited = now_s() - start) < 10) {
        struct timespec ms = {0, 10 * 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    const char *text = pp_test_read_text(path);
    cr_assert_eq(count(text, want), 1, "not logged %.1f s after its first message: '%s'", waited,
                 text);
    cr_assert(now_s() - start >= PP_LOGGRP_WINDOW * 0.99, "held for its window");
    pp_log_close();
    cr_assert_eq(count(pp_test_read_text(path), "gone"), 1, "logged once");
    pp_test_rmtree(dir);
}

static bool same_cause(const char *a, int pa, const char *b, int pb)
{
    char ca[256], cb[256];
    size_t la = pp_loggrp_cause(a, pa, ca, sizeof(ca)), lb = pp_loggrp_cause(b, pb, cb, sizeof(cb));
    cr_assert(la < sizeof(ca) && lb < sizeof(cb));
    return la == lb && memcmp(ca, cb, la) == 0;
}

/* The cause is the text without the pid and the comm after it; anything else tells two causes
 * apart. */
Test(loggroup, the_cause_is_the_text_without_the_process)
{
    cr_assert(same_cause("python pid 7 (x): a", 7, "python pid 8 (yy z): a", 8));
    cr_assert(same_cause("pid 7: /tmp/x7/7 failed", 7, "pid 81: /tmp/x81/81 failed", 81));
    cr_assert_not(same_cause("pid 7 (x): a", 7, "pid 8 (x): b", 8), "another text");
    cr_assert_not(same_cause("pid 7: code 8", 7, "pid 8: code 7", 8), "8 is not pid 7's");
    cr_assert_not(same_cause("pid 17 (x): a", 7, "pid 18 (x): a", 8), "7 is not the pid here");
    cr_assert_not(same_cause("pid 7: a #", 7, "pid 8: a 8", 8), "the pid reads as nothing else");
    cr_assert_not(same_cause("pid 7 (x): a)", 7, "pid 8 (x): b)", 8),
                  "the comm ends at its first ')'");
    cr_assert_not(same_cause("pid 7 (x", 7, "pid 8 (y", 8), "no comm without ')'");
    char small[8];
    cr_assert_eq(pp_loggrp_cause("pid 7: too long", 7, small, sizeof(small)), sizeof(small),
                 "a cut cause is not comparable");
}

/* The window, the bound on groups, and the line: its count always fits and it stays UTF-8. */
Test(loggroup, held_for_the_window_bounded_and_the_line_keeps_its_count)
{
    pp_loggrp *g = calloc(1, sizeof(*g));
    const char *f = "pid %d: %s";
    char out[300];
    int level;
    cr_assert_lt(pp_loggrp_due(g), 0);
    cr_assert(pp_loggrp_add(g, 2, f, 7, "pid 7: a", "", 10.0));
    cr_assert(pp_loggrp_add(g, 2, f, 8, "pid 8: a", " (ignored)", 10.1));
    cr_assert(pp_loggrp_add(g, 2, "%d", 9, "pid 9: a", "", 10.2), "another format");
    cr_assert_float_eq(pp_loggrp_due(g), 10.0 + PP_LOGGRP_WINDOW, 1e-9);
    cr_assert_not(pp_loggrp_take(g, 10.0 + PP_LOGGRP_WINDOW / 2, false, out, sizeof(out), &level));
    cr_assert(pp_loggrp_take(g, 10.0 + PP_LOGGRP_WINDOW, false, out, sizeof(out), &level));
    cr_assert_str_eq(out, "pid 7: a (and 1 more process: pid 8)");
    cr_assert_eq(level, 2);
    cr_assert(pp_loggrp_take(g, 0, true, out, sizeof(out), &level));
    cr_assert_str_eq(out, "pid 9: a");
    cr_assert_not(pp_loggrp_take(g, 99, true, out, sizeof(out), &level), "taken once");
    for (int i = 0; i < PP_LOGGRP_MAX; i++) {
        char m[48];
        snprintf(m, sizeof(m), "pid %d: cause %d", i + 1, i);
        cr_assert(pp_loggrp_add(g, 2, f, i + 1, m, "", 20.0));
    }
    cr_assert_not(pp_loggrp_add(g, 2, f, 99, "pid 99: one more", "", 20.0),
                  "bounded: the caller logs it");
    cr_assert(pp_loggrp_add(g, 2, f, 98, "pid 98: cause 0", "", 20.0), "joining needs no room");
    while (pp_loggrp_take(g, 0, true, out, sizeof(out), &level))
        ;
    cr_assert_eq(g->nopen, 0);
    /* a long first message of 3-byte characters: cut at a character, the count kept */
    char big[PP_LOGGRP_TEXT - 10] = "pid 5: ";
    for (size_t n = strlen(big); n + 3 < sizeof(big); n += 3)
        memcpy(big + n, "\xe2\x82\xac", 4);
    char big6[sizeof(big)];
    memcpy(big6, big, sizeof(big));
    big6[4] = '6';
    const char *tail = "\xe2\x82\xac (and 1 more process: pid 6)";
    for (size_t len = sizeof(out) - 3; len <= sizeof(out); len++) { /* cut at each byte of one */
        cr_assert(pp_loggrp_add(g, 2, f, 5, big, "", 30.0));
        cr_assert(pp_loggrp_add(g, 2, f, 6, big6, "", 30.0));
        cr_assert(pp_loggrp_take(g, 31.0, false, out, len, &level));
        size_t n = strlen(out);
        cr_assert(n < len && pp_utf8_valid(out, n), "%zu: %s", len, out);
        cr_assert(n > strlen(tail) && !strcmp(out + n - strlen(tail), tail), "%zu: %s", len, out);
    }
    cr_assert_not(pp_loggrp_add(g, 2, f, 5, big, "          too long", 40.0), "not held cut");
    free(g);
}
