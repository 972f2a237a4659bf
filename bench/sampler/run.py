#!/usr/bin/env python3
"""Sampler benchmark: polyprof versus gProfiler's pipeline for the same job, in one run.

Load: stress-ng on every CPU plus a few hundred idle processes. For each frequency, runs
  A) polyprof -d D -f F -o DIR                          (BPF sampler, in-kernel aggregation)
  B) perf record -F F -a -g -- sleep D; perf script -F +pid; collapse in Python
     (what gProfiler does each session, minus its Python agent overhead)
and prints CPU seconds (user+sys) and peak RSS of each side, and their ratios. Then
  C) polyprof -c -d D -f F (continuous): the CPU seconds of its second session, from the
     `polyprof.cpu_seconds` header key (start-up paid once, as on a host running polyprof as a
     DaemonSet), against the same pipeline run.
polyprof runs with its runtime profilers off (SAMPLER_ONLY): the pipeline compared is the
system sampler's, and with them on, polyprof would also be sampling Python processes on the host
(this script itself among them), which perf does not do.
Usage: run.py [--duration 60] [--idle 300] [--freqs 11,99]
"""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
SAMPLER_ONLY = ["--no-java", "--no-python", "--no-ruby", "--no-php", "--no-dotnet", "--no-nodejs"]

SAMPLE_RE = re.compile(
    r"\s*(?P<comm>.+?)\s+(?P<pid>[\d-]+)/(?P<tid>[\d-]+)(?:\s+\[(?P<cpu>\d+)])?\s+"
    r"(?P<time>\d+\.\d+):\s+(?:(?P<freq>\d+)\s+)?(?P<event_family>[\w\-_/]+):"
    r"(?:(?P<event>[\w-]+):)?(?P<suffix>[^\n]*)(?:\n(?P<stack>.*))?", re.DOTALL)
FRAME_RE = re.compile(r"^\s*[0-9a-f]+ (?P<symbol>.*) \((?:\[(?P<dso_brackets>[^]]+)\]|"
                      r"(?P<dso_plain>[^)]+(?: \(deleted\))?))\)$")


def collapse(text):
    """gProfiler's perf-script parsing and collapsing (gprofiler/profilers/perf.py)."""
    stacks = Counter()
    for sample in text.split("\n\n"):
        if not sample.strip() or sample.startswith("#"):
            continue
        m = SAMPLE_RE.match(sample)
        if not m or not m.group("stack"):
            continue
        frames = []
        for line in reversed(m.group("stack").splitlines()):
            fm = FRAME_RE.match(line)
            if not fm:
                continue
            sym = fm.group("symbol").split("+")[0]
            dso = fm.group("dso_brackets") or fm.group("dso_plain")
            if sym == "[unknown]" and dso != "unknown":
                sym = f"({dso})"
            elif "kernel" in dso or "vmlinux" in dso:
                sym += "_[k]"
            frames.append(sym)
        stacks[(m.group("pid"), ";".join([m.group("comm")] + frames))] += 1
    return stacks


