"""Stage 1, text -> tree: parse a spec's text into a `Document` of generic statements.

The grammar (`grammar/par.lark`) is LALR, so parsing is fast and its errors are precise. A
syntax error does not stop the file: parsing restarts at the next top-level statement, and a
broken block is re-read line by line, so one run reports every syntax error in the file.
Common mistakes (`tp=8`, a missing `x`, an unclosed `{`) are recognised and get a message written
for them, ending with valid examples, as Elm does.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .diagnostics import Diagnostic, error
from .lark_import import lark_without_regex
from .source import SourceFile, Span

lark = lark_without_regex()
Lark, Token, Tree, lark_version = lark.Lark, lark.Token, lark.Tree, lark.__version__
UnexpectedCharacters, UnexpectedEOF = lark.exceptions.UnexpectedCharacters, lark.exceptions.UnexpectedEOF
UnexpectedInput, UnexpectedToken = lark.exceptions.UnexpectedInput, lark.exceptions.UnexpectedToken

MAX_SPEC_BYTES = 64 << 10
"""Specs larger than this are refused before parsing (a real spec is a few hundred bytes).
Parsing and checking cost about 30 us and 10 KB per statement, so 64 KiB of one-word statements
takes 2 to 4.5 s and 200 MB (docs/robustness.md); 1 MiB took 37 s and 2.8 GB."""
MAX_NESTING = 16
"""Deepest `{ }` / `[ ]` nesting parc reads (a real spec nests three deep). The tree is built
recursively, so deeper input is refused before parsing rather than overflowing the stack."""
MAX_SYNTAX_ERRORS = 100
"""Error recovery stops after this many syntax errors: past it the input is not a spec, and
reporting each of 100,000 broken lines would only cost time and memory."""


# ---------------------------------------------------------------------------------------------
# The tree


@dataclass(frozen=True)
class Atom:
    """One value as written: a number, a name, a string, `?`, the word `x`, or a `[list]`."""

    kind: str  # "number" | "name" | "string" | "hole" | "times" | "list" | "axis"
    text: str
    span: Span
    items: tuple[Atom, ...] = ()


@dataclass(frozen=True)
class Body:
    """A `{ ... }` block of settings."""

    settings: tuple[Setting, ...]
    open_span: Span
    close_span: Span


@dataclass(frozen=True)
class Setting:
    """`key value... { body } allow CODE`. An axis block (`tp { ... }`) has a key of kind "axis"."""

    key: Atom
    values: tuple[Atom, ...]
    body: Body | None
    allow: tuple[Atom, ...]
    span: Span


@dataclass(frozen=True)
class AxisTerm:
    name: Atom
    degree: Atom
    span: Span


@dataclass(frozen=True)
class NodeArg:
    kind: str  # "gpus" | "link"
    value: Atom
    span: Span


@dataclass(frozen=True)
class Placement:
    args: tuple[NodeArg, ...]
    span: Span


@dataclass(frozen=True)
class LayoutLine:
    """`tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)`, or `ep 8 over dp x cp`."""

    axes: tuple[AxisTerm, ...]
    over: tuple[Atom, ...]
    over_span: Span | None
    placement: Placement | None
    allow: tuple[Atom, ...]
    span: Span


Statement = LayoutLine | Setting


@dataclass(frozen=True)
class Comment:
    text: str
    span: Span


@dataclass(frozen=True)
class Document:
    source: SourceFile
    statements: tuple[Statement, ...]
    comments: tuple[Comment, ...]


# ---------------------------------------------------------------------------------------------
# The parser


def _grammar_cache() -> str | bool:
    """Where Lark keeps its analysed grammar between runs: building the LALR tables is most of a
    cold `parc check`. Lark stores the grammar's and options' SHA-256 in the file and rebuilds
    (and rewrites) it whenever they differ, so a changed grammar or Lark never loads a stale table;
    an unwritable folder only costs the rebuild. `PARC_CACHE_DIR` moves it; empty turns it off."""
    folder = os.environ.get("PARC_CACHE_DIR")
    if folder is None:
        folder = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "parc")
    if not folder:
        return False
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    major, minor = sys.version_info[:2]
    return os.path.join(folder, f"grammar-lark{lark_version}-py{major}{minor}.pickle")


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("parc.grammar").joinpath("par.lark").read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=["start", "statement", "setting"],
        propagate_positions=True,
        maybe_placeholders=False,
        cache=_grammar_cache(),
    )


def parse(source: SourceFile) -> tuple[Document, list[Diagnostic]]:
    """Parse a whole spec; never raises. Statements that failed to parse are left out."""
    comments = tuple(_scan_comments(source))
    too_deep = _nesting_error(source)
    if too_deep is not None:
        return Document(source, (), comments), [too_deep]
    try:
        tree = _parser().parse(source.text, start="start")
    except UnexpectedInput:
        statements, diagnostics = _parse_with_recovery(source)
        return Document(source, tuple(statements), comments), diagnostics
    builder = _Builder(source, 0)
    statements = tuple(builder.statement(child) for child in tree.children)
    return Document(source, statements, comments), []


def _nesting_error(source: SourceFile) -> Diagnostic | None:
    """An error at the first bracket nested deeper than MAX_NESTING, if any."""
    text = source.text
    if text.count("{") + text.count("[") <= MAX_NESTING:
        return None
    depth = 0
    for index, line_start in enumerate(source.line_starts):
        line_end = source.line_starts[index + 1] if index + 1 < len(source.line_starts) else len(text)
        for offset, c in enumerate(_strip_strings_and_comments(text[line_start:line_end])):
            if c in "{[":
                depth += 1
                if depth > MAX_NESTING:
                    at = line_start + offset
                    return error(
                        "E0108", f"blocks and lists nest more than {MAX_NESTING} deep", source.span(at, at + 1),
                        label=f"level {depth}", help="a spec nests at most three deep, e.g. "
                        "`hardware { gpu my-gpu { hbm 80 GB } }`; close the blocks above",
                    )
            elif c in "}]":
                depth = max(0, depth - 1)
    return None


# ---------------------------------------------------------------------------------------------
# Recovery: one error per broken statement, all statements tried


@dataclass(frozen=True)
class _Chunk:
    start: int  # offset of the chunk's first character
    end: int
    brace_error: Diagnostic | None = None


def _strip_strings_and_comments(line: str) -> str:
    """The line with string contents and comments blanked, for brace counting."""
    out = []
    in_string = False
    escaped = False
    for c in line:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            out.append(" ")
            continue
        if c == "#":
            break
        if c == '"':
            in_string = True
        out.append(c)
    return "".join(out)


def _chunks(source: SourceFile) -> Iterator[_Chunk]:
    """Split the file into top-level statements: a line, or a line through its closing `}`.

    A generator, so that recovery that stops early (MAX_SYNTAX_ERRORS) stops scanning too."""
    starts = source.line_starts
    depth = 0
    chunk_start: int | None = None
    open_offset = 0
    for index, line_start in enumerate(starts):
        line_end = starts[index + 1] if index + 1 < len(starts) else len(source.text)
        code = _strip_strings_and_comments(source.text[line_start:line_end].rstrip("\r\n"))
        if chunk_start is None:
            if not code.strip():
                continue
            chunk_start = line_start
        for offset, c in enumerate(code):
            if c == "{":
                if depth == 0:
                    open_offset = line_start + offset
                depth += 1
            elif c == "}":
                depth -= 1
                if depth < 0:
                    span = source.span(line_start + offset, line_start + offset + 1)
                    yield _Chunk(chunk_start, line_end, error(
                        "E0106", "unmatched `}`", span, label="no `{` is open here",
                        help="delete this `}`, or open a block above it: `train {`",
                    ))
                    depth = 0
                    chunk_start = None
                    break
        if chunk_start is not None and depth == 0:
            yield _Chunk(chunk_start, line_end)
            chunk_start = None
    if chunk_start is not None:
        span = source.span(open_offset, open_offset + 1)
        yield _Chunk(chunk_start, len(source.text), error(
            "E0106", "unclosed `{`", span, label="this block is never closed",
            help="add a `}` on a line of its own after the block's last setting",
        ))


def _parse_with_recovery(source: SourceFile) -> tuple[list[Statement], list[Diagnostic]]:
    statements: list[Statement] = []
    diagnostics: list[Diagnostic] = []
    stopped_at: int | None = None
    for chunk in _chunks(source):
        if len(diagnostics) >= MAX_SYNTAX_ERRORS:
            stopped_at = chunk.start
            break
        if chunk.brace_error is not None:
            diagnostics.append(chunk.brace_error)
            if chunk.brace_error.message.startswith("unmatched"):
                # Whatever precedes the stray `}` on its line is still checked.
                before = source.text[chunk.start : chunk.brace_error.span.start]
                if before.strip():
                    lead = len(before) - len(before.lstrip())
                    diagnostics.extend(_try_parse(source, chunk.start + lead, before.strip(), "statement"))
            else:
                diagnostics.extend(_line_errors(source, chunk, MAX_SYNTAX_ERRORS - len(diagnostics)))
            continue
        text = source.text[chunk.start : chunk.end]
        try:
            tree = _parser().parse(text, start="start")
        except UnexpectedInput as exc:
            multi_line = "\n" in text.rstrip("\r\n")
            line_errors = _line_errors(source, chunk, MAX_SYNTAX_ERRORS - len(diagnostics)) if multi_line else []
            diagnostics.extend(line_errors or [_classify(exc, source, chunk.start, text)])
            continue
        builder = _Builder(source, chunk.start)
        statements.extend(builder.statement(child) for child in tree.children)
    if len(diagnostics) > MAX_SYNTAX_ERRORS:
        stopped_at = diagnostics[MAX_SYNTAX_ERRORS].span.start
    if stopped_at is not None:
        del diagnostics[MAX_SYNTAX_ERRORS:]
        diagnostics.append(error(
            "E0109", f"too many syntax errors: parc stopped after {MAX_SYNTAX_ERRORS}",
            source.span(stopped_at, stopped_at), label="not read from here on",
            help="fix the errors above first; is this file a spec?",
        ))
    return statements, diagnostics


def _line_errors(source: SourceFile, chunk: _Chunk, limit: int = MAX_SYNTAX_ERRORS) -> list[Diagnostic]:
    """Re-read a broken multi-line block one line at a time, to report each bad line."""
    diagnostics: list[Diagnostic] = []
    offset = chunk.start
    for number, line in enumerate(source.text[chunk.start : chunk.end].split("\n")):
        if len(diagnostics) > limit:
            break  # the caller reports that it stopped
        line_offset = offset
        offset += len(line) + 1
        code = _strip_strings_and_comments(line)
        text = line[: len(code)].rstrip()  # the line without its comment
        if number == 0:
            # The block's head, closed artificially so that it parses on its own.
            brace = code.find("{")
            head = text[:brace] if brace != -1 else text
            if head.strip():
                lead = len(head) - len(head.lstrip())
                diagnostics.extend(_try_parse(source, line_offset + lead, head.strip() + " {}", "statement"))
            if brace == -1:
                continue
            text = " " * (brace + 1) + text[brace + 1 :]
            code = " " * (brace + 1) + code[brace + 1 :]
        if "{" in code:
            continue  # a nested block: its own lines are checked as they come
        close = code.find("}")
        if close != -1:
            text = text[:close]
        body = text.strip().strip(",").strip()
        if not body:
            continue
        lead = len(text) - len(text.lstrip())
        for part_offset, part in _split_commas(text.strip(), line_offset + lead):
            diagnostics.extend(_try_parse(source, part_offset, part, "setting", _SETTING_EXAMPLES))
    return diagnostics


def _split_commas(text: str, offset: int):
    """Split `a 1, b 2` at commas outside strings and lists, keeping each part's offset."""
    depth = 0
    in_string = False
    start = 0
    for i, c in enumerate(text):
        if in_string:
            in_string = c != '"' or text[i - 1] == "\\"
        elif c == '"':
            in_string = True
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            part = text[start:i]
            if part.strip():
                yield offset + start + (len(part) - len(part.lstrip())), part.strip()
            start = i + 1
    part = text[start:]
    if part.strip():
        yield offset + start + (len(part) - len(part.lstrip())), part.strip()


