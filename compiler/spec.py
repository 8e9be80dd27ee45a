"""Stage 2, tree -> typed IR: check each statement against the language's keys and value types.

The grammar only knows "a key followed by values". This stage knows which keys each block has,
what their values mean and which units they take, and so can say "unknown setting `micro_batch`
in `train`: did you mean `micro-batch`?" or "`hbm` takes bytes: write `80 GB`". The result is a
`Spec`: what the user wrote, typed and located, with nothing filled in yet (presets, defaults and
derived facts are the next stage's job, `resolve.py`).

The key tables below are the language reference: `docs/language.md`'s key lists are generated
from them, so the documentation cannot drift from the parser.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Generic, TypeVar

from . import units
from .diagnostics import Diagnostic, error
from .record import Record
from .source import Span
from .suggest import did_you_mean
from .syntax import Atom, Document, LayoutLine, Setting

HOLE = "?"
"""A value left open for `parc search` to fill."""

AXES = ("tp", "pp", "dp", "cp", "ep")

MAX_COUNT = 10**9
"""Largest count parc accepts for a size (hidden, vocab, batch): larger is a typo or an attack."""
MAX_DEGREE = 1 << 20
"""Largest degree of one axis (and, in resolve, world size): about a million GPUs."""

MAX_LAYERS = 1 << 16
"""Largest layer count: the deepest published models have a few hundred; the memory and time
models and the generated pipeline split look at layers one by one."""

MAX_TOKENS = 10**18
"""Largest token budget: a thousand times the largest published pre-training run."""

MAX_PRICE = 10**4
"""Largest price of one GPU-hour in dollars: a hundred times any cloud's list price."""

T = TypeVar("T")


class Frozen(Record):
    """A value of the spec IR: frozen, keyword-only (`parc.record`)."""


class Located(Frozen, Generic[T]):
    """A value and the text it was read from."""

    value: T
    span: Span


# Structured values (the right-hand sides that are more than one number or name).


class BatchSize(Frozen):
    count: int
    """How many `unit`s per optimizer step."""
    unit: str
    """"sequences" or "tokens"."""


class Recompute(Frozen):
    mode: str
    """none | selective | full."""
    layers: int | None = None
    """For `full N`: recompute only N layers per pipeline stage; None = every layer."""
    modules: tuple[str, ...] = ()
    """For `selective [m, ...]`: Megatron-Core's `--recompute-modules` (`RECOMPUTE_MODULES`); empty:
    the runtime's own selective policy."""


class MoeLayers(Frozen):
    rule: str
    """all | none | from | every."""
    k: int = 0
    """For `from k`: the first k layers are dense. For `every k`: every k-th layer is MoE."""


class MoeBalance(Frozen):
    mode: str
    """none | aux-free (DeepSeek-V3's bias update) | aux-loss (Switch Transformer's loss)."""
    rate: float = 0.0
    """aux-free: the bias step per optimizer step (gamma); aux-loss: the loss coefficient (alpha)."""


class Sharding(Frozen):
    mode: str
    """none | zero1 | zero2 | zero3 | hsdp."""
    replicate: int | None = None
    """hsdp only: replica groups (the outer factor of dp)."""
    shard: int | None = None
    """hsdp only: ranks each replica is sharded over (the inner factor of dp)."""


class Network(Frozen):
    nics: int
    """Scale-out NICs per node."""
    nic_bandwidth: float
    """Bytes per second of one NIC, one direction."""


class EnvVar(Frozen):
    name: str
    value: str


# ---------------------------------------------------------------------------------------------
# The IR


class AxisSpec(Frozen):
    name: str
    degree: Located[int | str]
    """A degree, or "?"."""
    span: Span


class LayoutSpec(Frozen):
    """The layout line: axes in rank order (first written = fastest-varying rank)."""

    axes: tuple[AxisSpec, ...]
    gpus_per_node: Located[int] | None = None
    link: Located[str] | None = None
    span: Span


class EpFoldSpec(Frozen):
    """`ep 8 over dp x cp`: expert ranks carved out of other axes instead of a layout factor."""

    degree: Located[int | str]
    over: tuple[Located[str], ...]
    span: Span


class BlockSpec(Frozen):
    """A block (`train { ... }`) or preset line (`model llama3-405b`) with checked settings."""

    kind: str
    preset: Located[str] | None = None
    settings: dict[str, Located[Any]] = {}
    """Plan field name (underscored) -> the value as written, converted to base units."""
    key_spans: dict[str, Span] = {}
    """Plan field name -> where its key is written (a diagnostic about the setting as a whole
    underlines key and value)."""
    span: Span


class ClusterHole(Frozen):
    """`nodes ? in 16 to 2048`, `gpus ?`, `gpu ?` or `gpu ? in [h100-sxm, a100-80gb]`: a cluster
    question for `parc search` (compiler/search/cluster.py). `span` covers the whole value, which
    `--write` replaces with the answer."""

    key: str
    """"nodes", "gpus" or "gpu"."""
    low: int = 1
    high: int = 0
    """The size range (nodes or GPUs, inclusive); 0 = the default ceiling."""
    choices: tuple[Located[str], ...] = ()
    """`gpu ? in [...]`: the GPUs to consider; empty = every catalogue entry."""
    span: Span


class ClusterQuestion(Frozen):
    """The cluster holes of a spec: its size, its GPU, or both."""

    size: ClusterHole | None = None
    gpu: ClusterHole | None = None


class AllowSpec(Frozen):
    code: Located[str]
    statement: Span
    """The statement that carries the `allow`: warnings whose span lies inside are acknowledged."""


class Spec(Frozen):
    """Everything a spec says, typed, before presets and defaults."""

    file: str
    job: Located[str] | None = None
    layout: LayoutSpec | None = None
    ep_fold: EpFoldSpec | None = None
    order: Located[str] | None = None
    model: BlockSpec | None = None
    hardware: BlockSpec | None = None
    gpu: BlockSpec | None = None
    train: BlockSpec | None = None
    launch: BlockSpec | None = None
    target: BlockSpec | None = None
    axis_options: dict[str, BlockSpec] = {}
    allows: tuple[AllowSpec, ...] = ()
    holes: tuple[Located[str], ...] = ()
    """Where each `?` is: the value names the setting ("tp", "train.micro-batch")."""
    cluster: ClusterQuestion | None = None
    """`nodes ?`, `gpus ?`, `gpu ?` in `hardware`: not in `holes` (those are the layout's); the
    hardware block and `gpu` carry no setting for them, so resolution sees an unstated size."""


# ---------------------------------------------------------------------------------------------
# Key tables


@dataclass(frozen=True)
class Key:
    """One setting a block accepts."""

    name: str
    kind: str
    doc: str
    example: str
    holes: bool = False
    choices: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    limit: int = MAX_COUNT
    """Largest value accepted (counts only)."""

    @property
    def field(self) -> str:
        return self.name.replace("-", "_")


def _enum(name, doc, example, choices, holes=False, aliases=()):
    """An alias is another real name of exactly one choice (`ulysses` for all-to-all); never a key's
    name (`flavor`), a family naming several choices (`zero-bubble`, `interleaved`) or a
    different thing (`dualpipe` keeps two copies of the weights; dualpipe-v does not)."""
    return Key(name, "enum", doc, example, holes, tuple(choices), tuple(aliases))


