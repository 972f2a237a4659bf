#!/usr/bin/env bash
# Native unwinding cost (issue 26): polyprof's CPU per 10 s session at 99 Hz on a host running
# four gcc -O2 -fomit-frame-pointer qsort programs, by CFI and by frame pointers only, in each
# sampler backend, against `perf record --call-graph dwarf` + `perf script` on the same load.
# Needs root and linux-perf (make deps).
# Usage: bash bench/unwind/cost.sh [--runs N] [--seconds S] [--modes bpf,fp,perf-event]
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/cost.py" "$@"
