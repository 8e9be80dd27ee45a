"""Multi-head latent attention (`model { kv-lora-rank ... }`): its parameters, FLOPs and GEMMs
against figures the code did not produce (DeepSeek-V3's published counts, Megatron-Core's FLOP
formula typed by hand, a hand list of the projections), its refusals, and the published rows
that state it.
"""

from __future__ import annotations

import pytest
from parc import flops, timing
from parc.backends import job_diagnostics
from parc.memory import parameters
from parc.memory.inputs import shape_of
from parc.pipeline import compile_text

from .conftest import ROOT, load_yaml
from .test_bridge_releases import deepseek_v3_flops_per_token

DEEPSEEK_V3 = """\
model {
  layers 61, hidden 7168, ffn 18432, heads 128, head-dim 128, vocab 129280
  kv-lora-rank 512, q-lora-rank 1536, rope-head-dim 64, v-head-dim 128
  activation swiglu, norm rmsnorm, position rope, tied-embeddings off
  experts 256, top-k 8, expert-ffn 2048, shared-experts 1, moe-layers from 3
}
"""
"""DeepSeek-V3 as its technical report states it (arXiv 2412.19437, sections 2.1 and 4.2: 61
layers, d 7168, 128 heads of 128 with 64 decoupled RoPE dims, KV compression 512, query
compression 1536, the first 3 layers dense (FFN 18432), 256 routed and 1 shared expert of 2048,
8 routed per token; Hugging Face config deepseek-ai/DeepSeek-V3: vocabulary 129280, v_head_dim
128). Without its multi-token-prediction module, which the report's 671B leaves out."""


def plan_of(model: str = DEEPSEEK_V3, layout: str = "dp 8 on nodes(8 gpus, nvlink)\nep 8 over dp",
            target: str = "megatron", extra: str = ""):
    text = (f"{layout}\n{model}hardware {{ gpu h100-sxm }}\ntarget {target}\n"
            f"train {{ seq 4096, global-batch 64, micro-batch 1, recompute full }}\n{extra}")
    result = compile_text(text, path="mla.par", checks=False)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def test_deepseek_v3_has_its_published_parameter_counts():
    """The report's abstract: 671B parameters, 37B activated per token. The GQA stand-in the rows
    used before (128 kv heads of 128) counts 17B more and misses both."""
    m = plan_of().model
    assert m.mla
    assert m.parameters == pytest.approx(671e9, rel=5e-4)
    assert 37e9 <= m.active_parameters < 38e9
    stand_in = plan_of(DEEPSEEK_V3.replace("kv-lora-rank 512, q-lora-rank 1536, rope-head-dim 64, v-head-dim 128\n",
                                           "kv-heads 128\n")).model
    assert stand_in.parameters > 685e9


def test_model_flops_are_megatron_cores_mla_count():
    """Megatron-Core's `num_floating_point_operations` MLA branch, typed by hand in
    test_bridge_releases (without the MTP layer): it counts each latent norm's weights as a FLOP
    per token and no router; parc counts the router (2 h E a MoE layer) and no norm. Both within
    0.05 %; the stand-in's projections miss it by more than 10 %."""
    shape = shape_of(plan_of())
    ours = flops.model_flops_per_token(shape, 4096)
    router = 3 * 58 * flops.router_flops(shape)
    assert ours - router == pytest.approx(deepseek_v3_flops_per_token(4096, mtp=0), rel=5e-4)
    stand_in = shape_of(plan_of(DEEPSEEK_V3.replace(
        "kv-lora-rank 512, q-lora-rank 1536, rope-head-dim 64, v-head-dim 128\n", "kv-heads 128\n")))
    assert flops.model_flops_per_token(stand_in, 4096) > 1.1 * deepseek_v3_flops_per_token(4096, mtp=0)


def test_attention_core_reads_the_query_and_value_widths():
    """Q K^T over head_dim + rope dims and P V over v dims, per head and key: 2 x 128 x (192 + 128)."""
    shape = shape_of(plan_of())
    assert flops.attention_core_flops(shape, 1.0) == 2 * 128 * (192 + 128)
    assert (shape.q, shape.o, 2 * shape.kv) == (128 * 192, 128 * 128, 128 * (192 + 128))


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_a_ranks_attention_weights_are_megatron_cores_split(tp):
    """By hand from Megatron-Core's MLASelfAttention (core_v0.16.0): the down projections
    duplicated (whole on every rank), the up projections column-parallel, the output row-parallel,
    the two latent RMSNorms whole."""
    shape = shape_of(plan_of())
    h, heads = 7168, 128
    down = h * 1536 + h * (512 + 64)
    up = 1536 * heads * 192 // tp + 512 * heads * (128 + 128) // tp
    out = heads * 128 * h // tp
    dense = parameters.layer_params(shape, tp, 1, False)
    assert dense.linear == down + up + out + 3 * h * 18432 // tp
    assert dense.other == 2 * h + 1536 + 512


