"""The memory model: bytes per rank for every pipeline stage, before anything runs.

Public memory estimators under-report by 30 % to 40x because they skip activations, buffers or
pipeline stages; this one counts, per rank and per stage, the model states (`states.py`), the
activations of the micro-batches in flight (`activations.py`, `schedules.py`) and the transient
buffers (`buffers.py`), from the model's exact shapes, for the runtime parc generates.
docs/memory-model.md derives every term and compares it with Korthikanti et al., ZeRO and
Megatron-LM.

Two layers:
- the core (`model.py`): plain functions over a `Shape` and `Knobs` of numbers, cached piece by
  piece, fast enough for search (benchmarks/memory_speed.py);
- this module: the Plan-facing view used by `parc explain` and the memory check, and the
  "what frees how much" alternatives of the memory error, each a re-run of the core with one
  change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..plan import Plan
from .band import ERROR_BAND, MEASURED_RUNTIMES
from .buffers import RESERVE_FIXED, RESERVE_FRACTION, reserve_bytes
from .gpu import Overheads, overheads
from .inputs import RUNTIMES, Knobs, Shape, knobs_of, missing_knobs, shape_of
from .model import StageMemory, loss_holes_bytes, peak, per_stage

__all__ = [
    "RUNTIMES", "RESERVE_FIXED", "RESERVE_FRACTION", "Knobs", "Shape", "StageMemory", "Estimate",
    "Alternative", "estimate", "alternatives", "knobs_of", "shape_of", "missing_knobs", "peak",
    "per_stage", "reserve_bytes", "unpredictable", "Overheads", "overheads", "layout_overheads", "peak_moments",
]


@dataclass(frozen=True)
class Estimate:
    """The memory of a plan: one entry per pipeline stage."""

    runtime: str
    stages: tuple[StageMemory, ...]
    hbm_bytes: int
    reserve_bytes: int
    microbatches: int
    padded_vocab: int
    """tp x the vocabulary rows of the fullest tp rank (the torch runtime pads nothing; Megatron-LM
    pads to a multiple of 128 x tp)."""
    overheads: Overheads | None = None
    """What the GPU holds beyond the tensors (`gpu.py`); `reserve_bytes` is their sum."""

    @property
    def predicted_reserved_bytes(self) -> int:
        """What `torch.cuda.max_memory_reserved()` would report on the worst rank: its peak of
        tensors, cuBLAS workspaces and the allocator's rounding and fragmentation."""
        inside = self.overheads.inside_allocator if self.overheads is not None else 0
        return self.peak_bytes + inside

    @property
    def reserved_limit_bytes(self) -> int:
        """HBM less what the driver and NCCL hold: the most `max_memory_reserved` can reach."""
        outside = self.overheads.outside_allocator if self.overheads is not None else self.reserve_bytes
        return self.hbm_bytes - outside

    @property
    def usable_bytes(self) -> int:
        return self.hbm_bytes - self.reserve_bytes

    @property
    def peak(self) -> StageMemory:
        return max(self.stages, key=lambda s: (s.total, -s.stage))

    @property
    def peak_bytes(self) -> int:
        return self.peak.total

    @property
    def peak_stage(self) -> int:
        return self.peak.stage

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.usable_bytes

    @property
    def margin_bytes(self) -> int:
        """Usable memory less the peak (negative when it does not fit); the same as the reserved
        limit less the predicted reserved figure, since both add the allocator's overheads."""
        return self.usable_bytes - self.peak_bytes

    @property
    def error_band(self) -> float | None:
        """The memory model's measured error (`band.ERROR_BAND`), a fraction of the prediction;
        None for an accounting it was not measured on (`band.MEASURED_RUNTIMES`: Megatron's)."""
        return ERROR_BAND if self.runtime in MEASURED_RUNTIMES else None

    @property
    def at_risk(self) -> bool:
        """It fits, but by less than the model's measured error: the worst under-prediction on
        published runs, applied to the predicted `max_memory_reserved` (the figure the band was
        measured on), would take it past the reserved limit. Search still ranks by the point
        verdict (`fits`); the band is a warning (W0410), not a second limit."""
        band = self.error_band
        return band is not None and self.fits and self.margin_bytes < band * self.predicted_reserved_bytes


def unpredictable(plan: Plan) -> str | None:
    """Why the plan's memory cannot be predicted, or None: open holes, or more pipeline chunks
    than layers without a written split that fills them (E0315 reports it; only the end chunks
    may be empty, holding the embedding or the loss alone, and only a split says which)."""
    missing = missing_knobs(plan)
    if missing:
        return "holes are open (" + ", ".join(missing) + "); `parc search` fills them"
    chunks = (plan.layout.pp.degree or 1) * (plan.layout.pp.virtual_stages or 1)
    split = plan.layout.pp.split
    if chunks > plan.model.layers and (split is None or len(split) != chunks or sum(split) != plan.model.layers):
        return f"{chunks:,} pipeline chunks for {plan.model.layers:,} layers (E0315)"
    if chunks > MAX_CHUNKS:
        return f"{chunks:,} pipeline chunks: the model walks pipelines of up to {MAX_CHUNKS} chunks"
    return None


