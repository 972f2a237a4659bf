#!/usr/bin/env bash
# CPython reader benchmark: µs per sampled stack (10/50/200 frames, warm cache) for every
# CPython 3.8-3.13 found (pyenv and /usr/bin/python3.11), side by side, and the ratio of the
# 50-frame figure to the 20 µs target. Run from anywhere; needs root (reads other processes).
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 build/bench/bench_pyreader
samples=${SAMPLES:-2000}
printf '%-10s %12s %12s %12s %14s\n' python "10 fr (us)" "50 fr (us)" "200 fr (us)" "50fr/target"
for py in /root/.pyenv/versions/3.{8,9,10,11,12,13}*/bin/python3 /usr/bin/python3.11; do
    [ -x "$py" ] || continue
    out=$(build/bench/bench_pyreader "$py" "$samples") || { echo "$py: failed"; continue; }
    ver=$(sed -n 's/^python \([^:]*\):.*/\1/p' <<<"$out")
    [ "$py" = /usr/bin/python3.11 ] && ver="$ver(deb)"
    f10=$(sed -n 's/^10 frames: \([0-9.]*\).*/\1/p' <<<"$out")
    f50=$(sed -n 's/^50 frames: \([0-9.]*\).*/\1/p' <<<"$out")
    f200=$(sed -n 's/^200 frames: \([0-9.]*\).*/\1/p' <<<"$out")
    ratio=$(awk -v a="$f50" 'BEGIN { printf "%.2fx", a / 20 }')
    printf '%-10s %12s %12s %12s %14s\n' "$ver" "$f10" "$f50" "$f200" "$ratio"
done
