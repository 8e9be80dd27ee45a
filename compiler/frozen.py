"""Frozen bundles of numbers that key the models' caches (`Shape`, `Knobs`, `Constants`, the time
model's `Hardware`, `Work`, ...) hash their fields once, when they are built, not on every lookup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
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

_COPIERS: dict[type, tuple | None] = {}
"""Per class, how `replaced` copies it slot by slot (`_slot_copier`), or None where it cannot."""


def _slot_copier(cls) -> tuple | None:
    """(the `__init__` fields' names, one C call fetching their values, each field's slot
    setter by name and in that order, the other fields with their defaults) of a slotted
    dataclass whose generated `__init__` does nothing but store its fields and the other fields'
    plain defaults (no `__post_init__`, no default factory): a copy that stores the same values
    in the same slots is the object `__init__` builds. None for any other class. The slot's own
    setter (a member descriptor) stores past a frozen class's `__setattr__`, as `__init__` does."""
    if "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        return None
    names, others = [], []
    for f in fields(cls):
        if f.init:
            names.append(f.name)
        elif f.default is not MISSING:
            others.append((f.name, f.default))
        else:
            return None
    setters = {name: cls.__dict__[name].__set__ for name in names + [name for name, _ in others]}
    fetch = attrgetter(*names) if len(names) > 1 else (lambda o: (getattr(o, names[0]),))
    return (tuple(names), fetch, setters, tuple(setters[name] for name in names),
            tuple((setters[name], value) for name, value in others))


def replaced(obj, **changes):
    """`dataclasses.replace(obj, **changes)`, without its per-call `fields` walk (a search
    slows thousands of `Work`s to eager PyTorch's speed: the walk was a fifth of a deepseek
    search's bounds). The same object: the same fields to `__init__`, its checks included. A
    slotted dataclass with nothing in `__init__` but the stores (`timing.Work`) is copied slot by
    slot (`_slot_copier`): its frozen `__init__` stores 26 fields one `object.__setattr__` call
    each, most of the copy's time in an MoE search's layer works."""
    cls = type(obj)
    copier = _COPIERS.get(cls, MISSING)
    if copier is MISSING:
        copier = _COPIERS[cls] = _slot_copier(cls)
    if copier is not None:
        names, fetch, by_name, ordered, others = copier
        new = object.__new__(cls)
        for store, value in zip(ordered, fetch(obj), strict=True):
            store(new, value)
        for name, value in changes.items():
            if name not in names:  # as `__init__` refuses it (`dataclasses.replace` too)
                raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument '{name}'")
            by_name[name](new, value)
        for store, value in others:
            store(new, value)
        return new
    names = _INIT.get(cls)
    if names is None:
        names = _INIT[cls] = tuple(f.name for f in fields(obj) if f.init)
    for name in names:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return cls(**changes)
