#!/usr/bin/env python3
"""Benchmark of polyprof's Ruby profiling (issue 13; docs/ruby.md), printed side by side in one
run. Run as root, under the test lock:

    flock /tmp/polyprof-test.lock /usr/bin/python3 bench/ruby/modes.py [--seconds N] \
        [--procs N] [--rounds N] [--modes disabled,builtin,rbspy]

N busy Ruby processes (a call chain 10 frames deep ending in integer arithmetic) run while one
polyprof session of --seconds profiles them (--pids) for each --ruby-mode in --modes, in turns
(A B A B ...) --rounds times. Printed per mode: the CPU seconds of polyprof and its children
(rbspy runs as polyprof's children, so its CPU is counted), the Ruby samples it delivered, and
the ratio of each mode's CPU to the first mode's; with both `builtin` and `rbspy`, the ratio
of their CPU (and of their CPU above `disabled`, when it is run). `disabled` is the system
sampler alone. The built-in walk runs in the BPF program, whose time the kernel charges to the
interrupted (Ruby) task, not to polyprof: bench/ruby/run.py measures it.
"""
import argparse
import json
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
TOOLS = Path("/var/cache/polyprof/tools")
BUSY = ("def leaf\n  s = 0\n  i = 0\n  while i < 1000\n    s += i * i\n    i += 1\n  end\n  s\nend\n"
        "def chain(d)\n  d.zero? ? leaf : chain(d - 1)\nend\n"
        "$stdout.puts 'ready'\n$stdout.flush\nloop { chain(10) }\n")


def rbspy_dir():
    version = next(x.split("=", 1)[1] for x in (ROOT / "tests/tools/install.sh").read_text()
                   .splitlines() if x.startswith("RBSPY_VERSION="))
    return TOOLS / f"rbspy-{version}" / "bin"


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def session(seconds, mode, pids, env):
    """CPU seconds of polyprof (and its children) for one session, and the Ruby samples."""
    with tempfile.TemporaryDirectory() as out:
        c0 = children_cpu()
        subprocess.run([str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", out,
                        "--no-flamegraph", "--ruby-mode", mode,
                        "--pids", ",".join(map(str, pids))], check=True,
                       capture_output=True, env=env)
        cpu = children_cpu() - c0
        lines = (Path(out) / "last_profile.col").read_text().split("\n")[1:]
        ruby = sum(int(x.rsplit(" ", 1)[1]) for x in lines if "_[rb]" in x)
        return cpu, ruby


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", default="disabled,builtin,rbspy")
    a = ap.parse_args()
    modes = a.modes.split(",")
    rbspy = rbspy_dir()
    if "rbspy" in modes and not (rbspy / "rbspy").exists():
        raise SystemExit(f"needs rbspy at {rbspy}/rbspy (make deps builds it)")
    ruby = shutil.which("ruby") or "/usr/bin/ruby"
    env = {"PATH": f"{rbspy}:/usr/sbin:/usr/bin:/sbin:/bin"}
    procs = [subprocess.Popen([ruby, "-e", BUSY], stdout=subprocess.PIPE, text=True)
             for _ in range(a.procs)]
    try:
        for p in procs:
            p.stdout.readline()
        pids = [p.pid for p in procs]
        cpu = {m: 0.0 for m in modes}
        samples = {m: 0 for m in modes}
        for _ in range(a.rounds):
            for m in modes:
                c, s = session(a.seconds, m, pids, env)
                cpu[m] += c
                samples[m] += s
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
    base = modes[0]
    print(f"ruby bench: {a.procs} busy Ruby processes, {a.rounds} x {a.seconds} s sessions "
          f"per mode, -f 99")
    for m in modes:
        ratio = cpu[m] / cpu[base] if cpu[base] > 0 else float("inf")
        print(f"  --ruby-mode {m:9s} CPU {cpu[m] / a.rounds:6.2f} s/session "
              f"({100 * cpu[m] / (a.rounds * a.seconds):5.1f} % of a CPU), "
              f"Ruby samples {samples[m] // a.rounds:6d}/session, {ratio:5.2f}x {base}")
    if "builtin" in modes and "rbspy" in modes and cpu["rbspy"] > 0:
        line = f"  builtin / rbspy CPU: {cpu['builtin'] / cpu['rbspy']:.3f}"
        if "disabled" in modes and cpu["rbspy"] > cpu["disabled"]:
            line += (f"; above disabled: {(cpu['builtin'] - cpu['disabled']) / a.rounds:.3f} s"
                     f" / {(cpu['rbspy'] - cpu['disabled']) / a.rounds:.3f} s per session = "
                     f"{(cpu['builtin'] - cpu['disabled']) / (cpu['rbspy'] - cpu['disabled']):.3f}")
        print(line)


main()
