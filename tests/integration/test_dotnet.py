"""polyprof and .NET processes: the fixture runtime (PyPI's dotnetcore2 3.1 with C# compiled by
mcs) and what polyprof does with its processes."""
import glob
import os
import subprocess
import sys
import tempfile
import time

from conftest import (POLYPROF, App, LineReader, assert_not_starved, last_profile, run_polyprof,
                      samples_needed, wait_for)


def _start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime


def test_dotnet_fixture_runs_jit_code_and_opens_its_diagnostics_socket(dotnet_app, start_app):
    """The test runtime works with no environment setting: the program prints ready from
    JIT-compiled code, maps libcoreclr.so, and listens on
    /tmp/dotnet-diagnostic-<pid>-<start time>-socket, owned by its user, mode 0600."""
    app = start_app(*dotnet_app)
    sock = f"/tmp/dotnet-diagnostic-{app.pid}-{_start_time(app.pid)}-socket"
    wait_for(lambda: os.path.exists(sock), 10, f"{sock} to appear")
    st = os.stat(sock)
    assert st.st_uid == os.getuid() and (st.st_mode & 0o777) == 0o600, oct(st.st_mode)
    with open(f"/proc/{app.pid}/maps") as f:
        assert "libcoreclr.so" in f.read()
    assert glob.glob(f"/tmp/dotnet-diagnostic-{app.pid}-*-socket") == [sock]


def _net_env():
    """No .NET setting at all: the process is profiled as it was started."""
    return {"PATH": "/usr/bin:/bin"}


def _net_samples(prof, pid):
    return [(f, c) for f, c in prof.stacks if len(f) > 2 and f[2] == "dotnet"]


def test_builtin_names_managed_frames_of_a_process_started_without_settings(dotnet_app, outdir):
    """--dotnet-mode builtin on a .NET Core 3.1 process started with no environment setting:
    >= 90 % of its samples carry _[net] frames, HotA and HotB are named as
    Namespace.Class.Method(args)_[net] in a 3:1 split (+-6 points), and the process runs on,
    its diagnostics connections closed."""
    app = App(dotnet_app, env=_net_env())
    try:
        fds = len(os.listdir(f"/proc/{app.pid}/fd"))
        run_polyprof("-d", "10", "-f", "499", "-o", outdir, "--no-flamegraph",
                     "--dotnet-mode", "builtin", "--pids", app.pid, timeout=120)
        prof = last_profile(outdir)
        stacks = _net_samples(prof, app.pid)
        md = prof.header["application_metadata"][int(stacks[0][0][0])]
        assert md["dotnet_version"] == "3.1.23", md  # the runtime of `make deps`
        total = sum(c for _, c in stacks)
        named = sum(c for f, c in stacks if any(x.endswith("_[net]") for x in f))
        a = sum(c for f, c in stacks if "PolyNet.Hot.HotA(int32)_[net]" in f)
        b = sum(c for f, c in stacks if "PolyNet.Hot.HotB(int32)_[net]" in f)
        assert_not_starved(total, 200, "samples of the .NET process")
        assert named >= 0.9 * total, f"{named} of {total} samples with _[net] frames"
        assert_not_starved(a + b, samples_needed(75, 6.0), "HotA + HotB samples")
        pct = 100.0 * a / (a + b)
        print(f"dotnet builtin: {named}/{total} samples named, HotA {pct:.1f}% of {a + b}")
        assert abs(pct - 75) <= 6, f"HotA {pct:.1f}% of {a + b} HotA+HotB samples, expected 75+-6"
        assert app.proc.poll() is None, "the process runs on"
        wait_for(lambda: len(os.listdir(f"/proc/{app.pid}/fd")) <= fds, 10,
                 "polyprof's diagnostics connections to close in the target")
    finally:
        app.stop()


