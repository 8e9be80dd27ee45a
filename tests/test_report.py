"""`parc report`: the page's content, its determinism and self-containment, and a real browser.

The browser tests load each page in Debian's headless Chromium with a fresh profile: the DOM
after load must hold the pictures (and the inline script must have run: it marks the body), the
console must stay silent (the page's Content-Security-Policy turns any attempt to fetch something
into a console error, and Chromium logs console messages to stderr with --enable-logging), and
the screenshot must be a real picture with the stage colours in it.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from parc.pipeline import compile_path, compile_text
from parc.report import DETAIL_GPUS, build_page, stage_colour
from parc.svg import el, number, render

from .conftest import ROOT, run_cli

COMPLETE = [p.relative_to(ROOT) for p in sorted((ROOT / "specs").glob("*.par")) if "search" not in p.stem]


@pytest.fixture(autouse=True)
def in_root(monkeypatch):
    """Specs are named relative to the project's root, as a user would type them."""
    monkeypatch.chdir(ROOT)


def page_of(name: str) -> str:
    compilation = compile_path(f"specs/{name}.par")
    assert compilation.ok, compilation.diagnostics
    return build_page(compilation)


# ---------------------------------------------------------------------------------------------
# The SVG writer


def test_writer_escapes_every_string():
    tree = el("g", {"data-x": 'a"<b>&'}, el("title", None, "</title><script>alert(1)</script>"))
    text = render(tree)
    assert text == ('<g data-x="a&quot;&lt;b&gt;&amp;"><title>&lt;/title&gt;&lt;script&gt;alert(1)'
                    '&lt;/script&gt;</title></g>')
    with pytest.raises(ValueError):
        render(el("script", None, "x = '</script>'"))


def test_numbers_are_stable_text():
    assert [number(v) for v in (1, 1.0, 1.005, 2.5, -0.001, 1 / 3, 1e-9)] == ["1", "1", "1", "2.5", "0", "0.33", "0"]


# ---------------------------------------------------------------------------------------------
# The page as text


@pytest.mark.parametrize("spec", COMPLETE, ids=[p.stem for p in COMPLETE])
def test_page_is_deterministic_and_self_contained(spec):
    first = build_page(compile_path(str(spec)))
    assert first == build_page(compile_path(str(spec)))
    # Nothing from elsewhere: no URL but the SVG namespace, no src/href attributes, no imports.
    urls = set(re.findall(r"https?://[^\s\"')<>]+", first))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"\s(src|href)=", first)
    assert "@import" not in first and "@font-face" not in first
    assert set(re.findall(r"url\(([^)]*)\)", first)) <= {"#idle"}
    assert "default-src 'none'" in html.unescape(first)
    assert not re.search(r"20\d\d-\d\d-\d\d|\d\d:\d\d:\d\d", first), "a timestamp in the page"
    assert str(ROOT) not in first, "an absolute path in the page"


@pytest.mark.parametrize("spec", COMPLETE, ids=[p.stem for p in COMPLETE])
def test_every_picture_is_there(spec):
    from parc.schedule import drawable_microbatches, rank_orders

    compilation = compile_path(str(spec))
    plan = compilation.plan
    page = build_page(compilation)
    world = plan.cluster.world_size
    assert page.count('<g class="gpu"') == min(world, DETAIL_GPUS // plan.cluster.gpus_per_node
                                               * plan.cluster.gpus_per_node if world > DETAIL_GPUS else world)
    pp = plan.layout.degree("pp") or 1
    v = plan.layout.pp.virtual_stages or 1
    schedule = plan.layout.pp.schedule
    shown = drawable_microbatches(schedule, pp, v, plan.training.grad_accum, 160 * pp)
    blocks = sum(len(a) for a in rank_orders(schedule, pp, v, shown))
    assert page.count('<g class="op op-') == blocks
    assert "Blocks are placed with the time model's per-chunk times" in page
    assert page.count('<g class="bar">') == pp
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in page and 'class="steptime"' in page
    for stage in range(min(pp, 3)):
        assert f'fill="{stage_colour(stage, pp)}"' in page


def test_a_16k_gpu_layout_is_aggregated():
    page = page_of("llama3-405b-128k")
    assert page.count('<g class="gpu"') == DETAIL_GPUS
    assert page.count('<g class="node">') == 2048
    assert "16,384 GPUs are too many to draw one by one" in page
    assert "one cell per node for all 2,048 nodes" in page
    assert len(page) < 1_500_000


