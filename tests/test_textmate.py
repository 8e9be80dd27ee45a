"""The TextMate grammar (editors/textmate/par.tmLanguage.json) scopes every spec as parc parses it.

Each `.par` file in the repository (and every ```par block of the README and the language
reference) is tokenized by vscode-textmate with Oniguruma, the engine VS Code runs, driven by
`editors/textmate/tokenize.js`. The expected scopes come from parc's own parse of the same
text (`syntax.parse`): every axis name, number, unit, preset, key, value, string, `?`, diagnostic
code after `allow`, keyword and comment must carry its scope, with token boundaries on the
span's ends; and no visible character may be left with only the file's root scope. A spec that
parses cleanly may not contain a single `invalid` token.

Needs Node and the two npm packages pinned in editors/textmate/package-lock.json (`npm ci` runs
when node_modules is missing); skipped, saying so, only where `node` is not installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from parc.source import SourceFile
from parc.syntax import Atom, Body, LayoutLine, Setting, parse
from parc.units import BANDWIDTH, BATCH, BYTES, DURATIONS, FLOPS, POWER

from .conftest import ROOT

EDITOR = ROOT / "editors" / "textmate"
GRAMMAR = EDITOR / "par.tmLanguage.json"
UNITS = set(BYTES) | set(BANDWIDTH) | set(FLOPS) | set(POWER) | set(BATCH) | {u for u in DURATIONS if len(u) > 1}
AXES = {"tp", "pp", "dp", "cp", "ep"}

AXIS = "entity.name.type.axis.par"
NUMBER = "constant.numeric.par"
UNIT = "keyword.other.unit.par"
KEY = "keyword.other.key.par"
PRESET = "support.constant.preset.par"
VALUE = "constant.other.value.par"
STRING = "string.quoted.double.par"
HOLE = "variable.language.hole.par"
TIMES = "keyword.operator.times.par"
CODE = "constant.other.diagnostic-code.par"
COMMENT = "comment.line.number-sign.par"
KEYWORD = "keyword.other.{}.par"
INVALID = "invalid.illegal"


def _corpus(tmp: Path) -> list[Path]:
    files = sorted(p for p in ROOT.glob("specs/**/*.par"))
    files += sorted(p for p in ROOT.glob("tests/**/*.par"))
    for doc in (ROOT / "README.md", ROOT / "docs" / "language.md"):
        if doc.exists():
            for i, block in enumerate(re.findall(r"```par\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)):
                path = tmp / f"{doc.stem}-{i}.par"
                path.write_text(block, encoding="utf-8")
                files.append(path)
    return files


@pytest.fixture(scope="module")
def tokenized(tmp_path_factory) -> dict[Path, list]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("`node` is not installed: the TextMate grammar is tested with vscode-textmate on Node")
    if not (EDITOR / "node_modules" / "vscode-textmate").exists():
        npm = shutil.which("npm")
        assert npm, "node is installed but npm is not: cannot install vscode-textmate"
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EDITOR, capture_output=True, text=True)
        assert done.returncode == 0, f"npm ci failed in editors/textmate:\n{done.stderr}"
    files = _corpus(tmp_path_factory.mktemp("doc-blocks"))
    done = subprocess.run([node, str(EDITOR / "tokenize.js"), *map(str, files)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return {Path(name): lines for name, lines in data.items()}


class Scoped:
    """One file's tokens, addressed by character offsets (parc's spans count code points)."""

    def __init__(self, source: SourceFile, lines: list):
        self.source = source
        self.tokens: list[tuple[int, int, list[str]]] = []
        for number, line_tokens in enumerate(lines, start=1):
            if number > len(source.line_starts):
                break
            text = source.line_text(number)
            base = source.line_starts[number - 1]
            to_char = _utf16_to_chars(text)
            for start, end, scopes in line_tokens:
                a, b = to_char[min(start, len(to_char) - 1)], to_char[min(end, len(to_char) - 1)]
                if b > a:
                    self.tokens.append((base + a, base + b, scopes))

    def expect(self, start: int, end: int, scope: str, whole: bool = True) -> str | None:
        """None if every token in [start, end) has `scope` (and, if whole, tokens start and end there)."""
        inside = [t for t in self.tokens if t[0] < end and t[1] > start]
        where = f"{self.source.path}:{self.source.position(start)[0]}:{self.source.position(start)[1]}"
        text = self.source.text[start:end]
        if not inside:
            return f"{where}: `{text}` has no token"
        for a, b, scopes in inside:
            if scope not in scopes:
                return f"{where}: `{text}` expected {scope}, got {scopes[1:]} on `{self.source.text[a:b]}`"
        if whole and (inside[0][0] != start or inside[-1][1] != end):
            got = self.source.text[inside[0][0]:inside[-1][1]]
            return f"{where}: `{text}` is split differently: token `{got}`"
        return None


def _utf16_to_chars(text: str) -> list[int]:
    """Index: UTF-16 offset -> character offset, one entry past the end."""
    table = []
    for i, ch in enumerate(text):
        table.extend([i] * (2 if ord(ch) > 0xFFFF else 1))
    table.append(len(text))
    return table


def _expectations(document) -> list[tuple[int, int, str, bool]]:
    """(start, end, scope, whole) for every token parc's parse identifies."""
    out: list[tuple[int, int, str, bool]] = []
    text = document.source.text

    def atoms(values: tuple[Atom, ...], key: str | None) -> None:
        previous = None
        for index, atom in enumerate(values):
            s = atom.span
            if atom.kind == "list":
                out.append((s.start, s.start + 1, "punctuation.section.brackets.begin.par", True))
                out.append((s.end - 1, s.end, "punctuation.section.brackets.end.par", True))
                atoms(atom.items, None)
            elif atom.kind == "number":
                out.append((s.start, s.end, NUMBER, True))
            elif atom.kind == "string":
                out.append((s.start, s.end, STRING, False))
            elif atom.kind == "hole":
                out.append((s.start, s.end, HOLE, True))
            elif atom.kind == "times":
                out.append((s.start, s.end, TIMES, True))
            elif atom.kind == "axis" or atom.text in AXES:
                out.append((s.start, s.end, AXIS, True))
            elif previous is not None and previous.kind == "number" and atom.text in UNITS:
                out.append((s.start, s.end, UNIT, True))
            elif index == 0 and key in ("model", "gpu"):
                out.append((s.start, s.end, PRESET, True))
            else:
                out.append((s.start, s.end, VALUE, True))
            previous = atom

    def allow(codes: tuple[Atom, ...], span) -> None:
        for code in codes:
            out.append((code.span.start, code.span.end, CODE, True))
        if codes:
            at = text.rfind("allow", span.start, codes[0].span.start)
            out.append((at, at + 5, KEYWORD.format("allow"), True))

    def setting(s: Setting) -> None:
        key = s.key
        out.append((key.span.start, key.span.end, AXIS if key.kind == "axis" else KEY, True))
        atoms(s.values, key.text)
        if s.body is not None:
            body(s.body)
        allow(s.allow, s.span)

    def body(b: Body) -> None:
        out.append((b.open_span.start, b.open_span.end, "punctuation.section.block.begin.par", True))
        out.append((b.close_span.start, b.close_span.end, "punctuation.section.block.end.par", True))
        for s in b.settings:
            setting(s)

    for statement in document.statements:
        if isinstance(statement, LayoutLine):
            for term in statement.axes:
                out.append((term.name.span.start, term.name.span.end, AXIS, True))
                atoms((term.degree,), None)
            for atom in statement.over:
                out.append((atom.span.start, atom.span.end, AXIS, True))
            if statement.placement is not None:
                for arg in statement.placement.args:
                    kind = NUMBER if arg.kind == "gpus" else VALUE
                    out.append((arg.value.span.start, arg.value.span.end, kind, True))
            allow(statement.allow, statement.span)
            # Keywords and `x` of the line: any such word outside a comment.
            line = text[statement.span.start:statement.span.end]
            for match in re.finditer(r"(?<![\w\-./])(x|on|over|nodes|gpus)(?![\w\-./])", line):
                word = match[1]
                scope = TIMES if word == "x" else KEYWORD.format(word)
                out.append((statement.span.start + match.start(1), statement.span.start + match.end(1), scope, True))
        else:
            setting(statement)
    for comment in document.comments:
        out.append((comment.span.start, comment.span.end, COMMENT, False))
    return out


