"""Cold `parc check` wall time on every example spec, beside a bare `python -c pass`.

Each figure is the median of N fresh processes (no warm interpreter, no cached imports beyond
the OS page cache), so it is what a user feels in an editor hook or a CI step. Target: < 0.3 s.

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
TARGET_SECONDS = 0.3


def wall(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    parc = [sys.executable, "-m", "parc"]
    baseline = wall([sys.executable, "-c", "pass"], args.runs)
    rows = [("python -c pass", baseline)]
    for spec in sorted((ROOT / "specs").glob("*.par")):
        rows.append((f"parc check specs/{spec.name}", wall([*parc, "check", str(spec)], args.runs)))
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  {'median s':>9}  {'over python':>11}  target")
    print("-" * (width + 32))
    worst = 0.0
    for name, seconds in rows:
        over = seconds - baseline
        mark = "" if name.startswith("python") else ("ok" if seconds < TARGET_SECONDS else "SLOW")
        worst = max(worst, seconds if not name.startswith("python") else 0)
        print(f"{name:<{width}}  {seconds:>9.3f}  {over:>11.3f}  {mark}")
    print(f"\nslowest parc check: {worst:.3f} s (target {TARGET_SECONDS} s), {args.runs} runs each, median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
