"""Megatron-DeepSpeed's tensor-parallel backward, as its code ran it (stop 63).

The fork's column-parallel linear (`megatron/mpu/layers.py`, bigscience-workshop's at b1359ee and
microsoft's at 1619965) wraps its input in `copy_to_tensor_model_parallel_region`, whose backward
all-reduces the input gradient before anything else runs: nothing overlaps it. Megatron-LM's
asynchronous all-reduce under the weight-gradient GEMM reached the fork only when it merged upstream
(microsoft 9e72d571, 2023-07-04). BLOOM's and MT-NLG's rows are read so (GLM-130B's names no Megatron runtime
and had no overlap before); Megatron-LM's own rows of 2022 and later keep the backward overlap, and a row that names DeepSpeed only to compare with
it is not a DeepSpeed row.

BigScience's own fork (bigscience-workshop/Megatron-DeepSpeed, which ran BLOOM's trainings and the
topology benchmarks before them) never took either later kernel: at its head (8387ae17, 2023-12-07)
`megatron/mpu/layers.py` has no `async_op` in its history and `megatron/model/transformer.py`
computes attention with `baddbmm` and `FusedScaleMaskSoftmax` (no FlashAttention under `megatron/`).
So a row that names BigScience reads both, dated or not (stop 64).
"""

from __future__ import annotations

import dataclasses

import pytest

from .reader_paraphrase import ROWS, apply, note, published, reading, rep


def fidelity_script():
    """benchmarks/fidelity.py (on the path `reader_paraphrase` set), as the timing checks use it."""
    import importlib

    return importlib.import_module("fidelity")


DEEPSPEED_ROWS = ("mtnlg_530b_2240gpu", "mtnlg_530b_2800gpu", "mtnlg_530b_3360gpu", "bloom_176b_384gpu_tp4_pp12_dp8")
MEGATRON_LM_ROWS = ("korthikanti22_22B_selective_sp", "korthikanti22_530B_selective_sp", "megascale_megatron_175b_256gpu")


@pytest.mark.parametrize("rid", DEEPSPEED_ROWS)
def test_megatron_deepspeed_rows_all_reduce_the_input_gradient_synchronously(rid):
    row, others = ROWS[rid]
    run = published.row_spec(row, others)
    assert run.software.tp_overlap == "none"
    assert any(a.startswith("tp overlap: none (") and "Megatron-DeepSpeed" in a for a in run.assumptions), run.assumptions


@pytest.mark.parametrize("rid", MEGATRON_LM_ROWS)
def test_megatron_lm_rows_of_the_same_years_keep_the_backward_overlap(rid):
    row, others = ROWS[rid]
    assert published.row_spec(row, others).software.tp_overlap == "backward"


def test_deepspeed_named_in_a_comparison_is_not_the_rows_runtime():
    row, others = ROWS["korthikanti22_530B_selective_sp"]
    compared = apply(row, [note("faster than DeepSpeed's figure for the same model")])
    assert reading(compared, others)["sw.tp_overlap"] == "backward"


def test_a_megatron_deepspeed_row_after_the_upstream_merge_overlaps():
    """The same row dated after the fork took Megatron-Core's layers reads the overlap again."""
    row, others = ROWS["mtnlg_530b_2240gpu"]
    later = apply(row, [rep(r"arXiv:2201\.11990", "arXiv:2401.11990"), rep(r"\b2021\b", "2024"),
                        rep(r"\b2022\b", "2024")])
    assert published.source_year(later) == 2024
    assert reading(later, others)["sw.tp_overlap"] == "backward"


