"""The local history store (--history-dir) and `polyprof history`, with real continuous runs:
the window's merged profile equals the sum of the sessions' .col files, filters select the right
processes, the window's pprof export keeps the native frames' files and build-ids, a SIGKILLed
polyprof leaves a database SQLite finds intact, a full file system gives one WARNING while
profiling goes on, and the history command reads while polyprof writes."""
import collections
import errno
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import POLYPROF, App, Profile, run_polyprof, wait_for
from test_export import assert_mappings, pprof, raw_samples
from test_java import Run

# Runtime profilers off: the fixtures are C programs, and sessions stay short.
QUIET = ("--no-java", "--no-python", "--no-ruby", "--no-php", "--no-dotnet", "--no-nodejs",
         "--no-flamegraph")


@pytest.fixture
def two_apps(appdir, tmp_path):
    """Two copies of the hot C fixture, with the comms pp_hist_a and pp_hist_b."""
    apps = []
    try:
        for name in ("pp_hist_a", "pp_hist_b"):
            exe = tmp_path / name
            shutil.copy(appdir / "pp_hot_c", exe)
            apps.append(App([str(exe)]))
        yield apps
    finally:
        for a in apps:
            a.stop()


def cols(out):
    return sorted(Path(out).glob("profile_*.col"))


def stored_sessions(hist):
    """Sessions in the store (0 while it does not exist yet)."""
    db = Path(hist) / "history.db"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            return c.execute("SELECT count(*) FROM sessions").fetchone()[0]
    except sqlite3.OperationalError:
        return 0  # the schema is being created


def counts(profile):
    """Counts per (container, comm, frames), the metadata index left out."""
    c = collections.Counter()
    for frames, n in profile.stacks:
        c[(frames[1], frames[2], tuple(frames[3:]))] += n
    return c


def history(hist, out, *args):
    return subprocess.run([str(POLYPROF), "history", "--history-dir", str(hist), "-o", str(out),
                           *map(str, args)], capture_output=True, text=True, timeout=60)


def continuous(a, b, tmp_path):
    """polyprof -c (1 s sessions) on apps a and b: (the run, its -o directory, its history)."""
    out, hist = tmp_path / "out", tmp_path / "hist"
    run = Run("-c", "-d", 1, "-f", 99, "--pids", f"{a.pid},{b.pid}", "-o", out, "--history-dir",
              hist, "--log-file", tmp_path / "pp.log", *QUIET)
    return run, out, hist


def stop(run):
    run.proc.terminate()
    run.wait()


def test_history_of_30_sessions_equals_their_col_files_and_filters_select_processes(
        two_apps, tmp_path):
    a, b = two_apps
    run, out, hist = continuous(a, b, tmp_path)
    try:
        wait_for(lambda: run.proc.poll() is not None or len(cols(out)) >= 30, 120, "30 sessions",
                 interval=0.1)
    finally:
        stop(run)
    sessions = [Profile(p) for p in cols(out)]
    assert len(sessions) >= 30
    want = sum((counts(p) for p in sessions), collections.Counter())
    assert sum(want.values()) > 0
    r = history(hist, tmp_path / "all.col", "--since", "1h")
    assert r.returncode == 0, r.stderr
    got = counts(Profile(tmp_path / "all.col"))
    assert got == want, "the window's counts per (container, comm, frames) are the sessions' sum"

    r = history(hist, tmp_path / "b.col", "--since", "1h", "--comm", "pp_hist_b")
    assert r.returncode == 0, r.stderr
    got_b = counts(Profile(tmp_path / "b.col"))
    assert got_b == collections.Counter({k: n for k, n in want.items() if k[1] == "pp_hist_b"})
    assert got_b, "pp_hist_b was sampled"
    r = history(hist, tmp_path / "a.col", "--since", "1h", "--pid", a.pid)
    assert r.returncode == 0, r.stderr
    got_a = counts(Profile(tmp_path / "a.col"))
    assert got_a == collections.Counter({k: n for k, n in want.items() if k[1] == "pp_hist_a"})
    assert got_a, "pp_hist_a was sampled"


def test_the_history_pprof_export_keeps_the_mappings_and_build_ids(two_apps, tmp_path):
    a, b = two_apps
    run, out, hist = continuous(a, b, tmp_path)
    try:
        wait_for(lambda: run.proc.poll() is not None or stored_sessions(hist) >= 3, 60,
                 "3 stored sessions", interval=0.1)
    finally:
        stop(run)
    r = history(hist, tmp_path / "w.pb.gz", "--since", "1h")
    assert r.returncode == 0, r.stderr
    text = pprof("-raw", tmp_path / "w.pb.gz", tmp=tmp_path)
    for name in ("pp_hist_a", "pp_hist_b"):  # two_apps' copies: two files, one build-id
        assert_mappings(text, tmp_path / name, "hot_a")
    r = history(hist, tmp_path / "w.col", "--since", "1h")
    assert r.returncode == 0, r.stderr
    total = sum(n for _, n in Profile(tmp_path / "w.col").stacks)
    assert total > 0 and sum(s[0] for s in raw_samples(text)) == total, "totals unchanged"


def test_sigkill_mid_run_leaves_a_store_that_passes_the_integrity_check(two_apps, tmp_path):
    a, b = two_apps
    run, out, hist = continuous(a, b, tmp_path)
    try:
        wait_for(lambda: run.proc.poll() is not None or len(cols(out)) >= 3, 60, "3 sessions",
                 interval=0.02)
        n = len(cols(out))
        # the history write follows the .col's: killed as soon as a new .col appears
        wait_for(lambda: run.proc.poll() is not None or len(cols(out)) > n, 30, "a new session",
                 interval=0.005)
        run.proc.send_signal(signal.SIGKILL)
    finally:
        run.proc.kill()
        run.proc.wait()
    run._t.join(5)
    assert run.proc.returncode == -signal.SIGKILL, "".join(run._err)[-3000:]
    db = hist / "history.db"
    with sqlite3.connect(str(db), timeout=5) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = c.execute("SELECT count(*) FROM sessions").fetchone()[0]
    assert len(cols(out)) - 1 <= stored <= len(cols(out)), \
        "at most the session being written is lost"
    r = history(hist, tmp_path / "q.col", "--since", "1h")
    assert r.returncode == 0, r.stderr


