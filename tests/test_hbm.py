"""The ledger's HBM bytes against counts written here by hand, kernel by kernel, for one layer.

The reference below does not call parc's byte model: it lists the kernels one Llama 3 8B layer
runs in parc's job on one GPU (tp 1, cp 1, one 4,096-token sequence, bf16) and what each must read
and write at least once, from the model's shapes. The ledger's per-layer bytes (`hbm.layer_bytes`,
which `timing.compute_ledger` sums over a rank's layers) must equal it. The GEMM part is also
checked against the products the running job dispatches (tests/e2e/test_hbm_ledger.py) and the
whole ledger against the step time (tests/test_bounds.py: step >= HBM bytes / bandwidth).
"""

from __future__ import annotations

import pytest
from parc import hbm, timing
from parc.calibration import DEFAULT
from parc.memory.inputs import knobs_of, shape_of
from parc.pipeline import compile_text

H, Q, KV, F, HEADS = 4096, 32 * 128, 8 * 128, 14336, 32
"""Llama 3 8B (Dubey et al. 2024, table 3): hidden 4,096, 32 query heads and 8 key/value heads
of 128, SwiGLU FFN 14,336."""
N = 4096
BF16, FP32 = 2, 4


def product(m: int, k: int, n: int) -> int:
    """An (m x k) @ (k x n) product in bf16 reads both operands and writes the result."""
    return BF16 * (m * k + k * n + m * n)


def llama3_8b_layer_by_hand() -> dict[str, int]:
    """One layer, one micro-batch of one sequence of N tokens, parc's eager runtime."""
    # linear layers, one product each (wq, wk, wv, wo, w1, w3, w2); the backward of each is an
    # input-gradient product (reads dY and W, writes dX) and a weight-gradient product (reads X
    # and dY, writes dW): the same three matrices, twice
    linear = [(N, H, Q), (N, H, KV), (N, H, KV), (N, Q, H), (N, H, F), (N, H, F), (N, F, H)]
    gemm_f = sum(product(*shape) for shape in linear)
    gemm_b = 2 * gemm_f
    # flash attention: reads Q, K, V, writes O and one fp32 log-sum-exp per query and head;
    # backward: a pre-pass reads O and dO and writes their fp32 row sums, the kernel reads Q, K,
    # V, O, dO, the log-sum-exp and the row sums and writes dQ, dK, dV
    attention_f = BF16 * (N * Q + 2 * N * KV + N * Q) + FP32 * N * HEADS
    attention_b = (BF16 * 2 * N * Q + FP32 * N * HEADS
                   + BF16 * (3 * N * Q + 2 * N * KV) + 2 * FP32 * N * HEADS
                   + BF16 * (N * Q + 2 * N * KV))
    # memory-bound kernels, fused as a fused runtime runs them (read and write each once):
    norms = 2 * (N * H + N * H)  # two RMSNorms: read x, write y
    residuals = 2 * (2 * N * H + N * H)  # two adds: read both, write the sum
    rope = (N * Q + N * KV) * 2  # rotate q and k: read, write
    swiglu = 2 * N * F + N * F  # read gate and up, write their product
    fused_f = BF16 * (norms + residuals + rope + swiglu)
    fused_b = 2 * fused_f  # each backward kernel reads the gradient and the saved input, writes one
    # parc's eager runtime runs RoPE and SwiGLU op by op (timing.EAGER_*_BYTES documents the ops):
    # per q/k element 44 more bytes forward and 38 backward; per FFN element 4 and 6
    eager_f = 44 * (N * Q + N * KV) + 4 * N * F
    eager_b = 38 * (N * Q + N * KV) + 6 * N * F
    return {"gemm": gemm_f + gemm_b, "attention": attention_f + attention_b,
            "memory": fused_f + fused_b + eager_f + eager_b}


