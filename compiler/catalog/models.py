"""Model presets with their published shapes.

A spec names one (`model llama3-405b`) and may override any field (`model llama3-405b { layers 8 }`).
Each preset cites the table it was copied from; no field is rounded or "about".
"""

from __future__ import annotations

# Fields are those of `parc.plan.Model` as written in a spec (dashes become underscores).
# `moe_layers` is a rule: "all", "none", ("from", k) = layers k.. are MoE (the first k dense),
# ("every", k) = every k-th layer is MoE.
MODELS: dict[str, dict] = {
    # Brown et al. 2020 (GPT-3), Table 2.1: n_layers 96, d_model 12288, n_heads 96, d_head 128;
    # GPT-2 BPE vocabulary of 50,257 tokens; learned positions; tied input/output embedding.
    "gpt3-175b": dict(
        layers=96, hidden=12288, ffn=49152, heads=96, kv_heads=96, vocab=50257,
        tied_embeddings=True, activation="gelu", norm="layernorm", position="learned",
    ),
    # Narayanan et al. 2021 (Megatron-LM, SC21), Table 1, last row: 1T parameters,
    # 128 layers, hidden 25,600, 160 heads, FFN 4h, vocabulary 51,200, sequence 2,048.
    "megatron-1t": dict(
        layers=128, hidden=25600, ffn=102400, heads=160, kv_heads=160, vocab=51200,
        tied_embeddings=True, activation="gelu", norm="layernorm", position="learned",
    ),
    # Dubey et al. 2024 (The Llama 3 Herd of Models), Table 3; vocabulary 128,256 as shipped
    # (the paper's "128K"); RMSNorm, SwiGLU, RoPE, untied output layer; RoPE base theta 500,000
    # (Table 3); norm epsilon 1e-5 (the released config.json's rms_norm_eps).
    "llama3-8b": dict(
        layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope", rope_theta=500000.0,
    ),
    "llama3-70b": dict(
        layers=80, hidden=8192, ffn=28672, heads=64, kv_heads=8, vocab=128256,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope", rope_theta=500000.0,
    ),
    "llama3-405b": dict(
        layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope", rope_theta=500000.0,
    ),
    # Jiang et al. 2024 (Mixtral of Experts), Table 1: dim 4096, 32 layers, head_dim 128,
    # 32 heads, 8 KV heads, hidden_dim 14336, vocab 32000, 8 experts, top-2, every layer MoE;
    # RoPE base 1,000,000 and rms_norm_eps 1e-5: the released config.json (`rope_theta`, `rms_norm_eps`).
    "mixtral-8x7b": dict(
        layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=32000,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope", rope_theta=1000000.0,
        experts=8, top_k=2, expert_ffn=14336, shared_experts=0, moe_layers="all",
    ),
    # DeepSeek-AI 2024 (DeepSeek-V3 technical report), Section 4.2: 61 layers, hidden 7,168,
    # 128 heads, 256 routed experts of FFN 2,048 + 1 shared, top-8, the first 3 layers dense
    # (FFN 18,432), vocabulary 129,280. "-like": parc's generated job has no multi-head latent
    # attention (MLA, E0605), so attention is modelled as GQA with 128 query heads of 128 and 8 KV
    # heads (236 M projection weights per layer against MLA's 187 M); the MoE part, which holds 98 %
    # of the 671 B parameters, is exact. RoPE base 10,000 and rms_norm_eps 1e-6: the released
    # config.json (`rope_theta`, `rms_norm_eps`; its YaRN context extension is a later stage, not
    # modelled).
    "deepseek-v3-like": dict(
        layers=61, hidden=7168, ffn=18432, heads=128, kv_heads=8, head_dim=128, vocab=129280,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope", norm_eps=1e-6,
        experts=256, top_k=8, expert_ffn=2048, shared_experts=1, moe_layers=("from", 3),
    ),
    # DeepSeek-V3 itself, with its MLA (report section 4.2, config.json: KV latent 512, query
    # latent 1,536, 64 decoupled RoPE dims, values of 128): 671.0 B parameters, 37.6 B active, as
    # the report's abstract counts them (without its multi-token-prediction module). For `target
    # megatron`, which builds MLA; parc's own job refuses it (E0605).
    "deepseek-v3": dict(
        layers=61, hidden=7168, ffn=18432, heads=128, head_dim=128, vocab=129280,
        kv_lora_rank=512, q_lora_rank=1536, rope_head_dim=64, v_head_dim=128,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope", norm_eps=1e-6,
        experts=256, top_k=8, expert_ffn=2048, shared_experts=1, moe_layers=("from", 3),
    ),
    # Tiny models for the CPU end-to-end tests: every feature (GQA, SwiGLU, RMSNorm), 8 layers
    # so that pp 4 with 2 virtual stages divides them.
    "tiny": dict(
        layers=8, hidden=64, ffn=128, heads=4, kv_heads=2, vocab=256,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope",
    ),
    "tiny-moe": dict(
        layers=4, hidden=64, ffn=128, heads=4, kv_heads=2, vocab=256,
        tied_embeddings=False, activation="swiglu", norm="rmsnorm", position="rope",
        experts=4, top_k=2, expert_ffn=64, shared_experts=0, moe_layers="all",
    ),
}

ALIASES: dict[str, str] = {
    "gpt3": "gpt3-175b",
    "gpt-3": "gpt3-175b",
    "gpt-3-175b": "gpt3-175b",
    "gpt-1t": "megatron-1t",
    "llama-3-8b": "llama3-8b",
    "llama-3-70b": "llama3-70b",
    "llama-3-405b": "llama3-405b",
    "mixtral": "mixtral-8x7b",
}
