"""Batch: the global batch over the data-parallel ranks, and micro-batches over the pipeline."""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..diagnostics import Diagnostic, error, warning
from ..memory.schedules import ZERO_BUBBLE
from ..plan import Plan
from . import rule
from .helpers import axis_span, divisors, first_span, labels, suggest
from .predicates import microbatches_fill_pipeline

BUBBLE_LIMIT = 0.10


def bubble_ratio(schedule: str, pp: int, v: int, m: int) -> float:
    """Idle time over ideal (busy) time, Narayanan et al. 2021: (pp - 1) / (v x m), v = 1 for
    gpipe and 1f1b; zero-bubble schedules fill two thirds of it with weight-gradient work (Qi et
    al. 2024, ZB-H1, when forward, input- and weight-backward take equal time)."""
    if pp <= 1 or m <= 0:
        return 0.0
    ratio = (pp - 1) / ((v if schedule not in ("gpipe", "1f1b") else 1) * m)
    return ratio / 3 if schedule in ZERO_BUBBLE else ratio


def bubble_fraction(schedule: str, pp: int, v: int, m: int) -> float:
    """The bubble as a share of the whole step: idle / (busy + idle)."""
    ratio = bubble_ratio(schedule, pp, v, m)
    return ratio / (1 + ratio)


def _batch_labels(plan: Plan):
    train = plan.training
    layout = plan.layout
    pairs = [(train.span_of("global_batch"), f"global batch {train.global_batch:,}"),
             (axis_span(plan, "dp"), f"dp {layout.dp.degree}")]
    if layout.ep.degree and not layout.ep.folded_over and layout.ep.degree > 1:
        pairs.append((axis_span(plan, "ep"), f"ep {layout.ep.degree} (its ranks take batch slices too)"))
    return pairs


@rule
def global_batch_divides(plan: Plan) -> Iterator[Diagnostic]:
    train = plan.training
    degree = plan.layout.batch_degree
    micro = train.micro_batch
    if degree is None or micro is None or train.grad_accum is not None:
        return
    unit = degree * micro
    batch = train.global_batch
    who = "dp" if degree == (plan.layout.dp.degree or 1) else "dp x ep"
    notes = [f"{batch:,} / ({who} {degree} x micro-batch {micro}) = {batch / unit:,.2f} micro-batches per rank"]
    per_rank = batch // degree if batch % degree == 0 else None
    if per_rank is not None:
        fits = suggest(divisors(per_rank), micro)
        help_ = f"use micro-batch {fits} (divisors of {batch:,} / {degree} = {per_rank:,})"
    else:
        low, high = batch // unit * unit, (batch // unit + 1) * unit
        help_ = f"use global-batch {low:,} or {high:,} (multiples of {who} {degree} x micro-batch {micro})"
        if low == 0:
            help_ = f"use global-batch {high:,} (a multiple of {who} {degree} x micro-batch {micro})"
    span = first_span(train.span_of("micro_batch"), train.span_of("global_batch"))
    yield error("E0321", f"global batch {batch:,} does not divide into {who} {degree} x micro-batch {micro} = "
                f"{unit:,}", span, label=f"{batch:,} / {unit:,} is not whole",
                labels=labels(*_batch_labels(plan)), notes=tuple(notes), help=help_)


@rule
def enough_microbatches(plan: Plan) -> Iterator[Diagnostic]:
    pp = plan.layout.pp.degree
    m = plan.training.grad_accum
    if not pp or m is None or microbatches_fill_pipeline(m, pp):
        return
    train = plan.training
    degree = plan.layout.batch_degree or 1
    smaller = [d for d in divisors(train.micro_batch or 1) if train.global_batch // (degree * d) >= pp]
    options = []
    if smaller:
        options.append(f"micro-batch {max(smaller)}")
    options.append(f"global-batch {pp * degree * (train.micro_batch or 1):,}")
    fewer = [d for d in divisors(plan.model.layers) if 1 < d <= m]
    if fewer:
        options.append(f"pp {max(fewer)} or less")
    yield error("E0322", f"{m} micro-batch{'es' if m != 1 else ''} cannot fill {pp} pipeline stages",
                first_span(train.span_of("micro_batch"), axis_span(plan, "pp")),
                label=f"{m} micro-batches per step",
                labels=labels((axis_span(plan, "pp"), f"pp {pp}"), *_batch_labels(plan)),
                notes=(f"micro-batches per step: {train.global_batch:,} / ({degree} x {train.micro_batch}) = {m}",),
                help="use " + ", or ".join(options))


@rule
def pipeline_bubble(plan: Plan) -> Iterator[Diagnostic]:
    pp = plan.layout.pp
    m = plan.training.grad_accum
    if not pp.degree or pp.degree == 1 or m is None or pp.schedule is None or pp.virtual_stages is None or m < pp.degree:
        return
    fraction = bubble_fraction(pp.schedule, pp.degree, pp.virtual_stages, m)
    if fraction <= BUBBLE_LIMIT:
        return
    # idle / step <= 10 % when idle / busy <= 1/9: m >= 9 (pp - 1) / v (/ 3 for zero-bubble)
    needed = max(m, math.ceil(bubble_ratio(pp.schedule, pp.degree, pp.virtual_stages, 1) * 9 - 1e-9))
    while bubble_fraction(pp.schedule, pp.degree, pp.virtual_stages, needed) > BUBBLE_LIMIT:
        needed += 1  # at most once or twice: rounding of the line above
    v = pp.virtual_stages if pp.schedule not in ("gpipe", "1f1b") else 1
    ratio = f"({pp.degree} - 1) / " + (f"({v} x {m})" if v > 1 else f"{m}")
    if pp.schedule in ZERO_BUBBLE:
        ratio += " / 3"
    r = bubble_ratio(pp.schedule, pp.degree, pp.virtual_stages, m)
    train = plan.training
    yield warning("W0323", f"the pipeline bubble is {fraction:.0%} of the step", first_span(pp.span_of("schedule"),
                  axis_span(plan, "pp")), label=f"idle {fraction:.1%} of the step",
                  labels=labels((axis_span(plan, "pp"), f"pp {pp.degree}"),
                                (train.span_of("global_batch"), f"{m} micro-batches per step")),
                  notes=(f"idle / busy = {ratio} = {r:.3f} (Narayanan et al. 2021); idle / step = {r:.3f} / "
                         f"{1 + r:.3f} = {fraction:.1%}: the end stages wait {pp.degree - 1} slot{'s' if pp.degree > 2 else ''} while the pipeline "
                         "fills and drains (no communication counted; `parc explain` gives the time model's share, "
                         "communication in the step)",),
                  help=f"{needed} or more micro-batches per step bring it under {BUBBLE_LIMIT:.0%} (a larger global "
                  "batch or a smaller micro-batch); an interleaved schedule divides it by its virtual stages; "
                  "acknowledge with `allow W0323`")
