"""bench/unwind/many_binaries.sh: see there. Prints one markdown table row per run."""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
BUILD_ID = bytes.fromhex("7070756e77696e64626e6368") + bytes(8)  # patched per copy

# A program with FUNCS functions of a few CFI rows each (a call with locals: push, sub, pop), that
# sleeps in pause() and, on SIGUSR1, spins SPIN_MS of CPU time through them (so that the sampler sees it once).
PROG_HEAD = r"""
#include <signal.h>
#include <time.h>
#include <unistd.h>
static volatile sig_atomic_t go;
static void on_usr1(int s) { (void)s; go = 1; }
volatile long sink;
__attribute__((noinline)) long leaf(long x) { sink += x; return x ^ 3; }
"""
PROG_FUNC = r"""
__attribute__((noinline)) long f{i}(long x)
{{
    volatile long a[{n}];
    for (int k = 0; k < {n}; k++) a[k] = x + k * {i};
    long r = leaf(a[x & {m}]) + leaf(a[(x >> 1) & {m}]);
    return r + a[0];
}}
"""
PROG_MAIN = r"""
typedef long (*fn)(long);
static fn fns[] = {{ {names} }};
int main(void)
{{
    struct sigaction sa = {{0}};
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, 0);
    for (;;) {{
        pause();
        if (!go) continue;
        go = 0;
        struct timespec t0, t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        long i = 0;
        do {{
            sink += fns[i++ % (sizeof fns / sizeof *fns)](i);
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        }} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < {spin_ns});
    }}
}}
"""

PY_WAKER = r"""
import signal, time
def spin(*_):
    t = time.process_time() + %f
    while time.process_time() < t:
        pass
signal.signal(signal.SIGUSR1, spin)
while True:
    signal.pause()
"""


def gen_source(funcs, spin_ms):
    parts = [PROG_HEAD]
    for i in range(funcs):
        n = 2 + i % 6
        parts.append(PROG_FUNC.format(i=i, n=n, m=n - 1 if n & (n - 1) == 0 else 1))
    names = ", ".join(f"f{i}" for i in range(funcs))
    parts.append(PROG_MAIN.format(names=names, spin_ns=int(spin_ms * 1e6)))
    return "".join(parts)


def patch_build_id(src, dst, n):
    """Copies src to dst with a build-id differing in its last 4 bytes (a distinct file for the
    per-file cache, which keys files by build-id)."""
    data = bytearray(src.read_bytes())
    if BUILD_ID in data:
        at = data.index(BUILD_ID) + len(BUILD_ID) - 4
    else:  # another binary (python): its own build-id note
        out = subprocess.run(["readelf", "-n", str(src)], capture_output=True, text=True).stdout
        bid = bytes.fromhex(re.search(r"Build ID: ([0-9a-f]+)", out).group(1))
        at = data.index(bid) + len(bid) - 4
    data[at:at + 4] = n.to_bytes(4, "little")
    dst.write_bytes(data)
    dst.chmod(0o755)


def sigcgt_usr1(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGUSR1 - 1)))
    except OSError:
        pass
    return False