def test_builtin_names_a_method_first_called_during_the_session(dotnet_app, outdir):
    """A method first called (so JIT-compiled) seconds after the session started is named in that
    session, from the streaming session's MethodLoadVerbose event."""
    app = App(dotnet_app + ["late", "4000"], env=_net_env())
    try:
        run_polyprof("-d", "8", "-f", "499", "-o", outdir, "--no-flamegraph",
                     "--dotnet-mode", "builtin", "--pids", app.pid, timeout=120)
        stacks = _net_samples(last_profile(outdir), app.pid)
        late = sum(c for f, c in stacks if "PolyNet.Hot.HotLate(int32)_[net]" in f)
        unnamed = sum(c for f, c in stacks if f[-1].startswith("(/tmp/perf-"))
        print(f"dotnet builtin: HotLate in {late} samples, {unnamed} in unnamed JIT code")
        assert late > 0, f"HotLate named in no sample ({unnamed} samples in unnamed JIT code)"
    finally:
        app.stop()


def _settled_threads(pid):
    """pid's thread count once it has not changed for 1 s (the runtime starts threads of its own
    a while after the program's start)."""
    state = {"n": len(os.listdir(f"/proc/{pid}/task")), "since": time.monotonic()}

    def settled():
        n = len(os.listdir(f"/proc/{pid}/task"))
        if n != state["n"]:
            state.update(n=n, since=time.monotonic())
        return time.monotonic() - state["since"] >= 1.0

    wait_for(settled, 15, f"the threads of {pid} to settle")
    return state["n"]


