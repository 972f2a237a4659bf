"""--php-mode phpspy (issue 14, docs/php.md): gProfiler's phpspy command line and its output
parsing. No phpspy package exists on this machine: the launcher runs against
tests/integration/standins/phpspy, a stand-in that follows phpspy's documented command line and
output format (it writes fixed stacks, it does not read PHP memory). A real phpspy installed as
php/phpspy on the resource search path is used instead when present (POLYPROF_REAL_PHPSPY=dir)."""
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import APPS, App, last_profile, run_polyprof

PHP = shutil.which("php8.2") or shutil.which("php")
pytestmark = pytest.mark.skipif(PHP is None, reason="php (Debian's php8.2-cli) is not installed")
STANDIN = Path(__file__).resolve().parent / "standins" / "phpspy"


def resources(tmp_path):
    real = os.environ.get("POLYPROF_REAL_PHPSPY")
    if real:
        return Path(real), True
    r = tmp_path / "res"
    (r / "php").mkdir(parents=True)
    shutil.copy(STANDIN, r / "php" / "phpspy")
    return r, False


def test_phpspy_command_line_and_output(tmp_path):
    """phpspy gets gProfiler's argv (-P from --php-proc-filter, -H capped at 999, -b 16384,
    -T 16, --output in the session's temp directory) and its own directory appended to PATH;
    each block becomes one `php;<root>_[php];...;<leaf>_[php]` sample of its pid."""
    res, real = resources(tmp_path)
    script = tmp_path / "hot.php"
    shutil.copy(APPS / "php" / "hot.php", script)
    shutil.copy(APPS / "php" / "inc.php", tmp_path / "inc.php")
    app = App([PHP, str(script)])
    log = tmp_path / "argv.json"
    env = dict(os.environ, POLYPROF_RESOURCES=str(res), PHPSPY_STANDIN_LOG=str(log))
    try:
        out = tmp_path / "out"
        r = run_polyprof("-d", 3, "-f", 1000, "-o", out, "--php-mode", "phpspy",
                         "--php-proc-filter", "^php8", "--pids", app.pid, env=env)
    finally:
        app.stop()
    prof = last_profile(out)
    mine = [(f, n) for f, n in prof.stacks if f[2] == "php"]
    assert mine, r.stderr
    for f, _ in mine:
        assert all(x.endswith("_[php]") for x in f[3:]), f
    if real:
        return
    got = json.loads(log.read_text())
    argv = got["argv"]
    assert argv[:10] == ["--verbose-fields=p", "-P", "^php8", "-H", "999", "-b", "16384", "-T",
                         "16", "--output"], argv
    assert len(argv) == 11 and Path(argv[10]).name.startswith("phpspy.") and \
        argv[10].endswith(".col"), argv
    assert got["path"].split(":")[-1] == str(res / "php"), got["path"]
    assert {tuple(f[3:]) for f, _ in mine} == {(
        f"<main> {script}:3_[php]", f"standin_outer {script}:7_[php]",
        f"Standin::leaf {script}:11_[php]")}
    # the sampler's native stacks of the process were replaced by phpspy's, scaled to them
    cov = {c["pid"]: c for c in prof.header["polyprof"]["runtime_samples"]}
    assert cov[app.pid]["runtime"] == "php", cov
    assert not Path(argv[10]).exists(), "phpspy's output file was removed"
