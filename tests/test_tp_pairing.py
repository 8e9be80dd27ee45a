"""Tensor-parallel overlap paired per GEMM (issue 14, point 3): each tp collective a runtime
overlaps runs beside its own GEMM, and a transfer longer than its GEMM cannot borrow time from
another GEMM of the layer.

The reference is written by hand here: each GEMM's seconds from its shape (tokens x in x out,
`timing.gemm_seconds` plus one launch), each collective's bytes (2 n h) and seconds from the
ring's closed form, and the pairs from the runtimes' own tables (Transformer Engine's
`initialize_ub` methods; torch's fused all-gather/matmul and matmul/reduce-scatter;
Megatron-LM's asynchronous input-gradient reduction), then compared with what `timing.exposed`
charges for `timing.layer_work`'s layer.

Two runtimes lay out the backward differently under sequence parallelism: DTensor (parc's job,
torchtitan) saves each column-parallel layer's gathered input for its weight-gradient GEMM;
Megatron-LM and Transformer Engine save it sharded and all-gather it again in the backward,
beside the layer's input-gradient GEMM (`timing.regathered`: Megatron-LM's
`LinearWithGradAccumulationAndAsyncCommunication`, TE's `LayerNormLinear` / `Linear` with
`ub_bulk_dgrad` under userbuffers). The "megatron" cases add those all-gathers by hand.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from parc import timing
from parc.calibration import DEFAULT
from parc.ledger import Collective
from parc.memory.inputs import Shape

HW = timing.Hardware("hopper", 989e12, 1979e12, 3.35e12, intra=450e9, nic=50e9, level=8)
SMS = 132
TOKENS = 4096
C = DEFAULT

DENSE = Shape(layers=2, hidden=2048, ffn=8192, heads=16, kv_heads=4, head_dim=128, vocab=32000, tied=False,
              ffn_matrices=3, layernorm=False, position_params=0, rope=True)
MOE = Shape(layers=2, hidden=2048, ffn=8192, heads=16, kv_heads=4, head_dim=128, vocab=32000, tied=False,
            ffn_matrices=3, layernorm=False, position_params=0, rope=True, experts=8, top_k=2, expert_ffn=1024,
            shared_experts=1, moe=(True, True))
ROUTED_ONLY = dataclasses.replace(MOE, shared_experts=0)

# the SMs each runtime's transfer holds, by kind (docs/time-model.md, "Overlap takes SMs")
# ("regather": TE's bulk all-gather of a saved input under "all", 16 SMs; NCCL's otherwise)
SHARE = {"all": {"all_gather": 1 / SMS, "reduce_scatter": 16 / SMS, "all_reduce": 16 / SMS, "regather": 16 / SMS},
         "backward": {"all_gather": 16 / SMS, "reduce_scatter": 16 / SMS, "all_reduce": 16 / SMS,
                      "regather": 16 / SMS},
         "forward": {"all_gather": 0.0, "reduce_scatter": 0.0, "all_reduce": 0.0, "regather": 0.0},
         "none": {"all_gather": 16 / SMS, "reduce_scatter": 16 / SMS, "all_reduce": 16 / SMS, "regather": 16 / SMS}}
MEGATRON = timing.Software(tp_overlap="backward", kernels="fused", tp_regather=True)
DTENSOR = timing.Software()


def gemm(m: float, k: float, n: float) -> float:
    return timing.gemm_seconds(m, k, n, "bf16", HW, C) + C.kernel_overhead


def blocks(shape: Shape, tp: int, moe: bool) -> list[tuple[float, float]]:
    """(column, row) GEMM seconds of each tp-split block, by hand from the shapes: attention's
    QKV (h -> (q + 2 kv) / tp) and output projection (q / tp -> h); the dense FFN's fused gate
    and up (h -> 2 ffn / tp) and down (ffn / tp -> h), or the shared experts' alike."""
    h, q, kv = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    out = [(gemm(TOKENS, h, (q + 2 * kv) / tp), gemm(TOKENS, q / tp, h))]
    inner = (shape.shared_experts * shape.expert_ffn if moe else shape.ffn) / tp
    if inner:
        out.append((gemm(TOKENS, h, 2 * inner), gemm(TOKENS, inner, h)))
    return out


