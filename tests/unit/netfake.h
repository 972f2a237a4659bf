/* A fake .NET runtime for the unit tests of runtimes/dotnet: a python process with TMPDIR=dir that
 * listens on the diagnostics socket name its pid and start time give
 * (dir/dotnet-diagnostic-<pid>-<start ticks>-socket), answering as the mode says. Shared by
 * test_dotnet_ipc.c and test_dotnet_builtin.c. */
#ifndef PP_TEST_NETFAKE_H
#define PP_TEST_NETFAKE_H

#include "tests/unit/testutil.h"

#include "base/procfiles.h"

/* "mute": listens, never accepts (a reply never comes). "stuck": answers CollectTracing with
 * session ids 1, 2, ... and streams a nettrace header on each session; the StopTracing of
 * session 2 and later (the rundown) ends its stream and is answered, that of session 1 (the
 * streaming session) never is and its stream never ends. "stopfail": the same, but session 1's
 * stop is answered, and the first stop of session 2 ends its stream and closes unanswered. */
static const char pp_test_fake_net_py[] =
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

/* Runs argv[0] (a full path) with the environment TMPDIR=dir alone, as a child that dies with
 * the test (PR_SET_PDEATHSIG); the caller waits for what it needs and kills and reaps it. */
static inline pid_t pp_test_run_with_tmpdir(const char *dir, char *const argv[])
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char env[300];
        snprintf(env, sizeof(env), "TMPDIR=%s", dir);
        char *const envp[] = {env, NULL};
        execve(argv[0], argv, envp);
        _exit(127);
    }
    return pid;
}

/* Starts the fake in mode with TMPDIR=dir; returns once its socket name exists. */
static inline pid_t pp_test_start_fake_net(const char *dir, const char *mode)
{
    char *const argv[] = {"/usr/bin/python3", "-c", (char *)pp_test_fake_net_py, (char *)mode,
                          NULL};
    pid_t pid = pp_test_run_with_tmpdir(dir, argv);
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

#endif
