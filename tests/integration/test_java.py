"""Java end to end with real JVMs (OpenJDK 17 and Temurin 25): JFR through polyprof's own attach
client, JIT symbols from Compiler.perfmap, metadata, namespaces, cleanup, async-profiler mode."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import (APPS, MAX_BAND, POLYPROF, ROOT, App, LineReader, Profile, assert_share,
                      last_profile, wait_for)

JDKS = {
    "17": Path("/usr/lib/jvm/java-17-openjdk-amd64"),
    "25": Path("/usr/lib/jvm/temurin-25-jdk-amd64"),
}
PP_TOOLS = Path(os.environ.get("PP_TOOLS", "/var/cache/polyprof/tools"))
ASPROF_VERSION = re.search(r"^ASPROF_VERSION=(\S+)", (ROOT / "tests/tools/install.sh").read_text(),
                           re.M).group(1)
# laid out as a resources directory by tests/tools/install.sh: java/async-profiler.jar
ASPROF_RESOURCES = PP_TOOLS / f"async-profiler-{ASPROF_VERSION}"


@pytest.fixture(scope="module")
def hot_classes(tmp_path_factory):
    d = tmp_path_factory.mktemp("javahot")
    subprocess.run([str(JDKS["17"] / "bin" / "javac"), "-d", str(d), str(APPS / "Hot.java")],
                   check=True)
    return d


@pytest.fixture(scope="module")
def launchers(tmp_path_factory):
    """`java` under names of our own (pp_java17, pp_java25), so the JVMs' comm is unique."""
    d = tmp_path_factory.mktemp("launch")
    for v, home in JDKS.items():
        if home.exists():
            (d / f"pp_java{v}").symlink_to(home / "bin" / "java")
    return d


def jdk(version):
    if not JDKS[version].exists():
        pytest.skip(f"JDK {version} not installed")
    return JDKS[version]


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warm(pid, seconds=1.5):
    """Waits until the JVM burned enough CPU for its hot methods to be JIT-compiled."""
    wait_for(lambda: cpu_seconds(pid) >= seconds, 30, f"JVM {pid} to warm up")