MODEL_KEYS = (
    Key("layers", "count", "transformer blocks (at most 65,536: the models walk them one by one)",
        "layers 126", limit=MAX_LAYERS),
    Key("hidden", "count", "model width h", "hidden 16384"),
    Key("ffn", "count", "FFN inner size of a dense block (per SwiGLU branch)", "ffn 53248"),
    Key("heads", "count", "query heads", "heads 128"),
    Key("kv-heads", "count", "key/value heads (GQA); equal to heads for MHA", "kv-heads 8"),
    Key("head-dim", "count", "size of one head; default hidden / heads", "head-dim 128"),
    Key("kv-lora-rank", "count", "multi-head latent attention (DeepSeek-V2/V3): keys and values come up "
        "from one latent of this width per token (Megatron-Core `--kv-lora-rank`); `head-dim` is then "
        "each head's query/key part without RoPE", "kv-lora-rank 512"),
    Key("q-lora-rank", "count", "with `kv-lora-rank`: the queries' own latent width (default: queries "
        "projected straight from the hidden state)", "q-lora-rank 1536"),
    Key("rope-head-dim", "count", "with `kv-lora-rank`: the decoupled RoPE dims each query head adds and "
        "all heads' shared RoPE key has (default 64)", "rope-head-dim 64"),
    Key("v-head-dim", "count", "with `kv-lora-rank`: the value head dim (default: `head-dim`)", "v-head-dim 128"),
    Key("vocab", "count", "vocabulary size before padding", "vocab 128256"),
    Key("tied-embeddings", "bool", "output layer shares the input embedding", "tied-embeddings off"),
    _enum("activation", "FFN activation", "activation swiglu", ("gelu", "swiglu")),
    _enum("norm", "normalisation layer", "norm rmsnorm", ("layernorm", "rmsnorm")),
    _enum("position", "position encoding (learned adds seq x hidden weights)", "position rope",
          ("learned", "rope", "none")),
    Key("rope-theta", "positive", "RoPE's base theta (default 10,000; Llama 3 500,000, Mixtral 1,000,000)",
        "rope-theta 500000", limit=10**12),
    Key("norm-eps", "positive", "epsilon of the normalisation layers (default 1e-5)", "norm-eps 1e-6", limit=1),
    Key("experts", "count0", "routed experts per MoE layer (0 = dense model)", "experts 8"),
    Key("top-k", "count", "experts each token is routed to", "top-k 2"),
    Key("expert-ffn", "count", "FFN inner size of one expert", "expert-ffn 14336"),
    Key("shared-experts", "count0", "always-active experts per MoE layer", "shared-experts 1"),
    Key("moe-layers", "moe_layers", "which layers are MoE: all, none, from K (first K dense), every K",
        "moe-layers from 3"),
    Key("moe-balance", "moe_balance", "load balancing of the routed experts: none, aux-free [RATE] "
        "(DeepSeek-V3 bias update, default rate 0.001) or aux-loss [COEFF] (Switch loss, default 0.01)",
        "moe-balance aux-free 0.001"),
    Key("capacity-factor", "factor", "expert capacity as a multiple of an even share of the routed "
        "tokens; copies beyond it are dropped (default: none, dropless)", "capacity-factor 1.25"),
    Key("mtp", "count0", "multi-token prediction depth (DeepSeek-V3 section 2.2, Megatron-Core "
        "`--mtp-num-layers`): D modules after the last layer, each a projection of the hidden state and "
        "the next token's embedding, one transformer layer of the last layer's kind and the shared "
        "output layer with its own loss, on the last pipeline stage (default 0)", "mtp 1"),
    Key("window", "count", "sliding-window attention: each token attends to itself and the W - 1 "
        "tokens before it (HF `sliding_window` W, Megatron-Core `window_size` (W - 1, 0))", "window 128"),
    Key("full-attention-every", "count", "with a window: every N-th layer (N, 2N, ...) keeps full causal "
        "attention, the others are windowed (Megatron-Core `window_attn_skip_freq`; default: "
        "every layer windowed)", "full-attention-every 2"),
)

GPU_KEYS = (
    Key("hbm", "bytes", "memory a training process can use", "hbm 80 GB"),
    Key("bf16", "flops", "dense BF16 tensor-core peak", "bf16 989 TFLOP/s"),
    Key("fp8", "flops", "dense FP8 tensor-core peak", "fp8 1979 TFLOP/s"),
    Key("fp4", "flops", "dense FP4 tensor-core peak (NVFP4's products)", "fp4 9000 TFLOP/s"),
    Key("link", "bandwidth", "intra-node bandwidth of one GPU, one direction", "link 450 GB/s"),
    Key("nvlink-domain", "count", "GPUs in one NVLink (or Infinity Fabric) domain", "nvlink-domain 8"),
    _enum("generation", "architecture generation (keys the time model's efficiency)",
          "generation hopper", ("ampere", "hopper", "blackwell", "cdna3")),
)

HARDWARE_KEYS = (
    Key("gpu", "gpu", "a GPU from the catalogue, or your own in a block; `gpu ?` or "
        "`gpu ? in [h100-sxm, a100-80gb]` lets search choose", "gpu h100-sxm", holes=True),
    Key("nodes", "count", "nodes in the cluster; `nodes ?` or `nodes ? in 1 to 2048` lets search choose",
        "nodes 1024", holes=True),
    Key("gpus", "count", "GPUs in the cluster; `gpus ?` or `gpus ? in 8 to 4096` lets search choose",
        "gpus 8192", holes=True),
    Key("gpus-per-node", "count", "GPUs per node (the layout's `on nodes(8 gpus, ...)` says it too)",
        "gpus-per-node 8"),
    _enum("link", "intra-node interconnect", "link nvlink", ("nvlink", "nvl72", "xgmi", "pcie")),
    Key("network", "network", "scale-out NICs per node x bandwidth of one NIC", "network 8 x 400 Gb/s"),
    Key("price", "price", "price of one GPU-hour, for the training budget's cost (overrides the catalogue's)",
        "price 2.50 $/gpu-hour"),
    Key("power-limit", "power", "each GPU's power limit (`nvidia-smi -pl`): the peak falls as "
        "(limit / board power)^(1/3)", "power-limit 500 W"),
    Key("hbm-bandwidth", "bandwidth", "HBM bandwidth of one GPU (overrides the catalogue's: a part "
        "with slower memory)", "hbm-bandwidth 2.4 TB/s"),
    Key("host-bandwidth", "bandwidth", "one GPU's share of its link to host memory, one direction "
        "(overrides the catalogue's: activation offloading's copies)", "host-bandwidth 64 GB/s"),
    Key("nvls", "bool", "NVLink SHARP: the NVSwitches reduce an all-reduce inside the NVLink domain "
        "(NCCL's NVLS, `NCCL_NVLS_ENABLE`; Hopper and Blackwell NVSwitch systems); unstated, the "
        "prediction counts none and the job leaves it to NCCL", "nvls on"),
    Key("sharp", "bool", "InfiniBand SHARP: the fabric's switches reduce an all-reduce across nodes "
        "(NCCL's CollNet with the SHARP plugin, `NCCL_COLLNET_ENABLE`); unstated, off", "sharp on"),
)

TRAIN_KEYS = (
    Key("seq", "count", "sequence length in tokens", "seq 8192"),
    Key("global-batch", "batch", "sequences (default) or tokens per optimizer step",
        "global-batch 2048"),
    Key("micro-batch", "count", "sequences per micro-batch on one data-parallel rank",
        "micro-batch 1", holes=True),
    _enum("precision", "compute precision of the matmuls (nvfp4: Transformer Engine's NVFP4 block scaling, "
          "4-bit products on Blackwell)", "precision bf16", ("bf16", "fp16", "fp8", "nvfp4")),
    _enum("optimizer", "optimizer (adam/adamw keep fp32 master weights and two moments)",
          "optimizer adamw", ("adam", "adamw", "sgd")),
    Key("recompute", "recompute", "activation recomputation: none, selective, full, or full N layers; under "
        "`target megatron`, `selective [moe_act, mla_up_proj, ...]` names Megatron-Core's --recompute-modules "
        "(core_attn, layernorm, mlp, moe, moe_act, shared_experts, mla_up_proj)",
        "recompute selective", holes=True),
    Key("offload-activations", "count", "copy the saved activations of the first N layers of each chunk to host "
        "memory in the forward and back in the backward (Megatron-Core's `--cpu-offloading-num-layers`)",
        "offload-activations 40"),
    Key("clip-grad-norm", "norm", "clip the gradients' global L2 norm to this (off: no clipping)",
        "clip-grad-norm 1.0"),
    Key("tokens", "tokens", "training budget: tokens the whole run trains on (`K`, `M`, `B`, `T` = 10^3 ... 10^12)",
        "tokens 15T", limit=MAX_TOKENS),
    Key("steps", "count", "training budget: optimizer steps of the whole run (instead of `tokens`)",
        "steps 250000"),
    Key("deadline", "duration", "cluster search: the run must finish within this (`days`, `hours`, `weeks`)",
        "deadline 60 days"),
    Key("budget", "money", "cluster search: the run may cost at most this many dollars (`K`, `M`, `B`)",
        "budget $2.5M"),
    _enum("objective", "cluster search: what the answer minimises (default: the fewest GPUs)",
          "objective cost", ("time", "cost", "tokens-per-dollar")),
)

TP_KEYS = (
    Key("sequence-parallel", "bool", "shard norms and dropout along the sequence (Korthikanti 2022)",
        "sequence-parallel on", holes=True),
)

SCHEDULES = ("gpipe", "1f1b", "interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v")
PP_KEYS = (
    _enum("schedule", "pipeline schedule", "schedule 1f1b", SCHEDULES, holes=True,
          aliases=(("zb-v", "zbv"), ("dualpipev", "dualpipe-v"))),
    Key("virtual-stages", "count", "model chunks per pipeline rank (interleaved schedules)",
        "virtual-stages 2", holes=True),
    Key("split", "list", "layers per chunk, in model order (uneven split); the first and last may be 0: "
        "that chunk holds only the embedding, or only the output layer and loss (Megatron-Core's "
        "account_for_embedding/loss_in_pipeline_split)", "split [7, 8, 8, 7]"),
)

DP_KEYS = (
    Key("sharding", "sharding", "none (DDP), zero1, zero2, zero3 (= fsdp), or hsdp R x S",
        "sharding zero1", holes=True),
    Key("bucket", "count", "zero1: parameters per gradient bucket (default max(40M, 1M x dp), Megatron's)",
        "bucket 40000000"),
)

CP_KEYS = (
    _enum("flavour", "how attention exchanges K/V across cp ranks", "flavour ring",
          ("ring", "all-gather", "all-to-all"), aliases=(("ulysses", "all-to-all"), ("allgather", "all-gather"),
                                                         ("a2a", "all-to-all"))),
)

