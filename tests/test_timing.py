"""The time model: FLOP counts, collectives, group placement, bubbles, the step's breakdown and
the directions every knob must move it. Fidelity against published runs is tests/test_fidelity.py."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from dataclasses import replace

import pytest
from parc import flops, timing
from parc.calibration import DEFAULT
from parc.memory.inputs import Knobs, knobs_of, shape_of
from parc.pipeline import compile_path, compile_text

from .conftest import ROOT, SPECS

BASE = """\
{layout} on nodes({per_node} gpus, nvlink)
model {model}
hardware {{ gpu {gpu} }}
train {{ seq {seq}, global-batch {batch}, micro-batch {micro}, recompute {recompute}, precision {precision} }}
{extra}
"""


def plan_of(layout="tp 8 x pp 4 x dp 4", model="llama3-8b", gpu="h100-sxm", seq=4096, batch=256, micro=1,
            recompute="none", precision="bf16", extra="", per_node=8):
    text = BASE.format(layout=layout, model=model, gpu=gpu, seq=seq, batch=batch, micro=micro,
                       recompute=recompute, precision=precision, extra=extra, per_node=per_node)
    result = compile_text(text, path="t.par", checks=False)  # the time model reads the plan only
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def predict(**kwargs) -> timing.Prediction:
    sw = kwargs.pop("sw", timing.PARC)
    prediction = timing.predict(plan_of(**kwargs), sw=sw)
    assert prediction is not None
    return prediction


# ---------------------------------------------------------------------------------------------
# FLOPs


def test_model_flops_are_6n_plus_causal_attention():
    plan = compile_path(str(ROOT / "specs" / "llama3-405b.par"), checks=False).plan
    shape = shape_of(plan)
    m = plan.model
    n = flops.matmul_parameters(shape)
    # N = every parameter but the embedding table and the norms (the output layer is untied)
    norms = (2 * m.layers + 1) * m.hidden
    assert n == m.parameters - m.vocab * m.hidden - norms
    seq = plan.training.seq_len
    # 3 x forward: 2 FLOPs per matmul parameter, and 4 q (s/2) for causal attention
    expected = 6 * n + 3 * m.layers * 4 * m.heads * m.head_dim * seq / 2
    assert flops.model_flops_per_token(shape, seq) == pytest.approx(expected, rel=1e-12)
    # Llama 3 405B at 8K: about 2.53e12 FLOPs per token (6 x 405e9 plus attention)
    assert flops.model_flops_per_token(shape, seq) == pytest.approx(2.53e12, rel=0.01)


def test_moe_counts_only_active_experts():
    plan = compile_path(str(ROOT / "specs" / "mixtral-8x7b-5d.par"), checks=False).plan
    shape = shape_of(plan)
    m = plan.model
    n = flops.matmul_parameters(shape)
    norms = (2 * m.layers + 1) * m.hidden
    assert n == m.active_parameters - m.vocab * m.hidden - norms


# ---------------------------------------------------------------------------------------------
# Collectives and where groups sit


def _local_by_enumeration(plan, axis: str, level: int) -> tuple[int, int]:
    group = plan.layout.group(axis, 0)
    return len(group), sum(1 for r in group if r // level == 0)


@pytest.mark.parametrize("layout,fold", [
    ("tp 8 x pp 4 x dp 4", ""),
    ("dp 4 x tp 8 x pp 4", ""),
    ("tp 2 x cp 2 x dp 16 x pp 4", "ep 8 over cp x dp"),
    ("dp 64 x pp 2", "ep 16 over dp"),
    ("tp 4 x ep 4 x dp 4", ""),
    ("pp 4 x tp 2 x dp 8", ""),
])
def test_group_placement_matches_the_ranks(layout, fold):
    model = "mixtral-8x7b" if "ep" in layout or fold else "llama3-8b"
    plan = plan_of(layout=layout, model=model, extra=fold, batch=1024)
    hw = timing.hardware_of(plan)
    geo = timing.geometry_of(plan, hw)
    for axis in ("tp", "pp", "cp", "ep"):
        size, local = _local_by_enumeration(plan, axis, hw.level)
        group = getattr(geo, axis)
        assert (group.size, group.local) == (size, local), axis


def test_a_ring_inside_a_node_runs_at_nvlink_speed():
    hw = timing.Hardware("hopper", 989e12, None, 3.35e12, intra=450e9, nic=50e9, level=8)
    link = timing.link(timing.Group(8, 8), hw, DEFAULT)
    s = 1e9
    # NCCL's ring: 2 (n - 1) steps (inside one node NCCL never picks its tree)
    expected = 2 * 7 / 8 * s / (450e9 * DEFAULT.bus_nvlink) + 2 * 7 * DEFAULT.latency_intra
    assert link.all_reduce(s) == pytest.approx(expected)
    assert link.all_gather(s) == pytest.approx(7 / 8 * s / (450e9 * DEFAULT.bus_nvlink) + 7 * DEFAULT.latency_intra)


def test_across_nodes_a_ring_gets_the_nics_of_its_gpus_in_a_node():
    hw = timing.Hardware("hopper", 989e12, None, 3.35e12, intra=450e9, nic=50e9, level=8)
    one = timing.link(timing.Group(64, 1), hw, DEFAULT)  # one rank per node: one NIC
    eight = timing.link(timing.Group(64, 8), hw, DEFAULT)  # eight per node: the node's eight NICs
    assert one.ring == pytest.approx(50e9 * DEFAULT.bus_network)
    assert eight.ring == pytest.approx(min(450e9 * DEFAULT.bus_nvlink, 8 * 50e9 * DEFAULT.bus_network))
    assert one.all_reduce(1e9) > 5 * eight.all_reduce(1e9)


def test_all_to_all_splits_near_and_far_traffic():
    hw = timing.Hardware("hopper", 989e12, None, 3.35e12, intra=450e9, nic=50e9, level=8)
    inside = timing.link(timing.Group(8, 8), hw, DEFAULT).all_to_all(1e9)
    across = timing.link(timing.Group(64, 8), hw, DEFAULT).all_to_all(1e9)
    assert inside == pytest.approx(7 / 8 * 1e9 / (450e9 * DEFAULT.bus_nvlink) + 7 * DEFAULT.latency_intra)
    assert across == pytest.approx(56 / 64 * 1e9 / (50e9 * DEFAULT.bus_network) + 63 * DEFAULT.latency_inter)


def test_tensor_parallelism_across_nodes_is_slower():
    fast = predict(layout="tp 8 x dp 8 x pp 2")
    slow = predict(layout="dp 8 x tp 8 x pp 2")
    assert slow.breakdown.exposed["tp"] > 5 * fast.breakdown.exposed["tp"]
    assert slow.step_seconds > fast.step_seconds


def test_a_faster_network_shortens_dp_exposure():
    plan = plan_of(layout="tp 8 x dp 16", model="llama3-70b", batch=64, extra="dp { sharding zero1 }")
    hw = timing.hardware_of(plan)
    shape, k, geo = shape_of(plan), knobs_of(plan), timing.geometry_of(plan, hw)
    slow = timing.step_time(shape, k, replace(hw, nic=12.5e9), geo)
    fast = timing.step_time(shape, k, hw, geo)
    assert slow.exposed["dp"] > fast.exposed["dp"]
    assert slow.sent["dp"] == fast.sent["dp"]


# ---------------------------------------------------------------------------------------------
# Bubble


def test_bubble_formulas_per_schedule():
    f = b = w = 1.0
    p = 8
    assert timing.bubble_seconds("1f1b", p, f, b, w) == 7 * 3
    assert timing.bubble_seconds("gpipe", p, f, b, w) == 7 * 3
    assert timing.bubble_seconds("interleaved-zb", p, f, b, w) == 7 * 1  # a third of 1F1B's
    assert timing.bubble_seconds("zbv", p, f, b, w) == 0
    assert timing.bubble_seconds("dualpipe-v", p, f, b, w) == 7 * 2
    assert timing.bubble_seconds("zbv", p, 1.0, 1.0, 2.0) == 0  # never negative
    assert timing.bubble_seconds("1f1b", 1, f, b, w) == 0


@pytest.mark.parametrize("schedule,v", [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2), ("interleaved-1f1b", 4)])
def test_bubble_fraction_is_p_minus_1_over_v_m(schedule, v):
    # 32 layers on 4 stages x v chunks divide evenly; 16 micro-batches
    extra = f"pp {{ schedule {schedule}, virtual-stages {v} }}" if v > 1 else f"pp {{ schedule {schedule} }}"
    p = predict(layout="tp 8 x pp 4 x dp 2", batch=32, extra=extra)
    b = p.breakdown
    assert b.microbatches == 16
    # the slowest rank holds the embedding or the output layer, so take its own per-micro-batch time
    assert b.bubble_fraction == pytest.approx(3 / (v * 16), rel=0.08)


@pytest.mark.parametrize("runtime", ["megatron", "torch"])
def test_zero_bubble_schedules_cut_the_bubble(runtime):
    """ZB-V's bubble (p - 1)(F + B - 2W) nears zero as B nears W. One tp collective per
    attention and FFN backward, as Megatron-LM and parc's job (torch's DTensor, each module's
    input a Replicate DTensor) both issue; eager PyTorch's element-wise backward bytes land on B,
    not W, which keeps the cut at about a quarter of 1F1B's."""
    common = dict(layout="tp 8 x pp 4 x dp 2", batch=32, sw=timing.Software(dp_runtime=runtime))
    one = predict(**common, extra="pp { schedule 1f1b }").breakdown
    zb = predict(**common, extra="pp { schedule interleaved-zb, virtual-stages 2 }").breakdown
    zbv = predict(**common, extra="pp { schedule zbv }").breakdown
    assert zb.bubble < one.bubble / 2
    assert zbv.bubble < one.bubble / 3


