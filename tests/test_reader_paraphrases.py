"""Paraphrases of the facts the published-row reader takes from a row's words read as the
canonical statement does, and denials read as the statement's absence.

The held-out runs are transcribed by other people in the shared schema, so a fact the reader takes
from free text (the source's evidence, notes, `layout.extra`, `hardware.note`, the layout's
recomputation, precision and sharding) arrives in their words. Each case below takes a real row of
benchmarks/data/ whose reading of one fact is known (its canonical statement, or one added), its
neutral form (the statement removed: the control, which must read differently wherever the case
has one), paraphrases that must read as the canonical row and denials ("no DeepEP", "FP8 dispatch
was not used", "figures compiled from ...") that must read as the neutral one. Compared: the spec
(but its source comment), every `Software` field, whether recomputation was stated, and the
assumptions' markers for the facts that only add a note. The cases came from a paraphrase-fuzzing
pass of stop 59; with the reader of e90b6d2, 198 of these 344 checks fail (an NVIDIA mention
turned an llm-foundry row into Megatron's, "without torch.compile" read as compiled, "no DeepEP" as
DeepEP, node-limited routing was read from one exact sentence only, and so on).
"""

from __future__ import annotations

import copy

import pytest

from .reader_paraphrase import DROP, ROWS, apply, diff, note, reading, rep, setf

# ------------------------------------------------------------------ cases
# (fact, row id, where, ops giving the canonical row, ops giving the neutral row,
#  [(kind, paraphrase-label, ops)])  kind: "para" expects the canonical reading, "neg" the neutral one
CASES = []


def case(fact, rid, where, canon, neutral, variants):
    CASES.append((fact, rid, where, canon, neutral, variants))


# 1. node-limited routing ------------------------------------------------------------------------
NL = r"node-limited routing \(at most 4 nodes per token\)"
case("node limit", "deepseek_v3_pretraining_2048xH800", "software_of: limited = re.search(...) ~l.1214",
     [], [rep(NL, "")],
     [("para", p, [rep(NL, p)]) for p in [
         "node-limited routing (each token sent to at most 4 nodes)",
         "each token is routed to at most 4 nodes",
         "node-limited routing, M = 4",
         "node limited routing (at most 4 nodes per token)",
         "node-limited routing (at most four nodes per token)",
         "node-limited routing (max 4 nodes/token)",
         "node-limited routing (<= 4 nodes per token)",
         "topk_group 4 of n_group 8 (node-limited routing)",
         "--moe-router-num-groups 8 --moe-router-group-topk 4",
     ]] + [("neg", p, [rep(NL, ""), note(p)]) for p in [
         "node-limited routing (at most 4 nodes per token) was not used",
         "no node-limited routing (at most 4 nodes per token in the paper's setup; not here)",
     ]])

# 2. FP8 dispatch ---------------------------------------------------------------------------------
case("fp8 dispatch", "deepseek_v3_pretraining_2048xH800", "software_of: dispatch_fp8 = 'fp8 dispatch' in text ~l.1219",
     [], [rep(r"fp8 dispatch", "")],
     [("para", p, [rep(r"fp8 dispatch", p)]) for p in [
         "FP8 dispatch", "dispatch in FP8", "FP8 all-to-all dispatch", "dispatched in FP8", "fp8_dispatch",
         "fp8-dispatch", "FP8 token dispatch", "low-precision (FP8) dispatch", "FP8 communication for the dispatch",
     ]] + [("neg", p, [rep(r"fp8 dispatch", ""), note(p)]) for p in [
         "no FP8 dispatch (BF16 all-to-all)", "FP8 dispatch was not used", "without fp8 dispatch",
         "fp8 dispatch: off",
     ]])

# 3. EP overlap under 1F1B ------------------------------------------------------------------------
OV = r"\+1f1b overlap \(.*?Software\.ep_overlap\)"
case("ep 1F1B overlap", "modelzoo_qwen3_235b_crossnode_ep32_deepep_1f1b_overlap",
     "software_of: ep_overlap ~l.1224; stated_options", [], [rep(OV, "")],
     [("para", p, [rep(OV, p)]) for p in [
         "1F1B overlap of the EP all-to-all",
         "1F1B-overlap (EP A2A hidden behind the other micro-batch)",
         "EP all-to-all overlapped with another micro-batch's compute (1F1B A2A overlap)",
         "EP communication overlap (DualPipe-style, within 1F1B)",
         "overlap_moe_expert_parallel_comm: true",
         "--overlap-moe-expert-parallel-comm",
         "moe_a2a_overlap=True",
         "A2A overlap: on",
         "EP A2A overlap",
     ]] + [("neg", p, [rep(OV, ""), note(p)]) for p in [
         "no 1F1B overlap", "1f1b overlap: off", "without 1F1B overlap",
         "--overlap-moe-expert-parallel-comm false", "moe_a2a_overlap: \"false\"", "moe_a2a_overlap (False)",
         "overlap_moe_expert_parallel_comm was disabled",
     ]])

