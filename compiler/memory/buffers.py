"""Transient buffers and the reserve: memory that is not a model state nor a saved activation.

Per rank, torch runtime (Megatron's and ZeRO's formulas have no such terms):

- the backward working set: while one layer runs its backward, the gradients of its activations
  (the block's output gradient, all-gathered, and the FFN's inner gradients: h + 3 F/t per token
  for SwiGLU, h + 2 F/t for GELU) plus, under recomputation, the layer's rematerialised
  activations; one layer at a time, so the largest layer counts;
- the loss: three fp32 tensors of the logits' shape in the vocabulary-parallel loss's backward
  (two without tp), s x b x vocab / tp each, on the rank that holds the output layer (the fp32
  log-softmax itself is a saved activation; `activations.logits_buffer`); the larger of this
  and the working set counts, since they do not overlap in time;
- FSDP: without pipelining, zero3 holds the layer it runs plus the one it prefetches (FSDP2's
  default prefetch of one layer), in bf16, and every mode but zero2 the root's parameters
  (embedding, final norm, output layer: FSDP2 does not reshard a root after forward); zero2 and zero3 reduce-scatter each layer's gradients
  from an unsharded fp32 copy (reduce_dtype=fp32); under pipelining gradients are accumulated
  unsharded instead (a model state, see `states.py`);
- DDP: the bf16 cast of the layer being computed (the fp32 parameters are the master)
  and the reduction buffer of one layer's fp32 gradients (the runtime's DDP is FSDP2 on shards
  of one rank, which all-reduces per layer);
- zero1 (no FSDP2; the parameters are the compute-dtype buckets): autograd's gradients of the
  layer whose backward runs, in the compute dtype, before the buckets' hooks add each into the
  fp32 main gradients and drop it (a bound: a hook runs as soon as its parameter's gradient
  is complete, so fewer are alive at once).

The reserve is what the process cannot use for tensors: the CUDA context, cuBLAS workspaces,
NCCL's communicator buffers, and the caching allocator's fragmentation, each a sourced figure
in `gpu.py`; the memory check compares each rank's peak with HBM minus their sum for the plan's
layout. `RESERVE_FIXED` and `RESERVE_FRACTION` remain the allowance search uses before it knows
a candidate's communicators (at least every shipped layout's figure; a test holds it).
"""

from __future__ import annotations

from ..stages import Chunk
from .activations import LayerActivations, activation_bytes
from .inputs import Knobs, Shape
from .parameters import Params, expert_shard_dim, ffn_params, layer_params
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


def backward_working_set(a: LayerActivations, weight_gradients: int, released: bool = True) -> int:
    """What a layer's backward adds, at its worst moment, to the activations its micro-batch
    holds (`saved`, counted with the micro-batches in flight). With the layer's backward
    moments (`activations.backward_moments` and `moe_backward_moments`: the torch runtime) the worst
    moment less the saved set: the micro-batch being backpropagated has already freed what the
    backward consumed. Otherwise the bound: every activation gradient, the rematerialised
    tensors and the FFN's weight gradients on top of the whole saved set (`weight_gradients`,
    `ffn_weight_gradients`), also where the backward keeps the graph (`released` False: a
    zero-bubble schedule's input backward, retain_graph=True)."""
    if a.moments and released:
        return max(a.moments) - a.saved
    return a.working + (a.full - a.saved) + weight_gradients


def ffn_weight_gradients(shape: Shape, k: Knobs, moe: bool) -> int:
    """The compute-dtype gradients of one layer's FFN weights (router, shared and routed experts
    for MoE), alive beside its backward working set: autograd writes each weight's gradient in
    the dtype it computed in (FSDP2's unsharded bf16 parameters) and FSDP2 folds them into the
    fp32 accumulation or reduction only in the layer's post-backward hook. The FFN's backward is
    the working set's moment, and its weight gradients come first (attention's come later).
    Measured by the rehearsal at Llama 3 405B's widths: w1, w2 and w3's three 218 MB bf16
    gradients in the FFN's backward (docs/memory-model.md, rehearsal)."""
    return activation_bytes(k.precision) * ffn_params(shape, k.tp, k.ep, moe)


def largest_layer(shape: Shape, tp: int, ep: int, chunks: tuple[Chunk, ...]) -> Params | None:
    """Parameters of the rank's largest layer (MoE layers are larger than dense ones)."""
    kinds = {shape.is_moe(layer) for c in chunks for layer in c.layer_range}
    if not kinds:
        return None
    return max((layer_params(shape, tp, ep, moe) for moe in kinds), key=lambda p: p.total)


