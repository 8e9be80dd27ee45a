"""The Plan: one resolved, typed description of a training layout, read by every later stage.

Resolution (`resolve.py`) fills in presets, catalogue entries and defaults and derives the facts
everything else needs (world size, nodes, gradient-accumulation steps, rank <-> coordinates,
groups) exactly once. Checks, the memory and time models, search and the backends only read a
Plan; none of them re-derives a fact from the spec.

Vocabulary (kept the same in code, docs and messages):
- axis: one of tp, pp, dp, cp, ep; its *degree* is how many ranks it spans.
- rank order: the layout line's order; the first axis written varies fastest, so its groups are
  consecutive ranks. An axis's *stride* is the rank distance between neighbours on it.
- group: the ranks that differ only in one axis's coordinate.
- stage: a pipeline stage (pp coordinate); virtual stages are model chunks on one pp rank.

Units: bytes, bytes per second (one direction), FLOP per second, tokens; never GB or Gb/s.
A field that is `None` is a hole (`?` in the spec) or depends on one; `holes` lists them.
"""

from __future__ import annotations

from typing import Literal

from .record import Record, json_schema
from .source import Span

AxisName = Literal["tp", "pp", "dp", "cp", "ep"]
AXES: tuple[str, ...] = ("tp", "pp", "dp", "cp", "ep")
PLAN_VERSION = 1


class Frozen(Record):
    """A value of the Plan: frozen, keyword-only (`parc.record`)."""


class Sourced(Frozen):
    spans: dict[str, Span] = {}
    """Where each field's value was written (or the preset line it came from), for diagnostics."""

    def span_of(self, *fields: str) -> Span | None:
        for name in fields:
            if name in self.spans:
                return self.spans[name]
        return None


ROPE_THETA = 10000.0
"""RoPE's base where the spec states none (Su et al. 2021's)."""
NORM_EPS = 1e-5
"""The normalisation layers' epsilon where the spec states none."""