# 4. DeepEP ---------------------------------------------------------------------------------------
case("DeepEP dispatcher", "modelzoo_qwen3_235b_crossnode_ep32_deepep", "software_of: deepep ~l.1203",
     [], [rep(r"deepep", "XX")],
     [("para", p, [rep(r"deepep", p)]) for p in [
         "Deep-EP", "deep_ep", "DeepEP", "DeepSeek's DeepEP library", "flex dispatcher (DeepEP backend)",
     ]] + [("para", "--moe-token-dispatcher-type flex --moe-enable-deepep (sole statement)",
            [rep(r"deepep", "XX"), note("--moe-token-dispatcher-type flex --moe-enable-deepep")]),
           ("para", "moe_token_dispatcher_type: flex (sole statement; Megatron-Core's flex = DeepEP before HybridEP)",
            [rep(r"deepep", "XX"), note("moe_token_dispatcher_type: flex")])]
     + [("neg", p, [rep(r"deepep", "XX"), note(p)]) for p in [
         "no DeepEP (alltoall dispatcher)", "DeepEP not used", "moe_enable_deepep: false",
         "--moe-token-dispatcher-type alltoall (not DeepEP)", "--moe-enable-deepep false",
     ]])

# 5. HybridEP -------------------------------------------------------------------------------------
case("HybridEP dispatcher", "mcore_deepseek_v3_gb200_mxfp8_256gpu", "software_of: hybridep ~l.1202",
     [], [rep(r"hybrid-?ep", "XX")],
     [("para", p, [rep(r"hybrid-?ep", p)]) for p in [
         "Hybrid-EP", "Hybrid EP", "hybrid_ep", "HybridEP",
     ]] + [("para", "DeepEP's hybrid kernels (sole statement)",
            [rep(r"hybrid-?ep", "XX"), note("DeepEP's hybrid kernels")])])
case("HybridEP negation on a DeepEP row", "modelzoo_qwen3_235b_crossnode_ep32_deepep", "software_of: hybridep ~l.1202",
     [], [],
     [("neg", p, [note(p)]) for p in [
         "DeepEP's normal kernels (not Hybrid-EP)", "HybridEP not used", "moe_flex_dispatcher_backend: deepep (no hybridep)",
     ]])

# 6. TP communication overlap ---------------------------------------------------------------------
TPO = r"tensor-parallel communication overlapped with the GEMMs, tp-comm-overlap \(.*?performance script\)"
case("tp comm overlap", "dgxc2507_gb200_llama31_405b_bf16_128gpu", "software_of: affirms(compact,'tp[- ]comm[- ]overlap') ~l.1117",
     [], [rep(TPO, "")],
     [("para", p, [rep(TPO, p)]) for p in [
         "TP comm overlap enabled", "tp_comm_overlap: True", "--tp-comm-overlap",
         "TP communication overlap (userbuffers)", "tensor-parallel communication overlapped with the GEMMs",
         "userbuffers TP overlap", "TP overlap: on", "comm-GEMM overlap for TP (Transformer Engine userbuffers)",
         "tp_comm_overlap: 'true'", "MegatronCommOverlapCallback(tp_comm_overlap=True)", "Async TP", "AsyncTP",
         "asynchronous tensor parallelism", "enable_async_tensor_parallel = true",
     ]] + [("neg", p, [rep(TPO, ""), note(p)]) for p in [
         "tp_comm_overlap: False", "tp_comm_overlap: \"false\"", "tp_comm_overlap: 'False'", "tp_comm_overlap (False)",
         "no tp-comm-overlap", "TP comm overlap was disabled", "tp comm overlap not used",
         "without async TP", "async TP: off",
     ]])

# 7. async TP (torchtitan) ------------------------------------------------------------------------
case("async TP (torchtitan)", "torchtitan_405b_512gpu_3d_1f1b", "software_of: 'async tp' in compact ~l.1118",
     [], [rep(r"async tp", "")],
     [("para", p, [rep(r"async tp", p)]) for p in [
         "Async-TP", "AsyncTP", "asynchronous TP", "async tensor parallelism", "async tensor parallel",
         "enable_async_tensor_parallel", "micro-pipelined TP",
     ]])

