"""What the target runtime cannot run: its schedules, cp flavours, shardings, ep folding and the
rank order its device mesh is built in (`compiler/targets.py` holds each runtime's facts)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ..diagnostics import Diagnostic, error, warning
from ..plan import Plan
from ..spec import modules_of_absent_parts
from ..targets import runtime
from . import rule
from .helpers import axis_span, labels, layout_span
from .predicates import megatron_fsdp_refuses, megatron_needs_sequence_parallel

BLOCKWISE_GENERATIONS = ("hopper", "blackwell")
"""Where Transformer Engine runs its blockwise fp8 recipe (`Float8BlockScaling`): compute capability
9.0 or later with CUDA 12.9's block-scaled GEMMs (`check_fp8_block_scaling_support`,
transformer_engine/pytorch/quantization.py, TE 2.9)."""


def _target_label(plan: Plan) -> tuple:
    return labels((plan.target.span_of("name"), f"target {plan.target.name}"))


def _names(values: tuple[str, ...]) -> str:
    return ", ".join(f"`{v}`" for v in values)


@rule
def target_schedule(plan: Plan) -> Iterator[Diagnostic]:
    rt, pp = runtime(plan.target), plan.layout.pp
    if not pp.degree or pp.degree == 1 or pp.schedule is None or pp.schedule in rt.schedules:
        return
    yield error("E0360", f"target {rt.name} has no `{pp.schedule}` pipeline schedule",
                pp.span_of("schedule") or axis_span(plan, "pp"), label=f"not a schedule of {rt.name}",
                labels=_target_label(plan),
                help=f"use `schedule {rt.schedules[-1]}` (`{rt.name}` runs {_names(rt.schedules)})")


@rule
def target_cp_flavour(plan: Plan) -> Iterator[Diagnostic]:
    rt, cp = runtime(plan.target), plan.layout.cp
    if not cp.degree or cp.degree == 1 or cp.flavour in rt.cp_flavours:
        return
    yield error("E0361", f"target {rt.name} has no `{cp.flavour}` context parallelism",
                cp.span_of("flavour") or axis_span(plan, "cp"), label=f"not a flavour of {rt.name}",
                labels=_target_label(plan),
                help=f"use `cp {{ flavour {rt.cp_flavours[0]} }}` (`{rt.name}` has {_names(rt.cp_flavours)})")


@rule
def target_sharding(plan: Plan) -> Iterator[Diagnostic]:
    rt, dp = runtime(plan.target), plan.layout.dp
    if dp.sharding is None or dp.sharding in rt.shardings:
        return
    yield error("E0362", f"target {rt.name} has no `{dp.sharding}` sharding", dp.span_of("sharding"),
                label=f"not a sharding of {rt.name}", labels=_target_label(plan),
                help=f"use one of {_names(rt.shardings)}")


@rule
def target_ep_fold(plan: Plan) -> Iterator[Diagnostic]:
    rt, ep = runtime(plan.target), plan.layout.ep
    if plan.target.name == "torch":
        return  # the generated job's own rule says it (E0602)
    if plan.layout.axis("ep") is not None and plan.target.name == "torchtitan":
        yield error("E0363", "target torchtitan has no expert-parallel layout axis", axis_span(plan, "ep"),
                    label="ep written as its own axis", labels=_target_label(plan),
                    help="fold it over the data-parallel ranks instead: `ep N over dp` "
                    "(torchtitan's ep borrows from dp_shard, cp and tp)")
        return
    outside = [a for a in ep.folded_over if a not in rt.ep_fold]
    borrowed = [a for a in ("tp", "cp", "dp") if (getattr(plan.layout, a).degree or 1) > 1]
    if not outside and plan.target.name == "torchtitan" and ep.folded_over and list(ep.folded_over) != borrowed:
        yield error("E0363", f"torchtitan's ep borrows from all of {' x '.join(borrowed)}",
                    ep.span_of("folded_over") or axis_span(plan, "ep"), label="a part of them",
                    labels=_target_label(plan), help=f"write `ep {ep.degree} over {' x '.join(borrowed)}`")
        return
    if outside:
        yield error("E0363", f"target {rt.name} cannot fold ep over {' x '.join(outside)}",
                    ep.span_of("folded_over") or axis_span(plan, "ep"), label=f"not foldable in {rt.name}",
                    labels=_target_label(plan), help=f"fold ep over {' x '.join(rt.ep_fold)} only")


@rule
def target_compile_loss_alone(plan: Plan) -> Iterator[Diagnostic]:
    """`compile-loss` picks torchtitan's `compile.components`, which it reads only under
    `compile.enable`: alone it is a no-op the user likely did not mean."""
    target = plan.target
    if target.compile_loss is None or target.compile:
        return
    key, value = target.span_of("compile_loss.key"), target.span_of("compile_loss")
    if key is not None and value is not None and key.line == value.line:
        value = replace(value, start=key.start, col=key.col)  # `compile-loss off`, key and value
    yield warning("W0365", "`compile-loss` without `compile on` changes nothing", value,
                  label="nothing is compiled", labels=_target_label(plan),
                  help="compile-loss only matters with compile on: add `compile on`, or remove it")


@rule
def target_attention_backend_contradicts(plan: Plan) -> Iterator[Diagnostic]:
    """`attention-backend` and a written `flash-attention` name one attention: unfused exactly when
    flash attention is off (`targets.attention_backend`)."""
    target = plan.target
    if target.attention_backend is None or target.span_of("flash_attention") is None:
        return
    if (target.attention_backend == "unfused") == (not target.flash_attention):
        return
    stated = "on" if target.flash_attention else "off"
    yield error("E0374", f"`attention-backend {target.attention_backend}` contradicts `flash-attention {stated}`",
                _option_span(target, "attention_backend"), label="this backend",
                labels=labels((_option_span(target, "flash_attention"), f"flash-attention {stated}")),
                help="keep one of the two: `attention-backend` names the attention alone")


FLASH_ATTN_MAX_HEAD_DIM = 256
"""flash-attn's FlashAttention-2 runs query-key head dims up to 256, in multiples of 8, equal to the
value head dim (Transformer Engine 2.16's `get_attention_backend`: "Supported: head_dim_qk =
head_dim_v, head_dim_qk %8 = 0, head_dim_qk <= 256"; "Disabling FlashAttention 2 as it does not
support MLA")."""


@rule
def target_flash_attn_cannot_run(plan: Plan) -> Iterator[Diagnostic]:
    """`attention-backend flash` turns Transformer Engine's cuDNN and unfused attention off
    (Megatron-Core's `_set_attention_backend`): an attention flash-attn cannot run leaves no
    backend, and the job stops at its first layer."""
    target, m = plan.target, plan.model
    if target.name != "megatron" or target.attention_backend != "flash":
        return
    # only MLA gives queries, keys and values different head dims (`v-head-dim` needs `kv-lora-rank`)
    if m.mla:
        why, key = "multi-head latent attention", "kv_lora_rank"
    elif m.head_dim > FLASH_ATTN_MAX_HEAD_DIM or m.head_dim % 8:
        why, key = f"head dim {m.head_dim}", "head_dim"
    else:
        return
    yield error("E0375", f"`attention-backend flash` cannot run {why}", _option_span(target, "attention_backend"),
                label="flash-attn's FlashAttention-2", labels=labels((m.span_of(key), why)),
                help="use `attention-backend auto` (cuDNN's fused attention) or `fused`; flash-attn runs head dims "
                     f"up to {FLASH_ATTN_MAX_HEAD_DIM} in multiples of 8, the same for queries, keys and values")


@rule
def target_fp8_option_alone(plan: Plan) -> Iterator[Diagnostic]:
    """`fp8-recipe`, `fp8-params` and `float8-all-gather` concern only fp8 linears: under bf16 or
    fp16 they are no-ops the user likely did not mean (`fp8-params` also states whether Megatron-LM
    keeps NVFP4 weights, so under nvfp4 it counts)."""
    target = plan.target
    precision = plan.training.precision
    if precision == "fp8":
        return
    # `fp8-params` also states Megatron-LM's NVFP4 weights (`targets.fp4_params`)
    stated_params = target.span_of("fp8_params") is not None and precision != "nvfp4"
    for field, option, on in (("fp8_recipe", "fp8-recipe", target.fp8_recipe is not None),
                              ("fp8_params", "fp8-params", stated_params),
                              ("float8_all_gather", "float8-all-gather", target.float8_all_gather)):
        if not on:
            continue
        yield warning("W0366", f"`{option}` under `precision {plan.training.precision}` changes nothing",
                      _option_span(target, field), label="no fp8 linears",
                      labels=labels((plan.training.span_of("precision"), f"precision {plan.training.precision}")),
                      help=f"write `precision fp8`, or remove `{option}`")


def _option_span(target, field: str):
    """A target option as written, its key and value together where they share a line."""
    value = target.span_of(field)
    key = target.span_of(f"{field}.key")
    if key is not None and value is not None and key.line == value.line:
        value = replace(value, start=key.start, col=key.col)
    return value


@rule
def target_fp8_params_without_zero1(plan: Plan) -> Iterator[Diagnostic]:
    """Megatron-LM holds and gathers fp8 parameters only through its distributed optimizer
    (parc's zero1): under DDP or torch FSDP2 `fp8-params` is a no-op. Under bf16 W0366 says it."""
    target = plan.target
    sharding = plan.layout.dp.sharding or "none"
    if (target.name != "megatron" or target.span_of("fp8_params") is None or sharding == "zero1"
            or plan.training.precision not in ("fp8", "nvfp4")):
        return
    yield warning("W0367", f"`fp8-params` under `sharding {sharding}` changes nothing", _option_span(target, "fp8_params"),
                  label="no distributed optimizer to gather fp8 weights",
                  labels=labels((plan.layout.dp.span_of("sharding"), f"sharding {sharding}")),
                  help="write `dp { sharding zero1 }` (Megatron-LM's distributed optimizer), or remove `fp8-params`")


@rule
def target_rank_order(plan: Plan) -> Iterator[Diagnostic]:
    rt = runtime(plan.target)
    if rt.rank_order is None or plan.layout.order_open:
        return
    written = [a.name for a in plan.layout.axes if a.degree != 1 and a.name in rt.rank_order]
    wanted = [a for a in rt.rank_order if a in written]
    if written == wanted:
        return
    order = " x ".join(f"{a} {getattr(plan.layout, a).degree or '?'}" for a in wanted)
    yield error("E0364", f"target {rt.name} builds its mesh as {' x '.join(rt.rank_order)} (fastest first)",
                layout_span(plan), label=f"written as {' x '.join(written)}", labels=_target_label(plan),
                help=f"write the layout as `{order}`")


@rule
def target_megatron_refuses(plan: Plan) -> Iterator[Diagnostic]:
    """What Megatron-LM's argument checks or Megatron-Core refuse at start-up or in the first step,
    said with the spec: zero3 (torch FSDP2) beside pp, ep, tied embeddings or fp16 (E0623); tp
    without sequence parallelism beside `tp-overlap all` or MoE layers (E0624); DeepSeek-V3's
    expert bias, which Megatron-Core has only for a sigmoid router (E0625); fp8 on a GPU without
    fp8 tensor cores, which Transformer Engine refuses (E0626); MXFP8 before Blackwell, or the
    blockwise recipe before Hopper on a GPU with fp8 (E0627);
    NVFP4 on a GPU without FP4 tensor cores (E0629) or with the userbuffers tp overlap, whose
    buffers Transformer Engine has only for FP8 and MXFP8 (E0630)."""
    if plan.target.name != "megatron":
        return
    lay, model, train = plan.layout, plan.model, plan.training
    if lay.dp.sharding == "zero3":
        refused = megatron_fsdp_refuses(lay.pp.degree, lay.ep.degree, model.tied_embeddings, train.precision)
        if refused:
            yield error("E0623", f"zero3 is Megatron-LM's torch FSDP2 here, which does not run with {refused}", lay.dp.span_of("sharding"),
                        label="zero3: --use-torch-fsdp2", labels=_target_label(plan),
                        help="use `sharding zero1` (the distributed optimizer), or `target torch`, "
                        "whose FSDP2 runs with all of them")
    tp = lay.tp.degree or 1
    needs = megatron_needs_sequence_parallel(model.is_moe, plan.target.tp_overlap or "backward")
    if tp > 1 and lay.tp.sequence_parallel is False and needs:
        yield error("E0624", f"tp above 1 with {needs} needs sequence parallelism in Megatron-LM",
                    lay.tp.span_of("sequence_parallel") or axis_span(plan, "tp"), label="sequence parallelism off",
                    labels=_target_label(plan), help="write `tp { sequence-parallel on }`")
    if model.is_moe and model.moe_balance == "aux-free":
        yield error("E0625", "the expert bias needs a sigmoid router in Megatron-Core; parc's router is a softmax",
                    model.span_of("moe_balance") or model.span, label="aux-free balancing",
                    labels=_target_label(plan),
                    help="use `moe-balance aux-loss` under `target megatron`, or `target torch` or "
                    "`target torchtitan`, which run the expert bias over a softmax")
    if any(h.name == "hardware.gpu" for h in plan.holes):
        return  # `gpu ?` holds a stand-in GPU: the cluster search checks each candidate filled in
    if plan.target.fp8_recipe == "mxfp8" and train.precision == "fp8" and plan.cluster.gpu.generation != "blackwell":
        yield error("E0627", f"the {plan.cluster.gpu.name} has no MXFP8: block scaling needs Blackwell's tensor cores",
                    plan.target.span_of("fp8_recipe"), label="fp8-recipe mxfp8",
                    labels=labels((plan.cluster.gpu.span_of("generation", "name"),
                                   f"{plan.cluster.gpu.generation or 'no'} generation")),
                    help="use `fp8-recipe tensorwise` (per-tensor current scaling), `blockwise` or `delayed` on this GPU")
    if plan.target.fp8_recipe == "blockwise" and train.precision == "fp8" and plan.cluster.gpu.fp8_flops \
            and plan.cluster.gpu.generation not in BLOCKWISE_GENERATIONS:  # (no fp8 at all: E0626)
        yield error("E0627", f"the {plan.cluster.gpu.name} has no fp8 block-scaled GEMMs: Transformer Engine's "
                    "blockwise recipe needs compute capability 9.0 or later",
                    plan.target.span_of("fp8_recipe"), label="fp8-recipe blockwise",
                    labels=labels((plan.cluster.gpu.span_of("generation", "name"),
                                   f"{plan.cluster.gpu.generation or 'no'} generation")),
                    help="use a Hopper or Blackwell GPU, or write `precision bf16`")
    if train.precision == "nvfp4" and plan.target.tp_overlap == "all":
        yield error("E0630", "the userbuffers tp overlap (Transformer Engine's) has no NVFP4",
                    plan.target.span_of("tp_overlap") or train.span_of("precision"), label="tp-overlap all",
                    labels=labels((train.span_of("precision"), "precision nvfp4")),
                    help="write `tp-overlap backward` (Megatron-LM's default), as NVIDIA's NVFP4 recipes "
                    "turn the userbuffers overlap off, or `precision fp8`")
    if train.precision == "nvfp4" and not plan.cluster.gpu.fp4_flops:
        yield error("E0629", f"the {plan.cluster.gpu.name} has no FP4 tensor cores", train.span_of("precision"),
                    label="precision nvfp4", labels=_target_label(plan),
                    help="Transformer Engine runs NVFP4 from compute capability 10.0 (Blackwell: `gpu b200`, "
                    "`gb200-nvl72`, `b300`, `gb300-nvl72`); on this GPU use "
                    + ("`precision fp8` or `bf16`" if plan.cluster.gpu.fp8_flops else "`precision bf16`"))
    if train.precision == "fp8" and not plan.cluster.gpu.fp8_flops:
        yield error("E0626", f"the {plan.cluster.gpu.name} has no fp8 tensor cores", train.span_of("precision"),
                    label="precision fp8", labels=_target_label(plan),
                    help="Transformer Engine runs fp8 from compute capability 8.9 (Ada, Hopper, "
                    "Blackwell): use `precision bf16` on this GPU")


# the part of the model each Megatron-Core recompute module runs again, and where a spec states it
_MODULE_PARTS = {
    "mla_up_proj": ("multi-head latent attention", "`kv-lora-rank`"),
    "moe": ("mixture-of-experts layers", "`experts`"),
    "moe_act": ("mixture-of-experts layers", "`experts`"),
    "shared_experts": ("shared experts", "`shared-experts`"),
    "mlp": ("dense FFN layers", "dense layers"),
}


@rule
def target_recompute_modules(plan: Plan) -> Iterator[Diagnostic]:
    """`recompute selective [...]` names Megatron-Core's `--recompute-modules` (E0628): only under
    `target megatron`; each module of a part the model has (Megatron-Core refuses `mla_up_proj`
    without latent attention, TransformerConfig at core_v0.16.0, and the others would recompute
    nothing); and not `moe_act` or `layernorm` with fp8 under delayed scaling, which
    TransformerConfig refuses ("Delayed scaling does not support moe_act and layernorm recompute
    for fp8")."""
    train = plan.training
    modules = train.recompute_modules
    if not modules:
        return
    span = train.span_of("recompute")
    written = f"recompute selective [{', '.join(modules)}]"
    if plan.target.name != "megatron":
        yield error("E0628", f"recompute modules are Megatron-Core's, not target {plan.target.name}'s", span,
                    label=written, labels=_target_label(plan),
                    help="write `recompute selective` (the runtime's own policy), or `target megatron`")
        return
    model = plan.model
    absent = modules_of_absent_parts(modules, mla=model.mla, moe=model.is_moe, shared=model.shared_experts > 0,
                                     dense=not model.is_moe or len(model.moe_layers) < model.layers)
    for module in absent:
        part, key = _MODULE_PARTS[module]
        yield error("E0628", f"recompute module `{module}` needs {part}, which the model has not", span,
                    label=written, labels=labels((model.span_of("name", "layers"), "the model")),
                    help=f"remove `{module}` (it recomputes {part}: {key})")
    delayed = (plan.target.fp8_recipe or "delayed") == "delayed"
    refused = [m for m in modules if m in ("moe_act", "layernorm")]
    if train.precision == "fp8" and delayed and refused:
        yield error("E0628", f"Megatron-Core does not recompute {' or '.join(refused)} under fp8 delayed scaling",
                    span, label=written, labels=labels((train.span_of("precision"), "precision fp8")),
                    help="use `fp8-recipe tensorwise` or `mxfp8` in `target megatron { ... }`, or drop "
                    + " and ".join(f"`{m}`" for m in refused))
