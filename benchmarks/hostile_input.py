"""Time and peak memory of `parc check` on every hostile-size case of tests/test_limits.py.

Each case runs as a fresh process under the test's limits (1 GiB of address space, 60 s); the
table shows the wall time, the peak resident memory (VmHWM) and the exit status, so the bounds in
the test can be judged against what parc actually needs. The figures go to docs/robustness.md.

    .venv/bin/python benchmarks/hostile_input.py [--command explain]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_limits import CASES, MEMORY_LIMIT, TIME_LIMIT_S, run_bounded  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", default="check", help="parc command to run (default check)")
    args = parser.parse_args()
    print(f"parc {args.command} under {MEMORY_LIMIT >> 20} MiB of address space and {TIME_LIMIT_S} s\n")
    print(f"{'case':<36} {'bytes':>10} {'status':>6} {'seconds':>8} {'peak MiB':>9}")
    worst_time = worst_rss = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(CASES):
            content, _, _ = CASES[name]
            work = Path(tmp) / name
            work.mkdir()
            spec = work / "spec.par"
            spec.write_text(content, encoding="utf-8")
            command = args.command.split() + [str(spec)]
            if args.command == "compile":
                command += ["-o", str(work / "job")]
            run = run_bounded(command, work)
            rss = run.peak_rss_kib / 1024
            worst_time, worst_rss = max(worst_time, run.seconds), max(worst_rss, rss)
            print(f"{name:<36} {spec.stat().st_size:>10,} {run.status:>6} {run.seconds:>8.2f} {rss:>9.0f}")
    print(f"\nworst: {worst_time:.2f} s, {worst_rss:.0f} MiB (bounds: {TIME_LIMIT_S} s, {MEMORY_LIMIT >> 20} MiB)")


if __name__ == "__main__":
    main()