# ---------------------------------------------------------------------------------------------
# The step


@pytest.mark.parametrize("path", [p for p in SPECS if "search" not in p.name], ids=lambda p: p.stem)
def test_breakdown_sums_to_the_step(path):
    """Bookkeeping: the parts add up to the step. Its independent partner is
    tests/test_bounds.py, which holds the same steps to the datasheet's FLOPs, HBM and links."""
    plan = compile_path(str(path), checks=False).plan
    p = timing.predict(plan)
    b = p.breakdown
    parts = b.compute + b.recompute + b.bubble + b.optimizer + sum(b.exposed.values()) + b.offload + b.copies
    assert parts == pytest.approx(b.step, rel=1e-12)
    assert all(v >= 0 for v in b.exposed.values()) and all(v >= 0 for v in b.sent.values())
    assert p.tokens_per_second == pytest.approx(plan.training.tokens_per_step / b.step)
    assert p.tokens_per_second_per_gpu * plan.cluster.world_size == pytest.approx(p.tokens_per_second)
    assert p.mfu == pytest.approx(p.model_flops_per_gpu / p.peak)
    assert p.hfu >= p.mfu
    json_time, json_rate = p.time_json(), p.throughput_json()
    assert set(json_time["exposed_comm_seconds"]) == set(json_time["comm_bytes"]) == {"tp", "pp", "dp", "cp", "ep"}
    assert 0 < json_rate["mfu"] < 1


def test_holes_give_no_prediction():
    plan = compile_path(str(ROOT / "specs" / "llama3-70b-search.par"), checks=False).plan
    assert timing.predict(plan) is None


def test_recomputation_costs_time_in_order():
    none = predict(recompute="none")
    selective = predict(recompute="selective")
    full = predict(recompute="full")
    assert none.breakdown.recompute == 0
    assert 0 < selective.breakdown.recompute < full.breakdown.recompute
    assert none.step_seconds < selective.step_seconds < full.step_seconds
    # without recomputation the hardware runs the model's FLOPs plus FlashAttention's backward
    # recomputing the scores: 2.5x the attention core's forward instead of 2x (Dao 2023)
    plan = plan_of()
    shape = shape_of(plan)
    core = 4 * shape.q * 4096 / 2  # one token's causal attention core, forward, per layer
    assert none.hardware_flops_per_token - none.model_flops_per_token == pytest.approx(0.5 * shape.layers * core)
    # full recomputation repeats the forward: HFU ~ 4/3 MFU (the logits are not recomputed)
    assert 1.25 < full.hfu / full.mfu < 4 / 3


