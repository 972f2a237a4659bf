#!/usr/bin/env python3
"""Two builds side by side, for a change that must not cost anything (issue 11's "within 5 %"):
the benchmark programs of bench/ and a whole polyprof session, run alternately (A B A B ...) so
that both see the same host, median of N runs each, and the ratio B/A.

  bench_discovery  cold and warm pp_discover medians, with --extra idle processes started here
  bench_jfr        mean CPU ms to parse a JFR recording (build/bench/java/busy60.jfr when
                   bench/java/run.sh made one, else the test fixture jdk17-profile.jfr)
  session          polyprof -d D -o DIR: CPU seconds (user+sys, getrusage of the child) and
                   peak RSS, with the same processes running for both

Usage: compare_builds.py A_ROOT B_ROOT [--runs 5] [--extra 300] [--duration 5]
                         [--busy N] [--session-args "ARGS"] [--session-only]
(A_ROOT, B_ROOT: source trees with build/ made; B is usually this checkout). --busy starts N
busy Python processes (a 10-frame call chain) for the whole run, --session-args adds polyprof
arguments to the sessions (e.g. "--perf-mode perf-event -f 499"), --session-only skips the
two benchmark programs. Needs root; takes the test lock per session (do not wrap it in flock)."""
import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time


def run_bench_discovery(root):
    out = subprocess.run([f"{root}/build/bench/bench_discovery", "20"], capture_output=True,
                         text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"discovery cold ms": r["cold_median_ms"], "discovery warm ms": r["warm_median_ms"]}


def run_bench_jfr(root, rec):
    if not os.path.exists(rec):
        return {}
    out = subprocess.run([f"{root}/build/bench/bench_jfr", rec, "50"], capture_output=True,
                         text=True, check=True).stdout
    return {"jfr parse cpu ms": float(out.split()[0]) * 1000}


BUSY = """
def f(n):
    return f(n - 1) if n else sum(i * i for i in range(2000))
while True:
    f(10)
"""


def run_session(root, duration, outdir, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(["flock", "/tmp/polyprof-test.lock", f"{root}/build/polyprof", "-d",
                        str(duration), "-o", outdir, "--no-flamegraph", *args],
                       capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{root}: polyprof failed: {p.stderr[-500:]}")
    return {"session cpu s": (after.ru_utime - before.ru_utime) +
            (after.ru_stime - before.ru_stime)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--extra", type=int, default=300)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--session-args", default="")
    ap.add_argument("--session-only", action="store_true")
    o = ap.parse_args()
    rec = os.path.abspath("build/bench/java/busy60.jfr")
    if not os.path.exists(rec):
        rec = os.path.abspath("tests/fixtures/jfr/jdk17-profile.jfr")
    extra = [subprocess.Popen(["sleep", "3600"]) for _ in range(o.extra)]
    extra += [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(o.busy)]
    res = {"A": {}, "B": {}}
    try:
        for i in range(o.runs):
            for name, root in (("A", o.a), ("B", o.b)):
                figs = {}
                if not o.session_only:
                    figs.update(run_bench_discovery(root))
                    figs.update(run_bench_jfr(root, rec))
                figs.update(run_session(root, o.duration, f"/tmp/pp_compare_{name}",
                                        shlex.split(o.session_args)))
                for k, v in figs.items():
                    res[name].setdefault(k, []).append(v)
            print(f"run {i + 1}/{o.runs} done", file=sys.stderr)
    finally:
        for p in extra:
            p.kill()
            p.wait()
    print(f"A = {o.a}\nB = {o.b}\nmedian of {o.runs} runs each, alternated; "
          f"load {os.getloadavg()[0]:.1f}; {o.extra} idle, {o.busy} busy Python processes; "
          f"session arguments: {o.session_args or '(none)'}")
    print(f"{'figure':22} {'A':>10} {'B':>10} {'B/A':>7}")
    for k in res["A"]:
        a, b = statistics.median(res["A"][k]), statistics.median(res["B"][k])
        print(f"{k:22} {a:10.3f} {b:10.3f} {b / a if a else float('nan'):7.3f}")


if __name__ == "__main__":
    main()
