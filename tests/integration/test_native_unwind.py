"""Native user stacks without frame pointers, unwound by the BPF sampler from CFI rows (issue 26,
docs/ARCHITECTURE.md, "Native unwinding"). The test_bpf_* tests run polyprof's default BPF mode
on programs built without frame pointers and assert the callers it finds."""
import signal
import subprocess
from pathlib import Path

from conftest import APPS, POLYPROF, App, Profile, assert_share, wait_for

SESSION_SECONDS = 5
NEEDED = 520  # samples after the first session: a +-8 point share check of 75 % needs 469


def build_qsort(tmp_path):
    exe = tmp_path / "pp_qsort"
    subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-o", str(exe),
                    str(APPS / "qsort_callers.c")], check=True)
    return exe


def later_sessions(tmp_path, pid, comm, *extra):
    """Runs polyprof continuously on pid and returns the stacks of comm in every session after
    the first (which includes the moments before the process's rows were loaded), once they
    hold NEEDED samples (at most 120 s)."""
    out = tmp_path / "out"
    out.mkdir()
    args = [str(POLYPROF), "-c", "-d", str(SESSION_SECONDS), "-f", "99", "-o", str(out),
            "--pids", str(pid), "--no-flamegraph", *extra]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = ""
    profiles = []

    def enough():
        if p.poll() is not None:
            return True
        files = sorted(out.glob("profile_*.col"))[1:]
        profiles[:] = [Profile(f) for f in files]
        return sum(c for pr in profiles for _, c in pr.for_comm(comm)) >= NEEDED

    try:
        wait_for(enough, 120, f"{NEEDED} samples of {comm} after the first session",
                 interval=0.5)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    assert profiles, f"polyprof exited {p.returncode}: {err}"
    return profiles


def exec_ranges(pid):
    """The executable mappings of pid: (start, end, path)."""
    ranges = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if "x" in parts[1]:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            ranges.append((lo, hi, parts[5] if len(parts) > 5 else ""))
    return ranges


def test_bpf_cfi_qsort_callers(tmp_path):
    """gcc -O2 -fomit-frame-pointer: two noinline callers (3:1) of libc's qsort, whose comparator
    runs most of the time. With frame pointers only, ~0.5 % of the samples named a caller; by
    CFI >= 95 % must carry the calling function and main, split 3:1, and no frame lies outside
    an executable mapping (every frame is named: an address outside every mapping could not
    be)."""
    exe = build_qsort(tmp_path)
    app = App([str(exe)])
    try:
        maps = exec_ranges(app.pid)
        profiles = later_sessions(tmp_path, app.pid, "pp_qsort")
    finally:
        app.stop()
    stacks = [s for pr in profiles for s in pr.for_comm("pp_qsort")]
    total = sum(c for _, c in stacks)

    def caller(f):
        names = set(f[3:])
        has = [c for c in ("sort_three", "sort_one") if c in names]
        return has[0] if len(has) == 1 and "main" in names else None

    three = sum(c for f, c in stacks if caller(f) == "sort_three")
    one = sum(c for f, c in stacks if caller(f) == "sort_one")
    share = 100.0 * (three + one) / total
    worst = sorted((c, ";".join(f[3:])) for f, c in stacks if not caller(f))[-3:]
    assert share >= 95.0, (f"{share:.1f}% of {total} samples carry their caller and main; "
                           f"the most common without: {worst}")
    assert_share(100.0 * three / (three + one), three + one, 75, "sort_three's share")

    # Every native frame is named: an address outside every executable mapping has no name
    # (the symbolizer writes [unknown] or a bare address for it).
    unnamed = [(f, c) for f, c in stacks
               if any(x == "[unknown]" or x.startswith("0x") for x in f[3:])]
    assert not unnamed, f"frames outside the executable mappings {maps}: {unnamed[:3]}"
    unwind = profiles[-1].header["polyprof"]["unwind"]
    assert unwind["cfi_frames"] > 0 and unwind["table_bytes"] > 0, unwind
