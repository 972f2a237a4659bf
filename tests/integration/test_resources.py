"""One install layout (README "Installing and resources"): build/polyprof, as `make deps && make`
leave it, finds the tools `make deps` fetched (py-spy, rbspy, async-profiler's jar), which `make`
copies into the checkout's resources/, the build tree's resources directory; and
`extract-resources --resources-dest DIR` copies what the search finds into DIR.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import POLYPROF, ROOT

PP_TOOLS = Path(os.environ.get("PP_TOOLS", "/var/cache/polyprof/tools"))
PINS = dict(re.findall(r"^(\w+_VERSION)=(\S+)$", (ROOT / "tests/tools/install.sh").read_text(),
                       re.M))
# <path in a resources directory>: where `make deps` keeps it in PP_TOOLS
TOOLS = {
    "python/py-spy": f"py-spy-{PINS['PYSPY_VERSION']}/py-spy",
    "ruby/rbspy": f"rbspy-{PINS['RBSPY_VERSION']}/bin/rbspy",
    "java/async-profiler.jar": f"async-profiler-{PINS['ASPROF_VERSION']}/java/async-profiler.jar",
}
STARTUP = re.compile(r"INFO: polyprof: runtime profilers: (.*)$", re.M)


def plain_env():
    """No override and a PATH without tools: only the resources beside the binary count."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLYPROF_", "GPROFILER_"))}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    return env


def fetched():
    missing = [str(PP_TOOLS / p) for p in TOOLS.values() if not (PP_TOOLS / p).is_file()]
    assert not missing, f"make deps did not fetch {missing} (run make deps)"


def startup_line(args, tmp_path):
    r = subprocess.run([str(POLYPROF), "-d", "1", "-f", "11", "-o", str(tmp_path / "out"),
                        "--no-flamegraph", "--pids", str(os.getpid()), *args],
                       capture_output=True, text=True, timeout=120, env=plain_env())
    assert r.returncode == 0, r.stderr
    m = STARTUP.search(r.stderr)
    assert m, r.stderr
    return m[1], r.stderr


def test_build_tree_binary_gets_the_tools_make_deps_fetched(tmp_path):
    """The explicit modes find their tool (no 'not found' error), as `make run`'s installed
    tree and the image do; auto is Java's in-sampler walker (which hands what it cannot walk to
    the async-profiler found here)."""
    fetched()
    line, err = startup_line(["--java-mode", "ap", "--python-mode", "pyspy", "--ruby-mode",
                              "rbspy"], tmp_path)
    assert line.startswith("java (ap: async-profiler), python (pyspy: py-spy), ruby (rbspy)"), line
    assert "not found" not in err, err
    line, err = startup_line([], tmp_path)
    assert line.startswith("java (auto: builtin), "), line
    for rel, src in TOOLS.items():
        staged = ROOT / "resources" / rel
        assert staged.read_bytes() == (PP_TOOLS / src).read_bytes(), f"{staged} is not {src}"


def test_extract_resources_copies_what_the_search_finds(tmp_path):
    """extract-resources --resources-dest DIR copies the tools and the Node addons (gProfiler's
    subcommand); DIR then serves a binary that has nothing beside it (POLYPROF_RESOURCES)."""
    fetched()
    addons = sorted(p.relative_to(ROOT / "resources")
                    for p in (ROOT / "resources" / "node").rglob("linux-perf.node"))
    assert addons, "make deps builds the Node addon into resources/node (run make deps)"
    dest = tmp_path / "extracted"
    r = subprocess.run([str(POLYPROF), "extract-resources", "--resources-dest", str(dest)],
                       capture_output=True, text=True, timeout=60, env=plain_env())
    assert r.returncode == 0, r.stderr
    for rel, src in TOOLS.items():
        assert (dest / rel).read_bytes() == (PP_TOOLS / src).read_bytes(), rel
        assert os.access(dest / rel, os.X_OK) == rel.endswith(("py-spy", "rbspy")), rel
    for rel in addons:
        assert (dest / rel).read_bytes() == (ROOT / "resources" / rel).read_bytes(), rel
    exe = tmp_path / "alone" / "bin" / "polyprof"
    exe.parent.mkdir(parents=True)
    exe.write_bytes(POLYPROF.read_bytes())
    exe.chmod(0o755)
    r = subprocess.run([str(exe), "-d", "1", "-f", "11", "-o", str(tmp_path / "out"),
                        "--no-flamegraph", "--pids", str(os.getpid()), "--java-mode", "ap",
                        "--python-mode", "pyspy", "--ruby-mode", "rbspy"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(plain_env(), POLYPROF_RESOURCES=str(dest)))
    assert r.returncode == 0 and "not found" not in r.stderr, r.stderr


def test_extract_resources_needs_a_destination(tmp_path):
    """Without --resources-dest it is a usage error (exit 2), as gProfiler's argparse makes it."""
    r = subprocess.run([str(POLYPROF), "extract-resources"], capture_output=True, text=True,
                       timeout=60, env=plain_env())
    assert r.returncode == 2, r.stderr
    assert "extract-resources: the following arguments are required: --resources-dest" in r.stderr
