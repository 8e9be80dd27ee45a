"""torchtitan's own code in the memory model (issue 15: the published torchtitan rows).

- per-op selective checkpointing: torchtitan 9dec370's policy (`_save_list`, `_custom_policy`,
  verbatim below) on a block written as its Llama block (one fused wqkv as torchtitan 0.3's, RoPE through complex numbers,
  `repeat_kv`, SDPA, wo; SwiGLU w2(silu(w1(x)) * w3(x)); RMSNorm), checkpointed as torchtitan
  does, keeps what `activations.torchtitan_selective` counts, measured by torch's MemTracker;
- the hand count of the same term at Llama 3 8B and with tp 8 and sequence parallelism;
- the allocator's cached logits (`gpu.cached_logits`): a hand count at Llama 3 8B's 32K tokens,
  and none under pipelining or for parc's accounting of Megatron-LM;
- the whole vocabulary's embedding gradient torchtitan's first pipeline stage accumulates in fp32
  (`model.whole_vocabulary_gradient`): a hand count at Llama 3 405B, tp 8, against parc's job.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from parc.memory import estimate
from parc.memory.activations import (
    _tokens,
    compiled_loss_saved,
    logits_buffer,
    output_activations,
    torch_layer,
    torchtitan_selective,
)
from parc.memory.gpu import cached_logits
from parc.memory.inputs import Knobs, Shape
from parc.pipeline import compile_text

DIM, HEADS, KV_HEADS, FFN, BATCH, SEQ = 64, 4, 2, 160, 2, 32
HEAD_DIM = DIM // HEADS


def measured_kept_per_token(compiled: bool = False) -> float:
    """Bytes per token a checkpointed torchtitan-style block keeps after its forward (fp32 on
    CPU), beyond its input, its parameters and its output; eagerly, measured by MemTracker;
    `compiled`, the tensors torch.compile's graph saves for its backward (AOTAutograd with the
    min-cut partitioner inductor uses, its compilers left out: the partition is what decides
    what is kept), as torchtitan compiles each block after wrapping it for checkpointing."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    from torch import nn
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.utils.checkpoint import (
        CheckpointPolicy,
        checkpoint,
        create_selective_checkpoint_contexts,
    )

    # torchtitan 9dec370 parallelisms/parallelize_llama.py, plus the CPU's flash attention op
    # (CUDA's two are torchtitan's; on CPU SDPA runs `_scaled_dot_product_flash_attention_for_cpu`)
    _save_list = {
        torch.ops.aten.mm.default,
        torch.ops.aten._scaled_dot_product_efficient_attention.default,
        torch.ops.aten._scaled_dot_product_flash_attention.default,
        torch.ops._c10d_functional.reduce_scatter_tensor.default,
        torch.ops.aten.abs.default,
        torch.ops.aten.max.default,
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    }

    def _get_custom_policy(meta):
        def _custom_policy(ctx, func, *args, **kwargs):
            mode = "recompute" if ctx.is_recompute else "forward"
            mm_count_key = f"{mode}_mm_count"
            if func == torch.ops.aten.mm.default:
                meta[mm_count_key] += 1
            to_save = func in _save_list and not (func == torch.ops.aten.mm.default and meta[mm_count_key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if to_save else CheckpointPolicy.PREFER_RECOMPUTE
        return _custom_policy

    class RMSNorm(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x) * self.weight

    def rotary(xq, xk, freqs):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs = freqs.view(1, xq_.shape[1], 1, xq_.shape[-1])
        return (torch.view_as_real(xq_ * freqs).flatten(3).type_as(xq),
                torch.view_as_real(xk_ * freqs).flatten(3).type_as(xk))

    def repeat_kv(x, n_rep):
        bs, slen, heads, dim = x.shape
        return torch.unsqueeze(x, dim=3).expand(bs, slen, heads, n_rep, dim).reshape(bs, slen, heads * n_rep, dim)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            # one fused QKV linear, as torchtitan 0.3 builds it (`activations.TORCHTITAN_FUSED_QKV`)
            self.wqkv = nn.Linear(DIM, (HEADS + 2 * KV_HEADS) * HEAD_DIM, bias=False)
            self.wo = nn.Linear(HEADS * HEAD_DIM, DIM, bias=False)
            self.w1 = nn.Linear(DIM, FFN, bias=False)
            self.w2 = nn.Linear(FFN, DIM, bias=False)
            self.w3 = nn.Linear(DIM, FFN, bias=False)
            self.attention_norm, self.ffn_norm = RMSNorm(DIM), RMSNorm(DIM)

        def attention(self, x, freqs):
            bs, seqlen, _ = x.shape
            xq, xk, xv = self.wqkv(x).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
            xq, xk, xv = (t.view(bs, seqlen, -1, HEAD_DIM) for t in (xq, xk, xv))
            xq, xk = rotary(xq, xk, freqs)
            keys, values = repeat_kv(xk, HEADS // KV_HEADS), repeat_kv(xv, HEADS // KV_HEADS)
            output = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2),
                                                    values.transpose(1, 2), is_causal=True)
            return self.wo(output.transpose(1, 2).contiguous().view(bs, seqlen, -1))

        def forward(self, x, freqs):
            h = x + self.attention(self.attention_norm(x), freqs)
            y = self.ffn_norm(h)
            return h + self.w2(F.silu(self.w1(y)) * self.w3(y))

    torch.manual_seed(0)
    block = Block()
    x = torch.randn(BATCH, SEQ, DIM, requires_grad=True)
    freqs = torch.polar(torch.ones(SEQ, HEAD_DIM // 2), torch.randn(SEQ, HEAD_DIM // 2))
    if compiled:
        return compiled_kept(block, _get_custom_policy, x, freqs) / (BATCH * SEQ)
    tracker = MemTracker()
    tracker.track_external(block, x, freqs)
    cpu = torch.device("cpu")
    base = tracker.get_tracker_snapshot("current")[cpu]["Total"]
    with tracker:
        meta = defaultdict(int)
        out = checkpoint(block, x, freqs, use_reentrant=False,
                         context_fn=lambda: create_selective_checkpoint_contexts(_get_custom_policy(meta)))
        kept = tracker.get_tracker_snapshot("current")[cpu]["Total"] - base - out.numel() * out.element_size()
    assert meta["forward_mm_count"] == 5  # wqkv, wo, w1, w3, w2
    out.sum().backward()  # the policy's recomputation runs
    assert x.grad is not None
    return kept / (BATCH * SEQ)


def boxed_aot_backend(**options):
    """aot_autograd with both graphs run as traced (`make_boxed_func`, no inductor code
    generation): what the partitioner saves is what autograd packs."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    return aot_autograd(fw_compiler=lambda gm, _: make_boxed_func(gm), bw_compiler=lambda gm, _: make_boxed_func(gm),
                        **options)


def compiled_kept(block, get_policy, x, freqs) -> int:
    """Bytes of the tensors the compiled, checkpointed block saves for its backward, beyond its
    input, parameters and the RoPE table: torchtitan 9dec370's `apply_compile` compiles the
    `ptd_checkpoint_wrapper`-wrapped block whole (`fullgraph=True`); its context function is
    the one `_apply_ac_to_transformer_block` builds."""
    import torch
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    def selective_checkpointing_context_fn():
        return create_selective_checkpoint_contexts(get_policy(defaultdict(int)))

    wrapped = checkpoint_wrapper(block, context_fn=selective_checkpointing_context_fn, preserve_rng_state=False)
    backend = boxed_aot_backend(partition_fn=min_cut_rematerialization_partition)
    compiled = torch.compile(wrapped, backend=backend, fullgraph=True)
    saved = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = compiled(x, freqs)
    out.sum().backward()
    assert x.grad is not None and saved
    outside = {p.untyped_storage().data_ptr() for p in block.parameters()} | {
        x.untyped_storage().data_ptr(), freqs.untyped_storage().data_ptr()}
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in saved}
    return sum(n for ptr, n in storages.items() if ptr not in outside)


def small_shape(ffn_matrices: int = 3) -> Shape:
    return Shape(layers=1, hidden=DIM, ffn=FFN, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, vocab=128,
                 tied=False, ffn_matrices=ffn_matrices, layernorm=False, position_params=0, rope=True)


def test_selective_is_what_torchtitans_policy_keeps():
    kept = measured_kept_per_token()
    assert kept > 0
    shape = small_shape()
    k = Knobs(tp=1, pp=1, dp=1, seq=SEQ, micro_batch=BATCH, precision="fp32", model_code="torchtitan")
    n = _tokens(shape, k)
    # the model counts the checkpoint's input (the block input, h per token) as the layer's own
    assert torchtitan_selective(shape, k, n, 4) - 4 * DIM == kept
    assert torch_layer(shape, k, False, "selective").saved == round(BATCH * SEQ * (kept + 4 * DIM))


def test_compiled_selective_is_what_the_partitioner_keeps():
    """Under torch.compile the policy's MUST_SAVE outputs that the backward never reads are not
    kept: w2's output (h per token) is the whole difference from the eager block."""
    kept = measured_kept_per_token(compiled=True)
    assert kept > 0
    shape = small_shape()
    k = Knobs(tp=1, pp=1, dp=1, seq=SEQ, micro_batch=BATCH, precision="fp32", model_code="torchtitan-compiled")
    eager = Knobs(tp=1, pp=1, dp=1, seq=SEQ, micro_batch=BATCH, precision="fp32", model_code="torchtitan")
    n = _tokens(shape, k)
    assert torchtitan_selective(shape, k, n, 4) - 4 * DIM == kept
    # by hand: wqkv's output q + 2 kv, attention's output q and fp32 log-sum-exp, w1's F
    assert kept == 4 * (DIM + 2 * KV_HEADS * HEAD_DIM + DIM + HEADS + FFN)
    assert torchtitan_selective(shape, eager, n, 4) - torchtitan_selective(shape, k, n, 4) == 4 * DIM


def test_compiled_block_drops_w2_and_its_reduce_scatter_at_llama3_8b():
    """At the published rows' Llama 3 8B, two 8K sequences: 32 layers x 16,384 tokens x 4,096 x
    2 bytes (4.0 GiB) fewer under `compile on`; with tp 8 and sequence parallelism also the
    reduce-scatter's h/8."""
    shape = Shape(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128, vocab=128256,
                  tied=False, ffn_matrices=3, layernorm=False, position_params=0, rope=True)
    for tp, sp, drop in ((1, False, 4096), (8, True, 4096 + 512)):
        knobs = {code: Knobs(tp=tp, pp=1, dp=1, seq=8192, micro_batch=2, sequence_parallel=sp, model_code=code)
                 for code in ("torchtitan", "torchtitan-compiled")}
        eager, compiled = (torch_layer(shape, knobs[c], False, "selective").saved for c in knobs)
        assert eager - compiled == 2 * 16384 * drop
    # the published Table 1 run: two 8K sequences per rank, per-op selective recomputation
    spec = SPEC_8B.replace("seq 32768", "seq 8192").replace("global-batch 8", "global-batch 16") \
        .replace("micro-batch 1", "micro-batch 2").replace("recompute full", "recompute selective")
    # the loss left eager, as torchtitan 9dec370 ran it, so that only the block differs
    plans = {flag: compile_text(spec.replace("target torchtitan", f"target torchtitan {{ compile {flag} }}"),
                                path="8b.par").plan for flag in ("on, compile-loss off", "off")}
    assert {plans[f].target.compile for f in plans} == {True, False}
    on, off = (estimate(plans[f]).peak_bytes for f in ("on, compile-loss off", "off"))
    assert off - on == 32 * 16384 * 4096 * 2


def test_selective_hand_count_llama3_8b_and_with_tp():
    # Llama 3 8B: h 4096, q 4096, kv 1024, F 14336, 32 heads; per token the fused wqkv (q + 2 kv),
    # flash output, w1, w2 (h) and the block input, bf16, and the fp32 log-sum-exp
    shape = Shape(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128, vocab=128256,
                  tied=False, ffn_matrices=3, layernorm=False, position_params=0, rope=True)
    k = Knobs(tp=1, pp=1, dp=1, seq=8192, micro_batch=2, model_code="torchtitan")
    per_token = 2 * (4096 + 2 * 1024 + 4096 + 14336 + 4096 + 4096) + 32 * 4
    assert torchtitan_selective(shape, k, _tokens(shape, k), 2) == per_token
    assert torch_layer(shape, k, False, "selective").saved == 16384 * per_token
    # parc's own policy keeps w3's output too, and not w2's
    parc = Knobs(tp=1, pp=1, dp=1, seq=8192, micro_batch=2)
    assert torch_layer(shape, parc, False, "selective").saved == 16384 * (per_token + 2 * (14336 - 4096))
    # tp 8 with sequence parallelism: q/8, kv/8, F/8; w2's partial sums whole (h); the two
    # reduce-scatters' outputs and the block input h/8
    k8 = Knobs(tp=8, pp=1, dp=1, seq=8192, micro_batch=2, model_code="torchtitan")
    per_token8 = 2 * (512 + 2 * 128 + 512 + 1792 + 4096 + 2 * 512 + 512) + 4 * 4
    assert torchtitan_selective(shape, k8, _tokens(shape, k8), 2) == per_token8


SPEC_8B = """job loss
dp 8 on nodes(8 gpus, nvlink)
model llama3-8b
hardware { gpu h100-sxm }
train {
  seq 32768
  global-batch 8
  micro-batch 1
  precision bf16
  optimizer adamw
  recompute full
}
dp { sharding zero3 }
target torchtitan
"""


def test_cached_logits_hand_count():
    GiB = 1 << 30
    # 32,768 tokens x 128,256 logits: bf16 7.83 GiB freed before the backward's two fp32 tensors
    bf16 = 32768 * 128256 * 2
    assert cached_logits(bf16, 2 * 2 * bf16, 2 * 2 * bf16 + 3 * GiB) == bf16 - 3 * GiB
    assert cached_logits(bf16, 2 * 2 * bf16, 2 * 2 * bf16 + 9 * GiB) == 0  # a larger moment elsewhere
    # what FSDP2 holds gathered through the loss counts at that moment too
    assert cached_logits(bf16, 2 * 2 * bf16, 2 * 2 * bf16 + 3 * GiB, 2 * GiB) == bf16 - GiB
    plan = compile_text(SPEC_8B, path="loss.par").plan
    est = estimate(plan)
    stage = est.stages[0]
    # gathered at the loss, bf16: the root (embedding and output, 128,256 x 4,096 each, and the
    # final norm) and torchtitan's last block (q, o 4,096^2; k, v 4,096 x 1,024; w1, w2, w3
    # 4,096 x 14,336; two norms), which it does not reshard after forward
    root = 2 * (2 * 128256 * 4096 + 4096)
    block = 2 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096)
    assert root + block == 2_537_578_496
    assert est.overheads.cached_logits == max(0, 2 * 2 * bf16 + root + block + bf16 - stage.buffers) > 0
    # parc's own job reshards every block after forward: the root alone
    ours = estimate(compile_text(SPEC_8B.replace("target torchtitan", "target torch"), path="loss.par").plan)
    assert ours.overheads.cached_logits == max(0, 2 * 2 * bf16 + root + bf16 - ours.stages[0].buffers) > 0
    assert est.predicted_reserved_bytes == stage.total + est.overheads.inside_allocator
    assert est.overheads.inside_allocator - est.overheads.cached_logits == est.overheads.cublas + est.overheads.fragmentation


def test_no_cached_logits_under_pipelining_nor_megatron():
    pp = compile_text(SPEC_8B.replace("dp 8 on", "dp 4 x pp 2 on"), path="pp.par").plan
    assert pp.layout.pp.degree == 2
    assert estimate(pp).overheads.cached_logits == 0
    plan = compile_text(SPEC_8B, path="loss.par").plan
    assert estimate(plan, runtime="megatron-flash").overheads.cached_logits == 0


SPEC_405B_PP = """job titan
tp 8 x dp 8 x pp 8 on nodes(8 gpus, nvlink)
model llama3-405b
hardware { gpu h100-sxm }
train {
  seq 8192
  global-batch 64
  micro-batch 1
  precision bf16
  optimizer adamw
  recompute full
}
tp { sequence-parallel on }
pp { schedule 1f1b }
dp { sharding zero2 }
TARGET
"""


def test_torchtitans_first_stage_accumulates_the_whole_vocabularys_embedding_gradient():
    from parc.memory import peak, per_stage, shape_of
    from parc.memory.inputs import knobs_of
    from parc.targets import memory_runtime

    stages = {}
    for target in ("target torchtitan", "target torch"):
        plan = compile_text(SPEC_405B_PP.replace("TARGET", target), path="titan.par").plan
        shape, k = shape_of(plan), knobs_of(plan, memory_runtime(plan.target))
        stages[target] = per_stage(shape, k)
        assert peak(shape, k)[0] == max(s.total for s in stages[target])  # the fast path agrees
    titan, parc = stages["target torchtitan"], stages["target torch"]
    # (V - ceil(V / 8)) x h x 4: the rows of the other tp ranks, fp32, beside this rank's own
    assert titan[0].grads - parc[0].grads == (128256 - 16032) * 16384 * 4 == 7_354_712_064
    assert all(t.grads == p.grads for t, p in zip(titan[1:], parc[1:], strict=True))  # no embedding there


# ---------------------------------------------------------------------------------------------
# The parameters FSDP2 holds gathered while the loss runs (`model.gathered_at_loss`)

GATHERED_SPEC = """\
dp 8 on nodes(8 gpus, nvlink)
model MODEL
hardware { gpu h100-sxm }
train { seq 4096, global-batch 16, micro-batch 2, recompute selective }
dp { sharding SHARDING }
TARGET
"""


def _rank0(plan):
    from parc.memory import shape_of
    from parc.memory.inputs import knobs_of
    from parc.memory.model import _pieces
    from parc.targets import memory_runtime

    shape, k = shape_of(plan), knobs_of(plan, memory_runtime(plan.target))
    params, _ = _pieces(shape, k)
    return k, params[0]


@pytest.mark.parametrize("sharding", ["zero3", "hsdp 2 x 4", "zero2"])
def test_gathered_at_loss_follows_the_generated_jobs_fully_shard_calls(sharding):
    """parc's own job (`target torch`): what `gathered_at_loss` counts is read from the
    `fully_shard` calls the generated parallel.py makes. A root left at
    `reshard_after_forward=None` (FSDP2's default: False for a root) or False stays gathered
    from its forward through the loss; a block with True is resharded after its forward, the
    last one too, so no block is counted. zero2 (False everywhere) holds every gathered copy as
    a model state already (`buffers.gathered_buffers`), not again here."""
    import re

    from parc.backends import job_files
    from parc.memory.buffers import compute_copy_bytes
    from parc.memory.model import gathered_at_loss

    text = GATHERED_SPEC.replace("MODEL", "llama3-8b { layers 4 }").replace("SHARDING", sharding)
    plan = compile_text(text.replace("TARGET", "target torch"), path="t.par").plan
    calls = dict(re.findall(r"fully_shard\((block|part), mesh=[\w.]+, reshard_after_forward=(\w+)",
                            job_files(plan)["parallel.py"]))
    assert set(calls) == {"block", "part"}, calls
    k, rank = _rank0(plan)
    root_gathered = calls["part"] in ("None", "False")
    block_gathered = calls["block"] == "False"
    if sharding == "zero2":
        assert calls == {"block": "False", "part": "False"} and gathered_at_loss(k, rank) == 0
        return
    expected = (compute_copy_bytes(rank.root, k.precision) if root_gathered else 0) + (
        compute_copy_bytes(rank.last_layer, k.precision) if block_gathered else 0)
    assert calls == {"block": "True", "part": "None"}  # what the job does today
    assert gathered_at_loss(k, rank) == expected > 0


def test_fsdp2_keeps_a_root_left_at_its_default_gathered_after_forward():
    """The FSDP2 behaviour the term rests on, run (CPU, a fake process group of 2): with
    `reshard_after_forward=None` on the root, as parc's parallel.py writes it, the root's
    parameters are unsharded after the forward; a block with True is resharded."""
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
        model.append(torch.nn.Linear(8, 8))
        for block in list(model)[:2]:
            fully_shard(block, reshard_after_forward=True)
        fully_shard(model, reshard_after_forward=None)
        model(torch.randn(4, 8))

        def unsharded(module):
            return module._get_fsdp_state()._fsdp_param_group.is_unsharded

        assert unsharded(model) and not unsharded(model[0]) and not unsharded(model[1])
    finally:
        dist.destroy_process_group()


def test_torchtitans_last_block_held_at_the_loss_is_the_last_blocks_own_size():
    """torchtitan leaves its last block gathered after forward: `gathered_at_loss` counts that
    block's own parameters, a dense one where the model's last layer is dense, not the
    largest (MoE) layer."""
    from parc.memory.buffers import compute_copy_bytes, largest_layer
    from parc.memory.model import gathered_at_loss

    model = "llama3-8b { layers 5, experts 8, top-k 2, expert-ffn 4096, moe-layers every 2 }"  # 1 and 3 MoE
    plan = compile_text(GATHERED_SPEC.replace("MODEL", model).replace("SHARDING", "zero3").replace(
        "TARGET", "target torchtitan"), path="t.par").plan
    assert plan is not None
    k, rank = _rank0(plan)
    from parc.memory import shape_of

    shape = shape_of(plan)
    assert shape.moe == (False, True, False, True, False)
    largest = largest_layer(shape, k.tp, k.ep, rank.chunks)
    assert rank.last_layer.total < largest.total  # the last layer is dense, the largest MoE
    root = compute_copy_bytes(rank.root, k.precision)
    assert gathered_at_loss(k, rank) == root + compute_copy_bytes(rank.last_layer, k.precision)


# ---------------------------------------------------------------------------------------------
# The compiled loss (torchtitan's `build_cross_entropy_loss` under `compile on`)

PP_SPEC = """\
dp 2 x pp 2 on nodes(4 gpus, nvlink)
model llama3-8b { layers 4 }
hardware { gpu h100-sxm }
train { seq 4096, global-batch 8, micro-batch 1, recompute selective }
pp { schedule 1f1b }
dp { sharding zero2 }
TARGET
"""


@pytest.mark.parametrize("target", ["target torch", "target torchtitan", "target torchtitan { compile on }"])
def test_the_last_stages_kept_logits_are_in_the_dtype_its_model_returns(target):
    """Under pipelining the schedule keeps the last stage's output (the logits) until its
    backward. parc's job returns them in fp32 (its rendered model.py ends `.float()`);
    torchtitan's model returns `self.output(h)` in the compute dtype, which is also the tensor
    its compiled loss saves (`compiled_loss_saved` counts only its two fp32 numbers a token under
    pipelining): the kept output and what the compiled loss documents agree, bf16."""
    import re

    from parc.backends import job_files
    from parc.memory import shape_of
    from parc.memory.inputs import knobs_of
    from parc.memory.model import _pieces
    from parc.targets import memory_runtime

    plan = compile_text(PP_SPEC.replace("TARGET", target), path="t.par").plan
    assert plan is not None
    shape, k = shape_of(plan), knobs_of(plan, memory_runtime(plan.target))
    _, acts = _pieces(shape, k)
    last = acts[-1].chunks[-1]
    tokens, vocab = 4096 * 1, 128256
    if target == "target torch":
        returned = re.findall(r"return self\.output\(self\.norm\(h\)\)(\.float\(\))?", job_files(plan)["model.py"])
        assert returned == [".float()"]  # fp32 logits leave parc's model
        assert last.output == tokens * vocab * 4
        return
    assert last.output == tokens * vocab * 2  # torchtitan: `return self.output(h)`, bf16
    if k.compiled_loss:
        per_token = compiled_loss_saved(k, vocab)
        assert per_token == 2 * 4  # the logits it saves are the kept output, not counted again
        alone = Knobs(tp=1, pp=1, dp=2, seq=4096, micro_batch=1, model_code="torchtitan-compiled")
        assert (compiled_loss_saved(alone, vocab) - per_token) * tokens == last.output  # same dtype, same bytes


LOSS_BATCH, LOSS_SEQ, LOSS_VOCAB = 2, 64, 1000


def _loss_inputs():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    pred = torch.randn(LOSS_BATCH, LOSS_SEQ, LOSS_VOCAB, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, LOSS_VOCAB, (LOSS_BATCH, LOSS_SEQ))
    return pred, labels


def cross_entropy_loss(pred, labels):
    """torchtitan's loss (9dec370 train.py, e7c0cae components/loss.py), verbatim."""
    import torch

    return torch.nn.functional.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def test_compiled_loss_saves_the_logits_and_two_numbers_a_token():
    """What the compiled loss keeps for its backward: inductor's decompositions and its min-cut
    partitioner (its code generation left out), saved tensors collected as autograd packs them."""
    import torch
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    pred, labels = _loss_inputs()
    backend = boxed_aot_backend(decompositions=select_decomp_table(), partition_fn=min_cut_rematerialization_partition)
    compiled = torch.compile(cross_entropy_loss, backend=backend)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        loss = compiled(pred, labels)
    loss.backward()
    assert pred.grad is not None and saved
    tokens = LOSS_BATCH * LOSS_SEQ
    logits = [t for t in saved if t.numel() >= tokens * LOSS_VOCAB]
    assert [(t.dtype, t.untyped_storage().data_ptr()) for t in logits] == [
        (torch.bfloat16, pred.untyped_storage().data_ptr())]  # the input itself, never an fp32 copy
    floats = sum(t.numel() * t.element_size() for t in saved if t.dtype == torch.float32)
    assert floats == 2 * 4 * tokens + 4  # the row maximum and log-sum-exp, and the loss's divisor
    k = Knobs(tp=1, pp=1, dp=1, seq=LOSS_SEQ, micro_batch=LOSS_BATCH, model_code="torchtitan-compiled")
    assert k.compiled_loss and compiled_loss_saved(k, LOSS_VOCAB) * tokens == 2 * tokens * LOSS_VOCAB + 2 * 4 * tokens


@pytest.mark.long
def test_inductors_compiled_loss_allocates_one_logits_gradient_in_bf16():
    """The code inductor generates for the loss (CPU; its scheduler fuses the same graph for
    CUDA): the forward allocates fp32 numbers a token, the backward one (tokens, 1) fp32 buffer
    and the bf16 gradient of the logits, what `activations.logits_buffer` counts. About 25 s."""
    import re

    import torch
    from torch._inductor.utils import run_and_get_code

    pred, labels = _loss_inputs()
    compiled = torch.compile(cross_entropy_loss)

    def step():
        compiled(pred, labels).backward()

    _, (forward, backward) = run_and_get_code(step)
    allocation = re.compile(r"empty_strided_cpu\(\(([\d, ]*)\), \([\d, ]*\), torch\.(\w+)\)")
    sizes = {"float32": 4, "bfloat16": 2, "int64": 8}

    def allocated(code):
        found = [(tuple(int(x) for x in shape.replace(" ", "").split(",") if x), dtype)
                 for shape, dtype in allocation.findall(code)]
        assert found
        return found

    tokens = LOSS_BATCH * LOSS_SEQ
    assert all(shape in ((tokens, 1), ()) for shape, _ in allocated(forward))
    grads = sorted(allocated(backward))
    assert grads == [((tokens, 1), "float32"), ((tokens, LOSS_VOCAB), "bfloat16")]
    k = Knobs(tp=1, pp=1, dp=1, seq=LOSS_SEQ, micro_batch=LOSS_BATCH, model_code="torchtitan-compiled")
    assert logits_buffer(k, LOSS_VOCAB) == sum(
        sizes[dtype] * (shape[0] * shape[1]) for shape, dtype in grads)


def test_compiled_loss_hand_count_at_the_h200_rows():
    """Llama 3 8B, two 8K sequences a rank (the 2025-06 H200 rows, torchtitan e7c0cae): the
    compiled loss keeps the bf16 logits (16,384 x 128,256 x 2 bytes) and two fp32 numbers a
    token instead of the fp32 log-softmax, its backward one bf16 gradient instead of two fp32
    tensors, and no freed block is cached; with `compile-loss off` (torchtitan 9dec370) the loss
    is the eager one. With tp the loss is counted as eager."""
    vocab, tokens = 128256, 16384
    codes = ("torchtitan-compiled", "torchtitan-compiled-model")
    k = {c: Knobs(tp=1, pp=1, dp=8, seq=8192, micro_batch=2, model_code=c) for c in codes}
    shape = Shape(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128, vocab=vocab,
                  tied=False, ffn_matrices=3, layernorm=False, position_params=0, rope=True)
    compiled, eager = (output_activations(shape, k[c], vocab) for c in codes)
    assert eager - compiled == tokens * (4 * vocab - 2 * vocab - 2 * 4)
    assert logits_buffer(k["torchtitan-compiled"], vocab) == tokens * (2 * vocab + 4)
    assert logits_buffer(k["torchtitan-compiled-model"], vocab) == 2 * tokens * vocab * 4
    plan = compile_text(SPEC_8B.replace("target torchtitan", "target torchtitan { compile on }"), path="c.par").plan
    assert estimate(plan).overheads.cached_logits == 0
    # under pipelining the saved logits are the stage's output, which the schedule keeps anyway
    piped = Knobs(tp=1, pp=4, dp=2, seq=8192, micro_batch=2, model_code="torchtitan-compiled")
    assert compiled_loss_saved(piped, vocab) == 2 * 4
    tp = Knobs(tp=8, pp=1, dp=1, seq=8192, micro_batch=2, model_code="torchtitan-compiled")
    assert not tp.compiled_loss and logits_buffer(tp, vocab) == 3 * tokens * vocab // 8 * 4


@pytest.mark.long
def test_compiled_block_with_sequence_parallelism_keeps_wos_reduce_scatter_not_w2s():
    """With sequence parallelism (tp 2 in a fake process group, the collectives as torch's
    functional all-gather and reduce-scatter around the matmuls), the policy marks both
    reduce-scatters' outputs; the compiled block keeps wo's, which the backward's recomputation
    of the second half reads, and neither w2's output nor its reduce-scatter: the h + h/t of
    `torchtitan_selective`. No norms or RoPE here (they change nothing the claim reads)."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc
    import torch.nn.functional as F
    from torch import nn
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.utils.checkpoint import CheckpointPolicy

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        save = {torch.ops.aten.mm.default, torch.ops._c10d_functional.reduce_scatter_tensor.default,
                torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default}

        def get_policy(meta):
            def policy(ctx, func, *args, **kwargs):
                key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
                if func == torch.ops.aten.mm.default:
                    meta[key] += 1
                keep = func in save and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
                return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
            return policy

        def scatter(x):  # the partial sums reduce-scattered over the sequence (dim 1)
            return fc.reduce_scatter_tensor(x.transpose(0, 1).contiguous(), "sum", 0, dist.group.WORLD).transpose(0, 1)

        def gather(x):
            return fc.all_gather_tensor(x.transpose(0, 1).contiguous(), 0, dist.group.WORLD).transpose(0, 1)

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.wq, self.wk, self.wv, self.wo = (nn.Linear(DIM, DIM, bias=False) for _ in range(4))
                self.w1, self.w3 = nn.Linear(DIM, FFN, bias=False), nn.Linear(DIM, FFN, bias=False)
                self.w2 = nn.Linear(FFN, DIM, bias=False)

            def forward(self, x, freqs):
                b, local, _ = x.shape
                y = gather(x)
                q, k, v = (t.view(b, 2 * local, HEADS, HEAD_DIM).transpose(1, 2) for t in (self.wq(y), self.wk(y), self.wv(y)))
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, 2 * local, DIM)
                h = x + scatter(self.wo(o))
                z = gather(h)
                return h + scatter(self.w2(F.silu(self.w1(z)) * self.w3(z)))

        torch.manual_seed(0)
        local = BATCH * SEQ // 2
        x = torch.randn(BATCH, SEQ // 2, DIM, requires_grad=True)
        kept = compiled_kept(Block(), get_policy, x, torch.zeros(1))
        # per gathered token: wq's q, wv's v (DIM here: no grouped heads), attention's output and
        # fp32 log-sum-exp, w1's F; per local token: wo's reduce-scatter output
        assert kept == 4 * (2 * local * (DIM + DIM + DIM + HEADS + FFN) + local * DIM)
    finally:
        dist.destroy_process_group()