EP_KEYS: tuple[Key, ...] = ()

LAUNCH_KEYS = (
    Key("image", "string", "container image for Kubernetes and Slurm (pyxis)", 'image "nvcr.io/nvidia/pytorch:24.07-py3"'),
    Key("env", "env", "an environment variable set for every rank (repeatable)", 'env NCCL_DEBUG "WARN"'),
    Key("partition", "string", "Slurm partition", 'partition "batch"'),
    Key("account", "string", "Slurm account", 'account "my-team"'),
    Key("time-limit", "string", "Slurm time limit, HH:MM:SS", 'time-limit "04:00:00"'),
    Key("namespace", "string", "Kubernetes namespace", 'namespace "training"'),
    Key("port", "count", "rendezvous port", "port 29500"),
    Key("steps", "count", "training steps the generated job runs", "steps 100"),
    Key("restarts", "count0", "times torchrun restarts every rank after one fails (`--max-restarts`); "
        "parc's job then resumes from its `--checkpoint-dir` (torchtitan and Megatron-LM from their own "
        "checkpoint options)", "restarts 3"),
)

TARGET_KEYS = (
    Key("compile", "bool", "torchtitan: torch.compile the model (fused kernels)", "compile on"),
    Key("compile-loss", "bool", "torchtitan: with `compile on`, compile the loss too (default on: "
        "`compile.components` model and loss)", "compile-loss off"),
    Key("float8-all-gather", "bool", "torchtitan: FSDP2 all-gathers float8 weights (torchao's "
        "`enable_fsdp_float8_all_gather`, tensorwise float8 before torchtitan 0.3, whose rowwise float8 gathers bf16)",
        "float8-all-gather on"),
    Key("flash-attention", "bool", "megatron: `--use-flash-attn` (off: unfused attention, before 2022)",
        "flash-attention off"),
    _enum("attention-backend", "megatron: `--attention-backend`, the attention Transformer Engine runs (default "
          "auto: cuDNN's fused attention on Hopper and later; flash: flash-attn's FlashAttention-2, "
          "`NVTE_FUSED_ATTN=0`; fused: cuDNN's; unfused: the s x s scores, as `flash-attention off`)",
          "attention-backend flash", ("auto", "fused", "flash", "unfused")),
    _enum("tp-overlap", "tensor-parallel communication hidden under GEMMs (default: the target's)",
          "tp-overlap all", ("none", "backward", "all")),
    _enum("grad-reduce", "dtype of the data-parallel gradient reduction (default: the target's)",
          "grad-reduce bf16", ("fp32", "bf16")),
    _enum("fp8-recipe", "megatron: Transformer Engine's fp8 scaling under `precision fp8` (default delayed; "
          "tensorwise is per-tensor current scaling, mxfp8 Blackwell's 32-element blocks, blockwise "
          "DeepSeek-V3's 1x128 activation and 128x128 weight blocks)",
          "fp8-recipe mxfp8", ("delayed", "tensorwise", "mxfp8", "blockwise")),
    Key("fp8-params", "bool", "megatron: with zero1, hold and all-gather the quantized linears' weights as "
        "fp8 under `precision fp8` (`--fp8-param-gather`) or as NVFP4 under `precision nvfp4` "
        "(`--fp4-param-gather`); default on, as NeMo's and Megatron-Bridge's recipes run; off is "
        "Megatron-LM's own default: bf16 weights beside cached casts)", "fp8-params off"),
)

TOP_KEYS = {
    "job": "a name for the job: `job llama3-405b`",
    "model": "the model: `model llama3-405b` or `model { layers 32 ... }`",
    "hardware": "the cluster: `hardware { gpu h100-sxm, nodes 1024 }`",
    "train": "training settings: `train { seq 8192, global-batch 2048 }`",
    "launch": "launcher settings: `launch { image \"...\" }`",
    "order": "`order ?` lets search choose the rank order of the layout's axes",
    "target": "the runtime: `target torch`, `target torchtitan { compile on }`, `target megatron`",
}

BLOCK_KEYS: dict[str, tuple[Key, ...]] = {
    "model": MODEL_KEYS,
    "hardware": HARDWARE_KEYS,
    "gpu": GPU_KEYS,
    "train": TRAIN_KEYS,
    "launch": LAUNCH_KEYS,
    "target": TARGET_KEYS,
    "tp": TP_KEYS,
    "pp": PP_KEYS,
    "dp": DP_KEYS,
    "cp": CP_KEYS,
    "ep": EP_KEYS,
}

# Keys users reach for from other tools, with where parc keeps them.
_MISPLACED = {
    "micro-batch": "train", "global-batch": "train", "seq": "train", "recompute": "train",
    "precision": "train", "optimizer": "train", "schedule": "pp", "virtual-stages": "pp",
    "sequence-parallel": "tp", "sharding": "dp", "gpu": "hardware", "nodes": "hardware",
    "network": "hardware", "power-limit": "hardware", "hbm-bandwidth": "hardware",
    "host-bandwidth": "hardware", "nvls": "hardware", "sharp": "hardware", "layers": "model", "hidden": "model", "heads": "model",
    "flavour": "cp", "image": "launch",
}


# ---------------------------------------------------------------------------------------------
# Building the Spec


class _Diagnostics(list):
    def err(self, code: str, message: str, span: Span, **fields) -> None:
        self.append(error(code, message, span, **fields))


_GLUED = re.compile(r"^(\d[\d_]*(?:\.\d+)?)([A-Za-z][\w\-./]*)$")


def build(document: Document) -> tuple[Spec, list[Diagnostic]]:
    """Check every statement against the key tables; never raises."""
    diags = _Diagnostics()
    fields: dict[str, Any] = {"file": document.source.path, "axis_options": {}}
    allows: list[AllowSpec] = []
    holes: list[Located[str]] = []
    seen: dict[str, Span] = {}

    def once(name: str, span: Span) -> bool:
        if name in seen:
            diags.err(
                "E0204", f"`{name}` is set twice", span, label="second setting",
                labels=_label(seen[name], "first set here"),
                help=f"keep one `{name}`: a spec states each thing once",
            )
            return False
        seen[name] = span
        return True

    for statement in document.statements:
        allows.extend(_allows(statement))
        if isinstance(statement, LayoutLine):
            _layout_statement(statement, fields, diags, holes, once)
            continue
        key = statement.key
        if key.kind == "axis":
            if once(f"{key.text} {{ }}", key.span):
                fields["axis_options"][key.text] = _block(key.text, statement, diags, holes, key.text)
            continue
        name = key.text
        if name == "job":
            if once("job", key.span):
                fields["job"] = _job(statement, diags)
        elif name in ("model", "hardware", "train", "launch"):
            if once(name, key.span):
                block = _block(name, statement, diags, holes, name)
                fields[name] = block
                if name == "hardware":
                    block = _cluster_question(block, fields, diags)
                    fields[name] = block
                    gpu = block.settings.get("gpu")
                    if gpu is not None:
                        fields["gpu"] = gpu.value
                        settings = dict(block.settings)
                        settings.pop("gpu")
                        fields["hardware"] = block.model_copy(update={"settings": settings})
        elif name == "target":
            if once("target", key.span):
                fields["target"] = _block("target", statement, diags, holes, "target")
        elif name == "order":
            if once("order", key.span):
                fields["order"] = _order(statement, diags, holes)
        else:
            _unknown_top(statement, diags)
    fields["allows"] = tuple(allows)
    fields["holes"] = tuple(holes)
    return Spec(**fields), list(diags)


def _cluster_question(block: BlockSpec, fields: dict, diags: _Diagnostics) -> BlockSpec:
    """Move `nodes ?`, `gpus ?` and `gpu ?` out of `hardware` into `Spec.cluster`."""
    asked = {k: v.value for k, v in block.settings.items() if isinstance(v.value, ClusterHole)}
    if not asked:
        return block
    sizes = [asked[k] for k in ("nodes", "gpus") if k in asked]
    if sizes and "nodes" in block.settings and "gpus" in block.settings:
        other = block.settings["gpus" if sizes[0].key == "nodes" else "nodes"]
        diags.err("E0204", "the cluster size is stated twice", other.span, label="a second size",
                  labels=_label(sizes[0].span, f"`{sizes[0].key} ?` asks for it"),
                  help=f"keep `{sizes[0].key} ?` and remove the other: search fills one size")
    fields["cluster"] = ClusterQuestion(size=sizes[0] if sizes else None, gpu=asked.get("gpu"))
    settings = {k: v for k, v in block.settings.items() if k not in asked}
    return block.model_copy(update={"settings": settings})


def _allows(statement) -> list[AllowSpec]:
    """`allow CODE` on a statement or on any setting inside its blocks, each with its own span."""
    found = [AllowSpec(code=Located(value=code.text, span=code.span), statement=statement.span)
             for code in statement.allow]
    body = getattr(statement, "body", None)
    for inner in body.settings if body is not None else ():
        found.extend(_allows(inner))
    return found


def _label(span: Span, message: str):
    from .diagnostics import Label

    return (Label(span=span, message=message),)


