"""Fused attention on Blackwell and Blackwell Ultra from cuDNN's own sweeps (issue 14).

cudnn-frontend's training SDPA benchmark ran one script with one cuDNN release (9.19.1) on H200,
GB200 and GB300, BF16 and FP8 kernels of the same runs, at three model presets (Llama 3.1's
grouped-query attention, DeepSeek-V3's MLA core, gpt-oss's sliding window); its next release
(9.22.0) added MXFP8 kernels. benchmarks/data/attention_kernels.yaml carries them (`suite`,
`mxfp8`). `kernels.ATTENTION_MEASURED` is each Blackwell part's fraction of its own peak over
H200's, `kernels.ATTENTION_FP8_MEASURED` each FP8 kernel's speedup over its run's BF16 one. These
tests check those against hand arithmetic on the published figures, against an independent
measurement of the same part (its matmul sweep), and the model's charge point by point against
runs it was not fitted on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from parc import kernels, timing

from .conftest import load_yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = load_yaml((ROOT / "benchmarks" / "data" / "attention_kernels.yaml").read_text())
sys.path.insert(0, str(ROOT / "benchmarks"))
import kernel_fit  # noqa: E402  (the yaml's reader, and the two-layer model it times: fixtures here)


def _runs(preset: str, section: str = "suite") -> dict[str, dict]:
    return {r["part"]: r for r in DATA[section]["runs"] if r["preset"] == preset}


def test_the_harness_counts_flops_as_the_benchmark_does():
    """`kernel_fit.sweep_flops` against cudnn-frontend's `flops()` (benchmark_single_sdpa.py) worked
    by hand: 2 x (qk + v dims) x heads x batch x the unmasked entries; a causal 4-token square has
    4 x 5 / 2 = 10 entries, an unmasked one 16, a 2-key window over 4 tokens 2 x 3 / 2 + 2 x 2 = 7."""
    run = {"qk_dim": 128, "v_dim": 128, "heads": 64, "batch": 2}
    assert kernel_fit.sweep_flops(run, 4, True) == 2 * 256 * 64 * 2 * 10
    assert kernel_fit.sweep_flops(run, 4, False) == 2 * 256 * 64 * 2 * 16
    assert kernel_fit.sweep_flops(dict(run, window=2), 4, True) == 2 * 256 * 64 * 2 * 7
    mla = {"qk_dim": 192, "v_dim": 128, "heads": 128, "batch": 1}
    assert kernel_fit.sweep_flops(mla, 8192, True) == 2 * (192 + 128) * 128 * (8192 * 8193 // 2)


def _quotients(part: str, run: dict, seq: int, causal: bool, forward: float, backward: float,
               kind: str = "") -> tuple[float, float]:
    """(forward, backward): the model's seconds for one call (`kernel_fit.model_seconds`: a causal
    call as a layer's attention, an unmasked one as one unmasked kernel, at the kernel's own speed,
    `sustained` 1: a benchmark, not a training run) over the seconds the run's TFLOP/s give."""
    f, b = kernel_fit.model_seconds(part, run, seq, causal, kind)
    flop = kernel_fit.sweep_flops(run, seq, causal)
    return f / (flop / (forward * 1e12)), b / (2.5 * flop / (backward * 1e12))


