"""What a GPU holds beyond the tensors the memory model counts, each a figure with its source.

The model's stage total is what `torch.cuda.max_memory_allocated()` would report for the rank:
the tensors alive at its worst moment. A GPU also holds:

outside torch's caching allocator (not in `max_memory_reserved`, but not usable for tensors):

- the CUDA context: driver state and the kernels loaded so far, about 400 MiB per process
  with CUDA >= 11.7's lazy module loading (PyTorch's default; pytorch/pytorch#109888, ptrblck:
  "around 400MB if CUDA >= 11.7 is used and lazy module loading enabled"; before 11.7 over
  1 GB);
- NCCL's buffers, per communicator the rank joins: NCCL_BUFFSIZE (4 MiB by default, NCCL's
  environment-variable documentation) for every channel to every peer it exchanges with.
  Rings and trees (all-gather, reduce-scatter, all-reduce over tp, dp, cp) talk to two peers
  per channel over up to NCCL_MAX_NCHANNELS = 32 channels; point-to-point (pipelining) and
  all-to-all (ep) give each peer NCCL_NCHANNELS_PER_NET_PEER = 2 channels. These are upper
  figures from NCCL's defaults, not measurements;

inside the caching allocator (in `max_memory_reserved`):

- cuBLAS workspaces: 32 MiB per (handle, stream) on Hopper and later (PyTorch's
  `CublasHandlePool.cpp`: ":4096:8", "32MiB for Hopper"; 8 MiB + 128 KiB before), allocated
  through the caching allocator; two: the forward's thread and autograd's device thread
  each take a handle;
- the allocator's rounding and fragmentation: what it has reserved from the driver beyond the
  bytes allocated (`max_memory_reserved - max_memory_allocated`), taken as FRAGMENTATION of HBM
  (Megatron-LM's estimator adds 5 % for the same reason). Requests are rounded to 512 bytes,
  and above 1 MiB carved from 2 MiB or 20 MiB segments, so rounding alone is well under 1 %;
  what remains is blocks freed between steps that a larger request cannot reuse. Not fitted:
  no GPU measurement of the generated runtime exists yet (benchmarks/gpu_check.py is ready
  to take one). `parc rehearse` replays a rank's own allocations through the allocator's
  policy (`allocator.py`) and shows what this allowance stands for on that rank: at Llama 3
  405B's 1F1B first stage, twice it with the default policy, and 30-72 % of it on the 405B
  cases with expandable segments, which the generated train.py sets (torchtitan's launcher
  does the same): freed neighbours merge across one segment per pool (docs/memory-model.md,
  "Replaying the caching allocator", benchmarks/reserve_replay.py). What the replays reserve
  beyond the allocated peak is, on a stage that runs the loss, first the loss's stranded
  blocks (the next item, derived) and then holes the layers' transients leave (1.0-3.2 GiB on
  the eight replayed layouts under expandable segments, 20 MiB page rounding included). The
  allowance stands for those layer holes; they are not replaced: no closed form of the
  schedule's tensors was found that reproduces them;

- the blocks the caching allocator still holds at the loss's backward that none of its
  requests can use (`loss_holes`): the compute-dtype logits (`cached_logits`) and, with tp
  and sequence parallelism, the output layer's all-gather staging block (`staged_gather`):
  a freed block is reused only by requests that fit in it, and the loss's requests after the
  logits are freed are all fp32, twice their size (`stranded_at_loss`).

So parc predicts `max_memory_reserved` = the worst rank's peak + cuBLAS workspaces +
fragmentation + the loss's stranded blocks, and the memory check asks that it fit in HBM less
the context and NCCL's buffers. `reserve_bytes` is the difference between HBM and what the model's tensors may use.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20

CUDA_CONTEXT = 400 * MiB
"""pytorch/pytorch#109888: ~400 MB with CUDA >= 11.7 and lazy module loading."""

NCCL_BUFFSIZE = 4 * MiB
"""NCCL's documented default for NCCL_BUFFSIZE."""

NCCL_RING_CHANNELS = 32
"""NCCL_MAX_NCHANNELS' default: the most channels a collective uses."""

NCCL_P2P_CHANNELS = 2
"""NCCL_NCHANNELS_PER_NET_PEER's default: channels per peer for send/recv and all-to-all."""

CUBLAS_WORKSPACE = 32 * MiB
"""PyTorch's default cuBLAS workspace on Hopper and later (CublasHandlePool.cpp, ":4096:8")."""

