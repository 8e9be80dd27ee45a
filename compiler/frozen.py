"""Frozen bundles of numbers that key the models' caches (`Shape`, `Knobs`, `Constants`, the time
model's `Hardware`, `Work`, ...) hash their fields once, when they are built, not on every lookup."""

from __future__ import annotations

from dataclasses import fields

_NAMES: dict[type, tuple[str, ...]] = {}
"""Per class, the names of the fields its hash covers: `dataclasses.fields` builds its list anew
on every call, which cost a search (thousands of `Load`s and `Knobs`) a tenth of a second."""


def hash_once(obj) -> None:
    """Store the hash of `obj`'s fields in its `_hash` field; its `__hash__` returns that."""
    cls = type(obj)
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(obj) if f.name != "_hash")
    object.__setattr__(obj, "_hash", hash(tuple(getattr(obj, name) for name in names)))