def ring(tp: int, passes: int) -> float:
    """One all-gather or reduce-scatter (passes 1) or ring all-reduce (2) of 2 n h bytes on tp
    GPUs of one NVLink node."""
    size = 2 * TOKENS * DENSE.hidden
    return passes * ((tp - 1) / tp * size / (HW.intra * C.bus_nvlink) + (tp - 1) * C.latency_intra)


def over(g: float, t: float, share: float) -> float:
    """A transfer of t seconds beside g seconds of its GEMM, holding `share` of the SMs."""
    return max(t - g, share * t, 0.0)


def reference(shape: Shape, tp: int, sp: bool, moe: bool, mode: str, regather: bool = False) -> tuple[float, float]:
    """Exposed tp seconds (forward, backward) of one layer, by hand. `regather`: the runtime
    all-gathers each column-parallel layer's saved sharded input again in the backward, beside
    that layer's input-gradient GEMM (Megatron-LM's async all-gather, TE's bulk overlap under
    "all"), waiting whole where nothing overlaps ("none"; "forward" is torch's, which does not
    re-gather, but the hand count follows the same rule)."""
    pairs = blocks(shape, tp, moe)
    s = SHARE[mode]
    if sp:
        t = ring(tp, 1)
        f_gather = [over(col, t, s["all_gather"]) if mode in ("all", "forward") else t for col, _ in pairs]
        f_scatter = [over(row, t, s["reduce_scatter"]) if mode in ("all", "forward") else t for _, row in pairs]
        b_gather = [over(row, t, s["all_gather"]) if mode == "all" else t for _, row in pairs]
        b_scatter = [over(col, t, s["reduce_scatter"]) if mode in ("all", "backward") else t for col, _ in pairs]
        again = [over(col, t, s["regather"]) if mode in ("all", "backward") else t for col, _ in pairs]
        return sum(f_gather) + sum(f_scatter), sum(b_gather) + sum(b_scatter) + (sum(again) if regather else 0.0)
    a = ring(tp, 2)
    routed = ring(tp, 1) if moe else 0.0  # the routed result's all-gather (its gradient's, backward)
    forward = len(pairs) * a + routed
    backward = sum(over(col, a, s["all_reduce"]) if mode in ("all", "backward") else a for col, _ in pairs)
    return forward, backward + routed


