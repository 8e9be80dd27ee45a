"""Context parallelism: the sequence split over cp (and over tp under sequence parallelism)."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error
from ..plan import Plan
from . import rule
from .helpers import axis_span, divisors, labels, model_label, suggest
from .predicates import (
    all_to_all_splits_heads,
    cp_chunks_per_rank,
    local_sequence_splits,
    sequence_splits,
)


@rule
def sequence_splits_over_cp(plan: Plan) -> Iterator[Diagnostic]:
    cp = plan.layout.cp.degree
    if not cp or cp == 1:
        return
    seq = plan.training.seq_len
    parts = cp_chunks_per_rank(plan.layout.cp.flavour) * cp
    if sequence_splits(seq, cp, plan.layout.cp.flavour):
        return
    flavour = plan.layout.cp.flavour
    why = f"2 x cp {cp} (the {flavour} flavour balances causal attention with two chunks per rank)" \
        if parts != cp else f"cp {cp}"
    choices = suggest(divisors(seq), cp, ok=lambda d: d > 1 and seq % (d * parts // cp) == 0)
    yield error("E0330", f"seq {seq:,} does not split into {parts} chunks for cp {cp}", axis_span(plan, "cp"),
                label=f"{seq:,} / {parts} = {seq / parts:,.2f} tokens",
                labels=labels((plan.training.span_of("seq"), f"seq {seq:,}"),
                              (plan.layout.cp.span_of("flavour"), f"flavour {flavour}")),
                notes=(f"seq must divide by {why}",),
                help=f"use cp {choices}" if choices else f"use a seq that is a multiple of {parts}")


@rule
def local_sequence_splits_over_tp(plan: Plan) -> Iterator[Diagnostic]:
    tp = plan.layout.tp.degree
    cp = plan.layout.cp.degree or 1
    if not tp or tp == 1 or not plan.layout.tp.sequence_parallel:
        return
    seq = plan.training.seq_len
    if seq % cp:
        return  # E0330 says it
    local = seq // cp
    if local_sequence_splits(seq, cp, tp, True):
        return
    yield error("E0331", f"the {local:,} tokens of each cp rank do not split over tp {tp} under sequence parallelism",
                axis_span(plan, "tp"), label=f"{local:,} / {tp} = {local / tp:,.2f}",
                labels=labels((plan.training.span_of("seq"), f"seq {seq:,}"), (axis_span(plan, "cp"), f"cp {cp}")),
                help=f"use a seq that divides by cp x tp = {cp * tp}, or `tp {{ sequence-parallel off }}`")


@rule
def all_to_all_heads(plan: Plan) -> Iterator[Diagnostic]:
    cp = plan.layout.cp.degree
    tp = plan.layout.tp.degree or 1
    if not cp or cp == 1 or plan.layout.cp.flavour != "all-to-all":
        return
    heads = plan.model.heads
    if heads % tp:
        return  # E0310 says it
    local = heads // tp
    if all_to_all_splits_heads(heads, tp, cp, "all-to-all"):
        return
    choices = suggest(divisors(local), cp, ok=lambda d: d > 1)
    yield error("E0332", f"all-to-all cp {cp} does not divide the {local} heads of each tp rank",
                axis_span(plan, "cp"), label=f"{local} / {cp} = {local / cp:.2f} heads",
                labels=labels(model_label(plan, "heads", f"{heads} heads"), (axis_span(plan, "tp"), f"tp {tp}"),
                              (plan.layout.cp.span_of("flavour"), "all-to-all scatters heads")),
                help=(f"use cp {choices}, or " if choices else "use ") + "`cp { flavour ring }`")

