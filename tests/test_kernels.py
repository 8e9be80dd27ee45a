"""The kernel models of `parc.kernels` against published kernel measurements and hand-computed
cases: the attention curves against the FlashAttention papers' figures (transcribed in
benchmarks/data/attention_kernels.yaml, which the code does not read), wave quantisation against
counted tiles, and the step time's growth with sequence length against attention's FLOPs at the
published kernel speed."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from parc import flops, kernels, timing
from parc.calibration import DEFAULT
from parc.memory.inputs import shape_of
from parc.pipeline import compile_text

from .conftest import load_yaml

DATA = load_yaml((Path(__file__).resolve().parent.parent / "benchmarks" / "data"
                       / "attention_kernels.yaml").read_text())
CURVES = {"fa2": kernels.FA2_HOPPER, "cudnn": kernels.CUDNN_HOPPER}
H100 = DATA["peaks"]["h100"]


def _published(head_dims=(64, 128)):
    rows = [c for c in DATA["curves"] if c["gpu"] == "h100" and c["head_dim"] in head_dims]
    assert len(rows) >= 4
    return rows


def test_attention_curves_reproduce_the_published_kernel_speeds():
    """Every published bar (head dim 64 and 128, forward and backward, with and without the
    causal mask) within 10 %; head dim 256, which the model takes as 128, within 20 %."""
    worst = 0.0
    for curve in _published():
        model = CURVES[curve["kernel"]]
        for s, tflops in zip(curve["seq"], curve["tflops"], strict=True):
            e = model.efficiency(s, curve["head_dim"], curve["causal"], curve["direction"] == "backward")
            worst = max(worst, abs(e * H100 / tflops - 1))
    assert worst < 0.10
    for curve in _published((256,)):
        model = CURVES[curve["kernel"]]
        for s, tflops in zip(curve["seq"], curve["tflops"], strict=True):
            e = model.efficiency(s, 256, curve["causal"], False)
            assert e * H100 == pytest.approx(tflops, rel=0.20)


def test_attention_curves_rise_with_sequence_as_published():
    """Not flat: for each published curve the model's 16k / 512 speed ratio is within 15 % of the
    published one, and the published ones rise by at least 10 % (the causal ones by 50 %)."""
    for curve in _published():
        model = CURVES[curve["kernel"]]
        causal, backward, d = curve["causal"], curve["direction"] == "backward", curve["head_dim"]
        published = curve["tflops"][-1] / curve["tflops"][0]
        predicted = (model.efficiency(curve["seq"][-1], d, causal, backward)
                     / model.efficiency(curve["seq"][0], d, causal, backward))
        assert published > (1.5 if causal else 1.1)
        assert predicted == pytest.approx(published, rel=0.15)


def test_backward_is_slower_than_forward_and_causal_short_sequences_slowest():
    for model in CURVES.values():
        assert model.efficiency(4096, 128, False, True) < model.efficiency(4096, 128, False, False)
        assert model.efficiency(512, 128, True, False) < 0.75 * model.efficiency(512, 128, False, False)


def test_ampere_plateaus_are_the_flashattention2_papers():
    """Dao 2023: up to 73 % of A100 peak forward, 63 % backward (16k keys, head dim 128)."""
    a100 = kernels.attention_curve("sdpa", "ampere")
    assert a100.efficiency(16384, 128, False, False) == pytest.approx(0.73, rel=1e-9)
    assert a100.efficiency(16384, 128, False, True) == pytest.approx(0.63, rel=1e-9)
    assert kernels.attention_curve("te", "ampere") is a100  # Transformer Engine runs FA2 on A100
    assert kernels.attention_curve("te", "hopper") is kernels.CUDNN_HOPPER


def test_wave_quantisation_hand_counted():
    """133 tiles of 128 x 128 on 132 SMs: two waves for 1.008 waves of work; 132 tiles: one."""
    assert kernels.wave_efficiency(7 * 128, 19 * 128, 132) == pytest.approx(133 / 264)
    assert kernels.wave_efficiency(11 * 128, 12 * 128, 132) == pytest.approx(1.0)
    # a partial tile is a whole tile: 129 rows take two tile rows
    assert kernels.wave_efficiency(129, 128, 132) == pytest.approx(2 / 132)
    # eight experts' grouped GEMM pools its tiles: 8 x 16 = 128 tiles in one wave of 132
    assert kernels.wave_efficiency(512, 512, 132, groups=8) == pytest.approx(128 / 132)


def _plan(seq: int, micro: int):
    text = "\n".join([
        "dp 8 on nodes(8 gpus, nvlink)", "model llama3-8b", "hardware { gpu h100-sxm }",
        "train {", f"  seq {seq}, global-batch {8 * micro}, micro-batch {micro}",
        "  precision bf16, optimizer adamw, recompute none", "}", "dp { sharding zero3 }"]) + "\n"
    compiled = compile_text(text, path="seq.par")
    assert compiled.plan is not None, compiled.diagnostics
    return compiled.plan


def test_fsdp_step_grows_with_sequence_as_attention_flops_at_published_speed_say():
    """Llama 3 8B, FSDP on one H100 node, 16k tokens per GPU per step either as 8 x 2k or 1 x 16k:
    the GEMMs, norms and traffic are the same; the step grows by the extra attention FLOPs at
    FlashAttention-2's published speed (causal, head dim 128; the backward's causal speed as the
    unmasked backward times the forward's causal-to-unmasked ratio) times the training runs'
    `attention_sustained` (a fitted global constant, docs/time-model.md), within 15 %."""
    short, long = _plan(2048, 8), _plan(16384, 1)
    shape = shape_of(long)
    grow = timing.predict(long).breakdown.step - timing.predict(short).breakdown.step

    def published(direction, causal, seq):
        for c in DATA["curves"]:
            if (c["kernel"], c["gpu"], c["direction"], c["causal"], c["head_dim"]) == (
                    "fa2", "h100", direction, causal, 128):
                return c["tflops"][c["seq"].index(seq)] * 1e12
        raise AssertionError((direction, causal, seq))

    def seconds(seq, micro):
        tokens = seq * micro
        fwd = shape.layers * tokens * 4 * shape.q * seq / 2  # causal: half the square
        causal_ratio = published("forward", True, seq) / published("forward", False, seq)
        return (fwd / published("forward", True, seq)
                + flops.FLASH_BACKWARD * fwd / (published("backward", False, seq) * causal_ratio))

    expected = (seconds(16384, 1) - seconds(2048, 8)) / DEFAULT.attention_sustained
    assert expected > 0.1 * timing.predict(short).breakdown.step  # a growth worth testing
    assert grow == pytest.approx(expected, rel=0.15)


def test_ring_steps_run_at_their_block_length():
    """Ring attention's kernels walk s / cp keys: at cp 8 of 8k the diagonal step is a causal 1k
    block and the others unmasked 1k and 512 blocks. Against one causal 8k kernel, the published
    FlashAttention-2 speeds (H100, head dim 128: causal 8k 333, causal 1k 260, unmasked 1k 350 and
    512 309 TFLOP/s) make the ring's forward 1.048x as long; the model within 5 %."""
    plan = _plan(8192, 1)
    s, hw = shape_of(plan), timing.hardware_of(plan)
    one, _, _ = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, "flash", hw)
    ring, _, steps = timing.flash_attention_seconds(s, 1, 8, "ring", 8192, 1024, "flash", hw)
    assert steps == 8
    published = (1 / 8 / 260 + 7 / 16 / 350 + 7 / 16 / 309) * 333
    assert published > 1.04
    assert 8 * ring / one == pytest.approx(published, rel=0.05)