def run_measured(argv, **kw):
    """Runs argv to completion; returns (cpu seconds, peak RSS KiB, wall seconds, stdout)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, **kw)
    out = None
    if kw.get("stdout") == subprocess.PIPE:
        out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{argv[0]} failed with {p.returncode}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, time.monotonic() - t0, out


def steady_session_cpu(duration, freq, out, log):
    """Runs polyprof continuously until its second profile is written; returns that session's
    CPU seconds (header key polyprof.cpu_seconds) and the run's peak RSS (KiB)."""
    import json
    import signal
    p = subprocess.Popen([str(POLYPROF), "-c", "-d", str(duration), "-f", str(freq), "-o",
                          str(out), "--log-file", str(log), *SAMPLER_ONLY],
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 3 * duration + 60
    files = []
    while time.monotonic() < deadline and p.poll() is None:
        files = sorted(out.glob("profile_*.col")) if out.exists() else []
        if len(files) >= 2:
            break
        time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    _, _, ru = os.wait4(p.pid, 0)
    if len(files) < 2:
        sys.exit("polyprof -c did not write two profiles")
    header = json.loads(files[1].read_text().split("\n", 1)[0][2:])
    return header["polyprof"]["cpu_seconds"], ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--idle", type=int, default=300)
    ap.add_argument("--freqs", default="11,99")
    a = ap.parse_args()
    if not POLYPROF.exists():
        sys.exit("build polyprof first: make")
    ncpu = os.cpu_count()
    # its own process group: stress-ng's workers are killed with it (killing only the parent
    # left them running and loading the host)
    load = [subprocess.Popen(["stress-ng", "--cpu", str(ncpu), "--quiet"], start_new_session=True)]
    load += [subprocess.Popen(["sleep", "100000"]) for _ in range(a.idle)]
    tmp = Path(tempfile.mkdtemp(prefix="pp_bench_"))
    rows = []
    try:
        for f in map(int, a.freqs.split(",")):
            out = tmp / f"out{f}"
            cpu_a, rss_a, _, _ = run_measured(
                [str(POLYPROF), "-d", str(a.duration), "-f", str(f), "-o", str(out),
                 "--log-file", str(tmp / "pp.log"), *SAMPLER_ONLY], stderr=subprocess.DEVNULL)
            log = (tmp / "pp.log").read_text()
            lat = [float(x) for x in re.findall(r"\((\d+) ms after the session end\)", log)][-1]

            data = tmp / "perf.data"
            c1, r1, _, _ = run_measured(["perf", "record", "-q", "-F", str(f), "-a", "-g", "-o",
                                         str(data), "--", "sleep", str(a.duration)],
                                        stderr=subprocess.DEVNULL)
            c2, r2, _, text = run_measured(["perf", "script", "-F", "+pid", "-i", str(data)],
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            before = resource.getrusage(resource.RUSAGE_SELF)
            stacks = collapse(text.decode("utf-8", "replace"))
            after = resource.getrusage(resource.RUSAGE_SELF)
            c3 = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            cpu_b = c1 + c2 + c3
            rss_b = max(r1, r2)
            data.unlink()
            cpu_c, rss_c = steady_session_cpu(a.duration, f, tmp / f"cont{f}", tmp / "ppc.log")
            rows.append((f, cpu_a, rss_a, lat, cpu_b, rss_b, len(stacks), cpu_c, rss_c))
    finally:
        os.killpg(load[0].pid, 9)
        for p in load:
            p.kill()
        for p in load:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"sampler benchmark: {a.duration} s sessions, stress-ng on {ncpu} CPUs + {a.idle} idle "
          f"processes")
    print(f"{'freq':>5} | {'polyprof cpu s':>14} {'rss MiB':>8} {'write ms':>8} | "
          f"{'perf pipeline cpu s':>19} {'rss MiB':>8} | {'cpu ratio':>9} {'rss ratio':>9}")
    for f, ca, ra, lat, cb, rb, _, cc, rc in rows:
        print(f"{f:>5} | {ca:>14.3f} {ra/1024:>8.1f} {lat:>8.0f} | {cb:>19.3f} {rb/1024:>8.1f} | "
              f"{cb/max(ca,1e-3):>8.1f}x {rb/max(ra,1):>8.1f}x")
    print("continuous mode (-c), second session:")
    for f, ca, ra, lat, cb, rb, _, cc, rc in rows:
        print(f"{f:>5} | {cc:>14.3f} {rc/1024:>8.1f} {'':>8} | {cb:>19.3f} {rb/1024:>8.1f} | "
              f"{cb/max(cc,1e-3):>8.1f}x {rb/max(rc,1):>8.1f}x")
    print("ratios: perf pipeline / polyprof (higher is better for polyprof); "
          "targets: cpu >= 20x, polyprof rss < 30 MiB, write < 100 ms")


if __name__ == "__main__":
    main()
