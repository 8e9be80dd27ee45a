"""Megatron-Core's `--moe-shared-expert-overlap` (issue 14: the model is the ledger of the job parc
generates): parc's Megatron launcher passes it for a model with shared experts where there is no
tensor parallelism, and the time model charges a MoE layer's all-to-alls as they run beside the
shared experts' computation on its own stream.

The pairing is read from Megatron-Core (megatron/core/transformer/moe/token_dispatcher.py: the
alltoall dispatcher calls `shared_experts.linear_fc1_forward_and_act` right after posting the
dispatch all-to-all and `linear_fc2_forward` after the combine's; moe/shared_experts.py runs them on
`SharedExpertMLP.stream`); the seconds are checked against the all-to-alls' own seconds on the ep
link and the shared experts' own GEMM FLOPs, not against the function under test."""

from __future__ import annotations

from dataclasses import replace

import pytest
from parc import targets, timing
from parc.backends import megatron as backend
from parc.calibration import DEFAULT
from parc.pipeline import compile_text

from .conftest import load_yaml

MODEL = ("{ layers 4, hidden 2048, ffn 8192, heads 16, head-dim 128, vocab 32000, experts 16, top-k 2, "
         "expert-ffn 1024, shared-experts 2, moe-layers from 1 }")


def plan(layout: str = "dp 8 on nodes(8 gpus, nvlink)\nep 8 over dp", model: str = MODEL,
         recompute: str = "none", target: str = "megatron"):
    text = (f"{layout}\nmodel {model}\nhardware {{ gpu h100-sxm }}\ntarget {target}\n"
            f"train {{ seq 4096, global-batch 64, micro-batch 1, recompute {recompute} }}\n")
    result = compile_text(text, path="shared.par", checks=False)
    assert result.plan is not None
    return result.plan


def moe_exposure(p, overlap: bool):
    """One MoE layer's `Exposed` and `Work` on the plan's ep link, with the overlap on or off."""
    inputs = timing.plan_inputs(p)
    sw = replace(inputs.sw, shared_expert_overlap=overlap)
    k = inputs.knobs
    case = timing.LayerCase.of(k, True, sw)
    work = timing.runtime_work(timing.layer_work(inputs.shape, case, inputs.hw, DEFAULT), True, inputs.shape,
                               inputs.hw, sw, DEFAULT)
    links = [timing.link(g, inputs.hw, DEFAULT) for g in (inputs.geo.tp, inputs.geo.cp, inputs.geo.ep)]
    x = timing.exposed(work, *links, False, sw.tp_overlap, DEFAULT, timing.tp_calls("moe", k.sp, k.tp, work),
                       (), (), overlap and timing.overlaps_shared_experts(sw, inputs.shape, k.tp))
    return x, work, links[2]


def test_the_launcher_passes_the_flag_where_the_model_charges_it():
    assert ("--moe-shared-expert-overlap", None) in backend.arguments(plan())
    assert targets.software_of(plan()).shared_expert_overlap
    # under tp the overlapped shared experts would gather in bf16 and keep the gathered input
    tp2 = plan("tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 8 over tp x dp")
    assert ("--moe-shared-expert-overlap", None) not in backend.arguments(tp2)
    assert not timing.overlaps_shared_experts(targets.software_of(tp2), timing.plan_inputs(tp2).shape, 2)
    # Megatron-Core refuses it beside recomputed shared experts; no shared experts, nothing to overlap
    recomputed = plan(recompute="selective [shared_experts]")
    assert ("--moe-shared-expert-overlap", None) not in backend.arguments(recomputed)
    assert not targets.software_of(recomputed).shared_expert_overlap
    plain = plan(model=MODEL.replace("shared-experts 2", "shared-experts 0"))
    assert not targets.software_of(plain).shared_expert_overlap
    assert not targets.software_of(plan(target="torchtitan")).shared_expert_overlap


