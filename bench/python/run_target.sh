#!/bin/sh
# Target throughput under the built-in Python sampler: a CPU-bound pure-Python loop
# (bench/python/target.py) measures its own iterations/s over a fixed window, without polyprof
# and with polyprof --python-mode builtin at 11 Hz and at 50 Hz. The three configurations are
# interleaved ROUNDS times (the host's other load drifts) and the medians are compared.
# Run as root, under the helpers' lock:  flock /tmp/polyprof-integ.lock bench/python/run_target.sh
# Environment: PYTHON (default /usr/bin/python3.11), ROUNDS (3), MEASURE (6 s), WARMUP (3 s).
set -eu
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3.11}
ROUNDS=${ROUNDS:-3}
MEASURE=${MEASURE:-6}
WARMUP=${WARMUP:-3}
POLYPROF=${POLYPROF:-build/polyprof}
[ -x "$POLYPROF" ] || make -s "$POLYPROF"
TMP=$(mktemp -d /tmp/pp_bench_target.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# one CONFIG: prints the target's iterations/s. CONFIG is "none" or a frequency in Hz.
one() {
    "$PYTHON" bench/python/target.py "$WARMUP" "$MEASURE" >"$TMP/target.out" &
    tpid=$!
    if [ "$1" != none ]; then
        # The session covers the target's whole measuring window (discovery takes < 2 s).
        "$POLYPROF" -d $((WARMUP + MEASURE + 2)) -f "$1" -o "$TMP/out" --python-mode builtin \
            --pids "$tpid" 2>"$TMP/polyprof.log" &
        ppid=$!
    fi
    wait "$tpid"
    [ "$1" = none ] || wait "$ppid"
    awk '/iterations_per_s/ {print $2}' "$TMP/target.out"
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

: >"$TMP/none"; : >"$TMP/11"; : >"$TMP/50"
for r in $(seq "$ROUNDS"); do
    for c in none 11 50; do
        v=$(one $c)
        echo "$v" >>"$TMP/$c"
        echo "round $r: $c -> $v iterations/s" >&2
    done
done
base=$(median <"$TMP/none")
f11=$(median <"$TMP/11")
f50=$(median <"$TMP/50")
echo "target throughput, $PYTHON, median of $ROUNDS x ${MEASURE}s windows (iterations/s):"
printf '%-28s %12s %8s\n' configuration "iter/s" ratio
printf '%-28s %12.1f %8.3f\n' "without polyprof" "$base" 1
printf '%-28s %12.1f %8.3f\n' "polyprof builtin, 11 Hz" "$f11" "$(echo "$f11 / $base" | bc -l)"
printf '%-28s %12.1f %8.3f\n' "polyprof builtin, 50 Hz" "$f50" "$(echo "$f50 / $base" | bc -l)"
