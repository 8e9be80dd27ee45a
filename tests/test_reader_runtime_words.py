"""Runtime facts in a row's words read as other transcribers write them: a probe stated, denied,
hedged and compared them 705 ways over 30 rows (stop 61); 225 rewrites read otherwise than they say.
Each is a case here, by cause. Kind 1: the row's own fact written another way (reads as the row as
rewrite); kind 2: a fact the row did not state (the named reading changes to the value given);
kind 3: a fact only recommended, compared, another run's or left open (reads as before it).
Two cases of the probe are left out, still read as the row's: a context-parallel exchange named for
a sibling row ("the 128K row uses all-gather CP; this one ring": "the ... row" names this run as often,
"the 2,240-GPU run") or another model's run ("Llama 3 used all-gather CP" beside a Llama 2 row).

- C1: an option a sentence recommends, gives for another run, or leaves open is not stated (`stated_options`).
- C2: a fact named as a recommendation, another run's, a later release's, or one left off is not stated (`denied`).
- C3: a denial takes back the mention it is about, not another in its clause.
- C4: "forced load balancing: False" is no forced balancing.
- C5: runtime facts in ordinary words: overlaps, bf16 reduction, attention backends, FP8 attention, fp8 parameters, offload, CUDA graphs, fused kernels.
- C6: data-parallel overlap stated off; torchtitan's float8 all-gather stated on or off.
- C7: another run's release or date is not the row's.
- C8: a runtime named in a comparison is not the row's runtime.
- C9: a context-parallel exchange named for another row or as a recommendation is not the row's.
- C10: NeMo releases and code dates in more words.
"""

from __future__ import annotations

import pytest

from .reader_paraphrase import ROWS, apply, diff, note, reading, recipe_text, rep, setf