def _unknown_top(statement: Setting, diags: _Diagnostics) -> None:
    name = statement.key.text
    glued = _GLUED.match(name)
    if glued:
        diags.err("E0105", f"`{name}` runs a number into a word", statement.key.span,
                  label="put a space after the number", help=f"write `{glued[1]} {glued[2]}`")
        return
    home = _MISPLACED.get(name.replace("_", "-"))
    if home:
        diags.err(
            "E0201", f"`{name}` belongs inside a `{home}` block", statement.key.span,
            label="not a top-level statement",
            help=f"write it as `{home} {{ {name.replace('_', '-')} ... }}`",
        )
        return
    known = list(TOP_KEYS) + list(AXES)
    diags.err(
        "E0201", f"unknown statement `{name}`", statement.key.span, label="not a statement parc knows",
        help=did_you_mean(name, known) + "\nstatements: the layout line (`tp 8 x dp 4 ...`), "
        + ", ".join(f"`{k}`" for k in TOP_KEYS),
    )


def _job(statement: Setting, diags: _Diagnostics) -> Located[str] | None:
    if statement.body is not None or len(statement.values) != 1 or statement.values[0].kind not in ("name", "string"):
        diags.err("E0203", "`job` takes one name", statement.span, label="expected a name or a string",
                  help="write `job llama3-405b` or `job \"llama 3 405B\"`")
        return None
    atom = statement.values[0]
    text = _unquote(atom.text) if atom.kind == "string" else atom.text
    return Located(value=text, span=atom.span)


def _order(statement: Setting, diags: _Diagnostics, holes: list) -> Located[str] | None:
    values = statement.values
    if len(values) == 1 and values[0].kind == "hole":
        holes.append(Located(value="order", span=values[0].span))
        return Located(value=HOLE, span=values[0].span)
    if len(values) == 1 and values[0].kind == "name" and values[0].text == "fixed":
        return Located(value="fixed", span=values[0].span)
    diags.err("E0203", "`order` takes `?` or `fixed`", statement.span, label="unexpected value",
              help="write `order ?` to let `parc search` choose the rank order; the layout line's order is used otherwise")
    return None


def _layout_statement(line: LayoutLine, fields: dict, diags: _Diagnostics, holes: list, once) -> None:
    axes = []
    names_seen: dict[str, Span] = {}
    for term in line.axes:
        name = term.name.text
        if name in names_seen:
            diags.err("E0208", f"axis `{name}` appears twice", term.name.span, label="second time",
                      labels=_label(names_seen[name], "first here"),
                      help="write each axis once; its degree is the product you want")
            continue
        names_seen[name] = term.name.span
        degree = _degree(term.degree, name, diags)
        if degree is None:
            continue
        if degree.value == HOLE:
            holes.append(Located(value=name, span=term.degree.span))
        axes.append(AxisSpec(name=name, degree=degree, span=term.span))

    if line.over:
        # `ep 8 over dp x cp`: a fold, not a layout.
        if len(line.axes) != 1 or line.axes[0].name.text != "ep":
            diags.err(
                "E0211", "`over` folds expert parallelism only", line.over_span,
                label="only `ep N over ...` may fold onto other axes",
                help="write the layout line without `over` (`tp 8 x dp 4`) and the fold on its own line: `ep 4 over dp`",
            )
            return
        if line.placement is not None:
            diags.err("E0211", "an `ep ... over` line takes no placement", line.placement.span,
                      label="placement belongs on the layout line",
                      help="move `on nodes(...)` to the layout line")
        over = []
        for atom in line.over:
            if atom.text == "ep":
                diags.err("E0211", "`ep` cannot fold onto itself", atom.span, label="here",
                          help="fold onto the axes whose ranks hold the experts: `ep 8 over dp x cp`")
                continue
            over.append(Located(value=atom.text, span=atom.span))
        if axes and once("ep", line.span):
            fields["ep_fold"] = EpFoldSpec(degree=axes[0].degree, over=tuple(over), span=line.span)
        return

    if not once("layout", line.span):
        return
    gpus_per_node = None
    link = None
    if line.placement is not None:
        for arg in line.placement.args:
            if arg.kind == "gpus":
                value = _count_atom(arg.value, "gpus per node", diags, limit=MAX_DEGREE)
                if value is not None:
                    if gpus_per_node is not None:
                        diags.err("E0204", "GPUs per node given twice", arg.span, label="second",
                                  help="write `on nodes(8 gpus, nvlink)`")
                    gpus_per_node = Located(value=value, span=arg.value.span)
            else:
                text = arg.value.text
                glued = _GLUED.match(text)
                if glued:
                    diags.err("E0105", f"`{text}` runs a number into a word", arg.value.span,
                              label="put a space after the number",
                              help=f"write `{glued[1]} {glued[2]}`: `on nodes({glued[1]} {glued[2]}, nvlink)`")
                    continue
                choices = next(k for k in HARDWARE_KEYS if k.name == "link").choices
                if text not in choices:
                    diags.err("E0202", f"unknown link `{text}`", arg.value.span, label="not an intra-node link",
                              help=did_you_mean(text, choices))
                    continue
                if link is not None:
                    diags.err("E0204", "the link is given twice", arg.span, label="second",
                              help="write `on nodes(8 gpus, nvlink)`")
                link = Located(value=text, span=arg.value.span)
    fields["layout"] = LayoutSpec(axes=tuple(axes), gpus_per_node=gpus_per_node, link=link, span=line.span)


def _degree(atom: Atom, axis: str, diags: _Diagnostics) -> Located[int | str] | None:
    if atom.kind == "hole":
        return Located(value=HOLE, span=atom.span)
    value = _count_atom(atom, f"the {axis} degree", diags, limit=MAX_DEGREE)
    return None if value is None else Located(value=value, span=atom.span)


def _count_atom(atom: Atom, what: str, diags: _Diagnostics, limit: int = MAX_COUNT, zero: bool = False) -> int | None:
    """A whole number in [1, limit] (or [0, limit] with `zero`), with an error otherwise."""
    if atom.kind == "name":
        glued = _GLUED.match(atom.text)
        if glued:
            diags.err("E0105", f"`{atom.text}` runs a number into a word", atom.span,
                      label="put a space after the number", help=f"write `{glued[1]} {glued[2]}`")
            return None
    if atom.kind != "number":
        diags.err("E0203", f"{what} must be a number", atom.span, label=f"`{atom.text[:30]}` is not a number",
                  help="write a whole number, e.g. `8`")
        return None
    text = atom.text.replace("_", "")
    try:
        number = float(text)
    except ValueError:  # pragma: no cover - the lexer only admits numbers
        number = math.nan
    lowest = 0 if zero else 1
    if not math.isfinite(number) or number > limit:
        diags.err("E0207", f"{what} is too large", atom.span, label=f"{atom.text[:30]} is beyond {limit:,}",
                  help=f"parc accepts up to {limit:,}; check the number")
        return None
    if number != int(number) or not _whole(text):
        diags.err("E0203", f"{what} must be a whole number", atom.span, label=f"{atom.text[:30]} has a fraction",
                  help=f"write a whole number, e.g. `{max(lowest, int(number))}`")
        return None
    value = int(number)
    if value < lowest:
        diags.err("E0207", f"{what} must be at least {lowest}", atom.span, label=f"{value} is too small",
                  help=f"write a number of {lowest} or more")
        return None
    return value


def _whole(text: str) -> bool:
    """Exactly whole: `1.99999999999999999` rounds to the float 2.0 but is not a count.

    Decimal refuses exponents beyond about 10**18 digits; such a number is either far beyond the
    limit (already reported) or a tiny fraction that the float check sees as 0."""
    try:
        exact = Decimal(text)
    except InvalidOperation:
        return True
    return exact == exact.to_integral_value()