def estimate(plan: Plan, runtime: str | None = None, loss_kernel: str = "") -> Estimate | None:
    """Per-stage memory of a plan; None when it cannot be predicted (`unpredictable`). The
    runtime's accounting is the plan's target's (`targets.memory_runtime`) unless given;
    `loss_kernel` a fused cross-entropy the run calls where no spec can say it
    (`Knobs.loss_kernel`: the published runs' reader)."""
    if unpredictable(plan) is not None:
        return None
    runtime = runtime or _target_runtime(plan)
    knobs = knobs_of(plan, runtime)
    if knobs is None:
        return None
    if loss_kernel:
        knobs = replace(knobs, loss_kernel=loss_kernel)
    from .parameters import padded_vocab

    hbm = plan.cluster.gpu.hbm_bytes
    shape = shape_of(plan)
    stages = per_stage(shape, knobs)
    gpu = layout_overheads(plan, *loss_holes_bytes(shape, knobs))
    return Estimate(runtime=runtime, stages=stages, hbm_bytes=hbm,
                    reserve_bytes=gpu.total, microbatches=knobs.microbatches,
                    padded_vocab=padded_vocab(plan.model.vocab, knobs.tp, runtime), overheads=gpu)


def peak_moments(plan: Plan, result: Estimate) -> tuple:
    """Each stage's `moment.PeakMoment` (None where the walk is not enumerated): which action of
    the schedule sets its peak. A walk of every action per stage: `parc explain` asks, not search."""
    from .moment import name_moment

    k = knobs_of(plan, result.runtime)
    if k is None:
        return (None,) * len(result.stages)
    return tuple(name_moment(k.schedule, k.pp, k.virtual_stages, k.microbatches, s.stage, s.moment,
                             (s.backward_of_step, s.embedding_peak))
                 for s in result.stages)


def layout_overheads(plan: Plan, cached: int = 0, staged: int = 0) -> Overheads:
    """The GPU overheads of the plan's layout: one NCCL communicator per axis of degree > 1
    (hsdp's replicate groups a second data-parallel one), `cached` bytes of freed logits and
    `staged` bytes of the output layer's freed all-gather staging (`gpu.loss_holes`)."""
    degrees = {axis: plan.layout.degree(axis) or 1 for axis in ("tp", "pp", "dp", "cp", "ep")}
    return overheads(plan.cluster.gpu.hbm_bytes, degrees, cached, staged)


@dataclass(frozen=True)
class Alternative:
    """One change to the spec and the peak it would give."""

    change: str
    """As a user would write it: `recompute selective`, `sharding zero1`, `micro-batch 1`."""
    peak_bytes: int
    freed_bytes: int


MAX_CHUNKS = 512
"""Pipelines with more chunks (pp x virtual stages) are not predicted: the schedule walk is
quadratic in them, and published runs use at most about a hundred (Narayanan et al.'s 530B: 105)."""

STRONGER_RECOMPUTE = {"none": "selective", "selective": "full"}
STRONGER_SHARDING = {"none": "zero1", "zero1": "zero2", "zero2": "zero3"}


def candidate_changes(k: Knobs, global_batch: int, batch_degree: int,
                      most_offloaded: int = 0) -> list[tuple[str, Knobs]]:
    """Single changes that keep the layout valid and usually lower memory. `most_offloaded`: the
    most layers `offload-activations` may take (one fewer than the smallest chunk holds, E0371)."""
    out: list[tuple[str, Knobs]] = []
    if k.offload_layers:  # no recomputation beside offloading (E0372): offload more instead
        if most_offloaded > k.offload_layers:
            out.append((f"offload-activations {most_offloaded}", replace(k, offload_layers=most_offloaded)))
    elif k.recompute in STRONGER_RECOMPUTE:
        mode = STRONGER_RECOMPUTE[k.recompute]
        out.append((f"recompute {mode}", replace(k, recompute=mode, recompute_layers=None)))
    elif k.recompute == "full" and k.recompute_layers is not None:
        out.append(("recompute full", replace(k, recompute_layers=None)))
    if k.sharding in STRONGER_SHARDING and k.dense_replicas > 1:
        mode = STRONGER_SHARDING[k.sharding]
        out.append((f"sharding {mode}", replace(k, sharding=mode)))
    if k.micro_batch > 1:
        for smaller in (1, k.micro_batch // 2):
            if smaller >= 1 and smaller < k.micro_batch and global_batch % (batch_degree * smaller) == 0:
                accum = global_batch // (batch_degree * smaller)
                out.append((f"micro-batch {smaller}", replace(k, micro_batch=smaller, microbatches=accum)))
                break
    if k.tp > 1 and not k.sequence_parallel:
        out.append(("sequence-parallel on", replace(k, sequence_parallel=True)))
    return out


def _target_runtime(plan: Plan) -> str:
    from ..targets import memory_runtime

    return memory_runtime(plan.target)


def alternatives(plan: Plan, runtime: str | None = None) -> list[Alternative]:
    """What each single change would free on the worst rank, largest first."""
    runtime = runtime or _target_runtime(plan)
    knobs = knobs_of(plan, runtime)
    if knobs is None or unpredictable(plan) is not None:
        return []
    shape = shape_of(plan)
    base, _ = peak(shape, knobs)
    found = []
    chunks = knobs.pp * knobs.virtual_stages
    most = min((n for n in knobs.split if n), default=1) - 1 if knobs.split else shape.layers // chunks - 1
    for change, changed in candidate_changes(knobs, plan.training.global_batch, plan.layout.batch_degree or 1, most):
        bytes_, _ = peak(shape, changed)
        if bytes_ < base:
            found.append(Alternative(change=change, peak_bytes=bytes_, freed_bytes=base - bytes_))
    return sorted(found, key=lambda a: (-a.freed_bytes, a.change))