def test_the_stored_measurements_are_the_suites_medians():
    """Both tables are what benchmarks/kernel_fit.py derives from the yaml, and the medians are
    the ones worked out by hand from the published TFLOP/s: GB200's ten forward ratios (fraction of
    2,500 over H200's fraction of 989, causal and unmasked, 2K-32K) sort to 0.778 ... 1.017 with
    0.978 and 0.982 in the middle, at head dim 128 (at 64, gpt-oss's preset: 0.634 ... 0.698, 0.690
    the middle); GB200's MXFP8 causal speedups over its BF16 kernel forward
    1.170, 1.197, 1.208, 1.212, 1.261 and backward 0.842, 0.918, 0.966, 1.081, 1.162; H200's FP8
    causal backward 1.062, 0.994, 0.795, 0.646, 0.637 (slower than BF16 from 8K keys)."""
    assert kernel_fit.measured_ratios(DATA) == kernels.ATTENTION_MEASURED
    assert kernel_fit.fp8_speedups(DATA) == kernels.ATTENTION_FP8_MEASURED
    assert set(kernels.ATTENTION_MEASURED) == {"gb200-nvl72", "gb300-nvl72"}
    assert all(set(by_dim) == {64, 128} for by_dim in kernels.ATTENTION_MEASURED.values())
    assert kernels.ATTENTION_MEASURED["gb200-nvl72"][128][0] == pytest.approx((0.978 + 0.982) / 2, abs=0.002)
    # head dim 64 (gpt-oss preset), forward: 0.634, 0.676, 0.690, 0.695, 0.698
    assert kernels.ATTENTION_MEASURED["gb200-nvl72"][64][0] == pytest.approx(0.690, abs=0.001)
    mx = kernels.ATTENTION_FP8_MEASURED["gb200-nvl72"]["gqa"]["mxfp8"]["causal"]
    assert mx == pytest.approx((1.208, 0.966), abs=0.001)
    assert kernels.ATTENTION_FP8_MEASURED["h200"]["gqa"]["fp8"]["causal"][1] == pytest.approx(0.795, abs=0.001)
    # one point by hand: GB300 forward, causal, 8K keys, against H200's
    gb300, h200 = _runs("llama3.1")["gb300-nvl72"], _runs("llama3.1")["h200"]
    point = next(p for p in gb300["points"] if p[:2] == [8192, True])
    reference = next(p for p in h200["points"] if p[:2] == [8192, True])
    assert (point[2] / 2500) / (reference[2] / 989) == pytest.approx((1887 / 2500) / (644 / 989), rel=1e-12)


def test_gb200s_attention_sweep_agrees_with_its_matmul_sweep():
    """Two independent measurements of one part: GB200's fused attention against H200's (cuDNN's
    suite) and GB200's best matmul against H100's (`kernels.MAMF_BF16`, ml-engineering's
    mamf-finder; H200 is H100's chip at H100's clocks). Before the attention sweep the model charged
    attention at the matmul ratio, 0.907; the sweep gives 0.98 forward and 0.94 backward: within
    8.5 %."""
    matmul = kernels.matmul_ceiling("gb200-nvl72", "blackwell")
    forward, backward = kernels.ATTENTION_MEASURED["gb200-nvl72"][128]
    assert matmul == pytest.approx(0.907, abs=0.001)
    assert forward == pytest.approx(matmul, rel=0.085)
    assert backward == pytest.approx(matmul, rel=0.085)


