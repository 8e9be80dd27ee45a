"""Expert parallelism: experts over ep, and ep over the axes it is folded onto."""

from __future__ import annotations

from collections.abc import Iterator
from math import prod

from ..diagnostics import Diagnostic, error
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
