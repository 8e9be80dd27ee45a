"""Model, hardware and outcome fields written as other transcribers write them read as the row as
published: a probe rewrote 38 rows' fields 5,230 ways (stop 61); 267 rewrites that mean the same read
differently, each cause a case or more here:

- A1: a node count first and the GPU total after it ("192 nodes, 1536 GPUs", "256 nodes (2048 H800s)", "16 trays, 64 GPUs").
- A2: a GPU model beginning with B after the count is no multiplier ("128 B200 GPUs" is 128, not 128 x 2^30).
- A3: MHA or MLA beside a denied GQA ("MHA (no GQA)").
- A4: an approximation with the exact count beside it ("~51K (51,200)").
- A5: a time per N steps is N steps' time ("time_per_100_steps_s"), and never outranks a listed TFLOP/s.
- A6: a key that says "node throughput" is per node.
- A7: a job total with the per-GPU figure in an aside ("26,240 tokens/s total (410 per GPU)").
- A8: a NIC count before product words, "per node" after the rate ("8x CX7 400G IB per node").
- A9: a count before a fabric name with no NIC noun, or "(x4)" after the rate ("4x OPA 100G per node").
- A10: a node's total rate with its link count in parentheses ("400 Gb/s Omni-Path per node (4 links)").
- A11: storage ports beside the compute ports ("8x HDR 200Gb/s (compute) + 2x HDR storage").
- A12: a memory figure with a word in parentheses or "per GPU" ("96 (HBM2e)", "96 per GPU").
- A13: power caps in more words ("GPUs run at 500W (power-capped)", "500-W power cap").
- A14: days per trillion tokens and tokens per GPU-hour are throughputs.
- A15: PCIe named as the host link is no PCIe card ("H100 80GB SXM5 (PCIe Gen5 host link)").

The reported figure is compared to 0.5 % (a rewrite may round it); everything else exactly.
"""

from __future__ import annotations

import re

import pytest

from .reader_paraphrase import DROP, ROWS, apply, diff, reading, setf

