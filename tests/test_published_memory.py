"""The published GPU-memory rows (benchmarks/data/published_memory.yaml): the transcription is
whole and consistent, each row builds the spec its fields say, and docs/memory-model.md holds
the table benchmarks/memory_fidelity.py prints."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("memory_fidelity", ROOT / "benchmarks" / "memory_fidelity.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_fidelity"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


bench = _bench()
DATA = bench.load()
ROWS = DATA["rows"]

# The published cells, read off the source tables by hand (benchmarks/llama3_h100_202412_torchtitan.md
# Tables 1-6 and benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md), in the tables' order.
PUBLISHED_GIB = [82.4, 77.0, 76.8, 83.9, 84.2, 84.0, 84.5, 67.0, 62.0, 61.8, 71.9, 67.6, 82.5, 72.7,
                 75.3, 75.9, 77.1, 84.9, 47.96, 46.97]


def test_every_published_cell_is_transcribed_once_in_order():
    assert [r["measured"]["value"] for r in ROWS] == PUBLISHED_GIB
    assert len({r["id"] for r in ROWS}) == len(ROWS)


def test_every_row_cites_its_source_and_says_what_it_measured():
    assert ROWS
    for r in ROWS:
        src = r["source"]
        assert src["repository"] and src["file"].endswith(".md") and src["locator"] and src["run_versions"]
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), r["id"]
        assert r["measured"]["unit"] == "GiB" and r["measured"]["kind"] == "reserved", r["id"]
        assert isinstance(r["inferred"], list), r["id"]
    assert DATA["left_out"] and all(x["source"] and x["reason"] for x in DATA["left_out"])


def test_layouts_multiply_to_the_published_gpu_counts():
    for r in ROWS:
        lay = r["layout"]
        assert lay["tp"] * lay["cp"] * lay["pp"] * lay["dp_shard"] == r["hardware"]["gpus"], r["id"]
        if lay["pp"] > 1:  # a pipeline needs its microbatches to split the local batch
            assert lay["microbatches"] and r["train"]["local_batch"] % lay["microbatches"] == 0, r["id"]
            assert any("microbatches" in i for i in r["inferred"]), r["id"]


@pytest.mark.parametrize("layers, chunks, expected", [
    (126, 8, [15, 16, 16, 16, 16, 16, 16, 15]),    # by hand from torchtitan's generate_split_points
    (126, 16, [7] + [8] * 14 + [7]),
    (32, 4, [8, 8, 8, 8]),
])
def test_torchtitan_split(layers, chunks, expected):
    assert bench.torchtitan_split(layers, chunks) == expected


def test_a_row_becomes_the_spec_its_fields_say():
    row = next(r for r in ROWS if r["id"] == "titan2412_t6_fsdp1_cp8")
    text = bench.spec_text(row)
    # torchtitan's mesh order (tp, cp, dp, pp fastest first); FSDP over cp keeps dp 1 written
    assert "tp 8 x cp 8 x dp 1 x pp 8 on nodes(8 gpus, nvlink)" in text
    assert "seq 262144" in text and "global-batch 8" in text and "micro-batch 1" in text
    assert "precision fp8" in text and "recompute full" in text and "sharding zero2" in text
    assert "schedule 1f1b" in text and "flavour all-gather" in text
    # torchtitan 9dec370 left the loss eager; e7c0cae (the H200 rows) compiles it. The 405B
    # config's float8 gathered float8 weights (its TOML); the H200 rows' command says so too
    assert "target torchtitan { compile on, compile-loss off, tp-overlap all, float8-all-gather on }" in text
    h200 = next(r for r in ROWS if r["id"] == "trainy2506_h200_4nodes")
    assert "target torchtitan { compile on, float8-all-gather on }" in bench.spec_text(h200)
    eight = next(r for r in ROWS if r["id"] == "titan2412_t1_compile_float8")  # 9dec370's flag off by default
    assert "target torchtitan { compile on, compile-loss off }" in bench.spec_text(eight)


def test_a_float8_row_says_whether_fsdp_gathered_float8():
    import copy

    row = copy.deepcopy(next(r for r in ROWS if r["id"] == "titan2412_t1_compile_float8"))
    del row["train"]["float8_all_gather"]
    with pytest.raises(SystemExit, match="titan2412_t1_compile_float8: .*no float8_all_gather"):
        bench.spec_text(row)


def test_a_compiled_row_without_compile_loss_is_refused_by_name():
    import copy

    row = copy.deepcopy(next(r for r in ROWS if r["id"] == "trainy2506_h200_4nodes"))
    del row["train"]["compile_loss"]
    with pytest.raises(SystemExit, match="trainy2506_h200_4nodes: .*no compile_loss"):
        bench.spec_text(row)
    row["train"]["compile"] = False  # an eager run compiles no loss: nothing to say
    assert "target torchtitan { compile off, float8-all-gather on }" in bench.spec_text(row)


def test_the_readmes_figures_are_the_docs_table():
    """README.md quotes the summary of the generated table in docs/memory-model.md (which
    `test_the_doc_holds_the_current_table` ties to the computation): the same figures."""
    doc = " ".join(bench.doc_block().split())
    found = re.search(r"median ([-+]?\d+\.\d) %, p90 of \|error\| (\d+\.\d) %, worst ([-+]?\d+\.\d) %", doc)
    eighty = re.search(r"on an 80 GB H100, (\d+) runs would need more than the part and parc says \"fits\" for "
                       r"(\d+) of them", doc)
    assert found and eighty, doc[-600:]
    median, p90, worst = found.groups()
    needed, false_fits = eighty.groups()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"On the {len(ROWS)} rows: median {median} %, p90 {p90} %, worst {worst} %" in readme
    assert f"on an 80 GB H100 parc says \"fits\" for {false_fits} of the {needed} runs that needed more" in readme


@pytest.fixture(scope="module")
def evaluated():
    return bench.run_all(DATA)


def test_the_doc_holds_the_current_table(evaluated):
    results, summary = evaluated
    assert len(results) == len(ROWS)
    # every spec is one parc accepts; the memory check's own verdict (E0401) is what is measured
    wrong = [(r.id, r.errors) for r in results if set(r.errors) - {"E0401"}]
    assert not wrong, wrong
    assert bench.doc_block() == bench.table(results, summary), \
        "docs/memory-model.md is stale: .venv/bin/python benchmarks/memory_fidelity.py --write"


def test_torchtitan_is_counted_as_fsdp2_compiled_or_not():
    """torchtitan shards with FSDP2 under torch.compile too: its rank holds FSDP2's states and
    buffers, which Megatron-LM's accounting (parc's choice for `compile on` before the published
    rows) leaves out; that choice was under by a median 43 % on the rows."""
    from parc.memory import estimate
    from parc.pipeline import compile_text

    row = next(r for r in ROWS if r["id"] == "titan2412_t4_2d")
    assert row["train"]["compile"]
    plan = compile_text(bench.spec_text(row)).plan
    ours, fsdp2 = estimate(plan), estimate(plan, "torch")
    assert ours.runtime == "torch" and ours.stages == fsdp2.stages
    assert ours.peak.buffers > 0  # FSDP2's gathered parameters and reduce-scatter buffers


def test_the_rows_median_error_stays_within_ten_percent_and_no_false_fits(evaluated):
    """The issue's target on the transcribed rows (a regression guard: the figures are in the doc)."""
    _, summary = evaluated
    assert abs(summary.median_error_pct) <= 10, summary
    assert summary.false_fits == 0, summary


def test_on_an_80gb_part_only_the_two_unexplained_405b_rows_are_false_fits(evaluated):
    """A regression guard on the issue's "never a fits": the 8B eager run (82.4 GiB measured) is
    no longer one since the loss's moment counts the parameters FSDP2 keeps gathered; the two
    405B rows left are written up in docs/memory-model.md as not explained."""
    results, summary = evaluated
    false_fits = sorted(r.id for r in results if r.fits_on_80gb and r.needed_more_than_80gb)
    assert false_fits == ["titan2412_t5_1f1b", "titan2412_t6_fsdp1_cp8"], false_fits
    assert summary.false_fits_on_80gb == 2 and summary.needed_more_than_80gb == 7
