"""`parc.record`: the typed values are checked by pydantic against their own annotations.

parc builds its Spans, Diagnostics, Spec IR and Plan as plain frozen dataclasses (no validation
at run time: a cold `parc check` must not pay for pydantic). These tests are the type check that
run-time validation used to be: every shipped spec's plan, and every diagnostic of the golden
cases, passes pydantic's *strict* validation against the classes' annotations and comes back equal.
"""

from __future__ import annotations

import dataclasses

import pytest
from parc.pipeline import compile_path
from parc.plan import Plan
from parc.record import Record

from .conftest import ROOT, SPECS

pydantic = pytest.importorskip("pydantic")


def test_every_shipped_plan_has_its_annotated_types():
    assert SPECS, "no shipped spec"
    adapter = pydantic.TypeAdapter(Plan)
    for path in SPECS:
        plan = compile_path(path).plan
        assert plan is not None, path
        again = adapter.validate_python(plan, strict=True, from_attributes=True)
        assert again == plan


def test_diagnostics_have_their_annotated_types():
    from parc.diagnostics import Diagnostic

    cases = sorted((ROOT / "tests" / "golden" / "diagnostics").glob("*.par"))
    adapter = pydantic.TypeAdapter(Diagnostic)
    seen = 0
    for path in cases:
        for d in compile_path(path).diagnostics:
            assert adapter.validate_python(d, strict=True, from_attributes=True) == d
            seen += 1
    assert seen, "no diagnostic was produced by the check cases"


def test_records_are_frozen_keyword_only_and_reject_unknown_fields():
    class Point(Record):
        x: float
        tags: tuple[str, ...] = ()
        spans: dict[str, int] = {}

    p = Point(x=1, tags=["a"])
    assert p.x == 1.0 and type(p.x) is float and p.tags == ("a",)
    assert Point(x=2).spans == {} and Point(x=2).spans is not Point(x=3).spans
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2.0
    with pytest.raises(TypeError):
        Point(1.0)
    with pytest.raises(TypeError):
        Point(x=1.0, y=2)
    assert p.model_dump("json") == {"x": 1.0, "tags": ["a"], "spans": {}}
    assert p.model_dump(exclude={"spans", "tags"}) == {"x": 1.0}
    assert p.model_copy(update={"x": 5.0}) == Point(x=5.0, tags=("a",))