def test_megatron_selective_recomputes_the_attention_core():
    ours = predict(recompute="selective", seq=8192, batch=128)
    megatron = predict(recompute="selective", seq=8192, batch=128, sw=timing.Software(selective="attention-core"))
    assert megatron.hardware_flops_per_token > ours.hardware_flops_per_token


def test_sequence_parallelism_saves_memory_bound_time():
    """sp trades each all-reduce for a reduce-scatter and an all-gather (the same bytes) in
    Megatron-LM and in parc's job alike (torch's DTensor: each module's input gathered as a
    Replicate DTensor, its gradient reduce-scattered once; tests/e2e/test_collectives.py checks
    both layouts against the running job), and shards the norms' and residuals' memory-bound work."""
    for runtime in ("torch", "megatron"):
        sw = timing.Software(dp_runtime=runtime)
        on = predict(extra="tp { sequence-parallel on }", sw=sw)
        off = predict(extra="tp { sequence-parallel off }", sw=sw)
        assert on.breakdown.compute < off.breakdown.compute, runtime
        assert on.breakdown.sent["tp"] == pytest.approx(off.breakdown.sent["tp"], rel=0.05), runtime


def test_tp_overlap_hides_communication():
    plain = predict()
    overlapped = predict(sw=timing.Software(tp_overlap="all"))
    backward = predict(sw=timing.Software(tp_overlap="backward"))
    assert overlapped.breakdown.exposed["tp"] < backward.breakdown.exposed["tp"] < plain.breakdown.exposed["tp"]
    assert overlapped.breakdown.sent["tp"] == plain.breakdown.sent["tp"]


def test_more_micro_batches_shrink_the_bubble_fraction():
    small = predict(batch=64).breakdown
    large = predict(batch=256).breakdown
    assert large.microbatches == 4 * small.microbatches
    assert large.bubble_fraction == pytest.approx(small.bubble_fraction / 4, rel=1e-9)


def test_zero3_moves_more_bytes_than_zero1():
    megatron = timing.Software(dp_runtime="megatron")
    z1 = predict(layout="tp 8 x dp 16", extra="dp { sharding zero1 }", sw=megatron).breakdown
    z3 = predict(layout="tp 8 x dp 16", extra="dp { sharding zero3 }", sw=megatron).breakdown
    ddp = predict(layout="tp 8 x dp 16", extra="dp { sharding none }", sw=megatron).breakdown
    assert z3.sent["dp"] > z1.sent["dp"]
    # the traffic contract's figures (docs/time-model.md), written here by hand, not read from
    # the code: DDP all-reduces fp32 gradients (2 x 4 B per parameter), Megatron's zero1
    # reduce-scatters them (4 B) and gathers bf16 parameters (2 B); tests/test_bounds.py checks
    # every sharding
    assert ddp.sent["dp"] == pytest.approx(z1.sent["dp"] * 8 / 6, rel=1e-9)
    assert z3.optimizer < ddp.optimizer
    # parc's runtime (docs/runtime.md) is a distributed optimizer too: one reduce-scatter of the
    # fp32 gradient bucket (4 B) and one all-gather of the updated parameters in the compute
    # dtype (2 B): 6 B against DDP's 8
    ours = predict(layout="tp 8 x dp 16", extra="dp { sharding zero1 }").breakdown
    ours_ddp = predict(layout="tp 8 x dp 16", extra="dp { sharding none }").breakdown
    assert ours_ddp.sent["dp"] == pytest.approx(ours.sent["dp"] * 8 / 6, rel=1e-9)


def test_gradients_reduced_in_two_bytes_move_half_the_gradient_bytes():
    """Megatron-LM's fp16 runs reduce gradients in fp16; parc's runtime and bf16 Megatron in fp32."""
    layout, extra = "tp 8 x dp 16", "dp { sharding none }"
    fp32 = predict(layout=layout, extra=extra).breakdown
    fp16 = predict(layout=layout, extra=extra, sw=timing.Software(grad_bytes=2)).breakdown
    assert timing.PARC.grad_bytes == 4
    assert fp16.sent["dp"] == pytest.approx(fp32.sent["dp"] / 2, rel=1e-9)  # DDP: all-reduce of gradients only
    assert fp16.exposed["dp"] <= fp32.exposed["dp"]
    z1 = predict(layout=layout, extra="dp { sharding zero1 }",
                 sw=timing.Software(grad_bytes=2, dp_runtime="megatron")).breakdown
    assert z1.sent["dp"] == pytest.approx(fp16.sent["dp"], rel=1e-9)  # RS 2 B + AG 2 B = AR 2 x 2 B


def test_eager_kernels_slow_the_computation_not_the_communication():
    """parc's runtime (eager PyTorch) computes at `eager_efficiency` of the fused-kernel speed the
    GEMM constants were fitted on, but for the attention kernel, the same FlashAttention-2 in both
    on A100 and timed from its own published speed; its collectives are the same."""
    layout, extra = "tp 8 x dp 16", "dp { sharding zero1 }"
    eager = predict(layout=layout, extra=extra, gpu="a100-80gb").breakdown
    fused = predict(layout=layout, extra=extra, gpu="a100-80gb", sw=timing.Software(kernels="fused")).breakdown
    assert timing.PARC.kernels == "eager"
    # the computation but attention (and the loss, whose ops differ between the runtimes, below)
    # is slowed, and eager PyTorch's op-by-op rotary embedding and SwiGLU move more bytes: more
    # than the fused time slowed but for attention, within a few percent of it all slowed
    slowed_all = fused.compute / DEFAULT.eager_efficiency
    assert fused.compute + 0.8 * (slowed_all - fused.compute) < eager.compute < 1.1 * slowed_all
    assert eager.recompute == pytest.approx(fused.recompute / DEFAULT.eager_efficiency, rel=1e-9)
    assert eager.sent == fused.sent
    assert eager.step > fused.step


