#!/usr/bin/env python3
"""Static checks of the layering (docs/ARCHITECTURE.md, "Layers"):

1. Includes only point down: base/ <- merge/ <- runtimes/ <- orchestrator/. A file may include
   its own layer and the layers below it; runtimes/<rt>/ may include runtimes/ and its own
   folder, not another runtime's. Every include ("" and <>) is resolved the way the compiler
   does (the including file's folder, then the tree's root, then build/ for generated headers)
   and normalised first, so "../orchestrator/cli.h" from base/ is orchestrator/cli.h; a path
   that leaves the tree, or a generated header that is not one of GENERATED, fails.
2. BPF code (bpf/ and every *.bpf.h) includes only bpf/ headers (vmlinux_min.h among them),
   libbpf's <bpf/...> headers, its own runtime folder's headers (a runtime's walker.bpf.h its
   walker_info.h) and the generated walker headers; only bpf/sampler.bpf.c includes a *.bpf.h.
3. Runtime names appear only in runtimes/<rt>/ and the registry (runtimes/registry.h): the code
   (comments stripped, string literals kept) of base/, merge/, orchestrator/, bpf/ and the
   shared folders of runtimes/ is searched for identifiers and words that contain a runtime's
   name (pp_java_perfmaps_cleanup names java). The names are the registry's own
   (PP_RUNTIME_LIST of runtimes/registry.h: a new runtime is checked at once) plus the other
   names of those runtimes below; the few reviewed exceptions are listed in ALLOW.

Prints one line per violation and "layers: N passed, N failed, 0 skipped"; exits 1 on any."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANK = {"base": 0, "merge": 1, "runtimes": 2, "orchestrator": 3}
# Folders of runtimes/ that are not a runtime: the native sampler, the symbolizer and the CFI
# unwinder's rows.
SHARED_RUNTIME_DIRS = {"system", "symbols", "unwind"}
REGISTRY = "runtimes/registry.h"
# Headers (and the protobuf code, merge/pprof_pb.c) the build generates into build/ (found there
# through -Ibuild).
GENERATED = {"sampler.skel.h", "ksym.skel.h", "flamegraph_template.h", "walkers_gen.h",
             "walkers_gen.bpf.h", "pprof.pb-c.h", "pprof.pb-c.c"}
# Other names of the registry's runtimes: their VMs, file formats and external profilers.
# A runtime's registry symbol is checked without being listed here.
ALIASES = ["jvm", "jfr", "cpython", "pyspy", "py-spy", "rbspy", "phpspy", "nodejs", "v8",
           "golang", "asprof", "async-profiler", ".net"]
# Reviewed exceptions: (file, substring of the line). Keep this list short and say why.
ALLOW = [
    # The notice of an option that only gProfiler's Java appids use, and its help text:
    # user-facing text about another product's behaviour.
    ("orchestrator/notices.c", "Java appids are"),
    ("orchestrator/notices.c", "not extended with JVM arguments"),
    ("orchestrator/cli_table.c", "JVM arguments to Java appids"),
    # gProfiler's host-metadata key (the server reads it by this name).
    ("orchestrator/hostinfo.c", '"python_version"'),
    # English, not the Go runtime.
    ("orchestrator/notices.c", "logs go to stderr"),
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


def registry_runtimes(root=ROOT):
    """The symbols of PP_RUNTIME_LIST's rows X(ID, symbol) in runtimes/registry.h."""
    text = open(os.path.join(root, REGISTRY), encoding="utf-8").read()
    m = re.search(r"#\s*define\s+PP_RUNTIME_LIST\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    if not m:
        raise SystemExit(f"check_layers: no PP_RUNTIME_LIST(X) in {REGISTRY}")
    names = re.findall(r"\bX\(\s*\w+\s*,\s*(\w+)\s*\)", m.group(1))
    if not names:
        raise SystemExit(f"check_layers: PP_RUNTIME_LIST of {REGISTRY} has no X(ID, symbol) row")
    return [n.lower() for n in names]


def name_matcher(runtimes):
    """A function giving the runtime name a code line contains, or None. A word (identifier,
    or word of a string literal) is split at '_', '-', digits and camelCase humps; a part names
    a runtime when it is the name, or, for names of 4 letters or more, starts with it
    (javaopts, Pythons) - "inode" or "goto" name none. Aliases with punctuation (py-spy, .net)
    are matched as words."""
    plain = [n for n in runtimes + ALIASES if re.fullmatch(r"[a-z0-9]+", n)]
    punct = [n for n in ALIASES if n not in plain]
    punct_re = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(p) for p in punct) + r")(?![\w-])",
                          re.IGNORECASE)
    part_re = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

    def match(line):
        m = punct_re.search(line)
        if m:
            return m.group(1)
        for word in re.findall(r"[A-Za-z0-9_]+", line):
            if word.startswith("PP_KIND_") and word in ("PP_KIND_NATIVE", "PP_KIND_COUNT",
                                                        "PP_KIND_ENUM_"):
                continue
            for chunk in word.split("_"):
                parts = [p.lower() for p in part_re.findall(chunk)]
                # a chunk that is all letters is also tried whole ("cpython", "rbspy")
                if chunk.isalnum():
                    parts.append(chunk.lower())
                for p in parts:
                    for n in plain:
                        if p == n or (len(n) >= 4 and p.startswith(n)):
                            return word
        return None

    return match