def _try_parse(source: SourceFile, offset: int, text: str, start: str, examples: str | None = None) -> list[Diagnostic]:
    try:
        _parser().parse(text, start=start)
    except UnexpectedInput as exc:
        return [_classify(exc, source, offset, text, examples or _EXAMPLES)]
    return []


# ---------------------------------------------------------------------------------------------
# Classifying syntax errors

_EXAMPLES = (
    "examples of valid statements:\n"
    "    tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)\n"
    "    model llama3-405b\n"
    "    train { seq 8192, global-batch 2048, micro-batch 1 }"
)

_SETTING_EXAMPLES = (
    "examples of valid settings inside a block:\n"
    "    micro-batch 2\n"
    "    sequence-parallel on\n"
    "    split [31, 32, 32, 31]"
)

_TERMINAL_WORDS = {
    "NUMBER": "a number",
    "NAME": "a name",
    "STRING": 'a "string"',
    "HOLE": "`?`",
    "TIMES": "`x`",
    "AXIS": "an axis (tp, pp, dp, cp, ep)",
    "ON": "`on`",
    "OVER": "`over`",
    "NODES": "`nodes`",
    "GPUS": "`gpus`",
    "ALLOW": "`allow`",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "COMMA": "`,`",
    "_NL": "the end of the line",
    "$END": "the end of the file",
}


