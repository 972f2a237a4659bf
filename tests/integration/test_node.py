"""Node.js: JavaScript frames of processes started without any perf flag (--nodejs-mode
attach-maps: the inspector, opened with SIGUSR1, loads the perf-map addon), and of processes
started with --perf-prof (a jitdump, --nodejs-mode perf). Real Node (the installed one), real
sampler. Each test checks what the attach must leave behind: nothing (no inspector port, no
perf map polyprof caused, no copied addon), and a process that runs on."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, App, assert_share, last_profile, run_polyprof, wait_for

NODE = shutil.which("node")
ADDON = ROOT / "resources" / "node" / "linux-perf"

pytestmark = [
    pytest.mark.skipif(not NODE, reason="node is not installed"),
]

# Two functions called from the event loop by turns, alpha doing three times beta's work: a
# 75/25 CPU split between them. Each runs many short calls (no long loop: code V8 optimized
# on stack (OSR) before the attach is not in the addon's initial log, docs/node.md) and is too
# large for TurboFan to inline into its caller (more than 460 bytes of bytecode).
_UNROLLED = "\n".join(f"    x += Math.sqrt(i * {k + 1} + x % 7);" for k in range(60))
SPLIT_BODY = f"""
function alpha() {{
  let x = 0;
  for (let i = 0; i < 60; i++) {{
{_UNROLLED}
  }}
  setImmediate(beta);
  return x;
}}
function beta() {{
  let x = 0;
  for (let i = 0; i < 20; i++) {{
{_UNROLLED}
  }}
  setImmediate(alpha);
  return x;
}}
alpha();
console.log("ready " + process.pid);
"""


def node_app(tmp_path, kind="cjs", body=SPLIT_BODY):
    path = tmp_path / ("app.mjs" if kind == "esm" else "app.js")
    src = body
    if kind == "esm":
        src = "import { cpus } from 'node:os';\nvoid cpus;\n" + body
    path.write_text(src)
    return path


def listeners(pid):
    """Ports of the TCP sockets pid listens on (read from its own network namespace)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            m = re.fullmatch(r"socket:\[(\d+)\]", t)
            if m:
                inodes.add(m.group(1))
    except FileNotFoundError:
        return set()
    ports = set()
    for tab in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{tab}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and f[9] in inodes:
                ports.add(int(f[1].split(":")[1], 16))
    return ports


def addon_copies():
    return [p for p in Path("/tmp").glob("polyprof-*/linux-perf-*.node")]


def js_frames(stacks, name):
    """Samples with a JavaScript frame of function name (a perf map or jitdump entry: the name,
    then the script)."""
    pat = re.compile(rf"^[A-Za-z]+:[~^*+]?{name} \S+\.m?js:\d+")
    return sum(c for f, c in stacks if any(pat.match(x) for x in f))


def split_of(prof):
    mine = prof.for_comm("node")
    return js_frames(mine, "alpha"), js_frames(mine, "beta")


def assert_clean(pid):
    """What an attach must not leave behind in a live process."""
    assert not Path(f"/proc/{pid}/root/tmp/perf-{pid}.map").exists(), "perf map removed"
    assert not listeners(pid), "no inspector port left listening"
    assert not addon_copies(), "copied addon removed"
    assert Path(f"/proc/{pid}").exists(), "the process runs on"


def profile_split(outdir, app, extra=()):
    r = run_polyprof("-d", "10", "-f", "399", "-o", outdir, "--no-flamegraph",
                     "--nodejs-mode", "attach-maps", "--pids", app.pid, *extra)
    prof = last_profile(outdir)
    return r, prof


@pytest.fixture
def node(tmp_path):
    apps = []

    def _start(*argv, **popen):
        a = App([str(x) for x in argv], **popen)
        apps.append(a)
        return a

    yield _start
    for a in apps:
        a.stop()


def need_addon():
    if not list(ADDON.glob("*/*/linux-perf.node")):
        pytest.fail(f"the perf-map addon is missing under {ADDON}: run `make deps`")


