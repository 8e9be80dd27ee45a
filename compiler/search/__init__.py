"""`parc search`: fill every `?` of a spec with the layouts predicted fastest, and say why.

    space.py    which values each `?` ranges over; the canonical order of assignments
    engine.py   the search: rules as pruning, a lower bound on step time, exact evaluation
    fill.py     an assignment written back into the spec's text, verified by re-parsing
    explain.py  why each runner-up lost to the winner, from the two time breakdowns
    render.py   the table, the JSON, the diagnostics of a search that finds nothing
    progress.py the progress bar of a search that runs longer than a second

The engine ranks candidates on plain numbers, with the checks' own conditions
(`checks/predicates.py`), the memory model's `peak` and the time model's `step_time`. The best
N are then written into the spec's text and run through the real front end (parse, resolve,
every check, `parc explain`'s predictions), so what search prints about a layout is exactly what
`parc check` and `parc explain` say about the spec `--write` produces. docs/search.md describes
the space, the pruning and the tie-break.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..defaults import DEFAULT_TOP
from ..diagnostics import Diagnostic, has_errors
from ..memory import Estimate, estimate
from ..pipeline import Compilation
from ..timing import Prediction, predict
from .engine import Engine, SpaceTooLarge, Stats
from .fill import FillError, fill, verify, written_span
from .space import Assignment, Space, build_space, hole_values

SPARES = 4
"""Candidates kept beyond the N asked for, in case the real front end rejects one the fast path
accepted (it never should: tests/test_search_rules.py; a rejection is counted and shown)."""


@dataclass
class Candidate:
    """One of the best layouts, as the real front end sees the spec filled with it."""

    rank: int
    assignment: Assignment
    values: dict[str, str]
    """Each hole's value as written into the spec."""
    text: str
    """The spec with every `?` filled."""
    compilation: Compilation
    prediction: Prediction
    memory: Estimate
    fast_step: float
    """The step time the engine ranked it by (equal to `prediction`'s; a test holds them equal)."""
    pareto: bool = False
    """No other listed candidate is at least as fast with no more memory (and better in one)."""
    lost_because: str | None = None
    indistinguishable: bool = False
    """Its predicted step is within the time model's error band of the winner's (`ranking.py`)."""

    @property
    def step(self) -> float:
        return self.prediction.breakdown.step

    @property
    def peak_bytes(self) -> int:
        return self.memory.peak_bytes


@dataclass
class SearchResult:
    space: Space
    stats: Stats
    candidates: list[Candidate] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """Why nothing was found (E0501-E0503); empty when there are candidates."""
    rejected: list[str] = field(default_factory=list)
    """Candidates the fast path accepted but the front end did not (a bug when not empty)."""
    benchmark_first: Candidate | None = None
    """The indistinguishable runner-up to benchmark against the winner first (`ranking.py`)."""

    @property
    def winner(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None


def job_diagnostics(plan):
    """What `parc compile` adds for the generated runtime (imported late: a backend module)."""
    from ..backends import job_diagnostics as backend_diagnostics

    return backend_diagnostics(plan)


def search(compilation: Compilation, top: int = DEFAULT_TOP,
           progress: Callable[[int, int], None] | None = None, ceiling: float = math.inf,
           degree_values: dict[str, frozenset[int]] | None = None) -> SearchResult:
    """The best `top` assignments of a spec's holes. The compilation must have a plan and no
    errors (the caller reports those as `parc check` does). With a `ceiling` (seconds per step)
    only layouts at most that fast are looked for (the engine's own bound prunes the rest): the
    outer cluster search asks so where a slower layout could not change its answer; finding none
    then means "none that fast", not that nothing fits. `degree_values` (open axis -> the
    degrees a valid layout can take there, a necessary condition the outer search knows) lets
    the engine skip the others unenumerated (`Engine`)."""
    from .explain import explain_losses, mark_pareto
    from .ranking import mark_indistinguishable
    from .render import no_candidate, too_large

    if compilation.plan is None or has_errors(compilation.diagnostics):
        raise ValueError("search needs a spec without errors")
    space = build_space(compilation)
    from ..targets import memory_runtime, software_of

    plan = compilation.plan  # the target's runtime facts: its time and memory models
    # no name keeps the engine: its caches are freed when `run` returns, before the front end's
    # allocations wake the garbage collector it paused (`engine.collector_paused`)
    try:
        outcome = Engine(space, keep=top + SPARES, progress=progress, software=software_of(plan),
                         runtime=memory_runtime(plan.target), ceiling=ceiling, degree_values=degree_values).run()
    except SpaceTooLarge as exc:
        return SearchResult(space=space, stats=exc.stats, diagnostics=[too_large(space, exc)])
    result = SearchResult(space=space, stats=outcome.stats)
    refusals: list[tuple[Assignment, list[Diagnostic]]] = []  # what parc check/compile said of each
    for found in outcome.found:
        if len(result.candidates) == top:
            break
        text = fill(space, found.assignment)
        try:
            checked = verify(space, found.assignment, text)
        except FillError as exc:
            result.rejected.append(str(exc))
            continue
        if has_errors(checked.diagnostics):
            errors = [d for d in checked.diagnostics if d.is_error]
            refusals.append((found.assignment, errors))
            codes = sorted({d.code for d in errors})
            result.rejected.append(f"{hole_values(space, found.assignment)}: parc check reports {', '.join(codes)}")
            continue
        backend = [d for d in job_diagnostics(checked.plan) if d.is_error]
        if backend:
            refusals.append((found.assignment, backend))
            codes = [d.code for d in backend]
            result.rejected.append(f"{hole_values(space, found.assignment)}: parc compile reports {', '.join(codes)}")
            continue
        prediction, memory = predict(checked.plan), estimate(checked.plan)
        result.candidates.append(Candidate(
            rank=len(result.candidates) + 1, assignment=found.assignment, values=hole_values(space, found.assignment),
            text=text, compilation=checked, prediction=prediction, memory=memory, fast_step=found.step))
    if not result.candidates:
        result.diagnostics.extend(written_errors(space, refusals) or [no_candidate(space, outcome)])
        return result
    mark_pareto(result.candidates)
    explain_losses(space, result.candidates)
    result.benchmark_first = mark_indistinguishable(result.candidates)
    return result


def written_errors(space: Space, refusals: list[tuple[Assignment, list[Diagnostic]]]) -> list[Diagnostic]:
    """The errors `parc compile` reports against the written part of the spec for every layout
    search ranked (none was accepted): the same finding, outside the filled `?`s, for each one.
    Search's own rules are the checks' and the target rules that read the holes; a finding the
    holes cannot change (a precision the target cannot run, say) is the spec's problem, reported
    where `parc compile` reports it, not an internal error."""
    if not refusals:
        return []
    first_assignment, first = refusals[0]
    out = []
    for d in first:
        span = written_span(space, first_assignment, d.span)
        if span is None:
            continue
        if all(any(e.code == d.code and e.message == d.message and written_span(space, a, e.span) == span
                   for e in errors) for a, errors in refusals[1:]):
            labels = tuple(label.model_copy(update={"span": moved}) for label in d.labels
                           if (moved := written_span(space, first_assignment, label.span)) is not None)
            note = (f"`parc compile` refuses each of the {len(refusals)} layouts `parc search` ranked best for "
                    "this, outside the `?`s")
            out.append(d.model_copy(update={"span": span, "labels": labels, "notes": (*d.notes, note)}))
    return out


__all__ = ["Candidate", "SearchResult", "search", "fill", "build_space"]