class Model(Sourced):
    """The network: a decoder-only transformer, dense or mixture-of-experts."""

    name: str
    """Preset name, or "custom"."""
    layers: int
    """Transformer blocks."""
    hidden: int
    """Model width h (elements)."""
    ffn: int
    """FFN inner size of a dense block; for SwiGLU, the size of each of the two up-projections."""
    heads: int
    """Query heads."""
    kv_heads: int
    """Key/value heads (GQA); equal to `heads` for multi-head attention."""
    head_dim: int
    """Elements per head."""
    vocab: int
    """Vocabulary size before padding."""
    tied_embeddings: bool
    """The output projection reuses the input embedding matrix."""
    activation: Literal["gelu", "swiglu"]
    norm: Literal["layernorm", "rmsnorm"]
    position: Literal["learned", "rope", "none"]
    """`learned` adds a seq x hidden embedding table."""
    rope_theta: float = ROPE_THETA
    """RoPE's base: position p turns pair i of a head by p x theta^(-2i / head_dim) (Su et al.
    2021's 10,000; Llama 3 500,000). Changes no cost, only the function the job computes."""
    norm_eps: float = NORM_EPS
    """Epsilon of every normalisation layer (RMSNorm or LayerNorm)."""
    experts: int = 0
    """Routed experts per MoE layer; 0 for a dense model."""
    top_k: int = 0
    """Routed experts per token."""
    expert_ffn: int = 0
    """FFN inner size of one expert."""
    shared_experts: int = 0
    """Always-active experts per MoE layer, each of size `expert_ffn`."""
    moe_layers: tuple[int, ...] = ()
    """0-based indices of the MoE layers; the others are dense."""
    moe_balance: Literal["none", "aux-free", "aux-loss"] = "none"
    """Load balancing of the routed experts: none; aux-free, DeepSeek-V3's per-expert bias added to
    the scores for the top-k choice only and moved by `balance_rate` x sign(mean load - load) after
    each optimizer step; aux-loss, the Switch Transformer's loss E x sum_i f_i P_i x `balance_rate`."""
    balance_rate: float = 0.0
    """aux-free: the bias step (gamma); aux-loss: the loss coefficient (alpha); 0 for none."""
    capacity_factor: float = 0.0
    """Expert capacity = ceil(factor x routed copies / experts) per routing rank and micro-batch;
    copies beyond it are dropped (the token keeps its residual). 0: dropless."""
    window: int = 0
    """Sliding-window attention: a token attends to itself and the `window - 1` tokens before it
    (Hugging Face's `sliding_window`; Megatron-Core's `window_size` (window - 1, 0)); 0: none."""
    full_attention_every: int = 0
    """With a window: every N-th layer (1-based N, 2N, ...) keeps full causal attention
    (Megatron-Core's `window_attn_skip_freq`); 0: every layer windowed."""
    windowed_layers: tuple[int, ...] = ()
    """0-based indices of the layers that attend through the window; the others are full causal."""
    kv_lora_rank: int = 0
    """Multi-head latent attention (DeepSeek-V2 section 2.1; Megatron-Core's
    `--multi-latent-attention`): each token's keys and values come up from one latent of this
    width, cached and exchanged instead of the heads; 0: ordinary (grouped-query) attention."""
    q_lora_rank: int = 0
    """Under MLA, the width of the queries' own latent (DeepSeek-V2/V3 1,536); 0: queries projected
    straight from the hidden state (DeepSeek-V2-Lite)."""
    rope_head_dim: int = 0
    """Under MLA, the decoupled RoPE dimensions each query head adds and the one RoPE key all heads
    share (64 in DeepSeek-V2/V3); `head_dim` is then the part without RoPE (128)."""
    v_head_dim: int = 0
    """Under MLA, the value head dim (128 in DeepSeek-V2/V3)."""
    mtp_layers: int = 0
    """Multi-token prediction depth D (DeepSeek-V3 section 2.2; Megatron-Core's
    `--mtp-num-layers`): D modules after the last layer, module k predicting token i + k + 1 from
    module k - 1's hidden state and the embedding of token i + k (two norms, a 2h -> h projection,
    one transformer layer of the last layer's kind, a norm, the shared output layer and its own
    loss). They sit on the last pipeline stage, which then also holds the embedding."""
    parameters: int
    """Total parameters (unpadded vocabulary; tied embeddings counted once)."""
    active_parameters: int
    """Parameters a token passes through (top-k routed experts only)."""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0 and bool(self.moe_layers)

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def q_size(self) -> int:
        """Queries per token, as the attention kernel reads them (with MLA's RoPE part)."""
        return self.heads * (self.head_dim + self.rope_head_dim)

    @property
    def kv_size(self) -> int:
        """Keys (or values) per token; under MLA the mean of the two widths (K and V are 2 x this)."""
        if self.mla:
            return self.heads * (2 * self.head_dim + self.rope_head_dim + self.v_head_dim) // 2
        return self.kv_heads * self.head_dim

    @property
    def ffn_matrices(self) -> int:
        """Weight matrices in one FFN: 3 for SwiGLU (gate, up, down), 2 for GELU."""
        return 3 if self.activation == "swiglu" else 2


class Gpu(Sourced):
    """One accelerator: from the catalogue (`parc/catalog/gpus.py`) or defined in the spec."""

    name: str
    description: str
    generation: str
    """ampere | hopper | blackwell | cdna3: keys the time model's efficiency constants."""
    hbm_bytes: int
    """Device memory a training process can use (bytes)."""
    bf16_flops: float
    """Dense BF16 tensor-core peak (FLOP/s)."""
    fp8_flops: float | None
    """Dense FP8 peak (FLOP/s); None where the GPU has no FP8 tensor cores."""
    fp4_flops: float | None = None
    """Dense FP4 peak (FLOP/s: NVFP4's E2M1 products); None where the GPU has no FP4 tensor cores
    (before Blackwell)."""
    link_bandwidth: float
    """Intra-node bandwidth of one GPU, one direction (bytes/s)."""
    nvlink_domain: int
    """GPUs that share one NVLink-class domain (8 for HGX, 72 for NVL72)."""
    sms: int | None = None
    """Streaming multiprocessors (compute units on AMD): the GEMM wave-quantisation model's
    parallel width; None (a GPU defined in a spec) takes its generation's (`timing.SMS_BY_GENERATION`)."""


class Network(Sourced):
    """The scale-out fabric between nodes."""

    nics: int
    """NICs per node used by training traffic."""
    nic_bandwidth: float
    """One NIC, one direction (bytes/s)."""

    @property
    def node_bandwidth(self) -> float:
        return self.nics * self.nic_bandwidth


