"""`--java-mode builtin`: HotSpot frames walked in the BPF sampler at the sample instant (issue 31;
docs/java.md "In-sampler walker"), on OpenJDK 17 and Temurin 25: Hot's 3:1 split of two methods
on its one thread, gProfiler's frame text and suffixes, methods inlined by C2 as frames of their
own (_[i]), the native frames under the Java ones, nothing attached to the JVM; a process whose libjvm is no HotSpot is skipped with a reason."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import APPS, last_profile, wait_for
from test_java import hot_classes, jdk, launchers, run_polyprof, warm  # noqa: F401

A, B = "Hot.hotA()V_[j]", "Hot.hotB()V_[j]"


def javac(out, *sources):
    """Compiles sources (under APPS) with JDK 17's javac into out; returns out."""
    subprocess.run([str(jdk("17") / "bin" / "javac"), "-d", str(out),
                    *(str(APPS / x) for x in sources)], check=True)
    return out


def at(f, x):
    """The index of f's first frame starting with x, or None."""
    return next((i for i, y in enumerate(f) if y.startswith(x)), None)


def builtin_session(app, outdir, seconds=6):
    """One polyprof session of --java-mode builtin at 499 Hz on app alone; nothing was attached
    to it (attach_files). Returns the run."""
    r = run_polyprof("-d", seconds, "-f", 499, "--java-mode", "builtin", "-o", outdir, "-v",
                     "--pids", app.pid)
    assert attach_files(app.pid) == [], (attach_files(app.pid), r.stderr[-1500:])
    return r


def attach_files(pid):
    """The files an attach to pid would create: its socket and the .attach_pid trigger (in its
    cwd or /tmp; the JVMs here share polyprof's pid namespace and /tmp), made since the process
    started (a JVM killed earlier under the same pid leaves its socket behind)."""
    cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    btime = next(int(x.split()[1]) for x in Path("/proc/stat").read_text().splitlines()
                 if x.startswith("btime "))
    born = btime + ticks / os.sysconf("SC_CLK_TCK") - 2
    return [p for p in (Path(f"/tmp/.java_pid{pid}"), cwd / f".attach_pid{pid}",
                        Path(f"/tmp/.attach_pid{pid}"))
            if p.exists() and p.lstat().st_mtime >= born]


