"""Tensor parallelism against the model's shapes: heads, kv heads, FFN, hidden, vocabulary."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Diagnostic, error, warning
from ..memory.parameters import padded_vocab
from ..plan import Plan
from . import rule
from .helpers import axis_span, divisors, gib, labels, model_label, suggest
from .predicates import tp_ffn_sizes, tp_splits


def _tp(plan: Plan) -> int | None:
    tp = plan.layout.tp.degree
    return tp if tp and tp > 1 else None


def _fits_domain(plan: Plan):
    """tp values that fit the NVLink domain at the tp axis's stride."""
    axis = plan.layout.axis("tp")
    stride = axis.stride if axis and axis.stride else 1
    domain = plan.cluster.domain_size

    def ok(tp: int) -> bool:
        return tp > 1 and domain % (stride * tp) == 0

    return ok


def _tp_help(plan: Plan, n: int, tp: int, what: str) -> str:
    """"tp must divide 40 heads: try 4, 5 or 8", with only degrees that fit the NVLink domain."""
    choices = suggest(divisors(n), tp, ok=_fits_domain(plan))
    if choices:
        return f"tp must divide {what}: try {choices}"
    return f"tp must divide {what}, and no tp above 1 that fits the {plan.cluster.domain_size}-GPU NVLink domain does"


@rule
def heads_divisible_by_tp(plan: Plan) -> Iterator[Diagnostic]:
    tp = _tp(plan)
    heads = plan.model.heads
    if tp is None or tp_splits(heads, tp):
        return
    yield error("E0310", f"tp {tp} does not divide {heads} attention heads", axis_span(plan, "tp"),
                label=f"{heads} / {tp} = {heads / tp:.2f} heads per rank",
                labels=labels(model_label(plan, "heads", f"{heads} heads")),
                help=_tp_help(plan, heads, tp, f"{heads} heads"))


@rule
def kv_heads_divisible(plan: Plan) -> Iterator[Diagnostic]:
    tp = plan.layout.tp.degree or 1
    model = plan.model
    cp = plan.layout.cp.degree or 1
    a2a = plan.layout.cp.flavour == "all-to-all" and cp > 1
    split = tp * (cp if a2a else 1)
    if split == 1 or model.kv_heads == model.heads or model.heads % tp:
        return  # MHA splits with the query heads; E0310 covers heads
    if model.kv_heads % split == 0:
        return
    what = f"tp {tp} x cp {cp}" if a2a else f"tp {tp}"
    replicated = 2 * model.hidden * model.kv_size * (1 - 1 / tp) if model.kv_heads % tp else 0
    layers_per_rank = model.layers / (plan.layout.pp.degree or 1)
    weight_cost = replicated * layers_per_rank * 4  # fp32 parameters alone
    cost = f"; the K/V weights take {gib(weight_cost)} more fp32 per rank" if weight_cost else ""
    span = axis_span(plan, "cp") if a2a and model.kv_heads % tp == 0 else axis_span(plan, "tp")
    valid = [d for d in divisors(model.kv_heads) if d > 1]
    yield warning("W0311", f"{what} does not divide {model.kv_heads} kv heads: K and V are replicated",
                  span, label=f"{model.kv_heads} kv heads over {split} ranks",
                  labels=labels(model_label(plan, "kv_heads", f"{model.kv_heads} kv heads")),
                  notes=(f"each rank keeps the kv heads its query heads need instead of a 1/{split} slice{cost}",),
                  help=f"use a degree that divides {model.kv_heads} ({', '.join(map(str, valid))}), "
                  "or acknowledge with `allow W0311`")


@rule
def ffn_divisible_by_tp(plan: Plan) -> Iterator[Diagnostic]:
    tp = _tp(plan)
    if tp is None:
        return
    model = plan.model
    sizes = tp_ffn_sizes(model.layers, len(model.moe_layers), model.ffn, model.is_moe, model.shared_experts,
                         model.expert_ffn)
    for field, size, what in sizes:
        if not tp_splits(size, tp):
            yield error("E0312", f"tp {tp} does not divide the {what} {size:,}", axis_span(plan, "tp"),
                        label=f"{size:,} / {tp} = {size / tp:,.2f}",
                        labels=labels(model_label(plan, field, f"{what} {size:,}")),
                        help=_tp_help(plan, size, tp, f"{size:,}"))


@rule
def hidden_divisible_by_tp(plan: Plan) -> Iterator[Diagnostic]:
    tp = _tp(plan)
    hidden = plan.model.hidden
    if tp is None or tp_splits(hidden, tp):
        return
    yield error("E0313", f"tp {tp} does not divide the hidden size {hidden:,}", axis_span(plan, "tp"),
                label=f"{hidden:,} / {tp} = {hidden / tp:,.2f}",
                labels=labels(model_label(plan, "hidden", f"hidden {hidden:,}")),
                help=_tp_help(plan, hidden, tp, f"{hidden:,}"))


@rule
def vocabulary_padding(plan: Plan) -> Iterator[Diagnostic]:
    """The runtime splits the vocabulary rows unevenly (torch's Shard(0) of a non-divisible size)
    rather than padding them: the fullest tp rank holds ceil(vocab / tp) rows."""
    tp = _tp(plan)
    vocab = plan.model.vocab
    if tp is None or vocab % tp == 0:
        return
    fullest = padded_vocab(vocab, tp) // tp
    tables = 1 if plan.model.tied_embeddings else 2
    span, _ = model_label(plan, "vocab", "")
    yield warning("W0314", f"vocabulary {vocab:,} does not split evenly over tp {tp}", span,
                  label=f"{vocab:,} / {tp} = {vocab / tp:,.2f} rows per rank",
                  labels=labels((axis_span(plan, "tp"), f"tp {tp}")),
                  notes=(f"tp ranks hold {fullest:,} or fewer rows of {'the tied embedding' if tables == 1 else 'the embedding and the output layer'}; "
                         f"the memory model counts the fullest rank. Megatron-LM instead pads the vocabulary "
                         f"(GPT-2's 50,257 to 50,304), which costs the same memory on every rank",),
                  help=f"harmless; a vocabulary of {padded_vocab(vocab, tp):,} splits evenly; acknowledge with "
                  "`allow W0314` on the model line")