# 8. torch.compile (torchtitan) -------------------------------------------------------------------
case("torch.compile (torchtitan)", "torchtitan_405b_512gpu_3d_1f1b", "software_of: compiled ~l.1136",
     [], [rep(r"torch\.compile", "")],
     [("para", p, [rep(r"torch\.compile", p)]) for p in [
         "compiled with torch.compile", "torch compile", "compilation", "Inductor", "TorchInductor compilation",
         "torch._dynamo/inductor", "compile.enable=true",
     ]] + [("neg", p, [rep(r"torch\.compile", ""), note(p)]) for p in [
         "without torch.compile", "eager (no torch.compile)", "compile: false", "not compiled",
         "torch.compile disabled",
     ]])

# 9. Transformer Engine with flash-attn (NVTE_FUSED_ATTN=0 / attention-backend flash) ------------
NV = [rep(r"NVTE_FUSED_ATTN=0", ""), rep(r"`attention-backend flash`", "")]
case("TE attention = flash-attn", "dgxc2411_h100_nemotron4_340b_bf16_128gpu", "software_of: flash_attn_te ~l.1111",
     [], NV,
     [("para", p, NV + [note(p)]) for p in [
         "NVTE_FUSED_ATTN=0", "NVTE_FUSED_ATTN: 0", "NVTE_FUSED_ATTN='0'", "NVTE_FUSED_ATTN=\"0\"",
         "--attention-backend=flash", "attention_backend: AttnBackend.flash", "attention backend: FlashAttention-2",
         "attention backend: flash-attn", "cuDNN fused attention disabled; TE runs flash-attn's FlashAttention-2",
         "NVTE_FLASH_ATTN=1 NVTE_FUSED_ATTN=0",
     ]] + [("neg", p, NV + [note(p)]) for p in [
         "NVTE_FUSED_ATTN=0 not set (cuDNN fused attention)",
         "attention-backend flash was not used (cuDNN fused attention)",
         "NVTE_FUSED_ATTN=1 (cuDNN), not --attention-backend flash",
     ]])

# 10. flash negations / statements on a pre-2023 row ----------------------------------------------
case("flash statement (<=2022 row; unfused by year)", "korthikanti22_22B_selective_sp",
     "software_of: flash_stated ~l.1104", [note("trained with FlashAttention")], [],
     [("para", p, [note(p)]) for p in [
         "trained with FA2", "Dao et al.'s IO-aware fused attention kernel", "trained with flash-attn",
     ]])
case("flash negation (<=2022 row)", "korthikanti22_22B_selective_sp", "software_of: flash_stated ~l.1104",
     [], [],
     [("neg", p, [note(p)]) for p in [
         "FlashAttention not used", "predates FlashAttention", "pre-FlashAttention", "did not use FlashAttention",
         "FlashAttention: off", "unfused attention (FlashAttention was published later)",
         "no FlashAttention", "without FlashAttention",
     ]])
case("flash negation does not cancel a flash statement", "korthikanti22_22B_selective_sp",
     "software_of: flash_stated ~l.1104", [note("FlashAttention-2")], [],
     [("para", p, [note(p)]) for p in [
         "FlashAttention-2 (not FlashAttention-1)",
         "FlashAttention-2; before FlashAttention-2 it ran FlashAttention-1",
     ]])
case("year of publication (unfused by year)", "narayanan21_t1_1.7B", "source_year ~l.110",
     [], [],
     [("para", "title year as SC'21 + group without year",
       [rep(r"Narayanan et al\. 2021, ", "Narayanan et al., "), rep(r"\(SC21\)", "(SC '21)"),
        setf("group", "narayanan_sc21_table1")])])

# 11. bf16 gradient reduction ---------------------------------------------------------------------
BF = r"bf16 gradient reduction \(mixed_precision pure\)"
# the precision field states it too (FSDP's PURE mixed precision), which stop 60's reader reads: taken out
PURE = rep(r" \(FSDP mixed_precision PURE: parameters, gradient reduction and buffers in bf16\)", "")
case("bf16 grad reduction (torch FSDP)", "mpt_a100_70b_s2048_g64_mb8", "software_of: grad_bytes ~l.1131",
     [], [PURE, rep(BF, "")],
     [("para", p, [PURE, rep(BF, p)]) for p in [
         "BF16 gradient reduction", "gradients reduced in bf16 (mixed_precision PURE)", "bf16 gradient all-reduce",
         "gradient reduction in bf16", "reduce_dtype bf16", "mixed_precision: PURE (bf16 params, bf16 reduce)",
         "bf16 grad reduction", "BF16 gradient reduce-scatter",
     ]])