def test_one_llama3_8b_layer_moves_the_bytes_counted_by_hand():
    text = """job b
dp 8 on nodes(8 gpus, nvlink)
model llama3-8b
hardware {
  gpu h100-sxm
}
train {
  seq 4096
  global-batch 8
  micro-batch 1
}
"""
    plan = compile_text(text, path="b.par", checks=False).plan
    shape = shape_of(plan)
    assert (shape.hidden, shape.q, shape.kv, shape.ffn, shape.heads) == (H, Q, KV, F, HEADS)
    piece = hbm.layer_bytes(shape, timing.LayerCase(False, 1, False, 1, "ring", N, 1, 1, "bf16", "flash", "eager"))
    want = llama3_8b_layer_by_hand()
    assert piece.gemm_f + piece.gemm_b == want["gemm"]
    assert piece.attention_f + piece.attention_b == want["attention"]
    assert piece.memory_f + piece.memory_b == want["memory"]
    # the rank's ledger is the layers' sum plus the embedding, the output layer, the optimizer
    # step and the collectives' buffers: per layer it is at least the hand count
    knobs = knobs_of(plan, "torch")
    hw = timing.hardware_of(plan)
    _, steps = timing.rank_steps(shape, knobs, hw, timing.geometry_of(plan, hw))
    (rank,) = steps.values()
    assert rank.ledger.hbm_bytes("gemm") > shape.layers * want["gemm"]
    assert rank.ledger.hbm_bytes("attention") == pytest.approx(shape.layers * want["attention"], rel=1e-12)
    assert rank.ledger.hbm_bytes("optimizer") == pytest.approx(timing.OPTIMIZER_BYTES["adamw"] * 8.03e9, rel=0.01)
    assert rank.ledger.hbm_bytes("collectives") > 0


def test_flash_kernels_move_the_sequence_not_the_scores():
    """Doubling the sequence doubles flash attention's IO per sequence (O(seq x head dim)); the
    unfused kernel's scores grow with its square."""
    plan = compile_text("job s\ndp 1 on nodes(1 gpus, nvlink)\nmodel llama3-8b\nhardware {\n  gpu h100-sxm\n}\n"
                        "train {\n  seq 4096\n  global-batch 1\n}\n", path="s.par", checks=False).plan
    shape = shape_of(plan)
    flash = [sum(hbm.attention_bytes(shape, 1, 1, "ring", s, 1, "flash")) for s in (4096, 8192)]
    unfused = [sum(hbm.attention_bytes(shape, 1, 1, "ring", s, 1, "unfused")) for s in (4096, 8192)]
    assert flash[1] == pytest.approx(2 * flash[0], rel=1e-12)
    assert unfused[1] > 3.9 * unfused[0]


def test_ring_attention_reads_a_block_per_step():
    """Ring cp 4: the diagonal step over the rank's block, three zig-zag steps over 3/4 of it."""
    plan = compile_text("job s\ndp 1 on nodes(1 gpus, nvlink)\nmodel llama3-8b\nhardware {\n  gpu h100-sxm\n}\n"
                        "train {\n  seq 4096\n  global-batch 1\n}\n", path="s.par", checks=False).plan
    shape = shape_of(plan)
    one = hbm.attention_bytes(shape, 1, 1, "ring", 1024, 1, "flash")
    ring = hbm.attention_bytes(shape, 1, 4, "ring", 4096, 1, "flash")
    assert ring[0] == pytest.approx((1 + 3 * 0.75) * one[0], rel=1e-12)
    assert ring[1] == pytest.approx((1 + 3 * 0.75) * one[1], rel=1e-12)


@pytest.mark.parametrize("kind, payload, n, want", [
    ("all_gather", 800, 8, 800 + 100),  # read the shard, write the gathered tensor
    ("reduce_scatter", 800, 8, 800 + 100),
    ("all_reduce", 800, 8, 1600),
    ("all_to_all", 800, 8, 1600),
    ("send", 800, 2, 1600),
    ("all_reduce", 800, 1, 0),  # a group of one moves nothing
])
def test_a_collective_reads_its_input_and_writes_its_output(kind, payload, n, want):
    from parc.ledger import Collective

    assert Collective("dp", kind, payload, 1, n, n, "path").hbm_bytes == want


