"""Uploads over real HTTP on loopback: Performance Studio and Pyroscope, faults, the spool, the
token's secrecy. Every polyprof here is the real binary with the real system sampler (root)."""
import base64
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import POLYPROF, run_polyprof, wait_for
from receivers import PyroscopeReceiver, StudioReceiver, parse_pyroscope_name

TOKEN = "secret-token-123"
FAST = {"POLYPROF_UPLOAD_BACKOFF_MS": "100,400", "POLYPROF_UPLOAD_STOP_MS": "3000"}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
CONNECT_MSG = ("Failed to connect to server. It might be blocked by your security rules / "
               "firewall, or you might require a proxy to access it from your environment? "
               "Proxy used: none. Error: ")


@pytest.fixture
def studio():
    r = StudioReceiver(tokens=(TOKEN,))
    yield r
    r.stop()


@pytest.fixture
def pyro():
    r = PyroscopeReceiver()
    yield r
    r.stop()


@pytest.fixture
def work(tmp_path):
    (tmp_path / "token").write_text(TOKEN + "\n")
    os.chmod(tmp_path / "token", 0o600)
    return tmp_path


def env(**extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("POLYPROF_", "GPROFILER_", "HTTP", "http", "NO_PROXY", "no_proxy"))}
    e.update(FAST)
    e.update(extra)
    return e


def studio_args(work, url, *more):
    return ["-u", "--token-file", work / "token", "--service-name", "svc", "--server-host", url,
            "--spool-dir", work / "spool", "--log-file", work / "pp.log", *more]


LOCK_MSG = "Could not acquire polyprof's lock"
LOCK_WAIT_S = 60  # other test suites on this host may hold the single-instance lock a while


