"""polyprof and .NET processes: the fixture runtime (PyPI's dotnetcore2 3.1 with C# compiled by
mcs) and what polyprof does with its processes."""
import glob
import os

from conftest import (App, assert_not_starved, last_profile, run_polyprof, samples_needed,
                      wait_for)


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
        stacks = _net_samples(last_profile(outdir), app.pid)
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