@pytest.mark.parametrize("kind", ["cjs", "esm"])
def test_attach_maps_names_hot_functions(tmp_path, outdir, node, kind):
    """A Node process started without perf flags: after one session its two hot functions are
    named with their 75/25 CPU split, in CommonJS and ES-module entry points alike; the
    inspector is closed, the map and the addon copy are gone, the process runs on."""
    need_addon()
    app = node(NODE, node_app(tmp_path, kind))
    assert not listeners(app.pid)
    r, prof = profile_split(outdir, app)
    a, b = split_of(prof)
    assert a + b > 0, f"no named JS frames: {r.stderr[-2000:]}"
    script = "file://" if kind == "esm" else ""
    assert any(re.fullmatch(rf"Function:alpha {script}{tmp_path}/app\.m?js:\d+", x)
               for f, _ in prof.for_comm("node") for x in f), "function, file and line"
    assert_share(100.0 * a / (a + b), a + b, 75, "alpha's share")
    assert_clean(app.pid)


def test_attach_maps_in_own_network_namespace(tmp_path, outdir, node):
    """The inspector of a process in its own network namespace binds 127.0.0.1 there: polyprof
    reaches it from a thread inside that namespace."""
    need_addon()
    app_js = node_app(tmp_path)
    app = node("unshare", "-n", "sh", "-c", f"ip link set lo up && exec {NODE} {app_js}")
    assert os.readlink(f"/proc/{app.pid}/ns/net") != os.readlink("/proc/self/ns/net")
    r, prof = profile_split(outdir, app)
    a, b = split_of(prof)
    assert a + b > 0, f"no named JS frames: {r.stderr[-2000:]}"
    assert_share(100.0 * a / (a + b), a + b, 75, "alpha's share")
    assert_clean(app.pid)


def test_process_exiting_mid_attach(tmp_path, outdir, node):
    """A process that exits as soon as its inspector opens: the session completes, nothing is
    left behind."""
    need_addon()
    js = tmp_path / "quitter.js"
    js.write_text("const inspector = require('inspector');\n"
                  "setInterval(() => { if (inspector.url()) process.exit(0); }, 1);\n"
                  "console.log('ready ' + process.pid);\n")
    app = node(NODE, js)
    pid = app.pid
    r = run_polyprof("-d", "3", "-o", outdir, "--no-flamegraph", "--nodejs-mode", "attach-maps",
                     "--pids", pid)
    assert app.proc.wait(timeout=10) == 0, "it saw its inspector open and exited"
    assert not Path(f"/tmp/perf-{pid}.map").exists()
    assert not addon_copies()
    assert re.search(rf"nodejs: pid {pid} \(node\): (the process exited|cannot attach)", r.stderr), \
        r.stderr[-2000:]


def test_sigusr1_never_sent_to_a_program_that_does_not_handle_it(tmp_path, outdir):
    """node_exporter and the like match the Node rule by name but die of SIGUSR1: they are never
    signalled; one that says --disable-sigusr1 (NODE_OPTIONS here) gets a skipped stack."""
    exporter = tmp_path / "node-20"
    shutil.copy("/bin/sleep", exporter)
    p = subprocess.Popen([str(exporter), "60"])
    disabled = tmp_path / "node_22"
    # the interpreter's own binary (shutil.which may find a pyenv shim, a script)
    shutil.copy(os.path.realpath(sys.executable), disabled)
    code = ("import time\nprint('ready', flush=True)\nend = time.time() + 60\n"
            "while time.time() < end: sum(range(1000))\n")
    q = subprocess.Popen([str(disabled), "-c", code], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, NODE_OPTIONS="--disable-sigusr1"))
    try:
        assert q.stdout.readline().startswith("ready")
        r = run_polyprof("-d", "3", "-o", outdir, "--no-flamegraph", "--nodejs-mode",
                         "attach-maps", "--pids", f"{p.pid},{q.pid}")
        assert p.poll() is None, "the SIGUSR1-less program was not signalled"
        assert q.poll() is None
        assert "does not handle SIGUSR1" in r.stderr
        prof = last_profile(outdir)
        skipped = [f for f, _ in prof.for_comm("node_22")
                   if any(x.startswith("[Profiling skipped: started with --disable-sigusr1")
                          for x in f)]
        assert skipped, [f for f, _ in prof.stacks][:5]
        assert not any("[Profiling" in x for f, _ in prof.for_comm("node-20") for x in f)
    finally:
        for x in (p, q):
            x.kill()
            x.wait()
        q.stdout.close()