def test_parc_runtime_launches_a_kernel_per_local_expert():
    """parc's generated experts run one after another (a matmul per expert and matrix, and its
    activation kernels); Megatron-LM's grouped GEMM is one kernel per matrix for all of them."""
    plan = plan_of(layout="dp 8", model="mixtral-8x7b")
    s, hw = shape_of(plan), timing.hardware_of(plan)
    case = timing.LayerCase(moe=True, tp=1, sp=False, cp=1, flavour="ring", seq=4096, micro=1, ep=2,
                            precision="bf16", attention="flash", kernels="eager")
    eager = timing.layer_work(s, case, hw, DEFAULT)
    fused = timing.layer_work(s, replace(case, kernels="fused"), hw, DEFAULT)
    local, up = 8 // 2, 2  # 4 experts on each of the 2 expert ranks; SwiGLU: gate and up
    # at least the extra launches; more where one expert's tiles fill the SMs' waves worse than
    # the grouped kernel's pooled tiles
    launches = (local * up - 1 + local - 1) * DEFAULT.kernel_overhead
    assert launches * 0.999 <= eager.gemm - fused.gemm
    # the loop's activation kernels, plus eager PyTorch's op-by-op rotary embedding and SwiGLU
    assert eager.memory_f - fused.memory_f > local * up * DEFAULT.kernel_overhead
    dense = [timing.layer_work(s, replace(case, moe=False, kernels=k), hw, DEFAULT) for k in ("eager", "fused")]
    # dense layers differ only in the element-wise bytes of eager PyTorch's rotary embedding and
    # SwiGLU (the attention kernel is SDPA's in both here)
    same = {"memory_f": 0.0, "memory_b": 0.0, "selective_elementwise": 0.0, "selective_torchtitan": 0.0}
    assert replace(dense[0], **same) == replace(dense[1], **same)


def test_the_loss_moves_the_bytes_of_each_runtimes_ops():
    """Per logit: Megatron-LM's vocab-parallel cross-entropy 38 + 14 bytes, torch's
    F.cross_entropy 22 + 26, loss_parallel's separate ops 38 + 38; all far above one fused pass."""
    assert timing.cross_entropy_bytes("fused", 8) == (38, 14)
    assert timing.cross_entropy_bytes("eager", 1) == (22, 26)
    assert timing.cross_entropy_bytes("eager", 2) == (38, 38)
    plan = plan_of(layout="dp 8")
    s, hw = shape_of(plan), timing.hardware_of(plan)
    fused = timing.output_work(s, timing.TokenSplit(1, False, 1, 4096, 1), 131072, "bf16", "fused", hw, DEFAULT)
    eager = timing.output_work(s, timing.TokenSplit(1, False, 1, 4096, 1), 131072, "bf16", "eager", hw, DEFAULT)
    logits, norm = 4096 * 131072, 2 * 2 * 4096 * s.hidden  # the final norm reads and writes h
    hbm = hw.hbm * DEFAULT.hbm_efficiency
    assert fused.memory_f == pytest.approx((38 * logits + norm) / hbm, rel=1e-9)
    assert eager.memory_b == pytest.approx((26 * logits + 2 * norm) / hbm, rel=1e-9)


def test_fp8_is_faster_but_not_twice():
    """Under a runtime with fp8 linear layers (Transformer Engine, torchao) the linear GEMMs run
    at the fp8 peak; attention and the output layer stay bf16, so less than twice as fast."""
    linear = timing.Software(fp8="linear")
    bf16 = predict(model="llama3-70b", layout="tp 8 x pp 8 x dp 2", batch=64, sw=linear)
    fp8 = predict(model="llama3-70b", layout="tp 8 x pp 8 x dp 2", batch=64, precision="fp8", sw=linear)
    assert bf16.breakdown.compute / 2 < fp8.breakdown.compute < bf16.breakdown.compute
    assert fp8.peak == 2 * bf16.peak or fp8.peak == pytest.approx(1979e12)


def test_parc_runtime_runs_an_fp8_spec_in_bf16():
    """parc's generated job has no fp8 matmuls (backends/torch/runtime.py says so when it
    compiles an fp8 spec): its computation takes as long as under bf16."""
    assert timing.PARC.fp8 == "none"
    bf16 = predict(model="llama3-70b", layout="tp 8 x pp 8 x dp 2", batch=64)
    fp8 = predict(model="llama3-70b", layout="tp 8 x pp 8 x dp 2", batch=64, precision="fp8")
    assert fp8.breakdown.compute == pytest.approx(bf16.breakdown.compute, rel=1e-12)


def test_longer_sequences_cost_more_attention_per_token():
    short = predict(seq=2048, batch=512, micro=8)  # the same tokens per micro-batch and micro-batches
    long = predict(seq=16384, batch=64, micro=1)
    assert long.tokens_per_second < short.tokens_per_second
    assert long.model_flops_per_token > short.model_flops_per_token


def test_context_parallel_ring_hides_behind_long_attention():
    p = predict(layout="tp 8 x cp 2 x dp 4", seq=65536, batch=8, extra="cp { flavour ring }")
    assert p.breakdown.sent["cp"] > 0
    # each step's K/V block arrives while a block computes: only step latencies show, and in
    # backward the last dK/dV shift home, after the last block (about 1 % here)
    assert p.breakdown.exposed["cp"] < 2e-2 * p.step_seconds
    gathered = predict(layout="tp 8 x cp 2 x dp 4", seq=65536, batch=8, extra="cp { flavour all-gather }")
    assert gathered.breakdown.exposed["cp"] > 0


def test_context_parallel_ring_shows_at_short_sequences_across_nodes():
    """The other side of the ring: across nodes (dp 8 fills each node, so every cp hop crosses a
    NIC) and at 8K tokens, a K/V block (8 MB at Llama 3 8B's 1,024 K/V width and 2,048 tokens per
    rank: ~180 us over a 400 Gb/s NIC) takes longer to arrive than a block of attention takes to
    compute (~34 GFLOP: ~60 us), and the excess shows; it shrinks as the sequence grows."""
    exposed = []
    for seq in (8192, 32768, 131072):
        p = predict(layout="dp 8 x cp 4", seq=seq, batch=8, extra="cp { flavour ring }")
        assert p.breakdown.sent["cp"] > 0
        exposed.append(p.breakdown.exposed["cp"] / p.step_seconds)
    assert exposed[0] > 0.01
    assert exposed == sorted(exposed, reverse=True)


