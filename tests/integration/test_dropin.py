"""gProfiler options that used to be accepted and ignored, checked by what they do:
--external-metadata, --heartbeat-file, --insert-dso-name, --pids of processes that do not exist,
and the start-up notices for runtime modes and log shipping polyprof does not have."""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import POLYPROF, LineReader, last_profile, run_polyprof, wait_for


def missing_pid():
    """A pid no process has."""
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def log_lines(stderr, level):
    return [x for x in stderr.splitlines() if f"] {level}: " in x]


# ---- --external-metadata ----

def test_external_metadata_in_header_and_app_metadata(appdir, start_app, tmp_path):
    app = start_app(appdir / "pp_hot_c")
    static = {"team": "db", "nested": {"k": [1, 2]}, "html": "</script>"}
    md = tmp_path / "external.json"
    md.write_text(json.dumps({"static": static,
                              "application": {str(app.pid): {"deployment": "blue", "exe": "x"},
                                              "1": {"init": True}}}))
    out = tmp_path / "out"
    run_polyprof("-d", 2, "-f", 99, "-o", out, "--pids", app.pid, "--external-metadata", md)
    prof = last_profile(out)
    assert prof.header["metadata"]["external_metadata"] == static
    apps = prof.header["application_metadata"]
    # gProfiler's test: index 0 is null, the process's entry holds the external keys
    assert apps[0] is None and len(apps) == 2, apps
    assert apps[1] == {"deployment": "blue", "exe": "x"}, "a native process: the file's keys"
    lines = prof.for_comm("pp_hot_c")
    assert lines and all(f[0] == "1" for f, _ in lines)


@pytest.mark.parametrize("content,needle", [
    (None, "No such file"),
    ("{\"static\": ", "not valid JSON"),
    ("[]", "expected {\"static\""),
    ("{}", "stale"),
])
def test_external_metadata_bad_file_exits_1(tmp_path, content, needle):
    md = tmp_path / "external.json"
    if content is not None:
        md.write_text(content)
        if needle == "stale":
            old = time.time() - 400
            os.utime(md, (old, old))
    out = tmp_path / "out"
    r = run_polyprof("-d", 1, "-o", out, "--external-metadata", md, check=False)
    assert r.returncode == 1, r.stderr
    crit = log_lines(r.stderr, "CRITICAL")
    assert len(crit) == 1 and "--external-metadata" in crit[0] and needle in crit[0] \
        and str(md) in crit[0], r.stderr
    assert not out.exists() or not list(out.glob("*.col"))


# ---- --heartbeat-file ----

def test_heartbeat_file_touched_every_session(tmp_path):
    hb = tmp_path / "hb" / "alive"
    hb.parent.mkdir()
    out = tmp_path / "out"
    p = subprocess.Popen([str(POLYPROF), "-c", "-d", "1", "-f", "49", "-o", str(out),
                          "--heartbeat-file", str(hb)], stderr=subprocess.PIPE, text=True)
    log = LineReader(p.stderr)
    try:
        log.wait_line(lambda x: "Saved collapsed stacks" in x, 30, "first session")
        first = wait_for(lambda: hb.exists() and hb.stat().st_mtime_ns, 10, "heartbeat file")
        assert hb.is_file() and hb.stat().st_mode & 0o777 == 0o644
        wait_for(lambda: len(list(out.glob("profile_*.col"))) >= 3, 30, "third session")
        assert hb.stat().st_mtime_ns > first, "touched again at a later session"
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    assert p.returncode == 0, log.text()


def test_heartbeat_file_never_follows_a_link(tmp_path):
    target = tmp_path / "target"
    target.write_text("keep")
    old = time.time() - 1000
    os.utime(target, (old, old))
    link = tmp_path / "hb"
    link.symlink_to(target)
    r = run_polyprof("-d", 1, "-o", tmp_path / "out", "--heartbeat-file", link)
    assert target.read_text() == "keep" and abs(target.stat().st_mtime - old) < 1
    warn = [x for x in log_lines(r.stderr, "WARNING") if "heartbeat" in x]
    assert len(warn) == 1 and "symbolic link" in warn[0], r.stderr


# ---- --insert-dso-name ----

