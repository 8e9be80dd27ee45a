"""Compile the recorded specs with `parc compile` and compare the directories with the record.

The record is tests/golden/jobs/<name>/ (see tests/golden_jobs.py); regenerate it with
`.venv/bin/python -m tests.golden_jobs` after an intended change, and review the diff.
"""

from __future__ import annotations

import difflib
import os

import pytest

from . import golden_jobs
from .conftest import ROOT, UPDATE, run_cli

REGENERATE = "run `.venv/bin/python -m tests.golden_jobs` and review the diff"


@pytest.mark.parametrize("name", sorted(golden_jobs.SPECS))
def test_compiled_job_matches_the_golden_record(name, tmp_path, monkeypatch):
    if UPDATE:
        golden_jobs.write(name, golden_jobs.generate(name))
    monkeypatch.chdir(ROOT)  # the plan records the spec path as given: keep it relative
    out = tmp_path / name
    result = run_cli("compile", golden_jobs.SPECS[name], "-o", str(out))
    assert result.exit_code == 0, result.output
    written = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
               for p in sorted(out.rglob("*")) if p.is_file()}
    record = golden_jobs.recorded(name)
    assert sorted(written) == sorted(record), f"the job's files changed; {REGENERATE}"
    for path in written:
        if written[path] != record[path]:
            diff = "".join(difflib.unified_diff(record[path].splitlines(True), written[path].splitlines(True),
                                                f"golden/jobs/{name}/{path}", f"compiled/{path}", n=2))
            pytest.fail(f"{path} differs from the record; {REGENERATE}\n{diff[:6000]}")
    for script in (p for p in written if p.endswith(".sh")):
        assert os.access(out / script, os.X_OK), f"{script} is not executable"


def test_the_record_holds_only_the_recorded_specs():
    present = {p.name for p in golden_jobs.GOLDEN_JOBS.iterdir() if p.is_dir()}
    assert present == set(golden_jobs.SPECS), REGENERATE
