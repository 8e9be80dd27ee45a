"""Mutations of a spec at three levels, each a pure function of (input, random source).

byte   flips, inserts and deletes raw bytes (invalid UTF-8, NUL, CR, half a multi-byte character),
       and splices two seeds: this is what reaches the reader and the lexer.
token  edits the spec as a list of tokens (a word, a number, a string, a brace, a run of spaces)
       with a dictionary of the language's own words, so most results still lex and reach the
       parser's error recovery and the typed stage.
tree   parses the spec and edits whole statements and values through their source spans: drop,
       duplicate, reorder statements; swap values between settings; replace numbers with
       extremes; put `?` holes where values were; move a setting into another block. Results
       usually parse, so they reach resolution, the checks and code generation.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import lru_cache

LEVELS = ("byte", "token", "tree")

TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?|[A-Za-z_][\w\-./]*|[ \t]+|\r?\n|.',
    re.S,
)

EXTREME_NUMBERS = (
    "0", "1", "2", "3", "7", "1_048_576", "1_048_577", "999999999", "1000000001", "1e30", "1e308", "1e309",
    "0.5", "1.0", "2e0", "4096", "65535", "65536", "1023", "99999999999999999999999999999999", "1_0",
    "0_0_0", "00", "1e-30", "123456789012345678901234567890e10",
)

HOSTILE_STRINGS = (
    '""', '"$(id)"', '"`id`"', '"a; rm -rf /"', '"a\\nb"', '"\\"quoted\\""', '"key: value # c"',
    '"{}"', '"*alias"', '"!!python/object:os.system"', '"\u2028"', '"\\\\"', '"--"', '"-rf"',
    '"%s%n"', '"${HOME}"', '"\'"', '"a\\tb"', '"\u202e"', '"' + "a" * 300 + '"', '"tiny\\n"', '"a\\r"',
    '"x y"', '"-o=/etc"', '"../../etc/passwd"', '"/abs/path"', '"a\x85b"', '"\u00a0"',
)

PUNCTUATION = ("{", "}", "[", "]", "(", ")", ",", "?", "x", "=", ":", ";", "#", '"', "\\", "\n", "\r\n",
               "\t", " ", "over", "on", "nodes", "gpus", "allow", "\u00a0", "\u2028", "\ufeff", "\x00", "\x1b")


@lru_cache(maxsize=1)
def dictionary() -> tuple[str, ...]:
    """The language's own words, read from its key tables and catalogues (never a copy)."""
    from parc.catalog import gpus, models
    from parc.codes import CODES
    from parc.spec import AXES, BLOCK_KEYS, TOP_KEYS
    from parc.units import KINDS

    words: set[str] = set(AXES) | set(TOP_KEYS) | set(BLOCK_KEYS)
    for keys in BLOCK_KEYS.values():
        for key in keys:
            words.add(key.name)
            words.update(key.choices)
            words.update(alias for alias, _ in key.aliases)
    words.update(models.MODELS)
    words.update(models.ALIASES)
    words.update(gpus.GPUS)
    words.update(gpus.ALIASES)
    for table in KINDS.values():
        words.update(table)
    words.update(CODES)
    words.update(("tokens", "sequences", "full", "selective", "hsdp", "from", "every", "all", "none",
                  "fixed", "8gpus", "80GB", "micro_batch", "W9999", "E0201"))
    return tuple(sorted(words)) + EXTREME_NUMBERS + HOSTILE_STRINGS + PUNCTUATION


# ---------------------------------------------------------------------------------------------
# byte level

_INTERESTING_BYTES = (b"\x00", b"\xff", b"\x80", b"\xc3", b"\xe2\x80", b"\xf0\x9f\x98", b"\r", b"\n", b"\t",
                      b"\xef\xbb\xbf", b"\x1b[31m", b"\x7f", b"{", b"}", b'"', b"#")


def _byte_flip(data: bytes, rng: random.Random, seeds) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]


def _byte_set(data: bytes, rng, seeds) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]


def _byte_insert(data: bytes, rng, seeds) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_INTERESTING_BYTES) + data[i:]


def _byte_delete(data: bytes, rng, seeds) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randrange(1, 64) :]


def _byte_duplicate(data: bytes, rng, seeds) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randrange(1, 256))
    k = rng.randrange(len(data) + 1)
    return data[:k] + data[i:j] * rng.choice((1, 2, 8)) + data[k:]


def _byte_splice(data: bytes, rng, seeds) -> bytes:
    other = rng.choice(seeds) if seeds else data
    i = rng.randrange(len(data) + 1)
    j = rng.randrange(len(other) + 1)
    return data[:i] + other[j:]


BYTE_OPS: tuple[Callable, ...] = (_byte_flip, _byte_set, _byte_insert, _byte_delete, _byte_duplicate, _byte_splice)


# ---------------------------------------------------------------------------------------------
# token level (on text)


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _words(toks: list[str]) -> list[int]:
    """Indices of tokens that are not layout (spaces, newlines)."""
    return [i for i, t in enumerate(toks) if not t.isspace()] or list(range(len(toks)))


def _tok_delete(toks, rng):
    if toks:
        del toks[rng.choice(_words(toks))]


def _tok_duplicate(toks, rng):
    if toks:
        i = rng.choice(_words(toks))
        toks.insert(i, toks[i] + " ")


def _tok_swap(toks, rng):
    if len(toks) > 1:
        words = _words(toks)
        a, b = rng.choice(words), rng.choice(words)
        toks[a], toks[b] = toks[b], toks[a]


def _tok_replace(toks, rng):
    word = rng.choice(dictionary())
    if toks:
        toks[rng.choice(_words(toks))] = word
    else:
        toks.append(word)


