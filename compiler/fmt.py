"""`parc fmt`: one canonical text for a spec, comments kept, idempotent.

The formatter works on the syntax tree (not the Plan), so it keeps exactly what was written:
presets stay presets, numbers keep their spelling (`16_777_216`), statements keep their order.
It normalises only layout: one space between words, ` x ` between axes, blocks on their own
lines with two-space indentation, at most one blank line in a row, two spaces before a trailing
comment. Comments are put back by position: a comment on its own line stays above the statement
that follows it; a comment at the end of a line stays at the end of that line.
"""

from __future__ import annotations

from .syntax import Atom, Document, LayoutLine, Setting

INDENT = "  "


def atom_text(atom: Atom) -> str:
    if atom.kind == "list":
        return "[" + ", ".join(atom_text(item) for item in atom.items) + "]"
    return atom.text


def _allow_text(allow: tuple[Atom, ...]) -> str:
    return (" allow " + ", ".join(a.text for a in allow)) if allow else ""


def layout_text(line: LayoutLine) -> str:
    text = " x ".join(f"{term.name.text} {term.degree.text}" for term in line.axes)
    if line.over:
        text += " over " + " x ".join(a.text for a in line.over)
    if line.placement is not None:
        args = []
        for arg in line.placement.args:
            args.append(f"{arg.value.text} gpus" if arg.kind == "gpus" else arg.value.text)
        text += " on nodes(" + ", ".join(args) + ")"
    return text + _allow_text(line.allow)


def setting_head(setting: Setting) -> str:
    return " ".join([setting.key.text] + [atom_text(v) for v in setting.values])


class _Formatter:
    def __init__(self, document: Document):
        self.comments = sorted(document.comments, key=lambda c: c.span.start)
        self.next = 0
        self.lines: list[str] = []
        self.last_line = 0  # last source line already written
        self.fresh_block = True  # just after an opening brace (no blank line wanted)

    def _blank_before(self, source_line: int) -> None:
        if not self.fresh_block and self.lines and source_line > self.last_line + 1:
            self.lines.append("")
        self.fresh_block = False

    def _emit(self, text: str, source_line: int, end_line: int | None = None) -> None:
        self._blank_before(source_line)
        self.lines.append(text.rstrip())
        self.last_line = max(self.last_line, end_line or source_line)

    def comments_before(self, offset: int, indent: str) -> None:
        while self.next < len(self.comments) and self.comments[self.next].span.start < offset:
            comment = self.comments[self.next]
            self.next += 1
            self._emit(indent + comment.text, comment.span.line)

    def trailing(self, line: int) -> str:
        """The comment at the end of source line `line`, if any, taken."""
        if self.next < len(self.comments) and self.comments[self.next].span.line == line:
            comment = self.comments[self.next]
            self.next += 1
            return "  " + comment.text
        return ""

    def statement(self, statement, indent: str) -> None:
        self.comments_before(statement.span.start, indent)
        if isinstance(statement, LayoutLine):
            text = indent + layout_text(statement)
            self._emit(text + self.trailing(statement.span.end_line), statement.span.line, statement.span.end_line)
            return
        head = indent + setting_head(statement)
        body = statement.body
        if body is None:
            text = head + _allow_text(statement.allow)
            self._emit(text + self.trailing(statement.span.end_line), statement.span.line, statement.span.end_line)
            return
        if not body.settings and not self._comments_inside(body.close_span.start):
            text = head + " {}" + _allow_text(statement.allow)
            self._emit(text + self.trailing(statement.span.end_line), statement.span.line, statement.span.end_line)
            return
        self._emit(head + " {" + self.trailing(body.open_span.line), statement.span.line, body.open_span.line)
        self.fresh_block = True
        for inner in body.settings:
            self.statement(inner, indent + INDENT)
        self.comments_before(body.close_span.start, indent + INDENT)
        self.fresh_block = True  # no blank line before a closing brace
        close = indent + "}" + _allow_text(statement.allow)
        trailing = self.trailing(body.close_span.line) if body.close_span.line != body.open_span.line else ""
        self._emit(close + trailing, body.close_span.line)

    def _comments_inside(self, offset: int) -> bool:
        return self.next < len(self.comments) and self.comments[self.next].span.start < offset


def format_document(document: Document) -> str:
    """The canonical text of a parsed spec (call only on a document without syntax errors)."""
    formatter = _Formatter(document)
    for statement in document.statements:
        formatter.statement(statement, "")
    formatter.comments_before(len(document.source.text) + 1, "")
    while formatter.lines and not formatter.lines[-1]:
        formatter.lines.pop()
    return "\n".join(formatter.lines) + "\n" if formatter.lines else ""
