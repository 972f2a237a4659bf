"""Shared fixtures for polyprof's integration tests: real processes, real BPF, run as root."""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
APPS = Path(__file__).resolve().parent / "apps"


def wait_for(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a truthy value; fails the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


MAX_BAND = 8.0  # points: the widest band a share check accepts


def samples_needed(expected, band=MAX_BAND):
    """Samples for which 4 binomial standard deviations of a share around `expected` percent
    stay within +-band points."""
    p = expected / 100.0
    return math.ceil(16 * p * (1 - p) / (band / 100.0) ** 2)


def assert_not_starved(n, need, what):
    """A check that needs `need` samples to mean anything, given n: fewer fails as 'host
    starved' (the machine gave the profiled process too little CPU), never as a wrong answer,
    and never passes."""
    assert n >= need, (f"{what}: host starved: {n} samples, the check needs {need} (the machine "
                       f"gave the profiled process too little CPU)")


def assert_share(pct, n, expected, what, floor=5.0):
    """A sampled share (percent) is within 4 binomial standard deviations of the expected one
    (a false failure about once in 16,000 checks), never tighter than +-`floor` points (5; a
    profiler with a documented bias may ask for more, up to MAX_BAND). The band is never
    widened past +-8 points: with fewer samples than that needs, the test fails as 'host
    starved' instead of accepting a wrong answer (58/42 for 75/25)."""
    assert floor <= MAX_BAND
    p = expected / 100.0
    assert_not_starved(n, samples_needed(expected),
                       f"{what}: a +-{MAX_BAND:.0f} point check of a {expected}% share")
    tol = min(MAX_BAND, max(floor, 4 * 100.0 * (p * (1 - p) / n) ** 0.5))
    assert abs(pct - expected) <= tol, \
        f"{what}: {pct:.1f}% of {n} samples, expected {expected} +- {tol:.1f}"


class LineReader:
    """Reads a text stream on a thread, so that a test can wait for a line with a timeout (a
    readline() in the test itself blocks forever on a silent process)."""

    def __init__(self, stream):
        self.lines = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream):
        for line in stream:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wait_line(self, pred, timeout, what, allow_end=False):
        """The first line (from the start) for which pred is true; fails the test after
        timeout seconds, or when the stream ends without one (returns None then if
        allow_end)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            i = 0
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i]):
                        return self.lines[i]
                    i += 1
                left = deadline - time.monotonic()
                if self._closed and allow_end:
                    return None
                if self._closed or left <= 0:
                    pytest.fail(f"{'stream ended' if self._closed else f'timed out after {timeout}s'}"
                                f" waiting for {what}; output so far:\n{''.join(self.lines)[-3000:]}")
                self._cond.wait(left)

    def text(self, timeout=60):
        """Everything, once the stream has ended."""
        self._thread.join(timeout)
        with self._cond:
            return "".join(self.lines)


# A comm that is not UTF-8 (a lone 0xff and 0xfe, 0xc3 without its continuation byte), within
# the kernel's 15 bytes.
ODD_COMM = b"pp_\xff\xfe\xc3(odd"


@pytest.fixture(scope="session", autouse=True)
def odd_comm_process():
    """Any user can name a process with bytes that are not UTF-8, and one such process crashed
    three tests that read polyprof's output. One runs on the host for the whole suite (working
    a little, so that it is sampled too), killed at the end; every test sees its name."""
    d = Path(tempfile.mkdtemp(prefix="pp_it_oddcomm_"))
    app = None
    try:
        exe = d / "pp_oddcomm"
        subprocess.run(["gcc", "-O1", "-o", str(exe), str(APPS / "oddcomm.c")], check=True)
        app = App([str(exe), ODD_COMM])
        comm = Path(f"/proc/{app.pid}/comm").read_bytes().rstrip(b"\n")
        assert comm == ODD_COMM, comm
        yield app.pid
    finally:
        if app:
            app.stop()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def appdir():
    d = Path(tempfile.mkdtemp(prefix="pp_it_apps_"))
    subprocess.run(["gcc", "-O0", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id=sha1",
                    "-o", str(d / "pp_hot_c"), str(APPS / "hot.c")], check=True)
    env = dict(os.environ, GOCACHE=str(d / "gocache"), GOPATH=str(d / "gopath"),
               GOFLAGS="-mod=mod", GO111MODULE="off")
    subprocess.run(["go", "build", "-o", str(d / "pp_hot_go"), str(APPS / "hot.go")],
                   check=True, env=env)
    subprocess.run(["go", "build", "-ldflags=-s -w", "-o", str(d / "pp_hot_gos"),
                    str(APPS / "hot.go")], check=True, env=env)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _dotnetcore2_version():
    m = re.search(r"^DOTNETCORE2_VERSION=(\S+)$", (ROOT / "tests/tools/install.sh").read_text(), re.M)
    return m.group(1)


# The .NET Core runtime `make deps` unpacks from PyPI's dotnetcore2 wheel (tests/tools/install.sh)
DOTNET = (Path(os.environ.get("PP_TOOLS") or "/var/cache/polyprof/tools")
          / f"dotnetcore2-{_dotnetcore2_version()}" / "dotnetcore2" / "bin" / "dotnet")
# Beside an assembly, it makes the host run it on the 3.1 framework. Globalization invariant: the
# 3.1 runtime finds no ICU of Debian 12's version (72) and would abort at its first culture use;
# a file beside the program, not an environment setting.
DOTNET_RUNTIMECONFIG = {"runtimeOptions": {
    "tfm": "netcoreapp3.1",
    "framework": {"name": "Microsoft.NETCore.App", "version": "3.1.0"},
    "configProperties": {"System.Globalization.Invariant": True}}}


def compile_csharp(src, outdir):
    """Compiles apps/<src> with mcs into outdir; returns the argv that runs it on DOTNET."""
    if not DOTNET.exists():
        pytest.skip(f"no .NET runtime at {DOTNET} (`make deps` installs it, x86_64 only)")
    if not shutil.which("mcs"):
        pytest.skip("no mcs (Debian's mono-mcs; `make deps` installs it)")
    name = Path(src).stem
    exe = Path(outdir) / f"{name}.exe"
    subprocess.run(["mcs", "-optimize+", f"-out:{exe}", str(APPS / src)], check=True,
                   stdout=subprocess.DEVNULL)
    (Path(outdir) / f"{name}.runtimeconfig.json").write_text(json.dumps(DOTNET_RUNTIMECONFIG))
    return [str(DOTNET), str(exe)]


@pytest.fixture(scope="session")
def dotnet_app():
    """The argv of apps/NetHot.cs (PolyNet.Hot.HotA and HotB, 3:1) compiled for .NET Core 3.1."""
    d = Path(tempfile.mkdtemp(prefix="pp_it_dotnet_"))
    try:
        yield compile_csharp("NetHot.cs", d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


class App:
    """A running fixture program; waits (30 s at most) until it printed 'ready'."""

    def __init__(self, argv, timeout=30, **popen):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, **popen)
        self.out = LineReader(self.proc.stdout)
        try:
            self.first_line = self.out.wait_line(lambda x: True, timeout, f"{argv[0]} to start")
            assert self.first_line.startswith("ready"), \
                f"{argv[0]} did not start: {self.first_line!r}"
        except BaseException:
            self.stop()  # a program that printed something else first is not left running
            raise
        self.pid = self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.out.text(timeout=5)  # the reader ends at EOF (a forked grandchild may hold it)
        self.proc.stdout.close()


@pytest.fixture
def start_app():
    apps = []

    def _start(*argv):
        a = App([str(x) for x in argv])
        apps.append(a)
        return a

    yield _start
    for a in apps:
        a.stop()


@pytest.fixture
def outdir():
    d = Path(tempfile.mkdtemp(prefix="pp_it_out_"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def tool_resources(tmp_path, rel, source=None, text=None):
    """A resources directory holding one tool at rel ("python/py-spy"), a link to source or a
    new executable file with text, for POLYPROF_RESOURCES: the search path's explicit override
    (base/resource.h step 1). A test's stand-in must go there, not on PATH: PATH is the search's
    last step, and build/polyprof finds the real tools `make` copied into resources/ first."""
    d = tmp_path / "resources"
    p = d / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        p.symlink_to(source)
    else:
        p.write_text(text)
        p.chmod(0o755)
    return d


def run_polyprof(*args, timeout=120, check=True, env=None):
    r = subprocess.run([str(POLYPROF), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if check and r.returncode != 0:
        pytest.fail(f"polyprof {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}")
    return r


class Profile:
    """A parsed .col file. Read strictly as UTF-8: polyprof writes UTF-8 whatever the names on
    the host (a process with a non-UTF-8 name runs through the whole suite: odd_comm_process)."""

    def __init__(self, path):
        text = Path(path).read_bytes().decode("utf-8")
        assert not text.endswith("\n"), "no trailing newline"
        lines = text.split("\n")
        assert lines[0].startswith("# {"), "header line"
        self.header = json.loads(lines[0][2:])
        self.stacks = []
        for line in lines[1:]:
            stack, _, count = line.rpartition(" ")
            assert count.isdigit(), f"bad count in {line!r}"
            frames = stack.split(";")
            self.stacks.append((frames, int(count)))

    def for_comm(self, comm):
        return [(f, c) for f, c in self.stacks if len(f) > 2 and f[2] == comm]

    def count_where(self, comm, pred):
        return sum(c for f, c in self.for_comm(comm) if pred(f))


def last_profile(outdir):
    return Profile(Path(outdir) / "last_profile.col")


def temp_leftovers(outdir):
    return [p.name for p in Path(outdir).iterdir() if p.name.startswith(".polyprof-tmp")]
