"""Seed inputs for the fuzzers: every text the project already treats as a spec.

Valid specs reach the deep stages (resolution, checks, code generation); the golden diagnostic
cases are already broken in one known way, so one more mutation lands near an error path; the
regression inputs are everything a fuzzer once broke. New specs (tests/e2e/, specs/) join
automatically.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = Path(__file__).resolve().parent / "regressions"

_PATTERNS = (
    "specs/*.par",
    "tests/golden/diagnostics/*.par",
    "tests/golden/fmt/*.par",
    "tests/e2e/**/*.par",
    "tests/fuzz/regressions/*.par",
)


def seed_paths() -> list[Path]:
    paths: set[Path] = set()
    for pattern in _PATTERNS:
        paths.update(ROOT.glob(pattern))
    return sorted(paths)


def seeds() -> list[bytes]:
    """Every seed's bytes, in a stable order (the fuzzers' choices are indices into it)."""
    return [path.read_bytes() for path in seed_paths()]


def regression_paths() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.par"))
