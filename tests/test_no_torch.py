"""The compiler never imports torch: `parc` must start fast on a laptop without it."""

from __future__ import annotations

import subprocess
import sys

from .conftest import ROOT, SPECS

PROBE = """
import os
import sys
from parc.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
roots = os.environ.get("PROBE_ROOTS", "torch,numpy").split(",")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in roots)
print("IMPORTED:" + ",".join(heavy))
"""


def imported(*args: str, roots: str = "torch,numpy") -> str:
    """The modules under `roots` (comma-separated top-level names) that `parc ARGS` imported."""
    import os

    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PROBE_ROOTS": roots})
    line = [x for x in result.stdout.splitlines() if x.startswith("IMPORTED:")]
    assert line, result.stderr
    return line[0][len("IMPORTED:"):]


def test_check_does_not_import_torch():
    assert imported("check", *[str(p) for p in SPECS]) == ""


def test_compile_does_not_import_torch(tmp_path):
    assert imported("compile", str(ROOT / "specs" / "tiny.par"), "-o", str(tmp_path / "job")) == ""


def test_other_commands_do_not_import_torch():
    for command in (["schema"], ["codes"], ["fmt", "--check", str(ROOT / "specs" / "tiny.par")]):
        assert imported(*command) == "", command


def test_check_and_search_do_not_import_jinja2(tmp_path):
    """The torch backend imports Jinja2 when it first renders a template: `parc check` and `parc
    search` render none, so they never pay for it (`compile` does: the control)."""
    assert imported("check", *[str(p) for p in SPECS], roots="jinja2") == ""
    assert imported("search", str(ROOT / "specs" / "llama3-70b-search.par"), roots="jinja2") == ""
    assert "jinja2" in imported("compile", str(ROOT / "specs" / "tiny.par"), "-o", str(tmp_path / "job"),
                                roots="jinja2").split(",")
