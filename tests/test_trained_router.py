"""A trained router's imbalance (issue 14): the what-if knob, the loads the rows imply, and the
published per-expert measurements as rank loads (benchmarks/trained_router.py,
docs/time-model.md "A trained router's imbalance")."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import fidelity  # noqa: E402
import longctx_series  # noqa: E402
import trained_router  # noqa: E402
from parc import timing  # noqa: E402
from parc.calibration import DEFAULT  # noqa: E402
from parc.memory.inputs import shape_of  # noqa: E402
from parc.pipeline import compile_text  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    found, _ = fidelity.load_rows()
    return found


def test_a_measured_load_replaces_the_random_floor_hand_computed():
    """`routing_load` puts exactly load x the mean on the busiest rank: its dispatch carries
    (tokens / tp) x top_k x load x hidden x 2 bytes, written out here (Mixtral 8x7B, tp 2, ep 8,
    4,096 tokens); a capacity factor caps it; it never goes below the mean nor above every copy
    on one rank."""
    text = "\n".join([
        "tp 2 x dp 8 on nodes(8 gpus, nvlink)", "ep 8 over dp", "model mixtral-8x7b", "hardware { gpu h100-sxm }",
        "train {", "  seq 4096, global-batch 8, micro-batch 1", "  precision bf16, optimizer adamw, recompute none",
        "}"]) + "\n"
    plan = compile_text(text, path="moe.par").plan
    assert plan is not None
    s, hw = shape_of(plan), timing.hardware_of(plan)

    def work(load: float) -> timing.Work:
        return timing.layer_work(s, timing.LayerCase(moe=True, tp=2, sp=True, cp=1, flavour="ring", seq=4096,
                                                     micro=1, ep=8, precision="bf16", attention="flash",
                                                     kernels="fused", routing_load=load), hw, DEFAULT)

    assert work(1.3).ep_bytes == pytest.approx(4096 / 2 * 2 * 1.3 * 4096 * 2, rel=1e-12)
    assert work(0.5).ep_bytes == pytest.approx(4096 / 2 * 2 * 1.0 * 4096 * 2, rel=1e-12)  # never below the mean
    assert work(50.0).ep_bytes == pytest.approx(4096 / 2 * 2 * 8 * 4096 * 2, rel=1e-12)  # all on one of 8
    assert work(1.3).gemm > work(1.0).gemm
    assert timing.measured_load(1.6, 8, capacity_factor=1.25) == 1.25


def test_implied_load_recovers_a_planted_load(rows):
    """The bisection finds the load a row's published figure implies: planted 1.45 on the
    intranode tp 4 row (its prediction at 1.45 taken as the published figure), found again."""
    row = next(r for r in rows if r.id == "modelzoo_qwen3_235b_intranode_ep8_deepep_tp4")
    step = trained_router.step_at(row, 1.45)
    planted = dataclasses.replace(row, reported_tflops=fidelity.predicted_tflops(row, step))
    assert trained_router.implied_load(planted) == pytest.approx(1.45, abs=1e-6)
    # slower than published even at the mean load: no routing load explains it
    slow = dataclasses.replace(row, reported_tflops=1.5 * fidelity.predicted_tflops(row, trained_router.step_at(row, 1.0)))
    assert trained_router.implied_load(slow) is None


def test_forced_balance_is_the_random_router_and_dropless_adds_the_series_excess(rows):
    """Megatron-Core's forced balancing is a random router (`moe_utils.RandomSTE`): each forced row
    is predicted exactly as its dropless sibling (the model has one router, the random one). The
    series' excess, 85 ms per micro-batch from the two published lines alone (326 - 241 ms in
    docs/time-model.md's table), needs the busiest rank well above the floor (1.007x at 16K / tp 4
    x top-8 = 32,768 copies over 8 ranks): between 1.5x and 1.7x, and the model's micro-batch at
    that load grows by the excess."""
    series = [r for r in rows if r.id.startswith(longctx_series.SERIES)]
    assert len(series) == 8
    for forced in (r for r in series if r.id.endswith("forced_balance")):
        dropless = next(r for r in series if r.id == forced.id.replace("forced_balance", "dropless"))
        assert not forced.software.balanced_routing
        assert trained_router.step_at(forced, 0.0) == pytest.approx(trained_router.step_at(dropless, 0.0), rel=1e-12)
    found = trained_router.series_load(rows)
    assert found is not None
    assert found.excess == pytest.approx(0.085, abs=0.002)
    assert 1.5 < found.load < 1.7
    dropless = [r for r in series if r.id.endswith("dropless")]
    grown = [(trained_router.step_at(r, found.load) - trained_router.step_at(r, 0.0)) / trained_router.slots_of(r)
             for r in dropless]
    assert sum(grown) / len(grown) == pytest.approx(found.excess, rel=1e-6)
    assert trained_router.floor_load(dropless[0]) == pytest.approx(1 + 1.4338 * (0.875 / 32768) ** 0.5, abs=2e-4)


def test_published_max_violation_as_rank_loads_hand_computed():
    """Wang et al. 2024 (arXiv 2408.15664) Table 2: MaxVio_global 0.72 (1B, aux loss 0.001) and
    0.04 (aux-loss-free). On Qwen3-235B's mesh (128 experts, ep 8: 16 a rank) the busiest expert's
    excess alone makes 1 + 0.72 / 16 = 1.045, every expert of the rank as hot 1.72; on
    DeepSeek-V3's (256 experts, ep 64: 4 a rank) the aux-free figure makes 1.01 and 1.04."""
    by = {(m.source[-2:], m.balancing.split(",")[0]): m.max_violation for m in trained_router.MEASURED}
    assert by[("1B", "aux loss")] == 0.72 and by[("3B", "aux loss")] == 0.52
    assert by[("1B", "aux-loss-free bias")] == 0.04 == by[("3B", "aux-loss-free bias")]
    assert trained_router.rank_loads(0.72, 128, 8) == pytest.approx((1.045, 1.72))
    assert trained_router.rank_loads(0.04, 256, 64) == pytest.approx((1.01, 1.04))
