"""Compiler diagnostics: the one way parc tells a user that something is wrong.

A diagnostic has a stable code, a short lowercase message that stands alone, the smallest
span that is wrong, optional secondary labels elsewhere, notes, and one `help:` that says how to
fix it (rustc's and Elm's conventions). Stages never print and never raise for bad input: they
return diagnostics, and the CLI renders them all at once, as text for people or JSON for tools.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from enum import Enum

from .record import Record
from .source import SourceFile, Span


class Severity(str, Enum):
    error = "error"
    warning = "warning"
    note = "note"


class Label(Record):
    """A secondary span with a short explanation ("heads = 40 comes from here")."""

    span: Span
    message: str


class Diagnostic(Record):
    """One problem found in a spec."""

    code: str
    """Stable identifier (E0201, W0305, ...): `parc codes CODE` explains it at length."""
    severity: Severity
    message: str
    """What is wrong, lowercase, no final period; it must make sense without the source line."""
    span: Span | None = None
    """The smallest piece of text that is wrong; None only for file-level problems."""
    label: str = ""
    """A few words printed under the underline."""
    labels: tuple[Label, ...] = ()
    """Secondary spans (where a conflicting value came from)."""
    notes: tuple[str, ...] = ()
    """Extra facts: the arithmetic behind a rule, a breakdown."""
    help: str | None = None
    """How to fix it, with a concrete value where there is one."""
    allowed: bool = False
    """A warning the spec acknowledged with `allow CODE`: reported, never failing."""

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.error


def error(code: str, message: str, span: Span | None, **fields) -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.error, message=message, span=span, **fields)


def warning(code: str, message: str, span: Span | None, **fields) -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.warning, message=message, span=span, **fields)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)


def sort_key(d: Diagnostic) -> tuple:
    """Source order, so output reads top to bottom; ties keep the order the stages found them."""
    if d.span is None:
        return ("", -1, 0)
    return (d.span.file, d.span.start, d.span.end)


# ---------------------------------------------------------------------------------------------
# Rendering


class Style:
    """ANSI styling, on only for a terminal and never when NO_COLOR is set (no-color.org)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream) -> Style:
        if os.environ.get("NO_COLOR", "") != "":
            return cls(False)
        isatty = getattr(stream, "isatty", None)
        return cls(bool(isatty and isatty()))

    def _wrap(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, t: str) -> str:
        return self._wrap(t, "1")

    def red(self, t: str) -> str:
        return self._wrap(t, "1;31")

    def yellow(self, t: str) -> str:
        return self._wrap(t, "1;33")

    def blue(self, t: str) -> str:
        return self._wrap(t, "1;34")

    def cyan(self, t: str) -> str:
        return self._wrap(t, "1;36")

    def green(self, t: str) -> str:
        return self._wrap(t, "1;32")


_MAX_SHOWN = 100  # characters of a long line shown around a span


def _printable(text: str) -> str:
    """One display cell per character, so underlines stay aligned with the text above."""
    return "".join(c if c.isprintable() else ("\u2423" if c == "\t" else "\ufffd") for c in text)


def _window(line: str, col: int, width: int) -> tuple[str, int]:
    """Clip a long line around a 0-based column; returns the text and the column inside it."""
    if len(line) <= _MAX_SHOWN:
        return line, col
    begin = max(0, min(col - 30, len(line) - _MAX_SHOWN))
    clipped = line[begin : begin + _MAX_SHOWN]
    prefix = "..." if begin > 0 else ""
    suffix = "..." if begin + _MAX_SHOWN < len(line) else ""
    return prefix + clipped + suffix, col - begin + len(prefix)


