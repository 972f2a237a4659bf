"""The interpreter's own frames never appear as Python frames (issue 33).

CPython 3.13 specialises `Class(...)` (CALL_ALLOC_AND_ENTER_INIT): the class's Python __init__
runs on top of a shim frame whose code object (_Py_InitCleanup) is the interpreter's, named
"__init__" in file "__init__" and owned by the thread, so skipping C-stack-owned frames does
not drop it; before the fix every stack through a constructor read
`build (...);__init__ (__init__)_[p];Point.__init__ (...)`.

A copy of apps/pyinit.py (a busy loop constructing objects whose __init__ holds the CPU) runs
under every CPython the suite runs (test_python.interpreters: pyenv 3.8-3.13, Debian's 3.11),
all at once, profiled twice with --python-mode builtin: with the BPF sampler (the frames walked
in its eBPF program, docs/python-bpf.md) and with --perf-mode disabled (the user-space reader,
docs/python.md). For each walker and interpreter: every Python frame names a source file that
exists on disk, no frame is the shim, and Point.__init__ sits directly under build().
"""
import os
import re
import shutil

import pytest

from conftest import APPS, App, last_profile, run_polyprof
from test_python import interpreters

INTERPRETERS = interpreters()
WALKERS = {"bpf": [], "reader": ["--perf-mode", "disabled"]}
FRAME = re.compile(r"(.+) \((.+):(\d+)(?: \[[^\]]*\])?\)_\[p\]")


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("pyinit")
    apps, scripts = [], {}
    try:
        for label, exe in INTERPRETERS:
            script = d / f"pyinit_{label.replace('.', '_').replace('-', '_')}.py"
            shutil.copy(APPS / "pyinit.py", script)
            apps.append(App([exe, str(script)]))
            scripts[label] = str(script)
        pids = ",".join(str(a.pid) for a in apps)
        profs = {}
        for walker, extra in WALKERS.items():
            out = tmp_path_factory.mktemp(f"out_{walker}")
            run_polyprof("-d", 8, "-f", 99, "-o", out, "--python-mode", "builtin", *extra,
                         "--pids", pids)
            profs[walker] = last_profile(out)
        yield profs, scripts
    finally:
        for a in apps:
            a.stop()


@pytest.mark.parametrize("walker", list(WALKERS))
@pytest.mark.parametrize("label,exe", INTERPRETERS, ids=[i[0] for i in INTERPRETERS])
def test_init_shim_frame_never_appears(profiles, walker, label, exe):
    profs, scripts = profiles
    script = scripts[label]
    stacks = [(f, c) for f, c in profs[walker].stacks if len(f) > 3
              and f[3].startswith("appid: python: ") and f"({script})" in f[3]]
    init = "Point.__init__" if exe_minor(exe) >= 11 else "__init__"
    through_init = cut = 0
    for f, n in stacks:
        py = [x for x in f if x.endswith("_[p]")]
        assert "[lost symbol]_[p]" not in py, (walker, label, f)
        parsed = []
        for x in py:
            m = FRAME.fullmatch(x)
            # a frame of the interpreter's own (the shim: "__init__ (__init__)_[p]") has no file
            assert m and os.path.isabs(m[2]) and os.path.isfile(m[2]), (walker, label, x, f)
            parsed.append((m[1], m[2]))
        for i, (fn, file) in enumerate(parsed):
            if fn == init and file == script:
                through_init += n
                if "[truncated]" in f and i == 0:
                    # the reader does not stop the target: a frame read while it changed cuts
                    # the stack (marked), rarely; nothing is known under the cut
                    cut += n
                    continue
                assert i > 0 and parsed[i - 1] == ("build", script), (walker, label, py)
    # the constructor holds the CPU: most of the process's samples are inside it
    total = sum(n for _, n in stacks)
    assert total > 20, f"{walker} {label}: host starved: {total} samples in 8 s"
    assert through_init >= 0.8 * total, (walker, label, through_init, total)
    assert cut <= 0.05 * through_init, (walker, label, cut, through_init)


def exe_minor(exe):
    return int(re.search(r"python3\.(\d+)$", exe)[1])
