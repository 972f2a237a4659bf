#!/usr/bin/env python3
"""Static checks of the layering (docs/ARCHITECTURE.md, "Layers"):

1. Includes only point down: base/ <- merge/ <- runtimes/ <- orchestrator/. A file may include
   its own layer and the layers below it; runtimes/<rt>/ may include runtimes/ and its own
   folder, not another runtime's.
2. Runtime names appear only in runtimes/<rt>/, the registry (runtimes/registry.h) and bpf/:
   the code (comments stripped) of base/, merge/, orchestrator/ and the shared files of
   runtimes/ is searched for runtime words; the few reviewed exceptions are listed below.

Prints one line per violation and "layers: N passed, N failed, 0 skipped"; exits 1 on any."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANK = {"base": 0, "merge": 1, "runtimes": 2, "orchestrator": 3}
# Folders of runtimes/ that are not a runtime: the native sampler, the symbolizer and the native
# unwinder's rows and per-file cache.
SHARED_RUNTIME_DIRS = {"system", "symbols", "unwind"}
WORDS = re.compile(
    r"\b(java|jvm|jfr|python|cpython|pyspy|py-spy|ruby|rbspy|php|phpspy|dotnet|\.net|"
    r"node|nodejs|v8|golang|asprof|async-profiler)\b|\bPP_KIND_(?!NATIVE\b|COUNT\b|ENUM_\b)\w+",
    re.IGNORECASE)
# Reviewed exceptions: (file, substring of the line). Keep this list short and say why.
ALLOW = [
    # gProfiler's lock file name and the notice of an option that only gProfiler's Java appids
    # use: user-facing text about another product's behaviour.
    ("orchestrator/notices.c", "Java appids are"),
    ("orchestrator/notices.c", "not extended with JVM arguments"),
    ("orchestrator/cli_table.c", "JVM arguments to Java appids"),
]


def strip_comments(text):
    """C source without comments; string literals kept, line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def layer_of(path):
    top = path.split("/")[0]
    return top if top in RANK else None


def runtime_dir(path):
    parts = path.split("/")
    if parts[0] == "runtimes" and len(parts) > 2 and parts[1] not in SHARED_RUNTIME_DIRS:
        return parts[1]
    return None


def sources():
    for top in RANK:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def main():
    bad, checked = [], 0
    for path in sources():
        checked += 1
        text = open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()
        code = strip_comments(text)
        me, my_rt = layer_of(path), runtime_dir(path)
        for lineno, line in enumerate(code.split("\n"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                inc = m.group(1)
                other = layer_of(inc)
                if other is not None and RANK[other] > RANK[me]:
                    bad.append(f"{path}:{lineno}: includes {inc}, a layer above {me}/")
                inc_rt = runtime_dir(inc)
                if inc_rt and inc_rt != my_rt:
                    bad.append(f"{path}:{lineno}: includes {inc}: only runtimes/{inc_rt}/ may")
                continue
            if my_rt or path == "runtimes/registry.h":
                continue
            for w in WORDS.finditer(line):
                raw = text.split("\n")[lineno - 1]
                if any(path == f and s in raw for f, s in ALLOW):
                    continue
                bad.append(f"{path}:{lineno}: names a runtime ({w.group(0)}): "
                           f"{raw.strip()[:100]}")
                break
    for b in bad:
        print(b)
    print(f"layers: {checked - len({b.split(':')[0] for b in bad})} passed, "
          f"{len({b.split(':')[0] for b in bad})} failed, 0 skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
