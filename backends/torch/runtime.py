"""Runtime files of the generated job: parallel.py, model.py, train.py.

Each file is one Jinja2 template in `templates/`; this module computes every value they print
from the Plan (the templates only choose code and place values). What the runtime does with a
layout is described in docs/runtime.md; the pipeline chunks come from `parc.stages` only.

Vocabulary of the generated code: the *mesh* lists the layout's axes slowest first (the reverse
of the layout line, whose first axis varies fastest); *data* ranks are those that hold the same
dense parameters but see different tokens (dp, cp, and ep when it is a layout axis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ...diagnostics import Diagnostic, Severity, error, warning
from ...memory.allocator import GENERATED_ALLOC_CONF
from ...memory.parameters import expert_shard_dim
from ...plan import Plan
from ...stages import V_SCHEDULES, pipeline_chunks
from ...timing import plain_alone, zero1_bucket_size
from .render import render

SCHEDULE_CLASSES = {
    "gpipe": "ScheduleGPipe",
    "1f1b": "Schedule1F1B",
    "interleaved-1f1b": "ScheduleInterleaved1F1B",
    "interleaved-zb": "ScheduleInterleavedZeroBubble",
    "zbv": "ScheduleZBVZeroBubble",
    "dualpipe-v": "ScheduleDualPipeV",
}
LOOPED = {"gpipe": "ScheduleLoopedBFS", "1f1b": "ScheduleInterleaved1F1B"}
"""The multi-chunk schedule torch runs for gpipe and 1f1b when a spec asks for virtual stages."""
ZERO_BUBBLE = ("interleaved-zb", "zbv", "dualpipe-v")
DATA_AXES = ("dp", "cp", "ep")
"""Axes whose ranks see different tokens: a dense parameter's gradient is averaged over them."""
STATE_KEYS = {"adamw": ("exp_avg", "exp_avg_sq"), "adam": ("exp_avg", "exp_avg_sq"), "sgd": ("momentum_buffer",)}
HAS_STEP = {"adamw": True, "adam": True, "sgd": False}
DEFAULT_LR = "3e-4"
INIT_STD = 0.02


def files(plan: Plan) -> dict[str, str]:
    layout = Layout.of(plan)
    return {
        "model.py": render("model.py.jinja", **model_context(plan)),
        "parallel.py": render("parallel.py.jinja", **parallel_context(plan, layout)),
        "train.py": render("train.py.jinja", **train_context(plan, layout)),
        "rehearse.py": render("rehearse.py.jinja", **rehearse_context(plan, layout)),
    }


# ---------------------------------------------------------------------------------------------
# The mesh


@dataclass(frozen=True)
class Layout:
    """The plan's layout as the generated code sees it: mesh dims and the derived degrees."""

    dims: tuple[str, ...]
    """Mesh dim names, slowest first."""
    shape: tuple[int, ...]
    degrees: dict[str, int]
    """Degree of every layout axis (1 when absent)."""
    data_dims: tuple[str, ...]
    """Mesh dims of degree > 1 whose ranks see different tokens, in mesh order."""

    @classmethod
    def of(cls, plan: Plan) -> Layout:
        lay = plan.layout
        degrees = {name: lay.degree(name) or 1 for name in ("tp", "pp", "dp", "cp")}
        degrees["ep"] = lay.ep.degree or 1
        dims: list[str] = []
        shape: list[int] = []
        for axis in reversed(lay.axes):
            if axis.name == "dp" and lay.dp.sharding == "hsdp":
                dims += ["dp_replicate", "dp_shard"]
                shape += [lay.dp.replicate, lay.dp.shard]
            else:
                dims.append(axis.name)
                shape.append(axis.degree)
        if "dp" not in {a.name for a in lay.axes}:
            # A data-parallel dim of size 1: fully_shard needs a mesh even with one replica (it
            # carries mixed precision and, with cp or ep, the gradient reduction).
            dims.insert(0, "dp")
            shape.insert(0, 1)
        if (lay.dp.sharding or "none") in ("none", "zero1"):
            # DDP semantics through FSDP2: a (replicate, shard) mesh whose shard dim has one rank.
            dims.append("dp_shard")
            shape.append(1)
        data = tuple(d for d, n in zip(dims, shape, strict=True) if n > 1 and (d in DATA_AXES or d.startswith("dp_"))
                     and not (d == "ep" and lay.ep.folded_over))
        return cls(tuple(dims), tuple(shape), degrees, data)

    def size(self, dim: str) -> int:
        return self.shape[self.dims.index(dim)]

    @property
    def data_degree(self) -> int:
        return math.prod(self.size(d) for d in self.data_dims)