def jfr_ready(version, pid):
    """Starts up JFR inside the JVM (a first JFR.start loads JFR itself: 3 s in a JVM busy with
    garbage collection on an idle 2-core host, more when loaded; later starts take about 0.5 s),
    for tests about what JFR's samples become rather than about JFR's start-up."""
    jcmd = str(JDKS[version] / "bin" / "jcmd")
    for args in (["JFR.start", "name=pp_ready", "settings=none"], ["JFR.stop", "name=pp_ready"]):
        r = subprocess.run([jcmd, str(pid), *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr


class Run:
    """polyprof running in the background, with its direct children recorded."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([str(POLYPROF), *map(str, args)], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True)
        self.children = set()
        self._err = []
        self._t = threading.Thread(target=lambda: self._err.extend(self.proc.stderr), daemon=True)
        self._t.start()

    def watch_children(self):
        pid = self.proc.pid
        while self.proc.poll() is None:
            for d in Path("/proc").iterdir():
                if not d.name.isdigit():
                    continue
                try:
                    stat = (d / "stat").read_text()
                    ppid = int(stat.rsplit(")", 1)[1].split()[1])
                    if ppid == pid:
                        self.children.add((d / "comm").read_text().strip())
                except (OSError, ValueError, IndexError):
                    pass
            time.sleep(0.05)

    def wait(self, timeout=90):
        self.watch_children()
        self.proc.wait(timeout)
        self._t.join(5)
        self.stderr = "".join(self._err)
        Path("/tmp/pp_java_last_stderr").write_text(self.stderr)
        assert self.proc.returncode == 0, self.stderr[-3000:]
        return self


def run_polyprof(*args):
    return Run(*args).wait()


def totals(stderr, pid):
    m = re.search(rf"java pid {pid}: (\d+) runtime samples, (\d+) sampler samples", stderr)
    assert m, f"no runtime totals for pid {pid}"
    return int(m.group(1)), int(m.group(2))


def jfr_check(version, pid):
    r = subprocess.run([str(JDKS[version] / "bin" / "jcmd"), str(pid), "JFR.check"],
                       capture_output=True, text=True, timeout=30)
    return r.stdout


def tmp_entries(root="/tmp"):
    return {p.name for p in Path(root).iterdir()
            if p.name.startswith(("polyprof-jfr", ".attach_pid", "hotspot-pid"))}


def share(lines, a, b):
    na = sum(c for f, c in lines if any(a in x for x in f[4:]))
    nb = sum(c for f, c in lines if any(b in x for x in f[4:]))
    assert na + nb > 100, f"too few samples: {na}+{nb}"
    return 100.0 * na / (na + nb)


@pytest.mark.parametrize("version", ["17", "25"])
def test_jfr_profile(version, hot_classes, launchers, start_app, outdir, tmp_path):
    jdk(version)
    comm = f"pp_java{version}"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    os.chdir(cwd)
    try:
        app = start_app(launchers / comm, "-Xmx256m", "-cp", hot_classes, "Hot", 3)
    finally:
        os.chdir(ROOT)
    warm(app.pid)
    before = tmp_entries()
    r = run_polyprof("-d", 6, "-f", 499, "--java-mode", "jfr", "-o", outdir, "-v")
    assert not r.children & {"java", "jcmd", "jfr", "jattach", "asprof"}, r.children

    prof = last_profile(outdir)
    lines = prof.for_comm(comm)
    assert lines, r.stderr[-3000:]
    frames = [x for f, _ in lines for x in f[4:]]
    assert not any(x.startswith("[Profiling") for x in frames), r.stderr[-2000:]
    assert any(x.endswith("_[j]") or x.endswith("_[i]") for x in frames)
    assert "Hot.main([Ljava/lang/String|)V_[0]" in frames or \
        any(x.startswith("Hot.") and "|" in x for x in frames)
    assert any(x.startswith("Hot.hotA()V_[") for x in frames)
    pct = share(lines, "Hot.hotA()V", "Hot.hotB()V")
    rt, sampler = totals(r.stderr, app.pid)
    print(f"JDK {version}: hotA share {pct:.1f}% of {rt} JFR samples scaled to {sampler}")
    # JDK 17's ExecutionSample leans to hotA on a loaded host (docs/java.md: 82.7 % loaded; CI
    # saw 81.6 % of 1,129 samples): JFR's bias, which polyprof scales faithfully. JDK 25's
    # CPUTimeSample samples CPU time and keeps the default band.
    assert_share(pct, rt, 75, "hotA share of the JFR samples",
                 floor=MAX_BAND if version == "17" else 5.0)

    assert rt > 0 and sampler > 0
    assert sum(c for _, c in lines) == sampler

    apps = prof.header["application_metadata"]
    idx = {int(f[0]) for f, _ in lines}
    assert len(idx) == 1
    md = apps[idx.pop()]
    assert md["java_version"].startswith(f'openjdk version "{version}.'), md["java_version"]
    assert len(md["java_version"].split("\n")) == 3
    assert md["jvm_flags"] and all(set(fl) == {"name", "type", "value", "origin", "kind"}
                                   for fl in md["jvm_flags"])
    assert all(fl["origin"] != "default" for fl in md["jvm_flags"])
    assert [fl["name"] for fl in md["jvm_flags"]] == sorted(fl["name"] for fl in md["jvm_flags"])
    assert {"name": "MaxHeapSize", "type": "size_t", "value": str(256 << 20),
            "origin": "command line", "kind": ["product"]} in md["jvm_flags"]
    assert {f[3] for f, _ in lines} == {"appid: java: Hot"}

    # nothing left behind: no recording, no file in the JVM's /tmp or cwd, no perf map
    assert "No available recordings" in jfr_check(version, app.pid)
    assert tmp_entries() - before == set()
    assert not list(cwd.iterdir())
    assert not Path(f"/tmp/perf-{app.pid}.map").exists()


def test_jvm_in_own_pid_and_mount_namespace(hot_classes, outdir):
    """unshare'd JVM with a private tmpfs /tmp: the attach goes through /proc/<pid>/root."""
    java = jdk("17") / "bin" / "java"
    # outside /tmp, which the JVM does not see (the checkout itself may be under /tmp)
    classes = Path(tempfile.mkdtemp(prefix="pp_it_java_ns_", dir="/var/tmp"))
    shutil.copytree(hot_classes, classes, dirs_exist_ok=True)
    sh = subprocess.Popen(
        ["unshare", "--pid", "--mount", "--fork", "--mount-proc", "sh", "-c",
         f"mount -t tmpfs tmpfs /tmp && exec {java} -cp {classes} Hot 2"],
        stdout=subprocess.PIPE, text=True)
    sh_out = LineReader(sh.stdout)
    pid = None
    try:
        assert sh_out.wait_line(lambda x: True, 30, "the JVM to start").startswith("ready 1")
        kids = Path(f"/proc/{sh.pid}/task/{sh.pid}/children").read_text().split()
        pid = int(kids[0])
        assert Path(f"/proc/{pid}/status").read_text().split("NSpid:")[1].split()[1] == "1"
        warm(pid)
        r = run_polyprof("-d", 3, "-f", 99, "--java-mode", "jfr", "-o", outdir, "-v")
        rt, sampler = totals(r.stderr, pid)
        assert rt > 0
        prof = last_profile(outdir)
        ours = [(f, c) for f, c in prof.stacks
                if len(f) > 4 and f[2] == "java" and any(x.startswith("Hot.hot") for x in f)]
        assert ours and not any("[Profiling" in x for f, _ in ours for x in f)
        # the JVM's private /tmp holds only what the JVM itself made
        left = {p.name for p in Path(f"/proc/{pid}/root/tmp").iterdir()}
        assert left <= {".java_pid1", "hsperfdata_root"}, left
    finally:
        if pid:
            os.kill(pid, 9)  # the namespace's init: unshare does not forward its own kill
        sh.kill()
        sh.wait()
        sh.stdout.close()
        shutil.rmtree(classes, ignore_errors=True)


def test_perfmap_names_jit_frames_with_java_disabled(hot_classes, launchers, start_app, outdir):
    jdk("17")
    app = start_app(launchers / "pp_java17", "-cp", hot_classes, "Hot", 3)
    warm(app.pid)
    assert not Path(f"/tmp/perf-{app.pid}.map").exists()
    r = run_polyprof("-d", 4, "-f", 99, "--java-mode", "disabled", "-o", outdir)
    lines = last_profile(outdir).for_comm("pp_java17")
    total = sum(c for _, c in lines)
    named = sum(c for f, c in lines if any("Hot.hot" in x for x in f))
    unknown = sum(c for f, c in lines if any(x.startswith("(/tmp/perf-") for x in f))
    assert total > 100, (total, r.stderr[-2000:])
    assert named > total / 2, (named, total)
    assert unknown < total / 20, (unknown, total)
    assert not Path(f"/tmp/perf-{app.pid}.map").exists()


def asprof_env():
    """An environment whose resources directory holds the pinned async-profiler jar (the real
    library: `make deps` fetches it from Maven Central)."""
    if not (ASPROF_RESOURCES / "java" / "async-profiler.jar").exists():
        pytest.skip(f"no async-profiler {ASPROF_VERSION} jar in {ASPROF_RESOURCES} (make deps)")
    return dict(os.environ, POLYPROF_RESOURCES=str(ASPROF_RESOURCES))


class RunEnv(Run):
    """Run with an environment."""

    def __init__(self, env, *args):
        self.proc = subprocess.Popen([str(POLYPROF), *map(str, args)], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True, env=env)
        self.children = set()
        self._err = []
        self._t = threading.Thread(target=lambda: self._err.extend(self.proc.stderr), daemon=True)
        self._t.start()


def ap_maps(pid):
    return [ln.split(None, 5)[-1] for ln in Path(f"/proc/{pid}/maps").read_text().splitlines()
            if ln.endswith(("/libasyncProfiler.so", "/libasyncProfiler.so (deleted)"))]


def polyprof_dirs(root="/tmp"):
    return {p.name for p in Path(root).iterdir() if p.name.startswith("polyprof-")
            and p.is_dir() and any(x.name.startswith(("sess-", "async-profiler"))
                                   for x in p.iterdir())}


@pytest.mark.parametrize("version", ["17", "25"])
def test_async_profiler_real_library(version, hot_classes, launchers, start_app, outdir):
    """The real async-profiler (the pinned jar's library), loaded by polyprof's own attach client
    (no child process at all), with gProfiler's default arguments: Hot's 3:1 split within the
    share check's bounds, `_[j]` frames; the library file and every directory gone from the JVM's
    /tmp after the session while the JVM keeps it mapped; a second session on the same JVM
    reuses the loaded library."""
    jdk(version)
    env = asprof_env()
    app = start_app(launchers / f"pp_java{version}", "-cp", hot_classes, "Hot", 2)
    warm(app.pid)
    before = polyprof_dirs()
    r = RunEnv(env, "-d", 12, "-f", 99, "--java-mode", "ap", "-o", outdir, "-v", "--pids",
               app.pid).wait()
    assert r.children == set(), r.children
    lines = last_profile(outdir).for_comm(f"pp_java{version}")
    frames = [x for f, _ in lines for x in f[4:]]
    assert not any(x.startswith("[Profiling") for x in frames), r.stderr[-2000:]
    assert any(x.startswith("Hot.hotA()V_[j]") for x in frames), frames[:20]
    rt, sampler = totals(r.stderr, app.pid)
    assert rt > 0 and sum(c for _, c in lines) == sampler
    na = sum(c for f, c in lines if any(x.startswith("Hot.hotA(") for x in f))
    nb = sum(c for f, c in lines if any(x.startswith("Hot.hotB(") for x in f))
    print(f"JDK {version} ap: hotA {na}, hotB {nb}: {100.0 * na / max(na + nb, 1):.1f}%")
    assert_share(100.0 * na / max(na + nb, 1), na + nb, 75, f"JDK {version} async-profiler hotA")
    mapped = ap_maps(app.pid)
    assert mapped and all(m.endswith(" (deleted)") for m in mapped), mapped
    assert polyprof_dirs() <= before, "files left in /tmp"
    # a second session: async-profiler stays loaded (it cannot be unloaded) and is reused
    r2 = RunEnv(env, "-d", 3, "-f", 99, "--java-mode", "ap", "-o", outdir, "-v", "--pids",
                app.pid).wait()
    frames = [x for f, _ in last_profile(outdir).for_comm(f"pp_java{version}") for x in f[4:]]
    assert any(x.startswith("Hot.hot") for x in frames), r2.stderr[-2000:]
    assert not any(x.startswith("[Profiling") for x in frames), r2.stderr[-2000:]
    assert len(set(ap_maps(app.pid))) == 1, "one async-profiler in the JVM"
    assert "has async-profiler loaded from" in r2.stderr


def test_async_profiler_in_a_jvm_with_its_own_mount_namespace(hot_classes, outdir):
    """A JVM in its own pid and mount namespace with a private tmpfs /tmp: the library is written
    into that /tmp (through /proc/<pid>/root), loaded, and removed; the JVM maps it from its own
    /tmp; nothing of polyprof's is left there."""
    java = jdk("17") / "bin" / "java"
    env = asprof_env()
    classes = Path(tempfile.mkdtemp(prefix="pp_it_java_ap_ns_", dir="/var/tmp"))
    shutil.copytree(hot_classes, classes, dirs_exist_ok=True)
    sh = subprocess.Popen(
        ["unshare", "--pid", "--mount", "--fork", "--mount-proc", "sh", "-c",
         f"mount -t tmpfs tmpfs /tmp && exec {java} -cp {classes} Hot"],
        stdout=subprocess.PIPE, text=True)
    sh_out = LineReader(sh.stdout)
    pid = None
    try:
        assert sh_out.wait_line(lambda x: True, 30, "the JVM to start").startswith("ready 1")
        pid = int(Path(f"/proc/{sh.pid}/task/{sh.pid}/children").read_text().split()[0])
        warm(pid)
        r = RunEnv(env, "-d", 4, "-f", 99, "--java-mode", "ap", "-o", outdir, "-v", "--pids",
                   pid).wait()
        prof = last_profile(outdir)
        ours = [x for f, c in prof.stacks if f[2] == "java" for x in f[4:]]
        assert any(x.startswith("Hot.hot") and x.endswith("_[j]") for x in ours), r.stderr[-3000:]
        assert not any(x.startswith("[Profiling") for x in ours), r.stderr[-3000:]
        mapped = ap_maps(pid)
        assert mapped and all(m.startswith("/tmp/polyprof-") for m in mapped), mapped
        assert not Path(f"/proc/{pid}/root" + mapped[0].split(" (deleted)")[0]).exists()
        left = {p.name for p in Path(f"/proc/{pid}/root/tmp").iterdir()}
        assert left <= {".java_pid1", "hsperfdata_root"}, left
    finally:
        if pid:
            os.kill(pid, 9)
        sh.kill()
        sh.wait()
        sh.stdout.close()
        shutil.rmtree(classes, ignore_errors=True)


def perf_fds(pid):
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            n += os.readlink(fd) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


@pytest.mark.parametrize("mode", ["cpu", "itimer"])
def test_async_profiler_cpu_or_itimer_and_options(mode, hot_classes, launchers, start_app,
                                                  outdir):
    """--java-async-profiler-mode reaches the JVM: with cpu async-profiler opens perf events in
    the JVM (seen in its fds during the session), with itimer none. --java-collect-thread-names
    gives the [name tid=N] frames and --java-async-profiler-args reaches async-profiler
    (jstackdepth=1: Java stacks of one frame)."""
    jdk("17")
    env = asprof_env()
    app = start_app(launchers / "pp_java17", "-cp", hot_classes, "Hot")
    warm(app.pid)
    base = perf_fds(app.pid)
    run = RunEnv(env, "-d", 5, "-f", 99, "--java-mode", "ap", "-o", outdir, "-v", "--pids",
                 app.pid, "--java-async-profiler-mode", mode, "--java-collect-thread-names",
                 "--java-async-profiler-args", "jstackdepth=1")
    seen = 0
    deadline = time.time() + 60
    while run.proc.poll() is None and time.time() < deadline:
        seen = max(seen, perf_fds(app.pid) - base)
        time.sleep(0.1)
    run.wait()
    if mode == "cpu":
        assert seen > 0, "no perf events opened in the JVM in cpu mode"
    else:
        assert seen == 0, f"{seen} perf events in itimer mode"
    lines = last_profile(outdir).for_comm("pp_java17")
    java = [f[4:] for f, _ in lines if any(x.startswith("Hot.hot") for x in f)]
    assert java, run.stderr[-3000:]
    assert all(re.fullmatch(r"\[main tid=\d+\]", f[0]) for f in java), java[:3]
    # jstackdepth=1: the hot method alone under the thread frame, no Hot.main/Hot.work
    assert all(not any(x.startswith(("Hot.main", "Hot.work")) for x in f) for f in java), \
        java[:3]


@pytest.mark.parametrize("safemode", [None, "hserr,profiled-oom"])
def test_safemode_after_a_profiled_jvm_is_killed(safemode, hot_classes, launchers, start_app,
                                                 outdir):
    """A JVM killed by SIGKILL while profiled disables Java profiling for the rest of the run,
    unless --java-safemode leaves profiled-signaled out."""
    jdk("17")
    victim = start_app(launchers / "pp_java17", "-cp", hot_classes, "Hot")
    other = start_app(launchers / "pp_java25" if JDKS["25"].exists() else launchers / "pp_java17",
                      "-cp", hot_classes, "Hot")
    other_comm = Path(f"/proc/{other.pid}/comm").read_text().strip()
    warm(other.pid, 1.0)
    extra = ["--java-safemode", safemode] if safemode else []
    run = Run("-c", "-d", 8, "-f", 49, "--java-mode", "jfr", *extra, "-o", outdir, "-v")
    try:
        wait_for(lambda: "JFR sessions started" in "".join(run._err), 30, "JFR to start")
        victim.proc.kill()
        victim.proc.wait()

        def sessions():
            return sorted(p for p in Path(outdir).glob("profile_*.col"))
        wait_for(lambda: len(sessions()) >= 2, 40, "a second session")
        second = Profile(sessions()[1])
        lines = second.for_comm(other_comm)
        assert lines
        skipped = [f for f, _ in lines
                   if "[Profiling skipped: disabled due to profiled-signaled]" in f]
        if safemode:
            assert not skipped and any(x.startswith("Hot.") for f, _ in lines for x in f), \
                "".join(run._err)[-3000:]
        else:
            assert len(skipped) == len(lines), "".join(run._err)[-3000:]
    finally:
        run.proc.terminate()
        run.proc.wait(30)
    err = "".join(run._err)
    died = f"JVM {victim.pid} (pp_java17) died during profiling (profiled-signaled)"
    assert died in err
    assert ("that safemode option is off" in err) == bool(safemode)
    first = Profile(sessions()[0])
    assert any("[Profiling error: process went down during profiling]" in f
               for f, _ in first.for_comm("pp_java17"))


def test_jvm_of_another_user_in_a_user_namespace(hot_classes, outdir, tmp_path):
    """A JVM run by nobody as root of its own user namespace refuses polyprof's root as peer
    and distrusts a root-owned trigger file: polyprof gives the trigger to the JVM's user and
    connects with the JVM's ids. No thread dump may reach the JVM's stdout."""
    java = jdk("17") / "bin" / "java"
    classes = Path(tempfile.mkdtemp(prefix="pp_it_userns_"))
    try:
        classes.chmod(0o755)
        for f in hot_classes.iterdir():
            shutil.copy(f, classes)
        cwd = classes / "cwd"
        cwd.mkdir(mode=0o777)
        cwd.chmod(0o777)
        app = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                "unshare", "--user", "--map-root-user", str(java), "-cp",
                                str(classes), "Hot", "2"], cwd=cwd, stdout=subprocess.PIPE,
                               text=True)
        app_out = LineReader(app.stdout)
        try:
            line = app_out.wait_line(lambda x: True, 30, "the JVM to start", allow_end=True)
            if not line or not line.startswith("ready"):
                pytest.skip("unprivileged user namespaces are not available")
            pid = int(line.split()[1])
            warm(pid)
            # JFR starts up inside this JVM during the first seconds of its first session
            r = run_polyprof("-d", 8, "-f", 199, "--java-mode", "jfr", "-o", outdir, "-v")
            rt, _ = totals(r.stderr, pid)
            assert rt > 0, r.stderr[-3000:]
            prof = last_profile(outdir)
            ours = [f for f, _ in prof.stacks if len(f) > 4 and f[2] == "java"
                    and any(x.startswith("Hot.hot") and x.endswith("]") for x in f)]
            assert ours
            assert not list(cwd.iterdir())
        finally:
            app.kill()
            app.wait()
            rest = app_out.text()
            app.stdout.close()
        assert "Full thread dump" not in rest
    finally:
        shutil.rmtree(classes, ignore_errors=True)


