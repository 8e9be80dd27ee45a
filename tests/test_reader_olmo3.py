"""Stop 66's reading of an independent transcription of Olmo 3's technical report (Olmo Team 2025,
arXiv:2512.13961, Appendix A.1 Tables 33-35): three facts of its rows the reader missed, which put
its six runs at +23..+118 % (predicted too fast).

- The runtime: the report trains with OLMo-core, a program built on torch's own parallelism as
  torchtitan is (FSDP2 and torch.compile on each block, FlashAttention-2); no word the reader knew
  named it, so the rows ran as "other" (Megatron's fused kernels and its defaults).
- The sliding window: on 3 of every 4 layers (OLMo-core's pattern [4096, 4096, 4096, -1]); read as on
  every layer, the long-context runs' full-attention layers at 64K tokens went uncounted (+118 %).
- The hybrid sharding's groups ("DP-rep 64 | DP-shard 8"), read as zero3 over every data rank.
"""

from __future__ import annotations

import copy
import importlib

from .reader_paraphrase import published

OLMO_CORE_WINDOWS = [4096, 4096, 4096, -1]
"""OLMo-core's `SlidingWindowAttentionConfig.pattern` for Olmo 3 (-1: full attention), repeated over
the layers: layer i takes entry i % 4 (allenai/OLMo-core, src/olmo_core/nn/transformer/config.py)."""

ROW = {
    "id": "olmo3_7b_pretrain_512xh100",
    "group": "olmo3_table34",
    "source": {
        "title": "Olmo Team (Ai2) 2025, Olmo 3 technical report, arXiv:2512.13961",
        "locator": "Appendix A.1 Table 34 + Table 35, Olmo 3 Base 7B, pretraining",
        "primary_evidence": [
            "Table 34 (Olmo 3 Base 7B, pretraining): DP-rep 64 | DP-shard 8 | CP - | Num devices 512 | "
            "Throughput (TPS/device) 7.7K",
            'Sec 3 "Training": "we train the 7B model at 7700 tokens per second per GPU ... using bfloat16 '
            'precision throughout" (OLMo-core, torch.compile, custom attention and LM-head kernels)',
        ],
    },
    "model": {
        "name": "Olmo 3 Base 7B",
        "arch": "dense decoder: SwiGLU, RMSNorm, QK-Norm, RoPE; sliding-window attention (4096) on 3 of every "
                "4 layers, last layer full; MHA",
        "layers": 32, "hidden": 4096, "ffn": 11008, "heads": 32, "kv_heads": 32, "head_dim": 128,
        "vocab": 100278, "seq_len": 8192,
        "extra": {"sliding_window": "4096 tokens on 3/4 of layers"},
    },
    "hardware": {"gpu": "H100-SXM5-80GB", "gpu_memory_gb": 80, "num_gpus": 512, "gpus_per_node": 8,
                 "peak_tflops_dense_at_precision": 989},
    "layout": {"tp": 1, "pp": 1, "dp": 512, "cp": 1, "ep": 1, "micro_batch": 1, "global_batch": 512,
               "zero_or_fsdp": "HSDP: shard dim 8, replicate dim 64", "precision": "bf16",
               "extra": {"dp_replicate": 64, "dp_shard": 8}},
    "outcomes": {"reported": {"tokens_per_s_per_gpu": 7700}},
    "flop_convention": "torchtitan",
}


def entry(**fields) -> dict:
    row = copy.deepcopy(ROW)
    for path, value in fields.items():
        cur = row
        keys = path.split("__")
        for k in keys[:-1]:
            cur = cur[k]
        cur[keys[-1]] = value
    return row


def test_olmo_core_is_read_as_a_torch_native_runtime():
    assert published.runtime_family(ROW) == "torchtitan"
    # the model's and the report's names alone name no runtime
    unnamed = entry(source__primary_evidence=["Table 34: DP-rep 64 | DP-shard 8"])
    assert published.runtime_family(unnamed) == "other"
    assert published.runtime_family(entry(source__primary_evidence=["not OLMo-core: an in-house trainer"])) == "other"


def test_the_windowed_share_of_the_layers_is_read_as_olmo_cores_pattern():
    run = published.compiled(published.row_spec(ROW, [ROW]))
    assert not isinstance(run, published.Skipped), run
    assert "window 4096, full-attention-every 4" in run.spec
    expected = tuple(i for i in range(ROW["model"]["layers"]) if OLMO_CORE_WINDOWS[i % len(OLMO_CORE_WINDOWS)] != -1)
    assert expected and run.plan.model.windowed_layers == expected
    # every phrasing of the same pattern, and none where the share is not one full layer in N
    for said in ("SWA on 3/4 of layers", "sliding window 4096 on 3 out of 4 layers",
                 "window pattern [4096, 4096, 4096, -1]", "full attention every 4th layer, window 4096 elsewhere",
                 "every fourth layer uses full attention; sliding window 4096"):
        assert published.full_attention_period(said.lower()) == 4, said
    for said in ("3/4 of layers are MoE layers", "sliding window on 1 of every 4 layers", "window 4096"):
        assert published.full_attention_period(said.lower()) is None, said


