"""`hardware { power-limit ..., hbm-bandwidth ... }`: the spec states a power-limited GPU or a part
with slower memory, and every prediction follows (compiler/power.py, docs/language.md).

The expected figures are written here from the law and the datasheets, not read from parc: a
500 W limit on the 700 W H100 SXM sustains (500 / 700)^(1/3) of its clock, 884 of 989 TFLOP/s,
the figure benchmarks/fidelity.py applied by hand before the compiler could state it.
"""

from __future__ import annotations

import pytest
from parc import timing
from parc.pipeline import compile_text

from .test_bounds import assert_within_physics

BASE = """job p
dp 8 on nodes(8 gpus, nvlink)
model llama3-8b
hardware {{
  gpu {gpu}
{extra}}}
train {{
  seq 8192
  global-batch 16
  micro-batch 2
  recompute full
}}
dp {{
  sharding zero3
}}
"""


def _compiled(extra: str = "", gpu: str = "h100-sxm"):
    lines = "".join(f"  {line}\n" for line in extra.split("\n") if line)
    return compile_text(BASE.format(gpu=gpu, extra=lines), path="p.par", checks=False)


def _plan(extra: str = "", gpu: str = "h100-sxm"):
    compiled = _compiled(extra, gpu)
    assert compiled.plan is not None, [d.message for d in compiled.diagnostics]
    assert not [d for d in compiled.diagnostics if d.is_error], [d.message for d in compiled.diagnostics]
    return compiled.plan


def test_a_500_w_limit_derates_the_h100s_peak_by_the_cube_root_law():
    hw = timing.hardware_of(_plan("power-limit 500 W"))
    assert hw.bf16 == pytest.approx(989e12 * (500 / 700) ** (1 / 3), rel=1e-12)
    assert hw.bf16 / 1e12 == pytest.approx(884, abs=0.5)
    assert hw.fp8 == pytest.approx(1979e12 * (500 / 700) ** (1 / 3), rel=1e-12)
    assert hw.hbm == 3.35e12  # HBM keeps its own clock
    assert timing.hardware_of(_plan("power-limit 0.5 kW")).bf16 == hw.bf16


def test_a_limit_at_or_above_the_board_power_changes_nothing():
    free = timing.predict(_plan())
    for limit in ("700 W", "1 kW"):
        capped = timing.predict(_plan(f"power-limit {limit}"))
        assert capped.step_seconds == free.step_seconds


def test_the_limit_slows_the_computation_not_the_links():
    """Each part of the compute is timed at the derated peak or at HBM speed: the step grows, but
    by at most 1 / (the clock's share); MFU still divides by the datasheet's 989."""
    free = timing.predict(_plan())
    capped = timing.predict(_plan("power-limit 500 W"))
    clock = (500 / 700) ** (1 / 3)
    b0, b1 = free.breakdown, capped.breakdown
    assert b0.compute < b1.compute <= b0.compute / clock * (1 + 1e-9)
    assert b1.sent == b0.sent
    assert capped.peak == free.peak == 989e12
    assert capped.mfu < free.mfu
    assert_within_physics(_plan("power-limit 500 W"))


def test_hbm_bandwidth_replaces_the_catalogues():
    plan = _plan("hbm-bandwidth 2.4 TB/s")
    assert timing.hardware_of(plan).hbm == 2.4e12
    free = timing.predict(_plan())
    slow = timing.predict(plan)
    assert slow.breakdown.optimizer == pytest.approx(free.breakdown.optimizer * 3.35 / 2.4, rel=1e-12)
    assert slow.breakdown.compute > free.breakdown.compute
    assert_within_physics(plan)


HOST_LINK_DATASHEET = {"a100-80gb": 64e9 / 2, "h100-sxm": 128e9 / 2, "b200": 128e9 / 2,
                       "gb200-nvl72": min(900e9 / 2, 512e9) / 2}