def test_polyprof_sigkilled_mid_session_leaves_no_session_after_its_next_run(dotnet_app, outdir):
    """polyprof SIGKILLed while its EventPipe session streams: the target runs on, and on 3.1 the
    session stays (its connection open in the target); the next polyprof, even one that does not
    profile .NET, stops it at its start (the journal in its scratch space), the one after gives a
    complete profile, and the target is left as it was."""
    app = App(dotnet_app, env=_net_env())
    pp = None
    try:
        _settled_threads(app.pid)
        fds = len(os.listdir(f"/proc/{app.pid}/fd"))
        pp = subprocess.Popen([str(POLYPROF), "-d", "60", "-o", str(outdir), "--no-flamegraph",
                               "--dotnet-mode", "builtin", "--pids", str(app.pid)],
                              stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        err = LineReader(pp.stderr)
        err.wait_line(lambda x: f".NET process {app.pid}: " in x and "rundown" in x, 60,
                      "polyprof's session in the .NET process")
        # the streaming session's connection in the target, and the stream's first bytes written
        # (a 3.1 runtime that writes to a dead client ends the session: not what is tested here)
        nfd = lambda: len(os.listdir(f"/proc/{app.pid}/fd"))  # noqa: E731
        wait_for(lambda: nfd() == fds + 1, 10, "the session's connection in the target")
        _settled_threads(app.pid)
        pp.kill()
        pp.wait()
        pp.stderr.close()
        assert app.proc.poll() is None, "the target runs on"
        time.sleep(0.5)  # not a wait for a condition: the time in which the session must stay
        assert nfd() == fds + 1, "the session outlived polyprof (3.1 did not notice)"
        # the next run, even one that does not profile .NET, stops the session left behind
        r = run_polyprof("-d", "1", "-o", outdir, "--no-flamegraph", "--pids", app.pid)
        assert "stopped 1 EventPipe session left in .NET processes" in r.stderr, r.stderr
        back = (lambda: nfd() <= fds)  # the runtime's own threads come and go: not counted
        wait_for(back, 10, f"the target back to {fds} descriptors")
        # and the next profile of it is complete
        run_polyprof("-d", "4", "-f", "499", "-o", outdir, "--no-flamegraph",
                     "--dotnet-mode", "builtin", "--pids", app.pid, timeout=120)
        stacks = _net_samples(last_profile(outdir), app.pid)
        total = sum(c for _, c in stacks)
        named = sum(c for f, c in stacks if any(x.endswith("_[net]") for x in f))
        assert_not_starved(total, 100, "samples of the .NET process")
        assert named >= 0.9 * total, f"{named} of {total} samples with _[net] frames"
        wait_for(back, 10, f"the target back to {fds} descriptors")
        assert app.proc.poll() is None
    finally:
        if pp and pp.poll() is None:
            pp.kill()
            pp.wait()
        app.stop()


def test_builtin_two_processes_at_once_one_exiting_mid_session(dotnet_app, outdir):
    """Two .NET processes profiled in one session, one of them killed mid-session: the session
    ends normally, both are named (the one that exited for the samples it had), and the survivor
    is left with no connection of polyprof's."""
    a = App(dotnet_app, env=_net_env())
    b = App(dotnet_app, env=_net_env())
    pp = None
    try:
        fds = len(os.listdir(f"/proc/{a.pid}/fd"))
        pp = subprocess.Popen([str(POLYPROF), "-d", "8", "-f", "499", "-o", str(outdir),
                               "--no-flamegraph", "--dotnet-mode", "builtin",
                               "--pids", f"{a.pid},{b.pid}"],
                              stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        err = LineReader(pp.stderr)
        for app in (a, b):
            err.wait_line(lambda x, p=app.pid: f".NET process {p}: " in x and "rundown" in x, 60,
                          f"polyprof's session in .NET process {app.pid}")
        t0 = time.monotonic()
        wait_for(lambda: time.monotonic() - t0 > 2, 5, "2 s of the session")
        b.stop()  # killed mid-session
        assert pp.wait(timeout=60) == 0, err.text()
        # the .col's stacks are by comm (both "dotnet"): the two together
        stacks = _net_samples(last_profile(outdir), a.pid)
        total = sum(c for _, c in stacks)
        named = sum(c for f, c in stacks if any(x.endswith("_[net]") for x in f))
        assert_not_starved(total, 200, "samples of the .NET processes")
        assert named >= 0.9 * total, f"{named} of {total} samples with _[net] frames"
        assert "methods named by rundown" in err.text()
        wait_for(lambda: len(os.listdir(f"/proc/{a.pid}/fd")) <= fds, 10,
                 "the survivor's connections from polyprof closed")
        assert a.proc.poll() is None
    finally:
        if pp and pp.poll() is None:
            pp.kill()
            pp.wait()
        a.stop()
        b.stop()


# Listens on dir/name as the user it runs as (bound under a temporary name, then renamed: listening
# before the name appears), counting the connections it is offered; on a line on stdin it counts
# those still pending, prints "accepts N" and exits.
_PLANTED = r"""
import os, select, socket, sys
d, name = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(os.path.join(d, name + ".tmp"))
s.listen(16)
os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))
print("ready", flush=True)
n = 0
while True:
    r, _, _ = select.select([s, sys.stdin], [], [])
    while select.select([s], [], [], 0)[0]:
        s.accept()
        n += 1
    if sys.stdin in r:
        print("accepts", n, flush=True)
        break
"""

NOBODY = 65534


def test_builtin_never_connects_to_a_diagnostics_socket_planted_by_another_user(dotnet_app,
                                                                                 outdir):
    """A listening socket that user nobody put at the name a real .NET process's diagnostics
    socket has (the runtime's own moved aside; TMPDIR a sticky world-writable directory, as /tmp
    is) is never connected to: it is owned by another uid than the target's, polyprof logs that
    and leaves the process's frames unnamed, while a second .NET process in the same session is
    named."""
    d = tempfile.mkdtemp(prefix="pp_it_nettmp_")
    os.chmod(d, 0o1777)
    victim = App(dotnet_app, env={**_net_env(), "TMPDIR": d})
    normal = App(dotnet_app, env=_net_env())
    planted = None
    try:
        name = f"dotnet-diagnostic-{victim.pid}-{_start_time(victim.pid)}-socket"
        real = os.path.join(d, name)
        wait_for(lambda: os.path.exists(real), 10, f"{real} to appear")
        os.rename(real, real + ".moved")
        planted = subprocess.Popen([sys.executable, "-c", _PLANTED, d, name], user=NOBODY,
                                   group=NOBODY, extra_groups=[], cwd="/", stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        assert planted.stdout.readline().strip() == "ready", "the planted server did not start"
        assert os.stat(real).st_uid == NOBODY
        r = run_polyprof("-d", "4", "-f", "499", "-o", outdir, "--no-flamegraph",
                         "--dotnet-mode", "builtin", "--pids", f"{victim.pid},{normal.pid}",
                         timeout=120)
        out, _ = planted.communicate("q\n", timeout=10)
        assert out.split()[-2:] == ["accepts", "0"], f"the planted socket was connected to: {out}"
        why = [x for x in r.stderr.splitlines() if f"{name} of .NET process {victim.pid}" in x]
        assert why and f"is owned by uid {NOBODY}, not by the process's user (uid 0)" in why[0], \
            r.stderr
        assert any(f".NET process {normal.pid}: " in x and "methods named by rundown" in x
                   for x in r.stderr.splitlines()), r.stderr
        stacks = _net_samples(last_profile(outdir), normal.pid)
        assert any("PolyNet.Hot.HotA(int32)_[net]" in f for f, _ in stacks), \
            "the other .NET process's methods are named"
        assert victim.proc.poll() is None and normal.proc.poll() is None
    finally:
        if planted and planted.poll() is None:
            planted.kill()
            planted.communicate()
        victim.stop()
        normal.stop()
        subprocess.run(["rm", "-rf", d], check=False)


# The 32 bytes after the header offset in the apphost's bundle marker (bundle_marker.cpp).
_BUNDLE_SIGNATURE = bytes.fromhex("8b1202b96a612038727b930214d7a032"
                                  "13f5b9e6efae3318ee3b2dce24b36aae")


def _single_file_standin(d):
    """A stand-in for a .NET single-file app (no SDK here to publish one): a C program whose
    writable data holds the bundle marker, patched as `dotnet publish` does (the header offset
    set to a bundle header appended to the file). Prints ready and waits."""
    src = os.path.join(d, "single.c")
    marker = ", ".join(["0"] * 8 + [str(b) for b in _BUNDLE_SIGNATURE])
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <unistd.h>\n"
                f"volatile unsigned char marker[40] = {{{marker}}};\n"
                "int main(void) { if (marker[0] == 1) return 1; puts(\"ready\"); fflush(stdout);"
                " for (;;) pause(); }\n")
    exe = os.path.join(d, "single")
    subprocess.run(["cc", "-O0", "-o", exe, src], check=True)
    with open(exe, "r+b") as f:
        data = f.read()
        at = data.index(_BUNDLE_SIGNATURE)
        f.seek(at - 8)
        f.write(len(data).to_bytes(8, "little"))
        f.seek(len(data))
        f.write((6).to_bytes(4, "little") + bytes(4) + (1).to_bytes(4, "little") + b"\x04abcd")
    return exe


def test_a_single_file_app_is_profiled_as_dotnet(outdir, tmp_path):
    """A process whose executable carries a patched bundle marker (and maps no libcoreclr.so) is
    a .NET process for polyprof: --dotnet-mode builtin looks for its diagnostics socket (the
    stand-in has none: the WARNING says so); a plain native program is not."""
    single = App([_single_file_standin(str(tmp_path))])
    native = App(["/bin/sh", "-c", "echo ready; exec sleep 60"])
    try:
        r = run_polyprof("-d", "1", "-o", outdir, "--no-flamegraph", "--dotnet-mode", "builtin",
                         "--pids", f"{single.pid},{native.pid}", timeout=120)
        lines = r.stderr.splitlines()
        assert any(f".NET process {single.pid}" in x and "no diagnostics socket" in x
                   for x in lines), r.stderr
        assert not any(f".NET process {native.pid}" in x for x in lines), r.stderr
    finally:
        single.stop()
        native.stop()