def test_split_k_fills_an_underfilled_grid():
    """A 256 x 8192 x 1024 product has 2 x 8 = 16 output tiles on 132 SMs: split-K cuts its 8192-long
    reduction into 8 slices (132 // 16 = 8, and 8192 / 512 = 16 allows it): 128 tiles, one wave of
    132. A short reduction (k = 1024) allows only 2 slices: 32 tiles."""
    assert kernels.gemm_wave_efficiency(256, 8192, 1024, 132) == pytest.approx(128 / 132)
    assert kernels.gemm_wave_efficiency(256, 1024, 1024, 132) == pytest.approx(32 / 132)
    # a full grid is not split: 133 tiles stay two waves
    assert kernels.gemm_wave_efficiency(7 * 128, 8192, 19 * 128, 132) == pytest.approx(133 / 264)


def test_a_gemm_one_tile_past_a_wave_takes_two_waves_of_time():
    """The time model's GEMM of 133 tiles on an H100 (132 SMs) takes about twice the 132-tile one
    (1.008x the work), where a model without waves would charge 1.008x."""
    plan = _plan(2048, 1)
    hw = timing.hardware_of(plan)
    assert hw.sms == 132
    one = timing.gemm_seconds(11 * 128, 8192, 12 * 128, "bf16", hw, DEFAULT)
    two = timing.gemm_seconds(7 * 128, 8192, 19 * 128, "bf16", hw, DEFAULT)
    # 2 x 133 / 132 from the waves; the two shapes' arithmetic intensities differ by a few percent
    assert 1.95 < two / one < 2.2


def test_routing_imbalance_matches_a_simulated_random_router():
    """The closed form against a seeded simulation of a router that sends each token to top_k
    distinct experts at random, experts dealt to ep ranks in blocks: the busiest rank's mean
    excess over the average load, within 20 % of the simulated one."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    cases = [(512, 64, 8, 16), (2048, 128, 8, 8), (256, 8, 2, 4)]
    assert cases
    for tokens, experts, top_k, ep in cases:
        trials = 200
        choice = np.argsort(rng.random((trials, tokens, experts)), axis=2)[:, :, :top_k]
        load = np.zeros((trials, experts))
        for t in range(trials):
            np.add.at(load[t], choice[t].ravel(), 1)
        per_rank = load.reshape(trials, ep, experts // ep).sum(axis=2)
        simulated = float((per_rank.max(axis=1) / per_rank.mean(axis=1)).mean()) - 1
        predicted = kernels.routing_imbalance(tokens * top_k / ep, ep) - 1
        assert simulated > 0.01
        assert predicted == pytest.approx(simulated, rel=0.20)
    assert kernels.routing_imbalance(1000, 1) == 1.0
    assert kernels.routing_imbalance(64, 64, capacity_factor=1.25) == 1.25  # capped


def _link(gpus: int, per_node: int = 8) -> timing.Link:
    hw = timing.Hardware("hopper", 989e12, None, 3.35e12, intra=450e9, nic=50e9, level=8)
    return timing.link(timing.Group(gpus, min(gpus, per_node)), hw, DEFAULT)


def _crossover(lk: timing.Link) -> float:
    """The message size at which ring and tree all-reduce cost the same (bisection on a log
    scale); 0 where the ring always wins."""
    lo, hi = 1.0, 1e13
    if lk.ring_all_reduce(lo) <= lk.tree_all_reduce(lo):
        return 0.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if lk.tree_all_reduce(mid) < lk.ring_all_reduce(mid) else (lo, mid)
    return lo


def test_all_reduce_picks_ring_or_tree_as_nccl_does():
    """NCCL's documented behaviour (its tuner, src/graph/tuning.cc; the 2.4 release notes on
    double binary trees): inside one node the ring; across nodes the tree for small and
    medium messages, whose latency grows with log2(nodes) where the ring's grows with the ranks,
    and the ring for large ones, whose bandwidth term is lower; the crossover grows with the
    node count. Hand-computed at 1,024 GPUs (128 nodes, 1 us inside, 5 us across): the ring's
    latency 2 x 896 x 1 us + 2 x 127 x 5 us = 3.062 ms, the tree's 2 (7 x 1 us + 7 x 5 us) = 84 us."""
    node = _link(8)
    assert _crossover(node) == 0.0  # the ring always, inside a node
    big = _link(1024)
    assert big.levels == 128
    assert big.ring_all_reduce(1.0) == pytest.approx(
        2 * 896 * DEFAULT.latency_intra + 2 * 127 * DEFAULT.latency_inter, rel=1e-6)
    assert big.tree_all_reduce(1.0) == pytest.approx(2 * (7 * DEFAULT.latency_intra + 7 * DEFAULT.latency_inter),
                                                     rel=1e-6)
    small = 1 << 20
    assert big.all_reduce(small) == big.tree_all_reduce(small) < big.ring_all_reduce(small)
    huge = 1 << 40
    assert big.all_reduce(huge) == big.ring_all_reduce(huge) < big.tree_all_reduce(huge)
    crossovers = [_crossover(_link(n)) for n in (16, 128, 1024, 8192)]
    assert all(x > 0 for x in crossovers)
    assert crossovers == sorted(crossovers) and crossovers[-1] > 10 * crossovers[0]


