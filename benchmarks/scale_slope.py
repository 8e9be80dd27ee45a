"""Does the time model's error grow with the GPU count? Every series of published runs that differ
only in scale, the slope of its error on log2(GPUs).

Issue 14 asks that predictions hold at real scale. `scaling_check.py` takes a few chosen series
apart term by term; this script asks the question of every file the fidelity check reads: it
groups each file's runs whose specs are the same but for the data-parallel degree, the node count
and the global batch (a series: one source, one model and layout, more GPUs), keeps the series
with three or more GPU counts, and fits each series' error (predicted over reported throughput,
less 1, in points) against log2 of its GPU count by least squares. A slope of +1 means the
prediction gains a point of optimism each time the GPUs double: a cost that grows with the ranks
and that the model does not charge (docs/time-model.md, "Throughput against GPU count").

    .venv/bin/python benchmarks/scale_slope.py
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

FILES = ("dgxc_benchmarking", "dgxc_benchmarking_h100", "llm_foundry_mpt", "megatron_bridge_25_11",
         "megatron_bridge_blackwell_ultra", "megatron_bridge_nvfp4", "megatron_bridge_releases",
         "megatron_bridge_releases_moe", "nemo_long_sequence", "nemo_performance", "nemo_performance_25_07",
         "published", "published_public")
"""The published-run files `fidelity.py --published` evaluates (benchmarks/data/*.yaml of runs)."""

SCALE = re.compile(r"\b(dp|nodes|global-batch) \d+")
"""What a series lets vary: the data-parallel degree, the node count and the global batch."""

MIN_COUNTS = 3
"""GPU counts a series needs for its slope to mean anything."""


@dataclass(frozen=True)
class SeriesSlope:
    """One series: its file, its smallest run's id, its GPU counts and errors, and the slope."""

    file: str
    first: str
    points: tuple[tuple[int, float], ...]
    """(GPUs, error) of each run, in GPU order; error = predicted / reported - 1."""

    @property
    def slope(self) -> float:
        """Points of error per doubling of the GPUs (least squares on log2 GPUs)."""
        return slope(self.points)


def scale_key(spec: str) -> str:
    """A spec with its comments, its job name and what a series lets vary taken out: two runs of
    one series have the same key."""
    lines = [line for line in spec.splitlines() if line.strip() and not line.lstrip().startswith(("#", "job "))]
    return SCALE.sub(r"\1 N", "\n".join(lines))


def slope(points) -> float:
    """Least-squares slope of 100 x error on log2(GPUs)."""
    xs = [math.log2(g) for g, _ in points]
    ys = [100 * e for _, e in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def series_of(file: str, runs) -> list[SeriesSlope]:
    """The series among one file's evaluated runs ((id, GPUs, spec, error) each)."""
    groups: dict[str, list[tuple[int, float, str]]] = {}
    for run_id, gpus, spec, error in runs:
        groups.setdefault(scale_key(spec), []).append((gpus, error, run_id))
    out = []
    for members in groups.values():
        if len({g for g, _, _ in members}) < MIN_COUNTS:
            continue
        members.sort()
        out.append(SeriesSlope(file, members[0][2], tuple((g, e) for g, e, _ in members)))
    return out


def all_series(constants=None) -> list[SeriesSlope]:
    """Every series of every file, evaluated as `fidelity.py --published` evaluates it."""
    import fidelity

    constants = constants or fidelity.DEFAULT
    out = []
    for name in FILES:
        rows, _ = fidelity.load_rows(ROOT / "benchmarks" / "data" / f"{name}.yaml")
        results = fidelity.evaluate(rows, [fidelity.prepare(r) for r in rows], constants)
        out += series_of(name, [(x.row.id, x.row.gpus, x.row.spec, x.error) for x in results])
    return sorted(out, key=lambda s: (s.slope, s.file, s.first))


def main() -> int:
    found = all_series()
    print("| slope (points per doubling) | file | smallest run | GPUs | runs |")
    print("|---|---|---|---|---|")
    for s in found:
        print(f"| {s.slope:+.2f} | {s.file} | {s.first} | {s.points[0][0]}-{s.points[-1][0]} | {len(s.points)} |")
    rising = sum(s.slope > 0 for s in found)
    print(f"\n{len(found)} series, {rising} with a rising error; median slope "
          f"{statistics.median(s.slope for s in found):+.2f} points per doubling")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
