"""End-to-end: polyprof profiles real processes with the real BPF and perf_event samplers."""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (POLYPROF, App, LineReader, Profile, assert_share, last_profile,
                      run_polyprof, temp_leftovers, wait_for)

SPEC_KEYS = ["containers", "container_names_enabled", "metadata", "metrics",
             "application_metadata", "application_metadata_enabled", "profiling_mode",
             "hwmetrics", "htmlblob", "flamegraph_html", "sampling_event", "sampling_mode",
             "sampling_frequency"]
METADATA_KEYS = ["cloud_provider", "agent_version", "spawn_time", "python_version", "run_mode",
                 "deployment_type", "kernel_release", "kernel_version", "system_name",
                 "hypervisor", "processors", "cpu_model_name", "cpu_arch_codename", "cpu_flags",
                 "memory_capacity_mb", "hostname", "system", "os_name", "os_release",
                 "os_codename", "libc_type", "libc_version", "hardware_type", "pid",
                 "mac_address", "private_ip", "spawn_uptime_ms", "run_arguments", "big_data",
                 "external_metadata", "current_time", "profiling_mode", "sampling_event",
                 "sampling_mode", "sampling_frequency"]


def ratio_a(prof, comm, a, b):
    na = prof.count_where(comm, lambda f: f[-1] == a or a in f[3:])
    nb = prof.count_where(comm, lambda f: f[-1] == b or b in f[3:])
    assert na + nb > 100, f"too few samples for {comm}: {na}+{nb}"
    print(f"{comm}: {a} {na}, {b} {nb}")
    return 100.0 * na / (na + nb), na + nb


@pytest.fixture(scope="module")
def profiles(appdir, tmp_path_factory):
    """One 7 s run per sampler mode, with the C and Go fixtures running (each Go copy works a
    third of the time, less when the host is busy: 7 s keeps it above the samples a share
    check needs)."""
    out = {}
    for mode in ("bpf", "perf-event"):
        apps = []
        try:
            for n in ("pp_hot_c", "pp_hot_go", "pp_hot_gos"):
                apps.append(App([str(appdir / n)]))
            pids = [a.pid for a in apps]
            d = tmp_path_factory.mktemp(f"out_{mode}")
            r = run_polyprof("-d", 7, "-f", 499, "-o", d, "--perf-mode", mode)
            out[mode] = (last_profile(d), r, pids, d)
        finally:
            for a in apps:
                a.stop()
    return out


@pytest.mark.parametrize("mode", ["bpf", "perf-event"])
def test_c_functions_in_known_ratio(profiles, mode):
    prof, r, pids, _ = profiles[mode]
    assert f"system sampler running ({mode} mode" in r.stderr
    assert_share(*ratio_a(prof, "pp_hot_c", "hot_a", "hot_b"), 75, "hot_a share")
    # comm is the process comm, app index 0, empty container
    for frames, _ in prof.for_comm("pp_hot_c"):
        assert frames[0] == "0" and frames[1] == ""
    assert any("main" in f for f, _ in prof.for_comm("pp_hot_c"))


@pytest.mark.parametrize("mode", ["bpf", "perf-event"])
def test_go_functions_symbolized_with_and_without_symtab(profiles, mode):
    prof = profiles[mode][0]
    for comm in ("pp_hot_go", "pp_hot_gos"):
        assert_share(*ratio_a(prof, comm, "main.hotGoA", "main.hotGoB"), 75,
                     f"{comm}: hotGoA share")
        # hotGoA/B are frameless leaves, so their caller shows as runtime.main (perf agrees)
        assert any("runtime.main" in f for f, _ in prof.for_comm(comm))


@pytest.mark.parametrize("mode", ["bpf", "perf-event"])
def test_kernel_frames_and_swapper(profiles, mode):
    prof = profiles[mode][0]
    kernel = [fr for f, _ in prof.stacks for fr in f[3:] if fr.endswith("_[k]")]
    assert kernel, "some kernel frames"
    # Kernel frames are leaf-side: once a stack enters the kernel it stays there.
    for f, _ in prof.stacks:
        ks = [i for i, fr in enumerate(f[3:]) if fr.endswith("_[k]")]
        if ks:
            assert ks == list(range(ks[0], len(f) - 3)), f"kernel frames not at the leaf: {f}"


def test_idle_cpus_appear_as_swapper(outdir):
    run_polyprof("-d", 1, "-f", 99, "-o", outdir)
    prof = last_profile(outdir)
    idle = prof.for_comm("swapper")
    assert idle, "idle samples appear as swapper"
    assert all(f[0] == "0" and f[1] == "" for f, _ in idle)
    assert not any(f[2].startswith("swapper/") for f, _ in prof.stacks)


