"""`parc search --write` is atomic: tests/test_atomic.py's two failures at every step of the write.

- an OSError from the k-th file-system call `compiler/atomic.py` makes (disk full, I/O error):
  exit status 2 with a message, the spec byte-identical (mode too), no temporary file left;
- SIGKILL of a real `parc search --write` just before or just after the k-th call: nothing can
  clean up, yet the spec holds exactly the old text or exactly the filled one (a leftover
  temporary sibling is harmless and named `.NAME.*`).
"""

from __future__ import annotations

import signal

import pytest

from .conftest import ROOT, run_cli
from .test_atomic import _killed_run, rewrite_with_a_fault_at_every_step, siblings

SPEC = (ROOT / "specs" / "llama3-70b-search.par").read_text()


def _filled(tmp_path) -> str:
    reference = tmp_path / "reference"
    reference.mkdir()
    spec = reference / "search.par"
    spec.write_text(SPEC)
    assert run_cli("search", str(spec), "--write").exit_code == 0
    return spec.read_text()


def test_search_write_with_a_fault_at_every_step_keeps_the_spec(tmp_path, monkeypatch):
    filled = _filled(tmp_path)
    rewrite_with_a_fault_at_every_step(tmp_path, monkeypatch, "search.par", SPEC,
                                       lambda spec: ("search", spec, "--write"), lambda new: new == filled)


@pytest.mark.slow
@pytest.mark.parametrize("when", ["before", "after"])
def test_search_write_killed_at_every_step_leaves_the_old_or_the_filled_spec(tmp_path, when):
    filled = _filled(tmp_path)
    killed = 0
    for step in range(1, 20):
        work = tmp_path / f"{when}-{step}"
        work.mkdir()
        spec = work / "search.par"
        spec.write_text(SPEC)
        status = _killed_run(["search", str(spec), "--write"], step, when, work)
        if status == 0:
            break
        assert status == -signal.SIGKILL
        killed += 1
        assert spec.read_text() in (SPEC, filled)
        assert all(n == "search.par" or n.startswith(".search.par.") for n in siblings(work))
    assert killed >= 3
