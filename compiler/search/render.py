"""A search's result as text (a ranked table, then why each runner-up lost) and as JSON, and the
diagnostics of a search that finds nothing (E0501-E0503).

Both forms are deterministic: no timings, no paths beyond the one given, numbers rounded as
`parc explain` and `parc diff` round them.
"""

from __future__ import annotations

from .. import budget as run_budget
from ..codes import CODES
from ..diagnostics import Diagnostic, Style, as_json, error, summary_line
from ..diagnostics import render_text as render_diagnostic_text
from ..diff import _table, value_text
from ..human import percent
from ..plan import AXES
from . import Candidate, SearchResult
from .engine import UNPREDICTED, Outcome, SpaceTooLarge
from .explain import LABELS
from .ranking import TIME_MODEL_SPREAD, benchmark_line, memory_clear_runner_up, memory_risk_line
from .space import AXIS_HOLES, Space

KNOB_COLUMNS = (
    ("train.micro-batch", "micro"), ("train.recompute", "recompute"), ("dp.sharding", "sharding"),
    ("pp.schedule", "schedule"), ("pp.virtual-stages", "v"), ("tp.sequence-parallel", "sp"),
)
"""Holes shown as their own column (degrees and the rank order are the layout column)."""


def layout_text(space: Space, c: Candidate) -> str:
    a = c.assignment
    text = " x ".join(f"{name} {degree}" for name, degree in a.degrees)
    if space.ep_fold and a.ep > 1:
        text += f", ep {a.ep} over {' x '.join(space.ep_fold)}"
    return text


def _exposed(c: Candidate) -> float:
    return sum(c.prediction.breakdown.exposed.values())


def space_lines(result: SearchResult) -> list[str]:
    s = result.stats
    lines = [f"space: {s.raw:,} assignments of the holes; {s.valid:,} pass the layout rules"]
    pruned = sorted(((code, n) for code, n in s.pruned.items() if n), key=lambda kv: (-kv[1], kv[0]))
    if pruned:
        shown = ", ".join(f"{code} {count:,}" for code, count in pruned[:6])
        more = f", {len(pruned) - 6} more" if len(pruned) > 6 else ""
        lines.append(f"  rejected by the first rule that fails: {shown}{more}")
    lines.append(f"  of the valid: {s.timed:,} fit and were timed, {s.out_of_memory:,} do not fit in memory, "
                 f"{s.bounded:,} bounded out (cannot reach the top), {s.merged:,} merged into an equal layout")
    return lines


def render_text(result: SearchResult, style: Style) -> str:
    space = result.space
    plan = space.plan
    cluster = plan.cluster
    holes = ", ".join(LABELS.get(h, h) for h in space.holes)
    written = not space.holes  # nothing to search: the layout as written, predicted as explain does
    lines = [style.bold(f"parc search {space.compilation.source.path}: {plan.model.name} on {cluster.world_size:,} "
                        f"{cluster.gpu.name} ({cluster.nodes:,} nodes of {cluster.gpus_per_node})")]
    if written:
        lines.append("holes: none: the spec has no `?` to fill, so there is nothing to search "
                     "(the prediction below is the layout as written, as `parc explain` gives it)")
    else:
        lines.append(f"holes: {holes}")
        lines += space_lines(result)
    if not result.candidates:
        return "\n".join(lines) + "\n"
    shown_knobs = [(h, title) for h, title in KNOB_COLUMNS if h in space.holes]
    head = ["#", "layout"] + [t for _, t in shown_knobs] + [
        "tokens/s", "step", "MFU", "peak memory", "bubble", "exposed comm", "pareto"]
    rows = [head]
    for c in result.candidates:
        # The figures `parc explain` prints come from the rounded JSON; formatting the same numbers
        # keeps both tools' text identical (rounding twice once made 35.7 % here and 35.8 % there).
        time, rate = c.prediction.time_json(), c.prediction.throughput_json()
        rows.append([str(c.rank), layout_text(space, c)] + [c.values[h] for h, _ in shown_knobs] + [
            f"{rate['tokens_per_second']:,.0f}", value_text("s", time["step_seconds"]), percent(rate["mfu"]),
            value_text("bytes", c.peak_bytes) + ("!" if c.memory.at_risk else ""), percent(time["bubble_share"]),
            value_text("s", _exposed(c)),
            "*" if c.pareto else ""])
    first_number = 2 + len(shown_knobs)
    table = _table(rows, set(range(first_number, first_number + 6)) | {0})
    usable = result.candidates[0].memory.usable_bytes
    what = "the layout as written" if written else f"top {len(result.candidates)} by predicted tokens/s"
    lines += ["", f"{what} (peak memory of the worst rank, {value_text('bytes', usable)} usable per GPU; "
              "bubble = idle share of the step):"]
    lines += table
    if any(c.memory.at_risk for c in result.candidates):
        band = next(c.memory.error_band for c in result.candidates if c.memory.at_risk)
        lines.append(f"  ! fits by less than the memory model's measured under-prediction ({band:.1%}): "
                     "at risk (W0410)")
    if written:
        return "\n".join(lines + _check_lines(result.winner, "the spec", style)) + "\n"
    lines.append("  * on the Pareto frontier of peak memory and tokens/s: nothing in the whole space is as fast "
                 "with less memory")
    if len(result.candidates) > 1:
        lines += ["", "why each lost to #1:"]
        width = len(str(result.candidates[-1].rank))
        lines += [f"  #{str(c.rank).ljust(width)}  {c.lost_because}" for c in result.candidates[1:]]
        honest = benchmark_line(result.candidates, result.benchmark_first)
        if honest:
            lines += ["", honest]
    risk = memory_risk_line(result.candidates)
    if risk and not written:
        lines += ["", risk]
    winner = result.winner
    values = ", ".join(f"{LABELS.get(h, h)} {v}" for h, v in winner.values.items())
    lines += ["", style.bold(f"winner: {values}")]
    lines += [f"caveat ({caveat.code}): {caveat.text}" for caveat in candidate_caveats(winner)]
    budget = run_budget.budget(winner.compilation.plan, winner.prediction)
    if budget is not None:
        cost = f", {run_budget.dollars(budget.cost)}" if budget.cost is not None else ""
        lines.append(f"training budget: {run_budget.tokens_text(budget.tokens)} tokens in "
                     f"{run_budget.days_text(budget.days)}, {run_budget.hours_text(budget.gpu_hours)}{cost} "
                     f"(`parc explain` on the filled spec has the breakdown)")
    lines += _check_lines(winner, "the filled spec", style)[1:]
    if result.rejected:
        lines.append(f"note: {len(result.rejected)} candidate(s) the fast checks accepted were rejected by "
                     "`parc check` (a bug in parc; please report it):")
        lines += [f"  {r}" for r in result.rejected]
    return "\n".join(lines) + "\n"