@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_hot_split(version, hot_classes, launchers, start_app, outdir):  # noqa: F811
    """Hot on one thread: hotA (compiled, _[j]) 75 % +- 5 of the samples naming hotA or hotB,
    each under Hot.work and Hot.main (interpreted, _[0]) and the JVM's native call into Java;
    the Java frames are the leaf's; no attach socket or file, no perf map."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", hot_classes, "Hot")
    warm(app.pid)
    # compiled before the session: a method still interpreted would be hotA()V_[0]
    r = builtin_session(app, outdir)
    assert not Path(f"/tmp/perf-{app.pid}.map").exists()
    prof = last_profile(outdir)
    lines = prof.for_comm(comm)
    assert not {x for f, _ in lines for x in f if x.startswith("[Profiling")}, r.stderr[-2000:]
    cov = [c for c in prof.header["polyprof"]["runtime_samples"] if c["pid"] == app.pid]
    assert len(cov) == 1 and (cov[0]["mode"], cov[0]["profiler"]) == ("builtin", "sampler-walk"), \
        cov
    assert cov[0]["runtime_samples"] >= 0.9 * cov[0]["sampler_samples"], cov
    na = sum(c for f, c in lines if f[-1] == A)
    nb = sum(c for f, c in lines if f[-1] == B)
    hot = [f for f, _ in lines if f[-1] in (A, B)]
    print(f"\nJDK {version} builtin: hotA {na}, hotB {nb} samples "
          f"({100.0 * na / max(na + nb, 1):.1f} %), coverage {cov[0]}")
    assert cov[0]["sampler_samples"] >= 600, f"host starved: {cov[0]}"
    assert na + nb >= 0.8 * cov[0]["sampler_samples"], f"hotA/hotB frames missing: {na}, {nb}"
    assert abs(na / (na + nb) - 0.75) <= 0.05, (na, nb)
    for f in hot:
        i = f.index("Hot.work()V_[0]")
        assert f[i - 1] == "Hot.main([Ljava/lang/String|)V_[0]", f
        assert f[i + 1] == f[-1], f  # hotA/hotB called from work, the leaf
    # the native frames under Java: the JVM's call into it (CFI), then nothing but Java above
    spliced = [f for f in hot if any(x.startswith("JavaCalls::call_helper") for x in f)]
    assert len(spliced) >= 0.9 * len(hot), hot[:3]
    for f in spliced:
        i = next(i for i, x in enumerate(f) if x.startswith("JavaCalls::call_helper"))
        assert f[i + 1] == "Hot.main([Ljava/lang/String|)V_[0]", f


@pytest.mark.parametrize("version", ["17", "25"])
def test_auto_is_builtin(version, hot_classes, launchers, start_app, outdir):  # noqa: F811
    """The default --java-mode (auto) walks a JVM whose layout passes the self-check in the
    sampler: hotA/hotB as compiled frames, the walker's coverage, and nothing attached (no
    socket or file, no JIT perf map requested), in the first session and the next."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", hot_classes, "Hot")
    warm(app.pid)
    for _ in range(2):
        r = run_polyprof("-d", 3, "-f", 499, "-o", outdir, "-v", "--pids", app.pid)
        assert attach_files(app.pid) == [], (attach_files(app.pid), r.stderr[-1500:])
        assert not Path(f"/tmp/perf-{app.pid}.map").exists()
        prof = last_profile(outdir)
        cov = [c for c in prof.header["polyprof"]["runtime_samples"] if c["pid"] == app.pid]
        assert [(c["mode"], c["profiler"]) for c in cov] == [("auto", "sampler-walk")], cov
        lines = prof.for_comm(comm)
        n = sum(c for f, c in lines if f[-1] in (A, B))
        assert n >= 0.8 * cov[0]["sampler_samples"], (n, cov, r.stderr[-1500:])


@pytest.fixture(scope="module")
def deep_classes(tmp_path_factory):
    return javac(tmp_path_factory.mktemp("javadeep"), "DeepHot.java")


