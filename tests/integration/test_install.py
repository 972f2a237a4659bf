"""`make install` and the image built from it (docker/): the installed tree profiles the host
from another root, finds its tools on the resource search path, and the DaemonSet's liveness
probe reads the heartbeat that tree writes.

The image cannot be built here (no Docker engine), so the test builds what it would hold:
`make install DESTDIR=<root>` with the Dockerfile's own PREFIX, the shared libraries the binary
needs (`ldd`; the image's Debian packages), the directories a Debian base image has. The
installed binary (the Dockerfile's ENTRYPOINT) then runs chrooted into that tree, in a mount
namespace of its own (as a container's), with a fresh /proc of the host's PID namespace (what
`--pid=host` gives), /sys and /dev: the host's processes and files are reachable only through
/proc, as in the container.
"""
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import APPS, ROOT, App, Profile

DOCKERFILE = ROOT / "docker" / "Dockerfile"
DAEMONSET = ROOT / "docker" / "polyprof-daemonset.yaml"
PP_TOOLS = Path(os.environ.get("PP_TOOLS", "/var/cache/polyprof/tools"))
PYSPY_VERSION = re.search(r"^PYSPY_VERSION=(\S+)$",
                          (ROOT / "tests/tools/install.sh").read_text(), re.M)[1]

# Mounts what a privileged --pid=host container sees, in the mount namespace `unshare` made for
# this process only (none of it reaches the host's mount table; it goes with the namespace), then
# runs the command inside the root.
ENTER_ROOT = r"""set -e
r=$1; shift
mount -t proc proc "$r/proc"
mount -t sysfs sysfs "$r/sys"
mount --bind /dev "$r/dev"
exec chroot "$r" "$@"
"""


def dockerfile():
    """The Dockerfile's install step and entry point."""
    text = DOCKERFILE.read_text()
    m = re.search(r"make install DESTDIR=(\S+) PREFIX=(\S+)", text)
    assert m, "the Dockerfile lays the image out with make install"
    stage, prefix = m[1], m[2]
    assert re.search(rf"^COPY --from=build {re.escape(stage)}/ /$", text, re.M), \
        "the installed tree is the image's root"
    entry = re.search(r'^ENTRYPOINT \["([^"]+)"\]$', text, re.M)[1]
    env = dict(re.findall(r"^ENV (\w+)=(\S+)$", text, re.M))
    return prefix, entry, env


def container_spec():
    ds = yaml.safe_load(DAEMONSET.read_text())
    return ds["spec"]["template"]["spec"]["containers"][0]


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == str(path) or p.startswith(f"{path}/")]


@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    """A root laid out as the image would be; mounts left under it (there should be none) are
    unmounted at teardown, whatever happened."""
    root = tmp_path_factory.mktemp("image_root")
    prefix, entry, _ = dockerfile()
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "install",
                        f"DESTDIR={root}", f"PREFIX={prefix}", f"PP_TOOLS={PP_TOOLS}"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"make install failed:\n{r.stdout}\n{r.stderr}"
    binary = root / entry.lstrip("/")
    assert os.access(binary, os.X_OK), f"the entry point {entry} is not installed"
    # What the image's Debian packages and base image provide.
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    for lib in re.findall(r"(?:=> |^\s*)(/\S+) \(", ldd, re.M):
        dest = root / lib.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, dest)  # follows the links: the file itself
    for d in ("proc", "sys", "dev", "run", "tmp", "out"):
        (root / d).mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "var").mkdir(exist_ok=True)
    (root / "var/run").symlink_to("/run")
    try:
        yield root, entry
    finally:
        left = mounts_under(root)
        for m in sorted(left, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], check=False)
        assert not left, f"mounts left under the test's root: {left}"


def run_in_root(root, argv, env, timeout=120):
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "--",
                           "sh", "-c", ENTER_ROOT, "sh", str(root), *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def image_env(extra=()):
    """The image's environment (its ENV lines), a PATH with no tool on it, and extra."""
    _, _, env = dockerfile()
    return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **env,
            **dict(extra)}