def test_dualpipe_hides_expert_all_to_all():
    common = dict(model="mixtral-8x7b", layout="dp 16 x pp 4", batch=256, seq=4096)
    plain = predict(**common, extra="ep 8 over dp\npp { schedule 1f1b }").breakdown
    dual = predict(**common, extra="ep 8 over dp\npp { schedule dualpipe-v }").breakdown
    assert plain.exposed["ep"] > 0 and plain.sent["ep"] > 0
    assert dual.exposed["ep"] < plain.exposed["ep"]


def test_faster_gpus_are_faster():
    a100 = predict(gpu="a100-80gb")
    h100 = predict(gpu="h100-sxm")
    b200 = predict(gpu="b200")
    assert a100.step_seconds > h100.step_seconds > b200.step_seconds


def test_unfused_attention_is_slower():
    flash = predict(seq=8192, batch=64)
    unfused = predict(seq=8192, batch=64, sw=timing.Software(attention="unfused"))
    assert unfused.step_seconds > flash.step_seconds
    assert unfused.hardware_flops_per_token > flash.hardware_flops_per_token  # the masked half runs


def test_korthikanti_layer_timings():
    """One 22B layer on 8 A100s, Korthikanti et al. 2022 Table 4 (not fitted): within 15 %."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fidelity

    table = fidelity.layer_check(DEFAULT)
    for line in table.splitlines()[2:]:
        _, measured, predicted, _ = line.split("|")[1:]
        for m, p in zip(measured.split("/"), predicted.split("/"), strict=True):
            assert abs(float(p) / float(m) - 1) < 0.15, line


def test_search_can_reuse_pieces_between_candidates():
    """A candidate that changes only the batch reuses the layer pieces (cached by their inputs)."""
    plan = plan_of()
    shape, k, hw = shape_of(plan), knobs_of(plan), timing.hardware_of(plan)
    geo = timing.geometry_of(plan, hw)
    timing.clear_caches()
    timing.step_time(shape, k, hw, geo)
    before = timing.layer_work.cache_info().misses
    timing.step_time(shape, replace(k, microbatches=k.microbatches * 2), hw, geo)
    assert timing.layer_work.cache_info().misses == before


def test_rank_times_key_drops_only_what_the_rank_times_do_not_read():
    """`rank_times` keys its cache on `per_rank_knobs`: knobs that differ only outside
    `RANK_KNOBS` (the dp degree and sharding, the micro-batch count, the optimizer, the memory
    model's fields) share one entry and one key object, their times computed afresh (uncached) equal
    to the bit; sequence parallelism counts only where it is in effect (tp > 1)."""
    plan = plan_of(layout="tp 2 x pp 2 x dp 2 x ep 2", model="mixtral-8x7b")
    shape, k, hw = shape_of(plan), knobs_of(plan), timing.hardware_of(plan)
    geo = timing.geometry_of(plan, hw)
    others = dict(dp=16, ep_axis=not k.ep_axis, ep_over_tp=not k.ep_over_tp, sharding="zero3", hsdp_shard=4,
                  bucket=123, microbatches=7, device="cpu", optimizer="sgd", pp_receives="kept",
                  model_code="torchtitan", offload_layers=3, grad_bytes=2, fp8_recipe="mxfp8",
                  fp8_transposed=False, fp8_all_gather=True, fp8_params=False, recompute_modules=("moe_act",),
                  loss_kernel="xentropy")
    names = {f.name for f in dataclasses.fields(k) if f.init}
    assert set(others) | set(timing.RANK_KNOBS) | {"sequence_parallel"} == names  # every field placed
    assert not set(others) & set(timing.RANK_KNOBS)
    key = timing.per_rank_knobs(k)
    assert key == Knobs(tp=k.tp, pp=k.pp, dp=1, cp=k.cp, ep=k.ep, virtual_stages=k.virtual_stages,
                        schedule=k.schedule, split=k.split, sequence_parallel=k.sp, cp_flavour=k.cp_flavour,
                        seq=k.seq, micro_batch=k.micro_batch, precision=k.precision, recompute=k.recompute,
                        recompute_layers=k.recompute_layers, runtime=k.runtime)
    fresh = timing._rank_times.__wrapped__
    want = fresh(shape, key, hw, geo, DEFAULT, timing.PARC)
    checked = 0
    for name, value in others.items():
        changed = replace(k, **{name: value})
        assert timing.per_rank_knobs(changed) is key, name
        assert fresh(shape, replace(key, **{name: value}), hw, geo, DEFAULT, timing.PARC) == want, name
        checked += 1
    assert checked == len(others)
    assert timing.per_rank_knobs(replace(k, seq=2 * k.seq)) != key
    one = replace(k, tp=1, ep=1)
    assert timing.per_rank_knobs(one) == timing.per_rank_knobs(replace(one, sequence_parallel=not one.sequence_parallel))
    timing.clear_caches()
    timing.rank_times(shape, k, hw, geo, DEFAULT, timing.PARC)
    misses = timing._rank_times.cache_info().misses
    timing.rank_times(shape, replace(k, dp=8, sharding="zero1", microbatches=3), hw, geo, DEFAULT, timing.PARC)
    assert timing._rank_times.cache_info().misses == misses


def test_layer_case_builds_what_a_generated_dataclass_builds():
    """`LayerCase`'s own `__init__` (slot setters, for speed) stores what the generated one
    would: each argument in its field, by position or keyword, the declared defaults, the hash
    of the fields' tuple, equality on the fields, frozen; `dataclasses.replace` rebuilds it."""
    names = [f.name for f in dataclasses.fields(timing.LayerCase) if f.init]
    assert names == ["moe", "tp", "sp", "cp", "flavour", "seq", "micro", "ep", "precision", "attention", "kernels",
                     "balanced", "cp_runtime", "fp8_scaling", "routing_load", "expert_bias", "expert_clamp",
                     "rope_unfused", "dispatcher", "fused_grouped_mlp", "shared_recomputed", "original_input",
                     "fp8_dispatch"]
    Reference = dataclasses.make_dataclass(
        "Reference", [(f.name, f.type, f) for f in dataclasses.fields(timing.LayerCase) if f.init],
        frozen=True)  # the generated __init__ over the same fields and defaults
    values = (True, 4, True, 2, "all-gather", 8192, 3, 8, "fp8", "flash-te", "fused", True, "torch", "dynamic", 1.5,
              True, True, True, "hybridep", True, True, False, True)
    case = timing.LayerCase(*values)
    reference = Reference(*values)
    assert tuple(getattr(case, n) for n in names) == dataclasses.astuple(reference) == values
    assert timing.LayerCase(**dict(zip(names, values, strict=True))) == case
    assert hash(case) == hash(values) == hash(timing.LayerCase(*values))
    short = timing.LayerCase(*values[:11])
    assert tuple(getattr(short, n) for n in names) == dataclasses.astuple(Reference(*values[:11]))
    assert short != case and replace(short, **dict(zip(names[11:], values[11:], strict=True))) == case
    assert hash(replace(case, tp=8)) == hash(values[:1] + (8,) + values[2:])
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.tp = 8  # type: ignore[misc]


def test_layer_case_of_knobs_runs_the_software_s_choices():
    """`LayerCase.of`: the GEMMs in the precision the runtime runs (parc's job runs an fp8 spec
    in bf16; Transformer Engine's linear layers in fp8), sequence parallelism only with tp, and
    the software's attention, kernels, routing and cp exchange, written out by hand."""
    k = Knobs(tp=1, pp=1, dp=8, cp=2, ep=4, sequence_parallel=True, cp_flavour="all-to-all", seq=8192,
              micro_batch=2, precision="fp8")
    assert timing.LayerCase.of(k, True, timing.PARC) == timing.LayerCase(
        moe=True, tp=1, sp=False, cp=2, flavour="all-to-all", seq=8192, micro=2, ep=4, precision="bf16",
        attention="flash", kernels="eager", balanced=False, cp_runtime="parc", fp8_scaling="delayed",
        routing_load=0.0)
    te = timing.Software(attention="flash-te", kernels="fused", fp8="linear", fp8_scaling="current",
                         context_parallel="te", balanced_routing=True, routing_load=1.25, expert_bias=True,
                         expert_clamp=True, rope_unfused=True)
    assert timing.LayerCase.of(replace(k, tp=2), False, te) == timing.LayerCase(
        moe=False, tp=2, sp=True, cp=2, flavour="all-to-all", seq=8192, micro=2, ep=4, precision="fp8",
        attention="flash-te", kernels="fused", balanced=True, cp_runtime="te", fp8_scaling="current",
        routing_load=1.25, expert_bias=True, expert_clamp=True, rope_unfused=True)
    # Transformer Engine's fused grouped MLP: an MoE layer's fp8 GEMMs under MXFP8 only
    fuser = replace(te, fp8_scaling="mxfp8", fused_grouped_mlp=True)
    assert timing.LayerCase.of(k, True, fuser).fused_grouped_mlp
    assert not timing.LayerCase.of(k, False, fuser).fused_grouped_mlp
    assert not timing.LayerCase.of(k, True, replace(fuser, fp8_scaling="current")).fused_grouped_mlp
    assert not timing.LayerCase.of(replace(k, precision="bf16"), True, fuser).fused_grouped_mlp
    assert not timing.LayerCase.of(k, True, replace(te, fp8_scaling="mxfp8")).fused_grouped_mlp


def test_time_model_does_not_import_torch_or_numpy():
    code = ("import sys; from parc.pipeline import compile_path; from parc import timing; "
            "timing.predict(compile_path('specs/llama3-405b.par').plan); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_deterministic():
    a = predict().time_json()
    timing.clear_caches()
    b = predict().time_json()
    assert a == b
    assert all(math.isfinite(v) for v in a["exposed_comm_seconds"].values())


@pytest.mark.parametrize("path", [p for p in SPECS if "search" not in p.name], ids=lambda p: p.stem)
def test_rank_loads_agree_with_the_memory_model(path):
    """Layers and parameters per pipeline rank are the memory model's (one definition of stages)."""
    from parc.memory.model import rank_params

    plan = compile_path(str(path), checks=False).plan
    shape, k = shape_of(plan), knobs_of(plan)
    loads = timing.rank_loads(shape, timing.Chunking.of(k), k.recompute, k.recompute_layers)
    ranks = rank_params(shape, k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split, k.runtime)
    assert len(loads) == len(ranks)
    for load, rank in zip(loads, ranks, strict=True):
        assert sum(count for _, _, count in load.pieces) == rank.layers
        assert load.params_dense == rank.params.linear + rank.params.other
        assert load.params_expert == rank.params.expert
        assert load.chunks == len(rank.chunks)


def test_the_largest_layer_count_is_predicted():
    """Layers are capped at 65,536 (E0207 beyond); the time model counts chunk kinds in closed
    form, so the largest accepted count is predicted like any other (bounded time is
    tests/test_limits.py's subject)."""
    plan = plan_of(model="llama3-8b { layers 65536 }", layout="tp 8 x pp 4 x dp 4", recompute="full 3")
    p = timing.predict(plan)
    assert p is not None and math.isfinite(p.step_seconds)
    assert "E0207" in {d.code for d in compile_text(
        "tp 8 x dp 2\nmodel llama3-8b { layers 100000000 }\nhardware { gpu h100-sxm }\n"
        "train { seq 8192, global-batch 64 }\n", "x.par").diagnostics}


@pytest.mark.parametrize("recompute,n", [("full", 3), ("full", None), ("selective", None), ("none", None),
                                         ("full", 100)])
def test_chunk_kinds_follow_the_memory_models_recompute_rule(recompute, n):
    """`full N` recomputes the first N layers of each chunk: counted in closed form here, walked
    layer by layer by the memory model's `layer_mode`."""
    from parc.memory.model import layer_mode

    plan = compile_path(str(ROOT / "specs" / "deepseek-v3-like.par"), checks=False).plan
    shape = shape_of(plan)
    for first, layers in ((0, 5), (2, 4), (7, 1), (10, 20)):
        walked: dict = {}
        for i in range(layers):
            key = (shape.is_moe(first + i), layer_mode(recompute, n, i))
            walked[key] = walked.get(key, 0) + 1
        counted: dict = {}
        for key, count in timing._chunk_kinds(shape, first, layers, recompute, n):
            if count:
                counted[key] = counted.get(key, 0) + count
        assert counted == walked, (first, layers)


def test_ring_attention_pays_each_ring_step():
    """Ring attention launches a kernel per ring step (forward and backward) and merges each
    step's output by its log-sum-exp: at a fixed sequence, each GPU's attention time times cp
    grows with cp (it would be flat if the kernel were charged once, as the issue found), while
    the all-gather flavour's one kernel keeps it flat up to its gathered K/V."""
    plan = plan_of(layout="cp 8", seq=8192)
    s, hw = shape_of(plan), timing.hardware_of(plan)

    def per_sequence(cp, flavour):
        w = timing.layer_work(s, timing.LayerCase(moe=False, tp=1, sp=False, cp=cp, flavour=flavour, seq=8192,
                                                  micro=1, ep=1, precision="bf16", attention="flash",
                                                  kernels="eager"), hw, DEFAULT)
        return cp * (w.attention_f + w.attention_b)

    ring = [per_sequence(cp, "ring") for cp in (1, 2, 4, 8)]
    assert ring == sorted(ring) and ring[-1] > 1.02 * ring[0]
    # each extra ring step costs at least a kernel launch each way
    assert ring[-1] - ring[0] >= 8 * (8 - 1) * 2 * DEFAULT.kernel_overhead * 0.999


def test_moe_experts_are_split_over_tp_ranks_by_tokens():
    """Each tp rank routes its own 1/tp of the tokens (with or without sequence parallelism), so
    a MoE layer's GEMMs per rank are about 1/tp of tp 1's (the attention's by its heads, the
    experts' by their tokens): summed over the tp ranks, within what smaller GEMMs and the
    fixed launch costs add; before, without sequence parallelism, every tp rank ran every token
    through its experts."""
    plan = plan_of(layout="tp 2 x dp 4", model="mixtral-8x7b")
    s, hw = shape_of(plan), timing.hardware_of(plan)

    def gemm(tp, sp):
        return timing.layer_work(s, timing.LayerCase(moe=True, tp=tp, sp=sp, cp=1, flavour="ring", seq=4096,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused"), hw, DEFAULT).gemm

    assert gemm(2, False) == pytest.approx(gemm(2, True), rel=1e-12)  # sp changes nothing here
    assert gemm(1, False) <= 2 * gemm(2, False) < 1.3 * gemm(1, False)
    assert gemm(1, False) <= 4 * gemm(4, False) < 2 * gemm(1, False)  # 256-token expert GEMMs


def test_runtime_work_is_slowed_then_dispatched_to_the_bit():
    """`timing.runtime_work`, the one entry the search and `rank_times` share for a layer's
    runtime work, is `slowed`, then (MoE) `dispatched`: every field equal (dataclass
    equality, floats to the bit) to the two steps', for dense and MoE layers of Mixtral and
    DeepSeek, over tp, sp, cp, micro-batches, ep, and every runtime switch that either step
    reads (eager or fused kernels, eager efficiency 1, DeepEP, the host's sync, a host-bound
    layer)."""
    # a host 10x slower per op than parc's figure: the layers' launches outlast their GPU time,
    # so the stall and the paced backward read the slowed forward and backward
    softwares = [timing.Software(kernels=kernels, ep_dispatcher=dispatcher, moe_host_sync=sync, host_op_seconds=op)
                 for kernels in ("eager", "fused") for dispatcher in ("all-to-all", "deepep", "hybridep")
                 for sync in (True, False) for op in (timing.Software().host_op_seconds, 1e-4)]
    constants = [DEFAULT, replace(DEFAULT, eager_efficiency=1.0)]
    compared = 0
    for model in ("mixtral-8x7b", "deepseek-v3-like"):
        plan = plan_of(layout="dp 8", model=model)
        s, hw = shape_of(plan), timing.hardware_of(plan)
        for moe in (False, True):
            for tp, sp, cp, micro, ep in ((1, False, 1, 1, 1), (2, True, 2, 2, 4), (4, False, 1, 3, 8),
                                          (8, True, 4, 1, 2), (1, False, 8, 16, 64)):
                for sw in softwares:
                    for c in constants:
                        w = timing.layer_work(s, timing.LayerCase(moe=moe, tp=tp, sp=sp, cp=cp, flavour="ring",
                                                                  seq=4096, micro=micro, ep=ep, precision="bf16",
                                                                  attention="flash", kernels=sw.kernels), hw, c)
                        two = timing.slowed(w, sw, c)
                        if moe:
                            two = timing.dispatched(two, s, hw, sw)
                        assert timing.runtime_work(w, moe, s, hw, sw, c) == two
                        compared += 1
    assert compared == 2 * 2 * 5 * len(softwares) * len(constants)


def test_dp_case_is_its_fields_tuple():
    """`DpCase` (a named tuple): its fields in this order, by position or keyword, hashed and
    compared as the plain tuple of its values, immutable."""
    names = ["params_dense", "params_expert", "layers", "moe_layers", "chunks", "blocks_dense", "blocks_expert",
             "params_root", "microbatches", "sharding", "pp", "bucket", "grad", "runtime", "params_other", "gather",
             "roots"]
    assert list(timing.DpCase._fields) == names
    values = (1000, 400, 8, 4, 2, (((10, 3),), ((10, 5),)), (((7, 4),),), 30, 16, "zero1", 4, 0, 4, "torch", 40, 2, 2)
    case = timing.DpCase(*values)
    assert tuple(getattr(case, n) for n in names) == values
    assert timing.DpCase(**dict(zip(names, values, strict=True))) == case
    assert hash(case) == hash(values)
    assert case._replace(pp=8) == values[:10] + (8,) + values[11:]
    with pytest.raises(AttributeError):
        case.pp = 8  # type: ignore[misc]


def test_dp_ledger_folds_the_experts_and_ignores_the_seconds():
    """`dp_ledger` under parc's runtime without tp and ep reduces the routed experts with their
    layers (`experts_folded`): DDP's one all-reduce per FSDP unit carries grad x (dense + expert)
    bytes, by hand; with ep 2 the experts are their own set. Ranks that differ only in seconds
    share the cached ledger (`DpCase` reads no seconds)."""
    lk = timing.Link(size=8, ring=1e9, near=1e9, far=1e9, local=8, latency=0.0)
    r = timing.RankTimes(forward=1.0, backward_input=1.0, backward_weight=1.0, recompute=0.0,
                         exposed_f=(0.0,) * 4, exposed_b=(0.0,) * 4, sent=(0.0,) * 4,
                         params_dense=1000, params_expert=600, layers=3, moe_layers=3)
    k = Knobs(tp=1, pp=1, dp=8, ep=1, microbatches=4)
    links = timing.DpLinks(lk, lk, lk, lk)
    folded = timing.dp_ledger(r, k, links, 4, "torch")
    assert [(c.kind, c.payload * c.count, c.window) for c in folded] == [("all_reduce", 4 * 1600, "last_backward")]
    assert timing.dp_ledger(replace(r, forward=2.0, recompute=0.5), k, links, 4, "torch") is folded
    apart = timing.dp_ledger(r, replace(k, ep=2), links, 4, "torch")
    assert sorted(c.payload * c.count for c in apart) == [4 * 600, 4 * 1000]


def test_token_split_keys_the_ends_work_on_its_fields():
    """`TokenSplit` hashes and compares as its fields' tuple; the ends' work of one split
    is one cached object whichever layout asks, and the output layer's logits GEMM reads the
    tokens on one rank as seq x micro / cp (8,192 x 2 / 4 = 4,096: the same as cp 1, micro 1,
    seq 4,096), by hand."""
    split = timing.TokenSplit(4, True, 4, 8192, 2)
    assert hash(split) == hash((4, True, 4, 8192, 2)) and split == timing.TokenSplit(4, True, 4, 8192, 2)
    with pytest.raises(AttributeError):
        split.tp = 8  # type: ignore[misc]
    plan = plan_of(layout="dp 8")
    s, hw = shape_of(plan), timing.hardware_of(plan)
    out = timing.output_work(s, split, 131072, "bf16", "fused", hw, DEFAULT)
    assert timing.output_work(s, timing.TokenSplit(4, True, 4, 8192, 2), 131072, "bf16", "fused", hw, DEFAULT) is out
    same_tokens = timing.output_work(s, timing.TokenSplit(4, True, 1, 4096, 1), 131072, "bf16", "fused", hw, DEFAULT)
    assert out == same_tokens
    assert out != timing.output_work(s, timing.TokenSplit(4, True, 1, 8192, 1), 131072, "bf16", "fused", hw, DEFAULT)


def test_chunking_of_knobs_reads_the_ranks_cut_and_nothing_else():
    """`Chunking.of`: tp, ep, pp, the virtual stages, schedule, split and runtime, written out by
    hand; layouts that differ only in dp, cp, sequence or micro-batch share one chunking, so
    `rank_loads` returns them one cached tuple."""
    k = Knobs(tp=2, pp=4, dp=8, cp=2, ep=4, virtual_stages=2, schedule="interleaved-1f1b", split=None, seq=8192,
              runtime="megatron")
    chunking = timing.Chunking.of(k)
    assert chunking == timing.Chunking(tp=2, ep=4, pp=4, v=2, schedule="interleaved-1f1b", split=None,
                                       runtime="megatron")
    assert hash(chunking) == hash((2, 4, 4, 2, "interleaved-1f1b", None, "megatron"))
    assert timing.Chunking.of(replace(k, dp=64, cp=1, seq=4096, micro_batch=4)) == chunking
    assert timing.Chunking.of(replace(k, virtual_stages=3)) != chunking
    shape = shape_of(plan_of(layout="dp 8"))
    loads = timing.rank_loads(shape, chunking, "full", None)
    assert timing.rank_loads(shape, timing.Chunking.of(replace(k, dp=2, seq=2048)), "full", None) is loads
    assert len(loads) == 4 and all(load.chunks == 2 for load in loads)


def test_more_nic_traffic_beside_the_data_parallel_calls_never_shows_less():
    """`dp_window_exposure` against the other axes' NIC time in its windows: the window left to hide
    the calls shrinks, the units' computation (the pipeline's fill) does not, so the exposure never
    falls as that time grows (search's bound reads the exposure without it as the least)."""
    import random

    rng = random.Random(14)
    windows = ("forward", "after_step", "backward", "last_backward")
    checked = 0
    for _ in range(2000):
        busy = {w: rng.choice([0.0, rng.uniform(0, 2)]) for w in windows}
        occupied = {w: busy[w] * rng.uniform(0, 0.3) for w in windows}
        on_nic = {w: rng.random() < 0.7 for w in windows}
        units = (rng.choice([0, 1, 4, 81]), rng.choice([0, 1, 4, 81]), rng.choice([0, 1, 8]))
        packed = (busy, on_nic, units, {}, occupied)
        m, forward, back = rng.choice([1, 4, 32]), rng.uniform(0.01, 2), rng.uniform(0.01, 4)
        taken = sorted(rng.uniform(0, 3) for _ in range(4))
        shown = [timing.dp_window_exposure(packed, m, forward, back, (t, t * 1.5)) for t in taken]
        assert shown == sorted(shown), (shown, taken)
        # and never more than the calls take: each micro-batch's, the once-per-step ones, and the
        # post-step gathers' fill (at most all of them)
        most = m * (busy["forward"] + busy["backward"]) + 2 * (busy["after_step"] + busy["last_backward"])
        assert shown[-1] <= most + 1e-12, (shown[-1], most)
        checked += 1
    assert checked == 2000