def _block(kind: str, statement: Setting, diags: _Diagnostics, holes: list, path: str) -> BlockSpec:
    """`model llama3-405b { layers 4 }`, `train { ... }`, `tp { ... }`, `gpu h100-sxm`."""
    preset = None
    keys = BLOCK_KEYS[kind]
    accepts_preset = kind in ("model", "gpu", "target")
    if statement.values:
        first = statement.values[0]
        if accepts_preset and len(statement.values) == 1 and first.kind == "name":
            preset = Located(value=first.text, span=first.span)
        elif accepts_preset:
            diags.err("E0203", f"`{kind}` takes one preset name", first.span, label="expected a name",
                      help=f"write `{kind} NAME` or `{kind} NAME {{ overrides }}`, e.g. "
                      + {"model": "`model llama3-8b { layers 4 }`", "gpu": "`gpu h100-sxm`"}.get(
                          kind, "`target torchtitan { compile on }`"))
        else:
            diags.err("E0203", f"`{kind}` takes a block, not values", first.span,
                      label="values here are not allowed",
                      help=f"write its settings in braces: `{kind} {{ {keys[0].example if keys else ''} }}`")
    if statement.body is None and not accepts_preset:
        diags.err("E0203", f"`{kind}` needs a block of settings", statement.span, label="no `{ }` block",
                  help=f"write `{kind} {{ {keys[0].example if keys else ''} }}`")
    settings: dict[str, Located[Any]] = {}
    first_seen: dict[str, Span] = {}
    for setting in statement.body.settings if statement.body else ():
        name = setting.key.text
        key = next((k for k in keys if k.name == name), None)
        if key is None:
            _unknown_key(kind, setting, keys, diags)
            continue
        if key.field in first_seen and key.kind != "env":
            diags.err("E0204", f"`{name}` is set twice in `{kind}`", setting.key.span, label="second setting",
                      labels=_label(first_seen[key.field], "first set here"), help=f"keep one `{name}`")
            continue
        first_seen[key.field] = setting.key.span
        if setting.body is not None and key.kind != "gpu":
            diags.err("E0203", f"`{name}` takes no block", setting.body.open_span, label="unexpected `{`",
                      help=f"write `{key.example}`")
            continue
        value = _value(key, setting, diags, holes, f"{path}.{name}")
        if value is None:
            continue
        if key.kind == "env":
            previous = settings.get("env")
            items = (previous.value if previous else ()) + (value.value,)
            settings["env"] = Located(value=items, span=value.span)
        else:
            settings[key.field] = value
    return BlockSpec(kind=kind, preset=preset, settings=settings, span=statement.span,
                     key_spans={k: first_seen[k] for k in settings if k in first_seen})


def _unknown_key(kind: str, setting: Setting, keys: tuple[Key, ...], diags: _Diagnostics) -> None:
    name = setting.key.text
    glued = _GLUED.match(name)
    if glued:
        diags.err("E0105", f"`{name}` runs a number into a word", setting.key.span,
                  label="put a space after the number", help=f"write `{glued[1]} {glued[2]}`")
        return
    known = [k.name for k in keys]
    home = _MISPLACED.get(name.replace("_", "-"))
    if home and home != kind and name.replace("_", "-") not in known:
        help_text = f"`{name.replace('_', '-')}` is a setting of `{home}`: move it into `{home} {{ }}`"
    elif not known:
        help_text = f"`{kind}` has no settings yet; remove the block"
    else:
        help_text = did_you_mean(name, known) + f"\n`{kind}` settings: " + ", ".join(f"`{k}`" for k in known)
    diags.err("E0201", f"unknown setting `{name}` in `{kind}`", setting.key.span,
              label=f"not a setting of `{kind}`", help=help_text)


def _value(key: Key, setting: Setting, diags: _Diagnostics, holes: list, path: str) -> Located[Any] | None:
    values = setting.values
    span = setting.span if not values else _join(values[0].span, values[-1].span)
    if values and values[0].kind == "hole" and path in CLUSTER_HOLES:
        hole = _parse_cluster_hole(key, values, span, diags)
        return None if hole is None else Located(value=hole, span=span)
    if len(values) == 1 and values[0].kind == "hole":
        if not key.holes:
            diags.err("E0206", f"`{key.name}` cannot be left open", values[0].span, label="`?` not allowed here",
                      help=f"give a value, e.g. `{key.example}`; holes are for layout degrees and tuning knobs")
            return None
        holes.append(Located(value=path, span=values[0].span))
        return Located(value=HOLE, span=values[0].span)
    if not values and key.kind != "gpu":
        diags.err("E0203", f"`{key.name}` needs a value", setting.key.span, label="no value",
                  help=f"write `{key.example}`")
        return None
    parsed = _PARSERS[key.kind](key, values, setting, diags)
    if parsed is None:
        return None
    return Located(value=parsed, span=span)


CLUSTER_HOLES = ("hardware.nodes", "hardware.gpus", "hardware.gpu")
"""Settings whose `?` asks search for the cluster (compiler/search/cluster.py)."""
MAX_NODES_DEFAULT = 16_384
"""Default ceiling of `nodes ?`: the largest cluster `parc search` considers unless told."""


def _parse_cluster_hole(key: Key, values: tuple[Atom, ...], span: Span, diags: _Diagnostics) -> ClusterHole | None:
    """`nodes ?`, `nodes ? in 16 to 2048`, `gpu ?`, `gpu ? in [h100-sxm, a100-80gb]`."""
    name = key.name
    if name == "gpu":
        example = "gpu ? in [h100-sxm, a100-80gb]"
        if len(values) == 1:
            return ClusterHole(key=name, span=span)
        if len(values) == 3 and values[1].kind == "name" and values[1].text == "in" and values[2].kind == "list" \
                and values[2].items and all(item.kind in ("name", "string") for item in values[2].items):
            choices = tuple(Located(value=_unquote(i.text) if i.kind == "string" else i.text, span=i.span)
                            for i in values[2].items)
            seen: set[str] = set()
            for choice in choices:
                if choice.value in seen:
                    diags.err("E0208", f"`{choice.value}` is listed twice", choice.span, label="repeated",
                              help="name each GPU once")
                    return None
                seen.add(choice.value)
            return ClusterHole(key=name, choices=choices, span=span)
        diags.err("E0203", "`gpu ?` takes an optional list of GPUs", values[1].span, label="expected `in [GPU, ...]`",
                  help=f"write `gpu ?` (every catalogue GPU) or `{example}`")
        return None
    unit = "node" if name == "nodes" else "GPU"
    example = f"{name} ? in 1 to 2048" if name == "nodes" else f"{name} ? in 8 to 16384"
    if len(values) == 1:
        return ClusterHole(key=name, span=span)
    shape_ok = (len(values) == 5 and values[1].kind == "name" and values[1].text == "in"
                and values[3].kind == "name" and values[3].text == "to")
    if not shape_ok:
        diags.err("E0203", f"`{name} ?` takes an optional range", values[1].span, label="expected `in LOW to HIGH`",
                  help=f"write `{name} ?` or `{example}`")
        return None
    limit = MAX_DEGREE if name == "gpus" else MAX_DEGREE // 4
    low = _count_atom(values[2], f"the smallest {unit} count", diags, limit=limit)
    high = _count_atom(values[4], f"the largest {unit} count", diags, limit=limit)
    if low is None or high is None:
        return None
    if low > high:
        diags.err("E0207", f"the range of `{name} ?` is empty", _join(values[2].span, values[4].span),
                  label=f"{low:,} is above {high:,}", help=f"write the smaller count first: `{name} ? in {high} to {low}`")
        return None
    return ClusterHole(key=name, low=low, high=high, span=span)


def _join(a: Span, b: Span) -> Span:
    return a.model_copy(update={"end": b.end, "end_line": b.end_line, "end_col": b.end_col})


# ---------------------------------------------------------------------------------------------
# Value parsers: (key, atoms, setting, diagnostics) -> value or None (with a diagnostic)


def _one(key: Key, values: tuple[Atom, ...], diags: _Diagnostics) -> Atom | None:
    if len(values) != 1:
        diags.err("E0203", f"`{key.name}` takes one value", values[1].span if len(values) > 1 else values[0].span,
                  label="unexpected extra value", help=f"write `{key.example}`")
        return None
    return values[0]


def _parse_count(key: Key, values, setting, diags, zero: bool = False):
    atom = _one(key, values, diags)
    if atom is None:
        return None
    return _count_atom(atom, f"`{key.name}`", diags, limit=key.limit, zero=zero)


def _parse_count0(key, values, setting, diags):
    return _parse_count(key, values, setting, diags, zero=True)


_TRUE = {"on", "true", "yes"}
_FALSE = {"off", "false", "no"}


def _parse_bool(key, values, setting, diags):
    atom = _one(key, values, diags)
    if atom is None:
        return None
    if atom.kind == "name" and atom.text in _TRUE:
        return True
    if atom.kind == "name" and atom.text in _FALSE:
        return False
    diags.err("E0203", f"`{key.name}` is on or off", atom.span, label=f"`{atom.text[:30]}` is not on/off",
              help=f"write `{key.name} on` or `{key.name} off`")
    return None


def _parse_enum(key, values, setting, diags):
    atom = _one(key, values, diags)
    if atom is None:
        return None
    text = atom.text
    aliases = dict(key.aliases)
    if atom.kind == "name" and text in key.choices:
        return text
    if atom.kind == "name" and text in aliases:
        return aliases[text]
    diags.err("E0202", f"unknown {key.name} `{text[:40]}`", atom.span, label=f"not a {key.name}",
              help=did_you_mean(text, key.choices + tuple(aliases)))
    return None


def _number_and_unit(key: Key, values, diags, missing_label: str, missing_help: str, shape_label: str):
    """(number atom, unit atom) of a `KEY NUMBER UNIT` setting, or None with the shape's error
    said: a number glued to its unit (E0105), a number without a unit (E0205), anything else
    (E0203). Shared by quantities (`hbm 80 GB`) and durations (`deadline 60 days`)."""
    if len(values) == 1 and values[0].kind == "name" and _GLUED.match(values[0].text):
        number, unit = _GLUED.match(values[0].text).groups()
        diags.err("E0105", f"`{values[0].text}` runs a number into its unit", values[0].span,
                  label="put a space before the unit", help=f"write `{key.name} {number} {unit}`")
        return None
    if len(values) == 1 and values[0].kind == "number":
        diags.err("E0205", f"`{key.name}` needs a unit", values[0].span, label=missing_label, help=missing_help)
        return None
    if len(values) != 2 or values[0].kind != "number" or values[1].kind != "name":
        diags.err("E0203", f"`{key.name}` takes a number and a unit", values[0].span,
                  label=shape_label, help=f"write `{key.example}`")
        return None
    return values[0], values[1]


