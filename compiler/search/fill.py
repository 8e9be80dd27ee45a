"""Writing an assignment back into the spec's text: each `?` replaced where it stands.

Only the `?` tokens change (and, for `order ?`, the layout line's axis terms, which are put in
the chosen rank order; its placement, `allow` and trailing comment stay). Every other byte of
the spec, comments and layout included, is kept, so the choice reads as a small diff in review.
The result is parsed again and its Plan compared with the assignment before anyone writes it.
"""

from __future__ import annotations

from ..pipeline import Compilation, compile_text
from ..source import Span
from ..syntax import LayoutLine
from .space import AXIS_HOLES, Assignment, Space, hole_values


class FillError(Exception):
    """The filled text does not say what search chose (a bug in parc, reported as one)."""


def _layout_line(compilation: Compilation) -> LayoutLine | None:
    span = compilation.spec.layout.span
    for statement in compilation.document.statements:
        if isinstance(statement, LayoutLine) and statement.span.start == span.start:
            return statement
    return None


def fill(space: Space, a: Assignment) -> str:
    """The spec's text with every `?` replaced by the assignment's value."""
    text = space.compilation.source.text
    for start, end, value in sorted(_edits(space, a), reverse=True):
        text = text[:start] + value + text[end:]
    return text


def written_span(space: Space, a: Assignment, span: Span | None) -> Span | None:
    """Where a span of the filled text (`fill(space, a)`) stands in the spec as written, or None
    when it touches a replaced `?`: a finding there is about the written text, not the holes."""
    if span is None or span.file != space.compilation.source.path:
        return None
    shift = 0
    for start, end, value in sorted(_edits(space, a)):
        filled_start = start + shift
        filled_end = filled_start + len(value)
        if span.start < filled_end and filled_start < span.end or filled_start == span.start:
            return None
        if filled_end <= span.start:
            shift += len(value) - (end - start)
    return space.compilation.source.span(span.start - shift, span.end - shift)


def _edits(space: Space, a: Assignment) -> list[tuple[int, int, str]]:
    """(start, end, value): each written range `fill` replaces."""
    compilation = space.compilation
    values = hole_values(space, a)
    edits: list[tuple[int, int, str]] = []
    reorder = None
    if "order" in space.holes:
        line = _layout_line(compilation)
        first, last = line.axes[0].span.start, line.axes[-1].span.end
        written = {term.name.text: term.degree for term in line.axes}
        terms = []
        for name in a.order:
            atom = written[name]
            degree = str(a.degree(name)) if atom.kind == "hole" else atom.text
            terms.append(f"{name} {degree}")
        reorder = (first, last)
        edits.append((first, last, " x ".join(terms)))
    for hole in compilation.spec.holes:
        span = hole.span
        if reorder is not None and hole.value in AXIS_HOLES and reorder[0] <= span.start < reorder[1]:
            continue  # rewritten with the layout line
        value = "fixed" if hole.value == "order" else values[hole.value]
        edits.append((span.start, span.end, value))
    return edits


def verify(space: Space, a: Assignment, text: str) -> Compilation:
    """Parse and check the filled text; raise FillError unless its plan is the assignment."""
    result = compile_text(text, path=space.compilation.source.path)
    plan = result.plan
    if plan is None or plan.holes:
        raise FillError("the filled spec does not resolve to a complete plan: "
                        + "; ".join(f"{d.code} {d.message}" for d in result.diagnostics if d.is_error))
    lay, train = plan.layout, plan.training
    got = Assignment(
        degrees=tuple((axis.name, axis.degree) for axis in lay.axes), ep=lay.ep.degree or 1,
        micro=train.micro_batch, recompute=train.recompute, sharding=lay.dp.sharding,
        shard=lay.dp.shard or 0 if lay.dp.sharding == "hsdp" else 0, schedule=lay.pp.schedule,
        virtual_stages=lay.pp.virtual_stages, sequence_parallel=bool(lay.tp.sequence_parallel))
    expected = a
    if got != expected:
        raise FillError(f"the filled spec resolves to {got}, not to the chosen {expected}")
    return result

