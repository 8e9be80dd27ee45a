"""`blackwell_sustained`: what a Blackwell training run sustains of its scaled matmul ceiling.

No calibration row (benchmarks/data/published.yaml) runs on Blackwell. B200 and GB200 take
Hopper's fitted GEMM ceiling scaled by their measured matmul ceiling relative to H100's
(`kernels.matmul_ceiling`, from a short sweep of single matmuls), and at that speed the dense
Blackwell rows of NeMo's and Megatron-Bridge's published tables came out fast, by a median of
+10 % (NeMo's +13 %, Bridge's +4 %) and on both parts, while the same tables' H100 rows sat within
a few per cent. A training run holds a part at its board power for hours; a Blackwell part draws
1,000-1,200 W for 2.3-2.5x H100's FLOP/s at 700 W, and holds its clock under that load less well
than a sweep of single matmuls shows. That is one number per generation, as `gemm_hopper` is
Hopper's, and it is fitted here as `gemm_hopper` is: on training runs, by least squares on the log
error of the reported throughput, the other constants held.

- The rows: every dense row on B200 or GB200 of the NeMo and Megatron-Bridge files (`SOURCES`),
  none left out by hand. The mixture-of-experts rows of the same tables are not fitted: their
  errors have causes of their own (docs/time-model.md), and they stay a check the fit never saw.
- Out of sample: leave one source out. Fitted on Megatron-Bridge's rows alone, NeMo's are
  predicted, and the other way round; `held_out` returns both, and docs/time-model.md prints them
  beside the in-sample fit and the unfitted MoE rows, each with and without the constant.

    .venv/bin/python benchmarks/blackwell_fit.py       # print the fit and its out-of-sample check
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DATA = ROOT / "benchmarks" / "data"
SOURCES: dict[str, tuple[str, ...]] = {
    "NeMo's performance tables": ("nemo_performance.yaml", "nemo_performance_25_07.yaml"),
    "Megatron-Bridge's performance tables": ("megatron_bridge_releases.yaml", "megatron_bridge_25_11.yaml",
                                             "megatron_bridge_releases_moe.yaml"),
}
"""The published tables the constant is fitted on, by source (leave-one-source-out drops one); of
each, its dense rows (the MoE file's rows are all checks)."""

THIRD_SOURCE = "dgxc_benchmarking.yaml"
"""A third NVIDIA publication, never fitted: the DGX Cloud benchmarking recipes' Blackwell rows
(`benchmarks/data/dgxc_benchmarking.yaml`), predicted by the constant fitted on the two above."""

NAME = "blackwell_sustained"


@dataclass(frozen=True)
class Row:
    """One published row as the fit reads it: the run, its prepared numbers, and its source."""

    run: object
    prepared: object
    source: str

    @property
    def moe(self) -> bool:
        return bool(self.run.plan.model.experts)


@lru_cache(maxsize=1)
def blackwell_rows() -> tuple[Row, ...]:
    """Every row of `SOURCES` that runs on a Blackwell part, dense and MoE, in file order (read
    once: `fidelity.py --write` asks for them in the fit, the table and the constants' list)."""
    import fidelity

    out: list[Row] = []
    for source, files in SOURCES.items():
        for name in files:
            runs, _ = fidelity.load_rows(DATA / name)
            out += [Row(r, fidelity.prepare(r), source) for r in runs
                    if r.plan.cluster.gpu.generation == "blackwell"]
    return tuple(out)


def third_source_rows() -> tuple[Row, ...]:
    """The never-fitted third publication's rows (`THIRD_SOURCE`)."""
    import fidelity

    runs, _ = fidelity.load_rows(DATA / THIRD_SOURCE)
    return tuple(Row(r, fidelity.prepare(r), THIRD_SOURCE) for r in runs)


def count() -> int:
    """How many rows the constant is fitted on."""
    return len(fitted_rows(blackwell_rows()))


def fitted_rows(rows) -> list[Row]:
    """The rows the constant is fitted on: the dense ones."""
    return [r for r in rows if not r.moe]


def errors(rows: list[Row], constants) -> list[float]:
    """Signed relative errors of the predicted throughput."""
    import fidelity

    results = fidelity.evaluate([r.run for r in rows], [r.prepared for r in rows], constants)
    return [x.error for x in results]


def fit(base, rows=None):
    """`base` with `blackwell_sustained` fitted on `rows` (the dense Blackwell rows by default),
    by least squares on the log error, from `fidelity.START`, within `fidelity.BOUNDS`."""
    import fidelity

    use = fitted_rows(rows if rows is not None else blackwell_rows())
    return fidelity.fit_one(NAME, [r.run for r in use], [r.prepared for r in use], base)


@dataclass(frozen=True)
class HeldOut:
    """One source predicted by the constant fitted on the others."""

    source: str
    value: float
    """`blackwell_sustained` fitted without this source."""
    errors: list[float]
    """The source's dense rows' signed errors at that value."""
    unscaled: list[float]
    """The same rows at `blackwell_sustained` 1 (the matmul sweep's scaling alone)."""


def held_out(base, rows=None) -> list[HeldOut]:
    """Leave one source out: fit on the others' dense rows, predict the left-out source's."""
    rows = rows if rows is not None else blackwell_rows()
    out = []
    for source in SOURCES:
        train = [r for r in rows if r.source != source]
        test = fitted_rows([r for r in rows if r.source == source])
        constants = fit(base, train)
        out.append(HeldOut(source, getattr(constants, NAME), errors(test, constants),
                           errors(test, base.with_values({NAME: 1.0}))))
    return out


def _cell(values: list[float]) -> str:
    absolute = [abs(e) for e in values]
    import fidelity

    return (f"{statistics.median(absolute):.1%} / {fidelity.p90(absolute):.1%} / {max(absolute):.1%} "
            f"({statistics.median(values):+.1%})")


def section(constants) -> dict[str, str]:
    """The BLACKWELL_* placeholders of docs/time-model.md: the fit, in and out of sample."""
    rows = blackwell_rows()
    dense, moe = fitted_rows(rows), [r for r in rows if r.moe]
    assert dense and moe, "no Blackwell row read"
    unscaled = constants.with_values({NAME: 1.0})
    held = held_out(constants, rows)
    lines = ["| rows | runs | `blackwell_sustained` | median / p90 / worst abs. error (median signed), at 1 | "
             "the same, at the value |", "|---|---|---|---|---|"]
    lines.append(f"| dense, both sources (fitted) | {len(dense)} | {getattr(constants, NAME):.4g} | "
                 f"{_cell(errors(dense, unscaled))} | {_cell(errors(dense, constants))} |")
    for h in held:
        lines.append(f"| dense, {h.source} (held out: fitted on the other source) | {len(h.errors)} | "
                     f"{h.value:.4g} | {_cell(h.unscaled)} | {_cell(h.errors)} |")
    lines.append(f"| mixture of experts, both sources (never fitted) | {len(moe)} | {getattr(constants, NAME):.4g} | "
                 f"{_cell(errors(moe, unscaled))} | {_cell(errors(moe, constants))} |")
    third = third_source_rows()
    assert third, "no row of the third source read"
    lines.append(f"| dense, NVIDIA's DGX Cloud benchmarking recipes (`{THIRD_SOURCE}`, a third source, never fitted) | "
                 f"{len(third)} | {getattr(constants, NAME):.4g} | {_cell(errors(third, unscaled))} | "
                 f"{_cell(errors(third, constants))} |")
    return {"BLACKWELL_TABLE": "\n".join(lines), "BLACKWELL_N": str(len(dense)),
            "BLACKWELL_SUSTAINED": f"{getattr(constants, NAME):.4g}"}


def main() -> int:
    import fidelity

    print(section(fidelity.DEFAULT)["BLACKWELL_TABLE"])
    refit = fit(fidelity.DEFAULT)
    print(f"\nrefitted on the dense rows: {NAME} = {getattr(refit, NAME):.4g} "
          f"(stored {getattr(fidelity.DEFAULT, NAME):.4g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
