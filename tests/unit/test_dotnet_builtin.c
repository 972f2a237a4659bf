/* Unit tests: --dotnet-mode builtin (runtimes/dotnet/builtin.c) against fake runtimes (a python
 * process serving its own diagnostics socket name): how long its session hook and its exit
 * take when the targets do not answer. */
#include "tests/unit/netfake.h"

#include <poll.h>

#include "base/child.h"
#include "base/procfiles.h"
#include "runtimes/dotnet/dotnet.h"
#include "runtimes/registry.h"
#include "runtimes/runtime.h"

TestSuite(dotnet_builtin, .init = pp_test_quiet_log);

typedef struct fakes {
    char *dir, *base;
    pp_proc procs[3];
    size_t n;
} fakes;

static void start_fakes(fakes *f, size_t n, const char *mode)
{
    f->dir = pp_test_mkdtemp();
    f->base = pp_test_mkdtemp(); /* the journal's */
    pp_tmp_set_base(f->base);
    f->n = n;
    for (size_t i = 0; i < n; i++) {
        pid_t pid = pp_test_start_fake_net(f->dir, mode);
        f->procs[i] =
            (pp_proc){.pid = pid, .kind = PP_KIND_DOTNET, .start_ticks = pp_proc_start_ticks(pid)};
    }
}

static void stop_fakes(fakes *f)
{
    for (size_t i = 0; i < f->n; i++) {
        kill(f->procs[i].pid, SIGKILL);
        waitpid(f->procs[i].pid, NULL, 0);
    }
    pp_tmp_set_base(NULL);
    pp_test_rmtree(f->dir);
    pp_test_rmtree(f->base);
}

Test(dotnet_builtin, exit_stops_every_stuck_session_within_one_deadline)
{
    fakes f;
    start_fakes(&f, 3, "stuck");
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_DOTNET), .mode = "builtin", .duration = 60};
    pp_dotnet_session_begin(&ctx, f.procs, f.n);
    double t0 = pp_mono_now();
    pp_dotnet_at_exit(&ctx);
    double took = pp_mono_now() - t0;
    /* StopTracing unanswered and the streams open: 3 s for all, not 3 s each */
    cr_assert_lt(took, 7.0, "%.1f s for 3 processes (was 12 s)", took);
    stop_fakes(&f);
}

Test(dotnet_builtin, a_session_start_waits_no_longer_than_the_sessions_budget)
{
    fakes f;
    start_fakes(&f, 2, "mute");
    /* -d 2: the hook's budget is 2 s (a process's steps were 5 s each, past the budget) */
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_DOTNET), .mode = "builtin", .duration = 2};
    double t0 = pp_mono_now();
    pp_dotnet_session_begin(&ctx, f.procs, f.n);
    double took = pp_mono_now() - t0;
    pp_dotnet_at_exit(&ctx);
    cr_assert_lt(took, 4.5, "%.1f s (was 5 s)", took);
    cr_assert_geq(took, 1.9, "the budget was used: %.1f s", took);
    stop_fakes(&f);
}

Test(dotnet_builtin, a_pending_stop_signal_ends_the_session_hook_at_once)
{
    fakes f;
    start_fakes(&f, 2, "mute");
    int p[2];
    cr_assert(pipe(p) == 0);
    cr_assert_eq(write(p[1], "x", 1), 1); /* readable: as the signalfd with SIGTERM pending */
    pp_runtime_ctx ctx = {
        .rt = pp_runtime_get(PP_KIND_DOTNET), .mode = "builtin", .duration = 60, .stop_fd = p[0]};
    double t0 = pp_mono_now();
    pp_dotnet_session_begin(&ctx, f.procs, f.n);
    double took = pp_mono_now() - t0;
    pp_dotnet_at_exit(&ctx);
    cr_assert_lt(took, 3.0, "%.1f s (was 10 s)", took);
    close(p[0]);
    close(p[1]);
    stop_fakes(&f);
}

static bool journal_is(const fakes *f, const char *want)
{
    char path[512], buf[512];
    snprintf(path, sizeof(path), "%s/dotnet-sessions", f->base);
    ssize_t n = pp_read_small_file(path, buf, sizeof(buf));
    if (n < 0)
        return want[0] == '\0';
    buf[n] = '\0';
    return strcmp(buf, want) == 0;
}

Test(dotnet_builtin, a_rundown_session_whose_stop_was_not_answered_stays_journaled_until_stopped)
{
    fakes f;
    start_fakes(&f, 1, "stopfail");
    pp_runtime_ctx ctx = {.rt = pp_runtime_get(PP_KIND_DOTNET), .mode = "builtin", .duration = 60};
    char both[256], one[96];
    snprintf(one, sizeof(one), "%d %llu 1\n", f.procs[0].pid, f.procs[0].start_ticks);
    snprintf(both, sizeof(both), "%s%d %llu 2\n", one, f.procs[0].pid, f.procs[0].start_ticks);
    pp_dotnet_session_begin(&ctx, f.procs, f.n);
    cr_assert(journal_is(&f, both), "the streaming session and the rundown left open");
    pp_dotnet_session_begin(&ctx, f.procs, f.n); /* the next session: its stop again */
    cr_assert(journal_is(&f, one), "the rundown now stopped");
    pp_dotnet_at_exit(&ctx);
    cr_assert(journal_is(&f, ""), "all stopped at exit");
    stop_fakes(&f);
}
