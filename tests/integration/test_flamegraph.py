"""The local HTML flame graph (gProfiler's -o output): profile_<time>.html beside each .col and
last_flamegraph.html, opened in a real browser (headless Chromium, Debian's package) from the
file alone: the frames of a profiled C program and a Python program render as elements, search
marks the matching frames, a click zooms, hovering shows counts and percentages, colours follow
the runtime of each frame, and the page asks for nothing over the network."""
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from browser import Browser
from conftest import APPS, App, last_profile, run_polyprof

FRAME_JS = "Array.from(document.querySelectorAll('#chart .f'))"


def frames(b, name):
    """Rendered frames with this text: [{x, y, w, kind, bg, cls}] (x, y: the centre)."""
    return b.eval(f"""{FRAME_JS}.filter(e => e.textContent === {name!r}).map(e => {{
        const r = e.getBoundingClientRect();
        return {{x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width,
                 kind: e.dataset.kind, bg: getComputedStyle(e).backgroundColor,
                 cls: e.className}};
    }})""")


def widest(b, name):
    fs = frames(b, name)
    assert fs, f"no rendered frame {name!r}"
    return max(fs, key=lambda f: f["w"])


def hue(rgb):
    r, g, b = (int(x) / 255 for x in re.findall(r"\d+", rgb)[:3])
    mx, mn = max(r, g, b), min(r, g, b)
    if mx == mn:
        return None
    if mx == r:
        h = (g - b) / (mx - mn) % 6
    elif mx == g:
        h = (b - r) / (mx - mn) + 2
    else:
        h = (r - g) / (mx - mn) + 4
    return h * 60


@pytest.fixture(scope="module")
def profiled(appdir, tmp_path_factory):
    """One 4 s session of the C fixture and a Python fixture (built-in sampler), --pids."""
    d = tmp_path_factory.mktemp("fg")
    apps = []
    try:
        apps.append(App([str(appdir / "pp_hot_c")]))
        apps.append(App([sys.executable, str(APPS / "pyhot.py")]))
        pids = ",".join(str(a.pid) for a in apps)
        r = run_polyprof("-d", 4, "-f", 199, "-o", d, "--pids", pids, "--python-mode", "builtin")
    finally:
        for a in apps:
            a.stop()
    return d, r


def test_html_beside_each_col(profiled):
    d, r = profiled
    col = Path(os.readlink(d / "last_profile.col"))
    html = Path(os.readlink(d / "last_flamegraph.html"))
    assert html.name == col.name[:-4] + ".html", "same name as the .col, relative link"
    assert (d / html).is_file()
    assert f"Saved flamegraph to {d / html}" in r.stderr
    text = (d / html).read_text()
    assert text.startswith("<!DOCTYPE html>")
    # self-contained: the page (without the profile's data) names nothing outside the file
    page = re.sub(r'(<script type="application/json" id="pp-data">).*?(</script>)', r"\1\2",
                  text, flags=re.S)
    assert len(page) < len(text) - 1000, "the data is in the pp-data element"
    assert not re.search(r"(src|href)\s*=", page), "external resource"
    assert "http:" not in page and "https:" not in page
    # gProfiler's header field stays null (docs/decisions.md)
    assert last_profile(d).header["flamegraph_html"] is None


def test_no_flamegraph(tmp_path):
    r = run_polyprof("-d", 1, "-o", tmp_path, "--no-flamegraph")
    assert list(tmp_path.glob("*.col")) and (tmp_path / "last_profile.col").exists()
    assert not list(tmp_path.glob("*.html"))
    assert not os.path.lexists(tmp_path / "last_flamegraph.html")
    assert "Saved flamegraph" not in r.stderr