def _literal(value) -> str:
    """A Python literal, strings in double quotes (the generated code's style)."""
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, tuple):
        return _tuple(value)
    return repr(value)


def _tuple(values) -> str:
    """A Python tuple literal (one element keeps its comma)."""
    values = list(values)
    if len(values) == 1:
        return f"({_literal(values[0])},)"
    return "(" + ", ".join(_literal(v) for v in values) + ")"


def data_mesh_code(plan: Plan, layout: Layout) -> tuple[list[str], str, bool]:
    """Lines building `data`, the mesh fully_shard reduces gradients over (and, for zero1,
    `replicas`, its data-parallel dim), its description, and whether it is 2-D."""
    sharding = plan.layout.dp.sharding or "none"
    lines = []
    if sharding == "hsdp":
        shard = [d for d in layout.data_dims if d != "dp_replicate"]
        if shard == ["dp_shard"]:
            return ['data = world["dp_replicate", "dp_shard"]'], "hsdp's 2-D (replicate, shard) mesh", True
        name = "_".join(shard)
        return [f'world[{", ".join(_literal(d) for d in shard)}]._flatten("{name}")',
                f'data = world["dp_replicate", "{name}"]'], "hsdp's 2-D (replicate, shard) mesh", True
    dims = layout.data_dims or ("dp",)
    if len(dims) == 1:
        name = dims[0]
    else:
        name = "_".join(dims)
        lines.append(f'{"replicas = " if sharding == "zero1" else ""}'
                     f'world[{", ".join(_literal(d) for d in dims)}]._flatten("{name}")')
    what = " x ".join(f"{d} {layout.size(d)}" for d in dims)
    if sharding in ("none", "zero1"):
        if sharding == "zero1" and len(dims) == 1:
            lines.append(f'replicas = world["{name}"]')
        lines.append(f'data = world["{name}", "dp_shard"]  # replicate over {what}, shards of one rank')
        return lines, f"({what}) replicas x shards of one rank (DDP semantics)", True
    lines.append(f'data = world["{name}"]')
    return lines, f"{what}, sharded", False


class ExpertMesh(NamedTuple):
    """`ep_mesh`'s answer; `shape` is (rest, edp, edp_shard, ep)."""

    digits: list[int]
    permutation: list[int]
    shape: list[int]

    @property
    def edp(self) -> int:
        """Ranks holding the same experts: the group FSDP2 shards them over."""
        return self.shape[1]


def ep_mesh(plan: Plan, layout: Layout) -> ExpertMesh:
    """Digits, permutation and shape turning the world's rank grid into (rest, edp, edp_shard,
    ep); edp_shard has one rank (DDP-style reduction of expert gradients). tp counts as data: each
    tp rank routes its own share of the tokens through the (whole) experts.

    ep takes the fastest `ep` positions of the folded axes' combined index (the last folded dim
    fastest, as the world mesh orders them), so a folded dim may split into a slow digit (its
    edp part) and a fast one (its ep part): the world grid is first reshaped into these digits.
    Each of edp and ep then lists its digits in the world's order (slowest first), so the ranks
    of every edp and ep group ascend with their mesh coordinate. That order is required, not
    cosmetic: a process group orders its ranks ascending (new_group sorts them), and DTensor and
    FSDP2 take all-gathered shard i from group rank i as the shard of mesh coordinate i. With tp
    (a fast world dim) listed before the folded dp's slow digit, ep 2 over dp 4 x tp 2 gave the
    edp group (0, 4, 1, 5): FSDP2 swapped the middle shards of every expert weight."""
    lay = plan.layout
    ep = layout.degrees["ep"]
    folded_axes = lay.ep.folded_over or ("ep",)
    folded = [d for d in layout.dims if (d in folded_axes or (d.startswith("dp_") and "dp" in folded_axes))
              and layout.size(d) > 1]
    data = [d for d in layout.dims if d not in folded and (d in DATA_AXES or d.startswith("dp_")
                                                           or (d == "tp" and plan.model.is_moe))]
    fast: dict[str, int] = {}  # folded dim -> the size of its digit inside ep
    left = ep
    for d in reversed(folded):
        size = layout.size(d)
        fast[d] = size if left >= size else left
        assert left % fast[d] == 0 and size % fast[d] == 0, (folded, ep)
        left //= fast[d]
    assert left == 1, (folded, ep)
    digits: list[int] = []
    rest_digits, edp_digits, ep_digits = [], [], []
    for d in layout.dims:
        size = layout.size(d)
        slow = size // fast.get(d, 1)
        if slow > 1 or d not in fast:  # the dim's slow digit (the whole dim unless folded)
            (edp_digits if d in data or d in fast else rest_digits).append(len(digits))
            digits.append(slow)
        if d in fast:
            ep_digits.append(len(digits))
            digits.append(fast[d])
    permutation = rest_digits + edp_digits + ep_digits
    rest = math.prod(digits[i] for i in rest_digits)
    edp = math.prod(digits[i] for i in edp_digits)
    return ExpertMesh(digits, permutation, [rest, edp, 1, ep])