def last_layer(shape: Shape, tp: int, ep: int, chunks: tuple[Chunk, ...]) -> Params | None:
    """Parameters of the rank's last layer in model order (a dense or an MoE layer, as the
    model's pattern says): the block FSDP2 computes last in the forward."""
    layers = [layer for c in chunks for layer in c.layer_range]
    return layer_params(shape, tp, ep, shape.is_moe(max(layers))) if layers else None


def fsdp_buffers(layer: Params | None, k: Knobs, root: Params | None = None) -> int:
    """Per-layer parameter and gradient buffers of the data-parallel wrapper (see above)."""
    if k.sharding == "zero1":  # autograd's compute-dtype gradients of one layer (see above)
        return compute_copy_bytes(layer, k.copy_precision) if layer is not None else 0
    reduce = FP32 * layer.total if layer is not None and (k.pp == 1 or k.sharding == "none") else 0
    return gathered_buffers(layer, k, root) + reduce  # one layer's fp32 gradients being reduced


def fsdp_expert_temporaries(shape: Shape, k: Knobs) -> int:
    """FSDP2's temporaries for routed-expert stacks it shards on a dim other than 0
    (`expert_shard_dim`: fewer local experts than the expert shard group; torch 2.13,
    distributed/fsdp/_fully_shard/_fsdp_collectives.py), beside its buffers of a dim-0 unit:

    - the all-gather's copy-out (`foreach_all_gather_copy_out`): each such stack lands in an
      `empty_like` temporary of its unsharded size (compute dtype) and is chunk-cat into the
      unsharded parameter, alive with the all-gather's flat output: every stack of the unit;
    - the reduce-scatter (`foreach_reduce`): each stack's unsharded gradient is re-laid out
      shard-major by `torch.cat(torch.chunk(grad, world, dim))`, the copy replacing it in the
      list, and the last stack's original stays referenced (`chunks`) while the reduce-scatter
      input is filled: one stack's gradient more, fp32 under pipelining (FSDP2's accumulated
      gradient), else the compute dtype.

    Under pipelining every layer is gathered once, at the step's first forward (nothing else is
    alive then), and reduced once, in the last backward, a moment of its own (`fsdp_buffers`):
    the reduce's stack counts. Without it each layer is gathered and reduced every micro-batch
    and the model's FSDP buffers add to the working set: the larger of the two counts. Traced
    on a rehearsal with two local experts of 1,024 x 4,096 over an expert group of 4 (zero3,
    no pipelining; the tracker at `aten.cat.out` and `fsdp.chunk_cat`): three 16,777,216-byte
    `empty_like` temporaries beside the 50,331,648-byte all-gather output, and at the
    reduce-scatter three 16,777,216-byte re-laid gradients and one original
    (tests/test_expert_temporaries.py)."""
    if k.runtime != "torch" or k.sharding not in ("zero2", "zero3", "hsdp") or not shape.moe:
        return 0
    local = max(1, shape.experts // k.ep)
    if not expert_shard_dim((local, shape.hidden, shape.expert_ffn), k.expert_shard_group):
        return 0
    stack = local * shape.hidden * shape.expert_ffn
    compute = FP32 if k.precision == "fp32" else activation_bytes(k.precision)
    reduce = stack * (FP32 if k.pp > 1 else compute)
    if k.pp > 1:
        return reduce
    return max(reduce, compute_copy_bytes(Params(expert=shape.ffn_matrices * stack), k.copy_precision))


def gathered_buffers(layer: Params | None, k: Knobs, root: Params | None = None) -> int:
    """Gathered parameters counted as buffers: the layers in flight without pipelining (the one
    computed and, for zero3 and hsdp, the one FSDP2 prefetches), and
    without pipelining the root's parameters:
    FSDP2 does not reshard a root module after its forward (they would be gathered again at once
    for backward), so the embedding, final norm and output layer stay gathered through the step
    (zero2 holds every copy as a model state already, see `model.py`). zero1 gathers nothing:
    its parameters are the compute-dtype copy."""
    if k.sharding == "zero1":
        return 0
    held = compute_copy_bytes(root, k.copy_precision) if root is not None and k.pp == 1 and k.sharding != "zero2" else 0
    # Under pipelining every layer's copy is held already (a model state, `model.keeps_gathered`:
    # the runtime turns reshard_after_forward off there, whatever the schedule; the rehearsal of
    # zero1 and zero3 under 1F1B shows no layer gathered beyond them).
    per_layer = k.sharding != "zero2" and k.pp == 1
    if layer is None or not per_layer:
        return held
    # zero3 and hsdp also gather the next layer ahead; a shard of one rank copies when it computes
    return held + compute_copy_bytes(layer, k.copy_precision) * (2 if k.sharding in ("zero3", "hsdp") else 1)