def test_expert_all_to_all_shares_the_nic_with_data_parallel_traffic():
    """Mixtral on 64 H100 (8 nodes, 8 x 100 Gb/s each), ep 64 over dp 64, zero3: the step's NIC
    floor carries the expert all-to-alls' and FSDP's bytes together. By hand from the bytes each
    GPU sends: an all-to-all over n = 64 ranks, k = 8 per node, puts (n - k)/(n - 1) of what it
    sends on the NIC; a hierarchical ring gather or reduce-scatter n/(n - 1) x (N - 1)/(N k) of it
    (N = 8 nodes)."""
    text = "\n".join([
        "dp 64 on nodes(8 gpus, nvlink)", "ep 64 over dp", "model mixtral-8x7b",
        "hardware { gpu h100-sxm, network 8 x 100 Gb/s }",
        "train {", "  seq 4096, global-batch 64, micro-batch 1", "  precision bf16, optimizer adamw, recompute full",
        "}", "dp { sharding zero3 }"]) + "\n"
    compiled = compile_text(text, path="moe.par")
    assert compiled.plan is not None, compiled.diagnostics
    b = timing.predict(compiled.plan).breakdown
    n, k, nodes = 64, 8, 8
    ep_nic = b.sent["ep"] * (n - k) / (n - 1)
    dp_nic = b.sent["dp"] * n / (n - 1) * (nodes - 1) / (nodes * k)
    assert ep_nic > 0 and dp_nic > 0
    nic = 100e9 / 8 * DEFAULT.bus_network  # one 100 Gb/s NIC per GPU
    assert b.bounds.nic == pytest.approx((ep_nic + dp_nic) / nic, rel=0.02)
    assert b.step >= b.bounds.nic * 0.999


def test_padded_rows_match_a_simulated_random_router():
    """Each expert's GEMM rows run in whole 128-row tiles: the expected padded rows of a random
    router's experts (closed form: a near-normal load's expected tile count) against a seeded
    simulation of top-k distinct experts per token, within 2 %, at loads inside a tile, across a
    tile boundary and many tiles long; an exactly even load is padded to the next whole tile."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(1)
    cases = [(3000, 64, 8), (8192, 128, 8), (1500, 128, 8), (2000, 128, 8), (6000, 32, 4), (600, 8, 2)]
    assert cases
    for tokens, experts, top_k in cases:
        trials = 20
        choice = np.argsort(rng.random((trials, tokens, experts)), axis=2)[:, :, :top_k]
        load = np.zeros((trials, experts))
        for t in range(trials):
            np.add.at(load[t], choice[t].ravel(), 1)
        simulated = float((np.maximum(1, np.ceil(load / kernels.TILE_M)) * kernels.TILE_M).mean())
        predicted = kernels.padded_rows(tokens * top_k / experts)
        assert predicted == pytest.approx(simulated, rel=0.02), (tokens, experts, top_k, predicted, simulated)
    assert kernels.padded_rows(200, balanced=True) == 256
    assert kernels.padded_rows(256, balanced=True) == 256
    assert kernels.padded_rows(0) == 0.0


def test_balanced_routing_charges_the_mean_load():
    """`Software.balanced_routing` (Megatron-Core's forced load balancing, the mean over a job's
    ranks): each expert rank's dispatch carries exactly its tokens' copies, (tokens / tp) x top_k x
    hidden x 2 bytes, written out by hand here; a random router's busiest rank carries more."""
    text = "\n".join([
        "tp 2 x dp 8 on nodes(8 gpus, nvlink)", "ep 8 over dp", "model mixtral-8x7b", "hardware { gpu h100-sxm }",
        "train {", "  seq 4096, global-batch 8, micro-batch 1", "  precision bf16, optimizer adamw, recompute none",
        "}"]) + "\n"
    compiled = compile_text(text, path="moe.par")
    assert compiled.plan is not None, compiled.diagnostics
    plan = compiled.plan
    s, hw = shape_of(plan), timing.hardware_of(plan)
    assert (s.experts, s.top_k, s.hidden) == (8, 2, 4096)

    def work(balanced: bool) -> timing.Work:
        return timing.layer_work(s, timing.LayerCase(moe=True, tp=2, sp=True, cp=1, flavour="ring", seq=4096,
                                                     micro=1, ep=8, precision="bf16", attention="flash",
                                                     kernels="fused", balanced=balanced), hw, DEFAULT)

    assert work(True).ep_bytes == 4096 / 2 * 2 * 4096 * 2  # tokens / tp x top-2 x hidden x bf16
    assert work(False).ep_bytes > work(True).ep_bytes * 1.01
    assert work(False).gemm > work(True).gemm


