"""--ruby-mode rbspy against the real rbspy and Debian's Ruby (run as root).

The real rbspy (crates.io, pinned in tests/tools/install.sh; `make deps` builds it) profiles
apps/rbsplit.rb, whose Worker#hot_a does three times Worker#hot_b's work: the split within the
band of conftest.assert_share, gProfiler's frames `<label> - <path>:<line>_[rb]` with the lines
inside the methods, the process's total equal to the sampler's count for it (the runtime profile
is scaled to it), and the Ruby metadata and appid in the file. Small stand-ins (shell scripts
written by the tests) check what needs a controlled rbspy: gProfiler's command line, the error
stack of a failing rbspy, and that no rbspy child outlives polyprof (a SIGTERM mid-session).
"""
import os
import re
import signal
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import (APPS, POLYPROF, App, LineReader, assert_share, last_profile, run_polyprof,
                      tool_resources, wait_for)

ROOT = Path(__file__).resolve().parents[2]
PP_TOOLS = Path(os.environ.get("PP_TOOLS", "/var/cache/polyprof/tools"))
RBSPY_VERSION = re.search(r"^RBSPY_VERSION=(\S+)$", (ROOT / "tests/tools/install.sh").read_text(),
                          re.M)[1]
RBSPY = PP_TOOLS / f"rbspy-{RBSPY_VERSION}" / "bin" / "rbspy"
RUBY = "/usr/bin/ruby"
SAMPLER_LINE = re.compile(r"runtime ruby pid (\d+): (\d+) runtime samples, (\d+) sampler samples")
FRAME = re.compile(r"(.+) - (/.+):(\d+)_\[rb\]")


def need(path, what):
    if not os.access(path, os.X_OK):
        pytest.skip(f"needs {what} at {path}")


def method_lines(script, name):
    """Lines of `def name` .. its `end` in the fixture."""
    lines = Path(script).read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.strip() == f"def {name}(units)")
    end = next(i for i in range(start, len(lines)) if lines[i] == "  end")
    return range(start + 1, end + 2)


def ruby_stacks(prof, pid_index_of_script):
    return [(f, c) for f, c in prof.stacks if len(f) > 3 and pid_index_of_script(f)]


def tool_dir(tmp_path, target):
    """A resources directory for POLYPROF_RESOURCES whose ruby/rbspy is target."""
    return tool_resources(tmp_path, "ruby/rbspy", target)


