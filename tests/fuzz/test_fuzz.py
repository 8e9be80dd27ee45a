"""The bounded fuzz run of the test suite (the long run is `python -m tests.fuzz`).

Hypothesis draws a seed and a short stack of mutations at one level, so a failure shrinks to
the fewest mutations that still break an invariant (tests/fuzz/oracle.py lists them). Every
input a fuzzer ever broke is kept in tests/fuzz/regressions/ and replayed here, in-process and
as real subprocesses. The oracle itself is tested on planted bugs, so a fuzzer that silently
checks nothing fails too.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import corpus, mutate, oracle

SEEDS = corpus.seeds()
REGRESSIONS = corpus.regression_paths()
FAST = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
"""Derandomized: the suite's run is the same every time (new inputs come from the long run)."""


def _assert_clean(outcome: oracle.Outcome, data: bytes) -> None:
    assert not outcome.failures, "\n\n".join(f"{f.signature()}\n{f.detail}" for f in outcome.failures) + \
        f"\n\ninput: {data[:2000]!r}"


def _mutated(which: int, stack: list[int], level: str) -> bytes:
    data = SEEDS[which % len(SEEDS)]
    for seed in stack:
        data, _ = mutate.mutate(data, random.Random(seed), SEEDS, level)
    return data


MUTATIONS = st.tuples(st.integers(0, 10_000), st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4))


@pytest.mark.parametrize("level", mutate.LEVELS)
@FAST
@given(MUTATIONS)
def test_mutated_inputs_keep_every_invariant(tmp_path_factory, level, mutation):
    which, stack = mutation
    data = _mutated(which, stack, level)
    _assert_clean(oracle.check_input(data, tmp_path_factory.mktemp("fuzz")), data)


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_inputs(tmp_path, path):
    data = path.read_bytes()
    _assert_clean(oracle.check_input(data, tmp_path), data)


def test_subprocess_sample(tmp_path):
    """What a user sees: real processes, parc's guard on; status 70 or a traceback is a failure."""
    rng = random.Random(8)
    sample = [p.read_bytes() for p in REGRESSIONS[:1]]
    for _ in range(2):
        data = rng.choice(SEEDS)
        for _ in range(2):
            data, _ = mutate.mutate(data, rng, SEEDS)
        sample.append(data)
    for index, data in enumerate(sample):
        work = tmp_path / str(index)
        work.mkdir()
        failures = oracle.check_subprocess(data, work)
        assert not failures, "\n".join(f"{f.signature()}\n{f.detail}" for f in failures)


def test_corpus_holds_every_spec_and_golden_case():
    names = {p.name for p in corpus.seed_paths()}
    assert {p.name for p in (corpus.ROOT / "specs").glob("*.par")} <= names
    assert {p.name for p in (corpus.ROOT / "tests/golden/diagnostics").glob("*.par")} <= names


def test_every_mutation_level_changes_inputs():
    rng = random.Random(0)
    for level in mutate.LEVELS:
        changed = sum(mutate.mutate(seed, rng, SEEDS, level)[0] != seed for seed in SEEDS)
        assert changed >= len(SEEDS) * 0.8, level


# ---------------------------------------------------------------------------------------------
# The oracle catches planted bugs


def test_oracle_reports_an_exception(tmp_path, monkeypatch):
    import parc.spec

    def broken(document):
        raise KeyError("planted")

    monkeypatch.setattr(parc.spec, "build", broken)
    outcome = oracle.check_input(SEEDS[0], tmp_path)
    kinds = {f.kind for f in outcome.failures}
    assert "exception" in kinds
    assert any("planted" in f.detail for f in outcome.failures)


def test_oracle_reports_a_span_outside_the_file():
    span = {"start": 5, "end": 50, "line": 1, "col": 6, "end_line": 1, "end_col": 51, "file": "fuzz.par"}
    report = {"files": [{"diagnostics": [{"code": "E0101", "severity": "error", "message": "m",
                                          "span": span, "labels": []}]}]}
    failures = oracle._check_spans(report, "0123456789")
    assert [f.kind for f in failures] == ["span"]
    report["files"][0]["diagnostics"][0]["span"] = None
    assert [f.kind for f in oracle._check_spans(report, "0123456789")] == ["span"]


def test_oracle_reports_a_hang(tmp_path, monkeypatch):
    import time

    import parc.syntax

    real = parc.syntax.parse

    def slow(source):
        time.sleep(5)
        return real(source)

    monkeypatch.setattr(parc.syntax, "parse", slow)
    status, _, _, failure = oracle.invoke(["check", str(corpus.seed_paths()[0])], time_limit=0.5)
    assert failure is not None and failure.kind == "timeout"


def test_oracle_reports_status_70_from_a_subprocess(tmp_path, monkeypatch):
    """A subprocess whose parc crashes: sitecustomize plants the bug before parc starts."""
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(
        "import parc.spec\n"
        "def _broken(document):\n    raise KeyError('planted')\n"
        "parc.spec.build = _broken\n")
    import os

    monkeypatch.setenv("PYTHONPATH", f"{plant}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    work = tmp_path / "work"
    work.mkdir()
    failures = oracle.check_subprocess(SEEDS[0], work)
    assert any(f.kind == "status" and "exit 70" in f.detail for f in failures), failures
