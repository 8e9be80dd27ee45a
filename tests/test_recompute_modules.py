"""Megatron-Core's recompute modules as a spec setting (issue 14): `recompute selective [...]`
names `--recompute-modules`, and the memory and time models drop and charge what each module
runs again.

Checked against references the models did not produce: the bytes each module stops keeping,
counted here by hand from the layer's shapes and Megatron-Core's modules (what each checkpoint
saves and discards, megatron/core/transformer/transformer_layer.py, moe/experts.py,
multi_latent_attention.py at core_v0.16.0); the extra forward FLOPs of `mlp` and
`shared_experts` from the FFN's shape; the parser's and the checks' refusals where Megatron-Core
refuses (tests/test_targets_megatron.py runs megatron-core's own TransformerConfig)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from parc import targets, timing
from parc.calibration import DEFAULT
from parc.memory import activations
from parc.memory.inputs import knobs_of, shape_of
from parc.pipeline import compile_text

from .conftest import load_yaml

SPEC = """job m
tp 2 x dp 4 on nodes(8 gpus, nvlink)
ep 4 over dp
model { layers 4, hidden 1024, ffn 2816, heads 16, head-dim 64, vocab 32000, kv-lora-rank 128,
        q-lora-rank 256, rope-head-dim 32, v-head-dim 64, experts 8, top-k 2, expert-ffn 512,
        shared-experts 1, moe-layers from 1 }