QWEN3_30B = "\n".join([
    "dp 8 on nodes(8 gpus, nvlink)", "ep 8 over dp",
    "model {", "  layers 4, hidden 2048, ffn 6144, heads 32, kv-heads 4, head-dim 128, vocab 151936",
    "  activation swiglu, norm rmsnorm, position rope, tied-embeddings off",
    "  experts 128, top-k 8, expert-ffn 768", "}", "hardware { gpu h100-sxm }", "target megatron",
    "train {", "  seq 4096, global-batch 64, micro-batch 1", "  precision fp8, optimizer adamw, recompute none",
    "}"]) + "\n"


def test_host_stall_hand_computed():
    """One device-to-host read of the token counts: 20 us of round trip, then the GPU idles while
    the host (10 us an op) lags behind it. 111 ops after the sync against 1.029 ms of GPU work:
    1.110 ms of launches, 81 us idle, 101 us in all; against 3 ms of GPU work the launches hide
    and the round trip alone shows; no ops: the round trip."""
    assert kernels.host_stall_seconds(111, 1.029e-3) == pytest.approx(20e-6 + 1.110e-3 - 1.029e-3, rel=1e-9)
    assert kernels.host_stall_seconds(111, 1.029e-3) == pytest.approx(101e-6, rel=1e-9)
    assert kernels.host_stall_seconds(111, 3e-3) == pytest.approx(20e-6, rel=1e-12)
    assert kernels.host_stall_seconds(0, 0.0) == pytest.approx(20e-6, rel=1e-12)


def test_grouped_mlp_launches_hand_counted():
    """The routed experts' kernels per micro-batch, counted by hand from Transformer Engine 2.9's
    `_GroupedLinear` and Megatron-Core 0.15's `TEGroupedMLP` at Qwen3-30B-A3B's 16 local experts
    (128 experts over ep 8), fc1 then fc2:

    - MXFP8 (Megatron-Bridge's FP8-MX rows): forward, per matrix, 16 `nvte_quantize_v2` of the
      input slices and 16 cuBLAS GEMMs (64), plus the padding of tokens and probabilities and the
      unpadding of the output (3): 67; backward, per matrix, 16 quantizes of the output gradient,
      16 dgrad and 16 wgrad GEMMs (96), plus the three paddings' backward (3): 99.
    - per-tensor current scaling (FP8-CS): each quantize is the amax's zeroing and reduction,
      the scale and the cast (4 x 16 = 64 per matrix): forward 2 (64 + 16) + 3 = 163, backward
      2 (64 + 32) + 3 = 195.
    - delayed scaling: one fused `nvte_multi_cast_transpose` per matrix: forward 2 (1 + 16) + 3
      = 37, backward 2 (1 + 32) + 3 = 69; past 64 experts the fused kernel takes two launches.
    - bf16: the GEMMs only (no quantize, no padding): 32 and 64."""
    assert kernels.grouped_mlp_launches(16, "mxfp8") == kernels.Launches(67, 99)
    assert kernels.grouped_mlp_launches(16, "current") == kernels.Launches(163, 195)
    assert kernels.grouped_mlp_launches(16, "delayed") == kernels.Launches(37, 69)
    assert kernels.grouped_mlp_launches(16, "bf16") == kernels.Launches(32, 64)
    # gpt-oss-120b on GB200 (128 experts over ep 64: 2 a rank), bf16: 2 x 2 GEMMs forward
    assert kernels.grouped_mlp_launches(2, "bf16") == kernels.Launches(4, 8)
    # 128 local experts under delayed scaling: the multi-tensor kernels take 64 tensors a launch
    assert kernels.split_quantize_launches(128, "delayed") == 2
    assert kernels.grouped_mlp_launches(128, "delayed") == kernels.Launches(2 * (2 + 128) + 6, 2 * (2 + 256) + 6)


def test_host_paced_backward_hand_computed():
    """A backward with no sync runs at the slower of the host and the GPU: 107 launches at 10 us
    are 1.07 ms; against 0.8 ms of GPU work the GPU idles 0.27 ms; against 2 ms the launches
    hide behind the kernels and nothing is charged (the crossing sits at exactly 1.07 ms)."""
    assert kernels.host_paced_seconds(107, 0.8e-3) == pytest.approx(0.27e-3, rel=1e-9)
    assert kernels.host_paced_seconds(107, 2e-3) == 0.0
    assert kernels.host_paced_seconds(107, 1.07e-3) == pytest.approx(0.0, abs=1e-15)
    assert kernels.host_paced_seconds(107, 1.069e-3) == pytest.approx(1e-6, rel=1e-6)