def test_rbspy_real_split_frames_total_and_metadata(tmp_path):
    need(RBSPY, f"the real rbspy {RBSPY_VERSION} (make deps builds it with cargo)")
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    script = tmp_path / "rbsplit_real.rb"
    shutil.copy(APPS / "rbsplit.rb", script)
    env = dict(os.environ, POLYPROF_RESOURCES=str(tool_dir(tmp_path, RBSPY)))
    a = App([RUBY, str(script)])
    try:
        out = tmp_path / "out"
        r = run_polyprof("-d", 15, "-f", 99, "-o", out, "--ruby-mode", "rbspy", "--pids", a.pid,
                         "-v", env=env)
    finally:
        a.stop()
    prof = last_profile(out)
    appid = f"appid: ruby: {script} ({script})"
    stacks = [(f, c) for f, c in prof.stacks if len(f) > 4 and f[3] == appid]
    assert stacks, r.stderr[-3000:]
    frames = [x for f, _ in stacks for x in f[4:]]
    ruby_frames = [x for x in frames if not x.endswith(":0")]  # C functions: no suffix
    bad = [x for x in ruby_frames if not FRAME.fullmatch(x)]
    assert not bad, bad[:5]
    assert all(x.endswith(" [c function] - (unknown):0") for x in frames if x not in ruby_frames)

    def count(name):
        return sum(c for f, c in stacks if any(FRAME.fullmatch(x)[1] == name
                                               for x in f[4:] if x in ruby_frames))
    a_n, b_n = count("hot_a"), count("hot_b")
    assert_share(100.0 * a_n / max(a_n + b_n, 1), a_n + b_n, 75, f"rbspy hot_a:hot_b {a_n}:{b_n}")
    # every frame names the script, with a line inside its method
    for name in ("hot_a", "hot_b"):
        m = [FRAME.fullmatch(x) for x in ruby_frames if FRAME.fullmatch(x)[1] == name]
        assert m and all(x[2] == str(script) and int(x[3]) in method_lines(script, name)
                         for x in m), m[:3]
    assert any(FRAME.fullmatch(x)[1] == "<main>" for x in ruby_frames), ruby_frames[:5]
    # the Ruby profile was scaled to the system sampler's count for the process
    counts = {int(m[1]): int(m[3]) for m in SAMPLER_LINE.finditer(r.stderr)}
    assert a.pid in counts and counts[a.pid] > 0, r.stderr[-3000:]
    assert sum(c for _, c in stacks) == counts[a.pid]
    print(f"rbspy: hot_a {a_n}, hot_b {b_n}: {100.0 * a_n / max(a_n + b_n, 1):.1f}% of "
          f"{a_n + b_n}; Ruby total {sum(c for _, c in stacks)} = sampler {counts[a.pid]}")
    # the metadata of the header, in gProfiler's order, then the base keys
    md = prof.header["application_metadata"][int(stacks[0][0][0])]
    version = subprocess.run([RUBY, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert list(md)[:3] == ["ruby_version", "exe_elfid", "libruby_elfid"], md
    assert md["ruby_version"] == version
    assert md["exe_elfid"].startswith("buildid:") and md["libruby_elfid"].startswith("buildid:")
    assert not list(Path("/run/polyprof").glob("sess-*/rbspy.*")), "output files removed"


def test_rbspy_real_fibers(tmp_path):
    """The real rbspy on apps/rbfiber.rb (the fiber program of test_ruby_bpf.py): it reads the
    ractor's running context too, so a fiber's samples show the fiber's frames only, rooted at
    its block; the split follows the work (fiber A:B 3:1, the Enumerator's generator half). Its
    one difference from the built-in walker (docs/ruby.md, "Fibers"): upstream rbspy prints the
    Enumerator fiber's entry (a C block, an ifunc frame with pc 0) as a third C function."""
    need(RBSPY, f"the real rbspy {RBSPY_VERSION} (make deps builds it with cargo)")
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    script = APPS / "rbfiber.rb"
    env = dict(os.environ, POLYPROF_RESOURCES=str(tool_dir(tmp_path, RBSPY)))
    a = App([RUBY, str(script)])
    try:
        out = tmp_path / "out"
        r = run_polyprof("-d", 20, "-f", 99, "-o", out, "--ruby-mode", "rbspy", "--pids", a.pid,
                         env=env)
    finally:
        a.stop()
    prof = last_profile(out)
    stacks = [(f[4:], c) for f, c in prof.stacks if len(f) > 4 and f"({script})" in f[3]]
    assert stacks, r.stderr[-3000:]
    cfunc = "(unknown) [c function] - (unknown):0"

    def lab(x):
        m = FRAME.fullmatch(x)
        return m[1] if m else x

    roots = {"work_a": ["block in <main>", "fiber_a", "work_a", "spin"],
             "work_b": ["block in <main>", "fiber_b", "work_b", "spin"],
             "work_e": [cfunc] * 3 + ["block in <main>", "produce", "work_e", "spin"]}
    got = Counter()
    for f, c in stacks:
        names = [lab(x) for x in f]
        work = [k for k in roots if k in names]
        if work:
            assert len(work) == 1 and "<main>" not in names, names
            got[work[0]] += c
            got[work[0] + "_exact"] += c * (names == roots[work[0]])
            assert all(FRAME.fullmatch(x)[2] == str(script) for x in f if x != cfunc), f
    a_n, b_n, e_n = got["work_a"], got["work_b"], got["work_e"]
    for k in roots:  # rbspy reads without stopping the process: a few torn stacks
        assert got[k + "_exact"] >= 0.95 * got[k], (k, got, stacks[:5])
    assert_share(100.0 * a_n / max(a_n + b_n, 1), a_n + b_n, 75, f"rbspy fiber A:B {a_n}:{b_n}")
    assert_share(100.0 * e_n / max(a_n + b_n + e_n, 1), a_n + b_n + e_n, 50,
                 f"rbspy generator {e_n} of {a_n + b_n + e_n}")
    print(f"rbspy fibers: A {a_n}, B {b_n}, generator {e_n}")


STANDIN = """#!/bin/sh
# rbspy stand-in: records its argv, then {action}
printf '%s\\n' "$@" > {argv}
file=""
prev=""
for a in "$@"; do
    [ "$prev" = --file ] && file=$a
    prev=$a
done
pid=$prev
{body}
"""


def standin(tmp_path, action, body):
    """A resources directory for POLYPROF_RESOURCES whose ruby/rbspy is a stand-in, and the
    file it records its argv in."""
    argv = tmp_path / "argv.txt"
    return tool_resources(tmp_path, "ruby/rbspy",
                          text=STANDIN.format(action=action, argv=argv, body=body)), argv


def test_gprofiler_command_line_and_auto_takes_rbspy(tmp_path):
    """auto (the default), without the BPF sampler to walk in, hands the process to rbspy when
    it is found (the built-in backend's fallback); it runs
    with gProfiler's command line (upstream rbspy's flag spellings: docs/ruby.md), -f clamped
    to 100; its frames get `_[rb]`. Without the sampler the stacks are written as parsed."""
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    bindir, argv = standin(tmp_path, "writes fixed collapsed frames",
                           "printf '<main> - /x.rb:3;sleep [c function] - (unknown);"
                           "f - /x.rb:9 7\\n' > \"$file\"")
    script = tmp_path / "rbsplit_auto.rb"
    shutil.copy(APPS / "rbsplit.rb", script)
    a = App([RUBY, str(script)])
    try:
        out = tmp_path / "out"
        env = dict(os.environ, POLYPROF_RESOURCES=str(bindir))
        run_polyprof("-d", 2, "-f", 250, "-o", out, "--perf-mode", "disabled", "--pids", a.pid,
                     env=env)
    finally:
        a.stop()
    args = argv.read_text().splitlines()
    assert len(args) == 15 and re.fullmatch(r"/run/polyprof/sess-\d+-\w+/rbspy\.[a-z]{16}\."
                                            rf"{a.pid}\.col", args[10]), args
    args[10] = "OUT"
    assert args == ["record", "--silent", "-r", "100", "-d", "2", "--nonblocking", "--on-cpu",
                    "--format=collapsed", "--file", "OUT", "--raw-file", "/dev/null", "-p",
                    str(a.pid)]
    stacks = [(f[4:], c) for f, c in last_profile(out).stacks if f[2] == "ruby"]
    assert stacks == [(["<main> - /x.rb:3_[rb]", "sleep [c function] - (unknown):0",
                        "f - /x.rb:9_[rb]"], 7)]


def test_failing_rbspy_gives_an_error_stack(tmp_path):
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    bindir, _ = standin(tmp_path, "fails", "echo 'Error: standin failure' >&2; exit 3")
    a = App([RUBY, str(APPS / "rbsplit.rb")])
    try:
        out = tmp_path / "out"
        env = dict(os.environ, POLYPROF_RESOURCES=str(bindir))
        r = run_polyprof("-d", 2, "-o", out, "--perf-mode", "disabled", "--ruby-mode", "rbspy",
                         "--pids", a.pid, env=env)
    finally:
        a.stop()
    stacks = [(f[2:], c) for f, c in last_profile(out).stacks]
    assert stacks == [(["ruby", f"appid: ruby: {APPS / 'rbsplit.rb'} ({APPS / 'rbsplit.rb'})",
                        "[Profiling error: rbspy exited with code 3]"], 1)], stacks
    assert re.search(rf"ruby pid {a.pid} \(ruby\): rbspy exited with code 3; stderr: "
                     r"Error: standin failure", r.stderr), r.stderr


def test_process_gone_before_rbspy_attached(tmp_path):
    """The real rbspy, started by a wrapper that first kills the target (the race of a process
    exiting between discovery and rbspy's start): an error stack says so."""
    need(RBSPY, f"the real rbspy {RBSPY_VERSION} (make deps builds it with cargo)")
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    bindir, _ = standin(tmp_path, "kills the target, then runs the real rbspy",
                        'kill -9 "$pid"\n'
                        'while readlink "/proc/$pid/exe" >/dev/null 2>&1; do sleep 0.05; done\n'
                        f'exec {RBSPY} "$@"')
    a = App([RUBY, str(APPS / "rbsplit.rb")])
    try:
        out = tmp_path / "out"
        env = dict(os.environ, POLYPROF_RESOURCES=str(bindir))
        run_polyprof("-d", 2, "-o", out, "--perf-mode", "disabled", "--ruby-mode", "rbspy",
                     "--pids", a.pid, env=env)
    finally:
        a.stop()
    stacks = [(f[2], f[-1], c) for f, c in last_profile(out).stacks]
    assert stacks == [("ruby", "[Profiling error: process exited before rbspy started]", 1)], \
        stacks


def test_missing_rbspy_is_named(tmp_path):
    """A copy of polyprof with no resources beside it (build/polyprof has rbspy in
    resources/) and none on PATH names the places it looked in."""
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    exe = tmp_path / "alone" / "bin" / "polyprof"  # searches only below tmp_path/alone
    exe.parent.mkdir(parents=True)
    shutil.copy(POLYPROF, exe)
    a = App([RUBY, str(APPS / "rbsplit.rb")])
    try:
        env = dict(os.environ, PATH="/usr/bin:/bin")
        env.pop("POLYPROF_RESOURCES", None)
        r = subprocess.run([str(exe), "-d", "1", "-o", str(tmp_path / "out"), "--perf-mode",
                            "disabled", "--ruby-mode", "rbspy", "--pids", str(a.pid)],
                           capture_output=True, text=True, timeout=120, env=env)
    finally:
        a.stop()
    assert r.returncode == 0, r.stderr
    assert "rbspy not found (looked for " in r.stderr and "ruby/rbspy" in r.stderr, r.stderr


def test_no_rbspy_child_outlives_a_sigterm(tmp_path):
    """polyprof killed mid-session (SIGTERM) stops its rbspy children (here one that ignores
    SIGINT, so it must be killed) and exits; none is left."""
    need(RUBY, "Debian's ruby (apt-get install ruby)")
    pidfile = tmp_path / "standin.pid"
    bindir, _ = standin(tmp_path, "hangs ignoring SIGINT",
                        f"trap '' INT\necho $$ > {pidfile}.new; mv {pidfile}.new {pidfile}\n"
                        "exec sleep 1000")
    a = App([RUBY, str(APPS / "rbsplit.rb")])
    child = None
    try:
        env = dict(os.environ, POLYPROF_RESOURCES=str(bindir))
        p = subprocess.Popen([str(POLYPROF), "-d", "60", "-o", str(tmp_path / "out"),
                              "--perf-mode", "disabled", "--ruby-mode", "rbspy", "--pids",
                              str(a.pid)], env=env, stderr=subprocess.PIPE, text=True)
        log = LineReader(p.stderr)
        child = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 30,
                             "the rbspy stand-in to start"))
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=30)
        assert rc == 0, log.text()
        # the stand-in execs sleep: its pid is gone, or a zombie of nobody's (not ours)
        wait_for(lambda: not Path(f"/proc/{child}").exists() or
                 Path(f"/proc/{child}/stat").read_text().split(") ")[1][0] == "Z", 10,
                 "the rbspy child to be gone")
    finally:
        if child and Path(f"/proc/{child}").exists():
            os.kill(child, signal.SIGKILL)
        a.stop()
