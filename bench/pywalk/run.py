#!/usr/bin/env python3
"""Benchmark of the in-sampler Python walker (issue 12; docs/python-bpf.md), printed as ratios
measured side by side in one run. Run as root, under the test lock:

    flock /tmp/polyprof-test.lock python3 bench/pywalk/run.py [--seconds N] [--python EXE]
        [--cases 1234] [--polyprof BUILD/polyprof]

(--cases: which of the measures below to run; --polyprof: another build, e.g. to compare the
build of a change with the one before it, alternately.)

(1) polyprof CPU with 100 idle Python processes vs none, and with one Python process holding
    2,000 idle threads vs none (target: <= 1.1x each);
(2) polyprof vs the real py-spy (gProfiler's command line, one per process) on the same 4 busy
    Python processes: CPU of each;
(3) BPF time per sample (kernel.bpf_stats_enabled: run_time_ns / run_cnt of pp_sample) with
    and without the Python walk of a 50-frame-deep busy process (target: <= 10 us added);
(4) the target's own throughput (iterations per CPU second) with and without profiling.

--perf-event runs case (1) only, with --perf-mode perf-event --python-mode builtin (the
user-space sampler driven by the perf samples; docs/python-sampler.md); --polyprof PATH runs
another build (e.g. a copy of the previous one, for a before/after).
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
EXTRA = []  # arguments added to every polyprof command line (--perf-event)
PYSPY = Path("/var/cache/polyprof/tools/py-spy-0.4.3/py-spy")

IDLE = "import time\ntime.sleep(600)\n"
THREADS = ("import threading, time\nev = threading.Event()\n"
           "ts = [threading.Thread(target=ev.wait, daemon=True) for _ in range(2000)]\n"
           "[t.start() for t in ts]\nprint('ready', flush=True)\ntime.sleep(600)\n")
BUSY = ("import sys\nsys.setrecursionlimit(10000)\n"
        "def leaf():\n    s = 0\n    for i in range(1000):\n        s += i * i\n    return s\n"
        "def chain(d):\n    return leaf() if d == 0 else chain(d - 1)\n"
        "print('ready', flush=True)\nwhile True:\n    chain(int(sys.argv[1]))\n")


def start(py, code, *args, wait_ready=False):
    p = subprocess.Popen([py, "-c", code, *map(str, args)], stdout=subprocess.PIPE, text=True)
    if wait_ready:
        p.stdout.readline()
    return p


def stop(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def polyprof_cpu(seconds, *args):
    """CPU seconds of one polyprof session of `seconds`, and its header."""
    with tempfile.TemporaryDirectory() as out:
        c0 = children_cpu()
        subprocess.run([str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", out,
                        "--no-flamegraph", *EXTRA, *args], check=True, capture_output=True)
        cpu = children_cpu() - c0
        text = (Path(out) / "last_profile.col").read_text()
        return cpu, json.loads(text.split("\n", 1)[0][2:])


def steady_cpu(seconds, *args, sessions=3):
    """polyprof's own CPU seconds per session in continuous mode (header cpu_seconds), the
    sessions after the first (which opens every process once) averaged, and the first."""
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.Popen([str(POLYPROF), "-c", "-d", str(seconds), "-f", "99", "-o", out,
                              "--no-flamegraph", *EXTRA, *args], stderr=subprocess.DEVNULL)
        deadline = time.time() + (sessions + 1) * seconds + 30
        while time.time() < deadline and len(list(Path(out).glob("profile_*.col"))) < sessions:
            time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        p.wait()
        cpus = []
        for f in sorted(Path(out).glob("profile_*.col")):
            h = json.loads(f.read_text().split("\n", 1)[0][2:])
            cpus.append(h["polyprof"]["cpu_seconds"])
    later = cpus[1:sessions] or cpus
    return sum(later) / len(later), cpus[0]


def bpf_stats():
    """(run_time_ns, run_cnt) of pp_sample programs."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                       check=True)
    ns = cnt = 0
    for p in json.loads(r.stdout):
        if p.get("name") == "pp_sample":
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt


def per_sample_ns(seconds, *args):
    """BPF ns per sample over one polyprof run (stats read while it runs)."""
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.Popen([str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", out,
                              "--no-flamegraph", *args], stderr=subprocess.DEVNULL)
        time.sleep(2)
        ns0, c0 = bpf_stats()
        time.sleep(seconds - 3)
        ns1, c1 = bpf_stats()
        p.wait()
    return (ns1 - ns0) / max(c1 - c0, 1), c1 - c0


def throughput(py, seconds, profiled_args):
    """Iterations per CPU second of bench/python/target.py, optionally under polyprof."""
    target = ROOT / "bench" / "python" / "target.py"
    prof = None
    if profiled_args is not None:
        out = tempfile.mkdtemp()
        prof = subprocess.Popen([str(POLYPROF), "-d", str(seconds + 6), "-f", "99", "-o", out,
                                 "--no-flamegraph", *profiled_args], stderr=subprocess.DEVNULL)
        time.sleep(1.5)
    r = subprocess.run([py, str(target), "2", str(seconds)], capture_output=True, text=True)
    if prof:
        prof.terminate()
        prof.wait()
    line = [x for x in r.stdout.splitlines() if x.startswith("iterations_per_s")][0]
    return float(line.split()[2])


