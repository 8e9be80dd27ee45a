"""More paraphrases of what the published-row reader takes from a row's words, and denials of them:
the facts the first set (tests/test_reader_paraphrases.py) does not cover.

Covered here: a full-iteration CUDA graph, Transformer Engine's FP8 attention and fused grouped
MLP, parameters gathered in bf16 beside fp8 or NVFP4 casts, the distributed optimizer in a
Megatron row's notes, activation offloading, Triton's FlashAttention, an unfused attention
backend, context parallelism's exchange (`cp_comm_type`, and never another axis's collective),
expert tensor parallelism, the pipeline schedule and its virtual stages in words and denied, a
pipeline layout written with spaces, the model's facts in its architecture's words or `extra`
(shared experts, dense layers, top-k, MTP, capacity factor, GQA, sliding window, YaRN, tied
embeddings, the activation, norm and position words and their denials), the reported figure under
other keys and units, and the FLOP convention under other names. A "want" variant has no canonical
row to compare with and states the fields it must read. The cases came from the second
paraphrase-fuzzing pass of stop 59; with the reader of e90b6d2, 188 of these 402 checks fail. A
parallel degree stated only in the words with its layout field empty ("CP=2" with `layout.cp`
null) has its own file, tests/test_stated_degrees.py.
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import (
    DROP,
    ROWS,
    apply,
    diff,
    extra,
    note,
    reading,
    recipe_text,
    rep,
    setf,
    want_diff,
)

# ------------------------------------------------------------------ cases
CASES = []


def case(fact, rid, where, canon, neutral, variants):
    CASES.append((fact, rid, where, canon, neutral, variants))


def paras(ops_of, texts):
    return [("para", p, ops_of(p)) for p in texts]


def negs(ops_of, texts):
    return [("neg", p, ops_of(p)) for p in texts]


# 1. full-iteration CUDA graph -----------------------------------------------------------------
R = "bridge2606_gb300_qwen3_30b_a3b_fp8mx"
N = [recipe_text("cuda_graph_impl")]
case("full-iteration CUDA graph", R, "software_of: host_sync affirms(compact,'full-iteration-cuda-graph'); stated_options cuda_graph_impl",
     [recipe_text()], N,
     paras(lambda p: N + [note(p)], [
         "cuda_graph_impl: full_iteration", "cuda_graph_impl=\"full_iteration\"", "--cuda-graph-impl full_iteration",
         "--cuda-graph-impl=full-iteration", "cuda_graph_impl (full_iteration)",
         "full-iteration CUDA graph", "full-iteration CUDA graphs", "full iteration CUDA graph",
         "CUDA graphs over the whole iteration", "the whole training iteration captured in one CUDA graph",
         "CUDA graph: full iteration", "full_iteration CUDA graph",
     ])
     + negs(lambda p: N + [note(p)], [
         "no CUDA graphs", "cuda_graph_impl: none", "CUDA graphs disabled", "full-iteration CUDA graph not used",
         "without full-iteration CUDA graphs", "cuda_graph_impl: transformer_engine (per-layer, not full_iteration)",
         "cuda_graph_impl: local",
     ]))

# 2. Transformer Engine FP8 attention -------------------------------------------------------------
N = [recipe_text("fp8_dot_product_attention")]
case("FP8 dot-product attention", R, "software_of: attention_fp8 affirms(compact,'fp8-dot-product-attention'); stated_options",
     [recipe_text()], N,
     paras(lambda p: N + [note(p)], [
         "fp8_dot_product_attention: true", "--fp8-dot-product-attention", "fp8_dot_product_attention=True",
         "FP8 dot-product attention", "FP8 dot product attention", "FP8 attention", "FP8 DPA", "fp8_dpa: true",
         "attention in FP8 (Transformer Engine fused attention)", "FP8 fused attention (TE)",
     ])
     + negs(lambda p: N + [note(p)], [
         "fp8_dot_product_attention: false", "no FP8 attention (BF16 attention)", "FP8 DPA off",
         "--fp8-dot-product-attention not set", "attention in BF16 (not fp8_dot_product_attention)",
     ]))

# 3. TE fused grouped MLP (gpt-oss: also the experts' bias and clamp) ------------------------------
R3 = "bridge2606_gb300_gpt_oss_120b_fp8mx"
N = [recipe_text("cutedsl_fused_grouped_mlp")]
case("TE fused grouped MLP (gpt-oss)", R3, "software_of: fused_grouped_mlp affirms(compact,'fused-grouped-mlp'); read_recipe expert_bias/clamp via r['other'] only",
     [recipe_text()], N,
     paras(lambda p: N + [note(p)], [
         "cutedsl_fused_grouped_mlp: true", "--cutedsl-fused-grouped-mlp", "cutedsl_fused_grouped_mlp=True",
         "NVTE_CUTEDSL_FUSED_GROUPED_MLP=1", "Transformer Engine's fused grouped MLP (CuTe DSL)",
         "fused grouped MLP", "use_transformer_engine_op_fuser: true", "TE op fuser for the experts",
         "CuTe-DSL fused grouped MLP kernels",
     ])
     + negs(lambda p: N + [note(p)], [
         "cutedsl_fused_grouped_mlp: false", "no fused grouped MLP", "TE op fuser off",
         "NVTE_CUTEDSL_FUSED_GROUPED_MLP=0",
     ]))

# 4. NVFP4 parameters gathered in bf16 (fp4_param_gather False) -----------------------------------
R4 = "bridge2602_gb300_llama3_70b_nvfp4"
N = [recipe_text("fp4_param_gather")]
case("fp4_param_gather False (bf16 params)", R4, "software_of: gather_bytes fp8_params=not re.search('fp4-param-gather'+SET_OFF); stated_options",
     [recipe_text()], N,
     paras(lambda p: N + [note(p)], [
         "fp4_param_gather: false", "--no-fp4-param-gather", "fp4_param_gather=False", "fp4-param-gather disabled",
         "no fp4_param_gather", "fp4_param_gather was off",
         "NVFP4 parameters all-gathered in BF16", "parameters gathered in bf16 (no FP4 parameter gather)",
         "bf16 weights kept beside their NVFP4 casts",
     ])
     + negs(lambda p: N + [note(p)], [
         "fp4_param_gather: true", "--fp4-param-gather", "NVFP4 parameters all-gathered in FP4",
     ]))

# 5. fp8 params on an fp8 row: the reader always gathers fp8; a stated False has no reading -------
R5 = "bridge2602_h100_llama31_405b_fp8cs"
case("fp8_param_gather False on an FP8-CS row (no canonical: want)", R5, "software_of: gather_bytes (fp8_params only from fp4 text)",
     [], [],
     [("want", p, [note(p)], {"sw.gather_bytes": 2, "spec~": "fp8-params off"}) for p in [
         "fp8_param_gather: false", "--fp8-param-gather not set (bf16 parameter all-gather)",
     ]])

# 6. sharding read from the notes when zero_or_fsdp is unstated (Megatron row) ---------------------
R6 = "megascale_megatron_175b_256gpu"
case("distributed optimizer in notes (zero_or_fsdp null)", R6, "sharding_of: placeholder branch substring tests",
     [note("--use-distributed-optimizer")], [],
     paras(lambda p: [note(p)], [
         "Megatron's distributed optimizer", "use_distributed_optimizer: true", "distributed optimizer (ZeRO-1)",
         "ZeRO-1 (optimizer states sharded over the data-parallel ranks)", "optimizer-state sharding over DP",
         "--overlap-param-gather",
     ])
     + negs(lambda p: [note(p)], [
         "no distributed optimizer", "use_distributed_optimizer: false", "without the distributed optimizer",
         "distributed optimizer not used", "--overlap-param-gather not used",
     ]))

# 7. activation offloading ---------------------------------------------------------------------
R7 = "bridge2511_gb200_llama3_70b"
N = [recipe_text("cpu_offloading_num_layers")]
case("activation offloading (40 layers)", R7, "stated_options cpu_offloading_num_layers -> read_recipe -> lay.offload_activations",
     [recipe_text()], N,
     paras(lambda p: N + [note(p)], [
         "cpu_offloading_num_layers: 40", "--cpu-offloading-num-layers 40", "cpu_offloading_num_layers=40",
         "cpu_offloading: true, cpu_offloading_num_layers: 40", "cpu offloading num layers 40",
         "activations of 40 layers offloaded to CPU", "offload activations of 40 layers to CPU",
         "CPU activation offloading (40 layers)", "40 layers' activations offloaded to host memory",
         "activation offloading to the Grace CPU for 40 of 80 layers",
     ])
     + negs(lambda p: N + [note(p)], [
         "no activation offloading", "cpu_offloading_num_layers: 0", "cpu_offloading: false",
         "no cpu_offloading_num_layers",
     ]))
case("activation offloading in layout.extra", R7, "source_text includes layout.extra; stated_options walks lay.extra",
     [recipe_text()], N,
     paras(lambda p: N + [setf("layout.extra", p)], [
         "cpu_offloading_num_layers: 40", "activation offloading: 40 layers",
     ]))

# 8. Triton FlashAttention note (llm-foundry) ------------------------------------------------------
R8 = "mpt_h100big_70b_s2048_g512_mb8"
TRI = r"`--attn_impl` default triton|attn_impl: triton|flashattention in triton"
N = [rep(TRI, "X")]
case("Triton FlashAttention (attn_impl: triton)", R8, "TRITON_ATTENTION (note_stated_attention_kernel, in `compiled`)",
     [], N,
     paras(lambda p: N + [note(p)], [
         "attn_impl: triton", "attn_impl=triton", "--attn_impl triton", "attn_impl: 'triton'", "attn_impl = \"triton\"",
         "Triton FlashAttention", "FlashAttention in Triton", "Triton implementation of FlashAttention",
         "flash attention (Triton kernel)", "attention: triton",
     ])
     + negs(lambda p: N + [note(p)], [
         "no Triton flash attention (attn_impl: flash)", "attn_impl: flash (not triton)",
     ]))

# 9. unfused / cuDNN / SDPA attention stated on a 2023+ Megatron row (want) ------------------------
R9 = "dgxc2507_gb200_llama31_405b_bf16_128gpu"
case("attention backend words (2025 Megatron row)", R9, "software_of: attention from year/TE_FLASH_ATTN only",
     [], [],
     [("want", p, [note(p)], {"sw.attention": "unfused", "spec~": "flash-attention off"}) for p in [
         "--attention-backend unfused", "attention_backend: AttnBackend.unfused", "no FlashAttention (unfused attention)",
     ]]
     + negs(lambda p: [note(p)], [
         "attention_backend: cudnn", "cuDNN fused attention (NVTE_FUSED_ATTN=1)", "attention backend: fused (cuDNN)",
         "attention-backend auto",
     ]))
case("attention words (torchtitan row)", "torchtitan_405b_512gpu_3d_1f1b", "software_of (torch families: flash)", [], [],
     negs(lambda p: [note(p)], ["SDPA (cuDNN backend)", "scaled_dot_product_attention with the flash backend"]))

# 10. context-parallel flavour ---------------------------------------------------------------------
R10 = "nemo2403_llama2_7b_fp8_32k"
AG = "context parallelism is all-gather based (K and V all-gathered)"
case("cp flavour all-gather", R10, "cp_flavour: 'all-gather' and 'context' in text", [note(AG)], [],
     paras(lambda p: [note(p)], [
         "cp_comm_type: all_gather", "--cp-comm-type allgather", "context parallel via all-gather of K/V",
         "AllGather-based context parallelism", "CP: all-gather (Llama 3 style)", "CP with K/V all-gathered",
         "cp_comm_type=\"all_gather\"",
     ])
     + negs(lambda p: [note(p)], [
         "context parallelism: ring (p2p), not all-gather", "cp_comm_type: p2p (ring attention; no all-gather)",
         "distributed optimizer's parameter all-gather overlapped; context parallelism 2",
     ]))
UL = "context parallelism: Ulysses (all-to-all)"
case("cp flavour all-to-all (Ulysses)", R10, "cp_flavour: 'ulysses' or 'all-to-all' in text", [note(UL)], [],
     paras(lambda p: [note(p)], [
         "cp_comm_type: a2a", "--cp-comm-type a2a", "DeepSpeed-Ulysses", "Ulysses-style CP",
         "CP via all-to-all (heads sharded)", "context parallel all_to_all",
     ])
     + negs(lambda p: [note(p)], [
         "ring attention for CP (not Ulysses)", "context parallelism: ring (p2p), not all-to-all",
     ]))
case("cp flavour false positive (MoE cp2 row)", "modelzoo_qwen3_235b_longctx_32k_cp2_dropless", "cp_flavour: any 'all-to-all'",
     [], [],
     negs(lambda p: [note(p)], [
         "EP all-to-all dispatcher (alltoall)", "expert tokens exchanged by all-to-all", "no Ulysses",
     ]))
case("cp degree written differently", R10, "layout_of/_int", [], [],
     paras(lambda p: [setf("layout.cp", p)], [
         "CP=2", "2 (ring)", "context parallel 2", "CP2", "2-way", "cp 2 (p2p)",
     ]))

# 11. expert parallelism / expert tensor parallelism ----------------------------------------------
R11 = "modelzoo_qwen3_235b_intranode_ep8_deepep_tp4"
case("ep degree written differently", R11, "layout_of/_int", [], [],
     paras(lambda p: [setf("layout.ep", p)], [
         "EP=8", "EP8", "8 (expert parallel)", "expert model parallel 8", "8-way", "EP 8 (intra-node)",
     ]))
case("expert_tp written differently", R11, "_row_spec: _int(lay['expert_tp'])", [], [setf("layout.expert_tp", None)],
     paras(lambda p: [setf("layout.expert_tp", p)], [
         "ETP=1", "ETP 1", "1 (no expert TP)", "expert tensor parallel 1", "none", "no", "off", "n/a (1)",
         "1 (experts not tensor-parallel)",
     ])
     + negs(lambda p: [setf("layout.expert_tp", p)], ["not stated", "unknown"]))
case("expert_tp stated only in notes (field null)", R11, "_row_spec: expert_tp from the field only", [],
     [setf("layout.expert_tp", None)],
     paras(lambda p: [setf("layout.expert_tp", None), note(p)], [
         "expert_tensor_parallel_size: 1", "ETP=1", "--expert-tensor-parallel-size 1",
     ]))

# 12. pipeline schedules and virtual stages ------------------------------------------------------
R12 = "megatron_readme2024_70B"  # pp 2, vpp null, schedule null, 84 layers
S = lambda p: [setf("layout.pipeline_schedule", p)]  # noqa: E731
case("interleaved, 3 virtual stages (words)", R12, "schedule_of", S("interleaved 1F1B, vpp 3"), [],
     paras(S, [
         "interleaved 1F1B with 3 model chunks per stage", "VPP 3", "vpp=3", "interleaved (3 virtual stages per rank)",
         "virtual_pipeline_model_parallel_size: 3", "interleaved-1F1B, num_model_chunks=3", "interleaved schedule, 3 chunks",
         "interleaved 1F1B (v = 3)", "--num-layers-per-virtual-pipeline-stage=14", "14 layers per virtual stage",
         "interleaved 1F1B; virtual pipeline size = 3", "interleaved 1F1B x3 chunks",
     ]))
case("vpp field written differently", R12, "layout vpp via _int", S("interleaved 1F1B, vpp 3"), [],
     paras(lambda p: [setf("layout.vpp", p), setf("layout.pipeline_schedule", "interleaved 1F1B")], [
         "VPP=3", "3 (virtual stages)", "3 chunks per rank", "vp 3",
     ]))
ONE = S("1F1B")
case("plain 1F1B denials of interleaving", R12, "schedule_of: non-interleaved regex", ONE, ONE,
     [("para", p, S(p)) for p in [
         "1F1B, not the interleaved schedule", "plain 1F1B (interleaving off)", "1F1B without the interleaved schedule",
         "1F1B (no interleaving; VPP 1)", "1F1B; interleaved schedule not used",
     ]])
case("DualPipe words", "deepseek_v3_pretraining_2048xH800", "schedule_of: 'dualpipe' in text", [], [],
     paras(S, ["DualPipe", "DualPipeV", "DualPipe-V", "Dual-Pipe", "dual pipe (bidirectional)",
               "DeepSeek's DualPipe bidirectional schedule", "dualpipe_v"]))
case("zero-bubble V", R12, "schedule_of: zbv", S("ZBV"), [],
     paras(S, ["ZB-V", "zero-bubble V", "zero bubble V-shaped schedule", "ZBVZeroBubble", "zero-bubble (V schedule)",
               "ZB V"]))
case("zero-bubble (interleaved-zb)", R12, "schedule_of: zero+bubble", S("zero bubble"), [],
     paras(S, ["ZB-H1", "ZB1P", "zero-bubble pipeline (ZB-H1)", "ZeroBubble", "ZB", "zero-bubble 1P"])
     + [("neg", p, S(p)) for p in []])
ONE = S("1F1B")
case("zero-bubble denial", R12, "schedule_of", ONE, ONE,
     [("para", p, S(p)) for p in ["1F1B (not zero-bubble)", "1F1B, no zero bubble", "1F1B (zero-bubble not used)"]])
case("GPipe", R12, "schedule_of: 'gpipe' in text", S("GPipe"), [],
     paras(S, ["all-forward-all-backward (GPipe)", "AFAB", "F-then-B (GPipe)", "GPipe-style fill-drain", "gpipe",
               "all forward then all backward"]))
ONE = S("1F1B")
case("GPipe denial", R12, "schedule_of", ONE, ONE,
     [("para", p, S(p)) for p in ["1F1B (instead of GPipe)", "1F1B, not GPipe", "1F1B (GPipe's memory problem avoided)"]])

R12b = "bridge2602_gb300_deepseek_v3_fp8mx"
LAY = "Et*3|(t*4|)*14t*2mL"  # 61 layers in 16 chunks, unlike the split read without a layout
N = [recipe_text("pipeline_model_parallel_layout")]
case("pipeline layout string", R12b, "stated_options pipeline_model_parallel_layout (OPTION_VALUES['layout'])",
     [recipe_text(replace={"pipeline_model_parallel_layout": LAY})], N,
     paras(lambda p: N + [note(p)], [
         f"pipeline_model_parallel_layout: {LAY}", f"--pipeline-model-parallel-layout \"{LAY}\"",
         f"pipeline_model_parallel_layout='{LAY}'", f"pipeline-model-parallel-layout {LAY}",
         "pipeline_model_parallel_layout: \"E t*3 | (t*4|)*14 t*2 m L\"", "pipeline_model_parallel_layout: E,t*3|(t*4|)*14,t*2,m,L",
         f"pipeline layout {LAY}", f"pp layout: {LAY}",
     ]))

# 13. model facts -----------------------------------------------------------------------------
R13 = "deepseek_v3_pretraining_2048xH800"
N = [setf("model.shared_experts", None)]
case("shared experts in words", R13, "model_block: shared_experts from the field only; MODEL_FACTS", [], N,
     paras(lambda p: N + [extra(p)], [
         "shared_experts: 1", "n_shared_experts: 1", "1 shared expert", "256 routed + 1 shared experts",
         "moe_shared_expert_intermediate_size 2048 (one shared expert)",
     ]))
N = [setf("model.dense_layers", None), rep(r"; the first 3 layers dense", "")]
case("dense layers in words", R13, "model_block: dense_layers from the field only", [], N,
     paras(lambda p: N + [extra(p)], [
         "dense_layers: 3", "first_k_dense_replace: 3", "the first 3 layers dense", "3 dense layers then MoE",
         "moe_layer_freq [0]*3 + [1]*58",
     ]))
case("top-k written differently", R13, "model_block: _int(top_k)", [], [],
     paras(lambda p: [setf("model.top_k", p)], ["top-8", "8 of 256", "8 routed experts per token", "k=8", "8 (+1 shared)"])
     + paras(lambda p: [setf("model.top_k", None), extra(p)], ["top_k: 8", "num_experts_per_tok: 8", "8 of 256 experts per token"]))
case("experts written differently", R13, "model_block: _int(experts)", [], [],
     paras(lambda p: [setf("model.experts", p)], ["256 routed (+1 shared)", "256 routed experts", "n_routed_experts=256"]))
N = [setf("model.kv_lora_rank", DROP), setf("model.q_lora_rank", DROP), setf("model.qk_rope_head_dim", DROP),
     setf("model.v_head_dim", DROP)]
case("MLA in words (no rank fields)", R13, "model_block: named_mla / latent_from_words", [], [],
     paras(lambda p: N + [rep(r"MoE with MLA", p)], [
         "MoE with multi-head latent attention", "MoE with Multi-head Latent Attention (MLA)", "MoE; latent attention (MLA)",
     ])
     + paras(lambda p: N + [rep(r"MoE with MLA \(.*?\)", "MoE"), extra(p)], [
         "kv_lora_rank: 512, q_lora_rank: 1536, qk_rope_head_dim: 64, v_head_dim: 128",
         "MLA: kv_lora_rank 512, q_lora_rank 1536, qk_rope_head_dim 64, v_head_dim 128",
     ]))
N = [setf("model.mtp_layers", DROP), rep(r"; multi-token prediction depth 1", "")]
case("MTP in words", R13, "mtp_from_words / MODEL_FACTS mtp_layers", [], N,
     paras(lambda p: N + [extra(p)], ["num_nextn_predict_layers: 1", "mtp_num_layers: 1"])
     + paras(lambda p: N + [rep(r"SwiGLU, RMSNorm", "SwiGLU, RMSNorm; " + p)], ["MTP depth 1", "1 MTP module", "multi-token prediction (D=1)",
                                                              "one multi-token-prediction module"]))
case("MTP denied (Qwen3 row)", "modelzoo_qwen3_235b_crossnode_ep32_deepep", "mtp_from_words: \\bmtp\\b", [], [],
     negs(lambda p: [rep(r"every layer MoE", "every layer MoE, " + p)], ["no MTP", "without multi-token prediction",
                                                                        "MTP not used"]))
R13c = "modelzoo_qwen3_235b_intranode_ep8_deepep_tp4"
case("capacity factor", R13c, "read_model_extra capacity_factor / stated_options capacity_factor",
     [extra("capacity_factor: 1.25")], [],
     paras(lambda p: [extra(p)], [
         "capacity factor 1.25", "moe_expert_capacity_factor=1.25", "capacity factor of 1.25", "expert capacity factor 1.25",
         "CF 1.25", "capacity_factor=1.25 (tokens dropped beyond)",
     ])
     + paras(lambda p: [note(p)], ["--moe-expert-capacity-factor 1.25", "capacity factor 1.25"])
     + negs(lambda p: [extra(p)], ["dropless (no capacity factor)", "capacity_factor: None (dropless)"]))

# activation / norm / position / tied words (model_block's arch words)
R14 = "megatron_readme2024_70B"  # arch "dense GPT (...)": GeLU, LayerNorm, learned positions, tied by default
A = lambda p: [setf("model.arch", p)]  # noqa: E731
GELU = A("dense GPT: GeLU MLP, LayerNorm, learned positions")
case("GeLU/LayerNorm/learned, with denials of the Llama words", R14, "model_block: llama_like/plain/swiglu substring tests",
     GELU, GELU,
     [("neg", p, A(p)) for p in [
         "dense GPT: GeLU MLP (not SwiGLU), LayerNorm, learned positions",
         "dense GPT: GeLU, LayerNorm (no RMSNorm), learned positions",
         "dense GPT: GeLU, LayerNorm, learned positions (no RoPE)",
         "dense GPT: GeLU, LayerNorm, learned positions, not Llama-style",
     ]])
case("SwiGLU/RMSNorm/RoPE in other words", R14, "model_block: llama_like word list",
     A("dense GPT: SwiGLU, RMSNorm, RoPE"), [],
     paras(A, [
         "dense GPT: SiLU-gated MLP, RMSNorm, rotary embeddings",
         "dense GPT: swish-gated linear unit, RMS norm, rotary position embeddings",
         "dense GPT: SwiGLU FFN; RMS normalization; rotary positional embedding",
         "dense GPT: Swish-GLU, RMSNorm, RoPE",
     ]))
case("GeGLU as 'gated GELU'", R14, "model_block: plain = 'gelu' and not 'geglu'", A("dense GPT: GeGLU, RMSNorm, RoPE"), [],
     paras(A, ["dense GPT: gated GELU, RMSNorm, RoPE", "dense GPT: GELU-gated linear unit, RMSNorm, RoPE"]))
R15 = "bridge2511_gb200_llama3_70b"  # Llama 3: untied
case("untied embeddings in words (Llama row)", R15, "model_block: tied = 'tied' in arch and 'untied' not", [], [],
     negs(lambda p: [rep(r"Llama 3: SwiGLU, RoPE, GQA", "Llama 3: SwiGLU, RoPE, GQA, " + p)], [
         "untied embeddings", "embeddings not tied", "no tied embeddings", "tie_word_embeddings: false",
         "input and output embeddings not tied",
     ]))
case("tied embeddings in words (Llama-like row)", R15, "model_block: tied", [rep(r"Llama 3: SwiGLU, RoPE, GQA", "Llama 3: SwiGLU, RoPE, GQA, tied embeddings")], [],
     paras(lambda p: [rep(r"Llama 3: SwiGLU, RoPE, GQA", "Llama 3: SwiGLU, RoPE, GQA, " + p)], [
         "tie_word_embeddings: true", "shared input/output embedding", "embedding weights tied", "weight tying",
     ]))

N = [setf("model.kv_heads", None), rep(r"Llama 3: SwiGLU, RoPE, GQA", "Llama 3: SwiGLU, RoPE")]
case("GQA in words (kv_heads null)", R15, "model_block: kv from the kv_heads field only", [], N,
     paras(lambda p: [setf("model.kv_heads", None), rep(r"Llama 3: SwiGLU, RoPE, GQA", "Llama 3: SwiGLU, RoPE, " + p)], [
         "GQA (8 KV heads)", "GQA-8", "grouped-query attention with 8 key-value heads", "num_key_value_heads: 8",
     ])
     + paras(lambda p: N + [extra(p)], ["num_key_value_heads: 8", "kv_heads: 8"]))

# sliding window (gpt-oss) -----------------------------------------------------------------------
R16 = "bridge2606_gb300_gpt_oss_120b_fp8mx"
# unnamed: a row naming gpt-oss reads its published architecture where it leaves a fact unsaid
# (`published.NAMED_MODELS`), so that only the words under test can state it
UNNAMED = setf("model.name", "a mixture-of-experts model")
N = [UNNAMED, setf("model.window", DROP), setf("model.full_attention_every", DROP),
     rep(r"; sliding-window attention \(128\) on alternate layers", "")]
case("sliding window 128 on alternate layers", R16, "read_model_extra (model.extra only) / model_block window", [], N,
     paras(lambda p: N + [extra(p)], [
         "sliding_window: 128, full_attention_every: 2", "sliding_window 128, window_attn_skip_freq 2",
         "window_size 128 on alternate layers", "sliding window 128 on alternate layers",
         "sliding-window attention (128 tokens) on every other layer", "SWA 128 on alternate layers",
         "window: 128, full_attention_every: 2",
     ])
     + paras(lambda p: N + [rep(r"MoE, SwiGLU, RoPE, GQA", "MoE, SwiGLU, RoPE, GQA; " + p)], [
         "sliding-window attention (128) on alternate layers", "sliding_window 128 on alternate layers",
     ]))
# gpt-oss's other model facts in model.extra (the shared schema has no field for them)
N = [UNNAMED, setf("model.yarn_factor", DROP)]
case("YaRN factor in words", R16, "read_model_extra yarn_factor", [], N,
     paras(lambda p: N + [extra(p)], ["yarn_factor: 32", "YaRN factor 32", "rope_scaling: {type: yarn, factor: 32}",
                                      "YaRN (factor 32)", "rope scaling yarn x32"]))

# 14. outcomes ---------------------------------------------------------------------------------
def reported(d):
    return [setf("outcomes.reported", d)]


RT = "nemo2504_b200_llama3_8b_fp8_32k"
v = ROWS[RT][0]["outcomes"]["reported"]["tflops_per_gpu"]
case("TFLOP/s per GPU under other keys", RT, "reported_tflops: key list", [], [],
     paras(reported, [{"TFLOPS/GPU": v}, {"TFLOP/s per GPU": v}, {"tflops_per_gpu": f"{v} TFLOP/s"},
                      {"model_tflops": v}, {"throughput_tflops_per_gpu": v}, {"TFLOPs/s/GPU": v},
                      {"achieved_tflops": v}, {"tflops/gpu": v}, {"per-GPU TFLOP/s": v}, {"TFLOPS per GPU": v},
                      {"model TFLOP/s/GPU": v}, {"tflops_per_gpu": f"{v} TFLOPS/GPU"}]))
RK = "bridge2511_gb200_llama3_70b"
v = ROWS[RK][0]["outcomes"]["reported"]["tokens_per_s_per_gpu"]
g = 64
case("tokens/s under other keys and units", RK, "reported_tflops: tokens keys", [], [],
     paras(reported, [{"tokens/s/GPU": v}, {"tokens_per_sec_per_gpu": v}, {"tokens per second per GPU": v},
                      {"throughput_per_gpu": f"{v} tokens/s"}, {"tokens_per_gpu_per_sec": v}, {"TGS": v},
                      {"tokens_per_s_per_node": v * 4}, {"tokens_per_s": v * g}, {"tokens/s": v * g},
                      {"throughput (tokens/s)": v * g}, {"tokens_per_second": f"{v * g / 1e6:.6f}M"},
                      {"throughput": f"{v} tokens/s/GPU"}]))
RS = "dgxc2411_h100_llama31_8b_bf16_8gpu"
v = ROWS[RS][0]["outcomes"]["reported"]["step_time_s"]
case("step time under other keys and units", RS, "reported_tflops: step keys / figure(seconds=True)", [], [],
     paras(reported, [{"step_time": f"{v} s/iter"}, {"iteration_time": f"{v} s"}, {"step_time_ms": v * 1000},
                      {"time_per_step": f"{v}s"}, {"seconds_per_iteration": v}, {"elapsed_time_per_iteration_ms": v * 1000},
                      {"step time": f"{v} s/step"}, {"train_step_timing": v}, {"train_step_timing in s": v},
                      {"step_time_s": f"{v * 1000:g} ms"}, {"iteration time (s)": v}]))
gbs = ROWS[RS][0]["layout"]["global_batch"]
SEQ = reported({"sequences_per_s": gbs / v})
case("sequences/s under other keys", RS, "reported_tflops: samples keys",
     SEQ, SEQ,
     paras(reported, [{"samples/s": gbs / v}, {"samples_per_second": gbs / v}, {"throughput_samples_per_s": gbs / v},
                      {"seq/s": gbs / v}, {"samples_per_sec": gbs / v}]))
RM = "megatron_readme2024_70B"
case("MFU under other keys/strings", RM, "reported_tflops: mfu keys; figure()", reported({"mfu_pct": 42}), [],
     paras(reported, [{"MFU": "42 %"}, {"mfu": 0.42}, {"MFU (%)": "42%"}, {"model_flops_utilization": 42},
                      {"mfu_percent": "42"}, {"MFU": "42% of 989 TFLOP/s"}, {"model FLOPs utilization (%)": 42},
                      {"mfu_pct": "42.0 (%)"}]))
case("flop_convention spellings (bridge_causal)", RK, "convention_key / CONVENTION_ALIASES", [], [],
     paras(lambda p: [setf("flop_convention", p)], [
         "Megatron-Bridge causal", "bridge (causal)", "MFU (Megatron-Bridge, causal)", "Megatron-Core causal",
         "megatron_bridge_causal", "Megatron-Core model FLOPs, causal",
     ]))
case("flop_convention spellings (palm_mfu)", "llama3_405b_16384gpu_tp8_pp16_dp128_8k", "convention_key", [], [],
     paras(lambda p: [setf("flop_convention", p)], ["PaLM MFU", "MFU (PaLM)", "PaLM-style MFU", "PaLM Appendix B",
                                                    "palm"]))
case("flop_convention spellings (torchtitan)", "torchtitan_405b_512gpu_3d_1f1b", "convention_key", [], [],
     paras(lambda p: [setf("flop_convention", p)], ["torchtitan MFU", "torchtitan's MFU", "TorchTitan"]))
case("flop_convention spellings (narayanan_hfu)", "narayanan21_t1_1.7B", "convention_key", [], [],
     paras(lambda p: [setf("flop_convention", p)], ["HFU (Narayanan)", "Narayanan et al. 2021 HFU", "narayanan_hfu (Eq. 3)",
                                                    "narayanan"]))
case("flop_convention spellings (nemo_dgxc_noncausal)", RS, "convention_key", [], [],
     paras(lambda p: [setf("flop_convention", p)], ["NeMo DGXC (non-causal)", "DGX Cloud non-causal", "MFU (NeMo DGXC)",
                                                    "nemo_dgxc"]))
case("flop_convention spellings (korthikanti)", "korthikanti22_22B_selective_sp", "convention_key", [], [],
     paras(lambda p: [setf("flop_convention", p)], ["Korthikanti MFU/HFU", "MFU (Korthikanti)", "korthikanti"]))




VARIANTS = [(case, variant) for case in CASES for variant in case[5]]


def _reading_of(rid: str, ops: list) -> dict:
    base, others = ROWS[rid]
    return reading(apply(base, ops), others)


@pytest.mark.parametrize("case", [c for c in CASES if (c[3] or c[4]) and c[3] is not c[4]], ids=lambda c: f"{c[0]}-{c[1]}")
def test_each_case_s_statement_changes_the_reading(case):
    """The control: without its statement the row reads differently (or the statement's row is read
    at all), so a paraphrase that read as the canonical row was read, not ignored."""
    fact, rid, _, canon, neutral, _ = case
    canonical = _reading_of(rid, canon)
    assert "SKIPPED" not in canonical, (fact, canonical)
    assert diff(_reading_of(rid, neutral), canonical), fact


@pytest.mark.parametrize(("case", "variant"), VARIANTS, ids=[f"{c[0]}-{v[0]}-{str(v[1])[:40]}" for c, v in VARIANTS])
def test_a_paraphrase_reads_as_its_statement_and_a_denial_as_its_absence(case, variant):
    assert len(CASES) >= 50 and len(VARIANTS) >= 350
    fact, rid, _, canon, neutral, _ = case
    kind, label, ops, *want = variant
    got = _reading_of(rid, ops)
    if kind == "want":
        assert want_diff(got, want[0]) == [], (fact, label)
    else:
        assert diff(got, _reading_of(rid, canon if kind == "para" else neutral)) == [], (fact, label)


@pytest.mark.parametrize("words,sharding", [
    ("the same recipe as Nemotron-4's", "none"),  # a model's name, not NeMo
    ("GPUs paired by an NVLink bridge", "none"),  # hardware, not Megatron-Bridge
    ("run in the NeMo 24.05 container", "zero1"),  # NeMo's recipes turn the distributed optimizer on
    ("launched with Megatron-Bridge", "zero1"),
    ("not NeMo: plain Megatron-LM", "none"),
])
def test_the_distributed_optimizer_default_follows_a_named_runtime(words, sharding):
    """A Megatron row that leaves its sharding open takes NeMo's and Megatron-Bridge's default (the
    distributed optimizer) only where its words name one of them as the runtime (`NEMO_WORDS`):
    before stop 60 "nemo" or "bridge" anywhere in the text did, "Nemotron" and an NVLink bridge
    among them."""
    row, others = ROWS["megascale_megatron_175b_256gpu"]
    got = reading(apply(row, [note(words)]), others)
    assert f"dp {{ sharding {sharding} }}" in got["spec"], got["spec"]
