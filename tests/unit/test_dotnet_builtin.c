/* Unit tests: --dotnet-mode builtin (runtimes/dotnet/builtin.c) against fake runtimes (a python
 * process serving its own diagnostics socket name): how long its session hook and its exit
 * take when the targets do not answer. */
#include "tests/unit/testutil.h"

#include <poll.h>

#include "base/child.h"
#include "base/procfiles.h"
#include "runtimes/dotnet/dotnet.h"
#include "runtimes/registry.h"
#include "runtimes/runtime.h"

TestSuite(dotnet_builtin, .init = pp_test_quiet_log);

/* "mute": listens, never accepts (a reply never comes). "stuck": answers CollectTracing with
 * session ids 1, 2, ... and streams a nettrace header on each session; the StopTracing of
 * session 2 and later (the rundown) ends its stream and is answered, that of session 1 (the
 * streaming session) never is and its stream never ends. "stopfail": the same, but session 1's
 * stop is answered, and the first stop of session 2 ends its stream and closes unanswered. */
static const char fake_py[] =
    "import os, socket, struct, sys\n"
    "st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    /* listening before the name appears: a connect between bind and listen is refused */
    "p = '%s/dotnet-diagnostic-%d-%s-socket' % (os.environ['TMPDIR'], os.getpid(), st)\n"
    "s.bind(p + '.tmp')\n"
    "s.listen(16)\n"
    "os.rename(p + '.tmp', p)\n"
    "if sys.argv[1] == 'mute':\n"
    "    import time\n"
    "    time.sleep(60)\n"
    "    sys.exit(0)\n"
    "M = b'DOTNET_IPC_V1\\0'\n"
    "def ok(c, sid):\n"
    "    c.sendall(M + struct.pack('<HBBH', 28, 0xff, 0, 0) + struct.pack('<Q', sid))\n"
    "HEAD = (b'Nettrace' + struct.pack('<I', 20) + b'!FastSerialization.1' + bytes([5, 5, 1]) +\n"
    "        struct.pack('<III', 4, 4, 5) + b'Trace' + bytes([6]) + bytes(32) +\n"
    "        struct.pack('<IIII', 8, os.getpid(), 2, 1000) + bytes([6]))\n"
    "def recvn(c, k):\n"
    "    b = b''\n"
    "    while len(b) < k:\n"
    "        r = c.recv(k - len(b))\n"
    "        if not r:\n"
    "            raise EOFError\n"
    "        b += r\n"
    "    return b\n"
    "streams, keep, n, stops = {}, [], 0, {}\n"
    "while True:\n"
    "    c, _ = s.accept()\n"
    "    keep.append(c)\n"
    "    try:\n"
    "        h = recvn(c, 20)\n"
    "        size, cs, cid = struct.unpack_from('<HBB', h, 14)\n"
    "        p = recvn(c, size - 20)\n"
    "    except EOFError:\n"
    "        continue\n"
    "    if cid == 2:\n"
    "        n += 1\n"
    "        streams[n] = c\n"
    "        ok(c, n)\n"
    "        c.sendall(HEAD)\n"
    "    elif cid == 1:\n"
    "        sid = struct.unpack('<Q', p[:8])[0]\n"
    "        stops[sid] = stops.get(sid, 0) + 1\n"
    "        if sid == 1 and sys.argv[1] == 'stuck':\n"
    "            continue\n"
    "        if sid in streams:\n"
    "            streams.pop(sid).sendall(b'\\x01')\n"
    "        if sid == 2 and stops[sid] == 1 and sys.argv[1] == 'stopfail':\n"
    "            c.close()\n"
    "            continue\n"
    "        ok(c, sid)\n";

static pid_t start_fake(const char *dir, const char *mode)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char env[300];
        snprintf(env, sizeof(env), "TMPDIR=%s", dir);
        char *const envp[] = {env, NULL};
        char *const argv[] = {"python3", "-c", (char *)fake_py, (char *)mode, NULL};
        execve("/usr/bin/python3", argv, envp);
        _exit(127);
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/dotnet-diagnostic-%d-%llu-socket", dir, pid,
             pp_proc_start_ticks(pid));
    for (int i = 0; i < 1000; i++) {
        if (access(path, F_OK) == 0)
            return pid;
        usleep(5000);
    }
    cr_assert_fail("the fake runtime did not bind %s", path);
    return -1;
}

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
        pid_t pid = start_fake(f->dir, mode);
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