@pytest.mark.parametrize("opts", [[], ["-Xint"]], ids=["jit", "interpreted"])
@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_deep_recursion_is_exact(version, opts, deep_classes, launchers, start_app,
                                         outdir):
    """Recursion to depth 200: the samples in DeepHot.spin carry exactly 201 DeepHot.down
    frames, under DeepHot.main, none cut: compiled (C2 inlines a level of the recursion into
    each frame: the inlined ones shown as such) and interpreted (a frame each: 201 frames
    recorded in the sampler)."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, *opts, "-cp", deep_classes, "DeepHot")
    warm(app.pid)
    r = builtin_session(app, outdir, seconds=4)
    lines = last_profile(outdir).for_comm(comm)
    leaf = [(f, c) for f, c in lines if at(f, "DeepHot.spin()J") is not None]
    n = sum(c for _, c in leaf)
    assert n >= 0.5 * sum(c for _, c in lines), (n, r.stderr[-1500:])
    exact = sum(c for f, c in leaf
                if sum(x.startswith("DeepHot.down(I)J_[") for x in f) == 201 and
                at(f, "DeepHot.main(") is not None and "[truncated]" not in f)
    depths = sorted({sum(x.startswith("DeepHot.down(I)J_[") for x in f) for f, _ in leaf})
    print(f"\nJDK {version} {opts}: {exact} of {n} samples in spin with 201 down frames; "
          f"depths {depths}")
    assert exact >= 0.9 * n, (exact, n, depths)


def test_auto_without_bpf_hands_every_jvm_over(hot_classes, launchers, start_app,  # noqa: F811
                                               outdir):
    """Without the BPF sampler (--perf-mode perf-event) auto cannot walk: every JVM is profiled
    by the attaching profiler (async-profiler, installed by make deps), whose frames carry the
    3:1 split, and which polyprof.runtime_samples names."""
    comm = "pp_java17"
    app = start_app(launchers / comm, "-cp", hot_classes, "Hot")
    warm(app.pid)
    r = run_polyprof("-d", 4, "-f", 199, "--perf-mode", "perf-event", "-o", outdir, "-v",
                     "--pids", app.pid)
    assert "java: the sampler does not walk Java frames (no BPF sampler): 1 JVMs profiled with " \
        "async-profiler" in r.stderr, r.stderr[-2000:]
    prof = last_profile(outdir)
    lines = prof.for_comm(comm)
    na = sum(c for f, c in lines if f[-1] == A)
    nb = sum(c for f, c in lines if f[-1] == B)
    assert na + nb >= 100 and abs(na / (na + nb) - 0.75) <= 0.08, (na, nb, r.stderr[-1500:])
    # the header names the profiler that served it, not the mode's backend
    cov = [(c["mode"], c["profiler"]) for c in prof.header["polyprof"]["runtime_samples"]
           if c["pid"] == app.pid]
    assert cov == [("auto", "async-profiler")], cov


def test_auto_hands_an_unverified_layout_over(fake_jvm, outdir):
    """auto hands a process whose libjvm.so is no HotSpot (zlib under that name) to the
    attaching profiler instead of skipping it (which then finds no JVM to attach to: an error
    stack, not the walker's skip), and says so."""
    r = run_polyprof("-d", 2, "-o", outdir, "-v", "--pids", fake_jvm.pid)
    assert f"java pid {fake_jvm.pid} (pp_fakejvm): unverified HotSpot layout; profiled with" \
        in r.stderr, r.stderr[-2000:]
    frames = {x for f, _ in last_profile(outdir).for_comm("pp_fakejvm") for x in f}
    assert "[Profiling skipped: unverified HotSpot layout]" not in frames, frames
    assert fake_jvm.poll() is None


@pytest.mark.parametrize("opts,suffix", [(["-Xint"], "_[0]"),
                                         (["-XX:TieredStopAtLevel=1"], "_[1]"),
                                         (["-XX:-SegmentedCodeCache"], "_[j]")],
                         ids=["interpreted", "c1", "one-code-heap"])
@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_tiers(version, opts, suffix, hot_classes, launchers, start_app,  # noqa: F811
                       outdir):
    """Hot interpreted only (-Xint: hotA()V_[0]), compiled by C1 only (_[1], the nmethod's
    _comp_level) and with one code heap instead of three (_[j]): the same split and frames."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, *opts, "-cp", hot_classes, "Hot")
    warm(app.pid)
    builtin_session(app, outdir, seconds=4)
    lines = last_profile(outdir).for_comm(comm)
    a, b = "Hot.hotA()V" + suffix, "Hot.hotB()V" + suffix
    na = sum(c for f, c in lines if f[-1] == a)
    nb = sum(c for f, c in lines if f[-1] == b)
    total = sum(c for _, c in lines)
    print(f"\nJDK {version} {' '.join(opts)}: {a} {na}, {b} {nb} of {total}")
    assert total >= 400, f"host starved: {total} samples"
    assert na + nb >= 0.8 * total, (na, nb, total)
    assert abs(na / (na + nb) - 0.75) <= 0.06, (na, nb)
    bad = [f[4:] for f, _ in lines
           if f[-1] in (a, b) and f[f.index(a if a in f else b) - 1] != "Hot.work()V_[0]"]
    assert not bad, bad[:3]


@pytest.fixture(scope="module")
def nano_classes(tmp_path_factory):
    return javac(tmp_path_factory.mktemp("javanano"), "NanoHot.java", "JniHot.java")


@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_jni_split(version, nano_classes, launchers, start_app, outdir):
    """JniHot (3:1, the time in JNI: zlib through Deflater, write(2) through RandomAccessFile):
    hotA 75 % +- 5, the JNI functions and libraries above the Java frames (the native methods'
    wrappers, _[j], under them), walked from where the native unwind met the code cache."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", nano_classes, "JniHot")
    warm(app.pid)
    builtin_session(app, outdir)
    lines = last_profile(outdir).for_comm(comm)

    a, b = "JniHot.hotA(J)V_[", "JniHot.hotB(J)V_["
    na = sum(c for f, c in lines if at(f, a) is not None)
    nb = sum(c for f, c in lines if at(f, b) is not None)
    total = sum(c for _, c in lines)
    jni = sum(c for f, c in lines for x in (a, b) if at(f, x) is not None
              and any(y.startswith("Java_java_") for y in f[at(f, x) + 1:]))
    print(f"\nJDK {version} builtin JniHot: hotA {na}, hotB {nb} of {total} "
          f"({100.0 * na / max(na + nb, 1):.1f} %), {jni} with JNI callees above")
    assert total >= 600, f"host starved: {total} samples"
    assert na + nb >= 0.8 * total, (na, nb, total)
    assert abs(na / (na + nb) - 0.75) <= 0.05, (na, nb)
    assert jni >= 0.5 * (na + nb), (jni, na, nb)


