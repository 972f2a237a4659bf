#!/usr/bin/env python3
"""Runs one stage of `make test` and records what it found, so that a green run means something.

    stages.py unit BIN...            Criterion binaries (ASan+UBSan)
    stages.py valgrind BIN...        the same tests under valgrind, every process traced
    stages.py fuzz --seconds S BIN...  libFuzzer targets: committed seeds replayed, then S s each
    stages.py integration            the pytest suite in tests/integration
    stages.py format                 clang-format check of every tracked C file
    stages.py layers                 includes point down; runtime names only in runtimes/<rt>/
    stages.py summary                one line per stage and the totals; exit 1 if anything failed

Each stage writes build/results/<stage>.json ({passed, failed, skipped, notes}) and prints
"<stage>: N passed, N failed, N skipped". A test counts as failed when it fails, crashes, is
defined but did not run, or (valgrind) any of its processes reported an error or a leak.

Strict mode (STRICT=1, or CI=true): a skip not listed in tests/expected-skips fails the stage.
Skip reasons are always printed.
"""
import concurrent.futures
import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "build" / "results"
STRICT = os.environ.get("STRICT") == "1" or os.environ.get("CI") == "true"
STAGE_ORDER = ["format", "layers", "unit", "valgrind", "fuzz", "integration"]


def expected_skips():
    """(stage, test id pattern) pairs from tests/expected-skips (tab- or space-separated
    'stage pattern reason' lines; # comments)."""
    out = []
    path = ROOT / "tests" / "expected-skips"
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                parts = line.split(None, 2)
                if len(parts) >= 2:
                    out.append((parts[0], parts[1]))
    return out


class Stage:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0
        self.notes = []
        self.allowed = [p for s, p in expected_skips() if s == name]
        RESULTS.mkdir(parents=True, exist_ok=True)

    def fail(self, what, detail=""):
        self.failed += 1
        self.notes.append(f"FAILED {what}")
        print(f"  FAILED {what}")
        if detail:
            print("    " + detail.rstrip().replace("\n", "\n    "))

    def skip(self, test_id, reason):
        expected = any(fnmatch.fnmatchcase(test_id, p) for p in self.allowed)
        if STRICT and not expected:
            self.fail(f"{test_id}: unexpected skip ({reason}); install what it needs or list "
                      f"it in tests/expected-skips")
            return
        self.skipped += 1
        print(f"  SKIPPED {test_id}: {reason}{'' if expected else ' (not in expected-skips)'}")

    def finish(self):
        (RESULTS / f"{self.name}.json").write_text(json.dumps(
            {"passed": self.passed, "failed": self.failed, "skipped": self.skipped,
             "notes": self.notes}))
        print(f"{self.name}: {self.passed} passed, {self.failed} failed, {self.skipped} skipped")
        return 1 if self.failed else 0


def tail(path, n=60):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def criterion_defined(binary):
    """Test ids a Criterion binary defines (from --list)."""
    r = subprocess.run([binary, "--list"], capture_output=True, text=True, timeout=60)
    ids, suite = [], None
    for line in r.stdout.splitlines():
        m = re.match(r"^(\S+): \d+ tests?$", line)
        if m:
            suite = m.group(1)
            continue
        m = re.match(r"^[├└]── (.+)$", line)
        if m and suite:
            ids.append(f"{suite}::{m.group(1)}")
    return ids


