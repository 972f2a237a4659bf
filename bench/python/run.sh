#!/usr/bin/env bash
# CPython reader benchmark: µs per sampled stack (10/50/200 frames, warm cache) for every
# CPython 3.8-3.13 found (pyenv and /usr/bin/python3.11), side by side, and the ratio of the
# 50-frame figure to the 20 µs target. Run from anywhere; needs root (reads other processes).
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 build/bench/bench_pyreader
samples=${SAMPLES:-2000}
echo "median us per stack (min) [read syscalls per stack]; target: 20 us for 50 frames; load: $(cut -d' ' -f1 /proc/loadavg)"
printf '%-12s %-22s %-22s %-22s %s\n' python "10 frames" "50 frames" "200 frames" "50fr/target"
failed=0
for py in /root/.pyenv/versions/3.{8,9,10,11,12,13}*/bin/python3 /usr/bin/python3.11; do
    [ -x "$py" ] || continue
    if ! out=$(build/bench/bench_pyreader "$py" "$samples" 2>&1); then
        echo "$py: FAILED: $out"
        failed=$((failed + 1))
        continue
    fi
    ver=$(sed -n 's/^python \([^:]*\):.*/\1/p' <<<"$out")
    [ "$py" = /usr/bin/python3.11 ] && ver="$ver(deb)"
    fig() { sed -n "s/^$1 frames: \([0-9.]*\) us\/stack median, \([0-9.]*\) min, \([0-9.]*\) reads.*/\1 (\2) [\3]/p" <<<"$out"; }
    f50=$(sed -n 's/^50 frames: \([0-9.]*\).*/\1/p' <<<"$out")
    ratio=$(awk -v a="$f50" 'BEGIN { printf "%.2fx", a / 20 }')
    printf '%-12s %-22s %-22s %-22s %s\n' "$ver" "$(fig 10)" "$(fig 50)" "$(fig 200)" "$ratio"
done
if [ "$failed" -gt 0 ]; then
    echo "$failed interpreter(s) failed: the figures above are incomplete" >&2
    exit 1
fi
