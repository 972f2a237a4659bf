#!/bin/bash
# BPF cost per sample of the sampler's user-stack unwinding: CFI (the default --perf-mode bpf)
# against frame pointers only (--perf-mode fp), on tests/integration/apps/qsort_callers.c built
# gcc -O2 -fomit-frame-pointer. With kernel.bpf_stats_enabled=1 the kernel times every run of
# pp_sample; the figure is run_time_ns / run_cnt read from bpftool while polyprof runs (every
# run: the fixture's samples and the other pids' ones, which --pids filters out at once), and
# run_time_ns per sample of the fixture (an upper bound of the fixture's own cost).
# usage: bench/unwind/bpf_cost.sh [seconds per mode, default 20] (root)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-20}
TMP=$(mktemp -d)
OLD=$(sysctl -n kernel.bpf_stats_enabled)
Q=
cleanup() {
    [ -n "$Q" ] && kill "$Q" 2>/dev/null || true
    sysctl -qw kernel.bpf_stats_enabled="$OLD"
    rm -rf "$TMP"
}
trap cleanup EXIT
gcc -O2 -fomit-frame-pointer -o "$TMP/pp_qsort" "$ROOT/tests/integration/apps/qsort_callers.c"
"$TMP/pp_qsort" > /dev/null &
Q=$!
sysctl -qw kernel.bpf_stats_enabled=1
for mode in fp bpf; do
    mkdir -p "$TMP/$mode"
    for try in $(seq 1 120); do # another polyprof may hold the host lock: wait for it
        "$ROOT/build/polyprof" -d "$SECS" -f 99 --pids "$Q" --perf-mode "$mode" \
            --no-flamegraph -o "$TMP/$mode" > "$TMP/$mode.log" 2>&1 &
        P=$!
        sleep 2
        if ! kill -0 "$P" 2>/dev/null && grep -q "acquire polyprof's lock" "$TMP/$mode.log"; then
            sleep $((RANDOM % 4 + 1))
            continue
        fi
        break
    done
    sleep $((SECS - 4))
    STATS=$(bpftool prog show name pp_sample -j)
    wait "$P" || { cat "$TMP/$mode.log"; exit 1; }
    python3 - "$mode" "$STATS" "$TMP/$mode/last_profile.col" <<'PY'
import json, sys
mode, stats, col = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
p = stats[0] if isinstance(stats, list) else stats
lines = open(col).read().split("\n")
hdr = json.loads(lines[0][2:])
mine = sum(int(l.rpartition(" ")[2]) for l in lines[1:] if ";pp_qsort;" in l)
callers = sum(int(l.rpartition(" ")[2]) for l in lines[1:]
              if ";pp_qsort;" in l and ";main;" in l)
print(f"{mode:4s} runs {p['run_cnt']:7d}  {p['run_time_ns'] / p['run_cnt']:8.0f} ns/run  "
      f"fixture samples {mine:6d}  {p['run_time_ns'] / max(mine, 1):8.0f} ns/fixture sample  "
      f"with main {100.0 * callers / max(mine, 1):5.1f}%  unwind {hdr['polyprof'].get('unwind')}")
PY
done
