"""The backward's moment (issue 15): a layer's backward does not add its whole saved set plus
every gradient on top of the micro-batch it backpropagates; autograd frees each tensor as the
backward consumes it (docs/memory-model.md, "The backward's moment").

Checked here against what the model did not produce:

- the tensors alive at the rehearsed peak of the 405B middle stage
  (tests/data/specs/rehearse-405b-16.par, rank 64, 7,222,011,940 bytes: w1's and w3's backward
  in layer 8), written out by hand tensor by tensor (`UP_PROJECTIONS_MOMENT`), equal the
  model's moment to the byte. The tracker's histogram at that peak (2026-12-02,
  docs/memory-model.md) is where the list comes from: 14 SwiGLU inputs of 109,051,904 bytes
  held (7 micro-batches x 2; the backpropagated one's consumed), four whole-sequence h-wide
  temporaries of 268,435,456 bytes (two gathered norm outputs, two input gradients), one
  109,051,904-byte output gradient and three 218,103,808-byte bf16 weight gradients;
- the moments never exceed the old bound (whole saved set + rematerialised tensors + every
  gradient) and never fall below the saved set of the layer less its consumed inner tensors, on
  every dense layer of every shipped spec parc writes a job for.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from parc.memory import knobs_of, shape_of
from parc.memory.activations import layer_activations
from parc.memory.buffers import backward_working_set, ffn_weight_gradients
from parc.memory.model import activation_knobs

from .conftest import ROOT

MIDDLE = "tests/data/specs/rehearse-405b-16.par"


def plan_of(spec: str):
    from parc.pipeline import compile_text

    result = compile_text((ROOT / spec).read_text(encoding="utf-8"), spec)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def layer_of(spec: str, device: str = "fake", moe: bool = False):
    plan = plan_of(spec)
    shape, k = shape_of(plan), replace(knobs_of(plan), device=device)
    ak = activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.runtime,
                          k.ep if shape.moe else 1, k.precision, k.device)
    return shape, ak, layer_activations(shape, ak, moe, k.recompute), k


# Llama 3 405B's widths on one rank: tp 8 with sequence parallelism, 8,192 tokens, bf16.
TOKENS, H, F_T, Q_T, KV_T, HEADS_T, HEAD_DIM = 8192, 16384, 53248 // 8, 16384 // 8, 1024 // 8, 128 // 8, 128
B = 2  # bf16
SEQ_SHARD = TOKENS * H // 8 * B       # 33,554,432: an h-wide tensor sharded over the sequence
GATHERED = TOKENS * H * B             # 268,435,456: an h-wide tensor of the whole sequence
INNER = TOKENS * F_T * B              # 109,051,904: one FFN inner tensor (F/t wide)
WEIGHT = H * F_T * B                  # 218,103,808: one FFN weight's bf16 gradient

UP_PROJECTIONS_MOMENT = {
    # the layer's own tensors, rematerialised by the checkpoint (selective) or kept by it
    "attention norm's input (the block input)": SEQ_SHARD,
    "attention norm's gathered output": GATHERED,
    "q (rotated)": TOKENS * Q_T * B,
    "k, v (one kv head per tp rank)": 2 * TOKENS * KV_T * B,
    "attention output": TOKENS * Q_T * B,
    "its contiguous copy, the output projection's input": TOKENS * Q_T * B,
    "log-sum-exp (fp32)": TOKENS * HEADS_T * 4,
    "RoPE cos/sin tables of q and k (fp32)": 2 * TOKENS * HEAD_DIM // 2 * 4 * 2,
    "norm statistics (fp32, two norms, sequence-sharded)": 2 * TOKENS // 8 * 4,
    "FFN norm's input": SEQ_SHARD,
    "FFN norm's gathered output (w1 and w3 read it)": GATHERED,
    # gradients
    "the block's output gradient": SEQ_SHARD,
    "w1's output gradient (w3's went with w3's backward, which autograd ran first)": INNER,
    "w3's and w1's gradients of their gathered input, not yet summed": 2 * GATHERED,
    "w1, w2, w3's bf16 weight gradients": 3 * WEIGHT,
}
"""What is alive of the backpropagated micro-batch at the up projections' backward: the FFN's
four inner tensors (w1 and w3 outputs, SiLU's output, the product) are consumed; written out
from the shapes, one line per tensor."""


def test_the_up_projections_moment_is_the_tensors_alive_then():
    _, _, a, _ = layer_of(MIDDLE)
    assert a.moments, "dense layers of the torch runtime have their moments"
    down, up, attention = a.moments
    assert up == sum(UP_PROJECTIONS_MOMENT.values())
    assert up == max(a.moments)  # the worst moment of a Llama layer
    # the down projection's moment holds the inner tensors, but neither w1's nor w3's gradient
    assert down == up + 4 * INNER - INNER - 2 * GATHERED - 2 * WEIGHT + INNER + GATHERED


def test_the_working_set_is_the_worst_moment_less_the_saved_set():
    shape, ak, a, _ = layer_of(MIDDLE)
    old = a.working + a.full - a.saved + ffn_weight_gradients(shape, ak, False)
    new = backward_working_set(a, ffn_weight_gradients(shape, ak, False))
    assert new == max(a.moments) - a.saved
    # the old count put the whole saved set, the rematerialised set and every gradient at once
    assert old - new == 352_321_536


def dense_layers() -> list:
    out = []
    for spec in sorted((ROOT / "specs").glob("*.par")):
        rel = str(spec.relative_to(ROOT))
        plan = plan_of(rel)
        shape, k = shape_of(plan), knobs_of(plan)
        if shape is None or k is None or k.runtime != "torch":  # holes, or another runtime
            continue
        for mode in ("none", "selective", "full"):
            ak = activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.runtime,
                                  k.ep if shape.moe else 1, k.precision, k.device)
            out.append((Path(rel).stem, mode, shape, ak, layer_activations(shape, ak, False, mode)))
    return out


def test_moments_stay_between_the_consumed_set_and_the_old_bound():
    layers = dense_layers()
    assert len(layers) >= 9
    for name, mode, shape, ak, a in layers:
        wg = ffn_weight_gradients(shape, ak, False)
        assert len(a.moments) == 3, name
        assert max(a.moments) <= a.working + a.full + wg, (name, mode)
        # the down projection's moment holds everything the layer's forward kept
        assert a.moments[0] >= a.full, (name, mode)
        assert backward_working_set(a, wg) >= 0, (name, mode)


MIXTRAL = "tests/data/specs/rehearse-mixtral-8.par"

# Mixtral 8x7B's widths on rank 0 of its 5-D layout: tp 2 with sequence parallelism, cp 2 (16,384
# tokens of the 32,768), ep 8 over 8 experts (one local expert), bf16; each tp rank routes its own
# 8,192-token sequence shard, top 2: 16,384 copies sent, and (balanced) received.
M_TOKENS, M_SHARD_TOKENS, M_H, M_F, M_COPIES = 16384, 8192, 4096, 14336, 16384
M_SHARD = M_SHARD_TOKENS * M_H * B        # 67,108,864: an h-wide tensor of the sequence shard
M_GATHERED = M_TOKENS * M_H * B           # 134,217,728: of the whole (cp-local) sequence
M_INNER = M_COPIES * M_F * B              # 469,762,048: one expert inner tensor over the copies

EXPERT_MOMENT = {
    # the layer's own tensors, rematerialised by the checkpoint (full recomputation)
    "attention norm's input (the block input)": M_SHARD,
    "attention norm's gathered output": M_GATHERED,
    "q (rotated), 16 heads per tp rank": M_TOKENS * 2048 * B,
    "k, v (4 kv heads per tp rank)": 2 * M_TOKENS * 512 * B,
    "attention output": M_TOKENS * 2048 * B,
    "its contiguous copy, the output projection's input": M_TOKENS * 2048 * B,
    "log-sum-exp (fp32)": M_TOKENS * 16 * 4,
    "RoPE cos/sin tables of q and k (fp32)": 2 * M_TOKENS * 64 * 4 * 2,
    "norm statistics (fp32, two norms, sequence-sharded)": 2 * M_SHARD_TOKENS * 4,
    "FFN norm's input": M_SHARD,
    "the MoE's input, the FFN norm's output (the router and the dispatch read it)": M_SHARD,
    "router: fp32 probabilities, top-2 int64 indices and fp32 gates, the gates' sum": M_SHARD_TOKENS * (8 * 4 + 2 * 12 + 4),
    "int64 token ids and orders of the copies (the route's two, the dispatcher's two)": 4 * M_COPIES * 8,
    "the experts' rows, as the all-to-all delivered them": M_COPIES * M_H * B,
    "w1's output, SiLU's output, w3's output": 3 * M_INNER,
    # gradients
    "the block's output gradient": M_SHARD,
    "the product's gradient (w2's backward) and SiLU's two input gradients": 3 * M_INNER,
    "w2's stacked bf16 gradient (one local expert)": M_F * M_H * B,
}
"""What is alive of the backpropagated micro-batch at its MoE layer's peak, the expert's SiLU
backward: the combine's tensors (returned rows, gated product, gates) and the product itself
are consumed. The tracker's histogram at rehearse-mixtral-8's rank 0 peak (9,198,608,404
bytes, 2026-12-02; docs/memory-model.md) holds each line: six 469,762,048-byte tensors (three
mm outputs, a SiLU output, two products' gradients), the 134,217,728-byte all-to-all output,
the 117,440,512-byte select_backward; it also holds four fp32 copies of 134,217,728 bytes that
the CPU composite RMSNorm saves in place of the two norms' inputs (the GPU's fused kernel
saves the bf16 input and its statistics), which the model does not count under fake tensors,
and of the int64 ids only the token ids (131,072 bytes; the orders went with the combine's
backward)."""


def test_the_moe_experts_moment_is_the_tensors_alive_then():
    _, _, a, _ = layer_of(MIXTRAL, moe=True)
    assert a.moments, "MoE layers of the torch runtime have their moments"
    combine, first_expert, after, attention = a.moments
    assert first_expert == sum(EXPERT_MOMENT.values())
    assert first_expert == max(a.moments)
    # the combine's moment: the whole forward set less the gated product, and three h-wide
    # gradients per copy (the gated product's, the returned rows', the gates' before their sum)
    assert combine == a.full + M_SHARD - M_COPIES * M_H * B + 3 * M_COPIES * M_H * B


def test_the_moe_working_set_is_the_worst_moment_less_the_saved_set():
    """The old bound (every activation gradient on top of the saved and rematerialised sets,
    every FFN weight gradient) was 1,174,536,192 bytes over the moment at Mixtral's widths;
    the rehearsal had the model 0.90 GB over at rank 0."""
    shape, ak, a, _ = layer_of(MIXTRAL, moe=True)
    wg = ffn_weight_gradients(shape, ak, True)
    old = a.working + a.full - a.saved + wg
    assert backward_working_set(a, wg) == max(a.moments) - a.saved
    assert old - backward_working_set(a, wg) == 1_174_536_192


def moe_layers() -> list:
    out = []
    for spec in sorted((ROOT / "specs").glob("*.par")):
        rel = str(spec.relative_to(ROOT))
        plan = plan_of(rel)
        shape, k = shape_of(plan), knobs_of(plan)
        if shape is None or k is None or k.runtime != "torch" or not shape.moe:
            continue
        for ep in sorted({1, k.ep}):
            for mode in ("none", "selective", "full"):
                ak = activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.runtime,
                                      ep, k.precision, k.device)
                out.append((Path(rel).stem, ep, mode, shape, ak, layer_activations(shape, ak, True, mode)))
    return out


def test_moe_moments_stay_under_the_old_bound():
    """On every MoE layer of every shipped spec parc writes a job for (at its ep and without
    ep: every expert local), every mode: the moments never exceed the old bound, the combine's
    moment holds the whole forward set, and the working set is not negative."""
    layers = moe_layers()
    assert len(layers) >= 6
    for name, ep, mode, shape, ak, a in layers:
        wg = ffn_weight_gradients(shape, ak, True)
        assert max(a.moments) <= a.working + a.full + wg, (name, ep, mode)
        assert max(a.moments) >= a.full, (name, ep, mode)
        assert backward_working_set(a, wg) >= 0, (name, ep, mode)


@pytest.mark.parametrize("device", ["fake", "cuda"])
def test_the_moment_does_not_depend_on_the_device_at_real_widths(device):
    """RMSNorm is fused on CUDA and under fake tensors alike: the same moments."""
    _, _, a, _ = layer_of(MIDDLE, device)
    assert a.moments == layer_of(MIDDLE, "fake")[2].moments


def test_a_zero_bubble_input_backward_keeps_the_bound():
    """torch's `stage_backward_input` runs autograd with retain_graph=True: the saved set stays
    for the weight backward, so under a zero-bubble schedule nothing is released and the old
    bound holds; under 1F1B the working set is the moment's."""
    from parc.memory.model import rank_activations

    shape, ak, a, k = layer_of(MIDDLE)
    wg = ffn_weight_gradients(shape, ak, False)
    one_f_one_b = rank_activations(shape, k)[8].transient
    zero_bubble = rank_activations(shape, replace(k, schedule="interleaved-zb"))[8].transient
    # 1F1B: the moment's, and the previous micro-batch's input gradient its send ops hold (below)
    assert one_f_one_b - SEQ_SHARD == backward_working_set(a, wg) == max(a.moments) - a.saved
    assert zero_bubble == backward_working_set(a, wg, released=False) == a.working + a.full - a.saved + wg



def test_a_non_first_1f1b_stage_holds_the_previous_micro_batchs_input_gradient():
    """Since the received activations require grad (the job's and the rehearsal's), each
    non-first stage computes its input's gradient, and torch's `Schedule1F1B` keeps it in its
    backward send ops (`bwd_sends`) until the next backward replaces them: one sequence-sharded
    h-wide bf16 tensor (SEQ_SHARD, hand-counted above) beside every backward moment from the
    step's second backward on. Rank 64 of rehearse-405b-16 rose by it (and, on the CPU only, by
    the composite RMSNorm's fp32 copy of the input, not counted); rank 120 by it alone
    (docs/memory-model.md). The first stage (token ids in) holds none; a GPipe or interleaved
    stage neither (their send ops are rebound before each action's compute)."""
    from parc.memory import model

    plan = plan_of(MIDDLE)
    shape, k = shape_of(plan), replace(knobs_of(plan), device="fake")
    assert k.schedule == "1f1b" and k.virtual_stages == 1 and k.pp == 16
    ak = activation_knobs(k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.runtime,
                          1, k.precision, k.device)
    signatures = model.rank_signatures(shape, k.pp, 1, "1f1b", k.split)
    first, middle, last = signatures[0][0], signatures[8][0], signatures[15][0]
    assert first[1] and not middle[1] and not last[1]  # the embedding is the first stage's alone
    held = model.sent_input_gradient
    assert held(shape, ak, middle, "1f1b", 16, 1) == SEQ_SHARD
    assert held(shape, ak, last, "1f1b", 16, 1) == SEQ_SHARD
    assert held(shape, ak, first, "1f1b", 16, 1) == 0
    assert held(shape, ak, middle, "gpipe", 16, 1) == 0
    assert held(shape, ak, middle, "1f1b", 16, 2) == 0
    assert held(shape, ak, middle, "zb-v", 16, 2) == 0  # split backward: `split_pending` counts it
    assert held(shape, ak, middle, "1f1b", 1, 1) == 0
    ranks = model.rank_activations(shape, k)
    chunk = {i: model._chunk_activations(shape, ak, sig, k.recompute, k.recompute_layers, True, True).working
             for i, sig in ((0, first), (8, middle), (15, last))}
    assert [ranks[i].transient - chunk[i] for i in (0, 8, 15)] == [0, SEQ_SHARD, SEQ_SHARD]


# DeepSeek-V3-like's widths on one rank (rehearse-deepseek-32): no tp, 4,096 tokens, bf16,
# 128 query heads and 8 kv heads of 128, 256 experts of 2,048 (4 local at ep 64), top 8, one
# shared expert.
D_TOKENS, D_H, D_Q, D_KV, D_FE, D_COPIES, D_EXPERTS = 4096, 7168, 128 * 128, 8 * 128, 2048, 4096 * 8, 256
D_BOUNDARY = D_TOKENS * D_H * B  # 58,720,256: one h-wide tensor of the micro-batch

MOE_PENDING = {
    # attention
    "q's gradient (the clone before the attention kernel)": D_TOKENS * D_Q * B,
    "k's and v's gradients (the kernel's, the clone's)": 2 * D_TOKENS * D_KV * B,
    "the output projection's output gradient (the residual add in the FFN norm's backward)": D_BOUNDARY,
    "the attention norm's output gradient": D_BOUNDARY,
    # the MoE FFN
    "the routed experts' w1 and w3 output gradients (SiLU's backward, the product's)": 2 * D_COPIES * D_FE * B,
    "the routed experts' w2 output gradients (index_put, one row per copy)": D_COPIES * D_H * B,
    "the shared expert's w1 and w3 output gradients": 2 * D_TOKENS * D_FE * B,
    "the FFN's output gradient (the layer's)": D_BOUNDARY,
    "the FFN norm's output gradient": D_BOUNDARY,
    "the router linear's output gradient, bf16 (`.float()`'s backward cast it back)": D_TOKENS * D_EXPERTS * B,
}
"""What a zero-bubble input pass leaves for the weight pass of one DeepSeek MoE layer and one
micro-batch: the tracker's histogram at rehearse-deepseek-32's rank 2047 peak (2026-12-02,
docs/memory-model.md "Moments by chunk"), eight of each line per stage (8 micro-batches pending
on each of stages 15 and 16). Besides these the CPU composite RMSNorm keeps each norm's output
gradient in fp32 (`split_pending`'s composite term), and the stage keeps its input's gradient."""


def test_a_moe_layers_pending_gradients_are_the_tensors_the_input_pass_leaves():
    """The FFN norm's output gradient was missing and the router's was counted in fp32:
    113,246,208 bytes a micro-batch under at DeepSeek's turn of the V (two layers), 906 MB over
    its eight pending micro-batches, hidden before behind two receive buffers."""
    _, _, a, _ = layer_of("tests/data/specs/rehearse-deepseek-32.par", moe=True)
    assert a.weight_grads == sum(MOE_PENDING.values()) == 1_159_725_056


def test_the_turn_of_the_v_keeps_what_the_tracker_holds_per_pending_micro_batch():
    """rehearse-deepseek-32's rank 2047 (stages 15 and 16, one MoE layer each): per pending
    micro-batch the tracker holds each layer's lines above (stage 16's FFN output gradient is the
    received one; stage 15's is stage 16's input gradient, one storage, counted once), both
    layers' norms' fp32 copies (on CPU) and stage 15's input gradient: 2,613,051,392 bytes."""
    from parc.memory.model import rank_activations

    plan = plan_of("tests/data/specs/rehearse-deepseek-32.par")
    shape, k = shape_of(plan), replace(knobs_of(plan), device="fake")
    turn = rank_activations(shape, k)[15]
    composite = 2 * 2 * D_TOKENS * D_H * (4 - B)  # two norms a layer, fp32 less the bf16 counted
    tracker = 2 * sum(MOE_PENDING.values()) + composite + D_BOUNDARY
    assert sum(c.pending for c in turn.chunks) == tracker == 2_613_051_392


DEEPSEEK_WEIGHT_PASS_TRACED = 3_493_382_144
"""The tensors of stage 16's MoE layer alive at rehearse-deepseek-32 rank 2047's peak, inside its
weight pass (the tracker's histogram, 2026-12-02): the recomputed forward (the dispatch's
gathered and exchanged rows, the experts' up projections, SiLU and product, attention's q, k, v,
output and copy, the norms, RoPE tables, router), no activation gradient beyond the pending
set's and no bf16 weight gradient yet."""


def test_a_weight_pass_adds_the_released_moment_not_the_input_passes_bound():
    """torch's weight pass reads the activation gradients the input pass kept (the pending set,
    counted in the state) and computes none of its own: it adds the recomputed forward and the
    weight gradients, which a backward that frees what it consumes holds at its worst moment
    beside the activation gradients alive then. The input pass's bound added every activation
    gradient again: 347,602,944 bytes over the moment at DeepSeek's widths, which stays above
    the traced weight pass."""
    from parc.memory.model import weight_pass_working

    shape, ak, a, _ = layer_of("tests/data/specs/rehearse-deepseek-32.par", moe=True)
    wg = ffn_weight_gradients(shape, ak, True)
    moment = weight_pass_working(a, wg)
    assert moment == max(a.moments) - a.saved == backward_working_set(a, wg)
    assert backward_working_set(a, wg, released=False) - moment == 347_602_944
    assert DEEPSEEK_WEIGHT_PASS_TRACED <= moment
