"""Hardening (issue 10): nothing another user plants on the host can make polyprof (root) write
through a link, stop starting, hang or grow without bound; signals end a run cleanly; leftovers
of a killed polyprof are recognised. Another user is uid 65534 (nobody), in a forked child."""
import datetime
import os
import shutil
import socket
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (POLYPROF, App, LineReader, Profile, last_profile, temp_leftovers,
                      wait_for)
# the JVM fixtures (names only: importing a test function would run it twice)
from test_java import (ASPROF_RESOURCES, asprof_env, hot_classes, jdk,  # noqa: F401
                       launchers, warm)

NOBODY = 65534
SYS_PYTHON = "/usr/bin/python3"  # readable by nobody (the test's own python may not be)


def as_nobody(code):
    """Runs Python code as uid/gid 65534 with no supplementary groups."""
    subprocess.run([SYS_PYTHON, "-c", code], user=NOBODY, group=NOBODY, extra_groups=[],
                   check=True, timeout=30, cwd="/")


class Background:
    """polyprof in the background; its stderr read on a thread (conftest.LineReader)."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([str(POLYPROF), *map(str, args)], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True, env=env)
        self.err = LineReader(self.proc.stderr)

    @property
    def pid(self):
        return self.proc.pid

    def wait_line(self, needle, timeout=30):
        self.err.wait_line(lambda x: needle in x, timeout, f"{needle!r} logged")

    def finish(self, timeout=60):
        self.proc.wait(timeout)
        self.stderr = self.err.text()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()
        self.proc.stderr.close()


@pytest.fixture
def shared_dir():
    """A directory every user can write in (0777, not sticky), like a careless output dir."""
    d = Path(tempfile.mkdtemp(prefix="pp_it_shared_", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def victim(tmp_path):
    """A root-owned file in a root-only directory: what a planted link would make polyprof
    overwrite."""
    v = tmp_path / "victim"
    v.write_text("precious\n")
    return v


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


# ---- 1: files polyprof creates ----

def test_links_planted_in_the_output_dir_are_never_followed(shared_dir, victim):
    """The old temp file was .polyprof-tmp-<pid>-profile_<end second>.col, opened with
    O_CREAT|O_TRUNC: links planted under the next seconds' names made root write the profile
    into any file. Also the pid file."""
    pidfile = shared_dir / "pp.pid"
    run = Background("-d", 3, "-o", shared_dir, "--pid-file", pidfile, "--no-java",
                     "--no-python", "--no-ruby")
    try:
        run.wait_line("polyprof 0.1.0 starting")  # the output dir's leftovers are cleaned by then
        now = int(time.time())
        names = [f".polyprof-tmp-{run.pid}-last_profile.col"]
        for t in range(now - 1, now + 30):
            names += [f".polyprof-tmp-{run.pid}-profile_{iso(t)}.col",
                      f".polyprof-tmp-{run.pid}-profile_{iso(t)}_1.col"]
        as_nobody(f"import os\n"
                  f"for n in {names!r}:\n"
                  f"    os.symlink({str(victim)!r}, os.path.join({str(shared_dir)!r}, n))\n")
        assert run.finish() == 0, run.stderr[-3000:]
    finally:
        run.kill()
    assert victim.read_text() == "precious\n", "a planted link was written through"
    prof = last_profile(shared_dir)  # the profile is still written, complete
    assert prof.header and prof.stacks
    assert not pidfile.exists(), "the pid file is removed at exit"


@pytest.fixture
def sticky_dir():
    """A directory like /tmp: every user can create names in it (1777)."""
    d = Path(tempfile.mkdtemp(prefix="pp_it_sticky_", dir="/tmp"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_planted_profile_names_do_not_lose_the_profile(sticky_dir):
    """Another user who can create names in the output directory (a sticky /tmp) took
    profile_<T>.col and _1 to _99 for the coming seconds: the rename had no name left and the
    run exited 1 ("cannot rename ... File exists"), losing the profile. The name now falls back
    to profile_<T>_<random>.col (and .html)."""
    out = sticky_dir
    run = Background("-d", 3, "-o", out, "--no-java", "--no-python", "--no-ruby")
    try:
        run.wait_line("polyprof 0.1.0 starting")
        now = int(time.time())
        stems = [f"profile_{iso(t)}" for t in range(now - 1, now + 20)]
        as_nobody(f"import os\n"
                  f"for s in {stems!r}:\n"
                  f"    for ext in ('.col', '.html'):\n"
                  f"        for n in [''] + ['_%d' % i for i in range(1, 100)]:\n"
                  f"            open(os.path.join({str(out)!r}, s + n + ext), 'x').close()\n")
        assert run.finish() == 0, run.stderr[-3000:]
    finally:
        run.kill()
    col = (out / "last_profile.col").resolve()
    assert col.parent == out and col.stat().st_uid == 0, col
    assert col.name.startswith("profile_") and col.stat().st_size > 0
    prof = last_profile(out)
    assert prof.header and prof.stacks
    html = (out / "last_flamegraph.html").resolve()
    assert html.name == col.name[:-4] + ".html", (html, col)
    assert html.stat().st_uid == 0 and html.stat().st_size > 0


def test_output_is_utf8_whatever_a_process_is_named(outdir, start_app):
    """Any user can name a process with bytes that are not UTF-8 (here 0xff 0xfe): they went
    raw into the .col (and the flame graph, the log), which UTF-8 readers refuse. Each invalid
    byte is U+FFFD now (docs/security.md, "Output encoding")."""
    app = start_app(SYS_PYTHON, "-c", "open('/proc/self/comm', 'wb').write(b'\\xff\\xfepp_bad')\n"
                    "print('ready', flush=True)\n"
                    "while True:\n"
                    "    pass\n")
    with open(f"/proc/{app.pid}/comm", "rb") as f:
        assert f.read() == b"\xff\xfepp_bad\n", "the fixture named itself"
    log = outdir / "pp.log"
    run = Background("-d", 3, "-o", outdir, "--no-java", "--no-ruby", "--log-file", log)
    try:
        assert run.finish() == 0, run.stderr[-3000:]
    finally:
        run.kill()
    col = (outdir / "last_profile.col").read_bytes().decode("utf-8")  # strict
    comms = {line.split(";")[2] for line in col.split("\n")[1:] if line.count(";") >= 2}
    assert "\ufffd\ufffdpp_bad" in comms, sorted(comms)[:50]
    (outdir / "last_flamegraph.html").read_bytes().decode("utf-8")
    log.read_bytes().decode("utf-8")


def test_pid_file_link_is_replaced_not_written_through(shared_dir, victim):
    pidfile = shared_dir / "pp.pid"
    as_nobody(f"import os; os.symlink({str(victim)!r}, {str(pidfile)!r})")
    run = Background("-d", 2, "-o", shared_dir / "out", "--pid-file", pidfile, "--no-java",
                     "--no-python", "--no-ruby")
    try:
        wait_for(lambda: not pidfile.is_symlink() and pidfile.exists(), 20, "the pid file")
        assert pidfile.read_text() == str(run.pid)
        assert pidfile.stat().st_uid == 0
        assert run.finish() == 0, run.stderr[-3000:]
    finally:
        run.kill()
    assert victim.read_text() == "precious\n"


# ---- 6: signals ----

@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT])
def test_terminating_signals_finish_the_session_like_sigterm(sig, outdir):
    run = Background("-v", "-d", 60, "-f", 49, "-o", outdir, "--no-java", "--no-python",
                     "--no-ruby")
    try:
        run.wait_line("drained:")  # samples are in the session's profile
        t0 = time.monotonic()
        run.proc.send_signal(sig)
        assert run.finish(timeout=20) == 0, run.stderr[-3000:]
        assert time.monotonic() - t0 < 10
    finally:
        run.kill()
    assert f"received signal {int(sig)}" in run.stderr
    files = list(outdir.glob("profile_*.col"))
    assert len(files) == 1, files
    assert Profile(files[0]).stacks  # complete, parses
    assert not temp_leftovers(outdir)


def test_other_signals_are_ignored(outdir):
    """SIGUSR1, SIGUSR2, SIGALRM and SIGPIPE killed polyprof at once (default action)."""
    run = Background("-v", "-d", 3, "-f", 49, "-o", outdir, "--no-java", "--no-python",
                     "--no-ruby")
    try:
        run.wait_line("profiling session started")
        for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE):
            run.proc.send_signal(sig)
        # the session runs to its end and is written as usual
        assert run.finish(timeout=30) == 0, run.stderr[-3000:]
    finally:
        run.kill()
    assert "received signal" not in run.stderr
    assert Profile(outdir / "last_profile.col").stacks


# ---- 3: unbounded inputs ----

@pytest.mark.parametrize("kind", ["fifo", "dir", "dev-zero", "too-large", "binary"])
def test_config_file_is_a_bounded_regular_file(kind, tmp_path):
    """--config /dev/zero grew to gigabytes, a FIFO hung start-up, a directory was ignored, a
    binary file's bytes were echoed to the terminal."""
    path = {"dir": tmp_path, "dev-zero": Path("/dev/zero")}.get(kind, tmp_path / "config.ini")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "too-large":
        with open(path, "wb") as f:
            f.truncate(2 << 20)
    elif kind == "binary":
        path.write_bytes(b"\x1b]0;pwned\x07\x1b[2J\xff = 1\n")
    r = subprocess.run([str(POLYPROF), "-o", tmp_path / "out", "-d", "1", "--config", path],
                       capture_output=True, timeout=20)
    err = r.stderr.decode("latin-1")
    assert r.returncode == 2, err
    assert str(path) in err or kind == "binary", err
    want = {"fifo": "is a FIFO", "dir": "is a directory", "dev-zero": "is a character device",
            "too-large": "too large", "binary": "\\x1b]0;pwned\\x07\\x1b[2J\\xff"}[kind]
    assert want in err, err
    assert all(0x20 <= b < 0x7f or b == 0x0a for b in r.stderr), "raw bytes on the terminal"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_upload_file_input_is_a_bounded_regular_file(kind, tmp_path):
    path = Path("/dev/zero") if kind == "dev-zero" else tmp_path / "fifo"
    if kind == "fifo":
        os.mkfifo(path)
    r = subprocess.run([str(POLYPROF), "upload-file", "--file-path", path, "--token", "t",
                        "--service-name", "s", "--server-host", "http://127.0.0.1:9"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, r.stderr
    assert "give a regular file" in r.stderr and str(path) in r.stderr, r.stderr


def test_huge_perf_map_costs_bounded_memory(tmp_path, start_app):
    """A 200 MB /tmp/perf-<pid>.map (its owner writes what it wants) made polyprof hold 477 MB.
    Now at most 16 MiB per process is kept, the newest entries (the one naming the running code
    is the last line), and the dropped entries are counted in the header."""
    exe = tmp_path / "pp_jit"
    subprocess.run(["gcc", "-O1", "-o", exe, Path(__file__).parent / "apps" / "jit.c"],
                   check=True)
    app = start_app(exe)
    code = int(app.first_line.split()[2], 16)
    perfmap = Path(f"/tmp/perf-{app.pid}.map")
    try:
        with open(perfmap, "w") as f:
            line = "LazyCompile:~a_function_with_a_long_name /srv/app/node_modules/x/y.js:10:20\n"
            for k in range(250):  # 2.5 million entries at distinct addresses, ~200 MB
                f.write("".join(f"{0x10000000 + (k * 10000 + i) * 0x40:x} 40 {line}"
                                for i in range(10000)))
            f.write(f"{code:x} 10 jit_spin_loop\n")
        assert perfmap.stat().st_size > 200e6
        out = tmp_path / "out"
        p = subprocess.Popen([str(POLYPROF), "-d", "3", "-f", "99", "-o", out, "--pids", str(app.pid),
                              "--no-java", "--no-python", "--no-ruby"],
                             stderr=subprocess.PIPE, text=True)
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        p.stderr.close()
    finally:
        perfmap.unlink(missing_ok=True)
    assert p.returncode == 0, err[-3000:]
    assert usage.ru_maxrss < 150 * 1024, f"polyprof's peak RSS {usage.ru_maxrss >> 10} MiB"
    prof = last_profile(out)
    frames = [f for f, _ in prof.for_comm("pp_jit")]
    assert any("jit_spin_loop" in f for f in frames), frames[:5]
    assert prof.header["polyprof"]["perf_map_entries_dropped"] > 2_000_000


def _saved_delays(text):
    """The 'N ms after the session end' of each 'Saved collapsed stacks' line, in order."""
    return [int(x.split("(")[-1].split(" ms")[0]) for x in text.splitlines()
            if "Saved collapsed stacks to" in x and " ms after the session end)" in x]


def _named_share(prof):
    """Of pp_jit's samples in the JIT region: (named from the map, unnamed)."""
    named = prof.count_where("pp_jit", lambda f: any(x.startswith("jit_region_") for x in f))
    unnamed = prof.count_where("pp_jit", lambda f: any(x.startswith("(/tmp/perf-") for x in f))
    return named, unnamed


@pytest.fixture
def nobody_jit_with_500mb_map():
    """pp_jit running as nobody, spinning in its anonymous executable page, and a 500 MB
    /tmp/perf-<pid>.map that nobody wrote: 6.5 million other functions, then the lines naming
    the page (the last lines of the file: only a read to its end names the running code)."""
    d = Path(tempfile.mkdtemp(prefix="pp_it_pm_", dir="/tmp"))
    d.chmod(0o755)
    for src, exe in (("jit.c", "pp_jit"), ("perfmap_writer.c", "pmwriter")):
        subprocess.run(["gcc", "-O1", "-o", d / exe, Path(__file__).parent / "apps" / src],
                       check=True)
    app = App([str(d / "pp_jit")], user=NOBODY, group=NOBODY, extra_groups=[])
    perfmap = Path(f"/tmp/perf-{app.pid}.map")
    try:
        code = int(app.first_line.split()[2], 16)
        subprocess.run([d / "pmwriter", perfmap, "500", f"{code:x}", "1000"], user=NOBODY,
                       group=NOBODY, extra_groups=[], check=True, timeout=300, cwd="/")
        st = perfmap.stat()
        assert st.st_uid == NOBODY and st.st_size > 500e6
        yield app
    finally:
        app.stop()
        perfmap.unlink(missing_ok=True)
        shutil.rmtree(d, ignore_errors=True)


def test_huge_perf_map_is_read_off_the_session_end(nobody_jit_with_500mb_map, tmp_path):
    """A 200 MB perf map of any user was parsed on the path that builds the profile: the .col came
    6.2-10.5 s after a session's end (documented: 2 s). It is read by a background worker during
    the sessions now: 1 s sessions are written at once, and the next session names the code from
    the map (it is not skipped)."""
    app = nobody_jit_with_500mb_map
    out = tmp_path / "out"
    run = Background("-v", "-c", "-d", 1, "-f", 99, "-o", out, "--pids", app.pid, "--no-java",
                     "--no-python", "--no-ruby")
    try:
        run.err.wait_line(lambda x: len(_saved_delays("".join(run.err.lines))) >= 2, 120,
                          "two sessions written")
        files = sorted(out.glob("profile_*.col"))
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish(timeout=30) == 0, run.stderr[-3000:]
    finally:
        run.kill()
    delays = _saved_delays(run.stderr)
    assert max(delays[:2]) <= 500, f"session end -> .col: {delays} ms"
    named, unnamed = _named_share(Profile(files[1]))
    assert named + unnamed >= 20, (named, unnamed, "host starved")
    assert named >= 0.9 * (named + unnamed), \
        f"the next session named {named} of {named + unnamed} JIT samples from the map"



def test_huge_perf_map_being_read_does_not_delay_a_stop(nobody_jit_with_500mb_map, tmp_path):
    """SIGTERM while the 500 MB map is being read: polyprof exits within its 6 s (the read ends
    at its next chunk); it took 9.8-10.1 s while the map was parsed in the drain."""
    app = nobody_jit_with_500mb_map
    run = Background("-v", "-d", 30, "-f", 99, "-o", tmp_path / "out2", "--pids", app.pid,
                     "--no-java", "--no-python", "--no-ruby")
    try:
        run.wait_line("in the background", timeout=120)
        t0 = time.monotonic()
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish(timeout=60) == 0, run.stderr[-3000:]
        took = time.monotonic() - t0
    finally:
        run.kill()
    assert took <= 6.0, f"SIGTERM -> exit: {took:.1f} s"
    assert "more to read" in run.stderr, "the map was not being read when the stop came"


# ---- 5: the log file ----

def test_log_file_link_is_not_followed(shared_dir, victim):
    log = shared_dir / "pp.log"
    as_nobody(f"import os; os.symlink({str(victim)!r}, {str(log)!r})")
    r = subprocess.run([str(POLYPROF), "-d", "1", "-o", shared_dir / "out", "--log-file", log,
                        "--no-java", "--no-python", "--no-ruby"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious\n", "the log was written through a planted link"
    assert f"cannot use log file {log}: it is a symbolic link" in r.stderr, r.stderr


def test_log_file_fifo_does_not_block_start_up(tmp_path):
    log = tmp_path / "pp.log"
    os.mkfifo(log)
    r = subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "out", "--log-file", log,
                        "--no-java", "--no-python", "--no-ruby"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "cannot use log file" in r.stderr and "FIFO" in r.stderr, r.stderr


def test_log_file_rotates(tmp_path):
    log = tmp_path / "pp.log"
    r = subprocess.run([str(POLYPROF), "-d", "2", "-o", tmp_path / "out", "--log-file", log,
                        "--log-rotate-max-size", "500", "--log-rotate-backup-count", "2",
                        "--no-flamegraph"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pp.log"))
    assert names == ["pp.log", "pp.log.1", "pp.log.2"], names
    texts = {n: (tmp_path / n).read_bytes().decode("utf-8") for n in names}
    for n in names:  # a file is rotated before a line would take it to 500 bytes
        text = texts[n]
        # only a single line of 500 bytes or more by itself may make a file that large
        assert 0 < len(text) < 500 or text.count("\n") == 1, (n, len(text))
    # and not before: each rotated file plus the first line of the next newer one (the line
    # that did not fit) reaches 500 bytes (a rotation at every line left one-line files)
    for older, newer in (("pp.log.2", "pp.log.1"), ("pp.log.1", "pp.log")):
        nxt = texts[newer].splitlines(keepends=True)[0]
        assert len(texts[older].encode()) + len(nxt.encode()) >= 500, \
            (older, len(texts[older]), texts[older].count("\n"), len(nxt))
    # the newest lines are in the file itself: oldest to newest, pp.log.2, pp.log.1, pp.log
    stamps = [x[:25] for n in reversed(names) for x in (tmp_path / n).read_text().splitlines()]
    assert stamps == sorted(stamps), stamps


# ---- 2: the single-instance lock ----

def test_second_instance_in_another_network_namespace_is_refused(tmp_path):
    """The abstract socket is bound in PID 1's network namespace only where that namespace can be
    entered (not on this host): two instances in different namespaces both ran."""
    first = Background("-d", 60, "-o", tmp_path / "a", "--no-java", "--no-python", "--no-ruby")
    try:
        first.wait_line("profiling session started")
        r = subprocess.run(["unshare", "-n", str(POLYPROF), "-d", "1", "-o", tmp_path / "b",
                            "--no-java", "--no-python", "--no-ruby"],
                           capture_output=True, text=True, timeout=60)
        first.proc.send_signal(signal.SIGTERM)
        assert first.finish() == 0, first.stderr[-3000:]
    finally:
        first.kill()
    assert r.returncode == 1, r.stderr
    assert "Could not acquire polyprof's lock: another polyprof holds /run/polyprof.lock" \
        in r.stderr, r.stderr
    assert not list((tmp_path / "b").glob("*.col"))
    try:
        os.close(os.open("/proc/1/ns/net", os.O_RDONLY))
        entered = True
    except OSError:
        entered = False
    if not entered:  # only the file lock is known to be host-wide: said at warning level
        assert "WARNING: polyprof: single-instance lock:" in first.stderr, first.stderr


@pytest.fixture
def gprofiler_lock():
    """What a running gProfiler holds: the abstract socket gprofiler_lock."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0gprofiler_lock")
    yield
    s.close()


def test_beside_gprofiler_only_without_async_profiler(gprofiler_lock, tmp_path):
    r = subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "a", "--java-mode", "ap"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "gProfiler is running on this host" in r.stderr and "--java-mode jfr" in r.stderr
    r = subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "b", "--java-mode", "jfr"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "WARNING: polyprof: gProfiler is also running on this host" in r.stderr


# ---- 4: scratch space and files targets read ----

@pytest.fixture
def old_scratch():
    """/tmp/polyprof_tmp, where polyprof kept its scratch space before (older builds on this
    host may still use it): moved aside for the test, put back after."""
    p = Path("/tmp/polyprof_tmp")
    aside = None
    if p.exists() or p.is_symlink():
        aside = Path(tempfile.mkdtemp(prefix="pp_it_aside_", dir="/tmp"))
        os.rename(p, aside / "polyprof_tmp")
    yield p
    if p.is_symlink() or p.is_file():
        p.unlink()
    elif p.exists():
        shutil.rmtree(p)
    if aside:
        os.rename(aside / "polyprof_tmp", p)
        aside.rmdir()


@pytest.mark.parametrize("plant", ["file", "symlink"])
def test_scratch_space_cannot_be_hijacked(plant, old_scratch, outdir):
    """`touch /tmp/polyprof_tmp` or a symlink to /etc there, by any user, made polyprof refuse
    to start (CRITICAL, exit 1)."""
    etc_before = sorted(os.listdir("/etc"))
    if plant == "file":
        as_nobody(f"open({str(old_scratch)!r}, 'w').close()")
    else:
        as_nobody(f"import os; os.symlink('/etc', {str(old_scratch)!r})")
    r = subprocess.run([str(POLYPROF), "-d", "1", "-o", outdir],  # runtime profilers enabled
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert last_profile(outdir).stacks
    st = old_scratch.lstat()
    assert st.st_uid == NOBODY, "the planted entry is left alone"
    assert sorted(os.listdir("/etc")) == etc_before
    scratch = Path("/run/polyprof").lstat()
    assert scratch.st_uid == 0 and (scratch.st_mode & 0o7777) == 0o700


def test_planted_target_dir_fails_only_that_jvm(hot_classes, launchers, start_app, outdir,
                                                tmp_path):
    """Files a JVM must read (async-profiler's library and output) go to a root-owned directory
    with a random name in the JVM's own /tmp. A user who learned the name and planted a link
    there, in a JVM's private mount namespace, costs that JVM a [Profiling error: ...] stack and
    nothing else; the link is never followed."""
    java = jdk("17") / "bin" / "java"
    env = asprof_env()
    record = Path("/run/polyprof/target-dir")
    if not record.exists():  # the name is chosen by the first run that has runtime profilers
        subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "first", "--no-python",
                        "--no-ruby"], check=True, capture_output=True, timeout=60)
    name = record.read_text()
    # the private /tmp of the second JVM: world-writable like any /tmp, the attacker's links in it
    nstmp = Path(tempfile.mkdtemp(prefix="pp_it_nstmp_", dir="/var/tmp"))
    try:
        shutil.copytree(hot_classes, nstmp, dirs_exist_ok=True)
        nstmp.chmod(0o1777)  # after the copy, which gives it the source's mode
        as_nobody(f"import os\n"
                  f"for n in ({name!r}, 'polyprof_tmp'):\n"
                  f"    os.symlink('/etc', os.path.join({str(nstmp)!r}, n))\n")
        etc_before = sorted(os.listdir("/etc"))
        host = start_app(launchers / "pp_java17", "-cp", hot_classes, "Hot")
        # --kill-child: the JVM dies with unshare when the test stops it
        ns = start_app("unshare", "--mount", "--fork", "--kill-child", "sh", "-c",
                       f"mount --bind {nstmp} /tmp && exec {java} -cp /tmp Hot")
        try:
            nspid = int(ns.first_line.split()[1])
            warm(host.pid)
            warm(nspid)
            p = subprocess.run([str(POLYPROF), "-d", "3", "-f", "99", "--java-mode", "ap", "-o",
                                outdir, "-v", "--no-python", "--no-ruby"], env=env,
                               capture_output=True, text=True, timeout=90)
        finally:
            ns.stop()
        assert p.returncode == 0, p.stderr[-3000:]
        prof = last_profile(outdir)
        ns_frames = [x for f, _ in prof.stacks if f[2] == "java" for x in f]
        assert any(x.startswith("[Profiling error:") for x in ns_frames), p.stderr[-3000:]
        host_frames = [x for f, _ in prof.for_comm("pp_java17") for x in f]
        assert host_frames and not any(x.startswith("[Profiling") for x in host_frames)
        assert sorted(os.listdir("/etc")) == etc_before
        assert (nstmp / name).is_symlink()
    finally:
        shutil.rmtree(nstmp, ignore_errors=True)


# ---- 7: leftovers of a killed polyprof ----

def attach_settled(pid):
    """The JVM's attach listener runs and no request is still starting it: the requests polyprof
    sends at a session's start run on worker threads, and a SIGKILL while one waits for the
    listener would leave its trigger file in the JVM's working directory."""
    return (Path(f"/proc/{pid}/root/tmp/.java_pid{pid}").exists() and
            not Path(f"/proc/{pid}/cwd/.attach_pid{pid}").exists())


def test_perf_map_left_by_a_killed_polyprof_is_removed(hot_classes, launchers, start_app,
                                                        tmp_path):
    """A /tmp/perf-<pid>.map made for a killed polyprof was taken for the JVM's own by every later
    run and never removed (one outlived its JVM)."""
    jdk("17")
    app = start_app(launchers / "pp_java17", "-cp", hot_classes, "Hot")
    warm(app.pid)
    perfmap = Path(f"/tmp/perf-{app.pid}.map")
    assert not perfmap.exists()
    args = ["--java-mode", "disabled", "--no-python", "--no-ruby"]  # perf maps are still made

    def killed_mid_run(out):
        run = Background("-d", 60, "-o", tmp_path / out, *args)
        try:
            run.wait_line("profiling session started")  # Compiler.perfmap was requested
            # it runs on a worker thread: the map, then polyprof's record of it
            wait_for(lambda: perfmap.exists() and
                     list(Path("/run/polyprof/perfmaps").glob(f"{app.pid}-*")) and
                     attach_settled(app.pid), 10, "the perf map and polyprof's record of it")
        finally:
            run.kill()
        assert run.proc.returncode == -signal.SIGKILL
        assert perfmap.exists(), "nothing can clean up after SIGKILL"

    try:
        killed_mid_run("a")
        # the JVM still runs: the next run treats the map as its own and removes it at its end
        r = subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "b", *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert not perfmap.exists(), "the leftover map was taken for the JVM's own"
        # killed again, then the JVM exits: the next run removes the map at start-up
        killed_mid_run("c")
        app.stop()
        r = subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "d", *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert not perfmap.exists(), "the map outlived its JVM"
        assert "removed 1 JIT perf maps left by a polyprof" in r.stderr
    finally:
        perfmap.unlink(missing_ok=True)


def test_perf_map_the_jvm_made_itself_is_kept(hot_classes, launchers, start_app, tmp_path):
    """A map that existed before polyprof asked for one belongs to someone else: never removed,
    also after a killed run."""
    jdk("17")
    app = start_app(launchers / "pp_java17", "-cp", hot_classes, "Hot")
    perfmap = Path(f"/tmp/perf-{app.pid}.map")
    perfmap.write_text("")  # e.g. the JVM runs with -XX:+DumpPerfMapAtExit and a tool made one
    try:
        warm(app.pid)
        run = Background("-d", 60, "-o", tmp_path / "a", "--java-mode", "disabled")
        try:
            run.wait_line("profiling session started")
            wait_for(lambda: attach_settled(app.pid), 10, "Compiler.perfmap to be sent")
        finally:
            run.kill()
        r = subprocess.run([str(POLYPROF), "-d", "1", "-o", tmp_path / "b", "--java-mode",
                            "disabled"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert perfmap.exists()
    finally:
        perfmap.unlink(missing_ok=True)


IMPOSTOR = r"""
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(16)
print("listening", flush=True)
# answers every request as a JVM would, with made-up metadata; reports what it got
reply = (b"0\njava.version=99.0-SPOOFED\njava.vm.name=EvilVM;frame\n"
         b"java.runtime.name=EvilVM;frame\n")
while True:
    c, _ = s.accept()
    c.settimeout(2)
    got = b""
    try:
        while got.count(b"\0") < 5:
            b = c.recv(4096)
            if not b:
                break
            got += b
        c.sendall(reply)
    except OSError:
        pass
    print(f"connection {len(got)} bytes {got!r}", flush=True)
    c.close()
"""


@pytest.mark.parametrize("version", ["17", "25"])
def test_impostor_attach_socket_gets_nothing(version, hot_classes, launchers, start_app, outdir):
    """Another user (nobody) binds /tmp/.java_pid<pid> of a root JVM that nothing has attached to
    yet and answers as the JVM would. polyprof used to connect and send VM.system_properties,
    VM.flags, Compiler.perfmap and the JFR commands with their file paths, and took the answers
    (java_version '99.0-SPOOFED … EvilVM;frame'). The socket is not owned by the JVM's user:
    polyprof connects to nothing, removes it and starts the JVM's own listener, so the planted
    socket denies nothing: the metadata and the recording are the JVM's."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", hot_classes, "Hot", 2)
    sock = Path(f"/tmp/.java_pid{app.pid}")
    assert not sock.exists(), "the JVM started its attach listener by itself"
    imp = subprocess.Popen([SYS_PYTHON, "-c", IMPOSTOR, str(sock)], user=NOBODY, group=NOBODY,
                           extra_groups=[], cwd="/", stdout=subprocess.PIPE, text=True)
    out = LineReader(imp.stdout)
    try:
        out.wait_line(lambda x: x.startswith("listening"), 30, "the impostor to listen")
        planted = sock.stat()
        assert planted.st_uid == NOBODY
        args = ["-d", 3, "-f", 99, "--java-mode", "jfr", "--pids", app.pid, "-o", outdir, "-v"]
        r = subprocess.run([str(POLYPROF), *map(str, args)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        now = sock.stat()
        assert (now.st_ino, now.st_uid) != (planted.st_ino, NOBODY), "the planted socket stayed"
        assert now.st_uid == 0, "the JVM's own socket at the path"
    finally:
        imp.kill()
        imp.wait()
        sock.unlink(missing_ok=True)
    got = out.text(timeout=10)
    assert "connection" not in got, f"the impostor was connected to:\n{got}"
    text = (outdir / "last_profile.col").read_text(encoding="utf-8")
    assert "SPOOFED" not in text and "EvilVM" not in text
    prof = last_profile(outdir)
    lines = prof.for_comm(comm)
    assert lines, r.stderr[-3000:]
    errors = {x for f, _ in lines for x in f[4:] if x.startswith("[Profiling error")}
    assert not errors, (errors, r.stderr[-3000:])
    assert f"owned by uid {NOBODY}, not by the JVM's user" in r.stderr, r.stderr[-3000:]
    md = prof.header["application_metadata"][int(lines[0][0][0])]
    assert md["java_version"].startswith(f'openjdk version "{version}.'), md
    assert "EvilVM" not in md["java_version"] and md["jvm_flags"], "the JVM's own answers"
    assert any(x.endswith("_[j]") for f, _ in lines for x in f), "the JVM's recording"
