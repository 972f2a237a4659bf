#!/usr/bin/env python3
"""Discovery benchmark: classify every process of the host, polyprof versus gProfiler's method.

Load: --extra idle processes (default 1,000): a few Python and Node processes, the rest sleep
and cat. Then, in one run:
  A) polyprof: bench_discovery (built here from bench/discovery/bench_discovery.c and the
     discovery objects) runs pp_discover --reps times, "cold" (a new pp_discovery each time:
     every maps file read, every executable ELF-parsed) and "warm" (one pp_discovery reused, as
     the session loop does; unchanged processes are not re-read). Medians in ms.
  B) gProfiler: per runtime, `sh -c "grep -lE '<regex>' /proc/*/maps"` through subprocess, as
     pgrep_maps does (Java, Python, Ruby, .NET), plus pgrep_exe for Node (readlink of every
     /proc/<pid>/exe and re.match in Python). Median total ms over --reps runs.
Prints both, the ratios, and whether the targets (>= 5x faster, < 20 ms) are met.
Usage: run.py [--extra 1000] [--reps 15]
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "build" / "bench" / "bench_discovery"

# gProfiler's selection regexes (docs/discovery.md).
GPROFILER_MAPS = {
    "java": r"^.+/libjvm\.so",
    "python": r"(^.+/(lib)?python[^/]*$)|(^.+/site-packages/.+?$)|(^.+/dist-packages/.+?$)",
    "ruby": r"(^.+/ruby[^/]*$)",
    "dotnet": r"(^.+/dotnet[^/]*$)",
}
NODE_EXE = re.compile(r".*node[^/]*$")

children = []


def cleanup(*_):
    for p in children:
        try:
            p.kill()
        except OSError:
            pass
    for p in children:
        try:
            p.wait(timeout=10)
        except Exception:
            pass
    children.clear()


def build():
    subprocess.run(["make", "-s", "-C", str(ROOT), "build/bench/bench_discovery"], check=True)


def spawn(extra):
    n_py, n_node = max(1, extra // 25), max(1, extra // 100)
    n_cat = extra // 6
    n_sleep = extra - n_py - n_node - n_cat
    rfd, wfd = os.pipe()  # every cat blocks reading this pipe
    devnull = subprocess.DEVNULL
    want = {}
    for _ in range(n_py):
        p = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(9999)"],
                             stdout=devnull, stdin=devnull)
        children.append(p)
        want[p.pid] = "python3"
    if os.access("/usr/bin/node", os.X_OK):
        for _ in range(n_node):
            p = subprocess.Popen(["/usr/bin/node", "-e", "setInterval(() => {}, 100000)"],
                                 stdout=devnull, stdin=devnull)
            children.append(p)
            want[p.pid] = "node"
    else:
        n_sleep += n_node
    for _ in range(n_cat):
        p = subprocess.Popen(["cat"], stdin=rfd, stdout=devnull)
        children.append(p)
        want[p.pid] = "cat"
    for _ in range(n_sleep):
        p = subprocess.Popen(["sleep", "9999"], stdin=devnull, stdout=devnull)
        children.append(p)
        want[p.pid] = "sleep"
    os.close(rfd)
    # Ready: every child has exec'd (its exe is the expected program), then a short settle.
    deadline = time.time() + 120
    pending = dict(want)
    while pending and time.time() < deadline:
        for pid, name in list(pending.items()):
            try:
                if os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith(name):
                    del pending[pid]
            except OSError:
                pass
        time.sleep(0.05)
    if pending:
        sys.exit(f"{len(pending)} children did not start")
    time.sleep(2)
    counts = {"python3": n_py, "node": n_node if os.access("/usr/bin/node", os.X_OK) else 0,
              "cat": n_cat, "sleep": n_sleep}
    return counts, wfd


def gprofiler_pass():
    """One full classification the way gProfiler does it. Returns (total ms, per-step ms, pids)."""
    steps, found = {}, {}
    for name, regex in GPROFILER_MAPS.items():
        t0 = time.perf_counter()
        r = subprocess.run(["sh", "-c", f"grep -lE '{regex}' /proc/*/maps"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        steps[name] = (time.perf_counter() - t0) * 1e3
        if r.returncode not in (0, 1, 2):
            sys.exit(f"grep failed: {r.stderr[:200]}")
        found[name] = len([ln for ln in r.stdout.decode().splitlines() if ln.startswith("/proc/")])
    t0 = time.perf_counter()
    node = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if NODE_EXE.match(os.readlink(f"/proc/{d}/exe")):
                node += 1
        except OSError:
            pass
    steps["node"] = (time.perf_counter() - t0) * 1e3
    found["node"] = node
    return sum(steps.values()), steps, found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--extra", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (maps of every process)")
    signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))
    signal.signal(signal.SIGINT, lambda *_: (cleanup(), sys.exit(1)))
    try:
        build()
        counts, wfd = spawn(args.extra)
        nproc = sum(1 for d in os.listdir("/proc") if d.isdigit())
        print(f"extra processes: {counts}; /proc holds {nproc} processes")
        out = subprocess.run([str(BIN), str(args.reps)], check=True, stdout=subprocess.PIPE)
        pp = json.loads(out.stdout.decode().strip().splitlines()[-1])
        totals, last = [], None
        for _ in range(args.reps):
            total, steps, found = gprofiler_pass()
            totals.append(total)
            last = (steps, found)
        gp = statistics.median(totals)
        print(f"polyprof pp_discover: {pp['procs']} processes classified {pp['kinds']}")
        print(f"  cold (new pp_discovery, every process read): median {pp['cold_median_ms']:.1f} ms"
              f" (min {pp['cold_min_ms']:.1f}); reading whole maps text instead: median "
              f"{pp['cold_text_median_ms']:.1f} ms; same classification for {pp['same_kind']} "
              f"processes, different for {pp['different_kind']}")
        print(f"  warm (reused, as each session does):      median {pp['warm_median_ms']:.1f} ms"
              f" (min {pp['warm_min_ms']:.1f}), {pp['warm_maps_reads_per_pass']:.1f} maps reads"
              f" per pass")
        print(f"gProfiler method: median {gp:.1f} ms per classification; last run per step (ms): "
              + ", ".join(f"{k} {v:.1f}" for k, v in last[0].items())
              + f"; matches: {last[1]}")
        cold_x, warm_x = gp / pp["cold_median_ms"], gp / pp["warm_median_ms"]
        print(f"speed-up: cold {cold_x:.1f}x, warm {warm_x:.1f}x")
        ok = warm_x >= 5 and pp["warm_median_ms"] < 20
        print(f"targets (>= 5x and < 20 ms, steady state): {'met' if ok else 'NOT met'}; "
              f"cold pass: {'met' if cold_x >= 5 and pp['cold_median_ms'] < 20 else 'not met'}")
        os.close(wfd)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
