"""How fast the two kernel families that carry a transformer's FLOPs run, by shape.

The time model charges every matrix product and every attention kernel at a fraction of the
GPU's dense peak. That fraction is not one number: it depends on the kernel's shape, and the
published runs it is fitted on cannot tell the shapes apart, so each dependence here is derived
from a physical mechanism and its constants from published kernel measurements, never from the
training runs.

**Attention** (FlashAttention-style fused kernels). The kernel streams K and V blocks past each
block of queries; its throughput grows with the key length (the prologue, the epilogue and the
softmax rescaling are amortised over a longer loop) and saturates:

    e(s, d) = plateau x s / (s + half) x head(d) x [causal: causal x s / (s + causal_half)]

with `s` the keys each query block walks (the sequence, or one ring-attention block), `plateau`
and `half` per direction (the backward is slower: it recomputes the scores and writes dQ, dK, dV),
`head(d) = [d / (d + head_half)] / [128 / (128 + head_half)]` for head dim d <= 128 (fewer FLOPs
per byte of Q, K, V loaded; d > 128 is taken as 128), and a causal mask costing the diagonal
blocks' wasted half and the imbalance between short and long query rows. The constants are fitted
by `benchmarks/kernel_fit.py` on the kernel benchmarks transcribed in
`benchmarks/data/attention_kernels.yaml` (FlashAttention-3 paper, Figures 5 and 6, H100; the
FlashAttention-2 paper's A100 plateaus), and `tests/test_kernels.py` checks the curves against
those figures.

**GEMMs** (wave quantisation). A GEMM's output is cut into tiles, one thread block each; the SMs
take them in waves, and the last, partial wave runs at the speed of a full one. With T tiles on
N SMs the kernel takes ceil(T / N) waves for T / N waves' worth of work: efficiency
T / (ceil(T / N) N). A 133-tile GEMM on 132 SMs takes two waves for 1.01 waves of work. The tile
is 128 x 128 (cuBLAS's and CUTLASS's common BF16 tile on Ampere and Hopper); GEMMs that run at
once pool their tiles (Transformer Engine's grouped GEMM runs its per-expert GEMMs four at a time,
`GROUPED_STREAMS`); an output of fewer tiles than SMs is split along its reduction (split-K) as
far as the reduction is long enough. A partial tile costs a whole one: each expert's rows are
padded to whole tiles (`padded_rows`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .catalog.gpus import GPUS
from .power import BOARD_POWER, power_limited_throughput

TILE_M = 128
TILE_N = 128
"""Output tile of one thread block (rows x columns)."""


def wave_efficiency(m: float, n: float, sms: int, groups: float = 1.0) -> float:
    """Fraction of the SMs' time a GEMM's tiles fill: tiles / (waves x SMs). `groups` identical
    products launched as one grouped kernel pool their tiles."""
    if m <= 0 or n <= 0 or sms <= 0:
        return 1.0
    tiles = math.ceil(m / TILE_M) * math.ceil(n / TILE_N) * max(1, round(groups))
    waves = math.ceil(tiles / sms)
    return tiles / (waves * sms)


SPLIT_K_MIN = 512
"""Shortest reduction one split-K slice keeps: cuBLAS splits the inner dimension of a GEMM whose
output has too few tiles to fill the GPU, down to a few hundred elements per slice (eight 64-wide
k-steps), and the partial sums are then added by a reduction."""


def gemm_wave_efficiency(m: float, k: float, n: float, sms: int, groups: float = 1.0) -> float:
    """Wave quantisation of a GEMM as a cuBLAS-like library launches it: an output with fewer
    tiles than SMs is split along k (split-K, at most k / `SPLIT_K_MIN` slices, no more than fill
    the SMs), then the tiles run in waves (`wave_efficiency`)."""
    if m <= 0 or n <= 0 or sms <= 0:
        return 1.0
    tiles = math.ceil(m / TILE_M) * math.ceil(n / TILE_N) * max(1, round(groups))
    split = max(1, min(sms // tiles, int(k // SPLIT_K_MIN))) if tiles < sms else 1
    total = tiles * split
    return total / (math.ceil(total / sms) * sms)


@lru_cache(maxsize=4096)
def padded_rows(rows: float, balanced: bool = False) -> float:
    """Rows one expert's GEMMs compute: its tokens padded to whole tiles (`TILE_M`). A thread
    block computes a full tile whatever rows it holds, and a grouped kernel cannot share a tile
    between experts (MegaBlocks, Gale et al. 2023, Section 5.1, pads each expert to its 128-row
    block for the same reason). With the load exactly even each expert holds `rows`, padded to
    the next tile. A random router's expert receives a near-normal load of mean `rows` and
    variance `rows` (a multinomial's, many tokens each choosing it with a small probability),
    so its expected tile count is sum over j >= 0 of P(load > j TILE_M): a whole tile for any
    expert that receives anything, and on average about half a tile of padding once the load's
    spread covers a tile."""
    if rows <= 0:
        return 0.0
    if balanced:
        return math.ceil(rows / TILE_M - 1e-9) * TILE_M
    from statistics import NormalDist  # here: `parc` starts without the statistics module

    load = NormalDist(rows, math.sqrt(rows))
    last = int((rows + 8 * math.sqrt(rows)) // TILE_M) + 1
    return TILE_M * (1.0 + sum(1.0 - load.cdf(j * TILE_M) for j in range(1, last + 1)))


GROUPED_STREAMS = 4
"""CUDA streams Transformer Engine's grouped GEMM spreads its per-expert GEMMs over
(`GroupedLinear` -> `general_grouped_gemm` -> `nvte_multi_stream_cublas_gemm`, one cuBLAS GEMM
per expert, round-robin over `nvte_get_num_compute_streams()` = 4 streams,
transformer_engine/common/util/multi_stream.cpp)."""


def grouped_rounds(local: int) -> int:
    """Sequential rounds of a grouped GEMM over `local` experts: `GROUPED_STREAMS` GEMMs run at a
    time, sharing the SMs' waves; each round pays one kernel's ramp and tail."""
    return max(1, math.ceil(local / GROUPED_STREAMS))


@lru_cache(maxsize=256)
def _largest_normal(ranks: int) -> float:
    """Blom's expected largest of `ranks` standard normals (search asks for a few ep degrees
    millions of times: cached)."""
    from statistics import NormalDist  # here: `parc` starts without the statistics module

    return NormalDist().inv_cdf((ranks - 0.375) / (ranks + 0.25))


def routing_imbalance(copies: float, ranks: int, capacity_factor: float = 0.0) -> float:
    """Expected load of the busiest of `ranks` expert ranks over the mean, when each holds `copies`
    routed token copies on average and the router spreads them at random: the rank loads are
    near-normal with variance copies x (1 - 1/ranks) (a multinomial's), and the largest of `ranks`
    such loads sits, in expectation, Phi^-1((ranks - 0.375) / (ranks + 0.25)) standard deviations
    above the mean (Blom's 1958 approximation of the largest normal order statistic; it tends to
    the balls-into-bins sqrt(2 ln ranks) of Raab and Steger 1998).
    A load-balancing loss or bias drives the router towards this, never below it, so it is the
    floor of the imbalance, charged whatever the spec's balancing; a capacity factor caps the
    busiest rank at `capacity_factor` x the mean (copies past it are dropped)."""
    if ranks <= 1 or copies <= 0:
        return 1.0
    margin = 1.0 + _largest_normal(ranks) * math.sqrt((1.0 - 1.0 / ranks) / copies)
    return min(margin, max(capacity_factor, 1.0)) if capacity_factor else margin


@dataclass(frozen=True)
class AttentionCurve:
    """One fused-attention kernel's throughput as a fraction of dense BF16 peak."""

    forward: float
    """Plateau (long keys, head dim 128, no mask), forward."""
    backward: float
    """Plateau, backward (FLOPs counted as 2.5x the forward's)."""
    forward_half: float
    """Keys at which the forward reaches half its plateau."""
    backward_half: float
    causal: float
    """Plateau of the causal kernel relative to the unmasked one."""
    causal_half: float
    """Keys at which the causal penalty reaches half its plateau."""
    head_half: float
    """Head dim at which the head-dim factor d / (d + head_half) is one half."""

    def efficiency(self, keys: float, head_dim: int, causal: bool, backward: bool) -> float:
        s = max(float(keys), 1.0)
        plateau, half = (self.backward, self.backward_half) if backward else (self.forward, self.forward_half)
        d = min(head_dim, 128)
        head = (d / (d + self.head_half)) / (128 / (128 + self.head_half))
        e = plateau * s / (s + half) * head
        if causal:
            e *= self.causal * s / (s + self.causal_half)
        return e


# BEGIN FITTED (written by benchmarks/kernel_fit.py --write; do not edit by hand)
FA2_HOPPER = AttentionCurve(forward=0.364, backward=0.3327, forward_half=59.71, backward_half=273.7, causal=1, causal_half=334.5, head_half=18.54)
CUDNN_HOPPER = AttentionCurve(forward=0.5967, backward=0.5479, forward_half=80.41, backward_half=376.1, causal=1, causal_half=318.3, head_half=106.4)
# END FITTED

A100_PLATEAU = {"forward": 0.73, "backward": 0.63}
"""FlashAttention-2 on A100 (Dao 2023, Section 4.1): up to 73 % of peak forward and 63 % backward,
the best of its sequence sweep (16k keys, head dim 128, no mask)."""

SWEEP_KEYS = 16384
"""The longest sequence of the published sweeps, where "up to" is reached."""


def _ampere(curve: AttentionCurve) -> AttentionCurve:
    """FlashAttention-2 on Ampere: the Hopper curve's shape, plateaus set so that the curve at the
    sweep's longest sequence equals the paper's stated fractions."""
    f = A100_PLATEAU["forward"] * (SWEEP_KEYS + curve.forward_half) / SWEEP_KEYS
    b = A100_PLATEAU["backward"] * (SWEEP_KEYS + curve.backward_half) / SWEEP_KEYS
    return AttentionCurve(forward=f, backward=b, forward_half=curve.forward_half,
                          backward_half=curve.backward_half, causal=curve.causal,
                          causal_half=curve.causal_half, head_half=curve.head_half)


FA2_AMPERE = _ampere(FA2_HOPPER)

FP8_ATTENTION_SHARE = (1.2e15 / 1979e12) / (740e12 / 989e12)
"""The fraction of its FP8 peak an FP8 fused-attention kernel reaches, relative to the fraction of
the 16-bit peak the same kernel reaches in 16 bits: FlashAttention-3 on H100 (Shah et al. 2024,
abstract) reaches up to 740 TFLOP/s in FP16 (74.8 % of 989) and close to 1.2 PFLOP/s in FP8
(60.6 % of 1,979): 0.81. The products run at the FP8 rate, the softmax between them does not
(its exponentials, rescaling and the casts of P to FP8 keep their 16-bit cost), so the kernel
gains less than the tensor cores' 2x. Charged to Transformer Engine's FP8 attention (cuDNN's,
`Software.attention_fp8`) on the FP8 peak, with the 16-bit kernel's curve; the exponential unit
bounds it below (`exp_seconds`)."""

EXP_PER_CLOCK = 16
"""Exponentials (MUFU `ex2`) one SM completes per clock: 16 on Ampere, Hopper and Blackwell alike
(NVIDIA's CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table: base-2
exponential, 16 results per clock per multiprocessor for compute capabilities 8.0 to 10.0;
FlashAttention-4, Zadouri et al. 2026, section 2: unchanged from Hopper to Blackwell while the
tensor cores doubled, which makes the exponentials the forward's bottleneck on B200)."""

MMA_FLOPS_PER_CLOCK = {"ampere": 2048, "hopper": 4096, "blackwell": 8192}
"""Dense 16-bit tensor-core FLOPs one SM completes per clock: A100 312 TFLOP/s = 108 SMs x
1.41 GHz x 2,048; H100 SXM 989.4 = 132 x 1.83 GHz x 4,096; Blackwell doubles Hopper's per SM
(B200 2,250 = 148 x ~1.86 GHz x 8,192). The exponential unit's rate is then the dense BF16 peak x
`EXP_PER_CLOCK` / this, at whatever clock the peak is quoted (or derated) at. CDNA3 has none here:
no exponential bound is charged there."""


EXP_SCALE = {"b300": 10.7 / 5.0, "gb300-nvl72": 10.7 / 5.0}
"""Parts whose special-function units complete more exponentials per clock than their generation's
`EXP_PER_CLOCK`, as a factor on it: Blackwell Ultra's SFUs run the attention's `ex2` at 10.7
TeraExponentials/s where Blackwell's run 5 (NVIDIA, "Inside NVIDIA Blackwell Ultra", 2025-08:
"2x attention-layer acceleration"; the same figures in Verda's GB300 NVL72 per-GPU table)."""


def exp_rate(bf16_peak: float, generation: str, scale: float = 1.0) -> float | None:
    """Exponentials per second the GPU's special-function units complete (`EXP_PER_CLOCK` times the
    part's `EXP_SCALE`, `scale`), from its dense BF16 peak; None where the generation's
    tensor-core width is not known here."""
    width = MMA_FLOPS_PER_CLOCK.get(generation)
    return bf16_peak * EXP_PER_CLOCK * scale / width if width else None


def exp_seconds(score_entries: float, bf16_peak: float, generation: str, scale: float = 1.0) -> float:
    """The floor a fused-attention kernel's time cannot go below: one exponential per score entry
    it computes (the forward's softmax; the backward recomputes P = exp(S - LSE) once), all on the
    special-function units (`exp_rate`). A physical bound, not a fitted speed: FlashAttention-4 on
    B200 emulates part of them on the FMA units to get past it, which the kernels parc charges
    (cuDNN's, FlashAttention-2) do not."""
    rate = exp_rate(bf16_peak, generation, scale)
    return score_entries / rate if rate else 0.0


# BEGIN MEASURED (written by benchmarks/kernel_fit.py --write; do not edit by hand)
ATTENTION_MEASURED = {'gb200-nvl72': {128: (0.98, 0.9426), 64: (0.6903, 0.8519)},
 'gb300-nvl72': {128: (1.1121, 1.0037), 64: (0.8139, 0.8809)}}
ATTENTION_FP8_MEASURED = {'h200': {'gqa': {'fp8': {'causal': (1.4969, 0.7948), 'full': (1.4805, 1.075)}}},
 'gb200-nvl72': {'gqa': {'fp8': {'causal': (1.2656, 1.1274), 'full': (1.2465, 1.1568)},
                         'mxfp8': {'causal': (1.2084, 0.9662), 'full': (1.224, 1.0648)}},
                 'window': {'fp8': {'causal': (1.0279, None)}},
                 'mla': {'fp8': {'causal': (1.42, 1.2604)},
                         'mxfp8': {'causal': (1.4, 1.2904), 'full': (1.369, 1.4374)}}},
 'gb300-nvl72': {'gqa': {'fp8': {'causal': (1.4732, 1.148), 'full': (1.5528, 1.1619)},
                         'mxfp8': {'causal': (1.3847, 0.9784), 'full': (1.4229, 1.0686)}},
                 'window': {'fp8': {'causal': (1.2019, None)}},
                 'mla': {'fp8': {'causal': (1.6273, 1.3222)},
                         'mxfp8': {'causal': (1.5501, 1.3788), 'full': (1.5565, 1.558)}}}}
# END MEASURED
"""Written from cudnn-frontend's training SDPA benchmark run on H200, GB200 and GB300 with one
script, preset and cuDNN release (9.19.1; benchmarks/data/attention_kernels.yaml `suite`; MXFP8
from the suite's next release, 9.22.0, `mxfp8`). `ATTENTION_MEASURED`: each Blackwell part's
(forward, backward) fraction of its own dense BF16 peak over H200's at the same points, by head
dim: 128 from the Llama 3.1 preset (the median of ten, causal and unmasked, 2K-32K keys), 64 from
the gpt-oss preset (five, causal, a 1,024-key window). H200 is H100's chip at H100's clocks, so the
ratio is the part's attention against the Hopper curve's: at 128 GB200 0.98 / 0.94 (its matmul
ceiling, 0.91, which the model used before, is within 8 %), GB300 1.11 / 1.00, Blackwell Ultra's
doubled exponential units showing in the forward; at 64 GB200 0.69 / 0.85, GB300 0.81 / 0.88. `ATTENTION_FP8_MEASURED`: part -> layer
("gqa", "mla", "window": the Llama, DeepSeek-V3 and gpt-oss presets) -> kind ("fp8", "mxfp8") ->
mask ("causal", "full") -> (forward, backward) speedup of the FP8 kernel over the BF16 one of the
same run (`attention_fp8_speedup`); the window's backward None: the benchmark's FP8 backward call
passes no diagonal band and computes the full causal square (`kernel_fit.UNBANDED_FP8_BACKWARD`)."""

ATTENTION_SIBLING = {"b200": "gb200-nvl72", "b300": "gb300-nvl72", "h100-sxm": "h200", "h800": "h200"}
"""Parts whose die was measured under another name or board: the DGX's B200 is the GB200's
Blackwell GPU, the B300 the GB300's Blackwell Ultra GPU (at other board powers and clocks); H100
SXM and H800 are H200's GH100 at the same clocks. A speedup over the sibling's own BF16 kernel
carries over as it stands; a fraction of peak carries over scaled by the parts' matmul ceilings
(`attention_ceiling`), as the matmul ceiling itself carries a flagship's. The one other published
BF16 sweep of a B200 (cudnn-frontend's artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv) ran
another set of backends and puts the B200 below the GB200 rather than above; it is not read."""

ATTENTION_FLAGSHIP = {"hopper": "h200", "blackwell": "gb200-nvl72"}
"""The measured part a GPU of a generation stands for where neither it nor a sibling was measured (a
GPU defined in a spec), as `MAMF_FLAGSHIP` for the matmul ceiling."""


def _attention_part(gpu: str, generation: str, measured: dict) -> str | None:
    """The part whose measurement `gpu` takes from `measured`: itself, its sibling or its
    generation's flagship; None where none of them was measured."""
    for part in (gpu, ATTENTION_SIBLING.get(gpu), ATTENTION_FLAGSHIP.get(generation)):
        if part in measured:
            return part
    return None


def fp8_attention_part(gpu: str, generation: str) -> str:
    """The part whose FP8 attention measurements `gpu` takes (`ATTENTION_FP8_MEASURED`): itself, its
    sibling or its generation's flagship; "" where none was measured."""
    return _attention_part(gpu, generation, ATTENTION_FP8_MEASURED) or ""


def attention_fp8_speedup(part: str, layer: str, kind: str, causal: bool) -> tuple[float, float | None] | None:
    """(forward, backward) speedup of cuDNN's FP8 fused attention over the same part's BF16 kernel on
    the measured `part` (`fp8_attention_part`) for a `layer` ("gqa", "mla"), `kind` ("fp8":
    per-tensor scales; "mxfp8": MXFP8 block scales) and mask (`ATTENTION_FP8_MEASURED`; a mask the
    run lacks takes the other's): causal GQA, H200 1.50x forward and 0.79x backward (slower than
    BF16 from 8K keys), GB200 MXFP8 1.21x / 0.97x, GB300 MXFP8 1.38x / 0.98x; MLA's wider heads gain
    more (GB200 MXFP8 1.40x / 1.29x). The backward gains little at head dim 128: its five products
    run at the FP8 rate, the recomputed exponentials and the gradients' rescaling and casts do not.
    None where no measurement covers the part, layer and kind (the time model then charges
    `FP8_ATTENTION_SHARE` of the FP8 peak)."""
    masks = ATTENTION_FP8_MEASURED.get(part, {}).get(layer, {}).get(kind, {})
    if not masks:
        return None
    wanted, other = ("causal", "full") if causal else ("full", "causal")
    return masks.get(wanted) or masks[other]


AttentionCeiling = tuple[tuple[int, float, float], ...]
"""A part's attention ceiling by head dim: (head dim, forward, backward) points, ascending."""


def attention_ceiling(gpu: str, generation: str) -> AttentionCeiling:
    """A part's fused attention (forward, backward) relative to the Hopper curve it is charged on
    (`attention_curve`), by head dim, in place of the matmul ceiling (`matmul_ceiling`) that scales
    its GEMMs: the measured ratios of the part (`ATTENTION_MEASURED`: head dims 64 and 128; Hopper
    is the reference, 1), else its sibling's or its generation's flagship's times the two parts'
    matmul ceilings' ratio (a B200 holds more of its lower peak than a GB200 does of its higher
    one, 77.6 % against 72.9 % in the matmul sweep, both dies power-limited alike: 1.064x GB200's
    fraction); the matmul ceiling both ways where none was measured (CDNA3: what parc assumed for
    every part before the sweeps). `ceiling_at` reads it at a head dim."""
    if generation == "hopper":
        return ((128, 1.0, 1.0),)
    part = _attention_part(gpu, generation, ATTENTION_MEASURED)
    if part is None:
        ceiling = matmul_ceiling(gpu, generation)
        return ((128, ceiling, ceiling),)
    scale = matmul_ceiling(gpu, generation) / matmul_ceiling(part, generation)
    return tuple((d, f * scale, b * scale) for d, (f, b) in sorted(ATTENTION_MEASURED[part].items()))


def ceiling_at(points: AttentionCeiling, head_dim: float, backward: bool) -> float:
    """An attention ceiling (`attention_ceiling`) at a head dim: linear between the measured head
    dims, the nearest one's outside them (at head dim 64 a Blackwell part reaches 0.69-0.81 of
    H200's fraction of peak forward where at 128 it reaches 0.98-1.11: its twice-as-fast products
    leave the softmax's per-entry work exposed, which doubles per FLOP as the head narrows)."""
    column = 2 if backward else 1
    if head_dim <= points[0][0]:
        return points[0][column]
    for low, high in zip(points, points[1:], strict=False):
        if head_dim <= high[0]:
            t = (head_dim - low[0]) / (high[0] - low[0])
            return low[column] + t * (high[column] - low[column])
    return points[-1][column]


def attention_curve(kernel: str, generation: str) -> AttentionCurve:
    """The curve of the kernel a runtime runs on a generation. "sdpa" (torch's
    scaled_dot_product_attention: its flash backend is FlashAttention-2, parc's runtime and
    torchtitan) and "te" (Transformer Engine: FlashAttention-2 on Ampere, cuDNN's fused attention
    on Hopper and later). Blackwell and CDNA3 take Hopper's curves at their own peak: the time
    model scales a Blackwell part's by its attention ceiling (`attention_ceiling`, measured against
    H200 in one suite where published); CDNA3 has no published sweep, an assumption
    docs/time-model.md states."""
    if generation == "ampere":
        return FA2_AMPERE
    return CUDNN_HOPPER if kernel == "te" else FA2_HOPPER


# ---------------------------------------------------------------------------------------------
# The tensor cores' measured ceiling, part by part


MAMF_BF16 = {
    "h100-sxm": 794.5 / 989,
    "b200": 1745.0 / 2250,
    "gb200-nvl72": 1822.0 / 2500,
}
"""Maximum achievable matmul FLOP/s (MAMF) of a part as a fraction of its dense BF16 peak: the best
of a brute-force sweep of `torch.matmul` shapes, BF16 inputs, mean of 100 iterations after 50
warm-up ones (S. Bekman, ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul
FLOPS comparison table", measured with its `mamf-finder.py`): H100 SXM 794.5 of 989 TFLOPS (80.3 %,
torch 2.7.0+cu126; "H200 is the same"), B200 SXM 1,745.0 of 2,250 (77.6 %, torch 2.7.1+cu128),
GB200 1,822.0 of 2,500 (72.9 %, torch 2.10.0.dev+cu130). The faster parts reach less of their
datasheet peak: the peak is quoted at the boost clock, which a part drawing its full board power on
dense tensor-core work does not hold (the B200 at 1,000 W, the GB200 at 1,200 W for 2.3-2.5x
H100's FLOP/s at 700 W), and each SM must be fed twice H100's operand bytes per clock from the same
kind of shared memory and L2 (the table's pointer to AMD's account of why efficiency falls as
accelerators get faster: rocm.blogs.amd.com, software-tools-optimization/
Understanding_Peak_and_Max-Achievable_FLOPS)."""

MAMF_BOUND_ONLY = {"a100-80gb": 271.2 / 312, "mi300x": 781.9 / 1300}
"""Parts whose measured maximum serves only as a bound (`matmul_achievable`), never to scale a
ceiling: the A100 SXM, 271.2 of 312 TFLOPS (86.9 %, torch 2.6.0+cu126; the same table); MI300X,
the higher of its two sweeps, 781.9 of 1,300 (60.1 %, ROCm 6.2, the table's 2024 edition; 51.4 %
under ROCm 6.3 in its current one): a bound must sit above every measurement of the part."""

MAMF_FP8 = {"h100-sxm": 1402.6 / 1979, "h200": 1453.4 / 1979, "b200": 3432.5 / 4500, "gb200-nvl72": 3615.6 / 5000}
"""The same table's FP8 (`float8_e4m3fn`) maxima as fractions of the dense FP8 peak: H100 SXM 1,402.6
of 1,979 (70.9 %, torch 2.7.0+cu126), H200 1,453.4 (73.4 %, 2.7.1+cu128), B200 3,432.5 of 4,500
(76.3 %, 2.7.1+cu128), GB200 3,615.6 of 5,000 (72.3 %, 2.10.0.dev+cu130). None for the A100 (no
FP8) or MI300X (not measured there)."""

MAMF_FLAGSHIP = {"ampere": "a100-80gb", "hopper": "h100-sxm", "blackwell": "b200"}
"""The measured part a GPU of a generation stands for where the table has no row of its own and no
sibling carries one to it (`MAMF_CARRIED`): a GPU defined in a spec; an H200, an H100's chip at the
same clocks (the table's "H200 is the same").
CDNA3 has none: MI300X's two published sweeps disagree by 15 % across ROCm releases (60.1 % under
ROCm 6.2 in the table's 2024 edition, 51.4 % under ROCm 6.3 in its 2025 one), a software figure,
not the part's; it keeps Hopper's ceiling, as docs/time-model.md states (and the higher sweep as
its bound: `MAMF_BOUND_ONLY`)."""

MAMF_CARRIED = {"gb300-nvl72": "gb200-nvl72", "b300": "b200"}
"""Parts no published sweep measured -> the swept part of the same generation and platform whose
maximum is carried to them by the power law (`carried_maximum`): Blackwell Ultra's GB300 from
GB200 (the same NVL72 tray, 160 SMs at 1,400 W against 148 at 1,200 W), B300 from B200 (HGX, 160 at
1,100 W against 148 at 1,000 W). Both quote their sibling's dense BF16 and FP8 peaks, so the peak
alone would give them their sibling's speed; their extra SMs and watts are what the law adds. Of
the law's two factors only the power's is checked by a measured pair (B200 to GB200, equal SM
counts: the law 1.063x, the sweeps 1.044x BF16 and 1.053x FP8); the SM count's (1.053x for 160
against 148) follows from the same f^3 power. B300's own sweep, published since (Bekman's table,
2025-12-09: 1,769.0 BF16 and 3,353.3 FP8 TFLOP/s, torch 2.9.1+cu130, "same as B200, newer
torch/cuda"), sits below the law's 1,897 and 3,732. It is not B300's ceiling here:
Megatron-Bridge's 19 B300 rows run faster than it allows (on it every one is slower and their
median |error| goes from 6.3 % to 10.9 %; docs/time-model.md, "Blackwell Ultra"), as GB300's rows
run about 1.2x GB200's where the law gives 1.108x; a newer part's sweep on a newer software stack
records what that stack reached."""


def carried_maximum(part: str, fp8: bool = False) -> float:
    """A `MAMF_CARRIED` part's maximum achievable matmul rate as a fraction of its own dense peak:
    its sibling's measured FLOP/s (`MAMF_BF16`, or `MAMF_FP8`) times the throughput ratio of the two
    parts at their board powers (`power.power_limited_throughput`), never above the peak. GB300:
    1,822 x 1.108 = 2,020 TFLOP/s BF16 (80.8 % of 2,500), B300: 1,745 x 1.087 = 1,897 (84.3 % of
    2,250; its datasheet clock is the lower one, 2,250 TFLOP/s over 160 SMs against B200's 148)."""
    sibling = MAMF_CARRIED[part]
    table, peak = (MAMF_FP8, "fp8_flops") if fp8 else (MAMF_BF16, "bf16_flops")
    mine, theirs = GPUS[part], GPUS[sibling]
    flops = table[sibling] * theirs[peak] * power_limited_throughput(
        mine["sms"], BOARD_POWER[part], theirs["sms"], BOARD_POWER[sibling])
    return min(1.0, flops / mine[peak])


def measured_maximum(gpu: str, generation: str, fp8: bool = False, bounds: bool = False) -> float | None:
    """The part's maximum achievable matmul rate as a fraction of its dense BF16 (or, `fp8`, FP8)
    peak: its own sweep's (`MAMF_BF16`, `MAMF_FP8`; with `bounds`, `MAMF_BOUND_ONLY` too), carried
    from a measured sibling (`MAMF_CARRIED`), else its generation's flagship's (`MAMF_FLAGSHIP`);
    None where none of these exists."""
    table = MAMF_FP8 if fp8 else (MAMF_BF16 | MAMF_BOUND_ONLY if bounds else MAMF_BF16)
    if gpu in table:
        return table[gpu]
    if gpu in MAMF_CARRIED:
        return carried_maximum(gpu, fp8)
    return table.get(MAMF_FLAGSHIP.get(generation, ""))


MAMF_REFERENCE = "h100-sxm"
"""The part whose runs the fitted ceiling `Constants.gemm_hopper` comes from (the calibration rows of
benchmarks/data/published.yaml are H100 runs)."""

CEILING_SCALED = frozenset({"blackwell"})
"""Generations without a fitted GEMM ceiling of their own (no calibration run): their parts scale
Hopper's by their measured maximum (`matmul_ceiling`)."""


def matmul_ceiling(gpu: str, generation: str) -> float:
    """The tensor cores' achievable fraction of peak on `gpu` relative to the part the fitted ceiling
    was measured on: MAMF(gpu) / MAMF(H100) for a Blackwell part (`MAMF_BF16`, or carried from a
    measured sibling: `MAMF_CARRIED`), 1 where the generation's own runs fitted the ceiling
    (Ampere, Hopper) or no stable measurement exists
    (CDNA3). The fitted `gemm_hopper` holds what a training run's GEMMs lose on H100 beyond the
    sweep's ceiling (sustained power, shapes, the epilogues); a Blackwell part runs the same
    kernels, so it keeps those losses and scales by how much lower its own ceiling sits. Charged to
    every GEMM, and to fused attention where no sweep of the part measured it (`attention_ceiling`)."""
    if generation not in CEILING_SCALED:
        return 1.0
    return measured_maximum(gpu, generation) / MAMF_BF16[MAMF_REFERENCE]


def matmul_achievable(gpu: str, generation: str, fp8: bool = False) -> float:
    """The most of its dense BF16 (or, `fp8`, FP8) peak a part's matrix products reach: its maximum
    achievable matmul FLOP/s (`MAMF_BF16` and `MAMF_BOUND_ONLY`, or `MAMF_FP8`: the best of a
    brute-force sweep of shapes), or a measured sibling's carried by the power law (`MAMF_CARRIED`),
    else its generation's flagship's (`MAMF_FLAGSHIP`); 1 where none exists. A physical bound, not a
    fit: `timing.gemm_efficiency` never charges a product faster than this, whatever its fitted
    ceiling and shape say."""
    found = measured_maximum(gpu, generation, fp8, bounds=True)
    return 1.0 if found is None else found


# ---------------------------------------------------------------------------------------------
# The dropless dispatcher's host synchronisation

HOST_SYNC_SECONDS = 20e-6
"""Round trip of one device-to-host read of the token counts: the copy's launch and completion
(a small `cudaMemcpyAsync` device-to-host, ~10 us on PCIe Gen4/Gen5 hosts: NVIDIA's CUDA C++ Best
Practices Guide, "Data Transfer Between Host and Device", and "How to Optimize Data Transfers in
CUDA C/C++", NVIDIA Developer Blog 2012) and the host thread's wake-up from
`cudaStreamSynchronize` (a further ~5-10 us). Megatron-Core's `MoEAlltoAllTokenDispatcher`
makes the read at its `cuda_sync_point` ("before_ep_alltoall" with ep > 1, "before_finish"
without; megatron/core/transformer/moe/token_dispatcher.py) because the all-to-all split sizes
and the grouped GEMM's `m_splits` must be host integers; parc's runtime reads its count tables
with one `tolist()` (docs/runtime.md, "one host sync per MoE layer and micro-batch")."""

HOST_OP_SECONDS = 10e-6
"""Host time to issue one eager PyTorch op (Python, the dispatcher, the CUDA launch): PyTorch
eager runs about 100,000 ops a second (H. He, "Making Deep Learning Go Brrrr From First
Principles", 2022, the "overhead" section; NVIDIA's "Accelerating PyTorch with CUDA Graphs",
2021, cites the same few-to-ten microseconds per launch as what graphs remove)."""

DISPATCHER_OPS = 30
"""Host-issued ops of a MoE layer's router and dispatcher forward beyond its GEMMs and the
memory-bound kernels the layer work already counts, read from Megatron-Core's
`moe/router.py` and `moe/token_dispatcher.py` (dropless all-to-all dispatcher, fused permute):
the router's top-k with its score function and the routing map (4), the load-balancing loss
(sums, means, products and its scaling: 6); `preprocess`: the per-expert count (1), the split
sums (1), the counts' all-gather over tp x ep (1), the local slice and its sums (3), the
device-to-host copies of the split and count tables (3); the permutation and its index
(2), the token and probability all-to-alls (2), the sort by local expert (1); the combine: the
unsort (1), the all-to-all back (1), the unpermutation with its gate weighting (2); the
activation's probability product (2)."""


DISPATCHER_BACKWARD_OPS = 18
"""Host-issued ops of the same router and dispatcher in the backward: autograd replays the
forward's differentiable ops only. From the forward's 30 (`DISPATCHER_OPS`): the router's top-k
scatter and score backward (2 of its 4), the load-balancing loss's backward (6 of 6); none of
`preprocess`'s 10 (counts, sums, the counts' all-gather and the device-to-host copies carry no
gradient); the permutation (1 of 2: its index has none), the token and probability all-to-alls
(2), the sort (1); the combine's unsort (1), all-to-all (1) and unpermutation with its gate
weighting (2); the activation's probability product (2)."""


QUANTIZE_KERNELS = {"delayed": 1, "current": 4, "mxfp8": 1, "blockwise": 1, "nvfp4": 3}
"""Kernels Transformer Engine (2.9, the 25.11 container's; 2.8 and 2.10 alike) launches to quantize
one tensor to fp8, by recipe (`transformer_engine/pytorch/csrc/quantizer.cpp`): delayed scaling
one cast-transpose (the scale comes from the amax history, the new amax is recorded in the same
kernel; and `split_quantize` of a grouped GEMM's inputs fuses all experts into one
`nvte_multi_cast_transpose` launch, see `split_quantize_launches`); per-tensor current scaling
(`Float8CurrentScalingQuantizer::quantize_impl`, the FP8-CS of Megatron-Bridge's table) four:
`nvte_compute_amax` (a one-thread `zero_amax_kernel`, then the amax reduction:
`common/recipe/current_scaling.cu`), `nvte_compute_scale_from_amax` (one thread), then
`nvte_quantize_v2`; MXFP8 (`MXFP8Quantizer::quantize`, FP8-MX) one `nvte_quantize_v2` that writes
the row-wise and column-wise copies with their 1x32 block scales; the blockwise recipe
(`Float8BlockQuantizer::quantize`) one `quantize_transpose_vector_blockwise` that writes both
copies with their 1x128 tile scales; NVFP4 (`NVFP4Quantizer`, TE 2.20,
the default recipe's random Hadamard transform on) three: a one-thread kernel zeroing the
amaxes, the amax of the tensor and of its rotation (`hadamard_transform.cu`), then the fused
row-cast / column-Hadamard-cast (`row_cast_col_hadamard_transform_cast_fusion.cu`)."""

NVFP4_GEMM_KERNELS = 2
"""Kernels Transformer Engine launches around each NVFP4 GEMM beside the cuBLASLt call
(`common/gemm/cublaslt_gemm.cu`, TE 2.20): a one-thread kernel computing the GEMM's global scale
from its operands' two amaxes, and a swizzle of the weight's block scales into the layout the
tensor cores read (quantized primary weights are not pre-swizzled, `module/base.py`)."""


def gemm_cast_launches(recipe: str, gemms: int = 1) -> int:
    """Kernels beside one plain (not grouped) linear of a layer in one direction, under `recipe`
    (`timing.fp8_recipe`): forward its input's quantization and one GEMM, backward its output
    gradient's quantization and `gemms` (2) GEMMs, the data and the weight gradient. None in
    bf16; one cast under an fp8 recipe (the model's count since fp8 was added: the amax kernels of
    per-tensor current scaling run inside its host's stride); NVFP4's quantization
    (`QUANTIZE_KERNELS`) and the kernels around each of its GEMMs (`NVFP4_GEMM_KERNELS`)."""
    if recipe == "bf16":
        return 0
    return QUANTIZE_KERNELS["nvfp4"] + gemms * NVFP4_GEMM_KERNELS if recipe == "nvfp4" else 1

MULTI_TENSOR_KERNEL = 64
"""Tensors one of Transformer Engine's multi-tensor kernels takes per launch
(`kMaxTensorsPerKernel` in `common/transpose/multi_cast_transpose.cu` and `common/util/padding.cu`:
the argument block must stay under 4 KB)."""


def split_quantize_launches(local: int, recipe: str) -> int:
    """Kernels `tex.split_quantize` launches to quantize a grouped GEMM's operand for `local`
    experts (`transformer_engine/pytorch/csrc/extensions/cast.cpp`, `multi_tensor_quantize_impl`):
    only delayed scaling has a fused multi-tensor kernel (`nvte_multi_cast_transpose`, 64 tensors a
    launch), and NVFP4 a grouped one on Blackwell (TE 2.20 `cast.cpp`: one grouped amax and one
    fused cast for every expert, whose token counts Megatron-Core pads to 128 under fp4); every
    other recipe quantizes the experts' slices one by one, `QUANTIZE_KERNELS` each.
    bf16 ("" or "bf16"): nothing (`torch.split` makes views)."""
    if recipe not in QUANTIZE_KERNELS or local <= 0:
        return 0
    if recipe == "delayed":
        return math.ceil(local / MULTI_TENSOR_KERNEL)
    if recipe == "nvfp4":  # one grouped amax and one fused cast for all experts (plus the zeroing)
        return QUANTIZE_KERNELS[recipe]
    return QUANTIZE_KERNELS[recipe] * local


@dataclass(frozen=True)
class Launches:
    """Kernels one micro-batch launches, forward and backward."""

    forward: int
    backward: int


def grouped_mlp_launches(local: int, recipe: str) -> Launches:
    """Kernels the routed experts' two grouped GEMMs launch per micro-batch under Megatron-Core's
    `TEGroupedMLP` (`megatron/core/transformer/moe/experts.py`, core 0.15) on Transformer
    Engine's `GroupedLinear` (`transformer_engine/pytorch/module/grouped_linear.py`, TE 2.9),
    `local` experts on the rank, `recipe` the fp8 recipe ("delayed", "current", "mxfp8") or
    "bf16"; the activation between them is one of the layer's memory-bound kernels, not here.

    Per `GroupedLinear` (fc1, then fc2): forward, `split_quantize` of its input
    (`split_quantize_launches`) and `general_grouped_gemm`, which issues one cuBLAS GEMM per expert
    (`nvte_multi_stream_cublas_gemm`); the fp8 weights are cast on a step's first micro-batch only
    (`is_first_microbatch` caches them, not counted). Backward, `split_quantize` of the output
    gradient, the dgrad grouped GEMM and the wgrad grouped GEMM (accumulated into `main_grad`):
    one GEMM per expert each. Under fp8 `TEGroupedMLP` pads each expert's rows to the fp8 GEMM's
    alignment (`Fp8Padding` on the tokens and on the probabilities, `Fp8Unpadding` on the output:
    one `fused_multi_row_padding` launch each, their backward one each).

        forward  = 2 (q + L) + 3 [fp8],   backward = 2 (q + 2 L) + 3 [fp8]

    with q = `split_quantize_launches(L, recipe)`."""
    quantize = expert_quantize_launches(local, recipe)
    return Launches(forward=quantize + 2 * local, backward=quantize + 4 * local)


def expert_padding_launches(local: int, recipe: str) -> int:
    """Megatron-Core's fp8 paddings around the routed experts, each way: `Fp8Padding` of the
    tokens and of the probabilities, `Fp8Unpadding` of the output (one `fused_multi_row_padding`
    launch per `MULTI_TENSOR_KERNEL` experts each; their backward the same)."""
    return 3 * math.ceil(local / MULTI_TENSOR_KERNEL) if recipe in QUANTIZE_KERNELS and local > 0 else 0


def expert_quantize_launches(local: int, recipe: str) -> int:
    """The memory-bound kernels of `grouped_mlp_launches`, each way: two `split_quantize`s (fc1's
    and fc2's input forward, their output gradients backward) and the three fp8 paddings (or their
    backward). They run one after another on the compute stream (only the GEMMs spread over
    streams), so each pays a kernel's ramp and tail on the GPU as well as its launch on the host."""
    return 2 * split_quantize_launches(local, recipe) + expert_padding_launches(local, recipe)


FUSED_MLP_MEMORY_KERNELS = Launches(forward=2, backward=1)
"""The memory-bound kernels Transformer Engine's fused grouped MLP launches per micro-batch
(`transformer_engine/pytorch/ops/fused/grouped_mlp.py`, `_GroupedMLP_CuTeGEMMBase`, MXFP8):
forward one `group_quantize` of fc1's input for all experts and one `splits_to_offsets_multi`;
backward one `group_quantize` of fc2's output gradient. fc2's input and fc1's output gradient
come quantized out of the GEMMs' epilogues."""

FUSED_MLP_GEMM_KERNELS = Launches(forward=2, backward=4)
"""Its grouped GEMMs, one kernel each over all local experts: forward fc1 with the GLU
(`grouped_gemm_glu_wrapper_sm100`) and fc2 (`grouped_gemm_quant_wrapper_sm100`); backward fc2's
dgrad with the GLU's backward (`grouped_gemm_dglu_wrapper_sm100`), fc1's dgrad, and the two
weight gradients (`grouped_gemm_wgrad_wrapper_sm100`)."""


def fused_grouped_mlp_launches(local: int, recipe: str) -> Launches:
    """Kernels the routed experts launch per micro-batch under Transformer Engine's fused grouped
    MLP (`timing.Software.fused_grouped_mlp`): `FUSED_MLP_MEMORY_KERNELS` and
    `FUSED_MLP_GEMM_KERNELS`, and Megatron-Core's fp8 paddings, which `TEGroupedMLP._fused_forward`
    keeps (`expert_padding_launches`)."""
    pad = expert_padding_launches(local, recipe)
    return Launches(forward=FUSED_MLP_MEMORY_KERNELS.forward + FUSED_MLP_GEMM_KERNELS.forward + pad,
                    backward=FUSED_MLP_MEMORY_KERNELS.backward + FUSED_MLP_GEMM_KERNELS.backward + pad)


def host_paced_seconds(ops: int, gpu_seconds: float, op_seconds: float = HOST_OP_SECONDS) -> float:
    """GPU time lost where the host issues a stretch of work more slowly than the GPU runs it.

    With no synchronisation in the stretch the host may run ahead of the GPU, but only as far as
    it is faster: where its `ops x HOST_OP_SECONDS` exceeds the GPU's `gpu_seconds` for the same
    kernels the stretch takes the host's time, max(host, GPU), and the difference is idle GPU
    time. A MoE layer's backward is such a stretch (no device-to-host read: the split sizes are
    already on the host) that starts with the queue drained by the forward's syncs. `op_seconds`:
    the host's time per op (`Software.host_op_seconds`, `HOST_OP_SECONDS` unless a what-if says)."""
    return max(0.0, ops * op_seconds - gpu_seconds)


def host_stall_seconds(ops: int, gpu_seconds: float, op_seconds: float = HOST_OP_SECONDS) -> float:
    """GPU time lost to one host synchronisation in a MoE layer's forward.

    After the sync the GPU's queue is empty: it waits out the round trip, then runs only as fast
    as the host issues the layer's `ops` kernels (until the next layer's sync drains it again).
    The host needs `ops x HOST_OP_SECONDS`; where that exceeds the GPU's own `gpu_seconds` for
    those kernels (small experts: many short kernels), the difference is idle GPU time. Large
    experts' GEMMs outlast the launches and only the round trip shows."""
    return HOST_SYNC_SECONDS + max(0.0, ops * op_seconds - gpu_seconds)


# ---------------------------------------------------------------------------------------------
# DeepEP's deduplicated dispatch


DEEPEP_SMS = 20
"""SMs DeepEP's dispatch and combine kernels occupy: DeepSeek-V3's report (Section 3.2.2: "only 20
SMs are sufficient to fully utilize the bandwidths of IB and NVLink") and Megatron-Core's default
(`moe_deepep_num_sms`, "historical default 20"; `MoEFlexTokenDispatcher` sets DeepEP's
`Buffer.set_num_sms(20)` when unset, megatron/core/transformer/moe/token_dispatcher.py)."""


HYBRIDEP_SMS = 32
"""SMs Hybrid-EP's dispatch and combine kernels occupy: `HybridEpBuffer`'s defaults
(`num_sms_dispatch_api = num_sms_combine_api = 32`, deep_ep/hybrid_ep_buffer.py in DeepEP),
which Megatron-Core keeps when `moe_flex_dispatcher_num_sms` is unset (`init_hybrid_ep_buffer`
passes only what is set, megatron/core/transformer/moe/fused_a2a.py)."""

DISPATCHER_SMS = {"deepep": DEEPEP_SMS, "hybridep": HYBRIDEP_SMS}
"""SMs each of the flex dispatcher's backends holds while it transfers (`Software.ep_dispatcher`);
its keys are those backends (`timing.dispatched`, `timing.permute_kind`)."""


def _none_chosen(experts: int, top_k: int, outside: int) -> float:
    """Probability that a token's `top_k` distinct experts, drawn uniformly from `experts`, all
    fall among `outside` of them (hypergeometric: C(outside, top_k) / C(experts, top_k))."""
    if outside < top_k:
        return 0.0
    p = 1.0
    for i in range(top_k):
        p *= (outside - i) / (experts - i)
    return p


@lru_cache(maxsize=1024)
def deepep_fractions(experts: int, top_k: int, ranks: int, local: int, node_limit: int = 0) -> tuple[float, float]:
    """Bytes DeepEP's dispatch (and, mirrored, its combine) puts on NVLink and on the NIC per GPU,
    as fractions of the plain all-to-all's payload (one copy per routed (token, expert) pair,
    `top_k` per token), for an ep group of `ranks` ranks, `local` per node, experts spread evenly.

    DeepEP (DeepSeek-AI 2025, github.com/deepseek-ai/DeepEP, "internode" kernels; Megatron-Core's
    flex dispatcher runs them) sends a token once to each node that holds any of its experts,
    over RDMA to the GPU of the same local index there, which forwards it over NVLink once to each
    GPU of its node that holds one of the token's experts; inside a node it sends a token once per
    destination GPU, not once per expert (the receiver expands it to its experts). The combine
    reduces on the way back along the same path. With the experts chosen uniformly at random (the
    balanced router's mean), the expected distinct destination nodes other than the token's own
    are (N - 1)(1 - C(E - E/N, k) / C(E, k)) with N = ranks / local nodes, and the distinct
    destination GPUs ranks x (1 - C(E - E/ranks, k) / C(E, k)); each GPU's NVLink carries the
    copies to every destination GPU but itself, (local - 1) / local of them (the same-index GPU
    that takes a node's RDMA copy keeps the share that is its own). A plain all-to-all sends
    (ranks - local) / ranks of the top_k copies over the NIC and (local - 1) / ranks over NVLink.

    `node_limit` M (DeepSeek-V3's node-limited routing: each token's experts within M nodes, M <
    the N nodes): the router picks M nodes, at random at best, then the token's experts among
    their E M / N; a picked node is remote with probability 1 - 1/N, so the expected remote nodes
    are M (1 - 1/N)(1 - C(E_M - E/N, k) / C(E_M, k)) and the destination GPUs
    M local (1 - C(E_M - E/ranks, k) / C(E_M, k)), E_M = E M / N."""
    k = max(1, min(local, ranks))
    if ranks <= 1 or top_k <= 0 or experts < ranks:
        return (k - 1) / max(ranks, 1), (ranks - k) / max(ranks, 1)
    nodes = max(1, ranks // k)
    per_node = experts * k // ranks
    per_rank = experts // ranks
    if 0 < node_limit < nodes and node_limit * per_node >= top_k:
        pool = node_limit * per_node
        remote_nodes = node_limit * (1.0 - 1.0 / nodes) * (1.0 - _none_chosen(pool, top_k, pool - per_node))
        target_ranks = node_limit * k * (1.0 - _none_chosen(pool, top_k, pool - per_rank))
        return (k - 1) / k * target_ranks / top_k, remote_nodes / top_k
    remote_nodes = (nodes - 1) * (1.0 - _none_chosen(experts, top_k, experts - per_node))
    target_ranks = ranks * (1.0 - _none_chosen(experts, top_k, experts - per_rank))
    return (k - 1) / k * target_ranks / top_k, remote_nodes / top_k


# ---------------------------------------------------------------------------------------------
# Overlapped communication shares the GPU


def overlap_exposed(compute: float, transfer: float, occupied: float) -> float:
    """Seconds that `transfer` seconds of communication add to `compute` seconds of computation
    they run beside (issue 14, point 3): an overlapped transfer is not free, its kernels hold
    SMs for as long as it transfers and the computation runs on the rest.

    `occupied` is the sum over the transfers of (share of the SMs held) x (their seconds),
    s T for one transfer. During the T seconds the computation advances T - occupied seconds'
    worth of full-GPU work; if that finishes it (W <= T - occupied) the pair takes T, else the rest
    runs after at full speed: W + occupied. The pair takes max(T, W + occupied) and shows
    max(T - W, occupied) beyond W. No share (copy engines, occupied 0) gives the free overlap
    max(0, T - W); no computation gives T. The computation is taken as SM-bound (a GEMM or an
    attention kernel); HBM is shared too but is not a bound here: a ring reduce-scatter at
    NVLink's ~450 GB/s reads and writes ~3 bytes of HBM per byte sent (~1.4 TB/s), a compute-bound
    GEMM of the layer (Llama 3 405B's output projection at tp 8, 4,096 tokens: 0.22 GB in
    0.34 ms) ~0.65 TB/s, together under H100's 3.35 TB/s (docs/time-model.md, "Overlap takes
    SMs")."""
    if transfer <= 0.0:
        return 0.0
    return max(transfer - compute, occupied, 0.0) if compute > 0.0 else transfer


def sm_share(used: int, sms: int) -> float:
    """The fraction of a GPU's `sms` SMs that a communication kernel on `used` of them holds."""
    return min(1.0, used / sms) if sms > 0 and used > 0 else 0.0


NCCL_SMS = 16
"""SMs an NCCL collective or send/receive holds while it runs on an 8-GPU NVLink node with a NIC
per GPU (Hopper and Ampere's HGX): NCCL runs one thread block (CTA) per channel, each on an SM of
its own (NCCL's `NCCL_MIN_CTAS` / `NCCL_MAX_CTAS` and `NCCL_MIN_NCHANNELS` / `NCCL_MAX_NCHANNELS`
bound the same count; "2 is the minimum", S. Jeaugey, github.com/NVIDIA/nccl/issues/689), and
its topology search settles on 16 channels there: "16 coll channels, ... 16 p2p channels per
peer" on an 8-GPU H800 node (github.com/NVIDIA/nccl/issues/892), "Channel 00/16" for the rings of
three H100 nodes over InfiniBand (github.com/NVIDIA/nccl/issues/1453). Read as the SMs of every
NCCL call the model overlaps with computation: the data-parallel windows, Megatron-LM's
asynchronous tensor-parallel input-gradient reduction, context parallelism's ring sends and
the all-to-all dispatcher under another micro-batch's computation."""

UB_RING_EXCHANGE_SMS = 1
"""SMs Transformer Engine's userbuffers hold for a `ring_exchange` overlap (Megatron-Core's
`--tp-comm-overlap`): TE's default `num_sm` 1 with `use_ce` True, the chunks moved by the copy
engines (`initialize_ub`'s `get_default_config`, transformer_engine/pytorch/module/base.py;
Megatron-Bridge's `RingExchangeOverlapCfg` default `num_sm=1`,
src/megatron/bridge/training/comm_overlap.py). TE's defaults run the all-gathers before the
column-parallel GEMMs (`qkv_fprop`, `fc1_fprop`) and before the row-parallel input-gradient
GEMMs (`proj_dgrad`, `fc2_dgrad`) this way."""

UB_KERNEL_SMS = 16
"""SMs Transformer Engine's userbuffers hold for a `pipeline` or `bulk` overlap: TE's default
`num_sm` 16 (`cga_size` 2, `set_sm_margin` on: the GEMM beside it is launched on the other
SMs), the same source as `UB_RING_EXCHANGE_SMS`. TE's defaults reduce-scatter the row-parallel
outputs this way (`proj_fprop`, `fc2_fprop`: pipeline) and the column-parallel input gradients
(`qkv_dgrad`, `fc1_dgrad`: bulk). Megatron-Bridge's tuned recipes state their own (its H100
Llama 3.1 405B recipe `userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192`: `proj_fprop` 24,
`fc2_fprop` 8, the bulk ones 2-24), which the published rows do not carry; TE's default is
the one figure read for all of them."""

TORCH_ASYNC_TP_SMS = 0
"""SMs torch's async tensor parallelism holds for its transfers: its symmetric-memory
micro-pipelines (`_pipelined_all_gather_and_consume`, `_pipelined_produce_and_all2all` in
torch/distributed/_symmetric_memory/__init__.py) move each shard with a peer-to-peer copy, which
torch runs on the copy engines ("Use copy engine-based copy whenever possible", the module's
account of its low-contention collectives): no SM taken."""


def tp_overlap_sms(mode: str, kind: str) -> int | None:
    """SMs one tensor-parallel collective of `kind` holds under the runtime's overlap `mode`
    (`Software.tp_overlap`), or None where NCCL runs it (`NCCL_SMS` on its link): "all" is
    Megatron-Core's `--tp-comm-overlap` on TE's userbuffers (all-gathers by ring exchange,
    reduce-scatters by pipeline or bulk kernels; an all-reduce, without sequence parallelism, is
    NCCL's; a backward re-gather of a saved input, kind "regather", is TE's bulk all-gather),
    "forward" torch's async TP (copy engines), "backward" Megatron-LM's asynchronous
    input-gradient reduction and input re-gather (NCCL)."""
    if mode == "all" and kind == "regather":
        # TE's bulk all-gather beside the dgrad GEMM (`qkv_dgrad`, `fc1_dgrad`) at TE's default
        # bulk `num_sm`; NeMo's / Megatron-Bridge's recipes set 2-4 (`BulkOverlapCfg`)
        return UB_KERNEL_SMS
    if mode == "all" and kind == "all_gather":
        return UB_RING_EXCHANGE_SMS
    if mode == "all" and kind == "reduce_scatter":
        return UB_KERNEL_SMS
    if mode == "forward":
        return TORCH_ASYNC_TP_SMS
    return None


def tp_overlap_pairs(mode: str, phase: str, kind: str) -> bool:
    """Whether the runtime's overlap `mode` (`Software.tp_overlap`) runs a tensor-parallel
    collective of `kind` in `phase` beside its own GEMM (`Work.tp_gemms` names the GEMM); a
    collective it does not pair waits for its data, exposed. Each runtime pairs a collective with
    the one GEMM that produces or consumes it, never with the layer's others:

    - "all", Megatron-Core's `--tp-comm-overlap` on Transformer Engine's userbuffers (which needs
      sequence parallelism): forward, each all-gather with the column-parallel GEMM that consumes
      it (`qkv_fprop`, `fc1_fprop`: ring exchange) and each reduce-scatter with the row-parallel
      GEMM that produces it (`proj_fprop`, `fc2_fprop`: pipeline); backward, each all-gather of an
      output gradient with the row-parallel input-gradient GEMM (`proj_dgrad`, `fc2_dgrad`: ring
      exchange) and each reduce-scatter of a column-parallel input gradient with that layer's
      weight-gradient GEMM (`qkv_wgrad`, `fc1_wgrad`: bulk); TE's `initialize_ub` method table
      (transformer_engine/pytorch/module/base.py). Without sequence parallelism there is no
      userbuffers overlap: Megatron-LM's asynchronous backward all-reduce remains ("backward").
    - "forward", torch's async TP (inductor's micro-pipeline pass, torchtitan): all-gather ->
      matmul and matmul -> reduce-scatter fused (`fused_all_gather_matmul`,
      `fused_matmul_reduce_scatter`), forward; an all-reduce is not fused.
    - "backward", Megatron-LM's asynchronous input-gradient reduction
      (`LinearWithGradAccumulationAndAsyncCommunication`, TE's `LayerNormLinear` alike): a
      column-parallel layer's input gradient, all-reduced (reduce-scattered under sequence
      parallelism) while that layer's weight-gradient GEMM runs; the all-gather of a row-parallel
      layer's output gradient before its input-gradient GEMM is synchronous.
    - "regather" (`timing.regathered`, Megatron-LM's and TE's backward all-gather of a
      column-parallel layer's saved sharded input): launched asynchronously beside that layer's
      input-gradient GEMM under "backward" and as TE's bulk overlap (`qkv_dgrad`, `fc1_dgrad`)
      under "all"; under "none" it waits, exposed, like every other call."""
    if phase == "forward":
        return mode in ("all", "forward") and kind in ("all_gather", "reduce_scatter")
    if kind == "regather":
        return phase == "backward" and mode in ("all", "backward")
    if phase == "backward" and mode == "all":
        return True
    return phase == "backward" and mode == "backward" and kind in ("all_reduce", "reduce_scatter")