@pytest.fixture(scope="module")
def host_run(image_root, tmp_path_factory):
    """The installed polyprof, chrooted, profiling the whole host for 2 s with the DaemonSet's
    environment (its heartbeat file among it), while two C programs run on the host (the second
    under another name: a quiet CI host may run nothing else on its CPUs)."""
    root, entry = image_root
    appdir = tmp_path_factory.mktemp("host_app")
    subprocess.run(["gcc", "-O0", "-g", "-fno-omit-frame-pointer", "-o",
                    str(appdir / "pp_hot_c"), str(APPS / "hot.c")], check=True)
    shutil.copy2(appdir / "pp_hot_c", appdir / "pp_other_c")
    ds_env = {e["name"]: e["value"] for e in container_spec()["env"]}
    app = App([str(appdir / "pp_hot_c")])
    other = None
    try:
        other = App([str(appdir / "pp_other_c")])
        r = run_in_root(root, [entry, "-d", 2, "-f", 99, "-o", "/out", "-v"], image_env(ds_env))
    finally:
        app.stop()
        if other:
            other.stop()
    assert r.returncode == 0, f"polyprof exited {r.returncode}:\n{r.stderr[-4000:]}"
    return root, r, app.pid, appdir, ds_env


def test_installed_tree_profiles_the_host_from_another_root(host_run):
    root, r, pid, appdir, _ = host_run
    # the host's program is not in the root: its symbols came through /proc/<pid>/root
    assert not (root / str(appdir).lstrip("/")).exists()
    col = root / "out" / "last_profile.col"
    assert col.exists(), r.stderr[-3000:]
    prof = Profile(col)
    mine = prof.for_comm("pp_hot_c")
    assert mine, "the host's C program is in the profile"
    assert any("hot_a" in f for f, _ in mine) and any("hot_b" in f for f, _ in mine), \
        [f for f, _ in mine][:5]
    assert prof.for_comm("pp_other_c"), "the whole host: the other program too"
    assert (root / "out" / "last_flamegraph.html").exists()
    assert "cannot use log file" not in r.stderr, "the default log directory is installed"
    assert (root / "var/log/polyprof/polyprof.log").stat().st_size > 0
    assert "] ERROR: " not in r.stderr, r.stderr[-3000:]


def test_installed_tool_is_found_on_the_resource_path(image_root, tmp_path):
    """py-spy, installed by `make install` from `make deps`'s cache, is found below
    PREFIX/share/polyprof/resources (PATH has none) and profiles a host Python process."""
    root, entry = image_root
    prefix, _, _ = dockerfile()
    installed = f"{prefix}/share/polyprof/resources/python/py-spy"
    if not (root / installed.lstrip("/")).exists():
        pytest.skip(f"py-spy {PYSPY_VERSION} is not in {PP_TOOLS} (make deps fetches it; make "
                    f"install copies it to {installed})")
    script = tmp_path / "pyhot_install.py"
    shutil.copy(APPS / "pyhot.py", script)
    app = App(["/usr/bin/python3.11", str(script)])
    try:
        r = run_in_root(root, [entry, "-d", 3, "-f", 99, "-o", "/out/pyspy", "--python-mode",
                               "pyspy", "--pids", app.pid, "-v"], image_env())
    finally:
        app.stop()
    assert r.returncode == 0, f"polyprof exited {r.returncode}:\n{r.stderr[-4000:]}"
    assert re.search(rf"py-spy: 1 processes, \d+ Hz, 3 s \({re.escape(installed)}\)", r.stderr), \
        r.stderr[-3000:]
    prof = Profile(root / "out" / "pyspy" / "last_profile.col")
    frames = [x for f, _ in prof.stacks if str(script) in ";".join(f) for x in f]
    assert any(x.startswith("Worker.hot_a (") and x.endswith("_[p]") for x in frames), \
        frames[:10]
    assert not any(x.startswith("[Profiling") for x in frames), frames[:10]


