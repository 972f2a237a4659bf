"""Continuous mode (-c), the way polyprof is deployed: every session, not only the first, names
each process's stacks with that process's own functions, has no empty frame and writes each
stack once; for both sampler backends, for the local files and for every session uploaded."""
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import APPS, POLYPROF, wait_for
from receivers import StudioReceiver

SESSIONS = 6
TOKEN = "continuous-token"
RUBY_BUSY = "def spin(n) = (0..n).reduce(:+)\nputs \"ready #{Process.pid}\"\n$stdout.flush\n" \
            "loop { spin(200_000); sleep 0.02 }\n"


def mapped_files(pid):
    files = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
            files.add(parts[5].replace(" (deleted)", ""))
    return files


def debug_file(path):
    """The separate debug file of path by build id, as polyprof looks it up (or None)."""
    r = subprocess.run(["readelf", "-n", path], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if "Build ID:" in line:
            bid = line.split(":", 1)[1].strip()
            d = Path(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
            return d if d.exists() else None
    return None


def symbols_of(path):
    names = set()
    files = [path] + [d for d in [debug_file(path)] if d]
    for f in files:
        for flags in (["--defined-only"], ["-D", "--defined-only"]):
            r = subprocess.run(["nm", *flags, str(f)], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                parts = line.split(None, 2)
                if len(parts) == 3:
                    names.add(parts[2].split("@")[0])
    return names


class Expected:
    """What may appear in the stacks of one process: the symbols of the files it maps, those
    files unnamed, kernel frames, and the runtime frames of its own source file."""

    def __init__(self, pid, comm, source=None):
        self.pid, self.comm, self.source = pid, comm, source
        self.files = mapped_files(pid)
        self.symbols = set()
        for f in self.files:
            self.symbols |= symbols_of(f)

    def foreign(self, frame):
        if frame.endswith("_[k]") or frame.startswith("appid: ") or frame in (
                "[unknown]", "(vdso)"):
            return False
        if frame.startswith("(") and frame.endswith(")"):
            return frame[1:-1] not in self.files and not frame.startswith("(/tmp/perf-")
        if frame.endswith("_[p]"):
            return self.source is None or (self.source not in frame and
                                           "/lib/python3" not in frame)
        if frame.endswith("_[rb]"):
            return self.source is None or self.source not in frame
        if frame == "(unknown) [c function] - (unknown):0":  # a Ruby C function (rbspy's text)
            return self.source is None
        if frame.startswith("[Profiling "):
            return False
        return frame.split("@")[0] not in self.symbols and not frame.startswith("__vdso_")


def check_session(text, expected, where, complete=True):
    """complete: a whole session (the last file of a run stopped by SIGTERM holds only the part
    of a session sampled before the signal, where a process may not have run yet)."""
    lines = text.split("\n")
    assert lines[0].startswith("# {"), where
    stacks = [line.rpartition(" ")[0] for line in lines[1:]]
    dups = [s for s, n in Counter(stacks).items() if n > 1]
    assert not dups, f"{where}: {len(dups)} stacks written more than once, e.g. {dups[0]!r}"
    for stack in stacks:
        frames = stack.split(";")
        assert all(frames[2:]), f"{where}: empty frame in {stack!r}"
    for e in expected:
        mine = [s.split(";") for s in stacks if s.split(";")[2:3] == [e.comm]]
        if complete and e.comm in ("pp_hot_c", "pp_hot_go", "pp_hot_py"):
            assert mine, f"{where}: no stacks of {e.comm}"
        for frames in mine:
            bad = [x for x in frames[3:] if e.foreign(x)]
            assert not bad, f"{where}: {e.comm} shows frames not its own: {bad} in {frames}"


@pytest.mark.parametrize("mode", ["bpf", "perf-event"])
def test_every_session_names_only_its_own_functions(appdir, start_app, tmp_path, mode):
    out = tmp_path / "out"
    c = start_app(appdir / "pp_hot_c")
    go = start_app(appdir / "pp_hot_go")
    # A comm of its own (the test runner is a python3 too): the comm is the name execve got.
    (tmp_path / "pp_hot_py").symlink_to(os.path.realpath("/usr/bin/python3"))
    py = start_app(tmp_path / "pp_hot_py", APPS / "hot.py")
    rb_script = tmp_path / "busy.rb"
    rb_script.write_text(RUBY_BUSY)
    rb = start_app("ruby", rb_script)
    expected = [Expected(c.pid, "pp_hot_c"), Expected(go.pid, "pp_hot_go"),
                Expected(py.pid, "pp_hot_py", source=str(APPS / "hot.py")),
                Expected(rb.pid, "ruby", source=str(rb_script))]
    studio = StudioReceiver(tokens=(TOKEN,))
    (tmp_path / "token").write_text(TOKEN)
    args = [str(POLYPROF), "-c", "-d", "2", "-f", "99", "-o", str(out), "--perf-mode", mode,
            "--log-file", str(tmp_path / "pp.log"), "-u", "--token-file", str(tmp_path / "token"),
            "--service-name", "cont", "--server-host", studio.url, "--spool-dir",
            str(tmp_path / "spool")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLYPROF_", "GPROFILER_"))}
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env)
    try:
        wait_for(lambda: p.poll() is not None or
                 len(list(out.glob("profile_*.col"))) >= SESSIONS, 60,
                 f"{SESSIONS} sessions")
        assert p.poll() is None, "polyprof exited early"
        wait_for(lambda: len(studio.ok_uploads()) >= SESSIONS, 30, f"{SESSIONS} uploads")
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        studio.stop()
    assert p.returncode == 0, err
    files = sorted(out.glob("profile_*.col"))
    assert len(files) >= SESSIONS, [f.name for f in files]
    for i, f in enumerate(files):
        check_session(f.read_text(encoding="utf-8"), expected, f"{mode} session {i + 1} ({f.name})",
                      complete=i < SESSIONS)
    ups = [u["json"]["profile"] for u in studio.ok_uploads()]
    assert len(ups) >= SESSIONS
    for i, text in enumerate(ups):
        check_session(text, expected, f"{mode} upload {i + 1}", complete=i < SESSIONS)
