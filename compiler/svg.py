"""A tiny writer for SVG and HTML: elements as data, serialised once, every string escaped.

Pictures are built as trees of `Element`s and turned into text by `render`, so no caller ever
pastes a spec's strings (job names, file paths, model names) into markup by hand. Numbers are
written with at most two decimals and attributes in insertion order, so the same input gives
byte-identical output on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

VOID = frozenset({"meta", "br", "hr", "img", "input", "link"})
"""HTML elements that have no closing tag."""
SVG_LEAVES = frozenset({"rect", "line", "circle", "path", "polyline", "polygon", "use", "stop"})
"""SVG elements written self-closed when empty (valid inside HTML, as foreign content)."""


@dataclass
class Element:
    tag: str
    attrs: dict[str, object] = field(default_factory=dict)
    children: list[Element | str] = field(default_factory=list)

    def add(self, *children: Element | str | None) -> Element:
        self.children.extend(c for c in children if c is not None)
        return self


def el(tag: str, attrs: dict[str, object] | None = None, *children: Element | str | None, **kw) -> Element:
    """`el("rect", {"x": 1}, title="...")`: keyword names use _ for - (`stroke_width`)."""
    merged = dict(attrs or {})
    for key, value in kw.items():
        merged[key.rstrip("_").replace("_", "-")] = value
    return Element(tag, merged, [c for c in children if c is not None])


def number(value: float) -> str:
    """At most two decimals, no trailing zeros, no `-0`: stable text for coordinates."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a coordinate")
    if isinstance(value, int):
        return str(value)
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _attr(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number(value)
    return escape(str(value), quote=True)


def render(node: Element | str, raw_text: bool = False) -> str:
    """Markup for a tree. Text children are escaped, except inside <style> and <script>, whose
    contents parc writes itself (never from a spec) and which must not contain `</`."""
    if isinstance(node, str):
        if raw_text:
            if "</" in node:
                raise ValueError("raw text may not contain `</`")
            return node
        return escape(node, quote=False)
    attrs = "".join(f' {k}="{_attr(v)}"' for k, v in node.attrs.items() if v is not None)
    if node.tag in VOID:
        return f"<{node.tag}{attrs}>"
    raw = node.tag in ("style", "script")
    inner = "".join(render(c, raw) for c in node.children)
    if not inner and node.tag in SVG_LEAVES:
        return f"<{node.tag}{attrs}/>"
    return f"<{node.tag}{attrs}>{inner}</{node.tag}>"
