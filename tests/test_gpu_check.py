"""benchmarks/gpu_check.py and what its one GPU run measured.

- The kernels it measured on an H200 (torch 2.11's flash attention and cuBLAS;
  benchmarks/data/gpu/h200_kernels.json, as the device printed it) against parc's kernel models,
  which were fitted on other people's published sweeps and training runs, never on this file:
  the FlashAttention-2 curve at every length, and what the time model charges parc's job for one
  Llama 3 405B layer's matrix products.
- The script's three steps end to end on the CPU (a small spec, the job's `--real-tensors` and
  `--timed-steps` path), and the job's refusal of a rehearsal with no step.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import ROOT

MEASURED = json.loads((ROOT / "benchmarks/data/gpu/h200_kernels.json").read_text())
PEAK = 989e12  # H200 dense BF16, the catalogue's and the datasheet's


def test_the_measurement_is_the_h200s():
    assert MEASURED["gpu"] == "NVIDIA H200" and MEASURED["torch"].startswith("2.11")
    assert 0.7 < MEASURED["matmul_8192_tflops"] * 1e12 / PEAK < 0.85  # a sane tensor-core ceiling


def test_the_flash_attention_curve_is_torchs_kernel_on_an_h200():
    """parc's FlashAttention-2 curve (fitted on Dao's published H100 sweep, `kernels.py`) at each
    length of the sweep (causal, 16 query heads on 1 kv head, head dim 128, 131,072 tokens per
    call) against torch's flash kernel timed on an H200: forward within 7 % to 32K tokens and
    12 % beyond (the measured forward falls off at 64K-128K, the curve does not), backward within
    7 % everywhere. Causal FLOPs are half the square; the backward's are 2.5x the forward's."""
    from parc import kernels

    rows = MEASURED["attention"]
    assert len(rows) == 8
    for row in rows:
        s, d = row["seq"], row["head_dim"]
        flop = 4 * row["batch"] * row["heads"] * s * s * d / 2
        forward = flop / row["forward_s"] / PEAK
        backward = 2.5 * flop / row["backward_s"] / PEAK
        assert kernels.FA2_HOPPER.efficiency(s, d, True, False) == pytest.approx(
            forward, rel=0.07 if s <= 32768 else 0.12), s
        assert kernels.FA2_HOPPER.efficiency(s, d, True, True) == pytest.approx(backward, rel=0.07), s


def test_a_405b_layers_products_cost_what_the_time_model_charges_the_job():
    """One Llama 3 405B layer at tp 8 and 8,192 tokens (specs/llama3-405b.par on an H200): the
    job's seven nn.Linear products (wq, wk, wv, wo, w1, w3, w2) measured 9.33 ms forward and
    19.22 ms backward (each product's two backward GEMMs). The time model charges the layer its
    fused QKV and gate/up products at its fitted GEMM efficiency, slowed by the eager runtime's
    factor, and twice that backward: within 5 % of both."""
    from parc import timing
    from parc.calibration import DEFAULT
    from parc.memory.inputs import shape_of
    from parc.pipeline import compile_text

    text = (ROOT / "specs/llama3-405b.par").read_text().replace("gpu h100-sxm", "gpu h200")
    plan = compile_text(text, "llama3-405b-h200.par").plan
    hw, shape = timing.hardware_of(plan), shape_of(plan)
    gemms = MEASURED["gemms"]
    assert [g["name"] for g in gemms] == ["wq", "wk", "wv", "wo", "w1", "w3", "w2"]
    assert {g["m"] for g in gemms} == {8192}
    forward = sum(g["forward_s"] for g in gemms)
    backward = sum(g["dgrad_s"] + g["wgrad_s"] for g in gemms)
    n, tp = 8192, 8
    layer = timing.attention_gemms(shape, tp, n) + [(1, 1, n, shape.hidden, 2 * shape.ffn / tp),
                                                    (1, 1, n, shape.ffn / tp, shape.hidden)]
    charged = sum(count * timing.gemm_seconds(m, k, nn, "bf16", hw, DEFAULT) for _, count, m, k, nn in layer)
    charged /= DEFAULT.eager_efficiency
    assert charged == pytest.approx(forward, rel=0.05)
    assert 2 * charged == pytest.approx(backward, rel=0.05)


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """prepare, measure (CPU) and report on tests/data/specs/rehearse-8k.par (pipeline, tp, zero3)."""
    here = tmp_path_factory.mktemp("gpu-check")
    script = [sys.executable, str(ROOT / "benchmarks/gpu_check.py")]
    subprocess.run([*script, "prepare", str(here / "cases"), "--spec", "tests/data/specs/rehearse-8k.par",
                    "--sweep", "64,128", "--sweep-tokens", "256"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run([*script, "measure", str(here / "cases"), str(here / "out"), "--device", "cpu", "--steps", "2"],
                   cwd=ROOT, check=True, capture_output=True, timeout=600)
    report = subprocess.run([*script, "report", str(here / "cases"), str(here / "out")], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    return here, report


def test_the_three_steps_run_on_the_cpu(checked):
    here, report = checked
    cases = json.loads((here / "cases/cases.json").read_text())
    [job] = cases["jobs"]
    assert job["coordinates"]["pp"] == 3  # the time model's slowest stage: the last, with the loss
    assert [g["name"] for g in cases["gemms"]] == ["wq", "wk", "wv", "wo", "w1", "w3", "w2"]
    assert [(g["m"], g["k"], g["n"]) for g in cases["gemms"]][:2] == [(128, 2048, 256), (128, 2048, 256)]
    [record] = json.loads((here / "out/rehearse-8k.json").read_text())
    assert record["rank"] == job["rank"] and record["steps"] == 0
    timings = record["timed_steps"]
    assert len(timings) == 2
    for step in timings:
        assert step["forward_backward"] > 0 and step["optimizer"] > 0
    assert "peak" not in record  # no tracked step: no tracker
    kernels = json.loads((here / "out/kernels.json").read_text())
    assert [a["seq"] for a in kernels["attention"]] == [64, 128]
    assert all(a["forward_s"] > 0 and a["backward_s"] > 0 for a in kernels["attention"])
    assert "| rehearse-8k |" in report and "| wq | 128 x 2048 x 256 |" in report and "| 128 |" in report


def test_a_rehearsal_needs_a_step(checked):
    here, _ = checked
    done = subprocess.run([sys.executable, "train.py", "--rehearse", "--steps", "0"], cwd=here / "cases/jobs/rehearse-8k",
                          capture_output=True, text=True)
    assert done.returncode == 2 and "needs --steps or --timed-steps" in done.stderr
