#!/usr/bin/env bash
# Discovery benchmark (see run.py): polyprof's pp_discover versus gProfiler's
# `grep -lE '<regex>' /proc/*/maps` per runtime, with 1,000 extra processes. Needs root.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/run.py" "$@"
