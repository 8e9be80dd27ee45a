"""Memory: the worst rank's predicted peak against the GPU's memory, minus the reserve."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error
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
                              (train.span_of("recompute"), f"recompute {train.recompute}"),
                              (dp.span_of("sharding"), f"sharding {dp.sharding}")),
                notes=tuple(notes), help=help_)
