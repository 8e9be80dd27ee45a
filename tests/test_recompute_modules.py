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
    import yaml

    entries = yaml.safe_load((ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml").read_text())
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