hardware { gpu h100-sxm }
target megatron
train { seq 4096, global-batch 64, micro-batch 1, recompute RECOMPUTE }
dp { sharding zero1 }
"""
TOKENS, TP, ACT = 4096, 2, 2
H, F, EXPERT_FFN, TOP_K = 1024, 2816, 512, 2


def plan_with(recompute: str):
    result = compile_text(SPEC.replace("RECOMPUTE", recompute), path="m.par")
    assert result.plan is not None and not [d for d in result.diagnostics if d.is_error and d.code != "E0401"], \
        [d.message for d in result.diagnostics if d.is_error]
    return result.plan


def saved(recompute: str, moe: bool) -> float:
    plan = plan_with(recompute)
    k = knobs_of(plan, "megatron-flash")
    return activations.layer_activations(shape_of(plan), k, moe, k.recompute).saved


def test_the_language_reads_the_modules_in_order():
    plan = plan_with("selective [moe_act, mla_up_proj]")
    assert plan.training.recompute == "selective" and plan.training.recompute_modules == ("moe_act", "mla_up_proj")
    assert timing.recompute_modules(targets.software_of(plan).selective) == {"moe_act", "mla_up_proj"}


@pytest.mark.parametrize("bad, code", [("selective [moe_akt]", "E0202"), ("selective [moe, moe]", "E0203"),
                                       ("selective []", "E0203"), ("full [moe]", "E0203")])
def test_bad_module_lists_are_refused_where_written(bad, code):
    result = compile_text(SPEC.replace("RECOMPUTE", bad), path="m.par")
    errors = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in errors] == [code] and errors[0].span is not None and errors[0].help


def test_each_module_drops_the_bytes_megatron_core_discards():
    """Per layer, one micro-batch, one rank (tp 2 with sequence parallelism: norms' tensors on
    the rank's own tokens, the attention's and the FFN's split over tp)."""
    core = saved("selective", True)  # `core_attn`, Megatron-Core's default
    assert saved("selective [core_attn]", True) == core
    # the up projections' q, k and v: 16 heads x (64 + 32) queries, keys 96 and values 64 wide
    qkv = ACT * (16 * 96 + 16 * 96 + 16 * 64) * TOKENS / TP
    assert core - saved("selective [core_attn, mla_up_proj]", True) == pytest.approx(qkv, abs=1)
    # the routed experts' activation output, fc2's input: top-k x expert FFN per token
    assert core - saved("selective [core_attn, moe_act]", True) == pytest.approx(
        ACT * TOP_K * EXPERT_FFN * TOKENS / TP, abs=1)
    # the norms that are their own modules: the pre-FFN norm of a MoE layer (its output the router's
    # input) and latent attention's input norm (its output the down projections' saved input in bf16)
    assert core - saved("selective [core_attn, layernorm]", True) == pytest.approx(2 * ACT * H * TOKENS / TP, abs=1)
    # the shared experts' fc1 output (gate and up) and fc2's input
    assert core - saved("selective [core_attn, shared_experts]", True) == pytest.approx(
        ACT * 3 * EXPERT_FFN * TOKENS / TP, abs=1)
    # the whole MoE layer: the routed copies fc1 saves, the routed and shared experts' activations
    moe = ACT * (TOP_K * H + 3 * TOP_K * EXPERT_FFN + 3 * EXPERT_FFN) * TOKENS / TP
    assert core - saved("selective [core_attn, moe]", True) == pytest.approx(moe, abs=1)
    # a dense layer's FFN: fc1's saved input (its fused norm's output), fc1's output, fc2's input
    dense = ACT * (H + 3 * F) * TOKENS / TP
    assert saved("selective", False) - saved("selective [core_attn, mlp]", False) == pytest.approx(dense, abs=1)
    # without `core_attn` the core's log-sum-exp stays: 4 bytes per query and head
    assert saved("selective [moe_act]", True) - saved("selective [core_attn, moe_act]", True) == pytest.approx(
        4 * 16 * TOKENS / TP, abs=1)


def test_mlp_and_shared_experts_run_their_ffn_again():
    """`Work.ffn_again` is the FFN's two products and its activation; the step's recomputation
    grows by it in each layer the module names, and the hardware FLOPs by the FFN's forward."""
    plan = plan_with("selective [core_attn, mlp, shared_experts]")
    shape, hw, sw = shape_of(plan), timing.hardware_of(plan), targets.software_of(plan)
    k = knobs_of(plan, "megatron-flash")
    dense = timing.layer_work(shape, timing.LayerCase.of(k, False, sw), hw, DEFAULT)
    n = TOKENS
    products = (timing.gemm_seconds(n, H, 2 * F / TP, "bf16", hw, DEFAULT)
                + timing.gemm_seconds(n, F / TP, H, "bf16", hw, DEFAULT) + 2 * DEFAULT.kernel_overhead)
    activation = timing.memory_seconds(ACT * n * 3 * F / TP, hw, DEFAULT) + DEFAULT.kernel_overhead
    assert dense.ffn_again == pytest.approx(products + activation)
    plain = timing.predict(plan_with("selective")).breakdown.recompute
    more = timing.predict(plan).breakdown.recompute
    assert more > plain
    flops = timing.own_ffn_flops(shape, False, 1, 1)
    assert flops == 2 * 3 * H * F  # gate, up and down, one token, no tp
    assert timing.own_ffn_flops(shape, True, 1, 1) == 2 * 3 * H * EXPERT_FFN


def test_the_reader_writes_a_rows_modules_into_its_spec():
    import sys

    from .conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    entries = load_yaml((ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml").read_text())
    seen = 0
    for entry in entries:
        modules = (entry.get("recipe") or {}).get("recompute_modules")
        if not modules:
            continue
        run = published.row_spec(entry)
        if not isinstance(run, published.Run):  # the one row the reader leaves out, for its layout
            assert "does not divide" in run.reason, entry["id"]
            continue
        assert f"recompute selective [{', '.join(modules)}]" in run.spec, entry["id"]
        result = compile_text(run.spec, path="r.par")
        assert "E0628" not in {d.code for d in result.diagnostics}, entry["id"]
        assert result.plan.training.recompute_modules == tuple(modules)
        seen += 1
    assert seen >= 10


def test_a_module_changes_nothing_under_full_or_none():
    plan = plan_with("full")
    k = replace(knobs_of(plan, "megatron-flash"), recompute_modules=("moe_act",))
    shape = shape_of(plan)
    assert activations.layer_activations(shape, k, True, "full") == \
        activations.layer_activations(shape, knobs_of(plan, "megatron-flash"), True, "full")


def test_the_ledger_books_mla_up_projs_gemms_as_gemms_and_its_assembly_as_memory():
    """`mla_up_proj` runs the up projections (GEMM bytes) and the key and value assembly again
    (memory-bound: `timing.mla_key_value_elements`, 2 bytes each); the step's ledger books each
    where it belongs."""
    from parc import hbm
    from parc.timing import Chunking, compute_ledger, mla_key_value_elements, rank_loads

    def ledger(recompute):
        plan = plan_with(recompute)
        k = knobs_of(plan, "megatron-flash")
        load = rank_loads(shape_of(plan), Chunking.of(k), k.recompute, k.recompute_layers)[0]
        return {c.op: c.hbm_bytes for c in compute_ledger(shape_of(plan), k, load, targets.software_of(plan))}, \
            plan, k, load

    base, plan, k, load = ledger("selective [core_attn]")
    up, _, _, _ = ledger("selective [core_attn, mla_up_proj]")
    shape = shape_of(plan)
    layers = sum(count for _, _, count in load.pieces)
    assert layers > 0
    micro = k.microbatches
    assembly = 2 * mla_key_value_elements(shape, k.tp, TOKENS)
    piece = hbm.layer_bytes(shape, timing.LayerCase.of(k, True, targets.software_of(plan)))
    assert piece.mla_up_gemm_again > 0 and piece.mla_up_again == pytest.approx(piece.mla_up_gemm_again + assembly)
    assert up["memory"] - base["memory"] == pytest.approx(micro * layers * assembly, rel=1e-9)
    assert up["gemm"] - base["gemm"] == pytest.approx(micro * layers * piece.mla_up_gemm_again, rel=1e-9)


def test_the_memory_error_labels_the_modules_it_recomputes():
    """E0401's label on the recompute statement says which modules (two specs differing only in
    them must not read alike), as `parc diff` shows them."""
    text = "\n".join([
        "tp 2 x dp 4 on nodes(8 gpus, nvlink)", "model llama3-70b", "hardware { gpu h100-sxm }", "target megatron",
        "train {", "  seq 8192, global-batch 64, micro-batch 2",
        "  precision bf16, optimizer adamw, recompute selective [mlp, layernorm]", "}", "dp { sharding zero1 }"]) + "\n"
    compiled = compile_text(text, path="oom.par")
    errors = [d for d in compiled.diagnostics if d.code == "E0401"]
    assert len(errors) == 1
    assert "recompute selective [mlp, layernorm]" in [label.message for label in errors[0].labels]
    assert compiled.plan.training.recompute_stated == "selective [mlp, layernorm]"


# The tp collectives each module issues again (`timing.megatron_replay`), counted by hand from
# Megatron-Core (transformer_layer.py's `recompute_mlp`, moe/moe_layer.py's checkpointed
# `custom_forward` with the shared experts inside, moe/shared_experts.py, multi_latent_attention.py's
# `qkv_up_checkpoint`): a checkpointed module's forward runs again whole, so its column-parallel
# linear gathers its input again under sequence parallelism (Transformer Engine's
# `gather_along_first_dim`) and its row-parallel linear reduce-scatters its output again.
# SPEC: tp 2 with sequence parallelism (the frameworks' choice), layer 0 dense, layers 1-3 MoE with
# one shared expert, latent attention everywhere.
SHARED_FFN_LAYERS = 3


def replayed(recompute: str, precision: str = "bf16", options: str = "") -> list:
    """Every rank class's tp records of phase `recompute`, with their rank's micro-batches."""
    text = SPEC.replace("RECOMPUTE", recompute)
    if precision != "bf16":
        text = text.replace("micro-batch 1,", f"micro-batch 1, precision {precision},")
    if options:
        text = text.replace("target megatron", f"target megatron {{ {options} }}")
    plan = compile_text(text, path="m.par", checks=False).plan
    inputs = timing.plan_inputs(plan)
    assert inputs.knobs.sp and inputs.knobs.tp == TP and inputs.knobs.recompute == "selective"
    steps = timing.rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT, inputs.sw)[1]
    assert steps
    return [(c.kind, c.payload, c.micro) for step in steps.values() for c in step.ledger.collectives
            if c.axis == "tp" and c.phase == "recompute"]


def test_attention_core_layernorm_and_the_routed_activation_replay_no_tp_collective():
    assert replayed("selective [core_attn, layernorm, moe_act]") == []


@pytest.mark.parametrize("modules, layers", [("mlp", 1), ("shared_experts", SHARED_FFN_LAYERS),
                                             ("moe", SHARED_FFN_LAYERS), ("mlp, shared_experts", 4)])
def test_an_ffn_module_gathers_its_input_and_reduce_scatters_its_output_again(modules, layers):
    """The dense layer's MLP under `mlp`; the shared experts (alone, or inside the whole MoE layer)
    under `shared_experts` or `moe`: one all-gather and one reduce-scatter of the layer's
    hidden state (4,096 tokens x 1,024, bf16) per recomputed FFN and micro-batch."""
    hidden = ACT * TOKENS * H
    assert sorted(replayed(f"selective [core_attn, {modules}]")) == [
        ("all_gather", hidden, layers), ("reduce_scatter", hidden, layers)]


def test_the_up_projections_gather_their_latents_again():
    """`mla_up_proj` in every layer (all four use latent attention): the query latent (256) and the
    key-value latent (128) gathered again, 384 bf16 elements a token; the RoPE key (32) was
    gathered before the checkpointed function and is not."""
    assert replayed("selective [core_attn, mla_up_proj]") == [("all_gather", ACT * TOKENS * (256 + 128), 4)]


def test_fp8_gathers_replay_quantized_and_current_scaling_reduces_their_amaxes_again():
    """Under fp8 the gathers carry the quantized inputs (1 byte an element); under per-tensor
    current scaling the replayed linears reduce their input's amax over tp again, one fp32 amax
    each: the dense fc1 and the three shared experts' fc1 (the ledger merges the four alike)."""
    delayed = replayed("selective [core_attn, mlp, shared_experts]", "fp8")
    assert sorted(delayed) == [("all_gather", TOKENS * H, 4), ("reduce_scatter", ACT * TOKENS * H, 4)]
    current = replayed("selective [core_attn, mlp, shared_experts]", "fp8", "fp8-recipe tensorwise")
    amaxes = sorted(r for r in current if r[1] == 4)
    assert amaxes == [("all_reduce", 4, 1 + SHARED_FFN_LAYERS)]
    latent = replayed("selective [core_attn, mla_up_proj]", "fp8", "fp8-recipe tensorwise")
    assert sorted(latent) == [("all_gather", TOKENS * (256 + 128), 4), ("all_reduce", 4, 2 * 4)]


def test_the_replay_is_charged_as_the_forwards_calls_are_exposed():
    """The recomputation's gathers and reduce-scatters wait as the forward's do (Megatron-LM's
    default overlap hides backward calls only): the backward's exposed tp time per micro-batch
    grows by exactly the replayed calls' seconds on the tp link."""
    def step(recompute):
        plan = compile_text(SPEC.replace("RECOMPUTE", recompute), path="m.par", checks=False).plan
        inputs = timing.plan_inputs(plan)
        steps = timing.rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT, inputs.sw)[1]
        assert len(steps) == 1
        return next(iter(steps.values())), timing.link(inputs.geo.tp, inputs.hw, DEFAULT)

    base, link = step("selective [core_attn]")
    mlp, _ = step("selective [core_attn, mlp]")
    hidden = ACT * TOKENS * H
    expected = 2 * link.all_gather(hidden)  # layer 0, the one dense layer: a reduce-scatter costs a gather
    assert mlp.times.exposed_b[0] - base.times.exposed_b[0] == pytest.approx(expected, rel=1e-9)
    assert mlp.times.recompute_exposed[0] - base.times.recompute_exposed[0] == pytest.approx(expected, rel=1e-9)


def test_under_tp_comm_overlap_the_replay_hides_as_the_forwards_calls_do():
    """Megatron-Core's `--tp-comm-overlap` runs the forward's gathers and reduce-scatters beside
    their GEMMs, and the recomputed forward's with them: the replay's exposed seconds are the
    forward's exposed share of its own (`timing.forward_exposed_share`), less than whole."""
    text = SPEC.replace("RECOMPUTE", "selective [core_attn, mlp]").replace("target megatron",
                                                                           "target megatron { tp-overlap all }")
    plan = compile_text(text, path="m.par", checks=False).plan
    inputs = timing.plan_inputs(plan)
    assert inputs.sw.tp_overlap == "all"
    base = compile_text(text.replace(", mlp]", "]"), path="m.par", checks=False).plan
    steps = timing.rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT, inputs.sw)[1]
    base_in = timing.plan_inputs(base)
    base_steps = timing.rank_steps(base_in.shape, base_in.knobs, base_in.hw, base_in.geo, DEFAULT, base_in.sw)[1]
    (step,), (plain,) = steps.values(), base_steps.values()
    link = timing.link(inputs.geo.tp, inputs.hw, DEFAULT)
    whole = 2 * link.all_gather(ACT * TOKENS * H)
    grown = step.times.exposed_b[0] - plain.times.exposed_b[0]
    assert 0 < grown < 0.9 * whole