def _quantity(key: Key, values, diags, kind: str):
    atoms = _number_and_unit(key, values, diags, "which unit?",
                             f"write `{key.example}`; units: " + ", ".join(units.KINDS[kind]),
                             "expected a number and a unit")
    if atoms is None:
        return None
    number_atom, unit_atom = atoms
    number = float(number_atom.text.replace("_", ""))
    unit = unit_atom.text
    table = units.KINDS[kind]
    if unit not in table:
        fixed = units.case_fix(unit, kind)
        other = units.unit_kind(unit)
        if fixed:
            help_text = f"units are case-sensitive: write `{key.name} {number_atom.text} {fixed}`"
        elif other:
            help_text = f"`{unit}` measures {other}; `{key.name}` takes {kind}: e.g. `{key.example}`"
        else:
            help_text = f"units of {kind}: " + ", ".join(f"`{u}`" for u in table)
        diags.err("E0205", f"`{unit[:30]}` is not a unit of {kind}", unit_atom.span, label="wrong unit",
                  help=help_text)
        return None
    result = number * table[unit]
    if not math.isfinite(result) or result <= 0 or result > 1e21:
        diags.err("E0207", f"`{key.name}` is out of range", number_atom.span, label="not a plausible value",
                  help=f"write a positive value such as `{key.example}`")
        return None
    return result


def _parse_bytes(key, values, setting, diags):
    value = _quantity(key, values, diags, "bytes")
    if value is not None and value < 1:  # `hbm 1e-20 GB` is positive but rounds to 0 bytes
        diags.err("E0207", f"`{key.name}` is less than one byte", values[0].span, label="not a plausible value",
                  help=f"write a positive value such as `{key.example}`")
        return None
    return None if value is None else int(value)


def _parse_bandwidth(key, values, setting, diags):
    return _quantity(key, values, diags, "bandwidth")


def _parse_flops(key, values, setting, diags):
    return _quantity(key, values, diags, "flops")


def _parse_power(key, values, setting, diags):
    return _quantity(key, values, diags, "power")


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), body)


def _parse_string(key, values, setting, diags):
    atom = _one(key, values, diags)
    if atom is None:
        return None
    if atom.kind == "string":
        return _unquote(atom.text)
    if atom.kind in ("name", "number"):
        return atom.text
    diags.err("E0203", f"`{key.name}` takes a string", atom.span, label="expected a string",
              help=f"write `{key.example}`")
    return None


def _parse_env(key, values, setting, diags):
    if len(values) != 2 or values[0].kind != "name" or values[1].kind not in ("string", "name", "number"):
        diags.err("E0203", "`env` takes a name and a value", values[0].span, label="expected NAME \"value\"",
                  help=f"write `{key.example}`")
        return None
    name_atom, value_atom = values
    value = _unquote(value_atom.text) if value_atom.kind == "string" else value_atom.text
    return EnvVar(name=name_atom.text, value=value)


def _parse_list(key, values, setting, diags):
    atom = _one(key, values, diags)
    if atom is None:
        return None
    if atom.kind != "list":
        diags.err("E0203", f"`{key.name}` takes a list", atom.span, label="expected `[...]`",
                  help=f"write `{key.example}`")
        return None
    counts = []
    last = len(atom.items) - 1
    for i, item in enumerate(atom.items):
        count = _count_atom(item, f"each entry of `{key.name}`", diags, zero=True)
        if count is None:
            return None
        if count == 0 and 0 < i < last:
            diags.err("E0220", f"only the first and last entries of `{key.name}` may be 0", item.span,
                      label="a chunk with no layers in the middle of the pipeline",
                      help="give this chunk at least 1 layer (only the ends, which hold the embedding and "
                      "the loss, may be empty)")
            return None
        counts.append(count)
    if not counts:
        diags.err("E0203", f"`{key.name}` is empty", atom.span, label="no entries", help=f"write `{key.example}`")
        return None
    return tuple(counts)


def _parse_batch(key, values, setting, diags):
    count = _count_atom(values[0], f"`{key.name}`", diags)
    if count is None:
        return None
    if len(values) == 1:
        return BatchSize(count=count, unit="sequences")
    unit_atom = values[1]
    if len(values) > 2 or unit_atom.kind != "name" or unit_atom.text not in units.BATCH:
        diags.err("E0205", f"`{key.name}` counts sequences or tokens", unit_atom.span, label="unknown unit",
                  help=f"write `{key.name} 2048` (sequences) or `{key.name} 16_777_216 tokens`")
        return None
    return BatchSize(count=count, unit=units.BATCH[unit_atom.text])


_RECOMPUTE = ("none", "selective", "full")

RECOMPUTE_MODULES = ("core_attn", "layernorm", "mlp", "moe", "moe_act", "shared_experts", "mla_up_proj")
"""Megatron-Core's `--recompute-modules` (TransformerConfig.recompute_modules, core 0.16): the
parts of a layer `recompute selective [...]` runs again before the backward instead of keeping
their activations. Megatron-Core's default, `recompute selective` alone, is `core_attn`."""


def modules_of_absent_parts(modules: tuple[str, ...], *, mla: bool, moe: bool, shared: bool,
                            dense: bool) -> tuple[str, ...]:
    """The recompute modules among `modules` that name a part the model has not (E0628, and what
    the reader of published runs leaves out): `mla_up_proj` without latent attention, `moe` and
    `moe_act` without MoE layers, `shared_experts` without shared experts in them, `mlp` without
    a dense FFN layer."""
    has = {"mla_up_proj": mla, "moe": moe, "moe_act": moe, "shared_experts": moe and shared, "mlp": dense}
    return tuple(m for m in modules if not has.get(m, True))


def _parse_recompute(key, values, setting, diags):
    atom = values[0]
    if atom.kind != "name" or atom.text not in _RECOMPUTE:
        diags.err("E0202", f"unknown recompute mode `{atom.text[:30]}`", atom.span, label="not a recompute mode",
                  help=did_you_mean(atom.text, _RECOMPUTE) + "; `full 8` recomputes 8 layers per stage")
        return None
    if len(values) == 1:
        return Recompute(mode=atom.text)
    if atom.text == "selective" and len(values) == 2 and values[1].kind == "list":
        return _recompute_modules(values[1], diags)
    if atom.text != "full" or len(values) != 2:
        diags.err("E0203", "only `full` takes a layer count, and only `selective` a list of modules", values[1].span,
                  label="unexpected value",
                  help="write `recompute full 8` (8 layers per stage), `recompute selective` or "
                  "`recompute selective [moe_act, mla_up_proj]` (Megatron-Core's modules)")
        return None
    layers = _count_atom(values[1], "the recomputed layer count", diags)
    return None if layers is None else Recompute(mode="full", layers=layers)


def _recompute_modules(atom: Atom, diags) -> Recompute | None:
    """`selective [m, ...]`: Megatron-Core's recompute modules, each once, in the order written."""
    modules: list[str] = []
    for item in atom.items:
        if item.kind != "name" or item.text not in RECOMPUTE_MODULES:
            diags.err("E0202", f"unknown recompute module `{item.text[:30]}`", item.span,
                      label="not one of Megatron-Core's --recompute-modules",
                      help=did_you_mean(item.text, RECOMPUTE_MODULES) + "; the modules are "
                      + ", ".join(RECOMPUTE_MODULES))
            return None
        if item.text in modules:
            diags.err("E0203", f"recompute module `{item.text}` listed twice", item.span, label="again",
                      help="name each module once")
            return None
        modules.append(item.text)
    if not modules:
        diags.err("E0203", "`recompute selective []` names no module", atom.span, label="empty list",
                  help="write `recompute selective` (the runtime's own policy) or name modules: "
                  "`recompute selective [moe_act, mla_up_proj]`")
        return None
    return Recompute(mode="selective", modules=tuple(modules))


def _parse_moe_layers(key, values, setting, diags):
    atom = values[0]
    if atom.kind == "name" and atom.text in ("all", "none") and len(values) == 1:
        return MoeLayers(rule=atom.text)
    if atom.kind == "name" and atom.text in ("from", "every") and len(values) == 2:
        k = _count_atom(values[1], f"`moe-layers {atom.text}`", diags, zero=atom.text == "from")
        return None if k is None else MoeLayers(rule=atom.text, k=k)
    diags.err("E0203", "`moe-layers` is all, none, from K or every K", atom.span, label="unexpected value",
              help="write `moe-layers all`, `moe-layers from 3` (first 3 dense) or `moe-layers every 2`")
    return None


