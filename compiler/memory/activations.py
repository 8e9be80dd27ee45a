"""Activations saved for backward, per layer and per micro-batch, from the exact shapes.

torch runtime (what parc generates). Counted tensor by tensor from what autograd saves, checked
against the bytes the generated runtime saves on CPU (tests/e2e/test_memory_real.py meters them
with saved_tensors_hooks: every layer to the byte, MoE layers on average over the ranks) and
against the closed forms of `docs/torch-cpu.md` section 3.8 (tests/test_memory.py). Per token
on one rank, with t = tp, and h/t where sequence parallelism shards a tensor along the sequence
("h/sp"):

| tensor | elements | saved by |
|---|---|---|
| norm inputs (2) | h/sp each | the norms' backward |
| norm outputs (2) | h each | Q/K/V and FFN input projections: torch's sequence parallelism saves the all-gathered tensor, Megatron the sharded one |
| q, k, v | (q + 2 kv)/t | flash-style SDPA (k, v replicated when tp does not divide kv heads) |
| attention output | q/t | SDPA, and the output projection: the same storage, or with RoPE a copy (q/t more) |
| logsumexp | heads/t, fp32 | SDPA: no s x s scores are stored (flash-style kernel) |
| FFN inside | 4 F/t (SwiGLU: w1 out, silu out, w3 out, product) or 2 F/t (GELU: in, out) | the activation function, the product, w2 |
| norm statistics | 1 (RMSNorm) or 2 (LayerNorm) per norm, fp32, /sp | the norms |

Per layer, whatever the batch: RoPE's cos and sin tables (fp32, seq/cp x head_dim/2, one pair
per rotation of q and of k). On CPU RMSNorm is not fused and also keeps x x rstd (h/sp per norm;
`Knobs.device`). No dropout (none of the modelled models uses it). Context parallelism divides
the tokens by cp; the all-gather flavour saves the gathered K and V (cp x the local ones),
except under selective recomputation, which keeps the local ones and gathers again;
all-to-all (Ulysses) saves the attention output twice (before and after the reverse all-to-all);
the ring keeps only its own K/V (`_attention`). A MoE layer replaces the FFN with: its (gathered)
input, the router's fp32 probabilities, top-k indices and gates, and per routed copy the
expert's input rows, insides (as a dense FFN of size expert_ffn), returned output and gated
product, an fp32 gate weight and int64 indices (`torch_layer`); the shared experts as a dense
FFN. Routing is assumed balanced: each rank's experts receive top_k copies of as many tokens as
the rank routes (its tp rank's share: each tp rank routes its own tokens), times the capacity
factor when that is under 1.

Recomputation (the contract the generated runtime implements):
- selective: an op-level policy (torch.utils.checkpoint's selective checkpointing) that saves the
  block input, q/k/v, the attention output and logsumexp, and the FFN's up-projection outputs
  (plus, in MoE layers, the router's and experts' matmul outputs and the tokens the all-to-alls
  bring, which would cost an all-to-all to recompute); norms, RoPE, activation functions and the
  output projections are recomputed;
- full: only the block input (h/sp per token).

megatron runtime: Megatron-Core's layer on Transformer Engine's modules, tensor by tensor as
Korthikanti et al. 2022 (Table 2) count it, with the widths of the model rather than their
h-wide, GeLU-FFN case (`_megatron_layer`): per token, bytes, t = tp, a part "/sp" where
sequence parallelism shards it along the sequence:

| tensor | bytes | saved by |
|---|---|---|
| norm inputs (2) | 2 h/sp each | the norms' backward (TE's LayerNormLinear) |
| norm outputs (2) | 2 h/sp each (fp8: 1) | the QKV and fc1 GEMMs' weight gradients |
| q, k, v | 2 (q + 2 kv)/t | the fused attention kernel |
| attention output | 2 q/t | the kernel, and the output projection (one tensor; fp8: and its 1-byte quantized copy) |
| fc1 output | 2 (m - 1) F/t | the activation function (SwiGLU's is 2F wide) |
| fc2 input | 2 F/t (fp8: 1) | fc2's weight gradient |
| scores | 5 heads x seq/t (unfused), or the fp32 log-sum-exp, 4 heads/t (megatron-flash) | softmax, dropout |
| MoE: routed copies | 2 k h/t (fp8: 1) | the experts' fc1 (the dispatched tokens) |

m = 2 (GeLU) or 3 (SwiGLU) matrices; a MoE layer counts its routed copies' and shared experts'
FFN width as F, and its second norm's output is the router's input, kept in bf16 under fp8 too
(with a 1-byte copy for the shared experts' fc1). Korthikanti's 34 s b h (18 h + 4 F with F = 4 h)
is this table for MHA and GeLU plus two dropout masks of h bytes: there are none, as the models
parc states have no dropout and its Megatron launcher sets `--hidden-dropout 0` (Megatron-LM's
default is 0.1). Under fp8, Transformer Engine's linears keep their inputs for the weight gradient
as the quantized tensors they cast, one byte an element (`_megatron_layer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..latent import latent_norm_widths
from .inputs import ELEMENT_BYTES, Knobs, Shape, keeps_original_input
from .parameters import attention_linears, ffn_params, kv_split

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
    """Activation gradients alive during the layer's backward, all of them at once (a bound the
    moments below refine)."""
    moments: tuple[int, ...] = ()
    """The layer's backward, moment by moment (`backward_moments`): bytes alive then of this
    micro-batch's own layer tensors, the activation gradients and the compute-dtype weight
    gradients written so far (dense layers: `backward_moments`; MoE layers:
    `moe_backward_moments`). Empty (Megatron's formulas): `working` and `full` bound it
    (`buffers.backward_working_set`)."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts and per-token widths on one rank, shared by the torch formulas."""

    tokens: float
    """Tokens of one micro-batch on this rank: seq x micro-batch / cp."""
    routed: float
    """Tokens this rank routes in a MoE layer: its tp rank's share of the micro-batch (with
    sequence parallelism the shard it holds, without it the runtime slices one)."""
    sp: int
    q: float
    kv: float
    """Elements per token of K (or V) saved by attention on this rank."""
    o: float
    heads: float


def activation_bytes(precision: str) -> int:
    """Bytes of a saved activation element: 2 (bf16; fp8 training keeps activations in bf16), 4
    when the runtime computes in fp32."""
    return FP32 if precision == "fp32" else ACT


def _tokens(shape: Shape, k: Knobs) -> Tokens:
    t = k.tp
    sp = t if k.sp else 1
    tokens = k.seq * k.micro_batch / k.cp
    kv = shape.kv / t if kv_split(shape, t) else shape.kv
    o = shape.o / t
    if k.torchtitan_block:
        kv_saved = o  # torchtitan repeats K and V to every query head; torch's cp saves the local ones
    elif k.cp > 1 and k.cp_flavour == "all-gather":
        kv_saved = kv * k.cp  # the gathered K and V, the whole sequence
    elif k.cp > 1 and k.cp_flavour == "all-to-all":
        kv_saved = max(shape.head_dim, kv / k.cp) * k.cp  # kv heads replicated when cp exceeds them
        o = 2 * o
    else:
        kv_saved = kv
    return Tokens(tokens=tokens, routed=tokens / t, sp=sp, q=shape.q / t, kv=kv_saved, o=o, heads=shape.heads / t)


def _attention(shape: Shape, k: Knobs, n: Tokens, act: int) -> tuple[float, float, float]:
    """(saved per token without recomputation, saved per token under the selective policy,
    saved per layer whatever the tokens) of the attention after the first norm's output.

    Every flavour (no cp, ring, all-gather, all-to-all) runs the fused kernel blockwise and keeps
    flash-style q, k, v, the merged output and its fp32 log-sum-exp, never scores (the runtime's
    `block_attention` / `ring_attention` operators; the ring's K/V blocks and their merges are
    transients, gone when the forward returns, and selective recomputation keeps the operator's
    two outputs, not its blocks'). With RoPE the output projection saves a contiguous copy of
    the output (rotary q is a fresh (batch, heads, seq, dim) tensor and attention's output
    follows its layout), and each layer keeps the cos/sin tables of the two rotations (fp32,
    seq/cp x head_dim/2 each, twice)."""
    c = k.cp
    rotated = shape.rope_dim if shape.mla else shape.head_dim  # MLA turns its decoupled RoPE dims only
    tables = 2 * (k.seq / c) * rotated * FP32 if shape.rope else 0
    copy = n.o if shape.rope and not (c > 1 and k.cp_flavour == "all-to-all") else 0
    lse = n.heads * FP32
    full = act * (n.q + 2 * n.kv + n.o + copy) + lse
    # selective recomputation keeps the K and V projections' outputs (matmuls) and re-gathers
    # them in the backward: the all-gather flavour's gathered copies are not kept (measured by
    # the rehearsal at Llama 3 405B's 128K layout: its activations equal the 8K layout's)
    kv_kept = n.kv / c if c > 1 and k.cp_flavour == "all-gather" else n.kv
    if k.torchtitan_block:  # the K and V projections' outputs, before torchtitan repeats them
        kv_kept = shape.kv / k.tp if kv_split(shape, k.tp) else shape.kv
    selective = act * (n.q + 2 * kv_kept + shape.o / k.tp) + lse
    return full, selective, tables


def moe_weight_grads(act: float, kept: float, routed: float, tokens: float, sp: float, h: int, up: int,
                     fe: int, shared: float, experts: int) -> float:
    """The output gradients an MoE FFN keeps from a zero-bubble input pass to its weight pass
    (`LayerActivations.weight_grads`' FFN share), per micro-batch on one rank, each in the dtype
    the weight's matmul ran in (`act` bytes):

    - the routed experts' up-projection outputs (`up` x `fe` per kept copy) and their
      down-projection outputs (h per kept copy);
    - the shared experts' up-projection outputs (`up` x `fe` x `shared` per token) and the
      FFN's output (h per token: the layer's output gradient);
    - the router's linear output, `experts` per routed token in the compute dtype: the job
      computes `F.linear(x, w).float().softmax(-1)`, and the fp32 softmax gradient is cast back
      by `.float()`'s backward before the linear's weight takes it (it was counted in fp32);
    - the FFN norm's output gradient, h / sp per token, which the norm's weight needs, as in a
      dense layer (it was missing).

    Traced at DeepSeek's rank 2047 (rehearse-deepseek-32, DualPipe-V's turn: 8 micro-batches
    pending on each of stages 15 and 16 at the peak, inside a weight pass): per pending
    micro-batch and layer the tracker holds the index_put (kept x h), the experts' SiLU and
    product gradients, the shared experts' two, the FFN norm's fp32 gradient (two boundary
    tensors on CPU: the bf16 one this term counts, and `split_pending`'s composite copy) and a
    (tokens, experts) bf16 router gradient. The model had 113,246,208 bytes a micro-batch
    fewer over the two layers (906 MB over 8): hidden, before, behind two receive buffers the
    model put at every moment (docs/memory-model.md, "Moments by chunk")."""
    return act * (kept * (up * fe + h) + tokens * (up * shared * fe + h + h / sp) + routed * experts)


def torch_layer(shape: Shape, k: Knobs, moe: bool, mode: str, act: int | None = None, stat: int = 4) -> LayerActivations:
    """The torch formulas; `act` and `stat` (bytes of an activation and of a norm statistic)
    default to the knobs' precision and fp32 (tests pass them to check torch-cpu.md's closed forms).

    On CPU (`k.device == "cpu"`) RMSNorm is not fused (torch 2.13 has a fused kernel for CUDA
    only): its composite also keeps the normalised x x rstd, h/sp per token per norm."""
    ACT = act if act is not None else activation_bytes(k.precision)  # noqa: N806 - the module constant, per call
    n = _tokens(shape, k)
    h, t, m = shape.hidden, k.tp, shape.ffn_matrices
    inside = 2 * (m - 1)  # FFN tensors saved per inner element: 4 SwiGLU, 2 GELU
    up = m - 1  # up-projection outputs: 2 SwiGLU (w1, w3), 1 GELU
    stats = (2 if shape.layernorm else 1) * 2 * stat / n.sp
    unfused = h / n.sp if k.device == "cpu" and not shape.layernorm else 0
    norm = ACT * (h / n.sp + unfused)  # a norm's input (and, on CPU, its normalised input)
    attention, attention_kept, tables = _attention(shape, k, n, ACT)
    attention_full = norm + ACT * h + attention  # the norm's (gathered) output feeds Q, K and V
    attention_sel = ACT * h / n.sp + attention_kept  # the block input, kept by the checkpoint
    grads_attn = ACT * (n.q + 2 * n.kv + h + h / n.sp)  # q/k/v and output-projection outputs, norm1
    if moe:
        e, topk, fe, shared = shape.experts, shape.top_k, shape.expert_ffn, shape.shared_experts
        routed = n.routed
        copies = routed * topk  # sent, and received when routing is balanced
        # a capacity factor under 1 drops copies even when routing is balanced
        kept = copies * min(1.0, shape.capacity_factor) if shape.capacity_factor else copies
        exchanged = k.ep > 1  # tokens travel by all-to-all (kept outputs under selective)
        # softmax probabilities, top-k indices and gates (and their sum, to renormalise them)
        router = routed * (e * FP32 + topk * (INDEX + FP32) + (FP32 if topk > 1 else 0))
        indices = copies * INDEX * (4 if exchanged else 2)  # token and order; the dispatcher's two
        # the experts' input rows: without ep, views of the gathered copies (dropped ones too)
        rows = kept if exchanged else copies
        # per copy: the expert's insides, the returned output and its gated product
        experts_full = ACT * rows * h + kept * (ACT * (2 * h + inside * fe) + FP32) + indices
        # per copy: the experts' up- and down-projection outputs, the two all-to-alls' outputs
        experts_sel = ACT * kept * (up * fe + h + (2 * h if exchanged else 0))
        shared_full = ACT * n.tokens * inside * shared * fe / t
        shared_sel = ACT * n.tokens * up * shared * fe / t
        # the normalised input: the routed share, kept by the router and experts, and the whole
        # (gathered) input the tp-split shared experts keep
        moe_in = ACT * h * (routed + (n.tokens if shared and t > 1 else 0))
        ffn_full = n.tokens * norm + moe_in + router + experts_full + shared_full
        ffn_sel = ACT * routed * e + experts_sel + shared_sel  # the router's matmul output
        # the router's output gradient is the bf16 linear's (its fp32 softmax's gradient is cast
        # back by `.float()`'s backward); the FFN norm's output gradient (h / sp per token) is kept
        # for its weight as in a dense layer (`moe_weight_grads`)
        grads_ffn = moe_weight_grads(ACT, kept, routed, n.tokens, n.sp, h, up, fe, shared / t, e)
        working = ACT * (kept * (h + m * fe) + n.tokens * (h + m * shared * fe / t))
    else:
        ffn_full = norm + ACT * (h + inside * shape.ffn / t)
        ffn_sel = ACT * up * shape.ffn / t
        grads_ffn = ACT * (up * shape.ffn / t + h + h / n.sp)
        working = ACT * n.tokens * (h + m * shape.ffn / t)
        ffn_full, ffn_sel, grads_ffn = (x * n.tokens for x in (ffn_full, ffn_sel, grads_ffn))
    full = n.tokens * (attention_full + stats) + tables + ffn_full
    if mode == "none":
        saved = full
    elif mode == "selective" and k.torchtitan_block and not moe:
        saved = n.tokens * torchtitan_selective(shape, k, n, ACT)
    elif mode == "selective":
        saved = n.tokens * attention_sel + ffn_sel
    else:  # full recomputation: the block input only
        saved = n.tokens * ACT * h / n.sp
    weight_grads = n.tokens * grads_attn + grads_ffn
    copy = n.o if shape.rope and not (k.cp > 1 and k.cp_flavour == "all-to-all") else 0
    if moe:
        moments = moe_backward_moments(shape, k, n, ACT, MoeSaved(full=full, ffn_full=ffn_full, kept=kept, rows=rows,
                                                                  shared_inner=shared_full),
                                       ACT * n.tokens * copy)
    else:
        moments = backward_moments(shape, k, n, ACT, full, ffn_full, ACT * n.tokens * copy)
    return LayerActivations(saved=round(saved), full=round(full), weight_grads=round(weight_grads),
                            working=round(working), moments=moments)


def backward_moments(shape: Shape, k: Knobs, n: Tokens, act: int, full: float, ffn_full: float,
                     copy_bytes: float) -> tuple[int, ...]:
    """A dense layer's backward for one micro-batch, at the three moments that can be its worst
    (backward order), each the bytes alive then of the micro-batch's own layer tensors, the
    activation gradients and the compute-dtype weight gradients written so far (autograd writes
    each in the dtype it computed in, FSDP2's unsharded bf16 parameters, and FSDP2 folds them
    into its fp32 accumulation or reduction only in the layer's post-backward hook: measured by
    the rehearsal at Llama 3 405B's widths, w1, w2 and w3's three 218 MB gradients).

    Whatever the recompute mode, the layer's whole forward set (`full`) is alive when its
    backward starts: saved (mode none), or rematerialised at the first unpack, the selective
    policy's kept tensors being the same storage (torch.utils.checkpoint returns the cached
    outputs). Autograd then frees each tensor once the node that reads it has run (saved
    variables are released after the node; a checkpoint's recomputed tensors once unpacked,
    its "Rule 4"), so the set shrinks in backward order while gradients appear:

    - the down projection's backward (w2): nothing freed yet; the output gradient all-gathered
      over the sequence (h per token) and the gradient of its input (F/t);
    - the up projections' backward (w1, w3), as the last of them (w1: autograd runs the node
      created last first, w3) computes its input gradient: the FFN's inner tensors are consumed
      (4 F/t SwiGLU, 2 F/t GELU: w1 and w3 outputs, the activation's output, the product);
      alive, w1's output gradient (F/t; w3's went with w3's backward) and each up projection's
      gradient of the gathered input, not yet summed (h each: 2 h SwiGLU, h GELU); all the
      FFN's weight gradients are written. Measured at the rehearsed 405B middle stage's peak:
      four h-wide tensors of the whole sequence (the two gathered norm outputs and the two
      input gradients) and one F/t gradient;
    - attention's kernel backward: the FFN's tensors (its norm's input and gathered output
      too) and the output projection's input copy are consumed; alive, the gradients of the
      attention output, q, k and v; the output projection's weight gradient joins the FFN's.

    Through all of them the block's output gradient (h/sp per token) is alive. The difference
    with the old bound (every saved tensor of the micro-batch plus every gradient at once) is
    what the rehearsal measured at the 405B middle stage: the model over by 0.51 GB where the
    up projections' moment says 0.51 GB (docs/memory-model.md, "The backward's moment")."""
    t, h = k.tp, shape.hidden
    m = shape.ffn_matrices
    up = m - 1
    f = shape.ffn / t
    tokens = n.tokens
    residual = act * tokens * h / n.sp
    matrix = act * h * shape.ffn // t  # one FFN weight's gradient on this rank
    down = full + residual + act * tokens * (h + f) + matrix
    inner = act * tokens * 2 * up * f  # w1 (and w3) outputs, the activation's output (and the product)
    upward = full - inner + residual + act * tokens * (f + up * h) + m * matrix
    output_projection = act * shape.o * h // t
    # the kernel's gradients of q, k and v, or torch's context parallelism's whole backward
    kernel = torch_cp_backward_transient(k, n, act) or act * tokens * (n.q + 2 * n.kv)
    attention = full - ffn_full - copy_bytes + residual + act * tokens * n.o + kernel \
        + m * matrix + output_projection
    return (round(down), round(upward), round(attention))


def torchtitan_selective(shape: Shape, k: Knobs, n: Tokens, act: int) -> float:
    """Bytes per token a dense block keeps under torchtitan's per-op selective checkpointing
    (`selective_ac_option = "op"`; torchtitan 9dec370 parallelisms/parallelize_llama.py,
    `_save_list` and `_custom_policy`). The policy saves the outputs of matmuls (`aten.mm`),
    except every second one of the block, of flash attention and of reduce-scatters; everything
    else is recomputed in the backward. The block's matmuls run wqkv (fused,
    `TORCHTITAN_FUSED_QKV`; earlier torchtitan's wq, wk, wv), wo, then w1, w3, w2 (SwiGLU:
    `w2(silu(w1(x)) * w3(x))`, w1 evaluated first) or w1, w2 (GELU), so it keeps wqkv's output
    (q/t + 2 kv; separate: wq's and wv's, q/t + kv), w1's (F/t) and, SwiGLU, w2's (h: the tp
    rank's partial sum, every token); flash attention's output (q/t) and fp32 log-sum-exp
    (heads/t); with sequence parallelism the reduce-scatters after wo and w2 (h/t each); and the
    checkpoint's input (h/sp). parc's own policy keeps q, k, v and w3's output and recomputes w2.

    Float8 linears run `torch._scaled_mm`, not `aten.mm`, and the policy saves the amax's
    `abs` instead; the published float8 rows measure what their bf16 twins do (76.8 vs 77.0 GiB,
    61.8 vs 62.0), so they are counted as bf16 here.

    Eagerly (`compile off`) the policy's cache (`_CachingTorchDispatchMode`) stores the output of
    every op it marks MUST_SAVE, whether or not the backward reads it. Under torch.compile
    (`model_code` "torchtitan-compiled") the policy only tags the joint graph's nodes and the
    partitioner (`min_cut_rematerialization_partition`) saves what the backward needs: the last
    matmul of a SwiGLU block (w2) and, with sequence parallelism, its reduce-scatter feed only
    the residual add, whose backward reads no input, so neither is kept (h + h/t less per token;
    GELU's w2 is the sixth matmul, not saved either way). Measured on CPU by the saved tensors
    of the compiled block (tests/test_torchtitan_memory.py; with sequence parallelism in a fake
    process group of two, `-m long`: wo's reduce-scatter kept, w2's not); at Llama 3 8B's two
    8K sequences that is 4.0 GiB of the 5.4 GiB torchtitan's eager run measured above its
    compiled twin."""
    t, h = k.tp, shape.hidden
    saved, _ = torchtitan_op_split(torchtitan_matmuls(shape, t))
    reduce_scatters = 2 * h / t if k.sp else 0
    kept = sum(out for _, _, out in saved) + shape.o / t + reduce_scatters + h / n.sp
    if k.compiled_block and shape.ffn_matrices == 3:
        kept -= h + (h / t if k.sp else 0)  # w2's output and its reduce-scatter: never read back
    return act * kept + n.heads * FP32


Matmul = tuple[str, float, float]
"""(name, input width, output width) of one of a block's matmuls on a tp rank: per token, its
forward reads `input` and writes `output` elements and runs 2 x input x output FLOPs."""


TORCHTITAN_FUSED_QKV = True
"""Whether torchtitan's attention runs one fused QKV matmul: the one fact both models read for
`target torchtitan` (the memory model's kept outputs, `torchtitan_selective`; the time model's
recomputed matmuls, `timing.torchtitan_op_seconds`). True: the job parc generates is torchtitan
0.3, whose llama3 and qwen3 configs and parc's flavour build `FusedQKVLinear`
(`make_gqa_config(..., fuse_qkv=True)`). The published rows (benchmarks/data/published*.yaml)
ran earlier torchtitan with separate wq, wk, wv (there wk is recomputed and wq, wv kept: kv per
token and layer less kept, and at Llama 3 8B's widths 6 % more recomputed matmul FLOPs); no row
states its layout, so they are read as the generated job runs, and the memory band
(`band.py`) and `eager_efficiency` are measured so."""


def torchtitan_matmuls(shape: Shape, tp: int, fused_qkv: bool = TORCHTITAN_FUSED_QKV,
                       moe: bool = False) -> tuple[Matmul, ...]:
    """A torchtitan block's matmuls in the order its forward runs them, as its per-op
    selective checkpointing counts them (one `aten.mm` per linear layer: a 3-D input's
    `F.linear` is a view, an `aten.mm` and a view; under DTensor tp the policy's dispatch mode
    sees the DTensor's one mm, never the local ones). Attention: one fused `wqkv` when
    `fused_qkv` (torchtitan 0.3's `FusedQKVLinear`, which its llama3 configs and parc's
    generated flavour use: `make_gqa_config(..., fuse_qkv=True)`), else `wq`, `wk`, `wv`
    (torchtitan 9dec370, the version the published memory rows ran); then `wo`. FFN: SwiGLU's
    `w2(silu(w1(x)) * w3(x))` runs w1, w3, w2 (Python evaluates `w1(x)` first); GELU's w1, w2.
    An MoE block (`moe`, torchtitan 0.3 models/common/moe.py) counts only its shared experts'
    FeedForward (w1, w3, w2 at `shared_experts x expert_ffn / tp`) after wo: its router gate is
    forced to recompute without counting (`force_recompute_mm_shapes_by_fqns`, default
    `["moe.router.gate"]`) and its routed experts run `torch._grouped_mm`, which is not on the
    save list: both run again whole (`timing.torchtitan_op_seconds`).
    The one list both models read: the memory model's kept outputs (`torchtitan_selective`) and
    the time model's recomputed matmuls (`timing.layer_work`), so they cannot drift."""
    h = shape.hidden
    q = shape.q / tp
    kv = shape.kv / tp if kv_split(shape, tp) else shape.kv
    f = (shape.shared_experts * shape.expert_ffn if moe else shape.ffn) / tp
    if shape.mla:  # torchtitan's deepseek_v3 attention: its down and up projections, then wo
        attention = [(w.name, *w.local(tp)) for w in attention_linears(shape)]
    else:
        attention = [("wqkv", h, q + 2 * kv)] if fused_qkv else [("wq", h, q), ("wk", h, kv), ("wv", h, kv)]
        attention.append(("wo", shape.o / tp, h))
    ffn = [("w1", h, f), ("w3", h, f), ("w2", f, h)] if shape.ffn_matrices == 3 else [("w1", h, f), ("w2", f, h)]
    return tuple(attention + (ffn if f else []))


def torchtitan_op_split(matmuls: tuple[Matmul, ...]) -> tuple[tuple[Matmul, ...], tuple[Matmul, ...]]:
    """(saved, recomputed) matmuls under torchtitan's per-op policy: `wrapped_policy` (torchtitan
    0.3 distributed/activation_checkpoint.py, `SelectiveAC._wrap_block`; 9dec370's
    `_custom_policy` alike) counts each mm before deciding, a fresh count per block forward
    (`_get_custom_policy()` runs in the context function, once per checkpointed call), and returns
    PREFER_RECOMPUTE when the count is even: the 1st, 3rd, ... are saved, the 2nd, 4th, ...
    recomputed."""
    return matmuls[0::2], matmuls[1::2]


TORCH_CP_BACKWARD_FIXED = 22
"""Local query-sized tensors torch's context-parallel backward holds beside the gathered K and V
(`torch_cp_backward_transient`)."""


def torch_cp_backward_transient(k: Knobs, n: Tokens, act: int) -> float:
    """What torch's context-parallel attention backward allocates at its worst moment, in bytes
    (0 where the layout has no cp or parc's own operators run it). torchtitan calls torch's
    `context_parallel`, whose backward (`_templated_ring_attention_backward`, torch 2.13
    distributed/tensor/experimental/_context_parallel/_attention.py, rotate method allgather)
    runs on K and V repeated to every query head, so every tensor below is a multiple of
    Q = one local query-sized bf16 tensor (b x s/cp x heads/tp x head_dim). While a step's
    kernel runs (from the second step on) it holds:

    - the all-gathered K and V of the whole sequence: 2 cp Q (`_AllGatherRotater`, gathered
      again in the backward, kept to its end);
    - the K/V concatenation sent to the gather: 2 Q (`next_kv`, never released in the loop);
    - the fp32 accumulator of dQ: 2 Q (`convert_to_f32`);
    - dK and dV in fp32 three times over: the accumulators received from the previous rank
      (views of the last all-to-all's output), the concatenation sent on and the all-to-all
      output that will replace them: 3 x 4 Q (`dkv_rotater`, all-to-all);
    - the previous step's kernel gradients dQ, dK, dV, still referenced, and the running
      kernel's new ones: 6 Q.

    2 cp Q + 22 Q in all. torch's own code, run in a fake process group under torch's
    `MemTracker` (tests/test_torch_cp_memory.py), peaks there on every rank at cp 2 and one
    Q more (2 cp + 23) at cp 4 and 8, not traced further (under 4 %). The log-sum-exp terms
    (fp32, heads per token) are left out. The flash kernel's own fp32 dQ accumulator is a GPU
    scratch the CPU cannot show, not counted. On 405B's tp 8 x cp 8 layout at 256K tokens Q is
    128 MiB and the term 4.75 GiB, where parc's own all-gather operator holds 0.25 GiB."""
    if not k.torchtitan_block or k.cp <= 1:
        return 0
    q_bytes = act * n.tokens * n.q
    return (2 * k.cp + TORCH_CP_BACKWARD_FIXED) * q_bytes


@dataclass(frozen=True, slots=True)
class MoeSaved:
    """What a MoE layer's forward leaves for its backward on one rank (`torch_layer`'s terms)."""

    full: float
    """The layer's whole forward set (attention's and the MoE FFN's), bytes."""
    ffn_full: float
    """The MoE FFN's part of it: its norm's input and the normalised input, the router's
    tensors, the experts' rows, insides and returned outputs, the shared experts' insides."""
    kept: float
    """Routed copies this rank's experts compute (received under ep; less those a capacity
    factor drops)."""
    rows: float
    """Rows of the experts' input tensor (every copy without ep: views of the gathered copies)."""
    shared_inner: float
    """Bytes of the shared experts' inner tensors (0 without shared experts)."""


def moe_backward_moments(shape: Shape, k: Knobs, n: Tokens, act: int, s: MoeSaved,
                         copy_bytes: float) -> tuple[int, ...]:
    """A MoE layer's backward for one micro-batch, at the moments that can be its worst (backward
    order), each the bytes alive then of the micro-batch's own layer tensors, the activation
    gradients and the compute-dtype weight gradients written so far: the MoE counterpart of
    `backward_moments` (whose conventions it keeps: the whole forward set `full` alive when the
    layer's backward starts, the block's output gradient alive throughout).

    The generated MoE (model.py: `MoE.route`, `GroupedExperts.forward`) computes
    out = zeros.index_add(token, routed * gates) with routed = experts(x[token]), the experts one
    after the other over their rows (rows @ w1[e], SiLU, rows @ w3[e], product, @ w2[e]), the
    returned rows all-to-all'd back under ep; shared experts, if any, add a dense FFN of x.
    Autograd runs the node created last first, so:

    - the shared experts' backward (created after the routed path): the dense FFN's down and
      up projections' moments (`backward_moments`' first two, at the shared width); afterwards
      their inner tensors are consumed, their weight gradients written, and the gradient of the
      MoE's input (h per routed token, per token of the gathered input under tp) alive;
    - the combine's backward: index_add's gradient of the gated product (index_select) and the
      product's two gradients (the returned rows' and, before autograd sums it over h, the
      gates'): three h-wide tensors per routed copy, the gated product itself gone (index_add
      saves it and releases it once its node has run). The recomputed forward's combine is as
      high, less the shared experts' input gradient: the experts' input rows (their module's
      argument), output, reordered output and returned rows, the gated product not yet made.
      Measured on a small MoE (h 1,024, F 512, 4 local experts of 8, top 4, a shared expert,
      ep 2, 1F1B, full recomputation): both moments 396.0 and 396.1 MB, the rank's peak, where
      this one is 3.1 MB over the tracker's tensors, the CPU composite RMSNorm's fp32 copies
      aside (zero1's hooks drop the shared experts' bf16 weight gradients at once; FSDP2 keeps
      them to the layer's end);
    - each local expert's activation backward, the last expert first: the combine's tensors
      (returned rows, gated product, gates) and this expert's product (consumed by w2's
      backward) are gone; alive, the product's gradient and SiLU's two input gradients (m F
      per row of this expert: 3 for SwiGLU, GELU's 2), the experts' output gradient (h per
      copy, shared by every expert's slice until the last expert's w2 backward has read it),
      the rows' gradients of the experts already done (h per row), and the stacked weight
      gradients of the local experts: w2's alone at the first expert (autograd sums every
      expert's gradient of a stack in one buffer before it reaches the parameter), all m from
      the second on; each expert done frees its inner tensors (inside x F per row);
    - after the experts: the rows' gradient (their slices, and the concatenation) with the
      insides and rows consumed;
    - attention's kernel backward, as a dense layer's, with the MoE's weight gradients
      (router, shared and routed experts) written.

    Measured at Mixtral 8x7B's widths (tests/data/specs/rehearse-mixtral-8.par, rank 0: one
    local expert, 16,384 routed copies, F = 14,336): the tracker's histogram at the peak holds
    the experts' rows, w1's and w3's outputs, SiLU's output, the product's gradient and SiLU's
    two input gradients (six 469,762,048-byte tensors) and w2's 117,440,512-byte stacked
    gradient: the first expert's moment (tests/test_backward_moment.py writes it out)."""
    t, h, m = k.tp, shape.hidden, shape.ffn_matrices
    up = m - 1
    inside = 2 * up
    f = shape.expert_ffn
    local = max(1, shape.experts // k.ep)  # experts on this rank (one when ep exceeds them)
    per = s.kept / local  # rows of each local expert: routing balanced
    stack = act * local * h * f  # one projection's stacked gradient over the local experts
    residual = act * n.tokens * h / n.sp
    base = s.full + residual
    moments = []
    if shape.shared_experts:
        sf = shape.shared_experts * f / t  # the shared experts' inner width per token
        matrix = act * h * shape.shared_experts * f // t
        moments.append(base + act * n.tokens * (h + sf) + matrix)  # the shared down projection
        moments.append(base - s.shared_inner + act * n.tokens * (sf + up * h) + m * matrix)  # its up projections
        input_grad = act * h * (n.tokens if t > 1 else n.routed)  # the MoE input's gradient, summed
        base += -s.shared_inner + input_grad + m * matrix
    moments.append(base + 2 * act * s.kept * h)  # the combine: three h-wide gradients, less the gated product
    combine = s.kept * (2 * act * h + FP32)  # returned rows, gated product, gates: consumed
    # the (done + 1)-th expert in backward order, at its activation backward: linear in `done`
    # from the second expert on but for the output gradient's drop at the last, so the worst is
    # the first, the second, the last but one or the last (the local experts may be thousands)
    for done in sorted(d for d in {0, 1, local - 2, local - 1} if 0 <= d < local):
        own = base - combine - done * per * inside * f * act - per * f * act
        grads = m * per * f * act + done * per * h * act + (act * s.kept * h if done + 1 < local else 0) \
            + stack * (1 if done == 0 else m)
        moments.append(own + grads)
    rows_bytes = act * s.rows * h
    moments.append(base - combine - s.kept * inside * f * act - rows_bytes + 2 * act * s.kept * h + m * stack)
    output_projection = act * shape.o * h // t
    weights = act * ffn_params(shape, t, k.ep, True)  # router, shared and routed experts
    kernel = torch_cp_backward_transient(k, n, act) or act * n.tokens * (n.q + 2 * n.kv)
    moments.append(s.full - s.ffn_full - copy_bytes + residual + act * n.tokens * n.o + kernel
                   + weights + output_projection)
    return tuple(round(x) for x in moments)


QUANTIZED_INPUT = ELEMENT_BYTES
"""Bytes per element of the input a Transformer Engine linear saves for its weight gradient under
a quantized precision: fp8's byte; NVFP4's columnwise copy only (half a byte and an E4M3 scale per
16 elements: `_Linear.forward` keeps the Hadamard-rotated columnwise data the weight-gradient GEMM
reads, TE 2.20 `module/linear.py`), both copies for a fused norm-and-linear under sequence
parallelism (`LayerNormLinear`), and none for the attention's output projection (Megatron-Core's
`save_original_input` under fp4: its bf16 input, the attention core's output, already kept)."""


def _megatron_layer(shape: Shape, k: Knobs, moe: bool, mode: str) -> LayerActivations:
    """One layer of Megatron-Core on Transformer Engine (the module docstring's table), bytes.
    A linear saves its input for the weight gradient: 2 bytes an element in bf16, 1 under fp8
    (0.5625 under NVFP4, `QUANTIZED_INPUT`),
    where Transformer Engine keeps the quantized tensor it cast (`_Linear.forward` saves `inputmat`
    after its `input_quantizer`; `LayerNormLinear` its norm's output likewise). Multi-head latent
    attention keeps its q, k and v (queries and keys `qk_dim` wide, values `v_dim`), its output
    (`v_dim` per head), and per latent the norm's input and the up projection's saved input, on
    the rank's own tokens under sequence parallelism. The attention
    output is the fused kernel's bf16 tensor, which the output projection shares in bf16 and
    copies under fp8. In a MoE layer the second norm's output is the router's input, kept in
    bf16 (and quantized once more for the shared experts' fc1 under fp8), and the experts' fc1
    saves the top-k routed copies the dispatcher brings (Megatron-Core applies the routing
    probabilities in the experts' activation, so the unpermutation keeps only its index map).

    `recompute selective` keeps all of it but the attention core's (Megatron-Core's default
    module, `core_attn`); with modules named (`Knobs.recompute_modules`, `--recompute-modules`)
    each drops what it runs again (Megatron-Core 0.16, transformer_layer.py, experts.py,
    multi_latent_attention.py): `core_attn` the core's scores (their log-sum-exp under flash
    attention); `layernorm` the output of each norm that is its own module, which Transformer
    Engine's fused norm-and-linear is not (a MoE layer's pre-FFN norm, the router's input;
    under latent attention the input norm, whose output the down projections save in bf16 only:
    under fp8 they keep their quantized copies); `mla_up_proj` the up projections' q, k and v;
    `mlp` a dense layer's FFN but its input; `moe` a MoE layer's experts, shared ones too, but
    the layer's input; `moe_act` the routed experts' activation output (fc2's input); and
    `shared_experts` the shared experts' activations."""
    tokens = k.seq * k.micro_batch / k.cp
    if k.runtime == "megatron-flash":  # only the fp32 log-sum-exp of each query and head
        scores = FP32 * shape.heads * tokens / k.tp
    else:  # scores and softmax (2 + 2 bytes) and the dropout mask (1) per score element
        scores = 5 * shape.heads * k.seq * tokens / k.tp
    full = _megatron_body(shape, k, moe, ()) + scores
    if mode == "none":
        saved = full
    elif mode == "selective":
        modules = k.recompute_modules or ("core_attn",)  # Megatron-Core's default module
        saved = _megatron_body(shape, k, moe, modules) + (0.0 if "core_attn" in modules else scores)
    else:
        saved = 2 * tokens * shape.hidden / (k.tp if k.sp else 1)
    return LayerActivations(saved=round(saved), full=round(full), weight_grads=0, working=0)


def _megatron_body(shape: Shape, k: Knobs, moe: bool, modules: tuple[str, ...]) -> float:
    """`_megatron_layer`'s saved bytes but the attention core's, with Megatron-Core's recompute
    `modules` dropping what each runs again (its docstring)."""
    t, h, q, kv = k.tp, shape.hidden, shape.q, shape.kv
    tokens = k.seq * k.micro_batch / k.cp
    fp8 = k.precision in QUANTIZED_INPUT  # fp8 or NVFP4: the linears keep their quantized inputs
    saved_input = QUANTIZED_INPUT.get(k.precision, ACT)
    nvfp4 = k.precision == "nvfp4"
    # Megatron-Core has the output projection, and a MoE layer's shared-expert fc1, keep their bf16
    # input rather than its quantized copy under NVFP4 and every fp8 recipe but delayed scaling
    # (`set_save_original_input`: attention.py, multi_latent_attention.py, moe/shared_experts.py;
    # TE >= 2.6); the backward quantizes it again (`timing.original_input_casts`)
    keeps_bf16 = keeps_original_input(k.precision, k.fp8_recipe)
    # a fused norm-and-linear's saved input (QKV's, a dense FC1's): under NVFP4 with sequence
    # parallelism Transformer Engine keeps both copies of its local shard (`LayerNormLinear`
    # drops the rowwise one only for MXFP8 or where nothing is gathered)
    norm_input = 2 * saved_input if nvfp4 and k.sp else saved_input
    up = shape.ffn_matrices - 1

    def ffn(width: float, dropped: bool, activation_dropped: bool = False) -> float:
        """fc1's output and fc2's input (the activation's output) per token, less what is recomputed."""
        return 0.0 if dropped else ACT * up * width + (0.0 if activation_dropped else saved_input * width)

    norms = 2 * ACT * h  # the first and the second norm's input (the residual stream)
    # the first norm's output, saved by the QKV projection (or latent attention's down projections)
    norms += 0.0 if shape.mla and "layernorm" in modules and not fp8 else (saved_input if shape.mla else norm_input) * h
    o = shape.o
    qkv = 0.0 if shape.mla and "mla_up_proj" in modules else ACT * (q + 2 * kv)
    # q, k, v; the output (and its quantized copy, but where the output projection keeps the bf16
    # input, which is the core's output)
    split = qkv + ACT * o + (saved_input * o if fp8 and not keeps_bf16 else 0)
    if shape.mla:  # each latent's norm input (bf16) and its up projection's saved input, per own token
        norms += (ACT + saved_input) * sum(latent_norm_widths(shape.q_lora, shape.kv_lora))
    if moe:
        whole = "moe" in modules
        shared = whole or "shared_experts" in modules
        norms += 0.0 if "layernorm" in modules else ACT * h  # the router's input
        # its quantized copy for the shared experts, but where their fc1 keeps the bf16 input (the router's)
        norms += saved_input * h if fp8 and shape.shared_experts and not shared and not keeps_bf16 else 0
        split += 0.0 if whole else saved_input * shape.top_k * h  # the routed copies, fc1's input
        split += ffn(shape.top_k * shape.expert_ffn, whole, "moe_act" in modules)
        split += ffn(shape.shared_experts * shape.expert_ffn, shared)
    else:
        dense = "mlp" in modules
        norms += 0.0 if dense else norm_input * h  # fc1's saved input (its fused norm's output)
        split += ffn(shape.ffn, dense)
    return tokens * ((norms + split) / t if k.sp else norms + split / t)


@lru_cache(maxsize=16384)
def layer_activations(shape: Shape, k: Knobs, moe: bool, mode: str) -> LayerActivations:
    """One layer, one micro-batch, one rank. `mode` is none, selective or full."""
    if k.runtime == "torch":
        return torch_layer(shape, k, moe, mode)
    return _megatron_layer(shape, k, moe, mode)


@lru_cache(maxsize=4096)
def embedding_activations(shape: Shape, k: Knobs) -> int:
    """The first chunk: token ids, and learned positions' ids (one sequence's worth); Megatron
    also a 1-byte dropout mask of the embedding output."""
    tokens = k.seq * k.micro_batch / k.cp
    if k.runtime == "torch":
        positions = k.seq / k.cp if shape.position_params else 0
        return round((tokens + positions) * INDEX)
    return round((INDEX * tokens + tokens * shape.hidden) / k.tp)


@lru_cache(maxsize=4096)
def output_activations(shape: Shape, k: Knobs, vocab: int) -> int:
    """The last chunk: final norm, its output, the fp32 log-softmax of the vocab-parallel loss, the
    targets (int64) and the loss's fp32 total weight. `vocab` / tp rows: the fullest tp rank."""
    tokens = k.seq * k.micro_batch / k.cp
    h, t = shape.hidden, k.tp
    if k.runtime == "torch":
        act = activation_bytes(k.precision)
        sp = t if k.sp else 1
        stats = (2 if shape.layernorm else 1) * FP32 / sp
        unfused = h / sp if k.device == "cpu" and not shape.layernorm else 0
        loss = compiled_loss_saved(k, vocab) if k.saved_logits_loss else FP32 * vocab / t
        return round(tokens * (act * (h / sp + unfused + h) + stats + loss + INDEX) + FP32)
    # Megatron: "inputs to output layer and CE loss", for the main head and each multi-token
    # prediction module's, which also keeps its two input norms' inputs and its projection's
    # input (2h each, bf16)
    return round(tokens * (4 * (1 + shape.mtp) * (h + vocab) + shape.mtp * ACT * 4 * h) / t)


def logits_bytes(k: Knobs, vocab: int) -> int:
    """One micro-batch's fp32 logits on one rank (tokens x vocab / tp rows; parc's model returns
    `output(h).float()`, torchtitan's loss casts with `pred.float()`)."""
    return round(k.seq * k.micro_batch / k.cp * vocab / k.tp * FP32)


def stage_output_logits_bytes(k: Knobs, vocab: int) -> int:
    """One micro-batch's logits as the last pipeline stage returns them, which the schedule keeps
    until that micro-batch's backward (`ChunkActivations.output`), in the dtype the model's
    forward returns. parc's job: fp32, its model.py ends `return self.output(self.norm(h)).float()`
    (backends/torch/templates/model.py.jinja). torchtitan: the compute dtype, its Transformer ends
    `output = self.output(h) if self.output else h; return output` (9dec370 and 0.3; the fp32 cast
    is the loss's `pred.float()`), eager or compiled, and its compiled loss saves that same tensor
    (`compiled_loss_saved`: not counted twice, in the same dtype)."""
    if k.torchtitan_block:
        return round(k.seq * k.micro_batch / k.cp * vocab / k.tp * activation_bytes(k.precision))
    return logits_bytes(k, vocab)


@lru_cache(maxsize=4096)
def logits_buffer(k: Knobs, vocab: int) -> int:
    """Transient of the loss's backward beyond the saved log-softmax (torch only; Megatron's
    formula has no transient terms): three fp32 tensors of the logits' shape at once, in
    torch's vocabulary-parallel `_nll_loss_and_log_softmax_backward` (torch 2.13,
    distributed/tensor/parallel/loss.py): `grad_input = zeros_like(x)`, the sum
    `grad_input + exp(x)` and its product with the output gradient. The forward's moment
    (bf16 logits and their fp32 cast, 6 bytes a logit) is smaller. Without tp the plain
    `F.cross_entropy` backward holds two (`nll_loss_backward`'s gradient and
    `_log_softmax_backward_data`'s). The loss is not chunked."""
    if k.runtime != "torch":
        return 0
    if k.saved_logits_loss:  # the logits' gradient in their dtype (and an fp32 number a token)
        tokens = k.seq * k.micro_batch / k.cp
        return round(tokens * (activation_bytes(k.precision) * vocab / k.tp + FP32))
    return (3 if k.tp > 1 else 2) * logits_bytes(k, vocab)


def compiled_loss_saved(k: Knobs, vocab: int) -> float:
    """Bytes per token torchtitan's compiled loss keeps for its backward (`Knobs.compiled_loss`:
    `cross_entropy(pred.flatten(0, 1).float(), labels)` under torch.compile, torchtitan's
    `build_cross_entropy_loss` since e7c0cae and 0.3's default `compile.components`). Inductor
    decomposes the log-softmax, and its partitioner saves the compute-dtype logits and two fp32
    numbers a token (the row maximum and the log-sum-exp) instead of the fp32 log-softmax; the
    backward is one pointwise kernel on them whose only large output is the logits' gradient in
    the compute dtype (`logits_buffer`: one such tensor and an fp32 number a token, where the
    eager loss holds two fp32 ones). So the logits are never freed before the backward and no
    cached block is left (`model.cached_logits_bytes`). Read from the code inductor generates
    for the loss on CPU (tests/test_torchtitan_memory.py: the forward allocates (tokens, 1) fp32
    buffers and returns the bf16 input among the saved ones; the backward allocates one (tokens,
    1) fp32 and one bf16 (tokens, vocab) buffer). Under pipelining the logits it saves are the
    last stage's output, which the schedule keeps until the backward anyway (`ChunkActivations.
    output`): not counted twice. With tp the loss runs on DTensor logits under torchtitan's loss
    parallelism, not traced: counted as eager.

    A fused cross-entropy kernel (`Knobs.loss_kernel` "xentropy": flash-attention's
    `SoftmaxCrossEntropyLossFn`, `ctx.save_for_backward(logits, lse, labels)`; its backward
    `xentropy_cuda_lib.backward` returns a new tensor of the logits' shape and dtype unless
    `inplace_backward`, off by default) saves the same compute-dtype logits (the tp rank's
    vocabulary shard under a process group) and one fp32 number a token, the log-sum-exp."""
    logits = activation_bytes(k.precision) * vocab / k.tp if k.pp == 1 else 0
    return logits + LOSS_ROW_STATS.get(k.loss_kernel, 2) * FP32


LOSS_ROW_STATS = {"xentropy": 1}
"""fp32 numbers a token a saved-logits loss keeps besides the logits (`compiled_loss_saved`):
inductor's partition of torchtitan's compiled loss keeps two (the row maximum and the
log-sum-exp), flash-attention's xentropy one (the log-sum-exp)."""


@lru_cache(maxsize=4096)
def embedding_backward_buffer(shape: Shape, k: Knobs) -> int:
    """The vocabulary-parallel embedding's backward (torch, tp > 1), at its worst moment: what it
    holds beyond the rank's other tensors. DTensor has no vocabulary-sharded strategy for
    `embedding_dense_backward` (torch 2.13, `distributed/tensor/_ops/_embedding_ops.py`): with
    the token ids and the all-gathered output gradient replicated, each tp rank computes the
    gradient of the *whole* vocabulary, V x h in the compute dtype, Replicate. The generated
    job's tensor hook (`gradient_in_own_rows` in parallel.py) copies this rank's ceil(V/t) rows
    out of it before autograd stores it (FSDP2 would otherwise accumulate the whole of it in
    fp32 over the micro-batches). So, beside the whole gradient, the worst of two moments:

    - the kernel: the embedding output's gradient, all-gathered over the sequence (tokens x h),
      and on a GPU the native kernel's (`embedding_backward_cuda_kernel`) fp32 buffer of at
      most one row per token where it sums each index's rows; under fake tensors (the
      rehearsal, `k.device == "fake"`) the op has a meta kernel and no such buffer;
    - the hook: this rank's rows (V/t x h), copied.

    Rehearsed at Llama 3 405B's widths (rank 0 of tests/data/specs/rehearse-405b-16.par): the
    peak is the hook's copy, 4,202,692,608 + 525,336,576 bytes beside the rest."""
    if k.runtime != "torch" or k.tp == 1:
        return 0
    act = activation_bytes(k.precision)
    tokens = k.seq * k.micro_batch / k.cp
    scratch = 0 if k.device == "fake" else round(tokens * shape.hidden * FP32)
    kernel = round(tokens * shape.hidden * act) + scratch
    rows = -(-shape.vocab // k.tp) * shape.hidden * act
    return shape.vocab * shape.hidden * act + max(kernel, rows)


def boundary_bytes(shape: Shape, k: Knobs) -> int:
    """One micro-batch of the residual stream one pipeline stage sends the next (and its gradient
    back): micro-batch x tokens of this rank (/ tp under sequence parallelism) x hidden."""
    sp = k.tp if k.sp else 1
    return round(k.micro_batch * k.seq / k.cp / sp * shape.hidden * activation_bytes(k.precision))
