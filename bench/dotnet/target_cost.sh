#!/usr/bin/env bash
# The cost to a .NET process of --dotnet-mode builtin (bench/dotnet/target_cost.py): its
# throughput without polyprof, with --dotnet-mode disabled and with builtin. polyprof is
# single-instance: on a shared machine run it under the test lock
# (flock /tmp/polyprof-test.lock bash bench/dotnet/target_cost.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory -s all
exec python3 bench/dotnet/target_cost.py "$@"
