"""torchtitan's per-op selective recomputation in the time model (`timing.TORCHTITAN_OP`),
against torchtitan 0.3's own policy and torch's own FLOP counter (issue 14: the model is the
ledger of the job it generates).

The independent check: torchtitan's llama3 block, built from its own config code
(`_build_llama3_layers`, fused QKV as its llama3 configs and parc's generated flavour have it,
and the separate wq/wk/wv of earlier torchtitan), wrapped by torchtitan's own `SelectiveAC`
(its `wrapped_policy`), runs a forward and a backward on the CPU under
`torch.utils.flop_counter.FlopCounterMode`, once plain and once checkpointed: the difference is
the FLOPs the policy runs again, which the time model's count must equal. Skipped without
torchtitan (.ci/install-targets).
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from dataclasses import replace
from unittest import mock

import pytest
from parc import timing
from parc.memory.activations import torchtitan_matmuls, torchtitan_op_split
from parc.memory.inputs import Shape, knobs_of, shape_of
from parc.pipeline import compile_text
from parc.targets import software_of

DIM, HEADS, KV_HEADS, FFN, BATCH, SEQ = 64, 4, 2, 160, 2, 16
HEAD_DIM = DIM // HEADS
KERNEL_MODULES = ("torchtitan.distributed.minimal_async_ep.kernels", "torchtitan.overrides.fused_mla",
                  "torchtitan.overrides.fused_swiglu")

needs_torchtitan = pytest.mark.skipif(importlib.util.find_spec("torchtitan") is None,
                                      reason="torchtitan not installed (.ci/install-targets)")


def small_shape() -> Shape:
    return Shape(layers=1, hidden=DIM, ffn=FFN, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, vocab=128,
                 tied=False, ffn_matrices=3, layernorm=False, position_params=0, rope=True)


@pytest.fixture(scope="module")
def titan():
    """torchtitan's block builder, its SelectiveAC and its default save set (its GPU kernel
    modules, which import triton, given inert stand-ins as in test_targets_torchtitan.py)."""
    if importlib.util.find_spec("triton") is None:
        for name in KERNEL_MODULES:
            sys.modules.setdefault(name, mock.MagicMock())
    from torchtitan.distributed import activation_checkpoint
    from torchtitan.models import llama3

    return llama3, activation_checkpoint


def llama3_block(titan, fused_qkv: bool):
    """torchtitan 0.3's llama3 block config from its own builder, with torch's SDPA standing in
    for flex attention (flex needs a GPU)."""
    from torchtitan.models.common.attention import ScaledDotProductAttention

    llama3, _ = titan
    config = llama3._build_llama3_layers(
        n_layers=1, dim=DIM, n_heads=HEADS, n_kv_heads=KV_HEADS, hidden_dim=FFN, fuse_qkv=fused_qkv,
        rope=llama3.ComplexRoPE.Config(dim=HEAD_DIM, max_seq_len=SEQ, theta=10000.0), attn_backend="flex")[0]
    config.attention.inner_attention = ScaledDotProductAttention.Config()
    return config


def built_block(titan, config, checkpointed: bool):
    """The block `config` builds (seeded; weights N(0, 0.02), norms 1), wrapped, when
    `checkpointed`, in torchtitan's own `SelectiveAC` whose save set gains the CPU flash kernel
    (`get_save_ops`, the extension point torchtitan documents) as the stand-in of the GPU's flash
    and flex kernels it saves; the policy function itself is torchtitan's."""
    import torch

    _, activation_checkpoint = titan
    torch.manual_seed(0)
    block = config.build()
    for p in block.parameters():
        torch.nn.init.normal_(p, std=0.02) if p.dim() > 1 else torch.nn.init.ones_(p)

    class CpuSelectiveAC(activation_checkpoint.SelectiveAC):
        def get_save_ops(self):
            return super().get_save_ops() | {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default}

    return CpuSelectiveAC(CpuSelectiveAC.Config())._wrap_block(block, base_fqn="layers.0") if checkpointed else block


