"""HBM bytes of every op one rank runs in one step: the third resource of the physical bounds.

Why a ledger of bytes and not only of seconds: a GPU cannot finish a step faster than its HBM
moves the step's bytes (`step >= HBM bytes / bandwidth`, issue 14 point 1). The time model
charges memory-bound kernels by their bytes and GEMMs by FLOPs at an efficiency that falls with
arithmetic intensity; the bound has to hold whatever those fitted figures are, so the bytes are
counted here from the shapes alone, op by op, and `Ledger.hbm_bytes` reduces them.

What one layer moves on one rank for one micro-batch (n = seq x micro / cp tokens, q and kv the
rank's query and key/value widths, f its FFN shard, e the GEMM element: 2 bytes, or 1 for the
inputs of an fp8 GEMM):

- **GEMMs** (`gemm_bytes`): each (m x k) @ (k x n) product reads A and B and writes C:
  e (mk + kn + mn). Its backward is two products of the same three shapes: the input gradient
  reads dC and B and writes dA, the weight gradient reads A and dC and writes dB. Biases,
  gradient accumulation into an existing buffer and the GEMM's own tile re-reads are not counted
  (the count is a floor: what any kernel must read and write at least once).
- **Attention** (flash kernels, `attention_bytes`): O(seq x head dim), never the scores. Forward
  reads Q, K, V and writes O and the log-sum-exp (fp32, one per query and head); backward reads
  Q, K, V, O, dO and the log-sum-exp and writes dQ, dK, dV, after a pre-pass that reads O and dO
  and writes their row sums (fp32). Ring context parallelism runs cp kernels each way: the
  diagonal step over the rank's own block, the others (zig-zag halves) over 3/4 of it on average
  (one query half against both key halves, or both query halves against one key half). The
  unfused kernel of Megatron-LM before 2022 writes and reads the s x s scores through its two
  batched products.
- **Memory-bound kernels**: the same element counts the time model charges (norms, residuals,
  activations, RoPE, eager PyTorch's op-by-op extras, fp8 casts, the unfused softmax, ring
  attention's merges and fp32 dK/dV accumulation), forward 2 bytes an element, backward twice.
- **A MoE layer's router and dispatcher** (`moe_dispatch_bytes`): the router's fp32 kernels on
  every token's E scores and the permutations' passes over the routed copies, the counts the
  time model charges (before, the ledger held only eager PyTorch's four passes and no router).
- **The loss** (`timing.cross_entropy_bytes` per logit), the embedding lookup (read the rows,
  write the activation; backward: an fp32 scatter-add into the table's gradient).
- **Recomputation**: full recomputation moves the forward's bytes again; parc's selective policy
  its elementwise kernels and the attention output projection; torchtitan's per-op policy every
  second counted matmul of a block (an MoE layer's router gate and routed experts besides) and
  all of its forward's memory-bound kernels; Megatron-LM's the attention core.
- **The optimizer step**: `timing.OPTIMIZER_BYTES` per parameter the rank updates.
- **Collectives** (`ledger.Collective.hbm_bytes`): each call reads its input buffer and writes
  its output buffer once.

Routed experts are counted at balanced routing (the mean rank's load, as the FLOP ledger): the
busiest rank moves more, so the bound stays a bound.

Checked against: a Llama 3 8B layer and a Qwen3-30B-A3B MoE layer's memory-bound kernels counted
kernel by kernel by hand (tests/test_hbm.py); the
bytes the running generated model hands to every matrix product and to its attention kernels,
recorded with a `TorchDispatchMode` (tests/e2e/test_hbm_ledger.py, dense and MoE); and the step
time, which never undercuts bytes / bandwidth (tests/test_bounds.py). Not checked by a recording:
ring attention's per-step IO (the 3/4 zig-zag average) and the collectives' buffer IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from .memory.activations import torchtitan_matmuls, torchtitan_op_split
from .memory.inputs import Shape
from .memory.parameters import attention_linears, kv_split, up_projections

if TYPE_CHECKING:  # timing imports this module; the type only names the bundle
    from .timing import LayerCase

LSE = 4
"""Bytes of the log-sum-exp a flash kernel keeps per query and head (fp32)."""


@dataclass(frozen=True, slots=True)
class PieceBytes:
    """HBM bytes of one piece (a layer, the embedding, the output layer) for one micro-batch on one
    rank, by op kind and direction; `recompute_*` are what each recomputation mode moves again."""

    gemm_f: float = 0.0
    gemm_b: float = 0.0
    attention_f: float = 0.0
    attention_b: float = 0.0
    memory_f: float = 0.0
    memory_b: float = 0.0
    selective_elementwise: float = 0.0
    """parc's selective policy: its elementwise kernels and the attention output projection."""
    selective_torchtitan: float = 0.0
    """torchtitan's per-op policy (`timing.TORCHTITAN_OP`): a block's every second counted matmul,
    an MoE layer's router gate and routed experts (`torchtitan_gemm_again`), and its forward's
    memory-bound kernels (`timing.torchtitan_kernels_again`)."""
    torchtitan_gemm_again: float = 0.0
    """The GEMM share of `selective_torchtitan`."""
    selective_core: float = 0.0
    """Megatron-LM's selective recomputation: the attention core's forward."""
    norms_again: float = 0.0
    """`--recompute-modules layernorm`: the two norms' bytes again."""
    moe_act_again: float = 0.0
    """`--recompute-modules moe_act`: the experts' activation's bytes again."""
    mla_up_again: float = 0.0
    """`--recompute-modules mla_up_proj`: MLA's up projections' forward bytes and its key and value
    assembly again (`timing.Work.mla_up_again`)."""
    mla_up_gemm_again: float = 0.0
    """The GEMM share of `mla_up_again` (the rest is the key and value assembly, memory-bound)."""
    moe_gemm_again: float = 0.0
    """`--recompute-modules moe`: the MoE layer's GEMMs' forward bytes again (its router and
    permutation kernels and activation are `moe_kernels_again`)."""
    moe_kernels_again: float = 0.0
    ffn_gemm_again: float = 0.0
    """`--recompute-modules mlp` (a dense layer) or `shared_experts` (a MoE layer's): that FFN's two
    GEMMs' forward bytes again (`timing.Work.ffn_again`); its activation is `ffn_act_again`."""
    ffn_act_again: float = 0.0
    """The same FFN's activation bytes again."""
    moe: bool = False
    """A mixture-of-experts layer (which of `ffn_*_again`'s modules applies: `timing.ffn_recomputed`)."""

    @property
    def forward(self) -> float:
        return self.gemm_f + self.attention_f + self.memory_f

    @property
    def backward(self) -> float:
        return self.gemm_b + self.attention_b + self.memory_b

    @property
    def total(self) -> float:
        return self.forward + self.backward


