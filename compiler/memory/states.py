"""Model states per rank: parameters, gradients and optimizer states, for each dp sharding.

Bytes per parameter element, by runtime (o = optimizer state: 8 for Adam's two fp32 moments,
4 for SGD's fp32 momentum; sharded = divided over the sharding group, see `Knobs`):

torch (what parc generates; FSDP2 with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)):

| sharding | params | grads | optimizer | also held |
|---|---|---|---|---|
| none (DDP) | 4 | 4 | o | the compute copy (FSDP2 on a shard of one rank), as zero3 holds it |
| zero1 | w (the compute dtype) | 4 (flat fp32 buckets) | (o + 8) sharded | the fp32 master and reduced-gradient shards (`zero1_buffer_bytes`) |
| zero2 (reshard_after_forward=False) | 4 sharded | 4 sharded | o sharded | bf16 copy of every layer, unsharded, forward to backward |
| zero3, hsdp (reshard_after_forward=True) | 4 sharded | 4 sharded | o sharded | the unsharded layers in flight (see `model.py`) |

The parameters themselves are fp32 (the master copy is the parameter), so there is no separate
4-byte master as in the ZeRO paper, except under zero1, which runs no FSDP2: its distributed
optimizer (parallel.py's `Bucket`, as Megatron-Core's) holds the parameters in the compute dtype
(w: 2, or 4 when computing in fp32) as views of flat buckets, the fp32 main gradients in flat
buckets beside them, and per bucket an fp32 master shard (4 sharded) and the reduce-scatter's
fp32 output (4 sharded), counted under `optimizer`; the all-gather of the updated shards writes
into the parameters' own buckets in place (its input is this rank's shard of them), so it costs
nothing more, and there is no compute copy. Under pipeline parallelism, torch.distributed.pipelining runs
every backward but the step's last with `set_requires_gradient_sync(False)` and
`set_reshard_after_backward(False)` (`PipelineStage.backward_maybe_with_nosync`), so FSDP2 keeps
the unsharded gradients, upcast to the fp32 reduce dtype (`FSDPParam.to_accumulated_grad_if_needed`),
until the step ends: 4 more bytes per unsharded parameter (`accumulated_grads`). zero1 holds them
too, beside its buckets, under pipelining and under gradient accumulation (its FSDP2 over one
rank syncs only the last micro-batch).

megatron (Megatron-LM `theoretical_memory_usage.py`): bf16 params 2, fp32 main grads 4, fp32 master
plus moments 12 (= 18 per parameter; the distributed optimizer shards the 12: 6 + 12/d). The main
grads are the data-parallel buffer, which holds the dtype gradients are reduced in: bf16 (2) where
the target says `grad-reduce bf16` (Megatron-Core's `grad_reduce_in_fp32 = False`, the NeMo and
Megatron-Bridge performance recipes' setting; `Knobs.grad_bytes`).
Under fp8 Transformer Engine's linears (the layers' linears and the experts) hold fp8 weights
beside or in place of the bf16 ones (`fp8_weight_bytes`): with the distributed optimizer
parc's launcher sets `--fp8-param-gather` (unless `fp8-params off`), as NeMo's and
Megatron-Bridge's fp8 recipes do, and the weight is the fp8 tensor itself (1 byte under delayed or per-tensor scaling, 2 where Hopper's
fp8 GEMMs need its transpose too, 2 1/16 under MXFP8's two quantized copies and their scales);
otherwise the bf16 weight stays and TE caches its fp8 cast across micro-batches (the module's
`_fp8_workspaces`, kept while `is_first_microbatch` is passed, Megatron-Core's default).
zero (Rajbhandari et al. 2020, Section 3.1): 2 + 2 + 12 = 16; ZeRO-1 4 + 12/d, ZeRO-2 2 + 14/d,
ZeRO-3 16/d. In both, zero2 also shards gradients and zero3/hsdp also parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from .inputs import ELEMENT_BYTES, Knobs
from .parameters import Params

FP32 = 4
HALF = 2
FP8 = 1


@dataclass(frozen=True, slots=True)
class States:
    """Model-state bytes on one rank."""

    params: int
    grads: int
    optimizer: int
    unsharded: int = 0
    """Bytes of the full (dp-unsharded) compute copy of every parameter the rank holds (FSDP)."""
    accumulated_grads: int = 0
    """fp32 unsharded gradients FSDP2 keeps across micro-batches under pipeline parallelism."""


def optimizer_bytes(optimizer: str, runtime: str) -> int:
    """Optimizer state per parameter: moments (torch keeps no separate master), plus a master."""
    moments = FP32 if optimizer == "sgd" else 2 * FP32
    return moments if runtime == "torch" else moments + FP32


def compute_copy_bytes(p: Params, precision: str) -> int:
    """An unsharded compute copy: the linears' weights in bf16 (1 byte under fp8 all-gather:
    torchao's float8 all-gather covers its Float8Linear layers, not the routed experts' grouped
    weights), the rest bf16; fp32 when the runtime computes in fp32 (FSDP2 still copies into its
    own buffer)."""
    if precision == "fp32":
        return FP32 * p.total
    matmul = FP8 if precision == "fp8" else HALF
    return p.linear * matmul + (p.expert + p.other) * HALF


def checkpoint_gather_bytes(p: Params, k: Knobs) -> int:
    """What building a checkpoint's state dict allocates on top of the model states, while it is
    saved or loaded (torch runtime): nothing in any mode. Every mode hands DCP the shards it
    holds; zero1's are ShardedTensor views of its flat states (before, zero1 gathered whole
    moments: o bytes per parameter)."""
    return 0


def zero1_buffer_bytes(p: Params, k: Knobs, chunks: tuple[Params, ...] = ()) -> int:
    """zero1's distributed-optimizer buffers beyond the moments (torch runtime): fp32 master and
    reduced-gradient shards, in its padded buckets given the rank's chunks (`zero1_buckets`; the
    all-gather's input and output are the parameters' buckets)."""
    return round(2 * FP32 * zero1_buckets(p, k, chunks)[1])


def zero1_param_bytes(k: Knobs) -> int:
    """Bytes of one of zero1's parameters: it holds them in the compute dtype."""
    return FP32 if k.precision == "fp32" else HALF


