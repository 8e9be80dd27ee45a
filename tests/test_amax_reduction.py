"""Transformer Engine's delayed fp8 scaling all-reduces its amaxes, blocking, twice per model chunk
and micro-batch over every rank of the pipeline stage (`timing.amax_reductions`).

What the records must be is counted here from Transformer Engine's and Megatron-Core's source, not
from the model: TE 1.10's `fp8_autocast_exit` calls `reduce_and_update_fp8_tensors(forward=True)`,
which all-reduces (MAX, `async_op=False`) one concatenation of the region's forward amaxes (three per
GEMM: input, weight, output); the backward does the same for two per GEMM when it reaches the
region's first module. Megatron-Core's `TransformerBlock` wraps a chunk's whole forward in one
region under the delayed recipe (`use_outer_quantization_context`), over
`get_amax_reduction_group(with_context_parallel=True)`: tp x dp x cp. The seconds are checked
against NCCL's latency-bound tree for a small buffer, written out by hand from the stored link
constants.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from parc import timing
from parc.calibration import DEFAULT
from parc.pipeline import compile_text

SPEC = """\
job amax

tp 4 x cp 2 x dp {dp} x pp 4 on nodes(8 gpus, nvlink)

model llama3-70b

hardware {{
  gpu h100-sxm
  nodes {nodes}
}}

target megatron {{
  {options}
}}

train {{
  seq 8192
  global-batch {batch}
  micro-batch 1
  precision {precision}
  recompute {recompute}
}}

tp {{
  sequence-parallel on
}}

pp {{
  schedule interleaved-1f1b
  virtual-stages 5
}}

dp {{
  sharding zero1
}}
"""


def plan(dp: int = 2, precision: str = "fp8", options: str = "", recompute: str = "none"):
    """Llama 3.1 70B as NVIDIA's DGX Cloud recipe lays it out: 32 GPUs a replica, 64 micro-batches."""
    text = SPEC.format(dp=dp, nodes=4 * dp, batch=64 * dp, precision=precision, options=options,
                       recompute=recompute)
    return compile_text(text, path="amax.par").plan


def ranks(p, **software) -> dict:
    """The plan's rank classes as `timing.predict` builds them (`plan_inputs`), under its target's
    software with `software`'s fields replaced."""
    inputs = timing.plan_inputs(p)
    sw = replace(inputs.sw, **software)
    return timing.rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT, sw)[1]


def amax_records(steps: dict) -> list:
    """Every rank class's amax all-reduces: the dp records on the path (the gradients' are not)."""
    return [c for step in steps.values() for c in step.ledger.collectives if c.axis == "dp" and c.window == "path"]


def test_two_blocking_all_reduces_per_chunk_and_micro_batch_over_the_stage():
    records = amax_records(ranks(plan()))
    assert records, "no amax all-reduce in the ledger of a delayed-scaling fp8 run"
    # 80 layers over 4 stages: 20 a rank, 4 in each of its 5 chunks, each layer with QKV, the output
    # projection, FC1 and FC2 in fp8. TE's one buffer holds all 80 GEMMs' amaxes, whichever chunk exits
    gemms = 20 * 4
    for stage_records in (records[i:i + 2] for i in range(0, len(records), 2)):
        forward, backward = sorted(stage_records, key=lambda c: c.phase != "forward")
        for record, amaxes in ((forward, 3), (backward, 2)):
            assert record.kind == "all_reduce"
            assert record.count == 64 * 5 and record.micro == 5
            assert (record.size, record.local) == (4 * 2 * 2, 8)  # tp x cp x dp, a node each
            assert record.payload == 4 * amaxes * gemms


def test_full_recomputation_reduces_once_per_module_of_each_recomputed_layer():
    """TE >= 1.12: the checkpointed forward (no gradients) leaves the first-module flag unconsumed,
    and the recompute phase hands it to each of the layer's 4 modules: 20 layers x 4 backward calls
    per micro-batch on a rank, the forward's 5 unchanged."""
    records = amax_records(ranks(plan(recompute="full")))
    assert records
    for record in records:
        expected = 5 if record.phase == "forward" else 20 * 4
        assert record.micro == expected and record.count == 64 * expected, record


def test_a_moe_layers_modules_and_gemms():
    """Megatron-Core's MoE layer under TE: the attention's two modules, two `GroupedLinear` modules
    holding each local expert's GEMM, and the shared experts' two."""
    inputs = timing.plan_inputs(plan())
    k = inputs.knobs
    moe = replace(inputs.shape, experts=16, top_k=2, expert_ffn=2048, shared_experts=1)
    assert timing.amax_modules(moe, replace(k, ep=4), True) == (2 + 2 + 2, 2 + 2 * 16 / 4 + 2)
    assert timing.amax_modules(replace(moe, shared_experts=0), replace(k, ep=8), True) == (4, 2 + 2 * 2)
    assert timing.amax_modules(moe, k, False) == (4, 4)


