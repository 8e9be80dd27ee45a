"""Cluster questions (`nodes ?`, `gpu ?`, deadline, budget, objective): issue 18 points 2 and 5.

The references are computed here without the outer search: every node count of the range is
written into a fully specified spec and run through the front end and the time model
(`parc explain`'s path), and the steps of the run are counted by hand."""

from __future__ import annotations

import json
import math

import pytest
from parc.budget import budget
from parc.pipeline import compile_text
from parc.search.cluster import ladder, search_cluster
from parc.timing import predict

from .conftest import run_cli

TOKENS = 100 * 10**9
BATCH, SEQ = 512, 8192


def question(hardware: str, train_extra: str = "", tokens: str = "tokens 100B", dp: str = "?") -> str:
    return (f"job q\ntp 8 x pp 2 x dp {dp} on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware {{\n{hardware}\n}}\n"
            f"train {{ seq {SEQ}, global-batch {BATCH}, micro-batch 1, {tokens}{train_extra} }}\n")


def reference(gpu: str, nodes: int, price: str = ""):
    """The run on one cluster, written out in full: (days, cost) or None when it does not compile."""
    if nodes * 8 % 16:
        return None
    text = question(f"gpu {gpu}\nnodes {nodes}\n{price}", dp=str(nodes * 8 // 16))
    c = compile_text(text)
    if c.plan is None or any(d.is_error for d in c.diagnostics):
        return None
    prediction = predict(c.plan)
    run = budget(c.plan, prediction)
    steps = math.ceil(TOKENS / (BATCH * SEQ))  # by hand: the run sees at least 100B tokens
    assert run.steps == steps
    days = steps * prediction.breakdown.step / 86_400
    assert run.days == pytest.approx(days)
    return days, run.cost


def brute(gpu: str, high: int, price: str = "") -> dict[int, tuple]:
    out = {n: reference(gpu, n, price) for n in range(1, high + 1)}
    return {n: r for n, r in out.items() if r is not None}


def test_a_deadline_needs_exactly_the_nodes_the_step_time_says():
    every = brute("h100-sxm", 64)
    assert len(every) >= 4
    ordered = sorted(every)
    # a deadline between the 3rd and the 4th feasible cluster's time: exactly the 4th meets it
    target = ordered[3]
    deadline_days = (every[ordered[2]][0] + every[target][0]) / 2
    smallest = min(n for n, (days, _) in every.items() if days <= deadline_days)
    assert smallest == target
    text = question("gpu h100-sxm\nnodes ? in 1 to 64", f", deadline {deadline_days * 24:.3f} hours")
    c = compile_text(text)
    assert not any(d.is_error for d in c.diagnostics)
    result = search_cluster(c)
    assert not result.diagnostics
    assert result.chosen.probe.nodes == target
    assert result.chosen.days == pytest.approx(every[target][0])
    # the candidate rule never drops a cluster that compiles
    assert set(every) <= set(_candidates(c))


def _candidates(c) -> list[int]:
    from parc.search.cluster import _nodes_for

    return _nodes_for(c.spec, c.spec.cluster, "h100-sxm", 8)


def test_the_answer_compiles_and_write_fills_the_holes(tmp_path):
    spec = tmp_path / "q.par"
    spec.write_text(question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64", ", deadline 20 days"))
    done = run_cli("search", str(spec), "--write")
    assert done.exit_code == 0, done.output
    filled = spec.read_text()
    assert "?" not in filled
    c = compile_text(filled)
    assert c.plan is not None and not any(d.is_error for d in c.diagnostics)
    from parc.backends import job_diagnostics

    assert not [d for d in job_diagnostics(c.plan) if d.is_error]
    # the fewest GPUs that finish within 20 days, over both GPUs (computed by hand)
    best = min((n * 8, g, n) for g in ("h100-sxm", "a100-80gb") for n, (days, _) in brute(g, 64).items()
               if days <= 20)
    assert f"nodes {best[2]}\n" in filled and f"gpu {best[1]}\n" in filled


def test_objective_cost_prefers_the_cheaper_gpu():
    text = question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64", ", deadline 30 days, objective cost")
    result = search_cluster(compile_text(text))
    runs = [(cost, g, n) for g in ("h100-sxm", "a100-80gb") for n, (days, cost) in brute(g, 64).items()
            if days <= 30]
    cheapest = min(runs)
    assert cheapest[1] == "a100-80gb"  # at list prices the A100's GPU-hour is 2.4x cheaper, its step 2.2x slower
    assert (result.chosen.probe.gpu, result.chosen.probe.nodes) == (cheapest[1], cheapest[2])
    assert result.chosen.cost == pytest.approx(cheapest[0])
    # at one price for both, the faster GPU is the cheaper run
    same = question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64\nprice 2.00 $/gpu-hour",
                    ", deadline 30 days, objective cost")
    assert search_cluster(compile_text(same)).chosen.probe.gpu == "h100-sxm"


def test_frontier_is_the_pareto_set_of_the_points_tried():
    text = question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64", ", objective time")
    result = search_cluster(compile_text(text))
    priced = [p for p in result.points if p.ok and p.cost is not None]
    assert len(priced) >= 4 and result.frontier
    for p in priced:
        dominated = any(q.days <= p.days and q.cost <= p.cost and (q.days, q.cost) != (p.days, p.cost)
                        for q in priced)
        assert p.frontier == (not dominated)
    assert result.chosen.days == min(p.days for p in priced)


def test_an_infeasible_deadline_says_the_fastest_reachable_time():
    text = question("gpu h100-sxm\nnodes ? in 1 to 8", ", deadline 2 days")
    c = compile_text(text)
    result = search_cluster(c)
    fastest = min(days for days, _ in brute("h100-sxm", 8).values())
    [d] = result.diagnostics
    assert d.code == "E0505" and "within 2.0 days" in d.message
    assert f"{fastest:.1f} days" in d.label and d.help.startswith("allow at least")
    assert (d.span.line, d.span.col) == (8, text.splitlines()[7].index("2 days") + 1)


def test_a_budget_too_small_says_the_cheapest():
    text = question("gpu h100-sxm\nnodes ? in 1 to 8", ", budget $10K")
    result = search_cluster(compile_text(text))
    [d] = result.diagnostics
    cheapest = min(cost for _, cost in brute("h100-sxm", 8).values())
    assert d.code == "E0505" and "$10.00 k" in d.message
    from parc.budget import dollars

    assert dollars(cheapest) in d.label


def test_a_cluster_question_needs_the_runs_length():
    text = question("gpu h100-sxm\nnodes ?", tokens="recompute none")
    [d] = search_cluster(compile_text(text)).diagnostics
    assert d.code == "E0504" and "tokens" in d.help


@pytest.mark.parametrize(("train", "code", "needle"), [
    (", deadline 60 months", "E0205", "months"),
    (", deadline 60", "E0205", "needs a unit"),
    (", deadline 60days", "E0105", "runs a number"),
    (", budget 2.5M", "E0205", "needs a currency"),
    (", budget $2.5X", "E0205", "multiplier"),
    (", budget $0", "E0207", "out of range"),
    (", objective speed", "E0202", "objective"),
])
def test_bad_constraints_are_located_diagnostics(train, code, needle):
    c = compile_text(question("gpu h100-sxm\nnodes ?", train))
    errors = [d for d in c.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code]
    assert needle in errors[0].message and errors[0].help and errors[0].span.line == 8


@pytest.mark.parametrize(("hardware", "code"), [
    ("gpu h100-sxm\nnodes ? in 8 to 2", "E0207"),
    ("gpu h100-sxm\nnodes ? from 2", "E0203"),
    ("gpu ? in [h100-sxm, h100-sxm]\nnodes 4", "E0208"),
    ("gpu ? of h100-sxm\nnodes 4", "E0203"),
    ("gpu h100-sxm\nnodes ?\ngpus 64", "E0204"),
    ("gpu ? in [h100-sxm, h100-sxn]\nnodes 4", "E0202"),
])
def test_bad_cluster_holes_are_located_diagnostics(hardware, code):
    c = compile_text(question(hardware))
    assert [d.code for d in c.diagnostics if d.is_error] == [code]


def test_units_of_the_constraints():
    c = compile_text(question("gpu h100-sxm\nnodes ?", ", deadline 2 weeks, budget $2.5M"))
    settings = c.spec.train.settings
    assert settings["deadline"].value == 14 * 86_400 and settings["budget"].value == 2.5e6


def test_ladder_takes_one_node_count_per_doubling():
    assert ladder([1, 2, 3, 4, 6, 8, 12, 16, 24, 48, 100]) == [1, 2, 4, 8, 16, 48, 100]


def test_json_output_is_deterministic(tmp_path):
    spec = tmp_path / "q.par"
    spec.write_text(question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 16", ", objective cost"))
    first = run_cli("search", str(spec), "--format", "json")
    second = run_cli("search", str(spec), "--format", "json")
    assert first.exit_code == 0 and first.output == second.output
    data = json.loads(first.output)
    assert data["cluster"]["chosen"]["gpu"] == "a100-80gb" and data["cluster"]["points"]
    # the counts: every candidate is listed or ruled out; each listed cluster with a layout was searched
    cluster = data["cluster"]
    assert cluster["ruled_out"] == sum(cluster["candidates"].values()) - len(cluster["points"])
    assert cluster["searches"] >= sum(1 for p in cluster["points"] if p["layout"]) > 0


# ---------------------------------------------------------------------------------------------
# The frontier in `parc report`, laid out by a real browser

FRONTIER_MEASURE = """<script>(function () {
  var svg = document.querySelector("svg.frontier"), view = svg.getBoundingClientRect();
  var labels = Array.prototype.slice.call(svg.querySelectorAll("text.pointlabel"));
  var dots = Array.prototype.slice.call(svg.querySelectorAll("g.point circle"));
  var texts = Array.prototype.slice.call(svg.querySelectorAll("text"));
  var bad = [];
  function box(e) { return e.getBoundingClientRect(); }
  function hit(a, b) { return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5; }
  texts.forEach(function (t) {
    var r = box(t);
    if (r.left < view.left - 0.5 || r.right > view.right + 0.5 || r.top < view.top - 0.5 || r.bottom > view.bottom + 0.5) {
      bad.push("outside: " + t.textContent);
    }
  });
  labels.forEach(function (a, i) {
    labels.slice(i + 1).forEach(function (b) { if (hit(box(a), box(b))) bad.push(a.textContent + " / " + b.textContent); });
    dots.forEach(function (d) { if (hit(box(a), box(d))) bad.push(a.textContent + " over a dot"); });
  });
  document.body.setAttribute("data-frontier-labels", String(labels.length));
  document.body.setAttribute("data-frontier-bad", bad.join(";"));
})();</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["cost", "time"])
def test_frontier_picture_in_headless_chromium(objective, tmp_path):
    """Every label of the frontier lies inside the picture and overlaps no other label and no dot,
    as Chromium lays the text out (not the report's own width estimate)."""
    import re

    from .test_report import browse, console_messages

    spec = tmp_path / "q.par"
    spec.write_text(question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64",
                             f", deadline 30 days, objective {objective}"))
    page = tmp_path / "q.html"
    done = run_cli("report", str(spec), "-o", str(page))
    assert done.exit_code == 0, done.output
    html = page.read_text()
    result = search_cluster(compile_text(spec.read_text()))
    front = [p for p in result.points if p.frontier]
    assert len(front) >= 3
    assert html.count('class="label pointlabel') == len(front) or "#" in html
    page.write_text(html.replace("</body>", FRONTIER_MEASURE + "</body>"), encoding="utf-8")
    loaded = browse(page, tmp_path, "--dump-dom", "--window-size=1200,1600")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert console_messages(loaded.stderr) == []
    count = int(re.search(r'data-frontier-labels="(\d+)"', loaded.stdout)[1])
    assert count == len(front)
    assert 'data-frontier-bad=""' in loaded.stdout, re.search(r'data-frontier-bad="([^"]*)"', loaded.stdout)[1]
    assert 'class="point chosen' in html and 'class="label pointlabel answer"' in html


def test_frontier_axes_are_in_human_units():
    from parc.frontier import frontier_picture
    from parc.svg import render

    result = search_cluster(compile_text(question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64",
                                                  ", objective cost")))
    svg = render(frontier_picture(result.points, result.chosen)[0])
    assert " days<" in svg and "$" in svg and " k<" in svg
    assert svg.count("<circle") == sum(1 for p in result.points if p.ok and p.cost is not None) + 1


def test_fmt_keeps_the_question_and_lsp_explains_the_new_keys():
    from parc.lsp import formatted as format_text
    from parc.lsp import hover_text

    text = question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64",
                    ", deadline 30 days, budget $2.5M, objective cost")
    formatted = format_text(text)
    assert format_text(formatted) == formatted
    assert "gpu ? in [h100-sxm, a100-80gb]" in formatted and "nodes ? in 1 to 64" in formatted
    assert "budget $2.5M" in formatted and "deadline 30 days" in formatted
    before, after = compile_text(text).spec, compile_text(formatted).spec
    assert before.cluster.size.high == after.cluster.size.high == 64
    assert before.train.settings["budget"].value == after.train.settings["budget"].value
    assert "deadline" in hover_text("deadline") and "`tokens-per-dollar`" in hover_text("objective")
    assert "nodes ?" in hover_text("nodes") and hover_text("E0505").startswith("**E0505**")


# ---------------------------------------------------------------------------------------------
# Golden files: the output of a cluster search, and its diagnostics

from .conftest import GOLDEN, ROOT, assert_search_finds_nothing, check_golden  # noqa: E402

CLUSTER = GOLDEN / "cluster"
CLUSTER_DIAGNOSTICS = sorted(CLUSTER.glob("e05*.par"))


@pytest.mark.parametrize("case", CLUSTER_DIAGNOSTICS, ids=[c.stem for c in CLUSTER_DIAGNOSTICS])
def test_a_cluster_search_that_finds_nothing_says_why(case):
    """Golden: tests/golden/diagnostics/<name>.search.stderr (beside the other codes' cases)."""
    assert CLUSTER_DIAGNOSTICS
    assert assert_search_finds_nothing(case)["cluster"]["chosen"] is None


def test_cluster_search_output_is_golden():
    relative = str((CLUSTER / "plan-cost.par").relative_to(ROOT))
    text = run_cli("search", relative)
    assert text.exit_code == 0
    check_golden(CLUSTER / "plan-cost.txt", text.stdout)
    data = run_cli("search", relative, "--format", "json")
    check_golden(CLUSTER / "plan-cost.json", data.stdout)


def test_cluster_write_with_a_fault_at_every_step_keeps_the_spec(tmp_path, monkeypatch):
    """`--write` of a cluster answer goes through the same atomic write as the layout search's."""
    from .test_atomic import rewrite_with_a_fault_at_every_step

    text = question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 16", ", objective cost")
    chosen = search_cluster(compile_text(text)).chosen.text
    rewrite_with_a_fault_at_every_step(tmp_path, monkeypatch, "q.par", text,
                                       lambda spec: ("search", spec, "--write"), lambda new: new == chosen)


def test_a_gpu_count_hole_answers_in_gpus():
    every = brute("h100-sxm", 32)
    deadline_days = sorted(days for days, _ in every.values())[-2] * 1.0001
    text = question("gpu h100-sxm\ngpus ? in 8 to 256", f", deadline {deadline_days * 24:.4f} hours")
    result = search_cluster(compile_text(text))
    smallest = min(n for n, (days, _) in every.items() if days <= deadline_days)
    assert result.chosen.probe.nodes == smallest
    assert f"gpus {smallest * 8}\n" in result.chosen.text and "?" not in result.chosen.text


def test_the_candidate_rule_keeps_every_cluster_with_a_valid_layout():
    """With every degree open, a node count left out by the rule has no layout passing the rules:
    the layout search on that cluster (the real rules, `checks/predicates.py`) finds none (E0501)."""
    from parc.search import search
    from parc.search.cluster import _nodes_for

    text = ("job q\ntp ? x pp ? x dp ? on nodes(4 gpus, nvlink)\nmodel llama3-8b\nhardware {\n"
            "gpu h100-sxm\nnodes ? in 1 to 40\n}\ntrain { seq 4096, global-batch 96, micro-batch 1, tokens 1B }\n")
    c = compile_text(text)
    kept = set(_nodes_for(c.spec, c.spec.cluster, "h100-sxm", 4))
    valid = set()
    for n in range(1, 41):
        filled = compile_text(text.replace("nodes ? in 1 to 40", f"nodes {n}"))
        found = search(filled, top=1)
        if not any(d.code == "E0501" for d in found.diagnostics):
            valid.add(n)
    assert len(valid) >= 10 and len(kept) < 40
    assert valid <= kept, sorted(valid - kept)


def test_report_without_prices_says_so(tmp_path):
    spec = tmp_path / "q.par"
    spec.write_text(question("gpu h200\nnodes ? in 1 to 8"))
    page = tmp_path / "q.html"
    assert run_cli("report", str(spec), "-o", str(page)).exit_code == 0
    html = page.read_text()
    assert "no cost to draw" in html and 'class="frontier"' not in html


def test_the_model_states_floor_is_below_every_predicted_peak():
    """The floor that skips clusters too small to hold the model never exceeds the memory model's
    peak of a real layout: the shipped specs (both runtimes) and the clusters of a question."""
    from parc.memory import estimate
    from parc.search.cluster import states_floor

    from .conftest import ROOT as root

    plans = []
    for path in sorted((root / "specs").glob("*.par")):
        c = compile_text(path.read_text())
        if c.plan is not None and not c.plan.holes and not any(d.is_error for d in c.diagnostics):
            plans.append(c.plan)
    for n in (2, 4, 8):
        plans.append(compile_text(question(f"gpu h100-sxm\nnodes {n}", dp=str(n * 8 // 16))).plan)
    assert len(plans) >= 8
    for plan in plans:
        peak = estimate(plan).peak_bytes
        assert 0 < states_floor(plan) <= peak, plan.launch.job


def test_objective_time_within_a_budget_is_the_fastest_affordable_run():
    runs = [(days, cost, g, n) for g in ("h100-sxm", "a100-80gb") for n, (days, cost) in brute(g, 64).items()]
    costs = sorted(cost for _, cost, _, _ in runs)
    cap = costs[len(costs) // 2]  # half the runs are affordable
    best = min((days, g, n) for days, cost, g, n in runs if cost <= cap)
    text = question("gpu ? in [h100-sxm, a100-80gb]\nnodes ? in 1 to 64", f", budget ${cap:.2f}, objective time")
    result = search_cluster(compile_text(text))
    assert (result.chosen.probe.gpu, result.chosen.probe.nodes) == (best[1], best[2])
    assert result.chosen.cost <= cap


def test_a_written_split_sets_the_stages_of_the_candidates():
    from parc.search.cluster import _nodes_for

    text = ("job q\ntp 8 x pp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b { layers 30 }\nhardware {\n"
            "gpu h100-sxm\nnodes ? in 1 to 64\n}\ntrain { seq 8192, global-batch 64, micro-batch 1, tokens 1B }\n"
            "pp { split [7, 8, 8, 7] }\n")
    c = compile_text(text)
    kept = _nodes_for(c.spec, c.spec.cluster, "h100-sxm", 8)
    assert kept == [4 * d for d in (1, 2, 4, 8, 16)]  # pp 4 (30 layers: 4 does not divide them) x dp | 64
    result = search_cluster(c)
    assert result.chosen is not None and "pp 4" in result.chosen.layout


# ---------------------------------------------------------------------------------------------
# The outer search against an exhaustive scan: every node count, no floors, no ceilings

OPEN = ("job q\ntp ? x pp ? x dp ? on nodes(4 gpus, nvlink)\nmodel llama3-8b { layers 30 }\nhardware {\nGPU\nNODES\n}\n"
        "train { seq 4096, global-batch 120, micro-batch ?, recompute ?, tokens 20B@TRAIN@ }\n")
"""Every layout hole open, a batch of 120 and 30 layers: the best time is not monotone in the node
count (9 nodes are slower than 8, 16 and 18 than 15, 25 than 20, 36 than 30: divisibility)."""
OPEN_GPUS = ("a100-80gb", "h100-sxm")
OPEN_NODES = 40


def exhaustive(gpu: str) -> dict[int, tuple[float, float, float]]:
    """node count -> (days, cost, step) of the fastest layout, for every node count of the range
    whose spec compiles and has a layout: the layout search on the spec written out in full, no
    outer search."""
    from parc.search import search

    out = {}
    for n in range(1, OPEN_NODES + 1):
        c = compile_text(OPEN.replace("GPU", f"gpu {gpu}").replace("NODES", f"nodes {n}").replace("@TRAIN@", ""))
        if c.plan is None or any(d.is_error for d in c.diagnostics):
            continue
        found = search(c, top=1)
        if found.winner is None:
            continue
        run = budget(found.winner.compilation.plan, found.winner.prediction)
        out[n] = (run.days, run.cost, found.winner.step)
    return out


@pytest.fixture(scope="module")
def every_cluster() -> dict[tuple[str, int], tuple[float, float, float]]:
    table = {(g, n): r for g in OPEN_GPUS for n, r in exhaustive(g).items()}
    assert len(table) >= 20
    return table


def _reference_answer(table, deadline, budget_, objective):
    """The objective's best over every cluster meeting the constraints (docs/search.md's keys)."""
    feasible = [(g, n, days, cost) for (g, n), (days, cost, _) in table.items()
                if (deadline is None or days <= deadline) and (budget_ is None or cost <= budget_)]
    rank = OPEN_GPUS.index

    def key(item):
        g, n, days, cost = item
        gpus = n * 4
        if objective == "time":
            return (days, gpus, rank(g), n)
        if objective == "cost":
            return (cost, days, rank(g), n)
        return (gpus, cost, days, rank(g), n)

    return min(feasible, key=key) if feasible else None


def test_the_best_time_is_not_monotone_in_the_node_count(every_cluster):
    """What makes bisection wrong here (the old outer search assumed monotonicity in a band)."""
    a100 = {n: days for (g, n), (days, _, _) in every_cluster.items() if g == "a100-80gb"}
    assert a100[9] > a100[8] and a100[16] > a100[15] and a100[25] > a100[20] and a100[36] > a100[30]


@pytest.mark.parametrize(("objective", "deadline_q", "budget_q"), [
    ("gpus", 0.3, None),      # the fewest GPUs within a deadline
    ("gpus", 0.5, 0.5),
    ("time", None, 0.5),      # the fastest run within a budget
    ("time", 0.6, 0.4),
    ("cost", 0.5, None),      # the cheapest within a deadline
    ("cost", 0.7, 0.8),
])
def test_the_outer_search_equals_an_exhaustive_scan(every_cluster, objective, deadline_q, budget_q):
    """With a deadline and a budget placed at quantiles of the scan's own times and costs, the
    answer (cluster, time and cost) is the exhaustive scan's, over both GPUs and every node count
    of 1-40, while fewer layout searches run than there are clusters."""
    days = sorted(v[0] for v in every_cluster.values())
    costs = sorted(v[1] for v in every_cluster.values())
    deadline = None if deadline_q is None else days[int(deadline_q * len(days))] * 1.0001
    budget_ = None if budget_q is None else costs[int(budget_q * len(costs))] * 1.0001
    want = _reference_answer(every_cluster, deadline, budget_, objective)
    assert want is not None
    extra = (f", deadline {deadline * 24:.6f} hours" if deadline else "") + \
            (f", budget ${budget_:.2f}" if budget_ else "") + (f", objective {objective}" if objective != "gpus" else "")
    text = (OPEN.replace("GPU", f"gpu ? in [{', '.join(OPEN_GPUS)}]").replace("NODES", f"nodes ? in 1 to {OPEN_NODES}")
            .replace("@TRAIN@", extra))
    c = compile_text(text)
    assert not any(d.is_error for d in c.diagnostics)
    result = search_cluster(c)
    assert not result.diagnostics
    got = result.chosen
    assert (got.probe.gpu, got.probe.nodes) == want[:2]
    # the deadline and budget text round-trip through hours and cents: equal within that
    assert got.days == pytest.approx(want[2], rel=1e-9) and got.cost == pytest.approx(want[3], rel=1e-9)
    assert result.searches < sum(result.candidates.values())
    # every point shown is the scan's own figure for that cluster
    for p in result.points:
        if p.ok:
            assert (p.days, p.cost) == pytest.approx(every_cluster[(p.probe.gpu, p.probe.nodes)][:2], rel=1e-9)


def test_the_floors_are_below_every_clusters_best_step(every_cluster):
    """The floor that rules clusters out without a search (FLOPs at the fastest kernel, the model
    states) is below the best step and the peak of every cluster of the scan."""
    from parc.search.cluster import Probe, floors_of

    text = OPEN.replace("NODES", f"nodes ? in 1 to {OPEN_NODES}").replace("@TRAIN@", "")
    for gpu in OPEN_GPUS:
        c = compile_text(text.replace("GPU", f"gpu {gpu}"))
        floors = floors_of(c, c.spec.cluster, [Probe(gpu=gpu, nodes=1, gpus_per_node=4)])
        assert floors is not None
        steps = [(n, step) for (g, n), (_, _, step) in every_cluster.items() if g == gpu]
        assert steps
        for n, step in steps:
            assert floors.fits(n * 4)
            assert floors.step(n * 4) <= step
        # and not vacuous: within a factor of 3 of the fastest cluster's step
        n, step = min(steps, key=lambda item: item[1])
        assert floors.step(n * 4) > step / 3


def test_mfu_never_exceeds_the_kernel_ceiling_on_shipped_specs():
    from parc.search.cluster import kernel_ceiling
    from parc.timing import predict

    from .conftest import ROOT as root

    seen = 0
    for path in sorted((root / "specs").glob("*.par")):
        c = compile_text(path.read_text())
        if c.plan is None or c.plan.holes or any(d.is_error for d in c.diagnostics):
            continue
        prediction = predict(c.plan)
        if prediction is None:
            continue
        seen += 1
        assert prediction.mfu <= kernel_ceiling(c.plan.cluster.gpu.generation), path.name
    assert seen >= 8


from hypothesis import HealthCheck, assume, given, settings  # noqa: E402

from .test_bounds import _plan, layouts  # noqa: E402


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(layouts())
def test_mfu_never_exceeds_the_kernel_ceiling_on_random_layouts(text):
    """The floor's premise on tests/test_bounds.py's random layouts (models dense and MoE, every
    sharding, recomputation, order, both GPUs, NVLink and PCIe)."""
    from parc.search.cluster import kernel_ceiling
    from parc.timing import predict

    plan = _plan(text)
    assume(plan is not None)
    prediction = predict(plan)
    assume(prediction is not None)
    assert prediction.mfu <= kernel_ceiling(plan.cluster.gpu.generation)


LLAMA_405B_EVERY_HOLE = """job q
tp ? x cp ? x pp ? x dp ? x ep ? on nodes(8 gpus, nvlink)
order ?
model llama3-405b
hardware { gpu h100-sxm, nodes NODES }
train { seq 8192, global-batch 2048, micro-batch ?, recompute ?, tokens 15.6T@TRAIN@ }
tp { sequence-parallel ? }
pp { schedule ?, virtual-stages ? }
dp { sharding ? }
"""
"""benchmarks/search_speed.py's `nodes ?` row: Llama 3 405B, every layout hole open, 1-16,384 nodes."""


@pytest.mark.long
def test_the_405b_every_hole_questions_equal_an_exhaustive_scan():
    """The benchmark's question and three more on it, against the layout search on every candidate
    node count (70 of them; about 6 minutes on the shared 2-core box). Its best time is far from
    monotone: 126 layers leave pp 8 out, so 16,384 nodes train in 97 days and 14,336 in 20. The
    previous outer search (bisection in a doubling band) answered 1,792 nodes (88 days) to the
    time objective and found no cluster within 30 days."""
    from parc.search import search
    from parc.search.cluster import _nodes_for

    question = LLAMA_405B_EVERY_HOLE.replace("NODES", "?")
    c = compile_text(question.replace("@TRAIN@", ""))
    nodes = _nodes_for(c.spec, c.spec.cluster, "h100-sxm", 8)
    assert len(nodes) == 70
    scan = {}
    for n in nodes:
        filled = compile_text(LLAMA_405B_EVERY_HOLE.replace("NODES", str(n)).replace("@TRAIN@", ""))
        if filled.plan is None or any(d.is_error for d in filled.diagnostics):
            continue
        found = search(filled, top=1)
        if found.winner is not None:
            run = budget(found.winner.compilation.plan, found.winner.prediction)
            scan[n] = (run.days, run.cost)
    assert scan[14336][0] < scan[16384][0] / 4
    cases = [(", deadline 120 days", lambda n, d, c: (n,), lambda d, c: d <= 120),
             (", deadline 30 days", lambda n, d, c: (n,), lambda d, c: d <= 30),
             (", deadline 120 days, objective time", lambda n, d, c: (d, n), lambda d, c: d <= 120),
             (", deadline 120 days, objective cost", lambda n, d, c: (c, d, n), lambda d, c: d <= 120)]
    for extra, key, ok in cases:
        want = min((key(n, d, cost), n) for n, (d, cost) in scan.items() if ok(d, cost))[1]
        result = search_cluster(compile_text(question.replace("@TRAIN@", extra)))
        assert result.chosen.probe.nodes == want, extra
        assert result.chosen.days == pytest.approx(scan[want][0], rel=1e-9)


def test_a_search_under_a_ceiling_finds_the_same_winner_or_none():
    """`search(ceiling=...)`, what the outer search asks where only a fast enough layout matters:
    at or above the winner's step it returns the full search's winner; just below, nothing."""
    from parc.search import search

    c = compile_text(OPEN.replace("GPU", "gpu h100-sxm").replace("NODES", "nodes 12").replace("@TRAIN@", ""))
    full = search(c, top=1).winner
    assert full is not None
    under = search(c, top=1, ceiling=full.step * (1 + 1e-9)).winner
    assert under is not None and under.assignment == full.assignment and under.step == full.step
    assert search(c, top=1, ceiling=full.step * (1 - 1e-6)).winner is None


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(layouts())
def test_the_compute_floor_is_below_the_step_on_random_layouts(text):
    """`ComputeFloor`'s premise, step >= (B / dp) x (L / pp) x one layer's kernels and exposed tp
    communication per sequence,
    on tests/test_bounds.py's random dense layouts: the floor over the layout's own degrees,
    micro-batch and sequence parallelism is at most its predicted step."""
    from parc.search.cluster import ComputeFloor

    plan = _plan(text)
    assume(plan is not None and not plan.model.experts and plan.layout.pp.split is None)
    assume((plan.layout.ep.degree or 1) == 1)
    prediction = predict(plan)
    assume(prediction is not None)
    lay = plan.layout
    degrees = {name: [getattr(lay, name).degree or 1] for name in ("tp", "cp", "pp", "dp")}
    floor = ComputeFloor(plan, degrees).at(plan.cluster.world_size)
    assume(floor > 0)
    assert floor <= prediction.breakdown.step * (1 + 1e-9)
    # it is the layers' share of the compute and of the exposed tp communication
    assert floor <= (prediction.breakdown.compute + prediction.breakdown.exposed["tp"]) * (1 + 1e-9)


def test_the_compute_floor_sees_the_small_gemms_of_a_large_cluster():
    """At 12,288 nodes the 405B's 2,048 sequences leave each GPU a thousand tokens per
    micro-batch: the compute floor is more than twice FLOPs at the kernel ceiling, and still
    below the layout search's best step there."""
    from parc.search import search
    from parc.search.cluster import Probe, floors_of

    c = compile_text(LLAMA_405B_EVERY_HOLE.replace("NODES", "?").replace("@TRAIN@", ""))
    floors = floors_of(c, c.spec.cluster, [Probe(gpu="h100-sxm", nodes=12288, gpus_per_node=8)])
    gpus = 12288 * 8
    assert floors.compute is not None
    assert floors.step(gpus) > 2 * floors.gpu_seconds / gpus
    best = search(compile_text(LLAMA_405B_EVERY_HOLE.replace("NODES", "12288").replace("@TRAIN@", "")), top=1).winner
    assert best is not None and floors.step(gpus) <= best.step


# ---------------------------------------------------------------------------------------------
# Memory at risk (W0410): the layout search's mark, per cluster

AT_RISK = """job risky
tp ? x dp ? on nodes(8 gpus, nvlink)
model llama3-8b { layers 16 }
hardware {
  gpu GPU
  nodes NODES
}
train {
  seq 4096
  global-batch 48
  micro-batch 3
  recompute none
  tokens 1B
}
"""
"""Llama 3 8B cut to 16 layers at micro-batch 3: on an 80 GB H100 the fastest layout fits by 9 GiB,
less than the band's 15 % of its predicted reserved bytes; a 192 GB B200 has room to spare."""


def test_cluster_search_marks_at_risk_clusters_and_names_their_clear_runner_up(tmp_path):
    """A cluster whose winning layout fits by less than the memory model's measured band is marked
    in the table and the JSON, and the fastest runner-up clear of it is the one `parc search`
    names on that cluster written out in full. The mark is recomputed here from the bytes: the
    predicted max_memory_reserved grown by the band passes the reserved limit."""
    from parc.memory import band
    from parc.search import DEFAULT_TOP

    spec = tmp_path / "risky.par"
    spec.write_text(AT_RISK.replace("GPU", "? in [h100-sxm, b200]").replace("NODES", "? in 1 to 2"))
    found = json.loads(run_cli("search", str(spec), "--format", "json").stdout)["cluster"]
    points = [p for p in found["points"] if p["layout"] is not None]
    assert len(points) == 4
    for p in points:
        edge = p["predicted_max_memory_reserved_bytes"] * (1 + band.ERROR_BAND)
        assert p["memory_at_risk"] == (edge > p["reserved_limit_bytes"]), (p["gpu"], p["nodes"])
        assert p["memory_error_band"] == band.ERROR_BAND
    assert {p["gpu"] for p in points if p["memory_at_risk"]} == {"h100-sxm"}  # both verdicts are checked
    assert {p["gpu"] for p in points if not p["memory_at_risk"]} == {"b200"}
    assert found["chosen"]["memory_at_risk"] is True and found["chosen"]["gpu"] == "h100-sxm"
    for p in points:
        if not p["memory_at_risk"]:
            assert p["memory_clear_runner_up"] is None
            continue
        # the same cluster written out, searched by the layout search alone
        filled = tmp_path / f"{p['gpu']}-{p['nodes']}.par"
        filled.write_text(AT_RISK.replace("GPU", p["gpu"]).replace("NODES", str(p["nodes"])))
        listed = json.loads(run_cli("search", str(filled), "--format", "json").stdout)
        candidates = listed["candidates"]
        assert 1 < len(candidates) <= DEFAULT_TOP
        assert candidates[0]["values"] == p["values"] and candidates[0]["memory_at_risk"]
        clear = next(c for c in candidates if (c["predicted_max_memory_reserved_bytes"] * (1 + band.ERROR_BAND)
                                               <= c["reserved_limit_bytes"]))
        runner_up = p["memory_clear_runner_up"]
        assert runner_up["rank"] == clear["rank"] == listed["memory_clear_runner_up"] > 1
        assert runner_up["values"] == clear["values"]
        assert runner_up["memory_margin_bytes"] == clear["memory_margin_bytes"]
        assert runner_up["slower_fraction"] == pytest.approx(
            (clear["step_seconds"] - candidates[0]["step_seconds"]) / candidates[0]["step_seconds"], rel=1e-4)
    text = run_cli("search", str(spec)).stdout
    rows = [line for line in text.splitlines() if line[:4].strip(">* ") == "" and ("h100-sxm" in line or "b200" in line)
            and " x " in line]
    assert len(rows) == 4
    for line in rows:  # `!` after the layout exactly on the at-risk clusters
        assert ("!" in line) == ("h100-sxm" in line), line
    assert "`!` at risk in memory (W0410)" in text
    assert "  ! 1 node of h100-sxm: fits by 8.9 GiB; the fastest runner-up clear of it is #" in text
    assert "  ! 2 nodes of h100-sxm: fits by 8.9 GiB; the fastest runner-up clear of it is #" in text
    assert "; at risk in memory (W0410, `!` above)" in next(line for line in text.splitlines()
                                                           if line.startswith("answer: "))


def test_the_listing_a_runner_up_is_named_from_is_parc_searchs_default():
    """`DEFAULT_TOP` is written once (parc.defaults, which the CLI imports without search) and is
    both the search's listing and the CLI's --top default."""
    from parc import defaults, search

    assert search.DEFAULT_TOP is defaults.DEFAULT_TOP
    assert f"[default: {defaults.DEFAULT_TOP};" in run_cli("search", "--help").stdout


def test_the_runner_up_listing_reuses_the_answers_compilation_and_names_what_a_fresh_one_names(monkeypatch):
    """`name_clear_runner_ups` lists an at-risk cluster on the filled spec the answer's search
    already compiled (`Point.filled`), compiling nothing again: it names the runner-up a fresh
    compile of that cluster's text names, and no point keeps the compilation afterwards."""
    from parc.search import DEFAULT_TOP, cluster, search
    from parc.search.cluster import fill_cluster, layout_degrees, search_cluster
    from parc.search.ranking import memory_clear_runner_up

    naming, compiled_while_naming = [False], []
    real_compile, real_naming = cluster.compile_text, cluster.name_clear_runner_ups

    def counted_compile(*args, **kwargs):
        if naming[0]:
            compiled_while_naming.append(args[1] if len(args) > 1 else None)
        return real_compile(*args, **kwargs)

    def watched_naming(*args, **kwargs):
        naming[0] = True
        try:
            return real_naming(*args, **kwargs)
        finally:
            naming[0] = False

    monkeypatch.setattr(cluster, "compile_text", counted_compile)
    monkeypatch.setattr(cluster, "name_clear_runner_ups", watched_naming)
    c = compile_text(AT_RISK.replace("GPU", "? in [h100-sxm, b200]").replace("NODES", "? in 1 to 2"))
    result = search_cluster(c)
    risky = [p for p in result.points if p.ok and p.at_risk]
    assert len(risky) == 2 and result.runner_up_searches == 2
    assert compiled_while_naming == []
    assert all(p.filled is None for p in result.points)
    for p in risky:
        fresh = compile_text(fill_cluster(c.source.text, c.spec.cluster, p.probe), c.source.path)
        listing = search(fresh, top=DEFAULT_TOP, degree_values=layout_degrees(fresh.plan))
        clear = memory_clear_runner_up(listing.candidates)
        assert clear is not None and p.clear_runner_up is not None
        assert (p.clear_runner_up.rank, p.clear_runner_up.values, p.clear_runner_up.margin_bytes) == \
            (clear.rank, dict(clear.values), clear.memory.margin_bytes)
        assert p.listed == len(listing.candidates)


@pytest.mark.parametrize("gpus, target, refused, chosen", [
    ("a100-80gb, h100-sxm", "target megatron", "E0626", "h100-sxm"),
    ("h100-sxm, b200", "target megatron { fp8-recipe mxfp8 }", "E0627", "b200"),
])
def test_a_gpu_the_target_cannot_run_rules_out_that_candidate(gpus, target, refused, chosen):
    """Under `gpu ?` the checks of a GPU's own abilities wait for the candidates: fp8 on an A100
    (no fp8 tensor cores, E0626) and MXFP8 on an H100 (no block scaling, E0627) rule that GPU
    out of the cluster search, with the code, instead of refusing the whole spec."""
    text = ("tp ? x dp ? on nodes(8 gpus, nvlink)\nmodel llama3-8b\n"
            f"hardware {{ gpu ? in [{gpus}], gpus 64 }}\n{target}\n"
            "train { seq 4096, global-batch 256, micro-batch 1, precision fp8, tokens 1T }\ndp { sharding zero1 }\n")
    c = compile_text(text)
    assert c.plan is not None and not [d for d in c.diagnostics if d.is_error]
    result = search_cluster(c)
    ruled = [p for p in result.points if p.reason]
    assert ruled and all(refused in p.reason for p in ruled)
    assert {p.probe.gpu for p in ruled} == {gpus.split(", ")[0]}
    assert result.chosen is not None and result.chosen.probe.gpu == chosen