def test_every_part_gets_its_attention_ceiling():
    """GB200 and GB300 their measured ratios; B200 and B300 their rack siblings', scaled by the matmul
    sweep's ratio of the two parts (B200: 1,745.0 / 2,250 against GB200's 1,822.0 / 2,500, 1.064x;
    B300 against GB300, neither swept, their maxima carried by the power law from B200's and GB200's:
    1,745.0 x 1.0533 x 1.1^(1/3) / 2,250 against 1,822.0 x 1.0533 x (7/6)^(1/3) / 2,500, 1.043x); a
    Blackwell GPU defined in a spec its
    generation's flagship's (GB200's, scaled as a B200: the matmul table's flagship); Hopper 1 (the
    reference); Ampere and CDNA3, never measured, their matmul ceiling (1). Between the measured
    head dims the ceiling is linear (96: halfway), outside them the nearest one's."""
    def points(part: str, scale: float = 1.0):
        return [x for d, (f, b) in sorted(kernels.ATTENTION_MEASURED[part].items()) for x in (d, f * scale, b * scale)]

    def flat(ceiling):
        return [x for point in ceiling for x in point]

    b200_scale = (1745.0 / 2250) / (1822.0 / 2500)
    assert flat(kernels.attention_ceiling("gb200-nvl72", "blackwell")) == points("gb200-nvl72")
    assert flat(kernels.attention_ceiling("b200", "blackwell")) == pytest.approx(points("gb200-nvl72", b200_scale))
    assert flat(kernels.attention_ceiling("gb300-nvl72", "blackwell")) == pytest.approx(points("gb300-nvl72"))
    more_sms = (160 / 148) ** (2 / 3)  # 1.0533
    b300_scale = (1745.0 * more_sms * 1.1 ** (1 / 3) / 2250) / (1822.0 * more_sms * (1400 / 1200) ** (1 / 3) / 2500)
    assert b300_scale == pytest.approx(1.0434, abs=5e-4)
    assert flat(kernels.attention_ceiling("b300", "blackwell")) == pytest.approx(points("gb300-nvl72", b300_scale))
    assert flat(kernels.attention_ceiling("my-blackwell", "blackwell")) == pytest.approx(
        points("gb200-nvl72", b200_scale))
    for gpu, generation in (("h100-sxm", "hopper"), ("h200", "hopper"), ("a100-80gb", "ampere"), ("mi300x", "cdna3")):
        assert kernels.attention_ceiling(gpu, generation) == ((128, 1.0, 1.0),), gpu
    gb200 = kernels.attention_ceiling("gb200-nvl72", "blackwell")
    (_, f64, b64), (_, f128, b128) = gb200
    assert kernels.ceiling_at(gb200, 96, False) == pytest.approx((f64 + f128) / 2)
    assert kernels.ceiling_at(gb200, 96, True) == pytest.approx((b64 + b128) / 2)
    assert kernels.ceiling_at(gb200, 32, False) == f64 and kernels.ceiling_at(gb200, 192, True) == b128
    assert kernels.fp8_attention_part("h100-sxm", "hopper") == "h200"
    assert kernels.fp8_attention_part("b300", "blackwell") == "gb300-nvl72"
    assert kernels.fp8_attention_part("mi300x", "cdna3") == ""
    hw, _ = kernel_fit.sweep_case("gb300-nvl72", _runs("llama3.1")["gb300-nvl72"])
    assert flat(hw.attention_ceiling) == pytest.approx(points("gb300-nvl72")) and hw.fp8_attention_part == "gb300-nvl72"
    assert hw.ceiling == pytest.approx(kernels.matmul_ceiling("gb300-nvl72", "blackwell"))


def test_the_model_charges_blackwell_as_it_charges_the_h200_of_the_same_suite():
    """Point by point (causal and unmasked, each direction), the model's seconds over the run's on
    GB200 and GB300, against the same quotient on H200: within 11 % from 4K keys (the ratio is the
    points' median, this its scatter); at 2K the Blackwell kernels run 4-21 % slower than the ratio
    has them, more fixed work per tile against tensor cores twice as fast (docs/time-model.md).
    The model's H200 quotients themselves are 0.93-1.20: its curve is FlashAttention-3's 2024
    cuDNN, below cuDNN 9.19 at long keys."""
    runs = _runs("llama3.1")
    h200 = {tuple(p[:2]): _quotients("h200", runs["h200"], *p[:4]) for p in runs["h200"]["points"]}
    assert all(0.9 < q < 1.2 for pair in h200.values() for q in pair)
    checked = 0
    for part in ("gb200-nvl72", "gb300-nvl72"):
        for point in runs[part]["points"]:
            model = _quotients(part, runs[part], *point[:4])
            for direction in (0, 1):
                deviation = model[direction] / h200[tuple(point[:2])][direction] - 1
                if point[0] >= 4096:
                    assert abs(deviation) < 0.11, (part, point[:2], direction)
                else:
                    assert -0.22 < deviation < 0.0, (part, point[:2], direction)
                checked += 1
    assert checked == 40