def probe(kind, hb_file, duration):
    cmd = container_spec()[kind]["exec"]["command"]
    return subprocess.run(cmd, env={"PATH": "/usr/bin:/bin", "POLYPROF_HEARTBEAT_FILE": str(hb_file),
                                    "POLYPROF_PROFILING_DURATION": duration},
                          capture_output=True, text=True, timeout=10).returncode


def test_probes_read_the_heartbeat_of_the_installed_tree(host_run, tmp_path):
    """The DaemonSet's probes, run as written: started once a heartbeat exists, alive while it
    is younger than 3 session lengths. The heartbeat is the one the chrooted run wrote."""
    root, _, _, _, ds_env = host_run
    duration = ds_env["POLYPROF_PROFILING_DURATION"]
    hb = root / ds_env["POLYPROF_HEARTBEAT_FILE"].lstrip("/")
    assert hb.exists(), "the session touched the heartbeat file named by the environment"
    assert time.time() - hb.stat().st_mtime < 120
    assert probe("startupProbe", hb, duration) == 0
    assert probe("livenessProbe", hb, duration) == 0
    limit = 3 * int(duration)
    os.utime(hb, (time.time() - (limit - 10),) * 2)
    assert probe("livenessProbe", hb, duration) == 0
    os.utime(hb, (time.time() - (limit + 1),) * 2)
    assert probe("livenessProbe", hb, duration) != 0, "a stale heartbeat fails"
    missing = tmp_path / "none"
    assert probe("startupProbe", missing, duration) != 0
    assert probe("livenessProbe", missing, duration) != 0


def dockerignore_regex(pattern):
    """A .dockerignore pattern as a regex: '*' and '?' stay within one path component, '**'
    spans any number of them (Docker's rules)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def dockerignored(path, patterns):
    """Whether .dockerignore leaves path (relative, '/'-separated) out of the build context:
    the last pattern matching the path or one of its parent directories wins; '!' re-includes."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    out = False
    for pat in patterns:
        neg = pat.startswith("!")
        rx = dockerignore_regex(pat[1:] if neg else pat)
        if any(rx.fullmatch(x) for x in prefixes):
            out = not neg
    return out


def test_image_context_has_what_make_install_needs(tmp_path):
    """The files .dockerignore lets into the build context are enough for the Dockerfile's
    build step (make's dry run: every source and rule present, the tool pins read), the tools
    `make` copied into resources/ are among them, and the host's build directory is not."""
    patterns = [x.strip() for x in (ROOT / ".dockerignore").read_text().splitlines()
                if x.strip() and not x.startswith("#")]
    for p in ("build/polyprof", "build/obj/base/log.o", ".git/HEAD", "out/last_profile.col",
              "tests/integration/test_install.py", "isolate-1-v8.log",
              "runtimes/__pycache__/x.pyc"):
        assert dockerignored(p, patterns), p
    for p in ("Makefile", "base/resource.c", "resources/README.md", "tests/tools/install.sh",
              "docker/Dockerfile", "docker/rootfs.sh", "resources/python/py-spy",
              "resources/java/async-profiler.jar", "resources/ruby/rbspy"):
        assert not dockerignored(p, patterns), p
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    ctx = tmp_path / "ctx"
    for f in files:
        if not dockerignored(f, patterns) and (ROOT / f).exists():
            (ctx / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, ctx / f)
    assert (ctx / "tests/tools/install.sh").exists()
    prefix, _, _ = dockerfile()
    assert "make install DESTDIR=/stage PREFIX=/usr/local PP_TOOLS= " in DOCKERFILE.read_text()
    r = subprocess.run(["make", "-n", "-C", str(ctx), "build/polyprof", "install",
                        "DESTDIR=/stage", f"PREFIX={prefix}", "PP_TOOLS="],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"py-spy-{PYSPY_VERSION}/py-spy" in r.stdout
    assert f"/stage{prefix}/bin/polyprof" in r.stdout
