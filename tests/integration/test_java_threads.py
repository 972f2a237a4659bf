"""The per-thread merge with real JVMs (OpenJDK 17, Temurin 25) in jfr mode: JFR's samples carry
each sample's thread, the system sampler counts the JVM's samples per thread, and the merge
scales each Java thread's stacks to that thread's sampler count (merge/scale.h). Threads JFR does
not sample (garbage collection, the JIT compilers) keep their native stacks instead of being
attributed to Java methods. async-profiler samples the GC threads itself (native frames), and
reports threads too: the same test holds in ap mode."""
import os
import re
import subprocess

import pytest

from conftest import APPS, last_profile
from test_java import (JDKS, RunEnv, asprof_env, jdk, jfr_ready, launchers, totals,  # noqa: F401
                       warm)

JAVA_SUFFIXES = ("_[j]", "_[i]", "_[0]")


@pytest.fixture(scope="module")
def gc_classes(tmp_path_factory):
    d = tmp_path_factory.mktemp("javagc")
    subprocess.run([str(JDKS["17"] / "bin" / "javac"), "-d", str(d), str(APPS / "GcHot.java")],
                   check=True)
    return d


@pytest.mark.parametrize("mode", ["jfr", "ap"])
@pytest.mark.parametrize("version", ["17", "25"])
def test_gc_threads_keep_their_native_stacks(version, mode, gc_classes, launchers, start_app,
                                             outdir):
    jdk(version)
    env = asprof_env() if mode == "ap" else dict(os.environ)
    comm = f"pp_java{version}"
    app = start_app(launchers / comm, "-Xmx256m", "-XX:ParallelGCThreads=2", "-cp", gc_classes,
                    "GcHot")
    warm(app.pid)
    if mode == "jfr":
        jfr_ready(version, app.pid)
    r = RunEnv(env, "-d", 6, "-f", 99, "--java-mode", mode, "-o", outdir, "-v").wait()
    lines = last_profile(outdir).for_comm(comm)
    java = sum(c for f, c in lines if any(x.endswith(JAVA_SUFFIXES) for x in f[4:]))
    churn = sum(c for f, c in lines if any(x.startswith("GcHot.churn") for x in f[4:]))
    # the collector's threads: native frames of libjvm (G1's workers and concurrent threads)
    gc = sum(c for f, c in lines
             if not any(x.endswith(JAVA_SUFFIXES) for x in f[4:])
             and any(re.search(r"G1|GC|WorkerThread|GangWorker|ConcurrentGCThread", x)
                     for x in f[4:]))
    total = sum(c for _, c in lines)
    assert churn > 0, r.stderr[-3000:]
    assert gc >= 0.05 * total, f"GC threads' native stacks: {gc} of {total}"
    # the collector's stacks are its own: a stack rooted in a GC thread's loop never carries
    # Java frames (a merge that gave a GC thread a Java thread's frames, or put a runtime stack
    # on top of the sampler's native one, would)
    gc_root = re.compile(r"(WorkerThread|GangWorker|ConcurrentGCThread|G1\w*Thread)::(run|loop)")
    rooted = [(f, c) for f, c in lines if any(gc_root.search(x) for x in f[4:])]
    assert sum(c for _, c in rooted) >= 0.05 * total, \
        f"stacks rooted in a GC thread's loop: {sum(c for _, c in rooted)} of {total}"
    mixed = [f[4:] for f, _ in rooted if any(x.endswith(JAVA_SUFFIXES) for x in f[4:])]
    assert not mixed, f"GC threads' stacks with Java frames: {mixed[:2]}"
    assert java > 0, "the Java threads' stacks"
    # async-profiler's thread root frames served the merge and are gone (not asked for)
    assert not any(re.fullmatch(r"\[.* tid=\d+\]", x) for f, _ in lines for x in f[4:])
    errors = {x for f, _ in lines for x in f[4:] if x.startswith("[Profiling")}
    assert not errors, r.stderr[-3000:]
    # the JVM's total is the sampler's count
    _, sampler = totals(r.stderr, app.pid)
    assert total == sampler, (total, sampler)