MOE_BALANCE_DEFAULTS = {"none": 0.0, "aux-free": 0.001, "aux-loss": 0.01}
"""Default rate of each balancing mode: DeepSeek-V3's bias step gamma (2024, section 2.1.2) and
the Switch Transformer's loss coefficient alpha (Fedus et al. 2021, section 2.2)."""
_MOE_BALANCE_ALIASES = {"aux-loss-free": "aux-free", "loss-free": "aux-free", "switch": "aux-loss",
                        "off": "none"}


def _fraction_atom(atom: Atom, what: str, diags, example: str, limit: float) -> float | None:
    """A decimal number in (0, limit], with an error otherwise."""
    if atom.kind != "number":
        diags.err("E0203", f"{what} must be a number", atom.span, label=f"`{atom.text[:30]}` is not a number",
                  help=f"write `{example}`")
        return None
    number = float(atom.text.replace("_", ""))
    if not math.isfinite(number) or number <= 0 or number > limit:
        diags.err("E0207", f"{what} is out of range", atom.span, label=f"{atom.text[:30]} is not in (0, {limit:g}]",
                  help=f"write a positive number of at most {limit:g}, e.g. `{example}`")
        return None
    return number


def _parse_moe_balance(key, values, setting, diags):
    atom = values[0]
    mode = _MOE_BALANCE_ALIASES.get(atom.text, atom.text) if atom.kind == "name" else ""
    if mode not in MOE_BALANCE_DEFAULTS:
        diags.err("E0202", f"unknown load balancing `{atom.text[:30]}`", atom.span, label="not a balancing mode",
                  help=did_you_mean(atom.text, tuple(MOE_BALANCE_DEFAULTS)) + " (e.g. `moe-balance aux-free 0.001`)")
        return None
    if len(values) == 1:
        return MoeBalance(mode=mode, rate=MOE_BALANCE_DEFAULTS[mode])
    if mode == "none" or len(values) != 2:
        diags.err("E0203", f"`moe-balance {mode}` takes {'no rate' if mode == 'none' else 'one rate'}",
                  values[1 if mode == "none" else 2].span, label="unexpected value",
                  help=f"write `moe-balance {mode}`" + ("" if mode == "none" else f" {MOE_BALANCE_DEFAULTS[mode]}"))
        return None
    rate = _fraction_atom(values[1], f"the {mode} rate", diags, f"moe-balance {mode} {MOE_BALANCE_DEFAULTS[mode]}",
                          limit=1.0)
    return None if rate is None else MoeBalance(mode=mode, rate=rate)


def _parse_positive(key, values, setting, diags):
    """A real number in (0, key.limit]: `500000`, `5e5`, `1e-6`."""
    atom = _one(key, values, diags)
    return None if atom is None else _fraction_atom(atom, f"`{key.name}`", diags, key.example, limit=key.limit)


def _parse_factor(key, values, setting, diags):
    atom = _one(key, values, diags)
    if atom is None:
        return None
    if atom.kind == "name" and atom.text in ("none", "off"):
        return 0.0
    return _fraction_atom(atom, f"`{key.name}`", diags, key.example, limit=1024.0)


_SHARDING = ("none", "ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp")


def _parse_sharding(key, values, setting, diags):
    atom = values[0]
    if atom.kind != "name" or atom.text not in _SHARDING:
        diags.err("E0202", f"unknown sharding `{atom.text[:30]}`", atom.span, label="not a dp sharding",
                  help=did_you_mean(atom.text, _SHARDING) + "; hsdp takes `replicate x shard`: `sharding hsdp 8 x 8`")
        return None
    mode = {"ddp": "none", "fsdp": "zero3"}.get(atom.text, atom.text)
    rest = values[1:]
    if mode != "hsdp":
        if rest:
            diags.err("E0203", f"`{atom.text}` takes no values", rest[0].span, label="unexpected value",
                      help=f"write `sharding {atom.text}`")
            return None
        return Sharding(mode=mode)
    if not rest:
        return Sharding(mode="hsdp")
    if len(rest) != 3 or rest[1].kind != "times":
        diags.err("E0203", "hsdp takes `replicate x shard`", rest[0].span, label="expected R x S",
                  help="write `sharding hsdp 8 x 8`: 8 replicas, each sharded over 8 ranks (R x S = dp)")
        return None
    replicate = _count_atom(rest[0], "the hsdp replicate degree", diags, limit=MAX_DEGREE)
    shard = _count_atom(rest[2], "the hsdp shard degree", diags, limit=MAX_DEGREE)
    if replicate is None or shard is None:
        return None
    return Sharding(mode="hsdp", replicate=replicate, shard=shard)


def _parse_network(key, values, setting, diags):
    if len(values) == 4 and values[1].kind == "times":
        nics = _count_atom(values[0], "the NIC count", diags, limit=1024)
        bandwidth = _quantity(key, values[2:], diags, "bandwidth")
        if nics is None or bandwidth is None:
            return None
        return Network(nics=nics, nic_bandwidth=bandwidth)
    if len(values) == 1 and values[0].kind == "name" and "x" in values[0].text:
        diags.err("E0105", f"`{values[0].text}` needs spaces", values[0].span, label="write `N x BW`",
                  help=f"write `{key.example}`")
        return None
    diags.err("E0203", "`network` is NICs x bandwidth per NIC", values[0].span, label="expected `N x BW unit`",
              help=f"write `{key.example}`: 8 NICs of 400 Gb/s each")
    return None


_TOKEN_COUNT = re.compile(r"^(\d[\d_]*(?:\.\d+)?)([A-Za-z]+)$")


def _parse_tokens(key, values, setting, diags):
    """`tokens 15T`, `tokens 15 T`, `tokens 15_000_000_000_000` or `tokens 1.5e13`: a whole count."""
    help_text = f"write `{key.name} 15T` (15 x 10^12), `{key.name} 300B` or a plain number; " \
        "suffixes: " + ", ".join(f"`{s}`" for s in units.TOKEN_SCALES)
    atoms = values
    if len(atoms) == 1 and atoms[0].kind == "name" and _TOKEN_COUNT.match(atoms[0].text):
        number_text, suffix = _TOKEN_COUNT.match(atoms[0].text).groups()
        suffix_span = atoms[0].span
    elif len(atoms) == 2 and atoms[0].kind == "number" and atoms[1].kind == "name":
        number_text, suffix, suffix_span = atoms[0].text, atoms[1].text, atoms[1].span
    elif len(atoms) == 1 and atoms[0].kind == "number":
        number_text, suffix, suffix_span = atoms[0].text, "", atoms[0].span
    else:
        diags.err("E0203", f"`{key.name}` takes one count", atoms[0].span, label="expected a count such as `15T`",
                  help=help_text)
        return None
    if suffix and suffix not in units.TOKEN_SCALES:
        diags.err("E0205", f"`{suffix[:30]}` is not a multiplier of a token count", suffix_span,
                  label="not K, M, B, T or P", help=help_text)
        return None
    try:
        exact = Decimal(number_text.replace("_", "")) * units.TOKEN_SCALES.get(suffix, 1)
    except ArithmeticError:  # an exponent beyond Decimal's range: `1e99999999999`
        exact = Decimal("Infinity")
    if not exact.is_finite() or exact > key.limit:
        diags.err("E0207", f"`{key.name}` is too large", atoms[0].span, label=f"beyond {key.limit:.0e} tokens",
                  help=f"parc accepts up to {key.limit:.0e} tokens; check the number")
        return None
    if exact < 1:
        diags.err("E0207", f"`{key.name}` must be at least 1 token", atoms[0].span, label="too small",
                  help=help_text)
        return None
    if exact != exact.to_integral_value():
        diags.err("E0207", f"`{key.name}` is not a whole number of tokens", atoms[0].span,
                  label="has a fraction of a token", help=help_text)
        return None
    return int(exact)


def _parse_price(key, values, setting, diags):
    """`price 2.50 $/gpu-hour`: dollars per GPU-hour, positive and below `MAX_PRICE`."""
    units_text = ", ".join(f"`{u}`" for u in units.PRICES)
    if len(values) != 2 or values[0].kind != "number" or values[1].kind != "name":
        diags.err("E0203", f"`{key.name}` takes a number and a unit", values[0].span,
                  label="expected a number and `$/gpu-hour`", help=f"write `{key.example}`")
        return None
    number_atom, unit_atom = values
    if unit_atom.text not in units.PRICES:
        diags.err("E0205", f"`{unit_atom.text[:30]}` is not a unit of price", unit_atom.span, label="wrong unit",
                  help=f"prices are per GPU-hour: write `{key.name} {number_atom.text} $/gpu-hour`; units: {units_text}")
        return None
    value = float(number_atom.text.replace("_", "")) * units.PRICES[unit_atom.text]
    if not math.isfinite(value) or value <= 0 or value > MAX_PRICE:
        diags.err("E0207", f"`{key.name}` is out of range", number_atom.span, label="not a plausible price",
                  help=f"write a positive price of at most {MAX_PRICE:,} $ per GPU-hour, e.g. `{key.example}`")
        return None
    return value


