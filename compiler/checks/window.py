"""Sliding-window attention: a window that changes nothing is almost always a typo or a
forgotten `seq` change, so it is said (the models and the job would run full causal attention)."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, warning
from ..plan import Plan
from . import rule
from .helpers import labels


@rule
def window_covers_sequence(plan: Plan) -> Iterator[Diagnostic]:
    """W >= seq: every query's causal keys (at most seq) already lie inside the window."""
    model, seq = plan.model, plan.training.seq_len
    if not model.window or model.window < seq:
        return
    yield warning("W0241", f"window {model.window:,} is not shorter than seq {seq:,}: it has no effect",
                  model.span_of("window"), label="every causal key is inside the window",
                  labels=labels((plan.training.span_of("seq"), f"seq {seq:,}")),
                  notes=("windowed layers run exactly as full causal attention",),
                  help=f"use a window below {seq:,}, or remove `window`")


@rule
def window_on_no_layer(plan: Plan) -> Iterator[Diagnostic]:
    """`full-attention-every 1`: every layer is a full-attention layer."""
    model = plan.model
    if not model.window or model.windowed_layers:
        return
    yield warning("W0241", f"full-attention-every {model.full_attention_every} leaves no windowed layer",
                  model.span_of("full_attention_every"), label="every layer keeps full attention",
                  labels=labels((model.span_of("window"), f"window {model.window:,}")),
                  help="use `full-attention-every 2` (every other layer full) or more, or remove the window")