def test_user_inspector_is_used_and_left_open(tmp_path, outdir, node):
    """A process whose inspector the user opened (--inspect=127.0.0.1:PORT): polyprof uses it
    and leaves it open."""
    need_addon()
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    app = node(NODE, f"--inspect=127.0.0.1:{port}", node_app(tmp_path),
               stderr=subprocess.DEVNULL)
    wait_for(lambda: port in listeners(app.pid), 10, "the user's inspector")
    r, prof = profile_split(outdir, app)
    a, b = split_of(prof)
    assert a + b > 0, r.stderr[-2000:]
    assert listeners(app.pid) == {port}, "the user's inspector stays open"
    assert not Path(f"/tmp/perf-{app.pid}.map").exists()


def test_perf_prof_jitdump(tmp_path, outdir, node):
    """--perf-prof writes a jitdump (jit-<pid>.dump in the working directory, mapped by the
    process) instead of a perf map: its code-load records name the JIT frames."""
    app = node(NODE, "--perf-prof", "--interpreted-frames-native-stack", node_app(tmp_path),
               cwd=tmp_path)
    wait_for(lambda: list(tmp_path.glob("jit-*.dump")), 10, "the jitdump")
    run_polyprof("-d", "8", "-f", "399", "-o", outdir, "--no-flamegraph", "--nodejs-mode",
                 "perf", "--pids", app.pid)
    prof = last_profile(outdir)
    a, b = split_of(prof)
    assert a > 0 and b > 0, [f for f, _ in prof.for_comm("node")][:5]
    assert any(re.match(r"JS:[~^*+]?alpha .*app\.js:\d+:\d+$", x)
               for f, _ in prof.for_comm("node") for x in f)
    assert_share(100.0 * a / (a + b), a + b, 75, "alpha's share")


