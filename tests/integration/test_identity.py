"""Issue 3's end-to-end check: discovery, application metadata, appids and container names for
real Python, Java, Go, Node and native processes, one of them in a cgroup named like a Docker
container."""
import json
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import APPS, POLYPROF, App, Profile, last_profile, run_polyprof, wait_for

CGROUP2 = next((p for p in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")
                if os.path.exists(os.path.join(p, "cgroup.procs"))
                and "cgroup2" in open("/proc/mounts").read()), None)


@pytest.fixture(scope="module")
def java_app(tmp_path_factory):
    d = tmp_path_factory.mktemp("java")
    subprocess.run(["javac", "-d", str(d), str(APPS / "Hot.java")], check=True)
    return d


@pytest.fixture
def docker_like_container():
    """A cgroup v2 scope named like a Docker container, plus Docker's on-disk config for it;
    None where there is no cgroup2 hierarchy (only the container checks need one)."""
    if not CGROUP2:
        yield None
        return
    cid = uuid.uuid4().hex + uuid.uuid4().hex
    cg = Path(CGROUP2) / "polyprof-it.slice" / f"docker-{cid}.scope"
    cg.mkdir(parents=True)
    cfg = Path("/var/lib/docker/containers") / cid
    created_docker = not Path("/var/lib/docker").exists()
    cfg.mkdir(parents=True)
    (cfg / "config.v2.json").write_text(json.dumps({"ID": cid, "Name": "/pp-it-web"}))
    try:
        yield cg
    finally:
        shutil.rmtree(cfg)
        if created_docker:
            shutil.rmtree("/var/lib/docker", ignore_errors=True)
        for p in (cg / "cgroup.procs").read_text().split():
            (Path(CGROUP2) / "cgroup.procs").write_text(p)
        cg.rmdir()
        cg.parent.rmdir()


@pytest.fixture(scope="module")
def python_link(tmp_path_factory):
    """Debian's python3 under the name python3.11, so that its comm differs from pytest's."""
    d = tmp_path_factory.mktemp("py")
    (d / "python3.11").symlink_to("/usr/bin/python3")
    return d / "python3.11"


def test_identity_of_every_runtime(appdir, java_app, start_app, outdir, docker_like_container,
                                   python_link):
    py = start_app(python_link, APPS / "hot.py")
    java = start_app("java", "-XX:+UseSerialGC", "-cp", java_app, "Hot")
    gos = start_app(appdir / "pp_hot_gos")
    node = start_app("node", APPS / "hot.js")
    native = start_app(appdir / "pp_hot_c")
    if docker_like_container:
        (docker_like_container / "cgroup.procs").write_text(str(native.pid))

    r = run_polyprof("-d", 3, "-f", 49, "-o", outdir)
    prof = last_profile(outdir)
    apps = prof.header["application_metadata"]
    assert apps[0] is None

    def entry(comm):
        lines = prof.for_comm(comm)
        assert lines, f"no samples for {comm}: {r.stderr[-2000:]}"
        idx = {int(f[0]) for f, _ in lines}
        assert len(idx) == 1
        return lines, apps[idx.pop()]

    lines, md = entry("python3.11")
    assert md["python_version"].startswith("Python 3.11.")
    assert md["exe_elfid"].startswith("buildid:")
    assert list(md)[-3:] == ["exe", "execfn", "arch"] and md["arch"] == "x86_64"
    assert {f[3] for f, _ in lines} == {f"appid: python: {APPS / 'hot.py'} ({APPS / 'hot.py'})"}

    lines, md = entry("java")
    assert md["java_version"].startswith('openjdk version "17.')
    assert md["libjvm_elfid"].startswith("buildid:")
    assert {f[3] for f, _ in lines} == {"appid: java: Hot"}

    lines, md = entry("pp_hot_gos")
    assert md["golang_version"].startswith("go1.")
    assert md["stripped"] is True and md["link"] == "static" and md["libc"] is None
    assert not any(f[3].startswith("appid:") for f, _ in lines)

    lines, md = entry("node")
    assert md["node_version"].startswith("v") and md["link"] in ("dynamic", "static")
    assert {f[3] for f, _ in lines} == {f"appid: nodejs: {APPS / 'hot.js'} ({APPS / 'hot.js'})"}

    lines, md = entry("pp_hot_c")
    assert md is None
    assert {f[1] for f, _ in prof.for_comm("python3.11")} == {""}
    if not docker_like_container:
        pytest.skip("container name not checked: no cgroup2 hierarchy (the rest passed)")
    assert {f[1] for f, _ in lines} == {"pp-it-web"}
    assert "pp-it-web" in prof.header["containers"]


def test_disabled_identifiers_and_names(appdir, start_app, outdir, python_link):
    start_app(python_link, APPS / "hot.py")
    run_polyprof("-d", 2, "-f", 49, "-o", outdir, "--disable-application-identifiers",
                 "--disable-container-names", "--disable-application-metadata")
    prof = last_profile(outdir)
    assert prof.header["container_names_enabled"] is False
    assert prof.header["application_metadata_enabled"] is False
    # no index frame: lines start with the (empty) container
    for frames, _ in prof.stacks:
        assert not any(fr.startswith("appid:") for fr in frames)
    py = [f for f, _ in prof.stacks if len(f) > 1 and f[1] == "python3.11"]
    assert py and all(f[0] == "" for f in py)


