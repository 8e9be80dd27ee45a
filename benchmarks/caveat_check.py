"""`parc explain`'s caveats against the published runs: do the predictions they flag miss more?

A caveat (`parc.caveats`) says a prediction leans on what the time model measured least: an
attention-heavy layer, a GPU no published matmul sweep measured, a step the expert all-to-all
dominates. It is worth printing only if the runs it flags are the ones the model misses. Every
published run of benchmarks/data/ (`fidelity.run_files`) is predicted with the stored constants,
as `fidelity.py --published` predicts it, and grouped by the caveats its prediction carries
(`fidelity.row_caveats`); this module writes the table into docs/time-model.md (`fidelity.py
--write`).

    .venv/bin/python benchmarks/caveat_check.py          # print the table
"""

from __future__ import annotations

import statistics
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


@cache
def flagged(constants=None) -> dict[tuple[str, ...], list[float]]:
    """|error| of every published run, keyed by its caveats' codes (() for none)."""
    import fidelity

    constants = constants or fidelity.DEFAULT
    out: dict[tuple[str, ...], list[float]] = {}
    for path in fidelity.run_files():
        rows, _ = fidelity.load_rows(path)
        for x in fidelity.evaluate(rows, [fidelity.prepare(r) for r in rows], constants):
            out.setdefault(tuple(fidelity.row_caveats(x)), []).append(abs(x.error))
    return out


def table(groups: dict[tuple[str, ...], list[float]]) -> str:
    import fidelity

    lines = ["| caveats | runs | median abs. error | p90 | worst |", "|---|---|---|---|---|"]
    for codes, errors in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        label = ", ".join(f"`{c}`" for c in codes) or "none"
        lines.append(f"| {label} | {len(errors)} | {statistics.median(errors):.1%} | {fidelity.p90(errors):.1%} | "
                     f"{max(errors):.1%} |")
    return "\n".join(lines)


def section(constants=None) -> dict[str, str]:
    """The CAVEATS_* placeholders of docs/time-model.md."""
    groups = flagged(constants)
    assert groups, "no published run evaluated"
    return {"CAVEATS_TABLE": table(groups), "CAVEATS_N": str(sum(len(v) for v in groups.values()))}


def main() -> int:
    print(section()["CAVEATS_TABLE"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
