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
