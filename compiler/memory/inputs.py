"""The numbers the memory model reads: a model `Shape` and the layout's `Knobs`.

Search evaluates the memory of ~10^5 candidate layouts a second, so the model never touches a
pydantic object per evaluation: a Plan is turned into these two frozen, hashable bundles of
plain numbers once (`shape_of`, `knobs_of`), and a candidate is a `dataclasses.replace` of the
knobs. Being hashable, both key the caches of the pieces that depend on only part of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..frozen import hash_once, lazy_hash
from ..plan import Plan

RUNTIMES = ("torch", "megatron", "megatron-flash", "zero")
"""Whose memory is modelled:

- torch: the runtime parc generates (DTensor TP/SP, FSDP2, torch.distributed.pipelining,
  activation checkpointing); the default and the one the checks use.
- megatron: Megatron-LM's accounting (Korthikanti et al. 2022 activations; bf16 weights, fp32
  gradients and 12 bytes of optimizer state per parameter), for validating against its formulas.
- megatron-flash: the same with FlashAttention (Megatron-LM since 2023): the attention scores
  are never stored, only their log-sum-exp; for judging whether a published run fitted.
- zero: the ZeRO paper's 2 + 2 + 12 bytes per parameter with Megatron's activations.
"""


@dataclass(frozen=True, slots=True)
class Shape:
    """The model, as numbers."""

    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    ffn_matrices: int
    """3 for SwiGLU (gate, up, down), 2 for GELU."""
    layernorm: bool
    """LayerNorm (weight and bias, mean and rstd saved) rather than RMSNorm (weight, rstd)."""
    position_params: int
    """Learned position table (seq x hidden) on the embedding chunk; 0 for RoPE."""
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    capacity_factor: float = 0.0
    """The MoE capacity factor (0: dropless): under 1 it drops routed copies."""
    moe: tuple[bool, ...] = ()
    """Per layer: is it a mixture-of-experts layer."""
    router_buffer_bytes: int = 0
    """Bytes of state each MoE layer's router holds beside its parameters in parc's job: under
    auxiliary-loss-free balancing its expert bias (fp32) and its load counter (int64), one of
    each per expert, replicated on every rank that holds the layer (`MoE.expert_bias`, `MoE.load`
    in model.py)."""
    window: int = 0
    """Sliding-window attention's window W (a token attends to itself and W - 1 before it); 0: none."""
    windowed: tuple[bool, ...] = ()
    """Per layer: does it attend through the window (`flops.layer_keys`); empty: none does."""
    rope: bool = False
    """Rotary positions: the runtime's rotation saves its cos/sin tables and hands attention a
    fresh (batch, heads, seq, dim) q, so the output projection's input is a copy of attention's."""
    kv_lora: int = 0
    """Multi-head latent attention (DeepSeek-V2, section 2.1): keys and values come up from one
    compressed latent of this width per token; 0: ordinary (grouped-query) attention."""
    q_lora: int = 0
    """Under MLA, the queries' compressed latent (0: the queries are projected directly)."""
    rope_dim: int = 0
    """Under MLA, the decoupled RoPE dimensions each query head adds, and the one RoPE key all
    heads share (the key's part comes down with the latent)."""
    v_dim: int = 0
    """Under MLA, the value head dim (`head_dim` is then the query's and key's part without RoPE)."""
    mtp: int = 0
    """Multi-token prediction modules (`Model.mtp_layers`): each one's transformer layer is one of
    `layers` (the last ones, of the last decoder layer's kind, in the last chunk: `chunks_of` puts
    them there); its projection, norms and extra output layer and loss are the output piece's."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hash_once(self)

    def __hash__(self) -> int:
        return self._hash

    @property
    def mla(self) -> bool:
        return self.kv_lora > 0

    @property
    def qk_dim(self) -> int:
        """A query's (and key's) head dim: `head_dim`, plus the decoupled RoPE part under MLA."""
        return self.head_dim + self.rope_dim

    @property
    def value_dim(self) -> int:
        return self.v_dim if self.mla else self.head_dim

    @property
    def q(self) -> int:
        """Width of the queries the attention kernel reads, per token."""
        return self.heads * self.qk_dim

    @property
    def kv(self) -> float:
        """Width of the keys, and of the values, per token: K and V together are 2 x kv. Under MLA
        (every head its own key and value, keys `qk_dim` and values `value_dim` wide) the mean of
        the two, so that every cost counted over the pair is exact."""
        if self.mla:
            return self.heads * (self.qk_dim + self.value_dim) / 2
        return self.kv_heads * self.head_dim

    @property
    def o(self) -> int:
        """Width of the attention's output per token (the output projection's input)."""
        return self.heads * self.value_dim

    @property
    def score_flops(self) -> int:
        """Multiply-add FLOPs of one score entry for one head, Q K^T and P V together: 2 qk_dim +
        2 value_dim (4 x head_dim without MLA)."""
        return 2 * (self.qk_dim + self.value_dim)

    @property
    def norm_params(self) -> int:
        return 2 * self.hidden if self.layernorm else self.hidden

    def is_moe(self, layer: int) -> bool:
        return bool(self.moe) and self.moe[layer]


@dataclass(frozen=True, slots=True)
class Knobs:
    """A concrete layout and training setting, as numbers; every field known (no holes)."""

    tp: int
    pp: int
    dp: int
    cp: int = 1
    ep: int = 1
    ep_axis: bool = False
    """ep is its own layout axis (its ranks are extra data-parallel replicas for dense layers)."""
    ep_over_tp: bool = False
    """ep is folded over tp among other axes (experts then also spread over the tp ranks)."""
    virtual_stages: int = 1
    schedule: str = "1f1b"
    split: tuple[int, ...] | None = None
    sequence_parallel: bool = True
    cp_flavour: str = "ring"
    sharding: str = "none"
    hsdp_shard: int = 0
    """hsdp: ranks each replica is sharded over (the S of R x S)."""
    bucket: int = 0
    """zero1: elements per gradient bucket as the spec writes it (`dp { bucket N }`; 0: the default)."""
    seq: int = 2048
    micro_batch: int = 1
    microbatches: int = 1
    """Micro-batches per step on one pipeline (gradient accumulation steps)."""
    precision: str = "bf16"
    """bf16, fp16 or fp8 as a spec says; also fp32 (the generated runtime's `--precision fp32`,
    and what it computes in on CPU): 4-byte activations and compute copies."""
    device: str = "cuda"
    """cuda, or cpu for checking the model against the runtime on CPU: CPU kernels save a few
    tensors differently (RMSNorm is not fused there; see `activations.py`); or fake for the
    rehearsal's fake tensors on CPU (`parc rehearse`): a GPU's kernels' memory except where a
    kernel's own scratch differs (the embedding's backward has a meta kernel there, without the
    GPU kernel's fp32 row sums, `activations.embedding_backward_buffer`)."""
    optimizer: str = "adamw"
    recompute: str = "none"
    recompute_layers: int | None = None
    """With `full`: layers recomputed in each chunk (None = all)."""
    recompute_modules: tuple[str, ...] = ()
    """With `selective`: Megatron-Core's `--recompute-modules` the spec names (`Training.recompute_modules`;
    `activations._megatron_layer` drops what each recomputes); empty: the runtime's own policy."""
    offload_layers: int = 0
    """`offload-activations N`: the first N layers of each chunk keep their saved activations in
    host memory between their forward and their backward (`model.offload_relief`)."""
    runtime: str = "torch"
    grad_bytes: int = 4
    """Bytes of a gradient element in Megatron-Core's data-parallel buffer: its dtype is fp32 with
    `grad_reduce_in_fp32`, else the parameters' (bf16), where the target reduces in bf16 or fp16
    (`targets.grad_bytes`; megatron/core/distributed/param_and_grad_buffer.py: `grad_dtype =
    torch.float if grad_reduce_in_fp32 else param.dtype`). The torch runtime's gradients follow
    FSDP2's own dtypes (`states.py`) and do not read it."""
    fp8_recipe: str = "delayed"
    """Transformer Engine's fp8 recipe under `precision fp8` (`Software.fp8_scaling`'s names:
    "delayed", "current", "mxfp8", "blockwise"; `targets.fp8_scaling`): how many bytes an fp8 weight takes
    (`states.fp8_weight_bytes`)."""
    fp8_transposed: bool = True
    """Whether an fp8 weight of per-tensor scaling keeps a transposed copy for the backward: the
    GPU's fp8 GEMMs run TN only (Hopper, Ada; not Blackwell)."""
    fp8_all_gather: bool = False
    """FSDP2 gathers the float8 linears' weights in float8 (torchtitan's `float8-all-gather on`):
    the unsharded compute copies are float8 (`copy_precision`)."""
    fp8_params: bool = True
    """Megatron-LM holds the fp8 linears' weights as fp8 under zero1 (`--fp8-param-gather`,
    `targets.fp8_params`); off (`fp8-params off`), bf16 weights beside cached fp8 casts
    (`states.fp8_weight_bytes`)."""
    pp_receives: str = "on-demand"
    """How the pipeline stage holds its receive buffers (`targets.Runtime.pp_receives`):
    "on-demand" (parc's `ReceiveOnDemandStage`) or "kept" (torch's stock `PipelineStage`, one
    per micro-batch, chunk and direction across steps: torchtitan)."""
    model_code: str = "parc"
    """Whose transformer block runs (`model_code`): "parc" (the generated job's model.py and
    its attention operators) or "torchtitan" (its Llama at the published runs' commit 9dec370:
    SDPA on K and V repeated to every query head, `repeat_kv`; torch's `context_parallel` for
    cp, `activations.torch_cp_backward_transient`; its per-op selective checkpointing policy,
    `activations.torchtitan_selective`), run eagerly; "torchtitan-compiled" the same block and
    its loss under torch.compile (`compile on`: torchtitan's default `compile.components`),
    whose partitioner keeps only the saved tensors the backward reads
    (`activations.torchtitan_selective`, `activations.output_activations`);
    "torchtitan-compiled-model" the block compiled and the loss eager (`compile-loss off`, and
    what torchtitan 9dec370 did: "compiling loss function causes CUDA errors")."""
    loss_kernel: str = ""
    """A fused cross-entropy kernel the run's loss calls (`timing.Software.loss_kernel`'s names;
    "": the target's own loss). "xentropy": flash-attention's `csrc/xentropy` (llm-foundry's
    `loss_fn: fused_crossentropy`), which keeps the compute-dtype logits and one fp32 number a
    token for its backward and writes the logits' gradient in their dtype
    (`activations.saved_logits_loss`). No spec states it: the published runs' reader sets it
    (benchmarks/published.py) where a source does."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    """The fields' hash, kept (`frozen.lazy_hash`): the memory model's caches hash the same
    knobs thousands of times in a search, and most knobs built never key one."""

    def __hash__(self) -> int:
        value = self._hash
        return value if value else lazy_hash(self)

    @property
    def torchtitan_block(self) -> bool:
        """torchtitan's block runs, eagerly or compiled."""
        return self.model_code.startswith("torchtitan")

    @property
    def compiled_block(self) -> bool:
        """torchtitan's block runs under torch.compile."""
        return self.model_code.startswith("torchtitan-compiled")

    @property
    def compiled_loss(self) -> bool:
        """torchtitan's loss runs under torch.compile (without tp: the vocabulary-parallel loss
        is counted as eager, `activations.compiled_loss`)."""
        return self.model_code == "torchtitan-compiled" and self.tp == 1

    @property
    def saved_logits_loss(self) -> bool:
        """The loss keeps the compute-dtype logits for its backward instead of an fp32
        log-softmax, and its backward's one large output is their gradient in that dtype:
        torchtitan's compiled loss (`compiled_loss`) or a fused cross-entropy kernel
        (`loss_kernel`). Nothing of the logits is freed before the backward
        (`model.loss_holes_bytes`)."""
        return self.compiled_loss or bool(self.loss_kernel)

    @property
    def copy_precision(self) -> str:
        """The precision of FSDP2's unsharded compute copies (`states.compute_copy_bytes`). Only
        torchtitan's float8 with `float8-all-gather on` gathers fp8 weights (torchao's
        `enable_fsdp_float8_all_gather`, which its llama3_405b config set in 2024: the unsharded
        Float8Linear weight is the gathered fp8 data); torchtitan 0.3's rowwise float8 gathers
        the bf16 weight and casts it per use. parc's own job runs `precision fp8` as bf16 (W0601,
        backends/torch/runtime.py: no torchao), so its unsharded copies are bf16, as torch's
        memory tracker counts them (rehearsing the published 405B 1F1B row as parc's job: the
        15 layers' tp shards held in bf16 at the peak, where fp8 copies left the model 5.6 GiB
        under)."""
        if self.precision == "nvfp4" and self.runtime == "torch":  # no NVFP4 in torch's runtimes (W0601)
            return "bf16"
        if self.precision == "fp8" and self.runtime == "torch" and not (self.torchtitan_block and self.fp8_all_gather):
            return "bf16"
        return self.precision

    @property
    def sp(self) -> bool:
        """Sequence parallelism in effect (it means nothing without tp)."""
        return self.sequence_parallel and self.tp > 1

    @property
    def dense_replicas(self) -> int:
        """Ranks of one pipeline stage holding the same dense-parameter shard (dp x cp x ep axis)."""
        return self.dp * self.cp * (self.ep if self.ep_axis else 1)

    @property
    def expert_replicas(self) -> int:
        """Ranks of one pipeline stage holding the same experts. parc's runtime counts the tp
        ranks among them (each routes its own tokens through whole experts: their gradients
        are reduced, and sharded, over tp too); Megatron-LM's only when ep is folded over tp."""
        spread = self.dense_replicas * (self.tp if self.ep_over_tp or self.runtime == "torch" else 1)
        return max(1, spread // self.ep)

    @property
    def dense_shard_group(self) -> int:
        """Ranks a dense parameter's sharded state is split over (ZeRO / FSDP)."""
        if self.sharding == "none":
            return 1
        if self.sharding == "hsdp":
            return max(1, self.hsdp_shard) * (self.dense_replicas // max(1, self.dp))
        return self.dense_replicas

    @property
    def expert_shard_group(self) -> int:
        """Ranks a routed expert's sharded state is split over. hsdp shards it over a replica's
        share of the expert replicas, except in parc's job with an expert grid (ep or tp: the
        experts' own FSDP2 unit over the mesh `runtime.ep_mesh` builds), which shards the
        experts over all of edp, as zero3 would (checked on the job's stored shards:
        tests/e2e/test_expert_shards.py, `moe-hsdp-experts`; the dp ledger reduces them over
        the same group)."""
        if self.sharding == "none":
            return 1
        group = self.expert_replicas
        expert_grid = self.runtime == "torch" and (self.ep > 1 or self.tp > 1)
        if self.sharding == "hsdp" and self.dp and not expert_grid:
            group = max(1, group * max(1, self.hsdp_shard) // self.dp)
        return group


def shape_of(plan: Plan) -> Shape:
    """The model as numbers. Multi-token prediction's transformer layers are counted as layers
    after the decoder's, each of the last decoder layer's kind (MoE or dense, windowed or not)."""
    m = plan.model
    moe = frozenset(m.moe_layers) | (frozenset(range(m.layers, m.layers + m.mtp_layers))
                                     if m.layers - 1 in m.moe_layers else frozenset())
    windowed = m.windowed_layers + (tuple(range(m.layers, m.layers + m.mtp_layers))
                                     if m.layers - 1 in m.windowed_layers else ())
    layers = m.layers + m.mtp_layers
    return Shape(
        layers=layers, hidden=m.hidden, ffn=m.ffn, heads=m.heads, kv_heads=m.kv_heads,
        head_dim=m.head_dim, vocab=m.vocab, tied=m.tied_embeddings, ffn_matrices=m.ffn_matrices,
        layernorm=m.norm == "layernorm",
        position_params=plan.training.seq_len * m.hidden if m.position == "learned" else 0,
        experts=m.experts, top_k=m.top_k, expert_ffn=m.expert_ffn, shared_experts=m.shared_experts,
        capacity_factor=m.capacity_factor,
        router_buffer_bytes=(4 + 8) * m.experts if moe and m.moe_balance == "aux-free" else 0,
        moe=tuple(i in moe for i in range(layers)) if moe else (), rope=m.position == "rope",
        window=m.window, windowed=_windowed(windowed, layers),
        kv_lora=m.kv_lora_rank, q_lora=m.q_lora_rank, rope_dim=m.rope_head_dim, v_dim=m.v_head_dim,
        mtp=m.mtp_layers,
    )


def _windowed(layers: tuple[int, ...], count: int) -> tuple[bool, ...]:
    chosen = frozenset(layers)
    return tuple(i in chosen for i in range(count)) if chosen else ()


def missing_knobs(plan: Plan) -> list[str]:
    """What the memory model needs that the plan leaves open (holes), by spec name."""
    lay, train = plan.layout, plan.training
    wanted = {
        "layout degrees": lay.complete,
        "train.micro-batch": train.micro_batch is not None,
        "train.recompute": train.recompute is not None,
        "dp.sharding": lay.dp.sharding is not None,
        "pp.schedule": lay.pp.schedule is not None,
        "pp.virtual-stages": lay.pp.virtual_stages is not None,
        "tp.sequence-parallel": lay.tp.sequence_parallel is not None,
        "the cluster": not any(h.name.startswith("hardware.") for h in plan.holes),
    }
    return [name for name, known in wanted.items() if not known]


def knobs_of(plan: Plan, runtime: str = "torch") -> Knobs | None:
    """The plan's knobs, or None while a hole leaves one of them open."""
    if missing_knobs(plan):
        return None
    lay, train = plan.layout, plan.training
    batch_degree = lay.batch_degree or 1
    micro = train.micro_batch or 1
    accum = train.grad_accum
    if accum is None:  # not divisible: a check reports it; model the whole micro-batches
        accum = max(1, train.global_batch // (batch_degree * micro))
    return Knobs(
        tp=lay.tp.degree or 1, pp=lay.pp.degree or 1, dp=lay.dp.degree or 1, cp=lay.cp.degree or 1,
        ep=lay.ep.degree or 1, ep_axis=not lay.ep.folded_over and (lay.ep.degree or 1) > 1,
        ep_over_tp="tp" in lay.ep.folded_over, virtual_stages=lay.pp.virtual_stages or 1,
        schedule=lay.pp.schedule or "1f1b", split=lay.pp.split,
        sequence_parallel=bool(lay.tp.sequence_parallel), cp_flavour=lay.cp.flavour,
        sharding=lay.dp.sharding or "none", hsdp_shard=lay.dp.shard or 0, bucket=lay.dp.bucket or 0,
        seq=train.seq_len,
        micro_batch=micro, microbatches=accum, precision=train.precision, optimizer=train.optimizer,
        recompute=train.recompute or "none", recompute_layers=train.recompute_layers,
        recompute_modules=train.recompute_modules, offload_layers=train.offload_layers, runtime=runtime,
        grad_bytes=_grad_bytes(plan),
        pp_receives=_pp_receives(plan), model_code=model_code(plan.target),
        fp8_recipe=_fp8_recipe(plan), fp8_transposed=fp8_transposed(plan.cluster.gpu.generation),
        fp8_all_gather=_float8_all_gather(plan), fp8_params=plan.target.fp8_params,
    )


ELEMENT_BYTES = {"fp8": 1.0, "nvfp4": 0.5 + 1 / 16}
"""Bytes per element of a tensor quantized at a precision, its scales included: fp8's byte (its
per-tensor or MXFP8's 1-in-32 scales are noise); NVFP4's half byte and one E4M3 scale per block of
16 (a weight's 16x16 blocks share one, written out per row of the block in Transformer Engine's
layout). GEMM operands (`timing.OPERAND_BYTES`), saved inputs (`activations.QUANTIZED_INPUT`) and
weights (`states.fp8_weight_bytes`) are counted with it."""


def keeps_original_input(precision: str, recipe: str) -> bool:
    """Whether Megatron-Core has the output projection, and a MoE layer's shared-expert fc1, keep
    their bf16 input rather than its quantized copy (`set_save_original_input`: attention.py,
    multi_latent_attention.py, moe/shared_experts.py): under NVFP4 (TE >= 2.7) and every fp8
    recipe but delayed scaling (TE >= 2.6), `recipe` read as `targets.fp8_scaling` names it. The
    one predicate the memory model (`activations._megatron_body`: what the linear saves) and the
    time model (`timing.original_input_casts`: the backward's second quantization) both ask."""
    return precision == "nvfp4" or (precision == "fp8" and recipe in ("current", "mxfp8", "blockwise"))


def fp8_transposed(generation: str | None) -> bool:
    """`Knobs.fp8_transposed`: fp8 GEMMs take only the TN layout before Blackwell, so a
    per-tensor-scaled fp8 weight keeps its transpose for the backward."""
    return generation != "blackwell"


def _float8_all_gather(plan: Plan) -> bool:
    from ..targets import float8_all_gather

    return float8_all_gather(plan.target)


def _fp8_recipe(plan: Plan) -> str:
    from ..targets import fp8_scaling

    return fp8_scaling(plan.target)


def model_code(target) -> str:
    """`Knobs.model_code` for a target: "torchtitan" for `target torchtitan`,
    "torchtitan-compiled" with `compile on` ("torchtitan-compiled-model" with `compile-loss
    off`), else "parc" (Megatron-LM's formulas do not read it)."""
    from ..targets import runtime

    if runtime(target).name != "torchtitan":
        return "parc"
    if not target.compile:
        return "torchtitan"
    return "torchtitan-compiled-model" if target.compile_loss is False else "torchtitan-compiled"


def _grad_bytes(plan: Plan) -> int:
    from ..targets import grad_bytes

    return grad_bytes(plan.target, plan.training.precision)


def _pp_receives(plan: Plan) -> str:
    from ..targets import runtime

    return runtime(plan.target).pp_receives
