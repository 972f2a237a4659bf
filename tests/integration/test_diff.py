"""`polyprof diff BASE.col TARGET.col -o OUT.html` on two real sessions of the C fixture: in the
first hot_a and hot_b share its CPU time 1:1, in the second 9:1, so hot_a's share grows from
about 50 % to about 90 % and hot_b's falls as much. The text table puts hot_a on top of the
functions that grew and hot_b on top of those that shrank, with the shares of the .col files;
the differential flame graph page renders in headless Chromium without a JavaScript error,
hot_a red and hot_b blue, both counts on hover, and names as text, never as HTML."""
import json
import re
from pathlib import Path

import pytest

from browser import Browser
from conftest import (App, POLYPROF, Profile, assert_not_starved, assert_share, run_polyprof)

FRAME_JS = "Array.from(document.querySelectorAll('#chart .f'))"
RATIOS = (1, 9)  # hot_a's work per unit of hot_b's: base, then target


@pytest.fixture(scope="module")
def sessions(appdir, tmp_path_factory):
    """Two 5 s sessions at 499 Hz (--pids) of pp_hot_c, the first at 1:1, the second at 9:1."""
    d = tmp_path_factory.mktemp("diff")
    cols = []
    for ratio in RATIOS:
        out = d / f"ratio{ratio}"
        app = App([str(appdir / "pp_hot_c"), "0", str(ratio)])
        try:
            run_polyprof("-d", 5, "-f", 499, "-o", out, "--pids", app.pid)
        finally:
            app.stop()
        cols.append((out / "last_profile.col").resolve())
    return d, cols


def inclusive_share(prof, name):
    """Percent of the profile's samples whose stack holds the function, as polyprof diff counts
    it: the frames below the index, container and comm."""
    total = sum(c for _, c in prof.stacks)
    return 100.0 * sum(c for f, c in prof.stacks if name in f[3:]) / total, total


