"""PHP frames walked inside the BPF sampler (issue 14, docs/php.md), against Debian's real PHP 8.2
CLI: the CPU split between two functions, exact names, files and lines (methods, static methods,
a closure, recursion of known depth, a function of an included file), the process total against
the sampler's count, php_version metadata."""
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import APPS, POLYPROF, App, LineReader, assert_share, last_profile, run_polyprof

PHP = shutil.which("php8.2") or shutil.which("php")
pytestmark = pytest.mark.skipif(PHP is None, reason="php (Debian's php8.2-cli) is not installed")
PHPAPPS = APPS / "php"
COMM = Path(PHP).name[:15] if PHP else ""


def line_of(path, text, nth=0):
    """The 1-based line of the nth line of path containing text."""
    hits = [i + 1 for i, x in enumerate(Path(path).read_text().splitlines()) if text in x]
    return hits[nth]


def body_of(path, decl):
    """The 1-based lines of the function declared by the line containing decl: from the
    declaration (its parameters' RECV opcodes carry it) to its closing brace."""
    lines = Path(path).read_text().splitlines()
    start = line_of(path, decl)
    indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
    end = next((i + 1 for i in range(start, len(lines)) if lines[i].strip().startswith("}")
                and len(lines[i]) - len(lines[i].lstrip()) == indent), None)
    assert end, f"no closing brace for {decl!r} in {path}"
    return set(range(start, end + 1))


def php_frames(f):
    return [x for x in f if x.endswith("_[php]")]


def parse(frame):
    """'Class::fn /file.php:12_[php]' -> ('Class::fn', '/file.php', 12)."""
    m = re.fullmatch(r"(.+) (\S+):(-?\d+)_\[php\]", frame)
    assert m, frame
    return m[1], m[2], int(m[3])


def php_coverage(prof, pid):
    """The pid's polyprof.runtime_samples entries as a PHP process. (A process that pytest
    started was, between its fork and its exec, a fork of pytest's Python, which the sampler
    walks: it may also have a "python" entry of a sample or so.)"""
    return [c for c in prof.header["polyprof"]["runtime_samples"]
            if c["pid"] == pid and c["runtime"] == "php"]


def coverage(prof, pid):
    return php_coverage(prof, pid)[0]


@pytest.fixture(scope="module")
def hot_profile(tmp_path_factory):
    """hot.php (its own copy) profiled for 10 s at 199 Hz with --php-mode builtin."""
    d = tmp_path_factory.mktemp("php")
    for f in ("hot.php", "inc.php"):
        shutil.copy(PHPAPPS / f, d / f)
    app = App([PHP, str(d / "hot.php")])
    try:
        out = d / "out"
        r = run_polyprof("-d", 10, "-f", 199, "-o", out, "--php-mode", "builtin", "--pids",
                         app.pid)
    finally:
        app.stop()
    return last_profile(out), app.pid, d, r.stderr


def test_split_and_process_total(hot_profile):
    """hot_a does 3 times hot_b's work: 75 % of the two within the binomial band; every sample
    of the process is in its stacks (their total equals the sampler's count) and >= 95 % carry
    PHP frames; the session's summary line counts the walked process as having runtime
    stacks."""
    prof, pid, d, stderr = hot_profile
    c = coverage(prof, pid)
    assert c["runtime"] == "php" and c["profiler"] == "sampler-walk" and c["mode"] == "builtin"
    assert "; runtime stacks: php 1 of 1;" in stderr, stderr[-2000:]
    mine = [(f, n) for f, n in prof.stacks if f[2] == COMM]
    assert sum(n for _, n in mine) == c["sampler_samples"] > 100, c
    assert c["runtime_samples"] >= 0.95 * c["sampler_samples"], c
    names = lambda f: [parse(x)[0] for x in php_frames(f)]
    a = sum(n for f, n in mine if "hot_a" in names(f))
    b = sum(n for f, n in mine if "hot_b" in names(f))
    assert_share(100.0 * a / (a + b), a + b, 75, "hot_a of hot_a+hot_b")


