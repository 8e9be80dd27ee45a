"""FLOPs of a decoder-only transformer, counted from its exact shapes.

One place defines how much arithmetic a token costs, so the time model, MFU and HFU agree with
each other. A multiply-add is 2 FLOPs. Only matrix products are counted (norms, activations and
softmax are memory-bound work that the time model charges by bytes, not FLOPs). Per token and
per layer, forward:

- attention projections: Q, K, V and output, `2 h (q + 2 kv) + 2 q h`, with q = heads x head_dim
  and kv = kv_heads x head_dim (GQA); under multi-head latent attention its down and up
  projections and the output, 2 FLOPs per weight (`latent.mla_linears`);
- attention core: Q K^T and P V, `4 q c` for a query that attends to c keys (MLA: `2 heads
  (qk + v) c`, its query/key and value head dims); causal attention
  over s tokens attends to s / 2 keys on average (the PaLM and Llama 3 convention); a layer with
  a sliding window of W attends to s / 2 less the keys the window drops (`windowed_keys`);
- dense FFN: `2 h F` per weight matrix, 3 matrices for SwiGLU and 2 for GELU;
- MoE FFN: the router `2 h E` plus `top_k + shared` experts of size `expert_ffn`;
- logits: `2 h V` once per token (the input embedding is a lookup, not a product);
- multi-token prediction: each module's transformer layer counts as a layer of the last layer's
  kind, plus its `2 (2h) h` projection and another `2 h V` of logits (`mtp_flops`).

Backward costs twice the forward (one product for the input gradient, one for the weight
gradient), so a training step costs 3x forward. These functions take numbers (the memory model's
`Shape`), never a pydantic object, because search evaluates them ~10^5 times a second.
"""

from __future__ import annotations

from .memory.inputs import Shape
from .memory.parameters import attention_linears

# `Shape` is the memory model's bundle of numbers (`parc.memory.inputs`): one description of the
# model shared by the memory model, the time model and search.


def moe_count(shape: Shape) -> int:
    return sum(shape.moe)


def dense_count(shape: Shape) -> int:
    return shape.layers - moe_count(shape)


# --- forward FLOPs of one token through one piece ---------------------------------------------

def attention_projection_flops(shape: Shape) -> int:
    """The projections' products for one token: Q, K, V and the output, or multi-head latent
    attention's down and up projections (`latent.mla_linears`) and its output."""
    if shape.mla:
        return 2 * sum(w.weights for w in attention_linears(shape))
    return 2 * shape.hidden * (shape.q + 2 * shape.kv) + 2 * shape.q * shape.hidden


def attention_core_flops(shape: Shape, keys: float) -> float:
    """Q K^T and P V for one query token attending to `keys` keys: `score_flops` per head and
    key (4 head_dim; MLA's queries and keys are `head_dim + rope_dim` wide, its values `v_dim`)."""
    return float(shape.heads * shape.score_flops) * keys


FLASH_BACKWARD = 2.5
"""Attention core FLOPs executed backward per forward FLOP under FlashAttention: the backward
runs 5 matrix products to the forward's 2 (it recomputes the scores rather than storing them;
Dao 2023, FlashAttention-2, Section 3.1.2). The kernel benchmarks the time model's attention
curves are fitted on count their backward FLOPs the same way."""


def causal_keys(seq: int) -> float:
    """Average keys per query under a causal mask: s / 2 (PaLM, Llama 3)."""
    return seq / 2.0


def window_dropped_entries(seq: int, window: int) -> int:
    """Score entries a window of `window` removes from a causal (seq x seq) square. Query i
    (0-based) has i + 1 causal keys and min(i + 1, W) windowed ones, so the window drops
    sum_i max(0, i + 1 - W) = (s - W)(s - W + 1) / 2 for s >= W, none otherwise. The windowed
    square then holds s (s + 1) / 2 - that = s W - W (W - 1) / 2 entries (s >= W)."""
    if window <= 0 or window >= seq:
        return 0
    return (seq - window) * (seq - window + 1) // 2