@pytest.mark.parametrize("sp", [True, False])
def test_the_down_projections_run_on_the_ranks_own_tokens(sp):
    """Under sequence parallelism each tp rank runs the duplicated down projections on its n / tp
    tokens; without it on all n (every rank repeats them). The up and output projections run on all
    n after the latents' all-gather, over the rank's heads."""
    shape = shape_of(plan_of())
    tp, n = 4, 4096.0
    gemms = timing.attention_gemms(shape, tp, n, tp if sp else 1)
    mine = n / tp if sp else n
    assert gemms == [(1, 1, mine, 7168, 1536), (1, 1, n, 1536, 128 * 192 / tp), (1, 1, mine, 7168, 576),
                     (1, 1, n, 512, 128 * 256 / tp), (1, 1, n, 128 * 128 / tp, 7168)]
    # the search's floor leaves the duplicated ones out, whatever sequence parallelism says
    assert timing.attention_gemms(shape, tp, n, None) == [g for i, g in enumerate(gemms) if i in (1, 3, 4)]


def test_mla_up_proj_recomputes_the_up_projections():
    """`--recompute-modules mla_up_proj` runs the two up projections and the key and value
    assembly again: more than the up GEMMs alone, less than the layer's forward GEMMs."""
    plan = plan_of()
    shape = shape_of(plan)
    hw = timing.hardware_of(plan)
    case = timing.LayerCase(moe=False, tp=1, sp=False, cp=1, flavour="ring", seq=4096, micro=1, ep=1,
                            precision="bf16", attention="flash-te", kernels="fused")
    work = timing.layer_work(shape, case, hw, timing.DEFAULT)
    up = sum(timing.gemm_seconds(m, k, n, "bf16", hw, timing.DEFAULT, 1) for _, _, m, k, n in
             (timing.attention_gemms(shape, 1, 4096.0, 1)[i] for i in (1, 3)))
    assert up < work.mla_up_again < work.gemm
    assert "mla_up_proj" in timing.recompute_modules("modules:mla_up_proj,moe_act")


@pytest.mark.parametrize("key", ["q-lora-rank 1536", "rope-head-dim 64", "v-head-dim 128"])
def test_latent_widths_without_a_latent_are_an_error(key):
    result = compile_text(f"dp 8 on nodes(8 gpus, nvlink)\nmodel tiny {{ {key} }}\nhardware {{ gpu h100-sxm }}\n"
                          "train { seq 32, global-batch 16 }\n", path="x.par")
    assert result.plan is None
    assert [d.code for d in result.diagnostics if d.is_error] == ["E0212"]
    assert "without `kv-lora-rank`" in result.diagnostics[0].message


def test_grouped_keys_under_mla_are_an_error():
    result = compile_text("dp 8 on nodes(8 gpus, nvlink)\nmodel tiny { kv-lora-rank 32, kv-heads 1 }\n"
                          "hardware { gpu h100-sxm }\ntrain { seq 32, global-batch 16 }\n", path="x.par")
    errors = [d for d in result.diagnostics if d.is_error]
    assert result.plan is None and [d.code for d in errors] == ["E0212"]
    assert "grouped" in errors[0].message and "kv-heads" in errors[0].help


@pytest.mark.parametrize("target, code", [("torch", "E0605"), ("torchtitan", "E0610")])
def test_runtimes_without_mla_refuse_it(target, code):
    """parc's job and torchtitan's llama3/qwen3 decoders build grouped-query attention: they say
    so rather than train another model."""
    plan = plan_of(layout="dp 8 on nodes(8 gpus, nvlink)", target=target,
                   model="model { layers 2, hidden 256, ffn 512, heads 4, head-dim 32, vocab 1024, "
                         "kv-lora-rank 64, q-lora-rank 96, rope-head-dim 16, v-head-dim 32 }\n")
    found = [d for d in job_diagnostics(plan) if d.is_error]
    assert code in {d.code for d in found}
    message = next(d for d in found if d.code == code)
    assert "latent" in (message.message + " ".join(message.notes or ()) + message.help)


