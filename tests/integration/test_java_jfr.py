"""JFR mode beside other JFR users (recordings of the JVM's own, in memory and on disk; a
recording orphaned by a killed polyprof) and the sampler per JDK (jdk.CPUTimeSample on JDK 25,
jdk.ExecutionSample + jdk.NativeMethodSample before), with real JVMs (OpenJDK 17, Temurin 25)."""
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import APPS, ROOT, assert_share, last_profile, wait_for
from test_java import JDKS, Run, jdk, launchers, run_polyprof, share, totals, warm  # noqa: F401


# -XX:StartFlightRecording prints its start on stdout, before the fixture's "ready" line
QUIET = "-Xlog:jfr+startup=error"


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    d = tmp_path_factory.mktemp("javajfr")
    subprocess.run([str(JDKS["17"] / "bin" / "javac"), "-d", str(d), str(APPS / "Hot.java"),
                    str(APPS / "NanoHot.java")], check=True)
    return d


def jcmd(version, pid, *args):
    r = subprocess.run([str(JDKS[version] / "bin" / "jcmd"), str(pid), *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def recordings(version, pid):
    """JFR.check as {name: line} (the line says running/stopped, duration, size limits)."""
    out = jcmd(version, pid, "JFR.check")
    return {m.group(1): line for line in out.splitlines()
            if (m := re.match(r"Recording \d+: name=(\S+)", line))}


def java_frames(lines):
    return [x for f, _ in lines for x in f[4:] if x.endswith(("_[j]", "_[i]", "_[0]"))]


def jvm_recording(version, classes, launchers, start_app):
    """A warm JVM (pp_java<version>, Hot on 2 threads) recording JFR continuously on disk since
    its launch ("userdisk") and in memory since a later jcmd ("usermem"): (app, JFR.check)."""
    jdk(version)
    app = start_app(launchers / f"pp_java{version}", QUIET,
                    "-XX:StartFlightRecording=name=userdisk,disk=true", "-cp", classes, "Hot", 2)
    jcmd(version, app.pid, "JFR.start", "name=usermem", "disk=false")
    warm(app.pid)
    before = recordings(version, app.pid)
    assert set(before) == {"userdisk", "usermem"}, before
    assert all("(running)" in x for x in before.values()), before
    return app, before


@pytest.mark.parametrize("version", ["17", "25"])
def test_beside_the_jvms_own_recordings(version, classes, launchers, start_app, outdir):
    """A JVM that records continuously on disk since its launch and in memory since a later
    jcmd: polyprof's profile has Java frames; afterwards the JVM's recordings run as before and
    none of polyprof's is left."""
    comm = f"pp_java{version}"
    app, before = jvm_recording(version, classes, launchers, start_app)
    for session in range(2):
        r = run_polyprof("-d", 4, "-f", 99, "--java-mode", "jfr", "-o", outdir, "-v")
        lines = last_profile(outdir).for_comm(comm)
        frames = [x for f, _ in lines for x in f[4:]]
        errors = {x for x in frames if x.startswith("[Profiling")}
        assert not errors, f"session {session}: {errors}\n{r.stderr[-3000:]}"
        assert any(x.startswith("Hot.hot") for x in java_frames(lines)), r.stderr[-3000:]
        # logged once per JVM by each polyprof run
        assert r.stderr.count(f"pid {app.pid} has other JFR recordings running") == 1
    after = recordings(version, app.pid)
    assert after == before, (before, after)
    # the user's recordings still hold data: a dump of each has samples of the whole time
    for name in before:
        out = jcmd(version, app.pid, "JFR.dump", f"name={name}",
                   f"filename={outdir}/{name}.jfr")
        assert f'"{name}"' in out, out
        assert (outdir / f"{name}.jfr").stat().st_size > 1000


@pytest.mark.parametrize("version", ["17", "25"])
def test_after_a_finished_recording_to_disk(version, classes, launchers, start_app, outdir):
    """The JVM ran a recording to disk that has ended (its repository exists, nothing runs): an
    in-memory recording would get no data there (the old rule gave 'JFR wrote an empty
    recording')."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", classes, "Hot", 2)
    jcmd(version, app.pid, "JFR.start", "name=earlier", "disk=true")
    jcmd(version, app.pid, "JFR.stop", "name=earlier")
    warm(app.pid)
    assert recordings(version, app.pid) == {}
    r = run_polyprof("-d", 4, "-f", 99, "--java-mode", "jfr", "-o", outdir, "-v")
    lines = last_profile(outdir).for_comm(comm)
    errors = {x for f, _ in lines for x in f[4:] if x.startswith("[Profiling")}
    assert not errors, r.stderr[-2000:]
    assert any(x.startswith("Hot.hot") for x in java_frames(lines)), r.stderr[-3000:]
    assert recordings(version, app.pid) == {}


def test_recording_of_a_live_polyprof_is_left_alone(classes, launchers, start_app, outdir,
                                                    tmp_path):
    """A recording named like a polyprof's whose owner still runs (a second instance, e.g. in
    another network namespace) is neither stopped nor ignored: polyprof records to disk beside
    it and gets its samples."""
    version = "17"
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", classes, "Hot", 2)
    warm(app.pid)
    fake = tmp_path / "polyprof"  # a live process named polyprof stands for the other instance
    fake.symlink_to("/bin/sleep")
    other = subprocess.Popen([str(fake), "120"])
    try:
        wait_for(lambda: Path(f"/proc/{other.pid}/comm").read_text().strip() == "polyprof", 10,
                 "the stand-in to start")
        ns = os.stat("/proc/self/ns/pid").st_ino
        ticks = Path(f"/proc/{other.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        name = f"polyprof_{ns}_{other.pid}_{ticks}_1"
        jcmd(version, app.pid, "JFR.start", f"name={name}", "settings=none",
             "+jdk.ExecutionSample#enabled=true", "+jdk.ExecutionSample#period=20ms",
             "disk=false")
        for session in range(2):
            r = run_polyprof("-d", 4, "-f", 99, "--java-mode", "jfr", "-o", outdir, "-v")
            lines = last_profile(outdir).for_comm(comm)
            errors = {x for f, _ in lines for x in f[4:] if x.startswith("[Profiling")}
            assert not errors, f"session {session}: {errors}\n{r.stderr[-2000:]}"
            assert any(x.startswith("Hot.hot") for x in java_frames(lines)), r.stderr[-3000:]
        assert set(recordings(version, app.pid)) == {name}
    finally:
        other.kill()
        other.wait()


def test_orphan_of_a_killed_polyprof_is_stopped(classes, launchers, start_app, outdir):
    """SIGKILL polyprof mid-session: its recording stays in the JVM (orphan); the next run
    profiles the JVM and stops the orphan, and only it (the JVM's own recording runs on)."""
    version = "17"
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, QUIET, "-XX:StartFlightRecording=name=userdisk", "-cp", classes,
                    "Hot", 2)
    warm(app.pid)
    run = Run("-d", 60, "-f", 99, "--java-mode", "jfr", "-o", outdir)
    try:
        wait_for(lambda: any(n.startswith("polyprof") for n in recordings(version, app.pid)), 30,
                 "polyprof's recording to start")
    finally:
        run.proc.send_signal(signal.SIGKILL)
        run.proc.wait()
    orphans = [n for n in recordings(version, app.pid) if n.startswith("polyprof")]
    assert len(orphans) == 1, orphans
    r = run_polyprof("-d", 4, "-f", 99, "--java-mode", "jfr", "-o", outdir, "-v")
    lines = last_profile(outdir).for_comm(comm)
    assert any(x.startswith("Hot.hot") for x in java_frames(lines)), r.stderr[-3000:]
    left = recordings(version, app.pid)
    assert set(left) == {"userdisk"}, left
    assert "(running)" in left["userdisk"]
    assert f"stopped JFR recording {orphans[0]}" in r.stderr


@pytest.mark.parametrize("version,sampler", [("17", "auto"), ("25", "auto"),
                                             ("25", "execution")])
def test_nanotime_split(version, sampler, classes, launchers, start_app, outdir):
    """Two methods spinning on System.nanoTime() in a 3:1 split. JDK 25 uses jdk.CPUTimeSample
    by default; JDK 17 (jdk.ExecutionSample + jdk.NativeMethodSample) misses most samples in
    the vDSO call: its figures are printed, not checked."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", classes, "NanoHot")
    warm(app.pid)
    r = run_polyprof("-d", 12, "-f", 499, "--java-mode", "jfr", "--java-jfr-sampler", sampler,
                     "-o", outdir, "-v")
    lines = last_profile(outdir).for_comm(comm)
    rt, total = totals(r.stderr, app.pid)
    na = sum(c for f, c in lines if any("NanoHot.hotA" in x for x in f[4:]))
    nb = sum(c for f, c in lines if any("NanoHot.hotB" in x for x in f[4:]))
    pct = 100.0 * na / max(na + nb, 1)
    used = "CPUTimeSample" if version == "25" and sampler == "auto" else \
        "ExecutionSample+NativeMethodSample"
    print(f"\nJDK {version} {used}: hotA {pct:.1f}% of {na + nb} scaled samples naming hotA/hotB "
          f"({100.0 * (na + nb) / max(total, 1):.0f}% of the pid's); {rt} runtime samples, "
          f"{total} sampler samples, coverage {100.0 * rt / max(total, 1):.0f}%")
    assert f"JFR sampler jdk.{used.split('+')[0]}" in r.stderr
    if version == "25":
        assert total >= 1000, f"host starved: {total} sampler samples in 12 s"
        assert rt >= total // 4, f"too few {used} events: {rt} of {total}"
        assert_share(pct, min(rt, na + nb), 75, f"JDK 25 {used}: hotA share")


def test_cputime_parser_matches_jfr_print(tmp_path):
    """jdk.CPUTimeSample events (JDK 25) read by polyprof's parser give exactly the stacks the
    JDK's `jfr print` gives; the recording also holds ExecutionSample events, not counted."""
    home = jdk("25")
    subprocess.run([str(home / "bin" / "javac"), "-d", str(tmp_path),
                    str(ROOT / "bench" / "java" / "Busy.java")], check=True)
    rec = tmp_path / "busy.jfr"
    subprocess.run([str(home / "bin" / "java"), "-XX:FlightRecorderOptions:stackdepth=256",
                    "-XX:StartFlightRecording=settings=none,+jdk.CPUTimeSample#enabled=true,"
                    "+jdk.CPUTimeSample#throttle=10ms,+jdk.ExecutionSample#enabled=true,"
                    f"+jdk.ExecutionSample#period=10ms,filename={rec}", "-cp", str(tmp_path),
                    "Busy", "3000"], check=True, stdout=subprocess.DEVNULL, timeout=120)
    ours = subprocess.run([str(ROOT / "build" / "bench" / "bench_jfr"), "-p", "-c", str(rec)],
                          check=True, capture_output=True, text=True, timeout=120).stdout
    jfr = subprocess.run([str(home / "bin" / "jfr"), "print", "--json", "--stack-depth", "2048",
                          "--events", "jdk.CPUTimeSample", str(rec)], check=True,
                         capture_output=True, timeout=300).stdout
    ref = subprocess.run(["/usr/bin/python3", str(ROOT / "tests" / "fixtures" / "jfr" /
                                                  "collapse.py"), "--event", "jdk.CPUTimeSample"],
                         input=jfr, check=True, capture_output=True, timeout=120).stdout.decode()
    ours_lines, ref_lines = sorted(ours.splitlines()), sorted(ref.splitlines())
    assert len(ref_lines) > 30, f"too few distinct stacks recorded: {len(ref_lines)}"
    assert ours_lines == ref_lines, (len(ours_lines), len(ref_lines),
                                     sorted(set(ours_lines) ^ set(ref_lines))[:5])


def test_planted_private_directory_names_deny_nothing(classes, launchers, start_app, outdir):
    """The JFR directories in the JVM's /tmp were `polyprof-jfr-<polyprof pid>-<n>`, 8 tries: a
    user who made n = 1..300 in advance made every session
    `[Profiling error: cannot create a directory in the JVM's /tmp: File exists]`. The names
    are random now: the same planting (as nobody, as soon as polyprof's pid is known: the
    session-end directory comes seconds later) denies nothing."""
    jdk("17")
    app = start_app(launchers / "pp_java17", "-cp", classes, "Hot", 2)
    warm(app.pid)
    run = Run("-d", 4, "-f", 99, "--java-mode", "jfr", "--pids", app.pid, "-o", outdir, "-v")
    planted = [Path(f"/tmp/polyprof-jfr-{run.proc.pid}-{n}") for n in range(0, 301)]
    try:
        subprocess.run(["/usr/bin/python3", "-c",
                        "import os,sys\nfor p in sys.argv[1:]: os.mkdir(p)",
                        *map(str, planted)], user=65534, group=65534, extra_groups=[],
                       check=True, timeout=30, cwd="/")
        run.wait()
        lines = last_profile(outdir).for_comm("pp_java17")
        errors = {x for f, _ in lines for x in f[4:] if x.startswith("[Profiling")}
        assert not errors, run.stderr[-3000:]
        assert any(x.startswith("Hot.hot") for x in java_frames(lines)), run.stderr[-3000:]
        assert all(p.is_dir() and p.stat().st_uid == 65534 for p in planted)
        assert not [p for p in Path("/tmp").glob(f"polyprof-jfr-{run.proc.pid}-*")
                    if p not in planted], "polyprof's own directories are removed"
    finally:
        for p in planted:
            try:
                p.rmdir()
            except FileNotFoundError:
                pass
