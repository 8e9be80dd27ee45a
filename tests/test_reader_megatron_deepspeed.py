"""Megatron-DeepSpeed's tensor-parallel backward, as its code ran it (stop 63).

The fork's column-parallel linear (`megatron/mpu/layers.py`, bigscience-workshop's at b1359ee and
microsoft's at 1619965) wraps its input in `copy_to_tensor_model_parallel_region`, whose backward
all-reduces the input gradient before anything else runs: nothing overlaps it. Megatron-LM's
asynchronous all-reduce under the weight-gradient GEMM reached the fork only when it merged upstream
(microsoft 9e72d571, 2023-07-04). BLOOM's and MT-NLG's rows are read so (GLM-130B's names no Megatron runtime
and had no overlap before); Megatron-LM's own rows of 2022 and later keep the backward overlap, and a row that names DeepSpeed only to compare with
it is not a DeepSpeed row.
"""

from __future__ import annotations

import dataclasses

import pytest

from .reader_paraphrase import ROWS, apply, note, published, reading, rep

DEEPSPEED_ROWS = ("mtnlg_530b_2240gpu", "mtnlg_530b_2800gpu", "mtnlg_530b_3360gpu", "bloom_176b_384gpu_tp4_pp12_dp8")
MEGATRON_LM_ROWS = ("korthikanti22_22B_selective_sp", "korthikanti22_530B_selective_sp", "megascale_megatron_175b_256gpu")


@pytest.mark.parametrize("rid", DEEPSPEED_ROWS)
def test_megatron_deepspeed_rows_all_reduce_the_input_gradient_synchronously(rid):
    row, others = ROWS[rid]
    run = published.row_spec(row, others)
    assert run.software.tp_overlap == "none"
    assert any(a.startswith("tp overlap: none (Megatron-DeepSpeed") for a in run.assumptions), run.assumptions


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
    import importlib
    import sys

    from .conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    fidelity = importlib.import_module("fidelity")
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
