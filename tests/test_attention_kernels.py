"""The generated job's attention blocks (issue 13, point 1) against a hand-written reference.

Every attention of the job is a list of blocks computed by the fused kernel and merged by their
log-sum-exps (model.py's `block_attention`); context parallelism only decides the blocks. Here
the generated model.py and parallel.py are imported (definitions only) and, on one process:
- plain causal attention, and the blocks the all-gather flavour gives each cp rank, match a
  softmax over explicitly masked scores written below (outputs and the gradients of q, k, v:
  the backward, one kernel backward per block with the merged output and log-sum-exp, is exact);
- the blocks the ring gives each rank for each source rank's K/V, merged in ring order, match it
  too (the ring's exchange itself runs in tests/e2e/test_parity.py).
Grouped-query attention (tiny: 4 heads, 2 kv heads) reaches the kernel without repeated K and V,
and selective recomputation keeps the attention operator's outputs instead of attending again.
"""

from __future__ import annotations

import importlib
import sys

import pytest
import torch

from tests.e2e.harness import compile_job

CHUNK = 8
"""Tokens per load-balanced chunk (a cp rank holds two)."""


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The ring job's and the all-gather job's directories, generated once."""
    root = tmp_path_factory.mktemp("attention")
    return {spec: str(compile_job(spec, root)) for spec in ("cp2-ring", "cp2-all-gather")}


def imported(directory: str):
    """(model, parallel) of one generated job, imported afresh. Importing a job registers its
    custom operators (parc::block_attention, parc::ring_attention), and torch destroys an earlier
    registration of the same name (`get_library_allowing_overwrite`): a module imported before
    another job's would call a destroyed operator. So each test imports the job it calls, last."""
    sys.path.insert(0, directory)
    try:
        for name in ("model", "parallel"):
            sys.modules.pop(name, None)
        return importlib.import_module("model"), importlib.import_module("parallel")
    finally:
        sys.path.remove(directory)
        for name in ("model", "parallel"):
            sys.modules.pop(name, None)


@pytest.fixture
def job(jobs):
    """(model, parallel of the ring job, parallel of the all-gather job), imported afresh for each
    test, the all-gather job last: its model.py (one template for both jobs) is the one whose
    operators are registered. The ring's parallel.py is used only for its block lists
    (`ring_blocks`, plain functions), which no later registration touches."""
    _, ring = imported(jobs["cp2-ring"])
    model, gather = imported(jobs["cp2-all-gather"])
    return model, ring, gather


