"""Source text and spans.

Every node parc builds from a spec remembers where it came from, so that any later stage
(resolution, checks, search) can point a diagnostic at the exact text a user wrote.
A span is a half-open range of character offsets plus the 1-based line and column of both
ends, computed once here so that renderers never re-scan the file.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from .record import Record


class Span(Record):
    """A half-open range `[start, end)` of characters in one source file."""

    file: str
    """The path as the user gave it (never made absolute: output must not depend on cwd)."""
    start: int
    """Offset of the first character, 0-based, in characters (not bytes)."""
    end: int
    """Offset one past the last character."""
    line: int
    """1-based line of `start`."""
    col: int
    """1-based column of `start`."""
    end_line: int
    """1-based line of `end` (the line of the last character for a non-empty span)."""
    end_col: int
    """1-based column of `end`."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def covers(self, other: Span) -> bool:
        return self.file == other.file and self.start <= other.start and other.end <= self.end


@dataclass(frozen=True)
class SourceFile:
    """One spec's text with a line index for offset -> (line, col) lookups."""

    path: str
    text: str
    line_starts: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        starts = [0]
        find = self.text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        object.__setattr__(self, "line_starts", tuple(starts))

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        start = max(0, min(start, len(self.text)))
        end = max(start, min(end, len(self.text)))
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(
            file=self.path, start=start, end=end, line=line, col=col, end_line=end_line, end_col=end_col
        )

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        if not 1 <= line <= len(self.line_starts):
            return ""
        begin = self.line_starts[line - 1]
        stop = self.line_starts[line] - 1 if line < len(self.line_starts) else len(self.text)
        return self.text[begin:stop].rstrip("\r")

    @property
    def end_span(self) -> Span:
        """An empty span at the end of the file, for "expected more" errors."""
        return self.span(len(self.text), len(self.text))
