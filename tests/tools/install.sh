#!/usr/bin/env bash
# Installs the pinned external profilers the tests run against, from the registries this
# project reaches, into a cache outside the checkout (kept between runs). Idempotent and quiet:
# prints a line only when it installs something. Called by `make deps`.
#   PP_TOOLS (default /var/cache/polyprof/tools): where they go.
set -euo pipefail
TOOLS=${PP_TOOLS:-/var/cache/polyprof/tools}
PYSPY_VERSION=0.4.3

mkdir -p "$TOOLS"
log=$TOOLS/install.log

# py-spy, from PyPI: the wheel carries the static binary (py_spy-*.data/scripts/py-spy).
pyspy=$TOOLS/py-spy-$PYSPY_VERSION/py-spy
if [ ! -x "$pyspy" ]; then
    echo "installing py-spy $PYSPY_VERSION (PyPI) into $TOOLS"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if ! /usr/bin/python3 -m pip download --no-deps --only-binary=:all: -d "$tmp" \
        "py-spy==$PYSPY_VERSION" >"$log" 2>&1; then
        cat "$log"
        exit 1
    fi
    /usr/bin/python3 -m zipfile -e "$tmp"/py_spy-*.whl "$tmp/x"
    mkdir -p "$(dirname "$pyspy")"
    install -m 0755 "$tmp/x/py_spy-$PYSPY_VERSION.data/scripts/py-spy" "$pyspy.new"
    mv "$pyspy.new" "$pyspy"
fi
"$pyspy" --version | grep -q "$PYSPY_VERSION"
