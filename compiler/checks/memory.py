"""Memory: the worst rank's predicted peak against the GPU's memory, minus the reserve (E0401),
and a fit by less than the memory model's measured error (W0410)."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error, warning
from ..memory import alternatives, estimate
from ..plan import Plan
from . import rule
from .helpers import gib, labels, layout_span


def breakdown(stage) -> str:
    return (f"params {gib(stage.params)} + grads {gib(stage.grads)} + optimizer {gib(stage.optimizer)} "
            f"+ activations {gib(stage.activations)} + buffers {gib(stage.buffers)}"
            + (f" + p2p {gib(stage.p2p)}" if stage.p2p else "")
            + (f" + embedding backward {gib(stage.embedding_backward)}" if stage.embedding_backward else "")
            + f" = {gib(stage.total)}")


def in_flight(count: int, chunks: int) -> str:
    what = "micro-batch" if chunks == 1 else "chunk micro-batch"
    return f"activations of {count} {what}{'es' if count != 1 else ''} in flight"


def reserve_note(result) -> str:
    """What the reserve is made of (docs/memory-model.md, section 4: each a sourced figure)."""
    o = result.overheads
    if o is None:
        return f"the reserve is {gib(result.reserve_bytes)}"
    return (f"the reserve is the CUDA context {gib(o.cuda_context)}, NCCL buffers {gib(o.nccl)}, cuBLAS "
            f"workspaces {gib(o.cublas)} and the allocator's fragmentation {gib(o.fragmentation)} (5 % of HBM)")


@rule
def fits_in_memory(plan: Plan) -> Iterator[Diagnostic]:
    result = estimate(plan)
    if result is None or result.fits:
        return
    worst = result.peak
    if result.usable_bytes <= 0:
        gpu = plan.cluster.gpu
        yield error("E0401", f"the {gpu.name}'s {gib(result.hbm_bytes)} of memory is less than the "
                    f"{gib(result.reserve_bytes)} parc reserves", gpu.span_of("hbm_bytes") or layout_span(plan),
                    label="nothing left for the model",
                    notes=(reserve_note(result) + f"; the worst rank would need {gib(worst.total)}",),
                    help="state the GPU's real memory, e.g. `hbm 80 GB`, or pick a catalogue GPU")
        return
    over = [s for s in result.stages if s.total > result.usable_bytes]
    pp = len(result.stages)
    where = f"stage {worst.stage} of {pp}" if pp > 1 else "every rank"
    notes = [
        f"{where} ({worst.layers} layers, {in_flight(worst.in_flight, plan.layout.pp.virtual_stages or 1)}): "
        f"{breakdown(worst)}",
        f"usable: {gib(result.hbm_bytes)} of HBM minus a {gib(result.reserve_bytes)} reserve = "
        f"{gib(result.usable_bytes)}",
    ]
    if pp > 1:
        notes.append(f"{len(over)} of {pp} stages exceed it; `parc explain {plan.source}` shows each")
    changes = alternatives(plan)
    need = worst.total - result.usable_bytes
    if changes:
        parts = [f"{a.change} frees {gib(a.freed_bytes)}" + (" (enough alone)" if a.freed_bytes >= need else "")
                 for a in changes]
        help_ = "; ".join(parts)
    else:
        help_ = "spread the model over more GPUs (a larger tp or pp) or use a GPU with more memory"
    train, dp = plan.training, plan.layout.dp
    yield error("E0401", f"the worst rank needs {gib(worst.total)}, more than the {gib(result.usable_bytes)} "
                f"usable on a {plan.cluster.gpu.name}", layout_span(plan),
                label=f"{gib(need)} over",
                labels=labels((train.span_of("micro_batch"), f"micro-batch {train.micro_batch}"),
                              (train.span_of("recompute"), f"recompute {train.recompute_stated}"),
                              (dp.span_of("sharding"), f"sharding {dp.sharding}")),
                notes=tuple(notes), help=help_)


def clearing_changes(plan: Plan, result) -> str | None:
    """The single changes that free enough for the peak to clear the error band, as a help line:
    with d bytes freed the margin grows by d and the band's share of the prediction shrinks by
    band x d, so d must reach (band x reserved - margin) / (1 + band)."""
    band = result.error_band
    need = (band * result.predicted_reserved_bytes - result.margin_bytes) / (1 + band)
    enough = [a for a in alternatives(plan) if a.freed_bytes >= need]
    if not enough:
        return None
    alone = " (clears the band)" if len(enough) == 1 else " (each clears the band alone)"
    return "; ".join(f"{a.change} frees {gib(a.freed_bytes)}" for a in enough) + alone


@rule
def fits_within_the_error(plan: Plan) -> Iterator[Diagnostic]:
    """A "fits" by less than the model's own measured error is a guess, not a verdict: on
    published runs the true peak has been up to `band.ERROR_BAND` above the prediction, and a job
    that needs more than the part fails at its first full step, after the queue wait."""
    result = estimate(plan)
    if result is None or not result.at_risk:
        return
    from ..memory import band

    worst = result.peak
    pp = len(result.stages)
    where = f"stage {worst.stage} of {pp}" if pp > 1 else "every rank"
    reserved = result.predicted_reserved_bytes
    notes = (
        f"{where}: {breakdown(worst)}; predicted torch.cuda.max_memory_reserved() {gib(reserved)} of the "
        f"{gib(result.reserved_limit_bytes)} it can reach",
        f"the band is the worst under-prediction of {band.ROWS} published torchtitan runs "
        f"({band.WORST_UNDER_ROW}: measured {band.WORST_UNDER:.1%} above parc's figure; nine in ten are within "
        f"{band.P90_ABS:.1%} either way); nothing in the memory model is fitted on them "
        f"(benchmarks/memory_fidelity.py, docs/memory-model.md)",
        f"at the band's edge the worst rank would reserve {gib(reserved * (1 + result.error_band))}",
    )
    help_ = clearing_changes(plan, result) or (
        "spread the model over more GPUs (a larger tp or pp) or use a GPU with more memory; "
        "a run that measured its peak (`parc rehearse`) may `allow W0410` on the layout line")
    gpu = plan.cluster.gpu
    yield warning("W0410", f"fits by {gib(result.margin_bytes)}, less than the memory model's measured under-prediction "
                  f"({result.error_band:.1%} on published runs): it may not fit", layout_span(plan),
                  label=f"{gib(result.margin_bytes)} to spare of {gib(result.usable_bytes)} usable",
                  labels=labels((gpu.span_of("hbm_bytes"), f"{gib(result.hbm_bytes)} per GPU")),
                  notes=notes, help=help_)
