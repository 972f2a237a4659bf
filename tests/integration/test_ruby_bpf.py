"""Ruby frames walked inside the BPF sampler (issue 13, docs/ruby.md), against Debian's
/usr/bin/ruby (3.1). Each polyprof run uses the BPF sampler and --ruby-mode builtin; assertions
read the mixed stacks and the header's polyprof.runtime_samples."""
import os
import re
import signal
from collections import Counter

import pytest

from conftest import APPS, App, assert_share, last_profile, run_polyprof

RUBY = "/usr/bin/ruby"
FRAME = re.compile(r"(.+) - (.+):(\d+)_\[rb\]")
CFUNC = "(unknown) [c function] - (unknown):0"

pytestmark = pytest.mark.skipif(not os.access(RUBY, os.X_OK),
                                reason=f"needs {RUBY} (Debian's ruby: apt-get install ruby)")


def marker(script, name):
    for i, line in enumerate(script.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# L:{name}"):
            return i
    raise AssertionError(name)


def by_script(prof, script):
    return [(f, c) for f, c in prof.stacks if len(f) > 3 and f[3].startswith("appid: ruby: ")
            and f"({script})" in f[3]]


def ruby_frames(f):
    return [x for x in f if x.endswith("_[rb]") or x == CFUNC]


def label(x):
    m = FRAME.fullmatch(x)
    return m[1] if m else x


def coverage(prof):
    return {c["pid"]: c for c in prof.header["polyprof"]["runtime_samples"]}


def profile(tmp_path, argvs, seconds, *extra, pids=True, hz=99):
    apps = []
    try:
        for argv in argvs:
            apps.append(App([str(x) for x in argv], start_new_session=True))
        out = tmp_path / "out"
        args = ["-d", seconds, "-f", hz, "-o", out, "--ruby-mode", "builtin", *extra]
        if pids:
            args += ["--pids", ",".join(str(a.pid) for a in apps)]
        run_polyprof(*args)
    finally:
        for a in apps:
            try:
                os.killpg(a.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            a.stop()
    return last_profile(out), apps


def walked_alone(tmp_path, script, seconds):
    """One Ruby program profiled at 299 Hz: the profile, its coverage entry (walked by the
    sampler; the Ruby total is the sampler's count) and the program's stacks."""
    prof, apps = profile(tmp_path, [[RUBY, script]], seconds, hz=299)
    c = coverage(prof)[apps[0].pid]
    assert c["profiler"] == "sampler-walk" and c["mode"] == "builtin", c
    stacks = by_script(prof, script)
    assert sum(n for _, n in stacks) == c["sampler_samples"] > 50, c
    assert c["runtime_samples"] >= 0.95 * c["sampler_samples"], c
    return prof, c, stacks


def test_split_labels_lines_blocks_recursion(tmp_path):
    """rbhot.rb: hot_a:hot_b is 3:1 within the binomial band; every Ruby frame of the hot path
    is named exactly (label, absolute path, the marked line): blocks, a class method, a
    define_method body, `recurse` exactly 5 deep; the sleeping thread is absent; the Ruby frames
    follow the comm and appid; the process's total is the sampler's count."""
    script = APPS / "rbhot.rb"
    # 299 Hz: the +-5 point check needs ~470 samples even on a busy 2-CPU host
    prof, c, stacks = walked_alone(tmp_path, script, 6)
    L = {k: marker(script, k) for k in ("spin", "hot_a", "hot_b", "recurse", "recurse_leaf",
                                        "run_a", "run_b", "main_a", "main_b", "loop", "sleeper")}
    s = str(script)

    def fr(lab, line):
        return f"{lab} - {s}:{L[line]}_[rb]"

    recursion = [fr("recurse", "recurse")] * 4 + [fr("recurse", "recurse_leaf")]
    # root first; Kernel#loop and Integer#times are C functions in 3.1
    path_a = [fr("<main>", "loop"), CFUNC, fr("block in <main>", "main_a"), CFUNC,
              fr("block (2 levels) in <main>", "main_a"), fr("run_a", "run_a")] + recursion + \
             [fr("block in run_a", "run_a"), fr("hot_a", "hot_a")]
    path_b = [fr("<main>", "loop"), CFUNC, fr("block in <main>", "main_b"),
              fr("block in <class:Worker>", "run_b")] + recursion + \
             [fr("block (2 levels) in <class:Worker>", "run_b"), fr("hot_b", "hot_b")]
    spin_lines = range(L["spin"], L["spin"] + 3)  # the while loop's condition and body

    def exact(rb, path):
        if rb[:len(path)] != path or len(rb) != len(path) + 1:
            return False
        m = FRAME.fullmatch(rb[-1])
        return bool(m) and m[1] == "spin" and m[2] == s and int(m[3]) in spin_lines

    got = Counter()
    for f, n in stacks:
        rb = ruby_frames(f)
        if rb:
            # comm, appid, then the native frames under the Ruby root: with CFI unwinding
            # through libruby (built without frame pointers) the interpreter's real start-up
            # chain (_start, __libc_start_main, main, ruby_run_node, ... up to the VM loop's
            # callers: 6 to 10 frames here), a bounded one
            assert 4 <= f.index(rb[0]) <= 4 + 16, f
        assert not any(x.endswith(f":{L['sleeper']}_[rb]") for x in rb), f  # the sleeper
        names = [label(x) for x in rb]
        if "hot_a" in names:
            got["a"] += n
            got["a_exact"] += n * exact(rb, path_a)
        elif "hot_b" in names:
            got["b"] += n
            got["b_exact"] += n * exact(rb, path_b)
    total = got["a"] + got["b"]
    assert total >= 0.9 * c["sampler_samples"], (got, c)
    assert_share(100.0 * got["a"] / total, total, 75, "hot_a")
    # a frame is exact unless the sample caught the pc between two lines' instructions
    assert got["a_exact"] >= 0.97 * got["a"] and got["b_exact"] >= 0.97 * got["b"], \
        (got, [f for f, _ in stacks][:3])
    assert prof.header["polyprof"]["runtime_walks"].get("frames_lost", 0) == 0


def test_threads_each_named_never_mixed(tmp_path):
    """Two busy Ruby threads (the GVL alternates between them) and a main thread in join: both
    workers appear, no sample mixes their frames, the joining main thread is absent."""
    script = APPS / "rbthreads.rb"
    prof, apps = profile(tmp_path, [[RUBY, script]], 5)
    stacks = by_script(prof, script)
    seen = Counter()
    for f, n in stacks:
        names = [label(x) for x in ruby_frames(f)]
        assert not ("thr_a" in names and "thr_b" in names), names
        assert "join" not in " ".join(names), names
        for k in ("thr_a", "thr_b"):
            seen[k] += n * (k in names)
    total = sum(n for _, n in stacks)
    assert seen["thr_a"] > 0.2 * total and seen["thr_b"] > 0.2 * total, (seen, total)
    c = coverage(prof)[apps[0].pid]
    assert c["runtime_samples"] >= 0.9 * c["sampler_samples"], c


def test_preforked_workers_all_named(tmp_path):
    """A pre-forking master (rbfork.rb) with 3 busy workers, found by whole-host discovery (no
    --pids): each worker's samples carry its own worker_N frames."""
    script = APPS / "rbfork.rb"
    prof, apps = profile(tmp_path, [[RUBY, script]], 5, pids=False, hz=299)
    pids = [int(x) for x in apps[0].first_line.split()[2:]]
    cov = coverage(prof)
    for i, pid in enumerate(pids):
        assert pid in cov, (pid, sorted(cov))
        c = cov[pid]
        assert c["profiler"] == "sampler-walk" and c["sampler_samples"] > 10, c
        assert c["runtime_samples"] >= 0.9 * c["sampler_samples"], c
    names = Counter()
    for f, n in by_script(prof, script):
        for x in ruby_frames(f):
            names[label(x)] += n
    for i in range(3):
        assert names[f"worker_{i}"] > 10, names


def test_wrong_layout_refused_by_the_self_check(tmp_path):
    """A layout table that is wrong (test hook PP_RUBY_TEST_LAYOUT=wrong: 3.1's table, untested,
    with cfp->iseq a word off) fails the self-check: the process gets one
    [Profiling skipped: unverified Ruby 3.1 layout] stack, never misnamed frames."""
    app = App([RUBY, str(APPS / "rbthreads.rb")], start_new_session=True)
    try:
        out = tmp_path / "out"
        env = dict(os.environ, PP_RUBY_TEST_LAYOUT="wrong")
        run_polyprof("-d", 2, "-f", 99, "-o", out, "--ruby-mode", "builtin", "--pids", app.pid,
                     env=env)
    finally:
        os.killpg(app.pid, signal.SIGTERM)
        app.stop()
    prof = last_profile(out)
    stacks = by_script(prof, APPS / "rbthreads.rb")
    skip = "[Profiling skipped: unverified Ruby 3.1 layout]"
    assert stacks and all(skip in f for f, _ in stacks), stacks[:3]
    assert not any(ruby_frames(f) for f, _ in stacks)


def test_fibers_walked_on_their_own_stacks(tmp_path):
    """rbfiber.rb: a fiber runs on its own execution context, which is the ractor's running one
    while it runs, so its samples are walked like a thread's and show its own frames only: the
    fiber's block at the root, never the resumer's `<main>`; an Enumerator's external `next`
    runs its generator in a fiber under Enumerator#each and Generator#each (C functions; the
    fiber's entry, an ifunc, is no frame). The split follows the work: fiber A:B is 3:1, the
    generator half of the fibers' total."""
    script = APPS / "rbfiber.rb"
    # 12 s: fiber A and B get half the samples, the 3:1 check needs ~470 of them
    prof, c, stacks = walked_alone(tmp_path, script, 12)
    s = str(script)

    def fr(lab, line):
        return f"{lab} - {s}:{marker(script, line)}_[rb]"

    # root first: the fiber's block, then its methods down to spin
    paths = {"work_a": [fr("block in <main>", "fa"), fr("fiber_a", "fiber_a"),
                        fr("work_a", "work_a")],
             "work_b": [fr("block in <main>", "fb"), fr("fiber_b", "fiber_b"),
                        fr("work_b", "work_b")],
             "work_e": [CFUNC, CFUNC, fr("block in <main>", "en"), fr("produce", "produce"),
                        fr("work_e", "work_e")]}
    spin = marker(script, "spin")

    def exact(rb, path):
        if rb[:len(path)] != path or len(rb) != len(path) + 1:
            return False
        m = FRAME.fullmatch(rb[-1])
        return bool(m) and m[1] == "spin" and m[2] == s and int(m[3]) == spin

    got = Counter()
    for f, n in stacks:
        rb = ruby_frames(f)
        names = [label(x) for x in rb]
        work = [k for k in paths if k in names]
        assert len(work) <= 1, names  # no sample mixes two fibers' frames
        if work:
            assert "<main>" not in names, names  # the resumer is on another stack
            got[work[0]] += n
            got[work[0] + "_exact"] += n * exact(rb, paths[work[0]])
    a, b, e = got["work_a"], got["work_b"], got["work_e"]
    assert a + b + e >= 0.85 * c["sampler_samples"], (got, c)
    for k in paths:  # a frame is exact unless the pc was between two lines' instructions
        assert got[k + "_exact"] >= 0.97 * got[k], (k, got, [f for f, _ in stacks][:3])
    assert_share(100.0 * a / (a + b), a + b, 75, f"fiber A:B {a}:{b}")
    assert_share(100.0 * e / (a + b + e), a + b + e, 50, f"generator {e} of {a + b + e}")
    assert prof.header["polyprof"]["runtime_walks"].get("frames_lost", 0) == 0
    print(f"fibers: A {a}, B {b}, generator {e}, sampler {c['sampler_samples']}")
