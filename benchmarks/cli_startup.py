"""Cold `parc check` wall time on every example spec, beside a bare `python -c pass`.

Each figure is the median of N fresh processes (no warm interpreter, no cached imports beyond
the OS page cache and parc's grammar cache), so it is what a user feels in an editor hook or a CI
step. The runs are paired: each `parc check` is timed right after a `python -c pass` in the same
venv, and the ratio is the median of the per-pair ratios, so a machine that is busy for a moment
slows both sides of a pair. Targets: under 0.2 s, and at most 8x a bare interpreter.

Python writes and reads its bytecode caches as on a user's machine: PYTHONDONTWRITEBYTECODE is
removed from the children's environment (an environment that sets it makes every start compile
parc's sources again). `--instructions` adds a count that does not depend on how busy the
machine is: the instructions each command executes, from valgrind's callgrind.

    .venv/bin/python benchmarks/cli_startup.py [--runs 9] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 0.2
TARGET_RATIO = 8.0


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def once(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, capture_output=True, check=False, env=ENV)
    return time.perf_counter() - start


def instructions(command: list[str]) -> int:
    """Instructions the command executes (valgrind --tool=callgrind), its children excluded."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command], cwd=ROOT,
                       capture_output=True, check=False, env=ENV)
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("callgrind wrote no total")


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
    parser.add_argument("--instructions", action="store_true", help="also count instructions (valgrind)")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind (apt-get install valgrind)")
    parc = [sys.executable, "-m", "parc"]
    bare = [sys.executable, "-c", "pass"]
    rows = []
    for spec in sorted((ROOT / "specs").glob("*.par")):
        rows.append((f"parc check specs/{spec.name}", *paired([*parc, "check", str(spec)], args.runs)))
    assert rows, "no example spec found"
    width = max(len(row[0]) for row in rows)
    print(f"{'command':<{width}}  {'median s':>9}  {'python s':>9}  {'ratio':>6}  target")
    print("-" * (width + 40))
    for name, seconds, bare_s, ratio in rows:
        mark = "ok" if seconds < TARGET_SECONDS and ratio <= TARGET_RATIO else "SLOW"
        print(f"{name:<{width}}  {seconds:>9.3f}  {bare_s:>9.3f}  {ratio:>5.1f}x  {mark}")
    worst = max(rows, key=lambda row: row[3])
    print(f"\nslowest: {worst[0]} {worst[1]:.3f} s, {worst[3]:.1f}x python -c pass "
          f"(targets {TARGET_SECONDS} s and {TARGET_RATIO:.0f}x), {args.runs} paired runs each, median")
    if args.instructions:
        spec = ROOT / "specs" / "llama3-405b.par"
        base, ours = instructions(bare), instructions([*parc, "check", str(spec)])
        print(f"instructions: python -c pass {base:,}, parc check specs/{spec.name} {ours:,}: {ours / base:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
