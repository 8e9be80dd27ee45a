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
from parc.pipeline import compile_path

from .conftest import ROOT, load_yaml, run_cli

RUNS = {row["spec"]: row for row in load_yaml((ROOT / "tests/data/seed_runs.yaml").read_text())}


def explained(spec: str) -> dict:
    return json.loads(run_cli("explain", str(ROOT / spec), "--format", "json").stdout)


def palm_flops_per_token(model: dict, seq: int) -> float:
    """Model FLOPs per token as Llama 3 counts them for its MFU (it cites PaLM, Chowdhery et al.
    2022, App. B): 6N + 12·L·H·Q·T, N every parameter, attention over the whole sequence T
    (not halved for the causal mask), recomputation not counted. Written here from the shape,
    not taken from parc, whose model FLOPs halve causal attention."""
    layers, hidden, ffn, vocab = model["layers"], model["hidden"], model["ffn"], model["vocab"]
    heads, kv_heads = model["heads"], model["kv_heads"]
    head_dim = hidden // heads
    per_layer = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim + 3 * hidden * ffn + 2 * hidden
    params = layers * per_layer + 2 * vocab * hidden + hidden
    return 6 * params + 12 * layers * heads * head_dim * seq


LLAMA3_405B = dict(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)
"""Dubey et al. 2024, Table 3."""


def metas_tflops(report: dict) -> float:
    """parc's predicted throughput counted in Meta's convention (model TFLOP/s per GPU)."""
    return report["throughput"]["tokens_per_second_per_gpu"] * palm_flops_per_token(LLAMA3_405B, report["seq"]) / 1e12


def test_palm_flops_per_token_counts_llama3_405b():
    """The hand count gives the published parameter count (405.85B with embeddings) and the
    non-causal attention term, so a mistake here cannot pass silently."""
    at_zero = palm_flops_per_token(LLAMA3_405B, 0)
    assert at_zero / 6 == pytest.approx(405.85e9, rel=1e-4)
    assert palm_flops_per_token(LLAMA3_405B, 8192) - at_zero == 12 * 126 * 128 * 128 * 8192


def test_llama3_405b_reproduces_metas_430():
    """Meta's facts as the spec states them (interleaved schedule, lighter end stages, FSDP
    without resharding, fp32 reduction; parc's own eager job for what the paper leaves unsaid)
    give within 10 % of the 430 TFLOP/s per GPU of Table 4, counted as Meta counts (PaLM's
    MFU). What remains is below Meta's figure, and no larger than the tensor-parallel
    communication left exposed (the paper states no overlap of it, so parc assumes none)."""
    run = RUNS["specs/llama3-405b.par"]
    report = explained(run["spec"])
    assert report["target"] == "torch"
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]
    predicted = metas_tflops(report)
    assert abs(predicted / run["reported"] - 1) <= 0.10, predicted
    time = report["time"]
    if predicted < run["reported"]:
        # the step Meta's figure implies, against the exposed tp time parc charges
        implied = time["step_seconds"] * predicted / run["reported"]
        assert time["step_seconds"] - implied <= time["exposed_comm_seconds"]["tp"]


def test_llama3_405b_long_context_reproduces_metas_380():
    """The same facts on the 128K stage (cp 16, all-gather K and V as Meta does). At 128K the
    attention kernel is most of the step, and it is the one fact the paper leaves unsaid that
    now decides the figure: parc's own job runs torch's SDPA (FlashAttention-2) at the speed
    training runs reach (`attention_sustained`) and is predicted below Meta's 380 TFLOP/s per
    GPU; a cuDNN-class fused kernel (Transformer Engine's, `Software.attention = "flash-te"`) on
    the same spec comes within 10 % of it. The convention matters too: the non-causal attention
    term Meta counts is twice what the kernels compute (parc's own model-FLOP figure, causal, is
    about 0.7 of it)."""
    from dataclasses import replace

    from parc import targets, timing
    from parc.pipeline import compile_path

    run = RUNS["specs/llama3-405b-128k.par"]
    report = explained(run["spec"])
    assert report["target"] == "torch"
    predicted = metas_tflops(report)
    assert predicted < run["reported"], predicted
    assert report["throughput"]["model_tflops_per_gpu"] < 0.75 * predicted
    plan = compile_path(str(ROOT / run["spec"])).plan
    cudnn = replace(targets.software_of(plan), attention="flash-te")
    tokens = timing.predict(plan, sw=cudnn).tokens_per_second_per_gpu
    assert tokens > report["throughput"]["tokens_per_second_per_gpu"]
    fused = metas_tflops({"throughput": {"tokens_per_second_per_gpu": tokens}, "seq": report["seq"]})
    assert abs(fused / run["reported"] - 1) <= 0.10, fused


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
    rows = {row["id"]: row for row in load_yaml((ROOT / "benchmarks/data/published.yaml").read_text())}
    row = rows["korthikanti22_530B_2240gpu_selective_sp"]
    assert row["completeness"] != "full"  # partial rows are left out of the fit (benchmarks/fidelity.py)
    report = explained("tests/data/specs/mtnlg-530b-2240.par")
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert report["world_size"] == row["hardware"]["num_gpus"]
    reported = row["outcomes"]["reported"]["mfu_pct"] / 100
    assert abs(report["throughput"]["mfu"] / reported - 1) <= 0.10, report["throughput"]["mfu"]
