"""Issue 15, point 3: what the job holds beyond model states and saved activations, and what the
GPU holds beyond the tensors. Closed forms written out here from torch's source (the figures
the rehearsal measured are in tests/test_rehearse.py):

- pipelining's receive buffers: torch's stage would keep one per micro-batch, chunk and
  direction (torch/distributed/pipelining/stage.py, `_setup_forward_recv_info`,
  `_create_grad_recv_info`); the job allocates them on demand, so only the receives alive at
  once count;
- a stage keeps its output per micro-batch in flight (`fwd_cache`): the residual stream, or on
  the last stage the fp32 logits;
- the embedding's backward under tp computes the whole vocabulary's gradient (DTensor has no
  vocabulary-sharded strategy for `embedding_dense_backward`), and the job copies its own rows
  out of it;
- the loss's backward holds three fp32 tensors of the logits' shape (`_nll_loss_and_log_softmax_backward`);
- the GPU: CUDA context, NCCL per communicator, cuBLAS workspaces, fragmentation; the memory check
  compares the predicted `max_memory_reserved` with HBM less what lies outside the allocator.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from parc.memory import estimate, gpu, knobs_of, per_stage, shape_of
from parc.memory.activations import embedding_backward_buffer, logits_buffer
from parc.memory.model import rank_activations
from parc.memory.parameters import by_rank, chunks_of

from .conftest import ROOT

GiB = 1 << 30
MiB = 1 << 20

# Llama 3 405B: h 16,384, V 128,256, seq 8,192, micro-batch 1, tp 8 with SP, pp 16, 32 micro-batches
H, V, S, T, PP, M = 16384, 128256, 8192, 8, 16, 32
BOUNDARY = 1 * S // T * H * 2  # bf16 residual stream, sequence-sharded over tp


def plan_of(spec: str):
    from parc.pipeline import compile_text

    result = compile_text((ROOT / spec).read_text(encoding="utf-8"), spec)
    assert result.ok, [d.message for d in result.diagnostics]
    return result.plan


@pytest.fixture(scope="module")
def llama():
    plan = plan_of("specs/llama3-405b.par")
    return plan, shape_of(plan), knobs_of(plan)


def test_receive_buffers_are_those_alive_at_once_not_one_per_micro_batch(llama):
    """torch's PipelineStage would keep 32 micro-batches x (4 chunks) x 2 directions of 32 MiB
    (8 GiB); the job's ReceiveOnDemandStage holds only the receives posted ahead of use.
    Interleaved 1F1B over 16 x 4 chunks as torch lowers it (tests/test_receive_buffers.py
    walks torch's own lowering for this layout): rank 0 receives every chunk's input from rank
    15 ahead of use (16 at once), the middle ranks 3 or 4, the last rank 9. Each stage's worst
    moment holds those alive then (`schedules.receive_moments`), fewer: rank 0's holds one."""
    from parc.memory.schedules import receive_buffers

    plan, shape, k = llama
    assert (k.pp, k.virtual_stages, k.microbatches, k.tp, k.seq) == (PP, 4, M, T, S)
    stages = per_stage(shape, k)
    assert BOUNDARY == 33_554_432
    most = [16, 3, 3, 3, 3, 3, 3, 4, 3, 3, 3, 3, 3, 3, 3, 9]
    assert list(receive_buffers(k.schedule, PP, 4, M)) == most
    live = [s.p2p // BOUNDARY for s in stages]
    assert all(s.p2p % BOUNDARY == 0 for s in stages)
    assert live == [1, 2, 2, 2, 2, 2, 2, 3, 2, 2, 2, 2, 2, 2, 2, 6]
    assert all(a <= b for a, b in zip(live, most, strict=True))
    assert max(s.p2p for s in stages) == 6 * BOUNDARY  # was 8 GiB on the middle ranks, then 512 MiB


def test_no_receive_buffers_without_pipelining():
    plan = plan_of("specs/llama3-70b-torchtitan.par")
    k = knobs_of(plan)
    assert k.pp == 1
    assert all(s.p2p == 0 for s in per_stage(shape_of(plan), k))


def test_each_stage_keeps_its_output_per_micro_batch(llama):
    """Output: `fwd_cache`'s stage output, the residual stream or on the last stage the fp32
    logits; without pipelining nothing keeps it."""
    plan, shape, k = llama
    ranks = rank_activations(shape, k)
    first, last = ranks[0].chunks[0], ranks[-1].chunks[-1]  # stage 0, stage 63 (4 chunks per rank)
    assert first.output == BOUNDARY
    assert last.output == S * (V // T) * 4  # fp32 logits, 16,032 vocabulary rows
    one = rank_activations(shape, replace(k, pp=1, split=None, microbatches=1))[0].chunks[0]
    assert one.output == 0


@pytest.mark.parametrize("schedule, v", [("interleaved-1f1b", 4), ("1f1b", 1)])
def test_a_received_input_is_the_first_layers_saved_input(llama, schedule, v):
    """One storage, counted once. The job's stage hands the received buffer to the forward as
    its input, and the first layer's norm (or the checkpoint) saves that very tensor; on stage
    0 the embedding's output is the first layer's input and the embedding keeps only the token
    ids. Hand count under full recomputation, where a layer saves only its block input: per
    micro-batch in flight, a chunk of n layers holds n block inputs and its kept output (n + 1
    boundary tensors; the code before this test counted n + 2 on every receiving chunk), stage
    0 the int64 token ids too. Checked on every chunk that is not the last (the last keeps
    its fp32 logits and the loss's tensors)."""
    plan, shape, k = llama
    split = k.split if v == k.virtual_stages else None
    k = replace(k, recompute="full", recompute_layers=None, schedule=schedule, virtual_stages=v, split=split)
    ranks = rank_activations(shape, k)
    chunks = chunks_of(shape.layers, k.pp, v, schedule, split, shape.tied)
    mine = by_rank(chunks, k.pp)
    checked = 0
    for rank, held in zip(mine, ranks, strict=True):
        for chunk, a in zip(rank, held.chunks, strict=True):
            if chunk.output:
                continue
            ids = S * 8 if chunk.embedding else 0
            assert chunk.layers > 0
            assert a.held == (chunk.layers + 1) * BOUNDARY + ids, (chunk.index, chunk.layers)
            checked += 1
    assert checked == k.pp * v - 1


def test_embedding_backward_is_the_whole_vocabulary(llama):
    """Beside the whole vocabulary's bf16 gradient, the worst of the kernel's moment (the
    gathered output gradient; on a GPU the native kernel's fp32 row sums, one row per token)
    and the job's hook copying this rank's V/t rows out of it (parallel.py,
    `gradient_in_own_rows`). The rehearsal's histogram at Llama 3 405B's first stage
    (rehearse-405b-16, rank 0) holds at its peak one 4,202,692,608-byte and one
    525,336,576-byte temporary: the whole gradient and the rows."""
    plan, shape, k = llama
    gpu_bytes = embedding_backward_buffer(shape, k)
    fake_bytes = embedding_backward_buffer(shape, replace(k, device="fake"))
    gathered = S * H * 2  # the embedding output's gradient, all sequence positions
    assert gpu_bytes == V * H * 2 + max(S * H * 4 + gathered, V // T * H * 2)
    assert fake_bytes == 4_202_692_608 + 525_336_576  # fake tensors: a meta kernel, no row sums
    assert embedding_backward_buffer(shape, replace(k, tp=1)) == 0  # a plain embedding's gradient is its own


def test_only_the_embedding_moment_above_the_rest_adds(llama):
    """The embedding's moment comes after its micro-batch's layers have run their backward and
    freed their saved tensors: it adds its buffer less those (chunk 0 of the interleaved
    405B: 2 layers)."""
    plan, shape, k = llama
    fake = replace(k, device="fake")
    stages = per_stage(shape, fake)
    assert stages[0].embedding_backward > 0 and all(s.embedding_backward == 0 for s in stages[1:])
    raw = embedding_backward_buffer(shape, fake)
    first = rank_activations(shape, fake)[0].chunks[0]
    layers_saved = first.saved - S * 8  # less the token ids, which the embedding keeps
    assert stages[0].buffers + stages[0].embedding_backward == raw - layers_saved


def test_the_loss_backward_holds_three_fp32_logits(llama):
    plan, shape, k = llama
    assert logits_buffer(replace(k, pp=1, split=None), V) == 3 * S * (V // T) * 4
    assert logits_buffer(replace(k, pp=1, split=None, tp=1), V) == 2 * S * V * 4  # plain cross_entropy


def test_nccl_buffers_per_communicator():
    assert gpu.NCCL_BUFFSIZE == 4 * MiB
    assert gpu.nccl_communicator_bytes("tp", 1) == 0
    assert gpu.nccl_communicator_bytes("tp", 2) == 4 * MiB * 32 * 1  # a ring of two: one peer
    assert gpu.nccl_communicator_bytes("dp", 64) == 4 * MiB * 32 * 2
    assert gpu.nccl_communicator_bytes("pp", 16) == 4 * MiB * 2 * 2
    assert gpu.nccl_communicator_bytes("ep", 64) == 4 * MiB * 2 * 63


def test_explain_predicts_max_memory_reserved_and_checks_it(llama):
    plan, shape, k = llama
    result = estimate(plan)
    o = result.overheads
    assert o.cuda_context == 400 * MiB and o.cublas == 2 * 32 * MiB
    assert o.nccl == 2 * 256 * MiB + 16 * MiB  # tp 8 and dp 64 rings, pp's two peers
    assert o.fragmentation == round(0.05 * result.hbm_bytes)
    assert result.reserve_bytes == o.cuda_context + o.nccl + o.cublas + o.fragmentation
    assert result.predicted_reserved_bytes == result.peak_bytes + o.cublas + o.fragmentation
    assert result.reserved_limit_bytes == result.hbm_bytes - o.cuda_context - o.nccl
    # fits exactly when the predicted max_memory_reserved fits beside the context and NCCL
    assert result.fits == (result.predicted_reserved_bytes <= result.reserved_limit_bytes)
    for hbm in (result.peak_bytes, result.peak_bytes * 21 // 20, result.peak_bytes * 11 // 10):
        small = replace(result, hbm_bytes=hbm, overheads=replace(o, fragmentation=round(0.05 * hbm)),
                        reserve_bytes=o.cuda_context + o.nccl + o.cublas + round(0.05 * hbm))
        assert small.fits == (small.predicted_reserved_bytes <= small.reserved_limit_bytes)
    assert not replace(result, hbm_bytes=result.peak_bytes).fits


def test_search_allowance_covers_the_shipped_layouts():
    """Search compares candidates with HBM less `reserve_bytes(hbm)` before it knows their
    communicators; it must not call a layout fitting that the check then refuses."""
    from parc.memory import reserve_bytes

    specs = sorted((ROOT / "specs").glob("*.par"))
    assert specs
    for path in specs:
        plan = plan_of(str(path.relative_to(ROOT)))
        result = estimate(plan)
        if result is not None:
            assert result.reserve_bytes <= reserve_bytes(result.hbm_bytes), path.name


def test_the_second_embedding_backward_holds_one_micro_batch_fewer_when_forwards_run_out():
    """The 128K layout's first stage (tests/data/specs/rehearse-405b-128k-16.par: 1F1B, 16
    micro-batches over 16 stages) runs its 16 forwards, then only backwards: the step's first
    embedding backward holds 16 micro-batches but no accumulated embedding gradient (FSDP2
    makes it at that backward's end), the second holds the accumulated fp32 rows (16,032 x
    16,384 x 4 bytes) and 15 micro-batches. The rehearsal's peak is the second (28 SwiGLU inputs
    and 58 boundary-sized tensors in flight, with the rows): the moment is the walk's peak
    less one micro-batch's layer set, token ids and kept output, written out here. With 32
    micro-batches (the 8K layout) a forward comes between and nothing is taken off."""
    from parc.memory.model import rank_activations, second_embedding_backward

    seq_shard = 8192 * 16384 // 8 * 2  # 33,554,432: the residual stream, sequence-sharded, bf16
    swiglu_in = 8192 * 53248 // 8 * 2  # 109,051,904
    kv, lse, ids = 2 * 8192 * 1024 // 8 * 2, 8192 * 16 * 4, 8192 * 8
    one_micro_batch = 2 * swiglu_in + 3 * seq_shard + kv + lse + ids + seq_shard  # + the kept output
    rows = 16032 * 16384 * 4
    for spec, expected in (("tests/data/specs/rehearse-405b-128k-16.par", min(rows, one_micro_batch)),
                           ("tests/data/specs/rehearse-405b-16.par", 0)):
        plan = plan_of(spec)
        shape, k = shape_of(plan), replace(knobs_of(plan), device="fake")
        acts = rank_activations(shape, k)[0]
        assert second_embedding_backward(shape, k, 0, acts, accumulated=True) == expected, spec
        assert second_embedding_backward(shape, k, 0, acts, accumulated=False) == 0
        assert second_embedding_backward(shape, k, 1, rank_activations(shape, k)[1], accumulated=True) == 0
