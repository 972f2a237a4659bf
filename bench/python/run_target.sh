#!/bin/sh
# Target throughput under the built-in Python sampler: a CPU-bound pure-Python loop
# (bench/python/target.py) measures its own iterations over a fixed window, per second of wall
# time and per second of its own CPU time, without polyprof and with polyprof --python-mode
# builtin at 11 Hz and at 50 Hz. The three configurations are interleaved ROUNDS times (the
# host's other load drifts) and the medians are compared. Per CPU second is the figure that
# shows a slowdown caused by the profiler; per wall second also moves with other load.
# Run as root, under the helpers' lock:  flock /tmp/polyprof-integ.lock bench/python/run_target.sh
# Environment: PYTHON (default /usr/bin/python3.11), ROUNDS (5), MEASURE (4 s), WARMUP (3 s).
set -eu
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3.11}
ROUNDS=${ROUNDS:-5}
MEASURE=${MEASURE:-4}
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
    awk '/iterations_per_s/ {print $2, $3}' "$TMP/target.out"
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

: >"$TMP/none"; : >"$TMP/11"; : >"$TMP/50"
for r in $(seq "$ROUNDS"); do
    for c in none 11 50; do
        v=$(one $c)
        echo "$v" >>"$TMP/$c"
        echo "round $r: $c -> $v (iterations per wall s, per CPU s)" >&2
    done
done
wall() { awk '{print $1}' "$TMP/$1" | median; }
cpu() { awk '{print $2}' "$TMP/$1" | median; }
bw=$(wall none); bc_=$(cpu none)
echo "target throughput, $PYTHON, median of $ROUNDS x ${MEASURE}s windows:"
printf '%-26s %14s %7s %14s %7s\n' configuration "iter/wall-s" ratio "iter/CPU-s" ratio
for c in none 11 50; do
    case $c in none) name="without polyprof" ;; *) name="polyprof builtin, $c Hz" ;; esac
    w=$(wall $c); u=$(cpu $c)
    printf '%-26s %14.1f %7.3f %14.1f %7.3f\n' "$name" "$w" "$(echo "$w / $bw" | bc -l)" \
        "$u" "$(echo "$u / $bc_" | bc -l)"
done
