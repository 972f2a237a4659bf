"""polyprof --dotnet-mode builtin on a .NET Core 3.1 process with N JIT-compiled methods
(default 10,000): how long the rundown that names them takes (polyprof's log line), and
polyprof's CPU time for a session with builtin against one with --dotnet-mode disabled.

Needs `make deps` (the runtime and mcs) and root; polyprof is single-instance (on a shared machine
run it under the test lock: flock /tmp/polyprof-test.lock bash bench/dotnet/run.sh)."""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLYPROF = os.path.join(ROOT, "build", "polyprof")
RUNTIMECONFIG = {"runtimeOptions": {
    "tfm": "netcoreapp3.1", "framework": {"name": "Microsoft.NETCore.App", "version": "3.1.0"},
    "configProperties": {"System.Globalization.Invariant": True}}}


def program(n):
    methods = "\n".join(
        f"        [MethodImpl(MethodImplOptions.NoInlining)] static long M{i}(long x) "
        f"{{ return x * {i + 3} + {i}; }}" for i in range(n))
    calls = "\n".join(f"            s += M{i}(s);" for i in range(n))
    return f"""using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
static class Many
{{
    static long sink;
{methods}
    static void Spin() {{ for (long i = 0; i < 2000000; i++) sink += i; }}
    static void Main()
    {{
        long s = 1;
{calls}
        sink = s;
        Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
        Console.Out.Flush();
        while (true) Spin();
    }}
}}
"""


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def dotnet_host():
    """The .NET runtime's host of `make deps`; exits when it or mcs is missing."""
    tools = os.environ.get("PP_TOOLS") or "/var/cache/polyprof/tools"
    hosts = glob.glob(f"{tools}/dotnetcore2-*/dotnetcore2/bin/dotnet")
    if not hosts or not shutil.which("mcs"):
        sys.exit("needs the .NET runtime and mcs: make deps")
    return hosts[0]


def run_polyprof(pid, mode, seconds, out):
    t0 = children_cpu()
    r = subprocess.run([POLYPROF, "-d", str(seconds), "-o", out, "--no-flamegraph",
                        "--dotnet-mode", mode, "--pids", str(pid)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"polyprof exited {r.returncode}:\n{r.stderr}")
    return children_cpu() - t0, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    host = dotnet_host()
    d = tempfile.mkdtemp(prefix="pp_bench_dotnet_")
    try:
        src = os.path.join(d, "Many.cs")
        with open(src, "w") as f:
            f.write(program(a.methods))
        subprocess.run(["mcs", "-optimize+", f"-out:{d}/Many.exe", src], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "Many.runtimeconfig.json"), "w") as f:
            json.dump(RUNTIMECONFIG, f)
        t0 = time.monotonic()
        p = subprocess.Popen([host, f"{d}/Many.exe"], stdout=subprocess.PIPE, text=True,
                             env={"PATH": "/usr/bin:/bin"})
        line = p.stdout.readline()
        assert line.startswith("ready"), line
        print(f"target: {a.methods} methods compiled, ready after {time.monotonic() - t0:.2f} s")
        out = os.path.join(d, "out")
        try:
            for _ in range(a.rounds):
                cpu_b, err = run_polyprof(p.pid, "builtin", a.seconds, out)
                m = re.search(r"(\d+) methods named by rundown in ([\d.]+) s", err)
                for w in (x for x in err.splitlines() if "WARNING" in x and ".NET" in x):
                    print("  " + w)
                cpu_d, _ = run_polyprof(p.pid, "disabled", a.seconds, out)
                print(f"builtin: {m.group(1) if m else '?'} methods named by rundown in "
                      f"{m.group(2) if m else '?'} s; polyprof CPU {cpu_b:.3f} s "
                      f"(-d {a.seconds}); disabled: {cpu_d:.3f} s")
        finally:
            p.kill()
            p.wait()
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