CUBLAS_HANDLES = 2
"""The forward's thread and autograd's device thread."""

FRAGMENTATION = 0.05
"""Reserved beyond allocated, as a fraction of HBM (Megatron-LM's 5 % allowance; not fitted)."""

RING_AXES = ("tp", "cp", "dp")
"""Axes whose collectives run as rings (all-gather, reduce-scatter, all-reduce)."""
PEER_AXES = ("pp", "ep")
"""Axes that exchange point to point: pipelining's send/recv, ep's all-to-all."""


@dataclass(frozen=True, slots=True)
class Overheads:
    """A GPU's memory beyond the model's tensors, by source (bytes)."""

    cuda_context: int
    nccl: int
    cublas: int
    fragmentation: int
    cached_logits: int = 0
    """`cached_logits`: the freed compute-dtype logits' block, reserved at the loss's backward."""
    staged_gather: int = 0
    """`loss_holes`' second figure: the output layer's freed all-gather staging block, stranded
    below the loss's fp32 requests beyond what `cached_logits` already reserves."""

    @property
    def outside_allocator(self) -> int:
        """Held by the driver and NCCL: never in `max_memory_reserved`."""
        return self.cuda_context + self.nccl

    @property
    def inside_allocator(self) -> int:
        """Reserved by torch's caching allocator beyond the model's tensors."""
        return self.cublas + self.fragmentation + self.cached_logits + self.staged_gather

    @property
    def total(self) -> int:
        return self.outside_allocator + self.inside_allocator


def nccl_communicator_bytes(axis: str, degree: int) -> int:
    """NCCL's buffers for one communicator of `degree` ranks (0 for a group of one)."""
    if degree <= 1:
        return 0
    if axis in PEER_AXES:
        peers = 2 if axis == "pp" else degree - 1  # the stages before and after; every other ep rank
        peers = min(peers, degree - 1)
        return NCCL_BUFFSIZE * NCCL_P2P_CHANNELS * peers
    return NCCL_BUFFSIZE * NCCL_RING_CHANNELS * min(2, degree - 1)


def cached_logits(logits: int, loss_buffer: int, buffers: int, gathered: int = 0) -> int:
    """What the allocator holds reserved beyond the stage's peak of tensors because the loss's
    compute-dtype logits were freed before its backward (bytes; a GPU term: `max_memory_reserved`
    counts it, `max_memory_allocated` does not).

    Both torch programs cast the output layer's bf16 logits to fp32 for the loss (parc's model
    returns `output(h).float()`; torchtitan's `loss_fn` runs `cross_entropy(pred.float(), ...)`
    and its train step `del pred` before `loss.backward()`, torchtitan 9dec370 train.py), so the
    bf16 logits (`logits` bytes) are freed before the loss's backward. torch's caching allocator
    reuses a freed block only for a request that fits in it (CUDACachingAllocator.cpp,
    `get_free_block`: the smallest cached block at least the request's size), and every request
    of the loss's backward is an fp32 tensor of the logits' shape, twice the block: each takes a
    fresh segment while the bf16 block stays reserved until the output layer's backward reuses it
    for the logits' gradient. The stage's moment then reserves the loss's buffers (`loss_buffer`,
    `activations.logits_buffer`), the parameters FSDP2 holds gathered through it (`gathered`,
    `model.gathered_at_loss`: the root's, never resharded after forward) and that block; the
    model's stage total counts `buffers` (the larger of the loss's buffers and a layer's working
    set, with FSDP's buffers: the root's, the layers gathered around the one computed and one
    layer's reduce-scatter), so the block adds only what that moment exceeds them by. (Before,
    the root's parameters were taken as spent against the block, as if they were not alive at
    the loss: 2.1 GB at Llama 3 8B.) With expandable segments (torchtitan's launcher sets
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`) the freed bf16 logits and their freed fp32
    cast are adjacent and merge, the backward's first fp32 request takes two thirds of the merged
    block and the bf16-sized third stays: the same figure. A compiled loss (torchtitan's `compile
    on`, `activations.compiled_loss_saved`) saves the bf16 logits for its backward instead:
    nothing is freed and none is cached (`model.cached_logits_bytes`). Nothing is fitted. On a
    part too small for it the allocator frees the cached block and retries (`num_alloc_retries`),
    at the cost of a cudaFree and a cudaMalloc every step: the memory check counts it, as a run
    that fits cleanly needs it."""
    return max(0, loss_buffer + gathered + logits - buffers)


