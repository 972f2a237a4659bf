"""The Python runtime profilers against real CPython processes (run as root).

A copy of apps/pyhot.py runs under every CPython found (pyenv 3.8-3.13 and Debian's
/usr/bin/python3.11), one more in its own mount namespace, and one under an unsupported Python
(pyenv 3.7). Two polyprof runs profile them all at once (--python-mode builtin):
- without the system sampler (--perf-mode disabled): the runtime stacks are written unscaled.
  The sampler counts CPU time, so a process needs a few CPU-seconds for its 3:1 ratio to be
  measured within +-8 points (conftest.assert_share): the copies take turns (two at a time, 8 s
  each, a few % of a CPU otherwise). A host that still gives a process too few samples fails
  the test as starved; the band is never widened. Also checked: file names and lines, idle
  threads, annotations, the namespace's file names, the skip stack;
- with the BPF sampler (-d 3): the frames are walked in the sampler (issue 12); each process's
  total is the sampler's count for its pid and the header's coverage counts the samples that
  carry Python frames (accuracy of walked stacks on busy processes: test_python_bpf.py).

The py-spy contract tests use tests/integration/standins/py-spy, a stand-in written for these
tests, put first on the resource search path (POLYPROF_RESOURCES): it accepts py-spy's documented command line and
writes py-spy's raw output format with fixed frames for the target, so the test checks polyprof's
command line, parsing, annotation and scaling, not py-spy itself.
"""
import ast
import glob
import json
from collections import Counter
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (APPS, POLYPROF, App, LineReader, assert_not_starved, assert_share,
                      last_profile, run_polyprof, tool_resources)

STANDINS = Path(__file__).resolve().parent / "standins"


def pyspy_standin(tmp_path):
    """A resources directory (POLYPROF_RESOURCES) whose python/py-spy is the stand-in."""
    return tool_resources(tmp_path, "python/py-spy", STANDINS / "py-spy")


PP_TOOLS = Path(os.environ.get("PP_TOOLS", "/var/cache/polyprof/tools"))
PYSPY_VERSION = "0.4.3"  # tests/tools/install.sh
SAMPLER_LINE = re.compile(r"runtime python pid (\d+): (\d+) runtime samples, (\d+) sampler samples")


def interpreters():
    found = []
    for minor in range(8, 14):
        for d in sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*")):
            exe = f"{d}/bin/python3.{minor}"
            if os.access(exe, os.X_OK):
                found.append((os.path.basename(d), exe))
    if os.access("/usr/bin/python3.11", os.X_OK):
        found.append(("debian-3.11", "/usr/bin/python3.11"))
    return found


INTERPRETERS = interpreters()