def test_moe_layer_pays_its_host_launches_forward_and_backward():
    """A Qwen3-30B-A3B-shaped layer (128 experts of FFN 768, top-8, ep 8: 16 local experts) under
    Megatron-Core with fp8 (`target megatron`: Transformer Engine's delayed scaling), counted by
    hand. Forward: Q/K/V, the attention output and the router's logits (3 GEMMs, an fp8 cast
    before each: 6), the experts' grouped GEMMs (`test_grouped_mlp_launches_hand_counted`: 37),
    two norms, two residual adds, the activation and RoPE (6), the router's 4 memory-bound
    kernels and one flash-attention kernel: 54, plus the dispatcher's 30 host ops. Backward: the
    three GEMMs' dgrad and wgrad with a gradient cast each (9), the experts' 69, the same 6 + 4 +
    1: 89, plus the dispatcher's 18. Each micro-batch's forward of each MoE layer pays
    `host_stall_seconds` of its 84 host ops against the layer's GPU forward; the backward
    `host_paced_seconds` of its 107 against the GPU backward; `moe_host_sync` off (capacity
    padding, CUDA graphs) pays neither. At 4,096 tokens the backward's kernels outlast its
    launches; at 256 tokens (a sixteenth of the work, the same launches) the host paces it."""
    compiled = compile_text(QWEN3_30B, path="qwen3.par")
    assert compiled.plan is not None, compiled.diagnostics
    plan = compiled.plan
    s, hw = shape_of(plan), timing.hardware_of(plan)
    assert (s.experts, s.top_k, s.expert_ffn) == (128, 8, 768)
    w = timing.layer_work(s, timing.LayerCase(moe=True, tp=1, sp=False, cp=1, flavour="ring", seq=4096, micro=1,
                                              ep=8, precision="fp8", attention="flash-te",
                                              kernels="fused"), hw, DEFAULT)
    assert w.launches_f == 3 * 2 + 37 + 6 + 4 + 1 == 54
    assert w.launches_b == 3 * 3 + 69 + 6 + 4 + 1 == 89
    assert kernels.DISPATCHER_OPS == 30 and kernels.DISPATCHER_BACKWARD_OPS == 18

    from parc.memory.inputs import knobs_of
    from parc.targets import memory_runtime, software_of
    sw = software_of(plan)
    assert sw.kernels == "fused" and sw.moe_host_sync and sw.fp8_scaling == "delayed"
    k = knobs_of(plan, memory_runtime(plan.target))
    geo = timing.geometry_of(plan, hw)

    def times(sync: bool, seq: int) -> timing.RankTimes:
        loads, per = timing.rank_times(s, replace(k, seq=seq), hw, geo, DEFAULT, replace(sw, moe_host_sync=sync))
        assert len(loads) == 1
        return per[loads[0]]

    crossed = 0
    for seq in (4096, 256):
        on, off = times(True, seq), times(False, seq)
        layers = on.moe_layers
        assert layers == 4
        slow = timing.slowed(timing.layer_work(s, timing.LayerCase(moe=True, tp=1, sp=False, cp=1, flavour="ring",
                                                                   seq=seq, micro=1, ep=8, precision="fp8",
                                                                   attention="flash-te",
                                                                   kernels="fused"), hw, DEFAULT), sw, DEFAULT)
        stall = 20e-6 + max(0.0, 84 * 10e-6 - slow.forward)
        paced = max(0.0, 107 * 10e-6 - (slow.backward_input + slow.backward_weight))
        assert on.forward - off.forward == pytest.approx(layers * stall, rel=1e-9)
        assert on.backward_input - off.backward_input == pytest.approx(layers * paced, rel=1e-9, abs=1e-15)
        assert on.backward_weight == off.backward_weight
        crossed += paced > 0
        if seq == 4096:
            assert paced == 0.0  # 1.07 ms of launches under ~1.7 ms of kernels
    assert crossed == 1


def test_data_parallel_traffic_queues_behind_the_other_axes_on_the_nic():
    """A reduce-scatter hidden under the backward shares the NIC with the ep all-to-alls of the
    same backward: only the window's rest hides it. Hand-computed: a reduce-scatter of t seconds
    under a 1.2 t backward hides alone but for NCCL's 16 of the 132 SMs it holds meanwhile
    (16/132 t), and shows 0.3 t when the all-to-alls take 0.5 t of the NIC in that window
    (t - (1.2 t - 0.5 t), more than the SMs' share)."""
    lk = _link(64)
    ledger = (timing.Collective("dp", "reduce_scatter", 4e9, 1, 64, 8, "last_backward"),)
    assert ledger[0].link_bytes()[1] > 0  # the group spans 8 nodes
    t = timing.collective_seconds(ledger[0], lk)
    alone, _ = timing._dp_exposed(ledger, 1, t, 1.2 * t, timing.DpLinks(lk, lk, lk, lk))
    shared, _ = timing._dp_exposed(ledger, 1, t, 1.2 * t, timing.DpLinks(lk, lk, lk, lk), (0.0, 0.5 * t))
    assert alone == pytest.approx(16 / 132 * t, rel=1e-9)
    assert shared == pytest.approx(0.3 * t, rel=1e-9)


# The tensor cores' measured ceiling: S. Bekman, ml-engineering, compute/accelerator/README.md,
# "Maximum Achievable Matmul FLOPS comparison table" (BF16), typed here from the page: MAMF and
# datasheet dense peak, TFLOPS.
PUBLISHED_MAMF = {"h100-sxm": (794.5, 989), "b200": (1745.0, 2250), "gb200-nvl72": (1822.0, 2500)}


def _gpu_plan(gpu: str):
    text = "\n".join([
        "dp 8 on nodes(8 gpus, nvlink)" if gpu != "gb200-nvl72" else "dp 8 on nodes(4 gpus, nvl72)",
        "model llama3-8b", f"hardware {{ gpu {gpu} }}",
        "train {", "  seq 4096, global-batch 8, micro-batch 1",
        "  precision bf16, optimizer adamw, recompute none", "}"]) + "\n"
    compiled = compile_text(text, path="gpu.par")
    assert compiled.plan is not None, compiled.diagnostics
    return compiled.plan


