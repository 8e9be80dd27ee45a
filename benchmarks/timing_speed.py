"""How many candidate layouts per second the time model evaluates (search needs ~10^5).

    .venv/bin/python benchmarks/timing_speed.py

Evaluates `parc.timing.step_time` over a search-like grid of Llama 3 70B layouts on 1,024 H100s
(every tp x pp x dp that multiplies to 1,024, micro-batch, recomputation, sharding, schedule, and
two rank orders). "cold" starts with empty caches; "warm" repeats the grid (search revisits the
same pieces: a candidate that differs in one knob reuses the others); "steps only" re-evaluates
candidates that differ only in the global batch (micro-batches per step), which reuses every
per-layer piece. Prints a table; nothing is asserted.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parc import timing  # noqa: E402
from parc.memory.inputs import knobs_of, shape_of  # noqa: E402
from parc.memory.model import clear_caches as clear_memory_caches  # noqa: E402
from parc.pipeline import compile_text  # noqa: E402

from benchmarks.memory_speed import SPEC  # noqa: E402
from benchmarks.memory_speed import grid as memory_grid  # noqa: E402

ORDERS = (("tp", "dp", "pp"), ("tp", "pp", "dp"))


def grid(base, layers: int, hw: timing.Hardware):
    """benchmarks/memory_speed.py's grid without zero2 (the time model treats it as zero1), each
    layout in two rank orders."""
    out = []
    for k in memory_grid(base, layers, ("none", "zero1", "zero3")):
        degrees = {"tp": k.tp, "pp": k.pp, "dp": k.dp}
        for order in ORDERS:
            out.append((k, timing.geometry(tuple((a, degrees[a]) for a in order), (), 1, 0, hw.level)))
    return out


def rate(shape, hw, candidates) -> float:
    start = time.perf_counter()
    for k, geo in candidates:
        timing.step_time(shape, k, hw, geo)
    return len(candidates) / (time.perf_counter() - start)


def main() -> None:
    plan = compile_text(SPEC, checks=False).plan
    shape, base, hw = shape_of(plan), knobs_of(plan), timing.hardware_of(plan)
    candidates = grid(base, plan.model.layers, hw)
    timing.clear_caches()
    clear_memory_caches()
    cold = rate(shape, hw, candidates)
    warm = rate(shape, hw, candidates)
    batches = [(replace(k, microbatches=k.microbatches * 2), geo) for k, geo in candidates]
    steps = rate(shape, hw, batches)
    print(f"{len(candidates):,} candidate layouts of Llama 3 70B on 1,024 H100 (Python {sys.version.split()[0]})")
    print(f"{'step_time':<22}{'per second':>12}")
    for name, value in (("cold", cold), ("warm", warm), ("steps only", steps)):
        print(f"{name:<22}{value:>12,.0f}")


if __name__ == "__main__":
    main()