def exact_version(exe):
    return subprocess.run([exe, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def function_lines(script, name):
    """Line range of Worker.<name> / <name> in the fixture script."""
    for node in ast.walk(ast.parse(Path(script).read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return range(node.lineno, node.end_lineno + 1)
    raise AssertionError(name)


class Proc:
    def __init__(self, label, exe, script, app, pid):
        self.label, self.exe, self.script, self.app, self.pid = label, exe, script, app, pid


LANES, SLOT = 2, 8.0  # burners at full speed at a time, seconds each (8 s at 100 Hz gives
# room above the 469 samples a +-8 point share check needs, on a host that is not starved)


def profile_in_turns(procs, gofile, nslots, out):
    """Runs polyprof without the system sampler; once its Python sampler runs, starts the
    processes' turns (writes the go file). Returns its stderr."""
    p = subprocess.Popen([str(POLYPROF), "-d", str(int(4 + nslots * SLOT + 1)), "-f", "99",
                          "-o", str(out), "--python-mode", "builtin", "-v",
                          "--perf-mode", "disabled"], stderr=subprocess.PIPE, text=True)
    log = LineReader(p.stderr)
    try:
        log.wait_line(lambda x: "python sampler:" in x, 10, "the Python sampler to start")
        Path(gofile).write_text(str(time.time() + 0.2))
        p.wait(timeout=60 + nslots * SLOT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = log.text()
    assert p.returncode == 0, err[-3000:]
    return err


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    d = tmp_path_factory.mktemp("pyhot")
    gofile = d / "go"
    procs, apps = {}, []
    nsdir = Path(tempfile.mkdtemp(prefix="pp_ns_"))
    labels = [label for label, _ in INTERPRETERS] + ["namespace", "deep", "exits"]
    offset = {label: str((i // LANES) * SLOT) for i, label in enumerate(labels)}
    nslots = (len(labels) + LANES - 1) // LANES
    try:
        for label, exe in INTERPRETERS:
            script = d / f"pyhot_{label.replace('.', '_').replace('-', '_')}.py"
            shutil.copy(APPS / "pyhot.py", script)
            a = App([exe, str(script), str(gofile), offset[label], str(SLOT)])
            apps.append(a)
            procs[label] = Proc(label, exe, str(script), a, a.pid)
        # Mount namespace: a tmpfs over nsdir (empty on the host) holds the script.
        ns_exe = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else None
        if ns_exe and shutil.which("unshare"):
            ns_script = nsdir / "pyhot_ns.py"
            a = App(["unshare", "--mount", "--fork", "--kill-child", "sh", "-c",
                     f"mount -t tmpfs tmpfs {nsdir} && cp {APPS / 'pyhot.py'} {ns_script} && "
                     f"exec {ns_exe} {ns_script} {gofile} {offset['namespace']} {SLOT}"])
            apps.append(a)
            pid = int(a.first_line.split()[1])
            procs["namespace"] = Proc("namespace", ns_exe, str(ns_script), a, pid)
        # Deeper than the reader walks (256 frames): truncated stacks.
        script = d / "pyhot_deep.py"
        shutil.copy(APPS / "pyhot.py", script)
        a = App(["env", "PYHOT_DEPTH=300", "/usr/bin/python3", str(script), str(gofile),
                 offset["deep"], str(SLOT)])
        apps.append(a)
        procs["deep"] = Proc("deep", "/usr/bin/python3", str(script), a,
                             int(a.first_line.split()[1]))
        # Exits mid-session, at the end of its turn.
        script = d / "pyhot_exits.py"
        shutil.copy(APPS / "pyhot.py", script)
        a = App(["env", "PYHOT_EXIT_AFTER_SLOT=1", "/usr/bin/python3", str(script), str(gofile),
                 offset["exits"], str(SLOT)])
        apps.append(a)
        procs["exits"] = Proc("exits", "/usr/bin/python3", str(script), a, a.pid)
        old = sorted(glob.glob("/root/.pyenv/versions/3.7.*/bin/python3.7"))
        if old:  # never gets a turn: a few % of a CPU
            script = d / "pyhot_37.py"
            shutil.copy(APPS / "pyhot.py", script)
            a = App([old[0], str(script), str(gofile), "1e12", "1"])
            apps.append(a)
            procs["3.7"] = Proc("3.7", old[0], str(script), a, a.pid)
        out = tmp_path_factory.mktemp("out")
        stderr = profile_in_turns(procs, gofile, nslots, out)
        prof = last_profile(out)
        out2 = tmp_path_factory.mktemp("out2")
        r2 = run_polyprof("-d", 3, "-f", 499, "-o", out2, "--python-mode", "builtin", "-v")
        counts = {int(m[1]): int(m[3]) for m in SAMPLER_LINE.finditer(r2.stderr)}
        yield prof, procs, (last_profile(out2), counts), stderr
    finally:
        for a in apps:
            a.stop()
        shutil.rmtree(nsdir, ignore_errors=True)


def stacks_of(prof, script):
    """Stacks of the process running script: its appid names the script."""
    return [(f, c) for f, c in prof.stacks if len(f) > 3 and f[3].startswith("appid: python: ")
            and f"({script})" in f[3]]


def frame_name(frame):
    return frame.split(" (", 1)[0]


def check_process(prof, p, scaled, expect_qualified):
    stacks = stacks_of(prof, p.script)
    assert stacks, f"no stacks for {p.label} ({p.script})"
    frames = [fr for f, _ in stacks for fr in f[4:]]
    hot = "Worker.hot_a" if expect_qualified else "hot_a"
    a = sum(c for f, c in stacks if any(frame_name(x) == hot for x in f))
    b = sum(c for f, c in stacks if any(frame_name(x) == hot[:-1] + "b" for x in f))
    assert_share(100.0 * a / max(a + b, 1), a + b, 75, f"{p.label}: hot_a:hot_b = {a}:{b}")
    # The executing line inside the function, in the absolute file the interpreter has.
    for name in ("hot_a", "hot_b"):
        lines = function_lines(APPS / "pyhot.py", name)  # the copies have the same lines
        for fr in frames:
            if frame_name(fr).endswith(name):
                m = re.fullmatch(r".* \((.+):(\d+)\)_\[p\]", fr)
                assert m and m[1] == p.script and int(m[2]) in lines, fr
    # Recursion, generator, C-extension calls through the standard library.
    # The recursion is 5 deep. The reader does not stop the target (like py-spy --nonblocking,
    # which gProfiler runs): a stack read while its thread returns and recurses again can, rarely,
    # splice two moments, so the depth is checked on most samples, not all.
    depths = Counter()
    for f, c in stacks:
        depths[sum(frame_name(x) == "recurse" for x in f)] += c
    assert depths.most_common(1)[0][0] == 5, depths
    assert sum(c for d, c in depths.items() if d > 5) <= 0.05 * sum(depths.values()), depths
    assert any(frame_name(x) == "squares" for x in frames)
    assert any(frame_name(x) == "dumps" for x in frames), "json.dumps frames"
    # Idle threads (sleep, lock, pipe read) and the main thread in join() never appear.
    for idle in ("idle_sleeper", "idle_lock_waiter", "idle_pipe_reader", "main"):
        assert not any(frame_name(x) == idle for x in frames), f"{idle} is idle"
    # Standard-library frames carry the exact version.
    ver = exact_version(p.exe)
    std = [x for x in frames if re.search(r"/lib/python3\.\d+/(?!site-packages)", x)]
    assert std and all(f"[standard-library=={ver}])_[p]" in x for x in std), std[:3]


def check_walked(p, scaled):
    # With the BPF sampler the frames are walked in the sampler at each sample (issue 12): one
    # mixed stack per sample (native frames may be above and below the Python frames), and the
    # header's coverage counts them. (Before: a runtime profile replaced the native stacks, with
    # Python frames only.)
    prof2, _ = scaled
    cov = {c["pid"]: c for c in prof2.header["polyprof"]["runtime_samples"]}
    assert p.pid in cov, f"no coverage entry for pid {p.pid}"
    c = cov[p.pid]
    assert (c["runtime"], c["mode"], c["profiler"]) == ("python", "builtin", "sampler-walk"), c
    stacks2 = stacks_of(prof2, p.script)
    assert sum(n for _, n in stacks2) == c["sampler_samples"] > 0
    assert sum(n for f, n in stacks2 if any(x.endswith("_[p]") for x in f)) == c["runtime_samples"]
    # Out of their turns these processes use ~3 % of a CPU (-f 499: 30-51 samples each in a 3 s
    # session, 97-100 % of them walked when measured); a walker that names nothing fails here.
    assert_not_starved(c["sampler_samples"], 10, f"walked samples of {p.label}")
    assert c["runtime_samples"] >= 0.8 * c["sampler_samples"], c
    assert not any(x == "[lost symbol]_[p]" for f, _ in stacks2 for x in f)


@pytest.mark.parametrize("label,exe", INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def test_builtin_sampler(session, label, exe):
    prof, procs, counts, _ = session
    qualified = tuple(map(int, exact_version(exe).split(".")[:2])) >= (3, 11)
    check_process(prof, procs[label], counts, qualified)


@pytest.mark.parametrize("label", [i[0] for i in INTERPRETERS] + ["namespace"])
def test_walked_in_the_bpf_sampler(session, label):
    _, procs, scaled, _ = session
    if label not in procs:
        pytest.skip("unshare or /usr/bin/python3.11 missing")
    check_walked(procs[label], scaled)


def test_process_in_its_own_mount_namespace(session):
    prof, procs, counts, _ = session
    if "namespace" not in procs:
        pytest.skip("unshare or /usr/bin/python3.11 missing")
    p = procs["namespace"]
    assert not os.path.exists(p.script), "the script exists only inside the namespace"
    check_process(prof, p, counts, True)


def test_truncated_stacks_are_marked_at_the_root_end(session):
    prof, procs, _, _ = session
    stacks = stacks_of(prof, procs["deep"].script)
    deep = [f[4:] for f, _ in stacks if any(frame_name(x) == "Worker.hot_a" for x in f)]
    assert deep, "samples in the deep process"
    # 256 frames from the leaf; fewer when a read failed mid-stack (the target moved on). Reads
    # do not stop the target: a stack read while the thread moves may, rarely, end early on a
    # spliced frame without the marker (docs/decisions.md), so most, not all, are checked.
    assert all(len(f) <= 257 for f in deep), [len(f) for f in deep]
    marked = sum(1 for f in deep if f[0] == "[truncated]")
    assert marked >= 0.9 * len(deep), [f[:2] for f in deep if f[0] != "[truncated]"][:5]
    full = [f for f in deep if len(f) == 257]
    assert len(full) >= 0.8 * len(deep), [len(f) for f in deep]
    for f in full:
        hot = [frame_name(x) for x in f].index("Worker.hot_a")
        assert hot > 200 and all(frame_name(x) == "recurse" for x in f[1:hot])


def test_process_exiting_mid_session_keeps_its_samples(session):
    prof, procs, _, stderr = session
    p = procs["exits"]
    assert p.app.proc.poll() == 0, "exited during the session"
    stacks = stacks_of(prof, p.script)
    assert sum(c for f, c in stacks if any(frame_name(x) == "Worker.hot_a" for x in f)) > 0
    assert not any(x.startswith("[Profiling") for f, _ in stacks for x in f)
    # nothing said about it but debug lines and its detection (no error, no skip)
    said = "\n".join(x for x in stderr.splitlines() if "DEBUG:" not in x)
    assert f"pid {p.pid} (" not in said.replace(f"python pid {p.pid} (python3): CPython", "")


def test_unsupported_python_gets_the_skip_stack(session):
    prof, procs, scaled, stderr = session
    if "3.7" not in procs:
        pytest.skip("no pyenv 3.7")
    stacks = stacks_of(prof, procs["3.7"].script)
    assert [f[4:] for f, _ in stacks] == [["[Profiling skipped: unsupported Python 3.7]"]]
    assert stderr.count(f"python pid {procs['3.7'].pid} ") == 1, "logged once"
    # With the system sampler, the skip frame follows the comm in each of its stacks.
    prof2, _ = scaled
    stacks2 = stacks_of(prof2, procs["3.7"].script)
    assert stacks2 and all(f[4] == "[Profiling skipped: unsupported Python 3.7]" for f, _ in stacks2)


@pytest.mark.parametrize("mode,extra", [("pyspy", []), ("auto", ["--perf-mode", "perf-event"])],
                         ids=["pyspy", "auto-perf-event"])
def test_pyspy_command_line_contract_with_the_stand_in(tmp_path, mode, extra):
    """Contract test against the stand-in (not py-spy): --python-mode pyspy, and auto without
    the BPF sampler when a py-spy is found, start it with gProfiler's exact command line, and
    its raw output is parsed, annotated and scaled. (With the BPF sampler, auto walks Python in
    the sampler and uses py-spy only for versions the walker does not support:
    test_auto_hands_unsupported_versions_to_pyspy.) The stand-in's fixed frames say nothing
    about accuracy: the real py-spy is tested in test_pyspy_real."""
    script = tmp_path / "pyhot_spy.py"
    shutil.copy(APPS / "pyhot.py", script)
    a = App(["/usr/bin/python3.11", str(script)])
    try:
        argv_log = tmp_path / "argv.log"
        env = dict(os.environ, POLYPROF_RESOURCES=str(pyspy_standin(tmp_path)),
                   PYSPY_STANDIN_ARGV_LOG=str(argv_log))
        out = tmp_path / "out"
        r = run_polyprof("-d", 3, "-f", 99, "-o", out, "--python-mode", mode, "-v", *extra,
                         env=env)
    finally:
        a.stop()
    argvs = [json.loads(x) for x in argv_log.read_text().splitlines()]
    mine = [v for v in argvs if v[v.index("-p") + 1] == str(a.pid)]
    assert len(mine) == 1
    v = mine[0]
    assert v[:11] == ["record", "-r", "50", "-d", "3", "--nonblocking", "--format", "raw", "-F",
                      "--output", v[10]]
    assert re.fullmatch(rf"/run/polyprof/sess-\d+-\w+/pyspy\.[a-z]{{16}}\.{a.pid}\.col", v[10])
    assert v[11:] == ["-p", str(a.pid), "--full-filenames", "--gil"]
    prof = last_profile(out)
    stacks = stacks_of(prof, str(script))
    # the stand-in's two fixed leaf frames, parsed as py-spy's raw format says
    assert {f[-1].split(" (")[0] for f, _ in stacks} >= {"standin_hot", "standin_cold"}
    assert all(f[4] == f"<module> ({script}:40)_[p]" or f[4].startswith("run (") for f, _ in stacks)
    ver = exact_version("/usr/bin/python3.11")
    assert any(f[4] == f"run (/usr/lib/python3.11/threading.py:975 [standard-library=={ver}])_[p]"
               for f, _ in stacks)
    counts = {int(m[1]): int(m[3]) for m in SAMPLER_LINE.finditer(r.stderr)}
    assert sum(c for _, c in stacks) == counts[a.pid]
    assert not any(Path("/run/polyprof").glob("sess-*/pyspy.*")), "output files removed"


def test_auto_hands_unsupported_versions_to_pyspy(tmp_path):
    """auto with the BPF sampler: a supported CPython is walked in the sampler (py-spy never
    started for it), an unsupported one (pyenv 3.7) is handed to py-spy (the stand-in), and
    polyprof.runtime_samples names the profiler that served each."""
    old = sorted(glob.glob("/root/.pyenv/versions/3.7.*/bin/python3.7"))
    if not old:
        pytest.skip("no pyenv 3.7")
    script = tmp_path / "pyhot_auto.py"
    shutil.copy(APPS / "pyhot.py", script)
    a = App(["/usr/bin/python3.11", str(script)])
    b = App([old[0], str(script)])
    try:
        argv_log = tmp_path / "argv.log"
        env = dict(os.environ, POLYPROF_RESOURCES=str(pyspy_standin(tmp_path)),
                   PYSPY_STANDIN_ARGV_LOG=str(argv_log))
        out = tmp_path / "out"
        run_polyprof("-d", 3, "-f", 99, "-o", out, "--python-mode", "auto", "--pids",
                     f"{a.pid},{b.pid}", env=env)
    finally:
        a.stop()
        b.stop()
    argvs = [json.loads(x) for x in argv_log.read_text().splitlines()]
    assert [v[v.index("-p") + 1] for v in argvs] == [str(b.pid)]
    cov = {c["pid"]: c for c in last_profile(out).header["polyprof"]["runtime_samples"]}
    assert cov[a.pid]["profiler"] == "sampler-walk" and cov[a.pid]["runtime_samples"] > 0
    assert cov[b.pid]["profiler"] == "py-spy" and cov[b.pid]["runtime_samples"] > 0


def test_pyspy_real(tmp_path):
    """The real py-spy (PyPI, pinned; `make deps` installs it) on a busy CPython 3.11: the
    3:1 split of pyhot.py's hot functions within +-8 points, its file and lines."""
    pyspy = PP_TOOLS / f"py-spy-{PYSPY_VERSION}" / "py-spy"
    if not pyspy.exists():
        pytest.skip(f"needs the real py-spy {PYSPY_VERSION} at {pyspy} (make deps installs it)")
    res = tool_resources(tmp_path, "python/py-spy", pyspy)
    script = tmp_path / "pyhot_real.py"
    shutil.copy(APPS / "pyhot.py", script)
    a = App(["/usr/bin/python3.11", str(script)])
    try:
        env = dict(os.environ, POLYPROF_RESOURCES=str(res))
        out = tmp_path / "out"
        r = run_polyprof("-d", 14, "-f", 99, "-o", out, "--python-mode", "pyspy",
                         "--perf-mode", "disabled", "--pids", a.pid, "-v", env=env)
    finally:
        a.stop()
    stacks = stacks_of(last_profile(out), str(script))
    assert stacks, r.stderr[-3000:]
    frames = [x for f, _ in stacks for x in f[4:]]
    assert not any(x.startswith("[Profiling") for x in frames), frames[:5]
    a_n = sum(c for f, c in stacks if any(frame_name(x) == "Worker.hot_a" or
                                          frame_name(x) == "hot_a" for x in f))
    b_n = sum(c for f, c in stacks if any(frame_name(x) == "Worker.hot_b" or
                                          frame_name(x) == "hot_b" for x in f))
    assert_share(100.0 * a_n / max(a_n + b_n, 1), a_n + b_n, 75, f"py-spy hot_a:hot_b {a_n}:{b_n}")
    lines = function_lines(APPS / "pyhot.py", "hot_a")
    hot_frames = [x for x in frames if frame_name(x).endswith("hot_a")]
    m = re.fullmatch(r".* \((.+):(\d+)\)_\[p\]", hot_frames[0])
    assert m and m[1] == str(script) and int(m[2]) in lines, hot_frames[0]


def test_pyspy_error_stack_for_a_process_gone_before_it_attached(tmp_path):
    """The stand-in kills its target first (the race of a process exiting between discovery and
    py-spy's start): without the system sampler, the error stack is written as it is."""
    script = tmp_path / "pyhot_gone.py"
    shutil.copy(APPS / "pyhot.py", script)
    a = App(["/usr/bin/python3.11", str(script)])
    try:
        env = dict(os.environ, POLYPROF_RESOURCES=str(pyspy_standin(tmp_path)),
                   PYSPY_STANDIN_KILL_TARGET="1")
        out = tmp_path / "out"
        run_polyprof("-d", 2, "-o", out, "--python-mode", "pyspy", "--perf-mode", "disabled",
                     "--pids", a.pid, env=env)
    finally:
        a.stop()
    stacks = stacks_of(last_profile(out), str(script))
    assert [(f[4:], c) for f, c in stacks] == [
        (["[Profiling error: process exited before py-spy started]"], 1)]


def test_low_coverage_keeps_native_stacks_with_the_stand_in(tmp_path):
    """Issue 30: a runtime profiler that covers a few of a busy process's samples (the stand-in
    writes 5 samples; the sampler about 3000 at 499 Hz) does not become a confident profile: its 5
    samples stay 5, the rest keep the sampler's native stacks under a "[Profiling error: py-spy
    covered 5 of N samples]" frame right below the process, the header's coverage entry says so
    (native_kept), and the flame graph's coverage table shows the process as kept native."""
    script = tmp_path / "pyhot_few.py"
    shutil.copy(APPS / "pyhot.py", script)
    a = App(["/usr/bin/python3.11", str(script)])
    try:
        env = dict(os.environ, POLYPROF_RESOURCES=str(pyspy_standin(tmp_path)),
                   PYSPY_STANDIN_SAMPLES="5")
        out = tmp_path / "out"
        r = run_polyprof("-d", 6, "-f", 499, "-o", out, "--python-mode", "pyspy", "--pids",
                         a.pid, "-v", env=env)
    finally:
        a.stop()
    prof = last_profile(out)
    stacks = stacks_of(prof, str(script))
    counts = {int(m[1]): int(m[3]) for m in SAMPLER_LINE.finditer(r.stderr)}
    total = counts[a.pid]
    assert total >= 400, f"the sampler counted {total} samples (too few to judge 5 runtime ones)"
    assert {int(m[1]): int(m[2]) for m in SAMPLER_LINE.finditer(r.stderr)}[a.pid] == 5, \
        "the stand-in's 5 samples"
    assert sum(c for _, c in stacks) == total, "the process total stays the sampler's"
    py = sum(c for f, c in stacks if any(x.endswith("_[p]") for x in f[4:]))
    assert py == 5, f"the runtime's 5 samples are not scaled up: {py}"
    marker = f"[Profiling error: py-spy covered 5 of {total} samples]"
    marked = [(f, c) for f, c in stacks if f[4] == marker]
    assert sum(c for _, c in marked) == total - 5, (marker, stacks[:5])
    assert all(len(f) > 5 for f, _ in marked), "the native frames follow the marker"
    cov = [c for c in prof.header["polyprof"]["runtime_samples"] if c["pid"] == a.pid]
    assert len(cov) == 1 and cov[0]["runtime_samples"] == 5, cov
    assert cov[0]["native_kept"] == {"runtime_samples": 5, "sampler_samples": total}, cov
    # the flame graph: the marker frame under the process, the coverage table's row
    from browser import Browser
    with Browser((out / "last_flamegraph.html").resolve().as_uri()) as b:
        b.wait_js("document.body.dataset.ready === '1'")
        assert b.eval(f"Array.from(document.querySelectorAll('#chart .f'))"
                      f".some(e => e.textContent === {marker!r})")
        row = b.eval(f"(() => {{ const r = document.querySelector("
                     f"'#coverage tr[data-pid=\"{a.pid}\"]'); "
                     f"return r && [r.className, r.innerText]; }})()")
        assert row and row[0] == "low" and f"{total} samples (5 runtime samples)" in row[1], row
        assert b.eval("document.getElementById('coverage').open")


def test_a_lower_rate_runtime_profiler_is_not_marked(tmp_path):
    """Issue 30: the coverage rule does not depend on the profilers' rates: a runtime profiler
    that samples at a fraction of the sampler's rate (the stand-in writes 40 samples, 2 to 4 % of
    the sampler's at 499 Hz, less than JFR's 7.5 % that the first threshold marked) is a healthy profile, scaled to
    the sampler's count without a "[Profiling error: ...]" frame."""
    script = tmp_path / "pyhot_lowrate.py"
    shutil.copy(APPS / "pyhot.py", script)
    a = App(["/usr/bin/python3.11", str(script)])
    try:
        env = dict(os.environ, POLYPROF_RESOURCES=str(pyspy_standin(tmp_path)),
                   PYSPY_STANDIN_SAMPLES="40")
        out = tmp_path / "out"
        r = run_polyprof("-d", 4, "-f", 499, "-o", out, "--python-mode", "pyspy", "--pids",
                         a.pid, "-v", env=env, check=False)
    finally:
        a.stop()
    assert r.returncode == 0, r.stderr
    prof = last_profile(out)
    stacks = stacks_of(prof, str(script))
    m = {int(m[1]): (int(m[2]), int(m[3])) for m in SAMPLER_LINE.finditer(r.stderr)}[a.pid]
    assert m[0] == 40 and m[1] >= 400, f"runtime, sampler samples: {m}"
    assert not [f for f, _ in stacks if any(x.startswith("[Profiling error") for x in f)], \
        stacks[:5]
    py = sum(c for f, c in stacks if any(x.endswith("_[p]") for x in f[4:]))
    assert py == m[1], f"the runtime's 40 samples are scaled to the sampler's {m[1]}: {py}"
    cov = [c for c in prof.header["polyprof"]["runtime_samples"] if c["pid"] == a.pid]
    assert len(cov) == 1 and "native_kept" not in cov[0], cov
