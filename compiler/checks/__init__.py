"""Checks: an ordered list of small pure functions over a Plan that yield diagnostics.

A rule never changes the plan and never raises; each has a stable code explained by
`parc codes CODE`. Rules live in the modules of this package, grouped by what they look at, and
are listed in `RULES` in the order their findings read best (topology before memory).

A warning can be acknowledged in the spec with `allow CODE` on the statement it points at; it is
then still reported, marked "(allowed)", and never fails `parc check`. An error cannot be allowed,
and an `allow` of a warning that does not fire on its statement is itself a warning (W0240).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..codes import CODES
from ..diagnostics import Diagnostic, Severity, error, warning
from ..plan import Plan

Rule = Callable[[Plan], Iterable[Diagnostic]]

RULES: list[Rule] = []
"""Every rule, in report order. Modules register theirs with `@rule`."""


def rule(function: Rule) -> Rule:
    RULES.append(function)
    return function


def run_checks(plan: Plan) -> list[Diagnostic]:
    """Every rule's findings, with acknowledged warnings marked."""
    _load_rule_modules()
    found: list[Diagnostic] = []
    for check in RULES:
        try:
            found.extend(check(plan))
        except Exception as exc:  # a rule bug must not hide the other findings
            found.append(error("E0299", f"internal error in check `{check.__name__}`", None,
                               notes=(f"{type(exc).__name__}: {exc}",), help="please report this spec"))
    return apply_allows(plan, found)


def apply_allows(plan: Plan, found: list[Diagnostic]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for allow in plan.allows:
        code = CODES.get(allow.code)
        if code is None:
            out.append(error("E0217", f"`allow {allow.code}` names no diagnostic code", allow.code_span,
                             label="not a code",
                             help="`parc codes` lists the codes; warnings start with W"))
        elif code.severity != "warning":
            out.append(error("E0216", f"`{allow.code}` is an error and cannot be allowed", allow.code_span,
                             label="an error code",
                             help=f"fix the problem instead; `parc codes {allow.code}` explains it"))
    used: set[int] = set()
    for d in found:
        covering = [i for i, a in enumerate(plan.allows)
                    if d.severity is Severity.warning and d.span is not None
                    and a.code == d.code and a.statement.covers(d.span)]
        if covering:
            used.update(covering)
            d = d.model_copy(update={"allowed": True})
        out.append(d)
    out.extend(unused_allows(plan, used))
    return out


def unused_allows(plan: Plan, used: set[int]) -> list[Diagnostic]:
    """W0240 for an `allow` of a real warning that no rule reported on its statement: a stale
    acknowledgement (the layout changed) or the wrong code hides nothing and misleads a reader.

    Judged only when every rule could run (no holes: a rule may fire once they are filled) and
    only for the rules' own codes (W06xx come from the generated runtime, at compile time)."""
    if plan.holes:
        return []
    out = []
    for i, allow in enumerate(plan.allows):
        code = CODES.get(allow.code)
        if code is None or code.severity != "warning" or i in used or not code.code.startswith(RULE_WARNINGS):
            continue
        out.append(warning("W0240", f"`allow {allow.code}` acknowledges a warning that is not reported here",
                           allow.code_span, label=f"{allow.code} does not fire on this statement",
                           notes=(f"{allow.code}: {code.title}",),
                           help=f"remove `allow {allow.code}`, or move it to the statement the warning points at "
                                f"(`parc check` shows where; `parc codes {allow.code}` explains it)"))
    return out


RULE_WARNINGS = ("W03", "W04")
"""Prefixes of the warnings the rules of this package emit (the ones `unused_allows` can judge)."""


RULE_MODULES: tuple[str, ...] = (
    "topology",  # world placement: tp inside NVLink, rank order
    "tensor",  # tp against heads, kv heads, FFN, hidden, vocabulary
    "window",  # a sliding window that changes nothing
    "schedule",  # layers over stages, what each pipeline schedule accepts
    "batch",  # global batch over dp, micro-batches over pp, the bubble
    "offload",  # activation offloading: its layer count, no recomputation beside it
    "context",  # the sequence over cp and tp
    "experts",  # experts over ep, ep over its folded axes
    "sharding",  # hsdp factors, zero3 with pipelines
    "target",  # what the target runtime cannot run (compiler/targets.py)
    "memory",  # the worst rank's peak against HBM (last: it reads best after the layout rules)
)
"""Modules of this package that hold rules, in report order."""

_loaded = False


def _load_rule_modules() -> None:
    """Import the rule modules once; each registers its rules in RULES at import."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for name in RULE_MODULES:
        importlib.import_module(f"{__name__}.{name}")