def test_the_seconds_are_nccls_tree_latency_on_the_path():
    """A few hundred bytes over 16 ranks on 2 nodes: the tree wins, 2 ((8 - 1) NVLink steps +
    ceil(log2 2) network steps), its bytes negligible. Each of the 64 x 5 chunk forwards and
    backwards waits one out, and so does each of the pipeline's slots: the interleaved schedule's
    bubble, (p - 1)(F + B + W) of one chunk, grows by (p - 1) x 2 of them."""
    one = 2 * (7 * DEFAULT.latency_intra + 1 * DEFAULT.latency_inter)
    steps = ranks(plan())
    assert steps
    for step in steps.values():
        assert step.amax == pytest.approx((one, one), rel=0.01)
    inputs = timing.plan_inputs(plan())
    with_amax = timing.step_time(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT, inputs.sw)
    without = timing.step_time(inputs.shape, inputs.knobs, inputs.hw, replace(inputs.geo, stage=timing.Group()),
                               DEFAULT, inputs.sw)
    assert with_amax.exposed["dp"] - without.exposed["dp"] == pytest.approx(2 * 64 * 5 * one, rel=0.01)
    assert with_amax.bubble - without.bubble == pytest.approx((4 - 1) * 2 * one, rel=0.01)
    assert with_amax.step - without.step == pytest.approx((2 * 64 * 5 + (4 - 1) * 2) * one, rel=0.01)


def test_the_cost_grows_with_the_data_parallel_degree():
    """The stage is 8 x dp ranks, a node's 8 in each of dp nodes: the tree's network steps are
    ceil(log2 dp), 1 at 2 nodes, 3 at 8, 6 at 64."""
    seconds = [max(sum(s.amax) for s in ranks(plan(dp=dp)).values()) for dp in (2, 8, 64)]
    one = [2 * (7 * DEFAULT.latency_intra + math.ceil(math.log2(dp)) * DEFAULT.latency_inter) for dp in (2, 8, 64)]
    assert seconds[0] < seconds[1] < seconds[2]
    assert [s / 2 for s in seconds] == pytest.approx(one, rel=0.01)


@pytest.mark.parametrize("precision, options", [("bf16", ""), ("fp8", "fp8-recipe tensorwise")])
def test_no_reduction_without_an_amax_history(precision, options):
    """bf16 has no fp8 tensors; per-tensor current scaling keeps no amax history (nor does MXFP8,
    Blackwell's, whose `Software.fp8_scaling` "mxfp8" the same condition leaves out)."""
    steps = ranks(plan(precision=precision, options=options))
    assert steps and not amax_records(steps)
    assert all(s.amax == (0.0, 0.0) for s in steps.values())


def test_dynamic_scaling_issues_none():
    """torchao's float8 (torchtitan's runtime: `fp8_scaling` "dynamic") scales each tensor from its own
    amax: the same run under it records no amax all-reduce."""
    from parc.targets import RUNTIMES

    assert RUNTIMES["torchtitan"].fp8_scaling == "dynamic"
    steps = ranks(plan(), fp8_scaling="dynamic")
    assert steps and all(s.amax == (0.0, 0.0) for s in steps.values())
    assert not amax_records(steps)


# Transformer Engine's current scaling and NVFP4: each gathered tensor's amax reduced over tp
# (`timing.tp_amax_reductions`). Counted from TE 2.x's module/linear.py and layernorm_linear.py:
# `_customize_quantizers_float8_current_scaling` sets `with_amax_reduction` on a column-parallel
# linear's input quantizer and a row-parallel linear's output-gradient quantizer under sequence
# parallelism, and `Float8CurrentScalingQuantizer::quantize_impl` (csrc/quantizer.cpp) all-reduces
# the one fp32 amax (MAX) and waits before it computes the scale and casts.


def tp_amax_records(steps: dict) -> list:
    """Every rank class's tp all-reduces of one or two fp32 amaxes."""
    return [c for step in steps.values() for c in step.ledger.collectives
            if c.axis == "tp" and c.kind == "all_reduce" and c.payload in (4, 8)]


def test_current_scaling_reduces_each_gathered_tensors_amax_over_tp():
    """Llama 3.1 70B's layer under sequence parallelism: forward QKV's and fc1's inputs, backward
    the output projection's and fc2's output gradients: 2 + 2 calls a layer, 20 layers a rank,
    64 micro-batches. Each is a 4-byte all-reduce inside the node over tp 4, latency-bound:
    2 (4 - 1) NVLink steps, waited for on the compute path, so the rank's exposed tp time per
    micro-batch grows by 40 of them each way over delayed scaling's (same gathers, no reduction)."""
    steps = ranks(plan(options="fp8-recipe tensorwise"))
    records = tp_amax_records(steps)
    assert records, "no tp amax all-reduce under current scaling"
    for record in records:
        assert record.phase in ("forward", "backward") and record.window == "path" and not record.pairs
        assert (record.payload, record.size, record.local) == (4, 4, 4)
        assert record.micro == 20 * 2 and record.count == 64 * 20 * 2
    for step in steps.values():
        assert sorted(r.phase for r in tp_amax_records({0: step})) == ["backward", "forward"]
    delayed = ranks(plan())
    assert not tp_amax_records(delayed)
    one = 2 * 3 * DEFAULT.latency_intra
    for load, step in steps.items():
        for times in ("exposed_f", "exposed_b"):  # the tp axis's
            grown = getattr(step.times, times)[0] - getattr(delayed[load].times, times)[0]
            assert grown == pytest.approx(40 * one, rel=0.02), times


