#!/usr/bin/env bash
# Sampler benchmark (see run.py). Needs root, stress-ng and linux-perf (make deps installs them).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "$@"