_MONEY = re.compile(r"^\$(\d[\d_]*(?:\.\d+)?)([A-Za-z]*)$")
MAX_MONEY = 10**13
"""Largest spending cap in dollars: ten trillion, beyond any training run."""


def _parse_duration(key, values, setting, diags):
    """`deadline 60 days`: seconds; a positive number and a unit of time."""
    units_text = ", ".join(f"`{u}`" for u in units.DURATIONS)
    atoms = _number_and_unit(key, values, diags, "days? hours?",
                             f"write `{key.name} {values[0].text} days`; units: {units_text}",
                             "expected a number and `days`")
    if atoms is None:
        return None
    number_atom, unit_atom = atoms
    if unit_atom.text not in units.DURATIONS:
        fixed = next((u for u in units.DURATIONS if u.lower() == unit_atom.text.lower()), None)
        calendar = {"month": 30, "months": 30, "mo": 30, "year": 365, "years": 365, "y": 365, "yr": 365}
        per = calendar.get(unit_atom.text.lower())
        if fixed:
            help_text = f"units are lowercase: write `{key.name} {number_atom.text} {fixed}`"
        elif per:
            days = float(number_atom.text.replace("_", "")) * per
            help_text = (f"months and years differ in length: write days, e.g. `{key.name} {days:.0f} days`; "
                         f"units: {units_text}")
        else:
            help_text = f"write `{key.name} {number_atom.text} days`; units: {units_text}"
        diags.err("E0205", f"`{unit_atom.text[:30]}` is not a unit of time", unit_atom.span, label="wrong unit",
                  help=help_text)
        return None
    value = float(number_atom.text.replace("_", "")) * units.DURATIONS[unit_atom.text]
    if not math.isfinite(value) or value <= 0 or value > 100 * 365 * 86_400:
        diags.err("E0207", f"`{key.name}` is out of range", number_atom.span, label="not a plausible duration",
                  help=f"write a positive duration of at most a century, e.g. `{key.example}`")
        return None
    return value


def _parse_money(key, values, setting, diags):
    """`budget $2.5M`, `budget $750K`, `budget $2_500_000` or `budget 2.5M USD`: dollars."""
    scales = ", ".join(f"`{s}`" for s in units.MONEY_SCALES)
    help_text = f"write dollars with a `$`: `{key.example}`, `budget $750K` or `budget $2_500_000`; multipliers: {scales}"
    atoms = values
    number_text = suffix = None
    if len(atoms) == 1 and atoms[0].kind == "name" and _MONEY.match(atoms[0].text):
        number_text, suffix = _MONEY.match(atoms[0].text).groups()
    elif len(atoms) == 2 and atoms[1].kind == "name" and atoms[1].text in ("USD", "usd", "$"):
        if atoms[0].kind == "number":
            number_text, suffix = atoms[0].text, ""
        elif atoms[0].kind == "name" and _GLUED.match(atoms[0].text):
            number_text, suffix = _GLUED.match(atoms[0].text).groups()
    if number_text is None:
        first = atoms[0]
        if len(atoms) == 1 and first.kind in ("number", "name") and (first.kind == "number" or _GLUED.match(first.text)):
            diags.err("E0205", f"`{key.name}` needs a currency", first.span, label="dollars?", help=help_text)
        else:
            diags.err("E0205", f"`{' '.join(a.text for a in atoms)[:30]}` is not an amount of dollars", first.span,
                      label="expected `$` and a number", help=help_text)
        return None
    if suffix not in units.MONEY_SCALES and suffix != "":
        diags.err("E0205", f"`{suffix[:30]}` is not a multiplier of dollars", atoms[0].span,
                  label="not K, M or B", help=help_text)
        return None
    value = float(number_text.replace("_", "")) * units.MONEY_SCALES.get(suffix, 1)
    if not math.isfinite(value) or value <= 0 or value > MAX_MONEY:
        diags.err("E0207", f"`{key.name}` is out of range", atoms[0].span, label="not a plausible amount",
                  help=f"write a positive amount of at most ${MAX_MONEY:,}, e.g. `{key.example}`")
        return None
    return value


def _parse_gpu(key, values, setting, diags):
    """`gpu h100-sxm`, `gpu h100-sxm { hbm 96 GiB }`, or `gpu my-gpu { ...every field... }`."""
    if len(values) > 1 or (values and values[0].kind not in ("name", "string")):
        diags.err("E0203", "`gpu` takes one name", values[0].span if values else setting.span,
                  label="expected a GPU name", help="write `gpu h100-sxm`, or define one: `gpu my-gpu { hbm 96 GB ... }`")
        return None
    if not values:
        diags.err("E0203", "`gpu` needs a name", setting.key.span, label="which GPU?",
                  help="write `gpu h100-sxm`; `parc check` lists the catalogue in its help")
        return None
    return _block("gpu", setting, diags, [], "hardware.gpu")


def _parse_norm(key, values, setting, diags):
    """A positive real number, or off (None is returned only with a diagnostic: off is 0.0)."""
    atom = _one(key, values, diags)
    if atom is None:
        return None
    if atom.kind == "name" and atom.text in _FALSE:
        return 0.0
    number = math.nan
    if atom.kind == "number":
        try:
            number = float(atom.text.replace("_", ""))
        except ValueError:  # pragma: no cover - the lexer only admits numbers
            pass
    if not (math.isfinite(number) and number > 0):
        diags.err("E0203", f"`{key.name}` must be a positive number or off", atom.span,
                  label=f"`{atom.text[:30]}` is not a positive number", help=f"write `{key.example}`")
        return None
    return number


_PARSERS: dict[str, Callable] = {
    "count": _parse_count,
    "count0": _parse_count0,
    "bool": _parse_bool,
    "enum": _parse_enum,
    "bytes": _parse_bytes,
    "bandwidth": _parse_bandwidth,
    "flops": _parse_flops,
    "power": _parse_power,
    "string": _parse_string,
    "env": _parse_env,
    "list": _parse_list,
    "batch": _parse_batch,
    "recompute": _parse_recompute,
    "moe_layers": _parse_moe_layers,
    "moe_balance": _parse_moe_balance,
    "factor": _parse_factor,
    "positive": _parse_positive,
    "sharding": _parse_sharding,
    "network": _parse_network,
    "gpu": _parse_gpu,
    "norm": _parse_norm,
    "tokens": _parse_tokens,
    "price": _parse_price,
    "duration": _parse_duration,
    "money": _parse_money,
}


_VALUE_WORDS = {
    "count": "whole number >= 1",
    "count0": "whole number >= 0",
    "bool": "on \\| off",
    "bytes": "bytes: `80 GB`, `96 GiB`",
    "bandwidth": "bandwidth: `450 GB/s`, `400 Gb/s`",
    "flops": "compute: `989 TFLOP/s`",
    "power": "watts: `500 W`, `1.2 kW`",
    "string": "string or name",
    "env": 'NAME "value"',
    "list": "`[n, n, ...]`",
    "batch": "number [`sequences` \\| `tokens`]",
    "recompute": "none \\| selective \\| selective [modules] \\| full \\| full N",
    "moe_layers": "all \\| none \\| from K \\| every K",
    "moe_balance": "none \\| aux-free [RATE] \\| aux-loss [COEFF]",
    "factor": "number > 0 \\| none",
    "positive": "number > 0: `500000`, `1e-6`",
    "sharding": "none \\| zero1 \\| zero2 \\| zero3 \\| fsdp \\| hsdp R x S",
    "network": "N x bandwidth",
    "gpu": "catalogue name [`{ overrides }`]",
    "norm": "positive number \\| off",
    "tokens": "count [`K` \\| `M` \\| `B` \\| `T` \\| `P`]: `15T`",
    "price": "dollars per GPU-hour: `2.50 $/gpu-hour`",
    "duration": "number and `days` \\| `hours` \\| `weeks`: `60 days`",
    "money": "dollars: `$2.5M`, `$750K`",
}


def key_reference() -> str:
    """The settings of every block as Markdown tables: generated into docs/language.md."""
    out = []
    titles = {
        "model": "`model PRESET { ... }`",
        "hardware": "`hardware { ... }`",
        "gpu": "`gpu NAME { ... }` (inside `hardware`)",
        "train": "`train { ... }`",
        "tp": "`tp { ... }`",
        "pp": "`pp { ... }`",
        "dp": "`dp { ... }`",
        "cp": "`cp { ... }`",
        "launch": "`launch { ... }`",
        "target": "`target NAME { ... }` (NAME: torch, torchtitan, megatron)",
    }
    for kind, title in titles.items():
        out.append(f"### {title}\n")
        out.append("| key | value | `?` | meaning | example |")
        out.append("|---|---|---|---|---|")
        for key in BLOCK_KEYS[kind]:
            value = " \\| ".join(key.choices) if key.choices else _VALUE_WORDS[key.kind]
            aliases = ", ".join(f"`{a}` = `{b}`" for a, b in key.aliases)
            meaning = key.doc + (f" (aliases: {aliases})" if aliases else "")
            out.append(f"| `{key.name}` | {value} | {'yes' if key.holes else ''} | {meaning} | `{key.example}` |")
        out.append("")
    return "\n".join(out)