def test_groups_are_outlined_or_said_to_be_strided():
    tiny = page_of("tiny")
    assert tiny.count('class="group-tp"') == 4  # 8 ranks, tp 2
    mixtral = page_of("mixtral-8x7b-5d")
    assert "cp groups are strided (rank distance 2)" in mixtral and 'class="group-cp"' not in mixtral
    assert mixtral.count('class="group-tp"') == 128
    deepseek = page_of("deepseek-v3-like")
    assert deepseek.count('class="group-ep"') == 8  # ranks 0-511: 8 groups of 64 consecutive ranks
    hover = re.search(r'data-info="(rank 9 [^"]*)"', mixtral)[1]
    assert hover == "rank 9 (node 1, gpu 1): tp 1, cp 0, dp 2, pp 0; ep 4 (group of ranks 1-15 step 2)"


def test_strings_from_the_spec_are_escaped(tmp_path):
    weird = tmp_path / 'a<b>&"c.par'
    weird.write_text((ROOT / "specs" / "tiny.par").read_text(encoding="utf-8"), encoding="utf-8")
    page = build_page(compile_path(str(weird)))
    assert "a<b>" not in page and "a&lt;b&gt;&amp;" in page


def test_cli_writes_the_page_and_refuses_holes(tmp_path):
    out = tmp_path / "r.html"
    result = run_cli("report", "specs/tiny.par", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_text(encoding="utf-8") == page_of("tiny")
    result = run_cli("report", str(ROOT / "specs" / "llama3-70b-search.par"), "-o", str(tmp_path / "x.html"))
    assert result.exit_code == 1 and "error[E0218]: cannot draw a report for a spec with open holes" in result.stderr
    assert not (tmp_path / "x.html").exists()
    bad = compile_text("tp 2 x\n", path="bad.par")
    assert not bad.ok
    (tmp_path / "bad.par").write_text("tp 2 x\n", encoding="utf-8")
    result = run_cli("report", str(tmp_path / "bad.par"), "-o", str(tmp_path / "y.html"))
    assert result.exit_code == 1 and not (tmp_path / "y.html").exists()
    result = run_cli("report", "--help")
    assert "parc report specs/llama3-405b.par -o report.html" in result.stdout


def test_report_files_are_0644_like_compiles(tmp_path, monkeypatch):
    """Issue 17: the report was written 0600 (mkstemp's mode) while compile writes 0644."""
    out = tmp_path / "r.html"
    assert run_cli("report", "specs/tiny.par", "-o", str(out)).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o644
    spec = ROOT / "specs" / "tiny.par"
    monkeypatch.chdir(tmp_path)
    result = run_cli("report", str(spec))
    assert result.exit_code == 0, result.stderr
    default = tmp_path / "out" / "tiny-report.html"
    assert "wrote out/tiny-report.html" in result.stderr
    assert default.stat().st_mode & 0o777 == 0o644
    assert run_cli("compile", str(spec), "-o", str(tmp_path / "job")).exit_code == 0
    assert (tmp_path / "job" / "plan.json").stat().st_mode & 0o777 == 0o644


# ---------------------------------------------------------------------------------------------
# A real browser


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("Chromium is not installed (`apt-get install chromium`; .ci/run installs it)")


def browse(page: Path, tmp: Path, *mode: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.iterdir()))}"
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *mode, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_the_console_check_can_fail(tmp_path):
    """The harness itself: a page that logs, throws and fetches is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
                    'script-src \'unsafe-inline\'"><body><script>console.error("boom"); '
                    'fetch("https://example.invalid/x"); missing();</script>', encoding="utf-8")
    messages = console_messages(browse(page, tmp_path, "--dump-dom").stderr)
    text = "\n".join(messages)
    assert "boom" in text and "missing is not defined" in text and "Content Security Policy" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny", "mixtral-8x7b-5d", "llama3-405b-128k"])
def test_page_in_headless_chromium(name, tmp_path):
    from PIL import Image

    page = tmp_path / f"{name}.html"
    html = page_of(name)
    page.write_text(html, encoding="utf-8")
    loaded = browse(page, tmp_path, "--dump-dom")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert console_messages(loaded.stderr) == []
    dom = loaded.stdout
    assert 'data-ready="1"' in dom, "the inline script did not run to its end"
    for picture in ("grid", "timeline", "memory", "steptime"):
        assert f'class="{picture}"' in dom
    stages = compile_path(str(ROOT / "specs" / f"{name}.par")).plan.layout.degree("pp") or 1
    assert len(re.findall(r'<tr data-stage="\d+">', dom)) == stages > 0, "a stage's peak moment is missing"
    assert dom.count('class="gpu"') == html.count('class="gpu"') > 0
    assert dom.count('class="op op-') == html.count('class="op op-') > 0

    shot = tmp_path / f"{name}.png"
    taken = browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1200,1600")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert console_messages(taken.stderr) == []
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 1600)
    colours = image.getcolors(maxcolors=1 << 20)
    assert len(colours) > 200, "a blank or nearly blank screenshot"
    white = sum(n for n, c in colours if c == (255, 255, 255))
    assert white < 0.9 * image.size[0] * image.size[1]
    present = {c for _, c in colours}
    pp = compile_path(str(ROOT / "specs" / f"{name}.par")).plan.layout.degree("pp")
    assert _hsl_rgb(stage_colour(0, pp)) in present or any(
        _close(_hsl_rgb(stage_colour(0, pp)), c) for c in present), "stage 0's colour is not on screen"


def _hsl_rgb(text: str) -> tuple[int, int, int]:
    """A CSS colour as RGB (the report writes #rrggbb)."""
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))


