"""Cold `parc check` wall time on every example spec, beside a bare `python -c pass`.

Each figure is the median of N fresh processes (no warm interpreter, no cached imports beyond
the OS page cache and parc's grammar cache), so it is what a user feels in an editor hook or a CI
step. The runs are paired: each `parc check` is timed right after a `python -c pass` in the same
venv, and the ratio is the median of the per-pair ratios, so a machine that is busy for a moment
slows both sides of a pair. Targets: under 0.2 s, and at most 8x a bare interpreter.

    .venv/bin/python benchmarks/cli_startup.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 0.2
TARGET_RATIO = 8.0


def once(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def paired(command: list[str], runs: int) -> tuple[float, float, float]:
    """(median seconds of the command, median of python -c pass, median per-pair ratio)."""
    bare = [sys.executable, "-c", "pass"]
    once(command)  # the first run may write the grammar cache and .pyc files
    pairs = [(once(bare), once(command)) for _ in range(runs)]
    return (statistics.median(c for _, c in pairs), statistics.median(b for b, _ in pairs),
            statistics.median(c / b for b, c in pairs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    parc = [sys.executable, "-m", "parc"]
    rows = []
    for spec in sorted((ROOT / "specs").glob("*.par")):
        rows.append((f"parc check specs/{spec.name}", *paired([*parc, "check", str(spec)], args.runs)))
    assert rows, "no example spec found"
    width = max(len(row[0]) for row in rows)
    print(f"{'command':<{width}}  {'median s':>9}  {'python s':>9}  {'ratio':>6}  target")
    print("-" * (width + 40))
    for name, seconds, bare, ratio in rows:
        mark = "ok" if seconds < TARGET_SECONDS and ratio <= TARGET_RATIO else "SLOW"
        print(f"{name:<{width}}  {seconds:>9.3f}  {bare:>9.3f}  {ratio:>5.1f}x  {mark}")
    worst = max(rows, key=lambda row: row[3])
    print(f"\nslowest: {worst[0]} {worst[1]:.3f} s, {worst[3]:.1f}x python -c pass "
          f"(targets {TARGET_SECONDS} s and {TARGET_RATIO:.0f}x), {args.runs} paired runs each, median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