PUBLISHED_MAMF_BOUND_ONLY = {"a100-80gb": (271.2, 312), "mi300x": (781.9, 1300)}  # A100 SXM; MI300X's higher sweep (2024)
PUBLISHED_MAMF_FP8 = {"h100-sxm": (1402.6, 1979), "h200": (1453.4, 1979), "b200": (3432.5, 4500),
                      "gb200-nvl72": (3615.6, 5000)}  # the table's FP8 (float8_e4m3fn) section
SAME_CHIP = {"h200": "h100-sxm", "h800": "h100-sxm", "a100-40gb": "a100-80gb"}


@pytest.mark.parametrize("gpu", ["a100-80gb", "a100-40gb", "h100-sxm", "h200", "h800", "b200", "gb200-nvl72", "mi300x"])
def test_no_product_is_charged_faster_than_the_parts_measured_best(gpu):
    """A GEMM's charged rate never passes the part's maximum achievable matmul FLOP/s (the table's
    MAMF, typed above: BF16, and FP8 where the part has it; H200 and H800 take H100's BF16 figure,
    the A100 40 GB the 80 GB's, MI300X the higher of its two sweeps), over every shape from a thin
    128-column product to products larger than any training run's. Without the bound, Hopper's
    fitted ceiling (0.857) times its intensity curve passed H100's 80.3 % in BF16 from about
    21,000^3 (15,000^3 on H200's faster HBM), and 70.9 % in FP8 at ordinary shapes (8192 x 8192 x
    28672 at 75.6 %); where it binds, the largest products reach it exactly."""
    hw = timing.hardware_of(_gpu_plan(gpu))
    part = SAME_CHIP.get(gpu, gpu)
    mamf, peak = PUBLISHED_MAMF.get(part) or PUBLISHED_MAMF_BOUND_ONLY[part]
    sides = [128, 1000, 4096, 8192, 16384, 53248, 131072]
    shapes = [(m, k, n) for m in sides for k in sides for n in sides]
    assert len(shapes) == 343
    precisions = [("bf16", mamf / peak * hw.bf16)]
    fp8 = PUBLISHED_MAMF_FP8.get(gpu) or PUBLISHED_MAMF_FP8.get(part if gpu == "h800" else "")
    if fp8:
        precisions.append(("fp8", fp8[0] / fp8[1] * hw.fp8))
    for precision, bound in precisions:
        rates = [2 * m * k * n / timing.gemm_seconds(m, k, n, precision, hw, DEFAULT) for m, k, n in shapes]
        assert max(rates) <= bound * (1 + 1e-9), precision
        if part == "h100-sxm":
            assert max(rates) == pytest.approx(bound, rel=1e-9), precision  # it binds on Hopper


def test_the_bound_binds_on_every_part_where_the_fit_would_pass_it():
    """With the fitted ceilings raised past every part's maximum (a refit could land there), the
    largest products run exactly at the bound on every part: the bound is applied on each path,
    not only on Hopper's."""
    raised = replace(DEFAULT, gemm_ampere=0.99, gemm_hopper=0.99, blackwell_sustained=1.2)
    for gpu in ("a100-80gb", "h100-sxm", "h200", "b200", "gb200-nvl72", "mi300x"):
        hw = timing.hardware_of(_gpu_plan(gpu))
        rate = 2 * 131072 ** 3 / timing.gemm_seconds(131072, 131072, 131072, "bf16", hw, raised)
        assert rate == pytest.approx(hw.achievable * hw.bf16, rel=1e-9), gpu


def test_the_hopper_bound_is_above_the_h200_matmul_measured_here():
    """The bound is a measurement's, so it must not sit below another: the 8192^3 bf16 matmul timed
    on an H200 here (benchmarks/data/gpu/h200_kernels.json, random inputs) ran at 777 TFLOP/s, under
    H100's 794.5 that bounds an H200 (`kernels.MAMF_FLAGSHIP`)."""
    import json

    measured = json.loads((Path(__file__).parent.parent / "benchmarks/data/gpu/h200_kernels.json").read_text())
    hw = timing.hardware_of(_gpu_plan("h200"))
    assert measured["matmul_8192_tflops"] * 1e12 <= hw.achievable * hw.bf16
    assert hw.achievable == pytest.approx(794.5 / 989, rel=1e-9)
    charged = 2 * 8192 ** 3 / timing.gemm_seconds(8192, 8192, 8192, "bf16", hw, DEFAULT)
    assert charged <= measured["matmul_8192_tflops"] * 1e12  # the model's own 8192^3 is no faster than the part's


def test_blackwell_ceiling_is_the_published_mamf_ratio_to_h100():
    """B200 77.6 % and GB200 72.9 % of their peaks against H100's 80.3 %: 0.966 and 0.908 (hand
    computed from the table); Hopper and Ampere parts, whose runs fit their own ceiling, 1."""
    ratios = {"b200": (1745.0 / 2250) / (794.5 / 989), "gb200-nvl72": (1822.0 / 2500) / (794.5 / 989)}
    assert ratios["b200"] == pytest.approx(0.9655, abs=5e-4)
    assert ratios["gb200-nvl72"] == pytest.approx(0.9072, abs=5e-4)
    for gpu, ratio in ratios.items():
        assert timing.hardware_of(_gpu_plan(gpu)).ceiling == pytest.approx(ratio, rel=1e-6)
    for gpu in ("h100-sxm", "h200", "a100-80gb"):
        assert timing.hardware_of(_gpu_plan(gpu)).ceiling == 1.0
    # a Blackwell GPU defined in a spec stands for the generation's flagship, B200
    assert kernels.matmul_ceiling("my-blackwell", "blackwell") == pytest.approx(ratios["b200"], rel=1e-6)