@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_nanotime_split(version, nano_classes, launchers, start_app, outdir):
    """NanoHot (3:1 in two methods spinning on System.nanoTime(): most samples are in libjvm and
    the vDSO, called from compiled Java code): hotA 75 % +- 5, and the native callees
    (os::javaTimeNanos, clock_gettime) above the Java frames, walked from where the native
    unwind met the code cache."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", nano_classes, "NanoHot")
    warm(app.pid)
    builtin_session(app, outdir)
    lines = last_profile(outdir).for_comm(comm)
    # any tier (a method compiled again during the session is C1's for a while)
    a, b = "NanoHot.hotA(J)V_[", "NanoHot.hotB(J)V_["
    na = sum(c for f, c in lines if at(f, a) is not None)
    nb = sum(c for f, c in lines if at(f, b) is not None)
    # the samples in the JVM's code not walked: JIT frames only the perf-map text names
    unwalked = sum(c for f, c in lines if not any(x.endswith("]") and "_[" in x for x in f[4:])
                   and any(x.startswith("(/tmp/perf-") for x in f))
    native = sum(c for f, c in lines for x in (a, b) if at(f, x) is not None
                 and any(y.startswith(("os::javaTimeNanos", "clock_gettime", "jmm_"))
                         for y in f[at(f, x) + 1:]))
    print(f"\nJDK {version} builtin NanoHot: hotA {na}, hotB {nb} "
          f"({100.0 * na / max(na + nb, 1):.1f} %), {native} with native callees above, "
          f"{unwalked} in JIT code not walked")
    assert na + nb + unwalked >= 600, f"host starved: {na + nb + unwalked} samples"
    assert unwalked <= 0.1 * (na + nb), (unwalked, na, nb)
    assert abs(na / (na + nb) - 0.75) <= 0.05, (na, nb)
    assert native >= 0.5 * (na + nb), (native, na, nb)


@pytest.fixture(scope="module")
def inline_classes(tmp_path_factory):
    return javac(tmp_path_factory.mktemp("javainline"), "InlineHot.java")


@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_inlined_frames(version, inline_classes, launchers, start_app, outdir):
    """InlineHot: C2 inlines the tiny mid() into outer() (outer kept out of main, spin out of
    mid, by -XX:CompileCommand=dontinline): a sample in spin has outer's nmethod as its caller
    frame, its return address in mid's inlined scope, so spin(I)V_[j] is directly above
    mid(I)V_[i] (async-profiler's suffix of an inlined frame), directly above outer()V_[j], in at
    least 90 % of spin's samples (the rest: outer not yet C2's), and mid is never a frame of its
    own (it has no frame: a _[j] or _[0] mid would be a wrong frame)."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-XX:CompileCommand=quiet",
                    "-XX:CompileCommand=dontinline,InlineHot.spin",
                    "-XX:CompileCommand=dontinline,InlineHot.outer", "-cp", inline_classes,
                    "InlineHot")
    warm(app.pid)
    builtin_session(app, outdir, seconds=4)
    lines = last_profile(outdir).for_comm(comm)
    spin = [(f, c) for f, c in lines if at(f, "InlineHot.spin(I)V_[j]") is not None]
    n = sum(c for _, c in spin)
    inlined = sum(c for f, c in spin if f[at(f, "InlineHot.spin(I)V_[j]") - 2:
                  at(f, "InlineHot.spin(I)V_[j]")] == ["InlineHot.outer()V_[j]",
                                                       "InlineHot.mid(I)V_[i]"])
    mids = {x for f, _ in lines for x in f if x.startswith("InlineHot.mid(")}
    total = sum(c for _, c in lines)
    print(f"\nJDK {version} builtin InlineHot: spin {n} of {total}, {inlined} "
          f"({100.0 * inlined / max(n, 1):.1f} %) under outer_[j];mid_[i]; mid as {mids}")
    assert total >= 400, f"host starved: {total} samples"
    assert n >= 0.8 * total, (n, total)
    assert inlined >= 0.9 * n, [f[-4:] for f, _ in spin[:5]]
    assert mids == {"InlineHot.mid(I)V_[i]"}, mids


