#!/usr/bin/env python3
"""Memory soak of continuous mode (not part of `make test`): polyprof -c runs for MINUTES while
about RATE short-lived processes start per second, each a distinct executable (a copy of
churn.c's binary with a build-id of its own, so the symbol cache really sees new binaries),
beside a Node process whose perf map keeps growing, a JVM, and busy Python, Ruby and PHP processes
(the in-sampler walkers' caches). Every
minute: polyprof's RSS, peak RSS, open descriptors and CPU seconds. Fails (exit 1) when RSS ever
exceeds CAP MiB (stated before the run) or the descriptors grow.

Usage: python3 bench/soak/run.py [--minutes 60] [--rate 20] [--cap-mib 128] [--isolated]
                                  [--nice 19] [--wrap "heaptrack -o FILE"]
                                  [--workload all|churn-python]   (root; after make)

--isolated runs the whole soak in pid, mount and network namespaces of its own, with a private
/run: its polyprof sees only the soak's processes and takes a lock of its own (docs/security.md,
"The single-instance lock"), so the host stays free for other polyprof runs (tests, CI) during
the hour. --nice lowers the workload's priority so that they get the CPU others leave, and
--cpu-share caps their CPU together (a cgroup v1 `cpu` or v2 group with that many CPUs' worth of
quota), so that tests can run on the host meanwhile.
"""
import argparse
import os
import shlex
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLYPROF = ROOT / "build" / "polyprof"
APPS = ROOT / "tests" / "integration" / "apps"


def build_id_offset(path):
    """Offset of the 20-byte GNU build-id in the file."""
    data = path.read_bytes()
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    bid = next(line.split(":", 1)[1].strip() for line in out.splitlines() if "Build ID" in line)
    off = data.find(bytes.fromhex(bid))
    assert off > 0 and data.count(bytes.fromhex(bid)) == 1, "build-id not found once"
    return data, off, len(bytes.fromhex(bid))


def proc_status(pid):
    st = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        st[k] = v.strip()
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return int(st["VmRSS"].split()[0]) / 1024, int(st["VmHWM"].split()[0]) / 1024, fds, cpu


def bpf_memory(pid):
    """(MiB) the part of RSS that is BPF maps mapped into polyprof (the unwind rows array, the
    ring buffers: their pages are the kernel's, allocated whole when the map is made), and the
    memory of every BPF map polyprof holds (fdinfo's memlock), charged to its memory cgroup
    whether mapped or not."""
    rss_kb, name = 0, ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if parts and "-" in parts[0] and len(parts) >= 5:
            name = parts[5] if len(parts) > 5 else ""
        elif parts and parts[0] == "Rss:" and name == "anon_inode:bpf-map":
            rss_kb += int(parts[1])
    memlock = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-map":
                continue
            for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                if line.startswith("memlock:"):
                    memlock += int(line.split()[1])
        except OSError:
            pass
    return rss_kb / 1024, memlock / 2**20


def memory(out):
    """polyprof.memory of the last profile's header (MiB): heap in use, symbol tables, profile."""
    try:
        with open(out / "last_profile.col") as f:
            m = __import__("json").loads(f.readline()[2:])["polyprof"]["memory"]
        return tuple(m[k] / 2**20 for k in ("heap_in_use_bytes", "symbol_tables_bytes",
                                             "profile_bytes"))
    except (OSError, ValueError, KeyError):
        return (0.0, 0.0, 0.0)