def zero1_buckets(p: Params, k: Knobs, chunks: tuple[Params, ...] = ()) -> tuple[float, float]:
    """(elements of zero1's flat gradient buckets on one rank, elements of them it owns). Given
    the rank's chunks, exactly as parallel.py's `build_buckets` lays them out: one bucket per
    chunk and data-parallel group (the dense parameters over the dense replicas, the experts
    over theirs), each padded to a multiple of its group's size; without them, unpadded (a
    floor, for search)."""
    groups = ((p.linear + p.other, k.dense_shard_group), (p.expert, k.expert_shard_group))
    if not chunks:
        return float(p.total), sum(n / g for n, g in groups)
    padded = [(-(-n // g), g) for c in chunks for n, g in ((c.linear + c.other, k.dense_shard_group),
                                                           (c.expert, k.expert_shard_group))]
    return float(sum(share * g for share, g in padded)), float(sum(share for share, _ in padded))



def fp8_weight_bytes(k: Knobs) -> tuple[float, float]:
    """(bytes per element of an fp8 linear's weight in place of its bf16 one, bytes of a cached
    fp8 copy beside it) as Megatron-LM holds them under `precision fp8` (the module docstring's
    table). Transformer Engine's fp8 tensor: one byte per element for delayed and per-tensor
    current scaling, with a transposed copy where the GPU's fp8 GEMMs are TN only (Hopper and
    Ada: TE's `is_non_tn_fp8_gemm_supported` is false before Blackwell, and the backward's
    data-gradient GEMM reads the weight transposed); MXFP8 quantizes along rows and along
    columns separately, each with one E8M0 scale per 32 elements (`MXFP8Tensor`'s rowwise and
    columnwise data); NVFP4 keeps both directions too (`NVFP4Tensor`, `ELEMENT_BYTES` each:
    Megatron-LM's parameter buffer holds the rowwise data and a transpose kernel rebuilds the
    columnwise after each gather, TE 2.20 `tensor/utils.py`). With fp8 (or NVFP4) parameters (`--fp8-param-gather`, zero1) the fp8 tensor is the
    weight: (those bytes, 0); without (DDP, or zero1 under `fp8-params off`: `Knobs.fp8_params`),
    the bf16 weight stays and the cast is cached: (2, those bytes). Sharded weights (zero3) are
    counted as their bf16 shards: NVIDIA's FSDP runs gather fp8 parameters layer by layer
    (Megatron-FSDP), which the gathered-weight accounting does not tell from bf16, and torch
    FSDP2's cached casts are not modelled."""
    if not (k.runtime.startswith("megatron") and k.precision in ("fp8", "nvfp4")) or k.sharding not in ("zero1", "none"):
        return HALF, 0.0
    if k.precision == "nvfp4":
        fp8 = 2 * ELEMENT_BYTES["nvfp4"]
    elif k.fp8_recipe == "mxfp8":
        fp8 = 2 * (FP8 + FP8 / 32)
    else:
        fp8 = 2.0 * FP8 if k.fp8_transposed else float(FP8)
    return (fp8, 0.0) if k.sharding == "zero1" and k.fp8_params else (float(HALF), fp8)


def fp8_weight_extra(p: Params, k: Knobs) -> float:
    """Bytes the fp8 linears' weights add to their bf16 count (`fp8_weight_bytes`; negative where
    fp8 parameters take less than bf16). zero1 and DDP hold every weight whole."""
    weight, cached = fp8_weight_bytes(k)
    return (weight - HALF + cached) * (p.linear + p.expert)


NO_PADDING = Params()
"""No padded rows: the unpadded shares (`model_states`' default)."""


def model_states(p: Params, k: Knobs, chunks: tuple[Params, ...] = (), padding: Params = NO_PADDING) -> States:
    """The rank's model states. Exact for the torch runtime given `chunks` (its chunks'
    parameters, which add up to p: zero1's padded buckets, `zero1_buckets`) and `padding` (the
    rows FSDP2 pads when it shards, `parameters.fsdp_padding`: zero2, zero3, hsdp); without
    them, the unpadded shares."""
    total = p.total
    sharded = (p.linear + p.other) / k.dense_shard_group + p.expert / k.expert_shard_group
    if k.runtime == "torch" and k.sharding in ("zero2", "zero3", "hsdp"):
        sharded += (padding.linear + padding.other) / k.dense_shard_group + padding.expert / k.expert_shard_group
    opt = optimizer_bytes(k.optimizer, k.runtime)
    if k.runtime != "torch":
        param, grad = (HALF, k.grad_bytes) if k.runtime.startswith("megatron") else (HALF, HALF)
        shard_params = k.sharding in ("zero3", "hsdp")
        shard_grads = k.sharding in ("zero2", "zero3", "hsdp")
        shard_opt = k.sharding != "none"
        return States(
            params=round(param * (sharded if shard_params else total) + fp8_weight_extra(p, k)),
            grads=round(grad * (sharded if shard_grads else total)),
            optimizer=round(opt * (sharded if shard_opt else total)),
        )
    buffers = p.buffer_bytes  # the modules' buffers (routers' balancing state), whole on every rank
    if k.sharding == "zero1":  # no FSDP2: parameters in the compute dtype, no compute copy
        buckets, shard = zero1_buckets(p, k, chunks)
        return States(round(zero1_param_bytes(k) * buckets) + buffers, round(FP32 * buckets),
                      round(opt * shard) + zero1_buffer_bytes(p, k, chunks))
    # none runs on FSDP2 too (a mesh of replicas x shards of one rank): its compute copy is a
    # separate buffer, held or freed like zero3's (see `model.py`)
    copy = compute_copy_bytes(p, k.copy_precision)
    if k.sharding == "none":
        return States(FP32 * total + buffers, FP32 * total, opt * total, unsharded=copy)
    return States(
        params=round(FP32 * sharded) + buffers, grads=round(FP32 * sharded), optimizer=round(opt * sharded),
        unsharded=copy,
        accumulated_grads=FP32 * total if k.pp > 1 else 0,
    )