def _expected_words(expected) -> str:
    words = sorted({_TERMINAL_WORDS.get(name, f"`{name.lower()}`") for name in expected})
    if not words:
        return "nothing more"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _describe_token(token: Token) -> str:
    if token.type in ("_NL", "$END"):
        return _TERMINAL_WORDS[token.type]
    text = str(token).strip()
    return f"`{text[:40]}`"


_GLUED = re.compile(r"^(\d[\d_]*(?:\.\d+)?)([A-Za-z][\w\-./]*)$")


def _classify(exc: UnexpectedInput, source: SourceFile, base: int, text: str | None = None,
              examples: str = _EXAMPLES) -> Diagnostic:
    """Turn a Lark error into a diagnostic written for the mistake it most likely is."""
    if isinstance(exc, UnexpectedCharacters):
        pos = base + exc.pos_in_stream
        char = exc.char
        span = source.span(pos, pos + 1)
        if char == "=":
            before = source.text[source.line_starts[source.position(pos)[0] - 1] : pos].strip()
            key = before.split()[-1] if before.split() else "key"
            after = source.text[pos + 1 :].split("\n", 1)[0].strip().split(" ")[0] or "value"
            return error(
                "E0103", "settings are written without `=`", span, label="remove this `=`",
                help=f"write `{key} {after}`: a key, a space, then its value\n{examples}",
            )
        if char == '"':
            line_end = source.text.find("\n", pos)
            line_end = len(source.text) if line_end == -1 else line_end
            return error(
                "E0107", "unterminated string", source.span(pos, line_end),
                label="this string has no closing `\"` on its line",
                help='close the string on the same line: `image "nvcr.io/nvidia/pytorch:24.07-py3"`',
            )
        shown = repr(char)[1:-1] if not char.isprintable() else char
        return error(
            "E0101", f"unexpected character `{shown}`", span, label="parc does not use this character",
            help=f"parc specs use names, numbers, `x`, `?`, `{{ }}`, `[ ]`, `( )` and `#` comments\n{examples}",
        )
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            pos = base + (len(text) if text is not None else 0)
            span = source.span(pos, pos)
        else:
            start = base + (token.start_pos or 0)
            span = source.span(start, start + len(str(token)))
        expected = set(exc.expected) - {"$END"} if token.type != "$END" else set(exc.expected)
        history = list(exc.token_history or [])
        previous = history[-1] if history else None
        # `tp 8 pp 16`: a missing `x` between two axes.
        if token.type == "AXIS" and "TIMES" in exc.expected and previous is not None and previous.type in ("NUMBER", "HOLE"):
            return error(
                "E0104", "missing `x` between axes", span, label="expected `x` before this axis",
                help=f"separate axes with `x`: `... {previous} x {token} ...`\n"
                "    tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)",
            )
        glued = _GLUED.match(str(token)) if token.type == "NAME" else None
        if glued:
            number, word = glued.groups()
            return error(
                "E0105", f"`{token}` runs a number into a word", span,
                label="put a space after the number",
                help=f"write `{number} {word}`, e.g. `on nodes(8 gpus, nvlink)` or `hbm 80 GB`",
            )
        if token.type == "AXIS" and "NAME" in exc.expected:
            return error(
                "E0102", f"`{token}` is an axis name and cannot be used here", span,
                label="an axis name in a value",
                help="axes are written on the layout line (`tp 8 x dp 4`) or as blocks (`tp { sequence-parallel on }`)",
            )
        if token.type in ("_NL", "$END"):
            return error(
                "E0102", "the statement ends too early", span,
                label=f"expected {_expected_words(expected)}", help=examples,
            )
        return error(
            "E0102", f"unexpected {_describe_token(token)}", span,
            label=f"expected {_expected_words(expected)}",
            help=examples,
        )
    if isinstance(exc, UnexpectedEOF):
        pos = base + (len(text) if text is not None else 0)
        return error(
            "E0102", "the statement ends too early", source.span(pos, pos),
            label=f"expected {_expected_words(exc.expected)}", help=examples,
        )
    return error("E0102", "cannot parse this statement", source.span(base, base + 1), help=examples)


