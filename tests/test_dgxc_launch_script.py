"""DGX Cloud Benchmarking 25.04's Nemotron-4 340B on 256 H100, as the release's launch script ran it.

The README's layout table prints "VP NA" for 340b; `nemotron/launch.sh` at the same tag (v25.04)
sets `VP=12` for 340b and passes `-vp $VP` to NeMo. benchmarks/data/published_more.yaml holds the
rows with the script's layout and its line as evidence (stop 64): an interleaved 1F1B of 12
virtual stages over pp 8, whose bubble is a twelfth of the plain schedule's.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from .conftest import ROOT, load_yaml

sys.path.insert(0, str(ROOT / "benchmarks"))

ROWS = ("dgxc2504_h100_nemotron4_340b_bf16_256", "dgxc2504_h100_nemotron4_340b_fp8_256")
DATA = ROOT / "benchmarks" / "data" / "published_more.yaml"


def test_the_rows_hold_the_launch_scripts_virtual_pipeline():
    entries = {e["id"]: e for e in load_yaml(DATA.read_text())}
    assert ROWS
    for rid in ROWS:
        row = entries[rid]
        assert row["layout"]["vpp"] == 12 and row["layout"]["pp"] == 8, rid
        assert any("launch.sh" in ev and "VP=12" in ev and "-vp $VP" in ev for ev in row["source"]["primary_evidence"]), rid


@pytest.mark.parametrize("rid", ROWS)
def test_the_bubble_is_the_interleaved_schedules(rid):
    """Narayanan et al. 2021's closed form for interleaved 1F1B, (p - 1) / (v m), with p = 8 stages,
    v = 12 chunks each and m = 64 / 4 = 16 micro-batches of the global batch per data-parallel rank."""
    fidelity = importlib.import_module("fidelity")
    run = fidelity.load_row(rid, DATA)
    assert "pp { schedule interleaved-1f1b, virtual-stages 12 }" in run.spec
    step = fidelity.predicted_step(run, fidelity.prepare(run), fidelity.DEFAULT)
    p, v, m = 8, 12, 64 // 4
    assert step.microbatches == m
    assert step.bubble_fraction == pytest.approx((p - 1) / (v * m))


def _as_printed(row: dict, **layout) -> dict:
    """The row as the README table prints it (VP "NA"), as another transcriber would write it."""
    printed = {"vpp": "NA in table", "pipeline_schedule": "1F1B"}
    return dict(row, id=row["id"] + "_as_printed", layout={**row["layout"], **printed, **layout})


def test_a_transcription_of_the_table_alone_reads_the_same_runs_virtual_stages():
    """`published.with_published_virtual_stages`: the same run (release, GPU, model, format, GPUs,
    degrees, batches) printed with "VP NA" takes the repository row's 12, and says so; a run the
    key tells apart (another global batch), or the repository's own row, lends nothing."""
    published = importlib.import_module("published")
    entries = {e["id"]: e for e in load_yaml(DATA.read_text())}
    assert ROWS
    for rid in ROWS:
        run = published.row_spec(_as_printed(entries[rid]), list(entries.values()))
        assert "pp { schedule interleaved-1f1b, virtual-stages 12 }" in run.spec, rid
        assert any(a.startswith("the virtual stages of the same published run") and rid in a for a in run.assumptions)
        other = published.row_spec(_as_printed(entries[rid], global_batch=128), list(entries.values()))
        assert "virtual-stages" not in other.spec and not any("same published run" in a for a in other.assumptions)
        itself = dict(entries[rid], layout={**entries[rid]["layout"], "vpp": "NA in table", "pipeline_schedule": "1F1B"})
        assert "virtual-stages" not in published.row_spec(itself, list(entries.values())).spec