GR = r"gradients reduced in bf16, grad-reduce-in-bf16 \(.*?= False`\);"
# the row's 25.04 container reduces in bf16 unstated (`NEMO_BF16_REDUCTION`): read as a 24.12 one,
# whose recipes reduce in fp32, so that the statement alone decides
OLDER = rep(r"nemo:25\.04\.01", "nemo:24.12.01")
case("bf16 grad reduction (Megatron)", "dgxc2507_gb200_llama31_405b_bf16_128gpu", "software_of ~l.1131; stated_options",
     [OLDER], [OLDER, rep(GR, "")],
     [("para", p, [OLDER, rep(GR, p)]) for p in [
         "--grad-reduce-in-bf16;", "grad_reduce_in_fp32: False;", "grad_reduce_in_fp32 = False;",
         "gradients reduced in bf16;", "bf16 gradient all-reduce;", "grad_sync_dtype: bf16;",
         "grad_reduce_in_fp32: 'False';", "grad_reduce_in_fp32: \"false\";", "reduce gradients in BF16;",
     ]] + [("neg", p, [OLDER, rep(GR, ""), note(p)]) for p in [
         "no bf16 gradient reduction (fp32)", "grad-reduce-in-bf16 not set", "grad_reduce_in_bf16 was off",
     ]])

# 12. forced balance (notes only) -----------------------------------------------------------------
FB = r"forced balance: --moe-router-force-load-balancing"
case("forced balance (assumption only)", "modelzoo_qwen3_235b_longctx_16k_cp1_forced_balance",
     "software_of ~l.1141 (no Software field)", [], [rep(FB, ""), rep(r"forced balance", "")],
     [("para", p, [rep(FB, p), rep(r"\(forced balance\)", "")]) for p in [
         "forced load balancing", "force load balancing", "forced balancing", "router forced to balance",
         "moe_router_force_load_balancing: true",
     ]])

# 13. fused cross-entropy (torch) -----------------------------------------------------------------
case("fused cross-entropy (torch)", "mpt_h100big_70b_s2048_g512_mb8", "software_of: loss_kernel ~l.1290",
     [], [rep(r"fused_crossentropy|xentropy|fused softmax cross-entropy", "")],
     [("para", p, [rep(r"xentropy", "zz"), rep(r"fused_crossentropy", p)]) for p in [
         "fused cross-entropy", "fused_cross_entropy", "FusedCrossEntropy", "fused CE (xentropy)",
         "fused-crossentropy",
     ]] + [("neg", p, [rep(r"fused_crossentropy|xentropy|fused softmax cross-entropy", ""), note(p)]) for p in [
         "loss_fn: torch_crossentropy (not fused_crossentropy)", "fused_crossentropy unavailable; torch loss",
     ]])

# 14. FSDP version --------------------------------------------------------------------------------
case("FSDP2 statement (torch family)", "mpt_h100big_70b_s2048_g512_mb8", "fsdp_version ~l.1068",
     [rep(r"fsdp1", "FSDP2")], [rep(r"fsdp1", "FSDP")],
     [("para", p, [rep(r"fsdp1", p)]) for p in [
         "FSDP-2", "FSDPv2", "FSDP 2", "fully_shard", "fully-shard", "per-parameter-sharding FSDP (composable fully_shard API)",
     ]])
case("FSDP1 statement negations (torch family)", "mpt_h100big_70b_s2048_g512_mb8", "fsdp_version ~l.1068",
     [], [],
     [("neg", p, [note(p)]) for p in [
         "FSDP1 (not FSDP2)", "FSDP1; FSDP 2-way hybrid replication", "not fully_shard (FSDP1)",
     ]])

# 15. family words --------------------------------------------------------------------------------
case("family (torch: llm-foundry) vs stray words", "mpt_h100big_70b_s2048_g512_mb8", "software_of: family ~l.1101",
     [], [],
     [("neg", p, [note(p)]) for p in [
         "run on NVIDIA H100 80GB GPUs", "GPUs paired by an NVLink bridge", "compared with Megatron-LM in the README",
         "MPT is not Nemotron",
     ]])
