"""The time model: step time and where it goes, throughput, MFU and HFU, before anything runs.

Everything is derived from the exact shapes (`flops.py`, the memory model's `Shape`), the layout
(`Knobs`, and the rank order for which links a group spans), the hardware's datasheet figures and
a handful of global constants (`calibration.py`, fitted on published runs by
`benchmarks/fidelity.py`). docs/time-model.md states every formula; the outline:

- per layer and micro-batch on one GPU (`layer_work`): GEMM seconds from FLOPs / (peak x
  efficiency), the efficiency a function of the GEMM's arithmetic intensity and the GPU
  generation; attention core (FlashAttention, or the unfused products of 2021-22 Megatron);
  memory-bound work (norms, activations, residuals, softmax) from bytes / HBM bandwidth; and the
  bytes of every collective it issues on tp, cp and ep;
- per collective (`Link`): ring or all-to-all time over the slowest link its group spans, NVLink
  inside a domain or the node's NICs (shared by its GPUs) across nodes, plus a latency per step;
- per pipeline rank (`rank_loads`, `rank_times`): the sum over its chunks (from `stages.py`, via
  the memory model's `chunks_of`), with each axis's exposed communication;
- per step (`step_time`): micro-batches x the slowest rank, plus the schedule's bubble (Qi et al.
  2023 for the zero-bubble schedules, DeepSeek-AI 2024 for DualPipe), plus the exposed
  data-parallel communication and the optimizer step.

Search evaluates ~10^5 layouts a second, so the core is plain functions over frozen, hashable
bundles of numbers (`Shape`, `Knobs`, `Hardware`, `Geometry`, `Software`, `Constants`,
`LayerCase`), cached by the part of the layout each depends on:

- `geometry(axes, ep_fold, ep, hsdp_shard, level)`: the groups' placement, per rank order;
- `layer_work(shape, case, hardware, constants)`: its `LayerCase` (dense or MoE; tp, sequence
  parallelism, cp, seq, micro-batch, ep, precision; the runtime's kernel choices);
- `link`: a group's size and placement;
- `rank_loads`: the chunking and the recomputation;
- `rank_times`: all of the above but the micro-batch count and the dp sharding (`_rank_times`
  keyed on `per_rank_knobs`), so candidates that differ only in the global batch or the sharding
  reuse every per-rank time;
- `step_time(shape, knobs, hardware, geometry, constants, software)`: one `Breakdown`, no pydantic
  object built (benchmarks/timing_speed.py measures the rate).

`predict(plan)` is the Plan-facing wrapper `parc explain` uses.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from . import flops, hbm
from . import kernels as kernel_model
from .calibration import DEFAULT, Constants
from .catalog.gpus import PRECISION_PEAK
from .frozen import hash_once, lazy_hash, replaced
from .latent import COLUMN, DUPLICATED, latent_norm_widths
from .ledger import Bounds, Collective, Compute, Ledger, merged
from .memory import unpredictable
from .memory.activations import torchtitan_matmuls, torchtitan_op_split
from .memory.inputs import (
    ELEMENT_BYTES,
    Knobs,
    Shape,
    fp8_transposed,
    keeps_original_input,
    knobs_of,
    shape_of,
)
from .memory.parameters import (
    attention_linears,
    by_rank,
    chunks_of,
    kv_split,
    latent_norm_params,
    layer_params,
    output_params,
    padded_vocab,
    split_weights,
    up_projections,
)
from .plan import AXES, Plan
from .targets import shared_overlap_applies

ACT = 2
"""Bytes of an activation element (bf16/fp16; fp8 training keeps activations in bf16)."""
FP8_DISPATCH_BYTES = 1 + 4 / 128
"""Bytes an element of a token an all-to-all into the experts carries in FP8
(`Software.ep_dispatch_fp8`): e4m3 values and one fp32 scale per 128 channels (DeepSeek-V3's 1x128
activation tiles; DeepEP's low-precision dispatch takes the same `(x_fp8, scales)` pair)."""
PARAM = 2
FP32 = 4
"""Bytes of a parameter element when gathered (the bf16 compute copy)."""
DP_BUCKET = 40_000_000
"""Elements of one data-parallel bucket outside FSDP, at least `DP_BUCKET_PER_RANK` x the group
size: Megatron-LM's distributed optimizer (the traffic contract's anchor for DDP's and zero1's
flat buffers) sizes its buckets max(40M, 1M x dp) elements."""
DP_BUCKET_PER_RANK = 1_000_000


def zero1_bucket_size(ranks: int, written: int | None = None) -> int:
    """Elements of one of zero1's gradient buckets over `ranks` data ranks: the spec's
    `dp { bucket N }`, else Megatron-Core's default max(40M, 1M x ranks) (the generated job's
    `BUCKET_SIZE`, and what the time model counts its calls with)."""
    return written or max(DP_BUCKET, DP_BUCKET_PER_RANK * ranks)


Runs = tuple[tuple[int, int], ...]
"""A chunk's blocks in model order, run-length encoded: (elements of one block, how many)."""


def bucket_count(runs: Runs, cap: int) -> int:
    """How many buckets zero1 cuts a chunk's blocks into (parallel.py's build_buckets): a
    bucket closes after the block that brings it to `cap` elements; the last one closes at the
    end. In closed form per run, so that a hostile layer count costs nothing."""
    count, held = 0, 0
    for size, n in runs:
        if size <= 0 or n <= 0:
            continue
        first = max(1, -(-(cap - held) // size))  # blocks that fill the open bucket
        if n < first:
            held += size * n
            continue
        n -= first
        per = max(1, -(-cap // size))
        count += 1 + n // per
        held = (n % per) * size
    return count + (1 if held else 0)


OPTIMIZER_BYTES = {"adam": 34, "adamw": 34, "sgd": 18}
"""HBM bytes the optimizer step moves per parameter. Adam: read fp32 weight, gradient and two
moments (16), write weight and moments (12), write the bf16 copy (2), read the gradient once more
for the global norm (4). SGD: read weight and gradient, write weight, copy, norm (18)."""
FLASH_BACKWARD = flops.FLASH_BACKWARD
SOFTMAX_FORWARD_BYTES = 9
"""Unfused attention, per score element, forward: scale-mask-softmax reads and writes 2 bytes,
dropout reads 2, writes 2 and a 1-byte mask (Megatron-LM's fused softmax plus dropout)."""
SOFTMAX_BACKWARD_BYTES = 11
"""Backward: dropout reads the gradient and the mask and writes (5), softmax reads the gradient and
the probabilities and writes (6)."""
FP8_CAST_BYTES = 4
"""Per element of an fp8 GEMM input: read 2 bytes, write the fp8 copy and its transpose. Where the
GPU's fp8 GEMMs take either layout (Blackwell: Transformer Engine's
`nvte_is_non_tn_fp8_gemm_supported`, `quantizer.cpp`) a per-tensor recipe's cast writes no
transpose: one byte less (`fp8_cast_per_element`); the block-scaled recipes (`BLOCK_SCALED`) write
both directions everywhere."""
BLOCK_SCALED = ("mxfp8", "blockwise")
"""Transformer Engine's fp8 recipes that scale blocks, not tensors: MXFP8 (an E8M0 scale per 32
elements) and the blockwise recipe (`Float8BlockScaling`: an fp32 scale per 1x128 tile of an
activation or gradient, per 128x128 block of a weight). Each block's scale comes from the block
itself inside the one quantize kernel (no amax pass before it, no amax reduced over tp, no
history), and the kernel writes the rowwise copy and the columnwise one beside it, each with its
scales (a byte a block of 32, or 4 bytes a tile of 128: 1/32 of a byte an element either way,
left out as `FP8_CAST_BYTES` leaves out per-tensor scales): TE 2.x's `MXFP8Quantizer` and
`Float8BlockQuantizer` (`quantize_transpose_vector_blockwise`, transpose_vector_blockwise.cu).
A norm before them runs unfused (`norm_fused_cast_saving`); the gathers under sequence
parallelism carry quantized copies, both of an output gradient (`_all_gather_mxfp8`,
`_all_gather_fp8_blockwise`, transformer_engine/pytorch/distributed.py)."""
FP8_AMAX_BYTES = 2
"""Per-tensor scaling found from the tensor itself, per element of each tensor cast: the amax
reduction reads the bf16 tensor once before the cast can start, since the cast needs its result.
torchao's dynamic (tensorwise) scaling (`tensor_to_scale`; torch.compile cannot fuse the two
passes) and Transformer Engine's current scaling (`Float8CurrentScalingQuantizer::quantize_impl`,
transformer_engine/pytorch/csrc/quantizer.cpp, TE 2.x: `nvte_compute_amax`, then the scale, then
`nvte_quantize_v2` reads the tensor again), except where TE's norm kernel records the amax of
the output it writes (`norm_fused_cast_saving`)."""
NVFP4_CAST_BYTES = 2 * 2 + 2 * ELEMENT_BYTES["nvfp4"]
"""Per element of an NVFP4 GEMM input (and output gradient), Transformer Engine's default recipe
(`NVFP4BlockScaling`, TE 2.20, `NVFP4Quantizer`): one pass reads the bf16 tensor (2) for the
per-tensor amax of it and of its Hadamard rotation, the fused row-cast / column-Hadamard-cast
kernel reads it again (2) and writes both copies, each half a byte an element with an E4M3
scale per 16 (2 x 0.5625): the rowwise one for the forward (or data-gradient) GEMM, the
rotated columnwise one for the weight-gradient GEMM. Gradients take stochastic rounding in the
same kernel."""
FP8_WEIGHT_CAST_BYTES = 5
"""Dynamic scaling, per weight element and forward pass (and recomputation): the amax reads the
bf16 weight (2), the cast reads it again and writes the fp8 copy (3). torchao's Float8Linear
casts the weights on every forward (no cache across micro-batches); the backward reuses the fp8
copy it saved. Transformer Engine's delayed scaling casts them once per step (not counted)."""


def fp8_cast_per_element(scaling: str, transposed: bool = True) -> float:
    """HBM bytes of one cast per element of the tensor cast, by recipe (`Software.fp8_scaling`, or
    "nvfp4"): `NVFP4_CAST_BYTES`; `FP8_CAST_BYTES`, less the transpose a per-tensor recipe of
    Transformer Engine does not write where the GPU's fp8 GEMMs take either layout (`transposed`
    False: Blackwell), plus `FP8_AMAX_BYTES` where the scale is found from the tensor before its
    cast (torchao's dynamic scaling, TE's current scaling)."""
    if scaling == "nvfp4":
        return NVFP4_CAST_BYTES
    if scaling == "dynamic":
        return FP8_CAST_BYTES + FP8_AMAX_BYTES
    amax = FP8_AMAX_BYTES if scaling == "current" else 0
    return FP8_CAST_BYTES + amax - (0 if transposed or scaling in BLOCK_SCALED else 1)


def norm_fused_cast_saving(shape: Shape, case: LayerCase, transposed: bool) -> float:
    """Forward HBM bytes, on one rank for one micro-batch, that the layer's accounting counts (the
    norm writing its bf16 output among the memory-bound elements, then `fp8_cast_per_element`'s
    cast) and Transformer Engine does not move where a `LayerNormLinear`'s norm kernel feeds the
    quantized GEMM: Megatron-Core fuses the input norm into the attention's QKV projection, the
    pre-FFN norm into a dense layer's fc1, and multi-head latent attention's latent norms into its
    up projections (`TELayerNormColumnParallelLinear`; `qk_layernorm`, which DeepSeek-V3's latent
    norms are: megatron/core/models/gpt/gpt_layer_specs.py). MLA's down projections share the
    input norm's output, and a MoE layer's experts and shared experts read the pre-FFN norm's
    through the router, so those take their own cast. TE 2.x,
    transformer_engine/pytorch/csrc/extensions/normalization.cpp:

    - delayed scaling (`FULLY_FUSED`): the norm kernel writes the fp8 copy itself (1 byte an
      element where 2 were written and 2 read back), then, where the GEMMs take one layout and the
      input is not gathered, `nvte_transpose` reads it and writes the transpose (rmsnorm_api.cpp):
      4 bytes an element saved, 3 with that transpose (under sequence parallelism the transpose is
      made after the gather, `gathered_cast_saving`);
    - current scaling (`FUSED_NORM_AMAX_FP8`): the norm writes bf16 and records its amax, and the
      quantizer casts without reading it first (`quantize_with_amax`): the amax pass's 2 bytes;
    - MXFP8 and NVFP4: the norm writes bf16 and the quantizer runs whole (`UNFUSED`; MXFP8's fused
      path only under `NVTE_NORM_FWD_USE_CUDNN`): nothing saved.

    The norm runs on the rank's own rows under sequence parallelism."""
    if case.precision not in QUANTIZED or case.precision == "nvfp4" or case.fp8_scaling not in ("delayed", "current"):
        return 0.0
    shard = case.shard
    if case.fp8_scaling == "current":
        per = FP8_AMAX_BYTES
    else:
        per = 2 * ACT - (CAST_TRANSPOSE_WRITE_BYTES if transposed and shard == 1 else 0)
    attention = sum(latent_norm_widths(shape.q_lora, shape.kv_lora)) if shape.mla else shape.hidden
    widths = attention + (0 if case.moe else shape.hidden)
    return per * widths * case.tokens / shard


def cast_scaling(precision: str, fp8_scaling: str) -> str:
    """What `fp8_cast_per_element` reads a quantized layer's casts by: "nvfp4" for NVFP4's, else the
    runtime's fp8 scaling (`Software.fp8_scaling`)."""
    return "nvfp4" if precision == "nvfp4" else fp8_scaling


def fp8_cast_bytes(gemms: list[tuple], scaling: str, transposed: bool = True) -> tuple[float, float]:
    """HBM bytes of an fp8 runtime's casts around one layer's GEMMs ((kernels, count, m, k, n, ...):
    `layer_work`'s GEMM tuples, whose further fields are the kernels' pooling),
    forward and backward: each GEMM input cast forward and each output gradient backward
    (`fp8_cast_per_element`), and under dynamic scaling the weights on every forward
    (`FP8_WEIGHT_CAST_BYTES`)."""
    per = fp8_cast_per_element(scaling, transposed)
    forward = sum(count * per * m * k for _, count, m, k, _, *_ in gemms)
    backward = sum(count * per * m * n for _, count, m, _, n, *_ in gemms)
    if scaling == "dynamic":
        forward += sum(count * FP8_WEIGHT_CAST_BYTES * k * n for _, count, _, k, n, *_ in gemms)
    return forward, backward


def gathers_quantized(tp: int, sp: bool, quantized: bool, fp8_scaling: str) -> bool:
    """Whether sequence parallelism's all-gathers of a layer's GEMM inputs (and, backward, of its
    output gradients) carry quantized tensors: Transformer Engine quantizes the rank's own rows
    first and gathers the result (`gather_along_first_dim` with the linear's quantizer,
    transformer_engine/pytorch/distributed.py, every recipe: `_all_gather_fp8`, `_all_gather_mxfp8`,
    `_all_gather_nvfp4`). Not torchao's dynamic scaling (torchtitan), charged in bf16 (`layer_work`
    says why). `quantized`: the layer's linears run quantized GEMMs."""
    return tp > 1 and sp and quantized and fp8_scaling != "dynamic"


GATHER_TRANSPOSE_BYTES = 2
"""A transpose made from an fp8 tensor after its all-gather: read 1 byte an element, write 1."""

CAST_TRANSPOSE_WRITE_BYTES = 1
"""The transposed copy a per-tensor fp8 cast writes beside the rowwise one where the part's fp8
GEMMs take one layout (part of `FP8_CAST_BYTES`)."""


def gathered_cast_saving(scaling: str, transposed: bool, shard: int, inputs: float,
                         gradients: float) -> tuple[float, float]:
    """(forward, backward) bytes per element of a gathered tensor that `fp8_cast_bytes` (each cast
    on the whole gathered tensor) over-counts where the runtime quantizes before the gather
    (`gathers_quantized`), per token: `inputs` elements of column-parallel inputs forward and
    `gradients` of row-parallel output gradients backward (`sp_gathered_widths`), each quantized on
    the rank's own 1/`shard` of the rows. Under a per-tensor recipe on a part whose fp8 GEMMs take
    one layout (`transposed`: Hopper) the gather carries the rowwise copy alone (`_all_gather_fp8`
    turns the quantizer's columnwise usage off for the local cast), and the transpose the
    weight-gradient GEMM needs is made from the gathered tensor (`GATHER_TRANSPOSE_BYTES`): the
    output gradient's in the backward, and the input's in the backward too, after the saved shard
    is gathered again (the forward saves the local shard). H100 at tp 4 under delayed scaling, one block: forward 3/4
    byte an element where 4 were charged, backward 3/4 + 2 + 2 where 4 were. The blockwise recipe
    on such a part casts both copies locally, gathers them in their compact layout and transposes
    the gathered columnwise copy into the GEMM's (`_post_process_fp8_blockwise_gather`, TE 2.9
    distributed.py: "this fp8 blockwise tensor primarily works with Hopper"): the same transposes
    after the gathers, no transpose write saved before them."""
    if shard <= 1:
        return 0.0, 0.0
    full = fp8_cast_per_element(scaling, transposed)
    per_tensor = scaling in ("delayed", "current")
    after = GATHER_TRANSPOSE_BYTES if transposed and (per_tensor or scaling == "blockwise") else 0.0
    local = full - (CAST_TRANSPOSE_WRITE_BYTES if after and per_tensor else 0.0)
    return inputs * (full - local / shard), gradients * (full - local / shard - after) - inputs * after


def sp_gathered_widths(shape: Shape, moe: bool) -> tuple[float, float]:
    """(inputs, gradients): elements per token of a layer's column-parallel inputs that sequence
    parallelism gathers forward, and of its row-parallel output gradients it gathers backward
    (`gathered_cast_saving`). Gradients: the attention's output projection's and the dense FFN's or
    the shared experts' fc2's, the hidden width each (routed experts take their tokens from the
    all-to-all). Inputs: the same blocks' QKV and fc1, the hidden width each, but multi-head latent
    attention's up projections, which gather their inputs, the query latent (or the hidden state)
    and the key-value latent (`mla_tp_width` without the RoPE key: Megatron-Core's
    multi_latent_attention.py scatters both latents and its column-parallel up projections gather
    them)."""
    ffn = shape.hidden if not moe or shape.shared_experts else 0
    attention = mla_tp_width(shape, False) if shape.mla else shape.hidden
    return attention + ffn, shape.hidden + ffn


def sp_cast_saving(shape: Shape, case: LayerCase, transposed: bool) -> tuple[float, float]:
    """(forward, backward) HBM bytes one layer's casts move less, on one rank for one micro-batch,
    where sequence parallelism gathers quantized tensors (`gathers_quantized`): the per-element
    saving (`gathered_cast_saving`) over the gathered widths (`sp_gathered_widths`) and the
    micro-batch's tokens (part of `cast_correction`); 0 where the gathers carry bf16. `transposed`:
    the part's fp8 GEMMs take one layout (`fp8_transposed`)."""
    if not gathers_quantized(case.tp, case.sp, True, case.fp8_scaling):
        return 0.0, 0.0
    tokens = case.tokens
    forward, backward = gathered_cast_saving(cast_scaling(case.precision, case.fp8_scaling), transposed, case.tp,
                                             *sp_gathered_widths(shape, case.moe))
    return forward * tokens, backward * tokens


def kept_bf16_input(case: LayerCase) -> bool:
    """Whether the layer's output projection keeps its bf16 input for the weight gradient: the
    runtime's Megatron-Core has `set_save_original_input` (`LayerCase.original_input`) and the
    recipe is one it sets it under (`memory.inputs.keeps_original_input`)."""
    return case.original_input and keeps_original_input(case.precision, case.fp8_scaling)


def shared_fc1_keeps_bf16(shape: Shape, case: LayerCase) -> bool:
    """Whether a MoE layer's shared-expert fc1 keeps its bf16 input too (`kept_bf16_input`):
    Megatron-Core's shared_experts.py sets it unless the shared experts are recomputed
    (`LayerCase.shared_recomputed`). The one predicate of its casts (`original_input_casts`) and
    of its extra amax all-reduce (`tp_amax_reductions`)."""
    return case.moe and bool(shape.shared_experts) and not case.shared_recomputed and kept_bf16_input(case)


def original_input_casts(shape: Shape, case: LayerCase, transposed: bool) -> tuple[float, float]:
    """(forward, backward) HBM bytes, on one rank for one micro-batch, that the linears Megatron-Core
    has keep their bf16 input (`set_save_original_input`: the attention's output projection, and a
    MoE layer's shared-expert fc1 unless the shared experts are recomputed; Megatron-Core
    attention.py, multi_latent_attention.py and moe/shared_experts.py, under every fp8 recipe but
    delayed scaling (TE >= 2.6) and under NVFP4 (TE >= 2.7)) move beyond the one cast each
    `fp8_cast_bytes` counts. TE 2.x's `Linear` (module/linear.py) then quantizes the input rowwise
    only in the forward (no transpose, columnwise copy or Hadamard-rotated copy: the forward saves
    that write) and quantizes the saved bf16 input again in the backward for its weight gradient,
    amax pass and all: per-tensor scaling writes the rowwise copy and its transpose there, block
    scaling the columnwise copy alone; a gathered input (the shared experts' fc1 under sequence
    parallelism) is quantized rowwise on the rank's own rows and transposed after the re-gather.
    Negative forward, positive backward; 0 under delayed scaling and outside Transformer Engine."""
    if not kept_bf16_input(case):
        return 0.0, 0.0
    recipe = cast_scaling(case.precision, case.fp8_scaling)
    block = recipe != "current"
    full = fp8_cast_per_element(recipe, transposed)
    column = ELEMENT_BYTES["nvfp4"] if recipe == "nvfp4" else (1.0 if block or transposed else 0.0)
    tokens, shard = case.tokens, case.shard
    # the output projection's input: the attention's output, the rank's own, never gathered
    forward = -column * tokens * shape.o / case.tp
    backward = (full - (column if block else 0.0)) * tokens * shape.o / case.tp
    if shared_fc1_keeps_bf16(shape, case):  # the shared fc1's input (the norm's output)
        rows = tokens * shape.hidden / shard
        gathered = shard > 1
        forward -= 0.0 if gathered and not block else column * rows  # per-tensor: gathered rowwise anyway
        backward += (full - (column if block or gathered else 0.0)) * rows
    return forward, backward


def cast_correction(shape: Shape, case: LayerCase, transposed: bool) -> tuple[float, float]:
    """(forward, backward) HBM bytes to add, on one rank for one micro-batch, to one layer's casts
    as `fp8_cast_bytes` counts them (each whole, with its recipe's passes, after a bf16 producer),
    for what Transformer Engine and Megatron-Core move instead: the gathered tensors' casts run on
    the rank's own rows (`sp_cast_saving`), a fused norm writes or measures the quantized GEMM's
    input itself (`norm_fused_cast_saving`), and the linears that keep their bf16 input quantize
    it again in the backward (`original_input_casts`). The one place `timing.layer_work` and the
    HBM ledger (`hbm.layer_bytes`) take it from."""
    sp_f, sp_b = sp_cast_saving(shape, case, transposed)
    original_f, original_b = original_input_casts(shape, case, transposed)
    return original_f - sp_f - norm_fused_cast_saving(shape, case, transposed), original_b - sp_b


def fused_mlp_epilogue_casts(local: int, rows: float, expert_ffn: float, up: int) -> tuple[float, float]:
    """The casts `fp8_cast_bytes` counts that Transformer Engine's fused grouped MLP
    (`Software.fused_grouped_mlp`) does not run, forward and backward: fc2's input (`rows` x
    `expert_ffn` per local expert) leaves fc1's GEMM quantized, and fc1's output gradient (`rows` x
    `up` x `expert_ffn`) leaves fc2's dgrad quantized. MXFP8 scales per block, with no amax pass."""
    return (local * FP8_CAST_BYTES * rows * expert_ffn, local * FP8_CAST_BYTES * rows * up * expert_ffn)


RING_ROWS = 0.75
"""Mean share of a rank's query rows (or of a K/V block's keys) an off-diagonal zig-zag ring step
touches: half the steps bring an earlier rank's chunks (all query rows against its first key
chunk), half a later rank's (the second query chunk against both of its key chunks)."""


def ring_bytes(runtime: str, kernels: str, cp: int, n: float, q: float, kv: float,
               run: float | None = None) -> tuple[float, float]:
    """HBM bytes, forward and backward, of one layer's bookkeeping around the kernels of stepped
    context-parallel attention (cp SDPA kernels each way): merging each step's partial output
    into the running one by its log-sum-exp, accumulating dQ, dK, dV, and the copies the
    exchange makes. `n` tokens on the rank, `q` and `kv` the rank's query and K/V widths (the
    K/V the runtime exchanges: torchtitan repeats them to every query head before SDPA, so its
    caller passes q). Counted op by op from each runtime's code (elements of 2 bytes in bf16, 4 in
    fp32; "read a, b, write c" = a + b + c):

    parc's job (`ring_attention`, `attend_blocks` in the generated model.py): a zeroed fp32
    accumulator (4), per step `out.mul_(scale)` (read 4, write 4), `block * scale` (read 2, write
    4), `add_` (read 4 + 4, write 4): 26 on the rows the step touches (all on the diagonal step,
    `RING_ROWS` on the others), the final cast (6); `torch.stack([k, v])` (4 per K/V element).
    Backward: dQ zeroed (4), `dq += block_dq` per step (10 on its rows), cast back (6); per step
    and K/V element, zeroed dK/dV (4), `+= block_dk` (10 on the step's keys), the travelling sum
    (10, after the first step), its bf16 cast for the send (6); the stack again (4).

    torch's `_templated_ring_attention` (torchtitan), eager: per step after the first the merge
    in fp32, `out - sigmoid(lse_b - lse) * (out - block)` with block cast to fp32 (6 + 12 + 8 +
    12 = 38), or on the later query half only with the accumulator re-concatenated
    (`_partial_update`: 19 + 8 = 27) on the steps whose keys come from a later rank (half of them
    in the mean); the first step's cast and the final one (12); each step's `torch.cat` of K and V
    for the exchange (4 per K/V element). Backward: dQ, dK, dV zeroed in fp32 (4), per step
    `+= ` (10; or on half the rows with the concatenation, 13: mean 11.5) for each, dK/dV
    flattened into the fp32 send buffer (8 per element) and K/V concatenated (4), cast back (6).
    Under torch.compile the merge and the accumulations fuse to one read of each input and one
    write (10 per element; 5 on half the rows), the copies stay.

    Transformer Engine (Megatron-LM): fused correction kernels, read the running and the new
    output, write one (3 x 2 bytes per output element per step after the first); dK and dV
    accumulated in fp32 (2 x 4 bytes per K/V element per step after the first).

    `run`: parc's ring steps that compute (default cp; fewer on a windowed layer, where a step
    whose K/V lies outside every query's window attends to no block: `flash_attention_launches`,
    a mean over the layers). A skipped step merges nothing forward and adds no block's dQ, dK, dV
    backward; its zeroed dK/dV, the travelling sum and its cast still run (the relay)."""
    if cp <= 1:
        return 0.0, 0.0
    out, keys = n * q, 2 * n * kv
    steps_off = cp - 1
    if runtime == "parc":
        rows = 1 + RING_ROWS * ((cp if run is None else run) - 1)  # the diagonal step always runs
        forward = out * (4 + 26 * rows + 6) + keys * 4
        backward = out * (4 + 10 * rows + 6) + keys * (4 * cp + 10 * rows + 10 * steps_off + 6 * cp + 4)
        return forward, backward
    if runtime == "torch":
        if kernels == "eager":
            merge, cast, accumulate, flatten = (38 + 27) / 2, 12, 11.5, 8
        else:
            merge, cast, accumulate, flatten = (10 + 5) / 2, 12, 7.5, 0
        forward = out * (merge * steps_off + cast) + keys * 4 * steps_off
        backward = (out * (4 + accumulate * cp + 6)
                    + keys * (4 + accumulate * cp + flatten * cp + 4 * steps_off + 6))
        return forward, backward
    return out * 3 * ACT * steps_off, keys * 2 * 4 * steps_off
EAGER_ROPE_BYTES = (44, 38)
"""Bytes per query/key element that parc's eager rotary embedding (`rotate` in the generated
model.py: cast to fp32, four products and a sum and a difference on the halves, a concatenation,
a cast back) moves beyond the one fused read and write the fused runtimes charge (4 bytes):
forward 6 (cast) + 4 x 4 (products) + 2 x 6 (sum, difference) + 8 (cat) + 6 (cast back) = 48;
backward 6 + 4 + 16 + 6 + 8 + 6 = 46 against the fused 8 (autograd's casts, products, the
negation, the accumulation of the two paths into each half and the halves' scatter)."""
UNFUSED_ROPE_BYTES = (20, 20)
"""Bytes per query/key element that Megatron-Core's unfused rotary embedding moves beyond the
fused kernel's read and write (4 forward, 8 backward): `_apply_rotary_pos_emb_bshd`
(megatron/core/models/common/embeddings/rope_utils.py at Megatron-LM 23265d2) computes
`cat(t * cos + cat(-t2, t1) * sin, t_pass)` in bf16, 12 passes forward (24 bytes) and 14 backward
(28), counted by torch's dispatcher in tests/test_expert_bias.py. Megatron-Core takes it instead of
Transformer Engine's fused RoPE whenever the YaRN concentration factor (`mscale`) is not 1
(`apply_rotary_pos_emb`: "mscale ... is not supported by TE's fused RoPE. Using unfused
implementation"), e.g. gpt-oss (YaRN factor 32, no `yarn_mscale`: 0.1 ln 32 + 1 = 1.35)."""
UNFUSED_ROPE_KERNELS = (12, 7)
"""Kernels of one unfused rotary embedding call (the queries' or the keys'), forward and backward,
the per-position cos and sin included."""
EAGER_SWIGLU_BYTES = (4, 6)
"""Bytes per FFN inner element that eager SwiGLU (`silu(w1 x) * w3 x`: silu reads and writes, the
product reads both and writes) moves beyond the fused kernel's read of two and write of one (6):
forward 10 - 6, backward 18 - 12."""
ROUTER_BYTES = (22, 30)
"""HBM bytes per (routed token, expert) of the router's memory-bound kernels, which work on the
E scores of every token in fp32 (parc's runtime casts the logits with `.float()`; Megatron-Core
routes in fp32): forward, the cast (read 2, write 4), the softmax (read 4, write 4), top-k
(read 4) and the load-balancing statistic's mean (read 4): 22; backward, the gates' gradient
scattered into the E scores (write 4), the balancing term's gradient added (read 4, write 4),
the softmax backward (read the probabilities and the gradient, write: 12) and the cast's
backward (read 4, write 2): 30. The logits GEMM itself is one of the layer's GEMMs."""
ROUTER_KERNELS = 4
"""Memory-bound kernels of the router each way (cast, softmax, top-k, the balancing statistic)."""
PERMUTE_PASSES = {"fused": ((3, 5), (4, 4)), "eager": ((4, 8), (0, 0)), "flex": ((3, 5), (0, 0))}
"""Passes over the routed token copies (each `top_k x tokens x h` elements, 16-bit) that the
dispatcher's permutations make, forward and backward, per runtime: (plain, extra when ep > 1
and a rank holds several experts).

Megatron-Core's token dispatcher (`MoEAlltoAllTokenDispatcher`, the Megatron-Core MoE docs'
"permute / unpermute"; Megatron-Core `moe_utils.permute`, `unpermute`, `sort_chunks_by_idxs`):
forward, `permute` gathers each token's copies into expert order (read, write: 2), `unpermute`
reads every copy back, weights it by its gate and sums it into its token (1); with ep > 1 and
several local experts the received copies are re-sorted from source-rank order into expert order
after the dispatch and back before the combine (`sort_chunks_by_idxs`, read and write each: +4).
Backward: `permute`'s gradient is a scatter-add of the copies' gradients into their tokens (1),
`unpermute`'s a gather of each token's gradient into its copies (2) plus the gates' gradient, a
dot product of each copy with its gradient (read both: 2): 5, and the re-sorts again (+4).
parc's runtime ("eager": index_select and index_add_ per expert) is charged 4 passes forward
and 8 backward, as before this model.

Under Megatron-Core's flex dispatcher (DeepEP, "deepep", and Hybrid-EP, "hybridep":
`Software.ep_dispatcher`) the exchange itself reads each token where it lies and delivers it
once per destination rank, and the tokens arrive grouped for the rank's experts: Megatron-Core's
`permute` over the received tokens' routing map expands them into expert order (2) and
`unpermute` sums each token's copies back before the combine (1) (`_DeepepManager.
get_permuted_hidden_states_by_experts` / `get_restored_hidden_states_by_experts`); Hybrid-EP
does the same in its own permute and unpermute kernels (`_HybridEPManager`, "permute tokens for
experts in single step"; DeepEP's Hybrid-EP guide, "Executor": `dispatch_with_permute` is its
dispatch kernel then a permute kernel, `combine_with_unpermute` an unpermute kernel then its
combine kernel): 3 forward and 5 backward, and no re-sort by local expert. With Megatron-Core's
`moe_permute_fusion_into_hybridep` Hybrid-EP's permutations fuse into its communication
kernels; no transcribed run states it, so the separate kernels are charged."""
EXPERT_BIAS_PASSES = (6, 8)
"""16-bit passes over the routed token copies (each `top_k x tokens x h` elements) that the
routed experts' output bias moves in Megatron-Core, forward and backward, when the model has
linear biases (`add_bias_linear`, e.g. gpt-oss through Megatron-Bridge's `gpt_oss_bridge.py`).
`TEGroupedMLP` builds `linear_fc2` with `skip_bias_add=True`, so Transformer Engine's
`GroupedLinear` returns the experts' biases unapplied (`return_bias`) and
`TEGroupedMLP._apply_bias` adds them in eager PyTorch, one expert after another:
`torch.cat([t + b * p for t, b, p in zip(split(out), biases, split(probs))])`
(megatron/core/transformer/moe/experts.py at NVIDIA/Megatron-LM 23265d2, the submodule of
Megatron-Bridge 74695a06d7). Forward, `b * p` writes each copy's h-wide bias row (1), the add
reads it and the GEMM's output and writes the sum (3), `cat` reads and writes every row (2): 6.
Backward, autograd's broadcast products: the bias gradient `sum(grad * p)` (read the gradient,
write the product, read it to reduce: 3) and the gate gradient `sum(grad * b)` (3), and `split`'s
gradient, a `cat` of the experts' output gradients (2): 8; `cat`'s and the add's gradients are
views (torch's dispatcher counts these passes and kernels in tests/test_expert_bias.py). A lower
bound: under the flex dispatcher the gates are fp32 (HybridEP and DeepEP take only fp32
probabilities, megatron/core/transformer/moe/token_dispatcher.py), which makes the products and
the concatenation fp32 and adds a cast."""
EXPERT_BIAS_KERNELS = ((2, 1), (4, 2))
"""Kernels of that eager bias, (per local expert, once), forward and backward: forward a product
and an add per expert and one `cat`; backward two products and two reductions per expert and the
two `cat`s of `split`'s gradients (the outputs' and the gates')."""
EXPERT_CLAMP_PASSES = (4.0, 7.5)
"""16-bit passes over the routed experts' fc1 output (`up x expert_ffn` per routed copy) that
Megatron-Core's clamped GLU moves in eager PyTorch before its fused activation, forward and
backward, when the model clamps it (`activation_func_clamp_value`, 7.0 for gpt-oss:
Megatron-Bridge `gpt_oss_bridge.py`). `weighted_bias_quick_geglu_impl`
(megatron/core/fusions/fused_bias_geglu.py at Megatron-LM 23265d2) clamps the two halves and
concatenates them outside the compiled kernel: `torch.cat((x_glu.clamp(max=c),
x_linear.clamp(-c, c)), -1)`. Forward, the two clamps read and write each half (2) and `cat`
reads and writes the whole (2): 4. Backward, each clamp's gradient builds its mask from the saved
input (`ge`, `le` and their `and` for the two-sided one, one `le` for the other: 0.75 each in
16-bit units, reading a half and writing a byte mask) and selects the gradient (`where`: 1.25
each), and the halves' gradients are concatenated (2): 7.5. Counted by torch's dispatcher in
tests/test_expert_bias.py. Under `--recompute-modules moe_act` the forward runs again."""
EXPERT_CLAMP_KERNELS = (3, 9)
"""Kernels of that eager clamp, forward (two clamps, a `cat`) and backward (the masks' three
comparisons and `and`, two `where`, a `cat`, and two scalar fills)."""
MEMORY_KERNELS = 6
"""Memory-bound kernels of a layer's forward: two norms, two residual adds, the activation, RoPE
(the backward runs as many, each twice the bytes)."""


def cross_entropy_bytes(kernels: str, tp: int) -> tuple[int, int]:
    """HBM bytes per logit of the loss, forward and backward, counted op by op in each runtime
    (the logits GEMM writes its bf16 output; these are the kernels after it, all in fp32).

    Megatron-LM (`_VocabParallelCrossEntropy`, unfused, the default): cast to fp32 (read 2, write
    4), max (4), subtract the max (8), exp in place (8), sum (4), divide in place to keep the
    softmax (8): 38; backward, multiply by the loss gradient in place (8) and the cast's backward
    (read 4, write 2): 14.

    parc's runtime casts the logits to fp32 (6) and calls `F.cross_entropy`. Without tensor
    parallelism that is torch's log-softmax kernel (max, sum of exp, write: read 12, write 4) and
    a gather: 22; backward, the NLL gradient (write 4), the log-softmax backward (read the
    gradient twice and the output once, write: 16) and the cast's backward (6): 26. Under
    tensor parallelism `loss_parallel` runs it as separate ops on the vocabulary shard: max (4),
    subtract (8), exp (8), sum (4), subtract the log-sum-exp (8): 38; backward, zeros (4), exp of
    the log-probabilities (8), add (12), multiply (8) and the cast's backward (6): 38.

    "xentropy" (`Software.loss_kernel`: flash-attention's csrc/xentropy, apex's
    `SoftmaxCrossEntropyLoss`) works on the 16-bit logits in one kernel each way: forward, a pass
    for the row's max and a pass for its sum of exponentials (read 2 each; it writes one loss and
    one log-sum-exp per row): 4; backward, the softmax minus the one-hot from the logits and the
    log-sum-exp (read 2, write the 16-bit gradient 2): 4."""
    if kernels == "xentropy":
        return 4, 4
    if kernels == "fused":
        return 38, 14
    return (22, 26) if tp == 1 else (38, 38)


HBM_BANDWIDTH = {
    "a100-40gb": 1.555e12,  # datasheet: 1,555 GB/s HBM2
    "a100-80gb": 2.039e12,  # datasheet: 2,039 GB/s HBM2e (SXM)
    "h100-sxm": 3.35e12,  # datasheet: 3.35 TB/s HBM3
    "h200": 4.8e12,  # datasheet: 4.8 TB/s HBM3e
    "h800": 3.35e12,  # same HBM3 as H100 SXM
    "b200": 8.0e12,  # DGX B200 datasheet: 64 TB/s for 8 GPUs
    "gb200-nvl72": 8.0e12,  # NVL72 datasheet: 576 TB/s for 72 GPUs
    "b300": 8.0e12,  # NVIDIA, "Inside NVIDIA Blackwell Ultra": 8 TB/s HBM3e per GPU
    "gb300-nvl72": 8.0e12,  # GB300 NVL72: 576 TB/s for 72 GPUs
    "mi300x": 5.3e12,  # datasheet: 5.3 TB/s HBM3
}
"""HBM bandwidth (bytes/s) of the catalogue's GPUs. The catalogue (`catalog/gpus.py`) does not carry
it and `Gpu` admits no new field, so it lives here; a GPU defined in a spec takes its generation's."""
HBM_BY_GENERATION = {"ampere": 2.039e12, "hopper": 3.35e12, "blackwell": 8.0e12, "cdna3": 5.3e12}
SMS_BY_GENERATION = {"ampere": 108, "hopper": 132, "blackwell": 148, "cdna3": 304}
"""SMs (compute units) of a GPU defined in a spec without the catalogue's `sms`: its generation's
flagship (A100, H100, B200, MI300X)."""

SCHEDULES = ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v")


# ---------------------------------------------------------------------------------------------
# Inputs as numbers


@dataclass(frozen=True, slots=True)
class Hardware:
    """One GPU and its links, as numbers."""

    generation: str
    bf16: float
    """Dense BF16 peak, FLOP/s (fp16 runs at the same rate)."""
    fp8: float | None
    hbm: float
    """HBM bytes/s."""
    intra: float
    """Per-GPU bandwidth inside the fast level (NVLink domain, or the node), one direction."""
    nic: float
    """Per-GPU share of the node's NICs, one direction: node bandwidth / GPUs per node (every GPU
    of a node talks at once in the collectives modelled here)."""
    level: int
    """GPUs reached at `intra` bandwidth: the NVLink domain (72 on NVL72), else the node."""
    fp4: float | None = None
    """Dense FP4 peak, FLOP/s (NVFP4's products); None before Blackwell."""
    sms: int = 132
    """Streaming multiprocessors: the width of one wave of GEMM tiles (`kernels.wave_efficiency`)."""
    host: float = 0.0
    """One GPU's share of its link to host memory, bytes/s one direction, peak (the spec's
    `host-bandwidth` over `catalog.gpus.host_bandwidth`): activation offloading's copies. 0:
    unknown (a GPU defined in a spec without it), where offloading is charged nothing."""
    ceiling: float = 1.0
    """The part's measured tensor-core ceiling relative to the part the fitted GEMM ceiling comes
    from (`kernels.matmul_ceiling`: B200 0.966, GB200 0.908 of H100's); scales every GEMM (and,
    where no sweep of the part's fused attention is published, its attention:
    `attention_ceiling`)."""
    attention_ceiling: kernel_model.AttentionCeiling = ((128, 1.0, 1.0),)
    """The part's fused attention (forward, backward) relative to the Hopper curve it is charged on,
    by head dim (`kernels.attention_ceiling`, read with `kernels.ceiling_at`: measured in one suite,
    GB200 0.98 / 0.94 at head dim 128 and 0.69 / 0.85 at 64; else `ceiling` both ways)."""
    fp8_attention_part: str = ""
    """The measured part whose FP8 attention speedups this part takes (`kernels.fp8_attention_part`);
    "": none measured."""
    achievable: float = 1.0
    """The most of its dense BF16 peak the part's matrix products reach (`kernels.matmul_achievable`:
    its measured maximum achievable matmul FLOP/s, H100 0.803): the bound no BF16 GEMM is charged
    faster than (`gemm_efficiency`)."""
    achievable_fp8: float = 1.0
    """The same of its dense FP8 peak (H100 0.709): the bound of an FP8 GEMM."""
    exp_scale: float = 1.0
    """The part's special-function units against its generation's exponential rate
    (`kernels.EXP_SCALE`: Blackwell Ultra 2.14): the attention's exponential floor
    (`kernels.exp_seconds`)."""
    nvls: bool = False
    """NVLink SHARP (the spec's `nvls on`): all-reduces inside the NVLink domain may reduce in the
    NVSwitches (`Link.nvls_all_reduce`)."""
    sharp: bool = False
    """InfiniBand SHARP (the spec's `sharp on`): all-reduces across nodes may reduce in the
    fabric's switches (`Link.sharp_all_reduce`)."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash

    def quantized_attention(self, layer: str, kind: str, causal: bool) -> tuple[float, float | None] | None:
        """The measured (forward, backward) speedup of the FP8 attention kernel `kind` ("fp8",
        "mxfp8") on a `layer` ("gqa", "mla") and mask over the BF16 one, or None
        (`kernels.attention_fp8_speedup`; a direction never measured is None)."""
        return kernel_model.attention_fp8_speedup(self.fp8_attention_part, layer, kind, causal)


def hardware_of(plan: Plan) -> Hardware:
    """The plan's GPU and links as numbers: the spec's `hbm-bandwidth` (and `host-bandwidth`) over
    the datasheet's, the dense peaks derated under the spec's `power-limit` (`power.clock_fraction`)."""
    from .catalog.gpus import host_bandwidth
    from .power import BOARD_POWER, clock_fraction

    cluster, gpu = plan.cluster, plan.cluster.gpu
    hbm = (cluster.hbm_bandwidth or HBM_BANDWIDTH.get(gpu.name)
           or HBM_BY_GENERATION.get(gpu.generation, 3.35e12))
    clock = clock_fraction(cluster.power_limit, BOARD_POWER.get(gpu.name))
    return Hardware(
        generation=gpu.generation, bf16=gpu.bf16_flops * clock,
        fp8=gpu.fp8_flops * clock if gpu.fp8_flops else gpu.fp8_flops, hbm=hbm,
        fp4=gpu.fp4_flops * clock if gpu.fp4_flops else None,
        intra=cluster.intra_bandwidth, nic=cluster.network.node_bandwidth / cluster.gpus_per_node,
        level=max(cluster.domain_size, cluster.gpus_per_node),
        sms=gpu.sms or SMS_BY_GENERATION.get(gpu.generation, 132),
        host=cluster.host_bandwidth or host_bandwidth(gpu.name) or 0.0,
        ceiling=kernel_model.matmul_ceiling(gpu.name, gpu.generation),
        attention_ceiling=kernel_model.attention_ceiling(gpu.name, gpu.generation),
        fp8_attention_part=kernel_model.fp8_attention_part(gpu.name, gpu.generation),
        achievable=kernel_model.matmul_achievable(gpu.name, gpu.generation),
        achievable_fp8=kernel_model.matmul_achievable(gpu.name, gpu.generation, fp8=True),
        exp_scale=kernel_model.EXP_SCALE.get(gpu.name, 1.0), nvls=bool(cluster.nvls),
        sharp=bool(cluster.sharp))


@dataclass(frozen=True, slots=True)
class Software:
    """What the training program does that a spec does not say: facts of the runtime, not of the
    layout. The defaults are what parc generates (PyTorch: SDPA FlashAttention, plain DTensor
    tensor parallelism); benchmarks/fidelity.py sets them per published run from its source."""

    attention: str = "flash"
    """"flash": fused attention that skips the masked half (causal), torch's SDPA (its flash
    backend is FlashAttention-2: parc's runtime, torchtitan with or without torch.compile);
    "flash-te": the same through Transformer Engine (Megatron-LM, NeMo: FlashAttention-2 on
    Ampere, cuDNN's fused attention on Hopper and later); "flash-te-fa2": Transformer Engine
    running flash-attn's FlashAttention-2 on every generation (`attention-backend flash`,
    `NVTE_FUSED_ATTN=0`: torch's SDPA's curve, no FP8 variant); "unfused": the s x s
    scores are materialised and the full square computed (Megatron-LM before mid-2022)."""
    attention_fp8: bool = False
    """The fused attention's products run in FP8 under an fp8 spec: Transformer Engine's FP8
    dot-product attention (Megatron-Core's `TransformerConfig.fp8_dot_product_attention`, which
    Megatron-Bridge's recipes set; Megatron-LM's command line has no flag for it at core_v0.16.0,
    so no spec states it and the reader of published runs sets it), at the FP8 peak times
    `kernels.FP8_ATTENTION_SHARE`, never below the exponential unit's floor
    (`kernels.exp_seconds`). Off: attention in BF16 whatever the linears run in (every runtime's
    default)."""
    selective: str = "elementwise"
    """What `recompute selective` repeats: "elementwise" (parc's runtime: an op-level policy that
    saves most matmul outputs and recomputes norms, RoPE, activations and the attention output
    projection), "torchtitan-op" (torchtitan's per-op policy, `TORCHTITAN_OP`: every second matmul
    of a dense block and its whole forward but the saved ops, its tp all-gathers or all-reduces
    included), "attention-core" (Megatron-LM, Korthikanti et al. 2022: the attention core),
    or "modules:" and Megatron-Core's `--recompute-modules` list, comma-separated
    (`recompute_modules`: "core_attn" is "attention-core"; "layernorm" the two norms; "moe_act"
    the routed experts' activation; "moe" the whole MoE layer, its router, permutations, expert
    GEMMs and its dispatch and combine all-to-alls, again before the backward)."""
    tp_overlap: str = "none"
    """Which tensor-parallel collectives run under an independent GEMM, whose time then hides as
    much of them: "none" (plain DTensor TP); "backward" (Megatron-LM
    since late 2021: the input-gradient all-reduce or reduce-scatter runs under the weight-gradient
    GEMM); "all" (Megatron-Core's --tp-comm-overlap: forward too); "forward" (torch's async TP,
    torchtitan's `--compile.enable-async-tensor-parallel`: inductor's micro-pipeline pass fuses
    `all_gather -> mm` and `mm -> reduce_scatter` on the token dimension, which the forward's
    four collectives (and a full recomputation's) are; in the backward the input gradient's
    reduce-scatter follows a sum of products (Q, K, V; gate and up), which `reduce_scatter(A @ B)`
    does not match, and the backward's gathers are charged exposed too: PyTorch's account of async
    TP reports forward-pass speed-ups only, and torchtitan's published end-to-end gains,
    1.09-1.16x, are those of hiding the forward's collectives, not also the backward's gathers;
    docs/time-model.md)."""
    kernels: str = "eager"
    """"eager": plain PyTorch, one kernel per op (parc's runtime, torchtitan without
    torch.compile): its computation runs at `eager_efficiency` of the fitted speed. "fused":
    Megatron-LM with fused kernels and Transformer Engine, the runs the GEMM constants were
    fitted on."""
    loss_kernel: str = ""
    """The cross-entropy's kernels where the runtime's differ from its `kernels`' own
    (`cross_entropy_bytes`): "xentropy", flash-attention's fused softmax cross-entropy CUDA
    extension (csrc/xentropy, from apex), one kernel each way on the 16-bit logits, which
    llm-foundry's MPT uses by default (`loss_fn: fused_crossentropy`); "" the runtime's own
    (`loss_kernels`)."""
    fp8: str = "none"
    """Which GEMMs an fp8 spec runs in fp8: "none" (parc's runtime has no fp8 matmuls and runs
    an fp8 spec in bf16, `backends/torch/runtime.py`), or "linear" (Transformer Engine in
    Megatron-LM and NeMo, torchao's float8 in torchtitan: the transformer layers' linear
    layers; attention and the output layer stay bf16 in both)."""
    fp4: bool = False
    """Whether an nvfp4 spec's linears run in NVFP4 (`gemm_precision`): Transformer Engine's recipe
    (Megatron-LM); elsewhere they run in bf16."""
    fp8_scaling: str = "delayed"
    """How an fp8 runtime finds each tensor's scale (`fp8_cast_bytes`): "delayed" (Transformer
    Engine's default recipe: the scale comes from an amax history and the cast kernel records the
    new amax in the same pass; weights cast once per step) or "dynamic" (torchao's float8 in
    torchtitan, tensorwise: an amax reduction reads each tensor before its cast, and every forward,
    recomputation and backward casts the weights again). Transformer Engine's other recipes,
    "current" (per-tensor current scaling: an amax pass before each cast but where the norm found
    it, `norm_fused_cast_saving`, and under sequence parallelism a tp all-reduce of the gathered
    tensors' amaxes, `tp_amax_reductions`), "mxfp8" and "blockwise" (block scales, `BLOCK_SCALED`:
    the bytes of "delayed" with both directions written everywhere), cast the weights once per
    step and launch their own quantize kernels (`kernels.QUANTIZE_KERNELS`)."""
    context_parallel: str = "parc"
    """Whose attention exchange runs context parallelism (`ring_bytes`, `piece_collectives`):
    "parc" (the generated job's own ring, all-gather and all-to-all: K/V at the kv heads' width,
    dK/dV carried in bf16), "torch" (torch's `context_parallel` under torchtitan:
    `_templated_ring_attention` runs one SDPA kernel per cp step whatever the rotate method, merges
    each step's output into an fp32 accumulator, carries dK/dV in fp32, and torchtitan's attention
    repeats K/V to every query head before SDPA, so the repeated K/V travel) or "te" (Transformer
    Engine's ring attention in Megatron-LM: fused merge kernels)."""
    dp_runtime: str = "torch"
    """Who moves the data-parallel bytes, and so which traffic the ledger charges (`dp_ledger`):
    "torch" (parc's job and torchtitan: FSDP2 for every sharding, torch.distributed.pipelining,
    docs/runtime.md's traffic table) or "megatron" (Megatron-LM's DDP and distributed
    optimizer: the traffic contract of docs/time-model.md)."""
    dp_overlap: bool = True
    """The once-per-step data-parallel calls may run under the computation: the gradients'
    reduction under the last micro-batch's backward, the updated parameters' gather under the
    next step's first forward (parc's runtime, FSDP2 and its zero1 buckets; Megatron-LM since
    `--overlap-grad-reduce`, 2023-08-16, NVIDIA/Megatron-LM 2d5220a424). False: the runtime
    reduces the gradients only after its whole forward-backward returns and gathers the
    parameters before the next one starts, so nothing hides them: Megatron-LM before that
    option (`train_step` calls `optimizer.reduce_model_grads` after `forward_backward_func`, and
    `gather_model_params` after `optimizer.step`; e.g. commit 285068c8 of 2023-01-11, MegaScale's
    baseline) and DeepSpeed's pipeline engine (its `ReduceGrads` instruction follows the last
    micro-batch of `TrainSchedule`). No spec states it (parc's runtime and the targets it
    models overlap); `benchmarks/public_check.py` evaluates the published runs of such runtimes
    (`reduces_after_step`, from the runtime each row states: name, commit, date) with it as a
    reading beside the one the calibration's contract gives them (docs/time-model.md,
    "Throughput against GPU count", says why it is not the reading)."""
    pp_reduce_waits: bool = True
    """Under pp the gradients' reduction waits for each stage's last backward and the compute
    stream waits for it (torch.distributed.pipelining's REDUCE_GRAD, `serial_windows`: parc's job
    and torchtitan). False: a pipeline runtime that reduces under the last micro-batch's backward
    (Megatron-LM's bucket hooks), or one no source describes (Meta's Llama 3 runtime)."""
    dp_copies: str = "fsdp2"
    """How the data-parallel runtime copies parameters and gradients through HBM around its
    collectives (`dp_copy_bytes`, under `dp_runtime` "torch"): "fsdp2" (parc's job and
    torchtitan: FSDP2's copy-in and copy-out of each all-gather, its `chunk_cat` before each
    reduce-scatter, its fp32 gradient accumulation; parc's zero1 buckets' main-gradient
    accumulation), "fsdp1" (torch's FullyShardedDataParallel with flat parameters, as Composer
    runs it: the gather lands in place, the flat gradient is concatenated, cast, divided) or
    "none" (not charged: a torch FSDP whose version no source states; Megatron-LM accumulates
    into its fp32 main-gradient buffer inside the weight-gradient GEMM and holds its parameters as
    views of the gathered buffer, so it has none)."""
    grad_bytes: int = 4
    """Bytes of a gradient element as data-parallel ranks reduce it: 4 in parc's runtime (FSDP2's
    reduce dtype is fp32) and in Megatron-LM under bf16 (it forces fp32 accumulation and
    reduction); 2 in Megatron-LM under fp16, which reduces in the parameters' dtype unless told
    `--accumulate-allreduce-grads-in-fp32`."""
    gather_bytes: float = PARAM
    """Bytes per element of an fp8 linear's weight as the data-parallel all-gather moves it
    (`targets.gather_bytes`): 1 where Megatron-LM's distributed optimizer holds fp8 parameters of
    delayed or per-tensor scaling (`--fp8-param-gather`, a uint8 parameter buffer; its experts
    too) and where torchtitan's FSDP2 gathers float8 (`float8-all-gather on`; not its routed
    experts), else the compute dtype's 2 (MXFP8 gathers bf16 values into the gradient buffer and
    quantizes them after). Norms, the router, the embedding and the output layer are gathered in
    bf16."""
    balanced_routing: bool = False
    """The router's load is exactly even over the expert ranks: what the mean over a job's
    recorded ranks measures (tests/e2e/test_collectives.py). Otherwise the busiest expert rank
    carries the random router's expected excess (`kernels.routing_imbalance`), which sets the
    pace. Megatron-Core's benchmark mode `--moe-router-force-load-balancing` is not this: it
    replaces the router's logits with fresh normal noise per token (`moe_utils.RandomSTE`), a
    random router, which the floor describes."""
    routing_load: float = 0.0
    """The busiest expert rank's routed copies over the mean, per micro-batch, where a source
    measured it for the router that ran (a trained router's own imbalance); charged in place of
    the random router's floor (`kernels.routing_imbalance`), and capped by a capacity factor.
    0: not measured, the floor. No published row states it; `benchmarks/fidelity.py` uses it for
    the load each row implies (docs/time-model.md, "A trained router's imbalance")."""
    moe_host_sync: bool = True
    """Each MoE layer's forward reads its token counts on the host (`kernels.host_stall_seconds`):
    Megatron-Core's dropless dispatcher and parc's runtime. False where the runtime keeps them on
    the GPU: capacity padding (`--moe-pad-expert-input-to-capacity`) or CUDA graphs over the layer."""
    weight_pass_recomputes: bool = True
    """Under a zero-bubble schedule each weight pass (torch's `stage_backward_weight`, its own
    autograd call) recomputes the chunk's checkpointed blocks again: the non-reentrant
    checkpoint recomputes once per graph task (pytorch/pytorch#136766), so a micro-batch whose
    backward is split into input and weight passes is recomputed twice
    (`weight_pass_recomputes`): parc's job and torchtitan (torch.distributed.pipelining)."""
    moe_counts_kept: bool = True
    """A recomputed MoE layer reuses its forward's expert-count exchange and host read instead of
    issuing them again: parc's job (`TokenDispatcher` keeps the count tables under the block's
    input). False: torchtitan and Megatron-Core, whose recomputation runs the dispatcher again."""
    ep_dispatcher: str = "all-to-all"
    """How routed tokens travel between expert ranks: "all-to-all" (NCCL's all-to-all of one copy
    per (token, expert) pair: parc's runtime, Megatron-Core's alltoall dispatcher, torchtitan),
    "deepep" (DeepEP's kernels under Megatron-Core's flex dispatcher: one copy per destination
    node over RDMA, forwarded over NVLink once per destination GPU; `kernels.deepep_fractions`),
    or "hybridep" (DeepEP's Hybrid-EP kernels under the same dispatcher: the same fan-out, one
    copy per destination NVLink domain over RDMA, its buffers' `rdma_to_attn_map`). Under either
    the received tokens need no re-sort by local expert (`PERMUTE_PASSES`). DeepEP's kernels
    run on `kernels.DEEPEP_SMS` of the GPU's SMs, Hybrid-EP's on `kernels.HYBRIDEP_SMS`:
    computation that overlaps them (`ep_overlap`, DualPipe) runs on the rest while they transfer."""
    ep_node_limit: int = 0
    """Each token's experts lie within this many nodes (DeepSeek-V3's node-limited routing,
    `n_group` / `topk_group`): DeepEP then sends it to fewer nodes (`kernels.deepep_fractions`).
    0: no limit."""
    pp_overlap: str = "none"
    """Which chunk-boundary sends of an interleaved schedule run beside the next chunk's
    computation (`pp_sends_exposed`): "none" (each send delays its rank by its transfer: blocking
    batched p2p, Megatron-LM before 4eeff55d1f, NeMo 1, DeepSpeed's and other runtimes as
    charged), "all" (Megatron-Core's interleaved schedule with `overlap_p2p_comm`, Megatron-LM's
    default from 4eeff55d1f, 2023-10-12: sends and receives posted asynchronously, each send
    waited on only before the next one is posted, a chunk later, core_v0.16.0 and core_v0.17.0
    alike; torch.distributed.pipelining's multi-stage schedules, parc's job and torchtitan, whose
    `_PipelineScheduleRuntime` waits on its sends at the end of the step) or "backward" (from
    Megatron-LM 260cba7133, 2026-04-16: the forward send is waited on before its output is
    freed, the backward's still run beside the next chunk). A single-chunk rank sends on the
    critical path whatever this says (Megatron-Core turns `overlap_p2p_comm` off without
    interleaving; torch's `Schedule1F1B` waits on each send with its batched receive; torch's
    `ScheduleGPipe` defers its send waits but posts each receive just before the chunk that needs
    it, so every transfer still runs between the receiving rank's chunks)."""
    ep_overlap: bool = False
    """The dispatch and combine of one micro-batch run under another micro-batch's computation:
    Megatron-Core's 1F1B all-to-all overlap (`--overlap-moe-expert-parallel-comm`, Megatron-Bridge's
    `moe_a2a_overlap`); DualPipe-V does the same by its schedule (`dualpipe-v`)."""
    ep_dispatch_fp8: bool = False
    """The two all-to-alls into the experts carry FP8, e4m3 with a scale per 128 channels
    (`FP8_DISPATCH_BYTES`), where the layer's GEMMs run in fp8: DeepSeek-V3 quantizes the
    activation before the experts' up projection and then dispatches it, and does the same with
    the activation gradient before the down projection; both combines (the forward's and the
    backward's way out of the experts) stay BF16 (DeepSeek-V3 Technical Report, Section 3.3.3,
    "Low-Precision Communication"; `Work.ep_dispatch_bytes`). No target parc generates does it;
    the reader sets it from a row that states it."""
    save_original_input: bool = True
    """Megatron-Core has the attention's output projection and the shared experts' fc1 keep their
    bf16 input for the weight gradient, quantizing it again in the backward, under every fp8 recipe
    but delayed scaling and under NVFP4 (`set_save_original_input`, `memory.inputs.keeps_original_input`,
    `original_input_casts`): Megatron-LM 781e765818 (2025-08-19), in the NeMo and Megatron-Bridge
    containers from 25.09 (Megatron-LM's tag 25.09-alpha.rc1) and core_v0.15.0. False: an earlier
    Megatron-Core (the reader sets it for NeMo containers before 25.09), whose linears keep the
    quantized copy they cast in the forward. parc's Megatron launcher targets the current one."""
    shared_expert_overlap: bool = False
    """The MoE layers' shared experts run on their own CUDA stream beside the token dispatcher
    (Megatron-Core's `--moe-shared-expert-overlap`, `SharedExpertMLP.stream`: the alltoall
    dispatcher launches fc1 and its activation after the dispatch all-to-all is posted and fc2
    after the combine's, on that stream, so each all-to-all transfers while they compute; autograd
    runs their backward on the same stream, beside the backward's two all-to-alls). Charged
    where the layer has shared experts and no tensor parallelism (`targets.shared_overlap_applies`)
    and the 1F1B all-to-all overlap (`ep_overlap`, which Megatron-Bridge runs with it off) is not
    on: `exposed`. The Megatron target sets it as its launcher passes the flag
    (`targets.shared_expert_overlap`); the reader of published runs from a recipe that states it."""
    tp_regather: bool = False
    """Whether the runtime saves a column-parallel linear's input sharded under sequence
    parallelism and all-gathers it again in the backward for the weight-gradient GEMM
    (`regathered`): Megatron-LM / Megatron-Core (`LinearWithGradAccumulationAndAsyncCommunication`
    in megatron/core/tensor_parallel/layers.py) and Transformer Engine's `Linear` /
    `LayerNormLinear` (`ln_out_needs_gather`, `gather_along_first_dim(..., async_op=True)` in
    transformer_engine/pytorch/module/layernorm_linear.py, linear.py), so every NeMo and
    Megatron-Bridge run. False for parc's job and torchtitan: DTensor's all-gather output is
    the tensor autograd saves for the matmul's backward, so nothing is gathered again."""
    rope_unfused: bool = False
    """The rotary embedding runs unfused in a fused runtime (`UNFUSED_ROPE_BYTES`): Megatron-Core
    under a YaRN concentration factor other than 1. A spec states no YaRN: the reader of published
    runs sets it from a model's stated fact (gpt-oss, YaRN factor 32)."""
    expert_clamp: bool = False
    """The routed experts' GLU input is clamped in eager PyTorch before the fused activation
    (Megatron-Core's `weighted_bias_quick_geglu_impl` with `activation_func_clamp_value`:
    `EXPERT_CLAMP_PASSES`, `EXPERT_CLAMP_KERNELS`). A spec states no clamp: the reader of published
    runs sets it from a model's stated fact (gpt-oss, clamp 7.0)."""
    expert_bias: bool = False
    """The routed experts' down projection has a bias that the runtime adds in eager PyTorch,
    expert by expert (Megatron-Core's `TEGroupedMLP._apply_bias` under `add_bias_linear`:
    `EXPERT_BIAS_PASSES`, `EXPERT_BIAS_KERNELS`). A spec states no biases: the reader of
    published runs sets it from a model's stated fact (gpt-oss, `add_bias_linear = True`)."""
    fused_grouped_mlp: bool = False
    """The routed experts run Transformer Engine's fused grouped MLP (Megatron-Core's
    `use_transformer_engine_op_fuser`, which Megatron-Bridge's `cutedsl_fused_grouped_mlp` sets;
    `TEGroupedMLP._fused_forward` -> `transformer_engine/pytorch/ops/fused/grouped_mlp.py`, cuDNN's
    CuTe DSL grouped GEMMs): fc1's grouped GEMM applies the GLU, the router's probabilities and
    fc2's input quantization in its epilogue, and fc2's dgrad the GLU's backward and the
    quantization of fc1's output gradient in its own, each grouped GEMM one kernel over all local
    experts. Transformer Engine fuses only on Blackwell (compute capability 10) under MXFP8 (or
    NVFP4) with a GLU and widths divisible by 64 (`fuse_grouped_mlp_ops`,
    `validate_grouped_mlp_dims`); elsewhere the flag changes nothing (`fuses_grouped_mlp`). A spec
    cannot state it: the reader of published runs sets it from a recipe that does."""
    host_op_seconds: float = kernel_model.HOST_OP_SECONDS
    """The host's time to issue one eager op where a MoE layer's host sync or pacing is charged
    (`kernels.host_stall_seconds`, `host_paced_seconds`): the stored `kernels.HOST_OP_SECONDS`
    everywhere parc predicts; a parameter so that a what-if (benchmarks/release_check.py's host
    check) can evaluate a row at another value without changing the module's constant."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash

    @property
    def loss_kernels(self) -> str:
        """The kernels the cross-entropy runs (`cross_entropy_bytes`' key): `loss_kernel`, else the
        runtime's `kernels`."""
        return self.loss_kernel or self.kernels


PARC = Software(pp_overlap="all")
"""The program parc generates (`targets.RUNTIMES["torch"]`'s facts: torch.distributed.pipelining
runs a multi-stage rank's sends beside its next chunk)."""


@dataclass(frozen=True, slots=True)
class Group:
    """A communication group: its size and how many of its ranks share one fast level."""

    size: int = 1
    local: int = 1

    @property
    def inside(self) -> bool:
        return self.local >= self.size


@dataclass(frozen=True, slots=True)
class Geometry:
    """Where each communication group's ranks sit (from the rank order)."""

    tp: Group = Group()
    cp: Group = Group()
    ep: Group = Group()
    pp: Group = Group()
    dense: Group = Group()
    """Ranks that hold the same dense parameters: dp x cp (x ep when ep is a layout axis)."""
    expert: Group = Group()
    """Ranks that hold the same experts (Megatron-LM: tp splits the experts too)."""
    expert_tp: Group = Group()
    """The same with tp folded in: parc's runtime keeps routed experts whole on every tp rank,
    which are then data ranks to them (checked against the running job's reductions)."""
    shard: Group = Group()
    """hsdp: the ranks a replica is sharded over."""
    replicate: Group = Group()
    """hsdp: the replicas."""
    stage: Group = Group()
    """Every rank of one pipeline stage, tp x cp x dp (x ep when ep is a layout axis): Megatron-Core's
    amax reduction group (`amax_reductions`)."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash


Part = tuple[int, int]
"""(degree, stride) of one axis, or of one factor of an axis."""


def _local(parts: list[Part], level: int) -> int:
    """Members of a group (the product of `parts`) inside one block of `level` consecutive ranks.
    Exact when the strides are products of the earlier degrees (parc's rank order)."""
    k = 1
    for degree, stride in parts:
        if stride < level:
            k *= min(degree, max(1, level // stride))
    return k


def _group(parts: list[Part], level: int) -> Group:
    size = math.prod(d for d, _ in parts) if parts else 1
    return Group(size=size, local=min(size, _local(parts, level)))


def _take(parts: list[Part], count: int) -> tuple[list[Part], list[Part]]:
    """Split the fastest `count` ranks off a list of parts (fastest first): (taken, rest)."""
    taken, rest = [], []
    for degree, stride in sorted(parts, key=lambda p: p[1]):
        if count <= 1:
            rest.append((degree, stride))
        elif degree <= count:
            taken.append((degree, stride))
            count //= degree
        else:
            taken.append((count, stride))
            rest.append((degree // count, stride * count))
            count = 1
    return taken, rest


@lru_cache(maxsize=4096)
def geometry(axes: tuple[tuple[str, int], ...], ep_fold: tuple[str, ...], ep: int, hsdp_shard: int,
             level: int) -> Geometry:
    """Groups of a layout written as (axis, degree) in rank order; `ep_fold` names the axes ep is
    carved from (empty when ep is a layout axis)."""
    parts: dict[str, Part] = {}
    stride = 1
    for name, degree in axes:
        parts[name] = (degree, stride)
        stride *= degree

    def of(*names: str) -> list[Part]:
        return [parts[n] for n in names if n in parts]

    dense = of("dp", "cp") + ([] if ep_fold else of("ep"))
    if ep_fold:
        ep_parts, rest = _take(of(*ep_fold), ep)
        spread = [p for n, p in parts.items() if n in ("dp", "cp") and n not in ep_fold]
        expert = rest + spread
    else:
        ep_parts, expert = of("ep"), of("dp", "cp")
    shard_parts, replicate_parts = [], []
    if hsdp_shard and "dp" in parts:
        degree, st = parts["dp"]
        shard_parts = [(hsdp_shard, st)] + of("cp") + ([] if ep_fold else of("ep"))
        replicate_parts = [(max(1, degree // hsdp_shard), st * hsdp_shard)]
    return Geometry(
        tp=_group(of("tp"), level), cp=_group(of("cp"), level), ep=_group(ep_parts, level),
        pp=_group(of("pp"), level), dense=_group(dense, level), expert=_group(expert, level),
        expert_tp=_group(expert + ([] if "tp" in ep_fold else of("tp")), level),
        shard=_group(shard_parts, level), replicate=_group(replicate_parts, level),
        stage=_group(of("tp") + dense, level))


def geometry_of(plan: Plan, hw: Hardware) -> Geometry:
    lay = plan.layout
    axes = tuple((a.name, a.degree or 1) for a in lay.axes)
    shard = lay.dp.shard or 0 if lay.dp.sharding == "hsdp" else 0
    return geometry(axes, tuple(lay.ep.folded_over), lay.ep.degree or 1, shard, hw.level)


# ---------------------------------------------------------------------------------------------
# Collectives


@dataclass(frozen=True, slots=True)
class Link:
    """How fast one group communicates: ring bandwidth, the two all-to-all paths, step latency."""

    size: int
    ring: float
    """Bus bandwidth of a ring collective: NVLink inside the level; across levels the ring's
    crossing hops share the NICs of the group's GPUs in one level (local x per-GPU NIC share)."""
    near: float
    """All-to-all traffic to ranks in the same level."""
    far: float
    """All-to-all and point-to-point traffic to other levels: this GPU's NIC share."""
    local: int
    latency: float
    """Seconds per algorithm step: across levels when the group spans several, else inside one."""
    step_near: float = 0.0
    """Seconds per algorithm step between ranks of one level (a spanning group's inner hops)."""
    sms: int = 0
    """SMs of the GPUs at its ends: what a transfer's kernels hold a share of while they run
    (`sm_share`). 0: free overlap (a link built by hand)."""
    nvls: float = 0.0
    """NVLink SHARP's efficiency on this part (`NVLS_EFFICIENCY`) where the spec says `nvls on`:
    an all-reduce may reduce in the NVSwitches. 0: rings and trees only."""
    sharp: float = 0.0
    """InfiniBand SHARP's efficiency (`SHARP_EFFICIENCY`) where the spec says `sharp on`: an
    all-reduce across levels may reduce in the fabric's switches. 0: rings and trees only."""

    @property
    def sm_share(self) -> float:
        """Share of the GPU's SMs an NCCL call on this link holds while it runs
        (`kernels.NCCL_SMS`): computation it overlaps runs on the rest (`kernels.overlap_exposed`)."""
        return kernel_model.sm_share(kernel_model.NCCL_SMS, self.sms)

    @property
    def levels(self) -> int:
        """Fast levels (nodes, NVLink domains) the group spans."""
        return max(1, math.ceil(self.size / max(1, min(self.local, self.size))))

    def all_reduce(self, nbytes: float) -> float:
        """NCCL's choice: the fastest of its ring, its tree and, where the hardware states
        in-network reduction, NVLS inside one level or SHARP across levels, by their own cost
        models (what its tuner does for every call, `src/graph/tuning.cc`)."""
        return self.all_reduce_choice(nbytes)[0]

    def all_reduce_choice(self, nbytes: float) -> tuple[float, str]:
        """(seconds, algorithm) of `all_reduce`: "ring", "tree", "nvls" or "sharp" (what the
        bytes on each link follow, `Collective.link_bytes`)."""
        n = self.size
        if n <= 1 or nbytes <= 0:
            return 0.0, "ring"
        options = [(self.ring_all_reduce(nbytes), "ring"), (self.tree_all_reduce(nbytes), "tree")]
        if self.nvls and self.levels == 1:
            options.append((self.nvls_all_reduce(nbytes), "nvls"))
        if self.sharp and self.levels > 1:
            sharp = self.sharp_all_reduce(nbytes)
            if sharp is not None:
                options.append((sharp, "sharp"))
        return min(options)

    def nvls_all_reduce(self, nbytes: float) -> float:
        """NVLink SHARP inside one level: each GPU reduces its 1/n of the buffer by reading every
        GPU's copy of it through the NVSwitch (multimem load-reduce), then writes the sum once
        for the switch to multicast to all; each GPU's link carries (n + 1)/n of the buffer each
        way (its shard to every reader, its own included, and every sum back), where a ring
        carries 2 (n - 1)/n. At `nvls` of the ring's bus bandwidth (NCCL's `nvlsEfficiency`) and
        one `NVLS_LATENCY` however many GPUs take part. NCCL's own tuner charges (n - 1)/n rather
        than (n + 1)/n of the buffer, which at 2 GPUs would beat the link; parc keeps the bytes
        the switch moves: 1.3x a ring's speed on 8 Hopper GPUs, about what nccl-tests report."""
        n = self.size
        return (n + 1) / n * nbytes / (self.nvls * self.ring) + NVLS_LATENCY

    def sharp_all_reduce(self, nbytes: float) -> float | None:
        """InfiniBand SHARP across levels: the k GPUs of a level reduce-scatter the buffer among
        themselves, each sends its 1/k share to the fabric's aggregation tree once and reads the
        sum back, then they all-gather it. The NIC carries nbytes / k each way whatever the number
        of levels (a ring's 2 (N - 1)/N of it), at `sharp` of its bus bandwidth; the level's
        exchange runs beside it, pipelined, and the slower of the two sets the time. The level's
        exchange is NCCL's CollNet Direct (or Chain) over NVLink, only for up to 8 GPUs a level
        (`NCCL_MAX_DIRECT_ARITY` + 1, `src/enqueue.cc`), with CollNet's latencies (`SHARP_LATENCY`
        across, one NVLink hop `SHARP_HOP_LATENCY` and `SHARP_ARITY_LATENCY` per rank inside); or,
        with NVLS, NCCL's NVLS algorithm across nodes, through the NVSwitch at any k
        (`NVLS_LATENCY` + `NVLS_NET_LATENCY`): the faster of the two. None where neither runs."""
        k = max(1, min(self.local, self.size))
        outer = nbytes / k / (self.sharp * self.far)
        options = []
        if k <= COLLNET_MAX_LOCAL:
            inner = 2 * (k - 1) / k * nbytes / self.near if k > 1 else 0.0
            hop = 2 * (min(1, k - 1) * SHARP_HOP_LATENCY + (k - 1) * SHARP_ARITY_LATENCY)
            options.append(max(inner, outer) + (SHARP_LATENCY if k > 1 else SHARP_ONE_LATENCY) + hop)
        if self.nvls and k > 1:
            inner = (k + 1) / k * nbytes / (self.nvls * self.near)
            options.append(max(inner, outer) + NVLS_LATENCY + NVLS_NET_LATENCY)
        return min(options) if options else None

    def ring_latency(self, passes: int) -> float:
        """Latency of `passes` trips round a ring of n ranks over N levels, n - 1 steps each: the
        ring enters and leaves each level once, so N - 1 of a trip's steps cross levels (at
        `latency`) and the rest stay inside one (at `step_near`), as NCCL's tuner counts them
        (`src/graph/tuning.cc`: nNodes - 1 network steps, the others at NVLink's latency); a
        ring inside one level steps at `latency`, its own level's."""
        n, crossing = self.size, self.levels - 1
        inner = self.step_near if crossing else self.latency
        return passes * ((n - 1 - crossing) * inner + crossing * self.latency)

    def ring_all_reduce(self, nbytes: float) -> float:
        """2 (n - 1) steps, each moving 1/n of the buffer: bandwidth-optimal, latency linear in n
        (two trips round the ring: a reduce-scatter and an all-gather, `ring_latency`)."""
        n = self.size
        return 2 * (n - 1) / n * nbytes / self.ring + self.ring_latency(2)

    def tree_all_reduce(self, nbytes: float) -> float:
        """NCCL's double binary tree across levels, a chain inside each: a reduce up and a
        broadcast down, 2 ((k - 1) inner steps + ceil(log2 N) crossing steps), latency
        logarithmic in the levels; the whole buffer goes up and down at `TREE_BUS` of the ring's
        bus bandwidth (NCCL's own model: tree bus bandwidth 0.9x, algorithm bandwidth half)."""
        levels, k = self.levels, max(1, min(self.local, self.size))
        inner = self.step_near if levels > 1 else self.latency
        steps = 2 * ((k - 1) * inner + math.ceil(math.log2(levels)) * self.latency)
        return 2 * nbytes / (TREE_BUS * self.ring) + steps

    def all_gather(self, nbytes: float) -> float:
        """Also reduce-scatter: `nbytes` is the full (gathered) tensor; one trip round the ring
        (`ring_latency`)."""
        n = self.size
        if n <= 1 or nbytes <= 0:
            return 0.0
        return (n - 1) / n * nbytes / self.ring + self.ring_latency(1)

    def all_to_all(self, nbytes: float) -> float:
        """`nbytes` leaves each rank, spread evenly over the group."""
        n = self.size
        if n <= 1 or nbytes <= 0:
            return 0.0
        near = (min(self.local, n) - 1) / n * nbytes / self.near
        far = (n - min(self.local, n)) / n * nbytes / self.far
        return max(near, far) + (n - 1) * self.latency

    def send(self, nbytes: float) -> float:
        """Point-to-point to a neighbour (pipeline): over NVLink only when the whole group is inside."""
        if self.size <= 1 or nbytes <= 0:
            return 0.0
        bandwidth = self.near if self.local >= self.size else self.far
        return nbytes / bandwidth + self.latency


TREE_BUS = 0.9
"""NCCL's tree all-reduce bus bandwidth relative to its ring's (`busBw * .9` in NCCL's
`src/graph/tuning.cc`): each rank sends and receives the whole buffer once up and once down the
tree (algorithm bandwidth half the bus bandwidth), where the ring moves 2 (n - 1)/n of it."""


NVLS_EFFICIENCY = {"hopper": 0.85, "blackwell": 0.74}
"""NVLink SHARP's bandwidth against a ring's on the same NVLinks, by generation: NCCL's
`nvlsEfficiency` (`src/graph/tuning.cc`: Volta and Ampere 0, whose NVSwitches do not reduce;
Hopper 0.85; Blackwell 0.74), the share of the link the multimem reduce-and-multicast sustains."""

NVLS_LATENCY = 25e-6
"""Seconds one NVLS all-reduce costs beyond its bytes: NCCL's NVLS latency inside a node (its
`hwLatencies` NVLINK, NVLS, Simple: 25 us, no base and no per-rank term). Rings win the small
calls, as NCCL's tuner picks them."""

NVLS_NET_LATENCY = 18e-6
"""NCCL's latency for its NVLS algorithm across nodes beyond the NVLS step (`hwLatencies` NET, NVLS,
Simple: 18 us): the CollNet trip of NVLS with SHARP."""

COLLNET_MAX_LOCAL = 8
"""GPUs a level may hold for NCCL's CollNet Direct and Chain (`NCCL_MAX_DIRECT_ARITY` 7, plus one:
`src/enqueue.cc` skips both above it): an NVL72 domain of 72 reduces across domains with SHARP
only through NVLS."""

SHARP_EFFICIENCY = 0.85
"""InfiniBand SHARP's bandwidth against the NIC's bus bandwidth: NCCL scales CollNet Direct's bus
bandwidth by 0.85 on Hopper and later (`if (minCompCap >= 90) busBw *= .85`, `src/graph/tuning.cc`);
parc applies it on every part, the lower figure."""

SHARP_LATENCY = 31e-6
"""Seconds one SHARP all-reduce spends in the network: NCCL's CollNet Direct latency (`hwLatencies`
NET, CollNetDirect, Simple: 31 us): one trip up and down the switches' aggregation tree, not a step
per node."""

SHARP_ONE_LATENCY = 14e-6
"""The same with one GPU a level: NCCL charges the tree's network latency then (`ppn == 1`:
`hwLatencies` NET, Tree, Simple: 14 us)."""

SHARP_HOP_LATENCY = 3.7e-6
"""One NVLink hop of CollNet Direct inside a level (`hwLatencies` NVLINK, CollNetDirect, Simple)."""

SHARP_ARITY_LATENCY = 0.4e-6
"""NCCL's CollNet Direct serialisation per rank of a node ("0.4 us arity serialization latency"),
charged twice (the reduce-scatter into the NIC's share and the all-gather out of it)."""


def sent_all_reduce(n: int, nbytes: float) -> float:
    return 2 * (n - 1) / n * nbytes if n > 1 else 0.0


def sent_all_gather(n: int, nbytes: float) -> float:
    return (n - 1) / n * nbytes if n > 1 else 0.0


@lru_cache(maxsize=16384)
def link(group: Group, hw: Hardware, c: Constants) -> Link:
    intra, far = hw.intra * c.bus_nvlink, hw.nic * c.bus_network
    ring = intra if group.inside else min(intra, group.local * far)
    latency = c.latency_intra if group.inside else c.latency_inter
    return Link(size=group.size, ring=ring, near=intra, far=far, local=group.local, latency=latency,
                step_near=c.latency_intra, sms=hw.sms,
                nvls=NVLS_EFFICIENCY.get(hw.generation, 0.0) if hw.nvls else 0.0,
                sharp=SHARP_EFFICIENCY if hw.sharp else 0.0)


# ---------------------------------------------------------------------------------------------
# One layer, one micro-batch, one GPU


@dataclass(frozen=True, slots=True)
class Work:
    """Seconds of computation and bytes of communication of one piece (a layer, the embedding or
    the output layer) for one micro-batch on one GPU."""

    gemm: float = 0.0
    """Forward GEMMs; the input-gradient and the weight-gradient GEMMs take as long each."""
    attention_f: float = 0.0
    attention_b: float = 0.0
    memory_f: float = 0.0
    """Memory-bound kernels, forward (norms, activation, residuals, RoPE, softmax when unfused)."""
    memory_b: float = 0.0
    selective_core: float = 0.0
    """Selective recomputation as Megatron-LM does it (Korthikanti et al. 2022): the attention
    core's forward again."""
    selective_elementwise: float = 0.0
    """Selective recomputation as parc's runtime does it (`SelectivePolicy` in
    backends/torch/templates/parallel.py.jinja keeps the Q/K/V, attention and FFN up-projection
    outputs): norms, RoPE, activation functions and the attention output projection again."""
    selective_torchtitan: float = 0.0
    """Selective recomputation as torchtitan's per-op policy does it (`TORCHTITAN_OP`): a block's
    every second counted matmul (`activations.torchtitan_op_split`) and every memory-bound kernel
    of its forward again (`torchtitan_kernels_again`); an MoE layer also its router gate (forced
    to recompute) and its routed experts' grouped GEMMs (`torch._grouped_mm`, not on the save
    list), never its all-to-alls (saved)."""
    norms_again: float = 0.0
    """Megatron-Core's `--recompute-modules layernorm`: the layer's two norms again."""
    moe_act_again: float = 0.0
    """`--recompute-modules moe_act`: the routed (and shared) experts' activation again."""
    mla_up_again: float = 0.0
    """`--recompute-modules mla_up_proj`: multi-head latent attention's up projections and its key
    and value assembly again (Megatron-Core's `qkv_up_checkpoint`)."""
    moe_again: float = 0.0
    """`--recompute-modules moe`: the MoE layer's forward again but for its all-to-alls (the
    router GEMM and kernels, the permutations, the expert GEMMs and their activation); the
    all-to-alls' time and bytes are added from the layer's exposure (`_piece`)."""
    ffn_again: float = 0.0
    """`--recompute-modules mlp` in a dense layer, `shared_experts` in a MoE layer: that FFN's
    forward again, its two products and its activation (Megatron-Core checkpoints the whole MLP
    module, `recompute_mlp`, or the shared experts' `SharedExpertMLP`)."""
    tp_bytes: float = 0.0
    """Tensor the tp collectives carry (micro-batch activations, b x s/cp x h, 16-bit)."""
    tp_gather_bytes: float = 0.0
    """What sequence parallelism's all-gathers of a GEMM input carry where it is quantized
    (`OPERAND_BYTES` an element: fp8 or NVFP4 products); 0: `tp_bytes`. Transformer Engine
    quantizes a column-parallel linear's input before gathering it (`gather_along_first_dim` with
    the input quantizer: the rowwise copy forward; in the backward's re-gather the saved shard's
    columnwise copy under the block-scaled recipes, its rowwise copy under a per-tensor one on a part
    whose fp8 GEMMs take one layout, transposed after the gather: `gathered_cast_saving`); the
    reduce-scatters carry the GEMMs' bf16 outputs. Not under
    torchao's dynamic scaling (torchtitan: charged in bf16, `layer_work` says why)."""
    tp_grad_gather_bytes: float = 0.0
    """The backward's all-gathers of a row-parallel linear's output gradient where it is quantized:
    both copies under MXFP8 and NVFP4 (the gradient quantizer's rowwise copy for the data-gradient
    GEMM and columnwise for the weight-gradient one, each gathered: TE 2.20 `distributed.py`), one
    under per-tensor fp8 and torchao's float8; 0: `tp_gather_bytes`."""
    tp_latent: float = 0.0
    """Where the attention's input-side tp collective carries something else than `tp_bytes`:
    multi-head latent attention's latents (`mla_tp_width`), one call each way in place of one of
    `tp_bytes` (`piece_collectives`); 0 otherwise."""
    tp_latent_gather: float = 0.0
    """The forward all-gather of those latents where it carries quantized tensors
    (`gathers_quantized`: Transformer Engine's column-parallel up projections quantize the latents
    before gathering them; the RoPE key, which Megatron-Core gathers itself, stays bf16); 0:
    `tp_latent`."""
    tp_latent_regather: float = 0.0
    """Multi-head latent attention's backward re-gather (`regathered`) of its up projections' saved
    sequence-parallel inputs, the query latent (or the hidden state) and the key-value latent
    (`mla_tp_width` without the RoPE key, which is no projection's input), quantized where the
    gathers are (`gathers_quantized`), in place of one re-gather of `tp_bytes`; 0 otherwise."""
    tp_all_reduce: tuple[int, int] = (0, 0)
    """All-reduces of `tp_bytes` (forward, backward): without sequence parallelism."""
    tp_gather: tuple[int, int] = (0, 0)
    """All-gathers plus reduce-scatters of `tp_bytes` (forward, backward): with it."""
    tp_regather: int = 0
    """Backward all-gathers of `tp_bytes` that re-gather a column-parallel layer's saved sharded
    input for its weight-gradient GEMM (`regathered`; 0 where the runtime saves the gathered
    input, `Software.tp_regather`)."""
    tp_gemms: tuple[tuple[str, str, float], ...] = ()
    """(phase, kind, seconds): each tp collective of `tp_bytes` a runtime can run beside its own
    GEMM, with that GEMM's seconds (`tp_partners`): which of them a runtime pairs is
    `kernels.tp_overlap_pairs`; a call without one here is never overlapped."""
    tp_userbuffers: bool = True
    """Whether Megatron-Core builds the piece's tp linears from Transformer Engine's modules, the
    ones `--tp-comm-overlap` ("all") runs on userbuffers. Its output layer is
    `tensor_parallel.ColumnParallelLinear` instead: under "all" its forward all-gather is a
    synchronous NCCL call and its backward reduction Megatron-LM's asynchronous one, beside the
    weight-gradient GEMM at NCCL's share ("backward", `paired_tp_exposed`)."""
    cp_flavour: str = "ring"
    cp_bytes: tuple[float, float] = (0.0, 0.0)
    """ring: K and V of one block per ring step (forward; backward adds dK, dV, which take one
    more step home); all-gather: the gathered K and V; all-to-all: what each rank sends (Q, K, V
    in, output back)."""
    cp_runtime: str = "parc"
    """`Software.context_parallel`: under "torch" `cp_bytes` is one (repeated) K/V block each way
    and the calls are torch's (`torch_cp_collectives`)."""
    ep_bytes: float = 0.0
    """Bytes one all-to-all sends from this GPU (routed tokens x top-k x h); 2 forward, 2 backward."""
    ep_dispatch_bytes: float = 0.0
    """Bytes each all-to-all into the experts sends (the forward's dispatch, the backward's
    gradients before the down projection) where it carries them quantized
    (`Software.ep_dispatch_fp8`: `FP8_DISPATCH_BYTES` an element); 0: `ep_bytes`. The two out of
    the experts (the combine and its gradient's way back) send `ep_bytes`."""
    ep_fanout: tuple[int, int, int] = (0, 0, 0)
    """(experts, top-k, node limit) when DeepEP carries the dispatch and combine
    (`Software.ep_dispatcher`, `Software.ep_node_limit`): their link bytes then follow
    `kernels.deepep_fractions` on the ep group; (0, 0, 0): all-to-all."""
    ep_sm_share: float = 0.0
    """Fraction of the SMs the ep transfers occupy while they run (DeepEP's `DEEPEP_SMS` of the
    GPU's): overlapped computation loses that share for as long as they transfer."""
    moe: bool = False
    shared_blocks: tuple[float, float] = (0.0, 0.0)
    """A MoE layer's shared experts' forward seconds: fc1 with its activation, and fc2 (the blocks
    `Software.shared_expert_overlap` runs beside the dispatch and the combine all-to-all)."""
    launches_f: float = 0
    """Kernels the forward launches (GEMMs, their fp8 casts, memory-bound kernels, attention):
    what the host must issue after a MoE layer's sync (`kernels.host_stall_seconds`)."""
    launches_b: float = 0
    """Kernels the backward launches (`layer_launches`): what the host must issue in a backward
    with no sync (`kernels.host_paced_seconds`)."""
    replay_host: float = 0.0
    """Seconds of the forward's host round trip (`kernels.HOST_SYNC_SECONDS`, part of
    `memory_f`) a full recomputation does not repeat: the runtime keeps the forward's token
    counts for it (`Software.moe_counts_kept`, set by `dispatched`)."""

    @property
    def forward(self) -> float:
        return self.gemm + self.attention_f + self.memory_f

    @property
    def backward_input(self) -> float:
        return self.gemm + self.attention_b + self.memory_b

    @property
    def backward_weight(self) -> float:
        return self.gemm

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        value = self._hash  # most `Work`s never key a cache: hashed when one first does
        return value if value else lazy_hash(self)


def fp8_recipe(precision: str, fp8_scaling: str, hw: Hardware) -> str:
    """The quantizer recipe whose kernels a layer's quantized GEMMs launch (`kernels.QUANTIZE_KERNELS`):
    "bf16" without quantized GEMMs; "nvfp4" for NVFP4's; torchao's dynamic scaling (torchtitan)
    quantizes a grouped GEMM's operand as one tensor for all experts, counted as Transformer
    Engine's fused delayed-scaling kernel (one launch for all of them)."""
    if precision == "nvfp4" and hw.fp4:
        return "nvfp4"
    if precision != "fp8" or not hw.fp8:
        return "bf16"
    return "delayed" if fp8_scaling == "dynamic" else fp8_scaling


def layer_launches(gemms: list[tuple], routed: tuple[int, ...], experts: kernel_model.Launches, recipe: str,
                   extra: int, attention: float) -> tuple[float, float]:
    """Kernels one layer launches per micro-batch, forward and backward: what the host must issue
    (`kernels.host_stall_seconds`, `kernels.host_paced_seconds`). `gemms` are `layer_work`'s
    forward GEMM tuples (kernels first); `routed`: the positions in `gemms` of the routed experts'
    two, which run Transformer Engine's grouped GEMM, `experts` their kernels (counted by
    `kernels.grouped_mlp_launches`, one cuBLAS call per expert whatever streams they run on, or
    `kernels.fused_grouped_mlp_launches`); `recipe` the fp8 recipe (`fp8_recipe`); every other GEMM launches its kernels
    forward, twice that backward (dgrad, wgrad), each with an fp8 cast of its input forward and of
    its output gradient backward under fp8. `extra`: the layer's other memory-bound kernels
    beyond `MEMORY_KERNELS` (router, expert-loop activations), launched again backward;
    `attention`: the attention core's kernels, forward and again backward (a mean over the layers
    where windowed ring layers skip steps: `flash_attention_launches`)."""
    plain = sum(g[0] for i, g in enumerate(gemms) if i not in routed)
    base = MEMORY_KERNELS + extra + attention
    return (plain * (1 + kernel_model.gemm_cast_launches(recipe, 1)) + experts.forward + base,
            plain * (2 + kernel_model.gemm_cast_launches(recipe, 2)) + experts.backward + base)


QUANTIZED = ("fp8", "nvfp4")
"""The precisions whose linears run quantized GEMMs (Transformer Engine's; torchao's float8)."""


def gemm_precision(precision: str, sw: Software) -> str:
    """The precision the layers' linear GEMMs run in: fp8 only where the runtime has fp8 GEMMs
    (`Software.fp8`), NVFP4 only where it has Transformer Engine's NVFP4 recipe (`Software.fp4`)."""
    if precision == "nvfp4":
        return precision if sw.fp4 else "bf16"
    return precision if precision != "fp8" or sw.fp8 == "linear" else "bf16"


OUTPUT_BYTES = 2
"""Bytes per element a GEMM writes: bf16, also for fp8 inputs (Transformer Engine's and torchao's
fp8 GEMMs return bf16; the output is not quantized)."""


OPERAND_BYTES = ELEMENT_BYTES
"""Bytes per element a quantized GEMM reads of each operand (`memory.inputs.ELEMENT_BYTES`: fp8's
byte, NVFP4's 0.5625); bf16 and fp16 read 2."""


def matmul_peak(hw: Hardware, precision: str) -> float:
    """The dense peak a GEMM at `precision` runs at: the FP8 or FP4 tensor cores' where the part has
    them, else BF16's."""
    key = PRECISION_PEAK.get(precision)
    return (getattr(hw, key) if key else None) or hw.bf16


def operand_bytes(hw: Hardware, precision: str) -> float:
    """Bytes per operand element of a GEMM at `precision` as the part runs it (`matmul_peak`)."""
    peak = matmul_peak(hw, precision)
    return OPERAND_BYTES[precision] if peak != hw.bf16 else 2.0


def gemm_efficiency(m: float, k: float, n: float, element: float, peak: float, hw: Hardware,
                    c: Constants, groups: float = 1.0) -> float:
    """Achievable fraction of peak for an (m x k) @ (k x n) product: the generation's ceiling
    times intensity / (intensity + half), intensity = FLOPs / bytes of the three matrices and
    half = `intensity_half` x the ridge point (peak / HBM bandwidth), times the fraction of the
    SMs its tiles keep busy (`kernels.gemm_wave_efficiency`: wave quantisation, split-K when the
    output has fewer tiles than SMs), times the part's measured ceiling relative to the fitted
    generation's (`Hardware.ceiling`). `groups` products of this shape launched as one grouped
    kernel share their waves. A product is never charged faster than the part's measured maximum
    achievable matmul rate at its precision (`Hardware.achievable`, `achievable_fp8`): the fitted
    ceiling holds what training runs' GEMMs reach at their shapes, and its intensity curve would pass
    it on large BF16 products and on ordinary FP8 ones, whose measured maxima sit lower. NVFP4's
    products (`element` 0.5625) take FP8's measured fraction of their own peak: no maximum
    achievable FP4 rate is published for any part, and the same tensor cores feed both."""
    intensity = 2 * m * k * n / (element * (m * k + k * n) + OUTPUT_BYTES * m * n)
    half = c.intensity_half * peak / hw.hbm
    waves = kernel_model.gemm_wave_efficiency(m, k, n, hw.sms, groups)
    efficiency = c.gemm_efficiency(hw.generation) * hw.ceiling * intensity / (intensity + half) * waves
    return min(efficiency, hw.achievable if element == 2 else hw.achievable_fp8)


@lru_cache(maxsize=65536, typed=True)
def gemm_seconds(m: float, k: float, n: float, precision: str, hw: Hardware, c: Constants,
                 groups: float = 1.0) -> float:
    """One (m x k) @ (k x n) product (each of `groups` in a grouped kernel). Kept per shape: an
    MoE search times each layer per ep, and all its products but the routed experts' two (the
    attention's, the router's, the shared experts') repeat for every ep. Typed (here and in the
    other caches of pieces of a layer): an int and a float of one value are kept apart, so
    every caller gets the bits it got uncached."""
    if m <= 0 or k <= 0 or n <= 0:
        return 0.0
    peak = matmul_peak(hw, precision)
    element = operand_bytes(hw, precision)
    return 2 * m * k * n / (peak * gemm_efficiency(m, k, n, element, peak, hw, c, groups))


def memory_seconds(nbytes: float, hw: Hardware, c: Constants) -> float:
    return nbytes / (hw.hbm * c.hbm_efficiency)


ATTENTION_KERNELS = {"flash-te": "te", "flash-te-fp8": "te", "flash-te-mxfp8": "te"}
"""`LayerCase.attention` -> the kernel curve it runs (`kernels.attention_curve`); "flash" and
"flash-te-fa2" (both FlashAttention-2): "sdpa"."""

FP8_ATTENTION = {"flash-te": "flash-te-fp8"}
"""A runtime's fused attention (`Software.attention`) -> its FP8 variant, where it has one:
Transformer Engine's FP8 dot-product attention (cuDNN's FP8 fused attention, per-tensor scales).
torch's SDPA has none."""

MXFP8_ATTENTION = {"flash-te": "flash-te-mxfp8"}
"""The same under the MXFP8 recipe: Transformer Engine runs its FP8 attention with MXFP8 block
scales there (TE 2.16, "Add MXFP8 attention", #2719: the qkv quantizer is the recipe's
`MXFP8Quantizer`; Megatron-Bridge pins a TE with it from its 26.06 release, the first whose
recipes set `fp8_dot_product_attention`)."""

QUANTIZED_ATTENTION = dict.fromkeys(FP8_ATTENTION.values(), "fp8") | dict.fromkeys(MXFP8_ATTENTION.values(), "mxfp8")
"""A quantized attention kernel -> the kind of its sweep (`kernels.attention_fp8_speedup`)."""


def attention_kernel(sw: Software, precision: str) -> str:
    """`LayerCase.attention`: the runtime's fused attention (`Software.attention`), or its FP8
    variant (`FP8_ATTENTION`; `MXFP8_ATTENTION` under the MXFP8 recipe) where the runtime runs it
    so (`Software.attention_fp8`) and the layer's linears run in fp8 (`gemm_precision`:
    Transformer Engine's FP8 attention sits inside its fp8 autocast)."""
    if sw.attention_fp8 and precision == "fp8":
        variants = MXFP8_ATTENTION if sw.fp8_scaling == "mxfp8" else FP8_ATTENTION
        return variants.get(sw.attention, sw.attention)
    return sw.attention


def permute_kind(kernels: str, dispatcher: str) -> str:
    """`PERMUTE_PASSES`' key for a runtime's kernels and ep dispatcher: parc's eager expert loop,
    Megatron-Core's fused permutations around NCCL's all-to-all (re-sorted by local expert), or
    around the flex dispatcher's DeepEP and Hybrid-EP exchanges (no re-sort)."""
    if kernels == "eager":
        return "eager"
    return "flex" if dispatcher in kernel_model.DISPATCHER_SMS else "fused"  # the flex dispatcher's backends


def skips_causal(attention: str) -> bool:
    """Whether the runtime's attention kernel skips the masked half of a causal square and
    recomputes the scores in the backward (`FLASH_BACKWARD`): every fused kernel (torch's SDPA,
    Transformer Engine's, in 16 bits or FP8); the unfused path computes the full square."""
    return attention != "unfused"


GATHERED_BLOCKS = "gathered-blocks"
"""`flash_attention_seconds`' flavour for parc's own all-gather context parallelism
(`AllGatherAttention` in the generated parallel.py): one SDPA kernel per block of
`gathered_blocks`, merged by log-sum-exp (`gathered_bytes`)."""


def gathered_blocks(rank: int, cp: int, chunk: float) -> list[tuple[float, bool]]:
    """(keys, causal) of each SDPA kernel parc's all-gather attention runs on cp rank `rank`, as
    the generated parallel.py's `gathered_blocks` builds them: the rank holds query chunks `rank`
    and `2 cp - 1 - rank` of `chunk` tokens (load-balanced), and each chunk attends to every
    earlier chunk in one unmasked kernel (none for chunk 0) and to itself in a causal one. Every
    rank does the same FLOPs (2 cp chunk-squares); the kernels' lengths differ: rank 0 runs one
    long unmasked kernel, the middle ranks two of middling length, and every causal kernel walks
    only `chunk` keys (s / 2 cp), far fewer than the one causal kernel over s keys it replaces."""
    out: list[tuple[float, bool]] = []
    for index in (rank, 2 * cp - 1 - rank):
        if index:
            out.append((index * chunk, False))
        out.append((chunk, True))
    return out


@dataclass(frozen=True)
class BandBlocks:
    """What `window_blocks` (the generated model.py) lays out for a run of query positions: the
    SDPA kernels (`count`), their rows summed (`rows`: each block-row one merge into the
    accumulators), their keys summed (`keys`: each block-key one dK/dV accumulation), and the
    rows of the edge blocks (`edge`: each computed on flipped rows and keys)."""

    count: int
    rows: int
    keys: int
    edge: int

    def __add__(self, other: BandBlocks) -> BandBlocks:
        return BandBlocks(self.count + other.count, self.rows + other.rows, self.keys + other.keys,
                          self.edge + other.edge)

    def times(self, k: int) -> BandBlocks:
        return BandBlocks(self.count * k, self.rows * k, self.keys * k, self.edge * k)


def tile_blocks(a: int, b: int, window: int) -> BandBlocks:
    """The blocks of one tile of query positions [a, b) (b - a <= W, b at most the next multiple of
    W): a causal block on its own keys; an edge block (row a + i sees key a - W + 1 + j iff j >= i)
    when the tile has two rows or more and a - W + 1 >= 0; a whole block on the keys every row
    sees, [max(0, b - W), a), when that is not empty."""
    m = b - a
    out = BandBlocks(1, m, m, 0)
    if a - window + 1 >= 0 and m > 1:
        out += BandBlocks(1, m - 1, m - 1, m - 1)
    low = max(0, b - window)
    if low < a:
        out += BandBlocks(1, m, a - low, 0)
    return out


def band_blocks(first: int, end: int, window: int) -> BandBlocks:
    """`window_blocks` over query positions [first, end) in closed form: the rows cut at multiples
    of W into a first tile [first, min(end, next multiple)), whole tiles of W, and a last tile
    [the last multiple, end); the whole tiles all alike (each a causal block and, for W > 1, an
    edge block; no whole block: b - W = a). The one-process layer is `band_blocks(0, s, W)`;
    parc's all-gather cp runs it on each of a rank's query chunks (`gathered_band`)."""
    if end <= first:
        return BandBlocks(0, 0, 0, 0)
    head_end = min(end, (first // window + 1) * window)
    out = tile_blocks(first, head_end, window)
    if head_end == end:
        return out
    tail = (end - 1) // window * window  # the last tile's first position
    whole = (tail - head_end) // window
    if whole:
        out += tile_blocks(head_end, head_end + window, window).times(whole)
    return out + tile_blocks(tail, end, window)


def window_block_count(seq: int, window: int) -> int:
    """SDPA kernels parc's job runs each way for one windowed layer (`window_blocks` in the
    generated model.py): rows cut into ceil(s / W) tiles at multiples of W; each tile one causal
    block on its own keys, each tile after the first an edge block (tiles of one row have none),
    and a last, shorter tile also one whole block (`band_blocks` over the whole sequence)."""
    return band_blocks(0, seq, window).count


@lru_cache(maxsize=4096)
def gathered_band(cp: int, seq: int, window: int) -> BandBlocks:
    """The blocks parc's all-gather cp runs on its busiest rank for one windowed layer (the
    generated parallel.py's `gathered_blocks(..., window)`): rank r holds query chunks r and
    2 cp - 1 - r of s / 2cp positions and runs each chunk's band (`band_blocks`); the rank with
    the most kernels, then the most block-rows (rank 0's chunk 0 has no edge or whole blocks in
    its first tile, so it launches fewest)."""
    chunk = seq // (2 * cp)

    def rank_band(rank: int) -> BandBlocks:
        return (band_blocks(rank * chunk, (rank + 1) * chunk, window)
                + band_blocks((2 * cp - 1 - rank) * chunk, (2 * cp - rank) * chunk, window))

    return max((rank_band(r) for r in range(cp)), key=lambda b: (b.count, b.rows))


def window_bytes(seq: int, window: int, n: float, q: float, kv: float) -> tuple[float, float]:
    """HBM bytes, forward and backward, of one windowed layer's bookkeeping in parc's job around
    its kernels (`attend_blocks`, `blocks_backward`, `masked_attention` in the generated
    model.py), `n` tokens on the rank, `q` and `kv` its widths; counted op by op as
    `gathered_bytes` ("read a, write b" = a + b, 2 bytes an element in bf16, 4 in fp32). Every
    block's rows: the causal blocks cover each row once, the edge blocks each row but the last of
    its tile in tiles after the first, the whole block the last tile's rows. Forward: the fp32
    accumulators zeroed (4), 26 per output element per block-row (the merge: `mul_`, the scaled
    block, `add_`), the final cast (6); each edge block flips its q rows, K and V (read 2, write 2)
    and flips its output back (4). Backward: dQ zeroed (4), `+=` per block-row (10), cast (6); dK,
    dV likewise over their keys; the edge blocks flip grad, q and the output (4 each per q
    element) and K and V (4 each) in, and dQ, dK, dV (4 each) out."""
    tiles = -(-seq // window)
    edge_rows = seq - window - (tiles - 1) if tiles > 1 else 0  # m - 1 rows of each later tile
    last = seq - (tiles - 1) * window
    whole_rows = last if tiles > 1 and last < window else 0
    per_row = n / seq  # tokens of the micro-batch per sequence position
    covered = (seq + edge_rows + whole_rows) * per_row  # block-rows over the rank's tokens
    edge = edge_rows * per_row
    out, keys = q * covered, kv * covered
    forward = n * q * (4 + 6) + 26 * out + edge * (4 * q + 2 * 4 * kv + 4 * q)
    backward = (n * q * (4 + 6) + 10 * out + 2 * n * kv * (4 + 6) + 2 * 10 * keys
                + edge * (3 * 4 * q + 2 * 4 * kv + 4 * q + 2 * 4 * kv))
    return forward, backward


def gathered_window_bytes(cp: int, seq: int, window: int, n: float, q: float, kv: float) -> tuple[float, float]:
    """`gathered_bytes` for a windowed layer of parc's all-gather cp: the same copies of the
    gathered K/V and the same zeroed accumulators and casts, but the merges and accumulations
    run per block of the busiest rank's bands (`gathered_band`: a block's rows, not a whole
    chunk's, 26 forward and 10 backward per element; 10 per K/V element of its keys), and each
    edge block flips its rows and keys as `window_bytes` counts them (forward q in and out 4 + 4,
    K and V 4 each; backward grad, q, output 4 each and dQ 4, K and V 4 each and dK, dV 4 each)."""
    band = gathered_band(cp, seq, window)
    per_row = n * cp / seq  # the rank's tokens per query position it holds (2 chunks of s / 2cp)
    covered, keys, edge = band.rows * per_row, band.keys * per_row, band.edge * per_row
    gathered = cp * n
    out, local, whole = n * q, 2 * n * kv, 2 * gathered * kv
    forward = local * 4 + whole * 8 + out * 4 + 26 * q * covered + out * 6 + edge * (4 * q + 2 * 4 * kv + 4 * q)
    backward = (out * 4 + 10 * q * covered + out * 6 + whole * (4 + 6) + 10 * 2 * kv * keys + whole * 8
                + local * 4 + edge * (3 * 4 * q + 2 * 4 * kv + 4 * q + 2 * 4 * kv))
    return forward, backward


def gathered_bytes(cp: int, n: float, q: float, kv: float, blocks: int, gathered: float) -> tuple[float, float]:
    """HBM bytes, forward and backward, of one layer's bookkeeping around parc's all-gather
    attention kernels, counted op by op from the generated code (`AllGatherAttention`,
    `attend_blocks`, `blocks_backward`; "read a, write b" = a + b): `n` tokens on the rank (two
    chunks of n / 2 rows), `q` and `kv` the rank's widths, `blocks` kernels (each over one chunk's
    rows), `gathered` = cp x n K/V tokens after the gather. Forward: `torch.stack([k, v])` (4 per
    local K/V element), the reordering `torch.cat` and the permuted `reshape` of the gathered K/V
    (4 each per gathered element); a zeroed fp32 accumulator (4 per output element), per block
    the merge of `attend_blocks` (26 per element of its rows, as in the ring: `ring_bytes`), the
    final cast (6). Backward: dQ zeroed (4), `dq += block_dq` per block (10 on its rows), cast back
    (6); dK and dV over the whole gathered sequence zeroed in fp32 (4), `+= block_dk` per block
    (10 per element of its keys: together (2 cp + 1) / 2 chunks of keys, as `gathered_blocks`
    lays them out, i.e. about the gathered length), cast back (6); the reorder's and the stack's
    copies again (8 per gathered element, 4 per local one)."""
    out, local, whole = n * q, 2 * n * kv, 2 * gathered * kv
    keys = 2 * kv * (n / 2) * (2 * cp + 1)  # K and V elements the blocks' key ranges cover
    forward = local * 4 + whole * 8 + out * 4 + 26 * blocks * out / 2 + out * 6
    backward = out * 4 + 10 * blocks * out / 2 + out * 6 + whole * (4 + 6) + 10 * keys + whole * 8 + local * 4
    return forward, backward


@lru_cache(maxsize=16384, typed=True)
def flash_attention_seconds(shape: Shape, tp: int, cp: int, flavour: str, seq: int, n: float, attention: str,
                            hw: Hardware, sustained: float = 1.0) -> tuple[float, float, int]:
    """Forward and backward seconds of the fused attention kernels of one layer and micro-batch,
    and how many kernels each way. The kernel is the runtime's (`Software.attention`,
    `kernels.attention_curve`: torch's SDPA, FlashAttention-2, or Transformer Engine's), each
    kernel at its own efficiency for the keys it walks, the head dim and the mask. Causal work is
    half the square (`flops.causal_keys`); the backward runs `FLASH_BACKWARD` x the forward's
    products. Ring context parallelism (zig-zag load-balanced, torch's and Megatron-Core's) runs
    cp kernels each way, each an equal share of the rank's work: the diagonal step causal over
    s / cp keys, the others unmasked, half of them over s / cp keys (the later query chunk against
    both of the peer's chunks) and half over s / 2cp (both query chunks against the peer's earlier
    chunk). All-gather and all-to-all context parallelism run one causal kernel over all s keys.
    `sustained` is a training run's speed relative to the kernel benchmarks the curves come from (1:
    the curve as published): `Constants.attention_speed` (one for every generation), as `layer_work`
    passes it. A Blackwell part runs Hopper's curve times its attention ceiling
    (`Hardware.attention_ceiling`: measured where a sweep of the part is published, else its
    tensor-core ceiling relative to H100's). Kept per
    its arguments: it reads no ep, and an MoE search times each layer per ep.

    Sliding-window layers (`Shape.windowed`) are timed apart and the result is the layers' mean
    (`window_share`), exact for the whole model and for a stage holding whole periods of the
    layer pattern. A windowed kernel does `flops.windowed_keys` / `flops.causal_keys` of the
    causal work, and each query-row block of it walks about W keys with one masked edge tile, the
    tile mix of a causal kernel over 2W keys: its efficiency is the curve's at min(keys, 2W).
    Under ring context parallelism a windowed layer's steps are walked rank by rank
    (`windowed_ring_rank`: steps wholly outside every query's window do no work and launch no
    kernel; the count returned here stays the full layer's steps, the ring's structure, and
    `flash_attention_launches` counts the kernels that run); under the other flavours the ratio
    scales the kernels.

    Its nine parameters stay plain (not an `AttentionCase`): the cache is typed, an int and a
    float `n` of one value kept apart so that every caller gets the bits it got uncached, which a
    bundle's key (equal and equally hashed for 1 and 1.0) would merge."""
    windowed = window_share(shape, seq)
    case = AttentionCase(tp, cp, flavour, seq, n, attention, sustained)
    full = _flash_attention_kind(shape, case, hw, 0)
    if not windowed:
        return full
    banded = _flash_attention_kind(shape, case, hw, shape.window)
    return ((1 - windowed) * full[0] + windowed * banded[0], (1 - windowed) * full[1] + windowed * banded[1],
            full[2])


@lru_cache(maxsize=16384, typed=True)
def flash_attention_launches(shape: Shape, tp: int, cp: int, flavour: str, seq: int, n: float, attention: str,
                             hw: Hardware, sustained: float = 1.0) -> float:
    """Attention kernels one layer launches each way, in the mean over the layers: the count
    `flash_attention_seconds` returns, except under ring context parallelism, where a windowed
    layer launches only the steps that do work on the rank it times (`windowed_ring_rank`):
    parc's ring skips the kernel of a step whose held K/V lies outside every query's window
    (`windowed_ring_blocks` in the generated parallel.py returns no block). The step's K/V still
    travels (the ring relays it to the ranks after), so the exchange is charged as before. Under
    parc's all-gather cp a windowed layer launches its query chunks' band blocks
    (`gathered_band`). Without a window, or under another flavour, exactly
    `flash_attention_seconds`' count. Plain parameters as `flash_attention_seconds`' (its typed cache)."""
    steps = flash_attention_seconds(shape, tp, cp, flavour, seq, n, attention, hw, sustained)[2]
    windowed = window_share(shape, seq)
    if not windowed or flavour not in ("ring", GATHERED_BLOCKS) or cp == 1:
        return steps
    case = AttentionCase(tp, cp, flavour, seq, n, attention, sustained)
    banded = _flash_attention_kind(shape, case, hw, shape.window)
    return (1 - windowed) * steps + windowed * banded[2]


def window_share(shape: Shape, seq: int) -> float:
    """Fraction of the layers whose window drops keys at this sequence length (0 without a
    window, or when W >= seq and the window is the causal mask)."""
    if not shape.windowed or not flops.window_dropped_entries(seq, shape.window):
        return 0.0
    return sum(shape.windowed) / shape.layers


class AttentionCase(NamedTuple):
    """One layer's fused attention as `flash_attention_seconds` is asked for it, less the model
    and the GPU: what `_flash_attention_kind` reads for each kind of layer. Built only on the
    cached callers' misses, and never a cache key itself (their typed keys stay theirs)."""

    tp: int
    """Tensor-parallel degree: the heads split over it."""
    cp: int
    """Context-parallel degree: each rank holds seq / cp of the queries."""
    flavour: str
    """How cp runs the kernels: "ring" (cp steps), `GATHERED_BLOCKS` (parc's all-gather blocks),
    or one causal kernel over all keys (all-gather, all-to-all)."""
    seq: int
    """Tokens of one sequence: the keys."""
    n: float
    """Sequences whose attention one kernel runs (the micro-batch, or its share per rank)."""
    attention: str
    """`Software.attention`: whose kernel (`ATTENTION_KERNELS`, `kernels.attention_curve`)."""
    sustained: float
    """A training run's speed relative to the benchmarks: `Constants.attention_speed`."""


def _flash_attention_kind(shape: Shape, case: AttentionCase, hw: Hardware, window: int) -> tuple[float, float, int]:
    """`flash_attention_seconds` for layers of one kind: full causal (`window` 0) or windowed."""
    tp, cp, flavour, seq, n, attention, sustained = case
    curve = kernel_model.attention_curve(ATTENTION_KERNELS.get(attention, "sdpa"), hw.generation)
    d, entry = shape.qk_dim, shape.score_flops
    ratio = flops.windowed_keys(seq, window) / flops.causal_keys(seq) if window else 1.0
    cap = 2 * window if window else float("inf")
    work = flops.attention_core_flops(shape, flops.causal_keys(seq)) / tp * n
    back = flops.FLASH_BACKWARD * work

    # Transformer Engine's FP8 attention (`attention_kernel`), on the full layers: a windowed layer
    # keeps the BF16 kernel's speed. Transformer Engine 2.16 runs a window in FP8 on sm100 with
    # cuDNN >= 9.21 (utils.py's sliding-window filter; fused_attn_fp8.cu passes the band both
    # ways), but the one FP8 sliding-window sweep, cuDNN 9.19's gpt-oss preset, measured only the
    # forward (1.03x GB200, 1.20x GB300, per-tensor scales, none under MXFP8): its backward call
    # computes the full causal square (`kernels.ATTENTION_FP8_MEASURED`' window None), so no FP8
    # speed of the windowed backward is known
    quantized = "" if window else QUANTIZED_ATTENTION.get(attention, "")
    layer = "mla" if shape.mla else "gqa"

    kernel = AttentionKernel(score_flops=entry, head_dim=d, sustained=sustained, layer=layer, quantized=quantized)

    def seconds(flop: float, keys: float, causal: bool, backward: bool) -> float:
        efficiency = curve.efficiency(min(keys, cap), d, causal or window > 0, backward)
        return attention_kernel_seconds(kernel, hw, ratio * flop, efficiency, backward, causal or window > 0)

    if flavour == GATHERED_BLOCKS and cp > 1:
        per_key = flops.attention_core_flops(shape, 1.0) / tp * n / 2  # one query chunk's rows

        def rank_seconds(rank: int) -> tuple[float, float, int]:
            blocks = gathered_blocks(rank, cp, seq / (2 * cp))
            f = sum(seconds(per_key * (keys / 2 if causal else keys), keys, causal, False)
                    for keys, causal in blocks)
            b = sum(seconds(flops.FLASH_BACKWARD * per_key * (keys / 2 if causal else keys), keys, causal, True)
                    for keys, causal in blocks)
            return f, b, len(blocks)

        busiest = max((rank_seconds(r) for r in range(cp)), key=lambda t: t[0] + t[1])
        if window:  # the job runs each query chunk's band: `gathered_band`'s kernels
            return busiest[0], busiest[1], gathered_band(cp, seq, window).count
        return busiest
    if flavour != "ring" or cp == 1:
        return seconds(work, seq, True, False), seconds(back, seq, True, True), 1
    if window:
        per_entry = flops.attention_core_flops(shape, 1.0) / tp * n / (seq / cp)  # one (query, key) pair
        return max((windowed_ring_rank(r, cp, seq, window, per_entry, curve, kernel, hw) for r in range(cp)),
                   key=lambda t: t[0] + t[1])
    block, share = seq / cp, 1.0 / cp
    rest = (cp - 1) * share / 2

    def direction(flop: float, backward: bool) -> float:
        return (seconds(share * flop, block, True, backward) + seconds(rest * flop, block, False, backward)
                + seconds(rest * flop, block / 2, False, backward))

    return direction(work, False), direction(back, True), cp


def band_entries(distance: int, chunk: int, window: int) -> int:
    """(query, key) pairs a window allows between a query chunk and a key chunk `distance` chunks
    earlier, both `chunk` tokens: the pairs with query - key = t number chunk - |t - distance x
    chunk| for t within chunk - 1 of distance x chunk, and the window keeps t <= W - 1; on the
    diagonal (distance 0) t runs 0 .. chunk - 1 with chunk - t pairs each."""
    last = window - 1  # the largest query - key the window allows
    if distance == 0:
        terms = min(last, chunk - 1) + 1
        return terms * chunk - terms * (terms - 1) // 2
    centre, low = distance * chunk, distance * chunk - chunk + 1
    if last < low:
        return 0
    rising = min(last, centre) - low + 1  # 1, 2, ..., chunk pairs
    total = rising * (rising + 1) // 2
    if last > centre:
        falling = min(last, centre + chunk - 1) - centre  # chunk - 1, ..., 1 pairs
        total += falling * chunk - falling * (falling + 1) // 2
    return total


@dataclass(frozen=True, slots=True)
class AttentionKernel:
    """One layer kind's fused-attention kernel, whatever work a call gives it: what its seconds
    depend on beyond the FLOPs, the curve's efficiency and the pass (`attention_kernel_seconds`)."""

    score_flops: float
    """A head's forward FLOPs per score entry (`Shape.score_flops`, 4 x head dim without MLA):
    how many score entries, hence exponentials, the FLOPs stand for."""
    head_dim: float
    """The query-key head dim, where the part's measured attention ceiling is read
    (`kernels.ceiling_at`)."""
    sustained: float
    """A training run's speed relative to the kernel benchmarks (`Constants.attention_speed`)."""
    layer: str = "gqa"
    """"gqa" or "mla": the layer kind the part's FP8 speedups were measured for."""
    quantized: str = ""
    """"" for the BF16 kernel, "fp8" or "mxfp8" (`QUANTIZED_ATTENTION`)."""


def attention_kernel_seconds(kernel: AttentionKernel, hw: Hardware, flop: float, efficiency: float, backward: bool,
                             causal: bool = True) -> float:
    """Seconds of `kernel` doing `flop` FLOPs (a backward's counted as `FLASH_BACKWARD` x its
    forward's products) at the curve's `efficiency` of the BF16 peak, at what a training run
    sustains (`kernel.sustained`), on the part's attention ceiling at the kernel's head dim
    (`Hardware.attention_ceiling`, forward or backward). A quantized kernel ("fp8", "mxfp8")
    runs that over its speedup measured on the part for its layer kind and the mask (`causal`,
    `Hardware.quantized_attention`), or, where none was measured, its products at
    `kernels.FP8_ATTENTION_SHARE` of the FP8 peak. Physical bounds: never faster than the part's
    measured maximum matmul rate at the precision the products run in (`Hardware.achievable`,
    `achievable_fp8`: attention's products are matmuls on the same tensor cores), nor than the
    exponential unit's floor, one exponential per score entry each way (`kernels.exp_seconds`)."""
    ceiling = kernel_model.ceiling_at(hw.attention_ceiling, kernel.head_dim, backward)
    products = flop / (hw.bf16 * efficiency * ceiling * kernel.sustained)
    bound = flop / (hw.bf16 * hw.achievable)
    if kernel.quantized and hw.fp8:
        speedup = hw.quantized_attention(kernel.layer, kernel.quantized, causal)
        measured = speedup[backward] if speedup else None
        products = (products / measured if measured is not None
                    else products * hw.bf16 / (hw.fp8 * kernel_model.FP8_ATTENTION_SHARE))
        bound = flop / (hw.fp8 * hw.achievable_fp8)
    products = max(products, bound)
    entries = flop / ((flops.FLASH_BACKWARD if backward else 1.0) * kernel.score_flops)
    return max(products, kernel_model.exp_seconds(entries, hw.bf16, hw.generation, hw.exp_scale))


def windowed_ring_rank(rank: int, cp: int, seq: int, window: int, per_entry: float, curve, kernel: AttentionKernel,
                       hw: Hardware) -> tuple[float, float, int]:
    """Forward and backward seconds and kernels of one cp rank's ring attention on a windowed
    layer (zig-zag chunks: the rank holds chunks `rank` and 2 cp - 1 - rank of s / 2cp tokens).
    At step k the rank holds the K/V of rank (rank - k) mod cp; each pair of its query chunk i and
    a held key chunk j <= i does `band_entries(i - j)` pairs of work (the diagonal at the
    causal convention's c / (c + 1) of its exact count, so that a wide window gives the causal
    charge), and a step whose pairs the window removes entirely runs no kernel: the steps whose
    keys lie wholly before every query's window are skipped. A step with a masked block (the
    diagonal, or a block the window cuts to half its pairs or fewer: more edge than interior, a
    causal kernel's regime) runs at the causal curve's efficiency at min(keys it walks, 2W), like
    `flash_attention_seconds`' windowed layers; a step of whole blocks, or of blocks the window
    only clips at a corner, at the unmasked curve's over the keys it walks. `kernel` is the
    layer's, in BF16 under FP8 attention too (`_flash_attention_kind`)."""
    chunk = seq // (2 * cp)
    d = kernel.head_dim
    mine = (rank, 2 * cp - 1 - rank)
    forward = backward = 0.0
    kernels = 0
    for step in range(cp):
        peer = (rank - step) % cp
        entries, walked, masked = 0.0, set(), False
        for i in mine:
            for j in (peer, 2 * cp - 1 - peer):
                if j > i:
                    continue
                count = band_entries(i - j, chunk, window)
                if count:
                    entries += count * chunk / (chunk + 1) if i == j else count
                    walked.add(j)
                    masked = masked or i == j or 2 * count <= chunk * chunk
        if not entries:
            continue
        kernels += 1
        keys = min(len(walked) * chunk, 2 * window) if masked else len(walked) * chunk
        flop = per_entry * entries
        for backward_pass in (False, True):
            efficiency = curve.efficiency(keys, d, masked, backward_pass)
            if backward_pass:
                backward += attention_kernel_seconds(kernel, hw, flops.FLASH_BACKWARD * flop, efficiency, True)
            else:
                forward += attention_kernel_seconds(kernel, hw, flop, efficiency, False)
    return forward, backward, kernels


def measured_load(load: float, ep: int, capacity_factor: float = 0.0) -> float:
    """A measured busiest-rank load (`Software.routing_load`) as `layer_work` charges it: never
    below the mean, never above the whole of the routed copies on one rank (ep x the mean), and
    capped at a capacity factor (copies past it are dropped)."""
    load = min(max(load, 1.0), float(max(1, ep)))
    return min(load, max(capacity_factor, 1.0)) if capacity_factor else load


REGATHER = "regather"
"""`Work.tp_gemms` kind of a backward re-gather of a saved sharded input (`regathered`): an
all-gather on the wire, paired with the column-parallel layer's input-gradient GEMM."""


def tp_partners(blocks: list[tuple[float, float]], sp: bool) -> tuple[tuple[str, str, float], ...]:
    """`Work.tp_gemms` of a piece whose tp-split blocks (attention, the dense FFN, the shared
    experts; the output layer alone) are (column-parallel GEMM, row-parallel GEMM) seconds, the
    row one 0 where there is none. Each collective's own GEMM: forward, the input's all-gather
    feeds the column GEMM and the row GEMM's output is reduce-scattered (all-reduced without
    sp); backward the mirror images, the output gradient's all-gather feeding the row GEMM's
    input-gradient GEMM and the column GEMM's input gradient reduce-scattered (all-reduced)
    beside that layer's weight-gradient GEMM. The input- and weight-gradient GEMMs take as long
    as the forward one (`Work.backward_weight`), so the seconds are the forward GEMM's."""
    out: list[tuple[str, str, float]] = []
    if sp:
        out += [("forward", "all_gather", col) for col, _ in blocks]
        out += [("forward", "reduce_scatter", row) for _, row in blocks if row]
        out += [("backward", "all_gather", row) for _, row in blocks if row]
        out += [("backward", "reduce_scatter", col) for col, _ in blocks]
    else:
        out += [("forward", "all_reduce", row) for _, row in blocks if row]
        out += [("backward", "all_reduce", col) for col, _ in blocks]
    return tuple(out)


def attention_gemms(shape: Shape, tp: int, n: float, shard: int | None = 1) -> list[tuple[int, float, float, float, float]]:
    """(kernels, count, m, k, n) of a layer's attention projections (QKV, output) on `n` tokens
    per tp rank: `layer_work`'s first GEMMs, which no ep reads. Multi-head latent attention:
    `mla_gemms`, its duplicated down projections on the rank's n / `shard` own tokens (`shard`
    None: left out, for a floor that must hold at every sequence-parallel setting)."""
    if shape.mla:
        return mla_gemms(shape, tp, n, shard)
    h, q = shape.hidden, shape.q / tp
    kv = shape.kv / tp if kv_split(shape, tp) else shape.kv
    return [(1, 1, n, h, q + 2 * kv), (1, 1, n, shape.o / tp, h)]


LATENT_CALLS = (("forward", "all_gather"), ("backward", "reduce_scatter"), ("backward", "all_reduce"))
"""The attention's input-side tp calls (`Work.tp_latent`): under sequence parallelism the gather
into its column-parallel projections and the reduce-scatter of their input gradient; without it
the all-reduce of that gradient."""


def mla_tp_width(shape: Shape, sp: bool) -> int:
    """Elements per token of multi-head latent attention's input-side tp collectives (Megatron-Core,
    multi_latent_attention.py at core_v0.16.0): the up projections gather their inputs, the query
    latent (or the hidden state without one) and the key-value latent, and the shared RoPE key is
    gathered beside them (`gather_from_sequence_parallel_region(k_pos_emb)`); without sequence
    parallelism the column-parallel projections' input gradients are all-reduced, the RoPE key's
    is not (its down projection runs whole on every rank)."""
    queries = shape.q_lora or shape.hidden
    return queries + shape.kv_lora + (shape.rope_dim if sp else 0)


def mla_key_value_elements(shape: Shape, tp: int, n: float) -> float:
    """Elements multi-head latent attention's key and value assembly reads and writes on one tp
    rank for `n` tokens beyond the RoPE pass every RoPE model pays (which reads or writes q and
    one K-and-V width, `2 (q + kv)`): Megatron-Core's fused MLA RoPE (`fused_apply_mla_rope_for_kv`)
    reads the key-value up projection's output (each head's key part and value) and the shared
    RoPE key and writes every head's key (its part joined to the RoPE key) and its value,
    contiguous. The RoPE pass counts the writes; this is the read, heads x (head_dim + v_dim)."""
    return shape.heads * (shape.head_dim + shape.value_dim) / tp * n


def mla_elements(shape: Shape, tp: int, n: float, shard: int) -> float:
    """Elements multi-head latent attention's own memory-bound kernels read and write per
    micro-batch on one rank: its latent norms (`q_layernorm`, `kv_layernorm`: read and write each
    latent, on the rank's own n / `shard` tokens, where the duplicated down projections ran) and
    the key and value assembly (`mla_key_value_elements`)."""
    return 2 * sum(latent_norm_widths(shape.q_lora, shape.kv_lora)) * n / shard + mla_key_value_elements(shape, tp, n)


def mla_gemms(shape: Shape, tp: int, n: float, shard: int | None) -> list[tuple[int, float, float, float, float]]:
    """(kernels, count, m, k, n) of multi-head latent attention's projections on one tp rank, in
    the order Megatron-Core runs them (`latent.mla_linears`): the down projections whole on every
    rank (`parallel_mode="duplicated"`) over the rank's own tokens, n / tp under sequence
    parallelism (`shard` = tp) and all n without it (each rank repeats them); the up projections
    (column-parallel: the rank's heads) and the output projection (row-parallel) over all n, after
    the latents' all-gather."""
    out = []
    for w in attention_linears(shape):
        k, width = w.local(tp)
        if w.split == DUPLICATED:
            if shard is None:
                continue
            out.append((1, 1, n / shard, k, width))
        else:
            out.append((1, 1, n, k, width))
    return out


def moe_free_gemms(shape: Shape, tp: int, n: float) -> tuple[list, list]:
    """An MoE layer's GEMMs that no ep reads, as `layer_work` lists them around the routed
    experts': (the router, over each tp rank's 1/tp of the tokens; the shared experts, split
    over tp, none without)."""
    h, up = shape.hidden, shape.ffn_matrices - 1
    router = [(1, 1, n / tp, h, shape.experts)]
    if not shape.shared_experts:
        return router, []
    fs = shape.shared_experts * shape.expert_ffn / tp
    return router, [(1, 1, n, h, up * fs), (1, 1, n, fs, h)]


def moe_gemm_floor(shape: Shape, tp: int, cp: int, seq: int, micro: int, precision: str, hw: Hardware,
                   c: Constants) -> float:
    """At most the GEMM seconds (`Work.gemm`) of an MoE layer's `layer_work` at every ep, every
    routing and every kernel choice: the same sum over its GEMMs that no ep reads (attention,
    router, shared experts: `attention_gemms`, `moe_free_gemms`), each timed as `layer_work`
    times it (one kernel, pooled alone), in `layer_work`'s order, without the routed experts'
    (whose rows, kernels and streams follow ep). Each GEMM's time is not negative and adding
    one more such term never lowers a float sum (rounding is monotone), so the floor is at most
    the layer's sum. Search bounds the layouts' MoE layers by it before it computes their
    ep's own work (`Engine.alone_bound`)."""
    n = seq * micro / cp
    router, shared = moe_free_gemms(shape, tp, n)
    return sum(count * gemm_seconds(m, k, nn, precision, hw, c, count) + kernels * c.kernel_overhead
               for kernels, count, m, k, nn in attention_gemms(shape, tp, n, shard=None) + router + shared)


@dataclass(frozen=True, slots=True)
class EagerPass:
    """Elementwise work a fused runtime leaves to eager PyTorch over the routed experts' rows (their
    output bias, their GLU clamp) on one GPU for one micro-batch: HBM bytes and kernels, forward
    and backward."""

    bytes_f: float
    bytes_b: float
    kernels_f: int
    kernels_b: int


def expert_bias_work(rows: float, hidden: int, local: int) -> EagerPass:
    """HBM bytes and kernels of Megatron-Core's eager per-expert output bias (`EXPERT_BIAS_PASSES`,
    `EXPERT_BIAS_KERNELS`) over `rows` routed copies of width `hidden` on `local` experts: it is
    memory-bound elementwise work the grouped GEMM's epilogue does not absorb, so it costs its
    bytes at the HBM rate whatever the GPU's FLOP/s."""
    (per_f, once_f), (per_b, once_b) = EXPERT_BIAS_KERNELS
    return EagerPass(ACT * EXPERT_BIAS_PASSES[0] * rows * hidden, ACT * EXPERT_BIAS_PASSES[1] * rows * hidden,
                    per_f * local + once_f, per_b * local + once_b)


def expert_clamp_work(rows: float, width: float) -> EagerPass:
    """HBM bytes and kernels of Megatron-Core's eager clamp of the routed experts' GLU input
    (`EXPERT_CLAMP_PASSES`, `EXPERT_CLAMP_KERNELS`) over `rows` routed copies of the fc1 output,
    `width` (= `up x expert_ffn`) wide: elementwise work outside the compiled activation kernel,
    paid at the HBM rate whatever the GPU's FLOP/s."""
    return EagerPass(ACT * EXPERT_CLAMP_PASSES[0] * rows * width, ACT * EXPERT_CLAMP_PASSES[1] * rows * width,
                    *EXPERT_CLAMP_KERNELS)


@dataclass(frozen=True, slots=True, init=False)
class LayerCase:
    """What one layer runs on a rank: its kind, the layout's degrees that shape its work, the
    tokens, the precision and the runtime's kernel choices. Everything `layer_work` reads besides
    the model (`Shape`), the GPU (`Hardware`) and the fitted constants, as one hashable key: a
    search builds it once per distinct layer and `layer_work`'s cache hits on it."""

    moe: bool
    """A mixture-of-experts layer: routed experts (and their all-to-alls) in place of the FFN."""
    tp: int
    """Tensor-parallel degree: the heads and the FFN (shared experts) split over it."""
    sp: bool
    """Sequence parallelism in effect (`Knobs.sp`): the norms' tokens split over tp, and its
    collectives all-gathers and reduce-scatters in place of all-reduces."""
    cp: int
    """Context-parallel degree: each rank holds seq / cp of every sequence's tokens."""
    flavour: str
    """How cp exchanges K/V (`Knobs.cp_flavour`): "ring", "all-gather" or "all-to-all"."""
    seq: int
    """Tokens of one sequence: the attention's key length."""
    micro: int
    """Sequences per micro-batch: with seq and cp, the tokens each GEMM runs on."""
    ep: int
    """Expert-parallel degree: an MoE layer's local experts and its busiest rank's load."""
    precision: str
    """The GEMMs' precision as the runtime runs them (`gemm_precision`: an fp8 spec without an
    fp8 runtime runs bf16)."""
    attention: str
    """The fused attention the layer runs (`attention_kernel`): `Software.attention` ("flash",
    "flash-te", "flash-te-fa2" or "unfused", the s x s scores materialised), or "flash-te-fp8" / "flash-te-mxfp8"
    (`FP8_ATTENTION`, `MXFP8_ATTENTION`)."""
    kernels: str
    """`Software.kernels`: "eager" (an expert loop, op-by-op RoPE and SwiGLU) or "fused"
    (grouped GEMMs)."""
    balanced: bool = False
    """`Software.balanced_routing`: every expert rank receives the mean load."""
    cp_runtime: str = "parc"
    """`Software.context_parallel`: whose attention exchange runs cp ("parc", "torch", "te")."""
    fp8_scaling: str = "delayed"
    """`Software.fp8_scaling`: which cast bytes and quantize kernels an fp8 GEMM pays."""
    routing_load: float = 0.0
    """`Software.routing_load`: a measured busiest-rank load in place of the random router's (0)."""
    expert_bias: bool = False
    """`Software.expert_bias`: the routed experts' output bias added eagerly per expert
    (`expert_bias_work`)."""
    expert_clamp: bool = False
    """`Software.expert_clamp`: the routed experts' GLU input clamped eagerly (`expert_clamp_work`)."""
    rope_unfused: bool = False
    """`Software.rope_unfused`: the rotary embedding op by op in a fused runtime (`UNFUSED_ROPE_BYTES`)."""
    dispatcher: str = "all-to-all"
    """`Software.ep_dispatcher`: whose kernels move an MoE layer's copies into expert order
    (`PERMUTE_PASSES`)."""
    fused_grouped_mlp: bool = False
    """`Software.fused_grouped_mlp` where it applies to the layer's precision and recipe: an MoE
    layer's fp8 GEMMs under MXFP8 in a fused runtime (`fuses_grouped_mlp` checks the model)."""
    shared_recomputed: bool = False
    """Megatron-Core's `--recompute-modules shared_experts` (`Software.selective`): the shared
    experts' fc1 then keeps its quantized input, not the bf16 one (moe/shared_experts.py sets
    `set_save_original_input` only where the shared experts are not recomputed), so its casts and
    amax reductions are a plain column-parallel linear's (`original_input_casts`,
    `tp_amax_reductions`), as the memory model keeps it (`activations._megatron_body`)."""
    original_input: bool = True
    """`Software.save_original_input`: the runtime's output projection and shared-expert fc1 keep
    their bf16 input where the recipe lets them (`memory.inputs.keeps_original_input`); False for
    a Megatron-Core that predates `set_save_original_input`."""
    fp8_dispatch: bool = False
    """`Software.ep_dispatch_fp8` where the layer's GEMMs run in fp8: the all-to-alls into the
    experts carry their tokens quantized (`Work.ep_dispatch_bytes`)."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __init__(self, moe: bool, tp: int, sp: bool, cp: int, flavour: str, seq: int, micro: int, ep: int,
                 precision: str, attention: str, kernels: str, balanced: bool = False, cp_runtime: str = "parc",
                 fp8_scaling: str = "delayed", routing_load: float = 0.0, expert_bias: bool = False,
                 expert_clamp: bool = False, rope_unfused: bool = False, dispatcher: str = "all-to-all",
                 fused_grouped_mlp: bool = False, shared_recomputed: bool = False,
                 original_input: bool = True, fp8_dispatch: bool = False) -> None:
        """The generated `__init__`, faster: each field stored by its slot's own setter (past the
        frozen class's `__setattr__`, as `frozen.replaced` copies), and the hash of the fields'
        tuple kept (`frozen.hash_once`'s value). A search builds one per distinct layer it bounds
        (thousands); the generated one's `object.__setattr__` per field and `hash_once` took
        5.5 us of each, a few per cent of an MoE search. tests/test_timing.py checks it against
        the generated one's fields, equality and hash."""
        values = (moe, tp, sp, cp, flavour, seq, micro, ep, precision, attention, kernels, balanced, cp_runtime,
                  fp8_scaling, routing_load, expert_bias, expert_clamp, rope_unfused, dispatcher, fused_grouped_mlp,
                  shared_recomputed, original_input, fp8_dispatch)
        for store, value in zip(_CASE_STORES, values, strict=True):
            store(self, value)
        _CASE_HASH(self, hash(values))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def under(cls, sw: Software, *, moe: bool, tp: int, sp: bool, cp: int, flavour: str, seq: int, micro: int,
              ep: int, precision: str) -> LayerCase:
        """A layer of a layout (`precision` as the spec says it) as runtime `sw` runs it: its
        GEMMs' precision (`gemm_precision`), attention, kernels, routing and cp exchange. For
        callers that hold the layout's degrees but no `Knobs` (search's bounds)."""
        gemms = gemm_precision(precision, sw)
        return cls(moe, tp, sp, cp, flavour, seq, micro, ep, gemms, attention_kernel(sw, gemms),
                   sw.kernels, sw.balanced_routing, sw.context_parallel, sw.fp8_scaling, sw.routing_load,
                   sw.expert_bias, sw.expert_clamp, sw.rope_unfused, sw.ep_dispatcher,
                   sw.fused_grouped_mlp and moe and gemms == "fp8" and sw.fp8_scaling == "mxfp8"
                   and sw.kernels != "eager",
                   # a module list is stated only with `recompute selective`, so the policy alone says it
                   moe and "shared_experts" in recompute_modules(sw.selective), sw.save_original_input,
                   sw.ep_dispatch_fp8 and moe and gemms == "fp8")

    @classmethod
    def of(cls, k: Knobs, moe: bool, sw: Software) -> LayerCase:
        """A dense (`moe` False) or MoE layer of layout `k` as runtime `sw` runs it (`under`)."""
        return cls.under(sw, moe=moe, tp=k.tp, sp=k.sp, cp=k.cp, flavour=k.cp_flavour, seq=k.seq,
                         micro=k.micro_batch, ep=k.ep, precision=k.precision)

    @property
    def tokens(self) -> float:
        """Tokens of one micro-batch on the rank: its cp share of the sequence, before sequence
        parallelism splits them over tp."""
        return self.seq * self.micro / self.cp

    @property
    def shard(self) -> int:
        """How many ways sequence parallelism splits those tokens' rows between the norms and the
        gathers: tp with sequence parallelism, else 1."""
        return self.tp if self.sp and self.tp > 1 else 1


FUSED_MLP_ALIGNMENT = 64
"""Widths Transformer Engine's fused grouped MLP requires of both linears, in and out
(`validate_grouped_mlp_dims`): a model whose hidden or expert width is not a multiple runs the
unfused grouped GEMMs."""


def fuses_grouped_mlp(shape: Shape, case: LayerCase) -> bool:
    """Whether the layer's routed experts run Transformer Engine's fused grouped MLP
    (`Software.fused_grouped_mlp`, which `LayerCase.under` keeps for an MoE layer's MXFP8 GEMMs in
    a fused runtime): a GLU (the fused kernels' SwiGLU and GeGLU) and widths
    `FUSED_MLP_ALIGNMENT` divides."""
    return (case.fused_grouped_mlp and case.moe and shape.ffn_matrices == 3
            and shape.hidden % FUSED_MLP_ALIGNMENT == 0 and shape.expert_ffn % FUSED_MLP_ALIGNMENT == 0)


_CASE_STORES = tuple(LayerCase.__dict__[f.name].__set__ for f in fields(LayerCase) if f.name != "_hash")
"""Each `LayerCase` field's slot setter, in the fields' order (`LayerCase.__init__`)."""
_CASE_HASH = LayerCase.__dict__["_hash"].__set__


@lru_cache(maxsize=16384)
def layer_work(shape: Shape, case: LayerCase, hw: Hardware, c: Constants) -> Work:
    """One transformer layer: `case` (`LayerCase`) says which and how the runtime runs it.
    `case.attention` is "flash" (fused, causal work skipped: torch's SDPA, what parc's runtime
    runs), "flash-te" (the same through Transformer Engine), "flash-te-fa2" (flash-attn's kernel
    through Transformer Engine) or "unfused" (the s x s scores materialised, as Megatron-LM did
    before 2022).
    `case.kernels` ("eager" or "fused", `Software.kernels`) decides how routed experts launch:
    parc's runtime loops over its local experts, a kernel per matrix product and activation each;
    Megatron-LM's grouped GEMM is one kernel per matrix for all of them. `case.balanced`
    (`Software.balanced_routing`): every expert rank receives the mean load; `case.routing_load`
    (`Software.routing_load`): a measured busiest-rank load in place of the random router's.
    `case.expert_bias`, `case.expert_clamp` and `case.rope_unfused`: a fused runtime's op-by-op
    passes (`expert_bias_work`, `expert_clamp_work`, `UNFUSED_ROPE_BYTES`)."""
    moe, tp, sp, cp, flavour, seq, micro, ep = (case.moe, case.tp, case.sp, case.cp, case.flavour, case.seq,
                                                 case.micro, case.ep)
    precision, attention, kernels, balanced = case.precision, case.attention, case.kernels, case.balanced
    cp_runtime, fp8_scaling, routing_load = case.cp_runtime, case.fp8_scaling, case.routing_load
    expert_bias, expert_clamp, rope_unfused = case.expert_bias, case.expert_clamp, case.rope_unfused
    fused_mlp = fuses_grouped_mlp(shape, case)
    h, t = shape.hidden, tp
    n, shard = case.tokens, case.shard
    q = shape.q / t
    kv = shape.kv / t if kv_split(shape, t) else shape.kv
    up = shape.ffn_matrices - 1
    # routed tokens per tp rank: each tp rank routes its own 1/tp of the tokens (parc's runtime
    # routes per tp shard; Megatron-Core requires sequence parallelism with MoE under tp), so
    # expert computation and the ep all-to-alls are 1/tp per rank, never repeated on each
    routed = n / t
    # (kernels, count, m, k, n) of the forward GEMMs
    gemms: list[tuple[int, float, float, float, float]] = attention_gemms(shape, t, n, shard)
    attention_count = len(gemms)  # the attention's products, before the FFN's or the router's
    elements = 10 * h * n / shard  # two norms (read + write h) and two residual adds (3h) per token
    recomputable = 4 * h * n / shard  # the norms; selective recomputation also redoes the activations
    if not shape.position_params:  # RoPE (or no position code: the same few bytes)
        elements += 2 * (q + kv) * n
        recomputable += 2 * (q + kv) * n
    latent = mla_elements(shape, t, n, shard) if shape.mla else 0.0
    elements += latent
    recomputable += latent
    loop_kernels = 0  # activation kernels of an expert loop, one per expert (two for SwiGLU)
    moe_f = moe_b = 0.0  # bytes of the router's and the permutations' kernels, forward and backward
    moe_kernels = 0
    # op-by-op passes of a fused runtime (the experts' output bias and GLU clamp, `expert_bias_work`,
    # `expert_clamp_work`; an unfused RoPE): their kernels forward and backward, and the clamp's
    # forward again under `moe_act`
    eager_kernels = (0, 0)
    clamp_again = 0.0
    expert_act = 0.0  # elements the experts' activation reads and writes (`--recompute-modules moe_act`)
    routed_at: tuple[int, ...] = ()  # where the routed experts' grouped GEMMs sit in `gemms`
    cast_gemms: list[tuple] = []  # `gemms` with each routed expert's rows unpadded (`fp8_cast_bytes`)
    if moe:
        local = max(1, shape.experts // ep)
        # balanced routing: what this GPU's experts receive (a capacity factor under 1 drops some)
        mean = routed * shape.top_k * (min(1.0, shape.capacity_factor) if shape.capacity_factor else 1.0)
        # the busiest expert rank sets the pace (the all-to-alls wait for it): routed copies land
        # on ranks at random at best, so its load exceeds the mean by the balls-into-bins margin
        assigned = mean * (1.0 if balanced else measured_load(routing_load, ep, shape.capacity_factor)
                           if routing_load else kernel_model.routing_imbalance(mean, ep, shape.capacity_factor))
        # each expert's rows run in whole tiles (`kernels.padded_rows`)
        per_expert = kernel_model.padded_rows(assigned / local, balanced)
        f = shape.expert_ffn
        router, shared = moe_free_gemms(shape, t, n)
        gemms += router
        if kernels == "eager":  # parc's runtime: one expert after another, each matrix its own kernel
            up_kernels, down_kernels, loop_kernels = local * up, local, local * up
            pooled = 1
        elif fused_mlp:  # Transformer Engine's fused grouped MLP: one kernel over all the experts
            up_kernels = down_kernels = 1
            pooled = local
        else:  # Transformer Engine's grouped GEMM: one GEMM per expert over a few streams
            up_kernels = down_kernels = kernel_model.grouped_rounds(local)
            pooled = min(local, kernel_model.GROUPED_STREAMS)
        routed_at = (len(gemms), len(gemms) + 1) if kernels != "eager" else ()
        gemms += [(up_kernels, local, per_expert, h, up * f, pooled),
                  (down_kernels, local, per_expert, f, h, pooled)]
        # the tiles' padding is computed, not stored: the casts quantize each expert's own rows
        cast_gemms = gemms[:-2] + [(up_kernels, local, assigned / local, h, up * f),
                                   (down_kernels, local, assigned / local, f, h)]
        if not fused_mlp:  # the activation (the fused MLP runs it in fc1's epilogue, its backward in fc2's dgrad)
            elements += assigned * (up + 1) * f
            recomputable += assigned * (up + 1) * f
            expert_act += assigned * (up + 1) * f
        (plain_f, plain_b), (sort_f, sort_b) = PERMUTE_PASSES[permute_kind(kernels, case.dispatcher)]
        sorted_ = ep > 1 and local > 1
        moe_f = (ROUTER_BYTES[0] * routed * shape.experts
                 + ACT * (plain_f + (sort_f if sorted_ else 0)) * assigned * h)
        moe_b = (ROUTER_BYTES[1] * routed * shape.experts
                 + ACT * (plain_b + (sort_b if sorted_ else 0)) * assigned * h)
        moe_kernels = ROUTER_KERNELS
        if expert_bias and kernels != "eager":
            bias = expert_bias_work(assigned, h, local)
            moe_f += bias.bytes_f
            moe_b += bias.bytes_b
            eager_kernels = bias.kernels_f, bias.kernels_b
        if expert_clamp and kernels != "eager":
            clamp = expert_clamp_work(assigned, up * f)
            moe_f += clamp.bytes_f
            moe_b += clamp.bytes_b
            clamp_again = memory_seconds(clamp.bytes_f, hw, c) + clamp.kernels_f * c.kernel_overhead
            eager_kernels = eager_kernels[0] + clamp.kernels_f, eager_kernels[1] + clamp.kernels_b
        if shape.shared_experts:
            fs = shape.shared_experts * f / t
            gemms += shared
            cast_gemms += shared
            elements += n * (up + 1) * fs
            recomputable += n * (up + 1) * fs
            expert_act += n * (up + 1) * fs
    else:
        f = shape.ffn / t
        gemms += [(1, 1, n, h, up * f), (1, 1, n, f, h)]
        elements += n * (up + 1) * f
        recomputable += n * (up + 1) * f
    # a product repeated `count` times in one kernel (a grouped GEMM) shares its waves; in
    # `count` kernels (an expert loop) each fills the GPU alone
    gemms = [g if len(g) == 6 else (*g, g[1] if g[0] == 1 else 1) for g in gemms]
    timed = [count * gemm_seconds(m, k, nn, precision, hw, c, pooled) + kernels * c.kernel_overhead
             for kernels, count, m, k, nn, pooled in gemms]
    gemm = sum(timed)
    # Megatron-Core's recompute modules (`Software.selective` "modules:..."): the norms (the
    # `recomputable` elements above the RoPE's), the experts' activation, and the MoE layer
    # without its all-to-alls: the products after the attention's two (router, experts, shared
    # experts), the router's and the permutations' kernels and the activation
    norms_again = memory_seconds(ACT * 4 * h * n / shard, hw, c) + 2 * c.kernel_overhead
    moe_act_again = moe_again = 0.0
    if moe:
        moe_act_again = memory_seconds(ACT * expert_act, hw, c) + c.kernel_overhead + clamp_again
        moe_again = (sum(timed[attention_count:]) + memory_seconds(moe_f, hw, c)
                     + (moe_kernels + eager_kernels[0]) * c.kernel_overhead + moe_act_again)
    # `--recompute-modules mlp` (a dense layer) or `shared_experts` (a MoE layer's): that FFN's two
    # products, the last two of `gemms`, and its activation
    own_ffn = (shape.shared_experts * shape.expert_ffn / t) if moe else shape.ffn / t
    ffn_again = (sum(timed[-2:]) + memory_seconds(ACT * n * (up + 1) * own_ffn, hw, c) + c.kernel_overhead
                 if own_ffn else 0.0)
    shared_blocks = (ffn_again - timed[-1], timed[-1]) if moe and own_ffn else (0.0, 0.0)
    # `--recompute-modules mla_up_proj`: the latents' up projections (the column-parallel ones
    # before the output's) and the key and value assembly again; their outputs are not kept
    mla_up_again = 0.0
    if shape.mla:
        mla_up_again = (sum(timed[i] for i in up_projections(shape))
                        + memory_seconds(ACT * mla_key_value_elements(shape, t, n), hw, c))
    cast_f = cast_b = 0.0
    recipe = fp8_recipe(precision, fp8_scaling, hw)
    if recipe != "bf16":
        # each GEMM input cast forward, each output gradient backward: to fp8 with a transposed
        # copy for the other backward GEMM where the part's fp8 GEMMs are TN only (read 2 bytes,
        # write 1 + 1; dynamic scaling reads each tensor once more for its amax and casts the
        # weights on every forward), or to NVFP4 rowwise and, Hadamard-rotated, columnwise
        # (`NVFP4_CAST_BYTES`; its weights are quantized once a step)
        cast_f, cast_b = fp8_cast_bytes(cast_gemms if moe else gemms, cast_scaling(precision, fp8_scaling),
                                        fp8_transposed(hw.generation))
        if fused_mlp:  # fc2's input and fc1's output gradient leave the GEMMs' epilogues quantized
            routed_f, routed_b = fused_mlp_epilogue_casts(local, assigned / local, f, up)
            cast_f, cast_b = cast_f - routed_f, cast_b - routed_b
        # quantized on the rank's own rows, then gathered, under sequence parallelism; the fused
        # norms' outputs; the bf16 inputs kept and quantized again in the backward
        more_f, more_b = cast_correction(shape, case, fp8_transposed(hw.generation))
        cast_f, cast_b = cast_f + more_f, cast_b + more_b
    # eager PyTorch runs the rotary embedding and SwiGLU op by op: their extra bytes (their extra
    # launches queue ahead asynchronously behind the GEMMs; `kernel_overhead`, fitted on GEMM-bound
    # runs, is a GEMM's ramp and tail, not charged to them)
    eager_f = eager_b = 0.0
    if rope_unfused and kernels != "eager" and not shape.position_params:
        # two calls, the queries' and the keys'; the fused kernel is one of `MEMORY_KERNELS`
        eager_f += UNFUSED_ROPE_BYTES[0] * (q + kv) * n
        eager_b += UNFUSED_ROPE_BYTES[1] * (q + kv) * n
        eager_kernels = (eager_kernels[0] + 2 * UNFUSED_ROPE_KERNELS[0] - 1,
                        eager_kernels[1] + 2 * UNFUSED_ROPE_KERNELS[1] - 1)
    if kernels == "eager":
        if not shape.position_params:
            eager_f += EAGER_ROPE_BYTES[0] * (q + kv) * n
            eager_b += EAGER_ROPE_BYTES[1] * (q + kv) * n
        if up == 2:
            inner = (assigned * shape.expert_ffn + n * shape.shared_experts * shape.expert_ffn / t) if moe \
                else n * shape.ffn / t
            eager_f += EAGER_SWIGLU_BYTES[0] * inner
            eager_b += EAGER_SWIGLU_BYTES[1] * inner
    # Transformer Engine quantizes each routed expert's slice in a kernel of its own (all of them
    # in one under delayed scaling) and pads them to the fp8 GEMM's alignment: each kernel's ramp
    # and tail, one after another on the compute stream (`kernels.expert_quantize_launches`)
    # (the grouped experts' kernels, as the host issues them, `experts`, for `layer_launches`)
    if not moe or kernels == "eager":
        quantize_kernels, experts = (0, 0), kernel_model.Launches(0, 0)
    elif fused_mlp:  # its group quantizes (`kernels.FUSED_MLP_MEMORY_KERNELS`) and the fp8 paddings
        pad = kernel_model.expert_padding_launches(local, recipe)
        quantize_kernels = (kernel_model.FUSED_MLP_MEMORY_KERNELS.forward + pad,
                            kernel_model.FUSED_MLP_MEMORY_KERNELS.backward + pad)
        experts = kernel_model.fused_grouped_mlp_launches(local, recipe)
    else:
        quantize = kernel_model.expert_quantize_launches(local, recipe)
        quantize_kernels, experts = (quantize, quantize), kernel_model.grouped_mlp_launches(local, recipe)
    memory_f = (memory_seconds(ACT * elements + cast_f + eager_f + moe_f, hw, c)
                + (MEMORY_KERNELS + loop_kernels + moe_kernels + quantize_kernels[0] + eager_kernels[0])
                * c.kernel_overhead)
    memory_b = (memory_seconds(2 * ACT * elements + cast_b + eager_b + moe_b, hw, c)
                + (MEMORY_KERNELS + loop_kernels + moe_kernels + quantize_kernels[1] + eager_kernels[1])
                * c.kernel_overhead)
    # parc's selective policy also re-runs the attention output projection: its output feeds the
    # second norm, whose backward needs it (torch's checkpoint stops before the FFN down-projection)
    pointwise = memory_seconds(ACT * recomputable + eager_f, hw, c) + (MEMORY_KERNELS - 2) * c.kernel_overhead
    elementwise = pointwise + gemm_seconds(n, q, h, precision, hw, c) + c.kernel_overhead
    heads = shape.heads / t
    # torchtitan's attention repeats K and V to every query head before SDPA: torch's context
    # parallelism exchanges and copies the repeated tensors
    exchanged = q if cp_runtime == "torch" else kv
    if attention != "unfused":
        # torch's context parallelism runs its ring loop (one kernel per step on one K/V block)
        # under either rotate method; the all-gather only changes how the blocks arrive
        stepped = "ring" if cp_runtime == "torch" and flavour == "all-gather" else flavour
        gathered = cp_runtime == "parc" and flavour == "all-gather" and cp > 1
        if gathered:  # parc's job: one kernel per block of the gathered sequence (`gathered_blocks`)
            stepped = GATHERED_BLOCKS
        # the kernel benchmarks' curve at what a training run sustains of it, on this generation
        sustained = c.attention_speed
        attention_f, attention_b, steps = flash_attention_seconds(shape, t, cp, stepped, seq, n, attention, hw,
                                                                  sustained)
        # a windowed ring step outside every query's window launches nothing (its K/V still moves)
        launched = flash_attention_launches(shape, t, cp, stepped, seq, n, attention, hw, sustained)
        attention_b += launched * c.kernel_overhead
        attention_f += launched * c.kernel_overhead
        windowed = window_share(shape, seq)
        if windowed and (cp == 1 or flavour == "all-to-all") and cp_runtime == "parc":
            # parc's job runs a windowed layer as blocks merged by log-sum-exp (`window_bytes`);
            # under all-to-all the same blocks over the whole sequence for heads / cp of the
            # heads: cp times the tokens at 1 / cp of the widths, the same bytes and launches
            extra = (window_block_count(seq, shape.window) - 1) * c.kernel_overhead
            window_f, window_b = window_bytes(seq, shape.window, n, q, kv)
            attention_f += windowed * (extra + memory_seconds(window_f, hw, c))
            attention_b += windowed * (extra + memory_seconds(window_b, hw, c))
        if gathered:
            ring_f, ring_b = gathered_bytes(cp, n, q, kv, steps, cp * n)
            if windowed:  # a windowed layer merges and accumulates per band block (`gathered_band`)
                band_f, band_b = gathered_window_bytes(cp, seq, shape.window, n, q, kv)
                ring_f, ring_b = (1 - windowed) * ring_f + windowed * band_f, (1 - windowed) * ring_b + windowed * band_b
            attention_f += memory_seconds(ring_f, hw, c)
            attention_b += memory_seconds(ring_b, hw, c)
        elif steps > 1:
            # parc's ring merges and accumulates only on the steps that run (a windowed layer's
            # skipped steps merge nothing): `launched` of the `steps`
            run = launched if cp_runtime == "parc" and stepped == "ring" else steps
            ring_f, ring_b = ring_bytes(cp_runtime, kernels, steps, n, shape.o / t, exchanged, run=run)
            attention_f += memory_seconds(ring_f, hw, c)
            attention_b += memory_seconds(ring_b, hw, c)
        core_again = attention_f
    else:
        rows = seq / cp  # one sequence's queries on this rank; each head's products are batched
        batch = micro * heads  # each product is one batched kernel over heads and sequences
        per_head = (gemm_seconds(rows, shape.qk_dim, seq, "bf16", hw, c, batch)  # Q K^T
                    + gemm_seconds(rows, seq, shape.value_dim, "bf16", hw, c, batch))  # P V
        attention_f = micro * heads * per_head + 2 * c.kernel_overhead  # two batched products
        scores = heads * n * seq
        softmax_f = memory_seconds(SOFTMAX_FORWARD_BYTES * scores, hw, c) + 2 * c.kernel_overhead
        attention_b = 2 * attention_f
        memory_f += softmax_f
        memory_b += memory_seconds(SOFTMAX_BACKWARD_BYTES * scores, hw, c) + 2 * c.kernel_overhead
        core_again = attention_f + softmax_f
    # torchtitan's per-op policy: an MoE layer also runs its router gate and routed experts again
    # (the three products after the attention's), and, compiled, its router's and permutations'
    # kernels, which feed them
    torchtitan = torchtitan_op_seconds(
        shape, t, n, moe, torchtitan_kernels_again(kernels, memory_f, pointwise + (
            memory_seconds(moe_f, hw, c) + moe_kernels * c.kernel_overhead if moe else 0.0)),
        precision, hw, c) + (sum(timed[attention_count:attention_count + 3]) if moe else 0.0)

    tp_bytes = ACT * n * h if t > 1 else 0.0
    # under sequence parallelism Transformer Engine's all-gathers carry quantized GEMM inputs
    # (`Work.tp_gather_bytes`, `Work.tp_grad_gather_bytes`: both copies of a gradient under the
    # block-scaled recipes). torchao's float8 tensor-parallel plans (torchtitan, dynamic scaling)
    # gather float8 too, but each cast first all-reduces its amax over the tp group, latency the
    # model does not charge; torchtitan's one published fp8 pair under tp 8 (1.16x bf16,
    # tests/test_fp8_casts.py) shows no gain from the smaller gathers, so they are charged in bf16
    quantized = gathers_quantized(t, sp, recipe != "bf16", fp8_scaling)
    tp_gather_bytes = operand_bytes(hw, precision) * n * h if quantized else 0.0
    tp_grad_gather_bytes = (2 if recipe == "nvfp4" or recipe in BLOCK_SCALED else 1) * tp_gather_bytes
    tp_latent = ACT * n * mla_tp_width(shape, sp) if t > 1 and shape.mla else 0.0
    # the up projections gather their latents quantized as any column-parallel input; the RoPE key
    # Megatron-Core gathers itself, in bf16
    latent_element = operand_bytes(hw, precision) if quantized else ACT
    tp_latent_gather = (n * (latent_element * mla_tp_width(shape, False) + ACT * shape.rope_dim)
                        if quantized and shape.mla else 0.0)
    tp_latent_regather = latent_element * n * mla_tp_width(shape, False) if t > 1 and sp and shape.mla else 0.0
    pairs = 1 if moe and not shape.shared_experts else 2  # routed experts are not split over tp
    # each tp-split block's (column, row) GEMMs in `gemms`' order: attention, then the dense FFN
    # or the shared experts (after the router and the routed experts' two)
    # (MLA: its up projections are the column side, its output projection the row side; its
    # duplicated down projections run before the latents' gather and pair with nothing)
    columns = sum(timed[i] for i in up_projections(shape)) if shape.mla else timed[0]
    blocks = [(columns, timed[attention_count - 1])] + ([(timed[-2], timed[-1])] if pairs == 2 else [])
    reduce = (0, 0) if sp or t == 1 else (pairs, pairs)
    gather = (2 * pairs, 2 * pairs) if sp and t > 1 else (0, 0)
    if moe and t > 1 and not sp:
        # the routed result is all-gathered in forward, the input's gradient in backward
        gather = (gather[0] + 1, gather[1] + 1)

    cp_bytes = (0.0, 0.0)
    if cp > 1:
        kv_block = ACT * n * 2 * exchanged
        if cp_runtime == "torch":  # one block each way; `piece_collectives` lays out the calls
            cp_bytes = (kv_block, kv_block)
        elif flavour == "ring":
            cp_bytes = (kv_block, 2 * kv_block)
        elif flavour == "all-gather":
            cp_bytes = (cp * kv_block, cp * kv_block)
        else:
            sent = ACT * n * (q + 2 * kv + shape.o / t)  # Q, K and V there, the output back
            cp_bytes = (sent, sent)
    ep_bytes = ACT * assigned * h if moe and ep > 1 else 0.0
    ep_dispatch_bytes = FP8_DISPATCH_BYTES * assigned * h if ep_bytes and case.fp8_dispatch else 0.0
    launches_f, launches_b = layer_launches(gemms, routed_at, experts, recipe,
                                            loop_kernels + moe_kernels + eager_kernels[0],
                                            launched if attention != "unfused" else 4)
    return Work(launches_f=launches_f, launches_b=launches_b, gemm=gemm, attention_f=attention_f, attention_b=attention_b, memory_f=memory_f,
                memory_b=memory_b, selective_core=core_again, selective_elementwise=elementwise,
                selective_torchtitan=torchtitan, norms_again=norms_again, moe_act_again=moe_act_again, moe_again=moe_again,
                mla_up_again=mla_up_again, ffn_again=ffn_again, tp_bytes=tp_bytes, tp_gather_bytes=tp_gather_bytes,
                tp_grad_gather_bytes=tp_grad_gather_bytes,
                tp_latent=tp_latent, tp_latent_gather=tp_latent_gather,
                tp_latent_regather=tp_latent_regather, tp_all_reduce=reduce,
                tp_gather=gather,
                tp_gemms=tp_partners(blocks, sp) if t > 1 else (), cp_flavour=flavour,
                cp_bytes=cp_bytes, cp_runtime=cp_runtime, ep_bytes=ep_bytes, ep_dispatch_bytes=ep_dispatch_bytes,
                moe=moe, shared_blocks=shared_blocks)


TORCHTITAN_OP = "torchtitan-op"
"""`Software.selective` of torchtitan's per-op selective activation checkpointing
(`activation-checkpoint:selective`, torchtitan 0.3 distributed/activation_checkpoint.py,
`SelectiveAC`): it saves the outputs of the ops in `_get_default_save_ops` (torch's
compute-intensive list: `aten.mm`, `addmm`, `bmm`, the flash and efficient SDPA kernels,
`_scaled_mm`; plus `aten.linear`, `aten.max` (fp8's amax), `topk`, the reduce-scatter and
all-to-all collectives) except every second mm of the block, and recomputes everything else.
The checkpoint runs with `early_stop=False`: the block's whole forward is replayed in the
backward, the saved ops served from the cache."""


def torchtitan_kernels_again(kernels: str, forward: float, read_back: float) -> float:
    """Which memory-bound work torchtitan's per-op policy runs again, one rule for the time
    model (seconds) and hbm.py (bytes): eagerly (`kernels` "eager") all of the forward's
    (`forward`: norms, RoPE, the activation and its product, the residual adds, fp8's casts, an
    MoE layer's router and permutation kernels): none is on the save list and `early_stop=False`
    replays the whole block. Under torch.compile the policy only tags the joint graph and the
    partitioner recomputes what the backward reads, fused into its kernels (`read_back`: the
    norms, RoPE and the activation, as parc's policy; an MoE layer's router and permutations,
    whose outputs feed the recomputed expert GEMMs)."""
    return forward if kernels == "eager" else read_back


def torchtitan_op_seconds(shape: Shape, tp: int, n: float, moe: bool, pointwise: float, precision: str,
                          hw: Hardware, c: Constants) -> float:
    """A block's counted matmuls under torchtitan's per-op policy (`TORCHTITAN_OP`): the ones it
    does not save (`activations.torchtitan_op_split` of the generated job's block, torchtitan
    0.3's fused QKV: wo and w3 for a dense SwiGLU block; wo and the shared experts' w3 for an MoE
    block, whose router gate and routed experts' grouped GEMMs the caller adds whole) and
    `pointwise`, the memory-bound kernels it runs again (`torchtitan_kernels_again`). The
    attention kernel's output is saved."""
    return pointwise + _torchtitan_again_seconds(shape, tp, n, moe, precision, hw, c)


@lru_cache(maxsize=16384, typed=True)
def _torchtitan_again_seconds(shape: Shape, tp: int, n: float, moe: bool, precision: str, hw: Hardware,
                              c: Constants) -> float:
    """`torchtitan_op_seconds`' matmuls run again, summed: kept per what they read (no ep, no
    memory-bound work), since an MoE search times each layer per ep."""
    _, again = torchtitan_op_split(torchtitan_matmuls(shape, tp, moe=moe))
    return sum(gemm_seconds(n, k, out, precision, hw, c) + c.kernel_overhead for _, k, out in again)


class TokenSplit(NamedTuple):
    """How one micro-batch's tokens and the vocabulary split over a layout: what the embedding
    and the output layer (`embedding_work`, `output_work`) read of it, as one hashable key
    narrower than `LayerCase` (neither reads the experts, the cp exchange or the attention), so
    layouts that differ only there share their ends' work.

    A named tuple, not a slotted dataclass with its hash kept: each is built once per
    `_rank_times` miss (and per search bound's degrees) and hashed once or twice, so a kept hash
    buys nothing, and the tuple's own C hash and constructor spare the dataclass's Python
    `__post_init__` and `__hash__` calls (measured: some 2,000 calls of a cold 405B search)."""

    tp: int
    """Tensor-parallel degree: the vocabulary's shards, and the tp collectives' group."""
    sp: bool
    """Sequence parallelism in effect (`Knobs.sp`): the norm's tokens split over tp, and the
    collectives reduce-scatters and all-gathers in place of all-reduces."""
    cp: int
    """Context-parallel degree: each rank holds seq / cp of a sequence's tokens."""
    seq: int
    """Tokens of one sequence."""
    micro: int
    """Sequences per micro-batch."""


@lru_cache(maxsize=4096)
def embedding_work(shape: Shape, split: TokenSplit, hw: Hardware, c: Constants) -> Work:
    """Vocab-parallel lookup: its partial sums are all-reduced (reduce-scattered under sp) over tp."""
    tp, sp, cp, seq, micro = split
    n = seq * micro / cp
    h = shape.hidden
    memory_f = memory_seconds(ACT * n * h, hw, c)
    tp_bytes = ACT * n * h if tp > 1 else 0.0
    sp_on = sp and tp > 1
    return Work(memory_f=memory_f, memory_b=memory_seconds((ACT + 4) * n * h, hw, c), tp_bytes=tp_bytes,
                tp_all_reduce=(1, 0) if tp > 1 and not sp_on else (0, 0),
                tp_gather=(1, 0) if sp_on else (0, 0))


@lru_cache(maxsize=4096)
def output_work(shape: Shape, split: TokenSplit, vocab: int, precision: str, kernels: str, hw: Hardware,
                c: Constants) -> Work:
    """Final norm, the vocab-parallel logits (`vocab` padded as the runtime pads it) and the
    cross-entropy. Under sp the norm's output is all-gathered forward and its gradient
    reduce-scattered backward; without, the input gradient is all-reduced backward.

    With multi-token prediction (`Shape.mtp`, Megatron-Core's `MultiTokenPredictionLayer`) each
    module adds, around its transformer layer (a layer piece): its norms, the embedding of the
    shifted tokens, their concatenation (`MTP_ELEMENTS`), the column-parallel 2h -> h projection
    (`eh_proj`, whose output is all-gathered over tp), and the final norm, logits and loss again."""
    tp, sp, cp, seq, micro = split
    n = seq * micro / cp
    h = shape.hidden
    shard = tp if sp and tp > 1 else 1
    heads = 1 + shape.mtp
    gemm = heads * (gemm_seconds(n, h, vocab / tp, precision, hw, c) + c.kernel_overhead)
    project = shape.mtp * (gemm_seconds(n, 2 * h, h / tp, precision, hw, c) + c.kernel_overhead)
    logits = n * vocab / tp
    loss_f, loss_b = cross_entropy_bytes(kernels, tp)
    extra_f, extra_b = (shape.mtp * ACT * e * h * n / shard for e in MTP_ELEMENTS)
    memory_f = memory_seconds(heads * (ACT * 2 * h * n / shard + loss_f * logits) + extra_f, hw, c)
    memory_b = memory_seconds(heads * (ACT * 4 * h * n / shard + loss_b * logits) + extra_b, hw, c)
    sp_on = sp and tp > 1
    # each module's tp collectives, in units of the hidden state (Megatron-Core's
    # MultiTokenPredictionLayer): under sp its embedding's reduce-scatter, its projection's input
    # gathered (2h), its output gathered (`gather_from_tensor_model_parallel_region`) and its
    # head's input gathered, 5 each way; without sp the embedding's all-reduce and the output's
    # gather forward (both charged as all-reduces), the projection's 2h input gradient backward
    gathers = 1 + MTP_TP_UNITS[0] * shape.mtp
    reduces = (MTP_TP_UNITS[1] * shape.mtp, 1 + MTP_TP_UNITS[2] * shape.mtp)
    return Work(gemm=gemm + project, memory_f=memory_f, memory_b=memory_b, tp_bytes=ACT * n * h if tp > 1 else 0.0,
                tp_all_reduce=reduces if tp > 1 and not sp_on else (0, 0),
                tp_gather=(gathers, gathers) if sp_on else (0, 0),
                tp_gemms=tp_partners([(gemm + project, 0.0)], sp_on) if tp > 1 else (), tp_userbuffers=False)


MTP_TP_UNITS = (5, 2, 2)
"""A multi-token prediction module's tp collectives in units of h per token (`output_work`):
under sequence parallelism 5 gathers or reduce-scatters each way; without it 2 all-reduces
forward and 2 backward."""

MTP_ELEMENTS = (7, 14)
"""Elements per token and hidden unit a multi-token prediction module's own memory-bound kernels
read and write (forward, backward), beyond its layer and its output pass: the two input norms
(`enorm`, `hnorm`: read and write h each, 4), the shifted tokens' embedding (write h, 1) and the
concatenation the projection reads (write 2h, 2); the backward twice the forward's, as the
layer's own norms are charged (`layer_work`)."""


def slowed(work: Work, sw: Software, c: Constants) -> Work:
    """The piece as the runtime's kernels compute it: eager PyTorch takes 1 / `eager_efficiency`
    as long as the fused kernels the constants were fitted on; its communication is the same."""
    if sw.kernels == "fused" or c.eager_efficiency == 1.0:
        return work
    # the attention kernel is the same fused kernel in eager PyTorch (SDPA), timed from its own
    # published speed (`kernels.attention_curve`), so it is not slowed
    f = 1.0 / c.eager_efficiency
    return replaced(work, gemm=work.gemm * f, tp_gemms=tuple((p, k, g * f) for p, k, g in work.tp_gemms),
                    memory_f=work.memory_f * f, memory_b=work.memory_b * f,
                    selective_elementwise=work.selective_elementwise * f,
                    selective_torchtitan=work.selective_torchtitan * f, norms_again=work.norms_again * f,
                    moe_act_again=work.moe_act_again * f, moe_again=work.moe_again * f,
                    mla_up_again=work.mla_up_again * f, ffn_again=work.ffn_again * f,
                    shared_blocks=(work.shared_blocks[0] * f, work.shared_blocks[1] * f))


# ---------------------------------------------------------------------------------------------
# Communication of one piece


TpCalls = tuple[tuple[str, str, int], ...]
"""(phase, kind, calls per micro-batch) of one piece's tp collectives of `Work.tp_bytes`."""


def tp_calls(piece: str, sp: bool, tp: int, work: Work) -> TpCalls:
    """The tensor-parallel collectives of one piece per micro-batch, as the runtime issues them.

    A decoder layer (dense or MoE): Megatron-LM's f/g pairs (`pair_calls`), one collective per
    pair each way. Megatron-LM fuses QKV and the FFN's up-projections; parc's job and torchtitan
    (DTensor) hand attention, the dense FFN and the shared experts a Replicate DTensor, so that
    the column-parallel linears' Partial input gradients are summed on the rank and
    redistributed once (`block_plan` in backends/torch/templates/parallel.py.jinja), checked
    against the running job's recorded collectives (tests/e2e/test_collectives.py): forward the
    module's input is all-gathered under sp and its row-parallel output all-reduced
    (reduce-scattered under sp); backward the reverse. A MoE layer's routed experts are not split
    over tp; without sp each tp rank routes its share of the replicated sequence: the routed
    result is all-gathered forward and the input's gradient backward (in `Work.tp_gather`).
    Embedding (vocabulary-parallel): all-reduce forward, or reduce-scatter forward and its
    backward all-gather under sp. Output layer: its input gradient all-reduced backward, or under
    sp the norm's output all-gathered forward and its gradient reduce-scattered backward.
    Under sp a runtime that saves the column-parallel layers' inputs sharded (Megatron-LM, TE)
    all-gathers each again in the backward (`Work.tp_regather`, `regathered`)."""
    if tp <= 1 or not work.tp_bytes:
        return ()
    if piece == "embedding":
        return (("forward", "reduce_scatter", 1), ("backward", "all_gather", 1)) if sp else (("forward", "all_reduce", 1),)
    if piece == "output":  # and each multi-token prediction module's (`output_work`, `MTP_TP_UNITS`)
        if not sp:
            return tuple((phase, "all_reduce", n) for phase, n in zip(("forward", "backward"), work.tp_all_reduce,
                                                                       strict=True) if n)
        mtp = (work.tp_gather[0] - 1) // MTP_TP_UNITS[0]  # per module: 4 gathers (one 2h wide), a reduce-scatter
        again = (("backward", "all_gather", work.tp_regather),) if work.tp_regather else ()
        calls = (("forward", "all_gather", 1 + 4 * mtp), ("forward", "reduce_scatter", mtp),
                 ("backward", "reduce_scatter", 1 + 4 * mtp), ("backward", "all_gather", mtp))
        return tuple(c for c in calls if c[2]) + again
    return pair_calls(work)


def pair_calls(work: Work) -> TpCalls:
    """Megatron-LM's tp collectives of a piece: its f/g pairs (`Work.tp_all_reduce`, and
    `Work.tp_gather` as all-gathers and reduce-scatters in turn), and the backward's re-gathers
    of saved sharded inputs (`Work.tp_regather`, all-gathers of the same bytes)."""
    out = []
    for phase, i in (("forward", 0), ("backward", 1)):
        ar, g = work.tp_all_reduce[i], work.tp_gather[i]
        again = work.tp_regather if phase == "backward" else 0
        out += [(phase, "all_reduce", ar), (phase, "all_gather", g - g // 2 + again), (phase, "reduce_scatter", g // 2)]
    return tuple(x for x in out if x[2])


def piece_collectives(work: Work, tp: Link, cp: Link, ep: Link, calls: TpCalls | None = None,
                      extra: tuple[Collective, ...] = ()) -> tuple[Collective, ...]:
    """Every collective one piece issues per micro-batch on one rank, from the per-layer closed
    forms of `layer_work` (docs/time-model.md, "The ledger"): the tp calls (`tp_calls`; without
    them, the pairs of the Work), cp's exchange (ring: cp - 1 K/V shifts forward, cp - 1 K/V and
    cp dK/dV shifts backward, each one block; all-gather: the gathered K/V forward and its
    reduce-scatter backward; all-to-all: Q/K/V in and the output back, each way), ep's dispatch
    and combine all-to-alls forward and again backward, and `extra` (the loss's statistics, the
    expert-count exchange). Times, bytes sent and link bytes are all read from these records."""
    out: list[Collective] = list(extra)
    if tp.size > 1 and work.tp_bytes:
        for phase, kind, n in (pair_calls(work) if calls is None else calls):
            if work.tp_latent and (phase, kind) in LATENT_CALLS:  # the attention's first, as its GEMM pairs come
                size = work.tp_latent_gather if kind == "all_gather" and work.tp_latent_gather else work.tp_latent
                out.append(Collective("tp", kind, size, 1, tp.size, tp.local, "path", 1, phase, pairs=True))
                n -= 1
            if work.tp_latent_regather and work.tp_regather and (phase, kind) == ("backward", "all_gather"):
                # the up projections' inputs gathered again: the latents, not the hidden state
                out.append(Collective("tp", kind, work.tp_latent_regather, 1, tp.size, tp.local, "path", 1, phase,
                                      pairs=True))
                n -= 1
            if (phase, kind) == ("backward", "all_gather") and work.tp_gather_bytes and n:
                # the saved shards' re-gathers (columnwise copies), then the output gradients'
                again = min(n, max(0, work.tp_regather - (1 if work.tp_latent_regather else 0)))
                grads = work.tp_grad_gather_bytes or work.tp_gather_bytes
                out += [Collective("tp", kind, size, count, tp.size, tp.local, "path", count, phase, pairs=True)
                        for size, count in ((work.tp_gather_bytes, again), (grads, n - again)) if count]
                continue
            size = work.tp_gather_bytes if kind == "all_gather" and work.tp_gather_bytes else work.tp_bytes
            out.append(Collective("tp", kind, size, n, tp.size, tp.local, "path", n, phase, pairs=True))
    n = cp.size
    if n > 1 and work.cp_runtime == "torch":
        out += torch_cp_collectives(work, cp)
    elif n > 1:
        fwd, bwd = work.cp_bytes
        if work.cp_flavour == "ring":
            out += [Collective("cp", "send", fwd, n - 1, n, cp.local, "path", n - 1, "forward"),
                    Collective("cp", "send", bwd / 2, 2 * n - 1, n, cp.local, "path", 2 * n - 1, "backward")]
        elif work.cp_flavour == "all-gather":
            out += [Collective("cp", "all_gather", fwd, 1, n, cp.local, "path", 1, "forward"),
                    Collective("cp", "reduce_scatter", bwd, 1, n, cp.local, "path", 1, "backward")]
        else:
            out += [Collective("cp", "all_to_all", fwd / 2, 2, n, cp.local, "path", 2, "forward"),
                    Collective("cp", "all_to_all", bwd / 2, 2, n, cp.local, "path", 2, "backward")]
    if work.ep_bytes and ep.size > 1:
        experts, top_k, limit = work.ep_fanout
        spread = kernel_model.deepep_fractions(experts, top_k, ep.size, ep.local, limit) if experts else None
        for phase in ("forward", "backward"):
            if work.ep_dispatch_bytes:  # quantized into the experts, 16 bits out of them
                out += [Collective("ep", "all_to_all", size, 1, ep.size, ep.local, "path", 1, phase, spread)
                        for size in (work.ep_dispatch_bytes, work.ep_bytes)]
            else:
                out.append(Collective("ep", "all_to_all", work.ep_bytes, 2, ep.size, ep.local, "path", 2, phase, spread))
    return tuple(c for c in out if c.count > 0 and c.size > 1 and c.payload > 0)


def dispatch_metadata(shape: Shape, sw: Software, ep: Link, routed: float) -> tuple[Collective, ...]:
    """What an MoE layer's dispatcher exchanges before its tokens, each forward (and each
    recomputation that runs the dispatcher again), for `routed` tokens a rank routes: the
    expert counts, one int64 per (ep rank, local expert) (parc's runtime, Megatron-Core's
    all-to-all dispatcher, DeepEP's layout notification); Hybrid-EP instead all-gathers every
    rank's routing map, one byte per (token, expert), so that each rank's metadata kernel sees
    where every token goes (`HybridEpBuffer`'s metadata preprocessing: `all_gather_into_tensor`
    of the N x E boolean map over the ep group, DeepEP's deep_ep/hybrid_ep_buffer.py; its guide,
    "Executor": "Allgather + metadata kernel")."""
    if ep.size <= 1:
        return ()
    if sw.ep_dispatcher == "hybridep":
        return (Collective("ep", "all_gather", ep.size * routed * shape.experts, 1, ep.size, ep.local, "path", 1,
                           "forward"),)
    return (Collective("ep", "all_to_all", 8 * shape.experts, 1, ep.size, ep.local, "path", 1, "forward"),)


def torch_cp_collectives(work: Work, cp: Link) -> list[Collective]:
    """torch's context parallelism (`_templated_ring_attention`, torchtitan), per layer and
    micro-batch, one K/V block B = `cp_bytes[0]`: K/V arrive by cp - 1 sends of B (rotate method
    "alltoall", the ring) or one all-gather of cp B (rotate method "allgather", torch's default),
    forward and again backward; the backward's dK/dV travel as fp32 (2 B per send) in cp sends
    whatever the rotate method (its dK/dV rotater is always the all-to-all one), the last one home."""
    n, block = cp.size, work.cp_bytes[0]
    records = [Collective("cp", "send", 2 * block, n, n, cp.local, "path", n, "backward")]
    for phase in ("forward", "backward"):
        if work.cp_flavour == "all-gather":
            records.append(Collective("cp", "all_gather", n * block, 1, n, cp.local, "path", 1, phase))
        else:
            records.append(Collective("cp", "send", block, n - 1, n, cp.local, "path", n - 1, phase))
    return records


def torch_cp_exposed(work: Work, cp: Link) -> tuple[float, float]:
    """Exposed seconds (forward, backward) of torch's context-parallel exchange for one layer:
    each step's transfer runs under the step's kernel (attention / cp each way) and only its
    excess shows. Ring: each of the cp - 1 K/V shifts under one step (backward with the dK/dV
    shift beside it). All-gather: issued before the diagonal step and awaited after it, so only
    the diagonal kernel hides it. Backward, every dK/dV shift hides under the next step's kernel
    and the last one, home, shows whole. Each hidden transfer holds NCCL's SMs
    (`kernels.overlap_exposed`)."""
    n, block = cp.size, work.cp_bytes[0]
    step_f, step_b = work.attention_f / n, work.attention_b / n
    shift = block / cp.ring + cp.latency
    dkv = 2 * block / cp.ring + cp.latency

    def hidden(step: float, transfer: float) -> float:  # NCCL's calls beside one step's kernel
        return kernel_model.overlap_exposed(step, transfer, cp.sm_share * transfer)

    if work.cp_flavour == "all-gather":
        gather = collective_seconds(Collective("cp", "all_gather", n * block, 1, n, cp.local, "path", 1,
                                               "forward"), cp)
        forward = hidden(step_f, gather)
        backward = hidden(step_b, gather) + (n - 1) * hidden(step_b, dkv) + dkv
    else:
        forward = (n - 1) * hidden(step_f, shift)
        backward = (n - 1) * hidden(step_b, shift + dkv) + dkv
    return forward, backward


@dataclass(frozen=True, slots=True)
class Exposed:
    """Seconds of communication left on the critical path, and bytes this GPU sent, per piece;
    `collectives` are the piece's records per micro-batch they are reduced from."""

    tp_f: float = 0.0
    tp_b: float = 0.0
    cp_f: float = 0.0
    cp_b: float = 0.0
    ep_f: float = 0.0
    ep_b: float = 0.0
    tp_sent: tuple[float, float] = (0.0, 0.0)
    cp_sent: tuple[float, float] = (0.0, 0.0)
    ep_sent: tuple[float, float] = (0.0, 0.0)
    collectives: tuple[Collective, ...] = ()
    kept: tuple[Collective, ...] = ()
    """Forward records a recomputation does not issue again (the expert-count exchange where the
    runtime keeps its tables: `Software.moe_counts_kept`)."""
    ep_kept: tuple[float, float] = (0.0, 0.0)
    """The `kept` ep records' exposed seconds and bytes sent, per micro-batch."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash


def paired_tp_exposed(work: Work, records: tuple[Collective, ...], tp: Link, mode: str) -> tuple[float, float]:
    """Exposed seconds (forward, backward) of one piece's tp collectives under the runtime's
    overlap `mode` (`Software.tp_overlap`), each paired with its own GEMM: a call the runtime
    runs beside a GEMM (`kernels.tp_overlap_pairs`, the GEMM from `Work.tp_gemms`, taken in
    order, once each) shows `kernels.overlap_exposed(gemm, transfer, share x transfer)`; every
    other call (no partner, or one the runtime does not pair: the loss's statistics, the
    router's gradient, the routed result's gathers) waits for its data and shows whole. A
    transfer longer than its own GEMM cannot borrow time from another GEMM of the layer, so the
    sum over pairs is never less than one window over the sums (tests/test_tp_pairing.py). The
    share: the runtime's SMs for that kind (`kernels.tp_overlap_sms`), or NCCL's on the link; a
    backward re-gather (`regathered`) is an all-gather on the wire at its own kernel's share.
    Only the records of the piece's own calls (`Collective.pairs`) can pair. A piece outside
    TE's userbuffers (`Work.tp_userbuffers`: the output layer) runs "all" as "backward"."""
    if mode == "all" and not work.tp_userbuffers:
        mode = "backward"
    def share(kind: str) -> float:
        sms = kernel_model.tp_overlap_sms(mode, kind)
        return tp.sm_share if sms is None else kernel_model.sm_share(sms, tp.sms)

    partners: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for phase, kind, seconds in work.tp_gemms:
        if kernel_model.tp_overlap_pairs(mode, phase, kind):
            # a re-gather is an all-gather of the same bytes: one record carries both kinds of
            # call, each paired call at its own kernel's share
            partners.setdefault((phase, "all_gather" if kind == REGATHER else kind), []).append((seconds, share(kind)))
    out = {"forward": 0.0, "backward": 0.0}
    for r in records:
        if r.axis != "tp" or r.phase not in out:
            continue
        one = collective_seconds(r, tp)
        mates = partners.get((r.phase, r.kind), []) if r.pairs else []
        paired = min(r.count, len(mates))
        out[r.phase] += (sum(kernel_model.overlap_exposed(g, one, s * one) for g, s in mates[:paired])
                         + (r.count - paired) * one)
        del mates[:paired]
    return out["forward"], out["backward"]


def paired_ep_exposed(work: Work, forward: float, backward: float, share: float,
                      into: tuple[float, float] | None = None) -> float:
    """Seconds a MoE layer's four all-to-alls show when each runs beside the block of the other
    micro-batch's computation the schedule pairs it with: Megatron-Core's 1F1B all-to-all overlap
    (`schedule_layer_1f1b` in megatron/core/models/common/model_chunk_schedule_plan.py: the
    forward's attention beside the backward's combine, the forward's dispatch beside the backward's
    expert MLP, the backward's dispatch beside the forward's expert MLP, the forward's combine
    beside the backward's attention, each pair on its own stream) and DualPipe's chunk pairs
    (DeepSeek-V3 report, Figure 4: the same four). A transfer longer than its partner shows by
    the difference, however much the other blocks have to spare: the streams meet at each pair.

    `forward`, `backward`: the layer's all-to-all seconds each way (dispatch and combine alike,
    the same tokens). The expert block's forward is the MoE layer's computation without its
    all-to-alls (`Work.moe_again`: router, permutations, expert GEMMs, activation, shared
    experts), its backward twice that (input and weight gradients); the attention block is the
    rest of the layer. Each pair takes `kernels.overlap_exposed` (the transfer's SM share).
    `into`: (forward, backward) seconds of the all-to-all into the experts (the dispatch, the
    combine's gradient) where an FP8 dispatch makes them differ from the way out
    (`Work.ep_dispatch_bytes`); the way out takes the rest of each. None: halves."""
    dispatch, gathered = (forward / 2, backward / 2) if into is None else into
    mlp_f = min(work.moe_again, work.forward)
    mlp_b = min(2 * mlp_f, work.backward_input + work.backward_weight)
    attention_f = work.forward - mlp_f
    attention_b = work.backward_input + work.backward_weight - mlp_b
    pairs = ((attention_f, gathered), (mlp_b, dispatch), (mlp_f, backward - gathered), (attention_b, forward - dispatch))
    return sum(kernel_model.overlap_exposed(block, transfer, share * transfer) for block, transfer in pairs)


def overlaps_shared_experts(sw: Software, shape: Shape, tp: int) -> bool:
    """Whether a MoE layer of `shape` runs its shared experts beside its all-to-alls under `sw` at
    tensor-parallel degree `tp` (`Software.shared_expert_overlap`)."""
    return sw.shared_expert_overlap and bool(shape.shared_experts) and shared_overlap_applies(tp)


def shared_beside_ep(work: Work, forward: float, backward: float, share: float,
                     into: tuple[float, float] | None = None) -> tuple[float, float]:
    """Seconds (forward, backward) a MoE layer's all-to-alls show when its shared experts run beside
    them on their own stream (`Software.shared_expert_overlap`): in the forward the dispatch
    transfers while fc1 and its activation compute, the combine while fc2 does (the alltoall
    dispatcher's `token_dispatch` and `token_combine` call the shared experts' two halves right
    after posting each all-to-all); in the backward each half's gradients (input and weight, twice
    its forward) run beside the all-to-all that carries the gradient of the tokens it waits for:
    fc2's beside the combine's, fc1's beside the dispatch's. Each pair takes
    `kernels.overlap_exposed` at the transfer's SM share; `forward`, `backward`: the layer's
    all-to-all seconds each way (dispatch and combine alike, the same tokens); `into` the
    all-to-alls into the experts' where an FP8 dispatch makes them differ (`paired_ep_exposed`)."""
    fc1, fc2 = work.shared_blocks
    dispatch, gathered = (forward / 2, backward / 2) if into is None else into
    out_f = sum(kernel_model.overlap_exposed(block, seconds, share * seconds)
                for block, seconds in ((fc1, dispatch), (fc2, forward - dispatch)))
    # fc2's gradients beside the combine's gradient into the experts, fc1's beside the way back
    out_b = sum(kernel_model.overlap_exposed(2 * block, seconds, share * seconds)
                for block, seconds in ((fc2, gathered), (fc1, backward - gathered)))
    return out_f, out_b


@lru_cache(maxsize=16384)
def exposed(work: Work, tp: Link, cp: Link, ep: Link, overlap_ep: bool, overlap_tp: str,
            c: Constants, calls: TpCalls | None = None, extra: tuple[Collective, ...] = (),
            kept: tuple[Collective, ...] = (), overlap_shared: bool = False) -> Exposed:
    """Exposed time of one piece's tp, cp and ep communication, reduced from its records
    (`piece_collectives`): each record's calls at `collective_seconds` on its axis's link.

    tp: waits for its data, except where the runtime overlaps it with its own GEMM
    (`Software.tp_overlap`, `paired_tp_exposed`): then only what outlasts that GEMM shows.
    cp ring: each of the cp - 1 steps passes one K/V block (and backward its dK/dV too) while one block of attention computes;
    only the excess shows, plus the last dK/dV shift home. cp all-gather and all-to-all wait for
    their data (exposed). ep: the dispatch and combine all-to-alls wait for their tokens, unless
    DualPipe overlaps them with the other micro-batch's computation (`overlap_ep`).

    Every overlap is charged by one rule (`kernels.overlap_exposed`): a transfer holds its
    kernels' share of the SMs while it runs and the computation beside it runs on the rest, so
    W seconds of computation and T of transfer take max(T, W + share x T). The shares: tp by the
    runtime's overlap (`kernels.tp_overlap_sms`: TE's userbuffers, torch's copy engines, NCCL),
    cp's ring sends NCCL's (`Link.sm_share`), ep DeepEP's (`Work.ep_sm_share`) or NCCL's.

    `kept`: the ep records of `extra` a recomputation does not issue again (`Exposed.kept`);
    their seconds leave the recomputation's exposure where they were exposed alone (under
    `overlap_ep` the exposure is one figure, and the recomputation keeps it).
    `overlap_shared`: the layer's shared experts compute beside its all-to-alls
    (`Software.shared_expert_overlap`, `shared_beside_ep`)."""
    records = piece_collectives(work, tp, cp, ep, calls, extra)
    links = {"tp": tp, "cp": cp, "ep": ep}
    time = {(axis, phase): 0.0 for axis in links for phase in ("forward", "backward")}
    sent = dict.fromkeys(time, 0.0)
    for r in records:
        key = (r.axis, r.phase)
        sent[key] += r.count * r.sent
        if r.axis == "cp" and (r.kind == "send" or work.cp_runtime == "torch"):
            continue  # the ring's overlap, below
        if r.axis == "tp":
            continue  # paired with their GEMMs, below
        time[key] += r.count * collective_seconds(r, links[r.axis])
    tp_f, tp_b = paired_tp_exposed(work, records, tp, overlap_tp)
    cp_f, cp_b = time[("cp", "forward")], time[("cp", "backward")]
    n = cp.size if work.cp_bytes[0] > 0 else 1  # the embedding and output layer exchange nothing
    if n > 1 and work.cp_runtime == "torch":
        cp_f, cp_b = torch_cp_exposed(work, cp)
    elif n > 1 and work.cp_flavour == "ring":
        block = work.cp_bytes[0]
        shift = block / cp.ring + cp.latency
        both = 2 * block / cp.ring + cp.latency
        cp_f = (n - 1) * kernel_model.overlap_exposed(work.attention_f / n, shift, cp.sm_share * shift)
        cp_b = (n - 1) * kernel_model.overlap_exposed(work.attention_b / n, both, cp.sm_share * both) + shift
    ep_f, ep_b = time[("ep", "forward")], time[("ep", "backward")]
    # the SMs an overlapped transfer holds: DeepEP's own kernels, or NCCL's all-to-all
    share = work.ep_sm_share if work.ep_fanout[0] else ep.sm_share
    # of each way's ep seconds, the all-to-all into the experts': half, or less where it carries
    # FP8 (the two calls' difference taken off its half)
    into = {"forward": ep_f / 2, "backward": ep_b / 2}
    if work.ep_dispatch_bytes:
        for phase in into:
            calls = {r.payload: r for r in records if r.axis == "ep" and r.phase == phase}
            if work.ep_dispatch_bytes in calls and work.ep_bytes in calls:
                into[phase] -= (collective_seconds(calls[work.ep_bytes], ep)
                                - collective_seconds(calls[work.ep_dispatch_bytes], ep)) / 2
    if overlap_ep and ep_f + ep_b:
        # the transfers hide under the other micro-batch's computation, which meanwhile runs on
        # the SMs they leave free, each beside the one block of it the schedule pairs it with
        # (`paired_ep_exposed`)
        ep_f = ep_b = paired_ep_exposed(work, ep_f, ep_b, share, (into["forward"], into["backward"])) / 2
    elif overlap_shared and ep_f + ep_b:
        ep_f, ep_b = shared_beside_ep(work, ep_f, ep_b, share, (into["forward"], into["backward"]))
    kept_seconds = 0.0 if overlap_ep else sum(r.count * collective_seconds(r, ep) for r in kept)
    return Exposed(tp_f=tp_f, tp_b=tp_b, cp_f=cp_f, cp_b=cp_b, ep_f=ep_f, ep_b=ep_b,
                   tp_sent=(sent[("tp", "forward")], sent[("tp", "backward")]),
                   cp_sent=(sent[("cp", "forward")], sent[("cp", "backward")]),
                   ep_sent=(sent[("ep", "forward")], sent[("ep", "backward")]), collectives=records,
                   kept=kept, ep_kept=(kept_seconds, sum(r.count * r.sent for r in kept)))


# ---------------------------------------------------------------------------------------------
# One pipeline rank, one micro-batch


@dataclass(frozen=True, slots=True)
class Load:
    """What one pipeline rank holds, as counts: its time is a sum over these."""

    pieces: tuple[tuple[bool, str, int], ...]
    """(MoE layer?, recompute mode, how many layers) over the rank's chunks."""
    embedding: bool
    output: bool
    chunks: int
    sends_f: int
    """Chunk boundaries this rank sends activations across (forward), and gradients (backward)."""
    sends_b: int
    params_dense: int
    params_expert: int
    blocks_dense: tuple[Runs, ...] = ()
    """Per chunk, the blocks of its dense parameters (embedding, layers, head) as zero1 buckets them."""
    blocks_expert: tuple[Runs, ...] = ()
    """Per chunk, the routed experts of its MoE layers, one block per layer."""
    params_root: int = 0
    """The embedding, final norm and output layer this rank holds (FSDP2's root unit)."""
    params_other: int = 0
    """Of `params_dense`, those no fp8 linear holds: norms, routers, the embedding and the output
    layer (`Params.other`), which Megatron-LM gathers in bf16 beside fp8 parameters."""
    roots: int = 1
    """FSDP root units on the rank: under pp each chunk is its own `fully_shard` root, and one
    gathers something of its own only where it holds the embedding or the final norm and output
    (none on a middle rank, two on the first rank of a V, which holds both ends); without a
    pipeline the whole model is one root, whatever its virtual stages."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash


def _chunk_kinds(shape: Shape, first: int, layers: int, recompute: str,
                 recompute_layers: int | None) -> list[tuple[tuple[bool, str], int]]:
    """Layers of a chunk by (MoE?, recompute mode), counted without a loop over layers so that a
    hostile layer count costs nothing (`full N` recomputes the first N layers of each chunk)."""
    if recompute == "full" and recompute_layers is not None:
        spans = ((first, min(recompute_layers, layers), "full"),
                 (first + min(recompute_layers, layers), layers - min(recompute_layers, layers), "none"))
    else:
        spans = ((first, layers, recompute),)
    kinds = []
    for start, count, mode in spans:
        moe = sum(shape.moe[start:start + count]) if shape.moe else 0
        kinds += [((False, mode), count - moe), ((True, mode), moe)]
    return kinds


class Chunking(NamedTuple):
    """How a layout cuts the model over its pipeline ranks and shards each rank's parameters:
    what `rank_loads` reads of it besides the recomputation, and all `_rank_frames` reads, as one
    key narrower than `Knobs` (no dp, cp, sequence or micro-batch: layouts that differ there
    share their ranks' loads). A named tuple, as `TokenSplit` is (built once per lookup or two:
    its C hash and constructor cost less than a dataclass's kept hash)."""

    tp: int
    """Tensor-parallel degree: each rank's share of the layers' and the vocabulary's parameters."""
    ep: int
    """Expert-parallel degree: each rank's share of the routed experts."""
    pp: int
    """Pipeline degree: the ranks the chunks are placed on."""
    v: int
    """Virtual stages (`Knobs.virtual_stages`): chunks per rank under the interleaved schedules."""
    schedule: str
    """The pipeline schedule: with pp and v, which chunks each rank holds (`chunks_of`)."""
    split: tuple[int, ...] | None
    """Layers per stage as the spec writes them (None: even)."""
    runtime: str
    """`Knobs.runtime`: the vocabulary's padding and whether the experts fold into their layers."""

    @classmethod
    def of(cls, k: Knobs) -> Chunking:
        """Layout `k`'s chunking."""
        return cls(k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)


@lru_cache(maxsize=4096)
def rank_loads(shape: Shape, chunking: Chunking, recompute: str, recompute_layers: int | None) -> tuple[Load, ...]:
    """Each pipeline rank's load, from its chunks (`stages.py`, through the memory model's cached
    `chunks_of`); parameters counted as the memory model's `chunk_params` counts them, but from
    the layer counts, so that a hostile layer count costs nothing. What does not depend on the
    recomputation (`_rank_frames`) is shared by every mode: `recompute` and `recompute_layers`
    (`Knobs`' own, `full N`'s layers per chunk) stay apart from the `Chunking` for that."""
    loads = []
    for mine, frame in _rank_frames(shape, chunking):
        kinds: dict[tuple[bool, str], int] = {}
        for chunk in mine:
            for key, count in _chunk_kinds(shape, chunk.first_layer, chunk.layers, recompute, recompute_layers):
                if count:
                    kinds[key] = kinds.get(key, 0) + count
        loads.append(Load(pieces=tuple((moe, mode, count) for (moe, mode), count in sorted(kinds.items()) if count),
                          **frame))
    return tuple(loads)


@lru_cache(maxsize=1024)
def _rank_frames(shape: Shape, chunking: Chunking) -> tuple[tuple[tuple, dict], ...]:
    """Per pipeline rank, its chunks and the fields of its `Load` that the recomputation does
    not change: placement, sends, parameters (a sum over its layers' kinds, whichever mode each
    is recomputed in) and zero1's blocks. A search asks for every recomputation mode of each
    chunking: the chunks are walked once."""
    tp, ep, pp, runtime = chunking.tp, chunking.ep, chunking.pp, chunking.runtime
    chunks = chunks_of(shape.layers, pp, chunking.v, chunking.schedule, chunking.split, shape.tied, shape.mtp)
    # a boundary is a send only between ranks: ZB-V and DualPipe-V keep both chunks of the V's
    # turn on one rank, and pass the activation on locally (checked against the recorded p2p)
    owner = {ch.index: ch.rank for ch in chunks}
    table = padded_vocab(shape.vocab, tp, runtime) * shape.hidden // tp
    per_layer = {moe: layer_params(shape, tp, ep, moe) for moe in ((False, True) if shape.moe else (False,))}
    frames = []
    for rank, mine in enumerate(by_rank(chunks, pp)):
        layers: dict[bool, int] = {}
        dense = other = expert = 0
        blocks_dense, blocks_expert = [], []
        root = 0
        for chunk in mine:
            for (moe, _), count in _chunk_kinds(shape, chunk.first_layer, chunk.layers, "none", None):
                if count:
                    layers[moe] = layers.get(moe, 0) + count
            if chunk.embedding:
                other += table + shape.position_params
                root += table + shape.position_params
            if chunk.output:  # the final norm and head, and multi-token prediction's own
                linear, own = output_params(shape, chunk, tp, table)
                dense += linear
                other += own
                root += linear + own
            dense_runs, expert_runs = _chunk_blocks(shape, chunk, per_layer, table, experts_folded(runtime, tp, ep),
                                                    tp)
            blocks_dense.append(dense_runs)
            blocks_expert.append(expert_runs)
        for moe, count in layers.items():
            p = per_layer[moe]
            dense += count * p.linear
            other += count * p.other
            expert += count * p.expert
        frames.append((mine, dict(
            embedding=any(ch.embedding for ch in mine), output=any(ch.output for ch in mine),
            chunks=len(mine), sends_f=sum(1 for ch in mine if owner.get(ch.index + 1, rank) != rank),
            sends_b=sum(1 for ch in mine if owner.get(ch.index - 1, rank) != rank),
            params_dense=dense + other, params_expert=expert,
            blocks_dense=tuple(blocks_dense), blocks_expert=tuple(blocks_expert), params_root=root,
            params_other=other, roots=sum(1 for ch in mine if ch.embedding or ch.output) if pp > 1 else 1)))
    return tuple(frames)


def experts_folded(runtime: str, tp: int, ep: int) -> bool:
    """Whether parc's job keeps the routed experts with their layer's dense parameters: without
    ep and tp they have no mesh of their own (parallel.py's expert grid), so they sit in their
    block's FSDP2 unit, or its zero1 bucket, and are reduced and gathered with it."""
    return runtime == "torch" and tp == 1 and ep == 1


def plain_alone(data_ranks: int, tp: int, ep: int, sharding: str) -> bool:
    """Whether parc's job, computing in fp32, skips fully_shard and trains plain tensors: one data
    rank (no gradient to reduce), no tp (FSDP turns tp's partial gradients into their parameters'
    placements), no ep (experts have their own data mesh); zero1 keeps its buckets over FSDP. The
    generated job (backends/torch/runtime.py) and `dp_copy_bytes` both read this one rule."""
    return data_ranks == 1 and tp == 1 and ep == 1 and sharding != "zero1"


def _chunk_blocks(shape: Shape, chunk, per_layer: dict, table: int, folded: bool = False,
                  tp: int = 1) -> tuple[Runs, Runs]:
    """A chunk's blocks as zero1's buckets see them (`bucket_count`): the embedding, each layer's
    dense parameters, the head; and each MoE layer's routed experts, or, `folded` (no expert
    grid: `experts_folded`), each MoE layer's experts inside its layer's block. Layers of one
    kind in a row are one run."""
    dense: list[tuple[int, int]] = []
    expert: list[tuple[int, int]] = []

    def add(runs: list, size: int, n: int = 1) -> None:
        if runs and runs[-1][0] == size:
            runs[-1] = (size, runs[-1][1] + n)
        elif n:
            runs.append((size, n))

    if chunk.embedding:
        add(dense, table + shape.position_params)
    if shape.moe:
        for moe, group in itertools.groupby(shape.moe[chunk.first_layer:chunk.first_layer + chunk.layers]):
            n = sum(1 for _ in group)
            if folded:
                add(dense, per_layer[moe].total, n)
                continue
            add(dense, per_layer[moe].linear + per_layer[moe].other, n)
            if per_layer[moe].expert:
                add(expert, per_layer[moe].expert, n)
    else:
        add(dense, per_layer[False].linear + per_layer[False].other, chunk.layers)
    if chunk.output:
        add(dense, sum(output_params(shape, chunk, tp, table)))
    return tuple(dense), tuple(expert)


@dataclass(frozen=True, slots=True)
class RankTimes:
    """Seconds one pipeline rank spends on one micro-batch (all its chunks), and what it sends."""

    forward: float
    backward_input: float
    backward_weight: float
    recompute: float
    exposed_f: tuple[float, float, float, float]
    """Exposed seconds in the forward on tp, cp, ep, pp."""
    exposed_b: tuple[float, float, float, float]
    sent: tuple[float, float, float, float]
    """Bytes this GPU sends per micro-batch on tp, cp, ep, pp."""
    chunks: int = 1
    params_dense: int = 0
    params_expert: int = 0
    blocks_dense: tuple = ()
    """Per chunk, its dense blocks (`Load.blocks_dense`): zero1's buckets."""
    blocks_expert: tuple = ()
    params_root: int = 0
    params_other: int = 0
    """`Load.params_other`: the dense parameters no fp8 linear holds."""
    layers: int = 0
    """Transformer layers the rank holds (FSDP2 gathers and reduces each on its own)."""
    moe_layers: int = 0
    """Of which MoE layers: the FSDP units that hold experts."""
    collectives: tuple[Collective, ...] = ()
    """The tp, cp, ep and pp collectives of one micro-batch on this rank (every piece's records
    times its layers, the pipeline's sends, full recomputation's forward calls again)."""
    layer_times: tuple = ()
    """(forward, backward) seconds of one dense layer and of one MoE layer (None where the
    model has none), exposed communication included, without recomputation: the windows
    activation offloading's copies hide under (`offload_exposed`)."""
    roots: int = 1
    """`Load.roots`: the rank's FSDP root units."""
    recompute_exposed: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Of `exposed_b`, the seconds on tp, cp, ep the recomputation's own collectives leave
    exposed (a weight pass that recomputes again repeats them: `weight_pass_recomputes`)."""
    pp_windows: tuple[int, int] = (0, 1)
    """The window (0 forward, 1 backward) the forward sends and the backward sends keep the NIC
    busy in (`nic_busy`): their own, unless they run beside the next chunk (`pp_sends_exposed`:
    a forward send beside a backward, a backward send beside a forward)."""

    @property
    def compute(self) -> float:
        return self.forward + self.backward_input + self.backward_weight

    @property
    def total(self) -> float:
        return self.compute + self.recompute + sum(self.exposed_f) + sum(self.exposed_b)


RANK_AXES = ("tp", "cp", "ep", "pp")


def piece_of(work: Work, x: Exposed, mode: str, selective: str) -> tuple[float, ...]:
    """One piece's contribution: f, b, w, recompute, exposed f (tp, cp, ep), exposed b, sent.
    Uncached: search's bounds keep their own per layer shape (`Engine._pieces`), and hashing a
    fresh `Work` for a cache it never hits again cost more than the sums (`_piece` is the
    cached one, for the step time's repeated pieces)."""
    f_tp, f_cp, f_ep = x.tp_f, x.cp_f, x.ep_f
    b_tp, b_cp, b_ep = x.tp_b, x.cp_b, x.ep_b
    s_tp, s_cp, s_ep = x.tp_sent[0] + x.tp_sent[1], x.cp_sent[0] + x.cp_sent[1], x.ep_sent[0] + x.ep_sent[1]
    rec = 0.0
    if mode == "full":  # the forward again, its communication included, before the backward
        # (but for what the runtime keeps from the forward: `Software.moe_counts_kept`)
        rec = work.forward - work.replay_host
        b_tp, b_cp, b_ep = b_tp + f_tp, b_cp + f_cp, b_ep + f_ep - x.ep_kept[0]
        s_tp, s_cp, s_ep = s_tp + x.tp_sent[0], s_cp + x.cp_sent[0], s_ep + x.ep_sent[0] - x.ep_kept[1]
    elif mode == "selective" and selective == "elementwise":
        rec = work.selective_elementwise
    elif mode == "selective" and selective == TORCHTITAN_OP:
        rec = work.selective_torchtitan
    elif mode == "selective":
        modules = recompute_modules(selective)
        rec = (("core_attn" in modules) * work.selective_core + ("layernorm" in modules) * work.norms_again
               + ("mla_up_proj" in modules) * work.mla_up_again
               + (work.moe_again if "moe" in modules else ("moe_act" in modules) * work.moe_act_again)
               + ffn_recomputed(modules, work.moe) * work.ffn_again)
        if "moe" in modules and work.moe:  # the dispatch and combine again, before the backward
            b_ep, s_ep = b_ep + f_ep, s_ep + x.ep_sent[0]
    return (work.forward, work.backward_input, work.backward_weight, rec, f_tp, f_cp, f_ep,
            b_tp, b_cp, b_ep, s_tp, s_cp, s_ep)


_piece = lru_cache(maxsize=16384)(piece_of)


MEGATRON_MODULES = ("core_attn", "layernorm", "moe_act", "moe", "mla_up_proj", "mlp", "shared_experts")
"""Megatron-Core's `--recompute-modules` (`spec.RECOMPUTE_MODULES`), each charged: `Work`'s
`selective_core`, `norms_again`, `moe_act_again`, `moe_again`, `mla_up_again` and `ffn_again`."""


def ffn_recomputed(modules: frozenset[str], moe: bool) -> bool:
    """Whether Megatron-Core's `modules` run a layer's own FFN again (`Work.ffn_again`): a dense
    layer's under `mlp`; a MoE layer's shared experts under `shared_experts`, unless `moe` runs
    the whole layer (whose `moe_again` holds them)."""
    return ("shared_experts" in modules and "moe" not in modules) if moe else "mlp" in modules


@lru_cache(maxsize=64)
def recompute_modules(selective: str) -> frozenset[str]:
    """What `recompute selective` repeats as Megatron-Core's module names: "attention-core"
    (Megatron-LM's `--recompute-granularity selective` alone) is `core_attn`; "modules:a,b" is
    the list `--recompute-modules a b` names; parc's "elementwise" policy is none of them."""
    if selective == "attention-core":
        return frozenset({"core_attn"})
    if selective.startswith("modules:"):
        return frozenset(m for m in selective[len("modules:"):].split(",") if m in MEGATRON_MODULES)
    return frozenset()


def _recomputed(records: tuple[Collective, ...], kept: tuple[Collective, ...] = ()) -> list[Collective]:
    """Full recomputation runs the forward again before the backward, its collectives with it
    (but those the runtime keeps from the forward, `Exposed.kept`)."""
    return [replace(c, phase="recompute") for c in records if c.phase == "forward" and c not in kept]


def selective_replay(work: Work, records: tuple[Collective, ...], selective: str = "elementwise",
                     kept: tuple[Collective, ...] = ()) -> tuple[Collective, ...]:
    """The collectives selective recomputation issues again, per micro-batch (phase
    `recompute`); Megatron-Core's module policies' are `megatron_replay`; torchtitan's per-op
    policy's are `torchtitan_replay`.

    parc's policy (`SelectivePolicy` in backends/torch/templates/parallel.py.jinja)
    replays a block's forward in the backward up to the last tensor the backward needs (the FFN's
    activation), serving the saved ops (the Q/K/V and up-projection matmuls, the attention
    kernel, the token exchanges) from its cache and running everything else again, collectives
    included: tp's attention pair (the input's all-gather and the output projection's
    reduce-scatter under sp; the output projection's all-reduce without) and, under sp, the
    all-gather of each FFN input split over tp (the dense FFN, the shared experts); ep's
    expert-count exchange (an int64 all-to-all, needed for the dispatch's splits) unless the
    runtime keeps the forward's (`kept`, `Software.moe_counts_kept`: parc's job does). Not
    replayed: the FFN's down-projection and its reduction, which the backward does not need.
    Checked against the recorded moe-4d job (tests/e2e/test_collectives.py)."""
    if selective == TORCHTITAN_OP:
        return torchtitan_replay(work, records)
    if selective != "elementwise":
        return ()
    out: list[Collective] = []
    tp = _tp_record(work, records)
    if tp is not None:
        if work.tp_all_reduce[0]:
            out.append(Collective("tp", "all_reduce", work.tp_bytes, 1, tp.size, tp.local, "path", 1, "recompute"))
        else:
            gathers = work.tp_gather[0] // 2  # the f/g pairs: attention, and the FFN split over tp
            out += [Collective("tp", "all_gather", work.tp_gather_bytes or work.tp_bytes, gathers, tp.size, tp.local,
                               "path", gathers, "recompute"),
                    Collective("tp", "reduce_scatter", work.tp_bytes, 1, tp.size, tp.local, "path", 1, "recompute")]
    out += [replace(c, phase="recompute") for c in records
            if c.axis == "ep" and c.phase == "forward" and c.payload not in (work.ep_bytes, work.ep_dispatch_bytes)
            and c not in kept]
    return tuple(c for c in out if c.count > 0)


def forward_exposed_share(x: Exposed, tp: Link) -> float:
    """Of a piece's forward tp calls' seconds, the share its exposure leaves on the critical path
    (1 where nothing overlaps them): what a recomputation's replay of some of those calls shows,
    as the forward's show on average (a runtime that runs a forward gather beside its GEMM,
    Transformer Engine's userbuffers, runs the replayed one beside the same GEMM again)."""
    whole = sum(c.count * collective_seconds(c, tp) for c in x.collectives if c.axis == "tp" and c.phase == "forward")
    return min(1.0, x.tp_f / whole) if whole > 0 else 1.0


def megatron_replay(shape: Shape, case: LayerCase, work: Work, modules: frozenset[str], hw: Hardware,
                    tp: Link) -> tuple[Collective, ...]:
    """The tp collectives Megatron-Core's selective recomputation (`--recompute-modules`,
    `recompute_modules`) issues again, per layer and micro-batch (phase `recompute`). Each module
    is checkpointed whole and its forward runs again before its backward, collectives included:
    - `mlp` (a dense layer: `TransformerLayer.recompute_mlp`, `tensor_parallel.checkpoint` or
      `te_checkpoint` around the MLP module) and `shared_experts` (`SharedExpertMLP`), or `moe`
      (the whole `MoELayer`, its shared experts inside): the FFN's fc1 gathers its input under
      sequence parallelism (quantized where the gathers are, `Work.tp_gather_bytes`) and fc2
      reduce-scatters its output; without sequence parallelism fc2 all-reduces it.
    - `mla_up_proj` (`MLASelfAttention.qkv_up_checkpoint`, `CheckpointWithoutOutput` around
      `qkv_up_proj_and_rope_apply`): the column-parallel up projections gather their latents
      again under sequence parallelism (`Work.tp_latent_regather`'s bytes: the latents alone; the
      RoPE key is gathered before the checkpointed function, in multi_latent_attention.py).
    - Under per-tensor current scaling and NVFP4, those linears' amax all-reduces with them
      (`tp_amax_reductions`, `replayed`).
    `core_attn`, `layernorm` and `moe_act` hold no tp collective; the routed experts are not split
    over tp (`moe`'s dispatch and combine are replayed from the ep records, `rank_time`)."""
    if tp.size <= 1 or not work.tp_bytes:
        return ()
    ffn = (ffn_recomputed(modules, case.moe) or (case.moe and "moe" in modules)) \
        and (not case.moe or bool(shape.shared_experts))
    up = "mla_up_proj" in modules and bool(shape.mla)

    def again(kind: str, payload: float) -> Collective:
        return Collective("tp", kind, payload, 1, tp.size, tp.local, "path", 1, "recompute")

    out: list[Collective] = []
    if case.shard > 1:
        if ffn:
            out += [again("all_gather", work.tp_gather_bytes or work.tp_bytes), again("reduce_scatter", work.tp_bytes)]
        if up and work.tp_latent_regather:
            out.append(again("all_gather", work.tp_latent_regather))
    elif ffn:
        out.append(again("all_reduce", work.tp_bytes))
    return tuple(out) + tp_amax_reductions(shape, case, hw, tp, (up, ffn))


def _tp_record(work: Work, records: tuple[Collective, ...]) -> Collective | None:
    """The layer's forward tp collective on the activations (its group's size and locality), or
    None without tp."""
    return next((c for c in records if c.axis == "tp" and c.payload == work.tp_bytes and c.phase == "forward"), None)


def torchtitan_replay(work: Work, records: tuple[Collective, ...]) -> tuple[Collective, ...]:
    """The collectives torchtitan's per-op policy (`TORCHTITAN_OP`) issues again, per layer and
    micro-batch: its checkpoint replays the block's whole forward (`early_stop=False`), serving
    the ops on its save list from the cache, and `_get_default_save_ops` lists
    `reduce_scatter_tensor` and `all_to_all_single`: no reduce-scatter and no all-to-all (an MoE
    layer's dispatch and combine, and its expert-count exchange) runs again, for any layer.
    Replayed: the tp all-gathers (sp: the attention's input and the shared experts' or the
    dense FFN's, `tp_gather`'s forward half; without sp an MoE layer's routed result) and the
    all-reduces without sp (after wo and w2, torch's functional `all_reduce`). Without tp a
    block replays no collective."""
    tp = _tp_record(work, records)
    if tp is None:
        return ()
    sp = work.tp_all_reduce[0] == 0
    gathers = work.tp_gather[0] // 2 if sp else work.tp_gather[0]
    # the gathers carry what the forward's did (`Work.tp_gather_bytes`: quantized inputs under fp8)
    calls = (("all_reduce", work.tp_all_reduce[0], work.tp_bytes),
             ("all_gather", gathers, work.tp_gather_bytes or work.tp_bytes))
    return tuple(Collective("tp", kind, size, count, tp.size, tp.local, "path", count, "recompute")
                 for kind, count, size in calls if count > 0)


class RankPieces(NamedTuple):
    """Everything a pipeline rank's per-micro-batch times are summed from besides its `Load`:
    one layout's pieces, the same for all its ranks (`_rank_times` builds it once and sums each
    distinct load over it, `rank_time`)."""

    dense: tuple | None
    """A dense layer's (Work, Exposed, selective replay, its (tp, ep) seconds); None without one."""
    moe: tuple | None
    """An MoE layer's, as `dense`; None in a dense model."""
    emb: tuple
    """The embedding's (Work, Exposed)."""
    out: tuple
    """The output layer's (Work, Exposed)."""
    pp_send: float
    """Seconds of one activation's (or gradient's) send across a chunk boundary (0 without pp)."""
    boundary: float
    """Bytes of that send."""
    selective: str
    """`Software.selective`: which modules selective recomputation runs again."""
    pp_link: Link | None = None
    """The pipeline's link: the sends' records and the SM share an overlapped send holds (None:
    none recorded, and an overlapped send charged as a free copy)."""
    pp_overlap: str = "none"
    """`Software.pp_overlap`: which sends of a multi-chunk rank run beside the next chunk."""


PP_OVERLAPS = ("none", "all", "backward")
"""`Software.pp_overlap`'s values."""


def sends_overlapped(load: Load, overlap: str) -> bool:
    """Whether some of the rank's sends run beside its next chunk (`pp_sends_exposed` charges them
    after the rank's computation is summed; search's sums do the same)."""
    if overlap not in PP_OVERLAPS:
        raise ValueError(f"pp_overlap {overlap!r}: one of {PP_OVERLAPS}")
    return load.chunks > 1 and overlap != "none"


def pp_windows(load: Load, overlap: str) -> tuple[int, int]:
    """`RankTimes.pp_windows`: where a rank's forward and backward sends occupy its NIC."""
    if not sends_overlapped(load, overlap):
        return 0, 1
    return (1 if overlap == "all" else 0), 0


def pp_sends_exposed(load: Load, send: float, share: float, overlap: str, forward: float,
                     backward: float) -> tuple[float, float]:
    """Seconds a rank's chunk-boundary sends add to its micro-batch, (forward, backward), of
    `send` seconds each: the whole transfer where the rank waits for it (a single-chunk rank,
    `overlap` "none", the forward sends under "backward"), else what outlasts the chunk of
    computation it runs beside, at the link's SM `share` (`kernels.overlap_exposed`, the one rule
    of every overlap). Megatron-Core's interleaved steady state runs a forward step and then a
    backward step, posting each one's send before the other: a forward send runs beside a
    chunk's backward (its recomputation included), a backward send beside a chunk's forward
    (`forward`, `backward`: the rank's per micro-batch, over its chunks)."""
    if not sends_overlapped(load, overlap):
        return load.sends_f * send, load.sends_b * send
    beside_forward = kernel_model.overlap_exposed(forward / load.chunks, send, share * send)
    beside_backward = kernel_model.overlap_exposed(backward / load.chunks, send, share * send)
    return load.sends_f * (beside_backward if overlap == "all" else send), load.sends_b * beside_forward


def rank_time(load: Load, pieces: RankPieces) -> RankTimes:
    """One pipeline rank's per-micro-batch times: its load's layer counts times the layout's
    `pieces`, its embedding, output layer and chunk-boundary sends."""
    dense, moe, emb, out, pp_send, boundary, selective, pp_link, pp_overlap = pieces
    layer_times = tuple(None if p is None else _layer_seconds(_piece(p[0], p[1], "none", selective))
                        for p in (dense, moe))
    acc = [0.0] * 13
    again = [0.0] * 3  # the recomputation's exposed tp, cp, ep
    records: list[Collective] = []
    for is_moe, mode, count in load.pieces:
        work, x, replay, (replay_tp, replay_ep) = moe if is_moe else dense
        piece = _piece(work, x, mode, selective)
        for i, value in enumerate(piece):
            acc[i] += count * value
        if mode != "none":  # what the mode adds to the backward's exposure is the recomputation's
            plain = _piece(work, x, "none", selective)
            for i in range(3):
                again[i] += count * (piece[7 + i] - plain[7 + i])
        records += [c.scaled(count) for c in x.collectives]
        if mode == "full":
            records += [c.scaled(count) for c in _recomputed(x.collectives, x.kept)]
        elif mode == "selective" and is_moe and "moe" in recompute_modules(selective):
            # the dispatch and combine again (their seconds are `_piece`'s), then the tp calls
            records += [c.scaled(count) for c in _recomputed(x.collectives) if c.axis == "ep"]
        if mode == "selective" and replay:
            records += [c.scaled(count) for c in replay]
            acc[7] += count * replay_tp  # exposed backward tp, ep; bytes sent on tp, ep
            acc[9] += count * replay_ep
            again[0] += count * replay_tp
            again[2] += count * replay_ep
            acc[10] += count * sum(c.count * c.sent for c in replay if c.axis == "tp")
            acc[12] += count * sum(c.count * c.sent for c in replay if c.axis == "ep")
    for present, (work, x) in ((load.embedding, emb), (load.output, out)):
        if present:
            for i, value in enumerate(_piece(work, x, "none", selective)):
                acc[i] += value
            records += x.collectives
    pp_f, pp_b = pp_sends_exposed(load, pp_send, pp_link.sm_share if pp_link is not None else 0.0, pp_overlap,
                                  acc[0], acc[1] + acc[2] + acc[3])
    if pp_send and pp_link is not None:
        records += [Collective("pp", "send", boundary, n, pp_link.size, pp_link.local, "path", n, phase)
                    for phase, n in (("forward", load.sends_f), ("backward", load.sends_b)) if n]
    return RankTimes(forward=acc[0], backward_input=acc[1], backward_weight=acc[2], recompute=acc[3],
                     exposed_f=(acc[4], acc[5], acc[6], pp_f), exposed_b=(acc[7], acc[8], acc[9], pp_b),
                     sent=(acc[10], acc[11], acc[12], (load.sends_f + load.sends_b) * boundary if pp_send else 0.0),
                     chunks=load.chunks, params_dense=load.params_dense, params_expert=load.params_expert,
                     blocks_dense=load.blocks_dense, blocks_expert=load.blocks_expert, params_root=load.params_root,
                     params_other=load.params_other,
                     layers=sum(count for _, _, count in load.pieces),
                     moe_layers=sum(count for is_moe, _, count in load.pieces if is_moe), collectives=merged(records),
                     layer_times=layer_times, recompute_exposed=tuple(again),
                     roots=load.roots, pp_windows=pp_windows(load, pp_overlap))


def _layer_seconds(piece: tuple[float, ...]) -> tuple[float, float]:
    """(forward, backward) of one layer from `piece_of`'s sums: compute and exposed tp, cp, ep."""
    return (piece[0] + piece[4] + piece[5] + piece[6],
            piece[1] + piece[2] + piece[7] + piece[8] + piece[9])


def dispatched(w: Work, shape: Shape, hw: Hardware, sw: Software) -> Work:
    """An MoE layer's work as the runtime's dispatcher runs it: the flex dispatcher's (DeepEP's,
    Hybrid-EP's) node-limited fan-out and SM share, and the host's read of the token counts
    (search's bound reads the same)."""
    if sw.ep_dispatcher in kernel_model.DISPATCHER_SMS:
        w = replaced(w, ep_fanout=(shape.experts, shape.top_k, sw.ep_node_limit),
                    ep_sm_share=min(1.0, kernel_model.DISPATCHER_SMS[sw.ep_dispatcher] / max(1, hw.sms)))
    if sw.moe_host_sync:
        # the dispatcher's read of the token counts drains the GPU once per forward; the backward
        # starts drained and runs at the slower of the host's launches and the GPU's kernels
        stall = kernel_model.host_stall_seconds(w.launches_f + kernel_model.DISPATCHER_OPS, w.forward,
                                                sw.host_op_seconds)
        paced = kernel_model.host_paced_seconds(w.launches_b + kernel_model.DISPATCHER_BACKWARD_OPS,
                                                w.backward_input + w.backward_weight, sw.host_op_seconds)
        w = replaced(w, memory_f=w.memory_f + stall, memory_b=w.memory_b + paced,
                     replay_host=kernel_model.HOST_SYNC_SECONDS if sw.moe_counts_kept else 0.0)
    return w


def regathered(w: Work, sw: Software) -> Work:
    """The piece's work with the backward re-gather of each column-parallel layer's saved
    sharded input, where the runtime does it (`Software.tp_regather`; sequence parallelism only:
    without it the saved input is the whole sequence already).

    Megatron-LM's `LinearWithGradAccumulationAndAsyncCommunication.forward`
    (megatron/core/tensor_parallel/layers.py) all-gathers the sequence-parallel input for the
    GEMM but saves the sharded `input`; its backward issues `_all_gather_base(..., async_op=True)`
    of it, runs the input-gradient GEMM (`grad_output.matmul(weight)`) meanwhile ("we rely on
    CUDA_DEVICE_MAX_CONNECTIONS=1 to ensure that the all-gather is scheduled before the input
    gradient computation"), waits, then reduce-scatters the input gradient asynchronously beside
    the weight-gradient GEMM. Transformer Engine's `LayerNormLinear` and `Linear` do the same
    (`ln_out_needs_gather` / `backward_input_needs_gather`: `gather_along_first_dim(...,
    async_op=True)` before the dgrad GEMM, `ln_out_total_work.wait()` before the wgrad GEMM),
    and under userbuffers (`--tp-comm-overlap`, `ub_bulk_dgrad`) the same all-gather is the
    "bulk" overlap of the dgrad GEMM (`fill_userbuffers_buffer_for_all_gather`,
    `bulk_overlap=ctx.ub_bulk_dgrad`; TE's default method table in module/base.py
    `initialize_ub`: qkv_dgrad and fc1_dgrad bulk, as NeMo's and Megatron-Bridge's tp overlap
    configs keep). So each column-parallel GEMM (the ones whose input gradient is
    reduce-scattered, `tp_partners`) adds one all-gather of `tp_bytes` to the backward, paired
    with that layer's input-gradient GEMM (kind `REGATHER` in `Work.tp_gemms`; the layer's
    weight-gradient GEMM already hosts the reduce-scatter, so no GEMM hosts two calls). The
    output layer (Megatron-Core's `ColumnParallelLinear`) is the same autograd function."""
    if not sw.tp_regather:
        return w
    columns = [g for phase, kind, g in w.tp_gemms if phase == "backward" and kind == "reduce_scatter"]
    if not columns:
        return w
    return replaced(w, tp_regather=len(columns),
                    tp_gemms=w.tp_gemms + tuple(("backward", REGATHER, g) for g in columns))


def runtime_work(w: Work, moe: bool, shape: Shape, hw: Hardware, sw: Software, c: Constants) -> Work:
    """A layer's work as the runtime runs it: its kernels' speed (`slowed`), its backward
    re-gathers (`regathered`) and, for an MoE layer, its dispatcher (`dispatched`, on the slowed
    work). The one entry the time model and search's bounds share."""
    w = regathered(slowed(w, sw, c), sw)
    return dispatched(w, shape, hw, sw) if moe else w


def rank_times(shape: Shape, k: Knobs, hw: Hardware, geo: Geometry, c: Constants,
               sw: Software) -> tuple[tuple[Load, ...], dict[Load, RankTimes]]:
    """Every pipeline rank's load, and the per-micro-batch times of each distinct load. Cached
    on everything but the micro-batch count and the sharding, which only the step's sum uses."""
    return _rank_times(shape, per_rank_knobs(k), hw, geo, c, sw)


RANK_KNOBS = ("tp", "pp", "cp", "ep", "virtual_stages", "schedule", "split", "cp_flavour", "seq", "micro_batch",
              "precision", "recompute", "recompute_layers", "runtime")
"""The `Knobs` fields a pipeline rank's per-micro-batch times read (`_rank_times`), besides
sequence parallelism as in effect (`Knobs.sp`). Not among them: the dp degree and sharding (the
replicas' own groups are the `Geometry`'s), the micro-batch count per step (only the step's sum
reads it), the optimizer and the memory model's own fields."""

_rank_knobs_read = attrgetter(*RANK_KNOBS, "sp")


def per_rank_knobs(k: Knobs) -> Knobs:
    """`k` with every field outside `RANK_KNOBS` at its default (dp 1) and sequence parallelism as
    in effect: `_rank_times`' key, so layouts that differ only elsewhere share one entry. One
    object per distinct key (`_rank_knobs`): building a `Knobs` costs some 7 us, as much as a
    warm `step_time`'s share of the whole lookup, and the cache then finds its key by identity."""
    return _rank_knobs(_rank_knobs_read(k))


@lru_cache(maxsize=16384)
def _rank_knobs(values: tuple) -> Knobs:
    """The `Knobs` of `RANK_KNOBS`' `values` followed by `Knobs.sp` (`per_rank_knobs`)."""
    *kept, sp = values
    return Knobs(dp=1, sequence_parallel=sp, **dict(zip(RANK_KNOBS, kept, strict=True)))


@lru_cache(maxsize=16384)
def _rank_times(shape: Shape, k: Knobs, hw: Hardware, geo: Geometry, c: Constants,
                sw: Software) -> tuple[tuple[Load, ...], dict[Load, RankTimes]]:
    """`rank_times` of knobs normalised by `per_rank_knobs` (the cache's key)."""
    loads = rank_loads(shape, Chunking.of(k), k.recompute, k.recompute_layers)
    links = (link(geo.tp, hw, c), link(geo.cp, hw, c), link(geo.ep, hw, c))
    overlap_ep = k.schedule == "dualpipe-v" or sw.ep_overlap
    sp = k.sp
    sp_on = sp and k.tp > 1
    tokens = k.seq * k.micro_batch / k.cp
    tp_l, ep_l = links[0], links[2]
    pieces = []
    for moe in (False, True):
        if moe and not shape.moe:
            pieces.append(None)
            continue
        case = LayerCase.of(k, moe, sw)
        w = runtime_work(layer_work(shape, case, hw, c), moe, shape, hw, sw, c)
        # the piece's calls besides its tp pairs, cp and ep exchanges (`piece_collectives`' `extra`)
        extra = (dispatch_metadata(shape, sw, ep_l, tokens / k.tp) if moe else ()) \
            + tp_amax_reductions(shape, case, hw, tp_l)
        if moe and tp_l.size > 1 and sw.dp_runtime == "torch":
            # each tp rank routes its own tokens: the router's gradient is summed over tp per
            # micro-batch (the runtime's SumGradient), in the compute dtype
            extra += (Collective("tp", "all_reduce", ACT * shape.experts * shape.hidden, 1, tp_l.size,
                                 tp_l.local, "path", 1, "backward"),)
        calls = tp_calls("moe" if moe else "dense", sp_on, k.tp, w)
        kept = tuple(r for r in extra if r.axis == "ep") if sw.moe_counts_kept else ()
        x = exposed(w, *links, overlap_ep, sw.tp_overlap, c, calls, extra, kept,
                    moe and overlaps_shared_experts(sw, shape, k.tp))
        modules = recompute_modules(sw.selective)
        if modules:  # Megatron-Core's modules: their tp calls as exposed as the forward's are
            replay = megatron_replay(shape, case, w, modules, hw, tp_l)
            share = forward_exposed_share(x, tp_l)
        else:
            replay, share = selective_replay(w, x.collectives, sw.selective, kept), 1.0
        seconds = tuple(sum(r.count * collective_seconds(r, tp_l if axis == "tp" else ep_l)
                            for r in replay if r.axis == axis) for axis in ("tp", "ep"))
        pieces.append((w, x, replay, (seconds[0] * share, seconds[1])))
    split = TokenSplit(k.tp, sp, k.cp, k.seq, k.micro_batch)
    emb = slowed(embedding_work(shape, split, hw, c), sw, c)
    out = regathered(slowed(output_work(shape, split, padded_vocab(shape.vocab, k.tp, k.runtime), "bf16",
                                        sw.loss_kernels, hw, c), sw, c), sw)
    # vocabulary-parallel cross-entropy: the max, the sum of exponentials and the target logit
    # of every token all-reduced over tp in fp32 (torch's loss_parallel, Megatron-LM's alike)
    loss = ((Collective("tp", "all_reduce", FP32 * tokens, 3, tp_l.size, tp_l.local, "path", 3, "forward"),)
            if tp_l.size > 1 else ())
    emb = (emb, exposed(emb, *links, False, sw.tp_overlap, c,
                        tp_calls("embedding", sp_on, k.tp, emb)))
    out = (out, exposed(out, *links, False, sw.tp_overlap, c,
                        tp_calls("output", sp_on, k.tp, out), loss))
    boundary = ACT * tokens * shape.hidden / k.tp
    pp_link = link(geo.pp, hw, c)
    pp_send = pp_link.send(boundary) if k.pp > 1 else 0.0
    summed = RankPieces(pieces[0], pieces[1], emb, out, pp_send, boundary, sw.selective, pp_link, sw.pp_overlap)
    times = {load: rank_time(load, summed) for load in dict.fromkeys(loads)}
    return loads, times


# ---------------------------------------------------------------------------------------------
# The bubble


def bubble_seconds(schedule: str, pp: int, f: float, b: float, w: float) -> float:
    """Idle time of the slowest rank in one step. `f`, `b`, `w`: one chunk's forward, input
    backward (recomputation included) and weight backward for one micro-batch.

    - gpipe, 1f1b, interleaved-1f1b: (p - 1)(F + B + W); per chunk, so interleaving v chunks
      divides the bubble by v (Narayanan et al. 2021): fraction (p - 1) / (v m).
    - interleaved-zb (ZB1P, Qi et al. 2023, "Zero Bubble Pipeline Parallelism", ZB-H1):
      (p - 1)(F + B - W): the deferred weight backwards fill the cool-down.
    - zbv (ZB-V, Qi et al. 2023, arXiv v2): (p - 1)(F + B - 2W), zero when F = B = W.
    - dualpipe-v (DeepSeek-AI 2024, DeepSeek-V3 report, Table 2, with PP/2 - 1 = p - 1 for the V
      variant on p ranks): (p - 1)(F&B + B' - 3W), F&B the overlapped forward-and-backward pair
      = F + B + W and B' the full backward B + W: (p - 1)(F + 2B - W).
    Never negative."""
    if pp <= 1:
        return 0.0
    return (pp - 1) * stage_bubble(schedule, f, b, w)


def stage_bubble(schedule: str, f: float, b: float, w: float) -> float:
    """`bubble_seconds` per stage beyond the first (its (p - 1) factor left out), never
    negative. The search's bound takes the least over a pipeline's ranks of this once per
    schedule and scales it by p - 1: the factor is positive, so the least is the same rank's."""
    if schedule == "interleaved-zb":
        per = f + b - w
    elif schedule == "zbv":
        per = f + b - 2 * w
    elif schedule == "dualpipe-v":
        per = f + 2 * b - w
    else:
        per = f + b + w
    return max(0.0, per)


def bubble_terms(schedule: str) -> tuple[float, float, float]:
    """`stage_bubble`'s per-stage figure before it is clipped at zero, as its factors on F, B and
    W: `stage_bubble(s, f, b, w) == max(0, cf f + cb b + cw w)` (tests/test_search_speed_exact.py
    checks the two agree). Linear, so a rank's figure is the sum of its layers' figures: the
    search bounds the least rank's bubble from the least figure of a layer
    (`Engine.member_bound`)."""
    if schedule == "interleaved-zb":
        return (1.0, 1.0, -1.0)
    if schedule == "zbv":
        return (1.0, 1.0, -2.0)
    if schedule == "dualpipe-v":
        return (1.0, 2.0, -1.0)
    return (1.0, 1.0, 1.0)


@lru_cache(maxsize=4096)
def weight_passes(schedule: str, pp: int, v: int, m: int, rank: int) -> int:
    """Weight passes (W actions) pipeline rank `rank` runs apart from their input passes in one
    step, over its chunks: every chunk and micro-batch under interleaved-zb and zbv, and under
    dualpipe-v only those its cool-down splits (2 pp - 1 - rank once m >= 2 pp; the rest run
    whole backwards). From the action orders the memory model walks (`memory.schedules.actions`,
    torch 2.13's, tests/test_memory_schedules.py)."""
    from .memory import schedules as orders

    if pp <= 1 or schedule not in orders.ZERO_BUBBLE:
        return 0
    return sum(1 for kind, _ in orders.actions(schedule, pp, v, m, rank) if kind == orders.W)


def recomputed_again(k: Knobs, sw: Software, v: int, rank: int) -> float:
    """Micro-batches' worth of the rank's recomputation its weight passes run a second time
    (`Software.weight_pass_recomputes`): each split backward recomputes one chunk's blocks again,
    a 1 / v share of a micro-batch's recomputation over the rank's v chunks."""
    if not sw.weight_pass_recomputes or k.recompute == "none":
        return 0.0
    return weight_passes(k.schedule, k.pp, v, k.microbatches, rank) / v


ZERO_BUBBLE = ("interleaved-zb", "zbv")
REPLAY_RANKS = 8
"""Pipelines up to this deep are replayed exactly; deeper ones scale the replay at this depth."""


def runtime_bubble_seconds(schedule: str, pp: int, v: int, m: int, f: float, b: float, w: float) -> float:
    """The bubble of the order parc's runtime executes: what a step predicts.

    For gpipe, 1f1b and interleaved-1f1b torch's order idles exactly `bubble_seconds` (tested).
    The zero-bubble papers analyse their own hand-placed orders; torch 2.13's ZB schedules idle
    longer, so for those the step replays torch's action order (`compiler/schedule.py`) with
    these F, B, W on a pipeline of min(pp, 8) ranks and the same micro-batches per rank (up to
    4 rounds, beyond which the idle no longer changes), and scales the idle per extra rank to pp.
    That is exact up to 8 ranks; deeper, the idle grows with p - 1 as it does in the replays
    (within a few percent of the bubble when F > B). Never below the paper's figure, which
    search uses as its lower bound. DualPipe-V keeps the DeepSeek-V3 report's analysis: on GPUs
    it overlaps a forward with a backward, which a sequential replay cannot show."""
    paper = bubble_seconds(schedule, pp, f, b, w)
    if schedule not in ZERO_BUBBLE or pp <= 1 or b <= 0:
        return paper
    p0 = min(pp, REPLAY_RANKS)
    rounds = max(1, min(4, -(-m // pp)))
    per_rank = _replayed_idle_per_rank(schedule, p0, v, rounds, round(f / b, 3), round(w / b, 3))
    return max(paper, per_rank * b * (pp - 1))


@lru_cache(maxsize=8192)
def _replayed_idle_per_rank(schedule: str, pp: int, v: int, rounds: int, f: float, w: float) -> float:
    """Idle of torch's order per extra pipeline rank, in units of the input backward B."""
    from .schedule import Durations, makespan

    m = pp * rounds
    return (makespan(schedule, pp, v, m, Durations.uniform(pp, f, 1.0, w)) - m * v * (f + 1.0 + w)) / (pp - 1)


# ---------------------------------------------------------------------------------------------
# Data parallelism and the optimizer step


class DpLinks(NamedTuple):
    """The four links a rank's data-parallel traffic runs on (`rank_steps`, search's
    `_best_links`): one bundle for the functions that write the ledger and read it against them
    (`dp_ledger`, `dp_exposed`, `dp_windows`). A tuple, so its hash is the plain tuple's (a cache
    key no wider than the four links were) and `_dp_ledger`'s cache takes the links spread."""

    dense: Link
    """The dense parameters' data-parallel group (dp x cp x the ep axis)."""
    expert: Link
    """The routed experts' group (`Geometry.expert`, or `expert_tp` under parc's runtime)."""
    shard: Link
    """hsdp's shard group: the dense set's gathers and reduce-scatters under hsdp."""
    replicate: Link
    """hsdp's replicas: the sharded gradients' all-reduce under hsdp."""


def dp_ledger(r: RankTimes, k: Knobs, links: DpLinks, grad: int = PARC.grad_bytes,
              runtime: str = PARC.dp_runtime, gather: float = PARC.gather_bytes) -> tuple[Collective, ...]:
    """The data-parallel collectives of one rank over one step: what the runtime that moves them
    issues (`Software.dp_runtime`). Per parameter set P (dense over the dense group, or hsdp's
    shard group; experts over the expert group), `grad` bytes per reduced element, `PARAM` per
    gathered one, m micro-batches.

    parc's runtime ("torch", the table of docs/runtime.md, checked against the collectives the
    running job records in tests/e2e/test_collectives.py): FSDP2 for every sharding, so one call
    per FSDP unit; zero1 is a distributed optimizer over flat buckets, one per model chunk and
    parameter set (`chunks` per rank): one reduce-scatter of the fp32 gradients after the last
    backward and one all-gather of the updated parameters in the compute dtype per bucket and
    step (the same bytes as Megatron-LM's, in fewer, larger calls); under pp > 1 torch's stages
    reduce and reshard only after the last backward and `reshard_after_forward` is off, so every
    sharding gathers its weights once and reduces once per step. Otherwise as below.

    Megatron-LM ("megatron", the traffic contract of docs/time-model.md):

    - none (DDP): all-reduce of the gradients once per step (the last micro-batch; the others
      accumulate locally);
    - zero1: reduce-scatter of the gradients and all-gather of the updated parameters, once
      per step (Megatron-LM's distributed optimizer); under fp8 parameters (`--fp8-param-gather`)
      the fp8 linears' weights are gathered at `gather` bytes, the rest in bf16;
    - zero2: reduce-scatter every micro-batch, all-gather once per step;
    - zero3 (FSDP2): every micro-batch an all-gather before the forward, another before the
      backward only when `reshard_after_forward` is on (off under pp > 1, as torchtitan runs it;
      in parc's runtime never for the root unit, the embedding, final norm and output, which
      FSDP2 keeps gathered from its forward to its backward), and a reduce-scatter of the
      gradients;
    - hsdp: zero3 over the shard group plus one all-reduce of the sharded gradients over the
      replicas per step."""
    params_dense, params_expert = r.params_dense, r.params_expert
    if experts_folded(runtime, k.tp, k.ep):  # one set: the experts are in their layers' units
        params_dense, params_expert = params_dense + params_expert, 0
    pp = k.pp
    # the case built here, not by a classmethod: one Python call fewer per rank per `step_time`
    case = DpCase(params_dense, params_expert, r.layers, r.moe_layers or r.layers,
                  max(1, k.virtual_stages) if pp > 1 else 1, r.blocks_dense, r.blocks_expert, r.params_root,
                  k.microbatches, k.sharding, pp, k.bucket, grad, runtime, r.params_other, gather, r.roots)
    return _dp_ledger(case, *links)


class DpCase(NamedTuple):
    """What one rank's data-parallel ledger (`_dp_ledger`) reads besides its four links, as one
    hashable key: the rank's parameters as the runtime reduces and gathers them (`RankTimes`'
    counts, the experts folded into the dense set where `experts_folded`), the layout's sharding
    and step (`Knobs`), the bytes per reduced element and whose runtime moves them (`Software`).
    Narrower than `RankTimes` and `Knobs` themselves: layouts whose ranks differ only in
    seconds, or in knobs the ledger does not read, share one entry.

    A named tuple, not a slotted dataclass with its hash kept (as `LayerCase`): one is built per
    rank per `step_time` (`dp_ledger`) and hashed once, by the one lookup, so a kept hash saves
    nothing and its `__init__` and Python `__hash__` cost two calls per rank (measured on the
    search rows' call counts); the tuple's constructor and C hash cost less."""

    params_dense: int
    """Dense parameters on the rank (the routed experts' too where `experts_folded`)."""
    params_expert: int
    """Routed-expert parameters on the rank, reduced over the expert group (0 when folded)."""
    layers: int
    """Transformer layers on the rank: FSDP units of the dense set, with the root."""
    moe_layers: int
    """FSDP units of the expert set: the rank's MoE layers (its layers where none is MoE)."""
    chunks: int
    """Model chunks on the rank (virtual stages under pp, else 1): zero1's buckets without blocks."""
    blocks_dense: tuple
    """Per chunk, its dense blocks (`Load.blocks_dense`): zero1's buckets."""
    blocks_expert: tuple
    """Per chunk, its routed experts' blocks (`Load.blocks_expert`)."""
    params_root: int
    """The embedding, final norm and output (FSDP2's root unit, `Load.params_root`)."""
    microbatches: int
    """Micro-batches per step: how often the per-micro-batch collectives repeat."""
    sharding: str
    """`Knobs.sharding`: none, zero1, zero2, zero3 or hsdp."""
    pp: int
    """Pipeline degree: torch's stages reduce and reshard only after the last backward."""
    bucket: int
    """`Knobs.bucket`: zero1's elements per bucket as the spec writes it (0: the default)."""
    grad: int
    """`Software.grad_bytes`: bytes per reduced gradient element."""
    runtime: str
    """`Software.dp_runtime`: "torch" (FSDP2, parc's job) or "megatron"."""
    params_other: int
    """Of `params_dense`, those no fp8 linear holds (`Load.params_other`)."""
    gather: float
    """`Software.gather_bytes`: bytes per gathered element of an fp8 linear's weight where
    Megatron-LM's distributed optimizer gathers fp8 parameters (zero1) or torchtitan's FSDP2
    gathers float8 (`fsdp_gathered`)."""
    roots: int = 1
    """`RankTimes.roots`: the rank's FSDP root units (the dense set's units are its layers and these)."""


@lru_cache(maxsize=65536)
def _dp_ledger(case: DpCase, dense: Link, expert: Link, shard: Link, replicate: Link) -> tuple[Collective, ...]:
    """`dp_ledger` of its `DpCase` (the cache's key) on the four links."""
    mode, m, pp, grad, bucket, layers = case.sharding, case.microbatches, case.pp, case.grad, case.bucket, case.layers
    params_dense, chunks = case.params_dense, case.chunks
    # per parameter set: (elements, link, FSDP units, zero1's blocks, root unit, elements in bf16
    # beside fp8 parameters); the experts are all fp8 linears
    torch_runtime = case.runtime == "torch"
    sets = ((params_dense, shard if mode == "hsdp" else dense, layers + case.roots, case.blocks_dense, case.params_root,
             min(params_dense, case.params_other)),
            # torchao's float8 all-gather covers Float8Linear, not torchtitan's grouped experts
            (case.params_expert, expert, case.moe_layers, case.blocks_expert, 0,
             case.params_expert if torch_runtime else 0))
    out: list[Collective] = []
    units = layers + case.roots  # FSDP2 wraps each transformer layer, and each chunk's root (embedding, output)

    def fsdp_gathered(params: int, bf16: int) -> float:
        """Bytes FSDP2 gathers for `params` elements: torchtitan's float8 all-gather moves the
        float8 linears' weights at `case.gather` (1) and the rest (norms, routers, embedding,
        output: `bf16` of them) in bf16; every other FSDP gathers bf16 (Megatron-LM's torch FSDP2
        turns fp8 parameters off)."""
        return case.gather * (params - bf16) + PARAM * bf16 if torch_runtime else PARAM * params

    def add(kind: str, payload: float, count: int, lk: Link, window: str, calls: int = 0) -> None:
        """`payload` per logical collective, issued in calls: one per FSDP unit (every sharding
        in parc's runtime; zero2, zero3 and hsdp in Megatron-LM's), or per bucket (Megatron's
        DDP and distributed-optimizer flat buffers, `DP_BUCKET`), or as given. Each call pays
        the ring's per-step latency, which at a thousand ranks is milliseconds. Megatron's buckets
        hold the spec's `dp { bucket }` elements where it writes one (the job passes it as
        `--ddp-bucket-size`), else Megatron-Core's default (`zero1_bucket_size`)."""
        if payload > 0 and count > 0 and lk.size > 1:
            per_call = zero1_bucket_size(lk.size, bucket) * (grad if kind != "all_gather" else PARAM)
            if not calls:
                per_unit = torch_runtime or mode in ("zero2", "zero3", "hsdp")
                calls = max(1, units) if per_unit else max(1, math.ceil(payload / per_call))
            out.append(Collective("dp", kind, payload / calls, count * calls, lk.size, lk.local, window))

    for params, lk, units, blocks, root, bf16 in sets:  # experts: one FSDP unit per MoE layer
        if mode == "none":
            add("all_reduce", grad * params, 1, lk, "last_backward")
        elif mode == "zero1" and torch_runtime:  # buckets of whole blocks, per model chunk and parameter set
            cap = zero1_bucket_size(lk.size, bucket)
            buckets = sum(bucket_count(runs, cap) for runs in blocks) if blocks else chunks
            # the reduce-scatters overlap the last micro-batch's backward (each starts when its
            # bucket's gradients are in); the gathers follow the step
            add("reduce_scatter", grad * params, 1, lk, "last_backward", calls=max(1, buckets))
            add("all_gather", PARAM * params, 1, lk, "after_step", calls=max(1, buckets))
        elif mode == "zero1":
            add("reduce_scatter", grad * params, 1, lk, "last_backward")
            if case.gather != PARAM:
                # fp8 parameters: Megatron-LM keeps one buffer per dtype, the fp8 linears' uint8
                # beside the bf16 rest, each cut into buckets of the same element count
                elements = zero1_bucket_size(lk.size, bucket)
                calls = math.ceil((params - bf16) / elements) + math.ceil(bf16 / elements)
                add("all_gather", case.gather * (params - bf16) + PARAM * bf16, 1, lk, "after_step",
                    calls=max(1, calls))
            else:
                add("all_gather", PARAM * params, 1, lk, "after_step")
        elif torch_runtime and pp > 1:  # zero2, zero3, hsdp under torch's pipeline stages
            add("all_gather", fsdp_gathered(params, bf16), 1, lk, "after_step")
            add("reduce_scatter", grad * params, 1, lk, "last_backward")
        elif mode == "zero2":
            add("reduce_scatter", grad * params, m, lk, "backward")
            add("all_gather", fsdp_gathered(params, bf16), 1, lk, "after_step")
        else:
            add("all_gather", fsdp_gathered(params, bf16), m, lk, "forward")
            if pp <= 1 and torch_runtime and root and units > 1:
                # FSDP2 keeps the root (embedding, norm, output) gathered from its forward to
                # its backward: only the layers are gathered again
                add("all_gather", fsdp_gathered(params - root, bf16 - root), m, lk, "backward", calls=units - 1)
            elif pp <= 1:
                add("all_gather", fsdp_gathered(params, bf16), m, lk, "backward")
            add("reduce_scatter", grad * params, m, lk, "backward")
    units = layers + case.roots
    if mode == "hsdp" and replicate.size > 1 and params_dense:
        add("all_reduce", grad * params_dense / max(1, shard.size), 1, replicate, "last_backward")
    return tuple(out)


def collective_seconds(c: Collective, lk: Link) -> float:
    """One call's time on its link."""
    if c.kind == "all_reduce":
        return lk.all_reduce(c.payload)
    if c.kind == "all_to_all" and c.spread is not None:
        near, far = c.link_bytes()
        return max(near / lk.near, far / lk.far) + (c.size - 1) * lk.latency
    if c.kind == "all_to_all":
        return lk.all_to_all(c.payload)
    if c.kind == "send":
        return lk.send(c.payload)
    return lk.all_gather(c.payload)


def dp_exposed(r: RankTimes, k: Knobs, links: DpLinks, grad: int = PARC.grad_bytes,
               runtime: str = PARC.dp_runtime, serial: tuple[str, ...] = (),
               gather: float = PARC.gather_bytes) -> tuple[float, float]:
    """(exposed seconds, bytes sent) of one step's data-parallel communication on one rank.

    Each window is counted once: the collectives that share it (zero3's backward gather and its
    reduce-scatter under one micro-batch's backward; the dense and the expert sets; the last
    micro-batch's per-micro-batch traffic and the once-per-step reductions under that same
    backward; the post-step gather and the first micro-batch's forward gather under one forward)
    queue on the same link, and only what their sum exceeds the window by shows.

    FSDP's per-unit collectives add the fill of a two-stage pipeline (`fsdp_fill`): the first
    unit's gather has no computation before it, the last unit's reduce-scatter none after it.
    The once-per-step windows in `serial` (`serial_windows`), which nothing hides, are charged whole."""
    ledger = dp_ledger(r, k, links, grad, runtime, gather)
    back = r.backward_input + r.backward_weight + r.recompute
    return _dp_exposed(ledger, k.microbatches, r.forward, back, links, nic_busy(r, links.dense), serial)


def serial_windows(sw: Software, pp: int) -> tuple[str, ...]:
    """The once-per-step data-parallel windows whose calls no computation hides, so that all
    their seconds show:

    - without `Software.dp_overlap` (Megatron-LM before --overlap-grad-reduce) the gradients'
      reduction after the forward-backward and the parameters' gather before the next one;
    - under torch.distributed.pipelining (`Software.pp_reduce_waits`: parc's job and torchtitan
      with pp > 1, FSDP2's data parallelism) the gradients' reduction: the schedule's REDUCE_GRAD action, placed right after a stage's last backward
      (`schedules._add_reduce_grad`), issues every FSDP unit's reduce-scatter at once
      (`PipelineStage.perform_reduce_grad`: `post_backward` of each group) and then makes the
      compute stream wait for them (`_root_post_backward_final_callback` -> `finalize_backward`
      waits on each group's post-reduce event), so the rank's next computation, another
      chunk's backward or the optimizer step, starts only when they are done. The updated
      parameters' gather stays hidden: the schedule's UNSHARD actions start it ahead of each
      chunk's first forward (`fsdp_fill` charges the first one)."""
    if not sw.dp_overlap:
        return ("last_backward", "after_step")
    if sw.dp_runtime == "torch" and sw.pp_reduce_waits and pp > 1:
        return ("last_backward",)
    return ()


def nic_busy(r: RankTimes, lk: Link) -> tuple[float, float]:
    """Seconds of one micro-batch's forward and backward (recomputation included) windows that
    the tp, cp, ep and pp collectives keep this GPU's NIC share busy (an overlapped pipeline
    send in the window it runs beside, `RankTimes.pp_windows`): per axis, its NIC bytes
    (`Collective.link_bytes`) at the NIC's rate (`lk.far`, the bandwidth of a link that crosses
    nodes), less the part of it the axis leaves exposed (that part lengthens the step outside
    the window). Data-parallel traffic hidden under those windows queues behind them on the
    same NIC (issue 14, point 3), so only the rest of the window can hide it."""
    if lk.far <= 0:
        return 0.0, 0.0
    nic = {(axis, phase): 0.0 for axis in RANK_AXES for phase in (0, 1)}
    for c in r.collectives:
        if c.axis in RANK_AXES:
            chosen = lk.all_reduce_choice(c.payload)[1] if c.kind == "all_reduce" else "ring"
            nic[(c.axis, 0 if c.phase == "forward" else 1)] += (
                c.micro * c.link_bytes((False, chosen == "sharp"))[1] / lk.far)
    exposed = (r.exposed_f, r.exposed_b)
    # each axis's time in its own phase's window, but pipeline sends that run beside the next
    # chunk, which keep the NIC busy in that chunk's window (`RankTimes.pp_windows`)
    return tuple(sum(max(0.0, nic[(axis, phase)] - exposed[phase][i])
                     for i, axis in enumerate(RANK_AXES) for phase in (0, 1)
                     if (r.pp_windows[phase] if axis == "pp" else phase) == window)
                 for window in (0, 1))


@lru_cache(maxsize=65536)
def _dp_exposed(ledger: tuple[Collective, ...], m: int, forward: float, back: float, links: DpLinks,
                busy_nic: tuple[float, float] = (0.0, 0.0), serial: tuple[str, ...] = ()) -> tuple[float, float]:
    """`dp_exposed` of a ledger on its four `links`, under windows of `forward` and `back`
    seconds of which `busy_nic` the other axes' traffic holds the NIC (`nic_busy`)."""
    windows = dp_windows(ledger, m, links)
    return dp_window_exposure(windows, m, forward, back, busy_nic, serial), windows[3]


def dp_windows(ledger: tuple[Collective, ...], m: int,
               links: DpLinks) -> tuple[dict, dict, tuple[float, float, int], float, dict]:
    """What `_dp_exposed` reads of the ledger, which the computation's lengths do not change:
    (busy seconds per window, whether the window's traffic crosses the NIC, (FSDP units per
    micro-batch of the forward and the backward window, post-step gathers per step), bytes sent
    per step, and per window its calls' seconds times the share of the SMs NCCL holds for them
    (`Link.sm_share`, `kernels.overlap_exposed`)). Search's bounds keep it per rank parameters
    and sharding and charge many forward and backward lengths against it (`Engine._rank_tail`)."""
    dense, expert, shard, replicate = links
    links = {(dense.size, dense.local): dense, (expert.size, expert.local): expert,
             (shard.size, shard.local): shard, (replicate.size, replicate.local): replicate}
    busy = dict.fromkeys(("forward", "backward", "last_backward", "after_step"), 0.0)
    on_nic = dict.fromkeys(busy, False)
    occupied = dict.fromkeys(busy, 0.0)
    for c in ledger:
        reps = m if c.window in ("forward", "backward") else 1
        lk = links[(c.size, c.local)]
        seconds = c.count / reps * collective_seconds(c, lk)
        busy[c.window] += seconds
        occupied[c.window] += seconds * lk.sm_share
        on_nic[c.window] = on_nic[c.window] or c.link_bytes()[1] > 0
    units = tuple(max((c.count / m for c in ledger if c.window == window), default=0)
                  for window in ("forward", "backward"))
    after_step_calls = sum(c.count for c in ledger if c.window == "after_step")
    return busy, on_nic, (*units, after_step_calls), sum(c.sent_per_step for c in ledger), occupied


def dp_window_exposure(windows: tuple, m: int, forward: float, back: float,
                       busy_nic: tuple[float, float] = (0.0, 0.0), serial: tuple[str, ...] = ()) -> float:
    """The exposed seconds of `dp_windows` under one micro-batch's forward and backward (each
    window counted once, see `dp_exposed`). The once-per-step windows in `serial`
    (`serial_windows`: `last_backward`, `after_step`) run where no computation hides them: all
    their seconds show.

    A hidden call is not free: NCCL's kernels hold their share of the SMs while they run and the
    window's computation runs on the rest (`kernels.overlap_exposed`), except FSDP's first unit's
    call per window, which runs beside no computation (`fsdp_fill` charges it)."""
    if serial:
        busy, on_nic, (units_f, units_b, after_step_calls), sent, occupied = windows
        shown = sum(busy[window] for window in serial)
        cleared = dict.fromkeys(serial, 0.0)
        rest = (busy | cleared, on_nic, (units_f, units_b, 0 if "after_step" in serial else after_step_calls), sent,
                occupied | cleared)
        return shown + dp_window_exposure(rest, m, forward, back, busy_nic)
    busy, on_nic, (units_f, units_b, after_step_calls), _, occupied = windows
    exposed_s = 0.0
    for (window, once, length), taken, n in zip((("forward", "after_step", forward),
                                                 ("backward", "last_backward", back)), busy_nic, (units_f, units_b),
                                                strict=True):
        # the pipeline's fill (`fsdp_fill`) reads the units' computation, which the other axes'
        # NIC traffic does not shorten; only the window left to hide the calls under shrinks (so
        # more NIC traffic never shows less)
        computed = length
        if on_nic[window] or on_nic[once]:  # the window's NIC time the other axes' traffic takes
            length = max(0.0, length - taken)
        beside = (n - 1) / n if n >= 1 else 1.0  # the first unit's call runs beside nothing
        sms, sms_once = occupied[window] * beside, occupied[once]
        fill = fsdp_fill(busy[window], computed, n)
        # a micro-batch's calls never show longer than they take (the fill is part of them)
        exposed_s += ((m - 1) * min(busy[window], kernel_model.overlap_exposed(length, busy[window], sms) + fill)
                      + min(busy[window] + busy[once],
                            kernel_model.overlap_exposed(length, busy[window] + busy[once], sms + sms_once) + fill))
        if once == "after_step":
            # The post-step gathers (zero1's buckets, all issued after the step; FSDP2's units
            # under pp) are waited for by the first forward, each by the first module that uses
            # its bucket: bucket k + 1's runs under bucket k's forward, the first one's under
            # nothing, the same two-stage pipeline as FSDP's forward.
            exposed_s += fsdp_fill(busy[once], computed, after_step_calls)
    return exposed_s


def fsdp_fill(busy: float, length: float, units: float) -> float:
    """Seconds of one micro-batch's per-unit collectives that no computation can hide, beyond
    what their sum exceeds the window by. FSDP (torch's FSDP1 and FSDP2; Megatron-LM's FSDP alike)
    gathers each unit's weights one unit ahead (prefetch depth 1: `backward_prefetch`
    BACKWARD_PRE, FSDP2's default) and reduce-scatters each unit's gradients when its backward
    ends, so the window is a two-stage pipeline of `units` equal stages, communication c = busy /
    units and computation w = length / units each: it takes c + (units - 1) max(c, w) + w, i.e.
    exposes units x max(0, c - w) (the sum's excess, charged by the caller) plus min(c, w): in the
    forward the first unit's gather, which has nothing to hide under; in the backward the first
    gather and the last reduce-scatter, which runs after the last gradient is computed (Zhao et al.
    2023, "PyTorch FSDP", Section 3.3 and Fig. 5: the first all-gather and the last
    reduce-scatter are not overlapped). Zero without per-unit calls (`units` 0) adds nothing."""
    if units < 1 or busy <= 0:
        return 0.0
    return min(busy, length) / units


def optimizer_seconds(r: RankTimes, k: Knobs, hw: Hardware, c: Constants) -> float:
    updated = r.params_dense / k.dense_shard_group + r.params_expert / k.expert_shard_group
    return memory_seconds(OPTIMIZER_BYTES.get(k.optimizer, 34) * updated, hw, c)


def dp_copy_bytes(r: RankTimes, k: Knobs, links: DpLinks, sw: Software = PARC) -> float:
    """HBM bytes one rank's data-parallel runtime copies per step around its collectives, on
    the compute stream: parc's job and torchtitan (`Software.dp_copies`), each parameter set
    (the dense one over its shard group, hsdp's shard, the routed experts over theirs) by
    `_set_copy_bytes`. Counted from the running job: tests/e2e/test_dp_copies.py records every
    op FSDP2's unshard and post-backward (and zero1's buckets) dispatch. 0 for Megatron-LM."""
    if sw.dp_runtime != "torch" or sw.dp_copies == "none":
        return 0.0
    if k.precision == "fp32" and plain_alone(k.dense_replicas, k.tp, k.ep, k.sharding):
        return 0.0  # parc's job wraps nothing: no FSDP2, no copies
    dense, experts = r.params_dense, r.params_expert
    if experts_folded(sw.dp_runtime, k.tp, k.ep):  # the experts are in their layers' units
        dense, experts = dense + experts, 0
    shard = links.shard if k.sharding == "hsdp" else links.dense
    sets = ((dense, shard.size, r.params_root), (experts, links.expert.size, 0))
    copies = _fsdp1_copy_bytes if sw.dp_copies == "fsdp1" else _set_copy_bytes
    return sum(copies(params, size, root, k.microbatches, k.sharding, k.pp, sw.grad_bytes)
               for params, size, root in sets if params > 0)


def _fsdp1_copy_bytes(params: float, size: int, root: int, m: int, sharding: str, pp: int, grad: int) -> float:
    """`_set_copy_bytes` for torch's FSDP1 (flat parameters, bf16 compute, gradients reduced in
    `grad` bytes, every micro-batch synchronised, as Composer accumulates: its
    `dist_strategy.ddp_sync_context` applies `no_sync` only to a DDP model), per element: each
    unshard casts the fp32 shard into the bf16 flat buffer the all-gather fills in place,
    (4 + 2) / size, before the forward and (FULL_SHARD) again before the backward, but for the
    root's, which FSDP1 keeps from its forward to its backward; each micro-batch's backward
    concatenates the parameters' gradients into the flat gradient, 2 x 2, casts it to the reduce
    dtype, 2 + grad (not when that is bf16), divides it before the reduce-scatter, 2 x grad, and
    the shard after it, 2 x grad / size; from the second micro-batch the shard is added into the
    sharded gradient, 3 x grad / size. tests/e2e/test_dp_copies.py counts it on torch's own FSDP1.
    `pp` is not read (no FSDP1 row pipelines)."""
    gathered = params if sharding == "zero2" else 2 * params - root
    cast = PARAM + grad if grad != PARAM else 0
    reduce = 2 * PARAM + cast + 2 * grad + 2 * grad / size
    return m * (gathered * (FP32 + PARAM) / size + params * reduce) + params * (m - 1) * 3 * grad / size


def _set_copy_bytes(params: float, size: int, root: int, m: int, sharding: str, pp: int, grad: int) -> float:
    """`dp_copy_bytes` of one parameter set of `params` elements sharded over `size` ranks
    (`root` of them the embedding, final norm and output, which FSDP2 keeps gathered from the
    forward to the backward), m micro-batches, fp32 master weights, bf16 compute copies, `grad`
    bytes per reduced element. Per element:

    - FSDP2's unshard: the fp32 shard cast into the all-gather input, (4 + 2) / size (read fp32,
      write bf16), and the gathered buffer copied out into the parameters, 2 x 2. Over a shard
      group of one (sharding none) there is no all-gather but the same cast and copy. Unshards
      per step as the ledger's gathers (`dp_ledger`): every micro-batch before the forward and
      again before the backward (less the root) under zero3, hsdp and none; once per step under
      zero2 and under pp > 1.
    - Reduced every micro-batch (zero2, zero3, hsdp without pp): `chunk_cat` of the bf16
      gradients into the fp32 reduce-scatter input, 2 + grad; from the second micro-batch the
      reduced shard is added into the sharded gradient, 3 x grad / size.
    - Reduced once per step (none, or pp > 1): the first micro-batch's bf16 gradient cast into an
      fp32 accumulator, 2 + grad; each later one added into it, 2 + 2 x grad; `chunk_cat` of the
      accumulator, 2 x grad. One micro-batch: `chunk_cat` of the bf16 gradient, 2 + grad.
    - Over a shard group of one the reduced gradient is copied into the parameter's, 2 x grad.
    - zero1 (parc's buckets): each micro-batch's gradient added into the fp32 main gradient,
      2 + 2 x grad; after the reduce-scatter the shard divided by dp, 2 x grad / size; the
      updated fp32 master cast into the bf16 bucket, (4 + 2) / size; the main gradients zeroed,
      grad. The parameters are views of the bucket: the gather copies nothing out.

    The collectives' own reads and writes are the collectives' (NCCL's kernels), not counted."""
    if sharding == "zero1":
        return params * (m * (PARAM + 2 * grad) + (2 * grad + FP32 + PARAM) / size + grad)
    size = 1 if sharding == "none" else size
    unshard = (FP32 + PARAM) / size + 2 * PARAM
    if pp > 1 or sharding == "zero2":
        gathered = params
    else:
        gathered = m * (2 * params - root)
    if sharding in ("zero2", "zero3", "hsdp") and pp == 1:
        reduce = m * (PARAM + grad) + (m - 1) * 3 * grad / size
    elif m == 1:
        reduce = PARAM + grad
    else:
        reduce = (PARAM + grad) + (m - 1) * (PARAM + 2 * grad) + 2 * grad
    if size == 1:
        reduce += 2 * grad
    return unshard * gathered + reduce * params


# ---------------------------------------------------------------------------------------------
# One step


@dataclass(frozen=True, slots=True)
class Breakdown:
    """One optimizer step on the slowest rank. The parts sum to `step`."""

    step: float
    compute: float
    recompute: float
    bubble: float
    optimizer: float
    exposed: dict
    """Exposed communication seconds per axis (tp, pp, dp, cp, ep)."""
    sent: dict
    """Bytes one GPU (of the slowest stage) sends per step, per axis."""
    bubble_fraction: float
    """The idle/busy ratio, bubble / (micro-batches x one micro-batch's time): (p - 1) / m for
    1f1b. Not "the bubble" parc reports: that is `bubble_share`."""
    stage: int
    """The pp rank that sets the pace."""
    microbatches: int
    bounds: Bounds = Bounds(0.0, 0.0)
    """The link floor of the busiest rank (`link_bounds`): `step` is never below `bounds.links`."""
    offload: float = 0.0
    """Seconds activation offloading's copies add (`offload_exposed`, every micro-batch)."""
    host_bytes: float = 0.0
    """Bytes one GPU moves over its host link per step (both directions)."""
    copies: float = 0.0
    """Seconds the data-parallel runtime's copies around its collectives take (`dp_copy_seconds`:
    FSDP2's and parc's zero1's, on the compute stream), on the rank whose tail sets the step."""

    @property
    def bubble_share(self) -> float:
        """The bubble as parc reports it everywhere: the pipeline's idle time as a share of the
        step (bubble / step), so it adds up with the other parts of the step to 100 %."""
        return self.bubble / self.step if self.step > 0 else 0.0


def path_ledger(r: RankTimes, k: Knobs, geo: Geometry, shape: Shape | None = None,
                load: Load | None = None, again: float = 0.0) -> tuple[Collective, ...]:
    """The tp, cp, ep and pp collectives of one rank over one step: the rank's per-micro-batch
    records (`RankTimes.collectives`, from the per-layer closed forms) m times, and, under
    sequence parallelism, the once-per-step all-reduce over tp of the gradients of the norms,
    which sp keeps replicated (one call per norm weight or bias: two norms per layer, the final
    norm on the output chunk), and of multi-head latent attention's duplicated down projections
    and latent norms (one call per layer). Their exposure is the per-layer model's; the records carry their
    bytes to the link bounds and the runtime comparison. `again`: micro-batches' worth of
    recomputation the weight passes run a second time (`recomputed_again`), their collectives
    with them (rounded to whole calls where the split passes' chunks differ)."""
    m = k.microbatches
    out = [c.per_step(m) for c in r.collectives]
    if again:
        out += [replace(c, count=round(c.count * again), micro=0) for c in r.collectives if c.phase == "recompute"]
    if shape is not None and load is not None and k.sp and geo.tp.size > 1:
        tensors = 2 if shape.layernorm else 1
        norms = (2 * r.layers + (1 if load.output else 0)) * tensors
        out.append(Collective("tp", "all_reduce", FP32 * shape.hidden, norms, geo.tp.size, geo.tp.local,
                              "last_backward"))
        if shape.mla:  # MLA's duplicated down projections and latent norms, also replicated over tp
            # (Megatron-Core marks them `sequence_parallel`: `_allreduce_non_tensor_model_parallel_grads`)
            duplicated = split_weights(shape, DUPLICATED) + latent_norm_params(shape)
            out.append(Collective("tp", "all_reduce", FP32 * duplicated, r.layers, geo.tp.size, geo.tp.local,
                                  "last_backward"))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The compute side of the ledger


@lru_cache(maxsize=16384)
def piece_flops(shape: Shape, moe: bool, tp: int, cp: int, seq: int, micro: int, vocab: int,
                attention: str, shard: int = 1) -> tuple[float, float, float, float]:
    """FLOPs one rank executes for one micro-batch of one layer (`vocab` 0) or of the output
    layer (`vocab` the padded vocabulary): (forward GEMMs, forward attention core, the attention
    output projection alone, which parc's selective policy recomputes, 0). GEMMs as shaped on the
    rank: the tp shards of Q (and K, V when tp divides the kv heads), the output projection and
    the FFN; routed experts on this tp rank's own tokens (n / tp, balanced routing, a capacity
    factor under 1 dropping copies); the router; shared experts split over tp. The attention core
    as the kernel runs it: flash skips the causal half (s / 2 keys per query on average, also
    under cp's load-balanced chunks), unfused computes the full square. Multi-head latent
    attention: its projections as `mla_gemms` runs them (the duplicated down projections on the
    rank's n / `shard` own tokens: `shard` = tp under sequence parallelism)."""
    n = seq * micro / cp
    h = shape.hidden
    if vocab:
        return 2 * n * h * vocab / tp, 0.0, 0.0, 0.0
    out_projection = 2 * n * shape.o / tp * h
    if shape.mla:
        gemm = sum(2 * count * m * k * width for _, count, m, k, width in mla_gemms(shape, tp, n, shard))
    else:
        q = shape.q / tp
        kv = shape.kv / tp if kv_split(shape, tp) else shape.kv
        gemm = 2 * n * h * (q + 2 * kv) + out_projection
    if moe:
        routed = n / tp
        kept = min(1.0, shape.capacity_factor) if shape.capacity_factor else 1.0
        gemm += routed * flops.router_flops(shape) + routed * shape.top_k * kept * flops.expert_flops(shape)
        gemm += n * shape.shared_experts * flops.expert_flops(shape) / tp
    else:
        gemm += 2 * n * h * shape.ffn * shape.ffn_matrices / tp
    keys = flops.attention_keys(shape, seq) if skips_causal(attention) else float(seq)
    return gemm, n * flops.attention_core_flops(shape, keys) / tp, out_projection, 0.0


def torchtitan_op_flops(shape: Shape, moe: bool, tp: int, tokens: float) -> float:
    """Forward FLOPs torchtitan's per-op policy (`TORCHTITAN_OP`) runs again on one rank for
    `tokens` tokens of one layer (`Work.selective_torchtitan`): the counted matmuls it does not
    save (under torchtitan 0.3's fused QKV: wo and w3 of a dense SwiGLU block; wo and the shared
    experts' w3 of an MoE block) and an MoE layer's router gate and routed experts whole
    (`routed_gemm_flops`)."""
    _, again = torchtitan_op_split(torchtitan_matmuls(shape, tp, moe=moe))
    return sum(2 * tokens * k * out for _, k, out in again) + (routed_gemm_flops(shape, tp, tokens) if moe else 0.0)


def routed_gemm_flops(shape: Shape, tp: int, tokens: float) -> float:
    """Forward FLOPs of an MoE layer's router and routed experts on one rank for `tokens` tokens:
    each tp rank routes its own 1/tp of them (`layer_work`), each to top-k experts (a capacity
    factor under 1 drops some)."""
    routed = tokens / tp
    kept = min(1.0, shape.capacity_factor) if shape.capacity_factor else 1.0
    return routed * flops.router_flops(shape) + routed * shape.top_k * kept * flops.expert_flops(shape)


def moe_gemm_flops(shape: Shape, tp: int, cp: int, seq: int, micro: int) -> float:
    """Forward FLOPs of a MoE layer's own products on one rank for one micro-batch (router,
    routed experts on this tp rank's tokens, shared experts split over tp): what
    `--recompute-modules moe` runs again (`piece_flops`' MoE terms)."""
    n = seq * micro / cp
    return routed_gemm_flops(shape, tp, n) + own_ffn_flops(shape, True, tp, n)


def own_ffn_flops(shape: Shape, moe: bool, tp: int, n: float) -> float:
    """Forward FLOPs of a layer's own FFN on one tp rank for `n` tokens: a dense layer's, or a MoE
    layer's shared experts (split over tp): what `--recompute-modules mlp` / `shared_experts`
    runs again (`Work.ffn_again`)."""
    per_token = shape.shared_experts * flops.expert_flops(shape) if moe else flops.dense_ffn_flops(shape)
    return n * per_token / tp


def compute_ledger(shape: Shape, k: Knobs, load: Load, sw: Software, again: float = 0.0) -> tuple[Compute, ...]:
    """The FLOPs of one pipeline rank over one step, per op kind: every GEMM backward twice its
    forward (input and weight gradients); the flash attention backward `FLASH_BACKWARD` times its
    forward (it recomputes the scores: five products to the forward's two), unfused twice;
    recomputation as `_piece` charges it (full: the forward again; parc's selective policy: the
    attention output projection; torchtitan's: every second counted matmul of a block and an MoE
    layer's router and routed experts, `torchtitan_op_flops`; Megatron-LM's: the attention core). Each record carries its
    HBM bytes (`hbm.py`), and a fourth, `optimizer`, the optimizer step's. `again`: micro-batches'
    worth of recomputation the weight passes run a second time (`recomputed_again`)."""
    m = k.microbatches
    gemm = [0.0, 0.0, 0.0]
    core = [0.0, 0.0, 0.0]
    moved = {"gemm": 0.0, "attention": 0.0, "memory": 0.0}
    redone = dict.fromkeys(moved, 0.0)  # the recomputation's bytes, per micro-batch
    back = FLASH_BACKWARD if skips_causal(sw.attention) else 2.0
    for moe, mode, count in load.pieces:
        piece = hbm.layer_bytes(shape, LayerCase.of(k, moe, sw), k.fp8_transposed)
        moved["gemm"] += count * (piece.gemm_f + piece.gemm_b)
        moved["attention"] += count * (piece.attention_f + piece.attention_b)
        moved["memory"] += count * (piece.memory_f + piece.memory_b)
        repeated = hbm.recomputed(piece, mode, sw.selective)
        if mode == "full":
            redone["gemm"] += count * piece.gemm_f
            redone["attention"] += count * piece.attention_f
            redone["memory"] += count * piece.memory_f
        elif mode == "selective" and sw.selective == "elementwise":
            redone["memory"] += count * repeated
        elif mode == "selective" and sw.selective == TORCHTITAN_OP:
            redone["gemm"] += count * piece.torchtitan_gemm_again
            redone["memory"] += count * (repeated - piece.torchtitan_gemm_again)
        elif mode == "selective":  # Megatron's modules: the core's bytes, the MoE layer's GEMMs and kernels
            modules = recompute_modules(sw.selective)
            core_bytes = piece.selective_core if "core_attn" in modules else 0.0
            moe_gemm = piece.moe_gemm_again if "moe" in modules else 0.0
            up_bytes = piece.mla_up_gemm_again if "mla_up_proj" in modules else 0.0  # its GEMMs (the assembly: memory)
            ffn_gemm = piece.ffn_gemm_again if ffn_recomputed(modules, moe) else 0.0
            redone["attention"] += count * core_bytes
            redone["gemm"] += count * (moe_gemm + up_bytes + ffn_gemm)
            redone["memory"] += count * (repeated - core_bytes - moe_gemm - up_bytes - ffn_gemm)
        g, a, wo, _ = piece_flops(shape, moe, k.tp, k.cp, k.seq, k.micro_batch, 0, sw.attention,
                                  k.tp if k.sp and k.tp > 1 else 1)
        gemm[0] += count * g
        gemm[1] += count * 2 * g
        core[0] += count * a
        core[1] += count * back * a
        if mode == "full":
            gemm[2] += count * g
            core[2] += count * a
        elif mode == "selective" and sw.selective == "elementwise":
            gemm[2] += count * wo
        elif mode == "selective" and sw.selective == TORCHTITAN_OP:
            gemm[2] += count * torchtitan_op_flops(shape, moe, k.tp, k.seq * k.micro_batch / k.cp)
        elif mode == "selective":
            modules = recompute_modules(sw.selective)
            core[2] += count * a * ("core_attn" in modules)
            if shape.mla and "mla_up_proj" in modules:  # the up projections' products again
                n = k.seq * k.micro_batch / k.cp
                gemm[2] += count * 2 * n * split_weights(shape, COLUMN) / k.tp
            if moe and "moe" in modules:
                gemm[2] += count * moe_gemm_flops(shape, k.tp, k.cp, k.seq, k.micro_batch)
            if ffn_recomputed(modules, moe):  # the dense FFN's or the shared experts' products again
                gemm[2] += count * own_ffn_flops(shape, moe, k.tp, k.seq * k.micro_batch / k.cp)
    if load.output:
        vocab = padded_vocab(shape.vocab, k.tp, k.runtime)
        g = piece_flops(shape, False, k.tp, k.cp, k.seq, k.micro_batch, vocab, sw.attention)[0]
        n = k.seq * k.micro_batch / k.cp  # and each multi-token prediction module's head and projection
        g = (1 + shape.mtp) * g + shape.mtp * 2 * n * 2 * shape.hidden * shape.hidden / k.tp
        gemm[0] += g
        gemm[1] += 2 * g
        out = hbm.output_bytes(shape, k.tp, k.sp, k.cp, k.seq, k.micro_batch, vocab, sw.loss_kernels)
        moved["gemm"] += out.gemm_f + out.gemm_b
        moved["memory"] += out.memory_f + out.memory_b
    if load.embedding:
        moved["memory"] += hbm.embedding_bytes(shape, k.tp, k.cp, k.seq, k.micro_batch).total
    updated = load.params_dense / k.dense_shard_group + load.params_expert / k.expert_shard_group
    r = m + again  # the recomputation runs once per micro-batch, and again in split weight passes
    return (Compute("gemm", m * gemm[0], m * gemm[1], r * gemm[2], m * moved["gemm"] + r * redone["gemm"]),
            Compute("attention", m * core[0], m * core[1], r * core[2], m * moved["attention"] + r * redone["attention"]),
            Compute("memory", hbm_bytes=m * moved["memory"] + r * redone["memory"]),
            Compute("optimizer", hbm_bytes=OPTIMIZER_BYTES.get(k.optimizer, 34) * updated))


def in_network(hw: Hardware) -> tuple[bool, bool]:
    """(NVLS, SHARP) where the part can use them: what `Collective.link_bytes` counts an
    all-reduce's fewest bytes by (the bound). NVLS only where `NVLS_EFFICIENCY` knows the
    generation (as `link`)."""
    return hw.nvls and hw.generation in NVLS_EFFICIENCY, hw.sharp


def link_bounds(ledger: Ledger, hw: Hardware, c: Constants) -> Bounds:
    """The seconds the ledger's bytes need on each link class at the bandwidth the collectives
    reach (the datasheet's times the bus efficiencies: tighter than the datasheet itself)."""
    intra, nic = ledger.link_bytes(in_network=in_network(hw))
    host = ledger.host_bytes / (hw.host * c.bus_nvlink) if ledger.host_bytes and hw.host > 0 else 0.0
    return Bounds(intra=intra / (hw.intra * c.bus_nvlink), nic=nic / (hw.nic * c.bus_network), host=host)


# ---------------------------------------------------------------------------------------------
# Activation offloading: the saved sets of a chunk's first layers to host memory and back


def offload_windows(layers: int, offloaded: int) -> tuple[int, ...]:
    """Transformer Engine's `layer_window_map` (cpu_offload_v1.py,
    `AsyncDoubleBufferGroupOffloadHandler.__init__`): for each offloaded layer k, the layer at
    whose end the forward waits for its copy to the host (and frees its GPU copy), and before
    whose backward its reload starts; spread evenly over the chunk's layers, the last at the
    chunk's last layer."""
    out, constant = [], 0
    for i in range(offloaded):
        window = (layers // offloaded) * (i + 1) - 1
        if i < layers % offloaded:
            window += i + 1
            constant = i + 1
        else:
            window += constant
        out.append(window)
    return tuple(out)


def offload_sizes(shape: Shape, k: Knobs, stage: int) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """Per chunk of pipeline rank `stage`: (its first layer, its layers, the saved-set bytes of
    each offloaded layer per micro-batch, `memory.model.offloaded_saved`): what crosses the host
    link, out in the forward and back in the backward. Empty without offloading."""
    if not k.offload_layers:
        return ()
    from .memory.model import layer_knobs_of, offloaded_saved

    ak = layer_knobs_of(shape, k)
    chunks = by_rank(chunks_of(shape.layers, k.pp, k.virtual_stages, k.schedule, k.split, shape.tied, shape.mtp), k.pp)[stage]
    return tuple((c.first_layer, c.layers, offloaded_saved(shape, ak, c.first_layer, c.layers, k.offload_layers,
                                                           k.recompute, k.recompute_layers))
                 for c in chunks)


def offload_bytes(sizes: tuple) -> int:
    """Bytes one micro-batch moves over the host link, both directions (`offload_sizes`)."""
    return 2 * sum(sum(each) for _, _, each in sizes)


def offload_exposed(sizes: tuple, r: RankTimes, shape: Shape, runtime: str, hw: Hardware, c: Constants) -> float:
    """Seconds activation offloading adds to one micro-batch on one rank.

    Each offloaded layer's saved set crosses the host link once out (forward) and once back
    (backward) at `hw.host` x `c.bus_nvlink` (the copy engines' achieved share of a link's peak,
    the fraction the collectives reach on NVLink or PCIe), and the copies read, then write, the
    bytes in HBM once (at `c.hbm_efficiency`, the memory-bound kernels' rate).

    Megatron-Core (Transformer Engine's handler) copies on side streams: layer k's copy out
    starts when the previous one is waited for (the first after layer 0) and the forward waits
    for it at the end of layer `offload_windows(...)[k]`; the reloads mirror it in the backward.
    Exposed: the part of each copy longer than the layers' forward (backward) it runs beside.
    parc's job (`torch.autograd.graph.save_on_cpu`) copies on the compute stream: every copy is
    exposed."""
    if not sizes or hw.host <= 0:
        return 0.0
    rate = hw.host * c.bus_nvlink
    hbm_s = offload_bytes(sizes) / (hw.hbm * c.hbm_efficiency)
    if runtime == "torch":
        return offload_bytes(sizes) / rate + hbm_s
    dense, moe = r.layer_times
    exposed = 0.0
    for first, layers, each in sizes:
        start = 1
        for size, window in zip(each, offload_windows(layers, len(each)), strict=True):
            beside = [moe if shape.is_moe(first + j) else dense for j in range(start, window + 1)]
            copy = size / rate
            exposed += max(0.0, copy - sum(f for f, _ in beside)) + max(0.0, copy - sum(b for _, b in beside))
            start = window + 1
    return exposed + hbm_s


@dataclass(frozen=True, slots=True)
class RankStep:
    """One pipeline rank's step: its ledger, its data-parallel exposure and optimizer step."""

    times: RankTimes
    ledger: Ledger
    dp_exposed: float
    optimizer: float
    bounds: Bounds
    offload: float = 0.0
    """Seconds activation offloading adds to the step (`offload_exposed`, every micro-batch)."""
    copies: float = 0.0
    """Seconds the data-parallel runtime's own copies take on the compute stream
    (`dp_copy_seconds`)."""
    embedding_sync: float = 0.0
    """Seconds of the once-a-step sum of the embedding copies' gradients between the first and
    the last pipeline stage (`embedding_sync`), in the step's tail: nothing runs beside it."""
    amax: tuple[float, float] = (0.0, 0.0)
    """Seconds Transformer Engine's blocking amax all-reduces (`amax_reductions`) add to one chunk's
    forward and to its backward, one micro-batch: on the path, in every pipeline slot."""


def embedding_sync(shape: Shape, k: Knobs, load: Load, geo: Geometry, grad: int) -> tuple[Collective, ...]:
    """The all-reduce that keeps a pipeline's two copies of the embedding table equal, on a rank
    that holds one end of the model but not the other: a tied model's output layer on the last
    stage is a copy of the first stage's embedding (parc's job: `dist.all_reduce` over
    `rt.meshes.tied` in parallel.py; Megatron-Core: the embedding group's all-reduce in
    `finalize_model_grads`), and so is the embedding Megatron-Core keeps on the stage that runs
    multi-token prediction (`GPTModel.embedding` where `mtp_process`). Once a step, after the
    last backward, the gradient's dtype (`grad` bytes an element) over the two stages. None where
    one rank holds both ends (the V schedules) or there is no pipeline."""
    if k.pp <= 1 or load.embedding == load.output or not (shape.tied or shape.mtp):
        return ()
    table = padded_vocab(shape.vocab, k.tp, k.runtime) * shape.hidden / k.tp
    local = 2 if geo.pp.inside else 1  # the first and the last stage in one NVLink domain, or not
    return (Collective("pp", "all_reduce", grad * table, 1, 2, local, "last_backward"),)


AMAX_SLOTS = (3, 2)
"""Amaxes Transformer Engine's delayed scaling reduces per fp8 GEMM: forward its input's, weight's and
output's (`scaling_fwd`, `GemmParallelModes` slots of each module's `fp8_meta`), backward its output
gradient's and input gradient's (`scaling_bwd`)."""


def amax_modules(shape: Shape, k: Knobs, moe: bool) -> tuple[int, float]:
    """(Transformer Engine modules, fp8 GEMMs) of one layer under Megatron-Core's TE layer spec: the
    attention's projections, one module and GEMM each (`attention_gemms`), then the dense FFN's
    `linear_fc1` and `linear_fc2`, or a MoE layer's two `GroupedLinear` modules, which keep each
    local expert's GEMM's amaxes, and the shared experts' two. The embedding and the output layer
    run outside fp8."""
    attention = len(attention_gemms(shape, k.tp, 1.0))
    if not moe:
        return attention + 2, attention + 2
    shared = 2 if shape.shared_experts else 0
    return attention + 2 + shared, attention + 2 * shape.experts / max(1, k.ep) + shared


def amax_reductions(shape: Shape, k: Knobs, load: Load, geo: Geometry, hw: Hardware,
                    sw: Software) -> tuple[Collective, ...]:
    """Transformer Engine's delayed scaling takes each fp8 tensor's scale from an amax history
    that every rank of the amax group must agree on: when an `fp8_autocast` region exits, TE
    concatenates the amaxes its modules recorded and all-reduces them (MAX) before updating the
    scales, and in the backward does the same when it reaches the region's first module (TE 1.10
    `fp8.py`: `fp8_autocast_exit` -> `reduce_and_update_fp8_tensors`, `reduce_tensor_across_group_op_max`
    with `async_op=False`; TE >= 1.6 has no asynchronous variant, so `NVTE_ASYNC_AMAX_REDUCTION`,
    which NVIDIA's recipes still export, does nothing). Megatron-Core wraps each model chunk's
    forward in one region (`TransformerBlock`'s outer fp8 context under the delayed recipe) over
    its amax reduction group, tp x dp x cp (`get_amax_reduction_group(with_context_parallel=True)`:
    `Geometry.stage`; `--tp-only-amax-red`, tp x cp, is not modelled). TE keeps one buffer per
    recipe and group for the whole process, so each call reduces every fp8 GEMM's amaxes on the
    rank (`AMAX_SLOTS` each: under a few KB), not one chunk's: latency, on the compute stream,
    across every rank of the stage, growing with the data-parallel degree.

    Calls per micro-batch: one per chunk forward. Backward one per chunk, except under full
    recomputation: TE's checkpoint runs the forward without gradients, which never consumes the
    region's first-module flag, and its recompute phase hands every module of a recomputed layer
    that flag (TE >= 1.12, `activation_recompute_forward`, `linear.py`'s `reduce_and_update_bwd_fp8_tensors`;
    TE 1.10-1.11 reduced nothing there, issue #1190): one call per module of the recomputed layers,
    plus one per chunk for its layers kept.
    None outside Transformer Engine's delayed scaling (torchao's dynamic scaling and TE's current
    and block-scaled recipes keep no history to agree on)."""
    if gemm_precision(k.precision, sw) != "fp8" or not hw.fp8 or sw.fp8_scaling != "delayed" or geo.stage.size <= 1:
        return ()
    per_layer = {moe: amax_modules(shape, k, moe) for moe in (False, True)}
    gemms = sum(count * per_layer[moe][1] for moe, _, count in load.pieces)
    recomputed = sum(count * per_layer[moe][0] for moe, mode, count in load.pieces if mode == "full")
    kept = any(mode != "full" for _, mode, _ in load.pieces)
    backward = recomputed + (load.chunks if kept else 0)
    return tuple(Collective("dp", "all_reduce", FP32 * slots * gemms, k.microbatches * calls, geo.stage.size,
                            geo.stage.local, "path", calls, phase)
                 for phase, slots, calls in zip(("forward", "backward"), AMAX_SLOTS, (load.chunks, backward),
                                                strict=True))


def tp_amax_reductions(shape: Shape, case: LayerCase, hw: Hardware, tp: Link,
                       replayed: tuple[bool, bool] | None = None) -> tuple[Collective, ...]:
    """The amax all-reduces over tp that Transformer Engine's current scaling (and NVFP4's
    per-tensor amax) runs under sequence parallelism, per layer and micro-batch: a column-parallel
    linear's input and a row-parallel linear's output gradient are quantized on the rank's own
    rows and then gathered, so every tp rank must cast with the scale of the whole tensor; their
    quantizers reduce the amax over the tp group (`with_amax_reduction`, set by
    `_customize_quantizers_float8_current_scaling` and `_customize_quantizers_nvfp4` in TE 2.x's
    module/linear.py and layernorm_linear.py) between the amax pass and the cast, and wait for it
    (`Float8CurrentScalingQuantizer::quantize_impl`: `allreduce(...)->wait()`, quantizer.cpp): one
    fp32 amax per usage quantized (NVFP4 coalesces its rowwise and columnwise ones), latency on
    the compute path.
    Forward one per gathered input (the QKV projection or multi-head latent attention's
    column-parallel up projections, and the dense FFN's or shared experts' fc1), backward one per
    gathered output gradient (the output projection's and that fc2's): the blocks of
    `sp_gathered_widths`; and one more backward where the shared experts' fc1 keeps its bf16
    input and quantizes it again, rowwise only, before re-gathering it (`original_input_casts`).
    None under delayed scaling (`amax_reductions`), the block-scaled recipes (`BLOCK_SCALED`) or
    torchao's dynamic scaling (charged with bf16 gathers, `layer_work`).
    `replayed` (attention, ffn): the forward's reductions of those linears again, phase
    `recompute`, for Megatron-Core's selective recomputation (`megatron_replay`: the attention
    side is multi-head latent attention's up projections under `mla_up_proj`)."""
    recipe = fp8_recipe(case.precision, case.fp8_scaling, hw)
    if recipe not in ("current", "nvfp4") or not gathers_quantized(case.tp, case.sp, True, case.fp8_scaling):
        return ()
    both = 2 if recipe == "nvfp4" else 1  # amaxes a call reduces where both usages are quantized
    shared = case.moe and bool(shape.shared_experts)
    ffn = 1 if not case.moe or shared else 0
    attention = len(up_projections(shape)) if shape.mla else 1
    kept = int(shared_fc1_keeps_bf16(shape, case))
    # (phase, amaxes, calls): a shared fc1 that keeps its bf16 input casts it rowwise only forward
    # and again in the backward, one amax each
    if replayed is not None:
        again_attention, again_ffn = replayed
        calls = [("recompute", both, (attention if again_attention else 0) + (ffn - kept if again_ffn else 0)),
                 ("recompute", 1, kept if again_ffn else 0)]
    else:
        calls = [("forward", both, attention + ffn - kept), ("forward", 1, kept),
                 ("backward", both, 1 + ffn), ("backward", 1, kept)]
    return tuple(Collective("tp", "all_reduce", FP32 * amaxes, n, tp.size, tp.local, "path", n, phase)
                 for phase, amaxes, n in calls if n)


def dp_copy_seconds(copied: float, hw: Hardware, c: Constants) -> float:
    """`dp_copy_bytes` as memory-bound kernels (read and write once each, at `hbm_efficiency`).
    On the compute stream: FSDP2 runs the copy-out after the gather's wait and `chunk_cat`
    before handing the buffer to the reduce-scatter's stream, so nothing hides them. Charged
    in the step's tail beside the optimizer: under pp > 1 they run once per step, and without a
    pipeline there is no bubble for them to lengthen."""
    return memory_seconds(copied, hw, c) if copied else 0.0


def rank_steps(shape: Shape, k: Knobs, hw: Hardware, geo: Geometry, c: Constants = DEFAULT,
               sw: Software = PARC) -> tuple[tuple[Load, ...], dict[Load, RankStep]]:
    loads, times = rank_times(shape, k, hw, geo, c, sw)
    experts = geo.expert_tp if sw.dp_runtime == "torch" else geo.expert
    links = DpLinks(link(geo.dense, hw, c), link(experts, hw, c), link(geo.shard, hw, c), link(geo.replicate, hw, c))
    out = {}
    m = k.microbatches
    for load, r in times.items():
        sizes = offload_sizes(shape, k, loads.index(load))
        host = m * offload_bytes(sizes)
        copied = dp_copy_bytes(r, k, links, sw)
        again = recomputed_again(k, sw, r.chunks, loads.index(load))
        compute = compute_ledger(shape, k, load, sw, again) + ((Compute("offload", hbm_bytes=host),) if host else ()) \
            + ((Compute("dp_copies", hbm_bytes=copied),) if copied else ())
        sync = embedding_sync(shape, k, load, geo, sw.grad_bytes)
        amax = amax_reductions(shape, k, load, geo, hw, sw)
        ledger = Ledger(path_ledger(r, k, geo, shape, load, again) + dp_ledger(r, k, links, sw.grad_bytes, sw.dp_runtime,
                                                                  sw.gather_bytes) + sync + amax,
                        compute, host_bytes=host)
        exposed_dp, _ = dp_exposed(r, k, links, sw.grad_bytes, sw.dp_runtime, serial_windows(sw, k.pp), sw.gather_bytes)
        out[load] = RankStep(times=r, ledger=ledger, dp_exposed=exposed_dp, optimizer=optimizer_seconds(r, k, hw, c),
                             bounds=link_bounds(ledger, hw, c),
                             offload=m * offload_exposed(sizes, r, shape, k.runtime, hw, c),
                             copies=dp_copy_seconds(copied, hw, c),
                             embedding_sync=sum(collective_seconds(s, link(Group(s.size, s.local), hw, c))
                                                for s in sync),
                             amax=tuple(a.micro / r.chunks * collective_seconds(a, link(geo.stage, hw, c))
                                        for a in amax) or (0.0, 0.0))
    return loads, out


def unpaired_chunk_steps(pp: int, v: int, m: int, stage: int) -> int:
    """Forward chunk-steps of pipeline rank `stage` that Megatron-Core's combined 1F1B runs with no
    backward beside them (as many backward ones at the end): the warm-up. Interleaved, (pp - stage
    - 1) x 2 + (v - 1) x pp, plus the one extra forward `--overlap-moe-expert-parallel-comm`
    schedules before the 1F1B steps (megatron/core/pipeline_parallel/schedules.py,
    `get_pp_rank_microbatches`); without interleaving pp - stage - 1; without a pipeline the first
    forward and the last backward run alone (combined_1f1b.py); at most m x v."""
    if pp == 1:
        warm = 1
    elif v > 1:
        warm = (pp - stage - 1) * 2 + (v - 1) * pp + 1
    else:
        warm = pp - stage - 1
    return min(warm, m * v)


def unpaired_ep_seconds(shape: Shape, k: Knobs, hw: Hardware, geo: Geometry, c: Constants, sw: Software,
                        stage: int, chunks: int) -> float:
    """What Megatron-Core's 1F1B all-to-all overlap (`Software.ep_overlap`) leaves exposed beyond its
    paired steps: the warm-up forwards and cool-down backwards (`unpaired_chunk_steps` of the
    pacing rank's m x v) have no other micro-batch's computation to hide their dispatch and
    combine, which wait as without the overlap."""
    _, plain = rank_times(shape, k, hw, geo, c, replace(sw, ep_overlap=False))
    loads, paired = rank_times(shape, k, hw, geo, c, sw)
    alone, hidden = plain[loads[stage]], paired[loads[stage]]
    extra = (alone.exposed_f[2] - hidden.exposed_f[2]) + (alone.exposed_b[2] - hidden.exposed_b[2])
    fraction = unpaired_chunk_steps(k.pp, chunks, k.microbatches, stage) / (k.microbatches * chunks)
    return k.microbatches * fraction * max(0.0, extra)


def step_time(shape: Shape, k: Knobs, hw: Hardware, geo: Geometry, c: Constants = DEFAULT,
              sw: Software = PARC) -> Breakdown:
    """One step: every distinct rank's (`rank_steps`), then the step they make (`step_from`)."""
    return step_from(rank_steps(shape, k, hw, geo, c, sw), shape, k, hw, geo, c, sw)


def step_from(ranks: tuple[tuple[Load, ...], dict[Load, RankStep]], shape: Shape, k: Knobs, hw: Hardware,
              geo: Geometry, c: Constants = DEFAULT, sw: Software = PARC) -> Breakdown:
    """The step that `rank_steps`' ranks make (apart so that a reader of those ranks' ledgers,
    benchmarks/scaling_check.py, splits the very step it reports). The per-layer model's exposure
    is then held to the links: a step can never be
    shorter than any rank's bytes need on its NVLink (or PCIe) and on its NIC share, whatever the
    windows they were meant to hide in (different axes' collectives queue on the same NIC). What
    a link needs beyond the modelled step is exposed communication, charged to the axes in
    proportion to the bytes they put on that link."""
    loads, steps = ranks
    times = {load: s.times for load, s in steps.items()}
    m = k.microbatches
    # a micro-batch's work on a rank includes its offload copies (`offload_exposed`): the slowest
    # rank is the slowest with them, and they lengthen every pipeline slot the bubble is made of
    # (out in the forward, back in the backward: the same bytes each way)
    slow_load = max(times, key=lambda load: times[load].total + steps[load].offload / m)  # first of equals
    r = times[slow_load]
    v = r.chunks
    copies = steps[slow_load].offload / (m * v) / 2  # one direction, one chunk, one micro-batch
    again = recomputed_again(k, sw, v, loads.index(slow_load))
    rework = r.recompute + sum(r.recompute_exposed)  # one micro-batch's recomputation, exposure included
    amax_f, amax_b = steps[slow_load].amax  # each chunk's amax all-reduces lengthen its slots
    f = (r.forward + sum(r.exposed_f)) / v + copies + amax_f
    b = (r.backward_input + r.recompute + sum(r.exposed_b)) / v + copies + amax_b
    w = (r.backward_weight + again * rework / m) / v  # the weight passes' recomputation, spread over them
    bubble = runtime_bubble_seconds(k.schedule, k.pp, v, m, f, b, w)
    tail, dp_s, opt, copies, sync, tail_step = -1.0, 0.0, 0.0, 0.0, 0.0, steps[slow_load]
    for rank in steps.values():
        if rank.dp_exposed + rank.optimizer + rank.copies + rank.embedding_sync > tail:
            tail, tail_step = rank.dp_exposed + rank.optimizer + rank.copies + rank.embedding_sync, rank
            dp_s, opt, copies, sync = rank.dp_exposed, rank.optimizer, rank.copies, rank.embedding_sync
    exposed_axes = {axis: m * (r.exposed_f[i] + r.exposed_b[i]) + again * (r.recompute_exposed[i] if i < 3 else 0.0)
                    for i, axis in enumerate(RANK_AXES)}
    exposed_axes["dp"] = dp_s + m * v * (amax_f + amax_b)  # the amax all-reduces: on the path, not in the tail
    exposed_axes["pp"] += sync  # the embedding copies' gradient sum, in the tail (`embedding_sync`)
    if sw.ep_overlap and shape.moe:
        exposed_axes["ep"] += unpaired_ep_seconds(shape, k, hw, geo, c, sw, loads.index(slow_load), v)
    sent = {axis: m * r.sent[i] for i, axis in enumerate(RANK_AXES)}
    sent["dp"] = tail_step.ledger.sent("dp")
    compute = m * r.compute
    recompute = (m + again) * r.recompute
    offload = steps[slow_load].offload
    step = compute + recompute + sum(exposed_axes.values()) + bubble + opt + offload + copies
    # the links' floor: the busiest link of any rank
    floor_rank = max(steps.values(), key=lambda s: s.bounds.links)
    bounds = floor_rank.bounds
    if bounds.links > step:
        which = 1 if bounds.nic >= bounds.intra else 0
        shares = {axis: floor_rank.ledger.link_bytes(axis, in_network(hw))[which] for axis in AXES}
        total = sum(shares.values())
        deficit = bounds.links - step
        for axis in AXES:
            exposed_axes[axis] = exposed_axes.get(axis, 0.0) + deficit * shares[axis] / total
        step = compute + recompute + sum(exposed_axes.values()) + bubble + opt + offload + copies
        step = max(step, bounds.links)  # rounding in the shares never undercuts the floor
    per_micro = r.total + offload / m + v * (amax_f + amax_b)
    return Breakdown(step=step, compute=compute, recompute=recompute, bubble=bubble, optimizer=opt,
                     exposed={a: exposed_axes.get(a, 0.0) for a in AXES}, sent={a: sent[a] for a in AXES},
                     bubble_fraction=bubble / (m * per_micro) if per_micro > 0 else 0.0,
                     stage=loads.index(slow_load), microbatches=m, bounds=bounds, offload=offload,
                     host_bytes=steps[slow_load].ledger.host_bytes, copies=copies)


def hardware_flops_per_token(shape: Shape, k: Knobs, sw: Software) -> float:
    """FLOPs the GPUs execute per token: 3x forward with the attention actually computed
    (causal half under FlashAttention, whose backward runs 2.5x its forward; the full square
    unfused), plus the matrix products
    recomputation repeats (the attention output projection under parc's selective policy; under
    torchtitan's every second counted matmul of a block, and an MoE layer's router and routed
    experts, `torchtitan_op_flops`)."""
    flash = skips_causal(sw.attention)
    keys = flops.attention_keys(shape, k.seq) if flash else float(k.seq)
    total = 3.0 * flops.forward_flops_per_token(shape, keys)
    if flash:  # the backward recomputes the scores: 2.5x the forward's, not 2x
        total += (flops.FLASH_BACKWARD - 2.0) * shape.layers * flops.attention_core_flops(shape, keys)
    if k.recompute == "selective" and sw.selective == "elementwise":
        total += shape.layers * 2 * shape.o * shape.hidden
    elif k.recompute == "selective" and sw.selective == TORCHTITAN_OP:
        total += (flops.dense_count(shape) * torchtitan_op_flops(shape, False, 1, 1)
                  + flops.moe_count(shape) * torchtitan_op_flops(shape, True, 1, 1))
    elif k.recompute == "selective":
        modules = recompute_modules(sw.selective)
        if "core_attn" in modules:
            total += shape.layers * flops.attention_core_flops(shape, keys)
        if "moe" in modules and shape.moe:
            total += flops.moe_count(shape) * moe_gemm_flops(shape, 1, 1, 1, 1)
        if "mla_up_proj" in modules and shape.mla:  # the up projections' products again
            total += shape.layers * 2 * split_weights(shape, COLUMN)
        total += sum(count * own_ffn_flops(shape, moe, 1, 1) for moe, count in (
            (False, flops.dense_count(shape)), (True, flops.moe_count(shape))) if ffn_recomputed(modules, moe))
    elif k.recompute == "full":
        loads = rank_loads(shape, Chunking.of(k), k.recompute, k.recompute_layers)
        for load in loads:
            for moe, mode, count in load.pieces:
                if mode == "full":
                    total += count * flops.layer_forward_flops(shape, moe, keys)
    return total


# ---------------------------------------------------------------------------------------------
# The Plan-facing view


@dataclass(frozen=True)
class Prediction:
    """A plan's predicted step, as `parc explain` shows it."""

    breakdown: Breakdown
    world: int
    tokens_per_step: int
    model_flops_per_token: float
    hardware_flops_per_token: float
    peak: float
    """Dense peak FLOP/s per GPU that MFU and HFU divide by (the fp8 peak under fp8 training; the
    datasheet's, whatever the power limit)."""
    sustained: float = 0.0
    """The peak the GPU sustains under the spec's power limit (`power.clock_fraction`); 0: none."""

    @property
    def step_seconds(self) -> float:
        return self.breakdown.step

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_per_step / self.breakdown.step

    @property
    def tokens_per_second_per_gpu(self) -> float:
        return self.tokens_per_second / self.world

    @property
    def model_flops_per_gpu(self) -> float:
        return self.tokens_per_second_per_gpu * self.model_flops_per_token

    @property
    def hardware_flops_per_gpu(self) -> float:
        return self.tokens_per_second_per_gpu * self.hardware_flops_per_token

    @property
    def mfu(self) -> float:
        return self.model_flops_per_gpu / self.peak

    @property
    def hfu(self) -> float:
        return self.hardware_flops_per_gpu / self.peak

    def time_json(self) -> dict:
        b = self.breakdown
        return {
            "step_seconds": _r(b.step),
            "compute_seconds": _r(b.compute),
            "recompute_seconds": _r(b.recompute),
            "bubble_seconds": _r(b.bubble),
            "bubble_fraction": _r(b.bubble_fraction),  # kept for tools: the idle/busy ratio
            "bubble_share": _r(b.bubble_share),
            "idle_busy_ratio": _r(b.bubble_fraction),
            "optimizer_seconds": _r(b.optimizer),
            "dp_copy_seconds": _r(b.copies),
            "exposed_comm_seconds": {a: _r(b.exposed[a]) for a in AXES},
            "comm_bytes": {a: int(round(b.sent[a])) for a in AXES},
            "slowest_stage": b.stage,
            "microbatches": b.microbatches,
        } | ({"offload_seconds": _r(b.offload), "host_bytes": int(round(b.host_bytes))} if b.host_bytes else {})

    def throughput_json(self) -> dict:
        return {
            "tokens_per_second": _r(self.tokens_per_second),
            "tokens_per_second_per_gpu": _r(self.tokens_per_second_per_gpu),
            "model_tflops_per_gpu": _r(self.model_flops_per_gpu / 1e12),
            "hardware_tflops_per_gpu": _r(self.hardware_flops_per_gpu / 1e12),
            "mfu": _r(self.mfu),
            "hfu": _r(self.hfu),
            "peak_tflops_per_gpu": _r(self.peak / 1e12),
        } | ({"sustained_peak_tflops_per_gpu": _r(self.sustained / 1e12)}
             if 0 < self.sustained < self.peak else {})


def _r(x: float) -> float:
    """Six significant digits: stable JSON across platforms, precise enough for any report."""
    return float(f"{x:.6g}")


@dataclass(frozen=True)
class PlanInputs:
    """What the time model reads of a plan, read once: the model's shape, the layout's knobs
    under the target's memory runtime, the GPU and its links, where each group's ranks sit, and
    the target's software. Every reduction of a plan starts here (`predict`, `attention_share`,
    `plan_rank_steps`)."""

    shape: Shape
    knobs: Knobs
    hw: Hardware
    geo: Geometry
    sw: Software


def plan_inputs(plan: Plan, sw: Software | None = None, runtime: str | None = None) -> PlanInputs | None:
    """`PlanInputs` of a plan, its target's software and memory runtime unless given; None while
    the plan cannot be predicted (holes open, or a pipeline that cannot be built: the memory
    model's `unpredictable` says why)."""
    if unpredictable(plan) is not None:
        return None
    from .targets import memory_runtime, software_of

    knobs = knobs_of(plan, runtime or memory_runtime(plan.target))
    if knobs is None:
        return None
    hw = hardware_of(plan)
    return PlanInputs(shape=shape_of(plan), knobs=knobs, hw=hw, geo=geometry_of(plan, hw), sw=sw or software_of(plan))


def predict(plan: Plan, constants: Constants = DEFAULT, sw: Software | None = None,
            runtime: str | None = None) -> Prediction | None:
    """The time model for a plan; None when it cannot be predicted (`plan_inputs`, or no world
    size). The software and the memory runtime are the plan's target's (`compiler/targets.py`)
    unless given."""
    inputs = plan_inputs(plan, sw, runtime)
    if inputs is None or plan.cluster.world_size is None:
        return None
    shape, knobs, hw = inputs.shape, inputs.knobs, inputs.hw
    breakdown = step_time(shape, knobs, hw, inputs.geo, constants, inputs.sw)
    return Prediction(
        breakdown=breakdown, world=plan.cluster.world_size,
        tokens_per_step=plan.training.tokens_per_step,
        model_flops_per_token=flops.model_flops_per_token(shape, knobs.seq),
        hardware_flops_per_token=hardware_flops_per_token(shape, knobs, inputs.sw),
        peak=datasheet_peak(plan, knobs.precision), sustained=matmul_peak(hw, knobs.precision))


def attention_share(plan: Plan, constants: Constants = DEFAULT, sw: Software | None = None) -> float | None:
    """The fused attention's share of a layer's computation as the plan's runtime (`sw`, else the
    target's) runs it (forward and both backward passes; an MoE model's layers weighted by their
    count), or None while the plan cannot be predicted: how much of the step rests on the
    attention kernel's speed in a training run, the time model's least certain term (`caveats`)."""
    inputs = plan_inputs(plan, sw)
    if inputs is None:
        return None
    shape, k, hw, sw = inputs.shape, inputs.knobs, inputs.hw, inputs.sw
    moe_layers = sum(shape.moe) if shape.moe else 0
    attention = total = 0.0
    for moe, count in ((False, shape.layers - moe_layers), (True, moe_layers)):
        if count:
            w = runtime_work(layer_work(shape, LayerCase.of(k, moe, sw), hw, constants), moe, shape, hw, sw,
                             constants)
            attention += count * (w.attention_f + w.attention_b)
            total += count * (w.forward + w.backward_input + w.backward_weight)
    return attention / total if total else 0.0


def plan_rank_steps(plan: Plan, constants: Constants = DEFAULT) -> tuple[tuple[Load, ...], dict[Load, RankStep]]:
    """The rank classes of a plan as `predict` builds them (the target's software and memory
    runtime), each pipeline stage's `Load` in stage order and its `RankStep`: what one stage's
    rank computes and sends, where `predict` reports the slowest stage's."""
    inputs = plan_inputs(plan)
    if inputs is None:
        raise ValueError(f"{plan.source}: the plan cannot be predicted ({unpredictable(plan)})")
    return rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, constants, inputs.sw)


def datasheet_peak(plan: Plan, precision: str) -> float:
    """The dense peak MFU and HFU divide by: the datasheet's at the precision of the linears
    (FP8's under fp8, FP4's under nvfp4), not a power limit's derated one (a run under a limit
    pays for it in MFU, as published MFUs count)."""
    gpu = plan.cluster.gpu
    key = PRECISION_PEAK.get(precision)
    return (getattr(gpu, f"{key}_flops") if key else None) or gpu.bf16_flops


def clear_caches() -> None:
    """Forget every cached piece of the time model, the kernel and HBM models it reads included
    (benchmarks measure a cold start with it: a cache left out here made the second search of a
    process look faster than any search a user runs; tests/test_search_speed_exact.py checks that
    none is left filled)."""
    for cached in (geometry, link, layer_work, embedding_work, output_work, exposed, rank_loads, _rank_frames, _piece,
                   _rank_knobs, _rank_times, _dp_ledger, _dp_exposed, piece_flops, recompute_modules, _replayed_idle_per_rank,
                   gemm_seconds, flash_attention_seconds, flash_attention_launches, gathered_band,
                   _torchtitan_again_seconds, weight_passes):
        cached.cache_clear()
    for cached in (kernel_model.padded_rows, kernel_model._largest_normal, kernel_model.deepep_fractions,
                   hbm.layer_bytes, hbm.embedding_bytes, hbm.output_bytes):
        cached.cache_clear()