# ---------------------------------------------------------------------------------------------
# Contexts


def model_context(plan: Plan) -> dict:
    m = plan.model
    moe_layers = set(m.moe_layers) if m.is_moe else set()
    parts = [f"{m.layers} layers, hidden {m.hidden}, {m.heads} heads of {m.head_dim}"]
    if m.kv_heads != m.heads:
        parts.append(f"{m.kv_heads} kv heads (GQA)")
    parts.append(f"{m.activation} FFN {m.ffn}, {m.norm}, {m.position} positions, vocabulary {m.vocab}")
    if m.tied_embeddings:
        parts.append("tied embeddings")
    if m.is_moe:
        parts.append(f"{len(moe_layers)} MoE layers of {m.experts} experts (top-{m.top_k}, FFN {m.expert_ffn}"
                     + (f", {m.shared_experts} shared" if m.shared_experts else "") + ")")
    return dict(
        job=plan.launch.job,
        description=_wrap("Model: " + "; ".join(parts) + "."),
        layers=m.layers, hidden=m.hidden, ffn=m.ffn, heads=m.heads, kv_heads=m.kv_heads, head_dim=m.head_dim,
        vocab=m.vocab, seq_len=plan.training.seq_len, tied=m.tied_embeddings, activation=m.activation,
        norm=m.norm, position=m.position, norm_eps=repr(m.norm_eps), rope_theta=repr(m.rope_theta),
        moe=m.is_moe, experts=m.experts, top_k=m.top_k, expert_ffn=m.expert_ffn,
        shared_experts=m.shared_experts, moe_layers=_layers_literal(sorted(moe_layers)),
        window=m.window, windowed_layers=_layers_literal(list(m.windowed_layers)),
        moe_balance=m.moe_balance, balance_rate=repr(m.balance_rate), capacity_factor=m.capacity_factor,
        balance_text={"none": "no load balancing",
                      "aux-free": "auxiliary-loss-free load balancing (DeepSeek-V3's expert bias)",
                      "aux-loss": "the Switch Transformer's auxiliary loss"}[m.moe_balance],
        capacity_text=f"capacity factor {m.capacity_factor:g} (copies beyond it dropped)" if m.capacity_factor
        else "dropless (no capacity limit)",
        dense_layers=len(moe_layers) < m.layers,
        init_std=repr(INIT_STD), output_init_std=repr(INIT_STD / math.sqrt(2 * m.layers)),
    )


def _layers_literal(layers: list[int]) -> str:
    """`range(a, b)` for consecutive layers, else a tuple."""
    if layers and layers == list(range(layers[0], layers[-1] + 1)):
        return f"range({layers[0]}, {layers[-1] + 1})"
    return _tuple(layers)


