"""Why a runner-up lost to the winner, in one line, from the two predicted step breakdowns.

Both step times are sums of the same parts (`timing.Breakdown`: compute, recomputation, the
pipeline bubble, the optimizer step, exposed communication per axis). The parts that grew most
are named, each with the holes whose values differ and that the part depends on:

    +12 % step time: bubble +0.84 s (2.0x; pp 32 vs 16), recompute +0.40 s (recompute full vs selective)

A runner-up as fast as the winner lost on memory or, tied on both, on the canonical order; the
line says which.
"""

from __future__ import annotations

from ..diff import value_text
from .space import AXIS_HOLES

PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (part of the step, the holes it depends on, most direct first)
    ("bubble", ("pp", "pp.schedule", "pp.virtual-stages", "train.micro-batch", "dp", "tp", "cp")),
    ("recompute", ("train.recompute", "tp", "cp", "pp", "dp", "train.micro-batch")),
    ("compute", ("tp", "cp", "ep", "pp", "dp", "train.micro-batch", "tp.sequence-parallel")),
    ("optimizer", ("dp.sharding", "dp", "cp", "ep", "pp", "tp")),
    ("exposed tp", ("tp", "tp.sequence-parallel", "order", "train.micro-batch", "dp")),
    ("exposed cp", ("cp", "order", "train.micro-batch", "dp")),
    ("exposed ep", ("ep", "order", "pp.schedule", "train.micro-batch", "dp")),
    ("exposed pp", ("pp", "order", "pp.virtual-stages", "train.micro-batch", "dp", "tp")),
    ("exposed dp", ("dp.sharding", "dp", "order", "pp", "cp", "ep", "train.micro-batch")),
    ("offload", ("tp", "cp", "train.micro-batch", "pp", "dp", "tp.sequence-parallel")),
    ("dp copies", ("dp.sharding", "train.micro-batch", "pp", "dp", "tp", "ep")),
)
"""Each part of the step and the holes it depends on (timing.py's inputs)."""
SHOWN_PARTS = 3
KNOBS_PER_PART = 2
SIGNIFICANT = 0.10
"""A part is named when it accounts for at least this share of the difference (the largest
always is)."""

LABELS = {
    "train.micro-batch": "micro-batch", "train.recompute": "recompute", "dp.sharding": "sharding",
    "pp.schedule": "schedule", "pp.virtual-stages": "virtual-stages", "tp.sequence-parallel": "sequence-parallel",
    "order": "rank order",
}


def parts(breakdown) -> dict[str, float]:
    out = {"compute": breakdown.compute, "recompute": breakdown.recompute, "bubble": breakdown.bubble,
           "optimizer": breakdown.optimizer}
    for axis, seconds in breakdown.exposed.items():
        out[f"exposed {axis}"] = seconds
    out["offload"] = breakdown.offload  # activation offloading's copies (0 without)
    out["dp copies"] = breakdown.copies  # the data-parallel runtime's own copies (0 under Megatron-LM)
    return out


def knob_difference(hole: str, mine: str, theirs: str) -> str:
    """"pp 32 vs 16", "recompute full vs selective", "rank order dp x tp x pp vs tp x dp x pp"."""
    label = hole if hole in AXIS_HOLES else LABELS.get(hole, hole)
    return f"{label} {mine} vs {theirs}"


def percent(fraction: float) -> str:
    """"+12 %", "+1.4 %", "+0.21 %", "+<0.01 %"."""
    value = abs(fraction) * 100
    sign = "+" if fraction >= 0 else "-"
    if value < 0.01:
        return f"{sign}<0.01 %"
    text = f"{value:.0f}" if value >= 10 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"
    return sign + text + " %"


def loss_line(winner, other) -> str:
    """Why `other` ranks below `winner` (both `Candidate`s)."""
    differs = {h: (other.values[h], winner.values[h]) for h in other.values if other.values[h] != winner.values[h]}
    slower = other.step - winner.step
    memory = other.peak_bytes - winner.peak_bytes
    if slower <= 0:
        if memory > 0:
            line = f"same step time, {value_text('bytes', memory)} more peak memory"
        else:
            line = "ties the winner on step time and memory; listed after it by the canonical order"
        shown = [knob_difference(h, *differs[h]) for h in differs][:KNOBS_PER_PART + 1]
        return line + (f" ({', '.join(shown)})" if shown else "")
    mine, theirs = parts(other.prediction.breakdown), parts(winner.prediction.breakdown)
    deltas = sorted(((mine[p] - theirs[p], p) for p in mine), key=lambda d: (-d[0], d[1]))
    named, used = [], set()
    for delta, part in deltas[:SHOWN_PARTS]:
        if delta <= 0 or (named and delta < SIGNIFICANT * slower):
            break
        knobs = [h for h in dict(PARTS)[part] if h in differs and h not in used][:KNOBS_PER_PART]
        used.update(knobs)
        detail = []
        if theirs[part] > 0 and mine[part] / theirs[part] >= 1.5:
            detail.append(f"{mine[part] / theirs[part]:.1f}x")
        detail += [knob_difference(h, *differs[h]) for h in knobs]
        named.append(f"{part} +{value_text('s', delta)}" + (f" ({'; '.join(detail)})" if detail else ""))
    line = f"{percent(slower / winner.step)} step time: " + ", ".join(named)
    rest = [knob_difference(h, *differs[h]) for h in differs if h not in used]
    if rest:
        line += f"; also {', '.join(rest)}"
    if memory < 0:
        line += f"; needs {value_text('bytes', -memory)} less memory"
    return line


def explain_losses(space, candidates: list) -> None:
    """Set `lost_because` on every candidate but the winner."""
    winner = candidates[0]
    for other in candidates[1:]:
        other.lost_because = loss_line(winner, other)


def mark_pareto(candidates: list) -> None:
    """Mark the candidates no other listed one dominates (as fast or faster with no more memory,
    and better in one). Exact for the whole space: anything that dominates a listed candidate is
    at least as fast, so it ranks above it and is listed too."""
    for c in candidates:
        c.pareto = not any(
            o is not c and o.step <= c.step and o.peak_bytes <= c.peak_bytes
            and (o.step < c.step or o.peak_bytes < c.peak_bytes) for o in candidates)