def counted_mm_flops(titan, fused_qkv: bool, checkpointed: bool) -> float:
    """`aten.mm` FLOPs of one forward and backward of torchtitan's llama3 block, as
    `FlopCounterMode` counts them. The attention is torch's SDPA (`ScaledDotProductAttention`,
    torchtitan's own inner attention) instead of flex, which needs a GPU: on CPU it runs
    `_scaled_dot_product_flash_attention_for_cpu`, which the policy's save set gains here as the
    stand-in of the GPU's flash and flex kernels it saves (through `get_save_ops`, the extension
    point torchtitan documents); the policy function itself is torchtitan's."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    block = built_block(titan, llama3_block(titan, fused_qkv), checkpointed)
    x = torch.randn(BATCH, SEQ, DIM, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        block(x, None, None).sum().backward()
    assert x.grad is not None
    counts = counter.get_flop_counts()["Global"]
    assert set(counts) == {torch.ops.aten.mm}, counts  # no other op the counter knows ran
    return counts[torch.ops.aten.mm]


@needs_torchtitan
@pytest.mark.parametrize("fused_qkv", [True, False], ids=["fused-qkv", "wq-wk-wv"])
def test_recomputed_flops_are_what_torch_counts_under_torchtitans_policy(titan, fused_qkv):
    """The FLOPs torchtitan's policy runs again equal the model's recomputed matmuls: wo and w3
    under the fused QKV (a hand count: 2 T (q h + h F)), wk, wo and w3 with wq/wk/wv; and the
    plain block's total is the model's forward GEMMs three times (`piece_flops`)."""
    tokens = BATCH * SEQ
    plain = counted_mm_flops(titan, fused_qkv, checkpointed=False)
    again = counted_mm_flops(titan, fused_qkv, checkpointed=True) - plain
    shape = small_shape()
    assert plain == 3 * timing.piece_flops(shape, False, 1, 1, SEQ, BATCH, 0, "flash")[0]
    kv = KV_HEADS * HEAD_DIM
    by_hand = 2 * tokens * (HEADS * HEAD_DIM * DIM + DIM * FFN + (0 if fused_qkv else DIM * kv))
    assert again == by_hand
    recomputed = torchtitan_op_split(torchtitan_matmuls(shape, 1, fused_qkv))[1]
    assert recomputed and sum(2 * tokens * k * out for _, k, out in recomputed) == again
    if fused_qkv:  # the generated job's block: what the time model charges
        assert timing.torchtitan_op_flops(shape, False, 1, tokens) == again


@needs_torchtitan
def test_torchtitans_save_set_keeps_reduce_scatters_not_gathers_nor_all_reduces(titan):
    """What the time model replays under the policy (`timing.selective_replay`) follows
    torchtitan's save set: the reduce-scatter is saved, the all-gather and the all-reduce are
    not (so sp's two all-gathers, or the two all-reduces without sp, run again); the matmul and
    the GPU's attention kernels are."""
    import torch

    _, activation_checkpoint = titan
    saved = activation_checkpoint._get_default_save_ops()
    functional = torch.ops._c10d_functional
    assert functional.reduce_scatter_tensor.default in saved
    assert functional.all_gather_into_tensor.default not in saved
    assert functional.all_reduce.default not in saved
    for op in (torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_flash_attention.default,
               torch.ops.aten._scaled_dot_product_efficient_attention.default):
        assert op in saved, op


TINY = """{axes} on nodes({gpus} gpus, nvlink)
model {{ layers 2, hidden {h}, ffn {f}, heads {heads}, kv-heads {kv}, vocab 128, activation swiglu, norm rmsnorm,
  position rope, tied-embeddings off }}
hardware {{ gpu h100-sxm }}
train {{ seq {seq}, global-batch {batch}, micro-batch {micro}, recompute {recompute} }}
dp {{ sharding zero3 }}
target {target}
"""


def spec(tp: int = 2, sp: bool = True, target: str = "torchtitan", recompute: str = "selective",
         llama3_8b: bool = False) -> str:
    """A two-layer model at the counter's widths on tp x dp 2, micro-batch 2 (or Llama 3 8B's
    widths on dp 8, micro-batch 1)."""
    widths = (dict(h=4096, f=14336, heads=32, kv=8, seq=8192, micro=1, batch=16) if llama3_8b
              else dict(h=64, f=160, heads=4, kv=2, seq=16, micro=2, batch=8))
    dp = 8 if llama3_8b else 2
    text = TINY.format(axes=f"tp {tp} x dp {dp}" if tp > 1 else f"dp {dp}", gpus=tp * dp, target=target,
                       recompute=recompute, **widths)
    return text + (f"tp {{ sequence-parallel {'on' if sp else 'off'} }}\n" if tp > 1 else "")


def ledger_of(text: str):
    plan = compile_text(text, path="tiny.par").plan
    assert plan is not None
    sw = software_of(plan)
    shape, knobs = shape_of(plan), knobs_of(plan, "torch")
    hw = timing.hardware_of(plan)
    _, steps = timing.rank_steps(shape, knobs, hw, timing.geometry_of(plan, hw), sw=sw)
    assert steps
    return plan, sw, knobs, next(iter(steps.values()))


def test_the_torchtitan_targets_ledger_recomputes_wo_and_w3():
    """Under `target torchtitan` the rank's ledger recomputes, per layer and micro-batch, wo and
    w3 as sharded on its tp rank (the counter's figure above, scaled by hand: tp 2 halves each);
    under `target torch` parc's own policy, the output projection alone."""
    tokens = 16 * 2
    for target, by_hand in (("torchtitan", 2 * tokens * (64 * 64 + 64 * 160) / 2),
                            ("torch", 2 * tokens * 64 * 64 / 2)):
        plan, sw, knobs, step = ledger_of(spec(target=target))
        assert sw.selective == (timing.TORCHTITAN_OP if target == "torchtitan" else "elementwise")
        gemm = next(c for c in step.ledger.compute if c.op == "gemm")
        assert gemm.recompute == pytest.approx(knobs.microbatches * plan.model.layers * by_hand), target


@pytest.mark.parametrize("sp", [True, False], ids=["sp", "no-sp"])
def test_torchtitans_replay_is_the_unsaved_collectives(sp):
    """The policy replays the block's tp collectives that are not on its save list, once per
    layer and micro-batch: sp's two all-gathers (attention and FFN input; the reduce-scatters
    are saved), or without sp the all-reduces after wo and w2."""
    plan, _, knobs, step = ledger_of(spec(sp=sp))
    replayed = [c for c in step.ledger.collectives if c.phase == "recompute"]
    assert replayed
    assert {c.kind for c in replayed} == ({"all_gather"} if sp else {"all_reduce"})
    assert sum(c.count for c in replayed) == 2 * plan.model.layers * knobs.microbatches


def test_torchtitans_policy_costs_more_than_parcs_and_less_than_full():
    """At Llama 3 8B's widths, recomputing two of five matmuls and the whole forward's
    elementwise work sits between parc's policy (one matmul, part of the elementwise work) and
    full recomputation."""
    plan = compile_text(spec(tp=1, llama3_8b=True), path="x.par").plan
    full = compile_text(spec(tp=1, llama3_8b=True, recompute="full"), path="x.par").plan
    assert plan is not None and full is not None
    sw = software_of(plan)
    assert sw.selective == timing.TORCHTITAN_OP
    torchtitan = timing.predict(plan).breakdown.recompute
    parc = timing.predict(plan, sw=replace(sw, selective="elementwise")).breakdown.recompute
    assert 0 < parc < torchtitan < timing.predict(full).breakdown.recompute


# --- MoE blocks: torchtitan 0.3's qwen3 MoE layer under its own SelectiveAC ---------------------

EXPERTS, TOP_K, EXPERT_FFN, MOE_HEAD_DIM = 4, 2, 32, 16


def moe_shape(shared: int) -> Shape:
    return Shape(layers=1, hidden=DIM, ffn=EXPERT_FFN, heads=HEADS, kv_heads=KV_HEADS, head_dim=MOE_HEAD_DIM,
                 vocab=128, tied=False, ffn_matrices=3, layernorm=False, position_params=0, experts=EXPERTS,
                 top_k=TOP_K, expert_ffn=EXPERT_FFN, shared_experts=shared, moe=(True,), rope=True)


def op_counts(titan, block_config, checkpointed: bool):
    """(FLOPs of `aten.mm`, FLOPs of `aten._grouped_mm`, calls per op) of one forward and
    backward of a torchtitan block, counted by a `TorchDispatchMode` below torchtitan's policy.
    torch's `FlopCounterMode` has no formula for `_grouped_mm` (it counts nothing for it), so its
    FLOPs are counted from its operands' shapes: 2 x rows x inner x columns, the forward's
    (2-D tokens by 3-D expert weights) and the weight gradient's (2-D by 2-D, grouped on the
    inner dimension) alike. It runs on the CPU in bf16 (the experts' inputs are cast to it)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counting(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.mm = self.grouped = 0
            self.calls: dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            a, b = (args + (None, None))[:2]
            if func is torch.ops.aten.mm.default:
                self.mm += 2 * a.shape[0] * a.shape[1] * b.shape[1]
            elif func is torch.ops.aten._grouped_mm.default:
                self.grouped += 2 * a.shape[0] * a.shape[1] * b.shape[-1]
            self.calls[str(func)] = self.calls.get(str(func), 0) + 1
            return func(*args, **(kwargs or {}))

    block = built_block(titan, block_config, checkpointed)
    x = torch.randn(BATCH, SEQ, DIM, requires_grad=True)
    counter = Counting()
    with counter:
        # a squared loss: `_grouped_mm`'s CPU backward rejects the stride-0 gradient of a sum
        (block(x, None, None).float() ** 2).sum().backward()
    assert x.grad is not None
    return counter


def qwen3_moe_block(shared: int):
    """torchtitan 0.3's qwen3 MoE block from its own config code (`_build_qwen3_moe_layers`,
    fused QKV, the standard token dispatcher, torch's SDPA as in `counted_mm_flops`), with
    `shared` shared experts as torchtitan's other MoE models attach them (`make_ffn_config`)."""
    import torch
    from torchtitan.models import qwen3
    from torchtitan.models.common.attention import ScaledDotProductAttention
    from torchtitan.models.common.config_utils import make_ffn_config

    config = qwen3._build_qwen3_moe_layers(
        n_layers=1, dim=DIM, n_heads=HEADS, n_kv_heads=KV_HEADS, head_dim=MOE_HEAD_DIM, moe_hidden_dim=EXPERT_FFN,
        num_experts=EXPERTS, top_k=TOP_K, attn_backend="flex", moe_comm_backend="standard",
        rope=qwen3.CosSinRoPE.Config(dim=MOE_HEAD_DIM, max_seq_len=SEQ, theta=10000.0))[0]
    config.attention.inner_attention = ScaledDotProductAttention.Config()
    if shared:
        init = {"weight": torch.nn.init.normal_}
        config.moe.shared_experts = make_ffn_config(dim=DIM, hidden_dim=shared * EXPERT_FFN, w1_param_init=init,
                                                    w2w3_param_init=init)
    return config


@needs_torchtitan
@pytest.mark.parametrize("shared", [0, 1], ids=["routed-only", "shared-expert"])
def test_an_moe_blocks_recomputation_is_what_torch_runs_under_torchtitans_policy(titan, shared):
    """torchtitan's policy on an MoE block runs again: wo (the second counted mm), the router
    gate (forced to recompute, `force_recompute_mm_shapes_by_fqns`), every routed expert's three
    grouped GEMMs (`_grouped_mm` is not on the save list) and, with a shared expert, its w3 (the
    fourth counted mm). The model's `torchtitan_op_flops` equals torch's count, and a hand count
    of each product."""
    tokens = BATCH * SEQ
    plain = op_counts(titan, qwen3_moe_block(shared), checkpointed=False)
    again = op_counts(titan, qwen3_moe_block(shared), checkpointed=True)
    mm_again, grouped_again = again.mm - plain.mm, again.grouped - plain.grouped
    q = HEADS * MOE_HEAD_DIM
    assert mm_again == 2 * tokens * (q * DIM + DIM * EXPERTS + shared * DIM * EXPERT_FFN)
    assert grouped_again == 2 * tokens * TOP_K * 3 * DIM * EXPERT_FFN  # every routed copy's w1, w3, w2
    assert plain.grouped == 3 * grouped_again  # forward, input and weight gradients
    assert again.calls["aten._grouped_mm.default"] - plain.calls["aten._grouped_mm.default"] == 3
    assert timing.torchtitan_op_flops(moe_shape(shared), True, 1, tokens) == mm_again + grouped_again


def moe_spec(tp: int, sp: bool, shared: int = 1) -> str:
    """tiny-moe (its MoE layers) on tp x dp 4 with ep 4 over dp, under target torchtitan."""
    axes = f"tp {tp} x dp 4" if tp > 1 else "dp 4"
    text = (f"{axes} on nodes({4 * tp} gpus, nvlink)\nep 4 over dp\nmodel tiny-moe {{ shared-experts {shared} }}\n"
            "hardware { gpu h100-sxm }\ntarget torchtitan\n"
            "train { seq 64, global-batch 8, micro-batch 1, recompute selective }\ndp { sharding zero3 }\n")
    return text + (f"tp {{ sequence-parallel {'on' if sp else 'off'} }}\n" if tp > 1 else "")


@pytest.mark.parametrize(("tp", "sp"), [(2, True), (2, False), (1, False)], ids=["sp", "no-sp", "no-tp"])
def test_torchtitans_moe_replay_saves_its_reduce_scatters_and_all_to_alls(tp, sp):
    """An MoE layer under torchtitan's policy replays neither a reduce-scatter nor an all-to-all
    (`reduce_scatter_tensor` and `all_to_all_single` are on `_get_default_save_ops`: the
    dispatch, the combine and the expert-count exchange are served from the cache): per layer
    and micro-batch, sp's all-gathers of the attention's and the shared expert's inputs (2);
    without sp the all-reduces after wo and the shared expert's w2 (2) and the routed result's
    all-gather (1); without tp none at all."""
    plan, sw, knobs, step = ledger_of(moe_spec(tp, sp))
    assert sw.selective == timing.TORCHTITAN_OP
    moe_layers = sum(shape_of(plan).moe)
    dense_layers = plan.model.layers - moe_layers
    assert moe_layers > 0
    assert any(c.axis == "ep" and c.kind == "all_to_all" for c in step.ledger.collectives)  # there are some
    replayed = [c for c in step.ledger.collectives if c.phase == "recompute"]
    assert not [c for c in replayed if c.kind in ("reduce_scatter", "all_to_all")]
    calls = {kind: sum(c.count for c in replayed if c.kind == kind) for kind in ("all_gather", "all_reduce")}
    m = knobs.microbatches
    if tp == 1:
        assert replayed == []
    elif sp:
        assert calls == {"all_gather": 2 * (moe_layers + dense_layers) * m, "all_reduce": 0}
    else:
        assert calls == {"all_gather": moe_layers * m, "all_reduce": 2 * (moe_layers + dense_layers) * m}


def test_the_torchtitan_targets_ledger_recomputes_an_moe_layers_experts():
    """Under `target torchtitan` an MoE layer's ledger recomputes wo, the router gate, the routed
    experts whole and the shared expert's w3 (`torchtitan_op_flops`, checked against torch
    above), far more than parc's policy's output projection alone: at tiny-moe's widths on one
    rank, the GEMM recompute FLOPs are the hand sum over its layers."""
    plan, sw, knobs, step = ledger_of(moe_spec(1, False))
    shape = shape_of(plan)
    tokens = plan.training.seq_len * knobs.micro_batch
    moe_count = sum(shape.moe)
    assert 0 < moe_count
    h, q, f = shape.hidden, shape.q, shape.expert_ffn
    moe_by_hand = 2 * tokens * (q * h + h * shape.experts + shape.top_k * 3 * h * f + h * shape.shared_experts * f)
    dense = timing.torchtitan_op_flops(shape, False, 1, tokens)
    gemm = next(c for c in step.ledger.compute if c.op == "gemm")
    assert gemm.recompute == pytest.approx(knobs.microbatches * (moe_count * moe_by_hand
                                                                 + (shape.layers - moe_count) * dense))


def forward_and_backward_ops(titan, checkpointed: bool):
    """(forward, backward) calls per aten op of torchtitan's llama3 block (fused QKV, torch's SDPA
    on the CPU as in `counted_mm_flops`), counted by a `TorchDispatchMode` outside the policy's:
    what the policy serves from its cache never reaches it. The loss's sum runs outside both."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counting(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls: Counter[str] = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls[str(func)] += 1
            return func(*args, **(kwargs or {}))

    block = built_block(titan, llama3_block(titan, fused_qkv=True), checkpointed)
    x = torch.randn(BATCH, SEQ, DIM, requires_grad=True)
    forward, backward = Counting(), Counting()
    with forward:
        out = block(x, None, None)
    loss = out.sum()
    with backward:
        loss.backward()
    return forward.calls, backward.calls


@needs_torchtitan
def test_every_unsaved_forward_op_runs_twice_as_the_eager_model_charges(titan):
    """Eagerly the time model charges torchtitan's policy the whole forward's memory-bound work
    again (`Work.selective_torchtitan` = the recomputed matmuls + `Work.memory_f`, the same
    kernels and bytes; hbm.py's bytes alike). torch's own op count agrees op by op: the
    checkpointed backward runs, besides the plain one's, every op of the block's forward but the
    saved ones (the SDPA kernel, the 1st, 3rd and 5th mm) - norms, RoPE, SwiGLU, residual adds,
    their views and copies - once each ("detach", the cache's bookkeeping, left out).
    Not checked: the model's kernel count (`MEMORY_KERNELS`, 6 launches a layer) is an effective
    figure fitted with `kernel_overhead`, not this count of aten ops."""
    import torch

    plain_f, plain_b = forward_and_backward_ops(titan, checkpointed=False)
    ckpt_f, ckpt_b = forward_and_backward_ops(titan, checkpointed=True)
    skip = {"aten.detach.default"}
    saved = Counter({"aten.mm.default": 3, str(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default): 1})
    forward = Counter({op: n for op, n in plain_f.items() if op not in skip})
    assert forward["aten.mm.default"] == 5 and sum((forward - saved).values()) > 20
    again = Counter({op: n for op, n in (ckpt_b - plain_b).items() if op not in skip})
    assert again == forward - saved
    assert not (plain_b - ckpt_b)  # the checkpointed backward runs everything the plain one does
    assert Counter({op: n for op, n in ckpt_f.items() if op not in skip}) == forward
    # the model: eagerly, the recomputed memory-bound work is the forward's, kernels and bytes
    shape = small_shape()
    hw = timing.hardware_of(compile_text(spec(tp=1), path="tiny.par").plan)
    case = timing.LayerCase(moe=False, tp=1, sp=False, cp=1, flavour="ring", seq=SEQ, micro=BATCH, ep=1,
                            precision="bf16", attention="flash", kernels="eager")
    work = timing.layer_work(shape, case, hw, timing.DEFAULT)
    mms = timing.torchtitan_op_seconds(shape, 1, BATCH * SEQ, False, 0.0, "bf16", hw, timing.DEFAULT)
    assert work.selective_torchtitan - mms == pytest.approx(work.memory_f)
    from parc import hbm
    piece = hbm.layer_bytes(shape, timing.LayerCase(False, 1, False, 1, "ring", SEQ, BATCH, 1, "bf16", "flash", "eager"))
    assert piece.selective_torchtitan - piece.torchtitan_gemm_again == pytest.approx(piece.memory_f)
