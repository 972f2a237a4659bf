"""The --format exports beside each .col: the pprof profile (profile_<time>.pb.gz,
last_profile.pb.gz) read by the real `go tool pprof` with the .col's totals (whole profile and
per process) and the native frames' mappings (the C program's file and build-id, the kernel's),
and the plain collapsed text (profile_<time>.folded) holding the .col's stacks without the index
and container fields. One session of a real C program and a Python program."""
import atexit
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import APPS, App, last_profile, run_polyprof

GO = shutil.which("go") or "/usr/local/go/bin/go"


@pytest.fixture(scope="module")
def exported(appdir, tmp_path_factory):
    """One 4 s session of the C fixture and a Python fixture (built-in sampler), --pids."""
    d = tmp_path_factory.mktemp("export")
    apps = []
    try:
        apps.append(App([str(appdir / "pp_hot_c")]))
        apps.append(App([sys.executable, str(APPS / "pyhot.py")]))
        pids = ",".join(str(a.pid) for a in apps)
        comms = [Path(f"/proc/{a.pid}/comm").read_text().strip() for a in apps]
        r = run_polyprof("-d", 4, "-f", 199, "-o", d, "--pids", pids, "--python-mode", "builtin",
                         "--no-flamegraph", "--format", "col,pprof,collapsed-plain")
    finally:
        for a in apps:
            a.stop()
    return d, r, list(zip([a.pid for a in apps], comms))


_GOCACHE = []


def gocache():
    """One private GOCACHE for the run's pprof calls: Go 1.26 ships no prebuilt pprof, `go tool
    pprof` builds it on first use, so a cache per test built it again each time (minutes on a
    loaded host). Removed when the run ends."""
    if not _GOCACHE:
        d = tempfile.mkdtemp(prefix="pp_it_gocache_")
        atexit.register(shutil.rmtree, d, ignore_errors=True)
        _GOCACHE.append(d)
    return _GOCACHE[0]


def pprof(*args, tmp):
    """go tool pprof, offline: no toolchain download, a private cache and home."""
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", HOME=str(tmp), GOCACHE=gocache(),
               PPROF_TMPDIR=str(tmp))
    # the first call builds pprof: bounded well within the test's own timeout (pytest.ini)
    r = subprocess.run([GO, "tool", "pprof", *map(str, args)], capture_output=True, text=True,
                       timeout=400, env=env)
    assert r.returncode == 0, f"go tool pprof {args} exited {r.returncode}:\n{r.stderr}"
    return r.stdout


def raw_samples(text):
    """(count, nanoseconds, labels) of each sample in `go tool pprof -raw` output."""
    out = []
    section = None
    for line in text.splitlines():
        if re.match(r"^[A-Z][a-z]+:?\s*$", line) or line.startswith("Samples:"):
            section = line.strip().rstrip(":")
            continue
        if section != "Samples":
            continue
        m = re.match(r"^\s+(\d+)\s+(\d+): [\d ]+$", line)
        if m:
            out.append([int(m.group(1)), int(m.group(2)), {}])
        elif out and line.strip():
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                out[-1][2][k] = v
    return out


def raw_mappings(text):
    """{id: (file, build_id)} of the Mappings section of `go tool pprof -raw` output."""
    out = {}
    section = None
    for line in text.splitlines():
        if re.match(r"^[A-Z][a-z]+:?\s*$", line):
            section = line.strip().rstrip(":")
            continue
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) ?(\S*?)\s*(\[.*\])?$",
                     line)
        if section == "Mappings" and m:
            out[int(m.group(1))] = (m.group(2), m.group(3))
    return out


def raw_locations(text):
    """[(mapping id or 0, function name)] of the Locations section of `go tool pprof -raw`."""
    out = []
    section = None
    for line in text.splitlines():
        if re.match(r"^[A-Z][a-z]+:?\s*$", line):
            section = line.strip().rstrip(":")
            continue
        m = re.match(r"^\s*\d+: 0x[0-9a-f]+ (?:M=(\d+) )?(.*) :\d+:\d+ s=\d+$", line)
        if section == "Locations" and m:
            out.append((int(m.group(1) or 0), m.group(2)))
    return out


