"""Activations saved for backward, per layer and per micro-batch, from the exact shapes.

torch runtime (what parc generates). Counted tensor by tensor from what autograd saves, and
checked against the measured bytes of `../shared/torch-cpu.md` section 3.8 (pre-LN GELU block,
exact to the byte on CPU; see tests/test_memory.py). Per token on one rank, with t = tp, and
h/t where sequence parallelism shards a tensor along the sequence ("h/sp"):

| tensor | elements | saved by |
|---|---|---|
| norm inputs (2) | h/sp each | the norms' backward |
| norm outputs (2) | h each | Q/K/V and FFN input projections: torch's sequence parallelism saves the all-gathered tensor, Megatron the sharded one |
| q, k, v | (q + 2 kv)/t | flash-style SDPA (k, v replicated when tp does not divide kv heads) |
| attention output | q/t | SDPA and the output projection (one storage) |
| logsumexp | heads/t, fp32 | SDPA: no s x s scores are stored (flash-style kernel) |
| FFN inside | 4 F/t (SwiGLU: w1 out, silu out, w3 out, product) or 2 F/t (GELU: in, out) | the activation function, the product, w2 |
| norm statistics | 1 (RMSNorm) or 2 (LayerNorm) per norm, fp32, /sp | the norms |

No dropout (none of the modelled models uses it). Context parallelism divides the tokens by cp;
the all-gather flavour saves the gathered K and V (cp x the local ones); all-to-all (Ulysses)
saves the attention output twice (before and after the reverse all-to-all). A MoE layer replaces
the FFN with: router probabilities (fp32, E per token) and top-k indices, the k routed copies of
each token (dispatched input and expert output), the experts' insides (as a dense FFN of size
expert_ffn, per routed copy), and the shared experts as a dense FFN. Routing is assumed balanced:
each rank's experts receive top_k copies of as many tokens as the rank routes.

Recomputation (the contract the generated runtime implements):
- selective: an op-level policy (torch.utils.checkpoint's selective checkpointing) that saves the
  block input, q/k/v, the attention output and logsumexp, and the FFN's up-projection outputs
  (plus, in MoE layers, router outputs, dispatched tokens and expert outputs, which would cost an
  all-to-all to recompute); norms, RoPE, activation functions and the output projections are
  recomputed;
- full: only the block input (h/sp per token).

megatron runtime: Korthikanti et al. 2022, Table 2, generalised to an FFN of size F as in
`../shared/calibration/conventions.md` (16-bit activations, dropout, no flash attention, MHA).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .inputs import Knobs, Shape
from .parameters import kv_split

ACT = 2
"""Bytes of an activation element: bf16/fp16; fp8 training keeps activations in bf16 (torchao's
float8 linear saves its high-precision inputs)."""
FP32 = 4
INDEX = 8
"""int64 token ids and top-k indices."""


@dataclass(frozen=True, slots=True)
class LayerActivations:
    """Bytes of one layer for one micro-batch on one rank."""

    saved: int
    """Held from the layer's forward to its backward, under the recompute mode in force."""
    full: int
    """What the layer saves without recomputation (rematerialised during its backward)."""
    weight_grads: int
    """Output gradients a zero-bubble schedule keeps from the input backward (I) to the weight
    backward (W)."""
    working: int
    """Activation gradients alive during the layer's backward."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts and per-token widths on one rank, shared by the torch formulas."""

    tokens: float
    """Tokens of one micro-batch on this rank: seq x micro-batch / cp."""
    routed: float
    """Tokens this rank routes in a MoE layer (sequence-sharded under sequence parallelism)."""
    sp: int
    q: float
    kv: float
    """Elements per token of K (or V) saved by attention on this rank."""
    o: float
    heads: float


def _tokens(shape: Shape, k: Knobs) -> Tokens:
    t = k.tp
    sp = t if k.sp else 1
    tokens = k.seq * k.micro_batch / k.cp
    kv = shape.kv / t if kv_split(shape, t) else shape.kv
    o = shape.q / t
    if k.cp > 1 and k.cp_flavour == "all-gather":
        kv_saved = kv * k.cp  # the gathered K and V, the whole sequence
    elif k.cp > 1 and k.cp_flavour == "all-to-all":
        kv_saved = max(shape.head_dim, kv / k.cp) * k.cp  # kv heads replicated when cp exceeds them
        o = 2 * o
    else:
        kv_saved = kv
    return Tokens(tokens=tokens, routed=tokens / sp, sp=sp, q=shape.q / t, kv=kv_saved, o=o,
                  heads=shape.heads / t)


