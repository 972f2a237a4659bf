"""The built-in Python sampler in perf-event mode (--perf-mode perf-event --python-mode builtin;
docs/python-sampler.md, "CPU mode with the perf-event sampler"): no in-sampler walk, so a
user-space thread reads Python stacks, but only those of the threads the perf samples name,
each counted with its number of samples; a process none of whose threads were sampled is not
read at all (the debug line "python pid N: R stack reads, S samples of its threads ..." says
what was read)."""
import os
import re
import shutil
from collections import Counter

import pytest

from conftest import APPS, App, assert_share, last_profile, run_polyprof

READS = re.compile(r"python pid (\d+): (\d+) stack reads, (\d+) samples of its threads by the "
                   r"perf-event sampler, (\d+) of them counted on Python stacks")
IDLE = "import time; print('ready', flush=True); time.sleep(600)"


def name(frame):
    return frame.split(" (", 1)[0]


def child_of(pid):
    return int(open(f"/proc/{pid}/task/{pid}/children").read().split()[0])


def profile(tmp_path, argvs, seconds, pid_of=lambda a: a.pid):
    apps = []
    try:
        for argv in argvs:
            apps.append(App([str(x) for x in argv]))
        out = tmp_path / "out"
        r = run_polyprof("-d", seconds, "-f", 99, "-o", out, "--perf-mode", "perf-event",
                         "--python-mode", "builtin", "-v", "--pids",
                         ",".join(str(pid_of(a)) for a in apps))
    finally:
        for a in apps:
            a.stop()
    reads = {int(m[1]): tuple(map(int, m.groups()[1:])) for m in READS.finditer(r.stderr)}
    return last_profile(out), apps, reads, r.stderr


def test_split_and_an_idle_process_that_is_never_read(tmp_path):
    """pyhot.py (hot_a does three times hot_b's work) beside an idle python3: the 3:1 split
    holds, idle threads never appear, and the idle process gets no sample and no read."""
    script = tmp_path / "pyhot_perf.py"
    script.write_bytes((APPS / "pyhot.py").read_bytes())
    prof, (busy, idle), reads, err = profile(
        tmp_path, [["/usr/bin/python3", script], ["/usr/bin/python3", "-c", IDLE]], 12)
    assert "reading the threads the perf-event sampler sampled" in err
    assert prof.header["polyprof"]["sampler"] == "perf-event"
    assert prof.header["polyprof"]["sampled_threads_dropped"] == 0
    assert busy.pid in reads and idle.pid in reads, err[-3000:]
    nreads, nsamples, counted = reads[busy.pid]
    assert nreads > 0 and nsamples > 0 and counted > 0.9 * nsamples, reads[busy.pid]
    assert reads[idle.pid] == (0, 0, 0), reads[idle.pid]
    frames_of = [(f, c) for f, c in prof.stacks if any(f"({script})" in x for x in f)]
    a = sum(c for f, c in frames_of if any(name(x) == "Worker.hot_a" for x in f))
    b = sum(c for f, c in frames_of if any(name(x) == "Worker.hot_b" for x in f))
    assert_share(100.0 * a / max(a + b, 1), a + b, 75, f"hot_a:hot_b = {a}:{b}")
    for f, _ in frames_of:
        for x in f:
            assert name(x) not in ("idle_sleeper", "idle_lock_waiter", "idle_pipe_reader"), f


def test_each_thread_its_own_stack(tmp_path):
    """4 threads in zlib.compress (GIL released) and one pure-Python thread: each thread's
    samples are counted on its own stack (never the GIL holder's), so the compressing threads,
    4 against 1 on the CPUs, have most of them."""
    exe = "/root/.pyenv/versions/3.12.1/bin/python3.12"
    if not os.access(exe, os.X_OK):
        exe = "/usr/bin/python3.11"
    prof, (app,), reads, err = profile(tmp_path, [[exe, APPS / "pywalk_threads.py"]], 6)
    script = str(APPS / "pywalk_threads.py")
    stacks = [(f, c) for f, c in prof.stacks if any(f"({script}:" in x for x in f)]
    leaf = Counter()
    for f, n in stacks:
        py = [name(x) for x in f if x.endswith("_[p]")]
        leaf[py[-1]] += n
        assert not ("compressor" in py and "pure_python" in py), py
    assert leaf["compressor"] > 0 and leaf["pure_python"] > 0, leaf
    assert leaf["compressor"] > 2 * leaf["pure_python"], leaf
    nreads, nsamples, counted = reads[app.pid]
    assert counted > 0.9 * nsamples, reads[app.pid]


def test_process_in_its_own_pid_namespace(tmp_path):
    """A Python process in its own pid namespace: its thread states hold the tids of that
    namespace, the perf samples polyprof's; the sampler translates them (NSpid) and counts
    its samples on its stacks."""
    if not shutil.which("unshare"):
        pytest.skip("unshare missing")
    script = tmp_path / "pyhot_ns.py"
    script.write_bytes((APPS / "pyhot.py").read_bytes())
    pids = {}

    def inner(a):
        pids[a.pid] = child_of(a.pid)
        return pids[a.pid]

    prof, (app,), reads, err = profile(
        tmp_path, [["unshare", "--pid", "--fork", "--kill-child", "/usr/bin/python3", script]], 5,
        pid_of=inner)
    assert app.first_line.split()[1] == "1", app.first_line  # pid 1 in its namespace
    nreads, nsamples, counted = reads[pids[app.pid]]
    assert nsamples > 0 and counted > 0.9 * nsamples, reads[pids[app.pid]]
    assert any(name(x) == "Worker.hot_a" and f"({script}:" in x
               for f, _ in prof.stacks for x in f)