case("family (megatron) vs a mention of torchtitan", "dgxc2507_gb200_llama31_405b_bf16_128gpu", "software_of: family ~l.1101",
     [], [], [("neg", "faster than torchtitan's published 405B figure", [note("faster than torchtitan's published 405B figure")])])
GROUP = setf("group", "mpt_training_benchmarks")  # the group's own name says llm_foundry
FAM = [GROUP, rep(r"llm-foundry", "LLM Foundry"), rep(r"composer", "the trainer"), rep(r"torch fsdp", "FSDP")]
case("family (torch) paraphrase", "mpt_h100big_70b_s2048_g512_mb8", "software_of: TORCH_FSDP_WORDS ~l.1050",
     [], [GROUP, rep(r"llm-?foundry", "X"), rep(r"composer", "X"), rep(r"torch fsdp", "X")],
     [("para", "LLM Foundry / MosaicML trainer / PyTorch FSDP",
       [GROUP, rep(r"llmfoundry", "X"), rep(r"llm-foundry", "LLM Foundry"), rep(r"composer", "the MosaicML trainer"),
        rep(r"torch fsdp", "PyTorch FSDP")]),
      ("para", "LLM Foundry / trainer / FSDP", [rep(r"llmfoundry", "X")] + FAM),
      ("para", "llm_foundry / trainer / PyTorch FullyShardedDataParallel",
       [GROUP, rep(r"llmfoundry", "X"), rep(r"llm-foundry", "llm_foundry"), rep(r"composer", "the trainer"),
        rep(r"torch fsdp", "PyTorch FullyShardedDataParallel")])])

# 16. overlap_p2p_comm ----------------------------------------------------------------------------
case("overlap_p2p_comm true (NeMo 24.07 row)", "nemo2407_h100_gpt3_175b_128gpu", "pp_overlap_of ~l.1405",
     [note("model.overlap_p2p_comm=True")], [],
     [("para", p, [note(p)]) for p in [
         "overlap_p2p_comm True", "--overlap-p2p-communication", "overlap-p2p-comm: enabled",
         "overlap P2P communication: on", "overlap_p2p_comm: 'true'",
     ]])
case("overlap_p2p_comm false (NeMo 2 row)", "dgxc2507_gb200_llama31_405b_bf16_128gpu", "pp_overlap_of ~l.1405",
     [note("overlap_p2p_comm: false")], [],
     [("para", p, [note(p)]) for p in [
         "overlap_p2p_comm False", "--no-overlap-p2p-communication", "overlap_p2p_comm: 'false'",
         "overlap_p2p_comm disabled",
     ]])

# 17. power cap / HBM bandwidth in hardware.note --------------------------------------------------
PW = [setf("hardware.power_limit_w", DROP), setf("hardware.hbm_bandwidth_tbps", DROP)]
case("power limit in hardware.note", "torchtitan_405b_512gpu_3d_1f1b", "power_and_memory ~l.356",
     PW + [setf("hardware.note", "400 Gb/s per GPU backend RDMA; 500W power limit")],
     PW + [setf("hardware.note", "400 Gb/s per GPU backend RDMA")],
     [("para", p, PW + [setf("hardware.note", "400 Gb/s per GPU backend RDMA; " + p)]) for p in [
         "GPUs power-capped to 500 W", "TDP limited to 500 W", "500-watt power cap", "power limited at 500W",
         "running at 500 W (power-capped)", "500 W cap", "power cap: 500W", "nvidia-smi -pl 500",
         "limited to 500 W", "0.5 kW power limit",
     ]])
# (the GPU named without its HBM2e, which alone gives the same 2.4 TB/s: `H100_HBM2E_TBPS_PER_GB`)
PWG = PW + [setf("hardware.gpu", "H100 SXM (Grand Teton)")]
case("HBM bandwidth in hardware.note", "torchtitan_405b_512gpu_3d_1f1b", "power_and_memory ~l.370",
     PWG + [setf("hardware.note", "400 Gb/s per GPU backend RDMA; 500W power limit; HBM2e 2.4 TB/s")],
     PWG + [setf("hardware.note", "400 Gb/s per GPU backend RDMA; 500W power limit")],
     [("para", p, PWG + [setf("hardware.note", "400 Gb/s per GPU backend RDMA; 500W power limit; " + p)]) for p in [
         "2.4 TB/s HBM2e", "memory bandwidth 2.4 TB/s", "HBM bandwidth: 2.4 TB/s", "2.4 TB/s memory bandwidth",
         "HBM2e at 2.4 TB/s", "HBM2e (2.4 TB/s)",
     ]])