CASES = {
    # a node count first and the GPU total after it ("192 nodes, 1536 GPUs", "256 nodes (2048 H800s)", "16 trays, 64 GPUs")
    "A1": [
        ("narayanan21_t1_145B", [setf('hardware.num_gpus', '192 nodes, 1536 GPUs')]),
        ("narayanan21_t1_145B", [setf('hardware.num_gpus', '192 nodes / 1536 GPUs')]),
        ("narayanan21_t1_145B", [setf('hardware.num_gpus', '192 nodes (1536 A100s)')]),
        ("deepseek_v3_pretraining_2048xH800", [setf('hardware.num_gpus', '256 nodes (2048 H800s)')]),
        ("bridge2511_gb200_llama3_70b", [setf('hardware.num_gpus', '16 trays, 64 GPUs')]),
    ],
    # a GPU model beginning with B after the count is no multiplier ("128 B200 GPUs" is 128, not 128 x 2^30)
    "A2": [
        ("nemo2502_b200_llama31_405b_128gpu", [setf('hardware.num_gpus', '128 B200 GPUs')]),
        ("bridge2509_b200_llama3_8b_fp8cs", [setf('hardware.num_gpus', '8 B200 GPUs')]),
        ("nemo2504_gb200_mixtral_8x7b_64gpu", [setf('hardware.num_gpus', '64 B200s')]),
        ("bridge2602_b300_deepseek_v3_fp8mx", [setf('hardware.num_gpus', '256 B300 GPUs')]),
    ],
    # MHA or MLA beside a denied GQA ("MHA (no GQA)")
    "A3": [
        ("narayanan21_t1_145B", [setf('model.kv_heads', 'MHA (no GQA)')]),
        ("narayanan21_t1_145B", [setf('model.kv_heads', 'MHA, not GQA')]),
        ("deepseek_v3_pretraining_2048xH800", [setf('model.kv_heads', 'MLA (no GQA)')]),
    ],
    # an approximation with the exact count beside it ("~51K (51,200)")
    "A4": [
        ("narayanan21_t1_145B", [setf('model.vocab', '~51K (51,200)')]),
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('model.vocab', '~128K (128,256)')]),
        ("megatron_readme2024_70B", [setf('model.vocab', '~131K (131,072)')]),
    ],
    # a time per N steps is N steps' time ("time_per_100_steps_s"), and never outranks a listed TFLOP/s
    "A5": [
        ("korthikanti22_530B_selective_sp", [setf('outcomes.reported', {'mfu_pct': 56.0, 'hfu_pct': 57.0, 'time_per_100_steps_s': 3783.0})]),
        ("dgxc2411_h100_llama31_70b_fp8_512gpu", [setf('outcomes.reported', {'time per 10 iterations': '111.8 s'})]),
        ("mtnlg_530b_2240gpu", [setf('outcomes.reported', {'tflops_per_gpu': 126, 'time_per_100_steps_s': 6010.0})]),
    ],
    # a key that says "node throughput" is per node
    "A6": [
        ("mpt_a100_70b_s2048_g64_mb8", [setf('outcomes.reported', {'node throughput (tokens/s)': 3280, 'mfu_pct': 53.33, 'hfu_pct': 71.1})]),
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('outcomes.reported', {'node throughput (tokens/s)': 800})]),
        ("bridge2511_gb200_llama3_70b", [setf('outcomes.reported', {'node throughput (tokens/s)': 17248})]),
    ],
    # a job total with the per-GPU figure in an aside ("26,240 tokens/s total (410 per GPU)")
    "A7": [
        ("mpt_a100_70b_s2048_g64_mb8", [setf('outcomes.reported', {'throughput': '26,240 tokens/s total (410 per GPU)', 'mfu_pct': 53.33, 'hfu_pct': 71.1})]),
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('outcomes.reported', {'throughput': '51,200 tokens/s total (100 per GPU)'})]),
    ],
    # a NIC count before product words, "per node" after the rate ("8x CX7 400G IB per node")
    "A8": [
        ("deepseek_v3_pretraining_2048xH800", [setf('hardware.note', '8x CX7 400G IB per node')]),
        ("deepseek_v3_pretraining_2048xH800", [setf('hardware.note', '8 x ConnectX-7 400G IB per node')]),
        ("narayanan21_t1_145B", [setf('hardware.note', '8x ConnectX-6 HDR 200Gb/s per node')]),
    ],
    # a count before a fabric name with no NIC noun, or "(x4)" after the rate ("4x OPA 100G per node")
    "A9": [
        ("bloom_176b_384gpu_tp4_pp12_dp8", [setf('hardware.note', '4x OPA 100G per node')]),
        ("bloom_176b_384gpu_tp4_pp12_dp8", [setf('hardware.note', '4x Intel Omni-Path 100 Gb/s')]),
        ("bloom_176b_384gpu_tp4_pp12_dp8", [setf('hardware.note', 'Omni-Path 100 Gb/s (x4)')]),
    ],
    # a node's total rate with its link count in parentheses ("400 Gb/s Omni-Path per node (4 links)")
    "A10": [
        ("bloom_176b_384gpu_tp4_pp12_dp8", [setf('hardware.note', '400 Gb/s Omni-Path per node (4 links)')]),
    ],
    # storage ports beside the compute ports ("8x HDR 200Gb/s (compute) + 2x HDR storage")
    "A11": [
        ("narayanan21_t1_145B", [setf('hardware.note', 'DGX A100 SuperPOD: 8x Mellanox HDR 200Gb/s (compute) + 2x HDR storage')]),
        ("narayanan21_t1_145B", [setf('hardware.note', '8x Mellanox HDR 200Gb/s + 2x HDR storage')]),
    ],
    # a memory figure with a word in parentheses or "per GPU" ("96 (HBM2e)", "96 per GPU")
    "A12": [
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('hardware.gpu_memory_gb', '96 (HBM2e)')]),
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('hardware.gpu_memory_gb', '768 GB per node (96 per GPU)')]),
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('hardware.gpu_memory_gb', '96 per GPU')]),
    ],
    # power caps in more words ("GPUs run at 500W (power-capped)", "500-W power cap")
    "A13": [
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('hardware.power_limit_w', DROP), setf('hardware.hbm_bandwidth_tbps', DROP), setf('hardware.note', '400 Gb/s per GPU backend RDMA; GPUs run at 500W (power-capped); HBM 2.4 TB/s')]),
        ("torchtitan_405b_512gpu_3d_1f1b", [setf('hardware.power_limit_w', DROP), setf('hardware.hbm_bandwidth_tbps', DROP), setf('hardware.note', '8 x 400 Gb/s backend RDMA per node; 500-W power cap; HBM2e 2.4 TB/s')]),
    ],
    # days per trillion tokens and tokens per GPU-hour are throughputs
    "A14": [
        ("deepseek_v3_pretraining_2048xH800", [setf('outcomes.reported', {'days_per_trillion_tokens': '3.66 (on 2048 H800s)'})]),
        ("deepseek_v3_pretraining_2048xH800", [setf('outcomes.reported', {'wall-clock days per 1T tokens (2048 GPUs)': 3.6621})]),
        ("deepseek_v3_pretraining_2048xH800", [setf('outcomes.reported', {'tokens per GPU-hour': 5555555.6})]),
    ],
    # PCIe named as the host link is no PCIe card ("H100 80GB SXM5 (PCIe Gen5 host link)")
    "A15": [
        ("megatron_readme2024_70B", [setf('hardware.gpu', 'H100 80GB SXM5 (PCIe Gen5 host link)')]),
    ],
}

SAME = [(cause, rid, ops) for cause, cases in CASES.items() for rid, ops in cases]


def test_every_cause_has_cases():
    assert SAME and all(CASES.values())


def _close(a: dict, b: dict) -> list[str]:
    """`diff` of two readings, the reported figure compared to 0.5 %."""
    if "SKIPPED" in a or "SKIPPED" in b:
        return diff(a, b)
    fa, fb = a.pop("reported_tflops"), b.pop("reported_tflops")
    for r in (a, b):  # a throughput per node or for the job reads as the same figure per GPU
        r["reported_from"] = re.sub(r" (?:per (?:GPU|node)|total)$", "", r["reported_from"]).replace(
            "reported GPU hours per trillion tokens", "reported tokens/s")  # a rate of tokens either way
    out = diff(a, b)
    if abs(fa / fb - 1) > 0.005:
        out.append(f"reported_tflops: {fa} (expected {fb})")
    return out


@pytest.mark.parametrize("cause,rid,ops", SAME, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(SAME)])
def test_a_field_written_another_way_reads_as_the_row_as_published(cause, rid, ops):
    row, others = ROWS[rid]
    assert _close(reading(apply(row, ops), others, exact=True), reading(row, others, exact=True)) == []