@pytest.mark.parametrize("mode", ["bpf", "perf-event"])
def test_header_has_every_spec_key(profiles, mode):
    prof, _, _, d = profiles[mode]
    h = prof.header
    assert list(h)[:len(SPEC_KEYS)] == SPEC_KEYS
    assert list(h["metadata"]) == METADATA_KEYS
    assert h["application_metadata"][0] is None
    assert h["sampling_frequency"] == 499 and h["metadata"]["sampling_frequency"] == 499
    assert h["profiling_mode"] == "cpu"
    assert 0 <= h["metrics"]["cpu_avg"] <= 100 and 0 < h["metrics"]["mem_avg"] < 100
    assert h["metadata"]["run_arguments"]["perf_mode"] == mode
    assert h["polyprof"]["sampler"] == mode
    assert h["polyprof"]["samples"] > 0
    pp = h["polyprof"]
    for k in ("dropped_map_full", "user_stacks_lost", "kernel_stacks_lost",
              "lost_samples", "filtered_samples", "user_stack_errors"):
        # counts of this session's samples: none can exceed the samples taken
        assert isinstance(pp[k], int) and 0 <= pp[k] <= pp["samples"], (k, pp)
    # polyprof's own cost of the session: measured, and small
    assert 0 < pp["cpu_seconds"] < 5
    assert 1024 < pp["rss_kb"] < 100 * 1024
    assert pp["discovery_ms"] > 0
    mem = pp["memory"]  # where the memory is: malloc's bytes in use, symbol tables, the profile
    # (malloc's bytes in use may exceed the RSS: allocated pages not touched yet are not resident)
    assert 0 < mem["symbol_tables_bytes"] < mem["heap_in_use_bytes"], mem
    assert 0 < mem["profile_bytes"] < mem["heap_in_use_bytes"], mem
    # the BPF maps' kernel memory (charged to polyprof's memory cgroup, apart from malloc's);
    # 0 in perf-event mode
    assert mem["bpf_maps_bytes"] == 0 or 4 << 20 < mem["bpf_maps_bytes"] < 256 << 20, mem
    # every sample the sampler counted is in the file, or counted as dropped (the counters are
    # read after the last drain: the few samples taken in between are counted, not written)
    total = sum(c for _, c in prof.stacks)
    kept = pp["samples"] - pp["dropped_map_full"] - pp["filtered_samples"] - pp["lost_samples"]
    assert kept * 0.99 <= total <= kept, (total, pp)
    assert os.readlink(d / "last_profile.col").startswith("profile_")
    assert not temp_leftovers(d)


def test_both_modes_give_the_same_shape(profiles):
    """The same process, the same functions, comparable shares in both modes: the two shares
    differ by no more than 4 standard deviations of their difference (at least 5 points)."""
    a, b = profiles["bpf"][0], profiles["perf-event"][0]
    for comm in ("pp_hot_c", "pp_hot_go"):
        fa = {fr for f, _ in a.for_comm(comm) for fr in f[3:] if not fr.endswith("_[k]")}
        fb = {fr for f, _ in b.for_comm(comm) for fr in f[3:] if not fr.endswith("_[k]")}
        hot = ("hot_a", "hot_b") if comm == "pp_hot_c" else ("main.hotGoA", "main.hotGoB")
        assert set(hot) <= fa and set(hot) <= fb
        pa, na = ratio_a(a, comm, *hot)
        pb, nb = ratio_a(b, comm, *hot)
        tol = max(5.0, 4 * 100 * (0.75 * 0.25 * (1 / na + 1 / nb)) ** 0.5)
        assert abs(pa - pb) <= tol, f"{comm}: {pa:.1f}% (bpf, {na}) vs {pb:.1f}% " \
                                    f"(perf-event, {nb}), more than {tol:.1f} points apart"


def test_pids_restricts_everything(appdir, start_app, outdir):
    c = start_app(appdir / "pp_hot_c")
    start_app(appdir / "pp_hot_go")
    run_polyprof("-d", 2, "-f", 99, "-o", outdir, "--pids", c.pid)
    prof = last_profile(outdir)
    comms = {f[2] for f, _ in prof.stacks}
    assert comms == {"pp_hot_c"}, comms