# 18. network notes -------------------------------------------------------------------------------
case("network (8 x 400 Gb/s)", "deepseek_v3_pretraining_2048xH800", "network_of ~l.470", [], [],
     [("para", p, [setf("hardware.note", p)]) for p in [
         "eight 400 Gb/s InfiniBand NICs per node", "50 GB/s IB per GPU", "400 Gb/s InfiniBand per GPU",
         "InfiniBand: 8 x 400 Gbps", "8 × 400G IB", "3.2 Tbps IB per node", "one 400Gb/s IB HCA per GPU",
         "8 CX7 NICs, 400 Gb/s each", "IB NDR, one port per GPU", "NDR InfiniBand, 8 ports per node",
         "8x NDR400", "a 400 Gb/s InfiniBand NIC for each GPU", "InfiniBand (50 GB/s per NIC, 8 NICs per node)",
         "8 InfiniBand NICs of 50 GB/s", "IB: 8 NICs x 50 GB/s",
     ]])
case("network (8 x 200 Gb/s)", "narayanan21_t1_1.7B", "network_of ~l.470", [], [],
     [("para", p, [setf("hardware.note", p)]) for p in [
         "Selene DGX A100, eight HDR InfiniBand adapters (200 Gb/s each) per node",
         "Selene, 8 HDR InfiniBand links (200 Gb/s each) per node", "DGX A100: 1.6 Tb/s InfiniBand per node",
         "HDR 200 Gb/s InfiniBand, 8 per node", "8 x HDR", "Mellanox HDR (200G) x 8 per node",
         "25 GB/s InfiniBand per GPU", "DGX A100 (eight 200 Gb/s HDR HCAs)",
     ]])

# 19. recompute -----------------------------------------------------------------------------------
case("recompute full", "narayanan21_t1_1.7B", "recompute_of ~l.1559", [], [setf("layout.recompute", "none")],
     [("para", p, [setf("layout.recompute", p)]) for p in [
         "activation checkpointing of every layer", "full activation recomputation", "AC on every transformer layer",
         "activation recomputation for all transformer layers", "gradient checkpointing", "yes",
         "every transformer layer recomputed", "recompute_granularity=full, recompute_method=uniform, recompute_num_layers=1",
         "full recompute, 1 layer per checkpoint", "checkpoint-activations",
     ]] + [("neg", p, [setf("layout.recompute", p)]) for p in [
         "activation checkpointing was not used", "no activation recomputation", "recomputation not needed",
         "checkpointing: disabled", "activation checkpointing turned off",
     ]])
case("recompute selective (attention core)", "korthikanti22_22B_selective_sp", "recompute_of ~l.1559", [],
     [setf("layout.recompute", "none")],
     [("para", p, [setf("layout.recompute", p)]) for p in [
         "selective activation recomputation", "attention-only recomputation", "recompute attention only",
         "--recompute-activations", "recompute_granularity: selective",
         "recompute the softmax, dropout and attention-over-V only",
     ]])
case("recompute modules", "modelzoo_qwen3_235b_crossnode_ep32_deepep", "megatron_modules ~l.1541; recompute_of", [],
     [setf("layout.recompute", "none")],
     [("para", p, [setf("layout.recompute", p)]) for p in [
         "recompute_modules: [layernorm, moe_act]", "recomputed modules: layernorm, moe_act",
         "selective recompute of layernorm and moe_act", "layernorm + moe_act recomputed (selective)",
         "--recompute-granularity selective --recompute-modules layernorm moe_act",
         "Recompute: LayerNorm, MoE activation", "selective [layernorm, moe_act]",
         "selective: norms and the expert activation (layernorm, moe_act)",
         "partial: --recompute-modules=layernorm,moe_act",
     ]])

# 20. precision and fp8 recipe --------------------------------------------------------------------
case("precision negation (bf16 row)", "dgxc2507_gb200_llama31_405b_bf16_128gpu", "precision_of ~l.1503", [], [],
     [("neg", p, [setf("layout.precision", p)]) for p in [
         "BF16 (FP8 was not used)", "BF16 mixed precision, no FP8 training", "BF16; FP8 off", "BF16 (not FP8)",
         "BF16 (FP8 disabled)", "BF16 without FP8 GEMMs",
     ]])
case("fp8 recipe current scaling", "dgxc2510_gb200_llama31_405b_fp8cs_128gpu", "fp8_recipe_of ~l.1487", [], [],
     [("para", p, [setf("layout.precision", p)]) for p in [
         "FP8 (per-tensor current scaling)", "FP8 (Float8CurrentScaling)", "FP8, tensor-wise current scaling",
         "FP8 current-scaling recipe", "FP8 (CS)", "fp8 with current scaling",
     ]])