# (cause, kind, row, edits, for kind 2 what the reading becomes)
CASES = [
    # C1: an option a sentence recommends, gives for another run, or leaves open is not stated (`stated_options`)
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('the README recommends --tp-comm-overlap')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('the 405B recipe turns on tp_comm_overlap; this 175B one does not')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('NVIDIA suggests tp_comm_overlap for TP >= 4')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('TP comm overlap is used by the larger configs only')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('TP comm overlap (as in the Llama rows) was not applied')]), {}),
    ("C1", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('the README recommends --tp-comm-overlap')]), {}),
    ("C1", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('the 405B recipe turns on tp_comm_overlap; this 175B one does not')]), {}),
    ("C1", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('NVIDIA suggests tp_comm_overlap for TP >= 4')]), {}),
    ("C1", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('TP comm overlap is used by the larger configs only')]), {}),
    ("C1", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('TP comm overlap (as in the Llama rows) was not applied')]), {}),
    ("C1", 3, *('bridge2509_gb200_llama31_405b_fp8cs', [recipe_text('tp_comm_overlap'), note('the README recommends --tp-comm-overlap')]), {}),
    ("C1", 3, *('bridge2509_gb200_llama31_405b_fp8cs', [recipe_text('tp_comm_overlap'), note('the 405B recipe turns on tp_comm_overlap; this 175B one does not')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('overlap_p2p_comm is recommended with virtual pipelining')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note("NeMo 2's callback sets overlap_p2p_comm; this NeMo 1 run leaves it off")]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('overlap_p2p_comm (as in the 24.09 configs) was not set')]), {}),
    ("C1", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('whether overlap_p2p_comm was set is not stated')]), {}),
    ("C1", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('NeMo 1 configs leave overlap_p2p_comm off (not this run)')]), {}),
    ("C1", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('grad_reduce_in_fp32 not stated')]), {}),
    ("C1", 3, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('grad_reduce_in_fp32 not stated')]), {}),
    ("C1", 3, *('megascale_megatron_175b_256gpu', [note('grad_reduce_in_fp32 not stated')]), {}),
    ("C1", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('moe_a2a_overlap is recommended for cross-node EP')]), {}),
    ("C1", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('moe_a2a_overlap is recommended for cross-node EP')]), {}),
    ("C1", 3, *('bridge2606_gb300_gpt_oss_120b_fp8mx', [recipe_text('cutedsl_fused_grouped_mlp'), note('cutedsl_fused_grouped_mlp is recommended')]), {}),
    # C2: a fact named as a recommendation, another run's, a later release's, or one left off is not stated (`denied`)
    ("C2", 3, *('torchtitan_405b_512gpu_3d_1f1b', [rep('async tp', ''), note('AsyncTP is recommended for H100')]), {}),
    ("C2", 3, *('torchtitan_405b_512gpu_3d_1f1b', [rep('async tp', ''), note('the 8B runs use Async TP; this one does not')]), {}),
    ("C2", 3, *('megascale_megatron_175b_256gpu', [note('the 530B runs use the distributed optimizer')]), {}),
    ("C2", 3, *('megascale_megatron_175b_256gpu', [note('the distributed optimizer is suggested for this size')]), {}),
    ("C2", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('unlike the NeMo 2 rows (bf16 gradient reduction), this one reduces in fp32')]), {}),
    ("C2", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('bf16 gradient reduction is recommended')]), {}),
    ("C2", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('the 25.02 rows reduce gradients in bf16')]), {}),
    ("C2", 3, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('unlike the NeMo 2 rows (bf16 gradient reduction), this one reduces in fp32')]), {}),
    ("C2", 3, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('bf16 gradient reduction is recommended')]), {}),
    ("C2", 3, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('the 25.02 rows reduce gradients in bf16')]), {}),
    ("C2", 3, *('megascale_megatron_175b_256gpu', [note('unlike the NeMo 2 rows (bf16 gradient reduction), this one reduces in fp32')]), {}),
    ("C2", 3, *('megascale_megatron_175b_256gpu', [note('bf16 gradient reduction is recommended')]), {}),
    ("C2", 3, *('megascale_megatron_175b_256gpu', [note('the 25.02 rows reduce gradients in bf16')]), {}),
    ("C2", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('NVTE_FUSED_ATTN=0 is recommended on H100')]), {}),
    ("C2", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('the Nemotron rows set NVTE_FUSED_ATTN=0; this one does not')]), {}),
    ("C2", 3, *('megatron_readme2024_70B', [note('unfused attention would not fit at this size')]), {}),
    ("C2", 3, *('megatron_readme2024_70B', [note('the 2021 rows ran unfused attention')]), {}),
    ("C2", 3, *('megatron_readme2024_70B', [note('unfused attention is the fallback only')]), {}),
    ("C2", 3, *('narayanan21_t1_145B', [note('FlashAttention did not exist yet')]), {}),
    ("C2", 3, *('narayanan21_t1_145B', [note('later Megatron versions use FlashAttention')]), {}),
    ("C2", 3, *('narayanan21_t1_145B', [note('FlashAttention (2022) was not available')]), {}),
    ("C2", 3, *('narayanan21_t1_145B', [note('unlike later Megatron runs with FlashAttention')]), {}),
    ("C2", 3, *('narayanan21_t1_145B', [note('FlashAttention would speed this up (later work)')]), {}),
    ("C2", 3, *('bridge2509_gb200_llama31_405b_fp8cs', [note('FP8 attention was left off')]), {}),
    ("C2", 3, *('bridge2509_gb200_llama31_405b_fp8cs', [note('FP8 attention is recommended on Blackwell')]), {}),
    ("C2", 3, *('bridge2509_gb200_llama31_405b_fp8cs', [note('FP8 DPA unsupported in this config')]), {}),
    ("C2", 3, *('bridge2509_gb200_llama31_405b_fp8cs', [note('FP8 attention is used only by the gpt-oss recipe')]), {}),
    ("C2", 3, *('torchtitan_405b_512gpu_3d_1f1b', [rep('torch\\.compile', ''), note('torch.compile is recommended for Float8')]), {}),
    ("C2", 3, *('torchtitan_405b_512gpu_3d_1f1b', [rep('torch\\.compile', ''), note('the 8B runs use torch.compile; the 405B ones do not')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('DeepEP is recommended for cross-node EP')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('the DeepSeek-V3 rows use DeepEP; Mixtral uses alltoall')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('DeepEP support came in a later release')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('a later release switches Mixtral to HybridEP')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('the flex dispatcher (DeepEP) is suggested for EP > 8')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('alltoall dispatcher; DeepEP numbers are in a separate table')]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('HybridEP is recommended on GB200')]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('EP A2A overlap is the next optimization (not in this run)')]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('the 1F1B A2A overlap row is separate')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('EP A2A overlap is the next optimization (not in this run)')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('the 1F1B A2A overlap row is separate')]), {}),
    ("C2", 3, *('bridge2509_gb200_deepseek_v3_fp8cs', [recipe_text('moe_shared_expert_overlap'), note('shared-expert overlap is recommended')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('the forced-balance figures are in the other column')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('forced balancing is recommended for benchmarking')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note("the table's second figure uses forced balance; this is the first")]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('the forced-balance figures are in the other column')]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('forced balancing is recommended for benchmarking')]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note("the table's second figure uses forced balance; this is the first")]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('full-iteration CUDA graphs are used in the 26.06 rows, not here')]), {}),
    ("C2", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('full-iteration CUDA graphs are recommended')]), {}),
    ("C2", 3, *('mpt_h100big_70b_s2048_g512_mb8', [rep('fused_crossentropy|xentropy', ''), note('fused cross-entropy is recommended')]), {}),
    ("C2", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('the 1F1B-overlap row recomputes mlp too')]), {}),
    # C3: a denial takes back the mention it is about, not another in its clause
    ("C3", 3, *('nemo2407_h100_gpt3_175b_128gpu', [note('userbuffers-based TP overlap is off')]), {}),
    ("C3", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('userbuffers-based TP overlap is off')]), {}),
    ("C3", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('TE attention backend: FlashAttention (cuDNN fused attention disabled)')]), {'sw.attention': 'flash-te-fa2'}),
    ("C3", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('NVTE_FLASH_ATTN=0')]), {}),
    # C4: "forced load balancing: False" is no forced balancing
    ("C4", 3, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('forced load balancing: False')]), {}),
    ("C4", 3, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('forced load balancing: False')]), {}),
    # C5: runtime facts in ordinary words: overlaps, bf16 reduction, attention backends, FP8 attention, fp8 parameters, offload, CUDA graphs, fused kernels
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('TP/SP communication overlap enabled')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('TP communication is overlapped with computation')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('UB overlap for TP')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('TE userbuffer overlap enabled')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('overlapping tensor-parallel all-gathers and reduce-scatters with GEMMs')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('TP/SP communication overlap enabled')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('TP communication is overlapped with computation')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('UB overlap for TP')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('TE userbuffer overlap enabled')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('overlapping tensor-parallel all-gathers and reduce-scatters with GEMMs')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('TP/SP communication overlap enabled')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('TP communication is overlapped with computation')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('UB overlap for TP')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('TE userbuffer overlap enabled')]), {'sw.tp_overlap': 'all'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('overlapping tensor-parallel all-gathers and reduce-scatters with GEMMs')]), {'sw.tp_overlap': 'all'}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('tensor-parallel communication overlapped with the GEMMs, tp-comm-overlap \\(.*?performance script\\)', 'TP/SP communication overlap enabled')]), {}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('tensor-parallel communication overlapped with the GEMMs, tp-comm-overlap \\(.*?performance script\\)', 'TP communication is overlapped with computation')]), {}),
    ("C5", 1, *('bridge2509_gb200_llama31_405b_fp8cs', [recipe_text('tp_comm_overlap'), note('TP/SP communication overlap enabled')]), {}),
    ("C5", 1, *('bridge2509_gb200_llama31_405b_fp8cs', [recipe_text('tp_comm_overlap'), note('TP communication is overlapped with computation')]), {}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('pipeline P2P communication overlapped with compute')]), {'sw.pp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('PP communication overlap enabled')]), {'sw.pp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('overlap of pipeline-parallel send/recv with computation')]), {'sw.pp_overlap': 'all'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('P2P overlap: on')]), {'sw.pp_overlap': 'all'}),
    ("C5", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('P2P overlap disabled')]), {'sw.pp_overlap': 'none'}),
    ("C5", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('pipeline p2p communication not overlapped')]), {'sw.pp_overlap': 'none'}),
    ("C5", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('no PP comm overlap')]), {'sw.pp_overlap': 'none'}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('DistributedOptimizer')]), {'spec~': 'sharding zero1'}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('dist-opt on')]), {'spec~': 'sharding zero1'}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('optim: distributed_fused_adam')]), {'spec~': 'sharding zero1'}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('Megatron DistOpt')]), {'spec~': 'sharding zero1'}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('overlap_param_sync: true (distributed_fused_adam)')]), {'spec~': 'sharding zero1'}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('gradients communicated in bf16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('bf16 gradient communication')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('reduce-scatter of gradients in BF16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('gradient sync in bf16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('nemo2407_h100_gpt3_175b_128gpu', [note('bfloat16 gradient reduction')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('gradients communicated in bf16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('bf16 gradient communication')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('reduce-scatter of gradients in BF16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('gradient sync in bf16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_deepseek_v3_fp8cs', [note('bfloat16 gradient reduction')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('gradients communicated in bf16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('bf16 gradient communication')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('reduce-scatter of gradients in BF16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('gradient sync in bf16')]), {'sw.grad_bytes': 2}),
    ("C5", 2, *('megascale_megatron_175b_256gpu', [note('bfloat16 gradient reduction')]), {'sw.grad_bytes': 2}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('gradients reduced in bf16, grad-reduce-in-bf16 \\(.*?= False`\\);', 'gradients communicated in bf16;')]), {}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('gradients reduced in bf16, grad-reduce-in-bf16 \\(.*?= False`\\);', 'bf16 gradient communication;')]), {}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('gradients reduced in bf16, grad-reduce-in-bf16 \\(.*?= False`\\);', 'reduce-scatter of gradients in BF16;')]), {}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('gradients reduced in bf16, grad-reduce-in-bf16 \\(.*?= False`\\);', 'gradient sync in bf16;')]), {}),
    ("C5", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('gradients reduced in bf16, grad-reduce-in-bf16 \\(.*?= False`\\);', 'bfloat16 gradient reduction;')]), {}),
    ("C5", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('env NVTE_FUSED_ATTN 0')]), {'sw.attention': 'flash-te-fa2'}),
    ("C5", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('TE runs flash-attn rather than cuDNN attention')]), {'sw.attention': 'flash-te-fa2'}),
    ("C5", 2, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('flash-attn backend in TE (NVTE_FUSED_ATTN disabled)')]), {'sw.attention': 'flash-te-fa2'}),
    ("C5", 2, *('megatron_readme2024_70B', [note('non-fused attention')]), {'sw.attention': 'unfused'}),
    ("C5", 2, *('megatron_readme2024_70B', [note('attention ran without a fused kernel')]), {'sw.attention': 'unfused'}),
    ("C5", 2, *('megatron_readme2024_70B', [note('the attention was not fused')]), {'sw.attention': 'unfused'}),
    ("C5", 2, *('megatron_readme2024_70B', [note('unfused softmax attention (s x s scores materialised)')]), {'sw.attention': 'unfused'}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('DPA in FP8 (cuDNN)')]), {'sw.attention_fp8': True}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('FP8 SDPA')]), {'sw.attention_fp8': True}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('FP8 multi-head attention (fp8_mha)')]), {'sw.attention_fp8': True}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('attention computed in FP8')]), {'sw.attention_fp8': True}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('fp8_multi_head_attention: true')]), {'sw.attention_fp8': True}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('attention BMMs in FP8')]), {'sw.attention_fp8': True}),
    ("C5", 1, *('bridge2606_gb300_qwen3_30b_a3b_fp8mx', [recipe_text('fp8_dot_product_attention'), note('DPA in FP8 (cuDNN)')]), {}),
    ("C5", 1, *('bridge2606_gb300_qwen3_30b_a3b_fp8mx', [recipe_text('fp8_dot_product_attention'), note('FP8 SDPA')]), {}),
    ("C5", 1, *('bridge2606_gb300_qwen3_30b_a3b_fp8mx', [recipe_text('fp8_dot_product_attention'), note('FP8 multi-head attention (fp8_mha)')]), {}),
    ("C5", 1, *('bridge2606_gb300_qwen3_30b_a3b_fp8mx', [recipe_text('fp8_dot_product_attention'), note('attention computed in FP8')]), {}),
    ("C5", 2, *('torchtitan_405b_512gpu_3d_1f1b', [rep('torch\\.compile', ''), note('--training.compile')]), {'sw.kernels': 'fused'}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('fp8_params: false')]), {'sw.gather_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('+model.fp8_params=False')]), {'sw.gather_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('parameters are all-gathered in BF16')]), {'sw.gather_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('weights all-gathered in BF16')]), {'sw.gather_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('BF16 param all-gather')]), {'sw.gather_bytes': 2}),
    ("C5", 2, *('bridge2509_gb200_llama31_405b_fp8cs', [note('fp8 parameter all-gather disabled')]), {'sw.gather_bytes': 2}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('overlap of the EP all-to-all with computation')]), {'sw.ep_overlap': True}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('EP comm overlap: yes')]), {'sw.ep_overlap': True}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('EP A2A hidden by overlapping two micro-batches (combined 1F1B)')]), {'sw.ep_overlap': True}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('overlap of the EP all-to-all with computation')]), {'sw.ep_overlap': True}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('EP comm overlap: yes')]), {'sw.ep_overlap': True}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('EP A2A hidden by overlapping two micro-batches (combined 1F1B)')]), {'sw.ep_overlap': True}),
    ("C5", 1, *('bridge2509_gb200_deepseek_v3_fp8cs', [recipe_text('moe_shared_expert_overlap'), note('shared expert computation overlapped with the EP all-to-all')]), {}),
    ("C5", 1, *('bridge2509_gb200_deepseek_v3_fp8cs', [recipe_text('moe_shared_expert_overlap'), note('shared-expert compute overlapped with token dispatch')]), {}),
    ("C5", 1, *('bridge2509_gb200_deepseek_v3_fp8cs', [recipe_text('moe_shared_expert_overlap'), note('overlap shared experts: true')]), {}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('router forced to a uniform load (benchmark mode)')]), {'marker': 'random routing'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('forced expert load balance (benchmark)')]), {'marker': 'random routing'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('load balancing forced')]), {'marker': 'random routing'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('router forced to a uniform load (benchmark mode)')]), {'marker': 'random routing'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('forced expert load balance (benchmark)')]), {'marker': 'random routing'}),
    ("C5", 2, *('modelzoo_qwen3_235b_crossnode_ep32_deepep', [note('load balancing forced')]), {'marker': 'random routing'}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('tokens padded up to expert capacity (CF 1.0)')]), {'sw.moe_host_sync': False}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('whole-iteration CUDA graph')]), {'sw.moe_host_sync': False}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('CUDA graph captures the entire training step')]), {'sw.moe_host_sync': False}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('full-iteration graph capture')]), {'sw.moe_host_sync': False}),
    ("C5", 2, *('nemo2502_b200_mixtral_8x22b_256gpu', [note('cuda graphs: full_iteration')]), {'sw.moe_host_sync': False}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note('offloads 40 layers of activations to CPU')]), {}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note('CPU offloading of activations (40 layers)')]), {}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note('offload_activations: 40')]), {}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note('activation CPU offload (num_layers=40)')]), {}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note("40 transformer layers' activations offloaded to host")]), {}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note('activations offloaded to CPU for 40 layers')]), {}),
    ("C5", 1, *('bridge2511_gb200_llama3_70b', [recipe_text('cpu_offloading_num_layers'), note('cpu_offloading=True (40 layers)')]), {}),
    ("C5", 1, *('bridge2606_gb300_gpt_oss_120b_fp8mx', [recipe_text('cutedsl_fused_grouped_mlp'), note('CuTeDSL grouped MLP fusion')]), {}),
    ("C5", 2, *('mpt_h100big_70b_s2048_g512_mb8', [rep('fused_crossentropy|xentropy', ''), note('cross-entropy fused kernel from flash-attn')]), {'sw.loss_kernel': 'xentropy'}),
    ("C5", 2, *('mpt_h100big_70b_s2048_g512_mb8', [rep('fused_crossentropy|xentropy', ''), note('fused softmax cross-entropy')]), {'sw.loss_kernel': 'xentropy'}),
    # C6: data-parallel overlap stated off; torchtitan's float8 all-gather stated on or off
    ("C6", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [rep('--overlap-grad-reduce ', ''), note('overlap_grad_reduce: False')]), {'sw.dp_overlap': False}),
    ("C6", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [rep('--overlap-grad-reduce ', ''), note('--overlap-grad-reduce not set')]), {'sw.dp_overlap': False}),
    ("C6", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [rep('--overlap-grad-reduce ', ''), note('gradient reduction not overlapped with the backward')]), {'sw.dp_overlap': False}),
    ("C6", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [rep('--overlap-grad-reduce ', ''), note('no --overlap-grad-reduce (it postdates this commit)')]), {'sw.dp_overlap': False}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [note('enable_fsdp_float8_all_gather = false')]), {'sw.gather_bytes': 2}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [note('float8 all-gather off')]), {'sw.gather_bytes': 2}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [note('FSDP all-gathers bf16 weights (no float8 all-gather)')]), {'sw.gather_bytes': 2}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [note('enable_fsdp_float8_all_gather: False')]), {'sw.gather_bytes': 2}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [note('weights all-gathered in bf16')]), {'sw.gather_bytes': 2}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [setf('runtime.date', '2026-06-01'), note('enable_fsdp_float8_all_gather = true')]), {'sw.gather_bytes': 1}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [setf('runtime.date', '2026-06-01'), note('FSDP2 all-gathers float8 weights')]), {'sw.gather_bytes': 1}),
    ("C6", 2, *('torchtitan_405b_512gpu_3d_1f1b', [setf('runtime.date', '2026-06-01'), note('float8 all-gather on')]), {'sw.gather_bytes': 1}),
    # C7: another run's release or date is not the row's
    ("C7", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('a later container (NeMo 25.07) reports the same time')]), {}),
    ("C7", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('NeMo 25.07 is newer than this recipe')]), {}),
    ("C7", 3, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('compared with Megatron-LM commit 1a2b3c4d (2025-06-01), this run is faster')]), {}),
    ("C7", 3, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('an older run (commit 1a2b3c4d, 2025-06-01) reached 800 TFLOPS')]), {}),
    ("C7", 3, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('the 25.07 NeMo container was slower')]), {}),
    # C8: a runtime named in a comparison is not the row's runtime
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note("compared with Megatron-LM's published MFU")]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note('torchtitan later reproduced a 405B run')]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note('Megatron-style tensor parallelism')]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note('the NVIDIA DGX Cloud benchmarks report a higher MFU')]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note('TP as introduced by Megatron-LM (Shoeybi et al.)')]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note("faster than NeMo's 405B recipe")]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note("the same layout as torchtitan's 3D example")]), {}),
    ("C8", 3, *('llama3_405b_8192gpu_tp8_pp16_dp64_8k', [note("MFU definition as in Megatron-LM's paper")]), {}),
    ("C8", 3, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [note('torchtitan reaches 405B with FSDP2 instead')]), {}),
    # C9: a context-parallel exchange named for another row or as a recommendation is not the row's
    ("C9", 3, *('nemo2403_llama2_7b_fp8_32k', [note('all-gather-based CP is recommended for long sequences')]), {}),
    # C10: NeMo releases and code dates in more words
    ("C10", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('NeMo Framework 25.04')]), {}),
    ("C10", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('NeMo v25.04.01')]), {}),
    ("C10", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('image: nemo:25.04.01')]), {}),
    ("C10", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('release 25.04 of the NeMo container')]), {}),
    ("C10", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('NeMo 2 (container 25.04.01)')]), {}),
    ("C10", 1, *('dgxc2507_gb200_llama31_405b_bf16_128gpu', [rep('; the recipe runs NeMo 2 in the nvcr\\.io/nvidia/nemo:25\\.04\\.01', ''), note('NeMo Framework container 25.04.01')]), {}),
    ("C10", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('commit 1a2b3c4d from June 1, 2025')]), {'sw.save_original_input': False}),
    ("C10", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('Megatron-Core commit 1a2b3c4d of 2025/06/01')]), {'sw.save_original_input': False}),
    ("C10", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('code as of 2025-06-01 (Megatron-LM main, 1a2b3c4d)')]), {'sw.save_original_input': False}),
    ("C10", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('Megatron-LM 1a2b3c4d (2025-06-01)')]), {'sw.save_original_input': False}),
    ("C10", 2, *('mcore_deepseek_v3_gb200_mxfp8_256gpu', [note('the run used Megatron-LM main of 2025-06-01')]), {'sw.save_original_input': False}),
]


def test_every_kind_has_cases():
    assert {kind for _, kind, *_ in CASES} == {1, 2, 3}


@pytest.mark.parametrize("cause,kind,rid,ops,want", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_runtime_fact_reads_as_its_words_say(cause, kind, rid, ops, want):
    row, others = ROWS[rid]
    got = reading(apply(row, ops), others)
    if kind == 1:  # the row's own fact, however its setup edits removed the words it was written in
        assert diff(got, reading(row, others)) == []
        return
    if kind == 3:  # a fact set aside changes nothing from the row as the edits before it left it
        assert diff(got, reading(apply(row, ops[:-1]), others)) == []
        return
    assert want
    for key, value in want.items():
        if key == "spec~":
            assert any(value in line for line in got["spec"]), key
        elif key == "marker":
            assert value in got["markers"], key
        else:
            assert got[key] == value, key