def parse_tap(text):
    """(test id, status, detail) from a Criterion TAP report. Criterion's JSON report does not
    escape quotes in messages, so TAP is what is read."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^(ok|not ok) - (\S+)(.*)$", line)
        if m:
            rest = m.group(3)
            if m.group(1) == "ok" and "# SKIP" in rest:
                out.append([m.group(2), "SKIPPED", rest.split("# SKIP", 1)[1].strip()])
            else:
                out.append([m.group(2), "PASSED" if m.group(1) == "ok" else "FAILED",
                            rest.strip()])
        elif out and line.startswith("  ") and out[-1][1] == "FAILED":
            out[-1][2] += "\n" + line.strip()
    return out


def leak_reports(log, defined):
    """LeakSanitizer reports in a unit binary's log, as (test id or None, report text). A report
    is printed when a Criterion worker exits, after the test was recorded as passed, and the
    worker's exit status is not Criterion's concern: without this a leak passed the stage. The
    test is the one whose body (Criterion names it <suite>_<test>_impl) is in the report's
    stacks; None when no test body is (a leak in a fixture or at the binary's exit)."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError:
        return []
    impl = {f"{t.split('::', 1)[0]}_{t.split('::', 1)[1]}_impl": t for t in defined}
    out = []
    for block in re.split(r"^(?==+\d+==ERROR: LeakSanitizer)", text, flags=re.M)[1:]:
        block = block.split("\nSUMMARY: ", 1)
        report = block[0] + ("\nSUMMARY: " + block[1].splitlines()[0] if len(block) > 1 else "")
        tid = next((impl[f] for f in re.findall(r" in (\w+_impl)\b", report) if f in impl),
                   None)
        out.append((tid, report))
    return out


def criterion_results(stage, binary, report, rc, log, leaks=False):
    """Counts one binary's tests from its TAP report; returns the number of failures. leaks:
    a LeakSanitizer report in the log fails the test it names (or the binary)."""
    name = Path(binary).name
    defined = set(criterion_defined(binary))
    try:
        results = parse_tap(Path(report).read_text(errors="replace"))
    except OSError:
        results = []
    if not results:
        stage.fail(f"{name}: no test report (exit {rc})", tail(log))
        return 1
    leaked = {}
    for tid, text in leak_reports(log, defined) if leaks else []:
        leaked.setdefault(tid, []).append(text)
    for tid, texts in leaked.items():
        for r in results:
            if r[0] == tid and r[1] != "FAILED":
                r[1], r[2] = "FAILED", ""
            if r[0] == tid:
                r[2] += ("\n" if r[2] else "") + "LeakSanitizer: memory leaked (free it; the report is in " \
                        f"{log}):\n" + "\n".join(t[:3000] for t in texts)
    seen, failures = set(), 0
    for tid, status, detail in results:
        seen.add(tid)
        if status == "PASSED":
            stage.passed += 1
        elif status == "SKIPPED":
            stage.skip(f"{name}:{tid}", detail or "no reason given")
        else:
            failures += 1
            stage.fail(f"{name}:{tid}", detail)
    for tid in sorted(defined - seen):
        failures += 1
        stage.fail(f"{name}:{tid}: defined but never reported")
    for tid, texts in leaked.items():
        if tid is None or tid not in seen:
            failures += 1
            stage.fail(f"{name}: memory leaked outside any test body (a fixture, or at exit); "
                       f"free it (the report is in {log})", "\n".join(t[:3000] for t in texts))
    if rc != 0 and not failures:
        failures += 1
        stage.fail(f"{name}: exited {rc} although every test passed", tail(log))
    return failures


def run_unit(binaries):
    stage = Stage("unit")
    d = RESULTS / "unit"
    d.mkdir(parents=True, exist_ok=True)
    # a leak is found by reading the log (leak_reports): Criterion ignores its workers' status
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    for b in binaries:
        name = Path(b).name
        report, log = d / f"{name}.tap", d / f"{name}.log"
        t0 = time.monotonic()
        with open(log, "w") as f:
            rc = subprocess.run([b, f"--tap={report}"], stdout=f, stderr=subprocess.STDOUT,
                                env=env).returncode
        before = stage.failed
        criterion_results(stage, b, report, rc, log, leaks=True)
        print(f"  {name}: {'ok' if stage.failed == before else 'FAILED'} "
              f"({time.monotonic() - t0:.1f} s)")
        if stage.failed != before:
            print("    " + tail(log, 40).replace("\n", "\n    "))
    return stage.finish()


# Programs the unit tests start that are not the tests themselves: system binaries, pyenv's
# interpreters (under valgrind a CPython takes more than the tests' 30 s to start), helper
# programs built in private temp directories, stand-ins. Criterion's workers (the test binary
# re-executed from its absolute path) are traced wherever the checkout is, /root and /tmp too.
VG_SKIP = ("/usr/*,/bin/*,/sbin/*,/lib/*,/lib64/*,/opt/*,*/.pyenv/*,/tmp/pp_*,/var/cache/polyprof/*,"
           "*/tests/integration/standins/*")


def stage_jobs():
    """Test binaries run at once under valgrind and fuzz targets run at once: one per core
    (valgrind runs a process's threads one at a time, each binary's tests run one by one, a
    fuzz target is one thread), PP_STAGE_JOBS to change it."""
    try:
        return max(1, int(os.environ.get("PP_STAGE_JOBS", "")))
    except ValueError:
        return max(1, os.cpu_count() or 1)


def run_one_valgrind(b, d):
    """Runs one test binary under valgrind into its own directory; returns (rc, seconds)."""
    report, log = d / "report.tap", d / "runner.log"
    t0 = time.monotonic()
    cmd = ["valgrind", f"--suppressions={ROOT / 'tests' / 'valgrind.supp'}", "--leak-check=full",
           "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
           "--trace-children=yes", f"--trace-children-skip={VG_SKIP}",
           f"--log-file={d}/vg.%p.log", b, "--jobs=1", f"--tap={report}"]
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    return rc, time.monotonic() - t0


def run_valgrind(binaries):
    stage = Stage("valgrind")
    base = RESULTS / "valgrind"
    shutil.rmtree(base, ignore_errors=True)
    dirs = {}
    for b in binaries:
        dirs[b] = base / Path(b).name
        dirs[b].mkdir(parents=True)
    # the binaries run side by side; their results are judged here, in order, one at a time
    with concurrent.futures.ThreadPoolExecutor(max_workers=stage_jobs()) as pool:
        runs = [(b, pool.submit(run_one_valgrind, b, dirs[b])) for b in binaries]
        for b, fut in runs:
            rc, seconds = fut.result()
            name, d = Path(b).name, dirs[b]
            before = stage.failed
            criterion_results(stage, b, d / "report.tap", rc, d / "runner.log")
            traced = 0
            for vlog in sorted(d.glob("vg.*.log")):
                text = vlog.read_text(errors="replace")
                traced += 1
                m = re.findall(r"ERROR SUMMARY: (\d+) errors", text)
                if m and int(m[-1]) > 0:
                    cmdline = re.search(r"Command: (.*)", text)
                    stage.fail(f"{name}: valgrind found {m[-1]} errors in process "
                               f"{cmdline.group(1) if cmdline else vlog.name}",
                               "\n".join(text.splitlines()[:80]))
            if traced < 2:
                stage.fail(f"{name}: only {traced} process traced: Criterion's workers were not")
            print(f"  {name}: {'ok' if stage.failed == before else 'FAILED'} "
                  f"({traced} processes, {seconds:.1f} s)", flush=True)
    return stage.finish()


def fuzz_one(b, seconds, base):
    """Replays one target's committed seeds, then fuzzes it for `seconds` into a fresh corpus.
    Returns (replay rc, fuzz rc or None when the replay failed)."""
    name = Path(b).name
    seeds = ROOT / "tests" / "fuzz" / "corpus" / name
    # 1. every committed seed (regressions included), once, deterministically
    files = sorted(str(x) for x in seeds.iterdir() if x.is_file())
    with open(base / f"{name}.replay.log", "w") as f:  # files as arguments: each is run once
        replay = subprocess.run([b, *files], stdout=f, stderr=subprocess.STDOUT).returncode
    # 2. a fixed time of fuzzing from the seeds, into a fresh corpus
    work = base / f"{name}.corpus"
    work.mkdir()
    with open(base / f"{name}.fuzz.log", "w") as f:
        rc = subprocess.run([b, f"-max_total_time={seconds}", "-print_final_stats=1",
                             f"-artifact_prefix={base}/{name}-", str(work), str(seeds)],
                            stdout=f, stderr=subprocess.STDOUT).returncode
    return replay, rc


def run_fuzz(seconds, binaries):
    stage = Stage("fuzz")
    base = RESULTS / "fuzz"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    runnable = []
    for b in binaries:
        name = Path(b).name
        seeds = ROOT / "tests" / "fuzz" / "corpus" / name
        if not seeds.is_dir() or not any(seeds.iterdir()):
            stage.fail(f"{name}: no committed seeds in {seeds.relative_to(ROOT)}")
        else:
            runnable.append(b)
    # targets run side by side, one per core (each is single-threaded); judged here, in order
    with concurrent.futures.ThreadPoolExecutor(max_workers=stage_jobs()) as pool:
        runs = [(b, pool.submit(fuzz_one, b, seconds, base)) for b in runnable]
        for b, fut in runs:
            replay, rc = fut.result()
            name = Path(b).name
            seeds = ROOT / "tests" / "fuzz" / "corpus" / name
            if replay == 0:
                stage.passed += 1
            else:
                stage.fail(f"{name}: a committed seed fails (exit {replay})",
                           tail(base / f"{name}.replay.log", 40))
            log = base / f"{name}.fuzz.log"
            if rc == 0:
                stage.passed += 1
                runs_done = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log.read_text())
                print(f"  {name}: seeds ok, {runs_done[-1] if runs_done else '?'} runs in "
                      f"{seconds} s", flush=True)
            else:
                crashes = sorted(glob.glob(f"{base}/{name}-*"))
                stage.fail(f"{name}: fuzzing found a failure (exit {rc}); input saved as "
                           f"{', '.join(crashes) or '(none)'}: fix it and commit the input to "
                           f"{seeds.relative_to(ROOT)}/ as a regression", tail(log, 40))
    return stage.finish()