def gemm_bytes(m: float, k: float, n: float, element_in: float = 2, element_out: float = 2) -> tuple[float, float]:
    """(forward, backward) HBM bytes of an (m x k) @ (k x n) product: the forward reads A and B
    and writes C; the backward's input gradient reads dC and B and writes dA, its weight gradient
    reads A and dC and writes dB (the outputs in the compute dtype, the inputs in the GEMM's)."""
    forward = element_in * (m * k + k * n) + element_out * m * n
    backward = element_in * (m * n + k * n) + element_out * m * k + element_in * (m * k + m * n) + element_out * k * n
    return forward, backward


def _gemms(shape: Shape, moe: bool, tp: int, ep: int, n: float, kernels: str,
           shard: int = 1) -> list[tuple[float, float, float, float]]:
    """(count, m, k, n) of one layer's forward GEMMs on one rank, as the runtime launches them:
    eager PyTorch (parc's job, torchtitan) has a linear layer per projection, so Q, K and V are
    three products that each read the input, and SwiGLU's gate and up are two; fused runtimes
    (Megatron-LM) run one QKV and one gate-up product. Routed experts at balanced routing: every
    local expert's weights are read once, its share of the rank's copies its rows."""
    from . import timing

    h = shape.hidden
    q = shape.q / tp
    kv = shape.kv / tp if kv_split(shape, tp) else shape.kv
    up = shape.ffn_matrices - 1
    split = kernels == "eager"
    if shape.mla:  # multi-head latent attention: the time model's list (`timing.mla_gemms`)
        out = [(float(count), m, k, width) for _, count, m, k, width in timing.mla_gemms(shape, tp, n, shard)]
    else:
        out = [(1.0, n, h, q), (2.0, n, h, kv)] if split else [(1.0, n, h, q + 2 * kv)]
        out.append((1.0, n, shape.o / tp, h))

    def ffn(count: float, m: float, f: float) -> None:
        out.extend([(count * up, m, h, f)] if split else [(count, m, h, up * f)])
        out.append((count, m, f, h))

    if moe:
        routed = n / tp
        kept = min(1.0, shape.capacity_factor) if shape.capacity_factor else 1.0
        copies = routed * shape.top_k * kept
        local = max(1, shape.experts // ep)
        out.append((1.0, routed, h, shape.experts))
        ffn(local, copies / local, shape.expert_ffn)
        if shape.shared_experts:
            ffn(1.0, n, shape.shared_experts * shape.expert_ffn / tp)
    else:
        ffn(1.0, n, shape.ffn / tp)
    return out


def attention_bytes(shape: Shape, tp: int, cp: int, flavour: str, seq: int, micro: int,
                    attention: str) -> tuple[float, float]:
    """(forward, backward) HBM bytes of one layer's attention core on one rank (module doc)."""
    n = seq * micro / cp
    q = shape.q / tp
    o = shape.o / tp  # the output's width (the queries' but under MLA, whose values are narrower)
    kv = shape.kv / tp if kv_split(shape, tp) else shape.kv
    heads = shape.heads / tp
    if attention == "unfused":
        keys = micro * seq  # every query of a sequence against all its keys
        scores = heads * n * seq
        forward = 2 * (n * q + keys * kv + scores) + 2 * (scores + keys * kv + n * o)
        return forward, 2 * forward
    kv_elems = n * kv
    if cp > 1 and flavour == "all-gather":
        kv_elems = cp * n * kv  # the gathered keys and values
    forward = 2 * (n * q + 2 * kv_elems + n * o) + LSE * n * heads
    backward = (2 * (2 * n * o) + LSE * n * heads  # pre-pass: read O and dO, write their row sums
                + 2 * (n * q + 2 * n * o + 2 * kv_elems) + 2 * LSE * n * heads  # read Q K V O dO, the sums
                + 2 * (n * q + 2 * kv_elems))  # write dQ dK dV
    if cp > 1 and flavour == "ring":
        steps = 1 + 0.75 * (cp - 1)
        return steps * forward, steps * backward
    return forward, backward


def moe_dispatch_bytes(shape: Shape, tp: int, ep: int, n: float, kernels: str,
                       dispatcher: str = "all-to-all") -> tuple[float, float]:
    """(forward, backward) HBM bytes of a MoE layer's router and token permutations on one rank
    for one micro-batch, at balanced routing: the router's fp32 kernels on the E scores of each of
    the rank's n / tp routed tokens (`timing.ROUTER_BYTES` per token and expert), and the
    dispatcher's passes over the routed copies (top-k per token, h wide, 16-bit), per runtime
    (`timing.PERMUTE_PASSES`: the plain passes, and the re-sorts into expert order when ep > 1
    and a rank holds several experts). The same counts the time model charges over HBM bandwidth,
    so the ledger holds every byte the time charges for them."""
    from . import timing

    routed = n / tp
    copies = routed * shape.top_k * (min(1.0, shape.capacity_factor) if shape.capacity_factor else 1.0)
    (plain_f, plain_b), (sort_f, sort_b) = timing.PERMUTE_PASSES[timing.permute_kind(kernels, dispatcher)]
    if not (ep > 1 and shape.experts // ep > 1):
        sort_f = sort_b = 0
    router_f, router_b = timing.ROUTER_BYTES
    copy = timing.ACT * copies * shape.hidden
    return (router_f * routed * shape.experts + (plain_f + sort_f) * copy,
            router_b * routed * shape.experts + (plain_b + sort_b) * copy)


@lru_cache(maxsize=16384)
def layer_bytes(shape: Shape, case: LayerCase, transposed: bool = True) -> PieceBytes:
    """One transformer layer on one rank for one micro-batch (module doc), the layer `case` that
    `timing.layer_work` times. `case.expert_bias` (`timing.Software.expert_bias`): the routed
    experts' eager output bias, `timing.EXPERT_BIAS_PASSES` over the balanced routed copies;
    `case.expert_clamp` (`timing.Software.expert_clamp`): the eager clamp of their GLU input,
    `timing.EXPERT_CLAMP_PASSES` over their fc1 output; `case.rope_unfused`
    (`timing.Software.rope_unfused`): Megatron-Core's unfused RoPE, `timing.UNFUSED_ROPE_BYTES`;
    `case.fused_grouped_mlp` (`timing.fuses_grouped_mlp`): the experts' activation and two of
    their casts inside the grouped GEMMs, no bytes of their own. `transposed`: the GPU's fp8 GEMMs
    run TN only (`Knobs.fp8_transposed`), so a per-tensor fp8 cast writes a transpose too."""
    from . import timing

    moe, tp, cp, flavour, seq, micro, ep = case.moe, case.tp, case.cp, case.flavour, case.seq, case.micro, case.ep
    precision, attention, kernels = case.precision, case.attention, case.kernels
    expert_bias, expert_clamp, rope_unfused = case.expert_bias, case.expert_clamp, case.rope_unfused
    h = shape.hidden
    n, shard = case.tokens, case.shard
    q = shape.q / tp
    kv = shape.kv / tp if kv_split(shape, tp) else shape.kv
    up = shape.ffn_matrices - 1
    fp8 = precision in timing.QUANTIZED  # fp8 or NVFP4: quantized GEMM operands and their casts
    element = timing.OPERAND_BYTES.get(precision, 2)
    gemms = _gemms(shape, moe, tp, ep, n, kernels, shard)
    gemm_f = gemm_b = 0.0
    for count, m, k, nn in gemms:
        f, b = gemm_bytes(m, k, nn, element)
        gemm_f += count * f
        gemm_b += count * b
    out_projection = gemm_bytes(n, shape.o / tp, h, element)[0]
    # memory-bound kernels: the element counts of `timing.layer_work`
    elements = 10 * h * n / shard
    recomputable = 4 * h * n / shard
    if not shape.position_params:
        elements += 2 * (q + kv) * n
        recomputable += 2 * (q + kv) * n
    if shape.mla:  # multi-head latent attention's latent norms and key-value assembly (`timing.mla_elements`)
        elements += timing.mla_elements(shape, tp, n, shard)
        recomputable += timing.mla_elements(shape, tp, n, shard)
    dispatch_f = dispatch_b = 0.0
    expert_act = 0.0
    # Transformer Engine's fused grouped MLP: the routed experts' GLU in fc1's epilogue, fc2's input
    # and fc1's output gradient quantized in the GEMMs' (`timing.fused_mlp_epilogue_casts`)
    fused_mlp = timing.fuses_grouped_mlp(shape, case)
    routed_act = 0.0
    if moe:
        copies = n / tp * shape.top_k * (min(1.0, shape.capacity_factor) if shape.capacity_factor else 1.0)
        inner = copies * shape.expert_ffn + n * shape.shared_experts * shape.expert_ffn / tp
        routed_act = 0.0 if fused_mlp else copies * (up + 1) * shape.expert_ffn
        elements += routed_act
        dispatch_f, dispatch_b = moe_dispatch_bytes(shape, tp, ep, n, kernels, case.dispatcher)
        if expert_bias and kernels != "eager":
            dispatch_f += timing.ACT * timing.EXPERT_BIAS_PASSES[0] * copies * shape.hidden
            dispatch_b += timing.ACT * timing.EXPERT_BIAS_PASSES[1] * copies * shape.hidden
        if expert_clamp and kernels != "eager":
            dispatch_f += timing.ACT * timing.EXPERT_CLAMP_PASSES[0] * copies * up * shape.expert_ffn
            dispatch_b += timing.ACT * timing.EXPERT_CLAMP_PASSES[1] * copies * up * shape.expert_ffn
        recomputable += routed_act
        expert_act += routed_act
        if shape.shared_experts:
            fs = shape.shared_experts * shape.expert_ffn / tp
            elements += n * (up + 1) * fs
            recomputable += n * (up + 1) * fs
            expert_act += n * (up + 1) * fs
    else:
        inner = n * shape.ffn / tp
        elements += n * (up + 1) * shape.ffn / tp
        recomputable += n * (up + 1) * shape.ffn / tp
    extra_f = extra_b = 0.0
    if fp8:  # Transformer Engine's casts, once per GEMM input as its fused products see it
        fused = _gemms(shape, moe, tp, ep, n, "fused", shard)
        # the casts' bytes as `timing.layer_work` charges them, by the same count (`transposed`: the
        # GPU's fp8 GEMMs run TN only, so a per-tensor cast writes a transpose: `Knobs.fp8_transposed`)
        extra_f, extra_b = timing.fp8_cast_bytes([(None, *g) for g in fused],
                                                 timing.cast_scaling(precision, case.fp8_scaling), transposed)
        if fused_mlp:
            local = max(1, shape.experts // ep)
            epilogue_f, epilogue_b = timing.fused_mlp_epilogue_casts(local, copies / local, shape.expert_ffn, up)
            extra_f, extra_b = extra_f - epilogue_f, extra_b - epilogue_b
        # quantized on the rank's own rows; the fused norms' outputs; the bf16 inputs kept
        more_f, more_b = timing.cast_correction(shape, case, transposed)
        extra_f, extra_b = extra_f + more_f, extra_b + more_b
    eager_f = eager_b = 0.0
    if rope_unfused and kernels != "eager" and not shape.position_params:
        eager_f += timing.UNFUSED_ROPE_BYTES[0] * (q + kv) * n
        eager_b += timing.UNFUSED_ROPE_BYTES[1] * (q + kv) * n
    if kernels == "eager":
        if not shape.position_params:
            eager_f += timing.EAGER_ROPE_BYTES[0] * (q + kv) * n
            eager_b += timing.EAGER_ROPE_BYTES[1] * (q + kv) * n
        if up == 2:
            eager_f += timing.EAGER_SWIGLU_BYTES[0] * inner
            eager_b += timing.EAGER_SWIGLU_BYTES[1] * inner
    memory_f = timing.ACT * elements + extra_f + eager_f + dispatch_f
    memory_b = 2 * timing.ACT * elements + extra_b + eager_b + dispatch_b
    attention_f, attention_b = attention_bytes(shape, tp, cp, flavour, seq, micro, attention)
    core_again = attention_f
    if attention == "unfused":
        scores = shape.heads / tp * n * seq
        memory_f += timing.SOFTMAX_FORWARD_BYTES * scores
        memory_b += timing.SOFTMAX_BACKWARD_BYTES * scores
        core_again += timing.SOFTMAX_FORWARD_BYTES * scores
    elif cp > 1 and flavour == "ring":
        memory_f += (cp - 1) * 3 * timing.ACT * n * shape.o / tp  # merge each step's output by its log-sum-exp
        memory_b += (cp - 1) * 2 * 4 * n * 2 * kv  # accumulate dK, dV per step in fp32
    # the MoE layer's own products: every GEMM after the attention's (QKV as one or three, the output)
    attention_gemms = len(attention_linears(shape)) if shape.mla else 3 if kernels == "eager" else 2
    moe_gemm = sum(count * gemm_bytes(m, k, nn, element)[0] for count, m, k, nn in gemms[attention_gemms:]) \
        if moe else 0.0
    mla_up = mla_up_gemm = 0.0
    if shape.mla:  # the up projections (the column-parallel ones) and the key-value assembly again
        mla_up_gemm = sum(gemms[i][0] * gemm_bytes(*gemms[i][1:], element)[0] for i in up_projections(shape))
        mla_up = mla_up_gemm + timing.ACT * timing.mla_key_value_elements(shape, tp, n)
    elementwise = timing.ACT * recomputable + eager_f + out_projection
    # the layer's own FFN (a dense layer's, a MoE layer's shared experts): the last two products
    own = shape.shared_experts * shape.expert_ffn / tp if moe else shape.ffn / tp
    ffn_gemm = sum(count * gemm_bytes(m, k, nn, element)[0] for count, m, k, nn in gemms[-2:]) if own else 0.0
    # torchtitan's policy (`timing.torchtitan_op_seconds`): its counted matmuls not saved, and an
    # MoE layer's router gate and routed experts whole (the three GEMMs after the attention's)
    torchtitan_gemm = sum(
        gemm_bytes(n, k, out, element)[0]
        for _, k, out in torchtitan_op_split(torchtitan_matmuls(shape, tp, moe=moe))[1])
    if moe:
        torchtitan_gemm += sum(count * gemm_bytes(m, k, nn, element)[0]
                               for count, m, k, nn in gemms[attention_gemms:attention_gemms + 3])
    forward_kernels = timing.torchtitan_kernels_again(kernels, timing.ACT * elements + extra_f + eager_f + dispatch_f,
                                                      timing.ACT * recomputable + dispatch_f)
    return PieceBytes(gemm_f=gemm_f, gemm_b=gemm_b, attention_f=attention_f, attention_b=attention_b,
                      memory_f=memory_f, memory_b=memory_b,
                      selective_elementwise=elementwise,
                      selective_torchtitan=torchtitan_gemm + forward_kernels,
                      torchtitan_gemm_again=torchtitan_gemm,
                      selective_core=core_again, norms_again=timing.ACT * 4 * h * n / shard,
                      moe_act_again=timing.ACT * expert_act, moe_gemm_again=moe_gemm, mla_up_again=mla_up,
                      mla_up_gemm_again=mla_up_gemm,
                      moe_kernels_again=dispatch_f + timing.ACT * expert_act if moe else 0.0,
                      ffn_gemm_again=ffn_gemm, ffn_act_again=timing.ACT * n * (up + 1) * own, moe=moe)


@lru_cache(maxsize=4096)
def embedding_bytes(shape: Shape, tp: int, cp: int, seq: int, micro: int) -> PieceBytes:
    """The vocab-parallel lookup: read each token's row of the rank's shard and write the
    activation; backward, read the activation's gradient and scatter-add it into the fp32 table
    gradient (read and write 4 bytes an element)."""
    n = seq * micro / cp
    h = shape.hidden
    return PieceBytes(memory_f=2 * 2 * n * h, memory_b=(2 + 4 + 4) * n * h)


@lru_cache(maxsize=4096)
def output_bytes(shape: Shape, tp: int, sp: bool, cp: int, seq: int, micro: int, vocab: int,
                 kernels: str) -> PieceBytes:
    """The final norm, the logits GEMM (bf16, as the runtimes run it) and the loss
    (`timing.cross_entropy_bytes` per logit), once and again for each multi-token prediction
    module, whose projection and own passes (`timing.MTP_ELEMENTS`) are here too."""
    from . import timing

    n = seq * micro / cp
    h = shape.hidden
    shard = tp if sp and tp > 1 else 1
    heads = 1 + shape.mtp
    gemm_f, gemm_b = gemm_bytes(n, h, vocab / tp)
    project_f, project_b = gemm_bytes(n, 2 * h, h / tp)
    logits = n * vocab / tp
    loss_f, loss_b = timing.cross_entropy_bytes(kernels, tp)
    extra_f, extra_b = (shape.mtp * timing.ACT * e * h * n / shard for e in timing.MTP_ELEMENTS)
    return PieceBytes(gemm_f=heads * gemm_f + shape.mtp * project_f, gemm_b=heads * gemm_b + shape.mtp * project_b,
                      memory_f=heads * (timing.ACT * 2 * h * n / shard + loss_f * logits) + extra_f,
                      memory_b=heads * (timing.ACT * 4 * h * n / shard + loss_b * logits) + extra_b)


def recomputed(piece: PieceBytes, mode: str, selective: str) -> float:
    """What a recomputation mode moves again (`timing._piece`'s rule)."""
    from . import timing

    if mode == "full":
        return piece.forward
    if mode == "selective" and selective == "elementwise":
        return piece.selective_elementwise
    if mode == "selective" and selective == timing.TORCHTITAN_OP:
        return piece.selective_torchtitan
    if mode == "selective":
        modules = timing.recompute_modules(selective)
        return (("core_attn" in modules) * piece.selective_core + ("layernorm" in modules) * piece.norms_again
                + ("mla_up_proj" in modules) * piece.mla_up_again
                + (piece.moe_gemm_again + piece.moe_kernels_again if "moe" in modules
                   else ("moe_act" in modules) * piece.moe_act_again)
                + timing.ffn_recomputed(modules, piece.moe) * (piece.ffn_gemm_again + piece.ffn_act_again))
    return 0.0