def test_continuous_mode_and_last_profile_link(appdir, start_app, outdir):
    start_app(appdir / "pp_hot_c")
    p = subprocess.Popen([str(POLYPROF), "-c", "-d", "1", "-f", "49", "-o", str(outdir),
                          "--rotating-output"], stderr=subprocess.PIPE, text=True)
    try:
        first = wait_for(lambda: os.path.islink(outdir / "last_profile.col") and
                         os.readlink(outdir / "last_profile.col"), 15, "first profile")
        second = wait_for(lambda: (os.readlink(outdir / "last_profile.col") != first) and
                          os.readlink(outdir / "last_profile.col"), 15, "second profile")
        # a whole session's profile, read now: the newest after SIGTERM may be the last session
        # cut short at the stop, too short at 49 Hz to hold a sample of the program
        whole = last_profile(outdir)
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    files = sorted(x.name for x in outdir.glob("profile_*.col"))
    newest = os.readlink(outdir / "last_profile.col")
    assert newest == files[-1]
    assert second <= newest
    assert len(files) == 1, f"--rotating-output keeps only the newest: {files}"
    pages = [x.name for x in outdir.glob("profile_*.html")]
    assert pages == [newest[:-4] + ".html"], f"the newest flame graph only: {pages}"
    assert os.readlink(outdir / "last_flamegraph.html") == pages[0]
    assert whole.for_comm("pp_hot_c")
    assert not temp_leftovers(outdir)


def test_sigterm_mid_session_writes_the_finished_part(appdir, start_app, outdir):
    start_app(appdir / "pp_hot_c")
    p = subprocess.Popen([str(POLYPROF), "-v", "-d", "60", "-f", "99", "-o", str(outdir)],
                         stderr=subprocess.PIPE, text=True)
    log = LineReader(p.stderr)
    try:
        # Wait until a drain has moved samples of the target into the session's profile.
        log.wait_line(lambda x: "drained" in x and "pp_hot_c" in x, 20,
                      "a drain with the target's samples")
    except BaseException:
        p.kill()
        raise
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    err = log.text()
    elapsed = time.monotonic() - t0
    assert p.returncode == 0, err
    assert elapsed < 5, f"stopping took {elapsed:.1f}s"
    files = list(outdir.glob("profile_*.col"))
    assert len(files) == 1
    prof = Profile(files[0])  # parses completely: never a partial file
    assert prof.for_comm("pp_hot_c")
    assert not temp_leftovers(outdir)
    assert not any(Path("/run/polyprof").glob("sess-*")), "session directories removed"


def test_process_exiting_mid_session(appdir, start_app, outdir):
    # it runs 2.5 s from its start: polyprof's own start (BPF, discovery) takes up to ~1 s
    short = start_app(appdir / "pp_hot_c", "2.5")
    run_polyprof("-d", 4, "-f", 99, "-o", outdir)
    short.proc.wait(timeout=10)
    prof = last_profile(outdir)
    assert prof.count_where("pp_hot_c", lambda f: True) > 0


def test_deleted_binary_is_still_symbolized(appdir, start_app, outdir, tmp_path):
    exe = tmp_path / "pp_hot_del"
    exe.write_bytes((appdir / "pp_hot_c").read_bytes())
    exe.chmod(0o755)
    start_app(exe)
    exe.unlink()
    run_polyprof("-d", 2, "-f", 99, "-o", outdir)
    prof = last_profile(outdir)
    assert prof.count_where("pp_hot_del", lambda f: "hot_a" in f) > 0


@pytest.mark.parametrize("mode", ["bpf", "perf-event"])
def test_short_lived_processes_are_symbolized(appdir, outdir, mode):
    """Processes that start and exit between two drains (2 s apart) keep named frames: the
    sampler reads a process's mappings when it first samples it, not only at the drain.
    (Before this, all 300 samples of such processes were [unknown].)"""
    p = subprocess.Popen([str(POLYPROF), "-v", "-d", "5", "-f", "199", "-o", str(outdir),
                          "--perf-mode", mode], stderr=subprocess.PIPE, text=True)
    log = LineReader(p.stderr)
    try:
        log.wait_line(lambda x: "profiling session started" in x, 30, "session start")
        pids = []
        for _ in range(6):  # 6 x 0.25 s, one after the other: each one is gone well before a drain
            r = subprocess.run([str(appdir / "pp_hot_c"), "0.25"], capture_output=True, text=True,
                               check=True)
            pids.append(int(r.stdout.split()[1]))
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = log.text()
    assert p.returncode == 0, err
    prof = last_profile(outdir)
    lines = prof.for_comm("pp_hot_c")
    total = sum(c for _, c in lines)
    named = sum(c for f, c in lines if {"hot_a", "hot_b"} & set(f[3:]))
    print(f"{mode}: {named} of {total} samples named; header {prof.header['polyprof']}")
    assert total > 50, f"too few samples of the short-lived processes: {total}"
    assert prof.header["polyprof"]["new_processes"] >= len(pids)
    assert named >= 0.95 * total, f"{named} of {total} samples name hot_a/hot_b: {lines[:5]}"
