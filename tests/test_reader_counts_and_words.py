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
- torchtitan's pipeline micro-batches where a row states no micro-batch: the pp degree until
  2025-01-07, then the pp degree x stages per rank until 2025-04-08, then a micro-batch of one
  sequence (`titan_micro_batches`; before, always one sequence, which read the 405B 3D runs of
  December 2024 at 32 micro-batches for their 8 and put them +53 to +79 % too fast).
- The GPU's own power in its name ("H100 96GB HBM2e (Grand Teton, 500 W)") is the power it ran at,
  and HBM2e named on an H100 is 0.025 TB/s per GB of stacks (H100 PCIe's 2.0 TB/s over 80 GB): the
  96 GB part's 2.4 TB/s (`power_and_memory`, `H100_HBM2E_TBPS_PER_GB`; before, neither was read and
  the torchtitan 8B runs were +15 to +25 % too fast).
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import DROP, ROWS, apply, diff, note, published, reading, setf

N145B = "narayanan21_t1_145B"  # 192 nodes of 8 A100
CS = "bridge2602_h100_qwen3_235b_a22b_fp8cs"  # FP8-CS: per-tensor current scaling
TITAN = "torchtitan_405b_512gpu_3d_1f1b"  # micro-batch 4: the pp degree's 8 micro-batches; 500 W, 2.4 TB/s
TITAN_V = "torchtitan_405b_512gpu_3d_interleaved"
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


@pytest.mark.parametrize("rid", [TITAN, TITAN_V])
def test_torchtitan_pipeline_micro_batches_default_to_the_pp_degree_in_2024(rid):
    row, others = ROWS[rid]
    assert diff(reading(apply(row, [setf("layout.micro_batch", DROP)]), others), reading(row, others)) == []


@pytest.mark.parametrize("date,count", [("2024-12", 8), ("2025-02-01", 16), ("2025-06", None), ("2025", None)])
def test_torchtitan_micro_batches_follow_the_code_of_the_runs_date(date, count):
    """pp 8 with two stages per rank: the pp degree, then the stages, then micro-batch 1 (None);
    a year that holds a change decides nothing."""
    entry = {"runtime": {"date": date}}
    found = published.titan_micro_batches(entry, "torchtitan", 8, 2)
    assert (found[0] if found else None) == count
    assert published.titan_micro_batches(entry, "megatron", 8, 2) is None


def test_the_gpus_power_and_hbm2e_in_its_name_are_read():
    row, others = ROWS[TITAN]
    ops = [setf("hardware.power_limit_w", DROP), setf("hardware.hbm_bandwidth_tbps", DROP),
           setf("hardware.note", "400 Gb/s per GPU backend RDMA"),
           setf("hardware.gpu", "H100 96GB HBM2e (Grand Teton, 500 W)")]
    assert diff(reading(apply(row, ops), others), reading(row, others)) == []
    # control: an H100 named without either runs at the SXM part's 700 W and 3.35 TB/s
    plain = reading(apply(row, ops[:3] + [setf("hardware.gpu", "H100 SXM")]), others)
    assert not any("power-limit" in line or "hbm-bandwidth" in line for line in plain["spec"])