def test_grammar_is_valid_json_with_the_par_scope():
    grammar = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    assert grammar["scopeName"] == "source.par"
    assert grammar["fileTypes"] == ["par"]
    lock = json.loads((EDITOR / "package-lock.json").read_text(encoding="utf-8"))
    pinned = lock["packages"][""]["devDependencies"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in pinned.values()), pinned


def test_every_spec_is_scoped_as_parc_parses_it(tokenized):
    checked: Counter[str] = Counter()
    failures: list[str] = []
    clean_files = 0
    for path, lines in tokenized.items():
        source = SourceFile(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name),
                            path.read_text(encoding="utf-8").removeprefix("\ufeff"))
        scoped = Scoped(source, lines)
        document, diagnostics = parse(source)
        for start, end, scope, whole in _expectations(document):
            problem = scoped.expect(start, end, scope, whole)
            if problem:
                failures.append(problem)
            checked[scope] += 1
        for a, b, scopes in scoped.tokens:
            visible = source.text[a:b].strip()
            if visible and len(scopes) < 2:
                failures.append(f"{source.path}: `{visible}` at offset {a} is unscoped")
            if not diagnostics and any(s.startswith(INVALID) for s in scopes):
                failures.append(f"{source.path}: `{source.text[a:b]}` at offset {a} is marked invalid in a clean spec")
        clean_files += not diagnostics
    assert not failures, f"{len(failures)} scoping problems:\n" + "\n".join(failures[:40])
    assert clean_files >= 8
    # The corpus exercises every kind of token, so a grammar that drops one cannot pass.
    for scope in (AXIS, NUMBER, UNIT, KEY, PRESET, VALUE, STRING, HOLE, TIMES, CODE, COMMENT,
                  KEYWORD.format("on"), KEYWORD.format("over"), KEYWORD.format("nodes"),
                  KEYWORD.format("gpus"), KEYWORD.format("allow")):
        assert checked[scope] > 0, f"no {scope} token anywhere in the corpus"


def test_bad_characters_are_marked_invalid(tokenized):
    path = ROOT / "tests" / "golden" / "diagnostics" / "e0101_bad_character.par"
    lines = tokenized[path]
    text = path.read_text(encoding="utf-8").split("\n")
    column = text[0].index(";")
    token = next(t for t in lines[0] if t[0] <= column < t[1])
    assert any(s.startswith(INVALID) for s in token[2])


def test_units_need_a_number_before_them(tokenized):
    """`GB` is a unit only after a number; `gpu` and `gpus` keys are keys, not units or keywords."""
    found = 0
    for path, lines in tokenized.items():
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff").split("\n")
        for line, tokens in zip(text, lines, strict=False):
            for start, _end, scopes in tokens:
                if UNIT in scopes:
                    found += 1
                    before = line[:start].rstrip()
                    assert re.search(r"\d$", before), (str(path), line)
    assert found
