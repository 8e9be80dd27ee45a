"""Shared test helpers: paths, the example specs, and running the CLI in-process."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.par"))
GOLDEN = ROOT / "tests" / "golden"
UPDATE = os.environ.get("PARC_UPDATE_GOLDEN") == "1"
"""`PARC_UPDATE_GOLDEN=1 pytest tests/...` rewrites golden files instead of comparing them."""


def check_golden(path: Path, actual: str) -> None:
    """Compare with a golden file (or write it when updating); the diff shows in pytest output."""
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing golden file {path.relative_to(ROOT)}; run with PARC_UPDATE_GOLDEN=1")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path.relative_to(ROOT)} differs (PARC_UPDATE_GOLDEN=1 to accept)"


def benchmark_script(name: str):
    """A script of benchmarks/ as a module (they import each other by name, so that folder goes on
    the path first)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_YAML_DATA = benchmark_script("yaml_data")


def load_yaml(text: str):
    """`text` parsed as `yaml.safe_load` parses it, with libyaml's loader where PyYAML has it
    (benchmarks/yaml_data.py: the published runs are about 10 MB of YAML, read by many tests)."""
    return _YAML_DATA.load_yaml(text)


def rank_steps_of(plan) -> dict:
    """The time model's rank classes of a plan (`timing.rank_steps`, each with its ledger), as
    `timing.predict` builds them: the target's software and memory runtime, the stored constants."""
    from parc import timing

    return timing.plan_rank_steps(plan)[1]


def assert_search_finds_nothing(case: Path) -> dict:
    """A clean spec whose search finds nothing: `parc check` passes, `parc search` exits 1 with
    the error named by the case's file name (`e0505_...` -> E0505) and a help line, golden in
    tests/golden/diagnostics/<name>.search.stderr, and the JSON reports that one code; returns
    the JSON for the caller's own checks."""
    import json

    relative = str(case.relative_to(ROOT))
    assert run_cli("check", relative).exit_code == 0, "the spec itself is clean; only search finds nothing"
    result = run_cli("search", relative)
    assert result.exit_code == 1
    code = case.stem.split("_")[0].upper()
    assert f"error[{code}]" in result.stderr and "help:" in result.stderr
    check_golden(GOLDEN / "diagnostics" / f"{case.stem}.search.stderr", result.stderr)
    data = json.loads(run_cli("search", relative, "--format", "json").stdout)
    assert [d["code"] for d in data["diagnostics"]] == [code]
    return data


def run_cli(*args: str, env: dict | None = None):
    """Run `parc ARGS` in-process; returns the click Result (exit_code, stdout, stderr)."""
    from parc.cli import main

    runner = CliRunner()
    return runner.invoke(main, list(args), env={"NO_COLOR": "1", **(env or {})}, catch_exceptions=False)


@pytest.fixture(params=SPECS, ids=[p.stem for p in SPECS])
def spec_path(request) -> Path:
    return request.param


def pytest_sessionfinish(session, exitstatus):
    """In CI (`CI` set, as `.ci/run` runs) a skipped test fails the run: every skip in this suite
    stands for a missing install step (node, Chromium, shellcheck, Slurm, git), and a green run
    that skipped them would hide it. `.ci/run` installs everything the suite uses."""
    if not os.environ.get("CI") or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reasons = sorted({str(getattr(r, "longrepr", ""))[-200:] for r in skipped})
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; every skip is a failure in CI:", red=True)
        for reason in reasons:
            reporter.write_line(f"  {reason}")
        session.exitstatus = 1
