#!/usr/bin/env python3
"""`make mutants`: plants each mutation of tests/tools/mutants.json, one at a time, in a scratch
copy of the tree (never the working tree), runs the narrowest stage that must see it, and prints
the kill rate with the survivors.

A mutation is {id, file, original, replacement, stage, why}: `original` must occur exactly once
in `file`; `stage` is one of
    unit:test_X             build/tests/test_X (Criterion, ASan) must fail
    fuzz:fuzz_X             build/fuzz/fuzz_X on its committed seeds, then --fuzz-seconds of
                            fuzzing, must fail
    pytest:FILE [-k EXPR]   the integration selection (tests/integration) must fail
Every distinct stage is first run on the unmutated copy: a stage that fails there cannot judge
its mutants (they are reported as "unjudged"). Each mutant has a time budget (--budget seconds
for its build and stage together; a stage still running then counts as a kill by timeout). A
mutant that does not build is "invalid" (fix its replacement). Not part of `make test`: run it
before submitting changes to the files it covers.

usage: mutants.py [--only ID[,ID...]] [--stage-prefix unit|fuzz|pytest] [--budget S]
                  [--fuzz-seconds S] [--scratch DIR] [--keep] [--no-baseline]"""
import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIST = os.path.join(ROOT, "tests", "tools", "mutants.json")
LOCK_MSG = "acquire polyprof's lock"  # another polyprof holds the host-wide lock: wait, retry


def load(path):
    muts = json.load(open(path))
    ids = set()
    for m in muts:
        for k in ("id", "file", "original", "replacement", "stage"):
            if k not in m:
                raise SystemExit(f"mutants: {m.get('id', '?')} has no '{k}' in {path}")
        if m["id"] in ids:
            raise SystemExit(f"mutants: id {m['id']} twice in {path}")
        ids.add(m["id"])
        kind = m["stage"].split(":", 1)[0]
        if kind not in ("unit", "fuzz", "pytest"):
            raise SystemExit(f"mutants: {m['id']}: unknown stage {m['stage']!r} "
                             "(unit:test_X, fuzz:fuzz_X or pytest:FILE [-k EXPR])")
    return muts


def make_scratch(dest):
    """The tree's tracked files as they are in the working tree (uncommitted edits included),
    plus a copy of build/ so that builds are incremental."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for f in files:
        if not f or not os.path.lexists(os.path.join(ROOT, f)):
            continue
        os.makedirs(os.path.join(dest, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(dest, f), follow_symlinks=False)
    if os.path.isdir(os.path.join(ROOT, "build")):
        subprocess.run(["cp", "-a", os.path.join(ROOT, "build"), dest], check=True)
        shutil.rmtree(os.path.join(dest, "build", "results"), ignore_errors=True)


def run(cmd, cwd, deadline, env=None):
    """(returncode or None on timeout, output). On timeout the command's whole process group
    (pytest's fixtures and polyprof included) is killed."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None, "no time left"
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=left)
        return p.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out.decode(errors="replace")


def stage_targets(stage):
    kind, arg = stage.split(":", 1)
    if kind == "unit":
        return [f"build/tests/{arg}"]
    if kind == "fuzz":
        return [f"build/fuzz/{arg}"]
    return ["all", "build/bench/bench_jfr"]