def run_integration():
    stage = Stage("integration")
    xml = RESULTS / "integration.xml"
    tdir = ROOT / "tests" / "integration"
    col = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider",
                          "--collect-only", "-q", str(tdir)], capture_output=True, text=True,
                         cwd=tdir)
    defined = {line.strip() for line in col.stdout.splitlines() if "::" in line}
    cmd = ["/usr/bin/python3", "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q",
           "--timeout=600", f"--junitxml={xml}", str(tdir)]
    rc = subprocess.run(cmd, cwd=tdir).returncode
    try:
        tree = ET.parse(xml)
    except (OSError, ET.ParseError):
        stage.fail(f"pytest wrote no report (exit {rc})")
        return stage.finish()
    seen = set()
    for tc in tree.iter("testcase"):
        cls = tc.get("classname", "")
        tid = f"{cls.replace('.', '/')}.py::{tc.get('name')}"
        seen.add(tid)
        failure = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
        skipped = tc.find("skipped")
        if failure is not None:
            stage.fail(tid, (failure.get("message") or "")[:500])
        elif skipped is not None:
            stage.skip(tid, skipped.get("message") or "no reason given")
        else:
            stage.passed += 1
    for tid in sorted(defined - seen):
        stage.fail(f"{tid}: collected but never reported")
    if rc not in (0, 1) and not stage.failed:
        stage.fail(f"pytest exited {rc}")
    return stage.finish()