def windowed_keys(seq: int, window: int) -> float:
    """Average keys per query of a causal layer with a sliding window: the causal convention's
    s / 2 (`causal_keys`) less the entries the window drops, per query. Exactly `causal_keys`
    for W >= s; for s >> W it tends to W (each query attends to W keys)."""
    return causal_keys(seq) - window_dropped_entries(seq, window) / seq


def layer_keys(shape: Shape, layer: int, seq: int) -> float:
    """Average keys per query of one layer: windowed if the model windows that layer."""
    if shape.windowed and shape.windowed[layer]:
        return windowed_keys(seq, shape.window)
    return causal_keys(seq)


def attention_keys(shape: Shape, seq: int) -> float:
    """Average keys per query over the model's layers. The attention core is linear in the keys,
    so `layers x attention_core_flops(shape, attention_keys)` is exactly the sum over the layers;
    with no window it is `causal_keys`."""
    windowed = sum(shape.windowed)
    if not windowed:
        return causal_keys(seq)
    return ((shape.layers - windowed) * causal_keys(seq) + windowed * windowed_keys(seq, shape.window)) / shape.layers


def dense_ffn_flops(shape: Shape) -> int:
    return 2 * shape.hidden * shape.ffn * shape.ffn_matrices


def router_flops(shape: Shape) -> int:
    return 2 * shape.hidden * shape.experts


def expert_flops(shape: Shape) -> int:
    """One expert applied to one token."""
    return 2 * shape.hidden * shape.expert_ffn * shape.ffn_matrices


def moe_ffn_flops(shape: Shape) -> int:
    return router_flops(shape) + (shape.top_k + shape.shared_experts) * expert_flops(shape)


def logits_flops(shape: Shape) -> int:
    return 2 * shape.hidden * shape.vocab


def mtp_flops(shape: Shape) -> int:
    """One token through the multi-token prediction modules beyond their transformer layers
    (which count as layers): each module's 2h -> h projection and its pass through the shared
    output layer."""
    return shape.mtp * (2 * 2 * shape.hidden * shape.hidden + logits_flops(shape))


def layer_forward_flops(shape: Shape, moe: bool, keys: float) -> float:
    ffn = moe_ffn_flops(shape) if moe else dense_ffn_flops(shape)
    return attention_projection_flops(shape) + attention_core_flops(shape, keys) + ffn


def forward_flops_per_token(shape: Shape, keys: float) -> float:
    """Every layer plus the logits, for a token attending to `keys` keys."""
    per_layer = (dense_count(shape) * layer_forward_flops(shape, False, keys)
                 + moe_count(shape) * layer_forward_flops(shape, True, keys))
    return per_layer + logits_flops(shape) + mtp_flops(shape)


def model_flops_per_token(shape: Shape, seq: int) -> float:
    """Training FLOPs per token in the PaLM / Llama 3 MFU convention: 3x forward, causal
    attention, no recomputation. Equals `6 N + 6 L q s` with N the parameters that take part in a
    matrix product (active experts, the output layer; not the embedding lookup or the norms).
    Under a sliding window the windowed layers count their windowed keys (`attention_keys`): the
    model FLOPs are those the model needs, and a windowed layer needs no key outside its window
    (the PaLM definition: the FLOPs of the model's forward and backward, not of a kernel).
    Megatron-LM's `num_floating_point_operations` (megatron/training/training.py, read at
    001b00c) does not: its core-attention term is `seq_length / 2` on every layer whatever
    `window_size` says, so a Megatron log's TFLOP/s for a windowed model counts full causal
    attention and reads higher than parc's MFU for the same speed."""
    return 3.0 * forward_flops_per_token(shape, attention_keys(shape, seq))


def matmul_parameters(shape: Shape) -> int:
    """Active parameters that multiply a token (the N of `6 N`)."""
    per_dense = attention_projection_flops(shape) // 2 + dense_ffn_flops(shape) // 2
    per_moe = attention_projection_flops(shape) // 2 + moe_ffn_flops(shape) // 2
    return dense_count(shape) * per_dense + moe_count(shape) * per_moe + (logits_flops(shape) + mtp_flops(shape)) // 2