def test_megatron_emits_its_mla_options():
    from parc.backends import megatron

    options = dict(megatron.arguments(plan_of()))
    assert "--multi-latent-attention" in options and "--group-query-attention" not in options
    assert (options["--kv-lora-rank"], options["--q-lora-rank"], options["--qk-head-dim"],
            options["--qk-pos-emb-head-dim"], options["--v-head-dim"], options["--rope-type"]) == (
        "512", "1536", "128", "64", "128", "rope")
    assert "--kv-channels" not in options
    # Megatron-Core's fused MLA RoPE takes YaRN only; its latent norms exist under --qk-layernorm
    assert "--no-rope-fusion" in options and "--qk-layernorm" in options


def test_the_published_deepseek_rows_state_their_latent_attention():
    """Both DeepSeek-V3 sources carry the report's ranks, and the reader writes them into the spec."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    read = 0
    for name, wanted in (("published.yaml", "deepseek_v3_pretraining_2048xH800"),
                         ("megatron_bridge_releases_moe.yaml", "bridge2606_gb200_deepseek_v3_fp8mx")):
        entries = load_yaml((ROOT / "benchmarks" / "data" / name).read_text())
        entry = next(e for e in entries if e["id"] == wanted)
        m = entry["model"]
        assert (m["kv_lora_rank"], m["q_lora_rank"], m["qk_rope_head_dim"], m["v_head_dim"]) == (512, 1536, 64, 128)
        run = published.row_spec(entry, entries)
        assert "kv-lora-rank 512, q-lora-rank 1536, rope-head-dim 64, v-head-dim 128" in run.spec
        assert "kv-heads" not in run.spec
        read += 1
    assert read == 2


def test_a_deepseek_config_imports_as_latent_attention():
    """`parc import config.json` of DeepSeek-V3's Hugging Face config (its shape keys as published
    in deepseek-ai/DeepSeek-V3's config.json) gives the model above, with its one MTP module."""
    import json

    from parc.importer import import_source
    from parc.source import SourceFile

    config = {"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
              "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
              "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
              "first_k_dense_replace": 3, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
              "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280, "rms_norm_eps": 1e-6,
              "rope_theta": 10000, "hidden_act": "silu", "tie_word_embeddings": False, "num_nextn_predict_layers": 1}
    imported = import_source(SourceFile("config.json", json.dumps(config, indent=1)))
    ours = plan_of(imported.text.strip() + "\n").model
    theirs = plan_of(DEEPSEEK_V3.replace("moe-layers from 3", "moe-layers from 3, mtp 1")).model
    assert (ours.parameters, ours.active_parameters, ours.kv_lora_rank, ours.q_lora_rank, ours.rope_head_dim,
            ours.v_head_dim, ours.head_dim, ours.mtp_layers) == (
        theirs.parameters, theirs.active_parameters, 512, 1536, 64, 128, 128, 1)
    assert not imported.diagnostics


@pytest.mark.parametrize("layout", ["tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp",
                                    "tp 4 x dp 2 x pp 4 on nodes(8 gpus, nvlink)\nep 2 over dp",
                                    "tp 1 x cp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over dp"])
def test_latent_attention_predictions_stay_within_physics(layout):
    """The physical bounds (tests/test_bounds.py: FLOPs over the peak, bytes over HBM and every
    link, the exponential unit) hold for MLA layouts, whose FLOPs and bytes come from its own list."""
    from .test_bounds import assert_within_physics

    plan = plan_of(model="model { layers 8, hidden 2048, ffn 5632, heads 16, head-dim 128, vocab 32000, "
                         "kv-lora-rank 512, q-lora-rank 768, rope-head-dim 64, v-head-dim 128, "
                         "experts 16, top-k 2, expert-ffn 1024, moe-layers from 1 }\n", layout=layout)
    assert timing.predict(plan) is not None
    assert_within_physics(plan)


