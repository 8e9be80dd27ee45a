"""A NeMo or Megatron-Bridge table row transcribed without its recipe reads the recipe of the same
published run where the repository holds it (`published.with_published_recipe`, stop 63).

The performance tables print the layout; the release's performance scripts set the dispatcher, the
overlaps, the recomputation, the CUDA graphs and the pipeline layout, and the repository transcribed
them for its rows (`recipe`). Two independent transcriptions of the tables alone (stop 62's and 63's)
read the same runs 20-45 % slow on Megatron-Bridge's MoE rows, with Megatron-Core's defaults in place
of the recipe. A row is the same run only where its release (patch level included), GPU, model shape,
GEMM format, GPU count, every degree and both batches agree (`published.run_key`); a row that states
any option of its own, or whose words take back what the recipe implies ("w/o MTP"), keeps its reading.
"""

from __future__ import annotations

import copy

import pytest

from .reader_paraphrase import DROP, ROWS, apply, note, published, reading, setf

TABLE_ONLY = ("bridge2608_gb200_qwen3_235b_a22b_fp8mx", "bridge2509_h100_deepseek_v3_fp8cs",
              "bridge2606_gb300_qwen3_235b_a22b_fp8mx", "bridge2509_gb200_llama31_405b_fp8cs")
"""Rows of three releases, MoE and dense, on three GPUs."""


def table_only(rid: str) -> tuple[dict, list]:
    """The row as a transcriber of the table alone writes it: its recipe and the model facts the
    recipe's source gave (MTP) dropped, its id another (a row is never its own twin)."""
    row, others = ROWS[rid]
    row = apply(row, [setf("recipe", DROP), setf("id", rid + "_table_only")])
    row = copy.deepcopy(row)
    row["model"].pop("mtp_layers", None)
    return row, others


@pytest.mark.parametrize("rid", TABLE_ONLY)
def test_a_table_row_without_its_recipe_reads_as_the_same_run_with_it(rid):
    row, others = ROWS[rid]
    alone, _ = table_only(rid)
    got, want = reading(alone, others), reading(row, others)
    assert got["spec"][1:] == want["spec"][1:]  # all but the job's name
    assert {k: v for k, v in got.items() if k.startswith("sw.")} == {k: v for k, v in want.items() if k.startswith("sw.")}
    run = published.row_spec(alone, others)
    assert any(a.startswith(f"the recipe of the same published run, unstated in the row: repository row {rid}")
               for a in run.assumptions)


def test_a_row_that_states_an_option_keeps_its_own_reading():
    alone, others = table_only("bridge2608_gb200_qwen3_235b_a22b_fp8mx")
    stated = apply(alone, [note("moe_token_dispatcher_type: alltoall")])
    run = published.row_spec(stated, others)
    assert not any("same published run" in a for a in run.assumptions)
    assert run.software.ep_dispatcher == "all-to-all"


@pytest.mark.parametrize(("field", "value"), [("layout.global_batch", 4096), ("layout.micro_batch", 2),
                                               ("hardware.num_gpus", 512), ("release", "26.07")])
def test_another_run_takes_no_recipe(field, value):
    """One number or the release differs: another run, whatever else it shares."""
    alone, others = table_only("bridge2608_gb200_qwen3_235b_a22b_fp8mx")
    other = apply(alone, [setf(field, value)])
    assert published.with_published_recipe(other) is other


def test_words_that_take_back_the_recipes_mtp_keep_the_row_as_written():
    alone, others = table_only("bridge2509_h100_deepseek_v3_fp8cs")
    without = apply(alone, [setf("model.name", "DeepSeekV3 (w/o MTP)"),
                            setf("model.arch", "DeepSeek-V3: MLA, MoE with one shared expert, first 3 layers dense")])
    assert published.with_published_recipe(without) is without
    assert published.with_published_recipe(alone)["model"]["mtp_layers"] == 1


def test_the_run_key_keeps_the_patch_release():
    """26.02 and 26.02.01 ran different recipes: their rows are different runs."""
    assert published.release_of(ROWS["bridge260201_gb200_qwen3_235b_a22b_fp8mx"][0]) == "26.02.01"
    assert published.release_of(ROWS["bridge2602_gb200_qwen3_235b_a22b_fp8mx"][0]) == "26.02"
    keys = [published.run_key(ROWS[r][0]) for r in ("bridge260201_gb200_qwen3_235b_a22b_fp8mx",
                                                      "bridge2602_gb200_qwen3_235b_a22b_fp8mx")]
    assert None not in keys and keys[0] != keys[1]
