"""Node attach benchmark: a target's throughput (operations per second) and event-loop stalls
before polyprof, while polyprof runs with --nodejs-mode attach-maps (the attach at the session
start, then perf-map writing on), and after polyprof exited (writing off, map removed). Two
workloads (bench/node/target.js): steady hot functions, and code churn (a new function per
operation, so one perf-map line each). Run through run.sh (takes the test lock).
Usage: python3 bench/node/run.py [seconds per phase, default 6]"""
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PHASE = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0


def run(kind):
    p = subprocess.Popen(["node", str(ROOT / "bench/node/target.js"), kind],
                         stdout=subprocess.PIPE, text=True)
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
        res[a] = (statistics.mean(r[2] for r in sel) * 10, max(r[3] for r in sel))
    return res


print(f"{'workload':10}{'phase':10}{'ops/s':>12}{'vs before':>11}{'max stall ms':>14}")
for kind in ("steady", "churn"):
    r = run(kind)
    for ph in ("before", "during", "after"):
        ops, stall = r[ph]
        print(f"{kind:10}{ph:10}{ops:>12.0f}{100 * ops / r['before'][0]:>10.1f}%{stall:>14}")