def test_gb300_runs_the_forward_faster_than_gb200_by_what_the_suite_shows():
    """Same dense peak, same preset and release: GB300's forward at 8K causal runs 1,887 TFLOP/s where
    GB200's runs 1,598 (1.18x, its doubled exponential units); the model's forward seconds differ
    by that within 5 %, where the matmul ceiling alone charged GB300 1.06x GB200."""
    runs = _runs("llama3.1")
    hw2, shape = kernel_fit.sweep_case("gb200-nvl72", runs["gb200-nvl72"])
    hw3, _ = kernel_fit.sweep_case("gb300-nvl72", runs["gb300-nvl72"])
    f2, _, _ = timing.flash_attention_seconds(shape, 1, 1, "ring", 8192, 8192, "flash-te", hw2, 1.0)
    f3, _, _ = timing.flash_attention_seconds(shape, 1, 1, "ring", 8192, 8192, "flash-te", hw3, 1.0)
    assert f2 / f3 == pytest.approx(1887 / 1598, rel=0.05)


def test_windowed_attention_at_head_dim_64():
    """The gpt-oss preset (head dim 64, a 1,024-key window, GQA 64 / 8), a windowed layer charged as
    the causal curve at min(keys, 2W): on H200, never fitted, forward and backward each within
    11.5 % at every length. GB200's and GB300's head-dim-64 ceilings are this preset's medians, so
    there each point follows H200's quotient within the points' scatter (12 %): what the ceiling
    at 128 (0.98 forward on GB200) would have charged 1.4x too fast forward."""
    runs = _runs("gpt_oss")
    h200 = {p[0]: _quotients("h200", runs["h200"], *p[:4]) for p in runs["h200"]["points"]}
    assert all(q == pytest.approx(1.0, abs=0.115) for pair in h200.values() for q in pair)
    checked = 0
    for part in ("gb200-nvl72", "gb300-nvl72"):
        for seq, causal, forward, backward, _, _ in runs[part]["points"]:
            f, b = _quotients(part, runs[part], seq, causal, forward, backward)
            assert f == pytest.approx(h200[seq][0], rel=0.12) and b == pytest.approx(h200[seq][1], rel=0.12), (part, seq)
            checked += 1
    assert checked == 10


def test_mla_attention_follows_the_kernel():
    """cuDNN's DeepSeek-V3 preset (MLA's core: queries and keys 192 wide, values 128, causal), never
    fitted: the model counts 2 x (192 + 128) FLOPs a score entry, as the benchmark does, at the
    curve's head-dim-128 efficiency. On GB200 and GB300 its seconds are 0.84-1.26x the run's, the
    same span as the Llama preset's; H200's runs to 8K (the longer failed) 0.88-1.14x."""
    checked = 0
    for part, run in _runs("dsv3").items():
        hw, shape = kernel_fit.sweep_case(part, run)
        assert (shape.qk_dim, shape.value_dim, shape.score_flops) == (192, 128, 640)
        for seq, causal, forward, backward, _, _ in run["points"]:
            if forward is None:
                continue
            f, b = _quotients(part, run, seq, causal, forward, backward)
            assert 0.83 < f < 1.27 and 0.83 < b < 1.27, (part, seq)
            checked += 1
    assert checked == 13


