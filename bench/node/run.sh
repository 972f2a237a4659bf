#!/usr/bin/env bash
# Node attach benchmark (bench/node/run.py): a Node target's throughput before, during and after
# a polyprof run with --nodejs-mode attach-maps. polyprof is single-instance: on a shared machine
# run it under the test lock (flock /tmp/polyprof-test.lock bash bench/node/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory -s all
exec python3 bench/node/run.py "$@"