def test_a_full_file_system_gives_one_warning_and_profiling_goes_on(two_apps, tmp_path):
    a, b = two_apps
    fs, out = tmp_path / "fs", tmp_path / "out"
    fs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(fs)],
                   check=True)
    run = None
    try:
        hist = fs / "hist"
        run = Run("-c", "-d", 1, "-f", 99, "--pids", f"{a.pid},{b.pid}", "-o", out,
                  "--history-dir", hist, "--log-file", tmp_path / "pp.log", *QUIET)
        wait_for(lambda: run.proc.poll() is not None or stored_sessions(hist) >= 1, 60,
                 "a stored session")
        with open(fs / "filler", "wb") as f:  # the file system full
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as e:
                assert e.errno == errno.ENOSPC
        warned = lambda: any("history: the disk is full" in line for line in run._err)
        wait_for(lambda: run.proc.poll() is not None or warned(), 30, "the WARNING")
        n = len(cols(out))
        wait_for(lambda: run.proc.poll() is not None or len(cols(out)) >= n + 3, 30,
                 "3 sessions after the WARNING")
        assert run.proc.poll() is None, "polyprof goes on: " + "".join(run._err)[-3000:]
        stop(run)
    finally:
        if run and run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()
        subprocess.run(["umount", "-l", str(fs)], check=False)
    full = [line for line in run.stderr.splitlines() if "history: the disk is full" in line]
    assert len(full) == 1, full
    assert "WARNING" in full[0]


def test_the_history_command_reads_while_polyprof_writes(two_apps, tmp_path):
    a, b = two_apps
    run, out, hist = continuous(a, b, tmp_path)
    try:
        wait_for(lambda: run.proc.poll() is not None or stored_sessions(hist) >= 1, 60,
                 "a stored session")
        first = stored_sessions(hist)
        seen = set()
        deadline = time.monotonic() + 30
        # reads back to back while sessions are written, until two more were written meanwhile
        while time.monotonic() < deadline and run.proc.poll() is None:
            r = history(hist, tmp_path / "q.col", "--since", "1h")
            assert r.returncode == 0, r.stderr
            p = Profile(tmp_path / "q.col")
            seen.add(p.header["history"]["sessions"])
            if max(seen) >= first + 2:
                break
        assert run.proc.poll() is None, "".join(run._err)[-3000:]
        assert max(seen) >= first + 2, f"reads saw {sorted(seen)}"
    finally:
        stop(run)


def run_sessions(apps, tmp_path, n, *opts):
    """n sessions of -c -d 1 with the history options opts; the sessions' rows of the store."""
    a, b = apps
    out, hist = tmp_path / "out", tmp_path / "hist"
    run = Run("-c", "-d", 1, "-f", 99, "--pids", f"{a.pid},{b.pid}", "-o", out, "--history-dir",
              hist, *opts, "--log-file", tmp_path / "pp.log", *QUIET)
    try:
        wait_for(lambda: run.proc.poll() is not None or len(cols(out)) >= n, 60, f"{n} sessions",
                 interval=0.1)
    finally:
        stop(run)
    with sqlite3.connect(str(hist / "history.db"), timeout=5) as c:
        return c.execute("SELECT start, end, minute FROM sessions").fetchall(), len(cols(out))


def test_sessions_past_the_fine_age_become_per_minute_summaries(two_apps, tmp_path):
    rows, n = run_sessions(two_apps, tmp_path, 6, "--history-fine-age", "2s")
    newest = max(end for _, end, _ in rows)
    assert [r for r in rows if r[2] is not None], f"per-minute summaries: {rows}"
    fine = [r for r in rows if r[2] is None]
    assert fine and all(end >= newest - 2 for _, end, _ in fine), \
        f"sessions older than 2 s are summarised: {rows}"
    assert len(rows) < n


def test_sessions_past_the_max_age_are_deleted(two_apps, tmp_path):
    rows, n = run_sessions(two_apps, tmp_path, 6, "--history-fine-age", "3s",
                           "--history-max-age", "3s")
    newest = max(end for _, end, _ in rows)
    assert min(end for _, end, _ in rows) >= newest - 3, f"nothing older than 3 s: {rows}"
    assert len(rows) < n, f"{n} sessions written, {rows} kept"


def test_history_usage_errors_exit_2_and_say_what_to_do(tmp_path):
    r = run_polyprof("history", "-o", tmp_path / "x.col", check=False)
    assert r.returncode == 2 and "--history-dir" in r.stderr, r.stderr
    r = run_polyprof("history", "--history-dir", tmp_path, "-o", tmp_path / "x.col", "--since",
                     "yesterday", check=False)
    assert r.returncode == 2 and "ISO 8601" in r.stderr, r.stderr
    r = run_polyprof("history", "--history-dir", tmp_path / "none", "-o", tmp_path / "x.col",
                     check=False)
    assert r.returncode == 1 and "--history-dir" in r.stderr, r.stderr
    r = run_polyprof("-d", 1, "--history-dir", tmp_path / "h", "--history-max-bytes", "lots",
                     check=False)
    assert r.returncode == 2 and "--history-max-bytes" in r.stderr, r.stderr