def _close(a, b) -> bool:
    return all(abs(x - y) <= 2 for x, y in zip(a, b, strict=True))


def test_report_and_diff_do_not_import_torch(tmp_path):
    """The `parc` command never imports torch (nor numpy, nor pygls outside `parc lsp`)."""
    import sys

    probe = ("import sys\nfrom parc.cli import main\n"
             "try:\n    main(sys.argv[1:], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
             "print('IMPORTED:' + ','.join(sorted(m for m in sys.modules "
             "if m.split('.')[0] in ('torch', 'numpy', 'pygls'))))\n")
    for args in (["report", "specs/tiny.par", "-o", str(tmp_path / "r.html")],
                 ["diff", "specs/tiny.par", "specs/mixtral-8x7b-5d.par"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert "IMPORTED:\n" in done.stdout, (args, done.stdout[-300:], done.stderr[-300:])


def _reference_font():
    """Text widths measured with a real font, not the report's own estimate: DejaVu Sans (what
    Chromium draws system-ui with on Debian), else Pillow's bundled sans."""
    from PIL import ImageFont

    dejavu = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    return ImageFont.truetype(str(dejavu), 10) if dejavu.exists() else ImageFont.load_default(size=10)


LABELLED = re.compile(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*/>'
                      r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" class="blocklabel"[^>]*>([^<]*)</text>')


@pytest.mark.parametrize("spec", COMPLETE, ids=[p.stem for p in COMPLETE])
def test_no_label_overflows_its_segment(spec):
    """Issue 17: "tp exposed 8.1%" ran over its segment of the step bar. Every label inside a
    block or bar segment, measured in a real font, stays inside its rectangle."""
    font = _reference_font()
    page = build_page(compile_path(str(spec)))
    labels = LABELLED.findall(page)
    assert labels
    for x, width, centre, text in labels:
        x, width, centre = float(x), float(width), float(centre)
        measured = font.getlength(html.unescape(text))
        assert abs(centre - (x + width / 2)) < 0.02, text
        assert measured <= width, f"`{text}` is {measured:.1f} px in a {width:.1f} px segment"


def test_narrow_segments_keep_a_short_label_and_stage_0_backwards_get_numbers(tmp_path):
    import json

    from parc.human import percent

    # llama3-405b under 1F1B, whose exposed tp is a narrow segment (the shipped spec interleaves)
    spec = (ROOT / "specs/llama3-405b.par").read_text()
    start = spec.index("  schedule interleaved-1f1b")
    end = spec.index("\n}", start)
    variant = tmp_path / "llama3-405b.par"
    variant.write_text(spec[:start] + "  schedule 1f1b\n  split [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]"
                       + spec[end:])
    report = json.loads(run_cli("explain", str(variant), "--format", "json").stdout)
    tp = percent(report["time"]["exposed_comm_seconds"]["tp"] / report["time"]["step_seconds"])
    compilation = compile_path(str(variant))
    assert compilation.ok, compilation.diagnostics
    page = build_page(compilation)
    bar = page[page.index('class="steptime"'):]
    # the segment's label: full when it is wide enough (parc's tp traffic as the job issues it
    # makes it 14 % of this step), short or the share alone when narrow; never without its share
    labels = (f'>tp exposed {tp}</text>', f'>tp {tp}</text>', f'>{tp}</text>')
    assert any(label in bar for label in labels), f"the tp segment lost its share ({tp})"
    ops = re.findall(r'<g class="op op-B"><title>stage 0: [^,]*, micro-batch (\d+)[^<]*</title><rect [^>]*/>'
                     r'(<text[^>]*>(\d+)</text>)?', page)
    assert ops
    first = [m for m, _, label in ops if int(m) < 10]
    assert first and all(label == m for m, _, label in ops if int(m) < 10)


def test_the_header_card_counts_allowed_warnings():
    """Issue 17: the card said "0 / 0 errors / warnings" while Checks listed an allowed W0323
    (and, since the memory model's error band, an allowed W0410)."""
    page = page_of("llama3-405b")
    assert "<b>0 / 2</b><span>errors / warnings (2 allowed)</span>" in page


def test_an_at_risk_fit_reads_fits_at_risk_in_the_page():
    """W0410: the memory verdict and the peak card say "at risk", drawn as a warning; a layout
    clear of the band keeps a plain "fits"."""
    page = page_of("llama3-405b")
    assert '<span class="bad">fits (at risk)</span>' in page
    assert "usable, at risk</span>" in page
    clear = page_of("gpt3-175b")
    assert '<span class="ok">fits</span>' in clear and "at risk" not in clear


def test_one_bubble_figure_in_the_page(monkeypatch):
    """The header card, the step bar and the schedule's caption give the bubble as explain does."""
    import json

    report = json.loads(run_cli("explain", "specs/llama3-405b.par", "--format", "json").stdout)
    from parc.human import percent

    share = percent(report["time"]["bubble_share"])
    page = page_of("llama3-405b")
    assert f"<b>{share}</b><span>pipeline bubble (idle share of the step)</span>" in page
    assert f">bubble {share}</text>" in page
    assert f"the bubble, idle share of the whole step, is {share}" in page
    assert "of busy time" not in page


# Colour vision: Machado, Oliveira and Fernandes (2009), full severity, on linear RGB; then CIELAB
# (D65) and the CIE76 distance. Written out here, independent of the report's own palette code.
CVD = {
    "normal": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protan": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deutan": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritan": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}


def _lab(rgb: tuple[int, int, int], vision: str) -> tuple[float, float, float]:
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    m = CVD[vision]
    r, g, b = (min(1.0, max(0.0, sum(m[i][j] * linear[j] for j in range(3)))) for i in range(3))
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _distance(a: str, b: str, vision: str) -> float:
    import math

    return math.dist(_lab(_hsl_rgb(a), vision), _lab(_hsl_rgb(b), vision))


MIN_NEIGHBOUR_DISTANCE = 15.0
"""CIE76 distance every two neighbouring stages keep, for every kind of colour vision (about 2.3
is a just-noticeable difference; the old evenly spaced hues fell below 3)."""


def test_neighbouring_stage_colours_stay_apart_for_every_colour_vision():
    """Issue 17: stages 0/1 and 12-14 were hard to tell apart. For 1..64 stages, neighbours are
    far apart in CIELAB for normal, protan, deutan and tritan vision (simulated), and no two
    stages among 21 in a row share a colour."""
    checked = 0
    for pp in range(1, 65):
        colours = [stage_colour(stage, pp) for stage in range(pp)]
        for vision in CVD:
            for a, b in zip(colours[:-1], colours[1:], strict=True):
                assert _distance(a, b, vision) >= MIN_NEIGHBOUR_DISTANCE, (pp, vision, a, b)
                checked += 1
        for i in range(pp):
            assert colours[i] not in colours[i + 1:i + 21], (pp, i)
    assert checked == 4 * sum(range(64))


def test_optimizer_memory_is_visible_in_the_memory_picture():
    """Issue 17: zero1's 0.4 GiB of optimizer states per GPU next to 67 GiB drew under a pixel."""
    import json

    page = page_of("llama3-405b")
    report = json.loads(run_cli("explain", "specs/llama3-405b.par", "--format", "json").stdout)
    stages = report["memory"]["per_stage"]
    assert all(0 < s["optimizer_bytes"] < s["total_bytes"] / 50 for s in stages)
    heights = [float(h) for h in re.findall(r'height="([\d.]+)" fill="[^"]+" class="part-optimizer_bytes"', page)]
    assert len(heights) == len(stages) and min(heights) >= 2
    peak = next(s for s in stages if s["stage"] == report["memory"]["peak_stage"])
    from parc.human import size

    assert f"optimizer states {size(peak['optimizer_bytes'])}" in page


MEASURE = """<script>(function () {
  var over = [], count = 0;
  document.querySelectorAll("text.blocklabel").forEach(function (label) {
    var box = label.previousElementSibling, width = parseFloat(box.getAttribute("width"));
    var x = parseFloat(box.getAttribute("x")), text = label.getBBox();
    count += 1;
    if (text.x < x - 0.5 || text.x + text.width > x + width + 0.5) {
      over.push(label.textContent + " " + text.width.toFixed(1) + "/" + width.toFixed(1));
    }
  });
  document.body.setAttribute("data-labels", String(count));
  document.body.setAttribute("data-overflow", over.join(";"));
})();</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama3-405b", "tiny"])
def test_labels_stay_inside_their_segments_in_chromium(name, tmp_path):
    """The label geometry as a browser lays it out: every block and bar label's box lies inside
    its rectangle (Chromium's own text layout, not the report's width estimate)."""
    page = tmp_path / f"{name}.html"
    page.write_text(page_of(name).replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    loaded = browse(page, tmp_path, "--dump-dom")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert console_messages(loaded.stderr) == []
    count = int(re.search(r'data-labels="(\d+)"', loaded.stdout)[1])
    assert count > 0
    assert 'data-overflow=""' in loaded.stdout, re.search(r'data-overflow="([^"]*)"', loaded.stdout)[1]


def _moment_rows(page: str) -> dict[int, list[str]]:
    """The peak-moment table's cells, row by row, as text (tags stripped, entities decoded)."""
    rows = {}
    for stage, row in re.findall(r'<tr data-stage="(\d+)">(.*?)</tr>', page):
        rows[int(stage)] = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    return rows


@pytest.mark.parametrize("name", ["tiny", "llama3-405b", "mixtral-8x7b-5d"])
def test_the_page_names_each_stages_peak_moment_as_explain_does(name):
    """Issue 15: the memory section names the moment of the schedule that sets each stage's peak,
    read against `parc explain --format json`'s `peak_moment` of the same spec (its own process,
    its own JSON), field by field: action, chunk (with chunks per rank), micro-batch, the
    action's place in the step (1-based on the page), what is held and what the moment adds.
    Each bar's hover names the same moment."""
    import json

    page = page_of(name)
    memory = json.loads(run_cli("explain", f"specs/{name}.par", "--format", "json").stdout)["memory"]
    named = [s for s in memory["per_stage"] if s["peak_moment"] is not None]
    assert named, "no stage names its peak moment: nothing to compare"
    rows = _moment_rows(page)
    assert sorted(rows) == [s["stage"] for s in named]
    # each base said in the header, as `parc explain` counts: micro-batches from 0, actions from 1
    assert "<th>micro-batch (from 0)</th><th>action of the step (from 1)</th>" in page
    chunks = memory["virtual_stages"] > 1
    for s in named:
        m, cells = s["peak_moment"], rows[s["stage"]]
        expected = [str(s["stage"]), m["action"] if m["action"] != "idle" else "idle after the action"]
        expected += [str(m["chunk"])] if chunks else []
        expected += ["-" if m["microbatch"] is None else str(m["microbatch"]),
                     "-" if m["position"] is None else str(m["position"] + 1), str(m["in_flight"]), m["adds"]]
        assert [c.replace(",", "") if i != len(cells) - 1 else c for i, c in enumerate(cells)] == expected
        title = html.unescape(re.search(rf"<title>stage {s['stage']}: [^<(]*\([^<]*?\)(; peak at [^<]*)</title>",
                                        page)[1])
        assert title.startswith("; peak at the " if m["action"] != "idle" else "; peak at idle")
        assert title.endswith(f"plus {m['adds']}")
        if m["microbatch"] is not None:
            assert f"micro-batch {m['microbatch']}" in title
    if name == "llama3-405b":  # interleaved 1F1B: the last stage peaks in a backward, the first in a forward
        assert rows[0][1] == "forward" and rows[max(rows)][1] == "backward"