def reference(q, k, v, q_positions, k_positions):
    """Softmax attention over explicitly masked scores, K/V heads repeated for their query heads."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    hidden = k_positions[None, :] > q_positions[:, None]
    return scores.masked_fill(hidden, float("-inf")).softmax(-1) @ v


def inputs(model, length: int, seed: int):
    generator = torch.Generator().manual_seed(seed)

    def tensor(heads):
        return torch.randn(2, heads, length, model.HEAD_DIM, generator=generator, dtype=torch.float64).float()

    return tensor(model.HEADS), tensor(model.KV_HEADS), tensor(model.KV_HEADS), tensor(model.HEADS)


def rank_positions(rank: int, n: int) -> torch.Tensor:
    """The positions a cp rank holds: chunks rank and 2n-1-rank."""
    return torch.cat([torch.arange(rank * CHUNK, (rank + 1) * CHUNK),
                      torch.arange((2 * n - 1 - rank) * CHUNK, (2 * n - rank) * CHUNK)])


def gradients(out, grad, tensors):
    return torch.autograd.grad(out, tensors, grad)


def assert_close(got, want):
    assert len(got) == len(want) > 0
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)


def test_plain_causal_attention_matches_the_reference(job):
    model, _, _ = job
    q, k, v, grad = inputs(model, 4 * CHUNK, 0)
    tensors = [t.requires_grad_() for t in (q, k, v)]
    positions = torch.arange(q.shape[2])
    out = model.causal_attention(q, k, v)
    want = reference(q, k, v, positions, positions)
    assert_close([out, *gradients(out, grad, tensors)], [want, *gradients(want, grad, tensors)])


@pytest.mark.parametrize("n", [2, 3])
def test_all_gather_blocks_match_the_reference(job, n):
    model, _, gather = job
    _, k, v, _ = inputs(model, 2 * n * CHUNK, 1)  # the whole sequence, in position order
    for rank in range(n):
        q, _, _, grad = inputs(model, 2 * CHUNK, 2 + rank)
        tensors = [t.requires_grad_() for t in (q, k, v)]
        blocks = gather.gathered_blocks(rank, n, CHUNK)
        out = model.block_attention(q, k, v, blocks)[0]
        want = reference(q, k, v, rank_positions(rank, n), torch.arange(2 * n * CHUNK))
        assert_close([out, *gradients(out, grad, tensors)], [want, *gradients(want, grad, tensors)])


@pytest.mark.parametrize("n", [2, 4])
def test_ring_blocks_match_the_reference(job, n):
    model, ring, _ = job
    kv = [inputs(model, 2 * CHUNK, 10 + source)[1:3] for source in range(n)]  # each rank's K, V
    k_positions = torch.cat([rank_positions(source, n) for source in range(n)])
    k_all = torch.cat([k for k, _ in kv], dim=2)
    v_all = torch.cat([v for _, v in kv], dim=2)
    for rank in range(n):
        q = inputs(model, 2 * CHUNK, 20 + rank)[0]
        out = lse = None
        for step in range(n):  # the order the ring brings the blocks in
            source = (rank - step) % n
            k, v = kv[source]
            out, lse = model.attend_blocks(q, k, v, ring.ring_blocks(rank, source, CHUNK), out, lse)
        want = reference(q, k_all, v_all, rank_positions(rank, n), k_positions)
        assert_close([out], [want])


def test_grouped_query_attention_reaches_the_kernel_without_repeated_heads(job):
    """The fused kernel itself receives K and V with their own (fewer) heads, forward and backward."""
    from torch.utils._python_dispatch import TorchDispatchMode

    model, _, gather = job
    assert model.KV_HEADS < model.HEADS
    kernels = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
               torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default}
    seen = []

    class Kernels(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in kernels:
                query, key = (args[1], args[2]) if "backward" in str(func) else (args[0], args[1])
                seen.append((query.shape[1], key.shape[1]))
            return func(*args, **(kwargs or {}))

    q, _, _, grad = inputs(model, 2 * CHUNK, 3)  # rank 1 of cp 2: two chunks of queries ...
    _, k, v, _ = inputs(model, 4 * CHUNK, 4)  # ... over the whole sequence's K and V
    blocks = gather.gathered_blocks(1, 2, CHUNK)
    with Kernels():  # the operator's own steps, which a dispatch mode sees outside the operator
        out, lse = model.attend_blocks(q, k, v, blocks)
        dq, dk, dv = (torch.zeros_like(t) for t in (q, k, v))
        model.blocks_backward(grad, q, k, v, out.to(q.dtype), lse, blocks, dq, dk, dv)
    assert len(seen) == 2 * len(model.quintuples(blocks)) > 0
    assert set(seen) == {(model.HEADS, model.KV_HEADS)}


def test_selective_recomputation_keeps_the_attention_operator(tmp_path, monkeypatch):
    """Under `recompute selective` the policy keeps the attention operators' two outputs: the
    blocks are attended once, not again in backward (the memory model counts the output and the
    log-sum-exp, not each block's). Plain checkpointing, for contrast, attends them twice."""
    from functools import partial

    from parc.atomic import write_tree
    from parc.backends import job_files
    from parc.pipeline import compile_text
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    from tests.e2e.harness import SPECS

    text = (SPECS / "cp2-ring.par").read_text().replace("micro-batch 16", "micro-batch 16\n  recompute selective")
    result = compile_text(text, "cp2-ring-selective.par")
    assert result.ok
    write_tree(str(tmp_path), job_files(result.plan))
    sys.path.insert(0, str(tmp_path))
    try:
        for name in ("model", "parallel"):
            sys.modules.pop(name, None)
        model, parallel = importlib.import_module("model"), importlib.import_module("parallel")
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("model", "parallel"):
            sys.modules.pop(name, None)
    assert {torch.ops.parc.block_attention.default, torch.ops.parc.ring_attention.default} <= parallel.SAVED_OPS

    calls = []
    attend = model.attend_blocks
    monkeypatch.setattr(model, "attend_blocks", lambda *args: calls.append(1) or attend(*args))
    blocks = [0, CHUNK, 0, CHUNK, 1, CHUNK, 2 * CHUNK, 0, CHUNK, 0, CHUNK, 2 * CHUNK, CHUNK, 2 * CHUNK, 1]

    def attention(q, k, v):
        return model.block_attention(q.sin(), k, v, blocks)[0].cos()  # recomputable ops around it

    counts = []
    for context in (partial(create_selective_checkpoint_contexts, parallel.SelectivePolicy()), None):
        q, k, v, grad = inputs(model, 2 * CHUNK, 5)
        tensors = [t.requires_grad_() for t in (q, k, v)]
        calls.clear()
        kwargs = {"context_fn": context} if context else {}
        out = checkpoint(attention, *tensors, use_reentrant=False, **kwargs)
        out.backward(grad)
        assert all(t.grad is not None for t in tensors)
        counts.append(len(calls))
    assert counts == [1, 2]