@pytest.mark.parametrize("version", ["17", "25"])
def test_jfr_parser_matches_jfr_print(version, tmp_path):
    """polyprof's native JFR parser gives exactly the stacks that the JDK's own `jfr print`
    gives (collapsed by tests/fixtures/jfr/collapse.py), on a fresh recording of a busy
    multi-threaded JVM (bench/java/Busy.java: thousands of distinct stacks)."""
    home = jdk(version)
    subprocess.run([str(home / "bin" / "javac"), "-d", str(tmp_path),
                    str(ROOT / "bench" / "java" / "Busy.java")], check=True)
    rec = tmp_path / "busy.jfr"
    subprocess.run([str(home / "bin" / "java"), "-XX:FlightRecorderOptions:stackdepth=256",
                    "-XX:StartFlightRecording=settings=none,+jdk.ExecutionSample#enabled=true,"
                    f"+jdk.ExecutionSample#period=10ms,filename={rec}", "-cp", str(tmp_path),
                    "Busy", "4000"], check=True, stdout=subprocess.DEVNULL, timeout=120)
    ours = subprocess.run([str(ROOT / "build" / "bench" / "bench_jfr"), "-p", str(rec)],
                          check=True, capture_output=True, text=True, timeout=120).stdout
    jfr = subprocess.run([str(home / "bin" / "jfr"), "print", "--json", "--stack-depth", "2048",
                          "--events", "jdk.ExecutionSample", str(rec)], check=True,
                         capture_output=True, timeout=300).stdout
    ref = subprocess.run(["/usr/bin/python3", str(ROOT / "tests" / "fixtures" / "jfr" /
                                                  "collapse.py")], input=jfr, check=True,
                         capture_output=True, timeout=120).stdout.decode()
    ours_lines, ref_lines = sorted(ours.splitlines()), sorted(ref.splitlines())
    assert len(ref_lines) > 100, f"too few distinct stacks recorded: {len(ref_lines)}"
    assert ours_lines == ref_lines, (len(ours_lines), len(ref_lines),
                                     sorted(set(ours_lines) ^ set(ref_lines))[:5])