"""One GPU's share of its host link, one direction, from the datasheets: PCIe Gen4 x16 (64 GB/s
bidirectional), Gen5 x16 (128 GB/s), and GB200's NVLink-C2C (900 GB/s bidirectional) and Grace's
512 GB/s LPDDR5X, both shared by the superchip's two GPUs."""


@pytest.mark.parametrize("gpu", sorted(HOST_LINK_DATASHEET))
def test_the_host_link_is_the_datasheets(gpu):
    assert timing.hardware_of(_plan(gpu=gpu)).host == HOST_LINK_DATASHEET[gpu]


def test_host_bandwidth_replaces_the_catalogues():
    plan = _plan("host-bandwidth 25 GB/s")
    assert plan.cluster.host_bandwidth == 25e9 and timing.hardware_of(plan).host == 25e9
    assert timing.hardware_of(_plan("host-bandwidth 25 GB/s", gpu="gb200-nvl72")).host == 25e9


def test_both_survive_the_formatter():
    from parc.lsp import formatted as format_text

    text = BASE.format(gpu="h100-sxm", extra="  power-limit   500 W\n  hbm-bandwidth 2.4   TB/s\n")
    formatted = format_text(text)
    assert "power-limit 500 W" in formatted and "hbm-bandwidth 2.4 TB/s" in formatted
    assert format_text(formatted) == formatted
    plan = compile_text(formatted, path="p.par", checks=False).plan
    assert plan.cluster.power_limit == 500 and plan.cluster.hbm_bandwidth == 2.4e12


@pytest.mark.parametrize("extra, code, col, help_has", [
    ("power-limit 500 w", "E0205", 19, "power-limit 500 W"),  # case of the unit
    ("power-limit 500", "E0205", 15, "power-limit 500 W"),  # no unit
    ("power-limit 500 GB", "E0205", 19, "power-limit 500 W"),  # bytes are not power
    ("power-limit 500W", "E0105", 15, "power-limit 500 W"),  # glued
    ("hbm-bandwidth 2.4 GB", "E0205", 21, "hbm-bandwidth 2.4 TB/s"),
    ("power-limit 100 W", "E0370", 15, "at least 175 W"),  # below a quarter of 700 W
])
def test_bad_values_are_located_with_a_fix(extra, code, col, help_has):
    compiled = _compiled(extra)
    (d,) = [d for d in compiled.diagnostics if d.is_error]
    assert d.code == code
    assert (d.span.line, d.span.col) == (6, col)
    assert help_has in d.help


def test_a_gpu_defined_in_the_spec_has_no_board_power_to_derate():
    gpu = "mine { hbm 96 GB, bf16 800 TFLOP/s, link 450 GB/s, nvlink-domain 8, generation hopper }"
    compiled = _compiled("power-limit 500 W", gpu=gpu)
    (d,) = [d for d in compiled.diagnostics if d.is_error]
    assert d.code == "E0370" and "board power" in d.message
    assert "bf16" in d.help


def test_the_codes_are_registered_and_explained():
    from parc.codes import CODES

    assert len(CODES["E0370"].explanation) > 200


def test_the_language_server_explains_them():
    from parc.lsp import hover_text

    assert "power limit" in hover_text("power-limit")
    assert "HBM bandwidth" in hover_text("hbm-bandwidth")


def test_explain_states_the_peak_the_limit_leaves():
    """`parc explain` keeps MFU against the datasheet's 989 and says the sustained peak; without
    a limit the JSON has no such field (fields are added, never renamed)."""
    capped = timing.predict(_plan("power-limit 500 W")).throughput_json()
    assert capped["peak_tflops_per_gpu"] == 989
    assert capped["sustained_peak_tflops_per_gpu"] == pytest.approx(884.07, abs=0.01)
    assert "sustained_peak_tflops_per_gpu" not in timing.predict(_plan()).throughput_json()