def main():
    global POLYPROF
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--python", default="/root/.pyenv/versions/3.11.7/bin/python3.11")
    ap.add_argument("--cases", default="1234",
                    help="which of (1) idle (2) busy vs py-spy (3) BPF time (4) throughput")
    ap.add_argument("--polyprof", default=str(POLYPROF), help="the polyprof to measure")
    ap.add_argument("--perf-event", action="store_true",
                    help="--perf-mode perf-event --python-mode builtin (case 1 only)")
    a = ap.parse_args()
    POLYPROF = Path(a.polyprof).resolve()
    py, sec = a.python, a.seconds
    if a.perf_event:
        EXTRA.extend(["--perf-mode", "perf-event", "--python-mode", "builtin"])
        a.cases = "1"
    print(f"{POLYPROF}: python {py}, sessions of {sec} s at 99 Hz {' '.join(EXTRA)}")
    if "1" in a.cases:
        idle_cases(py, sec)
    if "2" in a.cases:
        busy_case(py, sec)
    if "3" in a.cases:
        bpf_case(py, sec)
    if "4" in a.cases:
        throughput_case(py, sec)


def idle_cases(py, sec):
    # (1) idle processes and idle threads: polyprof's CPU per session in continuous mode
    base, base_first = steady_cpu(sec)
    idle = [start(py, IDLE) for _ in range(100)]
    time.sleep(1)
    try:
        with_idle, idle_first = steady_cpu(sec)
        no_python, _ = steady_cpu(sec, "--no-python")
    finally:
        stop(idle)
    base2, _ = steady_cpu(sec)
    t = start(py, THREADS, wait_ready=True)
    try:
        with_threads, _ = steady_cpu(sec)
    finally:
        stop([t])
    print(f"(1) polyprof CPU per {sec} s session (continuous, after the first): none "
          f"{base:.3f} s, 100 idle pythons {with_idle:.3f} s (ratio {with_idle / base:.2f}x; "
          f"first session {idle_first:.3f} s vs {base_first:.3f} s: each process opened once; "
          f"the same 100 with --no-python {no_python:.3f} s: ratio {with_idle / no_python:.2f}x "
          f"is the Python profiling's share, the rest is discovery and identity); "
          f"none {base2:.3f} s, 2,000 idle threads {with_threads:.3f} s "
          f"(ratio {with_threads / base2:.2f}x)")


def busy_case(py, sec):
    # (2) polyprof vs py-spy on 4 busy processes
    busy = [start(py, BUSY, 10, wait_ready=True) for _ in range(4)]
    try:
        pp_cpu, _ = polyprof_cpu(sec)
        if PYSPY.exists():
            with tempfile.TemporaryDirectory() as out:
                c0 = children_cpu()
                spies = [subprocess.Popen(
                    [str(PYSPY), "record", "-r", "50", "-d", str(sec), "--nonblocking", "--format",
                     "raw", "-F", "--output", f"{out}/{b.pid}.col", "-p", str(b.pid),
                     "--full-filenames", "--gil"], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL) for b in busy]
                for s in spies:
                    s.wait()
                spy_cpu = children_cpu() - c0
            print(f"(2) 4 busy pythons, {sec} s: polyprof {pp_cpu:.2f} s CPU (whole host, 99 Hz), "
                  f"py-spy x4 (gProfiler's command line, 50 Hz) {spy_cpu:.2f} s CPU "
                  f"(ratio {spy_cpu / max(pp_cpu, 1e-9):.1f}x)")
        else:
            print(f"(2) polyprof {pp_cpu:.2f} s CPU; py-spy not at {PYSPY} (make deps)")
    finally:
        stop(busy)


def bpf_case(py, sec):
    # (3) BPF time per sample with and without the walk, one busy process 50 frames deep
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    was = stats.read_text().strip()
    stats.write_text("1")
    b = start(py, BUSY, 48, wait_ready=True)
    try:
        off, n_off = per_sample_ns(sec, "--no-python", "--pids", str(b.pid))
        on, n_on = per_sample_ns(sec, "--python-mode", "builtin", "--pids", str(b.pid))
    finally:
        stop([b])
        stats.write_text(was)
    print(f"(3) BPF per sample: {off / 1000:.2f} us without the walk ({n_off} samples), "
          f"{on / 1000:.2f} us with it ({n_on} samples): +{(on - off) / 1000:.2f} us for 50 frames")


def throughput_case(py, sec):
    # (4) the target's throughput
    free = throughput(py, sec, None)
    prof = throughput(py, sec, ["--python-mode", "builtin"])
    print(f"(4) target iterations per CPU second: {free:.0f} unprofiled, {prof:.0f} profiled "
          f"(ratio {prof / free:.3f})")


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root")
    main()