def table(text, title):
    """The rows of one table of the diff's output: [(base %, target %, change, function)]."""
    part = text.split(title, 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in part.splitlines()[2:]:
        m = re.match(r"^\s+([\d.]+)%\s+([\d.]+)%\s+([+-][\d.]+)\s+(.*)$", line)
        if not m:
            break
        rows.append((float(m.group(1)), float(m.group(2)), float(m.group(3)), m.group(4)))
    return rows


@pytest.fixture(scope="module")
def diffed(sessions):
    d, (base, target) = sessions
    page = d / "diff.html"
    r = run_polyprof("diff", base, target, "-o", page, "--top", 5)
    return d, base, target, page, r


def test_grown_function_tops_the_grew_table(diffed):
    _, base, target, page, r = diffed
    b, t = Profile(base), Profile(target)
    share_b, n_b = inclusive_share(b, "hot_a")
    share_t, n_t = inclusive_share(t, "hot_a")
    # the sessions did what the test needs: hot_a about 50 % in the base, about 90 % in the target
    assert_share(share_b, n_b, 50, "hot_a in the base session")
    assert_share(share_t, n_t, 90, "hot_a in the target session")
    assert_not_starved(min(n_b, n_t), 300, "a diff of two sessions")

    grew = table(r.stdout, "Grew (top 5):")
    shrank = table(r.stdout, "Shrank (top 5):")
    assert grew and grew[0][3] == "hot_a", r.stdout
    assert shrank and shrank[0][3] == "hot_b", r.stdout
    assert len(grew) <= 5 and len(shrank) <= 5
    # the shares are the .col files' own, each normalised by its own total
    bs, ts, change, _ = grew[0]
    assert abs(bs - share_b) < 0.006 and abs(ts - share_t) < 0.006, (grew[0], share_b, share_t)
    assert abs(change - (share_t - share_b)) < 0.011
    hb, ht = inclusive_share(b, "hot_b")[0], inclusive_share(t, "hot_b")[0]
    assert abs(shrank[0][0] - hb) < 0.006 and abs(shrank[0][1] - ht) < 0.006
    assert f"Differential flame graph: {page}" in r.stdout
    assert r.stdout.encode("utf-8").decode("utf-8") == r.stdout


def test_diff_page_in_chromium(diffed, tmp_path):
    _, base, target, page, _ = diffed
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    with Browser(page.as_uri()) as b:
        b.wait_js("document.body.dataset.ready === '1'")
        errors = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
        assert not errors, errors
        assert "differential" in b.eval("document.title")

        def widest(name):
            fs = b.eval(f"""{FRAME_JS}.filter(e => e.textContent === {name!r}).map(e => {{
                const r = e.getBoundingClientRect();
                return {{x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width,
                         bg: getComputedStyle(e).backgroundColor,
                         delta: Number(e.dataset.delta)}};
            }})""")
            assert fs, f"no rendered frame {name!r}"
            return max(fs, key=lambda f: f["w"])

        def rgb(s):
            return tuple(int(x) for x in re.findall(r"\d+", s)[:3])

        a, hb = widest("hot_a"), widest("hot_b")
        r_, g_, b_ = rgb(a["bg"])
        assert a["delta"] > 0.2 and r_ == 255 and g_ == b_ and g_ < 150, ("hot_a not red", a)
        r_, g_, b_ = rgb(hb["bg"])
        assert hb["delta"] < -0.2 and b_ == 255 and r_ == g_ and r_ < 150, ("hot_b not blue", hb)

        # Hover: the target's and the base's counts, and the change.
        b.move(a["x"], a["y"])
        tip = b.wait_js("document.getElementById('tip').style.display === 'block' && "
                        "document.getElementById('tip').innerText")
        assert re.search(r"[\d,]+ samples?, [\d.]+% of all", tip), tip
        m = re.search(r"base: [\d,]+ samples?, ([\d.]+)% of all; change: \+([\d.]+) points", tip)
        assert m, tip

        # The tables, in the page too.
        first = b.eval("""['grew', 'shrank'].map(id =>
            document.querySelector('#' + id + ' tbody tr td.name').textContent)""")
        assert first == ["hot_a", "hot_b"], first
        assert not b.eval("document.getElementById('diff').hidden")
        b.screenshot(tmp_path / "diff.png")
        urls = b.requested_urls()
        assert urls and all(u.startswith("file:") for u in urls), urls
        errors = [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]
        assert not errors, errors
    assert (tmp_path / "diff.png").read_bytes().startswith(b"\x89PNG")


def test_hostile_names_render_as_text(sessions, tmp_path):
    """A frame named like markup shows as its text in the graph and in the table."""
    _, (base, _) = sessions
    header = base.read_text(encoding="utf-8").split("\n", 1)[0]
    evil = "<img src=x onerror=\"document.body.dataset.pwned='1'\">"
    (tmp_path / "b.col").write_text(f"{header}\n0;;app;main;f 10")
    (tmp_path / "t.col").write_text(f"{header}\n0;;app;main;f 5\n0;;app;main;{evil} 5")
    page = tmp_path / "evil.html"
    r = run_polyprof("diff", tmp_path / "b.col", tmp_path / "t.col", "-o", page)
    assert evil in r.stdout
    with Browser(page.as_uri()) as b:
        b.wait_js("document.body.dataset.ready === '1'")
        assert b.eval(f"{FRAME_JS}.some(e => e.textContent === {evil!r})")
        assert b.eval("document.querySelector('#grew td.name').textContent") == evil
        assert not b.eval("document.body.dataset.pwned"), "a name ran as HTML"
        assert not b.eval("document.querySelector('#chart img, #diff img')")


def test_garbage_and_missing_files(sessions, tmp_path):
    _, (base, _) = sessions
    garbage = tmp_path / "garbage.col"
    garbage.write_bytes(Path(POLYPROF).read_bytes()[:4096])
    r = run_polyprof("diff", base, garbage, check=False)
    assert r.returncode == 2, r.stderr
    assert "is not a collapsed profile: line 1" in r.stderr and "Traceback" not in r.stderr
    r = run_polyprof("diff", base, tmp_path / "missing.col", check=False)
    assert r.returncode == 1 and "cannot read target profile" in r.stderr, r.stderr
    r = run_polyprof("diff", base, check=False)
    assert r.returncode == 2 and "usage: polyprof diff" in r.stderr, r.stderr
    r = run_polyprof("diff", "--help")
    assert "differential flame graph" in r.stdout
    json.dumps(r.stdout)  # text
