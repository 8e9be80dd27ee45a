"""Placement: which axes' groups stay inside an NVLink domain, given the rank order.

Ranks fill nodes in order (rank r is on node r // gpus-per-node) and an NVLink domain is
`domain_size` consecutive ranks (a node of 8, or a GB200 NVL72 rack of 72). An axis's group is
the ranks `base + i x stride`, spanning stride x degree consecutive ranks; it stays inside a
domain when that span divides the domain size.

The rank-order warning compares orders by a first-order traffic estimate: the bytes each GPU
sends per step on each axis (formulas in `axis_traffic`), at network speed where the axis's
groups cross domains. It is an estimate for ranking orders, not the time model.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import permutations

from ..diagnostics import Diagnostic, error, warning
from ..memory import knobs_of, unpredictable
from ..memory.activations import ACT
from ..memory.inputs import Knobs
from ..memory.model import rank_params
from ..plan import Plan
from ..suggest import english_list
from . import rule
from .helpers import axis_span, divisors, labels, layout_span, suggest
from .predicates import crosses_domain


@rule
def tp_inside_nvlink_domain(plan: Plan) -> Iterator[Diagnostic]:
    tp = plan.layout.tp.degree
    axis = plan.layout.axis("tp")
    if not tp or tp == 1 or axis is None or axis.stride is None:
        return
    cluster = plan.cluster
    if cluster.link == "pcie":
        yield warning("W0305", f"tp {tp} runs over PCIe: these nodes have no NVLink domain", axis_span(plan, "tp"),
                      label="every tp collective at PCIe speed",
                      labels=labels((cluster.span_of("link"), "PCIe only")),
                      notes=(f"tp exchanges activations 8 times per layer per micro-batch; PCIe gives "
                             f"{cluster.intra_bandwidth / 1e9:,.0f} GB/s per GPU",),
                      help="use tp 1 with more pp or dp if the model fits, or acknowledge with `allow W0305`")
        return
    domain = cluster.domain_size
    stride = axis.stride
    if not crosses_domain(stride, tp, domain):
        return
    span = stride * tp
    inner = [a for a in plan.layout.axes if a.stride is not None and a.stride < stride]
    inside = " x ".join(f"{a.name} {a.degree}" for a in inner)
    members = ", ".join(str(i * stride) for i in range(min(tp, 4))) + (", ..." if tp > 4 else "")
    note = (f"tp {tp} with stride {stride} ({inside} before it in rank order) takes ranks {members} "
            f"of a {span}-rank block" if inner else f"tp {tp} takes {span} consecutive ranks")
    where = f"{domain}-GPU NVLink domain" + ("s" if span <= domain else "")
    message = (f"the tp group spans {span} GPUs, more than one {domain}-GPU NVLink domain" if span > domain
               else f"tp groups of {span} ranks straddle the {where}")
    if inner and tp <= domain and domain % tp == 0:
        help_ = "write tp first on the layout line so that its groups are consecutive ranks: " \
                + "`" + " x ".join(f"{a.name} {a.degree}" for a in
                                   [plan.layout.axis("tp")] + [a for a in plan.layout.axes if a.name != "tp"]) + " ...`"
    else:
        choices = suggest(divisors(domain), tp, ok=lambda d: d > 1 and plan.model.heads % d == 0
                          and domain % (stride * d) == 0)
        help_ = f"use a tp that fits the {domain}-GPU domain: try {choices}" if choices else \
            f"use a tp that divides {domain}"
    yield error("E0304", message, axis_span(plan, "tp"), label=f"stride {stride} x tp {tp} = {span} ranks",
                labels=labels((cluster.span_of("gpus_per_node", "link"),
                               f"NVLink domain of {domain} GPUs")),
                notes=(note,), help=help_)


# ---------------------------------------------------------------------------------------------
# Rank order


def axis_traffic(plan: Plan, k: Knobs) -> dict[str, float]:
    """Bytes each GPU sends per step on each axis (first order; collectives move (n-1)/n of their
    data per rank). tp: 4 collectives of the layer's activations forward and 4 backward (+2 for
    the norms recomputed by selective recomputation, +4 under full); cp: K and V around the ring
    (forward, and again with their gradients backward), gathered and reduce-scattered, or four
    all-to-alls each way; ep: dispatch and combine, forward and backward; dp: the gradients'
    all-reduce (fp32) or reduce-scatter plus the parameters' all-gather, every micro-batch for
    zero3; pp: a micro-batch's activations forward and gradients backward per chunk."""
    model = plan.model
    tokens = k.seq * k.micro_batch / k.cp
    layers = model.layers / k.pp
    moe_layers = len(model.moe_layers) / k.pp
    m = k.microbatches
    out: dict[str, float] = {}
    if k.tp > 1:
        collectives = {"none": 8, "selective": 10, "full": 12}[k.recompute]
        out["tp"] = collectives * tokens * model.hidden * ACT * (k.tp - 1) / k.tp * layers * m
    if k.cp > 1:
        kv = model.kv_size / k.tp if model.kv_heads % k.tp == 0 else model.kv_size
        if k.cp_flavour == "all-to-all":
            per_layer = 2 * tokens * (2 * model.q_size + 2 * model.kv_size) / k.tp * ACT * (k.cp - 1) / k.cp
        elif k.cp_flavour == "all-gather":
            per_layer = 2 * 2 * tokens * kv * ACT * (k.cp - 1)
        else:
            per_layer = 3 * 2 * tokens * kv * ACT * (k.cp - 1)
        out["cp"] = per_layer * layers * m
    if k.ep > 1 and moe_layers:
        routed = tokens / (k.tp if k.sp else 1)
        out["ep"] = 4 * routed * model.top_k * model.hidden * ACT * (k.ep - 1) / k.ep * moe_layers * m
    group = k.dense_replicas
    if k.dp > 1:
        params = rank_params(memory_shape(plan), k.tp, k.ep, k.pp, k.virtual_stages, k.schedule, k.split,
                             "torch")[0].params.total
        share = (group - 1) / group if group > 1 else 0
        if k.sharding in ("none", "zero1"):
            volume = 2 * 4 * params * share
        elif k.sharding == "zero2" or k.pp > 1:
            volume = (4 + 2) * params * share
        else:
            volume = (4 + 2 * 2 * m) * params * share
        out["dp"] = volume
    if k.pp > 1:
        out["pp"] = 2 * tokens * model.hidden / (k.tp if k.sp else 1) * ACT * k.virtual_stages * m
    return out