def torch_layer(shape: Shape, k: Knobs, moe: bool, mode: str, act: int = 2, stat: int = 4) -> LayerActivations:
    """The torch formulas; `act` and `stat` (bytes of an activation and of a norm statistic) are
    parameters so that tests can check the fp32 measurements of torch-cpu.md section 3.8."""
    ACT = act  # noqa: N806 - the same name as the module constant, locally overridable
    n = _tokens(shape, k)
    h, t, m = shape.hidden, k.tp, shape.ffn_matrices
    inside = 2 * (m - 1)  # FFN tensors saved per inner element: 4 SwiGLU, 2 GELU
    up = m - 1  # up-projection outputs: 2 SwiGLU (w1, w3), 1 GELU
    stats = (2 if shape.layernorm else 1) * 2 * stat / n.sp
    lse = n.heads * FP32
    attention_full = ACT * (h / n.sp + h + n.q + 2 * n.kv + n.o) + lse
    attention_sel = ACT * (h / n.sp + n.q + 2 * n.kv + shape.q / t) + lse
    grads_attn = ACT * (n.q + 2 * n.kv + h + h / n.sp)  # q/k/v and output-projection outputs, norm1
    if moe:
        e, topk, fe, shared = shape.experts, shape.top_k, shape.expert_ffn, shape.shared_experts
        routed = n.routed
        router = routed * (e * FP32 + topk * (INDEX + FP32))  # probabilities, indices, gates
        moe_in = ACT * (routed * h + (n.tokens * h if shared and k.sp else 0))
        experts_full = ACT * routed * topk * (2 * h + inside * fe)
        experts_sel = ACT * routed * topk * (2 * h + up * fe)
        shared_full = ACT * n.tokens * inside * shared * fe / t
        shared_sel = ACT * n.tokens * up * shared * fe / t
        ffn_full = ACT * n.tokens * h / n.sp + moe_in + router + experts_full + shared_full
        ffn_sel = router + experts_sel + shared_sel
        grads_ffn = ACT * (routed * topk * (up * fe + h) + n.tokens * (up * shared * fe / t + h)) \
            + routed * e * FP32
        working = ACT * (routed * topk * (h + m * fe) + n.tokens * (h + m * shared * fe / t))
    else:
        ffn_full = ACT * (h / n.sp + h + inside * shape.ffn / t)
        ffn_sel = ACT * up * shape.ffn / t
        grads_ffn = ACT * (up * shape.ffn / t + h + h / n.sp)
        working = ACT * n.tokens * (h + m * shape.ffn / t)
        ffn_full, ffn_sel, grads_ffn = (x * n.tokens for x in (ffn_full, ffn_sel, grads_ffn))
    per_token_full = attention_full + stats
    full = n.tokens * per_token_full + ffn_full
    if mode == "none":
        saved = full
    elif mode == "selective":
        saved = n.tokens * attention_sel + ffn_sel
    else:  # full recomputation: the block input only
        saved = n.tokens * ACT * h / n.sp
    weight_grads = n.tokens * grads_attn + grads_ffn
    return LayerActivations(saved=round(saved), full=round(full), weight_grads=round(weight_grads),
                            working=round(working))


def _megatron_layer(shape: Shape, k: Knobs, moe: bool, mode: str) -> LayerActivations:
    """Korthikanti et al. 2022 (bytes, 16-bit, with dropout, no flash attention), per layer."""
    t, h = k.tp, shape.hidden
    tokens = k.seq * k.micro_batch / k.cp
    ffn = shape.ffn if not moe else shape.top_k * shape.expert_ffn + shape.shared_experts * shape.expert_ffn
    scores = 5 * shape.heads * k.seq * tokens / t
    if k.sp:
        body = tokens * (18 * h + 4 * ffn) / t
    else:
        body = tokens * (10 * h + (8 * h + 4 * ffn) / t)
    full = body + scores
    if mode == "none":
        saved = full
    elif mode == "selective":
        saved = body
    else:
        saved = 2 * tokens * h / (t if k.sp else 1)
    return LayerActivations(saved=round(saved), full=round(full), weight_grads=0, working=0)


@lru_cache(maxsize=16384)
def layer_activations(shape: Shape, k: Knobs, moe: bool, mode: str) -> LayerActivations:
    """One layer, one micro-batch, one rank. `mode` is none, selective or full."""
    if k.runtime == "torch":
        return torch_layer(shape, k, moe, mode)
    return _megatron_layer(shape, k, moe, mode)


@lru_cache(maxsize=4096)
def embedding_activations(shape: Shape, k: Knobs) -> int:
    """The first chunk: token ids (Megatron also a 1-byte dropout mask of the embedding output)."""
    tokens = k.seq * k.micro_batch / k.cp
    if k.runtime == "torch":
        return round(tokens * INDEX)
    return round((INDEX * tokens + tokens * shape.hidden) / k.tp)


@lru_cache(maxsize=4096)
def output_activations(shape: Shape, k: Knobs, vocab: int) -> int:
    """The last chunk: final norm, its output and the fp32 log-softmax of the vocab-parallel loss."""
    tokens = k.seq * k.micro_batch / k.cp
    h, t = shape.hidden, k.tp
    if k.runtime == "torch":
        sp = t if k.sp else 1
        stats = (2 if shape.layernorm else 1) * FP32 / sp
        return round(tokens * (ACT * (h / sp + h) + stats + FP32 * vocab / t))
    return round(4 * tokens * (h + vocab) / t)  # Megatron: "inputs to output layer and CE loss"


@lru_cache(maxsize=4096)
def logits_buffer(k: Knobs, vocab: int) -> int:
    """Transient beyond the saved log-softmax: the bf16 logits and the fp32 gradient of the loss
    input during the loss backward (torch only; Megatron's formula has no transient terms)."""
    if k.runtime != "torch":
        return 0
    tokens = k.seq * k.micro_batch / k.cp
    return round(tokens * vocab / k.tp * (ACT + FP32))
