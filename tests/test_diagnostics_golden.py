"""Diagnostics as golden files, one bad spec per case (rustc's UI tests).

Each `tests/golden/diagnostics/NAME.par` is checked; its rendered diagnostics (no colour) are
compared with `NAME.stderr`, so any change of wording or span shows up in review.
Regenerate with `PARC_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_diagnostics_golden.py`.
"""

from __future__ import annotations

import re

import pytest
from parc.codes import CODES
from parc.diagnostics import Style, render_text
from parc.pipeline import compile_path

from .conftest import GOLDEN, ROOT, check_golden

CASES = sorted((GOLDEN / "diagnostics").glob("*.par"))


def render(path) -> tuple[str, list]:
    relative = str(path.relative_to(ROOT))
    result = compile_path(relative)
    return render_text(result.diagnostics, {relative: result.source}, Style(False)), result.diagnostics


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_case(case):
    text, diagnostics = render(case)
    assert diagnostics, f"{case.name} produced no diagnostic"
    expected_code = case.stem.split("_")[0].upper()
    if re.fullmatch(r"[EW]\d{4}", expected_code):
        assert expected_code in {d.code for d in diagnostics}, f"{case.name} should report {expected_code}"
    for d in diagnostics:
        assert d.span is not None and d.span.file == str(case.relative_to(ROOT))
        assert d.help, f"{d.code} has no help line"
        assert d.message == d.message.rstrip(".") and d.message[:1] == d.message[:1].lower()
    check_golden(case.with_suffix(".stderr"), text)


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_every_code_has_a_golden_case():
    """Every registered code is exercised by some golden case (or a dedicated test listed here)."""
    covered_elsewhere = {
        "E0001": "tests/test_cli.py (directories, missing and unreadable paths)",
        "E0002": "tests/test_cli.py (binary junk, NUL bytes)",
        "E0003": "tests/test_cli.py (a 10 MB spec)",
        "E0218": "tests/test_cli.py (compile with holes)",
        "E0299": "internal errors: none can be provoked on purpose",
        "W0601": "tests/e2e/test_backend_diagnostics.py (parc compile only)",
        "E0602": "tests/e2e/test_backend_diagnostics.py (parc compile only)",
        "E0603": "tests/e2e/test_backend_diagnostics.py (parc compile only)",
        "E0604": "no longer reported (a window under cp runs: tests/test_window_job.py)",
        "E0605": "tests/test_mla.py (parc compile only)",
        "E0606": "tests/test_mtp.py (parc compile only)",
        **{code: "tests/test_targets.py (the target backends, parc compile only)"
           for code in ("E0610", "E0611", "E0612", "E0613", "E0620", "E0621")},
        **{code: "tests/test_targets_torchtitan.py (the torchtitan backend, parc compile only)"
           for code in ("E0615", "E0616", "E0617", "E0618")},
        **{code: "tests/test_offload.py and tests/test_targets_megatron.py (rules of the target, with the spec)"
           for code in ("E0614", "E0622")},
        "W0701": "tests/test_import.py (parc import only)",
        "E0702": "tests/test_import.py (parc import only)",
        "W0703": "tests/test_import.py (parc import only: --compile.components without model)",
    }
    seen = set()
    for stderr in (GOLDEN / "diagnostics").glob("*.stderr"):
        seen.update(re.findall(r"(?:error|warning)\[([EW]\d{4})\]", stderr.read_text()))
    missing = sorted(set(CODES) - seen - set(covered_elsewhere))
    assert not missing, f"codes without a golden case: {missing}"