def run(args, timeout=60, **envx):
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        r = subprocess.run([str(POLYPROF), *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, env=env(**envx))
        if r.returncode != 1 or LOCK_MSG not in r.stderr or time.monotonic() > deadline:
            return r
        time.sleep(0.3)


def start(args, **envx):
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        p = subprocess.Popen([str(POLYPROF), *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env(**envx))
        try:
            p.wait(0.5)  # the lock is taken (or not) within milliseconds
        except subprocess.TimeoutExpired:
            return p
        out, err = p.communicate()
        if LOCK_MSG not in err or time.monotonic() > deadline:
            pytest.fail(f"polyprof exited {p.returncode} at start:\n{err}")
        time.sleep(0.3)


def finish(p, timeout=20):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, err


def spooled(work, backend="studio"):
    d = work / "spool" / backend
    return sorted(x.name for x in d.iterdir() if x.name.endswith(".spool")) if d.exists() else []


def local_profiles(outdir):
    return [p.read_text(encoding="utf-8") for p in sorted(Path(outdir).glob("profile_*.col"))]


def end_time(profile):
    return json.loads(profile.split("\n", 1)[0][2:])["metadata"]["current_time"]


def assert_all_sessions(uploaded, outdir, stderr):
    """uploaded (profile texts, in upload order) holds every session polyprof wrote, once, in
    order, byte-exact. Local files are named by their end second, so a last short session can
    replace the file of the session before it: compare with the last upload per name."""
    sessions = sum(stderr.count(f"Saved collapsed stacks to {d}") for d in [outdir])
    assert len(uploaded) == sessions, (len(uploaded), sessions)
    ends = [end_time(u) for u in uploaded]
    assert ends == sorted(ends), "in order"
    by_end = {e: u for e, u in zip(ends, uploaded)}
    local = {end_time(t): t for t in local_profiles(outdir)}
    assert by_end == local


def assert_no_token(work, stderr, token=TOKEN):
    assert token not in stderr
    log = work / "pp.log"
    if log.exists():
        assert token not in log.read_text()


# ---- Performance Studio: the exact requests ----

@pytest.mark.parametrize("via", ["file", "env"])
def test_studio_exact_requests_and_gpid(studio, work, via):
    out = work / "out"
    args = ["-c", "-d", 1, "-o", out] + studio_args(work, studio.url)
    extra = {}
    if via == "env":
        i = args.index("--token-file")
        del args[i:i + 2]
        extra["POLYPROF_TOKEN"] = TOKEN
    p = start(args, **extra)
    try:
        wait_for(lambda: len(studio.ok_uploads()) >= 3, 20, "3 uploads")
        cmdline = Path(f"/proc/{p.pid}/cmdline").read_bytes()
        assert TOKEN.encode() not in cmdline
    finally:
        rc, err = finish(p)
    assert rc == 0, err
    assert_no_token(work, err)

    hc = studio.requests[0]
    assert (hc["method"], hc["path"]) == ("GET", "/api/v1/health_check")
    assert hc["headers"]["gprofiler-api-key"] == TOKEN
    assert hc["headers"]["gprofiler-service-name"] == "svc"
    assert set(hc["query"]) == {"key", "service", "hostname", "timestamp"}
    assert hc["query"]["key"] == TOKEN and hc["query"]["service"] == "svc"

    ups = studio.uploads()
    assert all(u["status"] == 200 for u in ups), [u["status"] for u in ups]
    assert_all_sessions([u["json"]["profile"] for u in ups], out, err)
    hostname = os.uname().nodename
    for u in ups:
        q, h, body = u["query"], u["headers"], u["json"]
        assert set(q) == {"key", "service", "hostname", "timestamp", "version"}
        assert q["key"] == TOKEN and q["service"] == "svc" and q["hostname"] == hostname
        assert ISO.match(q["timestamp"])
        assert h["gprofiler-api-key"] == TOKEN and h["gprofiler-service-name"] == "svc"
        assert h["content-encoding"] == "gzip"
        assert h["content-type"] == "application/json"
        assert int(h["content-length"]) == u["raw_len"]
        assert "transfer-encoding" not in h
        assert list(body) == ["start_time", "end_time", "hostname", "profile", "cpu_avg",
                              "mem_avg", "spawn_time", "gpid"]
        for k in ("start_time", "end_time", "spawn_time"):
            assert ISO.match(body[k]), body[k]
        assert body["start_time"] <= body["end_time"]
        assert body["hostname"] == hostname
        assert isinstance(body["cpu_avg"], float) and isinstance(body["mem_avg"], float)
        header = json.loads(body["profile"].split("\n", 1)[0][2:])
        ra = header["metadata"]["run_arguments"]
        assert ra.get("server_token") is None
        assert TOKEN not in json.dumps(header)
    # gpid: "" first, then what the previous reply returned
    assert ups[0]["json"]["gpid"] == ""
    for prev, cur in zip(ups, ups[1:]):
        assert cur["json"]["gpid"] == prev["gpid_reply"]


def test_token_on_command_line_is_hidden_and_warned(studio, work):
    args = ["-c", "-d", 1, "-o", work / "out", "-u", "--token", TOKEN, "--service-name", "svc",
            "--server-host", studio.url, "--spool-dir", work / "spool", "--log-file",
            work / "pp.log"]
    p = start(args)
    try:
        wait_for(lambda: len(studio.ok_uploads()) >= 1, 15, "an upload")
        cmdline = Path(f"/proc/{p.pid}/cmdline").read_bytes()
    finally:
        rc, err = finish(p)
    assert rc == 0, err
    assert TOKEN.encode() not in cmdline and b"--token\0xxxx" in cmdline
    assert "use --token-file" in err
    assert_no_token(work, err)


# ---- start-up health check ----

def test_backend_down_at_startup(work):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    sp = work / "spool" / "studio"
    sp.mkdir(parents=True)
    old = sp / "0000000000000000001-000000.spool"
    old.write_bytes(b'PPSPOOL1 {"start":1,"end":2,"frequency":11}\n# {}')
    r = run(["-d", 1, "-o", work / "out"] + studio_args(work, f"http://127.0.0.1:{port}"))
    assert r.returncode == 1
    assert CONNECT_MSG in r.stderr, r.stderr
    assert old.exists(), "the spool is kept"
    assert_no_token(work, r.stderr)


def test_health_check_bad_token(studio, work):
    (work / "token").write_text("wrong-token-456")
    r = run(["-d", 1, "-o", work / "out"] + studio_args(work, studio.url))
    assert r.returncode == 1
    assert "Server error: Invalid API key" in r.stderr, r.stderr
    assert "wrong-token-456" not in r.stderr


# ---- faults during the run ----

def test_http_500_then_200(studio, work):
    studio.forced = [500]
    r = run(["-d", 1, "-o", work / "out"] + studio_args(work, studio.url))
    assert r.returncode == 0, r.stderr
    ups = studio.uploads()
    assert [u["status"] for u in ups] == [500, 200]
    assert ups[1]["json"]["profile"] == (work / "out" / "last_profile.col").read_text(encoding="utf-8")
    assert ups[1]["json"]["gpid"] == "", "a failed upload resets the gpid"
    assert "HTTP 500" in r.stderr
    assert spooled(work) == []


def test_backend_down_mid_run_spools_and_drains_in_order(work):
    studio = StudioReceiver(tokens=(TOKEN,))
    port = studio.port
    out = work / "out"
    p = start(["-c", "-d", 1, "-o", out] + studio_args(work, studio.url))
    try:
        wait_for(lambda: len(studio.ok_uploads()) >= 2, 15, "2 uploads")
        studio.stop()
        down_at = len(studio.ok_uploads())
        wait_for(lambda: len(spooled(work)) >= 3, 15, "the spool to grow")
        assert p.poll() is None, "sampling goes on"
        studio2 = StudioReceiver(tokens=(TOKEN,), port=port)
        try:
            wait_for(lambda: len(studio2.ok_uploads()) >= 4, 15, "the spool to drain")
            wait_for(lambda: not spooled(work), 10, "an empty spool")
        finally:
            rc, err = finish(p)
            studio2.stop()
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 0, err
    assert "is reachable again" in err
    got = [u["json"]["profile"] for u in studio.ok_uploads()[:down_at]]
    got += [u["json"]["profile"] for u in studio2.ok_uploads()]
    assert_all_sessions(got, out, err)  # nothing lost, nothing twice, in order
    assert spooled(work) == []


def test_spool_survives_restart(work):
    bad = StudioReceiver(tokens=(TOKEN,))
    bad.forced = [503] * 100
    out1, out2 = work / "o1", work / "o2"
    r = run(["-d", 1, "-o", out1] + studio_args(work, bad.url), POLYPROF_UPLOAD_STOP_MS="500")
    bad.stop()
    assert r.returncode == 0, r.stderr
    assert len(spooled(work)) == 1
    assert "stay in" in r.stderr
    good = StudioReceiver(tokens=(TOKEN,))
    try:
        r = run(["-d", 1, "-o", out2] + studio_args(work, good.url))
    finally:
        good.stop()
    assert r.returncode == 0, r.stderr
    assert "from an earlier run" in r.stderr
    profiles = [u["json"]["profile"] for u in good.ok_uploads()]
    assert profiles == local_profiles(out1) + local_profiles(out2), "the old one first"
    assert spooled(work) == []


def test_server_never_answers(studio, work):
    studio.hang = True
    out = work / "out"
    p = start(["-c", "-d", 1, "-o", out] + studio_args(work, studio.url,
                                                        "--server-upload-timeout", 2),
              POLYPROF_UPLOAD_STOP_MS="1500")
    t0 = time.monotonic() - 0.5  # start() returns once polyprof has run 0.5 s
    try:
        # the session loop keeps its pace while the upload hangs
        wait_for(lambda: len(list(out.glob("profile_*.col"))) >= 4, 12, "4 sessions")
        assert time.monotonic() - t0 < 9
    finally:
        studio.release.set()  # (no effect on hung requests already timed out)
        t1 = time.monotonic()
        rc, err = finish(p)
    assert rc == 0, err
    assert time.monotonic() - t1 < 6, "stop waits a bounded time"
    assert "timed out" in err
    sessions = err.count("Saved collapsed stacks")
    assert len(spooled(work)) == sessions, "nothing lost: all sessions wait in the spool"


def test_reply_not_json(studio, work):
    studio.not_json = True
    r = run(["-d", 1, "-o", work / "out"] + studio_args(work, studio.url))
    assert r.returncode == 0, r.stderr
    assert len(studio.uploads()) == 1, "not resent"
    assert "not a JSON object" in r.stderr
    assert spooled(work) == []


def test_413_too_large(work):
    studio = StudioReceiver(tokens=(TOKEN,), max_content_len=200)
    try:
        r = run(["-d", 1, "-o", work / "out"] + studio_args(work, studio.url))
    finally:
        studio.stop()
    assert r.returncode == 0, r.stderr
    assert [u["status"] for u in studio.uploads()] == [413], "not retried"
    assert "too large (HTTP 413" in r.stderr and "--pids" in r.stderr
    assert re.search(r"\d+ bytes gzipped", r.stderr)
    assert spooled(work) == []


# ---- upload-file ----

def test_upload_file(studio, work):
    col = work / "x.col"
    header = {"containers": [], "metadata": {"hostname": "filehost", "agent_version": "1.57.1"},
              "start_time": "2024-01-02T03:04:05", "end_time": "2024-01-02T03:05:05",
              "application_metadata_enabled": True}
    col.write_text("# " + json.dumps(header) + "\n0;;bash;main;work 5   \n0;;sh;x 2\n")
    r = run(["--log-file", work / "pp.log", "upload-file", "--file-path", col, "--token-file",
             work / "token", "--service-name", "svc", "--server-host", studio.url])
    # the file's metadata lacks the AgentMetadata fields: the server refuses it, as it would
    # refuse gProfiler's upload of the same file
    assert [u["status"] for u in studio.uploads()] == [400], r.stderr
    assert r.returncode == 1
    assert "Failed to parse v2 metadata" in r.stderr

    # a real .col written by polyprof goes through
    r = run(["-d", 1, "-o", work / "out", "--log-file", work / "pp.log"], timeout=60)
    assert r.returncode == 0, r.stderr
    real = (work / "out" / "last_profile.col").read_text(encoding="utf-8")
    r = run(["--log-file", work / "pp.log", "upload-file", "--file-path",
             work / "out" / "last_profile.col", "--token-file", work / "token", "--service-name",
             "svc", "--server-host", studio.url])
    assert r.returncode == 0, r.stderr
    up = studio.ok_uploads()[-1]["json"]
    assert up["gpid"] == ""
    sent_lines = up["profile"].split("\n")
    real_lines = real.split("\n")
    assert sent_lines[1:] == [x.rstrip() for x in real_lines[1:]]
    merged = json.loads(sent_lines[0][2:])
    file_header = json.loads(real_lines[0][2:])
    assert merged["metadata"] == file_header["metadata"], "the file's keys win"
    assert merged["hostname"] == os.uname().nodename, "fresh metadata merged at the top level"
    assert "func" not in merged["run_arguments"]
    assert_no_token(work, r.stderr)


# ---- Pyroscope ----

def folded_from_col(col_text):
    """The stacks a Pyroscope body must hold for a .col: the app index frame dropped, the
    container frame kept above the comm when there is one, equal stacks summed."""
    want = {}
    for line in col_text.split("\n")[1:]:
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        key = ";".join(frames[1:] if frames[1] else frames[2:])
        want[key] = want.get(key, 0) + int(count)
    return want


def folded_body(body):
    got = {}
    for line in body.rstrip("\n").split("\n"):
        stack, _, count = line.rpartition(" ")
        assert count.isdigit() and int(count) > 0, line
        assert stack not in got, ("a stack appears once", stack)
        got[stack] = int(count)
    return got


def test_pyroscope_ingest(pyro, work, appdir, start_app):
    """One request per session: every stack of the host in one folded body, the comm as the root
    frame (under the container's name in a container), and only the labels that hold for the
    whole session: hostname (many programs ran, so no comm label; no runtime label). A second
    program of its own runs too: a quiet CI host may run nothing else on its CPUs."""
    app = start_app(appdir / "pp_hot_c")
    shutil.copy2(appdir / "pp_hot_c", work / "pp_other_c")
    start_app(work / "pp_other_c")
    (work / "auth").write_text("alice:pa,ss}word\n")
    out = work / "out"
    r = run(["-d", 2, "-f", 23, "-o", out, "--service-name", "my.svc", "--pyroscope-server",
             pyro.url + "/", "--pyroscope-tenant-id", "tenant-7", "--pyroscope-basic-auth-file",
             work / "auth", "--spool-dir", work / "spool", "--log-file", work / "pp.log"])
    assert r.returncode == 0, r.stderr
    assert "pa,ss}word" not in r.stderr and "pa,ss}word" not in (work / "pp.log").read_text()
    reqs = pyro.uploads()
    assert len(reqs) == 1, ("one request for the one session",
                            [(x["query"]["name"], x["status"]) for x in reqs], r.stderr)
    q = reqs[0]
    assert q["status"] == 200 and q["path"] == "/ingest"
    qs = q["query"]
    assert set(qs) == {"name", "from", "until", "sampleRate", "spyName", "format"}
    assert qs["sampleRate"] == "23" and qs["spyName"] == "polyprof"
    assert qs["format"] == "folded"
    assert len(qs["from"]) == 10 and int(qs["until"]) - int(qs["from"]) in (1, 2, 3)
    assert q["headers"]["x-scope-orgid"] == "tenant-7"
    assert q["headers"]["authorization"] == "Basic " + base64.b64encode(
        b"alice:pa,ss}word").decode()
    assert "%7B" in q["raw_query"], "the name parameter is URL-encoded"
    app_name, labels = parse_pyroscope_name(qs["name"])
    assert app_name == "my.svc.cpu", "a dotted service name still ends in a profile type"
    assert re.fullmatch(r"[A-Za-z0-9_./-]+", app_name)
    assert labels == {"hostname": os.uname().nodename}, labels
    assert not q["body"].startswith("#")
    col = (out / "last_profile.col").read_text(encoding="utf-8")
    got = folded_body(q["body"])
    assert got == folded_from_col(col)
    assert any(k.split(";")[0] == "pp_hot_c" for k in got), "the comm is the root frame"
    assert "Pyroscope: uploaded the session of" in r.stderr


def test_pyroscope_one_process_gets_a_comm_label(pyro, work, appdir, start_app):
    """--pids of one program: every stack has its comm, so the request carries it as a label."""
    app = start_app(appdir / "pp_hot_c")
    r = run(["-d", 1, "-o", work / "out", "--pids", app.pid, "--pyroscope-server", pyro.url,
             "--spool-dir", work / "spool"])
    assert r.returncode == 0, r.stderr
    reqs = pyro.uploads()
    assert len(reqs) == 1 and reqs[0]["status"] == 200, r.stderr
    _, labels = parse_pyroscope_name(reqs[0]["query"]["name"])
    assert labels == {"hostname": os.uname().nodename, "comm": "pp_hot_c"}, labels
    assert all(k.split(";")[0] == "pp_hot_c" for k in folded_body(reqs[0]["body"]))


BAD_COMM_APP = ("open('/proc/self/comm', 'wb').write(b'\\xff\\xfepp_bad')\n"
                "print('ready', flush=True)\n"
                "while True:\n"
                "    pass\n")


def test_pyroscope_body_and_labels_are_utf8(pyro, work, start_app):
    """A process named with bytes 0xff (any user can set its name) put raw bytes into the body
    and the comm label; both are UTF-8 now, each invalid byte as U+FFFD."""
    app = start_app("/usr/bin/python3", "-c", BAD_COMM_APP)
    r = run(["-d", 2, "-o", work / "out", "--pids", app.pid, "--no-python", "--pyroscope-server",
             pyro.url, "--spool-dir", work / "spool"])
    assert r.returncode == 0, r.stderr
    reqs = pyro.uploads()
    assert len(reqs) == 1 and reqs[0]["status"] == 200, r.stderr
    body = reqs[0]["raw_body"].decode("utf-8")  # strict: raises on any invalid byte
    assert body and all(k.split(";")[0] == "\ufffd\ufffdpp_bad" for k in folded_body(body)), body
    qs = urllib.parse.parse_qs(reqs[0]["raw_query"], errors="strict")
    _, labels = parse_pyroscope_name(qs["name"][0])
    assert labels["comm"] == "\ufffd\ufffdpp_bad", labels


def test_both_backends_and_pyroscope_retry(studio, pyro, work):
    """The session's one Pyroscope request, answered 503, is sent again (the same stacks for the
    same time range) and accepted; Studio gets the session meanwhile. Fresh receivers and spool
    (function-scoped fixtures), one run."""
    pyro.forced = [503]
    out = work / "out"
    r = run(["-d", 1, "-o", out, "--pyroscope-server", pyro.url]
            + studio_args(work, studio.url), POLYPROF_UPLOAD_STOP_MS="15000")
    assert r.returncode == 0, r.stderr
    local = (out / "last_profile.col").read_text(encoding="utf-8")
    assert local in [u["json"]["profile"] for u in studio.ok_uploads()]
    reqs = pyro.uploads()
    assert [q["status"] for q in reqs] == [503, 200], (
        [(q["query"]["name"], q["status"]) for q in reqs], r.stderr)
    first, again = reqs
    assert again["query"] == first["query"] and again["body"] == first["body"]
    assert folded_body(again["body"]) == folded_from_col(local)
    assert spooled(work, "studio") == [] and spooled(work, "pyroscope") == []
