"""PHP-FPM under load with workers replaced during the session (issue 14, docs/php.md): Debian's
php-fpm8.2 (opcache on, as Debian ships it) with pm.max_requests low, a FastCGI load generator on
loopback, polyprof --php-mode builtin. phpspy's known weakness is an error flood and lost samples
when workers exit; polyprof must stay quiet, name every worker's PHP frames, exited ones
included, and nothing may crash."""
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import APPS, last_profile, run_polyprof, wait_for

FPM = shutil.which("php-fpm8.2") or (os.access("/usr/sbin/php-fpm8.2", os.X_OK) and
                                     "/usr/sbin/php-fpm8.2")
pytestmark = pytest.mark.skipif(not FPM, reason="php-fpm8.2 (Debian's php8.2-fpm) is not installed")

MAX_CHILDREN = 3
MAX_REQUESTS = 50


def fcgi_params(pairs):
    out = b""
    for k, v in pairs.items():
        k, v = k.encode(), v.encode()
        for x in (k, v):
            out += bytes([len(x)]) if len(x) < 128 else struct.pack(">I", len(x) | 0x80000000)
        out += k + v
    return out


def fcgi_record(kind, body, rid=1):
    return struct.pack(">BBHHBB", 1, kind, rid, len(body), 0, 0) + body


def fcgi_get(port, script):
    """One FastCGI request to php-fpm; returns its stdout."""
    params = fcgi_params({"SCRIPT_FILENAME": script, "SCRIPT_NAME": "/" + Path(script).name,
                          "REQUEST_METHOD": "GET", "QUERY_STRING": "", "CONTENT_LENGTH": "0",
                          "SERVER_PROTOCOL": "HTTP/1.1", "GATEWAY_INTERFACE": "CGI/1.1",
                          "REMOTE_ADDR": "127.0.0.1", "SERVER_NAME": "localhost",
                          "SERVER_PORT": "80"})
    msg = (fcgi_record(1, struct.pack(">HB5x", 1, 0)) + fcgi_record(4, params) +
           fcgi_record(4, b"") + fcgi_record(5, b""))
    out = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(msg)
        buf = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        while len(buf) >= 8:
            _, kind, _, clen, plen, _ = struct.unpack(">BBHHBB", buf[:8])
            if kind == 6:
                out += buf[8:8 + clen]
            buf = buf[8 + clen + plen:]
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid):
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_fpm_workers_replaced_under_load():
    d = Path(tempfile.mkdtemp(prefix="pp_fpm_"))
    os.chmod(d, 0o755)  # the workers run as nobody
    script = d / "fpm_work.php"
    shutil.copy(APPS / "php" / "fpm_work.php", script)
    os.chmod(script, 0o644)
    port = free_port()
    conf = d / "fpm.conf"
    conf.write_text(f"""[global]
pid = {d}/fpm.pid
error_log = {d}/fpm.log
daemonize = no
[www]
user = nobody
group = nogroup
listen = 127.0.0.1:{port}
pm = static
pm.max_children = {MAX_CHILDREN}
pm.max_requests = {MAX_REQUESTS}
""")
    fpm = subprocess.Popen([FPM, "-F", "-y", str(conf)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    stop = threading.Event()
    done, failures = [0], []

    def load():
        while not stop.is_set():
            try:
                if b"\n" in fcgi_get(port, str(script)):
                    done[0] += 1
            except OSError as e:
                failures.append(str(e))
                time.sleep(0.05)

    threads = []
    try:
        wait_for(lambda: len(children(fpm.pid)) == MAX_CHILDREN, 20, "php-fpm's workers")
        wait_for(lambda: b"\n" in fcgi_get(port, str(script)), 20, "a first answer")
        threads = [threading.Thread(target=load, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        out = d / "out"
        t0 = time.time()
        r = run_polyprof("-v", "-d", 8, "-f", 99, "-o", out, "--php-mode", "builtin")
        t1 = time.time()
        stop.set()
        for t in threads:
            t.join(20)
        assert fpm.poll() is None, "php-fpm died"
        log = (d / "fpm.log").read_text()
        assert not re.search(r"SIGSEGV|SIGBUS|SIGABRT|core dumped", log), log[-2000:]
        assert done[0] > 2 * MAX_CHILDREN * MAX_REQUESTS, (done[0], failures[:3])
        assert len(failures) <= 2, failures[:5]

        # polyprof is quiet: no error, no warning about these processes
        noisy = [x for x in r.stderr.splitlines() if ("] ERROR" in x or "] WARNING" in x)
                 and ("php" in x or "process_vm_readv" in x or "No such process" in x)]
        assert not noisy, noisy[:5]

        prof = last_profile(out)
        # workers were replaced during the session, and each new one was registered for the
        # walk (the log names each; the header's coverage keeps only those still registered at
        # the session's end)
        walked = {int(m[1]) for m in re.finditer(r"php pid (\d+): PHP [0-9.]+ walked in the "
                                                 r"sampler", r.stderr)}
        # every worker started while the session ran (the log has whole seconds: 1 s margins;
        # at the end 2 s: polyprof exits up to ~1 s after its session, whose end stops the
        # watcher, and a worker logged at second S started before S + 1)
        started = {int(m[2]) for m in re.finditer(r"\[([^]]+)\] NOTICE: \[pool www\] child (\d+) "
                                                 r"started", log)
                   if t0 + 1 <= time.mktime(time.strptime(m[1], "%d-%b-%Y %H:%M:%S")) <= t1 - 2}
        assert len(walked - {fpm.pid}) > MAX_CHILDREN, walked
        assert [p for p in walked if not Path(f"/proc/{p}").exists()], "no walked worker exited"
        assert started and started <= walked, (started - walked, walked)
        cov = [c for c in prof.header["polyprof"]["runtime_samples"] if c["runtime"] == "php"]
        for c in cov:
            if (c["pid"] != fpm.pid and c["profiler"] == "sampler-walk" and
                    c["sampler_samples"] >= 5):
                assert c["runtime_samples"] >= 0.5 * c["sampler_samples"], c
        # their samples are named, those of exited workers included
        frame = re.compile(r"fpm_work (\S+):(\d+)_\[php\]")
        php_samples = named = lost = 0
        for f, n in prof.stacks:
            if not f[2].startswith("php-fpm"):
                continue
            if any(x.endswith("_[php]") for x in f):
                php_samples += n
            lost += n * sum(x == "[lost symbol]_[php]" for x in f)
            for x in f:
                m = frame.fullmatch(x)
                if m:
                    assert m[1] == str(script) and 4 <= int(m[2]) <= 10, x
                    named += n
                    break
        assert named >= 0.5 * php_samples > 50, (named, php_samples)
        assert lost <= 0.02 * php_samples, (lost, php_samples)
        assert prof.header["polyprof"]["runtime_walks"]["frames_lost"] <= 0.02 * php_samples
    finally:
        stop.set()
        for t in threads:
            t.join(20)
        fpm.terminate()
        try:
            fpm.wait(10)
        except subprocess.TimeoutExpired:
            fpm.kill()
            fpm.wait()
        shutil.rmtree(d, ignore_errors=True)