def cpu_group(cpus):
    """A cgroup capping its members at cpus CPUs together; its procs file."""
    period = 100000
    # not the pid: two --isolated soaks are both pid 2 in their namespaces
    name = os.urandom(4).hex()
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.exists() and "cpu" in v2.read_text().split():
        d = Path(f"/sys/fs/cgroup/pp_soak_{name}")
        d.mkdir(exist_ok=True)
        (d / "cpu.max").write_text(f"{int(cpus * period)} {period}")
    else:
        d = Path(f"/sys/fs/cgroup/cpu/pp_soak_{name}")
        d.mkdir(exist_ok=True)
        (d / "cpu.cfs_period_us").write_text(str(period))
        (d / "cpu.cfs_quota_us").write_text(str(int(cpus * period)))
    return str(d / "cgroup.procs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--cap-mib", type=float, default=128)
    ap.add_argument("--keep", help="copy polyprof's log (run with -v) to this file")
    ap.add_argument("--isolated", action="store_true",
                    help="own pid, mount and network namespaces and a private /run")
    ap.add_argument("--nice", type=int, default=0, help="niceness of the workload processes")
    ap.add_argument("--workload", choices=["all", "churn-python"], default="all",
                    help="all: the runtimes below too; churn-python: the new executables and one "
                         "busy Python process only (issue 28's load)")
    ap.add_argument("--wrap", default="", help="command prefix for polyprof (e.g. heaptrack)")
    ap.add_argument("--cpu-share", type=float, default=0,
                    help="cap the workload's CPU together at this many CPUs (0: no cap)")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if a.isolated and not os.environ.get("PP_SOAK_INSIDE"):
        env = dict(os.environ, PP_SOAK_INSIDE="1")
        # sh is the namespace's init (an init only gets the signals it handles): the soak is
        # its child and stops cleanly on SIGINT or SIGTERM
        os.execvpe("unshare", ["unshare", "--pid", "--fork", "--mount-proc", "--mount", "--net",
                               "--", "/bin/sh", "-c", '"$@"; exit $?', "sh", sys.executable,
                               *sys.argv], env)
    if a.isolated:
        # /proc/1/root/run is where polyprof's lock file lives: make it ours alone
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)
    group = cpu_group(a.cpu_share) if a.cpu_share else None

    def spawn(argv, **kw):
        """Starts a workload process; then lowers and caps it (by its parent: a child
        that joined the group before its exec would make every start wait for the group's
        throttled CPU, and the start rate would fall)."""
        p = subprocess.Popen(argv, **kw)
        if a.nice:
            try:
                os.setpriority(os.PRIO_PROCESS, p.pid, a.nice)
            except OSError:
                pass  # already gone
        if group:
            try:
                with open(group, "w") as f:
                    f.write(str(p.pid))
            except OSError:
                pass  # already gone
        return p
    work = Path(tempfile.mkdtemp(prefix="pp_soak_"))
    helpers, live = [], []
    pp = None
    try:
        exe = work / "churn"
        subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id=sha1",
                        "-o", str(exe), str(Path(__file__).parent / "churn.c")], check=True)
        image, off, idlen = build_id_offset(exe)
        workload = [["/usr/bin/python3", str(APPS / "hot.py")]]
        if a.workload == "all":
            subprocess.run(["javac", "-d", str(work), str(APPS / "Hot.java")], check=True)
            workload += [["java", "-cp", str(work), "Hot"], ["ruby", str(APPS / "rbhot.rb")],
                         ["php", str(APPS / "php" / "hot.php")],
                         ["node", "--perf-basic-prof", str(Path(__file__).parent / "jitmap.js")]]
        for argv in workload:
            helpers.append(spawn(argv, stdout=subprocess.DEVNULL))
        out = work / "out"
        pp = subprocess.Popen(shlex.split(a.wrap)
                              + [str(POLYPROF), "-c", "-d", "60", "-f", "99", "-o", str(out),
                                 "--rotating-output", "--log-file", str(work / "pp.log")]
                              + (["-v"] if a.keep else [])
                              + (["--disable-pidns-check"] if a.isolated else []),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        what = ("node perf map, JVM, Python, Ruby, PHP" if a.workload == "all"
                else "one busy Python process")
        print(f"soak: {a.minutes:g} min, ~{a.rate:g} distinct executables/s, {what}; "
              f"cap {a.cap_mib:g} MiB RSS; polyprof pid {pp.pid}")
        print(f"{'min':>4} {'RSS MiB':>8} {'peak MiB':>9} {'fds':>5} {'CPU s':>7} {'started':>8}"
              f" {'heap':>6} {'symtab':>6} {'profile':>7} {'bpf-rss':>7} {'RSS-bpf':>7}"
              f" {'bpf-maps':>8}  (MiB; heap..profile: last session's header)")
        t0 = time.monotonic()
        next_row, started, rows = t0 + 5, 0, []
        n = 0
        while time.monotonic() - t0 < a.minutes * 60:
            if pp.poll() is not None:
                sys.exit(f"polyprof exited ({pp.returncode}); see {work}/pp.log")
            # one new distinct executable
            n += 1
            path = work / f"churn_{n}"
            with open(path, "wb") as f:
                f.write(image[:off] + random.randbytes(idlen) + image[off + idlen:])
            path.chmod(0o755)
            live.append((spawn([str(path), str(random.uniform(0.3, 1.5))]), path))
            started += 1
            for p, q in [x for x in live if x[0].poll() is not None]:
                q.unlink(missing_ok=True)
                live.remove((p, q))
            now = time.monotonic()
            if now >= next_row:
                rss, hwm, fds, cpu = proc_status(pp.pid)
                brss, bmaps = bpf_memory(pp.pid)
                rows.append((rss, hwm, fds, cpu, rss - brss, bmaps, (now - t0) / 60))
                print(f"{(now - t0) / 60:4.0f} {rss:8.1f} {hwm:9.1f} {fds:5d} {cpu:7.1f} "
                      f"{started:8d} {'%6.1f %6.1f %7.1f' % memory(out)} {brss:7.1f} "
                      f"{rss - brss:7.1f} {bmaps:8.1f}", flush=True)
                next_row = (next_row + 60) if len(rows) > 1 else t0 + 60
            time.sleep(max(0.0, 1.0 / a.rate - (time.monotonic() - now)))
        rss, hwm, fds, cpu = proc_status(pp.pid)
        brss, bmaps = bpf_memory(pp.pid)
        rows.append((rss, hwm, fds, cpu, rss - brss, bmaps, a.minutes))
        print(f"end  {rss:8.1f} {hwm:9.1f} {fds:5d} {cpu:7.1f} {started:8d}")
        steady = [r for r in rows if r[6] >= min(10, a.minutes / 2)]
        print(f"steady (minutes {min(10, a.minutes / 2):g}-{a.minutes:g}): RSS max "
              f"{max(r[0] for r in steady):.1f} MiB, RSS without the mapped BPF maps max "
              f"{max(r[4] for r in steady):.1f} MiB, BPF maps {max(r[5] for r in steady):.1f} MiB")
        pp.send_signal(signal.SIGTERM)
        rc = pp.wait(timeout=60)
        profiles = len(list(out.glob("profile_*.col")))
        first = rows[0]
        print(f"RSS start {first[0]:.1f} MiB, end {rss:.1f}, max {max(r[1] for r in rows):.1f} "
              f"(peak); fds start {first[2]}, end {fds}; CPU {cpu:.1f} s "
              f"({100 * cpu / (a.minutes * 60):.1f}% of a core); {started} processes; exit {rc}; "
              f"{profiles} profile kept")
        ok = max(r[1] for r in rows) <= a.cap_mib and fds <= first[2] + 4 and rc == 0
        print("soak:", "PASSED" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        for h in helpers:
            h.kill()
            h.wait()
            Path(f"/tmp/perf-{h.pid}.map").unlink(missing_ok=True)  # node's own map
        if pp and pp.poll() is None:
            pp.kill()
            pp.wait()
        for p, _ in live:
            p.kill()
            p.wait()
        if group:
            for _ in range(50):  # its last members may take a moment to be reaped
                try:
                    Path(group).parent.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        if a.keep and (work / "pp.log").exists():
            shutil.copy(work / "pp.log", a.keep)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
