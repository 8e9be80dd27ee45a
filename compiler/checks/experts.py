"""Expert parallelism: experts over ep, and ep over the axes it is folded onto."""

from __future__ import annotations

from collections.abc import Iterator
from math import prod

from ..diagnostics import Diagnostic, error, warning
from ..plan import Plan
from . import rule
from .helpers import axis_span, divisors, labels, model_label, suggest
from .predicates import ep_fits_folded, experts_problem


@rule
def experts_divisible_by_ep(plan: Plan) -> Iterator[Diagnostic]:
    ep = plan.layout.ep.degree
    if not ep or ep == 1:
        return
    model = plan.model
    span = axis_span(plan, "ep")
    problem = experts_problem(model.is_moe, model.experts, ep)
    if problem is None:
        return
    if problem == "E0342":
        yield error("E0342", f"ep {ep} on `{model.name}`, a dense model with no experts", span,
                    label="nothing to spread", labels=labels(model_label(plan, "layers", "a dense model")),
                    help="remove ep, or describe the experts in the model (`experts 8, top-k 2`)")
        return
    choices = suggest(divisors(model.experts), ep, ok=lambda d: d > 1)
    yield error("E0340", f"ep {ep} does not divide {model.experts} experts", span,
                label=f"{model.experts} / {ep} = {model.experts / ep:.2f} experts per rank",
                labels=labels(model_label(plan, "experts", f"{model.experts} experts")),
                help=f"use ep {choices}" if choices else f"use an ep that divides {model.experts}")


@rule
def ep_fits_folded_axes(plan: Plan) -> Iterator[Diagnostic]:
    ep = plan.layout.ep.degree
    folded = plan.layout.ep.folded_over
    if not ep or ep == 1 or not folded:
        return
    degrees = [plan.layout.degree(name) for name in folded]
    if any(d is None for d in degrees):
        return
    ranks = prod(degrees)
    if ep_fits_folded(ep, ranks):
        return
    expression = " x ".join(f"{n} {d}" for n, d in zip(folded, degrees, strict=True))
    experts = plan.model.experts or ep
    choices = suggest(divisors(ranks), ep, ok=lambda d: d > 1 and experts % d == 0)
    yield error("E0341", f"ep {ep} does not divide the {ranks} ranks of {expression} it folds over",
                axis_span(plan, "ep"), label=f"{ranks} / {ep} = {ranks / ep:.2f} groups",
                labels=labels(*[(axis_span(plan, n), f"{n} {d}") for n, d in zip(folded, degrees, strict=True)]),
                help=f"use ep {choices}" if choices else f"fold over axes whose degrees multiply to a multiple of {ep}")


@rule
def experts_need_balance_or_capacity(plan: Plan) -> Iterator[Diagnostic]:
    """W0343: routed experts over several ep ranks, dropless and unbalanced."""
    model, ep = plan.model, plan.layout.ep.degree
    if not model.is_moe or not ep or ep == 1 or model.moe_balance != "none" or model.capacity_factor:
        return
    span, text = model_label(plan, "moe_balance", "no load balancing")
    if span is None:
        span, text = model_label(plan, "experts", f"{model.experts} experts, dropless, no load balancing")
    yield warning("W0343", f"{model.experts} routed experts over ep {ep} with neither load balancing nor a capacity",
                  span, label=text, labels=labels((axis_span(plan, "ep"), f"ep {ep}")),
                  help="add `moe-balance aux-free 0.001` (DeepSeek-V3's bias update) or `moe-balance aux-loss 0.01`, "
                       "or cap the experts with `capacity-factor 1.25`")