def status_kb(pid, field):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rows_of(path):
    bench = ROOT / "build" / "bench" / "bench_cfi"
    if not bench.exists():
        subprocess.run(["make", "-C", str(ROOT), "build/bench/bench_cfi"], check=True,
                       capture_output=True)
    out = subprocess.run([str(bench), str(path)], capture_output=True, text=True).stdout
    m = re.search(r"(\d+) rows", out)
    return int(m.group(1)) if m else -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=500, help="processes")
    ap.add_argument("--binaries", choices=["distinct", "shared"], default="distinct",
                    help="distinct: each process runs its own copy (own build-id); shared: one file")
    ap.add_argument("--program", choices=["gen", "python"], default="gen",
                    help="gen: a generated C program; python: python3.11 (Debian, libpython static)")
    ap.add_argument("--funcs", type=int, default=3000, help="gen: functions in the program")
    ap.add_argument("--wakes", type=int, default=1, help="times each process is woken")
    ap.add_argument("--spin-ms", type=float, default=20.0, help="CPU each process burns when woken")
    ap.add_argument("--seconds", type=int, default=30, help="polyprof's session")
    ap.add_argument("--cache-mib", type=int, default=0,
                    help="POLYPROF_UNWIND_CACHE_MIB (0: unset, the 32 MiB default)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pp_many_bin_"))
    procs = []
    pp = None
    log = None
    try:
        if a.program == "gen":
            src = tmp / "prog.c"
            src.write_text(gen_source(a.funcs, a.spin_ms))
            base = tmp / "prog"
            subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-o", str(base), str(src),
                            "-Wl,--build-id=0x" + BUILD_ID.hex()], check=True)
            args = []
        else:
            base = Path("/usr/bin/python3.11")
            waker = tmp / "waker.py"
            waker.write_text(PY_WAKER % (a.spin_ms / 1000.0))
            args = ["-S", str(waker)]
        rows = rows_of(base)
        libs = re.findall(r"=> (/\S+)", subprocess.run(["ldd", str(base)], capture_output=True,
                                                       text=True).stdout)
        libs += [l for l in re.findall(r"^\s*(/\S+)", subprocess.run(
            ["ldd", str(base)], capture_output=True, text=True).stdout, re.M)]
        libs = sorted(set(os.path.realpath(l) for l in libs))
        lib_rows = sum(max(rows_of(l), 0) for l in libs)
        exes = []
        if a.binaries == "distinct":
            for i in range(a.count):
                dst = tmp / f"ppb{i:04d}"
                patch_build_id(base, dst, i + 1)
                exes.append(dst)
        else:
            dst = tmp / "ppb_shared"
            shutil.copy(base, dst)
            exes = [dst] * a.count
        procs = [subprocess.Popen([str(e)] + args, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for e in exes]
        deadline = time.monotonic() + 120
        while not all(sigcgt_usr1(p.pid) for p in procs):  # each has its handler: ready
            if time.monotonic() > deadline:
                sys.exit("the processes did not install their SIGUSR1 handler within 120 s")
            time.sleep(0.2)
        load0 = os.getloadavg()
        env = dict(os.environ)
        env.pop("POLYPROF_UNWIND_CACHE_MIB", None)
        if a.cache_mib:
            env["POLYPROF_UNWIND_CACHE_MIB"] = str(a.cache_mib)
        out = tmp / "out"
        argv = [str(POLYPROF), "-d", str(a.seconds), "-f", "99", "-o", str(out),
                "--pids", ",".join(str(p.pid) for p in procs), "--no-java", "--no-python",
                "--no-ruby", "--no-php", "--no-nodejs", "--no-dotnet", "--no-flamegraph", "-v"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for _ in range(200):  # another polyprof may hold the host lock
            if log:
                log.close()
            log = open(tmp / "pp.log", "w+")
            pp = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env)
            # started: the BPF programs are loaded (or it exited: the lock, an error)
            deadline = time.monotonic() + 60
            while pp.poll() is None and time.monotonic() < deadline:
                log.seek(0)
                if "BPF programs loaded" in log.read():
                    break
                time.sleep(0.1)
            if pp.poll() is not None:
                log.seek(0)
                text = log.read()
                pp.wait()
                pp = None
                if "acquire polyprof's lock" in text:
                    time.sleep(3)
                    continue
                sys.exit("polyprof failed:\n" + text[-3000:])
            break
        # wake every process --wakes times, spread over the first two thirds of the session
        window = a.seconds * 2.0 / 3.0 / a.wakes
        t0 = time.monotonic()
        for w in range(a.wakes):
            for i, p in enumerate(procs):
                at = t0 + window * (w + i / len(procs))
                time.sleep(max(0.0, at - time.monotonic()))
                p.send_signal(signal.SIGUSR1)
        peak_rss = 0
        while pp.poll() is None:
            peak_rss = max(peak_rss, status_kb(pp.pid, "VmHWM"))
            time.sleep(0.5)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if pp.returncode != 0:
            log.seek(0)
            sys.exit("polyprof failed:\n" + log.read()[-3000:])
        pp = None
        load1 = os.getloadavg()
        lines = (out / "last_profile.col").read_text().split("\n")
        hdr = json.loads(lines[0][2:])["polyprof"]
        u = hdr["unwind"]
        sampled = set()
        for line in lines[1:]:
            m = re.search(r";(ppb[0-9_a-z]+);", ";" + line)
            if m:
                sampled.add(m.group(1))
        total_rows = rows * a.count if a.binaries == "distinct" else rows
        print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
              f"after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        print(f"| processes | binaries | rows per file | rows demanded (x 24 B) | cache cap |"
              f" polyprof CPU s | peak RSS | unwind.table_bytes | copies loaded ((table_bytes / 8 -"
              f" shared libraries' rows) / rows) | cfi / fallback samples |")
        print(f"| {a.count} {a.program} | {a.binaries} | {rows} |"
              f" {total_rows} ({total_rows * 24 / 2**20:.1f} MiB) |"
              f" {a.cache_mib or 32} MiB | {cpu:.2f} | {peak_rss / 1024:.1f} MiB |"
              f" {u['table_bytes']} ({u['table_bytes'] / 2**20:.2f} MiB) |"
              f" {(u['table_bytes'] / 8 - lib_rows) / max(rows, 1):.1f} |"
              f" {u['cfi_samples']} / {u['fallback_samples']} |")
        print(f"shared libraries {libs}: {lib_rows} rows")
        print(f"comms seen in the profile: {len(sampled)}; header unwind: {json.dumps(u)}")
    finally:
        if log:
            log.close()
        if pp is not None:
            pp.kill()
            pp.wait()
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
