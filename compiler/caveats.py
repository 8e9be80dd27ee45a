"""Where a prediction leans on what the time model measured least: the caveats `parc explain`
prints under its time section (`time.caveats` in its JSON).

The time model's errors on published runs are not spread evenly (docs/time-model.md). These
situations carry most of them, and whoever picks a layout from a prediction should know when it
is in one:

- an attention-heavy step: how fast a fused attention kernel runs inside a training run, against
  its own benchmarks, differs by runtime and release (`attention_sustained`, fitted on NeMo
  24.03's long-sequence table read as cuDNN's kernel, 0.6, though its launcher ran
  FlashAttention-2 at about that kernel's benchmark speed; NeMo 25.04 on B200 and the 2025
  ModelZoo runs sustained more, llm-foundry's Triton kernel less), so the longer the sequence,
  the wider the error;
- a GPU whose tensor cores no published matmul sweep measured: its GEMMs take a measured sibling's
  ceiling carried by the power law (`kernels.MAMF_CARRIED`; GB300 runs about 1.2x GB200 in
  Megatron-Bridge's tables where the law gives it 1.11x), a measured part's
  (`kernels.MAMF_FLAGSHIP`), or Hopper's fitted one (CDNA3);
- a step the expert-parallel all-to-all dominates: the mixture-of-experts rows are the model's
  least accurate class (routing, the dispatcher's kernels and the fabric under many-to-many
  traffic);
- NVFP4 products: no FP4 matmul sweep of any part is published (their ceiling is FP8's measured
  fraction of the FP4 peak): an assumption, not a measured miss (Megatron-Bridge's NVFP4 rows are
  predicted no worse than the rest);
- a job larger than any published run the model was compared with (`LARGEST_COMPARED`): nothing
  measured says how its collectives, stragglers and fabric behave there.

A caveat names the term and the section of docs/time-model.md with the evidence; none changes a
number.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import kernels
from .plan import Plan

ATTENTION_SHARE = 0.4
"""A layer whose attention is at least this share of its computation is attention-heavy: there a
spread of 0.6-0.9 in the sustained kernel speed moves the step by a fifth or more."""

EP_SHARE = 0.2
"""A step whose exposed expert-parallel all-to-all is at least this share of it is dominated by
the dispatch."""


LARGEST_COMPARED = 16384
"""The most GPUs of any published run in benchmarks/data/ (Meta's Llama 3 405B on 16,384 H100):
beyond it a prediction is an extrapolation (a test keeps it equal to the data's largest)."""


@dataclass(frozen=True, slots=True)
class Caveat:
    """One reason to hold a prediction loosely: a stable code and a sentence saying why."""

    code: str
    text: str

    def json(self) -> dict[str, str]:
        return {"code": self.code, "text": self.text}


def attention_caveat(share: float | None) -> Caveat | None:
    if share is None or share < ATTENTION_SHARE:
        return None
    return Caveat("attention", f"attention is {share:.0%} of a layer's computation: its speed in a training run "
                  "differs by runtime and release more than any other term (docs/time-model.md, \"The "
                  "long-sequence table on B200: how fast attention ran beside the rest\")")


def gemm_ceiling_caveat(gpu: str, generation: str) -> Caveat | None:
    """A part no matmul sweep measured, outside the generations whose own runs fitted the ceiling."""
    if gpu in kernels.MAMF_BF16 or generation in ("ampere", "hopper"):
        return None
    flagship = kernels.MAMF_FLAGSHIP.get(generation) if generation in kernels.CEILING_SCALED else None
    if gpu in kernels.MAMF_CARRIED:
        why = (f"its GEMMs take the {kernels.MAMF_CARRIED[gpu]}'s measured ceiling, carried by the SM counts and "
               "board powers (power.power_limited_throughput)")
    elif flagship is not None:
        why = f"its GEMMs take the {flagship}'s measured ceiling"
    else:
        why = "its GEMMs take Hopper's fitted ceiling"
    return Caveat("gemm-ceiling", f"no matmul sweep of the {gpu} is published: {why} (docs/time-model.md, "
                  "\"Blackwell Ultra: GB300 and B300, never fitted\")")


def fp4_caveat(gemms: str) -> Caveat | None:
    """NVFP4 products (`gemms`, the precision the runtime runs the linears in): no FP4 matmul sweep
    of any part is published, so their ceiling is FP8's measured fraction of the FP4 peak."""
    if gemms != "nvfp4":
        return None
    return Caveat("fp4-gemm", "no FP4 matmul sweep of any part is published: NVFP4 products run at FP8's measured "
                  "fraction of the FP4 peak (docs/time-model.md, \"NVFP4: Megatron-Bridge's 4-bit rows, never "
                  "fitted\")")


def ep_caveat(exposed_ep: float, step: float) -> Caveat | None:
    if step <= 0 or exposed_ep / step < EP_SHARE:
        return None
    return Caveat("expert-all-to-all", f"the expert-parallel all-to-all exposes {exposed_ep / step:.0%} of the step: "
                  "mixture-of-experts predictions are the model's least accurate class (docs/time-model.md, "
                  "\"The small-expert MoE rows, part by part\")")


def scale_caveat(gpus: int | None) -> Caveat | None:
    if not gpus or gpus <= LARGEST_COMPARED:
        return None
    return Caveat("scale", f"{gpus:,} GPUs is more than any published run the model was compared with "
                  f"({LARGEST_COMPARED:,}): its collectives, stragglers and fabric there are extrapolated "
                  "(docs/time-model.md, \"Throughput against GPU count\")")


def caveats(plan: Plan, attention_share: float | None, exposed_ep: float, step: float,
            gemms: str = "bf16") -> tuple[Caveat, ...]:
    """The caveats of a predicted plan, in a fixed order (attention, the GEMM ceiling, FP4's, the
    all-to-all, the scale): `attention_share` from `timing.attention_share`, `exposed_ep` and
    `step` the prediction's exposed ep seconds and step seconds, `gemms` the precision its
    runtime runs the linears in (`timing.gemm_precision`)."""
    gpu = plan.cluster.gpu
    found = (attention_caveat(attention_share), gemm_ceiling_caveat(gpu.name, gpu.generation or ""),
             fp4_caveat(gemms), ep_caveat(exposed_ep, step), scale_caveat(plan.cluster.world_size))
    return tuple(c for c in found if c is not None)


def of_prediction(plan: Plan, breakdown, sw=None) -> tuple[Caveat, ...]:
    """`caveats` of a plan and its predicted step (`timing.Breakdown`) as the runtime `sw` (else the
    plan's target's) runs it: the one entry explain, diff, report, search and the published runs'
    evaluation share."""
    from .targets import software_of
    from .timing import attention_share, gemm_precision

    sw = sw if sw is not None else software_of(plan)  # read once: the attention share reads it too
    gemms = gemm_precision(plan.training.precision, sw)
    return caveats(plan, attention_share(plan, sw=sw), breakdown.exposed.get("ep", 0.0), breakdown.step, gemms)