def memory_shape(plan: Plan):
    from ..memory import shape_of

    return shape_of(plan)


def _crossing(order: tuple[tuple[str, int], ...], folded: tuple[str, ...], ep: int, domain: int) -> set[str]:
    """The axes (and a folded ep) whose groups cross NVLink domains in this order."""
    crossing = set()
    stride = 1
    strides = {}
    for name, degree in order:
        strides[name] = stride
        if crosses_domain(stride, degree, domain):
            crossing.add(name)
        stride *= degree
    if folded and ep > 1:
        # rank 0's ep group: combined indices 0..ep-1 over the folded axes, fastest first; its
        # last rank takes the largest coordinate it reaches on each folded axis
        last, remaining = 0, ep
        for name, degree in order:
            if name not in folded or remaining <= 1:
                continue
            take = min(degree, remaining)
            last += (take - 1) * strides[name]
            remaining = -(-remaining // degree)
        if last >= domain:
            crossing.add("ep")
    return crossing


def _cost(crossing: set[str], traffic: dict[str, float], slow: float, fast: float) -> float:
    return sum(traffic.get(a, 0.0) * (1 / slow - 1 / fast) for a in crossing)


@rule
def rank_order_traffic(plan: Plan) -> Iterator[Diagnostic]:
    layout = plan.layout
    if layout.order_open or not layout.complete or len(layout.axes) < 2:
        return
    k = knobs_of(plan)
    if k is None or unpredictable(plan) is not None:
        return
    cluster = plan.cluster
    domain = cluster.domain_size
    if cluster.link == "pcie" or domain <= 1 or cluster.world_size <= domain:
        return  # one NVLink domain holds every rank (64 GPUs of an NVL72 rack): no order crosses it
    written = tuple((a.name, a.degree) for a in layout.axes)
    folded = layout.ep.folded_over
    crossing = _crossing(written, folded, k.ep, domain)
    if "tp" in crossing:
        return  # E0304 says it
    traffic = axis_traffic(plan, k)
    slow = cluster.network.node_bandwidth / cluster.gpus_per_node
    fast = cluster.intra_bandwidth
    if slow >= fast:
        return
    base = _cost(crossing, traffic, slow, fast)
    best_order, best_cost = written, base
    for order in permutations(written):
        c = _crossing(order, folded, k.ep, domain)
        if "tp" in c:
            continue
        cost = _cost(c, traffic, slow, fast)
        if cost < best_cost - 1e-12:
            best_order, best_cost = order, cost
    saved = base - best_cost
    if saved <= 0 or saved < 0.05 * base or saved < 1e-3:
        return
    better = _crossing(best_order, folded, k.ep, domain)
    moved_in = sorted(crossing - better, key=lambda a: -traffic.get(a, 0))
    moved_out = sorted(better - crossing)
    heavy = english_list(moved_in, "and")
    text = " x ".join(f"{n} {d}" for n, d in best_order)
    sent = ", ".join(f"{a} sends {traffic[a] / 1e9:,.1f} GB" for a in moved_in)
    light = ", ".join(f"{a} ({traffic.get(a, 0) / 1e9:,.1f} GB)" for a in moved_out) or "nothing"
    yield warning("W0306", f"rank order sends {heavy} traffic over the network while lighter axes stay inside "
                  f"the NVLink domain", layout_span(plan),
                  label=f"{heavy} groups cross {domain}-GPU domains",
                  notes=(f"per GPU per step: {sent}; in `{text}` {'they stay' if len(moved_in) > 1 else 'it stays'} "
                         f"inside and {light} crosses instead",
                         f"predicted network time saved: {saved:,.2f} s per step "
                         f"({slow / 1e9:,.0f} GB/s network vs {fast / 1e9:,.0f} GB/s NVLink per GPU)"),
                  help=f"write the layout as `{text}`, or `order ?` to let search choose; "
                  "acknowledge with `allow W0306`")