class Cluster(Sourced):
    gpu: Gpu
    gpus_per_node: int
    """GPUs in one node (one OS instance; a GB200 tray holds 4)."""
    link: Literal["nvlink", "nvl72", "xgmi", "pcie"]
    """Intra-node interconnect."""
    domain_size: int
    """GPUs reachable at `intra_bandwidth`: the NVLink domain, or 1 over PCIe."""
    intra_bandwidth: float
    """Per-GPU bandwidth inside the domain, one direction (bytes/s)."""
    network: Network
    world_size: int | None
    """GPUs in the job; None while the layout has holes and no size is stated."""
    nodes: int | None
    """Nodes in the job (world_size / gpus_per_node)."""
    price: float | None = None
    """Dollars per GPU-hour (the spec's `price`, else the catalogue's list price); None if unknown."""
    price_source: str | None = None
    """Where `price` comes from: "spec", or the catalogue entry's source and date."""
    power_limit: float | None = None
    """Each GPU's power limit (W), the spec's `power-limit`; None: the board's own. The time
    model derates the peak by `power.clock_fraction`."""
    hbm_bandwidth: float | None = None
    """HBM bytes/s of one GPU, the spec's `hbm-bandwidth`; None: the catalogue's datasheet figure."""
    host_bandwidth: float | None = None
    """One GPU's share of its link to host memory, bytes/s one direction: the spec's
    `host-bandwidth`; None: the catalogue's (`catalog.gpus.host_bandwidth`)."""
    nvls: bool | None = None
    """NVLink SHARP, the spec's `nvls on` (True) or `nvls off` (False): the NVSwitches reduce
    all-reduces inside the NVLink domain (NCCL's NVLS algorithm). None: unstated, which the time
    model reads as off (parc never assumes in-network reduction) and the launchers leave to
    NCCL's own default."""
    sharp: bool | None = None
    """InfiniBand SHARP, the spec's `sharp on` / `sharp off`: the fabric's switches reduce
    all-reduces across nodes (NCCL's CollNet). None: unstated, read as off."""


class Axis(Sourced):
    """One axis of the layout line, in rank order."""

    name: AxisName
    degree: int | None
    """Ranks along the axis; None for a hole."""
    stride: int | None
    """Rank distance between neighbours on this axis (product of the degrees written before it)."""


class TensorParallel(Sourced):
    degree: int | None
    sequence_parallel: bool | None
    """Norm and dropout activations sharded along the sequence between TP regions."""


class PipelineParallel(Sourced):
    degree: int | None
    schedule: Literal["gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v"] | None
    virtual_stages: int | None
    """Model chunks per pp rank: 1 for gpipe/1f1b, 2 for the V schedules."""
    split: tuple[int, ...] | None
    """Layers of each virtual stage in model order (pp x virtual_stages entries), or None for even."""


class DataParallel(Sourced):
    degree: int | None
    sharding: Literal["none", "zero1", "zero2", "zero3", "hsdp"] | None
    """none = DDP; zero1 shards optimizer states, zero2 also gradients, zero3 (FSDP) also weights;
    hsdp = zero3 inside `shard` ranks, replicated across `replicate` groups."""
    replicate: int | None = None
    shard: int | None = None
    bucket: int | None = None
    """zero1: elements per gradient bucket as written (`bucket N`); None: Megatron's default."""


class ContextParallel(Sourced):
    degree: int | None
    flavour: Literal["ring", "all-gather", "all-to-all"]
    """ring: K/V blocks passed around the cp group; all-gather: K/V gathered once; all-to-all:
    Ulysses, heads scattered and sequence gathered."""


class ExpertParallel(Sourced):
    degree: int | None
    folded_over: tuple[AxisName, ...]
    """Axes whose ranks the expert groups are carved from (empty when ep is a layout axis)."""