IDLE_JAVA = ("public class Idle { public static void main(String[] a) throws Exception {\n"
             "  System.out.println(\"ready\"); Thread.sleep(600_000); } }\n")


def test_idle_jvm_is_not_asked_for_its_perf_map_again(launchers, tmp_path):
    """Continuous mode: Compiler.perfmap is requested at every session's start and before its
    last drain, except from a JVM that used no CPU time since it wrote its last map (it compiled
    nothing; the request would make it write its whole map again, issue 12). An idle JVM's map
    is written about once, not twice per session."""
    home = jdk("17")
    (tmp_path / "Idle.java").write_text(IDLE_JAVA)
    subprocess.run([str(home / "bin" / "javac"), "-d", str(tmp_path), str(tmp_path / "Idle.java")],
                   check=True)
    app = App([str(launchers / "pp_java17"), "-XX:+UseSerialGC", "-cp", str(tmp_path), "Idle"])
    perfmap, out = Path(f"/tmp/perf-{app.pid}.map"), tmp_path / "out"
    try:
        run = Run("-c", "-d", 2, "-f", 99, "--java-mode", "disabled", "-o", out, "--log-file",
                  tmp_path / "pp.log")
        writes = set()

        def sessions():
            if perfmap.exists():
                writes.add(perfmap.stat().st_mtime_ns)
            return len(list(out.glob("profile_*.col")))

        wait_for(lambda: run.proc.poll() is not None or sessions() >= 4, 60, "4 sessions",
                 interval=0.02)
        run.proc.terminate()
        run.wait()
    finally:
        app.stop()
    assert 1 <= len(writes) <= 3, f"the idle JVM wrote its map {len(writes)} times in 4 sessions"
    assert not perfmap.exists(), "the map polyprof made is removed at exit"