def test_sigkilled_polyprof_left_map_is_taken_over(tmp_path, outdir, node):
    """polyprof SIGKILLed after an attach leaves the process writing its map (and the inspector
    closed); the next run takes the addon over, names the frames, and at its exit stops it and
    removes the map."""
    need_addon()
    app = node(NODE, node_app(tmp_path))
    pmap = Path(f"/tmp/perf-{app.pid}.map")
    p = subprocess.Popen([str(ROOT / "build" / "polyprof"), "-d", "30", "-o", str(outdir),
                          "--no-flamegraph", "--nodejs-mode", "attach-maps", "--pids",
                          str(app.pid)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: pmap.exists() and pmap.stat().st_size > 0, 30, "the perf map")
        wait_for(lambda: not listeners(app.pid), 10, "the inspector closed after the attach")
        # the attach is over once its copy of the addon is removed too (a SIGKILL between the
        # two leaves that copy in polyprof's private directory: docs/node.md, limits)
        wait_for(lambda: not addon_copies(), 10, "the attach's copy of the addon removed")
    finally:
        p.kill()
        p.wait()
        p.stderr.close()
    assert pmap.exists(), "a killed polyprof cannot remove the map"
    size = pmap.stat().st_size
    r = run_polyprof("-d", "3", "-f", "399", "-o", outdir, "--no-flamegraph", "--nodejs-mode",
                     "attach-maps", "--pids", app.pid)
    assert "left on by an earlier polyprof" in r.stderr, r.stderr[-2000:]
    a, b = split_of(last_profile(outdir))
    assert a > 0 and b > 0
    assert size > 0
    assert_clean(app.pid)


def test_perf_basic_prof_map_is_used_and_left_alone(tmp_path, outdir, node):
    """A process started with --perf-basic-prof writes its own map: named frames in every mode;
    attach-maps neither signals it nor removes its map."""
    err = open(tmp_path / "stderr", "w")
    app = node(NODE, "--perf-basic-prof", node_app(tmp_path), stderr=err)
    err.close()
    pmap = Path(f"/tmp/perf-{app.pid}.map")
    try:
        wait_for(pmap.exists, 10, "its perf map")
        run_polyprof("-d", "4", "-f", "399", "-o", outdir, "--no-flamegraph", "--nodejs-mode",
                     "attach-maps", "--pids", app.pid)
        a, b = split_of(last_profile(outdir))
        assert a > 0 and b > 0
        assert any(re.match(r"JS:[~^*+]?alpha .*app\.js:\d+:\d+$", x)
                   for f, _ in last_profile(outdir).for_comm("node") for x in f)
        assert pmap.exists(), "its own map stays"
        assert "Debugger listening" not in (tmp_path / "stderr").read_text(), "not signalled"
    finally:
        pmap.unlink(missing_ok=True)


# Tasks of 1.5 s, one after the other: the inspector that SIGUSR1 opens mid-task (a V8
# interrupt) is requested a second time through the event loop, which runs only once the task
# ends (docs/node.md, "Closing the inspector"). Each task prints a line, so a test can wait
# until the event loop has turned.
LONG_TASKS = """
let n = 0;
function work() {
  const end = Date.now() + 1500;
  let x = 0;
  while (Date.now() < end) for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
  console.log("task " + (++n));
  setImmediate(work);
}
console.log("ready " + process.pid);
setImmediate(work);
"""


def listener_inodes(pid):
    """The socket inodes pid listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    found = set()
    for tab in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{tab}").read_text().splitlines()[1:]:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and f[9] in inodes:
                found.add(f[9])
    return found


def tasks_done(app):
    return sum(1 for x in list(app.out.lines) if x.startswith("task "))


@pytest.mark.parametrize("user_inspector", [False, True])
def test_inspector_closed_after_every_session(tmp_path, outdir, node, user_inspector):
    """Several sessions against one Node busy in long tasks, started without flags: after each
    polyprof exit, once the process's event loop has turned twice, it listens on no socket (the
    inspector SIGUSR1 opened, at the attach and at the stop, is closed for good; it used to
    re-open after the close: 3 of 3 sessions). One started with --inspect keeps that inspector,
    the same socket, throughout."""
    need_addon()
    js = tmp_path / "long.js"
    js.write_text(LONG_TASKS)
    if user_inspector:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        app = node(NODE, f"--inspect=127.0.0.1:{port}", js, stderr=subprocess.DEVNULL)
        wait_for(lambda: port in listeners(app.pid), 10, "the user's inspector")
    else:
        app = node(NODE, js)
    before = listener_inodes(app.pid)
    assert bool(before) == user_inspector
    for session in range(3):
        r = run_polyprof("-d", "3", "-o", outdir, "--no-flamegraph", "--nodejs-mode",
                         "attach-maps", "--pids", app.pid)
        assert f"nodejs: pid {app.pid} writes its perf map now" in r.stderr, r.stderr[-2000:]
        assert " ERROR: " not in r.stderr, r.stderr[-2000:]
        done = tasks_done(app)
        wait_for(lambda: tasks_done(app) >= done + 2, 20, "the event loop to turn twice")
        assert listener_inodes(app.pid) == before, (
            f"session {session + 1}: the inspector polyprof opened still listens"
            if not user_inspector else f"session {session + 1}: the user's inspector as it was")
    assert not Path(f"/tmp/perf-{app.pid}.map").exists()
    assert app.proc.poll() is None, "the process runs on"