def test_the_synchronous_all_reduce_lengthens_the_step_by_no_more_than_its_own_seconds():
    """Independent of the reader: the change is the tp all-reduce the backward used to hide, so the
    step grows, by at most the whole tp traffic of a step (`exposed['tp']` with nothing hidden is
    bounded by the ledger's tp seconds, which do not change)."""
    fidelity = fidelity_script()
    row, others = ROWS["mtnlg_530b_2240gpu"]
    run = published.compiled(published.row_spec(row, others))
    prepared = fidelity.prepare(run)
    synchronous = fidelity.predicted_step(run, prepared, fidelity.DEFAULT)
    overlapped = fidelity.predicted_step(
        dataclasses.replace(run, software=dataclasses.replace(run.software, tp_overlap="backward")),
        prepared, fidelity.DEFAULT)
    assert synchronous.step > overlapped.step
    assert synchronous.exposed["tp"] > overlapped.exposed["tp"]
    assert synchronous.step - overlapped.step <= synchronous.exposed["tp"] + 1e-9


BIGSCIENCE_BENCH_ROWS = ("bloom181b_bench_tp8pp2dp24_mbs2", "bloom176b_bench_tp4pp12dp8_mbs2_nh64",
                         "bloom181b_bench_tp2pp24dp8_mbs1")
"""BigScience's tr11 topology benchmarks (chronicles-prequel.md): dated only "02-25", no year."""


@pytest.mark.parametrize("rid", BIGSCIENCE_BENCH_ROWS)
def test_bigscience_fork_rows_read_its_kernels_without_a_year(rid):
    row, others = ROWS[rid]
    assert published.source_year(row) is None
    run = published.row_spec(row, others)
    assert run.software.tp_overlap == "none"
    assert run.software.attention == "unfused"
    assert any(a.startswith("tp overlap: none (BigScience's Megatron-DeepSpeed fork") for a in run.assumptions)
    assert any(a.startswith("unfused attention (BigScience's") for a in run.assumptions)


def test_without_bigscience_the_same_undated_row_reads_megatron_lm_defaults():
    """The fork's name decides, not the model or DeepSpeed: an undated row of the same layout that
    does not name BigScience keeps Megatron-LM's backward overlap and the fused attention kernel."""
    row, others = ROWS["bloom181b_bench_tp8pp2dp24_mbs2"]
    unnamed = apply(row, [rep(r"big[- ]?science(?:-workshop)?", "someone")])
    assert published.source_year(unnamed) is None
    got = reading(unnamed, others)
    assert got["sw.tp_overlap"] == "backward"
    assert got["sw.attention"] != "unfused"


def test_bigscience_named_in_a_comparison_is_not_the_rows_runtime():
    row, others = ROWS["korthikanti22_530B_selective_sp"]
    compared = apply(row, [note("faster than BigScience's BLOOM run on the same cluster size")])
    got = reading(compared, others)
    assert got["sw.tp_overlap"] == "backward"
    assert got["sw.attention"] == reading(row, others)["sw.attention"]


def test_the_fork_reading_slows_each_bench_row_by_no_more_than_its_exposed_tp_and_attention():
    """Independent of the reader: both facts only add work (a synchronous all-reduce, an unfused
    attention), so each benchmark row's step grows; and it grows by no more than the now exposed tp
    seconds plus the unfused attention's extra seconds, each read from the timing breakdown."""
    fidelity = fidelity_script()
    assert BIGSCIENCE_BENCH_ROWS
    for rid in BIGSCIENCE_BENCH_ROWS:
        row, others = ROWS[rid]
        run = published.compiled(published.row_spec(row, others))
        prepared = fidelity.prepare(run)
        fork = fidelity.predicted_step(run, prepared, fidelity.DEFAULT)
        upstream_sw = dataclasses.replace(run.software, tp_overlap="backward", attention="flash")
        upstream = fidelity.predicted_step(dataclasses.replace(run, software=upstream_sw), prepared, fidelity.DEFAULT)
        assert fork.step > upstream.step, rid
        tp_more = fork.exposed["tp"] - upstream.exposed["tp"]
        work_more = fork.compute + fork.recompute - upstream.compute - upstream.recompute
        assert tp_more >= 0 and work_more > 0, rid
        # the pipeline's idle time stretches with the work it waits for, at the same fraction
        assert fork.bubble_fraction == pytest.approx(upstream.bubble_fraction), rid
        assert fork.step - upstream.step <= (tp_more + work_more) * (1 + fork.bubble_fraction) + 1e-9, rid
