"""Frozen bundles of numbers that key the models' caches (`Shape`, `Knobs`, `Constants`, the time
model's `Hardware`, `Work`, ...) hash their fields once, when they are built, not on every lookup."""

from __future__ import annotations

from dataclasses import fields


def hash_once(obj) -> None:
    """Store the hash of `obj`'s fields in its `_hash` field; its `__hash__` returns that."""
    object.__setattr__(obj, "_hash", hash(tuple(getattr(obj, f.name) for f in fields(obj) if f.name != "_hash")))
