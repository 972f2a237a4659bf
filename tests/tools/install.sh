#!/usr/bin/env bash
# Installs the pinned external profilers the tests run against, from the registries this
# project reaches, into a cache outside the checkout (kept between runs), and builds the
# resources polyprof ships that must match this machine (the Node perf-map addon). Idempotent
# and quiet: prints a line only when it installs something. Called by `make deps`.
#   PP_TOOLS (default /var/cache/polyprof/tools): where they go.
set -euo pipefail
TOOLS=${PP_TOOLS:-/var/cache/polyprof/tools}
PYSPY_VERSION=0.4.3
RBSPY_VERSION=0.55.0
ASPROF_VERSION=4.6
ASPROF_SHA256=a5d3d9f4582c2033fa9db518046e73ef97219801f3e7542b82e3e09261ebe493
# npm's linux-perf (the code-event handler gProfiler's attach-maps loads) and the nan it needs
LINUX_PERF_VERSION=0.3.1
NAN_VERSION=2.30.0
# The .NET Core 3.1 runtime the .NET tests run C# (compiled by Debian's mcs) on: PyPI's
# dotnetcore2 wheel carries it (dotnetcore2/bin/dotnet); x86_64 only.
DOTNETCORE2_VERSION=3.1.23
DOTNETCORE2_SHA256=5f076ddc39da0c685e7de20ecb91ee81185928918ec86fbeb3bffc55dd867ab5
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

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

# async-profiler, from Maven Central: the jar carries linux-x64/ and linux-arm64/
# libasyncProfiler.so, which polyprof reads out of it (runtimes/java/asprof_jar.c). Laid out as a
# resources directory (java/async-profiler.jar), so POLYPROF_RESOURCES can point at it.
jar=$TOOLS/async-profiler-$ASPROF_VERSION/java/async-profiler.jar
if ! echo "$ASPROF_SHA256  $jar" | sha256sum -c --status 2>/dev/null; then
    echo "installing async-profiler $ASPROF_VERSION (Maven Central) into $TOOLS"
    mkdir -p "$(dirname "$jar")"
    url=https://repo1.maven.org/maven2/tools/profiler/async-profiler/$ASPROF_VERSION/async-profiler-$ASPROF_VERSION.jar
    if ! curl -fsSL --retry 3 -o "$jar.new" "$url" >"$log" 2>&1; then
        cat "$log"
        rm -f "$jar.new"
        exit 1
    fi
    if ! echo "$ASPROF_SHA256  $jar.new" | sha256sum -c --status; then
        echo "async-profiler $ASPROF_VERSION from $url: sha256 $(sha256sum "$jar.new" | cut -d' ' -f1), expected $ASPROF_SHA256" >&2
        rm -f "$jar.new"
        exit 1
    fi
    chmod 0644 "$jar.new"
    mv "$jar.new" "$jar"
fi

# The .NET Core runtime, from PyPI's dotnetcore2 wheel (the wheel is checked against its
# sha256): $TOOLS/dotnetcore2-<ver>/dotnetcore2/bin/dotnet. Only on x86_64 (the one wheel).
dotnet=$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION/dotnetcore2/bin/dotnet
if [ "$(uname -m)" = x86_64 ] && [ ! -x "$dotnet" ]; then
    echo "installing the .NET Core runtime (PyPI dotnetcore2 $DOTNETCORE2_VERSION) into $TOOLS"
    tmp3=$(mktemp -d)
    trap 'rm -rf "${tmp:-}" "$tmp3"' EXIT
    if ! /usr/bin/python3 -m pip download --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
        -d "$tmp3" "dotnetcore2==$DOTNETCORE2_VERSION" >"$log" 2>&1; then
        cat "$log"
        exit 1
    fi
    whl=$(echo "$tmp3"/dotnetcore2-*.whl)
    if ! echo "$DOTNETCORE2_SHA256  $whl" | sha256sum -c --status; then
        echo "dotnetcore2 $DOTNETCORE2_VERSION from PyPI: sha256 $(sha256sum "$whl" | cut -d' ' -f1), expected $DOTNETCORE2_SHA256" >&2
        exit 1
    fi
    rm -rf "$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION.new"
    /usr/bin/python3 -m zipfile -e "$whl" "$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION.new"
    # zipfile keeps no modes: the host and the framework's executables and libraries need x
    find "$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION.new/dotnetcore2/bin" -type f \
        \( -name dotnet -o -name '*.so' -o -name createdump \) -exec chmod 0755 {} +
    rm -rf "$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION"
    mv "$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION.new" "$TOOLS/dotnetcore2-$DOTNETCORE2_VERSION"
