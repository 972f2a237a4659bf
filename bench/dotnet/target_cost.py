"""The cost to a .NET process of polyprof's --dotnet-mode builtin: the throughput of a C# program
(work units per second, counted by the program itself) while no polyprof runs, while polyprof runs
with --dotnet-mode disabled (the system sampler alone) and while it runs with builtin (the
sampler, the rundown at the session start and the streaming session), in alternating windows of
the same run of the program. Prints each window's rate and the ratios to the no-polyprof windows
around it.

Needs `make deps` (the runtime and mcs) and root; polyprof is single-instance (on a shared machine
run it under the test lock: flock /tmp/polyprof-test.lock bash bench/dotnet/target_cost.sh)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import POLYPROF, RUNTIMECONFIG, dotnet_host  # noqa: E402

# Work units of a fixed size through a few methods (as JIT-compiled code of an application is:
# calls, loops, an allocation), the count written every 100 ms with the program's own clock.
PROGRAM = """using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
static class Rate
{
    static long sink, units;
    [MethodImpl(MethodImplOptions.NoInlining)] static long Mix(long x) { return x * 31 + 7; }
    [MethodImpl(MethodImplOptions.NoInlining)] static long Unit(int k)
    {
        long s = 0;
        var a = new long[16];
        for (int i = 0; i < 20000; i++) { s += Mix(i + k); a[i & 15] = s; }
        return s + a[k & 15];
    }
    static void Main()
    {
        var t = new Thread(() => {
            var clock = Stopwatch.StartNew();
            while (true) {
                Thread.Sleep(100);
                Console.WriteLine(clock.ElapsedMilliseconds + " " + Interlocked.Read(ref units));
                Console.Out.Flush();
            }
        });
        t.IsBackground = true;
        Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
        Console.Out.Flush();
        t.Start();
        for (int k = 0; ; k++) { sink += Unit(k); Interlocked.Increment(ref units); }
    }
}
"""


class Counter:
    """Reads the program's "<ms> <units>" lines; rate(t0, t1): units per second between the
    program's own timestamps nearest to the monotonic times t0 and t1."""

    def __init__(self, proc):
        self.points = []  # (monotonic time, program ms, units)
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self.t.start()

    def _read(self, f):
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():
                with self.lock:
                    self.points.append((time.monotonic(), int(parts[0]), int(parts[1])))

    def units(self, t0, t1):
        """(units, program seconds) between the first and last counts read in [t0, t1]."""
        with self.lock:
            inside = [p for p in self.points if t0 <= p[0] <= t1]
        if len(inside) < 2:
            return float("nan"), float("nan")
        (_, ms0, n0), (_, ms1, n1) = inside[0], inside[-1]
        return n1 - n0, (ms1 - ms0) / 1000.0


def cpu_seconds(pid):
    """utime + stime of all of pid's threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def window(counter, seconds, mode, out):
    """A window of seconds: polyprof -d seconds with --dotnet-mode mode, or none (mode None)."""
    t0, cpu0 = time.monotonic(), cpu_seconds(counter.pid)
    if mode is None:
        time.sleep(seconds)  # the window itself: no polyprof runs in it
        note = ""
    else:
        r = subprocess.run([POLYPROF, "-d", str(seconds), "-o", out, "--no-flamegraph",
                            "--dotnet-mode", mode, "--pids", str(counter.pid)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"polyprof exited {r.returncode}:\n{r.stderr}")
        note = "".join(x for x in r.stderr.splitlines() if "methods named by rundown" in x)
    t1, cpu1 = time.monotonic(), cpu_seconds(counter.pid)
    n, secs = counter.units(t0, t1)
    # units per wall second (what the host's contention changes too) and per CPU second of the
    # target (its own extra work for a session lowers it; another process's load does not)
    return (n / secs, n / (cpu1 - cpu0) * (t1 - t0) / secs), note


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="pp_bench_dotnet_cost_")
    p = None
    try:
        with open(os.path.join(d, "Rate.cs"), "w") as f:
            f.write(PROGRAM)
        subprocess.run(["mcs", "-optimize+", f"-out:{d}/Rate.exe", f"{d}/Rate.cs"], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "Rate.runtimeconfig.json"), "w") as f:
            json.dump(RUNTIMECONFIG, f)
        p = subprocess.Popen([dotnet_host(), f"{d}/Rate.exe"], stdout=subprocess.PIPE, text=True,
                             env={"PATH": "/usr/bin:/bin"})
        line = p.stdout.readline()
        assert line.startswith("ready"), line
        c = Counter(p)
        c.pid = p.pid
        out = os.path.join(d, "out")
        window(c, 3, None, out)  # warm-up: tiered JIT settles
        rates = {None: [], "disabled": [], "builtin": []}
        for i in range(a.rounds):
            for mode in (None, "disabled", None, "builtin"):
                r, note = window(c, a.seconds, mode, out)
                rates[mode].append(r)
                print(f"round {i + 1} {mode or 'no polyprof':>12}: {r[0]:8.0f} units/s, "
                      f"{r[1]:8.0f} units/CPU-s {note}", flush=True)
        r, _ = window(c, a.seconds, None, out)
        rates[None].append(r)
        print(f"{'last':>7} {'no polyprof':>12}: {r[0]:8.0f} units/s, {r[1]:8.0f} units/CPU-s")
        for k, what in ((0, "units/s"), (1, "units/CPU-s")):
            base = statistics.median(x[k] for x in rates[None])
            med = {m: statistics.median(x[k] for x in rates[m]) for m in ("disabled", "builtin")}
            print(f"median {what}: no polyprof {base:.0f}, disabled {med['disabled']:.0f} "
                  f"({med['disabled'] / base:.4f}), builtin {med['builtin']:.0f} "
                  f"({med['builtin'] / base:.4f}); builtin / disabled "
                  f"{med['builtin'] / med['disabled']:.4f}")
    finally:
        if p:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
