"""A layout field a row leaves empty but its words state ("CP=2" in a note with `layout.cp` null,
"TP 1, CP 2, DP 4" in the locator, `--micro-batch-size 4` in quoted evidence) reads as the field
(`published.read_stated_degrees`), and the words that do not state it read as nothing: two values
in one row, a virtual pipeline's or the experts' own degree, a CPU, a range, a scaled figure, a
degree the GPU count contradicts.

Each positive case compares the edited row's whole reading (spec, runtime facts, figure) with the
row as published; each negative one with the row read without the words. With the reader of
e9e3d78, which read no degree from the words, every positive case fails.
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import (
    DROP,
    ROWS,
    apply,
    diff,
    note,
    published,
    reading,
    rep,
    setf,
    want_diff,
)

CP_ROW = "nemo2504_b200_llama3_8b_fp8_32k"  # 8 B200, tp 1 x cp 2 x dp 4; its locator says "TP 1, CP 2, DP 4"
PP_ROW = "nemo2407_h100_llama3_70b_64gpu"  # 64 H100, tp 4 x cp 2 x dp 2 x pp 4, vp 5, micro-batch 1
MICRO_ROW = "nemo2407_h100_gpt3_5b_64gpu"  # 64 H100, dp 64, micro-batch 4, 2,048 sequences
EP_ROW = "bridge2509_gb200_qwen3_30b_a3b_fp8cs"  # 8 GB200, dp 8, ep 8 folded over dp

# the locator's degrees taken out, so that only the note added states them
CP_QUIET = [rep(r"TP 1, CP 2, DP 4, ", ""), setf("layout.cp", None)]

POSITIVE = [
    # (row, edits that leave the field empty and state it in words)
    (CP_ROW, [setf("layout.cp", None)]),  # the locator's "CP 2"
    (CP_ROW, [setf("layout.cp", None), setf("layout.dp", None)]),
    (CP_ROW, [setf("layout.cp", "not stated")]),
    *[(CP_ROW, CP_QUIET + [note(text)]) for text in (
        "CP=2", "cp: 2", "CP2", "context_parallel_size: 2", "--context-parallel-size 2",
        '"context_parallel_size": 2', "context parallelism of 2", "2-way context parallelism",
        "context-parallel degree 2", "run with CP 2 and no tensor parallelism",
    )],
    (PP_ROW, [setf("layout.pp", None), setf("layout.dp", None), note("PP 4, virtual pipeline parallel size 5")]),
    (PP_ROW, [setf("layout.tp", None), setf("layout.dp", None), note("--tensor-model-parallel-size 4")]),
    (PP_ROW, [setf("layout.tp", None), setf("layout.dp", None), note("tensor parallelism 4, 4-way pipeline parallelism")]),
    (PP_ROW, [setf("layout.vpp", None), note("VP 5")]),
    (PP_ROW, [setf("layout.vpp", None), note("virtual_pipeline_model_parallel_size: 5")]),
    (MICRO_ROW, [setf("layout.micro_batch", None), setf("layout.grad_accum", None), note("MBS 4")]),
    (MICRO_ROW, [setf("layout.micro_batch", None), setf("layout.grad_accum", None), note("--micro-batch-size 4")]),
    (MICRO_ROW, [setf("layout.global_batch", None), note("GBS=2048")]),
    (MICRO_ROW, [setf("layout.global_batch", DROP), note("global_batch_size: 2048")]),
    (EP_ROW, [setf("layout.ep", None), note("EP=8")]),
    (EP_ROW, [setf("layout.ep", None), note("expert_model_parallel_size 8; expert tensor parallel size 1")]),
]


@pytest.mark.parametrize("rid,ops", POSITIVE, ids=[f"{r}-{i}" for i, (r, _) in enumerate(POSITIVE)])
def test_an_empty_field_stated_in_the_words_reads_as_the_field(rid, ops):
    row, others = ROWS[rid]
    edited = apply(row, ops)
    got = reading(edited, others)
    assert "SKIPPED" not in got, got
    # the degree is listed among the assumptions, and otherwise the row reads as published
    assert diff(got, reading(row, others)) == []


NEGATIVE = [
    # (row, edits, what the reading must show: the words ignored)
    (CP_ROW, CP_QUIET + [setf("layout.dp", None), note("CP 2 here; the 64K row runs CP 4")], {"spec~": "dp 8 on nodes"}),
    (CP_ROW, CP_QUIET + [setf("layout.dp", None), note("CPU 2 sockets per node")], {"spec~": "dp 8 on nodes"}),
    (CP_ROW, CP_QUIET + [setf("layout.dp", None), note("CP 2-4 across the table")], {"spec~": "dp 8 on nodes"}),
    (CP_ROW, CP_QUIET + [setf("layout.dp", None), note("CP 8 GPUs per group")], {"spec~": "dp 8 on nodes"}),
    # a mention without a value makes the others open too: another config described beside the row's
    (PP_ROW, [setf("layout.vpp", None), note("the recipe's config is pp 4, vp 5; the table prints no vp")],
     {"spec!~": "virtual-stages 5"}),
    (CP_ROW, CP_QUIET + [setf("layout.dp", None), note("CP 2 in the recipe; the table has a CP column")],
     {"spec~": "dp 8 on nodes"}),
    # a degree the GPU count contradicts: the row as read from its fields alone
    (CP_ROW, CP_QUIET + [note("CP 4")], {"SKIPPED": None}),
    # the fields win over the words
    (CP_ROW, [note("CP=4")], {"spec~": "cp 2 x dp 4 on nodes"}),
    # "n/a" is a degree of 1, not a gap the words fill
    (MICRO_ROW, [setf("layout.cp", "n/a"), note("CP 2")], {"spec~": "dp 64 on nodes"}),
]


@pytest.mark.parametrize("rid,ops,want", NEGATIVE, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(NEGATIVE)])
def test_words_that_do_not_state_the_field_read_as_nothing(rid, ops, want):
    row, others = ROWS[rid]
    got = reading(apply(row, ops), others)
    if "SKIPPED" in want:
        assert "SKIPPED" in got, got
        return
    assert want_diff(got, want) == []


def test_a_degree_read_from_the_words_is_an_assumption():
    row, others = ROWS[CP_ROW]
    run = published.row_spec(apply(row, CP_QUIET + [setf("layout.dp", None), note("CP=2")]), others)
    assert any(a.startswith("cp 2 (the layout field empty") for a in run.assumptions), run.assumptions
    assert "cp 2 x dp 4 on nodes" in run.spec


def test_the_published_rows_state_no_degree_their_fields_leave_open():
    """Every row in the repository fills the fields its words state (one states `vpp 1` in its
    notes with the field empty), so this reading changes no published row's prediction."""
    filled = {rid: published.read_stated_degrees(row).get("stated_degrees") for rid, (row, _) in ROWS.items()}
    assert filled
    assert {rid: s for rid, s in filled.items() if s} == {"modelzoo_qwen3_235b_intranode_ep8_deepep_fsdp": "vpp 1"}