@pytest.mark.parametrize("listener", ["not started", "running"])
@pytest.mark.parametrize("version", ["17", "25"])
def test_stale_attach_socket(version, listener, hot_classes, launchers, start_app, outdir):
    """A /tmp/.java_pid<pid> nobody listens on, made after the JVM started (HotSpot removes one
    present at its start; another process of a container, or a /tmp shared by two pid
    namespaces, can put one there later, also over the socket of a listener already running).
    polyprof removes it and starts (or restarts) the JVM's listener, and profiles the JVM,
    instead of failing with 'Connection refused'; the JVM prints no thread dump (HotSpot
    restarts a running listener on SIGQUIT only when the path is missing, and dumps otherwise)."""
    home = jdk(version)
    app = start_app(launchers / f"pp_java{version}", "-cp", hot_classes, "Hot", 3)
    sock = Path(f"/tmp/.java_pid{app.pid}")
    assert not sock.exists(), "the JVM started its attach listener by itself"
    if listener == "running":
        subprocess.run([str(home / "bin" / "jcmd"), str(app.pid), "VM.version"], check=True,
                       capture_output=True, timeout=30)
        assert sock.exists()
    dead = sock.with_name(sock.name + ".dead")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(dead))
    s.close()  # the file stays; nobody listens on it
    dead.rename(sock)
    try:
        r = run_polyprof("-d", 3, "-f", 99, "--java-mode", "jfr", "--pids", app.pid, "-o",
                         outdir, "-v")
        lines = last_profile(outdir).for_comm(f"pp_java{version}")
        assert any(x.startswith("Hot.") and x.endswith(("_[j]", "_[i]", "_[0]"))
                   for f, _ in lines for x in f[4:]), r.stderr[-3000:]
        assert "refuses connections (not this JVM's)" in r.stderr
        assert "No available recordings" in jfr_check(version, app.pid)  # the socket answers
    finally:
        sock.unlink(missing_ok=True)
        dead.unlink(missing_ok=True)
    app.stop()
    assert "Full thread dump" not in app.out.text(timeout=10)
