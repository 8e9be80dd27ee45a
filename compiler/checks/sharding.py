"""Data-parallel sharding: hsdp's factors, and zero3 where the pipeline undoes it."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error, warning
from ..memory import knobs_of, shape_of, unpredictable
from ..memory.model import rank_params
from ..memory.schedules import ZERO_BUBBLE
from ..memory.states import compute_copy_bytes
from ..plan import Plan
from . import rule
from .helpers import axis_span, divisors, first_span, gib, labels
from .predicates import hsdp_factors_match


@rule
def hsdp_factors(plan: Plan) -> Iterator[Diagnostic]:
    dp = plan.layout.dp
    if dp.sharding != "hsdp" or dp.degree is None or dp.replicate is None or dp.shard is None:
        return
    if hsdp_factors_match(dp.replicate, dp.shard, dp.degree):
        return
    pairs = [f"{r} x {dp.degree // r}" for r in divisors(dp.degree) if 1 < r < dp.degree][:4]
    yield error("E0350", f"hsdp {dp.replicate} x {dp.shard} = {dp.replicate * dp.shard} ranks, but dp is {dp.degree}",
                dp.span_of("sharding"), label=f"{dp.replicate} x {dp.shard} = {dp.replicate * dp.shard}",
                labels=labels((axis_span(plan, "dp"), f"dp {dp.degree}")),
                help=f"write `sharding hsdp R x S` with R x S = {dp.degree}"
                + (f", e.g. {' or '.join(pairs[:2])}" if pairs else ""))


@rule
def bucket_without_zero1(plan: Plan) -> Iterator[Diagnostic]:
    dp = plan.layout.dp
    if dp.bucket is None or dp.sharding in ("zero1", None):
        return
    yield error("E0354", f"`bucket` sizes zero1's gradient buckets, but the sharding is {dp.sharding}",
                dp.span_of("bucket"), label="used only by zero1",
                labels=labels((dp.span_of("sharding"), f"sharding {dp.sharding}")),
                help=f"remove `bucket {dp.bucket}`, or write `sharding zero1`")


def _sharding_span(plan: Plan):
    return first_span(plan.layout.dp.span_of("sharding"), axis_span(plan, "dp"))


@rule
def zero3_with_pipeline(plan: Plan) -> Iterator[Diagnostic]:
    layout = plan.layout
    if layout.dp.sharding not in ("zero3", "hsdp") or not layout.pp.degree or layout.pp.degree == 1:
        return
    k = knobs_of(plan)
    if k is None or unpredictable(plan) is not None:
        return
    if k.schedule in ZERO_BUBBLE:
        yield warning("W0352", f"zero3 under {k.schedule} runs as zero2", _sharding_span(plan),
                      label="parameters stay gathered from forward to backward",
                      labels=labels((layout.pp.span_of("schedule"), f"schedule {k.schedule}")),
                      notes=("torch's zero-bubble schedules give wrong gradients with FSDP2 unless "
                             "reshard_after_forward=False (docs/torch-cpu.md, caveat 1)",),
                      help="write `sharding zero2` to say what runs, or acknowledge with `allow W0352`")
        return
    params = rank_params(shape_of(plan), k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, "torch")
    worst = max(params, key=lambda r: r.params.total)
    copy = compute_copy_bytes(worst.params, k.copy_precision)
    grads = 4 * worst.params.total
    yield warning("W0351", "zero3 under pipelining keeps each stage's parameters gathered for the whole step",
                  _sharding_span(plan), label="gathered once per step, held until the last backward",
                  labels=labels((axis_span(plan, "pp"), f"pp {k.pp}")),
                  notes=(f"stage {worst.chunks[0].rank}: {gib(copy)} of bf16 parameters stay gathered from the first "
                         f"forward to the last backward (reshard_after_forward is off under pipelining, as in "
                         "torchtitan: otherwise they would be gathered again for each of the "
                         f"{k.microbatches} micro-batches)",
                         f"torch.distributed.pipelining also keeps {gib(grads)} of fp32 gradients unsharded until the "
                         "step ends, so zero3 saves only the sharded parameters between steps over zero2"),
                  help="write `sharding zero2` to say what runs, or acknowledge with `allow W0351`")


@rule
def sharding_needs_replicas(plan: Plan) -> Iterator[Diagnostic]:
    sharding = plan.layout.dp.sharding
    if sharding in (None, "none"):
        return
    k = knobs_of(plan)
    if k is None or k.dense_replicas > 1:
        return
    yield warning("W0353", f"{sharding} has a single data-parallel rank to shard over", _sharding_span(plan),
                  label="dp x cp = 1", help="use `sharding none`, or acknowledge with `allow W0353`")