def stranded_at_loss(logits: int, staging: int) -> int:
    """The bytes of the loss's freed blocks that no request of its backward can use (bytes): what
    best fit (`get_free_block`) leaves when the loss's requests are fp32 tensors of the logits'
    shape (`2 * logits`) and the blocks freed before the first of them are the compute-dtype
    logits (`logits`, freed once cast) and, before those are made, the output layer's all-gather
    staging block (`staging`; 0 without one). Worked out by hand from the policy and replayed
    on hand-built sequences (tests/test_reserve.py), under either policy:

    - staging < logits: the logits cannot reuse the staging block, and no fp32 request can use
      either: both are stranded (the 70B tp 8 replay's 2.1 and 3.9 GiB holes);
    - logits <= staging < 2 x logits: the logits take the staging block (best fit) and, once
      freed, give it back whole; the fp32 requests cannot use it: the staging block alone;
    - staging >= 2 x logits: an fp32 request fits where the staging block was: the logits' block
      alone, as `cached_logits` has always counted it."""
    if staging < logits:
        return logits + staging
    if staging < 2 * logits:
        return staging
    return logits


def loss_holes(logits: int, loss_buffer: int, buffers: int, gathered: int = 0, staging: int = 0) -> tuple[int, int]:
    """(`cached_logits`, `staged_gather`): what the allocator holds reserved beyond the stage's
    peak of tensors at the loss's backward, split into the compute-dtype logits' block (the
    figure `cached_logits` has named since it was added; unchanged where there is no staging
    block) and what the output layer's all-gather staging block adds to it (bytes).

    The staging block: with tp and sequence parallelism the output layer's input is
    sequence-sharded (tokens x hidden / tp per rank, dim 1 of batch-first activations) and
    all-gathered before its matmul. A DTensor redistribute of `Shard(1)` to `Replicate()` runs
    `funcol.all_gather_single` with `gather_dim=1`, which gathers into dim 0 and then rearranges
    the chunks into dim 1 (torch 2.13, distributed/_functional_collectives.py,
    `_utils._maybe_view_chunk_cat`): a view when dim 0 holds one sequence per rank (a
    micro-batch of one), otherwise `torch.cat(torch.chunk(res, group_size, dim=0), dim=1)`, a
    copy, and the gathered buffer, tokens x hidden in the compute dtype, is freed as soon as it
    is made, just before the logits are computed (`model.loss_holes_bytes`: micro-batch > 1). Seen in
    the rehearsal's trace of Llama 3 70B at tp 8 (a 2.0 GiB request freed before the 3.9 GiB
    bf16 logits; memory-model.md, "Replaying the caching allocator"). Every earlier tp gather
    makes such a block too, but the layers' requests that follow reuse it; the loss's do not
    (`stranded_at_loss`). Like `cached_logits` it counts only what the loss's moment (its
    buffers, what FSDP2 holds gathered, the stranded blocks) exceeds the stage's `buffers` by.
    Nothing is fitted."""
    cached = cached_logits(logits, loss_buffer, buffers, gathered)
    total = max(0, loss_buffer + gathered + stranded_at_loss(logits, staging) - buffers)
    return cached, max(0, total - cached)


def overheads(hbm: int, degrees: dict[str, int] | None, cached: int = 0, staged: int = 0) -> Overheads:
    """The overheads of one rank; `degrees` maps axes (tp, pp, dp, cp, ep) to their degrees;
    None for the most any layout needs (each axis a communicator of eight or more ranks, ep
    all-to-all over 64), which search uses before a layout is chosen."""
    if degrees is None:
        nccl = sum(nccl_communicator_bytes(a, 8) for a in RING_AXES) + nccl_communicator_bytes("pp", 8) \
            + nccl_communicator_bytes("ep", 64)
    else:
        nccl = sum(nccl_communicator_bytes(a, degrees.get(a, 1)) for a in (*RING_AXES, *PEER_AXES))
    return Overheads(cuda_context=CUDA_CONTEXT, nccl=nccl, cublas=CUBLAS_WORKSPACE * CUBLAS_HANDLES,
                     fragmentation=round(FRAGMENTATION * hbm), cached_logits=cached, staged_gather=staged)