# ---------------------------------------------------------------------------------------------
# Lark tree -> Document


class _Builder:
    """Build tree nodes from a Lark tree parsed from `source.text[base:]`."""

    def __init__(self, source: SourceFile, base: int):
        self.source = source
        self.base = base

    def span(self, start: int, end: int) -> Span:
        return self.source.span(self.base + start, self.base + end)

    def token_span(self, token: Token) -> Span:
        return self.span(token.start_pos, token.end_pos)

    def node_span(self, tree: Tree) -> Span:
        return self.span(tree.meta.start_pos, tree.meta.end_pos)

    def atom(self, item) -> Atom:
        if isinstance(item, Tree):  # a list
            tokens = [c for c in item.children if not (isinstance(c, Token) and c.type in ("LSQB", "RSQB", "COMMA"))]
            return Atom("list", "", self.node_span(item), tuple(self.atom(t) for t in tokens))
        kind = {
            "NUMBER": "number", "NAME": "name", "STRING": "string", "HOLE": "hole",
            "TIMES": "times", "AXIS": "axis",
        }[item.type]
        return Atom(kind, str(item), self.token_span(item))

    def statement(self, tree: Tree) -> Statement:
        if tree.data == "layout":
            return self.layout(tree)
        return self.setting(tree)

    def allow(self, tree: Tree) -> tuple[Atom, ...]:
        return tuple(self.atom(t) for t in tree.children if isinstance(t, Token) and t.type == "NAME")

    def layout(self, tree: Tree) -> LayoutLine:
        axes: list[AxisTerm] = []
        over: tuple[Atom, ...] = ()
        over_span = None
        placement = None
        allow: tuple[Atom, ...] = ()
        for child in tree.children:
            if isinstance(child, Token):
                continue
            if child.data == "axis":
                name, degree = child.children
                axes.append(AxisTerm(self.atom(name), self.atom(degree), self.node_span(child)))
            elif child.data == "over":
                over = tuple(self.atom(t) for t in child.children if t.type == "AXIS")
                over_span = self.node_span(child)
            elif child.data == "placement":
                args = []
                for arg in child.children:
                    if not isinstance(arg, Tree):
                        continue
                    value = self.atom(arg.children[0])
                    args.append(NodeArg("gpus" if arg.data == "node_gpus" else "link", value, self.node_span(arg)))
                placement = Placement(tuple(args), self.node_span(child))
            elif child.data == "allow":
                allow = self.allow(child)
        return LayoutLine(tuple(axes), over, over_span, placement, allow, self.node_span(tree))

    def setting(self, tree: Tree) -> Setting:
        children = tree.children
        key = self.atom(children[0])
        values: list[Atom] = []
        body = None
        allow: tuple[Atom, ...] = ()
        for child in children[1:]:
            if isinstance(child, Token):
                values.append(self.atom(child))
            elif child.data == "list":
                values.append(self.atom(child))
            elif child.data == "body":
                body = self.body(child)
            elif child.data == "allow":
                allow = self.allow(child)
        return Setting(key, tuple(values), body, allow, self.node_span(tree))

    def body(self, tree: Tree) -> Body:
        settings = tuple(self.setting(c) for c in tree.children if isinstance(c, Tree))
        braces = [c for c in tree.children if isinstance(c, Token) and c.type in ("LBRACE", "RBRACE")]
        return Body(settings, self.token_span(braces[0]), self.token_span(braces[-1]))


# ---------------------------------------------------------------------------------------------
# Comments are not in the tree; `parc fmt` puts them back by position.


def _scan_comments(source: SourceFile):
    text = source.text
    for index, line_start in enumerate(source.line_starts):
        line_end = source.line_starts[index + 1] - 1 if index + 1 < len(source.line_starts) else len(text)
        line = text[line_start:line_end]
        if "#" not in line:
            continue
        code = _strip_strings_and_comments(line)
        if len(code) < len(line.rstrip("\r")):
            start = line_start + len(code)
            yield Comment(line[len(code):].rstrip("\r\n").rstrip(), source.span(start, line_end))