def test_exact_names_files_lines(hot_profile):
    """Every stack through hot_a or hot_b is exactly <main>, recurse x5, {closure}, Worker::run,
    [Worker::helper,] hot_a|hot_b, spin, each at the line of its current statement; the
    included file's function is named with its own file; nothing is lost."""
    prof, pid, d, _ = hot_profile
    hot, inc = str(d / "hot.php"), str(d / "inc.php")
    L = lambda t, nth=0: line_of(hot, t, nth)
    # the running (innermost) frame may be at any statement of its function, its entry included
    decl = {"spin": "function spin(", "hot_a": "function hot_a(", "hot_b": "function hot_b(",
            "Worker::run": "function run(", "Worker::helper": "function helper(",
            "recurse": "function recurse(", "{closure}": "recurse(5, function"}
    bodies = {name: body_of(hot, text) for name, text in decl.items()}
    running = lambda name: bodies.get(name, set())
    want_a = [("<main>", hot, L("recurse(5, function"))] + \
        [("recurse", hot, L("return recurse($depth - 1, $fn);"))] * 4 + \
        [("recurse", hot, L("return $fn();")), ("{closure}", hot, L("return $w->run($unit);")),
         ("Worker::run", hot, L("return hot_a($n) + self::helper($n);"))]
    want_b = want_a + [("Worker::helper", hot, L("return hot_b($n);")),
                       ("hot_b", hot, L("return spin($n);"))]
    want_a = want_a + [("hot_a", hot, L("return spin(3 * $n);"))]
    seen = Counter()
    for f, n in prof.stacks:
        if f[2] != COMM:
            continue
        fr = [parse(x) for x in php_frames(f)]
        assert "[lost symbol]_[php]" not in f, f
        names = [x[0] for x in fr]
        if "hot_a" in names or "hot_b" in names:
            want = want_a if "hot_a" in names else want_b
            if names[-1] == "spin":
                assert fr[:-1] == want and fr[-1][1] == hot and fr[-1][2] in running("spin"), f
                seen["spin"] += n
            else:  # a sample between the calls: a prefix of the chain, its last frame running
                k = len(fr) - 1
                assert k < len(want) and fr[:k] == want[:k] and fr[k][:2] == want[k][:2], f
                assert fr[k] == want[k] or fr[k][2] in running(fr[k][0]), f
        elif "included_work" in names:
            body = range(line_of(inc, "function included_work"), line_of(inc, "return $x;") + 1)
            assert fr[0] == ("<main>", hot, L("included_work($unit / 4);")), f
            assert fr[1][0] == "included_work" and fr[1][1] == inc and fr[1][2] in body, f
            seen["included"] += n
    assert seen["spin"] > 100 and seen["included"] > 0, seen
    walks = prof.header["polyprof"]["runtime_walks"]
    assert walks["frames_lost"] == 0 and walks["ok"] > 100, walks


def test_php_version_metadata(hot_profile):
    """The process's application metadata carries php_version, the interpreter's PHP_VERSION;
    no appid (gProfiler has no PHP appid rule)."""
    prof, pid, d, _ = hot_profile
    want = subprocess.run([PHP, "-r", "echo PHP_VERSION;"], capture_output=True, text=True,
                          check=True).stdout
    idx = {f[0] for f, _ in prof.stacks if f[2] == COMM}
    assert len(idx) == 1
    md = prof.header["application_metadata"][int(idx.pop())]
    assert md["php_version"] == want and md["exe"].startswith("/usr/bin/php"), md
    assert not [f for f, _ in prof.stacks if f[2] == COMM and f[3].startswith("appid:")]


@pytest.mark.parametrize("php_filter", [None, "^nomatch$"], ids=["all", "filtered-out"])
def test_script_started_during_the_session(tmp_path, php_filter):
    """A PHP script started after the session began is registered at its first samples (the
    agent's adoption) and carries PHP frames for the rest of the session; a --php-proc-filter it
    does not match keeps it out, as it keeps out the processes of the session's start."""
    for f in ("hot.php", "inc.php"):
        shutil.copy(PHPAPPS / f, tmp_path / f)
    out = tmp_path / "out"
    extra = ["--php-proc-filter", php_filter] if php_filter else []
    p = subprocess.Popen([str(POLYPROF), "-v", "-d", "6", "-f", "199", "-o", str(out),
                          "--php-mode", "builtin", *extra], stderr=subprocess.PIPE, text=True)
    log = LineReader(p.stderr)
    try:
        log.wait_line(lambda x: "profiling session started" in x, 30, "session start")
        # it outlives the session: frames recorded in its last moments are named at the final
        # drain, which reads them from the process (one already gone gives [lost symbol])
        php = subprocess.Popen([PHP, str(tmp_path / "hot.php"), "9"], stdout=subprocess.PIPE)
        assert php.stdout.readline() == b"ready\n"
        p.wait(timeout=60)
        assert php.wait(timeout=30) == 0
    finally:
        for x in (p, php) if "php" in locals() else (p,):
            if x.poll() is None:
                x.kill()
                x.wait()
    assert p.returncode == 0, log.text()[-3000:]
    prof = last_profile(out)
    mine = [(f, n) for f, n in prof.stacks if f[2] == COMM]
    assert sum(n for _, n in mine) > 200, mine[:3]
    if php_filter:  # sampled, not walked
        assert not any(php_frames(f) for f, _ in mine), log.text()[-2000:]
        cov = php_coverage(prof, php.pid)
        assert all(c["runtime_samples"] == 0 for c in cov), cov
        return
    c = coverage(prof, php.pid)
    # all but its first moments (0.2 s before the registration, and the interpreter's start)
    assert c["runtime_samples"] >= 0.75 * c["sampler_samples"], c
    names = {parse(x)[0] for f, _ in prof.stacks if f[2] == COMM for x in php_frames(f)}
    assert {"hot_a", "hot_b", "Worker::run"} <= names, names
