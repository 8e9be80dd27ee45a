"""The memory model against the formulas it must agree with, and against itself.

- activations per layer: the torch runtime against the bytes measured in docs/torch-cpu.md
  section 3.8 (exact closed forms for a pre-LN GELU block), the megatron runtime against
  Korthikanti et al. 2022, Table 2;
- model states: the zero runtime against the ZeRO paper (16, 4 + 12/N, 2 + 14/N, 16/N bytes per
  parameter), the megatron runtime against Megatron-LM's theoretical_memory_usage.py (18 or
  6 + 12/d bytes per parameter on the most loaded shard);
- micro-batches in flight: 1F1B's min(p - i, m), GPipe's m, and Megatron-LM's interleaving penalty;
- consistency: parameters over all ranks add up to the model; the fast `peak` equals the per-stage
  breakdown; a help line's "frees X" equals re-running the model on the edited spec.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest
from parc import memory
from parc.memory.activations import layer_activations, torch_layer
from parc.memory.inputs import Knobs, Shape
from parc.memory.model import peak, per_stage, rank_params
from parc.memory.parameters import Params, padded_vocab
from parc.memory.schedules import max_in_flight
from parc.memory.states import model_states
from parc.pipeline import compile_path, compile_text

from .conftest import ROOT, SPECS

# The model of torch-cpu.md section 3.8: pre-LN, GELU MLP of 4h, LayerNorm, MHA, no positions.
H, A, S, B = 64, 4, 32, 8
CPU_MODEL = Shape(layers=4, hidden=H, ffn=4 * H, heads=A, kv_heads=A, head_dim=H // A, vocab=128, tied=False,
                  ffn_matrices=2, layernorm=True, position_params=0)


def knobs(**fields) -> Knobs:
    base = dict(tp=1, pp=1, dp=1, seq=S, micro_batch=B, sequence_parallel=False)
    base.update(fields)
    return Knobs(**base)


# ---------------------------------------------------------------------------------------------
# Activations: torch runtime against the measured closed forms (fp32: 4-byte elements and stats)


def measured_single(bytes_per_element: int) -> int:
    """torch-cpu.md 3.8, CPU flash SDPA: k x 32 sbh + 4 a s b (fp32 LSE) + LN stats, k = bytes / 2."""
    sbh = S * B * H
    k = bytes_per_element // 2
    return k * 32 * sbh + 4 * A * S * B + 4 * S * B * 4


@pytest.mark.parametrize("element", [4, 2])
def test_torch_single_process_layer_matches_the_measurement(element):
    got = torch_layer(CPU_MODEL, knobs(), False, "none", act=element, stat=4)
    assert got.saved == measured_single(element)


def test_torch_tp_without_sp_matches_the_measurement():
    t = 2
    sbh = S * B * H
    expected = 16 * sbh + 48 * sbh // t + 4 * A * S * B // t + 4 * S * B * 4  # fp32; LN stats replicated
    assert torch_layer(CPU_MODEL, knobs(tp=t), False, "none", act=4, stat=4).saved == expected


def test_torch_tp_with_sp_keeps_the_gathered_norm_output():
    t = 2
    sbh = S * B * H
    expected = 8 * sbh + 56 * sbh // t + 4 * A * S * B // t + 4 * S * B * 4 // t
    assert torch_layer(CPU_MODEL, knobs(tp=t, sequence_parallel=True), False, "none", act=4, stat=4).saved == expected


def test_torch_full_recompute_keeps_the_block_input():
    assert torch_layer(CPU_MODEL, knobs(), False, "full", act=4, stat=4).saved == S * B * H * 4


def test_torch_activations_use_exact_shapes_not_the_4h_mha_shortcut():
    """GQA shrinks K and V; SwiGLU saves four FFN tensors (w1 out, silu out, w3 out, product)."""
    llama = Shape(layers=1, hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128, vocab=128256, tied=False,
                  ffn_matrices=3, layernorm=False, position_params=0)
    k = knobs(seq=8192, micro_batch=1)
    tokens = 8192
    per_token = 2 * (4096 * 4 + 4096 + 2 * 1024 + 4096 + 4 * 14336) + 32 * 4 + 2 * 4  # + LSE + 2 RMS stats
    assert layer_activations(llama, k, False, "none").saved == tokens * per_token


def test_moe_activations_scale_with_top_k():
    base = Shape(layers=1, hidden=1024, ffn=4096, heads=8, kv_heads=8, head_dim=128, vocab=1000, tied=False,
                 ffn_matrices=3, layernorm=False, position_params=0, experts=8, top_k=1, expert_ffn=2048, moe=(True,))
    k = knobs(seq=1024, micro_batch=1)
    one = layer_activations(base, k, True, "none").saved
    two = layer_activations(replace(base, top_k=2), k, True, "none").saved
    tokens = 1024
    # per routed copy (bf16): the expert's input rows, its returned output and the gated product
    # (3h), its insides (4 F_e); the fp32 gate weight, the int64 token and order indices, and the
    # router's top-k index and gate; renormalising two gates also keeps their fp32 sum per token
    routed_copy = 2 * (3 * 1024 + 4 * 2048) + 4 + 2 * 8 + 8 + 4
    assert two - one == tokens * (routed_copy + 4)


def test_recompute_modes_are_ordered():
    k = knobs(seq=4096, micro_batch=2, tp=4, sequence_parallel=True)
    none, selective, full = (layer_activations(CPU_MODEL, k, False, m).saved for m in ("none", "selective", "full"))
    assert none > selective > full > 0


# ---------------------------------------------------------------------------------------------
# Activations: megatron runtime is Korthikanti et al. 2022, Table 2 (MHA, FFN 4h, 16-bit), without
# their two dropout masks (parc's models have no dropout; its Megatron launcher sets it to 0)

GPT22B = Shape(layers=48, hidden=6144, ffn=24576, heads=64, kv_heads=64, head_dim=96, vocab=51200, tied=True,
               ffn_matrices=2, layernorm=True, position_params=0)


@pytest.mark.parametrize("t", [1, 2, 8])
def test_megatron_layer_is_korthikanti(t):
    """Table 2's 34 s b h (10 + 24 / t without sequence parallelism) less the 2 s b h of the two
    dropout masks (one byte an element each, in the part tp replicates)."""
    s, b, h, a = 2048, 4, 6144, 64
    sbh = s * b * h
    mk = dict(seq=s, micro_batch=b, tp=t, runtime="megatron")
    no_sp = layer_activations(GPT22B, knobs(**mk, sequence_parallel=False), False, "none").saved
    assert no_sp == round(sbh * (10 - 2 + 24 / t + 5 * a * s / (h * t)))
    if t > 1:
        sp = layer_activations(GPT22B, knobs(**mk, sequence_parallel=True), False, "none").saved
        assert sp == round(sbh / t * (34 - 2 + 5 * a * s / h))
        selective = layer_activations(GPT22B, knobs(**mk, sequence_parallel=True), False, "selective").saved
        assert selective == round((34 - 2) * sbh / t)
    full = layer_activations(GPT22B, knobs(**mk, sequence_parallel=False), False, "full").saved
    assert full == 2 * sbh


LLAMA70B = Shape(layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8, head_dim=128, vocab=128256, tied=False,
                 ffn_matrices=3, layernorm=False, position_params=0)


def test_megatron_layer_counts_grouped_query_attention_and_swiglu():
    """Llama 3 70B, tp 8 with sequence parallelism, FlashAttention, typed tensor by tensor (bytes a
    token): the two norms' inputs and outputs 4 x 2 h; q 2 x 8,192, k and v 2 x 1,024 each (8
    kv heads of 128), the attention output 2 x 8,192; SwiGLU's fc1 output 2 x 2 x 28,672 and fc2's
    input 2 x 28,672; the fp32 log-sum-exp of 64 heads. Korthikanti's h-wide form (18 h + 4 F)
    would charge k and v 2 x 8,192 each and a 28,672-wide fc1 output."""
    s, t = 8192, 8
    k = knobs(seq=s, micro_batch=1, tp=t, sequence_parallel=True, runtime="megatron-flash")
    per_token = (4 * 2 * 8192) + 2 * 8192 + 2 * 2 * 1024 + 2 * 8192 + 2 * 2 * 28672 + 2 * 28672
    assert layer_activations(LLAMA70B, k, False, "none").saved == round(s * (per_token + 4 * 64) / t)


def test_megatron_fp8_keeps_the_linears_inputs_quantized():
    """Transformer Engine's fp8 linears save their inputs as the one-byte tensors they cast: the
    QKV and fc1 inputs (the norms' outputs) and fc2's input halve, and the output projection keeps
    a one-byte copy of the attention output beside the kernel's bf16 one. Llama 3 70B, tp 8, typed
    by hand against the bf16 count; the torch runtime (torchao's float8 saves bf16 inputs) is
    unchanged by fp8."""
    s, t = 8192, 8
    k = dict(seq=s, micro_batch=1, tp=t, sequence_parallel=True)
    bf16 = layer_activations(LLAMA70B, knobs(**k, runtime="megatron-flash"), False, "none").saved
    fp8 = layer_activations(LLAMA70B, knobs(**k, runtime="megatron-flash", precision="fp8"), False, "none").saved
    assert bf16 - fp8 == round(s * (8192 + 8192 + 28672 - 8192) / t)
    torch_bf16 = layer_activations(LLAMA70B, knobs(**k), False, "none").saved
    assert layer_activations(LLAMA70B, knobs(**k, precision="fp8"), False, "none").saved == torch_bf16


QWEN3_30B = Shape(layers=48, hidden=2048, ffn=6144, heads=32, kv_heads=4, head_dim=128, vocab=151936, tied=False,
                  ffn_matrices=3, layernorm=False, position_params=0, experts=128, top_k=8, expert_ffn=768,
                  moe=(True,) * 48)


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_megatron_moe_layer_saves_the_routed_copies(precision):
    """Qwen3-30B-A3B's MoE layer (h 2,048, q 4,096, 4 kv heads of 128, top-8 of 768-wide experts,
    no shared expert), tp 2 with sequence parallelism, typed by hand, bytes a token: the first
    norm's input and output, the second's input and output (the router's input, bf16 under fp8
    too); q, k, v and the attention output (with its quantized copy under fp8); the eight routed
    copies the experts' fc1 saves; SwiGLU's fc1 output (2 x 8 x 768 wide) and fc2's input."""
    s, t = 4096, 2
    k = knobs(seq=s, micro_batch=1, tp=t, sequence_parallel=True, runtime="megatron-flash", precision=precision)
    h, q, kv, f = 2048, 4096, 512, 8 * 768
    a = 1 if precision == "fp8" else 2
    per_token = (2 * h + a * h + 2 * h + 2 * h) + (2 * (q + 2 * kv) + 2 * q + (q if a == 1 else 0)) \
        + a * 8 * h + 2 * 2 * f + a * f
    assert layer_activations(QWEN3_30B, k, True, "none").saved == round(s * (per_token + 4 * 32) / t)


def test_torch_differs_from_korthikanti_by_the_documented_terms():
    """Flash attention (no 5 a s^2 b; +4 a s b of fp32 logsumexp), fp32 LayerNorm statistics
    (+16 s b): the rest (32 sbh) is the same tensors, neither with dropout masks."""
    s, b, a = 2048, 4, 64
    k = dict(seq=s, micro_batch=b, sequence_parallel=False)
    torch_bytes = layer_activations(GPT22B, knobs(**k), False, "none").saved
    megatron = layer_activations(GPT22B, knobs(**k, runtime="megatron"), False, "none").saved
    assert megatron - torch_bytes == 5 * a * s * s * b - 4 * a * s * b - 16 * s * b


def test_megatron_with_flash_attention_keeps_the_log_sum_exp_not_the_scores():
    """Megatron-LM since FlashAttention: Korthikanti's layer without the 5 a s^2 b / t of scores,
    softmax and dropout mask, plus 4 bytes of log-sum-exp per query and head; the same states."""
    s, b, h, a, t = 2048, 4, 6144, 64, 8
    k = dict(seq=s, micro_batch=b, tp=t, sequence_parallel=True)
    flash = layer_activations(GPT22B, knobs(**k, runtime="megatron-flash"), False, "none").saved
    assert flash == round((34 - 2) * s * b * h / t + 4 * a * s * b / t)
    selective = layer_activations(GPT22B, knobs(**k, runtime="megatron"), False, "selective").saved
    assert flash - selective == round(4 * a * s * b / t)
    assert per_param("megatron-flash", "zero1", 8) == per_param("megatron", "zero1", 8)


# ---------------------------------------------------------------------------------------------
# Model states


PSI = 1_000_000


def per_param(runtime: str, sharding: str, n: int) -> float:
    k = knobs(dp=n, runtime=runtime, sharding=sharding)
    states = model_states(Params(linear=PSI), k)
    return (states.params + states.grads + states.optimizer) / PSI


@pytest.mark.parametrize("n", [1, 8, 64])
def test_zero_runtime_is_the_zero_paper(n):
    assert per_param("zero", "none", n) == 16
    assert per_param("zero", "zero1", n) == pytest.approx(4 + 12 / n)
    assert per_param("zero", "zero2", n) == pytest.approx(2 + 14 / n)
    assert per_param("zero", "zero3", n) == pytest.approx(16 / n)


@pytest.mark.parametrize("n", [1, 8, 64])
def test_megatron_runtime_is_megatrons_bytes_per_parameter(n):
    assert per_param("megatron", "none", n) == 18
    assert per_param("megatron", "zero1", n) == pytest.approx(6 + 12 / n)  # distributed optimizer


def test_megatrons_gradient_buffer_holds_the_reduction_dtype():
    """Megatron-Core's data-parallel buffer is fp32 with grad_reduce_in_fp32, else the parameters'
    bf16 (param_and_grad_buffer.py: `grad_dtype = torch.float if grad_reduce_in_fp32 else
    param.dtype`): 2 bytes a parameter fewer under `grad-reduce bf16`, and the spec's target
    option reaches the memory model's knobs."""
    k = knobs(dp=8, runtime="megatron-flash", sharding="zero1", grad_bytes=2)
    assert model_states(Params(linear=PSI), k).grads == 2 * PSI
    assert per_param("megatron-flash", "zero1", 8) == pytest.approx(6 + 12 / 8)
    spec = ("tp 8 x dp 8 on nodes(8 gpus, nvlink)\nmodel llama3-70b\nhardware {{ gpu h100-sxm }}\n"
            "target megatron {{ {} }}\ntrain {{ seq 8192, global-batch 64, micro-batch 1 }}\n")
    from parc.memory.inputs import knobs_of

    for option, grad in (("grad-reduce bf16", 2), ("grad-reduce fp32", 4), ("", 4)):
        plan = compile_text(spec.format(option)).plan
        assert knobs_of(plan, "megatron-flash").grad_bytes == grad, option


def test_megatrons_fp8_weights_are_the_bytes_transformer_engine_holds():
    """Under fp8 a Transformer Engine linear's weight is an fp8 tensor (`--fp8-param-gather`, which
    the Megatron launcher sets with the distributed optimizer) or a bf16 weight with its fp8 cast
    cached across micro-batches (without it). Per element, typed from TE's tensor classes: one
    byte under delayed or per-tensor scaling, two where Hopper's TN-only fp8 GEMMs also need the
    transpose for the backward, and MXFP8's row- and column-wise bytes each with an E8M0 scale
    per 32 elements. Norms, routers and the embedding stay bf16; the spec's recipe and the GPU
    reach the knobs."""
    linear, other, expert = 6_000_000, 40_000, 3_200_000
    p = Params(linear=linear, other=other, expert=expert)
    fp8 = linear + expert
    cases = (  # (recipe, transposed, sharding) -> parameter bytes on the rank
        (("delayed", True, "zero1"), 2 * fp8 + 2 * other),       # Hopper: data and its transpose
        (("current", True, "zero1"), 2 * fp8 + 2 * other),
        (("delayed", False, "zero1"), 1 * fp8 + 2 * other),      # Blackwell: any layout, one copy
        (("current", False, "zero1"), 1 * fp8 + 2 * other),
        (("mxfp8", False, "zero1"), 2.0625 * fp8 + 2 * other),   # rowwise + columnwise, 1/32 scales each
        (("delayed", True, "none"), 2 * (fp8 + other) + 2 * fp8),  # bf16 weight + cached cast and transpose
        (("delayed", False, "none"), 2 * (fp8 + other) + 1 * fp8),
        (("mxfp8", False, "none"), 2 * (fp8 + other) + 2.0625 * fp8),
        # `fp8-params off` (no --fp8-param-gather): zero1 keeps the bf16 weight and caches the cast
        (("delayed", True, "zero1-bf16-params"), 2 * (fp8 + other) + 2 * fp8),
        (("current", False, "zero1-bf16-params"), 2 * (fp8 + other) + 1 * fp8),
        (("mxfp8", False, "zero1-bf16-params"), 2 * (fp8 + other) + 2.0625 * fp8),
    )
    assert cases
    for (recipe, transposed, sharding), want in cases:
        k = knobs(dp=8, runtime="megatron-flash", sharding=sharding.removesuffix("-bf16-params"), precision="fp8",
                  fp8_recipe=recipe, fp8_transposed=transposed, fp8_params=not sharding.endswith("-bf16-params"))
        assert model_states(p, k).params == round(want), (recipe, transposed, sharding)
    # zero3: the bf16 shards, as before fp8 (what FSDP gathers is not told apart)
    k = knobs(dp=8, runtime="megatron-flash", sharding="zero3", precision="fp8", fp8_recipe="current",
              fp8_transposed=False)
    assert model_states(p, k).params == round(2 * (linear + other + expert) / 8)
    # bf16 training and the torch runtime hold no fp8 weights whatever the recipe
    for k in (knobs(dp=8, runtime="megatron-flash", sharding="zero1", fp8_recipe="mxfp8", fp8_transposed=False),
              knobs(dp=8, runtime="torch", sharding="zero3", precision="fp8", fp8_recipe="mxfp8")):
        assert model_states(p, k).params == model_states(p, replace(k, fp8_recipe="delayed")).params
    from parc.memory.inputs import knobs_of

    spec = ("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nmodel llama3-8b {{ layers 2 }}\nhardware {{ gpu {gpu} }}\n"
            "target megatron{target}\ntrain {{ seq 4096, global-batch 64, micro-batch 1, precision fp8 }}\n"
            "dp {{ sharding zero1 }}\n")
    for gpu, target, recipe, transposed in (("h100-sxm", "", "delayed", True), ("b200", " { fp8-recipe mxfp8 }", "mxfp8", False),
                                            ("b200", " { fp8-recipe tensorwise }", "current", False)):
        k = knobs_of(compile_text(spec.format(gpu=gpu, target=target)).plan, "megatron-flash")
        assert (k.fp8_recipe, k.fp8_transposed, k.fp8_params) == (recipe, transposed, True), (gpu, target)
    k = knobs_of(compile_text(spec.format(gpu="h100-sxm", target=" { fp8-params off }")).plan, "megatron-flash")
    assert not k.fp8_params


def test_torch_runtime_states_per_sharding():
    n = 8
    assert per_param("torch", "none", n) == 16  # fp32 params, fp32 grads, two fp32 moments
    # zero1 (bf16 compute, Megatron-Core's layout): bf16 params, flat fp32 main grads, sharded
    # moments, fp32 master and reduced-gradient shards (the all-gather runs in place in the
    # parameters' buckets): Megatron's 6 + 12/n plus the reduce-scatter's 4/n output
    assert per_param("torch", "zero1", n) == pytest.approx(2 + 4 + (8 + 4 + 4) / n)
    assert per_param("torch", "zero2", n) == pytest.approx(16 / n)
    k = knobs(dp=n, sharding="zero2")
    assert model_states(Params(linear=PSI), k).unsharded == 2 * PSI  # bf16 copy held forward to backward
    k = knobs(dp=n, sharding="zero3", pp=2)
    assert model_states(Params(linear=PSI), k).accumulated_grads == 4 * PSI  # pipelining's no-sync grads


def test_megatron_most_loaded_shard_matches_theoretical_memory_usage():
    """Megatron-LM theoretical_memory_usage.compute_weight_and_optimizer_memory for Llama 3 70B,
    tp 8, pp 4, dp 8, distributed optimizer. Megatron divides the norms by tp and puts the final
    norm's 1/pp on every stage; parc keeps norms replicated (they are) and the final norm on the
    last stage: exactly that difference, 1.3 x 10^-4 of the total."""
    plan = compile_text("tp 8 x pp 4 x dp 8 on nodes(8 gpus, nvlink)\nmodel llama3-70b\nhardware { gpu h100-sxm }\n"
                        "train { seq 8192, global-batch 256 }\ndp { sharding zero1 }\n", checks=False).plan
    h, layers, heads, kv, ffn = 8192, 80, 64, 8, 28672
    tp, pp, dp = 8, 4, 8
    vocab = padded_vocab(128256, tp, "megatron")
    attention = 2 * h * h * (1 + kv / heads)
    layer = 2 * h * (ffn * 1.5 + 1) + attention
    block = layer * layers + h
    embedding = h * vocab
    shard = (block / pp + embedding) / tp
    megatron = shard * (6 + 12 / dp)
    # parc: the norms of the stage's 20 layers are replicated over tp, the final norm is not here
    norms = 2 * h * layers / pp * (1 - 1 / tp)
    final = h / pp / tp
    expected = megatron + (norms - final) * (6 + 12 / dp)
    stage0 = memory.estimate(plan, "megatron").stages[0]
    assert (stage0.params + stage0.grads + stage0.optimizer) == pytest.approx(expected, abs=2)
    assert expected / megatron - 1 < 2e-4


def test_parameters_over_all_ranks_add_up_to_the_model():
    for path in SPECS:
        plan = compile_path(str(path.relative_to(ROOT)), checks=False).plan
        k = memory.knobs_of(plan)
        if k is None:
            continue
        shape = memory.shape_of(plan)
        ranks = rank_params(shape, 1, 1, k.pp, k.virtual_stages, k.schedule, k.split, "torch")
        total = sum(r.params.total for r in ranks)
        copy = plan.model.tied_embeddings and any(c.tied_copy for r in ranks for c in r.chunks)
        # and the embedding Megatron-Core keeps on the stage that runs multi-token prediction
        mtp_copy = bool(plan.model.mtp_layers) and k.pp > 1
        expected = plan.model.parameters + plan.model.vocab * plan.model.hidden * (copy + mtp_copy)
        assert total == expected, path.name


def test_tensor_and_expert_parallelism_divide_what_they_should():
    plan = compile_path("specs/mixtral-8x7b-5d.par", checks=False).plan
    shape = memory.shape_of(plan)
    one = rank_params(shape, 1, 1, 1, 1, "1f1b", None, "torch")[0].params
    split = rank_params(shape, 2, 8, 1, 1, "1f1b", None, "torch")[0].params
    assert split.expert * 8 == one.expert  # experts over ep, not tp
    assert split.linear * 2 == one.linear  # attention over tp (kv 8 heads divide by 2)


# ---------------------------------------------------------------------------------------------
# Micro-batches in flight


def test_1f1b_stage_i_holds_min_of_p_minus_i_and_m():
    for pp, m in itertools.product((2, 4, 8), (1, 3, 8, 17)):
        for rank in range(pp):
            assert max_in_flight("1f1b", pp, 1, m, rank) == min(pp - rank, m)


def test_gpipe_holds_every_micro_batch():
    for pp, m in itertools.product((2, 4), (1, 5, 16)):
        assert all(max_in_flight("gpipe", pp, 1, m, r) == m for r in range(pp))


@pytest.mark.parametrize(("pp", "v"), [(2, 2), (4, 2), (4, 3), (8, 2)])
def test_interleaved_first_rank_carries_megatrons_penalty(pp, v):
    """Rank 0 holds pp + (pp - 1) / v stages' worth: pp x (1 + (pp - 1) / (pp v)), Megatron-LM."""
    m = 4 * pp
    chunks = max_in_flight("interleaved-1f1b", pp, v, m, 0)
    assert chunks / v == pytest.approx(pp * (1 + (pp - 1) / (pp * v)))


def test_zero_bubble_keeps_output_gradients_for_deferred_weight_backwards():
    plan = compile_text(
        "pp 4 x dp 2 on nodes(8 gpus, nvlink)\nmodel llama3-8b\nhardware { gpu h100-sxm }\n"
        "train { seq 4096, global-batch 64 }\npp { schedule PLACE }\ndp { sharding zero1 }\n".replace(
            "PLACE", "interleaved-1f1b"), checks=False).plan
    shape, k = memory.shape_of(plan), memory.knobs_of(plan)
    zb = replace(k, schedule="interleaved-zb")
    loop = per_stage(shape, k)
    deferred = per_stage(shape, zb)
    assert any(d.activations != lo.activations for d, lo in zip(deferred, loop, strict=True))


# ---------------------------------------------------------------------------------------------
# Consistency


def test_fast_peak_equals_the_breakdown():
    rnd = random.Random(7)
    for path in ("specs/llama3-405b.par", "specs/mixtral-8x7b-5d.par", "specs/deepseek-v3-like.par"):
        plan = compile_path(path, checks=False).plan
        shape, base = memory.shape_of(plan), memory.knobs_of(plan)
        for _ in range(60):
            schedule = rnd.choice(["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"])
            k = replace(base, schedule=schedule, split=None,
                        virtual_stages=1 if schedule in ("gpipe", "1f1b") else 2,
                        sharding=rnd.choice(["none", "zero1", "zero2", "zero3", "hsdp"]), hsdp_shard=2,
                        recompute=rnd.choice(["none", "selective", "full"]),
                        precision=rnd.choice(["bf16", "fp8", "fp32"]), device=rnd.choice(["cuda", "cpu"]),
                        microbatches=rnd.choice([base.pp * 2, base.pp * 4]))
            stages = per_stage(shape, k)
            worst = max(stages, key=lambda s: (s.total, -s.stage))
            assert peak(shape, k) == (worst.total, worst.stage)


def test_sharding_never_adds_memory_without_a_pipeline():
    plan = compile_path("specs/llama3-405b.par", checks=False).plan
    shape = memory.shape_of(plan)
    k = replace(memory.knobs_of(plan), pp=1, tp=8, dp=1024, split=None, microbatches=2)
    totals = [peak(shape, replace(k, sharding=s))[0] for s in ("none", "zero1", "zero2", "zero3")]
    assert totals == sorted(totals, reverse=True)


def test_each_spec_estimate_is_whole_and_positive():
    for path in SPECS:
        plan = compile_path(str(path.relative_to(ROOT)), checks=False).plan
        result = memory.estimate(plan)
        if result is None:
            assert plan.holes
            continue
        assert len(result.stages) == (plan.layout.pp.degree or 1)
        for s in result.stages:
            parts = (s.params, s.grads, s.optimizer, s.activations, s.buffers, s.p2p, s.embedding_backward)
            assert all(isinstance(p, int) and p >= 0 for p in parts)
            assert s.total == sum(parts) > 0
        assert result.fits, path.name


SPEC = """\
tp 2 x dp 4 on nodes(8 gpus, nvlink)
model llama3-70b { layers 20 }
hardware { gpu h100-sxm }
train { seq 8192, global-batch 8, micro-batch 2, recompute RECOMPUTE }  # no accumulation: zero1 then frees memory
dp { sharding SHARDING }
"""


def test_help_figures_are_the_model_rerun_on_the_edited_spec():
    def peak_of(recompute="none", sharding="none", micro="2") -> int:
        text = SPEC.replace("RECOMPUTE", recompute).replace("SHARDING", sharding)
        return memory.estimate(compile_text(text.replace("micro-batch 2", f"micro-batch {micro}"), checks=False).plan).peak_bytes

    plan = compile_text(SPEC.replace("RECOMPUTE", "none").replace("SHARDING", "none"), checks=False).plan
    found = {a.change: a.freed_bytes for a in memory.alternatives(plan)}
    base = peak_of()
    assert found["recompute selective"] == base - peak_of(recompute="selective")
    assert found["sharding zero1"] == base - peak_of(sharding="zero1")
    assert found["micro-batch 1"] == base - peak_of(micro="1")


def test_the_document_tables_are_current():
    """docs/memory-model.md holds the output of docs/memory_table.py (regenerate with --write)."""
    import importlib.util

    path = ROOT / "docs" / "memory_table.py"
    spec = importlib.util.spec_from_file_location("memory_table", path)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    assert table.PUBLISHED.exists(), "benchmarks/data/published.yaml is needed to regenerate the tables"
    text = (ROOT / "docs" / "memory-model.md").read_text()
    block = text[text.index(table.BEGIN) + len(table.BEGIN):text.index(table.END)]
    assert block == "\n" + table.generate(), "stale: run `.venv/bin/python docs/memory_table.py --write`"


def test_long_steps_walk_a_few_repetitions_and_gpipe_is_closed_form():
    """`peak_states` walks at most a few steady-state repetitions (so 62 million micro-batches
    cost what 64 do) and gives gpipe in closed form; both equal the full walk."""
    from parc.memory import schedules as s

    compared = 0
    for schedule in ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"):
        for pp in (1, 2, 3, 4, 8):
            v = 1 if schedule in ("gpipe", "1f1b") else 2
            for m in range(1, 14 * pp + 1):
                if (schedule == "dualpipe-v" and m < 2 * pp) or (
                        schedule.startswith("interleaved") and not s.interleaved_accepts(pp, m)):
                    continue
                for rank in range(pp):
                    assert s.peak_states(schedule, pp, v, m, rank) == s.walk_states(schedule, pp, v, m, rank), \
                        (schedule, pp, m, rank)
                    compared += 1
    assert compared > 1000


def test_a_huge_step_keeps_its_peak():
    """62.5 million micro-batches (a fuzzed spec): the same peaks as a short step, gpipe's m."""
    from parc.memory.schedules import peak_states, weighted_peak

    for schedule in ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"):
        v = 1 if schedule in ("gpipe", "1f1b") else 2
        states = peak_states(schedule, 8, v, 62_500_000, 0)
        assert max(sum(h) for h, _, _ in states) == {"gpipe": 62_500_000, "1f1b": 8}.get(schedule, max(
            sum(h) for h, _, _ in peak_states(schedule, 8, v, 64, 0)))
        assert weighted_peak(schedule, 8, v, 62_500_000, 0, (1,) * v, (0,) * v)[0] == max(
            sum(h) for h, _, _ in states)


def test_pipelines_beyond_the_walk_limit_are_not_predicted():
    from parc.memory import MAX_CHUNKS

    text = ("pp 1024 x dp 2 on nodes(8 gpus, nvlink)\nmodel llama3-8b {{ layers {layers} }}\nhardware {{ gpu h100-sxm }}\n"
            "train {{ seq 1024, global-batch 4096 }}\n")
    deep = compile_text(text.format(layers=2048), checks=False).plan
    assert 1024 > MAX_CHUNKS and memory.estimate(deep) is None
    assert "1,024 pipeline chunks" in memory.unpredictable(deep)
    result = compile_text(text.format(layers=2048))
    assert "E0401" not in codes(result)


def codes(result) -> list[str]:
    return sorted(d.code for d in result.diagnostics)


def test_kept_layer_kinds_count_each_layer_as_written_out():
    """`memory.model._layer_kinds` is kept per chunk: its (MoE?, recompute mode) counts, first
    seen first, against a count written out here layer by layer (DeepSeek's dense first layers
    then MoE ones, Mixtral's MoE layers, Llama's dense ones; `full N` recomputes a chunk's first N
    layers), asked twice each so the second answer is the kept one."""
    from parc.memory.model import _layer_kinds, clear_caches

    clear_caches()
    compared = 0
    for name in ("deepseek-v3-like.par", "mixtral-8x7b-5d.par", "llama3-405b.par"):
        shape = memory.shape_of(compile_path(f"specs/{name}", checks=False).plan)
        for first, layers, recompute, recompute_layers in itertools.product(
                (0, 1, 2, 3, 5, 17), (0, 1, 2, 4, 7, 15), ("none", "selective", "full"), (None, 1, 3)):
            expected: dict[tuple[bool, str], int] = {}
            for i in range(layers):
                moe = shape.is_moe(first + i)
                mode = "none" if recompute == "full" and recompute_layers is not None and i >= recompute_layers \
                    else recompute
                expected[(moe, mode)] = expected.get((moe, mode), 0) + 1
            for _ in range(2):
                assert list(_layer_kinds(shape, first, layers, recompute, recompute_layers)) == list(expected.items())
                compared += 1
    assert compared == 3 * 6 * 6 * 3 * 3 * 2  # every chunk inside each model (32 layers and more)
