"""What the ModelZoo long-context series says about attention and the MoE layers, from its own
published figures alone (no time model), beside what parc charges for the same parts.

    .venv/bin/python benchmarks/longctx_series.py

Why (issue 14): Megatron-MoE-ModelZoo's Qwen3-235B-A22B long-context table (best_practice/Qwen3/
readme.md, commit c1ad0b5, added 2025-11-04) runs 16K, 32K, 64K and 128K tokens with cp = seq /
16K, every other setting equal (tp 4, pp 8, vpp 4, ep 8, micro-batch 1 (the repository's
runtime.conf for Qwen3-235B-A22B), global batch 256 sequences, DeepEP, `--recompute-modules
layernorm moe`). Each rank therefore holds 16K tokens of a sequence at every length: per
micro-batch its GEMMs, norms, router, permutations and token exchanges are the same at every
length, and only the attention core grows, in proportion to the sequence (each local query
attends to s / 2 keys on average under the causal mask, the load-balanced chunks included). So the
time of one micro-batch on the busiest rank is a straight line in s:

    t(s) = X + a s

`X` is everything but the attention core (the MoE layers, the dense GEMMs, the exposed
communication), `a s` the attention core. Both come out of a least-squares line through the four
published points of a series, and `a` gives the speed the runtime's attention kernels sustained:
the FLOPs they execute per unit of s (forward 4 (q / tp) n s / 2 per layer, the backward 2.5x, as
FlashAttention counts them) over `a`.

The published figure is TFLOP/s per GPU in Megatron-Core's count (`num_floating_point_operations`,
causal since commit 8873b55d6a of 2025-03-06, which the table's date postdates); the step time is
that count over the figure. One micro-batch's time is the step over m + (p - 1) / v slots
(interleaved 1F1B: the fill and drain take (p - 1) / v micro-batches' time on the busiest rank).
The busiest rank holds ceil(L / pp) layers."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SERIES = "modelzoo_qwen3_235b_longctx_"
"""The rows' id prefix in benchmarks/data/published.yaml; `_dropless` and `_forced_balance` end
the two routings."""

FLASH_BACKWARD = 2.5
"""FlashAttention's backward executes 2.5x its forward's products (it recomputes the scores): Dao
2023 and Shah et al. 2024 count it so. Stated here, not imported, so the split does not read the
time model."""


@dataclass(frozen=True)
class Point:
    seq: int
    micro_seconds: float
    """Published step time over m + (p - 1) / v: one micro-batch on the busiest rank."""
    attention_flops: float
    """Attention-core FLOPs the busiest rank executes in one micro-batch (forward and backward)."""


@dataclass(frozen=True)
class Line:
    """t(s) = rest + slope s through a series' points."""

    routing: str
    points: tuple[Point, ...]
    rest: float
    slope: float

    @property
    def attention_tflops(self) -> float:
        """The attention kernels' sustained speed: executed FLOPs per unit of s over the slope."""
        per_s = self.points[0].attention_flops / self.points[0].seq
        return per_s / self.slope / 1e12

    def residual(self) -> float:
        """Largest |relative| distance of a published point from the line."""
        return max(abs(self.rest + self.slope * p.seq - p.micro_seconds) / p.micro_seconds for p in self.points)


def point(row) -> Point:
    """One published row as a point: its micro-batch time and its attention FLOPs, from the row's
    own layout and shape (the plan's facts, not the time model's)."""
    lay, train, model = row.plan.layout, row.plan.training, row.plan.model
    tp, pp, cp = lay.degree("tp"), lay.degree("pp"), lay.degree("cp")
    v = max(1, lay.pp.virtual_stages or 1)
    seq, micro = train.seq_len, train.micro_batch or 1
    step = row.conv_flops / (row.reported_tflops * 1e12 * row.gpus)
    dp = row.gpus // (tp * pp * cp)
    m = train.global_batch // (dp * micro)
    slots = m + (pp - 1) / v
    layers = math.ceil(model.layers / pp)
    q = model.heads * model.head_dim
    local = seq * micro / cp
    forward = 4 * (q / tp) * local * seq / 2
    return Point(seq=seq, micro_seconds=step / slots, attention_flops=layers * (1 + FLASH_BACKWARD) * forward)


