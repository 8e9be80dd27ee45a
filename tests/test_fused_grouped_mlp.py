"""Transformer Engine's fused grouped MLP (issue 14). Megatron-Bridge's 26.06 and later GB200
recipes set `cutedsl_fused_grouped_mlp`, which turns on Megatron-Core's
`use_transformer_engine_op_fuser`: `TEGroupedMLP._fused_forward` runs Transformer Engine's
`_GroupedMLP_CuTeGEMMBase` (transformer_engine/pytorch/ops/fused/grouped_mlp.py), whose fc1 grouped
GEMM applies the GLU, the router's probabilities and fc2's input quantization in its epilogue, and
whose fc2 dgrad applies the GLU's backward and quantizes fc1's output gradient in its own; each
grouped GEMM is one kernel over all local experts. TE fuses only on Blackwell under MXFP8 (or
NVFP4), with a GLU and widths divisible by 64 (`fuse_grouped_mlp_ops`, `validate_grouped_mlp_dims`).

Checked against references the model did not produce: the kernels and bytes the fusion removes,
counted here by hand from TE's source and the layer's shapes; the conditions under which TE does
not fuse; the reader sets the fact exactly on the rows whose recipe states it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from parc import hbm, kernels, timing
from parc.calibration import DEFAULT
from parc.memory.inputs import shape_of
from parc.pipeline import compile_text

from .conftest import load_yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

QWEN3_30B_LIKE = """job q
dp 8 on nodes(4 gpus, nvl72)
ep 8 over dp
model {
  layers 4, hidden 2048, ffn 6144, heads 32, kv-heads 4, vocab 151936
  head-dim 128
  activation swiglu, norm rmsnorm, position rope, tied-embeddings off
  experts 128, top-k 8, expert-ffn 768, shared-experts 0, moe-layers all
}
hardware { gpu gb200-nvl72 }
target megatron { fp8-recipe mxfp8 }
train { seq 4096, global-batch 64, micro-batch 1, precision fp8 }
"""
"""Qwen3-30B-A3B's layer shapes (hidden 2,048, 128 experts, top-8, expert FFN 768) on 4 layers, GB200."""

SEQ, LOCAL, F, H = 4096, 128 // 8, 768, 2048
COPIES = SEQ * 8  # balanced: every routed copy of the micro-batch lands on this GPU's experts


def layers(text: str = QWEN3_30B_LIKE, precision: str = "fp8", ep: int = 8):
    plan = compile_text(text, path="q.par", checks=False).plan
    shape, hw = shape_of(plan), timing.hardware_of(plan)
    case = timing.LayerCase(True, 1, False, 1, "ring", SEQ, 1, ep, precision, "flash-te", "fused", balanced=True,
                            fp8_scaling="mxfp8" if precision == "fp8" else "delayed")
    return shape, hw, case


def test_the_fused_mlp_launches_tes_kernels_counted_by_hand():
    # forward: group_quantize of fc1's input, splits_to_offsets, the GLU grouped GEMM, fc2's;
    # backward: group_quantize of fc2's output gradient, the dGLU grouped GEMM (fc2's dgrad),
    # fc1's dgrad, two wgrads; plus Megatron-Core's three fp8 paddings each way
    assert kernels.fused_grouped_mlp_launches(16, "mxfp8") == kernels.Launches(4 + 3, 5 + 3)
    assert kernels.fused_grouped_mlp_launches(128, "mxfp8") == kernels.Launches(4 + 6, 5 + 6)
    # unfused: two split_quantizes of 16 slices each and the paddings, one cuBLAS GEMM per expert
    assert kernels.grouped_mlp_launches(16, "mxfp8") == kernels.Launches(32 + 3 + 32, 32 + 3 + 64)