def run_stage(stage, tree, deadline, fuzz_seconds):
    """("pass" | "fail" | "timeout" | "nobuild", detail)."""
    rc, out = run(["make", "-j2", "--no-print-directory", *stage_targets(stage)], tree, deadline)
    if rc is None:
        return "timeout", "build: " + out[-300:]
    if rc != 0:
        return "nobuild", out[-1500:]
    kind, arg = stage.split(":", 1)
    if kind == "unit":
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
        rc, out = run([f"build/tests/{arg}"], tree, deadline, env)
    elif kind == "fuzz":
        seeds = os.path.join(tree, "tests", "fuzz", "corpus", arg)
        files = sorted(os.path.join(seeds, f) for f in os.listdir(seeds)) if os.path.isdir(seeds) else []
        rc, out = run([f"build/fuzz/{arg}", *files], tree, deadline) if files else (0, "")
        if rc == 0:
            work = tempfile.mkdtemp(prefix="pp-mutant-corpus-")
            rc, out = run([f"build/fuzz/{arg}", f"-max_total_time={fuzz_seconds}",
                           f"-artifact_prefix={work}/", work, seeds], tree, deadline)
            shutil.rmtree(work, ignore_errors=True)
    else:
        cmd = ["/usr/bin/python3", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               *shlex.split(arg)]
        while True:
            rc, out = run(cmd, os.path.join(tree, "tests", "integration"), deadline)
            if rc is None or LOCK_MSG not in out:
                break
            time.sleep(3)  # someone else's polyprof holds the host lock
        if rc == 5:  # pytest: no test selected, a stale selection
            return "nobuild", "pytest selected no test: " + out[-500:]
    if rc is None:
        return "timeout", out[-1500:]
    return ("pass" if rc == 0 else "fail"), out[-1500:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", default=LIST)
    ap.add_argument("--only", default="")
    ap.add_argument("--stage-prefix", default="")
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--fuzz-seconds", type=int, default=30)
    ap.add_argument("--scratch", default="")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-baseline", action="store_true")
    a = ap.parse_args()
    muts = load(a.list)
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {m["id"] for m in muts}
        if unknown:
            raise SystemExit(f"mutants: no mutant {', '.join(sorted(unknown))} in {a.list}")
        muts = [m for m in muts if m["id"] in want]
    if a.stage_prefix:
        muts = [m for m in muts if m["stage"].startswith(a.stage_prefix)]
    for m in muts:
        text = open(os.path.join(ROOT, m["file"]), encoding="utf-8").read()
        if text.count(m["original"]) != 1:
            raise SystemExit(f"mutants: {m['id']}: its original text occurs "
                             f"{text.count(m['original'])} times in {m['file']} (must be once): "
                             "update tests/tools/mutants.json")
    tree = a.scratch or tempfile.mkdtemp(prefix="polyprof-mutants-")
    print(f"mutants: {len(muts)} mutants, scratch copy {tree}", flush=True)
    make_scratch(tree)
    results = {}
    try:
        broken = {}
        if not a.no_baseline:
            for stage in sorted({m["stage"] for m in muts}):
                t0 = time.monotonic()
                st, detail = run_stage(stage, tree, t0 + a.budget, a.fuzz_seconds)
                print(f"  baseline {stage}: {st} ({time.monotonic() - t0:.0f} s)", flush=True)
                if st != "pass":
                    broken[stage] = detail
        for m in muts:
            path = os.path.join(tree, m["file"])
            orig = open(path, encoding="utf-8").read()
            t0 = time.monotonic()
            if m["stage"] in broken:
                st, detail = "unjudged", "its stage fails without the mutation"
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(orig.replace(m["original"], m["replacement"], 1))
                try:
                    st, detail = run_stage(m["stage"], tree, t0 + a.budget, a.fuzz_seconds)
                finally:
                    with open(path, "w", encoding="utf-8") as f:  # a new mtime: rebuilt next
                        f.write(orig)
            verdict = {"fail": "killed", "timeout": "killed (timeout)", "pass": "SURVIVED",
                       "nobuild": "INVALID (does not build)", "unjudged": "unjudged"}[st]
            results[m["id"]] = (verdict, m)
            print(f"  {m['id']}: {verdict} by {m['stage']} ({time.monotonic() - t0:.0f} s)",
                  flush=True)
            if st == "nobuild":
                print("    " + detail[-800:].replace("\n", "\n    "))
    finally:
        if not a.keep:
            shutil.rmtree(tree, ignore_errors=True)
    killed = sum(1 for v, _ in results.values() if v.startswith("killed"))
    survivors = [(i, m) for i, (v, m) in results.items() if v == "SURVIVED"]
    other = [(i, v) for i, (v, m) in results.items() if not v.startswith("killed") and v != "SURVIVED"]
    judged = killed + len(survivors)
    rate = 100.0 * killed / judged if judged else 0.0
    print(f"mutants: {killed} killed, {len(survivors)} survived, {len(other)} not judged; "
          f"kill rate {rate:.0f}% ({killed}/{judged})")
    for i, m in survivors:
        print(f"  survivor {i}: {m['file']} ({m['stage']}): {m.get('why', '')}")
    for i, v in other:
        print(f"  {v}: {i}")
    return 0 if not survivors and not other else 1


if __name__ == "__main__":
    sys.exit(main())