def build_id(path):
    """The GNU build-id of an ELF file, as `readelf -n` prints it."""
    r = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True)
    m = re.search(r"Build ID: ([0-9a-f]+)", r.stdout)
    assert m, f"{path} has no build-id:\n{r.stdout}"
    return m.group(1)


def assert_mappings(text, exe, fn):
    """The -raw text names exe's file with its build-id, and function fn's location is in it."""
    maps = raw_mappings(text)
    want = build_id(exe)
    ids = [i for i, (f, _) in maps.items() if f == str(exe)]
    assert ids, f"no mapping for {exe}: {maps}"
    assert all(maps[i][1] == want for i in ids), f"{exe}'s build-id is {want}: {maps}"
    locs = raw_locations(text)
    assert any(m in ids for m, name in locs if name == fn), \
        f"{fn} is not linked to {exe}'s mapping: {[l for l in locs if l[1] == fn]}"
    return maps, locs


def test_pprof_beside_col_with_link(exported):
    d, r, _ = exported
    col = Path(os.readlink(d / "last_profile.col"))
    pb = Path(os.readlink(d / "last_profile.pb.gz"))
    assert pb.name == col.name[:-len(".col")] + ".pb.gz", (col, pb)
    assert (d / pb).read_bytes()[:2] == b"\x1f\x8b", "gzip-compressed"
    assert "Saved pprof profile to" in r.stderr


def test_go_tool_pprof_reads_the_same_totals(exported, tmp_path):
    d, _, procs = exported
    prof = last_profile(d)
    total = sum(c for _, c in prof.stacks)
    assert total > 0
    top = pprof("-top", "-sample_index=samples", d / "last_profile.pb.gz", tmp=tmp_path)
    m = re.search(r"of (\d+) total", top)
    assert m, top
    assert int(m.group(1)) == total, f"go tool pprof total {m.group(1)} != .col total {total}"
    assert "hot_a" in top, top

    raw = raw_samples(pprof("-raw", d / "last_profile.pb.gz", tmp=tmp_path))
    assert sum(s[0] for s in raw) == total
    period = 10**9 // 199
    assert all(s[1] == s[0] * period for s in raw), "cpu/nanoseconds = count x period"
    # Per process: the .col's comm lines against the samples labelled with the pid and comm
    assert procs[0][1] != procs[1][1]
    for pid, comm in procs:
        col_n = sum(c for f, c in prof.stacks if f[2] == comm)
        pb_n = sum(s[0] for s in raw if s[2].get("pid") == str(pid))
        assert col_n > 0, f"no {comm} stacks in the .col"
        assert pb_n == col_n, f"pid {pid}: pprof {pb_n} != .col {col_n}"
        labelled = [s for s in raw if s[2].get("pid") == str(pid)]
        assert all(s[2].get("comm") == comm for s in labelled), labelled[:3]


def test_plain_collapsed_is_the_col_without_index_and_container(exported):
    d, _, _ = exported
    text = (d / "last_profile.folded").read_text(encoding="utf-8")
    assert not text.startswith("#"), "no header line"
    assert text.endswith("\n")
    plain = collections.Counter()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert count.isdigit(), line
        assert stack not in plain, f"a stack written twice: {stack!r}"
        plain[stack] += int(count)
    want = collections.Counter()
    for frames, c in last_profile(d).stacks:
        want[";".join(frames[2:])] += c
    assert plain == want
    assert any(s.startswith("pp_hot_c;") for s in plain), "comm is the root"


def test_pprof_mappings_name_the_files_and_build_ids(exported, appdir, tmp_path):
    d, _, _ = exported
    text = pprof("-raw", d / "last_profile.pb.gz", tmp=tmp_path)
    maps, locs = assert_mappings(text, appdir / "pp_hot_c", "hot_a")
    kernel = [i for i, (f, _) in maps.items() if f == "[kernel.kallsyms]"]
    if any(name.endswith("_[k]") for _, name in locs):
        assert kernel, f"kernel frames without the kernel's mapping: {maps}"
        assert all(m in kernel for m, name in locs if name.endswith("_[k]")), \
            "every kernel frame is in [kernel.kallsyms]"
    assert all(m == 0 for m, name in locs if name.endswith("_[p]")), \
        "Python frames have no mapping"
    total = sum(c for _, c in last_profile(d).stacks)
    assert sum(s[0] for s in raw_samples(text)) == total, "totals unchanged"