@pytest.mark.parametrize("sp", [True, False])
def test_the_tp_ranks_flops_add_up_to_the_models_and_the_repeated_down_projections(sp):
    """Over the tp ranks of a dense layer the ledger's forward GEMM FLOPs are the model's (each
    token through every weight once, `flops.attention_projection_flops`) under sequence
    parallelism; without it every rank repeats the duplicated down projections on all tokens, tp - 1
    extra copies of 2 h (q_lora + kv_lora + rope) a token."""
    shape = shape_of(plan_of())
    tp, seq = 4, 4096
    ranks = tp * timing.piece_flops(shape, False, tp, 1, seq, 1, 0, "flash-te", tp if sp else 1)[0]
    model = seq * (flops.attention_projection_flops(shape) + flops.dense_ffn_flops(shape))
    repeated = 0 if sp else (tp - 1) * seq * 2 * 7168 * (1536 + 512 + 64)
    assert ranks == pytest.approx(model + repeated, rel=1e-12)


def test_tp_overlap_pairs_the_latents_gather_with_the_up_projections():
    """Under tp with sequence parallelism Megatron-Core gathers the latents into the up
    projections (column-parallel) and reduce-scatters the output projection's result (row-
    parallel): the collectives' partner GEMMs are those, by hand from `gemm_seconds`, not the
    duplicated query down projection that runs first."""
    plan = plan_of()
    shape, hw, c = shape_of(plan), timing.hardware_of(plan), timing.DEFAULT
    case = timing.LayerCase(moe=False, tp=4, sp=True, cp=1, flavour="ring", seq=4096, micro=1, ep=1,
                            precision="bf16", attention="flash-te", kernels="fused")
    work = timing.layer_work(shape, case, hw, c)
    gemms = timing.attention_gemms(shape, 4, 4096.0, 4)

    def timed(i):
        _, count, m, k, n = gemms[i]
        return count * timing.gemm_seconds(m, k, n, "bf16", hw, c, count) + c.kernel_overhead

    first = {}  # the attention's (the FFN's collectives follow)
    for phase, kind, seconds in work.tp_gemms:
        first.setdefault((phase, kind), seconds)
    assert first["forward", "all_gather"] == pytest.approx(timed(1) + timed(3), rel=1e-12)  # q_up + kv_up
    assert first["forward", "reduce_scatter"] == pytest.approx(timed(4), rel=1e-12)  # o_proj


def test_the_duplicated_weights_gradients_are_summed_over_tp_once_a_step():
    """Under sequence parallelism Megatron-Core all-reduces over tp the gradients of every weight
    it keeps whole on each tp rank (`_allreduce_non_tensor_model_parallel_grads`): for MLA the down
    projections, h (q_lora + kv_lora + r) = 7168 x 2112, and the latent norms, 1536 + 512, one
    call per layer, fp32."""
    plan = plan_of(DEEPSEEK_V3.replace("layers 61", "layers 8"), layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)\n"
                   "ep 4 over dp")
    loads, steps = timing.plan_rank_steps(plan)
    found = [c for c in steps[loads[0]].ledger.collectives
             if c.axis == "tp" and c.kind == "all_reduce" and c.payload == 4 * (7168 * 2112 + 1536 + 512)]
    assert [c.count for c in found] == [8]


@pytest.mark.parametrize("sp, kinds, width", [(True, {("forward", "all_gather"), ("backward", "reduce_scatter")},
                                               1536 + 512 + 64),
                                              (False, {("backward", "all_reduce")}, 1536 + 512)])
def test_the_attentions_tp_collectives_carry_the_latents(sp, kinds, width):
    """Megatron-Core gathers MLA's latents, not the hidden state, into its up projections (and the
    shared RoPE key beside them) under sequence parallelism; without it the up projections'
    input gradients, q_lora + kv_lora wide, are all-reduced. One call each way carries them; the
    layer's other calls keep the hidden width."""
    plan = plan_of()
    shape, hw, c = shape_of(plan), timing.hardware_of(plan), timing.DEFAULT
    case = timing.LayerCase(moe=False, tp=2, sp=sp, cp=1, flavour="ring", seq=4096, micro=1, ep=1,
                            precision="bf16", attention="flash-te", kernels="fused")
    work = timing.layer_work(shape, case, hw, c)
    tp = timing.link(timing.Group(2, 2), hw, c)
    records = timing.piece_collectives(work, tp, tp, tp)
    latent = {(r.phase, r.kind) for r in records if r.axis == "tp" and r.payload == 2 * 4096 * width}
    assert latent == kinds
    # as many calls as before, each kind: the latent one in place of one of the hidden width
    calls = {}
    for r in records:
        if r.axis == "tp":
            calls[r.phase, r.kind] = calls.get((r.phase, r.kind), 0) + r.count
    assert calls == {(phase, kind): n for phase, kind, n in timing.pair_calls(work)}