def test_discovery_regex_override(appdir, start_app, outdir, python_link):
    """--python-maps-regex "" turns Python detection off: the process is profiled as native (no
    appid, no Python metadata); a custom regex naming a native program's binary makes it Python."""
    start_app(python_link, APPS / "hot.py")
    native = start_app(appdir / "pp_hot_c")
    run_polyprof("-d", 2, "-f", 49, "-o", outdir, "--python-maps-regex", "")
    prof = last_profile(outdir)
    py = prof.for_comm("python3.11")
    assert py, "python3.11 sampled"
    assert not any(len(f) > 3 and f[3].startswith("appid:") for f, _ in py)
    assert all(f[0] == "0" for f, _ in py), "native processes use metadata index 0"

    run_polyprof("-d", 2, "-f", 49, "-o", outdir, "--python-maps-regex", r"/pp_hot_c$")
    prof = last_profile(outdir)
    hot = prof.for_comm("pp_hot_c")
    assert hot and all(f[0] != "0" for f, _ in hot), "pp_hot_c classified as Python"
    md = prof.header["application_metadata"][int(hot[0][0][0])]
    assert "python_version" in md
    assert native.proc.poll() is None


def test_jar_manifest_metadata_and_boot_appid(java_app, start_app, outdir, tmp_path):
    """A JVM started from a jar gets its manifest in the metadata; a Spring Boot launcher class
    started with -cp <jar> gets the manifest's Start-Class as appid (libarchive reads the jar,
    inside the process's root). The launcher here is a stand-in class with the launcher's name
    that runs Hot: Spring Boot itself is not installed."""
    src = tmp_path / "src" / "org" / "springframework" / "boot" / "loader" / "launch"
    src.mkdir(parents=True)
    (src / "JarLauncher.java").write_text(
        "package org.springframework.boot.loader.launch;\n"
        "public class JarLauncher { public static void main(String[] a) throws Exception {\n"
        "  Class.forName(\"Hot\").getMethod(\"main\", String[].class).invoke(null, (Object) a);"
        " } }\n")
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-d", str(classes), str(src / "JarLauncher.java")], check=True)
    for f in Path(java_app).glob("*.class"):
        shutil.copy(f, classes)
    (tmp_path / "MANIFEST.MF").write_text(
        "Main-Class: org.springframework.boot.loader.launch.JarLauncher\n"
        "Start-Class: com.example.ShopApplication\n"
        "Implementation-Title: shop\nImplementation-Version: 2.4.1\n")
    jar = tmp_path / "shop.jar"
    subprocess.run(["jar", "cfm", str(jar), str(tmp_path / "MANIFEST.MF"), "-C", str(classes),
                    "."], check=True)
    boot = start_app("java", "-cp", jar, "org.springframework.boot.loader.launch.JarLauncher")
    plain = start_app("java", "-jar", jar)
    run_polyprof("-d", 3, "-o", outdir)
    prof = last_profile(outdir)
    apps = prof.header["application_metadata"]
    seen = {}
    for frames, _ in prof.for_comm("java"):
        if len(frames) > 3 and frames[3].startswith("appid: "):
            seen.setdefault(frames[3], set()).add(int(frames[0]))
    assert "appid: java: com.example.ShopApplication" in seen, seen
    assert f"appid: java: {jar}" in seen, seen
    for idx in seen["appid: java: com.example.ShopApplication"] | seen[f"appid: java: {jar}"]:
        md = apps[idx]
        assert md["jar_manifest"]["start_class"] == "com.example.ShopApplication"
        assert md["jar_manifest"]["implementation_version"] == "2.4.1"
        assert list(md)[-3:] == ["exe", "execfn", "arch"]
    assert boot.pid != plain.pid


WAKE = ("import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
        "print('ready', flush=True)\nsignal.sigwait({signal.SIGUSR1})\n"
        "def spin():\n    return sum(i * i for i in range(10000))\n"
        "while True:\n    spin()\n")


def test_idle_process_is_examined_once_and_named_when_it_wakes(tmp_path):
    """Continuous mode: a Python process that sleeps through several sessions (no sample) is
    examined once (its appid and metadata stay cached while it lives, issue 12), and when it
    wakes up its stacks carry its own appid and metadata."""
    (tmp_path / "pp_idle_py").symlink_to(os.path.realpath("/usr/bin/python3"))
    script = tmp_path / "wake.py"
    script.write_text(WAKE)
    # a comm of its own (the executable's name), and argv[0] "python3" for the appid rule
    app = App(["python3", str(script)], executable=str(tmp_path / "pp_idle_py"))
    try:
        idle_then_awake(app, script, tmp_path)
    finally:
        app.stop()


def idle_then_awake(app, script, tmp_path):
    out, log = tmp_path / "out", tmp_path / "pp.log"
    p = subprocess.Popen([str(POLYPROF), "-c", "-d", "2", "-f", "99", "-o", str(out),
                          "--log-file", str(log), "--no-flamegraph"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sessions():
        return sorted(out.glob("profile_*.col"))

    def woken():
        return [f for f in sessions() if Profile(f).for_comm("pp_idle_py")]

    try:
        wait_for(lambda: p.poll() is not None or len(sessions()) >= 3, 60, "3 sessions")
        assert p.poll() is None, "polyprof exited early"
        idle = [f for f in sessions() if not Profile(f).for_comm("pp_idle_py")]
        assert len(idle) >= 2, "the process was sampled while it slept"
        os.kill(app.pid, signal.SIGUSR1)
        wait_for(lambda: p.poll() is not None or len(woken()) >= 2, 60, "2 sessions awake")
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    assert p.returncode == 0
    examined = [line for line in log.read_text().splitlines()
                if f"identity: examining pid {app.pid} " in line]
    assert len(examined) == 1, examined
    for f in woken()[:2]:
        prof = Profile(f)
        lines = prof.for_comm("pp_idle_py")
        assert {fr[3] for fr, _ in lines} == {f"appid: python: {script} ({script})"}, f.name
        md = prof.header["application_metadata"][int(lines[0][0][0])]
        assert md["python_version"].startswith("Python 3."), md
