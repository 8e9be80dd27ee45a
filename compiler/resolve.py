"""Stage 3, typed IR -> Plan: presets, catalogue entries, defaults and derived facts, once.

Resolution reports what makes a Plan impossible to build (an unknown preset, a custom model
missing its width, a cluster size that contradicts the layout) and otherwise leaves judgement to
the checks. Every default it applies is listed in `DEFAULTS` and in the language reference.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from . import targets
from .catalog import gpus as gpu_catalog
from .catalog import models as model_catalog
from .diagnostics import Diagnostic, Label, error
from .latent import latent_norm_widths, mla_linears
from .plan import (
    NORM_EPS,
    ROPE_THETA,
    Allow,
    Axis,
    Cluster,
    ContextParallel,
    DataParallel,
    EnvVar,
    ExpertParallel,
    Gpu,
    Hole,
    Launch,
    Layout,
    Model,
    Network,
    PipelineParallel,
    Plan,
    Target,
    TensorParallel,
    Training,
)
from .source import Span
from .spec import HOLE, MAX_DEGREE, BlockSpec, Located, Spec
from .suggest import did_you_mean, english_list

DEFAULTS = {
    "train.micro-batch": "1",
    "train.precision": "bf16",
    "train.optimizer": "adamw",
    "train.recompute": "none",
    "train.offload-activations": "none (no layer's activations leave the GPU)",
    "train.clip-grad-norm": "off",
    "tp.sequence-parallel": "on",
    "pp.schedule": "1f1b",
    "pp.virtual-stages": "1 (2 for interleaved-1f1b, interleaved-zb, zbv and dualpipe-v)",
    "dp.sharding": "none (DDP)",
    "cp.flavour": "ring",
    "model.kv-heads": "heads (multi-head attention)",
    "model.head-dim": "hidden / heads",
    "model.kv-lora-rank": "none (ordinary attention)",
    "model.q-lora-rank": "none (with kv-lora-rank: queries projected from the hidden state)",
    "model.rope-head-dim": "64 (with kv-lora-rank)",
    "model.v-head-dim": "head-dim (with kv-lora-rank)",
    "model.tied-embeddings": "off",
    "model.activation": "swiglu",
    "model.norm": "rmsnorm",
    "model.position": "rope",
    "model.rope-theta": "10000 (Su et al. 2021's RoPE)",
    "model.norm-eps": "1e-5",
    "model.expert-ffn": "ffn",
    "model.moe-layers": "all (when experts > 0)",
    "model.moe-balance": "none (aux-free: rate 0.001; aux-loss: coefficient 0.01)",
    "model.capacity-factor": "none (dropless)",
    "model.mtp": "0 (no multi-token prediction)",
    "hardware.gpus-per-node": "the GPU's usual node (8; 4 for gb200-nvl72 and gb300-nvl72)",
    "hardware.link": "the GPU's own (nvlink; xgmi for mi300x; nvl72 for gb200-nvl72 and gb300-nvl72)",
    "hardware.network": "the GPU's usual node NICs (e.g. 8 x 400 Gb/s for H100)",
    "hardware.nodes": "derived from the layout when every degree is known",
    "job": "the spec's file name",
    "launch.port": "29500",
    "launch.steps": "10",
    "launch.restarts": "0 (a failure ends the job)",
}

_MULTI_STAGE = ("interleaved-1f1b", "interleaved-zb", "zbv", "dualpipe-v")

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
"""Job, partition, account and namespace names: safe as a shell word, a YAML scalar, a path part."""
SAFE_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}$")
SAFE_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
SAFE_TIME = re.compile(r"^(\d{1,3}-)?\d{1,3}(:\d{2}){0,2}$")


class _Resolver:
    def __init__(self, spec: Spec):
        self.spec = spec
        self.diags: list[Diagnostic] = []
        self.file_span = Span(file=spec.file, start=0, end=0, line=1, col=1, end_line=1, end_col=1)

    def err(self, code: str, message: str, span: Span | None, **fields) -> None:
        self.diags.append(error(code, message, span or self.file_span, **fields))

    # -----------------------------------------------------------------------------------------
    def plan(self) -> Plan | None:
        spec = self.spec
        if not any((spec.layout, spec.model, spec.hardware, spec.train, spec.job, spec.launch, spec.axis_options)):
            self.err("E0209", "the spec is empty", None, label="nothing to compile",
                     help="a spec needs a layout, a model, a GPU and training settings, e.g.\n"
                     "    tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)\n    model llama3-405b\n"
                     "    hardware { gpu h100-sxm }\n    train { seq 8192, global-batch 2048 }")
            return None
        if spec.layout is None:
            self.err("E0209", "the spec has no layout line", None, label="expected a layout",
                     help="add a line such as `tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)`")
        if spec.model is None:
            self.err("E0209", "the spec has no model", None, label="expected a model",
                     help="add `model llama3-8b` (a preset) or `model { layers 32, hidden 4096, ... }`")
        train = spec.train or BlockSpec(kind="train", span=self.file_span)
        seq = self.setting(train, "seq")
        model = self.model(spec.model, seq) if spec.model is not None else None
        gpu = self.gpu()
        if spec.train is None:
            self.err("E0209", "the spec has no `train` block", None, label="expected `train { ... }`",
                     help="add `train { seq 8192, global-batch 1024 }`")
        layout = self.layout(model) if spec.layout is not None else None
        cluster = self.cluster(gpu, layout) if gpu is not None else None
        training = self.training(train, layout) if spec.train is not None else None
        launch = self.launch()
        target = self.target()
        if None in (model, gpu, layout, cluster, training, launch, target):
            return None
        try:
            return Plan(
                source=spec.file,
                model=model,
                cluster=cluster,
                layout=layout,
                training=training,
                launch=launch,
                target=target,
                holes=tuple(Hole(name=h.value, span=h.span) for h in spec.holes) + self.cluster_holes(),
                allows=tuple(Allow(code=a.code.value, statement=a.statement, code_span=a.code.span)
                             for a in spec.allows),
            )
        except ValueError as exc:  # a value the plan's types reject: a bug, said plainly
            self.err("E0299", "internal error while building the plan", None,
                     notes=(str(exc).splitlines()[0],), help="please report this spec")
            return None

    @staticmethod
    def setting(block: BlockSpec | None, name: str, default: Any = None) -> Any:
        if block is None or name not in block.settings:
            return default
        return block.settings[name].value

    @staticmethod
    def span(block: BlockSpec | None, name: str) -> Span | None:
        if block is None:
            return None
        if name in block.settings:
            return block.settings[name].span
        return None

    # -----------------------------------------------------------------------------------------
    def model(self, block: BlockSpec, seq: int | None) -> Model | None:
        base: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        name = "custom"
        if block.preset is not None:
            wanted = block.preset.value
            wanted = model_catalog.ALIASES.get(wanted, wanted)
            if wanted not in model_catalog.MODELS:
                self.err("E0202", f"unknown model preset `{block.preset.value}`", block.preset.span,
                         label="not a preset",
                         help=did_you_mean(block.preset.value, model_catalog.MODELS)
                         + "\nor define the model: `model { layers 32, hidden 4096, ffn 14336, heads 32, vocab 128256 }`")
                return None
            name = wanted
            base = dict(model_catalog.MODELS[wanted])
            spans = {key: block.preset.span for key in base}
        for key, located in block.settings.items():
            base[key] = located.value
            spans[key] = located.span
        missing = [k for k in ("layers", "hidden", "ffn", "heads", "vocab") if k not in base]
        if missing:
            self.err("E0210", "the model is missing " + english_list([f"`{m}`" for m in missing], "and"),
                     block.span, label="incomplete model",
                     help="a custom model needs layers, hidden, ffn, heads and vocab, e.g.\n"
                     "    model { layers 32, hidden 4096, ffn 14336, heads 32, kv-heads 8, vocab 128256 }\n"
                     "or start from a preset: `model llama3-8b { layers 16 }`")
            return None
        heads = base["heads"]
        kv_heads = base.get("kv_heads", heads)
        if "head_dim" not in base and base["hidden"] % heads:
            self.err("E0212", f"hidden {base['hidden']} is not a multiple of heads {heads}",
                     spans.get("hidden", block.span), label="head size is not whole",
                     labels=(Label(span=spans.get("heads", block.span), message=f"{heads} heads"),),
                     help=f"set `head-dim` explicitly, or use a head count that divides {base['hidden']}")
            return None
        if kv_heads > heads or heads % kv_heads:
            self.err("E0212", f"kv-heads {kv_heads} must divide heads {heads}",
                     spans.get("kv_heads", block.span), label="GQA groups are not whole",
                     help="choose kv-heads among " + ", ".join(str(d) for d in _divisors(heads)))
            return None
        experts = base.get("experts", 0)
        moe_rule = base.get("moe_layers", "all" if experts else "none")
        layers = base["layers"]
        moe_layers = self.moe_layers(moe_rule, layers, spans.get("moe_layers", block.span)) if experts else ()
        if moe_layers is None:
            return None
        top_k = base.get("top_k", 0)
        if experts and not top_k:
            self.err("E0210", "a mixture-of-experts model needs `top-k`", block.span, label="experts without top-k",
                     help="add `top-k 2` (experts per token)")
            return None
        if experts and top_k > experts:
            self.err("E0212", f"top-k {top_k} exceeds {experts} experts", spans.get("top_k", block.span),
                     label="more experts per token than exist", help=f"choose top-k of at most {experts}")
            return None
        fields = dict(
            name=name,
            layers=layers,
            hidden=base["hidden"],
            ffn=base["ffn"],
            heads=heads,
            kv_heads=kv_heads,
            head_dim=base.get("head_dim", base["hidden"] // heads),
            vocab=base["vocab"],
            tied_embeddings=base.get("tied_embeddings", False),
            activation=base.get("activation", "swiglu"),
            norm=base.get("norm", "rmsnorm"),
            position=base.get("position", "rope"),
            **self.rope_and_norm(base, {k: spans[k] for k in block.settings}),
            experts=experts,
            top_k=top_k if experts else 0,
            expert_ffn=base.get("expert_ffn", base["ffn"]) if experts else 0,
            shared_experts=base.get("shared_experts", 0) if experts else 0,
            moe_layers=moe_layers,
            **self.moe_routing(base, spans, block, bool(experts)),
            **self.window(base, spans, layers),
        )
        latent = self.latent(base, spans, block)
        if latent is None:
            return None
        fields.update(latent, mtp_layers=base.get("mtp", 0))
        total, active = count_parameters(fields, seq or 0)
        return Model(**fields, parameters=total, active_parameters=active, spans=spans)

    def rope_and_norm(self, base: dict, written: dict) -> dict:
        """RoPE's base and the norms' epsilon. A `rope-theta` the block writes without RoPE would
        change nothing: an error (a preset's own theta stays, whatever position the block writes)."""
        if base.get("position", "rope") != "rope" and "rope_theta" in written:
            self.err("E0212", "`rope-theta` without RoPE", written["rope_theta"],
                     label=f"position is {base.get('position')}", help="remove it, or write `position rope`")
        return dict(rope_theta=float(base.get("rope_theta", ROPE_THETA)), norm_eps=float(base.get("norm_eps", NORM_EPS)))

    def moe_routing(self, base: dict, spans: dict, block: BlockSpec, moe: bool) -> dict:
        """Balancing and capacity of the routed experts; on a dense model they are an error
        (a preset's MoE fields only matter with experts, but these are written by the user)."""
        balance, factor = base.get("moe_balance"), base.get("capacity_factor", 0.0)
        if not moe:
            for name, given in (("moe_balance", balance), ("capacity_factor", factor)):
                if given and name in spans:
                    self.err("E0212", f"`{name.replace('_', '-')}` on a dense model", spans[name],
                             label="no routed experts to balance",
                             help="remove it, or make the model MoE: `experts 8, top-k 2`")
            return {}
        return dict(moe_balance=balance.mode if balance else "none",
                    balance_rate=balance.rate if balance else 0.0, capacity_factor=factor)

    def latent(self, base: dict, spans: dict, block: BlockSpec) -> dict | None:
        """Multi-head latent attention's widths (`compiler/latent.py`). Its other keys without
        `kv-lora-rank` would change nothing: an error, as is a GQA count (MLA gives every head its
        own key and value) or a model without RoPE (MLA's RoPE is its decoupled part)."""
        kv_lora = base.get("kv_lora_rank", 0)
        others = [k for k in ("q_lora_rank", "rope_head_dim", "v_head_dim") if k in base]
        if not kv_lora:
            for key in others:
                self.err("E0212", f"`{key.replace('_', '-')}` without `kv-lora-rank`", spans[key],
                         label="no latent attention to shape",
                         help="add `kv-lora-rank 512` (multi-head latent attention), or remove it")
            return None if others else {}
        heads = base["heads"]
        if base.get("kv_heads", heads) != heads:
            self.err("E0212", "multi-head latent attention with grouped keys and values", spans["kv_heads"],
                     label=f"kv-heads {base['kv_heads']} under kv-lora-rank",
                     labels=(Label(span=spans["kv_lora_rank"], message="latent attention"),),
                     help="MLA gives every head its own key and value from the latent: remove `kv-heads`")
            return None
        if base.get("position", "rope") != "rope":
            self.err("E0212", "multi-head latent attention without RoPE", spans["kv_lora_rank"],
                     label=f"position is {base['position']}",
                     help="MLA carries positions in its decoupled RoPE dims: write `position rope`")
            return None
        return dict(kv_lora_rank=kv_lora, q_lora_rank=base.get("q_lora_rank", 0),
                    rope_head_dim=base.get("rope_head_dim", 64),
                    v_head_dim=base.get("v_head_dim", base.get("head_dim", base["hidden"] // heads)))

    def window(self, base: dict, spans: dict, layers: int) -> dict:
        """Sliding-window attention and which layers use it. Megatron-Core's rule
        (`is_layer_window_attention`): 1-based layer l is windowed unless `window_attn_skip_freq`
        divides l; Hugging Face's gpt-oss and Gemma configs write the same pattern as
        `layer_types`. `full-attention-every` alone has no window to skip: an error."""
        window, every = base.get("window", 0), base.get("full_attention_every", 0)
        if every and not window:
            self.err("E0212", "`full-attention-every` without a window", spans["full_attention_every"],
                     label="no windowed layers to interleave",
                     help="add the window, e.g. `window 128, full-attention-every 2`, or remove it")
            return {}
        if not window:
            return {}
        windowed = tuple(i for i in range(layers) if not every or (i + 1) % every)
        return dict(window=window, full_attention_every=every, windowed_layers=windowed)

    def moe_layers(self, rule, layers: int, span: Span) -> tuple[int, ...] | None:
        if isinstance(rule, tuple):  # presets write ("from", 3)
            kind, k = rule
        elif isinstance(rule, str):
            kind, k = rule, 0
        else:
            kind, k = rule.rule, rule.k
        if kind == "all":
            return tuple(range(layers))
        if kind == "none":
            return ()
        if kind == "from":
            if k >= layers:
                self.err("E0212", f"moe-layers from {k} leaves no MoE layer in {layers}", span,
                         label="every layer would be dense", help=f"choose K below {layers}")
                return None
            return tuple(range(k, layers))
        return tuple(i for i in range(layers) if (i + 1) % k == 0)

    # -----------------------------------------------------------------------------------------
    def gpu(self) -> Gpu | None:
        block = self.spec.gpu
        question = self.spec.cluster.gpu if self.spec.cluster else None
        if block is None and question is not None:
            # `gpu ?`: the rest of the spec is checked on the first GPU search will try
            # (search answers the question itself: compiler/search/cluster.py)
            for choice in question.choices:
                if gpu_catalog.ALIASES.get(choice.value, choice.value) not in gpu_catalog.GPUS:
                    self.err("E0202", f"unknown GPU `{choice.value}`", choice.span, label="not in the catalogue",
                             help=did_you_mean(choice.value, list(gpu_catalog.GPUS) + list(gpu_catalog.ALIASES))
                             + "\n`gpu ? in [...]` chooses among catalogue GPUs")
                    return None
            first = question.choices[0] if question.choices else None
            name = first.value if first else next(iter(gpu_catalog.GPUS))
            block = BlockSpec(kind="gpu", preset=first or Located(value=name, span=question.span), span=question.span)
        if block is None:
            hardware_span = self.spec.hardware.span if self.spec.hardware else None
            self.err("E0209", "the spec names no GPU", hardware_span, label="expected `gpu NAME`",
                     help="add `hardware { gpu h100-sxm }`; catalogue: " + ", ".join(gpu_catalog.GPUS))
            return None
        name = block.preset.value if block.preset else "custom"
        key = gpu_catalog.ALIASES.get(name, name)
        spans: dict[str, Span] = {}
        if key in gpu_catalog.GPUS:
            entry = dict(gpu_catalog.GPUS[key])
            spans = {k: block.preset.span for k in entry}
            name = key
        elif block.settings:
            entry = {"description": f"custom GPU `{name}`", "generation": "hopper", "fp8_flops": None,
                     "fp4_flops": None}
        else:
            self.err("E0202", f"unknown GPU `{name}`", block.preset.span if block.preset else block.span,
                     label="not in the catalogue",
                     help=did_you_mean(name, list(gpu_catalog.GPUS) + list(gpu_catalog.ALIASES))
                     + "\nor define it: `gpu my-gpu { hbm 96 GB, bf16 800 TFLOP/s, link 450 GB/s, nvlink-domain 8 }`")
            return None
        renames = {"hbm": "hbm_bytes", "bf16": "bf16_flops", "fp8": "fp8_flops", "fp4": "fp4_flops",
                   "link": "link_bandwidth"}
        for field, located in block.settings.items():
            entry[renames.get(field, field)] = located.value
            spans[renames.get(field, field)] = located.span
        missing = [k for k, f in (("hbm", "hbm_bytes"), ("bf16", "bf16_flops"), ("link", "link_bandwidth"),
                                  ("nvlink-domain", "nvlink_domain")) if f not in entry]
        if missing:
            self.err("E0210", f"the GPU `{name}` is missing " + english_list([f"`{m}`" for m in missing], "and"),
                     block.span, label="incomplete GPU",
                     help=f"a GPU outside the catalogue needs every figure:\n    gpu {name} {{ hbm 96 GB, bf16 800 TFLOP/s, "
                     "fp8 1600 TFLOP/s, link 450 GB/s, nvlink-domain 8, generation hopper }")
            return None
        entry.pop("gpus_per_node", None)
        entry.pop("nics", None)
        entry.pop("nic_bandwidth", None)
        entry.pop("price", None)
        entry.pop("price_source", None)
        return Gpu(name=name, spans=spans, **entry)

    def catalog_defaults(self) -> dict:
        block = self.spec.gpu
        name = block.preset.value if block and block.preset else ""
        return gpu_catalog.GPUS.get(gpu_catalog.ALIASES.get(name, name), {})

    # -----------------------------------------------------------------------------------------
    def layout(self, model: Model | None) -> Layout | None:
        spec = self.spec
        written = spec.layout.axes
        axes: list[Axis] = []
        stride: int | None = 1
        for a in written:
            degree = None if a.degree.value == HOLE else a.degree.value
            axes.append(Axis(name=a.name, degree=degree, stride=stride, spans={"degree": a.degree.span}))
            stride = None if stride is None or degree is None else stride * degree
        if stride is not None and stride > MAX_DEGREE:
            expression = " x ".join(f"{a.name} {a.degree}" for a in axes)
            self.err("E0207", f"the layout spans {stride:,} GPUs", spec.layout.span,
                     label=f"{expression} = {stride:,}",
                     help=f"parc plans up to {MAX_DEGREE:,} GPUs; check the degrees")
            return None
        degrees = {a.name: a.degree for a in axes}
        options = spec.axis_options

        def opt(axis: str, name: str, default=None):
            return self.setting(options.get(axis), name, default)

        def opt_spans(axis: str) -> dict[str, Span]:
            block = options.get(axis)
            spans = {k: v.span for k, v in block.settings.items()} if block else {}
            axis_obj = next((a for a in written if a.name == axis), None)
            if axis_obj is not None:
                spans["degree"] = axis_obj.degree.span
            return spans

        def hole(value):
            return None if value == HOLE else value

        for axis, block in options.items():
            if axis not in degrees and not (axis == "ep" and spec.ep_fold is not None):
                self.err("E0211", f"options for `{axis}`, which is not in the layout", block.span,
                         label=f"`{axis}` has degree 1 here",
                         help=f"add `{axis}` to the layout line (`... x {axis} 2`) or remove these options")

        sp = hole(opt("tp", "sequence_parallel", True))
        tp = TensorParallel(degree=degrees.get("tp", 1), sequence_parallel=sp, spans=opt_spans("tp"))

        schedule = hole(opt("pp", "schedule", "1f1b"))
        v_default = None if schedule is None else (2 if schedule in _MULTI_STAGE else 1)
        virtual = opt("pp", "virtual_stages", v_default)
        virtual = hole(virtual)
        pp = PipelineParallel(degree=degrees.get("pp", 1), schedule=schedule, virtual_stages=virtual,
                              split=opt("pp", "split"), spans=opt_spans("pp"))

        sharding = opt("dp", "sharding")
        dp_spans = opt_spans("dp")
        if sharding == HOLE:
            dp = DataParallel(degree=degrees.get("dp", 1), sharding=None, spans=dp_spans)
        else:
            mode = sharding.mode if sharding is not None else "none"
            if mode == "hsdp" and sharding.replicate is None:
                self.err("E0203", "hsdp needs its replicate x shard factors", dp_spans.get("sharding"),
                         label="how many replicas, sharded over how many ranks?",
                         help="write `sharding hsdp R x S` with R x S = dp, e.g. `sharding hsdp 8 x 8` for dp 64")
                return None
            dp = DataParallel(degree=degrees.get("dp", 1), sharding=mode,
                              replicate=sharding.replicate if sharding else None,
                              shard=sharding.shard if sharding else None, bucket=opt("dp", "bucket"),
                              spans=dp_spans)

        cp = ContextParallel(degree=degrees.get("cp", 1), flavour=opt("cp", "flavour", "ring"), spans=opt_spans("cp"))

        fold = spec.ep_fold
        if fold is not None:
            ep_spans = {"degree": fold.degree.span, "folded_over": fold.span}
            if "ep" in degrees:
                self.err("E0211", "`ep` is both a layout axis and folded", fold.span,
                         label="second definition of ep",
                         labels=(Label(span=next(a.span for a in written if a.name == "ep"), message="ep in the layout"),),
                         help="either write ep on the layout line (its own ranks) or fold it (`ep 8 over dp`), not both")
                return None
            over = []
            for target in fold.over:
                if target.value not in degrees:
                    self.err("E0211", f"`ep` folds over `{target.value}`, which is not in the layout", target.span,
                             label="not a layout axis",
                             help="fold over axes on the layout line: "
                             + ", ".join(f"`{a}`" for a in degrees if a != "ep"))
                    return None
                if target.value in over:
                    self.err("E0208", f"`{target.value}` is folded twice", target.span, label="repeated",
                             help="name each axis once")
                    return None
                over.append(target.value)
            # keep the fold in rank order, whatever order it was written in
            over.sort(key=lambda name: [a.name for a in axes].index(name))
            ep = ExpertParallel(degree=hole(fold.degree.value), folded_over=tuple(over), spans=ep_spans)
        else:
            ep = ExpertParallel(degree=degrees.get("ep", 1), folded_over=(), spans=opt_spans("ep"))

        order = spec.order.value if spec.order else "fixed"
        layout_spans = {"axes": spec.layout.span}
        if spec.order:
            layout_spans["order"] = spec.order.span
        return Layout(axes=tuple(axes), order_open=order == HOLE, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep,
                      spans=layout_spans)

    # -----------------------------------------------------------------------------------------
    def cluster(self, gpu: Gpu, layout: Layout | None) -> Cluster | None:
        spec = self.spec
        hw = spec.hardware
        defaults = self.catalog_defaults()
        spans: dict[str, Span] = {}

        placed = spec.layout.gpus_per_node if spec.layout else None
        stated = hw.settings.get("gpus_per_node") if hw else None
        if placed is not None and stated is not None and placed.value != stated.value:
            self.err("E0214", f"the layout says {placed.value} GPUs per node, the hardware {stated.value}",
                     placed.span, label=f"{placed.value} GPUs per node",
                     labels=(Label(span=stated.span, message=f"{stated.value} GPUs per node"),),
                     help="state GPUs per node once, on the layout line: `on nodes(8 gpus, nvlink)`")
            return None
        chosen = placed or stated
        gpus_per_node = chosen.value if chosen else defaults.get("gpus_per_node", 8)
        if chosen:
            spans["gpus_per_node"] = chosen.span

        link_located = (spec.layout.link if spec.layout else None) or (hw.settings.get("link") if hw else None)
        # a rack-scale NVLink domain (GB200, GB300 NVL72) spans more GPUs than a node holds
        rack = gpu.nvlink_domain > defaults.get("gpus_per_node", 8)
        default_link = "xgmi" if gpu.name == "mi300x" else "nvl72" if rack else "nvlink"
        link = link_located.value if link_located else default_link
        if link_located:
            spans["link"] = link_located.span
        if link == "pcie":
            domain, intra = 1, float(gpu_catalog.PCIE_BANDWIDTH)
        elif link == "nvl72":
            domain, intra = gpu.nvlink_domain, gpu.link_bandwidth
        else:
            domain, intra = min(gpu.nvlink_domain, gpus_per_node), gpu.link_bandwidth

        net = hw.settings.get("network") if hw else None
        if net is not None:
            network = Network(nics=net.value.nics, nic_bandwidth=net.value.nic_bandwidth,
                              spans={"nics": net.span, "nic_bandwidth": net.span})
        else:
            network = Network(nics=defaults.get("nics", gpus_per_node),
                              nic_bandwidth=defaults.get("nic_bandwidth", 400 * gpu_catalog.Gbps))

        world, nodes = self.world_size(layout, gpus_per_node, spans)
        asked = self.spec.cluster is not None and self.spec.cluster.size is not None
        if world is None and layout is not None and layout.world_size is None and not self.diags_have("E0302") \
                and not asked:
            return None
        price = hw.settings.get("price") if hw else None
        if price is not None:
            spans["price"] = price.span
        limit = self.power_limit(hw, gpu, spans)
        memory = hw.settings.get("hbm_bandwidth") if hw else None
        if memory is not None:
            spans["hbm_bandwidth"] = memory.span
        host = hw.settings.get("host_bandwidth") if hw else None
        if host is not None:
            spans["host_bandwidth"] = host.span
        nvls, sharp = self.in_network(hw, gpu, link, domain, spans)
        return Cluster(gpu=gpu, gpus_per_node=gpus_per_node, link=link, domain_size=domain, intra_bandwidth=intra,
                       network=network, world_size=world, nodes=nodes, spans=spans,
                       price=price.value if price else defaults.get("price"),
                       price_source="spec" if price else defaults.get("price_source"),
                       power_limit=limit, hbm_bandwidth=memory.value if memory is not None else None,
                       host_bandwidth=host.value if host is not None else None, nvls=nvls, sharp=sharp)

    def in_network(self, hw, gpu: Gpu, link: str, domain: int, spans: dict) -> tuple[bool | None, bool | None]:
        """The spec's `nvls` and `sharp` (None where unstated): in-network reduction, never
        assumed. NVLink SHARP needs NVSwitches that reduce: the third-generation switch of Hopper
        and Blackwell systems, which an NVLink domain of fewer than 8 GPUs (GPUs linked directly,
        a 4-GPU board) does not have (E0373)."""
        nvls = hw.settings.get("nvls") if hw else None
        sharp = hw.settings.get("sharp") if hw else None
        stated_sharp = bool(sharp.value) if sharp is not None else None
        if sharp is not None:
            spans["sharp"] = sharp.span
        if nvls is None:
            return None, stated_sharp
        if nvls.value and not gpu_catalog.nvls_capable(link, gpu.generation, domain):
            # which of `nvls_capable`'s conditions fails, in the user's terms
            if link not in ("nvlink", "nvl72"):
                where = f"{gpu.name} over {'an' if link[0] in 'aeiouxh' else 'a'} `{link}` link has no NVSwitch"
            elif gpu.generation not in gpu_catalog.NVLS_GENERATIONS:
                where = f"the NVSwitches of {gpu.generation.capitalize()} systems ({gpu.name}) do not reduce"
            else:
                where = f"a {domain}-GPU NVLink domain links its GPUs directly, without an NVSwitch"
            self.err("E0373", f"`nvls on` (NVLink SHARP) needs NVSwitches that reduce: {where}", nvls.span,
                     label="no NVLS here",
                     help="NVLS runs on the NVSwitches of Hopper and Blackwell systems of 8 or more NVLinked "
                          "GPUs (HGX H100/H200/B200, GB200/GB300 NVL72); write `nvls off` or drop it")
            return None, stated_sharp
        spans["nvls"] = nvls.span
        return bool(nvls.value), stated_sharp

    def power_limit(self, hw, gpu: Gpu, spans: dict) -> float | None:
        """The spec's `power-limit`, when the derating law applies to it (`power.py`): the GPU's
        board power must be known and the limit at least `LOWEST_SHARE` of it (E0370)."""
        from . import power

        stated = hw.settings.get("power_limit") if hw else None
        if stated is None:
            return None
        board = power.BOARD_POWER.get(gpu.name)
        if board is None:
            known = ", ".join(sorted(power.BOARD_POWER))
            self.err("E0370", f"parc does not know the board power of `{gpu.name}`", stated.span,
                     label="no board power to derate from",
                     help=f"a power limit applies to a catalogue GPU ({known}); for your own GPU, "
                          f"write the peak it sustains: `gpu {gpu.name} {{ bf16 ... TFLOP/s }}`")
            return None
        if stated.value < power.LOWEST_SHARE * board:
            self.err("E0370", f"a {stated.value:g} W limit is below what a {board:g} W `{gpu.name}` accepts",
                     stated.span, label="too low to model",
                     help=f"write a limit of at least {power.LOWEST_SHARE * board:g} W, e.g. "
                          f"`power-limit {0.7 * board:g} W`")
            return None
        spans["power_limit"] = stated.span
        return stated.value

    def cluster_holes(self) -> tuple[Hole, ...]:
        """`nodes ?`, `gpus ?`, `gpu ?`: holes only `parc search` fills (compiler/search/cluster.py)."""
        question = self.spec.cluster
        if question is None:
            return ()
        return tuple(Hole(name=f"hardware.{h.key}", span=h.span) for h in (question.size, question.gpu) if h)

    def diags_have(self, code: str) -> bool:
        return any(d.code == code for d in self.diags)

    def world_size(self, layout: Layout | None, per_node: int, spans: dict) -> tuple[int | None, int | None]:
        """The one place world size is decided: stated and derived sizes must agree."""
        hw = self.spec.hardware
        nodes_stated = hw.settings.get("nodes") if hw else None
        gpus_stated = hw.settings.get("gpus") if hw else None
        stated = None
        stated_text = ""
        stated_span = None
        if nodes_stated is not None and gpus_stated is not None:
            if nodes_stated.value * per_node != gpus_stated.value:
                self.err("E0301", f"{plural(nodes_stated.value, 'node')} of {per_node} GPUs are not "
                         f"{gpus_stated.value:,} GPUs",
                         gpus_stated.span, label=f"{gpus_stated.value} GPUs",
                         labels=(Label(span=nodes_stated.span, message=f"{nodes_stated.value} x {per_node} = "
                                       f"{nodes_stated.value * per_node}"),),
                         help="state the cluster size once: `nodes N` or `gpus G`")
                return None, None
        if nodes_stated is not None:
            stated = nodes_stated.value * per_node
            stated_text = f"{plural(nodes_stated.value, 'node')} x {per_node} GPUs per node = {stated:,} GPUs"
            stated_span = nodes_stated.span
            spans["nodes"] = nodes_stated.span
        elif gpus_stated is not None:
            stated = gpus_stated.value
            stated_text = f"{stated:,} GPUs"
            stated_span = gpus_stated.span
            spans["world_size"] = gpus_stated.span
            if stated % per_node:
                self.err("E0303", f"{stated:,} GPUs do not fill whole {per_node}-GPU nodes", gpus_stated.span,
                         label=f"{stated:,} / {per_node} = {stated / per_node:.2f} nodes",
                         help=f"use a multiple of {per_node}: {stated // per_node * per_node:,} or "
                         f"{(stated // per_node + 1) * per_node:,} GPUs")
                return None, None
        if stated is not None and stated > MAX_DEGREE:
            self.err("E0207", f"the cluster has {stated:,} GPUs", stated_span, label="too large",
                     help=f"parc plans up to {MAX_DEGREE:,} GPUs")
            return None, None
        derived = layout.world_size if layout is not None else None
        asked = self.spec.cluster is not None and self.spec.cluster.size is not None
        if layout is not None and derived is None and stated is None and asked:
            return None, None  # `nodes ?` with open degrees: only search can size it (no plan)
        if layout is not None and derived is None and stated is None:
            self.err("E0302", "a layout with holes needs the cluster size", self.spec.layout.span,
                     label="how many GPUs should search fill?",
                     help="state it in hardware: `hardware { gpu h100-sxm, nodes 1024 }` (or `gpus 8192`)")
            return None, None
        if derived is not None and stated is not None and derived != stated:
            expression = " x ".join(f"{a.name} {a.degree}" for a in layout.axes)
            self.err("E0301", f"the layout uses {derived:,} GPUs but the cluster has {stated:,}",
                     self.spec.layout.span, label=f"{expression} = {derived:,} GPUs",
                     labels=(Label(span=stated_span, message=stated_text),),
                     help=f"make the product of degrees {stated:,}, or change the cluster size to "
                     + (plural(derived // per_node, "node") if derived % per_node == 0 else f"{derived:,} GPUs"))
            return None, None
        world = stated if stated is not None else derived
        if world is None:
            return None, None
        if world % per_node:
            expression = " x ".join(f"{a.name} {a.degree}" for a in layout.axes) if layout else ""
            self.err("E0303", f"{world:,} GPUs do not fill whole {per_node}-GPU nodes", self.spec.layout.span,
                     label=f"{expression} = {world:,}; {world:,} / {per_node} = {world / per_node:.2f} nodes",
                     help=f"make the product of degrees a multiple of {per_node}")
            return None, None
        return world, world // per_node

    # -----------------------------------------------------------------------------------------
    def training(self, block: BlockSpec, layout: Layout | None) -> Training | None:
        spans = {k: v.span for k, v in block.settings.items()}
        seq = self.setting(block, "seq")
        batch = self.setting(block, "global_batch")
        missing = [name for name, value in (("seq", seq), ("global-batch", batch)) if value is None]
        if missing:
            self.err("E0210", "`train` is missing " + english_list([f"`{m}`" for m in missing], "and"), block.span,
                     label="incomplete training settings", help="write `train { seq 8192, global-batch 2048 }`")
            return None
        if batch.unit == "tokens":
            if batch.count % seq:
                self.err("E0212", f"{batch.count:,} tokens are not whole sequences of {seq:,}",
                         spans["global_batch"], label=f"{batch.count:,} / {seq:,} = {batch.count / seq:.2f}",
                         help=f"use a multiple of {seq:,} tokens, e.g. {max(1, batch.count // seq) * seq:,}")
                return None
            global_batch = batch.count // seq
        else:
            global_batch = batch.count
        micro = self.setting(block, "micro_batch", 1)
        micro = None if micro == HOLE else micro
        recompute = self.setting(block, "recompute")
        modules: tuple[str, ...] = ()
        if recompute == HOLE:
            mode, layers = None, None
        elif recompute is None:
            mode, layers = "none", None
        else:
            mode, layers, modules = recompute.mode, recompute.layers, recompute.modules
        tokens, steps = block.settings.get("tokens"), block.settings.get("steps")
        if tokens is not None and steps is not None:
            self.err("E0230", "the training budget is stated twice", steps.span, label="`steps` here",
                     labels=(Label(span=tokens.span, message="and `tokens` here"),),
                     help="state the budget once: `tokens 15T` (the run's steps follow from the global batch) "
                     "or `steps 250000`")
            return None
        accum = None
        degree = layout.batch_degree if layout else None
        if degree and micro and global_batch % (degree * micro) == 0:
            accum = global_batch // (degree * micro)
        return Training(seq_len=seq, global_batch=global_batch, micro_batch=micro, grad_accum=accum,
                        precision=self.setting(block, "precision", "bf16"),
                        optimizer=self.setting(block, "optimizer", "adamw"),
                        recompute=mode, recompute_layers=layers, recompute_modules=modules,
                        offload_layers=self.setting(block, "offload_activations", 0),
                        clip_grad_norm=self.setting(block, "clip_grad_norm", 0.0) or None, spans=spans,
                        budget_tokens=tokens.value if tokens else None, budget_steps=steps.value if steps else None)

    # -----------------------------------------------------------------------------------------
    def target(self) -> Target | None:
        """`target NAME { options }`: the runtime, and only the options that runtime has."""
        block = self.spec.target
        if block is None:
            return Target()
        if block.preset is None:
            self.err("E0203", "`target` needs the runtime's name", block.span, label="no name",
                     help="write `target torch`, `target torchtitan` or `target megatron`")
            return None
        name = block.preset.value
        if name not in targets.TARGETS:
            self.err("E0202", f"unknown target `{name}`", block.preset.span, label="not a target",
                     help=did_you_mean(name, targets.TARGETS) + "\ntargets: "
                     + ", ".join(f"`{t}`" for t in targets.TARGETS))
            return None
        accepted = targets.runtime(name).options
        ok = True
        for field, value in block.settings.items():
            option = field.replace("_", "-")
            if option not in accepted:
                ok = False
                have = ", ".join(f"`{o}`" for o in accepted) or "none"
                self.err("E0219", f"target `{name}` has no option `{option}`", value.span,
                         label=f"not an option of {name}",
                         help=f"remove it; `{name}` options: {have}")
        if not ok:
            return None
        spans = {"name": block.preset.span} | {k: v.span for k, v in block.settings.items()} | {
            f"{k}.key": span for k, span in block.key_spans.items()}
        return Target(name=name, spans=spans, **{k: v.value for k, v in block.settings.items()})

    def launch(self) -> Launch | None:
        spec = self.spec
        block = spec.launch
        spans: dict[str, Span] = {k: v.span for k, v in block.settings.items()} if block else {}
        ok = True
        if spec.job is not None:
            job = spec.job.value
            spans["job"] = spec.job.span
            ok &= self.safe(job, SAFE_NAME, spec.job.span, "job name", "job llama3-405b")
        else:
            stem = PurePath(spec.file).stem
            job = re.sub(r"[^A-Za-z0-9._-]", "-", stem).strip("-._")[:63] or "parc-job"
            if not job[0].isalnum():
                job = "job-" + job
        fields: dict[str, Any] = {}
        for name, pattern, example in (
            ("image", SAFE_IMAGE, 'image "nvcr.io/nvidia/pytorch:24.07-py3"'),
            ("partition", SAFE_NAME, 'partition "batch"'),
            ("account", SAFE_NAME, 'account "my-team"'),
            ("namespace", SAFE_NAME, 'namespace "training"'),
            ("time_limit", SAFE_TIME, 'time-limit "04:00:00"'),
        ):
            value = self.setting(block, name)
            if value is not None:
                ok &= self.safe(value, pattern, spans[name], name.replace("_", "-"), example)
                fields[name] = value
        env = []
        for var in self.setting(block, "env", ()):
            if not SAFE_ENV_NAME.fullmatch(var.name):
                ok = False
                self.err("E0215", f"`{var.name[:40]}` is not a valid environment variable name", spans["env"],
                         label="letters, digits and _ only", help='write `env NCCL_DEBUG "WARN"`')
                continue
            if "\x00" in var.value or len(var.value) > 4096:
                ok = False
                self.err("E0215", f"the value of `{var.name}` cannot be passed safely", spans["env"],
                         label="NUL byte or over 4096 characters", help="shorten the value")
                continue
            env.append(EnvVar(name=var.name, value=var.value))
        if not ok:
            return None
        port = self.setting(block, "port", 29500)
        if not 1024 <= port <= 65535:
            self.err("E0207", f"port {port} is outside 1024..65535", spans.get("port"), label="not a usable port",
                     help="write `port 29500`")
            return None
        return Launch(job=job, env=tuple(env), port=port, steps=self.setting(block, "steps", 10),
                      restarts=self.setting(block, "restarts", 0), spans=spans, **fields)

    def safe(self, value: str, pattern: re.Pattern, span: Span, what: str, example: str) -> bool:
        if pattern.fullmatch(value):  # not match: `$` would accept a final "\n"
            return True
        shown = value[:40].encode("unicode_escape").decode("ascii")
        self.err("E0215", f"the {what} `{shown}` contains characters parc will not put in a launcher", span,
                 label="unsafe characters", notes=(f"allowed: {pattern.pattern}",),
                 help=f"use letters, digits, `.`, `_` and `-`, e.g. `{example}`")
        return False


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def count_parameters(model: dict, seq: int) -> tuple[int, int]:
    """Total and per-token-active parameters: exact shapes, no linear biases.

    Per layer: attention h x (q + 2 kv) + q x h (multi-head latent attention: its down and up
    projections and latent norms, `latent.mla_linears`); two norms (a LayerNorm has weight and bias);
    a dense FFN has 2 (GELU) or 3 (SwiGLU) matrices of h x ffn; a MoE layer has a router h x E and
    (E + shared) experts of that shape with `expert_ffn`. Plus embeddings (twice when untied),
    learned positions (seq x h) and the final norm; and each multi-token prediction module (a layer
    of the last layer's kind, its enorm, hnorm and final norm, and its 2h x h projection).
    """
    h = model["hidden"]
    q = model["heads"] * model["head_dim"]
    kv = model["kv_heads"] * model["head_dim"]
    norm = 2 * h if model["norm"] == "layernorm" else h
    matrices = 3 if model["activation"] == "swiglu" else 2
    attention = h * (q + 2 * kv) + q * h + 2 * norm
    if model.get("kv_lora_rank"):  # multi-head latent attention: its own matrices and latent norms
        q_lora, kv_lora = model.get("q_lora_rank", 0), model["kv_lora_rank"]
        linears = mla_linears(h, model["heads"], model["head_dim"], q_lora, kv_lora, model["rope_head_dim"],
                              model["v_head_dim"])
        per_element = 2 if model["norm"] == "layernorm" else 1
        attention = (sum(w.weights for w in linears) + per_element * sum(latent_norm_widths(q_lora, kv_lora))
                     + 2 * norm)
    dense_ffn = matrices * h * model["ffn"]
    expert = matrices * h * model.get("expert_ffn", 0)
    experts = model.get("experts", 0)
    shared = model.get("shared_experts", 0)
    moe_total = h * experts + (experts + shared) * expert
    moe_active = h * experts + (model.get("top_k", 0) + shared) * expert
    n_moe = len(model.get("moe_layers", ()))
    n_dense = model["layers"] - n_moe
    embed = model["vocab"] * h * (1 if model["tied_embeddings"] else 2)
    position = seq * h if model["position"] == "learned" else 0
    common = embed + position + norm + model["layers"] * attention + n_dense * dense_ffn
    total, active = common + n_moe * moe_total, common + n_moe * moe_active
    mtp = model.get("mtp_layers", 0)
    if mtp:  # each module: a layer of the last layer's kind, two input norms, the 2h -> h projection, a norm
        last_moe = (model["layers"] - 1) in set(model.get("moe_layers", ()))
        module = attention + 3 * norm + 2 * h * h
        total += mtp * (module + (moe_total if last_moe else dense_ffn))
        active += mtp * (module + (moe_active if last_moe else dense_ffn))
    return total, active


def resolve(spec: Spec) -> tuple[Plan | None, list[Diagnostic]]:
    """Build the Plan; returns None (with errors) when the spec cannot describe one."""
    resolver = _Resolver(spec)
    plan = resolver.plan()
    return plan, resolver.diags


def strip_spans(data: Any) -> Any:
    """A plan's JSON without source spans: what generated files and golden tests keep."""
    if isinstance(data, dict):
        return {k: strip_spans(v) for k, v in data.items()
                if k != "statement" and not k.endswith(("span", "spans"))}
    if isinstance(data, list):
        return [strip_spans(v) for v in data]
    return data


def plan_json(plan: Plan) -> dict:
    """The plan as generated files keep it: no spans, and the spec named by its file name only, so
    the output is the same wherever the spec was compiled from (no absolute paths)."""
    data = strip_spans(plan.model_dump(mode="json"))
    data["source"] = PurePath(plan.source).name
    return data