def test_the_backward_regathers_the_latents_not_the_hidden_state():
    """Under sequence parallelism Megatron-Core's up projections (TE's column-parallel linears)
    save their inputs sharded and gather them again in the backward (`timing.regathered`): the
    query latent and the key-value latent, 1,536 + 512 wide (the RoPE key is no projection's
    input), in place of one re-gather of the hidden state; the FFN's stays hidden-wide."""
    plan = plan_of()
    shape, hw, c = shape_of(plan), timing.hardware_of(plan), timing.DEFAULT
    case = timing.LayerCase(moe=False, tp=2, sp=True, cp=1, flavour="ring", seq=4096, micro=1, ep=1,
                            precision="bf16", attention="flash-te", kernels="fused")
    sw = timing.Software(attention="flash-te", kernels="fused", tp_regather=True)
    work = timing.runtime_work(timing.layer_work(shape, case, hw, c), False, shape, hw, sw, c)
    assert work.tp_regather == 2  # the up projections' block and the FFN's
    tp = timing.link(timing.Group(2, 2), hw, c)
    records = [r for r in timing.piece_collectives(work, tp, tp, tp) if r.axis == "tp"]
    gathers = [r for r in records if (r.phase, r.kind) == ("backward", "all_gather")]
    assert any(r.payload == 2 * 4096 * (1536 + 512) and r.count == 1 for r in gathers)
    hidden = sum(r.count for r in gathers if r.payload == 2 * 4096 * shape.hidden)
    assert hidden + 1 == dict(((p, k), n) for p, k, n in timing.pair_calls(work))["backward", "all_gather"]


@pytest.mark.parametrize("gpu, precision, element", [("h100-sxm", "fp8", 1.0), ("b200", "nvfp4", 0.5625)])
def test_quantized_up_projections_gather_their_latents_quantized(gpu, precision, element):
    """Under fp8 or NVFP4 with sequence parallelism, Transformer Engine's column-parallel up
    projections quantize the latents on the rank's own rows and gather the quantized tensor, as
    every column-parallel input (`gather_along_first_dim` with the quantizer); the shared RoPE key,
    which Megatron-Core gathers itself, stays bf16. So the forward's latent gather carries
    `element` bytes of the 1,536 + 512 latents and 2 of the 64 RoPE dims, the backward's
    re-gather the latents quantized, and the reduce-scatter of their input gradient stays bf16
    (1,536 + 512 + 64 wide, 2 bytes)."""
    text = (f"dp 8 on nodes(8 gpus, nvlink)\nep 8 over dp\n{DEEPSEEK_V3}hardware {{ gpu {gpu} }}\ntarget megatron\n"
            "train { seq 4096, global-batch 64, micro-batch 1, recompute full }\n")
    plan = compile_text(text, path="mla.par", checks=False).plan
    shape, hw, c = shape_of(plan), timing.hardware_of(plan), timing.DEFAULT
    case = timing.LayerCase(moe=False, tp=2, sp=True, cp=1, flavour="ring", seq=4096, micro=1, ep=1,
                            precision=precision, attention="flash-te", kernels="fused", fp8_scaling="delayed")
    sw = timing.Software(attention="flash-te", kernels="fused", tp_regather=True, fp4=True)
    work = timing.runtime_work(timing.layer_work(shape, case, hw, c), False, shape, hw, sw, c)
    tp = timing.link(timing.Group(2, 2), hw, c)
    records = [r for r in timing.piece_collectives(work, tp, tp, tp) if r.axis == "tp"]
    assert records
    tokens = 4096
    gathered = tokens * (element * (1536 + 512) + 2 * 64)
    assert any((r.phase, r.kind, r.payload, r.count) == ("forward", "all_gather", pytest.approx(gathered), 1)
               for r in records), [(r.phase, r.kind, r.payload) for r in records]
    assert any((r.phase, r.kind, r.payload) == ("backward", "all_gather", pytest.approx(element * tokens * (1536 + 512)))
               for r in records)
    assert any((r.phase, r.kind, r.payload) == ("backward", "reduce_scatter", 2 * tokens * (1536 + 512 + 64))
               for r in records)
