"""Did-you-mean: the closest known names to a misspelled one (sqlglot's approach, via difflib)."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


def closest(word: str, known: Iterable[str], limit: int = 3) -> list[str]:
    known = sorted(set(known))
    lowered = word.lower().replace("_", "-")
    if lowered in known and lowered != word:
        return [lowered]
    return get_close_matches(lowered, known, n=limit, cutoff=0.6)


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`did you mean `x`?`, or the list of valid names when nothing is close."""
    known = sorted(set(known))
    matches = closest(word, known)
    if matches:
        return "did you mean " + " or ".join(f"`{m}`" for m in matches) + "?"
    return "expected one of: " + ", ".join(f"`{k}`" for k in known)


def english_list(items: Iterable[str], conjunction: str = "or") -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]