@pytest.mark.parametrize("gpu", ["b200", "gb200-nvl72"])
def test_large_gemm_speedup_over_h100_is_the_measured_one(gpu):
    """A 16384-cube BF16 GEMM (thousands of waves' worth of tiles, intensity ~5,500 FLOP/B: at the
    ceiling on every part) runs faster on a Blackwell part than on H100 by the ratio of their
    measured MAMFs (2.20x for B200, 2.29x for GB200), not of their datasheet peaks (2.28x, 2.53x),
    within 2 % (the parts' ridge points and wave tails differ by under 1 % each), before what a
    training run sustains of it; with the fitted `blackwell_sustained`, that ratio times it."""
    h100 = timing.hardware_of(_gpu_plan("h100-sxm"))
    blackwell = timing.hardware_of(_gpu_plan(gpu))
    m = 16384
    sweep = DEFAULT.with_values({"blackwell_sustained": 1.0})
    measured = PUBLISHED_MAMF[gpu][0] / PUBLISHED_MAMF["h100-sxm"][0]
    for constants, expected in ((sweep, measured), (DEFAULT, measured * DEFAULT.blackwell_sustained)):
        speedup = (timing.gemm_seconds(m, m, m, "bf16", h100, constants)
                   / timing.gemm_seconds(m, m, m, "bf16", blackwell, constants))
        assert speedup == pytest.approx(expected, rel=0.02)
        assert speedup < 0.98 * PUBLISHED_MAMF[gpu][1] / PUBLISHED_MAMF["h100-sxm"][1]


def test_blackwell_attention_runs_hoppers_curve_at_its_measured_ceiling():
    """The fused attention kernel on B200: Hopper's curve at B200's share of its peak, scaled by its
    attention ceiling: no sweep of the B200 is in the suite, so its rack sibling GB200's measured
    ratio (0.98 forward, `kernels.ATTENTION_MEASURED`, hand-copied) times the matmul sweep's ratio of
    the two parts (1,745.0 / 2,250 over 1,822.0 / 2,500): one layer's forward attention seconds
    equal the FLOPs over 2,250 TFLOPS x the curve x that."""
    plan = _gpu_plan("b200")
    hw, shape = timing.hardware_of(plan), shape_of(plan)
    seq = 4096
    forward, _, kernels_run = timing.flash_attention_seconds(shape, 1, 1, "ring", seq, seq, "flash", hw)
    assert kernels_run == 1
    work = flops.attention_core_flops(shape, flops.causal_keys(seq)) * seq
    e = kernels.FA2_HOPPER.efficiency(seq, shape.head_dim, True, False)
    ratio = 0.98 * (1745.0 / 2250) / (1822.0 / 2500)
    assert forward == pytest.approx(work / (2250e12 * e * ratio), rel=1e-6)


def _gpu_plan(gpu: str, precision: str = "bf16"):
    text = "\n".join([
        "dp 8 on nodes(8 gpus, nvlink)", "model llama3-8b", f"hardware {{ gpu {gpu} }}", "target megatron",
        "train {", "  seq 8192, global-batch 8, micro-batch 1",
        f"  precision {precision}, optimizer adamw, recompute none", "}", "dp { sharding zero1 }"]) + "\n"
    compiled = compile_text(text, path="gpu.par", checks=False)
    assert compiled.plan is not None, compiled.diagnostics
    return compiled.plan


def test_fp8_attention_runs_at_its_measured_speedup():
    """Transformer Engine's FP8 attention on a B200, a causal layer: its BF16 kernel's seconds over the
    speedup cuDNN's suite measured for causal FP8 (per-tensor scales) on GB200, the same Blackwell
    die (`kernels.ATTENTION_FP8_MEASURED`, hand-copied: 1.2656x forward, 1.1274x backward), and
    over the MXFP8 kernel's under the MXFP8 recipe (1.2084x, 0.9662x: slower than BF16 backward);
    far from the exponential unit's floor, which does not bind."""
    plan = _gpu_plan("b200", "fp8")
    s, hw = shape_of(plan), timing.hardware_of(plan)
    bf16 = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, "flash-te", hw)
    for kernel, (forward, backward) in (("flash-te-fp8", (1.2656, 1.1274)), ("flash-te-mxfp8", (1.2084, 0.9662))):
        quantized = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, kernel, hw)
        assert bf16[0] / quantized[0] == pytest.approx(forward, rel=1e-6)
        assert bf16[1] / quantized[1] == pytest.approx(backward, rel=1e-6)
        assert quantized[2] == bf16[2] == 1


def test_fp8_attention_without_a_sweep_runs_its_products_at_the_fp8_rate():
    """A part no FP8 attention sweep covers (MI300X) charges the products at the FP8 peak (2,615
    TFLOP/s dense, twice its 1,307 BF16), at the share of it FlashAttention-3's FP8 kernel reaches
    against its FP16 one on H100 (abstract: 1.2 PFLOP/s of 1,979 against 740 TFLOP/s of 989),
    forward and backward alike."""
    plan = _gpu_plan("mi300x", "fp8")
    s, hw = shape_of(plan), timing.hardware_of(plan)
    assert hw.fp8_attention_part == ""
    bf16 = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, "flash-te", hw)
    fp8 = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, "flash-te-fp8", hw)
    share = (1.2e15 / 1979e12) / (740e12 / 989e12)
    want = hw.bf16 / (hw.fp8 * share)
    assert 0.6 < want < 0.7
    assert fp8[0] / bf16[0] == pytest.approx(want, rel=1e-6)
    assert fp8[1] / bf16[1] == pytest.approx(want, rel=1e-6)


