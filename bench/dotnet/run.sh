#!/usr/bin/env bash
# .NET builtin benchmark (bench/dotnet/run.py): naming 10,000 JIT-compiled methods, polyprof CPU
# with and without --dotnet-mode builtin. polyprof is single-instance: on a shared machine run it
# under the test lock (flock /tmp/polyprof-test.lock bash bench/dotnet/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory -s all
exec python3 bench/dotnet/run.py "$@"
