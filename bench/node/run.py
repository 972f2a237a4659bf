"""Node attach benchmark: a target's throughput (operations per CPU second of the target, which
a loaded machine disturbs less than operations per wall second; both are shown) and event-loop
stalls before polyprof, while polyprof runs with --nodejs-mode attach-maps (the attach at the session
start, then perf-map writing on), and after polyprof exited (writing off, map removed). Two
workloads (bench/node/target.js): steady hot functions, and code churn (a new function per
operation, so one perf-map line each). Run through run.sh (takes the test lock).
Each workload runs REPEAT times (default 3); medians are shown.
Usage: python3 bench/node/run.py [seconds per phase, default 6] [repeat, default 3]"""
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PHASE = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def run(kind):
    p = subprocess.Popen(["node", str(ROOT / "bench/node/target.js"), kind],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert p.stdout.readline().startswith("ready")
    rows, marks = [], {}
    threading.Thread(target=lambda: [rows.append((time.monotonic(), *map(int, line.split())))
                                     for line in p.stdout], daemon=True).start()
    try:
        time.sleep(2)  # warm-up (compilation)
        marks["before"] = time.monotonic()
        time.sleep(PHASE)
        marks["during"] = time.monotonic()
        out = ROOT / "build/bench/node"
        out.mkdir(parents=True, exist_ok=True)
        pp = subprocess.run([str(ROOT / "build/polyprof"), "-d", str(int(PHASE)), "-o", str(out),
                             "--no-flamegraph", "--nodejs-mode", "attach-maps", "--pids",
                             str(p.pid)], capture_output=True, text=True)
        if pp.returncode:
            sys.exit(pp.stderr)
        marks["after"] = time.monotonic()
        time.sleep(PHASE)
        marks["end"] = time.monotonic()
    finally:
        p.kill()
        p.wait()
    res = {}
    for a, b in (("before", "during"), ("during", "after"), ("after", "end")):
        sel = [r for r in rows if marks[a] < r[0] <= marks[b]]
        ops = sum(r[2] for r in sel)
        res[a] = (ops / (marks[b] - marks[a]), ops / (sum(r[4] for r in sel) / 1e6), max(r[3] for r in sel))
    return res


print(f"{'workload':9}{'phase':8}{'ops/s':>10}{'ops/CPU s':>12}{'vs before':>11}"
      f"{'max stall ms':>14}")
for kind in ("steady", "churn"):
    runs = [run(kind) for _ in range(REPEAT)]
    for ph in ("before", "during", "after"):
        wall = statistics.median(r[ph][0] for r in runs)
        percpu = statistics.median(r[ph][1] for r in runs)
        rel = statistics.median(100 * r[ph][1] / r["before"][1] for r in runs)
        stall = statistics.median(r[ph][2] for r in runs)
        print(f"{kind:9}{ph:8}{wall:>10.0f}{percpu:>12.0f}{rel:>10.1f}%{stall:>14.0f}")
