"""The time model's global constants: a handful of numbers, each with where it came from.

Nothing here is keyed by model or by run. Some constants are fitted by `benchmarks/fidelity.py`
on the published runs of `benchmarks/data/published.yaml` (least squares on the log error
of TFLOP/s per GPU); `eager_efficiency`, the speed of parc's own eager-PyTorch runtime relative to
those fused-kernel runs, is fitted afterwards on torchtitan's published runs; the others are fixed
from a stated source because the published runs cannot tell them apart.
`python benchmarks/fidelity.py --write` refits and rewrites the block between the markers below
and `docs/time-model.md`; a test fails when either is stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from .frozen import hash_once


@dataclass(frozen=True)
class Constants:
    """Every number the time model uses that is not a count of the model or a datasheet figure."""

    gemm_ampere: float
    """Achievable fraction of dense peak for a large GEMM on Ampere (A100)."""
    gemm_hopper: float
    """Achievable fraction of dense peak for a large GEMM on Hopper (H100, H200, H800)."""
    intensity_half: float
    """GEMM arithmetic intensity (FLOP per byte moved) at which efficiency is half its ceiling,
    in units of the GPU's ridge point (peak FLOP/s / HBM bytes/s)."""
    kernel_overhead: float
    """Seconds each kernel costs beyond its arithmetic and bytes: launch, ramp-up and the tail of
    its last wave. Small kernels (small models, short micro-batches) pay it most."""
    bus_nvlink: float
    """Achieved fraction of NVLink (or xGMI, PCIe) bandwidth in collectives: NCCL bus bandwidth
    over link bandwidth."""
    bus_network: float
    """Achieved fraction of NIC bandwidth in collectives that cross nodes."""
    hbm_efficiency: float
    """Achieved fraction of HBM bandwidth in memory-bound kernels (norms, activations, softmax)."""
    latency_intra: float
    """Seconds per algorithm step of a collective inside an NVLink domain or node."""
    latency_inter: float
    """Seconds per algorithm step of a collective that crosses nodes."""
    eager_efficiency: float
    """Speed of an eager PyTorch step's computation (parc's generated runtime; torchtitan without
    torch.compile) relative to the fused-kernel Megatron-LM runs the GEMM constants are fitted on:
    one kernel per elementwise op, no fused GEMM epilogues, no Transformer Engine. Fitted by
    `benchmarks/fidelity.py` on torchtitan's published FSDP2 runs, with the others held fixed."""
    attention_sustained: float
    """Speed of a fused attention kernel in a training run relative to the published kernel
    benchmarks its curves are fitted on (`kernels.py`: short bursts at one shape), on every
    runtime and kernel. Fitted by `benchmarks/fidelity.py` on NeMo's long-sequence table read as
    cuDNN's kernel, the others held fixed. That run's launcher ran flash-attn's FlashAttention-2
    (`NVTE_FUSED_ATTN=0` in NeMo-Framework-Launcher 24.01-24.07), whose benchmark speed the stored
    charge matches within 2.3 %: what the constant records is attention at about
    FlashAttention-2's benchmarks on Hopper, the reading the other sources (cuDNN at 2K-8K tokens,
    torchtitan's SDPA, llm-foundry's Triton kernel) fit best together (docs/time-model.md, "Which
    kernel the H100 table ran")."""
    blackwell_sustained: float
    """Speed of a Blackwell part's GEMMs in a training run relative to what the short sweeps give
    them: Hopper's fitted ceiling scaled by the part's measured matmul ceiling
    (`kernels.matmul_ceiling`). That comes from short sweeps of single kernels; a training run
    holds the part at its board power for hours, and a Blackwell part, which draws its
    1,000-1,200 W for 2.3-2.5x H100's FLOP/s at 700 W, holds its clock less well under GEMM load
    than the sweeps show. Fused attention keeps `attention_sustained` alone (`attention_speed`).
    Fitted by `benchmarks/fidelity.py` on the dense Blackwell rows of NeMo's and
    Megatron-Bridge's published tables (`benchmarks/blackwell_fit.py`), the others held fixed; 1
    leaves the scaling as measured."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash

    def gemm_efficiency(self, generation: str) -> float:
        """Ceiling for a generation. Blackwell and CDNA3 take Hopper's value; a Blackwell part then
        runs at its measured ceiling relative to H100's (`kernels.matmul_ceiling`, applied by the
        time model through `Hardware.ceiling`) times what a training run sustains of it
        (`tensor_core_sustained`). CDNA3 has no published run here: Hopper's, as
        `docs/time-model.md` states."""
        if generation == "ampere":
            return self.gemm_ampere
        return self.gemm_hopper * self.tensor_core_sustained(generation)

    def tensor_core_sustained(self, generation: str) -> float:
        """The generation's GEMMs in a training run relative to their scaled ceiling:
        `blackwell_sustained` on Blackwell, 1 elsewhere (Ampere's and Hopper's ceilings are fitted
        on their own training runs, which already carry it)."""
        return self.blackwell_sustained if generation == "blackwell" else 1.0

    @property
    def attention_speed(self) -> float:
        """What a training run sustains of the fused-attention kernel benchmarks (the `sustained`
        the attention timing takes): `attention_sustained`, the same on every generation.

        Not also `tensor_core_sustained`: that is what Blackwell's GEMMs lose at board power, fitted
        on GEMM-bound rows, while `attention_sustained` already is the attention kernel's
        run-versus-benchmark factor on every part; both on one kernel counted its gap twice. The
        one Blackwell table where attention is most of the step (NeMo 25.04's long-sequence rows on
        B200, never fitted) says so: with both factors it came out 7-31 % slow, with one 5-21 %
        (median 15 %), the error still growing with the sequence (docs/time-model.md, "The
        long-sequence table on B200")."""
        return self.attention_sustained

    def with_values(self, values: dict[str, float]) -> Constants:
        return replace(self, **values)

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_hash"}


FITTED_NAMES: tuple[str, ...] = (
    "gemm_ampere", "gemm_hopper", "intensity_half", "kernel_overhead",
)
"""The constants `benchmarks/fidelity.py` fits on the published Megatron-LM runs; the rest are
fixed below with their sources, but for `EAGER_FITTED`."""

ATTENTION_FITTED: tuple[str, ...] = ("attention_sustained",)
"""Fitted after `FITTED_NAMES`, on the long-sequence runs (`fidelity.LONG_SEQUENCE_GROUP`), the
constants above held at their values."""

BLACKWELL_FITTED: tuple[str, ...] = ("blackwell_sustained",)
"""Fitted after `FITTED_NAMES` and `ATTENTION_FITTED`, on the dense Blackwell rows of NeMo's and
Megatron-Bridge's tables (`benchmarks/blackwell_fit.py`), the constants above held at their values:
no calibration row runs on Blackwell, so it moves none of them (`fidelity.fit_all` fits it last, on
theirs)."""

EAGER_FITTED: tuple[str, ...] = ("eager_efficiency",)
"""Fitted afterwards, on torchtitan's runs (eager PyTorch, the software parc generates), with the
constants above held at their values."""

FIXED_SOURCES: dict[str, str] = {
    "bus_nvlink": "nccl-tests all_reduce bus bandwidth on one node: ~230-240 GB/s of A100's 300 GB/s "
                  "NVLink, ~360-370 GB/s of H100's 450 GB/s (without NVLink SHARP): 0.8",
    "bus_network": "nccl-tests across InfiniBand nodes reach 90-96 % of the NICs' line rate "
                   "(e.g. ~23-24 GB/s per 200 Gb/s HDR port, ~46-48 GB/s per 400 Gb/s NDR port): 0.92",
    "hbm_efficiency": "STREAM-like copy kernels reach 80-90 % of HBM peak on A100 and H100 "
                      "(NVIDIA's bandwidthTest and published STREAM results); 0.8 taken",
    "latency_intra": "NCCL small-message all-reduce on one 8-GPU NVSwitch node takes ~10-20 us "
                     "for 2(n-1) = 14 ring steps: ~1 us per step",
    "latency_inter": "NCCL small-message collectives across InfiniBand nodes: ~5 us per step "
                     "(one network round of a few microseconds plus the proxy thread)",
}

# `TIME_MODEL_SPREAD`: the time model's measured error band, as a fraction of the step: the larger
# median |error| of docs/time-model.md's leave-one-source-out fits ("Generalisation: leaving a
# source out"), written with the constants by the same `fidelity.py --write` (`loso_spread`), so
# search's indistinguishability band (search/ranking.py) follows every refit.
# BEGIN FITTED (written by benchmarks/fidelity.py --write; do not edit by hand)
DEFAULT = Constants(
    gemm_ampere=0.8566,
    gemm_hopper=0.8597,
    intensity_half=1.568,
    kernel_overhead=7.13e-06,
    bus_nvlink=0.8,
    bus_network=0.92,
    hbm_efficiency=0.8,
    latency_intra=1e-06,
    latency_inter=5e-06,
    eager_efficiency=0.9316,
    attention_sustained=0.5906,
    blackwell_sustained=0.7749,
)
TIME_MODEL_SPREAD = 0.072
# END FITTED