def _tok_insert(toks, rng):
    word = rng.choice(dictionary())
    toks.insert(rng.randrange(len(toks) + 1), rng.choice(("", " ")) + word + rng.choice(("", " ")))


def _tok_number(toks, rng):
    numbers = [i for i, t in enumerate(toks) if t[:1].isdigit()]
    if numbers:
        toks[rng.choice(numbers)] = rng.choice(EXTREME_NUMBERS)


TOKEN_OPS: tuple[Callable, ...] = (_tok_delete, _tok_duplicate, _tok_swap, _tok_replace, _tok_insert, _tok_number)


# ---------------------------------------------------------------------------------------------
# tree level (on text, through the spans of a parsed document)


def _document(text: str):
    from parc.source import SourceFile
    from parc.syntax import parse

    document, _ = parse(SourceFile("fuzz.par", text))
    return document


def _settings(statements):
    """Every setting at any depth, with the statement list it sits in."""
    from parc.syntax import Setting

    for statement in statements:
        if isinstance(statement, Setting):
            yield statement
            if statement.body is not None:
                yield from _settings(statement.body.settings)


def _values(document):
    """Every value atom (layout degrees, setting values, list items) as a span."""
    from parc.syntax import LayoutLine

    out = []
    for statement in document.statements:
        if isinstance(statement, LayoutLine):
            out.extend(term.degree.span for term in statement.axes)
            if statement.placement is not None:
                out.extend(arg.value.span for arg in statement.placement.args)
    for setting in _settings(document.statements):
        for atom in setting.values:
            out.append(atom.span)
            out.extend(item.span for item in atom.items)
    return out


def _replace(text: str, span, new: str) -> str:
    return text[: span.start] + new + text[span.end :]


def _tree_drop(text, document, rng):
    statements = list(document.statements) + list(_settings(document.statements))
    if statements:
        return _replace(text, rng.choice(statements).span, "")
    return None


def _tree_duplicate(text, document, rng):
    if document.statements:
        chosen = rng.choice(document.statements)
        where = rng.choice(document.statements).span.start
        return text[:where] + text[chosen.span.start : chosen.span.end] + "\n" + text[where:]
    return None


def _tree_reorder(text, document, rng):
    statements = document.statements
    if len(statements) < 2:
        return None
    a, b = sorted(rng.sample(range(len(statements)), 2))
    first, second = statements[a].span, statements[b].span
    return (text[: first.start] + text[second.start : second.end] + text[first.end : second.start]
            + text[first.start : first.end] + text[second.end :])


def _tree_swap_values(text, document, rng):
    values = _values(document)
    if len(values) < 2:
        return None
    a, b = rng.sample(values, 2)
    if a.start > b.start:
        a, b = b, a
    if a.end > b.start:  # one contains the other (a list and its item)
        return None
    return text[: a.start] + text[b.start : b.end] + text[a.end : b.start] + text[a.start : a.end] + text[b.end :]


def _tree_extreme(text, document, rng):
    values = _values(document)
    if not values:
        return None
    return _replace(text, rng.choice(values), rng.choice(EXTREME_NUMBERS))


def _tree_hole(text, document, rng):
    values = _values(document)
    if not values:
        return None
    return _replace(text, rng.choice(values), "?")


def _tree_move(text, document, rng):
    """Cut a setting out of its block and paste it into another block (or the top level)."""
    settings = [s for s in _settings(document.statements)]
    blocks = [s for s in settings if s.body is not None]
    inner = [s for b in blocks for s in b.body.settings]
    if not inner:
        return None
    moved = rng.choice(inner)
    piece = text[moved.span.start : moved.span.end]
    removed = _replace(text, moved.span, "")
    shift = len(piece)
    if blocks and rng.random() < 0.7:
        target = rng.choice(blocks).body.open_span.end
    else:
        target = len(removed)
    if target > moved.span.start:
        target -= shift
    target = max(0, min(target, len(removed)))
    return removed[:target] + "\n" + piece + "\n" + removed[target:]


def _tree_hostile(text, document, rng):
    """A launcher string (image, env value, job name) replaced with a hostile one."""
    values = _values(document)
    strings = [s for s in values if text[s.start : s.start + 1] == '"'] if rng.random() < 0.5 else values
    if strings:
        return _replace(text, rng.choice(strings), rng.choice(HOSTILE_STRINGS))
    return text.rstrip("\n") + f"\nlaunch {{ env X {rng.choice(HOSTILE_STRINGS)} }}\n"


TREE_OPS: tuple[Callable, ...] = (_tree_drop, _tree_duplicate, _tree_reorder, _tree_swap_values, _tree_extreme,
                                  _tree_hole, _tree_move, _tree_hostile)


# ---------------------------------------------------------------------------------------------


def mutate(data: bytes, rng: random.Random, seeds: list[bytes], level: str | None = None) -> tuple[bytes, str]:
    """One mutation; returns the new input and the operation's name (for the run's figures)."""
    level = level or rng.choice(LEVELS)
    if level == "byte":
        op = rng.choice(BYTE_OPS)
        return op(data, rng, seeds), op.__name__
    text = data.decode("utf-8", errors="replace")
    if level == "tree":
        document = _document(text)
        for _ in range(4):
            op = rng.choice(TREE_OPS)
            result = op(text, document, rng)
            if result is not None:
                return result.encode("utf-8"), op.__name__
    op = rng.choice(TOKEN_OPS)
    toks = tokens(text)
    op(toks, rng)
    return "".join(toks).encode("utf-8"), op.__name__