def run_format():
    stage = Stage("format")
    files = subprocess.run(["git", "ls-files", "*.c", "*.h"], capture_output=True, text=True,
                           cwd=ROOT).stdout.split()
    r = subprocess.run(["clang-format", "--dry-run", "--Werror", *files], capture_output=True,
                       text=True, cwd=ROOT)
    bad = sorted({m for m in re.findall(r"^([^:\s]+):\d+:\d+: error", r.stderr, re.M)})
    if r.returncode == 0:
        stage.passed += 1
    else:
        stage.fail(f"clang-format: {len(bad)} files differ from .clang-format (run "
                   f"`make format`): {' '.join(bad[:20])}")
    return stage.finish()


def run_layers():
    """tests/tools/check_layers.py: one check per source file."""
    stage = Stage("layers")
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "check_layers.py")],
                       capture_output=True, text=True, cwd=ROOT)
    m = re.search(r"^layers: (\d+) passed, (\d+) failed", r.stdout, re.M)
    if not m:
        stage.fail("check_layers.py did not report: " + (r.stderr or r.stdout)[-500:])
        return stage.finish()
    stage.passed += int(m.group(1))
    for line in r.stdout.splitlines():
        if not line.startswith("layers:"):
            stage.fail(line)
    return stage.finish()


def summary():
    totals = [0, 0, 0]
    rc = 0
    print("== test summary" + (" (strict)" if STRICT else ""))
    for name in STAGE_ORDER:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            print(f"{name}: 0 passed, 1 failed, 0 skipped (the stage did not run or crashed)")
            totals[1] += 1
            rc = 1
            continue
        r = json.loads(path.read_text())
        for note in r["notes"]:
            print(f"  {name}: {note}")
        print(f"{name}: {r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped")
        totals = [totals[0] + r["passed"], totals[1] + r["failed"], totals[2] + r["skipped"]]
        rc |= 1 if r["failed"] else 0
    print(f"total: {totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return rc


def main(argv):
    if not argv:
        sys.exit(__doc__)
    cmd, rest = argv[0], argv[1:]
    if cmd == "unit":
        return run_unit(rest)
    if cmd == "valgrind":
        return run_valgrind(rest)
    if cmd == "fuzz":
        assert rest[0] == "--seconds"
        return run_fuzz(int(rest[1]), rest[2:])
    if cmd == "integration":
        return run_integration()
    if cmd == "format":
        return run_format()
    if cmd == "layers":
        return run_layers()
    if cmd == "summary":
        return summary()
    sys.exit(f"unknown stage {cmd}\n{__doc__}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