def test_flamegraph_in_chromium(profiled, tmp_path):
    d, _ = profiled
    prof = last_profile(d)
    # The page alone, in a directory of its own: it needs nothing else.
    page = tmp_path / "alone.html"
    shutil.copyfile(d / "last_flamegraph.html", page)
    total = sum(c for _, c in prof.stacks)

    with Browser(page.as_uri()) as b:
        b.wait_js("document.body.dataset.ready === '1'")

        # Frames render as elements: the C program's functions and the Python functions.
        for name in ("pp_hot_c", "main", "hot_a", "hot_b"):
            assert frames(b, name), f"{name} not rendered"
        pyframes = b.eval(f"{FRAME_JS}.filter(e => /^(Worker\\.)?hot_a \\(.*pyhot\\.py:\\d+.*\\)_\\[p\\]$/"
                          ".test(e.textContent)).length")
        assert pyframes >= 1, "Python hot_a frame not rendered"

        # Colours by runtime from the suffix: native red, Python blue, kernel orange, the
        # process level grey.
        assert widest(b, "hot_a")["kind"] == "native"
        assert widest(b, "pp_hot_c")["kind"] == "pseudo"
        assert hue(widest(b, "hot_a")["bg"]) <= 15
        kinds = b.eval(f"""{FRAME_JS}.filter(e => e.textContent.endsWith('_[p]') ||
                                                  e.textContent.endsWith('_[k]'))
                           .map(e => [e.textContent.slice(-4), e.dataset.kind,
                                      getComputedStyle(e).backgroundColor])""")
        assert any(s == "_[p]" for s, _, _ in kinds)
        for suffix, kind, bg in kinds:
            if suffix == "_[p]":
                assert kind == "python" and 200 <= hue(bg) <= 220, (suffix, kind, bg)
            else:
                assert kind == "kernel" and 24 <= hue(bg) <= 38, (suffix, kind, bg)

        # The header's metadata is shown.
        meta = b.eval("document.getElementById('meta').innerText")
        assert prof.header["metadata"]["hostname"] in meta
        assert prof.header["metadata"]["current_time"] in meta
        assert "199 Hz" in meta and f"samples: {total:,}" in meta, meta

        # Hover: counts and percentages, equal to the .col's.
        hot = widest(b, "hot_a")
        b.move(hot["x"], hot["y"])
        tip = b.wait_js("document.getElementById('tip').style.display === 'block' && "
                        "document.getElementById('tip').innerText")
        path = b.eval(f"""(() => {{
            const es = {FRAME_JS}.filter(e => e.textContent === 'hot_a');
            es.sort((a, b) => b.ppNode.value - a.ppNode.value);
            const p = [];
            for (let n = es[0].ppNode; n.parent; n = n.parent) p.unshift(n.name);
            return p.map(i => JSON.parse(document.getElementById('pp-data').textContent)
                               .names[i]);
        }})()""")
        want = sum(c for f, c in prof.stacks if f[2:2 + len(path)] == path)
        m = re.search(r"([\d,]+) samples?, ([\d.]+)% of all", tip)
        assert m, tip
        assert int(m.group(1).replace(",", "")) == want, (tip, path, want)
        assert abs(float(m.group(2)) - 100.0 * want / total) < 0.006
        assert "hot_a" in tip and "[native]" in tip

        # Search: typed into the box; matching frames are marked, the others are not, and the
        # matched samples are those of the stacks holding a match.
        box = b.eval("(() => { const r = document.getElementById('search')"
                     ".getBoundingClientRect(); return [r.x + 20, r.y + r.height / 2]; })()")
        b.click(*box)
        b.type_text("^hot_[ab]$")
        b.key("Enter", "Enter", 13)
        b.wait_js("document.querySelectorAll('#chart .f.match').length > 0")
        marked = b.eval(f"{FRAME_JS}.filter(e => e.classList.contains('match'))"
                        ".map(e => e.textContent)")
        assert set(marked) == {"hot_a", "hot_b"}, marked
        unmarked = b.eval(f"{FRAME_JS}.filter(e => !e.classList.contains('match'))"
                          ".map(e => e.textContent)")
        assert "main" in unmarked and "hot_a" not in unmarked
        matched = int(b.eval("document.getElementById('matched').dataset.samples"))
        assert matched == sum(c for f, c in prof.stacks
                              if any(x in ("hot_a", "hot_b") for x in f[3:]))
        b.screenshot(tmp_path / "flamegraph-search.png")

        # Click-to-zoom: hot_a takes the whole width, its sibling hot_b is gone, the callers
        # stay above it.
        width = b.eval("document.getElementById('chart').clientWidth")
        hot = widest(b, "hot_a")
        b.click(hot["x"], hot["y"])
        b.wait_js(f"{FRAME_JS}.some(e => e.textContent === 'hot_a' && "
                  f"e.getBoundingClientRect().width >= {width} - 2)")
        assert not frames(b, "hot_b"), "hot_b outside the zoomed frame"
        assert "anc" in widest(b, "main")["cls"]
        b.screenshot(tmp_path / "flamegraph-zoom.png")
        b.key("Escape", "Escape", 27)
        b.wait_js(f"{FRAME_JS}.some(e => e.textContent === 'hot_b')")

        urls = b.requested_urls()
        assert urls and all(u.startswith("file:") for u in urls), urls

    for shot in ("flamegraph-search.png", "flamegraph-zoom.png"):
        data = (tmp_path / shot).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10000
    print(f"screenshots: {tmp_path}")