class Layout(Sourced):
    axes: tuple[Axis, ...]
    """The layout line's axes in rank order (first = fastest-varying)."""
    order_open: bool
    """`order ?`: search may permute the axes."""
    tp: TensorParallel
    pp: PipelineParallel
    dp: DataParallel
    cp: ContextParallel
    ep: ExpertParallel

    def degree(self, name: str) -> int | None:
        """Degree of an axis (1 when not written)."""
        return getattr(self, name).degree

    @property
    def complete(self) -> bool:
        return all(axis.degree is not None for axis in self.axes) and self.ep.degree is not None

    @property
    def world_size(self) -> int | None:
        size = 1
        for axis in self.axes:
            if axis.degree is None:
                return None
            size *= axis.degree
        return size

    @property
    def batch_degree(self) -> int | None:
        """Ranks that each take a different slice of the batch: dp, and ep when it is a layout axis."""
        dp = self.dp.degree
        ep = self.ep.degree if not self.ep.folded_over else 1
        return None if dp is None or ep is None else dp * ep

    def axis(self, name: str) -> Axis | None:
        return next((a for a in self.axes if a.name == name), None)

    def coordinates(self, rank: int) -> dict[str, int]:
        """Coordinate of `rank` on every layout axis."""
        return {a.name: (rank // a.stride) % a.degree for a in self.axes}

    def rank_of(self, coordinates: dict[str, int]) -> int:
        return sum(coordinates.get(a.name, 0) * a.stride for a in self.axes)

    def group(self, name: str, rank: int) -> tuple[int, ...]:
        """The ranks in `rank`'s group on axis `name`, in coordinate order."""
        if name == "ep" and self.ep.folded_over:
            return self._folded_group(rank)
        axis = self.axis(name)
        if axis is None:
            return (rank,)
        base = rank - ((rank // axis.stride) % axis.degree) * axis.stride
        return tuple(base + i * axis.stride for i in range(axis.degree))

    def _folded_group(self, rank: int) -> tuple[int, ...]:
        """ep carved from the folded axes' combined index, fastest part first (torchtitan)."""
        folded = [a for a in self.axes if a.name in self.ep.folded_over]
        coords = self.coordinates(rank)
        combined, scale = 0, 1
        for a in folded:
            combined += coords[a.name] * scale
            scale *= a.degree
        ep = self.ep.degree
        start = combined - combined % ep
        ranks = []
        for index in range(start, start + ep):
            c = dict(coords)
            rest = index
            for a in folded:
                c[a.name] = rest % a.degree
                rest //= a.degree
            ranks.append(self.rank_of(c))
        return tuple(ranks)


class Training(Sourced):
    seq_len: int
    """Tokens per sequence."""
    global_batch: int
    """Sequences per optimizer step, over the whole job."""
    micro_batch: int | None
    """Sequences per micro-batch on one data-parallel rank."""
    grad_accum: int | None
    """Micro-batches per step on one pipeline (global_batch / (batch_degree x micro_batch));
    None when that is not a whole number (a check reports it) or depends on a hole."""
    precision: Literal["bf16", "fp16", "fp8", "nvfp4"]
    optimizer: Literal["adam", "adamw", "sgd"]
    recompute: Literal["none", "selective", "full"] | None
    recompute_layers: int | None = None
    """With `full N`: layers recomputed per pipeline stage; None = all of them."""
    recompute_modules: tuple[str, ...] = ()
    """With `selective [m, ...]`: Megatron-Core's `--recompute-modules` (`spec.RECOMPUTE_MODULES`);
    empty: the runtime's own selective policy."""
    offload_layers: int = 0
    """`offload-activations N`: the first N layers of each chunk copy their saved activations to
    host memory in the forward and back in the backward; 0 = none."""
    clip_grad_norm: float | None = None
    """Largest global L2 norm of the gradients (torch's clip_grad_norm_); None = no clipping."""
    budget_tokens: int | None = None
    """`tokens N`: tokens the whole run trains on; None when no budget (or `steps`) is stated."""
    budget_steps: int | None = None
    """`steps N`: optimizer steps of the whole run; None when no budget (or `tokens`) is stated."""

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def recompute_stated(self) -> str:
        """The recomputation as a spec states it: `none`, `full`, `full 8`, `selective`,
        `selective [mlp, layernorm]` ("?" for a hole): what a diagnostic's label and `parc diff`
        show, so that two specs differing only in their modules never read alike."""
        if self.recompute is None:
            return "?"
        text = self.recompute
        if self.recompute == "full" and self.recompute_layers is not None:
            text += f" {self.recompute_layers}"
        if self.recompute_modules:
            text += f" [{', '.join(self.recompute_modules)}]"
        return text


class EnvVar(Frozen):
    name: str
    value: str


class Launch(Sourced):
    """Launcher settings; every string here is validated before it reaches a generated file."""

    job: str
    image: str | None = None
    env: tuple[EnvVar, ...] = ()
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    namespace: str | None = None
    port: int = 29500
    steps: int = 10
    restarts: int = 0
    """torchrun's `--max-restarts`: a failed rank restarts every rank, up to this many times."""

    def environment(self) -> dict[str, str]:
        """The launch environment as the job's process sees it (name -> value): what the allocator
        configuration is read from, by `parc explain` and by the rehearsal alike."""
        return {var.name: var.value for var in self.env}


class Target(Sourced):
    """The training program that runs the layout (`target NAME { options }`); its runtime facts
    live in `compiler/targets.py`."""

    name: Literal["torch", "torchtitan", "megatron"] = "torch"
    """torch: the job parc generates; torchtitan; megatron (Megatron-LM / Megatron-Core)."""
    compile: bool = False
    """torchtitan's `compile.enable`: torch.compile fuses the model's kernels."""
    compile_loss: bool | None = None
    """With `compile`: whether torchtitan's `compile.components` holds "loss" beside "model"
    (None: torchtitan's default, both)."""
    flash_attention: bool = True
    """Megatron-LM's `--use-flash-attn`; off: the s x s scores are materialised (before 2022)."""
    attention_backend: Literal["auto", "fused", "flash", "unfused"] | None = None
    """Megatron-Core's `--attention-backend` (None: auto, or unfused under `flash-attention off`):
    which attention Transformer Engine runs: cuDNN's fused kernel ("auto" on Hopper and later,
    "fused"), flash-attn's FlashAttention-2 ("flash": `NVTE_FUSED_ATTN=0`, as NeMo's GPT-3 175B
    and Nemotron-4 340B recipes run it) or the materialised scores ("unfused")."""
    float8_all_gather: bool = False
    """torchtitan: FSDP2 gathers the float8 linears' weights in float8 (torchao's
    `enable_fsdp_float8_all_gather` with tensorwise scaling, torchtitan's 405B config in 2024);
    torchtitan 0.3 trains rowwise float8, whose weights are gathered in bf16."""
    tp_overlap: Literal["none", "backward", "all"] | None = None
    """Tensor-parallel communication hidden under GEMMs; None: the target's default."""
    grad_reduce: Literal["fp32", "bf16"] | None = None
    """Dtype of data-parallel gradient reduction; None: the target's default for the precision."""
    fp8_recipe: Literal["delayed", "tensorwise", "mxfp8", "blockwise"] | None = None
    """Megatron-LM's `--fp8-recipe` under `precision fp8`: Transformer Engine's delayed scaling
    (None: the default), per-tensor current scaling, MXFP8 (Blackwell's block scaling), or
    blockwise (`Float8BlockScaling`: DeepSeek-V3's fp32 scales per 1x128 activation tile and
    128x128 weight block, Hopper and later)."""
    fp8_params: bool = True
    """Megatron-LM's `--fp8-param-gather` under `precision fp8` with the distributed optimizer: the
    fp8 linears' weights are held and gathered as fp8 (NeMo's and Megatron-Bridge's fp8 recipes);
    off, Megatron-LM's own default: bf16 weights, gathered in bf16, beside cached fp8 casts."""


class Hole(Frozen):
    """A `?` in the spec, for `parc search` to fill."""

    name: str
    """What is open: an axis ("tp"), "ep", "order", or a setting ("train.micro-batch")."""
    span: Span


class Allow(Frozen):
    """`allow CODE` on a statement: warnings of that code inside the statement are acknowledged."""

    code: str
    statement: Span
    """The statement the `allow` sits on."""
    code_span: Span
    """The code as written after `allow`."""


class Plan(Frozen):
    """A resolved layout. `parc schema` prints this model's JSON Schema."""

    version: int = PLAN_VERSION
    """Schema version of this JSON (bumped on incompatible change)."""
    source: str
    """The spec's path as given on the command line."""
    model: Model
    cluster: Cluster
    layout: Layout
    training: Training
    launch: Launch
    target: Target = Target()
    holes: tuple[Hole, ...] = ()
    allows: tuple[Allow, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.holes



def plan_json_schema() -> dict:
    """The JSON Schema of `plan.json` (`parc schema`), each field described by its docstring."""
    return json_schema(Plan)
