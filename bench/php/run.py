#!/usr/bin/env python3
"""Benchmark of the PHP walker in the BPF sampler (issue 14; docs/php.md), printed as figures
measured side by side in one run. Run as root, under the test lock:

    flock /tmp/polyprof-test.lock python3 bench/php/run.py [--seconds N]

(1) BPF time per sample (kernel.bpf_stats_enabled: run_time_ns / run_cnt of pp_sample) with
    and without the PHP walk of a busy process 50 frames deep (--no-php vs --php-mode builtin);
(2) polyprof's CPU against the CPU of a busy php-fpm pool (4 workers, 4 FastCGI clients on
    loopback) it profiles with --php-mode builtin, and with --no-php.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "pywalk"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from run import per_sample_ns  # noqa: E402  (bench/pywalk/run.py)
from test_php_fpm import FPM, children, fcgi_get, free_port  # noqa: E402

POLYPROF = ROOT / "build" / "polyprof"
PHP = shutil.which("php8.2") or shutil.which("php")


def proc_cpu(pid):
    """utime + stime of pid in seconds, 0 when gone."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def fpm_pool(d):
    port = free_port()
    os.chmod(d, 0o755)
    script = d / "fpm_work.php"
    shutil.copy(ROOT / "tests" / "integration" / "apps" / "php" / "fpm_work.php", script)
    os.chmod(script, 0o644)
    (d / "fpm.conf").write_text(f"""[global]
pid = {d}/fpm.pid
error_log = {d}/fpm.log
daemonize = no
[www]
user = nobody
group = nogroup
listen = 127.0.0.1:{port}
pm = static
pm.max_children = 4
""")
    p = subprocess.Popen([FPM, "-F", "-y", str(d / "fpm.conf")], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    while len(children(p.pid)) < 4:
        time.sleep(0.1)
    return p, port, str(script)


def pool_run(seconds, port, script, workers, args):
    """(polyprof CPU s, pool CPU s, requests) over one session under load."""
    stop = threading.Event()
    done = [0]

    def load():
        while not stop.is_set():
            if fcgi_get(port, script):
                done[0] += 1

    ts = [threading.Thread(target=load, daemon=True) for _ in range(4)]
    for t in ts:
        t.start()
    time.sleep(1)
    w0 = sum(proc_cpu(w) for w in workers)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([str(POLYPROF), "-d", str(seconds), "-f", "99", "-o", out,
                        "--no-flamegraph", *args], check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w1 = sum(proc_cpu(w) for w in workers)
    stop.set()
    for t in ts:
        t.join(20)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return cpu, w1 - w0, done[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    a = ap.parse_args()
    if not PHP or not FPM:
        sys.exit("needs php8.2 and php-fpm8.2 (Debian's php8.2-cli, php8.2-fpm)")
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    was = stats.read_text().strip()
    stats.write_text("1")
    b = subprocess.Popen([PHP, str(ROOT / "bench" / "php" / "deep.php")],
                         stdout=subprocess.PIPE, text=True)
    b.stdout.readline()
    try:
        off, n_off = per_sample_ns(a.seconds, "--no-php", "--pids", str(b.pid))
        on, n_on = per_sample_ns(a.seconds, "--php-mode", "builtin", "--pids", str(b.pid))
    finally:
        b.kill()
        b.wait()
        stats.write_text(was)
    print(f"(1) BPF per sample: {off / 1000:.2f} us without the walk ({n_off} samples), "
          f"{on / 1000:.2f} us with it ({n_on} samples): +{(on - off) / 1000:.2f} us for "
          f"50 frames")
    d = Path(tempfile.mkdtemp(prefix="pp_bench_fpm_"))
    fpm, port, script = fpm_pool(d)
    try:
        workers = children(fpm.pid)
        for label, args in (("--no-php", ["--no-php"]),
                            ("--php-mode builtin", ["--php-mode", "builtin"])):
            cpu, pool, reqs = pool_run(a.seconds, port, script, workers, args)
            print(f"(2) {label}: polyprof {cpu:.2f} CPU s, the pool {pool:.2f} CPU s "
                  f"({reqs} requests): polyprof = {100 * cpu / max(pool, 1e-9):.1f} % of the "
                  f"pool's CPU")
    finally:
        fpm.terminate()
        fpm.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
