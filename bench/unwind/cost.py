"""bench/unwind/cost.sh: see there. Prints a markdown table for docs/benchmarks.md."""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
QSORT = ROOT / "tests" / "integration" / "test_native_dwarf.py"  # QSORT_C lives there


def qsort_source():
    ns = {}
    text = QSORT.read_text()
    start = text.index('QSORT_C = r"""')
    end = text.index('"""', start + 14)
    exec(text[start:end + 3], ns)
    return ns["QSORT_C"]


def run_cpu(argv, **kw):
    """Runs argv; returns (CPU seconds of it and its children, returncode, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, r.returncode, r.stderr


def proc_cpu(pid):
    """utime + stime of a live process, seconds (0 when it is gone)."""
    try:
        f = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def polyprof_cpu(mode, pids, seconds, out, warmup):
    """(CPU of the whole run, CPU after the first `warmup` seconds: start-up, BPF load and the
    first rows builds excluded)."""
    argv = [str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", str(out), "--perf-mode", mode,
            "--pids", ",".join(map(str, pids)), "--no-java", "--no-python", "--no-ruby",
            "--no-php", "--no-nodejs", "--no-dotnet"]
    for _ in range(200):  # another polyprof may hold the host lock
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        while p.poll() is None and time.monotonic() - t0 < warmup:
            time.sleep(0.05)
        at_warm = proc_cpu(p.pid) if p.poll() is None else None
        err = p.communicate(timeout=seconds + 120)[1]
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if "acquire polyprof's lock" not in err:
            break
        time.sleep(3)
    if p.returncode != 0 or at_warm is None:
        sys.exit(f"polyprof {mode} failed: {err[-2000:]}")
    return cpu, cpu - at_warm


def perf_cpu(pids, seconds, tmp):
    data = tmp / "perf.data"
    rec, rc, err = run_cpu(["perf", "record", "-q", "-F", "99", "--call-graph", "dwarf", "-p",
                            ",".join(map(str, pids)), "-o", str(data), "--", "sleep",
                            str(seconds)], timeout=seconds + 120)
    if rc != 0:
        sys.exit(f"perf record failed: {err[-2000:]}")
    with open(os.devnull, "w") as null:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["perf", "script", "-i", str(data)], stdout=null,
                       stderr=subprocess.DEVNULL, check=True, timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    script = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rec, script


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3,
                    help="seconds of polyprof's start excluded from the steady-state figure")
    ap.add_argument("--modes", default="bpf,fp,perf-event",
                    help="polyprof --perf-mode values to measure (fp is always measured: the base)")
    a = ap.parse_args()
    want = set(a.modes.split(",")) | {"fp"}
    tmp = Path(tempfile.mkdtemp(prefix="pp_unwind_cost_"))
    procs = []
    try:
        src = tmp / "qsortprog.c"
        src.write_text(qsort_source())
        exe = tmp / "qsortprog"
        subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-o", str(exe), str(src)],
                       check=True)
        procs = [subprocess.Popen([str(exe)], stdout=subprocess.DEVNULL) for _ in range(4)]
        pids = [p.pid for p in procs]
        modes = [(label, mode) for label, mode in
                 [("bpf (CFI, the default)", "bpf"), ("bpf, --perf-mode fp", "fp"),
                  ("perf-event (CFI)", "perf-event")] if mode in want]
        load0 = os.getloadavg()
        rows = {}
        for _ in range(a.runs):
            for label, mode in modes:
                total, steady = polyprof_cpu(mode, pids, a.seconds, tmp / "out", a.warmup)
                rows.setdefault(label, []).append(total)
                rows.setdefault(label + " steady", []).append(steady)
            rec, script = perf_cpu(pids, a.seconds, tmp)
            rows.setdefault("perf record", []).append(rec)
            rows.setdefault("perf script", []).append(script)
        med = {k: sorted(v)[len(v) // 2] for k, v in rows.items()}
        pipeline = med["perf record"] + med["perf script"]
        fp = med["bpf, --perf-mode fp"]
        load1 = os.getloadavg()
        print(f"load average (1/5/15 min) before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f},"
              f" after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}\n")
        print(f"| sampler | polyprof CPU s per {a.seconds} s session (median of {a.runs}) |"
              " runs | vs fp (goal ≤ 1.5×) | perf pipeline / polyprof (goal ≥ 10×) |"
              f" steady state: CPU s per 10 s after the first {a.warmup} s | vs fp |")
        print("|---|---|---|---|---|---|---|")
        per10 = 10.0 / (a.seconds - a.warmup)
        fps = med["bpf, --perf-mode fp steady"] * per10
        for label, _ in modes:
            runs = " ".join(f"{x:.3f}" for x in rows[label])
            st = med[label + " steady"] * per10
            print(f"| {label} | {med[label]:.3f} | {runs} | {med[label] / fp:.2f}× |"
                  f" {pipeline / med[label]:.1f}× | {st:.3f} | {st / max(fps, 1e-9):.2f}× |")
        print(f"\nperf record --call-graph dwarf: {med['perf record']:.3f} s, perf script: "
              f"{med['perf script']:.3f} s (medians)")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
