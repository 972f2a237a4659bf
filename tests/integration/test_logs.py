"""The log a user reads: the start-up line of runtime profilers and modes, one summary line per
session, and a warning that comes back every session for the same process logged once, then
counted; a burst of processes failing the same way logged as one line per cause. The real
binary, real CPython processes, and a py-spy stand-in that always fails (so that every session
has the same per-process warning); a Pyroscope receiver for the upload status."""
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import APPS, POLYPROF, App, LineReader, tool_resources
from receivers import PyroscopeReceiver

FAILING_PYSPY = """#!/bin/sh
echo "Error: Failed to suspend process (a stand-in that always fails)" >&2
exit 1
"""

SUMMARY = re.compile(
    r"INFO: polyprof: session summary: 1 process \(python 1\); (\d+) samples?; "
    r"runtime stacks: python (\d+) of 1(?: \((\d+) errors?\))?; "
    r"upload: Pyroscope (\d+) sent, (\d+) waiting(?:; (\d+) repeated messages? not logged)?$")


@pytest.fixture
def pyro():
    r = PyroscopeReceiver()
    yield r
    r.stop()


def col_samples(path):
    lines = Path(path).read_text().split("\n")[1:]
    return sum(int(line.rpartition(" ")[2]) for line in lines if line)


def test_three_sessions_warning_once_then_counted_summary_per_session(tmp_path, pyro):
    res = tool_resources(tmp_path, "python/py-spy", text=FAILING_PYSPY)
    app = App(["/usr/bin/python3.11", str(APPS / "pyhot.py")])
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYPROF_")}
    env["POLYPROF_RESOURCES"] = str(res)
    p = subprocess.Popen(
        [str(POLYPROF), "-c", "-d", "1", "-f", "49", "-o", str(out), "--pids", str(app.pid),
         "--python-mode", "pyspy", "--no-java", "--no-ruby", "--no-php", "--no-flamegraph",
         "--pyroscope-server", pyro.url, "--spool-dir", str(tmp_path / "spool")],
        stderr=subprocess.PIPE, text=True, env=env)
    log = LineReader(p.stderr)
    try:
        log.wait_line(lambda x: "session summary" in x and len(
            [y for y in log.lines if "session summary" in y]) >= 3, 60, "three sessions")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        app.stop()
    text = log.text()
    assert p.returncode == 0, text
    lines = text.splitlines()

    # the start-up line: the runtime profilers and their modes, once
    startup = [x for x in lines if "INFO: polyprof: runtime profilers:" in x]
    assert len(startup) == 1, text
    assert startup[0].endswith("runtime profilers: python (pyspy: py-spy); disabled: java, "
                               "ruby, php, dotnet, nodejs"), startup[0]

    # the per-process warning: logged once although every session has it
    warn = re.compile(rf"WARNING: polyprof: python pid {app.pid} \(.*\): py-spy exited with code "
                      r"1; stderr: Error: Failed to suspend process")
    assert len([x for x in lines if warn.search(x)]) == 1, text

    # one summary per session, after its file; the numbers are the session's
    sessions = []
    saved = None
    for x in lines:
        m = re.search(r"Saved collapsed stacks to (\S+)", x)
        if m:
            saved = m.group(1)
        if "session summary" in x:
            m = SUMMARY.search(x)
            assert m and saved, (x, text)
            sessions.append((saved, m))
            saved = None
    assert len(sessions) >= 3, text
    for i, (col, m) in enumerate(sessions):
        samples, runtime, errors, sent, waiting, repeats = (
            int(g) if g else 0 for g in m.groups())
        assert samples == col_samples(col), (i, m.group(0))
        assert sent + waiting == i + 1, ("every session submitted is sent or waiting", m.group(0))
        if i < 3:  # the last session may be cut short by SIGTERM
            assert (runtime, errors) == (0, 1), m.group(0)
            assert repeats == (0 if i == 0 else 1), ("the warning is counted", m.group(0))
    # at exit: the repeats counted over the run, in one line
    total = sum(int(m.group(6) or 0) for _, m in sessions)
    assert lines[-1].endswith(f"INFO: polyprof: {total} repeated per-process messages were "
                              "counted and not logged (each is logged once per process and "
                              "hour)"), lines[-3:]


SLEEPER = "import time\nprint('ready', flush=True)\ntime.sleep(120)\n"


def test_burst_of_processes_one_warning_line_per_cause(tmp_path):
    """Issue 28: 50 processes failing the same way at once (a py-spy that always fails, for 50
    Python processes) give one WARNING line for that cause, with the count and the pids, not 50
    lines; a process failing another way (another py-spy error) keeps its own line."""
    res = tool_resources(tmp_path, "python/py-spy", text=FAILING_PYSPY)
    apps = []
    try:
        for _ in range(51):
            apps.append(App(["/usr/bin/python3.11", "-c", SLEEPER]))
        odd = apps[-1]
        pids = [a.pid for a in apps]
        # the odd one's py-spy fails with another message: another cause
        (res / "python" / "py-spy").write_text(FAILING_PYSPY.replace(
            "exit 1", f'case "$*" in *"-p {odd.pid} "*) echo "Error: another cause" >&2;; esac\n'
            "exit 1"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("POLYPROF_")}
        env["POLYPROF_RESOURCES"] = str(res)
        r = subprocess.run(
            [str(POLYPROF), "-d", "2", "-f", "49", "-o", str(tmp_path / "out"), "--pids",
             ",".join(map(str, pids)), "--python-mode", "pyspy", "--no-java", "--no-ruby",
             "--no-php", "--no-flamegraph"], capture_output=True, text=True, env=env, timeout=90)
    finally:
        for a in apps:
            a.stop()
    assert r.returncode == 0, r.stderr[-3000:]
    spy = [x for x in r.stderr.splitlines() if "py-spy exited with code 1" in x]
    assert spy and all("WARNING: polyprof: " in x for x in spy), r.stderr[-3000:]
    same = [x for x in spy if "another cause" not in x]
    assert len(same) == 1, "\n".join(spy[:60])
    m = re.search(r"WARNING: polyprof: python pid (\d+) \(python3\.11\): py-spy exited with code "
                  r"1; stderr: Error: Failed to suspend process.* \(and 49 more processes: pids "
                  r"((?:\d+, ){9}\d+), \.\.\.\)$", same[0])
    assert m, same[0]
    shown = [int(m[1])] + [int(x) for x in m[2].split(", ")]
    assert len(set(shown)) == 11 and set(shown) <= set(pids[:-1]), same[0]
    other = [x for x in spy if "another cause" in x]
    assert len(other) == 1 and f"python pid {odd.pid} " in other[0], spy
    assert "more process" not in other[0], other[0]