def _check_lines(candidate: Candidate, what: str, style: Style) -> list[str]:
    """A blank line, then what `parc check` says about the candidate's spec."""
    diagnostics = candidate.compilation.diagnostics
    if not diagnostics:
        return ["", f"`parc check` on {what}: no findings"]
    source = candidate.compilation.source
    return ["", f"`parc check` on {what}: {summary_line(diagnostics, style)}",
            render_diagnostic_text(diagnostics, {source.path: source}, style).rstrip("\n")]


def candidate_caveats(c: Candidate) -> tuple:
    """`parc explain`'s caveats for a candidate's filled spec (`parc.caveats`): where its predicted
    step leans on what the time model measured least."""
    from ..caveats import of_prediction

    return of_prediction(c.compilation.plan, c.prediction.breakdown)


def candidate_json(space: Space, c: Candidate) -> dict:
    b = c.prediction.breakdown
    return {
        "rank": c.rank,
        "values": c.values,
        "layout": layout_text(space, c),
        "rank_order": list(c.assignment.order),
        "degrees": {axis: c.assignment.degree(axis) for axis in AXES},
        "tokens_per_second": c.prediction.throughput_json()["tokens_per_second"],
        "step_seconds": c.prediction.time_json()["step_seconds"],
        "mfu": c.prediction.throughput_json()["mfu"],
        "peak_bytes": c.peak_bytes,
        "usable_bytes": c.memory.usable_bytes,
        "memory_margin_bytes": c.memory.margin_bytes,
        "memory_at_risk": c.memory.at_risk,
        "predicted_max_memory_reserved_bytes": c.memory.predicted_reserved_bytes,
        "reserved_limit_bytes": c.memory.reserved_limit_bytes,
        "bubble_fraction": c.prediction.time_json()["bubble_fraction"],  # kept: the idle/busy ratio
        "bubble_share": c.prediction.time_json()["bubble_share"],  # the bubble: idle share of the step
        "exposed_comm_seconds": c.prediction.time_json()["exposed_comm_seconds"],
        "exposed_comm_total_seconds": float(f"{sum(b.exposed.values()):.6g}"),
        "time": c.prediction.time_json(),
        "throughput": c.prediction.throughput_json(),
        "pareto": c.pareto,
        "lost_because": c.lost_because,
        "indistinguishable": c.indistinguishable,
        "budget": _budget_json(c),
        "caveats": [caveat.json() for caveat in candidate_caveats(c)],
        "diagnostics": as_json(c.compilation.diagnostics),
    }


def _rank(c: Candidate | None) -> int | None:
    return None if c is None else c.rank


def _budget_json(c: Candidate) -> dict | None:
    """`parc explain`'s budget section for the filled spec; None without `tokens`/`steps`."""
    budget = run_budget.budget(c.compilation.plan, c.prediction)
    return None if budget is None else budget.json()


