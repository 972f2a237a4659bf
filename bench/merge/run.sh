#!/usr/bin/env bash
# The system sampler's user-space tables (bench_merge.c): CPU seconds per phase, the median of
# RUNS runs (default 5). Run from anywhere; needs nothing but the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 build/bench/bench_merge
runs=${RUNS:-5}
for _ in $(seq "$runs"); do build/bench/bench_merge; done | /usr/bin/python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin]
for i, name in enumerate(["emit", "merge", "stacks", "total"]):
    vals = [float(r[2 * i + 1]) for r in rows]
    print(f"{name:8} median {statistics.median(vals):.4f} CPU s (min {min(vals):.4f}, {len(vals)} runs)")
print("check", rows[0][-1], "(the same in every run)" if len({r[-1] for r in rows}) == 1 else "DIFFERS between runs")
'
