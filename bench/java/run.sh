#!/usr/bin/env bash
# JFR parser benchmark: CPU seconds to turn a 60 s recording of a busy multi-threaded JVM
# (jdk.ExecutionSample every 10 ms, stackdepth 256; bench/java/Busy.java: six threads on random
# call chains, thousands of distinct stacks) into
# collapsed stacks, polyprof's native parser (build/bench/bench_jfr, mean of N parses) versus
# what a Python agent would run: `jfr print --json --stack-depth 2048 --events
# jdk.ExecutionSample FILE | python3 collapse.py` (CPU of the whole pipeline, from
# getrusage(RUSAGE_CHILDREN)). Also checks that both produce the same stacks.
# The recording is kept in build/bench/java/ and reused; RECORD=1 makes a new one.
# Usage: bash bench/java/run.sh   (from the repository root; `make bench` runs it)
set -euo pipefail
cd "$(dirname "$0")/../.."
jdk=/usr/lib/jvm/java-17-openjdk-amd64
out=build/bench/java
fix=tests/fixtures/jfr
mkdir -p "$out"
make --no-print-directory -s build/bench/bench_jfr
rec=$out/busy60.jfr
if [ ! -s "$rec" ] || [ "${RECORD:-0}" = 1 ]; then
    echo "recording 60 s of a busy JVM into $rec ..."
    "$jdk/bin/javac" -d "$out" bench/java/Busy.java
    "$jdk/bin/java" -XX:FlightRecorderOptions:stackdepth=256 \
        "-XX:StartFlightRecording=settings=none,+jdk.ExecutionSample#enabled=true,+jdk.ExecutionSample#period=10ms,filename=$rec" \
        -cp "$out" Busy 60000 >/dev/null
fi
/usr/bin/python3 - "$rec" "$jdk/bin/jfr" "$fix/collapse.py" "$out" <<'PY'
import os, resource, subprocess, sys
rec, jfr, collapse, out = sys.argv[1:5]
n = 20
# polyprof: mean CPU of n parses in one process
pp = subprocess.run(["build/bench/bench_jfr", rec, str(n)], check=True, capture_output=True,
                    text=True).stdout.split()
pp_cpu, samples = float(pp[0]), int(pp[1])
with open(out + "/polyprof.txt", "w") as f:
    lines = subprocess.run(["build/bench/bench_jfr", "-p", rec], check=True, capture_output=True,
                           text=True).stdout.splitlines(keepends=True)
    f.writelines(sorted(lines))
# jfr print | python3 collapse.py: CPU of both children
before = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out + "/jfrprint.txt", "w") as f:
    p1 = subprocess.Popen([jfr, "print", "--json", "--stack-depth", "2048", "--events",
                           "jdk.ExecutionSample", rec], stdout=subprocess.PIPE)
    p2 = subprocess.Popen(["/usr/bin/python3", collapse], stdin=p1.stdout, stdout=f)
    p1.stdout.close()
    if p2.wait() or p1.wait():
        sys.exit("jfr print | collapse.py failed")
after = resource.getrusage(resource.RUSAGE_CHILDREN)
ref_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
same = open(out + "/polyprof.txt").read() == open(out + "/jfrprint.txt").read()
size = os.path.getsize(rec)
print(f"recording: {size / 1e6:.1f} MB, {samples} execution samples")
print(f"{'':34}{'CPU s':>10}")
print(f"{'polyprof native parser':34}{pp_cpu:>10.3f}")
print(f"{'jfr print --json | collapse.py':34}{ref_cpu:>10.3f}")
print(f"ratio: {ref_cpu / pp_cpu:.0f}x less CPU; identical stacks: {'yes' if same else 'NO'}")
if not same:
    sys.exit(1)
PY