def charged(shape: Shape, tp: int, sp: bool, moe: bool, mode: str, regather: bool = False) -> timing.Exposed:
    work = timing.layer_work(shape, timing.LayerCase(moe=moe, tp=tp, sp=sp, cp=1, flavour="ring", seq=TOKENS,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused"), HW, C)
    work = timing.regathered(work, MEGATRON if regather else DTENSOR)
    link = timing.link(timing.Group(tp, tp), HW, C)
    alone = timing.link(timing.Group(1, 1), HW, C)
    return timing.exposed(work, link, alone, alone, False, mode, C, timing.tp_calls("moe" if moe else "dense",
                                                                                      sp, tp, work))


CASES = [(DENSE, False), (MOE, True), (ROUTED_ONLY, True)]


@pytest.mark.parametrize("regather", [False, True], ids=["dtensor", "megatron"])
@pytest.mark.parametrize("mode", ["none", "forward", "backward", "all"])
@pytest.mark.parametrize("sp", [True, False])
@pytest.mark.parametrize(("shape", "moe"), CASES, ids=["dense", "moe-shared", "moe-routed-only"])
def test_each_collective_hides_under_its_own_gemm_only(shape, moe, sp, mode, regather):
    expected = reference(shape, 4, sp, moe, mode, regather)
    x = charged(shape, 4, sp, moe, mode, regather)
    assert (x.tp_f, x.tp_b) == pytest.approx(expected, rel=1e-9)


def test_the_small_layer_is_a_case_pairing_decides():
    """The reference layer's output projection (tp 4) is shorter than its reduce-scatter while
    the layer's four GEMMs together outlast its four calls: one window over the sums would hide
    everything, the pairs show the projection's excess, so the check above can fail."""
    (qkv, proj), (up, down) = blocks(DENSE, 4, False)
    t = ring(4, 1)
    assert proj < t and 4 * t < qkv + proj + up + down
    x = charged(DENSE, 4, True, False, "forward")
    assert x.tp_f >= (t - proj) * (1 - 1e-12) > 0


def test_the_runtimes_pairs_are_tes_table():
    """`Work.tp_gemms` names each call's GEMM as TE's `initialize_ub` does: forward qkv_fprop and
    fc1_fprop all-gather, proj_fprop and fc2_fprop reduce-scatter; backward proj_dgrad and
    fc2_dgrad all-gather (before the row-parallel input-gradient GEMMs), qkv_wgrad and fc1_wgrad
    reduce-scatter (the column-parallel input gradients, beside the weight-gradient GEMMs)."""
    work = timing.layer_work(DENSE, timing.LayerCase(moe=False, tp=4, sp=True, cp=1, flavour="ring", seq=TOKENS,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused"), HW, C)
    (qkv, proj), (up, down) = blocks(DENSE, 4, False)
    expected = {("forward", "all_gather"): [qkv, up], ("forward", "reduce_scatter"): [proj, down],
                ("backward", "all_gather"): [proj, down], ("backward", "reduce_scatter"): [qkv, up]}
    got: dict[tuple[str, str], list[float]] = {}
    for phase, kind, seconds in work.tp_gemms:
        got.setdefault((phase, kind), []).append(seconds)
    assert got.keys() == expected.keys()
    for key, values in expected.items():
        assert got[key] == pytest.approx(values, rel=1e-12), key
    # Megatron-LM / TE: each column-parallel layer's input re-gathered beside its dgrad GEMM
    # (TE's qkv_dgrad, fc1_dgrad bulk all-gathers)
    again = timing.regathered(work, MEGATRON)
    assert again.tp_gemms[:len(work.tp_gemms)] == work.tp_gemms and again.tp_regather == 2
    assert [(p, k) for p, k, _ in again.tp_gemms[len(work.tp_gemms):]] == [("backward", timing.REGATHER)] * 2
    assert [g for *_, g in again.tp_gemms[len(work.tp_gemms):]] == pytest.approx([qkv, up], rel=1e-12)
    assert timing.regathered(work, DTENSOR) is work


def one_window(x: timing.Exposed, work: timing.Work, link: timing.Link, mode: str) -> tuple[float, float]:
    """The form pairing replaced: every overlapped call of a phase under all the layer's GEMMs.
    The backward's window is the layer's GEMMs once (the dgrad GEMMs of the row layers and the
    wgrad GEMMs of the column layers, as many seconds as the forward's) plus, where the runtime
    re-gathers saved inputs, the column layers' dgrad GEMMs those all-gathers run beside: GEMMs
    the DTensor backward hosts nothing under."""
    again = sum(g for _, kind, g in work.tp_gemms if kind == timing.REGATHER)
    out = []
    for phase in ("forward", "backward"):
        calls = [r for r in x.collectives if r.axis == "tp" and r.phase == phase]
        seconds = sum(r.count * timing.collective_seconds(r, link) for r in calls)
        busy = sum(r.count * timing.collective_seconds(r, link) * min(SHARE[mode][r.kind], SHARE[mode]["regather"])
                   if r.kind == "all_gather" else r.count * timing.collective_seconds(r, link) * SHARE[mode][r.kind]
                   for r in calls)
        hides = mode == "all" or mode == phase
        window = work.gemm + (again if phase == "backward" else 0.0)
        out.append(max(seconds - window, busy, 0.0) if hides and seconds else seconds)
    return out[0], out[1]


def test_pairing_never_shows_less_than_one_window_or_any_pairs_excess():
    """Over layers of every kind, tp degree, sequence parallelism, micro-batch and overlap mode:
    the paired exposure is at least the one-window form's and at least each single pair's
    excess (its transfer beyond its own GEMM)."""
    checked = 0
    for (shape, moe), tp, sp, micro, mode, sw in itertools.product(CASES, (2, 4, 8), (True, False), (1, 4),
                                                                  ("none", "forward", "backward", "all"),
                                                                  (DTENSOR, MEGATRON)):
        work = timing.layer_work(shape, timing.LayerCase(moe=moe, tp=tp, sp=sp, cp=1, flavour="ring", seq=TOKENS,
                                                         micro=micro, ep=1, precision="bf16", attention="flash",
                                                         kernels="fused"), HW, C)
        work = timing.regathered(work, sw)
        link = timing.link(timing.Group(tp, tp), HW, C)
        alone = timing.link(timing.Group(1, 1), HW, C)
        x = timing.exposed(work, link, alone, alone, False, mode, C,
                           timing.tp_calls("moe" if moe else "dense", sp, tp, work))
        window = one_window(x, work, link, mode)
        assert x.tp_f >= window[0] * (1 - 1e-12) and x.tp_b >= window[1] * (1 - 1e-12)
        for phase, kind, g in work.tp_gemms:
            wire = "all_gather" if kind == timing.REGATHER else kind
            call = next(r for r in x.collectives if r.axis == "tp" and r.phase == phase and r.kind == wire)
            excess = max(timing.collective_seconds(call, link) - g, 0.0)
            assert (x.tp_f if phase == "forward" else x.tp_b) >= excess * (1 - 1e-12)
        checked += 1
    assert checked == 3 * 3 * 2 * 2 * 4 * 2


def test_the_output_layer_is_not_a_userbuffers_module():
    """The output layer under sp: Megatron-Core builds it as `tensor_parallel.ColumnParallelLinear`
    (megatron/core/models/gpt/gpt_model.py), not a Transformer Engine module, so
    `--tp-comm-overlap` ("all") does not run it on userbuffers: its norm's forward all-gather is
    a synchronous NCCL call (whole), and its gradient's backward reduce-scatter is Megatron-LM's
    asynchronous grad reduction beside the logits' weight-gradient GEMM at NCCL's share (16 of
    132 SMs), as under "backward". Torch's async TP ("forward") fuses the all-gather into the
    logits matmul."""
    vocab = 32000
    out = timing.output_work(DENSE, timing.TokenSplit(4, True, 1, TOKENS, 1), vocab, "bf16", "fused", HW, C)
    logits = gemm(TOKENS, DENSE.hidden, vocab / 4)
    link = timing.link(timing.Group(4, 4), HW, C)
    alone = timing.link(timing.Group(1, 1), HW, C)
    t = ring(4, 1)
    assert t > 1 / SMS * t > 0 and logits > 0
    calls = timing.tp_calls("output", True, 4, out)
    for mode in ("all", "backward"):
        x = timing.exposed(out, link, alone, alone, False, mode, C, calls)
        assert (x.tp_f, x.tp_b) == pytest.approx((t, over(logits, t, 16 / SMS)), rel=1e-9), mode
    x = timing.exposed(out, link, alone, alone, False, "forward", C, calls)
    assert (x.tp_f, x.tp_b) == pytest.approx((over(logits, t, 0.0), t), rel=1e-9)
    # Megatron-Core's ColumnParallelLinear is Megatron-LM's autograd function: it saves the norm's
    # output sharded and all-gathers it again beside the logits' input-gradient GEMM (NCCL's
    # share under "all" as under "backward")
    again = timing.regathered(out, MEGATRON)
    calls = timing.tp_calls("output", True, 4, again)
    assert ("backward", "all_gather", 1) in calls
    for mode in ("all", "backward"):
        x = timing.exposed(again, link, alone, alone, False, mode, C, calls)
        assert (x.tp_f, x.tp_b) == pytest.approx((t, 2 * over(logits, t, 16 / SMS)), rel=1e-9), mode


def test_eager_slowing_scales_each_partner_gemm():
    """parc's eager runtime takes 1 / `eager_efficiency` as long over every GEMM, so the GEMM each
    tp collective hides beside is slowed too (`timing.slowed` scales `Work.tp_gemms`): the
    paired forward all-gather of a slowed layer shows max(t - g / e, share t), g the fused GEMM."""
    work = timing.layer_work(DENSE, timing.LayerCase(moe=False, tp=4, sp=True, cp=1, flavour="ring", seq=TOKENS,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused"), HW, C)
    eager = dataclasses.replace(C, eager_efficiency=0.5)
    slow = timing.slowed(work, timing.Software(kernels="eager"), eager)
    assert work.tp_gemms
    assert [(p, k) for p, k, _ in slow.tp_gemms] == [(p, k) for p, k, _ in work.tp_gemms]
    assert [g for *_, g in slow.tp_gemms] == pytest.approx([2 * g for *_, g in work.tp_gemms], rel=1e-12)
    link = timing.link(timing.Group(4, 4), HW, C)
    alone = timing.link(timing.Group(1, 1), HW, C)
    t = ring(4, 1)
    cols = [col for col, _ in blocks(DENSE, 4, False)]
    rows = [row for _, row in blocks(DENSE, 4, False)]
    x = timing.exposed(slow, link, alone, alone, False, "forward", C)
    assert x.tp_f == pytest.approx(sum(over(2 * g, t, 0.0) for g in cols + rows), rel=1e-9)


def test_only_the_pieces_own_calls_pair():
    """A tp record the piece did not issue as one of its f/g pairs (the loss's statistics, the
    router's gradient: `Collective.pairs` false) waits whole, even one of the same size and kind
    as a call that pairs."""
    work = timing.layer_work(DENSE, timing.LayerCase(moe=False, tp=4, sp=True, cp=1, flavour="ring", seq=TOKENS,
                                                     micro=1, ep=1, precision="bf16", attention="flash",
                                                     kernels="fused"), HW, C)
    link = timing.link(timing.Group(4, 4), HW, C)
    t = ring(4, 1)
    extra = Collective("tp", "all_gather", work.tp_bytes, 1, 4, 4, "path", 1, "forward")
    own = dataclasses.replace(extra, pairs=True)
    assert timing.paired_tp_exposed(work, (extra,), link, "all") == pytest.approx((t, 0.0), rel=1e-9)
    col = blocks(DENSE, 4, False)[0][0]
    assert timing.paired_tp_exposed(work, (own,), link, "all") == pytest.approx((over(col, t, 1 / SMS), 0.0),
                                                                              rel=1e-9)


def test_the_megatron_backward_regathers_each_column_input():
    """One dense layer's backward at a stated shape (hidden 2048, 16 query and 4 key/value heads
    of 128, SwiGLU ffn 8192; 4096 tokens; tp 4 with sequence parallelism on one 450 GB/s NVLink
    node), as Megatron-LM / TE run it under their default asynchronous overlap ("backward").

    Bytes by hand: every tp call carries the micro-batch's activations, 2 x 4096 x 2048 =
    16,777,216 bytes gathered; a ring sends 3/4 of it, 12,582,912 bytes per call. DTensor's
    backward issues 4 calls (two output-gradient all-gathers, two input-gradient
    reduce-scatters): 50,331,648 bytes sent. Megatron-LM and TE add one all-gather of each
    column layer's saved sharded input (QKV, fused gate/up): 6 calls, 75,497,472 bytes.
    Seconds by hand: the row layers' output-gradient all-gathers wait whole (t each); each
    reduce-scatter shows max(t - G_col, 16/132 t) beside its column layer's wgrad GEMM, and each
    re-gather the same beside that layer's dgrad GEMM, G_col its seconds."""
    gathered = 2 * 4096 * 2048
    assert gathered == 16_777_216
    sent = 3 * gathered // 4
    assert sent == 12_582_912
    (qkv, _), (up, _) = blocks(DENSE, 4, False)
    t = ring(4, 1)
    hidden = [over(g, t, 16 / SMS) for g in (qkv, up)]
    without = 2 * t + sum(hidden)
    with_regather = without + sum(hidden)
    dtensor = charged(DENSE, 4, True, False, "backward", regather=False)
    megatron = charged(DENSE, 4, True, False, "backward", regather=True)
    assert dtensor.tp_sent[1] == pytest.approx(4 * sent, rel=1e-12) == 50_331_648
    assert megatron.tp_sent[1] == pytest.approx(6 * sent, rel=1e-12) == 75_497_472
    assert dtensor.tp_b == pytest.approx(without, rel=1e-9)
    assert megatron.tp_b == pytest.approx(with_regather, rel=1e-9)
    assert megatron.tp_b > dtensor.tp_b * (1 + 1e-6)  # fails without the re-gather
    assert megatron.tp_f == dtensor.tp_f  # the forward is the same


def test_the_runtimes_that_regather():
    """Which targets re-gather (`targets.software_of`): Megatron-LM's; not parc's job (DTensor
    saves the all-gather's output for the matmul's backward) nor torchtitan (DTensor too)."""
    from parc import targets

    assert targets.runtime("megatron").tp_regather
    assert not targets.runtime("torch").tp_regather
    assert not targets.runtime("torchtitan").tp_regather
