"""DeepSeek-V3's FP8 all-to-alls (`Software.ep_dispatch_fp8`, issue 14, point 2: the ledger of
the job as it ran). The report's Section 3.3.3 ("Low-Precision Communication"): the activation
before the experts' up projection is quantized to FP8 and then dispatched, "a similar strategy is
applied to the activation gradient before MoE down-projections", and "for both the forward and
backward combine components, we retain them in BF16". So of a MoE layer's four all-to-alls the two
into the experts carry e4m3 values with one fp32 scale per 128 channels (1 + 4/128 bytes an
element) and the two out of them 2 bytes. The hand counts below are typed from that text.
"""

from __future__ import annotations

import dataclasses
import sys

import pytest
from parc import timing
from parc.calibration import DEFAULT
from parc.memory.inputs import Shape

from .conftest import ROOT, load_yaml

HW = timing.Hardware("hopper", 989e12, 1979e12, 3.35e12, intra=450e9, nic=50e9, level=8)
C = DEFAULT
MOE = Shape(layers=2, hidden=2048, ffn=8192, heads=16, kv_heads=4, head_dim=128, vocab=32000, tied=False,
            ffn_matrices=3, layernorm=False, position_params=0, rope=True, experts=64, top_k=8, expert_ffn=1024,
            shared_experts=1, moe=(True, True))


def _case(fp8_dispatch: bool, precision: str = "fp8") -> timing.LayerCase:
    return timing.LayerCase(moe=True, tp=1, sp=False, cp=1, flavour="ring", seq=4096, micro=1, ep=8,
                            precision=precision, attention="flash-te", kernels="fused", cp_runtime="te",
                            fp8_scaling="blockwise", fp8_dispatch=fp8_dispatch)


def _links():
    ep = timing.link(timing.Group(8, 8), HW, C)
    alone = timing.link(timing.Group(1, 1), HW, C)
    return ep, alone


def test_the_two_all_to_alls_into_the_experts_carry_fp8_and_the_two_out_bf16():
    plain = timing.layer_work(MOE, _case(False), HW, C)
    quantized = timing.layer_work(MOE, _case(True), HW, C)
    assert plain.ep_bytes > 0 and plain.ep_dispatch_bytes == 0.0
    assert quantized.ep_bytes == plain.ep_bytes
    # 2 bytes an element in bf16, 1 + 4 / 128 in e4m3 with a 1x128 scale
    assert quantized.ep_dispatch_bytes == pytest.approx(plain.ep_bytes * (1 + 4 / 128) / 2, rel=1e-12)
    ep, alone = _links()
    records = [r for r in timing.piece_collectives(quantized, alone, alone, ep) if r.axis == "ep"]
    assert records
    for phase in ("forward", "backward"):
        calls = sorted((r.payload, r.count) for r in records if r.phase == phase)
        assert calls == sorted([(quantized.ep_dispatch_bytes, 1), (plain.ep_bytes, 1)])
    before = [r for r in timing.piece_collectives(plain, alone, alone, ep) if r.axis == "ep"]
    assert sum(r.count * r.payload for r in before) - sum(r.count * r.payload for r in records) == pytest.approx(
        2 * (plain.ep_bytes - quantized.ep_dispatch_bytes), rel=1e-12)


def test_a_bf16_layer_dispatches_bf16():
    """The quantization feeds the up projection's FP8 GEMM: a layer whose GEMMs run in BF16 has no
    FP8 tensor to send (`LayerCase.under` keeps the fact only for fp8 GEMMs)."""
    sw = timing.Software(ep_dispatch_fp8=True, fp8="linear", kernels="fused")
    case = timing.LayerCase.under(sw, moe=True, tp=1, sp=False, cp=1, flavour="ring", seq=4096, micro=1, ep=8,
                                  precision="bf16")
    assert not case.fp8_dispatch
    assert timing.LayerCase.under(sw, moe=True, tp=1, sp=False, cp=1, flavour="ring", seq=4096, micro=1, ep=8,
                                  precision="fp8").fp8_dispatch
    assert timing.layer_work(MOE, dataclasses.replace(_case(False), precision="bf16"), HW, C).ep_dispatch_bytes == 0


def test_each_fp8_transfer_hides_beside_its_own_block_of_the_other_micro_batch():
    """Under DualPipe's (and Megatron-Core's 1F1B) pairing each all-to-all runs beside one block of
    the other micro-batch: the forward's dispatch beside the backward's expert MLP, the backward's
    gradient into the experts beside the forward's attention (the FP8 two); the forward's combine
    beside the backward's attention, the backward's way out beside the forward's expert MLP (the
    BF16 two). Written out here with each call's own seconds on the ep link."""
    ep, alone = _links()
    work = timing.layer_work(MOE, _case(True), HW, C)
    share = ep.sm_share
    fp8, bf16 = ep.all_to_all(work.ep_dispatch_bytes), ep.all_to_all(work.ep_bytes)
    mlp_f = min(work.moe_again, work.forward)
    mlp_b = min(2 * mlp_f, work.backward_input + work.backward_weight)
    attention_f, attention_b = work.forward - mlp_f, work.backward_input + work.backward_weight - mlp_b

    def over(block, t):
        return max(t - block, share * t, 0.0)

    expected = over(mlp_b, fp8) + over(attention_f, fp8) + over(attention_b, bf16) + over(mlp_f, bf16)
    x = timing.exposed(work, alone, alone, ep, True, "none", C)
    assert x.ep_f + x.ep_b == pytest.approx(expected, rel=1e-9)
    plain = timing.exposed(dataclasses.replace(work, ep_dispatch_bytes=0.0), alone, alone, ep, True, "none", C)
    assert x.ep_f + x.ep_b <= plain.ep_f + plain.ep_b
    # without the overlap every call waits whole: two of each size a micro-batch
    waiting = timing.exposed(work, alone, alone, ep, False, "none", C)
    assert waiting.ep_f + waiting.ep_b == pytest.approx(2 * fp8 + 2 * bf16, rel=1e-9)


def test_the_reader_takes_it_from_the_deepseek_v3_report_alone():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import published

    entries = load_yaml((ROOT / "benchmarks" / "data" / "published.yaml").read_text())
    runs = [published.row_spec(e) for e in entries]
    read = {r.id: r for r in runs if isinstance(r, published.Run)}
    assert read
    stated = sorted(key for key, r in read.items() if r.software.ep_dispatch_fp8)
    assert stated == ["deepseek_v3_pretraining_2048xH800"]
    assert any("FP8 all-to-alls into the experts" in note for note in read[stated[0]].assumptions)