QWEN3_MOE = """job q
dp 8 on nodes(8 gpus, nvlink)
ep 8 over dp
model {
  layers 48, hidden 2048, ffn 6144, heads 32, kv-heads 4, vocab 151936
  head-dim 128
  activation swiglu, norm rmsnorm, position rope, tied-embeddings off
  experts 128, top-k 8, expert-ffn 768, shared-experts 0, moe-layers all
}
hardware { gpu h100-sxm }
target megatron
train { seq 4096, global-batch 16, micro-batch 2 }
"""
"""Qwen3-30B-A3B (Qwen3 technical report, table 2: 48 layers, 128 experts, 8 activated; hidden
2,048, expert FFN 768, 32 query and 4 key/value heads), as Megatron-Bridge's H100 row runs it."""


def qwen3_moe_memory_by_hand(n: int, ep: int) -> int:
    """The memory-bound kernels of one Qwen3-30B-A3B layer in Megatron-Core (fused kernels,
    all-to-all dispatcher, bf16), forward plus backward, listed op by op: what each reads and
    writes once."""
    h, q, kv, f, experts, top_k = 2048, 32 * 128, 4 * 128, 768, 128, 8
    copies = n * top_k  # one row per (token, chosen expert)
    norms = 2 * (n * h + n * h)
    residuals = 2 * (2 * n * h + n * h)
    rope = (n * q + n * kv) * 2
    swiglu = 2 * copies * f + copies * f  # on the routed copies
    fused_f = BF16 * (norms + residuals + rope + swiglu)
    # the router on each token's E logits in fp32: cast (read 2, write 4), softmax (read 4,
    # write 4), top-k (read 4), the balancing loss's mean (read 4); backward: scatter the gates'
    # gradient (write 4), add the balancing term's (read 4, write 4), softmax backward (read 8,
    # write 4), the cast's backward (read 4, write 2)
    router_f = n * experts * (2 + 4 + 4 + 4 + 4 + 4)
    router_b = n * experts * (4 + 8 + 12 + 6)
    # the dispatcher on the copies (h wide, bf16): forward, permute (read, write), unpermute with
    # the gates' weighted sum (read); with several experts a rank the received copies are sorted
    # into expert order and back (read and write, twice). Backward: permute's scatter-add (1),
    # unpermute's gather (2), the gates' gradient (read copy and gradient: 2), the sorts again (4)
    sorts = 4 if ep > 1 and experts // ep > 1 else 0
    permute_f = BF16 * copies * h * (2 + 1 + sorts)
    permute_b = BF16 * copies * h * (1 + 2 + 2 + sorts)
    return fused_f + 2 * fused_f + router_f + router_b + permute_f + permute_b


@pytest.mark.parametrize("ep", [1, 8])
def test_one_qwen3_moe_layer_moves_the_router_and_dispatcher_bytes_counted_by_hand(ep):
    plan = compile_text(QWEN3_MOE, path="q.par", checks=False).plan
    shape = shape_of(plan)
    n = 4096 * 2
    piece = hbm.layer_bytes(shape, timing.LayerCase(True, 1, False, 1, "ring", 4096, 2, ep, "bf16", "flash-te", "fused"))
    assert piece.memory_f + piece.memory_b == qwen3_moe_memory_by_hand(n, ep)
    # and the time model charges every one of those bytes at most at the HBM's bandwidth
    hw = timing.hardware_of(plan)
    work = timing.layer_work(shape, timing.LayerCase(moe=True, tp=1, sp=False, cp=1, flavour="ring", seq=4096,
                                                     micro=2, ep=ep, precision="bf16", attention="flash-te",
                                                     kernels="fused"), hw, DEFAULT)
    assert work.memory_f + work.memory_b >= (piece.memory_f + piece.memory_b) / hw.hbm
