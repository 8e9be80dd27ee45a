"""Small pieces the rules share: where a number came from, and which values would be valid.

A diagnostic points at the number that is wrong and labels the numbers it conflicts with, so
these helpers turn a plan field into a secondary label, and a constraint into a short list of
valid values near the one written ("try 4, 5 or 8").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..diagnostics import Label
from ..plan import Plan
from ..source import Span
from ..suggest import english_list

GiB = 1 << 30


def divisors(n: int) -> list[int]:
    if n <= 0:
        return []
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def nearest(candidates: Iterable[int], around: int, count: int = 3) -> list[int]:
    """The `count` candidates closest to `around` (by ratio), in increasing order."""
    def distance(c: int) -> float:
        return max(c, around) / max(1, min(c, around))

    chosen = sorted(set(candidates), key=lambda c: (distance(c), c))[:count]
    return sorted(chosen)


def suggest(candidates: Iterable[int], around: int, count: int = 3, ok: Callable[[int], bool] | None = None) -> str:
    """"4, 5 or 8": valid values near `around`, or "" when there are none."""
    values = [c for c in candidates if c != around and (ok is None or ok(c))]
    return english_list([f"{v:,}" for v in nearest(values, around, count)])


def gib(nbytes: float) -> str:
    return f"{nbytes / GiB:,.1f} GiB"


def axis_span(plan: Plan, axis: str) -> Span | None:
    """Where an axis's degree is written (the layout line, or the ep fold)."""
    return getattr(plan.layout, axis).span_of("degree")


def layout_span(plan: Plan) -> Span | None:
    return plan.layout.span_of("axes")


def labels(*pairs: tuple[Span | None, str]) -> tuple[Label, ...]:
    """Secondary labels, skipping numbers that were not written anywhere (defaults)."""
    seen: set[tuple[int, int, str]] = set()
    out = []
    for span, message in pairs:
        if span is None:
            continue
        key = (span.start, span.end, span.file)
        if key in seen:
            continue
        seen.add(key)
        out.append(Label(span=span, message=message))
    return tuple(out)


def model_label(plan: Plan, field: str, text: str) -> tuple[Span | None, str]:
    """A label at the model field (the preset name when it comes from a preset)."""
    model = plan.model
    span = model.span_of(field)
    source = f" (`{model.name}`)" if model.name != "custom" and span == _preset_span(plan) else ""
    return span, f"{text}{source}"


def _preset_span(plan: Plan) -> Span | None:
    """Every preset field shares the preset name's span; `layers` always exists."""
    spans = plan.model.spans
    layer = spans.get("layers")
    if layer is not None and spans.get("vocab") == layer and spans.get("hidden") == layer:
        return layer
    return None


def first_span(*spans: Span | None) -> Span | None:
    return next((s for s in spans if s is not None), None)