case("fp8 recipe blockwise", "deepseek_v3_pretraining_2048xH800", "fp8_recipe_of ~l.1487", [], [],
     [("para", p, [setf("layout.precision", p)]) for p in [
         "FP8 (Float8BlockScaling)", "FP8 (1x128 tiles for activations, 128x128 blocks for weights)",
         "FP8 block-scaled (DeepSeek-V3 recipe)", "FP8 with tile/block-wise quantization",
         "FP8 (block scaling)", "FP8, 128x128 block scaling",
     ]])
case("fp8 recipe mxfp8", "mcore_deepseek_v3_gb200_mxfp8_256gpu", "fp8_recipe_of ~l.1487", [], [],
     [("para", p, [setf("layout.precision", p)]) for p in [
         "MXFP8", "FP8 (MX format, 32-element blocks)", "FP8 (MXFP8BlockScaling)", "MX-FP8", "FP8 microscaling",
         "FP8 (E4M3, block-32 scales)",
     ]])

# 21. the recipe written as text (the shared schema has no `recipe` field) ------------------------
def recipe_as_text(style):
    def op(row):
        row = copy.deepcopy(row)
        rec = row.pop("recipe")
        items = [(k, v) for k, v in rec.items() if k != "source"]
        if style == "yaml":
            txt = "; ".join(f"{k}: {('[' + ', '.join(v) + ']') if isinstance(v, list) else v}" for k, v in items)
        elif style == "python":
            txt = ", ".join(f"{k}={v!r}" for k, v in items)
        elif style == "cli":
            parts = []
            for k, v in items:
                name = "--" + k.replace("_", "-")
                if k == "grad_reduce_in_fp32" and v is False:
                    parts.append("--grad-reduce-in-bf16")
                elif v is True:
                    parts.append(name)
                elif v is False:
                    continue
                elif isinstance(v, list):
                    if v:
                        parts.append(name + " " + " ".join(v))
                    elif k == "recompute_modules" and not (row.get("layout") or {}).get("recompute"):
                        # an empty list has no command-line form: the schema's field says it
                        row["layout"] = dict(row["layout"], recompute="none")
                else:
                    parts.append(f"{name} {v}")
            txt = " ".join(parts)
        elif style == "json":
            import json
            txt = json.dumps(dict(items))
        n = row.get("notes")
        row["notes"] = ([n] if isinstance(n, str) else list(n or [])) + ["recipe: " + txt]
        return row
    return op


for rid in ("bridge2509_gb200_deepseek_v3_fp8cs", "bridge2602_gb300_deepseek_v3_fp8mx", "bridge2606_gb300_deepseek_v3_fp8mx"):
    case("recipe written as text", rid, "stated_options ~l.1838 / read_recipe", [], [],
         [("para", f"recipe as {s} text", [recipe_as_text(s)]) for s in ("yaml", "python", "cli", "json")])

# 22. release field dropped, NeMo container stated in other words ---------------------------------
for rid in ("bridge2509_gb200_deepseek_v3_fp8cs",):
    case("NeMo container (no `release` field)", rid, "container_release ~l.1344", [], [],
         [("para", p, [setf("release", DROP), setf("published", DROP),
                       rep(r"at commit fa0315ae26 \(2025-10-10\), 25\.09 NeMo container", p)]) for p in [
             "at commit fa0315ae26 (2025-10-10), NeMo container 25.09",
             "at commit fa0315ae26 (2025-10-10), 25.09 release of the NeMo container",
             "at fa0315ae26 (2025-10-10), nvcr.io/nvidia/nemo:25.09",
             "(NeMo 25.09 container, 2025-10-10)",
         ]])



# 23. false positives: words that contain a fact's trigger --------------------------------------
case("false positives (MoE DeepEP row)", "modelzoo_qwen3_235b_crossnode_ep32_deepep", "software_of: substring tests", [], [],
     [("neg", p, [note(p)]) for p in [
         "pipeline sends overlapped with compute in the interleaved schedule (1F1B overlap of P2P communication)",
         "hybrid EP+DP layout (experts sharded over EP, the rest replicated over DP)",
     ]])
case("false positives (torchtitan row)", "torchtitan_405b_512gpu_3d_1f1b", "software_of: compiled regex", [rep(r"torch\.compile", "")], [rep(r"torch\.compile", "")],
     [("neg", p, [rep(r"torch\.compile", ""), note(p)]) for p in [
         "figures compiled from the torchtitan benchmark file",
     ]])
