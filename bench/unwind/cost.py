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


def polyprof_cpu(mode, pids, seconds, out):
    argv = [str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", str(out), "--perf-mode", mode,
            "--pids", ",".join(map(str, pids)), "--no-java", "--no-python", "--no-ruby",
            "--no-php", "--no-nodejs", "--no-dotnet"]
    for _ in range(200):  # another polyprof may hold the host lock
        cpu, rc, err = run_cpu(argv, timeout=seconds + 120)
        if "acquire polyprof's lock" not in err:
            break
        time.sleep(3)
    if rc != 0:
        sys.exit(f"polyprof {mode} failed: {err[-2000:]}")
    return cpu


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
    a = ap.parse_args()
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
        modes = [("bpf (CFI)", "bpf"), ("bpf, --perf-mode fp", "fp"),
                 ("perf-event (CFI)", "perf-event")]
        rows = {}
        for _ in range(a.runs):
            for label, mode in modes:
                rows.setdefault(label, []).append(
                    polyprof_cpu(mode, pids, a.seconds, tmp / "out"))
            rec, script = perf_cpu(pids, a.seconds, tmp)
            rows.setdefault("perf record", []).append(rec)
            rows.setdefault("perf script", []).append(script)
        med = {k: sorted(v)[len(v) // 2] for k, v in rows.items()}
        pipeline = med["perf record"] + med["perf script"]
        fp = med["bpf, --perf-mode fp"]
        print(f"| sampler | polyprof CPU s per {a.seconds} s (median of {a.runs}) | vs fp |"
              " perf pipeline / polyprof |")
        print("|---|---|---|---|")
        for label, _ in modes:
            print(f"| {label} | {med[label]:.3f} | {med[label] / fp:.2f}× |"
                  f" {pipeline / med[label]:.1f}× |")
        print(f"\nperf record --call-graph dwarf: {med['perf record']:.3f} s, perf script: "
              f"{med['perf script']:.3f} s (medians)")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