def test_the_stated_hybrid_sharding_groups_are_the_specs():
    run = published.row_spec(ROW, [ROW])
    assert "dp { sharding hsdp 64 x 8 }" in run.spec
    assert any("64 replicas, each sharded over 8 ranks" in a for a in run.assumptions)
    # the table's own words, one degree with the other implied, and a pair that is not the degree
    assert published.hsdp_groups({"zero_or_fsdp": "HSDP (DP-rep 64 | DP-shard 8)"}, 512) == (64, 8)
    assert published.hsdp_groups({"zero_or_fsdp": "HSDP, shard 64"}, 1024) == (16, 64)
    assert published.hsdp_groups({"zero_or_fsdp": "HSDP shard 8, replicate 4"}, 64) is None
    unstated = published.row_spec(entry(layout__zero_or_fsdp="HSDP", layout__extra={}), [ROW])
    assert "dp { sharding zero3 }" in unstated.spec
    assert any("shard group is not published" in a for a in unstated.assumptions)


def test_the_three_facts_move_the_prediction_toward_the_measured_step():
    """The measured step (512 x 8,192 tokens at 7,700 a GPU: 1.064 s) against the reading with the
    three facts and the reading without them (no runtime named, the window on every layer, the
    groups unstated): a quarter of the layers attending over all 8,192 keys and the runtime's own
    kernels make the step slower, toward what ran."""
    release_check = importlib.import_module("release_check")
    measured = 512 * 8192 / (7700 * 512)
    now = release_check.evaluate_entry(ROW, [ROW])
    blind = entry(source__primary_evidence=["Table 34: Throughput (TPS/device) 7.7K"], model__arch="dense decoder",
                  model__extra={"sliding_window": 4096}, layout__zero_or_fsdp="HSDP", layout__extra={})
    before = release_check.evaluate_entry(blind, [blind])
    assert now is not None and before is not None
    assert before.breakdown.step < now.breakdown.step
    assert abs(now.breakdown.step / measured - 1) < abs(before.breakdown.step / measured - 1)


FLASH_TABLE = {
    "id": "fa2_gpt3_1.3b_8k",
    "group": "flashattention2_table1",
    "source": {
        "title": "Dao 2023, FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning, arXiv:2307.08691",
        "locator": "Table 1, row GPT3-1.3B 8k context, column 'Without FlashAttention'",
        "primary_evidence": ["Table 1 caption: 'FlashAttention-2 reaches up to 225 TFLOPs/s (72% model FLOPs utilization). "
                             "We compare against a baseline running without FlashAttention.'"],
    },
    "model": {"name": "GPT3-1.3B", "layers": 24, "hidden": 2048, "ffn": 8192, "heads": 16, "kv_heads": 16,
              "vocab": 50257, "seq_len": 8192},
    "hardware": {"gpu": "A100-SXM4-80GB", "num_gpus": 8, "gpus_per_node": 8},
    "layout": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8, "precision": "bf16",
               "extra": {"attention_kernel": "Without FlashAttention"}},
    "outcomes": {"reported": {"tflops_per_gpu": 72}},
    "flop_convention": "palm_mfu",
}


def test_the_rows_own_attention_field_decides_before_its_titles_kernel():
    """Stop 66's transcription of the FlashAttention-2 paper's Table 1: its baseline column ran
    without FlashAttention, which the row's own `attention_kernel` field says; the title and caption
    name FlashAttention-2, which the reader took as the kernel (+164 % at 8K tokens, +3 % read as
    stated). The field that names the kernel the column ran is the row's; the control is its FA2
    column, whose field names the kernel."""
    def attention(row) -> str:
        software, _ = published.software_of(row, "bf16", 1, 8, notes := [])
        return software.attention, notes

    kernel, notes = attention(FLASH_TABLE)
    assert kernel == "unfused" and any("unfused attention (stated" in n for n in notes)
    flash = copy.deepcopy(FLASH_TABLE)
    flash["layout"]["extra"]["attention_kernel"] = "FlashAttention-2"
    assert attention(flash)[0] != "unfused"
    # no field: the source's words decide as before (the caption's FlashAttention-2)
    unstated = copy.deepcopy(FLASH_TABLE)
    del unstated["layout"]["extra"]
    assert attention(unstated)[0] != "unfused"
    assert published.attention_field(FLASH_TABLE) == "without flashattention"
