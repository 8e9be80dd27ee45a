"""Block YAML from plain Python data, without a YAML library at run time.

parc's runtime dependencies stop at lark, jinja2, pydantic and click, and a manifest must never
be assembled by pasting strings into a template: a job name or an environment value could then
change the document's structure. So manifests are built as dicts and lists and written here.

Every string value is written double-quoted with JSON's escapes, which YAML 1.1 and 1.2 read
the same way: no value can turn into a number, a boolean, a null, a comment or a new key.
Characters YAML forbids or folds inside a quoted scalar (controls, DEL, C1, NEL, the Unicode
line and paragraph separators, the BOM, U+FFFE/U+FFFF) are escaped as \\uXXXX. Keys stay bare
only when they are plain identifiers that no YAML version reads as anything but a string.
"""

from __future__ import annotations

import re

_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
"""Bare words YAML 1.1 reads as booleans or null (compared lower-case)."""
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
_INDENT = "  "


def quote(text: str) -> str:
    """`text` as a double-quoted scalar, valid as both a YAML and a JSON string."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif (code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF)
              or 0xD800 <= code <= 0xDFFF):
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"YAML keys here are strings, not {type(name).__name__}")
    if _BARE_KEY.fullmatch(name) and name.lower() not in _RESERVED:
        return name
    return quote(name)


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return quote(value)
    raise TypeError(f"cannot write a {type(value).__name__} as YAML")


def _is_block(value: object) -> bool:
    return isinstance(value, (dict, list, tuple)) and len(value) > 0


def _empty(value: object) -> str:
    return "{}" if isinstance(value, dict) else "[]"


def _lines(value: object, indent: str) -> list[str]:
    """The lines of a non-empty mapping or sequence, each starting with `indent`."""
    lines: list[str] = []
    if isinstance(value, dict):
        for name, item in value.items():
            if _is_block(item):
                lines.append(f"{indent}{_key(name)}:")
                lines.extend(_lines(item, indent + _INDENT))
            elif isinstance(item, (dict, list, tuple)):
                lines.append(f"{indent}{_key(name)}: {_empty(item)}")
            else:
                lines.append(f"{indent}{_key(name)}: {_scalar(item)}")
        return lines
    for item in value:
        if _is_block(item):
            inner = _lines(item, indent + _INDENT)
            # the first line of the item goes on the dash line: "- key: value"
            lines.append(f"{indent}- {inner[0][len(indent) + len(_INDENT):]}")
            lines.extend(inner[1:])
        elif isinstance(item, (dict, list, tuple)):
            lines.append(f"{indent}- {_empty(item)}")
        else:
            lines.append(f"{indent}- {_scalar(item)}")
    return lines


def dump(document: dict) -> str:
    """One YAML document (a mapping) as block-style text ending in a newline."""
    if not isinstance(document, dict) or not document:
        raise TypeError("a YAML document here is a non-empty mapping")
    return "\n".join(_lines(document, "")) + "\n"