def _snippet_rows(source: SourceFile, marks: list[tuple[Span, str, str, object]], gutter: int) -> list[str]:
    """One source line and one underline row per span on it (primary first)."""
    first = marks[0][0]
    line_text = source.line_text(first.line)
    pad = " " * gutter
    rows = []
    shown_line = None
    for span, label, mark, paint in marks:
        col = span.col - 1
        if span.end_line == span.line:
            width = max(1, span.end_col - span.col)
        else:
            width = max(1, len(line_text) - col)
        shown, shown_col = _window(line_text, col, width)
        if shown_line is None:
            shown_line = shown
            rows.append(f"{str(span.line).rjust(gutter)} | {_printable(shown)}")
        width = max(1, min(width, len(shown) - shown_col)) if shown_col < len(shown) else 1
        underline = " " * shown_col + mark * width
        rows.append(f"{pad} | {paint(underline)}{(' ' + paint(label)) if label else ''}")
    return rows


def render_text(
    diagnostics: Sequence[Diagnostic], sources: dict[str, SourceFile], style: Style, brief_allowed: bool = False
) -> str:
    """rustc-style text: location, message, the line with the span underlined, help.

    With `brief_allowed`, a warning the spec acknowledged is one line: it was read in review
    already, and `parc explain` shows it in full."""
    out: list[str] = []
    for d in sorted(diagnostics, key=sort_key):
        if brief_allowed and d.allowed:
            where = f"{d.span}: " if d.span else ""
            out.append(f"{where}{d.severity.value}[{d.code}] (allowed): {d.message}")
            continue
        out.extend(_render_one(d, sources, style))
        out.append("")
    return "\n".join(out) + ("\n" if out and out[-1] != "" else "")


def _render_one(d: Diagnostic, sources: dict[str, SourceFile], style: Style) -> list[str]:
    paint = {
        Severity.error: style.red,
        Severity.warning: style.yellow,
        Severity.note: style.cyan,
    }[d.severity]
    kind = f"{d.severity.value}[{d.code}]"
    if d.allowed:
        kind = f"{d.severity.value}[{d.code}] (allowed)"
    where = f"{d.span}: " if d.span else ""
    lines = [f"{style.bold(where)}{paint(kind)}: {style.bold(d.message)}"]
    spans = ([d.span] if d.span else []) + [label.span for label in d.labels]
    source = sources.get(d.span.file) if d.span else None
    if source is not None and spans:
        gutter = max(len(str(s.line)) for s in spans)
        pad = " " * gutter
        lines.append(f"{pad} |")
        by_line: dict[int, list] = {}
        by_line.setdefault(d.span.line, []).append((d.span, d.label, "^", paint))
        elsewhere = []
        for label in d.labels:
            if label.span.file == d.span.file:
                by_line.setdefault(label.span.line, []).append((label.span, label.message, "-", style.blue))
            else:
                elsewhere.append(label)
        for line in sorted(by_line):
            lines.extend(_snippet_rows(source, by_line[line], gutter))
        for label in elsewhere:
            lines.append(f"{pad} = {label.span}: {label.message}")
        lines.append(f"{pad} |")
    for note in d.notes:
        lines.append(f"{style.bold('note')}: {note}")
    if d.help:
        lines.append(f"{style.green('help')}: {d.help}")
    return lines


def summary_line(diagnostics: Sequence[Diagnostic], style: Style) -> str:
    errors = sum(1 for d in diagnostics if d.is_error)
    warnings = sum(1 for d in diagnostics if d.severity is Severity.warning and not d.allowed)
    allowed = sum(1 for d in diagnostics if d.allowed)
    parts = []
    if errors:
        parts.append(style.red(f"{errors} error{'s' if errors != 1 else ''}"))
    if warnings:
        parts.append(style.yellow(f"{warnings} warning{'s' if warnings != 1 else ''}"))
    if allowed:
        parts.append(f"{allowed} allowed")
    return ", ".join(parts)


def as_json(diagnostics: Sequence[Diagnostic]) -> list[dict]:
    return [d.model_dump(mode="json") for d in sorted(diagnostics, key=sort_key)]


def dumps_json(data) -> str:
    """The one JSON style parc writes: sorted keys, two-space indent, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()