def render_json(result: SearchResult, written: bool = False) -> dict:
    space = result.space
    return {
        "file": space.compilation.source.path,
        "holes": list(space.holes),
        "world_size": space.world,
        "space": result.stats.as_json(),
        "candidates": [candidate_json(space, c) for c in result.candidates],
        "winner": result.winner.values if result.winner else None,
        "error_band": TIME_MODEL_SPREAD,
        "memory_error_band": result.winner.memory.error_band if result.winner else None,
        "memory_clear_runner_up": _rank(memory_clear_runner_up(result.candidates)),
        "benchmark_first": result.benchmark_first.rank if result.benchmark_first else None,
        "written": written,
        "rejected": result.rejected,
        "diagnostics": as_json(result.diagnostics),
    }


# ---------------------------------------------------------------------------------------------
# Nothing found


def _anchor(space: Space):
    spec = space.spec
    return spec.holes[0].span if spec.holes else spec.layout.span


def no_candidate(space: Space, outcome: Outcome) -> Diagnostic:
    stats = outcome.stats
    if stats.valid == 0:
        return _no_valid(space, outcome)
    if stats.timed == 0:
        return _none_fits(space, outcome)
    return error("E0299", "internal error in parc search: every candidate was rejected", _anchor(space),
                 help="please report this spec")


def _no_valid(space: Space, outcome: Outcome) -> Diagnostic:
    stats = outcome.stats
    pruned = sorted(stats.pruned.items(), key=lambda kv: (-kv[1], kv[0]))
    total = max(1, stats.raw)
    notes = []
    for code, count in pruned[:5]:
        title = CODES[code].title if code in CODES else "more pipeline chunks than the memory model predicts"
        notes.append(f"{code}: {count:,} of {stats.raw:,} ({count / total:.0%}): {title}")
    if stats.raw == 0:
        notes.append(f"the written degrees do not divide the {space.world:,} GPUs")
    top = pruned[0][0] if pruned else None
    fixed = [f"`{name} {degree}`" for name, degree in space.fixed.items()]
    if top == "E0304" and not space.order_open:
        help_ = "write tp first on the layout line, or let search choose the rank order with `order ?`"
    elif top is not None and top != UNPREDICTED:
        help_ = (f"most assignments fail {top} (`parc codes {top}`); change or open (`?`) the written values it "
                 "names" + (f": {', '.join(fixed)}" if fixed and top in _DEGREE_CODES else ""))
    else:
        help_ = "make the written degrees divide the cluster size, or open them (`?`)"
    return error("E0501", "no assignment of the holes passes the layout rules", _anchor(space),
                 label=f"{stats.raw:,} assignments, none valid", notes=tuple(notes), help=help_)


_DEGREE_CODES = {"E0304", "E0310", "E0312", "E0313", "E0315", "E0321", "E0322", "E0330", "E0331", "E0332",
                 "E0340", "E0341", "E0342"}


def _none_fits(space: Space, outcome: Outcome) -> Diagnostic:
    stats = outcome.stats
    closed = [f"`{LABELS.get(h, h)} ?`" for h in ("train.recompute", "dp.sharding", "train.micro-batch")
              if h not in space.holes]
    notes = [f"{stats.out_of_memory:,} valid assignments predicted (the others are the same layouts); each needs at "
             f"least {value_text('bytes', outcome.smallest_peak or 0)}, {value_text('bytes', outcome.usable_bytes)} "
             f"are usable on a {space.plan.cluster.gpu.name}"]
    help_ = "use more GPUs or a GPU with more memory"
    if closed:
        help_ = f"leave {', '.join(closed)} open for search to choose, or " + help_
    return error("E0502", "no valid layout fits in GPU memory", space.spec.layout.span,
                 label=f"{stats.valid:,} valid layouts, none fits", notes=tuple(notes), help=help_)


def too_large(space: Space, exc: SpaceTooLarge) -> Diagnostic:
    open_holes = [f"`{LABELS.get(h, h)}`" for h in space.holes if h in AXIS_HOLES or h == "order"]
    return error("E0503", "the search space is too large", _anchor(space),
                 label=f"more than {exc.limit:,} {exc.what} after the rules",
                 notes=(f"{exc.stats.raw:,} assignments seen before the search stopped; one search walks at most "
                        f"{exc.limit:,} {exc.what}",),
                 help="write the values you already know instead of `?`"
                 + (f" (open now: {', '.join(open_holes)})" if open_holes else "") + ", e.g. `tp 8` or `order fixed`")


def render_diagnostics(result: SearchResult, style: Style) -> str:
    source = result.space.compilation.source
    return render_diagnostic_text(result.diagnostics, {source.path: source}, style)


__all__ = ["render_text", "render_json", "render_diagnostics", "no_candidate", "too_large", "AXES"]