@pytest.fixture(scope="module")
def call_classes(tmp_path_factory):
    return javac(tmp_path_factory.mktemp("javacall"), "CallHot.java")


@pytest.mark.parametrize("opts,suffix", [([], "_[j]"), (["-XX:TieredStopAtLevel=1"], "_[1]"),
                                         (["-XX:+PreserveFramePointer"], "_[j]"),
                                         (["-XX:TieredStopAtLevel=1", "-XX:+PreserveFramePointer"],
                                          "_[1]")],
                         ids=["c2", "c1", "c2-fp", "c1-fp"])
@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_prologue_and_epilogue(version, opts, suffix, call_classes, launchers,
                                       start_app, outdir):
    """CallHot: a loop calling a tiny method kept out of line, so most of tiny's samples land in
    its prologue or epilogue (its frame not built yet, or taken down: 62-81 % of them lost loop
    and main before the walker read where the caller is from the prologue's bytes and the
    instruction at pc). Every sample in tiny (C2, or C1 alone; each also with
    -XX:+PreserveFramePointer, whose prologues add `mov rbp, rsp`) is under loop and main, at
    the root or on the JVM's call into Java."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-XX:CompileCommand=quiet",
                    "-XX:CompileCommand=dontinline,CallHot.tiny", *opts, "-cp", call_classes,
                    "CallHot")
    warm(app.pid)
    builtin_session(app, outdir, seconds=4)
    lines = last_profile(outdir).for_comm(comm)
    tiny = [(f, c) for f, c in lines if f[-1] == "CallHot.tiny(J)J" + suffix]
    n = sum(c for _, c in tiny)
    total = sum(c for _, c in lines)
    want = ["CallHot.main([Ljava/lang/String|)V_[0]", "CallHot.loop()V" + suffix]
    # under main: the JVM's call into Java, or nothing when the native unwind did not get
    # through the compiled frames (C2 code uses rbp as it likes: docs/java.md)
    bad = [(f[-5:], c) for f, c in tiny
           if f[-3:-1] != want or not f[-4].startswith(("JavaCalls::call_helper", "appid: "))]
    print(f"\nJDK {version} {suffix} CallHot: tiny {n} of {total}, "
          f"{sum(c for _, c in bad)} not under loop and main")
    assert total >= 400, f"host starved: {total} samples"
    assert n >= max(0.2 * total, 150), (n, total)
    assert not bad, bad[:3]


@pytest.fixture(scope="module")
def per_request_classes(tmp_path_factory):
    return javac(tmp_path_factory.mktemp("javaperrequest"), "PerRequest.java")


@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_thread_per_request(version, per_request_classes, launchers, start_app,
                                    outdir):
    """PerRequest (a new thread per request, each living about 4 ms): the walk needs no
    per-thread state, so the short threads' samples carry the program's methods (at least 90 % of
    the JVM's samples have a PerRequest frame: handleA/handleB, or main starting a thread; the
    threads' start and exit in the JVM and its own threads take the rest), handleA and handleB
    split 3:1 +- 0.06."""
    jdk(version)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-cp", per_request_classes, "PerRequest")
    warm(app.pid)
    builtin_session(app, outdir)
    lines = last_profile(outdir).for_comm(comm)
    total = sum(c for _, c in lines)
    na = sum(c for f, c in lines if any(x.startswith("PerRequest.handleA()V_[") for x in f))
    nb = sum(c for f, c in lines if any(x.startswith("PerRequest.handleB()V_[") for x in f))
    own = sum(c for f, c in lines if any(x.startswith("PerRequest.") for x in f))
    print(f"\nJDK {version} builtin PerRequest: handleA {na}, handleB {nb} of {total} samples "
          f"({100.0 * (na + nb) / max(total, 1):.1f} % carry them, "
          f"{100.0 * na / max(na + nb, 1):.1f} % handleA); "
          f"{100.0 * own / max(total, 1):.1f} % carry a PerRequest method")
    assert total >= 600, f"host starved: {total} samples"
    assert own >= 0.9 * total, (own, na, nb, total)
    assert abs(na / (na + nb) - 0.75) <= 0.06, (na, nb)


@pytest.fixture(scope="module")
def unload_classes(tmp_path_factory):
    d = javac(tmp_path_factory.mktemp("javaunload"), "Unloader.java")
    for w in ("A", "B"):
        (d / w).mkdir()
        javac(d / w, f"unload/Worker{w}.java")
    return d


@pytest.mark.parametrize("version", ["17", "25"])
def test_builtin_class_unloading_never_misnames(version, unload_classes, launchers, start_app,
                                                outdir):
    """Unloader loads WorkerA and WorkerB through new class loaders every second and unloads the
    previous pair (a full GC; -Xlog shows it): their Methods' and ConstMethods' memory is reused
    by the next pair's (WorkerB's where WorkerA's was) and their code flushed while they are
    sampled. Every Java frame above Unloader.main is WorkerA.accept or WorkerB.accept (or a lost
    symbol, counted), split 3:1 +- 0.06: no Method* named as another method."""
    jdk(version)
    comm = f"pp_java{version}"
    d = unload_classes
    app = start_app(launchers / comm, "-Xlog:class+unload=info:stdout", "-cp", d, "Unloader",
                    d / "A", d / "B", 1000)
    wait_for(lambda: sum("WorkerA" in x for x in app.out.lines) >= 1, 60,
             "the first WorkerA unloaded")
    before = sum("WorkerA" in x for x in app.out.lines)
    r = builtin_session(app, outdir)
    unloaded = sum("WorkerA" in x for x in app.out.lines) - before
    prof = last_profile(outdir)
    leaves = {}
    for f, c in prof.for_comm(comm):
        i = next((i for i, x in enumerate(f) if x.startswith("Unloader.main(")), None)
        if i is not None and i + 1 < len(f) and "_[" in f[i + 1] and not f[i + 1].endswith("[k]"):
            leaves[f[i + 1]] = leaves.get(f[i + 1], 0) + c
    named = sum(c for x, c in leaves.items() if x.startswith("Worker"))
    lost = sum(c for x, c in leaves.items() if x.startswith("[lost symbol]"))
    print(f"\nJDK {version} Unloader: {unloaded} WorkerA classes unloaded during the session; "
          f"callees of Unloader.main {leaves}; frames_lost "
          f"{prof.header['polyprof']['runtime_walks']['frames_lost']}")
    assert unloaded >= 3, f"{unloaded} classes unloaded during the session"
    allowed = {f"{x}_[{t}]" for t in "01j" for x in ("WorkerA.accept(I)V", "WorkerB.accept(I)V",
                                                     "[lost symbol]")}
    # Unloader's own calls (loading the next pair, the collection that unloads) may be sampled
    others = {x for x in leaves if x not in allowed and not x.startswith(
        ("Unloader.load(", "java/lang/System.nanoTime()J_[", "java/lang/System.gc()V_["))}
    assert not others, (others, r.stderr[-1500:])
    assert named >= 400, f"host starved: {named} samples"
    # a Method read only after its class was unloaded cannot be named: lost, counted (a drain
    # every 2 s, a class pair every second here)
    assert lost <= 0.5 * (named + lost), (lost, named)
    # a WorkerA Method named as WorkerB's (or the reverse) shifts the split
    na = sum(c for x, c in leaves.items() if x.startswith("WorkerA."))
    assert abs(na / named - 0.75) <= 0.06, leaves


@pytest.fixture
def fake_jvm(tmp_path):
    """A busy shell (comm pp_fakejvm) mapping a libjvm.so that is no HotSpot (zlib under that
    name)."""
    lib = tmp_path / "libjvm.so"
    zlib = next(p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1")
                if os.path.exists(p))
    shutil.copy(zlib, lib)
    launcher = tmp_path / "pp_fakejvm"  # a shell under a name of our own (its comm)
    launcher.symlink_to(shutil.which("sh"))
    proc = subprocess.Popen([str(launcher), "-c", "echo ready; while :; do :; done"],
                            env={**os.environ, "LD_PRELOAD": str(lib)}, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().startswith("ready")
        wait_for(lambda: str(lib) in Path(f"/proc/{proc.pid}/maps").read_text(), 10,
                 "the fake JVM to map its libjvm.so")
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_builtin_unverified_layout_is_skipped(fake_jvm, outdir):
    """A busy process mapping a libjvm.so that is no HotSpot is skipped with `[Profiling
    skipped: unverified HotSpot layout]`, nothing else attempted."""
    r = run_polyprof("-d", 2, "--java-mode", "builtin", "-o", outdir, "-v", "--pids",
                     fake_jvm.pid)
    lines = last_profile(outdir).for_comm("pp_fakejvm")
    frames = {x for f, _ in lines for x in f}
    assert "[Profiling skipped: unverified HotSpot layout]" in frames, (lines, r.stderr[-2000:])
    assert attach_files(fake_jvm.pid) == []


@pytest.fixture(scope="module")
def reflect_classes(tmp_path_factory):
    return javac(tmp_path_factory.mktemp("javareflect"), "ReflectHot.java")


def test_builtin_java_native_java_keeps_the_frames_between(reflect_classes, launchers, start_app,
                                                           outdir):
    """Java -> native -> Java (JDK 17's reflection through the native invoke0, inflation off:
    JVM_InvokeMethod and JavaCalls::call_helper between main and spin): spin's Java frames are
    those of the innermost run of Java code, and the native frames under them, JVM_InvokeMethod
    included, stay below them (a splice that replaced everything from the outermost frame in the
    code cache dropped them, and main with them)."""
    jdk("17")
    comm = "pp_java17"
    app = start_app(launchers / comm, "-Dsun.reflect.inflationThreshold=2147483647", "-cp",
                    reflect_classes, "ReflectHot")
    warm(app.pid)
    builtin_session(app, outdir, seconds=5)
    lines = last_profile(outdir).for_comm(comm)
    total = sum(c for _, c in lines)
    spin = [(f, c) for f, c in lines if at(f, "ReflectHot.spin()V_[") is not None]
    n = sum(c for _, c in spin)
    between = sum(c for f, c in spin
                  if any(x.startswith("JVM_InvokeMethod") for x in f[:at(f, "ReflectHot.spin()V_[")]))
    print(f"\nJDK 17 builtin ReflectHot: spin {n} of {total}, {between} with JVM_InvokeMethod "
          f"under it")
    assert total >= 400, f"host starved: {total} samples"
    assert n >= 0.8 * total, (n, total)
    assert between >= 0.8 * n, [f for f, _ in spin[:3]]
