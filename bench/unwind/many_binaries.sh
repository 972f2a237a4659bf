#!/usr/bin/env bash
# The per-file cache on a host with many processes (issue 26): starts N processes, each running
# its own copy of a program (--binaries distinct: copies whose build-id differs, so that each is
# a file of its own for the cache) or all the same file (--binaries shared), mostly asleep in
# pause(); runs polyprof -d S -f 99 --pids <them> (bpf mode, CFI) and wakes each process once
# (SIGUSR1: it spins --spin-ms through its functions) so that the sampler sees it and loads its
# files' rows. Prints polyprof's CPU (user + system), its peak RSS (VmHWM), the header's
# unwind.table_bytes (rows in the BPF rows array) and the rows demanded against the cache's cap.
# --program gen: a generated C program of --funcs functions (gcc -O2 -fomit-frame-pointer);
# --program python: /usr/bin/python3.11 running a 6-line SIGUSR1 waker (-S, no site).
# --cache-mib sets POLYPROF_UNWIND_CACHE_MIB. Needs root, gcc, readelf. docs/benchmarks.md.
# Usage: bash bench/unwind/many_binaries.sh [--count N] [--binaries distinct|shared]
#        [--program gen|python] [--funcs F] [--spin-ms MS] [--seconds S] [--cache-mib M]
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/many_binaries.py" "$@"