def test_fp8_attention_is_charged_only_where_the_runtime_runs_it():
    """`Software.attention_fp8` turns Transformer Engine's attention into its FP8 kernel only under
    fp8 linears; torch's SDPA has no FP8 variant, and a bf16 spec keeps 16-bit attention."""
    on = timing.Software(attention="flash-te", fp8="linear", attention_fp8=True)
    assert timing.attention_kernel(on, "fp8") == "flash-te-fp8"
    assert timing.attention_kernel(replace(on, fp8_scaling="mxfp8"), "fp8") == "flash-te-mxfp8"
    assert timing.attention_kernel(on, "bf16") == "flash-te"
    assert timing.attention_kernel(replace(on, attention="flash"), "fp8") == "flash"
    assert timing.attention_kernel(replace(on, attention_fp8=False), "fp8") == "flash-te"
    plan = _gpu_plan("b200", "fp8")
    shape, hw = shape_of(plan), timing.hardware_of(plan)
    from parc.memory.inputs import knobs_of

    k = knobs_of(plan, "megatron")
    works = [timing.layer_work(shape, timing.LayerCase.of(k, False, sw), hw, DEFAULT)
             for sw in (replace(on, attention_fp8=False), on)]
    # GB200's measured causal FP8 speedup, the kernel's fixed cost aside
    assert works[1].attention_f == pytest.approx(works[0].attention_f / 1.2656, rel=0.01)
    assert works[1].gemm == works[0].gemm


@pytest.mark.parametrize("gpu", ["a100-80gb", "h100-sxm", "b200", "gb200-nvl72"])
def test_no_attention_beats_the_exponential_unit_or_the_matmul_maximum(gpu):
    """Two physical bounds on a fused attention kernel. Each score entry takes one exponential
    forward and one backward (the recomputed probabilities), on 16 special-function results per SM
    per clock (CUDA C++ Programming Guide's throughput table; FlashAttention-4: unchanged on
    Blackwell); the clock by hand from the datasheet: A100 1.41 GHz x 108 SMs, H100 SXM 1.83 GHz x
    132, B200 and GB200 148 SMs at the BF16 peak over 8,192 FLOP per SM per clock (twice Hopper's
    4,096). And its products are matmuls on the same tensor cores, never faster than the part's
    measured maximum matmul rate at their precision (ml-engineering's mamf-finder, hand-copied:
    A100 271.2, H100 794.5 and 1,402.6 FP8, B200 1,745.0 and 3,432.5, GB200 1,822.0 and 3,615.6
    TFLOP/s). At an absurd sustained speed the charge is exactly the larger of the two (at head
    dim 128 the matmul maximum: 512 FLOPs an entry forward), FP8 or not; at the stored constants
    it sits above it."""
    plan = _gpu_plan(gpu)
    s, hw = shape_of(plan), timing.hardware_of(plan)
    rate = {"a100-80gb": 108 * 16 * 1.41e9, "h100-sxm": 132 * 16 * 1.83e9,
            "b200": 148 * 16 * 2250e12 / (148 * 8192), "gb200-nvl72": 148 * 16 * 2500e12 / (148 * 8192)}[gpu]
    mamf = {"a100-80gb": (271.2e12, None), "h100-sxm": (794.5e12, 1402.6e12), "b200": (1745.0e12, 3432.5e12),
            "gb200-nvl72": (1822.0e12, 3615.6e12)}[gpu]
    entries = s.heads * 8192 * 8192 / 2  # one causal 8k sequence, every head
    checked = 0
    for kernel, best in (("flash-te", mamf[0]), ("flash-te-fp8", mamf[1] or mamf[0])):
        f, b, _ = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, kernel, hw, 1e4)
        for seconds, flop in ((f, 4 * 128 * entries), (b, 2.5 * 4 * 128 * entries)):
            assert seconds == pytest.approx(max(entries / rate, flop / best), rel=2e-3), kernel
            assert seconds >= entries / rate * (1 - 1e-9)
            checked += 1
        stored = timing.flash_attention_seconds(s, 1, 1, "ring", 8192, 8192, kernel, hw,
                                                DEFAULT.attention_speed)
        assert stored[0] > 1.2 * f and stored[1] > 1.2 * b
    assert checked == 4


FA2_SUSTAINED_AS_RUN = 0.976
"""`attention_sustained` refitted with NeMo 24.03's long-sequence table read as the kernel its
launcher ran (FlashAttention-2: NVTE_FUSED_ATTN=0; docs/time-model.md, "Which kernel the H100
table ran"), measured on the development machine at stop 58."""


def test_the_stored_attention_charge_is_flash_attention_2_at_its_benchmarks():
    """The doc's claim behind keeping `attention_sustained` read on cuDNN's curve: at the stored
    constant it charges what FlashAttention-2's curve at the as-run refit charges, within 2.3 %,
    for every kernel of NeMo's table (4K-1M keys, head dim 128, causal), each way. The two curves
    are fitted on different kernels' published sweeps (`kernel_fit.py`), so the agreement is a
    fact about them and the constant, not a restatement; a refit that moves the constant away
    from it fails here and sends the doc's paragraph back for a rewrite."""
    checked = 0
    for keys in (4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576):
        for backward in (False, True):
            cudnn = kernels.CUDNN_HOPPER.efficiency(keys, 128, True, backward) * DEFAULT.attention_sustained
            fa2 = kernels.FA2_HOPPER.efficiency(keys, 128, True, backward) * FA2_SUSTAINED_AS_RUN
            assert cudnn / fa2 == pytest.approx(1.0, abs=0.023), (keys, backward)
            checked += 1
    assert checked == 18