def fit(routing: str, points: list[Point]) -> Line:
    """Least squares through the points."""
    n = len(points)
    xs = [p.seq for p in points]
    ys = [p.micro_seconds for p in points]
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return Line(routing, tuple(points), my - slope * mx, slope)


def lines(rows) -> dict[str, Line]:
    """The dropless and the forced-balance series, each as its line."""
    out = {}
    for routing in ("dropless", "forced_balance"):
        chosen = sorted((point(r) for r in rows if r.id.startswith(SERIES) and r.id.endswith(routing)),
                        key=lambda p: p.seq)
        if len(chosen) >= 2:
            out[routing] = fit(routing, chosen)
    return out


def model_split(row) -> tuple[float, float, float]:
    """(parc's micro-batch time, its attention-core seconds in it, its attention speed in TFLOP/s)
    for a row: the step over the same slots, and the attention kernels `timing.layer_work`
    charges on the busiest rank's layers (forward, backward and any recomputation of the core)."""
    import fidelity
    from parc import timing
    from parc.calibration import DEFAULT

    p = fidelity.prepare(row)
    k, s, hw, sw = p.knobs, p.shape, p.hardware, row.software
    b = fidelity.predicted_step(row, p, DEFAULT)
    v = max(1, k.virtual_stages)
    micro = b.step / (k.microbatches + (k.pp - 1) / v)
    w = timing.layer_work(s, True, k.tp, k.sequence_parallel, k.cp, k.cp_flavour, k.seq, k.micro_batch, k.ep,
                          timing.gemm_precision(k.precision, sw), sw.attention, sw.kernels, hw, DEFAULT,
                          sw.balanced_routing, sw.context_parallel, sw.fp8_scaling)
    layers = math.ceil(s.layers / k.pp)
    attention = layers * (w.attention_f + w.attention_b)
    flops = point(row).attention_flops
    return micro, attention, flops / attention / 1e12


def table(rows) -> str:
    out = ["| series | published: attention TFLOP/s | rest X, ms per micro-batch | line's worst residual | "
           "parc: attention TFLOP/s | parc: rest, ms |", "|---|---|---|---|---|---|"]
    found = lines(rows)
    for routing, line in found.items():
        chosen = [r for r in rows if r.id.startswith(SERIES) and r.id.endswith(routing)]
        splits = [model_split(r) for r in chosen]
        rest = sum(m - a for m, a, _ in splits) / len(splits)
        speed = sum(t for _, _, t in splits) / len(splits)
        out.append(f"| {routing.replace('_', ' ')} | {line.attention_tflops:.0f} | {1e3 * line.rest:.0f} | "
                   f"{100 * line.residual():.1f}% | {speed:.0f} | {1e3 * rest:.0f} |")
    return "\n".join(out)


def main() -> int:
    import fidelity

    rows, _ = fidelity.load_rows()
    found = lines(rows)
    for routing, line in found.items():
        print(f"{routing}: t(s) = {line.rest * 1e3:.1f} ms + {line.slope * 16384 * 1e3:.1f} ms per 16K tokens; "
              f"attention {line.attention_tflops:.0f} TFLOP/s; worst residual {100 * line.residual():.1f}%")
        for p in line.points:
            print(f"  {p.seq:>7}  {p.micro_seconds * 1e3:8.1f} ms per micro-batch")
    if "dropless" in found and "forced_balance" in found:
        print(f"dropless / forced balance, everything but attention: "
              f"{found['dropless'].rest / found['forced_balance'].rest:.2f}x")
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