fi
if [ -x "$dotnet" ]; then
    "$dotnet" --list-runtimes | grep -q "Microsoft.NETCore.App 3.1"
fi

# rbspy, from crates.io, built with cargo (its release binaries are not on a registry):
# $TOOLS/rbspy-<ver>/bin/rbspy. cargo's registry stays in CARGO_HOME (~/.cargo, cached by CI)
# and its build directory in $TOOLS/cargo-target, so a rebuild compiles only what changed.
rbspy=$TOOLS/rbspy-$RBSPY_VERSION/bin/rbspy
cargo=$(command -v cargo || echo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo")
if [ ! -x "$rbspy" ] && [ -x "$cargo" ]; then
    echo "building rbspy $RBSPY_VERSION (crates.io, cargo install) into $TOOLS"
    # Without rbspy's fat LTO and with 16 codegen units: 2 min instead of 5 cold on 2 cores
    # (a larger binary, the same profiler).
    if ! CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        "$cargo" install --quiet --locked rbspy --version "$RBSPY_VERSION" \
        --root "$TOOLS/rbspy-$RBSPY_VERSION" --target-dir "$TOOLS/cargo-target" >"$log" 2>&1; then
        cat "$log"
        exit 1
    fi
elif [ ! -x "$rbspy" ]; then
    echo "no cargo (looked on PATH and in ${CARGO_HOME:-$HOME/.cargo}/bin): rbspy is not built;"
    echo "--ruby-mode rbspy will report it missing and its tests skip"
fi
if [ -x "$rbspy" ]; then
    "$rbspy" --version | grep -q "$RBSPY_VERSION"
fi

# The perf-map addon for --nodejs-mode attach-maps, built against the installed Node's headers
# (nodedir /usr: the nodejs package ships /usr/include/node) for its major and this libc, cached
# per Node version, then placed in resources/node/linux-perf/<libc>/<major>/ of the checkout,
# where build/polyprof finds it and `make install` copies it from.
if command -v node >/dev/null && command -v npm >/dev/null && [ -f /usr/include/node/node.h ]; then
    node_ver=$(node -p 'process.versions.node')
    major=${node_ver%%.*}
    libc=glibc
    if ldd --version 2>&1 | grep -qi musl; then libc=musl; fi
    built=$TOOLS/linux-perf-$LINUX_PERF_VERSION/node-$node_ver-$libc/linux-perf.node
    if [ ! -f "$built" ]; then
        echo "building npm linux-perf $LINUX_PERF_VERSION for Node $node_ver ($libc) into $TOOLS"
        tmp2=$(mktemp -d)
        trap 'rm -rf "${tmp:-}" "$tmp2"' EXIT
        if ! (cd "$tmp2" && npm install --no-audit --no-fund --no-save --nodedir=/usr \
            --cache "$TOOLS/npm-cache" "linux-perf@$LINUX_PERF_VERSION" "nan@$NAN_VERSION") \
            >"$log" 2>&1; then
            cat "$log"
            exit 1
        fi
        mkdir -p "$(dirname "$built")"
        install -m 0644 "$tmp2/node_modules/linux-perf/build/Release/linux-perf.node" "$built.new"
        mv "$built.new" "$built"
    fi
    dest=$ROOT/resources/node/linux-perf/$libc/$major/linux-perf.node
    if ! cmp -s "$built" "$dest"; then
        install -D -m 0644 "$built" "$dest"
    fi
    node -e 'const m={exports:{}};process.dlopen(m,process.argv[1]);
        if(typeof m.exports.LinuxPerf!=="function")process.exit(1)' "$dest"
else
    echo "no node, npm or Node headers (/usr/include/node): the Node perf-map addon is not built;"
    echo "--nodejs-mode attach-maps will report it missing"
fi
