"""Golden tests per pipeline stage: each example spec's tree, typed IR and Plan.

A change to the grammar, the IR or resolution shows up as a reviewable diff of these files.
Regenerate with `PARC_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_stages_golden.py`.
"""

from __future__ import annotations

from parc.diagnostics import dumps_json
from parc.pipeline import compile_path
from parc.resolve import plan_json, strip_spans
from parc.syntax import Atom, Document, LayoutLine, Setting

from .conftest import GOLDEN, ROOT, check_golden


def dump_tree(document: Document) -> str:
    """An indented outline of the syntax tree with each node's line:col."""
    lines: list[str] = []

    def atom(a: Atom) -> str:
        if a.kind == "list":
            return "[" + ", ".join(atom(i) for i in a.items) + "]"
        return f"{a.kind}:{a.text}"

    def setting(s: Setting, depth: int) -> None:
        pad = "  " * depth
        values = " ".join(atom(v) for v in s.values)
        allow = f" allow {','.join(a.text for a in s.allow)}" if s.allow else ""
        lines.append(f"{pad}setting {s.span.line}:{s.span.col} {atom(s.key)} {values}{allow}".rstrip())
        if s.body is not None:
            for inner in s.body.settings:
                setting(inner, depth + 1)

    for statement in document.statements:
        if isinstance(statement, LayoutLine):
            axes = " x ".join(f"{t.name.text}={atom(t.degree)}" for t in statement.axes)
            extra = ""
            if statement.over:
                extra += " over " + ",".join(a.text for a in statement.over)
            if statement.placement:
                extra += " on " + ",".join(f"{a.kind}:{a.value.text}" for a in statement.placement.args)
            lines.append(f"layout {statement.span.line}:{statement.span.col} {axes}{extra}")
        else:
            setting(statement, 0)
    for comment in document.comments:
        lines.append(f"comment {comment.span.line}:{comment.span.col} {comment.text}")
    return "\n".join(lines) + "\n"


def test_tree_ir_and_plan(spec_path):
    result = compile_path(str(spec_path.relative_to(ROOT)), checks=False)
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    name = spec_path.stem
    check_golden(GOLDEN / "stages" / f"{name}.tree.txt", dump_tree(result.document))
    check_golden(GOLDEN / "stages" / f"{name}.spec.json",
                 dumps_json(strip_spans(result.spec.model_dump(mode="json"))))
    check_golden(GOLDEN / "stages" / f"{name}.plan.json", dumps_json(plan_json(result.plan)))
