"""`allow CODE`: the documented example acknowledges the warning it names, and an `allow` that
hides nothing is reported (W0240), so a stale or wrong code cannot pass review unnoticed."""

from __future__ import annotations

import re

from parc.pipeline import compile_text

from .conftest import ROOT

BODY = """
model llama3-405b
hardware {
  gpu h100-sxm
  nodes 1024
}
train {
  seq 8192
  global-batch 2048
  micro-batch 1
  recompute selective
}
dp {
  sharding zero1
}
pp {
  split [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]
}
"""


def documented_example() -> str:
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    section = text.split("### Acknowledging a warning", 1)[1]
    return re.search(r"```par\n(.*?)```", section, re.S)[1]


def codes(result, allowed=None):
    return [d.code for d in result.diagnostics if allowed is None or d.allowed == allowed]


def test_the_documented_allow_names_the_warning_that_fires():
    """Issue 17: docs/language.md allowed W0306 (rank-order traffic) for the bubble (W0323)."""
    result = compile_text(documented_example() + BODY, path="doc.par")
    assert codes(result, allowed=True) == ["W0323"], result.diagnostics
    assert "W0240" not in codes(result)


def test_an_allow_that_hides_nothing_is_a_warning():
    line = "tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink) allow W0306\n"
    result = compile_text(line + BODY, path="x.par")
    unused = [d for d in result.diagnostics if d.code == "W0240"]
    assert len(unused) == 1 and "allow W0306" in unused[0].message
    assert unused[0].span.line == 1 and line[unused[0].span.col - 1:].startswith("W0306")
    assert "W0323" in codes(result, allowed=False)  # the bubble is still not acknowledged
    assert result.ok  # a warning: check passes


def test_an_allow_on_the_wrong_statement_is_reported_and_on_the_right_one_is_not():
    layout = "tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink)\n"
    scheduled = BODY.replace("pp {\n", "pp {\n  schedule 1f1b\n")
    wrong = compile_text(layout + scheduled.replace("sharding zero1\n}", "sharding zero1\n} allow W0323"), path="x.par")
    assert "W0240" in codes(wrong) and "W0323" in codes(wrong, allowed=False)
    right = compile_text(layout + scheduled.rstrip("\n") + " allow W0323\n", path="x.par")
    assert "W0240" not in codes(right) and codes(right, allowed=True) == ["W0323"], right.diagnostics


def test_open_holes_and_runtime_warnings_are_not_judged():
    holes = compile_text("tp ? x pp ? x dp ? on nodes(8 gpus, nvlink) allow W0323\n" + BODY, path="x.par")
    assert holes.plan.holes and "W0240" not in codes(holes)
    runtime = compile_text("tp 8 x pp 16 x dp 64 on nodes(8 gpus, nvlink) allow W0323\n"
                           + BODY.replace("  recompute selective", "  recompute selective\n  precision fp8")
                           .replace("train {", "train {", 1).replace("}\ndp", "} allow W0601\ndp", 1), path="x.par")
    assert "W0240" not in codes(runtime), runtime.diagnostics
