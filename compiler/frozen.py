"""Frozen bundles of numbers that key the models' caches (`Shape`, `Knobs`, `Constants`, the time
model's `Hardware`, `Work`, ...) hash their fields once, when they are built, not on every lookup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter

_NAMES: dict[type, Callable[[object], tuple]] = {}
"""Per class, what fetches the fields its hash covers as one tuple, built once from their names:
`dataclasses.fields` builds its list anew on every call, which cost a search (thousands of
`Load`s and `Knobs`) a tenth of a second."""


def hash_once(obj) -> None:
    """Store the hash of `obj`'s fields in its `_hash` field; its `__hash__` returns that."""
    cls = type(obj)
    fetch = _NAMES.get(cls)
    if fetch is None:
        names = tuple(f.name for f in fields(obj) if f.name != "_hash")
        # one C call for every field (a generator of getattr calls was most of the hashing);
        # `attrgetter` of one name returns the value, not a 1-tuple: wrapped so the hash is the same
        many = attrgetter(*names)
        fetch = _NAMES[cls] = many if len(names) > 1 else (lambda o: (many(o),))
    object.__setattr__(obj, "_hash", hash(fetch(obj)))


def lazy_hash(obj) -> int:
    """`hash_once` on the first `__hash__`, not when built: bundles built by the thousand that
    never key a cache (the time model's `Work` of each layer shape a search bounds) skip the
    hashing, and one that keys a cache hashes once, to the same value."""
    value = obj._hash
    if value == 0:
        hash_once(obj)
        value = obj._hash
    return value


_INIT: dict[type, tuple[str, ...]] = {}
"""Per class, the names of its `__init__` fields (what `dataclasses.replace` copies)."""


def replaced(obj, **changes):
    """`dataclasses.replace(obj, **changes)`, without its per-call `fields` walk (a search
    slows thousands of `Work`s to eager PyTorch's speed: the walk was a fifth of a deepseek
    search's bounds). The same object: the same fields to `__init__`, its checks included."""
    cls = type(obj)
    names = _INIT.get(cls)
    if names is None:
        names = _INIT[cls] = tuple(f.name for f in fields(obj) if f.init)
    for name in names:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return cls(**changes)
