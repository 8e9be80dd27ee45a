"""The shipped seed specs against the runs they reproduce (issue 16, point 5).

The published figures are read from tests/data/seed_runs.yaml (copied from the papers), the
predictions from `parc explain --format json`. `specs/megatron-1t.par` is one of the runs the
time model's constants are fitted on, so agreeing with it proves little: its independent check
refits the constants without its source (Narayanan et al. 2021, Table 1) and predicts the spec
with those, as docs/time-model.md's leave-one-source-out table does for the whole table.
"""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from parc.pipeline import compile_path

from .conftest import ROOT, run_cli

RUNS = {row["spec"]: row for row in yaml.safe_load((ROOT / "tests/data/seed_runs.yaml").read_text())}


def explained(spec: str) -> dict:
    return json.loads(run_cli("explain", str(ROOT / spec), "--format", "json").stdout)


def test_llama3_405b_reproduces_metas_430():
    """Meta's facts as the spec states them (interleaved schedule, lighter end stages, FSDP
    without resharding, fp32 reduction; parc's own eager job for what the paper leaves unsaid)
    give within 10 % of the 430 model TFLOP/s per GPU of Table 4. What remains is below Meta's
    figure, and no larger than the tensor-parallel communication left exposed (the paper states
    no overlap of it, so parc assumes none)."""
    run = RUNS["specs/llama3-405b.par"]
    report = explained(run["spec"])
    assert report["target"] == "torch"
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]
    predicted = report["throughput"][run["field"]]
    assert abs(predicted / run["reported"] - 1) <= 0.10, predicted
    time = report["time"]
    if predicted < run["reported"]:
        # the step Meta's figure implies, against the exposed tp time parc charges
        implied = time["step_seconds"] * predicted / run["reported"]
        assert time["step_seconds"] - implied <= time["exposed_comm_seconds"]["tp"]


def test_llama3_405b_long_context_reproduces_metas_380():
    """The same facts on the 128K stage (cp 16, all-gather K and V as Meta does): within 10 % of
    Table 4's 380 model TFLOP/s per GPU."""
    run = RUNS["specs/llama3-405b-128k.par"]
    report = explained(run["spec"])
    assert report["target"] == "torch"
    predicted = report["throughput"][run["field"]]
    assert abs(predicted / run["reported"] - 1) <= 0.10, predicted


def test_megatron_1t_agrees_with_its_fitted_figure():
    run = RUNS["specs/megatron-1t.par"]
    predicted = explained(run["spec"])["throughput"][run["field"]]
    assert abs(predicted / run["reported"] - 1) <= 0.10, predicted


@pytest.mark.slow
def test_megatron_1t_out_of_sample():
    """The constants refitted on the other sources' published runs only (Korthikanti et al. 2022,
    Megatron-LM's 2024 table), then the shipped spec predicted with them: within 10 % of 163."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import fidelity
    finally:
        sys.path.remove(str(ROOT))
    from parc import timing

    run = RUNS["specs/megatron-1t.par"]
    rows, _ = fidelity.load_rows()
    held = [r for r in rows if r.fitted and r.group == run["fitted_group"]]
    others = [r for r in rows if r.fitted and r.group != run["fitted_group"]]
    assert held and others
    constants = fidelity.fit(others, [fidelity.prepare(r) for r in others])
    try:
        plan = compile_path(str(ROOT / run["spec"])).plan
        prediction = timing.predict(plan, constants)
        b = prediction.breakdown
        tflops = prediction.hardware_flops_per_token * prediction.tokens_per_step / (b.step * prediction.world) / 1e12
        # the same arithmetic as explain's, checked on the fitted constants
        fitted = timing.predict(plan)
        assert fitted.hardware_flops_per_token * fitted.tokens_per_step / (fitted.breakdown.step * fitted.world) / 1e12 \
            == pytest.approx(explained(run["spec"])["throughput"][run["field"]], rel=1e-3)
    finally:
        timing.clear_caches()
    assert abs(tflops / run["reported"] - 1) <= 0.10, tflops


def test_an_unfitted_megatron_run_from_a_spec():
    """A published Megatron-LM run the constants never saw, written as a spec
    (tests/data/specs/mtnlg-530b-2240.par: Korthikanti et al. 2022's 530B on 2,240 A100): parc's
    MFU within 10 % of the reported one, read from benchmarks/data/published.yaml."""
    rows = {row["id"]: row for row in yaml.safe_load((ROOT / "benchmarks/data/published.yaml").read_text())}
    row = rows["korthikanti22_530B_2240gpu_selective_sp"]
    assert row["completeness"] != "full"  # partial rows are left out of the fit (benchmarks/fidelity.py)
    report = explained("tests/data/specs/mtnlg-530b-2240.par")
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert report["world_size"] == row["hardware"]["num_gpus"]
    reported = row["outcomes"]["reported"]["mfu_pct"] / 100
    assert abs(report["throughput"]["mfu"] / reported - 1) <= 0.10, report["throughput"]["mfu"]