def test_the_layer_drops_the_activation_casts_and_launches_counted_by_hand():
    shape, hw, case = layers()
    assert timing.fuses_grouped_mlp(shape, replace(case, fused_grouped_mlp=True))
    plain = timing.layer_work(shape, case, hw, DEFAULT)
    fused = timing.layer_work(shape, replace(case, fused_grouped_mlp=True), hw, DEFAULT)
    rate = hw.hbm * DEFAULT.hbm_efficiency
    overhead = DEFAULT.kernel_overhead
    # the SwiGLU reads the gate and linear halves and writes the product (3 x 768 per copy, 2 bytes),
    # its backward twice that; fc2's input cast (read 2, write the fp8 copy and its transpose) over
    # 768 per copy forward, fc1's output gradient over 2 x 768 backward
    act = 2 * COPIES * 3 * F
    cast_f, cast_b = 4 * COPIES * F, 4 * COPIES * 2 * F
    # quantize kernels: 2 x 16 slices + 3 paddings unfused, 2 + 3 (forward) and 1 + 3 (backward) fused
    assert plain.memory_f - fused.memory_f == pytest.approx((act + cast_f) / rate + (35 - 5) * overhead)
    assert plain.memory_b - fused.memory_b == pytest.approx((2 * act + cast_b) / rate + (35 - 4) * overhead)
    # the grouped GEMMs: 4 rounds of 4 streams each unfused, one kernel over the 16 experts fused
    rows = COPIES / LOCAL
    expected = sum(LOCAL * (timing.gemm_seconds(rows, k, n, "fp8", hw, DEFAULT, 4)
                            - timing.gemm_seconds(rows, k, n, "fp8", hw, DEFAULT, LOCAL))
                   for k, n in ((H, 2 * F), (F, H))) + 2 * (4 - 1) * overhead
    assert plain.gemm - fused.gemm == pytest.approx(expected)
    assert fused.attention_f == plain.attention_f and fused.ep_bytes == plain.ep_bytes
    # the host issues 67 - 7 fewer kernels forward, 99 - 8 backward
    assert plain.launches_f - fused.launches_f == 60 and plain.launches_b - fused.launches_b == 91
    # `--recompute-modules moe_act` has no activation of its own to run again
    assert fused.moe_act_again == pytest.approx(overhead)
    assert fused.forward < plain.forward and fused.backward_input < plain.backward_input


def test_the_hbm_ledger_drops_the_same_bytes():
    shape, _, case = layers()
    plain, fused = hbm.layer_bytes(shape, case), hbm.layer_bytes(shape, replace(case, fused_grouped_mlp=True))
    act = 2 * COPIES * 3 * F
    assert plain.memory_f - fused.memory_f == pytest.approx(act + 4 * COPIES * F)
    assert plain.memory_b - fused.memory_b == pytest.approx(2 * act + 4 * COPIES * 2 * F)
    assert plain.moe_act_again - fused.moe_act_again == pytest.approx(act)
    assert fused.gemm_f == plain.gemm_f


@pytest.mark.parametrize("change", [
    "hidden 2048, ffn 6144, heads 32, kv-heads 4, vocab 151936\n  head-dim 128\n  activation gelu",
    "hidden 2040, ffn 6144, heads 30, kv-heads 2, vocab 151936\n  head-dim 68\n  activation swiglu",
])
def test_where_te_does_not_fuse_nothing_changes(change):
    """No GLU (`validate_grouped_mlp_dims` raises TypeError) or a width 64 does not divide: TE
    keeps the unfused grouped GEMMs, and so does the model."""
    text = QWEN3_30B_LIKE.replace(
        "hidden 2048, ffn 6144, heads 32, kv-heads 4, vocab 151936\n  head-dim 128\n  activation swiglu", change)
    assert text != QWEN3_30B_LIKE
    shape, hw, case = layers(text)
    assert not timing.fuses_grouped_mlp(shape, replace(case, fused_grouped_mlp=True))
    assert timing.layer_work(shape, case, hw, DEFAULT) == \
        timing.layer_work(shape, replace(case, fused_grouped_mlp=True), hw, DEFAULT)


def test_the_reader_sets_the_fact_where_the_recipe_states_it():
    import published

    seen = {True: 0, False: 0}
    for name in ("megatron_bridge_25_11.yaml", "megatron_bridge_releases_moe.yaml"):
        for entry in load_yaml((ROOT / "benchmarks" / "data" / name).read_text()):
            run = published.row_spec(entry)
            if not isinstance(run, published.Run):
                continue
            stated = "cutedsl_fused_grouped_mlp" in ((entry.get("recipe") or {}).get("other") or ())
            assert run.software.fused_grouped_mlp == stated, entry["id"]
            seen[stated] += 1
    assert seen[True] >= 12 and seen[False] >= 50


def test_the_fused_rows_are_predicted_faster_with_it():
    import fidelity

    rows, _ = fidelity.load_rows(ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml")
    fused = [r for r in rows if r.software.fused_grouped_mlp]
    assert len(fused) >= 12
    for row in fused:
        p = fidelity.prepare(row)
        without = replace(row, software=replace(row.software, fused_grouped_mlp=False))
        assert fidelity.predicted_step(row, p, DEFAULT).step < fidelity.predicted_step(without, p, DEFAULT).step, row.id