def layer_of(path):
    top = path.split("/")[0]
    return top if top in RANK else None


def runtime_dir(path):
    parts = path.split("/")
    if parts[0] == "runtimes" and len(parts) > 2 and parts[1] not in SHARED_RUNTIME_DIRS:
        return parts[1]
    return None


def is_bpf(path):
    return path.startswith("bpf/") or path.endswith(".bpf.h") or path.endswith(".bpf.c")


def sources(root=ROOT):
    for top in list(RANK) + ["bpf"]:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def resolve(path, inc, quoted, root=ROOT):
    """The include as the compiler finds it: ("tree", normalised path), ("generated", name),
    ("outside", normalised path) or ("system", inc)."""
    cands = []
    if quoted:
        cands.append(os.path.join(os.path.dirname(path), inc))
    cands.append(inc)
    for c in cands:
        norm = os.path.normpath(c)
        if os.path.exists(os.path.join(root, norm)):
            if norm.startswith("..") or os.path.isabs(norm):
                return "outside", norm
            return "tree", norm
    if os.path.normpath(inc) in GENERATED:
        return "generated", os.path.normpath(inc)
    if quoted:
        norm = os.path.normpath(os.path.join(os.path.dirname(path), inc))
        return "outside" if norm.startswith("..") else "missing", norm
    return "system", inc


def check_include(path, inc, quoted):
    """Violations (strings) of one include of path."""
    kind, target = resolve(path, inc, quoted)
    if kind == "outside":
        return [f"includes {inc}, which leaves the tree ({target})"]
    if kind == "missing":
        return [f"includes {inc}, which is neither in the tree nor generated"]
    if is_bpf(path):
        my_rt = runtime_dir(path)
        if kind == "system":
            return [] if inc.startswith("bpf/") else [
                f"includes <{inc}>: BPF code includes only libbpf's <bpf/...> headers"]
        if kind == "generated":
            return [] if target.startswith("walkers_gen") else [
                f"includes {inc}: BPF code includes only the generated walker headers"]
        ok = target.startswith("bpf/") or (my_rt and target.startswith(f"runtimes/{my_rt}/"))
        if not ok:
            return [f"includes {inc} ({target}): BPF code includes only bpf/ headers and its own "
                    "runtime folder's"]
        if target.endswith(".bpf.h") and path != "bpf/sampler.bpf.c":
            return [f"includes {inc}: only bpf/sampler.bpf.c includes *.bpf.h"]
        return []
    if kind != "tree":
        return []
    out = []
    me, other = layer_of(path), layer_of(target)
    if other is not None and me is not None and RANK[other] > RANK[me]:
        out.append(f"includes {inc} ({target}), a layer above {me}/")
    inc_rt = runtime_dir(target)
    if inc_rt and inc_rt != runtime_dir(path):
        out.append(f"includes {inc} ({target}): only runtimes/{inc_rt}/ may")
    if target.endswith((".bpf.h", ".bpf.c")):
        out.append(f"includes {inc}: BPF code, only bpf/sampler.bpf.c includes it")
    return out


def main():
    match = name_matcher(registry_runtimes())
    bad, checked = [], 0
    for path in sources():
        checked += 1
        text = open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()
        code = strip_comments(text)
        my_rt = runtime_dir(path)
        for lineno, line in enumerate(code.split("\n"), 1):
            m = re.match(r'\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', line)
            if m:
                inc = m.group(1) or m.group(2)
                for v in check_include(path, inc, m.group(1) is not None):
                    bad.append(f"{path}:{lineno}: {v}")
                continue
            if my_rt or path == REGISTRY:
                continue
            # an allowed text is blanked out: the rest of its line is still checked
            for f, s in ALLOW:
                if path == f:
                    line = line.replace(s, " " * len(s))
            w = match(line)
            if w:
                raw = text.split("\n")[lineno - 1]
                bad.append(f"{path}:{lineno}: names a runtime ({w}): {raw.strip()[:100]}")
    for b in bad:
        print(b)
    failed = len({b.split(":")[0] for b in bad})
    print(f"layers: {checked - failed} passed, {failed} failed, 0 skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
