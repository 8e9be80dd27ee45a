"""Pipeline: how layers split over stages and chunks, and what each torch schedule accepts."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error, warning
from ..memory.schedules import interleaved_accepts, rounds
from ..plan import Plan
from ..stages import V_SCHEDULES, empty_ends_split, layers_per_chunk
from . import rule
from .helpers import axis_span, divisors, first_span, labels, model_label, suggest
from .predicates import (
    INTERLEAVED,
    SINGLE,
    layers_fill_chunks,
    schedule_rejects_microbatches,
    virtual_stages_fit,
)

MAX_SPLIT_SHOWN = 64
"""A help line spells out a split of at most this many chunks."""


def _pp_v(plan: Plan) -> tuple[int, int] | None:
    pp = plan.layout.pp
    if pp.degree is None or pp.virtual_stages is None or pp.schedule is None:
        return None
    return pp.degree, pp.virtual_stages


def balanced_split(layers: int, chunks: int) -> list[int]:
    """An uneven split that keeps the ends light (they hold the embedding and the loss)."""
    base, extra = divmod(layers, chunks)
    sizes = [base] * chunks
    order = list(range(1, chunks - 1)) + [0, chunks - 1] if chunks > 2 else list(range(chunks))
    for i in order[:extra]:
        sizes[i] += 1
    return sizes


def spelled_split(split: tuple[int, ...]) -> str:
    """`pp { split [...] }` as a help line writes it: past MAX_SPLIT_SHOWN chunks the repeated
    inner entries are shortened and counted (the line stays readable and says what to type)."""
    if len(split) <= MAX_SPLIT_SHOWN:
        return f"`pp {{ split [{', '.join(map(str, split))}] }}`"
    inner = split[1:-1]
    return (f"`pp {{ split [{split[0]}, {inner[0]}, ..., {inner[-1]}, {split[-1]}] }}` "
            f"({len(split)} entries, {len(inner)} inner ones of {inner[0]})")


def _split_example(layers: int, chunks: int) -> str:
    """`, e.g. split [...]` for an E0316 help: the balanced split, or, one or two layers short of
    the chunks, the empty-ends one; nothing past MAX_SPLIT_SHOWN chunks or when none exists."""
    split = balanced_split(layers, chunks) if chunks <= layers else empty_ends_split(layers, chunks)
    if split is None or chunks > MAX_SPLIT_SHOWN:
        return ""
    return f", e.g. `split [{', '.join(map(str, split))}]`"


@rule
def layers_split_over_pipeline(plan: Plan) -> Iterator[Diagnostic]:
    known = _pp_v(plan)
    if known is None:
        return
    pp, v = known
    chunks = pp * v
    layers = plan.model.layers
    split = plan.layout.pp.split
    pp_spans = plan.layout.pp
    if layers_fill_chunks(layers, pp, v, split) is None:
        return
    if split is not None:
        span = pp_spans.span_of("split")
        if len(split) != chunks:
            example = _split_example(layers, chunks)
            yield error("E0316", f"split has {len(split)} entries; pp {pp} x {v} virtual stage{'s' if v > 1 else ''} "
                        f"needs {chunks}", span, label=f"{len(split)} entries",
                        labels=labels((axis_span(plan, "pp"), f"pp {pp}"),
                                      (pp_spans.span_of("virtual_stages"), f"{v} chunks per rank")),
                        help=f"write {chunks} entries summing to {layers}{example}")
        elif sum(split) != layers:
            example = _split_example(layers, chunks)
            yield error("E0316", f"split sums to {sum(split)} layers; the model has {layers}", span,
                        label=f"{' + '.join(map(str, split[:4]))}{' + ...' if len(split) > 4 else ''} = {sum(split)}",
                        labels=labels(model_label(plan, "layers", f"{layers} layers")),
                        help=f"make the entries sum to {layers}{example}")
        return
    if layers < chunks:
        most = max(1, layers // pp)
        fewer = (f"use at most {most} virtual stage{'s' if most != 1 else ''} with pp {pp}"
                 + (f", or at most pp {layers // v}" if layers // v >= 1 and v > 1 else ""))
        ends = empty_ends_split(layers, chunks)
        what = ("the embedding and the loss chunks of their own" if ends and ends[-1] == 0
                else "the embedding a chunk of its own")
        help_ = (f"give {what}: {spelled_split(ends)}, or {fewer}" if ends
                 else f"every chunk needs a layer: {fewer}")
        yield error("E0315", f"{layers} layers cannot fill {pp} stages x {v} chunks", first_span(
                    pp_spans.span_of("virtual_stages"), axis_span(plan, "pp")),
                    label=f"{pp} x {v} = {chunks} chunks for {layers} layers",
                    labels=labels(model_label(plan, "layers", f"{layers} layers"), (axis_span(plan, "pp"), f"pp {pp}")),
                    help=help_)
        return
    sizes = layers_per_chunk(layers, chunks, None)
    what = f"{pp} stages" + (f" x {v} chunks" if v > 1 else "")
    options = suggest(divisors(layers), pp, ok=lambda d: d > 1 and layers % (d * v) == 0)
    if chunks <= MAX_SPLIT_SHOWN:
        help_ = f"write the uneven split: `pp {{ split [{', '.join(map(str, balanced_split(layers, chunks)))}] }}`"
        if options:
            help_ += f", or use pp {options}"
    else:
        help_ = f"use pp {options}" if options else f"write a split of {chunks} entries summing to {layers}"
    yield error("E0315", f"{layers} layers do not split evenly over {what}",
                first_span(axis_span(plan, "pp")), label=f"{layers} / {chunks} = {layers / chunks:.2f} layers per chunk",
                labels=labels(model_label(plan, "layers", f"{layers} layers"),
                              (pp_spans.span_of("virtual_stages"), f"{v} chunks per rank")),
                notes=(f"without a split the first {layers % chunks} chunks would take {sizes[0]} layers and the "
                       f"others {sizes[-1]}",),
                help=help_)


@rule
def virtual_stages_match_schedule(plan: Plan) -> Iterator[Diagnostic]:
    known = _pp_v(plan)
    if known is None:
        return
    pp, v = known
    schedule = plan.layout.pp.schedule
    spans = plan.layout.pp
    span = first_span(spans.span_of("virtual_stages"), spans.span_of("schedule"), axis_span(plan, "pp"))
    sched_label = labels((spans.span_of("schedule"), f"schedule {schedule}"))
    if virtual_stages_fit(schedule, pp, v):
        return
    if schedule in SINGLE and v != 1:
        yield error("E0317", f"{schedule} runs one chunk per rank, not {v}", span, label=f"{v} virtual stages",
                    labels=sched_label,
                    help="use `schedule interleaved-1f1b` for several chunks per rank, or `virtual-stages 1`")
    elif schedule in V_SCHEDULES and v != 2:
        yield error("E0317", f"{schedule} runs exactly 2 chunks per rank in a V, not {v}", span,
                    label=f"{v} virtual stages", labels=sched_label, help="write `virtual-stages 2` (or leave it out)")
    elif schedule in INTERLEAVED and v < 2 and pp > 1:
        yield error("E0317", f"{schedule} needs at least 2 chunks per rank", span, label=f"{v} virtual stage",
                    labels=sched_label, help="write `virtual-stages 2`, or use `schedule 1f1b`")


def microbatches(plan: Plan) -> int | None:
    return plan.training.grad_accum


@rule
def schedule_accepts_microbatches(plan: Plan) -> Iterator[Diagnostic]:
    known = _pp_v(plan)
    m = microbatches(plan)
    if known is None or m is None:
        return
    pp, v = known
    if pp == 1:
        return
    schedule = plan.layout.pp.schedule
    spans = plan.layout.pp
    span = first_span(spans.span_of("schedule"), axis_span(plan, "pp"))
    train = plan.training
    m_labels = labels((train.span_of("global_batch"), f"global batch {train.global_batch:,}"),
                      (train.span_of("micro_batch"), f"micro-batch {train.micro_batch}"))
    arithmetic = (f"micro-batches per step: {train.global_batch:,} / ({plan.layout.batch_degree} x "
                  f"{train.micro_batch}) = {m}")
    problem = schedule_rejects_microbatches(schedule, pp, m)
    if problem == "E0318":
        count, _ = rounds(pp, m)
        good = [x for x in (m // pp * pp + i * pp for i in (-1, 0, 1, 2)) if x > 0 and interleaved_accepts(pp, x)]
        yield error("E0318", f"{schedule} rejects {m} micro-batches over pp {pp}", span,
                    label=f"{count} rounds; {m} % {count} = {m % count}", labels=m_labels,
                    notes=(arithmetic, f"torch splits m into max(1, m // pp) = {count} rounds and needs m to be a "
                           "multiple of it"),
                    help=f"make the micro-batches per step a multiple of {pp}, e.g. {suggest(good, m)}")
    elif schedule in INTERLEAVED and m % pp:
        yield warning("W0319", f"{m} micro-batches are not a multiple of pp {pp}", span,
                      label=f"{m} % {pp} = {m % pp}", labels=m_labels,
                      notes=(arithmetic,),
                      help=f"use {m - m % pp or pp} or {m - m % pp + pp} micro-batches per step "
                      "(change global-batch or micro-batch), or acknowledge with `allow W0319`")
    if problem == "E0320":
        yield error("E0320", f"dualpipe-v needs at least {2 * pp} micro-batches, not {m}", span,
                    label=f"2 x pp {pp} = {2 * pp}", labels=m_labels, notes=(arithmetic,),
                    help=f"raise the micro-batches per step to {2 * pp} (a larger global batch or a smaller "
                    "micro-batch), or use fewer stages")
