"""Transient buffers and the reserve: memory that is not a model state nor a saved activation.

Per rank, torch runtime (Megatron's and ZeRO's formulas have no such terms):

- the backward working set: while one layer runs its backward, the gradients of its activations
  (the block's output gradient, all-gathered, and the FFN's inner gradients: h + 3 F/t per token
  for SwiGLU, h + 2 F/t for GELU) plus, under recomputation, the layer's rematerialised
  activations; one layer at a time, so the largest layer counts;
- the loss: the bf16 logits and the fp32 gradient of the loss input, s x b x vocab / tp each,
  on the rank that holds the output layer (the fp32 log-softmax itself is a saved activation);
  the larger of this and the working set counts, since they do not overlap in time;
- FSDP: without pipelining, zero3 holds the layer it runs plus the one it prefetches (FSDP2's
  default prefetch of one layer), in bf16; zero2 and zero3 reduce-scatter each layer's gradients
  from an unsharded fp32 copy (reduce_dtype=fp32); under pipelining gradients are accumulated
  unsharded instead (a model state, see `states.py`);
- DDP and zero1: the bf16 cast of the layer being computed (the fp32 parameters are the master)
  and the reduction buffer of one layer's fp32 gradients (`replicate`, like FSDP2, all-reduces
  per layer group).

The reserve is what the process cannot use for tensors: the CUDA context, cuBLAS workspaces,
NCCL's communicator buffers, and the caching allocator's fragmentation. It is two global
constants, not fitted yet (no measurement of the generated runtime on a GPU exists): the memory
check compares each rank's peak with HBM minus the reserve.
"""

from __future__ import annotations

from ..stages import Chunk
from .activations import LayerActivations
from .inputs import Knobs, Shape
from .parameters import Params, layer_params
from .states import FP32, compute_copy_bytes

GiB = 1 << 30

RESERVE_FIXED = 2 * GiB
"""CUDA context (~0.5 GiB on Hopper), cuBLAS workspaces, NCCL buffers for the tp/pp/dp/cp/ep
communicators (NCCL_BUFFSIZE 4 MiB per channel and peer)."""

RESERVE_FRACTION = 0.05
"""Caching-allocator fragmentation, as a fraction of HBM (Megatron-LM's estimator adds 5 % to
its activation figure for the same reason)."""


def reserve_bytes(hbm: int) -> int:
    return RESERVE_FIXED + round(RESERVE_FRACTION * hbm)


def backward_working_set(a: LayerActivations) -> int:
    return a.working + (a.full - a.saved)


def largest_layer(shape: Shape, tp: int, ep: int, chunks: tuple[Chunk, ...]) -> Params | None:
    """Parameters of the rank's largest layer (MoE layers are larger than dense ones)."""
    kinds = {shape.is_moe(layer) for c in chunks for layer in c.layer_range}
    if not kinds:
        return None
    return max((layer_params(shape, tp, ep, moe) for moe in kinds), key=lambda p: p.total)


def fsdp_buffers(layer: Params | None, k: Knobs) -> int:
    """Per-layer parameter and gradient buffers of the data-parallel wrapper (see above)."""
    if layer is None:
        return 0
    copy = compute_copy_bytes(layer, k.precision)
    reduce = FP32 * layer.total  # one layer's fp32 gradients in the reduction buffer
    if k.sharding in ("none", "zero1"):
        return copy + reduce
    per_layer_gather = k.sharding in ("zero3", "hsdp") and (k.pp == 1 or k.schedule in ("gpipe", "1f1b"))
    gathered = 2 * copy if per_layer_gather else 0
    return gathered + (reduce if k.pp == 1 else 0)
