#!/usr/bin/env python3
"""Benchmark of polyprof's Java modes (issue 16; docs/java.md), printed side by side in one run:
polyprof's CPU and the JVM's throughput with `--java-mode jfr` and `--java-mode ap` on the same
load, `disabled` as the baseline. Run as root, under the test lock:

    flock /tmp/polyprof-test.lock /usr/bin/python3 bench/java/modes.py [--seconds N] \
        [--rounds N] [--threads N] [-f HZ] [--jdks 17,25] [--modes disabled,jfr,ap,builtin]
        [--bpf-cost]

Per JDK, one JVM runs bench/java/Load.java (--threads threads calling Busy.work, random call
chains up to ~70 frames deep, in a loop; it prints how many calls it made when asked). One
polyprof session of --seconds profiles it (--pids) per mode, the modes in turns (A B C A B C
...) --rounds times, after one unmeasured session per mode (JFR's start-up in the JVM,
async-profiler's load: paid once per JVM, not per session). Printed per mode, summed over the
rounds: polyprof's CPU (itself and its children, getrusage), the JVM's calls per CPU second of
the JVM (/proc/<pid>/stat: the profiler's work inside the JVM counts against it) and per wall
second (also hit by polyprof taking a CPU from the JVM, and by everything else on the host),
the runtime's samples of the sampler's (the header's polyprof.runtime_samples), and each
figure's ratio to the first mode's. async-profiler is the pinned jar of `make deps`.
With --bpf-cost, also the BPF sampler's time per sample of the JVM (kernel.bpf_stats_enabled:
run_time_ns / run_cnt of pp_sample, bench/pywalk/run.py) with `--java-mode disabled` and with
`builtin` (the HotSpot walk in the sampler), in turns, --rounds times.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import tempfile
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "pywalk"))
from run import per_sample_ns  # noqa: E402  (bench/pywalk/run.py)

POLYPROF = ROOT / "build" / "polyprof"
JDKS = {"17": Path("/usr/lib/jvm/java-17-openjdk-amd64"),
        "25": Path("/usr/lib/jvm/temurin-25-jdk-amd64")}
TOOLS = Path(os.environ.get("PP_TOOLS", "/var/cache/polyprof/tools"))


def asprof_resources():
    version = re.search(r"^ASPROF_VERSION=(\S+)", (ROOT / "tests/tools/install.sh").read_text(),
                        re.M).group(1)
    return TOOLS / f"async-profiler-{version}"


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


class Jvm:
    """The load: a JVM running Load, asked for its call count on stdin."""

    def __init__(self, home, classes, threads):
        self.p = subprocess.Popen([str(home / "bin" / "java"), "-cp", str(classes), "Load",
                                   str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"the JVM did not start: {line!r}")
        self.pid = self.p.pid

    def calls(self):
        self.p.stdin.write("\n")
        self.p.stdin.flush()
        return int(self.p.stdout.readline())

    def stop(self):
        self.p.kill()
        self.p.wait()


def session(seconds, freq, mode, jvm, env):
    """One polyprof session on the JVM: (polyprof CPU s, JVM CPU s, JVM calls, wall s,
    runtime samples, sampler samples)."""
    with tempfile.TemporaryDirectory() as out:
        for _ in range(120):  # another polyprof on the host (a test) holds the lock: wait
            n0, j0, c0, t0 = jvm.calls(), proc_cpu(jvm.pid), children_cpu(), time.monotonic()
            r = subprocess.run([str(POLYPROF), "-d", str(seconds), "-f", str(freq), "-o", out,
                                "--no-flamegraph", "--java-mode", mode, "--pids", str(jvm.pid)],
                               capture_output=True, text=True, env=env)
            t1, c1, j1, n1 = time.monotonic(), children_cpu(), proc_cpu(jvm.pid), jvm.calls()
            if "Could not acquire polyprof's lock" not in r.stderr:
                break
            time.sleep(1)
        if r.returncode:
            raise SystemExit(f"polyprof --java-mode {mode} exited {r.returncode}:\n"
                             f"{r.stderr[-2000:]}")
        text = (Path(out) / "last_profile.col").read_text()
        header = json.loads(text.split("\n", 1)[0][2:])
        cov = [c for c in header["polyprof"]["runtime_samples"] if c["pid"] == jvm.pid]
        errors = sorted({x for x in re.findall(r"\[Profiling [^\]]*\]", text)})
        if mode != "disabled" and (errors or not cov):
            raise SystemExit(f"--java-mode {mode}: {errors or 'no coverage entry'}\n"
                             f"{r.stderr[-2000:]}")
        rt = cov[0]["runtime_samples"] if cov else 0
        sampler = cov[0]["sampler_samples"] if cov else 0
        return c1 - c0, j1 - j0, n1 - n0, t1 - t0, rt, sampler


def bench_jdk(version, a, modes, env):
    home = JDKS[version]
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run([str(home / "bin" / "javac"), "-d", classes,
                        str(ROOT / "bench" / "java" / "Busy.java"),
                        str(ROOT / "bench" / "java" / "Load.java")], check=True)
        jvm = Jvm(home, classes, a.threads)
        try:
            while proc_cpu(jvm.pid) < 3:  # JIT compilation of the load's hot code
                time.sleep(0.1)
            for m in modes:  # unmeasured: start-up costs paid once per JVM
                session(a.seconds, a.freq, m, jvm, env)
            sums = {m: [0.0] * 6 for m in modes}
            for _ in range(a.rounds):
                for m in modes:
                    sums[m] = [x + y for x, y in zip(sums[m],
                                                    session(a.seconds, a.freq, m, jvm, env))]
            cost = {}
            for _ in range(a.rounds if a.bpf_cost else 0):
                for m in ("disabled", "builtin"):
                    for _ in range(120):  # no samples: another polyprof held the lock
                        ns, n = per_sample_ns(a.seconds, "--java-mode", m, "--pids",
                                              str(jvm.pid))
                        if n > 0:
                            break
                        time.sleep(1)
                    cost.setdefault(m, []).append((ns, n))
        finally:
            jvm.stop()
    return sums, cost


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-f", "--freq", type=int, default=99)
    ap.add_argument("--jdks", default="17,25")
    ap.add_argument("--modes", default="disabled,jfr,ap")
    ap.add_argument("--bpf-cost", action="store_true",
                    help="also the BPF time per sample, --java-mode disabled vs builtin")
    a = ap.parse_args()
    modes = a.modes.split(",")
    env = dict(os.environ)
    if "ap" in modes:
        res = asprof_resources()
        if not (res / "java" / "async-profiler.jar").exists():
            raise SystemExit(f"needs {res}/java/async-profiler.jar (make deps fetches it)")
        env["POLYPROF_RESOURCES"] = str(res)
    base = modes[0]
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    was = stats.read_text().strip()
    if a.bpf_cost:
        stats.write_text("1")
    try:
        run_jdks(a, modes, base, env)
    finally:
        stats.write_text(was)


def run_jdks(a, modes, base, env):
    for version in a.jdks.split(","):
        if not JDKS[version].exists():
            print(f"JDK {version}: not installed at {JDKS[version]}, skipped")
            continue
        s, cost = bench_jdk(version, a, modes, env)
        rate = {m: s[m][2] / s[m][1] if s[m][1] > 0 else 0.0 for m in modes}
        wall = {m: s[m][2] / s[m][3] if s[m][3] > 0 else 0.0 for m in modes}
        print(f"JDK {version} ({JDKS[version].name}): Load with {a.threads} threads, "
              f"{a.rounds} x {a.seconds} s sessions per mode, -f {a.freq}, ratios to {base}")
        for m in modes:
            cpu, jcpu, _, secs, rt, sampler = s[m]
            print(f"  --java-mode {m:8s} polyprof {cpu / a.rounds:5.2f} CPU s/session "
                  f"({100 * cpu / secs:4.1f} % of a CPU, {cpu / max(s[base][0], 1e-9):5.2f}x); "
                  f"JVM {rate[m]:8.0f} calls/CPU s ({rate[m] / max(rate[base], 1e-9):5.3f}x), "
                  f"{wall[m]:8.0f} calls/s ({wall[m] / max(wall[base], 1e-9):5.3f}x), "
                  f"{jcpu / secs:4.2f} CPUs; runtime samples {rt / a.rounds:.0f} of "
                  f"{sampler / a.rounds:.0f}/session")
        for m, runs in cost.items():
            print(f"  BPF per sample, --java-mode {m:8s} " +
                  ", ".join(f"{ns / 1000:.2f} us ({n} samples)" for ns, n in runs))


if __name__ == "__main__":
    main()