def test_each_all_to_all_shows_what_outlasts_its_shared_block():
    """Forward: the dispatch beside fc1 and its activation, the combine beside fc2; backward: the
    combine's gradient beside fc2's backward, the dispatch's beside fc1's (each twice its
    forward: input and weight gradients). An all-to-all longer than its block shows the
    difference; a shorter one only the SMs NCCL's kernels hold while it runs."""
    p = plan()
    plain, work, ep = moe_exposure(p, False)
    overlapped, _, _ = moe_exposure(p, True)
    # the all-to-alls' own seconds, from the layer's ep records on the link
    records = [r for r in plain.collectives if r.axis == "ep" and r.kind == "all_to_all"]
    assert [r.phase for r in records] == ["forward", "backward"] and all(r.count == 2 for r in records)
    one = timing.collective_seconds(records[0], ep)
    assert plain.ep_f == pytest.approx(2 * one) and plain.ep_b == pytest.approx(2 * one)
    # the shared experts' GEMMs: fc1 (gate and up, 2 x 1,024 wide each for 2 experts) and fc2, on
    # 4,096 tokens of width 2,048
    fc1, fc2 = work.shared_blocks
    assert fc1 > fc2 > 0
    flops_fc2 = 2 * 4096 * 2048 * 2 * 1024
    assert fc2 >= flops_fc2 / (989e12)  # never faster than the peak
    held = ep.sm_share * one

    def shows(block: float) -> float:
        return max(one - block, held, 0.0)

    assert overlapped.ep_f == pytest.approx(shows(fc1) + shows(fc2), rel=1e-9)
    assert overlapped.ep_b == pytest.approx(shows(2 * fc2) + shows(2 * fc1), rel=1e-9)
    assert overlapped.ep_f < plain.ep_f and overlapped.ep_b < plain.ep_b
    # nothing else moves: the same records, the same tp and cp exposure
    assert overlapped.collectives == plain.collectives and overlapped.tp_f == plain.tp_f


def test_the_step_gains_at_most_the_hidden_all_to_alls():
    """The overlap hides transfers, never computation: the step shrinks by no more than the MoE
    layers' all-to-all seconds, and the computation's seconds are unchanged."""
    p = plan()
    inputs = timing.plan_inputs(p)
    on = timing.rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT, inputs.sw)[1]
    off = timing.rank_steps(inputs.shape, inputs.knobs, inputs.hw, inputs.geo, DEFAULT,
                            replace(inputs.sw, shared_expert_overlap=False))[1]
    assert on and on.keys() == off.keys()
    for load, step in on.items():
        plain = off[load].times
        assert step.times.compute == plain.compute
        gained = plain.total - step.times.total
        moe_layers = step.times.moe_layers
        assert moe_layers == 3
        all_to_alls = plain.exposed_f[2] + plain.exposed_b[2]
        assert 0 < gained <= all_to_alls + 1e-12
        assert 0 < step.times.exposed_f[2] < plain.exposed_f[2]


def test_the_reader_takes_the_flag_from_a_recipe_that_states_it():
    """Megatron-Bridge 25.09's DeepSeek-V3 runs without the 1F1B overlap set it (run_script.py at
    fa0315ae26: `moe_shared_expert_overlap = True` unless A2A_1F1B); the reader carries it. The
    H100 row runs DeepEP under the flex dispatcher, which turns it off (the recipe's
    `enable_deepep` branch), and states nothing."""
    import sys

    from .conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    entries = load_yaml((ROOT / "benchmarks" / "data" / "megatron_bridge_releases_moe.yaml").read_text())
    rows = [e for e in entries if e["id"].startswith("bridge2509_") and "deepseek" in e["id"]]
    stated = [e for e in rows if (e.get("recipe") or {}).get("moe_shared_expert_overlap")]
    unstated = [e for e in rows if e not in stated]
    assert stated and unstated
    runs = {e["id"]: published.row_spec(e) for e in rows}
    read = {key: run for key, run in runs.items() if isinstance(run, published.Run)}  # one row's ep is refused
    assert any(e["id"] in read for e in stated) and any(e["id"] in read for e in unstated)
    for entry in rows:
        if entry["id"] in read:
            assert read[entry["id"]].software.shared_expert_overlap == (entry in stated), entry["id"]