def test_insert_dso_name_on_sampler_frames(appdir, start_app, tmp_path):
    app = start_app(appdir / "pp_hot_c")
    exe = str(appdir / "pp_hot_c")
    run_polyprof("-d", 2, "-f", 199, "-o", tmp_path, "--pids", app.pid, "--insert-dso-name")
    prof = last_profile(tmp_path)
    assert prof.header["metadata"]["run_arguments"]["insert_dso_name"] is True
    frames = [fr for f, _ in prof.for_comm("pp_hot_c") for fr in f[3:]]
    assert f"hot_a ({exe})" in frames and f"main ({exe})" in frames, set(frames)
    libc = [fr for fr in frames if fr.startswith("__libc_start_call_main (")]
    assert libc and "libc.so" in libc[0], set(frames)
    # gProfiler's rules: every named user frame has its file; kernel and unnamed frames do not
    for fr in frames:
        if fr.endswith("_[k]"):
            assert " (/" not in fr, fr
        elif fr != "[unknown]" and not fr.startswith("("):
            assert re.fullmatch(r".+ \((/.+|vdso)\)", fr), fr
    # and without the option, plain names
    run_polyprof("-d", 1, "-f", 199, "-o", tmp_path / "plain", "--pids", app.pid)
    plain = [fr for f, _ in last_profile(tmp_path / "plain").for_comm("pp_hot_c")
             for fr in f[3:]]
    assert "hot_a" in plain and not any(fr.startswith("hot_a (") for fr in plain)


# ---- --pids ----

def test_pids_that_do_not_exist(appdir, start_app, tmp_path):
    gone = missing_pid()
    r = run_polyprof("-d", 1, "-o", tmp_path / "none", "--pids", gone, check=False)
    assert r.returncode == 1, r.stderr
    assert "--pids: none of the given processes exist" in r.stderr
    assert not (tmp_path / "none" / "last_profile.col").exists()

    app = start_app(appdir / "pp_hot_c")
    r = run_polyprof("-d", 1, "-f", 99, "-o", tmp_path / "some", "--pids", f"{gone},{app.pid}")
    warn = [x for x in log_lines(r.stderr, "WARNING") if "--pids" in x]
    assert len(warn) == 1 and f"process {gone} does not exist" in warn[0], r.stderr
    prof = last_profile(tmp_path / "some")
    assert {f[2] for f, _ in prof.stacks} == {"pp_hot_c"}


# ---- start-up notices ----

def test_unimplemented_modes_and_log_shipping_said_once(tmp_path):
    r = run_polyprof("-d", 1, "-o", tmp_path, "--php-mode", "phpspy",
                     "--dotnet-mode", "dotnet-trace",
                     "--api-server", "http://127.0.0.1:9", "--dont-send-logs",
                     "--app-id-args-filter", "-Dapp=.*")
    warn = log_lines(r.stderr, "WARNING")
    for rt, mode in (("dotnet", "dotnet-trace"),):
        mine = [x for x in warn if f"--{rt}-mode {mode} is not implemented" in x]
        assert len(mine) == 1, (rt, r.stderr)
    assert not [x for x in warn if "--java-mode" in x or "--python-mode" in x
                or "--ruby-mode" in x], r.stderr
    logs = [x for x in r.stderr.splitlines() if "does not send its logs" in x]
    assert len(logs) == 1 and "] INFO: " in logs[0], r.stderr
    assert len([x for x in r.stderr.splitlines() if "--app-id-args-filter" in x]) == 1
    assert (tmp_path / "last_profile.col").exists()

    # disabled runtimes and no log options: none of these lines
    r = run_polyprof("-d", 1, "-o", tmp_path, "--no-ruby", "--no-php", "--no-dotnet",
                     "--no-nodejs")
    # (the single-instance lock's warning depends on the host, not on these options)
    assert not [x for x in log_lines(r.stderr, "WARNING") if "single-instance lock" not in x], \
        r.stderr
    assert "does not send its logs" not in r.stderr


# ---- license ----

def test_license_matches_the_bpf_programs():
    root = Path(__file__).resolve().parents[2]
    text = (root / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 2, June 1991" in text
    for src in (root / "bpf").glob("*.bpf.c"):
        code = src.read_text()
        assert "SPDX-License-Identifier: GPL-2.0" in code, src
        assert re.search(r'SEC\("license"\)\s*=\s*"GPL"', code), src
