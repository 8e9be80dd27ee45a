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
- A G figure in parentheses after a GPU's name is memory unless it is a port's rate ("96 DGX-A100
  (8x40G) servers" is no network; "DGX H100 (8x 400G NDR)" is) (`_short_ports`, `PORT_RATES`).
- InternEvo's "Hybrid ZeRO: zero1 size 8" shards the optimizer state only: zero1, not HSDP's
  zero3 (`sharding_of`).
- A LayerNorm the row names beside RoPE is a LayerNorm (Nemotron-4, GLM-130B's DeepNorm Post-LN).
- Defaults the reader fills are listed with the assumptions: Megatron-Core's ring or torch's
  all-gather context parallelism, no tensor-parallel overlap where no runtime is named, torchtitan's
  float8 all-gather by date.
- What a sentence only recommends, or names to say it is not stated, is not read ("Recompute,
  distributed optimizer and comm-overlap settings ... are not stated (the README recommends
  --use-distributed-optimizer)" states no zero1: `HEDGED_BEFORE`, `LEFT_OPEN_AFTER`).
- Fewer GPUs than a node holds ("4 GPUs of a DGX-H100") are a node of that many (before: E0303).
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


@pytest.mark.parametrize("written,per_node,gpus", [
    ("4 DGX B200 systems", None, 32),
    ("2 DGX H100 nodes", None, 16),
    ("4x DGX H100", None, 32),
    ("one DGX B200", None, 8),  # before: 200, the digits of the part's name
    ("eight DGX-H100 nodes", None, 64),
    ("8 HGX H100 servers", None, 64),
    ("4 GB200 NVL72 racks", 4, 288),  # a rack is its NVLink domain, not its trays' 4 GPUs
    ("two NVL72 racks", None, 144),
    ("64 nodes", 4, 256),  # the row's own GPUs per node
    # controls: a count of GPUs stands; a plain group of unstated size is read as before
    ("256 H800 GPUs (32 nodes)", 8, 256),
    ("32 B200 GPUs", 8, 32),
    ("4 nodes", None, 4),
])
def test_gpus_counted_by_the_boxes_that_hold_them(written, per_node, gpus):
    """A DGX or HGX holds 8 GPUs and an NVL72 rack 72: "4 DGX B200 systems" is 32 GPUs, not 4."""
    assert published.gpus_of({"num_gpus": written, "gpus_per_node": per_node}) == gpus


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


@pytest.mark.parametrize("note,network", [
    ("96 DGX-A100 (8x40G) servers; inter-node fabric not stated", None),
    ("DGX H100 (8x 400G NDR)", "8 x 400 Gb/s"),
    ("A100 80G x 8", None),
    ("4 x 200G HDR", "4 x 200 Gb/s"),
])
def test_a_gpus_memory_in_parentheses_is_no_port(note, network):
    assert published._short_ports(note, 8) == network


def test_hybrid_zero1_is_zero1():
    notes: list[str] = []
    lay = {"zero_or_fsdp": "InternEvo Hybrid ZeRO: zero1 size 8 (optimizer states sharded within each 8-GPU node)"}
    assert published.sharding_of(lay, "other", "", notes) == "zero1"
    assert published.sharding_of({"zero_or_fsdp": "HSDP 8 x 64"}, "other", "", []) == "hsdp"  # control


@pytest.mark.parametrize("arch,norm", [
    ("dense decoder; RoPE; squared-ReLU MLP; LayerNorm", "layernorm"),
    ("GLU (GeGLU), DeepNorm Post-LN, RoPE", "layernorm"),
    ("dense decoder; RoPE; squared-ReLU MLP", "rmsnorm"),  # control: none named, RoPE's family
    ("RMSNorm, RoPE (no LayerNorm)", "rmsnorm"),
])
def test_a_named_layer_norm_beside_rope_is_read(arch, norm):
    model = {"layers": 4, "hidden": 512, "ffn": 2048, "heads": 8, "kv_heads": 8, "vocab": 1000, "seq_len": 512, "arch": arch}
    text, _ = published.model_block(model, [])
    assert f"norm {norm}" in text


def test_the_defaults_filled_are_listed():
    ids = ("torchtitan_405b_512gpu_4d_cp2_64k", "llama3_405b_8192gpu_tp8_pp16_dp64_8k", "nemo2504_b200_llama3_8b_fp8_32k")
    titan, llama, nemo = (published.row_spec(*ROWS[rid]).assumptions for rid in ids)
    assert any(a.startswith("float8 all-gather (torchtitan's float8 configs") for a in titan)
    assert any(a.startswith("tp overlap: none (the row names no runtime") for a in llama)
    assert any(a.startswith("cp flavour ring (Megatron-Core's default") for a in nemo)
    # a flavour the row states is no default: torchtitan's all-gather named in its source
    assert not any(a.startswith("cp flavour") for a in titan)
    assert published.cp_flavour("context parallelism over 8 GPUs", "torchtitan", notes := []) == "all-gather"
    assert notes and notes[0].startswith("cp flavour all-gather (torch's default")


@pytest.mark.parametrize("text,stated", [
    ("recompute, distributed optimizer and comm-overlap settings for the benchmarked run are not stated", False),
    ("the readme recommends --use-distributed-optimizer", False),
    ("trained with --use-distributed-optimizer", True),  # control
    ("the distributed optimizer shards the optimizer state", True),  # control
])
def test_a_setting_recommended_or_left_open_is_not_stated(text, stated):
    assert published.affirms(text, published.DISTRIBUTED_OPTIMIZER) is stated


def test_fewer_gpus_than_a_node_are_a_node_of_that_many():
    row, others = ROWS["nemo2403_llama2_7b_fp8_4k"]  # 4 GPUs, its node written as 4
    eight = apply(row, [setf("hardware.gpus_per_node", 8)])
    assert diff(reading(eight, others), reading(row, others)) == []


@pytest.mark.parametrize("layout,gpus,missing", [
    ({"tp": 1, "pp": 16}, 0, "dp and the GPU count are not published"),  # DeepSeek-V2: tp 1 and pp 16 stated
    ({"tp": 8}, 0, "pp, dp and the GPU count are not published"),
    ({"tp": 8}, 64, "pp and dp are not published"),
])
def test_a_layout_left_out_names_what_is_missing(layout, gpus, missing):
    with pytest.raises(published.Unusable, match=missing):
        published.layout_of(layout, gpus, [])


# A review of stop 61's reader found these misread by its own first fixes; each now reads as it says.
REVIEWED = [
    (lambda: published.stated_bool("Megatron SP (not Ulysses)"), True),  # the aside denies something else
    (lambda: published.stated_bool("no: TP=1"), False),  # a yes/no word is no label
    (lambda: published.outcomes_as_rates({"step_time_s": "12.3 (mean of 50 iterations)"})["step_time_s"],
     "12.3 (mean of 50 iterations)"),  # an average over steps is one step's time
    (lambda: "step_time_s" in published.outcomes_as_rates({"tokens_per_s": "52,000 (average of 100 steps)"}), False),
    (lambda: "tokens_per_s" in published.outcomes_as_rates({"gpu_days_per_trillion_tokens": 7500}), False),
    (lambda: published.count_of("1 (not stated)", "micro_batch"), 1),
    (lambda: published.count_of("n/a (no accumulation)", "grad_accum"), 1),
    (lambda: published._int("4096 (max_position_embeddings = 8192)", "seq_len"), 4096),
    (lambda: published._int("8 (expert TP: 1)", "tp"), 8),
    (lambda: published._int("8192 tokens (packed from 4 samples)", "seq_len"), 8192),
    (lambda: published._int("mbs: 1, gbs: 1536", "global_batch"), 1536),
    (lambda: published.precision_of({"precision": "BF16 (FP8 training in a later run)"}), "bf16"),
    (lambda: published.fp8_recipe_of({"layout": {"precision": "fp8"}, "notes": ["fine-grained experts"]}), "delayed"),
    (lambda: published.sharding_of({"zero_or_fsdp": "ZeRO-3 (Composer FSDP)"}, "other", "", []), "zero3"),
    (lambda: published.sharding_of({"zero_or_fsdp": "DDP (distributed optimizer)"}, "megatron", "", []), "zero1"),
    (lambda: published.gpus_of({"num_gpus": "8 GPUs per node, 64 nodes"}), 512),
    (lambda: published._short_ports("MI300X 192G x 8", 8), None),
    (lambda: published.unused("none (TP=8 in other rows)"), True),
    (lambda: published.uncompared("trained with torchtitan, 1.3x faster than the fsdp1 baseline"), "trained with torchtitan"),
    (lambda: published.fsdp_version("torch", "llm-foundry with fsdp2, faster than fsdp1"), "fsdp2"),
    # a comparison earlier in the clause is not the mention's (the full suite's re-transcribed Bridge row)
    (lambda: published.affirms("gradients reduced in bf16 rather than fp32 and the tensor-parallel communication is "
                               "overlapped with the gemms (tp-comm-overlap)", published.TP_OVERLAP), True),
    (lambda: published.affirms("compared with runs using userbuffers, this one is slower", published.TP_OVERLAP), False),
]


@pytest.mark.parametrize("case,want", REVIEWED, ids=[str(i) for i in range(len(REVIEWED))])
def test_what_the_review_found_reads_as_it_says(case, want):
    assert case() == want


def test_mxfp4_denied_beside_nvfp4_is_no_nvfp4():
    with pytest.raises(published.Unusable, match="NVFP4"):
        published.precision_of({"precision": "MXFP4 (not NVFP4)"})


CP_ALONE = "torchtitan_405b_512gpu_4d_cp8_256k"  # tp 8 x cp 8 x pp 8 on 512 GPUs: no data ranks


def test_fsdp_over_the_cp_ranks_alone_is_written_and_fits():
    """torchtitan shards FSDP over dp_shard x cp (its `dp_shard_cp` mesh), so a job with cp 8 and no
    data ranks still shards its parameters 8 ways. The reader writes `dp 1` so the spec can say
    so; before, it read the job unsharded, and the 405B at 256K tokens, which ran, failed the
    memory check (E0401)."""
    row, others = ROWS[CP_ALONE]
    run = published.row_spec(row, others)
    assert not isinstance(run, published.Skipped)
    assert "tp 8 x cp 8 x dp 1 x pp 8 on" in run.spec
    assert "dp { sharding zero3 }" in run.spec
    run = published.compiled(run)
    assert not isinstance(run, published.Skipped)
    assert "E0401" not in run.findings
    # an unsharded job over cp alone writes no dp axis
    plain = published.row_spec(apply(row, [setf("layout.zero_or_fsdp", "none (plain DDP)")]), others)
    assert " dp 1" not in plain.spec and "dp {" not in plain.spec


@pytest.mark.parametrize("name,vocab", [
    ("GPT3 175B", 50257),
    ("GPT-3 175B", 50257),
    ("OPT-175B", 50272),
    ("Llama 3.1 405B", 128256),
    ("LLAMA2-7B", 32000),
    ("Nemotron-4 340B", 256000),
    ("Mixtral 8x22B", 32768),
    ("Mixtral 8x7B", 32000),
    ("Qwen3-235B-A22B", 151936),
    ("DeepSeek-V3", 129280),
])
def test_an_unstated_vocabulary_is_the_named_models_tokenizer(name, vocab):
    """A row that leaves `vocab` empty (NeMo's tables print only the model's name) reads with the
    tokenizer its name names; before, the row was left out ("the model's `vocab` not published")."""
    notes: list[str] = []
    assert published.tokenizer_vocab({"name": name}, notes) == vocab
    assert notes and "unstated" in notes[0]


def test_a_vocabulary_no_name_gives_is_still_unpublished():
    notes: list[str] = []
    assert published.tokenizer_vocab({"name": "an in-house 30B model"}, notes) is None and not notes


@pytest.mark.parametrize("written,unused", [
    ("NA in table (read as no interleaving)", True),
    ("n/a in the source", True),
    ("none in table", True),
    ("NA in table (not stated)", False),  # left open: unstated, not 1
    ("n/a (derived: 24)", False),
])
def test_a_degree_the_table_wrote_as_na_is_not_used(written, unused):
    """DGX Cloud's tables print "NA" for a virtual pipeline they do not use; a transcriber writes where
    it saw it ("NA in table"). Before, the row was left out (`vpp` is not a whole number)."""
    assert published.unused(written) is unused


@pytest.mark.parametrize("note,recipe", [
    # another release's recipe is not the row's (before: current scaling, read from the later release)
    ("FP8 scaling recipe not stated in this (25.02) version of the page; later (25.04+) versions state per-tensor "
     "current scaling.", "delayed"),
    ("the 25.09 rows used FP8-CS", "delayed"),
    # controls: the row's own recipe, also beside a comparison or another release
    ("the run used per-tensor current scaling", "current"),
    ("this run used per-tensor current scaling, as later releases do", "current"),
    ("per-tensor current scaling (compared with delayed scaling in the previous release)", "current"),
    ("MXFP8 recipe, unlike the 25.09 rows which used FP8-CS", "mxfp8"),
])
def test_an_fp8_recipe_named_for_another_release_is_not_the_rows(note, recipe):
    assert published.fp8_recipe_of({"layout": {"precision": "FP8"}, "notes": [note]}) == recipe


NEMO_B200 = "nemo2502_b200_nemotron4_340b_128gpu"  # NeMo 25.02, Performance Summary, tp 8 pp 4 dp 4


def test_nemo_performance_recipes_of_25_02_and_25_04_reduce_gradients_in_bf16():
    """NeMo 78f445f822 set grad_reduce_in_fp32 False in every performance script of the 25.02 and
    25.04 containers: a row of those tables that does not say how it reduced reads bf16, as the
    repository's row, which states it, does (before: fp32, -23 % on the 340B at dp 4). Not before
    25.02, nor where the row states fp32."""
    row, others = ROWS[NEMO_B200]
    stated = reading(row, others)
    assert stated["sw.grad_bytes"] == 2
    bare = apply(row, [setf("notes", "results from NVIDIA's performance recipes (Performance Summary page)")])
    assert reading(bare, others)["sw.grad_bytes"] == 2
    fp32 = apply(row, [setf("notes", "Performance Summary page; gradients reduced in fp32")])
    assert reading(fp32, others)["sw.grad_bytes"] == 4
    older = apply(bare, [setf("source.title", "NeMo Framework user guide, Performance Summary, NeMo 24.12 container")])
    assert reading(older, others)["sw.grad_bytes"] == 4
    denied = apply(row, [setf("notes", "Performance Summary page; grad-reduce-in-bf16 not set")])
    assert reading(denied, others)["sw.grad_bytes"] == 4


@pytest.mark.parametrize("written,sharding", [
    ("none (FSDP 0, DDP; distributed-optimizer setting not stated)", "zero1"),  # before: none
    ("DDP (ZeRO stage unknown)", "zero1"),
    ("distributed optimizer not stated", "zero1"),
    ("none (table FSDP=0: DDP)", "zero1"),  # the table's FSDP column: no FSDP, the recipes' optimizer
    ("no FSDP", "zero1"),
    ("none (FSDP 0; no distributed optimizer)", "none"),
    # controls: a stated sharding, or none stated as none
    ("FSDP (ZeRO-3); distributed optimizer not stated", "zero3"),
    ("none (plain DDP)", "none"),
    ("ZeRO-1 (distributed optimizer)", "zero1"),
])
def test_an_optimizer_sharding_left_open_is_the_runtimes_default(written, sharding):
    """A Megatron-Bridge table has no distributed-optimizer column; a transcriber who writes "none
    (FSDP 0, DDP; distributed-optimizer setting not stated)" states no FSDP and leaves the optimizer's
    sharding open: NeMo's and Bridge's default, the distributed optimizer (before: no sharding, which
    put DeepSeek-V3 on 1,024 H100 over its memory and recomputing)."""
    assert published.sharding_of({"zero_or_fsdp": written}, "megatron", "nvidia-nemo/megatron-bridge", []) == sharding


@pytest.mark.parametrize("note,network", [
    # Jean Zay's nodes as BLOOM's transcriber wrote them: four 100 Gb/s Omni-Path links, the count
    # with an aside before its noun (before: the generation's rate on the A100 node's usual 8 NICs)
    ("Jean Zay (IDRIS): 8x A100 80GB per node, NVLink intra-node, 4 Omni-Path (OPA) links per node, dedicated "
     "NCCL subnet", "4 x 100 Gb/s"),
    ("4 Omni-Path links per node", "4 x 100 Gb/s"),
    ("8 InfiniBand (HDR) NICs", "8 x 200 Gb/s"),
])
def test_nics_counted_with_an_aside_before_their_noun(note, network):
    from parc.catalog.gpus import GPUS

    assert published.network_of({"note": note}, 8, GPUS["a100-80gb"], []) == network


@pytest.mark.parametrize("note,line", [
    # DGX Cloud's README describes the GB200 superchip: two GPUs share the 16 TB/s (before: 16 TB/s each)
    ("GB200 superchip (72 Arm cores, 2x Blackwell GPUs, 16 TB/s memory bandwidth), NVLink 5th generation 3.6 TB/s",
     "hbm-bandwidth 8 TB/s"),
    ("node of 8 GPUs, 64 TB/s HBM aggregate", "hbm-bandwidth 8 TB/s"),
    # controls: a GPU's own bandwidth beside a count of GPUs per node
    ("8 GPUs per node, HBM 3.35 TB/s", "hbm-bandwidth 3.35 TB/s"),
    ("H100 96GB HBM2e @ 2.4TB/s", "hbm-bandwidth 2.4 TB/s"),
])
def test_a_superchips_memory_bandwidth_is_shared_by_its_gpus(note, line):
    assert published.power_and_memory({"note": note}, []) == [line]


@pytest.mark.parametrize("key,kind", [
    ("tps_gpu", "tokens_gpu"),  # torchtitan's TPS per GPU (before: no throughput, the row left out)
    ("TPS/GPU", "tokens_gpu"),
    ("wps", "tokens"),
    ("mem_gib", None),
])
def test_tokens_per_second_by_torchtitans_name(key, kind):
    assert published.figure_kind(key, 100) == kind


@pytest.mark.parametrize("written,open_", [
    ("? (interleaved, V not stated)", True),  # before: "`vpp` is not a whole number", the row left out
    ("? (stages/rank not stated)", True),
    ("null (not verified)", True),
    ("n/a (no pipeline)", False),  # controls: not used, and a value with an aside
    ("8 (not stated in table)", False),
])
def test_a_question_mark_with_an_aside_that_leaves_it_open_is_unstated(written, open_):
    assert published.placeholder(written) is open_


@pytest.mark.parametrize("note,network", [
    # a switch's ports and capacity are not the node's NICs (before: 64 x 400 Gb/s per node)
    ("Broadcom Tomahawk 4 switches (25.6Tbps, 64x400G), 3-layer CLOS 1:1; ToR 400G split to 2x200G", "8 x 200 Gb/s"),
    # controls: the node's ports named before the switches they reach
    ("8x 400 Gb/s NICs to NDR switches", "8 x 400 Gb/s"),
    ("8x400G NDR; rail-optimized leaf switches", "8 x 400 Gb/s"),
])
def test_a_switchs_ports_are_not_the_nodes(note, network):
    from parc.catalog.gpus import GPUS

    assert published.network_of({"note": note}, 8, GPUS["a100-80gb"], []) == network


def test_dist_opt_with_a_question_mark_is_left_open():
    notes: list[str] = []
    assert published.sharding_of({"zero_or_fsdp": "dist-opt? (not stated)"}, "megatron", "megascale megatron-lm",
                                 notes) == "none"
    assert notes == ["no optimizer sharding (unstated)"]


MTNLG = "mtnlg_530b_2240gpu"  # Smith et al. 2022 (arXiv:2201.11990): 105 layers on 35 stages of 8 A100


def test_a_run_before_partial_recomputation_recomputes_every_layer_or_none():
    """Megatron-LM recomputed every layer or none until Korthikanti et al. (May 2022): MT-NLG's row,
    its recomputation left open, fits only recomputing and is read with every layer recomputed, as
    the repository's row states it (before: `full 2`, the least per-layer count that fits, +39 %)."""
    row, others = ROWS[MTNLG]
    assert published.before_partial_recompute(row)
    run = published.compiled(published.row_spec(apply(row, [setf("layout.recompute", "null (not verified)")]), others))
    assert "recompute full\n" in run.spec and not run.findings
    later = apply(row, [setf("source.title", "A 2023 report, arXiv:2305.00001")])
    assert not published.before_partial_recompute(later)


@pytest.mark.parametrize("written,sharding", [
    ("none (distributed optimizer)", "zero1"),  # no FSDP; the optimizer's state sharded (before: none)
    ("none (distributed optimizer not used)", "none"),
    ("none (predates the distributed optimizer)", "none"),
])
def test_none_with_the_distributed_optimizer_beside_it_is_zero1(written, sharding):
    assert published.sharding_of({"zero_or_fsdp": written}, "megatron", "megatron-bridge", []) == sharding


@pytest.mark.parametrize("text,pattern,stated", [
    # a mention in an aside shares the denial of what it glosses (before: FP8 attention stated)
    ("fp8 attention (fp8-dot-product-attention / fp8-multi-head-attention) is not set anywhere in the perf "
     "scripts, so the recipe leaves attention at its default (bf16).", "FP8_ATTENTION", False),
    # a setting named only to say it does nothing (before: DeepEP)
    ("the dispatcher stays at the library's 'alltoall' (the library also stores "
     "moe-flex-dispatcher-backend='deepep', but that has no effect unless the dispatcher type is 'flex').",
     "deepep", False),
    # controls
    ("fp8 attention on (fp8-dot-product-attention: true)", "FP8_ATTENTION", True),
    ("uses deepep (20 sms)", "deepep", True),
    # "set to false" takes back only the mention it follows, not one a clause away
    ("fp8-dot-product-attention was set to false", "FP8_ATTENTION", False),
    ("the recipe names fp8-dot-product-attention but sets it to false", "FP8_ATTENTION", False),
    ("fp8 attention on while cp is set to none", "FP8_ATTENTION", True),
    # the gradients' reduction in prose and by its option set in words
    ("gradient reduction runs in bf16", "BF16_REDUCTION", True),
    ("the perf script sets both mixed-precision.grad-reduce-in-fp32 and ddp.grad-reduce-in-fp32 to false",
     "BF16_REDUCTION", True),
    ("grad-reduce-in-fp32: true", "BF16_REDUCTION", False),
])
def test_recipe_facts_in_prose_read_as_they_say(text, pattern, stated):
    assert published.affirms(text, getattr(published, pattern, pattern)) is stated


def test_an_option_set_in_words_later_in_its_clause():
    """"sets both mixed_precision.grad_reduce_in_fp32 and ddp.grad_reduce_in_fp32 to False" sets it
    false (before: the first mention, with no value beside it, read as a flag turned on); an option
    in an aside that the sentence denies is not on."""
    entry = {"notes": ["Gradient reduction runs in BF16: the perf script sets both "
                       "mixed_precision.grad_reduce_in_fp32 and ddp.grad_reduce_in_fp32 to False.",
                       "FP8 attention (fp8_dot_product_attention / fp8_multi_head_attention) is not set anywhere."]}
    options = published.stated_options(entry)
    assert options.get("grad_reduce_in_fp32") is False
    assert "fp8_dot_product_attention" not in options.get("other", [])


GPT_OSS_H100 = "bridge2604_h100_gpt_oss_120b_bf16"  # its model block states the window, biases, clamp and YaRN


def test_gpt_oss_named_reads_with_its_published_architecture():
    """A gpt-oss row that names the model and leaves its window, the experts' biases, the clamped
    GLU and YaRN unsaid reads as the repository's row that states them (gpt-oss's published
    config; before: a plain MoE, +22 % on 64 H100 where the row states them at +2.5 %); the
    window in prose ("128-token sliding-window attention") is read too."""
    row, others = ROWS[GPT_OSS_H100]
    model = {k: v for k, v in row["model"].items()
             if k not in ("window", "full_attention_every", "expert_bias", "activation_clamp", "yarn_factor",
                          "yarn_mscale", "yarn_mscale_all_dim")}
    bare = dict(row, model=dict(model, arch="MoE, SwiGLU, RoPE, GQA; alternating full / 128-token sliding-window "
                                            "attention"))
    assert reading(bare, others)["spec"] == reading(row, others)["spec"]
    assert any("unstated: gpt-oss's published config" in a for a in published.row_spec(bare, others).assumptions)
    # a row that states its own window keeps it
    own = dict(bare, model=dict(bare["model"], window=256))
    assert any("window 256" in line for line in reading(own, others)["spec"])


def test_an_fsdp_col_of_0_on_a_bridge_row_keeps_the_distributed_optimizer():
    """"DDP (FSDP col 0)": the table's FSDP column abbreviated (before: read as FSDP, zero3, which
    Megatron-LM's torch FSDP2 refuses with pipeline parallelism: E0623, -71 %)."""
    assert published.sharding_of({"zero_or_fsdp": "DDP (FSDP col 0)"}, "megatron", "megatron-bridge", []) == "zero1"
    assert published.sharding_of({"zero_or_fsdp": "DDP (FSDP col 0)"}, "torch", "llm-foundry", []) == "none"


@pytest.mark.parametrize("arch", ["hybrid Mamba2/attn: 54 Mamba, 54 MLP (sq-ReLU), 10 attn layers",
                                  "Nemotron-H: hybrid state-space and attention"])
def test_a_mamba_hybrid_is_left_out_not_read_as_a_transformer(arch):
    """A hybrid of Mamba and attention layers is no transformer of all its layers (before: Nemotron-H
    56B read as 118 transformer layers, -33 %): the row is left out with the reason."""
    with pytest.raises(published.Unusable, match="state-space"):
        published.model_block({"arch": arch, "layers": 118, "hidden": 8192, "heads": 64, "vocab": 131072,
                               "seq_len": 8192}, [])


def test_a_recipe_named_for_a_tables_parenthesised_figures_is_not_the_rows():
    precision = ("not printed (no Precision col in 25.09 table); FP8 implied - footnote: '(..) = different "
                 "quantization granularities: GB200/B200 32x32 for weights and activations' i.e. MXFP8 in parens")
    assert published.fp8_recipe_of({"layout": {"precision": precision}}) == "delayed"
    assert published.fp8_recipe_of({"layout": {"precision": "FP8 (MX)"}}) == "mxfp8"


def test_what_the_same_table_says_of_its_other_rows_is_not_the_rows():
    """"same table: FSDP + torch.compile 6,667 tps/gpu" names the table's other rows (before: this
    eager row read as compiled, +17 %)."""
    text = ("8b fsdp reaches 33% to 39% mfu.\nsame table: fsdp + torch.compile 6,667 tps/gpu (77.0 gib); + float8 "
            "8,532 (76.8 gib).\nbf16 (no torch.compile, no float8 in this row)")
    assert not published.affirms(text, published.COMPILE_WORDS)
    assert published.affirms("fsdp + torch.compile (this row)", published.COMPILE_WORDS)


def test_nanotrons_flop_count_is_palms():
    """nanotron's get_flops (src/nanotron/models/llama.py): 3 x the forward's matrix products with
    the LM head and the whole attention square, PaLM's 6 N + 12 l H s per token. A transcriber who
    describes it in words names it (before: no convention, the playbook's MFU rows left out)."""
    described = ("nanotron get_flops (src/nanotron/models/llama.py): model_flops = 3 x forward matmul flops; q,k,v,o "
                 "projections (GQA-aware), SwiGLU 3 matrices, attention QK^T and AV as full non-causal s^2 terms, "
                 "lm head 2*s*h*V; no recompute term")
    assert published.convention_key(described) == "palm_mfu"


def test_transformer_engine_written_as_one_word():
    """"fp8 via TransformerEngine (amp_fp8)": llm-foundry's fp8 linears (before: none, the H100 FP8
    row read in bf16, -28 %)."""
    assert published.te_fp8_linears("torch", "fp8", "fp8 via transformerengine (amp_fp8), bf16 otherwise")


TITAN_405B = "torchtitan_405b_512gpu_3d_interleaved"  # Dec 2024 runs: 8 micro-batches of 4 sequences


def test_torchtitans_local_batch_in_the_micro_batch_field_and_a_documents_commit_date():
    """A transcriber who puts torchtitan's "local batch size" (a data rank's 32 sequences) in the
    micro-batch field and says so, and dates the benchmark file's commit (2025-06-13) beside the
    runs' own code, reads as the row that states neither (before: micro-batch 32 over 8 stages,
    over its memory, -62 %)."""
    row, others = ROWS[TITAN_405B]
    moved = apply(row, [setf("layout.micro_batch", 32),
                        note("layout.micro_batch holds the stated local batch size (per DP rank)"),
                        setf("source.locator", "benchmarks/llama3_h100_202412_torchtitan.md (added in commit "
                                               "820504e20, 2025-06-13; runs at torchtitan 9dec370, Dec 2024)")])
    assert reading(moved, others)["spec"] == reading(row, others)["spec"]


@pytest.mark.parametrize(("text", "pieces"), [
    ("FP8 vs. BF16 rows; this one BF16", ["FP8 vs. BF16 rows", " this one BF16"]),
    ("dispatch e.g. DeepEP. Next", ["dispatch e.g. DeepEP", " Next"]),
    ("HBM 1.5 TB/s, v0.8. Then", ["HBM 1.5 TB/s, v0.8. Then"]),  # a number keeps its full stop
    ("ends here.\nnew line", ["ends here", "", "new line"]),
])
def test_one_sentence_splitter_keeps_abbreviations_and_decimals_whole(text, pieces):
    """`clauses` (every reader's splitter, and since stop 63 `state_space_hybrid`'s, which had its own
    for "vs."): a full stop in "vs.", "e.g." or "i.e.", or after a digit, ends no sentence."""
    assert published.clauses(text) == pieces


def test_a_megatron_runs_utilisation_with_no_convention_is_read_in_megatron_cores_count():
    """A Megatron-family row that gives only a utilisation and no FLOP convention (MoE Parallel
    Folding's tables: MFU alone, "FLOP formula not written out") is read in the count its runtime
    prints (Megatron-Core's `num_floating_point_operations`), not left out: the same figure as the
    row that names that convention. A row of another runtime with nothing but a utilisation stays
    out (no count is its runtime's own)."""
    row, others = ROWS["megatron_readme2024_7.1B"]
    named = reading(row, others)
    unnamed_row = apply(row, [setf("flop_convention", "unspecified")])
    unnamed = reading(unnamed_row, others)
    assert unnamed["reported_tflops"] == named["reported_tflops"] and unnamed["convention"] == named["convention"]
    run = published.row_spec(unnamed_row, others)
    assert any("unknown and no step time or tokens" in a for a in run.assumptions)
    other, siblings = ROWS["glm130b_768gpu"]
    assert "SKIPPED" in reading(apply(other, [setf("flop_convention", "unspecified")]), siblings)


def test_the_sources_name_decides_the_runtime_before_a_shape_cited_from_another_project():
    """Megatron-LM's examples/llama README has no 70B script; a transcriber citing the 70B shape
    "as in pytorch/torchtitan's model registry" in the model's extra made the row torchtitan's
    (FSDP2, the least recomputation that fits: -49 %). The source's own name decides first; a
    row with no runtime in its name still reads its evidence (the control)."""
    row, others = ROWS["megatron_readme2024_7.1B"]
    cited = apply(row, [setf("model.extra", {"arch_source": "the shape as in pytorch/torchtitan's registry"})])
    assert published.runtime_family(cited) == "megatron"
    unnamed = apply(cited, [setf("source.title", "A benchmark table"), setf("source.locator", "row 2"),
                            setf("group", "g"), setf("source.primary_evidence", []), setf("notes", [])])
    assert published.runtime_family(unnamed) == "torchtitan"
