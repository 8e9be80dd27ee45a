"""Layout, precision and recomputation facts written as other transcribers write them read as the
row as published: a probe rewrote the layout fields of 38 rows 732 ways (stop 61); 125 rewrites that
mean the same read differently, and each is a case here, by cause:

- R1: a degree written as not used, or a placeholder with words ("n/a (no tensor parallelism)", "none (FSDP only)", "single stage", "no experts"), is 1; a count left open is unstated.
- R2: a degree written as its command-line flag, in parentheses or as a number word ("--tensor-model-parallel-size 8", "TP(8)", "eight").
- R3: the number a field counts, not the first one in it ("4 experts per rank, EP=64", "1536 / (8x8) = 24", "4096 tokens (2 sequences)").
- R4: a count followed by another field ("gbs=384, mbs=1").
- R5: sequence parallelism denied after its name ("SP: no", "sequence parallelism was not used"), or left open ("not stated (default on with TP)").
- R6: virtual stages in other words ("virtual pipeline degree 4", "4 stages per device", "four virtual stages").
- R7: a schedule compared with GPipe is not GPipe ("1F1B rather than GPipe").
- R8: "interleaved (virtual stages unstated)" is interleaved.
- R9: sharding words ("reshard_after_forward disabled", "predates the distributed optimizer", "ZeRO-DP P_os").
- R10: a denied FSDP is not torch's data-parallel runtime.
- R11: recomputation field words ("activation_checkpointing_reentrant: false", "not enabled", "full (not selective)").
- R12: a placeholder in the recompute field leaves the recipe's recomputation.
- R13: FP8 denied or named aside in a BF16 or FP16 precision field.
- R14: the fp8 recipe in the precision field: denials, "dynamic", 1x32 blocks and E8M0 scales, NVFP4's 16-element blocks.
- R15: recomputation stated in a note without the word "layers".
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import ROWS, apply, diff, note, reading, setf

CASES = {
    # a degree written as not used, or a placeholder with words ("n/a (no tensor parallelism)", "none (FSDP only)", "single stage", "no experts"), is 1; a count left open is unstated
    "R1": [
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", 'no TP')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", 'not used')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", 'n/a (no tensor parallelism)')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", 'no tensor parallelism')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", 'disabled')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", '- (no TP)')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.tp", 'off (1)')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.tp", 'n/a (pure FSDP)')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.tp", 'none (FSDP only)')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.tp", 'not used (FSDP)')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", 'n/a — single stage')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", 'none (single stage)')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", 'no pipelining')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", '— (no pipeline)')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", 'n/a (no pipeline parallelism)')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", 'single stage')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.pp", 'not used')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.pp", 'n/a (FSDP only)')]),
        ('narayanan21_t1_145B', [setf("layout.dp", 'n/a (derived: 24)')]),
        ('korthikanti22_530B_selective_sp', [setf("layout.dp", 'none (1 replica)')]),
        ('korthikanti22_530B_selective_sp', [setf("layout.dp", 'no DP')]),
        ('korthikanti22_530B_selective_sp', [setf("layout.dp", 'n/a (single replica)')]),
        ('narayanan21_t1_145B', [setf("layout.cp", 'no context parallelism')]),
        ('narayanan21_t1_145B', [setf("layout.cp", 'n/a (2K sequences)')]),
        ('narayanan21_t1_145B', [setf("layout.cp", 'not used')]),
        ('narayanan21_t1_145B', [setf("layout.cp", '- (seq 2048)')]),
        ('narayanan21_t1_145B', [setf("layout.cp", 'n/a (short sequences)')]),
        ('narayanan21_t1_145B', [setf("layout.ep", 'n/a (dense)')]),
        ('narayanan21_t1_145B', [setf("layout.ep", 'none (dense model)')]),
        ('narayanan21_t1_145B', [setf("layout.ep", '— (dense)')]),
        ('narayanan21_t1_145B', [setf("layout.ep", 'n/a: dense')]),
        ('narayanan21_t1_145B', [setf("layout.ep", 'not applicable')]),
        ('narayanan21_t1_145B', [setf("layout.ep", 'N/A (no MoE)')]),
        ('narayanan21_t1_145B', [setf("layout.ep", 'no experts')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.expert_tp", 'expert TP: none')]),
        ('narayanan21_t1_145B', [setf("layout.grad_accum", 'n/a (derived: 48)')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.grad_accum", 'none')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.grad_accum", 'no accumulation')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.grad_accum", 'n/a (1)')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.grad_accum", 'no gradient accumulation')]),
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.grad_accum", 'off')]),
        ('nemo2504_b200_llama3_8b_fp8_128k', [setf("layout.micro_batch", 'n/a (1)')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.micro_batch", 'n/a (DualPipe micro-batches not published)')]),
        ('narayanan21_t1_1T', [setf("layout.vpp", 'n/a — single chunk per stage')]),
        ('narayanan21_t1_1T', [setf("layout.vpp", 'none (plain 1F1B)')]),
        ('narayanan21_t1_1T', [setf("layout.vpp", 'n/a (1F1B)')]),
        ('narayanan21_t1_1T', [setf("layout.vpp", 'not used')]),
        ('narayanan21_t1_1T', [setf("layout.vpp", 'no interleaving')]),
        ('bloom_176b_384gpu_tp4_pp12_dp8', [setf("layout.vpp", 'n/a (DeepSpeed 1F1B)')]),
    ],
    # a degree written as its command-line flag, in parentheses or as a number word ("--tensor-model-parallel-size 8", "TP(8)", "eight")
    "R2": [
        ('narayanan21_t1_145B', [setf("layout.tp", '--tensor-model-parallel-size 8')]),
        ('narayanan21_t1_145B', [setf("layout.tp", '--tensor-model-parallel-size=8')]),
        ('narayanan21_t1_145B', [setf("layout.tp", 'TP(8)')]),
        ('narayanan21_t1_145B', [setf("layout.tp", 'eight')]),
        ('narayanan21_t1_145B', [setf("layout.pp", '--pipeline-model-parallel-size 8')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.ep", '--expert-model-parallel-size 64')]),
        ('narayanan21_t1_145B', [setf("layout.micro_batch", '--micro-batch-size 2')]),
        ('narayanan21_t1_145B', [setf("layout.micro_batch", 'two')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", 'four')]),
    ],
    # the number a field counts, not the first one in it ("4 experts per rank, EP=64", "1536 / (8x8) = 24", "4096 tokens (2 sequences)")
    "R3": [
        ('narayanan21_t1_145B', [setf("layout.dp", '1536 / (8×8) = 24')]),
        ('narayanan21_t1_145B', [setf("layout.dp", '1536/(8*8) = 24')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.ep", '4 experts per rank, EP=64')]),
        ('narayanan21_t1_145B', [setf("layout.micro_batch", '4096 tokens (2 sequences)')]),
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.dp", '2048 / 16 = 128')]),
    ],
    # a count followed by another field ("gbs=384, mbs=1")
    "R4": [
        ('megatron_readme2024_70B', [setf("layout.global_batch", 'gbs=384, mbs=1')]),
        ('mpt_a100_40gb_7b_s2048_g128_mb18', [setf("layout.global_batch", 'gbs=2304, mbs=18')]),
    ],
    # sequence parallelism denied after its name ("SP: no", "sequence parallelism was not used"), or left open ("not stated (default on with TP)")
    "R5": [
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'sequence parallel: no')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'SP: no')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'SP no')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'sequence parallelism was not used')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'SP: ✗')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'SP: none')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'sequence-parallel not enabled')]),
        ('narayanan21_t1_145B', [setf("layout.sequence_parallel", 'SP not yet available')]),
        ('modelzoo_qwen3_235b_crossnode_ep32_deepep', [setf("layout.sequence_parallel", 'not stated (Megatron default with TP)')]),
        ('modelzoo_qwen3_235b_crossnode_ep32_deepep', [setf("layout.sequence_parallel", 'not stated (default on with TP)')]),
    ],
    # virtual stages in other words ("virtual pipeline degree 4", "4 stages per device", "four virtual stages")
    "R6": [
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved, 4 stages per device')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved schedule, virtual pipeline degree 4')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved, virtual pipeline parallel degree: 4')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved 1F1B (VPP degree 4)')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", '4 interleaved stages per rank')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved 1F1B, 4 vstages')]),
        ('bridge2604_gb200_llama31_405b_fp8cs', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved 1F1B, four virtual stages')]),
        ('nemo2407_h100_llama3_70b_64gpu', [setf("layout.vpp", None), setf("layout.pipeline_schedule", 'interleaved (virtual pipeline degree 5)')]),
    ],
    # a schedule compared with GPipe is not GPipe ("1F1B rather than GPipe")
    "R7": [
        ('narayanan21_t1_1T', [setf("layout.pipeline_schedule", '1F1B rather than GPipe')]),
        ('narayanan21_t1_1T', [setf("layout.pipeline_schedule", '1F1B (vs GPipe)')]),
        ('narayanan21_t1_1T', [setf("layout.pipeline_schedule", '1F1B (less memory than GPipe)')]),
        ('narayanan21_t1_1T', [setf("layout.pipeline_schedule", '1F1B; GPipe would need more memory')]),
    ],
    # "interleaved (virtual stages unstated)" is interleaved
    "R8": [
        ('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [setf("layout.pipeline_schedule", 'interleaved (virtual stages unstated)')]),
    ],
    # sharding words ("reshard_after_forward disabled", "predates the distributed optimizer", "ZeRO-DP P_os")
    "R9": [
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.zero_or_fsdp", 'ZeRO-DP P_os')]),
        ('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [setf("layout.zero_or_fsdp", 'FSDP with reshard_after_forward disabled')]),
        ('narayanan21_t1_145B', [setf("layout.zero_or_fsdp", 'none (predates the distributed optimizer)')]),
    ],
    # a denied FSDP is not torch's data-parallel runtime
    "R10": [
        ('deepseek_v3_pretraining_2048xH800', [setf("layout.zero_or_fsdp", 'ZeRO-1 (optimizer states only; no FSDP)')]),
    ],
    # recomputation field words ("activation_checkpointing_reentrant: false", "not enabled", "full (not selective)")
    "R11": [
        ('mpt_h100big_70b_s2048_g512_mb8', [setf("layout.recompute", 'activation_checkpointing: true; activation_checkpointing_reentrant: false')]),
        ('mpt_h100fp8_3b_s8192_g8_mb3', [setf("layout.recompute", 'activation checkpointing not enabled')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.recompute", 'full (not selective)')]),
        ('korthikanti22_22B_full_recompute', [setf("layout.recompute", 'full; selective would not fit')]),
    ],
    # a placeholder in the recompute field leaves the recipe's recomputation
    "R12": [
        ('bridge2602_gb300_qwen3_235b_a22b_fp8mx', [setf("layout.recompute", 'not stated')]),
        ('bridge2602_gb300_qwen3_235b_a22b_fp8mx', [setf("layout.recompute", 'n/a')]),
        ('bridge2509_gb200_deepseek_v3_fp8cs', [setf("layout.recompute", 'not stated')]),
        ('bridge2509_gb200_deepseek_v3_fp8cs', [setf("layout.recompute", 'n/a')]),
        ('bridge2509_gb200_deepseek_v3_fp8cs', [setf("layout.recompute", 'unknown')]),
        ('bridge2509_gb200_deepseek_v3_fp8cs', [setf("layout.recompute", '-')]),
        ('bridge2509_gb200_deepseek_v3_fp8cs', [setf("layout.recompute", 'unstated (see recipe)')]),
        ('bridge2602_gb300_qwen3_235b_a22b_fp8mx', [setf("layout.recompute", 'unknown')]),
        ('bridge2602_gb300_qwen3_235b_a22b_fp8mx', [setf("layout.recompute", '-')]),
    ],
    # FP8 denied or named aside in a BF16 or FP16 precision field
    "R13": [
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (FP8 unused)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16; FP8 not enabled')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (FP8: off)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (fp8=False)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16, FP8 = none')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (the FP8 variant is a separate row)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (FP8 recipe not applied)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (not the FP8 config)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'bf16 (fp8: false)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (vs FP8 in the companion row)')]),
        ('dgxc2507_gb200_llama31_405b_bf16_128gpu', [setf("layout.precision", 'BF16 (Transformer Engine, no FP8 autocast)')]),
        ('narayanan21_t1_145B', [setf("layout.precision", 'FP16 (A100 supports BF16 too)')]),
    ],
    # the fp8 recipe in the precision field: denials, "dynamic", 1x32 blocks and E8M0 scales, NVFP4's 16-element blocks
    "R14": [
        ('nemo2502_b200_mixtral_8x22b_256gpu', [setf("layout.precision", 'FP8 (DelayedScaling recipe, not current scaling)')]),
        ('bridge2602_gb300_llama3_70b_nvfp4', [setf("layout.precision", "FP4 (NVIDIA's 16-element block format)")]),
        ('nemo2504_gb200_llama3_70b_64gpu', [setf("layout.precision", 'FP8 per-tensor dynamic scaling')]),
        ('nemo2504_gb200_llama3_70b_64gpu', [setf("layout.precision", 'FP8 (dynamic per-tensor scaling)')]),
        ('nemo2504_gb200_llama3_70b_64gpu', [setf("layout.precision", 'FP8 (current scaling; not MXFP8)')]),
        ('bridge2511_gb200_qwen3_30b_a3b', [setf("layout.precision", 'FP8 (1x32 block scaling)')]),
        ('bridge2511_gb200_qwen3_30b_a3b', [setf("layout.precision", 'E4M3 with per-32-element E8M0 scales')]),
    ],
    # recomputation stated in a note without the word "layers"
    "R15": [
        ('mtnlg_530b_2240gpu', [setf("layout.recompute", None), note("recomputed all activations in the backward pass")]),
    ],
}

SAME = [(cause, rid, ops) for cause, cases in CASES.items() for rid, ops in cases]


def test_every_cause_has_cases():
    assert SAME and all(CASES.values())


@pytest.mark.parametrize("cause,rid,ops", SAME, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(SAME)])
def test_a_layout_fact_written_another_way_reads_as_the_row_as_published(cause, rid, ops):
    row, others = ROWS[rid]
    assert diff(reading(apply(row, ops), others), reading(row, others)) == []