def test_fp8_attention_at_the_speedups_the_runs_measured():
    """Point by point, the model's FP8 (and MXFP8) seconds over the run's, against its BF16 seconds
    over the BF16 kernel of the same run: the speedup charged is the median of the run's points at
    that mask and layer (MLA's own), so this measures their scatter, nothing else. Blackwell FP8
    within 16 %, MXFP8 within 22 % (the speedup grows with the keys); H200 within 50 %: its FP8
    causal backward falls from 1.06x BF16 at 2K keys to 0.64x at 32K, where the unmasked one gains
    1.07-1.13x. The sliding-window preset is not charged FP8 (below)."""
    bound = {("h200", "fp8"): 0.5, ("gb200-nvl72", "fp8"): 0.16, ("gb300-nvl72", "fp8"): 0.16,
             ("gb200-nvl72", "mxfp8"): 0.22, ("gb300-nvl72", "mxfp8"): 0.22}
    checked = 0
    for section, kind in (("suite", "fp8"), ("mxfp8", "mxfp8")):
        for run in DATA[section]["runs"]:
            if run["preset"] == "gpt_oss":
                continue
            for seq, causal, bf16_f, bf16_b, fp8_f, fp8_b in run["points"]:
                if None in (bf16_f, bf16_b, fp8_f, fp8_b):
                    continue
                base = _quotients(run["part"], run, seq, causal, bf16_f, bf16_b)
                quantized = _quotients(run["part"], run, seq, causal, fp8_f, fp8_b, kind)
                for direction in (0, 1):
                    assert quantized[direction] == pytest.approx(base[direction], rel=bound[(run["part"], kind)]), \
                        (run["part"], run["preset"], kind, seq, causal, direction)
                    checked += 1
    assert checked == 2 * (3 * 10 + 2 * 5 + 4 * 10)


def test_the_fp8_window_sweeps_backward_is_the_full_causal_square():
    """The one FP8 sliding-window sweep (9.19's gpt-oss preset, a 1,024-key window): its BF16
    backward runs at a steady rate from 4K keys on (time linear in the keys: the band), its FP8
    backward's TFLOP/s under the same band count fall towards half at each doubling of the keys
    (time quadratic: the full causal square, the benchmark's `sdpa_fp8_backward` call passing no
    diagonal band). So that backward is not the windowed kernel's and no speedup is written for
    it; the forward's (banded in both kernels) is."""
    checked = 0
    for part, run in _runs("gpt_oss").items():
        points = [p for p in run["points"] if p[0] >= 4096 and None not in p]
        for (s0, _, bf0, bb0, qf0, qb0), (s1, _, bf1, bb1, qf1, qb1) in zip(points, points[1:], strict=False):
            assert s1 == 2 * s0
            assert bb1 / bb0 == pytest.approx(1.0, abs=0.08)  # BF16: linear time
            assert 1.55 < qb0 / qb1 < 2.05, (part, s0)  # FP8: quadratic time, tending to 2
            assert qf1 / qf0 == pytest.approx(bf1 / bf0, rel=0.08)  # both forwards banded alike
            checked += 1
        if points:  # this part's FP8 window sweep: its forward speedup written, its backward not
            forward, backward = kernels.ATTENTION_FP8_MEASURED[part]["window"]["fp8"]["causal"]
            assert forward > 1 and backward is None, part
    assert checked == 6


def test_a_windowed_layer_keeps_the_bf16_kernels_speed_under_fp8_attention():
    """No FP8 backward of a windowed kernel is measured (above), and the one forward speedup is
    per-tensor, where the rows that run FP8 attention on a window run MXFP8 (Megatron-Bridge
    26.06's gpt-oss on GB200 and GB300): a windowed layer is charged BF16 under FP8 attention, and
    its full layers the measured speedup."""
    run = _runs("gpt_oss")["gb200-nvl72"]
    hw, shape = kernel_fit.sweep_case("gb200-nvl72", run)
    bf16 = timing.flash_attention_seconds(shape, 1, 1, "ring", 8192, 8192, "flash-te", hw, 1.0)
    mx = timing.flash_attention_seconds(shape, 1, 1, "ring", 8192, 8192, "flash-te-mxfp8", hw, 1.0)
    assert mx == bf16
    assert "mxfp8" not in kernels.ATTENTION_FP8_MEASURED["gb200-nvl72"]["window"]
