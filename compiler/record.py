"""`Record`: the base of parc's typed values (Span, Diagnostic, the Spec IR, the Plan).

A record is a frozen, keyword-only dataclass. Subclasses are written as plain annotated classes
(`name: type = default`, a docstring under a field documents it), and `Record` makes each one a
dataclass when it is defined; a `{}`, `[]` or `set()` default becomes a fresh copy per instance.

Why not pydantic models, which parc used first: building pydantic's validators for some forty
classes, and importing pydantic at all, was most of a cold `parc check` (a few hundred
milliseconds for a command that should feel instant in an editor hook). parc builds these values
only from already-checked input, so run-time validation bought nothing; the types are still
checked, by pydantic, where it matters: `parc schema` derives the JSON Schema from these classes
(`json_schema`), and the tests validate every shipped spec's plan against it.

The few methods the code uses keep pydantic's names: `model_dump`, `model_copy`.
"""

from __future__ import annotations

import copy
import dataclasses
from enum import Enum
from typing import Any, ClassVar

_MUTABLE = (dict, list, set)


class Record:
    """Frozen keyword-only dataclass base; see the module docstring."""

    __pydantic_config__: ClassVar[dict] = {"extra": "forbid", "use_attribute_docstrings": True}
    """Read by pydantic only when `json_schema` builds a schema; nothing at run time."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls.__dict__.get("__annotations__", {}):
            default = cls.__dict__.get(name, dataclasses.MISSING)
            if isinstance(default, _MUTABLE):
                setattr(cls, name, dataclasses.field(default_factory=lambda d=default: copy.copy(d)))
        dataclasses.dataclass(frozen=True, kw_only=True)(cls)
        annotations = {f.name: str(f.type).replace(" ", "") for f in dataclasses.fields(cls)}
        cls._floats = tuple(n for n, a in annotations.items() if a in ("float", "float|None"))
        cls._tuples = tuple(n for n, a in annotations.items() if a.startswith("tuple["))

    def __post_init__(self) -> None:
        """The two conversions parc's values rely on (pydantic made them before): an int given for
        a `float` field is a float (so `plan.json` writes `80.0e9` the same whatever the source
        wrote), and a list given for a `tuple` field is a tuple (hashable, compared by value)."""
        for name in self._floats:
            if type(value := getattr(self, name)) is int:
                object.__setattr__(self, name, float(value))
        for name in self._tuples:
            if type(value := getattr(self, name)) is list:
                object.__setattr__(self, name, tuple(value))

    def model_dump(self, mode: str = "python", exclude: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
        """The fields as a dict, recursively, less the top-level fields in `exclude`;
        `mode="json"` gives JSON types (lists, enum values)."""
        return {f.name: _dump(getattr(self, f.name), mode == "json")
                for f in dataclasses.fields(self) if f.name not in exclude}

    def model_copy(self, update: dict[str, Any] | None = None):
        """A copy with some fields replaced (not re-checked, as pydantic's `model_copy`)."""
        return dataclasses.replace(self, **(update or {}))


def _dump(value: Any, json_mode: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump("json" if json_mode else "python")
    if isinstance(value, Enum):
        return value.value if json_mode else value
    if isinstance(value, dict):
        return {k: _dump(v, json_mode) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        items = [_dump(v, json_mode) for v in value]
        return items if json_mode or isinstance(value, list) else tuple(items)
    return value


def json_schema(cls: type) -> dict:
    """The JSON Schema of a record class, built by pydantic from the dataclasses (imported here
    only: `parc schema` and the tests). Each field is described by the docstring under it, in its
    own class or a base (pydantic reads only the class's own), and a `{}` / `[]` default is shown."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(cls).json_schema()
    records = {c.__name__: c for c in _record_classes()}
    for name, definition in [(cls.__name__, schema), *schema.get("$defs", {}).items()]:
        record = records.get(name)
        properties = definition.get("properties", {})
        if record is None or not properties:
            continue
        docs = _field_docstrings(record)
        for f in dataclasses.fields(record):
            prop = properties.get(f.name)
            if prop is None:
                continue
            if f.name in docs:
                prop.setdefault("description", docs[f.name])
            if f.default_factory is not dataclasses.MISSING and "default" not in prop:
                prop["default"] = _dump(f.default_factory(), json_mode=True)
    return schema


def _record_classes() -> list[type]:
    found, stack = [], [Record]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.append(sub)
            stack.append(sub)
    return found


def _field_docstrings(cls: type) -> dict[str, str]:
    """{field: docstring} for `field: T` followed by a string literal, over the class and its bases."""
    import ast
    import inspect

    found: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if not issubclass(base, Record) or base is Record:
            continue
        body = ast.parse(inspect.cleandoc("\n" + inspect.getsource(base))).body[0].body
        for statement, after in zip(body, body[1:], strict=False):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                found[statement.target.id] = inspect.cleandoc(after.value.value)
    return found
