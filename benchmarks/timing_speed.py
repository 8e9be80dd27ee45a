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

import itertools
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parc import timing  # noqa: E402
from parc.memory.inputs import knobs_of, shape_of  # noqa: E402
from parc.memory.model import clear_caches as clear_memory_caches  # noqa: E402
from parc.pipeline import compile_text  # noqa: E402

SPEC = """\
tp 8 x pp 4 x dp 32 on nodes(8 gpus, nvlink)
model llama3-70b
hardware { gpu h100-sxm }
train { seq 8192, global-batch 1024 }
"""


def grid(base, layers: int, hw: timing.Hardware):
    out = []
    for tp, pp in itertools.product((1, 2, 4, 8), (1, 2, 4, 5, 8, 10, 16)):
        if layers % pp or 1024 % (tp * pp):
            continue
        dp = 1024 // (tp * pp)
        for order in (("tp", "dp", "pp"), ("tp", "pp", "dp")):
            degrees = {"tp": tp, "pp": pp, "dp": dp}
            geo = timing.geometry(tuple((a, degrees[a]) for a in order), (), 1, 0, hw.level)
            for micro, recompute, sharding, schedule in itertools.product(
                    (1, 2, 4), ("none", "selective", "full"), ("none", "zero1", "zero3"),
                    ("1f1b", "interleaved-1f1b")):
                if 1024 % (dp * micro):
                    continue
                v = 2 if schedule != "1f1b" and layers % (pp * 2) == 0 else 1
                if v == 1 and schedule != "1f1b":
                    continue
                k = replace(base, tp=tp, pp=pp, dp=dp, micro_batch=micro, microbatches=1024 // (dp * micro),
                            recompute=recompute, sharding=sharding, schedule=schedule, virtual_stages=v)
                out.append((k, geo))
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
