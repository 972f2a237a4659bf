#!/usr/bin/env python3
"""Benchmark of the in-sampler Ruby walker (issue 13; docs/ruby.md): the BPF time per sample
(kernel.bpf_stats_enabled: run_time_ns / run_cnt of pp_sample) with the Ruby walk of busy Ruby
processes (--ruby-mode builtin) against the same processes without it (--no-ruby), one run,
printed side by side with the ratio. Run as root, under the test lock:

    flock /tmp/polyprof-test.lock python3 bench/ruby/run.py [--seconds N] [--depth D]
"""
import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
RUBY = "/usr/bin/ruby"
BUSY = ("def leaf; s = 0; i = 0; while i < 1000; s += i * i; i += 1; end; s; end\n"
        "def chain(d) = d.zero? ? leaf : chain(d - 1)\n"
        "$stdout.sync = true; puts 'ready'\nd = ARGV[0].to_i\nloop { chain(d) }\n")


def bpf_stats():
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                       check=True)
    ns = cnt = 0
    for p in json.loads(r.stdout):
        if p.get("name") == "pp_sample":
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt


def per_sample_ns(seconds, pids, *args):
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.Popen([str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", out,
                              "--no-flamegraph", "--pids", ",".join(map(str, pids)), *args],
                             stderr=subprocess.DEVNULL)
        time.sleep(2)
        ns0, c0 = bpf_stats()
        time.sleep(seconds - 3)
        ns1, c1 = bpf_stats()
        p.wait()
        head = json.loads((Path(out) / "last_profile.col").read_text().split("\n", 1)[0][2:])
    return (ns1 - ns0) / max(c1 - c0, 1), c1 - c0, head["polyprof"].get("runtime_walks", {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--procs", type=int, default=2)
    a = ap.parse_args()
    old = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    procs = [subprocess.Popen([RUBY, "-e", BUSY, str(a.depth)], stdout=subprocess.PIPE,
                              text=True) for _ in range(a.procs)]
    try:
        for p in procs:
            p.stdout.readline()
        pids = [p.pid for p in procs]
        without, n0, _ = per_sample_ns(a.seconds, pids, "--no-ruby")
        with_walk, n1, walks = per_sample_ns(a.seconds, pids, "--ruby-mode", "builtin")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        Path("/proc/sys/kernel/bpf_stats_enabled").write_text(old)
    print(f"{a.procs} busy ruby processes, {a.depth + 3} Ruby frames deep, {a.seconds} s at 99 Hz")
    print(f"BPF ns per sample: --no-ruby {without:.0f} ({n0} samples), "
          f"--ruby-mode builtin {with_walk:.0f} ({n1} samples): ratio {with_walk / without:.2f}, "
          f"added {(with_walk - without) / 1000:.2f} us")
    # the stats cover seconds - 3 of the session's seconds; walks are the session's
    walked = walks.get("ok", 0) * (a.seconds - 3) / a.seconds
    if walked:
        per_walk = (with_walk - without) * n1 / walked
        print(f"about {per_walk / 1000:.1f} us per walked Ruby sample ({walked:.0f} of the "
              f"{n1} samples in the window walked)")
    print(f"walk outcomes: {walks}")


if __name__ == "__main__":
    main()
