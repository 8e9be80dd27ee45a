"""How many candidate layouts per second the memory model evaluates (search needs ~10^5).

    .venv/bin/python benchmarks/memory_speed.py

Evaluates `parc.memory.peak` (the worst rank's bytes, what search compares with HBM) over a
search-like grid of Llama 3 70B layouts on 1,024 H100s: every tp x pp x dp that multiplies to
1,024, micro-batch, recomputation, sharding and schedule. "cold" starts with empty caches, "warm"
repeats the same grid (search revisits the same pieces: a candidate that differs in one knob
reuses the other pieces). Prints a table; nothing is asserted.
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parc import memory  # noqa: E402
from parc.memory.model import clear_caches, peak, per_stage  # noqa: E402
from parc.pipeline import compile_text  # noqa: E402

SPEC = """\
tp 8 x pp 4 x dp 32 on nodes(8 gpus, nvlink)
model llama3-70b
hardware { gpu h100-sxm }
train { seq 8192, global-batch 1024 }
"""


SHARDINGS = ("none", "zero1", "zero2", "zero3")


def grid(base: memory.Knobs, layers: int, shardings: tuple[str, ...] = SHARDINGS) -> list[memory.Knobs]:
    """Every tp x pp x dp of 1,024 GPUs that divides the layers and the batch, with micro-batch,
    recomputation, sharding and schedule (benchmarks/timing_speed.py times the same grid)."""
    out = []
    for tp, pp in itertools.product((1, 2, 4, 8), (1, 2, 4, 5, 8, 10, 16)):
        if layers % pp or 1024 % (tp * pp):
            continue
        dp = 1024 // (tp * pp)
        for micro, recompute, sharding, schedule in itertools.product(
                (1, 2, 4), ("none", "selective", "full"), shardings,
                ("1f1b", "interleaved-1f1b")):
            if 1024 % (dp * micro):
                continue
            v = 2 if schedule != "1f1b" and layers % (pp * 2) == 0 else 1
            if v == 1 and schedule != "1f1b":
                continue
            out.append(replace(base, tp=tp, pp=pp, dp=dp, micro_batch=micro, microbatches=1024 // (dp * micro),
                               recompute=recompute, sharding=sharding, schedule=schedule, virtual_stages=v))
    return out


def rate(function, shape, candidates) -> float:
    start = time.perf_counter()
    for k in candidates:
        function(shape, k)
    return len(candidates) / (time.perf_counter() - start)


def main() -> None:
    plan = compile_text(SPEC, checks=False).plan
    shape, base = memory.shape_of(plan), memory.knobs_of(plan)
    candidates = grid(base, plan.model.layers)
    rows = []
    for name, function in (("peak (search)", peak), ("per_stage (explain)", per_stage)):
        clear_caches()
        cold = rate(function, shape, candidates)
        warm = rate(function, shape, candidates)
        rows.append((name, cold, warm))
    print(f"{len(candidates):,} candidate layouts of Llama 3 70B on 1,024 H100 (Python {sys.version.split()[0]})")
    print(f"{'function':<22}{'cold /s':>12}{'warm /s':>12}")
    for name, cold, warm in rows:
        print(f"{name:<22}{cold:>12,.0f}{warm:>12,.0f}")


if __name__ == "__main__":
    main()
