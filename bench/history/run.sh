#!/usr/bin/env bash
# The history store (bench_history.c): bytes and write time per session of a synthetic busy host
# (300 processes, 5,000 distinct stacks per session), then a simulated day of 60 s sessions with
# the default retention and the time of a query over the whole day. MINUTES (default 1440)
# shortens the day. Run from anywhere; needs nothing but the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 build/bench/bench_history
build/bench/bench_history "${MINUTES:-1440}"
