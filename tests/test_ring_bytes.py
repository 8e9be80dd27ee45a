"""The HBM bytes the time model charges around ring attention's kernels (`timing.ring_bytes`),
against the bytes the runtimes' own code moves, measured op by op.

A `TorchDispatchMode` sees every aten op the code runs and adds the bytes of its tensor inputs
and outputs (views move nothing; the attention kernel itself is left out: the model times it
from its FLOPs). Measured here, on one process:
- parc's job: the generated model.py's `attend_blocks`, which merges one ring step's block into
  the fp32 accumulators, for a step over every query row and one over the later half (the two
  kinds of off-diagonal zig-zag step), plus the accumulator's creation, the final cast and the
  stack of K and V the exchange sends;
- torch's context parallelism (torchtitan): `_SDPAMerger.step`, the merge torch's
  `_templated_ring_attention` runs after each step, whole and partial (`_partial_update`), and
  the concatenation of K and V it sends each step.
The model's count for cp ranks must equal those measurements combined as the zig-zag schedule
combines them (on average half the off-diagonal steps of each kind), within the log-sum-exp
terms the model leaves out (a few per cent at head dim 128).
"""

from __future__ import annotations

import importlib
import sys

import pytest
import torch
from parc import timing
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from tests.e2e.harness import compile_job

VIEWS = {"view", "unsqueeze", "squeeze", "split", "split_with_sizes", "slice", "select", "detach", "alias",
         "_unsafe_view", "expand", "t", "transpose", "permute", "chunk", "unbind", "as_strided"}

ALLOCATIONS = {"zeros_like", "empty_like", "ones_like", "full_like", "full", "zeros", "empty", "ones"}


class Bytes(TorchDispatchMode):
    """Bytes read and written by the aten ops run inside the mode (attention kernels excluded)."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func._schema.name.split("::")[1]
        if name not in VIEWS and "scaled_dot_product" not in name:
            # an allocation (zeros_like, full) reads nothing of the tensor it is shaped like
            read = (args, kwargs or {}) if name not in ALLOCATIONS else ()
            tensors = [t for t in tree_leaves(read) if isinstance(t, torch.Tensor)]
            tensors += [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            self.total += sum(t.numel() * t.element_size() for t in tensors)
            self.ops.append(name)
        return out


def measured(fn) -> int:
    with Bytes() as counter:
        fn()
    assert counter.ops, "nothing was measured"
    return counter.total


BATCH, HEADS, KV_HEADS, CHUNK, DIM = 1, 8, 2, 64, 128
ROWS = 2 * CHUNK  # a cp rank's two zig-zag chunks


def tensors(heads: int, rows: int, dtype=torch.bfloat16) -> torch.Tensor:
    return torch.randn(BATCH, heads, rows, DIM, dtype=dtype)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = str(compile_job("cp2-ring", tmp_path_factory.mktemp("ring-bytes")))
    sys.path.insert(0, directory)
    try:
        sys.modules.pop("model", None)
        yield importlib.import_module("model")
    finally:
        sys.path.remove(directory)
        sys.modules.pop("model", None)


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_parc_ring_forward_bytes_are_the_generated_codes(model, cp):
    q, k, v = tensors(HEADS, ROWS), tensors(KV_HEADS, ROWS), tensors(KV_HEADS, ROWS)
    out, lse = model.attend_blocks(q, k, v, [0, ROWS, 0, ROWS, 1])  # the diagonal step first
    fresh = measured(lambda: model.attend_blocks(q, k, v, [0, ROWS, 0, ROWS, 1]))  # creates them
    whole = measured(lambda: model.attend_blocks(q, k, v, [0, ROWS, 0, CHUNK, 0], out, lse))
    later_half = measured(lambda: model.attend_blocks(q, k, v, [CHUNK, ROWS, 0, ROWS, 0], out, lse))
    cast = measured(lambda: out.to(q.dtype))
    stack = measured(lambda: torch.stack([k, v]))
    steps = fresh + (cp - 1) * (whole + later_half) / 2 + cast + stack
    model_bytes, _ = timing.ring_bytes("parc", "eager", cp, ROWS, HEADS * DIM, KV_HEADS * DIM)
    assert model_bytes == pytest.approx(steps, rel=0.04)


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_torch_ring_forward_bytes_are_torchs(cp):
    from torch.distributed.tensor.experimental._context_parallel._attention import _SDPAMerger

    merger = _SDPAMerger(True, seq_dim=2)
    first, lse = tensors(HEADS, ROWS), torch.randn(BATCH, HEADS, ROWS)
    opening = measured(lambda: merger.step(first, lse, False))
    block, block_lse = tensors(HEADS, ROWS), torch.randn(BATCH, HEADS, ROWS)
    half, half_lse = tensors(HEADS, CHUNK), torch.randn(BATCH, HEADS, CHUNK)
    whole = measured(lambda: merger.step(block, block_lse, False))
    partial = measured(lambda: merger.step(half, half_lse, True))
    closing = measured(merger.results)
    # torchtitan's K and V are repeated to every query head: the step's exchange concatenates them
    key, value = tensors(HEADS, ROWS), tensors(HEADS, ROWS)
    concatenated = measured(lambda: torch.cat([key.flatten(), value.flatten()]))
    steps = opening + (cp - 1) * ((whole + partial) / 2 + concatenated) + closing
    model_bytes, _ = timing.ring_bytes("torch", "eager", cp, ROWS, HEADS * DIM, HEADS * DIM)
    assert model_bytes == pytest.approx(steps, rel=0.04)


@pytest.mark.parametrize("cp", [2, 8])
def test_torch_ring_backward_bytes_are_torchs(cp):
    """The backward's per-step bookkeeping as `_templated_ring_attention_backward` runs it: fp32
    accumulators for dQ, dK, dV, each step's gradients added whole or into one half
    (`_partial_update`), dK/dV flattened into the fp32 buffer the next rank receives, K/V
    concatenated for the exchange, and the accumulators cast back."""
    from torch.distributed.tensor.experimental._context_parallel._attention import _partial_update

    q = tensors(HEADS, ROWS)
    accumulators = measured(lambda: [torch.zeros_like(q, dtype=torch.float32) for _ in range(3)])
    grad = torch.zeros_like(q, dtype=torch.float32)
    step_grad, half_grad = tensors(HEADS, ROWS), tensors(HEADS, CHUNK)

    def add_whole():
        grad.add_(step_grad)

    def add_half():
        _partial_update(grad, half_grad, dim=2, n_chunks=2, idx=1, add=True)

    accumulate = (measured(add_whole) + measured(add_half)) / 2
    flatten = measured(lambda: torch.cat([grad.flatten(), grad.flatten()]))
    concatenated = measured(lambda: torch.cat([q.flatten(), q.flatten()]))
    cast = measured(lambda: [grad.to(torch.bfloat16) for _ in range(3)])
    steps = accumulators + cp * (3 * accumulate + flatten) + (cp - 1) * concatenated + cast
    _, model_bytes = timing.ring_bytes("torch", "eager", cp, ROWS, HEADS * DIM, HEADS * DIM)
    assert model_bytes == pytest.approx(steps, rel=0.04)
