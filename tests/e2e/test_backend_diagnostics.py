"""`parc compile` says what the generated runtime cannot run as written (E06xx, W06xx).

These findings concern code generation only, so `parc check` does not report them; `parc
compile` does, and refuses to write a job for an error.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

BASE = """job diag
{layout}
model tiny
hardware {{
  gpu h100-sxm
}}
train {{
  seq 32
  global-batch 16
{train}}}{train_allow}
"""


def _compile(tmp_path: Path, layout: str, train: str = "", model: str = "tiny", train_allow: str = ""):
    spec = tmp_path / "diag.par"
    text = BASE.format(layout=layout, train=train, train_allow=train_allow)
    spec.write_text(text.replace("model tiny", f"model {model}"))
    return run_cli("compile", str(spec), "-o", str(tmp_path / "job")), tmp_path / "job"


def test_fp8_is_run_as_bf16_and_said_so(tmp_path):
    result, job = _compile(tmp_path, "dp 8 on nodes(8 gpus, nvlink)", "  precision fp8\n")
    assert result.exit_code == 0
    assert "warning[W0601]: precision fp8 runs as bf16 in the generated runtime" in result.stderr
    assert "diag.par:10:13" in result.stderr  # the `fp8` of the precision line
    assert (job / "train.py").exists()
    assert "runs as bf16" in (job / "train.py").read_text()


def test_fp8_can_be_acknowledged(tmp_path):
    result, _ = _compile(tmp_path, "dp 8 on nodes(8 gpus, nvlink)", "  precision fp8\n", train_allow=" allow W0601")
    assert result.exit_code == 0
    assert "W0601" in result.stderr and "(allowed)" in result.stderr


def test_ep_folded_over_tp_is_refused(tmp_path):
    result, job = _compile(tmp_path, "tp 2 x dp 4 on nodes(8 gpus, nvlink)\nep 4 over tp x dp", model="tiny-moe")
    assert result.exit_code == 1
    assert "error[E0602]: the generated runtime cannot fold ep over tp" in result.stderr
    assert not job.exists()


def test_tp_must_divide_kv_heads(tmp_path):
    result, job = _compile(tmp_path, "tp 4 x dp 2 on nodes(8 gpus, nvlink)")  # tiny: 2 kv heads
    assert result.exit_code == 1
    assert "error[E0603]: tp 4 does not divide the 2 kv heads" in result.stderr
    assert not job.exists()
