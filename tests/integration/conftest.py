"""Shared fixtures for polyprof's integration tests: real processes, real BPF, run as root."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
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


def assert_share(pct, n, expected, what):
    """A sampled share (percent) is within 4 binomial standard deviations of the expected one
    (and never tighter than +-5 points): a fixed +-5 band fails about one run in five when a
    loaded host leaves only ~130 samples."""
    p = expected / 100.0
    tol = max(5.0, 4 * 100.0 * (p * (1 - p) / max(n, 1)) ** 0.5)
    assert abs(pct - expected) <= tol, \
        f"{what}: {pct:.1f}% of {n} samples, expected {expected} +- {tol:.1f}"


@pytest.fixture(scope="session")
def appdir():
    d = Path(tempfile.mkdtemp(prefix="pp_it_apps_"))
    subprocess.run(["gcc", "-O0", "-g", "-fno-omit-frame-pointer",
                    "-o", str(d / "pp_hot_c"), str(APPS / "hot.c")], check=True)
    env = dict(os.environ, GOCACHE=str(d / "gocache"), GOPATH=str(d / "gopath"),
               GOFLAGS="-mod=mod", GO111MODULE="off")
    subprocess.run(["go", "build", "-o", str(d / "pp_hot_go"), str(APPS / "hot.go")],
                   check=True, env=env)
    subprocess.run(["go", "build", "-ldflags=-s -w", "-o", str(d / "pp_hot_gos"),
                    str(APPS / "hot.go")], check=True, env=env)
    yield d
    shutil.rmtree(d, ignore_errors=True)


class App:
    """A running fixture program; waits until it printed 'ready'."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), f"{argv[0]} did not start: {line!r}"
        self.first_line = line
        self.pid = self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
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


def run_polyprof(*args, timeout=120, check=True, env=None):
    r = subprocess.run([str(POLYPROF), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    if check and r.returncode != 0:
        pytest.fail(f"polyprof {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}")
    return r


class Profile:
    """A parsed .col file."""

    def __init__(self, path):
        text = Path(path).read_text()
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