case("false positives (<=2022 row)", "korthikanti22_22B_selective_sp", "software_of: flash_stated", [], [],
     [("neg", p, [note(p)]) for p in ["checkpoints written to NVMe flash storage"]])
case("false positives (power in hardware.note)", "narayanan21_t1_1.7B", "power_and_memory", [], [],
     [("neg", p, [setf("hardware.note", "Selene DGX A100, 8x200Gb/s HDR IB per node; " + p)]) for p in [
         "six 3000 W power supplies per node", "400 W TDP per GPU, no power cap",
     ]])

# 24. sharding --------------------------------------------------------------------------------
case("sharding zero1", "deepseek_v3_pretraining_2048xH800", "sharding_of ~l.1608", [], [setf("layout.zero_or_fsdp", "none")],
     [("para", p, [setf("layout.zero_or_fsdp", p)]) for p in [
         "ZeRO stage 1", "optimizer-state sharding across DP ranks", "Megatron distributed optimizer",
         "ZeRO-1 data parallelism", "DP with sharded optimizer states",
     ]])
case("sharding zero2", "mpt_h100big_70b_s2048_g512_mb8", "sharding_of ~l.1608", [setf("layout.zero_or_fsdp", "SHARD_GRAD_OP")],
     [setf("layout.zero_or_fsdp", "FULL_SHARD")],
     [("para", p, [setf("layout.zero_or_fsdp", p)]) for p in [
         "FSDP with reshard_after_forward=False", "FSDP, no resharding after forward", "FSDP grad-op sharding",
         "FSDP (gradients and optimizer states sharded, parameters kept gathered after forward)",
     ]])

case("sharding zero3", "mpt_h100big_70b_s2048_g512_mb8", "sharding_of ~l.1608", [], [setf("layout.zero_or_fsdp", "none")],
     [("para", p, [setf("layout.zero_or_fsdp", p)]) for p in [
         "FSDP (parameters, gradients and optimizer states sharded)", "fully sharded data parallel", "ZeRO-3",
         "FSDP full sharding",
     ]])

# 25. MoE runtime facts written in prose (no `recipe`) ----------------------------------------
def drop_recipe_add(txt):
    def op(row):
        row = copy.deepcopy(row)
        row.pop("recipe", None)
        n = row.get("notes")
        row["notes"] = ([n] if isinstance(n, str) else list(n or [])) + [txt]
        return row
    return op


case("capacity padding / shared-expert overlap in prose", "bridge2509_gb200_deepseek_v3_fp8cs", "stated_options / software_of host_sync ~l.1240",
     [], [],
     [("para", p, [drop_recipe_add(p)]) for p in [
         "alltoall dispatcher; capacity factor 1.0 with the experts' inputs padded to capacity; shared-expert overlap on; "
         "recompute modules mla_up_proj, mlp, moe_act",
         "moe_token_dispatcher_type alltoall, moe_expert_capacity_factor 1.0, pad expert input to capacity: true, "
         "moe_shared_expert_overlap true, recompute_modules mla_up_proj mlp moe_act",
     ]])



VARIANTS = [(case, variant) for case in CASES for variant in case[5]]


def _reading_of(rid: str, ops: list) -> dict:
    base, others = ROWS[rid]
    return reading(apply(base, ops), others)


@pytest.mark.parametrize("case", [c for c in CASES if (c[3] or c[4]) and not c[0].startswith("false positives")],
                         ids=lambda c: f"{c[0]}-{c[1]}")
def test_each_case_s_statement_changes_the_reading(case):
    """The control: without its statement the row reads differently, so a paraphrase that read as
    the canonical row was read, not ignored."""
    fact, rid, _, canon, neutral, _ = case
    assert diff(_reading_of(rid, neutral), _reading_of(rid, canon)), fact


@pytest.mark.parametrize(("case", "variant"), VARIANTS, ids=[f"{c[0]}-{v[0]}-{v[1][:40]}" for c, v in VARIANTS])
def test_a_paraphrase_reads_as_its_statement_and_a_denial_as_its_absence(case, variant):
    assert len(CASES) >= 45 and len(VARIANTS) >= 300
    fact, rid, _, canon, neutral, _ = case
    kind, label, ops = variant
    expected = _reading_of(rid, canon if kind == "para" else neutral)
    assert diff(_reading_of(rid, ops), expected) == [], (fact, label)