def test_full_recomputation_reduces_the_forwards_again():
    """The recomputed forward quantizes QKV's and fc1's inputs again, and reduces their amaxes again."""
    steps = ranks(plan(options="fp8-recipe tensorwise", recompute="full"))
    assert steps
    for step in steps.values():
        records = tp_amax_records({0: step})
        assert sorted(r.phase for r in records) == ["backward", "forward", "recompute"]
        assert all(r.micro == 40 for r in records)


@pytest.mark.parametrize("precision, options, sp", [
    ("fp8", "", True),  # delayed scaling: the amax history's reduction instead (above)
    ("bf16", "", True),
    ("fp8", "fp8-recipe tensorwise", False),  # nothing gathered: each rank casts the whole tensor
])
def test_no_tp_amax_reduction_without_a_gathered_current_scaled_tensor(precision, options, sp):
    p = plan(precision=precision, options=options)
    if not sp:
        p = compile_text(SPEC.format(dp=2, nodes=8, batch=128, precision=precision, options=options,
                                     recompute="none").replace("sequence-parallel on", "sequence-parallel off"),
                         path="amax.par").plan
    steps = ranks(p)
    assert steps and not tp_amax_records(steps)


def _deepseek_nvfp4_moe_layer(train: str):
    """DeepSeek-V3 at tp 4 with sequence parallelism on B200 under NVFP4 (`train`: more of its
    train block): its plan's inputs, tp link and MoE layer case."""
    text = ("tp 4 x dp 2 on nodes(8 gpus, nvlink)\nmodel deepseek-v3\nhardware { gpu b200 }\ntarget megatron\n"
            f"train {{ seq 4096, global-batch 8, micro-batch 1, precision nvfp4{train} }}\n")
    inputs = timing.plan_inputs(compile_text(text, path="mla.par", checks=False).plan)
    return inputs, timing.link(inputs.geo.tp, inputs.hw, DEFAULT), timing.LayerCase.of(inputs.knobs, True, inputs.sw)


def test_a_moe_layer_with_latent_attention_and_nvfp4():
    """DeepSeek-V3's layer: multi-head latent attention's two column-parallel up projections
    (queries and key-values) and the shared experts' fc1 forward, the output projection's and the
    shared experts' fc2's gradients backward; the routed experts' tokens come by the all-to-all.
    NVFP4 coalesces the rowwise and columnwise amaxes: 8 bytes, but for the shared experts' fc1,
    which keeps its bf16 input (Megatron-Core's `set_save_original_input`): rowwise only forward,
    and again in the backward before its re-gather, one amax each. MXFP8 scales per block: none."""
    inputs, link, case = _deepseek_nvfp4_moe_layer("")
    assert case.sp and case.precision == "nvfp4"
    records = timing.tp_amax_reductions(inputs.shape, case, inputs.hw, link)
    assert [(r.phase, r.micro, r.payload) for r in records] == [("forward", 2, 8), ("forward", 1, 4),
                                                                ("backward", 2, 8), ("backward", 1, 4)]
    dense = timing.tp_amax_reductions(inputs.shape, timing.LayerCase.of(inputs.knobs, False, inputs.sw),
                                      inputs.hw, link)
    assert [(r.phase, r.micro) for r in dense] == [("forward", 3), ("backward", 2)]  # its FFN: fc1, fc2
    mxfp8 = replace(case, precision="fp8", fp8_scaling="mxfp8")
    assert timing.tp_amax_reductions(inputs.shape, mxfp8, inputs.hw, link) == ()


def test_recomputed_shared_experts_cast_their_input_as_any_column_parallel_linear():
    """Megatron-Core sets `set_save_original_input` on the shared experts' fc1 only where they are
    not recomputed (moe/shared_experts.py: `shared_experts_recompute`); under `recompute selective
    [shared_experts]` their fc1 quantizes both usages forward like QKV's up projections (one
    8-byte NVFP4 call, not a 4-byte rowwise one) and quantizes nothing again backward; the kept
    bf16 input left is the output projection's alone, as in a dense layer."""
    inputs, link, case = _deepseek_nvfp4_moe_layer(", recompute selective [shared_experts]")
    assert case.shared_recomputed and not timing.LayerCase.of(inputs.knobs, False, inputs.sw).shared_recomputed
    records = timing.tp_amax_reductions(inputs.shape, case, inputs.hw, link)
    assert [(r.phase, r.micro, r.payload) for r in records] == [("forward", 3, 8), ("backward", 2, 8)]
    dense = timing.LayerCase.of(inputs.knobs, False, inputs.sw)
    assert timing.original_input_casts(inputs.shape, case, False) == \
        timing.original_input_casts(inputs.shape, dense, False) != (0.0, 0.0)