def _wrap(text: str, width: int = 96) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def parallel_context(plan: Plan, layout: Layout) -> dict:
    m, lay, t = plan.model, plan.layout, plan.training
    deg = layout.degrees
    tp, pp, cp, ep = deg["tp"] > 1, deg["pp"] > 1, deg["cp"] > 1, deg["ep"] > 1
    sharding = lay.dp.sharding or "none"
    schedule = lay.pp.schedule or "1f1b"
    v = lay.pp.virtual_stages or 1
    chunks = pipeline_chunks(plan) if pp else ()
    multi = pp and (v > 1 or schedule not in ("gpipe", "1f1b"))
    schedule_class = (LOOPED.get(schedule, SCHEDULE_CLASSES[schedule]) if v > 1 else SCHEDULE_CLASSES[schedule]) \
        if pp else ""
    zero_bubble = pp and schedule in ZERO_BUBBLE
    # zero2 keeps the gathered (bf16) weights from forward to backward; the others free them
    # (none and zero1 included: their "gathered" weights are a local bf16 cast). Under pipelining
    # every mode keeps them (torchtitan's choice): a stage runs a forward per micro-batch, and
    # resharding after each would gather the weights again for every one of them.
    reshard = sharding != "zero2"
    reshard_note = ""
    if reshard and zero_bubble:
        reshard = False
        reshard_note = (f"{schedule} splits the backward into input and weight gradients: FSDP2 needs "
                        "reshard_after_forward=False or its gradients are wrong (torch-cpu.md caveat 1)")
    elif reshard and pp:
        reshard = False
        reshard_note = "under pipelining the weights stay gathered for the whole step (torchtitan's choice)"
    tied = m.tied_embeddings
    v_schedule = schedule in V_SCHEDULES
    data_lines, data_mesh_text, data_2d = data_mesh_code(plan, layout)
    batch_degree = lay.batch_degree or 1
    batch_dims = []
    if sharding == "hsdp":
        batch_dims += [("dp_replicate", lay.dp.shard * (deg["ep"] if "ep" in layout.dims else 1)),
                       ("dp_shard", deg["ep"] if "ep" in layout.dims else 1)]
    elif deg["dp"] > 1:
        batch_dims.append(("dp", deg["ep"] if "ep" in layout.dims and deg["ep"] > 1 else 1))
    if "ep" in layout.dims and deg["ep"] > 1:
        batch_dims.append(("ep", 1))
    cp_flavour = lay.cp.flavour if cp else ""
    cp_balanced = cp and cp_flavour != "all-to-all"
    local_kv = m.kv_heads // deg["tp"] if m.kv_heads % deg["tp"] == 0 else m.kv_heads
    # Experts get their own gradient mesh under ep, and under tp (each tp rank routes its own
    # tokens, so tp ranks are data ranks to the experts).
    expert_grid = ep or (tp and m.is_moe)
    digits, permutation, ep_shape = ep_mesh(plan, layout) if expert_grid else ([], [], [])
    reports = []
    if pp:
        reports.append("last_stage")
    if tp:
        reports.append('meshes.tp.get_local_rank() == 0')
    optimizer = t.optimizer
    ctx = dict(
        job=plan.launch.job,
        layout_text=_layout_text(plan),
        rank_order=_wrap("Rank order: " + _rank_order(plan) + "."),
        mesh_text=", ".join(f"{d} {n}" for d, n in zip(layout.dims, layout.shape, strict=True)),
        sequence=_sequence(plan, layout, sharding, reshard, tp, pp, cp, ep),
        imports=_parallel_imports(plan, layout, sharding, tp, pp, cp, ep, schedule_class),
        mesh_dims=_tuple(layout.dims), mesh_shape=_tuple(layout.shape), world_size=plan.cluster.world_size,
        data_degree=layout.data_degree,
        data_text=" x ".join(f"{d} {layout.size(d)}" for d in layout.data_dims) or "none (one replica)",
        data_mesh_code=data_lines, data_mesh_text=data_mesh_text, data_2d=data_2d,
        expert_mesh_expr={"none": 'experts["edp", "edp_shard"]', "zero1": 'experts["edp_shard"]'}.get(
            sharding, 'experts["edp"]'),
        expert_mesh_text="this rank alone (zero1: the experts' bucket is reduce-scattered over edp)"
        if sharding == "zero1" else "edp replicas x shards of one rank" if sharding == "none"
        else "edp, sharded",
        global_batch=t.global_batch, local_batch=t.global_batch // batch_degree, batch_degree=batch_degree,
        micro_batch=t.micro_batch, grad_accum=t.grad_accum, batch_dims=_tuple(batch_dims) if batch_dims else "()",
        tp=tp, sp=tp and bool(lay.tp.sequence_parallel), pp=pp, cp=cp, ep=ep,
        moe=m.is_moe, dense_layers=len(m.moe_layers) < m.layers if m.is_moe else True,
        shared_experts=m.shared_experts, activation=m.activation, position=m.position, tied=tied,
        heads=m.heads, kv_heads=m.kv_heads, experts=m.experts,
        schedule_class=schedule_class, multi_stage=multi,
        chunks=[dict(index=c.index, rank=c.rank, start=c.first_layer, stop=c.first_layer + c.layers,
                     embedding=c.embedding, output=c.output) for c in chunks],
        cp_degree=deg["cp"], cp_flavour=cp_flavour, cp_balanced=cp_balanced,
        cp_chunk=t.seq_len // (2 * deg["cp"] if cp_balanced else deg["cp"]) if cp else 0,
        cp_class={"ring": "RingAttention", "all-gather": "AllGatherAttention", "all-to-all": "AllToAllAttention"}.get(
            cp_flavour, ""),
        cp_repeat_kv=cp and cp_flavour == "all-to-all" and local_kv % deg["cp"] != 0,
        expert_shard_dims=_expert_shard_dims(plan, layout),
        expert_grid=expert_grid, moe_balance=m.moe_balance if m.is_moe else "none",
        balance_text="world" if not pp else "every dim but pp",
        balance_dims=_tuple(d for d in layout.dims if d != "pp"),
        ep_degree=deg["ep"], local_experts=m.experts // deg["ep"] if ep else 0,
        ep_digits=_tuple(digits) if expert_grid else "()",
        ep_permutation=_tuple(permutation) if expert_grid else "()",
        ep_shape=_tuple(ep_shape) if expert_grid else "()",
        recompute=t.recompute or "none", recompute_layers=t.recompute_layers, offload_layers=t.offload_layers,
        recompute_text=_recompute_text(t.recompute or "none", t.recompute_layers),
        sharding=sharding, sharding_text=_wrap(_sharding_text(sharding, reshard, zero_bubble) + ".", 92)
        .replace("\n", "\n    "),
        wrapper="fully_shard", reshard=reshard, reshard_note=reshard_note, zero_bubble=zero_bubble,
        root_reshard="None" if reshard else "False",
        plain_alone=_plain_alone(layout, sharding),
        accumulation_text=_wrap(_accumulation_text(sharding), 92).replace("\n", "\n    "),
        tied_copy=tied and pp and not v_schedule, tied_local=tied and pp and v_schedule,
        reports_loss_expr=" and ".join(reports) or "True",
        state_keys=_tuple(STATE_KEYS[optimizer]),
        bucket_size=_bucket_sizes(plan, layout, ep_shape) if sharding == "zero1" else "",
        grad_attr="main_grad" if sharding == "zero1" else "grad",
        state_keys_all=(("step",) if HAS_STEP[optimizer] else ()) + STATE_KEYS[optimizer],
    )
    return ctx