def test_explain_text_says_the_sustained_peak(tmp_path):
    from .conftest import run_cli

    spec = tmp_path / "p.par"
    spec.write_text(BASE.format(gpu="h100-sxm", extra="  power-limit 500 W\n"))
    result = run_cli("explain", str(spec))
    assert "(peak 989; 884 under the power limit)" in result.stdout


def test_the_law_carries_b200s_measured_maximum_to_gb200_within_two_percent():
    """The power law between two parts of one generation (`power.power_limited_throughput`), checked
    against the two parts whose matmul maxima were both measured at their board powers (S. Bekman's
    mamf-finder table, typed here, not read from kernels.py): B200 at 1,000 W and GB200 at 1,200 W,
    148 SMs each. The law gives (1.2)^(1/3) = 1.063; the sweeps measured 1,822.0 / 1,745.0 = 1.044
    in BF16 and 3,615.6 / 3,432.5 = 1.053 in FP8."""
    from parc.catalog.gpus import GPUS
    from parc.power import BOARD_POWER, power_limited_throughput

    b200, gb200 = GPUS["b200"], GPUS["gb200-nvl72"]
    law = power_limited_throughput(gb200["sms"], BOARD_POWER["gb200-nvl72"], b200["sms"], BOARD_POWER["b200"])
    assert law == pytest.approx(1.2 ** (1 / 3), rel=1e-9)
    assert law == pytest.approx(1822.0 / 1745.0, rel=0.02)
    assert law == pytest.approx(3615.6 / 3432.5, rel=0.01)
    # more SMs at one power: each runs slower, the part faster, as the 2/3 power of the count
    assert power_limited_throughput(160, 1000.0, 148, 1000.0) == pytest.approx((160 / 148) ** (2 / 3), rel=1e-9)


def test_blackwell_ultra_takes_its_siblings_maximum_carried_by_the_law():
    """GB300 (160 SMs, 1,400 W) from GB200's 1,822.0 TFLOP/s, B300 (160 SMs, 1,100 W) from B200's
    1,745.0, both at their siblings' dense peaks: 2,020 of 2,500 and 1,897 of 2,250 in BF16, 4,009
    and 3,732 of 5,000 and 4,500 in FP8 (hand computed). The time model's ceiling and bound are
    these; before, both parts stood on B200's 77.6 %."""
    from parc import kernels

    more_sms = (160 / 148) ** (2 / 3)
    cases = {
        "gb300-nvl72": (1822.0 * more_sms * (1400 / 1200) ** (1 / 3) / 2500, 3615.6 * more_sms * (1400 / 1200) ** (1 / 3) / 5000),
        "b300": (1745.0 * more_sms * (1100 / 1000) ** (1 / 3) / 2250, 3432.5 * more_sms * (1100 / 1000) ** (1 / 3) / 4500),
    }
    assert cases["gb300-nvl72"][0] * 2500 == pytest.approx(2020, abs=1)
    assert cases["b300"][0] * 2250 == pytest.approx(1897, abs=1)
    for gpu, (bf16, fp8) in cases.items():
        assert kernels.matmul_achievable(gpu, "blackwell") == pytest.approx(bf16, rel=1e-9)
        assert kernels.matmul_achievable(gpu, "blackwell", fp8=True) == pytest.approx(fp8, rel=1e-9)
        assert kernels.matmul_ceiling(gpu, "blackwell") == pytest.approx(bf16 / (794.5 / 989), rel=1e-9)
        hw = timing.hardware_of(compile_text(
            f"model llama3-8b\ndp 8 on nodes(8 gpus, nvlink)\nhardware {{ gpu {gpu} }}\n"
            "train {\n  seq 4096, global-batch 8, micro-batch 1\n  precision bf16, optimizer adamw, recompute none\n}\n",
            path="x.par").plan)
        assert hw.achievable == pytest.approx(bf16, rel=1e-9) and hw.achievable_fp8 == pytest.approx(fp8, rel=1e-9)
