"""The container image (docker/Dockerfile, `make image`; docs/deploy.md), run with podman as a
user runs it: privileged, in the host's PID namespace, with Debian's runc. From inside the
container it profiles a C, a Python and a Java process of the host, with the py-spy and the
async-profiler bundled in the image (and rbspy found too).

The image is built once (`make image`); when it is missing this test builds it and prints the
time that took (a fresh CI machine: debootstrap, the build stage's Debian packages, the compile).
Skipped only where podman cannot run containers (tests/expected-skips).
"""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import APPS, ROOT, App, Profile, wait_for

IMAGE = os.environ.get("IMAGE", "localhost/polyprof:latest")
JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64"
RESOURCES = "/usr/local/share/polyprof/resources"
# What the container needs (docs/deploy.md): privileged (BPF, perf events, ptrace, setns), the
# host's PID namespace (its processes, and their files through /proc/<pid>/root), debugfs for
# the tracepoints, the output directory; ulimits within the host's hard limits (podman's
# defaults exceed them here); runc (crun refuses this kernel's hybrid cgroup setup).
RUN = ["podman", "--runtime", "runc", "run", "--rm", "--privileged", "--pid=host",
       "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
       "-v", "/sys/kernel/debug:/sys/kernel/debug"]


def podman_cannot_run():
    """Why podman cannot run a container here, or None."""
    if not shutil.which("podman") or not shutil.which("runc"):
        return "podman or runc is not installed (make deps installs podman runc debootstrap)"
    r = subprocess.run(["podman", "--runtime", "runc", "info"], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        return f"podman cannot run here: {r.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def image():
    why = podman_cannot_run()
    if why:
        pytest.skip(why)
    if subprocess.run(["podman", "image", "exists", IMAGE]).returncode != 0:
        t = time.monotonic()
        r = subprocess.run(["make", "-s", "-C", str(ROOT), "image", f"IMAGE={IMAGE}"],
                           capture_output=True, text=True, timeout=2400)
        assert r.returncode == 0, f"make image failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        print(f"make image: built {IMAGE} in {time.monotonic() - t:.0f} s")
    size = int(subprocess.run(["podman", "image", "inspect", "--format", "{{.Size}}", IMAGE],
                              capture_output=True, text=True, check=True).stdout)
    print(f"{IMAGE}: {size / 1e6:.0f} MB")
    return IMAGE, size


def test_image_size_is_within_150_mb(image):
    _, size = image
    assert size <= 150e6, f"the image is {size / 1e6:.0f} MB (docs/deploy.md: at most 150 MB)"


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_image_profiles_host_processes_with_the_bundled_tools(image, appdir, tmp_path):
    """C frames by the system sampler, Python frames by the bundled py-spy, Java frames by the
    bundled async-profiler, all found in the image's resources directory."""
    name, _ = image
    if not os.path.exists(f"{JDK17}/bin/javac"):
        pytest.fail(f"no JDK 17 at {JDK17} (make deps installs openjdk-17-jdk-headless)")
    classes = tmp_path / "classes"
    subprocess.run([f"{JDK17}/bin/javac", "-d", str(classes), str(APPS / "Hot.java")], check=True)
    (tmp_path / "pp_img_java").symlink_to(f"{JDK17}/bin/java")
    script = tmp_path / "pyhot_image.py"
    shutil.copy(APPS / "pyhot.py", script)
    out = tmp_path / "out"
    out.mkdir()
    apps = []
    try:
        apps.append(App([str(appdir / "pp_hot_c")]))
        apps.append(App(["/usr/bin/python3.11", str(script)]))
        apps.append(App([str(tmp_path / "pp_img_java"), "-cp", str(classes), "Hot", "1"]))
        c, py, java = (a.pid for a in apps)
        # JIT-compiled hot methods (a loaded 2-core host gives the JVM little CPU)
        wait_for(lambda: cpu_seconds(java) >= 1.0, 120, "the JVM to warm up")
        r = subprocess.run(RUN + ["-v", f"{out}:/out", name, "-d", "5", "-f", "99", "-o", "/out",
                                  "--no-flamegraph", "-v", "--java-mode", "ap", "--python-mode",
                                  "pyspy", "--ruby-mode", "rbspy", "--pids", f"{c},{py},{java}"],
                           capture_output=True, text=True, timeout=300)
    finally:
        for a in apps:
            a.stop()
    assert r.returncode == 0, f"the container exited {r.returncode}:\n{r.stderr[-4000:]}"
    err = r.stderr
    assert "runtime profilers: java (ap: async-profiler), python (pyspy: py-spy), ruby (rbspy)" \
        in err, err[-3000:]
    assert "not found" not in err, err[-3000:]
    assert re.search(rf"py-spy: 1 processes, \d+ Hz, 5 s \({RESOURCES}/python/py-spy\)", err), \
        err[-3000:]
    prof = Profile(out / "last_profile.col")

    by_comm = {}
    for f, _ in prof.stacks:
        by_comm.setdefault(f[2] if len(f) > 2 else "", []).extend(f)
    c_frames = by_comm.get("pp_hot_c", [])
    assert "hot_a" in c_frames and "hot_b" in c_frames, sorted(by_comm)
    py_frames = [x for f, _ in prof.stacks if str(script) in ";".join(f) for x in f]
    assert any(x.startswith("Worker.hot_a (") and x.endswith("_[p]") for x in py_frames), \
        py_frames[:10]
    java_frames = by_comm.get("pp_img_java", [])
    assert any(x.startswith("Hot.hotA()V_[j]") for x in java_frames), java_frames[:20]
    frames = c_frames + py_frames + java_frames
    assert not any(x.startswith("[Profiling") for x in frames), \
        [x for x in frames if x.startswith("[Profiling")][:5]