def train_context(plan: Plan, layout: Layout) -> dict:
    t = plan.training
    precision = t.precision
    notes = {
        "bf16": "the spec's precision (bf16)",
        "fp16": "the spec asks for fp16, which this runtime runs as bf16 (no loss scaling)",
        "fp8": "the spec asks for fp8, which this runtime runs as bf16 (no fp8 matmuls)",
        "nvfp4": "the spec asks for nvfp4, which this runtime runs as bf16 (no fp4 matmuls)",
    }
    return dict(
        job=plan.launch.job, layout_text=_layout_text(plan), world_size=plan.cluster.world_size,
        nodes=plan.cluster.nodes, gpus_per_node=plan.cluster.gpus_per_node, seq_len=t.seq_len,
        vocab=plan.model.vocab, global_batch=t.global_batch, tokens_per_step=t.tokens_per_step,
        steps=plan.launch.steps, precision=precision, lr=DEFAULT_LR,
        precision_auto="bf16 on cuda" + ("" if precision == "bf16" else f" (the spec says {precision})")
        + ", fp32 on cpu",
        precision_note=notes[precision], optimizer=t.optimizer,
        cp=layout.degrees["cp"] > 1,
        gpu=plan.cluster.gpu.name, gpu_bytes=plan.cluster.gpu.hbm_bytes,
        clip_grad_norm=repr(t.clip_grad_norm),
        alloc_conf=GENERATED_ALLOC_CONF,
    )


