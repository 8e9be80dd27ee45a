"""Row fields written in words the reader misread after stop 60's transcriptions, found by reading
its own open items and a third round of independent transcriptions (stop 61).

- A GPU count per group is never the job's: "64 nodes (8 GPUs each)", "32 DGX nodes, 8 GPUs per
  node", "8 nodes (8x H100 each)" multiply the groups (`gpus_of`; before, the count in the
  parenthesis, or the node count, was read as the job's GPUs).
- Transformer Engine's fp8 recipe stated outside the precision field: the recipe option
  ("--fp8-recipe tensorwise", a recipe's `fp8_recipe: mxfp8`), else the one recipe the notes name
  ("per-tensor current scaling"); before, a precision field of plain "FP8" read as delayed scaling
  whatever the row said (`fp8_recipe_of`).
- Megatron-Core's modules by the short names a table gives them: ModelZoo's "norm, act" is
  `--recompute-modules layernorm moe_act`; "up_proj" is MLA's (`MODULE_SHORT`; before, nothing or
  only "mlp" was read).
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import ROWS, apply, diff, note, published, reading, setf

N145B = "narayanan21_t1_145B"  # 192 nodes of 8 A100
CS = "bridge2602_h100_qwen3_235b_a22b_fp8cs"  # FP8-CS: per-tensor current scaling
ZOO = "modelzoo_qwen3_235b_crossnode_ep32_deepep"  # --recompute-modules layernorm moe_act, written "norm, act"



@pytest.mark.parametrize("written,gpus", [
    ("64 nodes (8 GPUs each)", 512),
    ("64 nodes (8 GPUs per node)", 512),
    ("8 nodes (8x H100 each)", 64),
    ("32 DGX nodes, 8 GPUs each", 256),
    ("64 nodes, 8 GPUs per node", 512),
    ("64 nodes each with 8 GPUs", 512),
    ("16 nodes, 8/node", 128),
    ("64 nodes x 8 GPUs each", 512),
    # controls: a total beside the groups wins; a bare count is the job's
    ("384 nodes (3072 GPUs)", 3072),
    ("512 GPUs (64 nodes x 8)", 512),
    ("12288 GPUs (1536 nodes)", 12288),
    ("64 x 8 = 512", 512),
    ("16K GPUs", 16384),
    ("3,072 GPUs", 3072),
    ("256x8", 2048),
    ("18 trays x 4 GPUs", 72),
])
def test_a_gpu_count_per_group_multiplies_the_groups(written, gpus):
    assert published.gpus_of({"num_gpus": written}) == gpus


@pytest.mark.parametrize("written", ["192 nodes (8 GPUs each)", "192 DGX A100 nodes, 8 GPUs per node",
                                     "192 nodes each with 8 GPUs"])
def test_a_row_whose_gpus_are_counted_per_node_reads_as_published(written):
    row, others = ROWS[N145B]
    assert diff(reading(apply(row, [setf("hardware.num_gpus", written)]), others), reading(row, others)) == []


FP8 = "layout.precision"


@pytest.mark.parametrize("ops", [
    [setf(FP8, "FP8"), note("Transformer Engine FP8 with per-tensor current scaling (Float8CurrentScaling)")],
    [setf(FP8, "fp8"), note("launched with --fp8-format hybrid --fp8-recipe tensorwise")],
    [setf(FP8, "FP8"), note("fp8_recipe: tensorwise; the MXFP8 rows of the table are Blackwell's")],
])
def test_an_fp8_recipe_stated_outside_the_precision_field_is_read(ops):
    row, others = ROWS[CS]
    assert diff(reading(apply(row, ops), others), reading(row, others)) == []


@pytest.mark.parametrize("entry,recipe", [
    ({"layout": {"precision": "FP8 (MX)"}}, "mxfp8"),
    ({"layout": {"precision": "fp8"}, "recipe": {"fp8_recipe": "mxfp8"}}, "mxfp8"),
    ({"layout": {"precision": "fp8"}, "notes": ["fp8_recipe='blockwise'"]}, "blockwise"),
    # controls: a note comparing two recipes, or leaving the recipe open, names none; delayed is the default
    ({"layout": {"precision": "fp8"}, "notes": ["the MXFP8 rows run faster than this current-scaling one"]}, "delayed"),
    ({"layout": {"precision": "fp8 (delayed/current scaling not stated)"}}, "delayed"),
    ({"layout": {"precision": "fp8"}, "notes": ["FP8 delayed scaling, amax history 1024"]}, "delayed"),
])
def test_the_fp8_recipe_read_from_a_row(entry, recipe):
    assert published.fp8_recipe_of(entry) == recipe


@pytest.mark.parametrize("written", ["norm, act", "selective (norm, act)", "recompute modules: norm + act"])
def test_modules_written_by_their_short_names_read_as_the_row_as_published(written):
    row, others = ROWS[ZOO]
    assert diff(reading(apply(row, [setf("layout.recompute", written)]), others), reading(row, others)) == []


@pytest.mark.parametrize("written,modules", [
    ("--recompute-modules mlp up_proj", ("mlp", "mla_up_proj")),
    ("act", ("moe_act",)),
    ("selective (the attention core)", ()),  # control: prose is no module list
    ("full", ()),
])
def test_megatron_modules_by_short_name(written, modules):
    assert published.megatron_modules({"layout": {"recompute": written}}) == modules
