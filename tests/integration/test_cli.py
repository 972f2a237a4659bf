"""The binary's command line: usage errors exit 2 with a clear message, preconditions exit 1."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import POLYPROF, run_polyprof


@pytest.mark.parametrize("args,needle", [
    (["-o", "/tmp/x", "-f", "0"], "frequency"),
    (["-o", "/tmp/x", "-f", "1001"], "frequency"),
    (["-o", "/tmp/x", "-f", "abc"], "frequency"),
    (["-o", "/tmp/x", "-d", "0"], "duration"),
    (["-o", "/tmp/x", "--perf-mode", "bogus"], "perf-mode"),
    (["-o", "/tmp/x", "--java-mode", "bogus"], "java-mode"),
    (["-o", "/tmp/x", "--no-such-flag"], "--no-such-flag"),
    (["-o", "/tmp/x", "--java-maps-regex", "("], "bad java regex"),
    ([], "--output-dir"),
    (["-u"], "token"),
    (["-o", "/tmp/x", "-d"], "-d"),
    (["-o", "/tmp/x", "stray"], "stray"),
])
def test_usage_errors_exit_2(args, needle):
    r = run_polyprof(*args, check=False)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr, r.stderr
    assert r.stderr.count("\n") <= 4, "short message"


def test_version_and_help():
    r = run_polyprof("--version")
    # the exact line, with the versions the sources define (the project's, and gProfiler's it
    # is compatible with, which the headers' agent_version carries)
    cli_h = (Path(__file__).resolve().parents[2] / "orchestrator" / "cli.h").read_text()
    ver = re.search(r'#define PP_VERSION "([^"]+)"', cli_h)[1]
    compat = re.search(r'#define PP_GPROFILER_COMPAT_VERSION "([^"]+)"', cli_h)[1]
    assert re.fullmatch(r"\d+\.\d+\.\d+", ver) and re.fullmatch(r"\d+\.\d+\.\d+", compat)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout == f"polyprof {ver} (gProfiler-compatible {compat})\n", r.stdout
    r = run_polyprof("--help")
    for flag in ("--output-dir", "--profiling-frequency", "--perf-mode", "--continuous",
                 "--rotating-output", "--pids", "--no-java", "--python-mode"):
        assert flag in r.stdout


def test_output_dir_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = run_polyprof("-d", 1, "-o", f, check=False)
    assert r.returncode == 1
    assert "not a directory" in r.stderr


def test_all_profilers_disabled():
    r = run_polyprof("-d", 1, "-o", "/tmp/pp_unused", "--perf-mode", "disabled", "--no-java",
                     "--no-python", "--no-ruby", "--no-php", "--no-dotnet", "--no-nodejs",
                     check=False)
    assert r.returncode == 1
    assert "All profilers are disabled!" in r.stderr


def test_single_instance_lock(tmp_path):
    # Hold the lock the way a running polyprof does: abstract socket in PID 1's net namespace.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0polyprof_lock")
    try:
        r = run_polyprof("-d", 1, "-o", tmp_path, check=False)
    finally:
        s.close()
    assert r.returncode == 1
    assert "Could not acquire polyprof's lock" in r.stderr


def test_gprofiler_environment_and_perf_mode_mapping(tmp_path):
    env = dict(os.environ, GPROFILER_PROFILING_DURATION="1", GPROFILER_OUTPUT_DIR=str(tmp_path))
    r = subprocess.run([str(POLYPROF), "--perf-mode", "fp", "-f", "49"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "last_profile.col").exists()
    # gProfiler's fp: frame pointers only, said at start; no mapping notice any more
    assert "native stacks by frame pointers only" in r.stderr, r.stderr
    assert "map to bpf" not in r.stderr, r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_rootless_as_root_is_a_conflict():
    r = run_polyprof("--rootless", "-d", 1, "-o", "/tmp/pp_unused", check=False)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip() == ("Conflict, running with --rootless and as root, rerun with "
                                "--rootless or as root (but not both)."), r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to run polyprof as nobody)")
def test_not_root_without_rootless():
    # a copy nobody can reach (the checkout may be below a directory only root can search)
    d = tempfile.mkdtemp(prefix="pp_nobody_", dir="/tmp")
    try:
        os.chmod(d, 0o755)
        exe = os.path.join(d, "polyprof")
        shutil.copy(POLYPROF, exe)
        os.chmod(exe, 0o755)
        r = subprocess.run([exe, "-d", "1", "-o", "/tmp/pp_unused"], user=65534, group=65534,
                           extra_groups=[], capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(d)
    assert r.returncode == 1, r.stderr
    # (a warning may come first: the default log file is not writable by nobody)
    assert r.stderr.strip().splitlines()[-1] == (
        "Not running as root, rerun with --rootless or as root."), r.stderr
    assert "Conflict" not in r.stderr