def rehearse_context(plan: Plan, layout: Layout) -> dict:
    """rehearse.py's values: the shapes a fake world cannot send (docs/runtime.md, rehearsal)."""
    deg = layout.degrees
    t = plan.training
    sp = deg["tp"] > 1 and bool(plan.layout.tp.sequence_parallel)
    local_tokens = t.seq_len // deg["cp"]
    return dict(
        job=plan.launch.job, layout_text=_layout_text(plan), world_size=plan.cluster.world_size,
        microbatches=t.grad_accum, pp=deg["pp"] > 1, sp=sp, ep=deg["ep"] > 1, moe=plan.model.is_moe,
        local_tokens=local_tokens, sharding=plan.layout.dp.sharding or "none",
        boundary_shape=_tuple((t.micro_batch, local_tokens // (deg["tp"] if sp else 1), plan.model.hidden)),
    )


# ---------------------------------------------------------------------------------------------
# Words


def _layout_text(plan: Plan) -> str:
    text = " x ".join(f"{a.name} {a.degree}" for a in plan.layout.axes)
    ep = plan.layout.ep
    if ep.folded_over and ep.degree and ep.degree > 1:
        text += f", ep {ep.degree} over {' x '.join(ep.folded_over)}"
    return text


def _rank_order(plan: Plan) -> str:
    parts = [f"{a.name} (stride {a.stride})" for a in plan.layout.axes]
    return ("the layout line's first axis varies fastest: " + ", then ".join(parts)) if parts else "one rank"


def _recompute_text(mode: str, layers: int | None) -> str:
    if mode == "selective":
        return "selective: an op-level policy keeps matmul and attention outputs, recomputes the rest"
    if mode == "full" and layers:
        return f"full {layers}: the first {layers} blocks of each chunk keep only their input"
    return "full: every block keeps only its input"


def _sharding_text(mode: str, reshard: bool, zero_bubble: bool) -> str:
    keep = "" if reshard else (" (reshard_after_forward=False under a zero-bubble schedule)" if zero_bubble
                               else " (reshard_after_forward=False under pipelining)")
    return {
        "none": "none (DDP): fully_shard over (replicas, shards of one rank) keeps whole fp32 "
                "parameters and gradients on every data rank and all-reduces the gradients" + keep,
        "zero1": "zero1: no fully_shard; a distributed optimizer over flat buckets (build_buckets) "
                 "holds the parameters in the compute dtype, fp32 main gradients reduce-scattered "
                 "per bucket during the backward, and 1/n of the fp32 master and optimizer states "
                 "per data rank",
        "zero2": "zero2: fully_shard(reshard_after_forward=False)",
        "zero3": "zero3: fully_shard(reshard_after_forward=True)" if reshard else
                 "zero3, run as zero2 under " + ("a zero-bubble schedule" if zero_bubble else "pipelining")
                 + ": fully_shard(reshard_after_forward=False)",
        "hsdp": "hsdp: fully_shard over a 2-D (replicate, shard) mesh" + keep,
    }[mode]


def _accumulation_text(mode: str) -> str:
    """What a micro-batch's backward communicates (docs/runtime.md, the traffic table)."""
    return {
        "none": "DDP: gradients accumulate locally; only the last micro-batch's backward all-reduces them",
        "zero1": "zero1: gradients accumulate in the buckets' fp32 buffers; each bucket is "
                 "reduce-scattered as soon as the last micro-batch's backward has produced all of its gradients",
        "zero2": "zero2: every micro-batch reduce-scatters its gradients; the gathered weights stay "
                 "until the last micro-batch's backward, so they are all-gathered once per step",
        "zero3": "zero3: every micro-batch gathers the weights for forward and backward and "
                 "reduce-scatters its gradients",
        "hsdp": "hsdp: every micro-batch reduce-scatters over the shard group; only the last one "
                "all-reduces the gradient shards over the replicas",
    }[mode] + "."


def _sequence(plan: Plan, layout: Layout, sharding: str, reshard: bool, tp, pp, cp, ep) -> list[str]:
    steps = ["build the model on the meta device (no memory)"]
    if pp:
        steps.append("split_pipeline: keep this rank's chunks (parc.stages.pipeline_chunks)")
    if tp:
        steps.append("apply_tensor_parallel: " + ("column/row-parallel projections, sequence-parallel norms"
                                                   if plan.layout.tp.sequence_parallel else
                                                   "column/row-parallel projections"))
    if ep:
        steps.append("apply_expert_parallel: experts sharded over ep, tokens sent with all_to_all_single")
    if cp:
        steps.append(f"apply_context_parallel: {plan.layout.cp.flavour} attention over the cp ranks")
    if plan.training.offload_layers:
        steps.append(f"apply_activation_offloading: the first {plan.training.offload_layers} blocks of each chunk "
                     "keep their saved activations in host memory (save_on_cpu)")
    mode = plan.training.recompute or "none"
    if mode != "none":
        steps.append(f"apply_activation_checkpointing: {_recompute_text(mode, plan.training.recompute_layers)}")
    steps.append("apply_data_parallel: " + {"none": "fully_shard over replicas x shards of one rank (DDP)",
                                            "zero1": "nothing to wrap (ZeRO-1: build_buckets, after materialize)",
                                            "zero2": "fully_shard(reshard_after_forward=False)",
                                            "zero3": f"fully_shard(reshard_after_forward={reshard})",
                                            "hsdp": f"fully_shard on (replicate, shard), reshard_after_forward={reshard}",
                                            }[sharding]
                 + ("; in fp32 plain tensors (one data rank)" if _plain_alone(layout, sharding) else ""))
    steps.append("materialize: allocate the shards, fill them from model.initial_value")
    if sharding == "zero1":
        steps.append("build_buckets: fp32 master shards, then the parameters in the compute dtype as views of "
                     "flat buckets, fp32 main gradients")
    if pp:
        steps.append("build_schedule: PipelineStage per chunk and the spec's schedule")
    return [f"{i}. {s}" for i, s in enumerate(steps, 1)]


def _bucket_sizes(plan: Plan, layout: Layout, ep_shape: list[int]) -> str:
    """zero1's BUCKET_SIZE per data-parallel group: the dense parameters' over the data ranks,
    the experts' over edp (`timing.zero1_bucket_size`, which the time model counts with)."""
    written = plan.layout.dp.bucket
    sizes = {"replicas": zero1_bucket_size(layout.data_degree, written)}
    if ep_shape:
        sizes["edp"] = zero1_bucket_size(ep_shape[1], written)
    return "{" + ", ".join(f'"{k}": {v:_}' for k, v in sizes.items()) + "}"


def _plain_alone(layout: Layout, sharding: str) -> bool:
    """`timing.plain_alone` over this layout's degrees."""
    return plain_alone(layout.data_degree, layout.degrees["tp"], layout.degrees["ep"], sharding)


def _expert_shard_dims(plan: Plan, layout: Layout) -> dict[str, int]:
    """FSDP2's shard dim of each routed-expert stack where it is not dim 0 (`expert_shard_dim`:
    every rank holds 1/group of every expert), over the ranks that shard them: edp under the
    expert grid (`expert_data`), else the block's data mesh (its shard dim under hsdp)."""
    m, sharding = plan.model, plan.layout.dp.sharding or "none"
    if not m.is_moe or sharding not in ("zero2", "zero3", "hsdp"):
        return {}
    deg = layout.degrees
    if deg["ep"] > 1 or deg["tp"] > 1:  # the expert grid (`expert_grid`): its edp shards them
        group = ep_mesh(plan, layout).edp
    else:
        dims = [d for d in layout.data_dims if not (sharding == "hsdp" and d == "dp_replicate")]
        group = math.prod(layout.size(d) for d in dims)
    local = m.experts // deg["ep"]
    shapes = {"w1": (local, m.hidden, m.expert_ffn), "w2": (local, m.expert_ffn, m.hidden)}
    if m.activation == "swiglu":
        shapes["w3"] = shapes["w1"]
    dims = {name: expert_shard_dim(shape, group) for name, shape in shapes.items()}
    return dims if any(dims.values()) else {}


def _parallel_imports(plan: Plan, layout: Layout, sharding: str, tp, pp, cp, ep, schedule_class) -> list[list[str]]:
    """The import lines of parallel.py in ruff's (isort) order: stdlib, torch, the job's own."""
    recompute = plan.training.recompute or "none"
    stdlib = []
    if pp:
        stdlib += ["import contextlib", "import copy", "import inspect"]
    if sharding == "zero1":
        stdlib += ["import itertools", "import math"]
    stdlib.append("from dataclasses import dataclass, field" if sharding == "zero1" else "from dataclasses import dataclass")
    if recompute == "selective":
        stdlib.append("from functools import partial")
    froms: dict[str, set[str]] = {}

    def add(module: str, *names: str) -> None:
        froms.setdefault(module, set()).update(names)

    plain = ["import torch", "import torch.distributed as dist"]
    if (cp and plan.layout.cp.flavour != "ring") or ep:  # the ring exchanges with c10d itself
        plain.append("import torch.distributed._functional_collectives as ft_c")
    if sharding == "zero1":  # sharded optimizer states in checkpoints
        plain.append("import torch.distributed._shard.sharded_tensor as st")
    plain.append("import torch.nn.functional as F")
    if recompute != "none":
        add("torch.distributed.algorithms._checkpoint.checkpoint_wrapper", "checkpoint_wrapper")
    if sharding != "zero1":  # (zero1 saves its own master and optimizer shards)
        add("torch.distributed.checkpoint.state_dict", "StateDictOptions", "get_model_state_dict",
            "set_model_state_dict", "get_optimizer_state_dict", "set_optimizer_state_dict")
        add("torch.distributed.fsdp", "MixedPrecisionPolicy", "fully_shard")
    add("torch.distributed.device_mesh", "DeviceMesh", "init_device_mesh")
    if not pp and _plain_alone(layout, sharding):
        add("torch.distributed.fsdp", "FSDPModule")
    if pp:
        add("torch.distributed.pipelining", "PipelineStage", schedule_class)
        add("torch.distributed.pipelining", "stage as torch_stage")
        add("torch.distributed.pipelining.stage", "_RecvInfo")
    add("torch.distributed.tensor", "DTensor", "distribute_tensor")
    if ep:
        add("torch.distributed.tensor", "Shard", "distribute_module")
    if _expert_shard_dims(plan, layout):
        add("torch.distributed.tensor", "Shard")
    if tp:
        add("torch.distributed.tensor", "Replicate", "Shard")
        names = ["ColwiseParallel", "PrepareModuleInput", "RowwiseParallel", "loss_parallel", "parallelize_module"]
        if plan.layout.tp.sequence_parallel:
            names += ["SequenceParallel"]

        add("torch.distributed.tensor.parallel", *names)
    if recompute == "selective":
        add("torch.utils.checkpoint", "CheckpointPolicy", "create_selective_checkpoint_contexts")
    if recompute != "none" and ep:  # the dispatchers' count tables, kept for the recomputation
        add("torch.utils.weak", "WeakTensorKeyDictionary")
    if recompute != "none" and pp and plan.layout.pp.schedule in ZERO_BUBBLE:  # one recomputation per weight pass
        add("torch.utils.checkpoint", "GraphExecGroup")
    add("torch", "nn")
    third = plain + [_from_line(module, names) for module, names in sorted(froms.items(), key=lambda kv: _module_key(kv[0]))]
    return [["from __future__ import annotations"], stdlib, third, ["import model"]]


def _module_key(module: str) -> tuple:
    return tuple(module.split("."))


def _name_key(name: str) -> tuple:
    """isort's order within one `from` import: CONSTANTS, Classes, functions."""
    base = name.split(" as ")[0]
    kind = 0 if base.isupper() else 1 if base[:1].isupper() else 2
    return (kind, base.lower())


def _from_line(module: str, names: set[str]) -> str:
    """One `from` import of `names` (isort's form: an aliased name on a line of its own, after)."""
    ordered = sorted((n for n in names if " as " not in n), key=_name_key)
    aliased = [f"from {module} import {n}" for n in sorted(n for n in names if " as " in n)]
    line = f"from {module} import {', '.join(ordered)}"
    if len(line) > 88:
        body = "".join(f"    {n},\n" for n in ordered)
        line = f"from {module} import (\n{body})"
    return "\n".join(([line] if ordered else []) + aliased)


# ---------------------------------------------------------------------------------------------
# What the generated runtime cannot do: said at compile time, never silently


def diagnostics(plan: Plan) -> list[Diagnostic]:
    """Findings about this plan that concern the generated runtime only (E06xx, W06xx)."""
    found: list[Diagnostic] = []
    t, lay, m = plan.training, plan.layout, plan.model
    if t.precision in ("fp8", "nvfp4", "fp16"):
        what = {"fp8": "fp8 matmuls need torchao's float8 training, which the generated code does not "
                       "import (it uses torch alone)",
                "nvfp4": "NVFP4 matmuls need Transformer Engine's NVFP4 recipe, which the generated code does "
                         "not import (it uses torch alone); `target megatron` runs it",
                "fp16": "fp16 needs loss scaling, which the generated runtime does not implement"}[t.precision]
        found.append(warning(
            "W0601", f"precision {t.precision} runs as bf16 in the generated runtime", t.span_of("precision"),
            label=f"{t.precision} asked for", notes=(what,),
            help="write `precision bf16` to say what runs, or acknowledge with `allow W0601`"))
    ep = lay.ep
    outside = [a for a in ep.folded_over if a not in ("dp", "cp")]
    if outside and (ep.degree or 1) > 1:
        found.append(error(
            "E0602", f"the generated runtime cannot fold ep over {' x '.join(outside)}", ep.span_of("folded_over"),
            label="not a data-parallel axis",
            notes=("expert groups are carved from ranks that see different tokens (dp, cp); "
                   f"the ranks of {' x '.join(outside)} hold the same tokens or different layers",),
            help="fold ep over dp and/or cp (`ep N over dp`), or make ep its own layout axis"))
    tp = lay.degree("tp") or 1
    if tp > 1 and m.kv_heads % tp:
        found.append(error(
            "E0603", f"tp {tp} does not divide the {m.kv_heads} kv heads", lay.tp.span_of("degree"),
            label="K and V would be split inside a head",
            notes=("the generated runtime splits the K and V projections by whole heads over tp; "
                   "it does not replicate kv heads (W0311's layout)",),
            help=f"use a tp that divides {m.kv_heads}"))
    if m.mla:
        found.append(error(
            "E0605", "the generated runtime has no multi-head latent attention", m.span_of("kv_lora_rank"),
            label="latent attention",
            notes=("parc's job builds grouped-query attention (Q, K and V projections per head); MLA's "
                   "low-rank down and up projections, latent norms and decoupled RoPE are not in it",),
            help="write `target megatron` (it emits `--multi-latent-attention`), or state the model "
                 "without `kv-lora-rank`"))
    if m.mtp_layers:
        found.append(error(
            "E0606", "the generated runtime has no multi-token prediction", m.span_of("mtp_layers"),
            label=f"mtp {m.mtp_layers}",
            notes=("parc's job trains the next token only; the MTP modules' projections, layers and "
                   "losses are not in it",),
            help="write `target megatron` (it emits `--mtp-num-layers`), or remove `mtp`"))
    return _allowed(plan, found)


def _allowed(plan: Plan, found: list[Diagnostic]) -> list[Diagnostic]:
    out = []
    for d in found:
        if d.severity is Severity.warning and d.span is not None and any(
                a.code == d.code and a.statement.covers(d.span) for a in plan.allows):
            d = d.model_copy(update={"allowed": True})
        out.append(d)
    return out
